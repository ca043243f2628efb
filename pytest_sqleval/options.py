"""The plugin's command-line options and ini values (``--sqleval*``, ``sqleval*``), and whether they enable it.

Light at import: the argparse types convert through :mod:`pytest_sqleval.settings`, imported only when a value
is given, so an inactive run imports nothing of the plugin's settings.
"""

from __future__ import annotations

import pytest

from .defaults import DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT


def _lazy_type(name: str):
    """``settings.<name>`` as an argparse type, imported only when a value is given (an inactive run imports
    nothing of the plugin's settings)."""

    def convert(text: str):
        from . import settings

        return getattr(settings, name)(text)

    convert.__name__ = name
    return convert


positive_float = _lazy_type("positive_float")
connect_seconds = _lazy_type("connect_seconds")
positive_int = _lazy_type("positive_int")
row_cap = _lazy_type("row_cap")
memory_size = _lazy_type("memory_size")
threshold_assignment = _lazy_type("threshold_assignment")


def number_ini() -> dict:
    """The ``addini`` arguments of a numeric value: pytest 9's native TOML (``pytest.toml``, ``[tool.pytest]``)
    keeps ``sqleval_timeout = 5`` an int, which a string option refuses; from pytest 9.2 a union type takes the
    number as well as text ("5", "2GiB"), which the settings check either way."""
    import re

    version = re.match(r"(\d+)\.(\d+)", pytest.__version__)
    if version is None or (int(version[1]), int(version[2])) < (9, 2):
        return {}
    return {"type": str | float, "default": ""}


class OptionGroup:
    """``parser.getgroup(name, description)`` whose options name their ``dest`` (the one argparse derives from the
    first name: ``--sqleval-max-rows`` -> ``sqleval_max_rows``). pytest 9 checks an option given without one
    against every option already added, so registering ours cost each run, active or not, ~3,600 look-ups."""

    def __init__(self, parser: pytest.Parser, name: str, description: str = "") -> None:
        self._group = parser.getgroup(name, description)

    def addoption(self, *names: str, **attrs) -> None:
        attrs.setdefault("dest", names[0].lstrip("-").replace("-", "_"))
        self._group.addoption(*names, **attrs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = OptionGroup(parser, "sqleval", "text-to-SQL evaluation (pytest-sqleval)")
    group.addoption("--sqleval", action="store_true", default=False,
                    help="collect *.sqleval.yaml suites (and YAML files named on the command line) and evaluate them.")
    group.addoption("--sqleval-predictions", metavar="FILE", default=None,
                    help='JSON Lines predictions {"id": "<case id>", "sql": "..."} matched by id; '
                         "replaces `predicted:` in the suites.")
    group.addoption("--sqleval-strict", action="store_true", default=False,
                    help="make every miss a test failure.")
    group.addoption("--sqleval-timeout", metavar="SECONDS", type=positive_float, default=None,
                    help=f"timeout per query (default {DEFAULT_TIMEOUT:g} s; overrides a suite's `timeout:`).")
    group.addoption("--sqleval-max-rows", metavar="N", type=row_cap, default=None,
                    help=f"row cap per query (default {DEFAULT_MAX_ROWS}; overrides a suite's `max_rows:`).")
    group.addoption("--sqleval-max-memory", metavar="SIZE", type=memory_size, default=None,
                    help="memory cap per query: 2GiB, 512MB or bytes "
                         "(default 2GiB; overrides a suite's `max_memory:`).")
    group.addoption("--sqleval-connect-timeout", metavar="SECONDS", type=connect_seconds, default=None,
                    help=f"connect timeout of network databases (default {DEFAULT_CONNECT_TIMEOUT:g} s; "
                         "overrides a suite's `connect_timeout:`).")
    group.addoption("--sqleval-threshold", metavar="METRIC=VALUE", type=threshold_assignment, action="append",
                    default=None, help="gate on an aggregate metric (repeatable; overrides the suites' thresholds).")
    group.addoption("--sqleval-json", metavar="PATH", default=None, help="write the sqleval-report/1 JSON report.")
    group.addoption("--sqleval-diff", action="store_true", default=False,
                    help="show the gold and predicted SQL and a result diff for every miss (also with -v).")
    group.addoption("--sqleval-database-url", metavar="URL", default=None,
                    help="build suites' setup-script databases on this engine instead "
                         "(sqlite://, duckdb:// or a server URL).")
    group.addoption("--sqleval-check-gold", action="store_true", default=False,
                    help="run only the gold queries and report broken, vacuous or non-deterministic ones.")
    group.addoption("--sqleval-gold-size", metavar="N", type=positive_int, default=None,
                    help="with --sqleval-check-gold: flag golds returning more than N rows (default 1000).")

    number = number_ini()
    parser.addini("sqleval", type="bool", default=False, help="evaluate sqleval suites without --sqleval.")
    parser.addini("sqleval_predictions", help="default for --sqleval-predictions.")
    parser.addini("sqleval_strict", type="bool", default=False, help="default for --sqleval-strict.")
    parser.addini("sqleval_timeout", **number, help=f"timeout per query in seconds (default {DEFAULT_TIMEOUT:g}).")
    parser.addini("sqleval_max_rows", **number, help=f"row cap per query (default {DEFAULT_MAX_ROWS}).")
    parser.addini("sqleval_max_memory", **number, help="memory cap per query: 2GiB, 512MB or bytes (default 2GiB).")
    parser.addini("sqleval_connect_timeout", **number,
                  help=f"connect timeout of network databases in seconds (default {DEFAULT_CONNECT_TIMEOUT:g}).")
    parser.addini("sqleval_thresholds", type="linelist", help="METRIC=VALUE lines; suites' own thresholds win.")
    parser.addini("sqleval_json", help="default for --sqleval-json.")
    parser.addini("sqleval_diff", type="bool", default=False, help="default for --sqleval-diff.")
    parser.addini("sqleval_database_url", help="default for --sqleval-database-url.")
    parser.addini("sqleval_gold_size", **number, help="default for --sqleval-gold-size.")
    parser.addini("sqleval_allow_functions", type="linelist",
                  help="your own functions predictions may call beside the dialect's allowlist of pure functions.")


def may_be_enabled(config: pytest.Config) -> bool:
    """``--sqleval``, or any ``sqleval*`` ini value (``sqleval = true``, or a value to validate)."""
    if getattr(config.option, "sqleval", False):
        return True
    return any(_ini_is_set(config, name) for name in _SETTINGS_INI)


#: The ini options ``settings.resolve_settings`` reads.
_SETTINGS_INI = (
    "sqleval", "sqleval_predictions", "sqleval_strict", "sqleval_timeout", "sqleval_max_rows", "sqleval_max_memory",
    "sqleval_connect_timeout", "sqleval_thresholds", "sqleval_json", "sqleval_diff", "sqleval_database_url",
    "sqleval_gold_size", "sqleval_allow_functions",
)


def _ini_is_set(config: pytest.Config, name: str) -> bool:
    try:
        return config.getini(name) not in ("", None, [], False)
    except Exception:  # noqa: BLE001 - an unreadable value: resolve the settings, which say what is wrong
        return True


def refuse_empty_options(option, wanted) -> None:
    """A usage error for the first of the ``wanted`` options (dest -> what to give instead) given an explicit empty
    value (:func:`pytest_sqleval.settings.empty_option_message`)."""
    from .settings import empty_option_message

    for name, what in wanted.items():
        problem = empty_option_message("--" + name.replace("_", "-"), getattr(option, name, None), what)
        if problem is not None:
            raise pytest.UsageError(problem)
