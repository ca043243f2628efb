"""Real databases with new inputs: setup scripts as users write them, failures that name the line, PostgreSQL
types compared with the gold, test-suite accuracy across engines."""

from __future__ import annotations

import json
import sqlite3
import textwrap
import time

import pytest

from conftest import require_module

USER_SCRIPT = """\
-- shop; with a semicolon in a comment
/* a block comment; also with one */
CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT);
INSERT INTO t VALUES (1, 'a;b'), (2, 'it''s; fine');
CREATE INDEX t_s ON t(s);
CREATE VIEW v AS SELECT id FROM t WHERE s LIKE '%;%';
BEGIN;
INSERT INTO t VALUES (3, 'c');
COMMIT;
-- the last line is a comment without a newline"""


def run(pytester, *args):
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    return result, (json.loads(report.read_text()) if report.exists() else None)


def suite(pytester, text: str) -> None:
    pytester.makefile(".sqleval.yaml", s=textwrap.dedent(text))


@pytest.mark.parametrize("url", ["sqlite://", "duckdb://"])
def test_a_script_with_comments_strings_views_and_its_own_transaction(pytester, url):
    if url == "duckdb://":
        require_module("duckdb_engine")
    (pytester.path / "schema.sql").write_text(USER_SCRIPT)
    suite(pytester, f"""
        database: {{url: "{url}", setup: [schema.sql]}}
        cases:
          - {{id: rows, gold: "SELECT count(*) FROM t", predicted: "SELECT 3"}}
          - {{id: view, gold: "SELECT id FROM v", predicted: "SELECT id FROM t WHERE id IN (1, 2)"}}
          - {{id: quote, gold: "SELECT s FROM t WHERE id = 2", predicted: "SELECT 'it''s; fine'"}}
    """)
    result, _ = run(pytester)
    assert result.parseoutcomes() == {"passed": 3}


@pytest.mark.parametrize("url, engine", [("sqlite://", "SQLite"), ("duckdb://", "DuckDB")])
def test_a_failing_statement_is_named_by_its_line_and_a_fixed_script_builds(pytester, monkeypatch, url, engine):
    if url == "duckdb://":
        require_module("duckdb_engine")
    build_dir = pytester.path / "builds"
    build_dir.mkdir()
    monkeypatch.setenv("SQLEVAL_BUILD_DIR", str(build_dir))
    script = pytester.path / "data.sql"
    script.write_text("CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT);\n"
                      "-- the duplicate:\n"
                      "INSERT INTO t VALUES (1, 'a');\nINSERT INTO t VALUES (1, 'dup');\nINSERT INTO t VALUES (3, 'c');\n")
    suite(pytester, f"""
        database: {{url: "{url}", setup: [data.sql]}}
        cases: [{{id: a, gold: "SELECT count(*) FROM t", predicted: "SELECT 3"}}]
    """)
    result, _ = run(pytester)
    assert result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines([f"*setup script *data.sql failed on {engine}: *(line 4: INSERT INTO t VALUES (1, 'dup');)"])
    assert not [p for p in build_dir.rglob("*") if p.is_file() and not p.name.endswith(".lock")]  # nothing half-built

    script.write_text(script.read_text().replace("(1, 'dup')", "(2, 'b')"))
    result, _ = run(pytester)
    assert result.parseoutcomes() == {"passed": 1}


def test_a_setup_script_that_is_not_utf8_names_the_line_and_the_fix(pytester):
    (pytester.path / "latin.sql").write_bytes(b"CREATE TABLE t (s TEXT);\nINSERT INTO t VALUES ('caf\xe9');\n")
    suite(pytester, """
        database: {url: "sqlite://", setup: [latin.sql]}
        cases: [{id: a, gold: "SELECT 1"}]
    """)
    result, _ = run(pytester)
    assert result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines(["*setup script *latin.sql is not UTF-8 text (*, line 2); save it as UTF-8*"])


