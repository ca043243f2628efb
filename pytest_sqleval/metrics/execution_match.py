"""Execution match: do the gold and the predicted query return the same result?

``compare_results(gold, pred, options, ordered=..., tie_groups=...)`` applies
the :class:`~pytest_sqleval.metrics.profiles.ComparisonOptions` in this order,
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
4. **Rows**, after every cell went through :mod:`.values` (``float_decimals``,
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

Column matching is never a permutation search
---------------------------------------------
Deciding whether two tables are equal up to a permutation of rows *and*
columns contains graph isomorphism (encode a graph's incidence matrix as a
table), so no polynomial algorithm is known in theory. test-suite-sql-eval
tries column permutations and does not finish on 11 columns sharing one
value set. Here a mapping is found in three stages, each exact: a mapping
is only ever accepted after it has been verified on every row, and a miss
is only ever concluded by the last two stages, never by a shortcut.

**1. Raw rows (``nulls="equal"`` only).** Normalising never makes two
equal values unequal, so rows that agree before normalising agree after
it: a match shown on the raw rows is a match, and nothing is normalised,
transposed or copied. Tried in turn: the identical row sequence; the
mapping that equal column names suggest (case-insensitive; names only
choose what is tried first, the rows decide, and misleading names cost one
screen); the identity; and mappings read off the content. For the latter
a gold *key column* (all values distinct, see
:func:`~pytest_sqleval.metrics.values.match_rows_by_key`) names, for each
predicted row, the only gold row it can be; a few such row pairs give the
column mapping, which is then verified on all rows: the gold rows put in
that order must equal the predicted rows, reordered by the mapping, and
every gold row must be hit once (in its tie group, with ties). Strict
order needs no key: row i is row i. Without a key column the names and
identity candidates are verified with a Counter of row tuples. Anything
this stage cannot show (NaN, Decimal, ``float_decimals``, unhashable
cells, a genuine difference) falls through to the full comparison.

**2. Key-column alignment** on the normalised columns. In any valid mapping
the gold key column k corresponds to some predicted column t, and then the
row correspondence is forced (predicted row s is the gold row holding its
key value). So for each candidate t the gold columns are put in that row
order and each is paired with a distinct predicted column equal to it
value for value (equality of whole columns is an equivalence, so the first
free equal column is as good as any). A candidate t is only skipped for a
reason that rules it out in every mapping (its kind or exact total
differs; a screened row is not a rearrangement of its gold row; a value is
not a key value; a gold row is hit twice or outside its tie group), so
when no t is left no mapping exists. With strict order no search is
needed: a gold column must equal a predicted column value for value (found
by bucketing columns by a few cells, then comparing whole columns).

**3. Individualisation-refinement**, when gold has no key column (repeated
rows, no column of distinct values), the way graph-isomorphism tools find
isomorphisms:

* every column gets a colour: a cheap fingerprint of its value multiset
  (the total length for text and the exact sum for ints, both kept from
  the kind check; min and max for numbers when a float column could equal
  an ints column; the sum of the cells' hashes otherwise); gold and
  predicted colour classes must have equal sizes, else no mapping exists;
* classes with several columns are split by anchor rows: each row gets a
  signature that no column permutation changes (the sum of its values, or
  of its cells' hashes, with its tie group). A signature that occurs once
  among the gold rows must occur exactly once among the predicted rows, and
  in every valid mapping those two rows correspond, so their cells split
  the classes;
* then colour refinement: a column's new colour is the multiset of (cell,
  row signature under the current colours) pairs, until stable;
* columns whose whole value sequences are identical are interchangeable:
  any assignment inside such a class is taken;
* if a class is still ambiguous, one gold column is individualised against
  each candidate predicted column in turn (candidates with identical
  sequences are tried once) and the search recurses.

Every colour is a function of the column's content that any valid mapping
preserves, so refinement never discards a valid mapping, and every mapping
the search proposes is verified on full rows (a Counter of row tuples, or
of (tie group, row) pairs), so a hash collision can cost time but never a
wrong verdict. Real query results are far from the adversarial
constructions that make GI hard: the fingerprints or one anchor row almost
always leave singleton classes.

The cyclic garbage collector is paused while comparing: the comparison
allocates a tuple per row but never a reference cycle.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import cached_property
from itertools import compress, repeat
from operator import itemgetter, ne
from typing import Any, Hashable, Sequence

from pytest_sqleval.metrics.profiles import ComparisonOptions
from pytest_sqleval.metrics.values import (
    FLOATS,
    INTS,
    NAN,
    TEXT,
    Column,
    KeyColumn,
    Row,
    Table,
    display_row,
    find_key_column,
    find_row_key,
    gatherer,
    gc_paused,
    kind_and_total,
    match_rows_by_key,
    read_off_mapping,
    reorderer,
    screen_rows,
    split_columns,
)
from pytest_sqleval.results import QueryResult

Mapping = tuple[int, ...]
Colours = list[Hashable]

MAX_EXAMPLE_ROWS = 5
MAX_UNPRODUCTIVE_ANCHORS = 8
ALIGNMENT_SAMPLE = 256

_UNDECIDED: Any = object()  # "this shortcut cannot tell": the caller goes on with the general method


@dataclass(frozen=True)
class ExecutionVerdict:
    """The outcome of :func:`compare_results`.

    ``reason`` is ``None`` for a match, else one of ``"empty"``,
    ``"column_count"``, ``"row_count"``, ``"values"``, ``"order"``,
    ``"duplicates"``. ``detail`` is one sentence for a human.
    ``column_mapping[i]`` is the predicted column compared with gold column
    i: the verified mapping for a match, the mapping under which the rows
    agree except for order or duplicates, or the best alignment found (used
    for the example rows) for other misses; ``None`` when the shapes differ.
    ``gold_only_rows`` / ``pred_only_rows`` hold at most five example rows
    (in each result's own column order; a NULL under ``nulls="distinct"``
    shown as None) that one side has more often than the other.
    """

    match: bool
    vacuous: bool
    reason: str | None
    detail: str
    column_mapping: Mapping | None = None
    gold_only_rows: tuple[Row, ...] = ()
    pred_only_rows: tuple[Row, ...] = ()

    def __bool__(self) -> bool:
        """``assert compare_results(...)`` holds exactly when the results match."""
        return bool(self.match)


@dataclass(frozen=True)
class _Rules:
    """How rows are compared once the shapes agree."""

    match_columns: bool
    distinct_rows: bool
    ordered: bool
    tie_starts: tuple[int, ...] | None  # only when ordered; None means strict order

    def unordered(self) -> _Rules:
        return _Rules(self.match_columns, self.distinct_rows, ordered=False, tie_starts=None)

    def as_sets(self) -> _Rules:
        return _Rules(self.match_columns, distinct_rows=True, ordered=False, tie_starts=None)


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
        return _miss("column_count", f"gold has {_count(width, 'column')}, the prediction {pred.column_count}")
    verdict = _compare_same_width(gold, pred, options, width, ordered, tie_groups)
    if verdict.match and _official_test_suite(options) and not official_quick_rej(gold.rows, pred.rows, ordered):
        return _miss("values", "test-suite's quick_rej rejects the pair (it sorts each row's values as strings)")
    return verdict


def _compare_same_width(gold: QueryResult, pred: QueryResult, options: ComparisonOptions, width: int, ordered: bool,
                        tie_groups: Sequence[int] | None) -> ExecutionVerdict:
    rules = _Rules(
        match_columns=options.columns == "match",
        distinct_rows=options.duplicates == "set",
        ordered=ordered,
        tie_starts=tuple(tie_groups) if ordered and options.ties == "any" and tie_groups is not None else None,
    )
    with gc_paused():
        raw_key: KeyColumn | None = _UNDECIDED
        if options.nulls == "equal":
            mapping, raw_key = _raw_match(gold, pred, rules)
            if mapping is not None:
                return ExecutionVerdict(True, False, None, "same rows", mapping)
        gold_table = Table(gold.rows, width, float_decimals=options.float_decimals, nulls=options.nulls)
        pred_table = Table(pred.rows, width, float_decimals=options.float_decimals, nulls=options.nulls)
        if raw_key is not _UNDECIDED and gold_table.unchanged:
            gold_table.key_column = raw_key  # the same cells: the raw search's answer stands
        return _Comparison(gold_table, pred_table).verdict(rules)


def _official_test_suite(options: ComparisonOptions) -> bool:
    """The ``test-suite`` profile as the official script compares (any ``distinct``; no other override)."""
    from dataclasses import replace

    from .profiles import EXECUTION_PROFILES

    official = EXECUTION_PROFILES["test-suite"]
    return options.profile == "test-suite" and replace(options, distinct=official.distinct) == official


def official_quick_rej(gold_rows: Sequence[tuple], pred_rows: Sequence[tuple], ordered: bool) -> bool:
    """test-suite-sql-eval's ``quick_rej`` (True: the pair may still match), reproduced by the ``test-suite``
    profile: each row's values sorted by ``str(v) + str(type(v))``; in order the lists of sorted rows must be
    equal, otherwise their sets. Sorting by the string makes ``(1, 2.0)`` and ``(2, 1.0)`` differ even
    though a column permutation makes them equal (the official script then scores 0, and so do we)."""
    def unorder(row: tuple) -> tuple:
        return tuple(sorted(row, key=lambda v: str(v) + str(type(v))))

    try:
        gold_sorted = [unorder(row) for row in gold_rows]
        pred_sorted = [unorder(row) for row in pred_rows]
        if ordered:
            return gold_sorted == pred_sorted
        return set(gold_sorted) == set(pred_sorted)
    except (TypeError, ValueError):  # unhashable cells: the official script would fail too; leave it to the comparison
        return True


def _raw_match(gold: QueryResult, pred: QueryResult, rules: _Rules) -> tuple[Mapping | None, Any]:
    """A column mapping under which the raw rows already agree under ``rules``, or None; and the gold key column.

    With ``nulls="equal"`` normalising never makes two equal values unequal,
    so rows that agree before normalising agree after it; None only means
    "not shown this way" and the full comparison follows. Candidates: the
    mapping that equal column names (case-insensitive) suggest, the
    identity, and mappings read off the rows' content (see
    values.match_rows_by_key; by row index under strict order). Names only
    choose what is tried first: the rows decide. The key column found on the
    raw gold rows (a KeyColumn, None when none was found, ``_UNDECIDED``
    when none was looked for) is returned too for reuse.
    """
    mapping, key = None, _UNDECIDED
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
        groups = _group_ids(rules.tie_starts, len(gold_rows)) if rules.ordered and rules.tie_starts else None
        key = find_row_key(gold_rows, width)
        if key is not None:
            mapping = match_rows_by_key(gold_rows, pred_rows, key, candidates, groups, read_off=rules.match_columns)
        else:
            mapping = next((mapping for mapping in candidates if _raw_counts_agree(gold_rows, pred_rows, mapping, rules, groups)), None)
    except (TypeError, ValueError, ArithmeticError, IndexError):  # an unhashable or odd raw value, a ragged row
        return None, _UNDECIDED
    return mapping, key


def _mapping_by_names(gold_names: Sequence[str], pred_names: Sequence[str]) -> Mapping | None:
    """The mapping that pairs equal column names (case-insensitive), when they pair off one to one."""
    gold_keys = [str(name).casefold() for name in gold_names]
    pred_index = {str(name).casefold(): index for index, name in enumerate(pred_names)}
    if len(pred_index) != len(pred_names) or len(set(gold_keys)) != len(gold_keys) or set(gold_keys) != pred_index.keys():
        return None
    return tuple(pred_index[name] for name in gold_keys)


def _raw_sequence_match(gold_rows: list[Row], pred_rows: list[Row], candidates: list[Mapping], read_off: bool) -> Mapping | None:
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
        if all(reorder(pred_rows[row]) == gold_rows[row] for row in screen):
            if list(map(reorder, pred_rows)) == gold_rows:
                return mapping
    return None


def _raw_counts_agree(gold_rows: list[Row], pred_rows: list[Row], mapping: Mapping, rules: _Rules, groups: list[int] | None) -> bool:
    """Without a key column: the rows as multisets (per tie group) or sets, after a screen of two rows."""
    reorder = reorderer(mapping)
    for index in (0, len(pred_rows) - 1):  # screen: these rows must be gold rows (a C-speed scan)
        if (pred_rows[index] if reorder is None else reorder(pred_rows[index])) not in gold_rows:
            return False
    mapped = pred_rows if reorder is None else list(map(reorder, pred_rows))
    if groups is not None:
        return _same_counts(Counter(zip(groups, gold_rows)), Counter(zip(groups, mapped)))
    if rules.distinct_rows:
        return set(gold_rows) == set(mapped)
    return _same_counts(Counter(gold_rows), Counter(mapped))


def _compare_with_empty(gold: QueryResult, pred: QueryResult, options: ComparisonOptions) -> ExecutionVerdict:
    if not (gold.is_empty and pred.is_empty):
        return ExecutionVerdict(
            False,
            False,
            "row_count",
            f"gold has {_count(gold.row_count, 'row')}, the prediction {pred.row_count}",
            gold_only_rows=tuple(gold.rows[:MAX_EXAMPLE_ROWS]),
            pred_only_rows=tuple(pred.rows[:MAX_EXAMPLE_ROWS]),
        )
    if options.empty == "miss":
        return _miss("empty", "both results are empty and the `empty` option counts that as a miss")
    if options.empty == "match_same_columns" and gold.column_count != pred.column_count:
        return _miss(
            "empty",
            f"both results are empty but gold has {_count(gold.column_count, 'column')}, "
            f"the prediction {pred.column_count}",
        )
    return ExecutionVerdict(True, True, None, "both results are empty")


def _miss(reason: str, detail: str, **fields: Any) -> ExecutionVerdict:
    return ExecutionVerdict(False, False, reason, detail, **fields)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


# --------------------------------------------------------------------------- sides


class _Side:
    """One result's rows as a comparison sees them under some rules."""

    def __init__(self, rows: list[Row], columns: list[Column], kinds: list[str], groups: list[int] | None, table: Table | None) -> None:
        self.rows = rows
        self.columns = columns
        self.kinds = kinds  # see values.column_kind; dropping repeated rows never changes a kind
        self.groups = groups  # tie-group id of each row, or None
        self.table = table  # the Table these rows are all of (None when repeated rows were dropped)

    @property
    def width(self) -> int:
        return len(self.columns)

    @cached_property
    def totals(self) -> list[Any]:
        """Per column, the total of values.kind_and_total (exact sum of ints, total length of text)."""
        if self.table is not None:
            return self.table.totals
        return [kind_and_total(column)[1] for column in self.columns]

    @cached_property
    def key_column(self) -> KeyColumn | None:
        if self.table is not None:
            return self.table.key_column
        return find_key_column(self.columns, self.kinds)

    @cached_property
    def cell_hashes(self) -> list[list[int]]:
        return [list(map(hash, column)) for column in self.columns]

    @property
    def only_ints(self) -> bool:
        return all(kind == INTS for kind in self.kinds)

    def row_keys(self, mapping: Mapping) -> Counter[Any]:
        """The multiset of rows (paired with their tie group) with columns reordered by ``mapping``."""
        rows = self.rows if mapping == tuple(range(self.width)) else zip(*(self.columns[index] for index in mapping))
        return Counter(rows if self.groups is None else zip(self.groups, rows))

    def reordered_rows(self, mapping: Mapping) -> list[Row]:
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


