"""Reproduction profiles on the text real models emit: what the official evaluators run, and nothing more.

Each expectation was checked by hand against the official code (test-suite-sql-eval's ``parse.remove_distinct``
= ``sqlparse.parse(s)[0]`` with ``distinct`` tokens dropped, then ``sqlite3`` ``cursor.execute``; BIRD mini-dev's
``execute_sql`` = ``sqlite3`` ``cursor.execute`` on the whole text) and, for the suite below, by running them.
"""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml  # noqa: F401 - imported before pytester's in-process runs snapshot sys.modules (libyaml cannot re-import)

import pytest_sqleval.loader  # noqa: F401
from conftest import make_sqlite
from pytest_sqleval.errors import QueryError
from pytest_sqleval.metrics.execution_match import official_quick_rej
from pytest_sqleval.sql.guard import check_prediction
from pytest_sqleval.sql.statements import official_text, remove_distinct_tokens


# --------------------------------------------------------------------------- which text runs
@pytest.mark.parametrize("sql, expected", [
    # sqlparse's first statement: up to the first ';' at split level <= 0
    ("SELECT a FROM t; SELECT b FROM t", "SELECT a FROM t;"),
    ("SELECT a FROM t; ;", "SELECT a FROM t;"),
    ("SELECT a FROM t; /* end */", "SELECT a FROM t;"),
    ("SELECT a FROM t", "SELECT a FROM t"),
    # CASE ... END lowers the level to -1: the ';' still splits
    ("SELECT CASE WHEN a THEN 1 END FROM t; DROP TABLE t", "SELECT CASE WHEN a THEN 1 END FROM t;"),
    # an unclosed '(' keeps the level at 1: no split, the whole text is one statement (and fails to run)
    ("SELECT (a FROM t; SELECT 2", "SELECT (a FROM t; SELECT 2"),
    # a ';' inside a string or a comment is no boundary
    ("SELECT ';' FROM t -- ; x\n", "SELECT ';' FROM t -- ; x\n"),
    # no statement at all: it runs and returns no rows
    (";", None),
    ("-- no answer", None),
    ("/* nothing */ ;", None),
])
def test_test_suite_runs_sqlparse_first_statement(sql, expected):
    assert official_text(sql, "sqlite", "official_distinct") == expected


@pytest.mark.parametrize("sql, expected", [
    ("SELECT a FROM t; -- c", "SELECT a FROM t; -- c"),
    ("SELECT a FROM t; /* end */", "SELECT a FROM t; /* end */"),
    ("SELECT a FROM t;", "SELECT a FROM t;"),
    (";", None),
    ("-- nothing", None),
    ("", None),
])
def test_bird_hands_the_whole_text_to_sqlite3(sql, expected):
    assert official_text(sql, "sqlite", "sqlite3") == expected


@pytest.mark.parametrize("sql", ["SELECT a FROM t; SELECT b FROM t", "SELECT a FROM t; ;"])
def test_bird_refuses_a_second_statement_as_sqlite3_does(sql):
    # Python's sqlite3: "You can only execute one statement at a time." (also for a lone second ';')
    with pytest.raises(QueryError) as caught:
        official_text(sql, "sqlite", "sqlite3")
    assert caught.value.kind == "rejected" and "one statement at a time" in caught.value.message


@pytest.mark.parametrize("sql, expected", [
    ("SELECT DISTINCT name FROM t", "SELECT  name FROM t"),
    ("SELECT count(DISTINCT name) FROM t", "SELECT count( name) FROM t"),
    ("select distinct\u00a0name from t", "select \u00a0name from t"),  # the non-breaking space stays as written
    ("SELECT 'distinct', \"distinct\" FROM t", "SELECT 'distinct', \"distinct\" FROM t"),
    ("SELECT 1 AS 1 /* distinct */", "SELECT 1 AS 1 /* distinct */"),
])
def test_distinct_is_cut_from_the_text_as_remove_distinct_does(sql, expected):
    assert remove_distinct_tokens(sql, "sqlite") == expected


