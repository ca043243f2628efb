"""The aviation-MRO paper (arXiv 2506.13785), a third look with inputs nobody tuned for: Execution Accuracy with
one-to-one column matching (2.1.1, profile ``mro``), Soft Execution F1 (2.1.2), Execution Error Count (2.1.3),
Spider-style difficulty (2.4.1), averages grouped by identical gold SQL (3.2) and the SQL-first generation
pipeline (2.2, ``sqleval generate``). Every expected number is worked out by hand from the paper's formulas in the
comments; the metric functions, then ``pytest --sqleval`` (serial, ``-n 2``; SQLite, DuckDB, PostgreSQL) must give
them. Real SQLite/DuckDB files and the real PostgreSQL server, the loopback chat server for the model."""

from __future__ import annotations

import json
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest
import sqlalchemy

from chat_server import chat_fixture
from conftest import make_sqlite, require_module
from pytest_sqleval.aggregate import aggregate_suite
from pytest_sqleval.comparison import EXECUTION_PROFILES
from pytest_sqleval.execution.backends import read_schema
from pytest_sqleval.metrics.execution_match import compare_results
from pytest_sqleval.metrics.hardness import classify_hardness
from pytest_sqleval.metrics.soft_f1 import soft_f1
from pytest_sqleval.results import QueryResult

MRO = EXECUTION_PROFILES["mro"]

chat = chat_fixture()


def result(columns: int, rows: list[tuple]) -> QueryResult:
    return QueryResult(tuple(f"c{i}" for i in range(columns)), rows)


# ============================================================================ Soft Execution F1 (2.1.2), by hand
#
# Precision[n,t] = (1/S) #{s: P[s,t] in G[:,n]}, Recall[n,t] = (1/M) #{m: G[m,n] in P[:,t]},
# F1[n,t] = 2PR/(P+R); then Precision = mean over t of max_n F1, Recall = mean over n of max_t F1, F1 of those.
SOFT_CASES = [
    # Columns in another order, one predicted row missing. Gold (reg, seats) = (A,300)(B,290)(C,350);
    # prediction (seats, reg) = (350,C)(300,A). F1[reg,reg]: P 2/2, R 2/3 -> 4/5; F1[seats,seats] = 4/5 too;
    # the cross pairs share no value (text vs numbers) -> 0. Precision = (4/5 + 4/5)/2, Recall the same: 4/5.
    pytest.param(2, [("A", 300), ("B", 290), ("C", 350)], 2, [(350, "C"), (300, "A")], Fraction(4, 5),
                 id="columns-swapped-one-row-missing"),
    # The same gold column twice, predicted once. Gold (a, a) = (1,1)(2,2); prediction (a) = (1)(2).
    # F1[0,0] = F1[1,0] = 1: Precision = 1/1, Recall = (1 + 1)/2 = 1 -> 1. (A column may be the best of several.)
    pytest.param(2, [(1, 1), (2, 2)], 1, [(1,), (2,)], Fraction(1), id="duplicate-gold-column"),
    # The same predicted column twice, gold once: symmetric, Precision = (1 + 1)/2, Recall 1 -> 1.
    pytest.param(1, [(1,), (2,)], 2, [(1, 1), (2, 2)], Fraction(1), id="duplicate-predicted-column"),
    # More columns than gold: gold (shop) = (X)(Y); prediction (shop, n, hours) = (X,5,1.5)(Y,7,2.5).
    # Only F1[shop,shop] = 1. Precision = (1 + 0 + 0)/3 = 1/3, Recall = 1 -> 2(1/3)/(4/3) = 1/2.
    pytest.param(1, [("X",), ("Y",)], 3, [("X", 5, 1.5), ("Y", 7, 2.5)], Fraction(1, 2), id="two-extra-columns"),
    # Fewer columns than gold: gold (shop, n, hours), prediction (hours): F1[hours,hours] = 1, others 0.
    # Precision = 1/1, Recall = 1/3 -> 2(1/3)/(4/3) = 1/2.
    pytest.param(3, [("X", 5, 1.5), ("Y", 7, 2.5)], 1, [(1.5,), (2.5,)], Fraction(1, 2), id="two-missing-columns"),
    # Duplicate predicted rows count in the sums: gold (x) = (1)(2)(3); prediction (1)(1)(1)(4).
    # P = 3/4 (three 1s are in gold, 4 is not), R = 1/3 (only 1 is in the prediction) -> 2(1/4)/(13/12) = 6/13.
    pytest.param(1, [(1,), (2,), (3,)], 1, [(1,), (1,), (1,), (4,)], Fraction(6, 13), id="duplicate-rows"),
    # Duplicate gold rows: gold (1)(1)(2), prediction (1): P = 1/1, R = 2/3 -> 2(2/3)/(5/3) = 4/5.
    pytest.param(1, [(1,), (1,), (2,)], 1, [(1,)], Fraction(4, 5), id="duplicate-gold-rows"),
    # NULL is a value and NULL = NULL: gold (NULL)(5)(NULL)(6); prediction (NULL)(7).
    # P = 1/2 (NULL found, 7 not), R = 2/4 (both NULLs found) -> 1/2.
    pytest.param(1, [(None,), (5,), (None,), (6,)], 1, [(None,), (7,)], Fraction(1, 2), id="nulls"),
    # Floats against ints: 2 = 2.0, 3 != 3.5. Gold (2.0)(3.5); prediction (2)(3): P = 1/2, R = 1/2 -> 1/2.
    pytest.param(1, [(2.0,), (3.5,)], 1, [(2,), (3,)], Fraction(1, 2), id="floats-vs-ints"),
    # Text against numbers: '1' is not 1, so nothing is shared -> 0.
    pytest.param(1, [(1,), (2,)], 1, [("1",), ("2",)], Fraction(0), id="text-vs-numbers"),
    # One row against many: gold (max) = (9); prediction (1)(5)(9)(9)(2): P = 2/5, R = 1/1 -> 2(2/5)/(7/5) = 4/7.
    pytest.param(1, [(9,)], 1, [(1,), (5,), (9,), (9,), (2,)], Fraction(4, 7), id="one-row-vs-many"),
    # Many rows against one: the mirror image, P = 1/1, R = 2/5 -> 4/7.
    pytest.param(1, [(1,), (5,), (9,), (9,), (2,)], 1, [(9,)], Fraction(4, 7), id="many-rows-vs-one"),
    # A tie in the best pairing: gold (a, b) = (1,3)(2,4); prediction (c) = (1)(3).
    # F1[a,c]: P 1/2, R 1/2 -> 1/2; F1[b,c]: P 1/2, R 1/2 -> 1/2. max_n = 1/2 (either), so Precision = 1/2;
    # Recall = (1/2 + 1/2)/2 = 1/2 -> 1/2.
    pytest.param(2, [(1, 3), (2, 4)], 1, [(1,), (3,)], Fraction(1, 2), id="tie-in-the-best-pairing"),
    # Unequal column-wise scores: gold (a, b) = (1,x)(2,y)(3,z); prediction (b, a) = (x,1)(q,9).
    # F1[a,a]: P 1/2, R 1/3 -> 2/5; F1[b,b]: the same 2/5; cross pairs 0. Precision = Recall = 2/5 -> 2/5.
    pytest.param(2, [(1, "x"), (2, "y"), (3, "z")], 2, [("x", 1), ("q", 9)], Fraction(2, 5), id="partial-both"),
    # Empty results on either side: both empty 1, exactly one empty 0.
    pytest.param(2, [], 1, [], Fraction(1), id="both-empty-other-widths"),
    pytest.param(1, [(1,)], 1, [], Fraction(0), id="prediction-empty"),
    pytest.param(1, [], 1, [(1,)], Fraction(0), id="gold-empty"),
]


