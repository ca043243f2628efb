"""Thresholds: names, directions, precedence and verdict lines."""

import pytest

from pytest_sqleval.thresholds import ThresholdError, lookup, make_threshold, merge, parse_assignment

AGGREGATES = {
    "metrics": {"execution_accuracy": 0.58, "error_count": 4, "soft_f1": 0.81},
    "by_gold_sql": {"execution_accuracy": 0.62},
    "by_difficulty": {"hard": {"cases": 5, "execution_accuracy": 0.4}},
    "by_tag": {"joins": {"cases": 3, "execution_accuracy": 1.0}},
}


def test_min_threshold_fails_with_the_documented_line():
    verdict = make_threshold("execution_accuracy", 0.60, "suite").check(AGGREGATES)
    assert not verdict.passed
    assert verdict.line() == "FAIL execution_accuracy 0.58 < 0.60"
    assert verdict.as_json() == {"metric": "execution_accuracy", "min": 0.6, "value": 0.58, "passed": False, "source": "suite"}


def test_error_count_is_a_maximum():
    assert make_threshold("error_count", 4, "cli").check(AGGREGATES).passed
    verdict = make_threshold("error_count", 3, "cli").check(AGGREGATES)
    assert not verdict.passed and verdict.line() == "FAIL error_count 4 > 3"
    assert verdict.as_json()["max"] == 3


@pytest.mark.parametrize(
    "metric, value",
    [("by_gold_sql.execution_accuracy", 0.62), ("by_difficulty.hard.execution_accuracy", 0.4),
     ("by_tag.joins.execution_accuracy", 1.0), ("soft_f1", 0.81)],
)
def test_dotted_paths(metric, value):
    assert lookup(AGGREGATES, metric) == value


def test_missing_metric_fails_and_says_so():
    verdict = make_threshold("exact_match", 0.5, "suite").check(AGGREGATES)
    assert not verdict.passed
    assert "not computed in this run" in verdict.line()


def test_precedence_cli_over_suite_over_ini():
    cli = [parse_assignment("soft_f1=0.9", "cli")]
    suite = [make_threshold("soft_f1", 0.5, "suite"), make_threshold("execution_accuracy", 0.5, "suite")]
    ini = [parse_assignment("execution_accuracy=0.1", "ini"), parse_assignment("valid_syntax=0.2", "ini")]
    merged = {t.metric: (t.value, t.source) for t in merge(cli, suite, ini)}
    assert merged == {"soft_f1": (0.9, "cli"), "execution_accuracy": (0.5, "suite"), "valid_syntax": (0.2, "ini")}


@pytest.mark.parametrize(
    "text, message",
    [("accuracy=0.5", "unknown metric 'accuracy'"), ("soft_f1", "METRIC=VALUE"), ("soft_f1=abc", "must be a number"),
     ("soft_f1=1.5", "between 0 and 1"), ("error_count=-1", "can never hold"), ("by_tag.x=0.5", "unknown metric path")],
)
def test_bad_assignments(text, message):
    with pytest.raises(ThresholdError, match=message):
        parse_assignment(text, "cli")


@pytest.mark.parametrize(
    "metric, bound, actual, line",
    [
        ("soft_f1", 0.8, 1.0, "PASS soft_f1 1.00 >= 0.80"),
        ("valid_syntax", 0.8, 0.851851, "PASS valid_syntax 0.8519 >= 0.80"),
        ("error_count", 0, 0, "PASS error_count 0 <= 0"),
        ("by_gold_sql.error_count", 4, 4.5, "FAIL by_gold_sql.error_count 4.5 > 4"),
    ],
)
def test_verdict_formatting(metric, bound, actual, line):
    aggregates = {"metrics": {metric: actual}, "by_gold_sql": {"error_count": actual}}
    assert make_threshold(metric, bound, "cli").check(aggregates).line() == line
