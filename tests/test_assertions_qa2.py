"""Second QA look (helper-assertions) at issue 13's helpers, marker and fixtures in ordinary pytest tests, with
inputs nobody tuned for (pytester, plugin installed but not activated with --sqleval)."""

from __future__ import annotations

import sqlite3
import textwrap

import pytest


def _run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_app=textwrap.dedent(source))
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_marker_database_from_an_environment_variable_holding_the_whole_url_or_path(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """`@pytest.mark.sqleval_database("${DATABASE_URL}")` (the variable holds the whole URL) and `("${DB_FILE}")`
    errored with `database file not found: .../${DATABASE_URL}`: `${VAR}` expanded only when the text already held
    `://`. A suite's `database: "${DATABASE_URL}"` and `sqleval_engine_factory("${DATABASE_URL}")` expand it, and the
    README says the marker's URL expands as in a suite's `database:`; setup script paths expand too."""
    db = pytester.path / "shop.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (7);")
    conn.close()
    pytester.path.joinpath("schema.sql").write_text("CREATE TABLE u (b INTEGER); INSERT INTO u VALUES (3);\n")
    monkeypatch.setenv("QA2_DATABASE_URL", f"sqlite:///{db}")
    monkeypatch.setenv("QA2_DB_FILE", "shop.sqlite")
    monkeypatch.setenv("QA2_SCRIPT", "schema")
    monkeypatch.delenv("QA2_UNSET", raising=False)
    result = _run(pytester, """
        import pytest
        from pytest_sqleval import assert_execution_match

        @pytest.mark.sqleval_database("${QA2_DATABASE_URL}")
        def test_whole_url():
            assert_execution_match("SELECT a FROM t", "SELECT 7")

        @pytest.mark.sqleval_database("${QA2_DB_FILE}")
        def test_whole_path():
            assert_execution_match("SELECT a FROM t", "SELECT 7")

        @pytest.mark.sqleval_database("sqlite://", setup=["${QA2_SCRIPT}.sql"])
        def test_setup_path():
            assert_execution_match("SELECT b FROM u", "SELECT 3")

        @pytest.mark.sqleval_database("${QA2_UNSET}")
        def test_unset(sqleval_engine):
            pass
    """)
    result.assert_outcomes(passed=3, errors=1)
    text = result.stdout.str()
    assert "the database path uses ${QA2_UNSET}, which is not set; set it or write ${QA2_UNSET:-default}" in text
    assert "database file not found" not in text


@pytest.mark.parametrize("mode", [("--assert=plain",), ("-p", "no:assertion"), ("--assert=rewrite",)])
def test_an_assert_on_a_check_helper_call_explains_itself_without_assertion_rewriting(pytester: pytest.Pytester,
                                                                                        mode: tuple[str, ...]):
    """`assert check_execution_match(...)` (the verdict held in no variable) under `--assert=plain` or
    `-p no:assertion` failed with a bare `AssertionError` and nothing else: the `sqleval verdict` section was found
    only for verdicts in a local variable. The helper's latest verdict in the test is shown now, also through
    unittest's `self.assertTrue(check_...(...))`; a passing verdict (`assert not check_...`) or an unrelated assert
    after a failing verdict adds no section."""
    result = _run(pytester, """
        import unittest

        import sqlalchemy as sa
        from pytest_sqleval import check_exact_match, check_execution_match, check_policy_of, check_soft_f1

        E = sa.create_engine("sqlite://")

        def test_execution():
            assert check_execution_match("SELECT 1", "SELECT 2", engine=E)

        def test_soft_f1():
            assert check_soft_f1("SELECT 1, 2", "SELECT 1", engine=E, at_least=0.9)

        def test_exact():
            assert check_exact_match("SELECT a FROM t", "SELECT b FROM t", schema=E)

        def test_policy():
            assert check_policy_of("SELECT secret FROM t", forbid_columns=["secret"], engine=E)

        def test_not_on_a_pass():
            failing = check_execution_match("SELECT 1", "SELECT 41", engine=E)
            assert not check_execution_match("SELECT 1", "SELECT 1", engine=E)

        def test_unrelated():
            failing = check_execution_match("SELECT 1", "SELECT 42", engine=E)
            assert 1 == 2

        class TestCase(unittest.TestCase):
            def test_unittest(self):
                self.assertTrue(check_execution_match("SELECT 1", "SELECT 3", engine=E))
    """, *mode)
    result.assert_outcomes(failed=7)
    text = result.stdout.str()
    sections = text.split("sqleval verdict")
    assert len(sections) - 1 == 5, text
    assert "predicted SQL: SELECT 2" in text
    assert "soft_f1 0.6667 < 0.9 (required at least 0.9)" in text
    assert "exact_match failed: clauses differ: select" in text
    assert "violation: uses forbidden column 'secret'" in text
    assert "predicted SQL: SELECT 3" in text
    assert "SELECT 41" not in text.split("test_not_on_a_pass")[-1].split("test_unrelated")[0]
    assert "predicted SQL: SELECT 42" not in text


