"""The core session state of an active run: what the plugin keeps in ``config.stash[STATE_KEY]``.

Feature plugins read it through :func:`sqleval_state` (records, summaries, settings, engines, evaluator);
the per-suite limits are resolved here, by :func:`pytest_sqleval.defaults.effective_limit`, for every caller.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from .defaults import DEFAULT_MAX_MEMORY, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, effective_limit

if TYPE_CHECKING:  # pragma: no cover - the heavy modules load only when sqleval is enabled
    from .evaluate import Evaluator
    from .execution.engines import EngineFactory
    from .predictions import Prediction
    from .settings import Settings
    from .suite import Suite
    from .summary import SuiteSummary

STATE_KEY = pytest.StashKey["SqlevalState"]()
JSON_FAILED_KEY = pytest.StashKey[bool]()
#: The plugins whose ``pytest_sqleval_execution_profiles`` ran at configure (the rest: conftest.py files found later).
PROFILES_AT_CONFIGURE_KEY = pytest.StashKey[frozenset]()


@dataclass
class SqlevalState:
    """Everything the plugin keeps for one session, stored in ``config.stash``."""

    settings: Settings
    engines: EngineFactory
    predictions: dict[str, Prediction] | None = None
    #: the predictions file's bytes as read once (an xdist controller hands them to its workers)
    predictions_bytes: bytes | None = field(default=None, repr=False)
    suites: dict[str, Suite] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    summaries: list[SuiteSummary] = field(default_factory=list)
    json_written: str | None = None
    json_error: str | None = None
    #: the sqleval-report/1 dict, built after the loop (with overall, baseline, gates)
    report: dict[str, Any] | None = None
    #: pytest's exit status when the terminal summary is written (the gate lines say where it comes from)
    exit_status: int | None = None
    #: made on first use (:attr:`evaluator`): the xdist controller scores nothing and never imports the scoring code
    _evaluator: Evaluator | None = field(default=None, repr=False)

    @property
    def evaluator(self) -> Evaluator:
        """The session's scorer (its caches last the whole run), created when a case is first scored."""
        if self._evaluator is None:
            from .evaluate import Evaluator

            self._evaluator = Evaluator(timeout=timeout_of(self.settings), max_rows=max_rows_of(self.settings),
                                        describe=self.engines.describe, engine_label=self.engine_label)
        return self._evaluator

    def register_suite(self, suite: Suite) -> None:
        self.suites[str(suite.path)] = suite

    def suite_at(self, path: str) -> Suite:
        from .suite_cache import load_suite_shared

        if path not in self.suites:  # the xdist controller: its workers' reading, from the run's build folder
            self.suites[path] = load_suite_shared(path, self.engines.build_dir, as_collected=True)
        return self.suites[path]

    def case_engines(self, case, first_engine, factory: Any = None) -> list:
        """The engines of all the case's databases: ``first_engine`` (the ``sqleval_engine`` fixture) and the rest,
        from ``factory`` (the ``sqleval_engine_factory`` fixture, which a conftest.py may override: it is then
        called for every database of the case, as for the first) or, without one, the session's."""
        if first_engine is None:
            return []
        if factory is None or getattr(factory, "factory", None) is self.engines:  # the plugin's own fixture
            rest = [self.engines.engine(spec) for spec in case.databases[1:]]
        else:
            from .execution.engines import factory_engine

            rest = [fixture_engine(factory_engine(factory, spec)) for spec in case.databases[1:]]
        return [fixture_engine(first_engine), *rest]

    def engine_label(self, spec, engine) -> str | None:
        """An engine other than the one opened for ``spec`` (an overridden ``sqleval_engine``), named for messages
        (password hidden); None when it is the one opened for ``spec``."""
        if engine is None or self.engines.opened(spec) is engine:
            return None
        label = self.engines.label_of(engine)
        if label is None and getattr(engine, "url", None) is None:
            return None
        return _from_fixture(label, engine)

    def database_label(self, case, engine=None) -> str | None:
        """The database a case really ran on, for reports: the suite's, or the overriding fixture's engine (one
        the user opened, or one of ``sqleval_engine_factory``'s for another database than the case's)."""
        engine = None if engine is None else fixture_engine(engine)
        if engine is not None and (case.database is None or self.engines.opened(case.database) is not engine):
            label = self.engines.label_of(engine) if case.database is not None else None
            if label is not None or not self.engines.owns(engine):
                return _from_fixture(label, engine)
        if case.database is not None:
            return self.engines.describe(case.database)
        return case.schema.db_id if case.schema else None

    def timeout_for(self, suite: Suite) -> float:
        return timeout_of(self.settings, suite)

    def max_rows_for(self, suite: Suite) -> int:
        return max_rows_of(self.settings, suite)

    def max_memory_for(self, suite: Suite) -> int:
        """Memory cap per query in bytes: command line, then the suite's `max_memory:`, then ini, then 2 GiB."""
        return max_memory_of(self.settings, suite)

    def allowed_functions_for(self, suite: Suite) -> frozenset[str]:
        """The user's own functions a prediction may call: the suite's `allow_functions:` and the ini option."""
        names = (*getattr(suite, "allow_functions", ()), *self.settings.allow_functions)
        return frozenset(name.lower() for name in names)


