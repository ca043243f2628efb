"""Run settings: command line first, then the ini file, then defaults."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .defaults import DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_MEMORY, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT  # noqa: F401
from .thresholds import INI_COMMENT_FIX, Threshold, ThresholdError, check_assignment_form, parse_assignment

#: Valid ranges (inclusive upper bounds); anything else is a clear error wherever it is written.
MAX_TIMEOUT = 86_400.0  # one day, for a query timeout and a connect timeout
MAX_ROWS_LIMIT = 10**9
MIN_MEMORY = 2**20  # 1 MiB
MAX_MEMORY_LIMIT = 2**50  # 1 PiB

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 2**10, "kb": 10**3, "kib": 2**10,
    "m": 2**20, "mb": 10**6, "mib": 2**20,
    "g": 2**30, "gb": 10**9, "gib": 2**30,
    "t": 2**40, "tb": 10**12, "tib": 2**40,
}


def check_seconds(value: object, what: str = "a timeout") -> float:
    """A finite number of seconds in (0, MAX_TIMEOUT]; ValueError with the reason otherwise."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{what} is a number of seconds, not {value!r}")
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise ValueError(f"{what} is a number of seconds, not {value!r}") from None
    if not math.isfinite(number) or not 0 < number <= MAX_TIMEOUT:
        raise ValueError(f"{what} must be a number of seconds greater than 0 and at most {MAX_TIMEOUT:g}, not {value}")
    return number


def check_count(value: object, what: str = "a row cap", maximum: int = MAX_ROWS_LIMIT) -> int:
    """A whole number in [1, maximum]; ValueError with the reason otherwise."""
    if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
        raise ValueError(f"{what} is a whole number, not {value!r}")
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} is a whole number, not {value!r}") from None
    if not 1 <= number <= maximum:
        raise ValueError(f"{what} must be between 1 and {maximum:,}, not {value}")
    return number


def parse_size(value: object, what: str = "max_memory") -> int:
    """A memory size: bytes (``2147483648``) or with a unit (``2GiB``, ``512MB``, ``512M``); in [1 MiB, 1 PiB]."""
    import math
    import re

    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{what} is a size such as 2GiB, 512MB or a number of bytes, not {value!r}")
    if isinstance(value, (int, float)):
        number, unit = float(value), ""
    else:
        match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*", value)
        if not match or match.group(2).lower() not in _SIZE_UNITS:
            raise ValueError(f"{what} is a size such as 2GiB, 512MB or a number of bytes, not {value!r}")
        number, unit = float(match.group(1)), match.group(2).lower()
    if not math.isfinite(number):
        raise ValueError(f"{what} must be a finite size, not {value!r}")
    size = number * _SIZE_UNITS[unit]
    if not MIN_MEMORY <= size <= MAX_MEMORY_LIMIT:
        raise ValueError(f"{what} must be between 1MiB and 1PiB, not {value!r}")
    return int(size)


def _argparse_type(check, *args):
    def convert(text: str):
        try:
            return check(text, *args)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = check.__name__
    return convert


#: argparse types (also used for the ini options): every bad number is a clear usage error.
positive_float = _argparse_type(check_seconds, "the timeout")
connect_seconds = _argparse_type(check_seconds, "the connect timeout")
positive_int = _argparse_type(check_count, "the value")
row_cap = _argparse_type(check_count, "the row cap")
memory_size = _argparse_type(parse_size, "the memory cap")


def threshold_assignment(text: str) -> str:
    """``--sqleval-threshold METRIC=VALUE``: the form is checked here, the metric at configure (after the
    ``pytest_sqleval_register_metrics`` hooks, so a user's metric may be gated)."""
    try:
        check_assignment_form(text)
    except ThresholdError as exc:
        raise argparse.ArgumentTypeError(exc.described()) from None
    return text


def _not_yet_registered(text: str, exc: ThresholdError) -> str:
    """Why a metric a threshold names may be unknown although a conftest.py registers it: the command line and the
    ini file are checked before the folders below the rootdir are collected."""
    from .registry import active_registry
    from .thresholds import OVERALL_PREFIX

    name = text.partition("=")[0].strip().removeprefix(OVERALL_PREFIX).split(".")[-1]
    if not name or name in active_registry() or not str(exc).startswith(f"unknown metric {name!r}"):
        return ""
    return ("; a metric registered by a conftest.py below the rootdir is not known yet when the command line and the "
            "ini file are read: register it in the rootdir's conftest.py or a plugin, or gate it in its suites' "
            "`thresholds:`")


