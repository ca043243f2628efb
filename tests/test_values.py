"""The value normaliser shared by every result metric."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from pytest_sqleval.metrics.column_kinds import (
    FLOATS,
    INTS,
    OTHER,
    TEXT,
    column_kind,
    kind_and_total,
)
from pytest_sqleval.metrics.key_columns import find_key_column, find_row_key
from pytest_sqleval.metrics.normalisation import (
    NAN,
    DistinctNull,
    column_needs_normalising,
    display_row,
    normalise_column,
    normalise_value,
)
from pytest_sqleval.metrics.normalised_table import Table
from pytest_sqleval.metrics.row_alignment import match_rows_by_key
from pytest_sqleval.metrics.rows_and_columns import split_columns


def rows_of(rows, **options):
    return Table(rows, len(rows[0]), **options).rows


@pytest.mark.parametrize(
    ("raw", "expected", "expected_type"),
    [
        (Decimal("2.00"), 2, int),
        (Decimal("-7"), -7, int),
        (Decimal("1E+2"), 100, int),
        (Decimal("0.5"), 0.5, float),
        (Decimal("Infinity"), math.inf, float),
    ],
)
def test_decimal_becomes_int_when_integral_else_float(raw, expected, expected_type):
    value = normalise_value(raw)
    assert value == expected
    assert type(value) is expected_type


def test_int_float_and_decimal_of_equal_value_are_equal_rows():
    assert rows_of([(1,)]) == rows_of([(1.0,)]) == rows_of([(Decimal("1.000"),)])
    assert rows_of([(0.5,)]) == rows_of([(Decimal("0.5"),)])


def test_every_nan_becomes_the_one_nan_so_nan_equals_nan():
    first, second = float("nan"), float("nan")
    assert (first,) != (second,)  # two NaN objects: plain Python says unequal
    assert normalise_value(first) is NAN
    assert normalise_value(Decimal("NaN")) is NAN
    assert rows_of([(first, 1)]) == rows_of([(second, 1)])
    assert set(rows_of([(first,)])) == set(rows_of([(Decimal("NaN"),)]))


def test_floats_compare_exactly_unless_float_decimals():
    assert rows_of([(0.1 + 0.2,)]) != rows_of([(0.3,)])
    assert rows_of([(0.1 + 0.2,)], float_decimals=2) == rows_of([(0.3,)], float_decimals=2)
    assert rows_of([(0.123,)], float_decimals=2) != rows_of([(0.13,)], float_decimals=2)


def test_float_decimals_never_touches_ints_or_infinities():
    assert normalise_value(123456789, float_decimals=0) == 123456789
    assert normalise_value(math.inf, float_decimals=2) == math.inf
    assert normalise_value(Decimal("0.126"), float_decimals=2) == 0.13


def test_nulls_equal_keeps_null_equal_to_null():
    assert rows_of([(None, 1)]) == rows_of([(None, 1)])


def test_nulls_distinct_makes_every_null_unequal():
    gold = rows_of([(None, 1)], nulls="distinct")
    pred = rows_of([(None, 1)], nulls="distinct")
    assert gold != pred
    assert isinstance(gold[0][0], DistinctNull)
    assert gold[0][0] != gold[0][0].__class__()


def test_bool_keeps_python_semantics():
    assert normalise_value(True) is True
    assert rows_of([(True, False)]) == rows_of([(1, 0)])


def test_text_and_numbers_never_equal():
    assert rows_of([("1",)]) != rows_of([(1,)])
    assert rows_of([(b"a",)]) != rows_of([("a",)])


def test_containers_become_hashable_and_normalised():
    assert normalise_value([1, Decimal("2.0"), [float("nan")]]) == (1, 2, (NAN,))
    assert normalise_value({"a": [1]}) == frozenset({("a", (1,))})
    assert normalise_value(memoryview(b"xy")) == b"xy"
    assert rows_of([([1, 2], {"k": None})]) == [((1, 2), frozenset({("k", None)}))]


@pytest.mark.parametrize(
    "column",
    [[1, 2, True], ["a", "b"], [1.5, 2, 3.25], [None, "x", 2], [b"x", None]],
    ids=["ints", "text", "floats", "mixed-with-null", "bytes"],
)
def test_columns_that_need_nothing_are_returned_untouched(column):
    assert not column_needs_normalising(column)
    assert normalise_column(column) is column


@pytest.mark.parametrize(
    ("column", "options"),
    [
        ([1.5, float("nan")], {}),
        ([1.5, float("inf")], {}),
        ([1, Decimal("2")], {}),
        ([Decimal("2"), 1.5], {}),
        ([0.1, 2], {"float_decimals": 3}),
        (["a", None], {"nulls": "distinct"}),
        ([None, 1.5, float("nan")], {}),
        ([[1], "a"], {}),
    ],
    ids=["nan", "infinity", "decimal", "decimal-and-float", "rounding", "distinct-null", "nan-with-null", "list"],
)
def test_columns_that_need_normalising_are_copied(column, options):
    assert column_needs_normalising(column, **options)
    normalised = normalise_column(column, **options)
    assert normalised is not column
    assert len(normalised) == len(column)


@pytest.mark.parametrize(
    ("column", "kind"),
    [([1, True], INTS), ([1, 2.5], FLOATS), (["a", "b"], TEXT), (["a", None], OTHER), ([Decimal(1)], OTHER)],
)
def test_column_kind(column, kind):
    assert column_kind(column) == kind


def test_table_keeps_the_original_rows_when_nothing_changes():
    rows = [(1, "a"), (2, "b")]
    table = Table(rows, 2)
    assert table.rows is rows
    assert table.columns == [[1, 2], ["a", "b"]]
    assert table.kinds == [INTS, TEXT]


def test_table_rebuilds_rows_from_normalised_columns():
    table = Table([(Decimal("1.0"), float("nan"))], 2)
    assert table.rows == [(1, NAN)]
    assert table.kinds == [INTS, FLOATS]


def test_split_columns_refuses_ragged_rows():
    with pytest.raises(ValueError, match="2 cells wide"):
        split_columns([(1, 2), (3,)], 2)


def test_display_row_shows_distinct_nulls_as_none():
    (row,) = rows_of([(None, 1)], nulls="distinct")
    assert display_row(row) == (None, 1)


# ----------------------------------------------------------------------------- totals and key columns


@pytest.mark.parametrize(
    ("column", "expected"),
    [([1, 2, True], (INTS, 4)), (["ab", "", "c"], (TEXT, 3)), (["a", None], (OTHER, None)), ([1, 0.5], (FLOATS, 1.5))],
)
def test_kind_and_total_keep_what_the_kind_check_computed(column, expected):
    assert kind_and_total(column) == expected


def test_table_totals_are_the_exact_int_sum_and_the_text_length():
    table = Table([(1, "ab"), (2, "c")], 2)
    assert table.totals == [3, 3]


def test_key_column_is_a_column_of_distinct_values():
    table = Table([(1, "x", 5), (1, "y", 6), (2, "z", 6)], 3)
    key = table.key_column
    assert key.index == 1
    assert key.positions == {"x": 0, "y": 1, "z": 2}
    assert key.rows_of(["z", "x"]) == [2, 0]
    assert key.rows_of(["q"]) is None


def test_no_key_column_when_every_column_repeats_a_value():
    assert find_key_column([[1, 1, 2], ["a", "b", "a"]], [INTS, TEXT]) is None


def test_row_key_reads_the_columns_out_of_the_rows():
    key = find_row_key([(1, "a"), (1, "b")], 2)
    assert key.index == 1
    assert key.positions == {"a": 0, "b": 1}
    assert find_row_key([([1], 1), ([2], 1)], 2) is None  # unhashable cells never make a key


GOLD = [(1, "a", 0.5), (2, "b", 0.5), (3, "c", 1.5)]


def test_match_rows_by_key_reads_the_mapping_off_the_rows():
    pred = [(1.5, "c", 3), (0.5, "a", 1), (0.5, "b", 2)]  # columns (2, 1, 0), rows shuffled
    assert match_rows_by_key(GOLD, pred, find_row_key(GOLD, 3)) == (2, 1, 0)


def test_match_rows_by_key_needs_every_gold_row():
    key = find_row_key(GOLD, 3)
    assert match_rows_by_key(GOLD, [GOLD[0], GOLD[1], GOLD[1]], key) is None
    # a repeated predicted row is allowed (set semantics, soft F1) as long as every gold row is hit
    assert match_rows_by_key(GOLD, [*GOLD, GOLD[1]], key) == (0, 1, 2)


def test_match_rows_by_key_keeps_rows_in_their_tie_groups():
    key = find_row_key(GOLD, 3)
    groups = [0, 0, 1]
    assert match_rows_by_key(GOLD, [GOLD[1], GOLD[0], GOLD[2]], key, groups=groups) == (0, 1, 2)
    assert match_rows_by_key(GOLD, [GOLD[2], GOLD[0], GOLD[1]], key, groups=groups) is None


def test_match_rows_by_key_verifies_every_row_not_only_the_screened_ones():
    gold = [(index, index % 7) for index in range(100)]
    pred = list(gold)
    pred[37] = (37, 99)  # not one of the screened rows
    key = find_row_key(gold, 2)
    assert match_rows_by_key(gold, gold[::-1], key) == (0, 1)
    assert match_rows_by_key(gold, pred, key) is None


def test_match_rows_by_key_tries_the_candidates_first_and_never_trusts_them():
    key = find_row_key(GOLD, 3)
    pred = [(row[1], row[0], row[2]) for row in GOLD]
    assert match_rows_by_key(GOLD, pred, key, candidates=[(1, 0, 2)], read_off=False) == (1, 0, 2)
    assert match_rows_by_key(GOLD, pred, key, candidates=[(0, 1, 2)], read_off=False) is None
