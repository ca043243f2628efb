"""A result's cells after normalisation, held by column and by row, with each column's kind and total.

Built once per side of a comparison; nothing is copied when no column needed
normalising (the common case), and the row tuples are only rebuilt from the
normalised columns when something changed and someone asks for rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from pytest_sqleval.comparison import Nulls, Numbers
from pytest_sqleval.metrics.key_columns import KeyColumn, find_key_column
from pytest_sqleval.metrics.normalisation import NumbersMode, normalise_column_with_kind, numbers_for
from pytest_sqleval.metrics.rows_and_columns import Row, split_columns


class Table:
    """A result's cells after normalisation, by column and by row.

    ``columns[i]`` is column i as a list, ``kinds[i]`` its kind (see
    :func:`~pytest_sqleval.metrics.column_kinds.column_kind`) and ``totals[i]``
    what the kind check computed (the exact sum of an ints column, the total
    length of a text column, see
    :func:`~pytest_sqleval.metrics.column_kinds.kind_and_total`). ``rows`` are
    tuples: the original row tuples when no column needed normalising
    (``unchanged``; nothing is copied), otherwise tuples rebuilt from the
    normalised columns on first use.
    """

    def __init__(self, rows: Sequence[Row], width: int, *, float_decimals: int | None = None, nulls: Nulls = "equal",
                 numbers: NumbersMode = "value") -> None:
        raw_columns = split_columns(rows, width)
        self.width = width
        normalised = [normalise_column_with_kind(column, float_decimals, nulls, numbers) for column in raw_columns]
        self.columns = [column for column, _, _ in normalised]
        self.kinds = [kind for _, kind, _ in normalised]
        self.totals: list[Any] = [total for _, _, total in normalised]
        self.unchanged = all(normalised is raw for normalised, raw in zip(self.columns, raw_columns))
        if self.unchanged:
            self.rows = rows if isinstance(rows, list) else list(rows)

    @cached_property
    def rows(self) -> list[Row]:  # only computed when some column was normalised
        return list(zip(*self.columns))

    @cached_property
    def key_column(self) -> KeyColumn | None:
        """A column whose values are all distinct, if one is found cheaply; see :func:`find_key_column`."""
        return find_key_column(self.columns, self.kinds)


def normalised_pair(gold: Sequence[Row], gold_width: int, pred: Sequence[Row], pred_width: int, *,
                    float_decimals: int | None = None, nulls: Nulls = "equal",
                    numbers: Numbers = "value") -> tuple[Table, Table]:
    """Both sides of one comparison normalised alike. Under ``numbers="value"`` two decimals compare exactly when
    neither result holds a float (:func:`~pytest_sqleval.metrics.normalisation.numbers_for`); that is looked at only
    when a side changed on normalising (a Decimal always changes it), so results of ints, text and floats pay nothing."""
    gold_table = Table(gold, gold_width, float_decimals=float_decimals, nulls=nulls, numbers=numbers)
    pred_table = Table(pred, pred_width, float_decimals=float_decimals, nulls=nulls, numbers=numbers)
    if numbers == "value" and float_decimals is None and not (gold_table.unchanged and pred_table.unchanged):
        exact = numbers_for(numbers, float_decimals, gold, pred)
        if exact != numbers:
            gold_table = Table(gold, gold_width, float_decimals=float_decimals, nulls=nulls, numbers=exact)
            pred_table = Table(pred, pred_width, float_decimals=float_decimals, nulls=nulls, numbers=exact)
    return gold_table, pred_table
