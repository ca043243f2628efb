"""Assertion helpers, fixtures and the marker for ordinary tests, run as a user runs them (pytester)."""

from __future__ import annotations

import textwrap

import pytest

from conftest import make_sqlite

APP_SQL = """
CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tenant_id INTEGER);
CREATE TABLE tickets (id INTEGER PRIMARY KEY, shop_id INTEGER, aircraft TEXT, hours REAL, status TEXT,
                      tenant_id INTEGER);
INSERT INTO shops VALUES (1, 'Avionics', 42), (2, 'Engines', 42), (3, 'Cabin', 7);
INSERT INTO tickets VALUES
    (1, 1, '9V-SMA', 2.5, 'open', 42),
    (2, 1, '9V-SMB', 4.0, 'closed', 42),
    (3, 2, '9V-SMA', 8.0, 'closed', 42),
    (4, 3, '9V-SMC', 1.5, 'open', 7);
"""

BY_SHOP = "SELECT s.name, count(*) AS n FROM tickets t JOIN shops s ON s.id = t.shop_id GROUP BY s.name"


@pytest.fixture
def app(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with a database file, a setup script and an ini file."""
    make_sqlite(pytester.path / "shop.sqlite", APP_SQL)
    (pytester.path / "schema.sql").write_text(APP_SQL, encoding="utf-8")
    pytester.makeini("[pytest]\n")
    return pytester


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_app=textwrap.dedent(source))
    return pytester.runpytest("-p", "no:cacheprovider", *args)


# --------------------------------------------------------------------------- assert_execution_match
def test_execution_match_passes_and_returns_its_verdict(app):
    result = run(app, """
        import pytest
        from pytest_sqleval import assert_execution_match, ExecutionMatchCheck

        pytestmark = pytest.mark.sqleval_database("shop.sqlite")

        def test_it(sqleval_engine):
            verdict = assert_execution_match("SELECT name FROM shops", "SELECT name FROM shops ORDER BY id DESC")
            assert isinstance(verdict, ExecutionMatchCheck)
            assert verdict and verdict.match and verdict.soft_f1 == 1.0 and verdict.profile == "sqleval"

        def test_profile_options(sqleval_engine):
            # duplicates: set makes a repeated row irrelevant; bag (default) does not
            gold = "SELECT status FROM tickets WHERE status = 'open'"
            pred = "SELECT DISTINCT status FROM tickets WHERE status = 'open'"
            assert_execution_match(gold, pred, duplicates="set")
            with pytest.raises(AssertionError, match="duplicates"):
                assert_execution_match(gold, pred)
    """)
    result.assert_outcomes(passed=2)


def test_execution_match_failure_message(app):
    result = run(app, f"""
        import pytest
        from pytest_sqleval import assert_execution_match

        @pytest.mark.sqleval_database("shop.sqlite")
        def test_it(sqleval_engine):
            assert_execution_match("{BY_SHOP}", "SELECT s.name FROM tickets t JOIN shops s ON s.id = t.shop_id GROUP BY s.name")
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "E**SqlevalAssertionError: execution_match failed (profile sqleval)",
        "E*column_count: gold has 2 columns, the prediction 1",
        f"E*gold SQL:      {BY_SHOP}",
        "E*predicted SQL: SELECT s.name FROM tickets t JOIN shops s ON s.id = t.shop_id GROUP BY s.name",
        "E*soft_f1: 0.6667",
        "E*gold result: 3 rows x 2 columns",
        "E*name     | n",
        "E*Avionics | 2",
        "E*predicted result: 3 rows x 1 column",
    ])
    # the helper's own frames are hidden: the traceback points at the test's line
    assert "_raise_unless" not in result.stdout.str()


