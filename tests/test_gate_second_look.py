"""Issue 10 (the deploy gate), a second look with new inputs: statistics recomputed independently from the
documented method, metrics where lower is better, errored and one-sided cases, serial = -n 2, the exit status
contract and the CI outputs."""

from __future__ import annotations

import itertools
import json
import math
import random

import pytest

from conftest import make_sqlite
from pytest_sqleval.cli import main

COLS = {"right": "id, hours, status", "two": "id, hours", "one": "id", "star": "*"}


def gold(i: int) -> str:
    return f"SELECT id, hours, status FROM tickets WHERE id <= {i % 6 + 1} ORDER BY id"


def prediction(i: int, kind: str) -> str:
    if kind == "bad":
        return "SELECT nope FROM tickets"
    return f"SELECT {COLS[kind]} FROM tickets WHERE id <= {i % 6 + 1} ORDER BY id"


def project(pytester: pytest.Pytester, n: int, models: dict[str, dict[int, str]], suite: str = "s") -> pytest.Pytester:
    """One suite of n cases `q0..`; one predictions file per model: {case number: kind}, default right."""
    make_sqlite(pytester.path / "shop.sqlite")
    cases = "".join(f"  - {{id: q{i}, gold: '{gold(i)}'}}\n" for i in range(n))
    (pytester.path / f"{suite}.sqleval.yaml").write_text(f"suite: {suite}\ndatabase: shop.sqlite\ncases:\n{cases}",
                                                         encoding="utf-8")
    for name, kinds in models.items():
        (pytester.path / f"{name}.jsonl").write_text("".join(
            json.dumps({"id": f"q{i}", "sql": prediction(i, kinds.get(i, "right"))}) + "\n" for i in range(n)),
            encoding="utf-8")
    return pytester


def run(pytester: pytest.Pytester, model: str, report: str, *args: str):
    path = pytester.path / report
    if path.exists():
        path.unlink()
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    result = runner("--sqleval", f"--sqleval-predictions={model}.jsonl", f"--sqleval-json={path}",
                    "-p", "no:cacheprovider", *args)
    return result, (json.loads(path.read_text()) if path.exists() else None)


def canonical(block) -> str:
    return json.dumps(block, sort_keys=True)


