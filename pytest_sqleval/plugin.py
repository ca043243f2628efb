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

from .settings import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    Settings,
    SettingsError,
    positive_float,
    positive_int,
    resolve_settings,
    threshold_assignment,
)
from .suite import DatabaseSpec

if TYPE_CHECKING:  # pragma: no cover - the heavy modules load only when sqleval is enabled
    from .collect import CaseItem
    from .evaluate import Evaluator
    from .execution.engines import EngineFactory
    from .predictions import Prediction
    from .suite import Suite
    from .summary import SuiteSummary

STATE_KEY = pytest.StashKey["SqlevalState"]()

#: Feature plugins registered beside this one (each keeps its own options, fixtures and hooks).
#: Keep each module light at import time: heavy imports go inside functions (an inactive run must stay fast).
pytest_plugins: list[str] = [
]


# --------------------------------------------------------------------------- options
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
    group.addoption("--sqleval-max-rows", metavar="N", type=positive_int, default=None,
                    help=f"row cap per query (default {DEFAULT_MAX_ROWS}; overrides a suite's `max_rows:`).")
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
    parser.addini("sqleval_thresholds", type="linelist", help="METRIC=VALUE lines; suites' own thresholds win.")
    parser.addini("sqleval_json", help="default for --sqleval-json.")
    parser.addini("sqleval_diff", type="bool", default=False, help="default for --sqleval-diff.")
    parser.addini("sqleval_database_url", help="default for --sqleval-database-url.")
    parser.addini("sqleval_gold_size", help="default for --sqleval-gold-size.")


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

    def register_suite(self, suite: Suite) -> None:
        self.suites[str(suite.path)] = suite

    def suite_at(self, path: str) -> Suite:
        from .loader import load_suite

        if path not in self.suites:
            self.suites[path] = load_suite(path)
        return self.suites[path]

    def case_engines(self, case, first_engine) -> list:
        """The engines of all the case's databases: ``first_engine`` (the ``sqleval_engine`` fixture) and the rest."""
        if first_engine is None:
            return []
        return [first_engine, *(self.engines.engine(spec) for spec in case.databases[1:])]

    def database_label(self, case) -> str | None:
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


def sqleval_state(config: pytest.Config) -> SqlevalState:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        raise pytest.UsageError("pytest-sqleval is not active: run pytest with --sqleval")
    return state


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


# --------------------------------------------------------------------------- configure
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqleval(suite, case): a case collected from a pytest-sqleval suite")
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

    predictions = None
    if settings.predictions is not None:
        try:
            predictions = load_predictions(settings.predictions)
        except SuiteError as exc:
            raise pytest.UsageError(exc.render()) from None
    worker = config.workerinput["workerid"] if _is_worker(config) else "main"
    state = SqlevalState(
        settings=settings,
        engines=EngineFactory(build_dir=_build_dir(worker), worker=worker, url_override=settings.database_url),
        evaluator=Evaluator(timeout=settings.timeout or DEFAULT_TIMEOUT, max_rows=settings.max_rows or DEFAULT_MAX_ROWS),
        predictions=predictions,
    )
    config.stash[STATE_KEY] = state
    config.pluginmanager.register(SqlevalSession(config, state), "sqleval-session")


