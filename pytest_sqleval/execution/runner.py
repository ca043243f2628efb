"""Run one query with a timeout that really interrupts the engine and a row cap.

``run_query`` returns a :class:`~pytest_sqleval.results.QueryResult` or raises
:class:`~pytest_sqleval.errors.QueryError` with a kind:

- ``rejected``: refused by the guard (not a single read-only query) or by the
  engine's own read-only/authorisation checks (a refused text that SQLite's or DuckDB's own parser cannot
  parse, asked without running it, is ``syntax``: :func:`engine_parse_error`);
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

import functools
from typing import Any

from ..errors import QueryError, UserHookError
from ..results import QueryResult
from ..sql.guard import MAX_SQL_LENGTH, NestedTooDeeply, check_prediction, starts_with_unknown_word
from .backends import BUILTIN_BACKENDS, active_backends, backend_for, target_of
from .backends.base import Limits, first_line
from .backends.connect import connection_lost


def sqlglot_dialect(engine_dialect: str) -> str:
    """The sqlglot dialect that reads SQL written for a SQLAlchemy backend (as its engine backend says)."""
    return active_backends().sqlglot_dialect(engine_dialect)


#: Defaults for ``run_query`` calls that give no limits (the plugin always passes its settings).
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ROWS = 100_000


def type_name(value: Any) -> str:
    """``str``, or ``sqlite3.Connection`` and ``sqlalchemy.orm.session.Session``: a DB-API connection is no
    "Connection" the message accepts."""
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def connection_engine(value: Any) -> Any:
    """The engine of a SQLAlchemy Connection; anything else as it is."""
    inner = getattr(value, "engine", None)
    if inner is not None and inner is not value and hasattr(value, "exec_driver_sql") and hasattr(inner, "connect"):
        return inner
    return value


def _engine_of(engine):
    """A SQLAlchemy Connection stands for its engine, as in the assertion helpers (the query runs on a connection of
    its own); a URL or a path is a TypeError naming the fix, never the value (a URL may hold a password)."""
    engine = connection_engine(engine)
    if isinstance(engine, (str, bytes)) or not hasattr(engine, "dialect"):
        raise TypeError(f"run_query: engine must be a SQLAlchemy engine or connection, not {type_name(engine)}; for a "
                        "database path or URL, open it first: run_query(sqleval_engine_factory(\"shop.sqlite\"), sql) "
                        "in a test, or sqlalchemy.create_engine(url)")
    return engine


def run_query(engine, sql: str, *, timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS,
              untrusted: bool = True, dialect: str | None = None, rewrite: str | None = None,
              allow_functions: frozenset[str] | set[str] = frozenset(), max_memory: int | None = None,
              role: str | None = None, prefetch: bool = False, text_errors: str = "replace",
              distinct_rows: bool = False) -> QueryResult | None:
    """Run one query under every limit; raises QueryError(kind) for anything but a result.

    ``text_errors``: how text that is not valid UTF-8 is read, named as Python's ``errors=``: ``"strict"``, a
    result holding it is an error (the ``bird`` profile, as Python's sqlite3 does); ``"ignore"``, each bad byte is
    dropped (the ``test-suite`` profile, as its official script decodes); ``"replace"`` (default), each bad byte
    reads as U+FFFD. ``distinct_rows``: a result over ``max_rows`` is read on keeping its distinct rows only (the
    ``bird`` profile: see :class:`~.backends.base.Limits`).

    ``prefetch=True`` only sends the query to the query process and returns None: the next call with the same
    arguments (without ``prefetch``) returns its result, and this process works meanwhile (a no-op in-process).

    Untrusted SQL is guarded first. ``rewrite="strip_distinct"`` applies the profile's rewrite (guarded
    again). The reproduction profiles' rewrites (:mod:`pytest_sqleval.sql.statements`) keep only the statement
    the official evaluator runs: ``"official_distinct"`` (test-suite: sqlparse's first statement, DISTINCT
    tokens cut from the text) and ``"sqlite3_statement"`` (BIRD: Python sqlite3's one-statement rule); a text
    with no statement returns an empty result without running. The guard, the rewrite and the query run in the process's killable query process
    (:mod:`~pytest_sqleval.execution.sandbox`) when the engine can be reopened there; otherwise here,
    with the engine's own timeout only.
    """
    from .sandbox import DEFAULT_MAX_MEMORY, process_sandbox, sandbox_enabled

    if sql is None:  # a model that gave no answer: never an empty result, which an empty gold would equal
        raise QueryError("no_prediction", "no SQL text to run (None)")
    if not isinstance(sql, str):
        raise TypeError(f"run_query takes the SQL as a str, not {type(sql).__name__} (decode bytes first)")
    engine = _engine_of(engine)
    dialect = dialect or sqlglot_dialect(engine.dialect.name)
    engine_dialect = sqlglot_dialect(engine.dialect.name)
    allowed = frozenset(a.lower() for a in allow_functions)
    target = target_of(engine) if sandbox_enabled() else None
    if target is not None:
        # The query process cuts the official statement itself, inside the time budget (on the text it tokenizes
        # for the guard anyway), then guards what would run: this process never tokenizes the prediction (a long
        # one cut here took minutes, outside every limit: each retry of the cut re-tokenizes a prefix).
        cut_there = rewrite in STATEMENT_REWRITES
        sandbox = process_sandbox()
        return (sandbox.submit if prefetch else sandbox.run)(
            target, sql, timeout=timeout, max_rows=max_rows, untrusted=untrusted, dialect=dialect, rewrite=rewrite,
            allow_functions=allowed, role=role or _restricted_role(engine), engine_dialect=engine_dialect,
            max_memory=DEFAULT_MAX_MEMORY if max_memory is None else max_memory, cut_statement=cut_there,
            text_errors=text_errors, distinct_rows=distinct_rows,
        )
    sql, rewrite = official_statement(sql, dialect, rewrite)
    if sql is None:  # a text without any statement runs nothing and returns no rows, as it does there
        return QueryResult(columns=(), rows=[])
    if prefetch:
        return None
    sql = prepare_sql(sql, dialect, untrusted=untrusted, rewrite=rewrite, allow_functions=allowed,
                      engine_dialect=engine_dialect)
    return execute_inline(engine, sql, timeout=timeout, max_rows=max_rows, role=role or _restricted_role(engine),
                          text_errors=text_errors, distinct_rows=distinct_rows)


#: The rewrites that first keep only the statement an official evaluator runs (:func:`official_statement`).
STATEMENT_REWRITES = ("official_distinct", "sqlite3_statement")


@functools.lru_cache(maxsize=64)  # a prediction is sent twice (prefetch, then run): tokenized once
def official_statement(sql: str, dialect: str, rewrite: str | None) -> tuple[str | None, str | None]:
    """For the reproduction profiles' rewrites, the statement the official evaluator runs (the rest never
    runs; None when the text has none) and the rewrite still to apply to it; any other rewrite unchanged.
    Raises QueryError("rejected") where the official engine refuses the text (see :func:`.statements.official_text`).
    Computed in the query process for a query sent there (:class:`.sandbox_worker.Worker`), else here."""
    if rewrite not in STATEMENT_REWRITES:
        return sql, rewrite
    from ..sql.statements import official_text

    statement = official_text(sql, dialect, "sqlite3" if rewrite == "sqlite3_statement" else rewrite)
    if statement is None:
        return None, None
    return statement, ("official_distinct" if rewrite == "official_distinct" else None)


def _restricted_role(engine) -> str | None:
    """The SELECT-only role of a database the plugin built (only PostgreSQL's backend has them, so no other
    engine pays for rendering its URL on every query)."""
    return backend_for(engine).restricted_role(engine)


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
            raise QueryError("syntax", f"cannot strip DISTINCT: {first_line(exc)}") from None
        guard(sql)
    elif rewrite is not None:
        raise ValueError(f"unknown rewrite {rewrite!r}")
    return sql


def _guard(sql: str, dialect: str, allow_functions: frozenset[str], engine_dialect: str | None = None) -> None:
    try:
        check_prediction(sql, dialect, allow_functions=allow_functions)
        if engine_dialect is not None and _reads_differently(engine_dialect, dialect):
            check_prediction(sql, engine_dialect, allow_functions=allow_functions)
    except QueryError as exc:
        if exc.kind != "rejected" or len(sql) > MAX_SQL_LENGTH or isinstance(exc, NestedTooDeeply) \
                or not starts_with_unknown_word(sql, engine_dialect or dialect):
            raise
        # sqlglot reads some typos as another statement (`SELEC name`: a column SELEC aliased name): the engine's
        # own parser, asked without running anything, tells a typo (syntax) from a statement refused (rejected)
        problem = engine_parse_error(sql, engine_dialect or dialect)
        if problem is None:
            raise
        raise QueryError("syntax", f"does not parse as {engine_dialect or dialect} SQL: {problem}") from None


def engine_parse_error(sql: str, engine_dialect: str) -> str | None:
    """The parse error of the engine that reads ``engine_dialect`` (a sqlglot dialect) on ``sql``, or None: it parses,
    or that engine cannot say without running it (PostgreSQL, any other engine: the guard's verdict stands)."""
    for backend in active_backends():
        parse_error = getattr(backend, "parse_error", None)  # a user's backend need not subclass Backend
        dialect = getattr(backend, "dialect", None)
        if parse_error is not None and dialect is not None and dialect.sqlglot == engine_dialect:
            problem = parse_error(sql)
            if problem is not None:
                return problem
    return None


def _reads_differently(engine_dialect: str, dialect: str) -> bool:
    from ..sql.guard import dialect_key

    try:
        return dialect_key(engine_dialect) != dialect_key(dialect)
    except (ValueError, KeyError):  # an engine sqlglot has no dialect for: the suite's dialect is all there is
        return False


def _connection_refused(engine, exc: Exception) -> bool:
    """Is ``exc``, from ``engine.raw_connection()``, a refused connection: SQLAlchemy's OperationalError, or the
    driver's own (PEP 249's, psycopg's), which raw_connection() lets through?"""
    from sqlalchemy.exc import OperationalError

    driver_error = getattr(getattr(engine.dialect, "loaded_dbapi", None), "OperationalError", None)
    return isinstance(exc, OperationalError) or (isinstance(driver_error, type) and isinstance(exc, driver_error))


def execute_inline(engine, sql: str, *, timeout: float, max_rows: int, role: str | None = None,
                   timeout_label: float | None = None, text_errors: str = "replace",
                   distinct_rows: bool = False) -> QueryResult:
    """Run already-checked SQL on ``engine`` in this process through its backend, with the engine's own timeout
    and the row cap (``timeout_label``: the timeout to name in messages; ``text_errors``: see :class:`Limits`)."""
    backend = backend_for(engine)
    try:
        raw = engine.raw_connection()
    except Exception as exc:
        if _connection_refused(engine, exc):  # the server went away since the engine was opened: the suite's error
            raise connection_lost(f"the {backend.name} database", engine.url.render_as_string(hide_password=True),
                                  exc) from None
        raise
    try:
        result = backend.run(raw.dbapi_connection, sql, Limits(timeout, max_rows, role, timeout_label, text_errors,
                                                                 distinct_rows))
    except QueryError:
        raise
    except Exception as exc:
        if type(backend) in BUILTIN_BACKENDS:
            raise
        # a user's backend's run() let a driver error through (the base run classifies it): name that backend,
        # not "internal error while scoring"
        raise UserHookError(f"the {backend.name!r} engine backend's run() raised {type(exc).__name__}: "
                            f"{first_line(exc)} (classify driver errors as QueryError, as Backend.run does)") from exc
    finally:
        raw.close()
    if not isinstance(result, QueryResult) and type(backend) not in BUILTIN_BACKENDS:
        raise UserHookError(f"the {backend.name!r} engine backend's run() returned a {type(result).__name__}, not a "
                            "pytest_sqleval.results.QueryResult(columns=..., rows=...)")
    return result
