"""The metrics on inputs nobody tuned for, each value worked out by hand from the papers' formulas and
the evaluator spec (the arithmetic is in each test), through the public pure functions and through
``pytest --sqleval`` on real SQLite / DuckDB files (serial and ``-n 2``, JSON report values checked).

Sources: MRO paper 2.1.1-2.1.3 and 3.2 (EX with one-to-one column matching, Soft Execution F1, Execution
Error Count, averages grouped by gold SQL), LogicCat (VES, EX), SParC (question / interaction match), Spider
hardness (evaluators.md 1.4), BIRD mini-dev (``evaluation_f1.py``, ``evaluation_ves.py``).
"""

from __future__ import annotations

import json
import sqlite3
import textwrap
from datetime import date, datetime
from pathlib import Path

import pytest

from pytest_sqleval.aggregate import aggregate_suite, gold_key
from pytest_sqleval.comparison import EXECUTION_PROFILES, resolve_execution
from pytest_sqleval.metrics.bird import bird_soft_f1, ves_reward, ves_time_ratio
from pytest_sqleval.metrics.execution_match import compare_results
from pytest_sqleval.metrics.hardness import classify_hardness
from pytest_sqleval.metrics.soft_f1 import soft_f1
from pytest_sqleval.results import QueryResult
from pytest_sqleval.schema import Schema

PROFILES = tuple(EXECUTION_PROFILES)


def result(rows, width=None):
    rows = [tuple(row) for row in rows]
    if width is None:
        width = len(rows[0]) if rows else 1
    return QueryResult(columns=tuple(f"c{i}" for i in range(width)), rows=rows)


def columns(*cols):
    """A result given column by column."""
    return result(list(zip(*cols)), width=len(cols))


# ============================================================================ bugs found (failing before the fix)


def test_set_semantics_with_ties_when_a_whole_tie_group_repeats_earlier_rows():
    """`duplicates: set` + gold ORDER BY with ties. Gold rows a(k=1), a(k=2), b(k=3): three tie groups
    (0, 1, 2). Dropping repeated rows keeps a (group 0) and b (group 2); group 1 is gone. The prediction
    a, b (deduplicated: a, b) is in the gold's order, so it matches; b, a does not (reason `order`).
    Before the fix the kept gold rows kept their ids (0, 2) while the prediction's were 0, 1, so the exact
    gold order was reported as an `order` miss."""
    options = resolve_execution({"profile": "sqleval", "duplicates": "set"})
    gold = result([("a",), ("a",), ("b",)])
    same = compare_results(gold, result([("a",), ("b",)]), options, ordered=True, tie_groups=(0, 1, 2))
    assert same.match and same.reason is None
    repeated = compare_results(gold, result([("a",), ("b",), ("b",)]), options, ordered=True, tie_groups=(0, 1, 2))
    assert repeated.match
    swapped = compare_results(gold, result([("b",), ("a",)]), options, ordered=True, tie_groups=(0, 1, 2))
    assert not swapped.match and swapped.reason == "order"
    # two columns, the first tie group (two rows) survives, the second is a repeat of the first's row:
    # gold (x,1) g0, (y,1) g0, (x,1) g1, (z,2) g2 -> kept (x,1) (y,1) | (z,2); (y,1),(x,1),(z,2) matches.
    gold2 = result([("x", 1), ("y", 1), ("x", 1), ("z", 2)])
    pred2 = result([(1, "y"), (1, "x"), (2, "z")])
    assert compare_results(gold2, pred2, options, ordered=True, tie_groups=(0, 2, 3)).match


def test_bird_soft_f1_on_list_and_json_cells():
    """DuckDB lists and PostgreSQL arrays / JSON arrive as Python lists and dicts (unhashable). BIRD's
    dedupe (`dict.fromkeys`) crashed on them and the whole case became an `internal error`.
    Gold [([1,2],'a'), ([3],'b')], prediction [([1,2],'a'), ([3],'x')], n = 2:
    row 1: match 2/2; row 2: [3] found, 'x' not: match 1/2, pred_only 1/2; 'b' missing: gold_only 1/2.
    P = 1.5/2 = 0.75, R = 1.5/2 = 0.75, F1 = 0.75."""
    gold = [([1, 2], "a"), ([3], "b")]
    assert bird_soft_f1(gold, [([1, 2], "a"), ([3], "x")]) == pytest.approx(0.75)
    # duplicates are still dropped: the repeated first row adds nothing
    assert bird_soft_f1(gold, [([1, 2], "a"), ([1, 2], "a"), ([3], "b")]) == 1.0
    # a list's order is its value: [2, 1] is not [1, 2]
    assert bird_soft_f1([([1, 2],)], [([2, 1],)]) == 0.0
    assert bird_soft_f1([({"k": [1]},)], [({"k": [1]},)]) == 1.0


# ============================================================================ MRO Soft Execution F1 by hand


def test_soft_f1_is_the_exact_value_rounded_once():
    """The F1 of two float means landed an ulp off the formula's value: gold with 5 columns, a prediction with
    3 of them (rows right) is Precision 3/3 = 1, Recall 3/5, F1 = 2*(3/5)/(8/5) = 3/4 exactly, but came out
    0.7499999999999999 and failed `soft_f1 >= 0.75`. One gold column [1, 2, 3] against [1, 2]: F1[n,t] =
    2*1*(2/3)/(5/3) = 4/5, then Precision = Recall = 4/5 -> 0.8 (came out 0.8000000000000002)."""
    gold = result([(i, i + 10, i + 20, i + 30, i + 40) for i in range(4)])
    assert soft_f1(gold, result([(i, i + 10, i + 20) for i in range(4)])) == 0.75
    assert soft_f1(columns([1, 2, 3]), columns([1, 2])) == 0.8
    # G = [1,2,3,4,5] vs P = [1,2,3] plus an unrelated text column: F1[n,t] = 2*1*(3/5)/(8/5) = 3/4;
    # Precision = (3/4 + 0)/2 = 3/8, Recall = 3/4, F1 = 2*(3/8)(3/4)/(9/8) = 1/2.
    assert soft_f1(columns([1, 2, 3, 4, 5]), columns([1, 2, 3], ["x", "y", "z"])) == 0.5


@pytest.mark.parametrize("seed", range(6))
def test_soft_f1_equals_the_formula_in_exact_fractions(seed):
    """The paper's formula computed in fractions and rounded once, on random results with repeated values,
    NULLs, 1 / 1.0 / True and text."""
    import random
    from fractions import Fraction

    rng = random.Random(seed)
    pool = [0, 1, 2, 3, 1.0, True, "a", "b", None, 2.5]
    for _ in range(150):
        gold = [tuple(rng.choice(pool) for _ in range(rng.randint(1, 4)))]
        gold += [tuple(rng.choice(pool) for _ in gold[0]) for _ in range(rng.randint(0, 8))]
        pred = [tuple(rng.choice(pool) for _ in range(rng.randint(1, 4)))]
        pred += [tuple(rng.choice(pool) for _ in pred[0]) for _ in range(rng.randint(0, 8))]
        gold_cols, pred_cols = [list(c) for c in zip(*gold)], [list(c) for c in zip(*pred)]

        def f1(p, r):
            return Fraction(0) if p + r == 0 else 2 * p * r / (p + r)

        pair = [[f1(Fraction(sum(v in g for v in p), len(p)), Fraction(sum(v in p for v in g), len(g)))
                 for p in pred_cols] for g in gold_cols]
        precision = sum(max(pair[n][t] for n in range(len(gold_cols))) for t in range(len(pred_cols))) / len(pred_cols)
        recall = sum(max(row) for row in pair) / len(gold_cols)
        assert soft_f1(result(gold), result(pred)) == float(f1(precision, recall)), (gold, pred)



