"""Issue 13's rich diffs (and a suite's -v miss): the rows only in one side are shown as up to 5 examples, and now
say how many there are in all, so a 500-against-429 row_count miss tells that 71 rows differ. Counts checked by
hand; the metric (pure) and the rendering through pytest --sqleval as a user runs it, and the assertion helper."""

from __future__ import annotations

import json
import sqlite3

import pytest
from sqlalchemy import create_engine

from pytest_sqleval import assert_execution_match
from pytest_sqleval.comparison import EXECUTION_PROFILES
from pytest_sqleval.metrics.execution_match import QueryResult, compare_results

SQLEVAL = EXECUTION_PROFILES["sqleval"]


def test_the_verdict_counts_every_row_only_in_each_side():
    gold = QueryResult(columns=("x",), rows=tuple((i,) for i in range(10)))
    pred = QueryResult(columns=("x",), rows=tuple((i,) for i in range(3, 15)) + ((3,),))  # 3..14 and 3 again
    verdict = compare_results(gold, pred, SQLEVAL, ordered=False)
    # only in gold: 0, 1, 2 (3 rows); only in the prediction: 10..14 (5) and the second 3 (1) -> 6
    assert (verdict.reason, verdict.gold_only_count, verdict.pred_only_count) == ("row_count", 3, 6)
    assert len(verdict.gold_only_rows) == 3 and len(verdict.pred_only_rows) == 5  # examples: at most 5


def test_an_empty_side_counts_all_the_other_sides_rows():
    gold = QueryResult(columns=("x",), rows=tuple((i,) for i in range(8)))
    verdict = compare_results(gold, QueryResult(columns=("x",), rows=()), SQLEVAL, ordered=False)
    assert (verdict.gold_only_count, verdict.pred_only_count) == (8, 0)


@pytest.fixture
def numbers(pytester: pytest.Pytester):
    connection = sqlite3.connect(pytester.path / "d.sqlite")
    connection.execute("CREATE TABLE t (x INTEGER)")
    connection.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(500)])
    connection.commit()
    connection.close()
    return pytester


def test_a_suite_miss_says_how_many_rows_differ(numbers):
    numbers.makefile(".sqleval.yaml", s='suite: s\ndatabase: d.sqlite\ncases:\n'
                                        '  - {id: a, gold: "SELECT x FROM t", predicted: "SELECT x FROM t WHERE x < 429"}\n'
                                        '  - {id: b, gold: "SELECT x FROM t WHERE x < 3", predicted: "SELECT x + 1 FROM t WHERE x < 3"}\n')
    result = numbers.runpytest("--sqleval", "-v", "--sqleval-diff", "--sqleval-json=r.json", "-p", "no:cacheprovider")
    text = result.stdout.str()
    assert "(71 rows only in gold, 0 only in the prediction; up to 5 of each shown)" in text, text
    # b: 1 row only in each side, all of it shown: no count line
    assert "1 row only in gold" not in text
    cases = {c["id"]: c["mismatch"] for c in json.loads((numbers.path / "r.json").read_text())["cases"]}
    assert (cases["a"]["gold_only_count"], cases["a"]["predicted_only_count"]) == (71, 0)
    assert (cases["b"]["gold_only_count"], cases["b"]["predicted_only_count"]) == (1, 1)


def test_the_assertion_helper_says_how_many_rows_differ(numbers):
    engine = create_engine(f"sqlite:///{numbers.path / 'd.sqlite'}")
    with pytest.raises(AssertionError) as failed:
        assert_execution_match("SELECT x FROM t", "SELECT x FROM t WHERE x >= 20", engine=engine)
    engine.dispose()
    assert "(20 rows only in gold, 0 only in the prediction; up to 5 of each shown)" in str(failed.value)
