"""A query process left unsound by one prediction never serves the next (execution/sandbox_worker.py).

Found by CI: after DuckDB and SQLite queries ran out of memory in the long-lived query process, it kept ~100 MiB of
its 256 MiB cap; an innocent PostgreSQL prediction then failed in sqlglot's parser (``SystemError``, then
``TypeError`` for every later query) until the process crashed. Now a process retires after a memory error, after
Python's recursion limit, after an unexpected exception, and when it keeps over half its cap; each check below runs
the same hostile sequence and asserts the innocent queries' verdicts and that a fresh process answered them.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pytest_sqleval.errors import QueryError
from pytest_sqleval.execution import sandbox_worker
from pytest_sqleval.execution.sandbox import QuerySandbox

MiB = 2**20
CAP = 256 * MiB

SQLITE_HOGS = [
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<1000) SELECT zeroblob(9000000) FROM r",
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<3000) SELECT randomblob(5000000) FROM r",
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<100000) "
    "SELECT length(group_concat(hex(zeroblob(5000)))) FROM r",
]
DUCKDB_HOGS = [
    "SELECT repeat('x', 5000000) FROM range(100000)",
    "SELECT list(repeat('y', 1000)) FROM range(10000000)",
    "SELECT length(string_agg(repeat('z', 1000), ',')) FROM range(3000000)",
]
#: AND-ed conditions: a large parse that needs memory the hogs' leftovers took (5,000 crashed the process; SQLite
#: compiles at most 1,000 levels of expression)
AND_900 = "SELECT count(*) FROM tickets WHERE " + " AND ".join(f"id > {-i}" for i in range(900))
PARENS_50 = "SELECT " + "(" * 50 + "1" + ")" * 50


@pytest.fixture(scope="module")
def sqlite_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("retire") / "shop.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE tickets (id INTEGER, shop TEXT); INSERT INTO tickets VALUES (1, 'A'), (2, 'B');")
    conn.close()
    return path


@pytest.fixture
def sandbox():
    box = QuerySandbox()
    yield box
    box.close()


def _run(box: QuerySandbox, target: tuple, sql: str, dialect: str, timeout: float = 20) -> tuple[str, object]:
    try:
        return "ok", box.run(target, sql, timeout=timeout, max_rows=1000, untrusted=True, dialect=dialect,
                             max_memory=CAP).rows
    except QueryError as exc:
        return exc.kind, exc.message


def test_a_memory_error_retires_the_process_and_the_next_query_gets_a_fresh_one(sandbox, sqlite_db):
    target = ("sqlite", str(sqlite_db))
    assert _run(sandbox, target, "SELECT count(*) FROM tickets", "sqlite") == ("ok", [(2,)])
    before = sandbox.pid
    kind, message = _run(sandbox, target, SQLITE_HOGS[0], "sqlite")
    assert kind == "memory", message
    assert sandbox.last_retirement == "a query ran out of memory"
    assert sandbox.pid != before  # replaced at once, before the next query
    assert _run(sandbox, target, "SELECT count(*) FROM tickets", "sqlite") == ("ok", [(2,)])


def test_innocent_queries_after_many_memory_errors_get_their_own_verdicts(sandbox, sqlite_db, tmp_path,
                                                                         duckdb_available):
    """DuckDB's memory hogs leave its allocator holding memory in the process: the SQLite queries after them must
    not run short of it (before: the 900-condition query was a ``memory`` miss)."""
    target = ("sqlite", str(sqlite_db))
    duck = _duckdb_target(tmp_path)
    for _ in range(3):
        for sql in DUCKDB_HOGS:
            assert _run(sandbox, duck, sql, "duckdb")[0] in ("memory", "timeout")
        for sql in SQLITE_HOGS:
            assert _run(sandbox, target, sql, "sqlite")[0] in ("memory", "timeout")
    assert _run(sandbox, target, AND_900, "sqlite") == ("ok", [(2,)])
    assert _run(sandbox, target, PARENS_50, "sqlite")[0] in ("ok", "rejected")
    assert _run(sandbox, target, "SELECT readfile('/etc/hostname')", "sqlite")[0] == "rejected"
    assert _run(sandbox, target, "SELECT id FROM tickets ORDER BY id", "sqlite") == ("ok", [(1,), (2,)])


def _duckdb_target(folder: Path) -> tuple:
    import duckdb

    from pytest_sqleval.execution.backends import target_of
    from pytest_sqleval.execution.backends.duckdb import duckdb_engine

    path = folder / "shop.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE tickets (id INTEGER, shop VARCHAR); INSERT INTO tickets VALUES (1, 'A'), (2, 'B')")
    conn.close()
    target = target_of(duckdb_engine(f"duckdb:///{path}"))
    assert target is not None
    return target


def test_after_duckdb_memory_errors_a_postgresql_prediction_is_read_as_usual(sandbox, sqlite_db, tmp_path,
                                                                                duckdb_available, postgres_url):
    """The CI sequence: DuckDB's memory hogs, then PostgreSQL predictions in the same query process."""
    from sqlalchemy import create_engine

    from pytest_sqleval.execution.backends import target_of

    duck = _duckdb_target(tmp_path)
    pg_engine = create_engine(postgres_url)
    try:
        pg = target_of(pg_engine)
        assert pg is not None
        assert _run(sandbox, pg, "SELECT 1", "postgres") == ("ok", [(1,)])
        for _ in range(2):
            for sql in DUCKDB_HOGS + SQLITE_HOGS:
                target = duck if sql in DUCKDB_HOGS else ("sqlite", str(sqlite_db))
                assert _run(sandbox, target, sql, "duckdb" if target is duck else "sqlite")[0] in ("memory", "timeout")
        assert _run(sandbox, pg, PARENS_50, "postgres")[0] in ("ok", "rejected")
        assert _run(sandbox, pg, "SELECT count(*) FROM (VALUES " + ", ".join(f"({i})" for i in range(3000))
                    + ") AS v(x) WHERE " + " AND ".join(f"x >= {-i}" for i in range(3000)), "postgres") == ("ok", [(3000,)])
        kind, message = _run(sandbox, pg, "SELECT pg_read_file('/etc/hostname')", "postgres")
        assert kind == "rejected" and "pg_read_file" in message
        assert _run(sandbox, pg, "SELECT 2 + 2", "postgres") == ("ok", [(4,)])
    finally:
        pg_engine.dispose()


