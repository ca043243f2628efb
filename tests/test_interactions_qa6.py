"""Multi-turn interactions end to end (SParC-style), QA round 6: inputs nobody tuned for.

Every expected figure is computed by hand in the comments from the SParC definitions (question match: the mean
over turns of the pass metric; interaction match: the share of interactions every turn of which passes; the
execution counterpart over the interactions that executed). Runs go through ``pytest --sqleval`` (pytester),
serial and with ``-n 2`` where a promise is about the run as a whole.
"""

from __future__ import annotations

import json

import pytest

from conftest import make_sqlite
from flights_support import FLIGHTS_SQL

WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])

TABLES_JSON = [{
    "db_id": "f",
    "table_names": ["airlines", "flights"], "table_names_original": ["airlines", "flights"],
    "column_names": [[-1, "*"], [0, "id"], [0, "name"], [0, "country"], [1, "id"], [1, "airline id"], [1, "src"],
                     [1, "dst"], [1, "price"]],
    "column_names_original": [[-1, "*"], [0, "id"], [0, "name"], [0, "country"], [1, "id"], [1, "airline_id"],
                              [1, "src"], [1, "dst"], [1, "price"]],
    "column_types": ["text", "number", "text", "text", "number", "number", "text", "text", "number"],
    "primary_keys": [1, 4],
    "foreign_keys": [[5, 1]],
}]


