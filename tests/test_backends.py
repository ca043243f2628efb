"""Engine backends: one per engine behind one protocol, the registry, a user's backend through the hook,
and the setup scripts' bulk path (single-row inserts merged) on real DuckDB files."""

from __future__ import annotations

import json
import sqlite3
import textwrap

import pytest

from conftest import SHOP_SQL, make_sqlite
from pytest_sqleval.errors import DatabaseError, QueryError
from pytest_sqleval.execution.backends import (
    BackendRegistry,
    backend_for,
    builtin_backends,
    read_schema,
    target_of,
)
from pytest_sqleval.execution.backends.base import Backend, Dialect, Limits
from pytest_sqleval.execution.backends.insert_merge import merge_single_row_inserts
from pytest_sqleval.execution.backends.sqlite import SQLiteBackend, sqlite_engine
from pytest_sqleval.execution.runner import execute_inline, sqlglot_dialect


# --------------------------------------------------------------------------- the registry
@pytest.mark.parametrize("url, name", [
    ("sqlite:////tmp/shop.sqlite", "sqlite"),
    ("sqlite://", "sqlite"),
    ("duckdb:///tmp/shop.duckdb", "duckdb"),
    ("postgresql+psycopg://u:pw@localhost:5432/shop", "postgresql"),
    ("postgres://u@localhost/shop", "postgresql"),
    ("mysql+pymysql://u@localhost/shop", "generic"),
])
def test_each_url_is_served_by_its_engine_backend(url, name):
    assert builtin_backends().for_url(url).name == name


def test_a_later_registration_is_asked_first_and_may_take_over_a_builtin_scheme():
    class Mine(SQLiteBackend):
        name = "mine"

    registry = builtin_backends()
    registry.register(Mine)  # a class is instantiated
    assert registry.for_url("sqlite:///x.sqlite").name == "mine"
    assert registry.for_url("duckdb:///x.duckdb").name == "duckdb"
    assert [b.name for b in registry][:2] == ["mine", "sqlite"]


def test_something_that_is_not_a_backend_is_refused_with_the_fix():
    with pytest.raises(TypeError, match="subclass pytest_sqleval.execution.backends.base.Backend"):
        BackendRegistry().register(object())


def test_a_malformed_url_is_a_database_error_without_its_password():
    with pytest.raises(DatabaseError, match="bad database URL") as info:
        builtin_backends().for_url("postgresql://u:s3cret@host:notaport/db")
    assert "s3cret" not in str(info.value)


def test_the_sqlglot_dialect_comes_from_the_backends():
    assert sqlglot_dialect("postgresql") == "postgres"
    assert sqlglot_dialect("mssql") == "tsql"  # the generic table
    assert sqlglot_dialect("somethingelse") == "somethingelse"
    registry = BackendRegistry()

    class Odd(Backend):
        name = "odd"
        dialect = Dialect("odd", "mysql")

    registry.register(Odd())
    assert registry.sqlglot_dialect("odd") == "mysql"


def test_an_engine_is_run_by_its_backend_and_keeps_its_query_process_target(shop_db):
    engine = sqlite_engine(shop_db)
    assert backend_for(engine).name == "sqlite"
    assert target_of(engine) == ("sqlite", str(shop_db.resolve()))


def test_a_backend_without_a_target_runs_in_this_process(shop_db):
    """The base protocol's default: no target (a user's backend the query process cannot import)."""
    assert Backend().target(sqlite_engine(shop_db)) is None


# --------------------------------------------------------------------------- the protocol on real engines
def test_sqlite_backend_runs_classifies_and_caps(shop_db):
    engine = sqlite_engine(shop_db)
    result = execute_inline(engine, "SELECT count(*) FROM tickets", timeout=5, max_rows=10)
    assert result.rows == [(6,)]
    with pytest.raises(QueryError) as info:
        execute_inline(engine, "SELECT nope FROM tickets", timeout=5, max_rows=10)
    assert info.value.kind == "syntax"
    with pytest.raises(QueryError) as info:
        execute_inline(engine, "SELECT * FROM tickets", timeout=5, max_rows=2)
    assert info.value.kind == "row_limit"
    with pytest.raises(QueryError) as info:
        execute_inline(engine, "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT max(i) FROM r",
                       timeout=0.2, max_rows=10, timeout_label=7)
    assert info.value.kind == "timeout" and "after 7 s" in info.value.message


