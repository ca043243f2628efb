"""Suites, predictions files and execution scoring, QA round qa2 (issue 2): inputs nobody tuned for.

- **A bare value or a fenced query was "rejected" as a statement of a made-up name.** A predictions file holding
  model output as is (the query inside a Markdown code fence), or a text that is a value and no statement (`42`,
  `'text'`, `*`, a quoted name), missed with kind ``rejected`` and reasons such as "a COLUMN statement is not a
  query" or "a HELLO statement" (for ``'hello'``). Such a text parses as a query on no engine: it is a ``syntax``
  miss, and the reason says what the text is (a fence: "write the SQL alone"). Statements stay ``rejected``.
- **A prediction id in another Unicode form.** A predictions file whose id is a case's ``café`` written with e +
  U+0301 (a tool that writes NFD) is an unmatched id, rightly (the README: two ids to pytest and a predictions
  file), but the error listed ``café`` as matching no case while the suite has ``café``: the two look identical.
  The message now says which case id it is in another Unicode form, with both escaped.
- **A user's fixture that raised read as the plugin's bug.** A conftest's autouse fixture, or an override of
  ``sqleval_engine``, that raised in a case's setup was reported as "internal error while scoring". It now names
  the user's file, line and fixture ("setup failed in your code at conftest.py:5 (boom)"), in the terminal and in
  the JSON report's error message; the plugin's own errors keep their wording.
- **A threshold written as nesting.** ``thresholds: {by_difficulty: {hard: {execution_accuracy: 0.5}}}`` (the
  shape of the report's ``by_difficulty``) was "unknown metric 'by_difficulty'" with the fix "write `metric:
  number`"; ``soft_f1: {min: 0.5}`` (the report's threshold shape) "must be a number, not {'min': 0.5}". Both now
  say the threshold is a nested mapping and give the line to write (``by_difficulty.hard.execution_accuracy: 0.5``,
  ``soft_f1: 0.5``).
- **The ini's predictions file overrode a suite's own.** The README's precedence is "the command line wins, then
  the suite file, then the ini file", but ``sqleval_predictions`` in the ini replaced the ``predictions:`` of a
  suite that names its own file (as ``sqleval import`` writes them). The suite's file now wins over the ini's;
  ``--sqleval-predictions`` still wins over both.
"""

from __future__ import annotations

import json

import pytest

from conftest import SHOP_SQL
from pytest_sqleval.errors import QueryError
from pytest_sqleval.sql.guard import check_prediction


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres"])
@pytest.mark.parametrize("sql, expected", [
    ("```sql\nSELECT name FROM shops\n```", "Markdown code fence"),
    ("~~~\nSELECT name FROM shops\n~~~", "Markdown code fence"),
    ("  ```\nSELECT 1\n```", "Markdown code fence"),
    ("42", "is a value (42)"),
    ("'hello'", "is a value ('hello')"),
    ("*", "is a value (*)"),
    ("NULL", "is a value (NULL)"),
    ("(1)", "is a value ((1))"),
    ('"SELECT 1"', "is a value"),
])
def test_a_value_or_a_fenced_query_is_a_syntax_miss_not_a_rejected_statement(dialect, sql, expected):
    with pytest.raises(QueryError) as info:
        check_prediction(sql, dialect)
    assert info.value.kind == "syntax", info.value.message
    assert expected in info.value.message, info.value.message
    assert "statement is not a query" not in info.value.message


@pytest.mark.parametrize("sql, word", [("CHECKPOINT", "CHECKPOINT"), ("END", "END"), ("DELETE FROM shops", "DELETE")])
def test_statements_are_still_rejected_by_their_name(sql, word):
    with pytest.raises(QueryError) as info:
        check_prediction(sql, "postgres")
    assert info.value.kind == "rejected"
    assert f"{word} statement is not a query" in info.value.message


def test_a_fenced_prediction_in_a_predictions_file_misses_with_kind_syntax(pytester):
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    pytester.makefile(".sqleval.yaml", shop=(
        "database: {url: 'sqlite://', setup: [shop.sql]}\n"
        "cases:\n"
        "  - id: fenced\n"
        "    gold: SELECT name FROM shops\n"
        "  - id: number\n"
        "    gold: SELECT name FROM shops\n"
    ))
    pytester.path.joinpath("preds.jsonl").write_text(
        json.dumps({"id": "fenced", "sql": "```sql\nSELECT name FROM shops\n```"}) + "\n"
        + json.dumps({"id": "number", "sql": "42"}) + "\n")
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions",
                                           "preds.jsonl", "--sqleval-json", "report.json", timeout=120)
    assert result.ret == 0, result.stdout.str()[-2000:]
    cases = {c["id"]: c for c in json.loads(pytester.path.joinpath("report.json").read_text())["cases"]}
    assert cases["fenced"]["error"]["kind"] == "syntax"
    assert "Markdown code fence" in cases["fenced"]["error"]["message"]
    assert cases["number"]["error"]["kind"] == "syntax"
    assert "COLUMN" not in cases["fenced"]["error"]["message"]


