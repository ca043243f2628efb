"""pytest glue for ordinary tests: ``sqleval_engine`` outside suites, ``sqleval_query``, the
``sqleval_database`` marker and ini option, and rich explanations of failing verdicts.

- ``@pytest.mark.sqleval_database("shop.sqlite", setup=[...])`` (on a test, a class or a module's
  ``pytestmark``) or the ini option ``sqleval_database`` (with ``sqleval_database_setup`` lines) points
  ``sqleval_engine`` at a database in a plain test. Paths in the marker are relative to the test file,
  in the ini file to the ini file's directory. Setup-script databases are built once per session (per
  xdist worker).
- ``sqleval_query(sql)`` runs one untrusted query against ``sqleval_engine`` and returns a QueryResult;
  the guard or the engine refusing it raises QueryError (``kind``, ``message``).
- ``pytest_assertrepr_compare`` explains ``assert verdict == True``; a failing ``assert verdict`` or
  ``assert verdict.match`` (also on ``compare_results(...)``/``exact_match(...)`` verdicts) gets a
  ``sqleval verdict`` section with the same explanation under its traceback.

Heavy imports stay inside functions: an inactive run must stay fast.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from .running_test import set_engine_lookup, set_settings_lookup

MARKER = "sqleval_database"
_CURRENT: dict[str, Any] = {"item": None}
_SETTINGS = pytest.StashKey[dict]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("sqleval_database", help="database of sqleval_engine in plain tests: a path (relative to the ini "
                                           "file) or a SQLAlchemy URL.")
    parser.addini("sqleval_database_setup", type="linelist",
                  help="setup scripts building the sqleval_database (relative to the ini file).")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sqleval_database(path_or_url, setup=[...]): the database of the sqleval_engine fixture in a plain test "
        "(a path relative to the test file, or a SQLAlchemy URL; setup scripts build it once per session)",
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    import sys

    module = sys.modules.get("pytest_sqleval.assertions")
    if module is not None:
        module.clear_caches()


# --------------------------------------------------------------------------- the current test
@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    _CURRENT["item"] = item
    set_engine_lookup(current_engine)  # what the assertion helpers use without engine=
    set_settings_lookup(current_settings)  # and their limits without timeout=/max_rows=
    try:
        return (yield)
    finally:
        _CURRENT["item"] = None


def current_engine():
    """The running test's ``sqleval_engine`` (None when it has no database configured)."""
    item = _CURRENT["item"]
    if item is None:
        return None
    funcargs = getattr(item, "funcargs", None) or {}
    if "sqleval_engine" in funcargs:
        return funcargs["sqleval_engine"]
    if getattr(item, "case", None) is None and _database_target(item) is None:
        return None
    request = getattr(item, "_request", None)
    if request is None:
        return None
    return request.getfixturevalue("sqleval_engine")


def current_settings() -> dict[str, Any]:
    """The running test's session settings for the helpers (empty when no test runs)."""
    item = _CURRENT["item"]
    return {} if item is None else session_settings(item.config)


def session_settings(config: pytest.Config) -> dict[str, Any]:
    """What the helpers and ``sqleval_query`` run with, as suites do: ``--sqleval-timeout``/``sqleval_timeout``,
    the row cap, ``max_memory`` and ``sqleval_allow_functions``; and the session's execution profiles and engine
    backends (their hooks), which a plain run (no ``--sqleval``, no ``sqleval_*`` ini value) builds only now, on
    first use, so that a run that never calls a helper imports nothing more."""
    found = config.stash.get(_SETTINGS, None)
    if found is not None:
        return found
    from .options import may_be_enabled
    from .state import STATE_KEY

    if not may_be_enabled(config):  # plugin.pytest_configure did not build the session's tables
        from .plugin import _register_backends, _register_profiles

        _register_profiles(config)
        _register_backends(config)
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        settings = state.settings
    else:
        from .settings import resolve_settings

        settings = resolve_settings(config)
    found = {"timeout": settings.timeout, "max_rows": settings.max_rows, "max_memory": settings.max_memory,
             "allow_functions": frozenset(name.lower() for name in settings.allow_functions)}
    config.stash[_SETTINGS] = found
    return found


# --------------------------------------------------------------------------- sqleval_engine in plain tests
def plain_test_engine(request: pytest.FixtureRequest, factory):
    """``sqleval_engine`` outside suites: the database of the marker, else of the ini option."""
    session_settings(request.config)  # the session's engine backends, before an engine is opened
    target = _database_target(request.node)
    if target is None:
        pytest.fail(
            "sqleval_engine needs a database in a plain test: mark the test (or the module, with "
            "pytestmark) with @pytest.mark.sqleval_database(\"shop.sqlite\", setup=[...]), "
            "or set the ini option `sqleval_database = shop.sqlite` (with `sqleval_database_setup` lines)",
            pytrace=False,
        )
    database, setup, origin = target
    from .errors import DatabaseError

    try:
        spec = _spec(database, setup, origin)
        from .execution.engines import factory_engine

        return factory_engine(factory, spec)
    except DatabaseError as exc:
        problem = str(exc) + _relative_url_hint(database)
    from .secrets import mask_url

    pytest.fail(f"{origin}: cannot open the database {mask_url(database)!r}: {problem}", pytrace=False)  # (not chained)


