"""Second QA look at the reports (terminal summary, JSON, Markdown, HTML, JUnit) with inputs no one tuned for:
suites with nothing scored, unicode / RTL / HTML-special names, a `|` in a cell, thresholds on every kind."""

from __future__ import annotations

import json
import re
import sqlite3
import textwrap

import pytest


@pytest.fixture
def db(pytester: pytest.Pytester) -> pytest.Pytester:
    con = sqlite3.connect(pytester.path / "d.sqlite")
    con.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(1, "x"), (2, "y|z"), (3, "<b>")])
    con.commit()
    con.close()
    return pytester


def suite(pytester: pytest.Pytester, name: str, text: str) -> None:
    pytester.makefile(".sqleval.yaml", **{name: textwrap.dedent(text)})


def run(pytester: pytest.Pytester, *args: str):
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    return runner("--sqleval", "-p", "no:cacheprovider", *args)


BROKEN_GOLD = """
    suite: broken
    database: d.sqlite
    cases:
      - id: e1
        gold: SELECT nope FROM t
        predicted: SELECT a FROM t
    """


# --------------------------------------------------------------------------- Markdown
def test_a_run_whose_only_case_errored_is_not_green_in_markdown(db):
    """A broken gold makes pytest exit 1: the step summary / PR comment must not head it with a green check, nor
    mark the suite that holds it as passed."""
    suite(db, "c", BROKEN_GOLD)
    out = db.path / "r.md"
    html = db.path / "r.html"
    result = run(db, f"--sqleval-markdown={out}", f"--sqleval-html={html}")
    assert result.ret == 1
    text = out.read_text(encoding="utf-8")
    first = text.splitlines()[0]
    assert first.startswith("## ❌"), first
    assert "**1 case** in 1 suite: 1 error" in text
    # which case errored and why, not only a count
    assert "- <code>e1</code>: the gold query failed on " in text and "no such column: nope" in text
    assert "### ❌ Suite <code>broken</code>" in text
    page = html.read_text(encoding="utf-8")
    assert '<header class="failed">' in page and '<header class="passed">' not in page


def test_markdown_cells_show_link_and_emphasis_syntax_as_text(db):
    """A suite name or difficulty label is data (imported datasets write them): in the step summary / PR comment
    it must not become a link, an image fetched from another site, bold text or code; a `|` must not split a cell."""
    suite(db, "m", """
        suite: "[click](https://evil.example/x) ![i](https://evil.example/p.png) **bold** `tick` a|b \\u202eRLO"
        database: d.sqlite
        thresholds: {execution_accuracy: 0.9}
        cases:
          - id: m1
            gold: SELECT a FROM t
            predicted: SELECT b FROM t
            difficulty: "_em_ [l](https://evil.example) x|y \\x1b[31mred"
        """)
    out = db.path / "r.md"
    assert run(db, f"--sqleval-markdown={out}").ret == 1
    text = out.read_text(encoding="utf-8")
    gate = next(line for line in text.splitlines() if line.startswith("| ❌ |"))
    level = next(line for line in text.splitlines() if "evil.example)" in line and line.startswith("| ") and "❌" not in line)
    # the difficulty row ends with its 95% intervals (4 cells "[0.2065, 1.0000]": the plugin's, not the data)
    level, intervals = re.subn(r" \[\d\.\d{4}, \d\.\d{4}\] \|", "", level)
    assert intervals == 4
    for row in (gate, level):
        unescaped = re.sub(r"\\.", "", row)  # what is left once every backslash escape is taken out
        assert not re.search(r"[\[\]`*]", unescaped), row
        assert not re.search(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])", unescaped), row
    assert "\x1b" not in text and "\u202e" not in text  # shown as escapes, never raw
    assert "\\\\u202eRLO" in gate and "\\\\x1b\\[31mred" in level
    # the gate row keeps its 5 cells, the difficulty row its 7: no unescaped `|` inside a cell
    assert len(re.findall(r"(?<!\\)\|", gate)) == 6
    assert len(re.findall(r"(?<!\\)\|", level)) == 8


# --------------------------------------------------------------------------- terminal summary
def test_a_suite_with_no_scored_case_says_so_instead_of_an_empty_table(db):
    """Every case an error of the suite: the summary says nothing was scored (no bare table header, no overall line
    ending in a colon); a threshold on it fails as not computed, never as a silent zero or a pass."""
    suite(db, "c", BROKEN_GOLD.replace("cases:", "thresholds: {execution_accuracy: 0.5}\n    cases:"))
    result = run(db)
    assert result.ret == 1
    text = result.stdout.str()
    assert "95% interval" not in text
    result.stdout.fnmatch_lines([
        "suite broken (c.sqleval.yaml)",
        "  1 case: 1 error | *",
        "  no case was scored: no metrics",
        "  FAIL execution_accuracy: not computed in this run (no case produced it), required >= 0.50",
        "overall (1 suite, 0 scored cases, micro-average): no metrics",
    ])


