"""--sqleval-markdown: the GitHub step summary / PR comment, from a run and from a report dict; `sqleval report`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from ci_support import MISSES, WORKERS, bare_report, full_report, make_shop
from pytest_sqleval.report.markdown import render_markdown


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    return make_shop(pytester)


def run(pytester: pytest.Pytester, *args: str):
    """In process when serial (fast); a subprocess for -n 2."""
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    return runner("--sqleval", "-p", "no:cacheprovider", *args)


def _section(text: str, start: str, end: str = "</details>") -> str:
    begin = text.index(start)
    return text[begin:text.index(end, begin)]


def test_markdown_of_a_run(shop):
    """Serial here; test_markdown_serial_and_xdist_are_identical covers -n 2."""
    out = shop.path / "out" / "summary.md"
    result = run(shop, f"--sqleval-markdown={out}", f"--sqleval-json={shop.path / 'r.json'}")
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"sqleval Markdown written to {out}"])
    text = out.read_text(encoding="utf-8")
    assert text.startswith("## ✅ sqleval: all 1 gate passed\n")
    assert "**7 cases** in 1 suite: 2 passed, 5 missed" in text
    assert "| execution accuracy | 0.2857 |" in text  # 2 of 7
    assert "| ✅ | shop::execution_accuracy | 0.2857 | 0.2000 |" in text
    misses = _section(text, "<details><summary><b>Misses by reason (5)</b>")
    assert "values 2, column_count 1, no_prediction 1, syntax 1" in misses  # largest group first
    for case_id, reason in MISSES.items():
        group = misses.index(f"**{reason}**")
        assert misses.index(f"<code>{case_id}</code>") > group  # each miss listed under its reason
    assert "count-open" not in misses
    assert "<details><summary>By difficulty (3)</summary>" in text
    # rendering the JSON report of the same run gives the same text
    assert render_markdown(json.loads((shop.path / "r.json").read_text())) == text


def test_markdown_serial_and_xdist_are_identical(shop):
    texts = []
    for workers in ([], ["-n", "2"]):
        out = shop.path / f"summary{len(workers)}.md"
        assert run(shop, f"--sqleval-markdown={out}", *workers).ret == 0
        texts.append(out.read_text(encoding="utf-8"))
    assert texts[0] == texts[1]


@WORKERS
def test_a_failed_gate_heads_the_markdown(shop, workers):
    out = shop.path / "summary.md"
    result = run(shop, f"--sqleval-markdown={out}", "--sqleval-threshold", "execution_accuracy=0.9", *workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = out.read_text(encoding="utf-8")
    assert text.startswith("## ❌ sqleval: 1 of 1 gate failed\n")
    assert "| ❌ | shop::execution_accuracy | 0.2857 | 0.9000 |" in text
    assert "### ❌ Suite <code>shop</code>" in text


def test_appends_to_the_github_step_summary_and_overwrites_elsewhere(shop, monkeypatch):
    summary = shop.path / "step_summary.md"
    summary.write_text("## an earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    for _ in range(2):
        result = run(shop, f"--sqleval-markdown={summary}")
        assert result.ret == 0
        result.stdout.fnmatch_lines(["sqleval Markdown appended to the step summary*"])
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## an earlier step\n")
    assert text.count("sqleval: all 1 gate passed") == 2
    other = shop.path / "comment.md"
    for _ in range(2):
        assert run(shop, f"--sqleval-markdown={other}").ret == 0
    assert other.read_text(encoding="utf-8").count("sqleval: all 1 gate passed") == 1


def test_ini_option_expands_the_step_summary_variable(shop, monkeypatch):
    summary = shop.path / "gh" / "summary.md"
    summary.parent.mkdir()
    summary.write_text("", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    shop.makeini("[pytest]\nsqleval_markdown = $GITHUB_STEP_SUMMARY\n")
    assert run(shop).ret == 0
    assert summary.read_text(encoding="utf-8").startswith("## ✅ sqleval:")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    result = run(shop)
    result.stdout.fnmatch_lines(["*Markdown not written: '$GITHUB_STEP_SUMMARY' names an unset environment variable*"])
    assert not list(shop.path.glob("$*"))


def test_full_report_shows_intervals_deltas_gates_and_regressions():
    text = render_markdown(full_report())
    assert text.startswith("## ❌ sqleval: 1 of 2 gates failed\n")
    assert "compared with baseline <code>baseline.json</code> (1 regressed, 1 fixed)" in text
    assert "> ⚠️ the suite file shop.sqleval.yaml changed since the baseline" in text
    overall = text[text.index("### Overall (6 cases"):text.index("### Gates")]
    assert "| execution accuracy | 0.4000 | [0.1176, 0.7693] | 0.5000 | -0.1000 ▼ | [-0.4500, 0.3000] | 1.0000 |" in overall
    suite = text[text.index("### ❌ Suite <code>shop</code>"):]
    assert "| metric | value | 95% CI | per gold SQL | baseline | Δ | Δ 95% CI | p |" in suite
    assert "| soft F1 | 0.6000 | [0.2000, 1.0000] | – | 0.5500 | +0.0500 ▲ | [-0.2000, 0.3000] | 0.7500 |" in suite
    assert "| valid syntax | 0.8000 | [0.3755, 0.9638] | – | – | – | – | – |" in suite
    assert "| ❌ | shop::max_regressed | 1 | 0 | FAIL 1 regressed case &gt; 0 allowed |" in text
    assert "| ✅ | shop::execution_accuracy | 0.4000 | 0.3000 |" in text
    assert "1 regressed, 1 fixed, 1 still missed, 1 still passed, 1 new, 1 removed" in suite
    regressed = _section(suite, "Regressed cases (1)")
    assert "<code>c-regressed</code>: values: 1 gold row is missing \\| 1 extra" in regressed  # pipe escaped
    assert "d-syntax" not in regressed
    misses = _section(suite, "<b>Misses by reason (3)</b>")
    assert "row_count 1, syntax 1, values 1" in misses


def test_the_commit_of_the_run_is_named():
    report = full_report()
    report["run"]["git"] = {"commit": "0123456789abcdef0123", "dirty": True}
    assert "· commit <code>0123456789ab (dirty)</code> ·" in render_markdown(report)


def test_absent_blocks_are_skipped():
    text = render_markdown(bare_report())
    assert "95% CI" not in text and "baseline" not in text and "### Overall" not in text
    assert "| metric | value | per gold SQL |" in text
    assert "| ✅ | shop::execution_accuracy | 0.4000 | 0.3000 | PASS execution_accuracy 0.4000 &gt;= 0.3000 |" in text
    assert "Regressed" not in text


def _many_misses(report: dict, suites: int, per_suite: int) -> dict:
    template = report["suites"][0]
    report["suites"], report["cases"] = [], []
    for k in range(suites):
        report["suites"].append(dict(template, name=f"suite-{k}"))
        for i in range(per_suite):
            report["cases"].append({"suite": f"suite-{k}", "id": f"case-{i:04d}-with-a-long-identifier",
                                    "outcome": "missed", "error": {"kind": "syntax", "message": "near FROM: x" * 5}})
    return report


def test_long_lists_are_capped_and_the_text_fits_a_pr_comment():
    text = render_markdown(_many_misses(bare_report(), suites=1, per_suite=100))
    assert text.count("<code>case-") == 30
    assert "- … and 70 more (all of them are in the JSON report)" in text
    huge = render_markdown(_many_misses(bare_report(), suites=40, per_suite=100))
    assert len(huge) <= 65000
    assert huge.count("Suite <code>suite-") == 40  # every suite is still there, with fewer ids per group
    assert huge.count("more (all of them are in the JSON report)") == 40


def test_cells_cannot_break_the_table_or_inject_html():
    report = bare_report()
    report["cases"][3]["error"]["message"] = "bad | <script>alert(1)</script>\nsecond line"
    text = render_markdown(report)
    line = next(line for line in text.splitlines() if "<code>d-syntax</code>" in line)
    assert line == "- <code>d-syntax</code>: syntax: bad \\| &lt;script&gt;alert(1)&lt;/script&gt; second line"


def _sqleval_report_command() -> list[str]:
    """`sqleval report` once the console command has it, else the subcommand's own module."""
    exe = shutil.which("sqleval")
    if exe:
        if subprocess.run([exe, "report", "--help"], capture_output=True).returncode == 0:
            return [exe, "report"]
    return [sys.executable, "-m", "pytest_sqleval.cli_report", "report"]


