"""Suite aggregates, checked against values computed by hand."""

import random

import pytest

from pytest_sqleval.aggregate import aggregate_suite, gold_key
from pytest_sqleval.stats import Z95


def rec(index, gold, *, valid=True, em=None, ex=None, soft=None, passed=None, difficulty="easy", tags=(),
        error=None, outcome=None, interaction=None, turn=None):
    ex = valid if ex is None else ex
    passed = ex if passed is None else passed
    return {
        "index": index, "id": f"c{index}", "gold": gold, "valid": valid, "execution_match": ex,
        "execution_match_first": ex, "soft_f1": soft if soft is not None else (1.0 if ex else 0.0),
        "exact_match": em, "passed_rule": passed, "difficulty": difficulty, "tags": list(tags),
        "error": {"kind": error, "message": "x"} if error else None, "vacuous": False,
        "outcome": outcome or ("passed" if passed else "missed"), "interaction": interaction, "turn": turn,
    }


RECORDS = [
    rec(0, "SELECT a", em=True, soft=1.0, tags=["x"]),
    rec(1, "SELECT a", em=False, ex=False, soft=0.5),
    rec(2, "SELECT b", valid=False, em=False, ex=False, soft=0.0, error="syntax", difficulty="hard", tags=["x"]),
    rec(3, "SELECT   b ;", em=True, soft=1.0, difficulty="hard"),
    rec(4, "SELECT c", valid=None, ex=None, outcome="error"),
    rec(5, "SELECT a", em=True, soft=1.0),
]


def test_plain_means():
    agg = aggregate_suite(RECORDS)
    m = agg["metrics"]
    assert agg["cases"] == 6
    assert agg["outcomes"] == {"passed": 3, "missed": 2, "failed": 0, "error": 1}
    assert m["valid_syntax"] == pytest.approx(4 / 5)
    assert m["error_count"] == 1 and m["errors_by_kind"] == {"syntax": 1}
    assert m["execution_accuracy"] == pytest.approx(3 / 5)
    assert m["soft_f1"] == pytest.approx(3.5 / 5)
    assert m["exact_match"] == pytest.approx(3 / 5)
    assert m["pass_rate"] == pytest.approx(3 / 5)