@pytest.mark.parametrize(("gold", "pred", "expected"), [
    pytest.param(
        # F1(id,id1) = F1(id,id2) = 1; y=[1,1,2,2,3] vs id=[1..5]: precision 3/5 (1,2,3 of the ids are y values),
        # recall 5/5 -> F1 = 2*.6/1.6 = .75. Precision = (1+1)/2 = 1, Recall = (1+.75)/2 = .875,
        # score = 2*.875/1.875 = 14/15.
        columns([1, 2, 3, 4, 5], [1, 1, 2, 2, 3]), columns([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]), 14 / 15,
        id="duplicated-predicted-column"),
    pytest.param(
        # one predicted column is the best partner of both gold columns: F1(G1,P) = 1; G2=[1,2,3,5] vs P=[1,2,3,4]:
        # 3/4 and 3/4 -> .75. Precision = 1/1, Recall = (1+.75)/2 = .875 -> 14/15 (a one-to-one pairing would
        # leave G2 at 0 and give 2/3).
        columns([1, 2, 3, 4], [1, 2, 3, 5]), columns([1, 2, 3, 4]), 14 / 15, id="shared-best-partner"),
    pytest.param(
        # an extra predicted column: F1(a,a) = 1, F1(a,b) = 0 (text vs numbers). Precision = (1+0)/2, Recall = 1/1,
        # score = 2*.5*1/1.5 = 2/3.
        columns([1, 2, 3]), columns([1, 2, 3], ["x", "y", "z"]), 2 / 3, id="extra-column"),
    pytest.param(
        # repeated values count per cell: gold [a,a,a,b], pred [a,c]: precision 1/2, recall 3/4,
        # F1 = 2*(1/2)(3/4)/(5/4) = 0.6; one column each side -> 0.6.
        columns(["a", "a", "a", "b"]), columns(["a", "c"]), 0.6, id="repeated-values"),
    pytest.param(
        # NULL = NULL: gold [NULL, 1] vs pred [NULL, 2]: precision 1/2, recall 1/2 -> 0.5.
        columns([None, 1]), columns([None, 2]), 0.5, id="null-equals-null"),
    pytest.param(
        # 1 = 1.0 = True by value: every cell found both ways -> 1.
        columns([1, 2, 0]), columns([1.0, 2.0, False]), 1.0, id="int-float-bool"),
    pytest.param(
        # '1' is text, 1 a number: nothing in common -> 0.
        columns(["1", "2"]), columns([1, 2]), 0.0, id="text-vs-number"),
    pytest.param(
        # no float tolerance: 0.1+0.2 != 0.3, 1.0 = 1.0: precision 1/2, recall 1/2 -> 0.5.
        columns([0.3, 1.0]), columns([0.1 + 0.2, 1.0]), 0.5, id="float-sum"),
    pytest.param(
        # 1e-9 apart is a different value.
        columns([1.0]), columns([1.0 + 1e-9]), 0.0, id="floats-1e-9-apart"),
    pytest.param(
        # a mixed column: gold [1, 'a', NULL] vs pred ['a', 1.0, 'b']: precision 2/3 ('a', 1.0), recall 2/3
        # (1, 'a') -> 2/3.
        columns([1, "a", None]), columns(["a", 1.0, "b"]), 2 / 3, id="mixed-types-in-a-column"),
    pytest.param(
        # dates compare with their own ==: a date is not its ISO text nor the midnight datetime.
        columns([date(2020, 1, 1), date(2021, 6, 30)]), columns(["2020-01-01", datetime(2021, 6, 30)]), 0.0,
        id="dates"),
    pytest.param(
        # the same dates in another row order -> 1.
        columns([date(2020, 1, 1), date(2021, 6, 30)]), columns([date(2021, 6, 30), date(2020, 1, 1)]), 1.0,
        id="dates-reordered"),
    pytest.param(
        # both without rows: 1 whatever the column counts; exactly one without rows: 0.
        result([], 1), result([], 3), 1.0, id="both-empty-different-widths"),
    pytest.param(columns([1]), result([], 1), 0.0, id="prediction-empty"),
    pytest.param(result([], 2), columns([1], [2]), 0.0, id="gold-empty"),
])
def test_soft_f1_worked_examples(gold, pred, expected):
    assert soft_f1(gold, pred) == pytest.approx(expected, abs=1e-12)


def test_soft_f1_options_change_what_equal_means():
    # float_decimals=2: 0.1+0.2 and 0.3 both round to 0.3 -> every cell found -> 1.
    assert soft_f1(columns([0.3, 1.0]), columns([0.1 + 0.2, 1.0]), float_decimals=2) == 1.0
    # float_decimals=6 absorbs 1e-9.
    assert soft_f1(columns([1.0]), columns([1.0 + 1e-9]), float_decimals=6) == 1.0
    # nulls=distinct: gold [NULL, 1] vs pred [NULL, 2] have nothing in common -> precision = recall = 0 -> 0.
    assert soft_f1(columns([None, 1]), columns([None, 2]), nulls="distinct") == 0.0
    # ... and a column of NULLs never scores, even against itself: F1(NULLs, NULLs) = 0, F1([1,2],[1,2]) = 1,
    # the cross pairs 0: Precision = (0 + 1)/2, Recall = (0 + 1)/2 -> 0.5.
    assert soft_f1(columns([None, None], [1, 2]), columns([None, None], [1, 2]), nulls="distinct") == 0.5


def test_soft_f1_on_very_wide_rows():
    """One row of 200 distinct values; the prediction returns the first 100 of them. Each predicted
    column equals exactly one gold column (F1 1), the other gold columns find nothing:
    Precision = 100/100 = 1, Recall = 100/200 = 0.5, score = 2*.5/1.5 = 2/3."""
    gold = result([tuple(range(200))])
    pred = result([tuple(range(100))])
    assert soft_f1(gold, pred) == pytest.approx(2 / 3)
    # the same 200 values in reverse column order: every column has its partner -> 1
    assert soft_f1(gold, result([tuple(reversed(range(200)))])) == 1.0


# ============================================================================ execution match, per profile


def judge(profile, gold, pred, *, ordered=False, tie_groups=None):
    return compare_results(gold, pred, resolve_execution(profile), ordered=ordered, tie_groups=tie_groups)


@pytest.mark.parametrize("profile", PROFILES)
def test_duplicated_columns_are_matched_one_to_one(profile):
    """MRO 2.1.1: every gold column needs its own predicted column. Gold (id, id) against (id, y) misses
    in every profile (the id column cannot serve twice; positional profiles compare y with id);
    (id, id) against (id, id) matches."""
    ids, ys = [1, 2, 3], [1, 1, 2]
    assert not judge(profile, columns(ids, ids), columns(ids, ys)).match
    assert not judge(profile, columns(ids, ys), columns(ids, ids)).match
    assert judge(profile, columns(ids, ids), columns(ids, ids)).match