@pytest.mark.parametrize("gold_width, gold_rows, pred_width, pred_rows, expected", SOFT_CASES)
def test_soft_f1_by_hand(gold_width, gold_rows, pred_width, pred_rows, expected):
    assert soft_f1(result(gold_width, gold_rows), result(pred_width, pred_rows)) == float(expected)


def test_soft_f1_does_not_care_about_row_or_column_order():
    """The paper's limitation A.2: order-insensitive. Every permutation of the rows and of the columns of the
    prediction of 'columns-swapped-one-row-missing' (4/5) scores 4/5."""
    gold = result(2, [("A", 300), ("B", 290), ("C", 350)])
    for rows in ([(350, "C"), (300, "A")], [(300, "A"), (350, "C")]):
        assert soft_f1(gold, result(2, rows)) == 0.8
        assert soft_f1(gold, result(2, [(b, a) for a, b in rows])) == 0.8


# ============================================================================ Execution Accuracy (2.1.1), profile mro
#
# Same number of rows and columns; a one-to-one pairing of columns in which each pair is identical value for
# value in row order; column names never count.
EX_CASES = [
    # columns permuted, rows in the same order: the pairing (reg->1, seats->0) exists
    pytest.param(2, [("A", 300), ("B", 290)], 2, [(300, "A"), (290, "B")], True, None, id="columns-permuted"),
    # rows in another order: each column is compared in row order, so no column pairs off
    pytest.param(2, [("A", 300), ("B", 290)], 2, [("B", 290), ("A", 300)], False, "order", id="rows-permuted"),
    # two gold columns equal to each other, the prediction repeats one of them: (1,1)(2,2) vs (1,1)(2,2) matches;
    # (a, a) vs (a, b) does not: both gold columns would need the one predicted column a (not one-to-one)
    pytest.param(2, [(1, 1), (2, 2)], 2, [(1, 1), (2, 2)], True, None, id="duplicate-columns-both-sides"),
    pytest.param(2, [(1, 1), (2, 2)], 2, [(1, 7), (2, 8)], False, "values", id="duplicate-gold-columns"),
    # more or fewer columns than gold: the dimensions differ
    pytest.param(1, [(1,), (2,)], 2, [(1, 1), (2, 2)], False, "column_count", id="extra-column"),
    pytest.param(2, [(1, 5), (2, 6)], 1, [(1,), (2,)], False, "column_count", id="missing-column"),
    # duplicate rows: 3 rows against 2
    pytest.param(1, [(1,), (1,), (2,)], 1, [(1,), (2,)], False, "duplicates", id="duplicate-rows"),
    # ints and floats of equal value, NULL = NULL
    pytest.param(2, [(2.0, None), (3.5, "x")], 2, [(None, 2), ("x", 3.5)], True, None, id="floats-ints-nulls"),
    # text is not a number
    pytest.param(1, [(1,)], 1, [("1",)], False, "values", id="text-vs-number"),
    # empty results: both empty with the same width match (vacuously); other widths or one side empty do not
    pytest.param(2, [], 2, [], True, None, id="both-empty"),
    pytest.param(2, [], 1, [], False, "empty", id="both-empty-other-widths"),
    pytest.param(1, [(1,)], 1, [], False, "row_count", id="prediction-empty"),
]


@pytest.mark.parametrize("gold_width, gold_rows, pred_width, pred_rows, match, reason", EX_CASES)
def test_mro_execution_accuracy_by_hand(gold_width, gold_rows, pred_width, pred_rows, match, reason):
    verdict = compare_results(result(gold_width, gold_rows), result(pred_width, pred_rows), MRO, ordered=True)
    assert (verdict.match, verdict.reason) == (match, reason)


def test_a_mro_match_always_scores_soft_f1_one():
    """Whenever the mro profile matches, every column has a content-identical partner, so Soft F1 is 1."""
    for gold_width, gold_rows, pred_width, pred_rows, match, _ in (p.values for p in EX_CASES):
        if match:
            assert soft_f1(result(gold_width, gold_rows), result(pred_width, pred_rows)) == 1.0


