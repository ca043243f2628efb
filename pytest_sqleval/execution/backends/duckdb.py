"""DuckDB: ``read_only=True`` with external access (files, network, extension installation and loading)
disabled and the configuration locked; ``interrupt()`` at the timeout; setup scripts in one transaction,
their single-row inserts merged (:mod:`.insert_merge`)."""

from __future__ import annotations

import functools
import os
import threading
import weakref
from pathlib import Path
from typing import Any

from ...errors import DatabaseError, QueryError
from ...results import QueryResult
from ...suite import database_file_kind, file_url, hide_password
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
    timeout_message,
)
from .connect import require_module
from .setup_scripts import build_file_once, failing_statement, read_script, run_setup_scripts

#: DuckDB threads for one query. One: with more, DuckDB's parallel hash aggregation returns the rows of a GROUP BY or
#: DISTINCT without ORDER BY in an order that changes from run to run, so the same query run twice (gold and an
#: identical prediction, a serial and an xdist run) could differ where rows are read by position (BIRD's soft F1,
#: ``row_order: always``). Its memory also grows with threads.
DUCKDB_THREADS = 1

DUCKDB_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "threads": DUCKDB_THREADS,
    "lock_configuration": True,
}


#: DuckDB's errors after which its database is invalidated in the process (``INTERNAL Error``: a failed assertion;
#: ``FATAL Error``): the query process that met one retires (:mod:`..sandbox_worker`).
_INVALIDATING = ("InternalException", "FatalException")


#: The targets derived from users' engines (:meth:`DuckDBBackend.target`), read once per engine.
_derived_targets: weakref.WeakKeyDictionary[Any, Target] = weakref.WeakKeyDictionary()


