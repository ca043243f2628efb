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
Values go through :mod:`pytest_sqleval.metrics.normalisation` first
(``float_decimals``, ``nulls``), like every result metric.

Worked checks: gold ``(shop, count) = [("A", 5)]`` against the prediction
``(shop) = [("A",)]`` scores Precision 1, Recall 1/2, F1 2/3; the first
four rows of a five-row gold whose columns share no values score 8/9.

Speed, without changing a single score: pairs of columns with equal value
sets have F1 = 1 exactly, and any certificate of equal value sets will do.

* With ``nulls="equal"``, on the raw rows (normalising never makes equal
  values unequal): if gold has a key column (all values distinct) and
  :func:`~pytest_sqleval.metrics.row_alignment.match_rows_by_key` finds a column
  mapping under which every predicted row is the gold row holding its key
  value and every gold row is hit, each predicted column holds exactly the
  values of its gold column: every column's best F1 is 1 and so is the
  score. Nothing is normalised, transposed or put in a set.
* Otherwise, on the normalised columns, the same alignment proves single
  pairs: with ``order[s]`` the gold row named by predicted cell P[s,t]
  (every gold row named), ``P[:,u] == G[order,n]`` value for value means
  columns n and u hold the same values.
* The remaining columns build their distinct values once, on first use;
  gold and predicted columns with equal value sets are paired off by the
  sets' size and hash (a frozenset's hash is computed once, in C), each
  pair confirmed with ``==``.

A pair is only scored while one of its two columns still lacks a perfect
partner; a column of numbers and a column of text score 0 without looking
at their values; a share is a set intersection, and cells are counted only
over that intersection when the column has repeated values. The garbage
collector is paused while scoring.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from functools import cached_property
from typing import Any, Hashable

from pytest_sqleval.comparison import Nulls, Numbers
from pytest_sqleval.metrics.column_kinds import FLOATS, INTS, TEXT
from pytest_sqleval.metrics.gc_pause import gc_paused
from pytest_sqleval.metrics.key_columns import find_row_key
from pytest_sqleval.metrics.normalised_table import Table, normalised_pair
from pytest_sqleval.metrics.row_alignment import match_rows_by_key, screen_rows
from pytest_sqleval.metrics.rows_and_columns import Column, gatherer
from pytest_sqleval.results import QueryResult

_FAMILIES = {INTS: "numbers", FLOATS: "numbers", TEXT: "text"}
SCREEN_ROWS = 3
"""How many predicted rows are looked at to choose the column a gold key column aligns with."""


def soft_f1(gold: QueryResult, pred: QueryResult, *, float_decimals: int | None = None, nulls: Nulls = "equal",
            numbers: Numbers = "value") -> float:
    """The MRO Soft Execution F1 of ``pred`` against ``gold``, in [0, 1]."""
    check_result_types(gold, pred, "soft_f1")
    if gold.is_empty or pred.is_empty:
        return 1.0 if gold.is_empty and pred.is_empty else 0.0
    with gc_paused():
        if nulls == "equal" and _same_raw_columns(gold, pred):
            return 1.0
        gold_table, pred_table = normalised_pair(gold.rows, gold.column_count, pred.rows, pred.column_count,
                                                 float_decimals=float_decimals, nulls=nulls, numbers=numbers)
        gold_columns = _value_columns(gold_table)
        pred_columns = _value_columns(pred_table)
        best_gold, best_pred = _best_pairings(gold_columns, pred_columns, _aligned_equal_pairs(gold_table, pred_table))
    return _column_f1(best_pred, best_gold)


def check_result_types(gold: Any, pred: Any, where: str) -> None:
    """Both sides are results (a QueryResult, or any object with its ``rows``, ``column_count`` and ``is_empty``):
    plain lists of rows are a TypeError naming the fix, not an AttributeError from deep inside."""
    for name, value in (("gold", gold), ("pred", pred)):
        if not all(hasattr(value, a) for a in ("rows", "column_count", "is_empty")):
            raise TypeError(f"{where}: {name} must be a QueryResult, not {type(value).__name__}; wrap rows with "
                            "QueryResult.of(rows) (from pytest_sqleval import QueryResult), or QueryResult.of(rows, "
                            "columns=[...])")


