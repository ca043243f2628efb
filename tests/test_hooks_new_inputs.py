"""The extension hooks (pytest_sqleval/hookspec.py) as an independent tester writes them: implementations in a
conftest.py that return odd values, add values JSON has no form for, raise, or come several at a time."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import make_sqlite

SUITE = """
suite: shop
database: shop.sqlite
cases:
  - id: right
    gold: SELECT count(*) FROM shops
    predicted: SELECT count(*) FROM shops
  - id: wrong
    gold: SELECT count(*) FROM tickets
    predicted: SELECT 42
  - id: broken
    gold: SELECT name FROM shops ORDER BY name
    predicted: SELEC name FROM shops
"""

WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.path.joinpath("shop.sqleval.yaml").write_text(SUITE, encoding="utf-8")
    return pytester


def conftest(pytester: pytest.Pytester, text: str) -> None:
    pytester.makeconftest(textwrap.dedent(text))


def strict_json(text: str) -> dict:
    """JSON as the standard defines it: NaN / Infinity are not JSON (Python's json reads them by default)."""
    def refuse(constant: str):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict | None]:
    path = pytester.path / "report.json"
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={path}", "-p", "no:cacheprovider", *args)
    return result, (strict_json(path.read_text(encoding="utf-8")) if path.exists() else None)


# --------------------------------------------------------------------------- pytest_sqleval_update_json
@WORKERS
def test_update_json_values_json_has_no_form_for_are_written_as_valid_json(shop: pytest.Pytester, workers) -> None:
    """NaN/inf, a set, a tuple, bytes and non-text keys added by a hook: the file is still valid JSON, written as
    the rest of the report writes such values (non-finite floats as text, a set as a sorted list), and the same
    under -n 2."""
    conftest(shop, """
        def pytest_sqleval_update_json(report):
            report["mine"] = {"nan": float("nan"), "inf": float("inf"), "ninf": -float("inf"),
                              "set": {"b", "c", "a"}, "frozen": frozenset({3, 1, 2}), "tuple": (1, "x"),
                              "bytes": b"ab", "keys": {1: "one", (2, 3): "pair"}, "huge": "x" * 200_000}
            report["suites"][0]["my_nan"] = float("nan")
    """)
    result, report = run(shop, *workers)
    assert report is not None, result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    mine = report["mine"]
    assert (mine["nan"], mine["inf"], mine["ninf"]) == ("nan", "inf", "-inf")
    assert mine["set"] == ["a", "b", "c"] and mine["frozen"] == [1, 2, 3]
    assert mine["tuple"] == [1, "x"] and mine["keys"] == {"1": "one", "(2, 3)": "pair"}
    assert len(mine["huge"]) == 200_000
    assert report["suites"][0]["my_nan"] == "nan"
    assert [case["outcome"] for case in report["cases"]] == ["passed", "missed", "missed"]


def test_a_report_dict_the_hook_made_circular_is_a_clear_error_naming_the_hook(shop: pytest.Pytester) -> None:
    conftest(shop, """
        def pytest_sqleval_update_json(report):
            report["self"] = report
    """)
    result, report = run(shop)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and report is None
    assert "pytest_sqleval_update_json" in out and "conftest.py" in out
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_update_json_that_raises_is_a_clear_error_naming_the_hook_and_fails_the_run(shop: pytest.Pytester) -> None:
    conftest(shop, """
        def pytest_sqleval_update_json(report):
            raise KeyError("no-such-suite")
    """)
    result, report = run(shop)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out
    assert report is None  # a report the hook failed to finish is not written as if it were whole
    line = next(line for line in out.splitlines() if "pytest_sqleval_update_json" in line)
    assert "conftest.py:2" in line and "KeyError" in line and "no-such-suite" in line
    assert result.ret == pytest.ExitCode.TESTS_FAILED


# --------------------------------------------------------------------------- configure-time (historic) hooks
@pytest.mark.parametrize("hook", ["pytest_sqleval_execution_profiles", "pytest_sqleval_engine_backends",
                                  "pytest_sqleval_register_metrics"])
