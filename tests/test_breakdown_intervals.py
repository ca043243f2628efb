"""Issue 10, "intervals everywhere": the per-turn rows (SParC) and the per-gold-SQL averages (MRO 3.2) carry 95%
intervals in the JSON report and the terminal summary, as the suite's metrics and the difficulty rows do; serial
and ``-n 2`` the same. Expected values computed by hand from Wilson's formula."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

Z = 1.959963984540054  # the 97.5% normal quantile the plugin's intervals use

WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])

SUITE = """
suite: talk
database: t.sqlite
cases:
  - id: a
    interaction:
      - {question: "All?", gold: "SELECT x FROM t", predicted: "SELECT x FROM t"}
      - {question: "Big?", gold: "SELECT x FROM t WHERE x > 1", predicted: "SELECT x FROM t WHERE x > 2"}
  - id: b
    interaction:
      - {question: "All?", gold: "SELECT x FROM t", predicted: "SELECT x FROM t"}
      - {question: "Small?", gold: "SELECT x FROM t WHERE x < 3", predicted: "SELECT x FROM t WHERE x < 3"}
  - id: c
    interaction:
      - {question: "All?", gold: "SELECT x FROM t", predicted: "SELECT y FROM t"}
"""


def wilson(k: float, n: int) -> list[float]:
    p, z2 = k / n, Z * Z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def run(pytester: pytest.Pytester, workers: list[str]):
    (pytester.path / "t.sqlite").unlink(missing_ok=True)
    connection = sqlite3.connect(pytester.path / "t.sqlite")
    connection.executescript("CREATE TABLE t (x INTEGER, y INTEGER); INSERT INTO t VALUES (1, 9), (2, 8), (3, 7);")
    connection.commit()
    connection.close()
    pytester.makefile(".sqleval.yaml", talk=SUITE)
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json=r.json", "-p", "no:cacheprovider", *workers)
    return result, json.loads((pytester.path / "r.json").read_text())


@WORKERS
def test_turn_rows_and_per_gold_averages_carry_wilson_intervals(pytester, workers):
    result, report = run(pytester, workers)
    suite = report["suites"][0]
    # turn 1: a, b right, c wrong (y for x) -> 2 of 3; turn 2: a wrong (x > 2), b right -> 1 of 2
    turn_1, turn_2 = suite["by_turn"]["1"], suite["by_turn"]["2"]
    assert (turn_1["turns"], turn_1["question_match"]) == (3, pytest.approx(2 / 3))
    assert turn_1["intervals"]["question_match"] == pytest.approx(wilson(2, 3), abs=1e-12)
    assert turn_1["intervals"]["execution_accuracy"] == pytest.approx(wilson(2, 3), abs=1e-12)
    assert turn_2["intervals"]["question_match"] == pytest.approx(wilson(1, 2), abs=1e-12)
    # per gold SQL: `SELECT x FROM t` (a/1, b/1, c/1: 2 of 3), `x > 1` (0 of 1), `x < 3` (1 of 1): three groups whose
    # execution values 2/3, 0, 1 sum to 5/3 -> Wilson over n = 3 groups, not the 5 turns
    grouped = suite["by_gold_sql"]
    assert grouped["groups"] == 3
    assert grouped["execution_accuracy"] == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert grouped["intervals"]["execution_accuracy"] == pytest.approx(wilson(5 / 3, 3), abs=1e-12)
    assert "error_count" not in grouped["intervals"]  # a count has no interval
    # the terminal shows them: the per-gold column's interval and each turn's
    text = result.stdout.str()
    lo, hi = grouped["intervals"]["execution_accuracy"]
    assert any(line.split()[:1] == ["execution_accuracy"] and f"[{lo:.4f}, {hi:.4f}]" in line.split("   ", 3)[-1]
               for line in text.splitlines()), text
    lo, hi = wilson(1, 2)
    assert any(line.strip().startswith("turn 2 ") and f"[{lo:.4f}, {hi:.4f}]" in line for line in text.splitlines()), text


def test_serial_and_xdist_give_the_same_breakdown_intervals(pytester):
    _, serial = run(pytester, [])
    _, parallel = run(pytester, ["-n", "2"])
    for key in ("by_turn", "by_gold_sql"):
        assert serial["suites"][0][key] == parallel["suites"][0][key]
