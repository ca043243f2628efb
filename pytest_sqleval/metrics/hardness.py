"""Spider hardness: easy / medium / hard / extra, from the gold SQL.

Classifier ``spider`` (default) is the official ``eval_hardness`` of Spider's
``evaluation.py``, applied to the gold read by the official parser (see
:mod:`.exact_match.spider_sql`), before values and foreign keys are rebuilt::

    component1 = [WHERE] + [GROUP BY] + [ORDER BY] + [LIMIT] + (FROM units - 1)
                 + number of OR connectors in ON, WHERE and HAVING
                 + number of LIKE conditions in ON, WHERE and HAVING
    component2 = number of subqueries used as condition values in ON, WHERE and HAVING
                 + [INTERSECT] + [EXCEPT] + [UNION]
    others     = [aggregates > 1] + [SELECT items > 1] + [WHERE list length > 1] + [GROUP BY columns > 1]
    aggregates = aggregated SELECT items, GROUP BY columns and ORDER BY units
                 + WHERE conditions carrying NOT
                 + HAVING list entries that are connectors or carry NOT

    easy    component1 <= 1 and others == 0 and component2 == 0
    medium  (others <= 2 and component1 <= 1 and component2 == 0)
            or (component1 <= 2 and others < 2 and component2 == 0)
    hard    (others > 2 and component1 <= 2 and component2 == 0)
            or (2 < component1 <= 3 and others <= 2 and component2 == 0)
            or (component1 <= 1 and others == 0 and component2 <= 1)
    extra   anything else

The official quirks are kept on purpose, because SParC and Spider report per
level with them: a NOT condition counts as an aggregate, HAVING connectors
count as aggregates while real HAVING aggregates do not, FROM subqueries are
invisible (a query over a grouped FROM subquery can be easy), a subquery's own
clauses are never counted, and the WHERE "list length" counts the connector
entries of the flat list.

For SQL the official parser cannot read (LEFT JOIN, IS NULL, CASE, CTEs, ...)
the same counts are taken from the sqlglot tree read leniently: unknown
expressions become placeholder columns, IS NULL a condition, a LEFT JOIN a
join, a CTE reference a FROM subquery (its body; a recursive CTE's reference
to itself a table). The result then says ``extended=True`` and
lists the constructs.

A bare boolean condition (``WHERE is_vip``, ``HAVING max(is_vip)``, ``WHERE
NOT flag``, ``WHERE a AND b`` on boolean columns) is outside the official
grammar; the extended reading counts it as one condition unit on that
expression (``HAVING max(is_vip)`` has an aggregate, ``WHERE NOT flag`` a NOT).

Classifier ``sqleval`` is a corrected variant, never applied unless asked
for: HAVING contributes its real aggregates (not its connectors), a NOT
condition is not an aggregate, and FROM subqueries count in component2.

Classification never errors a case: :func:`difficulty_label` turns anything
:func:`classify_hardness` cannot classify (SQL beyond the limits of
:mod:`pytest_sqleval.sql.limits`, which raise
:class:`~pytest_sqleval.sql.limits.SqlTooComplex`, or an unexpected error) into
level ``None`` with source ``unclassified: <short reason>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..schema import Schema
from ..sql.limits import SqlTooComplex, bounded_stack, too_complex_reason
from .exact_match.parsing import SqlParseError
from .exact_match.spider import known_gold_read, read_gold_spider
from .exact_match.spider_sql import WHERE_OPS, OutsideGrammar, SpiderSQL, read_spider_sql

Level = Literal["easy", "medium", "hard", "extra"]
Classifier = Literal["spider", "sqleval"]
CLASSIFIERS: tuple[str, ...] = ("spider", "sqleval")


@dataclass(frozen=True)
class HardnessResult:
    """A hardness level and the counts behind it."""

    level: Level
    classifier: Classifier
    component1: int
    component2: int
    others: int
    extended: bool = False  # counted on SQL outside the official grammar
    constructs: tuple[str, ...] = ()  # what was outside the grammar

    @property
    def source(self) -> str:
        """``spider``, ``spider_extended``, ``sqleval`` or ``sqleval_extended``."""
        return f"{self.classifier}_extended" if self.extended else self.classifier


def spider_hardness(gold_sql: str, schema: Schema, *, dialect: str = "sqlite", classifier: Classifier = "spider") -> Level:
    """The hardness level of ``gold_sql``; raises ``ValueError`` when sqlglot cannot parse it
    (:class:`~pytest_sqleval.sql.limits.SqlTooComplex` beyond the limits)."""
    result = classify_hardness(gold_sql, schema, dialect=dialect, classifier=classifier)
    if result is None:
        raise SqlParseError(f"cannot parse the gold SQL: {gold_sql!r}")
    return result.level


def difficulty_label(gold_sql: str, schema: Schema, *, dialect: str = "sqlite",
                     classifier: Classifier = "spider") -> tuple[Level | None, str]:
    """``(level, source)`` for a case record; never raises.

    ``source`` is :attr:`HardnessResult.source`, ``unparsed`` (sqlglot cannot
    parse the SQL) or ``unclassified: <short reason>`` (beyond the scoring
    limits, or an unexpected error).
    """
    try:
        result = classify_hardness(gold_sql, schema, dialect=dialect, classifier=classifier)
    except Exception as exc:  # noqa: BLE001 - classification must never error a case
        return None, f"unclassified: {_short_reason(exc)}"
    if result is None:
        return None, "unparsed"
    return result.level, result.source


def _short_reason(exc: BaseException) -> str:
    if isinstance(exc, (SqlTooComplex, RecursionError, MemoryError)):
        return too_complex_reason(exc)
    message = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


@bounded_stack
def classify_hardness(gold_sql: str, schema: Schema, *, dialect: str = "sqlite",
                      classifier: Classifier = "spider") -> HardnessResult | None:
    """The full result, or ``None`` when sqlglot cannot parse ``gold_sql``.

    Raises :class:`~pytest_sqleval.sql.limits.SqlTooComplex` for SQL beyond the limits.
    """
    if classifier not in CLASSIFIERS:
        raise ValueError(f"unknown hardness classifier {classifier!r}; classifiers are: {', '.join(CLASSIFIERS)}")
    try:
        try:
            read = known_gold_read(gold_sql, schema, dialect)  # exact match's strict reading of it, if it has one
            if read is None:
                read = read_gold_spider(gold_sql, schema, dialect)
            extended = False
        except OutsideGrammar:  # a text-level objection comes before parsing: the lenient reading may not parse
            read = read_spider_sql(gold_sql, schema, dialect=dialect, strict=False)
            extended = True
    except SqlParseError:
        return None
    sql = read.sql
    c1, c2 = component1(sql), component2(sql, count_from_subqueries=classifier == "sqleval")
    o = others(sql, corrected=classifier == "sqleval")
    return HardnessResult(level_of(c1, c2, o), classifier, c1, c2, o, extended, read.constructs)


def level_of(c1: int, c2: int, o: int) -> Level:
    if c1 <= 1 and o == 0 and c2 == 0:
        return "easy"
    if (o <= 2 and c1 <= 1 and c2 == 0) or (c1 <= 2 and o < 2 and c2 == 0):
        return "medium"
    if (o > 2 and c1 <= 2 and c2 == 0) or (2 < c1 <= 3 and o <= 2 and c2 == 0) or (c1 <= 1 and o == 0 and c2 <= 1):
        return "hard"
    return "extra"


def component1(sql: SpiderSQL) -> int:
    count = sum(bool(sql[key]) for key in ("where", "groupBy", "orderBy"))
    count += sql["limit"] is not None
    count += max(len(sql["from"]["table_units"]) - 1, 0)
    count += _connectors(sql).count("or")
    count += sum(1 for unit in _cond_units(sql) if unit[1] == WHERE_OPS.index("like"))
    return count


def component2(sql: SpiderSQL, *, count_from_subqueries: bool = False) -> int:
    count = sum(isinstance(value, dict) for unit in _cond_units(sql) for value in (unit[3], unit[4]))
    count += sum(sql[op] is not None for op in ("intersect", "except", "union"))
    if count_from_subqueries:
        count += sum(unit[0] == "sql" for unit in sql["from"]["table_units"])
    return count


def others(sql: SpiderSQL, *, corrected: bool = False) -> int:
    aggregates = _aggregate_count(sql, corrected)
    return sum((
        aggregates > 1,
        len(sql["select"][1]) > 1,
        len(sql["where"]) > 1,
        len(sql["groupBy"]) > 1,
    ))


def _aggregate_count(sql: SpiderSQL, corrected: bool) -> int:
    count = sum(1 for agg_id, _ in sql["select"][1] if agg_id)
    count += sum(1 for unit in sql["groupBy"] if unit[0])
    if sql["orderBy"]:
        count += sum(1 for val_unit in sql["orderBy"][1] for col_unit in val_unit[1:] if col_unit and col_unit[0])
    if corrected:
        return count + sum(_has_aggregate(unit[2]) for unit in sql["having"][::2])
    count += sum(1 for unit in sql["where"][::2] if unit[0])  # official: the NOT flag reads as an aggregate
    count += sum(1 for entry in sql["having"] if entry[0])  # official: connectors and NOT flags read as aggregates
    return count


def _has_aggregate(val_unit: tuple[Any, ...]) -> bool:
    return any(col_unit and col_unit[0] for col_unit in val_unit[1:])


def _cond_units(sql: SpiderSQL) -> list[Any]:
    units: list[Any] = sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]
    return units


def _connectors(sql: SpiderSQL) -> list[Any]:
    connectors: list[Any] = sql["from"]["conds"][1::2] + sql["where"][1::2] + sql["having"][1::2]
    return connectors
