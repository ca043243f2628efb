"""BIRD mini-dev's Soft F1 and R-VES, hand-computed from evaluation_f1.py / evaluation_ves.py, and their use
in thresholds and pass_if through the plugin."""

from __future__ import annotations

import json
import math
import textwrap

import pytest
import yaml  # noqa: F401 - imported before pytester's in-process runs snapshot sys.modules (libyaml cannot re-import)

import pytest_sqleval.loader  # noqa: F401
from conftest import make_sqlite
from pytest_sqleval.metrics.bird import bird_soft_f1, clean_abnormal, ves_reward, ves_time_ratio


# --------------------------------------------------------------------------- bird_soft_f1
def test_worked_example_from_the_official_code():
    gold = [("Apple", 10), ("Orange", None), ("Banana", 5)]
    pred = [("Apple", 10), ("Orange", 3), ("Kiwi", 5), ("Apple", 10), ("Pear", 1)]
    # pred deduplicated: Apple/10, Orange/3, Kiwi/5, Pear/1 (the second Apple/10 dropped)
    # row 0: equal                      match 2/2   pred_only 0     gold_only 0
    # row 1: Orange/3 vs Orange/NULL    match 1/2   pred_only 1/2   gold_only 1/2 (NULL not in the pred row)
    # row 2: Kiwi/5 vs Banana/5         match 1/2   pred_only 1/2   gold_only 1/2
    # Pear/1 has no gold partner:       match 0     pred_only 1
    # tp = 2, fp = 2, fn = 1: P = 1/2, R = 2/3, F1 = 2 * 1/2 * 2/3 / (1/2 + 2/3) = 4/7
    assert bird_soft_f1(gold, pred) == pytest.approx(4 / 7, abs=1e-12)


@pytest.mark.parametrize("gold, pred, expected", [
    ([], [], 1.0),
    ([(1,)], [], 0.0),
    ([], [(1,)], 0.0),
    # rows pair by position: the same rows reversed share nothing (a bug of the official code, reproduced)
    ([(1,), (2,)], [(2,), (1,)], 0.0),
    # duplicated cells each count: (1, 1) vs (1, 2): match 2/2, gold_only 1/2 -> P 1, R 2/3 -> 0.8
    ([(1, 2)], [(1, 1)], 0.8),
    # a wider prediction row can count more matches than the gold row has cells: F1 1.0 (bug, reproduced)
    ([(1,)], [(1, 1, 1)], 1.0),
    # 1 == 1.0 (Python equality), no float tolerance
    # (match 1/2, pred_only 1/2, gold_only 1/2 -> P = R = 1/2)
    ([(1, 0.3)], [(1.0, 0.1 + 0.2)], 0.5),
    # duplicates dropped on both sides before pairing
    ([(1,), (1,), (2,)], [(1,), (2,), (2,)], 1.0),
])
def test_official_quirks(gold, pred, expected):
    assert bird_soft_f1(gold, pred) == pytest.approx(expected, abs=1e-12)


# --------------------------------------------------------------------------- R-VES
@pytest.mark.parametrize("ratio, reward", [
    (0.0, 0.0), (1e-9, 0.25), (0.2499, 0.25), (0.25, 0.5), (0.4999, 0.5), (0.5, 0.75), (0.9999, 0.75),
    (1.0, 1.0), (1.9999, 1.0), (2.0, 1.25), (50.0, 1.25),
])
def test_reward_bucket_edges(ratio, reward):
    assert ves_reward(ratio) == reward


def test_noise_is_handled_as_the_official_does():
    # mean ± 3σ, strict: one far outlier among 20 is dropped
    ratios = [1.0] * 19 + [100.0]
    assert clean_abnormal(ratios) == [1.0] * 19
    assert ves_time_ratio(ratios) == 1.0
    # all ratios identical: σ = 0 keeps nothing; the official divides by zero and scores 0
    assert clean_abnormal([1.5] * 100) == []
    assert ves_reward(ves_time_ratio([1.5] * 100)) == 0.0


