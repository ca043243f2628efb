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
server (PostgreSQL: ``sqleval_<hash>_<worker>``, dropped at the end of the run).
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
from ..suite import DatabaseSpec, hide_password

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
        return self._engines[key]

    def describe(self, spec: DatabaseSpec) -> str:
        """The database a case really runs on, for reports (password hidden)."""
        spec = self._effective(spec)
        if spec.setup:
            return f"{spec.display} (built from {', '.join(p.name for p in spec.setup)})"
        return spec.display

    def _effective(self, spec: DatabaseSpec) -> DatabaseSpec:
        if self.url_override and spec.setup:
            return DatabaseSpec(url=self.url_override, setup=spec.setup, source=spec.source)
        return spec

    def close(self) -> None:
        for engine in self._engines.values():
            engine.dispose()
        self._engines.clear()
        for cleanup in reversed(self._cleanups):
            try:
                cleanup()
            except Exception:  # noqa: BLE001 - best effort at teardown
                pass
        self._cleanups.clear()

    # -- opening -------------------------------------------------------------
    def _open(self, spec: DatabaseSpec):
        dialect = spec.dialect
        if spec.setup:
            spec = self._build(spec)
        if dialect == "sqlite":
            return sqlite_engine(_sqlite_file(spec))
        if dialect == "duckdb":
            return duckdb_engine(spec.url)
        if dialect == "postgresql":
            return postgres_engine(spec.url)
        return generic_engine(spec.url)

    def _build(self, spec: DatabaseSpec) -> DatabaseSpec:
        digest = _setup_digest(spec)
        dialect = spec.dialect
        if dialect == "sqlite":
            path = self.build_dir / f"sqleval-{digest}.sqlite"
            build_sqlite(path, spec.setup)
            return DatabaseSpec(url=f"sqlite:///{path}", source=spec.source)
        if dialect == "duckdb":
            path = self.build_dir / f"sqleval-{digest}.duckdb"
            build_duckdb(path, spec.setup)
            return DatabaseSpec(url=f"duckdb:///{path}", source=spec.source)
        if dialect == "postgresql":
            name = f"sqleval_{digest[:12]}_{_safe(self.worker)}"
            url = build_postgres(spec.url, name, spec.setup)
            self._cleanups.append(lambda: drop_postgres_database(spec.url, name))
            return DatabaseSpec(url=url, source=spec.source)
        raise DatabaseError(
            f"setup scripts are supported for SQLite, DuckDB and PostgreSQL, not {dialect} ({spec.display})"
        )


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
    uri = f"{path.resolve().as_uri()}?mode=ro"

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        harden_sqlite(conn)
        return conn

    try:
        conn = connect()
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        conn.close()
    except sqlite3.Error as exc:
        raise DatabaseError(f"cannot open SQLite database {path}: {exc}") from None
    return create_engine("sqlite://", creator=connect, poolclass=StaticPool)


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
    if path.is_file():
        return
    with _built_atomically(path, path.with_suffix(".partial")) as partial:
        conn = sqlite3.connect(partial)
        try:
            run_setup_scripts(scripts, conn.executescript, sqlite3.Error, "SQLite")
            conn.commit()
        finally:
            conn.close()


