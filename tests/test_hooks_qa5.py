"""QA of the extension hooks (issue 8), round 5: a user's metric and values through every report, serial and -n 2,
as a user writes them in conftest.py files."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import make_sqlite

WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])

SUITE = """
suite: shop
database: shop.sqlite
cases:
  - id: short-right
    gold: SELECT count(*) FROM shops
    predicted: SELECT count(*) FROM shops
    difficulty: easy
    tags: [agg]
  - id: long-right
    gold: SELECT name FROM shops ORDER BY name
    predicted: SELECT s.name FROM shops AS s WHERE s.id > 0 ORDER BY s.name
    difficulty: hard
  - id: short-wrong
    gold: SELECT count(*) FROM tickets
    predicted: SELECT 42
    difficulty: easy
    tags: [agg]
"""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", *args)


# A metric with a breakdown column (registry.Metric.breakdown_label: "shown in the breakdown tables by difficulty
# and tag under this short header").
BREAKDOWN_CONFTEST = """
def pytest_sqleval_register_metrics(registry):
    registry.register("short_sql", kind="rate", label="short SQL", population="scored", breakdown_label="short")

def pytest_sqleval_score_case(prediction, record):
    record["short_sql"] = len(prediction or "") < 40
"""


@WORKERS
def test_sqleval_report_renders_a_user_metrics_breakdown_column_as_the_run_did(pytester: pytest.Pytester, workers):
    """README: a run and `sqleval report` on its JSON give byte-identical Markdown and HTML, a registered metric
    with its labels and in its place (read from the report's `metric_definitions`). The metric's breakdown column
    (by difficulty, by tag) was in the run's files only: `metric_definitions` did not keep `breakdown_label`."""
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "shop.sqleval.yaml", SUITE)
    pytester.makeconftest(BREAKDOWN_CONFTEST)
    result = _run(pytester, "--sqleval-json=report.json", "--sqleval-markdown=run.md", "--sqleval-html=run.html",
                  *workers)
    assert result.ret == 0, result.stdout.str()
    run_md = (pytester.path / "run.md").read_text(encoding="utf-8")
    assert "| difficulty | cases | valid | errors | EX | soft_f1 | EM | short |" in run_md
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert report["metric_definitions"]["short_sql"]["breakdown_label"] == "short"
    # without the conftest.py: what the report recorded is all `sqleval report` has
    (pytester.path / "conftest.py").unlink()
    rendered = pytester.run("sqleval", "report", "--markdown", "cli.md", "--html", "cli.html", "report.json")
    assert rendered.ret == 0, rendered.stderr.str()
    assert (pytester.path / "cli.md").read_text(encoding="utf-8") == run_md
    assert (pytester.path / "cli.html").read_bytes() == (pytester.path / "run.html").read_bytes()


# A folder's conftest.py (which the xdist controller never imports) leaves an object of its own class in the record.
FOLDER_OBJECT_CONFTEST = """
class Note:
    def __init__(self, text):
        self.text = text

    def __str__(self):
        return f"note:{self.text}"


def pytest_sqleval_score_case(record, case):
    record["note"] = Note(case.id)
    record["verdict_note"] = {"passed": True, "why": Note(case.id)}
"""

REPORTER_CONFTEST = """
import json

def pytest_sqleval_terminal_section(terminalreporter, records):
    terminalreporter.write_line("notes: " + json.dumps(sorted(str(r.get("note")) for r in records)))
"""