def _may_equal_ints(side: _Side) -> bool:
    """Whether some float column of ``side`` could hold only integral values (and so equal an ints column).

    A sum of integral floats is integral (or not finite), so a float column
    whose total, kept from the kind check, is a finite non-integer holds a
    non-integral value.
    """
    return any(kind == FLOATS and not _has_fraction(total) for kind, total in zip(side.kinds, side.totals))


def _has_fraction(total: Any) -> bool:
    return isinstance(total, float) and math.isfinite(total) and not total.is_integer()


def _column_fingerprints(side: _Side, ints_by_sum: bool) -> list[Hashable]:
    return [
        _column_fingerprint(column, kind, total, ints_by_sum)
        for column, kind, total in zip(side.columns, side.kinds, side.totals)
    ]


def _column_fingerprint(column: Column, kind: str, total: Any, ints_by_sum: bool) -> Hashable:
    """A cheap summary of a column's value multiset: equal multisets always get equal fingerprints.

    Text: the total length (kept from the kind check). Ints: their exact sum
    (kept from the kind check) when ``ints_by_sum`` (no float column on
    either side could equal an ints column, see :func:`_may_equal_ints`),
    else (min, max) like floats; floats: (min, max), unless a NaN makes
    them order-dependent; anything else: the sum of the cells' hashes.
    """
    if kind == TEXT:
        return "text", total
    if kind == INTS and ints_by_sum:
        return "number", total
    if kind == INTS or (kind == FLOATS and (math.isfinite(total) or NAN not in column)):  # a NaN makes the sum NaN
        return "number", min(column), max(column)
    return "other", sum(map(hash, column))


