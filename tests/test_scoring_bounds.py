"""Scoring is bounded and never raises: exact match, hardness, the ORDER BY plan, the DISTINCT rewrite, gold checks.

Each class of hostile SQL (deep nesting, long AND chains, long IN lists, 200 KB texts, bare boolean
conditions) is checked for its verdict or reason and for a time bound; the last tests run a suite of
such cases through pytest as a user does.

Time bounds: the process's CPU time must stay under ``BOUND`` seconds (what the scoring costs, whatever
else runs on the machine), and the wall time under ``WALL_SLACK`` times that (the machine these tests run
on is shared by many jobs). The exponential cases this guards against took minutes, or never ended.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time

import pytest
from sqlalchemy import create_engine

from conftest import make_sqlite
from exact_match_support import SCHEMA
from pytest_sqleval.comparison import resolve_execution
from pytest_sqleval.goldcheck import determinism_findings
from pytest_sqleval.metrics.exact_match import GoldTooComplex, GoldUnreadable, exact_match
from pytest_sqleval.metrics.exact_match.parsing import parse_statement
from pytest_sqleval.metrics.exact_match.sqleval_shape import ShapeBuilder
from pytest_sqleval.metrics.hardness import classify_hardness, difficulty_label
from pytest_sqleval.results import QueryResult
from pytest_sqleval.schema import Schema, Table
from pytest_sqleval.sql import limits
from pytest_sqleval.sql.limits import SqlTooComplex, WorkBudget
from pytest_sqleval.sql.ordering import plan_order
from pytest_sqleval.sql.rewrite import strip_distinct

PROFILES = ("sqleval", "spider")
BOUND = 2.0  # seconds of CPU time per scoring call
WALL_SLACK = 5  # wall time may exceed CPU time this much on a loaded machine


class Clock:
    """CPU and wall time of a block; :meth:`within` checks both bounds."""

    def __enter__(self):
        self.start, self.start_cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
        self.cpu = time.process_time() - self.start_cpu

    def within(self, bound: float = BOUND) -> bool:
        return self.cpu < bound and self.seconds < WALL_SLACK * bound


# -- SQL generators (the classes of the hostile corpus) ----------------------------------------------
def parens(depth: int) -> str:
    return "SELECT name FROM singer WHERE age = " + "(" * depth + "1" + ")" * depth


def scalar_subqueries(depth: int) -> str:
    return "SELECT " + "(SELECT " * depth + "1" + ")" * depth


def in_subqueries(depth: int, innermost: int = 1) -> str:
    sql = f"SELECT singer_id FROM singer WHERE age > {innermost}"
    for _ in range(depth):
        sql = f"SELECT singer_id FROM singer WHERE singer_id IN ({sql})"
    return sql


def from_subqueries(depth: int) -> str:
    sql = "SELECT singer_id FROM singer"
    for _ in range(depth):
        sql = f"SELECT singer_id FROM ({sql}) AS t"
    return sql


def cte_chain(length: int) -> str:
    ctes = ["c0 AS (SELECT singer_id FROM singer)"] + [f"c{i} AS (SELECT singer_id FROM c{i - 1})" for i in range(1, length)]
    return "WITH " + ", ".join(ctes) + f" SELECT singer_id FROM c{length - 1}"


def nested_ctes(depth: int) -> str:
    sql = "SELECT singer_id FROM singer"
    for i in range(depth):
        sql = f"WITH c{i} AS ({sql}) SELECT singer_id FROM c{i}"
    return sql


def scalar_in_select(depth: int) -> str:
    sql = "SELECT name FROM singer"
    for _ in range(depth):
        sql = f"SELECT ({sql} LIMIT 1) FROM singer"
    return sql


def and_chain(terms: int, first: int = 0) -> str:
    return "SELECT name FROM singer WHERE " + " AND ".join(f"age > {first + i}" for i in range(terms))


def in_list(values: int) -> str:
    return "SELECT name FROM singer WHERE age IN (" + ", ".join(str(i) for i in range(values)) + ")"


NESTED = {
    "scalar": scalar_subqueries, "in": in_subqueries, "from": from_subqueries, "cte_chain": cte_chain,
    "nested_cte": nested_ctes, "scalar_in_select": scalar_in_select,
}


def shape_steps(sql: str) -> int:
    """Steps the sqleval profile spends building the shape of ``sql`` (its work, deterministic)."""
    budget = WorkBudget()
    ShapeBuilder(SCHEMA, sql, "sqlite", ignore_values=False, budget=budget).query(
        parse_statement(sql, "sqlite", allow_trailing_statements=False))
    return budget.limit - budget.left


def deep_stack(frames: int, function):
    """Call ``function`` with ``frames`` more frames on the stack (a deeper caller: pytester, xdist)."""
    return function() if frames <= 0 else deep_stack(frames - 1, function)


# -- 1. exact match is polynomial ---------------------------------------------------------------
@pytest.mark.parametrize("shape", list(NESTED))
@pytest.mark.parametrize("depth", [10, 20])
def test_nested_queries_score_in_bounded_time(shape, depth):
    sql = NESTED[shape](depth)
    with Clock() as clock:
        verdict = exact_match(sql, sql, SCHEMA, profile="sqleval")
    assert verdict.match, verdict.reason
    assert clock.within()


@pytest.mark.parametrize("shape", list(NESTED))
def test_sqleval_work_grows_linearly_with_nesting(shape):
    """Every subquery is normalised once: twice as deep is about twice the work (it was 2^depth)."""
    ten, twenty = shape_steps(NESTED[shape](10)), shape_steps(NESTED[shape](20))
    assert twenty <= 2.5 * ten


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("depth", [10, 20, 30])
def test_nested_in_subqueries_differing_innermost(profile, depth):
    gold, same, other = in_subqueries(depth, 1), in_subqueries(depth, 1), in_subqueries(depth, 2)
    with Clock() as clock:
        assert exact_match(gold, same, SCHEMA, profile=profile).match
        verdict = exact_match(gold, other, SCHEMA, profile=profile)
    assert clock.within()
    if profile == "sqleval":  # the spider profile drops values (officially), so only sqleval sees the difference
        assert not verdict.match and verdict.reason == "clauses differ: where"
    else:
        assert verdict.match


@pytest.mark.parametrize("depth", [20, 30])
def test_spider_profile_reads_nested_scalar_predictions_quickly(depth):
    with Clock() as clock:
        verdict = exact_match("SELECT name FROM singer", scalar_in_select(depth), SCHEMA, profile="spider")
    assert verdict.reason == "outside_spider_grammar: subquery_in_expression"
    assert clock.within()


def test_select_aliases_that_double_stay_small():
    """``a+a AS b, b+b AS c, ...``: the alias expansion would be 2^40 characters long."""
    def chain(first: str) -> str:
        return (f"SELECT {first} AS a0, " + ", ".join(f"a{i} + a{i} AS a{i + 1}" for i in range(40))
                + " FROM singer ORDER BY a40")

    with Clock() as clock:
        assert exact_match(chain("age"), chain("age"), SCHEMA).match
        verdict = exact_match(chain("age"), chain("singer_id"), SCHEMA)
    assert not verdict.match and "order" in verdict.reason
    assert clock.within()


# -- 2. limits: a reason for the prediction, GoldTooComplex for the gold --------------------------
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("depth", [10, 20])
def test_moderate_parenthesis_depth_is_scored(profile, depth):
    gold = "SELECT name FROM singer WHERE age = 1"
    verdict = exact_match(gold, parens(depth), SCHEMA, profile=profile)
    if profile == "sqleval":
        assert verdict.match  # parentheses are looked through
    else:
        assert verdict.reason == "outside_spider_grammar: paren"


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("depth", [50, 300, 1000])
@pytest.mark.parametrize("generator", [parens, scalar_subqueries, in_subqueries, nested_ctes])
def test_too_deep_prediction_scores_zero_with_the_reason(profile, depth, generator):
    with Clock() as clock:
        verdict = exact_match("SELECT name FROM singer", generator(depth), SCHEMA, profile=profile)
    assert not verdict.match
    assert verdict.reason.startswith("nested too deeply to score (nesting depth ")
    assert verdict.reason.endswith("; the limit is 32)")
    assert clock.within()


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("depth", [50, 300])
def test_too_deep_gold_is_unreadable(profile, depth):
    with pytest.raises(GoldTooComplex, match=rf"nested too deeply to score \(nesting depth {depth}; the limit is 32\)"):
        exact_match(parens(depth), "SELECT name FROM singer", SCHEMA, profile=profile)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("terms", [1000, 5000])
def test_long_and_chains_are_scored(profile, terms):
    gold = and_chain(terms)
    assert exact_match(gold, gold, SCHEMA, profile=profile).match  # the gold is read once (cached)
    with Clock() as clock:
        shorter = exact_match(gold, and_chain(terms - 1), SCHEMA, profile=profile)
    assert not shorter.match and "where" in shorter.reason
    assert clock.within()


@pytest.mark.parametrize("profile", PROFILES)
def test_long_or_chain_is_scored(profile):
    sql = "SELECT name FROM singer WHERE " + " OR ".join(f"age = {i}" for i in range(2000))
    with Clock() as clock:
        verdict = exact_match(sql, sql, SCHEMA, profile=profile)
    assert verdict.match if profile == "sqleval" else verdict.reason is None or verdict.match
    assert clock.within()


def test_in_list_of_ten_thousand_values():
    gold = "SELECT name FROM singer WHERE age IN (1, 2)"
    exact_match(gold, gold, SCHEMA)  # the gold is read once per session
    with Clock() as clock:
        sqleval = exact_match(gold, in_list(10_000), SCHEMA, profile="sqleval")
        spider = exact_match("SELECT name FROM singer WHERE age = 1", in_list(10_000), SCHEMA, profile="spider")
    assert sqleval.reason == "clauses differ: where"
    assert spider.reason == "outside_spider_grammar: in_value_list"
    assert clock.within(2 * BOUND)  # two readings of 20,000 tokens
    assert exact_match(in_list(10_000), in_list(10_000), SCHEMA).match


@pytest.mark.parametrize("profile", PROFILES)
def test_200_kb_string_literal_is_scored_quickly(profile):
    prediction = "SELECT name FROM singer WHERE name = '" + "x" * 200_000 + "'"
    with Clock() as clock:
        verdict = exact_match("SELECT name FROM singer WHERE name = 'x'", prediction, SCHEMA, profile=profile)
    assert clock.within(1.0)
    if profile == "sqleval":
        assert verdict.reason == "clauses differ: where"
    else:
        assert verdict.match  # the official evaluator ignores values


@pytest.mark.parametrize("profile", PROFILES)
def test_200_kb_of_conditions_is_refused_by_its_token_count(profile):
    prediction = "SELECT name FROM singer WHERE " + " OR ".join(f"name = 'n{i}'" for i in range(20_000))
    prediction = prediction[:prediction.rfind(" OR ", 0, 200_000)]
    assert 190_000 < len(prediction) <= 200_000
    with Clock() as clock:
        verdict = exact_match("SELECT name FROM singer", prediction, SCHEMA, profile=profile)
    assert not verdict.match
    assert verdict.reason.startswith("too long to score (") and verdict.reason.endswith(" tokens; the limit is 25,000)")
    assert clock.within()


@pytest.mark.parametrize("profile", PROFILES)
def test_text_beyond_the_character_limit_is_refused_before_tokenizing(profile):
    prediction = "SELECT name FROM singer WHERE name = '" + "x" * 10_000_000 + "'"
    with Clock() as clock:
        verdict = exact_match("SELECT name FROM singer", prediction, SCHEMA, profile=profile)
    assert verdict.reason == "too long to score (10,000,039 characters; the limit is 262,144)"
    assert clock.within(0.5)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("sql", [
    "SELECT name FROM singer WHERE age = " + "NOT age = " * 300 + "1",  # NOT nests without brackets
    "SELECT " + "INTERVAL " * 300 + "'1' DAY",
])
def test_recursion_past_the_token_checks_is_caught_and_reproducible(profile, sql):
    """The frame budget is relative to the caller's stack: the verdict does not depend on its depth."""
    shallow = exact_match("SELECT name FROM singer", sql, SCHEMA, profile=profile)
    deep = deep_stack(400, lambda: exact_match("SELECT name FROM singer", sql, SCHEMA, profile=profile))
    assert shallow == deep
    assert shallow.reason == "nested too deeply to score (Python's recursion limit was reached)"
    with pytest.raises(GoldTooComplex, match="recursion limit"):
        exact_match(sql, "SELECT name FROM singer", SCHEMA, profile=profile)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("sql", [
    "SELECT age FROM singer WHERE " + "age = " * 1000 + "1",  # a comparison chain: tree depth 1,000
    "SELECT " + " || ".join(["name"] * 3000) + " FROM singer",
    "SELECT age" + "::INT" * 2000 + " FROM singer",
    " UNION ".join(["SELECT name FROM singer"] * 300),
])
def test_deep_trees_without_brackets_are_refused_by_tree_depth(profile, sql):
    with Clock() as clock:
        verdict = exact_match("SELECT name FROM singer", sql, SCHEMA, profile=profile)
    assert verdict.reason.startswith("nested too deeply to score (tree depth ")
    assert verdict.reason.endswith("; the limit is 160)")
    assert clock.within()