def test_sqleval_query_errors_carry_no_plugin_frames_nor_the_password_in_showlocals(pytester: pytest.Pytester):
    """`sqleval_query(...)` on an engine whose server is down, run with `--showlocals`: the DatabaseError propagated
    through the runner's and the sandbox's frames, whose locals printed the engine's raw URL, password included
    (`target = ('postgresql', 'postgresql+psycopg://u:s3cretpw@...')`); a refused query also printed those frames.
    Both are raised afresh from the fixture's call now, as the helpers raise theirs: the message alone, masked."""
    pytester.makeconftest("""
        import pytest
        import sqlalchemy as sa

        @pytest.fixture
        def sqleval_engine():
            return sa.create_engine("postgresql+psycopg://u:s3cretpw@127.0.0.1:1/x")
    """)
    result = _run(pytester, """
        import pytest
        from pytest_sqleval import QueryError

        def test_server_down(sqleval_query):
            sqleval_query("SELECT 1")

        def test_refused(sqleval_query):
            sqleval_query("DROP TABLE t")

        def test_refused_caught(sqleval_query):
            with pytest.raises(QueryError) as refused:
                sqleval_query("DELETE FROM t")
            assert refused.value.kind == "rejected"
    """, "--showlocals")
    result.assert_outcomes(failed=2, passed=1)
    text = result.stdout.str()
    assert "s3cretpw" not in text
    assert "DatabaseError: cannot connect to PostgreSQL at postgresql+psycopg://u:***@127.0.0.1:1/x" in text
    assert "QueryError: rejected: a DROP statement is not a query" in text
    assert "sandbox.py" not in text and "runner.py" not in text


@pytest.mark.parametrize("mode", ["--assert=plain", "--assert=rewrite"])
def test_assert_all_on_a_list_of_verdicts_explains_the_failing_ones(pytester: pytest.Pytester, mode: str):
    """`results = [check_execution_match(...) for ...]; assert all(results)` (or a dict's values) failed with no
    `sqleval verdict` section: only a verdict held directly in a local variable was explained. The failing verdicts
    of a list, tuple or dict the statement names are explained now, the first five, then a count of the rest."""
    result = _run(pytester, """
        import sqlalchemy as sa
        from pytest_sqleval import check_execution_match

        E = sa.create_engine("sqlite://")

        def test_list():
            results = [check_execution_match("SELECT 1", f"SELECT {n}", engine=E) for n in (1, 2, 3)]
            assert all(results)

        def test_dict():
            by_question = {q: check_execution_match("SELECT 1", sql, engine=E)
                           for q, sql in {"one": "SELECT 1", "two": "SELECT 2"}.items()}
            assert all(by_question.values())

        def test_many():
            results = [check_execution_match("SELECT 1", f"SELECT {n}", engine=E) for n in range(10, 18)]
            assert all(results)
    """, mode)
    result.assert_outcomes(failed=3)
    text = result.stdout.str()
    shown = {line.strip() for line in result.stdout.lines}
    for sql in ("SELECT 2", "SELECT 3", "SELECT 10", "SELECT 14"):  # the dict's "two" and the first five of many
        assert f"predicted SQL: {sql}" in shown, sql
    assert "predicted SQL: SELECT 15" not in shown and "predicted SQL: SELECT 1" not in shown
    assert "... and 3 more failing verdict(s)" in text