@WORKERS
def test_an_object_of_a_folder_conftests_class_in_the_record_travels_to_the_controller(pytester: pytest.Pytester,
                                                                                     workers):
    """The serial run reports it (JUnit writes its text); under -n 2 the controller could not unpickle the worker's
    report (ModuleNotFoundError: No module named 'conftest'): an INTERNALERROR and a dead worker."""
    make_sqlite(pytester.path / "sub" / "shop.sqlite")
    _write(pytester.path / "sub" / "shop.sqleval.yaml", SUITE)
    _write(pytester.path / "sub" / "conftest.py", FOLDER_OBJECT_CONFTEST)
    pytester.makeconftest(REPORTER_CONFTEST)
    result = _run(pytester, "--sqleval-json=report.json", "--junitxml=junit.xml", *workers)
    output = result.stdout.str()
    assert "INTERNALERROR" not in output and "node down" not in output, output
    assert result.ret == 0, output
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert {c["id"]: c["outcome"] for c in report["cases"]} == {
        "short-right": "passed", "long-right": "passed", "short-wrong": "missed"}
    result.stdout.fnmatch_lines(['notes: ["note:long-right", "note:short-right", "note:short-wrong"]'])
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert "note:short-wrong" in junit


# A plugin author's own tests of a conftest.py's profile, run in-process with pytester (its default): the second run
# read its suite with the first run's stale loader module (`from . import loader` took the package attribute that
# pytester's sys.modules restore leaves behind), whose profile table was not the session's: "unknown execution
# profile 'loose'". Run in a fresh process, so the outer run has imported none of the plugin's loader.
AUTHORS_TESTS = '''
import sqlite3

SUITE = """
suite: shop
database: shop.sqlite
cases:
  - id: a
    gold: SELECT 1
    predicted: SELECT 1
"""

PROFILE_CONFTEST = """
from pytest_sqleval.comparison import ComparisonOptions

def pytest_sqleval_execution_profiles(profiles):
    profiles["loose"] = ComparisonOptions(duplicates="set")
"""


def _suite(pytester, text):
    sqlite3.connect(pytester.path / "shop.sqlite").close()
    pytester.makefile(".sqleval.yaml", shop=text)


def test_a_metric_hook(pytester):
    _suite(pytester, SUITE)
    pytester.makeconftest("def pytest_sqleval_score_case(record):\\n    record['mine'] = 1\\n")
    assert pytester.runpytest("--sqleval").ret == 0


def test_a_profile_hook(pytester):
    _suite(pytester, SUITE.replace("cases:", "execution: loose\\ncases:"))
    pytester.makeconftest(PROFILE_CONFTEST)
    result = pytester.runpytest("--sqleval")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*execution profile loose |*"])
'''


def test_a_profile_hook_works_in_the_second_of_two_in_process_pytester_runs(pytester: pytest.Pytester):
    pytester.makepyfile(test_authors=AUTHORS_TESTS)
    result = pytester.runpytest_subprocess("-p", "pytester", "-p", "no:cacheprovider", "test_authors.py")
    result.assert_outcomes(passed=2)


# A folder's conftest.py scores only the suites of its folder (README); its metrics are registered for the run.
COUNT_CONFTEST = """
def pytest_sqleval_register_metrics(registry):
    registry.register("long_sql", kind="count", direction="lower")
    registry.register("long_share", kind="rate")


def pytest_sqleval_score_case(prediction, record):
    record["long_sql"] = record["long_share"] = len(prediction or "") >= 40
"""


@WORKERS
def test_a_count_metric_no_case_of_a_suite_has_is_absent_as_a_rate_is_not_a_count_of_0(pytester: pytest.Pytester,
                                                                                    workers):
    """b/'s suite never got a value of a/'s count metric: its suites and breakdowns showed `long_sql 0` (a count of
    nothing computed, which a `long_sql: 0` threshold passed), while a/'s rate was absent there, as it should be."""
    for folder in ("a", "b"):
        make_sqlite(pytester.path / folder / "shop.sqlite")
        _write(pytester.path / folder / f"{folder}.sqleval.yaml", SUITE.replace("suite: shop", f"suite: shop_{folder}"))
    _write(pytester.path / "a" / "conftest.py", COUNT_CONFTEST)
    result = _run(pytester, "--sqleval-json=report.json", *workers)
    assert result.ret == 0, result.stdout.str()
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    suites = {s["name"]: s for s in report["suites"]}
    assert suites["shop_a"]["metrics"]["long_sql"] == 1 and suites["shop_a"]["by_gold_sql"]["long_sql"] == 1.0
    assert suites["shop_a"]["by_difficulty"]["easy"]["long_sql"] == 0  # computed there: none of its cases is long
    assert suites["shop_a"]["metrics"]["long_share"] == pytest.approx(1 / 3)
    shop_b = suites["shop_b"]
    assert "long_share" not in shop_b["metrics"]
    assert "long_sql" not in shop_b["metrics"]
    assert "long_sql" not in shop_b["by_gold_sql"]
    assert all("long_sql" not in bucket for bucket in shop_b["by_difficulty"].values())
    assert report["overall"]["metrics"]["long_sql"] == 1