def run_report(pytester: pytest.Pytester, *args: str):
    report = pytester.path / "report.json"
    if report.exists():
        report.unlink()
    run = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    result = run("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    return result, (json.loads(report.read_text()) if report.exists() else None)


# --------------------------------------------------------------------------- a schema-only suite beside live ones
# `sqleval import sparc ... --databases spider/database` on the public dev set writes one suite without its database
# (wta_1): its turns score exact match only. The other suites' execution figures must not vanish from the overall.
LIVE = """
suite: live
database: f.sqlite
pass_if: exact_match
cases:
  - id: a
    interaction:
      - {gold: "SELECT name FROM airlines", predicted: "SELECT name FROM airlines"}
      - {gold: "SELECT name FROM airlines WHERE country = 'US'", predicted: "SELECT name FROM airlines WHERE country = 'DE'"}
  - id: b
    interaction:
      - {gold: "SELECT name FROM airlines", predicted: "SELECT name FROM airlines ORDER BY name"}
      - {gold: "SELECT count(*) FROM airlines", predicted: "SELECT count(*) FROM airlines"}
  - id: c
    interaction:
      - {gold: "SELECT src FROM flights", predicted: "SELECT src FROM flights"}
"""

SCHEMA_ONLY = """
suite: spec
schema: {tables: tables.json, db_id: f}
pass_if: exact_match
cases:
  - id: a
    interaction:
      - {gold: "SELECT name FROM airlines", predicted: "SELECT name FROM airlines"}
      - {gold: "SELECT count(*) FROM flights", predicted: "SELECT count(*) FROM flights"}
"""


@WORKERS
def test_overall_execution_figures_of_interactions_leave_out_a_schema_only_suite(pytester, workers):
    make_sqlite(pytester.path / "f.sqlite", FLIGHTS_SQL)
    (pytester.path / "tables.json").write_text(json.dumps(TABLES_JSON))
    pytester.makefile(".sqleval.yaml", live=LIVE, spec=SCHEMA_ONLY)
    _, report = run_report(pytester, *workers)
    suites = {s["name"]: s for s in report["suites"]}
    live, overall = suites["live"], report["overall"]
    # live: a/1 EM+EX, a/2 neither, b/1 EX only (ORDER BY added), b/2 both, c/1 both
    assert live["metrics"]["question_match"] == pytest.approx(3 / 5)
    assert live["metrics"]["interaction_match"] == pytest.approx(1 / 3)  # c only
    assert live["metrics"]["interaction_execution_accuracy"] == pytest.approx(2 / 3)  # b and c
    assert "interaction_execution_accuracy" not in suites["spec"]["metrics"]  # nothing executed there
    # overall: 7 turns (5 live, 2 schema-only, both matching); 4 interactions, 3 of which executed
    assert overall["metrics"]["execution_accuracy"] == pytest.approx(4 / 5)
    assert overall["metrics"]["question_match"] == pytest.approx(5 / 7)
    assert overall["metrics"]["interaction_match"] == pytest.approx(2 / 4)
    assert overall["metrics"]["interaction_execution_accuracy"] == pytest.approx(2 / 3)
    assert "interaction_execution_accuracy" in overall["intervals"]
    # by turn: turn 1 = a/1, b/1, c/1 (executed) and spec a/1 (not); turn 2 = a/2, b/2 and spec a/2
    turn1, turn2 = overall["by_turn"]["1"], overall["by_turn"]["2"]
    assert (turn1["turns"], turn1["question_match"], turn1["execution_accuracy"]) == (4, pytest.approx(3 / 4), 1.0)
    assert (turn2["turns"], turn2["question_match"], turn2["execution_accuracy"]) == (3, pytest.approx(2 / 3), 0.5)
    assert "execution_accuracy" not in suites["spec"]["by_turn"]["1"]


# --------------------------------------------------------------------------- the model's history when turns run out of order
# `--ff` runs the failed turn 3 first: its prompt asks the model for turns 1 and 2 (their own prompts, as a serial run
# would); when those turns then run, they must be scored on the answers that prompt showed, not asked again (a second
# answer of a sampling model differs from the history turn 3 was given, and is paid twice). A turn the look-ahead has
# already submitted (x's look-ahead submits a/1) is waited for, not shown as `(none)`.
PREDICTOR = '''
import itertools, json, os, time
_calls = itertools.count()

def predict(case):
    n = next(_calls)
    if case.id == "a/1":
        time.sleep(0.5)  # still running when a/3 builds its prompt
    with open(os.path.join(os.path.dirname(__file__), "calls.jsonl"), "a") as f:
        f.write(json.dumps({"id": case.id, "history": [dict(h) for h in case.history]}) + "\\n")
    if case.id in ("x", "a/3"):
        return "SELECT 'wrong'"
    return f"SELECT name FROM airlines -- answer {n}"
'''

MODEL_TALK = """
suite: talk
database: f.sqlite
cases:
  - id: x
    question: "Anything?"
    gold: "SELECT name FROM airlines"
  - id: a
    interaction:
      - {question: "Airlines?", gold: "SELECT name FROM airlines"}
      - {question: "Again?", gold: "SELECT name FROM airlines"}
      - {question: "How many?", gold: "SELECT count(*) FROM airlines"}
"""


def test_failed_turn_run_first_scores_earlier_turns_on_the_answers_its_history_showed(pytester, monkeypatch):
    make_sqlite(pytester.path / "f.sqlite", FLIGHTS_SQL)
    pytester.makepyfile(qa6_predictor=PREDICTOR)
    pytester.makefile(".sqleval.yaml", talk=MODEL_TALK)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))
    args = ("--sqleval", "--sqleval-predictor=qa6_predictor:predict", "--sqleval-cache-mode=off")
    pytester.runpytest_subprocess(*args)  # x and a/3 miss: the cache provider records them
    calls_file = pytester.path / "calls.jsonl"
    calls_file.unlink()
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(*args, "--ff", f"--sqleval-json={report}")
    assert result.ret == 0
    calls = [json.loads(line) for line in calls_file.read_text().splitlines()]
    assert sorted(c["id"] for c in calls) == ["a/1", "a/2", "a/3", "x"]  # each case asked once
    cases = {c["id"]: c for c in json.loads(report.read_text())["cases"]}
    history = next(c["history"] for c in calls if c["id"] == "a/3")
    assert [h["sql"] for h in history] == [cases["a/1"]["predicted"], cases["a/2"]["predicted"]]
    assert all(h["sql"].startswith("SELECT name FROM airlines -- answer") for h in history)
    assert [c["case"] for c in cases["a/3"]["model_history_calls"]] == ["a/2"]  # a/1 was the look-ahead's call
    usage = json.loads(report.read_text())["suites"][0]["model"]
    assert (usage["calls"], usage["cases"]) == (4, 4)
