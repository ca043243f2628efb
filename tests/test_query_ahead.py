"""The next case's gold is sent at the end of the case before it, a case's prediction at the end of its setup:
the same requests, each sent once and collected by its case, and the same report."""

import json
import sqlite3

import pytest

CONFTEST = '''
import json

import pytest

EVENTS = []
CURRENT = ["-", "-"]


def pytest_configure(config):
    from pytest_sqleval.execution import sandbox

    send, claim = sandbox.QuerySandbox._send, sandbox.QuerySandbox._claim_pending

    def logged_send(self, request):
        EVENTS.append(["send", request["sql"], *CURRENT])
        return send(self, request)

    def logged_claim(self, request):
        pending = self._pending
        found = claim(self, request)
        if pending is not None and found is None:
            EVENTS.append(["discarded", pending.request["sql"], *CURRENT])
        return found

    sandbox.QuerySandbox._send = logged_send
    sandbox.QuerySandbox._claim_pending = logged_claim


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    CURRENT[:] = [item.name, "setup"]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    CURRENT[:] = [item.name, "call"]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item):
    CURRENT[:] = [item.name, "teardown"]


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        with open("events.json", "w") as f:
            json.dump(EVENTS, f)
'''


PREDICTED = ("SELECT name FROM items WHERE id >= {i}", "SELECT name FROM items WHERE {i} < id")  # a miss, a match


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    db = pytester.path / "shop.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO items VALUES (?, ?)", [(i, f"item {i}") for i in range(9)])
    cases = "".join(f"  - id: c{i}\n    gold: SELECT name FROM items WHERE id > {i}\n"
                    f"    predicted: {PREDICTED[i % 2].format(i=i)}\n" for i in range(5))
    pytester.makefile(".sqleval.yaml", shop=f"suite: shop\ndatabase: shop.sqlite\ncases:\n{cases}")
    pytester.makeconftest(CONFTEST)
    return pytester


def test_gold_and_prediction_are_sent_ahead_once_each(suite: pytest.Pytester):
    result = suite.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json=report.json")
    assert "5 cases: 2 passed, 3 missed" in result.stdout.str()
    events = json.loads((suite.path / "events.json").read_text())
    sends = [e for e in events if e[0] == "send"]
    assert not [e for e in events if e[0] == "discarded"]  # every request sent ahead was collected by its case
    assert len(sends) == 10 and len({e[1] for e in sends}) == 10  # each gold and prediction once
    where = {sql: (case, phase) for _, sql, case, phase in sends}
    assert where["SELECT name FROM items WHERE id > 0"] == ("c0", "setup")  # the first gold: by its own setup
    for i in range(1, 5):
        assert where[f"SELECT name FROM items WHERE id > {i}"] == (f"c{i - 1}", "call")  # at the end of the case before
    for i in range(5):
        assert where[PREDICTED[i % 2].format(i=i)] == (f"c{i}", "setup")  # at the end of its setup
    report = json.loads((suite.path / "report.json").read_text())
    assert [c["execution_match"] for c in report["cases"]] == [False, True, False, True, False]


def test_an_overridden_engine_gets_nothing_sent_ahead(suite: pytest.Pytester):
    suite.makeconftest(CONFTEST + '''

@pytest.fixture
def sqleval_engine(sqleval_engine_factory, sqleval_case):
    return sqleval_engine_factory(str(sqleval_case.database.file_path))
''')
    result = suite.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider")
    assert "5 cases: 2 passed, 3 missed" in result.stdout.str()
    events = json.loads((suite.path / "events.json").read_text())
    phases = {(e[1], e[3]) for e in events if e[0] == "send"}
    assert all(phase in ("setup", "call") for _, phase in phases)
    predictions = {PREDICTED[i % 2].format(i=i) for i in range(5)}
    assert {phase for sql, phase in phases if sql in predictions} == {"call"}  # sent by the call itself
