"""Deploy gate (issue 10), eighth look: runs that execute nothing, and other inputs nobody tuned for."""

from __future__ import annotations

import json
import re

import pytest

from deploygate_support import make_deployed_project

WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
GATES = (
    "--sqleval-baseline=deployed.json",
    "--sqleval-max-regressed=0",
    "--sqleval-fail-under-baseline=execution_accuracy",
    "--sqleval-threshold=overall:execution_accuracy=0.5",
)


# --------------------------------------------------------------------------- dry runs: --setup-plan, --setup-only
@WORKERS
@pytest.mark.parametrize("dry", ["--setup-plan", "--setup-only"])
def test_a_dry_run_judges_no_gate_and_leaves_the_reports_alone(pytester: pytest.Pytester, dry, workers):
    """`--setup-plan` and `--setup-only` run no case (pytest skips every call phase, exit status 0), as `--co`
    does. The plugin still summarised the empty run: every gate failed for want of a case, so the dry run exited 1
    with "1 gate failed", and the candidate's JSON report of the last real run was overwritten by an empty one."""
    project = make_deployed_project(pytester)
    out = project.path / "candidate.json"
    out.write_text("kept", encoding="utf-8")
    runner = project.runpytest_subprocess if workers else project.runpytest
    result = runner(
        "--sqleval",
        "--sqleval-predictions=candidate.jsonl",
        f"--sqleval-json={out}",
        "-p",
        "no:cacheprovider",
        *GATES,
        dry,
        *workers,
    )
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, text
    assert "gate failed" not in text and "FAIL" not in text
    assert out.read_text(encoding="utf-8") == "kept"


