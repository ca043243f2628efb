"""SQLAlchemy engines for suite databases, read-only on the engine's own side.

- SQLite: the file is opened with the URI ``mode=ro`` (the OS refuses writes),
  ``PRAGMA query_only`` is on, an authorizer denies ATTACH, setting a PRAGMA, writes and
  extension/file functions, and string/blob length is capped.
- DuckDB: ``read_only=True`` with external access (files, network, extension
  installation and loading) disabled and the configuration locked.
- PostgreSQL: ``default_transaction_read_only`` is on for the session; every
  query also runs in a read-only transaction that is always rolled back.
- Any other SQLAlchemy URL is used as given (the sqlglot guard still applies).

A database with ``setup:`` scripts is built once per process (so once per
xdist worker) into a private file (SQLite, DuckDB) or a fresh database on the
server (PostgreSQL: ``sqleval_<hash>_<run>_<worker>``, unique per run, dropped at
the end of the run, also on SIGTERM/SIGINT; ``python -m pytest_sqleval.cleanup URL``
drops leftovers). On PostgreSQL a built database also gets a NOLOGIN role
(``sqleval_ro_...``) with only USAGE on its schemas and SELECT on its tables, for
the query runner to ``SET LOCAL ROLE`` (:func:`restricted_role_for`).

Every network engine has a connect timeout (default 10 s): a host that accepts
and never answers is an error naming the (masked) host, never a hang.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import DatabaseError
from ..secrets import mask_secrets, register_url_secrets
from ..suite import DatabaseSpec, hide_password

#: Default connect timeout of network engines (seconds).
DEFAULT_CONNECT_TIMEOUT = 10.0

#: PostgreSQL's limit on identifiers (bytes).
PG_MAX_IDENTIFIER = 63

#: Prefix of every database the plugin builds on a server (``cleanup`` drops leftovers by it).
BUILT_DATABASE_PREFIX = "sqleval_"
RESTRICTED_ROLE_PREFIX = "sqleval_ro_"

#: Restricted role of each built PostgreSQL database, keyed by the database URL (rendered with its password).
_restricted_roles: dict[str, str] = {}

EXTRAS = {
    "duckdb": "pip install 'pytest-sqleval[duckdb]'",
    "postgresql": "pip install 'pytest-sqleval[postgres]'",
}

#: Longest string or blob a SQLite query may build (bytes).
SQLITE_MAX_LENGTH = 10_000_000

_SQLITE_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})

#: Pragmas that take an argument yet only read (schema inspection uses them).
_SQLITE_READ_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo", "foreign_key_list",
})


@dataclass
class EngineFactory:
    """Creates, caches and disposes the engines of one test session (one per xdist worker)."""

    build_dir: Path
    worker: str = "main"
    url_override: str | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT  # the run's setting (command line or ini, else the default)
    connect_timeout_from_cli: bool = False  # the command line wins over a suite's `connect_timeout:`
    run_id: str = field(default_factory=lambda: os.urandom(4).hex())
    #: The run's build folder shared by its xdist workers (the controller's): SQLite and DuckDB files are built
    #: there once per run, under a file lock; None: ``build_dir``.
    shared_build_dir: Path | None = None
    _engines: dict[Any, Any] = field(default_factory=dict)
    _failures: dict[Any, DatabaseError] = field(default_factory=dict)
    _cleanups: list[Callable[[], None]] = field(default_factory=list)

    def engine(self, spec: DatabaseSpec):
        """The read-only engine for ``spec`` (built from its setup scripts the first time)."""
        spec = self._effective(spec)
        key = (spec.url, spec.setup)
        if key in self._failures:
            raise self._failures[key]
        if key not in self._engines:
            try:
                self._engines[key] = self._open(spec)
            except DatabaseError as exc:
                self._failures[key] = exc
                raise
            except Exception as exc:  # noqa: BLE001 - never a raw traceback (it could show the URL)
                error = DatabaseError(f"cannot open {self.describe(spec)}: {type(exc).__name__}: {_first_line(exc)}")
                self._failures[key] = error
                raise error from None
        return self._engines[key]

    def timeout_for(self, spec: DatabaseSpec) -> float:
        """Connect timeout for ``spec``: command line, then the suite's `connect_timeout:`, then ini, then 10 s."""
        if self.connect_timeout_from_cli:
            return self.connect_timeout
        return spec.connect_timeout or self.connect_timeout or DEFAULT_CONNECT_TIMEOUT

    def restricted_role(self, spec: DatabaseSpec) -> str | None:
        """The NOLOGIN SELECT-only role of a PostgreSQL database built for ``spec`` (None if there is none)."""
        key = (self._effective(spec).url, spec.setup)
        engine = self._engines.get(key)
        return restricted_role_for(engine) if engine is not None else None

    def owns(self, engine: Any) -> bool:
        """Did this factory open ``engine``? (False for an engine from an overridden ``sqleval_engine`` fixture.)"""
        return any(engine is mine for mine in self._engines.values())

    def describe(self, spec: DatabaseSpec) -> str:
        """The database a case really runs on, for reports (password hidden)."""
        spec = self._effective(spec)
        if spec.setup:
            return f"{spec.display} (built from {', '.join(p.name for p in spec.setup)})"
        return spec.display

    def _effective(self, spec: DatabaseSpec) -> DatabaseSpec:
        if self.url_override and spec.setup:
            return DatabaseSpec(url=self.url_override, setup=spec.setup, source=spec.source,
                                connect_timeout=spec.connect_timeout)
        return spec

    def close(self) -> None:
        """Dispose the engines and drop what this process built; a failure is one warning line, never a traceback.

        Safe to call twice and from a signal handler (the lists are emptied before the work).
        """
        engines, self._engines = list(self._engines.values()), {}
        cleanups, self._cleanups = list(self._cleanups), []
        for engine in engines:
            try:
                engine.dispose()
            except Exception:  # noqa: BLE001 - best effort at teardown
                pass
        for cleanup in reversed(cleanups):
            try:
                cleanup()
            except Exception as exc:  # noqa: BLE001 - best effort at teardown, with a hint
                _warn(f"sqleval: cleanup failed: {mask_secrets(_first_line(exc))}; drop leftovers with "
                      "`python -m pytest_sqleval.cleanup URL`")

    # -- opening -------------------------------------------------------------
    def _open(self, spec: DatabaseSpec):
        dialect = spec.dialect
        register_url_secrets(spec.url)
        timeout = self.timeout_for(spec)
        if spec.setup:
            spec = self._build(spec, timeout)
        if dialect == "sqlite":
            return sqlite_engine(_sqlite_file(spec))
        if dialect == "duckdb":
            return duckdb_engine(spec.url)
        if dialect == "postgresql":
            return postgres_engine(spec.url, connect_timeout=timeout)
        return generic_engine(spec.url, connect_timeout=timeout)

    def _build(self, spec: DatabaseSpec, timeout: float = DEFAULT_CONNECT_TIMEOUT) -> DatabaseSpec:
        digest = _setup_digest(spec)
        dialect = spec.dialect
        folder = self.shared_build_dir or self.build_dir
        if dialect == "sqlite":
            path = folder / f"sqleval-{digest}.sqlite"
            build_sqlite(path, spec.setup)
            return DatabaseSpec(url=f"sqlite:///{path}", source=spec.source)
        if dialect == "duckdb":
            path = folder / f"sqleval-{digest}.duckdb"
            build_duckdb(path, spec.setup)
            return DatabaseSpec(url=f"duckdb:///{path}", source=spec.source)
        if dialect == "postgresql":
            name = built_database_name(digest, self.run_id, self.worker)
            role = RESTRICTED_ROLE_PREFIX + name[len(BUILT_DATABASE_PREFIX):]
            url = build_postgres(spec.url, name, spec.setup, connect_timeout=timeout, role=role, on_created=lambda: (
                self._cleanups.append(lambda: drop_postgres_database(spec.url, name, role=role, connect_timeout=timeout))))
            return DatabaseSpec(url=url, source=spec.source)
        raise DatabaseError(
            f"setup scripts are supported for SQLite, DuckDB and PostgreSQL, not {dialect} ({spec.display})"
        )