def timeout_of(settings: Settings, suite: Suite | None = None) -> float:
    """Timeout per query of ``suite`` (None: the run's, before any suite's own ``timeout:``)."""
    return effective_limit(settings.timeout, suite.timeout if suite else None, DEFAULT_TIMEOUT,
                           from_cli=settings.timeout_from_cli)


def max_rows_of(settings: Settings, suite: Suite | None = None) -> int:
    """Row cap per query of ``suite`` (None: the run's)."""
    return effective_limit(settings.max_rows, suite.max_rows if suite else None, DEFAULT_MAX_ROWS,
                           from_cli=settings.max_rows_from_cli)


def max_memory_of(settings: Settings, suite: Suite | None = None) -> int:
    """Memory cap per query in bytes of ``suite`` (None: the run's)."""
    return effective_limit(settings.max_memory, suite.max_memory if suite else None, DEFAULT_MAX_MEMORY,
                           from_cli=settings.max_memory_from_cli)


def sqleval_state(config: pytest.Config) -> SqlevalState:
    """The active run's state; a usage error naming the fix when sqleval is not enabled."""
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        raise pytest.UsageError("pytest-sqleval is not active: run pytest with --sqleval")
    return state


def is_worker(config: pytest.Config) -> bool:
    """An xdist worker (its controller collects the records and writes the reports)."""
    return hasattr(config, "workerinput")


def _from_fixture(label: str | None, engine: Any) -> str:
    """An engine the ``sqleval_engine`` fixture gave, for messages and reports: its factory label, else its URL
    with the password hidden."""
    from .secrets import mask_url

    return f"{label or mask_url(str(engine.url))} (from the sqleval_engine fixture)"


def engine_factory_of(request: pytest.FixtureRequest) -> Any:
    """The ``sqleval_engine_factory`` fixture of a suite item whose fixtures include it (None otherwise, as when a
    conftest.py's ``sqleval_engine`` needs no factory)."""
    case = getattr(request.node, "case", None)
    if case is None or len(case.databases) < 2 or "sqleval_engine_factory" not in request.fixturenames:
        return None  # one database: the first engine is the sqleval_engine fixture's
    return request.getfixturevalue("sqleval_engine_factory")


def fixture_engine(engine: Any) -> Any:
    """What the ``sqleval_engine`` fixture gave, as an engine: a SQLAlchemy ``Connection`` stands for its engine
    (as in the assertion helpers); anything that is no engine (a URL, a path) is a :class:`DatabaseError` of the
    case naming the fix, not an internal error later."""
    from sqlalchemy.engine import Connection, Engine

    if isinstance(engine, Connection):
        return engine.engine
    if isinstance(engine, Engine) or (hasattr(engine, "dialect") and hasattr(engine, "url")):
        return engine
    from .errors import DatabaseError

    shown = repr(engine) if len(repr(engine)) <= 80 else repr(engine)[:77] + "..."
    raise DatabaseError(f"the sqleval_engine fixture returned {shown}, a {type(engine).__name__}, not a SQLAlchemy "
                        "engine: return sqleval_engine_factory(url_or_path) (read-only, built from setup scripts) "
                        "or sqlalchemy.create_engine(url)")