# --------------------------------------------------------------------------- through the plugin
SUITE = """
database: shop.sqlite
execution: bird
{extra}
cases:
  - id: exact
    gold: SELECT id, name FROM shops ORDER BY id
    predicted: SELECT id, name FROM shops ORDER BY id
  - id: reversed
    gold: SELECT id FROM shops ORDER BY id
    predicted: SELECT id FROM shops ORDER BY id DESC
  - id: half
    gold: SELECT id, name FROM shops WHERE id = 1
    predicted: SELECT id, 'x' FROM shops WHERE id = 1
"""


def _run(pytester, extra: str = "", *args: str, subprocess: bool = False):
    if not (pytester.path / "shop.sqlite").exists():
        make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(SUITE.format(extra=extra)))
    report = pytester.path / "report.json"
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    return result, json.loads(report.read_text())


def test_bird_soft_f1_per_case_and_per_suite(pytester):
    result, report = _run(pytester)
    cases = {c["id"]: c for c in report["cases"]}
    # exact: 1; reversed 3 rows: row 1 (2 vs 2) matches, rows 0 and 2 swap -> tp 1, fp 2, fn 2 -> 1/3;
    # half: (1, 'x') vs (1, 'Avionics'): match 1/2, pred_only 1/2, gold_only 1/2 -> 1/2
    assert cases["exact"]["bird_soft_f1"] == 1.0
    assert cases["reversed"]["bird_soft_f1"] == pytest.approx(1 / 3)
    assert cases["reversed"]["execution_match"] is True  # BIRD EX is a set comparison
    assert cases["half"]["bird_soft_f1"] == pytest.approx(0.5)
    metrics = report["suites"][0]["metrics"] if "suites" in report else None
    assert metrics is not None and metrics["bird_soft_f1"] == pytest.approx((1 + 1 / 3 + 0.5) / 3)
    assert "r_ves" not in metrics  # off by default
    result.stdout.fnmatch_lines(["*bird_soft_f1*0.6111*"])


def test_bird_soft_f1_in_thresholds_and_pass_if(pytester):
    result, report = _run(pytester, "pass_if: bird_soft_f1 >= 0.5\nthresholds: {bird_soft_f1: 0.7}")
    cases = {c["id"]: c for c in report["cases"]}
    assert [cases[k]["outcome"] for k in ("exact", "reversed", "half")] == ["passed", "missed", "passed"]
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # 0.611 < 0.7
    result.stdout.fnmatch_lines(["*bird_soft_f1*0.7*"])
    passing, _ = _run(pytester, "thresholds: {bird_soft_f1: 0.6}")
    assert passing.ret == pytest.ExitCode.OK


def test_unknown_metric_message_lists_the_new_ones():
    from pytest_sqleval.passrule import PassRuleError, parse_pass_rule

    with pytest.raises(PassRuleError, match="bird_soft_f1.*r_ves"):
        parse_pass_rule("bird_soft_f >= 0.5")


@pytest.mark.parametrize("how", ["option", "ini", "suite"])
def test_r_ves_is_off_by_default_and_on_when_asked(pytester, how):
    args, extra = (), ""
    if how == "option":
        args = ("--sqleval-efficiency",)
    elif how == "ini":
        pytester.makeini("[pytest]\nsqleval_efficiency = true\n")
    else:
        extra = "efficiency: true"
    result, report = _run(pytester, extra + "\nthresholds: {r_ves: 0.1}", *args, "-k", "exact or half", subprocess=True)
    cases = {c["id"]: c for c in report["cases"]}
    exact, half = cases["exact"], cases["half"]
    assert exact["r_ves_reward"] in (0.25, 0.5, 0.75, 1.0, 1.25)  # timed: a bucket, whatever the machine
    assert exact["r_ves"] == pytest.approx(math.sqrt(exact["r_ves_reward"]))
    assert exact["r_ves_time_ratio"] > 0
    assert (half["r_ves"], half["r_ves_reward"]) == (0.0, 0.0)  # not a match: 0, not timed
    metrics = report["suites"][0]["metrics"]
    assert metrics["r_ves"] == pytest.approx(exact["r_ves"] / 2)
    assert result.ret == pytest.ExitCode.OK  # r_ves >= 0.25 / 2 > 0.1


def test_efficiency_must_be_a_boolean(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(SUITE.format(extra="efficiency: yes please")))
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*efficiency must be true or false*"])
