"""Profile ``sqleval``: the clause decomposition without the official shortcuts."""

from __future__ import annotations

import pytest

from exact_match_support import SCHEMA, failing
from pytest_sqleval.metrics.exact_match import GoldParseError, exact_match
from pytest_sqleval.metrics.exact_match.verdict import SPIDER_CLAUSES, SQLEVAL_EXTRA_CLAUSES
from pytest_sqleval.schema import Schema


def sqleval(gold: str, pred: str, **options):
    return exact_match(gold, pred, SCHEMA, profile={"profile": "sqleval", **options})


def test_default_profile_is_sqleval_with_extra_clauses():
    verdict = exact_match("SELECT name FROM singer", "SELECT name FROM singer", SCHEMA)
    assert verdict.match and verdict.reason is None
    assert set(verdict.clauses) == set(SPIDER_CLAUSES) | set(SQLEVAL_EXTRA_CLAUSES)


def test_mismatch_reason_names_the_clauses():
    verdict = sqleval("SELECT name FROM singer", "SELECT age FROM singer")
    assert verdict.reason == "clauses differ: select, select_no_agg"


# -- names and scopes ------------------------------------------------------------------------
def test_alias_names_do_not_matter():
    gold = "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.year"
    assert sqleval(gold, "SELECT s.name FROM singer s JOIN concert c ON s.singer_id = c.year").match
    assert sqleval(gold, "SELECT singer.name FROM singer JOIN concert ON singer.singer_id = concert.year").match


def test_reused_alias_resolves_per_scope():
    gold = "SELECT T1.name FROM singer AS T1 WHERE T1.name IN (SELECT T2.name FROM concert AS T2)"
    assert sqleval(gold, "SELECT T1.name FROM singer AS T1 WHERE T1.name IN (SELECT T1.name FROM concert AS T1)").match
    assert not sqleval(gold, "SELECT T1.name FROM singer AS T1 WHERE T1.name IN (SELECT T2.name FROM stadium AS T2)").match


def test_unqualified_columns_resolve_to_the_table_that_has_them():
    gold = "SELECT T2.year FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.concert_id"
    assert sqleval(gold, "SELECT year FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.concert_id").match


def test_self_join_instances_are_numbered_in_from_order():
    gold = "SELECT a.name FROM singer AS a JOIN singer AS b ON a.singer_id = b.age"
    assert sqleval(gold, "SELECT x.name FROM singer AS x JOIN singer AS y ON x.singer_id = y.age").match
    verdict = sqleval(gold, "SELECT b.name FROM singer AS a JOIN singer AS b ON a.singer_id = b.age")
    assert "select" in failing(verdict)
    assert failing(sqleval(gold, "SELECT a.name FROM singer AS a")) >= {"from", "join_on"}


def test_select_alias_and_position_resolve_in_order_group_by_and_having():
    gold = "SELECT country, count(*) FROM singer GROUP BY country HAVING count(*) > 1 ORDER BY count(*) DESC"
    assert sqleval(gold, "SELECT country, count(*) AS n FROM singer GROUP BY 1 HAVING n > 1 ORDER BY n DESC").match
    assert not sqleval(gold, "SELECT country, count(*) AS n FROM singer GROUP BY 1 HAVING n > 1 ORDER BY 1 DESC").match


def test_cte_and_from_subquery_are_compared_by_content():
    gold = "SELECT count(*) FROM (SELECT name FROM singer WHERE age > 20) AS t"
    assert sqleval(gold, "WITH older AS (SELECT name FROM singer WHERE age > 20) SELECT count(*) FROM older").match
    assert "from" in failing(sqleval(gold, "SELECT count(*) FROM (SELECT name FROM singer WHERE age > 21) AS t"))


def test_a_named_window_is_compared_by_its_definition():
    gold = "SELECT name, rank() OVER w FROM singer WINDOW w AS (PARTITION BY country ORDER BY age)"
    assert sqleval(gold, "SELECT name, rank() OVER (PARTITION BY country ORDER BY age) FROM singer").match
    assert sqleval(gold, "SELECT name, rank() OVER v FROM singer WINDOW v AS (PARTITION BY country ORDER BY age)").match
    assert not sqleval(gold, "SELECT name, rank() OVER w FROM singer WINDOW w AS (PARTITION BY country ORDER BY age DESC)").match
    assert not sqleval(gold, "SELECT name, rank() OVER w FROM singer WINDOW w AS (ORDER BY age)").match
    framed = "SELECT sum(age) OVER (PARTITION BY country ORDER BY age ROWS UNBOUNDED PRECEDING) FROM singer"
    assert sqleval(framed, "SELECT sum(age) OVER (w ROWS UNBOUNDED PRECEDING) FROM singer "
                           "WINDOW w AS (PARTITION BY country ORDER BY age)").match
    inner = "SELECT name FROM (SELECT name, rank() OVER w AS r FROM singer WINDOW w AS (ORDER BY age)) WHERE r = 1"
    assert sqleval(inner, "SELECT name FROM (SELECT name, rank() OVER (ORDER BY age) AS r FROM singer) WHERE r = 1").match
    assert not sqleval(inner, "SELECT name FROM (SELECT name, rank() OVER w AS r FROM singer WINDOW w AS (ORDER BY name)) "
                              "WHERE r = 1").match


