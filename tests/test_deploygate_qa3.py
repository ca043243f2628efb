"""Deploy gate, third QA pass (issue 10): what the earlier deploy-gate tests left out."""

from __future__ import annotations

import pytest

from deploygate_support import BASELINE_KINDS, make_project, model, run_report, write_model


@pytest.fixture
def sparc(pytester: pytest.Pytester) -> pytest.Pytester:
    """The deploy-gate project; the deployed model gets every turn of `beta`'s interaction `talk` right, the
    candidate misses its second turn (the interaction regressed: SParC's headline metric dropped)."""
    make_project(pytester)
    write_model(pytester.path / "candidate.jsonl", model({**BASELINE_KINDS, "talk/2": "partial"}))
    result, _ = run_report(pytester, "deployed.json", predictions="deployed.jsonl")
    assert result.ret == 0
    return pytester


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_the_sparc_metrics_are_compared_with_the_baseline(sparc: pytest.Pytester, workers):
    # issue 10: "For every metric: the delta, a 95% confidence interval of the delta, and a p-value from a paired
    # test (exact McNemar for per-case 0/1 metrics)": question_match pairs turns, interaction_match interactions
    result, report = run_report(sparc, "candidate.json", "--sqleval-baseline=deployed.json", *workers)
    assert result.ret == 0, result.stdout.str()
    beta = next(s for s in report["baseline"]["suites"] if s["name"] == "beta")
    for block in (beta, report["baseline"]["overall"]):
        inter = block["metrics"]["interaction_match"]
        assert (inter["baseline"], inter["current"], inter["n_pairs"]) == (1.0, 0.0, 1)
        assert inter["discordant"] == {"better": 0, "worse": 1}
        assert (inter["test"], inter["p_value"]) == ("mcnemar_exact", 1.0)
        question = block["metrics"]["question_match"]
        assert (question["n_pairs"], question["discordant"]) == (3, {"better": 0, "worse": 1})
        assert question["delta"] == pytest.approx(-1 / 3)
    result.stdout.fnmatch_lines(["*interaction_match*1.0000 -> 0.0000  delta -1.0000 *mcnemar_exact, 1 pairs)"])


def test_a_sparc_metric_can_be_gated_against_the_baseline(sparc: pytest.Pytester):
    result, report = run_report(sparc, "candidate.json", "--sqleval-baseline=deployed.json",
                                "--sqleval-fail-under-baseline=beta:interaction_match",
                                "--sqleval-fail-under-baseline=overall:question_match")
    assert result.ret == 0, result.stderr.str() + result.stdout.str()
    gates = {g["name"]: g for g in report["gates"]}
    assert gates["beta::beta:interaction_match vs baseline"]["value"] == -1.0
    assert gates["overall::question_match vs baseline"]["passed"] is True
    result.stdout.fnmatch_lines(["suite beta: PASS beta:interaction_match dropped 1.0000 vs baseline *1 pairs)*"
                                 "not significant at alpha 0.05"])


def test_unchanged_metrics_are_counted_over_their_own_pairs(sparc: pytest.Pytester):
    # the same model again: nothing moved; interaction_match pairs 1 interaction, not the suite's 12 cases
    result, _ = run_report(sparc, "again.json", "--sqleval-baseline=deployed.json", predictions="deployed.jsonl")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["    unchanged over 12 pairs: valid_syntax, *; over 3 pairs: question_match; "
                                 "over 1 pairs: interaction_match, interaction_execution_accuracy"])


def test_the_run_block_records_the_sqlite_library_version(pytester: pytest.Pytester):
    # issue 10: run metadata has "Python and package versions (pytest, sqlglot, SQLAlchemy, drivers)"; SQLite, the
    # default engine, is a library whose version is not Python's (a distribution links its own) and changes results
    import sqlite3

    make_project(pytester)
    result, report = run_report(pytester, "r.json", predictions="deployed.jsonl")
    assert result.ret == 0
    assert report["run"]["versions"]["sqlite"] == sqlite3.sqlite_version


def test_a_regated_report_records_the_gate_options_its_gates_come_from(sparc: pytest.Pytester, capsys):
    # `sqleval gate ... -o gated.json` writes gates from the options given; its run.options.gates kept the pytest
    # run's, so `sqleval gate gated.json` (the report uploaded as the next baseline, say) judged other gates
    import json

    from pytest_sqleval.cli import main

    run_report(sparc, "candidate.json", "--sqleval-baseline=deployed.json", "--sqleval-max-regressed=5")
    capsys.readouterr()  # the pytest run's output
    gated = sparc.path / "gated.json"
    args = ["--baseline", str(sparc.path / "deployed.json"), "--max-regressed", "0",
            "--fail-under-baseline", "overall:soft_f1", "--alpha", "0.6"]
    assert main(["gate", str(sparc.path / "candidate.json"), *args, "-o", str(gated)]) == 1
    first = capsys.readouterr().out
    saved = json.loads(gated.read_text(encoding="utf-8"))
    assert saved["run"]["options"]["gates"] == {"baseline": str(sparc.path / "deployed.json"), "max_regressed": 0,
                                                "fail_under_baseline": ["overall:soft_f1=0"], "alpha": 0.6}
    assert main(["gate", str(gated)]) == 1
    again = capsys.readouterr().out
    assert [line for line in again.splitlines() if "regressed case(s)" in line or "vs baseline" in line] == \
           [line for line in first.splitlines() if "regressed case(s)" in line or "vs baseline" in line]