def test_a_sqlite_trigger_body_does_not_split_the_failing_statement(tmp_path):
    """The line is found with SQLite's own statement splitter: a trigger's inner semicolons do not count."""
    from pytest_sqleval.errors import DatabaseError
    from pytest_sqleval.execution.backends.sqlite import build_sqlite

    script = tmp_path / "trig.sql"
    script.write_text("CREATE TABLE a (x INT);\nCREATE TABLE log (x INT);\n"
                      "CREATE TRIGGER tr AFTER INSERT ON a BEGIN\n  INSERT INTO log VALUES (new.x);\nEND;\n"
                      "INSERT INTO a VALUES (1);\nINSERT INTO missing VALUES (2);\n")
    with pytest.raises(DatabaseError, match=r"no such table: missing \(line 7: INSERT INTO missing VALUES \(2\);\)"):
        build_sqlite(tmp_path / "out.sqlite", (script,))
    assert not (tmp_path / "out.sqlite").exists()


def test_one_huge_multi_row_insert_is_not_tokenized_for_merging():
    from pytest_sqleval.execution.backends.insert_merge import merge_single_row_inserts

    text = "INSERT INTO m VALUES\n" + ",\n".join(f"({i}, 'n{i}')" for i in range(100_000)) + ";\n"
    started = time.perf_counter()
    assert merge_single_row_inserts(text, "duckdb") is text
    assert time.perf_counter() - started < 0.5  # the sqlglot tokenizer took about 6 s on it


def test_test_suite_accuracy_across_sqlite_and_duckdb_files(pytester):
    duckdb = require_module("duckdb")
    require_module("duckdb_engine")
    for name, rows in (("a.sqlite", "(1, 10), (2, 20)"), ("sub/b.sqlite", "(1, 10), (2, 20), (3, 30)")):
        (pytester.path / name).parent.mkdir(exist_ok=True)
        conn = sqlite3.connect(pytester.path / name)
        conn.executescript(f"CREATE TABLE t (id INT, v INT); INSERT INTO t VALUES {rows};")
        conn.close()
    conn = duckdb.connect(str(pytester.path / "c.duckdb"))
    conn.execute("CREATE TABLE t (id INT, v INT); INSERT INTO t VALUES (1, 10), (2, 25)")
    conn.close()
    suite(pytester, """
        databases: [a.sqlite, sub/b.sqlite, c.duckdb]
        cases:
          - {id: robust, gold: "SELECT id FROM t WHERE v >= 10", predicted: "SELECT id FROM t WHERE v > 9"}
          - {id: overfit, gold: "SELECT id FROM t WHERE v >= 10", predicted: "SELECT id FROM t WHERE id < 3"}
    """)
    result, report = run(pytester)
    assert result.parseoutcomes() == {"passed": 1, "missed": 1}
    metrics = report["suites"][0]["metrics"]
    assert (metrics["execution_accuracy"], metrics["test_suite_accuracy"]) == (1.0, 0.5)
    overfit = next(c for c in report["cases"] if c["id"] == "overfit")
    assert [d["execution_match"] for d in overfit["databases"]] == [True, False, True]


PG_SCRIPT = """\
CREATE SCHEMA shop;
CREATE TYPE shop.mood AS ENUM ('sad', 'ok');
CREATE TABLE shop.items (
  id SERIAL PRIMARY KEY, name text, m shop.mood, tags text[], doc jsonb,
  at timestamptz, day date, price numeric(10, 2), ratio double precision
);
CREATE FUNCTION shop.one() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;
INSERT INTO shop.items (name, m, tags, doc, at, day, price, ratio) VALUES
  ('a;b', 'ok', ARRAY['x', 'y'], '{"k": 1}', '2024-01-01 10:00+02', '2024-01-01', 1.50, 1.5),
  ('c', 'sad', '{}', 'null', 'infinity', '-infinity', NULL, 'NaN'),
  ('d', NULL, NULL, NULL, NULL, 'infinity', 2.25, 'Infinity');
DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET search_path = shop, public', current_database()); END $$;
"""


