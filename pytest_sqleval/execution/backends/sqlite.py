"""SQLite: a read-only file with an authorizer, the progress-handler timeout, setup scripts in one transaction.

The file is opened with the URI ``mode=ro`` (the OS refuses writes), ``PRAGMA query_only`` is on, an
authorizer denies ATTACH, setting a PRAGMA, writes and extension/file functions, and string/blob length
is capped. A query is interrupted by a progress handler at its timeout.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from ...errors import DatabaseError, QueryError
from ...results import QueryResult
from ...suite import database_file_kind, file_url, hide_password
from ..targets import file_version, register_target, registered_target
from .base import (
    DEFAULT_CONNECT_TIMEOUT,
    NOT_A_QUERY,
    Backend,
    BuildContext,
    Dialect,
    Limits,
    Target,
    fetch_capped,
    memory_message,
    timeout_message,
)
from .setup_scripts import _code_start, build_file_once, cut_around, failing_statement, run_setup_scripts

#: Longest string or blob a SQLite query may build (bytes).
SQLITE_MAX_LENGTH = 10_000_000

#: SQLite virtual-machine instructions between two timeout checks.
SQLITE_PROGRESS_STEPS = 1000

_SQLITE_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})

#: Virtual tables no query reads: ``sqlite_stmt`` lists the SQL of the statements the connection keeps prepared (the
#: gold SQL of earlier cases among them).
_SQLITE_DENIED_TABLES = frozenset({"sqlite_stmt"})

#: Pragmas that take an argument yet only read (schema inspection uses them).
_SQLITE_READ_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo", "foreign_key_list",
})


class SQLiteBackend(Backend):
    name = "sqlite"
    dialect = Dialect("sqlite", "sqlite")

    def open(self, url: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
        return sqlite_engine(sqlite_file(url))

    def harden(self, dbapi_connection: Any) -> None:
        harden_sqlite(dbapi_connection)

    def build(self, url: str, scripts: tuple[Path, ...], context: BuildContext) -> str:
        path = context.folder / f"sqleval-{context.digest}.sqlite"
        build_sqlite(path, scripts)
        return file_url("sqlite", path)

    def run(self, conn: Any, sql: str, limits: Limits) -> QueryResult:
        deadline = time.monotonic() + limits.timeout
        conn.set_progress_handler(lambda: time.monotonic() > deadline, SQLITE_PROGRESS_STEPS)
        if limits.text_errors != "replace":
            # "strict": "Could not decode to UTF-8 column ...", as BIRD's sqlite3 says; "ignore": test-suite's decoding
            conn.text_factory = _drop_bad_bytes if limits.text_errors == "ignore" else str
        try:
            cursor = conn.cursor()
            try:
                cursor.execute(sql)
                rows = fetch_capped(cursor, limits)
            except sqlite3.Error as exc:
                raise self.classify(exc, conn=conn, sql=sql, limits=limits) from None
            except sqlite3.Warning as exc:  # "You can only execute one statement at a time."
                raise QueryError("rejected", str(exc)) from None
            if cursor.description is None:  # a writable engine of the user's ran a statement that is no query
                raise QueryError("rejected", NOT_A_QUERY)
            columns = tuple(d[0] for d in cursor.description)
            cursor.close()
        finally:
            conn.set_progress_handler(None, 0)
            if limits.text_errors != "replace":
                conn.text_factory = _decode_text
        return QueryResult(columns=columns, rows=rows)  # capped as fetched (fetch_capped)

    def classify(self, exc: BaseException, *, conn: Any = None, sql: str = "", limits: Limits | None = None,
                 elapsed: float = 0.0) -> QueryError:
        message = str(exc)
        lowered = message.lower()
        if lowered == "interrupted":
            return QueryError("timeout", timeout_message(limits.label if limits else elapsed))
        if lowered == "out of memory" or isinstance(exc, MemoryError):
            return QueryError("memory", memory_message())
        if lowered == "string or blob too big":  # SQLITE_TOOBIG: a value over the connection's length limit
            return QueryError("memory", f"{message}: the query built a value over the {SQLITE_MAX_LENGTH:,} bytes "
                                        "SQLite allows one string or blob here (a fixed limit of the read-only "
                                        "connection: it cannot be raised, --sqleval-max-memory does not change it)")
        if "not authorized" in lowered or "readonly" in lowered or "read-only" in lowered or "query_only" in lowered:
            return QueryError("rejected", f"refused by the read-only connection: {message}")
        if isinstance(exc, sqlite3.ProgrammingError) and "one statement" in lowered:
            return QueryError("rejected", message)
        return QueryError("syntax" if conn is None or not _sqlite_compiles(conn, sql) else "runtime", message)

    def parse_error(self, sql: str) -> str | None:
        """Compiled as ``EXPLAIN <sql>`` (EXPLAIN lists the program, it never runs the statement) on a new, empty
        in-memory database whose authorizer denies every action: only SQLite's parser errors count."""
        try:
            tokens = sqlite_tokens(sql)
        except Exception:  # noqa: BLE001 - sqlglot cannot read it: SQLite's parser decides alone
            tokens = []
        text = sql if tokens and tokens[0].text.upper() == "EXPLAIN" else "EXPLAIN " + sql
        conn = sqlite3.connect(":memory:")
        try:
            conn.set_authorizer(lambda *_: sqlite3.SQLITE_DENY)
            conn.execute(text).close()
        except sqlite3.Error as exc:
            message = str(exc)
            parse = "syntax error" in message or message == "incomplete input" or message.startswith("unrecognized token")
            return message if parse else None
        except sqlite3.Warning:  # "You can only execute one statement at a time": the first one parsed
            return None
        finally:
            conn.close()
        return None

    def table_order(self, engine) -> list[str]:
        """Creation order, as Spider's own evaluator reads ``sqlite_master``."""
        with engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            return [row[0] for row in rows]

    def target(self, engine: Any) -> Target | None:
        registered = registered_target(engine)
        if registered is not None:
            return registered
        database = engine.url.database
        if database and database != ":memory:" and not database.startswith("file:") and Path(database).is_file():
            return ("sqlite", str(Path(database).resolve()))
        return None

    def open_target(self, target: Target, *, max_memory: int | None = None):
        return sqlite_engine(Path(target[1]), watch=False)  # the query process reopens a changed file itself