def test_a_table_in_parentheses_is_the_table():
    gold = "SELECT T1.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id"
    for pred in ("SELECT T1.name FROM (concert AS T1) JOIN (stadium) AS T2 ON T1.stadium_id = T2.stadium_id",
                 "SELECT T1.name FROM ((concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id))",
                 "SELECT c.name FROM (concert) AS c JOIN stadium AS s ON c.stadium_id = s.stadium_id"):
        assert sqleval(gold, pred).match, pred
    assert failing(sqleval(gold, "SELECT T1.name FROM (concert AS T1 LEFT JOIN stadium AS T2 "
                                 "ON T1.stadium_id = T2.stadium_id)")) == {"from"}
    assert sqleval("SELECT name FROM singer", "SELECT name FROM (singer)").match


def test_a_recursive_cte_is_compared_by_content_whatever_its_names():
    gold = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT n FROM c"
    assert sqleval(gold, "WITH RECURSIVE d(m) AS (SELECT 1 UNION ALL SELECT m + 1 FROM d WHERE m < 5) SELECT m FROM d").match
    assert sqleval(gold, "WITH RECURSIVE c(k) AS (SELECT 1 UNION ALL SELECT c.k + 1 FROM c WHERE c.k < 5) SELECT k FROM c").match
    assert not sqleval(gold, "WITH RECURSIVE d(m) AS (SELECT 1 UNION ALL SELECT m + 1 FROM d WHERE m < 6) SELECT m FROM d").match
    assert not sqleval(gold, "WITH RECURSIVE d(m) AS (SELECT 1 UNION ALL SELECT m + 2 FROM d WHERE m < 5) SELECT m FROM d").match


# -- clauses -------------------------------------------------------------------------------------
def test_nested_subquery_is_compared_whole_with_values():
    gold = "SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer WHERE country = 'a')"
    assert sqleval(gold, gold).match
    verdict = sqleval(gold, "SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer WHERE country = 'b')")
    assert failing(verdict) == {"where"}


def test_distinct_counts_at_top_level_and_inside_subqueries():
    assert failing(sqleval("SELECT DISTINCT name FROM singer", "SELECT name FROM singer")) == {"distinct"}
    gold = "SELECT name FROM singer WHERE singer_id IN (SELECT DISTINCT singer_id FROM singer_in_concert)"
    pred = "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert)"
    assert failing(sqleval(gold, pred)) == {"where"}
    assert "select" in failing(sqleval("SELECT count(DISTINCT name) FROM singer", "SELECT count(name) FROM singer"))


def test_order_by_direction_is_per_key():
    gold = "SELECT name FROM singer ORDER BY age DESC, name ASC"
    assert failing(sqleval(gold, "SELECT name FROM singer ORDER BY age ASC, name ASC")) == {"order", "keywords"}
    assert sqleval(gold, "SELECT name FROM singer ORDER BY age DESC, name").match


def test_limit_value_is_compared():
    gold = "SELECT name FROM singer ORDER BY age LIMIT 1"
    assert failing(sqleval(gold, "SELECT name FROM singer ORDER BY age LIMIT 5")) == {"limit"}
    assert failing(sqleval(gold, "SELECT name FROM singer ORDER BY age LIMIT 5", values="ignore")) == {"limit"}


def test_join_on_is_compared_as_a_set_of_symmetric_conditions():
    gold = "SELECT T1.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id"
    assert sqleval(gold, "SELECT T1.name FROM concert AS T1 JOIN stadium AS T2 ON T2.stadium_id = T1.stadium_id").match
    assert failing(sqleval(gold, "SELECT T1.name FROM concert AS T1 JOIN stadium AS T2 ON T1.year = T2.capacity")) == {"join_on"}


