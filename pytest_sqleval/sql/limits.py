"""Limits on the SQL that scoring reads: exact match, hardness, the ORDER BY plan, DISTINCT rewrites, gold checks.

Scoring reads SQL it does not control (a prediction, and a gold is data too)
with sqlglot and walks the tree recursively. These limits make that bounded:
text beyond them is refused with a reason, before sqlglot parses it, instead
of exhausting the stack, the memory or the clock. They are far above any real
benchmark query (Spider and BIRD golds nest subqueries at most 4 deep):

========================= ========= =============================================================
limit                     value     checked on
========================= ========= =============================================================
:data:`MAX_SQL_CHARS`     262,144   the text's length, before anything else
:data:`MAX_SQL_TOKENS`    25,000    sqlglot's token stream (a 10,000-value IN list is 20,000)
:data:`MAX_NESTING_DEPTH` 32        brackets ``( [ {`` and ``CASE ... END`` open at once, plus a
                                    run of prefix operators (``NOT NOT - x``), from the tokens
:data:`MAX_TREE_DEPTH`    160       the parsed tree's depth; a chain of ``AND`` (or of ``OR``)
                                    counts once, so 5,000 ``AND``-ed conditions are fine
:data:`WORK_BUDGET`       250,000   steps of one reading or comparison (nodes and units visited)
:data:`FRAME_BUDGET`      2,000     Python stack frames one entry point may use on top of its
                                    caller's (:func:`bounded_stack`)
========================= ========= =============================================================

Beyond a limit :class:`SqlTooComplex` is raised; its ``reason`` is one of
``too long to score (...)``, ``nested too deeply to score (...)`` or ``too
complex to score (...)``, naming the measure and the limit. The work budget is
a deterministic count, not a clock, so a verdict never depends on the
machine's load. A ``RecursionError`` or ``MemoryError`` that still escapes is
mapped to the same reasons by :func:`too_complex_reason` (the last net).

The token-level nesting measure is cheap but not exact (``NOT (SELECT NOT
(SELECT ...`` costs sqlglot's recursive parser more frames per level than
plain parentheses), so every entry point also runs under :func:`bounded_stack`:
the recursion limit is set to the current stack depth plus :data:`FRAME_BUDGET`
while it runs. A ``RecursionError`` then depends on the SQL only, never on how
deep the caller's stack happens to be (plain pytest, ``pytester``, xdist), so
verdicts are reproducible.

A prediction beyond a limit scores ``exact_match`` false with the reason; a
gold beyond a limit is a gold that cannot be read (a clear error of the suite
naming the case); hardness is then ``None`` with source ``unclassified: ...``.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError
from sqlglot.tokens import Token, TokenType

MAX_SQL_CHARS = 262_144
MAX_SQL_TOKENS = 25_000
MAX_NESTING_DEPTH = 32
MAX_TREE_DEPTH = 160
WORK_BUDGET = 250_000
FRAME_BUDGET = 2_000

NESTED_TOO_DEEPLY = "nested too deeply to score"
TOO_LONG = "too long to score"
TOO_COMPLEX = "too complex to score"

_OPENING = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE, TokenType.CASE})
_CLOSING = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE, TokenType.END})
_PREFIX = frozenset({TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE})

_F = TypeVar("_F", bound=Callable)
_stack_state = threading.local()


def _stack_depth() -> int:
    depth = 0
    frame = sys._getframe(1)
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


def bounded_stack(function: _F) -> _F:
    """Run ``function`` with the recursion limit at the current depth plus :data:`FRAME_BUDGET`.

    Nested calls keep the outermost budget. The limit is restored afterwards.
    Only the main thread changes the (process-wide) limit; other threads keep it.
    """

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if getattr(_stack_state, "active", False) or threading.current_thread() is not threading.main_thread():
            return function(*args, **kwargs)
        previous = sys.getrecursionlimit()
        _stack_state.active = True
        try:
            sys.setrecursionlimit(_stack_depth() + FRAME_BUDGET)
            return function(*args, **kwargs)
        finally:
            sys.setrecursionlimit(previous)
            _stack_state.active = False

    return wrapper  # type: ignore[return-value]


def invalid_text(sql: str) -> str | None:
    """Why ``sql`` is no text an engine could read (not valid UTF-8: a lone surrogate, a byte a predictions file
    held; a NUL character), or None. Such a prediction misses everywhere: the guard refuses it (kind ``syntax``)
    and exact match never matches it, whatever a comment hides (both read this one rule)."""
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"the prediction is not valid UTF-8 text (bad character at position {exc.start})"
    if "\x00" in sql:
        return "the prediction contains a NUL character"
    return None


#: Dialects whose engine reads an unterminated ``/*`` comment to the end of the text (SQLite); PostgreSQL and DuckDB
#: refuse it ("unterminated /* comment").
OPEN_COMMENT_DIALECTS = frozenset({"sqlite"})


def closed_comment(sql: str, dialect: str) -> str | None:
    """``sql`` with its unterminated ``/*`` comment closed (``SELECT 1 /* cut off`` -> ``SELECT 1 /* cut off*/``),
    when the dialect's engine reads such a comment to the end of the text and it is why sqlglot cannot tokenize
    ``sql`` (every token of the closed text lies before the end of ``sql``); else None. The closed text reads the
    same to that engine as ``sql``."""
    reader = sqlglot.Dialect.get_or_raise(dialect)
    if type(reader).__name__.lower() not in OPEN_COMMENT_DIALECTS or reader.tokenizer_class.NESTED_COMMENTS:
        return None  # (SQLite never nests comments: a tokenizer that does would end the comment elsewhere)
    closed = sql + "*/"
    try:
        tokens = raw_tokens(closed, dialect)
    except (SqlglotError, RecursionError, ValueError, TypeError, IndexError, KeyError):
        return None
    return closed if tokens and all(token.end < len(sql) for token in tokens) else None


class SqlTooComplex(SqlglotError):
    """The SQL is beyond one of the documented limits; ``reason`` says which (a short sentence)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def tokenize_bounded(sql: str, dialect: str) -> list[Token]:
    """sqlglot's tokens of ``sql``, after the length, token-count and nesting checks.

    Raises :class:`SqlTooComplex`, or sqlglot's ``TokenError`` for text it cannot tokenize.
    The list is cached (a text is read by several steps: the limits, the Spider
    text checks, the parser) and must not be modified.
    """
    if len(sql) > MAX_SQL_CHARS:
        raise SqlTooComplex(f"{TOO_LONG} ({len(sql):,} characters; the limit is {MAX_SQL_CHARS:,})")
    return _tokenize_checked(sql, dialect)


