"""A later turn whose earlier turns did not run in its process gets the model's own earlier SQL, as in a serial run.

Before, a turn selected alone with ``-k`` (or split from its earlier turns by ``--dist worksteal``) was prompted with
its earlier turns' SQL as ``(none)``: a different prompt from the serial run's, so a different answer and score.
Now the process asks the model for those earlier turns first, with their own prompts (the response cache answers
when another process asked already), and the record counts those calls (``model_history_calls``)."""

from __future__ import annotations

import json

import pytest

from model_support import by_id, run, shop_fixture

shop = shop_fixture()

#: The predictor answers "how many earlier turns did my prompt hold SQL for": turn k's gold is k - 1, so a turn passes
#: only with its whole history; every call is logged (one line per call, any process) to count them.
PREDICTOR = """
    import json, os

    def predict(case):
        known = sum(1 for turn in case.history if turn["sql"])
        with open(os.path.join(os.path.dirname(__file__), "calls.jsonl"), "a") as log:
            log.write(json.dumps({"question": case.question, "history": [t["sql"] for t in case.history]}) + "\\n")
        return {"sql": f"SELECT {known} AS known", "tokens": {"prompt": 10, "completion": 2}, "cached": False}
    """

SUITE = """
    database: shop.sqlite
    cases:
      - id: talk
        interaction:
          - {question: "first", gold: SELECT 0 AS known}
          - {question: "second", gold: SELECT 1 AS known}
          - {question: "third", gold: SELECT 2 AS known}
    """


def _calls(project) -> list[dict]:
    path = project.path / "calls.jsonl"
    calls = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    path.unlink(missing_ok=True)
    return calls


@pytest.fixture
def talk(shop):
    shop.makepyfile(mine=PREDICTOR)
    shop.makefile(".sqleval.yaml", s=SUITE)
    return shop


def test_a_later_turn_selected_alone_is_prompted_with_the_models_earlier_sql(talk):
    result, report = run(talk, "--sqleval-predictor=mine:predict")
    assert result.parseoutcomes() == {"passed": 3}
    assert len(_calls(talk)) == 3
    result, report = run(talk, "--sqleval-predictor=mine:predict", "-k", "talk[3]")
    cases = by_id(report)
    assert list(cases) == ["talk/3"], list(cases)
    assert cases["talk/3"]["outcome"] == "passed", cases["talk/3"]
    assert cases["talk/3"]["predicted"] == "SELECT 2 AS known"
    calls = _calls(talk)
    assert [c["question"] for c in calls] == ["first", "second", "third"]
    assert calls[-1]["history"] == ["SELECT 0 AS known", "SELECT 1 AS known"]
    # the two earlier turns were called for the history only: the record and the suite's usage count them
    history_calls = cases["talk/3"]["model_history_calls"]
    assert [c["case"] for c in history_calls] == ["talk/1", "talk/2"]
    assert all(c["cached"] is False and c["tokens"] == {"prompt": 10, "completion": 2} for c in history_calls)
    usage = report["suites"][0]["model"]
    assert (usage["cases"], usage["calls"], usage["tokens"]["prompt"]) == (1, 3, 30)


def test_a_turn_whose_earlier_turns_ran_here_makes_no_extra_call(talk):
    result, report = run(talk, "--sqleval-predictor=mine:predict")
    assert result.parseoutcomes() == {"passed": 3}
    assert [c["history"] for c in _calls(talk)] == [[], ["SELECT 0 AS known"], ["SELECT 0 AS known", "SELECT 1 AS known"]]
    assert all("model_history_calls" not in case for case in report["cases"])
    assert report["suites"][0]["model"]["calls"] == 3


@pytest.mark.parametrize("dist", ["worksteal", "load"])
def test_under_xdist_every_turn_gets_its_history_as_in_a_serial_run(talk, dist):
    _, serial = run(talk, "--sqleval-predictor=mine:predict")
    _calls(talk)
    result, parallel = run(talk, "--sqleval-predictor=mine:predict", "-n", "2", "--dist", dist)
    assert result.parseoutcomes() == {"passed": 3}
    for key in ("outcome", "predicted", "execution_match"):
        assert {c["id"]: c[key] for c in parallel["cases"]} == {c["id"]: c[key] for c in serial["cases"]}, key
    assert [c["history"] for c in _calls(talk) if c["question"] == "third"][-1] == ["SELECT 0 AS known",
                                                                                     "SELECT 1 AS known"]
