"""Untrusted predicted SQL and the databases it runs on, QA round qa11 (issues 4 and 7).

- **A parameter placeholder in a prediction took its case out of the metrics on PostgreSQL.** ``SELECT $1`` (or
  ``... WHERE id = $1``, which models write when they imitate application code) reached the server, which refuses
  to bind no values with SQLSTATE 08P01: a *protocol violation*, of class 08 (connection exception). The backend read
  every class-08 error as a lost server, so the case became an error of the database ("the connection to PostgreSQL
  ... failed during the run; the case was not scored"), dropped from every metric: a model emitting ``$1`` for
  the questions it cannot answer raised its execution accuracy (two such cases and one right answer scored 1.0). It
  is now a ``syntax`` miss naming the placeholder; the connection stays in use.
- **A DuckDB database whose path holds a ``?`` could not be opened.** DuckDB reads a ``?`` in a database path as the
  start of options: it looks for the write-ahead log at ``a.wal?b.duckdb`` (not ``a?b.duckdb.wal``), which the
  locked-down connection (external access off) may not even probe, so every case was an error ("Permission Error:
  Cannot access file ... file system operations are disabled by configuration"). DuckDB resolves links, so a link
  cannot help; such a file now opens with external access on, which is turned off and the configuration locked on
  each connection right after it opens, before it runs anything (DuckDB's own reading of the path, as anywhere else).
- **A PostgreSQL setup script with its own ``BEGIN ... COMMIT`` failed without naming the failing line.** Locating
  re-runs a failed script's statements in a transaction that is rolled back, which a script's own transaction
  statements would end, so such scripts got no line at all. The server's own position of the error is used when it
  gives one; otherwise the script's statements are re-run one by one, as psql runs them, in a scratch database of
  their own (what the script committed before it failed stays out of the way), dropped at once.
- **A DuckDB invisible space hid a refused relation.** DuckDB turns U+200B (zero width space), U+2060 (word joiner)
  and U+FEFF into spaces before it parses (found by parsing every BMP character), while Python, and so sqlglot, reads
  them as letters of a name: ``SELECT name, setting FROM pg_settings<U+200B>`` was a table ``pg_settings<U+200B>`` to
  the guard, which refuses ``pg_settings``, and DuckDB's settings in the report. Such a character outside strings,
  quoted names and comments is now refused on DuckDB, as the white space DuckDB reads as letters already was.
- **An engine message quoting a huge value went into the report whole.** PostgreSQL's ``invalid input syntax for type
  integer: "<the value>"`` and DuckDB's ``Could not convert string '<the value>'`` quote what the query built:
  ``SELECT repeat('x', 50000000)::int`` (34 characters) put 50 MB into its case's message, a 100 MB JSON report
  from two such cases. An engine's message is now cut at 2,000 characters, saying how much was cut.
- **A correct prediction with a parenthesised operand of LIKE, ~, GLOB or AT TIME ZONE was rejected.** The guard
  treats every name followed by ``(`` as a call, and sqlglot also accepts LIKE, ILIKE, RLIKE (``~``), GLOB and ZONE as
  functions' names: ``WHERE name LIKE ('A%')`` and ``now() AT TIME ZONE ('UTC')`` scored 0 as "calls like(), which is
  not on the allowlist" on PostgreSQL and DuckDB. The operator of an operator node of the parsed tree is no call.
"""

from __future__ import annotations

import pytest

from conftest import require_module
from untrusted_support import run_untrusted, write_dedented

pytest_plugins = ["pytester"]


def _run(pytester, *args: str):
    return run_untrusted(pytester, *args, timeout=180)


_write = write_dedented


SHOP = """
CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
INSERT INTO shops VALUES (1, 'Avionics'), (2, 'Engines'), (3, 'Cabin');
"""


