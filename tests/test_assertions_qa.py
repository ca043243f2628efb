"""QA look (qa13) at issue 13's assertion helpers with inputs nobody tuned for, as an application developer writes
ordinary pytest tests (pytester, plugin installed but not activated with --sqleval)."""

from __future__ import annotations

import textwrap

import pytest


def _run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_app=textwrap.dedent(source))
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_sql_shown_in_a_failure_keeps_white_space_inside_literals(pytester: pytest.Pytester):
    """Gold `'a  b'` against a prediction `'a b'`: the failure printed both SQL texts as `SELECT 'a b'` (every run of
    white space, inside a literal too, became one space), so the two texts it says differ looked identical. Only the
    white space between tokens is collapsed now; a suite's `-v` miss shows the SQL the same way."""
    result = _run(pytester, """
        import sqlalchemy as sa
        from pytest_sqleval import assert_exact_match, assert_execution_match

        ENGINE = sa.create_engine("sqlite://")

        def test_execution():
            assert_execution_match("SELECT   'a  b'  AS v", "SELECT 'a b' AS v", engine=ENGINE)

        def test_exact():
            assert_exact_match("SELECT 1 FROM t WHERE a = 'x  y'", "SELECT 1\\n  FROM t WHERE a = 'x y'",
                               schema=ENGINE)
    """)
    result.assert_outcomes(failed=2)
    text = result.stdout.str()
    assert "gold SQL:      SELECT 'a  b' AS v" in text
    assert "predicted SQL: SELECT 'a b' AS v" in text
    assert "gold SQL:      SELECT 1 FROM t WHERE a = 'x  y'" in text
    assert "predicted SQL: SELECT 1 FROM t WHERE a = 'x y'" in text


def test_an_overridden_sqleval_engine_that_gives_a_url_is_a_type_error_naming_the_fix(pytester: pytest.Pytester):
    """A conftest's `sqleval_engine` that returns a URL string (as a suite's `database:` reads): the helpers called
    without `engine=` and `sqleval_query` failed with `AttributeError: 'str' object has no attribute 'dialect'`. It is
    the TypeError the README promises, naming the fixture and the fix, never the URL (it may hold a password)."""
    pytester.makeconftest("""
        import pytest

        @pytest.fixture
        def sqleval_engine():
            return "postgresql://app:s3cret@db.internal/shop"
    """)
    result = _run(pytester, """
        from pytest_sqleval import assert_exact_match, assert_execution_match, assert_policy

        def test_execution(sqleval_engine):
            assert_execution_match("SELECT 1", "SELECT 1")

        def test_exact(sqleval_engine):
            assert_exact_match("SELECT 1", "SELECT 1")

        def test_policy(sqleval_engine):
            assert_policy("SELECT 1", {"tables": ["t"]})

        def test_query(sqleval_query):
            sqleval_query("SELECT 1")
    """)
    result.assert_outcomes(failed=3, errors=1)
    text = result.stdout.str()
    assert "AttributeError" not in text
    for helper in ("assert_execution_match", "assert_exact_match", "assert_policy", "sqleval_query"):
        assert f"TypeError: {helper}: the sqleval_engine fixture gave a str, not a SQLAlchemy engine" in text
    assert "return sqleval_engine_factory(" in text
    assert "s3cret" not in "\n".join(line for line in result.outlines if line.startswith("E "))


def test_the_marker_builds_sqlalchemy_in_memory_urls_from_setup_scripts(pytester: pytest.Pytester):
    """`sqlite:///:memory:` is SQLAlchemy's own spelling of an in-memory SQLite database, and a suite's
    `database: {url: "sqlite:///:memory:", setup: [...]}` builds it. The marker refused it ("setup scripts ... cannot
    target an existing file"): `:memory:` was read as a file name. Without setup scripts it is an empty database,
    said as for `sqlite://` (not a suite's `url:` wording)."""
    pytester.makefile(".sql", schema="CREATE TABLE t (id INTEGER); INSERT INTO t VALUES (1), (2);")
    result = _run(pytester, """
        import pytest
        from pytest_sqleval import assert_execution_match

        @pytest.mark.parametrize("url", ["sqlite:///:memory:", "duckdb:///:memory:"])
        def test_built(request, url):
            request.node.add_marker(pytest.mark.sqleval_database(url, setup=["schema.sql"]))
            engine = request.getfixturevalue("sqleval_engine")
            assert engine.dialect.name == url.split(":")[0]
            assert_execution_match("SELECT id FROM t", "SELECT id FROM t ORDER BY id DESC")

        @pytest.mark.sqleval_database("duckdb:///:memory:")
        def test_empty(sqleval_engine):
            pass
    """)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*duckdb:///:memory: is an empty in-memory database; build it with setup scripts*"])
    assert "cannot target an existing file" not in result.stdout.str()


