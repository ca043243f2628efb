"""QA of what a run shows and returns (summary, exit status, JSON, JUnit, Markdown, HTML, hooks) and of the
plugin's pytest manners, with inputs no one tuned for."""

from __future__ import annotations

import json
import sqlite3
import textwrap
import xml.etree.ElementTree as ET

import pytest

from conftest import chromium_executable, require_module


def _strict_json(text: str):
    """``json.loads`` that refuses what standard JSON has not (NaN, Infinity): what other tools' parsers do."""

    def refuse(constant: str):
        raise ValueError(f"not standard JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def db(pytester: pytest.Pytester) -> pytest.Pytester:
    con = sqlite3.connect(pytester.path / "d.sqlite")
    con.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(1, "x"), (2, "y|z"), (3, "<script>alert(1)</script>")])
    con.commit()
    con.close()
    return pytester


def suite(pytester: pytest.Pytester, text: str, name: str = "s") -> None:
    pytester.makefile(".sqleval.yaml", **{name: textwrap.dedent(text)})


# --------------------------------------------------------------------------- JSON report
def test_non_finite_numbers_and_sets_in_metadata_give_standard_json(db):
    """YAML reads .nan/.inf as floats and !!set as a set: the report must stay standard JSON (a NaN token breaks
    every strict parser, jq included) and the same in every process (a set's str() order is not)."""
    suite(db, """
        suite: meta
        database: d.sqlite
        cases:
          - id: m1
            gold: SELECT a FROM t
            predicted: SELECT a FROM t
            metadata: {nan: .nan, inf: .inf, ninf: -.inf, tags: !!set {zeta, alpha, mid}, big: 123456789012345678901234567890}
        """)
    report = db.path / "out" / "r.json"
    result = db.runpytest("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider")
    assert result.ret == 0
    data = _strict_json(report.read_text(encoding="utf-8"))
    assert data["cases"][0]["metadata"] == {"nan": "nan", "inf": "inf", "ninf": "-inf",
                                            "tags": ["alpha", "mid", "zeta"],
                                            "big": 123456789012345678901234567890}


# --------------------------------------------------------------------------- terminal summary
def test_a_suite_name_with_an_escape_or_a_newline_cannot_reach_the_log_raw(db):
    """The summary's suite line, breakdown labels and gate line show control characters as escapes: a name
    (imported datasets write them) must not colour the terminal or start a line a CI runner acts on (``::``)."""
    suite(db, """
        suite: "evil\\x1b[31mred\\n::error::injected"
        database: d.sqlite
        cases:
          - id: c1
            gold: SELECT a FROM t
            predicted: SELECT b FROM t
            difficulty: "hard\\n::warning::level"
        """)
    result = db.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-threshold", "execution_accuracy=0.5")
    assert result.ret == 1
    text = result.stdout.str()
    assert "\x1b[31mred" not in text
    assert not [line for line in text.splitlines() if line.lstrip().startswith("::")]
    result.stdout.fnmatch_lines([
        "suite evil\\x1b[31mred\\x0a::error::injected (s.sqleval.yaml)",
        "    hard\\x0a::warning::level *1 *",
        "  sqleval gate failed for suite evil\\x1b[31mred\\x0a::error::injected: exit status 1 comes from the gate",
    ])


def test_the_overall_line_is_left_out_when_no_suite_ran_and_counts_one_suite_in_the_singular(db):
    suite(db, """
        database: d.sqlite
        cases:
          - id: c1
            gold: SELECT a FROM t
            predicted: SELECT a FROM t
        """)
    nothing = db.runpytest("--sqleval", "-p", "no:cacheprovider", "-k", "no_such_case")
    assert nothing.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "overall (" not in nothing.stdout.str()
    one = db.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert one.ret == 0
    one.stdout.fnmatch_lines(["overall (1 suite, 1 scored cases, micro-average): *"])


