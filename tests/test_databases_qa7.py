"""Real databases with inputs nobody tuned for (QA 7): PostgreSQL schemas, policies and setup scripts as
applications dump them, test-suite accuracy and gold checks on them."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import require_module


def run(pytester, *args):
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    return result, (json.loads(report.read_text()) if report.exists() else None)


def suite(pytester, text: str) -> None:
    pytester.makefile(".sqleval.yaml", s=textwrap.dedent(text))


RLS_SCRIPT = """\
CREATE SCHEMA app;
CREATE TABLE app.notes (id int PRIMARY KEY, author text);
INSERT INTO app.notes VALUES (1, 'ann'), (2, 'bob'), (3, 'ann');
-- as a Supabase or multi-tenant application dump has it: rows shown per user by a policy
ALTER TABLE app.notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_notes ON app.notes FOR SELECT USING (author = current_user);
"""


@pytest.fixture
def builder_url(postgres_url):
    """A PostgreSQL user that may build databases and roles but is no superuser (a CI service account)."""
    psycopg = require_module("psycopg")
    from sqlalchemy.engine import make_url

    url = make_url(postgres_url)
    admin = dict(host=url.host, port=url.port, user=url.username, dbname=url.database,
                 password=url.password or None, autocommit=True)
    with psycopg.connect(**admin) as conn:
        conn.execute("DROP ROLE IF EXISTS qa7db_builder")
        conn.execute("CREATE ROLE qa7db_builder LOGIN CREATEDB CREATEROLE PASSWORD 'qa7db'")
    try:
        yield url.set(username="qa7db_builder", password="qa7db").render_as_string(hide_password=False)
    finally:
        with psycopg.connect(**admin) as conn:
            conn.execute("DROP ROLE IF EXISTS qa7db_builder")


@pytest.mark.parametrize("user", ["superuser", "builder"])
def test_a_postgres_table_under_row_level_security_shows_every_row_it_holds(pytester, request, user):
    """The plugin's SELECT-only role must not change what the gold or a prediction sees: the suite's user
    (the table's owner; a superuser, or a user with CREATEDB and CREATEROLE only) reads all 3 rows; the role,
    held to the policy, read none (every gold an `empty` finding, `SELECT 3` a miss)."""
    require_module("psycopg")
    url = request.getfixturevalue("postgres_url" if user == "superuser" else "builder_url")
    (pytester.path / "rls.sql").write_text(RLS_SCRIPT)
    suite(pytester, f"""
        database: {{url: "{url}", setup: [rls.sql]}}
        cases:
          - {{id: count, gold: "SELECT count(*) FROM app.notes", predicted: "SELECT 3"}}
          - {{id: ann, gold: "SELECT id FROM app.notes WHERE author = 'ann'", predicted: "VALUES (1), (3)"}}
    """)
    result, report = run(pytester)
    assert {c["id"]: c["outcome"] for c in report["cases"]} == {"count": "passed", "ann": "passed"}
    result, _ = run(pytester, "--sqleval-check-gold")
    result.stdout.no_fnmatch_line("*returns no rows*")
    assert result.ret == 0


def test_a_glob_over_a_folder_of_mixed_engines_skips_the_files_beside_each_database(pytester):
    """`databases: "variants/*"` over SQLite and DuckDB variants: a SQLite database in WAL mode that an application
    holds open has `-wal` and `-shm` files beside it (a rollback journal `-journal`; DuckDB a `.wal` after a crash).
    They are parts of their database, not databases of the test suite: read as SQLite files, every case errored."""
    import sqlite3

    duckdb = require_module("duckdb")
    require_module("duckdb_engine")
    variants = pytester.path / "variants"
    variants.mkdir()
    con = duckdb.connect(str(variants / "c.duckdb"))
    con.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2)")
    con.close()
    (variants / "d.duckdb.wal").write_bytes(b"")  # (a DuckDB file beside which a crashed writer left its log)
    (variants / "d.duckdb").write_bytes((variants / "c.duckdb").read_bytes())
    app = sqlite3.connect(variants / "a.sqlite")  # the application's connection, open during the run
    try:
        app.execute("PRAGMA journal_mode = WAL")
        app.execute("CREATE TABLE t (x INTEGER)")
        app.execute("INSERT INTO t VALUES (1), (2)")
        app.commit()
        assert (variants / "a.sqlite-wal").exists() and (variants / "a.sqlite-shm").exists()
        suite(pytester, """
            databases: "variants/*"
            cases:
              - {id: q, gold: "SELECT x FROM t ORDER BY x", predicted: "VALUES (1), (2)"}
        """)
        result, report = run(pytester)
    finally:
        app.close()
    [case] = report["cases"]
    assert case["outcome"] == "passed", result.stdout.str()
    assert [d["database"].rsplit("/", 1)[-1] for d in case["databases"]] == ["a.sqlite", "c.duckdb", "d.duckdb"]


def test_a_duckdb_view_over_a_csv_file_gets_a_fix_about_the_view_not_the_gold_text(pytester):
    """A DuckDB database whose view reads a CSV file (`CREATE VIEW v AS SELECT * FROM read_csv(...)`, a common
    DuckDB habit): the plugin's connections have file access off, so a gold reading the view is refused. The gold is
    one read-only query; the fix told the user to split its statements and move writes to the setup scripts."""
    require_module("duckdb_engine")
    (pytester.path / "rows.csv").write_text("id,name\n1,a\n2,b\n")
    (pytester.path / "schema.sql").write_text(
        f"CREATE VIEW v AS SELECT * FROM read_csv('{pytester.path / 'rows.csv'}');\n")
    suite(pytester, """
        database: {url: "duckdb://", setup: [schema.sql]}
        cases:
          - {id: v, gold: "SELECT count(*) FROM v", predicted: "SELECT 2"}
    """)
    result, report = run(pytester)
    [case] = report["cases"]
    assert case["outcome"] == "error"
    fix = result.stdout.str().split("fix: ", 1)[1].split("\n", 1)[0]
    assert "split" not in fix and "CREATE TABLE" in fix


def test_a_postgres_numeric_column_holding_both_infinities_scores(pytester, postgres_url):
    """PostgreSQL 14+ numerics hold 'Infinity' and '-Infinity' (psycopg reads them as Decimals): a column with both
    was an internal error of its case (Decimal's sum of +inf and -inf raises InvalidOperation, not OverflowError)."""
    require_module("psycopg")
    (pytester.path / "m.sql").write_text(
        "CREATE TABLE m (id int, v numeric);\n"
        "INSERT INTO m VALUES (1, 'Infinity'), (2, '-Infinity'), (3, 'NaN'), (4, 2.5);\n")
    suite(pytester, f"""
        database: {{url: "{postgres_url}", setup: [m.sql]}}
        cases:
          - {{id: same, gold: "SELECT id, v FROM m ORDER BY id", predicted: "SELECT id, v FROM m ORDER BY id"}}
          - {{id: other, gold: "SELECT v FROM m", predicted: "SELECT v FROM m WHERE id <> 4"}}
    """)
    result, report = run(pytester)
    assert {c["id"]: c["outcome"] for c in report["cases"]} == {"same": "passed", "other": "missed"}


def test_the_column_kind_of_decimals_summing_to_an_invalid_operation_is_other():
    from decimal import Decimal

    from pytest_sqleval.metrics.column_kinds import OTHER, kind_and_total

    assert kind_and_total([Decimal("Infinity"), Decimal("-Infinity")]) == (OTHER, None)
    assert kind_and_total([Decimal("sNaN")]) == (OTHER, None)


def test_a_duckdb_setup_script_reads_its_data_file_beside_it_from_any_folder(pytester):
    """`COPY t FROM 'rows.csv'` (or `read_csv('rows.csv')`) in a DuckDB setup script, the CSV beside the script:
    found only when pytest ran in the suite's folder, else an error of every case; a suite's other paths are
    relative to its file. Two suites with the same script and their own CSV each get their own data."""
    require_module("duckdb_engine")
    for folder, rows in (("north", 2), ("south", 3)):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / "rows.csv").write_text("id\n" + "".join(f"{i}\n" for i in range(rows)))
        (pytester.path / folder / "schema.sql").write_text(
            "CREATE TABLE t (id INTEGER);\nCOPY t FROM 'rows.csv' (HEADER);\n"
            "CREATE TABLE u AS SELECT * FROM read_csv('rows.csv');\n")
        (pytester.path / folder / f"{folder}.sqleval.yaml").write_text(textwrap.dedent(f"""
            database: {{url: "duckdb://", setup: [schema.sql]}}
            cases:
              - {{id: n, gold: "SELECT count(*) FROM t", predicted: "SELECT {rows}"}}
              - {{id: u, gold: "SELECT count(*) FROM u", predicted: "SELECT {rows}"}}
        """))
    result, report = run(pytester)
    assert {(c["suite"], c["id"]): c["outcome"] for c in report["cases"]} == {
        ("north", "n"): "passed", ("north", "u"): "passed", ("south", "n"): "passed", ("south", "u"): "passed"}
