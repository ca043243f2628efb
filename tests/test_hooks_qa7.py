"""QA (qa7) of issue 8's extension points as a user writes them in a conftest.py: metrics named like the keys the
breakdown rows hold beside the metrics, a metric's own ``score()`` that changes the record it is given, a metric
that reads its value with ``value=`` (kept in the record, as a ``score=``'s), and a predictor built on numpy that returns
its token counts and latency as numpy numbers. Each runs serially and under ``-n 2`` where the aggregates count."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import make_sqlite, require_module

WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])

SUITE = """\
suite: shop
database: shop.sqlite
cases:
  - id: right
    gold: SELECT count(*) FROM shops
    predicted: SELECT count(*) FROM shops
    tags: [count]
  - id: wrong
    gold: SELECT count(*) FROM tickets
    predicted: SELECT 42
    tags: [count]
  - id: broken
    gold: SELECT name FROM shops ORDER BY name
    predicted: SELEC name
"""


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.path.joinpath("shop.sqleval.yaml").write_text(SUITE, encoding="utf-8")
    return pytester


def conftest(pytester: pytest.Pytester, text: str) -> None:
    pytester.makeconftest(textwrap.dedent(text))


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict | None]:
    path = pytester.path / "report.json"
    path.unlink(missing_ok=True)
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={path}", "-p", "no:cacheprovider", *args)
    return result, (json.loads(path.read_text(encoding="utf-8")) if path.exists() else None)


def output(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


# --------------------------------------------------------------------------- names the breakdown rows hold
@pytest.mark.parametrize("name, holder", [("cases", "by_difficulty"), ("groups", "by_gold_sql"),
                                          ("intervals", "by_tag")])
def test_a_metric_named_like_a_key_of_the_breakdown_rows_is_refused_at_registration(shop, name, holder):
    """A breakdown row holds `cases` (by_difficulty, by_tag), `groups` (by_gold_sql) and `intervals` beside the
    metrics. A metric named `cases` replaced each row's case count (the terminal's `cases` column showed 100.0), one
    named `groups` the number of distinct golds ("mean over 7.0 distinct gold queries"), and one named `intervals`
    was an INTERNALERROR (TypeError: 'float' object does not support item assignment). As `errors_by_kind` already
    is, each is a usage error naming the metric and the block, before the run."""
    conftest(shop, f"""
        def pytest_sqleval_register_metrics(registry):
            registry.register({name!r}, kind="mean")

        def pytest_sqleval_score_case(record):
            record[{name!r}] = 100.0
    """)
    result, report = run(shop)
    text = output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR and report is None, text
    assert "INTERNALERROR" not in text and "Traceback" not in text
    assert f"metric {name!r}" in text and holder in text and "pick another name" in text


def test_the_breakdown_rows_keep_their_case_and_group_counts_beside_a_users_metrics(shop):
    """The names left free for a user's metrics never touch the rows' own keys."""
    conftest(shop, """
        def pytest_sqleval_register_metrics(registry):
            registry.register("case_count", kind="mean", breakdown_label="n")

        def pytest_sqleval_score_case(record):
            record["case_count"] = 100.0
    """)
    result, report = run(shop)
    assert report is not None, output(result)
    suite = report["suites"][0]
    assert suite["by_tag"]["count"]["cases"] == 2 and suite["by_tag"]["count"]["case_count"] == 100.0
    assert suite["by_gold_sql"]["groups"] == 3 and suite["by_gold_sql"]["case_count"] == 100.0
    assert isinstance(suite["by_tag"]["count"]["intervals"], dict)


# --------------------------------------------------------------------------- a metric's own score() and the record
@WORKERS
def test_a_metric_score_that_leaves_a_builtin_nan_or_removes_the_records_own_keys_errors_that_case(shop, workers):
    """A metric's `score(record, context)` is given the live record. One that left `soft_f1` NaN put `nan` into the
    suite's soft F1, its interval and the overall line, silently; one that removed `suite` wrote every case of the
    JSON report without its suite (`sqleval merge` and a baseline pair cases by it). What a user's
    `pytest_sqleval_score_case` does so is that case's error naming it; so is what a metric's score() does."""
    conftest(shop, """
        import math
        from pytest_sqleval.registry import Metric

        def breaks(record, context):
            if record["id"] == "right":
                record["soft_f1"] = math.nan
            if record["id"] == "wrong":
                del record["suite"]
            return True

        def pytest_sqleval_register_metrics(registry):
            registry.register(Metric("breaks", kind="rate", score=breaks))
    """)
    result, report = run(shop, *workers)
    assert report is not None, output(result)
    cases = {c["id"]: c for c in report["cases"]}
    assert all(c["suite"] == "shop" for c in cases.values())
    assert cases["right"]["outcome"] == "error" and "soft_f1" in cases["right"]["error"]["message"]
    assert cases["wrong"]["outcome"] == "error" and "'suite'" in cases["wrong"]["error"]["message"]
    assert "score()" in cases["wrong"]["error"]["message"]
    assert cases["broken"]["outcome"] == "missed"  # the other cases are scored as ever
    metrics = report["suites"][0]["metrics"]
    assert metrics["soft_f1"] == 0.0 and metrics["breaks"] == 1.0
    assert "nan" not in json.dumps(report["suites"]) and "nan" not in json.dumps(report["overall"])


def test_a_metric_score_that_only_adds_its_value_changes_nothing_else(shop):
    """The check costs nothing to a score() that behaves: its values and the built-ins' are as without it."""
    conftest(shop, """
        from pytest_sqleval.registry import Metric

        def pytest_sqleval_register_metrics(registry):
            registry.register(Metric("short", kind="rate", population="scored",
                                     score=lambda record, context: len(record.get("predicted") or "") < 20))
    """)
    result, report = run(shop)
    assert report is not None, output(result)
    assert {c["id"]: (c["outcome"], c["short"]) for c in report["cases"]} == {
        "right": ("passed", False), "wrong": ("missed", True), "broken": ("missed", True)}


