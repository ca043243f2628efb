"""Known leftovers of earlier QA rounds, each reproduced as a user meets it: bidirectional controls in the HTML page,
suite values that were accepted silently, SQLite's `string or blob too big`, deploy-gate names, an empty shard and
the Monte Carlo sign-flip p-value."""

from __future__ import annotations

import itertools
import json
import subprocess
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import chromium_executable, make_sqlite
from deploygate_support import make_project, run_report

#: The bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069).
BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    return runner("--sqleval", "-p", "no:cacheprovider", *args)


def write(pytester: pytest.Pytester, name: str, text: str) -> Path:
    path = pytester.path / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- 1. bidi controls in the HTML page
BIDI_SUITE = r'''
suite: "shop\u202etxt"
database: shop.sqlite
cases:
  - id: q1
    question: "Which shop is \u2067first\u2069 \u202bhere\u202c?"
    gold: "SELECT name FROM shops WHERE id = 1 -- \u202a\u202d\u2066\u2068"
    predicted: "SELECT name\nFROM shops -- \u202e)1 = di EREHW(\nWHERE id = 2"
    difficulty: "ha\u202ard"
  - id: q2
    gold: SELECT id FROM shops ORDER BY id
    predicted: "SELECT id FROM shops WHERE name <> '\u202e' ORDER BY id"
'''


@pytest.fixture
def bidi_page(pytester: pytest.Pytester) -> Path:
    make_sqlite(pytester.path / "shop.sqlite")
    write(pytester, "bidi.sqleval.yaml", BIDI_SUITE)
    result = run(pytester, "--sqleval-html=page.html")
    assert result.ret == 0, result.stdout.str()
    return pytester.path / "page.html"


def test_bidi_controls_show_as_escapes_in_the_html_page(bidi_page: Path):
    """Before the fix the page held every one of them raw (12 U+202E), so a question or an SQL text could be shown
    reordered; now each shows as its escape, as in the Markdown, and a SQL text keeps its line breaks."""
    text = bidi_page.read_text(encoding="utf-8")
    assert [hex(ord(ch)) for ch in BIDI if ch in text] == []
    for ch in BIDI:
        assert f"\\u{ord(ch):04x}" in text, hex(ord(ch))
    assert "SELECT name\nFROM shops -- \\u202e)1 = di EREHW(\nWHERE id = 2" in text  # in its <pre>, lines kept
    assert "Which shop is \\u2067first\\u2069 \\u202bhere\\u202c?" in text
    data = text[text.index('<script id="sqleval-data" type="application/json">'):]
    data = json.loads(data[data.index(">") + 1:data.index("</script>")])
    assert data["suites"][0]["name"] == "shop\\u202etxt"  # the chart's suite picker and labels: escaped too
    assert "ha\\u202ard" in data["suites"][0]["by_difficulty"]["labels"]


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--virtual-time-budget=5000"]


def test_the_browser_shows_bidi_escapes_and_the_page_still_works(bidi_page: Path, tmp_path: Path):
    exe = chromium_executable()
    dumped = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                             bidi_page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    assert [hex(ord(ch)) for ch in BIDI if ch in dom] == []
    assert 'data-ready="1"' in dom and "data-errors=\"[]\"" in dom, dumped.stderr[-2000:]
    assert "✓ Suite shop\\u202etxt" in dom
    assert "showing 2 of 2 cases" in dom


# --------------------------------------------------------------------------- 2. values accepted silently
def suite_error(pytester: pytest.Pytester, name: str, text: str) -> pytest.RunResult:
    make_sqlite(pytester.path / "a.sqlite")
    make_sqlite(pytester.path / "b.sqlite")
    (pytester.path / "schema.sql").write_text("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);\n")
    (pytester.path / "more.sql").write_text("INSERT INTO t VALUES (2);\n")
    write(pytester, name, text)
    return run(pytester, name)


CASES = """
cases:
  - id: q1
    gold: SELECT 1
    predicted: SELECT 1
"""


@pytest.mark.parametrize("value", ['""', "''", '"  "'])
def test_an_empty_dialect_is_an_error_naming_the_line(pytester, value):
    result = suite_error(pytester, "d.sqleval.yaml", f"database: a.sqlite\ndialect: {value}\n" + CASES)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines(["*d.sqleval.yaml:2: `dialect:` is empty*",
                                 "  fix: *sqlite, duckdb, postgres*or leave the key out*"])