def test_several_golds_any_may_match_and_the_best_is_reported(app):
    result = run(app, """
        import pytest
        from pytest_sqleval import assert_execution_match

        pytestmark = pytest.mark.sqleval_database("shop.sqlite")

        def test_second_gold_matches(sqleval_engine):
            verdict = assert_execution_match(["SELECT name FROM shops", "SELECT name, id FROM shops"],
                                             "SELECT id, name FROM shops")
            assert verdict.best == 1

        def test_none_matches(sqleval_engine):
            assert_execution_match(["SELECT id FROM shops WHERE id > 5", "SELECT name, id FROM shops"],
                                   "SELECT name FROM shops")
    """)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "E*column_count: gold has 2 columns, the prediction 1",
        "E*gold SQL:      SELECT name, id FROM shops",
        "E*soft_f1: 0.6667",
        "E*accepted golds: 2; best: #2 (any one may match)",
        "E*#1 SELECT id FROM shops WHERE id > 5: row_count: gold has 0 rows, the prediction 3; soft_f1 0.0000",
        "E*#2 SELECT name, id FROM shops: column_count: gold has 2 columns, the prediction 1; soft_f1 0.6667",
    ])


def test_expected_rows_instead_of_gold_sql(app):
    result = run(app, """
        import pytest
        from pytest_sqleval import assert_execution_match, assert_soft_f1

        pytestmark = pytest.mark.sqleval_database("shop.sqlite")

        def test_match(sqleval_engine):
            assert_execution_match({"columns": ["status", "n"], "rows": [["open", 2], ["closed", 2]]},
                                   "SELECT status, count(*) FROM tickets GROUP BY status")

        def test_soft(sqleval_engine):
            verdict = assert_soft_f1({"columns": ["name"], "rows": [["Avionics"], ["Engines"]]},
                                     "SELECT name FROM shops", at_least=0.75)
            assert round(verdict.score, 4) == 0.8  # P = 2/3, R = 1 -> 0.8

        def test_miss(sqleval_engine):
            assert_execution_match({"columns": ["n"], "rows": [[3]]}, "SELECT count(*) FROM tickets")
    """)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "E*values: 1 gold row is missing from the prediction, 1 predicted row is not in the gold",
        "E*gold SQL:      (expected rows)",
        "E*rows only in gold:       (3)",
        "E*rows only in prediction: (4)",
    ])


def test_prediction_runs_under_the_guard(app):
    result = run(app, """
        import pytest
        from pytest_sqleval import assert_execution_match, check_execution_match

        pytestmark = pytest.mark.sqleval_database("shop.sqlite")

        def test_write_is_rejected(sqleval_engine):
            verdict = check_execution_match("SELECT count(*) FROM tickets", "DELETE FROM tickets")
            assert not verdict and verdict.error["kind"] == "rejected"
            assert_execution_match("SELECT count(*) FROM tickets", "DELETE FROM tickets")

        def test_row_cap(sqleval_engine):
            assert_execution_match("SELECT 1", "SELECT id FROM tickets", max_rows=2)
    """)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "E*rejected: a DELETE statement is not a query; only a single read-only query runs",
        "E*predicted SQL: DELETE FROM tickets",
        "E*soft_f1: 0.0000",
    ])
    result.stdout.fnmatch_lines(["E*row_limit: returned more than 2 rows*"])


def test_helpers_need_a_database_and_say_how(app):
    result = run(app, """
        from pytest_sqleval import assert_execution_match, assert_exact_match

        def test_execution():
            assert_execution_match("SELECT 1", "SELECT 1")

        def test_exact():
            assert_exact_match("SELECT 1", "SELECT 1")
    """)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "E*ValueError: assert_execution_match needs a database: pass engine=... "
        "(e.g. engine=sqleval_engine_factory(\"shop.sqlite\")), or call it in a test that uses the sqleval_engine "
        "fixture, pointed at a database by @pytest.mark.sqleval_database(\"shop.sqlite\") or the ini option "
        "sqleval_database",
        "E*ValueError: assert_exact_match needs a database*",
    ])


def test_explicit_engine_from_the_factory(app):
    result = run(app, """
        from pytest_sqleval import assert_execution_match

        def test_it(sqleval_engine_factory):
            engine = sqleval_engine_factory("shop.sqlite")
            assert_execution_match("SELECT count(*) FROM shops", "SELECT count(id) FROM shops", engine=engine)
    """)
    result.assert_outcomes(passed=1)