@pytest.mark.parametrize("header", ["5", "['short']", "'short\\nSQL'"])
def test_a_breakdown_label_that_is_not_one_line_of_text_is_refused_at_registration(pytester: pytest.Pytester, header):
    """A label, a title or a description that is not one line of text is a usage error naming it; a breakdown
    column's header (breakdown_label) was taken as it was: the Markdown writer then died in a bare traceback
    (TypeError: sequence item 5: expected str instance, int found), and a line break split the table's header."""
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "shop.sqleval.yaml", SUITE)
    pytester.makeconftest(BREAKDOWN_CONFTEST.replace('breakdown_label="short"', f"breakdown_label={header}"))
    result = _run(pytester, "--sqleval-markdown=run.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["ERROR: pytest_sqleval_register_metrics: metric 'short_sql': breakdown_label must be "
                                 "one line of printable text, not *(*conftest.py:2)"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


# A model in the loop (the predictor fixture of README's "your own code instead of an endpoint"), and a streaming
# reporter that checks each final record against the typed record (record.CaseRecord) it is documented to be.
MODEL_CONFTEST = """
import json
import pathlib

import pytest

from pytest_sqleval.record import CaseRecord, record_problem


@pytest.fixture(scope="session")
def sqleval_predictor():
    def predict(case):
        return "Here it is:\\n```sql\\nSELECT count(*) FROM shops\\n```"
    return predict


def pytest_sqleval_case_result(record):
    out = pathlib.Path(__file__).parent / "streamed" / (record["id"] + ".json")
    out.parent.mkdir(exist_ok=True)
    undeclared = sorted(key for key in record if key not in CaseRecord.__annotations__)
    out.write_text(json.dumps({"problem": record_problem(record), "undeclared": undeclared,
                               "extraction": record.get("extraction")}))
"""


@WORKERS
def test_a_model_cases_record_has_the_types_the_typed_record_declares(pytester: pytest.Pytester, workers):
    """CaseRecord declared `extraction` as text while a model's case holds `{mode, step}` (README: `extraction:
    {mode, step}`), and left out two keys the plugin writes (`model_request`, `predicted_as_given`)."""
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "shop.sqleval.yaml", SUITE)
    pytester.makeconftest(MODEL_CONFTEST)
    result = _run(pytester, *workers)
    assert result.ret == 0, result.stdout.str()
    streamed = {p.stem: json.loads(p.read_text()) for p in (pytester.path / "streamed").iterdir()}
    assert sorted(streamed) == ["long-right", "short-right", "short-wrong"]
    for case in streamed.values():
        assert case == {"problem": None, "undeclared": [], "extraction": {"mode": "auto", "step": "fenced"}}


# A user's metric from what the model's call reported: the predictor's tokens and an extra key of its own.
TOKENS_CONFTEST = """
import pytest


@pytest.fixture(scope="session")
def sqleval_predictor():
    def predict(case):
        words = len(case.question or case.id)
        return {"sql": "SELECT count(*) FROM shops", "tokens": {"prompt": 100, "completion": words},
                "confidence": 0.25}
    return predict


def pytest_sqleval_register_metrics(registry):
    registry.register("completion_tokens", kind="mean", population="scored")
    registry.register("confident", kind="rate", population="scored")


def pytest_sqleval_score_case(record):
    record["completion_tokens"] = (record.get("tokens") or {}).get("completion")
    record["confident"] = (record.get("prediction_extra") or {}).get("confidence", 0) > 0.2
"""


