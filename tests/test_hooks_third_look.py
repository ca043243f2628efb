"""Third QA look at what users extend (issue 8: hooks, user metrics, the case record) and at the suite loader's
messages (issue 2: "A suite"), as a plugin author and a suite author write them: metrics that return huge, odd or
foreign numbers, hooks that change what they are given, and suites with comment-only golds, unclosed quotes,
control characters, list merges and keys put at the wrong level."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import make_sqlite, require_module
from pytest_sqleval.errors import SuiteError
from pytest_sqleval.loader import load_suite
from test_hooks_new_inputs import SUITE as BASE_SUITE
from test_hooks_new_inputs import WORKERS

SUITE = BASE_SUITE + """\
  - id: fine
    gold: SELECT 1
    predicted: SELECT 1
"""


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.path.joinpath("shop.sqleval.yaml").write_text(SUITE, encoding="utf-8")
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict | None]:
    path = pytester.path / "report.json"
    path.unlink(missing_ok=True)
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={path}", "-p", "no:cacheprovider", *args)
    return result, (json.loads(path.read_text(encoding="utf-8")) if path.exists() else None)


def output(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


def write(path: Path, text: str = "", raw: bytes | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if raw is not None:
        path.write_bytes(raw)
    else:
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def load_error(path: Path) -> SuiteError:
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    return info.value


# --------------------------------------------------------------------------- user metrics: odd numbers
ODD_NUMBERS = """
    from decimal import Decimal
    from fractions import Fraction

    import numpy as np

    def pytest_sqleval_register_metrics(registry):
        registry.register("huge", kind="mean", population="scored")
        registry.register("np_right", kind="rate", population="scored")
        registry.register("tenth", kind="mean", population="scored")
        registry.register("third", kind="mean", population="scored")
        registry.register("np_one", kind="count", population="scored")

    def pytest_sqleval_score_case(case, record):
        record["huge"] = 1.7e308                      # finite; the sum of four is not
        record["np_right"] = np.bool_(case.id in ("right", "fine"))
        record["tenth"] = Decimal("0.1")
        record["third"] = Fraction(1, 3)
        record["np_one"] = np.int64(1)
"""


@pytest.fixture
def odd_numbers(shop: pytest.Pytester) -> pytest.Pytester:
    require_module("numpy")
    shop.makeconftest(textwrap.dedent(ODD_NUMBERS))
    return shop


def _comparable(report: dict) -> dict:
    report = dict(report)
    report.pop("run")
    return report


def test_huge_numpy_decimal_and_fraction_metric_values_are_aggregated_as_numbers_serial_equals_xdist(odd_numbers):
    """A mean of 1.7e308s overflowed math.fsum (INTERNALERROR, no report); numpy's bool_ reached the JSON as the
    text "True" and a Fraction as "1/3", and the overall aggregate then read them back with float(): INTERNALERROR;
    a Decimal was written as the text "0.1". Now each is a plain JSON number, aggregated the same in both runs."""
    reports = []
    for workers in ([], ["-n", "2"]):
        result, report = run(odd_numbers, *workers)
        assert "INTERNALERROR" not in output(result) and "Traceback" not in output(result)
        assert report is not None
        reports.append(_comparable(report))
    assert reports[0] == reports[1]
    metrics = reports[0]["suites"][0]["metrics"]
    assert metrics["huge"] == 1.7e308
    assert metrics["np_right"] == 0.5 and metrics["np_one"] == 4
    assert metrics["tenth"] == pytest.approx(0.1) and metrics["third"] == pytest.approx(1 / 3)
    for case in reports[0]["cases"]:
        assert type(case["np_right"]) is bool and type(case["np_one"]) is int
        assert type(case["tenth"]) is float and type(case["third"]) is float


@WORKERS
def test_a_case_result_hook_cannot_change_the_verdicts_it_streams(shop, workers):
    """pytest_sqleval_case_result is documented as the final record for streaming; a hook writing into it turned
    missed cases' execution_match true in the report beside an execution accuracy of 0.5, made soft_f1 1.0 and
    changed the user's own metric after it was checked."""
    shop.makeconftest("""
        def pytest_sqleval_register_metrics(registry):
            registry.register("mine", kind="rate", population="scored")

        def pytest_sqleval_score_case(case, record):
            record["mine"] = case.id == "right"

        def pytest_sqleval_case_result(record):  # a streaming reporter that writes into what it is given
            record["execution_match"] = True
            record["soft_f1"] = 1.0
            record["outcome"] = "passed"
            record["mine"] = "yes"
            record["error"] = None
    """)
    result, report = run(shop, *workers)
    assert report is not None
    cases = {case["id"]: case for case in report["cases"]}
    assert {k: c["outcome"] for k, c in cases.items()} == {"right": "passed", "wrong": "missed",
                                                           "broken": "missed", "fine": "passed"}
    assert [cases[k]["execution_match"] for k in ("right", "wrong", "broken", "fine")] == [True, False, False, True]
    assert [cases[k]["mine"] for k in ("right", "wrong", "broken", "fine")] == [True, False, False, False]
    assert cases["broken"]["error"]["kind"] == "syntax"
    metrics = report["suites"][0]["metrics"]
    assert metrics["soft_f1"] == 0.5 and metrics["execution_accuracy"] == 0.5 and metrics["mine"] == 0.25
    result.stdout.fnmatch_lines(["*2 passed, 2 missed*"])


