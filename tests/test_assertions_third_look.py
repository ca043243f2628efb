"""Third QA look at issue 13's assertions, as an application developer writes them in plain pytest tests:
untuned inputs (NULLs, duplicates, floats and decimals, column order and aliases, empty results, ORDER BY,
results beyond the row cap, several or writing statements, unicode) on real SQLite, DuckDB and PostgreSQL
databases; the failure messages (`-vv`, plain `assert`, xdist); and every comparison option honoured by the
helpers exactly as a suite honours it."""

from __future__ import annotations

import json
import textwrap

import pytest
import sqlalchemy as sa
import sqlglot
import yaml

import pytest_sqleval.evaluate  # noqa: F401
import pytest_sqleval.policy  # noqa: F401
from conftest import make_sqlite
from pytest_sqleval import check_execution_match, check_soft_f1

# The helpers import the scoring modules and sqlglot's dialects on first use; the pytester fixture forgets every
# module first imported during its test, and a second copy of sqlglot's Dialect no longer knows the first one's
# dialects: import them all now, before any test.
for _dialect in ("sqlite", "duckdb", "postgres"):
    sqlglot.Dialect.get_or_raise(_dialect)

SALES_SQL = """
CREATE TABLE sales (id INTEGER PRIMARY KEY, region TEXT, rep TEXT, amount REAL, units INTEGER, note TEXT);
INSERT INTO sales VALUES
    (1, 'north', 'Zoë', 0.1, 3, NULL),
    (2, 'north', 'Ann', 0.2, NULL, 'late'),
    (3, 'south', 'Bob', 0.30000000000000004, 3, NULL),
    (4, 'south', 'Ann', 2.5, 1, ''),
    (5, NULL, 'Bob', 2.5, 1, NULL),
    (6, 'east', 'Zoë', NULL, 3, 'x');
"""


@pytest.fixture
def sales(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "sales.sqlite", SALES_SQL)
    (pytester.path / "sales.sql").write_text(SALES_SQL, encoding="utf-8")
    pytester.makeini("[pytest]\n")
    return pytester


def _run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_sales=textwrap.dedent(source))
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    return runner("-p", "no:cacheprovider", *args)


@pytest.fixture
def engine(tmp_path):
    path = make_sqlite(tmp_path / "sales.sqlite", SALES_SQL)
    eng = sa.create_engine(f"sqlite:///{path}")
    yield eng
    eng.dispose()


# --------------------------------------------------------------------------- bugs found in this look
def test_expected_no_rows_without_columns_matches_an_empty_result(engine, sales):
    """`{"rows": []}` says "no rows" (the loader's own hint: "an empty result is `rows: []`"). It had no width, so
    it counted as 0 columns, and under the default `empty: match_same_columns` no empty result could ever match
    it ("gold has 0 columns, the prediction 1"): in the helpers and in suites alike. A width it does not give is
    not compared; a prediction with rows still misses."""
    verdict = check_execution_match({"rows": []}, "SELECT rep FROM sales WHERE amount > 99", engine=engine)
    assert verdict.match, verdict.explain()
    assert check_execution_match({"columns": [], "rows": []}, "SELECT rep, region FROM sales WHERE 0",
                                 engine=engine).match
    assert check_soft_f1({"rows": []}, "SELECT rep FROM sales WHERE 0", engine=engine, at_least=1.0)
    missed = check_execution_match({"rows": []}, "SELECT rep FROM sales WHERE id = 1", engine=engine)
    assert not missed.match and "row_count: gold has 0 rows, the prediction 1" in missed.explain()
    # `empty: miss` still counts two empty results as a miss; given columns are still counted
    assert not check_execution_match({"rows": []}, "SELECT rep FROM sales WHERE 0", engine=engine, empty="miss")
    assert not check_execution_match({"columns": ["a", "b"], "rows": []}, "SELECT rep FROM sales WHERE 0",
                                     engine=engine)

    (sales.path / "empty.sqleval.yaml").write_text(textwrap.dedent("""
        database: sales.sqlite
        cases:
          - id: none
            expected: {rows: []}
            predicted: SELECT rep FROM sales WHERE amount > 99
          - id: some
            expected: {rows: []}
            predicted: SELECT rep FROM sales WHERE id = 1
    """), encoding="utf-8")
    result = sales.runpytest("-p", "no:cacheprovider", "--sqleval", "empty.sqleval.yaml", "-v")
    result.stdout.fnmatch_lines(["*empty.sqleval.yaml::none PASSED*", "*empty.sqleval.yaml::some MISSED*"])
    result.stdout.no_fnmatch_line("*gold has 0 columns*")