# --------------------------------------------------------------------------- assert_exact_match
def test_exact_match_with_clause_subset_and_verdicts(app):
    result = run(app, """
        import pytest
        from pytest_sqleval import assert_exact_match

        pytestmark = pytest.mark.sqleval_database("shop.sqlite")

        def test_subset_passes(sqleval_engine):
            # ORDER BY differs, select and where agree
            verdict = assert_exact_match("SELECT name FROM shops WHERE id = 1 ORDER BY name",
                                         "SELECT name FROM shops WHERE id = 1", clauses=["select", "where"])
            assert verdict.checked == ("select", "where") and verdict.clauses["order"] is False

        def test_all_clauses_fail(sqleval_engine):
            assert_exact_match("SELECT name FROM shops WHERE id = 1", "SELECT name FROM shops WHERE id = 2",
                               clauses=["select", "where"])
    """)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "E**SqlevalAssertionError: exact_match failed on select, where: clauses differ: where (profile sqleval)",
        "E*gold SQL:      SELECT name FROM shops WHERE id = 1",
        "E*predicted SQL: SELECT name FROM shops WHERE id = 2",
        "E*clauses:",
        "E*select           match",
        "E*select_no_agg    match (not checked)",
        "E*where            DIFFERS",
    ])


def test_exact_match_schema_forms_and_clause_names(app):
    (app.path / "tables.json").write_text(
        '[{"db_id": "shop", "table_names_original": ["shops"], "table_names": ["shops"],'
        ' "column_names_original": [[-1, "*"], [0, "id"], [0, "name"]], "column_names": [[-1, "*"], [0, "id"], [0, "name"]],'
        ' "column_types": ["text", "number", "text"], "primary_keys": [1], "foreign_keys": []}]', encoding="utf-8")
    result = run(app, """
        import pytest
        from pytest_sqleval import Schema, assert_exact_match

        def test_forms(sqleval_engine_factory):
            engine = sqleval_engine_factory("shop.sqlite")
            for schema in (Schema.from_dict({"shops": ["id", "name"]}), engine, ("tables.json", "shop"),
                           {"tables": "tables.json", "db_id": "shop"}):
                assert assert_exact_match("SELECT name FROM shops", "select NAME from SHOPS", schema=schema)

        def test_gold_list(sqleval_engine_factory):
            schema = Schema.from_dict({"shops": ["id", "name"]})
            verdict = assert_exact_match(["SELECT id FROM shops", "SELECT name FROM shops"], "SELECT name FROM shops",
                                         schema=schema)
            assert verdict.best == 1

        def test_unknown_clause():
            with pytest.raises(ValueError) as info:
                assert_exact_match("SELECT 1", "SELECT 1", schema=Schema.from_dict({"t": ["a"]}), clauses=["selec"])
            assert "unknown clause name(s) 'selec' for the sqleval profile; valid clauses: select, select_no_agg" in str(info.value)
            with pytest.raises(ValueError, match="valid clauses: select, .*, from$"):
                assert_exact_match("SELECT 1", "SELECT 1", schema=Schema.from_dict({"t": ["a"]}), clauses=["limit"],
                                   profile="spider")

        def test_rows_are_not_sql():
            with pytest.raises(ValueError, match="needs gold SQL, not expected rows"):
                assert_exact_match({"rows": [[1]]}, "SELECT 1", schema=Schema.from_dict({"t": ["a"]}))
    """)
    result.assert_outcomes(passed=4)


# --------------------------------------------------------------------------- assert_soft_f1
def test_soft_f1_threshold(app):
    result = run(app, f"""
        import pytest
        from pytest_sqleval import assert_soft_f1

        pytestmark = pytest.mark.sqleval_database("shop.sqlite")

        def test_paper_example(sqleval_engine):
            # the MRO paper's 3.2.1 example: 2/3
            verdict = assert_soft_f1("{BY_SHOP}", "SELECT s.name FROM tickets t JOIN shops s ON s.id = t.shop_id GROUP BY s.name",
                                     at_least=0.6)
            assert round(verdict.score, 4) == 0.6667

        def test_below(sqleval_engine):
            assert_soft_f1("{BY_SHOP}", "SELECT s.name FROM tickets t JOIN shops s ON s.id = t.shop_id GROUP BY s.name")

        def test_bad_threshold(sqleval_engine):
            with pytest.raises(ValueError, match="at_least must be a number between 0 and 1, not 80"):
                assert_soft_f1("SELECT 1", "SELECT 1", at_least=80)
    """)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "E**SqlevalAssertionError: soft_f1 0.6667 < 0.8 (required at least 0.8)",
        "E*column_count: gold has 2 columns, the prediction 1",
        f"E*gold SQL:      {BY_SHOP}",
        "E*soft_f1: 0.6667",
        "E*gold result: 3 rows x 2 columns",
    ])