# -- 4. the work budget ------------------------------------------------------------------------------
def test_work_budget_counts_deterministically():
    budget = WorkBudget(10)
    budget.spend(10)
    with pytest.raises(SqlTooComplex, match=r"^too complex to score \(more than 10 steps\)$"):
        budget.spend()


@pytest.mark.parametrize("profile", PROFILES)
def test_past_the_work_budget_the_prediction_is_too_complex(profile, monkeypatch):
    monkeypatch.setattr(limits, "WORK_BUDGET", 50)
    gold = "SELECT name FROM singer WHERE age = 7"
    exact_match(gold, gold, SCHEMA, profile=profile)  # 50 steps are enough for the gold
    verdict = exact_match(gold, and_chain(60), SCHEMA, profile=profile)
    assert verdict.reason == "too complex to score (more than 50 steps)"
    with pytest.raises(GoldTooComplex, match=r"too complex to score \(more than 50 steps\)"):
        exact_match(and_chain(61), gold, SCHEMA, profile=profile)
    assert difficulty_label(and_chain(62), SCHEMA) == (None, "unclassified: too complex to score (more than 50 steps)")


# -- 3. hardness: bare boolean conditions, and never an error ----------------------------------------
FLAGS = Schema((Table("customers", ("id", "name", "is_vip", "flag", "active")),))


