"""Spider hardness: the official classifier with its quirks, the extended reading and the corrected variant."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_sqleval.metrics.hardness import classify_hardness, spider_hardness
from pytest_sqleval.schema import Schema

SCHEMA = Schema.from_spider_tables(Path(__file__).parent / "fixtures" / "exact_match" / "tables.json", "concerts")


@pytest.mark.parametrize(("sql", "level"), [
    ("SELECT count(*) FROM singer", "easy"),
    ("SELECT name FROM singer WHERE age > 20", "easy"),
    ("SELECT name, age FROM singer", "medium"),
    ("SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id", "easy"),
    ("SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id WHERE T1.age > 1",
     "medium"),
    ("SELECT name FROM singer WHERE age > 20 ORDER BY age", "medium"),
    ("SELECT name FROM singer WHERE age > 1 ORDER BY age LIMIT 1", "hard"),
    ("SELECT name FROM singer WHERE age > 1 OR country = 'x' ORDER BY age LIMIT 1", "extra"),
    ("SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)", "hard"),
    ("SELECT T1.name, count(*) FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id "
     "GROUP BY T1.name ORDER BY count(*) DESC LIMIT 1", "extra"),
    ("SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer) AND country = 'x'", "extra"),
])
def test_hand_classified_queries(sql, level):
    assert spider_hardness(sql, SCHEMA) == level


def test_not_counts_as_an_aggregate():
    assert spider_hardness("SELECT count(*) FROM singer WHERE country IN ('US')", SCHEMA) == "easy"
    assert spider_hardness("SELECT count(*) FROM singer WHERE country NOT IN ('US')", SCHEMA) == "medium"


def test_having_counts_connectors_not_aggregates():
    two = "SELECT country FROM singer GROUP BY country HAVING count(*) > 1 AND avg(age) > 2"
    three = two + " AND max(age) > 3"
    assert spider_hardness(two, SCHEMA) == "easy"
    assert spider_hardness(three, SCHEMA) == "medium"


def test_from_subquery_is_invisible():
    assert spider_hardness("SELECT count(*) FROM (SELECT country FROM singer GROUP BY country)", SCHEMA) == "easy"


def test_a_single_except_with_one_where_is_hard():
    assert spider_hardness("SELECT name FROM singer EXCEPT SELECT name FROM singer WHERE age > 1", SCHEMA) == "hard"


def test_result_carries_the_counts():
    result = classify_hardness("SELECT name, age FROM singer WHERE age > 1 OR name LIKE 'a%'", SCHEMA)
    assert (result.component1, result.component2, result.others) == (3, 0, 2)
    assert result.level == "hard" and result.source == "spider" and not result.extended


def test_sql_outside_the_grammar_is_counted_by_the_same_definitions():
    sql = "SELECT T1.name FROM singer AS T1 LEFT JOIN concert AS T2 ON T1.singer_id = T2.year WHERE T2.year IS NULL"
    result = classify_hardness(sql, SCHEMA)
    assert result.extended and result.source == "spider_extended"
    assert "left_join" in result.constructs and "is_null" in result.constructs
    assert (result.component1, result.component2, result.others) == (2, 0, 0)
    assert result.level == "medium"


def test_extended_counts_not_and_ctes():
    sql = "WITH s AS (SELECT name FROM singer) SELECT name FROM s WHERE NOT (name = 'a' OR name = 'b')"
    result = classify_hardness(sql, SCHEMA)
    assert result.extended and "cte" in result.constructs
    assert result.component1 == 2  # WHERE + one OR
    assert result.others == 2  # a WHERE list of two conditions, and two NOTs counted as aggregates
    assert result.level == "extra"


def test_sqleval_classifier_counts_real_having_aggregates_and_from_subqueries():
    two = "SELECT country FROM singer GROUP BY country HAVING count(*) > 1 AND avg(age) > 2"
    assert classify_hardness(two, SCHEMA, classifier="sqleval").level == "medium"
    nested = "SELECT count(*) FROM (SELECT country FROM singer GROUP BY country)"
    result = classify_hardness(nested, SCHEMA, classifier="sqleval")
    assert result.component2 == 1 and result.level == "hard" and result.source == "sqleval"
    not_in = "SELECT count(*) FROM singer WHERE country NOT IN ('US')"
    assert classify_hardness(not_in, SCHEMA, classifier="sqleval").level == "easy"


def test_a_cte_counts_as_the_from_subquery_it_stands_for():
    cte = "WITH c AS (SELECT country FROM singer GROUP BY country) SELECT count(*) FROM c"
    sub = "SELECT count(*) FROM (SELECT country FROM singer GROUP BY country)"
    for classifier, level in (("sqleval", "hard"), ("spider", "easy")):
        got, expected = classify_hardness(cte, SCHEMA, classifier=classifier), classify_hardness(sub, SCHEMA, classifier=classifier)
        assert (got.level, got.component1, got.component2, got.others) == (
            level, expected.component1, expected.component2, expected.others)
    recursive = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT n FROM c"
    assert classify_hardness(recursive, SCHEMA, classifier="sqleval").level == "hard"


def test_unparseable_sql_has_no_hardness():
    assert classify_hardness("SELEC name FROM", SCHEMA) is None
    with pytest.raises(ValueError):
        spider_hardness("SELEC name FROM", SCHEMA)
    with pytest.raises(ValueError, match="unknown hardness classifier"):
        classify_hardness("SELECT name FROM singer", SCHEMA, classifier="bird")