# --------------------------------------------------------------------------- JUnit XML
CONTROL_SUITE = """
    suite: ctl
    database: d.sqlite
    thresholds: {execution_accuracy: 0.9}
    cases:
      - id: ok
        gold: SELECT a FROM t ORDER BY a
        predicted: SELECT a FROM t ORDER BY a
      - id: ctl
        question: "bell \\x07 vt \\x0b ünï 日本 \\U0001F600 & <b>"
        gold: SELECT b FROM t ORDER BY a
        predicted: "SELECT 'x\\x01y' || char(27) || '[31m]]>' || char(0) FROM t"
      - id: broken
        gold: SELECT nope FROM t
        predicted: SELECT 1
    """


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_junit_is_well_formed_with_control_characters_and_has_one_testcase_per_case(db, workers):
    suite(db, CONTROL_SUITE)
    xml = db.path / "junit.xml"
    result = db.runpytest("--sqleval", f"--junitxml={xml}", "-p", "no:cacheprovider", *workers)
    assert result.ret == 1  # a broken gold and a failed gate
    root = ET.parse(xml).getroot()  # raises on a control character or a bare "]]>" the writer let through
    cases = {(tc.get("classname"), tc.get("name")): tc for tc in root.iter("testcase")}
    assert sorted(cases) == [("s.sqleval.yaml", "broken"), ("s.sqleval.yaml", "ctl"), ("s.sqleval.yaml", "ok"),
                             ("sqleval.gates", "ctl::execution_accuracy")]
    children = {key: [c.tag for c in tc if c.tag != "properties"] for key, tc in cases.items()}
    assert children == {("s.sqleval.yaml", "broken"): ["error"], ("s.sqleval.yaml", "ctl"): ["skipped"],
                        ("s.sqleval.yaml", "ok"): [], ("sqleval.gates", "ctl::execution_accuracy"): ["failure"]}
    prop = {p.get("name"): p.get("value") for p in cases[("s.sqleval.yaml", "ctl")].iter("property")}
    record = json.loads(prop["sqleval"])
    assert record["outcome"] == "missed" and record["id"] == "ctl"
    assert "ünï 日本" in record["question"] and record["predicted"].startswith("SELECT 'x")
    suite_attrs = next(root.iter("testsuite")).attrib
    assert (suite_attrs["tests"], suite_attrs["errors"], suite_attrs["failures"], suite_attrs["skipped"]) == \
        ("4", "1", "1", "1")


# --------------------------------------------------------------------------- HTML in a browser
PWN = "<img src=x onerror=document.body.dataset.pwned={n}>"
CLOSE = "</script><script>document.body.setAttribute('data-pwned','{n}')</script>"