def _prepare(gold: Table, pred: Table, rules: _Rules) -> tuple[_Side, _Side]:
    """Both sides under ``rules``: deduplicated for sets, with tie-group ids for ties."""
    gold_rows, gold_kept = _distinct(gold.rows) if rules.distinct_rows else (gold.rows, None)
    pred_rows, _ = _distinct(pred.rows) if rules.distinct_rows else (pred.rows, None)
    gold_columns = gold.columns if gold_rows is gold.rows else split_columns(gold_rows, gold.width)
    pred_columns = pred.columns if pred_rows is pred.rows else split_columns(pred_rows, pred.width)
    gold_groups = pred_groups = None
    if rules.ordered and rules.tie_starts is not None:
        gold_groups = _group_ids(rules.tie_starts, len(gold.rows))
        pred_starts: Sequence[int] = rules.tie_starts
        if gold_kept is not None:
            gold_groups = [gold_groups[index] for index in gold_kept]
            pred_starts = _starts_of(gold_groups)
        pred_groups = _group_ids(pred_starts, len(pred_rows))
        if gold_groups[-1] == len(gold_groups) - 1:  # no ties at all: strict order
            gold_groups = pred_groups = None
    return (
        _Side(gold_rows, gold_columns, gold.kinds, gold_groups, gold if gold_rows is gold.rows else None),
        _Side(pred_rows, pred_columns, pred.kinds, pred_groups, pred if pred_rows is pred.rows else None),
    )