# ============================================================================ difficulty (2.4.1): Spider's rules
#
# c1 = [WHERE] + [GROUP BY] + [ORDER BY] + [LIMIT] + (tables - 1) + #OR + #LIKE; c2 = nested conditions +
# set operations; others = [>1 aggregate] + [>1 SELECT item] + [>1 WHERE condition] + [>1 GROUP BY column].
# easy: c1 <= 1, others = 0, c2 = 0; medium: (others <= 2, c1 <= 1, c2 = 0) or (c1 <= 2, others < 2, c2 = 0);
# hard: (others > 2, c1 <= 2, c2 = 0) or (2 < c1 <= 3, others <= 2, c2 = 0) or (c1 <= 1, others = 0, c2 <= 1).
# Each level below was also checked against the official evaluation.py's eval_hardness.
HARDNESS = [
    ("SELECT reg FROM fleet", (0, 0, 0), "easy"),
    ("SELECT reg FROM fleet WHERE seats > 260", (1, 0, 0), "easy"),                          # c1 = 1 edge
    ("SELECT reg, type FROM fleet WHERE seats > 260", (1, 0, 1), "medium"),                  # others 1
    ("SELECT reg, type FROM fleet WHERE seats > 260 AND type = 'A350'", (1, 0, 2), "medium"),  # others 2, c1 1
    ("SELECT reg FROM fleet WHERE seats > 260 ORDER BY reg", (2, 0, 0), "medium"),           # c1 2, others 0
    ("SELECT reg, type FROM fleet WHERE seats > 260 ORDER BY reg", (2, 0, 1), "medium"),     # c1 2, others 1
    # c1 = 2 and others = 2: neither medium rule (others < 2) nor a hard rule (others > 2) holds -> extra
    ("SELECT reg, type FROM fleet WHERE seats > 260 AND type = 'A350' ORDER BY reg", (2, 0, 2), "extra"),
    # others 3 (two aggregates, two items, two conditions) with c1 = 2 -> hard
    ("SELECT type, COUNT(*), MAX(seats) FROM fleet WHERE seats > 1 AND reg != 'x' GROUP BY type", (2, 0, 3), "hard"),
    ("SELECT type FROM fleet WHERE seats > 1 GROUP BY type ORDER BY type", (3, 0, 0), "hard"),  # c1 = 3 edge
    ("SELECT type FROM fleet WHERE seats > 1 GROUP BY type ORDER BY type LIMIT 1", (4, 0, 0), "extra"),  # c1 4
    ("SELECT reg FROM fleet WHERE seats IN (SELECT seats FROM fleet)", (1, 1, 0), "hard"),     # one nested query
    ("SELECT reg FROM fleet UNION SELECT type FROM fleet", (0, 1, 0), "hard"),                 # one set operation
    ("SELECT reg, type FROM fleet WHERE seats IN (SELECT seats FROM fleet)", (1, 1, 1), "extra"),  # + others 1
    ("SELECT reg FROM fleet WHERE seats = 1 OR seats = 2", (2, 0, 1), "medium"),              # OR counts in c1
    ("SELECT reg FROM fleet WHERE reg LIKE '9V%'", (2, 0, 0), "medium"),                      # LIKE counts in c1
    ("SELECT f.reg FROM fleet AS f JOIN layovers AS l ON f.reg = l.reg", (1, 0, 0), "easy"),  # 2 tables: c1 1
]


@pytest.fixture
def fleet_db(tmp_path: Path) -> Path:
    return make_sqlite(tmp_path / "fleet.sqlite", FLEET_SQL)


FLEET_SQL = """
CREATE TABLE fleet (reg TEXT PRIMARY KEY, type TEXT, seats INTEGER);
CREATE TABLE layovers (id INTEGER PRIMARY KEY, reg TEXT REFERENCES fleet(reg), station TEXT, hours REAL);
INSERT INTO fleet VALUES ('9V-A', 'A350', 300), ('9V-B', 'A350', 290), ('9V-C', 'B777', 350), ('9V-D', 'B787', 250);
INSERT INTO layovers VALUES (1, '9V-A', 'SIN', 2.0), (2, '9V-B', 'SIN', 4.5), (3, '9V-A', 'HKG', 2.0),
                            (4, '9V-C', 'BKK', 6.0), (5, '9V-D', 'SIN', 1.0), (6, '9V-A', 'BKK', 3.0);
"""


def test_difficulty_at_each_boundary(fleet_db):
    engine = sqlalchemy.create_engine(f"sqlite:///{fleet_db}")
    try:
        schema = read_schema(engine)
    finally:
        engine.dispose()
    for sql, counts, level in HARDNESS:
        got = classify_hardness(sql, schema)
        assert (got.component1, got.component2, got.others, got.level) == (*counts, level), sql


# ============================================================================ grouped averages (3.2), by hand
def _record(index: int, gold: str | None, *, ex: bool, soft: float, valid: bool = True, outcome: str | None = None,
            expected_rows: bool = False) -> dict:
    return {"suite": "s", "id": f"c{index}", "index": index, "gold": gold, "valid": valid,
            "error": None if valid else {"kind": "syntax", "message": "x"}, "execution_match": ex,
            "soft_f1": soft, "vacuous": False, "passed_rule": ex,
            "outcome": outcome or ("passed" if ex else "missed"), "difficulty": "easy", "tags": [],
            **({"expected": {"columns": ["a"], "row_count": 1, "rows": [[1]]}} if expected_rows else {})}


def test_grouped_averages_average_each_gold_first():
    """Gold A (three spellings: spaces, a newline, a trailing ';') has EX 1, 0, 0 and soft 1, 1/2, 0 (one of
    them an error); gold B has EX 1, soft 1; gold C's only case is a suite error (gold failed): no group at all;
    two cases with `expected:` rows (no gold) are one group each, EX 0 and 1, soft 1/4 and 1.

    Plain: 6 scored cases: EX (1+0+0+1+0+1)/6 = 1/2; soft (1 + 1/2 + 0 + 1 + 1/4 + 1)/6 = 3.75/6 = 5/8;
    errors 1; valid 5/6.
    Grouped: 4 groups. A: EX 1/3, soft 1/2, error rate 1/3, valid 2/3. B: 1, 1, 0, 1. E1: 0, 1/4, 0, 1.
    E2: 1, 1, 0, 1. EX (1/3 + 1 + 0 + 1)/4 = 7/12; soft (1/2 + 1 + 1/4 + 1)/4 = 11/16;
    error_count = sum of the rates = 1/3; valid (2/3 + 3)/4 = 11/12."""
    records = [
        _record(0, "SELECT reg FROM fleet", ex=True, soft=1.0),
        _record(1, "SELECT  reg\nFROM fleet ;", ex=False, soft=0.5),
        _record(2, "  SELECT reg FROM fleet;", ex=False, soft=0.0, valid=False),
        _record(3, "SELECT type FROM fleet", ex=True, soft=1.0),
        _record(4, "SELECT seats FROM fleet", ex=False, soft=0.0, outcome="error"),
        _record(5, None, ex=False, soft=0.25, expected_rows=True),
        _record(6, None, ex=True, soft=1.0, expected_rows=True),
    ]
    summary = aggregate_suite(records)
    metrics, grouped = summary["metrics"], summary["by_gold_sql"]
    assert metrics["execution_accuracy"] == pytest.approx(1 / 2)
    assert metrics["soft_f1"] == pytest.approx(5 / 8)
    assert metrics["error_count"] == 1 and metrics["valid_syntax"] == pytest.approx(5 / 6)
    assert grouped["groups"] == 4
    assert grouped["execution_accuracy"] == pytest.approx(7 / 12)
    assert grouped["soft_f1"] == pytest.approx(11 / 16)
    assert grouped["error_count"] == pytest.approx(1 / 3)
    assert grouped["valid_syntax"] == pytest.approx(11 / 12)
    assert "vacuous" not in grouped  # a count of vacuous matches is not averaged per gold


