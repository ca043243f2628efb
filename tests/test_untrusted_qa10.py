"""Untrusted predicted SQL, QA round qa10 (issue 7): new ways in.

- **SQLite's ``sqlite_stmt`` showed the gold SQL of other cases.** The SQLite library this runs on is built with
  ``SQLITE_ENABLE_STMTVTAB`` (Debian's is), so ``SELECT sql FROM sqlite_stmt`` lists the SQL of every statement the
  connection keeps prepared, and Python's sqlite3 keeps the last 128. The query process runs the gold SQL of every
  case on the same connection, so a prediction reading it copied the gold SQL of earlier cases (and of its own case)
  into the report's mismatch rows. It is a relation, not a call, so the function allowlist never saw it, and a
  qualified ``main.sqlite_stmt`` passed the relation check too (SQLite's schemas were not "on the path"). It is now
  refused by the guard (any qualifier or quoting) and denied by the connection's authorizer as well; the
  ``pragma_*`` table-valued functions read as tables (build options, file paths), which the allowlist comment said
  were refused, are refused the same way.
- **DuckDB backtick names hid calls from the guard.** DuckDB quotes names with backticks as well as double quotes;
  sqlglot's DuckDB (and PostgreSQL) tokenizer does not know the backtick, yields an ``UNKNOWN`` token and goes on,
  reading ``--`` inside the backticks as a comment to the end of the line. ``SELECT 1 `--`, current_setting('x')
  `--``` passed the guard as ``SELECT 1`` while DuckDB ran ``current_setting`` (and any refused function, or
  ``duckdb_settings()``). A token sqlglot could not read is now refused as a class.
- **DuckDB's SHOW inside a query read any setting.** DuckDB runs ``SHOW name`` as a query wherever a subquery may
  stand (``SELECT (SHOW memory_limit)``, ``FROM (SHOW secret_directory)``, ``[(SHOW x)]``, ``EXISTS (SHOW x)``);
  sqlglot read ``(SHOW x)`` as a table or a column named SHOW aliased x, so the refusal of ``current_setting`` and
  of the settings catalogues was bypassed. A SHOW keyword (reserved in DuckDB: a name only after AS or a dot) is now
  refused on DuckDB.
- **Unicode separators hid calls from the guard on DuckDB.** DuckDB turns some Unicode spaces (U+00A0, U+2000-U+200A,
  U+3000, ...) into spaces before it parses, but reads U+0085, U+1680, U+2028, U+2029 and U+001C-U+001F as letters
  of a name, where sqlglot reads them as white space: ``SELECT 1 AS <U+2028>$$, current_setting('x') AS
  <U+2028>$$`` was a dollar-quoted string to the guard and two names around a call to DuckDB. The white space check
  that refused this on PostgreSQL now knows DuckDB's white space too.
"""

from __future__ import annotations

import json

import pytest

from conftest import SHOP_SQL, make_sqlite
from pytest_sqleval.errors import QueryError
from pytest_sqleval.sql.guard import check_prediction

pytest_plugins = ["pytester"]


SQLITE_STMT_READS = [
    "SELECT sql FROM sqlite_stmt",
    "SELECT sql FROM main.sqlite_stmt",
    "SELECT sql FROM temp.sqlite_stmt",
    'SELECT sql FROM "SQLITE_STMT"',
    "SELECT sql FROM [sqlite_stmt]",
    "SELECT sql FROM `main`.`Sqlite_Stmt` AS s",
    "SELECT name FROM shops WHERE name IN (SELECT sql FROM sqlite_stmt)",
    "WITH s AS (SELECT sql FROM sqlite_stmt) SELECT * FROM s",
    "SELECT s.sql FROM shops JOIN sqlite_stmt AS s ON 1 = 1",
    "SELECT name FROM shops UNION SELECT sql FROM sqlite_stmt",
    "SELECT * FROM sqlite_dbpage",
    "SELECT file FROM pragma_database_list",
    "SELECT * FROM main.pragma_compile_options",
    "SELECT name FROM PRAGMA_FUNCTION_LIST",
]


@pytest.mark.parametrize("sql", SQLITE_STMT_READS)
def test_sqlite_statement_and_pragma_tables_are_refused(sql):
    with pytest.raises(QueryError) as caught:
        check_prediction(sql, "sqlite")
    assert caught.value.kind == "rejected"
    assert "system catalogue" in str(caught.value)


@pytest.mark.parametrize("sql", [
    "SELECT name FROM shops",
    "SELECT name FROM main.shops",
    "SELECT * FROM sqlite_master",
    "SELECT value FROM json_each('[1, 2]')",
    "SELECT sql FROM shops AS sqlite_stmts",
])
def test_ordinary_sqlite_reads_stay_allowed(sql):
    check_prediction(sql, "sqlite")