def test_a_registration_hook_that_raises_is_a_usage_error_naming_hook_conftest_and_message(
        shop: pytest.Pytester, hook: str) -> None:
    conftest(shop, f"""
        def {hook}(config):
            raise RuntimeError("cannot reach the profile server")
    """)
    result = shop.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider")
    err = result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + err
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    line = next(line for line in err.splitlines() if hook in line)
    assert str(shop.path / "conftest.py") + ":2" in line
    assert "RuntimeError: cannot reach the profile server" in line


# --------------------------------------------------------------------------- pytest_sqleval_score_case
@WORKERS
def test_a_score_case_hook_that_leaves_a_builtin_metric_an_unusable_value_errors_that_case_only(
        shop: pytest.Pytester, workers) -> None:
    """NaN in soft_f1, text in execution_match, a huge text in exact_match: each is that case's error naming the
    metric or key, in one line (it used to reach the aggregates: a nan soft_f1, "yes" counted as a match, and a
    gate on soft_f1 crashed the terminal summary); the untouched case is scored as usual."""
    conftest(shop, """
        def pytest_sqleval_score_case(case, record):
            if case.id == "right":
                record["execution_match"] = "yes"
            elif case.id == "wrong":
                record["soft_f1"] = float("nan")
            elif case.id == "broken":
                record["exact_match"] = "x" * 100_000
    """)
    shop.path.joinpath("other.sqleval.yaml").write_text(
        "database: shop.sqlite\ncases:\n  - {id: fine, gold: SELECT 1, predicted: SELECT 1}\n", encoding="utf-8")
    result, report = run(shop, "--sqleval-threshold", "soft_f1=0.5", *workers)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out and report is not None
    cases = {case["id"]: case for case in report["cases"]}
    assert {k: c["outcome"] for k, c in cases.items()} == {"right": "error", "wrong": "error", "broken": "error",
                                                            "fine": "passed"}
    assert "record['execution_match'] = 'yes', which is not Optional[bool]" in cases["right"]["error"]["message"]
    assert "metric 'soft_f1' gave nan" in cases["wrong"]["error"]["message"]
    assert len(cases["broken"]["error"]["message"]) < 400
    other = next(s for s in report["suites"] if s["name"] != "shop")
    assert other["metrics"]["soft_f1"] == 1.0 and other["metrics"]["execution_accuracy"] == 1.0
    assert result.ret == pytest.ExitCode.TESTS_FAILED


# --------------------------------------------------------------------------- reporting hooks that raise
@WORKERS
def test_a_case_result_hook_that_raises_makes_that_case_an_error_naming_it(shop: pytest.Pytester, workers) -> None:
    """pytest, the summary and the report agree: the case the reporter crashed on is an error (it used to fail in
    pytest as "internal error while scoring" while the report said it passed); the other cases are untouched."""
    conftest(shop, """
        def pytest_sqleval_case_result(record):
            if record["id"] == "right":
                raise ConnectionError("results server down")
    """)
    result, report = run(shop, *workers)
    outcomes = {case["id"]: case["outcome"] for case in report["cases"]}
    assert outcomes == {"right": "error", "wrong": "missed", "broken": "missed"}
    message = report["cases"][0]["error"]["message"]
    assert "pytest_sqleval_case_result" in message and "conftest.py:3" in message
    assert "ConnectionError: results server down" in message
    assert report["suites"][0]["outcomes"]["error"] == 1
    counts = result.parseoutcomes()
    assert (counts.get("failed"), counts.get("missed"), counts.get("passed")) == (1, 2, None)


def test_a_terminal_section_hook_that_raises_is_named_and_fails_the_run_the_summary_goes_on(
        shop: pytest.Pytester) -> None:
    shop.path.joinpath("other.sqleval.yaml").write_text(
        "suite: other\ndatabase: shop.sqlite\ncases:\n  - {id: fine, gold: SELECT 1, predicted: SELECT 1}\n",
        encoding="utf-8")
    conftest(shop, """
        def pytest_sqleval_terminal_section(terminalreporter, summary):
            if summary.name == "other":
                raise ZeroDivisionError("no cases?")
            terminalreporter.write_line(f"mine: {summary.name}")
    """)
    result, report = run(shop)
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert "pytest_sqleval_terminal_section" in out and "conftest.py:3) raised ZeroDivisionError: no cases?" in out
    assert "mine: shop" in out and "overall (2 suites" in out  # the rest of the summary is written
    assert report is not None
    assert result.ret == pytest.ExitCode.TESTS_FAILED


