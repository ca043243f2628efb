"""pytest-sqleval's pytest plugin (the ``pytest11`` entry point).

Installing the package changes nothing until ``--sqleval`` (or the ini option
``sqleval = true``) is given: only then are suite files collected and the
summary, gate and report hooks active. The fixtures below are always
available, so ordinary tests can use ``sqleval_engine_factory``.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .defaults import DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_MEMORY, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT

if TYPE_CHECKING:  # pragma: no cover - the heavy modules load only when sqleval is enabled
    from .settings import Settings
    from .suite import DatabaseSpec
    from .collect import CaseItem
    from .evaluate import Evaluator
    from .execution.engines import EngineFactory
    from .predictions import Prediction
    from .suite import Suite
    from .summary import SuiteSummary

STATE_KEY = pytest.StashKey["SqlevalState"]()
JSON_FAILED_KEY = pytest.StashKey[bool]()

#: Feature plugins registered beside this one (each keeps its own options, fixtures and hooks).
#: Keep each module light at import time: heavy imports go inside functions (an inactive run must stay fast).
pytest_plugins: list[str] = [
    "pytest_sqleval.ci_plugin",
    "pytest_sqleval.assert_plugin",
    "pytest_sqleval.deploygate_plugin",
    "pytest_sqleval.lifecycle",
    "pytest_sqleval.model_plugin",
    "pytest_sqleval.fidelity_plugin",
]


def pytest_plugin_registered(plugin, manager) -> None:
    """Register the ``pytest_plugins`` above as soon as this module is, as pytest would, but without pytest's
    scan of every installed distribution's entry points for each name (milliseconds per name, paid by every
    plain run that has the plugin installed). ``-p no:<module>`` still blocks one."""
    import sys

    if plugin is not sys.modules.get(__name__):
        return
    import importlib

    for name in pytest_plugins:
        if manager.is_blocked(name) or manager.get_plugin(name) is not None:
            continue
        rewrite_hook = getattr(manager, "rewrite_hook", None)
        if rewrite_hook is not None:
            rewrite_hook.mark_rewrite(name)
        manager.register(importlib.import_module(name), name)


# --------------------------------------------------------------------------- options
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


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sqleval", "text-to-SQL evaluation (pytest-sqleval)")
    group.addoption("--sqleval", action="store_true", default=False,
                    help="collect *.sqleval.yaml suites (and YAML files named on the command line) and evaluate them.")
    group.addoption("--sqleval-predictions", metavar="FILE", default=None,
                    help='JSON Lines predictions {"id": "<case id>", "sql": "..."} matched by id; replaces `predicted:` in the suites.')
    group.addoption("--sqleval-strict", action="store_true", default=False,
                    help="make every miss a test failure.")
    group.addoption("--sqleval-timeout", metavar="SECONDS", type=positive_float, default=None,
                    help=f"timeout per query (default {DEFAULT_TIMEOUT:g} s; overrides a suite's `timeout:`).")
    group.addoption("--sqleval-max-rows", metavar="N", type=row_cap, default=None,
                    help=f"row cap per query (default {DEFAULT_MAX_ROWS}; overrides a suite's `max_rows:`).")
    group.addoption("--sqleval-max-memory", metavar="SIZE", type=memory_size, default=None,
                    help="memory cap per query: 2GiB, 512MB or bytes (default 2GiB; overrides a suite's `max_memory:`).")
    group.addoption("--sqleval-connect-timeout", metavar="SECONDS", type=connect_seconds, default=None,
                    help=f"connect timeout of network databases (default {DEFAULT_CONNECT_TIMEOUT:g} s; "
                         "overrides a suite's `connect_timeout:`).")
    group.addoption("--sqleval-threshold", metavar="METRIC=VALUE", type=threshold_assignment, action="append",
                    default=None, help="gate on an aggregate metric (repeatable; overrides the suites' thresholds).")
    group.addoption("--sqleval-json", metavar="PATH", default=None, help="write the sqleval-report/1 JSON report.")
    group.addoption("--sqleval-diff", action="store_true", default=False,
                    help="show the gold and predicted SQL and a result diff for every miss (also with -v).")
    group.addoption("--sqleval-database-url", metavar="URL", default=None,
                    help="build suites' setup-script databases on this engine instead (sqlite://, duckdb:// or a server URL).")
    group.addoption("--sqleval-check-gold", action="store_true", default=False,
                    help="run only the gold queries and report broken, vacuous or non-deterministic ones.")
    group.addoption("--sqleval-gold-size", metavar="N", type=positive_int, default=None,
                    help="with --sqleval-check-gold: flag golds returning more than N rows (default 1000).")

    parser.addini("sqleval", type="bool", default=False, help="evaluate sqleval suites without --sqleval.")
    parser.addini("sqleval_predictions", help="default for --sqleval-predictions.")
    parser.addini("sqleval_strict", type="bool", default=False, help="default for --sqleval-strict.")
    parser.addini("sqleval_timeout", help=f"timeout per query in seconds (default {DEFAULT_TIMEOUT:g}).")
    parser.addini("sqleval_max_rows", help=f"row cap per query (default {DEFAULT_MAX_ROWS}).")
    parser.addini("sqleval_max_memory", help="memory cap per query: 2GiB, 512MB or bytes (default 2GiB).")
    parser.addini("sqleval_connect_timeout",
                  help=f"connect timeout of network databases in seconds (default {DEFAULT_CONNECT_TIMEOUT:g}).")
    parser.addini("sqleval_thresholds", type="linelist", help="METRIC=VALUE lines; suites' own thresholds win.")
    parser.addini("sqleval_json", help="default for --sqleval-json.")
    parser.addini("sqleval_diff", type="bool", default=False, help="default for --sqleval-diff.")
    parser.addini("sqleval_database_url", help="default for --sqleval-database-url.")
    parser.addini("sqleval_gold_size", help="default for --sqleval-gold-size.")
    parser.addini("sqleval_allow_functions", type="linelist",
                  help="your own functions predictions may call beside the dialect's allowlist of pure functions.")


# --------------------------------------------------------------------------- state
@dataclass
class SqlevalState:
    """Everything the plugin keeps for one session, stored in ``config.stash``."""

    settings: Settings
    engines: EngineFactory
    evaluator: Evaluator
    predictions: dict[str, Prediction] | None = None
    suites: dict[str, Suite] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    summaries: list[SuiteSummary] = field(default_factory=list)
    json_written: str | None = None
    json_error: str | None = None
    report: dict[str, Any] | None = None  # the sqleval-report/1 dict, built after the loop (with overall, baseline, gates)

    def register_suite(self, suite: Suite) -> None:
        self.suites[str(suite.path)] = suite

    def suite_at(self, path: str) -> Suite:
        from .suite_cache import load_suite_shared

        if path not in self.suites:  # the xdist controller: its workers' reading, from the run's build folder
            self.suites[path] = load_suite_shared(path, self.engines.build_dir)
        return self.suites[path]

    def case_engines(self, case, first_engine) -> list:
        """The engines of all the case's databases: ``first_engine`` (the ``sqleval_engine`` fixture) and the rest."""
        if first_engine is None:
            return []
        return [first_engine, *(self.engines.engine(spec) for spec in case.databases[1:])]

    def database_label(self, case, engine=None) -> str | None:
        """The database a case really ran on, for reports: the suite's, or the overriding fixture's engine."""
        if engine is not None and not self.engines.owns(engine):
            from .secrets import mask_url

            return f"{mask_url(str(engine.url))} (from the sqleval_engine fixture)"
        if case.database is not None:
            return self.engines.describe(case.database)
        return case.schema.db_id if case.schema else None

    def timeout_for(self, suite: Suite) -> float:
        s = self.settings
        if s.timeout_from_cli:
            return s.timeout
        return suite.timeout or s.timeout or DEFAULT_TIMEOUT

    def max_rows_for(self, suite: Suite) -> int:
        s = self.settings
        if s.max_rows_from_cli:
            return s.max_rows
        return suite.max_rows or s.max_rows or DEFAULT_MAX_ROWS

    def max_memory_for(self, suite: Suite) -> int:
        """Memory cap per query in bytes: command line, then the suite's `max_memory:`, then ini, then 2 GiB."""
        s = self.settings
        if s.max_memory_from_cli:
            return s.max_memory
        return suite.max_memory or s.max_memory or DEFAULT_MAX_MEMORY

    def allowed_functions_for(self, suite: Suite) -> frozenset[str]:
        """The user's own functions a prediction may call: the suite's `allow_functions:` and the ini option."""
        names = (*getattr(suite, "allow_functions", ()), *self.settings.allow_functions)
        return frozenset(name.lower() for name in names)


