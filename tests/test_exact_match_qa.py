"""Exact set match, QA round (helper-exact): layering of the invalid-text rule, LIMIT endings, comments.

- **Invalid text, in the reading itself.** The rule "a text no engine reads (not valid UTF-8, a NUL) never matches
  exactly" lived in two callers (the case scorer and ``check_exact_match``), so ``exact_match`` itself matched
  ``SELECT name FROM shops -- \\ud800`` against ``SELECT name FROM shops``. It now lives in ``sql.limits`` (which the
  metrics may import) and is applied once inside ``exact_match``.
"""

from __future__ import annotations

import pytest

from exact_match_support import SCHEMA
from pytest_sqleval.metrics.exact_match import GoldParseError, exact_match
from pytest_sqleval.sql.limits import invalid_text


@pytest.mark.parametrize("profile", ["sqleval", "spider"])
@pytest.mark.parametrize("suffix", [" -- \ud800", " /* \x00 */", "\x00", " /* \udcff */"])
def test_exact_match_itself_never_matches_invalid_text(profile, suffix):
    gold = "SELECT name FROM singer"
    verdict = exact_match(gold, gold + suffix, SCHEMA, profile=profile)
    assert verdict.match is False
    assert verdict.clauses == {}
    assert verdict.reason == f"parse_error: {invalid_text(gold + suffix)}"
    assert verdict.reason.startswith("parse_error: the prediction")
    assert exact_match(gold, gold + " -- fine", SCHEMA, profile="sqleval").match  # a valid comment still matches


def test_invalid_text_prediction_still_reads_the_gold_first():
    """The gold's errors are the suite's whatever the prediction (the contract :func:`read_gold` relies on)."""
    with pytest.raises(GoldParseError):
        exact_match("SELECT FROM WHERE (", "SELECT 1 -- \ud800", SCHEMA, profile="sqleval")


# --------------------------------------------------------------------------- LIMIT endings and `;` before a set operation
# Official verdicts recorded from test-suite-sql-eval's evaluation.py (get_sql, rebuild_sql_val/col, eval_exact_match)
# on the Spider dev database concert_singer, per item. The official `parse_limit` takes the token after LIMIT as its
# value whatever it is (`;`, `)`), and `parse_sql` skips `;` before reading a set operation or, in parentheses, the
# `)` that closes the query: `q; UNION q2` is a UNION there (ours stopped at the `;`), `IN (SELECT ... LIMIT ))` and
# `(SELECT ... LIMIT 1 ;)` read (ours: parse errors).
_UNION = "SELECT name FROM singer UNION SELECT name FROM singer WHERE age > 20"
_UNION_LIMIT = "SELECT name FROM singer LIMIT 3 UNION SELECT name FROM singer WHERE age > 20"
_IN_LIMIT = "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert LIMIT 1)"
_IN_LIMIT_AND = _IN_LIMIT + " AND age > 3"
_FROM_LIMIT = "SELECT count(*) FROM (SELECT name FROM singer LIMIT 1)"
_IN_UNION = ("SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert LIMIT 1 "
             "UNION SELECT singer_id FROM singer)")