def cli_thresholds(texts: list[str] | None) -> tuple[Threshold, ...]:
    thresholds: dict[str, Threshold] = {}
    for text in texts or ():
        try:
            threshold = parse_assignment(text, "cli")
        except ThresholdError as exc:
            raise SettingsError(f"argument --sqleval-threshold: {exc.described()}{_not_yet_registered(text, exc)}") from None
        thresholds.pop(threshold.metric, None)  # the last one wins: the command line after `addopts`
        thresholds[threshold.metric] = threshold
    return tuple(thresholds.values())


@dataclass(frozen=True)
class Settings:
    enabled: bool = False
    strict: bool = False
    timeout: float | None = None  # from the command line or ini; the suite's `timeout:` sits between
    max_rows: int | None = None
    predictions: Path | None = None
    predictions_from_cli: bool = False  # an ini file gives way to a suite's own `predictions:`, the command line not
    json_path: Path | None = None
    json_option: str = "--sqleval-json"  # where json_path was given, as messages name it
    diff: bool = False
    database_url: str | None = None
    check_gold: bool = False
    gold_size: int = 1000
    cli_thresholds: tuple[Threshold, ...] = field(default_factory=tuple)
    ini_thresholds: tuple[Threshold, ...] = field(default_factory=tuple)
    timeout_from_cli: bool = False
    max_rows_from_cli: bool = False
    max_memory: int | None = None  # bytes, from the command line or ini; the suite's `max_memory:` sits between
    max_memory_from_cli: bool = False
    connect_timeout: float | None = None  # seconds, from the command line or ini; the suite's `connect_timeout:` sits between
    connect_timeout_from_cli: bool = False
    allow_functions: tuple[str, ...] = ()  # ini `sqleval_allow_functions`; united with each suite's `allow_functions:`


class SettingsError(ValueError):
    pass


def resolve_settings(config) -> Settings:
    """Combine ``--sqleval-*`` options with their ``sqleval_*`` ini equivalents."""
    option = config.option

    def ini(name: str):
        try:
            value = config.getini(name)
        except Exception as exc:  # noqa: BLE001 - pytest's own check of a bool option (a UsageError in pytest 9,
            # a ValueError before): "invalid truth value 'maybe'", which does not name the option
            if name in ("sqleval", "sqleval_strict", "sqleval_diff"):  # (pytest's message holds the raw value)
                raise SettingsError(f"ini option {name} must be true or false ({exc}){_comment_hint(str(exc))}") \
                    from None
            raise SettingsError(f"ini option {name}: {exc}") from None
        return value if value not in ("", None, []) else None

    enabled = bool(option.sqleval) or _ini_bool(ini("sqleval"), "sqleval")
    timeout_cli = option.sqleval_timeout
    max_rows_cli = option.sqleval_max_rows
    timeout = timeout_cli or _ini_number(ini("sqleval_timeout"), "sqleval_timeout", positive_float)
    max_rows = max_rows_cli or _ini_number(ini("sqleval_max_rows"), "sqleval_max_rows", row_cap)
    max_memory_cli = getattr(option, "sqleval_max_memory", None)
    max_memory = max_memory_cli or _ini_number(_getini(config, "sqleval_max_memory"), "sqleval_max_memory", memory_size)
    connect_cli = getattr(option, "sqleval_connect_timeout", None)
    connect_timeout = connect_cli or _ini_number(_getini(config, "sqleval_connect_timeout"), "sqleval_connect_timeout",
                                                 connect_seconds)
    predictions_cli = _cli_path(option.sqleval_predictions, "--sqleval-predictions", "a JSON Lines predictions file")
    predictions = predictions_cli or _ini_path(config, ini("sqleval_predictions"), "sqleval_predictions")
    json_cli = _cli_path(option.sqleval_json, "--sqleval-json", "a file path for the JSON report")
    json_option = "--sqleval-json" if json_cli else "ini option sqleval_json"
    json_path = _report_file_path(json_cli or _ini_output_path(ini("sqleval_json"), "sqleval_json"), json_option)
    ini_thresholds = []
    for line in config.getini("sqleval_thresholds"):
        try:
            ini_thresholds.append(parse_assignment(line, "ini"))
        except ThresholdError as exc:
            several = " (write one METRIC=VALUE per line)" if line.count("=") > 1 and not exc.fix else ""
            raise SettingsError(f"ini option sqleval_thresholds: {exc.described()}{several}"
                                f"{_not_yet_registered(line, exc)}") from None
    return Settings(
        enabled=enabled,
        strict=bool(option.sqleval_strict) or _ini_bool(ini("sqleval_strict"), "sqleval_strict"),
        timeout=timeout,
        max_rows=max_rows,
        predictions=Path(predictions) if predictions else None,
        predictions_from_cli=bool(predictions_cli),
        json_path=Path(json_path) if json_path else None,
        json_option=json_option,
        diff=bool(option.sqleval_diff) or _ini_bool(ini("sqleval_diff"), "sqleval_diff"),
        database_url=_database_url(option.sqleval_database_url, ini("sqleval_database_url")),
        check_gold=bool(option.sqleval_check_gold),
        gold_size=option.sqleval_gold_size or _ini_number(ini("sqleval_gold_size"), "sqleval_gold_size", positive_int) or 1000,
        cli_thresholds=cli_thresholds(option.sqleval_threshold),
        ini_thresholds=tuple(ini_thresholds),
        timeout_from_cli=timeout_cli is not None,
        max_rows_from_cli=max_rows_cli is not None,
        max_memory=max_memory,
        max_memory_from_cli=max_memory_cli is not None,
        connect_timeout=connect_timeout,
        connect_timeout_from_cli=connect_cli is not None,
        allow_functions=_ini_function_names(_getini(config, "sqleval_allow_functions")),
    )


