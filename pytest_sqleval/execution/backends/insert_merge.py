"""Setup scripts' bulk path: consecutive single-row ``INSERT ... VALUES`` into one table become one insert.

An engine like DuckDB pays about a millisecond of planning per statement, so a script of 6,500
one-row inserts takes seconds; the same rows in a few multi-row inserts take milliseconds. The
script is split with sqlglot's tokenizer (strings, quoted names and comments read as the engine
reads them), and only statements that are exactly ``INSERT INTO <name> [(<columns>)] VALUES (...)[,
(...)]`` are merged with their neighbours into the same target; every row keeps its original text
and order, and everything else in the script is kept byte for byte. The caller runs the merged
script in one transaction and, on any failure, runs the script as written (so the result and any
error message are the engine's own).

With ``across_tables``, a run of such inserts into several tables (a parent row, its child row, the next
parent...) becomes one merged insert per table, in the order the tables first appear: each table keeps its
rows in their written order. Only rows of plain literals are moved past another table's rows, and only in
scripts where the order between tables cannot matter: none so far names a foreign key (a child row written
before its parent must fail as written) or a sequence (ids drawn in turn by two tables).
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
    literal: bool = False  # every row holds plain literals only (numbers, strings, NULL, TRUE, FALSE)
    table: str = ""  # the target table's name, lowercased (its column list left out)


def merge_single_row_inserts(text: str, dialect: str, across_tables: list[bool] | None = None) -> str:
    """``text`` with runs of VALUES inserts into the same target merged (unchanged when there is none).

    ``across_tables``: a one-item list, True while the scripts run so far (this one included) leave the order
    between tables free (see the module docstring); this script's foreign keys or sequences set it to False.
    """
    if len(text) > MAX_SCRIPT_CHARS or text.lower().count("insert") < 2:  # nothing to merge: no need to tokenize
        if across_tables is not None and across_tables[0]:  # ...but a later script's order may depend on this one
            across_tables[0] = len(text) <= MAX_SCRIPT_CHARS and not _text_orders_tables(text, dialect)
        return text
    try:
        statements = _statements(text, dialect, across_tables)
    except Exception:  # noqa: BLE001 - a script sqlglot cannot tokenize runs as written
        if across_tables is not None:
            across_tables[0] = False
        return text
    across = bool(across_tables and across_tables[0])
    pieces: list[str] = []
    done = 0  # text before this offset is already in pieces
    run: list[tuple[int, int, Any]] = []
    for span in statements + [None]:
        if span is not None and span[2] is not None:
            run.append(span)
            continue
        for first, last, groups in _merge_plan(run, across):
            pieces.append(text[done:first])
            pieces.append("\n".join(_merged(text, inserts) for inserts in groups))
            done = last
        run = []
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def _merge_plan(run: list[tuple[int, int, Any]], across: bool) -> list[tuple[int, int, list[list[ValuesInsert]]]]:
    """How to rewrite a run of consecutive VALUES inserts: ``(start, end, groups)`` spans of the text, each
    replaced by one merged insert per group (nothing: leave the run as written)."""
    inserts = [span[2] for span in run]
    targets: dict[tuple[Any, ...], list[ValuesInsert]] = {}
    for insert in inserts:
        targets.setdefault(insert.target, []).append(insert)
    tables = {insert.table for insert in inserts}
    if (across and 1 < len(targets) < len(inserts) and len(tables) == len(targets)
            and all(insert.literal for insert in inserts)):
        return [(run[0][0], run[-1][1], list(targets.values()))]  # one insert per table, in first-seen order
    plan = []
    start = 0
    for end in range(1, len(run) + 1):  # runs into one target (neighbours only)
        if end == len(run) or inserts[end].target != inserts[start].target:
            if end - start > 1:
                plan.append((run[start][0], run[end - 1][1], [inserts[start:end]]))
            start = end
    return plan


def _merged(text: str, inserts: list[ValuesInsert]) -> str:
    """One multi-row INSERT per ``ROWS_PER_INSERT`` rows, with the first statement's ``INSERT ... VALUES``."""
    prefix = text[inserts[0].start:inserts[0].values_end]
    rows = [text[start:end] for insert in inserts for start, end in insert.rows]
    chunks = [rows[i:i + ROWS_PER_INSERT] for i in range(0, len(rows), ROWS_PER_INSERT)]
    return "\n".join(f"{prefix} {', '.join(chunk)};" for chunk in chunks)


def _statements(text: str, dialect: str, across_tables: list[bool] | None = None) -> list[tuple[int, int, Any]]:
    """``(start, end, insert)`` per statement: its span (through its semicolon) and, for a VALUES insert,
    its :class:`ValuesInsert`, else None. ``across_tables`` (see :func:`merge_single_row_inserts`) is set to
    False when the text names a foreign key or a sequence."""
    from sqlglot import TokenType
    from sqlglot.dialects.dialect import Dialect

    tokens = Dialect.get_or_raise(dialect).tokenize(text)
    if across_tables is not None and across_tables[0] and _orders_tables(tokens, TokenType):
        across_tables[0] = False
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

#: Tokens of a row of plain literals.
_LITERAL_TOKENS = ("NUMBER", "STRING", "NULL", "TRUE", "FALSE", "DASH", "PLUS", "COMMA", "L_PAREN", "R_PAREN")

#: Functions that draw from (or set) a sequence: rows of two tables that use one must keep their order.
_SEQUENCE_FUNCTIONS = frozenset({"nextval", "currval", "setval", "lastval"})


def _text_orders_tables(text: str, dialect: str) -> bool:
    """:func:`_orders_tables` of a whole text (True when sqlglot cannot tokenize it)."""
    from sqlglot import TokenType
    from sqlglot.dialects.dialect import Dialect

    try:
        return _orders_tables(Dialect.get_or_raise(dialect).tokenize(text), TokenType)
    except Exception:  # noqa: BLE001 - unread: assume it does
        return True


def _orders_tables(tokens: list[Any], types: Any) -> bool:
    """Does the order between tables' rows matter to this text: a foreign key, a sequence, an ATTACH?"""
    for token in tokens:
        kind = token.token_type
        if kind in (types.REFERENCES, types.FOREIGN_KEY, types.SEQUENCE, types.ATTACH):  # (ATTACH: another
            return True  # database's tables may hold foreign keys this text does not show)
        if kind in (types.VAR, types.IDENTIFIER) and token.text.lower() in _SEQUENCE_FUNCTIONS:
            return True
    return False


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
    literal_types = {getattr(types, name) for name in _LITERAL_TOKENS}
    literal = all(t.token_type in literal_types for t in tokens[values + 1:])
    names = [t.text.lower() for t in target if t.token_type in (types.VAR, types.IDENTIFIER)]
    before_columns = next((i for i, t in enumerate(target) if t.token_type == types.L_PAREN), len(target))
    table = next((t.text.lower() for t in reversed(target[:before_columns])
                  if t.token_type in (types.VAR, types.IDENTIFIER)), names[0] if names else "")
    return ValuesInsert(key, tokens[0].start, tokens[values].end + 1, rows, literal, table)


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
