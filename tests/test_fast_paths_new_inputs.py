"""Issue 11's fast paths with new inputs: each must give the report the ordinary path gives
(``-p no:sqleval-query-ahead``, an autouse fixture that turns the fast setup off), serial and under xdist."""

from __future__ import annotations

import json
import sqlite3
import textwrap

import pytest


def make_db(path, script: str) -> None:
    con = sqlite3.connect(path)
    con.executescript(script)
    con.commit()
    con.close()


def run(pytester: pytest.Pytester, *args: str) -> dict:
    report = pytester.path / "report.json"
    report.unlink(missing_ok=True)
    pytester.runpytest("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    return json.loads(report.read_text())


def scores(report: dict) -> dict:
    keys = ("outcome", "error", "execution_match", "exact_match", "difficulty", "soft_f1")
    return {(c["suite"], c["id"]): {k: c.get(k) for k in keys} for c in report["cases"]}


# A user's reporting hook that is slow (here 1 s, past timeout + the kill grace) after the first case's call: the
# second case's gold was sent ahead meanwhile and its answer is waiting. That answer must be read, never scored
# as a timeout the query itself did not hit (the ordinary path runs the gold at setup, well within 0.2 s).
SLOW_REPORTER = """
import time

def pytest_runtest_logreport(report):
    if report.when == "call" and report.nodeid.endswith("::first"):
        time.sleep(1.0)
"""


def test_an_answer_sent_ahead_is_read_even_when_pytest_was_slow_to_ask(pytester: pytest.Pytester):
    make_db(pytester.path / "a.sqlite", "CREATE TABLE t(id INTEGER); INSERT INTO t VALUES (1), (2), (3);")
    pytester.makefile(".sqleval.yaml", s=textwrap.dedent("""
        database: a.sqlite
        timeout: 0.2
        cases:
          - id: first
            gold: SELECT count(*) FROM t
            predicted: SELECT 3
          - id: second
            gold: SELECT max(id) FROM t
            predicted: SELECT 3
    """))
    pytester.makeconftest(SLOW_REPORTER)
    fast = run(pytester)
    assert scores(fast)[("s", "second")]["outcome"] == "passed", scores(fast)
    assert scores(fast) == scores(run(pytester, "-p", "no:sqleval-query-ahead"))


# Two databases with the same table name but other columns; the same gold text on both, under other row caps;
# the same SQL read as another dialect; one case written twice under two ids. Every cache of issue 11 (gold
# results, schemas, readability, hardness, the suite pickled for the workers) sees colliding keys here.
SUITES = {
    "one": """
        database: a.sqlite
        cases:
          - id: all
            gold: SELECT * FROM t
            predicted: SELECT id, name FROM t
          - id: cnt
            gold: SELECT count(*) FROM t
            predicted: SELECT 3
          - id: cnt-again
            gold: SELECT count(*) FROM t
            predicted: SELECT 2
    """,
    "two": """
        database: b.sqlite
        max_rows: 1
        cases:
          - id: all
            gold: SELECT * FROM t
            predicted: SELECT id, score, label FROM t
          - id: cnt
            gold: SELECT count(*) FROM t
            predicted: SELECT 2
          - id: above
            gold: SELECT t.id FROM t WHERE t.score > (SELECT avg(score) FROM t)
            predicted: SELECT id FROM t WHERE score > 5
    """,
    "three": """
        database: a.sqlite
        dialect: duckdb
        cases:
          - id: cnt
            gold: SELECT count(*) FROM t
            predicted: SELECT 3
    """,
}

AUTOUSE = """
import pytest

@pytest.fixture(autouse=True)
def nothing():
    yield
"""


def test_colliding_cache_keys_score_alike_on_every_path(pytester: pytest.Pytester):
    make_db(pytester.path / "a.sqlite", "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT);"
                                        "INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, 'z');")
    make_db(pytester.path / "b.sqlite", "CREATE TABLE t(id INTEGER PRIMARY KEY, score INTEGER, label TEXT);"
                                        "INSERT INTO t VALUES (1, 5, 'p'), (2, 6, 'q');")
    pytester.makefile(".sqleval.yaml", **{name: textwrap.dedent(text) for name, text in SUITES.items()})
    fast = scores(run(pytester))
    assert {key: value["outcome"] for key, value in fast.items()} == {
        ("one", "all"): "passed", ("one", "cnt"): "passed", ("one", "cnt-again"): "missed",
        ("two", "all"): "error",  # 2 rows over the suite's cap of 1 (the same gold is fine in suite one)
        ("two", "cnt"): "passed", ("two", "above"): "passed", ("three", "cnt"): "passed"}
    assert "row_limit" in fast[("two", "all")]["error"]["message"]
    assert fast[("two", "above")]["difficulty"] == "hard"
    assert scores(run(pytester, "-p", "no:sqleval-query-ahead")) == fast
    assert scores(run(pytester, "-n", "2", "--dist", "loadfile")) == fast
    pytester.makeconftest(AUTOUSE)  # the ordinary fixture setup, every item
    assert scores(run(pytester, "-n", "2")) == fast


# A user's hook leaves a value in the record that the JSON report does not carry and pickle cannot send (a
# generator). The serial run drops it from the report; under xdist the worker's packed report must not crash.
UNSENDABLE = """
def pytest_sqleval_score_case(record):
    record["scratch"] = (n for n in range(2))
    record["note"] = "kept"
"""


def test_a_record_value_pickle_cannot_send_does_not_crash_xdist(pytester: pytest.Pytester):
    make_db(pytester.path / "a.sqlite", "CREATE TABLE t(id INTEGER); INSERT INTO t VALUES (1), (2);")
    pytester.makefile(".sqleval.yaml", s=textwrap.dedent("""
        database: a.sqlite
        cases:
          - id: one
            gold: SELECT count(*) FROM t
            predicted: SELECT 2
          - id: two
            gold: SELECT max(id) FROM t
            predicted: SELECT 1
    """))
    pytester.makeconftest(UNSENDABLE)
    serial = run(pytester)
    assert scores(serial)[("s", "one")]["outcome"] == "passed"
    report = pytester.path / "report.json"
    report.unlink()
    result = pytester.runpytest("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", "-n", "2")
    assert "INTERNALERROR" not in result.stdout.str()
    parallel = json.loads(report.read_text())
    assert scores(parallel) == scores(serial)
    assert [c.get("note") for c in parallel["cases"]] == [c.get("note") for c in serial["cases"]]


# One engine for every suite (a session-wide override), two suites naming two databases: the gold result cached
# for the first suite must not carry a name into the second one's record that the second would not get on its own
# (serial); under xdist the second suite runs elsewhere. Both name the engine the queries ran on, the fixture's.
SHARED_ENGINE = """
import pathlib
import pytest
import sqlalchemy

@pytest.fixture(scope="session")
def shared_engine():
    return sqlalchemy.create_engine("sqlite:///" + str(pathlib.Path(__file__).parent / "a.sqlite"))

@pytest.fixture
def sqleval_engine(shared_engine):
    return shared_engine
"""


def test_a_cached_gold_keeps_the_name_of_each_suites_database(pytester: pytest.Pytester):
    for name in ("a.sqlite", "c.sqlite"):
        make_db(pytester.path / name, "CREATE TABLE t(id INTEGER); INSERT INTO t VALUES (1), (2);")
    for suite, db in (("p", "a"), ("q", "c")):
        pytester.makefile(".sqleval.yaml", **{suite: textwrap.dedent(f"""
            database: {db}.sqlite
            cases:
              - id: cnt
                gold: SELECT count(*) FROM t
                predicted: SELECT 7
              - id: bad
                gold: SELECT nope FROM t
                predicted: SELECT 7
        """)})
    pytester.makeconftest(SHARED_ENGINE)

    def names(report):
        return {(c["suite"], c["id"]): (c["mismatch"] or {}).get("database") or c["error"]["message"]
                for c in report["cases"]}

    serial = names(run(pytester))
    # the queries ran on the fixture's engine (a.sqlite): messages name it, in both suites alike
    assert serial[("q", "cnt")].endswith("/a.sqlite (from the sqleval_engine fixture)"), serial
    assert "a.sqlite (from the sqleval_engine fixture) (syntax)" in serial[("q", "bad")], serial
    assert names(run(pytester, "-n", "2", "--dist", "loadfile")) == serial