def test_sqleval_report_renders_the_same_files(shop):
    report, md, html = shop.path / "r.json", shop.path / "run.md", shop.path / "run.html"
    assert run(shop, f"--sqleval-json={report}", f"--sqleval-markdown={md}", f"--sqleval-html={html}").ret == 0
    command = _sqleval_report_command()
    done = subprocess.run([*command, str(report), "--markdown", str(shop.path / "again.md"),
                           "--html", str(shop.path / "again.html")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (shop.path / "again.md").read_text(encoding="utf-8") == md.read_text(encoding="utf-8")
    assert (shop.path / "again.html").read_text(encoding="utf-8") == html.read_text(encoding="utf-8")


def test_sqleval_report_bad_input_is_a_clear_message(tmp_path):
    command = _sqleval_report_command()
    missing = subprocess.run([*command, str(tmp_path / "nope.json"), "--markdown", "x.md"], capture_output=True, text=True)
    assert missing.returncode == 2
    assert f"{tmp_path / 'nope.json'}: no such file" in missing.stderr and "Traceback" not in missing.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": "sqleval-report/1",\n  "suites": [,]}\n')
    bad = subprocess.run([*command, str(broken), "--html", "x.html"], capture_output=True, text=True)
    assert bad.returncode == 2 and f"{broken}:2:" in bad.stderr and "not JSON" in bad.stderr
    other = tmp_path / "other.json"
    other.write_text('{"schema": "something-else"}')
    wrong = subprocess.run([*command, str(other), "--html", "x.html"], capture_output=True, text=True)
    assert wrong.returncode == 2 and "not a sqleval-report/1 report (schema: 'something-else')" in wrong.stderr
    nothing = subprocess.run([*command, str(other)], capture_output=True, text=True)
    assert nothing.returncode == 2 and "give --markdown PATH and/or --html PATH" in nothing.stderr


def _many_suites(count: int) -> dict:
    """The full report's suite, cases and comparison repeated under ``count`` names (`sqleval import spider` writes
    one suite per database)."""
    report = full_report()
    names = [f"db-{k:04d}" for k in range(count)]
    suite, cases, comparison = report["suites"][0], report["cases"], report["baseline"]["suites"][0]
    report["suites"] = [dict(suite, name=name, path=f"{name}.sqleval.yaml") for name in names]
    report["cases"] = [dict(case, suite=name) for name in names for case in cases]
    report["baseline"]["suites"] = [dict(comparison, name=name) for name in names]
    return report


def test_many_suites_still_fit_a_pr_comment():
    """Without any list, 300 suites' sections were 190,000 characters, which GitHub refuses as a comment: then each
    suite is one row, with the failed gates and the regressed cases."""
    text = render_markdown(_many_suites(300))
    assert len(text) <= 65000
    assert text.startswith("## ❌ sqleval: 1 of 2 gates failed\n")
    assert "| ❌ | shop::max_regressed | 1 | 0 | FAIL 1 regressed case &gt; 0 allowed |" in text
    assert "1 passed gate not shown (all are in the JSON report)." in text
    rows = [line for line in text.splitlines() if line.startswith(("| ✅ | <code>db-", "| ❌ | <code>db-"))]
    assert len(rows) == 300
    assert rows[0].startswith("| ❌ | <code>db-0000</code> | 5 | ")
    assert "**Regressed cases (300)**: <code>db-0000::c-regressed</code>" in text
    assert "and 270 more" in text


def test_a_report_too_large_even_in_rows_is_cut_at_a_line():
    text = render_markdown(_many_suites(300), max_chars=8000)  # as 3,000 suites against GitHub's 65,000
    assert len(text) <= 8000
    assert text.endswith("_… cut here to stay under GitHub's size limit: the JSON and HTML reports have all of it._\n")
    assert 10 < text.count("| ❌ | <code>db-") < 300
