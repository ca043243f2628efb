"""Comparison with a baseline report: pairing, paired statistics, warnings, and the baseline gates (pytester)."""

from __future__ import annotations

import json

import pytest

from deploygate_support import REGRESSED, literal_brackets, make_deployed_project, make_project, run_report
from pytest_sqleval.baseline import ReportError, compare_cases, file_warnings, load_report, normalise_case
from pytest_sqleval.deploygate import GateOptionError, parse_baseline_rule
from pytest_sqleval.stats import wilson


def case(case_id, outcome, em=None, f1=None, **extra):
    """A report case: outcome passed/missed/error; execution match follows the outcome unless given."""
    em = (outcome == "passed") if em is None else em
    record = {"suite": "s", "id": case_id, "outcome": outcome, "valid": outcome != "error" or None,
              "execution_match": em if outcome != "error" else None, "passed_rule": outcome == "passed",
              "soft_f1": (1.0 if em else 0.5) if f1 is None else f1, "exact_match": None}
    if outcome == "error":
        record.update(valid=None, passed_rule=False, soft_f1=None)
    record.update(extra)
    return record


def test_pairs_by_id_into_kinds():
    baseline = [case("a", "passed"), case("b", "passed"), case("c", "missed"), case("d", "missed"),
                case("gone", "passed"), case("broken", "passed")]
    current = [case("b", "missed"), case("a", "passed"), case("c", "passed"), case("d", "missed"),
               case("fresh", "passed"), case("broken", "error")]
    entry = compare_cases(current, baseline)
    assert entry["pairs"] == {"fixed": ["c"], "regressed": ["b"], "still_missed": ["d"], "still_passed": ["a"],
                              "new": ["fresh"], "removed": ["gone"]}
    assert entry["pairs_with_errors"] == ["broken"]
    assert entry["counts"]["regressed"] == 1
    ex = entry["metrics"]["execution_accuracy"]
    # pairs scored on both sides: a, b, c, d (broken has no score now): 2/4 now, 2/4 then
    assert (ex["current"], ex["baseline"], ex["delta"], ex["n_pairs"]) == (0.5, 0.5, 0.0, 4)
    assert ex["test"] == "mcnemar_exact" and ex["p_value"] == 1.0  # b = c = 1: 2 * 2/4 capped at 1


def test_mcnemar_on_a_small_table():
    # 1 pair got worse, 6 got better, 3 stay passed: p = 2 * (1 + 7) / 2^7 = 0.125
    baseline = ([case(f"w{i}", "passed") for i in range(1)] + [case(f"b{i}", "missed") for i in range(6)]
                + [case(f"s{i}", "passed") for i in range(3)])
    current = ([case(f"w{i}", "missed") for i in range(1)] + [case(f"b{i}", "passed") for i in range(6)]
               + [case(f"s{i}", "passed") for i in range(3)])
    ex = compare_cases(current, baseline)["metrics"]["execution_accuracy"]
    assert ex["p_value"] == 0.125
    assert ex["delta"] == pytest.approx((9 - 4) / 10)
    assert ex["discordant"] == {"better": 6, "worse": 1}
    lo, hi = ex["ci"]
    assert lo < 0 < hi  # not significant, and the interval says so too


def test_soft_f1_uses_the_sign_flip_test():
    baseline = [case(f"c{i}", "passed", f1=1.0) for i in range(4)]
    current = [case("c0", "missed", em=False, f1=0.5), case("c1", "missed", em=False, f1=0.5),
               case("c2", "missed", em=False, f1=0.5), case("c3", "passed", f1=1.0)]
    f1 = compare_cases(current, baseline)["metrics"]["soft_f1"]
    assert f1["test"] == "sign_flip" and f1["ci_method"] == "paired_bootstrap"
    assert f1["delta"] == pytest.approx(-1.5 / 4)
    assert f1["p_value"] == 0.25  # three equal non-zero differences: 2 of 8 sign patterns reach |sum|
    assert f1["ci"][0] <= f1["delta"] <= f1["ci"][1] <= 0