@pytest.mark.parametrize("profile", PROFILES)
def test_booleans_are_their_numbers_and_text_is_not(profile):
    """SQLite returns 1/0 where DuckDB and PostgreSQL return booleans; True = 1 and False = 0 as in Python
    (and in every reference evaluator, which compares with ==). '1' is text."""
    assert judge(profile, columns([True, False]), columns([1, 0])).match
    assert judge(profile, columns([1.0, 0.0]), columns([True, False])).match
    assert not judge(profile, columns([1, 0]), columns(["1", "0"])).match


@pytest.mark.parametrize(("profile", "match"), [
    ("sqleval", False), ("test-suite", True), ("bird", True), ("mro", False), ("logiccat", True),
])
def test_empty_against_empty_with_different_column_counts(profile, match):
    """test-suite `result_eq` (both empty -> True before any count), BIRD `set() == set()` and LogicCat
    `[] == []` all match; MRO checks the dimensions first (0x1 vs 0x2 differ), and so does `sqleval`."""
    verdict = judge(profile, result([], 1), result([], 2))
    assert verdict.match is match
    assert verdict.vacuous is match
    if not match:
        assert verdict.reason == "empty"


@pytest.mark.parametrize(("profile", "match"), [
    ("sqleval", True), ("test-suite", True), ("bird", False), ("mro", True), ("logiccat", False),
])
def test_a_mixed_type_column_moved(profile, match):
    """Columns [1, 'a', NULL] and [2.5, 2.5, 'x'] swapped; values equal as 1 = 1.0. Column matching
    profiles find the permutation, positional ones do not."""
    gold = columns([1, "a", None], [2.5, 2.5, "x"])
    pred = columns([2.5, 2.5, "x"], [1.0, "a", None])
    assert judge(profile, gold, pred, ordered=True).match is match


def test_mro_ex_needs_each_column_in_row_order_but_any_column_order():
    """MRO 2.1.1: same dimensions, then a one-to-one column correspondence with identical values in the
    same row order. Columns swapped, rows kept: match. Rows reordered (no ORDER BY in the gold): miss,
    reason `order`, where `sqleval` (no ORDER BY -> a bag of rows) matches."""
    gold = columns([1, 2, 3], ["a", "b", "c"])
    assert judge("mro", gold, columns(["a", "b", "c"], [1, 2, 3]), ordered=True).match
    moved = columns(["c", "a", "b"], [3, 1, 2])
    verdict = judge("mro", gold, moved, ordered=True)
    assert not verdict.match and verdict.reason == "order"
    assert judge("sqleval", gold, moved, ordered=False).match


def test_ties_any_versus_gold():
    """Gold ORDER BY y: rows (1,1) (2,1) | (3,2) (4,2) | (5,3), tie groups start at 0, 2, 4. The prediction
    orders the ties the other way: `ties: any` accepts it, `ties: gold` (test-suite) does not. Moving a
    row across groups fails both."""
    gold = result([(1, 1), (2, 1), (3, 2), (4, 2), (5, 3)])
    swapped = result([(2, 1), (1, 1), (4, 2), (3, 2), (5, 3)])
    assert judge("sqleval", gold, swapped, ordered=True, tie_groups=(0, 2, 4)).match
    assert judge("test-suite", gold, swapped, ordered=True, tie_groups=None).reason == "order"
    across = result([(1, 1), (3, 2), (2, 1), (4, 2), (5, 3)])
    assert judge("sqleval", gold, across, ordered=True, tie_groups=(0, 2, 4)).reason == "order"


# ============================================================================ BIRD Soft F1 and R-VES by hand


@pytest.mark.parametrize(("gold", "pred", "expected"), [
    # rows pair by position: [1,2,3] vs [3,2,1]: only the middle pair matches. match 1, pred_only 2, gold_only 2:
    # P = R = 1/3.
    ([(1,), (2,), (3,)], [(3,), (2,), (1,)], 1 / 3),
    # NULL is an ordinary value: (NULL, 1) vs (NULL, 2), n = 2: match 1/2, pred_only 1/2, gold_only 1/2 -> 1/2.
    ([(None, 1)], [(None, 2)], 0.5),
    # a narrower prediction: (a) vs gold (a, 1), n = 2, twice, and a third gold row unpaired:
    # match 1/2 + 1/2, gold_only 1/2 + 1/2 + 1, pred_only 0: P = 1, R = 1/3, F1 = 0.5.
    ([("a", 1), ("b", 2), ("c", 3)], [("a",), ("b",)], 0.5),
    # gold duplicates are dropped first: [(1,), (1,), (2,)] -> [(1,), (2,)], equal to the prediction -> 1.
    ([(1,), (1,), (2,)], [(1,), (2,)], 1.0),
    # 1 = 1.0 (Python ==), '1' is not 1: (1, '1') vs (1.0, 1): match: 1.0 in gold, 1 in gold -> 2/2;
    # gold '1' not in pred -> gold_only 1/2. P = 1, R = 1/1.5 = 2/3, F1 = 0.8.
    ([(1, "1")], [(1.0, 1)], 0.8),
])
def test_bird_soft_f1_worked_examples(gold, pred, expected):
    assert bird_soft_f1(gold, pred) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("ratio", "reward"), [
    (2.0, 1.25), (1.9999, 1.0), (1.0, 1.0), (0.9999, 0.75), (0.5, 0.75), (0.4999, 0.5), (0.25, 0.5),
    (0.2499, 0.25), (1e-9, 0.25), (0.0, 0.0),
])
def test_r_ves_reward_at_each_bucket_edge(ratio, reward):
    assert ves_reward(ratio) == reward


def test_r_ves_outlier_removal_by_hand():
    """99 ratios of 1.0 and one of 50: mean 1.49, population sd = sqrt(.99*.49^2 + .01*48.51^2) = 4.875,
    so 50 > 1.49 + 3*4.875 = 16.1 is dropped and the 1.0s stay: time ratio 1.0 -> reward 1.
    100 equal ratios: sd 0, the strict bounds drop all -> 0 (the official divides by zero -> 0)."""
    assert ves_time_ratio([1.0] * 99 + [50.0]) == 1.0
    assert ves_reward(ves_time_ratio([1.0] * 99 + [50.0])) == 1.0
    assert ves_time_ratio([3.0] * 100) == 0.0


# ============================================================================ Spider hardness at each boundary

SPIDER_SCHEMA = Schema.from_dict(
    {
        "singer": ["singer_id", "name", "country", "age"],
        "concert": ["concert_id", "concert_name", "year"],
        "singer_in_concert": ["concert_id", "singer_id"],
    },
    [("singer_in_concert", "singer_id", "singer", "singer_id"), ("singer_in_concert", "concert_id", "concert", "concert_id")],
)


