"""Run one query with a timeout that really interrupts the engine and a row cap.

``run_query`` returns a :class:`~pytest_sqleval.results.QueryResult` or raises
:class:`~pytest_sqleval.errors.QueryError` with a kind:

- ``rejected``: refused by the guard (not a single read-only query) or by the
  engine's own read-only/authorisation checks;
- ``syntax``: does not parse, or the engine refuses to compile it (unknown
  table/column/function, grammar errors);
- ``runtime``: failed while running;
- ``timeout``: interrupted after ``timeout`` seconds (SQLite progress handler,
  DuckDB ``interrupt()``, PostgreSQL ``statement_timeout``);
- ``row_limit``: more than ``max_rows`` rows (at most ``max_rows + 1`` are fetched).

Untrusted SQL goes through :func:`pytest_sqleval.sql.guard.check_prediction`
first; gold SQL (``untrusted=False``) skips the guard but runs on the same
read-only connections with the same limits.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

from ..errors import QueryError
from ..results import QueryResult
from ..sql.guard import check_prediction

#: PostgreSQL memory per sort/hash operation of an untrusted query (the server's side of the memory cap).
POSTGRES_WORK_MEM = "64MB"

#: SQLite virtual-machine instructions between two timeout checks.
SQLITE_PROGRESS_STEPS = 1000

SQLGLOT_DIALECTS = {
    "sqlite": "sqlite",
    "duckdb": "duckdb",
    "postgresql": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "mssql": "tsql",
    "oracle": "oracle",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "trino": "trino",
    "redshift": "redshift",
    "clickhouse": "clickhouse",
    "databricks": "databricks",
}


def sqlglot_dialect(engine_dialect: str) -> str:
    """The sqlglot dialect that reads SQL written for a SQLAlchemy backend."""
    return SQLGLOT_DIALECTS.get(engine_dialect, engine_dialect)


#: Defaults for ``run_query`` calls that give no limits (the plugin always passes its settings).
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ROWS = 100_000


def run_query(engine, sql: str, *, timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS,
              untrusted: bool = True, dialect: str | None = None, rewrite: str | None = None,
              allow_functions: frozenset[str] | set[str] = frozenset(), max_memory: int | None = None,
              role: str | None = None) -> QueryResult:
    """Run one query under every limit; raises QueryError(kind) for anything but a result.

    Untrusted SQL is guarded first. ``rewrite="strip_distinct"`` applies the profile's rewrite (guarded
    again). The reproduction profiles' rewrites (:mod:`pytest_sqleval.sql.statements`) keep only the statement
    the official evaluator runs: ``"official_distinct"`` (test-suite: sqlparse's first statement, DISTINCT
    tokens cut from the text) and ``"sqlite3_statement"`` (BIRD: Python sqlite3's one-statement rule); a text
    with no statement returns an empty result without running. The guard, the rewrite and the query run in the process's killable query process
    (:mod:`~pytest_sqleval.execution.sandbox`) when the engine can be reopened there; otherwise here,
    with the engine's own timeout only.
    """
    from .sandbox import DEFAULT_MAX_MEMORY, process_sandbox, sandbox_enabled
    from .targets import target_of

    dialect = dialect or sqlglot_dialect(engine.dialect.name)
    engine_dialect = sqlglot_dialect(engine.dialect.name)
    allowed = frozenset(a.lower() for a in allow_functions)
    sql, rewrite = official_statement(sql, dialect, rewrite)
    if sql is None:  # a text without any statement runs nothing and returns no rows, as it does there
        return QueryResult(columns=(), rows=[])
    target = target_of(engine) if sandbox_enabled() else None
    if target is not None:
        return process_sandbox().run(
            target, sql, timeout=timeout, max_rows=max_rows, untrusted=untrusted, dialect=dialect, rewrite=rewrite,
            allow_functions=allowed, role=role or _restricted_role(engine), engine_dialect=engine_dialect,
            max_memory=DEFAULT_MAX_MEMORY if max_memory is None else max_memory,
        )
    sql = prepare_sql(sql, dialect, untrusted=untrusted, rewrite=rewrite, allow_functions=allowed,
                      engine_dialect=engine_dialect)
    return execute_inline(engine, sql, timeout=timeout, max_rows=max_rows, role=role or _restricted_role(engine))


def official_statement(sql: str, dialect: str, rewrite: str | None) -> tuple[str | None, str | None]:
    """For the reproduction profiles' rewrites, the statement the official evaluator runs (the rest never
    runs; None when the text has none) and the rewrite still to apply to it; any other rewrite unchanged."""
    if rewrite not in ("official_distinct", "sqlite3_statement"):
        return sql, rewrite
    from ..sql.statements import official_text

    statement = official_text(sql, dialect, "sqlite3" if rewrite == "sqlite3_statement" else rewrite)
    if statement is None:
        return None, None
    return statement, ("official_distinct" if rewrite == "official_distinct" else None)


def _restricted_role(engine) -> str | None:
    """The SELECT-only role of a PostgreSQL database the plugin built (None for any other: only PostgreSQL
    databases get one, so no other engine pays for rendering its URL on every query)."""
    if engine.dialect.name != "postgresql":
        return None
    from .engines import restricted_role_for

    try:
        return restricted_role_for(engine)
    except Exception:  # noqa: BLE001 - no role known: the read-only transaction still applies
        return None


def prepare_sql(sql: str, dialect: str, *, untrusted: bool, rewrite: str | None = None,
                allow_functions: frozenset[str] = frozenset(), engine_dialect: str | None = None) -> str:
    """The text that will run: guarded when untrusted, rewritten by the profile (and guarded again).

    ``engine_dialect``: when a suite's dialect is not the engine's (a `dialect: sqlite` suite run on
    PostgreSQL), the text is guarded as the engine's dialect too: the engine lexes it (dollar quotes,
    comments, quoting), not the suite's dialect. Runs in the query process, inside the time budget.
    """
    def guard(text: str) -> None:
        if untrusted:
            _guard(text, dialect, allow_functions, engine_dialect)

    if rewrite == "official_distinct":
        # test-suite-sql-eval's remove_distinct: the keyword cut out of the text, the rest run as written;
        # only the text that runs is guarded (and it always is, when untrusted).
        from ..sql.statements import remove_distinct_tokens

        sql = remove_distinct_tokens(sql, dialect)
        guard(sql)
        return sql
    guard(sql)
    if rewrite == "strip_distinct":
        from sqlglot.errors import SqlglotError

        from ..sql.rewrite import strip_distinct

        try:
            sql = strip_distinct(sql, dialect)
        except (SqlglotError, RecursionError) as exc:
            raise QueryError("syntax", f"cannot strip DISTINCT: {_first_line(exc)}") from None
        guard(sql)
    elif rewrite is not None:
        raise ValueError(f"unknown rewrite {rewrite!r}")
    return sql


def _guard(sql: str, dialect: str, allow_functions: frozenset[str], engine_dialect: str | None = None) -> None:
    check_prediction(sql, dialect, allow_functions=allow_functions)
    if engine_dialect is not None and _reads_differently(engine_dialect, dialect):
        check_prediction(sql, engine_dialect, allow_functions=allow_functions)


def _reads_differently(engine_dialect: str, dialect: str) -> bool:
    from ..sql.guard import dialect_key

    try:
        return dialect_key(engine_dialect) != dialect_key(dialect)
    except (ValueError, KeyError):  # an engine sqlglot has no dialect for: the suite's dialect is all there is
        return False


def execute_inline(engine, sql: str, *, timeout: float, max_rows: int, role: str | None = None,
                   timeout_label: float | None = None) -> QueryResult:
    """Run already-checked SQL on ``engine`` in this process, with the engine's own timeout and the row cap."""
    backend = engine.dialect.name
    runner = _RUNNERS.get(backend, _run_generic)
    raw = engine.raw_connection()
    try:
        if backend == "postgresql":
            return _run_postgres(raw.dbapi_connection, sql, timeout, max_rows, role=role, timeout_label=timeout_label)
        try:
            return runner(raw.dbapi_connection, sql, timeout, max_rows)
        except QueryError as exc:
            if exc.kind == "timeout" and timeout_label is not None:
                raise QueryError("timeout", _timeout_message(timeout_label)) from None
            raise
    finally:
        raw.close()


