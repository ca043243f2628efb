"""The extension hooks (pytest_sqleval/hookspec.py) and the metric registry, as a user writes them in conftest.py."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import make_sqlite
from pytest_sqleval.aggregate import aggregate_suite
from pytest_sqleval.registry import Metric, MetricError, MetricRegistry, builtin_registry

SUITE = """
suite: shop
database: shop.sqlite
cases:
  - id: short-right
    gold: SELECT count(*) FROM shops
    predicted: SELECT count(*) FROM shops
  - id: long-right
    gold: SELECT name FROM shops ORDER BY name
    predicted: SELECT s.name FROM shops AS s WHERE s.id > 0 ORDER BY s.name
  - id: short-wrong
    gold: SELECT count(*) FROM tickets
    predicted: SELECT 42
"""

# A user's metric: a rate (share of predictions under 40 characters), read from the record key it fills in,
# and a mean over the rows the prediction returned (from the hook's context).
METRIC_CONFTEST = """
import pytest

def pytest_sqleval_register_metrics(registry):
    registry.register("short_sql", kind="rate", label="short SQL (< 40 chars)", population="scored")
    registry.register("pred_rows", kind="mean", direction="lower", gateable=False)

def pytest_sqleval_score_case(prediction, record, context):
    record["short_sql"] = len(prediction or "") < 40
    result = context.prediction_result
    record["pred_rows"] = None if result is None else float(len(result.rows))
"""

REPORTER_CONFTEST = """
import json, os

def pytest_sqleval_terminal_section(terminalreporter, summary):
    m = summary.aggregates["metrics"]
    terminalreporter.write_line(f"my-reporter: {summary.name} EX={m['execution_accuracy']:.3f} n={summary.aggregates['cases']}")

def pytest_sqleval_update_json(report):
    report["my_reporter"] = {"suites": [s["name"] for s in report["suites"]], "cases": len(report["cases"])}

def pytest_sqleval_case_result(record):
    with open(os.path.join(os.environ["RESULTS_DIR"], record["id"] + ".json"), "w") as f:
        json.dump({"outcome": record["outcome"], "execution_match": record.get("execution_match")}, f)