@pytest.mark.parametrize("ordered", ["false", 1, None, "yes"])
def test_ordered_of_expected_rows_must_be_true_or_false(engine, ordered):
    """A suite refuses `ordered: "false"`; the helpers took it, and the text "false" being truthy, compared the
    rows in order: the test failed on an order the author had said did not matter."""
    with pytest.raises(ValueError) as refused:
        check_execution_match({"rows": [[1], [2]], "ordered": ordered}, "SELECT 2 UNION ALL SELECT 1", engine=engine)
    assert str(refused.value) == ("assert_execution_match: `ordered` of the expected rows must be True or False, "
                                  f"not {ordered!r}")
    assert check_execution_match({"rows": [[1], [2]], "ordered": False}, "SELECT 2 UNION ALL SELECT 1", engine=engine)
    assert not check_execution_match({"rows": [[1], [2]], "ordered": True}, "SELECT 2 UNION ALL SELECT 1",
                                     engine=engine)


def test_rows_that_print_alike_are_told_apart(sales):
    """A diff whose two sides read the same teaches nothing: the text '1' against the number 1, or an 'é' written
    as one code point against 'e' + a combining accent, printed `(1)` against `(1)`. Rows that would print
    alike are shown quoted, with escapes; other diffs keep their plain form."""
    result = _run(sales, """
        import pytest
        from pytest_sqleval import assert_execution_match

        pytestmark = pytest.mark.sqleval_database("sales.sqlite")

        def test_text_vs_number():
            assert_execution_match({"columns": ["units"], "rows": [["3"]]}, "SELECT units FROM sales WHERE id = 1")

        def test_unicode_forms():
            assert_execution_match({"columns": ["rep"], "rows": [["Zo\\u00eb"]]}, "SELECT 'Zoe\\u0308'")

        def test_plain():
            assert_execution_match("SELECT rep FROM sales WHERE id = 1", "SELECT rep FROM sales WHERE id = 2")
    """)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([
        "*_ test_text_vs_number _*",
        "E*rows only in gold:       ('3')",
        "E*rows only in prediction: (3)",
        "*_ test_unicode_forms _*",
        "E*rows only in gold:       ('Zo\\xeb')",
        "E*rows only in prediction: ('Zoe\\u0308')",
        "*_ test_plain _*",
        "E*rows only in gold:       (Zoë)",
        "E*rows only in prediction: (Ann)",
    ])


