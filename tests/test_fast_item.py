"""The fast setup of suite items (pytest_sqleval/fast_setup.py): the plugin's own fixtures computed without
pytest's fixture machinery when nothing could tell, pytest's ordinary setup otherwise, with the same values,
records and errors either way."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import SHOP_SQL, make_sqlite

SUITE = """
database: shop.sqlite
cases:
  - id: names
    gold: SELECT name FROM shops
    predicted: SELECT name FROM shops ORDER BY id DESC
  - id: shop-count
    gold: SELECT count(*) FROM shops
    predicted: SELECT 4
  - id: open-tickets
    gold: SELECT id FROM tickets WHERE status = 'open'
    predicted: SELECT id FROM tickets WHERE status = 'open'
"""

SQLEVAL_FIXTURES = ["sqleval_engine_factory", "tmp_path_factory", "sqleval_predictor", "request", "sqleval_case",
                    "sqleval_engine", "sqleval_gold", "sqleval_prediction"]

# Records, for each case, how its item was set up: which fixtures pytest executed through a FixtureDef, the
# item's funcargs, and whether request.getfixturevalue returns the funcargs' objects.
PROBE = """
import json
import pytest
from _pytest import fixtures

EXECUTED = []
_execute = fixtures.FixtureDef.execute

def _counting_execute(self, request):
    EXECUTED.append(self.argname)
    return _execute(self, request)

fixtures.FixtureDef.execute = _counting_execute

def pytest_unconfigure(config):  # pytester runs in this process: leave pytest as it was
    fixtures.FixtureDef.execute = _execute

def pytest_sqleval_case_result(record, item):
    names = ["sqleval_case", "sqleval_engine", "sqleval_gold", "sqleval_prediction", "sqleval_predictor"]
    line = {
        "case": item.case.id,
        "fast": item._sqleval_fast is not None and item._sqleval_fast.applies(item),
        "funcargs": list(item.funcargs),
        "same": all(item._request.getfixturevalue(n) is item.funcargs[n] for n in names),
        "executed": sorted(set(EXECUTED)),
        "gold_rows": [list(r) for r in item.funcargs["sqleval_gold"].gold[0].result.rows],
    }
    EXECUTED.clear()
    with open("probe.jsonl", "a") as out:
        out.write(json.dumps(line) + "\\n")
"""

AUTOUSE = """
@pytest.fixture(autouse=True)
def count_cases(request):
    with open("autouse.txt", "a") as out:
        out.write(request.node.case.id + "\\n")
"""


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(SUITE))
    return pytester


def run(pytester: pytest.Pytester, *args: str, subprocess: bool = False):
    report = pytester.path / "report.json"
    report.unlink(missing_ok=True)
    (pytester.path / "probe.jsonl").unlink(missing_ok=True)
    runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = runner("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    data = json.loads(report.read_text()) if report.exists() else None
    return result, data


def probes(pytester: pytest.Pytester) -> list[dict]:
    path = pytester.path / "probe.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def without_run(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "run"}


def outcomes(report: dict) -> dict[str, str]:
    return {case["id"]: case["outcome"] for case in report["cases"]}


def test_fast_path_when_nothing_is_overridden(shop):
    shop.makeconftest(PROBE)
    result, report = run(shop)
    assert outcomes(report) == {"names": "passed", "shop-count": "missed", "open-tickets": "passed"}
    seen = probes(shop)
    assert [p["case"] for p in seen] == ["names", "shop-count", "open-tickets"]
    for probe in seen:
        assert probe["fast"], probe
        assert probe["funcargs"] == SQLEVAL_FIXTURES  # the keys (and order) pytest's setup gives
        assert probe["same"]  # request.getfixturevalue returns the values the case was scored with
    # pytest executed no function-scoped sqleval fixture; the session ones only for the first case
    assert seen[0]["executed"] == ["sqleval_engine_factory", "sqleval_predictor", "tmp_path_factory"]
    assert seen[1]["executed"] == seen[2]["executed"] == []
    assert seen[0]["gold_rows"] == [["Avionics"], ["Engines"], ["Cabin"]]


def test_fast_and_ordinary_path_give_the_same_report_and_funcargs(shop):
    shop.makeconftest(PROBE)
    _, fast = run(shop, "-k", "not names")
    fast_probes = probes(shop)
    shop.makeconftest(PROBE + AUTOUSE)
    _, ordinary = run(shop, "-k", "not names")
    ordinary_probes = probes(shop)
    assert [p["fast"] for p in fast_probes] == [True, True]
    assert [p["fast"] for p in ordinary_probes] == [False, False]
    assert without_run(fast) == without_run(ordinary)
    assert outcomes(fast) == {"shop-count": "missed", "open-tickets": "passed"}
    for a, b in zip(fast_probes, ordinary_probes):
        assert [n for n in b["funcargs"] if n != "count_cases"] == a["funcargs"]
        assert a["same"] and b["same"] and a["gold_rows"] == b["gold_rows"]
    assert "sqleval_gold" in ordinary_probes[1]["executed"]  # pytest set the fixtures up itself


def test_engine_overridden_in_conftest_takes_the_ordinary_path(shop):
    other = make_sqlite(shop.path / "other" / "shop.sqlite", SHOP_SQL + "INSERT INTO shops VALUES (4, 'Wheels');")
    shop.makeconftest(PROBE + f"""