def test_a_missing_dialect_value_still_means_the_database_s_own(pytester):
    result = suite_error(pytester, "d.sqleval.yaml", "database: a.sqlite\ndialect:\n" + CASES)
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(("written", "shown", "hint"), [
    ('"0.8"', "'0.8'", "write `execution_accuracy: 0.8` without the quotes"),
    ("'1'", "'1'", "write `execution_accuracy: 1` without the quotes"),
    ("8e-1", "'8e-1'", "YAML reads 8e-1 as text, not a number: write `execution_accuracy: 0.8`"),
])
def test_a_threshold_written_as_text_is_an_error_naming_the_line(pytester, written, shown, hint):
    text = f"database: a.sqlite\nthresholds:\n  soft_f1: 0.5\n  execution_accuracy: {written}\n" + CASES
    result = suite_error(pytester, "t.sqleval.yaml", text)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines([f"*t.sqleval.yaml:4: threshold for execution_accuracy must be a number, not the "
                                 f"text {shown}*", f"  fix: {hint}*"])


def test_numeric_thresholds_and_command_line_text_still_work(pytester):
    text = "database: a.sqlite\nthresholds: {execution_accuracy: .5, error_count: 0, soft_f1: 1}\n" + CASES
    result = suite_error(pytester, "t.sqleval.yaml", text)
    assert result.ret == 0, result.stdout.str()
    result = run(pytester, "t.sqleval.yaml", "--sqleval-threshold=exact_match=0.8")
    assert result.ret == 0, result.stdout.str()


@pytest.mark.parametrize(("databases", "line", "shown", "entries"), [
    ("[a.sqlite, b.sqlite, ./a.sqlite]", 1, "./a.sqlite", "entries 1 and 3"),
    ("\n  - a.sqlite\n  - b.sqlite\n  - b.sqlite", 4, "b.sqlite", "entries 2 and 3"),
    ('\n  - {url: "sqlite://", setup: [schema.sql]}\n  - {url: "sqlite://", setup: [schema.sql, more.sql]}'
     '\n  - {url: "sqlite://", setup: [schema.sql]}', 4, "sqlite://", "entries 1 and 3"),
])
def test_a_database_listed_twice_is_an_error_naming_the_line(pytester, databases, line, shown, entries):
    result = suite_error(pytester, "u.sqleval.yaml", f"databases: {databases}\n" + CASES)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines([f"*u.sqleval.yaml:{line}: `databases:` lists {shown} twice ({entries})*",
                                 "  fix: list each database once*"])


def test_a_case_s_database_listed_twice_is_an_error_too(pytester):
    text = """
    cases:
      - id: q1
        gold: SELECT 1
        predicted: SELECT 1
        databases: [b.sqlite, b.sqlite]
    """
    result = suite_error(pytester, "c.sqleval.yaml", text)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines(["*c.sqleval.yaml:5: `databases:` lists b.sqlite twice (entries 1 and 2)*"])


def test_one_built_url_with_different_scripts_is_two_databases(pytester):
    text = ('databases:\n  - {url: "sqlite://", setup: [schema.sql]}\n'
            '  - {url: "sqlite://", setup: [schema.sql, more.sql]}\n'
            "cases:\n  - id: q1\n    gold: SELECT count(*) > 0 FROM t\n    predicted: SELECT 1\n")
    result = suite_error(pytester, "two.sqleval.yaml", text)
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1)


