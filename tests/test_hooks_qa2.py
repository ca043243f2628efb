"""QA of the extension hooks (issue 8) as a plugin author writes them: hooks in a folder's conftest.py, a plugin
given with ``-p`` whose hooks a conftest.py imports again, and a profiles hook that empties the table."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import make_sqlite
from test_hooks_new_inputs import SUITE, WORKERS

PREDICTIONS = ("SELECT count(*) FROM shops", "SELECT 42", "SELEC name FROM shops")  # SUITE's

FOLDER_CONFTEST = """
def pytest_sqleval_register_metrics(registry):
    registry.register("folder_metric", kind="rate", population="scored")


def pytest_sqleval_score_case(record, suite):
    record["folder_metric"] = suite.name == "shop_a"  # False if it ever scored another folder's suite


def pytest_sqleval_case_result(record):
    with open(__file__ + ".log", "a", encoding="utf-8") as log:
        log.write(record["suite"] + "\\n")
"""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


@WORKERS
def test_a_folders_conftest_scores_and_streams_only_the_suites_of_its_folder(pytester: pytest.Pytester, workers):
    """pytest applies a conftest.py's hooks to the tests of its folder: a/conftest.py's score_case and case_result
    run for a/'s suites, not b/'s, serially and under -n 2 alike."""
    for folder in ("a", "b"):
        make_sqlite(pytester.path / folder / "shop.sqlite")
        _write(pytester.path / folder / f"{folder}.sqleval.yaml", SUITE.replace("suite: shop", f"suite: shop_{folder}"))
    _write(pytester.path / "a" / "conftest.py", FOLDER_CONFTEST)
    path = pytester.path / "report.json"
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={path}", "-p", "no:cacheprovider", *workers)
    assert result.ret == 0, result.stdout.str()
    report = json.loads(path.read_text(encoding="utf-8"))
    suites = {s["name"]: s for s in report["suites"]}
    assert suites["shop_a"]["metrics"]["folder_metric"] == 1.0
    assert "folder_metric" not in suites["shop_b"]["metrics"]
    scored = {(c["suite"], c.get("folder_metric")) for c in report["cases"] if c["outcome"] != "error"}
    assert scored == {("shop_a", True), ("shop_b", None)}
    streamed = (pytester.path / "a" / "conftest.py.log").read_text(encoding="utf-8").split()
    assert sorted(set(streamed)) == ["shop_a"] and len(streamed) == 3


def test_a_plugin_whose_hooks_a_conftest_imports_again_is_named_not_told_to_rename(pytester: pytest.Pytester,
                                                                                 monkeypatch):
    """A plugin given with -p whose hooks a conftest.py imports (`from myplug import *`) registers each metric
    twice from the same function: the error says the function is registered twice, not "pick another name"."""
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "shop.sqleval.yaml", SUITE)
    _write(pytester.path / "plugins" / "myplug.py", """
        def pytest_sqleval_register_metrics(registry):
            registry.register("pred_len", kind="mean")


        def pytest_sqleval_score_case(prediction, record):
            record["pred_len"] = len(prediction or "")
        """)
    _write(pytester.path / "conftest.py", "from myplug import *  # noqa\n")
    monkeypatch.setenv("PYTHONPATH", str(pytester.path / "plugins"))
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "-p", "myplug")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "pytest_sqleval_register_metrics" in err and "'pred_len'" in err
    assert "is registered twice, as plugins 'myplug' and" in err and "myplug.py:1" in err
    assert "register it once" in err and "pick another name" not in err
    assert "Traceback" not in err + result.stdout.str()


def test_the_same_plugin_given_with_p_alone_works_serial_equals_xdist(pytester: pytest.Pytester, monkeypatch):
    """The plugin of the test above, given with -p only: its metric is aggregated the same serially and with -n 2."""
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "shop.sqleval.yaml", SUITE)
    _write(pytester.path / "plugins" / "myplug.py", """
        def pytest_sqleval_register_metrics(registry):
            registry.register("pred_len", kind="mean", population="scored")


        def pytest_sqleval_score_case(prediction, record):
            record["pred_len"] = len(prediction or "")
        """)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path / "plugins"))
    reports = []
    for workers in ([], ["-n", "2"]):
        path = pytester.path / f"report{len(reports)}.json"
        result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={path}", "-p", "no:cacheprovider",
                                               "-p", "myplug", *workers)
        assert result.ret == 0, result.stdout.str()
        reports.append(json.loads(path.read_text(encoding="utf-8")))
    serial, xdist = (r["suites"][0] for r in reports)
    assert serial["metrics"]["pred_len"] == pytest.approx(sum(map(len, PREDICTIONS)) / 3)
    assert serial["metrics"] == xdist["metrics"] and serial["intervals"] == xdist["intervals"]


@pytest.mark.parametrize("body", ['profiles.clear()', 'del profiles["sqleval"]'])
def test_a_profiles_hook_that_removes_the_sqleval_profile_names_the_hook_as_the_fix(pytester: pytest.Pytester, body):
    """A suite without `execution:` uses the table's `sqleval` profile: when a hook removed it, the fix is the hook,
    not "write `execution:` with one of the profiles the message lists" (a list that may be empty)."""
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "shop.sqleval.yaml", SUITE)
    pytester.makeconftest(f"def pytest_sqleval_execution_profiles(profiles):\n    {body}\n")
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "unknown execution profile 'sqleval'" in out
    assert "fix: keep profiles['sqleval'] in your pytest_sqleval_execution_profiles hook" in out
    assert "profiles are: \n" not in out + "\n"


def test_a_profile_a_hook_set_to_a_wrong_type_for_a_suite_without_execution_points_at_the_hook(
        pytester: pytest.Pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "shop.sqleval.yaml", SUITE)
    pytester.makeconftest("def pytest_sqleval_execution_profiles(profiles):\n    profiles['sqleval'] = 'strict'\n")
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert "execution profile 'sqleval' is a str, not ComparisonOptions" in out
    assert "fix: correct profiles['sqleval'] in your pytest_sqleval_execution_profiles hook" in out
    assert "with one of the profiles the message lists" not in out


SHADOW = """
import sqlite3
from pytest_sqleval.execution.backends.base import Backend, Dialect


