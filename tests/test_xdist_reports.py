"""xdist: a worker's test reports reach the controller as one packed value each, and arrive unchanged."""

import json
import sqlite3

import pytest

from pytest_sqleval.xdist_reports import PACKED_KEY, PackedReports

CONFTEST = '''
import json

import pytest

SEEN = []
IN_WORKER = []


def pytest_configure(config):
    IN_WORKER.append(hasattr(config, "workerinput"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.custom_note = {"when": report.when, "tuple": (1, 2), "nested": [{"a": None}]}
    return report


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(config, data):
    report = yield
    SEEN.append(sorted(k for k in data if k in ("{packed}", "keywords", "sqleval_record")))
    return report


def pytest_runtest_logreport(report):
    if IN_WORKER[0] or not report.nodeid:  # what the controller (or the serial run) receives
        return
    record = getattr(report, "sqleval_record", None)
    line = {"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
             "note": repr(report.custom_note), "keywords": sorted(report.keywords),
             "location": list(report.location), "record_outcome": record and record["outcome"],
             "longrepr": bool(report.longrepr)}
    with open("reports.jsonl", "a") as f:
        f.write(json.dumps(line, sort_keys=True) + "\\n")


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        with open("seen.json", "w") as f:
            json.dump(SEEN, f)
'''.replace("{packed}", PACKED_KEY)


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    db = pytester.path / "shop.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO items VALUES (?, ?)", [(i, f"item {i}") for i in range(6)])
    cases = "".join(
        f"  - id: c{i}\n    tags: [t{i % 2}]\n    gold: SELECT name FROM items WHERE id > {i}\n"
        f"    predicted: SELECT name FROM items WHERE id > {i + (i % 3 == 0)}\n"
        for i in range(6)
    )
    pytester.makefile(".sqleval.yaml", shop=f"suite: shop\ndatabase: shop.sqlite\ncases:\n{cases}")
    pytester.makeconftest(CONFTEST)
    return pytester


def _reports(pytester: pytest.Pytester) -> list[dict]:
    path = pytester.path / "reports.jsonl"
    lines = sorted(path.read_text().splitlines())
    path.unlink()
    return [json.loads(line) for line in lines]


def test_reports_arrive_packed_and_unchanged(suite: pytest.Pytester):
    serial = suite.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider")
    serial.assert_outcomes(passed=4)
    assert "2 missed" in serial.stdout.str()
    expected = _reports(suite)
    assert len(expected) == 18 and sum(r["record_outcome"] == "missed" for r in expected) == 2

    parallel = suite.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "-n", "2")
    parallel.assert_outcomes(passed=4)
    assert _reports(suite) == expected  # every attribute, another plugin's included, as in the serial run
    seen = json.loads((suite.path / "seen.json").read_text())
    # on the wire: one packed value per report (then unpacked and handed to pytest's own reading, seen again)
    assert seen.count([PACKED_KEY]) == 18 and len(seen) == 36


def test_a_report_of_another_kind_or_from_elsewhere_is_left_alone():
    plugin = PackedReports()
    hook = plugin.pytest_report_to_serializable(config=None, report=None)
    next(hook)
    collect = {"$report_type": "CollectReport", "nodeid": "x", "longrepr": None}
    with pytest.raises(StopIteration) as done:
        hook.send(collect)
    assert done.value.value is collect
    assert plugin.pytest_report_from_serializable(config=None, data={"$report_type": "TestReport"}) is None
