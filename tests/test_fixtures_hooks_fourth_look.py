"""Fourth QA look at issue 8's fixtures and extension hooks and issue 4's engine fixtures, as a user writes a
conftest.py: ``sqleval_engine`` overridden with an engine of the user's own (SQLite file, DuckDB file, the real
PostgreSQL server, a SQLAlchemy URL), the hooks under their documented names and arguments, hooks that raise or
return odd values, metrics of one's own (clashing names, non-float and NaN scores), and the typed record in the
JSON report; each run serially and under ``-n 2`` with identical aggregates."""

from __future__ import annotations

import os
import sqlite3
import textwrap
import uuid

import pytest

from conftest import require_module
from test_hooks_third_look import output, run

WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])

ROWS = {"shop.sqlite": 3, "other": 5}

SUITE = """\
suite: s
database: shop.sqlite
cases:
  - id: cnt
    gold: SELECT count(*) FROM t
    predicted: SELECT 5
  - id: names
    gold: SELECT name FROM t ORDER BY id
    predicted: SELECT name FROM t ORDER BY id
  - id: bad
    gold: SELECT max(id) FROM t
    predicted: SELEC 1
"""


def fill_sqlite(path, n: int) -> None:
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE t(id INTEGER, name TEXT);"
                       + "".join(f"INSERT INTO t VALUES ({i}, 'n{i}');" for i in range(n)))
    conn.commit()
    conn.close()


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    fill_sqlite(pytester.path / "shop.sqlite", ROWS["shop.sqlite"])
    pytester.path.joinpath("s.sqleval.yaml").write_text(SUITE, encoding="utf-8")
    return pytester


def verdicts(report: dict) -> dict[str, str]:
    return {case["id"]: case["outcome"] for case in report["cases"]}


def conftest(pytester: pytest.Pytester, text: str) -> None:
    pytester.makeconftest(textwrap.dedent(text))


# --------------------------------------------------------------------------- sqleval_engine overridden
OWN_ENGINE = """
    import pytest
    import sqlalchemy

    @pytest.fixture
    def sqleval_engine(sqleval_case):
        return sqlalchemy.create_engine({url!r})
"""


