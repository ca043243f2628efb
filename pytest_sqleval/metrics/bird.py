"""BIRD mini-dev's own result metrics, reproduced exactly: Soft F1 (``evaluation_f1.py``) and the R-VES
reward (``evaluation_ves.py``). Pure functions; nothing here knows pytest or runs a query.

``bird_soft_f1(gold_rows, pred_rows)`` is ``calculate_f1_score(predicted, ground_truth)``:

* both results without rows -> 1.0;
* duplicate rows dropped on each side, first occurrences kept in order (``dict.fromkeys``);
* gold row i is paired with predicted row i (**by position**: row order matters);
  for a pair, with n = the width of the gold row:
  ``match = #{predicted cells that occur in the gold row} / n``,
  ``pred_only = #{predicted cells not in the gold row} / n``,
  ``gold_only = #{gold cells not in the predicted row} / n``;
  a gold row without a partner adds gold_only 1, a predicted row without one pred_only 1;
* P = Σmatch / (Σmatch + Σpred_only), R = Σmatch / (Σmatch + Σgold_only), F1 = 2PR / (P + R) (each 0 when its
  denominator is 0).

Its quirks are kept (that is what reproducing means): rows pair by position, so the same rows in another order
score less; membership is per cell, so duplicated cells count once each (``(1, 1)`` against ``(1, 2)``: match
2/2, gold_only 1/2 -> 0.8) and a wider prediction can exceed the gold row (``(1, 1, 1)`` against ``(1,)``:
match 3 -> F1 1.0); NULL is an ordinary value (``None in row``); values compare with Python ``==`` (1 == 1.0,
no float tolerance).

``ves_reward(ratios)`` is ``iterated_execute_sql``'s reward for the list of gold_time / predicted_time ratios.
"""

from __future__ import annotations

import datetime
import decimal
import math
import uuid
from typing import Any, Sequence

#: evaluation_ves.py: each query runs this many times (run_sqls_parallel's default iterate_num).
VES_REPETITIONS = 100

#: (lowest mean time ratio, reward), first match wins; a ratio of 0 (incorrect, error, timeout) rewards 0.
VES_REWARDS = ((2.0, 1.25), (1.0, 1.0), (0.5, 0.75), (0.25, 0.5))
VES_LOWEST_REWARD = 0.25


#: Cell types whose ``==`` agrees with their hash across all of them (``1 == 1.0 == Decimal(1)``, one hash), so
#: a set finds a cell exactly when the official ``value in row`` does; a wide row's membership tests then take
#: constant time each, not a scan of the row (100,000 rows of 60 columns: 6 s).
_SET_SAFE = frozenset({int, float, str, bytes, type(None), bool, decimal.Decimal, datetime.date, datetime.datetime,
                       datetime.time, datetime.timedelta, uuid.UUID})
#: Rows narrower than this are scanned as the official code does (a set costs more than it saves).
_SET_WIDTH = 8


def _row_match(pred_row: Sequence[Any], gold_row: Sequence[Any]) -> tuple[float, float, float]:
    width = len(gold_row)
    if tuple(pred_row) == tuple(gold_row):  # every cell found, none missing (the same as the loop below)
        return len(pred_row) / width, 0.0, 0.0
    gold_cells: Any = gold_row
    pred_cells: Any = pred_row
    if max(width, len(pred_row)) >= _SET_WIDTH and _SET_SAFE.issuperset(map(type, gold_row)) \
            and _SET_SAFE.issuperset(map(type, pred_row)):
        try:  # membership only: the counts below stay per cell
            gold_cells, pred_cells = set(gold_row), set(pred_row)
        except TypeError:  # Decimal('sNaN') has no hash: scanned, as officially
            gold_cells, pred_cells = gold_row, pred_row
    matches = sum(map(gold_cells.__contains__, pred_row))  # `value in gold_row` for each predicted cell, counted
    pred_only = len(pred_row) - matches
    gold_only = len(gold_row) - sum(map(pred_cells.__contains__, gold_row))
    return matches / width, pred_only / width, gold_only / width