def test_a_changed_predictions_file_is_no_warning_a_changed_suite_is():
    """A new model's predictions differ from the deployed one's by design: their hash is kept, not warned about."""
    base = {"files": {"s.sqleval.yaml": "a" * 64, "preds.jsonl": "b" * 64}, "prediction_files": ["preds.jsonl"]}
    now = {"files": {"s.sqleval.yaml": "d" * 64, "preds.jsonl": "c" * 64}, "prediction_files": ["preds.jsonl"]}
    warnings = file_warnings(now, base)
    assert len(warnings) == 1 and warnings[0].startswith("s.sqleval.yaml changed since the baseline")
    assert file_warnings({**now, "files": {**now["files"], "s.sqleval.yaml": "a" * 64}}, base) == []


def test_the_run_block_names_its_predictions_files(pytester):
    """`run.prediction_files`: the --sqleval-predictions file and a suite's own `predictions:` file."""
    from conftest import make_sqlite

    make_sqlite(pytester.path / "shop.sqlite")
    pytester.path.joinpath("mine.jsonl").write_text('{"id": "a", "sql": "SELECT 1"}\n', encoding="utf-8")
    pytester.path.joinpath("s.sqleval.yaml").write_text(
        "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n", encoding="utf-8")
    pytester.runpytest("--sqleval", "--sqleval-predictions=mine.jsonl", "--sqleval-json=r.json", "-p", "no:cacheprovider")
    run = json.loads(pytester.path.joinpath("r.json").read_text(encoding="utf-8"))["run"]
    assert run["prediction_files"] == ["mine.jsonl"] and "mine.jsonl" in run["files"]


def test_old_reports_without_passed_rule():
    assert normalise_case({"suite": "s", "id": "x", "outcome": "passed"})["passed_rule"] is True
    assert normalise_case({"suite": "s", "id": "x", "outcome": "error"})["passed_rule"] is None


def test_file_warnings_name_the_changed_file():
    base = {"files": {"suites/a.sqleval.yaml": "a" * 64, "db/shop.sqlite": "b" * 64},
            "options": {"timeout": 30.0}}
    now = {"files": {"suites/a.sqleval.yaml": "a" * 64, "db/shop.sqlite": "c" * 64}, "options": {"timeout": 5.0}}
    warnings = file_warnings(now, base)
    assert len(warnings) == 2
    assert warnings[0].startswith("db/shop.sqlite changed since the baseline (sha256 bbbbbbbbbbbb -> cccccccccccc)")
    assert "option timeout differs" in warnings[1]
    assert "no file hashes" in file_warnings(now, {})[0]


def test_load_report_errors_name_the_file(tmp_path):
    with pytest.raises(ReportError, match="cannot read the baseline"):
        load_report(tmp_path / "nope.json", role="baseline")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "sqleval-report/1",\n  "suites": [}')
    with pytest.raises(ReportError, match=r"bad.json: the report is not valid JSON: .* \(line 2, column 14\)"):
        load_report(bad)
    other = tmp_path / "other.json"
    other.write_text('{"schema": "coverage/7"}')
    with pytest.raises(ReportError, match="not a sqleval-report/1 report .*'coverage/7'.*\n  fix: write it with pytest"):
        load_report(other)


def test_parse_baseline_rule():
    rule = parse_baseline_rule("overall:soft_f1=0.02")
    assert (rule.scope, rule.metric, rule.tolerance) == ("overall", "soft_f1", 0.02)
    assert parse_baseline_rule("execution_accuracy").tolerance == 0.0
    assert parse_baseline_rule("execution_accuracy").scope is None
    with pytest.raises(GateOptionError, match="cannot compare 'error_count'"):
        parse_baseline_rule("error_count=1")
    with pytest.raises(GateOptionError, match="between 0 and 1"):
        parse_baseline_rule("soft_f1=2")


