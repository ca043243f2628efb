"""Suites, predictions files, thresholds and options, QA round (issues 2, 8, 10): inputs nobody tuned for.

- **A prediction id with white space around it reached no case.** The loader reads a case's ``id: " q1 "`` as
  ``q1``, but a predictions line ``{"id": " q1 "}`` (or ``"q1\\t"``, as a tool that joins columns writes) was an
  id that "matches no collected case". Prediction ids are now trimmed the same way (each side of
  ``<suite>::<id>`` too); two lines that become one id are a duplicate naming the file, both lines and both ids
  as written; an id that is only white space is an error of its line.
- **A fractional count threshold was accepted.** ``error_count: 2.5`` (or ``--sqleval-threshold
  vacuous=0.5``, or an ini line) gated silently, a number of cases compared with a fraction. A count threshold
  must be a whole number: an error naming the file and line (or the option) with the whole number that is the
  same gate. ``by_gold_sql.error_count`` is a sum of per-group rates (README, MRO 3.2) and keeps fractions.
- **``--sqleval-database-url ""`` (and `--sqleval-baseline ""`, `--sqleval-markdown ""`, ...) were silently ignored.** An explicit empty (or blank) URL on the command line
  (an unset ``$VAR``) ran the suites on their own engines; it is now a usage error naming the option and the fix.
  An empty ini value stays "unset", as every empty ini option.
- **Odd but valid YAML.** An optional key written as `null` was the key left out for some keys and an error for
  others ("unknown difficulty classifier None", "both `database:` and `databases:`", "`schema:` must be a
  mapping"): it is now the key left out everywhere (`id:`, `gold:` and `pass_if:` still say they are empty). A case
  repeated as a YAML alias (`- *first`) was a duplicate id "first on line 4" reported on line 4: the alias's own
  line is named. `ID:`/`Gold:` got no suggestion (the closest-key match is case-sensitive). `database: ""` was
  "a directory" and `{url: null}` a file named `None`. White space around a database URL, a `predictions:` path
  or a `suite:` name is trimmed as around ids. A predictions line with `"ID"`/`"SQL"` now names the keys it has.
"""

from __future__ import annotations

import json

import pytest

from conftest import SHOP_SQL

SUITE = (
    "database: {url: 'sqlite://', setup: [shop.sql]}\n"
    "cases:\n"
    "  - id: q1\n"
    "    gold: SELECT name FROM shops\n"
    "  - id: q2\n"
    "    gold: SELECT COUNT(*) FROM tickets\n"
)


def _project(pytester, suite: str = SUITE) -> None:
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    pytester.makefile(".sqleval.yaml", shop=suite)


def _run(pytester, *args):
    return pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", *args, timeout=120)


# --------------------------------------------------------------------------- 1. prediction ids are trimmed
@pytest.mark.parametrize("q1, q2", [(" q1 ", "q2\t"), ("\tq1", "  q2  "), ("shop :: q1", " shop::q2 ")])
@pytest.mark.parametrize("where", ["option", "suite"])
def test_prediction_ids_are_trimmed_as_case_ids_are(pytester, q1, q2, where):
    suite = SUITE.replace("cases:\n", "predictions: preds.jsonl\ncases:\n") if where == "suite" else SUITE
    _project(pytester, suite)
    pytester.path.joinpath("preds.jsonl").write_text(
        json.dumps({"id": q1, "sql": "SELECT name FROM shops"}) + "\n"
        + json.dumps({"id": q2, "sql": "SELECT COUNT(*) FROM tickets"}) + "\n")
    args = ["--sqleval-predictions", "preds.jsonl"] if where == "option" else []
    result = _run(pytester, *args, "--sqleval-json", "report.json")
    assert result.ret == 0, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines(["*2 passed*"])
    cases = {c["id"]: c for c in json.loads(pytester.path.joinpath("report.json").read_text())["cases"]}
    assert cases["q1"]["execution_match"] is True and cases["q2"]["execution_match"] is True


def test_two_prediction_ids_equal_after_trimming_are_a_duplicate_naming_both(pytester):
    _project(pytester)
    pytester.path.joinpath("preds.jsonl").write_text(
        json.dumps({"id": "q2", "sql": "SELECT 1"}) + "\n"
        + json.dumps({"id": " q1", "sql": "SELECT name FROM shops"}) + "\n"
        + json.dumps({"id": "q1\t", "sql": "SELECT 1"}) + "\n")
    result = _run(pytester, "--sqleval-predictions", "preds.jsonl")
    assert result.ret != 0
    err = result.stderr.str() + result.stdout.str()
    assert "preds.jsonl:3: duplicate prediction for case 'q1' (first on line 2)" in err, err[-2000:]
    assert "' q1' on line 2 and 'q1\\t' on line 3" in err, err[-2000:]