def test_case_differences_are_different_golds():
    """Identical means identical text up to white space and a trailing ';': `select` is not `SELECT`, so two
    groups: EX (1 + 0)/2 = 1/2 grouped, as plain."""
    records = [_record(0, "SELECT reg FROM fleet", ex=True, soft=1.0),
               _record(1, "select reg from fleet", ex=False, soft=0.0)]
    grouped = aggregate_suite(records)["by_gold_sql"]
    assert grouped["groups"] == 2 and grouped["execution_accuracy"] == 0.5


# ============================================================================ through pytest --sqleval (profile mro)
SCHEMA_SQL = """
CREATE TABLE layovers (id INTEGER PRIMARY KEY, reg TEXT, station TEXT, hours REAL, crew INTEGER, remark TEXT);
INSERT INTO layovers VALUES (1, '9V-AA', 'SIN', 2.0, 3, NULL);
INSERT INTO layovers VALUES (2, '9V-AB', 'SIN', 4.5, 2, 'wx');
INSERT INTO layovers VALUES (3, '9V-AA', 'HKG', 2.0, 3, NULL);
INSERT INTO layovers VALUES (4, '9V-AC', 'BKK', 6.0, 1, 'tyre');
"""

SUITE = """
suite: mro-third-look
database: {url: "sqlite://", setup: [schema.sql]}
execution: mro
pass_if: execution_match
cases:
  - {id: c01, gold: "SELECT reg, station FROM layovers ORDER BY id", predicted: "SELECT station, reg FROM layovers ORDER BY id"}
  - {id: c02, gold: "SELECT reg FROM layovers ORDER BY id", predicted: "SELECT reg FROM layovers ORDER BY id DESC"}
  - {id: c03, gold: "SELECT station, COUNT(*) AS n FROM layovers GROUP BY station ORDER BY station", predicted: "SELECT station FROM layovers GROUP BY station ORDER BY station"}
  - {id: c04, gold: "SELECT reg FROM layovers WHERE station = 'SIN'", predicted: "SELECT reg, crew FROM layovers WHERE station = 'SIN'"}
  - {id: c05, gold: "SELECT DISTINCT reg FROM layovers ORDER BY reg", predicted: "SELECT reg FROM layovers ORDER BY reg"}
  - {id: c06, gold: "SELECT remark FROM layovers ORDER BY id", predicted: "SELECT remark FROM layovers WHERE remark IS NULL"}
  - {id: c07, gold: "SELECT hours FROM layovers WHERE reg = '9V-AA'", predicted: "SELECT crew - 1 FROM layovers WHERE reg = '9V-AA'"}
  - {id: c08, gold: "SELECT crew FROM layovers WHERE id = 1", predicted: "SELECT '3'"}
  - {id: c09, gold: "SELECT reg FROM layovers WHERE crew = 1", predicted: "SELECT reg FROM layovers WHERE crew > 5"}
  - {id: c10, gold: "SELECT reg FROM layovers WHERE crew > 5", predicted: "SELECT station FROM layovers WHERE hours > 100"}
  - {id: c11, gold: "SELECT reg FROM layovers WHERE crew > 5", predicted: "SELECT reg, station FROM layovers WHERE crew > 5"}
  - {id: c12, gold: "SELECT MAX(hours) FROM layovers", predicted: "SELECT hours FROM layovers"}
  - {id: c13, gold: "SELECT crew, crew + 0 AS c2 FROM layovers WHERE station = 'SIN'", predicted: "SELECT crew FROM layovers"}
  - {id: c14, gold: "SELECT reg, station FROM layovers ORDER BY id", predicted: "SELECT nope FROM layovers"}
  - {id: c15, gold: "SELECT reg,  station\\n  FROM layovers ORDER BY id;"}
  - {id: c16, gold: "SELECT station,  COUNT(*) AS n FROM layovers GROUP BY station ORDER BY station;", predicted: "SELECT station, COUNT(*) AS n FROM layovers GROUP BY station ORDER BY station"}
"""

