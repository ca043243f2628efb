"""The plugin's fixtures: ``sqleval_engine_factory`` (also in ordinary tests), and per suite item
``sqleval_case``, ``sqleval_engine`` (override it in ``conftest.py`` to evaluate elsewhere) and ``sqleval_gold``.

Always available, active or not; heavy imports happen inside the fixtures.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .state import STATE_KEY, engine_factory_of, sqleval_state

if TYPE_CHECKING:  # pragma: no cover
    from .execution.engines import EngineFactory
    from .suite import DatabaseSpec


@pytest.fixture(scope="session")
def sqleval_engine_factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Call with a path, a SQLAlchemy URL or a DatabaseSpec (and optional ``setup=`` scripts) to get a read-only
    engine."""
    from .execution.engines import EngineFactory

    state = request.config.stash.get(STATE_KEY, None)
    if state is not None:
        factory = state.engines
        owned = False
    else:
        factory = EngineFactory(build_dir=tmp_path_factory.mktemp("sqleval-databases"),
                                shared_build_dir=_shared_plain_build_dir(request.config, tmp_path_factory))
        owned = True
    yield EngineFactoryFixture(factory, request.config)
    if owned:
        factory.close()


def _shared_plain_build_dir(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """Without ``--sqleval``, xdist workers still build each SQLite/DuckDB setup database once per run: in a
    folder of the run's base temporary directory (the parent of each worker's own), under the build lock."""
    if not hasattr(config, "workerinput"):
        return None
    shared = tmp_path_factory.getbasetemp().parent / "sqleval-databases"
    shared.mkdir(exist_ok=True)
    return shared


#: The test item being run (set up, called, torn down) in this process: relative paths given to
#: ``sqleval_engine_factory`` are read from its file's folder, as the ``sqleval_database`` marker reads its own.
_RUNNING_ITEM = pytest.StashKey["pytest.Item | None"]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    item.config.stash[_RUNNING_ITEM] = item
    try:
        return (yield)
    finally:
        item.config.stash[_RUNNING_ITEM] = None


def _requesting_test_folder(config: pytest.Config) -> tuple[Path, str]:
    """The folder relative paths are read from (the running test's file's, else the working directory), and how a
    message names it."""
    item = config.stash.get(_RUNNING_ITEM, None)
    path = getattr(item, "path", None)
    if item is not None and path is not None:
        return Path(path).parent, f"the folder of the test file {path}"
    return Path.cwd(), f"the working directory {Path.cwd()}"


class EngineFactoryFixture:
    """``sqleval_engine_factory("shop.sqlite")``, ``sqleval_engine_factory("sqlite://", setup=["schema.sql"])``.

    A relative path (the database or a setup script) is read from the folder of the test file that calls it (for a
    fixture: the test being set up), as the ``sqleval_database`` marker reads its paths; a file URL
    (``sqlite:///shop.sqlite``) is left to the driver, which reads it from the working directory."""

    def __init__(self, factory: EngineFactory, config: pytest.Config | None = None) -> None:
        self.factory = factory
        self.config = config

    def __call__(self, database: str | os.PathLike | DatabaseSpec, *, setup: list[str | os.PathLike] | None = None):
        base, where = _requesting_test_folder(self.config) if self.config is not None else (Path.cwd(), "")
        return self.factory.engine(_spec(database, setup, base, where, check=True))

    def engine(self, spec: DatabaseSpec):
        return self.factory.engine(spec)


def _spec(database: str | os.PathLike | DatabaseSpec, setup, base: Path | None = None, where: str = "", *,
          check: bool = False) -> DatabaseSpec:
    """The spec of a factory call: relative paths read from ``base`` (the working directory when None); with
    ``check``, a database file or setup script that is not there is a ``DatabaseError`` naming the path tried."""
    from .suite import DatabaseSpec, file_url

    if isinstance(database, DatabaseSpec):
        return database
    text = os.fspath(database)
    from .errors import DatabaseError
    from .secrets import expand_env

    def missing(name: str) -> Exception:
        return pytest.UsageError(f"the database {'URL ' if '://' in text else ''}{text!r} uses ${{{name}}}, which is not set; "
                                 f"set it or write ${{{name}:-default}}")

    base = base if base is not None else Path.cwd()
    where = where or f"the working directory {base}"

    def absolute(written: str) -> Path:
        return (base / os.path.expanduser(written)).resolve()  # an absolute path stays as it is

    # as a suite's `database:` and `setup:`: a variable may hold the whole URL, or part of a path
    scripts = tuple(absolute(expand_env(os.fspath(s), lambda name: os.environ.get(name), missing)) for s in setup or ())
    for written, script in zip(setup or (), scripts):
        if check and not script.is_file():
            raise DatabaseError(f"sqleval_engine_factory: setup script not found: {script} (from "
                                f"{os.fspath(written)!r}; a relative path is read from {where})",
                                fix="give the script's path relative to the test file, or an absolute path")
    expanded = expand_env(text, lambda name: os.environ.get(name), missing)  # values URL-encoded, never shown
    if "://" in expanded:
        return DatabaseSpec(url=expanded, setup=scripts, source=text)
    path = absolute(expanded)
    if check and not path.is_file():
        raise DatabaseError(f"sqleval_engine_factory: database file not found: {path} (from {text!r}; a relative "
                            f"path is read from {where})",
                            fix="give the database file's path relative to the test file, an absolute path, or a "
                                "SQLAlchemy URL")
    scheme = "duckdb" if path.suffix.lower() in (".duckdb", ".ddb") else "sqlite"
    return DatabaseSpec(url=file_url(scheme, path), setup=scripts, source=text)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """Before a test that is no case of a suite (and at the end), close the connections to DuckDB files, here and in
    the query process: DuckDB lets one process write a file or several read it, so the read-only handles the suites'
    cases keep open would stop that test from opening the file read-write. Cases in a row keep theirs. A test that is
    no case releases them before its own teardown too: its fixtures' teardowns may write the file."""
    if getattr(item, "case", None) is None:
        _release_duckdb_handles()
    try:
        return (yield)
    finally:
        if getattr(nextitem, "case", None) is None:
            _release_duckdb_handles()


def _release_duckdb_handles() -> None:
    import sys

    # nothing to release if never imported; the helpers given an engine of the test's own use the query process
    # without ever importing the engine factories
    engines = sys.modules.get("pytest_sqleval.execution.engines")
    if engines is not None:
        engines.release_file_handles("duckdb")
    elif sys.modules.get("pytest_sqleval.execution.sandbox") is not None:
        sys.modules["pytest_sqleval.execution.sandbox"].release_query_process_files("duckdb")


@pytest.fixture
def sqleval_case(request: pytest.FixtureRequest):
    """The case (or interaction turn) of the current suite item."""
    case = getattr(request.node, "case", None)
    if case is None:
        which = "sqleval_gold (and the sqleval_case it reads)" if "sqleval_gold" in request.fixturenames \
            else "sqleval_case"
        pytest.fail(f"{request.node.nodeid}: {which} exists only in suite items (the cases of *.sqleval.yaml files "
                    "run with --sqleval); in a plain test, use sqleval_engine or sqleval_query with "
                    "@pytest.mark.sqleval_database(\"shop.sqlite\") and the assert_execution_match / "
                    "assert_exact_match / assert_soft_f1 helpers", pytrace=False)
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
    from .execution.engines import factory_engine

    return factory_engine(sqleval_engine_factory, case.database)


@pytest.fixture
def sqleval_gold(request: pytest.FixtureRequest, sqleval_case, sqleval_engine):
    """The gold side of the current case (results, schema, difficulty); a broken gold is an error here."""
    state = sqleval_state(request.config)
    suite = request.node.suite
    engines = state.case_engines(sqleval_case, sqleval_engine, engine_factory_of(request))
    prepared = state.evaluator.prepare(
        sqleval_case, suite, engines, timeout=state.timeout_for(suite),
        max_rows=state.max_rows_for(suite), max_memory=state.max_memory_for(suite),
    )
    if state.settings.check_gold and getattr(sqleval_case, "expected", None) is not None:
        from dataclasses import replace  # `expected:` rows are no gold query: nothing for the gold checks to run

        prepared = replace(prepared, gold=())
    return prepared