def _same_raw_columns(gold: QueryResult, pred: QueryResult) -> bool:
    """Whether the raw columns pair off one to one with equal values (then every F1[n,t] of a pair is 1 and the score is 1).

    Shown on the raw cells (normalising with ``nulls="equal"`` never makes
    equal values unequal) by row_alignment.match_rows_by_key: a column mapping
    under which every predicted row is a gold row and every gold row is hit
    gives each predicted column exactly the values of its gold column.
    False only means "not shown this way".
    """
    width = gold.column_count
    if pred.column_count != width or len(pred.rows) < len(gold.rows):
        return False
    gold_rows = gold.rows if isinstance(gold.rows, list) else list(gold.rows)
    pred_rows = pred.rows if isinstance(pred.rows, list) else list(pred.rows)
    try:
        key = find_row_key(gold_rows, width)
        return key is not None and match_rows_by_key(gold_rows, pred_rows, key, [tuple(range(width))]) is not None
    except (TypeError, ValueError, ArithmeticError, IndexError):  # an unhashable or odd raw value, a ragged row
        return False


def _column_f1(best_pred: list[Any], best_gold: list[Any]) -> float:
    """F1 of Precision = mean(best_pred) and Recall = mean(best_gold), computed exactly and rounded once (each
    best is 0.0, 1.0 or an exact Fraction): float arithmetic lands an ulp off (P = 1, R = 3/5 gave
    0.7499999999999999, failing `soft_f1 >= 0.75`). Best scores of 0 and 1 only (the usual case): P = k/T,
    R = m/N, F1 = 2km / (kN + mT) in integers."""
    if _ZERO_ONE.issuperset(best_pred) and _ZERO_ONE.issuperset(best_gold):
        k, m = best_pred.count(1.0), best_gold.count(1.0)
        return 0.0 if k * m == 0 else 2 * k * m / (k * len(best_gold) + m * len(best_pred))
    precision = sum(map(Fraction, best_pred)) / len(best_pred)
    recall = sum(map(Fraction, best_gold)) / len(best_gold)
    return 0.0 if precision + recall == 0 else float(2 * precision * recall / (precision + recall))


_ZERO_ONE = frozenset((0.0, 1.0))


class _ValueColumn:
    """One column's cells; its distinct values and their counts are built on first use."""

    def __init__(self, cells: Column, kind: str) -> None:
        self.cells = cells
        self.family = _FAMILIES.get(kind)  # None: could hold values of any type

    def may_share_values(self, other: _ValueColumn) -> bool:
        return self.family is None or other.family is None or self.family == other.family

    @cached_property
    def distinct(self) -> frozenset[Any]:
        return frozenset(self.cells)

    @cached_property
    def counts(self) -> Counter[Hashable]:
        return Counter(self.cells)

    def count_in(self, common: frozenset[Any]) -> int:
        """How many of this column's cells have a value in ``common`` (a subset of its values)."""
        if len(common) == len(self.distinct):
            return len(self.cells)
        if len(self.distinct) == len(self.cells):  # no repeated values: one cell per value
            return len(common)
        return sum(map(self.counts.__getitem__, common))


def _value_columns(table: Table) -> list[_ValueColumn]:
    return [_ValueColumn(column, kind) for column, kind in zip(table.columns, table.kinds)]


def _aligned_equal_pairs(gold: Table, pred: Table) -> list[tuple[int, int]]:
    """Pairs (n, t) of columns whose value sets are equal, shown without building any set.

    If gold has a key column k (all values distinct), each cell of a
    predicted column t names one gold row: ``order[s]`` is the gold row
    whose key equals ``P[s,t]``. When every gold row is named (``order`` is
    onto) and ``P[s,u] == G[order[s],n]`` for every predicted row s, then
    column u holds exactly the values of column n: F1[n,u] = 1. The column
    t is chosen by a few screened rows (a heuristic: a wrong choice only
    finds fewer pairs); every pair returned is proved by the equality of
    whole columns. Pairs not found here are scored from the value sets.
    """
    key = gold.key_column
    gold_rows, pred_rows = len(gold.columns[0]), len(pred.columns[0])
    if key is None or pred_rows < gold_rows:
        return []
    try:
        t = _aligned_column(gold, pred, key.index, key.positions)
        if t is None:
            return []
        order = key.rows_of(pred.columns[t])
        if order is None or len(set(order)) != gold_rows:
            return []
    except TypeError:  # an unhashable driver value
        return []
    gather = gatherer(order)
    pairs = [(key.index, t)]  # equal by construction of ``order``
    for n, gold_column in enumerate(gold.columns):
        head = gold_column[order[0]]
        gathered = None
        for u, pred_column in enumerate(pred.columns):
            if (n, u) == (key.index, t) or (pred_column[0] is not head and pred_column[0] != head):
                continue
            if gathered is None:
                gathered = gather(gold_column)
            if gathered == pred_column:
                pairs.append((n, u))
    return pairs