class ShadowBackend(Backend):
    name = "shadow"
    dialect = Dialect("sqlite", "sqlite")

    def owns(self, url):
        return url.drivername == "shadow+sqlite"

    def open(self, url, *, connect_timeout=10.0):
        {body}


def pytest_sqleval_engine_backends(backends):
    backends.register(ShadowBackend())
"""


@pytest.mark.parametrize("body, said", [
    ('raise RuntimeError("no shadow today")', "raised RuntimeError: no shadow today; fix that open()"),
    ("return None", "returned NoneType, not an engine; return sqlalchemy.create_engine(...)"),
], ids=["raises", "returns-none"])
def test_a_user_backend_whose_open_raises_or_returns_no_engine_names_the_backend_and_its_file(
        pytester: pytest.Pytester, body, said):
    pytester.makeconftest(SHADOW.replace("{body}", body))
    _write(pytester.path / "shop.sqleval.yaml", SUITE.replace("database: shop.sqlite",
                                                              'database: "shadow+sqlite:///shop.sqlite"'))
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert result.ret == 1 and "internal error" not in out and "AttributeError" not in out
    assert (f"case right: cannot open shadow+sqlite:///shop.sqlite: open() of the 'shadow' engine backend "
            f"({pytester.path / 'conftest.py'}) {said}") in out


@pytest.mark.parametrize("name", ["and", "or", "AND", "Or"])
def test_a_metric_named_like_a_pass_if_joiner_is_refused_at_registration(name):
    from pytest_sqleval.registry import MetricError, builtin_registry

    with pytest.raises(MetricError, match=f"metric '{name}': pass_if joins conditions with .*pick another name"):
        builtin_registry().register(name, kind="rate")


def test_a_metric_registered_out_of_pass_if_or_the_reports_is_named_with_the_reason(pytester: pytest.Pytester):
    """`reported=False` is why a threshold cannot name a metric (it was said to be `gateable=False`), and
    `in_pass_if=False` why a rule cannot (it was a bare "unknown metric")."""
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "shop.sqleval.yaml", SUITE)
    pytester.makeconftest("""
        def pytest_sqleval_register_metrics(registry):
            registry.register("hidden", kind="rate", reported=False)
            registry.register("no_rule", kind="rate", in_pass_if=False)
        """)
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-threshold", "hidden=0.5")
    assert "'hidden' is registered with reported=False (no aggregate), so it cannot be gated" in result.stderr.str()
    assert "gateable=False" not in result.stderr.str()
    _write(pytester.path / "rule.sqleval.yaml", SUITE.replace("suite: shop", "suite: rule\npass_if: no_rule"))
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "rule.sqleval.yaml")
    assert "unknown metric 'no_rule' in pass_if: it is registered with in_pass_if=False" in result.stdout.str()


PROFILES_CONFTEST = """
from dataclasses import replace