def from_invocation_dir(config, path) -> Path:
    """A report path made absolute against the folder pytest was started from, when pytest starts (as --junitxml's
    is), so that a test that changes the working directory does not move the report."""
    return Path(config.invocation_params.dir) / os.path.expanduser(path)


def empty_option_message(option: str, value: Any, what: str, noun: str = "value") -> str | None:
    """Why an explicit empty (or blank) command-line value of ``option`` is refused, else None (not given, or not
    empty). ``--sqleval-baseline "$UNSET"`` in a CI script would read as the option left out and silently change the
    run: no baseline gate, the suites' own `predicted:` scored instead of the model's, another database engine."""
    if value is None or str(value).strip():
        return None
    return (f"argument {option}: empty {noun} {value!r}; drop the option or give {what} "
            "(is the variable that should hold it set?)")


def _cli_path(value, option: str, what: str):
    """A path given on the command line. An empty one (``--sqleval-predictions="$UNSET"`` in a CI script) is an
    error: read as the option left out, the suites' own `predicted:` would be scored instead of the model's file."""
    if value is not None and not str(value).strip():
        raise SettingsError(f"argument {option}: expected {what}, not an empty path {value!r} "
                            "(is the variable that should hold it set?)")
    return value


def _report_file_path(value, option: str):
    """A report path ending in a path separator (``reports/``) names a folder: written as it is, the report would
    become a file named ``reports``. An error naming the option and a file path in that folder."""
    if value and str(value).endswith(("/", os.sep)):
        folder = str(value).rstrip("/" + os.sep) or str(value)
        raise SettingsError(f"{option} {value} ends with '/', a folder; give a file path, e.g. "
                            f"{Path(folder) / 'report.json'}")
    return value


def _database_url(cli, ini_value) -> str | None:
    """``--sqleval-database-url``, else the ini's ``sqleval_database_url``. An explicit empty URL on the command line
    (``--sqleval-database-url "$UNSET"``) is an error: read as the option left out, the suites would silently run on
    their own engines. An empty (or blank) ini value is the option unset, as for every ini option."""
    if cli is not None:
        problem = empty_option_message("--sqleval-database-url", cli, "a SQLAlchemy URL like sqlite:///path.db",
                                       noun="URL")
        if problem is not None:
            raise SettingsError(problem)
        return _known_dialect(str(cli).strip(), "--sqleval-database-url")
    if ini_value is None or not str(ini_value).strip():
        return None
    return _known_dialect(str(ini_value).strip(), "ini option sqleval_database_url")