# Per case (EX under mro, Soft F1, difficulty), by hand on the four rows above:
# c01 columns swapped, rows in order: EX 1, F1 1. Gold: c1 = 1 (ORDER BY), others 1 (2 items) -> medium.
# c02 rows reversed: mro compares every column in row order -> EX 0; the same multiset -> F1 1. easy.
# c03 gold (station, n) = (BKK,1)(HKG,1)(SIN,2), prediction (station): F1[station,station] = 1, F1[n,station] = 0:
#     P = 1/1, R = 1/2 -> 2/3 (the paper's 3.2.1 example). c1 2 (GROUP BY, ORDER BY), others 1 -> medium.
# c04 gold reg = (AA)(AB), prediction (reg, crew) = (AA,3)(AB,2): P = (1 + 0)/2, R = 1 -> 2/3. easy.
# c05 gold AA, AB, AC; prediction AA, AA, AB, AC: 4 rows against 3 -> EX 0; P = 4/4, R = 3/3 -> F1 1. easy.
# c06 gold NULL, wx, NULL, tyre; prediction NULL, NULL: P = 2/2, R = 2/4 -> 2/3. easy.
# c07 gold 2.0, 2.0; prediction 3 - 1 = 2, 2: 2 = 2.0 -> EX 1, F1 1. easy.
# c08 gold 3; prediction '3' (text): EX 0, F1 0. easy.
# c09 gold (AC); prediction empty: EX 0, F1 0. easy.
# c10 both empty, one column each: EX 1 (a vacuous match), F1 1. easy.
# c11 both empty, 1 column against 2: EX 0 (dimensions differ), F1 1 (both without rows). easy (c10's gold).
# c12 gold (6.0); prediction 2.0, 4.5, 2.0, 6.0: P = 1/4, R = 1/1 -> 2(1/4)/(5/4) = 2/5. easy.
# c13 gold (crew, c2) = (3,3)(2,2); prediction 3, 2, 3, 1: F1[crew,t] = F1[c2,t]: P 3/4, R 2/2 -> 6/7 (a tie);
#     Precision = 6/7, Recall = (6/7 + 6/7)/2 = 6/7 -> 6/7. c1 1, others 1 -> medium.
# c14 no such column: a syntax error, EX 0, F1 0. (c01's gold) medium.
# c15 no prediction: an error of kind no_prediction, EX 0, F1 0. (c01's gold, other spacing and ';') medium.
# c16 the prediction is the gold: EX 1, F1 1. (c03's gold, other spacing and ';') medium.
CASE_EXPECTED = {
    "c01": (True, Fraction(1), "medium"), "c02": (False, Fraction(1), "easy"),
    "c03": (False, Fraction(2, 3), "medium"), "c04": (False, Fraction(2, 3), "easy"),
    "c05": (False, Fraction(1), "easy"), "c06": (False, Fraction(2, 3), "easy"),
    "c07": (True, Fraction(1), "easy"), "c08": (False, Fraction(0), "easy"),
    "c09": (False, Fraction(0), "easy"), "c10": (True, Fraction(1), "easy"),
    "c11": (False, Fraction(1), "easy"), "c12": (False, Fraction(2, 5), "easy"),
    "c13": (False, Fraction(6, 7), "medium"), "c14": (False, Fraction(0), "medium"),
    "c15": (False, Fraction(0), "medium"), "c16": (True, Fraction(1), "medium"),
}
# Suite, 16 cases. EX: c01, c07, c10, c16 -> 4/16 = 1/4. Valid: 14/16 = 7/8. Error count 2 (syntax 1,
# no_prediction 1). Soft F1 sum: seven 1s (c01 c02 c05 c07 c10 c11 c16) + 3 x 2/3 + 2/5 + 6/7 = 9 + 44/35
# = 359/35 -> mean 359/560. Vacuous 1 (c10).
# Groups (12): G1 c01 c14 c15: EX 1/3, F1 1/3, valid 1/3, error rate 2/3. G3 c03 c16: EX 1/2, F1 5/6.
# G10 c10 c11: EX 1/2, F1 1. The other nine are single cases (c02 c04 c05 c06 c07 c08 c09 c12 c13).
# Grouped EX = (1/3 + 1/2 + 1/2 + 1 [c07]) / 12 = (7/3)/12 = 7/36.
# Grouped F1 = (1/3 + 5/6 + 1 + [1 + 2/3 + 1 + 2/3 + 1 + 0 + 0 + 2/5 + 6/7]) / 12 = (543/70)/12 = 181/280.
# Grouped valid = (1/3 + 11)/12 = 17/18; grouped error_count = 2/3 (only G1 has errors).
# By difficulty: easy c02 c04-c12 (10 cases): EX c07, c10 -> 2/10; medium c01 c03 c13-c16 (6): EX c01, c16 -> 1/3.
PLAIN = {"execution_accuracy": Fraction(1, 4), "valid_syntax": Fraction(7, 8), "soft_f1": Fraction(359, 560)}
GROUPED = {"execution_accuracy": Fraction(7, 36), "soft_f1": Fraction(181, 280), "valid_syntax": Fraction(17, 18),
           "error_count": Fraction(2, 3)}


