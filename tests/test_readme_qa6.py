"""The README as a new user reads it (QA 6): its commands and examples, run as written."""
import json

import pytest

pytest_plugins = ["pytester"]

SUITE = """\
database: {url: "sqlite://", setup: [schema.sql]}
cases:
  - {id: a, gold: SELECT 1, predicted: SELECT 1}
"""


@pytest.fixture
def empty_report(pytester):
    """A run whose -k selects nothing (pytest exits 5): its report holds no case."""
    pytester.makefile(".sql", schema="CREATE TABLE t (x INTEGER);")
    pytester.makefile(".sqleval.yaml", one=SUITE)
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "-k", "nothing_matches",
                                           "--sqleval-json=empty.json")
    assert result.ret == 5
    report = json.loads((pytester.path / "empty.json").read_text())
    assert report["cases"] == []
    return pytester.path / "empty.json"


def test_gate_given_a_threshold_on_an_empty_report_does_not_say_no_gates_configured(pytester, empty_report):
    """README: a report that holds no case fails every gate asked of it; with no gate asked, it is
    "no gates configured" and 0. A gate was asked here, so the output must not also claim none was."""
    result = pytester.run("sqleval", "gate", str(empty_report), "--threshold", "execution_accuracy=0.5")
    assert result.ret == 1
    out = result.stdout.str()
    assert "the report holds no case" in out
    assert "no gates configured" not in out


def test_gate_without_gates_on_an_empty_report_is_no_gates_configured(pytester, empty_report):
    result = pytester.run("sqleval", "gate", str(empty_report))
    assert result.ret == 0
    assert "no gates configured" in result.stdout.str()


def test_report_format_documents_the_case_keys_of_a_real_report(pytester):
    """docs/report-format.md lists every top-level key of a real report and every key of its cases."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "report-format.md").read_text()
    pytester.makefile(".sql", schema="CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);")
    pytester.makefile(".sqleval.yaml", one=SUITE + """\
  - id: b
    gold:
      - SELECT x FROM t
      - SELECT x, x FROM t
    predicted: SELECT x FROM t
    policy: {tables: [t]}
  - {id: c, expected: {columns: [n], rows: [[2]]}, expect_rows: 1, predicted: SELECT count(*) FROM t}
""")
    pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json=r.json")
    report = json.loads((pytester.path / "r.json").read_text())
    for key in report:
        assert f"\n{key} " in doc, key
    keys = {key for case in report["cases"] for key in case}
    assert {"golds", "expected", "shape", "policy", "prediction_source"} <= keys
    for key in keys:
        assert f"`{key}`" in doc, key
    assert {case["prediction_source"] for case in report["cases"]} == {"suite"}


def test_plain_test_calling_the_builtin_client_with_a_question_says_what_to_do(pytester):
    """README (fixtures for plain tests): a plain test may call `sqleval_predictor(...)` in a --sqleval run, with what
    its own predictor takes. The built-in client predicts suite cases only; handed a question text it said
    `AttributeError: 'str' object has no attribute 'model'` from deep inside the client."""
    pytester.makepyfile(test_plain="""
        def test_model(sqleval_predictor):
            sqleval_predictor("How many open tickets?")
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sqleval", "--sqleval-model", "gpt-4o-mini",
                                           "--sqleval-cache-mode", "off")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E * TypeError: sqleval_predictor: the built-in client (--sqleval-model) predicts "
                                 "suite cases*", "E * fix: give a predictor of your own*"])
    assert "AttributeError" not in result.stdout.str()


def test_plain_test_calling_its_own_predictor_with_a_question(pytester):
    """The README's way: `--sqleval-predictor mymodule:predict`, whose function takes the question text."""
    pytester.makepyfile(mymodule="def predict(question):\n    return f\"SELECT '{question}'\"\n")
    pytester.makepyfile(test_plain="""
        def test_model(sqleval_predictor):
            assert sqleval_predictor("How many open tickets?") == "SELECT 'How many open tickets?'"
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sqleval", "--sqleval-predictor",
                                           "mymodule:predict", "--sqleval-cache-mode", "off")
    result.assert_outcomes(passed=1)


def test_a_suite_named_without_sqleval_says_to_add_it(pytester):
    """`pytest shop.sqleval.yaml` (no --sqleval) said only pytest's "not found: shop.sqleval.yaml (no match in any
    of ...)". A suite file named on the command line of an inactive run is a usage error saying to add --sqleval; a
    missing file keeps pytest's own "file or directory not found"."""
    pytester.makefile(".sqleval.yaml", shop="cases: []\n")
    result = pytester.runpytest_subprocess("shop.sqleval.yaml::c1", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: shop.sqleval.yaml is a pytest-sqleval suite, collected only in a sqleval run",
                                 "  fix: add --sqleval (pytest --sqleval shop.sqleval.yaml::c1)"])
    missing = pytester.runpytest_subprocess("gone.sqleval.yaml", "-p", "no:cacheprovider")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    assert "file or directory not found: gone.sqleval.yaml" in missing.stderr.str()
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider")  # no suite named: an inactive run as before
    assert plain.ret == pytest.ExitCode.NO_TESTS_COLLECTED
