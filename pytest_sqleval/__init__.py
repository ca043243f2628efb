"""pytest-sqleval: evaluate text-to-SQL models in pytest.

The public API, for scripts and ordinary tests (loaded on first use, so that
installing the plugin costs a pytest run nothing)::

    from pytest_sqleval import QueryResult, compare_results, soft_f1, EXECUTION_PROFILES
    verdict = compare_results(gold, pred, EXECUTION_PROFILES["bird"], ordered=False)
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "QueryResult": "pytest_sqleval.results",
    "Schema": "pytest_sqleval.schema",
    "ComparisonOptions": "pytest_sqleval.comparison",
    "EXECUTION_PROFILES": "pytest_sqleval.comparison",
    "resolve_execution": "pytest_sqleval.comparison",
    "compare_results": "pytest_sqleval.assertions",  # the metric's, its verdict remembered for --assert=plain
    "ExecutionVerdict": "pytest_sqleval.metrics.execution_match",
    "soft_f1": "pytest_sqleval.metrics.soft_f1",
    "exact_match": "pytest_sqleval.metrics.exact_match",
    "ExactMatchVerdict": "pytest_sqleval.metrics.exact_match",
    "spider_hardness": "pytest_sqleval.metrics.hardness",
    "load_suite": "pytest_sqleval.loader",
    "run_query": "pytest_sqleval.execution.runner",
    "QueryError": "pytest_sqleval.errors",
    "GoldError": "pytest_sqleval.errors",  # what the assertion helpers raise for a broken gold query
    "DatabaseError": "pytest_sqleval.errors",  # ... and for a database they cannot open or read
    "SuiteError": "pytest_sqleval.errors",
    "assert_execution_match": "pytest_sqleval.assertions",
    "assert_exact_match": "pytest_sqleval.assertions",
    "assert_soft_f1": "pytest_sqleval.assertions",
    "assert_policy": "pytest_sqleval.assertions",
    "check_execution_match": "pytest_sqleval.assertions",
    "check_exact_match": "pytest_sqleval.assertions",
    "check_soft_f1": "pytest_sqleval.assertions",
    "check_policy_of": "pytest_sqleval.assertions",
    "ExecutionMatchCheck": "pytest_sqleval.assertions",
    "ExactMatchCheck": "pytest_sqleval.assertions",
    "SoftF1Check": "pytest_sqleval.assertions",
    "PolicyCheck": "pytest_sqleval.assertions",
    "SqlevalAssertionError": "pytest_sqleval.assertions",
    "Policy": "pytest_sqleval.policy",
    "PolicyVerdict": "pytest_sqleval.policy",
    "check_policy": "pytest_sqleval.assertions",  # the policy's, its verdict remembered for --assert=plain
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_sqleval' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