def _distinct(rows: list[Row]) -> tuple[list[Row], list[int] | None]:
    """Rows without repeats (first occurrence kept) and the kept indexes (None: nothing dropped)."""
    first_index = dict(zip(reversed(rows), range(len(rows) - 1, -1, -1)))
    if len(first_index) == len(rows):
        return rows, None
    kept = sorted(first_index.values())
    return [rows[index] for index in kept], kept


def _group_ids(starts: Sequence[int], row_count: int) -> list[int]:
    """The tie-group id of each of ``row_count`` rows; a group starts at each index of ``starts``."""
    bounds = sorted({0, *(start for start in starts if 0 < start < row_count)}) + [row_count]
    ids: list[int] = []
    for group, (start, end) in enumerate(zip(bounds, bounds[1:])):
        ids.extend(repeat(group, end - start))
    return ids


def _starts_of(groups: list[int]) -> list[int]:
    return [index for index in range(len(groups)) if index == 0 or groups[index] != groups[index - 1]]


# --------------------------------------------------------------------------- comparison


class _Comparison:
    """Gold and prediction (normalised, same width, both with rows) under varying rules."""

    def __init__(self, gold: Table, pred: Table) -> None:
        self.gold = gold
        self.pred = pred
        self.width = gold.width

    def verdict(self, rules: _Rules) -> ExecutionVerdict:
        gold, pred = _prepare(self.gold, self.pred, rules)
        if len(gold.rows) != len(pred.rows):
            return self._row_count_miss(gold, pred, rules)
        mapping = _find_mapping(gold, pred, rules)
        if mapping is not None:
            return ExecutionVerdict(True, False, None, "same rows", mapping)
        return self._classify_miss(gold, pred, rules)

    def _row_count_miss(self, gold: _Side, pred: _Side, rules: _Rules) -> ExecutionVerdict:
        if not rules.distinct_rows:
            as_sets = rules.as_sets()
            mapping = _find_mapping(*_prepare(self.gold, self.pred, as_sets), as_sets)
            if mapping is not None:
                detail = (
                    f"same rows but different duplicate counts: gold has {_count(len(gold.rows), 'row')}, "
                    f"the prediction {len(pred.rows)}"
                )
                return self._miss_with_examples("duplicates", detail, gold, pred, mapping)
        rows = "distinct row" if rules.distinct_rows else "row"
        detail = f"gold has {_count(len(gold.rows), rows)}, the prediction {len(pred.rows)}"
        return self._miss_with_examples("row_count", detail, gold, pred, self._alignment(gold, pred, rules))

    def _classify_miss(self, gold: _Side, pred: _Side, rules: _Rules) -> ExecutionVerdict:
        if rules.ordered:
            unordered = rules.unordered()
            mapping = _find_mapping(*_prepare(self.gold, self.pred, unordered), unordered)
            if mapping is not None:
                return _miss("order", "same rows in a different order", column_mapping=mapping)
        if not rules.distinct_rows:
            as_sets = rules.as_sets()
            set_gold, set_pred = _prepare(self.gold, self.pred, as_sets)
            if set_gold.rows is self.gold.rows and set_pred.rows is self.pred.rows:
                mapping = None  # no repeated rows: the same question as the unordered bag, already answered no
            else:
                mapping = _find_mapping(set_gold, set_pred, as_sets)
            if mapping is not None:
                unordered_gold, unordered_pred = _prepare(self.gold, self.pred, rules.unordered())
                return self._miss_with_examples(
                    "duplicates", "same rows but different duplicate counts", unordered_gold, unordered_pred, mapping
                )
        return self._miss_with_examples("values", None, gold, pred, self._alignment(gold, pred, rules))

    def _miss_with_examples(
        self, reason: str, detail: str | None, gold: _Side, pred: _Side, mapping: Mapping
    ) -> ExecutionVerdict:
        """A miss showing the rows each side has more often; ``detail=None`` counts them in the detail."""
        missing, extra = _row_differences(gold, pred, mapping)
        if detail is None:
            detail = (
                f"{_count(sum(missing.values()), 'gold row')} {_are(missing)} missing from the prediction, "
                f"{_count(sum(extra.values()), 'predicted row')} {_are(extra)} not in the gold"
            )
        return _miss(
            reason, detail, column_mapping=mapping,
            gold_only_rows=_examples(gold.rows, missing),
            pred_only_rows=_examples(pred.rows, _inverse_keys(extra, mapping)),
        )

    def _alignment(self, gold: _Side, pred: _Side, rules: _Rules) -> Mapping:
        if not rules.match_columns:
            return tuple(range(self.width))
        return _best_alignment(gold.columns, pred.columns)


