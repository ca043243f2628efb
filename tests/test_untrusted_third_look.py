"""Untrusted predicted SQL, a third look (issues 4 and 7): where the guard and the engine read the same text
differently, and what the engine itself still lets a prediction do.

- **White space only sqlglot reads as white space.** sqlglot ends a token at any character Python's
  ``str.isspace()`` accepts; PostgreSQL reads a non-ASCII one (U+00A0, U+2003, U+3000, ...) as a letter of a name.
  ``SELECT interval<U+00A0>$x$, pg_read_file('/secret') AS b$x$ FROM (...)`` was, to the guard, an INTERVAL of a
  dollar-quoted string; to PostgreSQL, two names around a call of ``pg_read_file``: the file came back in the result.
  ``$<U+00A0>$`` as a dollar-quote tag did the same.
- **PostgreSQL's functional notation.** ``('/secret'::text).pg_read_file`` is the call ``pg_read_file('/secret')``;
  the guard found calls only as a name followed by ``(``. ``(42).pg_advisory_lock`` took a session lock that outlives
  the rolled-back transaction.
- **DuckDB runs every statement of a text**, and a read-only database still takes TEMP views and macros, SET
  VARIABLE and PREPARE, which live on in the query process's connection: a TEMP VIEW named ``tickets`` or a macro
  named ``abs`` changed every later query's result (the golds of other cases). SQLite and PostgreSQL refuse a second
  statement themselves; DuckDB now runs only one statement, and only a query.

Each attack is refused with kind ``rejected`` and a reason, on a real SQLite file, a real DuckDB file and a
PostgreSQL database the user points at (a superuser URL, the worst case the README warns about); nothing leaks, the
files stay byte-identical, the next query still gives the right answer; through ``pytest --sqleval``, serial and
``-n 2``, every case is scored and the run goes on.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from conftest import SHOP_SQL
from pytest_sqleval.errors import QueryError
from pytest_sqleval.execution.engines import EngineFactory
from pytest_sqleval.execution.runner import run_query
from pytest_sqleval.sql.guard import check_prediction
from pytest_sqleval.suite import DatabaseSpec
from test_untrusted_second_look import _digest, run_leaving_folder_untouched

pytest_plugins = ["pytester"]

TIMEOUT = 2.0
WALL_SLACK = 1.0
MAX_ROWS = 1000
MAX_MEMORY = 256 * 2**20
SECRET = "third-look-secret-7c41e0"
LOCK_KEY = 730_041

#: Characters Python calls white space and PostgreSQL does not (a letter of a name, or an error).
ODD_SPACES = ["\u00a0", "\u2003", "\u3000", "\u202f", "\u1680", "\u0085", "\u2028", "\x1c", "\x1f"]


def _hidden_by_white_space(space: str, call: str) -> list[str]:
    """Texts where sqlglot reads ``call`` as the inside of a dollar-quoted string, and PostgreSQL as code."""
    return [
        # `interval<sp>$x$` is one name to PostgreSQL, INTERVAL '...' to sqlglot
        f'SELECT interval{space}$x$, {call} AS b$x$ FROM (SELECT 1 AS "interval{space}$x$") s',
        # `$<sp>$` is a dollar-quote tag to PostgreSQL, not to sqlglot
        f"SELECT ${space}$ $x$ ${space}$, {call} --$x$",
        f"SELECT $a{space}$ $x$ $a{space}$, {call} --$x$",
    ]


def _functional_notation(path: str) -> list[str]:
    """``(value).function``: PostgreSQL calls ``function(value)``."""
    return [
        f"SELECT ('{path}'::text).pg_read_file",
        f"SELECT ('{path}').pg_read_file",
        f"SELECT ((('{path}'))).pg_read_file",
        f"SELECT (ARRAY['{path}'])[1].pg_read_file",
        f"SELECT ('{path}').\"pg_read_file\"",
        f"SELECT ('{path}').PG_READ_FILE",
        f"SELECT ('{path}') . pg_read_file",
        f"SELECT ('{path}')./**/pg_read_file",
        f"SELECT length(('{path}').pg_read_file)",
        f"SELECT (t).pg_read_file FROM (VALUES ('{path}')) v(t)",
        f"SELECT id FROM tickets WHERE ('{path}').pg_read_file IS NOT NULL",
        f"WITH c AS (SELECT ('{path}').pg_read_file AS f) SELECT * FROM c",
    ]


# --------------------------------------------------------------------------- the guard alone
@pytest.mark.parametrize("space", ODD_SPACES, ids=[f"U+{ord(s):04X}" for s in ODD_SPACES])
def test_white_space_the_engine_reads_as_a_name_is_refused(space):
    dialect = "postgres"
    for sql in _hidden_by_white_space(space, "zzhidden(1)") + [f"SELECT{space}1", f"SELECT id FROM tickets WHERE{space}id = 1"]:
        with pytest.raises(QueryError) as caught:
            check_prediction(sql, dialect)
        assert caught.value.kind == "rejected", (sql, caught.value.message)
        if "zzhidden" not in caught.value.message:  # (sqlglot may see the call too; then that is the reason)
            assert f"U+{ord(space):04X}" in caught.value.message and "plain spaces" in caught.value.message
    with pytest.raises(QueryError) as caught:  # what sqlglot cannot parse at all stays a syntax error
        check_prediction(f"SELECT 1 AS a{space}b", dialect)
    assert caught.value.kind in ("rejected", "syntax")


@pytest.mark.parametrize("space", ["\u00a0", "\u3000"], ids=["U+00A0", "U+3000"])
def test_a_sqlite_suite_run_on_postgres_is_refused_as_postgres_reads_it(space):
    from pytest_sqleval.execution.runner import prepare_sql

    for sql in _hidden_by_white_space(space, "zzhidden(1)"):
        with pytest.raises(QueryError) as caught:
            prepare_sql(sql, "sqlite", untrusted=True, engine_dialect="postgres")
        assert caught.value.kind in ("rejected", "syntax"), caught.value.message  # (sqlglot's SQLite may not parse it)


@pytest.mark.parametrize("sql", [
    "SELECT 'a\u00a0b' AS x",                           # in a string
    'SELECT 1 AS "a\u00a0b"',                            # in a quoted name
    "SELECT 1 -- a\u00a0b\n",                            # in a line comment
    "SELECT 1 /* a\u3000b /* c\u00a0 */ */",             # in a nested block comment
    "SELECT $x$ a\u00a0b $x$",                           # in a dollar-quoted string
])
def test_odd_white_space_inside_strings_names_and_comments_is_text(sql):
    check_prediction(sql, "postgres")


@pytest.mark.parametrize("sql", [
    "SELECT 1 " + "/* \u00a0 */ " * 18_000,     # many comments in one stretch between two tokens
    "SELECT 1 /* " + "\u00a0" * 190_000 + " */",
])
def test_the_white_space_check_stays_linear(sql):
    """The guard's own time counts against the query's timeout: 18,000 comments holding a no-break space took
    55 s when each one was looked up among all the others."""
    started = time.monotonic()
    check_prediction(sql, "postgres")
    assert time.monotonic() - started < 10


def test_duckdb_and_sqlite_keep_reading_unicode_white_space_as_they_did():
    """DuckDB turns Unicode spaces into spaces before it parses, as sqlglot reads them; SQLite reads them as letters
    of a name, but has no dollar quotes they could open, and the reproduction profiles run such text as sqlite3
    does (`SELECT name AS<U+00A0>n` is a valid query there)."""
    check_prediction("SELECT\u00a01 AS\u3000x", "duckdb")
    check_prediction("SELECT name AS\u00a0n FROM shops", "sqlite")


@pytest.mark.parametrize("sql", _functional_notation("/etc/hostname") + [
    "SELECT (1).pg_sleep",
    "SELECT (42).pg_advisory_lock",
    "SELECT (42).pg_try_advisory_lock",
    "SELECT (0).pg_cancel_backend",
    "SELECT ('x').pg_catalog.pg_read_file",
    # a cast to a built-in type is no row: its `.name` is a call (sqlglot reads these types as user-defined)
    "SELECT ('/etc/hostname'::pg_catalog.text).pg_read_file",
    "SELECT ('/etc/hostname'::\"pg_catalog\".\"text\").pg_read_file",
    "SELECT ('/etc/hostname'::sql_identifier).pg_read_file",
    "SELECT ('/etc/hostname'::information_schema.sql_identifier).pg_read_file",
    "SELECT ('/etc/hostname'::\"char\").pg_read_file",
    "SELECT ('/etc/hostname'::name).pg_read_file",
    "SELECT ((ARRAY['/etc/hostname']::_text))[1].pg_read_file",
])
def test_postgres_functional_notation_is_a_call(sql):
    with pytest.raises(QueryError) as caught:
        check_prediction(sql, "postgres")
    assert caught.value.kind == "rejected"
    assert "allowlist" in caught.value.message and "(...)." in caught.value.message, caught.value.message


@pytest.mark.parametrize("sql", [
    "SELECT ('abc').upper",            # a pure function: allowed by notation as by call
    "SELECT (t).* FROM tickets t",     # every field of a row
    "SELECT t.id FROM tickets t",      # a column, not a field of a value
    "SELECT (NULL::tickets).id",       # a field of a table's row type (the database's own type)
    "SELECT (CAST(NULL AS public.tickets)).id",
])
def test_postgres_field_selection_of_pure_names_still_passes(sql):
    check_prediction(sql, "postgres")


def test_postgres_field_of_a_value_must_be_a_pure_function_name_or_allowed():
    """`(t).id` is a field when t has one and a call id(t) when it has not: the guard cannot know which (it does
    not read the schema), so the name must be one it could call, or one the suite allows."""
    with pytest.raises(QueryError) as caught:
        check_prediction("SELECT (t).id FROM tickets t", "postgres")
    assert caught.value.kind == "rejected" and "allow_functions: [id]" in caught.value.message
    check_prediction("SELECT (t).id FROM tickets t", "postgres", allow_functions={"id"})


def test_functional_notation_is_postgres_only():
    """DuckDB reads `(x).name` as a struct field, never a call."""
    check_prediction("SELECT (s).a FROM (SELECT {'a': 1} AS s)", "duckdb")


@pytest.mark.parametrize("sql", [
    "SELECT txid_current()", "SELECT setval('s', 1)", "SELECT currval('s')", "SELECT lastval()",
    "SELECT pg_try_advisory_xact_lock(1)", "SELECT pg_export_snapshot()", "SELECT pg_create_restore_point('x')",
    "SELECT pg_log_backend_memory_contexts(1)", "SELECT pg_promote()", "SELECT lo_get(1)",
    "SELECT pg_current_logfile()", "SELECT pg_ls_waldir()", "SELECT * FROM pg_stat_activity",
    "SELECT * FROM pg_config", "SELECT * FROM pg_backend_memory_contexts", "SELECT has_function_privilege('x', 'y')",
])
def test_postgres_server_state_functions_are_refused(sql):
    with pytest.raises(QueryError) as caught:
        check_prediction(sql, "postgres")
    assert caught.value.kind == "rejected", caught.value.message


# --------------------------------------------------------------------------- real engines
@pytest.fixture(scope="module")
def planted():
    """A folder the PostgreSQL server's own OS user can read (pytest's temporary folders are private to root),
    holding the secret and the user's SQLite and DuckDB files."""
    folder = Path(tempfile.mkdtemp(prefix="sqleval-third-look-"))
    os.chmod(folder, 0o755)
    secret = folder / "secret.txt"
    secret.write_text(f"{SECRET}\n")
    os.chmod(secret, 0o644)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _make_files(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    sqlite_path, duckdb_path = folder / "shop.sqlite", folder / "shop.duckdb"
    with sqlite3.connect(sqlite_path) as conn:
        conn.executescript(SHOP_SQL)
    conn.close()
    import duckdb

    conn = duckdb.connect(str(duckdb_path))
    for statement in SHOP_SQL.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.close()
    return {"sqlite": sqlite_path, "duckdb": duckdb_path}


@pytest.fixture(scope="module")
def user_postgres(request):
    """A PostgreSQL database the user points at (no setup scripts: no SELECT-only role, the superuser's session)."""
    import psycopg
    from sqlalchemy.engine import make_url

    url = request.getfixturevalue("postgres_url")
    name = f"third_look_{uuid.uuid4().hex[:10]}"
    admin_url = make_url(url)
    dsn = dict(host=admin_url.host, port=admin_url.port, user=admin_url.username, password=admin_url.password)
    with psycopg.connect(**dsn, dbname=admin_url.database, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    with psycopg.connect(**dsn, dbname=name, autocommit=True) as conn:
        conn.execute(SHOP_SQL)
    yield admin_url.set(database=name).render_as_string(hide_password=False), dsn, name
    with psycopg.connect(**dsn, dbname=admin_url.database, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def engines(tmp_path_factory, planted, user_postgres, request):
    request.getfixturevalue("duckdb_available")
    files = _make_files(planted / "db")
    factory = EngineFactory(build_dir=tmp_path_factory.mktemp("third-look-build"), worker="third")
    built = {
        "sqlite": factory.engine(DatabaseSpec(f"sqlite:///{files['sqlite']}")),
        "duckdb": factory.engine(DatabaseSpec(f"duckdb:///{files['duckdb']}")),
        "postgresql": factory.engine(DatabaseSpec(user_postgres[0])),
    }
    for engine in built.values():  # the query process opens each engine once, before the timed queries
        run_query(engine, "SELECT 1", timeout=30, max_rows=10, max_memory=MAX_MEMORY)
    yield built
    factory.close()


def _run(engine, sql, *, untrusted=True, max_memory=MAX_MEMORY):
    started = time.monotonic()
    try:
        result = run_query(engine, sql, timeout=TIMEOUT, max_rows=MAX_ROWS, untrusted=untrusted, max_memory=max_memory)
        kind, shown = "ok", repr(result.rows[:5])
    except QueryError as exc:
        kind, shown = exc.kind, exc.message
    assert time.monotonic() - started <= TIMEOUT + WALL_SLACK
    return kind, shown


def _postgres_attacks(planted: Path) -> list[str]:
    secret = str(planted / "secret.txt")
    call = f"pg_read_file('{secret}')"
    hidden = [sql for space in ("\u00a0", "\u3000", "\u2003") for sql in _hidden_by_white_space(space, call)]
    return hidden + _functional_notation(secret)


def test_the_secret_is_readable_by_the_server_so_the_attacks_mean_something(user_postgres, planted):
    """The server really can read the planted file (so a refusal below is the guard's, not a permission error)."""
    import psycopg

    _url, dsn, name = user_postgres
    with psycopg.connect(**dsn, dbname=name) as conn:
        assert SECRET in conn.execute("SELECT pg_read_file(%s)", (str(planted / "secret.txt"),)).fetchone()[0]


def test_postgres_hidden_calls_are_refused_on_the_users_database(engines, planted):
    engine = engines["postgresql"]
    for sql in _postgres_attacks(planted):
        kind, shown = _run(engine, sql)
        assert kind == "rejected", (sql, kind, shown)
        assert SECRET not in shown
    assert _run(engine, "SELECT count(*) FROM tickets")[1] == "[(6,)]"


def test_functional_notation_takes_no_advisory_lock(engines, user_postgres):
    import psycopg

    _url, dsn, name = user_postgres
    for sql in (f"SELECT ({LOCK_KEY}).pg_advisory_lock", f"SELECT ({LOCK_KEY}).pg_advisory_lock_shared",
                f"SELECT ({LOCK_KEY}).pg_try_advisory_lock"):
        assert _run(engines["postgresql"], sql)[0] == "rejected", sql
    with psycopg.connect(**dsn, dbname=name) as conn:
        held = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s",
                            (LOCK_KEY,)).fetchone()[0]
    assert held == 0


@pytest.mark.parametrize("engine_name", ["postgresql", "sqlite", "duckdb"])
def test_legitimate_queries_with_odd_white_space_in_text_still_run(engines, engine_name):
    sql = "SELECT 'a\u00a0b' AS x /* c\u3000d */ FROM tickets WHERE id = 1 -- e\u00a0f"
    assert _run(engines[engine_name], sql) == ("ok", repr([("a\u00a0b",)]))


def test_postgres_pure_function_and_row_field_by_notation_still_run(engines):
    assert _run(engines["postgresql"], "SELECT ('abc').upper") == ("ok", "[('ABC',)]")
    assert _run(engines["postgresql"], "SELECT (ROW(7, 1, 'x', 1.0, 'open')::tickets).id") == ("ok", "[(7,)]")


#: Statements sent past the guard (as if it had a gap) that a read-only DuckDB database still runs, and whose
#: effect would live on in the query process's connection.
DUCKDB_STATE = [
    "CREATE TEMP VIEW tickets AS SELECT 42 AS id",
    "CREATE TEMP MACRO abs(x) AS 99",
    "CREATE OR REPLACE TEMP MACRO lower(x) AS 'pwned'",
    "CREATE TEMP TABLE pwned AS SELECT 1 AS a",
    "CREATE TEMP SEQUENCE pwned_seq",
    "SET VARIABLE pwned = 1",
    "PREPARE pwned AS SELECT 1",
    "EXPLAIN ANALYZE CREATE TEMP VIEW shops AS SELECT 1 AS id",
    "SELECT 1; CREATE TEMP VIEW shops AS SELECT 1 AS id",
    "SELECT 1 /* */; CREATE TEMP MACRO upper(x) AS 'pwned'",
    "SELECT E'\\''; CREATE TEMP VIEW tickets AS SELECT 1 AS id; --'",
    "SELECT $a$ x $a$; SET VARIABLE pwned = 2",
]


def test_duckdb_runs_only_one_query_even_past_the_guard(engines, planted):
    engine = engines["duckdb"]
    before = _digest(planted / "db")
    for sql in DUCKDB_STATE:
        kind, shown = _run(engine, sql, untrusted=False)
        assert kind == "rejected", (sql, kind, shown)
        assert "statement" in shown, shown
    # nothing lives on in the connection the next queries (the golds) run on
    checks = [
        ("SELECT count(*) FROM tickets", "[(6,)]"),
        ("SELECT count(*) FROM shops", "[(3,)]"),
        ("SELECT abs(-1), lower('A'), upper('a')", "[(1, 'a', 'A')]"),
        ("SELECT count(*) FROM duckdb_views() WHERE NOT internal", "[(0,)]"),
        ("SELECT count(*) FROM duckdb_tables() WHERE temporary", "[(0,)]"),
        ("SELECT count(*) FROM duckdb_functions() WHERE function_type = 'macro' AND NOT internal", "[(0,)]"),
        ("SELECT count(*) FROM duckdb_sequences()", "[(0,)]"),
        ("SELECT count(*) FROM duckdb_variables()", "[(0,)]"),
        ("SELECT count(*) FROM duckdb_prepared_statements()", "[(0,)]"),
    ]
    for sql, expected in checks:
        assert _run(engine, sql, untrusted=False) == ("ok", expected), sql
    assert _digest(planted / "db") == before


def test_duckdb_still_runs_a_pivot_and_a_describe_as_gold(engines):
    """A PIVOT statement is one statement DuckDB runs as two (an enum type of its own, then the query)."""
    pivot = "PIVOT (SELECT id, shop_id FROM tickets WHERE id < 3) ON shop_id USING count(*) ORDER BY id"
    # under the module's 256 MiB cap (DuckDB's idle I/O threads no longer eat it: tests/test_limits_fourth_look.py)
    assert _run(engines["duckdb"], pivot, untrusted=False) == ("ok", "[(1, 1), (2, 1)]")
    kind, shown = _run(engines["duckdb"], "DESCRIBE shops", untrusted=False)
    assert kind == "ok" and "'name'" in shown


# --------------------------------------------------------------------------- one run, as a user runs it
def _suite(path: Path, database: str, cases: list[tuple[str, str]]) -> None:
    lines = [f"database: {json.dumps(database)}", f"timeout: {TIMEOUT:g}", "max_memory: 256MiB", "cases:"]
    for case_id, sql in cases:
        lines += [f"  - id: {case_id}", "    gold: SELECT 1", f"    predicted: {json.dumps(sql)}"]
    lines.append("  - {id: still-fine, gold: 'SELECT count(*) FROM tickets', predicted: 'SELECT count(*) FROM tickets'}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_attacks_as_one_run_on_the_users_databases(pytester, planted, user_postgres, request, xdist):
    request.getfixturevalue("duckdb_available")
    folder = planted / f"run-{uuid.uuid4().hex[:8]}"
    files = _make_files(folder)
    attacks = {
        "postgresql": _postgres_attacks(planted) + [f"SELECT ({LOCK_KEY}).pg_advisory_lock"],
        # SQLite reads these spaces as letters of a name: the engine refuses the text (syntax)
        "sqlite": [f"SELECT{space}count(*) FROM tickets" for space in ("\u00a0", "\u3000", "\x1c")],
        # DuckDB reads these texts as sqlglot does; each is more than one statement, refused before the engine
        "duckdb": [sql.replace("SELECT 1", "SELECT count(*) FROM tickets", 1) for sql in DUCKDB_STATE
                   if ";" in sql],
    }
    databases = {"sqlite": str(files["sqlite"]), "duckdb": str(files["duckdb"]), "postgresql": user_postgres[0]}
    for engine_name, sqls in attacks.items():
        _suite(pytester.path / f"{engine_name}.sqleval.yaml", databases[engine_name],
               [(f"a{n:02d}", sql) for n, sql in enumerate(sqls)])
    result, output, cases = run_leaving_folder_untouched(pytester, folder, xdist, SECRET)
    assert len(cases) == sum(len(sqls) + 1 for sqls in attacks.values())
    for case in cases:
        if case["id"] == "still-fine":
            assert case["outcome"] == "passed", case
            continue
        assert case["outcome"] == "missed", (case["suite"], case["id"], case["outcome"], case.get("error"))
        # SQLite's own parser cannot read those texts either: a typo to it (syntax), refused all the same
        kinds = ("rejected", "syntax") if case["suite"] == "sqlite" else ("rejected",)
        assert case["error"]["kind"] in kinds, (case["suite"], case["id"], case["error"])
        assert case["error"]["message"].strip()
    assert result.ret == 0, output[-3000:]
