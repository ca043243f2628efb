"""Issue 10, a gate that cannot be fooled: `sqleval gate` on the report of a run that evaluated nothing (a `-k` that
selected no case; pytest itself exits 5 on that run) fails when a gate was asked for, instead of passing with "no
gates configured". Through pytest --sqleval as a user runs it, then the `sqleval` command."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_sqleval.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "example_suites" / "mro"


@pytest.fixture
def empty_report(pytester: pytest.Pytester) -> Path:
    shutil.copytree(EXAMPLE, pytester.path / "mro")
    result = pytester.runpytest_subprocess("--sqleval", "mro", "-k", "no_case_is_named_so", "--sqleval-json=r.json",
                                           "-p", "no:cacheprovider", "--sqleval-threshold", "execution_accuracy=0.5")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    return pytester.path / "r.json"


def test_the_recorded_threshold_of_an_empty_run_fails_the_gate(empty_report, capsys):
    assert main(["gate", str(empty_report)]) == 1
    assert "the report holds no case" in capsys.readouterr().out


def test_a_threshold_given_to_the_gate_fails_on_an_empty_report(empty_report, capsys):
    assert main(["gate", str(empty_report), "--threshold", "overall:execution_accuracy=0.1"]) == 1
    assert "no gate can pass on it" in capsys.readouterr().out


def test_an_empty_report_without_any_gate_asked_still_passes(pytester: pytest.Pytester, capsys):
    shutil.copytree(EXAMPLE, pytester.path / "mro")
    pytester.runpytest_subprocess("--sqleval", "mro", "-k", "no_case_is_named_so", "--sqleval-json=r.json",
                                  "-p", "no:cacheprovider")
    assert main(["gate", str(pytester.path / "r.json")]) == 0
    assert "no gates configured" in capsys.readouterr().out
