"""Limits enforced from outside the query: the killable query process (execution/sandbox.py).

Real SQLite and DuckDB files; each hostile query is one the engine's own interrupt cannot stop
(a single long function call) or one that would take gigabytes.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from pytest_sqleval.errors import QueryError
from pytest_sqleval.execution.backends import target_of
from pytest_sqleval.execution.backends.duckdb import duckdb_engine
from pytest_sqleval.execution.backends.sqlite import sqlite_engine
from pytest_sqleval.execution.runner import run_query
from pytest_sqleval.execution.sandbox import KILL_GRACE, QuerySandbox

MiB = 2**20

#: One SQLite VM step that runs for a minute: the progress handler never fires inside it.
SQLITE_LONG_STEPS = [
    "SELECT replace(hex(zeroblob(1000000)),'0','a') LIKE '%' || replace(hex(zeroblob(5000)),'0','a') || 'b'",
    "SELECT replace(hex(zeroblob(1000000)),'0','a') GLOB '*' || replace(hex(zeroblob(5000)),'0','a') || 'b'",
    "SELECT instr(replace(hex(zeroblob(2000000)),'0','a') || 'b', replace(hex(zeroblob(20000)),'0','a') || 'c')",
    "SELECT count(*) FROM tickets WHERE replace(hex(zeroblob(1000000)),'0','a') LIKE '%' || replace(hex(zeroblob(5000)),'0','a') || 'x'",
]

SQLITE_MEMORY_HOGS = [
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<1000) SELECT zeroblob(9000000) FROM r",
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<3000) SELECT randomblob(5000000) FROM r",
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<900) SELECT hex(zeroblob(4000000)) FROM r",
]

DUCKDB_MEMORY_HOGS = [
    "SELECT repeat('x', 5000000) FROM range(100000)",
    "SELECT list(repeat('y', 1000)) FROM range(10000000)",
    "SELECT string_agg(repeat('z', 1000), ',') FROM range(3000000)",
]


@pytest.fixture(scope="module")
def sqlite_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sandbox") / "shop.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE tickets (id INTEGER, shop TEXT); INSERT INTO tickets VALUES (1, 'A'), (2, 'B');")
    conn.close()
    return path


@pytest.fixture(scope="module")
def duckdb_db(tmp_path_factory, duckdb_available) -> Path:
    import duckdb

    path = tmp_path_factory.mktemp("sandbox") / "shop.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE tickets (id INTEGER, shop TEXT); INSERT INTO tickets VALUES (1, 'A'), (2, 'B');")
    conn.close()
    return path


def _timed(engine, sql, **limits):
    started = time.monotonic()
    try:
        result = run_query(engine, sql, **limits)
        outcome = ("ok", result)
    except QueryError as exc:
        outcome = (exc.kind, exc.message)
    return outcome, time.monotonic() - started


@pytest.mark.parametrize("sql", SQLITE_LONG_STEPS)
def test_one_long_sqlite_step_is_stopped_by_the_wall_clock(sqlite_db, sql):
    engine = sqlite_engine(sqlite_db)
    run_query(engine, "SELECT 1")  # the query process is started when the plugin is configured
    (kind, message), elapsed = _timed(engine, sql, timeout=1, max_rows=100)
    assert kind == "timeout", message
    assert "killed" in message
    assert elapsed <= 1 + 1.0, elapsed


def test_the_next_query_runs_after_a_kill(sqlite_db):
    engine = sqlite_engine(sqlite_db)
    (kind, _), _ = _timed(engine, SQLITE_LONG_STEPS[0], timeout=0.5, max_rows=100)
    assert kind == "timeout"
    (status, result), elapsed = _timed(engine, "SELECT shop FROM tickets ORDER BY id", timeout=5, max_rows=100)
    assert status == "ok" and result.rows == [("A",), ("B",)]


@pytest.mark.parametrize("sql", SQLITE_MEMORY_HOGS)
def test_sqlite_memory_is_capped(sqlite_db, sql):
    engine = sqlite_engine(sqlite_db)
    (kind, message), elapsed = _timed(engine, sql, timeout=20, max_rows=100_000, max_memory=256 * MiB)
    assert kind == "memory", message
    assert "--sqleval-max-memory" in message or "memory" in message


@pytest.mark.duckdb
@pytest.mark.parametrize("sql", DUCKDB_MEMORY_HOGS)
def test_duckdb_memory_is_capped(duckdb_db, sql):
    engine = duckdb_engine(f"duckdb:///{duckdb_db}")
    (kind, message), elapsed = _timed(engine, sql, timeout=20, max_rows=100_000, max_memory=256 * MiB)
    assert kind in ("memory", "timeout"), message
    assert elapsed <= 21


def test_peak_memory_of_the_query_process_stays_under_the_cap(sqlite_db):
    """The query process's peak resident size stays within the cap plus its start-up size (the documented margin)."""
    sandbox = QuerySandbox()
    try:
        target = ("sqlite", str(sqlite_db))
        for sql in SQLITE_MEMORY_HOGS:
            with pytest.raises(QueryError) as info:
                sandbox.run(target, sql, timeout=20, max_rows=100_000, untrusted=True, dialect="sqlite",
                            max_memory=256 * MiB)
            assert info.value.kind == "memory"
            # each query process that ran out of memory retired after answering: its peak came with the answer
            assert sandbox.last_retirement == "a query ran out of memory"
            assert sandbox.retired_peak > 0
        peak_kib = max(sandbox.retired_peak // 1024, _peak_rss_kib(sandbox.pid))
        assert peak_kib * 1024 <= 256 * MiB + 200 * MiB, peak_kib
    finally:
        sandbox.close()


def _peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_a_crash_during_a_query_is_that_query_s_error_and_the_next_runs(sqlite_db):
    import os
    import signal
    import threading

    sandbox = QuerySandbox()
    try:
        target = ("sqlite", str(sqlite_db))
        assert sandbox.run(target, "SELECT 1", timeout=5, max_rows=10, untrusted=True, dialect="sqlite").rows == [(1,)]
        victim = sandbox.pid
        threading.Timer(0.3, os.kill, (victim, signal.SIGSEGV)).start()
        with pytest.raises(QueryError) as info:
            sandbox.run(target, SQLITE_LONG_STEPS[0], timeout=10, max_rows=10, untrusted=True, dialect="sqlite")
        assert info.value.kind == "runtime" and "crashed" in info.value.message
        assert sandbox.run(target, "SELECT 3", timeout=5, max_rows=10, untrusted=True, dialect="sqlite").rows == [(3,)]
        assert sandbox.pid != victim
    finally:
        sandbox.close()


def test_a_dead_idle_query_process_is_replaced_before_the_next_query(sqlite_db):
    sandbox = QuerySandbox()
    try:
        target = ("sqlite", str(sqlite_db))
        sandbox.run(target, "SELECT 1", timeout=5, max_rows=10, untrusted=True, dialect="sqlite")
        os.kill(sandbox.pid, signal.SIGKILL)
        time.sleep(0.2)
        assert sandbox.run(target, "SELECT 2", timeout=5, max_rows=10, untrusted=True, dialect="sqlite").rows == [(2,)]
    finally:
        sandbox.close()


def test_guard_parsing_counts_inside_the_time_budget(sqlite_db):
    """A prediction whose checking alone takes long is stopped within the timeout too."""
    engine = sqlite_engine(sqlite_db)
    huge = "SELECT " + " + ".join(f"CASE WHEN id = {i} THEN {i} ELSE 0 END" for i in range(6000)) + " FROM tickets"
    (kind, message), elapsed = _timed(engine, huge, timeout=0.3, max_rows=10)
    assert elapsed <= 0.3 + 1.0
    assert kind in ("timeout", "rejected", "ok"), message


def test_results_and_errors_come_back_unchanged(sqlite_db):
    engine = sqlite_engine(sqlite_db)
    result = run_query(engine, "SELECT id, shop, 1.5, NULL, x'00ff' FROM tickets ORDER BY id", timeout=5, max_rows=10)
    assert result.columns == ("id", "shop", "1.5", "NULL", "x'00ff'")
    assert result.rows == [(1, "A", 1.5, None, b"\x00\xff"), (2, "B", 1.5, None, b"\x00\xff")]
    with pytest.raises(QueryError) as info:
        run_query(engine, "SELECT * FROM no_such_table", timeout=5, max_rows=10)
    assert info.value.kind == "syntax"
    with pytest.raises(QueryError) as info:
        run_query(engine, "DELETE FROM tickets", timeout=5, max_rows=10)
    assert info.value.kind == "rejected"
    with pytest.raises(QueryError) as info:
        run_query(engine, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n) SELECT i FROM n",
                  timeout=5, max_rows=50)
    assert info.value.kind == "row_limit"