@pytest.mark.parametrize("sql, level, counts", [
    ("SELECT name FROM customers WHERE is_vip", "easy", (1, 0, 0)),
    ("SELECT name FROM customers WHERE NOT flag", "easy", (1, 0, 0)),
    ("SELECT max(id) FROM customers WHERE NOT flag", "medium", (1, 0, 1)),  # official quirk: NOT counts as an aggregate
    ("SELECT name FROM customers WHERE is_vip AND flag", "medium", (1, 0, 1)),  # two WHERE conditions
    ("SELECT name FROM customers WHERE is_vip OR name LIKE 'A%'", "hard", (3, 0, 1)),  # + OR + LIKE
    ("SELECT name FROM customers GROUP BY name HAVING MAX(is_vip)", "easy", (1, 0, 0)),
    ("SELECT name FROM customers WHERE TRUE", "easy", (1, 0, 0)),
    ("SELECT name FROM customers WHERE abs(id)", "easy", (1, 0, 0)),
    ("SELECT name FROM customers WHERE (SELECT max(is_vip) FROM customers)", "easy", (1, 0, 0)),
])
def test_bare_boolean_conditions_are_classified(sql, level, counts):
    result = classify_hardness(sql, FLAGS)
    assert (result.level, (result.component1, result.component2, result.others)) == (level, counts)
    assert result.extended
    assert difficulty_label(sql, FLAGS) == (level, "spider_extended")