@pytest.mark.parametrize(("sql", "counts", "level"), [
    # (c1, c2, others). easy: c1 <= 1, others = 0, c2 = 0.
    ("SELECT name FROM singer ORDER BY age", (1, 0, 0), "easy"),
    # BETWEEN's AND is not a connector: one condition.
    ("SELECT name FROM singer WHERE age BETWEEN 1 AND 2", (1, 0, 0), "easy"),
    # an OR in a JOIN's ON is dropped by the official parser (only AND-joined ON conditions are read).
    ("SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id "
     "OR T1.age = T2.concert_id", (1, 0, 0), "easy"),
    # medium, first rule: c1 <= 1 and others = 2 (two SELECT items, two WHERE conditions).
    ("SELECT name, age FROM singer WHERE age > 1 AND country = 'x'", (1, 0, 2), "medium"),
    # medium, second rule: c1 = 2 and others = 1.
    ("SELECT name, age FROM singer WHERE age > 1 ORDER BY age", (2, 0, 1), "medium"),
    # c1 = 2 (WHERE + one OR), others = 1 (two conditions).
    ("SELECT name FROM singer WHERE age > 1 OR age < 0", (2, 0, 1), "medium"),
    # LIKE counts in c1: WHERE + LIKE = 2.
    ("SELECT name FROM singer WHERE name LIKE 'a%'", (2, 0, 0), "medium"),
    # three FROM tables: c1 = 2 joins.
    ("SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id "
     "JOIN concert AS T3 ON T2.concert_id = T3.concert_id", (2, 0, 0), "medium"),
    # hard, first rule: others = 3 (two aggregates, two SELECT items, two WHERE conditions), c1 = 1.
    ("SELECT max(age), min(age) FROM singer WHERE age > 1 AND country = 'x'", (1, 0, 3), "hard"),
    # hard, second rule: c1 = 3, others = 2.
    ("SELECT name, age FROM singer WHERE age > 1 AND country = 'x' ORDER BY age LIMIT 1", (3, 0, 2), "hard"),
    # hard, third rule: c1 = 0, c2 = 1.
    ("SELECT name FROM singer UNION SELECT name FROM singer", (0, 1, 0), "hard"),
    # A UNION (B EXCEPT C): the grammar nests right, only the top UNION counts: c2 = 1.
    ("SELECT name FROM singer UNION SELECT name FROM singer EXCEPT SELECT name FROM singer", (0, 1, 0), "hard"),
    # a HAVING subquery is a condition value: c1 = 1 (GROUP BY), c2 = 1.
    ("SELECT country FROM singer GROUP BY country HAVING count(*) > (SELECT count(*) FROM concert)", (1, 1, 0), "hard"),
    # ORDER BY count(*) with count(*) selected: 2 aggregates; c1 = GROUP + ORDER + LIMIT = 3.
    ("SELECT country, count(*) FROM singer GROUP BY country ORDER BY count(*) DESC LIMIT 1", (3, 0, 2), "hard"),
    # the gap between the rules: c1 = 2 and others = 2 is neither medium nor hard -> extra.
    ("SELECT name, age FROM singer WHERE age > 1 AND country = 'x' ORDER BY age", (2, 0, 2), "extra"),
    # c1 = 3, others = 3 -> extra.
    ("SELECT max(age), min(age) FROM singer WHERE age > 1 AND country = 'x' ORDER BY age LIMIT 1", (3, 0, 3), "extra"),
    # c1 = 4 -> extra.
    ("SELECT name FROM singer WHERE age > 1 GROUP BY name ORDER BY name LIMIT 1", (4, 0, 0), "extra"),
    # c2 = 1 with others = 1 -> extra.
    ("SELECT name, age FROM singer INTERSECT SELECT name, age FROM singer", (0, 1, 1), "extra"),
    # c1 = WHERE + OR + 2 LIKE = 4.
    ("SELECT name FROM singer WHERE name LIKE 'a%' OR name LIKE 'b%'", (4, 0, 1), "extra"),
    # two IN subqueries: c2 = 2.
    ("SELECT name FROM singer WHERE age IN (SELECT age FROM singer WHERE age > 1) "
     "AND country IN (SELECT country FROM singer)", (1, 2, 1), "extra"),
])
def test_hardness_at_each_boundary(sql, counts, level):
    """Checked against the official `eval_hardness` (test-suite-sql-eval) on the same queries."""
    classified = classify_hardness(sql, SPIDER_SCHEMA)
    assert (classified.component1, classified.component2, classified.others) == counts
    assert classified.level == level and not classified.extended


# ============================================================================ exact set match


@pytest.mark.parametrize(("gold", "pred", "match"), [
    # an IN list is a set: the order and repeats of its values do not make another query (was a miss)
    ("SELECT name FROM singer WHERE age IN (1, 2)", "SELECT name FROM singer WHERE age IN (2, 1)", True),
    ("SELECT name FROM singer WHERE age IN (1, 2)", "SELECT name FROM singer WHERE age IN (2, 1, 1)", True),
    ("SELECT name FROM singer WHERE country NOT IN ('a', 'b')", "SELECT name FROM singer WHERE country NOT IN ('b', 'a')",
     True),
    # values are still compared
    ("SELECT name FROM singer WHERE age IN (1, 2)", "SELECT name FROM singer WHERE age IN (1, 3)", False),
    ("SELECT name FROM singer WHERE age NOT IN (1, 2)", "SELECT name FROM singer WHERE age IN (1, 2)", False),
    ("SELECT name FROM singer WHERE age IN (1, 2)", "SELECT name FROM singer WHERE age IN (SELECT age FROM singer)", False),
    # comparisons read either way round, AND-ed conditions in any order
    ("SELECT name FROM singer WHERE age > 1 AND age < 5", "SELECT name FROM singer WHERE 5 > age AND 1 < age", True),
])
def test_sqleval_exact_match_on_in_lists(gold, pred, match):
    from pytest_sqleval.metrics.exact_match import exact_match

    assert bool(exact_match(gold, pred, SPIDER_SCHEMA, profile="sqleval").match) is match


# ============================================================================ aggregates by hand


def test_gold_sql_variants_share_a_group():
    """MRO 3.2 groups identical gold SQL; white space and a trailing ';' do not make a new query."""
    variants = ["SELECT a FROM t", "SELECT a FROM t;", "  SELECT\ta\nFROM   t ;  ", "SELECT a FROM t\n;\n"]
    assert len({gold_key(v) for v in variants}) == 1
    assert gold_key("SELECT a FROM t") != gold_key("SELECT b FROM t")


def _record(index, gold, *, valid=True, ex=False, soft=0.0, kind=None):
    return {"index": index, "id": f"c{index}", "gold": gold, "valid": valid, "execution_match": ex,
            "execution_match_first": ex, "soft_f1": soft, "passed_rule": ex, "difficulty": "easy", "tags": [],
            "error": {"kind": kind, "message": "m"} if kind else None, "vacuous": False,
            "outcome": "passed" if ex else "missed", "exact_match": None}


def test_grouped_means_and_error_count_by_hand():
    """Gold A (three spellings): EX 1, 0, 0; soft 1, .5, 0 (the last one a syntax error).
    Gold B: EX 1, 1; soft 1, 1. Gold C: a runtime error.
    Plain: EX 3/6 = .5; soft 3.5/6; VES 4/6; errors 2 ({runtime: 1, syntax: 1}).
    Grouped: EX (1/3 + 1 + 0)/3 = 4/9; soft (1.5/3 + 1 + 0)/3 = .5; VES (2/3 + 1 + 0)/3 = 5/9;
    error_count = sum of the groups' error rates = 1/3 + 0 + 1 = 4/3."""
    records = [
        _record(0, "SELECT a FROM t", ex=True, soft=1.0),
        _record(1, "SELECT a FROM t;", soft=0.5),
        _record(2, " SELECT a\nFROM t ", valid=False, kind="syntax"),
        _record(3, "SELECT b FROM t", ex=True, soft=1.0),
        _record(4, "SELECT b FROM t", ex=True, soft=1.0),
        _record(5, "SELECT c FROM t", valid=False, kind="runtime"),
    ]
    aggregate = aggregate_suite(records)
    metrics, grouped = aggregate["metrics"], aggregate["by_gold_sql"]
    assert metrics["execution_accuracy"] == pytest.approx(0.5)
    assert metrics["soft_f1"] == pytest.approx(3.5 / 6)
    assert metrics["valid_syntax"] == pytest.approx(4 / 6)
    assert metrics["error_count"] == 2 and metrics["errors_by_kind"] == {"runtime": 1, "syntax": 1}
    assert grouped["groups"] == 3
    assert grouped["execution_accuracy"] == pytest.approx(4 / 9)
    assert grouped["soft_f1"] == pytest.approx(0.5)
    assert grouped["valid_syntax"] == pytest.approx(5 / 9)
    assert grouped["error_count"] == pytest.approx(4 / 3)