def _build_dir(worker: str) -> Path:
    """Where this process builds setup-script databases: a private temporary directory, removed at the end."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix=f"sqleval-{worker}-", dir=os.environ.get("SQLEVAL_BUILD_DIR")))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Under ``--dist load``/``loadgroup``, keep each interaction's turns together and in order."""
    if config.stash.get(STATE_KEY, None) is None or config.getvalue("dist") not in ("load", "loadgroup"):
        return None
    from .xdist_scheduling import InteractionScheduling

    return InteractionScheduling(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
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
        parts.append(f"databases built on {DatabaseSpec(s.database_url).display}")
    return ["sqleval: " + ", ".join(parts)]


# --------------------------------------------------------------------------- status of a miss
def sqleval_record(report: pytest.TestReport) -> dict[str, Any] | None:
    for name, value in getattr(report, "user_properties", ()) or ():
        if name == "sqleval":
            return value
    return None


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
    if getattr(item, "case", None) is not None and report.failed and sqleval_record(report) is None:
        report.user_properties.append(("sqleval", _error_record(item, call, report)))
        if call.excinfo is not None and report.when != "call" and _is_suite_problem(call.excinfo.value):
            report.longrepr = f"{item.suite.path}:{item.case.line}: case {item.case.id}: {call.excinfo.value}"
    return report


def _is_suite_problem(error: BaseException) -> bool:
    """A broken gold or database: shown as a plain message, never a traceback."""
    from .errors import DatabaseError, GoldError, SuiteError

    return isinstance(error, (DatabaseError, GoldError, SuiteError))


def _error_record(item: CaseItem, call: pytest.CallInfo, report: pytest.TestReport) -> dict[str, Any]:
    """A case that could not be scored: its gold failed or its database could not be opened."""
    from .errors import DatabaseError, GoldError
    from .evaluate import Prepared, base_record

    error = call.excinfo.value if call.excinfo else None
    kind = "gold" if isinstance(error, GoldError) else "database" if isinstance(error, DatabaseError) else "internal"
    prepared = Prepared(gold=(), schema=None, dialect="", difficulty=item.case.difficulty, difficulty_source="suite")
    state = item.config.stash.get(STATE_KEY, None)
    database = state.database_label(item.case) if state is not None else None
    record = base_record(item.case, item.suite, item.prediction, prepared, database=database)
    record.update({
        "valid": None, "execution_match": None, "soft_f1": None, "exact_match": None, "passed_rule": False,
        "outcome": "error" if report.when != "call" or kind != "internal" else "failed",
        "error": {"kind": kind, "message": str(error) if error else report.longreprtext},
    })
    return record


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
    if isinstance(database, DatabaseSpec):
        return database
    text = os.fspath(database)
    scripts = tuple(Path(s).resolve() for s in setup or ())
    if "://" in text:
        return DatabaseSpec(url=os.path.expandvars(text), setup=scripts, source=text)
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
def sqleval_engine(sqleval_case, sqleval_engine_factory):
    """The engine of the current case's (first) database; override it in conftest.py to evaluate elsewhere."""
    if sqleval_case.database is None:
        return None
    return sqleval_engine_factory.engine(sqleval_case.database)


@pytest.fixture
def sqleval_gold(request: pytest.FixtureRequest, sqleval_case, sqleval_engine):
    """The gold side of the current case (results, schema, difficulty); a broken gold is an error here."""
    state = sqleval_state(request.config)
    suite = request.node.suite
    return state.evaluator.prepare(
        sqleval_case, suite, state.case_engines(sqleval_case, sqleval_engine), timeout=state.timeout_for(suite), max_rows=state.max_rows_for(suite)
    )


# --------------------------------------------------------------------------- the session plugin
class SqlevalSession:
    """Hooks active only when sqleval is enabled: collection, aggregation, gate, summary, report."""

    def __init__(self, config: pytest.Config, state: SqlevalState) -> None:
        self.config = config
        self.state = state

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
        if not unknown:
            return
        shown = ", ".join(unknown[:20]) + (f" (and {len(unknown) - 20} more)" if len(unknown) > 20 else "")
        path = self.state.settings.predictions
        message = (f"{path}: {len(unknown)} prediction id(s) match no collected case: {shown}\n"
                   "  fix: use the cases' `id:` values (a turn is <interaction>/<n>; <suite>::<id> picks one suite)")
        report = pytest.CollectReport(nodeid=str(path), outcome="failed", longrepr=message, result=[])
        session.ihook.pytest_collectreport(report=report)
        config.hook.pytest_deselected(items=list(items))  # nothing runs against mismatched predictions
        items.clear()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if _is_worker(self.config):
            return
        record = sqleval_record(report)
        if record is not None and (report.when == "call" or report.failed):
            self.state.records.append(record)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session):
        result = yield
        if _is_worker(self.config) or self.config.option.collectonly or self.state.settings.check_gold:
            return result
        self._summarize()
        if any(not s.passed for s in self.state.summaries):
            session.testsfailed += 1
        self._write_json()
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

    def _write_json(self) -> None:
        from .report.json_report import build_report, write_report

        path = self.state.settings.json_path
        if path is None:
            return
        records = sorted(self.state.records, key=lambda r: (r["path"], r.get("index", 0)))
        run = {"plugin_version": _version(), "pytest_version": pytest.__version__}
        report = build_report(self.state.summaries, records, run=run)
        self.state.json_written = str(write_report(path, report))

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
