"""The one value normaliser shared by every result metric.

Two cells are *equal* when their normalised values are equal under Python's
``==`` inside a container (tuple, list, set, dict), which compares identity
first. Normalisation:

* **Numbers compare by value.** ``int`` and ``float`` of equal value are
  already equal (``1 == 1.0``, same hash). A ``Decimal`` becomes an ``int``
  when it is integral (``Decimal("2.00") -> 2``) and a ``float`` otherwise
  (``Decimal("0.5") -> 0.5``), so every driver's numbers compare alike.
* **NaN equals NaN.** Every NaN (float or Decimal) becomes the one object
  :data:`NAN`; containers compare identity first, so ``(NAN,) == (NAN,)``.
* **float_decimals.** ``None``: floats compare exactly (``0.1 + 0.2 != 0.3``).
  An integer N: every finite float is rounded with ``round(value, N)``
  first, so with N = 2 ``0.1 + 0.2`` and ``0.3`` both become ``0.3``.
  ints are exact and never rounded.
* **nulls.** ``"equal"``: ``None`` stays ``None`` and NULL equals NULL.
  ``"distinct"``: each ``None`` becomes a new :class:`DistinctNull`, equal
  only to itself, so a NULL never equals anything, not even another NULL.
* **bool keeps Python semantics**: ``True == 1`` and ``False == 0``. SQLite
  has no boolean type and returns 1/0 where other engines return booleans,
  so this makes them agree.
* **Containers become hashable**: a list or tuple (a PostgreSQL array)
  becomes a tuple, a dict (JSON) a frozenset of (key, value) pairs, a set a
  frozenset and a memoryview bytes, with their items normalised the same way.
* **Nothing else is converted**: ``'1' != 1``, ``b'a' != 'a'``; dates,
  times and other driver values compare with their own ``==``.

Fast path: a column is only rebuilt when it holds a value that normalising
would change (a float when rounding, a NaN or infinity, a Decimal, a container, a NULL
under ``nulls="distinct"``); any other column is used as it is, and the
check runs at C speed (``sum`` of a numeric column, ``"".join`` of a text
column, otherwise ``set(map(type, column))``).
"""

from __future__ import annotations

import math
from decimal import Decimal
from functools import cached_property, partial
from itertools import chain
from typing import Any, Literal, Sequence

Nulls = Literal["equal", "distinct"]
Column = list[Any]
Row = tuple[Any, ...]

NAN: float = float("nan")
"""The single object every NaN is normalised to (see the module docstring)."""

_NoneType = type(None)
_CONTAINERS = (list, tuple, dict, set, frozenset, memoryview)


class DistinctNull:
    """A NULL under ``nulls="distinct"``: equal to nothing but itself."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NULL"


def normalise_value(value: Any, *, float_decimals: int | None = None, nulls: Nulls = "equal") -> Any:
    """One cell, normalised as the module docstring says."""
    if isinstance(value, float):
        return _normalise_float(value, float_decimals)
    if isinstance(value, Decimal):
        return _normalise_decimal(value, float_decimals)
    if value is None and nulls == "distinct":
        return DistinctNull()
    if isinstance(value, _CONTAINERS):
        return _normalise_container(value, float_decimals, nulls)
    return value


def _normalise_container(value: Any, float_decimals: int | None, nulls: Nulls) -> Any:
    normalise = partial(normalise_value, float_decimals=float_decimals, nulls=nulls)
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, dict):
        return frozenset(zip(map(normalise, value), map(normalise, value.values())))
    if isinstance(value, (set, frozenset)):
        return frozenset(map(normalise, value))
    return tuple(map(normalise, value))


def _normalise_float(value: float, float_decimals: int | None) -> float:
    if value != value:
        return NAN
    if float_decimals is None or not math.isfinite(value):
        return value
    return round(value, float_decimals)


def _normalise_decimal(value: Decimal, float_decimals: int | None) -> int | float:
    if value.is_nan():
        return NAN
    if value.is_finite() and value == value.to_integral_value():
        return int(value)
    return _normalise_float(float(value), float_decimals)


INTS, FLOATS, TEXT, OTHER = "ints", "floats", "text", "other"
"""Column kinds: ints and bools only; numbers with at least one float; str only; anything else."""


def column_kind(column: Sequence[Any]) -> str:
    """The column's kind (:data:`INTS`, :data:`FLOATS`, :data:`TEXT` or :data:`OTHER`), at C speed."""
    return _kind_and_total(column)[0]