def test_limit_messages_name_the_helpers_own_arguments(sales):
    """A prediction that hits the helper's `timeout=`/`max_rows=` said "raise it with --sqleval-timeout or the
    suite's `timeout:`" / "--sqleval-max-rows": a plain test has no suite, and an explicit `max_rows=100` wins
    over the option. The message names the argument first (the option still works without it)."""
    result = _run(sales, """
        import pytest
        from pytest_sqleval import QueryError, check_execution_match

        pytestmark = pytest.mark.sqleval_database("sales.sqlite")
        MANY = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 500) SELECT x FROM r"
        ENDLESS = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r"

        def test_row_cap(sqleval_query):
            verdict = check_execution_match("SELECT 1", MANY, max_rows=100)
            assert verdict.error == {"kind": "row_limit", "message": "returned more than 100 rows (the row cap; "
                                     "raise it with `max_rows=` or --sqleval-max-rows)"}
            with pytest.raises(QueryError) as capped:
                sqleval_query(MANY, max_rows=100)
            assert capped.value.message == verdict.error["message"]

        def test_timeout(sqleval_query):
            verdict = check_execution_match("SELECT 1", ENDLESS, timeout=0.5)
            assert verdict.error == {"kind": "timeout", "message": "interrupted after 0.5 s (raise it with "
                                     "`timeout=` or --sqleval-timeout)"}
            with pytest.raises(QueryError) as late:
                sqleval_query(ENDLESS, timeout=0.5)
            assert late.value.message == verdict.error["message"]
    """)
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize("sql, what", [
    ("DELETE FROM sales", "it is a DELETE statement"),
    ("UPDATE sales SET rep = 'x' WHERE region = 'north'", "it is an UPDATE statement"),
    ("DROP TABLE sales", "it is a DROP statement"),
    ("INSERT INTO sales SELECT * FROM sales WHERE region = 'north'", "it is an INSERT statement"),
    ("ATTACH 'other.db' AS other", "it is an ATTACH statement"),
    ("WITH gone AS (DELETE FROM sales RETURNING id) SELECT id FROM gone", "it holds a DELETE"),
    ("hello world", "it is not a SELECT"),
])
def test_a_policy_never_holds_for_a_statement_that_is_not_a_query(engine, sql, what):
    """`assert_policy(sql, {"tables": ["sales"]})` passed `DELETE FROM sales`, `DROP TABLE sales`, an INSERT ... SELECT
    and a non-SQL text, and a `require_filter` was reported as "a PIVOT/UNPIVOT statement has no WHERE" for a DELETE.
    A policy says what a *query* may read: anything else violates it, with the statement named (and so a suite's
    `pass_if: policy` no longer passes a DELETE)."""
    from pytest_sqleval import check_policy_of

    verdict = check_policy_of(sql, {"tables": ["sales"], "require_filter": "region = 'north'"}, engine=engine)
    assert not verdict
    assert verdict.violations == (f"the prediction is not a read-only query ({what}); a policy holds only for "
                                  "one SELECT",)
    assert check_policy_of("SELECT rep FROM sales WHERE region = 'north'", {"tables": ["sales"],
                           "require_filter": "region = 'north'"}, engine=engine)
    assert check_policy_of("(SELECT 1) UNION SELECT 2", {"tables": ["sales"]}, engine=engine)
    assert check_policy_of("VALUES (1)", {"tables": ["sales"]}, engine=engine)


def test_pass_if_policy_does_not_pass_a_write(sales):
    (sales.path / "policy.sqleval.yaml").write_text(textwrap.dedent("""
        database: sales.sqlite
        pass_if: policy
        policy: {tables: [sales]}
        cases:
          - id: write
            gold: SELECT 1
            predicted: DELETE FROM sales
          - id: read
            gold: SELECT 1
            predicted: SELECT rep FROM sales
    """), encoding="utf-8")
    result = sales.runpytest("-p", "no:cacheprovider", "--sqleval", "policy.sqleval.yaml", "-v")
    result.stdout.fnmatch_lines(["*policy.sqleval.yaml::write MISSED*", "*policy.sqleval.yaml::read PASSED*"])


# --------------------------------------------------------------------------- helpers and suites agree
PORTABLE_SQL = """
CREATE TABLE sales (id INTEGER PRIMARY KEY, region TEXT, rep TEXT, amount DOUBLE PRECISION, price NUMERIC(6, 2),
                    units INTEGER, note TEXT);
INSERT INTO sales VALUES
    (1, 'north', 'Zoë', 0.1, 0.10, 3, NULL),
    (2, 'north', 'Ann', 0.2, 0.20, NULL, 'late'),
    (3, 'south', 'Bob', 0.30000000000000004, 0.30, 3, NULL),
    (4, 'south', 'Ann', 2.5, 2.50, 1, ''),
    (5, NULL, 'Bob', 2.5, 2.50, 1, NULL),
    (6, 'east', 'Zoë', NULL, NULL, 3, 'x');
"""