class DuckDBBackend(Backend):
    name = "duckdb"
    dialect = Dialect("duckdb", "duckdb")
    drivers = ("duckdb", "duckdb_engine")

    def open(self, url: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
        from sqlalchemy.engine import make_url

        if make_url(url).database in (None, "", ":memory:"):
            raise DatabaseError(f"{hide_password(url)} is an empty in-memory DuckDB database; use a .duckdb file, "
                                'or `url: "duckdb://"` with setup scripts')
        return duckdb_engine(url, pooled=False)  # its queries run in the query process (SQLEVAL_SANDBOX=0: here)

    def build(self, url: str, scripts: tuple[Path, ...], context: BuildContext) -> str:
        path = context.folder / f"sqleval-{context.digest}.duckdb"
        build_duckdb(path, scripts)
        return file_url("duckdb", path)

    def run(self, conn: Any, sql: str, limits: Limits) -> QueryResult:
        import duckdb

        watchdog = threading.Timer(limits.timeout, conn.interrupt)
        watchdog.daemon = True
        watchdog.start()
        try:
            cursor = conn.execute(_one_query(conn, sql))
            rows = fetch_capped(cursor, limits)
            columns = tuple(d[0] for d in cursor.description or ())
        except duckdb.Error as exc:
            raise self.classify(exc, limits=limits) from None
        finally:
            watchdog.cancel()
        return QueryResult(columns=columns, rows=rows)  # capped as fetched (fetch_capped)

    def classify(self, exc: BaseException, *, conn: Any = None, sql: str = "", limits: Limits | None = None,
                 elapsed: float = 0.0) -> QueryError:
        import duckdb

        if isinstance(exc, duckdb.InterruptException):
            return QueryError("timeout", timeout_message(limits.label if limits else elapsed))
        message = first_line(exc)
        if isinstance(exc, getattr(duckdb, "OutOfMemoryException", ())) or "out of memory" in message.lower():
            return QueryError("memory", f"{memory_message()}: {message}")
        if isinstance(exc, tuple(getattr(duckdb, name) for name in _INVALIDATING if hasattr(duckdb, name))):
            # DuckDB's internal errors (a failed assertion) invalidate the database in this process: every later
            # query on it, however innocent, would fail ("database has been invalidated"). The query process retires.
            error = QueryError("runtime", message)
            error.unsound = "DuckDB reported an internal error, which invalidates its database in this process"
            return error
        if isinstance(exc, duckdb.PermissionException) or "read-only" in message.lower() \
                or "disabled by configuration" in message.lower():
            return QueryError("rejected", f"refused by the read-only connection: {message}")
        compile_errors = tuple(
            getattr(duckdb, name) for name in ("ParserException", "BinderException", "CatalogException", "SyntaxException")
            if hasattr(duckdb, name)
        )
        return QueryError("syntax" if isinstance(exc, compile_errors) else "runtime", message)

    def parse_error(self, sql: str) -> str | None:
        """DuckDB's parser alone (``extract_statements`` parses, it runs nothing), on a new in-memory connection
        with the run's locked-down configuration."""
        import duckdb

        conn = duckdb.connect(":memory:", config=dict(DUCKDB_CONFIG))
        try:
            conn.extract_statements(sql)
        except duckdb.ParserException as exc:
            message = first_line(exc)
            return None if "depth" in message.lower() else message  # a limit of the parser, not a typo
        except duckdb.Error:
            return None
        finally:
            conn.close()
        return None

    def read_schema(self, engine):
        """DuckDB's own catalogue (duckdb-engine's inspection queries pg_catalog tables DuckDB lacks).

        A file engine of the user's own (an overridden ``sqleval_engine``) is read through a read-only engine of
        ours, closed at once: a read-write connection of this process would hold the file's lock (the query
        process could not open it), and the query process's read-only one would refuse it."""
        target = None if registered_target(engine) is not None else self.target(engine)
        if target is not None:
            own = duckdb_engine(target[1], pooled=False)
            try:
                return self._read_catalogue(own)
            finally:
                own.dispose()
        return self._read_catalogue(engine)

    def _read_catalogue(self, engine):
        from ...schema import ForeignKey, Schema, Table

        with engine.connect() as conn:
            names = [r[0] for r in conn.exec_driver_sql(
                "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' ORDER BY table_oid")]
            columns: dict[str, list[str]] = {name: [] for name in names}
            for table, column in conn.exec_driver_sql(
                    "SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main' "
                    "ORDER BY table_oid, column_index"):
                columns.setdefault(table, []).append(column)
            fks: list[ForeignKey] = []
            for table, cols, ref_table, ref_cols in conn.exec_driver_sql(
                    "SELECT table_name, constraint_column_names, referenced_table, referenced_column_names "
                    "FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' AND schema_name = 'main'"):
                fks.extend(ForeignKey(table, c, ref_table, r) for c, r in zip(cols, ref_cols))
        return Schema(tables=tuple(Table(n, tuple(columns[n])) for n in names), foreign_keys=tuple(fks))

    def target(self, engine: Any) -> Target | None:
        registered = registered_target(engine)
        if registered is not None:
            return registered
        try:
            derived = _derived_targets.get(engine)
        except TypeError:  # not weak-referenceable
            derived = None
        if derived is not None:
            return derived
        url = engine.url
        if url.database and url.database != ":memory:":
            if ":" not in url.database and not os.path.isabs(url.database):  # the query process has its own cwd
                url = url.set(database=os.path.abspath(url.database))
            # the user's engine may write, or use more threads: the query process applies the plugin's settings
            url = url.difference_update_query([key for key in url.query if key.lower() in _LOCKED_SETTINGS])
            settings = {name: value for name, value in _changed_settings(engine).items() if name not in url.query}
            if settings:
                url = url.update_query_dict(settings)  # duckdb-engine hands a URL's query string to DuckDB's config
            target = ("duckdb", url.render_as_string(hide_password=False))
            try:
                _derived_targets[engine] = target  # (not registered: read_schema tells the user's engines by that)
            except TypeError:
                pass
            return target
        return None

    def open_target(self, target: Target, *, max_memory: int | None = None):
        return duckdb_engine(target[1], **duckdb_limits(max_memory))


#: Settings never carried from a user's engine to the query process: ours (the hardening and the caps), and those
#: naming this process's files, resources, extensions or logs.
_OWN_SETTINGS = frozenset({
    *DUCKDB_CONFIG, "memory_limit", "max_memory", "max_temp_directory_size", "async_threads", "worker_threads",
    "external_threads", "access_mode", "custom_user_agent", "duckdb_api", "temp_directory", "home_directory",
    "extension_directory", "secret_directory", "allowed_directories", "allowed_paths", "disabled_filesystems",
    "allow_unsigned_extensions", "allow_community_extensions", "allow_persistent_secrets", "allow_unredacted_secrets",
    "enable_profiling", "profiling_output", "profiling_mode", "log_query_path", "enable_logging", "logging_level",
    "logging_mode", "logging_storage", "enabled_log_types", "disabled_log_types", "enable_progress_bar",
    "enable_progress_bar_print", "checkpoint_threshold", "wal_autocheckpoint", "storage_compatibility_version",
})


def _changed_settings(engine: Any) -> dict[str, str]:
    """The DuckDB settings a user's engine changed (its ``connect_args={"config": {...}}``, a ``creator=``, a connect
    event's ``SET``), read from one of its connections and compared with a new connection's, less
    :data:`_OWN_SETTINGS`. The query process reopens the database from the URL alone: with these added to it, a
    query there computes as on the user's engine (``integer_division``, ``default_order``, ``TimeZone``, ...).

    The connection is closed afterwards (the engine's idle connections with it): a handle of this process on the
    file would keep the query process out of it. No connection: none (the query process reports why)."""
    import duckdb

    try:
        with engine.connect() as conn:
            theirs = dict(conn.exec_driver_sql("SELECT name, value FROM duckdb_settings()").fetchall())
    except Exception:  # noqa: BLE001 - the query process reports why it cannot open the file
        return {}
    finally:
        try:
            engine.dispose()
        except Exception:  # noqa: BLE001 - best effort
            pass
    fresh = duckdb.connect(":memory:")
    try:
        defaults = dict(fresh.execute("SELECT name, value FROM duckdb_settings()").fetchall())
    finally:
        fresh.close()
    changed = {name: value for name, value in theirs.items()
               if name in defaults and name not in _OWN_SETTINGS and value is not None and value != defaults[name]}
    return {name: value for name, value in changed.items() if _settable(name, value)}


def _settable(name: str, value: str) -> bool:
    """Can the query process's locked-down connection take this setting? (``TimeZone`` needs the ICU extension,
    which a user's process may autoload and the query process never does: such a setting stays behind, as it did.)"""
    import duckdb

    try:
        duckdb.connect(":memory:", config={name: value, **DUCKDB_CONFIG}).close()
    except duckdb.Error:
        return False
    return True


#: Statement kinds DuckDB may run here (``StatementType`` names): queries; MULTI is a PIVOT statement, which DuckDB
#: runs as an enum type of its own and a query.
DUCKDB_QUERY_STATEMENTS = frozenset({"SELECT", "MULTI", "PRAGMA", "CALL"})


def _one_query(conn: Any, sql: str) -> Any:
    """The one query statement of ``sql`` as DuckDB's own parser reads it, to be run as such.

    DuckDB runs every statement of a text, and a read-only database still takes TEMP views, tables and macros, SET
    VARIABLE and PREPARE. These live on in the connection the next queries (the golds of other cases) run on: a TEMP
    VIEW named like a table, or a macro named like a built-in, would change their results. So, as SQLite and
    PostgreSQL refuse a second statement themselves, DuckDB here runs only one statement, and only a query: a gap
    in the guard cannot become such a change either.
    """
    statements = conn.extract_statements(sql)
    if len(statements) != 1:
        raise QueryError("rejected", f"DuckDB reads {len(statements)} statements in the text; only a single query runs")
    kind = getattr(statements[0].type, "name", str(statements[0].type))
    if kind not in DUCKDB_QUERY_STATEMENTS:
        raise QueryError("rejected", f"refused by the read-only connection: DuckDB reads a {kind} statement, not a "
                                     "query; only a single read-only query runs")
    return statements[0]


def duckdb_limits(max_memory: int | None) -> dict[str, Any]:
    """DuckDB's own caps in the query process: its buffer manager gets half of the process's cap, no spilling
    to disk, and no I/O threads.

    DuckDB (1.3 and later) starts ``async_threads`` I/O threads per database it opens (8, whatever ``threads`` is),
    and each thread's stack (8 MiB, reserved writable) counts in the process's ``RLIMIT_DATA`` though it is
    barely touched: a query process that had opened three DuckDB files under a 256 MiB cap had ~200 MiB of it
    in idle stacks, and the next file (or a PIVOT gold on it) failed with DuckDB's "Allocation failure". With
    ``async_threads = 0`` DuckDB does its I/O on the query's own thread, and opening a file costs no stacks.
    """
    if not max_memory:
        return {}
    config: dict[str, Any] = {
        "memory_limit": f"{max(64, max_memory // 2 // 2**20)}MiB",
        "max_temp_directory_size": "0KiB",
    }
    if _has_setting("async_threads"):  # (DuckDB before 1.3 has no such threads, nor the setting)
        config["async_threads"] = 0
    return {"extra_config": config}


@functools.lru_cache(maxsize=None)
def _has_setting(name: str) -> bool:
    """Does the installed DuckDB know the setting ``name`` (set to 0: so the probe itself starts no threads)?"""
    import duckdb

    try:
        duckdb.connect(":memory:", config={name: 0}).close()
    except duckdb.Error:
        return False
    return True


def duckdb_engine(url: str, *, extra_config: dict[str, Any] | None = None, pooled: bool = True):
    """A read-only DuckDB engine; ``extra_config`` adds settings (the query process's memory and thread caps).

    ``pooled=False`` (the pytest process's engines, which only probe the file and read its schema: the queries run
    in the query process): no connection stays open between uses, so this process holds the file only while it
    reads it (two engines of one file with different settings, or a test opening it read-write, then meet no open
    handle of ours)."""
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    require_module("duckdb_engine", "duckdb")
    url = _without_locked_settings(url)
    message = None
    try:
        config = {**(extra_config or {}), **DUCKDB_CONFIG}  # lock_configuration last: after the caps
        after_open = _hardening_after_open(url, config)
        engine = create_engine(url, connect_args={"read_only": True, "config": config},
                               **({} if pooled else {"poolclass": NullPool}))
        if after_open:
            _harden_on_connect(engine, after_open)
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1").fetchall()
    except DatabaseError:
        raise
    except Exception as exc:  # noqa: BLE001 - driver errors vary; report them plainly
        hint = f" ({memory_message()})" if "out of memory" in first_line(exc).lower() else ""
        if "could not set lock" in first_line(exc).lower():
            hint = (" (a read-write connection holds the file, perhaps an engine of your own in this process, and "
                    "DuckDB lets no other process open it meanwhile: close or dispose of it (engine.dispose()), or "
                    "open the file read-only with sqleval_engine_factory(path))")
        elif _is_sqlite_file(url):  # DuckDB would need its sqlite extension, which is off here
            hint = " (the file is a SQLite database: name it .sqlite or .db, or write sqlite:///PATH)"
        message = f"cannot open DuckDB database {hide_password(url)}: {first_line(exc)}{hint}"
    if message is not None:
        # raised outside the except block, so the error holds no traceback whose frames keep the DuckDB connection
        # duckdb-engine opened before a setting failed (and with it the file, in a mode others then cannot open)
        raise DatabaseError(message)
    return register_target(engine, ("duckdb", url))


#: Settings a database whose path holds a ``?`` gets right after it is opened instead of when it is opened, in order.
_SET_AFTER_OPEN = ("enable_external_access", "lock_configuration")


def _hardening_after_open(url: str, config: dict[str, Any]) -> dict[str, Any]:
    """For a database file whose path holds a ``?``: the settings taken out of ``config`` (changed in place) to be set
    on each connection right after it opens the file (:func:`_harden_on_connect`); else none.

    DuckDB reads a ``?`` in a database path as the start of options and looks for the write-ahead log of ``a?b.duckdb``
    at ``a.wal?b.duckdb``, a file that a connection opened with external access off may not even probe: every case
    on such a file was an error ("Permission Error: Cannot access file ..."). The file opens as DuckDB opens it
    anywhere else; external access goes off, and the configuration is locked, before the connection runs anything."""
    from sqlalchemy.engine import make_url

    try:
        database = make_url(url).database or ""
    except Exception:  # noqa: BLE001 - create_engine reports a bad URL plainly
        return {}
    if "?" not in database:
        return {}
    return {name: config.pop(name) for name in _SET_AFTER_OPEN if name in config}


def _harden_on_connect(engine: Any, settings: dict[str, Any]) -> None:
    from sqlalchemy import event

    @event.listens_for(engine, "connect", insert=True)
    def _harden(dbapi_conn, _record):
        for name, value in settings.items():
            dbapi_conn.execute(f"SET {name} = {str(value).lower()}")


#: Settings the plugin sets itself on every DuckDB connection (the hardening, and the query process's caps), with
#: the value a URL may repeat (None: none, the plugin's value depends on the run). duckdb-engine hands a URL's query
#: string to DuckDB's configuration over the ``connect_args``: ``?access_mode=read_write`` made the read-only
#: connection writable, ``?enable_external_access=true`` or ``?allowed_directories=/etc`` let predictions read files.
_LOCKED_SETTINGS: dict[str, str | None] = {
    **{name: str(value).lower() for name, value in DUCKDB_CONFIG.items()},
    "access_mode": "read_only", "read_only": "true", "memory_limit": None, "max_memory": None,
    "max_temp_directory_size": None, "async_threads": None, "allowed_directories": None, "allowed_paths": None,
    "allow_unsigned_extensions": "false", "allow_community_extensions": None, "allow_unredacted_secrets": "false",
}

_TRUTH = {"1": "true", "on": "true", "yes": "true", "0": "false", "off": "false", "no": "false"}


def _without_locked_settings(url: str) -> str:
    """``url`` without the query parameters that repeat the plugin's own settings (``?access_mode=read_only``); a
    DatabaseError naming any that would change them (a writable connection, file access, other caps or threads)."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - create_engine reports a bad URL plainly
        return url
    if not parsed.query:
        return url
    same, changed = [], []
    for key, value in parsed.query.items():
        if key.lower() not in _LOCKED_SETTINGS:
            continue
        ours = _LOCKED_SETTINGS[key.lower()]
        values = value if isinstance(value, tuple) else (value,)
        if ours is not None and all(_TRUTH.get(str(v).strip().lower(), str(v).strip().lower()) == ours for v in values):
            same.append(key)
        else:
            changed.append(f"{key}={','.join(map(str, values))}")
    if changed:
        raise DatabaseError(
            f"{hide_password(url)} sets {', '.join(changed)}, which the plugin sets itself on DuckDB connections "
            "(read-only, external access off, configuration locked, one thread, the query process's memory caps: "
            "--sqleval-max-memory): remove it from the URL")
    return parsed.difference_update_query(same).render_as_string(hide_password=False) if same else url


def _is_sqlite_file(url: str) -> bool:
    from sqlalchemy.engine import make_url

    try:
        database = make_url(url).database
    except Exception:  # noqa: BLE001 - no URL to read: no hint
        return False
    return bool(database) and database_file_kind(database) == "sqlite"


def build_duckdb(path: Path, scripts: tuple[Path, ...]) -> None:
    """Build ``path`` from the scripts: each in one transaction with its single-row inserts merged; on any
    failure, as written in one transaction, then statement by statement (the engine's own message).

    After the first failure, scripts that act only inside their database run as written in memory, statement by
    statement (:func:`_run_in_memory`): if they fail there, that is their own failure, reported with its line at
    once. Only scripts that run there (the merge or the one transaction broke them), or that reach outside (ATTACH,
    COPY, ...: run once, as before), get the other attempts on the file: as written, each statement commits on its
    own there (a WAL write each: 9 s for 4,000 INSERTs), which a failing script no longer pays, nor the run in one
    transaction, nor a second run in memory to find the failing line."""
    require_module("duckdb", "duckdb")

    def build(partial: Path) -> None:
        merged: list[bool] = []  # did merging change any script? (if not, the second attempt is the first again)
        checked: list[bool] = []  # did the scripts run in memory?
        for one_transaction, merge in ((True, True), (True, False), (False, False)):
            if merge is False and one_transaction and not any(merged):
                continue
            if not merge and not checked:  # after the first failure, before any other attempt on the file
                checked.append(True)
                _run_in_memory(scripts)  # raises the scripts' own failure, with its line (scripts that stay inside)
            try:
                _run_duckdb_build(partial, scripts, one_transaction=one_transaction, merged=merged if merge else None)
                return
            except DatabaseError:
                partial.unlink(missing_ok=True)
                partial.with_name(partial.name + ".wal").unlink(missing_ok=True)
                if not one_transaction:
                    raise

    build_file_once(path, build)


def _run_duckdb_build(partial: Path, scripts: tuple[Path, ...], *, one_transaction: bool,
                      merged: list[bool] | None) -> None:
    """Run the scripts into ``partial``; with ``merged`` (a list), merge their inserts and note whether that
    changed each script."""
    import duckdb

    from .insert_merge import merge_single_row_inserts

    conn = duckdb.connect(str(partial))
    search_beside(conn, scripts)
    across_tables = [True]  # rows of several tables may be merged until a script names a foreign key or sequence
    try:
        def execute(text: str) -> None:
            if merged is not None:
                merged_text = merge_single_row_inserts(text, "duckdb", across_tables)
                merged.append(merged_text is not text)
                text = merged_text
            conn.execute(f"BEGIN TRANSACTION;\n{text}\n;\nCOMMIT;" if one_transaction else text)

        run_setup_scripts(scripts, execute, duckdb.Error, "DuckDB",
                          None if one_transaction else lambda done, text: _duckdb_locate(done, text, scripts))
        conn.commit()  # a script that began a transaction and never committed it keeps its work, as on SQLite
        conn.execute("CHECKPOINT")
    finally:
        conn.close()


#: DuckDB statement kinds (``StatementType`` names) that act only inside the database they run in: scripts made of
#: these alone may be run once more in memory (no ATTACH, COPY, EXPORT, LOAD, CALL, PRAGMA: their effects outside
#: the database, a file written or a row added to another database, would happen twice).
DUCKDB_IN_DATABASE_STATEMENTS = frozenset({
    "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE_INTO", "CREATE", "CREATE_FUNC", "ALTER", "DROP", "TRANSACTION",
    "MULTI", "VACUUM", "ANALYZE", "EXPLAIN", "SET", "VARIABLE_SET",
})


def search_beside(conn: Any, scripts: tuple[Path, ...]) -> None:
    """A file a script names by a relative path (`COPY t FROM 'rows.csv'`, `read_csv('rows.csv')`) is found beside
    the scripts, as a suite's own paths are relative to its file, whatever folder pytest runs in (DuckDB's
    ``file_search_path``; the working directory is still searched too). A folder with a comma cannot be listed."""
    folders = [folder for folder in dict.fromkeys(str(script.parent) for script in scripts) if "," not in folder]
    if folders:
        conn.execute("SET file_search_path = '{}'".format(",".join(folders).replace("'", "''")))


def _run_in_memory(scripts: tuple[Path, ...]) -> None:
    """Run the scripts as written, statement by statement as DuckDB's own parser splits them, in an in-memory
    database; a failure is a DatabaseError naming the script, DuckDB's message and the line of the statement that
    failed (found while running: no second run to locate it). Nothing runs unless every statement of every script
    parses and is one of :data:`DUCKDB_IN_DATABASE_STATEMENTS`."""
    import duckdb

    conn = duckdb.connect(":memory:")
    search_beside(conn, scripts)
    try:
        _parse_all(conn, scripts)
        if _stays_inside(conn, scripts):
            _run_statements(conn, scripts)
    finally:
        conn.close()


def _parse_all(conn: Any, scripts: tuple[Path, ...]) -> None:
    """A script DuckDB cannot parse fails every attempt, each after running (and, as written, committing one by
    one) the statements before its error: the DatabaseError now, with DuckDB's message and the statement's line
    (found by parsing alone; so a parse error is named before any error a statement ahead of it would raise when
    run). Scripts that LOAD or INSTALL an extension (which may add syntax) are left to run."""
    import duckdb

    from .insert_merge import _statements

    texts = [read_script(script) for script in scripts]
    if any(_loads_extension(text) for text in texts):
        return

    def locate(done: list[str], text: str) -> int | None:
        return failing_statement(((start, text[start:end]) for start, end, _ in _statements(text, "duckdb")),
                                 conn.extract_statements)

    def parse(text: str) -> None:
        try:
            conn.extract_statements(text)
        except duckdb.ParserException:
            raise
        except duckdb.Error:  # not a parse error: left to the attempts that run the script
            pass

    run_setup_scripts(scripts, parse, duckdb.ParserException, "DuckDB", locate)


def _loads_extension(text: str) -> bool:
    from sqlglot import TokenType
    from sqlglot.dialects.dialect import Dialect

    try:
        return any(t.token_type in (TokenType.LOAD, TokenType.INSTALL) for t in Dialect.get_or_raise("duckdb").tokenize(text))
    except Exception:  # noqa: BLE001 - unread: leave it to the engine
        return True


def _stays_inside(conn: Any, scripts: tuple[Path, ...]) -> bool:
    import duckdb

    try:
        return all(getattr(statement.type, "name", str(statement.type)) in DUCKDB_IN_DATABASE_STATEMENTS
                   for script in scripts for statement in conn.extract_statements(read_script(script)))
    except (duckdb.Error, DatabaseError):  # a parse error fails every attempt at once: nothing to save here
        return False


def _run_statements(conn: Any, scripts: tuple[Path, ...]) -> None:
    import duckdb

    failed_at: list[int] = []

    def execute(text: str) -> None:
        failed_at.clear()
        position = 0
        for statement in conn.extract_statements(text):  # (a parse error: located by _duckdb_locate)
            found = text.find(statement.query, position)
            if found >= 0:
                position = found + len(statement.query)
            try:
                conn.execute(statement)
            except duckdb.Error:
                if found >= 0:
                    failed_at.append(found)
                raise

    def locate(done: list[str], text: str) -> int | None:
        return failed_at[0] if failed_at else _duckdb_locate(done, text, scripts)

    run_setup_scripts(scripts, execute, duckdb.Error, "DuckDB", locate)


def _duckdb_locate(done: list[str], text: str, scripts: tuple[Path, ...] = ()) -> int | None:
    """The offset of the statement of ``text`` that fails, run one by one in memory after the earlier scripts
    (a failed build only); statements split with sqlglot's DuckDB tokenizer."""
    import duckdb

    from .insert_merge import _statements

    conn = duckdb.connect()
    search_beside(conn, scripts)
    try:
        for earlier in done:
            conn.execute(earlier)
        return failing_statement(((start, text[start:end]) for start, end, _ in _statements(text, "duckdb")),
                                 conn.execute)
    finally:
        conn.close()