# --------------------------------------------------------------------------- direction of a metric
STAR_METRIC = """
def pytest_sqleval_register_metrics(registry):
    registry.register("star", kind="rate", direction="lower", population="scored", label="SELECT * answers")

def pytest_sqleval_score_case(prediction, record):
    record["star"] = "*" in (prediction or "")
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_lower_is_better_metric_fails_the_baseline_gate_when_it_rises(pytester, workers):
    """A user's rate registered with direction="lower": 8 pairs, the share of `SELECT *` answers goes 0 -> 1
    (McNemar p = 2/2^8). That is the metric getting worse: the gate fails ("rose"); the other way round it is an
    improvement and passes. Before the fix the gate read every metric as higher-is-better: it failed the
    improvement as a "drop" and passed the regression."""
    pytester.makeconftest(STAR_METRIC)
    project(pytester, 8, {"plain": {}, "stars": {i: "star" for i in range(8)}})
    assert run(pytester, "plain", "plain.json")[0].ret == 0
    assert run(pytester, "stars", "stars.json")[0].ret == 0
    gate = ("--sqleval-fail-under-baseline=star=0.2", "--sqleval-fail-under-baseline=overall:star", *workers)
    worse, report = run(pytester, "stars", "worse.json", "--sqleval-baseline=plain.json", *gate)
    stats = report["baseline"]["overall"]["metrics"]["star"]
    assert (stats["delta"], stats["p_value"]) == (1.0, 2 / 2**8)
    assert stats["discordant"] == {"better": 0, "worse": 8}
    assert [(g["passed"], g["value"], g["limit"]) for g in report["gates"]] == [(False, 1.0, 0.2), (False, 1.0, 0.0)]
    assert worse.ret == 1
    worse.stdout.fnmatch_lines([
        "suite s: FAIL star rose 1.0000 vs baseline (95% CI [[]0.26, 1.00[]], p=0.008, 8 pairs): "
        "more than the tolerance 0.2 and significant at alpha 0.05",
        "FAIL overall:star rose 1.0000 vs baseline *"])
    better, report = run(pytester, "plain", "better.json", "--sqleval-baseline=stars.json", *gate)
    assert report["baseline"]["overall"]["metrics"]["star"]["discordant"] == {"better": 8, "worse": 0}
    assert [g["passed"] for g in report["gates"]] == [True, True]
    assert report["gates"][0]["message"].startswith("PASS star -1.0000 vs baseline")
    assert better.ret == 0, better.stdout.str()
    # `sqleval gate` reads the metric's direction from the report and decides the same way
    assert main(["gate", str(pytester.path / "worse.json")]) == 1
    assert main(["gate", str(pytester.path / "worse.json"), "--fail-under-baseline", "star=1"]) == 0
    assert main(["gate", str(pytester.path / "better.json")]) == 0


# --------------------------------------------------------------------------- the statistics, recomputed by hand
#: 16 cases of 3 columns. The baseline misses q3 (2 columns) and q9 (1 column); the candidate fixes q3, gets q9 half
#: right (2 columns), and regresses q1, q2, q4, q5, q7 (fewer columns) and q6 (an unknown column).
BASE_KINDS = {3: "two", 9: "one"}
CAND_KINDS = {1: "two", 2: "one", 4: "two", 5: "one", 6: "bad", 7: "two", 9: "two"}
SEED, RESAMPLES = 20261201, 1000  # the documented fixed seed and number of resamples


def type7(values: list[float], q: float) -> float:
    position = q * (len(values) - 1)
    low = int(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def bootstrap_by_hand(diffs: list[float]) -> list[float]:
    """Percentile bootstrap of the mean difference: random.Random(seed).choices, type-7 quantiles."""
    rng = random.Random(SEED)
    means = sorted(math.fsum(rng.choices(diffs, k=len(diffs))) / len(diffs) for _ in range(RESAMPLES))
    return [type7(means, 0.025), type7(means, 0.975)]


def sign_flip_by_hand(diffs: list[float]) -> float:
    """Exact two-sided sign-flip test: the share of the 2^m sign patterns of the m non-zero differences whose
    |sum| reaches the observed one."""
    nonzero = [d for d in diffs if d != 0]
    observed = abs(sum(nonzero))
    hits = sum(abs(sum(s * d for s, d in zip(signs, nonzero))) >= observed - 1e-12
               for signs in itertools.product((1, -1), repeat=len(nonzero)))
    return hits / 2 ** len(nonzero)


def paired(report: dict, baseline: dict, key: str) -> list[float]:
    before = {c["id"]: c[key] for c in baseline["cases"]}
    return [c[key] - before[c["id"]] for c in report["cases"]]


def test_soft_f1_interval_and_p_value_match_an_independent_computation_serial_and_xdist(pytester):
    """soft_f1 and bird_soft_f1: 8 non-zero paired differences (6 worse, 2 better), so the sign-flip test is exact
    (2^8 patterns) and the bootstrap interval is the seeded percentile one. Execution accuracy: 6 worse, 1 better,
    McNemar p = 2 (1 + 7) / 2^7 = 0.125, its interval (the Clopper-Pearson bounds of 1/7, mapped to 7/16 (2 pi - 1))
    holds 0. All of it identical under -n 2."""
    project(pytester, 16, {"base": BASE_KINDS, "cand": CAND_KINDS})
    _, base = run(pytester, "base", "base.json")
    gates = ("--sqleval-baseline=base.json", "--sqleval-fail-under-baseline=soft_f1",
             "--sqleval-fail-under-baseline=overall:execution_accuracy")
    result, report = run(pytester, "cand", "cand.json", *gates)
    assert result.ret == 0
    comparison = report["baseline"]["suites"][0]
    assert comparison["pairs"]["regressed"] == ["q1", "q2", "q4", "q5", "q6", "q7"]
    assert (comparison["pairs"]["fixed"], comparison["pairs"]["still_missed"]) == (["q3"], ["q9"])
    for metric in ("soft_f1", "bird_soft_f1"):
        diffs = paired(report, base, metric)
        assert sum(d != 0 for d in diffs) == 8
        stats = comparison["metrics"][metric]
        assert stats["delta"] == pytest.approx(sum(diffs) / 16, abs=1e-15)
        assert stats["p_value"] == sign_flip_by_hand(diffs)
        assert stats["ci"] == pytest.approx(bootstrap_by_hand(diffs), abs=1e-12)
    assert comparison["metrics"]["soft_f1"]["p_value"] == 34 / 256  # 2 x 17 patterns at least as extreme
    ex = comparison["metrics"]["execution_accuracy"]
    assert (ex["p_value"], ex["delta"], ex["discordant"]) == (0.125, -5 / 16, {"better": 1, "worse": 6})
    # Clopper-Pearson of 1 success in 7: lower solves P(X >= 1) = (1 - (1 - p)^7) = 0.025, upper P(X <= 1) = 0.025
    cp_low = 1 - 0.975 ** (1 / 7)
    assert ex["ci"][0] == pytest.approx(7 / 16 * (2 * cp_low - 1), abs=1e-9)
    assert ex["ci"][0] < 0 < ex["ci"][1]
    gate = {g["name"]: g for g in report["gates"]}
    assert gate["s::soft_f1 vs baseline"]["message"] == (
        "PASS soft_f1 dropped 0.1282 vs baseline (95% CI [-0.28, 0.00], p=0.133, 16 pairs): "
        "not significant at alpha 0.05")
    # alpha 0.2, serial and -n 2: the same numbers; both p-values (0.133, 0.125) are now significant, both gates fail
    for workers, alpha, ret in (([], "0.2", 1), (["-n", "2"], "0.2", 1)):
        again, other = run(pytester, "cand", "again.json", *gates, f"--sqleval-alpha={alpha}", *workers)
        assert again.ret == ret, again.stdout.str()
        assert canonical(other["baseline"]) == canonical(report["baseline"])
        assert [g["passed"] for g in other["gates"]] == [False, False]


def test_a_monte_carlo_sign_flip_p_value_is_seeded_and_close_to_the_exact_one():
    """More than 12 non-zero differences: 1000 seeded random flips, (1 + hits) / 1001. Against the exact p of the
    same 16 differences (all 65,536 sign patterns): within four standard errors, and the same every time."""
    from pytest_sqleval.baseline import paired_statistics

    steps = [-0.5, -0.4, -0.3, 0.2, -0.6, 0.25, -0.35, -0.45, -0.1, 0.15, -0.3, 0.1, 0.05, -0.4, 0.2, -0.1]
    pairs = [(1.0 + x, 1.0) if x < 0 else (0.5 + x, 0.5) for x in steps]
    diffs = [c - b for c, b in pairs]
    assert len(diffs) > 12 and all(diffs)
    exact = sign_flip_by_hand(diffs)
    assert exact == pytest.approx(0.0480, abs=1e-4)
    stats = paired_statistics("mean", pairs)
    assert stats["test"] == "sign_flip"
    p = stats["p_value"]
    assert p == paired_statistics("mean", list(pairs))["p_value"]
    assert math.isclose(p * 1001, round(p * 1001))  # (1 + hits) / 1001
    assert abs(p - exact) <= 4 * math.sqrt(exact * (1 - exact) / 1000) + 1 / 1001, (p, exact)
    lo, hi = bootstrap_by_hand(diffs)
    # the bootstrap interval, widened to hold 0 when the reported p is not significant at 0.05 (qa7gate)
    expected = [lo, hi] if p < 0.05 else [min(lo, 0.0), max(hi, 0.0)]
    assert stats["ci"] == pytest.approx(expected, abs=1e-12)


# --------------------------------------------------------------------------- options from the ini file
def test_the_ini_baseline_is_found_from_a_subfolder_as_the_ini_predictions_are(pytester, monkeypatch):
    """`pytest` run from a subfolder: the ini's sqleval_predictions is read relative to the ini file's folder, and so
    is its sqleval_baseline (before the fix: 'cannot read the baseline', relative to the working directory)."""
    project(pytester, 16, {"base": BASE_KINDS, "cand": CAND_KINDS})
    assert run(pytester, "base", "base.json")[0].ret == 0
    pytester.makeini("[pytest]\nsqleval_baseline = base.json\nsqleval_predictions = cand.jsonl\n"
                     "sqleval_max_regressed = 5\n")
    (pytester.path / "sub").mkdir()
    monkeypatch.chdir(pytester.path / "sub")
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", str(pytester.path / "s.sqleval.yaml"))
    assert result.ret == 1, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["FAIL 6 regressed case(s) (passed in the baseline, missed now) > 5 allowed: s::q1, *",
                                 "*9 passed, 7 missed, 1 gate failed in *"])
    pytester.makeini("[pytest]\nsqleval_baseline = gone.json\n")
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", str(pytester.path / "s.sqleval.yaml"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    gone = pytester.path / "gone.json"
    result.stderr.fnmatch_lines([f"*ini option sqleval_baseline: {gone}: cannot read the baseline*"])


# --------------------------------------------------------------------------- where CI shows the gate
def gate_testcases(path) -> dict[str, tuple[str | None, dict]]:
    """The JUnit testcases of classname sqleval.gates: name -> (failure message or None, sqleval_gate property)."""
    import xml.etree.ElementTree as ET

    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.get("classname") != "sqleval.gates":
            continue
        failure = case.find("failure")
        prop = next(p for p in case.iter("property") if p.get("name") == "sqleval_gate")
        cases[case.get("name")] = (None if failure is None else failure.get("message"), json.loads(prop.get("value")))
    return cases


def test_baseline_gates_in_the_step_summary_and_junit_serial_and_xdist(pytester):
    """A run against a baseline: the Markdown heads with the failed gate, lists both gate verdicts, the deltas with
    their p-values and the regressed cases with their reasons; JUnit has one testcase per gate, failing when it
    fails. Byte-identical Markdown and the same gate testcases under -n 2, and from `sqleval report` on the JSON."""
    from pytest_sqleval.report.markdown import render_markdown

    project(pytester, 16, {"base": BASE_KINDS, "cand": CAND_KINDS})
    assert run(pytester, "base", "base.json")[0].ret == 0
    gates = ("--sqleval-baseline=base.json", "--sqleval-max-regressed=3", "--sqleval-fail-under-baseline=soft_f1")
    texts, junits = [], []
    for workers in ([], ["-n", "2"]):
        md, xml = pytester.path / f"summary{len(workers)}.md", pytester.path / f"junit{len(workers)}.xml"
        result, report = run(pytester, "cand", f"cand{len(workers)}.json", *gates, f"--sqleval-markdown={md}",
                             f"--junitxml={xml}", *workers)
        assert result.ret == 1
        result.stdout.fnmatch_lines(["*9 passed, 7 missed, 1 gate failed in *"])
        texts.append(md.read_text(encoding="utf-8"))
        junits.append(gate_testcases(xml))
        assert render_markdown(report) == texts[-1]
    assert texts[0] == texts[1] and junits[0] == junits[1]
    text = texts[0]
    assert text.startswith("## ❌ sqleval: 1 of 2 gates failed\n")
    assert "compared with baseline <code>base.json</code> (6 regressed, 1 fixed)" in text
    assert ("| ❌ | overall::max_regressed | 6 | 3 | FAIL 6 regressed case(s) (passed in the baseline, missed now) "
            "&gt; 3 allowed: s::q1, s::q2, s::q4, s::q5, s::q6, s::q7 |") in text
    assert ("| ✅ | s::soft_f1 vs baseline | -0.1282 | 0.0000 | PASS soft_f1 dropped 0.1282 vs baseline "
            "(95% CI \\[-0.28, 0.00\\], p=0.133, 16 pairs): not significant at alpha 0.05 |") in text  # not -0.0000
    # (brackets escaped: a Markdown cell never turns data into a link)
    assert ("| execution accuracy | 0.5625 | [0.3318, 0.7690] | 0.5556 | 0.8750 | -0.3125 ▼ | [-0.4343, 0.0689] "
            "| 0.1250 |") in text
    regressed = text[text.index("<b>Regressed cases (6)</b>"):]
    regressed = regressed[:regressed.index("</details>")]
    assert "- <code>q6</code>: syntax: no such column: nope" in regressed
    assert "- <code>q2</code>: column_count: gold has 3 columns, the prediction 1" in regressed
    assert "q3" not in regressed and "q9" not in regressed
    failure, gate = junits[0]["overall::max_regressed"]
    assert failure.startswith("FAIL 6 regressed case(s)") and (gate["value"], gate["limit"]) == (6, 3)
    failure, gate = junits[0]["s::soft_f1 vs baseline"]
    assert failure is None and gate["p_value"] == 34 / 256 and gate["limit"] == 0.0


# --------------------------------------------------------------------------- errored, new and removed cases
def test_errored_new_and_removed_cases_against_the_baseline_serial_and_xdist(pytester):
    """Since the baseline the suite changed: q8's gold now fails (a suite error), q15 is gone and q16 is new. q8 is
    neither regressed nor compared; the pairs are the 14 other cases (the 6 regressions and the fix stay). The run
    exits 1 for the errored case although every gate passes, `sqleval gate` too; the step summary names q8."""
    project(pytester, 17, {"base": BASE_KINDS, "cand": CAND_KINDS})
    suite = pytester.path / "s.sqleval.yaml"
    lines = suite.read_text().splitlines()
    base_suite = "\n".join(lines[:-1]) + "\n"  # q0..q15
    suite.write_text(base_suite)
    for name, drop in (("base", '"q16"'), ("cand", '"q15"')):  # each predictions file has its own run's cases
        path = pytester.path / f"{name}.jsonl"
        path.write_text("".join(line for line in path.read_text().splitlines(keepends=True) if drop not in line))
    assert run(pytester, "base", "base.json")[0].ret == 0
    cand = [line for line in lines if "id: q15," not in line]
    cand = [line.replace(gold(8), "SELECT nope FROM tickets") if "id: q8," in line else line for line in cand]
    suite.write_text("\n".join(cand) + "\n")
    gates = ("--sqleval-baseline=base.json", "--sqleval-max-regressed=6",
             "--sqleval-fail-under-baseline=overall:execution_accuracy", "--sqleval-markdown=summary.md")
    reports = []
    for workers in ([], ["-n", "2"]):
        result, report = run(pytester, "cand", "cand.json", *gates, *workers)
        assert result.ret == 1, result.stdout.str()
        result.stdout.fnmatch_lines([
            "  warning: s.sqleval.yaml changed since the baseline *",
            "  s: 1 fixed, 6 regressed, 1 still missed, 6 still passed, 1 new, 1 removed, "
            "1 with a suite error on one side (not compared)",
            "PASS 6 regressed case(s) (passed in the baseline, missed now) <= 6 allowed",
            "*1 error*"])
        reports.append(report)
        comparison = report["baseline"]["suites"][0]
        assert comparison["pairs"]["new"] == ["q16"] and comparison["pairs"]["removed"] == ["q15"]
        assert comparison["pairs_with_errors"] == ["q8"]
        assert "q8" not in comparison["pairs"]["still_passed"] + comparison["pairs"]["regressed"]
        ex = comparison["metrics"]["execution_accuracy"]
        assert (ex["n_pairs"], ex["current"], ex["baseline"]) == (14, 7 / 14, 12 / 14)
        assert all(g["passed"] for g in report["gates"])
        assert ("Against the baseline: 6 regressed, 1 fixed, 1 still missed, 6 still passed, 1 new, 1 removed, "
                "1 with a suite error on one side (not compared: <code>q8</code>).") in \
            (pytester.path / "summary.md").read_text(encoding="utf-8")
    assert canonical(reports[0]["baseline"]) == canonical(reports[1]["baseline"])
    assert canonical(reports[0]["gates"]) == canonical(reports[1]["gates"])
    assert main(["gate", str(pytester.path / "cand.json")]) == 1  # the errored case, as pytest


def test_a_suite_cannot_be_named_overall(pytester):
    """`overall` names the figure across suites: a suite file overall.sqleval.yaml (the default name is the stem) could
    not be addressed by `--sqleval-fail-under-baseline overall:METRIC`, and its threshold gates took the overall
    gates' names. Before the fix it ran, and `overall:` gates silently meant something else."""
    make_sqlite(pytester.path / "shop.sqlite")
    (pytester.path / "overall.sqleval.yaml").write_text(
        "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT id FROM shops, predicted: SELECT id FROM shops}\n")
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "*overall.sqleval.yaml:1: the suite name 'overall' is reserved for the figure across all suites*",
        "  fix: give the suite another name with `suite: <name>` (the default name is the file's stem)"])
    text = (pytester.path / "overall.sqleval.yaml").read_text()
    (pytester.path / "overall.sqleval.yaml").write_text("suite: totals\n" + text)
    assert pytester.runpytest("--sqleval", "-p", "no:cacheprovider").ret == 0