def test_a_tag_written_twice_counts_the_case_once():
    """Case a (tags [x, x], EX 1) and case b (tags [x], EX 0): tag x has 2 cases and EX 1/2 (it had 3 cases and
    EX 2/3, the first case counted twice)."""
    first, second = _record(0, "SELECT a", ex=True, soft=1.0), _record(1, "SELECT b")
    first["tags"], second["tags"] = ["x", "x"], ["x"]
    by_tag = aggregate_suite([first, second])["by_tag"]
    assert by_tag["x"]["cases"] == 2
    assert by_tag["x"]["execution_accuracy"] == 0.5


# ============================================================================ through pytest --sqleval

DB_SQL = """
CREATE TABLE t (id INTEGER PRIMARY KEY, grp TEXT, x REAL, y INTEGER, s TEXT, n INTEGER);
INSERT INTO t VALUES (1, 'a', 0.1, 1, '1', NULL), (2, 'a', 0.2, 1, 'x', NULL), (3, 'b', 0.3, 2, 'y', 5),
                     (4, 'b', 1.0, 2, 'y', 5), (5, 'c', 2.5, 3, NULL, 7);
"""

CASES = """
cases:
  - {id: float, gold: "SELECT 0.3", predicted: "SELECT 0.1 + 0.2"}
  - {id: intfloat, gold: "SELECT 1", predicted: "SELECT 1.0"}
  - {id: strnum, gold: "SELECT 1", predicted: "SELECT '1'"}
  - {id: nulls, gold: "SELECT n FROM t WHERE id <= 2", predicted: "SELECT NULL UNION ALL SELECT NULL"}
  - {id: dups, gold: "SELECT grp FROM t", predicted: "SELECT DISTINCT grp FROM t"}
  - {id: colorder, gold: "SELECT id, grp FROM t", predicted: "SELECT grp, id FROM t"}
  - {id: order, gold: "SELECT id FROM t ORDER BY id DESC", predicted: "SELECT id FROM t ORDER BY id"}
  - {id: noorder, gold: "SELECT id FROM t", predicted: "SELECT id FROM t ORDER BY id DESC"}
  - {id: ties, gold: "SELECT id, y FROM t ORDER BY y", predicted: "SELECT id, y FROM t ORDER BY y, id DESC"}
  - {id: bothempty, gold: "SELECT id FROM t WHERE id > 100", predicted: "SELECT id, grp FROM t WHERE id < 0"}
  - {id: oneempty, gold: "SELECT id FROM t WHERE id > 100", predicted: "SELECT id FROM t"}
  - {id: soft, gold: "SELECT grp, y FROM t", predicted: "SELECT grp FROM t WHERE y < 3"}
  - {id: syntax, gold: "SELECT 1", predicted: "SELEC 1"}
  - {id: runtime, gold: "  SELECT\\t 1 ", predicted: "SELECT abs(-9223372036854775808)"}
  - {id: nopred, gold: "SELECT 1;"}
"""

# Per case: execution_match under each profile (sqleval, test-suite, bird, mro, logiccat), soft_f1, bird_soft_f1.
# float: 0.1+0.2 != 0.3 everywhere. intfloat: 1 = 1.0. strnum: '1' is text. nulls: NULL = NULL.
# dups: a,a,b,b,c vs a,b,c: bag profiles miss, bird (set) matches, test-suite strips DISTINCT -> match.
# colorder: column-matching profiles match, positional ones (bird, logiccat) do not.
# order: gold ORDER BY id DESC, prediction ascending: only bird ignores order.
#   bird_soft_f1: 5,4,3,2,1 vs 1,2,3,4,5 by position: only 3=3: P = R = 1/5.
# noorder: the gold has no ORDER BY: sqleval/test-suite/bird match; mro and logiccat always compare order.
#   bird_soft_f1 = 1/5 as above (the gold comes in id order).
# ties: gold 1,2 | 3,4 | 5 by y, prediction 2,1,4,3,5: ties any (sqleval) and bird match; test-suite, mro,
#   logiccat need the gold's order. bird_soft_f1: (2,1)/(1,1): match 1/2, pred_only 1/2; (1,1)/(2,1): match 1,
#   gold_only 1/2; (4,2)/(3,2) and (3,2)/(4,2): match 1/2, pred_only 1/2, gold_only 1/2 each; (5,3): 1.
#   match 3.5, pred_only 1.5, gold_only 1.5: P = R = 0.7.
# bothempty: 0x1 vs 0x2: test-suite, bird, logiccat match (vacuous); sqleval, mro miss. Soft scores 1.
# oneempty: miss, soft 0.
# soft: gold (grp, y) = (a,1)(a,1)(b,2)(b,2)(c,3), prediction grp = a,a,b,b.
#   F1(grp,grp): precision 4/4, recall 4/5 -> 8/9; F1(y,grp) = 0. Precision 8/9, Recall (8/9)/2 = 4/9,
#   soft_f1 = 2(8/9)(4/9)/(12/9) = 16/27. BIRD: gold rows (a,1)(b,2)(c,3), prediction (a)(b):
#   match 1/2 + 1/2, gold_only 1/2 + 1/2 + 1 -> P = 1, R = 1/3, F1 = 1/2.
# syntax, runtime, nopred: did not execute: 0 everywhere.
EXPECTED = {
    "float": ((0, 0, 0, 0, 0), 0.0, 0.0),
    "intfloat": ((1, 1, 1, 1, 1), 1.0, 1.0),
    "strnum": ((0, 0, 0, 0, 0), 0.0, 0.0),
    "nulls": ((1, 1, 1, 1, 1), 1.0, 1.0),
    "dups": ((0, 1, 1, 0, 0), 1.0, 1.0),
    "colorder": ((1, 1, 0, 1, 0), 1.0, 1.0),
    "order": ((0, 0, 1, 0, 0), 1.0, 0.2),
    "noorder": ((1, 1, 1, 0, 0), 1.0, 0.2),
    "ties": ((1, 0, 1, 0, 0), 1.0, 0.7),
    "bothempty": ((0, 1, 1, 0, 1), 1.0, 1.0),
    "oneempty": ((0, 0, 0, 0, 0), 0.0, 0.0),
    "soft": ((0, 0, 0, 0, 0), 16 / 27, 0.5),
    "syntax": ((0, 0, 0, 0, 0), 0.0, 0.0),
    "runtime": ((0, 0, 0, 0, 0), 0.0, 0.0),
    "nopred": ((0, 0, 0, 0, 0), 0.0, 0.0),
}
PROFILE_ORDER = ("sqleval", "test-suite", "bird", "mro", "logiccat")