# --------------------------------------------------------------------------- assert_policy
def test_policy_helper(app):
    result = run(app, """
        import pytest
        from pytest_sqleval import assert_policy

        pytestmark = pytest.mark.sqleval_database("shop.sqlite")
        POLICY = {"tables": ["tickets", "shops"], "forbid_columns": ["aircraft"], "require_filter": "tenant_id = 42"}

        def test_ok(sqleval_engine):
            assert assert_policy("SELECT status FROM tickets WHERE tenant_id = 42", POLICY)

        def test_violations(sqleval_engine):
            assert_policy("SELECT * FROM tickets", POLICY)
    """)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "E**SqlevalAssertionError: policy failed",
        "E*predicted SQL: SELECT * FROM tickets",
        "E*violation: selects * from 'tickets', which includes forbidden column(s) aircraft",
        "E*violation: reads 'tickets' without the required filter `tenant_id = 42` (the query has no WHERE): SELECT * FROM tickets",
    ])


# --------------------------------------------------------------------------- plain `assert` on verdicts
PLAIN = """
import pytest
from pytest_sqleval import EXECUTION_PROFILES, check_execution_match, check_soft_f1, compare_results, run_query

pytestmark = pytest.mark.sqleval_database("shop.sqlite")

def test_plain_assert(sqleval_engine):
    verdict = check_execution_match("SELECT count(*) FROM tickets", "SELECT count(*) FROM shops")
    assert verdict

def test_equals_true(sqleval_engine):
    verdict = check_soft_f1("SELECT name, id FROM shops", "SELECT name FROM shops", at_least=0.9)
    assert verdict == True

def test_compare_results(sqleval_engine):
    gold = run_query(sqleval_engine, "SELECT id FROM shops", untrusted=False)
    mine = run_query(sqleval_engine, "SELECT id FROM shops WHERE id < 3")
    assert compare_results(gold, mine, EXECUTION_PROFILES["sqleval"], ordered=False).match

def test_passing_verdicts_are_truthy(sqleval_engine):
    verdict = check_execution_match("SELECT 1", "SELECT 1")
    assert verdict and verdict == True and not (verdict == False)
"""


def test_plain_assert_on_verdicts_prints_the_explanation(app, monkeypatch):
    # pytest truncates long assertion explanations except on CI (CI or BUILD_NUMBER set): make it truncate
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
    result = run(app, PLAIN)
    result.assert_outcomes(passed=1, failed=3)
    out = result.stdout.str()
    # `assert verdict`: the one-line repr, then the explanation as a section under the traceback
    result.stdout.fnmatch_lines([
        "E*assert <ExecutionMatchCheck execution_match failed: values: 1 gold row is missing from the prediction, "
        "1 predicted row is not in the gold (soft_f1 0.0000)>",
        "*- sqleval verdict -*",
        "execution_match failed (profile sqleval)",
        "  values: 1 gold row is missing from the prediction, 1 predicted row is not in the gold",
        "  gold SQL:      SELECT count(*) FROM tickets",
        "  predicted SQL: SELECT count(*) FROM shops",
        "  rows only in gold:       (4)",
        "  rows only in prediction: (3)",
    ])
    # `assert verdict == True`: pytest_assertrepr_compare
    result.stdout.fnmatch_lines([
        "E*assert <SoftF1Check soft_f1 0.6667 < 0.9> == True",
        "E*soft_f1 0.6667 < 0.9 (required at least 0.9)",
        "E*column_count: gold has 2 columns, the prediction 1",
    ])
    # compare_results(...).match: the verdict's reason and example rows
    result.stdout.fnmatch_lines([
        "E*+  where False = ExecutionVerdict(*).match",
        "*- sqleval verdict -*",
        "execution_match failed: row_count: gold has 3 rows, the prediction 2",
        "  rows only in gold:       (3)",
    ])
    assert out.count("- sqleval verdict -") == 3  # the truncated `== True` explanation is also shown in full