def test_a_report_whose_recorded_gates_cannot_be_read_is_bad_input_for_merge_and_gate(pytester, capsys):
    """A hand-edited or truncated report: a recorded baseline rule naming no known metric, an overall threshold
    without its bound. `sqleval merge` and `sqleval gate` exit 2 naming the file (before: a traceback)."""
    project(pytester, 6, {"cand": {1: "two"}})
    _, report = run(pytester, "cand", "good.json", "--sqleval-threshold=overall:execution_accuracy=0.5")
    broken = json.loads(json.dumps(report))
    broken["run"]["options"]["gates"]["fail_under_baseline"] = ["accuracy_of_vibes"]
    (pytester.path / "rule.json").write_text(json.dumps(broken))
    broken = json.loads(json.dumps(report))
    del broken["overall"]["thresholds"][0]["min"]
    (pytester.path / "bound.json").write_text(json.dumps(broken))
    for name, message in (("rule.json", "cannot compare 'accuracy_of_vibes' with the baseline case by case"),
                          ("bound.json",
                           'a threshold is not {metric, min or max}: {"metric": "overall:execution_accuracy"')):
        path = str(pytester.path / name)
        for argv in (["gate", path], ["merge", path, "-o", str(pytester.path / "m.json")]):
            assert main(argv) == 2, argv
            err = capsys.readouterr().err
            assert f"sqleval {argv[0]}: {path}: a gate recorded in the report cannot be read: {message}" in err, err
            assert "fix: pass the report as pytest --sqleval-json wrote it" in err
    assert main(["gate", str(pytester.path / "good.json")]) == 0


