"""QA round 7 on exact set match (issue 3): inputs nobody tuned for."""

import json

import pytest

from conftest import require_module
from exact_match_support import SCHEMA, failing
from pytest_sqleval.metrics.exact_match import exact_match

A = "SELECT name FROM singer"
B = "SELECT name FROM concert"
C = "SELECT name FROM stadium"


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])  # SQLite refuses a parenthesised compound operand
@pytest.mark.parametrize("op1, op2", [("UNION", "EXCEPT"), ("UNION ALL", "EXCEPT"), ("EXCEPT", "UNION"),
                                      ("UNION", "UNION")])
def test_parenthesised_first_compound_operand_is_the_same_chain(dialect, op1, op2):
    # `(A op1 B) op2 C` is how `A op1 B op2 C` groups (operators of equal precedence group from the left in DuckDB
    # and PostgreSQL): the parentheses change nothing, as `(A) UNION B` = `A UNION B` already
    gold = f"{A} {op1} {B} {op2} {C}"
    pred = f"({A} {op1} {B}) {op2} {C}"
    verdict = exact_match(gold, pred, SCHEMA, profile="sqleval", dialect=dialect)
    assert verdict.match, (failing(verdict), verdict.reason)
    assert exact_match(pred, gold, SCHEMA, profile="sqleval", dialect=dialect).match


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
def test_parenthesised_intersect_first_is_its_precedence(dialect):
    # INTERSECT binds tighter in DuckDB and PostgreSQL: `(A INTERSECT B) UNION C` is `A INTERSECT B UNION C`
    verdict = exact_match(f"{A} INTERSECT {B} UNION {C}", f"({A} INTERSECT {B}) UNION {C}", SCHEMA,
                          profile="sqleval", dialect=dialect)
    assert verdict.match, (failing(verdict), verdict.reason)


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
def test_parentheses_that_regroup_still_differ(dialect):
    # ... but `(A UNION B) INTERSECT C` is not `A UNION B INTERSECT C` there (= `A UNION (B INTERSECT C)`)
    assert not exact_match(f"{A} UNION {B} INTERSECT {C}", f"({A} UNION {B}) INTERSECT {C}", SCHEMA,
                           profile="sqleval", dialect=dialect).match
    assert exact_match(f"{A} UNION {B} INTERSECT {C}", f"{A} UNION ({B} INTERSECT {C})", SCHEMA,
                       profile="sqleval", dialect=dialect).match


@pytest.mark.parametrize("pred", [
    f"{A} UNION ({B} EXCEPT {C})",                         # regrouped to the right
    f"({A} UNION {B} LIMIT 2) EXCEPT {C}",                  # the inner compound has its own LIMIT
    f"({A} UNION {B} ORDER BY name) EXCEPT {C} ORDER BY name",
    f"({A} UNION {B}) INTERSECT {C}",
    f"({A} INTERSECT {B}) EXCEPT {C}",
])
def test_parenthesised_compounds_that_are_other_queries_still_differ(pred):
    assert not exact_match(f"{A} UNION {B} EXCEPT {C}", pred, SCHEMA, profile="sqleval", dialect="postgres").match


def test_parenthesised_first_operand_keeps_the_trailing_order_and_limit():
    gold = f"{A} UNION {B} EXCEPT {C} ORDER BY name DESC LIMIT 3"
    assert exact_match(gold, f"({A} UNION {B}) EXCEPT {C} ORDER BY name DESC LIMIT 3", SCHEMA,
                       profile="sqleval", dialect="duckdb").match
    assert not exact_match(gold, f"({A} UNION {B}) EXCEPT {C} ORDER BY name LIMIT 3", SCHEMA,
                           profile="sqleval", dialect="duckdb").match


def _duckdb_suite(root):
    (root / "schema.sql").write_text(
        "CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT);\n"
        "CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, name TEXT);\n"
        "CREATE TABLE stadium (stadium_id INTEGER PRIMARY KEY, name TEXT);\n"
        "INSERT INTO singer VALUES (1, 'a'), (2, 'b');\n"
        "INSERT INTO concert VALUES (1, 'b'), (2, 'c');\n"
        "INSERT INTO stadium VALUES (1, 'c');\n")
    gold = f"{A} UNION {B} EXCEPT {C}"
    (root / "names.sqleval.yaml").write_text(
        'database: {url: "duckdb://", setup: [schema.sql]}\n'
        "exact_match: sqleval\n"
        "pass_if: exact_match\n"
        "cases:\n"
        "  - id: names\n"
        "    interaction:\n"
        f"      - {{gold: \"{A}\", predicted: \"({A})\"}}\n"
        f"      - {{gold: \"{gold}\", predicted: \"({A} UNION {B}) EXCEPT {C}\"}}\n"
        f"      - {{gold: \"{gold}\", predicted: \"{A} UNION ({B} EXCEPT {C})\"}}\n")