def sqlite_file(url: str) -> Path:
    """The file of a ``sqlite:///path`` URL; DatabaseError for an in-memory or otherwise fileless URL."""
    from sqlalchemy.engine import make_url

    try:
        database = make_url(url).database
    except Exception:  # noqa: BLE001 - reported below as not a file
        database = None
    if not database or database == ":memory:":
        raise DatabaseError(
            f"{hide_password(url)} is not a SQLite file; use a path, or `url: \"sqlite://\"` with setup scripts"
        )
    return Path(database)


def sqlite_engine(path: Path, *, watch: bool = True):
    """A read-only engine on a SQLite file.

    ``watch``: a connection is reopened when the file (or its WAL) changed since it was opened (a test's own
    writable engine on it between two suites): opened ``immutable=1``, it would go on reading its old pages
    (the schema, and the queries run in this process)."""
    from sqlalchemy import create_engine, event
    from sqlalchemy.exc import DisconnectionError
    from sqlalchemy.pool import StaticPool

    if not path.is_file():
        raise DatabaseError(f"SQLite database not found: {path}")
    uri = sqlite_read_only_uri(path)

    def connect() -> sqlite3.Connection:
        # (read afresh: a connection reopened after a change may find a WAL holding changes, see above)
        conn = sqlite3.connect(sqlite_read_only_uri(path), uri=True, check_same_thread=False,
                               factory=_PlainSQLiteConnection)
        harden_sqlite(conn)
        return conn

    try:
        conn = connect()
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        conn.close()
    except sqlite3.Error as exc:
        hint, fix = "", None
        if database_file_kind(path) == "duckdb":  # read only after SQLite refused it
            hint = (f"; it is a DuckDB database: name it with a .duckdb suffix or write "
                    f"`database: duckdb:///{path}`")
        elif getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
            hint, fix = _not_a_database(path)
        elif "immutable=1" not in uri:
            hint = (f"; its WAL/journal file holds changes not yet in the database and this directory is not "
                    f"writable: checkpoint it first (sqlite3 {path.name} 'PRAGMA wal_checkpoint(TRUNCATE)')")
        raise DatabaseError(f"cannot open SQLite database {path}: {exc}{hint}", fix=fix) from None
    target = ("sqlite", str(path.resolve()))
    engine = register_target(create_engine("sqlite://", creator=connect, poolclass=StaticPool), target)
    if watch:
        opened = [file_version(target)]

        @event.listens_for(engine, "checkout")
        def _reopen_if_changed(dbapi_connection, record, proxy) -> None:  # noqa: ANN001 - SQLAlchemy's signature
            version = file_version(target)
            if version != opened[0]:
                opened[0] = version
                raise DisconnectionError(f"{path} changed since it was opened")  # SQLAlchemy reconnects
    return engine