def other_database(pytester: pytest.Pytester, kind: str) -> str:
    """A database holding 5 rows (the suite's file holds 3), as a URL for sqlalchemy.create_engine."""
    if kind == "sqlite":
        fill_sqlite(pytester.path / "other.sqlite", ROWS["other"])
        return "sqlite:///other.sqlite"
    if kind == "duckdb":
        require_module("duckdb_engine")
        import duckdb

        conn = duckdb.connect(str(pytester.path / "other.duckdb"))
        conn.execute("CREATE TABLE t(id INTEGER, name TEXT)")
        conn.execute("INSERT INTO t SELECT i, 'n' || i FROM range(5) r(i)")
        conn.close()
        return "duckdb:///other.duckdb"
    url = os.environ.get("SQLEVAL_TEST_POSTGRES_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("SQLEVAL_TEST_POSTGRES_URL is not set (under CI the PostgreSQL tests must run)")
        pytest.skip("SQLEVAL_TEST_POSTGRES_URL is not set")
    import sqlalchemy

    name = f"fourth_{uuid.uuid4().hex[:10]}"
    admin = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    admin.dispose()
    own = sqlalchemy.make_url(url).set(database=name)
    engine = sqlalchemy.create_engine(own)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t(id INTEGER, name TEXT)")
        conn.exec_driver_sql("INSERT INTO t SELECT i, 'n' || i FROM generate_series(0, 4) i")
    engine.dispose()
    return own.render_as_string(hide_password=False)


@pytest.mark.parametrize("kind", ["sqlite", "duckdb", "postgresql"])
def test_an_engine_of_the_users_own_in_conftest_is_the_one_evaluated_serial_equals_xdist(suite, kind):
    """`sqleval_engine` returning ``sqlalchemy.create_engine(url)`` of the user's own (a file of 5 rows where the
    suite's has 3): the golds and predictions run there, on every engine, serially and under -n 2 alike. A
    read-write DuckDB engine the user never connected must not be locked by the plugin's own schema reading (it
    was: every case an error "Could not set lock on file")."""
    conftest(suite, OWN_ENGINE.format(url=other_database(suite, kind)))
    reports = []
    for workers in ([], ["-n", "2"]):
        result, report = run(suite, *workers)
        assert report is not None, output(result)
        assert verdicts(report) == {"cnt": "passed", "names": "passed", "bad": "missed"}, output(result)
        assert result.ret == 0, output(result)
        reports.append(report["suites"][0]["metrics"])
    assert reports[0] == reports[1]
    assert reports[0]["execution_accuracy"] == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- metrics of one's own
@WORKERS
def test_a_rate_metric_of_fractional_values_has_an_interval_around_its_value(suite, workers):
    """A rate's case value may be a number from 0 to 1 (README); three cases of 0.1 are a rate of 0.1, and its
    Wilson interval is that of 0.3 successes in 3, around 0.1 (it was [0.4385, 1]: every non-zero value counted
    as a success, an interval that excluded the rate it belongs to)."""
    conftest(suite, """
        def pytest_sqleval_register_metrics(registry):
            registry.register("tenth", kind="rate", population="scored")

        def pytest_sqleval_score_case(record):
            record["tenth"] = 0.1
    """)
    from pytest_sqleval.stats import wilson

    result, report = run(suite, *workers)
    assert report is not None, output(result)
    aggregates = report["suites"][0]
    assert aggregates["metrics"]["tenth"] == pytest.approx(0.1)
    low, high = aggregates["intervals"]["tenth"]
    assert low <= 0.1 <= high
    assert [low, high] == pytest.approx(list(wilson(0.3, 3)))
    assert report["overall"]["intervals"]["tenth"] == [low, high]


# --------------------------------------------------------------------------- hooks that return what they should set
@WORKERS
def test_a_score_case_hook_that_returns_its_scores_instead_of_setting_them_is_named_not_ignored(suite, workers):
    """``return {"m": 1.0}`` from pytest_sqleval_score_case sets nothing (the hook fills ``record``): the metric
    silently vanished from every report. Now each case is an error naming the hook, its file and the fix;
    returning the record itself (after filling it) is fine."""
    conftest(suite, """
        def pytest_sqleval_register_metrics(registry):
            registry.register("m", kind="mean", population="scored")

        def pytest_sqleval_score_case(record):
            return {"m": 1.0}
    """)
    result, report = run(suite, *workers)
    assert report is not None, output(result)
    assert set(verdicts(report).values()) == {"error"}
    text = output(result)
    assert "pytest_sqleval_score_case" in text and "conftest.py" in text
    assert "returned {'m': 1.0}" in text and "record[" in text
    assert result.ret != 0


def test_a_score_case_hook_that_fills_the_record_and_returns_it_is_fine(suite):
    conftest(suite, """
        def pytest_sqleval_register_metrics(registry):
            registry.register("m", kind="mean", population="scored")

        def pytest_sqleval_score_case(record):
            record["m"] = 0.25
            return record
    """)
    result, report = run(suite)
    assert report is not None, output(result)
    assert verdicts(report) == {"cnt": "missed", "names": "passed", "bad": "missed"}
    assert report["suites"][0]["metrics"]["m"] == 0.25


@WORKERS
def test_an_update_json_hook_that_returns_a_new_report_fails_the_run_naming_it(suite, workers):
    """``return {**report, "mine": 1}`` changed nothing (the report is changed in place) and the run passed
    with a JSON file lacking "mine". Now the run fails with a line naming the hook and saying to change
    ``report`` in place; returning ``report`` itself after changing it is fine."""
    conftest(suite, """
        def pytest_sqleval_update_json(report):
            return {**report, "mine": 1}
    """)
    result, report = run(suite, *workers)
    text = output(result)
    assert result.ret != 0, text
    assert report is None
    assert "pytest_sqleval_update_json" in text and "conftest.py" in text and "in place" in text


def test_an_update_json_hook_that_changes_the_report_and_returns_it_is_fine(suite):
    conftest(suite, """
        def pytest_sqleval_update_json(report):
            report["mine"] = {"cases": len(report["cases"])}
            return report
    """)
    result, report = run(suite)
    assert result.ret == 0, output(result)
    assert report["mine"] == {"cases": 3}


@WORKERS
def test_an_engine_fixture_yielding_a_connection_stands_for_its_engine(suite, workers):
    """A conftest yielding ``engine.connect()`` (a Connection, which the assertion helpers take for its engine):
    every case was an internal error ('Connection' object has no attribute 'url'); now it is evaluated on that
    connection's database."""
    fill_sqlite(suite.path / "other.sqlite", ROWS["other"])
    conftest(suite, """
        import pytest
        import sqlalchemy

        @pytest.fixture
        def sqleval_engine():
            engine = sqlalchemy.create_engine("sqlite:///other.sqlite")
            with engine.connect() as connection:
                yield connection
            engine.dispose()
    """)
    result, report = run(suite, *workers)
    assert report is not None, output(result)
    assert verdicts(report) == {"cnt": "passed", "names": "passed", "bad": "missed"}, output(result)
    assert "internal error" not in output(result)


@pytest.mark.parametrize("returned, shown", [('"sqlite:///other.sqlite"', "'sqlite:///other.sqlite'"),
                                             ("42", "42")])
def test_an_engine_fixture_returning_no_engine_is_named_with_the_fix_not_an_internal_error(suite, returned, shown):
    conftest(suite, f"""
        import pytest

        @pytest.fixture
        def sqleval_engine():
            return {returned}
    """)
    result, report = run(suite)
    text = output(result)
    assert set(verdicts(report).values()) == {"error"}, text
    assert "internal error" not in text
    assert f"the sqleval_engine fixture returned {shown}" in text
    assert "sqleval_engine_factory(" in text and "create_engine(" in text
    assert "s.sqleval.yaml:4: case cnt" in text


def test_a_gold_failing_on_the_fixtures_engine_names_that_engine_not_the_suites_database(suite):
    """An empty in-memory engine of the user's own: the gold fails there ('no such table: t'), and the message
    named the suite's shop.sqlite, which has the table."""
    conftest(suite, """
        import pytest
        import sqlalchemy

        @pytest.fixture(scope="session")
        def sqleval_engine():
            return sqlalchemy.create_engine("sqlite://")
    """)
    result, report = run(suite)
    text = output(result)
    assert set(verdicts(report).values()) == {"error"}, text
    assert "no such table: t" in text
    assert "the gold query failed on sqlite:// (from the sqleval_engine fixture)" in text
    assert "failed on sqlite:///" not in text


# --------------------------------------------------------------------------- sqleval_engine_factory in plain tests
@WORKERS
def test_the_engine_factory_expands_a_variable_holding_the_whole_url_or_part_of_a_path(suite, workers, monkeypatch):
    """As a suite's ``database: ${DB_URL}`` works, so does ``sqleval_engine_factory("${DB_URL}")`` (it was taken
    for a file named '${DB_URL}': "SQLite database not found"), and ``"${DATA}/other.sqlite"``; an unset variable
    is named."""
    fill_sqlite(suite.path / "other.sqlite", ROWS["other"])
    suite.makepyfile(test_plain="""
        import pytest

        def count(engine):
            with engine.connect() as conn:
                return conn.exec_driver_sql("SELECT count(*) FROM t").scalar()

        def test_whole_url(sqleval_engine_factory):
            assert count(sqleval_engine_factory("${FOURTH_DB_URL}")) == 5

        def test_path(sqleval_engine_factory):
            assert count(sqleval_engine_factory("${FOURTH_DATA}/other.sqlite")) == 5

        def test_unset(sqleval_engine_factory):
            with pytest.raises(pytest.UsageError, match="FOURTH_UNSET"):
                sqleval_engine_factory("${FOURTH_UNSET}/other.sqlite")
    """)
    monkeypatch.setenv("FOURTH_DB_URL", f"sqlite:///{suite.path / 'other.sqlite'}")
    monkeypatch.setenv("FOURTH_DATA", str(suite.path))
    monkeypatch.delenv("FOURTH_UNSET", raising=False)
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "test_plain.py", *workers)
    result.assert_outcomes(passed=3)