@pytest.mark.parametrize("gold, pred, official", [
    (_UNION, "SELECT name FROM singer ; UNION SELECT name FROM singer WHERE age > 20", True),
    (_UNION_LIMIT, "SELECT name FROM singer LIMIT 3 ; UNION SELECT name FROM singer WHERE age > 20", True),
    (_UNION_LIMIT, "SELECT name FROM singer LIMIT ; UNION SELECT name FROM singer WHERE age > 20", True),
    (_UNION_LIMIT, "SELECT name FROM singer LIMIT ;; UNION SELECT name FROM singer WHERE age > 20", True),
    (_UNION_LIMIT, "SELECT name FROM singer LIMIT 3 ;; UNION SELECT name FROM singer WHERE age > 20", True),
    (_UNION_LIMIT, "SELECT name FROM singer LIMIT ; ; UNION SELECT name FROM singer WHERE age > 20 ;", True),
    (_UNION_LIMIT, "SELECT name FROM singer LIMIT ) UNION SELECT name FROM singer WHERE age > 20", True),
    (_UNION_LIMIT, "SELECT name FROM singer LIMIT ); UNION SELECT name FROM singer WHERE age > 20", True),
    (_UNION_LIMIT, "SELECT name FROM singer LIMIT 3 ) UNION SELECT name FROM singer WHERE age > 20", False),
    (_UNION_LIMIT, "SELECT name FROM singer LIMIT UNION SELECT name FROM singer WHERE age > 20", False),
    ("SELECT name FROM singer LIMIT 3 EXCEPT SELECT name FROM singer WHERE age > 20",
     "SELECT name FROM singer LIMIT 3 ; EXCEPT SELECT name FROM singer WHERE age > 20", True),
    ("SELECT name FROM singer LIMIT 3", "SELECT name FROM singer LIMIT 3 ; UNION SELECT name FROM singer", False),
    ("SELECT name FROM singer LIMIT 3", "SELECT name FROM singer LIMIT 3 ; SELECT name FROM singer", True),
    ("SELECT name FROM singer LIMIT 3", "SELECT name FROM singer LIMIT ; SELECT name FROM singer", True),
    ("SELECT name FROM singer LIMIT 3", "SELECT name FROM singer LIMIT 3 ; -- c\n UNION SELECT name FROM singer",
     True),
    (_IN_LIMIT, _IN_LIMIT.replace("LIMIT 1)", "LIMIT ))"), True),
    (_IN_LIMIT, _IN_LIMIT.replace("LIMIT 1)", "LIMIT )"), False),
    (_IN_LIMIT, _IN_LIMIT.replace("LIMIT 1)", "LIMIT ;)"), True),
    (_IN_LIMIT, _IN_LIMIT.replace("LIMIT 1)", "LIMIT 1 ;)"), True),
    (_IN_LIMIT, _IN_LIMIT.replace("LIMIT 1)", "LIMIT 1 ; ;)"), True),
    (_IN_LIMIT, _IN_LIMIT.replace("LIMIT 1)", "LIMIT ) ; )"), True),
    (_IN_LIMIT_AND, _IN_LIMIT_AND.replace("LIMIT 1)", "LIMIT ))"), True),
    (_IN_LIMIT_AND, _IN_LIMIT_AND.replace("LIMIT 1)", "LIMIT ) )"), True),
    (_IN_LIMIT_AND, _IN_LIMIT_AND.replace("LIMIT 1)", "LIMIT )"), False),
    (_FROM_LIMIT, "SELECT count(*) FROM (SELECT name FROM singer LIMIT ))", True),
    (_FROM_LIMIT, "SELECT count(*) FROM (SELECT name FROM singer LIMIT ) )", True),
    (_FROM_LIMIT, "SELECT count(*) FROM (SELECT name FROM singer LIMIT ; )", True),
    (_IN_UNION, _IN_UNION.replace("LIMIT 1 UNION", "LIMIT 1 ; UNION"), True),
    (_IN_UNION, _IN_UNION.replace("LIMIT 1 UNION", "LIMIT ; UNION"), True),
    (_IN_UNION, _IN_UNION.replace("LIMIT 1 UNION", "LIMIT ) UNION"), True),
])
def test_spider_reads_limit_values_and_semicolons_as_the_official_parser(gold, pred, official):
    assert exact_match(gold, pred, SCHEMA, profile="spider").match is official
    if official:  # a gold written so is read the same way (the official run crashes on the others)
        assert exact_match(pred, gold, SCHEMA, profile="spider").match


@pytest.mark.parametrize("pred", [
    "SELECT name FROM singer LIMIT 3 ; UNION SELECT name FROM singer WHERE age > 20",
    "SELECT name FROM singer LIMIT ) UNION SELECT name FROM singer WHERE age > 20",
    "SELECT name FROM singer LIMIT 3 ;;",
    "SELECT name FROM singer LIMIT 3 ; ;",
    "SELECT name FROM singer LIMIT 3 ; /* end */ ;",
])
def test_sqleval_never_matches_a_text_no_database_runs_as_one_query(pred):
    """`q;;` is refused by the guard on every engine (and by Python's sqlite3): it matched exactly under `sqleval`."""
    gold = ("SELECT name FROM singer LIMIT 3" if "UNION" not in pred
            else "SELECT name FROM singer UNION SELECT name FROM singer WHERE age > 20 LIMIT 3")
    verdict = exact_match(gold, pred, SCHEMA, profile="sqleval")
    assert verdict.match is False
    assert verdict.reason.startswith("parse_error: ")
    for fine in ("SELECT name FROM singer LIMIT 3;", "SELECT name FROM singer LIMIT 3; -- end", ";SELECT name FROM singer LIMIT 3"):
        assert exact_match("SELECT name FROM singer LIMIT 3", fine, SCHEMA, profile="sqleval").match, fine