def test_postgres_types_compare_with_the_gold(pytester, postgres_url):
    (pytester.path / "schema.sql").write_text(PG_SCRIPT)
    suite(pytester, f"""
        database: {{url: "{postgres_url}", setup: [schema.sql]}}
        cases:
          - {{id: numeric, gold: "SELECT price FROM shop.items WHERE id = 1", predicted: "SELECT 1.5::float8"}}
          - {{id: infinity_ts, gold: "SELECT at FROM shop.items ORDER BY id", predicted: "SELECT at FROM items ORDER BY id"}}
          - {{id: infinity_day, gold: "SELECT day FROM shop.items ORDER BY id", predicted: "SELECT day FROM items ORDER BY id"}}
          - {{id: infinity_is_not_a_date, gold: "SELECT day FROM shop.items WHERE id = 3", predicted: "SELECT DATE '2024-01-01'"}}
          - {{id: arrays_json_nan, gold: "SELECT tags, doc, ratio FROM shop.items", predicted: "SELECT tags, doc, ratio FROM items"}}
          - {{id: enum_function, gold: "SELECT m, shop.one() FROM shop.items", predicted: "SELECT m::text, 1 FROM items"}}
    """)
    result, report = run(pytester)
    verdicts = {c["id"]: c["outcome"] for c in report["cases"]}
    assert verdicts == {"numeric": "passed", "infinity_ts": "passed", "infinity_day": "passed",
                        "infinity_is_not_a_date": "missed", "arrays_json_nan": "passed", "enum_function": "passed"}
    assert "Traceback" not in result.stdout.str()


def test_postgres_dates_past_year_9999_and_bc_compare_as_postgresql_writes_them(pytester, postgres_url):
    """Python's dates stop at year 9999 and start at year 1; PostgreSQL's go on. Such a value is compared as
    PostgreSQL's text on both sides, so the same value matches and a different one misses."""
    (pytester.path / "far.sql").write_text(
        "CREATE TABLE far (id int PRIMARY KEY, day date, at timestamp, atz timestamptz);\n"
        "INSERT INTO far VALUES (1, '10000-01-01', '12000-06-01 10:00', '11000-01-01 00:00+00'),"
        " (2, '0044-03-15 BC', '0100-01-01 12:00 BC', '2024-01-01 00:00+00'), (3, '2024-05-01', NULL, NULL);\n")
    suite(pytester, f"""
        database: {{url: "{postgres_url}", setup: [far.sql]}}
        cases:
          - {{id: same_days, gold: "SELECT day FROM far ORDER BY id", predicted: "SELECT day FROM far ORDER BY id"}}
          - {{id: same_times, gold: "SELECT at, atz FROM far", predicted: "SELECT at, atz FROM far ORDER BY id DESC"}}
          - {{id: other_year, gold: "SELECT day FROM far WHERE id = 1", predicted: "SELECT DATE '9999-12-31'"}}
          - {{id: other_bc, gold: "SELECT day FROM far WHERE id = 2", predicted: "SELECT DATE '0045-03-15 BC'"}}
          - {{id: literal, gold: "SELECT day FROM far WHERE id = 1", predicted: "SELECT DATE '10000-01-01'"}}
    """)
    result, report = run(pytester)
    verdicts = {c["id"]: c["outcome"] for c in report["cases"]}
    assert verdicts == {"same_days": "passed", "same_times": "passed", "other_year": "missed",
                        "other_bc": "missed", "literal": "passed"}, result.stdout.str()
    assert "Traceback" not in result.stdout.str()


def test_a_failing_postgres_script_names_the_line_and_leaves_no_database(pytester, postgres_url):
    psycopg = require_module("psycopg")
    from sqlalchemy.engine import make_url

    from pytest_sqleval.execution.engines import _setup_digest
    from pytest_sqleval.suite import DatabaseSpec

    (pytester.path / "bad.sql").write_text(
        "CREATE TABLE t (id int PRIMARY KEY, s text);\n"
        "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;\n"
        "INSERT INTO t VALUES (1, 'a;b');\n"
        "INSERT INTO t VALUES (1, 'dup');\n")
    suite(pytester, f"""
        database: {{url: "{postgres_url}", setup: [bad.sql]}}
        cases: [{{id: a, gold: "SELECT 1"}}]
    """)
    result, _ = run(pytester)
    assert result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines(["*setup script *bad.sql failed on PostgreSQL: duplicate key value*"
                                 "(line 4: INSERT INTO t VALUES (1, 'dup');)"])
    url = make_url(postgres_url)
    with psycopg.connect(host=url.host, port=url.port, user=url.username, dbname=url.database,
                         password=url.password or None, autocommit=True) as conn:
        names = [name for (name,) in conn.execute("SELECT datname FROM pg_database")]
    digest = _setup_digest(DatabaseSpec(url=postgres_url, setup=(pytester.path / "bad.sql",)))[:12]
    assert not [name for name in names if name.startswith(f"sqleval_{digest}_")]  # the failed build was dropped