def make_db(path: Path, script: str = DB_SQL) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()


def run_report(pytester, *args):
    report = pytester.path / "report.json"
    if report.exists():
        report.unlink()
    outcome = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    return outcome, json.loads(report.read_text())


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_every_profile_on_one_database_matches_the_hand_computed_report(pytester, workers):
    make_db(pytester.path / "m.sqlite")
    for profile in PROFILE_ORDER:
        name = profile.replace("-", "_")
        pytester.makefile(".sqleval.yaml", **{name: f"suite: {name}\ndatabase: m.sqlite\nexecution: {profile}\n"
                                                    + textwrap.dedent(CASES)})
    outcome, report = run_report(pytester, *workers)
    assert outcome.ret == 0, outcome.stdout.str()
    cases = {(c["suite"], c["id"]): c for c in report["cases"]}
    assert len(cases) == 5 * len(EXPECTED)
    for position, profile in enumerate(PROFILE_ORDER):
        suite = profile.replace("-", "_")
        for case_id, (matches, soft, bird) in EXPECTED.items():
            case = cases[(suite, case_id)]
            assert case["execution_match"] is bool(matches[position]), (suite, case_id)
            assert case["soft_f1"] == pytest.approx(soft, abs=1e-12), (suite, case_id)
            assert case["bird_soft_f1"] == pytest.approx(bird, abs=1e-12), (suite, case_id)
        metrics = next(s for s in report["suites"] if s["name"] == suite)["metrics"]
        n = len(EXPECTED)
        # LogicCat VES: 12 of 15 executed (syntax, runtime and the missing prediction did not).
        assert metrics["valid_syntax"] == pytest.approx(12 / 15)
        assert metrics["error_count"] == 3
        assert metrics["errors_by_kind"] == {"no_prediction": 1, "runtime": 1, "syntax": 1}
        assert metrics["execution_accuracy"] == pytest.approx(sum(m[position] for m, _, _ in EXPECTED.values()) / n)
        # soft: 8 cases score 1, one 16/27: (8 + 16/27)/15 = 0.5728...
        assert metrics["soft_f1"] == pytest.approx((8 + 16 / 27) / 15)
        # BIRD: 1+1+1+1+1 (intfloat, nulls, dups, colorder, bothempty) + .2 + .2 + .7 + .5 = 6.6 -> 0.44
        assert metrics["bird_soft_f1"] == pytest.approx(6.6 / 15)
        vacuous = {"test-suite": 1, "bird": 1, "logiccat": 1}.get(profile, 0)
        assert metrics["vacuous"] == vacuous
    # MRO 3.2, 10 distinct golds ("SELECT 1", "  SELECT\t 1 " and "SELECT 1;" are one: intfloat, strnum, syntax,
    # runtime, nopred; bothempty and oneempty share one). sqleval EX per group: SELECT 1: 1/5, nulls, colorder,
    # noorder, ties: 1, the rest 0 -> (0.2 + 4)/10. Soft: SELECT 1: 1/5; nulls, dups, colorder, order, noorder,
    # ties: 1; the empty pair: 1/2; soft: 16/27 -> (6.7 + 16/27)/10. VES: SELECT 1: 2/5, the other nine 1 -> 9.4/10.
    # error_count: the SELECT 1 group's error rate 3/5, the others 0 -> 0.6.
    grouped = next(s for s in report["suites"] if s["name"] == "sqleval")["by_gold_sql"]
    assert grouped["groups"] == 10
    assert grouped["execution_accuracy"] == pytest.approx(4.2 / 10)
    assert grouped["soft_f1"] == pytest.approx((6.7 + 16 / 27) / 10)
    assert grouped["valid_syntax"] == pytest.approx(9.4 / 10)
    assert grouped["error_count"] == pytest.approx(0.6)
    # Spider hardness of the golds: colorder (two SELECT items), ties (two items + ORDER BY: c1 1, others 1) and
    # soft (two items) are medium, every other gold easy (c1 <= 1, others 0; `SELECT 0.3` has no FROM: extended).
    # sqleval EX: easy intfloat, nulls, noorder = 3/12; medium colorder, ties = 2/3.
    by_difficulty = next(s for s in report["suites"] if s["name"] == "sqleval")["by_difficulty"]
    assert {level: row["cases"] for level, row in by_difficulty.items()} == {"easy": 12, "medium": 3}
    assert by_difficulty["easy"]["execution_accuracy"] == pytest.approx(3 / 12)
    assert by_difficulty["medium"]["execution_accuracy"] == pytest.approx(2 / 3)
    # mro: SELECT 1: 1/5, nulls 1, colorder 1 -> 2.2/10
    assert next(s for s in report["suites"] if s["name"] == "mro")["by_gold_sql"]["execution_accuracy"] == pytest.approx(0.22)
    by_profile = {s["name"]: s["metrics"]["execution_accuracy"] for s in report["suites"]}
    assert by_profile == pytest.approx({"sqleval": 5 / 15, "test_suite": 6 / 15, "bird": 7 / 15, "mro": 3 / 15,
                                        "logiccat": 3 / 15})


def test_set_semantics_with_hidden_order_keys_through_the_plugin(pytester):
    """Gold `SELECT grp FROM t ORDER BY id`: a, a, b, b, c with hidden keys 1..5 (every row its own tie group).
    With `duplicates: set` the gold is a, b, c in that order; `SELECT DISTINCT grp ... ORDER BY grp` gives
    a, b, c: a match (it was an `order` miss). c, b, a is an order miss."""
    make_db(pytester.path / "m.sqlite")
    pytester.makefile(".sqleval.yaml", sets=textwrap.dedent("""
        database: m.sqlite
        execution: {profile: sqleval, duplicates: set}
        cases:
          - {id: same-order, gold: "SELECT grp FROM t ORDER BY id", predicted: "SELECT DISTINCT grp FROM t ORDER BY grp"}
          - {id: reversed, gold: "SELECT grp FROM t ORDER BY id", predicted: "SELECT DISTINCT grp FROM t ORDER BY grp DESC"}
    """))
    outcome, report = run_report(pytester)
    cases = {c["id"]: c for c in report["cases"]}
    assert cases["same-order"]["execution_match"] is True, cases["same-order"]
    assert cases["reversed"]["execution_match"] is False
    assert cases["reversed"]["mismatch"]["reason"] == "order"
    assert report["suites"][0]["metrics"]["execution_accuracy"] == 0.5


