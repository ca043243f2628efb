"""Run settings: command line first, then the ini file, then defaults."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from .gate import Threshold, ThresholdError, parse_assignment

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ROWS = 100_000


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, not {text}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, not {text}")
    return value


def threshold_assignment(text: str) -> Threshold:
    try:
        return parse_assignment(text, "cli")
    except ThresholdError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


@dataclass(frozen=True)
class Settings:
    enabled: bool = False
    strict: bool = False
    timeout: float | None = None  # from the command line or ini; the suite's `timeout:` sits between
    max_rows: int | None = None
    predictions: Path | None = None
    json_path: Path | None = None
    diff: bool = False
    database_url: str | None = None
    check_gold: bool = False
    gold_size: int = 1000
    cli_thresholds: tuple[Threshold, ...] = field(default_factory=tuple)
    ini_thresholds: tuple[Threshold, ...] = field(default_factory=tuple)
    timeout_from_cli: bool = False
    max_rows_from_cli: bool = False


class SettingsError(ValueError):
    pass


def resolve_settings(config) -> Settings:
    """Combine ``--sqleval-*`` options with their ``sqleval_*`` ini equivalents."""
    option = config.option

    def ini(name: str):
        value = config.getini(name)
        return value if value not in ("", None, []) else None

    enabled = bool(option.sqleval) or _ini_bool(ini("sqleval"), "sqleval")
    timeout_cli = option.sqleval_timeout
    max_rows_cli = option.sqleval_max_rows
    timeout = timeout_cli or _ini_number(ini("sqleval_timeout"), "sqleval_timeout", positive_float)
    max_rows = max_rows_cli or _ini_number(ini("sqleval_max_rows"), "sqleval_max_rows", positive_int)
    predictions = option.sqleval_predictions or ini("sqleval_predictions")
    json_path = option.sqleval_json or ini("sqleval_json")
    ini_thresholds = []
    for line in config.getini("sqleval_thresholds"):
        try:
            ini_thresholds.append(parse_assignment(line, "ini"))
        except ThresholdError as exc:
            raise SettingsError(f"ini option sqleval_thresholds: {exc}") from None
    return Settings(
        enabled=enabled,
        strict=bool(option.sqleval_strict) or _ini_bool(ini("sqleval_strict"), "sqleval_strict"),
        timeout=timeout,
        max_rows=max_rows,
        predictions=Path(predictions) if predictions else None,
        json_path=Path(json_path) if json_path else None,
        diff=bool(option.sqleval_diff) or _ini_bool(ini("sqleval_diff"), "sqleval_diff"),
        database_url=option.sqleval_database_url or ini("sqleval_database_url"),
        check_gold=bool(option.sqleval_check_gold),
        gold_size=option.sqleval_gold_size or _ini_number(ini("sqleval_gold_size"), "sqleval_gold_size", positive_int) or 1000,
        cli_thresholds=tuple(option.sqleval_threshold or ()),
        ini_thresholds=tuple(ini_thresholds),
        timeout_from_cli=timeout_cli is not None,
        max_rows_from_cli=max_rows_cli is not None,
    )


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
    raise SettingsError(f"ini option {name} must be true or false, not {value!r}")


def _ini_number(value, name: str, parse):
    if value is None:
        return None
    try:
        return parse(str(value))
    except argparse.ArgumentTypeError as exc:
        raise SettingsError(f"ini option {name}: {exc}") from None