def _relative_url_hint(database: str) -> str:
    """For ``sqlite:///shop.sqlite`` that is not found: such a URL is read from the working directory, while a
    path alone is relative to the test file (or the ini file), which is what the writer usually meant."""
    for scheme in ("sqlite:///", "duckdb:///"):
        if database.startswith(scheme):
            rest = database[len(scheme):].split("?", 1)[0]
            if rest and rest != ":memory:" and not Path(rest).is_absolute() and not Path(rest).exists():
                return (f"; a relative file URL is read from the working directory ({os.getcwd()}): write the path "
                        f"alone, \"{rest}\", for a file relative to the test file (in the ini option: to the ini file)")
    return ""


def _database_target(node) -> tuple[str, list[str], str] | None:
    """(database, setup scripts (absolute), where it was set) for a test node, or None."""
    marker = node.get_closest_marker(MARKER) if hasattr(node, "get_closest_marker") else None
    if marker is not None:
        base = Path(str(getattr(node, "path", None) or node.config.rootpath)).parent
        where = f"@pytest.mark.{MARKER} on {node.nodeid}"
        if len(marker.args) != 1 or not isinstance(marker.args[0], (str, os.PathLike)):
            pytest.fail(f"{where}: give exactly one database, a path or a SQLAlchemy URL, e.g. "
                        f"@pytest.mark.{MARKER}(\"shop.sqlite\") or (\"sqlite://\", setup=[\"schema.sql\"])",
                        pytrace=False)
        unknown = [k for k in marker.kwargs if k != "setup"]
        if unknown:
            pytest.fail(f"{where}: unknown argument {unknown[0]!r}; the marker takes the database and setup=[...]",
                        pytrace=False)
        setup = _scripts(marker.kwargs.get("setup"), where)
        return _absolute(os.fspath(marker.args[0]), base, where), [str(_absolute(s, base, where)) for s in setup], where
    config = node.config
    value = config.getini("sqleval_database")
    if not value:
        return None
    base = Path(config.inipath).parent if config.inipath else Path(config.rootpath)
    where = f"ini option sqleval_database ({config.inipath or 'rootdir'})"
    setup = [str(_absolute(s, base, where)) for s in config.getini("sqleval_database_setup") or []]
    return _absolute(str(value).strip(), base, where), setup, where


def _scripts(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, (str, os.PathLike)) for v in value):
        pytest.fail(f"{where}: setup= must be a list of SQL script paths, e.g. setup=[\"schema.sql\", \"data.sql\"]",
                    pytrace=False)
    return [os.fspath(v) for v in value]


def _absolute(text: str, base: Path, where: str = "") -> str:
    from .secrets import expand_env

    def missing(name: str) -> Exception:
        what = "database URL" if "://" in text else "database path"
        return pytest.fail.Exception(f"{where}: the {what} uses ${{{name}}}, which is not set; set it or "
                                     f"write ${{{name}:-default}}", pytrace=False)

    # ${VAR} as in a suite's `database:` and `setup:` (a password URL-encoded, and masked): a variable may hold
    # the whole URL (`${DATABASE_URL}`) or part of a path
    text = expand_env(text, lambda name: os.environ.get(name), missing)
    if "://" in text:
        return os.path.expandvars(text)  # then any bare $VAR
    path = Path(os.path.expanduser(text))
    return str(path if path.is_absolute() else (base / path).resolve())


def _spec(database: str, setup: list[str], where: str):
    from .suite import DatabaseSpec, file_url

    for script in setup:
        if not Path(script).is_file():
            pytest.fail(f"{where}: setup script not found: {script}", pytrace=False)
    scripts = tuple(Path(s) for s in setup)
    if database.rstrip("/") in ("sqlite:", "duckdb:", "sqlite:///:memory:", "duckdb:///:memory:") and not setup:
        pytest.fail(f"{where}: {database} is an empty in-memory database; build it with setup scripts: "
                    f"@pytest.mark.{MARKER}(\"{database}\", setup=[\"schema.sql\"]) (or, in the ini file, "
                    "sqleval_database_setup lines)", pytrace=False)
    if "://" in database:
        spec = DatabaseSpec(url=database, setup=scripts, source=database)
        if setup and spec.file_path is not None:  # as a suite's `database:` reads it: `sqlite:///:memory:` is no file
            pytest.fail(f"{where}: setup scripts build a fresh database; they cannot target an existing file: "
                        "use \"sqlite://\" or \"duckdb://\" (a file is built for you) or a server URL", pytrace=False)
        return spec
    path = Path(database)
    if setup:
        pytest.fail(f"{where}: setup scripts build a fresh database; give \"sqlite://\" or \"duckdb://\" "
                    f"instead of the file {path.name}", pytrace=False)
    if not path.is_file():
        pytest.fail(f"{where}: database file not found: {path} (paths in the marker are relative to the test file, "
                    "in the ini option to the ini file)", pytrace=False)
    scheme = "duckdb" if path.suffix.lower() in (".duckdb", ".ddb") else "sqlite"
    return DatabaseSpec(url=file_url(scheme, path), source=database)


