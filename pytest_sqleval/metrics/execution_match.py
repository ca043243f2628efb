"""Execution match: do the gold and the predicted query return the same result?

``compare_results(gold, pred, options, ordered=..., tie_groups=...)`` applies
the :class:`~pytest_sqleval.comparison.ComparisonOptions` in this order,
and the first check that fails decides the verdict's ``reason``:

1. **Empty results** (``empty``). Both results without rows: a match when
   ``empty`` is ``match``, or ``match_same_columns`` and the column counts
   agree; otherwise a miss with reason ``"empty"``. A match of two empty
   results is reported as ``vacuous``. Exactly one result without rows: a
   miss with reason ``"row_count"``.
2. **Column count**: reason ``"column_count"``.
3. **Row count**: rows counted with duplicates (``duplicates="bag"``) or
   distinct rows (``duplicates="set"``). When the counts differ only
   because of duplicates (the distinct rows agree) the reason is
   ``"duplicates"``, otherwise ``"row_count"``.
4. **Rows**, after every cell went through :mod:`.normalisation` (``float_decimals``, ``numbers``,
   ``nulls``):

   * ``columns="positional"``: predicted column i is gold column i.
     ``columns="match"``: the columns are matched one-to-one in any order by
     their content; column names are never used.
   * ``duplicates="bag"``: the rows must agree as a multiset;
     ``duplicates="set"``: as a set (repeated rows are dropped first).
   * ``ordered=True`` (the caller decides it from the gold SQL, see
     :mod:`pytest_sqleval.sql.ordering`): the rows must come in the gold's
     order. With ``ties="any"`` and ``tie_groups`` (the gold row indexes
     where each run of rows tied on the ORDER BY keys starts) the rows of a
     tie group may come in any order: the prediction is split at the same
     row indexes as the gold and each slice must hold the same rows as the
     gold's. With ``ties="gold"`` or ``tie_groups=None`` the order is strict.
     With ``duplicates="set"`` both row sequences first lose their repeated
     rows (the first occurrence stays), then the sequences are compared.

   A miss is ``"order"`` when the rows agree once order is ignored,
   ``"duplicates"`` when they agree once duplicates are ignored too, and
   ``"values"`` otherwise.

How the comparison is organised
-------------------------------
Each concern has its own module:

* :mod:`.raw_match`: the fast path, a match shown on the raw rows before
  anything is normalised (``nulls="equal"`` only);
* :mod:`.normalised_table` and :mod:`.prepared_side`: each side normalised
  (:mod:`.normalisation`), then deduplicated and given tie-group ids as the
  rules ask;
* :mod:`.column_mapping`: the search for a column mapping under which the
  rows agree (never a permutation search: :mod:`.key_alignment`, then
  :mod:`.column_refinement`);
* :mod:`.miss_explanation`: the reason of a miss and its example rows.

The cyclic garbage collector is paused while comparing: the comparison
allocates a tuple per row but never a reference cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from pytest_sqleval.comparison import ComparisonOptions
from pytest_sqleval.metrics.column_mapping import find_mapping
from pytest_sqleval.metrics.execution_verdict import ExecutionVerdict, counted, miss
from pytest_sqleval.metrics.gc_pause import gc_paused
from pytest_sqleval.metrics.key_columns import UNDECIDED, KeyColumn, UndecidedType
from pytest_sqleval.metrics.miss_explanation import (
    MAX_EXAMPLE_ROWS,
    explain_miss,
    explain_row_count_miss,
)
from pytest_sqleval.metrics.normalisation import normalise_value
from pytest_sqleval.metrics.normalised_table import Table, normalised_pair
from pytest_sqleval.metrics.prepared_side import prepare_sides
from pytest_sqleval.metrics.raw_match import raw_match
from pytest_sqleval.metrics.row_rules import RowRules
from pytest_sqleval.metrics.rows_and_columns import Row
from pytest_sqleval.results import QueryResult

__all__ = ["ExecutionVerdict", "compare_results", "official_quick_rej"]


def compare_results(
    gold: QueryResult,
    pred: QueryResult,
    options: ComparisonOptions,
    *,
    ordered: bool,
    tie_groups: Sequence[int] | None = None,
) -> ExecutionVerdict:
    """Compare two results under ``options``; see the module docstring."""
    if gold.is_empty or pred.is_empty:
        return _compare_with_empty(gold, pred, options)
    width = gold.column_count
    if width != pred.column_count:
        return miss("column_count", f"gold has {counted(width, 'column')}, the prediction {pred.column_count}")
    verdict = _compare_same_width(gold, pred, options, width, ordered, tie_groups)
    if verdict.match and options.profile == "test-suite" and not _test_suite_screen(gold, pred, options, ordered,
                                                                                     tie_groups):
        return miss("values", "test-suite's quick_rej rejects the pair (it sorts each row's values as strings)")
    return verdict


def _compare_same_width(gold: QueryResult, pred: QueryResult, options: ComparisonOptions, width: int, ordered: bool,
                        tie_groups: Sequence[int] | None) -> ExecutionVerdict:
    rules = RowRules(
        match_columns=options.columns == "match",
        distinct_rows=options.duplicates == "set",
        ordered=ordered,
        tie_starts=tuple(tie_groups) if ordered and options.ties == "any" and tie_groups is not None else None,
    )
    with gc_paused():
        raw_key: KeyColumn | None | UndecidedType = UNDECIDED
        if options.nulls == "equal":
            mapping, raw_key = raw_match(gold, pred, rules)
            if mapping is not None:
                return ExecutionVerdict(True, False, None, "same rows", mapping)
        gold_table, pred_table = normalised_pair(gold.rows, width, pred.rows, width,
                                                 float_decimals=options.float_decimals, nulls=options.nulls,
                                                 numbers=options.numbers)
        if raw_key is not UNDECIDED and gold_table.unchanged:
            gold_table.key_column = raw_key  # the same cells: the raw search's answer stands
        return _compare_tables(gold_table, pred_table, rules)


def _compare_tables(gold_table: Table, pred_table: Table, rules: RowRules) -> ExecutionVerdict:
    """Both normalised results (same width, both with rows) under ``rules``: a mapping found, or the miss explained."""
    gold, pred = prepare_sides(gold_table, pred_table, rules)
    if len(gold.rows) != len(pred.rows):
        return explain_row_count_miss(gold_table, pred_table, gold, pred, rules)
    mapping = find_mapping(gold, pred, rules)
    if mapping is not None:
        return ExecutionVerdict(True, False, None, "same rows", mapping)
    return explain_miss(gold_table, pred_table, gold, pred, rules)


def _test_suite_screen(gold: QueryResult, pred: QueryResult, options: ComparisonOptions, ordered: bool,
                       tie_groups: Sequence[int] | None) -> bool:
    """The ``test-suite`` profile's official ``quick_rej`` (True: the pair may match), kept under any override so
    that an override changes only its own choice: on the values as ``float_decimals`` and ``numbers`` read them,
    and on sets of rows unless the order is strict and duplicates count."""
    strict = ordered and options.duplicates == "bag" and (options.ties == "gold" or tie_groups is None)
    if options.float_decimals is None and options.numbers == "python":
        return official_quick_rej(gold.rows, pred.rows, strict)
    read = partial(normalise_value, float_decimals=options.float_decimals, numbers=options.numbers)
    return official_quick_rej([tuple(map(read, row)) for row in gold.rows], [tuple(map(read, row)) for row in pred.rows],
                              strict)


def official_quick_rej(gold_rows: Sequence[Row], pred_rows: Sequence[Row], ordered: bool) -> bool:
    """test-suite-sql-eval's ``quick_rej`` (True: the pair may still match), reproduced by the ``test-suite``
    profile: each row's values sorted by ``str(v) + str(type(v))``; in order the lists of sorted rows must be
    equal, otherwise their sets. Sorting by the string makes ``(1, 2.0)`` and ``(2, 1.0)`` differ even
    though a column permutation makes them equal (the official script then scores 0, and so do we)."""
    def unorder(row: Row) -> Row:
        return tuple(sorted(row, key=lambda v: str(v) + str(type(v))))

    try:
        gold_sorted = [unorder(row) for row in gold_rows]
        pred_sorted = [unorder(row) for row in pred_rows]
        if ordered:
            return gold_sorted == pred_sorted
        return set(gold_sorted) == set(pred_sorted)
    except (TypeError, ValueError):  # unhashable cells: the official script would fail too; leave it to the comparison
        return True


def _compare_with_empty(gold: QueryResult, pred: QueryResult, options: ComparisonOptions) -> ExecutionVerdict:
    """Check 1 of the module docstring: at least one result has no rows."""
    if not (gold.is_empty and pred.is_empty):
        return ExecutionVerdict(
            False,
            False,
            "row_count",
            f"gold has {counted(gold.row_count, 'row')}, the prediction {pred.row_count}",
            gold_only_rows=tuple(gold.rows[:MAX_EXAMPLE_ROWS]),
            pred_only_rows=tuple(pred.rows[:MAX_EXAMPLE_ROWS]),
            gold_only_count=len(gold.rows),
            pred_only_count=len(pred.rows),
        )
    if options.empty == "miss":
        return miss("empty", "both results are empty and the `empty` option counts that as a miss")
    if options.empty == "match_same_columns" and gold.column_count != pred.column_count:
        return miss(
            "empty",
            f"both results are empty but gold has {counted(gold.column_count, 'column')}, "
            f"the prediction {pred.column_count}",
        )
    return ExecutionVerdict(True, True, None, "both results are empty")
