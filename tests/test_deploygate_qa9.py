"""Deploy gate (issue 10), ninth look: inputs nobody tuned for, checked against statistics computed by hand."""

from __future__ import annotations

import json
import math
import re

import pytest

from conftest import make_sqlite


def _mcnemar_by_hand(worse: int, better: int) -> float:
    """Two-sided exact McNemar: 2 * sum_{k <= min(b, c)} C(b + c, k) / 2^(b + c), at most 1."""
    n = worse + better
    return min(1.0, 2 * sum(math.comb(n, k) for k in range(min(worse, better) + 1)) / 2**n)


def _write_suite(pytester: pytest.Pytester, n: int) -> None:
    make_sqlite(pytester.path / "shop.sqlite")
    lines = ["suite: flips", "database: shop.sqlite", "cases:"]
    lines += [f"  - {{id: c{i:03d}, gold: SELECT {i} AS v}}" for i in range(n)]
    (pytester.path / "flips.sqleval.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _write_model(pytester: pytest.Pytester, name: str, n: int, missed: range) -> None:
    rows = [{"id": f"c{i:03d}", "sql": f"SELECT {i + 1 if i in missed else i} AS v"} for i in range(n)]
    (pytester.path / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _run(pytester: pytest.Pytester, predictions: str, out: str, *args: str):
    result = pytester.runpytest("--sqleval", f"--sqleval-predictions={predictions}", f"--sqleval-json={out}",
                                "-p", "no:cacheprovider", *args)
    return result, json.loads((pytester.path / out).read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- a p-value just under alpha
@pytest.mark.parametrize("worse, better, alpha", [(42, 25, "0.05"), (31, 13, "0.01")])
def test_a_verdict_shows_a_p_value_just_under_alpha_on_its_side_of_alpha(pytester: pytest.Pytester, worse, better,
                                                                          alpha):
    """42 regressed and 25 fixed cases: McNemar p = 0.0498 by hand, significant at 0.05, and the gate fails. Its
    verdict line printed `p=0.050 ...: more than the tolerance 0 and significant at alpha 0.05`: a p-value equal to
    alpha beside a verdict that says it is below it (31 worse, 13 better at alpha 0.01: p = 0.0096 shown as 0.010).
    The line (terminal, `sqleval gate`, JUnit, step summary) now shows the digits that put p on its side of alpha."""
    n = worse + better + 3
    _write_suite(pytester, n)
    _write_model(pytester, "deployed.jsonl", n, missed=range(worse, worse + better))
    _write_model(pytester, "candidate.jsonl", n, missed=range(worse))
    result, _ = _run(pytester, "deployed.jsonl", "deployed.json")
    assert result.ret == 0
    result, report = _run(pytester, "candidate.jsonl", "candidate.json", "--sqleval-baseline=deployed.json",
                          "--sqleval-fail-under-baseline=execution_accuracy", f"--sqleval-alpha={alpha}")
    p = _mcnemar_by_hand(worse, better)
    assert p < float(alpha) and round(p, 3) == float(alpha)  # three decimals would show alpha itself
    stats = report["baseline"]["suites"][0]["metrics"]["execution_accuracy"]
    assert stats["p_value"] == pytest.approx(p, rel=1e-12)
    assert stats["discordant"] == {"better": better, "worse": worse}
    assert result.ret == 1
    shown = f"p={p:.4f}, {n} pairs"
    gate = report["gates"][0]
    assert gate["passed"] is False and shown in gate["message"], gate["message"]
    result.stdout.fnmatch_lines([f"suite flips: FAIL execution_accuracy dropped * vs baseline *{shown}): more than the "
                                 f"tolerance 0 and significant at alpha {float(alpha):g}"])
    shown_p = re.search(r"p=([0-9.]+),", gate["message"]).group(1)
    assert float(shown_p) < float(alpha)


def test_a_p_value_just_over_alpha_reads_as_not_below_it(capsys, tmp_path):
    """The other side: p = 0.0504 may show as 0.050 beside "not significant at alpha 0.05" (0.050 is not below
    0.05); and p under 0.001 keeps `<0.001` at the default alpha."""
    from pytest_sqleval.deploygate import format_p

    assert format_p(0.0504, 0.05) == "0.050"
    assert format_p(0.0498, 0.05) == "0.0498"
    assert format_p(0.0498) == "0.050"  # no alpha: the comparison lines keep three decimals
    assert format_p(0.0004, 0.05) == "<0.001"
    assert format_p(0.0004, 0.0005) == "0.0004"
    assert format_p(0.0006, 0.0005) == "0.001"  # not below 0.0005 either way
    assert format_p(0.009999, 0.01) == "0.009999"


# --------------------------------------------------------------------------- a suite whose case ids were renamed
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_suite_whose_case_ids_were_renamed_fails_its_per_suite_gate(pytester: pytest.Pytester, workers):
    """The baseline has both suites, but beta's cases under other ids (`old-b00`, ...; a re-import renamed them):
    beta pairs no case. `--sqleval-fail-under-baseline execution_accuracy` (each suite) judged alpha and left beta
    out without a word, so the run passed; the same rule for `question_match`, which only beta has, failed as "no
    suite has it in both runs". A suite both runs scored, with no pair, is not compared: its gate fails, naming
    why."""
    from deploygate_support import make_deployed_project

    project = make_deployed_project(pytester)
    deployed = json.loads((project.path / "deployed.json").read_text(encoding="utf-8"))
    for case in deployed["cases"]:
        if case["suite"] == "beta":
            case["id"] = "old-" + case["id"]
            if case.get("interaction"):
                case["interaction"] = "old-" + case["interaction"]
    (project.path / "renamed.json").write_text(json.dumps(deployed), encoding="utf-8")
    runner = project.runpytest_subprocess if workers else project.runpytest
    result = runner("--sqleval", "--sqleval-predictions=candidate.jsonl", "--sqleval-json=candidate.json",
                    "-p", "no:cacheprovider", "--sqleval-baseline=renamed.json",
                    "--sqleval-fail-under-baseline=execution_accuracy", "--sqleval-fail-under-baseline=question_match",
                    *workers)
    report = json.loads((project.path / "candidate.json").read_text(encoding="utf-8"))
    beta = next(s for s in report["baseline"]["suites"] if s["name"] == "beta")
    assert beta["counts"]["new"] == beta["counts"]["removed"] == 12 and beta["metrics"] == {}
    assert "execution_accuracy" in beta["unpaired_metrics"] and "question_match" in beta["unpaired_metrics"]
    gates = {g["name"]: g for g in report["gates"]}
    assert gates["alpha::execution_accuracy vs baseline"]["passed"] is True  # p = 0.070: not significant
    for name in ("beta::execution_accuracy vs baseline", "beta::question_match vs baseline"):
        assert gates[name]["passed"] is False and gates[name]["value"] is None
    assert len(report["gates"]) == 3
    assert result.ret == 1
    result.stdout.fnmatch_lines(["suite beta: FAIL execution_accuracy vs baseline: scored in both runs, but on no case "
                                 "of the same id in both (12 new, 12 removed: case ids or suites renamed?)*",
                                 "suite beta: FAIL question_match vs baseline: *case ids or suites renamed?*",
                                 "*2 gates failed*"])
    # cases added since the baseline (interactions: question_match scored on this side only) are new, not renamed
    from pytest_sqleval.baseline import compare_cases

    now = [c for c in report["cases"] if c["suite"] == "beta"]
    older = [c for c in now if c.get("interaction") is None]
    entry = compare_cases(now, older)
    assert entry["counts"]["new"] == 3 and "unpaired_metrics" not in entry and "question_match" not in entry["metrics"]



# --------------------------------------------------------------------------- the README's GitHub Actions gate job
def _readme_workflow() -> dict:
    from pathlib import Path

    import yaml

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    start = text.index("A GitHub Actions workflow: three shards")
    block = text[text.index("```yaml\n", start) + len("```yaml\n"):]
    return yaml.safe_load(block[:block.index("```")])


def test_the_readme_gate_jobs_step_summary_shows_the_gates_it_decides(pytester: pytest.Pytester):
    """The README's merge job wrote the step summary from the merged report, then gated: the summary said
    `✅ sqleval: no gates` above a gate step that failed the job on four gates (8 regressed; execution accuracy
    0.6562 < 0.8; significant drops of execution accuracy, p = 0.039, and soft F1, p = 0.008): no summary showed
    them. Its `sqleval` steps, run as Actions runs them (after a failed step, only those with `if: always()`), now
    write a summary with every verdict of the gate step."""
    import os
    import shlex
    import subprocess
    import sys

    from deploygate_support import make_deployed_project, run_report

    project = make_deployed_project(pytester)
    for k in (1, 2, 3):
        run_report(project, f"shard-{k}.json", f"--sqleval-shard={k}/3")
    (project.path / "deployed").mkdir()
    (project.path / "deployed.json").rename(project.path / "deployed" / "report.json")
    summary = project.path / "step-summary.md"
    summary.write_text("", encoding="utf-8")
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)}
    command = f"{shlex.quote(sys.executable)} -m pytest_sqleval.cli"
    failed, gate_output = False, ""
    for step in _readme_workflow()["jobs"]["gate"]["steps"]:
        script = str(step.get("run", "")).strip()
        if not script.startswith("sqleval ") or (failed and step.get("if") != "always()"):
            continue
        done = subprocess.run(["bash", "-c", command + script[len("sqleval"):]], cwd=project.path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode in (0, 1), (script, done.stderr)
        if script.startswith("sqleval gate"):
            gate_output = done.stdout
        failed = failed or done.returncode != 0
    assert failed and "sqleval: 4 of 4 gate(s) failed" in gate_output, gate_output
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## ❌ sqleval: 4 of 4 gates failed"), text[:300]
    for name in ("overall::execution_accuracy", "overall::max_regressed", "overall::execution_accuracy vs baseline",
                 "overall::soft_f1 vs baseline"):
        assert f"| {name} |" in text, name


# --------------------------------------------------------------------------- the documented bootstrap, bit for bit
def _bootstrap_by_hand(values: list[float]) -> list[float]:
    """The documented paired bootstrap: random.Random(20261201).choices, 1,000 resamples, fsum means, the 2.5th and
    97.5th percentiles by linear interpolation (numpy's default, type 7)."""
    import random

    rng = random.Random(20261201)
    means = sorted(math.fsum(rng.choices(values, k=len(values))) / len(values) for _ in range(1000))

    def percentile(q: float) -> float:
        position = q * (len(means) - 1)
        low = math.floor(position)
        return means[low] + (means[low + 1] - means[low]) * (position - low)

    return [percentile(0.025), percentile(0.975)]


def test_the_paired_bootstrap_interval_is_the_documented_one_bit_for_bit(pytester: pytest.Pytester):
    """42 cases whose soft F1 fell from 1 to 0, 25 that rose from 0 to 1, 3 unchanged: the interval of the mean
    difference computed by hand as documented (seed 20261201, the 2.5th and 97.5th percentiles) was
    -0.44321428571428567; the report said -0.4432142857142854: the percentiles were taken at (1 - 0.95) / 2 =
    0.025000000000000022, a hair off 0.025. Now the same float, as "the same reports always give the same
    numbers" promises a reader who recomputes them; the suite's own soft F1 interval too."""
    n = 70
    _write_suite(pytester, n)
    _write_model(pytester, "deployed.jsonl", n, missed=range(42, 67))
    _write_model(pytester, "candidate.jsonl", n, missed=range(42))
    _run(pytester, "deployed.jsonl", "deployed.json")
    _, report = _run(pytester, "candidate.jsonl", "candidate.json", "--sqleval-baseline=deployed.json")
    deployed = {c["id"]: c for c in json.loads((pytester.path / "deployed.json").read_text(encoding="utf-8"))["cases"]}
    diffs = [c["soft_f1"] - deployed[c["id"]]["soft_f1"] for c in report["cases"]]
    assert sorted(set(diffs)) == [-1.0, 0.0, 1.0] and diffs.count(-1.0) == 42 and diffs.count(1.0) == 25
    stats = report["baseline"]["suites"][0]["metrics"]["soft_f1"]
    assert stats["p_value"] == pytest.approx(_mcnemar_by_hand(42, 25), rel=1e-12)  # one size: McNemar's p
    assert "ci_widened_to_zero" not in stats
    assert stats["ci"] == _bootstrap_by_hand(diffs)
    values = [c["soft_f1"] for c in report["cases"]]
    assert report["suites"][0]["intervals"]["soft_f1"] == _bootstrap_by_hand(values)


# --------------------------------------------------------------------------- a predictions file taken for the baseline
@pytest.mark.parametrize("text", ['{"id": "a00", "sql": "SELECT 1"}\n{"id": "a01", "sql": "SELECT 2"}\n',
                                  '{"id": "a00", "sql": "SELECT 1"}\n',
                                  '[{"id": "a00", "sql": "SELECT 1"}]'], ids=["jsonl", "one-line", "list"])
def test_a_predictions_file_passed_as_the_baseline_is_named_as_one(pytester: pytest.Pytester, text):
    """`--sqleval-baseline deployed.jsonl` (the deployed model's predictions, one letter from its report
    deployed.json): "the baseline is not valid JSON: Extra data (line 2, column 1)", "fix: pass the JSON file
    itself", or "not a sqleval-report/1 report (schema: None)": nothing said it was a predictions file."""
    _write_suite(pytester, 2)
    (pytester.path / "deployed.jsonl").write_text(text, encoding="utf-8")
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-baseline=deployed.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*--sqleval-baseline deployed.jsonl: the baseline is a predictions file ({id, sql} per case), not a report*",
        "*fix: pass the --sqleval-json report of the deployed model's run (write it with pytest --sqleval "
        "--sqleval-json PATH)*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