def test_wrong_arguments_fail_at_the_tests_call_with_the_message_alone(pytester: pytest.Pytester):
    """A gold of the wrong type or with a misspelt key, an unknown option, a bad policy, a db_id not in tables.json,
    an execution profile given to assert_exact_match:
    the message named the fix, but the traceback walked through the plugin's frames (`assertions.py: in _golds`,
    `in <listcomp>`, the policy and schema modules' source), the "bare traceback from the plugin" the issue asks to
    avoid. And `assert_policy(sql, ["shops"])` (a list, not a mapping) raised `ValueError: dictionary update sequence
    element #0 has length 5; 2 is required`: it is a TypeError naming the mapping the helper takes."""
    tables = pytester.path / "tables.json"
    tables.write_text('[{"db_id": "shop", "table_names_original": ["t"], "table_names": ["t"], '
                      '"column_names_original": [[-1, "*"], [0, "a"]], "column_names": [[-1, "*"], [0, "a"]], '
                      '"column_types": ["text", "number"], "primary_keys": [], "foreign_keys": []}]')
    result = _run(pytester, f"""
        import sqlalchemy as sa
        from pytest_sqleval import assert_exact_match, assert_execution_match, assert_policy

        E = sa.create_engine("sqlite://")

        def test_gold_type():
            assert_execution_match(None, "SELECT 1", engine=E)

        def test_gold_key():
            assert_execution_match({{"cols": ["a"], "rows": [[1]]}}, "SELECT 1", engine=E)

        def test_gold_in_a_list():
            assert_execution_match(["SELECT 1", 7], "SELECT 1", engine=E)

        def test_option():
            assert_execution_match("SELECT 1", "SELECT 1", engine=E, dupes="set")

        def test_policy_list():
            assert_policy("SELECT 1", ["shops"], engine=E)

        def test_policy_filter():
            assert_policy("SELECT 1", {{"require_filter": "tenant_id = "}}, engine=E)

        def test_db_id():
            assert_exact_match("SELECT a FROM t", "SELECT a FROM t", schema=({str(tables)!r}, "nope"))

        def test_exact_match_profile():
            assert_exact_match("SELECT a FROM t", "SELECT a FROM t", schema=E, profile="bird")
    """)
    result.assert_outcomes(failed=8)
    text = result.stdout.str()
    assert "pytest_sqleval/" not in text and "<listcomp>" not in text, text
    assert "TypeError: assert_policy: policy must be a mapping such as" in text
    assert "dictionary update sequence" not in text
    assert "PolicyError: require_filter 'tenant_id = ' is not a SQL predicate" in text
    assert "SpiderTablesError:" in text and "db_id 'nope' is not in" in text
    assert "unknown key 'cols' in expected rows" in text
    assert "ValueError: assert_exact_match: unknown exact-match profile 'bird'; profiles are: sqleval, spider" in text


def test_sqleval_query_takes_its_limits_positionally_as_the_readme_writes_its_signature(pytester: pytest.Pytester):
    """The README documents `sqleval_query(sql, timeout=None, max_rows=None)`; `sqleval_query("SELECT ...", 5, 1)`
    raised `TypeError: QueryRunner.__call__() takes 2 positional arguments but 4 were given` (they were
    keyword-only)."""
    pytester.path.joinpath("schema.sql").write_text("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2);\n")
    result = _run(pytester, """
        import pytest
        from pytest_sqleval import QueryError

        pytestmark = pytest.mark.sqleval_database("sqlite://", setup=["schema.sql"])

        def test_positional(sqleval_query):
            assert sqleval_query("SELECT a FROM t ORDER BY a", 5, 10).rows == [(1,), (2,)]
            with pytest.raises(QueryError) as capped:
                sqleval_query("SELECT a FROM t", 5, 1)
            assert capped.value.kind == "row_limit"
            assert "raise it with `max_rows=`" in capped.value.message
    """)
    result.assert_outcomes(passed=1)


def test_suite_only_fixtures_in_a_plain_test_are_a_message_naming_what_to_use(pytester: pytest.Pytester):
    """`sqleval_case` or `sqleval_gold` requested by a plain test errored with a traceback through the plugin's
    setup hooks and `pytest.UsageError: the sqleval_case fixture is only available inside sqleval suite items`,
    the message the issue quotes as what a new user meets. It is one line now, saying where the fixture exists and
    what a plain test uses instead."""
    result = _run(pytester, """
        def test_case(sqleval_case):
            pass

        def test_gold(sqleval_gold):
            pass
    """)
    result.assert_outcomes(errors=2)
    text = result.stdout.str()
    assert "test_app.py::test_case: sqleval_case exists only in suite items" in text
    assert "test_app.py::test_gold: sqleval_gold (and the sqleval_case it reads) exists only in suite items" in text
    assert '@pytest.mark.sqleval_database("shop.sqlite") and the assert_execution_match' in text
    assert "lifecycle.py" not in text and "UsageError" not in text