# --------------------------------------------------------------------------- as a user runs it
GATES = ("--sqleval-baseline=deployed.json", "--sqleval-max-regressed=7",
         "--sqleval-fail-under-baseline=execution_accuracy", "--sqleval-fail-under-baseline=overall:execution_accuracy",
         "--sqleval-fail-under-baseline=overall:soft_f1=0.5", "--sqleval-threshold=overall:execution_accuracy=0.8")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return make_deployed_project(pytester)


def test_baseline_comparison_and_gates(project: pytest.Pytester):
    result, report = run_report(project, "candidate.json", *GATES)
    comparison = report["baseline"]
    alpha = next(s for s in comparison["suites"] if s["name"] == "alpha")
    assert alpha["pairs"]["fixed"] == ["a04"]
    assert alpha["pairs"]["regressed"] == REGRESSED
    assert comparison["overall"]["pairs"]["regressed"] == [f"alpha::{c}" for c in REGRESSED] + ["beta::b04"]
    overall_ex = comparison["overall"]["metrics"]["execution_accuracy"]
    assert overall_ex["p_value"] == pytest.approx(2 * (1 + 9) / 2**9)  # 1 fixed, 8 regressed
    assert overall_ex["delta"] == pytest.approx((21 - 28) / 32)
    assert alpha["metrics"]["execution_accuracy"]["p_value"] == pytest.approx(2 * (1 + 8) / 2**8)
    gates = {g["name"]: g for g in report["gates"]}
    assert gates["overall::max_regressed"]["passed"] is False
    assert gates["overall::max_regressed"]["value"] == 8
    assert gates["alpha::execution_accuracy vs baseline"]["passed"] is True  # dropped, p = 0.070: not significant
    assert gates["overall::execution_accuracy vs baseline"]["passed"] is False  # dropped, p = 0.039
    assert gates["overall::soft_f1 vs baseline"]["passed"] is True  # within the tolerance 0.5
    assert gates["overall::execution_accuracy"]["passed"] is False  # the threshold: 21/32 < 0.8
    assert [g["kind"] for g in report["gates"]].count("threshold") == 1
    assert result.ret == 1
    result.stdout.fnmatch_lines(literal_brackets(
        "FAIL 8 regressed case(s) (passed in the baseline, missed now) > 7 allowed: alpha::a10, *",
        "suite alpha: PASS execution_accuracy dropped 0.3000 vs baseline (95% CI [-0.*, *], p=0.070, 20 pairs): "
        "not significant at alpha 0.05",
        "FAIL overall:execution_accuracy dropped 0.2188 vs baseline (95% CI [-0.*, -0.*], p=0.039, 32 pairs): "
        "more than the tolerance 0 and significant at alpha 0.05",
        "PASS overall:soft_f1 dropped * vs baseline *: within the tolerance 0.5",
    ))
    assert "Traceback" not in result.stdout.str()


def test_gates_identical_serial_and_xdist(project: pytest.Pytester):
    serial_result, serial = run_report(project, "serial.json", *GATES)
    parallel_result, parallel = run_report(project, "parallel.json", *GATES, "-n", "2")
    assert serial_result.ret == parallel_result.ret == 1
    parallel_result.stdout.fnmatch_lines(["FAIL 8 regressed case(s) * > 7 allowed: *",
                                          "FAIL overall:execution_accuracy dropped 0.2188 vs baseline *"])
    for key in ("suites", "overall", "baseline", "gates"):
        assert json.dumps(serial[key], sort_keys=True) == json.dumps(parallel[key], sort_keys=True), key


def test_gates_pass_and_exit_zero(project: pytest.Pytester):
    result, report = run_report(project, "candidate.json", "--sqleval-baseline=deployed.json",
                                "--sqleval-max-regressed=8", "--sqleval-fail-under-baseline=execution_accuracy",
                                "--sqleval-alpha=0.01")
    assert result.ret == 0
    assert all(g["passed"] for g in report["gates"])
    result.stdout.fnmatch_lines(["PASS 8 regressed case(s) * <= 8 allowed",
                                 "*PASS execution_accuracy dropped 0.3000 vs baseline *: not significant at alpha 0.01"])