PAIRS = [
    ("SELECT rep FROM sales", "SELECT DISTINCT rep FROM sales"),
    ("SELECT rep FROM sales ORDER BY id", "SELECT rep FROM sales ORDER BY id DESC"),
    ("SELECT id, rep FROM sales", "SELECT rep AS r, id AS i FROM sales"),
    ("SELECT note FROM sales WHERE id IN (1, 5)", "SELECT note FROM sales WHERE id = 1"),
    ("SELECT amount FROM sales WHERE id = 3", "SELECT 0.3"),
    ("SELECT id FROM sales WHERE id > 99", "SELECT id, rep FROM sales WHERE id > 99"),
    ("SELECT price FROM sales", "SELECT amount FROM sales"),
    ("SELECT region, count(*) FROM sales GROUP BY region ORDER BY count(*) DESC",
     "SELECT region, count(*) FROM sales GROUP BY region ORDER BY 2 DESC, 1 DESC"),
    ("SELECT units FROM sales", "SELECT units * 1.0 FROM sales"),
    ("SELECT rep FROM sales ORDER BY units", "SELECT rep FROM sales ORDER BY units DESC"),
    ("SELECT rep, amount FROM sales", "SELECT rep FROM sales"),
    ("SELECT count(DISTINCT rep) FROM sales", "SELECT count(rep) FROM sales"),
    ("SELECT rep FROM sales WHERE rep = 'Zoë'", "SELECT rep FROM sales WHERE id IN (1, 6)"),
    ("SELECT rep FROM sales WHERE id = 1", "SELECT rep FROM sales WHERE id = 1; SELECT 1"),
    ("SELECT rep FROM sales WHERE id = 1", "DELETE FROM sales"),
]

OPTION_SETS = [
    {}, {"profile": "bird"}, {"profile": "test-suite"}, {"profile": "mro"}, {"profile": "logiccat"},
    {"duplicates": "set"}, {"row_order": "always"}, {"row_order": "ignore"}, {"columns": "positional"},
    {"distinct": "strip"}, {"float_decimals": 1}, {"nulls": "distinct"}, {"empty": "miss"}, {"empty": "match"},
    {"ties": "gold"}, {"numbers": "python"}, {"profile": "bird", "duplicates": "bag", "columns": "match"},
]


@pytest.fixture(params=["sqlite", "duckdb", "postgresql"])
def portable(request, tmp_path):
    """(the suite's `database:`, an engine on the same database) on each engine."""
    kind = request.param
    if kind == "sqlite":
        path = make_sqlite(tmp_path / "sales.sqlite", PORTABLE_SQL)
        eng = sa.create_engine(f"sqlite:///{path}")
        yield str(path), eng
    elif kind == "duckdb":
        request.getfixturevalue("duckdb_available")
        import duckdb

        path = tmp_path / "sales.duckdb"
        with duckdb.connect(str(path)) as conn:
            conn.execute(PORTABLE_SQL)
        eng = sa.create_engine(f"duckdb:///{path}", connect_args={"read_only": True})
        yield str(path), eng
    else:
        import os

        from sqlalchemy.engine import make_url

        url = make_url(request.getfixturevalue("postgres_url"))
        name = f"qa_assert3_{os.getpid()}"
        admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
        target = url.set(database=name)
        with sa.create_engine(target).begin() as conn:
            conn.exec_driver_sql(PORTABLE_SQL)
        eng = sa.create_engine(target)
        try:
            yield target.render_as_string(hide_password=False), eng
        finally:
            eng.dispose()
            with admin.connect() as conn:
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            admin.dispose()
        return
    eng.dispose()