def _are(counter: Counter[Any]) -> str:
    return "is" if sum(counter.values()) == 1 else "are"


def _row_differences(gold: _Side, pred: _Side, mapping: Mapping) -> tuple[Counter[Row], Counter[Row]]:
    """Rows gold has more often than the prediction, and the reverse (in gold column order)."""
    gold_rows = Counter(gold.rows)
    pred_rows = Counter(pred.reordered_rows(mapping))
    return _excess(gold_rows, pred_rows), _excess(pred_rows, gold_rows)


def _excess(first: Counter[Row], second: Counter[Row]) -> Counter[Row]:
    """``first - second`` (positive counts only), with the rows whose counts differ found at C speed."""
    differing = compress(first, map(ne, first.values(), map(second.get, first, repeat(0))))
    return Counter({row: first[row] - second.get(row, 0) for row in differing if first[row] > second.get(row, 0)})


def _inverse_keys(rows: Counter[Row], mapping: Mapping) -> Counter[Row]:
    """Rows in gold column order turned back into the prediction's column order."""
    inverse = [0] * len(mapping)
    for gold_index, pred_index in enumerate(mapping):
        inverse[pred_index] = gold_index
    if len(mapping) == 1:
        return rows
    back = itemgetter(*inverse)
    return Counter({back(row): count for row, count in rows.items()})