def test_the_generic_run_path_on_a_plain_dbapi_connection(tmp_path):
    """The base Backend.run (any SQLAlchemy URL): rows, the row cap, a driver error as runtime."""
    path = make_sqlite(tmp_path / "plain.sqlite")
    conn = sqlite3.connect(path)
    backend = Backend()
    assert backend.run(conn, "SELECT count(*) FROM shops", Limits(5, 10)).rows == [(3,)]
    with pytest.raises(QueryError) as info:
        backend.run(conn, "SELECT * FROM tickets", Limits(5, 1))
    assert info.value.kind == "row_limit"
    with pytest.raises(QueryError) as info:
        backend.run(conn, "SELECT nope FROM shops", Limits(5, 10))
    assert info.value.kind == "runtime" and "nope" in info.value.message


def test_schemas_are_read_by_the_backend_in_catalogue_order(tmp_path):
    path = make_sqlite(tmp_path / "order.sqlite", "CREATE TABLE zeta (a INT); CREATE TABLE alpha (b INT, c INT);")
    schema = read_schema(sqlite_engine(path))
    assert schema.table_names == ["zeta", "alpha"]  # creation order, as Spider reads sqlite_master
    assert schema.table("alpha").columns == ("b", "c")


@pytest.mark.usefixtures("duckdb_available")
def test_duckdb_schema_and_foreign_keys_from_its_own_catalogue(tmp_path):
    from pytest_sqleval.execution.backends.duckdb import build_duckdb, duckdb_engine

    script = tmp_path / "s.sql"
    script.write_text("CREATE TABLE b (id INT PRIMARY KEY); CREATE TABLE a (x INT, b_id INT REFERENCES b(id));")
    build_duckdb(tmp_path / "s.duckdb", (script,))
    schema = read_schema(duckdb_engine(f"duckdb:///{tmp_path / 's.duckdb'}"))
    assert schema.table_names == ["b", "a"]
    assert [(fk.table, fk.column, fk.ref_table, fk.ref_column) for fk in schema.foreign_keys] == [("a", "b_id", "b", "id")]


def test_the_query_process_opens_targets_through_the_named_backend(shop_db):
    from pytest_sqleval.execution.sandbox_worker import open_target

    engine = open_target(("sqlite", str(shop_db)))
    assert execute_inline(engine, "SELECT count(*) FROM shops", timeout=5, max_rows=5).rows == [(3,)]
    with pytest.raises(ValueError, match="unknown query target 'nosuch'"):
        open_target(("nosuch", "x"))


# --------------------------------------------------------------------------- the bulk path of setup scripts
def test_consecutive_single_row_inserts_into_one_target_are_merged_and_the_rest_kept_verbatim():
    script = textwrap.dedent("""\
        -- header
        CREATE TABLE t (a INT, b TEXT);
        INSERT INTO t VALUES (1, 'x;y');
        insert into t values (2, ')(');  /* between */
        INSERT INTO t (a, b) VALUES (3, 'z');
        INSERT INTO t (a, b) VALUES (4, 'w'), (5, 'v');
        INSERT INTO u VALUES (1);
        INSERT INTO t VALUES (6, 'q') ON CONFLICT DO NOTHING;
        INSERT INTO t VALUES (7, 'r');
        """)
    assert merge_single_row_inserts(script, "duckdb") == textwrap.dedent("""\
        -- header
        CREATE TABLE t (a INT, b TEXT);
        INSERT INTO t VALUES (1, 'x;y'), (2, ')(');  /* between */
        INSERT INTO t (a, b) VALUES (3, 'z'), (4, 'w'), (5, 'v');
        INSERT INTO u VALUES (1);
        INSERT INTO t VALUES (6, 'q') ON CONFLICT DO NOTHING;
        INSERT INTO t VALUES (7, 'r');
        """)


