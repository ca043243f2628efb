"""Fourth QA look at issue 13's assertions, with inputs nobody tuned for, as an application developer writes
ordinary pytest tests (pytester): values that differ only by a character nobody sees, UUID columns against
expected rows, thresholds given as Decimal or Fraction, `assert_exact_match` without a database, clause lists
with repeats; and the helpers' argument forms and failure messages on a SQLite file, a DuckDB file and the real
PostgreSQL server."""

from __future__ import annotations

import contextlib
import os
import textwrap

import pytest

from conftest import make_sqlite

TEAMS_SQL = """
CREATE TABLE teams (id INTEGER PRIMARY KEY, name TEXT, city TEXT, rating REAL, token TEXT);
INSERT INTO teams VALUES
    (1, 'Ærø', 'Oslo', 1.5, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
    (2, 'Bø', NULL, NULL, 'b1ffcd00-0000-4000-8000-000000000002'),
    (3, NULL, 'Bergen', 2.25, NULL),
    (4, 'Ål', 'Bergen', 2.25, 'c2000000-0000-4000-8000-000000000003');
"""


@pytest.fixture
def teams(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "teams.sqlite", TEAMS_SQL)
    (pytester.path / "teams.sql").write_text(TEAMS_SQL, encoding="utf-8")
    pytester.makeini("[pytest]\n")
    return pytester


def _run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_teams=textwrap.dedent(source))
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    return runner("-p", "no:cacheprovider", *args)


# --------------------------------------------------------------------------- bugs found in this look
def test_a_value_that_differs_only_by_an_invisible_character_is_shown_typed(teams):
    """A model that copies a name from a web page brings a zero-width space (U+200B) or a soft hyphen along. The
    diff printed `(Ærø)` against `(Ærø)`: the two rows look the same, the only thing a failure must not do. Such
    rows are shown with their types and escapes, as rows that print alike already were; a suite's miss too. Two
    long values (URLs) that differ past 64 characters printed alike even typed (`('https://…/detail/…)` twice):
    a long typed cell keeps its end, and values that still print alike are shown whole."""
    result = _run(teams, """
        import pytest
        from pytest_sqleval import assert_execution_match, check_execution_match

        pytestmark = pytest.mark.sqleval_database("teams.sqlite")

        def test_zero_width():
            assert_execution_match("SELECT name FROM teams WHERE id = 1", "SELECT 'Ærø' || char(8203)")

        def test_soft_hyphen():
            assert_execution_match("SELECT city FROM teams WHERE id = 1", "SELECT 'Os' || char(173) || 'lo'")

        def test_visible_difference_stays_plain():
            assert_execution_match("SELECT city FROM teams WHERE id = 1", "SELECT 'Oslo!'")

        def test_long_values_that_differ_at_the_end():
            assert_execution_match("SELECT 'https://example.com/products/category/subcategory/item/detail/00001'",
                                   "SELECT 'https://example.com/products/category/subcategory/item/detail/00002'")

        def test_long_values_that_differ_in_the_middle():
            assert_execution_match("SELECT '" + "x" * 100 + "a" + "y" * 100 + "'",
                                   "SELECT '" + "x" * 100 + "b" + "y" * 100 + "'")
    """, "-v")
    result.assert_outcomes(failed=5)
    out = result.stdout.str()
    assert "E         rows only in gold:       ('\\xc6r\\xf8')" in out, out
    assert "E         rows only in prediction: ('\\xc6r\\xf8\\u200b')" in out, out
    assert "E         rows only in gold:       ('Oslo')" in out, out
    assert "E         rows only in prediction: ('Os\\xadlo')" in out, out
    assert "E         rows only in prediction: (Oslo!)" in out, out  # nothing hidden: shown as it is
    # two long values that print alike once cut to a cell's width: their ends are kept, or they are shown whole
    assert "E         rows only in gold:       ('https://example.com/products/category/sub…ry/item/detail/00001')" \
        in out, out
    assert "E         rows only in prediction: ('https://example.com/products/category/sub…ry/item/detail/00002')" \
        in out, out
    assert f"E         rows only in prediction: ('{'x' * 100}b{'y' * 100}')" in out, out

    (teams.path / "hidden.sqleval.yaml").write_text(textwrap.dedent("""
        database: teams.sqlite
        cases:
          - id: zero-width
            gold: SELECT name FROM teams WHERE id = 1
            predicted: SELECT 'Ærø' || char(8203)
          - id: long
            gold: SELECT 'https://example.com/products/category/subcategory/item/detail/00001'
            predicted: SELECT 'https://example.com/products/category/subcategory/item/detail/00002'
    """), encoding="utf-8")
    suite = teams.runpytest("-p", "no:cacheprovider", "--sqleval", "-v", "hidden.sqleval.yaml")
    suite_out = suite.stdout.str()
    assert "('\\xc6r\\xf8')" in suite_out and "('\\xc6r\\xf8\\u200b')" in suite_out, suite_out
    assert "('https://example.com/products/category/sub…ry/item/detail/00002')" in suite_out, suite_out