@functools.lru_cache(maxsize=4)  # a reading tokenizes at most two texts (the Spider profile rewrites `! =`)
def _tokenize_checked(sql: str, dialect: str) -> list[Token]:
    if len(sql) > MAX_SQL_CHARS:
        raise SqlTooComplex(f"{TOO_LONG} ({len(sql):,} characters; the limit is {MAX_SQL_CHARS:,})")
    try:
        tokens = raw_tokens(sql, dialect)
    except (RecursionError, MemoryError) as exc:
        raise SqlTooComplex(too_complex_reason(exc)) from None
    if len(tokens) > MAX_SQL_TOKENS:
        raise SqlTooComplex(f"{TOO_LONG} ({len(tokens):,} tokens; the limit is {MAX_SQL_TOKENS:,})")
    depth = nesting_depth(tokens)
    if depth > MAX_NESTING_DEPTH:
        raise SqlTooComplex(f"{NESTED_TOO_DEEPLY} (nesting depth {depth}; the limit is {MAX_NESTING_DEPTH})")
    return tokens


def raw_tokens(sql: str, dialect: str) -> list[Token]:
    """``sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)``, without the limit checks (the caller applies its own
    rules), shared and read only: the last few ``(text, dialect)`` are kept, so the steps that read a prediction's
    tokens one after the other (the official statement cut before it is sent, then exact match's checks and the
    parse) tokenize it once. Errors are raised each time, never kept; texts beyond :data:`MAX_SQL_CHARS` are not kept.
    """
    if type(sql) is not str or type(dialect) is not str or len(sql) > MAX_SQL_CHARS:
        return sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    return _raw_tokens_kept(sql, dialect)


@functools.lru_cache(maxsize=4)
def _raw_tokens_kept(sql: str, dialect: str) -> list[Token]:
    return sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)


def nesting_depth(tokens: Iterable[Token]) -> int:
    """The deepest nesting of brackets and CASE ... END, a run of prefix operators counting one level each."""
    depth = deepest = run = 0
    for token in tokens:
        kind = token.token_type
        if kind in _PREFIX:
            run += 1
        else:
            run = 0
        if kind in _OPENING:
            depth += 1
        elif kind in _CLOSING:
            depth = max(depth - 1, 0)
        deepest = max(deepest, depth + run)
    return deepest


def tree_depth(node: exp.Expression) -> int:
    """The depth of a sqlglot tree, computed without recursion; an AND (OR) chain counts as one level."""
    deepest = 0
    stack = [(node, 1)]
    while stack:
        current, depth = stack.pop()
        deepest = max(deepest, depth)
        kind = type(current)
        for value in current.args.values():  # iter_expressions(), inlined: this walk sees every node
            if isinstance(value, exp.Expression):
                same_chain = type(value) is kind and isinstance(value, exp.Connector)
                stack.append((value, depth if same_chain else depth + 1))
            elif isinstance(value, list):
                stack.extend((item, depth + 1) for item in value if isinstance(item, exp.Expression))
    return deepest