def test_join_kind_counts_in_from():
    gold = "SELECT T1.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id"
    assert sqleval(gold, gold.replace(" JOIN ", " INNER JOIN ")).match
    assert failing(sqleval(gold, gold.replace(" JOIN ", " LEFT JOIN "))) == {"from"}


def test_set_operations_are_not_commuted_and_union_all_differs():
    gold = "SELECT name FROM singer EXCEPT SELECT name FROM concert"
    assert "iuen" in failing(sqleval(gold, "SELECT name FROM concert EXCEPT SELECT name FROM singer"))
    union = "SELECT name FROM singer UNION SELECT name FROM concert"
    assert failing(sqleval(union, union.replace("UNION", "UNION ALL"))) == {"iuen"}


def test_conditions_are_normalised_but_precedence_counts():
    gold = "SELECT name FROM singer WHERE age > 5 AND country = 'x'"
    assert sqleval(gold, "SELECT name FROM singer WHERE country = 'x' AND 5 < age").match
    gold = "SELECT name FROM singer WHERE age > 1 OR age < 0 AND country = 'x'"
    verdict = sqleval(gold, "SELECT name FROM singer WHERE (age > 1 OR age < 0) AND country = 'x'")
    assert failing(verdict) == {"where"}
    assert sqleval("SELECT name FROM singer WHERE name NOT LIKE 'a%'",
                   "SELECT name FROM singer WHERE NOT name LIKE 'a%'").match


def test_group_and_having():
    gold = "SELECT country FROM singer GROUP BY country HAVING count(*) > 1"
    assert failing(sqleval(gold, "SELECT country FROM singer GROUP BY country HAVING count(*) > 2")) == {"group"}
    verdict = sqleval(gold, "SELECT country FROM singer GROUP BY name HAVING count(*) > 1")
    assert failing(verdict) == {"group", "group_no_having"}


# -- values ----------------------------------------------------------------------------------------
def test_values_are_compared_unless_ignored():
    gold = "SELECT name FROM singer WHERE age > 20"
    pred = "SELECT name FROM singer WHERE age > 30"
    assert failing(sqleval(gold, pred)) == {"where"}
    assert sqleval(gold, pred, values="ignore").match
    assert sqleval(gold, "SELECT name FROM singer WHERE age > 20.0").match


def test_double_quoted_string_reads_as_sqlite_does():
    assert sqleval("SELECT name FROM singer WHERE country = 'France'",
                   'SELECT name FROM singer WHERE country = "France"').match
    assert not sqleval('SELECT name FROM singer WHERE country = "name"',
                       "SELECT name FROM singer WHERE country = 'name'").match  # "name" is the column


# -- foreign keys --------------------------------------------------------------------------------
def test_distinct_foreign_keys_are_never_merged():
    assert failing(sqleval("SELECT current_address_id FROM people", "SELECT permanent_address_id FROM people")) >= {"select"}


def test_columns_equated_by_an_inner_join_are_interchangeable():
    on = " FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id"
    assert sqleval("SELECT T1.stadium_id" + on, "SELECT T2.stadium_id" + on).match
    left = " FROM concert AS T1 LEFT JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id"
    assert "select" in failing(sqleval("SELECT T1.stadium_id" + left, "SELECT T2.stadium_id" + left))


# -- any SQL, and errors ---------------------------------------------------------------------------
@pytest.mark.parametrize("sql", [
    "SELECT T1.name FROM singer AS T1 LEFT JOIN concert AS T2 ON T1.singer_id = T2.year WHERE T2.year IS NULL",
    "SELECT CASE WHEN age > 1 THEN 'old' ELSE 'young' END AS band FROM singer",
    "WITH s AS (SELECT name, age FROM singer) SELECT name FROM s WHERE age <> 3",
    "SELECT name, rank() OVER (ORDER BY age) FROM singer",
])
def test_sql_outside_the_spider_grammar_is_compared(sql):
    assert sqleval(sql, sql).match


def test_unparseable_prediction_and_several_statements_are_parse_errors():
    assert sqleval("SELECT name FROM singer", "SELEC name FROM").reason.startswith("parse_error: ")
    verdict = sqleval("SELECT name FROM singer", "SELECT name FROM singer; SELECT age FROM singer")
    assert not verdict.match and verdict.reason.startswith("parse_error: 2 statements")