def test_hostile_text_of_a_real_run_is_shown_not_run_in_the_browser(db, tmp_path):
    """Suite name, question, tag-free difficulty, predicted SQL and the result values of a real run each carry a
    payload that would set an attribute if it ran; the page renders with none set, no script error, offline."""
    from test_html import browse, console_errors, parse

    exe = chromium_executable()
    suite(db, f"""
        suite: "{CLOSE.format(n='suite')}"
        database: d.sqlite
        cases:
          - id: ok
            gold: SELECT a FROM t
            predicted: SELECT a FROM t
          - id: bad
            question: "{PWN.format(n=1)}"
            difficulty: "{CLOSE.format(n='difficulty')}"
            gold: SELECT b FROM t
            predicted: "SELECT '{PWN.format(n=2)}' AS \\"{CLOSE.format(n='column')}\\" FROM t"
        """)
    page = db.path / "report.html"
    result = db.runpytest("--sqleval", "-p", "no:cacheprovider", f"--sqleval-html={page}")
    assert result.ret == 0
    text = page.read_text(encoding="utf-8")
    assert parse(text).external == []
    dumped = browse(exe, page, tmp_path, "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = parse(dumped.stdout)
    assert dom.status.get("data-ready") == "1", dumped.stderr[-2000:]
    assert json.loads(dom.status["data-errors"]) == [] and console_errors(dumped.stderr) == []
    assert 'data-pwned="' not in dumped.stdout
    assert sorted(r["data-outcome"] for r in dom.rows) == ["missed", "passed"]
    # the payloads are on the page as text: the question and the predicted value, escaped
    assert "&lt;img src=x onerror=" in dumped.stdout


# --------------------------------------------------------------------------- hooks
HOOK_LOGGER = """
import json, os

LOG = os.path.join(os.path.dirname(__file__), "hooks.log")


def log(config, name, **values):
    # the process: an xdist worker's id, else the controller (not $PYTEST_XDIST_WORKER: an outer run's)
    where = config.workerinput["workerid"] if hasattr(config, "workerinput") else "controller"
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps([name, where, values]) + "\\n")


def pytest_sqleval_score_case(case, suite, prediction, record, context, config):
    log(config, "score_case", id=case.id, suite=suite.name, prediction=prediction, outcome=record.get("outcome"),
        match=record.get("execution_match"))


def pytest_sqleval_case_result(record, item, config):
    log(config, "case_result", id=record["id"], outcome=record["outcome"], node=item.nodeid)


def pytest_sqleval_terminal_section(terminalreporter, summary, records, config):
    terminalreporter.write_line("USER-SECTION " + summary.name)
    log(config, "terminal_section", suite=summary.name, ids=sorted(r["id"] for r in records))


def pytest_sqleval_update_json(config, report):
    report["mine"] = [c["id"] for c in report["cases"]]
    log(config, "update_json", ids=report["mine"])
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_hooks_run_where_and_when_the_docs_say(db, workers):
    db.makeconftest(HOOK_LOGGER)
    suite(db, """
        suite: hk
        database: d.sqlite
        cases:
          - id: ok
            gold: SELECT a FROM t
            predicted: SELECT a FROM t
          - id: miss
            gold: SELECT a FROM t
            predicted: SELECT b FROM t
          - id: broken
            gold: SELECT nope FROM t
            predicted: SELECT 1
        """)
    result = db.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json=r.json", *workers)
    assert result.ret == 1  # the broken gold
    calls = [json.loads(line) for line in (db.path / "hooks.log").read_text(encoding="utf-8").splitlines()]
    by_hook: dict[str, list] = {}
    for name, where, values in calls:
        by_hook.setdefault(name, []).append((where, values))
    # scoring hooks: once per scored case (never the broken gold), in the process that scored it, score_case
    # before pass_if (no outcome yet, the built-in scoring done), case_result with the final outcome
    scorers = {where for where, _ in by_hook["score_case"] + by_hook["case_result"]}
    assert scorers <= {"gw0", "gw1"} if workers else scorers == {"controller"}
    assert scorers
    assert sorted((v["id"], v["outcome"], v["match"], v["prediction"]) for _, v in by_hook["score_case"]) == [
        ("miss", None, False, "SELECT b FROM t"), ("ok", None, True, "SELECT a FROM t")]
    assert sorted((v["id"], v["outcome"], v["node"]) for _, v in by_hook["case_result"]) == [
        ("miss", "missed", "s.sqleval.yaml::miss"), ("ok", "passed", "s.sqleval.yaml::ok")]
    # reporting hooks: once, in the process that reports (the controller), with every case of the suite
    assert by_hook["update_json"] == [("controller", {"ids": ["ok", "miss", "broken"]})]
    assert by_hook["terminal_section"] == [("controller", {"suite": "hk", "ids": ["broken", "miss", "ok"]})]
    assert json.loads((db.path / "r.json").read_text(encoding="utf-8"))["mine"] == ["ok", "miss", "broken"]
    result.stdout.fnmatch_lines(["suite hk (s.sqleval.yaml)", "*", "USER-SECTION hk"], consecutive=False)


# --------------------------------------------------------------------------- stopping early
STOP_SUITE = """
    suite: stop
    database: d.sqlite
    cases:
      - id: a-pass
        gold: SELECT a FROM t
        predicted: SELECT a FROM t
      - id: b-miss
        gold: SELECT a FROM t
        predicted: SELECT b FROM t
      - id: c-pass
        gold: SELECT b FROM t
        predicted: SELECT b FROM t
    """


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_x_stops_at_the_first_strict_miss_and_still_summarises_and_reports_what_ran(db, workers):
    suite(db, STOP_SUITE)
    report, markdown = db.path / "r.json", db.path / "r.md"
    result = db.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-strict", "-x", *workers,
                          f"--sqleval-json={report}", f"--sqleval-markdown={markdown}")
    assert result.ret == (pytest.ExitCode.INTERRUPTED if workers else pytest.ExitCode.TESTS_FAILED)
    result.stdout.fnmatch_lines(["*stopping after 1 failures*"])
    result.stdout.fnmatch_lines(["suite stop (s.sqleval.yaml)", "*cases: *1 failed*"])
    data = _strict_json(report.read_text(encoding="utf-8"))
    outcomes = {c["id"]: c["outcome"] for c in data["cases"]}
    assert outcomes["b-miss"] == "failed"
    if not workers:  # serial: in file order, so the third case never ran
        assert outcomes == {"a-pass": "passed", "b-miss": "failed"}
    assert data["suites"][0]["cases"] == len(outcomes)
    assert markdown.exists()


def test_a_real_keyboard_interrupt_exits_2_and_writes_no_report(db):
    db.makeconftest("""
        def pytest_sqleval_case_result(record):
            if record["id"] == "b-miss":
                raise KeyboardInterrupt
        """)
    suite(db, STOP_SUITE)
    # a subprocess: an in-process run would pass the KeyboardInterrupt on to this session
    result = db.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json=r.json")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert not (db.path / "r.json").exists()


# --------------------------------------------------------------------------- ini equivalents, CLI first
def test_ini_json_path_is_used_and_the_command_line_wins(db):
    suite(db, STOP_SUITE)
    db.makeini("[pytest]\nsqleval = true\nsqleval_json = from-ini/r.json\n")
    assert db.runpytest("-p", "no:cacheprovider").ret == 0
    assert _strict_json((db.path / "from-ini" / "r.json").read_text(encoding="utf-8"))["suites"][0]["name"] == "stop"
    (db.path / "from-ini" / "r.json").unlink()
    assert db.runpytest("-p", "no:cacheprovider", "--sqleval-json=cli.json").ret == 0
    assert (db.path / "cli.json").exists() and not (db.path / "from-ini" / "r.json").exists()


def test_ini_gold_size_is_used_and_the_command_line_wins(db):
    suite(db, STOP_SUITE)
    db.makeini("[pytest]\nsqleval = true\nsqleval_gold_size = 2\n")
    flagged = db.runpytest("-p", "no:cacheprovider", "--sqleval-check-gold")
    assert flagged.ret == 0
    flagged.stdout.fnmatch_lines(["*a-pass: large: returns 3 rows (threshold 2)*"])
    quiet = db.runpytest("-p", "no:cacheprovider", "--sqleval-check-gold", "--sqleval-gold-size=3")
    assert quiet.ret == 0 and "large" not in quiet.stdout.str()


def test_ini_database_url_moves_setup_databases_and_the_command_line_wins(pytester):
    require_module("duckdb")
    pytester.makefile(".sql", s="CREATE TABLE t (a INTEGER);\nINSERT INTO t VALUES (1);\n")
    suite(pytester, """
        suite: moved
        database: {url: "sqlite://", setup: [s.sql]}
        cases:
          - id: engine
            gold: SELECT 1
            predicted: SELECT count(*) FROM duckdb_tables()
        """)
    pytester.makeini("[pytest]\nsqleval = true\nsqleval_database_url = duckdb://\nsqleval_json = r.json\n")
    assert pytester.runpytest("-p", "no:cacheprovider").ret == 0
    case = _strict_json((pytester.path / "r.json").read_text(encoding="utf-8"))["cases"][0]
    assert case["database"].startswith("duckdb://") and case["outcome"] == "passed"
    assert pytester.runpytest("-p", "no:cacheprovider", "--sqleval-database-url=sqlite://").ret == 0
    case = _strict_json((pytester.path / "r.json").read_text(encoding="utf-8"))["cases"][0]
    assert case["database"].startswith("sqlite://") and case["outcome"] == "missed"


def test_a_collection_error_stops_before_any_case_and_writes_no_empty_report(db):
    """The run stops before the loop ("1 error during collection"): no report that would read as a clean run."""
    suite(db, STOP_SUITE)
    db.makefile(".sqleval.yaml", broken="suite: broken\ncases: [\n")
    result = db.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json=r.json", "--sqleval-markdown=r.md")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*1 error during collection*"])
    assert not (db.path / "r.json").exists() and not (db.path / "r.md").exists()


def test_ini_json_path_expands_variables_as_the_markdown_one_does(db, monkeypatch):
    """`sqleval_json = $OUT/r.json` (a CI runner's temp folder): the variable's value, never a folder named `$OUT`."""
    suite(db, STOP_SUITE)
    db.makeini("[pytest]\nsqleval = true\nsqleval_json = $SQLEVAL_QA_OUT/r.json\n")
    monkeypatch.delenv("SQLEVAL_QA_OUT", raising=False)
    unset = db.runpytest("-p", "no:cacheprovider")
    assert unset.ret == pytest.ExitCode.USAGE_ERROR
    unset.stderr.fnmatch_lines(["*ini option sqleval_json: '$SQLEVAL_QA_OUT/r.json' names an unset environment "
                                "variable*"])
    monkeypatch.setenv("SQLEVAL_QA_OUT", str(db.path / "ci-temp"))
    assert db.runpytest("-p", "no:cacheprovider").ret == 0
    assert (db.path / "ci-temp" / "r.json").exists() and not (db.path / "$SQLEVAL_QA_OUT").exists()


def test_a_case_id_with_a_control_character_is_refused_naming_file_and_line(db):
    """A case id is printed raw by pytest's own -v line and in the summary's miss list: an escape or a newline in
    it would reach the terminal and a CI log, so it is refused like '/' or '::'."""
    suite(db, """
        database: d.sqlite
        cases:
          - id: ok
            gold: SELECT a FROM t
          - id: "bad\\x1bZ\\nid"
            gold: SELECT a FROM t
        """)
    result = db.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*s.sqleval.yaml:5: case id 'bad\\x1bZ\\nid' contains '\\x1b'",
                                 "  fix: use letters, digits*"])
    assert "\x1b" not in result.stdout.str()