def test_corrected_classifier_counts_an_aggregate_in_a_bare_having():
    with_aggregate = classify_hardness("SELECT name, max(id) FROM customers GROUP BY name HAVING MAX(is_vip)", FLAGS,
                                       classifier="sqleval")
    without = classify_hardness("SELECT name, max(id) FROM customers GROUP BY name HAVING is_vip", FLAGS,
                                classifier="sqleval")
    assert (with_aggregate.others, without.others) == (2, 1)
    sqleval_not = classify_hardness("SELECT max(id) FROM customers WHERE NOT flag", FLAGS, classifier="sqleval")
    assert sqleval_not.level == "easy"  # the corrected classifier does not count NOT as an aggregate


@pytest.mark.parametrize("sql, source", [
    (parens(300), "unclassified: nested too deeply to score (nesting depth 300; the limit is 32)"),
    ("SELECT " + "x" * 300_000, "unclassified: too long to score (300,007 characters; the limit is 262,144)"),
    (and_chain(13_000), "unclassified: too long to score (52,004 tokens; the limit is 25,000)"),  # 5 + 3 x 13,000 + 12,999
    ("SELEC name FROM", "unparsed"),
    ('SELECT "', "unparsed"),  # a text objection first, then the lenient reading cannot parse it either
])
def test_difficulty_label_never_raises(sql, source):
    with Clock() as clock:
        assert difficulty_label(sql, SCHEMA) == (None, source)
    assert clock.within()


