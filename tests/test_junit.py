"""--junitxml with sqleval: JSON records, misses as skipped/failure/passed, a testcase per gate; the final line."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from ci_support import MISSES, PASSES, WORKERS, make_shop


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    return make_shop(pytester)


def run_junit(pytester: pytest.Pytester, *args: str):
    path = pytester.path / "junit.xml"
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    result = runner("--sqleval", "-p", "no:cacheprovider", f"--junitxml={path}", *args)
    root = ET.parse(path).getroot()
    (suite,) = root.iter("testsuite")
    return result, suite


def case_elements(suite: ET.Element) -> dict[str, ET.Element]:
    return {tc.get("name"): tc for tc in suite.iter("testcase") if tc.get("classname") != "sqleval.gates"}


def gate_elements(suite: ET.Element) -> dict[str, ET.Element]:
    return {tc.get("name"): tc for tc in suite.iter("testcase") if tc.get("classname") == "sqleval.gates"}


def record_of(testcase: ET.Element) -> dict:
    values = [p.get("value") for p in testcase.iter("property") if p.get("name") == "sqleval"]
    assert len(values) == 1, values
    return json.loads(values[0])


@WORKERS
def test_misses_are_skipped_with_their_reason_and_records_are_json(shop, workers):
    result, suite = run_junit(shop, *workers)
    assert result.ret == 0
    cases = case_elements(suite)
    assert set(cases) == set(MISSES) | PASSES
    for name, testcase in cases.items():
        record = record_of(testcase)  # json.loads: not a Python repr
        assert record["id"] == name and record["suite"] == "shop"
        skipped = testcase.findall("skipped")
        if name in MISSES:
            assert record["outcome"] == "missed"
            assert len(skipped) == 1 and skipped[0].get("type") == "sqleval.miss"
            assert skipped[0].get("message").startswith(f"sqleval miss: {MISSES[name]}: ")
            assert "gold SQL:" in skipped[0].text
        else:
            assert record["outcome"] == "passed" and not skipped
        assert not testcase.findall("failure")
    gates = gate_elements(suite)
    assert list(gates) == ["shop::execution_accuracy"]
    assert not gates["shop::execution_accuracy"].findall("failure")
    assert json.loads(gates["shop::execution_accuracy"].find("properties/property").get("value"))["passed"] is True
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures"), suite.get("errors")) == ("8", "5", "0", "0")


@WORKERS
def test_misses_as_failures_and_a_failed_gate_testcase(shop, workers):
    result, suite = run_junit(shop, "--sqleval-junit-misses=failure", "--sqleval-threshold", "execution_accuracy=0.9",
                              *workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    cases = case_elements(suite)
    for name in MISSES:
        (failure,) = cases[name].findall("failure")
        assert failure.get("message").startswith(f"sqleval miss: {MISSES[name]}")
        assert not cases[name].findall("skipped")
    for name in PASSES:
        assert not cases[name].findall("failure")
    (failure,) = gate_elements(suite)["shop::execution_accuracy"].findall("failure")
    assert failure.get("type") == "sqleval.gate"
    assert failure.get("message").startswith("FAIL execution_accuracy 0.2857 < 0.9")
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures")) == ("8", "0", "6")


def test_misses_as_passed_and_the_ini_option(shop):
    shop.makeini("[pytest]\nsqleval_junit_misses = passed\n")
    result, suite = run_junit(shop)
    assert result.ret == 0
    for testcase in case_elements(suite).values():
        assert not testcase.findall("skipped") and not testcase.findall("failure")
        record_of(testcase)
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures")) == ("8", "0", "0")
    shop.makeini("[pytest]\nsqleval_junit_misses = sometimes\n")
    bad = shop.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*ini option sqleval_junit_misses: 'sometimes' is not one of skipped, failure, passed*"])


def test_an_errored_case_carries_its_record(pytester):
    make_shop(pytester)
    pytester.makefile(".sqleval.yaml", broken="suite: broken\ndatabase: shop.sqlite\ncases:\n"
                                              "  - {id: bad-gold, gold: SELECT nope FROM nowhere, predicted: SELECT 1}\n")
    result, suite = run_junit(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    testcase = case_elements(suite)["bad-gold"]
    assert testcase.findall("error")
    assert record_of(testcase)["outcome"] == "error"


def _final_line(result) -> str:
    return [line for line in result.outlines if re.search(r"=+ .* in [\d.]+s", line)][-1]


@WORKERS
def test_the_final_line_says_a_gate_failed_in_red(shop, workers):
    runner = shop.runpytest_subprocess if workers else shop.runpytest
    failing = runner("--sqleval", "-p", "no:cacheprovider", "--color=yes",
                     "--sqleval-threshold", "execution_accuracy=0.9", *workers)
    assert failing.ret == pytest.ExitCode.TESTS_FAILED
    line = _final_line(failing)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", line)
    assert re.search(r" 2 passed, 5 missed, 1 gate failed in ", plain), plain
    assert line.startswith("\x1b[31m=") and line.endswith("\x1b[31m " + "=" * line.count("=", line.rindex(" ")) + "\x1b[0m")
    assert "\x1b[31m\x1b[1m1 gate failed" in line


def test_the_final_line_counts_gates_and_stays_quiet_without_a_failure(shop):
    two = shop.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-threshold", "execution_accuracy=0.9",
                         "--sqleval-threshold", "valid_syntax=0.9")
    assert re.search(r"2 passed, 5 missed, 2 gates failed in ", _final_line(two))
    passing = shop.runpytest("--sqleval", "-p", "no:cacheprovider", "--color=yes")
    assert passing.ret == 0
    assert "gate" not in _final_line(passing)