"""


@pytest.fixture
def shop_suite(pytester: pytest.Pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.path.joinpath("shop.sqleval.yaml").write_text(SUITE, encoding="utf-8")
    return pytester


def _report(pytester: pytest.Pytester, name: str = "report.json") -> dict:
    return json.loads(pytester.path.joinpath(name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_user_metric_is_aggregated_reported_and_written(shop_suite: pytest.Pytester, workers: list[str]) -> None:
    shop_suite.makeconftest(METRIC_CONFTEST)
    result = shop_suite.runpytest("--sqleval", "--sqleval-json", "report.json", "-p", "xdist", *workers)
    assert result.ret == 0, result.stdout.str()
    report = _report(shop_suite)
    metrics = report["suites"][0]["metrics"]
    assert metrics["short_sql"] == pytest.approx(2 / 3)  # short-right, short-wrong
    assert metrics["pred_rows"] == pytest.approx((1 + 3 + 1) / 3)  # 1 count row, 3 names, 1 row of 42
    assert metrics["execution_accuracy"] == pytest.approx(2 / 3)  # the built-ins are still there
    assert report["suites"][0]["intervals"]["short_sql"][0] < 2 / 3 < report["suites"][0]["intervals"]["short_sql"][1]
    by_id = {c["id"]: c for c in report["cases"]}
    assert [by_id[i]["short_sql"] for i in ("short-right", "long-right", "short-wrong")] == [True, False, True]
    result.stdout.re_match_lines([r"\s+short SQL \(< 40 chars\)\s+0\.6667\b.*"])
    result.stdout.re_match_lines([r"\s+pred_rows\s+1\.6667\b.*"])


def test_user_metric_gates_the_build_and_names_its_direction(shop_suite: pytest.Pytester) -> None:
    shop_suite.makeconftest(METRIC_CONFTEST)
    result = shop_suite.runpytest("--sqleval", "--sqleval-threshold", "short_sql=0.9")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*FAIL short_sql 0.6667 < 0.90*"])
    passing = shop_suite.runpytest("--sqleval", "--sqleval-threshold", "short_sql=0.5")
    assert passing.ret == 0, passing.stdout.str()
    not_gateable = shop_suite.runpytest("--sqleval", "--sqleval-threshold", "pred_rows=0.5")
    assert not_gateable.ret == pytest.ExitCode.USAGE_ERROR
    not_gateable.stderr.fnmatch_lines(["*unknown metric 'pred_rows'*short_sql*"])


def test_pass_if_may_use_a_user_metric(shop_suite: pytest.Pytester) -> None:
    shop_suite.makeconftest(METRIC_CONFTEST)
    shop_suite.path.joinpath("shop.sqleval.yaml").write_text(SUITE.replace(
        "database: shop.sqlite", "database: shop.sqlite\npass_if: execution_match and short_sql"), encoding="utf-8")
    result = shop_suite.runpytest("--sqleval", "--sqleval-json", "report.json")
    outcomes = {c["id"]: c["outcome"] for c in _report(shop_suite)["cases"]}
    assert outcomes == {"short-right": "passed", "long-right": "missed", "short-wrong": "missed"}
    assert _report(shop_suite)["suites"][0]["metrics"]["pass_rate"] == pytest.approx(1 / 3)
    assert result.ret == 0


def test_user_reporter_hooks(shop_suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    results_dir = shop_suite.mkdir("results")
    monkeypatch.setenv("RESULTS_DIR", str(results_dir))
    shop_suite.makeconftest(REPORTER_CONFTEST)
    result = shop_suite.runpytest("--sqleval", "--sqleval-json", "report.json", "-p", "xdist", "-n", "2")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*execution_accuracy*0.6667*", "my-reporter: shop EX=0.667 n=3"])  # after the table
    assert _report(shop_suite)["my_reporter"] == {"suites": ["shop"], "cases": 3}
    streamed = {p.stem: json.loads(p.read_text()) for p in results_dir.iterdir()}
    assert streamed == {"short-right": {"outcome": "passed", "execution_match": True},
                        "long-right": {"outcome": "passed", "execution_match": True},
                        "short-wrong": {"outcome": "missed", "execution_match": False}}


def test_score_case_hook_that_raises_errors_only_that_case(shop_suite: pytest.Pytester) -> None:
    shop_suite.makeconftest(textwrap.dedent("""
        def pytest_sqleval_score_case(case, record):
            if case.id == "long-right":
                raise RuntimeError("my metric broke")
            record["mine"] = 1
    """))
    result = shop_suite.runpytest("--sqleval", "--sqleval-json", "report.json")
    cases = {c["id"]: c for c in _report(shop_suite)["cases"]}
    assert cases["long-right"]["outcome"] == "error"
    assert "my metric broke" in cases["long-right"]["error"]["message"]
    assert cases["short-right"]["outcome"] == "passed"
    assert result.ret == 1  # an error case fails the run, as any case that cannot be scored


def test_registering_a_metric_twice_is_a_clear_error(shop_suite: pytest.Pytester) -> None:
    shop_suite.makeconftest(textwrap.dedent("""
        def pytest_sqleval_register_metrics(registry):
            registry.register("soft_f1", kind="mean")
    """))
    result = shop_suite.runpytest("--sqleval")
    assert result.ret != 0
    assert "metric 'soft_f1' is registered twice" in result.stdout.str() + result.stderr.str()


def test_registry_is_reset_between_runs(shop_suite: pytest.Pytester) -> None:
    shop_suite.makeconftest(METRIC_CONFTEST)
    assert shop_suite.runpytest("--sqleval").ret == 0
    from pytest_sqleval.registry import active_registry

    assert "short_sql" not in active_registry()


# --------------------------------------------------------------------------- the registry as pure functions
def test_builtin_registry_lists_the_metrics_in_table_order() -> None:
    names = builtin_registry().names()
    assert names[:3] == ("valid_syntax", "error_count", "execution_accuracy")
    registry = builtin_registry()
    assert registry.gateable()["error_count"] == "max" and registry.gateable()["soft_f1"] == "min"
    assert registry.pass_if_metrics() == {"valid": "bool", "execution_match": "bool", "soft_f1": "score",
                                          "bird_soft_f1": "score", "r_ves": "score", "exact_match": "bool",
                                          "policy": "bool"}


@pytest.mark.parametrize("spec, message", [
    ({"name": "2fast"}, "letters, digits and underscores"),
    ({"name": "x", "kind": "median"}, "kind must be one of rate, mean, count"),
    ({"name": "x", "direction": "up"}, "direction must be one of higher, lower"),
])
def test_bad_metric_descriptions_are_refused(spec: dict, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        Metric(**spec)


def test_a_count_metric_aggregates_as_a_count_and_per_gold_as_a_sum_of_rates() -> None:
    registry = builtin_registry()
    registry.register("slow", kind="count", direction="lower")
    from pytest_sqleval.registry import use_registry

    records = [
        {"id": "a", "index": 0, "gold": "SELECT 1", "valid": True, "slow": True, "outcome": "passed"},
        {"id": "b", "index": 1, "gold": "SELECT 1", "valid": True, "slow": False, "outcome": "passed"},
        {"id": "c", "index": 2, "gold": "SELECT 2", "valid": True, "slow": True, "outcome": "missed"},
    ]
    use_registry(registry)
    try:
        aggregates = aggregate_suite(records)
    finally:
        use_registry(None)
    assert aggregates["metrics"]["slow"] == 2
    assert aggregates["by_gold_sql"]["slow"] == pytest.approx(0.5 + 1.0)  # MRO 3.2: per-group rates summed
    assert "slow" not in aggregates["intervals"]  # a count has no interval
    assert "slow" not in aggregate_suite(records)["metrics"]  # the built-in registry does not know it


def test_registry_copy_is_independent() -> None:
    registry = MetricRegistry([Metric("a")])
    copy = registry.copy()
    copy.register("b")
    assert registry.names() == ("a",) and copy.names() == ("a", "b")


def test_sqleval_merge_and_gate_aggregate_a_user_metric_from_the_report(shop_suite: pytest.Pytester) -> None:
    from pytest_sqleval.cli import main

    shop_suite.makeconftest(METRIC_CONFTEST)
    for shard in ("1/2", "2/2"):
        result = shop_suite.runpytest("--sqleval", "--sqleval-shard", shard, "--sqleval-json", f"r{shard[0]}.json")
        assert result.ret == 0, result.stdout.str()
    assert _report(shop_suite, "r1.json")["metric_definitions"]["short_sql"]["kind"] == "rate"
    try:
        merged = main(["merge", str(shop_suite.path / "r1.json"), str(shop_suite.path / "r2.json"),
                       "-o", str(shop_suite.path / "merged.json")])
        assert merged == 0
        assert _report(shop_suite, "merged.json")["suites"][0]["metrics"]["short_sql"] == pytest.approx(2 / 3)
        gated = main(["gate", str(shop_suite.path / "merged.json"), "--threshold", "short_sql=0.9"])
        assert gated == 1
    finally:
        from pytest_sqleval.registry import use_registry

        use_registry(None)


SCORED_METRIC_CONFTEST = """
from pytest_sqleval.registry import Metric

