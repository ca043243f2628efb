"""PostgreSQL: a read-only session, each query in a read-only transaction that is always rolled back, under
``statement_timeout`` and ``work_mem``; setup scripts build a fresh database on the server.

A built database is named ``sqleval_<hash>_<run>_<worker>`` (unique per run, dropped at the end of the
run, also on SIGTERM/SIGINT; ``python -m pytest_sqleval.cleanup URL`` drops leftovers) and gets a NOLOGIN
role (``sqleval_ro_...``) with only USAGE on its schemas and SELECT on its tables, which the query runner
takes with ``SET LOCAL ROLE`` (:func:`restricted_role_for`). Every connection has a connect timeout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ...errors import DatabaseError, QueryError
from ...results import QueryResult
from ...secrets import register_url_secrets
from ...suite import hide_password
from ..targets import register_target, registered_target
from .base import (
    DEFAULT_CONNECT_TIMEOUT,
    Backend,
    BuildContext,
    Dialect,
    Limits,
    Target,
    fetch_capped,
    first_line,
    memory_message,
    rollback,
    timeout_message,
)
from .connect import EXTRAS, connect_failure, connection_lost, probe, require_module
from .setup_scripts import cut_around, run_setup_scripts

#: PostgreSQL's limit on identifiers (bytes).
PG_MAX_IDENTIFIER = 63

#: Prefix of every database the plugin builds on a server (``cleanup`` drops leftovers by it).
BUILT_DATABASE_PREFIX = "sqleval_"
RESTRICTED_ROLE_PREFIX = "sqleval_ro_"

#: PostgreSQL memory per sort/hash operation of an untrusted query (the server's side of the memory cap).
POSTGRES_WORK_MEM = "64MB"

#: Restricted role of each built PostgreSQL database, keyed by the database URL (rendered with its password).
_restricted_roles: dict[str, str] = {}


class PostgreSQLBackend(Backend):
    name = "postgresql"
    dialect = Dialect("postgresql", "postgres")
    drivers = ("psycopg",)

    def owns(self, url) -> bool:
        return url.get_backend_name() in ("postgresql", "postgres")

    def open(self, url: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
        return postgres_engine(url, connect_timeout=connect_timeout)

    def build(self, url: str, scripts: tuple[Path, ...], context: BuildContext) -> str:
        name = unused_database_name(built_database_name(context.digest, context.run_id, context.worker))
        role = RESTRICTED_ROLE_PREFIX + name[len(BUILT_DATABASE_PREFIX):]
        timeout = context.connect_timeout
        return build_postgres(url, name, scripts, connect_timeout=timeout, role=role, on_created=lambda: (
            context.on_cleanup(lambda: drop_postgres_database(url, name, role=role, connect_timeout=timeout))))

    def run(self, conn: Any, sql: str, limits: Limits, *, _infinity: bool = False,
            _readable_styles: bool = False) -> QueryResult:
        """A read-only transaction, always rolled back; a server-side cursor fetches at most cap + 1 rows.

        ``limits.role``: the plugin's SELECT-only role of a database it built, taken with SET LOCAL ROLE.
        A result with a date or timestamp Python cannot represent (``infinity``, a year past 9999 or before 1),
        which psycopg cannot load, is fetched again with :func:`register_infinity_loaders` (only then: those
        loaders are slower than psycopg's own). A result psycopg cannot read in the session's styles (an interval
        under an ``IntervalStyle`` other than ``postgres``, a timestamptz under a ``DateStyle`` other than ``ISO``: a
        database, role or server set so) is fetched again with ``SET LOCAL IntervalStyle = postgres`` and ``SET LOCAL
        DateStyle = ISO`` (the output format only: the day/month order that reads date literals stays).
        """
        import psycopg
        from psycopg import sql as pgsql

        autocommit = conn.autocommit
        if autocommit:
            conn.autocommit = False
        try:
            conn.execute("SET TRANSACTION READ ONLY")
            conn.execute(f"SET LOCAL statement_timeout = {max(1, int(limits.timeout * 1000))}")
            conn.execute(f"SET LOCAL work_mem = '{POSTGRES_WORK_MEM}'")
            # The guard lexes strings the way PostgreSQL does only with standard strings (the default since 9.1).
            conn.execute("SET LOCAL standard_conforming_strings = on")
            # The rows of a query without ORDER BY in the same order every run (BIRD's soft F1 and `row_order:
            # always` read them by position): no parallel workers, and no scan joining another one mid-table.
            conn.execute("SET LOCAL max_parallel_workers_per_gather = 0")
            conn.execute("SET LOCAL synchronize_seqscans = off")
            if _readable_styles:
                conn.execute("SET LOCAL IntervalStyle = postgres")
                conn.execute("SET LOCAL DateStyle = ISO")
            if limits.role:
                conn.execute(pgsql.SQL("SET LOCAL ROLE {}").format(pgsql.Identifier(limits.role)))
            with conn.cursor(name="sqleval_query") as cursor:
                if _infinity:
                    register_infinity_loaders(cursor)
                cursor.execute(sql)
                rows = fetch_capped(cursor, limits)
                columns = tuple(d.name for d in cursor.description or ())
        except psycopg.DataError as exc:
            if _infinity or not _out_of_python_range(exc):
                raise self.classify(exc, limits=limits) from None
            rows, _infinity = None, True  # psycopg could not load a date: fetch again, with loaders that can
        except NotImplementedError:  # psycopg's interval or timestamptz loader, in a style it cannot read
            if _readable_styles or not _unreadable_styles(conn):
                raise
            rows, _readable_styles = None, True
        except psycopg.Error as exc:
            error = self.classify(exc, conn=conn, limits=limits)
            # a result libpq could not allocate (no SQLSTATE) also leaves the connection broken: that is the
            # prediction's memory miss, and the connection is replaced; only another end of it is the server's doing
            if error.kind not in ("memory", "timeout") and _connection_lost(exc, conn):
                raise connection_lost("PostgreSQL", _server_of(conn), exc) from None
            raise error from None
        finally:
            rollback(conn)
            if autocommit:
                conn.autocommit = True
        if rows is None:
            return self.run(conn, sql, limits, _infinity=_infinity, _readable_styles=_readable_styles)
        return QueryResult(columns=columns, rows=rows)  # capped as fetched (fetch_capped)

    def classify(self, exc: BaseException, *, conn: Any = None, sql: str = "", limits: Limits | None = None,
                 elapsed: float = 0.0) -> QueryError:
        state = getattr(exc, "sqlstate", None) or ""
        message = first_line(exc)
        if state == "57014":
            return QueryError("timeout", timeout_message(limits.label if limits else elapsed))
        limit = _server_limit(state, exc)
        if limit is not None:
            return QueryError("memory", f"{message}: {limit}")
        if not state and _client_out_of_memory(exc, conn):
            return QueryError("memory", f"{memory_message()}: the result did not fit ({_client_error(exc, conn)})")
        if state in ("54011", "54023"):  # too many columns, too many arguments: PostgreSQL does not compile it
            return QueryError("syntax", message)
        if _unbound_parameter(exc, conn):
            return QueryError("syntax", f"{message}: the query has a parameter placeholder ($1, $2, ...), and no "
                                        "value is given for it; write the value itself")
        if state in ("25006", "42501"):
            return QueryError("rejected", f"refused by the read-only connection: {message}")
        if state.startswith("42") or state == "0A000":
            return QueryError("syntax", message)
        return QueryError("runtime", message)

    def restricted_role(self, engine: Any) -> str | None:
        try:
            return restricted_role_for(engine)
        except Exception:  # noqa: BLE001 - no role known: the read-only transaction still applies
            return None

    def read_schema(self, engine: Any):
        """The default schema's tables (the base class's), with the schema a bare name resolves to and the columns of
        every other schema's tables (``app.orders``), which the SQL policy reads qualified names with."""
        import dataclasses

        from sqlalchemy.exc import SQLAlchemyError

        schema = super().read_schema(engine)
        try:
            with engine.connect() as conn:
                default = conn.exec_driver_sql("SELECT current_schema()").scalar()
                rows = conn.exec_driver_sql(
                    "SELECT table_schema, table_name, column_name FROM information_schema.columns "
                    "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') "
                    "AND left(table_schema, 8) <> 'pg_toast' AND left(table_schema, 8) <> 'pg_temp_' "
                    "ORDER BY table_schema, table_name, ordinal_position").all()
        except SQLAlchemyError:  # a server that speaks PostgreSQL's protocol with another catalogue
            return schema
        columns: dict[str, list[str]] = {}
        for owner, table, column in rows:
            if owner != default:
                columns.setdefault(f"{owner}.{table}".lower(), []).append(column)
        return dataclasses.replace(schema, default_schema=default,
                                   qualified_columns={k: tuple(v) for k, v in columns.items()})

    def table_order(self, engine: Any) -> list[str] | None:
        """Creation order (the tables' oids), as SQLite's and DuckDB's catalogues give it. The inspector's list (the
        same tables: visible, not temporary, outside pg_catalog) comes in pg_class's scan order, which a GRANT or an
        ALTER on a table changes (its catalogue row is rewritten): the schema in a model's prompt, and so the
        response cache's key, would change with it. None (the inspector's order) where the catalogue cannot say."""
        from sqlalchemy.exc import SQLAlchemyError

        try:
            with engine.connect() as conn:
                rows = conn.exec_driver_sql(
                    "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                    "ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p') AND c.relpersistence <> 't' "
                    "AND pg_catalog.pg_table_is_visible(c.oid) AND n.nspname <> 'pg_catalog' ORDER BY c.oid")
                return [row[0] for row in rows]
        except SQLAlchemyError:  # a server that speaks PostgreSQL's protocol with another catalogue
            return None

    def target(self, engine: Any) -> Target | None:
        registered = registered_target(engine)
        if registered is None:  # the user's engine: its connection's own parameters, whatever built it
            registered = ("postgresql", url_with_connection_parameters(engine))
            register_target(engine, registered)
        return registered

    def open_target(self, target: Target, *, max_memory: int | None = None):
        return postgres_engine(target[1])