# --------------------------------------------------------------------------- value= on a user's metric
@WORKERS
def test_a_users_metric_with_value_is_kept_in_the_record_for_pass_if_and_merge(shop, workers):
    """`value=` (docs/architecture.md's interface) was read at aggregation only, from a function the report cannot
    carry: `sqleval merge` of the run's own report dropped the metric (the cases held no value under its key) and
    `pass_if` never held on it. Its value is now read when the case is scored and kept in the record, as a
    `score=`'s is. Cases right (EX true), wrong (false), broken (a syntax error: false): 1/3, as EX."""
    conftest(shop, """
        def pytest_sqleval_register_metrics(registry):
            registry.register("ex2", kind="rate", value=lambda record: record.get("execution_match"))
    """)
    shop.path.joinpath("shop.sqleval.yaml").write_text("pass_if: ex2\n" + SUITE, encoding="utf-8")
    result, report = run(shop, *workers)
    assert report is not None, output(result)
    cases = {c["id"]: c for c in report["cases"]}
    assert {k: (c["outcome"], c.get("ex2")) for k, c in cases.items()} == {
        "right": ("passed", True), "wrong": ("missed", False), "broken": ("missed", False)}
    metrics = report["suites"][0]["metrics"]
    assert metrics["ex2"] == metrics["execution_accuracy"] == 1 / 3
    from pytest_sqleval.cli import main

    merged = shop.path / "merged.json"
    assert main(["merge", str(shop.path / "report.json"), "-o", str(merged)]) == 0
    assert json.loads(merged.read_text(encoding="utf-8"))["suites"][0]["metrics"]["ex2"] == 1 / 3


@pytest.mark.parametrize("value, shown", [("'high'", "'high'"), ("float('nan')", "nan")])
def test_a_value_function_giving_text_or_nan_errors_its_case_not_the_run(shop, value, shown):
    """A `value=` giving text was an INTERNALERROR of the run (could not convert string to float); NaN a silent
    `nan` aggregate. Each is now that case's error naming the metric, as a `score=`'s is."""
    conftest(shop, f"""
        def pytest_sqleval_register_metrics(registry):
            registry.register("ex2", kind="rate", value=lambda record: {value} if record["id"] == "right" else True)
    """)
    result, report = run(shop)
    text = output(result)
    assert report is not None and "INTERNALERROR" not in text, text
    cases = {c["id"]: c for c in report["cases"]}
    assert cases["right"]["outcome"] == "error" and "ex2" in cases["right"]["error"]["message"]
    assert shown in cases["right"]["error"]["message"]
    assert "nan" not in json.dumps(report["suites"])


def test_value_and_score_together_is_refused(shop):
    conftest(shop, """
        from pytest_sqleval.registry import Metric

        def pytest_sqleval_register_metrics(registry):
            registry.register(Metric("ex2", kind="rate", value=lambda r: True, score=lambda r, c: True))
    """)
    result, report = run(shop)
    text = output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR and report is None, text
    assert "metric 'ex2'" in text and "not both" in text