# --------------------------------------------------------------------------- every hook, every documented argument
EVERY_HOOK = """
    import math
    from dataclasses import replace
    from pathlib import Path

    from pytest_sqleval.comparison import ComparisonOptions

    def pytest_sqleval_register_metrics(registry, config):
        assert config.getoption("sqleval")
        registry.register("rows_back", kind="mean", population="executed", direction="higher", label="rows back")
        registry.register("long_question", kind="count", population="scored")

    def pytest_sqleval_execution_profiles(profiles, config):
        assert isinstance(profiles["sqleval"], ComparisonOptions)
        profiles["mine"] = replace(profiles["sqleval"], profile="mine")

    def pytest_sqleval_engine_backends(backends, config):
        assert backends is not None

    def pytest_sqleval_score_case(case, suite, prediction, record, context, config):
        result = context.prediction_result
        record["rows_back"] = None if result is None else min(1.0, len(result.rows) / 3)
        record["long_question"] = case.id == "names"
        assert suite.name == "s" and (prediction is None or isinstance(prediction, str))

    def pytest_sqleval_case_result(record, item, config):
        out = Path(str(config.rootpath)) / "streamed"
        out.mkdir(exist_ok=True)
        (out / record["id"]).write_text(record["outcome"] + " " + item.nodeid)
        record["outcome"] = "passed"  # a copy: changes nothing

    def pytest_sqleval_terminal_section(terminalreporter, summary, records, config):
        terminalreporter.write_line(
            f"MINE {summary.name}: {len(records)} records, rows_back={summary.aggregates['metrics']['rows_back']:.4f}")

    def pytest_sqleval_update_json(config, report):
        report["mine"] = {"ids": sorted(case["id"] for case in report["cases"]), "nan": math.nan}
"""


