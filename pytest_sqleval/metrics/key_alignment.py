"""Stage 2 of the column mapping search: aligning rows through a gold key column.

In any valid mapping the gold key column k (all values distinct, see
:mod:`.key_columns`) corresponds to some predicted column t, and then the row
correspondence is forced: predicted row s is the gold row holding its key
value. So for each candidate t the gold columns are put in that row order and
each is paired with a distinct predicted column equal to it value for value
(equality of whole columns is an equivalence, so the first free equal column
is as good as any). A candidate t is only skipped for a reason that rules it
out in every mapping (its kind or exact total differs; a screened row is not
a rearrangement of its gold row; a value is not a key value; a gold row is
hit twice or outside its tie group), so when no t is left no mapping exists.
"""

from __future__ import annotations

from collections import Counter

from pytest_sqleval.metrics.column_kinds import FLOATS, INTS, TEXT
from pytest_sqleval.metrics.key_columns import UNDECIDED, KeyColumn, UndecidedType
from pytest_sqleval.metrics.prepared_side import Side
from pytest_sqleval.metrics.row_alignment import screen_rows
from pytest_sqleval.metrics.rows_and_columns import (
    Column,
    ColumnMapping,
    gatherer,
    same_counts,
)


def keyed_mapping(gold: Side, pred: Side) -> ColumnMapping | None | UndecidedType:
    """Match columns through a gold key column (all values distinct); ``UNDECIDED`` when there is none.

    In any valid mapping the gold key column k corresponds to some predicted
    column t, and then every predicted row can only correspond to the gold
    row whose key value it holds: the row correspondence is forced. So for
    each candidate t: look the rows up (every value must be a key value,
    each gold row hit once, inside its tie group), put the gold columns in
    that row order and pair every gold column with a distinct predicted
    column equal to it value for value. A candidate t is only skipped for
    a reason that rules it out in every mapping: the kinds or exact totals
    (ints: the sum; text: the total length) differ, or one of a few
    screened predicted rows is not a rearrangement of the gold row it would
    correspond to. No t left: no mapping exists. The verification is the
    value-for-value equality of every column under a bijection of rows.
    """
    try:
        key = gold.key_column
        if key is None:
            return UNDECIDED
        screen = screen_rows(len(gold.rows), 3)
        for t in _key_candidates(gold, pred, key.index):
            if not _screened_rows_correspond(gold, pred, key, t, screen):
                continue
            order = key.rows_of(pred.columns[t])  # order[s]: the gold row that predicted row s must be
            if order is None or len(set(order)) != len(order):
                continue
            if gold.groups is not None and list(map(gold.groups.__getitem__, order)) != pred.groups:
                continue
            mapping = _assign_columns(gold, pred, order, key.index, t)
            if mapping is not None:
                return mapping
        return None
    except TypeError:  # an unhashable driver value: the general search decides
        return UNDECIDED


def _key_candidates(gold: Side, pred: Side, key: int) -> list[int]:
    """Predicted columns the gold key column could equal: the same kind first, exclusions exact."""
    kind, total = gold.kinds[key], gold.totals[key]
    same: list[int] = []
    other: list[int] = []
    for t, (pred_kind, pred_total) in enumerate(zip(pred.kinds, pred.totals)):
        if pred_kind == kind:
            if kind in (INTS, TEXT) and pred_total != total:
                continue  # equal value multisets have equal exact totals
            same.append(t)
        elif TEXT in (kind, pred_kind) and {kind, pred_kind} <= {TEXT, INTS, FLOATS}:
            continue  # a str never equals a number
        else:
            other.append(t)
    return same + other


def _screened_rows_correspond(gold: Side, pred: Side, key: KeyColumn, t: int, screen: list[int]) -> bool:
    """Whether each screened predicted row holds the cells of the gold row its column t points to."""
    pred_key = pred.columns[t]
    for row in screen:
        gold_row = key.positions.get(pred_key[row])
        if gold_row is None:
            return False
        if gold.groups is not None and pred.groups is not None and gold.groups[gold_row] != pred.groups[row]:
            return False
        gold_cells = Counter(column[gold_row] for column in gold.columns)
        if not same_counts(gold_cells, Counter(column[row] for column in pred.columns)):
            return False
    return True


def _assign_columns(gold: Side, pred: Side, order: list[int], key: int, t: int) -> ColumnMapping | None:
    """Pair each gold column, its rows put in ``order``, with a distinct predicted column equal to it.

    Equality of whole columns is an equivalence, so taking the first equal
    free column never blocks a pairing that another choice would allow.
    """
    gather = gatherer(order)
    mapping = {key: t}
    free = [index for index in range(pred.width) if index != t]
    first = order[0]
    for gold_index, gold_column in enumerate(gold.columns):
        if gold_index == key:
            continue  # equal to column t by construction of ``order``
        head = gold_column[first]
        gathered: Column | None = None
        for position, pred_index in enumerate(free):
            pred_column = pred.columns[pred_index]
            if pred_column[0] is not head and pred_column[0] != head:
                continue
            if gathered is None:
                gathered = gather(gold_column)
            if gathered == pred_column:
                mapping[gold_index] = pred_index
                del free[position]
                break
        else:
            return None
    return tuple(mapping[index] for index in range(gold.width))