def test_a_script_without_a_run_of_inserts_is_returned_unchanged():
    script = "CREATE TABLE t (a INT);\nINSERT INTO t VALUES (1);\nSELECT 1;\n"
    assert merge_single_row_inserts(script, "duckdb") is script


def test_thousands_of_inserts_become_a_few_statements():
    script = "CREATE TABLE t (a INT);\n" + "".join(f"INSERT INTO t VALUES ({i});\n" for i in range(2500))
    merged = merge_single_row_inserts(script, "duckdb")
    assert merged.count("INSERT") == 3  # 1000 rows per statement
    assert merged.count("(") == 2500 + 1


@pytest.mark.usefixtures("duckdb_available")
def test_a_merged_duckdb_build_holds_the_same_rows_as_the_script_as_written(tmp_path):
    import duckdb

    from pytest_sqleval.execution.backends.duckdb import _run_duckdb_build, build_duckdb

    lines = ["CREATE TABLE t (id INTEGER, name VARCHAR, amount DECIMAL(8, 2), day DATE, n INTEGER);"]
    for i in range(300):
        note = "NULL" if i % 5 == 0 else f"'it''s; ({i})'"
        lines.append(f"INSERT INTO t VALUES ({i}, {note}, {i * 1.005}, DATE '2024-01-01' + {i}, '{i}');")
    script = tmp_path / "data.sql"
    script.write_text("\n".join(lines))
    build_duckdb(tmp_path / "merged.duckdb", (script,))
    _run_duckdb_build(tmp_path / "written.duckdb", (script,), one_transaction=True, merged=None)

    def rows(name: str) -> list:
        conn = duckdb.connect(str(tmp_path / name), read_only=True)
        try:
            return conn.execute("SELECT * FROM t").fetchall()
        finally:
            conn.close()

    assert rows("merged.duckdb") == rows("written.duckdb")
    assert len(rows("merged.duckdb")) == 300


@pytest.mark.usefixtures("duckdb_available")
def test_a_failing_merged_script_fails_with_the_engines_own_message_naming_the_script(tmp_path):
    from pytest_sqleval.execution.backends.duckdb import build_duckdb

    script = tmp_path / "dupes.sql"
    script.write_text("CREATE TABLE t (id INT PRIMARY KEY);\n" + "".join(
        f"INSERT INTO t VALUES ({i});\n" for i in (1, 2, 3, 2)))
    with pytest.raises(DatabaseError, match=r"setup script .*dupes.sql failed on DuckDB: .*(?i:duplicate key)"):
        build_duckdb(tmp_path / "dupes.duckdb", (script,))
    assert not (tmp_path / "dupes.duckdb").exists()


# --------------------------------------------------------------------------- a user's backend, end to end
SHADOW_CONFTEST = '''
import os
import sqlite3

from pytest_sqleval.execution.backends.base import Backend, Dialect

LOG = {log!r}


def _log(line):
    with open(LOG, "a") as f:
        f.write(f"{{line}} {{os.getpid()}}\\n")


class ShadowBackend(Backend):
    """shadow+sqlite:///path: a SQLite file opened by the user's own code (read-only URI)."""

    name = "shadow"
    dialect = Dialect("sqlite", "sqlite")

    def owns(self, url):
        return url.drivername == "shadow+sqlite"

    def owns_engine(self, engine):
        return False  # only the engines it opened

    def open(self, url, *, connect_timeout=10.0):
        from sqlalchemy import create_engine
        from sqlalchemy.engine import make_url
        from sqlalchemy.pool import StaticPool

        path = make_url(url).database
        _log("open " + path)

        def connect():
            return sqlite3.connect(f"file:{{path}}?mode=ro", uri=True, check_same_thread=False)

        return create_engine("sqlite://", creator=connect, poolclass=StaticPool)

    def run(self, conn, sql, limits):
        _log("run")
        return super().run(conn, sql, limits)


def pytest_sqleval_engine_backends(backends, config):
    _log("configure")
    backends.register(ShadowBackend())
'''


