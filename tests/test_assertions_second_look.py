"""Second QA look at issue 13's assertion helpers, as an application developer uses them in ordinary pytest tests
(pytester): other argument forms (Engine, Connection, URL text), the options and profiles the helpers document,
the failure messages (thresholds, untrusted text, secrets, large results) and the session's settings."""

from __future__ import annotations

import textwrap

import pytest

from conftest import make_sqlite, require_module

FLEET_SQL = """
CREATE TABLE airlines (code TEXT PRIMARY KEY, country TEXT);
CREATE TABLE flights (id INTEGER PRIMARY KEY, airline TEXT, origin TEXT, seats INTEGER, load REAL);
INSERT INTO airlines VALUES ('SQ', 'SG'), ('LH', 'DE'), ('QF', 'AU');
INSERT INTO flights VALUES (1, 'SQ', 'SIN', 300, 0.1), (2, 'SQ', 'CDG', 250, 0.2), (3, 'LH', 'FRA', 180, 0.7),
                           (4, 'QF', 'SYD', 400, 0.9), (5, 'QF', 'SIN', 400, 0.9);
"""


@pytest.fixture
def fleet(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "fleet.sqlite", FLEET_SQL)
    pytester.makeini("[pytest]\n")
    return pytester


def _run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_fleet=textwrap.dedent(source))
    return pytester.runpytest("-p", "no:cacheprovider", *args)


# --------------------------------------------------------------------------- engine= and schema= forms
def test_a_connection_stands_for_its_engine_and_a_url_is_a_clear_type_error(fleet):
    """An application's tests often hold a SQLAlchemy Connection: every helper takes it (the prediction still
    runs read-only on a connection of its own). A URL given as text is not an engine: a TypeError naming
    engine= and the factory, without echoing the URL (it may carry a password)."""
    result = _run(fleet, """
        import pytest
        import sqlalchemy as sa
        from pytest_sqleval import (assert_exact_match, assert_execution_match, assert_policy, assert_soft_f1,
                                    check_execution_match)

        def test_connection():
            engine = sa.create_engine("sqlite:///fleet.sqlite")
            with engine.connect() as conn:
                assert_execution_match("SELECT origin FROM flights", "SELECT origin FROM flights ORDER BY id DESC",
                                       engine=conn)
                assert_soft_f1("SELECT airline, origin FROM flights", "SELECT origin FROM flights", engine=conn,
                               at_least=0.66)
                assert_exact_match("SELECT f.origin FROM flights AS f", "SELECT origin FROM flights", schema=conn)
                assert_policy("SELECT origin FROM flights", {"tables": ["flights"]}, engine=conn)
                refused = check_execution_match("SELECT 1", "DELETE FROM flights", engine=conn)
                assert refused.error["kind"] == "rejected"
            with engine.connect() as conn:
                assert conn.exec_driver_sql("SELECT count(*) FROM flights").scalar() == 5

        @pytest.mark.parametrize("given", ["sqlite:///fleet.sqlite", "postgresql://app:Hunter2pw@db/fleet"])
        def test_url_text(given):
            with pytest.raises(TypeError) as info:
                assert_execution_match("SELECT 1", "SELECT 1", engine=given)
            message = str(info.value)
            assert "engine=" in message and "sqleval_engine_factory" in message and "str" in message
            assert "Hunter2pw" not in message
            with pytest.raises(TypeError, match="schema="):
                assert_exact_match("SELECT 1", "SELECT 1", schema=given)

        def test_other_object():
            with pytest.raises(TypeError, match="engine= must be a SQLAlchemy engine or connection, not int"):
                assert_soft_f1("SELECT 1", "SELECT 1", engine=42)
    """)
    result.assert_outcomes(passed=4)


