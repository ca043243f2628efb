"""The extension points (issue 8) as a user writes them from the README alone: a mean metric that is not a share
(a length in characters), a profile made with ``ComparisonOptions(...)``, two plugins taking one metric name, a
metric named like a breakdown, a backend whose engine connects lazily."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import make_sqlite
from pytest_sqleval.deploygate import GateOptionError, parse_baseline_rule
from pytest_sqleval.registry import MetricError, MetricRegistry, builtin_registry, use_registry
from pytest_sqleval.thresholds import ThresholdError, make_threshold

SUITE = """
suite: shop
database: shop.sqlite
cases:
  - id: short
    gold: SELECT count(*) FROM shops
    predicted: SELECT count(*) FROM shops
  - id: long
    gold: SELECT name FROM shops ORDER BY name
    predicted: SELECT s.name FROM shops AS s WHERE s.id > 0 ORDER BY s.name
"""

# a mean in characters (26 and 60: 43 on average), lower is better
LENGTH = """
def pytest_sqleval_register_metrics(registry):
    registry.register("pred_len", kind="mean", direction="lower", label="prediction length")

def pytest_sqleval_score_case(prediction, record):
    record["pred_len"] = float(len(prediction or ""))
"""


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.path.joinpath("shop.sqleval.yaml").write_text(SUITE, encoding="utf-8")
    return pytester


@pytest.fixture
def user_registry():
    registry = builtin_registry()
    registry.register("pred_len", kind="mean", direction="lower")
    registry.register("short", kind="rate")
    registry.register("stars", kind="mean", maximum=5)
    use_registry(registry)
    yield registry
    use_registry(None)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_user_mean_beyond_1_is_gated_on_the_command_line_and_in_a_suite(shop, workers):
    shop.makeconftest(LENGTH)
    shop.path.joinpath("shop.sqleval.yaml").write_text(
        SUITE.replace("cases:", "thresholds:\n  by_gold_sql.pred_len: 50\ncases:"), encoding="utf-8")
    failing = shop.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-threshold", "pred_len=40",
                                        "--sqleval-json", "r.json", *workers)
    assert failing.ret == 1, failing.stdout.str() + failing.stderr.str()
    failing.stdout.fnmatch_lines(["*FAIL pred_len 43 > 40*"])
    failing.stdout.fnmatch_lines(["*PASS by_gold_sql.pred_len 43 <= 50*"])
    passing = shop.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-threshold", "pred_len=45",
                                        *workers)
    assert passing.ret == 0, passing.stdout.str() + passing.stderr.str()
    # `sqleval gate` reads the metric back from the report and takes the same bound
    gate = subprocess.run([sys.executable, "-m", "pytest_sqleval.cli", "gate", str(shop.path / "r.json"),
                           "--threshold", "pred_len=45"], capture_output=True, text=True)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "PASS pred_len 43 <= 45" in gate.stdout


def test_a_user_mean_takes_any_finite_threshold_a_rate_and_a_builtin_score_keep_their_range(user_registry):
    assert make_threshold("pred_len", 30, "cli").value == 30.0
    assert make_threshold("pred_len", -2.5, "cli").value == -2.5  # a mean of differences may be negative
    for metric, value in (("short", 2), ("soft_f1", 1.5), ("execution_accuracy", -0.1)):
        with pytest.raises(ThresholdError, match="between 0 and 1"):
            make_threshold(metric, value, "cli")
    with pytest.raises(ThresholdError, match="finite"):
        make_threshold("pred_len", float("inf"), "cli")
    assert make_threshold("stars", 4.5, "cli").value == 4.5
    with pytest.raises(ThresholdError, match="between 0 and 5;"):
        make_threshold("stars", 6, "cli")


def test_a_user_means_baseline_tolerance_is_in_its_own_unit(user_registry):
    assert parse_baseline_rule("pred_len=5").tolerance == 5.0
    assert parse_baseline_rule("overall:pred_len=12.5").tolerance == 12.5
    for text in ("pred_len=-1", "pred_len=inf", "pred_len=nan"):
        with pytest.raises(GateOptionError, match="of 0 or more"):
            parse_baseline_rule(text)
    for text in ("short=2", "soft_f1=1.5"):
        with pytest.raises(GateOptionError, match="between 0 and 1,"):
            parse_baseline_rule(text)
    assert parse_baseline_rule("stars=2").tolerance == 2.0  # a mean registered with maximum=5
    with pytest.raises(GateOptionError, match="between 0 and 5,"):
        parse_baseline_rule("stars=6")


def test_a_metric_maximum_is_a_positive_number_and_a_rates_is_1():
    registry = MetricRegistry()
    assert registry.register("r", kind="rate").maximum == 1.0
    assert registry.register("m", kind="mean").maximum is None
    assert registry.register("bounded", kind="mean", maximum=5).maximum == 5
    with pytest.raises(MetricError, match="maximum must be a positive number"):
        registry.register("bad", kind="mean", maximum="5")


@pytest.mark.parametrize("name", ["by_tag", "by_difficulty", "by_gold_sql"])
def test_a_metric_named_like_a_breakdown_is_refused_it_could_never_be_gated(name):
    with pytest.raises(MetricError, match=f"metric '{name}': a threshold on '{name}' names the suite's breakdown"):
        MetricRegistry().register(name, kind="rate")


def test_a_user_metric_over_interactions_is_refused_nothing_would_ever_compute_it():
    with pytest.raises(MetricError, match="scope='interaction' is for the built-in SParC metrics"):
        builtin_registry().register("my_interactions", kind="rate", scope="interaction")
    assert builtin_registry()["interaction_match"].scope == "interaction"  # the built-ins keep theirs


def test_two_plugins_registering_one_metric_name_name_both_places(shop):
    shop.makepyfile(plug_a="""
        def pytest_sqleval_register_metrics(registry):
            registry.register("latency", kind="mean", direction="lower")
    """)
    shop.makeconftest("""
        def pytest_sqleval_register_metrics(registry):
            registry.register("latency", kind="mean")
    """)
    shop.syspathinsert()
    for workers in ([], ["-n", "2"]):
        result = shop.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "-p", "plug_a", *workers)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        err = result.stderr.str()
        assert "metric 'latency' is registered twice (first by " in err, err
        assert "conftest.py:2" in err and "plug_a.py:2" in err, err


def test_a_profile_made_with_comparison_options_is_reported_under_the_name_the_suite_uses(shop):
    shop.makeconftest("""
        from pytest_sqleval.comparison import ComparisonOptions

        def pytest_sqleval_execution_profiles(profiles):
            profiles["loose"] = ComparisonOptions(duplicates="set", float_decimals=1)
    """)
    shop.path.joinpath("shop.sqleval.yaml").write_text(SUITE.replace("cases:", "execution: loose\ncases:"),
                                                       encoding="utf-8")
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*execution profile loose |*"])
    execution = json.loads(shop.path.joinpath("r.json").read_text())["suites"][0]["execution"]
    assert (execution["profile"], execution["duplicates"], execution["float_decimals"]) == ("loose", "set", 1)


def test_a_user_backend_whose_database_cannot_be_opened_is_an_error_naming_it_not_an_internal_error(pytester):
    pytester.makeconftest(textwrap.dedent("""
        import sqlite3
        from pytest_sqleval.execution.backends.base import Backend, Dialect

        class ShadowBackend(Backend):
            name = "shadow"
            dialect = Dialect("sqlite", "sqlite")

            def owns(self, url):
                return url.drivername == "shadow+sqlite"

            def open(self, url, *, connect_timeout=10.0):
                from sqlalchemy import create_engine
                from sqlalchemy.engine import make_url
                path = make_url(url).database
                return create_engine("sqlite://", creator=lambda: sqlite3.connect(
                    f"file:{path}?mode=ro", uri=True, check_same_thread=False))

        def pytest_sqleval_engine_backends(backends):
            backends.register(ShadowBackend())
    """))
    pytester.makefile(".sqleval.yaml", shop='database: "shadow+sqlite:///no/such/dir/shop.sqlite"\n'
                                            'cases:\n  - {id: one, gold: "SELECT 1", predicted: "SELECT 1"}\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert result.ret == 1
    assert "internal error" not in out, out
    result.stdout.fnmatch_lines(["*case one: cannot connect to the shadow backend's database at "
                                 "shadow+sqlite:///no/such/dir/shop.sqlite: *unable to open database file*"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_miss_of_a_pass_if_naming_a_user_metric_shows_that_metrics_value(shop, workers):
    shop.makeconftest(LENGTH)
    shop.path.joinpath("shop.sqleval.yaml").write_text(
        SUITE.replace("cases:", "pass_if: execution_match and pred_len < 40\ncases:"), encoding="utf-8")
    result = shop.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-markdown", "r.md", *workers)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*long: pass_if does not hold (soft_f1 1.0, exact_match False, pred_len 60.0)"])
    assert "pass_if does not hold (soft_f1 1.0000, exact_match no, pred_len 60.0000)" in \
        shop.path.joinpath("r.md").read_text()


def test_a_verdict_a_user_metric_leaves_is_read_by_pass_if_as_its_passed_value(shop):
    """A metric's value may be a ``{"passed": ...}`` verdict (README): the aggregates read its ``passed``, and so
    must ``pass_if`` (a dict is truthy: a failed verdict let the case pass)."""
    from pytest_sqleval.passrule import parse_pass_rule

    registry = builtin_registry()
    registry.register("my_check", kind="rate")
    registry.register("my_score", kind="mean")
    use_registry(registry)
    try:
        rule = parse_pass_rule("execution_match and my_check")
        assert not rule.holds({"execution_match": True, "my_check": {"passed": False, "why": "x"}})
        assert rule.holds({"execution_match": True, "my_check": {"passed": True}})
        assert parse_pass_rule("my_score >= 0.5").holds({"my_score": {"passed": 0.75}})
    finally:
        use_registry(None)
    shop.makeconftest("""
        def pytest_sqleval_register_metrics(registry):
            registry.register("my_check", kind="rate")

        def pytest_sqleval_score_case(record, case):
            record["my_check"] = {"passed": case.id != "short", "why": "short is refused"}
    """)
    shop.path.joinpath("shop.sqleval.yaml").write_text(
        SUITE.replace("cases:", "pass_if: execution_match and my_check\ncases:"), encoding="utf-8")
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json")
    outcomes = {c["id"]: c["outcome"] for c in json.loads(shop.path.joinpath("r.json").read_text())["cases"]}
    assert outcomes == {"short": "missed", "long": "passed"}, result.stdout.str()


def test_a_user_backend_whose_run_returns_rows_or_lets_a_driver_error_through_is_named_not_an_internal_error(
        pytester, tmp_path):
    db = make_sqlite(tmp_path / "shop.sqlite")
    pytester.makeconftest(textwrap.dedent("""
        import sqlite3
        from pytest_sqleval.execution.backends.base import Backend, Dialect

        class Raw(Backend):
            dialect = Dialect("sqlite", "sqlite")

            def open(self, url, *, connect_timeout=10.0):
                from sqlalchemy import create_engine
                from sqlalchemy.engine import make_url
                path = make_url(url).database
                return create_engine("sqlite://", creator=lambda: sqlite3.connect(path, check_same_thread=False))

        class Rows(Raw):
            name = "rows"

            def owns(self, url):
                return url.drivername == "rows+sqlite"

            def run(self, conn, sql, limits):
                return conn.execute(sql).fetchall()  # the rows, not a QueryResult

        class Unclassified(Raw):
            name = "unclassified"

            def owns(self, url):
                return url.drivername == "unclassified+sqlite"

            def run(self, conn, sql, limits):
                from pytest_sqleval.results import QueryResult
                cursor = conn.execute(sql)  # sqlite3.OperationalError goes through
                return QueryResult(columns=tuple(d[0] for d in cursor.description), rows=cursor.fetchall())

        def pytest_sqleval_engine_backends(backends):
            backends.register(Rows())
            backends.register(Unclassified())
    """))
    pytester.makefile(".sqleval.yaml", rows=f'database: "rows+sqlite:///{db}"\n'
                      'cases:\n  - {id: one, gold: "SELECT 1", predicted: "SELECT 1"}\n',
                      unclassified=f'database: "unclassified+sqlite:///{db}"\n'
                      'cases:\n  - {id: typo, gold: "SELECT name FROM shops", predicted: "SELECT nme FROM shops"}\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert result.ret == 1 and "internal error" not in out, out
    result.stdout.fnmatch_lines(["*case one: the 'rows' engine backend's run() returned a list, not a "
                                 "pytest_sqleval.results.QueryResult*"])
    result.stdout.fnmatch_lines(["*case typo: the 'unclassified' engine backend's run() raised OperationalError: "
                                 "no such column: nme*"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_junit_record_is_strict_json_with_what_a_score_case_hook_added(shop, workers):
    import xml.etree.ElementTree as ET

    shop.makeconftest("""
        def pytest_sqleval_score_case(record):
            record["debug"] = {"ratio": float("nan"), "seen": {2, 1}, "pair": (1, 2)}
    """)
    result = shop.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--junitxml", "j.xml", *workers)
    assert result.ret == 0, result.stdout.str()

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    properties = [p.get("value") for p in ET.parse(shop.path / "j.xml").iter("property") if p.get("name") == "sqleval"]
    assert len(properties) == 2
    for value in properties:
        assert json.loads(value, parse_constant=refuse)["debug"] == {"ratio": "nan", "seen": [1, 2], "pair": [1, 2]}