def test_exact_match_without_a_database_names_its_own_argument(teams):
    """`assert_exact_match` takes `schema=`, not `engine=`; in a test without a database its message said "pass
    engine=...", and following it gave `TypeError: unexpected keyword argument 'engine'`. It names `schema=`, and
    doing what it says works."""
    result = _run(teams, """
        from pytest_sqleval import assert_exact_match, check_exact_match

        def test_no_database():
            assert_exact_match("SELECT name FROM teams", "SELECT name FROM teams")

        def test_as_told(sqleval_engine_factory):
            assert check_exact_match("SELECT name FROM teams", "SELECT t.name FROM teams AS t",
                                     schema=sqleval_engine_factory("teams.sqlite"))
    """)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "E   *ValueError: assert_exact_match needs a database: pass schema=... "
        "(e.g. schema=sqleval_engine_factory(\"shop.sqlite\")*",
    ])
    assert "pass engine=" not in result.stdout.str()


def test_a_soft_f1_threshold_may_be_any_real_number(teams):
    """Thresholds often come from a config read as Decimal, or are written as fractions: `at_least=Decimal("0.5")`
    was refused with "must be a number between 0 and 1, not Decimal('0.5')", which it is. Any real number in
    [0, 1] is a threshold; NaN, text, booleans and numbers outside [0, 1] are still refused."""
    result = _run(teams, """
        from decimal import Decimal
        from fractions import Fraction
        import pytest
        from pytest_sqleval import assert_soft_f1, check_soft_f1

        pytestmark = pytest.mark.sqleval_database("teams.sqlite")
        GOLD, HALF = "SELECT id FROM teams", "SELECT id FROM teams WHERE id < 3"  # soft F1 2/3

        def test_decimal():
            verdict = assert_soft_f1(GOLD, HALF, at_least=Decimal("0.5"))
            assert verdict.at_least == 0.5 and isinstance(verdict.at_least, float)

        def test_fraction():
            assert_soft_f1(GOLD, HALF, at_least=Fraction(2, 3))

        def test_fraction_above():
            assert_soft_f1(GOLD, HALF, at_least=Fraction(3, 4))

        @pytest.mark.parametrize("bad", [Decimal("NaN"), Decimal("1.5"), float("nan"), "0.5", True, -0.1, None])
        def test_refused(bad):
            with pytest.raises(ValueError, match="at_least must be a number between 0 and 1"):
                check_soft_f1(GOLD, HALF, at_least=bad)
    """)
    result.assert_outcomes(passed=9, failed=1)
    result.stdout.fnmatch_lines(["E*soft_f1 0.6667 < 0.75 (required at least 0.75)"])