def test_registered_engines_run_in_the_query_process(sqlite_db):
    assert target_of(sqlite_engine(sqlite_db)) == ("sqlite", str(sqlite_db.resolve()))


def test_run_query_needs_no_limits(sqlite_db):
    assert run_query(sqlite_engine(sqlite_db), "SELECT count(*) FROM tickets").rows == [(2,)]


def test_kill_grace_is_within_the_promised_second():
    assert 0 < KILL_GRACE < 1


def test_the_query_process_caps_its_data_memory(sqlite_db):
    sandbox = QuerySandbox()
    try:
        sandbox.run(("sqlite", str(sqlite_db)), "SELECT 1", timeout=5, max_rows=10, untrusted=True, dialect="sqlite",
                    max_memory=300 * MiB)
        with open(f"/proc/{sandbox.pid}/limits", encoding="ascii") as f:
            line = next(line for line in f if line.startswith("Max data size"))
        soft = line.split()[3]
        assert soft != "unlimited"
        assert 300 * MiB < int(soft) < 300 * MiB + 1024 * MiB
    finally:
        sandbox.close()


# --------------------------------------------------------------------------- submit: the query runs while this process works
def _sqlite_run(sandbox: QuerySandbox, target, sql: str, **limits):
    limits = {"timeout": 5, "max_rows": 10, "untrusted": True, "dialect": "sqlite", **limits}
    return sandbox.run(target, sql, **limits)