@pytest.mark.parametrize("args", [(), ("-n", "2")])
def test_parenthesised_compound_through_a_duckdb_interaction(pytester, args):
    require_module("duckdb")
    _duckdb_suite(pytester.path)
    report = pytester.path / "report.json"
    run = pytester.runpytest_subprocess if args else pytester.runpytest
    run("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    data = json.loads(report.read_text())
    verdicts = {case["turn"]: case["exact_match"] for case in data["cases"]}
    # turn 2 groups as written without the parentheses; turn 3 regroups (and its result differs: 'b' is kept)
    assert verdicts == {1: True, 2: True, 3: False}
    clauses = {case["turn"]: case["clauses"] for case in data["cases"]}
    assert all(clauses[2].values())
    assert not clauses[3]["iuen"]
    metrics = data["suites"][0]["metrics"]
    assert metrics["question_match"] == pytest.approx(2 / 3)
    assert metrics["interaction_match"] == 0


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
@pytest.mark.parametrize("gold, pred", [
    # the ORDER BY/LIMIT written after a parenthesised query are that query's: they were dropped, so a query that
    # returns one row matched the gold that returns all
    (A, f"({A}) ORDER BY name LIMIT 1"),
    (A, f"({A} ORDER BY name) LIMIT 1"),
    (f"{A} ORDER BY name", f"({A} ORDER BY name) LIMIT 1"),
    (f"{A} UNION {B}", f"({A} UNION {B}) LIMIT 1"),
    (f"{A} WHERE name IN ({B})", f"{A} WHERE name IN (({B}) LIMIT 1)"),
    (f"{A} UNION {B} EXCEPT {C}", f"(({A} UNION {B}) LIMIT 2) EXCEPT {C}"),
    (f"{A} ORDER BY name LIMIT 3", f"({A} LIMIT 3) ORDER BY name"),  # 3 rows, then sorted: not the first 3
])
def test_order_and_limit_after_parentheses_are_not_dropped(dialect, gold, pred):
    verdict = exact_match(gold, pred, SCHEMA, profile="sqleval", dialect=dialect)
    assert not verdict.match


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
@pytest.mark.parametrize("gold, pred", [
    (f"{A} ORDER BY name LIMIT 1", f"({A}) ORDER BY name LIMIT 1"),
    (f"{A} ORDER BY name DESC LIMIT 1", f"({A} ORDER BY name DESC) LIMIT 1"),
    (f"{A} LIMIT 3 OFFSET 1", f"({A} OFFSET 1) LIMIT 3"),
    (f"{A} UNION {B} ORDER BY name LIMIT 1", f"({A} UNION {B}) ORDER BY name LIMIT 1"),
    (f"{A} WHERE name IN ({B} ORDER BY name LIMIT 1)", f"{A} WHERE name IN (({B}) ORDER BY name LIMIT 1)"),
])
def test_order_and_limit_after_parentheses_count_as_written(dialect, gold, pred):
    verdict = exact_match(gold, pred, SCHEMA, profile="sqleval", dialect=dialect)
    assert verdict.match, (failing(verdict), verdict.reason)


def test_limit_after_parentheses_through_a_duckdb_suite(pytester):
    require_module("duckdb")
    _duckdb_suite(pytester.path)
    (pytester.path / "names.sqleval.yaml").write_text(
        'database: {url: "duckdb://", setup: [schema.sql]}\n'
        "pass_if: exact_match\n"
        "cases:\n"
        f"  - {{id: one-row, gold: \"{A}\", predicted: \"({A}) ORDER BY name LIMIT 1\"}}\n"
        f"  - {{id: same, gold: \"{A} ORDER BY name LIMIT 1\", predicted: \"({A}) ORDER BY name LIMIT 1\"}}\n")
    report = pytester.path / "report.json"
    pytester.runpytest("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider")
    cases = {case["id"]: case for case in json.loads(report.read_text())["cases"]}
    assert cases["one-row"]["exact_match"] is False
    assert cases["one-row"]["execution_match"] is False  # what the engine says too: one row, not two
    assert {name for name, ok in cases["one-row"]["clauses"].items() if not ok} >= {"order", "limit"}
    assert cases["same"]["exact_match"] is True
    assert cases["same"]["outcome"] == "passed"


@pytest.mark.parametrize("pred", [
    f"WITH t AS ({A}) (SELECT name FROM t)",
    f"WITH t AS ({A}) (SELECT name FROM t) ORDER BY name LIMIT 1",
])
def test_with_before_a_parenthesised_query_is_kept(pred):
    # sqlglot hangs the WITH on the parentheses: dropped with them, `t` was read as an unknown table
    gold = f"WITH t AS ({A}) SELECT name FROM t" + (" ORDER BY name LIMIT 1" if "LIMIT" in pred else "")
    verdict = exact_match(gold, pred, SCHEMA, profile="sqleval", dialect="postgres")
    assert verdict.match, (failing(verdict), verdict.reason)
    assert not exact_match(gold.replace("singer", "concert"), pred, SCHEMA, profile="sqleval", dialect="postgres").match