def test_duplicate_clause_names_are_checked_and_named_once(teams):
    """`clauses=["select", "SELECT", "where"]` (a list built from two sources) named select twice: "exact_match
    failed on select, select, where"."""
    result = _run(teams, """
        import pytest
        from pytest_sqleval import assert_exact_match

        pytestmark = pytest.mark.sqleval_database("teams.sqlite")

        def test_it():
            verdict = assert_exact_match("SELECT name FROM teams WHERE id > 1", "SELECT name FROM teams WHERE id > 1",
                                         clauses=["select", "SELECT", "where"])
            assert verdict.checked == ("select", "where")
            assert_exact_match("SELECT name FROM teams WHERE id > 1", "SELECT name FROM teams WHERE id > 2",
                               clauses=["select", " Select", "where", "WHERE"])
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E*exact_match failed on select, where: clauses differ: where (profile sqleval)"])


def test_a_prediction_that_did_not_come_reads_the_same_in_every_helper(teams):
    """A model that returned nothing (`None`) is "no_prediction: no prediction" and "predicted SQL: (none)" in
    `assert_execution_match`; `assert_exact_match` said "parse_error: empty SQL" and `assert_exact_match` and
    `assert_policy` printed an empty "predicted SQL:" line."""
    result = _run(teams, """
        import pytest
        from pytest_sqleval import assert_exact_match, assert_execution_match, assert_policy

        pytestmark = pytest.mark.sqleval_database("teams.sqlite")

        @pytest.mark.parametrize("helper", ["execution", "exact", "policy"])
        def test_none(helper):
            if helper == "execution":
                assert_execution_match("SELECT name FROM teams", None)
            elif helper == "exact":
                assert_exact_match("SELECT name FROM teams", None)
            else:
                assert_policy(None, {"tables": ["teams"]})
    """)
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    lines = [line[1:].strip() for line in result.stdout.lines if line.startswith("E ")]
    assert lines.count("predicted SQL: (none)") == 3, out
    assert "pytest_sqleval.assertions.SqlevalAssertionError: exact_match failed: no_prediction: no prediction (profile " \
           "sqleval)" in lines, out
    assert "empty SQL" not in out and "predicted SQL:" not in lines


def test_a_relative_file_url_that_is_not_found_says_where_it_was_looked_for(teams):
    """`@pytest.mark.sqleval_database("sqlite:///league.sqlite")` beside the test file, run from the project root:
    "SQLite database not found: league.sqlite", with no word on why the file beside the test was not seen. A path
    in the marker is relative to the test file, a URL to the working directory: the message says so and how to
    write it; the path alone works."""
    sub = teams.mkdir("sub")
    make_sqlite(sub / "league.sqlite", TEAMS_SQL)
    (sub / "test_where.py").write_text(textwrap.dedent("""
        import pytest
        from pytest_sqleval import assert_execution_match

        @pytest.mark.sqleval_database("sqlite:///league.sqlite")
        def test_url(sqleval_engine):
            pass

        @pytest.mark.sqleval_database("duckdb:///league.duckdb?access_mode=read_only")
        def test_duckdb_url(sqleval_engine):
            pass

        @pytest.mark.sqleval_database("league.sqlite")
        def test_path():
            assert_execution_match("SELECT name FROM teams", "SELECT name FROM teams ORDER BY id DESC")
    """), encoding="utf-8")
    result = teams.runpytest("-p", "no:cacheprovider", "sub/test_where.py")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines_random([
        f"*test_url: cannot open the database 'sqlite:///league.sqlite': *; a relative file URL is read from the "
        f"working directory ({teams.path}): write the path alone, \"league.sqlite\", for a file relative to the test "
        "file*",
        "*test_duckdb_url: cannot open the database *; a relative file URL is read from the working directory *: "
        "write the path alone, \"league.duckdb\", *",
    ])


def test_a_gold_result_is_never_reused_after_the_test_changed_the_data(teams, request):
    """An application's tests seed their own rows on their own engine (a session-scoped engine, a transaction per
    test). The helpers kept each gold's result for the whole session, keyed by the engine: after more rows were
    inserted, `SELECT count(*) FROM orders` still "returned" the first count, and a correct prediction failed with
    "rows only in gold: (1); rows only in prediction: (2)". On a SQLite file even the prediction read the old rows:
    the query process kept the file open `immutable=1`, so it never saw a change. Each helper call runs its golds
    afresh, and the query process reopens a SQLite file (or its WAL) that changed."""
    with _own_postgres_database(request.getfixturevalue("postgres_url"), "qa4_fresh_gold") as postgres_url:
        result = _run(teams, _FRESH_GOLD_TESTS.format(postgres_url=postgres_url))
    result.assert_outcomes(passed=6)


@contextlib.contextmanager
def _own_postgres_database(server_url: str, prefix: str):
    """A database of this test's own on the PostgreSQL server (dropped after): its URL, password included."""
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    url = make_url(server_url)
    name = f"{prefix}_{os.getpid()}"
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