# --------------------------------------------------------------------------- 3. string or blob too big
def test_sqlite_string_or_blob_too_big_is_a_resource_limit(pytester):
    """A prediction that builds a value over SQLite's length limit: before, kind `runtime` and SQLite's bare
    message; now kind `memory` (the README's kind for a query stopped by a resource limit), naming the limit."""
    make_sqlite(pytester.path / "shop.sqlite")
    write(pytester, "big.sqleval.yaml", """
    database: shop.sqlite
    cases:
      - id: zeroblob
        gold: SELECT id FROM shops
        predicted: SELECT zeroblob(2000000000)
      - id: replace
        gold: SELECT id FROM shops
        predicted: SELECT replace(hex(zeroblob(6000000)), '0', 'ab')
      - id: group-concat
        gold: SELECT id FROM shops
        predicted: SELECT group_concat(hex(zeroblob(1000000))) FROM shops, shops AS b, shops AS c
      - id: below-the-limit
        gold: SELECT 8000000
        predicted: SELECT length(hex(zeroblob(4000000)))
    """)
    result = run(pytester, "--sqleval-json=big.json")
    assert result.ret == 0, result.stdout.str()
    report = json.loads((pytester.path / "big.json").read_text())
    cases = {c["id"]: c for c in report["cases"]}
    assert cases["below-the-limit"]["outcome"] == "passed"
    for case_id in ("zeroblob", "replace", "group-concat"):
        error = cases[case_id]["error"]
        assert error["kind"] == "memory", (case_id, error)
        assert "string or blob too big" in error["message"]
        assert "10,000,000 bytes" in error["message"] and "cannot be raised" in error["message"]
    assert report["suites"][0]["metrics"]["errors_by_kind"] == {"memory": 3}


# --------------------------------------------------------------------------- 4a. two gates, one name
def test_a_plain_and_a_suite_rule_for_one_metric_are_two_gates_of_distinct_names(pytester):
    """`execution_accuracy` (every suite) and `alpha:execution_accuracy=0.5` (one suite) both gate suite alpha:
    before, both gates were named `alpha::execution_accuracy vs baseline` (JUnit kept only one testcase). A rule for
    a suite that is not in the run is named after its rule too."""
    make_project(pytester)
    run_report(pytester, "deployed.json", predictions="deployed.jsonl")
    rules = ("--sqleval-fail-under-baseline=execution_accuracy",
             "--sqleval-fail-under-baseline=alpha:execution_accuracy=0.5",
             "--sqleval-fail-under-baseline=gamma:soft_f1")
    result, report = run_report(pytester, "candidate.json", "--sqleval-baseline=deployed.json", *rules,
                                "--junitxml=junit.xml")
    names = [g["name"] for g in report["gates"]]
    assert names == ["alpha::execution_accuracy vs baseline", "beta::execution_accuracy vs baseline",
                     "alpha::alpha:execution_accuracy vs baseline", "gamma::gamma:soft_f1 vs baseline"]
    assert [g["passed"] for g in report["gates"]] == [True, True, True, False]
    assert result.ret == 1
    scoped = report["gates"][2]
    assert scoped["message"].startswith("PASS alpha:execution_accuracy dropped 0.3000 vs baseline")
    assert scoped["message"].endswith("within the tolerance 0.5")
    assert report["gates"][3]["message"] == ("FAIL gamma:soft_f1 vs baseline: suite 'gamma' is in neither this run "
                                             "nor the baseline")
    result.stdout.fnmatch_lines(["suite alpha: PASS execution_accuracy dropped 0.3000 vs baseline *: not significant*",
                                 "suite alpha: PASS alpha:execution_accuracy dropped 0.3000 vs baseline *: within*"])
    junit = ET.parse(pytester.path / "junit.xml").getroot()
    gates = [tc.get("name") for tc in junit.iter("testcase") if tc.get("classname") == "sqleval.gates"]
    assert gates == names


# --------------------------------------------------------------------------- 4b. an empty shard
ONE_CASE = """
database: shop.sqlite
cases:
  - id: only
    gold: SELECT id FROM shops
    predicted: SELECT id FROM shops
"""


