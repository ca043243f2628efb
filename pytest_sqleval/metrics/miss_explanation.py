"""Explaining a miss: which check failed, and example rows that show it.

Once the rows do not agree under the options, the same question is asked
again under relaxed rules to name the reason: ``"order"`` when the rows agree
once order is ignored, ``"duplicates"`` when they agree once repeated rows are
ignored too, ``"values"`` otherwise (and for different row counts,
``"duplicates"`` when the distinct rows agree, else ``"row_count"``). The
verdict then carries up to :data:`MAX_EXAMPLE_ROWS` rows that each side has
more often than the other, under the mapping found by the relaxed question,
or, when there is none, under the column alignment whose values overlap most
(:func:`best_alignment`).
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from itertools import compress, repeat
from operator import itemgetter, ne
from typing import Any

from pytest_sqleval.metrics.column_mapping import find_mapping
from pytest_sqleval.metrics.execution_verdict import ExecutionVerdict, counted, miss
from pytest_sqleval.metrics.normalisation import NAN, DistinctNull, display_row
from pytest_sqleval.metrics.normalised_table import Table
from pytest_sqleval.metrics.prepared_side import Side, prepare_sides
from pytest_sqleval.metrics.row_rules import RowRules
from pytest_sqleval.metrics.rows_and_columns import Column, ColumnMapping, Row

MAX_EXAMPLE_ROWS = 5
"""Example rows shown per side of a miss."""
ALIGNMENT_SAMPLE = 256
"""Distinct values of each predicted column read to choose the alignment a miss is shown under."""


def explain_row_count_miss(gold_table: Table, pred_table: Table, gold: Side, pred: Side, rules: RowRules) -> ExecutionVerdict:
    """The miss when the sides have different (distinct) row counts: ``duplicates`` or ``row_count``."""
    if not rules.distinct_rows:
        as_sets = rules.as_sets()
        mapping = find_mapping(*prepare_sides(gold_table, pred_table, as_sets), as_sets)
        if mapping is not None:
            detail = (
                f"same rows but different duplicate counts: gold has {counted(len(gold.rows), 'row')}, "
                f"the prediction {len(pred.rows)}"
            )
            return _miss_with_examples("duplicates", detail, gold, pred, mapping)
    rows = "distinct row" if rules.distinct_rows else "row"
    detail = f"gold has {counted(len(gold.rows), rows)}, the prediction {len(pred.rows)}"
    return _miss_with_examples("row_count", detail, gold, pred, _alignment(gold, pred, rules))


def explain_miss(gold_table: Table, pred_table: Table, gold: Side, pred: Side, rules: RowRules) -> ExecutionVerdict:
    """The miss when the row counts agree but no mapping makes the rows agree: ``order``, ``duplicates`` or ``values``."""
    if rules.ordered:
        unordered = rules.unordered()
        mapping = find_mapping(*prepare_sides(gold_table, pred_table, unordered), unordered)
        if mapping is not None:
            return miss("order", "same rows in a different order", column_mapping=mapping)
    if not rules.distinct_rows:
        as_sets = rules.as_sets()
        set_gold, set_pred = prepare_sides(gold_table, pred_table, as_sets)
        if set_gold.rows is gold_table.rows and set_pred.rows is pred_table.rows:
            mapping = None  # no repeated rows: the same question as the unordered bag, already answered no
        else:
            mapping = find_mapping(set_gold, set_pred, as_sets)
        if mapping is not None:
            unordered_gold, unordered_pred = prepare_sides(gold_table, pred_table, rules.unordered())
            return _miss_with_examples(
                "duplicates", "same rows but different duplicate counts", unordered_gold, unordered_pred, mapping
            )
    return _miss_with_examples("values", None, gold, pred, _alignment(gold, pred, rules))


def _miss_with_examples(reason: str, detail: str | None, gold: Side, pred: Side, mapping: ColumnMapping) -> ExecutionVerdict:
    """A miss showing the rows each side has more often; ``detail=None`` counts them in the detail."""
    missing, extra = _row_differences(gold, pred, mapping)
    if detail is None:
        detail = (
            f"{counted(sum(missing.values()), 'gold row')} {_are(missing)} missing from the prediction, "
            f"{counted(sum(extra.values()), 'predicted row')} {_are(extra)} not in the gold"
        )
    gold_only, pred_only = _example_rows(gold.rows, missing), _example_rows(pred.rows, _inverse_keys(extra, mapping))
    detail += _unequal_to_itself_note(gold_only, pred_only)
    return miss(
        reason, detail, column_mapping=mapping,
        gold_only_rows=tuple(map(display_row, gold_only)),
        pred_only_rows=tuple(map(display_row, pred_only)),
        gold_only_count=sum(missing.values()),
        pred_only_count=sum(extra.values()),
    )


def _alignment(gold: Side, pred: Side, rules: RowRules) -> ColumnMapping:
    if not rules.match_columns:
        return tuple(range(gold.width))
    return best_alignment(gold.columns, pred.columns)


def _are(counter: Counter[Any]) -> str:
    return "is" if sum(counter.values()) == 1 else "are"


def _row_differences(gold: Side, pred: Side, mapping: ColumnMapping) -> tuple[Counter[Row], Counter[Row]]:
    """Rows gold has more often than the prediction, and the reverse (in gold column order)."""
    gold_rows = Counter(gold.rows)
    pred_rows = Counter(pred.reordered_rows(mapping))
    return _excess(gold_rows, pred_rows), _excess(pred_rows, gold_rows)


def _excess(first: Counter[Row], second: Counter[Row]) -> Counter[Row]:
    """``first - second`` (positive counts only), with the rows whose counts differ found at C speed."""
    differing = compress(first, map(ne, first.values(), map(second.get, first, repeat(0))))
    return Counter({row: first[row] - second.get(row, 0) for row in differing if first[row] > second.get(row, 0)})


def _inverse_keys(rows: Counter[Row], mapping: ColumnMapping) -> Counter[Row]:
    """Rows in gold column order turned back into the prediction's column order."""
    inverse = [0] * len(mapping)
    for gold_index, pred_index in enumerate(mapping):
        inverse[pred_index] = gold_index
    if len(mapping) == 1:
        return rows
    back = itemgetter(*inverse)
    return Counter({back(row): count for row, count in rows.items()})