# --------------------------------------------------------------------------- parameter placeholders
def test_a_parameter_placeholder_is_a_syntax_miss_not_an_unscored_case_on_postgresql(pytester, postgres_url):
    _write(pytester.path / "shop.sql", SHOP)
    _write(
        pytester.path / "p.sqleval.yaml",
        f"""
        database: {{url: "{postgres_url}", setup: [shop.sql]}}
        cases:
          - {{id: bare, gold: "SELECT name FROM shops", predicted: "SELECT $1"}}
          - {{id: where, gold: "SELECT name FROM shops WHERE id = 2", predicted: "SELECT name FROM shops WHERE id = $1"}}
          - {{id: right, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops"}}
    """,
    )
    result, cases, report = _run(pytester)
    for name in ("bare", "where"):
        assert cases[name]["outcome"] == "missed", cases[name]
        assert cases[name]["error"]["kind"] == "syntax", cases[name]["error"]
        assert "placeholder" in cases[name]["error"]["message"]
    assert cases["right"]["outcome"] == "passed"
    assert report["overall"]["scored"] == 3
    assert report["overall"]["metrics"]["execution_accuracy"] == pytest.approx(1 / 3)
    assert report["overall"]["metrics"]["errors_by_kind"] == {"syntax": 2}


# --------------------------------------------------------------------------- a DuckDB file whose path holds a ?
def _duckdb_file(path):
    duckdb = require_module("duckdb", "the duckdb extra is not installed: pip install 'pytest-sqleval[duckdb]'")
    path.parent.mkdir(parents=True, exist_ok=True)
    plain = path.parent.parent / "plain.duckdb"  # (DuckDB itself cannot write a file whose folder holds a ?)
    conn = duckdb.connect(str(plain))
    conn.execute("CREATE TABLE shops (id INTEGER, name VARCHAR)")
    conn.execute("INSERT INTO shops VALUES (1, 'Avionics'), (2, 'Engines'), (3, 'Cabin')")
    conn.close()
    plain.replace(path)
    return path


@pytest.mark.parametrize("relative", ["odd?folder/shop.duckdb", "data/shop?v2.duckdb"])
def test_a_duckdb_file_whose_path_holds_a_question_mark_opens(pytester, relative):
    require_module("duckdb_engine", "the duckdb extra is not installed: pip install 'pytest-sqleval[duckdb]'")
    _duckdb_file(pytester.path / relative)
    _write(
        pytester.path / "q.sqleval.yaml",
        f"""
        database: "{relative}"
        cases:
          - {{id: right, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops ORDER BY id"}}
          - {{id: wrong, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops WHERE id = 1"}}
    """,
    )
    result, cases, _ = _run(pytester)
    assert cases["right"]["outcome"] == "passed", result.stdout.str()
    assert cases["wrong"]["outcome"] == "missed", result.stdout.str()


def test_a_duckdb_file_whose_path_holds_a_question_mark_stays_locked_down(tmp_path):
    """Its hardening comes right after the file opens, before anything runs: a trusted query (no guard) still cannot
    read a file, nor turn file access back on."""
    require_module("duckdb_engine", "the duckdb extra is not installed: pip install 'pytest-sqleval[duckdb]'")
    from pytest_sqleval.errors import QueryError
    from pytest_sqleval.execution.backends.duckdb import duckdb_engine
    from pytest_sqleval.execution.runner import run_query
    from pytest_sqleval.suite import file_url

    secret = tmp_path / "secret.txt"
    secret.write_text("qa11-secret", encoding="utf-8")
    path = _duckdb_file(tmp_path / "a?b" / "shop.duckdb")
    engine = duckdb_engine(file_url("duckdb", path), pooled=False)
    try:
        assert run_query(engine, "SELECT count(*) FROM shops", untrusted=False).rows == [(3,)]
        for sql in (
            f"SELECT content FROM read_text('{secret}')",
            "SET enable_external_access = true",
            "CREATE TABLE t (x INTEGER)",
        ):
            with pytest.raises(QueryError) as caught:
                run_query(engine, sql, untrusted=False)
            assert caught.value.kind == "rejected", caught.value
            assert "qa11-secret" not in str(caught.value)
        assert run_query(engine, "SELECT current_setting('lock_configuration')", untrusted=False).rows == [(True,)]
    finally:
        engine.dispose()


# --------------------------------------------------------------------------- PostgreSQL scripts with BEGIN ... COMMIT
OWN_TRANSACTIONS = {
    # a runtime error, for which the server gives no position: found in a scratch database
    "runtime": (
        "BEGIN;\nCREATE TABLE t (x INTEGER);\nINSERT INTO t VALUES (1);\nCOMMIT;\n\nBEGIN;\n"
        "INSERT INTO t VALUES (2);\nINSERT INTO t VALUES (1 / 0);\nCOMMIT;\n",
        8,
        "division by zero",
    ),
    # an unknown column, whose position the server gives
    "position": (
        "START TRANSACTION;\nCREATE TABLE t (x INTEGER);\nCOMMIT;\nINSERT INTO t VALUES (1);\n"
        "-- then\nSELECT\n  nosuch FROM t;\nEND;\n",
        6,
        'column "nosuch" does not exist',
    ),
}