def test_an_overridden_sqleval_engine_may_give_a_connection(fleet):
    """README: override `sqleval_engine` to point the tests elsewhere; an application's conftest often has a
    Connection at hand: the helpers without engine= and sqleval_query take it as they take engine=conn."""
    fleet.makeconftest("""
        import pytest
        import sqlalchemy as sa

        @pytest.fixture
        def sqleval_engine():
            with sa.create_engine("sqlite:///fleet.sqlite").connect() as conn:
                yield conn
    """)
    result = _run(fleet, """
        from pytest_sqleval import assert_exact_match, assert_execution_match, assert_policy, assert_soft_f1

        def test_helpers(sqleval_engine):
            assert_execution_match("SELECT code FROM airlines", "SELECT code FROM airlines ORDER BY country")
            assert_soft_f1("SELECT code, country FROM airlines", "SELECT code FROM airlines", at_least=0.6)
            assert_exact_match("SELECT a.code FROM airlines AS a", "SELECT code FROM airlines")
            assert_policy("SELECT code FROM airlines", tables=["airlines"])

        def test_query(sqleval_query):
            assert sqleval_query("SELECT count(*) FROM flights").rows == [(5,)]
    """)
    result.assert_outcomes(passed=2)


def test_predicted_that_is_not_text_is_a_type_error_naming_it(fleet):
    """A model client that returns bytes or a number is the test's bug: a TypeError naming `predicted`, not an
    AttributeError from deep inside the report; None is a prediction that did not come (a miss)."""
    result = _run(fleet, """
        import pytest
        from pytest_sqleval import assert_exact_match, assert_execution_match, assert_soft_f1, check_execution_match

        pytestmark = pytest.mark.sqleval_database("fleet.sqlite")

        @pytest.mark.parametrize("predicted", [b"SELECT 1", 42, ["SELECT 1"]])
        def test_not_text(predicted):
            for helper in (assert_execution_match, assert_soft_f1, assert_exact_match):
                with pytest.raises(TypeError) as info:
                    helper("SELECT 1", predicted)
                assert "predicted must be SQL text" in str(info.value), helper.__name__
                assert type(predicted).__name__ in str(info.value)

        def test_none_is_a_miss():
            verdict = check_execution_match("SELECT 1", None)
            assert not verdict and verdict.error["kind"] == "no_prediction"
    """)
    result.assert_outcomes(passed=4)


def test_bad_arguments_are_errors_naming_the_argument(fleet):
    """clauses=, profile= and dialect= of the wrong kind: a TypeError/ValueError that names the argument, never
    "'int' object is not iterable" or a message blaming the gold SQL."""
    result = _run(fleet, """
        import pytest
        from pytest_sqleval import assert_exact_match, assert_execution_match, assert_soft_f1

        pytestmark = pytest.mark.sqleval_database("fleet.sqlite")

        def test_clauses():
            with pytest.raises(TypeError, match=r'clauses= must be a list of clause names .*not int'):
                assert_exact_match("SELECT code FROM airlines", "SELECT code FROM airlines", clauses=3)

        @pytest.mark.parametrize("helper", [assert_exact_match, assert_execution_match, assert_soft_f1])
        def test_profile(helper):
            with pytest.raises(TypeError, match="profile= must be the name of a profile.*not int"):
                helper("SELECT code FROM airlines", "SELECT code FROM airlines", profile=7)

        @pytest.mark.parametrize("helper", [assert_exact_match, assert_execution_match])
        def test_dialect(helper):
            with pytest.raises(ValueError) as info:
                helper("SELECT code FROM airlines", "SELECT code FROM airlines", dialect="klingon")
            assert str(info.value).startswith("dialect= must be a SQL dialect") and "klingon" in str(info.value)
            assert "gold" not in str(info.value)
    """)
    result.assert_outcomes(passed=6)


# --------------------------------------------------------------------------- messages
def test_soft_f1_message_never_shows_a_score_equal_to_its_threshold(fleet):
    """2/3 against at_least=0.6667 fails; '0.6667 < 0.6667' would contradict itself: enough digits are shown."""
    result = _run(fleet, """
        import pytest
        from pytest_sqleval import assert_soft_f1

        pytestmark = pytest.mark.sqleval_database("fleet.sqlite")

        def test_near():
            assert_soft_f1("SELECT code, country FROM airlines", "SELECT code FROM airlines", at_least=0.6667)

        def test_exact_threshold_passes():
            assert_soft_f1("SELECT code, country FROM airlines", "SELECT code FROM airlines", at_least=2 / 3)
    """)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["E*SqlevalAssertionError: soft_f1 0.66667 < 0.6667 (required at least 0.6667)"])
    assert "0.6667 < 0.6667" not in result.stdout.str()