def rows_returned(record, context):
    return None if context.prediction_result is None else len(context.prediction_result.rows) == 1

def pytest_sqleval_register_metrics(registry):
    registry.register(Metric("single_row", kind="rate", score=rows_returned, label="single-row answers"))
"""


def test_a_metric_is_one_registration_with_its_own_score_function(shop_suite: pytest.Pytester) -> None:
    shop_suite.makeconftest(SCORED_METRIC_CONFTEST)
    result = shop_suite.runpytest("--sqleval", "--sqleval-json", "report.json", "--sqleval-threshold",
                                  "single_row=0.9", "-p", "xdist", "-n", "2")
    report = _report(shop_suite)
    assert {c["id"]: c["single_row"] for c in report["cases"]} == {
        "short-right": True, "long-right": False, "short-wrong": True}
    assert report["suites"][0]["metrics"]["single_row"] == pytest.approx(2 / 3)
    result.stdout.re_match_lines([r"\s+single-row answers\s+0\.6667\b.*", r".*FAIL single_row 0\.6667 < 0\.90.*"])
    assert result.ret == 1


@pytest.mark.parametrize("call, message", [
    (lambda r: r.register(kind="rate"), "needs the metric's name"),
    (lambda r: r.register("x", colour="red"), "unexpected keyword argument 'colour'"),
    (lambda r: r.register(Metric("x"), kind="mean"), "takes no other arguments"),
])
def test_register_refuses_what_it_cannot_use(call, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        call(MetricRegistry())


def test_register_forms_are_equivalent() -> None:
    registry = MetricRegistry()
    a = registry.register("a", kind="mean")
    b = registry.register(name="b", kind="count", direction="lower")
    c = registry.register(Metric("c"))
    assert (a.kind, b.bound, c.kind) == ("mean", "max", "rate") and registry.names() == ("a", "b", "c")