# --------------------------------------------------------------------------- ini values with a comment after them
@pytest.mark.parametrize(
    "lines, option",
    [
        ("sqleval_max_regressed = 2  # cases", "sqleval_max_regressed"),
        ("sqleval_alpha = 0.01 ; stricter", "sqleval_alpha"),
        ("sqleval_fail_under_baseline =\n    execution_accuracy=0.02  # allowed drop", "sqleval_fail_under_baseline"),
        ("sqleval_fail_under_baseline =\n    overall:soft_f1  # across suites", "sqleval_fail_under_baseline"),
    ],
)
def test_a_comment_after_a_deploy_gate_ini_value_is_named(pytester: pytest.Pytester, lines, option):
    """pytest's ini files have no comment after a value: `sqleval_max_regressed = 2  # cases` is the value
    "2  # cases". The other ini options say so (commit ec0e879); the deploy gate's said "--sqleval-max-regressed
    expects a whole number of cases, not '2  # cases'", naming a command-line option that was never given, and no
    fix."""
    make_deployed_project(pytester)
    pytester.makeini(f"[pytest]\nsqleval_baseline = deployed.json\n{lines}\n")
    result = pytester.runpytest("--sqleval", "--sqleval-predictions=candidate.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"ini option {option}:" in err and "put the comment on a line of its own" in err, err
    assert "--sqleval-max-regressed" not in err


def test_a_comment_after_the_ini_baseline_path_is_named(pytester: pytest.Pytester):
    make_deployed_project(pytester)
    pytester.makeini("[pytest]\nsqleval_baseline = deployed.json  # the last deploy\n")
    result = pytester.runpytest("--sqleval", "--sqleval-predictions=candidate.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "ini option sqleval_baseline:" in err and "put the comment on a line of its own" in err, err


def test_a_bad_deploy_gate_ini_value_without_a_comment_gets_no_comment_hint(pytester: pytest.Pytester):
    make_deployed_project(pytester)
    pytester.makeini("[pytest]\nsqleval_baseline = deployed.json\nsqleval_max_regressed = many\n")
    result = pytester.runpytest("--sqleval", "--sqleval-predictions=candidate.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "ini option sqleval_max_regressed: sqleval_max_regressed expects a whole number of cases, not 'many'" in err
    assert "comment" not in err


# --------------------------------------------------------------------------- a large suite's small significant drop
def _big_report(regressed: int, n: int = 2000, missed=()) -> dict:
    """A report of one suite `big` of n cases, the first ``regressed`` of them missed, and those of ``missed``."""
    cases = []
    missed = set(missed)
    for i in range(n):
        passed = i >= regressed and i not in missed
        cases.append(
            {
                "suite": "big",
                "id": f"c{i:05d}",
                "index": i,
                "outcome": "passed" if passed else "missed",
                "valid": True,
                "execution_match": passed,
                "soft_f1": 1.0 if passed else 0.5,
                "exact_match": None,
                "passed_rule": passed,
            }
        )
    return {
        "schema": "sqleval-report/1",
        "run": {},
        "suites": [{"name": "big", "path": "big.sqleval.yaml"}],
        "cases": cases,
    }


def test_the_verdict_line_of_a_small_significant_drop_shows_an_interval_that_excludes_zero(tmp_path, capsys):
    """2,000 pairs, 9 regressed and none fixed: McNemar p = 2 / 2^9 = 0.0039, and the exact interval of the drop is
    (9 / 2000) * (2 * [0, 1 - 0.025^(1/9)] - 1) = [-0.0045, -0.0015]: significant, the gate fails. Its verdict line
    printed the interval with two decimals, `95% CI [-0.00, -0.00]`, an interval that reads as 0 beside a FAIL that
    says the drop is significant. (The terminal's comparison line has four decimals; the verdict line, also in
    JUnit and the step summary, keeps two where they show the interval.)"""
    from pytest_sqleval.cli import main

    current, baseline = tmp_path / "candidate.json", tmp_path / "deployed.json"
    current.write_text(json.dumps(_big_report(9)), encoding="utf-8")
    baseline.write_text(json.dumps(_big_report(0)), encoding="utf-8")
    status = main(["gate", str(current), "--baseline", str(baseline), "--fail-under-baseline", "execution_accuracy"])
    out = capsys.readouterr().out
    assert status == 1, out
    line = next(line for line in out.splitlines() if "FAIL execution_accuracy dropped 0.0045" in line)
    assert "p=0.004, 2000 pairs" in line
    low, high = (float(v) for v in re.search(r"95% CI \[(\S+), (\S+)\]", line).groups())
    by_hand = (9 / 2000 * -1, 9 / 2000 * (2 * (1 - 0.025 ** (1 / 9)) - 1))  # -0.0045, -0.00147
    assert low == pytest.approx(by_hand[0], abs=6e-4) and high == pytest.approx(by_hand[1], abs=6e-4)
    assert low < high < 0  # it reads as excluding 0, as the p-value says
    # 300 regressed of 2,000: (300 / 2000) * (2 * [0, 1 - 0.025^(1/300)] - 1) = [-0.1500, -0.1463], two bounds that
    # two decimals showed alike ([-0.15, -0.15]: a point)
    current.write_text(json.dumps(_big_report(300)), encoding="utf-8")
    main(["gate", str(current), "--baseline", str(baseline), "--fail-under-baseline", "execution_accuracy"])
    assert "vs baseline (95% CI [-0.150, -0.146], p=<0.001, 2000 pairs)" in capsys.readouterr().out
    # an interval two decimals show faithfully keeps them: 900 regressed of 2,000 against a baseline that missed 1,000
    # others, which 700 of them now pass (700 fixed): delta -0.1, [-0.1392, -0.0605] by the conditional interval
    baseline.write_text(json.dumps(_big_report(0, missed=range(1000, 2000))), encoding="utf-8")
    current.write_text(json.dumps(_big_report(900, missed=range(1700, 2000))), encoding="utf-8")
    main(["gate", str(current), "--baseline", str(baseline), "--fail-under-baseline", "execution_accuracy"])
    assert "dropped 0.1000 vs baseline (95% CI [-0.14, -0.06], p=<0.001, 2000 pairs)" in capsys.readouterr().out


def test_the_overall_line_of_a_near_perfect_large_run_shows_intervals_that_hold_their_values(tmp_path, capsys):
    """The overall line (terminal, `sqleval gate`, `sqleval merge`) printed each interval with two decimals: 2,000
    cases all valid showed `valid_syntax 1.0000 [1.00, 1.00]` (Wilson's lower bound is 1 / (1 + z^2 / 2000) =
    0.99808: not a point), and soft F1 0.9978 showed `[1.00, 1.00]`, an interval its value is outside of."""
    from pytest_sqleval.cli import main

    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(_big_report(9)), encoding="utf-8")
    assert main(["gate", str(path)]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("overall (2000 scored cases): ")
    wilson_low = 1 / (1 + 1.959963984540054**2 / 2000)
    assert f"valid_syntax 1.0000 [{wilson_low:.3f}, 1.000]" in line, line
    value, low, high = (float(v) for v in re.search(r"soft_f1 (\S+) \[(\S+), (\S+)\]", line).groups())
    assert value == pytest.approx(1 - 9 * 0.5 / 2000, abs=1e-4)
    assert low < value < high, line


# --------------------------------------------------------------------------- Markdown and HTML: value vs paired baseline
@WORKERS
def test_markdown_and_html_show_the_baseline_beside_this_runs_value_over_the_same_pairs(pytester, workers):
    """The baseline lacks a10-a16 (cases added since), which the candidate misses. Over the 13 paired cases of
    alpha, execution accuracy went 10/13 -> 11/13 (a04 fixed): delta +0.0769. The Markdown row read `0.5500 |
    ... | 0.7692 | +0.0769 ▲`: this run's value over all 20 cases beside the baseline's over the 13 pairs, a fall of
    0.22 next to a rise, and the HTML chart drew the same two bars. The row now names this run's figure over the
    pairs too, and the chart draws it."""
    project = make_deployed_project(pytester)
    deployed = json.loads((project.path / "deployed.json").read_text(encoding="utf-8"))
    added = {f"a{i}" for i in range(10, 17)}
    deployed["cases"] = [c for c in deployed["cases"] if not (c["suite"] == "alpha" and c["id"] in added)]
    (project.path / "older.json").write_text(json.dumps(deployed), encoding="utf-8")
    markdown, page = project.path / "summary.md", project.path / "report.html"
    runner = project.runpytest_subprocess if workers else project.runpytest
    result = runner(
        "--sqleval",
        "--sqleval-predictions=candidate.jsonl",
        "-p",
        "no:cacheprovider",
        "--sqleval-baseline=older.json",
        f"--sqleval-markdown={markdown}",
        f"--sqleval-html={page}",
        *workers,
    )
    assert result.ret == 0, result.stdout.str()
    text = markdown.read_text(encoding="utf-8")
    alpha = text[text.index("Suite <code>alpha</code>") : text.index("Suite <code>beta</code>")]
    assert (
        f"| execution accuracy | 0.5500 | [0.3421, 0.7418] | 0.5556 | {10 / 13:.4f} → {11 / 13:.4f} (13 pairs) | "
        f"+{1 / 13:.4f} ▲ |"
    ) in alpha, alpha
    beta = text[text.index("Suite <code>beta</code>") :]
    assert "| execution accuracy | 0.8333 | [0.5520, 0.9530] | 0.6667 | 0.9167 | -0.0833 ▼ |" in beta  # same pairs
    html = page.read_text(encoding="utf-8")
    assert f"{10 / 13:.4f} → {11 / 13:.4f} (13 pairs)" in html
    data = json.loads(
        re.search(r'<script id="sqleval-data" type="application/json">(.*?)</script>', html, re.S).group(1)
    )
    charted = next(s for s in data["suites"] if s["name"] == "alpha")["metrics"]
    at = charted["labels"].index("execution accuracy")
    assert (charted["current"][at], charted["paired"][at], charted["baseline"][at]) == pytest.approx(
        (11 / 20, 11 / 13, 10 / 13)
    )