def test_untrusted_text_is_escaped_in_exact_match_and_policy_messages(fleet):
    """Predicted SQL is untrusted: a terminal escape inside it is shown as an escape in every failure message,
    as the execution-match message already does."""
    result = _run(fleet, r"""
        import pytest
        from pytest_sqleval import assert_exact_match, assert_policy

        pytestmark = pytest.mark.sqleval_database("fleet.sqlite")
        SLY = "SELECT origin FROM flights WHERE origin = '\x1b[2J\x1b[31mSIN'"

        def test_exact():
            assert_exact_match("SELECT origin FROM flights", SLY)

        def test_policy():
            assert_policy(SLY, {"tables": ["airlines"]})
    """)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "\x1b" not in out
    assert out.count(r"\x1b[2J\x1b[31mSIN") >= 2


def test_overridden_options_are_named_in_the_failure(fleet):
    """A failure under `columns="positional"` must not read as the default profile's verdict."""
    result = _run(fleet, """
        import pytest
        from pytest_sqleval import assert_execution_match

        pytestmark = pytest.mark.sqleval_database("fleet.sqlite")

        def test_it():
            assert_execution_match("SELECT code, country FROM airlines", "SELECT country, code FROM airlines",
                                   columns="positional", float_decimals=2)
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E*execution_match failed (profile sqleval, columns=positional, float_decimals=2)"])


def test_a_large_mismatch_stays_readable(fleet):
    """Thousands of rows: the message shows the shapes, the first rows and a few differing rows, never all."""
    result = _run(fleet, """
        import pytest
        from pytest_sqleval import assert_execution_match

        pytestmark = pytest.mark.sqleval_database("fleet.sqlite")
        SERIES = ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r LIMIT {}) "
                  "SELECT n, 'passenger number ' || n || ' on a long flight to somewhere far away' AS who FROM r")

        def test_it():
            assert_execution_match(SERIES.format(3000), SERIES.format(2900))
    """, "-vv")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "E*row_count: gold has 3000 rows, the prediction 2900",
        "E*gold result: 3000 rows x 2 columns (first 5)",
        "E*predicted result: 2900 rows x 2 columns (first 5)",
        "E*rows only in gold:       (2901, passenger number 2901 o…)*",
    ])
    out = result.stdout.str()
    assert "passenger number 2950" not in out
    assert len(out.splitlines()) < 80


# --------------------------------------------------------------------------- the session's settings
PROFILE_CONFTEST = """
from dataclasses import replace


def pytest_sqleval_execution_profiles(profiles, config):
    profiles["lenient"] = replace(profiles["sqleval"], duplicates="set", row_order="ignore", profile="lenient")
"""

PROFILE_TESTS = """
import pytest
from pytest_sqleval import assert_execution_match, assert_soft_f1

pytestmark = pytest.mark.sqleval_database("fleet.sqlite")

@pytest.mark.parametrize("n", range(3))
def test_own_profile(n):
    verdict = assert_execution_match("SELECT origin FROM flights ORDER BY origin",
                                     "SELECT DISTINCT origin FROM flights ORDER BY origin DESC", profile="lenient")
    assert verdict.profile == "lenient"
    assert_soft_f1("SELECT origin FROM flights", "SELECT DISTINCT origin FROM flights", profile="lenient",
                   at_least=1.0)

def test_unknown_lists_it():
    with pytest.raises(ValueError, match="profiles are: .*lenient"):
        assert_execution_match("SELECT 1", "SELECT 1", profile="strictest")