# --------------------------------------------------------------------------- an unterminated /* comment
@pytest.mark.parametrize("pred, official", [
    ("SELECT name FROM singer ORDER BY age LIMIT 1 /* cut", True),
    ("SELECT name FROM singer ORDER BY age LIMIT 1 /* cut off here", True),
    ("SELECT name FROM singer ORDER BY age LIMIT 1 /*", True),
    ("SELECT name FROM singer ORDER BY age LIMIT 1 ; /* cut", True),
    ("SELECT name FROM singer ORDER BY age LIMIT 1 /* a */ /* b", True),
    ("SELECT name FROM singer ORDER BY age /* cut", False),  # `/` read as division of the ORDER BY item
    ("SELECT name FROM singer ORDER BY age LIMIT 1 /* it's", False),  # an odd number of quotes
])
def test_spider_reads_an_unterminated_comment_as_words(pred, official):
    """NLTK knows no comments: an unterminated `/*` is junk words at the end (ours: a tokenizing error, always 0)."""
    assert exact_match("SELECT name FROM singer ORDER BY age LIMIT 1", pred, SCHEMA, profile="spider").match is official


def test_spider_unterminated_comment_after_group_by_and_after_from():
    gold = "SELECT count(*) FROM singer GROUP BY country"
    assert exact_match(gold, gold + " /* x", SCHEMA, profile="spider").match is True
    assert exact_match(gold, "SELECT count(*) FROM singer /* x", SCHEMA, profile="spider").match is False


def test_sqleval_reads_an_unterminated_comment_where_the_engine_does():
    """SQLite runs `SELECT ... /* cut off` (the comment reaches the end of the text); PostgreSQL and DuckDB refuse it."""
    gold = "SELECT name FROM singer"
    assert exact_match(gold, gold + " /* cut off", SCHEMA, profile="sqleval", dialect="sqlite").match is True
    assert exact_match(gold, gold + "; /* cut off", SCHEMA, profile="sqleval", dialect="sqlite").match is True
    for dialect in ("postgres", "duckdb"):
        verdict = exact_match(gold, gold + " /* cut off", SCHEMA, profile="sqleval", dialect=dialect)
        assert verdict.match is False and verdict.reason.startswith("parse_error: ")


def test_the_guard_reads_an_unterminated_comment_as_sqlite_does():
    from pytest_sqleval.errors import QueryError
    from pytest_sqleval.sql.guard import check_prediction

    assert check_prediction("SELECT 1 /* cut off", "sqlite").sql == "SELECT 1 /* cut off"  # the text runs as written
    check_prediction("SELECT 1; /* cut off", "sqlite")
    with pytest.raises(QueryError) as info:  # what the comment hides is never read as a call: it is a comment
        check_prediction("SELECT load_extension('x') /* cut off", "sqlite")
    assert info.value.kind == "rejected"
    for dialect in ("postgres", "duckdb"):
        with pytest.raises(QueryError) as info:
            check_prediction("SELECT 1 /* cut off", dialect)
        assert info.value.kind == "syntax"
    with pytest.raises(QueryError) as info:  # an unterminated string stays a syntax error
        check_prediction("SELECT 'a /* cut off", "sqlite")
    assert info.value.kind == "syntax"


def test_default_profile_runs_a_prediction_ending_in_an_unterminated_comment(pytester: pytest.Pytester) -> None:
    """The README: what the database runs should execute. SQLite runs `SELECT ... /* cut off` (and the `bird` and
    `test-suite` profiles ran it), but the guard of the default profile called it a syntax miss."""
    import json

    from conftest import make_sqlite

    make_sqlite(pytester.path / "shop.sqlite")
    (pytester.path / "s.sqleval.yaml").write_text(
        "suite: s\ndatabase: shop.sqlite\ncases:\n"
        "  - {id: plain, gold: SELECT name FROM shops, predicted: \"SELECT name FROM shops /* cut off\"}\n"
        "  - {id: semi, gold: SELECT name FROM shops, predicted: \"SELECT name FROM shops; /* cut off\"}\n"
        "  - {id: hidden, gold: SELECT name FROM shops, predicted: \"SELECT name FROM shops /* ; DROP TABLE shops\"}\n",
        encoding="utf-8")
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json")
    cases = {c["id"]: c for c in json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["cases"]}
    for name, case in cases.items():
        assert case["outcome"] == "passed", (name, case)
        assert case["execution_match"] is True and case["exact_match"] is True, (name, case)
    assert result.ret == 0


