"""Rows, columns and column mappings: the shapes every result metric works in, reshaped at C speed.

A result arrives as a sequence of row tuples. The comparisons read it by
column too (a column is a list of cells), and pair columns through a
*column mapping* ``m``: gold column c is compared with predicted column
``m[c]``. Transposing, gathering cells in a row order and reordering a row
by a mapping are the hot loops of every comparison, so each is done with
``itemgetter`` and ``zip`` rather than Python loops.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any, TypeAlias

Row: TypeAlias = tuple[Any, ...]
"""One result row (driver values, or normalised ones)."""
Column: TypeAlias = list[Any]
"""One result column, its cells in row order."""
ColumnMapping: TypeAlias = tuple[int, ...]
"""``mapping[c]`` is the predicted column compared with gold column c."""


def split_columns(rows: Sequence[Sequence[Any]], width: int) -> list[Column]:
    """The columns of ``rows``, each a list, transposed at C speed."""
    cells = list(chain.from_iterable(rows))
    if len(cells) != width * len(rows):
        raise ValueError(f"rows are not all {width} cells wide")
    if width == 1:
        return [cells]
    return [cells[index::width] for index in range(width)]


def gatherer(order: list[int]) -> Callable[[Sequence[Any]], list[Any]]:
    """A function that returns a column's cells in ``order`` (``[column[i] for i in order]``) at C speed."""
    if len(order) == 1:
        only = order[0]
        return lambda column: [column[only]]
    pick = itemgetter(*order)
    return lambda column: list(pick(column))


def reorderer(mapping: ColumnMapping) -> Callable[[Row], Row] | None:
    """A function that reorders a row by ``mapping`` (its cell c is the row's cell ``mapping[c]``); None for the identity."""
    if mapping == tuple(range(len(mapping))):
        return None
    if len(mapping) == 1:
        only = mapping[0]
        return lambda row: (row[only],)
    pick: Callable[[Row], Row] = itemgetter(*mapping)
    return pick


def same_counts(first: Counter[Hashable], second: Counter[Hashable]) -> bool:
    """Counter equality at C speed (``Counter.__eq__`` loops in Python; no count here is zero)."""
    return dict.__eq__(first, second)
