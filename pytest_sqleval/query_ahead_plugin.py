"""Keep the query process working while pytest does its own work between the queries of the cases.

A case makes two round trips to its query process: its gold at setup, its prediction at call. Between them, and
between one case and the next, pytest does its own work (reports, the terminal, teardown, the next item's setup);
the query process would sit idle through it, and the case would then wait for its answer. So:

* at the end of a case's call phase, the next case's gold is sent (``Evaluator.send_gold_ahead``);
* at the end of a case's setup, its prediction is sent (``prefetch_prediction``), when it is known before the
  call (a predictions file, ``predicted:``; not a model's).

These are the very requests the case makes later: its own ``run`` collects the answer (the sandbox matches the
whole request: text, database, limits). Nothing else changes: at most one request is in flight, the wall clock
of a query runs from its send, and an answer nobody asks for is read (or killed on time) before the next send.
Only for items whose fixtures nothing overrides (``collect.CaseItem._sqleval_fast``), so the engine and the gold
side are the ones the case will use; never in the xdist controller (it runs no case).
"""

from __future__ import annotations

import pytest

from .state import sqleval_state


class QueryAhead:
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        if getattr(item, "case", None) is not None:
            item._sqleval_next = nextitem

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item):
        result = yield  # a setup that raised sends nothing
        if getattr(item, "_sqleval_fast", None) is not None:
            _send_prediction(item)
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        try:
            return (yield)
        finally:
            following = getattr(item, "_sqleval_next", None)
            if following is not None:
                item._sqleval_next = None
                if getattr(following, "_sqleval_fast", None) is not None:
                    _send_gold(following)


def _send_prediction(item) -> None:
    """What ``Evaluator.score`` sends first in the call phase, sent now (its limits: ``collect.case_limits``)."""
    from .collect import case_limits

    state = sqleval_state(item.config)
    pending = item.funcargs.get("sqleval_prediction")
    known = getattr(pending, "known", None)  # a model's prediction is known only at call: not sent ahead
    prepared = item.funcargs.get("sqleval_gold")
    if state.settings.check_gold or known is None or prepared is None:
        return  # gold checks run no prediction
    try:
        engines = state.case_engines(item.case, item.funcargs.get("sqleval_engine"),
                                     item.funcargs.get("sqleval_engine_factory"))
        state.evaluator.send_prediction_ahead(item.suite, known.sql, engines, prepared,
                                              **case_limits(state, item.suite))
    except Exception:  # noqa: BLE001 - the case sends it itself, and reports what fails, in its call phase
        return


def _send_gold(item) -> None:
    """The next case's gold, as its setup will send it (its own engine: the factory's, nothing overrides it)."""
    case, suite = item.case, item.suite
    spec = case.database
    if spec is None or spec.setup:
        return  # no database, or one built from setup scripts: built and reported by the case's own setup
    state = sqleval_state(item.config)
    if state.settings.check_gold:
        return
    try:
        engines = state.case_engines(case, state.engines.engine(spec))
        state.evaluator.send_gold_ahead(case, suite, engines, timeout=state.timeout_for(suite),
                                        max_rows=state.max_rows_for(suite), max_memory=state.max_memory_for(suite))
    except Exception:  # noqa: BLE001 - the case's own setup opens the database and reports what fails
        return