def test_a_dbapi_connection_is_named_with_its_module():
    """`engine=sqlite3.connect(...)` said "must be a SQLAlchemy engine or connection, not Connection": it read as if
    a connection had been refused for being one. The type is named with its module."""
    import sqlite3

    from pytest_sqleval import check_execution_match

    connection = sqlite3.connect(":memory:")
    try:
        with pytest.raises(TypeError, match=r"engine or connection, not sqlite3\.Connection;"):
            check_execution_match("SELECT 1", "SELECT 1", engine=connection)
    finally:
        connection.close()


def test_a_miss_on_json_and_array_columns_shows_them_as_the_result_tables_do(pytester: pytest.Pytester):
    """A DuckDB STRUCT (a PostgreSQL JSON object alike) and a LIST: the result tables showed `{'k': 1}` and `[1, 2]`,
    but `rows only in gold/prediction` showed the comparison's internal forms, `frozenset({('k', 1)})` and `(1, 2)`."""
    from conftest import require_module

    require_module("duckdb")
    pytester.makefile(".sql", schema="CREATE TABLE t (id INTEGER, s STRUCT(k INTEGER, n VARCHAR), l INTEGER[]);"
                                     "INSERT INTO t VALUES (1, {'k': 1, 'n': 'a'}, [1, 2]);")
    result = _run(pytester, """
        import pytest
        from pytest_sqleval import assert_execution_match

        @pytest.mark.sqleval_database("duckdb://", setup=["schema.sql"])
        def test_struct():
            assert_execution_match("SELECT id, s, l FROM t", "SELECT id + 1, s, l FROM t")
    """)
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "frozenset" not in text
    assert "rows only in gold:       (1, {'k': 1, 'n': 'a'}, [1, 2])" in text
    assert "rows only in prediction: (2, {'k': 1, 'n': 'a'}, [1, 2])" in text


def test_limits_take_any_real_number_as_the_threshold_does():
    """`at_least=` took a Decimal or Fraction, but `timeout=Decimal("5")` was "must be a positive number of seconds,
    not Decimal('5')", and `max_rows=` a numpy integer (`len(frame)` is an int, `frame.shape[0]` may be numpy's)
    "must be a whole number of rows, not np.int64(5)". Any real number of seconds and any integral count are taken."""
    import numbers
    from decimal import Decimal
    from fractions import Fraction

    import sqlalchemy as sa

    from pytest_sqleval import check_execution_match
    from pytest_sqleval.assertions import run_limits

    class Count:  # an integral number that is no int, as numpy's int64 is
        def __init__(self, value: int) -> None:
            self.value = value

        def __int__(self) -> int:
            return self.value

        def __lt__(self, other: int) -> bool:
            return self.value < other

    numbers.Integral.register(Count)
    assert run_limits(Decimal("2.5"), Count(7)) == (2.5, 7)
    assert run_limits(Fraction(1, 2), 3) == (0.5, 3)
    for bad in (Decimal("NaN"), Decimal("sNaN"), Decimal("-Infinity"), Fraction(-1, 2)):
        with pytest.raises(ValueError, match="timeout= must be a positive number of seconds"):
            run_limits(bad, 1)
    with pytest.raises(ValueError, match="max_rows= must be a whole number of rows, at least 1"):
        run_limits(1, Count(0))
    engine = sa.create_engine("sqlite://")
    verdict = check_execution_match("SELECT 1", "SELECT 1", engine=engine, timeout=Decimal("5"), max_rows=Count(10))
    assert verdict.match


def test_the_errors_the_helpers_raise_are_importable_from_the_package():
    """The README says a broken gold raises `GoldError` (and an unreadable database is a `DatabaseError`), but
    `from pytest_sqleval import GoldError` was an ImportError: a test could not `pytest.raises` it by that name."""
    import sqlalchemy as sa

    from pytest_sqleval import DatabaseError, GoldError, check_execution_match, errors

    assert GoldError is errors.GoldError and DatabaseError is errors.DatabaseError
    with pytest.raises(GoldError, match="no such column: nope"):
        check_execution_match("SELECT nope", "SELECT 1", engine=sa.create_engine("sqlite://"))


