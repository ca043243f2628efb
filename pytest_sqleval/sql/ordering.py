"""What the gold query's ORDER BY asks of a prediction's row order.

:func:`plan_order` reads the option ``row_order`` (and ``ties``):

``always``
    Rows are compared in order, strictly (ties must come in the gold's order).
``ignore``
    Rows are never compared in order.
``order_by_text``
    In order iff ``"order by"`` occurs anywhere in the lower-cased gold SQL.
    This reproduces test-suite-sql-eval's substring test, so an ORDER BY
    inside a subquery or a string literal counts too; it is the one place
    that looks at SQL text instead of the tree. Strictly, unless ``ties:
    any`` and the outermost query has an ORDER BY: its keys then give the
    tie groups, as under ``order_by``.
``order_by``
    The gold is parsed with sqlglot; rows are in order iff the *outermost*
    query (the top SELECT or the top UNION / INTERSECT / EXCEPT, after any
    WITH, inside any parentheses) has an ORDER BY. An ORDER BY in a
    subquery or CTE never counts. When the gold cannot be parsed (or is
    beyond the limits of :mod:`pytest_sqleval.sql.limits`), the substring
    test decides, strictly, and the plan's ``note`` says so.

With ``row_order: order_by`` and ``ties: any``, rows that tie on every ORDER
BY key may come in any order. The keys are found among the output columns:
an ordinal (``ORDER BY 2``), an output alias, an expression identical (as a
tree) to a selected expression, or a bare column naming a selected column
(case-insensitively, table qualifiers agreeing when both are given). If all
keys are output columns, ``key_columns`` lists them. Otherwise, for a plain
SELECT without DISTINCT, ``hidden_key_sql`` is the gold with every ORDER BY
key appended to the select list (``AS __sqleval_key_<i>``, aliases and
ordinals replaced by the expression they name) and ``hidden_key_count``
says how many columns were appended: the caller runs it instead of the
gold, drops the last ``hidden_key_count`` columns from the result and
passes them to :func:`pytest_sqleval.metrics.tie_groups.tie_group_starts`
as the keys. In any other case (SELECT DISTINCT or a set operation with a
key that is not an output column, a ``*`` hiding the key's position) the
order is strict and ``note`` says why.

The tie groups themselves are read from the gold's result, not its SQL, by
:mod:`pytest_sqleval.metrics.tie_groups`; this module only reads the SQL.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token

from pytest_sqleval.comparison import ComparisonOptions
from pytest_sqleval.sql.limits import (
    bounded_stack,
    check_tree,
    join_keywords_split_by_comments,
    parse_one_shared,
    tokenize_bounded,
    too_complex_reason,
)
from pytest_sqleval.sql.rewrite import append_order_keys, prediction_rewrite


@dataclass(frozen=True)
class OrderPlan:
    """How the gold's result must be ordered; see the module docstring."""

    ordered: bool
    key_columns: tuple[int, ...] | None = None
    hidden_key_sql: str | None = None
    hidden_key_count: int = 0
    note: str = ""


@bounded_stack
def plan_order(gold_sql: str, dialect: str, options: ComparisonOptions) -> OrderPlan:
    """The order plan of ``gold_sql`` under ``options.row_order`` and ``options.ties``; never raises."""
    if options.row_order == "always":
        return OrderPlan(True, note="row_order=always: rows are compared in the gold's exact order")
    if options.row_order == "ignore":
        return OrderPlan(False, note="row_order=ignore: row order is never compared")
    if options.row_order == "order_by_text":
        plan = _plan_from_text(_official_gold_text(gold_sql, dialect, options), "row_order=order_by_text")
        return _ties_of_text_order(plan, gold_sql, dialect) if plan.ordered and options.ties == "any" else plan
    try:
        tree = parse_one_shared(gold_sql, dialect)  # read only (append_order_keys copies what it extends)
    except (SqlglotError, RecursionError, MemoryError) as error:
        tree = _read_with_joined_keywords(gold_sql, dialect)
        if tree is None:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            return _plan_from_text(gold_sql, f"the gold could not be parsed ({reason})")
    query, order = _outermost_order(tree)
    if order is None:
        return OrderPlan(False, note="the gold's outermost query has no ORDER BY")
    if options.ties == "gold":
        return OrderPlan(True, note="ties=gold: rows tied on the ORDER BY keys must keep the gold's order")
    try:
        return _plan_ties(query, order, dialect)
    except Exception as error:  # noqa: BLE001 - the plan must never error a case: fall back to the strict order
        return OrderPlan(True, note=f"strict order: the ORDER BY keys could not be read ({too_complex_reason(error)})")


def _read_with_joined_keywords(gold_sql: str, dialect: str) -> exp.Expression | None:
    """The gold's tree when only a comment between the words of ``ORDER BY`` / ``GROUP BY`` kept sqlglot from
    reading it (``ORDER /* c */ BY``: the engine reads the comment as white space), else None."""
    reader = sqlglot.Dialect.get_or_raise(dialect)
    try:
        tokens = [Token(t.token_type, t.text, t.line, t.col, t.start, t.end, list(t.comments))
                  for t in tokenize_bounded(gold_sql, dialect)]
        joined = join_keywords_split_by_comments(tokens, reader)
        if len(joined) == len(tokens):
            return None
        statements = reader.parser().parse(joined, gold_sql)
        if not statements or statements[0] is None:
            return None
        check_tree(statements[0])
        return statements[0]
    except (SqlglotError, RecursionError, MemoryError):
        return None


