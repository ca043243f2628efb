"""Key columns: a column whose values are all distinct, found cheaply.

A key column aligns two results' rows: a row of the other result holding key
value v can only be the row that holds v. :func:`find_key_column` looks for
one among normalised columns, :func:`find_row_key` among raw rows (nothing
transposed). Both only try what is cheap, so ``None`` means "none found this
way", never "none exists".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from enum import Enum
from operator import itemgetter
from typing import Any, Final, Literal, TypeAlias

from pytest_sqleval.metrics.column_kinds import FLOATS, INTS, OTHER, TEXT
from pytest_sqleval.metrics.rows_and_columns import Column, Row

KEY_SAMPLES = (64, 1024, 8192)
"""Leading cells of a column checked for a repeated value, in turn, before it is tried in full as a key."""
MAX_KEY_TRIES = 2
"""How many columns are tried in full (each costs a dict of the column) before giving up."""
_KEY_PREFERENCE = {INTS: 0, TEXT: 1, FLOATS: 2, OTHER: 3}
_TYPE_PREFERENCE = {int: 0, str: 1, float: 2}  # the same order for raw cells


class Undecided(Enum):
    """A shortcut's answer when it cannot tell (no key column looked for, or none usable): the caller goes on
    with the general method. An enum member rather than ``None``, since ``None`` is a real answer there."""

    UNDECIDED = "undecided"


UNDECIDED: Final = Undecided.UNDECIDED
UndecidedType: TypeAlias = Literal[Undecided.UNDECIDED]


class KeyColumn:
    """A column whose values are all distinct: ``index`` and ``positions`` (value -> row index).

    A key column aligns rows: a row of another result whose cell is equal
    to the key cell of row i can only correspond to row i.
    """

    __slots__ = ("index", "positions")

    def __init__(self, index: int, positions: dict[Any, int]) -> None:
        self.index = index
        self.positions = positions

    def rows_of(self, cells: Iterable[Any]) -> list[int] | None:
        """For each cell, the row whose key value equals it; None when some cell is not a key value."""
        try:
            return list(map(self.positions.__getitem__, cells))
        except KeyError:
            return None


def find_key_column(columns: list[Column], kinds: list[str]) -> KeyColumn | None:
    """A column whose (normalised) values are all distinct, or None.

    Columns whose leading cells (:data:`KEY_SAMPLES`) repeat no value are tried,
    ints first, then text, floats, the rest; at most :data:`MAX_KEY_TRIES`
    are tried in full. ``None`` only means none was found this cheaply
    (or the cells are not hashable), not that none exists.
    """
    ranks = [_KEY_PREFERENCE[kind] for kind in kinds]
    return _find_key(ranks, lambda index, size: columns[index][:size], columns.__getitem__, len(columns[0]))


def find_row_key(rows: Sequence[Row], width: int) -> KeyColumn | None:
    """:func:`find_key_column` on raw rows: each column is read straight out of the rows (nothing is transposed).

    The order of preference comes from the type of each cell of the first row.
    """
    ranks = [_TYPE_PREFERENCE.get(type(cell), 3) for cell in rows[0]]
    if len(ranks) != width:
        return None
    return _find_key(
        ranks,
        lambda index, size: list(map(itemgetter(index), rows[:size])),
        lambda index: map(itemgetter(index), rows),
        len(rows),
    )


def _find_key(
    ranks: list[int], head: Callable[[int, int], list[Any]], cells: Callable[[int], Iterable[Any]], count: int
) -> KeyColumn | None:
    tries = 0
    for index in sorted(range(len(ranks)), key=ranks.__getitem__):
        try:
            if not all(_distinct(head(index, size)) for size in KEY_SAMPLES if size < count or size == KEY_SAMPLES[0]):
                continue
            positions = dict(zip(cells(index), range(count)))
        except TypeError:  # an unhashable driver value
            return None
        if len(positions) == count:
            return KeyColumn(index, positions)
        tries += 1
        if tries == MAX_KEY_TRIES:
            return None
    return None


def _distinct(values: list[Any]) -> bool:
    return len(set(values)) == len(values)
