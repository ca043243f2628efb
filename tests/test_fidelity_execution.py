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
    # sqlparse also ends a statement after the keyword GO (capitals only): SQLite reads GO as an alias
    ("SELECT a FROM t GO SELECT b FROM t", "SELECT a FROM t GO"),
    ("SELECT a FROM t\nGO\nSELECT 2", "SELECT a FROM t\nGO"),
    ("SELECT a FROM t go SELECT 2", "SELECT a FROM t go SELECT 2"),
    ("SELECT t.GO FROM t", "SELECT t.GO FROM t"),
    # an unterminated /* (no comment to sqlparse) runs to the end of the text in SQLite: closed, it reads the same
    ("SELECT a FROM t /* cut off", "SELECT a FROM t /* cut off*/"),
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


# Python's sqlite3 accepts only ASCII white space (space, tab, \f, \n, \r) and comments after a statement; sqlglot
# reads a non-breaking space, U+3000, \v, \x1c... as white space. sqlparse keeps such a space (and `--`/`# `
# comments, up to a line break) in test-suite's first statement, so sqlite3 refuses it there too (checked against
# the official scripts: all 0).
@pytest.mark.parametrize("sql", [
    "SELECT a FROM t;\u00a0", "SELECT a FROM t; \u3000", "SELECT a FROM t;\x0b", "SELECT a FROM t; -- c\n\u00a0",
    "SELECT a FROM t; # note", ";\u00a0", "-- x\n\u00a0",
])
def test_test_suite_first_statement_keeps_the_space_sqlparse_keeps(sql):
    with pytest.raises(QueryError) as caught:
        official_text(sql, "sqlite", "official_distinct")
    assert caught.value.kind == "syntax"


@pytest.mark.parametrize("sql, expected", [
    ("SELECT a FROM t;\n\u00a0", "SELECT a FROM t;"),  # a line break ends sqlparse's statement: the rest never runs
    ("SELECT a FROM t;\n# note", "SELECT a FROM t;"),
    ("SELECT a FROM t; --+ hint\n\u00a0", "SELECT a FROM t;"),  # a hint comment starts the next statement
    ("SELECT a FROM t;\x0c-- c", "SELECT a FROM t;"),
])
def test_test_suite_first_statement_ends_where_sqlparse_ends_it(sql, expected):
    assert official_text(sql, "sqlite", "official_distinct") == expected


@pytest.mark.parametrize("sql", [
    "SELECT a FROM t;\u00a0", "SELECT a FROM t;\n\u3000", "SELECT a FROM t; -- c\n\x0b", "SELECT a FROM t;\x85",
])
def test_bird_refuses_non_ascii_space_after_the_semicolon_as_sqlite3_does(sql):
    with pytest.raises(QueryError) as caught:
        official_text(sql, "sqlite", "sqlite3")
    assert caught.value.kind == "rejected" and "one statement at a time" in caught.value.message


@pytest.mark.parametrize("sql", ["SELECT a FROM t;\x0c", "SELECT a FROM t;\r\n -- c\n/* d"])
def test_bird_accepts_ascii_space_and_comments_after_the_semicolon(sql):
    assert official_text(sql, "sqlite", "sqlite3") is not None


@pytest.mark.parametrize("mode", ["official_distinct", "sqlite3"])
@pytest.mark.parametrize("sql, expected", [
    ("\ufeffSELECT a FROM t", "SELECT a FROM t"),  # SQLite reads a BOM that starts a token as white space
    (" \ufeff\nSELECT a FROM t;", "SELECT a FROM t;"),
    ("\ufeff", None),  # no statement: it runs and returns no rows
])
def test_a_leading_byte_order_mark_runs_as_sqlite_reads_it(sql, expected, mode):
    assert official_text(sql, "sqlite", mode) == expected


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
  - id: go-separator
    gold: SELECT name FROM shops
    predicted: SELECT name FROM shops GO SELECT id FROM shops
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
    # sqlparse ends test-suite's first statement after GO (SQLite reads it as an alias); sqlite3 refuses the rest
    "go-separator": (True, False, False),
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


KEEP_DISTINCT_SUITE = """
database: shop.sqlite
execution: {profile: test-suite, distinct: keep}
cases:
  - id: empty-text-empty-gold
    gold: SELECT name FROM shops WHERE id > 10
    predicted: ""
  - id: nbsp-after-semicolon
    gold: SELECT name FROM shops
    predicted: "SELECT name FROM shops;\\u00a0"
"""


def test_test_suite_keep_distinct_runs_the_text_as_sqlite3_does(pytester):
    # with --keep_distinct the official hands the text to sqlite3 unchanged: "" runs and returns no rows (1 against
    # a gold without rows), and a non-breaking space after the ';' is "one statement at a time" (0)
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=KEEP_DISTINCT_SUITE)
    report = pytester.path / "report.json"
    pytester.runpytest("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider")
    cases = {c["id"]: c for c in json.loads(report.read_text())["cases"]}
    assert cases["empty-text-empty-gold"]["execution_match"] is True
    assert cases["nbsp-after-semicolon"]["execution_match"] is False
    assert cases["nbsp-after-semicolon"]["error"]["kind"] == "rejected"
