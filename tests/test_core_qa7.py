"""QA round 7 on the core plugin (issue 2): suites, pass_if rules and gates a user writes without tuning them,
run through pytester as a user runs them; assertions read the JSON report."""

from __future__ import annotations

import pytest

from core_support import numbers_shop_fixture, run_report, write

shop = numbers_shop_fixture()


# BIRD's soft F1 keeps the official float arithmetic: 3 of 5 gold rows found gives precision 1, recall 0.6 and
# 2 * 0.6 / 1.6 = 0.7499999999999999, which the summary shows as 0.7500.
THREE_OF_FIVE = """
    database: shop.sqlite
    pass_if: {rule}
    cases:
      - id: three-of-five
        gold: SELECT n FROM t
        predicted: SELECT n FROM t WHERE n <= 3
    """


@pytest.mark.parametrize("rule, outcome", [
    ("bird_soft_f1 >= 0.75", "passed"),
    ("bird_soft_f1 <= 0.75", "passed"),
    ("bird_soft_f1 == 0.75", "passed"),
    ("bird_soft_f1 < 0.75", "missed"),
    ("bird_soft_f1 > 0.75", "missed"),
    ("soft_f1 >= 0.75", "passed"),
])
def test_pass_if_at_a_score_equal_to_its_limit_up_to_float_arithmetic(shop, rule, outcome):
    """A case whose BIRD soft F1 is 3/4 (0.75 in the summary) meets `pass_if: bird_soft_f1 >= 0.75`, as a
    suite threshold of 0.75 on the same figure does: it used to miss (0.7499999999999999 < 0.75)."""
    write(shop, "s.sqleval.yaml", THREE_OF_FIVE.format(rule=rule))
    _, report = run_report(shop)
    (case,) = report["cases"]
    assert case["bird_soft_f1"] == pytest.approx(0.75)
    assert case["outcome"] == outcome


def test_a_number_written_where_text_is_expected_is_kept_as_written(shop):
    """`suite:` and `question:` take text, "a number is fine": the text is the one written, not what YAML 1.1 made
    of the number (`suite: 2.10` was the suite `2.1`, so a baseline of suite `2.10` matched nothing; `question: 1:30`
    was the question `90`, a base-60 number)."""
    write(shop, "s.sqleval.yaml", """
        suite: 2.10
        description: 1_000
        database: shop.sqlite
        cases:
          - id: a
            question: 3.10
            gold: SELECT n FROM t
            predicted: SELECT n FROM t
          - id: b
            question: 1:30
            gold: SELECT n FROM t
            predicted: SELECT n FROM t
          - <<: {question: 0x1F, gold: SELECT n FROM t}
            id: c
    """)
    result, report = run_report(shop)
    assert report["suites"][0]["name"] == "2.10"
    assert [(c["suite"], c["question"]) for c in report["cases"]] == [("2.10", "3.10"), ("2.10", "1:30"),
                                                                       ("2.10", "0x1F")]
    assert any(line.startswith("suite 2.10 (") for line in result.outlines)


@pytest.mark.parametrize("source, fix", [
    ("cli", "give one --sqleval-threshold METRIC=VALUE for each metric"),
    ("ini", "write one METRIC=VALUE per line"),
    ("suite", "write one `metric: value` per line under `thresholds:`"),
])
def test_two_thresholds_written_as_one_are_told_to_go_one_each(source, fix):
    """`execution_accuracy=0.9 soft_f1=0.4` on one line (a shell habit) was told to "write the number with a
    decimal point: 0.9 soft.f1=0.4?", the `_` of the second metric's name read as a digit-grouping typo."""
    from pytest_sqleval.thresholds import ThresholdError, make_threshold

    with pytest.raises(ThresholdError) as raised:
        make_threshold("execution_accuracy", "0.9 soft_f1=0.4", source)
    assert raised.value.fix == fix