@pytest.fixture
def sqleval_engine(sqleval_engine_factory, sqleval_case):
    return sqleval_engine_factory({str(other)!r})
""")
    _, report = run(shop, "-k", "shop-count")
    assert outcomes(report) == {"shop-count": "passed"}  # 4 shops: only the overriding database has them
    assert [p["fast"] for p in probes(shop)] == [False]


def test_autouse_fixture_takes_the_ordinary_path_and_runs_for_every_case(shop):
    shop.makeconftest(PROBE + AUTOUSE)
    _, report = run(shop)
    assert (shop.path / "autouse.txt").read_text().split() == ["names", "shop-count", "open-tickets"]
    assert outcomes(report) == {"names": "passed", "shop-count": "missed", "open-tickets": "passed"}
    assert [p["fast"] for p in probes(shop)] == [False, False, False]


def test_a_fixture_setup_hook_sees_every_sqleval_fixture(shop):
    shop.makeconftest("""
def pytest_fixture_setup(fixturedef, request):
    if fixturedef.argname == "sqleval_gold":
        with open("setups.txt", "a") as out:
            out.write(request.node.case.id + "\\n")
""")
    _, report = run(shop)
    assert (shop.path / "setups.txt").read_text().split() == ["names", "shop-count", "open-tickets"]
    assert outcomes(report)["names"] == "passed"


def test_predictor_overridden_in_conftest_is_used(shop):
    shop.makeconftest("""
import pytest

@pytest.fixture(scope="session")
def sqleval_predictor():
    return lambda case: "SELECT 3" if case.id == "shop-count" else case.predicted
""")
    _, report = run(shop, "-k", "shop-count")
    assert outcomes(report) == {"shop-count": "passed"}


def test_setup_show_still_lists_the_sqleval_fixtures(shop):
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider", "--setup-show", "-k", "names")
    result.stdout.fnmatch_lines([
        "SETUP    S sqleval_engine_factory (fixtures used: tmp_path_factory)",
        "SETUP    S sqleval_predictor",
        "        SETUP    F sqleval_case",
        "        SETUP    F sqleval_engine (fixtures used: sqleval_engine_factory)",
        "        SETUP    F sqleval_gold (fixtures used: sqleval_case, sqleval_engine)",
        "        SETUP    F sqleval_prediction (fixtures used: sqleval_predictor)",
        "*shop.sqleval.yaml::names (fixtures used: *sqleval_gold*",
        "        TEARDOWN F sqleval_prediction",
        "        TEARDOWN F sqleval_gold",
    ])


def test_a_dynamically_requested_fixture_gets_the_computed_values_and_is_torn_down(shop):
    shop.makeconftest("""
import pytest

@pytest.fixture
def gold_copy(sqleval_gold):
    yield sqleval_gold
    with open("teardown.txt", "a") as out:
        out.write("torn down\\n")

def pytest_sqleval_case_result(record, item):
    same = item._request.getfixturevalue("gold_copy") is item.funcargs["sqleval_gold"]
    with open("dynamic.txt", "a") as out:
        out.write(f"{item._sqleval_fast is not None} {same}\\n")
""")
    _, report = run(shop)
    assert (shop.path / "dynamic.txt").read_text().splitlines() == ["True True"] * 3
    assert (shop.path / "teardown.txt").read_text().splitlines() == ["torn down"] * 3


BROKEN = """
database: shop.sqlite
cases:
  - id: fine
    gold: SELECT name FROM shops
    predicted: SELECT name FROM shops
  - id: broken
    gold: SELECT name FROM nowhere
    predicted: SELECT 1
"""


def error_section(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "ERROR at setup of" in line)
    end = next(i for i, line in enumerate(lines) if "== sqleval ==" in line)
    return lines[start:end]


def test_broken_gold_is_an_error_in_setup_with_the_same_message(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", broken=textwrap.dedent(BROKEN))
    pytester.makeconftest(PROBE)
    fast_result, fast = run(pytester)
    assert [p["fast"] for p in probes(pytester)] == [True]  # "fine"; "broken" stops in setup
    pytester.makeconftest(PROBE + AUTOUSE)
    ordinary_result, ordinary = run(pytester)
    for result in (fast_result, ordinary_result):
        assert result.parseoutcomes() == {"passed": 1, "errors": 1}
        result.stdout.fnmatch_lines([
            "*ERROR at setup of sqleval: broken*",
            "*broken.sqleval.yaml:6: case broken: the gold query failed on *: no such table: nowhere*",
        ])
    assert error_section(fast_result.stdout.str()) == error_section(ordinary_result.stdout.str())
    assert without_run(fast) == without_run(ordinary)
    assert outcomes(fast) == {"fine": "passed", "broken": "error"}


def test_serial_and_xdist_reports_are_identical(shop):
    _, serial = run(shop)
    _, parallel = run(shop, "-n", "2", subprocess=True)
    assert without_run(serial) == without_run(parallel)
    assert outcomes(serial) == {"names": "passed", "shop-count": "missed", "open-tickets": "passed"}