def test_every_gate_is_its_own_junit_testcase_even_when_two_share_a_name(sparc: pytest.Pytester):
    # a baseline of other suites (renamed): the rule for each suite and the overall rule both give a failed gate
    # named `overall::execution_accuracy vs baseline`; JUnit merged them into one testcase with two <failure>s
    import json
    import xml.etree.ElementTree as ET

    renamed = json.loads((sparc.path / "deployed.json").read_text(encoding="utf-8"))
    for case in renamed["cases"]:
        case["suite"] = "old-" + case["suite"]
    (sparc.path / "renamed.json").write_text(json.dumps(renamed), encoding="utf-8")
    result, report = run_report(sparc, "candidate.json", "--sqleval-baseline=renamed.json",
                                "--sqleval-fail-under-baseline=execution_accuracy",
                                "--sqleval-fail-under-baseline=overall:execution_accuracy",
                                f"--junitxml={sparc.path / 'j.xml'}")
    assert result.ret == 1
    assert [g["passed"] for g in report["gates"] if g["kind"] == "fail_under_baseline"] == [False, False]
    suite = ET.parse(sparc.path / "j.xml").getroot().find("testsuite")
    cases = [tc for tc in suite.findall("testcase") if tc.get("classname") == "sqleval.gates"]
    assert len(cases) == len(report["gates"])
    assert [len(tc.findall("failure")) for tc in cases] == [0 if g["passed"] else 1 for g in report["gates"]]
    assert int(suite.get("tests")) == len(suite.findall("testcase"))
    assert int(suite.get("failures")) == sum(not g["passed"] for g in report["gates"])


@pytest.mark.parametrize("shard", ["3", 2, "1/x", "0/2", "3/2"])
def test_a_report_whose_shard_is_not_k_of_n_is_bad_input_not_a_traceback(sparc: pytest.Pytester, capsys, shard):
    # `sqleval merge` counts the shards from run.shard ("K/N"): a hand-edited "3" was an IndexError, a 2 an
    # AttributeError, with a traceback and exit status 1 instead of 2
    import json

    from pytest_sqleval.cli import main

    report = json.loads((sparc.path / "deployed.json").read_text(encoding="utf-8"))
    report["run"]["shard"] = shard
    (sparc.path / "odd.json").write_text(json.dumps(report), encoding="utf-8")
    capsys.readouterr()
    for argv in (["merge", str(sparc.path / "odd.json"), "-o", str(sparc.path / "m.json")],
                 ["gate", str(sparc.path / "odd.json")], ["report", str(sparc.path / "odd.json"), "--markdown",
                                                           str(sparc.path / "o.md")]):
        assert main(argv) == 2, argv
        assert "run.shard that is not K/N" in capsys.readouterr().err


def test_sqleval_gate_judges_the_tolerance_the_run_judged(sparc: pytest.Pytester, capsys):
    # issue 10: `sqleval gate report.json` re-gates "without executing anything; same exit codes". The run recorded
    # its rule as `beta:execution_accuracy=0.333333` (`:g`): a drop of 4/12 within the tolerance 0.3333334 (a PASS,
    # exit 0) was over it, and significant, in `sqleval gate` on the run's own report (exit 1)
    from pytest_sqleval.cli import main

    worse = {**BASELINE_KINDS, "b00": "partial", "b01": "partial", "b02": "rows", "b04": "none"}
    write_model(sparc.path / "worse.jsonl", model(worse))
    result, report = run_report(sparc, "worse.json", "--sqleval-baseline=deployed.json", "--sqleval-alpha=0.5",
                                "--sqleval-fail-under-baseline=beta:execution_accuracy=0.3333334", predictions="worse.jsonl")
    assert result.ret == 0
    assert report["run"]["options"]["gates"]["fail_under_baseline"] == ["beta:execution_accuracy=0.3333334"]
    result.stdout.fnmatch_lines(["suite beta: PASS beta:execution_accuracy dropped 0.3333 vs baseline *p=0.125*: "
                                 "within the tolerance 0.3333334"])
    capsys.readouterr()
    assert main(["gate", str(sparc.path / "worse.json")]) == 0
    assert "within the tolerance 0.3333334" in capsys.readouterr().out


@pytest.mark.parametrize("key, value", [("interaction_turns", "3"), ("turn", 1.5), ("interaction", 7)])
def test_a_baseline_turn_with_odd_interaction_keys_is_bad_input(sparc: pytest.Pytester, capsys, key, value):
    # the SParC metrics of a report are grouped and counted by interaction, turn and interaction_turns: a hand-edited
    # "3" was a TypeError (INTERNALERROR in pytest against it as the baseline, a traceback in `sqleval gate`)
    import json

    from pytest_sqleval.cli import main

    report = json.loads((sparc.path / "deployed.json").read_text(encoding="utf-8"))
    for case in report["cases"]:
        if case.get("interaction") is not None:
            case[key] = value
    (sparc.path / "odd.json").write_text(json.dumps(report), encoding="utf-8")
    result, _ = run_report(sparc, "candidate.json", "--sqleval-baseline=odd.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--sqleval-baseline odd.json: case #30 (beta::talk/1) of the baseline has {key} *"])
    capsys.readouterr()
    assert main(["gate", str(sparc.path / "odd.json")]) == 2
    assert f"of the report has {key} " in capsys.readouterr().err