_FRESH_GOLD_TESTS = """
        import os
        import pytest
        import sqlalchemy as sa
        from pytest_sqleval import assert_execution_match, assert_soft_f1, check_execution_match

        @pytest.fixture(scope="session", params=["memory", "file", "postgresql"])
        def app_engine(request, tmp_path_factory):
            if request.param == "memory":
                engine = sa.create_engine("sqlite://")
            elif request.param == "file":
                engine = sa.create_engine(f"sqlite:///{{tmp_path_factory.mktemp('app') / 'app.sqlite'}}")
            else:
                engine = sa.create_engine({postgres_url!r})
            with engine.begin() as conn:
                conn.exec_driver_sql("DROP TABLE IF EXISTS qa4_orders")
                conn.exec_driver_sql("CREATE TABLE qa4_orders (id INTEGER PRIMARY KEY, item TEXT)")
            yield engine
            with engine.begin() as conn:
                conn.exec_driver_sql("DROP TABLE qa4_orders")
            engine.dispose()

        def seed(engine, *items):
            with engine.begin() as conn:
                conn.exec_driver_sql("DELETE FROM qa4_orders")
                for i, item in enumerate(items, 1):
                    conn.exec_driver_sql(f"INSERT INTO qa4_orders VALUES ({{i}}, '{{item}}')")

        def test_one_order(app_engine):
            seed(app_engine, "tea")
            assert_execution_match("SELECT count(*) FROM qa4_orders", "SELECT count(id) FROM qa4_orders",
                                   engine=app_engine)

        def test_two_orders(app_engine):
            seed(app_engine, "tea", "cake")
            assert_execution_match("SELECT count(*) FROM qa4_orders", "SELECT count(id) FROM qa4_orders",
                                   engine=app_engine)
            assert_soft_f1("SELECT item FROM qa4_orders", "SELECT item FROM qa4_orders", engine=app_engine, at_least=1)
            seed(app_engine, "tea", "cake", "jam")
            verdict = check_execution_match("SELECT item FROM qa4_orders", "SELECT item FROM qa4_orders WHERE id < 3",
                                            engine=app_engine)
            assert not verdict and "row_count: gold has 3 rows, the prediction 2" in verdict.explain()
"""


def test_the_schema_of_an_engine_of_the_tests_own_is_read_afresh(teams):
    """An application's session-scoped engine gains a table after the first exact-match check (a fixture runs a
    migration). The helpers kept the schema of the first call: under the `spider` profile the gold on the new table
    was "unknown_table" (`ValueError: exact match cannot read the gold SQL`), and a policy saw `SELECT *` over it
    as one that "may include" the forbidden column. A database the plugin opened read-only still keeps its schema."""
    result = _run(teams, """
        import pytest
        import sqlalchemy as sa
        from pytest_sqleval import assert_exact_match, check_policy_of

        @pytest.fixture(scope="session")
        def app_engine():
            engine = sa.create_engine("sqlite://")
            with engine.begin() as conn:
                conn.exec_driver_sql("CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT)")
            yield engine
            engine.dispose()

        def test_first(app_engine):
            assert_exact_match("SELECT name FROM shops", "SELECT s.name FROM shops AS s", schema=app_engine,
                               profile="spider")

        def test_after_a_migration(app_engine):
            with app_engine.begin() as conn:
                conn.exec_driver_sql("CREATE TABLE staff (id INTEGER PRIMARY KEY, shop_id INTEGER, salary REAL)")
            assert_exact_match("SELECT salary FROM staff", "SELECT t.salary FROM staff AS t", schema=app_engine,
                               profile="spider")
            verdict = check_policy_of("SELECT * FROM staff", forbid_columns=["salary"], engine=app_engine)
            assert verdict.violations == ("selects * from 'staff', which includes forbidden column(s) salary",), \
                verdict.violations
    """)
    result.assert_outcomes(passed=2)


