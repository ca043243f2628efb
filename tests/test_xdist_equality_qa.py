"""QA (xdist equality): the report of a run does not depend on the order pytest collects the suites in, nor on how
xdist spreads them. Metrics registered by conftest.py files in several folders come in one order whether a folder's
conftest.py was loaded at start (the folder named on the command line) or while collecting."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import make_sqlite
from test_xdist_equality_fourth_look import comparable, summary_lines

CONFTEST = '''
def pytest_sqleval_register_metrics(registry):
    registry.register("{name}", kind="mean", direction="lower", label="{name} label")


def pytest_sqleval_score_case(prediction, record):
    record["{name}"] = len(prediction or "") / {div}
'''

SUITE = """
suite: {name}
database: {db}
cases:
  - {{id: {name}1, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops"}}
  - {{id: {name}2, gold: "SELECT count(*) FROM tickets", predicted: "SELECT 5"}}
  - {{id: {name}3, gold: "SELECT name FROM shops", predicted: "SELEC name FROM shops"}}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makeconftest(CONFTEST.format(name="root_metric", div=100))
    pytester.makefile(".sqleval.yaml", top=textwrap.dedent(SUITE.format(name="top", db="shop.sqlite")))
    for folder, div in (("alpha", 50), ("beta", 70)):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / "conftest.py").write_text(CONFTEST.format(name=f"{folder}_metric", div=div))
        (pytester.path / folder / f"{folder}.sqleval.yaml").write_text(
            textwrap.dedent(SUITE.format(name=folder, db="../shop.sqlite")))
    return pytester


def _run(pytester: pytest.Pytester, *args: str):
    path = pytester.path / "report.json"
    path.unlink(missing_ok=True)
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    result = runner("--sqleval", f"--sqleval-json={path}", "-p", "no:cacheprovider", *args)
    return result, json.loads(path.read_text())


def test_folder_conftest_metrics_keep_one_order_whatever_the_collection_order(project):
    result, reference = _run(project)  # every conftest.py below the rootdir is loaded while collecting
    assert list(reference["metric_definitions"]) == ["root_metric", "alpha_metric", "beta_metric"]
    assert list(reference["overall"]["metrics"])[-3:] == ["root_metric", "alpha_metric", "beta_metric"]
    expected = json.dumps(comparable(reference))
    lines = summary_lines(result.stdout.str())
    # the folders named on the command line (their conftest.py files loaded at start, in another order), serially
    # and under xdist's schedulers
    for args in (("beta", "alpha", "top.sqleval.yaml"), ("beta", "alpha", "top.sqleval.yaml", "-n", "2"),
                 ("beta/beta.sqleval.yaml", "top.sqleval.yaml", "alpha", "-n", "2", "--dist", "loadfile")):
        result, report = _run(project, *args)
        assert json.dumps(comparable(report)) == expected, args
        assert summary_lines(result.stdout.str()) == lines, args


def test_a_selection_hashes_the_same_files_serially_and_in_parallel(project):
    """`-k` leaves whole suites without a case to run: the run block still names every collected suite's files (and
    its databases), under xdist as serially, so a baseline comparison warns the same."""
    _, serial = _run(project, "-k", "alpha1 or alpha2")
    assert {"top.sqleval.yaml", "beta/beta.sqleval.yaml", "shop.sqlite"} <= set(serial["run"]["files"])
    for args in (("-n", "2"), ("-n", "2", "--dist", "worksteal")):
        _, parallel = _run(project, "-k", "alpha1 or alpha2", *args)
        assert parallel["run"]["files"] == serial["run"]["files"], args
        assert json.dumps(comparable(parallel)) == json.dumps(comparable(serial)), args


def test_a_predictions_file_matching_no_case_never_leaves_a_passing_report(project):
    """Serially an unknown prediction id stops the run (exit 2, no report). xdist goes on to the summary with no case
    run: that report must be incomplete, its gate failing, never a report with nothing in it that passes."""
    (project.path / "typo.jsonl").write_text('{"id": "alpha1", "sql": "SELECT 1"}\n{"id": "nope", "sql": "SELECT 1"}\n')
    result, report = _run(project, "--sqleval-predictions=typo.jsonl", "-n", "2")
    assert result.ret == 1
    assert report["cases"] == [] and "typo.jsonl" in report["run"]["incomplete"]
    assert [(g["name"], g["passed"]) for g in report["gates"]] == [("overall::incomplete", False)]
