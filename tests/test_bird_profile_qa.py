"""The `bird` profile past the row cap (issue 12): BIRD compares ``set(rows)``, so a result with more rows than the
cap whose distinct rows are few scores as it does officially; the cap still bounds what is held (distinct rows).

Official verdicts (bird-bench/mini_dev 4d970a9 ``evaluation_ex.execute_model`` / ``evaluation_f1.execute_model``
on the database below, run in a scratch copy):

* gold ``SELECT DISTINCT k FROM big``, prediction ``SELECT k FROM big``: EX 1, Soft F1 1.0;
* gold ``SELECT k FROM big``, prediction ``SELECT DISTINCT k FROM big``: EX 1, Soft F1 1.0;
* gold ``SELECT DISTINCT k FROM big``, prediction ``SELECT k FROM big ORDER BY id DESC``: EX 1, Soft F1 1/7.
"""

from __future__ import annotations

import json
import sqlite3
import textwrap

import pytest
import yaml  # noqa: F401 - imported before pytester's in-process runs snapshot sys.modules (libyaml cannot re-import)

from pytest_sqleval.execution.backends.base import Limits, fetch_capped


def _big(path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE big(id INTEGER PRIMARY KEY, k INTEGER)")
    conn.executemany("INSERT INTO big VALUES (?, ?)", [(i, i % 7) for i in range(1, 301)])
    conn.commit()
    conn.close()


def _run(pytester, execution: str, cases: list[tuple[str, str, str]], extra: str = "") -> dict[str, dict]:
    _big(pytester.path / "big.sqlite")
    lines = [f"database: big.sqlite\nexecution: {execution}\nmax_rows: 50\n{extra}cases:"]
    for case_id, gold, pred in cases:
        lines.append(f"  - {{id: {case_id}, gold: {json.dumps(gold)}, predicted: {json.dumps(pred)}}}")
    pytester.makefile(".sqleval.yaml", cap="\n".join(lines) + "\n")
    report = pytester.path / "report.json"
    pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider")
    return {c["id"]: c for c in json.loads(report.read_text())["cases"]}


def test_bird_reads_past_the_row_cap_for_distinct_rows_as_birds_set_does(pytester):
    cases = _run(pytester, "bird", [
        ("dup_pred", "SELECT DISTINCT k FROM big", "SELECT k FROM big"),
        ("dup_gold", "SELECT k FROM big", "SELECT DISTINCT k FROM big"),
        ("reordered", "SELECT DISTINCT k FROM big", "SELECT k FROM big ORDER BY id DESC"),
        ("too_many", "SELECT DISTINCT k FROM big", "SELECT id FROM big"),
    ], extra="efficiency: true\n")
    assert cases["dup_pred"]["execution_match"] is True and cases["dup_pred"]["bird_soft_f1"] == 1.0
    assert cases["dup_gold"]["execution_match"] is True and cases["dup_gold"]["error"] is None
    # R-VES times the same reading: a matched case over the cap is rewarded, not an error's 0
    assert cases["dup_pred"]["r_ves"] > 0 and cases["dup_gold"]["r_ves"] > 0
    assert cases["reordered"]["execution_match"] is True
    assert cases["reordered"]["bird_soft_f1"] == pytest.approx(1 / 7, abs=1e-9)
    # more distinct rows than the cap: still the cap's error (the memory bound)
    assert cases["too_many"]["execution_match"] is False
    assert cases["too_many"]["error"]["kind"] == "row_limit"
    assert "distinct rows" in cases["too_many"]["error"]["message"]


def test_a_bag_profile_keeps_the_row_cap_on_all_rows(pytester):
    cases = _run(pytester, "sqleval", [("dup_pred", "SELECT DISTINCT k FROM big", "SELECT k FROM big")])
    assert cases["dup_pred"]["error"]["kind"] == "row_limit"


def test_expect_rows_is_not_met_by_the_distinct_rows_of_a_result_over_the_cap(pytester):
    _big(pytester.path / "big.sqlite")
    pytester.makefile(".sqleval.yaml", cap=textwrap.dedent("""
        database: big.sqlite
        execution: bird
        max_rows: 50
        cases:
          - {id: shape, gold: SELECT DISTINCT k FROM big, predicted: SELECT k FROM big, expect_rows: 7}
    """))
    report = pytester.path / "report.json"
    pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider")
    (case,) = json.loads(report.read_text())["cases"]
    assert case["execution_match"] is True
    assert case["outcome"] != "passed"


def test_assert_execution_match_bird_reads_past_the_cap(tmp_path):
    import sqlalchemy as sa

    from pytest_sqleval import check_execution_match

    _big(tmp_path / "big.sqlite")
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'big.sqlite'}")
    try:
        bird = check_execution_match("SELECT DISTINCT k FROM big", "SELECT k FROM big", engine=engine, profile="bird",
                                     max_rows=50)
        plain = check_execution_match("SELECT DISTINCT k FROM big", "SELECT k FROM big", engine=engine, max_rows=50)
    finally:
        engine.dispose()
    assert bird.match
    assert not plain.match and plain.error["kind"] == "row_limit"


class _Cursor:
    def __init__(self, rows):
        self.rows = list(rows)

    def fetchmany(self, n):
        out, self.rows = self.rows[:n], self.rows[n:]
        return out


def test_fetch_capped_keeps_first_occurrences_and_reads_unhashable_cells():
    rows = [([1], "a"), ([2], "b"), ([1], "a")] * 5 + [([3], "c")]
    got = fetch_capped(_Cursor(rows), Limits(timeout=5, max_rows=4, distinct_rows=True))
    assert got == [([1], "a"), ([2], "b"), ([3], "c")]
    within = fetch_capped(_Cursor([(1,), (1,)]), Limits(timeout=5, max_rows=4, distinct_rows=True))
    assert within == [(1,), (1,)]  # a result within the cap is kept whole