def test_a_prediction_id_of_only_white_space_is_an_error_of_its_line(pytester):
    _project(pytester)
    pytester.path.joinpath("preds.jsonl").write_text(
        json.dumps({"id": "q1", "sql": "SELECT 1"}) + "\n" + json.dumps({"id": "  ", "sql": "SELECT 1"}) + "\n")
    result = _run(pytester, "--sqleval-predictions", "preds.jsonl")
    assert result.ret != 0
    err = result.stderr.str() + result.stdout.str()
    assert 'preds.jsonl:2: "id" is empty' in err, err[-2000:]


# --------------------------------------------------------------------------- 2. count thresholds are whole
@pytest.mark.parametrize("metric, value, whole", [("error_count", "2.5", "2"), ("vacuous", "0.5", "0"),
                                                  ("by_difficulty.easy.error_count", "1.25", "1")])
def test_a_fractional_count_threshold_in_a_suite_is_an_error_naming_the_line(pytester, metric, value, whole):
    _project(pytester, SUITE.replace("cases:\n", f"thresholds:\n  soft_f1: 0.5\n  {metric}: {value}\ncases:\n"))
    result = _run(pytester)
    assert result.ret != 0
    out = result.stdout.str()
    assert f"shop.sqleval.yaml:4: {metric} is a count of cases, a whole number; a maximum of {value} is not one" \
        in out, out[-2000:]
    assert f"fix: write a whole number: {whole} is the same gate" in out, out[-2000:]


@pytest.mark.parametrize("form", ["cli", "ini", "overall"])
def test_a_fractional_count_threshold_on_the_command_line_or_ini_is_a_usage_error(pytester, form):
    _project(pytester)
    if form == "ini":
        pytester.makeini("[pytest]\nsqleval_thresholds =\n    error_count=2.5\n")
        args = []
    else:
        args = ["--sqleval-threshold", ("overall:" if form == "overall" else "") + "error_count=2.5"]
    result = _run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    where = "ini option sqleval_thresholds" if form == "ini" else "argument --sqleval-threshold"
    assert where in err and "error_count is a count of cases, a whole number; a maximum of 2.5 is not one" in err, err
    assert "2 is the same gate" in err, err


@pytest.mark.parametrize("threshold, verdict", [("error_count=2.0", "PASS error_count 2 <= 2"),
                                                ("by_gold_sql.error_count=1.5", "FAIL by_gold_sql.error_count 2 > 1.5")])
def test_whole_count_thresholds_and_per_gold_sums_still_gate(pytester, threshold, verdict):
    _project(pytester)  # no predictions: both cases miss with no_prediction, error_count 2
    result = _run(pytester, "--sqleval-threshold", threshold)
    assert result.ret in (0, 1)
    result.stdout.fnmatch_lines([f"*{verdict}*"])


