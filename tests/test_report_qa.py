"""Reports at scale and their intervals: Markdown in linear time in the number of suites, breakdown intervals in the
terminal summary and the Markdown report, a user's unbounded mean kept off the HTML rate chart."""

from __future__ import annotations

import contextlib
import copy
import json
import re
import time

import pytest

from ci_support import full_report, make_shop
from conftest import chromium_executable
from pytest_sqleval.registry import builtin_registry, use_registry
from pytest_sqleval.report import view
from pytest_sqleval.report.html import chart_data, render_html
from pytest_sqleval.report.markdown import render_markdown


# --------------------------------------------------------------------------- many suites
def many_suites(count: int) -> dict:
    """``count`` copies of the full report's first suite (as ``sqleval import spider`` writes one per database),
    each with its cases, its baseline suite and a gate (every seventh failed)."""
    report = full_report()
    shop, base = report["suites"][0], report["baseline"]["suites"][0]
    shop_cases = [c for c in report["cases"] if c["suite"] == "shop"]
    report["suites"], report["cases"], report["baseline"]["suites"], report["gates"] = [], [], [], []
    for i in range(count):
        name = f"db{i:05d}"
        report["suites"].append(dict(copy.deepcopy(shop), name=name, path=f"{name}.sqleval.yaml"))
        report["baseline"]["suites"].append(dict(copy.deepcopy(base), name=name))
        report["cases"] += [dict(c, suite=name) for c in shop_cases]
        report["gates"].append({"name": f"{name}::execution_accuracy", "kind": "threshold", "suite": name,
                                "metric": "execution_accuracy", "value": 0.4, "limit": 0.3, "passed": i % 7 != 0,
                                "message": f"{'FAIL' if i % 7 == 0 else 'PASS'} execution_accuracy"})
    return report


def _seconds(function, *args) -> float:
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def test_markdown_of_many_suites_takes_time_linear_in_their_number():
    """3,000 suites took 44 s: every suite looked its gates, baseline suite and cases up by scanning them all."""
    small, large = many_suites(200), many_suites(2000)
    render_markdown(many_suites(5))  # warm-up (imports, the registry)
    small_time = min(_seconds(render_markdown, small) for _ in range(2))
    large_time = _seconds(render_markdown, large)
    assert large_time < 30 * small_time, (small_time, large_time)


@pytest.mark.parametrize("report", [full_report(), many_suites(25)], ids=["full", "25 suites"])
def test_markdown_and_html_are_the_same_with_and_without_the_indexes(monkeypatch, report):
    expected = (render_markdown(report), render_html(report))
    monkeypatch.setattr(view, "indexed", lambda report: contextlib.nullcontext())  # the scans, as before
    assert (render_markdown(report), render_html(report)) == expected


def test_a_suite_name_twice_finds_the_first_baseline_suite_as_the_scan_does():
    report = many_suites(3)
    report["baseline"]["suites"].append(dict(report["baseline"]["suites"][1], pairs={"regressed": ["x", "y"]}))
    with view.indexed(report):
        assert view.pairs(report, "db00001") == report["baseline"]["suites"][1]["pairs"]
        assert [c["id"] for c in view.cases_of(report, "db00002")] == [c["id"] for c in view.cases_of(report)
                                                                       if c["suite"] == "db00002"]
        assert not view.suite_passed(report, report["suites"][0]) and view.suite_passed(report, report["suites"][1]) \
            is view.suite_passed(copy.deepcopy(report), report["suites"][1])


# --------------------------------------------------------------------------- breakdown intervals
def test_markdown_breakdowns_show_the_rows_intervals():
    report = full_report()
    easy = report["suites"][0]["by_difficulty"]["easy"]
    easy["intervals"] = {"execution_accuracy": [0.2077, 0.9385], "soft_f1": [0.3333, 1.0]}
    text = render_markdown(report)
    table = text[text.index("<summary>By difficulty (2)"):]
    table = table[:table.index("</details>")]
    assert "| difficulty | cases | valid | errors | EX | soft_f1 | EM | EX 95% CI | soft_f1 95% CI |" in table
    assert "| easy | 3 | 0.6667 | 1 | 0.6667 | 0.6667 | 0.6667 | [0.2077, 0.9385] | [0.3333, 1.0000] |" in table
    assert "| medium | 2 | 1.0000 | 0 | 0.0000 | 0.5000 | 0.0000 | – | – |" in table  # a row without them
    tags = text[text.index("<summary>By tag (1)"):]
    assert "95% CI" not in tags[:tags.index("</details>")]  # no row has any: no column


