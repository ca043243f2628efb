"""What a long run keeps per case: the xdist controller shares equal values among the records and reports it
receives (each arrives as a fresh copy), and the CI plugin reads the session's report without a second copy."""

import json
import pickle
import sqlite3

import pytest

from pytest_sqleval.session import SharedValues


def _decoded(value):
    """A fresh copy of ``value`` (as execnet decodes a worker's message: no string shared with anything)."""
    return pickle.loads(pickle.dumps(value))


def _record(i: int) -> dict:
    return {
        "path": "/suites/shop.sqleval.yaml", "id": f"c{i}", "index": i, "outcome": "missed" if i % 2 else "passed",
        "database": "sqlite:////data/shop.sqlite", "clauses": {"select": True, "where": i % 2 == 0},
        "mismatch": {"rows": [[1, "a"], [2, None]], "note": "1 gold row is missing"}, "soft_f1": 0.5, "tags": [],
        "gold": "SELECT name FROM items WHERE id > 1 " + "x" * 300,
    }


def test_shared_records_are_equal_and_share_their_keys_and_labels():
    shared = SharedValues(decoded=True)
    first, second = _decoded(_record(1)), _decoded(_record(3))
    assert first["database"] is not second["database"]  # the premise: decoded copies share nothing
    a, b = shared.record(first), shared.record(second)
    assert a == _record(1) and b == _record(3)
    assert json.dumps(a) == json.dumps(_record(1))  # same order of keys: the JSON report is unchanged
    key_a = next(k for k in a if k == "database")
    key_b = next(k for k in b if k == "database")
    assert key_a is key_b
    assert a["database"] is b["database"] and a["outcome"] is b["outcome"]
    assert a["mismatch"]["note"] is b["mismatch"]["note"]
    assert a["gold"] is not b["gold"]  # long text (SQL, messages) is not collected in the shared table


class _Report:
    def __init__(self, nodeid: str, when: str, keywords: dict, location: tuple) -> None:
        self.nodeid, self.when, self.keywords, self.location = nodeid, when, keywords, location


def test_a_cases_three_reports_share_node_id_location_and_keywords():
    shared = SharedValues(decoded=True)
    made = [_Report(_decoded("s.sqleval.yaml::c1"), when, _decoded({"c1": 1, "sqleval": 1}),
                    _decoded(("s.sqleval.yaml", 3, "c1"))) for when in ("setup", "call", "teardown")]
    for report in made:
        shared.report(report)
    setup, call, teardown = made
    assert call.nodeid is setup.nodeid and teardown.nodeid is setup.nodeid
    assert call.keywords is setup.keywords and teardown.keywords is setup.keywords
    assert call.location is setup.location and setup.location == ("s.sqleval.yaml", 3, "c1")
    assert setup.keywords == {"c1": 1, "sqleval": 1}
    assert not shared._open  # forgotten after the teardown report: nothing kept per finished case


def test_reports_that_differ_keep_their_own_values():
    shared = SharedValues(decoded=False)
    setup = _Report("s::c1", "setup", {"c1": 1}, ("s", 3, "c1"))
    call = _Report("s::c1", "call", {"c1": 1, "extra": 1}, ("s", 4, "c1"))
    shared.report(setup)
    shared.report(call)
    assert call.keywords == {"c1": 1, "extra": 1} and call.location == ("s", 4, "c1")


def write_shop_suite(pytester: pytest.Pytester, cases: int) -> pytest.Pytester:
    """A 30-row SQLite table and a suite of ``cases`` cases, every other one a miss."""
    db = pytester.path / "shop.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL)")
    conn.executemany("INSERT INTO items VALUES (?, ?, ?)", [(i, f"item {i}", i * 1.5) for i in range(30)])
    conn.commit()
    conn.close()
    lines = "".join(
        f"  - id: c{i}\n    gold: SELECT name FROM items WHERE id > {i} ORDER BY id\n"
        f"    predicted: SELECT name FROM items WHERE id > {i + i % 2} ORDER BY id\n" for i in range(cases))
    pytester.makefile(".sqleval.yaml", shop=f"suite: shop\ndatabase: shop.sqlite\ncases:\n{lines}")
    return pytester


@pytest.fixture
def shop(pytester: pytest.Pytester):
    return write_shop_suite(pytester, 12)


def test_xdist_report_and_markdown_equal_the_serial_run(shop: pytest.Pytester):
    """The controller's shared values and the CI plugin's reading of the report change no byte of either."""
    outputs = {}
    for name, workers in (("serial", []), ("xdist", ["-n", "2"])):
        result = shop.runpytest_subprocess("--sqleval", *workers, "-p", "no:cacheprovider",
                                           f"--sqleval-json={name}.json", f"--sqleval-markdown={name}.md")
        assert result.ret == 0, result.stdout.str()
        report = json.loads((shop.path / f"{name}.json").read_text())
        report.pop("run")
        outputs[name] = (report, (shop.path / f"{name}.md").read_text())
    assert len(outputs["serial"][0]["cases"]) == 12
    assert sum(c["outcome"] == "missed" for c in outputs["serial"][0]["cases"]) == 6
    assert outputs["xdist"][0] == outputs["serial"][0]
    assert "6 missed" in outputs["serial"][1]
    assert outputs["xdist"][1] == outputs["serial"][1]


@pytest.mark.parametrize("draws_at_once", [1, 37, 1000, 1 << 22])
def test_the_fast_bootstrap_in_blocks_draws_and_sums_exactly_like_random_choices(monkeypatch, draws_at_once):
    """A 100,000-case run draws its resamples a block at a time (bounded arrays): the same means, bit for bit."""
    pytest.importorskip("numpy")
    import math
    import random

    from pytest_sqleval import stats

    data = tuple((0.0, 1.0, 1 / 3, 0.5, 0.8)[i * 7 % 5] for i in range(250))
    monkeypatch.setattr(stats, "DRAWS_AT_ONCE", draws_at_once)
    rng = random.Random(stats.SEED)
    expected = [math.fsum(rng.choices(data, k=len(data))) / len(data) for _ in range(40)]
    assert stats._resampled_sums(data, stats.SEED, 40) == expected