def _examples(rows: list[Row], wanted: Counter[Row]) -> tuple[Row, ...]:
    """Up to five rows of ``rows`` (in their order) that ``wanted`` counts."""
    remaining = Counter(wanted)
    examples = []
    for row in rows:
        if len(examples) == MAX_EXAMPLE_ROWS or not remaining:
            break
        if remaining[row] > 0:
            remaining[row] -= 1
            examples.append(display_row(row))
    return tuple(examples)


def _first_distinct(column: Column, count: int) -> list[Any]:
    """The first ``count`` distinct values of ``column``, in order, reading only as much of it as needed."""
    length = count
    while True:
        values = list(dict.fromkeys(column[:length]))
        if len(values) >= count or length >= len(column):
            return values[:count]
        length *= 4


def _best_alignment(gold_columns: list[Column], pred_columns: list[Column]) -> Mapping:
    """A column alignment for showing a miss: greedily pair the columns whose values overlap most."""
    gold_sets = [set(column) for column in gold_columns]
    samples = [_first_distinct(column, ALIGNMENT_SAMPLE) for column in pred_columns]
    scores = sorted(
        (
            (-sum(map(gold_set.__contains__, sample)), gold_index != pred_index, gold_index, pred_index)
            for gold_index, gold_set in enumerate(gold_sets)
            for pred_index, sample in enumerate(samples)
        )
    )
    mapping: dict[int, int] = {}
    taken: set[int] = set()
    for _, _, gold_index, pred_index in scores:
        if gold_index not in mapping and pred_index not in taken:
            mapping[gold_index] = pred_index
            taken.add(pred_index)
    return tuple(mapping[index] for index in range(len(gold_columns)))


# --------------------------------------------------------------------------- mapping


def _find_mapping(gold: _Side, pred: _Side, rules: _Rules) -> Mapping | None:
    """A column mapping under which the rows agree, or None."""
    if len(gold.rows) != len(pred.rows):
        return None
    strict = rules.ordered and gold.groups is None
    if rules.match_columns:
        if strict:
            return _sequence_mapping(gold.columns, pred.columns)
        mapping = _keyed_mapping(gold, pred)
        if mapping is not _UNDECIDED:
            return mapping
        return _ColumnSearch(gold, pred).mapping()
    identity = tuple(range(gold.width))
    if strict:
        return identity if gold.rows == pred.rows else None
    return identity if _same_counts(gold.row_keys(identity), pred.row_keys(identity)) else None


def _same_counts(first: Counter[Any], second: Counter[Any]) -> bool:
    """Counter equality at C speed (``Counter.__eq__`` loops in Python; no count here is zero)."""
    return dict.__eq__(first, second)


