"""A threshold is `METRIC=VALUE`: whether it is a minimum or a maximum comes from the metric. A user who writes the
comparison (`soft_f1>=0.5`, `error_count<=2`) was told "unknown metric 'soft_f1>'", and `soft_f1=0_5` was read as 5
(Python's digit grouping): each is now a usage error that says what to write instead, on the command line, in the
ini file and in `sqleval gate`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import make_sqlite

SUITE = """
    database: shop.sqlite
    cases:
      - {id: a, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
    """


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite", "CREATE TABLE shops (name TEXT); INSERT INTO shops VALUES ('a');")
    pytester.makefile(".sqleval.yaml", s=SUITE)
    return pytester


@pytest.mark.parametrize("written, operator, fix", [
    ("soft_f1>=0.5", ">=", "write soft_f1=0.5"),
    ("soft_f1 > 0.5", ">", "write soft_f1=0.5"),
    ("error_count<=2", "<=", "write error_count=2"),
    ("soft_f1==0.5", "==", "write soft_f1=0.5"),
    ("overall:execution_accuracy=>0.8", "=>", "write overall:execution_accuracy=0.8"),
])
def test_a_comparison_operator_is_a_usage_error_naming_the_form_to_write(shop, written, operator, fix):
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider", f"--sqleval-threshold={written}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"a threshold takes no {operator!r}" in err and fix in err
    assert "unknown metric" not in err


def test_the_ini_option_says_the_same(shop):
    shop.makeini("[pytest]\nsqleval_thresholds =\n    soft_f1>=0.5\n")
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "sqleval_thresholds" in result.stderr.str() and "write soft_f1=0.5" in result.stderr.str()


def test_an_underscore_in_the_value_is_no_number(shop):
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-threshold=soft_f1=0_5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "must be a number, not '0_5'" in result.stderr.str() and "0.5?" in result.stderr.str()


def test_sqleval_gate_says_the_same(shop):
    assert shop.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json=r.json").ret == 0
    done = subprocess.run([sys.executable, "-m", "pytest_sqleval.cli", "gate", "r.json", "--threshold",
                           "overall:soft_f1>=0.5"], cwd=shop.path, capture_output=True, text=True)
    assert done.returncode != 0
    assert "a threshold takes no '>='" in done.stderr + done.stdout
    assert "write overall:soft_f1=0.5" in done.stderr + done.stdout


def test_a_tag_holding_a_comparison_character_is_still_a_threshold():
    from pytest_sqleval.thresholds import parse_assignment

    threshold = parse_assignment("by_tag.a>b.execution_accuracy=0.5", "cli")
    assert (threshold.metric, threshold.bound, threshold.value) == ("by_tag.a>b.execution_accuracy", "min", 0.5)


def test_an_overall_threshold_in_a_suite_file_says_where_it_belongs(pytester: pytest.Pytester):
    make_sqlite(pytester.path / "shop.sqlite", "CREATE TABLE shops (name TEXT); INSERT INTO shops VALUES ('a');")
    pytester.makefile(".sqleval.yaml", s="""
        database: shop.sqlite
        thresholds:
          overall:execution_accuracy: 0.5
        cases:
          - {id: a, gold: SELECT name FROM shops}
        """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert "s.sqleval.yaml:3: overall:execution_accuracy: a threshold on the overall figure" in out
    fix = next(line for line in result.outlines if line.strip().startswith("fix:"))
    assert "--sqleval-threshold overall:execution_accuracy=VALUE" in fix and "execution_accuracy: VALUE" in fix
    assert "write `metric: number`" not in out
