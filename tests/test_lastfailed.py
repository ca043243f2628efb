"""--lf / --ff rerun the misses (and failures) of the last run, serial and with -n 2."""

from __future__ import annotations

import json
import re

import pytest

from ci_support import MISSES, PASSES, WORKERS, make_shop


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    return make_shop(pytester)


def run(pytester: pytest.Pytester, *args: str):
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    return runner("--sqleval", *args)


def lastfailed(pytester: pytest.Pytester) -> set[str]:
    path = pytester.path / ".pytest_cache" / "v" / "cache" / "lastfailed"
    return set(json.loads(path.read_text())) if path.exists() else set()


def ran(result) -> list[str]:
    """Case ids in the order -v printed them."""
    found = []
    for line in result.outlines:
        m = (re.search(r"shop\.sqleval\.yaml::(\S+) (PASSED|MISSED)", line)
             or re.search(r"(?:PASSED|MISSED) shop\.sqleval\.yaml::(\S+)", line))  # -n 2 writes the word first
        if m:
            found.append(m.group(1))
    return found


@WORKERS
def test_lf_reruns_exactly_the_misses(shop, workers):
    first = run(shop, *workers)
    assert first.ret == 0
    assert lastfailed(shop) == {f"shop.sqleval.yaml::{case}" for case in MISSES}
    # (the suite's gate would judge only the rerun misses: lift it for this run)
    again = run(shop, "--lf", "-v", "--sqleval-threshold", "execution_accuracy=0", *workers)
    assert again.ret == 0
    if not workers:  # under -n 2 the workers collect, and print no such line
        again.stdout.fnmatch_lines([f"run-last-failure: rerun previous {len(MISSES)} failures*"])
    assert sorted(ran(again)) == sorted(MISSES)
    assert re.search(rf"=+ {len(MISSES)} missed in ", again.outlines[-1])
    # the misses are still misses: --lf keeps rerunning them
    assert lastfailed(shop) == {f"shop.sqleval.yaml::{case}" for case in MISSES}


@WORKERS
def test_ff_runs_the_misses_first(shop, workers):
    assert run(shop, *workers).ret == 0
    result = run(shop, "--ff", "-v", "-p", "no:randomly", *(["-n", "2", "--dist", "loadfile"] if workers else []))
    order = ran(result)
    assert sorted(order) == sorted(MISSES.keys() | PASSES)
    assert set(order[:len(MISSES)]) == set(MISSES)


def test_a_fixed_miss_leaves_the_list_and_failures_stay(shop):
    assert run(shop).ret == 0
    suite = shop.path / "shop.sqleval.yaml"
    fixed = suite.read_text().replace("predicted: SELECT sum(hours) FROM tickets\n",
                                      "predicted: SELECT sum(hours) FROM tickets WHERE status = 'open'\n")
    suite.write_text(fixed.replace("  - id: silent\n    gold: SELECT count(*) FROM shops\n",
                                   "  - id: silent\n    gold: SELECT count(*) FROM nowhere\n    predicted: SELECT 1\n"))
    result = run(shop, "--lf", "-v")
    assert "open-hours" in ran(result)  # it missed last time, so it reran, and passed
    expected = {f"shop.sqleval.yaml::{case}" for case in MISSES if case != "open-hours"}
    assert lastfailed(shop) == expected  # `silent` is now an error of the suite: still listed


def test_strict_failures_are_rerun_too(shop):
    assert run(shop, "--sqleval-strict").ret == pytest.ExitCode.TESTS_FAILED
    assert lastfailed(shop) == {f"shop.sqleval.yaml::{case}" for case in MISSES}