"""


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_conftest_profile_works_in_a_plain_run(fleet, workers):
    """The README's own profiles (pytest_sqleval_execution_profiles) are named by the helpers' profile= too, in a
    plain `pytest` run without --sqleval or any sqleval ini option, serial and under xdist."""
    fleet.makeconftest(PROFILE_CONFTEST)
    fleet.makepyfile(test_fleet=PROFILE_TESTS)
    run = fleet.runpytest_subprocess if workers else fleet.runpytest
    result = run("-p", "no:cacheprovider", *workers)
    result.assert_outcomes(passed=4)


def test_the_ini_limits_and_allowed_functions_apply_to_helpers(fleet):
    """The helpers and sqleval_query run 'with the suites' limits': the ini options sqleval_timeout,
    sqleval_max_rows and sqleval_allow_functions apply in a plain test, as the refusal messages say."""
    fleet.makeini("[pytest]\nsqleval_timeout = 2\nsqleval_max_rows = 4\nsqleval_allow_functions = fleet_score\n")
    result = _run(fleet, """
        import time
        import pytest
        from pytest_sqleval import check_execution_match, QueryError

        pytestmark = pytest.mark.sqleval_database("fleet.sqlite")
        ENDLESS = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"

        def test_timeout():
            started = time.monotonic()
            verdict = check_execution_match("SELECT 1", ENDLESS)
            assert verdict.error["kind"] == "timeout" and "after 2 s" in verdict.error["message"]
            assert time.monotonic() - started < 6  # not the default 30 s

        def test_row_cap(sqleval_query):
            assert check_execution_match("SELECT 1", "SELECT id FROM flights").error["kind"] == "row_limit"
            with pytest.raises(QueryError) as info:
                sqleval_query("SELECT id FROM flights")
            assert info.value.kind == "row_limit"
            assert check_execution_match("SELECT 1", "SELECT id FROM flights", max_rows=10).error is None

        def test_allowed_function():
            verdict = check_execution_match("SELECT 1", "SELECT fleet_score(seats) FROM flights")
            assert "allowlist" not in verdict.error["message"]      # allowed: the engine then says it has none
            assert "fleet_score" in verdict.error["message"]
            assert "allowlist" in check_execution_match("SELECT 1", "SELECT other_fn(1)").error["message"]
    """)
    result.assert_outcomes(passed=3)


# --------------------------------------------------------------------------- PostgreSQL: secrets
PG_FLEET_SQL = """
CREATE TABLE flights (id INTEGER PRIMARY KEY, airline TEXT, origin TEXT, seats INTEGER);
INSERT INTO flights VALUES (1, 'SQ', 'SIN', 300), (2, 'SQ', 'CDG', 250), (3, 'LH', 'FRA', 180);
"""


@pytest.mark.postgres
def test_postgresql_failures_never_show_the_password(pytester: pytest.Pytester, postgres_url: str) -> None:
    """The ini option names a server URL with a password (the test server trusts any): failing helpers, a
    broken gold, an unreachable server and a Connection, with -vv and --showlocals, never print it."""
    from sqlalchemy.engine import make_url

    url = make_url(postgres_url).set(password="Pw-5ecret-42")
    shown = url.render_as_string(hide_password=False)
    unreachable = url.set(port=1).render_as_string(hide_password=False)
    (pytester.path / "fleet.sql").write_text(PG_FLEET_SQL, encoding="utf-8")
    pytester.makeini(f"[pytest]\nsqleval_database = {shown}\nsqleval_database_setup = fleet.sql\n")
    (pytester.path / "conftest.py").write_text(f"UNREACHABLE = {unreachable!r}\n", encoding="utf-8")
    result = _run(pytester, """
        import pytest
        import sqlalchemy as sa
        from conftest import UNREACHABLE
        from pytest_sqleval import assert_execution_match, assert_soft_f1

        def test_miss(sqleval_engine):
            assert_execution_match("SELECT origin FROM flights", "SELECT origin FROM flights WHERE seats > 200")

        def test_soft(sqleval_engine):
            assert_soft_f1("SELECT airline, origin FROM flights", "SELECT origin FROM flights", at_least=0.9)

        def test_broken_gold(sqleval_engine):
            assert_execution_match("SELECT orign FROM flights", "SELECT origin FROM flights")

        def test_connection(sqleval_engine):
            with sqleval_engine.connect() as conn:
                assert_execution_match("SELECT origin FROM flights", "SELECT origin FROM flights", engine=conn)
                assert_execution_match("SELECT origin FROM flights", "SELECT airline FROM flights", engine=conn)

        def test_unreachable():
            assert_execution_match("SELECT 1", "SELECT 1", engine=sa.create_engine(UNREACHABLE))
    """, "-vv", "--showlocals")
    result.assert_outcomes(failed=5)
    out = result.stdout.str() + result.stderr.str()
    assert "Pw-5ecret-42" not in out
    result.stdout.fnmatch_lines([
        "*_ test_miss _*", "E*row_count: gold has 3 rows, the prediction 2",
        "*_ test_soft _*", "E*soft_f1 0.6667 < 0.9 (required at least 0.9)",
        "*_ test_broken_gold _*", "E*GoldError: the gold query failed on postgresql+psycopg://postgres:***@*",
        "*_ test_connection _*", "E*values: 3 gold rows are missing from the prediction*",
        "*_ test_unreachable _*", "E*cannot connect to PostgreSQL at postgresql+psycopg://postgres:***@127.0.0.1:1/*",
    ])


# --------------------------------------------------------------------------- DuckDB
def test_duckdb_engine_connection_and_a_locked_file(fleet, duckdb_available):
    """On DuckDB: the options the helpers document (float tolerance, positional columns, bird), a Connection of
    the factory's read-only engine, and a file that an engine of the user's own holds read-write: a message
    that says why and what to do, not DuckDB's bare lock error."""
    import duckdb

    for name in ("fleet.duckdb", "mine.duckdb"):
        conn = duckdb.connect(str(fleet.path / name))
        conn.execute(FLEET_SQL)
        conn.close()
    result = _run(fleet, """
        import pytest
        import sqlalchemy as sa
        from pytest_sqleval import assert_execution_match, assert_soft_f1, check_execution_match

        def test_options(sqleval_engine_factory):
            engine = sqleval_engine_factory("fleet.duckdb")
            with engine.connect() as conn:
                gold = "SELECT airline, sum(load) FROM flights GROUP BY airline"
                pred = "SELECT airline, sum(load) + 0.0000001 FROM flights GROUP BY airline"
                assert not check_execution_match(gold, pred, engine=conn)
                assert_execution_match(gold, pred, engine=conn, float_decimals=4)
                assert not check_execution_match("SELECT code, country FROM airlines",
                                                 "SELECT country, code FROM airlines", engine=conn, profile="bird")
                assert_execution_match("SELECT origin FROM flights", "SELECT DISTINCT origin FROM flights",
                                       engine=conn, profile="bird")
                assert_soft_f1("SELECT seats FROM flights", "SELECT DISTINCT seats FROM flights", engine=conn,
                               at_least=1.0)  # membership both ways: a repeated value adds nothing

        def test_locked():
            mine = sa.create_engine("duckdb:///mine.duckdb")
            with mine.connect() as conn:
                assert conn.exec_driver_sql("SELECT count(*) FROM flights").scalar() == 5
                with pytest.raises(Exception) as info:
                    assert_execution_match("SELECT 1", "SELECT 1", engine=mine)
            assert "engine.dispose()" in str(info.value) and "sqleval_engine_factory" in str(info.value)
    """)
    result.assert_outcomes(passed=2)


