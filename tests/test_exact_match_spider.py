"""Profile ``spider``: the official Spider / test-suite-sql-eval exact set match, quirks included."""

from __future__ import annotations

import pytest

from exact_match_support import SCHEMA, failing
from pytest_sqleval.comparison import OptionError
from pytest_sqleval.metrics.exact_match import (
    EXACT_MATCH_PROFILES,
    ExactMatchOptions,
    GoldOutsideGrammar,
    GoldParseError,
    exact_match,
    resolve_exact_match,
)
from pytest_sqleval.metrics.exact_match.spider_normalise import foreign_key_representatives
from pytest_sqleval.metrics.exact_match.spider_sql import OutsideGrammar, read_spider_sql
from pytest_sqleval.metrics.exact_match.verdict import SPIDER_CLAUSES
from pytest_sqleval.schema import Schema


def spider(gold: str, pred: str, **options):
    return exact_match(gold, pred, SCHEMA, profile={"profile": "spider", **options})


# -- profiles and options -------------------------------------------------------------
def test_profiles_resolve_from_names_and_mappings():
    assert resolve_exact_match(None) == EXACT_MATCH_PROFILES["sqleval"]
    assert resolve_exact_match("spider").profile == "spider"
    options = resolve_exact_match({"profile": "spider", "value_placeholder": True})
    assert options == ExactMatchOptions(profile="spider", value_placeholder=True)
    assert resolve_exact_match(options) is options


@pytest.mark.parametrize("spec", [
    "bird",
    {"profile": "spider", "values": "ignore"},
    {"profile": "spider", "value_placeholder": "yes"},
    {"profile": "sqleval", "legacy_from_check": True},
])
def test_bad_profiles_and_options_are_refused(spec):
    with pytest.raises(OptionError):
        resolve_exact_match(spec)


def test_verdict_reports_the_ten_components_and_the_from_check():
    verdict = spider("SELECT name FROM singer", "SELECT name FROM singer")
    assert verdict.match and verdict.reason is None
    assert tuple(verdict.clauses) == SPIDER_CLAUSES


# -- the ten components ------------------------------------------------------------------
def test_select_is_a_multiset():
    verdict = spider("SELECT name FROM singer", "SELECT name, name FROM singer")
    assert not verdict.match
    assert failing(verdict) == {"select", "select_no_agg"}
    assert spider("SELECT name, age FROM singer", "SELECT age, name FROM singer").match


def test_select_no_agg_ignores_the_aggregate():
    verdict = spider("SELECT max(age) FROM singer", "SELECT min(age) FROM singer")
    assert failing(verdict) == {"select"}


def test_where_compares_operators_and_where_no_op_only_columns():
    verdict = spider("SELECT name FROM singer WHERE age > 20", "SELECT name FROM singer WHERE age >= 20")
    assert failing(verdict) == {"where"}


def test_between_is_not_two_comparisons():
    verdict = spider("SELECT name FROM singer WHERE age BETWEEN 1 AND 5",
                     "SELECT name FROM singer WHERE age >= 1 AND age <= 5")
    assert {"where", "where_no_op"} <= failing(verdict)


def test_group_no_having_strips_the_table_but_group_does_not():
    gold = "SELECT count(*) FROM singer AS T1 JOIN concert AS T2 GROUP BY T1.name"
    pred = "SELECT count(*) FROM singer AS T1 JOIN concert AS T2 GROUP BY T2.name"
    assert failing(spider(gold, pred)) == {"group"}


def test_group_compares_having():
    gold = "SELECT country FROM singer GROUP BY country HAVING count(*) > 1"
    pred = "SELECT country FROM singer GROUP BY country"
    assert failing(spider(gold, pred)) == {"group", "keywords"}


def test_order_direction_is_one_for_the_whole_clause():
    gold = "SELECT name FROM singer ORDER BY age DESC, name ASC"
    assert spider(gold, "SELECT name FROM singer ORDER BY age ASC, name ASC").match
    assert failing(spider(gold, "SELECT name FROM singer ORDER BY age DESC, name DESC")) == {"order", "keywords"}


