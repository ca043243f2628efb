"""Stage 3 of the column mapping search: individualisation-refinement, when gold has no key column.

When the gold has repeated rows and no column of distinct values, a column
bijection is found the way graph-isomorphism tools find isomorphisms:

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
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from decimal import Decimal
from functools import cached_property
from typing import Any, TypeAlias

from pytest_sqleval.metrics.column_kinds import FLOATS, INTS, OTHER, TEXT
from pytest_sqleval.metrics.normalisation import NAN
from pytest_sqleval.metrics.prepared_side import Side
from pytest_sqleval.metrics.rows_and_columns import Column, ColumnMapping, same_counts

Colours: TypeAlias = list[Hashable]
"""Per column, its colour: a value that any valid mapping preserves (equal colours on both sides pair up)."""

MAX_UNPRODUCTIVE_ANCHORS = 8
"""Anchor rows tried in a row that split no colour class before the anchors are given up for refinement."""


class ColumnSearch:
    """Individualisation-refinement search for a column bijection (see the module docstring)."""

    def __init__(self, gold: Side, pred: Side) -> None:
        self.gold = gold
        self.pred = pred

    @cached_property
    def gold_keys(self) -> Counter[Any]:
        return self.gold.row_keys(tuple(range(self.gold.width)))

    def rows_agree(self, mapping: ColumnMapping) -> bool:
        return same_counts(self.gold_keys, self.pred.row_keys(mapping))

    def mapping(self) -> ColumnMapping | None:
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

    def _search(self, gold_colours: Colours, pred_colours: Colours) -> ColumnMapping | None:
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

    def _individualise(self, gold_colours: Colours, pred_colours: Colours) -> ColumnMapping | None:
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


def _coloured_row_signatures(side: Side, colours: Colours, order: list[Hashable]) -> list[int]:
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


def _refined_colours(side: Side, colours: Colours, signatures: list[int]) -> Colours:
    return [(colour, sum(map(hash, zip(hashes, signatures)))) for colour, hashes in zip(colours, side.cell_hashes)]


def _relabel(gold_colours: Sequence[Hashable], pred_colours: Sequence[Hashable]) -> tuple[Colours, Colours] | None:
    """Small shared labels for both sides' colours; None when the class sizes differ."""
    if not same_counts(Counter(gold_colours), Counter(pred_colours)):
        return None
    labels: dict[Hashable, int] = {}
    gold: Colours = [labels.setdefault(colour, len(labels)) for colour in gold_colours]
    return gold, [labels[colour] for colour in pred_colours]


def _with_colour(colours: Colours, index: int, colour: Hashable) -> Colours:
    changed = list(colours)
    changed[index] = colour
    return changed


def _class_count(colours: Colours) -> int:
    return len(set(colours))


def _all_singletons(colours: Colours) -> bool:
    return _class_count(colours) == len(colours)


def _mapping_from_colours(gold_colours: Colours, pred_colours: Colours) -> ColumnMapping:
    pred_index = {colour: index for index, colour in enumerate(pred_colours)}
    return tuple(pred_index[colour] for colour in gold_colours)


def _may_equal_ints(side: Side) -> bool:
    """Whether some float or Decimal column of ``side`` could hold only integral values (and so equal an ints
    column).

    A sum of integral floats is integral (or not finite), so a float column
    whose total, kept from the kind check, is a finite non-integer holds a
    non-integral value. A column of Decimals (kept as they are under
    ``numbers="python"``, where ``Decimal("2") == 2``) always may.
    """
    return any(kind == FLOATS and not _has_fraction(total) or _decimal_numbers(column, kind, total)
               for column, kind, total in zip(side.columns, side.kinds, side.totals))


def _has_fraction(total: Any) -> bool:
    return isinstance(total, float) and math.isfinite(total) and not total.is_integer()


def _decimal_numbers(column: Column, kind: str, total: Any) -> bool:
    """Whether a column of kind :data:`OTHER` holds only numbers, none a NaN, with a Decimal among them (kept as
    they are under ``numbers="python"``): they compare with ints and floats by value (``Decimal("2.5") == 2.5``),
    so the column may equal a float or ints column. The kind check's ``sum`` is a Decimal for Decimals and ints;
    beside a float it failed (``total`` None), and the cells are looked at, up to the first that is no number."""
    if isinstance(total, Decimal):
        return not total.is_nan()
    if kind != OTHER or total is not None:
        return False
    try:
        return all(isinstance(value, (int, float, Decimal)) and value == value for value in column)  # noqa: PLR0124
    except ArithmeticError:  # a signalling Decimal NaN
        return False


def _column_fingerprints(side: Side, ints_by_sum: bool) -> list[Hashable]:
    return [
        _column_fingerprint(column, kind, total, ints_by_sum)
        for column, kind, total in zip(side.columns, side.kinds, side.totals)
    ]


def _column_fingerprint(column: Column, kind: str, total: Any, ints_by_sum: bool) -> Hashable:
    """A cheap summary of a column's value multiset: equal multisets always get equal fingerprints.

    Text: the total length (kept from the kind check). Ints: their exact sum
    (kept from the kind check) when ``ints_by_sum`` (no float column on
    either side could equal an ints column, see :func:`_may_equal_ints`),
    else (min, max) like floats; floats, and numbers with Decimals among them
    (which equal floats and ints under ``numbers="python"``): (min, max),
    unless a NaN makes them order-dependent; anything else: the sum of the
    cells' hashes.
    """
    if kind == TEXT:
        return "text", total
    if kind == INTS and ints_by_sum:
        return "number", total
    # a NaN makes the sum NaN; a total may be an int (the kind is the whole column's, the total of its distinct rows)
    if kind == INTS or (kind == FLOATS and (not isinstance(total, float) or math.isfinite(total) or NAN not in column)) \
            or _decimal_numbers(column, kind, total):  # it may equal a float or ints column: the same fingerprint
        return "number", min(column), max(column)
    return "other", sum(map(hash, column))

