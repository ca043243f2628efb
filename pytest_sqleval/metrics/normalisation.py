"""The one value normaliser shared by every result metric.

Two cells are *equal* when their normalised values are equal under Python's
``==`` inside a container (tuple, list, set, dict), which compares identity
first. Normalisation:

* **Numbers compare by value.** ``int`` and ``float`` of equal value are
  already equal (``1 == 1.0``, same hash). A ``Decimal`` becomes an ``int``
  when it is integral (``Decimal("2.00") -> 2``) and a ``float`` otherwise
  (``Decimal("0.5") -> 0.5``), so every driver's numbers compare alike.
  An integral ``Decimal`` of more than :data:`MAX_INT_DIGITS` digits stays a
  ``Decimal`` (it equals, and hashes like, the same int): turning it into an
  int costs time quadratic in its digits, and Python writes no int of more
  than 4,300 digits as text.
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
  frozenset and a memoryview bytes, with their items normalised the same way;
  any other value Python cannot hash (psycopg's ``Multirange``) a tuple of its
  items, or its type and text when it has none.
* **Two decimals compare exactly** under ``numbers="value"`` when neither
  result holds a float (:func:`numbers_for`, mode :data:`EXACT_DECIMALS`): a
  non-integral ``Decimal`` then stays itself, so two NUMERICs that differ at
  the 20th digit differ (also inside arrays and JSON: the values a container holds count). Beside a float,
  decimals compare as floats (above).
* **numbers="python"** (the reproduction profiles) keeps the driver's numbers
  as they are, so they compare with Python's ``==`` as the official scripts
  compare them: a ``Decimal`` stays a ``Decimal`` (``Decimal("0.1") != 0.1``,
  ``Decimal("2.50") == 2.5``) and a NaN stays itself (equal to no other NaN).
  ``float_decimals`` still rounds floats, and Decimals as floats (as above).
* **Nothing else is converted**: ``'1' != 1``, ``b'a' != 'a'``; dates,
  times and other driver values compare with their own ``==``.

Fast path: a column is only rebuilt when it holds a value that normalising
would change (a float when rounding, a NaN or infinity, a Decimal, a container, a NULL
under ``nulls="distinct"``); any other column is used as it is, and the
check runs at C speed (:mod:`.column_kinds`: ``sum`` of a numeric column,
``"".join`` of a text column, otherwise ``set(map(type, column))``).

A report shows a normalised value through :func:`display_value`, which turns
a :class:`DistinctNull` back into ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from decimal import Decimal
from functools import partial
from typing import Any, Final, Literal

from pytest_sqleval.comparison import Nulls, Numbers  # the option's values, named where the options are
from pytest_sqleval.metrics.column_kinds import FLOATS, INTS, TEXT, kind_and_total
from pytest_sqleval.metrics.rows_and_columns import Column, Row

NAN: float = float("nan")
"""The single object every NaN is normalised to (see the module docstring)."""

#: ``numbers="value"`` for a pair of results without any float: a non-integral Decimal keeps its exact value (see
#: :func:`numbers_for`); an internal mode, never a value of the ``numbers`` option.
EXACT_DECIMALS: Final = "value, exact decimals"

#: What the normalisers take: a value of the ``numbers`` option, or :data:`EXACT_DECIMALS`.
NumbersMode = Literal["value", "python", "value, exact decimals"]

#: Most digits of an integral Decimal that becomes an int (see the module docstring): a PostgreSQL NUMERIC may have
#: 131,072 digits, half a second each to turn into an int, which no report could then write as text.
MAX_INT_DIGITS: Final = 4000

_NoneType = type(None)
_CONTAINERS = (list, tuple, dict, set, frozenset, memoryview)


class DistinctNull:
    """A NULL under ``nulls="distinct"``: equal to nothing but itself."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NULL"


def normalise_value(value: Any, *, float_decimals: int | None = None, nulls: Nulls = "equal",
                    numbers: NumbersMode = "value") -> Any:
    """One cell, normalised as the module docstring says."""
    if isinstance(value, float):
        if numbers == "python" and (float_decimals is None or value != value):  # noqa: PLR0124 - the NaN test
            return value
        return _normalise_float(value, float_decimals)
    if isinstance(value, Decimal):
        if numbers == "python" and (float_decimals is None or value.is_nan()):
            return value
        if numbers == EXACT_DECIMALS and float_decimals is None and not value.is_nan() \
                and not (value.is_finite() and value == value.to_integral_value()):
            return value
        return _normalise_decimal(value, float_decimals)
    if value is None and nulls == "distinct":
        return DistinctNull()
    if isinstance(value, _CONTAINERS):
        return _normalise_container(value, float_decimals, nulls, numbers)
    if type(value).__hash__ is None:  # a driver's mutable value (psycopg's Multirange): hashable like a container
        return _normalise_unhashable(value, float_decimals, nulls, numbers)
    return value


def _normalise_unhashable(value: Any, float_decimals: int | None, nulls: Nulls, numbers: NumbersMode) -> Any:
    if isinstance(value, Iterable):
        return tuple(map(partial(normalise_value, float_decimals=float_decimals, nulls=nulls, numbers=numbers), value))
    return f"{type(value).__name__}:{value}"


