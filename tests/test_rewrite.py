"""Tree rewrites: strip DISTINCT (test-suite's default) and append ORDER BY keys."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot.errors import ParseError

from pytest_sqleval.sql.rewrite import append_order_keys, strip_distinct


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT DISTINCT a FROM t", "SELECT a FROM t"),
        ("SELECT COUNT(DISTINCT a) FROM t", "SELECT COUNT(a) FROM t"),
        ("SELECT DISTINCT a, SUM(DISTINCT b) FROM t GROUP BY a", "SELECT a, SUM(b) FROM t GROUP BY a"),
        ("SELECT a FROM t WHERE a IN (SELECT DISTINCT b FROM u)", "SELECT a FROM t WHERE a IN (SELECT b FROM u)"),
        ("WITH c AS (SELECT DISTINCT a FROM t) SELECT COUNT(DISTINCT a) FROM c", "WITH c AS (SELECT a FROM t) SELECT COUNT(a) FROM c"),
        ("SELECT a FROM t UNION SELECT DISTINCT b FROM u", "SELECT a FROM t UNION SELECT b FROM u"),
    ],
)
def test_every_distinct_keyword_goes(sql, expected):
    assert strip_distinct(sql, "sqlite") == expected


def test_union_without_all_is_not_the_distinct_keyword():
    sql = "SELECT a FROM t UNION SELECT b FROM u"
    assert strip_distinct(sql, "sqlite") == sql
    assert strip_distinct("SELECT DISTINCT a FROM t UNION SELECT b FROM u", "sqlite") == "SELECT a FROM t UNION SELECT b FROM u"


def test_is_distinct_from_stays():
    sql = "SELECT a FROM t WHERE a IS DISTINCT FROM b"
    assert strip_distinct(sql, "postgres") == sql


def test_distinct_on_goes():
    assert strip_distinct("SELECT DISTINCT ON (a) a, b FROM t", "postgres") == "SELECT a, b FROM t"


def test_multi_argument_count_distinct_keeps_its_arguments():
    assert strip_distinct("SELECT COUNT(DISTINCT a, b) FROM t", "mysql") == "SELECT COUNT(a, b) FROM t"


def test_sql_without_distinct_is_returned_as_written():
    sql = "select  a   from t -- untouched"
    assert strip_distinct(sql, "sqlite") == sql


def test_unparseable_sql_raises():
    with pytest.raises(ParseError):
        strip_distinct("SELECT DISTINCT FROM WHERE", "sqlite")


def test_append_order_keys_adds_aliased_columns_to_a_copy():
    select = sqlglot.parse_one("SELECT name FROM p ORDER BY age", read="sqlite")
    keys = [sqlglot.parse_one("age", read="sqlite"), sqlglot.parse_one("LENGTH(name)", read="sqlite")]
    extended = append_order_keys(select, keys, "sqlite")
    assert extended == "SELECT name, age AS __sqleval_key_0, LENGTH(name) AS __sqleval_key_1 FROM p ORDER BY age"
    assert select.sql(dialect="sqlite") == "SELECT name FROM p ORDER BY age"