def sqleval_state(config: pytest.Config) -> SqlevalState:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        raise pytest.UsageError("pytest-sqleval is not active: run pytest with --sqleval")
    return state


def _may_be_enabled(config: pytest.Config) -> bool:
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


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


# --------------------------------------------------------------------------- configure
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqleval(suite, case): a case collected from a pytest-sqleval suite")
    if not _may_be_enabled(config):
        return  # inactive: nothing of the plugin is imported (the ini values are checked when it is enabled)
    from .settings import SettingsError, resolve_settings

    try:
        settings = resolve_settings(config)
    except SettingsError as exc:
        raise pytest.UsageError(str(exc)) from None
    if not settings.enabled:
        return
    from .errors import SuiteError
    from .evaluate import Evaluator
    from .execution.engines import EngineFactory
    from .predictions import load_predictions

    _check_report_path(settings.json_path, "--sqleval-json")
    predictions = None
    if settings.predictions is not None:
        try:
            predictions = load_predictions(settings.predictions)
        except SuiteError as exc:
            raise pytest.UsageError(exc.render()) from None
    worker = config.workerinput["workerid"] if _is_worker(config) else "main"
    state = SqlevalState(
        settings=settings,
        engines=EngineFactory(build_dir=_build_dir(worker), worker=worker, url_override=settings.database_url,
                              connect_timeout=settings.connect_timeout or DEFAULT_CONNECT_TIMEOUT,
                              connect_timeout_from_cli=settings.connect_timeout_from_cli,
                              shared_build_dir=_shared_build_dir(config)),
        evaluator=Evaluator(timeout=settings.timeout or DEFAULT_TIMEOUT, max_rows=settings.max_rows or DEFAULT_MAX_ROWS),
        predictions=predictions,
    )
    config.stash[STATE_KEY] = state
    config.pluginmanager.register(SqlevalSession(config, state), "sqleval-session")
    if not config.option.collectonly and not _is_xdist_controller(config):
        _start_query_process()


