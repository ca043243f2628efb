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


def run_query(engine, sql: str, *, timeout: float, max_rows: int, untrusted: bool = True, dialect: str | None = None) -> QueryResult:
    backend = engine.dialect.name
    if untrusted:
        check_prediction(sql, dialect or sqlglot_dialect(backend))
    runner = _RUNNERS.get(backend, _run_generic)
    raw = engine.raw_connection()
    try:
        return runner(raw.dbapi_connection, sql, timeout, max_rows)
    finally:
        raw.close()


def _cap(rows: list[tuple], max_rows: int) -> list[tuple]:
    if len(rows) > max_rows:
        raise QueryError("row_limit", f"returned more than {max_rows} rows (the row cap; raise it with --sqleval-max-rows)")
    return rows


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
    if isinstance(exc, duckdb.PermissionException) or "read-only" in message.lower() or "disabled by configuration" in message.lower():
        return QueryError("rejected", f"refused by the read-only connection: {message}")
    compile_errors = tuple(
        getattr(duckdb, name) for name in ("ParserException", "BinderException", "CatalogException", "SyntaxException")
        if hasattr(duckdb, name)
    )
    return QueryError("syntax" if isinstance(exc, compile_errors) else "runtime", message)


# --------------------------------------------------------------------------- PostgreSQL
def _run_postgres(conn: Any, sql: str, timeout: float, max_rows: int) -> QueryResult:
    """A read-only transaction, always rolled back; a server-side cursor fetches at most cap + 1 rows."""
    import psycopg

    autocommit = conn.autocommit
    if autocommit:
        conn.autocommit = False
    try:
        conn.execute("SET TRANSACTION READ ONLY")
        conn.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout * 1000))}")
        with conn.cursor(name="sqleval_query") as cursor:
            cursor.execute(sql)
            rows = cursor.fetchmany(max_rows + 1)
            columns = tuple(d.name for d in cursor.description or ())
    except psycopg.Error as exc:
        raise _postgres_error(exc, timeout) from None
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