def test_same_model_has_nothing_regressed(project: pytest.Pytester):
    result, report = run_report(project, "again.json", "--sqleval-baseline=deployed.json", "--sqleval-max-regressed=0",
                                predictions="deployed.jsonl")
    assert result.ret == 0
    assert report["baseline"]["overall"]["counts"]["regressed"] == 0
    assert report["baseline"]["warnings"] == []
    ex = report["baseline"]["overall"]["metrics"]["execution_accuracy"]
    assert (ex["delta"], ex["p_value"], ex["ci"]) == (0.0, 1.0, [0.0, 0.0])


def test_warns_when_a_suite_or_database_changed(project: pytest.Pytester):
    suite = project.path / "alpha.sqleval.yaml"
    suite.write_text(suite.read_text().replace("suite: alpha", "suite: alpha\ndescription: edited"))
    result, report = run_report(project, "candidate.json", "--sqleval-baseline=deployed.json")
    warnings = report["baseline"]["warnings"]
    assert len(warnings) == 1 and warnings[0].startswith("alpha.sqleval.yaml changed since the baseline (sha256 ")
    result.stdout.fnmatch_lines(["  warning: alpha.sqleval.yaml changed since the baseline*"])


def test_usage_errors_are_clear(project: pytest.Pytester):
    result, _ = run_report(project, "x.json", "--sqleval-max-regressed=1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--sqleval-max-regressed and --sqleval-fail-under-baseline compare with a baseline: "
                                 "pass --sqleval-baseline PATH*"])
    (project.path / "broken.json").write_text("{not json")
    result, _ = run_report(project, "x.json", "--sqleval-baseline=broken.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--sqleval-baseline broken.json: the baseline is not valid JSON*line 1, column 2*",
                                 "*fix: pass the JSON file itself*"])
    result, _ = run_report(project, "x.json", "--sqleval-baseline=deployed.json", "--sqleval-fail-under-baseline=vacuous")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot compare 'vacuous' with the baseline case by case*"])
    result, _ = run_report(project, "x.json", "--sqleval-baseline=deployed.json", "--sqleval-alpha=5")
    result.stderr.fnmatch_lines(["*alpha must be between 0 and 1 (e.g. 0.05), not 5*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_intervals_and_overall_in_the_report(project: pytest.Pytester):
    result, report = run_report(project, "candidate.json", "--sqleval-threshold=overall:execution_accuracy=0.8")
    alpha = next(s for s in report["suites"] if s["name"] == "alpha")
    # alpha: 11 of 20 execution matches -> Wilson(11, 20)
    assert alpha["metrics"]["execution_accuracy"] == 11 / 20
    assert alpha["intervals"]["execution_accuracy"] == list(wilson(11, 20))
    lo, hi = alpha["intervals"]["soft_f1"]
    assert lo < alpha["metrics"]["soft_f1"] < hi
    overall = report["overall"]
    assert overall["cases"] == 32 and overall["metrics"]["execution_accuracy"] == 21 / 32
    assert overall["intervals"]["execution_accuracy"] == list(wilson(21, 32))
    assert overall["metrics"]["interaction_match"] == 1.0
    gate = next(g for g in report["gates"] if g["suite"] == "overall")
    assert (gate["kind"], gate["metric"], gate["limit"], gate["passed"]) == ("threshold", "execution_accuracy", 0.8, False)
    assert result.ret == 1
    result.stdout.fnmatch_lines(literal_brackets(
        "  execution_accuracy * 0.5500 *[0.3421, 0.7418]*",
        "overall (2 suites, 32 scored cases, micro-average): *execution_accuracy 0.6562 [0.48, 0.80]*",
        "FAIL overall:execution_accuracy 0.6562 < 0.80",
    ))


def test_run_metadata(pytester: pytest.Pytester):
    import hashlib
    import shutil
    import subprocess

    make_project(pytester)
    _, report = run_report(pytester, "meta.json", "--sqleval-threshold=overall:soft_f1=0.5")
    run = report["run"]
    assert run["git"] is None  # a temporary directory outside any repository
    for key in ("python", "pytest", "sqlglot", "sqlalchemy"):
        assert run["versions"][key]
    digest = lambda name: hashlib.sha256((pytester.path / name).read_bytes()).hexdigest()  # noqa: E731
    assert run["files"] == {name: digest(name) for name in
                            ("alpha.sqleval.yaml", "beta.sqleval.yaml", "candidate.jsonl", "shop.sqlite")}
    assert run["options"]["timeout"] is None and run["options"]["predictions"] == "candidate.jsonl"
    assert run["options"]["thresholds"] == ["overall:soft_f1=0.5"]
    assert run["options"]["gates"] == {"baseline": None, "max_regressed": None, "fail_under_baseline": [], "alpha": 0.05}
    assert run["shard"] is None and run["started"] <= run["finished"] and run["duration_s"] >= 0
    assert run["started"].endswith("Z") and run["plugin_version"]
    if shutil.which("git") is None:
        return
    git = lambda *args: subprocess.run(["git", "-C", str(pytester.path), *args], capture_output=True,  # noqa: E731
                                       text=True, check=True).stdout.strip()
    git("init", "-q")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "add", "alpha.sqleval.yaml")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "suite")
    _, report = run_report(pytester, "meta2.json")
    assert report["run"]["git"] == {"commit": git("rev-parse", "HEAD"), "dirty": True}  # untracked files