def test_python_s_recursion_limit_retires_the_process(sandbox, sqlite_db):
    target = ("sqlite", str(sqlite_db))
    assert _run(sandbox, target, "SELECT 1", "sqlite") == ("ok", [(1,)])
    before = sandbox.pid
    deep = "SELECT " + "(" * 3000 + "1" + ")" * 3000
    kind, message = _run(sandbox, target, deep, "sqlite")
    assert kind in ("rejected", "syntax"), message
    if sandbox.last_retirement is not None:  # the guard met the recursion limit (not a refusal before parsing)
        assert "recursion" in sandbox.last_retirement
        assert sandbox.pid != before
    assert _run(sandbox, target, "SELECT 5", "sqlite") == ("ok", [(5,)])


def test_a_process_that_keeps_over_half_its_cap_retires(monkeypatch):
    """The high-water rule on its own: the data size after the answer, against the size at start plus half the cap."""
    monkeypatch.setattr(sandbox_worker, "_data_size", lambda: 100 * MiB + CAP // 2 + 1)
    reason = sandbox_worker._kept_memory(100 * MiB, CAP)
    assert reason == "it kept 128 MiB of its 256 MiB cap after the query"
    monkeypatch.setattr(sandbox_worker, "_data_size", lambda: 100 * MiB + CAP // 2)
    assert sandbox_worker._kept_memory(100 * MiB, CAP) is None
    assert sandbox_worker._kept_memory(100 * MiB, None) is None  # no cap: nothing to keep within


def test_a_sound_process_serves_query_after_query(sandbox, sqlite_db):
    """Retirement is for unsound processes only: ordinary answers, misses included, keep the same process."""
    target = ("sqlite", str(sqlite_db))
    assert _run(sandbox, target, "SELECT 1", "sqlite") == ("ok", [(1,)])
    pid = sandbox.pid
    assert _run(sandbox, target, "SELECT nope FROM tickets", "sqlite")[0] == "syntax"
    assert _run(sandbox, target, "DELETE FROM tickets", "sqlite")[0] == "rejected"
    assert _run(sandbox, target, "SELECT 1/0", "sqlite") == ("ok", [(None,)])
    assert sandbox.pid == pid and sandbox.last_retirement is None