# --------------------------------------------------------------------------- sqleval_query
class QueryRunner:
    """``sqleval_query(sql, timeout=None, max_rows=None)``: one untrusted query, guarded, on sqleval_engine."""

    def __init__(self, engine) -> None:
        self.engine = engine

    def __call__(self, sql: str, timeout: float | None = None, max_rows: int | None = None, *,
                 dialect: str | None = None):  # the README's signature: `sqleval_query(sql, timeout=None, max_rows=None)`
        __tracebackhide__ = True
        from .assertions import limit_hint, run_limits
        from .errors import DatabaseError, QueryError
        from .execution.runner import run_query
        from .running_test import running_settings

        if sql is None:  # a model that answered nothing: as the helpers call it (never a driver's TypeError)
            raise QueryError("no_prediction", "no prediction (sqleval_query got None)")
        if not isinstance(sql, str):
            raise TypeError(f"sqleval_query: sql must be SQL text (a str), not {type(sql).__name__}")
        if not sql.strip():  # as the helpers and a suite's case call an empty answer
            raise QueryError("no_prediction", "the prediction is empty (sqleval_query got no SQL text)")
        timeout, max_rows = run_limits(timeout, max_rows)
        settings = running_settings()
        try:
            return run_query(self.engine, sql, timeout=timeout, max_rows=max_rows, untrusted=True, dialect=dialect,
                             allow_functions=settings.get("allow_functions", frozenset()),
                             max_memory=settings.get("max_memory"))
        except QueryError as exc:  # a limit's message names this call's `timeout=`/`max_rows=`
            problem = type(exc)(exc.kind, limit_hint(exc.message))
        except DatabaseError as exc:
            problem = DatabaseError(str(exc))
        # raised afresh, outside the except clause: no frame of the runner below (their locals hold the raw URL,
        # password included, for `--showlocals`), and no "during handling" chain
        raise problem


@pytest.fixture
def sqleval_query(sqleval_engine):
    """Run one untrusted query safely against ``sqleval_engine``: ``sqleval_query("SELECT ...")`` -> QueryResult."""
    if sqleval_engine is None:
        pytest.fail("sqleval_query: this case has no database to run queries on", pytrace=False)
    from .assertions import fixture_engine

    return QueryRunner(fixture_engine(sqleval_engine, "sqleval_query"))  # an override may give a Connection


# --------------------------------------------------------------------------- explanations
_EXPLAINED: set[int] = set()


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: Any, right: Any) -> list[str] | None:
    """``assert verdict == True`` (or ``!= False``) on a verdict object: its full explanation."""
    if op not in ("==", "!="):
        return None
    for value, other in ((left, right), (right, left)):
        if isinstance(other, bool) and _is_verdict(value):
            from .assertions import explain

            text = explain(value)
            if text is None:
                return None
            lines = [f"{_short(value)} {op} {other}", *text.splitlines()]
            if _fits(config, lines):
                _EXPLAINED.add(id(value))  # shown in full here; otherwise the report adds a section
            return lines
    return None


def _fits(config: pytest.Config, lines: list[str]) -> bool:
    """Will pytest show these explanation lines untruncated?"""
    try:
        from _pytest.compat import running_on_ci

        if running_on_ci():
            return True
    except ImportError:  # pragma: no cover - older pytest
        pass
    if config.get_verbosity(getattr(pytest.Config, "VERBOSITY_ASSERTIONS", "assertions")) >= 2:
        return True

    def limit(name: str, default: int) -> int:
        try:
            value = config.getini(name)
        except ValueError:
            return default
        return default if value in (None, "") else int(value)

    max_lines, max_chars = limit("truncation_limit_lines", 8), limit("truncation_limit_chars", 640)
    return (max_lines <= 0 or len(lines) <= max_lines) and (max_chars <= 0 or sum(map(len, lines)) <= max_chars)


def _is_verdict(value: Any) -> bool:
    module = type(value).__module__
    if not module.startswith("pytest_sqleval"):
        return False
    from .assertions import is_failing_verdict

    return is_failing_verdict(value) or hasattr(value, "passed") or hasattr(value, "match")