def test_a_users_metric_with_present_when_is_reported_only_when_it_holds(shop):
    conftest(shop, """
        def pytest_sqleval_register_metrics(registry):
            registry.register("never", kind="rate", present_when=lambda record: False)
            registry.register("always", kind="rate", present_when=lambda record: True)

        def pytest_sqleval_score_case(record):
            record["never"] = record["always"] = True
    """)
    result, report = run(shop)
    assert report is not None, output(result)
    metrics = report["suites"][0]["metrics"]
    assert "never" not in metrics and metrics["always"] == 1.0


def test_the_builtin_metrics_keep_their_value_functions():
    from pytest_sqleval.registry import BUILTIN_METRICS, builtin_registry

    registry = builtin_registry()
    assert [m.name for m in registry] == [m.name for m in BUILTIN_METRICS]
    assert registry["execution_accuracy"].value is not None and registry["test_suite_accuracy"].present_when


# --------------------------------------------------------------------------- a predictor's numpy numbers
PREDICTOR_SUITE = """\
suite: shop
database: shop.sqlite
cases:
  - id: shops
    question: How many shops?
    gold: SELECT count(*) FROM shops
  - id: tickets
    question: How many tickets?
    gold: SELECT count(*) FROM tickets
"""


@WORKERS
def test_a_predictors_numpy_token_counts_and_latency_are_kept_as_numbers(pytester: pytest.Pytester, workers):
    """A predictor on a local model counts tokens with numpy (`ids.shape[-1]`, `mask.sum()`: numpy.int64) and times
    itself with numpy.float32. Those were silently dropped: `tokens` {prompt: null, completion: null}, "2 calls
    without token counts", and the call's own elapsed time instead of the latency it gave. They are numbers, kept
    as Python's own (as a metric's numpy values are)."""
    require_module("numpy")
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.path.joinpath("shop.sqleval.yaml").write_text(PREDICTOR_SUITE, encoding="utf-8")
    conftest(pytester, """
        import numpy as np
        import pytest

        @pytest.fixture(scope="session")
        def sqleval_predictor():
            def predict(case):
                return {"sql": "SELECT count(*) FROM shops", "latency_s": np.float32(0.25),
                        "tokens": {"prompt": np.int64(30), "completion": np.int32(4)}}
            return predict
    """)
    result, report = run(pytester, *workers)
    assert report is not None, output(result)
    for case in report["cases"]:
        assert case["tokens"] == {"prompt": 30, "completion": 4}, case
        assert case["latency_s"] == 0.25, case
        assert type(case["tokens"]["prompt"]) is int
    usage = report["suites"][0]["model"]
    assert usage["tokens"] == {"prompt": 60, "completion": 8} and "calls_without_tokens" not in usage, usage
    assert usage["latency_s"]["p50"] == 0.25


def test_a_predictors_numpy_nan_negative_or_bool_is_still_no_count():
    """numpy's NaN, a negative or a bool is no count, as Python's are."""
    np = require_module("numpy")
    from pytest_sqleval.model.predictors import _count

    assert _count(np.float64("nan")) is None and _count(np.float32(-1.0)) is None and _count(np.bool_(True)) is None
    assert _count(np.int64(2**60)) is None
    assert _count(np.int64(7)) == 7 and type(_count(np.int64(7))) is int
    assert _count(np.float32(0.5)) == 0.5 and type(_count(np.float32(0.5))) is float


# --------------------------------------------------------------------------- a breakdown_label in the Markdown tables
def test_a_breakdown_label_with_a_pipe_or_markup_keeps_the_markdown_breakdown_table_whole(shop):
    """`breakdown_label` is any one line of printable text. The metrics table escaped a label's `|` but the tables
    by difficulty and by tag wrote the header raw: `x|y` made a header of more columns than its rows (GitHub then
    drops the extra cells), and `<b>` was markup."""
    conftest(shop, """
        def pytest_sqleval_register_metrics(registry):
            registry.register("pipe", kind="rate", population="scored", label="a | b", breakdown_label="x|y <b>")

        def pytest_sqleval_score_case(record):
            record["pipe"] = True
    """)
    result = shop.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-markdown=r.md")
    text = shop.path.joinpath("r.md").read_text(encoding="utf-8")
    assert "y <b>" not in text, output(result)

    def columns(line: str) -> int:
        return len(line.replace("\\|", "").strip().strip("|").split("|"))

    for title in ("| difficulty |", "| tag |"):
        lines = text.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith(title))
        header, rule, first_row = lines[at:at + 3]
        assert columns(header) == columns(rule) == columns(first_row), (header, first_row)
        assert "x\\|y &lt;b&gt;" in header