# --------------------------------------------------------------------------- shards
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_shards_failed_gate_does_not_fail_its_junit_or_its_final_line(pytester, workers):
    """A shard's gates judge part of the run and never fail its job (exit 0). Its JUnit file agreed with that only in
    the exit status: the gate testcase was a <failure> (failures="1", which CI junit reporters fail the job on) and
    the final line said `1 gate failed` in red. Now the gate is <skipped> with the verdict, the line does not count
    it; the same run unsharded still fails all three ways."""
    import xml.etree.ElementTree as ET

    project(pytester, 16, {"base": BASE_KINDS, "cand": CAND_KINDS})
    assert run(pytester, "base", "base.json")[0].ret == 0
    gates = ("--sqleval-baseline=base.json", "--sqleval-max-regressed=0")
    shard, _ = run(pytester, "cand", "shard.json", *gates, "--sqleval-shard=1/2", "--junitxml=shard.xml", *workers)
    assert shard.ret == 0
    shard.stdout.fnmatch_lines(["FAIL * regressed case(s) (passed in the baseline, missed now) > 0 allowed: *",
                                "sqleval: shard 1/2: the gates above are this shard's alone *"])
    assert "gate failed" not in shard.stdout.lines[-1]
    suite = ET.parse(pytester.path / "shard.xml").getroot().find("testsuite")
    assert suite.get("failures") == "0"
    (case,) = [c for c in suite.iter("testcase") if c.get("classname") == "sqleval.gates"]
    skipped = case.find("skipped")
    assert case.find("failure") is None and skipped.get("type") == "sqleval.gate"
    assert skipped.get("message").startswith("shard 1/2: FAIL ")
    assert skipped.get("message").endswith("(decided by `sqleval gate` on the merged report)")
    if workers:
        return
    whole, _ = run(pytester, "cand", "whole.json", *gates, "--junitxml=whole.xml")
    assert whole.ret == 1 and "1 gate failed" in whole.stdout.lines[-1]
    suite = ET.parse(pytester.path / "whole.xml").getroot().find("testsuite")
    assert suite.get("failures") == "1"