# --------------------------------------------------------------------------- JSON report
EDGE_SUITES = {
    "a": """
        suite: "עברית 🚀 a|b <script>x</script>"
        database: d.sqlite
        thresholds: {execution_accuracy: 0.3, soft_f1: 0.2, valid_syntax: 0.5, error_count: 3, exact_match: 0.1}
        cases:
          - id: ç1
            question: "what | is <script>alert(1)</script>?"
            gold: SELECT a FROM t WHERE b = '<script>|'
            predicted: SELECT a FROM t WHERE b = '<script>|'
            tags: [tg]
            metadata: {source: "x|y"}
          - id: c2
            gold: SELECT a FROM t
            predicted: SELECT b FROM t
          - id: c3
            gold: SELECT a FROM t
            predicted: SELEC a
        """,
    "b": """
        suite: inter
        database: d.sqlite
        thresholds: {interaction_match: 0.9, question_match: 0.1}
        cases:
          - id: i1
            interaction:
              - {question: "q1", gold: "SELECT a FROM t", predicted: "SELECT a FROM t"}
              - {question: "q2", gold: "SELECT a FROM t WHERE a > 1", predicted: "SELECT a FROM t"}
          - id: i2
            interaction:
              - {gold: "SELECT b FROM t", predicted: "SELECT b FROM t"}
        """,
    "c": BROKEN_GOLD,
}

RATE = (int, float)


def _check_interval_block(intervals: dict, metrics: dict) -> None:
    for key, bounds in intervals.items():
        assert key in metrics, key
        lo, hi = bounds
        assert 0.0 <= lo <= metrics[key] <= hi <= 1.0, (key, bounds, metrics[key])


def test_every_documented_key_has_its_documented_type_on_a_real_run(db):
    """docs/report-format.md, key by key, on a run with unicode names, an interaction suite and a suite whose only
    case errored."""
    for name, text in EDGE_SUITES.items():
        suite(db, name, text)
    out = db.path / "r.json"
    assert run(db, f"--sqleval-json={out}", "--sqleval-threshold", "overall:error_count=0").ret == 1
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["schema"] == "sqleval-report/1"
    run_block = data["run"]
    for key in ("plugin_version", "pytest_version", "started", "finished"):
        assert isinstance(run_block[key], str)
    for key in ("started", "finished"):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", run_block[key])
    assert isinstance(run_block["duration_s"], RATE) and run_block["git"] is None  # pytester's dir is no repository
    assert {"python", "pytest", "sqlglot", "sqlalchemy", "pyyaml"} <= set(run_block["versions"])
    assert set(run_block["files"]) >= {"a.sqleval.yaml", "b.sqleval.yaml", "c.sqleval.yaml", "d.sqlite"}
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in run_block["files"].values())
    assert run_block["prediction_files"] == [] and run_block["shard"] is None
    options = run_block["options"]
    assert {"timeout", "max_rows", "strict", "max_memory", "predictions", "database_url"} <= set(options)
    assert options["thresholds"] == ["overall:error_count=0"]
    assert set(options["gates"]) == {"baseline", "max_regressed", "fail_under_baseline", "alpha"}

    suites = data["suites"]
    assert [s["path"] for s in suites] == ["a.sqleval.yaml", "b.sqleval.yaml", "c.sqleval.yaml"]
    for s in suites:
        for key in ("name", "path", "cases", "outcomes", "execution", "exact_match_profile", "pass_if", "metrics",
                    "by_difficulty", "by_gold_sql", "by_tag", "thresholds", "passed", "intervals"):
            assert key in s, (s["name"], key)
        assert set(s["outcomes"]) >= {"passed", "missed", "failed", "error"}
        assert sum(s["outcomes"].values()) == s["cases"]
        _check_interval_block(s["intervals"], s["metrics"])
        for bucket in [*s["by_difficulty"].values(), *s["by_tag"].values()]:
            _check_interval_block(bucket["intervals"], bucket)
        for verdict in s["thresholds"]:
            assert set(verdict) >= {"metric", "value", "passed", "source"} and ("min" in verdict) != ("max" in verdict)
        assert "error_count" not in s["intervals"] and "vacuous" not in s["intervals"]
    uni, inter, broken = suites
    assert set(uni["intervals"]) == {"valid_syntax", "execution_accuracy", "soft_f1", "bird_soft_f1", "exact_match",
                                     "pass_rate"}
    assert {"question_match", "interaction_match", "interaction_execution_accuracy"} <= set(inter["intervals"])
    assert {b: {k: v for k, v in row.items() if k != "intervals"} for b, row in inter["by_turn"].items()} == {
        "1": {"turns": 2, "question_match": 1.0, "execution_accuracy": 1.0},
        "2": {"turns": 1, "question_match": 0.0, "execution_accuracy": 0.0}}
    assert set(inter["by_turn"]["1"]["intervals"]) == {"question_match", "execution_accuracy"}  # each rate has one
    assert broken["metrics"] == {} and broken["intervals"] == {} and broken["outcomes"]["error"] == 1

    overall = data["overall"]
    assert (overall["suites"], overall["cases"], overall["scored"]) == (3, 7, 6)
    assert overall["metrics"]["error_count"] == 1 and overall["metrics"]["execution_accuracy"] == pytest.approx(3 / 6)
    # micro-average: each case once, whatever its suite's size (a: 1, 0, 0; inter: 1, 0.8 (gold {2,3} in {1,2,3}), 1)
    assert overall["metrics"]["soft_f1"] == pytest.approx(3.8 / 6)
    assert inter["metrics"]["soft_f1"] == pytest.approx(2.8 / 3) and uni["metrics"]["soft_f1"] == pytest.approx(1 / 3)
    _check_interval_block(overall["intervals"], overall["metrics"])
    assert overall["thresholds"] == [{"metric": "overall:error_count", "max": 0.0, "value": 1.0, "passed": False,
                                      "source": "cli"}]
    assert overall["passed"] is False and data["baseline"] is None

    gates = data["gates"]
    assert len(gates) == 5 + 2 + 1
    for gate in gates:
        assert set(gate) >= {"name", "kind", "suite", "metric", "value", "limit", "passed", "message", "bound",
                             "source"}
        assert gate["kind"] == "threshold" and gate["message"].startswith("PASS " if gate["passed"] else "FAIL ")
    assert {g["name"] for g in gates if not g["passed"]} == {"inter::interaction_match", "overall::error_count"}

    cases = data["cases"]
    assert [(c["suite"], c["id"]) for c in cases] == [
        (uni["name"], "ç1"), (uni["name"], "c2"), (uni["name"], "c3"),
        ("inter", "i1/1"), ("inter", "i1/2"), ("inter", "i2/1"), ("broken", "e1")]
    for c in cases:
        for key in ("database", "difficulty", "tags", "question", "gold", "predicted", "valid", "error",
                    "execution_match", "soft_f1", "exact_match", "vacuous", "outcome", "mismatch",
                    "exact_match_reason", "difficulty_source", "order_note", "bird_soft_f1", "index", "passed_rule",
                    "execution_match_first"):
            assert key in c, (c["id"], key)
        assert c["outcome"] in {"passed", "missed", "failed", "error"}
        assert c["error"] is None or set(c["error"]) >= {"kind", "message"}
    by = {c["id"]: c for c in cases}
    assert by["ç1"]["vacuous"] is True and by["ç1"]["metadata"] == {"source": "x|y"}
    assert by["c3"]["error"]["kind"] == "syntax" and by["c3"]["valid"] is False  # the engine cannot parse `SELEC a`
    assert (by["i1/2"]["interaction"], by["i1/2"]["turn"]) == ("i1", 2)
    assert by["e1"]["outcome"] == "error" and by["e1"]["soft_f1"] is None