@pytest.mark.parametrize("name", sorted(OWN_TRANSACTIONS))
def test_a_postgres_setup_script_with_its_own_transactions_names_its_failing_line(pytester, postgres_url, name):
    import psycopg

    script, line, message = OWN_TRANSACTIONS[name]
    _write(pytester.path / "load.sql", "CREATE TABLE first (i INTEGER);\n")
    (pytester.path / "own.sql").write_text(script, encoding="utf-8")
    _write(
        pytester.path / "o.sqleval.yaml",
        f"""
        database: {{url: "{postgres_url}", setup: [load.sql, own.sql]}}
        cases: [{{id: n, gold: "SELECT 1", predicted: "SELECT 1"}}]
    """,
    )
    result, cases, _ = _run(pytester)
    error = cases["n"]["error"]["message"]
    assert "own.sql failed on PostgreSQL" in error and message in error, error
    assert f"(line {line}: " in error, error
    with psycopg.connect(postgres_url.replace("+psycopg", ""), autocommit=True) as admin:
        left = admin.execute("SELECT datname FROM pg_database WHERE datname LIKE 'sqleval%\\_l'").fetchall()
    assert left == [], left


# --------------------------------------------------------------------------- invisible spaces on DuckDB
INVISIBLE = {"zero-width-space": "\u200b", "word-joiner": "\u2060", "zero-width-no-break-space": "\ufeff"}


@pytest.mark.parametrize("character", sorted(INVISIBLE))
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name, setting FROM pg_settings{c}",
        "SELECT name FROM pg_catalog.pg_settings{c} WHERE name LIKE '%secret%'",
        "SELECT * FROM duckdb_logs{c}",
        "SELECT s.name FROM shops JOIN pg_settings{c} AS s ON 1 = 1",
    ],
    ids=["bare", "qualified", "logs", "join"],
)
def test_an_invisible_space_duckdb_reads_as_white_space_cannot_hide_a_refused_relation(sql, character):
    """DuckDB turns U+200B, U+2060 and U+FEFF into spaces before it parses; sqlglot (Python) reads them as letters of
    a name, so the guard saw a table named ``pg_settings<U+200B>`` while DuckDB read ``pg_settings``."""
    from pytest_sqleval.errors import QueryError
    from pytest_sqleval.sql.guard import check_prediction

    with pytest.raises(QueryError) as caught:
        check_prediction(sql.format(c=INVISIBLE[character]), "duckdb")
    assert caught.value.kind == "rejected"
    assert f"U+{ord(INVISIBLE[character]):04X}" in str(caught.value)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 'a\u200bb' AS v",
        'SELECT 1 AS "a\u200b"',
        "SELECT 1 -- note\u200b\n",
        "SELECT 1 /* \ufeff */",
        "SELECT $$x\u2060$$",
    ],
)
def test_invisible_characters_in_strings_quoted_names_and_comments_stay_allowed_on_duckdb(sql):
    from pytest_sqleval.sql.guard import check_prediction

    check_prediction(sql, "duckdb")


def test_a_prediction_cannot_read_duckdb_settings_through_an_invisible_space_in_a_run(pytester, duckdb_available):
    _duckdb_file(pytester.path / "sub" / "shop.duckdb")
    sql = "SELECT name, setting FROM pg_settings\u200b ORDER BY name"
    _write(
        pytester.path / "z.sqleval.yaml",
        f"""
        database: sub/shop.duckdb
        cases:
          - {{id: leak, gold: "SELECT 'a', 'b'", predicted: "{sql}"}}
          - {{id: after, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops"}}
    """,
    )
    result, cases, _ = _run(pytester, "--sqleval-diff")
    assert cases["leak"]["outcome"] == "missed", cases["leak"]
    assert cases["leak"]["error"]["kind"] == "rejected", cases["leak"]["error"]
    assert "enable_external_access" not in (pytester.path / "r.json").read_text(encoding="utf-8")
    assert "enable_external_access" not in result.stdout.str()
    assert cases["after"]["outcome"] == "passed"


# --------------------------------------------------------------------------- engine messages quoting a huge value
HUGE_VALUE_IN_ERROR = "SELECT repeat('x', 5000000)::int"