def test_duckdb_typed_values_through_the_plugin(pytester, duckdb_available):
    """DuckDB returns booleans, dates, Decimals, NaN and lists. By hand:
    bool-int: True = 1 -> match. date-str: a date is not its text -> miss, soft 0. decimal-int: Decimal('2.00')
    = 2 -> match. nan: NaN = NaN for execution match and soft F1 (one normalised NaN), but BIRD compares the
    driver's two NaN objects with == -> 0. list: [1, 2] = [1, 2] -> match, and bird_soft_f1 1 (this case was an
    internal error). list-order: [2, 1] != [1, 2] -> miss, both F1s 0.
    soft-mixed: gold (id, d) = (1, 2020-01-01) (2, 2021-06-30) (3, NULL), prediction d for id < 3:
    F1(d,d) = 2*1*(2/3)/(5/3) = .8, F1(id,d) = 0: Precision .8, Recall .4, soft_f1 = .64/1.2 = 8/15.
    BIRD: match 1/2 + 1/2, gold_only 1/2 + 1/2 + 1: P 1, R 1/3 -> 1/2."""
    import duckdb

    connection = duckdb.connect(str(pytester.path / "d.duckdb"))
    connection.execute("CREATE TABLE t (id INTEGER, f BOOLEAN, d DATE, x DOUBLE, m DECIMAL(10,2), l INTEGER[])")
    connection.execute("INSERT INTO t VALUES (1, true, DATE '2020-01-01', 0.1, 1.50, [1, 2]), "
                       "(2, false, DATE '2021-06-30', 'nan'::DOUBLE, 2.00, [3]), (3, NULL, NULL, 1.0, NULL, NULL)")
    connection.close()
    pytester.makefile(".sqleval.yaml", duck=textwrap.dedent("""
        database: d.duckdb
        cases:
          - {id: bool-int, gold: "SELECT f FROM t WHERE id = 1", predicted: "SELECT 1"}
          - {id: date-str, gold: "SELECT d FROM t WHERE id = 1", predicted: "SELECT '2020-01-01'"}
          - {id: decimal-int, gold: "SELECT m FROM t WHERE id = 2", predicted: "SELECT 2"}
          - {id: nan, gold: "SELECT x FROM t WHERE id = 2", predicted: "SELECT 'nan'::DOUBLE"}
          - {id: list, gold: "SELECT l FROM t WHERE id = 1", predicted: "SELECT [1, 2]"}
          - {id: list-order, gold: "SELECT l FROM t WHERE id = 1", predicted: "SELECT [2, 1]"}
          - {id: soft-mixed, gold: "SELECT id, d FROM t", predicted: "SELECT d FROM t WHERE id < 3"}
    """))
    outcome, report = run_report(pytester)
    assert outcome.ret == 0, outcome.stdout.str()
    got = {c["id"]: (c["outcome"], c["execution_match"], c["soft_f1"], c["bird_soft_f1"]) for c in report["cases"]}
    assert got == {
        "bool-int": ("passed", True, 1.0, 1.0),
        "date-str": ("missed", False, 0.0, 0.0),
        "decimal-int": ("passed", True, 1.0, 1.0),
        "nan": ("passed", True, 1.0, 0.0),
        "list": ("passed", True, 1.0, 1.0),
        "list-order": ("missed", False, 0.0, 0.0),
        "soft-mixed": ("missed", False, pytest.approx(8 / 15), pytest.approx(0.5)),
    }
    metrics = report["suites"][0]["metrics"]
    assert metrics["valid_syntax"] == 1.0 and metrics["execution_accuracy"] == pytest.approx(4 / 7)
    assert metrics["soft_f1"] == pytest.approx((4 + 8 / 15) / 7)
    assert metrics["bird_soft_f1"] == pytest.approx(3.5 / 7)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_interactions_with_a_failed_prediction_a_missing_turn_and_a_broken_gold(pytester, workers):
    """SParC aggregates with pass_if: exact_match (exact match `sqleval` compares values and DISTINCT).
    i1: 3 turns, all pass. i2: turn 2 has the wrong value (y = 3). i3: turn 2's gold fails (a suite error,
    the interaction is left out of the SParC aggregates). i4: turn 2 has no prediction (a miss, never
    dropped). i5: 6 turns; turn 1 adds DISTINCT (miss), turn 6 a wrong WHERE (miss), a prediction error in
    turn 3 (`SELEC`).
    Scored turns: 3 + 2 + 1 + 2 + 6 = 14, passing 3 + 1 + 1 + 1 + 3 = 9: pass_rate = exact_match = 9/14.
    Complete interactions i1, i2, i4, i5: 13 turns, passing 8: question_match 8/13; every turn passes only
    in i1: interaction_match 1/4; every turn's execution matches only in i1: interaction EX 1/4.
    By turn: turn 1 (i1..i5): passes i1, i2, i3, i4 -> 4/5; turn 2 (i1, i2, i4, i5): 2/4; turn 3 (i1, i5): 1/2;
    turn 4: 1/1; >4 (i5 turns 5, 6): 1/2."""
    make_db(pytester.path / "m.sqlite")
    pytester.makefile(".sqleval.yaml", conv=textwrap.dedent("""
        database: m.sqlite
        pass_if: exact_match
        cases:
          - id: i1
            interaction:
              - {gold: "SELECT id FROM t", predicted: "SELECT id FROM t"}
              - {gold: "SELECT id FROM t WHERE y = 1", predicted: "SELECT id FROM t WHERE y = 1"}
              - {gold: "SELECT count(*) FROM t WHERE y = 1", predicted: "SELECT count(*) FROM t WHERE y = 1"}
          - id: i2
            interaction:
              - {gold: "SELECT grp FROM t", predicted: "SELECT grp FROM t"}
              - {gold: "SELECT grp FROM t WHERE y = 2", predicted: "SELECT grp FROM t WHERE y = 3"}
          - id: i3
            interaction:
              - {gold: "SELECT s FROM t", predicted: "SELECT s FROM t"}
              - {gold: "SELECT nosuch FROM t", predicted: "SELECT s FROM t"}
          - id: i4
            interaction:
              - {gold: "SELECT x FROM t", predicted: "SELECT x FROM t"}
              - {gold: "SELECT x FROM t WHERE y = 1"}
          - id: i5
            interaction:
              - {gold: "SELECT y FROM t", predicted: "SELECT DISTINCT y FROM t"}
              - {gold: "SELECT y FROM t", predicted: "SELECT y FROM t"}
              - {gold: "SELECT y FROM t", predicted: "SELEC y FROM t"}
              - {gold: "SELECT y FROM t", predicted: "SELECT y FROM t"}
              - {gold: "SELECT y FROM t", predicted: "SELECT y FROM t"}
              - {gold: "SELECT y FROM t", predicted: "SELECT y FROM t WHERE y > 1"}
    """))
    outcome, report = run_report(pytester, *workers)
    suite = report["suites"][0]
    metrics = suite["metrics"]
    assert suite["outcomes"] == {"passed": 9, "missed": 5, "failed": 0, "error": 1}
    assert metrics["pass_rate"] == pytest.approx(9 / 14)
    assert metrics["exact_match"] == pytest.approx(9 / 14)
    assert metrics["question_match"] == pytest.approx(8 / 13)
    assert metrics["interaction_match"] == pytest.approx(1 / 4)
    assert metrics["interaction_execution_accuracy"] == pytest.approx(1 / 4)
    assert metrics["error_count"] == 2 and metrics["errors_by_kind"] == {"no_prediction": 1, "syntax": 1}
    by_turn = {bucket: (row["turns"], row["question_match"]) for bucket, row in suite["by_turn"].items()}
    assert by_turn == {"1": (5, pytest.approx(4 / 5)), "2": (4, pytest.approx(2 / 4)), "3": (2, pytest.approx(1 / 2)),
                       "4": (1, 1.0), ">4": (2, pytest.approx(1 / 2))}
    missing = next(c for c in report["cases"] if c.get("interaction") == "i4" and c.get("turn") == 2)
    assert missing["outcome"] == "missed" and missing["error"]["kind"] == "no_prediction"