def test_and_or_compares_the_set_of_connectors():
    gold = "SELECT name FROM singer WHERE age > 1 AND age < 9 AND country = 'x'"
    assert spider(gold, "SELECT name FROM singer WHERE age > 1 AND age < 9 AND country = 'y'").match
    verdict = spider(gold, "SELECT name FROM singer WHERE age > 1 OR age < 9 AND country = 'x'")
    assert {"and_or", "keywords"} <= failing(verdict)


def test_set_operation_operands_are_not_commuted():
    gold = "SELECT name FROM singer WHERE age > 1 INTERSECT SELECT name FROM concert"
    pred = "SELECT name FROM concert INTERSECT SELECT name FROM singer WHERE age > 1"
    assert "iuen" in failing(spider(gold, pred))
    assert spider(gold, gold).match


def test_keywords_see_limit_presence_but_not_its_value():
    gold = "SELECT name FROM singer ORDER BY age LIMIT 1"
    assert spider(gold, "SELECT name FROM singer ORDER BY age LIMIT 5").match
    assert failing(spider(gold, "SELECT name FROM singer ORDER BY age")) == {"order", "keywords"}


def test_from_check_catches_count_star_on_the_wrong_table():
    verdict = spider("SELECT count(*) FROM singer", "SELECT count(*) FROM concert")
    assert failing(verdict) == {"from"}


def test_legacy_from_check_only_compares_tables_of_joins():
    gold = "SELECT count(*) FROM singer"
    assert spider(gold, "SELECT count(*) FROM concert", legacy_from_check=True).match
    joined = "SELECT count(*) FROM singer AS T1 JOIN concert AS T2"
    assert not spider(joined, "SELECT count(*) FROM singer", legacy_from_check=True).match


# -- aliases, joins, subqueries ------------------------------------------------------------
def test_a_reused_alias_keeps_its_last_mapping():
    wrong = "SELECT T1.name FROM singer AS T1 WHERE T1.name IN (SELECT T1.name FROM concert AS T1)"
    read = read_spider_sql(wrong, SCHEMA).sql
    assert read["select"][1][0][1][1][1] == "__concert.name__"  # the outer T1 reads as concert
    right = "SELECT T1.name FROM singer AS T1 WHERE T1.name IN (SELECT T2.name FROM concert AS T2)"
    assert "select" in failing(spider(right, wrong))


def test_unqualified_columns_resolve_to_the_first_from_table():
    read = read_spider_sql("SELECT name FROM concert AS T1 JOIN singer AS T2", SCHEMA).sql
    assert read["select"][1][0][1][1][1] == "__concert.name__"


def test_self_join_counts_the_table_twice():
    gold = "SELECT T1.name FROM singer AS T1 JOIN singer AS T2 ON T1.singer_id = T2.age"
    assert failing(spider(gold, "SELECT T1.name FROM singer AS T1")) == {"from"}


def test_join_on_conditions_are_ignored():
    gold = "SELECT T1.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id"
    assert spider(gold, "SELECT T1.name FROM concert AS T1 JOIN stadium AS T2 ON T1.year = T2.capacity").match
    assert spider(gold, "SELECT T1.name FROM concert AS T1 JOIN stadium AS T2").match


def test_a_parenthesised_first_table_is_read_as_the_official_reads_it():
    # the official parse_from accepts "( table_unit )" in the first FROM position only, and no alias after ")"
    assert spider("SELECT name FROM singer WHERE age > 3", "SELECT name FROM (singer) WHERE age > 3").match
    assert spider("SELECT name FROM (singer) WHERE age > 3", "SELECT name FROM singer WHERE age > 3").match
    gold = "SELECT T1.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id"
    assert spider(gold, "SELECT T1.name FROM (concert AS T1) JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id").match
    for pred in ("SELECT name FROM ((singer)) WHERE age > 3", "SELECT T1.name FROM (singer) AS T1 WHERE T1.age > 3"):
        assert not spider("SELECT name FROM singer WHERE age > 3", pred).match


def test_table_order_in_from_is_ignored():
    gold = "SELECT T1.name FROM concert AS T1 JOIN stadium AS T2"
    assert spider(gold, "SELECT T1.name FROM stadium AS T2 JOIN concert AS T1").match