def _huge_error_suite(pytester, database: str):
    _write(
        pytester.path / "e.sqleval.yaml",
        f"""
        database: {database}
        cases:
          - {{id: huge, gold: "SELECT name FROM shops", predicted: "{HUGE_VALUE_IN_ERROR}"}}
          - {{id: after, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops"}}
    """,
    )
    result, cases, _ = _run(pytester)
    assert cases["huge"]["outcome"] == "missed"
    message = cases["huge"]["error"]["message"]
    assert cases["huge"]["error"]["kind"] == "runtime", message[:300]
    assert len(message) < 5_000 and message.endswith("more characters)"), (len(message), message[-200:])
    assert (pytester.path / "r.json").stat().st_size < 200_000
    assert len(result.stdout.str()) < 200_000
    assert cases["after"]["outcome"] == "passed"


def test_an_engine_message_quoting_a_huge_value_is_cut_on_postgresql(pytester, postgres_url):
    _write(pytester.path / "shop.sql", SHOP)
    _huge_error_suite(pytester, f'{{url: "{postgres_url}", setup: [shop.sql]}}')


def test_an_engine_message_quoting_a_huge_value_is_cut_on_duckdb(pytester, duckdb_available):
    _duckdb_file(pytester.path / "sub" / "shop.duckdb")
    _huge_error_suite(pytester, "sub/shop.duckdb")


# --------------------------------------------------------------------------- operators with a parenthesised operand
@pytest.mark.parametrize(
    "dialect, sql",
    [
        ("postgres", "SELECT name FROM shops WHERE name LIKE ('A%')"),
        ("postgres", "SELECT name FROM shops WHERE lower(name) NOT ILIKE ('a' || '%')"),
        ("postgres", "SELECT name FROM shops WHERE name ~ ('^A') OR name !~ ('^E')"),
        ("postgres", "SELECT name FROM shops WHERE name ~~ ('A%')"),
        ("postgres", "SELECT now() AT TIME ZONE ('UTC')"),
        ("duckdb", "SELECT name FROM shops WHERE name LIKE ('A%') OR name GLOB ('C*')"),
        ("duckdb", "SELECT name FROM shops WHERE name ILIKE ('a%')"),
    ],
)
def test_an_operator_with_a_parenthesised_operand_is_no_call(dialect, sql):
    from pytest_sqleval.sql.guard import check_prediction

    check_prediction(sql, dialect)


@pytest.mark.parametrize(
    "dialect, sql",
    [
        ("duckdb", "SELECT * FROM glob('/etc/*')"),
        ("duckdb", "SELECT name FROM shops WHERE name GLOB (SELECT file FROM glob('/etc/*'))"),
        ("duckdb", "SELECT glob('/etc/*') LIKE ('x')"),
        ("duckdb", "SELECT 'a' GLOB ('b'), glob('/etc/*')"),
        ("postgres", "SELECT pg_read_file('/etc/passwd') LIKE ('y')"),
        ("postgres", "SELECT 'a' LIKE (pg_read_file('/etc/passwd'))"),
    ],
)
def test_a_real_call_beside_such_an_operator_is_still_checked(dialect, sql):
    from pytest_sqleval.errors import QueryError
    from pytest_sqleval.sql.guard import check_prediction

    with pytest.raises(QueryError) as caught:
        check_prediction(sql, dialect)
    assert caught.value.kind == "rejected"
    assert caught.value.function in ("glob", "pg_read_file")


def test_a_like_with_a_parenthesised_pattern_passes_on_postgresql(pytester, postgres_url):
    _write(pytester.path / "shop.sql", SHOP)
    _write(
        pytester.path / "l.sqleval.yaml",
        f"""
        database: {{url: "{postgres_url}", setup: [shop.sql]}}
        cases:
          - {{id: like, gold: "SELECT name FROM shops WHERE name LIKE 'A%'", predicted: "SELECT name FROM shops WHERE name LIKE ('A' || '%')"}}
          - {{id: regex, gold: "SELECT name FROM shops WHERE id = 3", predicted: "SELECT name FROM shops WHERE name ~ ('^C')"}}
    """,
    )
    result, cases, _ = _run(pytester)
    assert cases["like"]["outcome"] == "passed", cases["like"]
    assert cases["regex"]["outcome"] == "passed", cases["regex"]