def test_the_terminal_and_markdown_breakdowns_show_the_json_reports_intervals(pytester):
    shop = make_shop(pytester)
    out, report_path = shop.path / "summary.md", shop.path / "r.json"
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider", f"--sqleval-markdown={out}",
                            f"--sqleval-json={report_path}")
    assert result.ret == 0
    report = json.loads(report_path.read_text(encoding="utf-8"))
    easy = report["suites"][0]["by_difficulty"]["easy"]  # 4 cases, 2 pass: Wilson [0.1500, 0.8500]
    low, high = easy["intervals"]["execution_accuracy"]
    interval = f"[{low:.4f}, {high:.4f}]"
    assert interval == "[0.1500, 0.8500]"
    lines = result.stdout.lines
    header = next(line for line in lines if line.startswith("  by difficulty"))
    assert re.search(r"cases +valid +errors +EX +soft_f1 +EM +valid 95% interval +EX 95% interval", header)
    row = next(line for line in lines if line.startswith("    easy "))
    assert row.split()[:7] == ["easy", "4", "0.5000", "2", "0.5000", "0.5000", "0.2500"]  # the values, as before
    assert interval in row
    assert next(line for line in lines if line.startswith("  by tag")).count("95% interval") == 4
    text = out.read_text(encoding="utf-8")
    assert f"| easy | 4 | 0.5000 | 2 | 0.5000 | 0.5000 | 0.2500 | [0.1500, 0.8500] | {interval} |" in text


# --------------------------------------------------------------------------- a user's mean on the HTML chart
@pytest.fixture
def latency_registry():
    registry = builtin_registry()
    registry.register("latency_ms", kind="mean", direction="lower", title="mean latency")
    registry.register("score", kind="mean", direction="higher")  # unbounded, but its values lie in [0, 1]
    use_registry(registry)
    yield registry
    use_registry(None)


def latency_report() -> dict:
    report = full_report()
    suite = report["suites"][0]
    suite["metrics"].update(latency_ms=250.0, score=0.7)
    suite["intervals"].update(latency_ms=[210.5, 289.25], score=[0.5, 0.9])
    return report


def test_a_mean_far_above_1_is_left_off_the_rate_chart_with_its_value(latency_registry):
    metrics = chart_data(latency_report())["suites"][0]["metrics"]
    assert "mean latency" not in metrics["labels"] and max(metrics["current"]) <= 1
    assert "score" in metrics["labels"] and "execution accuracy" in metrics["labels"]
    assert metrics["apart"] == [{"label": "mean latency", "current": 250.0, "interval": [210.5, 289.25],
                                 "baseline": None}]
    assert chart_data(full_report())["suites"][0]["metrics"]["apart"] == []


def test_the_page_shows_the_mean_beside_the_chart(latency_registry, tmp_path):
    from test_html import browse, console_errors, parse

    exe = chromium_executable()
    page = tmp_path / "report.html"
    page.write_text(render_html(latency_report()), encoding="utf-8")
    dumped = browse(exe, page, tmp_path, "--dump-dom")
    dom = parse(dumped.stdout)
    assert json.loads(dom.status["data-errors"]) == [] and console_errors(dumped.stderr) == []
    assert "metrics" in dom.status["data-charts"].split()
    apart = re.search(r'id="chart-metrics-apart"[^>]*>([^<]*)<', dumped.stdout)
    assert apart and "mean latency 250.0000, 95% CI [210.5000, 289.2500]" in apart.group(1)
    assert "score" not in apart.group(1)
