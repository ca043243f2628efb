"""What kind of values a column holds, found at C speed, and the total the check computes on the way.

Kinds: :data:`INTS` (ints and bools only), :data:`FLOATS` (numbers with at
least one float), :data:`TEXT` (str only), :data:`OTHER` (anything else).
The check is one ``sum`` (numbers) or one ``"".join`` (text), and what it
computed is kept as a free fingerprint of the column's values: the exact sum
of an ints column, the total length of a text column. Normalisation uses the
kind to skip columns that need nothing; the column search uses the totals to
rule out column pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

INTS, FLOATS, TEXT, OTHER = "ints", "floats", "text", "other"
"""Column kinds: ints and bools only; numbers with at least one float; str only; anything else."""


def column_kind(column: Sequence[Any]) -> str:
    """The column's kind (:data:`INTS`, :data:`FLOATS`, :data:`TEXT` or :data:`OTHER`), at C speed."""
    return kind_and_total(column)[0]


def kind_and_total(column: Sequence[Any]) -> tuple[str, Any]:
    """The column's kind and what the kind check computed on the way.

    The total is the ``sum`` of an :data:`INTS` column (exact, so equal value
    multisets have equal totals) or of a :data:`FLOATS` column (rounded in
    the cells' order: a hint, not a fingerprint; infinity when an int beyond
    a float's range stands next to a float), the total length of a
    :data:`TEXT` column (the length of its ``"".join``), else ``None`` or
    whatever ``sum`` returned.
    """
    try:
        total = sum(column)
    except TypeError:  # text, bytes, NULL, dates... or a Decimal next to a float
        length = _text_length(column)
        return (OTHER, None) if length is None else (TEXT, length)
    except OverflowError:  # an int beyond a float's range next to a float (a huge PostgreSQL numeric)
        return (FLOATS, math.inf) if all(isinstance(value, (int, float)) for value in column) else (OTHER, None)
    except ArithmeticError:  # Decimals with no sum: Decimal('Infinity') + Decimal('-Infinity') (PostgreSQL numerics)
        return OTHER, None
    if isinstance(total, int):
        return INTS, total
    if isinstance(total, float):
        return FLOATS, total
    return OTHER, total  # a Decimal, or a driver's own number type


def _text_length(column: Sequence[Any]) -> int | None:
    """The total length of an all-str column, or None when some cell is not a str."""
    try:
        return len("".join(column))  # fails on the first cell that is not a str
    except TypeError:
        return None
