"""The plugin's own behaviour as the first implementations of its hooks (:mod:`pytest_sqleval.hookspec`).

Registered beside the plugin (``plugin.pytest_plugins``) and kept light at import: the work is imported
inside each hook. A user's implementation of the same hook runs after these (they are ``tryfirst``), so it
sees the built-in metrics in the registry, the built-in fields in a case's record, and writes its terminal
lines below the built-in table.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_sqleval_register_metrics(registry: Any) -> None:
    from .registry import BUILTIN_METRICS

    for metric in BUILTIN_METRICS:
        registry.add(metric)


@pytest.hookimpl(tryfirst=True)
def pytest_sqleval_execution_profiles(profiles: dict[str, Any]) -> None:
    """sqleval, test-suite, bird, mro, logiccat (and the other named profiles of comparison.py)."""
    from .comparison import builtin_profiles

    profiles.update(builtin_profiles())


@pytest.hookimpl(tryfirst=True)
def pytest_sqleval_engine_backends(backends: Any) -> None:
    """SQLite, DuckDB, PostgreSQL and any other SQLAlchemy URL (generic: registered first, asked last)."""
    from .execution.backends import BUILTIN_BACKENDS

    for backend in BUILTIN_BACKENDS:
        backends.register(backend)


@pytest.hookimpl(tryfirst=True)
def pytest_sqleval_score_case(case: Any, suite: Any, prediction: str | None, record: dict[str, Any],
                              context: Any) -> None:
    """Execution accuracy, soft F1, exact match, hardness, R-VES, the policy: :meth:`Evaluator.score`."""
    limits = context.limits
    record.update(context.evaluator.score(
        case, suite, prediction, context.engines, context.prepared, timeout=limits["timeout"],
        max_rows=limits["max_rows"], database=context.database, max_memory=limits["max_memory"],
        allow_functions=limits["allow_functions"], prediction_error=context.prediction_error, context=context,
    ))
    from .registry import MetricError, active_registry

    for metric in active_registry().scored():  # metrics registered with their own score(record, context)
        try:
            record[metric.case_key or metric.name] = metric.score(record, context)
        except Exception as exc:  # noqa: BLE001 - the case's error, naming the metric whose code failed
            raise MetricError(f"metric {metric.name!r}: its score() raised {type(exc).__name__}: {exc}") from exc


@pytest.hookimpl(tryfirst=True)
def pytest_sqleval_terminal_section(terminalreporter: Any, summary: Any, records: list[dict[str, Any]],
                                    config: pytest.Config) -> None:
    """The suite's metrics table, breakdowns, misses and threshold verdicts."""
    from .report.terminal import write_suite
    from .state import sqleval_state

    verbose = config.option.verbose > 0 or sqleval_state(config).settings.diff
    write_suite(terminalreporter, summary, records, verbose=verbose, exit_status=sqleval_state(config).exit_status)