def _is_xdist_controller(config: pytest.Config) -> bool:
    """The controller of an xdist run runs no case: its workers each start their own query process."""
    return not _is_worker(config) and bool(getattr(config.option, "numprocesses", None)) \
        and getattr(config.option, "dist", "no") != "no"


def _start_query_process() -> None:
    """Start this process's zygote now, so that no case pays for its imports."""
    from .execution.sandbox import process_sandbox, sandbox_enabled

    if sandbox_enabled():
        try:
            process_sandbox().start()
        except Exception:  # noqa: BLE001 - it is started again, with a clear error, by the first query
            pass


def _check_report_path(path, option: str) -> None:
    """A report path that can never be written is a usage error before anything runs."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise pytest.UsageError(f"{option} {path} is a directory; give a file path, e.g. {target / 'report.json'}")


def _shared_build_dir(config: pytest.Config) -> Path | None:
    """An xdist worker builds SQLite/DuckDB setup databases in the controller's build folder, once per run
    (``lifecycle.pytest_configure_node`` passes it; the controller removes it at the end)."""
    shared = getattr(config, "workerinput", {}).get("sqleval_build_dir")
    return Path(shared) if shared and Path(shared).is_dir() else None


def _build_dir(worker: str) -> Path:
    """Where this process builds setup-script databases: a private temporary directory, removed at the end."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix=f"sqleval-{worker}-", dir=os.environ.get("SQLEVAL_BUILD_DIR")))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Under ``--dist load``/``loadgroup``, keep each interaction's turns together and in order; under every
    scope scheduler, never send a crashed worker's item to another worker."""
    if config.stash.get(STATE_KEY, None) is None:
        return None
    from . import xdist_scheduling

    scheduler = {
        "load": xdist_scheduling.InteractionScheduling,
        "loadgroup": xdist_scheduling.InteractionScheduling,
        "loadscope": xdist_scheduling.ScopeScheduling,
        "loadfile": xdist_scheduling.FileScheduling,
    }.get(config.getvalue("dist"))
    return scheduler(config, log) if scheduler is not None else None


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        from .execution.sandbox import close_process_sandbox

        close_process_sandbox()
        state.engines.close()
        _remove_build_dir(state.engines.build_dir)


