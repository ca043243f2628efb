"""QA of the metrics against the papers: MRO (soft F1 2.1.2, EX 2.1.1, grouped averages 3.2), LogicCat, SParC.

Every expected value is worked out by hand in the comments, from the paper's formulas, never from the code.
"""

from __future__ import annotations

import pytest

from pytest_sqleval.aggregate import aggregate_suite, gold_key
from pytest_sqleval.comparison import builtin_profiles
from pytest_sqleval.metrics.execution_match import compare_results
from pytest_sqleval.metrics.soft_f1 import soft_f1
from pytest_sqleval.results import QueryResult

Q = QueryResult.of


# ----------------------------------------------------------------------------------------------- soft F1 (MRO 2.1.2)
@pytest.mark.parametrize(("gold", "pred", "nulls", "expected"), [
    # Gold has the same column twice, the prediction once. F1(g0,p0) = F1(g1,p0) = 1.
    # The paper takes each column's max independently (not a one-to-one assignment): Precision = max(1, 1)/1 = 1,
    # Recall = (1 + 1)/2 = 1, score 1 (a one-to-one pairing would give Recall 1/2 and 2/3).
    ([(1, 1), (2, 2)], [(1,), (2,)], "equal", 1.0),
    # Greedy vs optimal cannot matter either: gold a = {1,2}, b = {1}; pred x = {1,2}, y = {1}.
    # F1(a,x) = 1, F1(b,y) = 1, F1(a,y): P 1/1, R 1/2 -> 2/3; F1(b,x): P 1/2, R 1 -> 2/3. Row maxima 1, 1; column
    # maxima 1, 1: score 1.
    ([(1, 1), (2, 1)], [(1, 1), (2, 1)], "equal", 1.0),
    # Different lengths: gold one column [1, 2, 3, 4], prediction [1, 2]. P = 2/2 = 1, R = 2/4 = 1/2,
    # F1(n,t) = 2*(1*1/2)/(3/2) = 2/3; one column each side: Precision = Recall = 2/3, score 2/3.
    ([(1,), (2,), (3,), (4,)], [(1,), (2,)], "equal", 2 / 3),
    # Duplicates weigh as often as they occur: gold [1, 1, 2], prediction [1]: P = 1/1, R = 2/3 (both 1s are in
    # the prediction), F1 = 2*(2/3)/(5/3) = 4/5.
    ([(1,), (1,), (2,)], [(1,)], "equal", 0.8),
    # All-NULL columns under nulls=equal: gold (a, NULL) x2, prediction (a): F1(a,a) = 1, F1(NULL col, a) = 0.
    # Precision = 1/1, Recall = (1 + 0)/2 = 1/2, score 2/3.
    ([("a", None), ("b", None)], [("a",), ("b",)], "equal", 2 / 3),
    # The same all-NULL column on both sides: under nulls=equal NULL is in NULL's column, F1 = 1, score 1.
    ([(None,), (None,)], [(None,)], "equal", 1.0),
    # Under nulls=distinct NULL matches nothing, not even NULL: gold (1, NULL) against pred (NULL, 1):
    # F1(g0,p1) = 1, every pair with a NULL column 0. Precision = (0 + 1)/2, Recall = (1 + 0)/2, score 1/2.
    ([(1, None)], [(None, 1)], "distinct", 0.5),
    # One side without rows: 0; both without rows (any widths): 1.
    ([(1,)], [], "equal", 0.0),
    ([], [(1,)], "equal", 0.0),
    ([], [], "equal", 1.0),
    # Nothing in common: every F1 is 0, Precision = Recall = 0, score 0 (not a division by zero).
    ([(1, "a")], [(2, "b")], "equal", 0.0),
    # Ties of maxima: gold a = [1, 2], prediction x = [1], y = [2]: F1(a,x) = F1(a,y) = 2/3 (P 1, R 1/2).
    # Precision = (2/3 + 2/3)/2 = 2/3, Recall = 2/3 (the max of two equal values), score 2/3.
    ([(1,), (2,)], [(1, 2)], "equal", 2 / 3),
])
def test_soft_f1_worked_by_hand(gold, pred, nulls, expected):
    assert soft_f1(Q(gold, ["g"] * len(gold[0]) if gold else ["g"]),
                   Q(pred, ["p"] * len(pred[0]) if pred else ["p"]), nulls=nulls) == pytest.approx(expected, abs=1e-12)


# ------------------------------------------------------------------------------------- EX one-to-one (MRO 2.1.1)
@pytest.mark.parametrize(("gold", "pred", "match"), [
    # Columns swapped: a one-to-one correspondence exists (g0 -> p1, g1 -> p0).
    ([(1, "a"), (2, "b")], [("a", 1), ("b", 2)], True),
    # Gold has one column twice; the prediction repeats it only once: the second gold column has no partner left.
    ([(1, 1), (2, 2)], [(1, 3), (2, 4)], False),
    ([(1, 1), (2, 2)], [(1, 1), (2, 2)], True),
    # Same values per column but not in the same row order: MRO requires the row order of each column.
    ([(1, "a"), (2, "b")], [(2, "b"), (1, "a")], False),
    # Different dimensions are a miss at once.
    ([(1,), (2,)], [(1,)], False),
    ([(1, 2)], [(1,)], False),
])
def test_mro_one_to_one_columns(gold, pred, match):
    verdict = compare_results(Q(gold), Q(pred), builtin_profiles()["mro"], ordered=True)
    assert verdict.match is match