def test_the_sqlite_authorizer_denies_sqlite_stmt_even_for_trusted_sql(tmp_path):
    """Defence in depth: the guard is not the only wall (a gold, which skips the guard, cannot read it either)."""
    from pytest_sqleval.execution.backends.sqlite import sqlite_engine
    from pytest_sqleval.execution.runner import run_query

    engine = sqlite_engine(make_sqlite(tmp_path / "shop.sqlite"))
    try:
        run_query(engine, "SELECT name FROM shops /* marker-qa10 */", untrusted=False)
        with pytest.raises(QueryError) as caught:
            run_query(engine, "SELECT sql FROM sqlite_stmt", untrusted=False)
        assert "marker-qa10" not in str(caught.value)
    finally:
        engine.dispose()


GOLD_MARK = "GOLD-qa10-secret"


def test_a_prediction_never_reads_the_gold_sql_of_other_cases_on_sqlite(pytester):
    make_sqlite(pytester.path / "shop.sqlite", SHOP_SQL)
    predictions = {
        "plain": "SELECT sql FROM sqlite_stmt",
        "qualified": "SELECT sql FROM main.sqlite_stmt",
        "subquery": "SELECT name FROM shops WHERE name IN (SELECT sql FROM sqlite_stmt) OR 1 = 1 "
                    "UNION ALL SELECT sql FROM [sqlite_stmt]",
    }
    suite = ["database: shop.sqlite", "cases:",
             f"  - {{id: earlier, gold: 'SELECT name FROM shops WHERE id = 1 /* {GOLD_MARK}-1 */', "
             "predicted: 'SELECT name FROM shops WHERE id = 1'}"]
    suite += [f"  - {{id: {name}, gold: 'SELECT name FROM shops /* {GOLD_MARK}-{name} */', predicted: '{sql}'}}"
              for name, sql in predictions.items()]
    suite.append("  - {id: later, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}")
    (pytester.path / "s.sqleval.yaml").write_text("\n".join(suite) + "\n", encoding="utf-8")
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "report.json",
                                           "--sqleval-diff", timeout=120)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    text = (pytester.path / "report.json").read_text(encoding="utf-8")
    cases = {case["id"]: case for case in json.loads(text)["cases"]}
    for name in predictions:
        assert cases[name]["outcome"] == "missed"
        assert cases[name]["error"]["kind"] == "rejected", cases[name]["error"]
        assert "sqlite_stmt" in cases[name]["error"]["message"]
    assert cases["earlier"]["outcome"] == "passed" and cases["later"]["outcome"] == "passed"
    # the gold SQL appears only as the gold of its own case, never in a prediction's rows or message
    for case in cases.values():
        assert GOLD_MARK not in json.dumps({k: v for k, v in case.items() if k != "gold"})


DUCKDB_UNREAD = [
    "SELECT 1 `--`, current_setting('secret_directory') `--`",
    "SELECT 1 AS `--`, current_setting('secret_directory') AS `--`",
    "SELECT '`--`' `--`, (SELECT count(*) FROM duckdb_settings()) --`--`",
    "SELECT `name` FROM shops",
    "SELECT (SHOW memory_limit)",
    "SELECT * FROM (SHOW secret_directory)",
    "SELECT * FROM (show temp_directory) AS s",
    "SELECT * FROM shops JOIN (SHOW memory_limit) ON true",
    "SELECT * FROM shops, LATERAL (SHOW memory_limit)",
    "SELECT [(SHOW memory_limit)]",
    "SELECT * FROM shops WHERE EXISTS (/* x */ SHOW memory_limit)",
    "SELECT * FROM ((SHOW \"memory_limit\"))",
]


@pytest.mark.parametrize(("sql", "dialect"), [(sql, "duckdb") for sql in DUCKDB_UNREAD]
                         + [(sql, "postgres") for sql in DUCKDB_UNREAD if "`" in sql])
def test_backticks_and_nested_show_are_refused_on_duckdb(sql, dialect):
    with pytest.raises(QueryError) as caught:
        check_prediction(sql, dialect)
    assert caught.value.kind in ("rejected", "syntax"), caught.value  # never run (syntax: sqlglot cannot parse it)


@pytest.mark.parametrize("sql", [
    "SELECT 1 AS show",
    "SELECT s.show FROM (SELECT 1 AS show) AS s",
    'SELECT "show" FROM (SELECT 1 AS "show")',
    "SELECT '`' AS tick, name FROM shops -- a ` in a comment",
    "SELECT * FROM (SUMMARIZE shops)",
])
def test_show_as_a_name_and_backticks_in_strings_stay_allowed_on_duckdb(sql):
    check_prediction(sql, "duckdb")


