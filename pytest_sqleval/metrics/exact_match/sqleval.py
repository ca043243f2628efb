"""Profile ``sqleval`` (default): Spider's clause decomposition without the official shortcuts.

Any SQL that sqlglot parses is compared; names are resolved per scope and
normalised as described in :mod:`.sqleval_shape`. Components (all must hold):

================  ==========================================================================
select            SELECT items, as a multiset (order-free; aliases dropped; ``t.*`` is ``*``
                  when t is the SELECT's only source)
select_no_agg     SELECT items with a top-level aggregate unwrapped, multiset
distinct          the SELECT's own DISTINCT (DISTINCT inside aggregates and subqueries
                  counts through the expressions and subquery shapes)
from              FROM sources (tables, subqueries by content) and join kinds, multisets;
                  ``JOIN`` = ``INNER JOIN``, a comma = ``CROSS JOIN``
join_on           ON conditions, split at AND, as a multiset of normalised conditions
                  (``a = b`` same as ``b = a``; USING (k) reads as ``l.k = r.k``, a NATURAL
                  join as USING the columns its two sides share)
where             the WHERE condition (and DuckDB's QUALIFY), normalised (AND/OR operands
                  sorted, comparisons oriented), so precedence counts but operand order does not
where_no_op       the left side of every WHERE condition, multiset
and_or            the set of WHERE connectors
group_no_having   GROUP BY expressions, multiset (``GROUP BY 1`` and SELECT aliases resolved)
group             GROUP BY expressions and the normalised HAVING condition
order             ORDER BY keys in order, each with its own direction (ASC when unwritten) and
                  NULLs placement (NULLS FIRST/LAST, else the dialect's default); a bare name
                  that is a SELECT alias is that output column, as the engines read it
limit             LIMIT and OFFSET values (``FETCH FIRST n ROWS ONLY`` is ``LIMIT n``)
iuen              set operations after the first SELECT, in written order, each operand
                  compared whole (operands are not commuted; UNION ALL differs from UNION)
keywords          where, group, having, order, asc/desc, limit, the set operations,
                  and or/not/in/like in ON, WHERE and HAVING
================  ==========================================================================

Literal values are compared (numbers by value, strings case-sensitively); with
``values: ignore`` every literal outside LIMIT/OFFSET counts as equal to any
other. Columns equated by an inner-join ON condition are interchangeable
within their SELECT; schema foreign keys are not used. ORDER BY / LIMIT after a
set operation belong to the whole compound query.

A prediction sqlglot cannot parse scores 0 with reason ``parse_error: ...``; a
gold it cannot parse raises :class:`GoldParseError`.

Bounded: every subquery and expression is normalised once (memoised), and SQL
beyond the limits of :mod:`pytest_sqleval.sql.limits` (length, nesting, the
work budget of one shape) is not read. Such a prediction (or one whose
reading fails for any other reason) scores 0 with the reason (``nested too
deeply to score (...)``, ``too long to score (...)``, ``too complex to score
(...)``); such a gold raises :class:`GoldTooComplex`. Nothing else is raised.
"""

from __future__ import annotations

from functools import lru_cache

from ...schema import Schema
from ...sql.limits import closed_comment
from .options import ExactMatchOptions
from .parsing import SqlParseError, parse_statement
from .sqleval_shape import QueryShape, ShapeBuilder
from .verdict import ExactMatchVerdict, GoldParseError, gold_failure, unscorable, verdict_from_clauses

#: Component -> the QueryShape fields it compares.
COMPONENT_FIELDS: dict[str, tuple[str, ...]] = {
    "select": ("select",),
    "select_no_agg": ("select_no_agg",),
    "where": ("where", "qualify"),
    "where_no_op": ("where_lhs",),
    "group_no_having": ("group",),
    "group": ("group", "having"),
    "order": ("order",),
    "and_or": ("where_connectors",),
    "iuen": ("set_ops",),
    "keywords": ("keywords",),
    "from": ("sources", "join_kinds"),
    "join_on": ("join_on",),
    "limit": ("limit",),
    "distinct": ("distinct",),
}


def sqleval_exact_match(gold_sql: str, pred_sql: str, schema: Schema, options: ExactMatchOptions,
                        dialect: str) -> ExactMatchVerdict:
    ignore_values = options.values == "ignore"
    gold = gold_shape(gold_sql, schema, dialect, ignore_values)
    try:
        # the same text has the same shape (query_shape is a function of its arguments): not read twice
        pred = gold if pred_sql == gold_sql else query_shape(pred_sql, schema, dialect, ignore_values=ignore_values,
                                                             prediction=True)
        clauses = shape_components(pred, gold)
    except SqlParseError as exc:
        return ExactMatchVerdict(False, {}, f"parse_error: {exc}")
    except Exception as exc:  # noqa: BLE001 - limits, recursion, memory or a bug: the prediction scores 0
        return unscorable(exc)
    return verdict_from_clauses(clauses)


@lru_cache(maxsize=4096)
def gold_shape(gold_sql: str, schema: Schema, dialect: str, ignore_values: bool) -> QueryShape:
    """The gold's shape (cached: a gold is compared with many predictions); raises ``GoldUnreadable``."""
    try:
        return query_shape(gold_sql, schema, dialect, ignore_values=ignore_values)
    except SqlParseError as exc:
        raise GoldParseError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - limits, recursion, memory or a bug: the gold cannot be read
        raise gold_failure(exc) from None


def query_shape(sql: str, schema: Schema, dialect: str, *, ignore_values: bool = False,
                prediction: bool = False) -> QueryShape:
    """The shape of the one query in ``sql``; raises ``SqlParseError`` (``SqlTooComplex`` beyond the limits).
    A ``prediction`` followed by an empty statement (``q;;``) is one no database runs: ``SqlParseError``."""
    try:
        tree = parse_statement(sql, dialect, allow_trailing_statements=False, allow_empty_after=not prediction)
    except SqlParseError:
        closed = closed_comment(sql, dialect)  # ``... /* cut off``: SQLite runs it, the comment read to the end
        if closed is None:
            raise
        sql = closed
        tree = parse_statement(sql, dialect, allow_trailing_statements=False, allow_empty_after=not prediction)
    try:
        return ShapeBuilder(schema, sql, dialect, ignore_values=ignore_values).query(tree)
    except ValueError as exc:
        raise SqlParseError(str(exc)) from None


def shape_components(pred: QueryShape, gold: QueryShape) -> dict[str, bool]:
    return {
        name: all(getattr(pred, f) == getattr(gold, f) for f in fields)
        for name, fields in COMPONENT_FIELDS.items()
    }
