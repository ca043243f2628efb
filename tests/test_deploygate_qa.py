"""The deploy gate on inputs nobody tuned for (QA): hand-edited recorded gate options."""

from __future__ import annotations

import json

import pytest

from pytest_sqleval.cli import main


def _report(gates: dict) -> dict:
    cases = [{"suite": "s", "id": f"c{i}", "index": i, "outcome": outcome, "valid": True,
              "execution_match": outcome == "passed", "soft_f1": 1.0 if outcome == "passed" else 0.5,
              "exact_match": None, "passed_rule": outcome == "passed"}
             for i, outcome in enumerate(["passed", "missed", "passed"])]
    return {"schema": "sqleval-report/1", "run": {"options": {"gates": gates}},
            "suites": [{"name": "s", "path": "s.sqleval.yaml"}], "cases": cases}


@pytest.mark.parametrize("key, value, message", [
    ("max_regressed", "abc", "max_regressed is a whole number of cases >= 0, not 'abc'"),
    ("max_regressed", -3, "max_regressed is a whole number of cases >= 0, not -3"),
    ("max_regressed", 1.5, "max_regressed is a whole number of cases >= 0, not 1.5"),
    ("max_regressed", True, "max_regressed is a whole number of cases >= 0, not True"),
    ("alpha", "x", "alpha must be a number between 0 and 1, not 'x'"),
    ("alpha", 5, "alpha must be between 0 and 1 (e.g. 0.05), not 5"),
    ("baseline", 5, "baseline is the path of a report, not 5"),
])
def test_a_recorded_gate_option_of_the_wrong_type_is_bad_input_for_gate_and_merge(tmp_path, capsys, key, value,
                                                                                   message):
    """`run.options.gates` as a hand edit leaves it: before, `sqleval gate` and `sqleval merge` ended in a TypeError
    traceback (exit 1, as if a gate had failed); now they exit 2 naming the file and the value."""
    path = tmp_path / "report.json"
    path.write_text(json.dumps(_report({key: value})), encoding="utf-8")
    for argv in (["gate", str(path)], ["merge", str(path), "-o", str(tmp_path / "m.json")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"sqleval {argv[0]}: {path}: a gate recorded in the report cannot be read: {message}" in err, err


def test_recorded_gate_options_as_the_plugin_writes_them_still_gate(tmp_path, capsys):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(_report({"baseline": None, "max_regressed": None, "fail_under_baseline": [],
                                        "alpha": 0.05})), encoding="utf-8")
    assert main(["gate", str(path), "--threshold", "overall:execution_accuracy=0.5"]) == 0
    assert "PASS overall:execution_accuracy" in capsys.readouterr().out
    assert main(["gate", str(path), "--threshold", "overall:execution_accuracy=0.9"]) == 1


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_gate_that_fails_on_an_empty_selection_shows_in_the_final_line_junit_and_markdown(pytester, workers):
    """`-k` selects no case, `overall:execution_accuracy=0.9` fails as "not computed" and sets exit status 1. The
    JSON had the gate, but the final line (`32 deselected`), JUnit (failures="0", no gate testcase) and the
    Markdown/HTML (not written) did not: a red build that no CI view explained."""
    import xml.etree.ElementTree as ET

    from deploygate_support import make_project

    make_project(pytester)
    out = pytester.path
    runner = pytester.runpytest_subprocess if workers else pytester.runpytest
    result = runner("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions=candidate.jsonl", *workers,
                    "--sqleval-threshold=overall:execution_accuracy=0.9", "-k", "nothing_is_named_so",
                    f"--junitxml={out / 'j.xml'}", f"--sqleval-markdown={out / 's.md'}", f"--sqleval-html={out / 's.html'}")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*FAIL overall:execution_accuracy: not computed in this run*",
                                 "*1 gate failed in *"])
    suite = ET.parse(out / "j.xml").getroot().find("testsuite")
    assert suite.get("failures") == "1"
    gate = suite.find("testcase")
    assert (gate.get("classname"), gate.get("name")) == ("sqleval.gates", "overall::execution_accuracy")
    assert gate.find("failure") is not None
    text = (out / "s.md").read_text(encoding="utf-8")
    assert text.startswith("## ❌ sqleval: 1 of 1 gate failed\n")
    assert "| ❌ | overall::execution_accuracy | – | 0.9000 |" in text
    assert "overall::execution_accuracy" in (out / "s.html").read_text(encoding="utf-8")


def test_sqleval_gate_on_one_shards_report_warns_that_it_judges_part_of_the_run(tmp_path, capsys):
    """pytest never lets a shard's gates fail its job; `sqleval gate shard-1.json` judged the part silently, so a
    pipeline gating a shard's artifact instead of the merge passed on a third of the cases."""
    report = _report({})
    report["run"]["shard"] = "1/3"
    path = tmp_path / "shard-1.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    assert main(["gate", str(path), "--threshold", "overall:execution_accuracy=0.5"]) == 0  # the verdict is kept
    err = capsys.readouterr().err
    assert ("warning: the report is shard 1/3 of its run alone: its gates judge part of the cases; gate the "
            "shards' `sqleval merge` instead") in err
    report["run"]["shard"] = None
    path.write_text(json.dumps(report), encoding="utf-8")
    assert main(["gate", str(path)]) == 0
    assert "shard" not in capsys.readouterr().err


def test_a_shards_failed_gate_does_not_mark_its_markdown_or_html_failed():
    """README: the headline and a suite's heading are ❌ "whenever pytest exits 1". A shard exits 0 on a failed gate
    (its JUnit shows it skipped, its final line does not count it), but its Markdown headline and suite headings
    were ❌ and its HTML header failed. Now ⚠️ with the shard named; the gate rows keep their ❌; a case error still
    marks the shard failed."""
    from ci_support import full_report
    from pytest_sqleval.report.html import render_html
    from pytest_sqleval.report.markdown import render_markdown

    whole = full_report()
    whole["suites"][0]["outcomes"]["error"] = 0
    whole["run"]["shard"] = None
    text = render_markdown(whole)
    assert text.startswith("## ❌ sqleval: 1 of 2 gates failed\n") and "### ❌ Suite <code>shop</code>" in text
    shard = json.loads(json.dumps(whole))
    shard["run"]["shard"] = "2/3"
    text = render_markdown(shard)
    assert text.startswith("## ⚠️ sqleval: 1 of 2 gates failed on shard 2/3's part (`sqleval gate` on the merged "
                           "report decides)\n"), text[:200]
    assert "### ✅ Suite <code>shop</code>" in text
    assert "| ❌ | shop::max_regressed |" in text
    assert '<header class="passed">' in render_html(shard)
    assert '<header class="failed">' in render_html(whole)
    shard["suites"][0]["outcomes"]["error"] = 1  # a broken gold fails a shard's job too
    assert render_markdown(shard).startswith("## ❌ sqleval:")
