"""Nothing aborts a run: an exception while scoring, a crashed xdist worker, a failing teardown,
``--dist each``, an unwritable report path. Every case is scored or errored exactly once, the report
is written, and the exit status says what happened. Run through pytester as a user runs it.
"""

from __future__ import annotations

import json

import pytest

from conftest import SHOP_SQL

pytest_plugins = ["pytester"]

SUITE = """
database: shop.sqlite
cases:
  - {id: a, gold: "SELECT name FROM shops ORDER BY name", predicted: "SELECT name FROM shops ORDER BY name"}
  - {id: b, gold: "SELECT count(*) FROM tickets", predicted: "SELECT count(*) FROM tickets"}
  - {id: c, gold: "SELECT count(*) FROM shops", predicted: "SELECT 99"}
  - {id: d, gold: "SELECT 1", predicted: "SELECT 1"}
"""

#: A conftest that makes scoring raise for case b, the way a bug of ours or a RecursionError would.
BOOM_CONFTEST = """
import pytest_sqleval.evaluate as evaluate

_original = evaluate.exact_match_fields

def _boom(case, *args, **kwargs):
    if case.id == "b":
        raise {error}
    return _original(case, *args, **kwargs)

evaluate.exact_match_fields = _boom
"""


@pytest.fixture
def project(pytester):
    import sqlite3

    conn = sqlite3.connect(pytester.path / "shop.sqlite")
    conn.executescript(SHOP_SQL)
    conn.close()
    pytester.makefile(".sqleval.yaml", suite=SUITE)
    return pytester


def _report(pytester):
    return json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("error", [
    "RecursionError('maximum recursion depth exceeded')",
    "MemoryError()",
    "AttributeError(\"'NoneType' object has no attribute 'args'\")",
    "KeyError('select')",
])
@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_an_exception_while_scoring_is_that_case_s_error_and_the_run_goes_on(project, error, xdist):
    project.makeconftest(BOOM_CONFTEST.format(error=error))
    result = project.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json", "-p", "xdist", *xdist)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    assert "Traceback" not in output
    assert result.ret == 1
    report = _report(project)
    by_id = {c["id"]: c for c in report["cases"]}
    assert sorted(by_id) == ["a", "b", "c", "d"]
    assert by_id["b"]["outcome"] == "error"
    assert by_id["b"]["error"]["kind"] == "internal"
    assert "internal error while scoring" in by_id["b"]["error"]["message"]
    assert [by_id[k]["outcome"] for k in "acd"] == ["passed", "missed", "passed"]
    assert "case b: internal error while scoring" in output


def test_a_traceback_is_shown_when_asked_for(project):
    project.makeconftest(BOOM_CONFTEST.format(error="KeyError('select')"))
    result = project.runpytest_subprocess("--sqleval", "--tb=long")
    assert "def _boom" in result.stdout.str()


CRASH_CONFTEST = """
import os
import pytest

@pytest.fixture(autouse=True)
def _crash_on_b(request):
    if getattr(request.node, "case", None) is not None and request.node.case.id == "b" and os.environ.get("PYTEST_XDIST_WORKER"):
        os._exit(3)
    yield
"""


@pytest.mark.parametrize("dist", ["load", "loadfile", "worksteal", "loadscope"])
def test_a_crashed_worker_s_case_is_an_error_record_and_the_run_finishes(project, dist):
    project.makeconftest(CRASH_CONFTEST)
    result = project.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json", "-p", "xdist", "-n", "2",
                                          "--dist", dist, timeout=120)
    assert result.ret == 1
    report = _report(project)
    by_id = {c["id"]: c for c in report["cases"]}
    assert sorted(by_id) == ["a", "b", "c", "d"], sorted(by_id)
    assert by_id["b"]["outcome"] == "error"
    assert "worker crashed" in by_id["b"]["error"]["message"]
    assert by_id["a"]["outcome"] == "passed" and by_id["c"]["outcome"] == "missed"
    assert report["suites"][0]["outcomes"]["error"] == 1
    assert result.stdout.str().count("crashed while running") <= 2  # reported, never rerun on every replacement