def test_a_password_variable_in_the_ini_database_is_encoded_and_never_shown(pytester, monkeypatch):
    """`${VAR}` in the marker's or the ini's URL expands as in a suite's `database:` (URL-encoded: a password
    with @ / : still reaches the right host) and never shows, not even in part; an unset one is a clear error,
    not a literal '${VAR}' password sent to the server."""
    require_module("psycopg", "psycopg is not installed: pip install 'pytest-sqleval[postgres]'")
    pytester.makeini("[pytest]\nsqleval_database = postgresql+psycopg://app:${QA_DB_SECRET}@127.0.0.1:1/fleet\n")
    pytester.makepyfile(test_fleet="""
        import pytest
        from pytest_sqleval import assert_execution_match

        def test_ini(sqleval_query):
            sqleval_query("SELECT 1")

        @pytest.mark.sqleval_database("postgresql+psycopg://app:${QA_DB_SECRET}@127.0.0.1:1/other")
        def test_marker():
            assert_execution_match("SELECT 1", "SELECT 1")
    """)
    monkeypatch.setenv("QA_DB_SECRET", "Se@cr3t/pa:ss")
    result = pytester.runpytest("-p", "no:cacheprovider", "-vv")
    result.assert_outcomes(errors=1, failed=1)
    out = result.stdout.str()
    assert "Se@cr3t" not in out and "cr3t" not in out and "pa:ss" not in out and "pa%3Ass" not in out
    result.stdout.fnmatch_lines(["*cannot connect to PostgreSQL at postgresql+psycopg://app:***@127.0.0.1:1/fleet*",
                                 "*cannot connect to PostgreSQL at postgresql+psycopg://app:***@127.0.0.1:1/other*"])
    monkeypatch.delenv("QA_DB_SECRET")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1, failed=1)
    result.stdout.fnmatch_lines(["*ini option sqleval_database (*): the database URL uses ${QA_DB_SECRET}, which is "
                                 "not set; set it or write ${QA_DB_SECRET:-default}*"])