def _cap(rows: list[tuple], max_rows: int) -> list[tuple]:
    if len(rows) > max_rows:
        raise QueryError("row_limit", f"returned more than {max_rows} rows (the row cap; raise it with --sqleval-max-rows)")
    return rows


def _memory_message() -> str:
    return "the query needed more memory than allowed (raise it with --sqleval-max-memory or the suite's `max_memory:`)"


def _timeout_message(timeout: float) -> str:
    return f"interrupted after {timeout:g} s (raise it with --sqleval-timeout or the suite's `timeout:`)"


# --------------------------------------------------------------------------- SQLite
def _run_sqlite(conn: sqlite3.Connection, sql: str, timeout: float, max_rows: int) -> QueryResult:
    deadline = time.monotonic() + timeout
    conn.set_progress_handler(lambda: time.monotonic() > deadline, SQLITE_PROGRESS_STEPS)
    try:
        cursor = conn.cursor()
        try:
            cursor.execute(sql)
            rows = cursor.fetchmany(max_rows + 1)
        except sqlite3.Error as exc:
            raise _sqlite_error(conn, sql, exc, timeout) from None
        except sqlite3.Warning as exc:  # "You can only execute one statement at a time."
            raise QueryError("rejected", str(exc)) from None
        columns = tuple(d[0] for d in cursor.description or ())
        cursor.close()
    finally:
        conn.set_progress_handler(None, 0)
    return QueryResult(columns=columns, rows=_cap(rows, max_rows))