def test_a_shard_that_gets_no_case_exits_0_with_an_empty_report(pytester):
    """Three shards of one case: two get nothing, which is normal; before, they exited 5 ("no tests ran") and
    failed the CI job. Its report has no cases, and the merge of all three equals the unsharded run."""
    from pytest_sqleval.cli import main

    make_sqlite(pytester.path / "shop.sqlite")
    write(pytester, "one.sqleval.yaml", ONE_CASE)
    reports = []
    for k in (1, 2, 3):
        result = run(pytester, f"--sqleval-shard={k}/3", f"--sqleval-json=shard{k}.json")
        report = json.loads((pytester.path / f"shard{k}.json").read_text())
        assert result.ret == 0, result.stdout.str()
        assert report["run"]["shard"] == f"{k}/3"
        if not report["cases"]:
            result.stdout.fnmatch_lines([f"sqleval: shard {k}/3 got no case (the other shards have them all)*"])
        reports.append(report)
    assert sorted(len(r["cases"]) for r in reports) == [0, 0, 1]
    assert main(["merge", *(str(pytester.path / f"shard{k}.json") for k in (1, 2, 3)),
                 "-o", str(pytester.path / "all.json")]) == 0
    merged = json.loads((pytester.path / "all.json").read_text())
    assert [c["id"] for c in merged["cases"]] == ["only"] and merged["suites"][0]["cases"] == 1


def test_an_empty_shard_exits_0_under_xdist_too(pytester):
    """Under -n 2 the workers split, the controller collects nothing: it hears of the empty shard from them."""
    from pytest_sqleval.shard import assign

    make_sqlite(pytester.path / "shop.sqlite")
    write(pytester, "one.sqleval.yaml", ONE_CASE)
    empty = 3 if assign({("one", "only"): 1}, 3)[("one", "only")] != 3 else 2
    result = run(pytester, f"--sqleval-shard={empty}/3", "--sqleval-json=empty.json", "-n", "2")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"sqleval: shard {empty}/3 got no case (the other shards have them all)*"])
    assert json.loads((pytester.path / "empty.json").read_text())["cases"] == []


def test_a_run_that_selects_nothing_still_exits_5_under_a_shard(pytester):
    """`-k` that matches no case: nothing was selected by the user, not by the split (pytest's own exit 5)."""
    make_sqlite(pytester.path / "shop.sqlite")
    write(pytester, "one.sqleval.yaml", ONE_CASE)
    result = run(pytester, "--sqleval-shard=1/3", "-k", "nomatch")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


# --------------------------------------------------------------------------- 4c. the sign-flip p-value
def signed_sum_p(diffs: list[float]) -> float:
    """The exact two-sided sign-flip p-value by brute force: every one of the 2^m sign patterns."""
    nonzero = [d for d in diffs if d != 0]
    observed = abs(sum(nonzero))
    hits = sum(abs(sum(s * d for s, d in zip(signs, nonzero))) >= observed - 1e-9
               for signs in itertools.product((1, -1), repeat=len(nonzero)))
    return hits / 2 ** len(nonzero)


def test_a_0_1_score_gives_the_exact_sign_test(pytester):
    """soft_f1 of 0 or 1 per case, 22 pairs, 16 worse and 6 better: the sign-flip test is then the exact binomial
    sign test, p = 2 * P(X <= 6; 22, 1/2) = 0.0525, the McNemar p of execution accuracy on the same cases. The
    Monte Carlo estimate gave 0.048 and failed the soft_f1 gate at alpha 0.05 while execution accuracy passed."""
    from pytest_sqleval.stats import mcnemar_exact

    make_sqlite(pytester.path / "shop.sqlite")
    cases = "".join(f"  - id: c{i:02d}\n    gold: SELECT id FROM shops WHERE id <= {i % 3 + 1}\n" for i in range(22))
    write(pytester, "zo.sqleval.yaml", "database: shop.sqlite\ncases:\n" + cases)

    def predictions(name: str, wrong: range) -> None:
        rows = [{"id": f"c{i:02d}", "sql": "SELECT nope FROM shops" if i in wrong else
                 f"SELECT id FROM shops WHERE id <= {i % 3 + 1}"} for i in range(22)]
        (pytester.path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))

    predictions("deployed.jsonl", range(16, 22))
    predictions("candidate.jsonl", range(0, 16))
    run_report(pytester, "deployed.json", predictions="deployed.jsonl")
    result, report = run_report(pytester, "candidate.json", "--sqleval-baseline=deployed.json",
                                "--sqleval-fail-under-baseline=soft_f1",
                                "--sqleval-fail-under-baseline=execution_accuracy")
    metrics = report["baseline"]["suites"][0]["metrics"]
    exact = mcnemar_exact(16, 6)
    assert exact == pytest.approx(0.052479, abs=1e-6)
    assert metrics["soft_f1"]["test"] == "sign_flip"
    assert metrics["soft_f1"]["p_value"] == metrics["execution_accuracy"]["p_value"] == exact
    assert metrics["bird_soft_f1"]["p_value"] == exact
    assert [g["passed"] for g in report["gates"]] == [True, True]
    assert result.ret == 0, result.stdout.str()