def _not_a_database(path: Path) -> tuple[str, str]:
    """What a file SQLite refused as "not a database" is, from its first bytes, and what to do about it (a new
    user's `database: schema.sql`, a Git LFS pointer checked out without its content, a CSV, a download's page)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        head = b""
    if head.startswith(b"version https://git-lfs.github.com/spec/"):
        return ("; it is a Git LFS pointer, not the database (the file's content was never fetched)",
                "fetch it with `git lfs pull` (Git LFS installed: `git lfs install`), then run again")
    if _is_utf8_text(head, whole=len(head) < 4096):
        return ("; it is a text file, not a SQLite database",
                f"for a SQL script that builds the database write `database: {{url: \"sqlite://\", setup: "
                f"[{path.name}]}}` (built for the run); otherwise point `database:` at a SQLite database file "
                "(or give a SQLAlchemy URL)")
    return ("; it is not a SQLite database (its first bytes are not 'SQLite format 3')",
            "point `database:` at a SQLite database file, or give a SQLAlchemy URL for another engine "
            "(duckdb:///file.duckdb, postgresql+psycopg://...)")


def _is_utf8_text(head: bytes, *, whole: bool) -> bool:
    """``head`` (a file's first bytes, all of it when ``whole``) reads as UTF-8 text with no NUL byte."""
    if b"\x00" in head:
        return False
    for cut in range(1 if whole else 4):  # a character cut at the end of the bytes read
        try:
            head[:len(head) - cut].decode("utf-8")
            return True
        except UnicodeDecodeError:
            continue
    return False


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


class _PlainSQLiteConnection(sqlite3.Connection):
    """A connection with SQLite's own functions only. SQLAlchemy's SQLite dialect registers ``regexp()`` and
    ``floor()`` (Python's ``math.floor``) on every connection it gets; plain sqlite3, which the official
    evaluators use, has no REGEXP, and SQLite's own floor() returns REAL and NULL for NULL or text, where
    SQLAlchemy's returns an int and fails on NULL ("user-defined function raised exception")."""

    def create_function(self, name, narg, func, *args, **kwargs):  # noqa: ANN001 - sqlite3's own signature
        if (name.lower(), narg) in (("regexp", 2), ("floor", 1)):
            return None
        return super().create_function(name, narg, func, *args, **kwargs)


def harden_sqlite(conn: sqlite3.Connection) -> None:
    conn.text_factory = _decode_text
    conn.execute("PRAGMA query_only = ON")
    # SQLite spills DISTINCT/GROUP BY/ORDER BY work tables to temp files (/var/tmp) by default: gigabytes of disk a
    # query wrote outside the memory cap. In memory they count against the cap (kind `memory`), as DuckDB's no spilling
    conn.execute("PRAGMA temp_store = MEMORY")
    if hasattr(conn, "setlimit"):
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_MAX_LENGTH)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.set_authorizer(_sqlite_authorizer)


def _decode_text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _drop_bad_bytes(raw: bytes) -> str:
    return raw.decode("utf-8", errors="ignore")  # test-suite-sql-eval: text_factory = b.decode(errors="ignore")


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


#: The schema table's names. Using an eponymous virtual table (``json_each``, ``json_tree``, ``pragma_table_info``,
#: ``generate_series``) makes SQLite declare its columns, and that declaration asks the authorizer for an UPDATE
#: of each column of ``sqlite_master``. No statement that reaches this connection can write it: the guard lets
#: only one SELECT through, the file is opened ``mode=ro``, ``query_only`` is on, and ``writable_schema`` cannot
#: be set (the PRAGMA is denied below), so allowing these asks opens nothing.
_SQLITE_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})