def _normalise_container(value: Any, float_decimals: int | None, nulls: Nulls, numbers: NumbersMode) -> Any:
    normalise = partial(normalise_value, float_decimals=float_decimals, nulls=nulls, numbers=numbers)
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, dict):
        return frozenset(zip(map(normalise, value), map(normalise, value.values())))
    if isinstance(value, (set, frozenset)):
        return frozenset(map(normalise, value))
    return tuple(map(normalise, value))


def _normalise_float(value: float, float_decimals: int | None) -> float:
    if value != value:  # noqa: PLR0124 - the NaN test, at C speed
        return NAN
    if float_decimals is None or not math.isfinite(value):
        return value
    return round(value, float_decimals)


def _normalise_decimal(value: Decimal, float_decimals: int | None) -> int | float | Decimal:
    if value.is_nan():
        return NAN
    if value.is_finite() and value == value.to_integral_value():
        return int(value) if value.adjusted() < MAX_INT_DIGITS else value
    return _normalise_float(float(value), float_decimals)


def column_needs_normalising(column: Sequence[Any], *, float_decimals: int | None = None, nulls: Nulls = "equal",
                             numbers: NumbersMode = "value") -> bool:
    """Whether :func:`normalise_value` could change any cell of ``column``."""
    kind, total = kind_and_total(column)
    return _needs_normalising(column, kind, total, float_decimals, nulls, numbers)


def _needs_normalising(column: Sequence[Any], kind: str, total: Any, float_decimals: int | None, nulls: Nulls,
                       numbers: NumbersMode = "value") -> bool:
    if kind in (INTS, TEXT):
        return False
    if kind == FLOATS:  # a NaN or an infinity makes the total non-finite
        return float_decimals is not None or (numbers != "python" and not math.isfinite(total))
    return _types_need_normalising(column, float_decimals, nulls, numbers)


def _types_need_normalising(column: Sequence[Any], float_decimals: int | None, nulls: Nulls,
                            numbers: NumbersMode = "value") -> bool:
    types = set(map(type, column))
    if (Decimal in types and (numbers != "python" or float_decimals is not None)) or (nulls == "distinct" and _NoneType in types):
        return True
    if any(issubclass(kind, _CONTAINERS) or kind.__hash__ is None for kind in types):
        return True
    if not any(issubclass(kind, float) for kind in types):
        return False
    if float_decimals is not None:
        return True
    return numbers != "python" and any(isinstance(value, float) and not math.isfinite(value) for value in column)


def normalise_column(column: Column, *, float_decimals: int | None = None, nulls: Nulls = "equal",
                     numbers: NumbersMode = "value") -> Column:
    """``column`` itself when no cell would change, else a normalised copy."""
    return normalise_column_with_kind(column, float_decimals, nulls, numbers)[0]


def normalise_column_with_kind(column: Column, float_decimals: int | None, nulls: Nulls,
                               numbers: NumbersMode = "value") -> tuple[Column, str, Any]:
    """The normalised column (``column`` itself when nothing changes), its kind and its total (see
    :func:`~pytest_sqleval.metrics.column_kinds.kind_and_total`)."""
    kind, total = kind_and_total(column)
    if not _needs_normalising(column, kind, total, float_decimals, nulls, numbers):
        return column, kind, total
    normalised = list(map(partial(normalise_value, float_decimals=float_decimals, nulls=nulls, numbers=numbers), column))
    return (normalised, *kind_and_total(normalised))


def numbers_for(numbers: Numbers, float_decimals: int | None, *results: Sequence[Row]) -> NumbersMode:
    """The mode that normalises ``results`` (the two sides of one comparison): :data:`EXACT_DECIMALS` under
    ``numbers="value"`` without ``float_decimals`` when they hold a Decimal and no float (two decimals then compare
    exactly; beside a float a decimal compares as a float, the documented ``Decimal('0.1') == 0.1``), else
    ``numbers``. One pass over the cells' types (and the values inside containers: an array of NUMERIC holds decimals):
    call it only when a Decimal may be there."""
    if numbers != "value" or float_decimals is not None:
        return numbers
    types: set[type] = set()
    for rows in results:
        for row in rows:
            types.update(map(type, row))
    if any(issubclass(kind, float) for kind in types):
        return numbers
    if any(issubclass(kind, _CONTAINERS) or kind.__hash__ is None for kind in types):
        types.update(_item_types(results))  # a PostgreSQL array of NUMERIC holds decimals too
    if Decimal not in types or any(issubclass(kind, float) for kind in types):
        return numbers
    return EXACT_DECIMALS


def _item_types(results: Sequence[Sequence[Row]]) -> set[type]:
    """The types of the values inside the containers (arrays, JSON, sets, psycopg's ranges) of ``results``."""
    types: set[type] = set()
    pending = [value for rows in results for row in rows for value in row
               if isinstance(value, _CONTAINERS) or type(value).__hash__ is None]
    while pending:
        value = pending.pop()
        if isinstance(value, memoryview):
            continue
        items = list(value.values()) if isinstance(value, dict) else value if isinstance(value, Iterable) else ()
        for item in items:
            types.add(type(item))
            if isinstance(item, float):
                return types  # a float decides: decimals beside it compare as floats
            if isinstance(item, _CONTAINERS) or type(item).__hash__ is None:
                pending.append(item)
    return types


def display_value(value: Any) -> Any:
    """A normalised value as a report shows it: a distinct NULL is ``None`` again."""
    return None if isinstance(value, DistinctNull) else value


def display_row(row: Row) -> Row:
    """A normalised row as a report shows it (see :func:`display_value`)."""
    return tuple(map(display_value, row))
