"""Issue 10 (the deploy gate), a third look: the significance tests against exact hand computations (McNemar,
Clopper-Pearson, sign flip, Wilson) and their edge cases (all ties, one pair, no discordant pair), baselines that
are missing, corrupt, old or of another suite set, cases added / removed / renamed, shards run separately (-n 2)
and merged against one unsharded run, `sqleval gate`'s exit status against pytest's, and the step summary, HTML
(in Debian's headless chromium) and JUnit of a run compared with a baseline."""

from __future__ import annotations

import json
import math
import subprocess
import xml.etree.ElementTree as ET
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest

from conftest import chromium_executable, make_sqlite
from pytest_sqleval.baseline import paired_statistics
from pytest_sqleval.cli import main
from pytest_sqleval.stats import clopper_pearson, mcnemar_exact, paired_share_interval, sign_flip, wilson
from test_gate_second_look import canonical, run

WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])


# --------------------------------------------------------------------------- exact computations by hand
def mcnemar_by_hand(b: int, c: int) -> Fraction:
    """Two-sided exact McNemar: 2 * P(X <= min(b, c)), X ~ Binomial(b + c, 1/2), capped at 1."""
    n = b + c
    if n == 0:
        return Fraction(1)
    return min(Fraction(1), 2 * Fraction(sum(comb(n, k) for k in range(min(b, c) + 1)), 2**n))


def sign_flip_by_hand(diffs: list[Fraction]) -> Fraction:
    """The exact sign-flip p in rational arithmetic: the distribution of the signed sum over all 2^m patterns of the
    m non-zero differences, built one difference at a time."""
    nonzero = [d for d in diffs if d != 0]
    observed = abs(sum(nonzero))
    sums = {Fraction(0): 1}
    for d in nonzero:
        grown: dict[Fraction, int] = {}
        for total, ways in sums.items():
            for step in (d, -d):
                grown[total + step] = grown.get(total + step, 0) + ways
        sums = grown
    return Fraction(sum(w for total, w in sums.items() if abs(total) >= observed), 2 ** len(nonzero))


@pytest.mark.parametrize("b, c, p", [
    (1, 6, Fraction(1, 8)),          # the README's example: 2 (1 + 7) / 2^7
    (0, 6, Fraction(1, 32)),         # 2 / 2^6
    (0, 5, Fraction(1, 16)),         # 2 / 2^5: not significant
    (2, 9, Fraction(134, 2048)),     # 2 (1 + 11 + 55) / 2^11
    (3, 3, Fraction(1)),             # a tie is capped at 1
    (0, 0, Fraction(1)),             # no discordant pair
    (1, 0, Fraction(1)),             # one pair
])
def test_mcnemar_exact_p_values_worked_by_hand(b, c, p):
    assert mcnemar_exact(b, c) == float(p) == mcnemar_exact(c, b)


def test_mcnemar_matches_rational_arithmetic_and_its_interval_excludes_zero_exactly_when_significant():
    for b in range(31):
        for c in range(31):
            p = mcnemar_exact(b, c)
            assert p == pytest.approx(float(mcnemar_by_hand(b, c)), rel=1e-14, abs=0), (b, c)
            lo, hi = paired_share_interval(c, b, b + c + 7)
            assert lo <= (c - b) / (b + c + 7) <= hi
            assert (lo > 0 or hi < 0) == (p < 0.05), (b, c, p, lo, hi)


@pytest.mark.parametrize("n", [1, 2, 5, 12, 40])
def test_clopper_pearson_closed_forms_at_the_ends(n):
    """k = 0: the upper bound solves (1 - p)^n = 0.025; k = n: the lower bound solves p^n = 0.025."""
    assert clopper_pearson(0, n) == pytest.approx((0.0, 1 - 0.025 ** (1 / n)), abs=1e-12)
    assert clopper_pearson(n, n) == pytest.approx((0.025 ** (1 / n), 1.0), abs=1e-12)


