"""Tie groups: runs of gold rows tied on every ORDER BY key, whose rows may come in any order.

:mod:`pytest_sqleval.sql.ordering` reads from the gold SQL which output columns
hold the ORDER BY keys; :func:`tie_group_starts` reads the gold *result*: the
row index where each run of rows with equal keys starts. Keys compare after
:mod:`.normalisation` with NULL equal to NULL (SQL sorts NULLs together). A key
with a collation (``COLLATE NOCASE``) is compared by value, so rows that tie
only under the collation count as different groups. A key column of DECIMAL/NUMERIC values (no float) compares
exactly, as ``numbers: value`` compares two decimals and as the engine sorted them, so keys that differ beyond a
float's precision are different groups. The comparison turns the
starts into a group id per row (:func:`group_ids`) and back (:func:`starts_of`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, pairwise, repeat
from operator import itemgetter, ne
from typing import Any

from pytest_sqleval.metrics.normalisation import normalise_column, numbers_for


def tie_group_starts(rows: Sequence[Sequence[Any]], key_columns: Sequence[int]) -> list[int]:
    """Start index of every run of consecutive rows with equal (normalised) key values."""
    if not rows:
        return []
    key_values = [_normalised_key(list(map(itemgetter(column), rows))) for column in key_columns]
    keys = list(zip(*key_values))  # tuples compare identity first, so the one NaN equals itself
    return [0, *compress(range(1, len(keys)), map(ne, keys[1:], keys[:-1]))]


def group_ids(starts: Sequence[int], row_count: int) -> list[int]:
    """The tie-group id of each of ``row_count`` rows; a group starts at each index of ``starts``."""
    bounds = sorted({0, *(start for start in starts if 0 < start < row_count)}) + [row_count]
    ids: list[int] = []
    for group, (start, end) in enumerate(pairwise(bounds)):
        ids.extend(repeat(group, end - start))
    return ids


def starts_of(groups: list[int]) -> list[int]:
    """The row indexes where a new tie group starts (the inverse of :func:`group_ids`)."""
    return [index for index in range(len(groups)) if index == 0 or groups[index] != groups[index - 1]]


def _normalised_key(column: list[Any]) -> list[Any]:
    """One key column normalised as ``numbers: value`` compares it on its own: a column of decimals (no float)
    exactly, as the engine sorted it (``0.10000000000000000001`` and ``0.1``, or ``12345678901234567.1`` and
    ``…567.2``, are different keys, not a tie), a decimal beside a float at a float's precision."""
    return normalise_column(column, numbers=numbers_for("value", None, [tuple(column)]))  # the column as one row: its types
