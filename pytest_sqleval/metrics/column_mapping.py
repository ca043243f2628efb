"""The column mapping search: under which pairing of columns do the normalised rows agree?

Column matching is never a permutation search
---------------------------------------------
Deciding whether two tables are equal up to a permutation of rows *and*
columns contains graph isomorphism (encode a graph's incidence matrix as a
table), so no polynomial algorithm is known in theory. test-suite-sql-eval
tries column permutations and does not finish on 11 columns sharing one
value set. Here a mapping is found in three stages, each exact: a mapping
is only ever accepted after it has been verified on every row, and a miss
is only ever concluded by the last two stages, never by a shortcut.

1. Raw rows (``nulls="equal"`` only): :mod:`.raw_match`, before this module.
2. Key-column alignment on the normalised columns: :mod:`.key_alignment`.
   With strict order no search is needed: a gold column must equal a
   predicted column value for value (found here by bucketing columns by a
   few cells, then comparing whole columns).
3. Individualisation-refinement, when gold has no key column:
   :mod:`.column_refinement`.

With ``columns="positional"`` there is nothing to search: the identity is
checked, in order or as a multiset of rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable

from pytest_sqleval.metrics.column_refinement import ColumnSearch
from pytest_sqleval.metrics.key_alignment import keyed_mapping
from pytest_sqleval.metrics.key_columns import UNDECIDED
from pytest_sqleval.metrics.prepared_side import Side
from pytest_sqleval.metrics.row_rules import RowRules
from pytest_sqleval.metrics.rows_and_columns import Column, ColumnMapping, same_counts


def find_mapping(gold: Side, pred: Side, rules: RowRules) -> ColumnMapping | None:
    """A column mapping under which the rows agree, or None."""
    if len(gold.rows) != len(pred.rows):
        return None
    strict = rules.ordered and gold.groups is None
    if rules.match_columns:
        if strict:
            return _sequence_mapping(gold.columns, pred.columns)
        mapping = keyed_mapping(gold, pred)
        if mapping is not UNDECIDED:
            return mapping
        return ColumnSearch(gold, pred).mapping()
    identity = tuple(range(gold.width))
    if strict:
        return identity if gold.rows == pred.rows else None
    return identity if same_counts(gold.row_keys(identity), pred.row_keys(identity)) else None


def _sequence_mapping(gold_columns: list[Column], pred_columns: list[Column]) -> ColumnMapping | None:
    """Strict order: each gold column must equal a distinct predicted column, value for value.

    Columns are bucketed by a few cells (equal columns share a bucket), then
    compared in full; equal columns are interchangeable, so the first equal
    one is taken.
    """
    candidates: defaultdict[Hashable, list[int]] = defaultdict(list)
    for pred_index, column in enumerate(pred_columns):
        candidates[_sequence_key(column)].append(pred_index)
    mapping: list[int] = []
    for column in gold_columns:
        matching = candidates.get(_sequence_key(column), [])
        for position, pred_index in enumerate(matching):
            if pred_columns[pred_index] == column:
                mapping.append(pred_index)
                del matching[position]
                break
        else:
            return None
    return tuple(mapping)


def _sequence_key(column: Column) -> Hashable:
    """A few cells of a column (equal columns have equal keys)."""
    return len(column), column[0], column[len(column) // 2], column[-1]