def test_soft_f1_gate_at_an_exact_value_through_the_plugin(pytester):
    """Gold (id, grp, x, s, id*100), prediction (id, grp, x): the three predicted columns equal three gold
    columns (best F1 1 each: Precision 1); s and id*100 share no value with any predicted column (Recall 3/5),
    so soft_f1 = 2*(3/5)/(8/5) = 0.75 exactly. `pass_if: soft_f1 >= 0.75` holds and the 0.75 threshold passes
    (both failed at 0.7499999999999999)."""
    make_db(pytester.path / "m.sqlite")
    pytester.makefile(".sqleval.yaml", gate=textwrap.dedent("""
        database: m.sqlite
        pass_if: soft_f1 >= 0.75
        thresholds: {soft_f1: 0.75}
        cases:
          - {id: three-of-five, gold: "SELECT id, grp, x, s, id * 100 FROM t", predicted: "SELECT id, grp, x FROM t"}
    """))
    outcome, report = run_report(pytester)
    assert outcome.ret == 0, outcome.stdout.str()
    case = report["cases"][0]
    assert case["soft_f1"] == 0.75 and case["outcome"] == "passed" and case["execution_match"] is False
    suite = report["suites"][0]
    assert suite["metrics"]["soft_f1"] == 0.75
    assert suite["thresholds"][0]["passed"] is True


def test_r_ves_of_a_vacuous_match_and_a_missing_prediction(pytester):
    """BIRD `set() == set()`: two empty results match, so the pair is timed and rewarded (a bucket whose
    reward is the bucket of the measured ratio). A missing prediction scores 0 untimed, as a miss does.
    Suite r_ves = (sqrt(reward) + 0 + 0) / 3."""
    make_db(pytester.path / "m.sqlite")
    pytester.makefile(".sqleval.yaml", ves=textwrap.dedent("""
        database: m.sqlite
        execution: bird
        efficiency: true
        cases:
          - {id: vacuous, gold: "SELECT id FROM t WHERE id > 9", predicted: "SELECT id, grp FROM t WHERE id < 0"}
          - {id: missing, gold: "SELECT id FROM t"}
          - {id: wrong, gold: "SELECT id FROM t", predicted: "SELECT y FROM t"}
    """))
    outcome, report = run_report(pytester)
    cases = {c["id"]: c for c in report["cases"]}
    vacuous = cases["vacuous"]
    assert vacuous["execution_match"] is True and vacuous["vacuous"] is True
    assert vacuous["r_ves_time_ratio"] > 0
    assert vacuous["r_ves_reward"] == ves_reward(vacuous["r_ves_time_ratio"]) > 0
    assert vacuous["r_ves"] == pytest.approx(vacuous["r_ves_reward"] ** 0.5)
    for name in ("missing", "wrong"):
        assert (cases[name]["r_ves"], cases[name]["r_ves_reward"], cases[name]["r_ves_time_ratio"]) == (0.0, 0.0, 0.0)
    assert report["suites"][0]["metrics"]["r_ves"] == pytest.approx(vacuous["r_ves"] / 3)


# Verdicts of test-suite-sql-eval's own `eval_exec_match` (default flags) on these pairs, run on the same table:
# DISTINCT stripped (also inside count), order iff the gold text contains "order by" (even in a string literal),
# ties in the gold's order, any column permutation, quick_rej's string sort ((1, 1.5) vs (1.0, 1.5) rejected).
TEST_SUITE_OFFICIAL = [
    ('SELECT 0.3', 'SELECT 0.1 + 0.2', False),
    ('SELECT 1', 'SELECT 1.0', True),
    ('SELECT 1', "SELECT '1'", False),
    ('SELECT n FROM t WHERE id <= 2', 'SELECT NULL UNION ALL SELECT NULL', True),
    ('SELECT grp FROM t', 'SELECT DISTINCT grp FROM t', True),
    ('SELECT count(DISTINCT grp) FROM t', 'SELECT count(grp) FROM t', True),
    ('SELECT id, grp FROM t', 'SELECT grp, id FROM t', True),
    ('SELECT id FROM t ORDER BY id DESC', 'SELECT id FROM t ORDER BY id', False),
    ('SELECT id FROM t', 'SELECT id FROM t ORDER BY id DESC', True),
    ('SELECT id, y FROM t ORDER BY y', 'SELECT id, y FROM t ORDER BY y, id DESC', False),
    ('SELECT id, y FROM t ORDER BY y', 'SELECT y, id FROM t ORDER BY y, id', True),
    ('SELECT id FROM t WHERE id > 100', 'SELECT id, grp FROM t WHERE id < 0', True),
    ('SELECT id FROM t WHERE id > 100', 'SELECT id FROM t', False),
    ('SELECT grp, y FROM t', 'SELECT grp FROM t WHERE y < 3', False),
    ("SELECT id FROM t WHERE grp <> 'order by'", 'SELECT id FROM t ORDER BY id DESC', False),
    ('SELECT x, y FROM t', 'SELECT y, x FROM t', True),
    ('SELECT y, y FROM t', 'SELECT y, id FROM t', False),
    ('SELECT y, count(*) FROM t GROUP BY y', 'SELECT count(*), y FROM t GROUP BY y', True),
    ('SELECT y, x * 1.0 FROM t', 'SELECT y, x FROM t', True),
    ('SELECT id, x FROM t WHERE id < 3', 'SELECT x, id FROM t WHERE id < 3', True),
    ('SELECT 1, 1.5', 'SELECT 1.0, 1.5', False),
    ('SELECT 1.5, 1', 'SELECT 1.5, 1.0', False),
    ('SELECT s FROM t', 'SELECT s FROM t WHERE s IS NOT NULL', False),
    ('SELECT s, n FROM t', 'SELECT n, s FROM t', True),
]


# BIRD mini-dev on the same pairs (sqlite3 fetchall, then `set(pred) == set(gold)` and `calculate_f1_score`):
# (execution match, Soft F1), equal to the last bit.
BIRD_OFFICIAL = [
    (False, 0.0), (True, 1.0), (False, 0.0), (True, 1.0),
    (True, 1.0), (False, 0.0), (False, 1.0), (True, 0.20000000000000004),
    (True, 0.20000000000000004), (True, 0.7), (False, 1.0), (True, 1.0),
    (False, 0.0), (False, 0.5), (True, 0.20000000000000004), (False, 1.0),
    (False, 0.5714285714285715), (False, 1.0), (True, 1.0), (False, 1.0),
    (True, 1.0), (True, 1.0), (False, 0.8571428571428571), (False, 1.0),
]


@pytest.mark.parametrize("profile", ["test-suite", "bird"])
def test_reproduction_profiles_agree_with_the_official_verdicts(pytester, profile):
    make_db(pytester.path / "m.sqlite")
    lines = ["database: m.sqlite", f"execution: {profile}", "cases:"]
    for index, (gold, pred, _) in enumerate(TEST_SUITE_OFFICIAL):
        lines.append(f"  - {{id: c{index:02d}, gold: {json.dumps(gold)}, predicted: {json.dumps(pred)}}}")
    pytester.makefile(".sqleval.yaml", ts="\n".join(lines) + "\n")
    outcome, report = run_report(pytester)
    cases = sorted(report["cases"], key=lambda c: c["id"])
    if profile == "test-suite":
        assert [case["execution_match"] for case in cases] == [official for _, _, official in TEST_SUITE_OFFICIAL]
    else:
        assert [(case["execution_match"], case["bird_soft_f1"]) for case in cases] == BIRD_OFFICIAL