def test_equals_true_in_full_with_vv(app):
    result = run(app, PLAIN, "-vv", "-k", "equals_true")
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines([
        "E*soft_f1 0.6667 < 0.9 (required at least 0.9)",
        "E*gold result: 3 rows x 2 columns",
        "E*name     | id",
        "E*predicted result: 3 rows x 1 column",
    ])
    assert "- sqleval verdict -" not in result.stdout.str()  # shown in full once, not twice


# --------------------------------------------------------------------------- sqleval_engine in plain tests
def test_engine_from_marker_on_function_class_and_module(app):
    (app.path / "sub").mkdir()
    make_sqlite(app.path / "sub" / "other.sqlite", "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);")
    (app.path / "sub" / "test_sub.py").write_text(textwrap.dedent("""
        import pytest

        pytestmark = pytest.mark.sqleval_database("other.sqlite")   # relative to this file

        def test_module_marker(sqleval_query):
            assert sqleval_query("SELECT count(*) FROM t").rows == [(2,)]

        @pytest.mark.sqleval_database("../shop.sqlite")
        class TestClass:
            def test_class_marker(self, sqleval_query):
                assert sqleval_query("SELECT count(*) FROM shops").rows == [(3,)]

            @pytest.mark.sqleval_database("other.sqlite")
            def test_closest_wins(self, sqleval_query):
                assert sqleval_query("SELECT count(*) FROM t").rows == [(2,)]
    """), encoding="utf-8")
    result = app.runpytest("-p", "no:cacheprovider", "sub")
    result.assert_outcomes(passed=3)


def test_engine_from_setup_scripts_built_once_per_session(app):
    result = run(app, """
        import pytest

        ENGINES = []
        pytestmark = pytest.mark.sqleval_database("sqlite://", setup=["schema.sql"])

        @pytest.mark.parametrize("n", range(3))
        def test_same_engine(sqleval_engine, sqleval_query, n):
            ENGINES.append(sqleval_engine)
            assert sqleval_query("SELECT count(*) FROM tickets").rows == [(4,)]
            assert all(e is ENGINES[0] for e in ENGINES)
    """)
    result.assert_outcomes(passed=3)


def test_engine_from_the_ini_option(app):
    app.makeini("""
        [pytest]
        sqleval_database = sqlite://
        sqleval_database_setup =
            schema.sql
    """)
    result = run(app, """
        from pytest_sqleval import assert_execution_match

        def test_ini(sqleval_query):
            assert sqleval_query("SELECT count(*) FROM shops").rows == [(3,)]

        def test_helper_without_the_fixture():
            assert_execution_match("SELECT count(*) FROM shops", "SELECT 3")
    """)
    result.assert_outcomes(passed=2)


def test_ini_path_is_relative_to_the_ini_file(app):
    app.makeini("[pytest]\nsqleval_database = shop.sqlite\n")
    (app.path / "tests").mkdir()
    (app.path / "tests" / "test_x.py").write_text(
        "def test_x(sqleval_query):\n    assert sqleval_query('SELECT count(*) FROM tickets').rows == [(4,)]\n",
        encoding="utf-8")
    result = app.runpytest("-p", "no:cacheprovider", "tests")
    result.assert_outcomes(passed=1)