def test_difficulty_label_turns_an_unexpected_error_into_unclassified():
    level, source = difficulty_label("SELECT name FROM singer", None)  # no schema: a bug of the caller
    assert level is None and source.startswith("unclassified: AttributeError")


def test_classify_hardness_raises_the_limit_error():
    with pytest.raises(SqlTooComplex, match="nesting depth 300"):
        classify_hardness(parens(300), SCHEMA)


# -- the ORDER BY plan, the DISTINCT rewrite, gold checks -------------------------------------------
ORDER_BY = resolve_execution({"profile": "sqleval", "row_order": "order_by", "ties": "any"})


@pytest.mark.parametrize("depth, ordered", [(300, False), (5000, False)])
def test_order_plan_falls_back_to_the_text_for_a_gold_beyond_the_limits(depth, ordered):
    plan = plan_order(parens(depth), "sqlite", ORDER_BY)
    assert plan.ordered is ordered
    assert plan.note.startswith(f"the gold could not be parsed (nested too deeply to score (nesting depth {depth}")


def test_order_plan_of_a_deep_ordered_gold_is_strict():
    plan = plan_order(parens(300) + " ORDER BY name", "sqlite", ORDER_BY)
    assert plan.ordered and "contains 'order by'" in plan.note


@pytest.mark.parametrize("sql", [parens(50), parens(300), and_chain(13_000), "SELECT age FROM singer WHERE " + "age = " * 1000 + "1"])
def test_strip_distinct_raises_a_sqlglot_error_with_the_reason(sql):
    from sqlglot.errors import SqlglotError

    with pytest.raises(SqlglotError, match="to score"):
        strip_distinct(sql, "sqlite")


def test_strip_distinct_keeps_working_at_moderate_depth():
    sql = "SELECT DISTINCT name FROM singer WHERE age IN " + "(SELECT DISTINCT age FROM singer WHERE age IN " * 15 + "(1)" + ")" * 15
    assert "DISTINCT" not in strip_distinct(sql, "sqlite")