def test_paired_statistics_edge_cases():
    # one discordant pair: p = 1, the interval of 1/1 is [0.025, 1] mapped to (1/1)(2 pi - 1)
    one = paired_statistics("rate", [(1.0, 0.0)])
    assert (one["delta"], one["p_value"], one["n_pairs"]) == (1.0, 1.0, 1)
    assert one["ci"] == pytest.approx([2 * 0.025 - 1, 1.0], abs=1e-12)
    # all ties: nothing changed, nothing to test
    for kind, pairs in (("rate", [(1.0, 1.0), (0.0, 0.0)] * 4), ("mean", [(0.5, 0.5), (1 / 3, 1 / 3)] * 4)):
        tied = paired_statistics(kind, pairs)
        assert (tied["delta"], tied["ci"], tied["p_value"]) == (0.0, [0.0, 0.0], 1.0)
    # every pair worse by 1: McNemar and the sign-flip test give the same 2 / 2^20
    rate, mean = paired_statistics("rate", [(0.0, 1.0)] * 20), paired_statistics("mean", [(0.0, 1.0)] * 20)
    assert rate["p_value"] == mean["p_value"] == 2 / 2**20
    assert rate["ci"][1] == pytest.approx(-(0.025 ** (1 / 20)) * 2 + 1, abs=1e-12)  # CP of 0 better in 20: [0, 1 - 0.025^(1/20)]


@pytest.mark.parametrize("diffs", [
    # more than 12 non-zero differences of few distinct sizes: the exact count by size, not Monte Carlo
    [Fraction(1, 3)] * 5 + [Fraction(-2, 3)] * 6 + [Fraction(1, 2)] * 4 + [Fraction(0)] * 3,
    [Fraction(-1, 2)] * 9 + [Fraction(1, 4)] * 7 + [Fraction(-1, 4)] * 2,
    [Fraction(1, 10)] * 7 + [Fraction(-3, 10)] * 5 + [Fraction(1, 5)] * 3,
    # twelve or fewer: every pattern enumerated
    [Fraction(1, 3), Fraction(-1, 3), Fraction(2, 3), Fraction(-1, 6), Fraction(1, 2)],
    [Fraction(-1)] * 13,
])
def test_the_sign_flip_p_value_is_the_exact_one(diffs):
    floats = [float(d) for d in diffs]
    assert sign_flip(floats) == pytest.approx(float(sign_flip_by_hand(diffs)), abs=1e-12)
    assert sign_flip(list(reversed(floats))) == sign_flip(floats)


def test_sign_flip_edge_cases():
    assert sign_flip([]) == sign_flip([0.0, 0.0]) == 1.0  # all ties
    assert sign_flip([0.25]) == 1.0  # one pair: both patterns are as extreme
    assert sign_flip([0.5, 0.5]) == 0.5  # ++ and -- of 4 patterns


def test_wilson_interval_worked_by_hand():
    z = 1.959963984540054
    for k, n in ((7, 10), (1, 3), (19, 20)):
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        assert wilson(k, n) == pytest.approx((centre - half, centre + half), abs=1e-15)
    assert wilson(7, 10) == pytest.approx((0.3968, 0.8922), abs=5e-5)  # the published table value
    assert wilson(0, 4)[0] == 0.0 and wilson(4, 4)[1] == 1.0 and wilson(0, 0) is None


# --------------------------------------------------------------------------- a project
def gold(i: int) -> str:
    return f"SELECT id, hours FROM tickets WHERE id <= {i % 6 + 1} ORDER BY id"


def answer(i: int, kind: str) -> str:
    k = i % 6 + 1
    return {"right": gold(i), "partial": f"SELECT id FROM tickets WHERE id <= {k} ORDER BY id",
            "rows": f"SELECT id, hours FROM tickets WHERE id <= {k + 1} ORDER BY id",
            "bad": "SELECT nope FROM tickets"}[kind]


DIFFICULTIES = ("easy", "medium", "hard", "extra")