@WORKERS
def test_a_score_case_hook_reads_the_models_tokens_and_a_predictors_extra_keys(pytester: pytest.Pytester, workers):
    """The record's model fields (tokens, latency_s, cost, prediction_extra, ...) were added only after every
    pytest_sqleval_score_case had run: a metric of tokens or of a predictor's own key was never computed."""
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "shop.sqleval.yaml", SUITE)
    pytester.makeconftest(TOKENS_CONFTEST)
    result = _run(pytester, "--sqleval-json=report.json", *workers)
    assert result.ret == 0, result.stdout.str()
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    cases = {c["id"]: c for c in report["cases"]}
    assert {i: c["completion_tokens"] for i, c in cases.items()} == {"short-right": 11, "long-right": 10,
                                                                     "short-wrong": 11}
    assert all(c["confident"] is True for c in cases.values())
    assert cases["short-right"]["tokens"] == {"prompt": 100, "completion": 11}  # the record's own, unchanged
    metrics = report["suites"][0]["metrics"]
    assert metrics["completion_tokens"] == pytest.approx(32 / 3) and metrics["confident"] == 1.0


RAISING_WITH_MODEL_CONFTEST = """
import pytest


@pytest.fixture(scope="session")
def sqleval_predictor():
    def predict(case):
        return {"sql": "SELECT count(*) FROM shops", "tokens": {"prompt": 100, "completion": 5}}
    return predict


def pytest_sqleval_score_case(case):
    if case.id == "long-right":
        raise LookupError("my metric broke")


def pytest_sqleval_case_result(record):
    if record["id"] == "short-wrong":
        raise RuntimeError("my reporter broke")
"""


@WORKERS
def test_a_case_a_users_hook_errored_still_counts_its_paid_model_call(pytester: pytest.Pytester, workers):
    """A case whose pytest_sqleval_score_case or pytest_sqleval_case_result raised is that case's error (README);
    its record lost the model's fields, so the suite's model usage counted 2 calls and 2 cases' cost for 3 calls."""
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "shop.sqleval.yaml", SUITE)
    pytester.makeconftest(RAISING_WITH_MODEL_CONFTEST)
    result = _run(pytester, "--sqleval-json=report.json", "--sqleval-price-per-1k-input=1",
                  "--sqleval-price-per-1k-output=1", *workers)
    assert result.ret == 1, result.stdout.str()
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    cases = {c["id"]: c for c in report["cases"]}
    assert {i: c["outcome"] for i, c in cases.items()} == {"short-right": "passed", "long-right": "error",
                                                          "short-wrong": "error"}
    assert "my metric broke" in cases["long-right"]["error"]["message"]
    assert "my reporter broke" in cases["short-wrong"]["error"]["message"]
    assert all(c["tokens"] == {"prompt": 100, "completion": 5} for c in cases.values())
    usage = report["suites"][0]["model"]
    assert (usage["cases"], usage["calls"], usage["tokens"]) == (3, 3, {"prompt": 300, "completion": 15})
    assert usage["cost"] == pytest.approx(3 * 0.105)


@pytest.mark.parametrize("key", ["extraction", "tokens", "error", "clauses"])
def test_a_metric_on_one_of_the_records_mappings_is_refused_at_registration_not_an_error_per_case(key):
    """A model's `extraction` is `{mode, step}` (now declared so in CaseRecord): a metric reading it, or another of
    the record's mappings, could never be aggregated, so it is refused as a text or list key is."""
    from pytest_sqleval.registry import MetricError, builtin_registry

    with pytest.raises(MetricError, match=f"the case record's own '{key}' is a mapping"):
        builtin_registry().register("mine", kind="rate", case_key=key)
    builtin_registry().register("fine", kind="rate", case_key="policy")  # a {"passed": ...} verdict: usable
