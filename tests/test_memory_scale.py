"""What a 100,000-case run keeps per case (issue 11, memory): one node id per case's reports, no kept report of a
passed setup or teardown that captured nothing, shared flag dicts in the records, no record left in an xdist
worker once sent, and the scoring caches let go before the summary. Every output stays the same."""

import json

import pytest
from _pytest.reports import TestReport

from pytest_sqleval.session import SharedValues
from test_memory import write_shop_suite


def _report(when: str) -> TestReport:
    return TestReport(nodeid="s.sqleval.yaml::c1", location=("s.sqleval.yaml", 3, "sqleval: c1"),
                      keywords={"c1": 1}, outcome="passed", longrepr=None, when=when)


def test_a_cases_three_reports_share_one_parsed_node_id():
    """pytest 9 parses ``nodeid`` into a NodeId on every assignment: the reports share the first one instead."""
    shared = SharedValues(decoded=True)
    setup, call, teardown = (_report(when) for when in ("setup", "call", "teardown"))
    assert setup.__dict__.get("_id", setup) is not call.__dict__.get("_id", call)  # the premise: one per report
    for report in (setup, call, teardown):
        shared.report(report)
    if "_id" in setup.__dict__:  # pytest >= 9
        assert call._id is setup._id and teardown._id is setup._id
    assert call.nodeid == teardown.nodeid == "s.sqleval.yaml::c1"
    assert call.keywords is setup.keywords


def test_records_share_flag_dicts_in_place_and_keep_their_values():
    shared = SharedValues(decoded=False)
    records = [{"id": f"c{i}", "database": "sqlite:////data/" + "shop.sqlite",
                "clauses": {"select": True, "where": i % 2 == 0, "limit": None}, "gold": "SELECT 1"} for i in range(4)]
    before = json.dumps(records)
    kept = list(records)
    for record in records:
        shared.compact(record)
    assert json.dumps(records) == before  # same values, same order of keys
    assert all(a is b for a, b in zip(records, kept))  # the same dicts: the item and the report hold them
    assert records[0]["clauses"] is records[2]["clauses"] and records[1]["clauses"] is records[3]["clauses"]
    assert records[0]["clauses"] is not records[1]["clauses"]
    assert records[0]["database"] is records[1]["database"]


def test_only_dicts_of_flags_are_shared_and_true_never_stands_for_one():
    shared = SharedValues(decoded=False)
    assert shared.flat({"a": True}) is shared.flat({"a": True})
    assert shared.flat({"a": True}) is not shared.flat({"a": None})
    assert shared.flat({"a": 1}) is None and shared.flat({"a": [True]}) is None and shared.flat({}) is None
    assert shared.flat({"b": True, "a": False}) is not shared.flat({"a": False, "b": True})  # order is kept
    assert list(shared.flat({"b": True, "a": False})) == ["b", "a"]
    controller = SharedValues(decoded=True)
    a = controller.record({"clauses": {"select": True}, "mismatch": {"rows": [[1, True]]}})
    b = controller.record({"clauses": {"select": True}, "mismatch": {"rows": [[1, True]]}})
    assert a["clauses"] is b["clauses"] and a["mismatch"] is not b["mismatch"]


@pytest.fixture
def shop(pytester: pytest.Pytester):
    return write_shop_suite(pytester, 8)


_PROBE = '''
import json, pytest

@pytest.fixture
def noisy():
    yield
    print("said in teardown")

def test_noisy_teardown(noisy):
    pass

@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, config):
    from pytest_sqleval.state import STATE_KEY
    state = config.stash[STATE_KEY]
    kept = terminalreporter.stats.get("", [])
    records = [getattr(r, "sqleval_record", None) for r in terminalreporter.stats.get("missed", [])
               + terminalreporter.stats.get("passed", [])]
    items = [i for i in terminalreporter._session.items if getattr(i, "case", None) is not None]
    name = config.workerinput["workerid"] if hasattr(config, "workerinput") else "main"
    with open(f"probe-{name}.json", "w") as f:
        json.dump({"kept": [[r.nodeid, r.when] for r in kept], "evaluator": state._evaluator is not None,
                   "records_on_reports": sum(r is not None for r in records),
                   "records_on_items": sum(getattr(i, "sqleval_record", None) is not None for i in items),
                   "state_records": len(state.records)}, f)
'''


