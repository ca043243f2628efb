"""Engines, QA round: DuckDB files shared between suites and the user's own tests, and a user's DuckDB engine's
settings in the query process."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import require_module

duckdb = require_module("duckdb", "the duckdb extra is not installed: pip install 'pytest-sqleval[duckdb]'")
require_module("duckdb_engine", "the duckdb extra is not installed: pip install 'pytest-sqleval[duckdb]'")


def _make_duckdb(path) -> None:
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE t (a INTEGER)")
    conn.execute("INSERT INTO t VALUES (7), (2)")
    conn.close()


def _run(pytester, *args):
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    return result, (json.loads(report.read_text()) if report.exists() else None)


@pytest.mark.parametrize("order", ["suite first", "interleaved"])
def test_a_plain_test_writes_a_duckdb_file_a_suite_has_read(pytester, order):
    """A suite's cases leave the file open read-only (here and in the query process); DuckDB then lets no one open
    it read-write, so a plain test writing it failed ("different configuration" / "could not set lock")."""
    _make_duckdb(pytester.path / "shop.duckdb")
    pytester.makefile(".sqleval.yaml", a_shop=textwrap.dedent("""
        database: shop.duckdb
        cases:
          - {id: one, gold: SELECT a FROM t, predicted: SELECT a FROM t}
          - {id: two, gold: SELECT count(*) FROM t, predicted: SELECT count(*) FROM t}
        """))
    pytester.makepyfile(test_b_write=textwrap.dedent("""
        import duckdb
        import pytest

        def test_write_with_duckdb():
            conn = duckdb.connect("shop.duckdb")
            conn.execute("INSERT INTO t VALUES (3)")
            conn.close()

        @pytest.mark.sqleval_database("shop.duckdb")
        def test_query_then_nothing_held(sqleval_query):
            assert sqleval_query("SELECT count(*) FROM t").rows == [(3,)]

        def test_write_again_after_sqleval_query():
            conn = duckdb.connect("shop.duckdb")
            conn.execute("INSERT INTO t VALUES (4)")
            conn.close()
        """))
    files = ["a_shop.sqleval.yaml", "test_b_write.py"]
    if order == "interleaved":  # the suite again after the writes: it reopens the file and sees them
        pytester.makefile(".sqleval.yaml", c_shop=textwrap.dedent("""
            database: shop.duckdb
            cases:
              - {id: three, predicted: SELECT count(*) FROM t, expected: {rows: [[4]]}}
            """))
        files.append("c_shop.sqleval.yaml")
    result, report = _run(pytester, *files)
    result.assert_outcomes(passed=5 if order == "suite first" else 6)
    assert all(case["execution_match"] for case in report["cases"])


def test_a_user_duckdb_engine_keeps_its_config_in_the_query_process(pytester):
    """`connect_args={"config": {...}}` of the user's engine: the query process reopened the file from the URL alone,
    so `integer_division` / `default_order` were lost and its results differed from the user's own engine's."""
    _make_duckdb(pytester.path / "shop.duckdb")
    pytester.makepyfile(test_config=textwrap.dedent("""
        import sqlalchemy as sa
        from pytest_sqleval import run_query

        def test_same_results_as_my_engine():
            engine = sa.create_engine("duckdb:///shop.duckdb", connect_args={
                "read_only": True, "config": {"integer_division": True, "default_order": "desc"}})
            sql = "SELECT a / 2 AS h FROM t ORDER BY a"
            with engine.connect() as conn:
                mine = [tuple(r) for r in conn.exec_driver_sql(sql).fetchall()]
            assert mine == [(3,), (1,)]
            assert [tuple(r) for r in run_query(engine, sql).rows] == mine
        """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("query", ["access_mode=read_write", "enable_external_access=true", "lock_configuration=0",
                                   "allowed_directories=/etc", "threads=4", "memory_limit=64GB"])
def test_a_duckdb_url_cannot_lift_the_engines_own_hardening(tmp_path, query):
    """duckdb-engine hands a URL's query string to DuckDB's configuration over our `connect_args`: the read-only
    connection became writable (`?access_mode=read_write`), or could read files again."""
    from pytest_sqleval.errors import DatabaseError
    from pytest_sqleval.execution.backends.duckdb import duckdb_engine

    path = tmp_path / "shop.duckdb"
    _make_duckdb(path)
    with pytest.raises(DatabaseError, match=rf"sets {query.split('=')[0]}=.*which the plugin sets itself.*remove it"):
        duckdb_engine(f"duckdb:///{path}?{query}")
    engine = duckdb_engine(f"duckdb:///{path}?access_mode=READ_ONLY&enable_external_access=off&default_order=desc")
    try:  # values the plugin sets anyway, and the user's other settings, are fine
        with engine.connect() as conn:
            settings = dict(conn.exec_driver_sql("SELECT name, value FROM duckdb_settings()").fetchall())
    finally:
        engine.dispose()
    assert (settings["access_mode"], settings["enable_external_access"], settings["default_order"]) == (
        "read_only", "false", "DESC")


def test_a_suite_on_a_writable_duckdb_url_is_refused_and_a_users_writable_engine_is_read_only(pytester):
    _make_duckdb(pytester.path / "shop.duckdb")
    pytester.makefile(".sqleval.yaml", rw=textwrap.dedent("""
        database: "duckdb:///shop.duckdb?access_mode=read_write"
        cases:
          - {id: one, gold: SELECT count(*) FROM t, predicted: SELECT count(*) FROM t}
        """))
    pytester.makepyfile(test_users=textwrap.dedent("""
        import pytest
        import sqlalchemy as sa
        from pytest_sqleval import run_query
        from pytest_sqleval.errors import QueryError

        def test_my_engine_with_threads():
            engine = sa.create_engine("duckdb:///shop.duckdb?threads=4&access_mode=read_write")
            assert run_query(engine, "SELECT count(*) FROM t").rows == [(2,)]
            with pytest.raises(QueryError):
                run_query(engine, "INSERT INTO t VALUES (1)")
        """))
    result, _ = _run(pytester)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*sets access_mode=read_write, which the plugin sets itself*"])
    conn = duckdb.connect(str(pytester.path / "shop.duckdb"), read_only=True)
    assert conn.execute("SELECT count(*) FROM t").fetchall() == [(2,)]
    conn.close()


def test_two_suites_open_one_duckdb_file_with_different_settings(pytester):
    """The pytest process kept its probe connection of the first suite's engine: the second engine of the same file
    (another setting in its URL) failed with DuckDB's "different configuration than existing connections"."""
    _make_duckdb(pytester.path / "shop.duckdb")
    pytester.makefile(".sqleval.yaml", a=textwrap.dedent("""
        database: shop.duckdb
        cases:
          - {id: one, gold: SELECT a FROM t ORDER BY a, predicted: SELECT a FROM t ORDER BY a}
        """), b=textwrap.dedent("""
        database: "duckdb:///shop.duckdb?default_order=desc"
        cases:
          - {id: two, predicted: SELECT a FROM t ORDER BY a, expected: {rows: [[7], [2]], ordered: true}}
        """))
    result, report = _run(pytester)
    result.assert_outcomes(passed=2)