def write_suite(root: Path, folder: str, name: str, ids: list[str], *, turns: int = 0, thresholds: str = "") -> None:
    path = root / folder / f"{name}.sqleval.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    database = "../" * len(Path(folder).parts) + "shop.sqlite"
    lines = [f"suite: {name}", f"database: {database}", "timeout: 5", *([thresholds] if thresholds else []), "cases:"]
    for i, case_id in enumerate(ids):
        lines += [f"  - id: {case_id}", f"    gold: {gold(i)}", f"    difficulty: {DIFFICULTIES[i % 4]}",
                  f"    tags: [t{i % 3}]"]
    if turns:
        lines += ["  - id: talk", "    interaction:"]
        lines += [f"      - {{question: turn {t + 1}, gold: \"{gold(t)}\"}}" for t in range(turns)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_model(root: Path, name: str, suites: dict[str, list[str]], kinds: dict[str, str]) -> None:
    """One prediction per case (`<suite>::<id>`), `right` unless ``kinds`` says otherwise; a kind `none` leaves
    the case without a prediction."""
    rows = []
    for suite, ids in suites.items():
        for i, case_id in enumerate(ids):
            kind = kinds.get(f"{suite}::{case_id}", "right")
            if kind != "none":
                number = int(case_id.rsplit("/", 1)[1]) - 1 if "/" in case_id else i
                rows.append({"id": f"{suite}::{case_id}", "sql": answer(number, kind)})
    (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


# --------------------------------------------------------------------------- sqleval gate = pytest's exit status
def strict_project(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite")
    ids = [f"c{i}" for i in range(6)]
    write_suite(pytester.path, "suites", "strict", ids)
    write_model(pytester.path, "model", {"strict": ids}, {"strict::c2": "partial", "strict::c4": "rows"})
    return pytester


def test_sqleval_gate_exits_1_on_a_strict_runs_failed_cases_as_pytest_does(pytester, capsys):
    """Under --sqleval-strict a miss is a failure: pytest exits 1 and the step summary of the report is ❌. `sqleval
    gate` on the same report (or on the merge of its shards) exited 0: a gate job could pass what the test job
    failed. It exits 1 now and names the failed cases; the same report without --sqleval-strict still exits 0."""
    from pytest_sqleval.report.markdown import render_markdown

    project = strict_project(pytester)
    result, report = run(project, "model", "strict.json", "--sqleval-strict")
    assert result.ret == 1 and report["suites"][0]["outcomes"]["failed"] == 2
    assert render_markdown(report).lstrip().startswith("## ❌")
    path = str(project.path / "strict.json")
    capsys.readouterr()
    assert main(["gate", path]) == 1
    assert "sqleval: 2 case(s) failed (--sqleval-strict): strict::c2, strict::c4" in capsys.readouterr().out
    shards = []
    for k in (1, 2):
        shard, _ = run(project, "model", f"shard{k}.json", "--sqleval-strict", f"--sqleval-shard={k}/2")
        shards.append(str(project.path / f"shard{k}.json"))
    merged = str(project.path / "merged.json")
    assert main(["merge", *shards, "-o", merged]) == 0
    assert main(["gate", merged]) == 1
    lenient, _ = run(project, "model", "lenient.json")
    assert lenient.ret == 0 and main(["gate", str(project.path / "lenient.json")]) == 0


# --------------------------------------------------------------------------- corrupt baselines and reports
def _corrupt(report: dict, how: str) -> dict:
    report = json.loads(json.dumps(report))
    if how == "run is text":
        report["run"] = "yesterday"
    elif how == "files is a list":
        report["run"]["files"] = ["suites/strict.sqleval.yaml"]
    elif how == "options is a list":
        report["run"]["options"] = ["timeout=5"]
    elif how == "overall is a list":
        report["overall"] = [report["overall"]]
    elif how == "a suite entry has no name":
        del report["suites"][0]["name"]
    return report


@pytest.mark.parametrize("how", ["run is text", "files is a list", "options is a list", "overall is a list",
                                 "a suite entry has no name"])
def test_a_baseline_with_a_malformed_block_is_a_usage_error_naming_the_file(pytester, capsys, how):
    """A hand-edited or truncated-and-repaired baseline whose `run` block is not an object crashed pytest with an
    INTERNALERROR (exit 3) and `sqleval gate|merge|report` with a traceback (exit 1, which reads as "a gate
    failed"). Now: pytest's usage error (exit 4) and the commands' bad input (exit 2), naming the file and the fix."""
    project = strict_project(pytester)
    _, good = run(project, "model", "good.json")
    (project.path / "bad.json").write_text(json.dumps(_corrupt(good, how)), encoding="utf-8")
    result, _ = run(project, "model", "cand.json", "--sqleval-baseline=bad.json", "--sqleval-max-regressed=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    result.stderr.fnmatch_lines(["ERROR: --sqleval-baseline bad.json: *", "  fix: *"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    bad, good_path = str(project.path / "bad.json"), str(project.path / "good.json")
    capsys.readouterr()
    for argv in (["gate", good_path, "--baseline", bad], ["gate", bad], ["merge", bad, "-o", str(project.path / "m.json")],
                 ["report", bad, "--markdown", str(project.path / "m.md")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "bad.json" in err and "fix:" in err, (argv, err)


@pytest.mark.parametrize("value", ["nan", "0.5", float("inf"), [1]], ids=["nan-text", "number-as-text", "infinity", "a-list"])
def test_a_baseline_case_whose_score_is_not_a_number_is_refused_naming_the_case(pytester, capsys, value):
    """A baseline case with `"soft_f1": "nan"` (what the report writes for a NaN) was compared as NaN: the sign-flip
    test counted no pattern as extreme, p = 0, and the gate failed with `soft_f1 dropped nan ... significant`. A
    score that is not a number is a corrupt baseline: refused, naming the file, the case and the key."""
    project = strict_project(pytester)
    _, good = run(project, "model", "good.json")
    good["cases"][3]["soft_f1"] = value
    (project.path / "bad.json").write_text(json.dumps(good, allow_nan=True), encoding="utf-8")
    result, _ = run(project, "model", "cand.json", "--sqleval-baseline=bad.json", "--sqleval-fail-under-baseline=soft_f1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    result.stderr.fnmatch_lines(["ERROR: --sqleval-baseline bad.json: case #4 (strict::c3) of the baseline has soft_f1 *"])
    capsys.readouterr()
    assert main(["gate", str(project.path / "good.json"), "--baseline", str(project.path / "bad.json"),
                 "--fail-under-baseline", "soft_f1"]) == 2
    assert "case #4 (strict::c3)" in capsys.readouterr().err


def test_a_report_holding_a_case_twice_is_refused(pytester, capsys):
    """Two records of one (suite, id) in a baseline: the comparison kept the last silently, and `sqleval gate` on
    such a report counted the case twice in every aggregate. `sqleval merge` already refused it across reports; a
    report is refused at load now, naming both places."""
    project = strict_project(pytester)
    _, good = run(project, "model", "good.json")
    twice = json.loads(json.dumps(good))
    twice["cases"].append(dict(twice["cases"][1], outcome="missed", execution_match=False))
    (project.path / "twice.json").write_text(json.dumps(twice), encoding="utf-8")
    result, _ = run(project, "model", "cand.json", "--sqleval-baseline=twice.json", "--sqleval-max-regressed=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --sqleval-baseline twice.json: case #7 (strict::c1) of the baseline is "
                                 "also case #2*"])
    capsys.readouterr()
    assert main(["gate", str(project.path / "twice.json")]) == 2
    assert "case #7 (strict::c1)" in capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    (None, "cannot read the baseline: No such file or directory"),
    (b"", "the baseline is not valid JSON: Expecting value (line 1, column 1)"),
    (b'{"schema": "sqleval-report/1", "suites": [], "cases": [', "the baseline is not valid JSON: *"),
    (b'{"schema": "sqleval-report/0", "suites": [], "cases": []}', "the baseline is not a sqleval-report/1 report*"),
    (b'[{"suite": "strict", "id": "c0"}]', "the baseline is not a sqleval-report/1 report (schema: 'list')"),
    # the artifact as downloaded, still gzipped: was a UnicodeDecodeError traceback; now unpacked and read
    (__import__("gzip").compress(b'{"schema": "sqleval-report/1"}', mtime=0), "the baseline has no 'suites' list"),
], ids=["missing", "empty", "truncated", "other-schema", "a-list", "gzipped"])
def test_missing_empty_truncated_and_other_format_baselines_stop_before_anything_runs(pytester, content, message):
    project = strict_project(pytester)
    if content is not None:
        (project.path / "deployed.json").write_bytes(content)
    result, report = run(project, "model", "cand.json", "--sqleval-baseline=deployed.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and report is None
    result.stderr.fnmatch_lines([f"ERROR: --sqleval-baseline deployed.json: {message}", "  fix: *"])
    assert "passed" not in result.stdout.str()


def test_an_old_baseline_without_run_metadata_intervals_or_pass_rule_is_compared(pytester):
    """A report of an older plugin (no run block, no overall/gates/baseline, no intervals, no passed_rule, no
    index): compared case by case, with one warning that file changes cannot be seen."""
    project = strict_project(pytester)
    _, old = run(project, "model", "old.json")
    for key in ("run", "overall", "gates", "baseline"):
        old.pop(key)
    for suite in old["suites"]:
        suite.pop("intervals")
    for case in old["cases"]:
        case.pop("passed_rule"), case.pop("index", None)
    (project.path / "old.json").write_text(json.dumps(old), encoding="utf-8")
    write_model(project.path, "worse", {"strict": [f"c{i}" for i in range(6)]},
                {"strict::c0": "bad", "strict::c2": "partial", "strict::c4": "right"})
    result, report = run(project, "worse", "cand.json", "--sqleval-baseline=old.json", "--sqleval-max-regressed=0")
    comparison = report["baseline"]["overall"]
    assert comparison["pairs"]["regressed"] == ["strict::c0"] and comparison["pairs"]["fixed"] == ["strict::c4"]
    assert comparison["pairs"]["still_missed"] == ["strict::c2"]
    assert report["baseline"]["warnings"] == [
        "the baseline has no file hashes (run metadata): cannot tell whether a suite or database changed"]
    assert comparison["metrics"]["execution_accuracy"]["p_value"] == 1.0  # b = c = 1
    assert result.ret == 1  # one regressed > 0 allowed


# --------------------------------------------------------------------------- cases added, removed, renamed
ALPHA = [f"a{i:02d}" for i in range(14)]
BETA = [f"b{i}" for i in range(7)]
BETA_TURNS = ["talk/1", "talk/2", "talk/3"]


def deploy_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """Two suites in nested folders (`z/alpha`, `a/beta` with a 3-turn interaction) and thresholds per difficulty
    and tag. The deployed model misses a01 (rows) and a02 (partial); the candidate fixes a01, regresses a03-a10
    (8 cases: partial, rows or an unknown column) and b2 (no prediction)."""
    make_sqlite(pytester.path / "shop.sqlite")
    write_suite(pytester.path, "z", "alpha", ALPHA,
                thresholds="thresholds: {by_difficulty.hard.execution_accuracy: 0.5, by_tag.t1.soft_f1: 0.5}")
    write_suite(pytester.path, "a/deep", "beta", BETA, turns=3)
    suites = {"alpha": ALPHA, "beta": BETA + BETA_TURNS}
    write_model(pytester.path, "deployed", suites, {"alpha::a01": "rows", "alpha::a02": "partial"})
    regress = {f"alpha::a{i:02d}": ("partial", "rows", "bad")[i % 3] for i in range(3, 11)}
    write_model(pytester.path, "candidate", suites, {"alpha::a02": "partial", "beta::b2": "none", **regress})
    return pytester


GATES = ("--sqleval-baseline=deployed.json", "--sqleval-max-regressed=8",
         "--sqleval-fail-under-baseline=execution_accuracy=0.1", "--sqleval-fail-under-baseline=overall:execution_accuracy",
         "--sqleval-fail-under-baseline=beta:soft_f1", "--sqleval-threshold=overall:soft_f1=0.5")


def test_added_removed_and_renamed_cases_and_a_renamed_suite_against_the_baseline(pytester):
    """The baseline lost a case (a13 removed from the suite), gained one (a14 new), renamed one (a12 -> a12x: one
    removed, one new), and its suite beta is called gamma now. Pairs, counts, warnings and the p-values follow,
    worked by hand: alpha has 1 fixed and 8 regressed among 12 pairs, McNemar p = 2 (1 + 9) / 2^9."""
    project = deploy_project(pytester)
    assert run(project, "deployed", "deployed.json")[0].ret == 0
    baseline = json.loads((project.path / "deployed.json").read_text())
    kept = []
    for case in baseline["cases"]:
        if case["id"] == "a13" or (case["suite"] == "alpha" and case["id"] == "a12"):
            continue
        kept.append(case)
    renamed = dict(next(c for c in baseline["cases"] if c["id"] == "a12"), id="a12old")
    gone = dict(next(c for c in baseline["cases"] if c["id"] == "a00"), id="retired")
    baseline["cases"] = [*kept, renamed, gone]
    for case in baseline["cases"]:
        if case["suite"] == "beta":
            case["suite"] = "gamma"
    (project.path / "edited.json").write_text(json.dumps(baseline), encoding="utf-8")
    result, report = run(project, "candidate", "cand.json", "--sqleval-baseline=edited.json",
                         "--sqleval-max-regressed=8", "--sqleval-fail-under-baseline=execution_accuracy")
    suites = {s["name"]: s for s in report["baseline"]["suites"]}
    assert list(suites) == ["beta", "alpha", "gamma"]  # the run's order (a/deep/beta before z/alpha), then the baseline's
    alpha = suites["alpha"]
    assert alpha["pairs"]["fixed"] == ["a01"] and alpha["pairs"]["still_missed"] == ["a02"]
    assert alpha["pairs"]["regressed"] == [f"a{i:02d}" for i in range(3, 11)]
    assert sorted(alpha["pairs"]["new"]) == ["a12", "a13"]
    assert sorted(alpha["pairs"]["removed"]) == ["a12old", "retired"]
    assert alpha["counts"] == {"fixed": 1, "regressed": 8, "still_missed": 1, "still_passed": 2, "new": 2, "removed": 2}
    ex = alpha["metrics"]["execution_accuracy"]
    assert (ex["n_pairs"], ex["discordant"], ex["p_value"]) == (12, {"better": 1, "worse": 8}, 20 / 2**9)
    assert ex["delta"] == pytest.approx(-7 / 12, abs=1e-15)
    assert suites["beta"]["counts"]["new"] == 10 and suites["beta"]["metrics"] == {}
    assert suites["gamma"]["counts"]["removed"] == 10
    assert report["baseline"]["warnings"][-2:] == [
        "suite beta is not in the baseline: all its cases are new",
        "suite gamma of the baseline is not in this run: its cases count as removed"]
    assert report["baseline"]["overall"]["counts"]["regressed"] == 8  # b2 regressed too, but beta has no pair now
    # 8 regressed <= 8 allowed; alpha dropped 7/12 with p = 0.039 < 0.05 (beta has no pair: no gate for it)
    gates = {g["name"]: g["passed"] for g in report["gates"] if g["kind"] != "threshold"}
    assert gates == {"overall::max_regressed": True, "alpha::execution_accuracy vs baseline": False}
    assert result.ret == 1


# --------------------------------------------------------------------------- shards merged = one run, serial = -n 2
def test_shards_run_with_xdist_and_merged_equal_one_unsharded_run_serial_and_xdist(pytester, capsys):
    """Four shards, each its own run (two of them `pytest -n 2`), merged; and one unsharded run, serial and -n 2: the same
    suites, cases, overall figure, baseline comparison and gates, byte for byte; `sqleval gate` on the merge exits
    as the unsharded pytest did; the Markdown and HTML rendered from the merge are the unsharded run's files."""
    project = deploy_project(pytester)
    assert run(project, "deployed", "deployed.json")[0].ret == 0
    outputs = ("--sqleval-markdown=whole.md", "--sqleval-html=whole.html")
    whole_result, whole = run(project, "candidate", "whole.json", *GATES, *outputs)
    xdist_result, xdist = run(project, "candidate", "xdist.json", *GATES, "-n", "2")
    shards = []
    for k in range(1, 5):  # two shards under xdist, two serial: each its own run
        workers = ("-n", "2") if k <= 2 else ()
        shard, report = run(project, "candidate", f"shard{k}.json", *GATES, f"--sqleval-shard={k}/4", *workers)
        assert shard.ret == 0, shard.stdout.str()[-3000:]  # a shard's gates never fail its job
        assert 0 < len(report["cases"]) < 24
        shards.append(str(project.path / f"shard{k}.json"))
    assert sorted(c for s in shards for c in (f"{x['suite']}::{x['id']}" for x in json.loads(Path(s).read_text())["cases"])) \
        == sorted(f"{c['suite']}::{c['id']}" for c in whole["cases"])
    merged_path = str(project.path / "merged.json")
    assert main(["merge", *shards, "-o", merged_path]) == 0
    merged = json.loads(Path(merged_path).read_text())
    for key in ("suites", "cases", "overall", "baseline", "gates"):
        assert canonical(merged[key]) == canonical(whole[key]), key
        assert canonical(xdist[key]) == canonical(whole[key]), key
    assert whole_result.ret == xdist_result.ret == 1
    failed = sorted(g["name"] for g in whole["gates"] if not g["passed"])
    assert failed == ["alpha::by_difficulty.hard.execution_accuracy", "alpha::execution_accuracy vs baseline",
                      "overall::execution_accuracy vs baseline", "overall::max_regressed"]
    capsys.readouterr()
    assert main(["gate", merged_path]) == 1
    out = capsys.readouterr().out
    assert "sqleval: 4 of 8 gate(s) failed" in out
    assert main(["gate", merged_path, "--max-regressed", "9", "--fail-under-baseline", "beta:soft_f1",
                 "--threshold", "by_difficulty.hard.execution_accuracy=0"]) == 0
    assert main(["report", merged_path, "--markdown", str(project.path / "merged.md"),
                 "--html", str(project.path / "merged.html")]) == 0
    assert (project.path / "merged.md").read_text() == (project.path / "whole.md").read_text()
    assert (project.path / "merged.html").read_text() == (project.path / "whole.html").read_text()


def test_per_difficulty_and_tag_thresholds_set_the_exit_status_serial_and_xdist_and_in_sqleval_gate(pytester):
    """Suite thresholds on one difficulty and one tag, an ini threshold for every suite and a command-line one that
    wins over it: each verdict, and the exit status, the same serial, -n 2 and in `sqleval gate`."""
    project = deploy_project(pytester)
    project.makeini("[pytest]\nsqleval_thresholds =\n    soft_f1=0.95\n    by_tag.t0.execution_accuracy=0.9\n")
    verdicts = {}
    for workers in ([], ["-n", "2"]):
        result, report = run(project, "candidate", "cand.json", "--sqleval-threshold=soft_f1=0.5", *workers)
        verdicts[bool(workers)] = (result.ret, [(g["name"], g["passed"], g["source"]) for g in report["gates"]])
    assert verdicts[False] == verdicts[True]
    ret, gates = verdicts[False]
    assert ret == 1
    assert gates == [
        ("beta::by_tag.t0.execution_accuracy", True, "ini"), ("beta::soft_f1", True, "cli"),
        ("alpha::by_difficulty.hard.execution_accuracy", False, "suite"),
        ("alpha::by_tag.t0.execution_accuracy", False, "ini"), ("alpha::by_tag.t1.soft_f1", True, "suite"),
        ("alpha::soft_f1", True, "cli")]
    path = str(project.path / "cand.json")
    assert main(["gate", path]) == 1
    assert main(["gate", path, "--threshold", "by_difficulty.hard.execution_accuracy=0",
                 "--threshold", "by_tag.t0.execution_accuracy=0.25"]) == 0


# --------------------------------------------------------------------------- the CI outputs against a baseline
@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_executable()


def browse(chromium: str, page: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
             "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"]
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run([chromium, *flags, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120)


PICKER_PROBE = """<script>
(function () {
  var seen = {}, picker = document.getElementById("chart-suite");
  function drawn() {
    return Array.prototype.filter.call(document.querySelectorAll(".chart"), function (box) {
      return box.style.display !== "none" && box.querySelector("canvas").width > 100;
    }).map(function (box) { return box.getAttribute("data-chart"); }).join(" ");
  }
  seen.first = picker.options[picker.selectedIndex].text + ": " + drawn();
  for (var i = 0; i < picker.options.length; i++) {
    picker.selectedIndex = i; picker.dispatchEvent(new Event("change"));
    seen[picker.options[i].text] = drawn();
  }
  var box = document.querySelector('#filters [data-filter="regressed"]');
  box.checked = true; box.dispatchEvent(new Event("change"));
  seen.regressed = Array.prototype.filter.call(document.querySelectorAll("#cases tr.case"), function (tr) {
    return !tr.classList.contains("hidden"); }).map(function (tr) { return tr.cells[0].textContent + "::" + tr.cells[1].textContent; }).join(",");
  document.body.setAttribute("data-probe", JSON.stringify(seen));
})();
</script></body>"""


def test_step_summary_html_and_junit_of_a_run_against_a_baseline_with_a_removed_suite(pytester, chromium, tmp_path):
    """A run of one of two suites against a baseline of both: the Markdown heads with the failed gates and warns
    that the other suite is gone; the JUnit file has each gate as a testcase; the HTML page renders in headless
    chromium without a script error, its suite picker redraws the charts of each suite, and "regressed only"
    shows exactly the regressed cases."""
    project = deploy_project(pytester)
    assert run(project, "deployed", "deployed.json")[0].ret == 0
    rows = [json.loads(line) for line in (project.path / "candidate.jsonl").read_text().splitlines()]
    (project.path / "alpha-only.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows if r["id"].startswith("alpha::")), encoding="utf-8")
    result, report = run(project, "alpha-only", "alpha.json", "z", "--sqleval-baseline=deployed.json",
                         "--sqleval-max-regressed=0", "--sqleval-fail-under-baseline=soft_f1",
                         "--sqleval-markdown=summary.md", "--sqleval-html=page.html", "--junitxml=junit.xml")
    assert result.ret == 1
    regressed = [f"a{i:02d}" for i in range(3, 11)]
    assert report["baseline"]["suites"][0]["pairs"]["regressed"] == regressed
    # soft_f1: 9 non-zero differences (a01 better, a03-a10 worse), every one of the 2^9 patterns counted by hand
    deployed = {c["id"]: c["soft_f1"] for c in json.loads((project.path / "deployed.json").read_text())["cases"]
                if c["suite"] == "alpha"}
    diffs = [Fraction(c["soft_f1"]) - Fraction(deployed[c["id"]]) for c in report["cases"]]
    assert sum(d != 0 for d in diffs) == 9
    soft = next(g for g in report["gates"] if g["name"] == "alpha::soft_f1 vs baseline")
    assert soft["p_value"] == pytest.approx(float(sign_flip_by_hand(diffs)), abs=1e-12) and soft["p_value"] < 0.05
    assert soft["passed"] is False
    markdown = (project.path / "summary.md").read_text()
    assert markdown.startswith("## ❌ sqleval: 3 of 4 gates failed")
    assert "> ⚠️ suite beta of the baseline is not in this run: its cases count as removed" in markdown
    assert "<b>Regressed cases (8)</b>" in markdown
    junit = ET.parse(project.path / "junit.xml").getroot().find("testsuite")
    gates = {c.get("name"): c for c in junit.iter("testcase") if c.get("classname") == "sqleval.gates"}
    assert sorted(gates) == sorted(g["name"] for g in report["gates"])
    assert [n for n, c in gates.items() if c.find("failure") is not None] == [
        "alpha::by_difficulty.hard.execution_accuracy", "overall::max_regressed", "alpha::soft_f1 vs baseline"]
    assert junit.get("failures") == "3"
    misses = [c for c in junit.iter("testcase") if c.find("skipped") is not None]
    assert len(misses) == report["suites"][0]["outcomes"]["missed"]

    page = tmp_path / "probe.html"
    page.write_text((project.path / "page.html").read_text().replace("</body>", PICKER_PROBE), encoding="utf-8")
    dumped = browse(chromium, page, tmp_path)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    assert 'data-errors="[]"' in dumped.stdout and 'data-ready="1"' in dumped.stdout, dumped.stderr[-2000:]
    assert not [line for line in dumped.stderr.splitlines() if "CONSOLE" in line and "rror" in line]
    probe = dumped.stdout.split('data-probe="', 1)[1].split('"', 1)[0].replace("&quot;", '"')
    seen = json.loads(probe)
    assert seen["first"] == "alpha: metrics by_difficulty by_tag errors"
    assert seen["alpha"] == "metrics by_difficulty by_tag errors"
    assert seen["regressed"] == ",".join(f"alpha::{c}" for c in regressed)


# --------------------------------------------------------------------------- a partial baseline, a partial merge
def test_a_shard_used_as_the_baseline_and_a_merge_missing_a_shard_are_said_where_the_gate_is_read(pytester, capsys):
    """Two easy CI slips, each of which let a deploy gate pass on part of the data without a word where it is read:
    (1) the deployed model's artifact is one shard's report: every case of the other shards counted as `new`, and
    `--sqleval-max-regressed 0` passed; now the comparison warns that the baseline is a shard. (2) a shard's job
    died and the merge covers two of three shards: `sqleval merge` warned on its own stderr only; now `sqleval
    gate` repeats the warning and the step summary shows it."""
    from pytest_sqleval.report.markdown import render_markdown

    project = deploy_project(pytester)
    run(project, "deployed", "deployed-1.json", "--sqleval-shard=1/3")
    result, report = run(project, "candidate", "cand.json", "--sqleval-baseline=deployed-1.json",
                         "--sqleval-max-regressed=0")
    shard_warning = ("the baseline is shard 1/3 of its run: the other shards' cases count as new; compare with "
                     "their merged report (sqleval merge)")
    assert shard_warning in report["baseline"]["warnings"]
    result.stdout.fnmatch_lines([f"  warning: {shard_warning}"])
    for k in (1, 2):
        run(project, "candidate", f"shard{k}.json", f"--sqleval-shard={k}/3")
    merged = str(project.path / "merged.json")
    assert main(["merge", str(project.path / "shard1.json"), str(project.path / "shard2.json"), "-o", merged]) == 0
    missing = "shard(s) 3/3 missing: the merged report covers only part of the suites"
    assert missing in capsys.readouterr().err
    assert main(["gate", merged, "--threshold", "by_difficulty.hard.execution_accuracy=0"]) == 0  # passes, but says so
    assert f"warning: {missing}" in capsys.readouterr().err
    assert f"> ⚠️ {missing}" in render_markdown(json.loads(Path(merged).read_text()))