def bird_soft_f1(gold_rows: Sequence[Sequence[Any]], pred_rows: Sequence[Sequence[Any]]) -> float:
    """BIRD mini-dev ``calculate_f1_score(predicted=pred_rows, ground_truth=gold_rows)``; see the module doc."""
    if not pred_rows and not gold_rows:
        return 1.0
    predicted = _distinct_rows(pred_rows)
    gold = _distinct_rows(gold_rows)
    match_scores: list[float] = []
    pred_only_scores: list[float] = []
    gold_only_scores: list[float] = []
    for i, gold_row in enumerate(gold):
        if i >= len(predicted):
            match_scores.append(0)
            gold_only_scores.append(1)
            continue
        match, pred_only, gold_only = _row_match(predicted[i], gold_row)
        match_scores.append(match)
        pred_only_scores.append(pred_only)
        gold_only_scores.append(gold_only)
    for _ in range(len(predicted) - len(gold)):
        match_scores.append(0)
        pred_only_scores.append(1)
        gold_only_scores.append(0)
    # plain sum(), in the official order: the float result is the official one bit for bit
    tp = sum(match_scores)
    fp = sum(pred_only_scores)
    fn = sum(gold_only_scores)
    precision = tp / (tp + fp) if tp + fp > 0 else 0
    recall = tp / (tp + fn) if tp + fn > 0 else 0
    return float(2 * precision * recall / (precision + recall) if precision + recall > 0 else 0)


def _distinct_rows(rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """The official ``list(dict.fromkeys(rows))``. sqlite3 never returns a list, dict or set cell, but DuckDB lists
    and PostgreSQL arrays or JSON do: such a cell (unhashable) is turned into a tuple / frozenset of its items, so
    the row can be deduplicated; every other value is kept as it is (compared with ``==``, as officially)."""
    try:
        return list(dict.fromkeys(tuple(r) for r in rows))
    except TypeError:
        return list(dict.fromkeys(tuple(map(_hashable, r)) for r in rows))


def _hashable(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(map(_hashable, value))
    if isinstance(value, dict):
        return frozenset((_hashable(k), _hashable(v)) for k, v in value.items())
    if isinstance(value, (set, frozenset)):
        return frozenset(map(_hashable, value))
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if type(value).__hash__ is None and hasattr(value, "__iter__"):  # another driver sequence (psycopg's Multirange)
        return tuple(map(_hashable, value))
    return value


def clean_abnormal(values: Sequence[float]) -> list[float]:
    """evaluation_ves.py's ``clean_abnormal``: keep the values strictly within mean ± 3 population standard
    deviations (numpy's ``np.std``). All values equal -> σ = 0 -> nothing is kept. Mean and σ are summed as
    numpy sums (:func:`_numpy_sum`), so a value lying on the bound is kept or dropped as there, to the last bit."""
    n = len(values)
    if n == 0:
        return []
    mean = _numpy_sum(values) / n
    std = math.sqrt(_numpy_sum([(v - mean) * (v - mean) for v in values]) / n)
    return [v for v in values if mean - 3 * std < v < mean + 3 * std]


def _numpy_sum(values: Sequence[float]) -> float:
    """``np.sum`` of a float64 array, bit for bit: numpy's pairwise summation (8 running sums up to 128 values,
    halves above), not the exact ``math.fsum``: the two differ in the last bit, and ``clean_abnormal`` compares
    values with mean ± 3σ exactly (``[0.2] + [2.0] * 9``: 0.2 is dropped by numpy, kept with exact sums)."""
    n = len(values)
    if n < 8:
        total = 0.0
        for value in values:
            total += value
        return total
    if n <= 128:
        sums = list(values[:8])
        i, whole = 8, n - n % 8
        while i < whole:
            for j in range(8):
                sums[j] += values[i + j]
            i += 8
        total = ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]))
        for value in values[whole:]:
            total += value
        return total
    half = n // 2
    half -= half % 8
    return _numpy_sum(values[:half]) + _numpy_sum(values[half:])


def ves_time_ratio(ratios: Sequence[float]) -> float:
    """The mean ratio after outlier removal; 0 when nothing is left (the official divides by zero there, and
    the exception scores the item 0)."""
    kept = clean_abnormal(ratios)
    return sum(kept) / len(kept) if kept else 0.0


def ves_reward(time_ratio: float) -> float:
    """The R-VES reward bucket of a mean time ratio (gold time / predicted time)."""
    if time_ratio == 0:
        return 0.0
    for lowest, reward in VES_REWARDS:
        if time_ratio >= lowest:
            return reward
    return VES_LOWEST_REWARD


def r_ves_score(reward: float) -> float:
    """One item's contribution to R-VES: sqrt(reward) (the official reports 100 × the mean of these)."""
    return math.sqrt(reward)