def test_gold_checks_skip_what_they_cannot_read(tmp_path):
    engine = create_engine(f"sqlite:///{make_sqlite(tmp_path / 'shop.sqlite')}")
    gold = "SELECT name FROM shops WHERE id = " + "(" * 40 + "1" + ")" * 40 + " ORDER BY name LIMIT 1"
    findings = determinism_findings(gold, QueryResult(("name",), [("Avionics",)]), engine, dialect="sqlite",
                                    timeout=5, max_rows=100)
    assert [(f.kind, f.severity) for f in findings] == [("too_complex", "warning")]
    assert findings[0].message.startswith("nested too deeply to score (nesting depth 40; the limit is 32)")


def test_bounded_stack_restores_the_recursion_limit():
    before = sys.getrecursionlimit()
    exact_match("SELECT name FROM singer", parens(20), SCHEMA)
    exact_match("SELECT name FROM singer", "SELECT name FROM singer WHERE age = " + "NOT age = " * 300 + "1", SCHEMA)
    assert sys.getrecursionlimit() == before


@pytest.mark.parametrize("sql", ["", " ", ";", "SELECT", "SELECT 'a\udcff'", "VALUES (1)", "SELECT count() FROM singer",
                                 "SELECT max(DISTINCT) FROM singer", "SELECT name FROM singer WHERE age IN ()"])
@pytest.mark.parametrize("profile", PROFILES)
def test_odd_text_never_raises(sql, profile):
    verdict = exact_match("SELECT name FROM singer", sql, SCHEMA, profile=profile)
    assert not verdict.match and verdict.reason
    try:
        exact_match(sql, sql, SCHEMA, profile=profile)
    except GoldUnreadable as exc:
        assert str(exc)
    difficulty_label(sql, SCHEMA)
    plan_order(sql, "sqlite", ORDER_BY)


# -- the plugin, as a user runs it -------------------------------------------------------------------
FLAGS_DB = """
CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT NOT NULL, is_vip BOOLEAN NOT NULL, active BOOLEAN NOT NULL);
INSERT INTO shops VALUES (1, 'Avionics', 1, 1), (2, 'Engines', 0, 1), (3, 'Cabin', 1, 0);
"""


def suite_yaml(cases: dict[str, tuple[str, str]], exact: str | None) -> str:
    lines = ["database: flags.sqlite", *([f"exact_match: {exact}"] if exact else []), "cases:"]
    for case_id, (gold, predicted) in cases.items():
        lines.append(f"  - id: {case_id}")
        lines.append(f"    gold: {json.dumps(gold)}")
        lines.append(f"    predicted: {json.dumps(predicted)}")
    return "\n".join(lines) + "\n"


HOSTILE_CASES = {
    "vip": ("SELECT name FROM shops WHERE is_vip", "SELECT name FROM shops WHERE is_vip"),
    "having-max": ("SELECT name FROM shops GROUP BY name HAVING MAX(is_vip)", "SELECT name FROM shops WHERE is_vip"),
    "not-flag": ("SELECT name FROM shops WHERE NOT active", "SELECT name FROM shops WHERE NOT active"),
    "and-flags": ("SELECT name FROM shops WHERE is_vip AND active", "SELECT name FROM shops WHERE active AND is_vip"),
    "parens-20": ("SELECT 1", "SELECT " + "(" * 20 + "1" + ")" * 20),
    "parens-50": ("SELECT 1", "SELECT " + "(" * 50 + "1" + ")" * 50),
    "scalar-20": ("SELECT 1", scalar_subqueries(20)),
    "in-20": ("SELECT name FROM shops", in_subqueries(20).replace("singer_id", "id").replace("singer", "shops").replace("age", "id")),
    "and-1000": ("SELECT name FROM shops", "SELECT name FROM shops WHERE " + " AND ".join(f"id <> {i}" for i in range(10, 1010))),
    "in-10000": ("SELECT name FROM shops", "SELECT name FROM shops WHERE id IN (" + ", ".join(map(str, range(10_000))) + ")"),
    "text-200kb": ("SELECT name FROM shops", "SELECT name FROM shops WHERE name <> '" + "x" * 200_000 + "'"),
    "not-chain": ("SELECT name FROM shops", "SELECT name FROM shops WHERE id = " + "NOT id = " * 300 + "1"),
    "gold-deep-300": ("SELECT " + "(" * 300 + "1" + ")" * 300, "SELECT 1"),
    "gold-deep-40": ("SELECT name FROM shops WHERE id = " + "(" * 40 + "1" + ")" * 40, "SELECT name FROM shops WHERE id = 1"),
}