def built_database_name(digest: str, run_id: str, worker: str) -> str:
    """``sqleval_<hash>_<run>_<worker>``: unique per run and per process, within PostgreSQL's 63 bytes."""
    name = f"{BUILT_DATABASE_PREFIX}{digest[:12]}_{_safe(run_id)}_{_safe(worker)}"
    return name[:PG_MAX_IDENTIFIER - len(RESTRICTED_ROLE_PREFIX) + len(BUILT_DATABASE_PREFIX)]


def _warn(message: str) -> None:
    import sys

    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr closed at exit
        pass


def _setup_digest(spec: DatabaseSpec) -> str:
    h = hashlib.sha256(spec.dialect.encode())
    for script in spec.setup:
        h.update(script.read_bytes())
    return h.hexdigest()[:16]


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text.lower())


def _sqlite_file(spec: DatabaseSpec) -> Path:
    path = spec.file_path
    if path is None:
        raise DatabaseError(
            f"{spec.display} is not a SQLite file; use a path, or `url: \"sqlite://\"` with setup scripts"
        )
    return path


# --------------------------------------------------------------------------- SQLite
def sqlite_engine(path: Path):
    """A read-only engine on a SQLite file."""
    from sqlalchemy import create_engine
    from sqlalchemy.pool import StaticPool

    if not path.is_file():
        raise DatabaseError(f"SQLite database not found: {path}")
    uri = sqlite_read_only_uri(path)

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        harden_sqlite(conn)
        return conn

    try:
        conn = connect()
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        conn.close()
    except sqlite3.Error as exc:
        hint = ""
        if "immutable=1" not in uri:
            hint = (f"; its WAL/journal file holds changes not yet in the database and this directory is not "
                    f"writable: checkpoint it first (sqlite3 {path.name} 'PRAGMA wal_checkpoint(TRUNCATE)')")
        raise DatabaseError(f"cannot open SQLite database {path}: {exc}{hint}") from None
    from .targets import register_target

    return register_target(create_engine("sqlite://", creator=connect, poolclass=StaticPool), ("sqlite", str(path.resolve())))


