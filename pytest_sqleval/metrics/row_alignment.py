"""Rows aligned by a key column: showing that two results hold the same rows under some column mapping.

Given a gold key column (:mod:`.key_columns`), each predicted row names the
only gold row it can be, so a candidate column mapping is checked by looking
rows up rather than by sorting or counting. A candidate is first screened on
a few rows spread over the result (:func:`screen_rows`) and only then
verified on every row, so at most one full pass is spent. The result metrics
use this on raw rows when ``nulls="equal"`` (normalising never makes equal
values unequal), and :mod:`.soft_f1` to align rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

from pytest_sqleval.metrics.key_columns import KeyColumn
from pytest_sqleval.metrics.rows_and_columns import (
    ColumnMapping,
    Row,
    gatherer,
    reorderer,
    same_counts,
)

SCREEN_ROWS = 5
"""How many rows a candidate column mapping must agree on before it is verified on all rows."""


def screen_rows(count: int, how_many: int = SCREEN_ROWS) -> list[int]:
    """Up to ``how_many`` row indexes spread evenly over ``count`` rows, the first and the last included."""
    if count <= how_many:
        return list(range(count))
    return sorted({(count - 1) * step // (how_many - 1) for step in range(how_many)})


def match_rows_by_key(
    gold_rows: Sequence[Row],
    pred_rows: Sequence[Row],
    key: KeyColumn,
    candidates: Sequence[ColumnMapping] = (),
    groups: list[int] | None = None,
    read_off: bool = True,
) -> ColumnMapping | None:
    """A column mapping under which every predicted row is the gold row that holds its key cell, every gold row hit.

    ``key`` is a key column of ``gold_rows`` (:func:`find_row_key`) and a
    mapping ``m`` says that gold column c is compared with predicted
    column ``m[c]``. Under ``m`` predicted row s corresponds to gold row
    ``order[s]``, the gold row whose key cell equals its cell ``m[key]``.
    ``m`` is returned when every predicted row, its cells reordered by
    ``m``, equals its gold row, every gold row corresponds to some predicted
    row (``order`` is onto) and, with ``groups`` (the tie-group id of each
    row; both sides have as many rows), each row stays in its group. Then
    the predicted rows are the gold rows as a set, and as a multiset when
    both sides have as many rows. Column by column: predicted column
    ``m[c]`` holds exactly the values of gold column c.

    Mappings tried: ``candidates``, then (with ``read_off``) for each
    predicted column t the mapping read off a few rows (each gold column
    goes to the first free predicted column that agrees with it on those
    rows; only columns t whose screened gold row holds the same cells).
    Each is screened on :data:`SCREEN_ROWS` rows; the first that passes is
    verified on all rows and decides (so at most one full pass is spent).
    ``None`` only means no mapping was shown this way, not that none exists.
    """
    screen = screen_rows(len(pred_rows))
    tried: set[ColumnMapping] = set()
    read = _mappings_read_off(gold_rows, pred_rows, key, screen) if read_off else ()
    for mapping in chain(candidates, read):
        if mapping in tried:
            continue
        tried.add(mapping)
        verdict = _rows_agree_by_key(gold_rows, pred_rows, key, mapping, groups, screen)
        if verdict is not None:  # screened in and verified on all rows: no other mapping is tried
            return mapping if verdict else None
    return None


def _mappings_read_off(gold_rows: Sequence[Row], pred_rows: Sequence[Row], key: KeyColumn, screen: list[int]) -> Iterator[ColumnMapping]:
    """For each predicted column t that could be the key's: the mapping read off the screened rows."""
    width = len(gold_rows[0])
    for t in range(width):
        pairs = []
        for row in screen:
            gold_row = key.positions.get(pred_rows[row][t])
            if gold_row is None:
                break
            pairs.append((gold_rows[gold_row], pred_rows[row]))
        else:
            if same_counts(Counter(pairs[0][0]), Counter(pairs[0][1])):  # the same cells, rearranged
                mapping = read_off_mapping(pairs, width, {key.index: t})
                if mapping is not None:
                    yield mapping


def read_off_mapping(pairs: list[tuple[Row, Row]], width: int, fixed: dict[int, int]) -> ColumnMapping | None:
    """Each gold column to the first free predicted column whose cells agree with it in every (gold, predicted) row pair."""
    mapping = dict(fixed)
    free = [index for index in range(width) if index not in fixed.values()]
    for gold_index in range(width):
        if gold_index in mapping:
            continue
        for position, pred_index in enumerate(free):
            if all(_same(pred[pred_index], gold[gold_index]) for gold, pred in pairs):
                mapping[gold_index] = pred_index
                del free[position]
                break
        else:
            return None
    return tuple(mapping[index] for index in range(width))


def _same(first: Any, second: Any) -> bool:
    """Equality as a container sees it (identity first)."""
    return first is second or first == second


def _rows_agree_by_key(
    gold_rows: Sequence[Row],
    pred_rows: Sequence[Row],
    key: KeyColumn,
    mapping: ColumnMapping,
    groups: list[int] | None,
    screen: list[int],
) -> bool | None:
    """Whether the rows agree under ``mapping``; None when the screened rows already say no."""
    pred_key = mapping[key.index]
    reorder = reorderer(mapping)
    for row in screen:
        gold_row = key.positions.get(pred_rows[row][pred_key])
        if gold_row is None or (groups is not None and groups[gold_row] != groups[row]):
            return None
        if (pred_rows[row] if reorder is None else reorder(pred_rows[row])) != gold_rows[gold_row]:
            return None
    order = key.rows_of(map(itemgetter(pred_key), pred_rows))
    if order is None or len(set(order)) != len(gold_rows):
        return False
    if groups is not None and list(map(groups.__getitem__, order)) != groups:
        return False
    gathered = gatherer(order)(gold_rows)
    return gathered == (list(pred_rows) if reorder is None else list(map(reorder, pred_rows)))