def test_no_database_is_a_clear_error(app):
    result = run(app, """
        def test_engine(sqleval_engine):
            pass

        def test_query(sqleval_query):
            pass
    """)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([
        "sqleval_engine needs a database in a plain test: mark the test (or the module, with pytestmark) with "
        "@pytest.mark.sqleval_database(\"shop.sqlite\", setup=[[]...]), or set the ini option "
        "`sqleval_database = shop.sqlite` (with `sqleval_database_setup` lines)",
    ])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize("marker, message", [
    ('("missing.sqlite")', "@pytest.mark.sqleval_database on test_app.py::test_it: database file not found: */missing.sqlite*"),
    ("()", "@pytest.mark.sqleval_database on test_app.py::test_it: give exactly one database, a path or a SQLAlchemy URL*"),
    ('("sqlite://", setup=["nope.sql"])', "*: setup script not found: */nope.sql"),
    ('("shop.sqlite", setup=["schema.sql"])', "*: setup scripts build a fresh database; give \"sqlite://\" or \"duckdb://\"*"),
    ('("sqlite://", setup=[1])', "*: setup= must be a list of SQL script paths*"),
    ('("shop.sqlite", tables=1)', "*: unknown argument 'tables'; the marker takes the database and setup=[[]...]"),
])
def test_bad_marker_is_a_clear_error(app, marker, message):
    result = run(app, f"""
        import pytest

        @pytest.mark.sqleval_database{marker}
        def test_it(sqleval_engine):
            pass
    """)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message])


def test_marker_is_registered(app):
    result = app.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.sqleval_database(path_or_url, setup=[[]...]): the database of the "
                                 "sqleval_engine fixture in a plain test*"])


# --------------------------------------------------------------------------- sqleval_query, run_query
def test_sqleval_query_guards_and_raises_query_errors(app):
    result = run(app, """
        import pytest
        from pytest_sqleval import QueryError

        pytestmark = pytest.mark.sqleval_database("shop.sqlite")

        def test_result(sqleval_query):
            result = sqleval_query("SELECT name FROM shops ORDER BY id")
            assert result.columns == ("name",) and result.rows == [("Avionics",), ("Engines",), ("Cabin",)]

        @pytest.mark.parametrize("sql, kind", [
            ("DELETE FROM tickets", "rejected"),
            ("SELECT 1; SELECT 2", "rejected"),
            ("SELECT nope FROM tickets", "syntax"),
            ("SELEC 1", "syntax"),
        ])
        def test_errors(sqleval_query, sql, kind):
            with pytest.raises(QueryError) as info:
                sqleval_query(sql)
            assert info.value.kind == kind and info.value.message

        def test_limits(sqleval_query):
            with pytest.raises(QueryError) as info:
                sqleval_query("SELECT id FROM tickets", max_rows=3)
            assert info.value.kind == "row_limit"

        def test_database_unchanged(sqleval_query):
            assert sqleval_query("SELECT count(*) FROM tickets").rows == [(4,)]
    """)
    result.assert_outcomes(passed=7)


def test_run_query_needs_no_limits(app):
    result = run(app, """
        from pytest_sqleval import run_query

        def test_it(sqleval_engine_factory):
            engine = sqleval_engine_factory("shop.sqlite")
            assert run_query(engine, "SELECT count(*) FROM tickets").rows == [(4,)]
    """)
    result.assert_outcomes(passed=1)


# --------------------------------------------------------------------------- xdist
def test_helpers_and_fixtures_under_xdist(app):
    (app.path / "test_more.py").write_text(textwrap.dedent(PLAIN), encoding="utf-8")
    pytester = app
    pytester.makepyfile(test_app=textwrap.dedent("""
        import pytest
        from pytest_sqleval import assert_execution_match, assert_exact_match, assert_soft_f1

        pytestmark = pytest.mark.sqleval_database("sqlite://", setup=["schema.sql"])

        @pytest.mark.parametrize("n", range(4))
        def test_helpers(sqleval_query, n):
            assert_execution_match("SELECT name FROM shops", "SELECT name FROM shops ORDER BY name")
            assert_exact_match("SELECT name FROM shops", "SELECT name FROM shops")
            assert_soft_f1("SELECT name, id FROM shops", "SELECT name, id FROM shops", at_least=1.0)
            assert sqleval_query("SELECT count(*) FROM tickets").rows == [(4,)]
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=5, failed=3)
    result.stdout.fnmatch_lines(["*- sqleval verdict -*", "execution_match failed (profile sqleval)"])


# --------------------------------------------------------------------------- the README's example
def readme_block(first_line: str) -> str:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    start = text.index(first_line)
    return text[start:text.index("```", start)]


def test_readme_example_runs_as_is(pytester):
    tests = pytester.path / "tests"
    tests.mkdir()
    (tests / "schema.sql").write_text(readme_block("-- tests/schema.sql"), encoding="utf-8")
    (tests / "test_answers.py").write_text(readme_block("# tests/test_answers.py"), encoding="utf-8")
    result = pytester.runpytest("-p", "no:cacheprovider", "tests")
    result.assert_outcomes(passed=3)


def test_broken_gold_is_not_a_model_miss(app):
    result = run(app, """
        import pytest
        from pytest_sqleval import assert_execution_match

        @pytest.mark.sqleval_database("shop.sqlite")
        def test_it(sqleval_engine):
            assert_execution_match("SELECT nope FROM shops", "SELECT name FROM shops")
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        ">*assert_execution_match(\"SELECT nope FROM shops\", \"SELECT name FROM shops\")",
        "E*GoldError: the gold query failed on sqlite:// (syntax): no such column: nope",
        "E*gold SQL: SELECT nope FROM shops",
        "E*the test's gold query is broken, not the prediction: fix the gold",
    ])
    assert "evaluate.py" not in result.stdout.str()