def _short(value: Any) -> str:
    summary = getattr(value, "summary", None)
    if callable(summary):
        return f"<{type(value).__name__} {summary()}>"
    if hasattr(value, "passed"):
        return f"<{type(value).__name__} passed={value.passed}>"
    reason = getattr(value, "reason", None)
    return f"<{type(value).__name__} match={getattr(value, 'match', None)}{f' {reason}' if reason else ''}>"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failing plain ``assert`` on a verdict: add its explanation under the traceback."""
    report = yield
    try:
        if (call.when == "call" and report.failed and call.excinfo is not None
                and call.excinfo.errisinstance(AssertionError) and getattr(item, "case", None) is None):
            _add_verdict_section(report, call.excinfo)
    except Exception:  # noqa: BLE001 - an explanation must never break the report
        pass
    finally:
        if call.when == "teardown":
            import sys

            _EXPLAINED.clear()
            helpers = sys.modules.get("pytest_sqleval.assertions")  # nothing to forget if never imported
            if helpers is not None:
                helpers.RECENT_VERDICTS.clear()
    return report


def _add_verdict_section(report: pytest.TestReport, excinfo) -> None:
    if type(excinfo.value).__name__ == "SqlevalAssertionError" or not excinfo.traceback:
        return  # the helpers' own failures already carry the explanation
    for entry in reversed(excinfo.traceback):  # the failing frame, else the one that called into it: a unittest
        texts = _frame_verdicts(entry)  # `self.assertTrue(verdict)` fails inside unittest, on a verdict of the test's
        if texts:
            report.sections.append(("sqleval verdict", "\n\n".join(texts)))
            return
    for entry in reversed(excinfo.traceback):  # `assert check_...(...)`, `self.assertTrue(check_...(...))`
        text = _unnamed_verdict(entry)
        if text:
            report.sections.append(("sqleval verdict", text))
            return


#: The helpers whose verdict an assert statement may hold in no variable (under --assert=plain).
_CHECKS = {"check_execution_match": "ExecutionMatchCheck", "check_soft_f1": "SoftF1Check",
           "check_exact_match": "ExactMatchCheck", "check_policy_of": "PolicyCheck",
           "compare_results": "ExecutionVerdict", "check_policy": "PolicyVerdict"}


def _unnamed_verdict(entry) -> str | None:
    """``assert check_execution_match(...)`` under --assert=plain: the verdict lives in no frame; the failing
    statement names the helper, whose latest verdict (returned in this test) is the one it asserted."""
    import re

    try:
        statement = str(entry.statement)
    except Exception:  # noqa: BLE001 - no source available
        return None
    kinds = {kind for name, kind in _CHECKS.items() if re.search(rf"\b{name}\s*\(", statement)}
    if not kinds:
        return None
    from .assertions import RECENT_VERDICTS, explain, is_failing_verdict

    latest = next((v for v in reversed(RECENT_VERDICTS) if type(v).__name__ in kinds), None)
    if latest is None or not is_failing_verdict(latest) or id(latest) in _EXPLAINED:  # `assert not check(...)`
        return None
    return explain(latest)


def _frame_verdicts(entry) -> list[str]:
    """The explanations of the failing verdicts in one traceback entry's frame that its statement names."""
    import re

    def ours(value: Any) -> bool:
        return type(value).__module__.startswith("pytest_sqleval.")

    def held(value: Any) -> list[Any]:  # a verdict, or the verdicts of a list/tuple/dict (`assert all(verdicts)`)
        if isinstance(value, (list, tuple)):
            return [v for v in value[:1000] if ours(v)]
        if isinstance(value, dict):
            return [v for v in list(value.values())[:1000] if ours(v)]
        return [value] if ours(value) else []

    if not any(held(v) for v in entry.frame.f_locals.values()):
        return []  # nothing of ours in this frame
    from .assertions import explain, is_failing_verdict

    try:
        statement = str(entry.statement)
    except Exception:  # noqa: BLE001 - no source available
        statement = ""
    texts = []
    seen: set[int] = set()
    more = 0
    for name, local in entry.frame.f_locals.items():
        if not name.startswith("@py_assert") and not re.search(rf"\b{re.escape(name)}\b", statement):
            continue
        for value in held(local):
            if id(value) in seen or id(value) in _EXPLAINED or not is_failing_verdict(value):
                continue
            seen.add(id(value))
            if len(texts) == _MAX_SECTION_VERDICTS:
                more += 1
                continue
            text = explain(value)
            if text:
                texts.append(text)
    if more:
        texts.append(f"... and {more} more failing verdict(s)")
    return texts


#: How many failing verdicts one `sqleval verdict` section explains (`assert all(verdicts)` on many).
_MAX_SECTION_VERDICTS = 5