@pytest.mark.parametrize("script, line", [
    # fails whole, before its VACUUM: nothing was kept, and the re-run leaves the VACUUM out
    ("CREATE TABLE t (id int UNIQUE);\nINSERT INTO nope VALUES (1);\nVACUUM;\n", "line 2: INSERT INTO nope VALUES (1);"),
    # a syntax error: PostgreSQL refuses the whole script before running any of it
    ("PRAGMA journal_mode = WAL;\nCREATE TABLE t (id int);\nVACUUM;\n", "line 1: PRAGMA journal_mode = WAL;"),
    # fails after a VACUUM: run in parts, the parts before it kept
    ("CREATE TABLE t (id int UNIQUE);\nINSERT INTO t VALUES (1);\nVACUUM;\nINSERT INTO t VALUES (2);\n"
     "INSERT INTO t VALUES (1);\nVACUUM ANALYZE;\n", "line 5: INSERT INTO t VALUES (1);"),
])
def test_a_failing_postgres_script_with_a_vacuum_still_names_the_line(pytester, postgres_url, script, line):
    """VACUUM runs outside the build's transaction (as psql runs it); the failing statement's line is still named."""
    (pytester.path / "bad.sql").write_text(script)
    suite(pytester, f"""
        database: {{url: "{postgres_url}", setup: [bad.sql]}}
        cases: [{{id: a, gold: "SELECT 1"}}]
    """)
    result, _ = run(pytester)
    assert result.parseoutcomes() == {"errors": 1}
    assert f"({line})" in result.stdout.str()