def test_grouped_by_identical_gold_sql():
    grouped = aggregate_suite(RECORDS)["by_gold_sql"]
    # group "SELECT a": EX 2/3, soft 2.5/3; group "SELECT b" (white space and ';' ignored): EX 1/2, soft 1/2
    assert grouped["groups"] == 2
    assert grouped["execution_accuracy"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert grouped["soft_f1"] == pytest.approx((2.5 / 3 + 0.5) / 2)
    assert grouped["valid_syntax"] == pytest.approx((1 + 0.5) / 2)
    assert grouped["error_count"] == pytest.approx(0 + 0.5)
    assert gold_key("SELECT   b ;") == gold_key("SELECT b")


@pytest.mark.parametrize("spaced, single", [
    ("SELECT id FROM t WHERE name = 'a  b'", "SELECT id FROM t WHERE name = 'a b'"),
    ('SELECT "first\tname" FROM t', 'SELECT "first name" FROM t'),
    ("SELECT id FROM t WHERE name = 'x\n y'", "SELECT id FROM t WHERE name = 'x y'"),
])
def test_white_space_inside_a_literal_or_a_quoted_name_makes_another_gold(spaced, single):
    """Two golds that differ inside a string or a quoted name return other rows: two groups, not one. White space
    between tokens still does not count."""
    assert gold_key(spaced) != gold_key(single)
    assert gold_key(spaced.replace(" FROM", "\n   FROM") + " ;") == gold_key(spaced)
    records = [{"suite": "s", "id": n, "gold": sql, "outcome": "passed", "valid_syntax": 1, "error_count": 0,
                "execution_accuracy": score, "soft_f1": score} for n, (sql, score) in enumerate([(spaced, 1.0),
                                                                                                  (single, 0.0)])]
    assert aggregate_suite(records)["by_gold_sql"]["groups"] == 2


def test_breakdowns():
    agg = aggregate_suite(RECORDS)
    assert list(agg["by_difficulty"]) == ["easy", "hard"]
    assert agg["by_difficulty"]["easy"]["cases"] == 3
    assert agg["by_difficulty"]["hard"]["execution_accuracy"] == pytest.approx(0.5)
    assert agg["by_tag"]["x"]["cases"] == 2 and agg["by_tag"]["x"]["execution_accuracy"] == pytest.approx(0.5)


def test_order_of_records_does_not_change_anything():
    shuffled = RECORDS[:]
    random.Random(3).shuffle(shuffled)
    assert aggregate_suite(shuffled) == aggregate_suite(RECORDS)


def test_interaction_metrics_and_turn_buckets():
    records = []
    index = 0

    def turns(name, passed):
        nonlocal index
        for number, ok in enumerate(passed, start=1):
            records.append(rec(index, f"SELECT {index}", ex=ok, passed=ok, interaction=name, turn=number))
            index += 1

    turns("i1", [True, True])
    turns("i2", [True, False, True])
    turns("i3", [True] * 6)
    m = aggregate_suite(records)["metrics"]
    assert m["question_match"] == pytest.approx(10 / 11)
    assert m["interaction_match"] == pytest.approx(2 / 3)
    assert m["interaction_execution_accuracy"] == pytest.approx(2 / 3)
    by_turn = aggregate_suite(records)["by_turn"]
    assert list(by_turn) == ["1", "2", "3", "4", ">4"]
    # Wilson's interval of 2 of 3 by hand (z = 1.96; Z95 is the exact 1.959964): centre (2/3 + z^2/6) / (1 + z^2/3) = 0.5731, half-width
    # z * sqrt(2/27 + z^2/36) / (1 + z^2/3) = 0.3654
    wilson_2_of_3 = pytest.approx([0.2077, 0.9385], abs=1e-4)
    assert by_turn["2"] == {"turns": 3, "question_match": pytest.approx(2 / 3), "execution_accuracy": pytest.approx(2 / 3),
                            "intervals": {"question_match": wilson_2_of_3, "execution_accuracy": wilson_2_of_3}}
    assert by_turn[">4"]["turns"] == 2
    # 2 of 2 (p = 1): the lower end (1 + z^2/4 - z^2/4) / (1 + z^2/2) = 2 / (2 + z^2) = 0.3424, the upper 1
    assert by_turn[">4"]["intervals"]["question_match"] == pytest.approx([2 / (2 + Z95 ** 2), 1.0], abs=1e-12)


def test_per_gold_sql_averages_carry_intervals_over_the_groups():
    """MRO 3.2's per-gold-SQL average is a mean over distinct golds: its interval counts each gold once."""
    records = [rec(0, "SELECT 1", ex=True), rec(1, "SELECT 1", ex=False), rec(2, "SELECT 2", ex=True),
               rec(3, "SELECT 3", ex=True)]
    grouped = aggregate_suite(records)["by_gold_sql"]
    assert grouped["groups"] == 3
    assert grouped["execution_accuracy"] == pytest.approx((0.5 + 1 + 1) / 3)
    # Wilson over the three group values (their sum 2.5 the successes of n = 3), not over the 4 cases
    z2 = Z95 ** 2
    p, n = 2.5 / 3, 3
    centre, half = (p + z2 / (2 * n)) / (1 + z2 / n), Z95 * (p * (1 - p) / n + z2 / (4 * n * n)) ** 0.5 / (1 + z2 / n)
    assert grouped["intervals"]["execution_accuracy"] == pytest.approx([centre - half, centre + half], abs=1e-12)


def test_interaction_with_a_failed_gold_is_left_out():
    records = [
        rec(0, "SELECT 1", interaction="i1", turn=1),
        rec(1, "SELECT 2", valid=None, ex=None, passed=False, outcome="error", interaction="i1", turn=2),
        rec(2, "SELECT 3", ex=False, interaction="i2", turn=1),
    ]
    m = aggregate_suite(records)["metrics"]
    assert m["interaction_match"] == 0.0  # only i2 counts, and it missed
    assert m["question_match"] == 0.0


def test_component_accuracy_counts_an_unreadable_prediction_as_agreeing_on_no_component():
    read = {**rec(0, "SELECT 1", em=True), "clauses": {"select": True, "where": True}}
    wrong_where = {**rec(1, "SELECT 1", em=False), "clauses": {"select": True, "where": False}}
    unparsed = {**rec(2, "SELECT 1", valid=False, em=False), "clauses": None}  # parse error or no prediction
    rows = {**rec(3, "SELECT 1", em=None), "clauses": None}  # exact match not computed (expected rows)
    clauses = aggregate_suite([read, wrong_where, unparsed, rows])["clauses"]
    assert clauses == {"select": pytest.approx(2 / 3), "where": pytest.approx(1 / 3)}