@pytest.mark.parametrize("diffs", [
    [1.0] * 7 + [-1.0] * 3 + [0.5] * 3 + [-0.5] * 2,  # 15 non-zero differences of two sizes
    [2 / 3] * 7 + [-1 / 3] * 6 + [1.0] * 2 + [0.0] * 5,  # thirds: partial column matches of a 3-column result
    [0.25, -0.25, 0.75, 0.5, -0.5, 1.0, -1.0, 0.25, 0.25, 0.5, 0.75, -0.25, 0.5, 0.25, 1.0],
])
def test_few_distinct_differences_give_the_exact_p_value(diffs):
    from pytest_sqleval.stats import sign_flip

    assert sum(d != 0 for d in diffs) > 12  # past the 2^n enumeration
    assert sign_flip(diffs) == pytest.approx(signed_sum_p(diffs), abs=1e-12)
    assert sign_flip(list(reversed(diffs))) == sign_flip(diffs)


def test_a_large_0_1_comparison_is_exact_and_quick():
    from pytest_sqleval.stats import mcnemar_exact, sign_flip

    diffs = [1.0] * 2210 + [-1.0] * 2320 + [0.0] * 5000
    assert sign_flip(diffs) == pytest.approx(mcnemar_exact(2320, 2210), rel=1e-9)


def test_many_distinct_differences_use_the_documented_monte_carlo():
    """Many distinct values: 1000 seeded flips, (1 + hits) / 1001, whatever the order of the cases."""
    import math
    import random

    from pytest_sqleval.stats import sign_flip

    rng = random.Random(7)
    diffs = [round(rng.uniform(-1, 0.8), 6) for _ in range(300)]
    p = sign_flip(diffs)
    assert math.isclose(p * 1001, round(p * 1001))
    shuffled = diffs[:]
    rng.shuffle(shuffled)
    assert sign_flip(shuffled) == p  # the same cases in another order: the same p-value


def test_the_exact_mcnemar_test_of_a_large_run_is_computed_without_delay():
    """24,000 discordant pairs (a 100,000-case comparison): the tail took minutes as one math.comb per term.
    Checked against the log-space binomial sum; the time bound is only a generous safety net."""
    import time

    from pytest_sqleval.stats import binomial_cdf, mcnemar_exact, sign_flip

    started = time.monotonic()
    p = mcnemar_exact(12050, 11950)
    assert p == pytest.approx(2 * binomial_cdf(11950, 24000, 0.5), rel=1e-9)
    assert 0.5 < p < 0.55
    assert sign_flip([-1.0] * 12050 + [1.0] * 11950 + [0.0] * 70000) == p
    assert time.monotonic() - started < 30


def test_postgresql_value_over_its_length_limit_is_a_resource_limit_too(pytester, postgres_url):
    """The same on PostgreSQL: a value over its 1 GB limit ("requested length too large", or a string buffer that
    cannot grow: SQLSTATE 54000) was `runtime`; it is `memory`, naming the limit."""
    pytester.path.joinpath("schema.sql").write_text("CREATE TABLE t (id INTEGER); INSERT INTO t VALUES (1);\n")
    write(pytester, "pg.sqleval.yaml", f"""
    database: {{url: "{postgres_url}", setup: [schema.sql]}}
    cases:
      - id: repeat
        gold: SELECT id FROM t
        predicted: SELECT repeat('x', 2000000000)
      - id: string-agg
        gold: SELECT id FROM t
        predicted: SELECT string_agg(repeat('x', 100000000), '') FROM generate_series(1, 12)
    """)
    result = run(pytester, "--sqleval-json=pg.json")
    assert result.ret == 0, result.stdout.str()
    for case in json.loads((pytester.path / "pg.json").read_text())["cases"]:
        assert case["error"]["kind"] == "memory", case["error"]
        assert "1 GB" in case["error"]["message"] and "cannot be raised" in case["error"]["message"]