def test_a_duckdb_prediction_never_reads_settings_past_the_guard(pytester, duckdb_available):
    import duckdb

    gold = pytester.path / "gold.duckdb"
    with duckdb.connect(str(gold)) as con:
        con.execute("CREATE TABLE shops(id INTEGER, name VARCHAR); INSERT INTO shops VALUES (1, 'a'), (2, 'b')")
    predictions = {
        "backtick": "SELECT 1 `--`, current_setting('secret_directory') `--`",
        "backtick_catalogue": "SELECT 1 `--`, (SELECT string_agg(name || value, ',') FROM duckdb_settings()) `--`",
        "show_scalar": "SELECT (SHOW secret_directory)",
        "show_from": "SELECT * FROM (SHOW extension_directory)",
        "show_list": "SELECT [(SHOW home_directory), (SHOW temp_directory)]",
        "line_separator": "SELECT 1 AS \u2028$$, current_setting('secret_directory') AS \u2028$$",
        "next_line": "SELECT name AS \x85$$, current_setting('extension_directory') AS \x85$$ FROM shops",
    }
    suite = ["database: gold.duckdb", "cases:"]
    suite += [f"  - id: {name}\n    gold: SELECT name FROM shops\n    predicted: {json.dumps(sql)}"
              for name, sql in predictions.items()]
    suite.append("  - {id: fine, gold: SELECT name FROM shops, predicted: SELECT name AS show FROM shops}")
    (pytester.path / "s.sqleval.yaml").write_text("\n".join(suite) + "\n", encoding="utf-8")
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "report.json",
                                           "--sqleval-diff", timeout=120)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    text = (pytester.path / "report.json").read_text(encoding="utf-8")
    cases = {case["id"]: case for case in json.loads(text)["cases"]}
    for name in predictions:
        assert cases[name]["outcome"] == "missed"
        assert cases[name]["error"]["kind"] == "rejected", cases[name]["error"]
    assert cases["fine"]["outcome"] == "passed"
    for secret in ("stored_secrets", ".duckdb/extensions", "secret_directory", "extension_directory"):
        assert secret not in json.dumps([case["mismatch"] for case in cases.values()])
        assert "/stored_secrets" not in output and "/.duckdb/extensions" not in output


DUCKDB_LETTERS = ["\u0085", "\u1680", "\u2028", "\u2029", "\x1c", "\x1d", "\x1e", "\x1f"]


@pytest.mark.parametrize("char", DUCKDB_LETTERS)
def test_white_space_duckdb_reads_as_a_letter_is_refused_outside_strings(char, duckdb_available):
    import duckdb

    sql = f"SELECT 1 AS {char}$$, current_setting('secret_directory') AS {char}$$"
    with duckdb.connect() as con:  # the engine really reads two names around a call
        assert len(con.execute(sql).description) == 2  # sqlglot reads one column, `1 AS $$...$$`
    with pytest.raises(QueryError) as caught:
        check_prediction(sql, "duckdb")
    assert caught.value.kind == "rejected"
    assert f"U+{ord(char):04X}" in str(caught.value)
    check_prediction(f"SELECT '{char}' AS x -- {char}", "duckdb")  # in a string or a comment: text


@pytest.mark.parametrize("char", ["\u00a0", "\u2003", "\u202f", "\u3000"])
def test_unicode_spaces_duckdb_reads_as_spaces_stay_allowed(char):
    check_prediction(f"SELECT name{char}FROM{char}shops", "duckdb")


# --------------------------------------------------------------------------- PostgreSQL per-role settings
def test_postgres_per_role_settings_are_not_readable_through_pg_roles(postgres_url):
    """`ALTER ROLE ... SET app.jwt_secret = ...` (a Supabase pattern) is kept in pg_db_role_setting, which was refused,
    and shown by pg_roles.rolconfig and pg_user.useconfig, which were not: a prediction read the secret."""
    import uuid

    import sqlalchemy

    from pytest_sqleval.errors import QueryError
    from pytest_sqleval.execution.runner import run_query

    role = f"qa_cfg_{uuid.uuid4().hex[:8]}"
    engine = sqlalchemy.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE ROLE {role}")
        conn.exec_driver_sql(f"ALTER ROLE {role} SET app.jwt_secret = 'planted-role-secret'")
    try:
        for sql in (f"SELECT rolconfig FROM pg_roles WHERE rolname = '{role}'",
                    f"SELECT useconfig FROM pg_catalog.pg_user WHERE usename = '{role}'",
                    "SELECT * FROM pg_roles"):
            try:
                result = run_query(engine, sql, timeout=10, max_rows=1000, untrusted=True)
                shown = repr(result.rows)
                kind = "ok"
            except QueryError as exc:
                shown, kind = exc.message, exc.kind
            assert kind == "rejected" and "planted-role-secret" not in shown, (sql, kind, shown[:200])
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP ROLE {role}")
        engine.dispose()