def sqlite_read_only_uri(path: Path) -> str:
    """The URI that opens ``path`` read-only without ever creating files beside it.

    A database with no pending WAL or rollback journal (the normal state of a
    closed database, WAL mode included) opens with ``immutable=1``: SQLite then
    takes no locks and creates no ``-wal``/``-shm`` files, so it works in a
    read-only checkout. A database whose non-empty ``-wal`` (or ``-journal``)
    holds changes still to be applied opens with ``mode=ro`` alone, so those
    changes are read (SQLite needs the ``-shm`` file, or a writable directory).
    """
    resolved = path.resolve()
    pending = any(
        _non_empty(resolved.with_name(resolved.name + suffix)) for suffix in ("-wal", "-journal")
    )
    return f"{resolved.as_uri()}?mode=ro" + ("" if pending else "&immutable=1")


def _non_empty(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def harden_sqlite(conn: sqlite3.Connection) -> None:
    conn.text_factory = _decode_text
    conn.execute("PRAGMA query_only = ON")
    if hasattr(conn, "setlimit"):
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_MAX_LENGTH)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.set_authorizer(_sqlite_authorizer)


def _decode_text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


_SQLITE_DENIED_ACTIONS = frozenset(
    getattr(sqlite3, name)
    for name in (
        "SQLITE_ATTACH", "SQLITE_DETACH", "SQLITE_INSERT", "SQLITE_UPDATE", "SQLITE_DELETE",
        "SQLITE_CREATE_INDEX", "SQLITE_CREATE_TABLE", "SQLITE_CREATE_TEMP_INDEX", "SQLITE_CREATE_TEMP_TABLE",
        "SQLITE_CREATE_TEMP_TRIGGER", "SQLITE_CREATE_TEMP_VIEW", "SQLITE_CREATE_TRIGGER", "SQLITE_CREATE_VIEW",
        "SQLITE_CREATE_VTABLE", "SQLITE_DROP_INDEX", "SQLITE_DROP_TABLE", "SQLITE_DROP_TEMP_INDEX",
        "SQLITE_DROP_TEMP_TABLE", "SQLITE_DROP_TEMP_TRIGGER", "SQLITE_DROP_TEMP_VIEW", "SQLITE_DROP_TRIGGER",
        "SQLITE_DROP_VIEW", "SQLITE_DROP_VTABLE", "SQLITE_ALTER_TABLE", "SQLITE_REINDEX", "SQLITE_ANALYZE",
    )
    if hasattr(sqlite3, name)
)


