"""MRO 3.2's grouping by gold SQL is per database: in a suite whose cases name two databases, one gold text asks each
database a different question, and the two are two groups."""

import json
import sqlite3

pytest_plugins = ["pytester"]


def _database(path, rows):
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (a INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?)", [(r,) for r in rows])
    conn.close()


def _suite(pytester, name):
    suites = json.loads((pytester.path / "report.json").read_text())["suites"]
    return next(s for s in suites if s["name"] == name)


def test_one_gold_text_on_two_databases_is_two_groups(pytester):
    """Cases 1-3 on x.sqlite (gold count 3): the prediction `SELECT 3` matches cases 1 and 2, not 3 (it says 4).
    Case 4 on y.sqlite (gold count 1): `SELECT 1` matches. By hand: plain EX 3/4 = .75; per group, x: 2/3, y: 1,
    grouped EX (2/3 + 1)/2 = 5/6 (one group over all four would be 3/4)."""
    _database(pytester.path / "x.sqlite", [1, 2, 3])
    _database(pytester.path / "y.sqlite", [7])
    pytester.makefile(".sqleval.yaml", two="""
cases:
  - {id: c1, database: x.sqlite, gold: SELECT count(*) FROM t, predicted: SELECT 3}
  - {id: c2, database: x.sqlite, gold: SELECT count(*) FROM t, predicted: SELECT 3}
  - {id: c3, database: x.sqlite, gold: SELECT count(*) FROM t, predicted: SELECT 4}
  - {id: c4, database: y.sqlite, gold: SELECT count(*) FROM t, predicted: SELECT 1}
""")
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json")
    assert result.ret == 0, result.stdout.str()
    suite = _suite(pytester, "two")
    assert suite["metrics"]["execution_accuracy"] == 0.75
    assert suite["by_gold_sql"]["groups"] == 2
    assert abs(suite["by_gold_sql"]["execution_accuracy"] - 5 / 6) < 1e-12


def test_one_database_suite_keeps_its_groups(pytester):
    """The same four cases on one database: one group, grouped EX = plain (c4 now misses: count is 3)."""
    _database(pytester.path / "x.sqlite", [1, 2, 3])
    pytester.makefile(".sqleval.yaml", one="""
database: x.sqlite
cases:
  - {id: c1, gold: SELECT count(*) FROM t, predicted: SELECT 3}
  - {id: c2, gold: SELECT count(*) FROM t, predicted: SELECT 3}
  - {id: c3, gold: SELECT count(*) FROM t, predicted: SELECT 4}
  - {id: c4, gold: SELECT a FROM t WHERE a = 1, predicted: SELECT 1}
""")
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json")
    assert result.ret == 0, result.stdout.str()
    suite = _suite(pytester, "one")
    assert suite["by_gold_sql"]["groups"] == 2
    assert abs(suite["by_gold_sql"]["execution_accuracy"] - (2 / 3 + 1) / 2) < 1e-12