@pytest.fixture
def hostile_suite(pytester):
    make_sqlite(pytester.path / "flags.sqlite", FLAGS_DB)

    def write(exact: str | None = "sqleval"):
        pytester.makefile(".sqleval.yaml", hostile=suite_yaml(HOSTILE_CASES, exact))
        return pytester

    return write


def run_json(pytester, *args):
    report = pytester.path / "report.json"
    with Clock() as clock:
        result = pytester.runpytest("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    output = "\n".join(result.outlines + result.errlines)
    assert "Traceback" not in output and "INTERNALERROR" not in output
    cases = {c["id"]: c for c in json.loads(report.read_text())["cases"]}
    return result, cases, clock.seconds


def test_hostile_suite_every_case_scored_or_errored_cleanly(hostile_suite):
    result, cases, seconds = run_json(hostile_suite(None))  # exact match computed, not asked for
    assert set(cases) == set(HOSTILE_CASES)
    # a gold SQLite cannot run is the suite's error, named by case; everything else is scored
    assert {i for i, c in cases.items() if c["outcome"] == "error"} == {"gold-deep-300"}
    assert "case gold-deep-300" in result.stdout.str() and "parser stack overflow" in result.stdout.str()
    assert result.ret == 1  # errors make the run exit non-zero
    assert cases["vip"]["outcome"] == "passed" and cases["vip"]["exact_match"] is True
    assert (cases["vip"]["difficulty"], cases["vip"]["difficulty_source"]) == ("easy", "spider_extended")
    assert cases["and-flags"]["exact_match"] is True  # AND operands are order-free
    assert cases["having-max"]["difficulty"] == "easy" and cases["having-max"]["exact_match"] is False
    assert cases["not-flag"]["exact_match"] is True
    assert cases["parens-20"]["exact_match"] is True
    assert cases["parens-50"]["exact_match"] is False
    assert cases["parens-50"]["exact_match_reason"] == "nested too deeply to score (nesting depth 50; the limit is 32)"
    assert cases["scalar-20"]["exact_match_reason"] == "clauses differ: select, select_no_agg"
    assert cases["in-20"]["exact_match_reason"].startswith("clauses differ: ")
    assert cases["and-1000"]["exact_match_reason"] == "clauses differ: where, where_no_op, and_or, keywords"
    assert cases["in-10000"]["exact_match_reason"] == "clauses differ: where, where_no_op, keywords"
    assert cases["text-200kb"]["exact_match_reason"] == "clauses differ: where, where_no_op, keywords"
    assert cases["not-chain"]["exact_match_reason"] == "nested too deeply to score (Python's recursion limit was reached)"
    # a gold beyond the limits that SQLite runs: scored by execution; exact match not computed, difficulty unclassified
    deep = cases["gold-deep-40"]
    assert deep["outcome"] == "passed" and deep["exact_match"] is None
    assert deep["exact_match_reason"] == "gold unreadable: nested too deeply to score (nesting depth 40; the limit is 32)"
    assert deep["difficulty"] is None
    assert deep["difficulty_source"] == "unclassified: nested too deeply to score (nesting depth 40; the limit is 32)"
    assert seconds < 120


@pytest.mark.parametrize("exact", ["sqleval", "spider"])
def test_hostile_predictions_only_miss_and_exit_zero(pytester, exact):
    """Golds every profile reads, hostile predictions: each case passes or misses, and the run exits 0."""
    make_sqlite(pytester.path / "flags.sqlite", FLAGS_DB)
    gold = "SELECT name FROM shops WHERE id = 1"
    scored = {k: (gold, predicted) for k, (_, predicted) in HOSTILE_CASES.items() if not k.startswith("gold-deep")}
    pytester.makefile(".sqleval.yaml", hostile=suite_yaml(scored, exact))
    result, cases, _ = run_json(pytester)
    assert result.ret == 0  # misses are the model's, not errors
    assert {c["outcome"] for c in cases.values()} <= {"passed", "missed"} and len(cases) == len(scored)
    reasons = {k: c["exact_match_reason"] for k, c in cases.items()}
    assert reasons["parens-50"] == "nested too deeply to score (nesting depth 50; the limit is 32)"
    assert reasons["not-chain"] == "nested too deeply to score (Python's recursion limit was reached)"
    if exact == "spider":
        assert reasons["vip"] == "outside_spider_grammar: column"
        assert reasons["and-1000"] == "outside_spider_grammar: <>"  # the official tokenizer splits <> in two
    else:
        assert reasons["vip"] == "clauses differ: where, where_no_op"
        assert reasons["and-1000"] == "clauses differ: where, where_no_op, and_or"


def test_deep_gold_named_when_exact_match_is_asked_for(pytester):
    make_sqlite(pytester.path / "flags.sqlite", FLAGS_DB)
    deep = "SELECT name FROM shops WHERE id = " + "(" * 40 + "1" + ")" * 40
    pytester.makefile(".sqleval.yaml", hostile=textwrap.dedent(f"""
        database: flags.sqlite
        pass_if: exact_match
        cases:
          - {{id: deep-gold, gold: "{deep}", predicted: "SELECT name FROM shops WHERE id = 1"}}
          - {{id: fine, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops"}}
    """))
    result, cases, _ = run_json(pytester)
    assert cases["deep-gold"]["outcome"] == "error" and cases["fine"]["outcome"] == "passed"
    assert ("case deep-gold: exact match cannot read the gold of case deep-gold: "
            "nested too deeply to score (nesting depth 40; the limit is 32)") in result.stdout.str()
    assert result.ret == 1


def test_a_gold_exact_match_cannot_read_names_the_fix(pytester):
    """`exact_match: sqleval` asked for and a gold that is no SELECT (VALUES; DuckDB's PIVOT): the error said
    "not a query: values" and stopped; it now says what exact match compares and how to score without it."""
    make_sqlite(pytester.path / "flags.sqlite", FLAGS_DB)
    pytester.makefile(".sqleval.yaml", values=textwrap.dedent("""
        database: flags.sqlite
        exact_match: sqleval
        cases:
          - {id: values-gold, gold: "VALUES (1)", predicted: "SELECT 1"}
          - {id: fine, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops"}
    """))
    result, cases, _ = run_json(pytester)
    assert cases["values-gold"]["outcome"] == "error" and cases["fine"]["outcome"] == "passed"
    assert ("case values-gold: exact match cannot read the gold of case values-gold: not a query: values; exact "
            "match compares the clauses of a SELECT query (or of a set operation of them) that sqlglot reads: write "
            "the gold as one, or remove `exact_match:` (and exact_match from `pass_if:`) to score this suite by "
            "execution only") in result.stdout.str()
    assert result.ret == 1


def test_check_gold_names_the_deep_gold(pytester):
    make_sqlite(pytester.path / "flags.sqlite", FLAGS_DB)
    pytester.makefile(".sqleval.yaml", hostile=suite_yaml({k: HOSTILE_CASES[k] for k in ("vip", "gold-deep-300", "gold-deep-40")},
                                                          None))
    result = pytester.runpytest("--sqleval", "--sqleval-check-gold", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert "case gold-deep-300" in out and "parser stack overflow" in out
    result.stdout.fnmatch_lines([
        "BROKEN gold-deep-300: the gold query failed on * (syntax): parser stack overflow [[]case gold-deep-300[]]",
        "warning gold-deep-40: too_complex: nested too deeply to score (nesting depth 40; the limit is 32): *",
    ])
    assert result.ret == 1