def _sqlite_error(conn: sqlite3.Connection, sql: str, exc: sqlite3.Error, timeout: float) -> QueryError:
    message = str(exc)
    lowered = message.lower()
    if lowered == "interrupted":
        return QueryError("timeout", _timeout_message(timeout))
    if lowered == "out of memory" or isinstance(exc, MemoryError):
        return QueryError("memory", _memory_message())
    if "not authorized" in lowered or "readonly" in lowered or "read-only" in lowered or "query_only" in lowered:
        return QueryError("rejected", f"refused by the read-only connection: {message}")
    if isinstance(exc, sqlite3.ProgrammingError) and "one statement" in lowered:
        return QueryError("rejected", message)
    return QueryError("syntax" if not _sqlite_compiles(conn, sql) else "runtime", message)


def _sqlite_compiles(conn: sqlite3.Connection, sql: str) -> bool:
    """Does SQLite compile the statement? (EXPLAIN compiles without running it.)"""
    try:
        conn.execute("EXPLAIN " + sql).fetchmany(1)
        return True
    except (sqlite3.Error, sqlite3.Warning):
        return False


# --------------------------------------------------------------------------- DuckDB
def _run_duckdb(conn: Any, sql: str, timeout: float, max_rows: int) -> QueryResult:
    import duckdb

    watchdog = threading.Timer(timeout, conn.interrupt)
    watchdog.daemon = True
    watchdog.start()
    try:
        cursor = conn.execute(sql)
        rows = cursor.fetchmany(max_rows + 1)
        columns = tuple(d[0] for d in cursor.description or ())
    except duckdb.InterruptException:
        raise QueryError("timeout", _timeout_message(timeout)) from None
    except duckdb.Error as exc:
        raise _duckdb_error(exc) from None
    finally:
        watchdog.cancel()
    return QueryResult(columns=columns, rows=_cap(rows, max_rows))