def test_nested_where_subquery_is_compared_whole_without_its_values():
    gold = "SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer WHERE country = 'a')"
    assert spider(gold, "SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer WHERE country = 'b')").match
    verdict = spider(gold, "SELECT name FROM singer WHERE age > (SELECT max(age) FROM singer WHERE country = 'a')")
    assert failing(verdict) == {"where"}


# -- values, DISTINCT, foreign keys -----------------------------------------------------------
def test_values_are_ignored_outside_from_subqueries():
    assert spider("SELECT name FROM singer WHERE age > 20", "SELECT name FROM singer WHERE age > 30").match
    gold = "SELECT count(*) FROM (SELECT name FROM singer WHERE age > 20)"
    assert failing(spider(gold, "SELECT count(*) FROM (SELECT name FROM singer WHERE age > 30)")) == {"from"}
    assert spider(gold, gold).match


def test_double_quoted_token_is_a_string_value():
    read = read_spider_sql('SELECT count(*) FROM (SELECT name FROM singer WHERE country = "France")', SCHEMA).sql
    inner = read["from"]["table_units"][0][1]
    assert inner["where"][0][3] == '"France"'
    gold = "SELECT count(*) FROM (SELECT name FROM singer WHERE country = 'France')"
    assert spider(gold, 'SELECT count(*) FROM (SELECT name FROM singer WHERE country = "France")').match


def test_top_level_distinct_is_ignored_but_not_inside_subqueries():
    assert spider("SELECT DISTINCT name FROM singer", "SELECT name FROM singer").match
    assert spider("SELECT count(DISTINCT name) FROM singer", "SELECT count(name) FROM singer").match
    gold = "SELECT name FROM singer WHERE singer_id IN (SELECT DISTINCT singer_id FROM singer_in_concert)"
    pred = "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert)"
    assert failing(spider(gold, pred)) == {"where"}


def test_foreign_key_columns_are_merged_when_their_table_is_in_from():
    gold = "SELECT T1.stadium_id FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id"
    assert spider(gold, "SELECT T2.stadium_id FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id").match


def test_distinct_foreign_keys_to_one_key_are_merged_false_positive():
    gold = "SELECT current_address_id FROM people"
    assert spider(gold, "SELECT permanent_address_id FROM people").match  # official false positive


def test_foreign_key_groups_follow_the_official_grouping():
    schema = Schema.from_dict(
        {"t": ["a", "b", "c", "d"]},
        [("t", "a", "t", "b"), ("t", "c", "t", "d"), ("t", "b", "t", "c")],
    )
    representatives = foreign_key_representatives(schema)
    # (b, c) joins the first group {a, b}; groups are never merged, so c keeps its own group's representative
    assert representatives == {"__t.a__": "__t.a__", "__t.b__": "__t.a__", "__t.c__": "__t.c__", "__t.d__": "__t.c__"}


# -- the official reading quirks -----------------------------------------------------------------
def test_a_column_value_swallows_the_following_or_conditions():
    read = read_spider_sql("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 "
                           "WHERE T1.age = T2.year OR T1.name = 'x' AND T1.country = 'y'", SCHEMA).sql
    assert read["where"][1::2] == ["and"]
    assert len(read["where"]) == 3


def test_clauses_after_one_out_of_order_are_ignored_at_the_end():
    read = read_spider_sql("SELECT country FROM singer GROUP BY country WHERE age > 1", SCHEMA).sql
    assert read["where"] == [] and read["groupBy"]
    with pytest.raises(OutsideGrammar, match="clause_order"):
        read_spider_sql("SELECT name FROM singer WHERE age IN (SELECT age FROM singer GROUP BY age WHERE age > 1)", SCHEMA)


def test_spaced_comparison_is_joined_as_officially():
    assert spider("SELECT name FROM singer WHERE age != 1", "SELECT name FROM singer WHERE age ! = 1").match


def test_value_placeholder_rewrites_the_prediction_text():
    gold = "SELECT name FROM singer WHERE age > 3"
    pred = "SELECT name FROM singer WHERE age > value"
    assert spider(gold, pred).reason == "outside_spider_grammar: unknown_column"
    assert spider(gold, pred, value_placeholder=True).match


