"""pass_if: parsing and evaluation."""

import pytest

from pytest_sqleval.passrule import PassRuleError, parse_pass_rule


@pytest.mark.parametrize(
    "text, metrics, expected",
    [
        ("execution_match", {"execution_match": True}, True),
        ("execution_match", {"execution_match": False}, False),
        ("exact_match", {"exact_match": None}, False),  # not computed never holds
        ("soft_f1 >= 0.8", {"soft_f1": 0.8}, True),
        ("soft_f1>=0.8", {"soft_f1": 0.79}, False),
        ("soft_f1 > 0.5 and valid", {"soft_f1": 0.6, "valid": True}, True),
        ("soft_f1 > 0.5 and valid", {"soft_f1": 0.6, "valid": False}, False),
        ("exact_match or execution_match and soft_f1 == 1", {"exact_match": False, "execution_match": True, "soft_f1": 1.0}, True),
        ("exact_match or execution_match and soft_f1 == 1", {"exact_match": False, "execution_match": True, "soft_f1": 0.9}, False),
        ("EXACT_MATCH", {}, None),
    ],
)
def test_rules(text, metrics, expected):
    if expected is None:
        with pytest.raises(PassRuleError, match="unknown metric"):
            parse_pass_rule(text)
        return
    assert parse_pass_rule(text).holds(metrics) is expected


def test_rule_metrics_and_text():
    rule = parse_pass_rule("soft_f1>=0.8  or exact_match")
    assert rule.metrics == {"soft_f1", "exact_match"}
    assert str(rule) == "soft_f1 >= 0.8 or exact_match"


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("soft_f1", "compare it"),
        ("soft_f1 >=", "needs a number"),
        ("soft_f1 >= high", "needs a number"),
        ("execution_match and", "a condition must follow"),
        ("execution_match exact_match", "expected 'and' or 'or'"),
    ],
)
def test_bad_rules(text, message):
    with pytest.raises(PassRuleError, match=message):
        parse_pass_rule(text)