#: SQLSTATEs of a server that ended the session, not the query: class 08 (connection exception), admin shutdown,
#: crash shutdown, cannot connect now (starting up or shutting down).
_CONNECTION_ENDED = frozenset({"57P01", "57P02", "57P03"})


def _connection_lost(exc: BaseException, conn: Any) -> bool:
    """Did the server end the connection (shut down, restarted, terminated the backend) rather than fail the query?"""
    state = getattr(exc, "sqlstate", None) or ""
    if _unbound_parameter(exc, conn):
        return False
    return state.startswith("08") or state in _CONNECTION_ENDED or bool(getattr(conn, "broken", False))


def _unbound_parameter(exc: BaseException, conn: Any) -> bool:
    """A query with a parameter placeholder (``SELECT $1``), which the server refuses when binding the values (none
    are sent) with SQLSTATE 08P01, a *protocol violation* of class 08 (connection exception): the query's error (the
    connection is fine), not a lost server. Told by the server's function that refused it, not by the message."""
    return (getattr(exc, "sqlstate", None) == "08P01" and not getattr(conn, "broken", False)
            and getattr(getattr(exc, "diag", None), "source_function", None) == "exec_bind_message")


def _server_of(conn: Any) -> str:
    """``postgresql://user@host:port/dbname`` of a psycopg connection, for messages (never a password)."""
    try:
        info = conn.info
        return f"postgresql://{info.user}@{info.host}:{info.port}/{info.dbname}"
    except Exception:  # noqa: BLE001 - a connection too broken to describe
        return "the PostgreSQL server"


