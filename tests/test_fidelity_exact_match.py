"""Profile ``spider`` on comments, junk after the query and ``NOT a IN``: the official verdicts.

Every expectation below was run through the official test-suite-sql-eval ``evaluation.py`` (same queries on
Spider dev's ``concert_singer``, whose ``singer`` table has the columns used here): the official parser
reads comments as words, stops after a complete query and ignores the rest, and fails on a condition that
starts with NOT.
"""

from __future__ import annotations

import pytest

from exact_match_support import SCHEMA
from pytest_sqleval.metrics.exact_match import exact_match
from pytest_sqleval.metrics.exact_match.spider_tail import official_reading

IN_SUB = "SELECT singer_id FROM singer_in_concert"

CASES = [
    # comments: read as words; ignored only where the parser has already stopped
    ("SELECT name FROM singer ORDER BY age", "SELECT name FROM singer ORDER BY age -- youngest first", True),
    ("SELECT name FROM singer ORDER BY age", "SELECT name FROM singer ORDER BY age /* youngest */", False),
    ("SELECT name FROM singer ORDER BY age DESC", "SELECT name FROM singer ORDER BY age DESC /* oldest */", True),
    ("SELECT name FROM singer", "SELECT /*+ hint */ name FROM singer", False),
    ("SELECT name FROM singer", "/* answer */ SELECT name FROM singer", False),
    ("SELECT name FROM singer WHERE age > 20", "SELECT name FROM singer WHERE age > 20 -- adults", False),
    ("SELECT name FROM singer ORDER BY age LIMIT 1", "SELECT name FROM singer ORDER BY age LIMIT 1 -- the youngest", True),
    ("SELECT country FROM singer GROUP BY country", "SELECT country FROM singer GROUP BY country /* per country */", True),
    # trailing junk after a complete query
    ("SELECT name FROM singer WHERE age > 20", "SELECT name FROM singer WHERE age > 20 )", True),
    ("SELECT name FROM singer WHERE age > 20", "SELECT name FROM singer WHERE age > 20 xyz", False),
    ("SELECT name FROM singer ORDER BY age LIMIT 3", "SELECT name FROM singer ORDER BY age LIMIT 3 answer", True),
    ("SELECT name FROM singer ORDER BY age LIMIT 3", "SELECT name FROM singer ORDER BY age LIMIT 3 ```", True),
    ("SELECT country FROM singer GROUP BY country", "SELECT country FROM singer GROUP BY country DESC", True),
    # NOT before the operand
    (f"SELECT name FROM singer WHERE singer_id NOT IN ({IN_SUB})",
     f"SELECT name FROM singer WHERE NOT singer_id IN ({IN_SUB})", False),
    (f"SELECT name FROM singer WHERE singer_id NOT IN ({IN_SUB})",
     f"SELECT name FROM singer WHERE singer_id NOT IN ({IN_SUB})", True),
    # several statements: the first is read
    ("SELECT name FROM singer", "SELECT name FROM singer; SELECT age FROM singer", True),
    ("SELECT name FROM singer", "SELECT name FROM singer; /* end */", True),
]


@pytest.mark.parametrize("gold, pred, official", CASES)
def test_spider_profile_gives_the_official_verdict(gold, pred, official):
    assert exact_match(gold, pred, SCHEMA, profile="spider").match is official


def test_the_reason_says_why_the_official_parser_fails():
    verdict = exact_match("SELECT name FROM singer", "SELECT /*+ hint */ name FROM singer", SCHEMA, profile="spider")
    assert verdict.reason == "parse_error: the official parser fails on it (comment)"
    verdict = exact_match(f"SELECT name FROM singer WHERE singer_id NOT IN ({IN_SUB})",
                          f"SELECT name FROM singer WHERE NOT singer_id IN ({IN_SUB})", SCHEMA, profile="spider")
    assert verdict.reason == "parse_error: the official parser fails on it (not_before_operand)"


@pytest.mark.parametrize("pred", ["SELECT name FROM singer -- note", "SELECT /*+ hint */ name FROM singer",
                                  f"SELECT name FROM singer WHERE NOT singer_id IN ({IN_SUB})"])
def test_the_sqleval_profile_keeps_the_fix(pred):
    gold = f"SELECT name FROM singer WHERE singer_id NOT IN ({IN_SUB})" if "NOT" in pred else "SELECT name FROM singer"
    assert exact_match(gold, pred, SCHEMA, profile="sqleval").match is True


def test_plain_queries_are_read_whole():
    for sql in ("SELECT 'a -- b', \"x /* y */\" FROM t", "SELECT [a b] FROM t WHERE c = 'it''s'", "SELECT a FROM t"):
        assert official_reading(sql, "sqlite").text == sql