def _write_suite(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("schema.sql").write_text(SCHEMA_SQL, encoding="utf-8")
    pytester.makefile(".sqleval.yaml", mro=textwrap.dedent(SUITE))


def _run_report(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    report = pytester.path / "report.json"
    if report.exists():
        report.unlink()
    outcome = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    return outcome, json.loads(report.read_text(encoding="utf-8"))


def _check_report(report: dict) -> None:
    cases = {c["id"]: c for c in report["cases"] if c["suite"] == "mro-third-look"}
    assert set(cases) == set(CASE_EXPECTED)
    for case_id, (match, soft, level) in CASE_EXPECTED.items():
        case = cases[case_id]
        assert (case["execution_match"], case["soft_f1"], case["difficulty"]) == (match, float(soft), level), case_id
    assert cases["c14"]["error"]["kind"] == "syntax" and cases["c15"]["error"]["kind"] == "no_prediction"
    assert cases["c10"]["vacuous"] is True and cases["c11"]["mismatch"]["reason"] == "empty"
    assert cases["c02"]["mismatch"]["reason"] == "order" and cases["c05"]["mismatch"]["reason"] == "duplicates"
    suite = next(s for s in report["suites"] if s["name"] == "mro-third-look")
    assert suite["execution"]["profile"] == "mro"
    metrics, grouped = suite["metrics"], suite["by_gold_sql"]
    for name, value in PLAIN.items():
        assert metrics[name] == pytest.approx(float(value), abs=1e-12), name
    assert metrics["error_count"] == 2 and metrics["errors_by_kind"] == {"no_prediction": 1, "syntax": 1}
    assert metrics["vacuous"] == 1
    assert grouped["groups"] == 12
    for name, value in GROUPED.items():
        assert grouped[name] == pytest.approx(float(value), abs=1e-12), name
    by_level = suite["by_difficulty"]
    assert (by_level["easy"]["cases"], by_level["medium"]["cases"]) == (10, 6)
    assert by_level["easy"]["execution_accuracy"] == pytest.approx(0.2)
    assert by_level["medium"]["execution_accuracy"] == pytest.approx(1 / 3)
    assert by_level["medium"]["error_count"] == 2 and by_level["easy"]["error_count"] == 0


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_mro_report_on_sqlite_is_the_hand_computed_one(pytester, workers):
    """Also the grouped gates: by_gold_sql.error_count is a maximum (2/3 > 0.6 fails, exit status 1),
    by_gold_sql.soft_f1 a minimum (181/280 = 0.6464 >= 0.64 passes)."""
    _write_suite(pytester)
    outcome, report = _run_report(pytester, "--sqleval-threshold", "by_gold_sql.error_count=0.6",
                                  "--sqleval-threshold", "by_gold_sql.soft_f1=0.64", *workers)
    assert outcome.ret == 1, outcome.stdout.str()
    _check_report(report)
    lines = [line.strip() for line in outcome.outlines]
    assert any(line.startswith("FAIL by_gold_sql.error_count 0.6667") for line in lines), lines
    assert any(line.startswith("PASS by_gold_sql.soft_f1 0.6464") for line in lines), lines
    # the summary's rows: the plain value, then the per-gold-SQL value (error_count: the sum of the group rates)
    assert any(line.split()[:3] == ["error_count", "2", "0.6667"] for line in lines), lines
    # label, value, [lo, hi], the per-gold value, then its interval
    assert any(line.split()[:1] == ["execution_accuracy"] and line.split()[4] == "0.1944" for line in lines)


# PostgreSQL hands numeric as Decimal: AVG(crew) over crews 3, 2, 3, 1 is Decimal('2.25...') = 2.25 and
# SUM(crew)::numeric is Decimal('9') = 9: against a float or an int of the same value they are equal (EX 1,
# soft F1 1; the columns of `sum` swapped); against 2.2, a different float, nothing matches (EX 0, soft F1 0).
PG_NUMERIC_SUITE = """
database: {url: "sqlite://", setup: [schema.sql]}
execution: mro
cases:
  - {id: avg, gold: "SELECT AVG(crew) FROM layovers", predicted: "SELECT 2.25::float8"}
  - {id: sum, gold: "SELECT SUM(crew)::numeric, COUNT(*) FROM layovers", predicted: "SELECT 4, 9"}
  - {id: apart, gold: "SELECT AVG(crew) FROM layovers", predicted: "SELECT 2.2::float8"}
"""


@pytest.mark.parametrize("engine", ["duckdb", "postgresql"])
def test_the_same_report_on_duckdb_and_postgresql(pytester, engine, request):
    """The suite's setup script built on DuckDB and on PostgreSQL gives the same hand-computed report (REAL
    is a 4-byte float there; 2.0, 4.5 and 6.0 are exact in it), and PG_NUMERIC_SUITE's Decimal values
    (PostgreSQL's AVG and ::numeric, DuckDB's ::numeric) equal floats and ints of the same value."""
    if engine == "duckdb":
        request.getfixturevalue("duckdb_available")
        url = "duckdb://"
    else:
        url = request.getfixturevalue("postgres_url")
    _write_suite(pytester)
    pytester.makefile(".sqleval.yaml", numeric=textwrap.dedent(PG_NUMERIC_SUITE))
    if engine == "postgresql":
        pytester.makefile(".sqleval.yaml", huge=textwrap.dedent(PG_HUGE_SUITE))
    outcome, report = _run_report(pytester, f"--sqleval-database-url={url}")
    assert outcome.ret == 0, outcome.stdout.str()
    _check_report(report)
    cases = {c["id"]: c for c in report["cases"] if c["suite"] == "numeric"}
    assert [(cases[i]["execution_match"], cases[i]["soft_f1"]) for i in ("avg", "sum", "apart")] == [
        (True, 1.0), (True, 1.0), (False, 0.0)]
    if engine == "postgresql":
        cases = {c["id"]: c for c in report["cases"] if c["suite"] == "huge"}
        assert [(cases[i]["outcome"], cases[i]["execution_match"], cases[i]["soft_f1"]) for i in ("big", "one")] == [
            ("missed", False, 0.5), ("missed", False, 0.0)]


# Predicted SQL is untrusted: a prediction returning 1e400::numeric (an int far beyond a float's range once
# normalised) beside 0.25 is scored (a miss), never an internal error that fails the run.
# big: the gold has 1e400 and 0.5: EX 0, soft F1: P 1/2, R 1/2 -> 1/2.
# one: gold (1), prediction (1e400)(0.25): EX 0 (row count), soft F1 0 (no value shared).
PG_HUGE_SUITE = """
database: {url: "sqlite://", setup: [schema.sql]}
execution: mro
cases:
  - {id: big, gold: "SELECT x FROM (VALUES (1e400::numeric), (0.5::numeric)) AS v(x)",
     predicted: "SELECT x FROM (VALUES (1e400::numeric), (0.25::numeric)) AS v(x)"}
  - {id: one, gold: "SELECT 1", predicted: "SELECT x FROM (VALUES (1e400::numeric), (0.25::numeric)) AS v(x)"}
"""


# ============================================================================ sqleval generate (2.2)
GEN_SQL = [
    "SELECT reg FROM fleet WHERE seats > 260",                       # 2 rows: kept
    "SELECT type, COUNT(*) AS n FROM fleet GROUP BY type",          # 3 rows: kept at --max-result-rows 3
    "SELECT reg FROM fleet",                                         # 4 rows: too many at 3
    "SELECT reg FROM fleet WHERE seats > 1000",                      # no rows
    "SELECT MAX(seats) FROM fleet WHERE seats > 1000",               # one NULL: as empty
    "UPDATE fleet SET seats = 0",                                    # not a read: the guard refuses it
    "SELECT reg FROM fleet WHERE",                                   # does not parse
    "SELECT reg FROM fleet WHERE seats > 260;",                      # the first one again
]


def _gen_script() -> dict[str, list]:
    items = [{"reasoning": f"step {i}", "sql": sql} for i, sql in enumerate(GEN_SQL)]
    return {"Cover this mix": ["Reasoning first.\n```json\n" + json.dumps(items) + "\n```"],
            "SQL to explain:\nSELECT reg FROM fleet WHERE seats > 260": ['{"reasoning": "r", "question": "Big jets?"}'],
            "SQL to explain:\nSELECT type, COUNT(*)": ['{"reasoning": "r", "question": "Jets per type?"}']}


def _generate(*args: str) -> int:
    from pytest_sqleval.datasets.cli import main

    return main(["generate", *args, "--model", "test-model", "--cache-mode", "off"])


def _mix_lines(server) -> list[str]:
    return [line for r in server.requests for line in r.messages[-1]["content"].splitlines()
            if line.startswith("Cover this mix")]


def test_generate_filters_what_the_paper_filters_and_reruns_byte_for_byte(tmp_path, chat, capsys):
    """Not executable (does not parse, refused), too many rows (4 > 3; 3 rows is kept: "at most"), empty or all
    NULL, a duplicate: dropped for their reasons; the two survivors become cases with their difficulty. The same
    seed and replies write the same bytes."""
    require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
    db = make_sqlite(tmp_path / "fleet.sqlite", FLEET_SQL)
    out = tmp_path / "gen" / "fleet.sqleval.yaml"
    server = chat(_gen_script())
    args = (str(db), "-o", str(out), "--count", "8", "--batch", "8", "--max-result-rows", "3", "--seed", "11")
    assert _generate(*args) == 0, capsys.readouterr().err
    first = out.read_bytes(), out.with_name("fleet.report.json").read_bytes()
    report = json.loads(first[1])
    assert report["proposed"] == 8 and report["kept"] == 2
    assert report["dropped"] == {"unparsable": 1, "does_not_run": 1, "empty_result": 2, "too_many_rows": 1,
                                 "nondeterministic": 0, "duplicate": 1, "no_question": 0, "disagreement": 0}
    assert {r.body.get("seed") for r in server.requests} == {11}
    import yaml

    suite = yaml.safe_load(first[0])
    # WHERE only: c1 1, others 0 -> easy; GROUP BY with two items and an aggregate: c1 1, others 1 -> medium
    assert [(c["gold"], c["difficulty"]) for c in suite["cases"]] == [(GEN_SQL[0], "easy"), (GEN_SQL[1], "medium")]
    server.reset()
    assert _generate(*args) == 0
    assert (out.read_bytes(), out.with_name("fleet.report.json").read_bytes()) == first


def test_generate_spreads_the_mix_over_the_requests(tmp_path, chat, capsys):
    """--count 4 --batch 1 --mix join,where,easy,hard: the run's quotas are 2 JOIN, 2 WHERE, 2 easy, 2 hard, so
    the four one-query requests must ask for each of them twice (every request asked for the first name by
    alphabet, JOIN and easy, and never for WHERE or hard)."""
    require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
    db = make_sqlite(tmp_path / "fleet.sqlite", FLEET_SQL)
    server = chat(_gen_script())
    assert _generate(str(db), "-o", str(tmp_path / "m.sqleval.yaml"), "--count", "4", "--batch", "1",
                     "--mix", "join=1,where=1,easy=1,hard=1") == 0, capsys.readouterr().err
    lines = _mix_lines(server)
    assert len(lines) == 4
    assert sum("1 using JOIN" in line for line in lines) == 2
    assert sum("1 using WHERE" in line for line in lines) == 2
    assert sum("difficulty: 1 easy" in line for line in lines) == 2
    assert sum("difficulty: 1 hard" in line for line in lines) == 2


def test_generate_quotas_over_batches_follow_the_weights(tmp_path, chat, capsys):
    """--count 20 --batch 10 with the six clause types of weight 1: 20/6 = 3.33 each, so the run asks for 3 or 4
    of each (largest remainder, ties by name: group_by and having get 4), summed over the two requests; the
    difficulty classes (easy, medium, hard, extra: 5 each) likewise."""
    require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
    import re

    db = make_sqlite(tmp_path / "fleet.sqlite", FLEET_SQL)
    server = chat(_gen_script())
    assert _generate(str(db), "-o", str(tmp_path / "q.sqleval.yaml"), "--count", "20", "--batch", "10") == 0, \
        capsys.readouterr().err
    totals: dict[str, int] = {}
    for line in _mix_lines(server):
        for number, name in re.findall(r"(\d+) (?:using )?([^,;.]+?)(?=[,;.])", line.removeprefix("Cover this mix: ")
                                       .replace("difficulty: ", "")):
            totals[name] = totals.get(name, 0) + int(number)
    assert totals == {"WHERE": 3, "GROUP BY": 4, "ORDER BY": 3, "JOIN": 3, "subquery": 3, "HAVING": 4,
                      "easy": 5, "medium": 5, "hard": 5, "extra": 5}


def test_generate_into_a_folder_is_a_message_not_a_traceback(tmp_path, chat, capsys):
    """-o naming an existing folder: exit status 2 and a message naming it, before any model call."""
    require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
    db = make_sqlite(tmp_path / "fleet.sqlite", FLEET_SQL)
    folder = tmp_path / "suites"
    folder.mkdir()
    server = chat(_gen_script())
    assert _generate(str(db), "-o", str(folder), "--count", "2") == 2
    err = capsys.readouterr().err
    assert "sqleval generate:" in err and str(folder) in err and "folder" in err
    assert server.requests == []


def test_generate_into_an_unwritable_place_is_a_message_not_a_traceback(tmp_path, chat, capsys):
    """-o below a file (its folder cannot be made) and --report naming a folder: exit status 2 with a message
    naming the path, never a traceback."""
    require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
    db = make_sqlite(tmp_path / "fleet.sqlite", FLEET_SQL)
    chat(_gen_script())
    below_a_file = db / "out.sqleval.yaml"
    assert _generate(str(db), "-o", str(below_a_file), "--count", "2") == 2
    err = capsys.readouterr().err
    assert err.startswith("sqleval generate:") and str(db) in err
    assert _generate(str(db), "-o", str(tmp_path / "x.sqleval.yaml"), "--report", str(tmp_path), "--count", "2") == 2
    err = capsys.readouterr().err
    assert "--report" in err and "is a folder" in err


@pytest.mark.parametrize("dialect", ["postgres", "duckdb"])
@pytest.mark.parametrize("classifier", ["spider", "sqleval"])
def test_ilike_counts_as_the_like_of_component_1(fleet_db, dialect, classifier):
    """ILIKE is PostgreSQL's and DuckDB's case-insensitive LIKE: outside the official grammar, read leniently, it
    counts in component 1 as LIKE does (WHERE 1 + LIKE 1 = 2 -> medium), not as an `=` (c1 1 -> easy); NOT ILIKE
    likewise."""
    engine = sqlalchemy.create_engine(f"sqlite:///{fleet_db}")
    try:
        schema = read_schema(engine)
    finally:
        engine.dispose()
    for sql in ("SELECT reg FROM fleet WHERE type ILIKE 'a3%'", "SELECT reg FROM fleet WHERE type NOT ILIKE 'a3%'",
                "SELECT reg FROM fleet WHERE type LIKE 'A3%'"):
        got = classify_hardness(sql, schema, dialect=dialect, classifier=classifier)
        assert (got.component1, got.component2, got.level) == (2, 0, "medium"), sql


def test_grouped_test_suite_accuracy_averages_every_group(pytester):
    """Case `both` runs on two databases (matching on each: 1); case `one` on the suite's database only (a
    miss: 0). Plain test_suite_accuracy = (1 + 0)/2; per gold SQL (two golds, one case each) the same
    (1 + 0)/2 = 1/2, not 1 (the mean of only the groups that have a case with several databases)."""
    make_sqlite(pytester.path / "a.sqlite", FLEET_SQL)
    make_sqlite(pytester.path / "b.sqlite", FLEET_SQL + "INSERT INTO fleet VALUES ('9V-E', 'A380', 470);")
    pytester.makefile(".sqleval.yaml", ts=textwrap.dedent("""
        database: a.sqlite
        execution: mro
        cases:
          - {id: both, databases: [a.sqlite, b.sqlite], gold: "SELECT MAX(seats) FROM fleet",
             predicted: "SELECT seats FROM fleet ORDER BY seats DESC LIMIT 1"}
          - {id: one, gold: "SELECT reg FROM fleet WHERE seats > 260", predicted: "SELECT reg FROM fleet"}
    """))
    outcome, report = _run_report(pytester)
    assert outcome.ret == 0, outcome.stdout.str()
    (suite,) = report["suites"]
    assert suite["metrics"]["test_suite_accuracy"] == 0.5
    assert suite["by_gold_sql"]["groups"] == 2
    assert suite["by_gold_sql"]["test_suite_accuracy"] == 0.5


def test_mro_overrides_and_a_soft_f1_rule_at_its_exact_value(pytester):
    """execution: {profile: mro, nulls: distinct, float_decimals: 2} with pass_if soft_f1 >= 0.8.
    nulls: the prediction is the gold, (NULL)(wx): a NULL equals nothing, so EX 0; soft F1: P 1/2 (wx), R 1/2
      -> 1/2 < 0.8: missed.
    rounded: 0.1 + 0.2 = 0.30000000000000004 rounds to 0.3 = 0.3: EX 1, soft F1 1: passed.
    four_fifths: gold 1, 2, 3; prediction 2, 1: P 2/2, R 2/3 -> 4/5, exactly 0.8 >= 0.8: passed (EX 0)."""
    pytester.path.joinpath("schema.sql").write_text(SCHEMA_SQL, encoding="utf-8")
    pytester.makefile(".sqleval.yaml", opts=textwrap.dedent("""
        database: {url: "sqlite://", setup: [schema.sql]}
        execution: {profile: mro, nulls: distinct, float_decimals: 2}
        pass_if: soft_f1 >= 0.8
        cases:
          - {id: nulls, gold: "SELECT remark FROM layovers WHERE id <= 2", predicted: "SELECT remark FROM layovers WHERE id <= 2"}
          - {id: rounded, gold: "SELECT 0.1 + 0.2", predicted: "SELECT 0.3"}
          - {id: four_fifths, gold: "SELECT id FROM layovers WHERE id <= 3", predicted: "SELECT id FROM layovers WHERE id IN (2, 1) ORDER BY id DESC"}
    """))
    outcome, report = _run_report(pytester)
    assert outcome.ret == 0, outcome.stdout.str()
    cases = {c["id"]: c for c in report["cases"]}
    assert [(cases[i]["execution_match"], cases[i]["soft_f1"], cases[i]["outcome"])
            for i in ("nulls", "rounded", "four_fifths")] == [
        (False, 0.5, "missed"), (True, 1.0, "passed"), (False, 0.8, "passed")]
    assert report["suites"][0]["metrics"]["pass_rate"] == pytest.approx(2 / 3)


def test_difficulty_boundaries_through_the_plugin(pytester):
    """Each boundary query of HARDNESS as a gold (predicted as itself): the case records carry the level, and
    the breakdown counts 3 easy, 6 medium, 4 hard (c1 3; others 3; a nested query; a set operation) and 3 extra
    (c1 2 + others 2; c1 4; a nested query + others 1) plus the labelled case, in that order; Spider's own
    grammar reads them all.
    A case's own `difficulty: Extra` label wins over the classifier and is the level `extra`."""
    make_sqlite(pytester.path / "fleet.sqlite", FLEET_SQL)
    cases = [{"id": f"h{number:02d}", "gold": sql, "predicted": sql} for number, (sql, _, _) in enumerate(HARDNESS)]
    cases.append({"id": "labelled", "gold": HARDNESS[0][0], "predicted": HARDNESS[0][0], "difficulty": "Extra"})
    pytester.makefile(".sqleval.yaml", levels=json.dumps({"database": "fleet.sqlite", "execution": "mro",
                                                          "cases": cases}))
    outcome, report = _run_report(pytester)
    assert outcome.ret == 0, outcome.stdout.str()
    records = {c["id"]: c for c in report["cases"]}
    for number, (sql, _, level) in enumerate(HARDNESS):
        assert records[f"h{number:02d}"]["difficulty"] == level, sql
        assert records[f"h{number:02d}"]["difficulty_source"] == "spider", sql
    assert records["labelled"]["difficulty"] == "extra"
    by_level = report["suites"][0]["by_difficulty"]
    assert [(level, data["cases"]) for level, data in by_level.items()] == [
        ("easy", 3), ("medium", 6), ("hard", 4), ("extra", 4)]


def test_a_numeric_beyond_the_float_range_beside_a_fraction_is_scored():
    """PostgreSQL numeric holds integers far beyond a float's range: Decimal('1e400') normalises to the int
    10**400, and a column holding it beside 0.5 cannot be summed as floats. Still a value like any other:
    gold (10**400)(0.5), prediction (10**400)(0.25): EX 0 (values); soft F1: P 1/2, R 1/2 -> 1/2."""
    from decimal import Decimal

    gold = result(1, [(Decimal("1e400"),), (Decimal("0.5"),)])
    pred = result(1, [(Decimal("1e400"),), (Decimal("0.25"),)])
    assert soft_f1(gold, pred) == 0.5
    verdict = compare_results(gold, pred, MRO, ordered=True)
    assert (verdict.match, verdict.reason) == (False, "values")
    assert compare_results(gold, gold, MRO, ordered=True).match
    # one row (0.5, 10**400): each predicted column holds one of the two gold values: F1 = 2(1)(1/2)/(3/2) = 2/3
    # for both; Precision (2/3 + 2/3)/2, Recall 2/3 -> 2/3
    assert soft_f1(gold, result(2, [(Decimal("0.5"), 10 ** 400)])) == 2 / 3


def test_huge_numbers_beside_floats_and_booleans_never_break_the_column_search():
    """Found by fuzzing against the paper's definition: a column whose distinct rows sum as ints (True, 10**400)
    while the whole column holds a float too. No pairing of columns makes the rows agree (the prediction's
    first column holds 10**400 three times, no gold column does): a miss, not an OverflowError."""
    from decimal import Decimal

    big = Decimal("1e400")
    gold = result(3, [(True, True, Decimal("0.5")), (True, 1.0, Decimal("0.5")), (True, Decimal("0.5"), 1.0),
                      (10 ** 400, Decimal("0.5"), 1.0)])
    pred = result(3, [(10 ** 400, 10 ** 400, big), (10 ** 400, True, True), (10 ** 400, 1.0, True), (1.0, big, 1.0)])
    for name, ordered in (("mro", True), ("sqleval", False)):
        assert compare_results(gold, pred, EXECUTION_PROFILES[name], ordered=ordered).match is False