# --------------------------------------------------------------------------- sqleval: set operations with their own endings
def test_sqleval_an_ending_before_a_set_operator_never_matches():
    """`SELECT ... LIMIT 3 UNION SELECT ...`: sqlglot keeps the LIMIT on the first operand and the shape merged it with
    the compound's, so it matched the gold with the LIMIT at the end; SQLite, PostgreSQL and DuckDB all refuse it."""
    gold = "SELECT name FROM singer INTERSECT SELECT name FROM singer WHERE age > 3 ORDER BY name LIMIT 2"
    for pred in ("SELECT name FROM singer ORDER BY name LIMIT 2 INTERSECT SELECT name FROM singer WHERE age > 3",
                 "SELECT name FROM singer UNION SELECT name FROM singer LIMIT 2 UNION SELECT name FROM singer"):
        for dialect in ("sqlite", "postgres", "duckdb"):
            verdict = exact_match(gold, pred, SCHEMA, profile="sqleval", dialect=dialect)
            assert verdict.match is False and verdict.reason.startswith("parse_error: an ORDER BY, LIMIT or OFFSET")
    assert exact_match(gold, gold, SCHEMA, profile="sqleval").match


@pytest.mark.parametrize("gold, pred, expected", [
    # the compound's ORDER BY / LIMIT were dropped when the first operand was parenthesised
    ("(SELECT name FROM singer) UNION SELECT name FROM singer WHERE age > 3",
     "(SELECT name FROM singer) UNION SELECT name FROM singer WHERE age > 3 ORDER BY name LIMIT 2", False),
    ("SELECT name FROM singer UNION SELECT name FROM singer WHERE age > 3 ORDER BY name LIMIT 2",
     "(SELECT name FROM singer) UNION SELECT name FROM singer WHERE age > 3 ORDER BY name LIMIT 2", True),
    ("(SELECT name FROM singer) UNION SELECT name FROM singer WHERE age > 3",
     "SELECT name FROM singer UNION SELECT name FROM singer WHERE age > 3", True),
    # a first operand with its own LIMIT is not the compound with that LIMIT
    ("SELECT name FROM singer UNION SELECT name FROM singer WHERE age > 3 ORDER BY name LIMIT 2",
     "(SELECT name FROM singer ORDER BY name LIMIT 2) UNION SELECT name FROM singer WHERE age > 3", False),
    ("(SELECT name FROM singer ORDER BY name LIMIT 2) UNION SELECT name FROM singer WHERE age > 3",
     "(SELECT name FROM singer ORDER BY name LIMIT 3) UNION SELECT name FROM singer WHERE age > 3", False),
    ("(SELECT name FROM singer ORDER BY name LIMIT 2) UNION SELECT name FROM singer WHERE age > 3",
     "((SELECT name FROM singer ORDER BY name LIMIT 2)) UNION SELECT name FROM singer WHERE age > 3", True),
    ("(SELECT name FROM singer ORDER BY name LIMIT 2) UNION SELECT name FROM singer WHERE age > 3 ORDER BY name DESC",
     "(SELECT name FROM singer ORDER BY name LIMIT 2) UNION SELECT name FROM singer WHERE age > 3", False),
    # a parenthesised set operation first: its own operands count (they were dropped, only keywords differed)
    ("(SELECT name FROM singer UNION SELECT name FROM singer WHERE age < 2) INTERSECT SELECT name FROM singer "
     "WHERE age > 3",
     "(SELECT name FROM singer UNION SELECT name FROM singer WHERE age < 5) INTERSECT SELECT name FROM singer "
     "WHERE age > 3", False),
])
def test_sqleval_parenthesised_first_operand(gold, pred, expected):
    assert exact_match(gold, pred, SCHEMA, profile="sqleval", dialect="postgres").match is expected