# --------------------------------------------------------------------------- pytest_sqleval_register_metrics
@pytest.mark.parametrize("call, message", [
    (lambda r: r.register(123, kind="rate"), "metric name 123: use letters"),
    (lambda r: r.register("x", kind="rate", case_key=7), "case_key must be the record key as text, not 7"),
    (lambda r: r.register("outcome", kind="rate"), "the case record's own 'outcome' is text or a list"),
    (lambda r: r.register("n_tags", kind="count", case_key="tags"), "the case record's own 'tags' is text or a list"),
], ids=["int-name", "int-key", "outcome", "tags"])
def test_a_metric_that_could_never_be_read_or_aggregated_is_refused_at_registration(call, message) -> None:
    from pytest_sqleval.registry import MetricError, MetricRegistry

    with pytest.raises(MetricError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(MetricRegistry())


def test_a_metric_may_read_a_numeric_key_of_the_record_itself() -> None:
    from pytest_sqleval.registry import MetricRegistry

    metric = MetricRegistry().register("latency", kind="mean", case_key="latency_s", direction="lower")
    assert metric.case_value({"valid": True, "latency_s": 0.25}) == 0.25


def test_registering_a_metric_on_the_records_outcome_is_a_usage_error_not_an_internal_error(
        shop: pytest.Pytester) -> None:
    conftest(shop, """
        def pytest_sqleval_register_metrics(registry):
            registry.register("outcome", kind="rate")
    """)
    result = shop.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider")
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "metric 'outcome': the case record's own 'outcome' is text" in result.stderr.str()
    assert f"({shop.path / 'conftest.py'}:2)" in result.stderr.str()  # where the registration is


# --------------------------------------------------------------------------- several implementations
PLUGIN = """
def pytest_sqleval_register_metrics(registry):
    registry.register("one_row", kind="rate", population="scored")

def pytest_sqleval_score_case(context, record):
    result = context.prediction_result
    record["one_row"] = None if result is None else len(result.rows) == 1

def pytest_sqleval_update_json(report):
    report.setdefault("seen_by", []).append("plugin")
"""


def _comparable(report: dict) -> dict:
    """The report without what differs between two runs of the same cases (timings, versions, paths)."""
    cases = [{k: v for k, v in case.items() if k not in ("latency_s",)} for case in report["cases"]]
    suites = [{k: v for k, v in suite.items() if k != "path"} for suite in report["suites"]]
    return {"cases": cases, "suites": suites, "seen_by": report["seen_by"], "extra": report.get("extra"),
            "metric_definitions": report.get("metric_definitions")}


def test_a_plugin_and_a_conftest_each_implementing_the_hooks_serial_equals_xdist(shop: pytest.Pytester) -> None:
    """A -p plugin and a conftest.py both register, score and update: each one's work is in the report, a
    trylast score_case sees the other's field, and -n 2 writes the same cases, aggregates and additions."""
    shop.makepyfile(myplug=PLUGIN)
    conftest(shop, """
        def pytest_sqleval_register_metrics(registry):
            registry.register("agrees", kind="mean", population="scored")

        import pytest

        @pytest.hookimpl(trylast=True)  # pluggy calls the later-registered conftest.py first, unless told
        def pytest_sqleval_score_case(record):
            one_row = record.get("one_row")
            record["agrees"] = None if one_row is None else float(one_row == bool(record.get("execution_match")))

        def pytest_sqleval_update_json(report):
            report.setdefault("seen_by", []).append("conftest")
            report["extra"] = {"s": {"z", "y"}, "ratio": float("inf")}
    """)
    shop.syspathinsert()
    serial_result, serial = run(shop, "-p", "myplug")
    xdist_result, xdist = run(shop, "-p", "myplug", "-n", "2")
    assert serial is not None and xdist is not None, serial_result.stdout.str() + xdist_result.stdout.str()
    assert sorted(serial["seen_by"]) == ["conftest", "plugin"]
    assert serial["extra"] == {"s": ["y", "z"], "ratio": "inf"}
    cases = {case["id"]: case for case in serial["cases"]}
    assert (cases["right"]["one_row"], cases["right"]["agrees"]) == (True, 1.0)
    assert (cases["wrong"]["one_row"], cases["wrong"]["agrees"]) == (True, 0.0)
    assert cases["broken"]["one_row"] is None and cases["broken"]["agrees"] is None
    metrics = serial["suites"][0]["metrics"]
    assert metrics["one_row"] == 1.0 and metrics["agrees"] == 0.5  # None: the broken case does not count
    assert _comparable(serial) == _comparable(xdist)


@pytest.mark.parametrize("value, shown", [
    ({"passed": "yes"}, "'yes'"), ({"passed": float("nan")}, "nan"), ({"why": "no passed key"}, "{'why'"),
], ids=["text-verdict", "nan-verdict", "no-passed"])
def test_a_verdict_mapping_must_hold_a_usable_passed_value(value, shown) -> None:
    """A `{"passed": ...}` verdict is aggregated by its "passed": text there crashed the aggregation
    (INTERNALERROR), NaN made the suite's rate nan, and a mapping without it silently did not count."""
    from pytest_sqleval.registry import MetricError, MetricRegistry, check_case_value

    metric = MetricRegistry().register("verdict", kind="rate")
    with pytest.raises(MetricError, match=r"metric 'verdict' gave " + shown.replace("{", r"\{")):
        check_case_value(metric, {"verdict": value})
    check_case_value(metric, {"verdict": {"passed": False, "why": "kept"}})  # a usable verdict passes
    check_case_value(metric, {"verdict": {"passed": None}})  # the case does not count


def test_a_registration_hook_of_a_conftest_collected_later_that_raises_fails_that_collection(
        shop: pytest.Pytester) -> None:
    """A conftest.py below the rootdir is registered while collecting: its historic hook runs then, and its
    exception is that folder's collection error naming the hook and the file (no INTERNALERROR)."""
    sub = shop.mkdir("sub")
    make_sqlite(sub / "shop.sqlite")
    sub.joinpath("shop.sqleval.yaml").write_text(SUITE, encoding="utf-8")
    sub.joinpath("conftest.py").write_text(
        "def pytest_sqleval_execution_profiles(profiles):\n    raise LookupError('profile store gone')\n",
        encoding="utf-8")
    result = shop.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", ".")
    out = result.stdout.str()
    assert "INTERNALERROR" not in out + result.stderr.str()
    assert "sub/conftest.py:2: in pytest_sqleval_execution_profiles" in out
    assert "LookupError: profile store gone" in out
    assert result.ret == pytest.ExitCode.INTERRUPTED  # collection errors stop the run


# --------------------------------------------------------------------------- the typed record (issue 8)
RECORD_TYPES = """
import json, typing
from pytest_sqleval.record import CaseRecord

HINTS = typing.get_type_hints(CaseRecord)

def fits(value, hint):
    origin = typing.get_origin(hint)
    if hint is typing.Any:
        return True
    if origin is typing.Union:
        return any(fits(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin in (list, dict):
        return isinstance(value, origin)
    if typing.is_typeddict(hint):
        return isinstance(value, dict) and set(value) <= set(typing.get_type_hints(hint))
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, hint)

def pytest_sqleval_score_case(record):  # a user's hook: the plugin then checks the record it leaves
    record["mine"] = len(record)

def pytest_sqleval_case_result(record):
    wrong = {k: [repr(v)[:80], str(HINTS[k])] for k, v in record.items() if k in HINTS and not fits(v, HINTS[k])}
    with open(f"record-{record['id']}.json", "w") as f:
        json.dump({"wrong": wrong, "outcome": record["outcome"]}, f)
"""

VARIED_SUITE = """
suite: varied
database: shop.sqlite
timeout: 0.5
cases:
  - id: right
    gold: SELECT count(*) FROM shops
    predicted: SELECT count(*) FROM shops
    tags: [count]
    difficulty: hard
    metadata: {source: probe, n: 1}
  - id: two-golds
    gold: [SELECT count(*) FROM tickets, SELECT count(id) FROM tickets]
    predicted: SELECT 42
  - id: syntax
    gold: SELECT name FROM shops
    predicted: SELEC name FROM shops
  - id: no-prediction
    gold: SELECT 1
  - id: slow
    gold: SELECT 1
    predicted: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
  - id: runtime-error
    gold: SELECT 1
    predicted: SELECT abs(-9223372036854775808)
"""


def test_every_record_a_hook_sees_has_the_documented_types_and_the_json_keeps_their_order(
        pytester: pytest.Pytester) -> None:
    """Each key of a case's record is of the type record.CaseRecord declares (a correct, a wrong, an invalid, an
    absent, a timed-out and a failing prediction); the JSON's cases write those keys in REPORT_KEYS' order and
    never the internal ones."""
    from pytest_sqleval.record import INTERNAL_KEYS, REPORT_KEYS

    make_sqlite(pytester.path / "shop.sqlite")
    pytester.path.joinpath("varied.sqleval.yaml").write_text(VARIED_SUITE, encoding="utf-8")
    conftest(pytester, RECORD_TYPES)
    result, report = run(pytester)
    assert report is not None, result.stdout.str()
    seen = {}
    for path in sorted(pytester.path.glob("record-*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        seen[path.stem.removeprefix("record-")] = (data["outcome"], data["wrong"])
    assert {case: outcome for case, (outcome, _) in seen.items()} == {
        "right": "passed", "two-golds": "missed", "syntax": "missed", "no-prediction": "missed",
        "slow": "missed", "runtime-error": "missed"}
    assert {case: wrong for case, (_, wrong) in seen.items() if wrong} == {}
    kinds = {case["id"]: (case["error"] or {}).get("kind") for case in report["cases"]}
    assert kinds["slow"] == "timeout" and kinds["no-prediction"] == "no_prediction" and kinds["syntax"] == "syntax"
    for case in report["cases"]:
        assert not set(case) & INTERNAL_KEYS
        order = [REPORT_KEYS.index(key) for key in case]
        assert order == sorted(order), case["id"]


@pytest.mark.parametrize("change, message", [
    ('record["error"] = "oops"', "record['error'] = 'oops', which is not Optional[QueryErrorRecord]"),
    ('record["error"] = {"why": 1}', "record['error'] = {'why': 1}; an error is {'kind': ..., 'message': ...}"),
    ('record["clauses"] = "x"', "record['clauses'] = 'x', which is not Optional[dict[str, bool]]"),
    ('record["tags"] = "a, b"', "record['tags'] = 'a, b', which is not list[str]"),
    ("record.clear()", "the record without its own 'suite', 'path', 'id', 'index'"),
], ids=["error-text", "error-shape", "clauses", "tags", "cleared"])
def test_a_score_case_hook_that_breaks_the_records_own_keys_errors_that_case_naming_the_key(
        shop: pytest.Pytester, change: str, message: str) -> None:
    """These used to end the run in an INTERNALERROR (in the outcome, the aggregates or the summary)."""
    conftest(shop, f"""
        def pytest_sqleval_score_case(case, record):
            if case.id == "wrong":
                {change}
    """)
    result, report = run(shop)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and report is not None
    cases = {case["id"]: case for case in report["cases"]}
    assert {k: c["outcome"] for k, c in cases.items()} == {"right": "passed", "wrong": "error", "broken": "missed"}
    assert "a pytest_sqleval_score_case hook left " + message in cases["wrong"]["error"]["message"]


@WORKERS
def test_a_score_case_hook_that_raises_is_named_not_called_an_internal_error(shop: pytest.Pytester, workers) -> None:
    """The user's scoring raised, not the plugin: that case's error names the implementation (file and line)
    and the exception, without "internal error while scoring"; the other cases are scored."""
    conftest(shop, """
        def pytest_sqleval_score_case(case, record):
            if case.id == "wrong":
                raise LookupError("no reference for " + case.id)
            record["mine"] = 1.0
    """)
    result, report = run(shop, *workers)
    cases = {case["id"]: case for case in report["cases"]}
    message = cases["wrong"]["error"]["message"]
    assert cases["wrong"]["outcome"] == "error"
    assert "pytest_sqleval_score_case" in message and "conftest.py:3" in message
    assert "LookupError: no reference for wrong" in message
    assert "internal error while scoring" not in message
    assert (cases["right"]["outcome"], cases["broken"]["outcome"]) == ("passed", "missed")
    out = result.stdout.str()
    assert "conftest.py:3) raised LookupError" in out and "Traceback" not in out