def test_serial_and_xdist_give_the_same_json_and_markdown_on_edge_suites(db):
    for name, text in EDGE_SUITES.items():
        suite(db, name, text)
    texts = {}
    for label, extra in (("serial", ()), ("xdist", ("-n", "2"))):
        out, md = db.path / f"{label}.json", db.path / f"{label}.md"
        assert run(db, f"--sqleval-json={out}", f"--sqleval-markdown={md}", *extra).ret == 1
        data = json.loads(out.read_text(encoding="utf-8"))
        for key in ("started", "finished", "duration_s"):
            data["run"].pop(key)
        texts[label] = (json.dumps(data, sort_keys=True), md.read_text(encoding="utf-8"))
    assert texts["serial"][0] == texts["xdist"][0]
    assert texts["serial"][1] == texts["xdist"][1]


def test_a_difficulty_level_with_a_dot_can_be_gated(db):
    """`by_difficulty.<level>.<metric>`: a level is free text (`level.2`, `1.5`); the metric is the last part."""
    suite(db, "s", """
        suite: dots
        database: d.sqlite
        thresholds: {by_difficulty.level.2.execution_accuracy: 0.5, by_difficulty.1.5.soft_f1: 0.5}
        cases:
          - {id: a1, gold: SELECT a FROM t, predicted: SELECT a FROM t, difficulty: level.2}
          - {id: a2, gold: SELECT a FROM t, predicted: SELECT b FROM t, difficulty: "1.5"}
        """)
    result = run(db)
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "  FAIL by_difficulty.1.5.soft_f1 0.00 < 0.50",
        "  PASS by_difficulty.level.2.execution_accuracy 1.00 >= 0.50",
    ])


# --------------------------------------------------------------------------- HTML
def test_html_header_is_failed_and_the_charts_open_on_a_suite_with_data(db):
    """A suite whose every case errored comes first by path and is marked failed, but has nothing to chart: the
    chart picker opens on the failed suite that has figures."""
    suite(db, "a_broken", BROKEN_GOLD)
    suite(db, "b_real", """
        suite: real
        database: d.sqlite
        thresholds: {execution_accuracy: 0.9}
        cases:
          - {id: r1, gold: SELECT a FROM t, predicted: SELECT b FROM t}
        """)
    page = db.path / "r.html"
    assert run(db, f"--sqleval-html={page}").ret == 1
    text = page.read_text(encoding="utf-8")
    assert '<header class="failed">' in text
    assert '<option value="1" selected>real</option>' in text