def test_every_hook_with_every_documented_argument_gives_identical_reports_serial_and_xdist(suite):
    suite.path.joinpath("s.sqleval.yaml").write_text(SUITE.replace("suite: s\n", "suite: s\nexecution: mine\n"),
                                                     encoding="utf-8")
    conftest(suite, EVERY_HOOK)
    reports = []
    for workers in ([], ["-n", "2"]):
        result, report = run(suite, *workers)
        text = output(result)
        assert result.ret == 0, text
        assert "MINE s: 3 records, rows_back=0.6667" in text  # cnt: 1 row of 3, names: 3 of 3, bad: did not run
        streamed = {p.name: p.read_text() for p in (suite.path / "streamed").iterdir()}
        assert streamed == {"cnt": "missed s.sqleval.yaml::cnt", "names": "passed s.sqleval.yaml::names",
                            "bad": "missed s.sqleval.yaml::bad"}
        assert verdicts(report) == {"cnt": "missed", "names": "passed", "bad": "missed"}
        assert report["mine"] == {"ids": ["bad", "cnt", "names"], "nan": "nan"}
        cases = {case["id"]: case for case in report["cases"]}
        assert cases["cnt"]["rows_back"] == pytest.approx(1 / 3) and cases["bad"]["rows_back"] is None
        assert cases["names"]["long_question"] is True
        metrics = report["suites"][0]["metrics"]
        assert metrics["rows_back"] == pytest.approx(2 / 3) and metrics["long_question"] == 1
        assert report["suites"][0]["execution"]["profile"] == "mine" and "execution profile mine" in text
        reports.append({key: report["suites"][0][key] for key in ("metrics", "intervals", "by_gold_sql")})
        for path in (suite.path / "streamed").iterdir():
            path.unlink()
    assert reports[0] == reports[1]


def test_a_threshold_on_a_metric_registered_not_gateable_says_so_not_unknown(suite):
    """``registry.register("m", ..., gateable=False)`` then ``--sqleval-threshold m=0.5``: the message said only
    "unknown metric 'm'", of a metric the conftest had just registered; now it says why."""
    conftest(suite, """
        def pytest_sqleval_register_metrics(registry):
            registry.register("m", kind="mean", population="scored", gateable=False)

        def pytest_sqleval_score_case(record):
            record["m"] = 1
    """)
    result, _ = run(suite, "--sqleval-threshold", "m=0.5")
    text = output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "'m' is registered with gateable=False" in text


def test_the_baseline_comparison_of_a_fractional_rate_has_an_interval_around_its_delta():
    """A rate metric of case values 0.5 now and 0.3 before (a rate's value may be a number from 0 to 1): the delta
    is 0.2, and McNemar, which counts only 0/1 flips, gave ci [0, 0] and p = 1 (no discordant pair). A rate
    whose values are not all 0/1 is compared as a mean is (sign flip, paired bootstrap); 0/1 rates keep McNemar."""
    from pytest_sqleval.baseline import paired_statistics

    stats = paired_statistics("rate", [(0.5, 0.3)] * 4)
    assert stats["delta"] == pytest.approx(0.2)
    low, high = stats["ci"]
    assert low <= 0.2 <= high and stats["test"] == "sign_flip"
    binary = paired_statistics("rate", [(1.0, 0.0), (1.0, 1.0), (0.0, 0.0), (True, False)])
    assert binary["test"] == "mcnemar_exact" and binary["discordant"] == {"better": 2, "worse": 0}


@pytest.mark.parametrize("name", ["execution_accuracy", "soft_f1", "pass_rate"])
def test_a_metric_named_like_a_built_in_is_refused_saying_it_is_the_built_in(suite, name):
    """The user registered it once: "registered twice" alone left them looking for a second registration."""
    conftest(suite, f"""
        def pytest_sqleval_register_metrics(registry):
            registry.register({name!r}, kind="mean")
    """)
    result, report = run(suite)
    text = output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR and report is None, text
    assert f"metric {name!r} is registered twice" in text and "built-in metric" in text and "conftest.py" in text