@pytest.mark.parametrize("where", ["option", "suite"])
def test_an_unmatched_prediction_id_in_another_unicode_form_is_explained(pytester, where):
    import unicodedata

    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    pytester.makefile(".sqleval.yaml", shop=(
        "database: {url: 'sqlite://', setup: [shop.sql]}\n"
        + ("predictions: preds.jsonl\n" if where == "suite" else "")
        + "cases:\n"
        "  - id: café\n"
        "    gold: SELECT name FROM shops\n"
    ))
    decomposed = unicodedata.normalize("NFD", "café")
    pytester.path.joinpath("preds.jsonl").write_text(
        json.dumps({"id": decomposed, "sql": "SELECT name FROM shops"}) + "\n", encoding="utf-8")
    args = ["--sqleval-predictions", "preds.jsonl"] if where == "option" else []
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", *args, timeout=120)
    assert result.ret != 0
    out = result.stdout.str()
    assert "match no" in out, out[-2000:]
    assert "'cafe\\u0301' is the case id 'caf\\xe9' in another Unicode form" in out, out[-2000:]


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_user_fixture_that_raises_in_setup_is_named_not_called_an_internal_error(pytester, xdist):
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    pytester.makefile(".sqleval.yaml", shop=(
        "database: {url: 'sqlite://', setup: [shop.sql]}\n"
        "cases:\n"
        "  - id: a\n"
        "    gold: SELECT name FROM shops\n"
        "    predicted: SELECT name FROM shops\n"
        "  - id: b\n"
        "    gold: SELECT name FROM shops\n"
        "    predicted: SELECT name FROM shops\n"
    ))
    pytester.makeconftest(
        "import pytest\n"
        "\n"
        "@pytest.fixture(autouse=True)\n"
        "def boom(request):\n"
        "    if request.node.name.endswith('b'):\n"
        "        raise RuntimeError('the test database is not up')\n"
    )
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "-p", "xdist", *xdist,
                                           "--sqleval-json", "report.json", timeout=120)
    assert result.ret == 1
    out = result.stdout.str()
    assert "Traceback" not in out
    assert "internal error" not in out, out[-2000:]
    assert "setup failed in your code at" in out and "conftest.py:6 (boom): RuntimeError: the test database is not up" in out, out[-2000:]
    cases = {c["id"]: c for c in json.loads(pytester.path.joinpath("report.json").read_text())["cases"]}
    assert cases["a"]["outcome"] == "passed"
    assert cases["b"]["outcome"] == "error"
    assert "conftest.py:6 (boom)" in cases["b"]["error"]["message"]


@pytest.mark.parametrize("thresholds, fix", [
    ("  by_difficulty:\n    easy:\n      execution_accuracy: 0.5\n",
     "write the path with dots: `by_difficulty.easy.execution_accuracy: 0.5`"),
    ("  by_tag: {joins: {soft_f1: 0.7}}\n", "`by_tag.joins.soft_f1: 0.7`"),
    ("  soft_f1: {min: 0.8}\n", "write `soft_f1: 0.8`"),
])
def test_a_threshold_written_as_a_nested_mapping_names_the_line_to_write(pytester, thresholds, fix):
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    pytester.makefile(".sqleval.yaml", shop=(
        "database: {url: 'sqlite://', setup: [shop.sql]}\n"
        "thresholds:\n" + thresholds +
        "cases:\n"
        "  - id: a\n"
        "    gold: SELECT name FROM shops\n"
    ))
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", timeout=120)
    assert result.ret == 2
    out = result.stdout.str()
    assert "shop.sqleval.yaml:3: threshold" in out and "is a nested mapping" in out, out[-2000:]
    assert fix in out, out[-2000:]


@pytest.mark.parametrize("cli, expected", [([], "missed"), (["--sqleval-predictions", "right.jsonl"], "passed")],
                         ids=["ini-and-suite", "command-line"])
def test_a_suite_s_own_predictions_file_wins_over_the_ini_s_and_the_command_line_over_both(pytester, cli, expected):
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    pytester.makefile(".sqleval.yaml", shop=(
        "database: {url: 'sqlite://', setup: [shop.sql]}\n"
        "predictions: wrong.jsonl\n"
        "cases:\n"
        "  - id: a\n"
        "    gold: SELECT name FROM shops\n"
    ))
    pytester.makeini("[pytest]\nsqleval = true\nsqleval_predictions = right.jsonl\n")
    pytester.path.joinpath("right.jsonl").write_text(json.dumps({"id": "a", "sql": "SELECT name FROM shops"}) + "\n")
    pytester.path.joinpath("wrong.jsonl").write_text(json.dumps({"id": "a", "sql": "SELECT id FROM shops"}) + "\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *cli, "--sqleval-json", "report.json",
                                           timeout=120)
    assert result.ret == 0, result.stdout.str()[-2000:]
    (case,) = json.loads(pytester.path.joinpath("report.json").read_text())["cases"]
    assert case["outcome"] == expected
