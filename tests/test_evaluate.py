"""Evaluating one case: gold executed once per session, soft F1 shortcut, records of JSON primitives."""

from __future__ import annotations

import json
import random

import pytest

from conftest import make_sqlite
from pytest_sqleval.comparison import EXECUTION_PROFILES
from pytest_sqleval.evaluate import Evaluator
from pytest_sqleval.execution.backends.sqlite import sqlite_engine
from pytest_sqleval.loader import load_suite
from pytest_sqleval.metrics.execution_match import compare_results
from pytest_sqleval.metrics.soft_f1 import soft_f1
from pytest_sqleval.results import QueryResult


@pytest.fixture
def suite(tmp_path, write_suite):
    make_sqlite(tmp_path / "shop.sqlite")
    return load_suite(write_suite("""
        database: shop.sqlite
        cases:
          - {id: a, gold: "SELECT name FROM shops ORDER BY name", predicted: "SELECT name FROM shops ORDER BY name"}
          - {id: b, gold: "SELECT name FROM shops ORDER BY name", predicted: "SELECT name FROM shops"}
          - {id: c, gold: "SELECT count(*) FROM tickets", predicted: "SELECT 6.0"}
    """))


def test_each_gold_runs_once_per_session(suite, monkeypatch):
    monkeypatch.setenv("SQLEVAL_SANDBOX", "0")  # count the statements on this process's own connection
    engine = sqlite_engine(suite.cases[0].database.file_path)
    statements: list[str] = []
    with engine.connect() as conn:  # StaticPool: the one connection every query uses
        conn.connection.dbapi_connection.set_trace_callback(statements.append)
    evaluator = Evaluator(timeout=5, max_rows=100)
    for case in suite.cases:
        prepared = evaluator.prepare(case, suite, [engine])
        evaluator.evaluate(case, suite, case.predicted, [engine], prepared)
    gold_runs = [s for s in statements if s.strip() == "SELECT name FROM shops ORDER BY name"]
    assert len(gold_runs) == 2  # once as the gold of a and b together, once as a's prediction


def test_records_are_json_and_scored(suite):
    engine = sqlite_engine(suite.cases[0].database.file_path)
    evaluator = Evaluator(timeout=5, max_rows=100)
    records = []
    for case in suite.cases:
        prepared = evaluator.prepare(case, suite, [engine])
        records.append(evaluator.evaluate(case, suite, case.predicted, [engine], prepared))
    assert json.loads(json.dumps(records)) == records
    a, b, c = records
    assert (a["execution_match"], a["soft_f1"], a["passed_rule"]) == (True, 1.0, True)
    assert b["execution_match"] is False and b["mismatch"]["reason"] == "order" and b["soft_f1"] == 1.0
    assert c["execution_match"] is True  # 6 == 6.0
    assert a["difficulty"] in ("easy", "medium") and a["difficulty_source"].startswith("spider")


@pytest.mark.parametrize("profile", sorted(EXECUTION_PROFILES))
def test_a_match_always_has_soft_f1_one(profile):
    """The evaluator skips soft F1 after a match and records 1.0: check that this is exact."""
    rng = random.Random(profile)
    options = EXECUTION_PROFILES[profile]
    for _ in range(300):
        width = rng.randint(1, 3)
        rows = [tuple(rng.choice([None, 0, 1, 1.0, 2, "a", "b"]) for _ in range(width)) for _ in range(rng.randint(0, 4))]
        pred_rows = rows[:]
        rng.shuffle(pred_rows)
        if rng.random() < 0.5 and rows:
            pred_rows.append(rng.choice(rows))
        order = list(range(width))
        rng.shuffle(order)
        pred_rows = [tuple(r[i] for i in order) for r in pred_rows]
        gold, pred = QueryResult.of(rows, [f"g{i}" for i in range(width)]), QueryResult.of(pred_rows, [f"p{i}" for i in range(width)])
        if compare_results(gold, pred, options, ordered=rng.random() < 0.3).match:
            assert soft_f1(gold, pred, float_decimals=options.float_decimals, nulls=options.nulls) == 1.0
