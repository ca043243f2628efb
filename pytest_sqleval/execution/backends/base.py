"""The engine-backend protocol: everything the plugin does differently per database engine.

A :class:`Backend` serves the SQLAlchemy URLs it :meth:`~Backend.owns` and says, for them:

- ``dialect``: the SQLAlchemy dialect name and the sqlglot dialect the engine reads;
- :meth:`~Backend.open`: a read-only, hardened engine (authorizer, read-only session, limits), with the
  connect timeout for network engines; :meth:`~Backend.harden` is the per-connection part of it;
- :meth:`~Backend.build`: a database built from trusted setup scripts (None: this engine cannot);
- :meth:`~Backend.run`: one already-guarded query on a DB-API connection under :class:`Limits` (timeout,
  row cap), as a :class:`~pytest_sqleval.results.QueryResult`;
- :meth:`~Backend.classify`: a driver error as a :class:`~pytest_sqleval.errors.QueryError` kind
  (``syntax``, ``runtime``, ``rejected``, ``timeout``, ``memory``);
- :meth:`~Backend.read_schema`: tables, columns and foreign keys;
- :meth:`~Backend.target` / :meth:`~Backend.open_target`: the small picklable *target* the killable query
  process (:mod:`~pytest_sqleval.execution.sandbox`) reopens the engine from.

Subclass :class:`Backend` and override what differs: the defaults are those of any SQLAlchemy URL
(plain DB-API, the guard as the only read-only check). Register it with the
``pytest_sqleval_engine_backends`` hook (``backends.register(MyBackend())``).

A backend from a ``conftest.py`` or a plugin is not imported by the query process (a fresh
interpreter that loads only the built-ins), so its engines run their queries **in the pytest
process**, with the engine's own timeout only, unless :meth:`~Backend.target` returns a target of a
built-in backend (an engine opened through a built-in backend's ``open`` keeps that backend's target).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ...errors import QueryError
from ...results import QueryResult

if TYPE_CHECKING:  # pragma: no cover
    from sqlalchemy.engine import URL, Engine

    from ...schema import Schema

#: Default connect timeout of network engines (seconds).
DEFAULT_CONNECT_TIMEOUT = 10.0

#: A target: ``(backend name, how to reopen...)``, small and picklable.
Target = tuple


@dataclass(frozen=True)
class Dialect:
    """The SQLAlchemy dialect name of an engine and the sqlglot dialect that reads its SQL."""

    engine: str
    sqlglot: str


@dataclass(frozen=True)
class Limits:
    """The limits of one query: seconds, row cap, the restricted role to take (PostgreSQL), and the timeout to
    name in messages (the query's full budget, when part of it went on checking the query)."""

    timeout: float
    max_rows: int
    role: str | None = None
    timeout_label: float | None = None
    #: How text that is not valid UTF-8 is read (Python's ``errors=`` names): ``"strict"``, an error, as in Python's
    #: sqlite3 (the `bird` profile: BIRD scores it 0); ``"ignore"``, each bad byte is dropped, as
    #: test-suite-sql-eval's ``text_factory`` does (the `test-suite` profile); ``"replace"``, each reads as U+FFFD.
    text_errors: str = "replace"
    #: Read past the row cap keeping only the distinct rows (the first occurrences, in order), the cap then counting
    #: distinct rows: the `bird` profile, as BIRD compares ``set(rows)`` (and its Soft F1 dedupes first), so a result
    #: with many duplicates scores there as it does officially while memory still holds at most ``max_rows + 1`` rows.
    distinct_rows: bool = False

    @property
    def label(self) -> float:
        return self.timeout if self.timeout_label is None else self.timeout_label


@dataclass
class BuildContext:
    """Where and for whom a database is built from setup scripts (given by the engine factory)."""

    folder: Path  # for files: shared by the run's processes, so a file is built once (under a lock)
    digest: str  # hash of the dialect and the scripts' bytes: names the built database
    run_id: str
    worker: str
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    #: call with a function that drops what was built (at the end of the run, also on SIGTERM/SIGINT)
    on_cleanup: Callable[[Callable[[], None]], None] = lambda _cleanup: None


class Backend:
    """One database engine. The defaults serve any SQLAlchemy URL; a subclass overrides what differs."""

    #: Short name: the first element of this backend's sandbox targets, and its name in messages.
    name: str = "generic"
    #: The engine's SQLAlchemy dialect name and sqlglot dialect (None: taken from the engine).
    dialect: Dialect | None = None
    #: Driver modules its queries import (the query process's zygote loads them when this backend first runs).
    drivers: tuple[str, ...] = ()

    # -- which URLs -------------------------------------------------------
    def owns(self, url: URL) -> bool:
        """Does this backend serve ``url`` (a SQLAlchemy ``URL`` from ``make_url``)?"""
        return self.dialect is not None and url.get_backend_name() == self.dialect.engine

    def owns_engine(self, engine: Any) -> bool:
        """Does this backend run queries on ``engine`` (one it did not open, e.g. a user's fixture)?"""
        return self.dialect is not None and engine.dialect.name == self.dialect.engine

    # -- opening ------------------------------------------------------------
    def open(self, url: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> Engine:
        """A read-only, hardened engine on ``url``; raises DatabaseError with a clear message."""
        raise NotImplementedError(f"the {self.name} backend cannot open databases")

    def harden(self, dbapi_connection: Any) -> None:
        """Make one new DB-API connection read-only and limited (the default: nothing beyond the guard)."""

    def build(self, url: str, scripts: tuple[Path, ...], context: BuildContext) -> str | None:
        """Build a database from trusted setup scripts; return its URL (None: this backend cannot)."""
        return None

    # -- running ------------------------------------------------------------
    def run(self, conn: Any, sql: str, limits: Limits) -> QueryResult:
        """Run checked SQL on a DB-API connection: a watchdog cancels it if the driver can; always rolled back."""
        cancel = getattr(conn, "cancel", None) or getattr(conn, "interrupt", None)
        watchdog = threading.Timer(limits.timeout, cancel) if cancel else None
        started = time.monotonic()
        if watchdog:
            watchdog.daemon = True
            watchdog.start()
        try:
            cursor = conn.cursor()
            cursor.execute(sql)
            if cursor.description is None:  # a statement with no result set: nothing a query's result could equal
                raise QueryError("rejected", NOT_A_QUERY)
            rows = fetch_capped(cursor, limits)
            columns = tuple(d[0] for d in cursor.description)
        except QueryError:
            raise
        except Exception as exc:  # noqa: BLE001 - DB-API drivers raise their own classes
            raise self.classify(exc, conn=conn, sql=sql, limits=limits,
                                elapsed=time.monotonic() - started) from None
        finally:
            if watchdog:
                watchdog.cancel()
            rollback(conn)
        return QueryResult(columns=columns, rows=rows)  # capped as fetched (fetch_capped)

    def parse_error(self, sql: str) -> str | None:
        """The engine's own parser's error on ``sql``, or None when it parses (or the engine cannot say without
        running it: the default). Asked only of a text the guard refused, to tell a typo (``SELEC name``, kind
        ``syntax``) from a real statement the guard refuses (``rejected``); it must never run the text."""
        return None

    def classify(self, exc: BaseException, *, conn: Any = None, sql: str = "", limits: Limits | None = None,
                 elapsed: float = 0.0) -> QueryError:
        """The QueryError kind of a driver error (the default: a timeout if the time ran out, else runtime)."""
        if limits is not None and elapsed >= limits.timeout:
            return QueryError("timeout", timeout_message(limits.label))
        return QueryError("runtime", first_line(exc))

    def restricted_role(self, engine: Any) -> str | None:
        """A role the query should take on ``engine`` (PostgreSQL's SELECT-only role of a built database)."""
        return None

    # -- schema -------------------------------------------------------------
    def read_schema(self, engine: Engine) -> Schema:
        """Tables (in :meth:`table_order`, else the inspector's), columns in order and foreign keys."""
        import warnings

        from sqlalchemy import inspect
        from sqlalchemy.exc import SAWarning

        from ...schema import ForeignKey, Schema, Table

        inspector = inspect(engine)
        names = self.table_order(engine) or inspector.get_table_names()
        tables: list[Table] = []
        fks: list[ForeignKey] = []
        for name in names:
            with warnings.catch_warnings():  # only the names are read: a type SQLAlchemy does not know (citext, a
                # composite type) is no concern of the user's run, whose output its warning would otherwise reach
                warnings.filterwarnings("ignore", message="Did not recognize type", category=SAWarning)
                columns = tuple(col["name"] for col in inspector.get_columns(name))
            tables.append(Table(name, columns))
            for fk in inspector.get_foreign_keys(name):
                referred = fk.get("referred_table")
                for col, ref in zip(fk.get("constrained_columns") or (), fk.get("referred_columns") or ()):
                    if referred and col and ref:
                        fks.append(ForeignKey(name, col, referred, ref))
        return Schema(tables=tuple(tables), foreign_keys=tuple(fks))

    def table_order(self, engine: Engine) -> list[str] | None:
        """The engine's catalogue order of tables, when the inspector's (alphabetical, or in no stable order) is not it."""
        return None

    # -- the query process ------------------------------------------------------
    def target(self, engine: Any) -> Target | None:
        """How the query process reopens an engine this backend did not open (None: run in this process)."""
        return None

    def open_target(self, target: Target, *, max_memory: int | None = None) -> Engine:
        """Open ``target`` in the query process, hardened as :meth:`open` does, with the memory caps."""
        raise ValueError(f"the {self.name} backend has no query-process targets")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


# --------------------------------------------------------------------------- shared by the backends
#: Why a statement that ran without a result set (``DELETE`` on a writable engine of the user's) scores nothing; it
#: was rolled back with the rest of the query's transaction.
NOT_A_QUERY = "the statement is not a query: it returned no result set (only a single read-only query runs)"


#: Rows fetched per call when reading past the row cap for distinct rows (:func:`fetch_capped`).
DISTINCT_FETCH_CHUNK = 1000


class DistinctRows(list):
    """The distinct rows of a result that had more rows than the row cap (:func:`fetch_capped`): its row count is
    not the result's (``expect_rows:`` says so instead of counting them)."""


#: Where a row cap can be raised: each place it may have been set (the command line wins over the suite's key, which
#: wins over the ini option), so a cap set in pytest.ini is not explained by an option the user never gave.
ROW_CAP_HINT = "raise it with --sqleval-max-rows, the suite's `max_rows:` or the ini option sqleval_max_rows"


def fetch_capped(cursor: Any, limits: Limits) -> list[tuple]:
    """Fetch at most ``limits.max_rows + 1`` rows and :func:`cap_rows` them. With ``limits.distinct_rows`` a result
    over the cap is read on (in chunks, under the query's timeout) keeping only its distinct rows, first occurrences
    in order; it is an error only if more than ``max_rows`` of them are distinct. A result within the cap is kept
    whole, duplicates included."""
    rows = [tuple(r) for r in cursor.fetchmany(limits.max_rows + 1)]
    if len(rows) <= limits.max_rows or not limits.distinct_rows:
        return cap_rows(rows, limits.max_rows)
    distinct: dict[Any, tuple] = {}
    chunk, rows = rows, []  # the first fetch is freed once read: at most the distinct rows and a chunk are held
    while chunk:
        for row in chunk:
            distinct.setdefault(_row_key(row), row)
        if len(distinct) > limits.max_rows:
            raise QueryError("row_limit", f"returned more than {limits.max_rows} distinct rows (the row cap; "
                                          f"{ROW_CAP_HINT})")
        chunk = [tuple(r) for r in cursor.fetchmany(DISTINCT_FETCH_CHUNK)]
    return DistinctRows(distinct.values())


def _row_key(row: tuple) -> Any:
    """The row itself (``set()`` semantics: 1 and 1.0 are one value), or, for a row with an unhashable cell (a DuckDB
    list, a PostgreSQL array or JSON), the hashable form BIRD's Soft F1 reading gives it."""
    try:
        hash(row)
        return row
    except TypeError:
        from ...metrics.bird import _hashable

        return tuple(map(_hashable, row))


def cap_rows(rows: list[tuple], max_rows: int) -> list[tuple]:
    """``rows`` (at most ``max_rows + 1`` were fetched), or a ``row_limit`` error when there are too many."""
    if len(rows) > max_rows:
        raise QueryError("row_limit", f"returned more than {max_rows} rows (the row cap; {ROW_CAP_HINT})")
    return rows


def memory_message() -> str:
    return "the query needed more memory than allowed (raise it with --sqleval-max-memory or the suite's `max_memory:`)"


def timeout_message(timeout: float) -> str:
    return f"interrupted after {timeout:g} s (raise it with --sqleval-timeout or the suite's `timeout:`)"


def rollback(conn: Any) -> None:
    try:
        conn.rollback()
    except Exception:  # noqa: BLE001 - a broken connection is discarded by the pool
        pass


#: The longest engine message kept (characters). An engine's error may quote a value the query built (PostgreSQL's
#: ``invalid input syntax for type integer: "<the value>"``, DuckDB's ``Could not convert string '<the value>'``): a
#: 34-character prediction put 50 MB into its case's message, the report and the terminal.
MAX_MESSAGE_CHARS = 2_000


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    if len(line) > MAX_MESSAGE_CHARS:
        line = f"{line[:MAX_MESSAGE_CHARS]}... ({len(line) - MAX_MESSAGE_CHARS:,} more characters)"
    return line