def test_every_option_is_honoured_by_the_helpers_as_by_suites(pytester, portable):
    """The same gold/prediction pairs (NULLs, duplicates, floats against decimals, aliases and column order, empty
    results, ORDER BY with ties, unicode, several statements, a write), under each profile and each single option
    override: `check_execution_match(..., profile=, **option)` gives the execution match, soft F1 and error kind a
    suite with `execution: {profile: ..., option: ...}` records, on SQLite, DuckDB and PostgreSQL."""
    database, eng = portable
    for k, options in enumerate(OPTION_SETS):
        suite = {"database": database, "execution": dict(options) or "sqleval",
                 "cases": [{"id": f"c{i}", "gold": gold, "predicted": predicted}
                           for i, (gold, predicted) in enumerate(PAIRS)]}
        (pytester.path / f"s{k}.sqleval.yaml").write_text(yaml.safe_dump(suite, sort_keys=False, allow_unicode=True),
                                                          encoding="utf-8")
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sqleval", "--sqleval-json", "report.json",
                                           "-q")
    assert "error" not in result.stdout.str().splitlines()[-1], result.stdout.str()[-3000:]
    records = {(r["suite"], r["id"]): r for r in json.loads((pytester.path / "report.json").read_text())["cases"]}
    assert len(records) == len(OPTION_SETS) * len(PAIRS)
    differences = []
    for k, options in enumerate(OPTION_SETS):
        overrides = dict(options)
        profile = overrides.pop("profile", "sqleval")
        for i, (gold, predicted) in enumerate(PAIRS):
            record = records[(f"s{k}", f"c{i}")]
            verdict = check_execution_match(gold, predicted, engine=eng, profile=profile, **overrides)
            helper = (verdict.match, round(verdict.soft_f1, 9), (verdict.error or {}).get("kind"))
            suite = (record["execution_match"], round(record["soft_f1"] or 0.0, 9), (record["error"] or {}).get("kind"))
            if i % 5 == 0:  # assert_soft_f1 reads the same figure
                soft = check_soft_f1(gold, predicted, engine=eng, profile=profile, at_least=0, **overrides)
                helper += (round(soft.score, 9),)
                suite += (round(record["soft_f1"] or 0.0, 9),)
            if helper != suite:
                differences.append((options, gold, predicted, helper, suite))
    assert not differences
    # the table is not vacuous: both outcomes occur under every option set
    for k in range(len(OPTION_SETS)):
        outcomes = {records[(f"s{k}", f"c{i}")]["execution_match"] for i in range(len(PAIRS))}
        assert outcomes == {True, False}, OPTION_SETS[k]


# --------------------------------------------------------------------------- what a plain test sees
PLAIN_TESTS = """
    import pytest
    from pytest_sqleval import (assert_exact_match, assert_execution_match, assert_soft_f1, check_execution_match,
                                check_exact_match)

    def test_passes_unordered_with_nulls_and_aliases(sqleval_engine):
        assert sqleval_engine.dialect.name == "sqlite"
        assert_execution_match("SELECT id, note FROM sales", "SELECT note AS n, id AS i FROM sales ORDER BY id DESC")
        assert_execution_match({"columns": ["rep", "n"], "rows": [["Ann", 2], ["Bob", 2], ["Zoë", 2]]},
                               "SELECT rep, count(*) FROM sales GROUP BY rep")

    def test_order_by_decides(sqleval_engine):
        assert_execution_match("SELECT rep FROM sales ORDER BY id", "SELECT rep FROM sales ORDER BY id DESC")

    def test_duplicates(sqleval_engine):
        assert_execution_match("SELECT rep FROM sales", "SELECT DISTINCT rep FROM sales")

    def test_floats():
        assert_execution_match("SELECT amount FROM sales WHERE id = 3", "SELECT 0.3")

    def test_clauses():
        assert_exact_match("SELECT rep FROM sales WHERE units > 1", "SELECT rep FROM sales WHERE units >= 1",
                           clauses=["select", "where"])

    def test_soft():
        assert_soft_f1("SELECT rep, region FROM sales", "SELECT rep FROM sales WHERE id < 4", at_least=0.7)

    def test_plain_assert():
        verdict = check_execution_match("SELECT rep FROM sales", "SELECT rep FROM sales WHERE units = 3")
        assert verdict

    def test_equals_true():
        assert check_exact_match("SELECT rep FROM sales", "SELECT region FROM sales") == True

    @pytest.mark.sqleval_database("missing.sqlite")
    class TestClassMarkerWins:
        def test_it(self, sqleval_engine):
            pass
"""