def _example_rows(rows: list[Row], wanted: Counter[Row]) -> list[Row]:
    """Up to five rows of ``rows`` (in their order) that ``wanted`` counts, normalised (see :func:`display_row`)."""
    remaining = Counter(wanted)
    examples: list[Row] = []
    for row in rows:
        if len(examples) == MAX_EXAMPLE_ROWS or not remaining:
            break
        if remaining[row] > 0:
            remaining[row] -= 1
            examples.append(row)
    return examples


def _unequal_to_itself_note(gold_only: list[Row], pred_only: list[Row]) -> str:
    """Why rows that print alike, even with their types, can differ: `` (NaN equals no NaN under numbers: python)``
    when both sides' example rows hold a NaN the options kept as itself (``numbers: python``, as the official
    scripts compare; ``numbers: value`` makes every NaN the one :data:`NAN`, equal to itself), and the same for a
    NULL under ``nulls: distinct``; empty otherwise."""
    notes = []
    for kind, note in (("nan", "NaN equals no NaN under numbers: python"),
                       ("null", "NULL equals no NULL under nulls: distinct")):
        if _holds(gold_only, kind) and _holds(pred_only, kind):
            notes.append(note)
    return f" ({'; '.join(notes)})" if notes else ""


def _holds(rows: list[Row], kind: str) -> bool:
    pending: list[Any] = [cell for row in rows for cell in row]
    while pending:
        value = pending.pop()
        if kind == "null" and isinstance(value, DistinctNull):
            return True
        if kind == "nan" and isinstance(value, (float, Decimal)) and value is not NAN and value != value:  # noqa: PLR0124
            return True
        if isinstance(value, (tuple, frozenset)):  # a normalised array or JSON value (JSON: its (key, value) pairs)
            pending.extend(value)
    return False


def _first_distinct(column: Column, count: int) -> list[Any]:
    """The first ``count`` distinct values of ``column``, in order, reading only as much of it as needed."""
    length = count
    while True:
        values = list(dict.fromkeys(column[:length]))
        if len(values) >= count or length >= len(column):
            return values[:count]
        length *= 4


def best_alignment(gold_columns: list[Column], pred_columns: list[Column]) -> ColumnMapping:
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