def test_sqleval_merge_reads_the_odd_numbers_back(odd_numbers, tmp_path):
    """`sqleval merge` re-aggregates the user's metrics from the report alone: text such as "1/3" made it fail."""
    _, report = run(odd_numbers)
    assert report is not None
    merged = tmp_path / "merged.json"
    done = subprocess.run([sys.executable, "-m", "pytest_sqleval.cli", "merge", str(odd_numbers.path / "report.json"),
                           "-o", str(merged)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    metrics = json.loads(merged.read_text(encoding="utf-8"))["suites"][0]["metrics"]
    assert metrics["third"] == pytest.approx(1 / 3) and metrics["np_right"] == 0.5 and metrics["huge"] == 1.7e308


BAD_VALUES = """
    def pytest_sqleval_register_metrics(registry):
        registry.register("score", kind="mean", population="scored")
        registry.register("share", kind="rate", population="scored")

    def pytest_sqleval_score_case(case, record):
        record["score"] = 10 ** 400 if case.id == "right" else 0.5
        record["share"] = {"wrong": 5, "broken": -0.5}.get(case.id, True)
"""


@WORKERS
def test_metric_values_no_aggregate_can_take_error_that_case_naming_the_metric_not_an_internal_error(shop, workers):
    """An int beyond any float (10**400) was "internal error while scoring (OverflowError: int too large to convert
    to float)", blaming the plugin; a rate metric's 5 or -0.5 was aggregated into a "rate" of 1.5 or -1 whose 95%
    interval did not hold it. Each is now that case's error naming the metric; the other case is scored."""
    shop.makeconftest(textwrap.dedent(BAD_VALUES))
    result, report = run(shop, *workers)
    assert "INTERNALERROR" not in output(result) and report is not None
    cases = {case["id"]: case for case in report["cases"]}
    assert {k: c["outcome"] for k, c in cases.items()} == {"right": "error", "wrong": "error", "broken": "error",
                                                           "fine": "passed"}
    assert "metric 'score' gave 1000000" in cases["right"]["error"]["message"]
    assert "metric 'share' gave 5 for this case; a rate metric's value is true/false (or a number from 0 to 1)" \
        in cases["wrong"]["error"]["message"]
    assert "metric 'share' gave -0.5" in cases["broken"]["error"]["message"]
    for key in ("right", "wrong", "broken"):
        assert "internal error" not in cases[key]["error"]["message"]
    assert report["suites"][0]["metrics"]["share"] == 1.0
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_record_key_a_hook_breaks_is_named_as_the_hooks_doing_not_an_internal_error(shop):
    """`error` left as text by a user's score_case hook is the user's doing: the message said "internal error
    while scoring (ValueError: a pytest_sqleval_score_case hook left ...)"."""
    shop.makeconftest("""
        def pytest_sqleval_score_case(case, record):
            if case.id == "right":
                record["error"] = "oops"
    """)
    result, report = run(shop)
    assert report is not None
    message = next(c for c in report["cases"] if c["id"] == "right")["error"]["message"]
    assert message.startswith("a pytest_sqleval_score_case hook left record['error'] = 'oops'")
    assert "internal error" not in message


@pytest.mark.parametrize("body, expected", [
    ('registry.register("errors_by_kind", kind="rate")',
     "metric 'errors_by_kind': a suite's `metrics` already hold 'errors_by_kind'"),
    ('registry.register("mine", kind="rate", score=5)', "metric 'mine': score must be a function, not 5"),
    ('registry.register("mine", kind="rate", value="key")', "metric 'mine': value must be a function"),
    ('registry.register("mine", kind="rate", label="two\\nlines\\x1b[31m")',
     "metric 'mine': label must be one line of printable text"),
])
def test_a_metric_name_or_function_the_reports_cannot_use_is_refused_at_registration(shop, body, expected):
    """A metric named errors_by_kind overwrote the error count's breakdown in the suite's metrics: the Markdown report
    crashed with AttributeError ('float' object has no attribute 'items'); `score=5` was accepted and failed every
    case; a label with a line break and an escape sequence was written raw into the terminal table. Each is a usage
    error naming the metric before the run."""
    shop.makeconftest(f"def pytest_sqleval_register_metrics(registry):\n    {body}\n")
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-markdown=r.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in output(result) and "Traceback" not in output(result)
    assert expected in output(result)


# --------------------------------------------------------------------------- pytest_sqleval_update_json
@WORKERS
def test_an_update_json_hook_cannot_turn_a_failed_gate_into_exit_status_0(shop, workers):
    """The hook changed the report the gates were read from: marking the gates passed (or emptying them) made a
    run whose overall gate printed FAIL exit 0, with no gate failure in the final line or in JUnit. The hook now
    changes what is written; the exit status, the final line and JUnit keep the plugin's verdicts."""
    shop.makeconftest("""
        def pytest_sqleval_update_json(report):
            for gate in report.get("gates", []):
                gate["passed"] = True
            report["mine"] = {"gates_seen": len(report.get("gates", []))}
    """)
    result, report = run(shop, "--sqleval-threshold", "overall:execution_accuracy=0.9", "--junitxml=j.xml", *workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*FAIL overall:execution_accuracy 0.50 < 0.90*", "*1 gate failed*"])
    assert report is not None and report["mine"] == {"gates_seen": 1}  # what the hook wrote is in the file
    assert "sqleval.gate" in (shop.path / "j.xml").read_text(encoding="utf-8")


@pytest.mark.parametrize("body, where", [
    ('report["cases"] = None', "report['cases'] (a list) with NoneType"),
    ('report["overall"] = "all fine"', "report['overall'] (a mapping) with str"),
    ('report["suites"][0]["metrics"] = 5', "report['suites'][0]['metrics'] (a mapping) with int"),
])
def test_an_update_json_hook_that_changes_the_reports_own_blocks_is_named_not_a_traceback(shop, body, where):
    """The Markdown renderer and the deploy gate's summary read the report after the hook: `cases` None, `overall`
    as text or `metrics` as a number ended the run with a Python traceback (exit status 1, no message naming it)."""
    shop.makeconftest(f"def pytest_sqleval_update_json(report):\n    {body}\n")
    result, report = run(shop, "--sqleval-markdown=r.md", "--sqleval-html=r.html")
    out = output(result)
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert report is None and result.ret == pytest.ExitCode.TESTS_FAILED
    assert f"pytest_sqleval_update_json ({shop.path / 'conftest.py'}) replaced {where}" in out
    assert (shop.path / "r.md").exists() and (shop.path / "r.html").exists()  # built from the plugin's own report


def test_an_update_json_hook_may_remove_blocks_and_add_its_own(shop):
    shop.makeconftest("""
        def pytest_sqleval_update_json(report):
            del report["suites"]
            report["cases"] = [{"id": c["id"]} for c in report["cases"]]
            report["mine"] = {"n": 1}
    """)
    result, report = run(shop, "--sqleval-markdown=r.md")
    assert result.ret == pytest.ExitCode.OK
    assert "Traceback" not in output(result)
    assert report is not None and "suites" not in report and report["mine"] == {"n": 1}
    assert report["cases"][0] == {"id": "right"}


# --------------------------------------------------------------------------- suites: gold with no statement
@pytest.mark.parametrize("gold", [
    '"-- TODO: write the gold"',
    '";"',
    '"/* nothing */ ;  -- still nothing"',
    '"/* never closed"',
    "'-- the count of shops\n      SELECT count(*) FROM shops'",  # YAML folds the line break: one comment line
])
def test_a_gold_holding_no_statement_is_a_load_error_naming_line_and_fix(tmp_path, gold):
    """Such a gold ran as "no statement", an empty result: every prediction missed against it ("gold has 0 rows")
    as if the model were wrong. The prediction side already refused the same text ("no statement")."""
    make_sqlite(tmp_path / "shop.sqlite")
    path = write(tmp_path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - id: ok\n    gold: SELECT 1\n"
                 f"  - id: todo\n    gold: {gold}\n    predicted: SELECT 1\n")
    error = load_error(path)
    assert error.line == 6
    text = error.render()
    assert "`gold:` of 'todo' holds no SQL statement, only comments, white space or ';'" in text
    assert "fix: write the gold query after `gold:`" in text


def test_a_gold_with_comments_around_a_query_and_an_accepted_gold_list_are_checked_too(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite")
    fine = write(tmp_path / "fine.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: "-- count\\nSELECT count(*) FROM shops"}
          - {id: b, gold: "/* c */ SELECT 1 -- tail"}
          - {id: c, gold: "SELECT 1;"}
    """)
    assert [c.id for c in load_suite(fine).cases] == ["a", "b", "c"]
    listed = write(tmp_path / "listed.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - id: a
            gold:
              - SELECT 1
              - "-- none"
    """)
    error = load_error(listed)
    assert error.line == 6 and "gold #2 of 'a'" in error.render()


def test_a_comment_only_gold_is_a_collection_error_not_a_run_of_misses(shop):
    shop.path.joinpath("shop.sqleval.yaml").write_text(
        "database: shop.sqlite\ncases:\n  - {id: a, gold: ';', predicted: SELECT 1}\n", encoding="utf-8")
    result, report = run(shop)
    assert result.ret == pytest.ExitCode.INTERRUPTED and report is None
    result.stdout.fnmatch_lines(["*shop.sqleval.yaml:3: `gold:` of 'a' holds no SQL statement*"])


@pytest.mark.parametrize("text, line, message", [
    ("", 1, "the suite file is empty (or holds only comments)"),
    ("# a suite to come\n", 1, "the suite file is empty (or holds only comments)"),
    ("database: shop.sqlite\ncases:\n", 2, "`cases:` is empty: no case is listed under it"),
    ("database: shop.sqlite\ncases: []\n", 2, "`cases:` must be a non-empty list"),
    ("database: shop.sqlite\n", 1, "the suite has no `cases:`"),
])
def test_an_empty_file_or_an_empty_cases_key_says_so(tmp_path, text, line, message):
    """`cases:` with nothing under it said "the suite has no `cases:`" although the key is there."""
    make_sqlite(tmp_path / "shop.sqlite")
    error = load_error(write(tmp_path / "s.sqleval.yaml", raw=text.encode()))
    assert error.line == line and message in error.render()


# --------------------------------------------------------------------------- suites: YAML the reader refuses
def test_a_byte_that_is_not_utf8_names_its_line(tmp_path):
    path = write(tmp_path / "s.sqleval.yaml",
                 raw=b"database: shop.sqlite\ncases:\n  - id: a\n    gold: SELECT 'caf\xe9'\n")
    error = load_error(path)
    assert error.line == 4 and "the file is not UTF-8" in error.render() and "save the suite as UTF-8" in error.render()


@pytest.mark.parametrize("char, code", [(b"\x07", "U+0007"), (b"\x1b", "U+001B"), (b"\x7f", "U+007F")])
def test_a_control_character_names_its_line_the_character_and_how_to_write_it(tmp_path, char, code):
    """It was "invalid YAML: unacceptable character #x0007 ... position 66" with no line, and the fix spoke of
    indentation and quoting."""
    path = write(tmp_path / "s.sqleval.yaml",
                 raw=b"database: shop.sqlite\ncases:\n  - id: a\n    question: q\n    gold: SELECT 1" + char + b"\n")
    error = load_error(path)
    text = error.render()
    assert error.line == 5
    assert f"the character {code} is not allowed in YAML" in text
    assert f'fix: remove it, or write it as an escape inside double quotes ("\\u{code[2:].lower()}")' in text


def test_an_unclosed_quote_names_the_line_where_it_opens(tmp_path):
    """The error named the end of the file (line 8 of a 7-line file), not the case whose quote never closes."""
    path = write(tmp_path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - id: a
            gold: "SELECT 1
          - id: b
            gold: SELECT 2
    """)
    error = load_error(path)
    assert error.line == 4
    assert "found unexpected end of stream (scanning a quoted scalar that starts on line 4)" in error.render()


def test_an_unclosed_flow_list_names_where_it_opens(tmp_path):
    path = write(tmp_path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases: [
          {id: a, gold: SELECT 1},
          {id: b, gold: SELECT 2}

        timeout: 5
    """)
    text = load_error(path).render()
    assert "s.sqleval.yaml:6:" in text and "(parsing a flow sequence that starts on line 2)" in text


# --------------------------------------------------------------------------- suites: anchors and merge keys
def test_in_a_merge_list_the_first_mapping_wins_as_yaml_says(tmp_path):
    """`<<: [*a, *b]`: the keys of `a` override those of `b` (YAML's merge key); PyYAML let `b` win, so case c ran
    b's gold. A mapping's own keys still override what it merges, at every level."""
    make_sqlite(tmp_path / "shop.sqlite")
    path = write(tmp_path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - &z {id: z, gold: SELECT 0, question: from z}
          - &a {<<: *z, id: a, gold: SELECT 1}
          - &b {id: b, gold: SELECT 2, question: from b, tags: [bee]}
          - <<: [*a, *b]
            id: c
          - <<: [*b, *a]
            id: d
          - {<<: [*a, *b], id: e, gold: SELECT 5}
    """)
    cases = {c.id: c for c in load_suite(path).cases}
    assert (cases["a"].gold, cases["a"].question) == ("SELECT 1", "from z")
    assert (cases["c"].gold, cases["c"].question, cases["c"].tags) == ("SELECT 1", "from z", ("bee",))
    assert (cases["d"].gold, cases["d"].question) == ("SELECT 2", "from b")
    assert (cases["e"].gold, cases["e"].question) == ("SELECT 5", "from z")


def test_a_merge_of_something_else_than_a_mapping_names_the_merge_line(tmp_path):
    path = write(tmp_path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: &g SELECT 1}
          - <<: *g
            id: b
    """)
    error = load_error(path)
    assert error.line == 4
    assert "expected a mapping or list of mappings for merging, but found scalar" in error.render()
    assert "`<<: *base`" in error.render()


# --------------------------------------------------------------------------- suites: keys at the wrong level
@pytest.mark.parametrize("line, wrong_hint", [
    ("max_rows: 5", "expect_rows"),
    ("execution: bird", "expect_columns"),
    ("dialect: postgres", None),
    ("pass_if: exact_match", None),
])
def test_a_suite_key_on_a_case_says_it_is_the_suites_not_a_typo(tmp_path, line, wrong_hint):
    """`max_rows:` on a case was "unknown key ... did you mean `expect_rows`?", `execution:` "did you mean
    `expect_columns`?": a fix that changes the meaning. It is named as the suite's key, with where it goes."""
    make_sqlite(tmp_path / "shop.sqlite")
    path = write(tmp_path / "s.sqleval.yaml", f"""
        database: shop.sqlite
        cases:
          - id: a
            gold: SELECT 1
            {line}
    """)
    error = load_error(path)
    text = error.render()
    key = line.split(":")[0]
    assert error.line == 5
    assert f"`{key}:` in case #1 is a key of the suite, for every case of the file" in text
    assert "fix: move it to the top level of the file" in text
    if wrong_hint:
        assert wrong_hint not in text


@pytest.mark.parametrize("line, wrong_hint", [("predicted: SELECT 1", "predictions"), ("question: q", "description"),
                                              ("gold: SELECT 1", None)])
def test_a_case_key_at_the_top_says_it_belongs_in_a_case(tmp_path, line, wrong_hint):
    path = write(tmp_path / "s.sqleval.yaml", f"""
        database: shop.sqlite
        {line}
        cases:
          - {{id: a, gold: SELECT 1}}
    """)
    error = load_error(path)
    text = error.render()
    assert error.line == 2 and f"`{line.split(':')[0]}:` in suite is a key of a case" in text
    assert "fix: put it in a case under `cases:`" in text
    if wrong_hint:
        assert wrong_hint not in text


def test_a_case_key_in_a_turn_says_it_belongs_beside_the_interaction(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite")
    path = write(tmp_path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - id: talk
            interaction:
              - question: how many shops?
                gold: SELECT count(*) FROM shops
                tags: [count]
    """)
    error = load_error(path)
    assert error.line == 7
    assert "`tags:` in turn 1 of interaction 'talk' is a key of the case that holds the interaction" in error.render()
    assert "fix: move it up beside `interaction:`" in error.render()


def test_a_typo_still_gets_its_did_you_mean(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite")
    path = write(tmp_path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - id: a
            gold: SELECT 1
            predicetd: SELECT 1
    """)
    text = load_error(path).render()
    assert "unknown key 'predicetd' in case #1" in text and "did you mean `predicted`?" in text
