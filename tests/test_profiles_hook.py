"""``pytest_sqleval_execution_profiles``: a user's own comparison profiles, from a conftest.py, as a user runs them.

The case below is the one the profiles disagree on: the gold lists every ticket's status (6 rows, with
duplicates), the prediction the distinct statuses (2 rows). Under the default ``sqleval`` profile duplicates
count (a bag), so it is a miss; under a profile with ``duplicates: set`` it matches.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import make_sqlite
from pytest_sqleval.comparison import EXECUTION_PROFILES, OptionError, active_profiles, resolve_execution
from pytest_sqleval.errors import SuiteError
from pytest_sqleval.loader import load_suite

CASE = """
cases:
  - id: statuses
    gold: SELECT status FROM tickets
    predicted: SELECT DISTINCT status FROM tickets
"""

MINE = """
from dataclasses import replace


def pytest_sqleval_execution_profiles(profiles, config):
    profiles["mine"] = replace(profiles["sqleval"], duplicates="set", profile="mine")
"""


def suite(execution: str | None) -> str:
    head = "database: shop.sqlite\n" + (f"execution: {execution}\n" if execution else "")
    return head + textwrap.dedent(CASE).lstrip()


def run_json(pytester: pytest.Pytester, *args: str, subprocess: bool = False):
    report = pytester.path / "report.json"
    runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = runner("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    data = json.loads(report.read_text()) if report.exists() else None
    return result, data


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    """The run's outcome counts, without its warnings count."""
    return {name: count for name, count in result.parseoutcomes().items() if name != "warnings"}


def by_suite(report: dict) -> dict[str, dict]:
    return {case["suite"]: case for case in report["cases"]}


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite")
    return pytester


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_conftest_profile_is_used_by_a_suite(shop, workers):
    shop.makeconftest(MINE)
    shop.makefile(".sqleval.yaml", own=suite("mine"), default=suite(None))
    result, report = run_json(shop, *workers, subprocess=bool(workers))
    assert outcomes(result) == {"passed": 1, "missed": 1}
    cases = by_suite(report)
    assert cases["own"]["execution_match"] is True and cases["own"]["outcome"] == "passed"
    assert cases["default"]["execution_match"] is False and cases["default"]["outcome"] == "missed"
    suites = {entry["name"]: entry for entry in report["suites"]}
    assert suites["own"]["execution"]["profile"] == "mine"
    assert suites["own"]["execution"]["duplicates"] == "set"
    assert suites["default"]["execution"]["duplicates"] == "bag"


def test_a_conftest_replaces_a_builtin_profile(shop):
    shop.makeconftest(textwrap.dedent("""
        from dataclasses import replace


        def pytest_sqleval_execution_profiles(profiles):
            profiles["sqleval"] = replace(profiles["sqleval"], duplicates="set")
    """))
    # No `execution:` means the table's sqleval profile; an override starts from the replaced one.
    shop.makefile(".sqleval.yaml", default=suite(None), override=suite("{profile: sqleval, duplicates: bag}"))
    result, report = run_json(shop)
    cases = by_suite(report)
    assert cases["default"]["execution_match"] is True
    assert cases["override"]["execution_match"] is False
    assert outcomes(result) == {"passed": 1, "missed": 1}


def test_an_unknown_profile_lists_the_available_ones_with_the_users(shop):
    shop.makeconftest(MINE)
    shop.makefile(".sqleval.yaml", typo=suite("mien"))
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([
        "*typo.sqleval.yaml:2: unknown execution profile 'mien'; "
        "profiles are: sqleval, test-suite, bird, mro, logiccat, mine",
        "*fix: write `execution: mine` (the message lists every profile)",
    ])
    assert result.ret != 0


def test_a_bad_profile_from_a_hook_is_named_where_a_suite_uses_it(shop):
    shop.makeconftest(textwrap.dedent("""
        from pytest_sqleval.comparison import ComparisonOptions


        def pytest_sqleval_execution_profiles(profiles):
            profiles["loose"] = ComparisonOptions(duplicates="sets", profile="loose")
            profiles["raw"] = {"duplicates": "set"}
    """))
    shop.makefile(".sqleval.yaml", loose=suite("loose"), raw=suite("raw"))
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([
        "*loose.sqleval.yaml:2: execution profile 'loose': duplicates must be one of bag, set, not 'sets'",
    ])
    result.stdout.fnmatch_lines(["*raw.sqleval.yaml:2: execution profile 'raw' is a dict, not ComparisonOptions; *"])
    assert "as profiles['raw'] = ComparisonOptions(...)" in result.stdout.str()
    assert result.ret != 0


def test_the_session_table_ends_with_the_session(shop):
    shop.makeconftest(MINE)
    shop.makefile(".sqleval.yaml", own=suite("mine"))
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert outcomes(result) == {"passed": 1}
    assert active_profiles() is EXECUTION_PROFILES
    with pytest.raises(OptionError, match="unknown execution profile 'mine'"):
        resolve_execution("mine")


def test_load_suite_takes_a_table(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite")
    path = tmp_path / "own.sqleval.yaml"
    path.write_text(suite("{profile: mine, nulls: distinct}"), encoding="utf-8")
    mine = EXECUTION_PROFILES["bird"].with_overrides({"ties": "gold"})
    loaded = load_suite(path, profiles={"sqleval": EXECUTION_PROFILES["sqleval"], "mine": mine})
    assert loaded.execution == mine.with_overrides({"nulls": "distinct"})
    with pytest.raises(SuiteError) as error:
        load_suite(path)  # the built-ins: no `mine`
    assert error.value.line == 2
    assert "profiles are: sqleval, test-suite, bird, mro, logiccat" in error.value.message