@pytest.mark.parametrize("sql", ["SELECT 1; /* end */", "SELECT 1; -- done", "SELECT 1;\n/* a */ -- b"])
def test_a_comment_after_the_semicolon_is_not_a_second_statement(sql):
    assert check_prediction(sql, "sqlite").tree.sql() == "SELECT 1"


def test_two_queries_are_still_refused_by_the_guard():
    with pytest.raises(QueryError, match="2 statements"):
        check_prediction("SELECT 1; SELECT 2", "sqlite")


# --------------------------------------------------------------------------- quick_rej
def test_quick_rej_sorts_values_as_strings():
    # (1, 1.5) sorts to (1.5, 1) ('<' after '.'), (1.0, 1.5) to (1.0, 1.5): rejected although equal
    assert official_quick_rej([(1, 1.5)], [(1.0, 1.5)], ordered=False) is False
    assert official_quick_rej([(1, 2)], [(2, 1)], ordered=False) is True
    assert official_quick_rej([(1,), (2,)], [(2,), (1,)], ordered=True) is False
    assert official_quick_rej([(1,), (2,)], [(2,), (1,)], ordered=False) is True


# --------------------------------------------------------------------------- through the plugin
SUITE = """
database: shop.sqlite
execution: {profile}
cases:
  - id: two-statements
    gold: SELECT name FROM shops
    predicted: SELECT name FROM shops; SELECT id FROM shops
  - id: stray-semicolon
    gold: SELECT name FROM shops
    predicted: "SELECT name FROM shops; ;"
  - id: end-comment
    gold: SELECT name FROM shops
    predicted: "SELECT name FROM shops; /* end */"
  - id: line-comment
    gold: SELECT name FROM shops
    predicted: "SELECT name FROM shops; -- done"
  - id: comment-only-empty-gold
    gold: SELECT name FROM shops WHERE id > 10
    predicted: "-- no answer"
  - id: semicolon-empty-gold
    gold: SELECT name FROM shops WHERE id > 10
    predicted: ";"
  - id: semicolon-rows-gold
    gold: SELECT name FROM shops
    predicted: ";"
  - id: int-float-row
    gold: SELECT id, 1.5 FROM shops WHERE id = 1
    predicted: SELECT id * 1.0, 1.5 FROM shops WHERE id = 1
  - id: distinct-nbsp
    gold: SELECT DISTINCT status FROM tickets
    predicted: "SELECT DISTINCT\\u00a0status FROM tickets"
  - id: distinct-as-number
    gold: SELECT DISTINCT status FROM tickets
    predicted: SELECT DISTINCT status AS 1 FROM tickets
"""

#: case -> execution_match per profile (test-suite, bird, sqleval), each checked against the official scripts
EXPECTED = {
    "two-statements": (True, False, False),
    "stray-semicolon": (True, False, False),
    "end-comment": (True, True, True),
    "line-comment": (True, True, True),
    "comment-only-empty-gold": (True, True, False),
    "semicolon-empty-gold": (True, True, False),
    "semicolon-rows-gold": (False, False, False),
    "int-float-row": (False, True, True),
    # test-suite keeps the non-breaking space (SQLite refuses it); BIRD and sqleval do not strip DISTINCT
    # and so run the text as written too: SQLite refuses it everywhere
    "distinct-nbsp": (False, False, False),
    # `AS 1` stays in the text test-suite runs (re-rendering it through sqlglot would have made it a valid alias)
    "distinct-as-number": (False, False, False),
}


@pytest.mark.parametrize("column, profile", [(0, "test-suite"), (1, "bird"), (2, "sqleval")])
def test_profiles_score_malformed_text_as_their_evaluator(pytester, column, profile):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(SUITE.format(profile=profile)))
    report = pytester.path / "report.json"
    pytester.runpytest("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider")
    cases = {c["id"]: c for c in json.loads(report.read_text())["cases"]}
    got = {case_id: cases[case_id]["execution_match"] for case_id in EXPECTED}
    assert got == {case_id: row[column] for case_id, row in EXPECTED.items()}
    # nothing after the first statement ever ran: the guard saw one statement, and SQLite was never asked
    if profile == "test-suite":
        assert cases["two-statements"]["valid"] is True
    if profile == "bird":
        assert cases["two-statements"]["error"]["kind"] == "rejected"
