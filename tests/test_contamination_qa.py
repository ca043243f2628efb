"""QA: one prediction must not change another prediction's verdict through the query process (sandbox_worker.py).

Sequences of hostile predictions (memory hogs under 128 MiB to 2 GiB caps, nesting at the recursion limit, huge IN
lists, queries killed at the timeout, NUL bytes and invalid UTF-8, values at the row and memory caps, prefetched
queries never collected) followed by innocent ones on SQLite, DuckDB and PostgreSQL gave the innocent ones their
fresh-process verdicts. Two ways a process could be left unsound still served the next query, or gave a wrong kind:

- a DuckDB internal error (``INTERNAL Error``: a failed assertion) invalidates the database in the process; every
  later query on the file would fail with ``database has been invalidated``. The process now retires.
- a result whose value nests deeper than Python's recursion limit (a PostgreSQL ``jsonb`` of 5,000 levels, read by
  psycopg's JSON loader) was ``rejected`` with "nested too deeply to check", though the guard had checked the query
  and it ran; it is now ``runtime`` naming the result, and the process still retires.
"""

from __future__ import annotations

import pytest

from pytest_sqleval.errors import QueryError
from pytest_sqleval.execution import runner, sandbox_worker
from pytest_sqleval.execution.sandbox import QuerySandbox

DEEP_JSON = "SELECT (repeat('[', 5000) || repeat(']', 5000))::jsonb AS v"


@pytest.fixture
def sandbox():
    box = QuerySandbox()
    yield box
    box.close()


def _run(box: QuerySandbox, target: tuple, sql: str, *, untrusted: bool = True) -> tuple[str, object]:
    try:
        return "ok", box.run(target, sql, timeout=20, max_rows=1000, untrusted=untrusted, dialect="postgres",
                             max_memory=512 * 2**20).rows
    except QueryError as exc:
        return exc.kind, exc.message


def test_a_duckdb_internal_error_retires_the_query_process(monkeypatch, duckdb_available):
    """DuckDB invalidates its database after an internal error: the next query on it must get a fresh process."""
    import duckdb

    from pytest_sqleval.execution.backends.duckdb import DuckDBBackend

    def internal_error(*_args, **_kwargs):
        raise DuckDBBackend().classify(duckdb.InternalException("INTERNAL Error: Attempted to access index 3 within "
                                                                "vector of size 3"))

    monkeypatch.setattr(runner, "execute_inline", internal_error)
    worker = sandbox_worker.Worker()
    monkeypatch.setattr(worker, "engine", lambda *_args: object())
    answer = worker.handle({"target": ("duckdb", "duckdb:///x.duckdb"), "sql": "SELECT 1", "timeout": 5,
                            "max_rows": 10, "untrusted": False, "dialect": "duckdb"})
    assert answer[:2] == ("error", "runtime")
    assert worker.unsound is not None and "DuckDB" in worker.unsound


def test_duckdb_errors_that_leave_the_database_usable_do_not_retire(monkeypatch, duckdb_available):
    import duckdb

    from pytest_sqleval.execution.backends.duckdb import DuckDBBackend

    for exc in (duckdb.InvalidInputException("Invalid Input Error: x"), duckdb.BinderException("Binder Error: y")):
        error = DuckDBBackend().classify(exc)
        assert getattr(error, "unsound", None) is None


@pytest.mark.parametrize("untrusted", [True, False], ids=["prediction", "gold"])
def test_a_result_nested_too_deeply_to_read_is_a_runtime_error_and_the_next_query_is_served(sandbox, postgres_url,
                                                                                           untrusted):
    from sqlalchemy import create_engine

    from pytest_sqleval.execution.backends import target_of

    engine = create_engine(postgres_url)
    try:
        target = target_of(engine)
        assert _run(sandbox, target, "SELECT 1") == ("ok", [(1,)])
        before = sandbox.pid
        kind, message = _run(sandbox, target, DEEP_JSON, untrusted=untrusted)
        assert kind == "runtime", message  # was: rejected, "the query is nested too deeply to check"
        assert "result" in message and "nested too deeply to be read" in message
        assert sandbox.last_retirement == "it reached Python's recursion limit"
        assert sandbox.pid != before
        assert _run(sandbox, target, "SELECT '[1, [2]]'::jsonb AS v") == ("ok", [([1, [2]],)])
    finally:
        engine.dispose()


def test_a_query_text_nested_too_deeply_is_still_rejected_by_the_guard(sandbox, postgres_url):
    from sqlalchemy import create_engine

    from pytest_sqleval.execution.backends import target_of

    engine = create_engine(postgres_url)
    try:
        kind, message = _run(sandbox, target_of(engine), "SELECT " + "(" * 3000 + "1" + ")" * 3000)
        assert (kind, message) == ("rejected", "the query is nested too deeply to check")
    finally:
        engine.dispose()


@pytest.mark.parametrize("sql", ["SELECT chr(0)", "SELECT chr(1114112)"])
def test_a_bad_chr_argument_on_postgresql_is_a_runtime_error_not_memory(sandbox, postgres_url, sql):
    """PostgreSQL reports ``chr(0)`` with SQLSTATE 54000 (program limit exceeded): it was kind ``memory`` with "the
    query went over a fixed limit of PostgreSQL (one value holds at most 1 GB ...)"."""
    from sqlalchemy import create_engine

    from pytest_sqleval.execution.backends import target_of

    engine = create_engine(postgres_url)
    try:
        target = target_of(engine)
        kind, message = _run(sandbox, target, sql)
        assert kind == "runtime", message
        assert "1 GB" not in message
        assert _run(sandbox, target, "SELECT repeat('x', 1073741824)")[0] == "memory"  # a real fixed limit stays
    finally:
        engine.dispose()