def pytest_sqleval_execution_profiles(profiles):
    profiles["mine"] = replace(profiles["sqleval"], duplicates="set")
    profiles["sqleval"] = replace(profiles["sqleval"], nulls="distinct")
"""


def _folders(pytester: pytest.Pytester) -> None:
    """a/, m/ and z/, each with a suite; m/conftest.py adds `mine` (which m's suite names) and changes `sqleval`."""
    for folder in ("a", "m", "z"):
        make_sqlite(pytester.path / folder / "shop.sqlite")
        head = f"suite: shop_{folder}" + ("\nexecution: mine" if folder == "m" else "")
        _write(pytester.path / folder / f"{folder}.sqleval.yaml", SUITE.replace("suite: shop", head))
    _write(pytester.path / "m" / "conftest.py", PROFILES_CONFTEST)


def _suites(pytester: pytest.Pytester, *args: str) -> dict:
    path = pytester.path / "report.json"
    path.unlink(missing_ok=True)
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={path}", "-p", "no:cacheprovider", *args)
    assert result.ret == 0 and "INTERNALERROR" not in result.stdout.str() + result.stderr.str(), result.stdout.str()
    return {s["name"]: s["execution"] for s in json.loads(path.read_text(encoding="utf-8"))["suites"]}


def test_a_folders_profiles_are_its_suites_whatever_the_order_of_collection(pytester: pytest.Pytester):
    """m/conftest.py's profiles were used by every suite pytest collected after m/ (z/, not a/): the same suite was
    compared one way in `pytest z m` and another in `pytest`. They are m/'s suites' profiles, as pytest applies a
    conftest.py's hooks."""
    _folders(pytester)
    whole = _suites(pytester)
    assert whole["shop_m"]["duplicates"] == "set" and whole["shop_m"]["nulls"] == "equal"
    assert whole["shop_a"]["nulls"] == whole["shop_z"]["nulls"] == "equal"
    assert _suites(pytester, "z", "m", "a") == whole


def test_a_profile_of_a_folders_conftest_under_xdist_is_the_serial_runs_not_an_internal_error(pytester):
    """The xdist controller never loads m/conftest.py: it read m's suite again and stopped on `execution: mine`
    (INTERNALERROR: unknown execution profile 'mine'). It summarises the suite its workers collected."""
    _folders(pytester)
    assert _suites(pytester, "-n", "2") == _suites(pytester)


def test_a_threshold_on_a_metric_of_a_folders_conftest_says_why_it_is_unknown_and_the_fix(pytester: pytest.Pytester):
    """The README says the command line and the ini file are checked before the folders below are collected; the
    error said only "unknown metric", about a metric the user can see registered in sub/conftest.py."""
    make_sqlite(pytester.path / "sub" / "shop.sqlite")
    _write(pytester.path / "sub" / "shop.sqleval.yaml", SUITE.replace("suite: shop", "suite: shop_a"))
    _write(pytester.path / "sub" / "conftest.py", FOLDER_CONFTEST)
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-threshold",
                                           "folder_metric=0.5")
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown metric 'folder_metric'" in err
    assert "a metric registered by a conftest.py below the rootdir is not known yet" in err
    assert "register it in the rootdir's conftest.py or a plugin, or gate it in its suites' `thresholds:`" in err
    _write(pytester.path / "sub" / "shop.sqleval.yaml", SUITE.replace(
        "suite: shop", "suite: shop_a\nthresholds: {folder_metric: 0.5}"))
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider")
    assert result.ret == 0 and "PASS folder_metric 1.00 >= 0.50" in result.stdout.str()
