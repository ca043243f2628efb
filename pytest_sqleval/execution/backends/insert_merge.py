"""Setup scripts' bulk path: consecutive single-row ``INSERT ... VALUES`` into one table become one insert.

An engine like DuckDB pays about a millisecond of planning per statement, so a script of 6,500
one-row inserts takes seconds; the same rows in a few multi-row inserts take milliseconds. The
script is split with sqlglot's tokenizer (strings, quoted names and comments read as the engine
reads them), and only statements that are exactly ``INSERT INTO <name> [(<columns>)] VALUES (...)[,
(...)]`` are merged with their neighbours into the same target; every row keeps its original text
and order, and everything else in the script is kept byte for byte. The caller runs the merged
script in one transaction and, on any failure, runs the script as written (so the result and any
error message are the engine's own).
"""

from __future__ import annotations

from typing import Any, NamedTuple

#: Rows per merged INSERT (bounds the engine's parse of one statement).
ROWS_PER_INSERT = 1000

#: Scripts larger than this (characters) run as written: their tokens would take more memory than the
#: merge saves time.
MAX_SCRIPT_CHARS = 50_000_000


class ValuesInsert(NamedTuple):
    """One ``INSERT INTO target VALUES (...)`` statement: where its ``INSERT ... VALUES`` is, and its rows."""

    target: tuple  # the target's tokens (type, text): statements merge only into the very same target
    start: int  # offset of INSERT
    values_end: int  # offset just past VALUES
    rows: list[tuple[int, int]]  # spans of the row tuples


def merge_single_row_inserts(text: str, dialect: str) -> str:
    """``text`` with runs of VALUES inserts into the same target merged (unchanged when there is none)."""
    if len(text) > MAX_SCRIPT_CHARS or text.lower().count("insert") < 2:  # nothing to merge: no need to tokenize
        return text
    try:
        statements = _statements(text, dialect)
    except Exception:  # noqa: BLE001 - a script sqlglot cannot tokenize runs as written
        return text
    pieces: list[str] = []
    done = 0  # text before this offset is already in pieces
    run: list[tuple[int, int, Any]] = []
    for span in statements + [None]:
        if span is not None and span[2] is not None and (not run or run[0][2].target == span[2].target):
            run.append(span)
            continue
        if len(run) > 1:
            pieces.append(text[done:run[0][0]])
            pieces.append(_merged(text, [r[2] for r in run]))
            done = run[-1][1]
        run = [span] if span is not None and span[2] is not None else []
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def _merged(text: str, inserts: list[ValuesInsert]) -> str:
    """One multi-row INSERT per ``ROWS_PER_INSERT`` rows, with the first statement's ``INSERT ... VALUES``."""
    prefix = text[inserts[0].start:inserts[0].values_end]
    rows = [text[start:end] for insert in inserts for start, end in insert.rows]
    chunks = [rows[i:i + ROWS_PER_INSERT] for i in range(0, len(rows), ROWS_PER_INSERT)]
    return "\n".join(f"{prefix} {', '.join(chunk)};" for chunk in chunks)


def _statements(text: str, dialect: str) -> list[tuple[int, int, Any]]:
    """``(start, end, insert)`` per statement: its span (through its semicolon) and, for a VALUES insert,
    its :class:`ValuesInsert`, else None."""
    from sqlglot import TokenType
    from sqlglot.dialects.dialect import Dialect

    tokens = Dialect.get_or_raise(dialect).tokenize(text)
    spans: list[tuple[int, int, Any]] = []
    current: list[Any] = []
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if current:
                spans.append((current[0].start, token.end + 1, _values_insert(current, TokenType)))
            current = []
        else:
            current.append(token)
    if current:
        spans.append((current[0].start, current[-1].end + 1, None))  # no semicolon: left as written
    return spans


_TARGET_TOKENS = ("VAR", "IDENTIFIER", "DOT", "L_PAREN", "R_PAREN", "COMMA")

#: Tokens that start a subquery (DuckDB also reads ``FROM t SELECT ...``, ``TABLE t``, ``VALUES ...``).
_SUBQUERY_TOKENS = ("SELECT", "WITH", "FROM", "TABLE", "VALUES")


def _values_insert(tokens: list[Any], types: Any) -> ValuesInsert | None:
    """The :class:`ValuesInsert` when ``tokens`` are exactly a VALUES insert, else None."""
    if len(tokens) < 6 or tokens[0].token_type != types.INSERT or tokens[1].token_type != types.INTO:
        return None
    values = next((i for i, t in enumerate(tokens) if t.token_type == types.VALUES), None)
    if values is None or values < 3:
        return None
    target = tokens[2:values]
    allowed = {getattr(types, name) for name in _TARGET_TOKENS}
    if any(t.token_type not in allowed for t in target) or target[0].token_type not in allowed - {
            types.DOT, types.L_PAREN, types.R_PAREN, types.COMMA}:
        return None
    subquery = {getattr(types, name) for name in _SUBQUERY_TOKENS}
    if any(t.token_type in subquery for t in tokens[values + 1:]):
        return None  # a subquery reads the table as each statement left it: one multi-row insert would not
    rows = _row_spans(tokens[values + 1:], types)
    if not rows:
        return None
    key = tuple((t.token_type, t.text) for t in target)
    return ValuesInsert(key, tokens[0].start, tokens[values].end + 1, rows)


def _row_spans(tokens: list[Any], types: Any) -> list[tuple[int, int]] | None:
    """The spans of ``(...), (...)`` groups that make up all of ``tokens`` (None: anything else)."""
    rows: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        if tokens[i].token_type != types.L_PAREN:
            return None
        depth, j = 0, i
        while j < len(tokens):
            kind = tokens[j].token_type
            depth += kind == types.L_PAREN
            depth -= kind == types.R_PAREN
            if depth == 0:
                break
            j += 1
        if j == len(tokens):
            return None
        rows.append((tokens[i].start, tokens[j].end + 1))
        i = j + 1
        if i < len(tokens):
            if tokens[i].token_type != types.COMMA or i + 1 == len(tokens):
                return None
            i += 1
    return rows
