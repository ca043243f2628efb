"""The fast path of execution match: a match shown on the raw rows, before anything is normalised.

Only with ``nulls="equal"``: normalising never makes two equal values
unequal, so rows that agree before normalising agree after it, and a match
shown here is a match; nothing is normalised, transposed or copied. Tried in
turn: the identical row sequence; the mapping that equal column names
suggest (case-insensitive; names only choose what is tried first, the rows
decide, and misleading names cost one screen); the identity; and mappings
read off the content. For the latter a gold *key column* (all values
distinct, see :func:`~pytest_sqleval.metrics.row_alignment.match_rows_by_key`)
names, for each predicted row, the only gold row it can be; a few such row
pairs give the column mapping, which is then verified on all rows: the gold
rows put in that order must equal the predicted rows, reordered by the
mapping, and every gold row must be hit once (in its tie group, with ties).
Strict order needs no key: row i is row i. Without a key column the names
and identity candidates are verified with a Counter of row tuples.

Anything this path cannot show (NaN, Decimal, ``float_decimals``,
unhashable cells, a genuine difference) falls through to the full
comparison: ``None`` here never means a miss.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pytest_sqleval.metrics.key_columns import (
    UNDECIDED,
    KeyColumn,
    UndecidedType,
    find_row_key,
)
from pytest_sqleval.metrics.row_alignment import (
    match_rows_by_key,
    read_off_mapping,
    screen_rows,
)
from pytest_sqleval.metrics.row_rules import RowRules
from pytest_sqleval.metrics.rows_and_columns import (
    ColumnMapping,
    Row,
    reorderer,
    same_counts,
)
from pytest_sqleval.metrics.tie_groups import group_ids
from pytest_sqleval.results import QueryResult


def raw_match(gold: QueryResult, pred: QueryResult, rules: RowRules) -> tuple[ColumnMapping | None, KeyColumn | None | UndecidedType]:
    """A column mapping under which the raw rows already agree under ``rules``, or None; and the gold key column.

    With ``nulls="equal"`` normalising never makes two equal values unequal,
    so rows that agree before normalising agree after it; None only means
    "not shown this way" and the full comparison follows. Candidates: the
    mapping that equal column names (case-insensitive) suggest, the
    identity, and mappings read off the rows' content (see
    row_alignment.match_rows_by_key; by row index under strict order). Names only
    choose what is tried first: the rows decide. The key column found on the
    raw gold rows (a KeyColumn, None when none was found, ``UNDECIDED``
    when none was looked for) is returned too for reuse.
    """
    mapping: ColumnMapping | None = None
    key: KeyColumn | None | UndecidedType = UNDECIDED
    gold_rows = gold.rows if isinstance(gold.rows, list) else list(gold.rows)
    pred_rows = pred.rows if isinstance(pred.rows, list) else list(pred.rows)
    width = gold.column_count
    identity = tuple(range(width))
    try:
        if gold_rows == pred_rows:
            return identity, key
        if rules.ordered and rules.tie_starts is not None and rules.distinct_rows:
            return None, key  # tie groups of deduplicated rows: left to the full comparison
        if len(gold_rows) != len(pred_rows) and not (rules.distinct_rows and not rules.ordered):
            return None, key
        candidates = [identity]
        if rules.match_columns:
            named = _mapping_by_names(gold.columns, pred.columns)
            if named is not None and named != identity:
                candidates.insert(0, named)
        if rules.ordered and rules.tie_starts is None:
            return _raw_sequence_match(gold_rows, pred_rows, candidates[:-1], read_off=rules.match_columns), key
        groups = group_ids(rules.tie_starts, len(gold_rows)) if rules.ordered and rules.tie_starts else None
        key = find_row_key(gold_rows, width)
        if key is not None:
            mapping = match_rows_by_key(gold_rows, pred_rows, key, candidates, groups, read_off=rules.match_columns)
        else:
            mapping = next((mapping for mapping in candidates if _raw_counts_agree(gold_rows, pred_rows, mapping, rules, groups)), None)
    except (TypeError, ValueError, ArithmeticError, IndexError):  # an unhashable or odd raw value, a ragged row
        return None, UNDECIDED
    return mapping, key


def _mapping_by_names(gold_names: Sequence[str], pred_names: Sequence[str]) -> ColumnMapping | None:
    """The mapping that pairs equal column names (case-insensitive), when they pair off one to one."""
    gold_keys = [str(name).casefold() for name in gold_names]
    pred_index = {str(name).casefold(): index for index, name in enumerate(pred_names)}
    if len(pred_index) != len(pred_names) or len(set(gold_keys)) != len(gold_keys) or set(gold_keys) != pred_index.keys():
        return None
    return tuple(pred_index[name] for name in gold_keys)


def _raw_sequence_match(gold_rows: list[Row], pred_rows: list[Row], candidates: list[ColumnMapping], read_off: bool) -> ColumnMapping | None:
    """Strict order: a mapping under which predicted row i is gold row i, for every i."""
    screen = screen_rows(len(gold_rows))
    if read_off:
        pairs = [(gold_rows[row], pred_rows[row]) for row in screen]
        read = read_off_mapping(pairs, len(gold_rows[0]), {})
        if read is not None and read not in candidates:
            candidates = [*candidates, read]
    for mapping in candidates:
        reorder = reorderer(mapping)
        if reorder is None:
            continue  # the identity was compared already
        if all(reorder(pred_rows[row]) == gold_rows[row] for row in screen) and list(map(reorder, pred_rows)) == gold_rows:
            return mapping
    return None


def _raw_counts_agree(gold_rows: list[Row], pred_rows: list[Row], mapping: ColumnMapping, rules: RowRules, groups: list[int] | None) -> bool:
    """Without a key column: the rows as multisets (per tie group) or sets, after a screen of two rows."""
    reorder = reorderer(mapping)
    for index in (0, len(pred_rows) - 1):  # screen: these rows must be gold rows (a C-speed scan)
        if (pred_rows[index] if reorder is None else reorder(pred_rows[index])) not in gold_rows:
            return False
    mapped = pred_rows if reorder is None else list(map(reorder, pred_rows))
    if groups is not None:
        return same_counts(Counter(zip(groups, gold_rows)), Counter(zip(groups, mapped)))
    if rules.distinct_rows:
        return set(gold_rows) == set(mapped)
    return same_counts(Counter(gold_rows), Counter(mapped))