def test_dist_each_counts_every_case_once(project):
    result = project.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json", "-p", "xdist", "-n", "2",
                                          "--dist", "each")
    assert result.ret == 0
    report = _report(project)
    assert sorted(c["id"] for c in report["cases"]) == ["a", "b", "c", "d"]
    assert report["suites"][0]["cases"] == 4


TEARDOWN_CONFTEST = """
import pytest

@pytest.fixture(autouse=True)
def _failing_teardown():
    yield
    raise RuntimeError("teardown broke")
"""


def test_a_failing_teardown_does_not_duplicate_records(project):
    project.makeconftest(TEARDOWN_CONFTEST)
    project.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json")
    report = _report(project)
    assert sorted(c["id"] for c in report["cases"]) == ["a", "b", "c", "d"]
    assert report["suites"][0]["cases"] == 4


def test_a_json_path_that_is_a_directory_is_a_usage_error(project):
    (project.path / "out").mkdir()
    result = project.runpytest_subprocess("--sqleval", "--sqleval-json", "out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "is a directory" in result.stderr.str()
    assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()


def test_a_json_path_below_a_file_is_a_usage_error_before_the_run(project):
    (project.path / "blocker").write_text("a file, not a directory")
    result = project.runpytest_subprocess("--sqleval", "--sqleval-json", "blocker/report.json")
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--sqleval-json blocker/report.json: blocker is a file, not a folder" in result.stderr.str()


def test_a_json_path_that_becomes_unwritable_fails_the_run_with_a_message(project):
    (project.path / "out").mkdir()
    project.makeconftest("""
        import shutil
        from pathlib import Path

        def pytest_sessionstart(session):  # after the plugin checked the path: the folder becomes a file
            shutil.rmtree("out")
            Path("out").write_text("a file now")
    """)
    result = project.runpytest_subprocess("--sqleval", "--sqleval-json", "out/report.json")
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    assert "cannot write the JSON report" in output
    assert result.ret == 1


OVERRIDE_CONFTEST = """
import pytest
from sqlalchemy import create_engine

@pytest.fixture
def sqleval_engine():
    return create_engine("sqlite:///other.sqlite")
"""


def test_an_overridden_engine_is_named_in_the_report(project):
    import sqlite3

    conn = sqlite3.connect(project.path / "other.sqlite")
    conn.executescript(SHOP_SQL)
    conn.close()
    project.makeconftest(OVERRIDE_CONFTEST)
    result = project.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json")
    assert result.ret == 0
    databases = {c["database"] for c in _report(project)["cases"]}
    assert databases == {"sqlite:///other.sqlite (from the sqleval_engine fixture)"}


def test_a_never_ending_prediction_is_stopped_and_the_run_goes_on(pytester):
    """A prediction one SQLite step long, which the engine's interrupt cannot stop: killed at timeout + grace."""
    import sqlite3
    import time

    conn = sqlite3.connect(pytester.path / "shop.sqlite")
    conn.executescript(SHOP_SQL)
    conn.close()
    slow = "SELECT replace(hex(zeroblob(1000000)),'0','a') LIKE '%' || replace(hex(zeroblob(5000)),'0','a') || 'b'"
    pytester.makefile(".sqleval.yaml", suite=f"""
database: shop.sqlite
timeout: 1
cases:
  - {{id: slow, gold: "SELECT 1", predicted: "{slow}"}}
  - {{id: fine, gold: "SELECT 1", predicted: "SELECT 1"}}
""")
    started = time.monotonic()
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json")
    elapsed = time.monotonic() - started
    by_id = {c["id"]: c for c in _report(pytester)["cases"]}
    assert by_id["slow"]["error"]["kind"] == "timeout"
    assert by_id["slow"]["valid"] is False
    assert by_id["fine"]["outcome"] == "passed"
    assert result.ret == 0
    assert elapsed < 30