def test_a_relative_database_url_of_your_own_engine_follows_the_tests_cwd(pytester, duckdb_available):
    """`create_engine("duckdb:///data.duckdb")` means the file in the current directory when the test runs (a test
    that chdirs, as monkeypatch.chdir does); the query process, started elsewhere, must open that file, not the
    one of its own directory or of an earlier test."""
    import duckdb

    for folder, value in (("one", 1), ("two", 2)):
        (pytester.path / folder).mkdir()
        conn = duckdb.connect(str(pytester.path / folder / "data.duckdb"))
        conn.execute(f"CREATE TABLE t (v INTEGER); INSERT INTO t VALUES ({value})")
        conn.close()
        make_sqlite(pytester.path / folder / "data.sqlite", f"CREATE TABLE t (v INTEGER); INSERT INTO t VALUES ({value});")
    pytester.makeini("[pytest]\n")
    result = _run(pytester, """
        import pytest
        import sqlalchemy as sa
        from pytest_sqleval import assert_execution_match

        @pytest.mark.parametrize("folder, value", [("one", 1), ("two", 2)])
        @pytest.mark.parametrize("scheme, name", [("duckdb", "data.duckdb"), ("sqlite", "data.sqlite")])
        def test_it(monkeypatch, request, folder, value, scheme, name):
            monkeypatch.chdir(request.config.rootpath / folder)
            engine = sa.create_engine(f"{scheme}:///{name}")
            assert_execution_match({"columns": ["v"], "rows": [[value]]}, "SELECT v FROM t", engine=engine)
    """)
    result.assert_outcomes(passed=4)


def test_an_unreachable_schema_engine_is_a_message_without_the_password(pytester):
    """assert_exact_match/assert_policy read the schema in the pytest process: a server that cannot be reached is
    a DatabaseError naming the masked URL, not a driver traceback whose locals (--showlocals) hold the password."""
    require_module("psycopg", "psycopg is not installed: pip install 'pytest-sqleval[postgres]'")
    pytester.makeini("[pytest]\n")
    pytester.makeconftest("""
        import pytest
        import sqlalchemy as sa

        @pytest.fixture
        def down():
            return sa.create_engine("postgresql+psycopg://app:Unseen-Pw-7@127.0.0.1:1/fleet")
    """)
    result = _run(pytester, """
        from pytest_sqleval import assert_exact_match, assert_policy

        def test_exact(down):
            assert_exact_match("SELECT 1", "SELECT 1", schema=down)

        def test_policy(down):
            assert_policy("SELECT 1", tables=["flights"], engine=down)
    """, "--showlocals", "--tb=long")
    result.assert_outcomes(failed=2)
    assert "Unseen-Pw-7" not in result.stdout.str()
    message = ("DatabaseError: cannot connect to the postgresql database at "
               "postgresql+psycopg://app:***@127.0.0.1:1/fleet: (psycopg.OperationalError) connection failed")
    # the E lines of the two failures (under CI=true pytest's short summary repeats the message untruncated)
    assert sum(1 for line in result.stdout.lines if line.startswith("E") and message in line) == 2


def test_a_gold_that_hits_a_limit_is_not_called_broken(fleet):
    """A gold over the row cap (or past the timeout) is not a broken gold: the message names the limit to raise."""
    result = _run(fleet, """
        import pytest
        from pytest_sqleval import assert_execution_match

        @pytest.mark.sqleval_database("fleet.sqlite")
        def test_rows(sqleval_engine):
            assert_execution_match("SELECT * FROM flights", "SELECT * FROM flights", max_rows=2)
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E*GoldError: the gold query failed on * (row_limit)*",
                                 "E*the test's gold query hit a limit, it is not broken: raise `max_rows=`*"])
    assert "fix the gold" not in result.stdout.str()