def test_a_submitted_query_is_answered_by_the_run_that_asks_for_it(sqlite_db):
    sandbox = QuerySandbox()
    target = ("sqlite", str(sqlite_db))
    try:
        sandbox.submit(target, "SELECT count(*) FROM tickets", timeout=5, max_rows=10, untrusted=True, dialect="sqlite")
        assert _sqlite_run(sandbox, target, "SELECT count(*) FROM tickets").rows == [(2,)]
        # a submitted query nobody asks for is read and dropped: the next run gets its own answer
        sandbox.submit(target, "SELECT 1", timeout=5, max_rows=10, untrusted=True, dialect="sqlite")
        assert _sqlite_run(sandbox, target, "SELECT shop FROM tickets ORDER BY id").rows == [("A",), ("B",)]
        # the same text with other limits is another request
        sandbox.submit(target, "SELECT id FROM tickets", timeout=5, max_rows=10, untrusted=True, dialect="sqlite")
        with pytest.raises(QueryError) as raised:
            _sqlite_run(sandbox, target, "SELECT id FROM tickets", max_rows=1)
        assert raised.value.kind == "row_limit"
        # errors come back to the run too (the guard runs in the query process)
        sandbox.submit(target, "DELETE FROM tickets", timeout=5, max_rows=10, untrusted=True, dialect="sqlite")
        with pytest.raises(QueryError) as raised:
            _sqlite_run(sandbox, target, "DELETE FROM tickets")
        assert raised.value.kind == "rejected"
        assert _sqlite_run(sandbox, target, "SELECT count(*) FROM tickets").rows == [(2,)]
    finally:
        sandbox.close()


def test_a_submitted_query_that_never_yields_is_killed_on_time(sqlite_db):
    sandbox = QuerySandbox()
    target = ("sqlite", str(sqlite_db))
    try:
        _sqlite_run(sandbox, target, "SELECT 1")
        victim = sandbox.pid
        started = time.monotonic()
        sandbox.submit(target, SQLITE_LONG_STEPS[0], timeout=1, max_rows=10, untrusted=True, dialect="sqlite")
        with pytest.raises(QueryError) as raised:
            _sqlite_run(sandbox, target, SQLITE_LONG_STEPS[0], timeout=1)
        assert raised.value.kind == "timeout"
        assert time.monotonic() - started <= 1 + KILL_GRACE + 1
        assert sandbox.pid != victim
        # one left unread is killed on time by the next query too, which then runs
        sandbox.submit(target, SQLITE_LONG_STEPS[1], timeout=1, max_rows=10, untrusted=True, dialect="sqlite")
        started = time.monotonic()
        assert _sqlite_run(sandbox, target, "SELECT 7").rows == [(7,)]
        assert time.monotonic() - started <= 1 + KILL_GRACE + 1
    finally:
        sandbox.close()


def test_run_query_prefetch_returns_nothing_and_the_next_call_the_result(sqlite_db):
    engine = sqlite_engine(sqlite_db)
    assert run_query(engine, "SELECT shop FROM tickets WHERE id = 2", prefetch=True) is None
    assert run_query(engine, "SELECT shop FROM tickets WHERE id = 2").rows == [("B",)]


def test_backend_drivers_load_when_a_query_first_needs_them(sqlite_db, duckdb_db):
    """The zygote imports DuckDB's driver only for the first DuckDB query; SQLite queries never pay for it."""
    sandbox = QuerySandbox()
    try:
        _sqlite_run(sandbox, ("sqlite", str(sqlite_db)), "SELECT 1")
        assert "duckdb" not in _loaded_modules(sandbox.pid)
        sqlite_only = sandbox.pid
        duck = target_of(duckdb_engine(f"duckdb:///{duckdb_db}"))
        rows = sandbox.run(duck, "SELECT count(*) FROM tickets", timeout=5, max_rows=10, untrusted=True,
                           dialect="duckdb").rows
        assert rows == [(2,)]
        assert sandbox.pid != sqlite_only and "duckdb" in _loaded_modules(sandbox.pid)
        with_duckdb = sandbox.pid
        assert _sqlite_run(sandbox, ("sqlite", str(sqlite_db)), "SELECT 2").rows == [(2,)]
        assert sandbox.pid == with_duckdb  # no new process: it has every driver loaded so far
    finally:
        sandbox.close()


