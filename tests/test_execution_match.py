"""compare_results under every profile, on hand-computed cases.

Most cases go through ``judge``, which does what the evaluator does: the
order plan comes from the gold SQL (sql/ordering.py), tie groups from the
gold rows, then compare_results.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from decimal import Decimal
from itertools import permutations

import pytest

from pytest_sqleval.comparison import EXECUTION_PROFILES, resolve_execution
from pytest_sqleval.metrics.execution_match import ExecutionVerdict, compare_results
from pytest_sqleval.metrics.normalisation import normalise_value
from pytest_sqleval.metrics.tie_groups import tie_group_starts
from pytest_sqleval.results import QueryResult
from pytest_sqleval.sql.ordering import plan_order

PROFILES = ("sqleval", "test-suite", "bird", "mro", "logiccat")


def judge(execution, gold_sql: str, gold_rows, pred_rows, *, gold_columns=None, pred_columns=None) -> ExecutionVerdict:
    options = resolve_execution(execution)
    gold = QueryResult.of(gold_rows, gold_columns)
    pred = QueryResult.of(pred_rows, pred_columns)
    plan = plan_order(gold_sql, "sqlite", options)
    assert plan.hidden_key_sql is None, "these cases keep their ORDER BY keys in the output"
    tie_groups = tie_group_starts(gold.rows, plan.key_columns) if plan.key_columns is not None else None
    return compare_results(gold, pred, options, ordered=plan.ordered, tie_groups=tie_groups)


def expect(verdict: ExecutionVerdict, outcome: str) -> None:
    """``outcome`` is "match" or the expected miss reason."""
    if outcome == "match":
        assert verdict.match, verdict
        assert verdict.reason is None
    else:
        assert not verdict.match, verdict
        assert verdict.reason == outcome, verdict


# ----------------------------------------------------------------------------- row order


@pytest.mark.parametrize(
    ("profile", "outcome"),
    [("sqleval", "match"), ("test-suite", "match"), ("bird", "match"), ("mro", "order"), ("logiccat", "order")],
)
def test_row_order_without_order_by(profile, outcome):
    verdict = judge(profile, "SELECT a FROM t", [(1,), (2,), (3,)], [(3,), (1,), (2,)])
    expect(verdict, outcome)


@pytest.mark.parametrize(
    ("profile", "outcome"),
    [("sqleval", "order"), ("test-suite", "order"), ("bird", "match"), ("mro", "order"), ("logiccat", "order")],
)
def test_row_order_with_order_by(profile, outcome):
    verdict = judge(profile, "SELECT a FROM t ORDER BY a", [(1,), (2,), (3,)], [(3,), (2,), (1,)])
    expect(verdict, outcome)
    if outcome == "order":
        assert verdict.detail == "same rows in a different order"


@pytest.mark.parametrize(
    ("profile", "outcome"),
    [("sqleval", "match"), ("test-suite", "order"), ("bird", "match"), ("mro", "order"), ("logiccat", "order")],
)
def test_order_by_only_in_a_subquery(profile, outcome):
    gold_sql = "SELECT a FROM (SELECT a FROM t ORDER BY a) AS s"
    expect(judge(profile, gold_sql, [(1,), (2,)], [(2,), (1,)]), outcome)


PEOPLE = [("ann", 30), ("bob", 30), ("cy", 41), ("dee", 52), ("eve", 52)]


@pytest.mark.parametrize(
    ("profile", "outcome"),
    [("sqleval", "match"), ("test-suite", "order"), ("bird", "match"), ("mro", "order"), ("logiccat", "order")],
)
def test_tied_rows_in_another_order(profile, outcome):
    pred = [("bob", 30), ("ann", 30), ("cy", 41), ("eve", 52), ("dee", 52)]
    expect(judge(profile, "SELECT name, age FROM people ORDER BY age", PEOPLE, pred), outcome)


def test_ties_do_not_excuse_rows_moved_across_tie_groups():
    pred = [("cy", 41), ("ann", 30), ("bob", 30), ("dee", 52), ("eve", 52)]
    expect(judge("sqleval", "SELECT name, age FROM people ORDER BY age", PEOPLE, pred), "order")


def test_ties_with_an_ordinal_key_and_permuted_columns():
    pred = [(30, "bob"), (30, "ann"), (41, "cy"), (52, "eve"), (52, "dee")]
    verdict = judge("sqleval", "SELECT name, age FROM people ORDER BY 2", PEOPLE, pred)
    expect(verdict, "match")
    assert verdict.column_mapping == (1, 0)


def test_ties_gold_option_demands_the_gold_tie_order():
    pred = [("bob", 30), ("ann", 30), ("cy", 41), ("dee", 52), ("eve", 52)]
    expect(judge({"profile": "sqleval", "ties": "gold"}, "SELECT name, age FROM people ORDER BY age", PEOPLE, pred), "order")


def test_tie_groups_given_directly():
    options = EXECUTION_PROFILES["sqleval"]
    gold = QueryResult.of([(1, "a"), (1, "b"), (2, "c")])
    pred = QueryResult.of([(1, "b"), (1, "a"), (2, "c")])
    assert compare_results(gold, pred, options, ordered=True, tie_groups=[0, 2]).match
    assert not compare_results(gold, pred, options, ordered=True, tie_groups=None).match
    assert not compare_results(gold, pred, options, ordered=True, tie_groups=[0, 1, 2]).match
    strict = resolve_execution({"profile": "sqleval", "ties": "gold"})
    assert not compare_results(gold, pred, strict, ordered=True, tie_groups=[0, 2]).match


def test_tie_groups_with_set_semantics_follow_the_deduplicated_gold():
    options = resolve_execution({"profile": "sqleval", "duplicates": "set"})
    gold = QueryResult.of([(1, "a"), (1, "b"), (1, "a"), (2, "c")])
    pred = QueryResult.of([(1, "b"), (1, "a"), (2, "c"), (2, "c")])
    assert compare_results(gold, pred, options, ordered=True, tie_groups=[0, 3]).match
    moved = QueryResult.of([(1, "b"), (2, "c"), (1, "a")])
    expect(compare_results(gold, moved, options, ordered=True, tie_groups=[0, 3]), "order")


# ----------------------------------------------------------------------------- duplicates


@pytest.mark.parametrize(
    ("profile", "outcome"),
    [("sqleval", "duplicates"), ("test-suite", "duplicates"), ("bird", "match"), ("mro", "duplicates"), ("logiccat", "duplicates")],
)
def test_same_rows_with_different_duplicate_counts(profile, outcome):
    verdict = judge(profile, "SELECT a FROM t", [(1,), (1,), (2,)], [(1,), (2,), (2,)])
    expect(verdict, outcome)
    if outcome == "duplicates":
        assert verdict.detail == "same rows but different duplicate counts"
        assert verdict.gold_only_rows == ((1,),)
        assert verdict.pred_only_rows == ((2,),)


@pytest.mark.parametrize(
    ("profile", "outcome"),
    [("sqleval", "duplicates"), ("test-suite", "duplicates"), ("bird", "match"), ("mro", "duplicates"), ("logiccat", "duplicates")],
)
def test_a_missing_duplicate_changes_the_row_count(profile, outcome):
    verdict = judge(profile, "SELECT a FROM t", [(1,), (1,)], [(1,)])
    expect(verdict, outcome)
    if outcome == "duplicates":
        assert verdict.detail == "same rows but different duplicate counts: gold has 2 rows, the prediction 1"


def test_ordered_set_semantics_drop_repeated_rows_first():
    options = {"profile": "mro", "duplicates": "set"}
    expect(judge(options, "SELECT a FROM t", [(1,), (1,), (2,)], [(1,), (2,), (2,)]), "match")
    expect(judge(options, "SELECT a FROM t", [(1,), (2,), (1,)], [(1,), (2,)]), "match")
    expect(judge(options, "SELECT a FROM t", [(2,), (1,)], [(1,), (2,), (1,)]), "order")


def test_set_semantics_count_distinct_rows():
    verdict = judge("bird", "SELECT a FROM t", [(1,), (2,), (2,)], [(1,), (1,)])
    expect(verdict, "row_count")
    assert verdict.detail == "gold has 2 distinct rows, the prediction 1"


# ----------------------------------------------------------------------------- columns


@pytest.mark.parametrize(
    ("profile", "outcome"),
    [("sqleval", "match"), ("test-suite", "match"), ("bird", "values"), ("mro", "match"), ("logiccat", "values")],
)
def test_permuted_columns(profile, outcome):
    verdict = judge(profile, "SELECT id, name FROM t", [(1, "a"), (2, "b")], [("a", 1), ("b", 2)])
    expect(verdict, outcome)
    if outcome == "match":
        assert verdict.column_mapping == (1, 0)


def test_column_names_are_never_used():
    verdict = judge("sqleval", "SELECT x FROM t", [(1,)], [(1,)], gold_columns=["x"], pred_columns=["something_else"])
    expect(verdict, "match")


@pytest.mark.parametrize("profile", PROFILES)
def test_extra_column_fails(profile):
    verdict = judge(profile, "SELECT a FROM t", [(1,)], [(1, 2)])
    expect(verdict, "column_count")
    assert verdict.detail == "gold has 1 column, the prediction 2"


@pytest.mark.parametrize("profile", PROFILES)
def test_missing_column_fails(profile):
    verdict = judge(profile, "SELECT a, b FROM t", [(1, 2)], [(1,)])
    expect(verdict, "column_count")
    assert verdict.detail == "gold has 2 columns, the prediction 1"
    assert verdict.column_mapping is None


def test_fingerprints_tie_but_only_one_mapping_verifies():
    # a and b hold the same values {1, 2, 3}; only c tells them apart
    gold = [(1, 1, "x"), (2, 3, "y"), (3, 2, "z")]
    pred = [("z", 2, 3), ("x", 1, 1), ("y", 3, 2)]  # columns (c, b, a), rows shuffled
    verdict = judge("sqleval", "SELECT a, b, c FROM t", gold, pred)
    expect(verdict, "match")
    assert verdict.column_mapping == (2, 1, 0)


def test_fingerprints_tie_and_no_mapping_verifies():
    gold = [(1, 1, "x"), (2, 3, "y"), (3, 2, "z")]
    pred = [("x", 1, 1), ("y", 2, 2), ("z", 3, 3)]
    expect(judge("sqleval", "SELECT a, b, c FROM t", gold, pred), "values")


def test_identical_columns_are_interchangeable():
    gold = [(value, value, value % 3) for value in range(50)]
    pred = [(value % 3, value, value) for value in reversed(range(50))]
    verdict = judge("sqleval", "SELECT a, b, c FROM t", gold, pred)
    expect(verdict, "match")
    assert sorted(verdict.column_mapping) == [0, 1, 2]


def test_latin_square_columns_match_without_search():
    # every row and every column holds 0..10: test-suite's permutation search does not finish on this
    size = 11
    gold = [tuple((row + column) % size for column in range(size)) for row in range(size)]
    order = list(range(size))
    random.Random(3).shuffle(order)
    pred = [tuple(row[index] for index in order) for row in reversed(gold)]
    verdict = judge("sqleval", "SELECT * FROM t", gold, pred)
    expect(verdict, "match")


def test_twelve_columns_sharing_one_value_set_finish_fast():
    rows, width = 3000, 12
    rng = random.Random(7)
    gold = [tuple((row + 7 * column) % rows for column in range(width)) for row in range(rows)]
    order = list(range(width))
    rng.shuffle(order)
    pred = [tuple(row[index] for index in order) for row in gold]
    rng.shuffle(pred)
    broken = list(pred)
    broken[0] = (broken[0][1], broken[0][0], *broken[0][2:])
    start = time.perf_counter()
    matched = judge("sqleval", "SELECT * FROM t", gold, pred)
    missed = judge("sqleval", "SELECT * FROM t", gold, broken)
    assert time.perf_counter() - start < 2.0
    expect(matched, "match")
    assert tuple(order.index(column) for column in range(width)) == matched.column_mapping
    expect(missed, "values")


def test_twelve_columns_with_few_values_finish_fast():
    rng = random.Random(11)
    gold = [tuple(rng.randrange(3) for _ in range(12)) for _ in range(2000)]
    pred = [row[6:] + row[:6] for row in gold]
    rng.shuffle(pred)
    start = time.perf_counter()
    verdict = judge("sqleval", "SELECT * FROM t", gold, pred)
    assert time.perf_counter() - start < 2.0
    expect(verdict, "match")


# ----------------------------------------------------------------------------- values


@pytest.mark.parametrize("profile", PROFILES)
def test_null_equals_null(profile):
    expect(judge(profile, "SELECT a, b FROM t", [(None, 1), (2, None)], [(None, 1), (2, None)]), "match")


@pytest.mark.parametrize("profile", PROFILES)
def test_nulls_distinct_never_match(profile):
    options = {"profile": profile, "nulls": "distinct"}
    expect(judge(options, "SELECT a, b FROM t", [(None, 1)], [(None, 1)]), "values")
    expect(judge(options, "SELECT a, b FROM t", [(3, 1)], [(3, 1)]), "match")


@pytest.mark.parametrize("profile", PROFILES)
def test_int_and_float_of_equal_value_match(profile):
    expect(judge(profile, "SELECT a FROM t", [(1,), (2,)], [(1.0,), (2.0,)]), "match")


@pytest.mark.parametrize("profile", PROFILES)
def test_float_sums_differ_unless_float_decimals(profile):
    expect(judge(profile, "SELECT a FROM t", [(0.1 + 0.2,)], [(0.3,)]), "values")
    expect(judge({"profile": profile, "float_decimals": 6}, "SELECT a FROM t", [(0.1 + 0.2,)], [(0.3,)]), "match")


@pytest.mark.parametrize("profile", PROFILES)
def test_text_one_is_not_number_one(profile):
    expect(judge(profile, "SELECT a FROM t", [("1",)], [(1,)]), "values")


def test_nan_matches_nan():
    expect(judge("sqleval", "SELECT a FROM t", [(float("nan"), 1)], [(float("nan"), 1)]), "match")


def test_values_miss_explains_and_shows_examples():
    gold = [(1, "x"), (2, "y"), (3, "z")]
    pred = [("x", 1), ("q", 2), ("z", 4)]
    verdict = judge("sqleval", "SELECT id, name FROM t", gold, pred)
    expect(verdict, "values")
    assert verdict.detail == "2 gold rows are missing from the prediction, 2 predicted rows are not in the gold"
    assert verdict.column_mapping == (1, 0)
    assert verdict.gold_only_rows == ((2, "y"), (3, "z"))
    assert verdict.pred_only_rows == (("q", 2), ("z", 4))


def test_example_rows_are_at_most_five():
    verdict = judge("sqleval", "SELECT a FROM t", [(n,) for n in range(20)], [(n,) for n in range(100, 120)])
    expect(verdict, "values")
    assert verdict.detail == "20 gold rows are missing from the prediction, 20 predicted rows are not in the gold"
    assert len(verdict.gold_only_rows) == len(verdict.pred_only_rows) == 5


def test_row_count_miss_shows_the_missing_rows():
    verdict = judge("sqleval", "SELECT a FROM t", [(1,), (2,), (3,)], [(1,), (2,)])
    expect(verdict, "row_count")
    assert verdict.detail == "gold has 3 rows, the prediction 2"
    assert verdict.gold_only_rows == ((3,),)
    assert verdict.pred_only_rows == ()


def test_match_is_not_vacuous():
    verdict = judge("sqleval", "SELECT a FROM t", [(1,)], [(1,)])
    assert verdict.match and not verdict.vacuous
    assert verdict.column_mapping == (0,)


# ----------------------------------------------------------------------------- empty results


@pytest.mark.parametrize(
    ("empty", "gold_columns", "pred_columns", "outcome"),
    [
        ("match", ["a"], ["a"], "match"),
        ("match", ["a", "b"], ["a"], "match"),
        ("match_same_columns", ["a"], ["b"], "match"),
        ("match_same_columns", ["a", "b"], ["a"], "empty"),
        ("miss", ["a"], ["a"], "empty"),
    ],
)
def test_both_results_empty(empty, gold_columns, pred_columns, outcome):
    verdict = judge({"profile": "sqleval", "empty": empty}, "SELECT a FROM t", [], [], gold_columns=gold_columns, pred_columns=pred_columns)
    expect(verdict, outcome)
    assert verdict.vacuous is (outcome == "match")


@pytest.mark.parametrize(
    ("profile", "outcome"),
    [("sqleval", "empty"), ("test-suite", "match"), ("bird", "match"), ("mro", "empty"), ("logiccat", "match")],
)
def test_empty_results_with_different_column_counts(profile, outcome):
    verdict = judge(profile, "SELECT a, b FROM t", [], [], gold_columns=["a", "b"], pred_columns=["a"])
    expect(verdict, outcome)


@pytest.mark.parametrize("profile", PROFILES)
def test_one_empty_result_is_a_row_count_miss(profile):
    verdict = judge(profile, "SELECT a FROM t", [(1,)], [], pred_columns=["a"])
    expect(verdict, "row_count")
    assert verdict.detail == "gold has 1 row, the prediction 0"
    assert verdict.gold_only_rows == ((1,),)
    assert not verdict.vacuous


# ----------------------------------------------------------------------------- shortcuts stay exact
# Raw rows are compared first (nulls "equal"), with candidate column mappings from the column names,
# the identity and a key column; the normalised comparison follows whenever they cannot show a match.


def wide_table(rows=300, seed=5):
    rng = random.Random(seed)
    return [(index, rng.randrange(5), f"n{rng.randrange(40)}", rng.random(), index * 2) for index in range(rows)]


def shuffled_pred(gold, order, seed=9):
    rows = [tuple(row[index] for index in order) for row in gold]
    random.Random(seed).shuffle(rows)
    return rows


ORDER = (3, 0, 4, 2, 1)  # predicted column j is gold column ORDER[j]
EXPECTED_MAPPING = tuple(ORDER.index(column) for column in range(5))


@pytest.mark.parametrize("nulls", ["equal", "distinct"])
@pytest.mark.parametrize("names", ["kept", "renamed"])
def test_shuffled_columns_are_matched_by_content_with_or_without_names(nulls, names):
    gold = wide_table()
    gold_names = ("id", "grade", "name", "score", "twice")
    pred_names = tuple(gold_names[column] for column in ORDER) if names == "kept" else ("c0", "c1", "c2", "c3", "c4")
    options = resolve_execution({"profile": "sqleval", "nulls": nulls})
    verdict = compare_results(QueryResult(gold_names, gold), QueryResult(pred_names, shuffled_pred(gold, ORDER)), options, ordered=False)
    expect(verdict, "match")
    assert verdict.column_mapping == EXPECTED_MAPPING


def test_misleading_column_names_never_decide():
    gold = wide_table()
    names = ("id", "grade", "name", "score", "twice")
    lying = tuple(names)  # the prediction's columns are shuffled but keep the gold's names in the gold's order
    verdict = compare_results(QueryResult(names, gold), QueryResult(lying, shuffled_pred(gold, ORDER)), EXECUTION_PROFILES["sqleval"], ordered=False)
    expect(verdict, "match")
    assert verdict.column_mapping == EXPECTED_MAPPING
    # equal names and equal columns, but one value differs: a miss, whatever the names say
    changed = list(gold)
    changed[123] = (123, changed[123][1], "other", changed[123][3], 246)
    verdict = compare_results(QueryResult(names, gold), QueryResult(names, changed), EXECUTION_PROFILES["sqleval"], ordered=False)
    expect(verdict, "values")
    assert verdict.gold_only_rows == (gold[123],)


@pytest.mark.parametrize("nulls", ["equal", "distinct"])
def test_key_column_alignment_keeps_tie_groups(nulls):
    options = resolve_execution({"profile": "sqleval", "nulls": nulls})
    gold = sorted(wide_table(), key=lambda row: (row[1], row[0]))
    starts = tie_group_starts(gold, [1])
    within = sorted(gold, key=lambda row: (row[1], -row[0]))  # tied rows reversed
    pred = [tuple(row[index] for index in ORDER) for row in within]
    verdict = compare_results(QueryResult.of(gold), QueryResult.of(pred), options, ordered=True, tie_groups=starts)
    expect(verdict, "match")
    assert verdict.column_mapping == EXPECTED_MAPPING
    across = list(within)
    across[0], across[-1] = across[-1], across[0]  # two rows swapped across tie groups
    pred = [tuple(row[index] for index in ORDER) for row in across]
    expect(compare_results(QueryResult.of(gold), QueryResult.of(pred), options, ordered=True, tie_groups=starts), "order")


def test_values_that_only_agree_after_normalising_still_match_through_the_key():
    gold = [(index, float("nan") if index % 3 == 0 else index / 4, Decimal(index) / 10) for index in range(200)]
    pred = [(row[2], float("nan") if row[0] % 3 == 0 else row[1], row[0]) for row in reversed(gold)]
    verdict = judge("sqleval", "SELECT a, b, c FROM t", gold, pred)
    expect(verdict, "match")
    assert verdict.column_mapping == (2, 1, 0)
    rounded = [(row[0], row[1] + 1e-9, row[2]) for row in gold]
    expect(judge("sqleval", "SELECT a, b, c FROM t", gold, rounded), "values")
    expect(judge({"profile": "sqleval", "float_decimals": 6}, "SELECT a, b, c FROM t", gold, rounded), "match")


def test_strict_order_reads_the_mapping_off_the_rows():
    gold = QueryResult.of(wide_table())
    pred = QueryResult.of([tuple(row[index] for index in ORDER) for row in gold.rows])
    options = EXECUTION_PROFILES["sqleval"]
    verdict = compare_results(gold, pred, options, ordered=True)
    expect(verdict, "match")
    assert verdict.column_mapping == EXPECTED_MAPPING
    expect(compare_results(gold, QueryResult.of(pred.rows[::-1]), options, ordered=True), "order")


def reference_match(gold_rows, pred_rows, options, ordered, tie_groups) -> bool:
    """The definition, literally: some column mapping under which the normalised rows agree."""
    def normalised(rows):
        return [tuple(normalise_value(cell, float_decimals=options.float_decimals, nulls=options.nulls) for cell in row) for row in rows]

    def first_occurrences(rows):
        return list(dict.fromkeys(rows))

    gold, pred = normalised(gold_rows), normalised(pred_rows)
    width = len(gold[0])
    mappings = permutations(range(width)) if options.columns == "match" else [tuple(range(width))]
    for mapping in mappings:
        moved = [tuple(row[index] for index in mapping) for row in pred]
        if not ordered:
            agree = set(gold) == set(moved) if options.duplicates == "set" else Counter(gold) == Counter(moved)
        elif options.ties == "any" and tie_groups is not None:
            bounds = [*tie_groups, len(gold)]
            agree = len(gold) == len(moved) and all(
                Counter(gold[start:end]) == Counter(moved[start:end]) for start, end in zip(bounds, bounds[1:])
            )
        elif options.duplicates == "set":
            agree = first_occurrences(gold) == first_occurrences(moved)
        else:
            agree = gold == moved
        if agree:
            return True
    return False


@pytest.mark.parametrize("seed", range(30))
def test_every_path_agrees_with_the_definition(seed):
    rng = random.Random(seed)
    pools = [[0, 1, 2], [0, 1, 1.0, True, 2.5], ["a", "b", "A"], [None, 1, "a"], [0.1 + 0.2, 0.3, float("nan")], [Decimal("1.0"), 1, Decimal("0.1"), 0.1]]
    for _ in range(40):
        width, height = rng.randint(1, 4), rng.choice([1, 3, 8, 30])
        columns = [rng.choice(pools) for _ in range(width)]
        gold = [[rng.choice(pool) for pool in columns] for _ in range(height)]
        if rng.random() < 0.5:  # a key column
            key = rng.randrange(width)
            for index, row in enumerate(gold):
                row[key] = index * 3
        gold = [tuple(row) for row in gold]
        order = list(range(width))
        rng.shuffle(order)
        pred = [tuple(row[index] for index in order) for row in gold]
        change = rng.random()
        if change < 0.4:
            rng.shuffle(pred)
        elif change < 0.55 and height > 1:
            pred[0], pred[-1] = pred[-1], pred[0]
        if rng.random() < 0.3:
            position = rng.randrange(height)
            pred[position] = tuple(rng.choice([cell, 7, None, "b"]) for cell in pred[position])
        if rng.random() < 0.15:
            pred.append(rng.choice(pred))
        elif rng.random() < 0.15:
            pred[-1] = pred[0]  # as many rows, one repeated and one gold row lost
        options = resolve_execution({
            "profile": "sqleval",
            "duplicates": rng.choice(["bag", "set"]),
            "columns": rng.choice(["match", "match", "positional"]),
            "ties": rng.choice(["any", "gold"]),
            "nulls": rng.choice(["equal", "equal", "distinct"]),
            "float_decimals": rng.choice([None, None, 2]),
        })
        ordered = rng.random() < 0.5
        tie_groups = tie_group_starts(gold, [rng.randrange(width)]) if ordered and rng.random() < 0.6 else None
        if ordered and tie_groups is not None and options.ties == "any" and options.duplicates == "set":
            continue  # tie groups of deduplicated rows: see test_tie_groups_with_set_semantics_follow_the_deduplicated_gold
        verdict = compare_results(QueryResult.of(gold), QueryResult.of(pred), options, ordered=ordered, tie_groups=tie_groups)
        assert verdict.match == reference_match(gold, pred, options, ordered, tie_groups), (gold, pred, options, ordered, tie_groups)


@pytest.mark.parametrize("nulls", ["equal", "distinct"])
@pytest.mark.parametrize("columns", [(0, 1), (1, 0)])
def test_a_repeated_row_never_stands_in_for_a_lost_one(nulls, columns):
    # equal-length keys: the key column's total length cannot tell the two results apart
    gold = [(f"k{index}", index % 3) for index in range(10)]
    pred = [tuple(row[index] for index in columns) for row in gold]
    pred[-1] = pred[0]
    options = resolve_execution({"profile": "sqleval", "nulls": nulls})
    expect(compare_results(QueryResult.of(gold), QueryResult.of(pred), options, ordered=False), "values")
    tied = compare_results(QueryResult.of(gold), QueryResult.of(pred), options, ordered=True, tie_groups=[0, 5])
    expect(tied, "values")


@pytest.mark.parametrize("nulls", ["equal", "distinct"])
def test_rows_swapped_across_tie_groups_away_from_the_screened_rows(nulls):
    gold = [(index, index // 10) for index in range(40)]
    pred = list(gold)
    pred[3], pred[13] = pred[13], pred[3]
    options = resolve_execution({"profile": "sqleval", "nulls": nulls})
    tie_groups = tie_group_starts(gold, [1])
    expect(compare_results(QueryResult.of(gold), QueryResult.of(pred), options, ordered=True, tie_groups=tie_groups), "order")
    pred = list(gold)
    pred[3], pred[5] = pred[5], pred[3]  # inside one tie group: allowed
    expect(compare_results(QueryResult.of(gold), QueryResult.of(pred), options, ordered=True, tie_groups=tie_groups), "match")