#: Why the server stopped a query, by SQLSTATE (class 53: insufficient resources; 54: program limit exceeded); each
#: is kind ``memory``, with the server's setting or fixed limit named: ``--sqleval-max-memory`` changes none of them.
_SERVER_LIMITS = {
    "53000": "the PostgreSQL server lacks the resources for the query (the server's, not --sqleval-max-memory's)",
    "53100": "the PostgreSQL server's disk is full (a sort or hash spilled to temporary files; the server's limit, "
             "not --sqleval-max-memory's)",
    "53200": "the PostgreSQL server ran out of memory for the query (the server's memory, not --sqleval-max-memory's "
             "cap)",
    "53400": "over a limit the server's configuration sets (for a query: `temp_file_limit`, the temporary files a "
             "sort or hash may write; a setting of the server, not --sqleval-max-memory)",
    "54000": "the query went over a fixed limit of PostgreSQL (one value holds at most 1 GB, an array at most "
             "134,217,727 elements): it cannot be raised, --sqleval-max-memory does not change it",
    "54001": "the query (or a value it reads, such as a deeply nested JSON) nests deeper than the PostgreSQL "
             "server's stack allows (`max_stack_depth`, a setting of the server; --sqleval-max-memory does not change "
             "it)",
}

#: The server's memory-context code (``mcxt.c``) refuses one allocation over 1 GB with an internal error (XX000,
#: "invalid memory alloc request size"): known by the source file the server names, not by the message.
_MEMORY_CONTEXT_SOURCE = "mcxt.c"


#: Server functions that report a bad argument value with SQLSTATE 54000 (program limit exceeded): ``chr(0)`` ("null
#: character not permitted") and ``chr(1114112)`` ("requested character too large for encoding") are no limit.
_ARGUMENT_LIMIT_FUNCTIONS = frozenset({"chr"})


def _server_limit(state: str, exc: BaseException) -> str | None:
    """The reason of an error that is a resource limit of the PostgreSQL server (by SQLSTATE, and for XX000 by the
    server's source file), else None."""
    if state == "54000" and getattr(getattr(exc, "diag", None), "source_function", None) in _ARGUMENT_LIMIT_FUNCTIONS:
        return None  # a bad argument, not a size (``chr(0)``: "null character not permitted"): runtime
    if state in _SERVER_LIMITS:
        return _SERVER_LIMITS[state]
    if state == "XX000" and getattr(getattr(exc, "diag", None), "source_file", None) == _MEMORY_CONTEXT_SOURCE:
        return ("the query asked the PostgreSQL server for a block of memory over 1 GB (a fixed limit of the server: "
                "it cannot be raised, --sqleval-max-memory does not change it)")
    return None


