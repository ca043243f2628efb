"""A Ctrl-C stops an evaluated run with pytest's "interrupted" status, even when a library turns it into another
error on its way up (SQLAlchemy closing a connection whose ROLLBACK the interrupt cut short raises an
AssertionError): the cleanup has dropped the run's databases by then, so going on would only report every later
case as "cannot connect"."""

from __future__ import annotations

import textwrap

import pytest

from conftest import make_sqlite

SWALLOWING_CONFTEST = """
import os
import signal
import time

import pytest


@pytest.fixture(autouse=True)
def library_that_swallows_interrupts(request):
    if request.node.name.endswith("{phase_case}") and "{phase}" == "setup":
        _interrupted_then_swallowed()
    yield
    if request.node.name.endswith("{phase_case}") and "{phase}" == "teardown":
        _interrupted_then_swallowed()


def _interrupted_then_swallowed():
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # the handler runs here
    except KeyboardInterrupt:
        raise AssertionError("a library's own error, raised while handling the interrupt")
"""


@pytest.fixture
def suite(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent("""
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT count(*) FROM tickets, predicted: SELECT count(*) FROM tickets}
          - {id: b, gold: SELECT count(*) FROM shops, predicted: SELECT count(*) FROM shops}
          - {id: c, gold: SELECT 3, predicted: SELECT 3}
    """))


@pytest.mark.parametrize("phase", ["setup", "teardown"])
def test_an_interrupt_a_library_swallowed_still_stops_the_run(pytester, suite, phase):
    pytester.makeconftest(SWALLOWING_CONFTEST.format(phase=phase, phase_case="a"))
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    assert "KeyboardInterrupt" in result.stdout.str()
    # the run stopped at the interrupted case: b and c never ran, and no case reports a connection error
    result.stdout.no_fnmatch_line("*cannot connect*")
    # (a's call passed before its teardown was interrupted)
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*", "*no tests ran*" if phase == "setup" else "*1 passed*"])
    result.stdout.no_fnmatch_line("*2 passed*")


def test_without_an_interrupt_the_wrappers_change_nothing(pytester, suite):
    pytester.makeconftest(SWALLOWING_CONFTEST.format(phase="call", phase_case="a"))
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
