"""The `sqleval` console command: merge of shard reports = one unsharded run; gate re-evaluates saved reports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from deploygate_support import make_deployed_project, make_project, run_report
from pytest_sqleval.cli import SUBCOMMANDS, main

GATES = ("--sqleval-threshold=overall:execution_accuracy=0.5", "--sqleval-threshold=soft_f1=0.8",
         "--sqleval-baseline=deployed.json", "--sqleval-max-regressed=7",
         "--sqleval-fail-under-baseline=execution_accuracy", "--sqleval-fail-under-baseline=overall:execution_accuracy")


def canonical(block) -> str:
    return json.dumps(block, sort_keys=True)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    # alpha's own thresholds hold for the deployed model (0.85 >= 0.7, 0 errors): its run passes
    return make_deployed_project(pytester, alpha_thresholds="thresholds: {execution_accuracy: 0.7, error_count: 0}")


def test_merge_of_three_shards_equals_one_unsharded_run(project: pytest.Pytester, capsys):
    whole_result, whole = run_report(project, "whole.json", *GATES)
    shards = []
    for k in (1, 2, 3):
        _, report = run_report(project, f"shard{k}.json", f"--sqleval-shard={k}/3", *GATES)
        assert len(report["cases"]) < 32
        shards.append(str(project.path / f"shard{k}.json"))
    out = project.path / "all.json"
    assert main(["merge", *shards, "-o", str(out), "--baseline", str(project.path / "deployed.json")]) == 0
    merged = json.loads(out.read_text())
    # byte-identical aggregates, intervals, overall figure, baseline comparison and gates
    for key in ("suites", "overall", "cases"):
        assert canonical(merged[key]) == canonical(whole[key]), key
    assert canonical(merged["gates"]) == canonical(whole["gates"])
    assert canonical(merged["baseline"]["suites"]) == canonical(whole["baseline"]["suites"])
    assert canonical(merged["baseline"]["overall"]) == canonical(whole["baseline"]["overall"])
    assert merged["run"]["shard"] is None and [m["shard"] for m in merged["run"]["merged_from"]] == ["1/3", "2/3", "3/3"]
    assert merged["run"]["files"] == whole["run"]["files"]
    printed = capsys.readouterr().out
    assert "merged 3 reports (32 cases, 2 suites)" in printed
    assert any(g["passed"] is False for g in whole["gates"]) and whole_result.ret == 1
    # the merged report gates like the unsharded run: exit 1
    assert main(["gate", str(out)]) == 1


def test_merge_prints_every_overall_metric_as_the_terminal_does(project: pytest.Pytester, capsys):
    """The merged overall line is the unsharded run's: every metric of the report (the error count, test-suite
    accuracy, interaction match, your own), not a fixed five."""
    whole_result, whole = run_report(project, "whole.json")
    shards = []
    for k in (1, 2):
        run_report(project, f"shard{k}.json", f"--sqleval-shard={k}/2")
        shards.append(str(project.path / f"shard{k}.json"))
    capsys.readouterr()
    assert main(["merge", *shards, "-o", str(project.path / "all.json")]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("overall (")]
    terminal = [line for line in whole_result.outlines if line.startswith("overall (")]
    assert len(printed) == len(terminal) == 1
    assert printed[0].split("): ", 1)[1] == terminal[0].split("): ", 1)[1]
    assert "error_count " in printed[0] and "bird_soft_f1 " in printed[0]
    assert printed[0].startswith(f"overall ({whole['overall']['scored']} scored cases): ")


def test_merge_refuses_overlapping_reports(project: pytest.Pytester, capsys):
    _, _ = run_report(project, "a.json")
    _, _ = run_report(project, "b.json", "--sqleval-shard=1/2")
    code = main(["merge", str(project.path / "a.json"), str(project.path / "b.json"), "-o", str(project.path / "m.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert "b.json: case alpha::" in err and "is also in" in err and "fix: merge the reports of disjoint shards" in err


def test_merge_warns_about_a_missing_shard(project: pytest.Pytester, capsys):
    run_report(project, "s1.json", "--sqleval-shard=1/3")
    run_report(project, "s3.json", "--sqleval-shard=3/3")
    assert main(["merge", str(project.path / "s1.json"), str(project.path / "s3.json"), "-o", str(project.path / "m.json")]) == 0
    assert "warning: shard(s) 2/3 missing" in capsys.readouterr().err


def test_gate_rechecks_a_saved_report(project: pytest.Pytester, capsys):
    _, report = run_report(project, "candidate.json")
    path = str(project.path / "candidate.json")
    deployed = str(project.path / "deployed.json")
    # alpha has its own thresholds (execution_accuracy 0.55 < 0.7 fails): exit 1, as pytest's
    assert main(["gate", path]) == 1
    assert "suite alpha: FAIL execution_accuracy 0.55 < 0.70" in capsys.readouterr().out
    # a command-line threshold wins over the suite's, per metric
    assert main(["gate", path, "--threshold", "execution_accuracy=0.5", "--threshold", "error_count=5"]) == 0
    out = capsys.readouterr().out
    assert "suite alpha: PASS execution_accuracy 0.55 >= 0.50" in out and "all 4 gate(s) passed" in out
    assert main(["gate", path, "--threshold", "error_count=5", "--threshold", "execution_accuracy=0.5",
                 "--threshold", "overall:execution_accuracy=0.7"]) == 1
    assert "FAIL overall:execution_accuracy 0.6562 < 0.70" in capsys.readouterr().out
    # baseline gates, with the same statistics as the pytest run
    args = [path, "--threshold", "execution_accuracy=0.5", "--threshold", "error_count=5", "--baseline", deployed]
    assert main(["gate", *args, "--max-regressed", "8"]) == 0
    assert main(["gate", *args, "--max-regressed", "7"]) == 1
    assert main(["gate", *args, "--fail-under-baseline", "overall:execution_accuracy"]) == 1
    assert "p=0.039" in capsys.readouterr().out
    assert main(["gate", *args, "--fail-under-baseline", "overall:execution_accuracy", "--alpha", "0.01"]) == 0
    regated = project.path / "regated.json"
    assert main(["gate", *args, "--max-regressed", "7", "-o", str(regated)]) == 1
    saved = json.loads(regated.read_text())
    assert saved["baseline"]["overall"]["counts"]["regressed"] == 8
    assert [g["kind"] for g in saved["gates"] if not g["passed"]] == ["max_regressed"]


def test_gate_input_errors_exit_2(project: pytest.Pytester, capsys):
    run_report(project, "candidate.json")
    path = str(project.path / "candidate.json")
    assert main(["gate", str(project.path / "missing.json")]) == 2
    assert "cannot read the report" in capsys.readouterr().err
    assert main(["gate", path, "--max-regressed", "1"]) == 2
    assert "the baseline gates need a baseline: pass --baseline" in capsys.readouterr().err
    assert main(["gate", path, "--threshold", "bogus=1"]) == 2
    assert "unknown metric 'bogus'" in capsys.readouterr().err


def test_the_console_script_and_its_registry():
    assert {"merge", "gate"} <= set(SUBCOMMANDS)
    done = subprocess.run([sys.executable, "-m", "pytest_sqleval.cli", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "merge" in done.stdout and "gate" in done.stdout
    import shutil

    script = shutil.which("sqleval")
    if script is not None:  # installed with pip install -e .
        done = subprocess.run([script, "gate", "/nonexistent.json"], capture_output=True, text=True)
        assert done.returncode == 2 and "cannot read the report" in done.stderr


def test_overall_thresholds_parse_only_from_the_command_line_and_ini():
    from pytest_sqleval.thresholds import ThresholdError, lookup, make_threshold, parse_assignment

    threshold = parse_assignment("overall:execution_accuracy=0.8", "cli")
    assert (threshold.metric, threshold.bound, threshold.value) == ("overall:execution_accuracy", "min", 0.8)
    assert lookup({"metrics": {"execution_accuracy": 0.7}}, threshold.metric) == 0.7
    verdict = threshold.check({"metrics": {"execution_accuracy": 0.7}})
    assert not verdict.passed and verdict.line() == "FAIL overall:execution_accuracy 0.70 < 0.80"
    assert parse_assignment("overall:error_count=3", "ini").bound == "max"
    with pytest.raises(ThresholdError, match="belongs on the command line"):
        make_threshold("overall:execution_accuracy", 0.8, "suite")
    with pytest.raises(ThresholdError, match="the overall figure has no breakdowns"):
        parse_assignment("overall:by_tag.joins.execution_accuracy=0.5", "cli")
    with pytest.raises(ThresholdError, match="unknown metric 'accuracy'"):
        parse_assignment("overall:accuracy=0.5", "cli")


def test_overall_threshold_in_a_suite_file_is_an_error(pytester: pytest.Pytester):
    make_project(pytester, alpha_thresholds="thresholds: {'overall:execution_accuracy': 0.8}")
    result, _ = run_report(pytester, "x.json")
    result.stdout.fnmatch_lines(["*alpha.sqleval.yaml*overall:execution_accuracy: a threshold on the overall figure "
                                 "belongs on the command line*"])