def _remove_build_dir(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    s = state.settings
    parts = [
        f"timeout {s.timeout or DEFAULT_TIMEOUT:g} s" + ("" if s.timeout_from_cli else " (suites may override)"),
        f"max rows {s.max_rows or DEFAULT_MAX_ROWS}",
        f"predictions {s.predictions or 'from the suites'}",
        "strict" if s.strict else "misses are not failures",
    ]
    if s.database_url:
        from .suite import DatabaseSpec

        parts.append(f"setup-script databases built on {DatabaseSpec(s.database_url).display} "
                     "(suites whose database is a file or a URL keep it)")
    return ["sqleval: " + ", ".join(parts)]


# --------------------------------------------------------------------------- status of a miss
def sqleval_record(report: pytest.TestReport) -> dict[str, Any] | None:
    """The case record a report carries (an attribute of the report: it travels with it to the xdist
    controller, and JUnit and other consumers see clean data rather than a repr in ``user_properties``)."""
    return getattr(report, "sqleval_record", None)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    if report.when == "call" and report.passed:
        record = sqleval_record(report)
        if record is not None and record.get("outcome") == "missed":
            return "missed", "m", ("MISSED", {"yellow": True})
        if record is not None and record.get("outcome") == "flagged":
            return "flagged", "g", ("FLAGGED", {"yellow": True})
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if getattr(item, "case", None) is None:
        return report
    record = getattr(item, "sqleval_record", None)
    if report.when == "call" and record is not None:
        report.sqleval_record = record
    elif report.failed and report.when != "teardown" and record is None:
        report.sqleval_record = item.sqleval_record = _error_record(item, call, report)
        if call.excinfo is not None and report.when != "call":
            report.longrepr = _short_failure(item, call.excinfo)
    return report


def _short_failure(item, excinfo) -> Any:
    """A broken gold or database is a plain message; an unexpected error a one-line account (the
    traceback with ``--tb=long`` or ``-vv``)."""
    from .collect import _wants_traceback, internal_error_message

    error = excinfo.value
    where = f"{item.suite.path}:{item.case.line}: case {item.case.id}"
    if _is_suite_problem(error):
        return f"{where}: {error}"
    if _wants_traceback(item.config):
        return item._repr_failure_py(excinfo, style="long")
    return f"{where}: {internal_error_message(error)}"


def _is_suite_problem(error: BaseException) -> bool:
    """A broken gold or database: shown as a plain message, never a traceback."""
    from .errors import DatabaseError, GoldError, SuiteError

    return isinstance(error, (DatabaseError, GoldError, SuiteError))


def _error_record(item: CaseItem, call: pytest.CallInfo, report: pytest.TestReport) -> dict[str, Any]:
    """A case that could not be scored: its gold failed, its database could not be opened, or setup raised."""
    from .collect import error_record, internal_error_message
    from .errors import DatabaseError, GoldError

    error = call.excinfo.value if call.excinfo else None
    kind = "gold" if isinstance(error, GoldError) else "database" if isinstance(error, DatabaseError) else "internal"
    if kind == "internal" and error is not None:
        message = internal_error_message(error)
    else:
        message = str(error) if error else report.longreprtext
    return error_record(item.case, item.suite, item.prediction, item.config.stash.get(STATE_KEY, None), kind,
                        _masked(message))


def _masked(text: str) -> str:
    """No credentials in a record, whatever raised (see pytest_sqleval.secrets)."""
    from .secrets import mask_secrets

    return mask_secrets(text)


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def sqleval_engine_factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Call with a path, a SQLAlchemy URL or a DatabaseSpec (and optional ``setup=`` scripts) to get a read-only engine."""
    from .execution.engines import EngineFactory

    state = request.config.stash.get(STATE_KEY, None)
    if state is not None:
        factory = state.engines
        owned = False
    else:
        factory = EngineFactory(build_dir=tmp_path_factory.mktemp("sqleval-databases"))
        owned = True
    yield EngineFactoryFixture(factory)
    if owned:
        factory.close()


class EngineFactoryFixture:
    """``sqleval_engine_factory("shop.sqlite")``, ``sqleval_engine_factory("sqlite://", setup=["schema.sql"])``."""

    def __init__(self, factory: EngineFactory) -> None:
        self.factory = factory

    def __call__(self, database: str | os.PathLike | DatabaseSpec, *, setup: list[str | os.PathLike] | None = None):
        return self.factory.engine(_spec(database, setup))

    def engine(self, spec: DatabaseSpec):
        return self.factory.engine(spec)


def _spec(database: str | os.PathLike | DatabaseSpec, setup) -> DatabaseSpec:
    from .suite import DatabaseSpec

    if isinstance(database, DatabaseSpec):
        return database
    text = os.fspath(database)
    scripts = tuple(Path(s).resolve() for s in setup or ())
    if "://" in text:
        from .secrets import expand_env

        def missing(name: str) -> Exception:
            return pytest.UsageError(f"the database URL {text!r} uses ${{{name}}}, which is not set; "
                                     f"set it or write ${{{name}:-default}}")

        url = expand_env(text, lambda name: os.environ.get(name), missing)  # values URL-encoded, never shown
        return DatabaseSpec(url=url, setup=scripts, source=text)
    path = Path(text).resolve()
    scheme = "duckdb" if path.suffix.lower() in (".duckdb", ".ddb") else "sqlite"
    return DatabaseSpec(url=f"{scheme}:///{path}", setup=scripts, source=text)


@pytest.fixture
def sqleval_case(request: pytest.FixtureRequest):
    """The case (or interaction turn) of the current suite item."""
    case = getattr(request.node, "case", None)
    if case is None:
        raise pytest.UsageError("the sqleval_case fixture is only available inside sqleval suite items")
    return case


@pytest.fixture
def sqleval_engine(request: pytest.FixtureRequest, sqleval_engine_factory):
    """The engine of the current case's (first) database; override it in conftest.py to evaluate elsewhere.

    In a plain test: the database of ``@pytest.mark.sqleval_database(...)`` or the ini ``sqleval_database``.
    """
    case = getattr(request.node, "case", None)
    if case is None:
        from .assert_plugin import plain_test_engine

        return plain_test_engine(request, sqleval_engine_factory)
    if case.database is None:
        return None
    return sqleval_engine_factory.engine(case.database)


@pytest.fixture
def sqleval_gold(request: pytest.FixtureRequest, sqleval_case, sqleval_engine):
    """The gold side of the current case (results, schema, difficulty); a broken gold is an error here."""
    state = sqleval_state(request.config)
    suite = request.node.suite
    prepared = state.evaluator.prepare(
        sqleval_case, suite, state.case_engines(sqleval_case, sqleval_engine), timeout=state.timeout_for(suite),
        max_rows=state.max_rows_for(suite), max_memory=state.max_memory_for(suite),
    )
    if state.settings.check_gold and getattr(sqleval_case, "expected", None) is not None:
        from dataclasses import replace  # `expected:` rows are no gold query: nothing for the gold checks to run

        prepared = replace(prepared, gold=())
    return prepared


# --------------------------------------------------------------------------- the session plugin
class SqlevalSession:
    """Hooks active only when sqleval is enabled: collection, aggregation, gate, summary, report."""

    def __init__(self, config: pytest.Config, state: SqlevalState) -> None:
        self.config = config
        self.state = state
        self._seen: set[tuple] = set()

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector):
        from .collect import YAML_SUFFIXES, SuiteFile, is_suite_file

        if is_suite_file(file_path):
            return SuiteFile.from_parent(parent, path=file_path)
        if file_path.suffix in YAML_SUFFIXES and parent.session.isinitpath(file_path):
            return SuiteFile.from_parent(parent, path=file_path)
        return None

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list) -> None:
        """Prediction ids that match no collected case: a collection error of the predictions file.

        Reported through ``pytest_collectreport`` (not raised), so it also works on xdist workers.
        """
        from .predictions import unmatched_ids

        if self.state.predictions is None or not self.state.suites:
            return
        known = set()
        for suite in self.state.suites.values():
            for case in suite.cases:
                known.update((case.id, f"{suite.name}::{case.id}"))
        unknown = unmatched_ids(self.state.predictions, known)
        path = self.state.settings.predictions
        if not unknown:
            from .predictions import conflicting_ids

            conflicts = conflicting_ids(self.state.predictions, {k for k in known if "::" in k})
            if not conflicts:
                return
            message = (f"{path}: " + "; ".join(conflicts[:20]) + "\n"
                       "  fix: keep one line per case (`<suite>::<id>` when several suites share the id)")
            shown = None
        else:
            shown = ", ".join(unknown[:20]) + (f" (and {len(unknown) - 20} more)" if len(unknown) > 20 else "")
        if shown is not None:
            message = (f"{path}: {len(unknown)} prediction id(s) match no collected case: {shown}\n"
                       "  fix: use the cases' `id:` values (a turn is <interaction>/<n>; <suite>::<id> picks one suite)")
        report = pytest.CollectReport(nodeid=str(path), outcome="failed", longrepr=message, result=[])
        session.ihook.pytest_collectreport(report=report)
        config.hook.pytest_deselected(items=list(items))  # nothing runs against mismatched predictions
        items.clear()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep one record per case: the first report that carries it (a teardown failure, ``--dist each`` or a
        rerun never adds a second); a case whose xdist worker crashed gets an ``error`` record of its own."""
        if _is_worker(self.config):
            return
        record = sqleval_record(report)
        if record is None and report.failed and report.when not in ("setup", "call", "teardown"):
            record = self._crashed_record(report)
        if record is None or not (report.when == "call" or report.failed):
            return
        key = (record["path"], record.get("index", 0), record.get("id"))
        if key in self._seen:
            return
        self._seen.add(key)
        self.state.records.append(record)

    def _crashed_record(self, report: pytest.TestReport) -> dict[str, Any] | None:
        """xdist reports a crashed worker's item with ``when="???"``: record it as an error of the case."""
        from .collect import crashed_case_record

        try:
            return crashed_case_record(self.state, Path(self.config.rootpath), report.nodeid, str(report.longrepr))
        except Exception:  # noqa: BLE001 - a node id we cannot map is left to xdist's own report
            return None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session):
        result = yield
        if _is_worker(self.config) or self.config.option.collectonly or self.state.settings.check_gold:
            return result
        self._summarize()
        self._build_report()
        from .deploygate_plugin import gate_failed

        if gate_failed(self.config, self.state):
            session.testsfailed += 1
        self._write_json()
        if self.state.json_error:
            session.testsfailed += 1
        return result

    def _summarize(self) -> None:
        from .summary import summarize

        by_suite: dict[str, list[dict]] = defaultdict(list)
        for record in self.state.records:
            by_suite[record["path"]].append(record)
        s = self.state.settings
        for path in sorted(by_suite):
            suite = self.state.suite_at(path)
            self.state.summaries.append(
                summarize(suite, by_suite[path], cli=s.cli_thresholds, ini=s.ini_thresholds,
                          display_path=_display_path(self.config, path))
            )

    def _build_report(self) -> None:
        """The report dict (also without --sqleval-json): the deploy gate adds run metadata, overall, baseline, gates."""

        from .deploygate_plugin import extend_report
        from .report.json_report import build_report

        records = sorted(self.state.records, key=lambda r: (r["path"], r.get("index", 0)))
        run = {"plugin_version": _version(), "pytest_version": pytest.__version__}
        report = json_primitive(build_report(self.state.summaries, records, run=run))
        self.state.report = extend_report(self.config, self.state, report)

    def _write_json(self) -> None:
        from .report.json_report import write_report

        path = self.state.settings.json_path
        if path is None:
            return
        report = self.state.report
        try:
            self.state.json_written = str(write_report(path, report))
        except (OSError, ValueError) as exc:
            self.state.json_error = f"cannot write the JSON report to {path}: {exc}"
            self.config.stash[JSON_FAILED_KEY] = True

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config) -> None:
        if self.state.settings.check_gold:
            from .report.terminal import write_gold_check

            write_gold_check(terminalreporter, sorted(self.state.records, key=lambda r: (r["path"], r.get("index", 0))))
            return
        if not self.state.summaries:
            return
        by_path: dict[str, list[dict]] = defaultdict(list)
        for record in sorted(self.state.records, key=lambda r: (r["path"], r.get("index", 0))):
            by_path[_display_path(config, record["path"])].append(record)
        from .report.terminal import write_summary

        verbose = config.option.verbose > 0 or self.state.settings.diff
        write_summary(terminalreporter, self.state.summaries, by_path, verbose=verbose, json_path=self.state.json_written)
        if self.state.json_error:
            terminalreporter.write_line(f"sqleval: {self.state.json_error}", red=True, bold=True)