def _kind_and_total(column: Sequence[Any]) -> tuple[str, Any]:
    try:
        total = sum(column)
    except TypeError:  # text, bytes, NULL, dates... or a Decimal next to a float
        return (TEXT if _only_text(column) else OTHER), None
    if isinstance(total, int):
        return INTS, total
    if isinstance(total, float):
        return FLOATS, total
    return OTHER, total  # a Decimal, or a driver's own number type


def _only_text(column: Sequence[Any]) -> bool:
    try:
        "".join(column)  # fails on the first cell that is not a str
    except TypeError:
        return False
    return True


def column_needs_normalising(column: Sequence[Any], *, float_decimals: int | None = None, nulls: Nulls = "equal") -> bool:
    """Whether :func:`normalise_value` could change any cell of ``column``."""
    kind, total = _kind_and_total(column)
    return _needs_normalising(column, kind, total, float_decimals, nulls)


def _needs_normalising(column: Sequence[Any], kind: str, total: Any, float_decimals: int | None, nulls: Nulls) -> bool:
    if kind in (INTS, TEXT):
        return False
    if kind == FLOATS:  # a NaN or an infinity makes the total non-finite
        return float_decimals is not None or not math.isfinite(total)
    return _types_need_normalising(column, float_decimals, nulls)


def _types_need_normalising(column: Sequence[Any], float_decimals: int | None, nulls: Nulls) -> bool:
    types = set(map(type, column))
    if Decimal in types or (nulls == "distinct" and _NoneType in types):
        return True
    if any(issubclass(kind, _CONTAINERS) for kind in types):
        return True
    if not any(issubclass(kind, float) for kind in types):
        return False
    return float_decimals is not None or any(isinstance(value, float) and not math.isfinite(value) for value in column)


def normalise_column(column: Column, *, float_decimals: int | None = None, nulls: Nulls = "equal") -> Column:
    """``column`` itself when no cell would change, else a normalised copy."""
    return _normalise_column(column, float_decimals, nulls)[0]


def _normalise_column(column: Column, float_decimals: int | None, nulls: Nulls) -> tuple[Column, str]:
    """The normalised column and its kind."""
    kind, total = _kind_and_total(column)
    if not _needs_normalising(column, kind, total, float_decimals, nulls):
        return column, kind
    normalised = list(map(partial(normalise_value, float_decimals=float_decimals, nulls=nulls), column))
    return normalised, column_kind(normalised)


def split_columns(rows: Sequence[Sequence[Any]], width: int) -> list[Column]:
    """The columns of ``rows``, each a list, transposed at C speed."""
    cells = list(chain.from_iterable(rows))
    if len(cells) != width * len(rows):
        raise ValueError(f"rows are not all {width} cells wide")
    if width == 1:
        return [cells]
    return [cells[index::width] for index in range(width)]


class Table:
    """A result's cells after normalisation, by column and by row.

    ``columns[i]`` is column i as a list and ``kinds[i]`` its kind (see
    :func:`column_kind`). ``rows`` are tuples: the original row tuples when
    no column needed normalising (nothing is copied), otherwise tuples
    rebuilt from the normalised columns on first use.
    """

    def __init__(self, rows: Sequence[Row], width: int, *, float_decimals: int | None = None, nulls: Nulls = "equal") -> None:
        raw_columns = split_columns(rows, width)
        self.width = width
        normalised = [_normalise_column(column, float_decimals, nulls) for column in raw_columns]
        self.columns = [column for column, _ in normalised]
        self.kinds = [kind for _, kind in normalised]
        if all(normalised is raw for normalised, raw in zip(self.columns, raw_columns)):
            self.rows = rows if isinstance(rows, list) else list(rows)

    @cached_property
    def rows(self) -> list[Row]:  # only computed when some column was normalised
        return list(zip(*self.columns))


def display_value(value: Any) -> Any:
    """A normalised value as a report shows it: a distinct NULL is ``None`` again."""
    return None if isinstance(value, DistinctNull) else value


def display_row(row: Row) -> Row:
    return tuple(map(display_value, row))