def test_sqleval_query_given_no_text_says_so(teams):
    """`sqleval_query(None)` (the model answered nothing) raised `QueryError: runtime: TypeError: object of type
    'NoneType' has no len()`, and bytes "runtime: AttributeError: 'bytes' object has no attribute 'encode'": a
    driver's crash dressed as the query's runtime error, which a `pytest.raises(QueryError)` meant for a failing
    query accepts. None is `no_prediction`, as the helpers call it; anything else but text is a TypeError."""
    result = _run(teams, """
        import pytest
        from pytest_sqleval import QueryError

        pytestmark = pytest.mark.sqleval_database("teams.sqlite")

        def test_none(sqleval_query):
            with pytest.raises(QueryError) as info:
                sqleval_query(None)
            assert info.value.kind == "no_prediction" and "None" in info.value.message

        @pytest.mark.parametrize("sql", [b"SELECT 1", 42, ["SELECT 1"]])
        def test_not_text(sqleval_query, sql):
            with pytest.raises(TypeError, match=f"sqleval_query: sql must be SQL text \\(a str\\), not {type(sql).__name__}"):
                sqleval_query(sql)

        @pytest.mark.parametrize("sql", ["", "   ", "\\n\\t"])
        def test_empty(sqleval_query, sql):
            # as check_execution_match and a suite's case call an empty answer (it was `rejected`, "no statement")
            with pytest.raises(QueryError) as info:
                sqleval_query(sql)
            assert info.value.kind == "no_prediction" and "empty" in info.value.message

        def test_text(sqleval_query):
            assert sqleval_query("SELECT count(*) FROM teams").rows == [(4,)]
    """)
    result.assert_outcomes(passed=8)


UUID_TESTS = """
    import uuid
    import pytest
    from pytest_sqleval import assert_execution_match, assert_soft_f1, check_execution_match

    pytestmark = pytest.mark.sqleval_database({database!r}{setup})
    TOKENS = [["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"], ["b1ffcd00-0000-4000-8000-000000000002"]]

    def test_text(sqleval_engine):
        assert_execution_match({{"columns": ["token"], "rows": TOKENS}}, "SELECT token FROM teams WHERE id < 3")

    def test_uuid_objects(sqleval_engine):
        rows = [[uuid.UUID(t)] for [t] in TOKENS]
        assert_soft_f1({{"rows": rows}}, "SELECT token FROM teams WHERE id < 3", at_least=1)

    def test_miss_is_still_a_miss(sqleval_engine):
        verdict = check_execution_match({{"rows": TOKENS[:1]}}, "SELECT token FROM teams WHERE id = 2")
        assert not verdict.match
        assert "rows only in prediction: (b1ffcd00-0000-4000-8000…)" in verdict.explain()
"""


def _uuid_database(kind: str, pytester: pytest.Pytester, request) -> tuple[str, str]:
    """(the marker's database, its setup argument) with `teams.token` a UUID column."""
    uuid_sql = TEAMS_SQL.replace("token TEXT", "token UUID")
    if kind == "duckdb":
        request.getfixturevalue("duckdb_available")
        import duckdb

        with duckdb.connect(str(pytester.path / "teams.duckdb")) as conn:
            conn.execute(uuid_sql)
        return "teams.duckdb", ""
    (pytester.path / "teams_uuid.sql").write_text(uuid_sql, encoding="utf-8")
    return request.getfixturevalue("postgres_url"), ", setup=['teams_uuid.sql']"