def test_unparseable_gold_raises():
    with pytest.raises(GoldParseError):
        sqleval("SELEC name FROM", "SELECT name FROM singer")


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres"])
def test_comma_cross_and_inner_joins_are_one_kind_in_every_dialect(dialect):
    """sqlglot reads a comma join as CROSS in some dialects only; the verdict must not depend on it."""
    schema = Schema.from_dict({"t": ["id", "x"], "a": ["id", "t_id"]})
    gold = "SELECT a.id FROM t JOIN a ON a.t_id = t.id"
    comma = "SELECT a.id FROM t, a WHERE a.t_id = t.id"
    cross = "SELECT a.id FROM t CROSS JOIN a WHERE a.t_id = t.id"
    left = "SELECT a.id FROM t LEFT JOIN a ON a.t_id = t.id"
    verdicts = {sql: exact_match(gold, sql, schema, dialect=dialect) for sql in (comma, cross, left)}
    assert verdicts[comma].clauses["from"] and verdicts[cross].clauses["from"]
    assert verdicts[comma].clauses == verdicts[cross].clauses
    assert not verdicts[left].clauses["from"]


# -- `t.*` --------------------------------------------------------------------------------------
@pytest.mark.parametrize("pred", ["SELECT singer.* FROM singer", "SELECT s.* FROM singer AS s",
                                  "SELECT S.* FROM singer s", "SELECT * FROM singer"])
def test_a_whole_row_of_the_only_source_is_star(pred: str) -> None:
    assert sqleval("SELECT * FROM singer", pred).match
    assert sqleval("SELECT singer.* FROM singer", pred).match


@pytest.mark.parametrize("gold, pred", [
    # with a join, `s.*` is only singer's columns
    ("SELECT * FROM singer AS s JOIN concert AS c ON s.singer_id = c.year",
     "SELECT s.* FROM singer AS s JOIN concert AS c ON s.singer_id = c.year"),
    # a qualifier that is no source of the query is not read as `*`
    ("SELECT * FROM singer", "SELECT concert.* FROM singer"),
    # inside a function `t.*` is a row value, not every column
    ("SELECT count(*) FROM singer", "SELECT count(singer.*) FROM singer"),
])
def test_a_whole_row_that_is_not_every_column_is_not_star(gold: str, pred: str) -> None:
    assert not sqleval(gold, pred).match


def test_a_whole_row_in_a_subquery_is_star_in_its_own_scope() -> None:
    gold = "SELECT name FROM singer WHERE singer_id IN (SELECT * FROM concert)"
    assert sqleval(gold, "SELECT name FROM singer WHERE singer_id IN (SELECT concert.* FROM concert)").match
    assert sqleval(gold, "SELECT name FROM singer WHERE singer_id IN (SELECT c.* FROM concert AS c)").match


# -- NATURAL JOIN --------------------------------------------------------------------------------
def test_a_natural_join_is_the_join_on_its_common_columns() -> None:
    explicit = ("SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id")
    assert sqleval(explicit, "SELECT name FROM singer NATURAL JOIN singer_in_concert").match
    assert sqleval(explicit, "SELECT name FROM singer JOIN singer_in_concert USING (singer_id)").match
    # two common columns (concert_id, stadium_id... here: concert.name and stadium.name, stadium_id)
    both = ("SELECT T1.year FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id "
            "AND T1.name = T2.name")
    assert sqleval(both, "SELECT year FROM concert NATURAL JOIN stadium").match
    assert not sqleval(both.split(" AND ")[0], "SELECT year FROM concert NATURAL JOIN stadium").match


def test_a_natural_join_keeps_its_side_and_differs_from_a_cross_join() -> None:
    left = "SELECT T1.name FROM singer AS T1 LEFT JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id"
    assert sqleval(left, "SELECT name FROM singer NATURAL LEFT JOIN singer_in_concert").match
    assert not sqleval(left, "SELECT name FROM singer NATURAL JOIN singer_in_concert").match
    assert not sqleval("SELECT name FROM singer CROSS JOIN singer_in_concert",
                       "SELECT name FROM singer NATURAL JOIN singer_in_concert").match
    # no common column: a NATURAL JOIN is a cross join
    assert sqleval("SELECT T1.name FROM singer AS T1 CROSS JOIN addresses AS T2",
                   "SELECT name FROM singer NATURAL JOIN addresses").match


def test_a_natural_join_of_an_unknown_table_is_left_as_written() -> None:
    assert not sqleval("SELECT name FROM singer JOIN mystery ON singer.singer_id = mystery.singer_id",
                       "SELECT name FROM singer NATURAL JOIN mystery").match
    assert sqleval("SELECT name FROM singer NATURAL JOIN mystery", "SELECT name FROM singer NATURAL JOIN mystery").match
