"""Query execution limits, a fourth look: the limit errors each engine reports, and what the limits cost.

- **PostgreSQL's own limits** were kind ``runtime``: a query nested deeper than the server's stack
  (``stack depth limit exceeded``, SQLSTATE 54001: a 60,000-term sum, a deeply nested JSON value), a value over a
  fixed limit (54000: ``array size exceeds the maximum allowed``), one allocation over 1 GB (XX000 from the server's
  memory contexts), and a result too large for the query process's memory cap (libpq: ``out of memory for query
  result``). They are kind ``memory`` now, as SQLite's and DuckDB's memory errors are, each naming the limit; one the
  server's configuration sets (``temp_file_limit``, 53400) no longer tells the user to raise ``--sqleval-max-memory``.
- **The guard's "nested too deeply"** was recognised by its text: a refused prediction whose reason happened to say
  so (a file named ``nested too deeply.csv``) was kept ``rejected`` where the same text with another file name was
  ``syntax``. It is recognised by its type now.
- **DuckDB under a user's ``max_memory``** starts 8 I/O threads per database it opens; their stacks count in the
  query process's ``RLIMIT_DATA``, so a long-lived query process under 256 MiB could not open a fourth DuckDB file
  (nor run a PIVOT gold there). DuckDB now runs without I/O threads there, and a database that cannot be opened
  first closes those opened for earlier queries.
- **A failing DuckDB build** ran the scripts once more on the file, statement by statement, each committing on its
  own (seconds for a few thousand INSERTs) only to fail again; it now finds the failure in memory.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path

import pytest

from conftest import SHOP_SQL, require_module
from pytest_sqleval.errors import DatabaseError, QueryError
from pytest_sqleval.execution.engines import EngineFactory
from pytest_sqleval.execution.runner import run_query
from pytest_sqleval.execution.sandbox import process_sandbox
from pytest_sqleval.suite import DatabaseSpec

pytest_plugins = ["pytester"]

TIMEOUT = 20.0
MAX_ROWS = 1000
MAX_MEMORY = 256 * 2**20
PLUGIN_CAP_ADVICE = "raise it with --sqleval-max-memory"


# --------------------------------------------------------------------------- databases
def _admin(url: str):
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    return dict(host=parsed.host, port=parsed.port, user=parsed.username, password=parsed.password), parsed


@pytest.fixture(scope="module")
def pg_database(request):
    """A PostgreSQL database of the shop the user points at, and one whose sessions have ``temp_file_limit = 1MB``
    (as a DBA would set for an evaluation role); both dropped at the end."""
    import psycopg

    url = request.getfixturevalue("postgres_url")
    dsn, parsed = _admin(url)
    names = {"shop": f"limits4_{uuid.uuid4().hex[:10]}", "temp": f"limits4_tmp_{uuid.uuid4().hex[:8]}"}
    with psycopg.connect(**dsn, dbname=parsed.database, autocommit=True) as admin:
        for name in names.values():
            admin.execute(f'CREATE DATABASE "{name}"')
        admin.execute(f"""ALTER DATABASE "{names['temp']}" SET temp_file_limit = '1MB'""")
    for name in names.values():
        with psycopg.connect(**dsn, dbname=name, autocommit=True) as conn:
            conn.execute(SHOP_SQL)
    yield {key: parsed.set(database=name).render_as_string(hide_password=False) for key, name in names.items()}
    with psycopg.connect(**dsn, dbname=parsed.database, autocommit=True) as admin:
        for name in names.values():
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def factory(tmp_path_factory):
    made = EngineFactory(build_dir=tmp_path_factory.mktemp("limits4-build"), worker="limits4")
    yield made
    made.close()


def _duckdb_file(path: Path) -> Path:
    duckdb = require_module("duckdb")
    conn = duckdb.connect(str(path))
    for statement in SHOP_SQL.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.close()
    return path


def _sqlite_file(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.executescript(SHOP_SQL)
    conn.close()
    return path


def _run(engine, sql: str, *, untrusted: bool = True, max_memory: int = MAX_MEMORY) -> tuple[str, str]:
    try:
        result = run_query(engine, sql, timeout=TIMEOUT, max_rows=MAX_ROWS, untrusted=untrusted, max_memory=max_memory)
    except QueryError as exc:
        return exc.kind, exc.message
    return "ok", repr(result.rows[:5])


# --------------------------------------------------------------------------- 1. PostgreSQL's limit errors
DEEP_SUM = "SELECT " + "+".join(["1"] * 60_000)  # 120,000 characters: deeper than the server's 2 MB stack

SERVER_LIMITS = [
    # (id, sql, untrusted, words the reason must hold)
    ("stack-depth-expression", DEEP_SUM, False, "max_stack_depth"),
    ("stack-depth-json", "SELECT repeat('[', 200000)::jsonb", True, "max_stack_depth"),
    ("array-size", "SELECT array_fill(1, ARRAY[200000000, 10])", True, "fixed limit of PostgreSQL"),
    ("value-length", "SELECT repeat('x', 2000000000)", True, "fixed limit of PostgreSQL"),
    ("one-allocation-over-1-GB", "SELECT array_fill(1::bigint, ARRAY[134217727])", True, "over 1 GB"),
]


@pytest.mark.parametrize("case_id, sql, untrusted, words", SERVER_LIMITS, ids=[c[0] for c in SERVER_LIMITS])
def test_a_postgres_server_limit_is_kind_memory_naming_the_limit(factory, pg_database, case_id, sql, untrusted, words):
    engine = factory.engine(DatabaseSpec(pg_database["shop"]))
    kind, message = _run(engine, sql, untrusted=untrusted)
    assert kind == "memory", (case_id, kind, message)
    assert words in message, message
    # the server's limit: the plugin's cap is not what to raise
    assert PLUGIN_CAP_ADVICE not in message and "--sqleval-max-memory does not change it" in message
    assert _run(engine, "SELECT count(*) FROM tickets") == ("ok", "[(6,)]")  # the session goes on


def test_postgres_temp_file_limit_names_the_servers_setting_not_the_plugins_cap(factory, pg_database):
    """temp_file_limit (SQLSTATE 53400) is a setting of the server: it was `memory` already, but told the user to
    raise --sqleval-max-memory, which changes nothing on the server."""
    engine = factory.engine(DatabaseSpec(pg_database["temp"]))
    kind, message = _run(engine, "SELECT count(*) FROM generate_series(1, 3000000)")
    assert kind == "memory", message
    assert "temp_file_limit" in message and "setting of the server" in message
    assert PLUGIN_CAP_ADVICE not in message
    assert _run(engine, "SELECT count(*) FROM generate_series(1, 1000)") == ("ok", "[(1000,)]")


def test_a_postgres_result_over_the_query_process_cap_is_memory_and_the_next_query_runs(factory, pg_database):
    """400 rows of 1 MB under a 256 MiB cap: libpq cannot allocate the result in the query process (no SQLSTATE:
    the server never saw the failure). It was `runtime` ("out of memory for query result"); the plugin's cap is
    the one to raise, and the message says so."""
    engine = factory.engine(DatabaseSpec(pg_database["shop"]))
    for sql in ("SELECT g, repeat('x', 1000000) FROM generate_series(1, 400) g",
                "SELECT repeat('x', 300000000)"):
        kind, message = _run(engine, sql)
        assert kind == "memory", (sql, kind, message)
        assert PLUGIN_CAP_ADVICE in message, message
        assert _run(engine, "SELECT count(*) FROM tickets") == ("ok", "[(6,)]")  # the lost connection is replaced


@pytest.mark.parametrize("sql, kind", [
    ("SELECT 1 / (id - id) FROM tickets", "runtime"),
    ("SELECT CAST('x' AS integer)", "runtime"),
    ("SELECT nosuch FROM tickets", "syntax"),
    ("SELECT " + ", ".join(f"{n} AS c{n}" for n in range(1700)), "syntax"),  # 54011: over 1,664 columns
])
def test_postgres_errors_that_are_no_limit_keep_their_kind(factory, pg_database, sql, kind):
    engine = factory.engine(DatabaseSpec(pg_database["shop"]))
    assert _run(engine, sql)[0] == kind


def test_postgres_limit_misses_are_counted_as_memory_in_a_run(pytester, pg_database):
    lines = [f"database: {json.dumps(pg_database['shop'])}", "max_memory: 256MiB", "cases:",
             "  - {id: json, gold: SELECT 1, predicted: \"SELECT repeat('[', 200000)::jsonb\"}",
             "  - {id: array, gold: SELECT 1, predicted: 'SELECT array_fill(1, ARRAY[200000000, 10])'}",
             "  - {id: fine, gold: 'SELECT count(*) FROM tickets', predicted: 'SELECT count(*) FROM tickets'}"]
    (pytester.path / "limits.sqleval.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json", timeout=300)
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    by_id = {case["id"]: case for case in report["cases"]}
    assert by_id["fine"]["outcome"] == "passed"
    for case_id in ("json", "array"):
        assert by_id[case_id]["outcome"] == "missed"
        assert by_id[case_id]["error"]["kind"] == "memory", by_id[case_id]["error"]
    assert "errors_by_kind" in json.dumps(report) and '"memory": 2' in json.dumps(report)
    assert result.ret == 0


# --------------------------------------------------------------------------- 2. "nested too deeply" by type
def test_a_refusal_that_mentions_nesting_is_still_asked_of_the_engines_parser(tmp_path, factory, duckdb_available):
    """`foo UNION SELECT * FROM '<file>'`: the guard refuses the file read, and the text starts with an unknown word,
    so the engine's own parser tells a typo (syntax). The file's name must not change the verdict."""
    engines = {"duckdb": factory.engine(DatabaseSpec(f"duckdb:///{_duckdb_file(tmp_path / 'nest.duckdb')}")),
               "sqlite": factory.engine(DatabaseSpec(f"sqlite:///{_sqlite_file(tmp_path / 'nest.sqlite')}"))}
    for name, engine in engines.items():
        plain = _run(engine, "foo UNION SELECT * FROM 'plain.csv'")
        named = _run(engine, "foo UNION SELECT * FROM 'nested too deeply.csv'")
        assert plain[0] == "syntax", (name, plain)
        assert named[0] == plain[0], (name, named)


def test_a_prediction_nested_too_deeply_is_refused_by_the_guards_error_type(tmp_path, factory):
    from pytest_sqleval.sql.guard import NestedTooDeeply, check_prediction

    deep = "FOO " + "(" * 400 + "1" + ")" * 400  # an unknown first word too: the engine's parser is not asked
    with pytest.raises(NestedTooDeeply) as refused:
        check_prediction(deep, "sqlite")
    assert refused.value.kind == "rejected"
    engine = factory.engine(DatabaseSpec(f"sqlite:///{_sqlite_file(tmp_path / 'deep.sqlite')}"))
    assert _run(engine, deep) == ("rejected", "the query is nested too deeply to check")
    assert _run(engine, "SELECT " + "(" * 400 + "1" + ")" * 400) == ("rejected", "the query is nested too deeply to check")


# --------------------------------------------------------------------------- 3. DuckDB under max_memory
PIVOT = "PIVOT (SELECT id, shop_id FROM tickets WHERE id < 3) ON shop_id USING count(*) ORDER BY id"


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))


def test_a_query_process_that_opened_many_duckdb_files_still_runs_a_pivot_gold_under_256_mib(tmp_path, factory,
                                                                                          duckdb_available):
    """One query process (the one every query of this cap goes to) runs queries on six DuckDB files, then a PIVOT
    gold: before, the fourth file could not be opened ("Allocation failure": 8 idle I/O thread stacks per file)."""
    engines = [factory.engine(DatabaseSpec(f"duckdb:///{_duckdb_file(tmp_path / f'many{n}.duckdb')}"))
               for n in range(6)]
    assert _run(engines[0], "SELECT count(*) FROM tickets", untrusted=False) == ("ok", "[(6,)]")
    pid = process_sandbox().pid
    threads = _threads(pid)
    for engine in engines[1:]:
        assert _run(engine, "SELECT count(*) FROM tickets", untrusted=False) == ("ok", "[(6,)]")
        assert _run(engine, PIVOT, untrusted=False) == ("ok", "[(1, 1), (2, 1)]")
    assert process_sandbox().pid == pid  # the same, long-lived query process
    assert _threads(pid) - threads < 5, "opening a DuckDB file starts threads in the query process"


def test_duckdb_in_the_query_process_has_its_memory_cap_and_no_io_threads(tmp_path, factory, duckdb_available):
    engine = factory.engine(DatabaseSpec(f"duckdb:///{_duckdb_file(tmp_path / 'settings.duckdb')}"))
    sql = ("SELECT current_setting('memory_limit'), current_setting('threads'), current_setting('async_threads')")
    kind, shown = _run(engine, sql, untrusted=False)
    assert kind == "ok", shown
    assert "'128.0 MiB', 1, 0" in shown


# --------------------------------------------------------------------------- 4. a failing DuckDB build
def test_a_failing_duckdb_build_is_reported_without_running_the_script_statement_by_statement_on_a_file(
        tmp_path, factory, duckdb_available):
    """2,000 single-row INSERTs and a bad last statement. Before, the build ran them as written on the file (each
    commits on its own) before reporting: longer than that file run alone. Now the failure, with its line, comes
    from memory."""
    import duckdb

    inserts = [f"INSERT INTO t VALUES ({n}, 'v{n}');" for n in range(2000)]
    script = tmp_path / "bad.sql"
    script.write_text("\n".join(["CREATE TABLE t (a INTEGER, b VARCHAR);", *inserts, "INSERT INTO nosuch VALUES (1);"]),
                      encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(DatabaseError) as failed:
        factory.engine(DatabaseSpec("duckdb://", setup=(script,)))
    build_seconds = time.monotonic() - started
    message = str(failed.value)
    assert "bad.sql" in message and "nosuch" in message and "(line 2002: INSERT INTO nosuch VALUES (1);)" in message
    # what the old build paid on top of its other attempts: the same statements, as written, on a file
    conn = duckdb.connect(str(tmp_path / "as-written.duckdb"))
    started = time.monotonic()
    conn.execute("CREATE TABLE t (a INTEGER, b VARCHAR);\n" + "\n".join(inserts))
    as_written_seconds = time.monotonic() - started
    conn.close()
    assert build_seconds < as_written_seconds, (build_seconds, as_written_seconds)
    assert not list(tmp_path.glob("*.partial*")), "a failed build leaves no partial file"


def test_a_script_that_needs_its_own_transaction_still_builds_on_duckdb(tmp_path, factory, duckdb_available):
    """The attempts after the first remain for scripts the one-transaction wrapper breaks (their own BEGIN)."""
    script = tmp_path / "own.sql"
    script.write_text("BEGIN;\nCREATE TABLE t (a INTEGER);\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (2);\n"
                      "COMMIT;\n", encoding="utf-8")
    engine = factory.engine(DatabaseSpec("duckdb://", setup=(script,)))
    assert _run(engine, "SELECT sum(a) FROM t") == ("ok", "[(3,)]")