# -- outside the grammar ------------------------------------------------------------------------
@pytest.mark.parametrize(("pred", "construct"), [
    ("SELECT count(*) AS n FROM singer", "column_alias"),
    ("SELECT T1.name FROM singer AS T1 LEFT JOIN concert AS T2 ON T1.singer_id = T2.year", "left_join"),
    ("SELECT name FROM singer WHERE age <> 1", "<>"),
    ("SELECT name FROM singer WHERE age IS NULL", "is_null"),
    ("SELECT name FROM singer WHERE age IS NOT NULL", "is_null"),
    ("SELECT CASE WHEN age > 1 THEN name END FROM singer", "case"),
    ("SELECT CAST(age AS TEXT) FROM singer", "cast"),
    ("WITH s AS (SELECT name FROM singer) SELECT name FROM s", "cte"),
    ("SELECT upper(name) FROM singer", "function upper"),
    ("SELECT age + 1 FROM singer", "arithmetic_with_constant"),
    ("SELECT rank() OVER (ORDER BY age) FROM singer", "window_function"),
    ("SELECT count(*) FROM (SELECT name FROM singer) JOIN (SELECT name FROM concert)", "join_subquery"),
    ("SELECT count(*) FROM (SELECT name FROM singer) AS s", "from_subquery_alias"),
    ("SELECT s.name FROM singer s", "table_alias_without_as"),
    ("SELECT name FROM singer WHERE age=1", "operator_without_spaces"),
    ("SELECT name FROM singer, concert", "comma_or_cross_join"),
    ("SELECT name FROM singer WHERE country IN ('a', 'b')", "in_value_list"),
    ("SELECT name FROM singer WHERE (age > 1)", "parenthesized_condition"),
    ("SELECT name FROM singer UNION ALL SELECT name FROM concert", "union_all"),
    ("SELECT max(age) - min(age) FROM singer", "aggregate_arithmetic"),
    ("SELECT name FROM singer WHERE name = 'Men''s'", "quote_inside_string"),
    ("SELECT name FROM singer WHERE name = \"Men's\"", "unbalanced_quotes"),
    ("SELECT name FROM singer AS concert", "alias_is_table_name"),
    ("SELECT nickname FROM singer", "unknown_column"),
])
def test_prediction_outside_the_grammar_scores_zero_with_its_construct(pred, construct):
    verdict = spider("SELECT name FROM singer", pred)
    assert not verdict.match
    assert verdict.reason == f"outside_spider_grammar: {construct}"
    assert verdict.clauses["group"]  # scored against an empty SQL, as officially


def test_unparseable_prediction_is_a_parse_error():
    verdict = spider("SELECT name FROM singer", "SELEC name FROM")
    assert not verdict.match and verdict.reason.startswith("parse_error: ")


@pytest.mark.parametrize("pred", ["SELECT count(*) FROM singer AS", "SELECT count(*) FROM singer as  ",
                                  "SELECT T1.name FROM singer AS T1 JOIN concert AS", "SELECT count(*) FROM singer; AS"])
def test_a_truncated_prediction_ending_in_as_fails_as_officially(pred):
    # the official alias scan reads the token after every "as": an IndexError when "as" is the last token
    gold = "SELECT count(*) FROM singer" if "JOIN" not in pred else "SELECT T1.name FROM singer AS T1 JOIN concert AS T2"
    verdict = spider(gold, pred)
    assert not verdict.match and verdict.reason == "parse_error: the official parser fails on it (as_at_end)"
    assert spider("SELECT count(*) FROM singer", "SELECT count(*) FROM singer AS ;").match  # ";" is its alias


def test_gold_outside_the_grammar_raises():
    with pytest.raises(GoldOutsideGrammar) as info:
        spider("SELECT T1.name FROM singer AS T1 LEFT JOIN concert AS T2 ON T1.singer_id = T2.year", "SELECT name FROM singer")
    assert info.value.construct == "left_join"
    with pytest.raises(GoldParseError):
        spider("SELEC name FROM", "SELECT name FROM singer")