# --------------------------------------------------------------------------- 3. an empty database URL
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_database_url_on_the_command_line_is_a_usage_error(pytester, value):
    _project(pytester)
    result = _run(pytester, f"--sqleval-database-url={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "argument --sqleval-database-url: empty URL" in err, err
    assert "drop the option or give a SQLAlchemy URL like sqlite:///path.db" in err, err


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_database_url_in_the_ini_file_means_unset(pytester, value):
    _project(pytester)
    pytester.makeini(f"[pytest]\nsqleval_database_url = {value}\n")
    result = _run(pytester)
    assert result.ret == 0, result.stdout.str()[-2000:] + result.stderr.str()
    result.stdout.fnmatch_lines(["*2 missed*"])


# --------------------------------------------------------------------------- 4. odd but valid YAML
NULL_SUITE_KEYS = ["difficulty", "policy", "efficiency", "schema", "databases", "thresholds", "execution"]
NULL_CASE_KEYS = ["database", "databases", "schema", "policy", "expected", "expect_columns", "expect_rows",
                  "difficulty", "tags", "metadata", "question"]
# (`interaction:` with nothing under it stays an interaction without turns: test_interactions_third_look)


@pytest.mark.parametrize("key", NULL_SUITE_KEYS)
def test_a_null_optional_suite_key_is_the_key_left_out(pytester, key):
    _project(pytester, f"{key}: null\n" + SUITE.replace("gold: SELECT name FROM shops\n",
                                                        "gold: SELECT name FROM shops\n    predicted: SELECT name FROM shops\n"))
    result = _run(pytester)
    assert result.ret == 0, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines(["*1 passed, 1 missed*"])


@pytest.mark.parametrize("key", NULL_CASE_KEYS)
def test_a_null_optional_case_key_is_the_key_left_out(pytester, key):
    _project(pytester, SUITE.replace("gold: SELECT name FROM shops\n",
                                     f"gold: SELECT name FROM shops\n    predicted: SELECT name FROM shops\n    {key}: ~\n"))
    result = _run(pytester)
    assert result.ret == 0, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines(["*1 passed, 1 missed*"])


def test_a_null_required_key_is_still_an_error(pytester):
    _project(pytester, SUITE.replace("gold: SELECT name FROM shops\n", "gold: null\n"))
    result = _run(pytester)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*shop.sqleval.yaml:4: `gold:` of 'q1' is empty*"])


def test_a_case_repeated_as_a_yaml_alias_names_the_alias_line(pytester):
    _project(pytester, (
        "database: {url: 'sqlite://', setup: [shop.sql]}\n"
        "cases:\n"
        "  - &first\n"
        "    id: q1\n"
        "    gold: SELECT name FROM shops\n"
        "  - <<: *first\n"
        "    id: q2\n"
        "  - *first\n"
    ))
    result = _run(pytester)
    assert result.ret != 0
    out = result.stdout.str()
    assert "shop.sqleval.yaml:8: duplicate case id 'q1' (first on line 4): case #3, on line 8, is a YAML alias" \
        in out, out[-2000:]
    assert "`- <<: *anchor` then `id: another-id`" in out


@pytest.mark.parametrize("key, suggestion", [("ID", "id"), ("Gold", "gold")])
def test_a_key_in_another_letter_case_suggests_the_key(pytester, key, suggestion):
    written = SUITE.replace("- id: q1", "- ID: q1") if key == "ID" else SUITE.replace("    gold:", "    Gold:", 1)
    _project(pytester, written)
    result = _run(pytester)
    assert result.ret != 0
    out = result.stdout.str()
    assert f"unknown key {key!r} in case #1" in out and f"did you mean `{suggestion}`? keys are lower case" in out, \
        out[-2000:]


@pytest.mark.parametrize("database, message", [
    ('""', "shop.sqleval.yaml:1: the database is empty"),
    ("{url: null, setup: [shop.sql]}", "shop.sqleval.yaml:1: `url:` of a database mapping must be a URL, not empty"),
])
def test_an_empty_database_is_named_as_such(pytester, database, message):
    _project(pytester, SUITE.replace("{url: 'sqlite://', setup: [shop.sql]}", database))
    result = _run(pytester)
    assert result.ret != 0
    out = result.stdout.str()
    assert message in out, out[-2000:]
    assert "is a directory" not in out and "None" not in out


def test_white_space_around_a_database_url_a_predictions_path_and_a_suite_name_is_trimmed(pytester):
    from conftest import make_sqlite

    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=(
        "suite: ' mine '\n"
        "database: ' sqlite:///shop.sqlite '\n"
        "predictions: ' preds.jsonl'\n"
        "cases:\n"
        "  - id: q1\n"
        "    gold: SELECT name FROM shops\n"
    ))
    pytester.path.joinpath("preds.jsonl").write_text(json.dumps({"id": "mine::q1", "sql": "SELECT name FROM shops"})
                                                     + "\n")
    result = _run(pytester)
    assert result.ret == 0, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines(["suite mine (shop.sqleval.yaml)", "*1 passed*"])


@pytest.mark.parametrize("option", ["--sqleval-baseline", "--sqleval-max-regressed", "--sqleval-alpha",
                                    "--sqleval-shard", "--sqleval-markdown", "--sqleval-html",
                                    # issue 9: `--sqleval-predictor "$PREDICTOR"` unset scored the suites' own
                                    # predictions instead of the model's
                                    "--sqleval-predictor", "--sqleval-save-predictions", "--sqleval-model",
                                    "--sqleval-model-url", "--sqleval-prompt", "--sqleval-cache"])
def test_an_empty_deploy_gate_or_report_option_is_a_usage_error_not_the_option_left_out(pytester, option):
    """Issue 10: `--sqleval-baseline "$BASELINE"` with the variable unset ran no baseline gate at all."""
    _project(pytester)
    result = _run(pytester, f"{option}=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-1000:]
    err = result.stderr.str()
    assert f"argument {option}: empty" in err and "drop the option" in err, err


@pytest.mark.parametrize("line, shown", [('{"ID": "q1", "SQL": "SELECT 1"}', '(it has "ID", "SQL"; the names are lower case)'),
                                         ('{"question_id": "q1", "query": "SELECT 1"}', '(it has "question_id", "query")')])
def test_a_predictions_line_without_id_and_sql_names_the_keys_it_has(pytester, line, shown):
    _project(pytester)
    pytester.path.joinpath("preds.jsonl").write_text(line + "\n")
    result = _run(pytester, "--sqleval-predictions", "preds.jsonl")
    assert result.ret != 0
    err = result.stderr.str() + result.stdout.str()
    assert f'preds.jsonl:1: each line needs the keys "id" and "sql" {shown}' in err, err[-2000:]