#: URL schemes whose dialect may come from a package not installed here: the engine's own message names it.
_DIALECTS_OF_PACKAGES = ("duckdb", "postgresql", "postgres", "mysql", "mariadb", "mssql", "oracle", "sqlite")


def _known_dialect(url: str, source: str) -> str:
    """``url`` when SQLAlchemy can read it and knows its dialect. A typo (``sqlit://``) is a usage error at once:
    the option only matters to suites with setup scripts, so it would otherwise be ignored without a word when
    none has any."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    from .suite import hide_password

    try:
        parsed = make_url(url)
    except ArgumentError:
        raise SettingsError(f"{source}: {hide_password(url)!r} is not a SQLAlchemy URL; write one like "
                            "sqlite://, duckdb:// or postgresql+psycopg://user@host/db") from None
    try:
        parsed.get_dialect()
    except NoSuchModuleError:
        if parsed.get_backend_name() not in _DIALECTS_OF_PACKAGES:
            import difflib

            near = difflib.get_close_matches(parsed.get_backend_name(), _DIALECTS_OF_PACKAGES, n=1)
            hint = f" (did you mean {near[0]}://?)" if near else ""
            raise SettingsError(f"{source}: SQLAlchemy knows no database {parsed.get_backend_name()!r} in "
                                f"{hide_password(url)!r}{hint}; write sqlite://, duckdb:// or a server URL "
                                "(postgresql+psycopg://...)") from None
    except Exception:  # noqa: BLE001 - a driver not installed: the engine says which package when it is used
        pass
    return url


def _ini_path(config, value, name: str):
    """An ini option's file path, relative to the ini file's folder (as pytest reads the paths of its own ini
    options), so that `pytest` run from a subfolder finds the same file; a command-line path is the user's.
    ``~`` and ``$VARS`` expand, as in the output paths (:func:`_ini_output_path`)."""
    if value is None:
        return None
    base = getattr(config, "inipath", None)
    path = Path(_ini_output_path(value, name))
    return path if path.is_absolute() or base is None else Path(base).parent / path


def _ini_output_path(value, name: str) -> str | None:
    """An ini option's output path with ``~`` and ``$VARS`` expanded, as ``sqleval_markdown``/``sqleval_html``
    are (``sqleval_json = $RUNNER_TEMP/sqleval.json``); an unset variable is an error, not a folder named ``$X``."""
    if value is None:
        return None
    path = os.path.expandvars(os.path.expanduser(str(value)))
    if "$" in path:
        raise SettingsError(f"ini option {name}: {value!r} names an unset environment variable "
                            "(set it, or write the path itself)")
    return path


def _ini_function_names(lines) -> tuple[str, ...]:
    """The ini option ``sqleval_allow_functions``: function names, one or more per line."""
    import re

    names = []
    for line in lines or ():
        for name in str(line).replace(",", " ").split():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?", name):
                raise SettingsError(f"ini option sqleval_allow_functions: {name!r} is not a function name "
                                    "(give names such as my_udf or schema.my_udf, without parentheses)")
            names.append(name)
    return tuple(names)


def _getini(config, name: str):
    try:
        value = config.getini(name)
    except ValueError:  # the option is not registered (a plugin that declares only some options)
        return None
    return value if value not in ("", None, []) else None


def _ini_bool(value, name: str) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"ini option {name} must be true or false, not {value!r}{_comment_hint(value)}")


def _ini_number(value, name: str, parse):
    if value is None:
        return None
    try:
        return parse(str(value))
    except argparse.ArgumentTypeError as exc:
        raise SettingsError(f"ini option {name}: {exc}{_comment_hint(value)}") from None


def _comment_hint(value) -> str:
    """Why a value with ``# ...`` or ``; ...`` after it is bad: pytest's ini files have no comment after a value."""
    if isinstance(value, str) and any(mark in value for mark in (" #", "\t#", " ;", "\t;")):
        return f"; {INI_COMMENT_FIX}"
    return ""
