"""`difficulty:` is any label (README), a dataset's numbered levels too: `difficulty: 3` is the label "3" (it was an
error of the suite), kept as written (`2.10` stays "2.10"), and the by-difficulty breakdown groups by it."""

import json
import sqlite3

pytest_plugins = ["pytester"]


def test_numbered_difficulty_levels_are_labels_as_written(pytester):
    with sqlite3.connect(pytester.path / "x.sqlite") as conn:
        conn.execute("CREATE TABLE t (a INTEGER)")
    conn.close()
    pytester.makefile(".sqleval.yaml", levels="""
database: x.sqlite
cases:
  - {id: a, gold: SELECT 1, predicted: SELECT 1, difficulty: 3}
  - {id: b, gold: SELECT 2, predicted: SELECT 3, difficulty: 3}
  - {id: c, gold: SELECT 4, predicted: SELECT 4, difficulty: 2.10}
""")
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "r.json")
    assert result.ret == 0, result.stdout.str()
    report = json.loads((pytester.path / "r.json").read_text())
    assert {c["id"]: c["difficulty"] for c in report["cases"]} == {"a": "3", "b": "3", "c": "2.10"}
    by = report["suites"][0]["by_difficulty"]
    assert by["3"]["cases"] == 2 and by["3"]["execution_accuracy"] == 0.5 and by["2.10"]["cases"] == 1