# --------------------------------------------------------------------------- run metadata
def test_a_different_memory_cap_is_recorded_and_warned_about_like_the_timeout(pytester):
    """--sqleval-max-memory turns a query over the cap into a miss (kind `memory`), as --sqleval-timeout does with a
    slow one: it is a score option, recorded in run.options and compared with the baseline's."""
    project(pytester, 6, {"cand": {}})
    _, base = run(pytester, "cand", "base.json")
    assert base["run"]["options"]["max_memory"] is None
    _, report = run(pytester, "cand", "capped.json", "--sqleval-baseline=base.json", "--sqleval-max-memory=768M",
                    "--sqleval-timeout=7")
    assert report["run"]["options"]["max_memory"] == 768 * 2**20
    assert report["baseline"]["warnings"] == [
        "option timeout differs from the baseline: None then, 7.0 now",
        f"option max_memory differs from the baseline: None then, {768 * 2**20} now"]


def test_a_baseline_rule_given_twice_keeps_the_last_as_thresholds_do(pytester, capsys):
    """`addopts = --sqleval-fail-under-baseline=execution_accuracy=0.5` and a CI step adding
    `--sqleval-fail-under-baseline=execution_accuracy`: one gate, the last one (before: two gates of one name, one
    passing and one failing, and one JUnit testcase carrying both). The same in `sqleval gate`."""
    import xml.etree.ElementTree as ET

    project(pytester, 16, {"base": BASE_KINDS, "cand": CAND_KINDS})
    assert run(pytester, "base", "base.json")[0].ret == 0
    rules = ("--sqleval-fail-under-baseline=execution_accuracy=0.5", "--sqleval-fail-under-baseline=overall:soft_f1",
             "--sqleval-fail-under-baseline=execution_accuracy")
    result, report = run(pytester, "cand", "cand.json", "--sqleval-baseline=base.json", "--sqleval-alpha=0.2",
                         "--junitxml=junit.xml", *rules)
    assert [g["name"] for g in report["gates"]] == ["overall::soft_f1 vs baseline", "s::execution_accuracy vs baseline"]
    assert report["run"]["options"]["gates"]["fail_under_baseline"] == ["overall:soft_f1=0", "execution_accuracy=0"]
    assert [g["passed"] for g in report["gates"]] == [False, False]  # p = 0.133 and 0.125 < 0.2
    assert result.ret == 1
    names = [c.get("name") for c in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
             if c.get("classname") == "sqleval.gates"]
    assert names == ["overall::soft_f1 vs baseline", "s::execution_accuracy vs baseline"]
    path = str(pytester.path / "cand.json")
    capsys.readouterr()
    assert main(["gate", path, "--fail-under-baseline", "execution_accuracy",
                 "--fail-under-baseline", "execution_accuracy=0.4"]) == 0
    out = capsys.readouterr().out
    assert out.count("execution_accuracy dropped") == 1 and "sqleval: all 1 gate(s) passed" in out