@pytest.mark.parametrize("kind", ["duckdb", "postgresql"])
def test_expected_rows_meet_a_uuid_column(teams, request, kind):
    """DuckDB and PostgreSQL return a UUID column as `uuid.UUID`; expected rows (and a suite's YAML) can only
    write it as text, so `{"rows": [["a0eebc99-…"]]}` never matched: "rows only in gold: ('a0eebc99-…'); rows only
    in prediction: (UUID('a0eebc99-…'))". Against expected rows a UUID compares as its text, as dates do; a
    different UUID still misses. In a suite's `expected:` too."""
    database, setup = _uuid_database(kind, teams, request)
    result = _run(teams, UUID_TESTS.format(database=database, setup=setup))
    result.assert_outcomes(passed=3)

    (teams.path / "tokens.sqleval.yaml").write_text(textwrap.dedent(f"""
        database: {database}
        cases:
          - id: tokens
            expected: {{columns: [token], rows: [[a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11]]}}
            predicted: SELECT token FROM teams WHERE id = 1
    """) if kind == "duckdb" else textwrap.dedent(f"""
        database: {{url: "{database}", setup: [teams_uuid.sql]}}
        cases:
          - id: tokens
            expected: {{columns: [token], rows: [[a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11]]}}
            predicted: SELECT token FROM teams WHERE id = 1
    """), encoding="utf-8")
    suite = teams.runpytest("-p", "no:cacheprovider", "--sqleval", "tokens.sqleval.yaml")
    suite.assert_outcomes(passed=1)


# --------------------------------------------------------------------------- already fine: kept as regression tests
APP_TESTS = """
    import pytest
    from pytest_sqleval import (QueryError, assert_exact_match, assert_execution_match, assert_soft_f1,
                                check_execution_match, check_soft_f1)

    pytestmark = pytest.mark.sqleval_database({database!r}{setup})

    def test_passes(sqleval_engine, sqleval_query):
        # column order, aliases, NULLs and row order do not matter without ORDER BY in the gold
        assert_execution_match("SELECT id, name FROM teams", "SELECT name AS n, id FROM teams ORDER BY id DESC")
        # any one of several golds; expected rows with NULLs; floats and ints by value
        verdict = assert_execution_match(["SELECT 1", {{"rows": [[1.5], [None], [2.25], [2.25]]}}],
                                         "SELECT rating FROM teams")
        assert verdict.best == 1
        assert_execution_match("SELECT city FROM teams", "SELECT DISTINCT city FROM teams", duplicates="set")
        assert_execution_match("SELECT id FROM teams ORDER BY id", "SELECT id FROM teams ORDER BY id DESC",
                               row_order="ignore")
        assert_execution_match("SELECT rating * 3 FROM teams WHERE id = 1", "SELECT 4.5000000001",
                               float_decimals=6)
        assert_exact_match("SELECT name FROM teams WHERE id > 1 ORDER BY id", "SELECT name FROM teams WHERE id > 1",
                           clauses=["select", "where"])
        assert_soft_f1("SELECT id, name FROM teams", "SELECT id FROM teams", at_least=0.5)
        assert sqleval_query("SELECT count(*) FROM teams").rows == [(4,)]
        with pytest.raises(QueryError) as refused:
            sqleval_query("DROP TABLE teams")
        assert refused.value.kind == "rejected"

    def test_null_row_missing():
        assert_execution_match("SELECT name FROM teams", "SELECT name FROM teams WHERE name IS NOT NULL")

    def test_column_order_positional():
        assert_execution_match("SELECT id, name FROM teams", "SELECT name, id FROM teams", columns="positional")

    def test_soft_threshold():
        assert_soft_f1(["SELECT 42", "SELECT id, city FROM teams"], "SELECT id FROM teams WHERE id < 3", at_least=0.9)

    def test_plain_assert():
        verdict = check_soft_f1("SELECT id FROM teams", "SELECT id FROM teams WHERE id = 4", at_least=0.5)
        assert verdict

    def test_failing_prediction():
        assert_execution_match("SELECT id FROM teams", "SELECT no_such_column FROM teams")

    def test_unknown_option():
        assert_execution_match("SELECT id FROM teams", "SELECT id FROM teams", column_order="strict")
"""


