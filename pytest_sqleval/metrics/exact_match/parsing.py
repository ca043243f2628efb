"""sqlglot parsing shared by both profiles, within the limits of :mod:`pytest_sqleval.sql.limits`."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from ...sql.limits import SqlTooComplex, parse_bounded, parse_bounded_shared


class SqlParseError(ValueError):
    """sqlglot cannot parse the SQL (or, where one statement is required, finds several)."""


def parse_statement(sql: str, dialect: str, *, allow_trailing_statements: bool, shared: bool = False,
                    allow_empty_after: bool = True) -> exp.Expression:
    """The first statement of ``sql``.

    ``allow_trailing_statements`` ignores any later statement, as the official
    Spider parser does; otherwise a second statement is an error, and so is an
    empty one after the query (``q;;``, ``q; ;``) unless ``allow_empty_after``
    (the guard refuses it on every engine: no database runs it). ``shared``: the
    process's shared tree instead of a copy, for a caller that only reads it (the
    Spider reader). Raises :class:`SqlParseError`, or
    :class:`~pytest_sqleval.sql.limits.SqlTooComplex` for SQL beyond the limits.
    """
    parse = parse_bounded_shared if shared else parse_bounded
    try:
        # (a comment after the last ';' is a bare Semicolon node, not a statement)
        parsed = parse(sql, dialect)
        statements = [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]
    except SqlTooComplex:
        raise
    except sqlglot.errors.SqlglotError as exc:
        raise SqlParseError(_first_line(str(exc))) from None
    if not statements:
        raise SqlParseError("empty SQL")
    if len(statements) > 1 and not allow_trailing_statements:
        raise SqlParseError(f"{len(statements)} statements; exact match compares one query")
    first = next(i for i, s in enumerate(parsed) if s is statements[0])
    if not (allow_trailing_statements or allow_empty_after) and None in parsed[first:]:
        # (empty statements before the query are the engine's to skip, as SQLite does)
        raise SqlParseError("an empty statement (`;`) follows the query; no database runs it as one query")
    return statements[0]


def _first_line(message: str) -> str:
    stripped = message.strip()
    return stripped.splitlines()[0] if stripped else "unparseable"
