"""Soft Execution F1 (MRO paper 2.1.2), against hand-computed values and the formula itself."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from pytest_sqleval.metrics.soft_f1 import soft_f1
from pytest_sqleval.results import QueryResult


def score(gold_rows, pred_rows, **options) -> float:
    return soft_f1(QueryResult.of(gold_rows), QueryResult.of(pred_rows), **options)


def reference_soft_f1(gold_rows, pred_rows) -> float:
    """The paper's formulas written out literally (no shortcuts), for cross-checking; in exact fractions,
    rounded once at the end (soft_f1 returns the correctly rounded value)."""
    if not gold_rows or not pred_rows:
        return 1.0 if not gold_rows and not pred_rows else 0.0
    gold_columns = [list(column) for column in zip(*gold_rows)]
    pred_columns = [list(column) for column in zip(*pred_rows)]

    def f1(precision, recall):
        return Fraction(0) if precision + recall == 0 else 2 * precision * recall / (precision + recall)

    pair = [
        [
            f1(
                Fraction(sum(value in gold_column for value in pred_column), len(pred_column)),
                Fraction(sum(value in pred_column for value in gold_column), len(gold_column)),
            )
            for pred_column in pred_columns
        ]
        for gold_column in gold_columns
    ]
    precision = sum(max(pair[n][t] for n in range(len(gold_columns))) for t in range(len(pred_columns))) / len(pred_columns)
    recall = sum(max(pair[n]) for n in range(len(gold_columns))) / len(gold_columns)
    return float(f1(precision, recall))


def test_paper_example_shop_without_its_count():
    assert score([("A", 5)], [("A",)]) == pytest.approx(2 / 3)


def test_paper_example_limit_4_against_limit_5():
    gold = [(n, f"name{n}", n + 0.5) for n in range(5)]
    assert score(gold, gold[:4]) == pytest.approx(8 / 9)


def test_identical_results_score_one():
    rows = [(1, "a"), (2, "b"), (2, "b")]
    assert score(rows, rows) == 1.0


def test_row_and_column_order_never_matter():
    gold = [(1, "a", 2.5), (2, "b", 3.5), (3, "c", 4.5)]
    pred = [(4.5, 3, "c"), (2.5, 1, "a"), (3.5, 2, "b")]
    assert score(gold, pred) == 1.0


def test_disjoint_results_score_zero():
    assert score([(1,), (2,)], [(3,), (4,)]) == 0.0


def test_duplicated_values_count_in_the_sums():
    # precision 1/2 (1 is in the gold, 3 is not), recall 2/3 (both 1s are predicted, 2 is not)
    assert score([(1,), (1,), (2,)], [(1,), (3,)]) == pytest.approx(4 / 7)


def test_one_predicted_column_may_be_the_best_partner_of_several_gold_columns():
    assert score([(1, 1), (2, 2)], [(1,), (2,)]) == 1.0


@pytest.mark.parametrize(("gold", "pred", "expected"), [([], [], 1.0), ([(1,)], [], 0.0), ([], [(1,)], 0.0)])
def test_results_without_rows(gold, pred, expected):
    assert score(gold, pred) == expected


def test_values_are_normalised_first():
    assert score([(1,), (2,)], [(1.0,), (2.0,)]) == 1.0
    assert score([(0.1 + 0.2,)], [(0.3,)]) == 0.0
    assert score([(0.1 + 0.2,)], [(0.3,)], float_decimals=3) == 1.0
    assert score([(float("nan"),)], [(float("nan"),)]) == 1.0


def test_nulls_option():
    assert score([(None, 1)], [(None, 1)]) == 1.0
    # the NULL columns score 0 against everything: precision 1/2, recall 1/2
    assert score([(None, 1)], [(None, 1)], nulls="distinct") == pytest.approx(1 / 2)


def test_text_is_not_a_number():
    assert score([("1",)], [(1,)]) == 0.0


@pytest.mark.parametrize("seed", range(40))
def test_agrees_with_the_literal_formula(seed):
    rng = random.Random(seed)
    pool = [0, 1, 2, 3, "a", "b", None, 2.5]

    def table():
        width, height = rng.randint(1, 4), rng.randint(1, 6)
        return [tuple(rng.choice(pool) for _ in range(width)) for _ in range(height)]

    gold, pred = table(), table()
    assert score(gold, pred) == pytest.approx(reference_soft_f1(gold, pred))


# ----------------------------------------------------------------------------- shortcuts keep the formula
# Equal value sets are shown by aligning rows through a gold key column (raw rows when nulls are equal,
# else normalised columns); the scores must stay exactly the formula's.


def keyed_table(rng, height):
    pool = [0, 1, 2, "a", "b", None, 2.5]
    width = rng.randint(1, 4)
    key = rng.randrange(width)
    return [tuple(index * 7 if column == key else rng.choice(pool) for column in range(width)) for index in range(height)]


@pytest.mark.parametrize("seed", range(40))
def test_keyed_shortcuts_agree_with_the_literal_formula_exactly(seed):
    rng = random.Random(seed)
    gold = keyed_table(rng, rng.choice([1, 4, 12, 40]))
    order = list(range(len(gold[0])))
    rng.shuffle(order)
    pred = [tuple(row[index] for index in order) for row in gold]
    rng.shuffle(pred)
    change = rng.random()
    if change < 0.3:
        pred += rng.sample(pred, k=min(3, len(pred)))  # repeated rows: every gold row is still hit
    elif change < 0.5:
        pred[0] = tuple(rng.choice([cell, 99, "z"]) for cell in pred[0])
    elif change < 0.6:
        pred = pred[: max(1, len(pred) // 2)]
    elif change < 0.8:
        pred[-1] = pred[0]  # as many rows, but one gold row is never hit
    expected = reference_soft_f1(gold, pred)
    assert score(gold, pred) == expected
    if all(cell is not None for row in gold + pred for cell in row):
        assert score(gold, pred, nulls="distinct") == expected  # no NULL: the normalised path, same score


def test_repeated_predicted_rows_still_score_one():
    gold = [(index, f"name{index}") for index in range(50)]
    pred = [(name, index) for index, name in gold] + [("name3", 3)]
    assert score(gold, pred) == 1.0
    assert score(gold, pred, nulls="distinct") == 1.0


def test_one_changed_column_is_scored_from_its_values():
    gold = [(index, index % 4, f"n{index}") for index in range(40)]
    pred = [(name, index, grade + 2) for index, grade, name in gold]  # half the grades are other values
    expected = reference_soft_f1(gold, pred)
    assert expected < 1.0
    assert score(gold, pred) == expected
    assert score(gold, pred, nulls="distinct") == expected