@contextmanager
def _built_atomically(path: Path, partial: Path) -> Iterator[Path]:
    """Build into ``partial``; it becomes ``path`` only when the build succeeded."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial.unlink(missing_ok=True)
    yield partial
    os.replace(partial, path)


def run_setup_scripts(scripts: tuple[Path, ...], execute: Callable[[str], Any], errors, engine_name: str) -> None:
    """Run each (trusted) setup script whole; a failure names the script and the engine."""
    for script in scripts:
        try:
            execute(script.read_text(encoding="utf-8"))
        except errors as exc:
            raise DatabaseError(f"setup script {script} failed on {engine_name}: {_first_line(exc)}") from None


# --------------------------------------------------------------------------- DuckDB
DUCKDB_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "lock_configuration": True,
}


def duckdb_engine(url: str):
    from sqlalchemy import create_engine

    _require_module("duckdb_engine", "duckdb")
    try:
        engine = create_engine(url, connect_args={"read_only": True, "config": dict(DUCKDB_CONFIG)})
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1").fetchall()
    except DatabaseError:
        raise
    except Exception as exc:  # noqa: BLE001 - driver errors vary; report them plainly
        raise DatabaseError(f"cannot open DuckDB database {hide_password(url)}: {_first_line(exc)}") from None
    return engine


def build_duckdb(path: Path, scripts: tuple[Path, ...]) -> None:
    _require_module("duckdb", "duckdb")
    import duckdb

    if path.is_file():
        return
    with _built_atomically(path, path.with_name(path.stem + ".partial.duckdb")) as partial:
        conn = duckdb.connect(str(partial))
        try:
            run_setup_scripts(scripts, conn.execute, duckdb.Error, "DuckDB")
            conn.execute("CHECKPOINT")
        finally:
            conn.close()


# --------------------------------------------------------------------------- PostgreSQL
def postgres_engine(url: str):
    from sqlalchemy import create_engine, event

    _require_module("psycopg", "postgresql")
    try:
        url = psycopg_url(url)
        engine = create_engine(url, pool_pre_ping=True)
    except Exception as exc:  # noqa: BLE001
        raise DatabaseError(f"bad PostgreSQL URL {hide_password(url)}: {_first_line(exc)}") from None

    @event.listens_for(engine, "connect")
    def _read_only_session(dbapi_conn, _record):  # pragma: no cover - exercised with a live server
        autocommit = dbapi_conn.autocommit
        dbapi_conn.autocommit = True
        dbapi_conn.execute("SET default_transaction_read_only = on")
        dbapi_conn.autocommit = autocommit

    _probe(engine, url, "PostgreSQL")
    return engine


def psycopg_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` URLs use psycopg 3 (the ``postgres`` extra)."""
    from sqlalchemy.engine import make_url

    scheme, sep, rest = url.partition("://")
    if scheme in ("postgres", "postgresql"):
        url = f"postgresql+psycopg{sep}{rest}"
    return make_url(url).render_as_string(hide_password=False)


def _admin_connect(url: str):
    """A psycopg connection in autocommit mode from a SQLAlchemy URL."""
    from sqlalchemy.engine import make_url

    _require_module("psycopg", "postgresql")
    import psycopg

    parsed = make_url(url)
    try:
        return psycopg.connect(_libpq_conninfo(parsed), autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise DatabaseError(
            f"cannot connect to {hide_password(url)}: {_first_line(exc)}; check that the server is running and the URL"
        ) from None


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


def build_postgres(url: str, name: str, scripts: tuple[Path, ...]) -> str:
    from psycopg import sql as pgsql
    from sqlalchemy.engine import make_url

    with _admin_connect(url) as admin:
        admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {}").format(pgsql.Identifier(name)))
        admin.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
    target = make_url(psycopg_url(url)).set(database=name).render_as_string(hide_password=False)
    import psycopg

    with _admin_connect(target) as conn:
        run_setup_scripts(scripts, conn.execute, psycopg.Error, "PostgreSQL")
    return target


def drop_postgres_database(url: str, name: str) -> None:
    from psycopg import sql as pgsql

    with _admin_connect(url) as admin:
        admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(name)))


# --------------------------------------------------------------------------- anything else
def generic_engine(url: str):
    from sqlalchemy import create_engine

    try:
        engine = create_engine(url)
    except Exception as exc:  # noqa: BLE001
        raise DatabaseError(f"bad database URL {hide_password(url)}: {_first_line(exc)}") from None
    _probe(engine, url, engine.dialect.name)
    return engine


def _probe(engine, url: str, what: str) -> None:
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1").fetchall()
    except Exception as exc:  # noqa: BLE001
        engine.dispose()
        raise DatabaseError(
            f"cannot connect to {what} at {hide_password(url)}: {_first_line(exc)}; "
            "check that the server is running and the URL (host, port, user, database)"
        ) from None


def _require_module(module: str, extra: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise DatabaseError(f"the {extra} driver is not installed: {EXTRAS[extra]}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
