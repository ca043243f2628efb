"""Pytest glue for the fidelity issue: ``--sqleval-efficiency`` (ini ``sqleval_efficiency``) turns on BIRD's
R-VES (``r_ves``) for every suite; a suite turns it on for itself with ``efficiency: true``."""

from __future__ import annotations

import pytest

from .options import OptionGroup


def pytest_addoption(parser: pytest.Parser) -> None:
    group = OptionGroup(parser, "sqleval")
    group.addoption("--sqleval-efficiency", action="store_true", default=None,
                    help="time gold and prediction of every matching case (100 runs each, as BIRD mini-dev does) "
                         "and report BIRD's R-VES as r_ves; slow, off by default.")
    parser.addini("sqleval_efficiency", type="bool", default=False, help="default for --sqleval-efficiency.")


def efficiency_enabled(config: pytest.Config) -> bool:
    option = config.getoption("sqleval_efficiency", None)
    if option is not None:
        return bool(option)
    return bool(config.getini("sqleval_efficiency"))


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    from .state import STATE_KEY

    state = config.stash.get(STATE_KEY, None)
    if state is not None and efficiency_enabled(config):
        state.evaluator.efficiency = True