def _aligned_column(gold: Table, pred: Table, key: int, positions: dict[Any, int]) -> int | None:
    """The predicted column whose screened rows share the most cells with the gold rows their values name."""
    pred_rows = len(pred.columns[0])
    screen = screen_rows(pred_rows, SCREEN_ROWS)
    key_family = _FAMILIES.get(gold.kinds[key])
    best, best_shared = None, 0
    # each row's cells counted once, not once per predicted column (thousands of columns were quadratic)
    gold_counts: dict[int, Counter[Any]] = {}
    pred_counts: dict[int, Counter[Any]] = {}
    for t, (column, kind) in enumerate(zip(pred.columns, pred.kinds)):
        family = _FAMILIES.get(kind)
        if key_family is not None and family is not None and family != key_family:
            continue
        shared = 0
        for row in screen:
            gold_row = positions.get(column[row])
            if gold_row is None:
                break
            gold_cells = gold_counts.get(gold_row)
            if gold_cells is None:
                gold_cells = gold_counts[gold_row] = Counter(gold_column[gold_row] for gold_column in gold.columns)
            pred_cells = pred_counts.get(row)
            if pred_cells is None:
                pred_cells = pred_counts[row] = Counter(pred_column[row] for pred_column in pred.columns)
            shared += sum((gold_cells & pred_cells).values())
        else:
            if shared > best_shared:
                best, best_shared = t, shared
    return best


def _best_pairings(
    gold: list[_ValueColumn], pred: list[_ValueColumn], equal_pairs: list[tuple[int, int]]
) -> tuple[list[Any], list[Any]]:
    """max over t of F1[n,t] for each gold column n, and max over n for each predicted column t: 0.0, 1.0 or
    the exact Fraction.

    ``equal_pairs`` are pairs already known to have equal value sets (F1 = 1).
    """
    best_gold: list[Any] = [0.0] * len(gold)
    best_pred: list[Any] = [0.0] * len(pred)
    for n, t in equal_pairs:
        best_gold[n] = best_pred[t] = 1.0
    _pair_equal_value_sets(gold, pred, best_gold, best_pred)
    exact_gold: dict[int, tuple[int, int]] = {}  # the exact F1 (numerator, denominator) of a fractional best
    exact_pred: dict[int, tuple[int, int]] = {}
    for n, gold_column in enumerate(gold):
        for t, pred_column in enumerate(pred):
            if best_gold[n] == 1.0 and best_pred[t] == 1.0:
                continue
            pair = _pair_f1(gold_column, pred_column)
            if pair is None:
                continue
            score = pair[0] / pair[1]  # correctly rounded
            if score > best_gold[n]:
                best_gold[n], exact_gold[n] = score, pair
            if score > best_pred[t]:
                best_pred[t], exact_pred[t] = score, pair
    for best, exact in ((best_gold, exact_gold), (best_pred, exact_pred)):
        for index, (numerator, denominator) in exact.items():
            if best[index] != 1.0:
                best[index] = Fraction(numerator, denominator)
    return best_gold, best_pred


def _pair_equal_value_sets(
    gold: list[_ValueColumn], pred: list[_ValueColumn], best_gold: list[float], best_pred: list[float]
) -> None:
    """Score 1 for gold and predicted columns (both still below 1) paired off by equal value sets.

    Candidates are found by the sets' size and hash (a frozenset's hash is
    computed once, in C); each candidate pair is confirmed with ``==``.
    """
    unpaired: dict[tuple[int, int], list[int]] = {}
    for t, pred_column in enumerate(pred):
        if best_pred[t] < 1.0:
            unpaired.setdefault(_set_key(pred_column.distinct), []).append(t)
    if not unpaired:
        return
    for n, gold_column in enumerate(gold):
        if best_gold[n] == 1.0:
            continue
        candidates = unpaired.get(_set_key(gold_column.distinct), [])
        for t in candidates:
            if gold_column.distinct == pred[t].distinct:
                best_gold[n] = best_pred[t] = 1.0
                candidates.remove(t)
                break


def _set_key(values: frozenset[Any]) -> tuple[int, int]:
    return len(values), hash(values)


def _pair_f1(gold: _ValueColumn, pred: _ValueColumn) -> tuple[int, int] | None:
    """F1[n,t] exactly, as (numerator, denominator); None when it is 0. Precision a/S and Recall b/M give
    F1 = 2ab / (aM + bS)."""
    if not gold.may_share_values(pred):  # numbers against text: no value in common
        return None
    common = gold.distinct & pred.distinct
    if not common:
        return None
    found_pred, found_gold = pred.count_in(common), gold.count_in(common)
    return 2 * found_pred * found_gold, found_pred * len(gold.cells) + found_gold * len(pred.cells)
