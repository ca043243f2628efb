"""Hostile predictions on SQLite, DuckDB and PostgreSQL: each scores 0 with the right kind,
finishes within the timeout, and leaves every table of every database unchanged."""

from __future__ import annotations

import hashlib
import time

import pytest
from sqlalchemy import inspect, text

from conftest import SHOP_SQL
from hostile import BY_ENGINE, ENGINE_SIDE_WRITES
from pytest_sqleval.errors import QueryError
from pytest_sqleval.execution.engines import EngineFactory
from pytest_sqleval.execution.runner import run_query
from pytest_sqleval.suite import DatabaseSpec

TIMEOUT = 1.0
SLACK = 4.0  # scheduling noise on a loaded 2-core machine
MAX_ROWS = 1000


@pytest.fixture(scope="module")
def engines(tmp_path_factory, request):
    """One read-only engine per available engine kind, each built from the same setup script."""
    root = tmp_path_factory.mktemp("hostile")
    script = root / "shop.sql"
    script.write_text(SHOP_SQL)
    factory = EngineFactory(build_dir=root / "build", worker="hostile")
    built = {"sqlite": factory.engine(DatabaseSpec("sqlite://", (script,)))}
    try:
        request.getfixturevalue("duckdb_available")
        built["duckdb"] = factory.engine(DatabaseSpec("duckdb://", (script,)))
    except pytest.skip.Exception:
        pass
    try:
        url = request.getfixturevalue("postgres_url")
        built["postgresql"] = factory.engine(DatabaseSpec(url, (script,)))
    except pytest.skip.Exception:
        pass
    yield built
    factory.close()


def fingerprint(engine) -> dict[str, str]:
    """A checksum of every table's sorted rows, and the list of tables."""
    prints = {}
    names = sorted(inspect(engine).get_table_names())
    with engine.connect() as conn:
        for name in names:
            rows = conn.execute(text(f'SELECT * FROM "{name}"')).fetchall()
            prints[name] = hashlib.sha256(repr(sorted(map(tuple, rows), key=repr)).encode()).hexdigest()
    return prints


def corpus():
    for engine_name, statements in BY_ENGINE.items():
        for name, sql, kind in statements:
            yield pytest.param(engine_name, sql, kind, id=f"{engine_name}-{name}")


def test_corpus_is_large_enough():
    assert sum(len(v) for v in BY_ENGINE.values()) >= 30


@pytest.mark.parametrize("engine_name, sql, kind", list(corpus()))
def test_hostile_prediction_is_refused(engines, engine_name, sql, kind):
    if engine_name not in engines:
        pytest.skip(f"{engine_name} is not available here")
    engine = engines[engine_name]
    before = fingerprint(engine)
    started = time.monotonic()
    with pytest.raises(QueryError) as info:
        run_query(engine, sql, timeout=TIMEOUT, max_rows=MAX_ROWS, untrusted=True)
    elapsed = time.monotonic() - started
    assert info.value.kind == kind, info.value.message
    assert elapsed < TIMEOUT + SLACK
    assert fingerprint(engine) == before


@pytest.mark.parametrize(
    "engine_name, sql",
    [pytest.param(e, s, id=f"{e}-{i}") for e, stmts in ENGINE_SIDE_WRITES.items() for i, s in enumerate(stmts)],
)
def test_engine_refuses_writes_even_past_the_guard(engines, engine_name, sql):
    """Defence in depth: sent without the guard (untrusted=False), the engine itself refuses."""
    if engine_name not in engines:
        pytest.skip(f"{engine_name} is not available here")
    engine = engines[engine_name]
    before = fingerprint(engine)
    with pytest.raises(QueryError) as info:
        run_query(engine, sql, timeout=TIMEOUT, max_rows=MAX_ROWS, untrusted=False)
    assert info.value.kind in ("rejected", "syntax", "runtime"), info.value.message
    assert fingerprint(engine) == before


def test_sqlite_file_is_byte_identical_after_the_corpus(tmp_path):
    from conftest import make_sqlite
    from hostile import COMMON, SQLITE
    from pytest_sqleval.execution.backends.sqlite import sqlite_engine

    path = make_sqlite(tmp_path / "shop.sqlite")
    before = path.read_bytes()
    engine = sqlite_engine(path)
    for _name, sql, _kind in COMMON + SQLITE:
        with pytest.raises(QueryError):
            run_query(engine, sql, timeout=TIMEOUT, max_rows=MAX_ROWS, untrusted=True)
    for sql in ENGINE_SIDE_WRITES["sqlite"]:
        with pytest.raises(QueryError):
            run_query(engine, sql, timeout=TIMEOUT, max_rows=MAX_ROWS, untrusted=False)
    engine.dispose()
    assert path.read_bytes() == before


@pytest.mark.parametrize("engine_name", ["sqlite", "duckdb", "postgresql"])
def test_a_good_query_still_runs_after_the_corpus(engines, engine_name):
    if engine_name not in engines:
        pytest.skip(f"{engine_name} is not available here")
    result = run_query(engines[engine_name], "SELECT count(*) FROM tickets", timeout=TIMEOUT, max_rows=MAX_ROWS)
    assert [tuple(r) for r in result.rows] == [(6,)]