def test_a_sqlite_file_named_duckdb_says_so(pytester):
    import sqlite3

    conn = sqlite3.connect(pytester.path / "shop.duckdb")
    conn.execute("CREATE TABLE t (a)")
    conn.commit()
    conn.close()
    pytester.makefile(".sqleval.yaml", s="database: shop.duckdb\ncases: [{id: a, gold: SELECT 1, predicted: SELECT 1}]\n")
    result, _ = _run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the file is a SQLite database: name it .sqlite or .db, or write sqlite:///PATH*"])


def test_sqleval_engine_factory_overridden_in_conftest_with_a_function(pytester):
    """The README's factory is called `sqleval_engine_factory("shop.sqlite")`; a conftest.py's own factory of that
    shape errored every case ("internal error while scoring (AttributeError: 'function' object has no attribute
    'engine')") and every marked plain test with a raw traceback."""
    import sqlite3

    for name, rows in (("shop.sqlite", 1), ("other.sqlite", 2)):
        conn = sqlite3.connect(pytester.path / name)
        conn.execute("CREATE TABLE t (a)")
        conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(rows)])
        conn.commit()
        conn.close()
    pytester.makeconftest("""
        import pytest
        import sqlalchemy as sa

        SEEN = []

        @pytest.fixture(scope="session")
        def sqleval_engine_factory():
            def factory(database, setup=None):
                SEEN.append((database, setup))
                assert database.startswith("sqlite:///") and database.endswith("shop.sqlite")
                return sa.create_engine("sqlite:///other.sqlite")
            return factory
        """)
    pytester.makefile(".sqleval.yaml", s="database: shop.sqlite\n"
                                         "cases: [{id: one, predicted: SELECT count(*) FROM t, expected: {rows: [[2]]}}]\n")
    pytester.makepyfile(test_plain="""
        import pytest

        @pytest.mark.sqleval_database("shop.sqlite")
        def test_marked(sqleval_query):
            assert sqleval_query("SELECT count(*) FROM t").rows == [(2,)]
        """)
    result, report = _run(pytester)
    result.assert_outcomes(passed=2)
    assert report["cases"][0]["execution_match"] is True


def test_a_users_postgres_engine_to_a_host_that_never_answers_is_an_error_not_a_hang(pytester):
    """The user's engine (no connect timeout of its own) was connected in the pytest process to read its connection
    parameters, and for a suite to read its schema: a host that accepts and never answers hung the run forever."""
    require_module("psycopg", "the postgresql extra is not installed: pip install 'pytest-sqleval[postgresql]'")
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    port = server.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: [accepted.append(server.accept()) for _ in range(16)], daemon=True).start()
    pytester.makeconftest(f"""
        import pytest
        import sqlalchemy as sa

        @pytest.fixture
        def sqleval_engine():
            return sa.create_engine("postgresql+psycopg://u@127.0.0.1:{port}/db")
        """)
    pytester.makefile(".sqleval.yaml", s=f'database: "postgresql+psycopg://u@127.0.0.1:{port}/db"\n'
                                         "cases: [{id: one, gold: SELECT 1, predicted: SELECT 1}]\n")
    pytester.makepyfile(test_plain=f"""
        import pytest
        import sqlalchemy as sa
        from pytest_sqleval import run_query
        from pytest_sqleval.errors import DatabaseError

        def test_run_query():
            with pytest.raises(DatabaseError, match="timed out after .* 127.0.0.1:{port}"):
                run_query(sa.create_engine("postgresql+psycopg://u@127.0.0.1:{port}/db"), "SELECT 1")
        """)
    try:
        result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", timeout=120)
    finally:
        server.close()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"*case one: cannot connect to PostgreSQL at *127.0.0.1:{port}*timed out*"])