def test_spider_refuses_join_on_true_as_the_official_parser():
    """sqlglot reads a bare `JOIN t` as `ON TRUE`, so a written `ON TRUE` was read as no condition (matched); the
    official parser fails on `true` ("Error col: true")."""
    gold = "SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id"
    for on in ("ON TRUE", "ON true"):
        verdict = exact_match(gold, f"SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 {on}", SCHEMA,
                              profile="spider")
        assert verdict.match is False and verdict.reason == "outside_spider_grammar: boolean"
    assert exact_match(gold, "SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2", SCHEMA,
                       profile="spider").match  # a bare JOIN reads (ON conditions are ignored officially)


@pytest.mark.parametrize("pred, official", [
    ("SELECT name FROM singer ORDER BY age LIMIT 1 UNION", False),
    ("SELECT name FROM singer ORDER BY age LIMIT 1 INTERSECT", False),
    ("SELECT name FROM singer ORDER BY age LIMIT 1 ; UNION", False),
    ("SELECT name FROM singer ORDER BY age LIMIT ; UNION", False),
    ("SELECT name FROM singer ORDER BY age LIMIT 1 UNION xyz", False),
    ("SELECT name FROM singer ORDER BY age LIMIT 1 xyz UNION", True),  # the parser stops at the word
])
def test_spider_a_truncated_set_operation_is_read_not_skipped_as_junk(pred, official):
    """`parse_sql` reads a set operator after any clause, and fails when no query follows (an IndexError); ours
    took the operator for junk after the LIMIT and matched."""
    assert exact_match("SELECT name FROM singer ORDER BY age LIMIT 1", pred, SCHEMA, profile="spider").match is official
    assert exact_match("SELECT name FROM singer GROUP BY name", "SELECT name FROM singer GROUP BY name UNION", SCHEMA,
                       profile="spider").match is False


def test_strip_distinct_reads_an_unterminated_comment_as_sqlite_does():
    """`distinct: strip` re-renders the text through sqlglot, which could not tokenize `... /* cut off`: a syntax miss
    ("cannot strip DISTINCT") for a text SQLite runs."""
    from pytest_sqleval.sql.rewrite import strip_distinct

    assert strip_distinct("SELECT DISTINCT name FROM shops /* cut off", "sqlite") == "SELECT name FROM shops /* cut off */"
    assert strip_distinct("SELECT name FROM shops /* cut off", "sqlite") == "SELECT name FROM shops /* cut off*/"


def test_sqleval_a_text_sqlite_refuses_as_two_statements_never_matches(pytester: pytest.Pytester) -> None:
    """`SELECT ...;` then a non-breaking space (or a vertical tab): sqlglot reads white space, SQLite's sqlite3 refuses
    it ("You can only execute one statement at a time", kind `rejected`), but exact match stayed true and
    `pass_if: exact_match` passed a text the database cannot run."""
    import json

    from conftest import make_sqlite

    make_sqlite(pytester.path / "shop.sqlite")
    tails = {"nbsp": ";\u00a0", "vt": ";\u000b", "nbsp_comment": ";\u00a0-- done", "fine": "; -- done"}
    (pytester.path / "u.sqleval.yaml").write_text(
        "suite: u\ndatabase: shop.sqlite\npass_if: exact_match\ncases:\n"
        + "".join(f"  - {{id: {name}, gold: SELECT name FROM shops}}\n" for name in tails), encoding="utf-8")
    (pytester.path / "p.jsonl").write_text("".join(json.dumps({"id": name, "sql": "SELECT name FROM shops" + tail}) + "\n"
                                                   for name, tail in tails.items()), encoding="utf-8")
    pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json",
                                  "--sqleval-predictions", "p.jsonl")
    cases = {c["id"]: c for c in json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["cases"]}
    assert cases["fine"]["outcome"] == "passed" and cases["fine"]["exact_match"] is True
    for name in ("nbsp", "vt", "nbsp_comment"):
        case = cases[name]
        assert case["error"]["kind"] == "rejected", (name, case)
        assert case["exact_match"] is False and case["outcome"] == "missed", (name, case)
        assert case["exact_match_reason"].startswith("parse_error: the database cannot run it: You can only"), case