def test_serial_run_keeps_no_passed_phase_report_but_shows_teardown_output(shop: pytest.Pytester):
    shop.makeconftest(_PROBE)
    result = shop.runpytest_subprocess("--sqleval", "-rA", "-p", "no:cacheprovider", "shop.sqleval.yaml",
                                       "conftest.py", "-o", "python_files=conftest.py")
    result.stdout.fnmatch_lines(["*Captured stdout teardown*", "said in teardown", "*4 missed*"])
    probe = json.loads((shop.path / "probe-main.json").read_text())
    # only the teardown that captured output is kept (pytest shows it with -rA); the 16 others are let go
    assert probe["kept"] == [["conftest.py::test_noisy_teardown", "teardown"]]
    assert probe["records_on_reports"] == 8 and probe["records_on_items"] == 8 and probe["state_records"] == 8
    assert probe["evaluator"] is False  # the scoring caches were let go before the summary


def test_xdist_workers_keep_no_record_once_sent_and_the_reports_match_serial(shop: pytest.Pytester):
    shop.makeconftest(_PROBE)
    outputs = {}
    for name, workers in (("serial", []), ("xdist", ["-n", "2"])):
        result = shop.runpytest_subprocess("--sqleval", *workers, "-p", "no:cacheprovider", "shop.sqleval.yaml",
                                           f"--sqleval-json={name}.json", f"--sqleval-markdown={name}.md")
        assert result.ret == 0, result.stdout.str()
        report = json.loads((shop.path / f"{name}.json").read_text())
        report.pop("run")
        outputs[name] = (report, (shop.path / f"{name}.md").read_text())
    assert outputs["xdist"] == outputs["serial"]
    controller = json.loads((shop.path / "probe-main.json").read_text())
    assert controller["records_on_reports"] == 8 and controller["state_records"] == 8
    workers = [json.loads(p.read_text()) for p in shop.path.glob("probe-gw*.json")]
    assert workers, "the workers wrote their probes"
    for worker in workers:
        assert worker["records_on_reports"] == 0 and worker["records_on_items"] == 0
        assert worker["kept"] == []


def test_a_miss_keeps_its_only_rows_once_and_shares_column_names_and_shapes():
    shared = SharedValues(decoded=False)

    def miss(i):
        return {"id": f"c{i}", "mismatch": {
            "database": "db", "reason": "values", "detail": " ".join(("1", "gold", "row", "is", "missing")),
            "gold_shape": [2, 2], "predicted_shape": [2, 2], "gold_columns": ["name", "price"],
            "predicted_columns": ["name", "price"],
            "gold_only_rows": [["b", 2.0], ["z", 0.0]], "predicted_only_rows": [["c", True]],
            "gold_head": [["a", 1.0], ["b", 2.0], ["z", -0.0]], "predicted_head": [["a", 1.0], ["c", 1]]}}

    first, second = miss(1), miss(2)
    before = json.dumps([first, second])
    shared.compact(first)
    shared.compact(second)
    assert json.dumps([first, second]) == before
    m1, m2 = first["mismatch"], second["mismatch"]
    assert m1["gold_only_rows"][0] is m1["gold_head"][1]  # the same row, kept once
    assert m1["gold_only_rows"][1] is not m1["gold_head"][2]  # 0.0 is not -0.0
    assert m1["predicted_only_rows"][0] is not m1["predicted_head"][1]  # True is not 1
    assert m1["gold_columns"] is m2["predicted_columns"] and m1["gold_shape"] is m2["gold_shape"]
    assert m1["detail"] is m2["detail"]  # equal short text (built per case) is kept once