def test_policy_helper_needs_no_database():
    from pytest_sqleval import assert_policy, check_policy_of
    from pytest_sqleval.assertions import SqlevalAssertionError

    assert assert_policy("SELECT id FROM t WHERE tenant_id = 42", require_filter="tenant_id = 42")
    verdict = check_policy_of("SELECT id FROM t", {"tables": ["t"]}, require_filter="tenant_id = 42")
    assert not verdict and len(verdict.violations) == 1
    with pytest.raises(SqlevalAssertionError) as info:
        assert_policy("SELECT id FROM u", tables=["t"])
    assert str(info.value).splitlines() == [
        "policy failed",
        "  predicted SQL: SELECT id FROM u",
        "  policy: {'tables': ['t']}",
        "  violation: reads table 'u', which the policy does not allow (allowed: t)",
    ]


@pytest.mark.duckdb
def test_duckdb_database_from_the_marker(app, duckdb_available):
    result = run(app, """
        import pytest
        from pytest_sqleval import assert_exact_match, assert_execution_match, assert_soft_f1

        pytestmark = pytest.mark.sqleval_database("duckdb://", setup=["schema.sql"])

        def test_it(sqleval_engine, sqleval_query):
            assert sqleval_engine.dialect.name == "duckdb"
            assert_execution_match("SELECT name FROM shops WHERE tenant_id = 42",
                                   "SELECT name FROM shops WHERE tenant_id = 42 ORDER BY name DESC")
            assert_exact_match("SELECT name FROM shops WHERE tenant_id = 42", "SELECT name FROM shops WHERE 42 = tenant_id",
                               clauses=["select", "from"])
            assert_soft_f1("SELECT name, id FROM shops", "SELECT name FROM shops", at_least=0.6)
            assert sqleval_query("SELECT count(*) FROM tickets").rows == [(4,)]
    """)
    result.assert_outcomes(passed=1)


def test_plain_assert_on_pure_verdicts(pytester):
    result = run(pytester, """
        from pytest_sqleval import Schema, check_policy, exact_match

        SCHEMA = Schema.from_dict({"shops": ["id", "name"]})

        def test_exact_match_verdict():
            verdict = exact_match("SELECT name FROM shops WHERE id = 1", "SELECT name FROM shops", SCHEMA)
            assert verdict.match

        def test_policy_verdict():
            verdict = check_policy("SELECT * FROM shops", {"tables": ["tickets"]})
            assert verdict

        def test_policy_verdict_equals():
            assert check_policy("SELECT * FROM shops", {"tables": ["tickets"]}) == True
    """)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([
        "*- sqleval verdict -*",
        "exact_match failed: clauses differ: where, where_no_op, keywords",
        "  select           match",
        "  where            DIFFERS",
    ])
    result.stdout.fnmatch_lines([
        "*- sqleval verdict -*",
        "policy failed",
        "  violation: reads table 'shops', which the policy does not allow (allowed: tickets)",
    ])
    result.stdout.fnmatch_lines([
        "E*assert <PolicyVerdict passed=False> == True",
        "E*policy failed",
        "E*violation: reads table 'shops', which the policy does not allow (allowed: tickets)",
    ])
