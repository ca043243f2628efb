"""The hooks pytest-sqleval adds to pytest (registered with ``pytest_addhooks``).

Implement any of them in a ``conftest.py`` or a plugin, as you would a pytest hook; a hook
implementation may take any subset of the arguments, by name. The plugin's own behaviour is the
first implementation of each: the built-in metrics, profiles and engine backends are registered by
``pytest_sqleval.builtins``, the built-in scoring fills the record before your
``pytest_sqleval_score_case`` runs, and the built-in terminal table of a suite is written before your
``pytest_sqleval_terminal_section`` lines.

Every hook runs in each process that evaluates cases (each xdist worker) or, for the reporting hooks,
in the process that reports (the xdist controller), so keep implementations free of shared state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # pragma: no cover - names for the signatures only
    from .registry import MetricRegistry


@pytest.hookspec(historic=True)
def pytest_sqleval_register_metrics(registry: MetricRegistry, config: pytest.Config) -> None:
    """Register metrics: ``registry.register(name, kind=..., ...)``.

    A registered metric is read from each case's record (``case_key``, by default its name), aggregated per
    suite by its ``kind`` (``rate``: share of true values; ``mean``: mean of scores; ``count``: number of
    true values), shown in the terminal table and the JSON report, usable in ``pass_if`` and gated by
    ``--sqleval-threshold NAME=VALUE`` / a suite's ``thresholds:`` in the metric's ``direction``.
    Put the per-case value in the record with :func:`pytest_sqleval_score_case`.
    """


@pytest.hookspec(historic=True)
def pytest_sqleval_execution_profiles(profiles: dict[str, Any], config: pytest.Config) -> None:
    """Add or change named execution profiles: ``profiles["mine"] = ComparisonOptions(...)``.

    ``profiles`` maps a profile name (what a suite writes in ``execution:``) to a
    :class:`~pytest_sqleval.comparison.ComparisonOptions`; the built-in profiles are in it already.
    """


@pytest.hookspec(historic=True)
def pytest_sqleval_engine_backends(backends: Any, config: pytest.Config) -> None:
    """Register engine backends: ``backends.register(backend)``.

    A backend (see :class:`~pytest_sqleval.execution.backends.base.Backend`) says which database URLs it
    serves (``owns(url)``, a SQLAlchemy ``URL``) and how to open, harden, build and query them, classify their
    errors, read their schema and name their dialect; subclass it and override what differs. ``backends`` is a
    :class:`~pytest_sqleval.execution.backends.BackendRegistry` holding the built-ins already. A backend
    registered later is asked first, so a plugin's backend can serve its own URL scheme or replace a built-in
    one. The killable query process imports only the built-in backends: a backend of yours runs its queries in
    the pytest process unless its ``target(engine)`` names a built-in backend's target.
    """


def pytest_sqleval_score_case(case: Any, suite: Any, prediction: str | None, record: dict[str, Any],
                              context: Any, config: pytest.Config) -> None:
    """Score one case: add fields to its ``record`` (a :class:`~pytest_sqleval.record.CaseRecord` dict).

    Called for every case after the built-in scoring has filled the record (``valid``, ``execution_match``,
    ``soft_f1``, ``exact_match``, ...; and where the prediction came from: ``prediction_source``, a model's
    ``model``, ``raw_output``, ``tokens``, ``latency_s``, ``cost``, a predictor's ``prediction_extra``) and before
    the suite's ``pass_if`` is evaluated, so a rule may use what you add. ``context`` (:class:`~pytest_sqleval.record.ScoreContext`) holds the engines, the gold results and
    the prediction's result (``context.prediction_result``, None when it did not run). ``prediction`` is None
    when the case has none. An exception here is that case's ``error``, never the run's; so is a returned value
    (other than ``record`` itself), which would set nothing.
    """


def pytest_sqleval_case_result(record: dict[str, Any], item: pytest.Item, config: pytest.Config) -> None:
    """A case's final record, with its ``outcome`` (passed/missed/failed/error); for streaming reporters.

    Called in the process that ran the case (an xdist worker), with a copy of the record: changing it changes
    nothing the reports and aggregates read.
    """


def pytest_sqleval_terminal_section(terminalreporter: Any, summary: Any, records: list[dict[str, Any]],
                                    config: pytest.Config) -> None:
    """Write a suite's part of the ``sqleval`` terminal summary.

    ``summary`` is the suite's :class:`~pytest_sqleval.summary.SuiteSummary` (``name``, ``path``,
    ``aggregates``, ``verdicts``, ``passed``); ``records`` its cases' records (under xdist, what a
    ``pytest_sqleval_score_case`` added under keys of its own arrives from the workers as JSON writes it: an object
    of a class of yours as its text). The built-in table is written first; write your own lines with
    ``terminalreporter.write_line(...)``.
    """


def pytest_sqleval_update_json(config: pytest.Config, report: dict[str, Any]) -> None:
    """Change the ``sqleval-report/1`` report dict in place before it is written (``--sqleval-json``) and
    rendered (Markdown, HTML); it holds ``run``, ``suites``, ``cases``, ``overall`` and the gates. What you add
    is written as the rest is (NaN as ``"nan"``, a set as a sorted list); an exception here, or a returned value
    other than ``report`` itself (a new dict is not used), fails the run with a line naming your implementation,
    and no JSON file is written."""


def hook_failure(hook: Any, exc: BaseException) -> str:
    """``pytest_sqleval_x (/path/conftest.py:3) raised RuntimeError: boom``: the implementation whose code raised
    (the innermost traceback frame that runs one of the hook's implementations), for a usage error that names
    the user's conftest.py or plugin instead of a bare traceback."""
    return f"{hook.name}{hook_location(hook, exc)} raised {type(exc).__name__}: {exc}"


def user_hook_raised(hook: Any, exc: BaseException) -> bool:
    """Whether the innermost implementation of ``hook`` in the traceback is not the plugin's own (a user's
    conftest.py or plugin raised, not a bug of ours)."""
    impls = {impl.function.__code__: impl for impl in hook.get_hookimpls() if hasattr(impl.function, "__code__")}
    raised_in = None
    tb = exc.__traceback__
    while tb is not None:
        raised_in = impls.get(tb.tb_frame.f_code, raised_in)
        tb = tb.tb_next
    return raised_in is not None and not raised_in.plugin_name.endswith("pytest_sqleval.builtins")


def hook_location(hook: Any, exc: BaseException) -> str:
    """`` (/path/conftest.py:3)``: where in an implementation of ``hook`` the exception was raised ("" if none)."""
    impls = {impl.function.__code__: impl for impl in hook.get_hookimpls() if hasattr(impl.function, "__code__")}
    where = ""
    tb = exc.__traceback__
    while tb is not None:
        impl = impls.get(tb.tb_frame.f_code)
        if impl is not None:
            path = impl.function.__code__.co_filename
            named = "" if impl.plugin_name == path else f" of plugin {impl.plugin_name!r}"
            where = f" ({path}:{tb.tb_lineno}{named})"
        tb = tb.tb_next
    return where


def shown_value(value: Any, width: int = 80) -> str:
    """A value a hook returned, for a message: its repr, cut to one short line."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a user's object whose repr raises
        text = f"a {type(value).__name__}"
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def hook_implementers(hook: Any) -> str:
    """Where the non-built-in implementations of a hook are (their files), for an error about what they did."""
    files = [getattr(getattr(impl.function, "__code__", None), "co_filename", impl.plugin_name)
             for impl in hook.get_hookimpls() if not impl.plugin_name.endswith("pytest_sqleval.builtins")]
    return f"{hook.name} ({', '.join(files)})" if files else hook.name
