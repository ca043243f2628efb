"""The report's `overall` carries the breakdown by difficulty (and by turn when a suite has interactions) over the
cases of every suite: the table the official Spider evaluator prints by hardness, and SParC's by turn, for a dataset
that `sqleval import` spreads over one suite per database. Figures counted by hand; serial and -n 2 alike."""

from __future__ import annotations

import json

import pytest

from conftest import make_sqlite

SHOP_SQL = """
CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
INSERT INTO shops VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'x');
"""


def _suites(pytester: pytest.Pytester) -> None:
    make_sqlite(pytester.path / "shop.sqlite", SHOP_SQL)
    # alpha: easy passed, easy missed, hard passed
    pytester.makefile(".sqleval.yaml", alpha="""
        database: shop.sqlite
        cases:
          - {id: e1, difficulty: easy, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
          - {id: e2, difficulty: easy, gold: SELECT name FROM shops, predicted: SELECT city FROM shops}
          - {id: h1, difficulty: hard, gold: SELECT id FROM shops, predicted: SELECT id FROM shops}
        """)
    # beta: easy passed, hard missed, and one interaction of two turns (turn 1 passed, turn 2 missed)
    pytester.makefile(".sqleval.yaml", beta="""
        database: shop.sqlite
        cases:
          - {id: e3, difficulty: easy, gold: SELECT city FROM shops, predicted: SELECT city FROM shops}
          - {id: h2, difficulty: hard, gold: SELECT id FROM shops WHERE city = 'x', predicted: SELECT id FROM shops}
          - id: talk
            difficulty: medium
            interaction:
              - {question: q1, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
              - {question: q2, gold: SELECT name FROM shops WHERE city = 'x', predicted: SELECT name FROM shops}
        """)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_overall_breakdowns_are_over_every_suite(pytester: pytest.Pytester, workers) -> None:
    _suites(pytester)
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json=report.json", "--sqleval-markdown=s.md",
                                           "-p", "no:cacheprovider", *workers)
    assert result.ret == 0  # misses, no gate: the run passes
    overall = json.loads((pytester.path / "report.json").read_text())["overall"]
    by_difficulty = overall["by_difficulty"]
    assert list(by_difficulty) == ["easy", "medium", "hard"]
    assert {level: (row["cases"], row["execution_accuracy"]) for level, row in by_difficulty.items()} == {
        "easy": (3, pytest.approx(2 / 3)),  # e1, e3 of 3
        "medium": (2, pytest.approx(1 / 2)),  # turn 1 of 2
        "hard": (2, pytest.approx(1 / 2)),  # h1 of 2
    }
    # Wilson 95% for 2 of 3 (z = 1.959964): [0.2077, 0.9385]
    low, high = by_difficulty["easy"]["intervals"]["execution_accuracy"]
    assert (round(low, 4), round(high, 4)) == (0.2077, 0.9385)
    assert {turn: (row["turns"], row["question_match"]) for turn, row in overall["by_turn"].items()} == {
        "1": (1, 1.0), "2": (1, 0.0)}
    out = result.stdout.str()
    overall_line = next(i for i, line in enumerate(result.outlines) if line.startswith("overall (2 suites"))
    assert result.outlines[overall_line + 1].startswith("  by difficulty")
    assert "  by turn " in out[out.index("overall (2 suites"):]
    markdown = (pytester.path / "s.md").read_text(encoding="utf-8")
    overall_part = markdown[markdown.index("### Overall"):markdown.index("### ", markdown.index("### Overall") + 4)]
    assert "By difficulty (3)" in overall_part and "By turn (2)" in overall_part


def test_one_suite_prints_no_second_table(pytester: pytest.Pytester) -> None:
    """One suite: its own table is the overall one; the JSON has the block all the same."""
    make_sqlite(pytester.path / "shop.sqlite", SHOP_SQL)
    pytester.makefile(".sqleval.yaml", alpha="""
        database: shop.sqlite
        cases:
          - {id: e1, difficulty: easy, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
        """)
    result = pytester.runpytest("--sqleval", "--sqleval-json=report.json", "-p", "no:cacheprovider")
    assert result.ret == 0
    assert sum(1 for line in result.outlines if line.startswith("  by difficulty")) == 1
    overall = json.loads((pytester.path / "report.json").read_text())["overall"]
    assert overall["by_difficulty"]["easy"]["cases"] == 1 and "by_turn" not in overall