def _sqlite_authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None, _source: str | None) -> int:
    if action == sqlite3.SQLITE_UPDATE and (arg1 or "").lower() in _SQLITE_SCHEMA_TABLES:
        return sqlite3.SQLITE_OK  # an eponymous virtual table declaring its columns (see above)
    if action in _SQLITE_DENIED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and arg2 is not None and (arg1 or "").lower() not in _SQLITE_READ_PRAGMAS:
        return sqlite3.SQLITE_DENY  # `PRAGMA x = y` sets something; reading a pragma is fine
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _SQLITE_DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_READ and (arg1 or "").lower() in _SQLITE_DENIED_TABLES:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def sqlite_tokens(sql: str):
    """sqlglot's SQLite tokens of ``sql`` (raises what the tokenizer raises)."""
    import sqlglot

    return sqlglot.Dialect.get_or_raise("sqlite").tokenize(sql)


def _sqlite_compiles(conn: sqlite3.Connection, sql: str) -> bool:
    """Does SQLite compile the statement? (EXPLAIN compiles without running it.)"""
    try:
        conn.execute("EXPLAIN " + sql).fetchmany(1)
        return True
    except (sqlite3.Error, sqlite3.Warning):
        return False


def build_sqlite(path: Path, scripts: tuple[Path, ...]) -> None:
    """Build ``path`` from the scripts, each in one transaction (no journal file, no fsync: the file is private
    until the atomic rename). Processes sharing the folder (xdist workers) build it once, under a file lock."""
    def build(partial: Path) -> None:
        try:
            _run_sqlite_build(partial, scripts, one_transaction=True)
        except DatabaseError:
            # The script manages its own transactions (BEGIN/COMMIT inside), or fails: run it as written,
            # statement by statement, so it behaves (and fails, with its own message) exactly as it would.
            partial.unlink(missing_ok=True)
            _run_sqlite_build(partial, scripts, one_transaction=False)

    build_file_once(path, build)


def _run_sqlite_build(partial: Path, scripts: tuple[Path, ...], *, one_transaction: bool) -> None:
    conn = sqlite3.connect(partial, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = MEMORY")
        conn.execute("PRAGMA synchronous = OFF")

        def execute(text: str) -> None:
            if not one_transaction:
                conn.executescript(text)
                return
            for part, in_transaction in _foreign_keys_parts(text):
                conn.executescript(f"BEGIN;\n{part}\n;\nCOMMIT;" if in_transaction else part)

        run_setup_scripts(scripts, execute, sqlite3.Error, "SQLite", None if one_transaction else _sqlite_locate)
        if conn.in_transaction:
            conn.commit()
    finally:
        conn.close()


def _foreign_keys_parts(text: str) -> list[tuple[str, bool]]:
    """``(part, in one transaction?)``: the script cut around its ``PRAGMA foreign_keys`` statements, which run
    outside the transaction (inside one they are a no-op: the script's cascades and checks would not happen)."""
    if "foreign_keys" not in text.lower():
        return [(text, True)]

    def foreign_keys_pragma(statement: str) -> bool:
        code = statement[_code_start(statement, 0):]
        return code[:6].upper() == "PRAGMA" and "foreign_keys" in code.lower()

    spans = ((offset, offset + len(statement)) for offset, statement in _sqlite_statements(text))
    return [(part, not alone) for part, alone in cut_around(text, spans, foreign_keys_pragma)]


def _sqlite_locate(done: list[str], text: str) -> int | None:
    """The offset of the statement of ``text`` that fails, run one by one in memory after the earlier scripts
    (a failed build only)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for earlier in done:
            conn.executescript(earlier)
        return failing_statement(_sqlite_statements(text), lambda statement: conn.execute(statement).fetchall())
    finally:
        conn.close()


def _sqlite_statements(text: str):
    """``(offset, statement)`` of each statement, split where SQLite's own ``complete_statement`` says one ends
    (strings, comments and trigger bodies included)."""
    start, end = 0, text.find(";")
    while end != -1:
        if sqlite3.complete_statement(text[start:end + 1]):
            yield start, text[start:end + 1]
            start = end + 1
        end = text.find(";", end + 1)
    if text[start:].strip():
        yield start, text[start:]