def _display_path(config: pytest.Config, path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(config.rootpath).resolve()))
    except ValueError:
        return path


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("pytest-sqleval")
    except Exception:  # noqa: BLE001
        return "unknown"


def json_primitive(value: Any) -> Any:
    """``json.loads(json.dumps(value, default=str))`` without the text: what the JSON report holds, as lists, dicts
    with text keys, text, numbers, booleans and None. Parts that already are such values are kept, not copied (a
    100,000-case run holds its records once, not twice; nested dicts are shared with the records)."""
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if kind is dict:
        if all(type(k) is str for k in value):
            converted = {k: json_primitive(v) for k, v in value.items()}
            if all(converted[k] is v for k, v in value.items()):
                return value
            return converted
        return {_json_key(k): json_primitive(v) for k, v in value.items()}
    if kind is list:
        converted = [json_primitive(v) for v in value]
        return value if all(c is v for c, v in zip(converted, value)) else converted
    if isinstance(value, (list, tuple)):
        return [json_primitive(v) for v in value]
    if isinstance(value, dict):
        return {_json_key(k): json_primitive(v) for k, v in value.items()}
    import json

    return json.loads(json.dumps(value, default=str))  # int/float/str subclasses, and str() of anything else


def _json_key(key: Any) -> str:
    import json

    if isinstance(key, str):
        return str(key)
    return json.loads(json.dumps({key: 0}, default=str)).popitem()[0] if key is not None else "null"