def _app_database(kind: str, pytester: pytest.Pytester, request) -> tuple[str, str]:
    if kind == "sqlite-file":
        return "teams.sqlite", ""
    if kind == "duckdb-file":
        request.getfixturevalue("duckdb_available")
        import duckdb

        with duckdb.connect(str(pytester.path / "teams.duckdb")) as conn:
            conn.execute(TEAMS_SQL)
        return "teams.duckdb", ""
    return request.getfixturevalue("postgres_url"), ", setup=['teams.sql']"


@pytest.mark.parametrize("kind, args", [("sqlite-file", ()), ("duckdb-file", ()), ("postgresql", ()),
                                        ("postgresql", ("-n", "2"))], ids=["sqlite", "duckdb", "postgresql", "pg-xdist"])
def test_an_application_test_file_on_each_engine(teams, request, kind, args):
    """The same application tests on a SQLite file, a DuckDB file and a database built on the PostgreSQL server
    (serially and under xdist): every option form passes where it should, and each failure shows what a suite's
    `-v` shows (reason, both SQL texts, soft F1, the NULL row only in gold, every gold of several) or a clear error
    naming the fix."""
    database, setup = _app_database(kind, teams, request)
    result = _run(teams, APP_TESTS.format(database=database, setup=setup), "-v", *args)
    result.assert_outcomes(passed=1, failed=6)
    result.stdout.fnmatch_lines_random([
        "E*execution_match failed (profile sqleval)",
        "E*row_count: gold has 4 rows, the prediction 3",
        "E*predicted SQL: SELECT name FROM teams WHERE name IS NOT NULL",
        "E*soft_f1: 0.8571",
        "E*rows only in gold:       (NULL)",
        "E*execution_match failed (profile sqleval, columns=positional)",
        "E*soft_f1 0.4444 < 0.9 (required at least 0.9)",
        "E*accepted golds: 2; best: #2 (any one may match)",
        "*sqleval verdict*",
        "*row_count: gold has 4 rows, the prediction 1*",
        "E*ValueError: unknown comparison option 'column_order'; options are: row_order, *columns*",
    ])
    out = result.stdout.str()
    assert "E         predicted SQL: SELECT no_such_column FROM teams" in out
    assert ("syntax:" in out or "runtime:" in out) and "no_such_column" in out
    if kind == "postgresql":
        assert os.environ.get("PGPASSWORD", "\0") not in out


def test_run_query_given_no_text_raises_instead_of_returning_an_empty_result(tmp_path):
    """``run_query(engine, None)`` returned an empty result: equal to an empty gold, a model that gave no answer
    would pass. It is a ``no_prediction`` QueryError; bytes or a number is a TypeError naming the type."""
    import sqlalchemy as sa

    from pytest_sqleval import EXECUTION_PROFILES, compare_results, run_query
    from pytest_sqleval import QueryError as Error

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'empty.sqlite'}")
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE t (x INTEGER)"))
    gold = run_query(engine, "SELECT x FROM t", untrusted=False)
    assert gold.rows == []
    with pytest.raises(Error) as info:
        run_query(engine, None)
    assert info.value.kind == "no_prediction"
    for value, name in ((b"SELECT 1", "bytes"), (3, "int")):
        with pytest.raises(TypeError, match=f"not {name}"):
            run_query(engine, value)
    real_empty = run_query(engine, "SELECT x FROM t WHERE x > 0")  # a query that ran and returned no rows
    assert compare_results(gold, real_empty, EXECUTION_PROFILES["sqleval"], ordered=False).match
    engine.dispose()