@pytest.mark.parametrize("value, fix", [
    ("0_9", "write the number with a decimal point: 0.9?"),  # the digit-grouping typo the check is for
    ("0.9_", None),  # no number with a decimal point in place of the `_`: no made-up suggestion
    ("0.9 soft_f1:0.4", None),
])
def test_the_decimal_point_fix_is_suggested_only_when_it_makes_a_number(value, fix):
    from pytest_sqleval.thresholds import ThresholdError, make_threshold

    with pytest.raises(ThresholdError) as raised:
        make_threshold("execution_accuracy", value, "cli")
    assert raised.value.fix == fix


def test_two_thresholds_in_one_command_line_option(shop):
    write(shop, "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT n FROM t, predicted: SELECT n FROM t}
    """)
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval", "--sqleval-threshold",
                            "execution_accuracy=0.9 soft_f1=0.4")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "soft.f1" not in result.stderr.str()
    assert "give one --sqleval-threshold METRIC=VALUE for each metric" in result.stderr.str()


@pytest.mark.parametrize("value", ["-0", "-0.0"])
def test_a_limit_written_as_minus_zero_is_zero(value):
    """`execution_accuracy=-0` was kept as the float -0.0: the verdict read `>= -0.00` and the report -0.0."""
    import math

    from pytest_sqleval.thresholds import Verdict, make_threshold

    threshold = make_threshold("execution_accuracy", value, "cli")
    assert math.copysign(1.0, threshold.value) == 1.0
    assert Verdict(threshold, 0.5, True).line() == "PASS execution_accuracy 0.50 >= 0.00"


@pytest.mark.parametrize("where, written, meant", [
    ("pass_if: SOFT_F1 >= 0.5", "SOFT_F1", "soft_f1"),
    ("pass_if: Execution_Match", "Execution_Match", "execution_match"),
    ("thresholds: {Execution_Accuracy: 0.5}", "Execution_Accuracy", "execution_accuracy"),
    ("thresholds: {soft-f1: 0.5}", "soft-f1", "soft_f1"),
])
def test_a_metric_name_in_other_letter_case_names_the_metric(shop, where, written, meant):
    """Keys of a suite are lower case and `ID:` is told `id:`; a metric name written `SOFT_F1` or `soft-f1` was
    only told it is unknown, with the whole list of metrics to search."""
    write(shop, "s.sqleval.yaml", f"""
        database: shop.sqlite
        {where}
        cases:
          - {{id: a, gold: SELECT n FROM t, predicted: SELECT n FROM t}}
    """)
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert f"unknown metric '{written}'" in result.stdout.str()
    assert f"(did you mean '{meant}'?)" in result.stdout.str()


def test_no_metric_is_guessed_from_a_spelling_that_could_mean_another():
    from pytest_sqleval.thresholds import did_you_mean

    assert did_you_mean("exec_match", ["execution_match", "exact_match"]) == ""
    assert did_you_mean("EXACT-MATCH", ["execution_match", "exact_match"]) == " (did you mean 'exact_match'?)"


def test_a_comment_after_an_ini_threshold_is_named_as_the_problem(shop):
    """An ini file has no comments after a value: `execution_accuracy=0.6  # main gate` was told only that
    `'0.6  # main gate'` is no number."""
    write(shop, "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT n FROM t, predicted: SELECT n FROM t}
    """)
    shop.makeini("[pytest]\nsqleval_thresholds =\n    execution_accuracy=0.6  # main gate\n")
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "put the comment on a line of its own" in result.stderr.str()


@pytest.mark.parametrize("url", ["sqlite+pysqlite:///shop.sqlite", "sqlite+pysqlite:///./shop.sqlite"])
def test_a_relative_file_url_with_a_driver_is_relative_to_the_suite(shop, url):
    """`sqlite:///shop.sqlite` is read relative to the suite file; the same URL naming its driver
    (`sqlite+pysqlite:///`, a valid SQLAlchemy URL) was read relative to the working directory: from another
    folder every case errored with "SQLite database not found: shop.sqlite", at setup and with no fix."""
    (shop.path / "evals").mkdir()
    (shop.path / "shop.sqlite").rename(shop.path / "evals" / "shop.sqlite")
    write(shop, "evals/s.sqleval.yaml", f"""
        database: "{url}"
        cases:
          - {{id: a, gold: SELECT n FROM t, predicted: SELECT n FROM t}}
    """)
    _, report = run_report(shop)
    (case,) = report["cases"]
    assert case["outcome"] == "passed"
    assert case["database"] == f"sqlite+pysqlite:///{shop.path / 'evals' / 'shop.sqlite'}"