# --------------------------------------------------------------------------------- grouped averages (MRO 3.2)
def test_gold_key_keeps_a_literals_white_space_when_the_text_also_has_two_dashes():
    # '--' inside a literal is no comment: 'x  y' and 'x y' are still two different golds.
    spaced = "SELECT id\nFROM t WHERE a = 'x  y' AND b = '--'"
    single = "SELECT id FROM t WHERE a = 'x y' AND b = '--'"
    assert gold_key(spaced) != gold_key(single)
    assert gold_key(spaced) == gold_key("SELECT id FROM t WHERE a = 'x  y' AND b = '--' ;")


def test_gold_key_keeps_a_line_comments_line_break():
    # ``-- x`` then WHERE on the next line filters; ``-- x WHERE b = 1`` on one line is a comment: two golds.
    filtering = "SELECT a FROM t -- x\nWHERE b = 1"
    commented = "SELECT a FROM t -- x WHERE b = 1"
    assert gold_key(filtering) != gold_key(commented)
    # other white space around the comment still does not count
    assert gold_key("SELECT a  FROM t   --  x \n\n   WHERE b = 1 ;") == gold_key(filtering)
    assert gold_key("SELECT a FROM t -- x\n;") == gold_key("SELECT a FROM t -- x")


def test_gold_key_keeps_white_space_inside_a_dollar_quoted_literal():
    # PostgreSQL/DuckDB: $$a  b$$ and $tag$a  b$tag$ are literals whose two spaces are the value's.
    assert gold_key("SELECT $$a  b$$\nFROM t") != gold_key("SELECT $$a b$$ FROM t")
    assert gold_key("SELECT $q$a  b$q$\nFROM t") == gold_key("SELECT  $q$a  b$q$ FROM t ;")
    assert gold_key("SELECT $q$a  b$q$\nFROM t") != gold_key("SELECT $q$a b$q$ FROM t")


def _record(index, gold, ex, soft, valid=True):
    return {"suite": "s", "id": f"c{index}", "index": index, "gold": gold, "outcome": "passed" if ex else "missed",
            "valid": valid, "execution_match": ex, "soft_f1": soft, "error": None if valid else {"kind": "syntax"}}


def test_grouped_averages_worked_by_hand():
    # Group A: one gold written three ways (spacing, a trailing ';', a line break); group B: the same gold in lower
    # case (another text: the README groups up to white space and ';' only); group C: 'Paris  ' is another value.
    records = [
        _record(0, "SELECT name FROM shops", True, 1.0),
        _record(1, "SELECT  name FROM shops ;", False, 0.5),
        _record(2, "SELECT name\nFROM shops", False, 0.0, valid=False),
        _record(3, "select name from shops", True, 1.0),
        _record(4, "SELECT id FROM shops WHERE city = 'Paris  '", False, 0.25),
        _record(5, "SELECT id FROM shops WHERE city = 'Paris'", True, 1.0),
        _record(6, "SELECT id\nFROM shops WHERE city = 'Paris'", True, 1.0),
    ]
    grouped = aggregate_suite(records)["by_gold_sql"]
    # groups: A {0,1,2}, B {3}, C {4}, D {5,6}
    assert grouped["groups"] == 4
    # EX: A 1/3, B 1, C 0, D 1 -> (1/3 + 1 + 0 + 1)/4 = 7/12
    assert grouped["execution_accuracy"] == pytest.approx(7 / 12)
    # soft F1: A (1 + 0.5 + 0)/3 = 1/2, B 1, C 1/4, D 1 -> 2.75/4 = 0.6875
    assert grouped["soft_f1"] == pytest.approx(0.6875)
    # error count: the sum of the groups' error rates: A 1/3, others 0
    assert grouped["error_count"] == pytest.approx(1 / 3)
    # VES: A 2/3, B 1, C 1, D 1 -> (11/3)/4 = 11/12
    assert grouped["valid_syntax"] == pytest.approx(11 / 12)


# ---------------------------------------------------------------------------------------- SParC (question/interaction)
def _turn(interaction, turn, passed, outcome=None, turns=3):
    return {"suite": "s", "id": f"{interaction}[{turn}]", "index": 10 * int(interaction[1:]) + turn,
            "interaction": interaction, "turn": turn, "interaction_turns": turns, "passed_rule": passed,
            "execution_match": passed, "valid": passed is not None, "soft_f1": float(bool(passed)),
            "outcome": outcome or ("passed" if passed else "missed")}


def test_sparc_question_and_interaction_match_with_a_failing_turn():
    records = [
        _turn("i1", 1, True), _turn("i1", 2, True), _turn("i1", 3, True),      # all three match
        _turn("i2", 1, True), _turn("i2", 2, False), _turn("i2", 3, True),     # turn 2's prediction fails
        _turn("i3", 1, False), _turn("i3", 2, True),                           # a two-turn interaction
    ]
    records[-2]["interaction_turns"] = records[-1]["interaction_turns"] = 2
    metrics = aggregate_suite(records)["metrics"]
    # question match: 6 of 8 turns; interaction match: only i1, 1 of 3
    assert metrics["question_match"] == pytest.approx(6 / 8)
    assert metrics["interaction_match"] == pytest.approx(1 / 3)
    assert metrics["interaction_execution_accuracy"] == pytest.approx(1 / 3)