def test_a_soft_f1_failure_shows_the_score_with_the_same_places_in_its_head_and_its_body(pytester: pytest.Pytester):
    """`assert_soft_f1(..., at_least=Decimal("0.6667"))` on a score of 2/3: the head said `soft_f1 0.66667 < 0.6667`
    (as many places as it takes not to read as the threshold) but the diff below it said `soft_f1: 0.6667`, the
    threshold itself, as if the check had passed."""
    result = _run(pytester, """
        from decimal import Decimal

        import sqlalchemy as sa
        from pytest_sqleval import assert_soft_f1

        def test_two_thirds():
            assert_soft_f1("SELECT 1, 2", "SELECT 1", engine=sa.create_engine("sqlite://"), at_least=Decimal("0.6667"))
    """)
    result.assert_outcomes(failed=1)
    shown = [line.strip() for line in result.stdout.lines]
    assert any(line.endswith("soft_f1 0.66667 < 0.6667 (required at least 0.6667)") for line in shown)
    assert "E         soft_f1: 0.66667" in result.stdout.lines
    assert "E         soft_f1: 0.6667" not in result.stdout.lines


@pytest.mark.parametrize("mode", [("--assert=plain",), ("-p", "no:assertion")])
def test_assert_compare_results_match_explains_itself_without_assertion_rewriting(pytester: pytest.Pytester,
                                                                                   mode: tuple[str, ...]):
    """The issue's own example, `assert compare_results(...).match`, under `--assert=plain` or `-p no:assertion`:
    a bare `AssertionError` (no variable holds the verdict, so no `sqleval verdict` section). The public
    `compare_results` remembers its verdict for the test now, as the check_* helpers do."""
    result = _run(pytester, """
        from pytest_sqleval import EXECUTION_PROFILES, QueryResult, compare_results

        def test_compare():
            gold, mine = QueryResult.of([("Avionics", 5)]), QueryResult.of([("Avionics", 4)])
            assert compare_results(gold, mine, EXECUTION_PROFILES["sqleval"], ordered=False).match

        def test_not_on_a_pass():
            gold = QueryResult.of([(1,)])
            compare_results(gold, QueryResult.of([(7,)]), EXECUTION_PROFILES["sqleval"], ordered=False)
            assert not compare_results(gold, gold, EXECUTION_PROFILES["sqleval"], ordered=False).match
    """, *mode)
    result.assert_outcomes(failed=2)
    text = result.stdout.str()
    assert text.count("sqleval verdict") == 1
    assert "rows only in gold:       (Avionics, 5)" in text
    assert "rows only in prediction: (Avionics, 4)" in text


def test_a_writing_gold_on_a_users_in_memory_engine_is_a_gold_error_as_on_a_file(pytester: pytest.Pytester):
    """A gold that writes (`DELETE FROM t`) on the user's own in-memory SQLite engine (one the query process cannot
    reopen: it runs in the pytest process, on the user's writable connection) gave an empty 0-column result, which
    an empty prediction's result equals; on a file engine the read-only connection refuses it (GoldError). Now both
    are a GoldError saying the statement is not a query, and the table keeps its rows (rolled back)."""
    result = _run(pytester, """
        import pytest
        from sqlalchemy import create_engine, text
        from sqlalchemy.pool import StaticPool
        from pytest_sqleval import GoldError, QueryError, assert_execution_match, check_execution_match

        @pytest.fixture
        def sqleval_engine():
            engine = create_engine("sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False})
            with engine.begin() as conn:
                conn.execute(text("CREATE TABLE t (a INTEGER)"))
                conn.execute(text("INSERT INTO t VALUES (1), (2)"))
            yield engine
            engine.dispose()

        @pytest.mark.parametrize("gold", ["DELETE FROM t", "UPDATE t SET a = 5", "INSERT INTO t VALUES (3)"])
        def test_writing_gold(sqleval_engine, gold):
            with pytest.raises(GoldError, match="not a query"):
                check_execution_match(gold, "SELECT a FROM t WHERE a > 5", engine=sqleval_engine)
            with sqleval_engine.connect() as conn:
                assert conn.execute(text("SELECT a FROM t ORDER BY a")).fetchall() == [(1,), (2,)]

        def test_reading_gold(sqleval_engine):
            assert_execution_match("SELECT a FROM t", "SELECT a FROM t ORDER BY a DESC", engine=sqleval_engine)

        def test_query_untouched(sqleval_query):
            with pytest.raises(QueryError) as info:
                sqleval_query("DELETE FROM t")
            assert info.value.kind == "rejected"
    """)
    result.assert_outcomes(passed=5)