def test_a_unittest_assert_on_a_verdict_gets_the_explanation_too(pytester: pytest.Pytester):
    """A team with unittest-style tests writes `self.assertTrue(verdict)`: it fails inside unittest's own frame, whose
    statement names no verdict, so the `sqleval verdict` section a plain `assert verdict` gets was missing and the
    failure said only `<ExecutionMatchCheck ...> is not true`. The frame that called into it is looked at too."""
    result = _run(pytester, """
        import unittest

        import sqlalchemy as sa
        from pytest_sqleval import check_execution_match

        ENGINE = sa.create_engine("sqlite://")

        class AnswersTest(unittest.TestCase):
            def test_open_tickets(self):
                verdict = check_execution_match("SELECT 1 UNION SELECT 2", "SELECT 1", engine=ENGINE)
                self.assertTrue(verdict)
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*sqleval verdict*",
        "execution_match failed (profile sqleval)",
        "  row_count: gold has 2 rows, the prediction 1",
        "  gold SQL:      SELECT 1 UNION SELECT 2",
    ])


def test_empty_text_and_edge_white_space_are_quoted_in_the_rows_only_lines(pytester: pytest.Pytester):
    """`coalesce(note, '')` against a gold with NULLs printed `rows only in prediction: (); ()`: an empty text read as
    an empty row. Text that is empty, or starts or ends with white space (`'Oslo '` against `Oslo`), is quoted there."""
    result = _run(pytester, """
        import sqlalchemy as sa
        from pytest_sqleval import assert_execution_match

        ENGINE = sa.create_engine("sqlite://")

        def test_empty():
            assert_execution_match("SELECT NULL AS note UNION ALL SELECT 'x'", "SELECT '' AS note UNION ALL SELECT 'x'",
                                   engine=ENGINE)

        def test_trailing_space():
            assert_execution_match("SELECT 'Oslo' AS city", "SELECT 'Oslo ' AS city", engine=ENGINE)
    """)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "E         rows only in gold:       (NULL)",
        "E         rows only in prediction: ('')",
        "E         rows only in gold:       (Oslo)",
        "E         rows only in prediction: ('Oslo ')",
    ])


def test_a_gold_the_spider_parser_cannot_read_says_what_to_do():
    """`assert_exact_match(..., profile="spider")` with a gold written `WHERE id=1` raised only
    "cannot read the gold SQL ...: operator_without_spaces". The message now says why (the profile reads SQL as the
    official parser, which cannot read that construct) and the way out."""
    import sqlalchemy as sa

    from pytest_sqleval import check_exact_match

    engine = sa.create_engine("sqlite://")
    with pytest.raises(ValueError, match=r"operator_without_spaces \(the spider profile reads SQL as the official "
                                         r"Spider parser.*use profile=\"sqleval\"\)"):
        check_exact_match("SELECT id FROM t WHERE id=1", "SELECT id FROM t", schema=engine, profile="spider")
    assert check_exact_match("SELECT id FROM t WHERE id=1", "SELECT id FROM t WHERE id = 1", schema=engine).match


def test_exact_match_of_a_prediction_no_engine_can_read_fails_as_execution_match_does():
    """`SELECT 1` followed by a NUL (or a lone surrogate) in a comment: `assert_execution_match` misses it (no engine
    reads such text, `syntax`), and a suite's exact match does too, but `assert_exact_match` passed (sqlglot reads
    past a comment). It fails with the same `parse_error` reason a suite records."""
    import sqlalchemy as sa

    from pytest_sqleval import check_exact_match, check_execution_match

    engine = sa.create_engine("sqlite://")
    for text, problem in (("SELECT 1 -- \x00", "contains a NUL character"), ("SELECT 1 -- \ud800", "not valid UTF-8")):
        assert not check_execution_match("SELECT 1", text, engine=engine)
        verdict = check_exact_match("SELECT 1", text, schema=engine)
        assert not verdict and verdict.reason.startswith("parse_error: ") and problem in verdict.reason
        assert problem in verdict.explain()
        assert not check_exact_match("SELECT 1", text, schema=engine, clauses=["select"])
