"""What the gold's ORDER BY asks of the prediction: order plans and tie groups."""

from __future__ import annotations

import sqlite3

import pytest

from pytest_sqleval.comparison import resolve_execution
from pytest_sqleval.metrics.tie_groups import tie_group_starts
from pytest_sqleval.sql.ordering import OrderPlan, plan_order


def plan(sql: str, execution="sqleval", dialect: str = "sqlite") -> OrderPlan:
    return plan_order(sql, dialect, resolve_execution(execution))


# ----------------------------------------------------------------------------- row_order options


@pytest.mark.parametrize("sql", ["SELECT a FROM t", "SELECT a FROM t ORDER BY a"])
def test_always_is_strict_and_ignore_is_unordered(sql):
    always = plan(sql, {"profile": "sqleval", "row_order": "always"})
    assert always.ordered and always.key_columns is None and always.hidden_key_sql is None
    assert not plan(sql, {"profile": "sqleval", "row_order": "ignore"}).ordered


@pytest.mark.parametrize(
    ("sql", "ordered"),
    [
        ("SELECT a FROM t ORDER BY a", True),
        ("select a from t order by a", True),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a) AS s", True),
        ("SELECT a FROM t WHERE note = 'sort order by hand'", True),
        ("SELECT a FROM t", False),
        ("SELECT a FROM t ORDER  BY a", False),
    ],
)
def test_order_by_text_is_the_substring_test(sql, ordered):
    result = plan(sql, "test-suite")
    assert result.ordered is ordered
    assert result.key_columns is None


@pytest.mark.parametrize(
    ("sql", "ordered"),
    [
        ("SELECT a FROM t ORDER BY a", True),
        ("SELECT a FROM t", False),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a) AS s", False),
        ("SELECT a FROM t WHERE a IN (SELECT b FROM u ORDER BY b LIMIT 3)", False),
        ("WITH c AS (SELECT a FROM t ORDER BY a) SELECT a FROM c", False),
        ("WITH c AS (SELECT a FROM t) SELECT a FROM c ORDER BY a", True),
        ("SELECT a FROM t WHERE note = 'order by'", False),
        ("SELECT a FROM t UNION SELECT b FROM u ORDER BY a", True),
        ("SELECT a FROM t UNION SELECT b FROM u", False),
        ("(SELECT a FROM t ORDER BY a)", True),
    ],
)
def test_order_by_reads_only_the_outermost_query(sql, ordered):
    assert plan(sql).ordered is ordered


def test_unparseable_gold_falls_back_to_the_text_test():
    result = plan("SELEC a FRM t ORDER BY a")
    assert result.ordered
    assert result.key_columns is None
    assert "could not be parsed" in result.note


def test_ties_gold_orders_strictly():
    result = plan("SELECT name, age FROM p ORDER BY age", {"profile": "sqleval", "ties": "gold"})
    assert result.ordered and result.key_columns is None and result.hidden_key_sql is None
    assert "ties=gold" in result.note


# ----------------------------------------------------------------------------- tie keys


@pytest.mark.parametrize(
    ("sql", "keys"),
    [
        ("SELECT name, age FROM p ORDER BY age", (1,)),
        ("SELECT name, age FROM p ORDER BY age DESC, name", (1, 0)),
        ("SELECT name, age FROM p ORDER BY 2", (1,)),
        ("SELECT * FROM p ORDER BY 3", (2,)),
        ("SELECT name, COUNT(*) AS n FROM p GROUP BY name ORDER BY n DESC", (1,)),
        ("SELECT name, COUNT(*) FROM p GROUP BY name ORDER BY COUNT(*) DESC", (1,)),
        ("SELECT p.name, p.age + 1 FROM p ORDER BY p.age + 1", (1,)),
        ("SELECT P.Name FROM p ORDER BY name", (0,)),
        ("SELECT name FROM p ORDER BY p.name", (0,)),
        ("SELECT age AS name, name AS age FROM p ORDER BY name", (0,)),
        ("SELECT a FROM t UNION SELECT b FROM u ORDER BY a", (0,)),
        ("SELECT DISTINCT name, age FROM p ORDER BY age", (1,)),
    ],
)
def test_order_keys_found_among_the_output_columns(sql, keys):
    result = plan(sql)
    assert result.ordered
    assert result.key_columns == keys
    assert result.hidden_key_sql is None


def test_keys_outside_the_output_become_hidden_columns():
    result = plan("SELECT name FROM p ORDER BY age DESC, name")
    assert result.key_columns is None
    assert result.hidden_key_count == 2
    assert result.hidden_key_sql == (
        "SELECT name, age AS __sqleval_key_0, name AS __sqleval_key_1 FROM p ORDER BY age DESC, name"
    )


def test_hidden_keys_replace_aliases_and_ordinals_by_their_expressions():
    result = plan("SELECT name AS n, age + 1 FROM p ORDER BY n, 2, height")
    assert result.hidden_key_sql == (
        "SELECT name AS n, age + 1, name AS __sqleval_key_0, age + 1 AS __sqleval_key_1, height AS __sqleval_key_2 "
        "FROM p ORDER BY n, 2, height"
    )


def test_hidden_key_sql_runs_and_its_last_columns_group_the_ties():
    connection = sqlite3.connect(":memory:")
    connection.executescript(
        "CREATE TABLE p (name TEXT, age INT, height INT);"
        "INSERT INTO p VALUES ('ann', 30, 170), ('bob', 30, 180), ('cy', 41, 160), ('dee', 52, 150);"
    )
    result = plan("SELECT * FROM p ORDER BY age")
    rows = connection.execute(result.hidden_key_sql).fetchall()
    width = len(rows[0]) - result.hidden_key_count
    assert [row[:width] for row in rows] == connection.execute("SELECT * FROM p ORDER BY age").fetchall()
    keys = [row[width:] for row in rows]
    assert tie_group_starts(keys, range(result.hidden_key_count)) == [0, 2, 3]


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("SELECT DISTINCT name FROM p ORDER BY age", "SELECT DISTINCT"),
        ("SELECT a FROM t UNION SELECT b FROM u ORDER BY c", "set operation"),
        ("SELECT *, age + 1 FROM p ORDER BY 2, height", "ordinal points into a `*`"),
    ],
)
def test_keys_that_cannot_be_read_mean_strict_order(sql, why):
    result = plan(sql)
    assert result.ordered
    assert result.key_columns is None and result.hidden_key_sql is None
    assert why in result.note


# ----------------------------------------------------------------------------- tie groups


def test_tie_group_starts_mark_each_run_of_equal_keys():
    rows = [("a", 1, "x"), ("b", 1, "x"), ("c", 1, "y"), ("d", 2, "y"), ("e", 1, "y")]
    assert tie_group_starts(rows, [1]) == [0, 3, 4]
    assert tie_group_starts(rows, [1, 2]) == [0, 2, 3, 4]
    assert tie_group_starts(rows, [0]) == [0, 1, 2, 3, 4]


def test_tie_keys_are_normalised_and_nulls_tie():
    rows = [(1,), (1.0,), (None,), (None,), (float("nan"),), (float("nan"),)]
    assert tie_group_starts(rows, [0]) == [0, 2, 4]


def test_no_rows_no_groups():
    assert tie_group_starts([], [0]) == []