def _duckdb_error(exc: Exception) -> QueryError:
    import duckdb

    message = _first_line(exc)
    if isinstance(exc, getattr(duckdb, "OutOfMemoryException", ())) or "out of memory" in message.lower():
        return QueryError("memory", f"{_memory_message()}: {message}")
    if isinstance(exc, duckdb.PermissionException) or "read-only" in message.lower() or "disabled by configuration" in message.lower():
        return QueryError("rejected", f"refused by the read-only connection: {message}")
    compile_errors = tuple(
        getattr(duckdb, name) for name in ("ParserException", "BinderException", "CatalogException", "SyntaxException")
        if hasattr(duckdb, name)
    )
    return QueryError("syntax" if isinstance(exc, compile_errors) else "runtime", message)


# --------------------------------------------------------------------------- PostgreSQL
def _run_postgres(conn: Any, sql: str, timeout: float, max_rows: int, *, role: str | None = None,
                  timeout_label: float | None = None) -> QueryResult:
    """A read-only transaction, always rolled back; a server-side cursor fetches at most cap + 1 rows.

    ``role``: the plugin's SELECT-only role of a database it built, taken with SET LOCAL ROLE.
    """
    import psycopg
    from psycopg import sql as pgsql

    autocommit = conn.autocommit
    if autocommit:
        conn.autocommit = False
    try:
        conn.execute("SET TRANSACTION READ ONLY")
        conn.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout * 1000))}")
        conn.execute(f"SET LOCAL work_mem = '{POSTGRES_WORK_MEM}'")
        # The guard lexes strings the way PostgreSQL does only with standard strings (the default since 9.1).
        conn.execute("SET LOCAL standard_conforming_strings = on")
        if role:
            conn.execute(pgsql.SQL("SET LOCAL ROLE {}").format(pgsql.Identifier(role)))
        with conn.cursor(name="sqleval_query") as cursor:
            cursor.execute(sql)
            rows = cursor.fetchmany(max_rows + 1)
            columns = tuple(d.name for d in cursor.description or ())
    except psycopg.Error as exc:
        raise _postgres_error(exc, timeout if timeout_label is None else timeout_label) from None
    finally:
        _rollback(conn)
        if autocommit:
            conn.autocommit = True
    return QueryResult(columns=columns, rows=_cap(rows, max_rows))


def _rollback(conn: Any) -> None:
    try:
        conn.rollback()
    except Exception:  # noqa: BLE001 - a broken connection is discarded by the pool
        pass


def _postgres_error(exc: Exception, timeout: float) -> QueryError:
    state = getattr(exc, "sqlstate", None) or ""
    message = _first_line(exc)
    if state == "57014":
        return QueryError("timeout", _timeout_message(timeout))
    if state in ("53200", "53400"):  # out of memory; temp_file_limit or another configured limit
        return QueryError("memory", f"{_memory_message()}: {message}")
    if state in ("25006", "42501"):
        return QueryError("rejected", f"refused by the read-only connection: {message}")
    if state.startswith("42") or state == "0A000":
        return QueryError("syntax", message)
    return QueryError("runtime", message)


# --------------------------------------------------------------------------- anything else
def _run_generic(conn: Any, sql: str, timeout: float, max_rows: int) -> QueryResult:
    """Plain DB-API: a watchdog cancels the query if the driver can; always rolled back."""
    cancel = getattr(conn, "cancel", None) or getattr(conn, "interrupt", None)
    watchdog = threading.Timer(timeout, cancel) if cancel else None
    started = time.monotonic()
    if watchdog:
        watchdog.daemon = True
        watchdog.start()
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        rows = [tuple(r) for r in cursor.fetchmany(max_rows + 1)]
        columns = tuple(d[0] for d in cursor.description or ())
    except Exception as exc:  # noqa: BLE001 - DB-API drivers raise their own classes
        if time.monotonic() - started >= timeout:
            raise QueryError("timeout", _timeout_message(timeout)) from None
        raise QueryError("runtime", _first_line(exc)) from None
    finally:
        if watchdog:
            watchdog.cancel()
        _rollback(conn)
    return QueryResult(columns=columns, rows=_cap(rows, max_rows))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_RUNNERS = {
    "sqlite": _run_sqlite,
    "duckdb": _run_duckdb,
    "postgresql": _run_postgres,
}