def _ties_of_text_order(plan: OrderPlan, gold_sql: str, dialect: str) -> OrderPlan:
    """``order_by_text`` with ``ties: any``: the tie groups of the outermost ORDER BY, when there is one
    (an ORDER BY only in a subquery or a literal names no keys: strict order)."""
    try:
        query, order = _outermost_order(parse_one_shared(gold_sql, dialect))
        if order is None:
            return plan
        return _plan_ties(query, order, dialect)
    except Exception:  # noqa: BLE001 - the plan must never error a case: keep the strict order
        return plan


def _official_gold_text(gold_sql: str, dialect: str, options: ComparisonOptions) -> str:
    """The gold text whose ``"order by"`` decides the order: test-suite-sql-eval tests the gold after its
    ``remove_distinct``, which keeps only sqlparse's first statement (``SELECT a FROM t; /* order by */`` has
    none); as written otherwise (its ``--keep_distinct`` tests the whole text)."""
    if prediction_rewrite(options) != "official_distinct":
        return gold_sql
    from pytest_sqleval.sql.statements import sqlparse_first_statement

    return sqlparse_first_statement(gold_sql, dialect)


def _plan_from_text(gold_sql: str, why: str) -> OrderPlan:
    ordered = "order by" in gold_sql.lower()
    verdict = "contains" if ordered else "does not contain"
    return OrderPlan(ordered, note=f"{why}: the gold text {verdict} 'order by', so the order is {'strict' if ordered else 'ignored'}")


def _outermost_order(tree: exp.Expression) -> tuple[exp.Expression, exp.Order | None]:
    """The outermost query and its ORDER BY (None when it has none)."""
    node = tree
    while True:
        order = node.args.get("order")
        if isinstance(order, exp.Order):
            return node, order
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Query):
            node = node.this
            continue
        return node, None


def _plan_ties(query: exp.Expression, order: exp.Order, dialect: str) -> OrderPlan:
    keys = [ordered.this for ordered in order.expressions]
    projections = _projections(query)
    columns = [_output_column(key, projections) for key in keys]
    if all(column is not None for column in columns):
        return OrderPlan(True, key_columns=tuple(columns), note="rows tied on the ORDER BY keys may come in any order")
    if not isinstance(query, exp.Select):
        return OrderPlan(
            True, note="strict order: an ORDER BY key of a set operation or parenthesised query is not an output column"
        )
    if query.args.get("distinct"):
        return OrderPlan(True, note="strict order: an ORDER BY key is not an output column of a SELECT DISTINCT")
    expressions = [_key_expression(key, projections) for key in keys]
    if any(expression is None for expression in expressions):
        return OrderPlan(True, note="strict order: an ORDER BY ordinal points into a `*`")
    return OrderPlan(
        True,
        hidden_key_sql=append_order_keys(query, expressions, dialect),
        hidden_key_count=len(expressions),
        note="rows tied on the ORDER BY keys may come in any order (keys read from hidden output columns)",
    )


def _projections(query: exp.Expression) -> list[exp.Expression]:
    """The select list that names the query's output columns."""
    while not isinstance(query, exp.Select):
        if isinstance(query, exp.SetOperation):
            query = query.this  # the leftmost SELECT names a set operation's columns
        elif isinstance(query, exp.Subquery):
            query = query.this
        else:
            return []
    return list(query.expressions)


def _output_column(key: exp.Expression, projections: list[exp.Expression]) -> int | None:
    """The output column index holding ORDER BY ``key``, or None."""
    ordinal = _ordinal(key)
    if ordinal is not None:
        return ordinal  # an ordinal names an output position, even past a `*`
    for index, projection in _positioned(projections):
        if isinstance(key, exp.Column) and not key.table and _same_name(key.name, projection.alias):
            return index
    for index, projection in _positioned(projections):
        if key == projection.unalias() or _same_column(key, projection.unalias()):
            return index
    return None


def _key_expression(key: exp.Expression, projections: list[exp.Expression]) -> exp.Expression | None:
    """``key`` as an expression valid in the select list: aliases and ordinals resolved."""
    ordinal = _ordinal(key)
    if ordinal is not None:
        positioned = dict(_positioned(projections))
        return positioned[ordinal].unalias() if ordinal in positioned else None
    for _, projection in _positioned(projections):
        if isinstance(key, exp.Column) and not key.table and _same_name(key.name, projection.alias):
            return projection.unalias()
    return key


def _ordinal(key: exp.Expression) -> int | None:
    if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit():
        return int(key.this) - 1
    return None


def _positioned(projections: list[exp.Expression]) -> list[tuple[int, exp.Expression]]:
    """Projections whose output position is known: those before any ``*``."""
    known = []
    for index, projection in enumerate(projections):
        if projection.is_star:
            break
        known.append((index, projection))
    return known


def _same_name(first: str, second: str) -> bool:
    return bool(first) and first.lower() == second.lower()


def _same_column(key: exp.Expression, projection: exp.Expression) -> bool:
    if not (isinstance(key, exp.Column) and isinstance(projection, exp.Column)):
        return False
    if not _same_name(key.name, projection.name):
        return False
    return not key.table or not projection.table or _same_name(key.table, projection.table)
