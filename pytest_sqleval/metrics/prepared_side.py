"""One result as the comparison sees it under some rules: deduplicated for sets, with tie-group ids for ties.

:func:`prepare_sides` turns both normalised :class:`~.normalised_table.Table`
objects into :class:`Side` objects for a given :class:`~.row_rules.RowRules`:
with ``duplicates="set"`` repeated rows are dropped (the first occurrence
stays, so the gold's tie groups follow the kept rows); with ties the rows get
their tie-group ids, and when no two gold rows tie the order is simply strict.
A side keeps what the stages of the column search ask of it (kinds, totals,
a key column, cell hashes, permutation-proof row signatures), each computed
once and only when asked for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cached_property
from itertools import repeat
from typing import Any

from pytest_sqleval.metrics.column_kinds import INTS, kind_and_total
from pytest_sqleval.metrics.key_columns import KeyColumn, find_key_column
from pytest_sqleval.metrics.normalised_table import Table
from pytest_sqleval.metrics.row_rules import RowRules
from pytest_sqleval.metrics.rows_and_columns import (
    Column,
    ColumnMapping,
    Row,
    split_columns,
)
from pytest_sqleval.metrics.tie_groups import group_ids, starts_of


class Side:
    """One result's rows as a comparison sees them under some rules."""

    def __init__(self, rows: list[Row], columns: list[Column], kinds: list[str], groups: list[int] | None, table: Table | None) -> None:
        self.rows = rows
        self.columns = columns
        self.kinds = kinds  # see column_kinds.column_kind; dropping repeated rows never changes a kind
        self.groups = groups  # tie-group id of each row, or None
        self.table = table  # the Table these rows are all of (None when repeated rows were dropped)

    @property
    def width(self) -> int:
        """The number of columns."""
        return len(self.columns)

    @cached_property
    def totals(self) -> list[Any]:
        """Per column, the total of column_kinds.kind_and_total (exact sum of ints, total length of text)."""
        if self.table is not None:
            return self.table.totals
        return [kind_and_total(column)[1] for column in self.columns]

    @cached_property
    def key_column(self) -> KeyColumn | None:
        """A column of distinct values, found cheaply (the Table's own when no row was dropped)."""
        if self.table is not None:
            return self.table.key_column
        return find_key_column(self.columns, self.kinds)

    @cached_property
    def cell_hashes(self) -> list[list[int]]:
        """Per column, the hash of each cell (what the refinement's colours are built from)."""
        return [list(map(hash, column)) for column in self.columns]

    @property
    def only_ints(self) -> bool:
        """Whether every column holds ints only (row sums are then exact signatures)."""
        return all(kind == INTS for kind in self.kinds)

    def row_keys(self, mapping: ColumnMapping) -> Counter[Any]:
        """The multiset of rows (paired with their tie group) with columns reordered by ``mapping``."""
        rows = self.rows if mapping == tuple(range(self.width)) else zip(*(self.columns[index] for index in mapping))
        return Counter(rows if self.groups is None else zip(self.groups, rows))

    def reordered_rows(self, mapping: ColumnMapping) -> list[Row]:
        """The rows with their columns put in gold order by ``mapping``."""
        if mapping == tuple(range(self.width)):
            return self.rows
        return list(zip(*(self.columns[index] for index in mapping)))

    def row_signatures(self, by_value_sum: bool) -> list[int]:
        """Per row, a number that no permutation of the columns changes."""
        if by_value_sum:
            signatures = list(map(sum, self.rows))
        else:
            signatures = list(map(sum, map(map, repeat(hash), self.rows)))
        if self.groups is not None:
            return list(map(hash, zip(self.groups, signatures)))
        return signatures


def prepare_sides(gold: Table, pred: Table, rules: RowRules) -> tuple[Side, Side]:
    """Both sides under ``rules``: deduplicated for sets, with tie-group ids for ties."""
    gold_rows, gold_kept = _distinct(gold.rows) if rules.distinct_rows else (gold.rows, None)
    pred_rows, _ = _distinct(pred.rows) if rules.distinct_rows else (pred.rows, None)
    gold_columns = gold.columns if gold_rows is gold.rows else split_columns(gold_rows, gold.width)
    pred_columns = pred.columns if pred_rows is pred.rows else split_columns(pred_rows, pred.width)
    gold_groups = pred_groups = None
    if rules.ordered and rules.tie_starts is not None:
        gold_groups = group_ids(rules.tie_starts, len(gold.rows))
        pred_starts: Sequence[int] = rules.tie_starts
        if gold_kept is not None:
            # renumbered 0, 1, 2, ...: a group whose rows all repeat earlier rows is gone, and the
            # prediction's ids are built from the same starts
            pred_starts = starts_of([gold_groups[index] for index in gold_kept])
            gold_groups = group_ids(pred_starts, len(gold_rows))
        pred_groups = group_ids(pred_starts, len(pred_rows))
        if gold_groups[-1] == len(gold_groups) - 1:  # no ties at all: strict order
            gold_groups = pred_groups = None
    return (
        Side(gold_rows, gold_columns, gold.kinds, gold_groups, gold if gold_rows is gold.rows else None),
        Side(pred_rows, pred_columns, pred.kinds, pred_groups, pred if pred_rows is pred.rows else None),
    )


def _distinct(rows: list[Row]) -> tuple[list[Row], list[int] | None]:
    """Rows without repeats (first occurrence kept) and the kept indexes (None: nothing dropped)."""
    first_index = dict(zip(reversed(rows), range(len(rows) - 1, -1, -1)))
    if len(first_index) == len(rows):
        return rows, None
    kept = sorted(first_index.values())
    return [rows[index] for index in kept], kept