def test_a_missing_file_behind_a_url_with_a_driver_is_a_collection_error(shop):
    write(shop, "evals/s.sqleval.yaml", """
        database: "sqlite+pysqlite:///nope.sqlite"
        cases:
          - {id: a, gold: SELECT n FROM t, predicted: SELECT n FROM t}
    """)
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([f"*evals?s.sqleval.yaml:1: database file not found: {shop.path / 'evals' / 'nope.sqlite'}"])


def test_an_ini_predictions_path_expands_environment_variables(shop, monkeypatch):
    """`sqleval_predictions = $PREDS_DIR/model.jsonl` in the ini file was read as a folder named `$PREDS_DIR`
    beside the ini file (`~` expanded, `$VARS` did not), while `sqleval_json = $RUNNER_TEMP/...` expands."""
    (shop.path / "out").mkdir()
    (shop.path / "out" / "model.jsonl").write_text('{"id": "a", "sql": "SELECT 1"}\n', encoding="utf-8")
    monkeypatch.setenv("QA7_PREDS_DIR", str(shop.path / "out"))
    write(shop, "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT n FROM t, predicted: SELECT n FROM t}
    """)
    shop.makeini("[pytest]\nsqleval_predictions = $QA7_PREDS_DIR/model.jsonl\n")
    _, report = run_report(shop)
    assert [(c["predicted"], c["outcome"]) for c in report["cases"]] == [("SELECT 1", "missed")]


def test_an_unset_variable_in_an_ini_predictions_path_names_the_option(shop, monkeypatch):
    monkeypatch.delenv("QA7_UNSET_DIR", raising=False)
    write(shop, "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT n FROM t, predicted: SELECT n FROM t}
    """)
    shop.makeini("[pytest]\nsqleval_predictions = ${QA7_UNSET_DIR}/model.jsonl\n")
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini option sqleval_predictions: '${QA7_UNSET_DIR}/model.jsonl' names an unset environment variable" \
        in result.stderr.str()


def test_a_missing_ini_predictions_file_names_the_ini_option(shop):
    """The path came from the ini file; the fix said to pass a file to --sqleval-predictions, an option the user
    never gave."""
    write(shop, "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT n FROM t, predicted: SELECT n FROM t}
    """)
    shop.makeini("[pytest]\nsqleval_predictions = missing.jsonl\n")
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "fix: pass an existing JSON Lines file to the ini option sqleval_predictions" in result.stderr.str()
    from_cli = shop.runpytest("-p", "no:cacheprovider", "--sqleval", "--sqleval-predictions", "other.jsonl")
    assert "fix: pass an existing JSON Lines file to --sqleval-predictions" in from_cli.stderr.str()


def test_a_suite_predictions_path_expands_environment_variables(shop, monkeypatch):
    """`${VAR}` expands in a suite's database path, `databases:` glob and `setup:` scripts; `predictions:
    ${PREDS}/model.jsonl` was looked for in a folder named `${PREDS}` beside the suite."""
    (shop.path / "out").mkdir()
    (shop.path / "out" / "model.jsonl").write_text('{"id": "a", "sql": "SELECT 1"}\n', encoding="utf-8")
    monkeypatch.setenv("QA7_PREDS", str(shop.path / "out"))
    write(shop, "s.sqleval.yaml", """
        database: shop.sqlite
        predictions: ${QA7_PREDS}/model.jsonl
        cases:
          - {id: a, gold: SELECT n FROM t}
    """)
    _, report = run_report(shop)
    assert [(c["predicted"], c["outcome"]) for c in report["cases"]] == [("SELECT 1", "missed")]