def test_plain_tests_under_xdist_share_one_build_of_a_setup_database(pytester):
    """Without --sqleval too, the workers of one run build a SQLite setup database once and all read it."""
    (pytester.path / "rnd.sql").write_text("CREATE TABLE r AS SELECT abs(random()) % 1000000000 AS x;\n")
    pytester.makepyfile(test_share="""
        import os
        import pytest
        from pytest_sqleval import run_query

        @pytest.mark.parametrize("i", range(4))
        def test_read(sqleval_engine_factory, i):
            engine = sqleval_engine_factory("sqlite://", setup=["rnd.sql"])
            x = run_query(engine, "SELECT x FROM r", timeout=5, max_rows=10).rows[0][0]
            with open(f"seen_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}_{i}", "w") as out:
                out.write(str(x))
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    assert result.parseoutcomes() == {"passed": 4}
    files = list(pytester.path.glob("seen_*"))
    assert {p.name.split("_")[1] for p in files} == {"gw0", "gw1"}  # both workers ran tests
    assert len({p.read_text() for p in files}) == 1  # and read the same build


def test_a_broken_gold_names_the_engine_it_really_ran_on(pytester):
    """`--sqleval-database-url duckdb://` moves a setup-script database: the gold's error names DuckDB, not sqlite://."""
    require_module("duckdb_engine")
    (pytester.path / "schema.sql").write_text("CREATE TABLE t (id INTEGER);\n")
    suite(pytester, """
        database: {url: "sqlite://", setup: [schema.sql]}
        cases: [{id: broken, gold: "SELECT nope FROM t"}]
    """)
    result, _ = run(pytester, "--sqleval-database-url=duckdb://")
    assert result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines(["*case broken: the gold query failed on duckdb:// (built from schema.sql) (syntax): *"])


def test_duckdb_inserts_reading_their_own_table_are_not_merged(tmp_path):
    """`INSERT ... VALUES ((SELECT max(x) + 1 FROM t))` one after another numbers 1, 2, 3, 4, as written; merged
    into one multi-row insert every subquery would read the table before any of them (NULL, NULL, NULL)."""
    duckdb = require_module("duckdb")
    from pytest_sqleval.execution.backends.duckdb import build_duckdb

    script = tmp_path / "ids.sql"
    script.write_text("CREATE TABLE t (x INTEGER);\nINSERT INTO t VALUES (1);\n"
                      + "INSERT INTO t VALUES ((SELECT max(x) + 1 FROM t));\n" * 3
                      + "INSERT INTO t VALUES (10);\nINSERT INTO t VALUES (11);\n")
    build_duckdb(tmp_path / "ids.duckdb", (script,))
    conn = duckdb.connect(str(tmp_path / "ids.duckdb"), read_only=True)
    assert [x for (x,) in conn.execute("SELECT x FROM t ORDER BY rowid").fetchall()] == [1, 2, 3, 4, 10, 11]
    conn.close()


def test_a_pg_dump_with_copy_from_stdin_says_how_to_dump_it(pytester, postgres_url):
    (pytester.path / "dump.sql").write_text("CREATE TABLE t (id int, s text);\n"
                                            "COPY public.t (id, s) FROM stdin;\n1\tO'Brien\n\\.\n")
    suite(pytester, f"""
        database: {{url: "{postgres_url}", setup: [dump.sql]}}
        cases: [{{id: a, gold: "SELECT 1"}}]
    """)
    result, _ = run(pytester)
    assert result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines(["*setup script *dump.sql failed on PostgreSQL: *; the script loads data with "
                                 "COPY ... FROM stdin, which only psql runs: dump it with `pg_dump --inserts`*"])


def test_an_in_memory_duckdb_without_setup_says_what_to_do(pytester):
    require_module("duckdb_engine")
    suite(pytester, """
        database: "duckdb:///:memory:"
        cases: [{id: a, gold: "SELECT 1", predicted: "SELECT 1"}]
    """)
    result, _ = run(pytester)
    assert result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines(["*case a: duckdb:///:memory: is an empty in-memory DuckDB database; use a .duckdb "
                                 "file, or `url: \"duckdb://\"` with setup scripts*"])


def test_env_vars_expand_in_a_databases_glob_and_in_setup_script_paths(pytester, monkeypatch):
    """`${VAR}` expands in a `databases:` glob and in `setup:` paths as it does in a `database:` path."""
    data = pytester.path / "data"
    data.mkdir()
    for name, rows in (("a", "(1, 10), (2, 20)"), ("b", "(1, 10), (2, 5)")):
        conn = sqlite3.connect(data / f"{name}.sqlite")
        conn.executescript(f"CREATE TABLE t (id INTEGER, v INTEGER); INSERT INTO t VALUES {rows};")
        conn.close()
    (data / "schema.sql").write_text("CREATE TABLE t (id INTEGER, v INTEGER); INSERT INTO t VALUES (1, 10);\n")
    monkeypatch.setenv("QA_DATA", str(data))
    pytester.makefile(".sqleval.yaml", globbed=textwrap.dedent("""
        databases: "${QA_DATA}/*.sqlite"
        cases:
          - {id: g, gold: "SELECT id FROM t WHERE v > 8", predicted: "SELECT id FROM t"}
    """), built=textwrap.dedent("""
        database: {url: "sqlite://", setup: ["${QA_DATA}/schema.sql"]}
        cases:
          - {id: s, gold: "SELECT v FROM t", predicted: "SELECT v FROM t"}
    """))
    result, report = run(pytester)
    assert result.ret == 0, result.stdout.str()
    cases = {c["id"]: c for c in report["cases"]}
    assert [d["execution_match"] for d in cases["g"]["databases"]] == [True, False]
    assert cases["s"]["outcome"] == "passed"


def test_the_engine_factory_expands_env_vars_in_setup_script_paths(tmp_path, monkeypatch):
    """`sqleval_engine_factory("duckdb://", setup=["${DIR}/schema.sql"])`: as in a suite's `setup:`."""
    from pytest_sqleval.fixtures import _spec

    monkeypatch.setenv("QA_SQL_DIR", str(tmp_path))
    spec = _spec("sqlite://", ["${QA_SQL_DIR}/schema.sql"])
    assert spec.setup == ((tmp_path / "schema.sql").resolve(),)
    monkeypatch.delenv("QA_SQL_DIR")
    with pytest.raises(pytest.UsageError, match="QA_SQL_DIR"):
        _spec("sqlite://", ["${QA_SQL_DIR}/schema.sql"])
