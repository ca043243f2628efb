"""--sqleval-check-gold: one finding per problem, exit status non-zero only for broken golds."""

from __future__ import annotations

import textwrap

import pytest

from conftest import make_sqlite

SUITE = """
database: shop.sqlite
cases:
  - {id: fine, gold: "SELECT name FROM shops ORDER BY id"}
  - {id: nothing, gold: "SELECT name FROM shops WHERE id > 100"}
  - {id: single-null, gold: "SELECT max(hours) FROM tickets WHERE id > 100"}
  - {id: zero, gold: "SELECT count(*) FROM tickets WHERE id > 100"}
  - {id: unordered-limit, gold: "SELECT aircraft FROM tickets LIMIT 2"}
  - {id: tie-at-cut, gold: "SELECT aircraft, hours FROM tickets ORDER BY hours DESC LIMIT 3"}
  - {id: no-tie, gold: "SELECT aircraft, hours FROM tickets ORDER BY hours DESC LIMIT 2"}
  - {id: hidden-tie, gold: "SELECT id FROM tickets ORDER BY hours DESC LIMIT 3"}
  - {id: big, gold: "SELECT * FROM tickets"}
"""
# hours: 2.5, 4.0, 8.0, 1.5, 3.0, 3.0 -> descending 8.0, 4.0, 3.0, 3.0, ...: a tie between rows 3 and 4


@pytest.fixture
def gold_suite(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", gold=textwrap.dedent(SUITE))
    return pytester


def run(pytester, *args):
    report = pytester.path / "r.json"
    result = pytester.runpytest("--sqleval", "--sqleval-check-gold", f"--sqleval-json={report}", "-p",
                                "no:cacheprovider", *args)
    return result


def findings(pytester, *args):
    result = run(pytester, "--sqleval-gold-size=5", *args)
    by_case = {}
    for line in result.stdout.lines:
        if line.startswith(("warning ", "BROKEN ")):
            _, rest = line.split(" ", 1)
            case, kind = rest.split(": ", 2)[:2]
            by_case.setdefault(case, []).append(kind)
    return result, by_case


def test_each_finding(gold_suite):
    result, by_case = findings(gold_suite)
    assert by_case == {
        "nothing": ["empty"],
        "single-null": ["single_null"],
        "zero": ["single_zero"],
        "unordered-limit": ["limit_without_order"],
        "tie-at-cut": ["ties_at_limit"],
        "hidden-tie": ["ties_at_limit"],
        "big": ["large"],
    }
    assert result.ret == pytest.ExitCode.OK  # warnings only
    assert result.parseoutcomes() == {"passed": 2, "flagged": 7}
    result.stdout.fnmatch_lines(["*9 gold queries checked: 0 broken, 7 with warnings*"])


def test_broken_golds_fail_the_run(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", gold=textwrap.dedent("""
        database: shop.sqlite
        cases:
          - {id: fine, gold: "SELECT 1"}
          - {id: fails, gold: "SELECT nope FROM shops"}
          - {id: unstable, gold: "SELECT random()"}
    """))
    result = run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"passed": 1, "failed": 1, "errors": 1}
    result.stdout.fnmatch_lines(["*BROKEN fails: the gold query failed*no such column: nope*"])
    result.stdout.fnmatch_lines(["*BROKEN unstable: unstable: two runs of the gold returned different results*"])


def test_check_gold_ignores_predictions_and_gates(gold_suite):
    (gold_suite.path / "gold.sqleval.yaml").write_text(
        textwrap.dedent(SUITE).replace("database: shop.sqlite", "database: shop.sqlite\nthresholds: {execution_accuracy: 1.0}")
    )
    result = run(gold_suite, "-k", "fine")
    assert result.ret == pytest.ExitCode.OK
    assert "FAIL" not in result.stdout.str()


def test_every_accepted_gold_is_checked(pytester):
    """`gold: [sql1, sql2]`: the second gold's findings are reported too, each naming which gold it is about."""
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", golds=textwrap.dedent("""
        database: shop.sqlite
        cases:
          - id: second-vacuous
            gold: ["SELECT name FROM shops ORDER BY id", "SELECT name FROM shops WHERE id > 100"]
          - id: both-limited
            gold: ["SELECT aircraft FROM tickets LIMIT 2", "SELECT aircraft, hours FROM tickets ORDER BY hours DESC LIMIT 3"]
          - id: one-gold
            gold: "SELECT name FROM shops WHERE id > 100"
    """))
    result = run(pytester)
    result.stdout.fnmatch_lines([
        "*second-vacuous: empty*gold #2: returns no rows*",
        "*both-limited: limit_without_order*gold #1: LIMIT 2 without ORDER BY*",
        "*both-limited: ties_at_limit*gold #2: *",
    ])
    assert not [line for line in result.stdout.lines if "second-vacuous" in line and "gold #1" in line]
    one = [line for line in result.stdout.lines if line.startswith("warning one-gold")]
    assert one and "gold #" not in one[0]
    assert result.ret == 0