def check_tree(node: exp.Expression | None) -> None:
    if node is None:
        return
    depth = tree_depth(node)
    if depth > MAX_TREE_DEPTH:
        raise SqlTooComplex(f"{NESTED_TOO_DEEPLY} (tree depth {depth}; the limit is {MAX_TREE_DEPTH})")


def parse_bounded(sql: str, dialect: str) -> list[exp.Expression | None]:
    """``sqlglot.parse(sql, read=dialect)`` within the limits.

    Raises :class:`SqlTooComplex` beyond a limit, sqlglot's errors for SQL it cannot parse.
    Each distinct ``(sql, dialect)`` is parsed once per process (:mod:`pytest_sqleval.sql.parsed`); the
    caller gets its own copies of the statements, free to modify.
    """
    from .parsed import copy_tree, parse_shared

    return [None if s is None else copy_tree(s) for s in parse_shared(sql, dialect, _parse_bounded)]


@bounded_stack
def _parse_bounded(sql: str, dialect: str) -> list[exp.Expression | None]:
    # The cached tokens are shared; the parser may extend a token's comment list, so it gets copies.
    tokens = [Token(t.token_type, t.text, t.line, t.col, t.start, t.end, list(t.comments))
              for t in tokenize_bounded(sql, dialect)]
    try:
        statements = sqlglot.Dialect.get_or_raise(dialect).parser().parse(tokens, sql)
    except (RecursionError, MemoryError) as exc:
        raise SqlTooComplex(too_complex_reason(exc)) from None
    for statement in statements:
        check_tree(statement)
    return statements


def join_keywords_split_by_comments(tokens: list[Token], reader: sqlglot.Dialect) -> list[Token]:
    """The tokens with a two-word keyword that a comment splits (``ORDER /* c */ BY``, ``GROUP -- c`` + newline +
    ``BY``) joined into the one keyword token sqlglot gives it without the comment: the engine reads a comment as
    white space (the text runs there), sqlglot's tokenizer joins the words only across white space and its parser
    then fails on ``ORDER`` alone."""
    keywords = reader.tokenizer_class.KEYWORDS
    joined: list[Token] = []
    for token in tokens:
        previous = joined[-1] if joined else None
        if previous is not None and previous.comments and previous.token_type == TokenType.VAR \
                and token.token_type == TokenType.VAR:
            kind = keywords.get(f"{previous.text} {token.text}".upper())
            if kind is not None and kind != TokenType.VAR:
                joined[-1] = Token(kind, f"{previous.text} {token.text}", previous.line, previous.col, previous.start,
                                   token.end, [*previous.comments, *token.comments])
                continue
        joined.append(token)
    return joined


def parse_one_bounded(sql: str, dialect: str) -> exp.Expression:
    """``sqlglot.parse_one(sql, read=dialect)`` within the limits (the first statement)."""
    statements = parse_bounded(sql, dialect)
    if not statements or statements[0] is None:
        raise ParseError(f"No expression was parsed from '{sql[:80]}'")
    return statements[0]


def parse_bounded_shared(sql: str, dialect: str) -> tuple[exp.Expression | None, ...]:
    """:func:`parse_bounded` without the copies: the process's shared statements, for readers that never
    modify them (no ``set``/``replace``/``pop``, no new node built around an existing one). Same errors."""
    from .parsed import parse_shared

    return parse_shared(sql, dialect, _parse_bounded)


def parse_one_shared(sql: str, dialect: str) -> exp.Expression:
    """:func:`parse_one_bounded` without the copy: the process's shared tree, for readers that never modify
    it (they copy the part they change). Same errors, same limits; saves a tree copy per reader."""
    statements = parse_bounded_shared(sql, dialect)
    if not statements or statements[0] is None:
        raise ParseError(f"No expression was parsed from '{sql[:80]}'")
    return statements[0]


def too_complex_reason(exc: BaseException) -> str:
    """The scoring reason for an exception raised while reading or comparing SQL past the limits."""
    if isinstance(exc, SqlTooComplex):
        return exc.reason
    if isinstance(exc, RecursionError):
        return f"{NESTED_TOO_DEEPLY} (Python's recursion limit was reached)"
    if isinstance(exc, MemoryError):
        return f"{TOO_COMPLEX} (out of memory)"
    return f"{TOO_COMPLEX} ({type(exc).__name__})"


class WorkBudget:
    """A deterministic step counter: :meth:`spend` raises :class:`SqlTooComplex` past ``limit`` steps."""

    __slots__ = ("limit", "left")

    def __init__(self, limit: int | None = None) -> None:
        self.limit = WORK_BUDGET if limit is None else limit
        self.left = self.limit

    def spend(self, steps: int = 1) -> None:
        self.left -= steps
        if self.left < 0:
            raise SqlTooComplex(f"{TOO_COMPLEX} (more than {self.limit:,} steps)")