def _sqlite_authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None, _source: str | None) -> int:
    if action in _SQLITE_DENIED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and arg2 is not None and (arg1 or "").lower() not in _SQLITE_READ_PRAGMAS:
        return sqlite3.SQLITE_DENY  # `PRAGMA x = y` sets something; reading a pragma is fine
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _SQLITE_DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def build_sqlite(path: Path, scripts: tuple[Path, ...]) -> None:
    """Build ``path`` from the scripts, each in one transaction (no journal file, no fsync: the file is private
    until the atomic rename). Processes sharing the folder (xdist workers) build it once, under a file lock."""
    if path.is_file():
        return
    with _build_lock(path):
        if path.is_file():  # another process built it while this one waited
            return
        with _built_atomically(path, _partial_path(path)) as partial:
            try:
                _run_sqlite_build(partial, scripts, one_transaction=True)
            except DatabaseError:
                # The script manages its own transactions (BEGIN/COMMIT inside), or fails: run it as written,
                # statement by statement, so it behaves (and fails, with its own message) exactly as it would.
                partial.unlink(missing_ok=True)
                _run_sqlite_build(partial, scripts, one_transaction=False)


def _run_sqlite_build(partial: Path, scripts: tuple[Path, ...], *, one_transaction: bool) -> None:
    conn = sqlite3.connect(partial, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = MEMORY")
        conn.execute("PRAGMA synchronous = OFF")

        def execute(text: str) -> None:
            conn.executescript(f"BEGIN;\n{text}\n;\nCOMMIT;" if one_transaction else text)

        run_setup_scripts(scripts, execute, sqlite3.Error, "SQLite")
        if conn.in_transaction:
            conn.commit()
    finally:
        conn.close()


def _partial_path(path: Path) -> Path:
    """A build file private to this process (a shared build folder may hold another process's partial build)."""
    return path.with_name(f"{path.stem}.{os.getpid()}.partial{path.suffix}")


@contextmanager
def _build_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path``'s build (``fcntl.flock`` on ``<path>.lock``); no lock where fcntl is missing
    (the atomic rename still keeps every reader on a complete file)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextmanager
def _built_atomically(path: Path, partial: Path) -> Iterator[Path]:
    """Build into ``partial``; it becomes ``path`` only when the build succeeded."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial.unlink(missing_ok=True)
    try:
        yield partial
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, path)


def run_setup_scripts(scripts: tuple[Path, ...], execute: Callable[[str], Any], errors, engine_name: str) -> None:
    """Run each (trusted) setup script whole; a failure names the script and the engine."""
    for script in scripts:
        try:
            text = script.read_text(encoding="utf-8")
        except OSError as exc:
            raise DatabaseError(f"cannot read setup script {script}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise DatabaseError(f"setup script {script} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        try:
            execute(text)
        except errors as exc:
            raise DatabaseError(f"setup script {script} failed on {engine_name}: {_first_line(exc)}") from None
        except RecursionError:
            raise DatabaseError(f"setup script {script} failed on {engine_name}: nested too deeply") from None


# --------------------------------------------------------------------------- DuckDB
DUCKDB_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "lock_configuration": True,
}


def duckdb_engine(url: str, *, extra_config: dict[str, Any] | None = None):
    """A read-only DuckDB engine; ``extra_config`` adds settings (the query process's memory and thread caps)."""
    from sqlalchemy import create_engine

    from .targets import register_target

    _require_module("duckdb_engine", "duckdb")
    try:
        config = {**(extra_config or {}), **DUCKDB_CONFIG}  # lock_configuration last: after the caps
        engine = create_engine(url, connect_args={"read_only": True, "config": config})
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1").fetchall()
    except DatabaseError:
        raise
    except Exception as exc:  # noqa: BLE001 - driver errors vary; report them plainly
        raise DatabaseError(f"cannot open DuckDB database {hide_password(url)}: {_first_line(exc)}") from None
    return register_target(engine, ("duckdb", url))


def build_duckdb(path: Path, scripts: tuple[Path, ...]) -> None:
    _require_module("duckdb", "duckdb")

    if path.is_file():
        return
    with _build_lock(path):
        if path.is_file():  # another process built it while this one waited
            return
        with _built_atomically(path, _partial_path(path)) as partial:
            try:
                _run_duckdb_build(partial, scripts, one_transaction=True)
            except DatabaseError:  # its own transactions, or a failure: run it as written (its own message)
                partial.unlink(missing_ok=True)
                partial.with_name(partial.name + ".wal").unlink(missing_ok=True)
                _run_duckdb_build(partial, scripts, one_transaction=False)


def _run_duckdb_build(partial: Path, scripts: tuple[Path, ...], *, one_transaction: bool) -> None:
    import duckdb

    conn = duckdb.connect(str(partial))
    try:
        def execute(text: str) -> None:
            conn.execute(f"BEGIN TRANSACTION;\n{text}\n;\nCOMMIT;" if one_transaction else text)

        run_setup_scripts(scripts, execute, duckdb.Error, "DuckDB")
        conn.execute("CHECKPOINT")
    finally:
        conn.close()


# --------------------------------------------------------------------------- PostgreSQL
def postgres_engine(url: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
    from sqlalchemy import create_engine, event

    _require_module("psycopg", "postgresql")
    register_url_secrets(url)
    try:
        url = psycopg_url(url)
        engine = create_engine(url, pool_pre_ping=True,
                               connect_args={"connect_timeout": libpq_timeout(connect_timeout)})
    except Exception as exc:  # noqa: BLE001
        raise DatabaseError(f"bad PostgreSQL URL {hide_password(url)}: {_first_line(exc)}") from None

    @event.listens_for(engine, "connect")
    def _read_only_session(dbapi_conn, _record):  # pragma: no cover - exercised with a live server
        autocommit = dbapi_conn.autocommit
        dbapi_conn.autocommit = True
        dbapi_conn.execute("SET default_transaction_read_only = on")
        dbapi_conn.autocommit = autocommit

    _probe(engine, url, "PostgreSQL", connect_timeout)
    from .targets import register_target

    return register_target(engine, ("postgresql", url))


def psycopg_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` URLs use psycopg 3 (the ``postgres`` extra)."""
    from sqlalchemy.engine import make_url

    scheme, sep, rest = url.partition("://")
    if scheme in ("postgres", "postgresql"):
        url = f"postgresql+psycopg{sep}{rest}"
    return make_url(url).render_as_string(hide_password=False)


def libpq_timeout(seconds: float) -> int:
    """libpq's ``connect_timeout`` is whole seconds (and at least 2: libpq waits 2 s for anything smaller)."""
    import math

    return max(2, math.ceil(seconds))


def _admin_connect(url: str, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
    """A psycopg connection in autocommit mode from a SQLAlchemy URL."""
    import time

    from sqlalchemy.engine import make_url

    _require_module("psycopg", "postgresql")
    import psycopg

    register_url_secrets(url)
    try:
        parsed = make_url(url)
        conninfo = _libpq_conninfo(parsed)
    except Exception as exc:  # noqa: BLE001 - a bad port, a bad query string: never echo the URL raw
        raise DatabaseError(f"bad PostgreSQL URL {hide_password(url)}: {type(exc).__name__}: {_first_line(exc)}") from None
    started = time.monotonic()
    try:
        return psycopg.connect(conninfo, autocommit=True, connect_timeout=libpq_timeout(connect_timeout))
    except psycopg.Error as exc:
        raise DatabaseError(_connect_failure("PostgreSQL", url, exc, time.monotonic() - started, connect_timeout,
                                            extra=(parsed.password,))) from None


def _connect_failure(what: str, url: str, exc: BaseException, elapsed: float, timeout: float, extra=()) -> str:
    """The message for a failed connection: the (masked) host, and whether it timed out."""
    detail = mask_secrets(_first_line(exc), extra=extra)
    if "connection info string" in detail or "invalid dsn" in detail.lower():
        detail = "invalid connection parameters in the URL"  # libpq would echo part of the conninfo
    where = _host_of(url)
    if elapsed >= timeout * 0.9 or "timeout expired" in detail.lower() or "timed out" in detail.lower():
        return (f"cannot connect to {what} at {hide_password(url)}: timed out after {timeout:g} s: the host {where} "
                "accepted no connection or never answered (connect timeout; raise it with --sqleval-connect-timeout "
                "or the suite's `connect_timeout:`)")
    return (f"cannot connect to {what} at {hide_password(url)}: {detail}; check that the server is running and the URL "
            "(host, port, user, database)")


def _host_of(url: str) -> str:
    """``host:port`` of a URL for messages (masked; the whole masked URL when it cannot be parsed)."""
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
        if parsed.host:
            return mask_secrets(f"{parsed.host}:{parsed.port}" if parsed.port else parsed.host)
    except Exception:  # noqa: BLE001
        pass
    return hide_password(url)


def _libpq_conninfo(parsed) -> str:
    from psycopg.conninfo import make_conninfo

    params: dict[str, Any] = {}
    for key, value in (("host", parsed.host), ("port", parsed.port), ("user", parsed.username),
                       ("password", parsed.password), ("dbname", parsed.database)):
        if value is not None:
            params[key] = value
    for key, value in parsed.query.items():
        params[key] = value if isinstance(value, str) else value[-1]
    return make_conninfo("", **params)


def build_postgres(url: str, name: str, scripts: tuple[Path, ...], *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                   role: str | None = None, on_created: Callable[[], Any] | None = None) -> str:
    """Create database ``name`` on the server of ``url`` and run the setup scripts in it; returns its URL.

    With ``role``, also create that NOLOGIN role with only USAGE on the built
    schemas and SELECT on the built tables (see :func:`restricted_role_for`);
    a server that refuses (no CREATEROLE right) just gets no restricted role.
    ``on_created`` runs as soon as the database exists (to register its cleanup
    before the setup scripts run).
    """
    import psycopg
    from psycopg import sql as pgsql
    from sqlalchemy.engine import make_url

    with _admin_connect(url, connect_timeout) as admin:
        try:
            admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {}").format(pgsql.Identifier(name)))
            admin.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
        except psycopg.Error as exc:
            raise DatabaseError(f"cannot create database {name} on {hide_password(url)}: {_first_line(exc)}; "
                                "the user needs the CREATEDB right to build setup-script databases") from None
        if on_created is not None:
            on_created()
    target = make_url(psycopg_url(url)).set(database=name).render_as_string(hide_password=False)
    with _admin_connect(target, connect_timeout) as conn:
        run_setup_scripts(scripts, conn.execute, psycopg.Error, "PostgreSQL")
        if role is not None and _create_restricted_role(conn, role, name):
            _restricted_roles[_role_key(target)] = role
    return target


def _create_restricted_role(conn, role: str, database: str) -> bool:
    """A NOLOGIN role that may only read the built tables; False when the server does not let us create it."""
    import psycopg
    from psycopg import sql as pgsql

    ident = pgsql.Identifier(role)
    try:
        with conn.transaction():
            conn.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(ident))
            conn.execute(pgsql.SQL("CREATE ROLE {} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT "
                                   "NOREPLICATION NOBYPASSRLS").format(ident))
            conn.execute(pgsql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(pgsql.Identifier(database)))
            schemas = [row[0] for row in conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'")]
            for schema in schemas:
                conn.execute(pgsql.SQL("REVOKE CREATE ON SCHEMA {} FROM PUBLIC").format(pgsql.Identifier(schema)))
                conn.execute(pgsql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(pgsql.Identifier(schema), ident))
                conn.execute(pgsql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(pgsql.Identifier(schema), ident))
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

    with _admin_connect(url, connect_timeout) as admin:
        try:
            admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(name)))
            if role is not None:
                admin.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(role)))
        except psycopg.Error as exc:
            raise DatabaseError(f"cannot drop database {name} on {hide_password(url)}: {_first_line(exc)}") from None
    try:
        target = make_url(psycopg_url(url)).set(database=name).render_as_string(hide_password=False)
        _restricted_roles.pop(_role_key(target), None)
    except Exception:  # noqa: BLE001
        pass


# --------------------------------------------------------------------------- anything else
#: connect_args naming a connect timeout, for the drivers that take one (best effort for any other URL).
_GENERIC_TIMEOUT_ARGS = {
    "pymysql": "connect_timeout", "mysqldb": "connect_timeout", "mariadbconnector": "connect_timeout",
    "mysqlconnector": "connection_timeout", "asyncmy": "connect_timeout", "aiomysql": "connect_timeout",
    "pymssql": "login_timeout", "pyodbc": "timeout", "psycopg2": "connect_timeout", "pg8000": "timeout",
    "oracledb": "tcp_connect_timeout", "cx_oracle": None,
}


def generic_engine(url: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
    """Any other SQLAlchemy URL: the driver's own connect timeout where it has one, and a watchdog on the probe."""
    from sqlalchemy import create_engine

    register_url_secrets(url)
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
        connect_args: dict[str, Any] = {}
        if parsed.get_backend_name() == "postgresql":
            connect_args["connect_timeout"] = libpq_timeout(connect_timeout)
        else:
            arg = _GENERIC_TIMEOUT_ARGS.get(parsed.get_driver_name())
            if arg:
                connect_args[arg] = max(1, int(round(connect_timeout)))
        engine = create_engine(url, connect_args=connect_args) if connect_args else create_engine(url)
    except Exception as exc:  # noqa: BLE001
        raise DatabaseError(f"bad database URL {hide_password(url)}: {_first_line(exc)}") from None
    _probe(engine, url, engine.dialect.name, connect_timeout, watchdog=True)
    return engine


def _probe(engine, url: str, what: str, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, *, watchdog: bool = False) -> None:
    """Connect once and run ``SELECT 1``; with ``watchdog``, give up (in a daemon thread) after the connect timeout."""
    import threading
    import time

    outcome: dict[str, BaseException | None] = {}

    def attempt() -> None:
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1").fetchall()
            outcome["error"] = None
        except BaseException as exc:  # noqa: BLE001 - reported below
            outcome["error"] = exc

    started = time.monotonic()
    if watchdog:
        thread = threading.Thread(target=attempt, name="sqleval-connect", daemon=True)
        thread.start()
        thread.join(connect_timeout + 1.0)
        if thread.is_alive():
            raise DatabaseError(_connect_failure(what, url, TimeoutError("timed out"), time.monotonic() - started,
                                                 connect_timeout))
    else:
        attempt()
    error = outcome.get("error")
    if error is not None:
        engine.dispose()
        if not isinstance(error, Exception):
            raise error
        raise DatabaseError(_connect_failure(what, url, error, time.monotonic() - started, connect_timeout)) from None


def _require_module(module: str, extra: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise DatabaseError(f"the {extra} driver is not installed: {EXTRAS[extra]}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