def _client_error(exc: BaseException, conn: Any) -> str:
    """libpq's own message of a failure on this side of the connection (psycopg's may only be a consequence)."""
    try:
        pgconn = getattr(exc, "pgconn", None) or getattr(conn, "pgconn", None)
        raw = getattr(pgconn, "error_message", b"") or b""
    except Exception:  # noqa: BLE001 - a connection already gone: psycopg's message is all there is
        raw = b""
    text = raw.decode("utf-8", "replace").strip() if isinstance(raw, bytes) else str(raw).strip()
    return text.splitlines()[0] if text else first_line(exc)


def _client_out_of_memory(exc: BaseException, conn: Any) -> bool:
    """A failure of libpq in this process to allocate a result (under the query process's memory cap). Such an
    error never reached the server, so it has no SQLSTATE: libpq's own message is all there is."""
    text = _client_error(exc, conn).lower()
    return "out of memory" in text or "cannot allocate memory" in text


def postgres_engine(url: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
    from sqlalchemy import create_engine, event

    require_module("psycopg", "postgresql")
    register_url_secrets(url)
    try:
        url = psycopg_url(url)
        engine = create_engine(url, pool_pre_ping=True,
                               connect_args={"connect_timeout": libpq_timeout(connect_timeout)})
    except Exception as exc:  # noqa: BLE001
        hint = ""
        if isinstance(exc, ImportError) and getattr(exc, "name", None):  # postgresql+psycopg2:// without psycopg2
            hint = (f"; its driver module {exc.name!r} is not installed: pip install the package that provides it, "
                    f"or use postgresql+psycopg:// ({EXTRAS['postgresql']})")
        raise DatabaseError(f"bad PostgreSQL URL {hide_password(url)}: {first_line(exc)}{hint}") from None

    @event.listens_for(engine, "connect")
    def _read_only_session(dbapi_conn, _record):  # pragma: no cover - exercised with a live server
        autocommit = dbapi_conn.autocommit
        dbapi_conn.autocommit = True
        dbapi_conn.execute("SET default_transaction_read_only = on")
        dbapi_conn.autocommit = autocommit

    probe(engine, url, "PostgreSQL", connect_timeout)
    return register_target(engine, ("postgresql", url))


def _unreadable_styles(conn: Any) -> bool:
    """Is the session's IntervalStyle or DateStyle one psycopg reads no interval or timestamptz in?"""
    interval_style = conn.info.parameter_status("IntervalStyle")
    date_style = conn.info.parameter_status("DateStyle")
    return (interval_style not in (None, "postgres")) or (date_style is not None and not date_style.startswith("ISO"))


def _out_of_python_range(exc: BaseException) -> bool:
    """psycopg's error for a date or timestamp outside Python's years 1-9999 (``infinity`` included)."""
    message = str(exc)
    return "infinity" in message or "after year 10K" in message or "before year 1" in message


def register_infinity_loaders(context) -> None:
    """Load PostgreSQL's ``infinity``/``-infinity`` dates and timestamps (which Python cannot represent) as the
    largest/smallest ``date``/``datetime``, as psycopg's documentation suggests, and one of a year Python
    cannot hold (past 9999, or BC) as PostgreSQL's text (``'10000-01-01'``, ``'0044-03-15 BC'``), so a result
    holding them compares instead of failing (``context``: a psycopg connection or cursor)."""
    for pg_type, loader in _infinity_loaders().items():
        context.adapters.register_loader(pg_type, loader)


_INFINITY_LOADERS: dict[str, Any] = {}


def _infinity_loaders() -> dict[str, Any]:
    if not _INFINITY_LOADERS:
        import datetime as dt

        import psycopg
        from psycopg.types import datetime as pgdt

        utc = dt.timezone.utc
        extremes = {"date": (dt.date.max, dt.date.min), "timestamp": (dt.datetime.max, dt.datetime.min),
                    "timestamptz": (dt.datetime.max.replace(tzinfo=utc), dt.datetime.min.replace(tzinfo=utc))}
        bases = {"date": pgdt.DateLoader, "timestamp": pgdt.TimestampLoader, "timestamptz": pgdt.TimestamptzLoader}
        for pg_type, base in bases.items():
            high, low = extremes[pg_type]

            def load(self, data, _base=base, _high=high, _low=low):
                try:
                    return _base.load(self, data)
                except psycopg.DataError:
                    text = bytes(data)
                    if text == b"infinity":
                        return _high
                    if text == b"-infinity":
                        return _low
                    return text.decode()  # a year Python cannot hold: PostgreSQL's text, on both sides

            _INFINITY_LOADERS[pg_type] = type(f"Infinity{base.__name__}", (base,), {"load": load})
    return _INFINITY_LOADERS


#: Connection parameters the query process sets itself (or that the URL's own fields carry).
_OWN_PARAMETERS = frozenset({"host", "hostaddr", "port", "dbname", "user", "password", "connect_timeout"})


def url_with_connection_parameters(engine: Any) -> str:
    """The URL of a PostgreSQL engine made outside the plugin, with what its connections really use beside the URL:
    ``connect_args=`` (``{"options": "-csearch_path=app"}``, ``sslmode``, ``application_name``), a ``creator=``,
    ``PG*`` environment variables. The query process reopens the database from this URL alone, so without them a
    query there would run on another schema, or as another user, than the same query on the user's engine.

    Read from one live connection (psycopg 3's ``info.get_parameters()``: every libpq parameter set to a
    non-default value; psycopg2's ``get_dsn_parameters()``): each one the URL lacks is added to its query string,
    which SQLAlchemy hands to the driver. The URL's own host, port, user and database stay as they are; a URL
    without them (an engine made with ``creator=``) takes the connection's. No connection: the URL as it is (the
    query process then reports the failure)."""
    import threading

    from sqlalchemy.engine import make_url

    url = make_url(engine.url.render_as_string(hide_password=False))
    read: dict[str, Any] = {}

    def connect() -> None:
        try:
            with engine.connect() as conn:
                driver = conn.connection.driver_connection
                info = getattr(driver, "info", None)
                if info is not None and hasattr(info, "get_parameters"):  # psycopg 3
                    read["found"] = dict(info.get_parameters()), getattr(info, "password", None)
                else:  # psycopg2
                    read["found"] = dict(driver.get_dsn_parameters()), None
                conn.rollback()
        except Exception:  # noqa: BLE001 - the query process reports why it cannot connect
            pass

    # The user's engine may have no connect timeout: a host that accepts and never answers would hang the run here.
    # Given up after the default connect timeout: the URL as it is, which the query process opens with one.
    reader = threading.Thread(target=connect, name="sqleval-connect", daemon=True)
    reader.start()
    reader.join(DEFAULT_CONNECT_TIMEOUT + 1.0)
    if "found" not in read:
        return url.render_as_string(hide_password=False)
    parameters, password = read["found"]
    fields = {"host": parameters.get("host"), "port": parameters.get("port"), "database": parameters.get("dbname"),
              "username": parameters.get("user"), "password": password}
    url = url.set(**{name: (int(value) if name == "port" and str(value).isdigit() else value)
                     for name, value in fields.items() if value and not getattr(url, name)})
    extra = {name: value for name, value in parameters.items()
             if name not in _OWN_PARAMETERS and name not in url.query and value not in (None, "")}
    if extra:
        url = url.update_query_dict(extra)
    text = url.render_as_string(hide_password=False)
    register_url_secrets(text)  # the password read from the connection is masked in every message too
    return text


def psycopg_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` URLs use psycopg 3 (the ``postgres`` extra)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.drivername in ("postgres", "postgresql"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def libpq_timeout(seconds: float) -> int:
    """libpq's ``connect_timeout`` is whole seconds (and at least 2: libpq waits 2 s for anything smaller)."""
    import math

    return max(2, math.ceil(seconds))


def admin_connect(url: str, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
    """A psycopg connection in autocommit mode from a SQLAlchemy URL."""
    import time

    from sqlalchemy.engine import make_url

    require_module("psycopg", "postgresql")
    import psycopg

    register_url_secrets(url)
    try:
        parsed = make_url(url)
        conninfo = libpq_conninfo(parsed)
    except Exception as exc:  # noqa: BLE001 - a bad port, a bad query string: never echo the URL raw
        raise DatabaseError(f"bad PostgreSQL URL {hide_password(url)}: {type(exc).__name__}: {first_line(exc)}") from None
    started = time.monotonic()
    try:
        return psycopg.connect(conninfo, autocommit=True, connect_timeout=libpq_timeout(connect_timeout))
    except psycopg.Error as exc:
        raise DatabaseError(connect_failure("PostgreSQL", url, exc, time.monotonic() - started, connect_timeout,
                                            extra=(parsed.password,))) from None


def libpq_conninfo(parsed) -> str:
    """A libpq connection string from a SQLAlchemy URL (host, port, user, password, database, query)."""
    from psycopg.conninfo import make_conninfo

    params: dict[str, Any] = {}
    for key, value in (("host", parsed.host), ("port", parsed.port), ("user", parsed.username),
                       ("password", parsed.password), ("dbname", parsed.database)):
        if value is not None:
            params[key] = value
    for key, value in parsed.query.items():
        params[key] = value if isinstance(value, str) else value[-1]
    return make_conninfo("", **params)


def built_database_name(digest: str, run_id: str, worker: str) -> str:
    """``sqleval_<hash>_<run>_<worker>``: unique per run and per process, within PostgreSQL's 63 bytes."""
    name = f"{BUILT_DATABASE_PREFIX}{digest[:12]}_{_safe(run_id)}_{_safe(worker)}"
    return name[:PG_MAX_IDENTIFIER - len(RESTRICTED_ROLE_PREFIX) + len(BUILT_DATABASE_PREFIX)]


#: The names of the databases this process built: the same scripts built again for another spelling of a server's
#: URL (``postgresql://`` and ``postgresql+psycopg://``, ``localhost`` and ``127.0.0.1``) get a name of their own
#: instead of dropping the database the first spelling's engine is connected to.
_names_built: set[str] = set()


def unused_database_name(name: str) -> str:
    """``name``, or ``name`` with a ``_2``, ``_3``... suffix when this process already built one of that name."""
    candidate, number = name, 1
    while candidate in _names_built:
        number += 1
        suffix = f"_{number}"
        candidate = name[:PG_MAX_IDENTIFIER - len(RESTRICTED_ROLE_PREFIX) + len(BUILT_DATABASE_PREFIX) - len(suffix)] + suffix
    _names_built.add(candidate)
    return candidate


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text.lower())


def build_postgres(url: str, name: str, scripts: tuple[Path, ...], *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                   role: str | None = None, on_created: Callable[[], Any] | None = None) -> str:
    """Create database ``name`` on the server of ``url`` and run the setup scripts in it; returns its URL.

    With ``role``, also create that NOLOGIN role with only USAGE on the built
    schemas and SELECT on the built tables (see :func:`restricted_role_for`);
    a server that refuses (no CREATEROLE right) just gets no restricted role.
    ``on_created`` runs just before the database is created (to register its cleanup
    before the setup scripts run).
    """
    import psycopg
    from psycopg import sql as pgsql
    from sqlalchemy.engine import make_url

    with admin_connect(url, connect_timeout) as admin:
        if on_created is not None:  # before CREATE: a signal right after it must still find the drop (IF EXISTS)
            on_created()
        try:
            admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {}").format(pgsql.Identifier(name)))
            admin.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
        except psycopg.Error as exc:
            raise DatabaseError(f"cannot create database {name} on {hide_password(url)}: {first_line(exc)}; "
                                "the user needs the CREATEDB right to build setup-script databases") from None
    target = make_url(psycopg_url(url)).set(database=name).render_as_string(hide_password=False)
    with admin_connect(target, connect_timeout) as conn:
        failed: dict[str, tuple[int, int]] = {}  # where the part that failed is, in a script run in parts
        try:
            def locate(done: list[str], text: str) -> int | None:
                text, part, position = _without_psql_restrict(text), failed.pop("part", None), failed.pop("position", None)
                if position is not None:  # the server's own position of the error: its statement
                    return _statement_holding(text, position)
                offset = _pg_locate(conn, text, part)
                if offset is None and part is None and _manages_transactions(text):
                    offset = _locate_in_scratch(url, name, [_without_psql_restrict(t) for t in done], text,
                                                connect_timeout)
                return offset

            run_setup_scripts(scripts, lambda text: _run_pg_script(conn, _without_psql_restrict(text), failed),
                              psycopg.Error, "PostgreSQL", locate)
        except DatabaseError as exc:
            if any(_copies_from_stdin(script) for script in scripts):
                raise DatabaseError(f"{exc}; the script loads data with COPY ... FROM stdin, which only psql runs: "
                                    "dump it with `pg_dump --inserts` (or --column-inserts)") from None
            raise
        if role is not None and _create_restricted_role(conn, role, name):
            _restricted_roles[_role_key(target)] = role
    return target


def _without_psql_restrict(text: str) -> str:
    """``text`` with pg_dump's ``\\restrict KEY`` and ``\\unrestrict KEY`` lines blanked out (same length: the
    offsets and lines of the statements are kept). pg_dump writes them at the top and the bottom of every plain
    dump since its August 2025 releases; they are psql meta-commands (refuse other meta-commands meanwhile), not
    SQL, and mean nothing to a script run as SQL."""
    if "\\restrict" not in text and "\\unrestrict" not in text:
        return text
    lines = text.split("\n")
    for number, line in enumerate(lines):
        words = line.split()
        if len(words) == 2 and words[0] in ("\\restrict", "\\unrestrict"):
            lines[number] = " " * len(line)
    return "\n".join(lines)


def _run_pg_script(conn, text: str, failed: dict[str, tuple[int, int]] | None = None) -> None:
    """Run a setup script in one implicit transaction; one with a statement PostgreSQL runs only outside a
    transaction block (``VACUUM``, ``CREATE INDEX CONCURRENTLY``) runs as psql runs it: each such statement on its
    own, the statements between them together. A script naming such a statement is run in those parts from the
    start (its own ``BEGIN ... COMMIT`` would otherwise keep what a first attempt as a whole did before the
    statement failed); any other script runs as a whole.
    ``failed["part"]``: where the part that failed starts and ends (the parts before it were kept)."""
    upper = text.upper()
    if "VACUUM" in upper or "CONCURRENTLY" in upper:  # (only then worth tokenizing the script to find out)
        parts = _outside_transaction_parts(text)
        if len(parts) > 1:  # in parts from the start: a script's own COMMIT before its VACUUM would have kept
            _run_parts(conn, parts, failed)  # the first attempt's work, and the parts would then run it again
            return
    try:
        conn.execute(text)  # (cut into parts, any other script is this one part)
    except Exception as exc:
        position = getattr(getattr(exc, "diag", None), "statement_position", None)
        if failed is not None and position:
            failed["position"] = int(position) - 1  # (the server counts characters of the whole text, from 1)
        raise


def _run_parts(conn, parts: list[tuple[int, str]], failed: dict[str, tuple[int, int]] | None) -> None:
    import psycopg

    for offset, part in parts:
        try:
            conn.execute(part)
        except psycopg.Error:
            if failed is not None:
                failed["part"] = (offset, offset + len(part))
            raise


def _statement_holding(text: str, offset: int) -> int | None:
    """The offset of the statement of ``text`` that holds character ``offset`` (None: none does)."""
    from .insert_merge import _statements

    for start, end, _ in _statements(text, "postgres"):
        if start <= offset < end:
            return start
    return None


#: A script's own transaction statements: locating its failing statement cannot re-run it in a transaction of ours.
_TRANSACTION_WORDS = frozenset({"BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT"})


def _manages_transactions(text: str) -> bool:
    from sqlglot.dialects.dialect import Dialect

    from .insert_merge import _statements

    dialect = Dialect.get_or_raise("postgres")
    return any(dialect.tokenize(text[start:end])[0].text.upper() in _TRANSACTION_WORDS
               for start, end, _ in _statements(text, "postgres"))


def _locate_in_scratch(url: str, name: str, done: list[str], text: str, connect_timeout: float) -> int | None:
    """The offset of the failing statement of a script that manages its own transactions (``BEGIN ... COMMIT``),
    found in a scratch database of its own: the earlier scripts run whole, then this one statement by statement as
    psql runs it (what the script committed in the built database before it failed would fail a re-run there).
    The scratch database (``<name>_l``, the built database's prefix: ``cleanup`` finds a leftover) is dropped."""
    import psycopg
    from psycopg import sql as pgsql
    from sqlalchemy.engine import make_url

    from .insert_merge import _statements
    from .setup_scripts import failing_statement

    scratch = f"{name[:PG_MAX_IDENTIFIER - 2]}_l"
    with admin_connect(url, connect_timeout) as admin:
        admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(scratch)))
        admin.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(scratch)))
    try:
        target = make_url(psycopg_url(url)).set(database=scratch).render_as_string(hide_password=False)
        with admin_connect(target, connect_timeout) as conn:
            try:
                for earlier in done:
                    _run_pg_script(conn, earlier)
            except psycopg.Error:
                return None
            statements = [(start, text[start:end]) for start, end, _ in _statements(text, "postgres")]
            return failing_statement(statements, conn.execute)
    finally:
        with admin_connect(url, connect_timeout) as admin:
            admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(scratch)))


def _outside_transaction_parts(text: str) -> list[tuple[int, str]]:
    """``text`` cut around its statements that cannot run in a transaction block, each of them a part of its own:
    ``(offset in text, part)`` pairs."""
    from .insert_merge import _statements

    spans = ((begin, end) for begin, end, _ in _statements(text, "postgres"))
    parts, offset = [], 0
    for part, _ in cut_around(text, spans, _outside_transaction):
        if part.strip():
            parts.append((offset, part))
        offset += len(part)
    return parts


def _outside_transaction(statement: str) -> bool:
    """A statement PostgreSQL runs only outside a transaction block (``VACUUM``, ``... CONCURRENTLY``)."""
    from sqlglot.dialects.dialect import Dialect

    words = [token.text.upper() for token in Dialect.get_or_raise("postgres").tokenize(statement)]
    return words[:1] == ["VACUUM"] or "CONCURRENTLY" in words


def _copies_from_stdin(script: Path) -> bool:
    """Does the script hold a ``COPY ... FROM stdin`` (pg_dump's data blocks)? (a failed build only)"""
    from sqlglot.dialects.dialect import Dialect

    from .setup_scripts import read_script

    try:
        text = read_script(script)
    except DatabaseError:
        return False
    dialect = Dialect.get_or_raise("postgres")
    for line in text.splitlines():  # pg_dump writes each COPY on a line of its own; its data rows need not tokenize
        if "stdin" in line.lower():
            try:
                words = [token.text.upper() for token in dialect.tokenize(line)]
            except Exception:  # noqa: BLE001 - a data row, not a statement
                continue
            if words[:1] == ["COPY"] and "STDIN" in words:
                return True
    return False


#: Statements that end or need to be outside a transaction: a script with one is not re-run to find its failing line.
_PG_OUTSIDE_TRANSACTION = frozenset({"BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT", "VACUUM", "PREPARE"})


def _pg_locate(conn, text: str, part: tuple[int, int] | None = None) -> int | None:
    """The offset of the statement of a failed script that fails, re-run one by one in a transaction that is
    rolled back; statements split with sqlglot's PostgreSQL tokenizer. A script that failed whole left nothing
    (it ran as one implicit transaction; its VACUUMs, which change no data, are left out of the re-run); one run
    in parts around its VACUUMs kept the parts before ``part`` (where the part that failed starts and ends),
    so only that part is re-run (a VACUUM part fails in the re-run's transaction too: that is its line).
    None for a script that manages its own transactions."""
    import psycopg
    from sqlglot.dialects.dialect import Dialect

    from .insert_merge import _statements
    from .setup_scripts import failing_statement

    tokenizer = Dialect.get_or_raise("postgres")
    statements = [(start, text[start:end]) for start, end, _ in _statements(text, "postgres")]
    if part is not None:
        statements = [(start, statement) for start, statement in statements if part[0] <= start < part[1]]
    else:
        statements = [(start, statement) for start, statement in statements if not _outside_transaction(statement)]
    if any(tokenizer.tokenize(statement)[0].text.upper() in _PG_OUTSIDE_TRANSACTION - {"VACUUM"}
           for _, statement in statements):
        return None
    offset = None
    try:
        with conn.transaction():
            offset = failing_statement(statements, conn.execute)
            raise psycopg.Rollback()
    except psycopg.Error:
        return None
    return offset


def _create_restricted_role(conn, role: str, database: str) -> bool:
    """A NOLOGIN role that may only read the built tables; False when the server does not let us create it."""
    import psycopg
    from psycopg import sql as pgsql

    ident = pgsql.Identifier(role)
    try:
        with conn.transaction():
            # Row-level security must not hide from the role rows the builder reads (a superuser reads them all, an
            # owner those of its tables not under FORCE): a superuser gives the role BYPASSRLS, which no one else
            # may give; any other builder keeps no role on a database with a policy-held table, and queries read
            # it as the suite's user does (in the read-only transaction, which still applies).
            superuser = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
            superuser = bool(superuser and superuser[0])
            if not superuser and conn.execute("SELECT 1 FROM pg_class WHERE relrowsecurity LIMIT 1").fetchone():
                return False
            conn.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(ident))
            conn.execute(pgsql.SQL("CREATE ROLE {} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT "
                                   "NOREPLICATION {}").format(ident, pgsql.SQL("BYPASSRLS" if superuser
                                                                               else "NOBYPASSRLS")))
            conn.execute(pgsql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(pgsql.Identifier(database)))
            schemas = [row[0] for row in conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'")]
            for schema in schemas:
                conn.execute(pgsql.SQL("REVOKE CREATE ON SCHEMA {} FROM PUBLIC").format(pgsql.Identifier(schema)))
                conn.execute(pgsql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(pgsql.Identifier(schema), ident))
                conn.execute(pgsql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(pgsql.Identifier(schema), ident))
                # a sequence is a relation a query may read (`SELECT last_value FROM s`); SELECT on it never lets
                # nextval or setval change it (they need USAGE or UPDATE)
                conn.execute(pgsql.SQL("GRANT SELECT ON ALL SEQUENCES IN SCHEMA {} TO {}").format(pgsql.Identifier(schema), ident))
            conn.execute(pgsql.SQL("GRANT {} TO CURRENT_USER").format(ident))
    except psycopg.Error:
        return False
    return True


def _role_key(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(psycopg_url(url)).render_as_string(hide_password=False)


def restricted_role_for(engine_or_url: Any) -> str | None:
    """The NOLOGIN, SELECT-only role of a PostgreSQL database this process built from setup scripts, else None.

    Keyed by the database URL (stable across engines and processes that open the
    same URL): pass the engine or its URL. The query runner can run a prediction
    under it with ``SET LOCAL ROLE <role>`` inside its read-only transaction; the
    role can read the built tables and nothing else (no other table, no
    ``pg_read_file``), and is dropped with the database at the end of the run.
    """
    if engine_or_url is None:
        return None
    url = getattr(engine_or_url, "url", engine_or_url)
    if not isinstance(url, str):
        try:
            url = url.render_as_string(hide_password=False)
        except AttributeError:
            return None
    try:
        return _restricted_roles.get(_role_key(url))
    except Exception:  # noqa: BLE001 - not a URL
        return None


def drop_postgres_database(url: str, name: str, *, role: str | None = None,
                           connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
    """Drop a built database (closing its sessions) and its restricted role; errors are DatabaseError."""
    import psycopg
    from psycopg import sql as pgsql
    from sqlalchemy.engine import make_url

    with admin_connect(url, connect_timeout) as admin:
        try:
            admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(name)))
            # (only a role that exists: DROP ROLE IF EXISTS needs CREATEROLE even when there is none to drop)
            if role is not None and admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                admin.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(role)))
        except psycopg.Error as exc:
            raise DatabaseError(f"cannot drop database {name} on {hide_password(url)}: {first_line(exc)}") from None
    try:
        target = make_url(psycopg_url(url)).set(database=name).render_as_string(hide_password=False)
        _restricted_roles.pop(_role_key(target), None)
    except Exception:  # noqa: BLE001
        pass