@pytest.mark.parametrize("args", [("-vv",), ("-vv", "-n", "2")], ids=["serial", "xdist"])
def test_failure_messages_from_the_ini_database_serial_and_under_xdist(sales, args):
    """From the ini option (a setup script, built per worker), every failing helper and plain `assert` on a verdict
    shows both SQL texts, the reason and the result diff under `-vv`, serially and under xdist; a class marker
    overrides the ini option (and names what is wrong with its database)."""
    sales.makeini("[pytest]\nsqleval_database = sqlite://\nsqleval_database_setup = sales.sql\n")
    result = _run(sales, PLAIN_TESTS, *args)
    result.assert_outcomes(passed=1, failed=7, errors=1)  # the first test passes
    result.stdout.fnmatch_lines_random([
        "E*execution_match failed (profile sqleval)",
        "E*order: same rows in a different order",
        "E*predicted SQL: SELECT rep FROM sales ORDER BY id DESC",
        "E*duplicates: same rows but different duplicate counts: gold has 6 rows, the prediction 3",
        "E*rows only in gold:       (Zoë); (Ann); (Bob)",
        "E*values: 1 gold row is missing from the prediction, 1 predicted row is not in the gold",
        "E*rows only in gold:       (0.30000000000000004)",
        "E*rows only in prediction: (0.3)",
        "E*exact_match failed on select, where: clauses differ: where (profile sqleval)",
        "E*where            DIFFERS",
        "E*soft_f1 0.6667 < 0.7 (required at least 0.7)",
        "*sqleval verdict*",
        "*row_count: gold has 6 rows, the prediction 3*",
        "E*<ExactMatchCheck exact_match failed: clauses differ: select, select_no_agg> == True",
        "*@pytest.mark.sqleval_database on *TestClassMarkerWins::test_it: database file not found*missing.sqlite*",
    ])


def test_a_decimal_against_a_float_is_shown_with_its_type(portable):
    """Under `numbers: python` (as test-suite, BIRD and LogicCat compare) a NUMERIC 0.10 is not the float 0.1; the
    diff printed `(0.1)` against `(0.1)`, since a report's values are JSON. The helpers' message shows the
    engine's own values with their types. SQLite has no decimals: there the two match."""
    database, eng = portable
    gold, predicted = "SELECT price FROM sales WHERE id = 1", "SELECT amount FROM sales WHERE id = 1"
    assert check_execution_match(gold, predicted, engine=eng)  # by value
    verdict = check_execution_match(gold, predicted, engine=eng, numbers="python")
    if eng.dialect.name == "sqlite":
        assert verdict
        return
    assert not verdict
    lines = verdict.explain().splitlines()
    assert "  rows only in gold:       (Decimal('0.10'))" in lines
    assert "  rows only in prediction: (0.1)" in lines
    # a plain `assert compare_results(...).match` explains from the same values
    from pytest_sqleval import EXECUTION_PROFILES, compare_results, run_query
    from pytest_sqleval.assertions import explain

    python = EXECUTION_PROFILES["test-suite"]
    pure = compare_results(run_query(eng, "SELECT CAST(0.1 AS NUMERIC(6, 1))"), run_query(eng, "SELECT CAST(0.1 AS DOUBLE PRECISION)"),
                           python, ordered=False)
    assert not pure.match
    assert "  rows only in gold:       (Decimal('0.1'))" in explain(pure).splitlines()