def _loaded_modules(pid: int) -> str:
    """The shared libraries mapped into a process (DuckDB's driver is a native module)."""
    with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as f:
        return f.read()


def _wide_result_sql(rows: int, columns: int) -> str:
    values = ", ".join(f"i + {k} AS c{k}" for k in range(columns))
    return f"WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<{rows}) SELECT {values} FROM r"


def test_a_result_too_many_values_to_score_within_the_memory_cap_is_a_memory_miss(sqlite_db):
    """Many small values cost the pytest process's comparison far more than the query process held (about 140 bytes
    each): a result over cap / 256 values is refused in the query process, naming its shape and the cap."""
    engine = sqlite_engine(sqlite_db)
    cap = 64 * MiB  # room for 262,144 values
    (kind, message), _ = _timed(engine, _wide_result_sql(1000, 300), timeout=20, max_rows=100_000, max_memory=cap)
    assert kind == "memory"
    assert "1,000 rows x 300 columns (300,000 values)" in message and "64 MiB" in message
    assert "--sqleval-max-memory" in message
    (status, result), _ = _timed(engine, _wide_result_sql(1000, 250), timeout=20, max_rows=100_000, max_memory=cap)
    assert status == "ok" and len(result.rows) == 1000 and len(result.columns) == 250
    (status, result), _ = _timed(engine, _wide_result_sql(1000, 300), timeout=20, max_rows=100_000,
                                 max_memory=128 * MiB)
    assert status == "ok" and len(result.columns) == 300


@pytest.mark.duckdb
def test_elements_inside_nested_values_count_four_values_each(duckdb_db):
    """One list of 4,000,000 numbers took 20 s to score outside the timeout: each element of a list, struct or map
    (nested ones too; a map or struct counts its keys and its values) counts as 4 values against the same
    cap / 256 budget (2,097,152 values under 512 MiB)."""
    engine = duckdb_engine(f"duckdb:///{duckdb_db}")
    cap = 512 * MiB
    (kind, message), _ = _timed(engine, "SELECT range(530000) AS r", timeout=20, max_rows=100, max_memory=cap)
    assert kind == "memory" and "530,000 elements counted inside nested values" in message, message
    (status, result), _ = _timed(engine, "SELECT range(500000) AS r", timeout=20, max_rows=100, max_memory=cap)
    assert status == "ok" and len(result.rows[0][0]) == 500000
    nested = "SELECT list_transform(range(100), lambda x: {'k': range(5300)}) AS r"  # 100 structs, each a list of 5300
    (kind, message), _ = _timed(engine, nested, timeout=20, max_rows=100, max_memory=cap)
    assert kind == "memory" and "530,300 elements" in message, message  # 100 structs + 100 keys and values + 530,000


def test_a_prediction_too_large_to_score_misses_and_the_run_goes_on(pytester, sqlite_db):
    import json
    import shutil

    shutil.copy(sqlite_db, pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", suite=f"""
        database: shop.sqlite
        max_memory: 32MiB
        cases:
          - id: wide
            question: q
            gold: SELECT id FROM tickets ORDER BY id
            predicted: "{_wide_result_sql(2000, 100)}"
          - id: fine
            question: q
            gold: SELECT id FROM tickets ORDER BY id
            predicted: SELECT id FROM tickets ORDER BY id
        """)
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json=r.json")
    assert result.ret == 0  # a miss is not a failure: the run went on and scored the next case
    cases = {c["id"]: c for c in json.loads((pytester.path / "r.json").read_text())["cases"]}
    assert cases["fine"]["outcome"] == "passed"
    wide = cases["wide"]
    assert wide["outcome"] == "missed" and wide["error"]["kind"] == "memory", wide
    assert "2,000 rows x 100 columns" in wide["error"]["message"]


def test_the_scoring_budget_counts_the_rows_width_when_a_backend_names_no_columns():
    """A user's backend may return `QueryResult(columns=(), rows=...)`: the budget reads the rows' width."""
    from pytest_sqleval.execution.sandbox_worker import _check_scoring_memory
    from pytest_sqleval.results import QueryResult

    rows = [tuple(range(40))] * 1000  # 40,000 values: over a 8 MiB cap's 32,768
    with pytest.raises(QueryError) as info:
        _check_scoring_memory(QueryResult(columns=(), rows=rows), 8 * MiB)
    assert info.value.kind == "memory" and "1,000 rows x 40 columns (40,000 values)" in info.value.message
    _check_scoring_memory(QueryResult(columns=(), rows=rows), 16 * MiB)  # 65,536 values: within