def test_ini_options(project: pytest.Pytester):
    project.makeini("""
        [pytest]
        sqleval_baseline = deployed.json
        sqleval_max_regressed = 7
        sqleval_fail_under_baseline =
            overall:execution_accuracy
        sqleval_alpha = 0.01
        sqleval_thresholds = overall:execution_accuracy=0.5
    """)
    result, report = run_report(project, "candidate.json")
    gates = {g["name"]: g for g in report["gates"]}
    assert gates["overall::max_regressed"]["passed"] is False  # 8 > 7
    assert gates["overall::execution_accuracy vs baseline"]["passed"] is True  # p = 0.039 is not < 0.01
    assert gates["overall::execution_accuracy"]["passed"] is True  # 0.6562 >= 0.5
    assert report["run"]["options"]["gates"] == {"baseline": "deployed.json", "max_regressed": 7,
                                                 "fail_under_baseline": ["overall:execution_accuracy=0"], "alpha": 0.01}
    assert result.ret == 1
    result.stdout.fnmatch_lines(["PASS overall:execution_accuracy dropped 0.2188 vs baseline *: not significant at alpha 0.01"])


def test_equal_means_whose_cases_moved_are_shown_not_called_unchanged():
    """Ties: soft_f1 1 -> 0.5 on one case and 0.5 -> 1 on another keeps the mean, but the cases changed: the terminal
    shows the metric with its interval and p-value instead of listing it as unchanged."""
    from pytest_sqleval.report.terminal import _write_comparison

    class Lines:
        def __init__(self) -> None:
            self.lines: list[str] = []

        def write_line(self, line: str, **markup) -> None:
            self.lines.append(line)

    baseline = [case("a", "passed", f1=1.0), case("b", "passed", f1=0.5), case("c", "passed", f1=0.75)]
    current = [case("a", "passed", f1=0.5), case("b", "passed", f1=1.0), case("c", "passed", f1=0.75)]
    tr = Lines()
    _write_comparison(tr, {"name": "s", **compare_cases(current, baseline)})
    assert any(line.lstrip().startswith("soft_f1") and "delta +0.0000" in line and "sign_flip, 3 pairs" in line
               for line in tr.lines), tr.lines
    assert "    unchanged over 3 pairs: valid_syntax, execution_accuracy, pass_rate" in tr.lines
    tr = Lines()  # the same scores on both sides: every metric is unchanged
    _write_comparison(tr, {"name": "s", **compare_cases(baseline, baseline)})
    assert "    unchanged over 3 pairs: valid_syntax, execution_accuracy, soft_f1, pass_rate" in tr.lines