def _sequence_mapping(gold_columns: list[Column], pred_columns: list[Column]) -> Mapping | None:
    """Strict order: each gold column must equal a distinct predicted column, value for value.

    Columns are bucketed by a few cells (equal columns share a bucket), then
    compared in full; equal columns are interchangeable, so the first equal
    one is taken.
    """
    candidates: defaultdict[Hashable, list[int]] = defaultdict(list)
    for pred_index, column in enumerate(pred_columns):
        candidates[_sequence_key(column)].append(pred_index)
    mapping = []
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


# --------------------------------------------------------------------------- key-column alignment


def _keyed_mapping(gold: _Side, pred: _Side) -> Mapping | None:
    """Match columns through a gold key column (all values distinct); ``_UNDECIDED`` when there is none.

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
            return _UNDECIDED
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
        return _UNDECIDED


def _key_candidates(gold: _Side, pred: _Side, key: int) -> list[int]:
    """Predicted columns the gold key column could equal: the same kind first, exclusions exact."""
    kind, total = gold.kinds[key], gold.totals[key]
    same, other = [], []
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


def _screened_rows_correspond(gold: _Side, pred: _Side, key: KeyColumn, t: int, screen: list[int]) -> bool:
    """Whether each screened predicted row holds the cells of the gold row its column t points to."""
    pred_key = pred.columns[t]
    for row in screen:
        gold_row = key.positions.get(pred_key[row])
        if gold_row is None:
            return False
        if gold.groups is not None and gold.groups[gold_row] != pred.groups[row]:  # type: ignore[index]
            return False
        gold_cells = Counter(column[gold_row] for column in gold.columns)
        if not _same_counts(gold_cells, Counter(column[row] for column in pred.columns)):
            return False
    return True


def _assign_columns(gold: _Side, pred: _Side, order: list[int], key: int, t: int) -> Mapping | None:
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
        gathered = None
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


class _ColumnSearch:
    """Individualisation-refinement search for a column bijection (see the module docstring)."""

    def __init__(self, gold: _Side, pred: _Side) -> None:
        self.gold = gold
        self.pred = pred

    @cached_property
    def gold_keys(self) -> Counter[Any]:
        return self.gold.row_keys(tuple(range(self.gold.width)))

    def rows_agree(self, mapping: Mapping) -> bool:
        return _same_counts(self.gold_keys, self.pred.row_keys(mapping))

    def mapping(self) -> Mapping | None:
        ints_by_sum = not (_may_equal_ints(self.gold) or _may_equal_ints(self.pred))
        colours = _relabel(_column_fingerprints(self.gold, ints_by_sum), _column_fingerprints(self.pred, ints_by_sum))
        if colours is None:
            return None
        if not _all_singletons(colours[0]):
            colours = self._anchor_rows(*colours)
            if colours is None:
                return None
        return self._search(*colours)

    def _anchor_rows(self, gold_colours: Colours, pred_colours: Colours) -> tuple[Colours, Colours] | None:
        """Split colour classes by rows whose permutation-proof signature is unique on both sides."""
        by_value_sum = self.gold.only_ints and self.pred.only_ints
        gold_signatures = self.gold.row_signatures(by_value_sum)
        pred_signatures = self.pred.row_signatures(by_value_sum)
        unproductive = 0
        for signature, count in Counter(gold_signatures).items():
            if count != 1:
                continue
            if pred_signatures.count(signature) != 1:
                return None  # every valid mapping keeps each row signature's count
            gold_row = self.gold.rows[gold_signatures.index(signature)]
            pred_row = self.pred.rows[pred_signatures.index(signature)]
            refined = _relabel(list(zip(gold_colours, gold_row)), list(zip(pred_colours, pred_row)))
            if refined is None:
                return None
            progress = _class_count(refined[0]) > _class_count(gold_colours)
            gold_colours, pred_colours = refined
            if _all_singletons(gold_colours):
                break
            unproductive = 0 if progress else unproductive + 1
            if unproductive == MAX_UNPRODUCTIVE_ANCHORS:
                break
        return gold_colours, pred_colours

    def _search(self, gold_colours: Colours, pred_colours: Colours) -> Mapping | None:
        refined = self._refine(gold_colours, pred_colours)
        if refined is None:
            return None
        gold_colours, pred_colours = refined
        if not _all_singletons(gold_colours):
            paired = self._pair_identical_columns(gold_colours, pred_colours)
            if paired is None:
                return None
            gold_colours, pred_colours = paired
        if _all_singletons(gold_colours):
            mapping = _mapping_from_colours(gold_colours, pred_colours)
            return mapping if self.rows_agree(mapping) else None
        return self._individualise(gold_colours, pred_colours)

    def _individualise(self, gold_colours: Colours, pred_colours: Colours) -> Mapping | None:
        sizes = Counter(gold_colours)
        target = min((colour for colour in sizes if sizes[colour] > 1), key=sizes.__getitem__)
        gold_index = gold_colours.index(target)
        tried: list[Column] = []
        for pred_index in (index for index, colour in enumerate(pred_colours) if colour == target):
            column = self.pred.columns[pred_index]
            if any(column == earlier for earlier in tried):
                continue
            tried.append(column)
            marker = object()  # a colour no other column has, on either side
            mapping = self._search(
                _with_colour(gold_colours, gold_index, marker),
                _with_colour(pred_colours, pred_index, marker),
            )
            if mapping is not None:
                return mapping
        return None

    def _refine(self, gold_colours: Colours, pred_colours: Colours) -> tuple[Colours, Colours] | None:
        """Colour refinement until the number of classes stops growing."""
        while not _all_singletons(gold_colours):
            order = list(dict.fromkeys(gold_colours))
            gold_signatures = _coloured_row_signatures(self.gold, gold_colours, order)
            pred_signatures = _coloured_row_signatures(self.pred, pred_colours, order)
            refined = _relabel(
                _refined_colours(self.gold, gold_colours, gold_signatures),
                _refined_colours(self.pred, pred_colours, pred_signatures),
            )
            if refined is None:
                return None
            if _class_count(refined[0]) == _class_count(gold_colours):
                break
            gold_colours, pred_colours = refined
        return gold_colours, pred_colours

    def _pair_identical_columns(self, gold_colours: Colours, pred_colours: Colours) -> tuple[Colours, Colours] | None:
        """Classes whose gold columns are all the same sequence: any assignment is as good as another."""
        gold_colours, pred_colours = list(gold_colours), list(pred_colours)
        for colour, size in Counter(gold_colours).items():
            if size == 1:
                continue
            gold_members = [index for index, other in enumerate(gold_colours) if other == colour]
            if not _identical(self.gold.columns, gold_members):
                continue
            pred_members = [index for index, other in enumerate(pred_colours) if other == colour]
            if not _identical(self.pred.columns, pred_members):
                return None
            for position, (gold_index, pred_index) in enumerate(zip(gold_members, pred_members)):
                gold_colours[gold_index] = pred_colours[pred_index] = (colour, "twin", position)
        return gold_colours, pred_colours


def _identical(columns: list[Column], members: list[int]) -> bool:
    first = columns[members[0]]
    return all(columns[index] == first for index in members[1:])


def _coloured_row_signatures(side: _Side, colours: Colours, order: list[Hashable]) -> list[int]:
    """Per row, a hash of the multiset of its cells in each colour class (classes in ``order``)."""
    members: dict[Hashable, list[int]] = {colour: [] for colour in order}
    for index, colour in enumerate(colours):
        members[colour].append(index)
    per_class = [
        side.cell_hashes[indexes[0]] if len(indexes) == 1 else list(map(sum, zip(*(side.cell_hashes[i] for i in indexes))))
        for indexes in members.values()
    ]
    if side.groups is not None:
        per_class.append(side.groups)
    return list(map(hash, zip(*per_class)))


def _refined_colours(side: _Side, colours: Colours, signatures: list[int]) -> Colours:
    return [(colour, sum(map(hash, zip(hashes, signatures)))) for colour, hashes in zip(colours, side.cell_hashes)]


def _relabel(gold_colours: Sequence[Hashable], pred_colours: Sequence[Hashable]) -> tuple[Colours, Colours] | None:
    """Small shared labels for both sides' colours; None when the class sizes differ."""
    if not _same_counts(Counter(gold_colours), Counter(pred_colours)):
        return None
    labels: dict[Hashable, int] = {}
    gold = [labels.setdefault(colour, len(labels)) for colour in gold_colours]
    return gold, [labels[colour] for colour in pred_colours]


def _with_colour(colours: Colours, index: int, colour: Hashable) -> Colours:
    changed = list(colours)
    changed[index] = colour
    return changed


def _class_count(colours: Colours) -> int:
    return len(set(colours))


def _all_singletons(colours: Colours) -> bool:
    return _class_count(colours) == len(colours)


def _mapping_from_colours(gold_colours: Colours, pred_colours: Colours) -> Mapping:
    pred_index = {colour: index for index, colour in enumerate(pred_colours)}
    return tuple(pred_index[colour] for colour in gold_colours)
