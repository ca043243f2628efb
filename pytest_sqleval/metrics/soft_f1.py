"""Soft Execution F1 (the MRO paper, section 2.1.2): partial credit for overlapping results.

Gold result G has M rows and N columns, the prediction P has S rows and T
columns. For gold column n and predicted column t::

    Precision[n,t] = (1/S) * sum over predicted rows s of  [P[s,t] in G[:,n]]
    Recall[n,t]    = (1/M) * sum over gold rows m of       [G[m,n] in P[:,t]]
    F1[n,t]        = 2 * Precision[n,t] * Recall[n,t] / (Precision[n,t] + Recall[n,t])   (0 when both are 0)

then each column keeps its best pairing and the column-level scores are
combined the same way::

    Precision = (1/T) * sum over t of  max over n of F1[n,t]
    Recall    = (1/N) * sum over n of  max over t of F1[n,t]
    soft_f1   = 2 * Precision * Recall / (Precision + Recall)                 (0 when both are 0)

Membership (``in``) is set membership, but every cell counts in the sums,
so duplicated values weigh as often as they occur. Row order and column
order never matter; a column may be the best pairing of several columns.
Both results without rows score 1.0; exactly one without rows scores 0.0.
Values go through :mod:`pytest_sqleval.metrics.values` first
(``float_decimals``, ``nulls``), like every result metric.

Worked checks: gold ``(shop, count) = [("A", 5)]`` against the prediction
``(shop) = [("A",)]`` scores Precision 1, Recall 1/2, F1 2/3; the first
four rows of a five-row gold whose columns share no values score 8/9.

Speed: each column's distinct values are built once; gold and predicted
columns with equal value sets are paired off first (F1 = 1, one set
comparison per pair, no counting);
a pair is only scored while one of its two columns still lacks a perfect
partner; a column of numbers and a column of text score 0 without looking
at their values; a share is a set intersection, and cells are counted only
over that intersection when the column has repeated values.
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from typing import Any, Hashable

from pytest_sqleval.metrics.values import FLOATS, INTS, TEXT, Column, Nulls, Table
from pytest_sqleval.results import QueryResult


_FAMILIES = {INTS: "numbers", FLOATS: "numbers", TEXT: "text"}


def soft_f1(gold: QueryResult, pred: QueryResult, *, float_decimals: int | None = None, nulls: Nulls = "equal") -> float:
    """The MRO Soft Execution F1 of ``pred`` against ``gold``, in [0, 1]."""
    if gold.is_empty or pred.is_empty:
        return 1.0 if gold.is_empty and pred.is_empty else 0.0
    gold_columns = _value_columns(gold, float_decimals, nulls)
    pred_columns = _value_columns(pred, float_decimals, nulls)
    best_gold, best_pred = _best_pairings(gold_columns, pred_columns)
    precision = sum(best_pred) / len(best_pred)
    recall = sum(best_gold) / len(best_gold)
    return _f1(precision, recall)


def _f1(precision: float, recall: float) -> float:
    total = precision + recall
    return 0.0 if total == 0 else 2 * precision * recall / total


class _ValueColumn:
    """One column's cells and its distinct values."""

    def __init__(self, cells: Column, kind: str) -> None:
        self.cells = cells
        self.family = _FAMILIES.get(kind)  # None: could hold values of any type
        self.distinct = frozenset(cells)

    def may_share_values(self, other: _ValueColumn) -> bool:
        return self.family is None or other.family is None or self.family == other.family

    @cached_property
    def counts(self) -> Counter[Hashable]:
        return Counter(self.cells)

    def share_in(self, common: frozenset[Any]) -> float:
        """The fraction of this column's cells whose value is in ``common`` (a subset of its values)."""
        if len(common) == len(self.distinct):
            return 1.0
        if len(self.distinct) == len(self.cells):  # no repeated values: one cell per value
            return len(common) / len(self.cells)
        return sum(map(self.counts.__getitem__, common)) / len(self.cells)


def _value_columns(result: QueryResult, float_decimals: int | None, nulls: Nulls) -> list[_ValueColumn]:
    table = Table(result.rows, result.column_count, float_decimals=float_decimals, nulls=nulls)
    return [_ValueColumn(column, kind) for column, kind in zip(table.columns, table.kinds)]


def _best_pairings(gold: list[_ValueColumn], pred: list[_ValueColumn]) -> tuple[list[float], list[float]]:
    """max over t of F1[n,t] for each gold column n, and max over n for each predicted column t."""
    best_gold = [0.0] * len(gold)
    best_pred = [0.0] * len(pred)
    _pair_equal_value_sets(gold, pred, best_gold, best_pred)
    for n, gold_column in enumerate(gold):
        for t, pred_column in enumerate(pred):
            if best_gold[n] == 1.0 and best_pred[t] == 1.0:
                continue
            score = _pair_f1(gold_column, pred_column)
            best_gold[n] = max(best_gold[n], score)
            best_pred[t] = max(best_pred[t], score)
    return best_gold, best_pred


def _pair_equal_value_sets(
    gold: list[_ValueColumn], pred: list[_ValueColumn], best_gold: list[float], best_pred: list[float]
) -> None:
    """Score 1 for gold and predicted columns paired off by equal value sets (one comparison per pair)."""
    unpaired: dict[int, list[int]] = {}  # predicted columns by their number of distinct values
    for t, pred_column in enumerate(pred):
        unpaired.setdefault(len(pred_column.distinct), []).append(t)
    for n, gold_column in enumerate(gold):
        candidates = unpaired.get(len(gold_column.distinct), [])
        for t in candidates:
            if gold_column.distinct == pred[t].distinct:
                best_gold[n] = best_pred[t] = 1.0
                candidates.remove(t)
                break


def _pair_f1(gold: _ValueColumn, pred: _ValueColumn) -> float:
    if not gold.may_share_values(pred):  # numbers against text: no value in common
        return 0.0
    common = gold.distinct & pred.distinct
    if not common:
        return 0.0
    return _f1(precision=pred.share_in(common), recall=gold.share_in(common))