def test_a_conftest_backend_serves_its_own_scheme_through_pytest_sqleval(pytester, tmp_path):
    db = make_sqlite(tmp_path / "shadow.sqlite", SHOP_SQL)
    log = tmp_path / "shadow.log"
    pytester.makeconftest(SHADOW_CONFTEST.format(log=str(log)))
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(f"""
        database: "shadow+sqlite:///{db}"
        cases:
          - {{id: open, gold: "SELECT count(*) FROM tickets WHERE status = 'open'", predicted: "SELECT count(*) FROM tickets WHERE status = 'open'"}}
          - {{id: wrong, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops WHERE id < 3"}}
          - {{id: written, gold: "SELECT 1", predicted: "DELETE FROM shops"}}
        """))
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("missed"), outcomes.get("failed")) == (1, 2, None)
    data = json.loads(report.read_text())
    assert data["cases"][0]["database"] == f"shadow+sqlite:///{db}"
    assert data["suites"][0]["metrics"]["execution_accuracy"] == pytest.approx(1 / 3)
    lines = log.read_text().splitlines()
    assert lines[0].startswith("configure ") and lines[1] == f"open {db} {lines[0].split()[1]}"
    runs = [line for line in lines if line.startswith("run ")]
    # gold and prediction of the two guarded cases (the DELETE never reaches the engine), all in the pytest process
    assert len(runs) == 5 and {line.split()[1] for line in runs} == {lines[0].split()[1]}
    assert sqlite3.connect(db).execute("SELECT count(*) FROM shops").fetchone() == (3,)


def test_without_the_hook_the_scheme_is_a_clear_database_error(pytester, tmp_path):
    db = make_sqlite(tmp_path / "shadow.sqlite", SHOP_SQL)
    pytester.makefile(".sqleval.yaml", shop=f'database: "shadow+sqlite:///{db}"\n'
                                            'cases:\n  - {id: one, gold: "SELECT 1", predicted: "SELECT 1"}\n')
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert (outcomes.get("errors") or outcomes.get("error"), outcomes.get("passed")) == (1, None)
    result.stdout.fnmatch_lines(["*bad database URL shadow+sqlite:///*"])
    result.stdout.no_fnmatch_line("*Traceback*")


def test_each_xdist_worker_registers_the_conftest_backend(pytester, tmp_path):
    db = make_sqlite(tmp_path / "shadow.sqlite", SHOP_SQL)
    log = tmp_path / "shadow.log"
    pytester.makeconftest(SHADOW_CONFTEST.format(log=str(log)))
    cases = "".join(f'  - {{id: c{i}, gold: "SELECT count(*) FROM tickets WHERE id > {i}", '
                    f'predicted: "SELECT count(*) FROM tickets WHERE id > {i}"}}\n' for i in range(6))
    pytester.makefile(".sqleval.yaml", shop=f'database: "shadow+sqlite:///{db}"\ncases:\n' + cases)
    result = pytester.runpytest_subprocess("--sqleval", "-n", "2", "-p", "no:cacheprovider")
    assert result.parseoutcomes().get("passed") == 6
    lines = log.read_text().splitlines()
    configured = {line.split()[-1] for line in lines if line.startswith("configure ")}
    opened = {line.split()[-1] for line in lines if line.startswith("open ")}
    ran = {line.split()[-1] for line in lines if line.startswith("run ")}
    assert len(configured) == 3  # the controller and both workers registered it
    assert opened and ran == opened and opened < configured  # workers opened the database through it, ran there
