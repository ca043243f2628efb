"""Exact set match: is the predicted SQL the gold SQL, clause by clause?

``exact_match(gold_sql, pred_sql, schema, *, profile="sqleval", dialect="sqlite")``
returns an :class:`ExactMatchVerdict` with one boolean per component and a
reason for a miss. ``profile`` is a profile name, a mapping
``{"profile": ..., <option>: value}`` or resolved :class:`ExactMatchOptions`.

* ``spider`` reproduces the official Spider / test-suite-sql-eval metric,
  quirks included (:mod:`.spider`); options ``value_placeholder`` and
  ``legacy_from_check`` (:mod:`.options`).
* ``sqleval`` (default) compares any SQL without the official shortcuts
  (:mod:`.sqleval`); option ``values: ignore``.

Component keys (``clauses``): select, select_no_agg, where, where_no_op,
group_no_having, group, order, and_or, iuen, keywords, from; ``sqleval`` adds
join_on, limit and distinct.

Scoring is bounded (:mod:`pytest_sqleval.sql.limits`): a prediction beyond
the limits, or one that fails to be read for any other reason, scores 0 with
a reason (``nested too deeply to score (...)``, ``too long to score (...)``,
``too complex to score (...)``); a gold beyond them raises
:class:`GoldTooComplex`. Nothing but :class:`GoldUnreadable` (and
:class:`~pytest_sqleval.comparison.OptionError` for a bad profile) is
ever raised.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .options import EXACT_MATCH_PROFILES, ExactMatchOptions, resolve_exact_match

if TYPE_CHECKING:  # pragma: no cover
    from .match import exact_match, read_gold
    from .verdict import ExactMatchVerdict, GoldOutsideGrammar, GoldParseError, GoldTooComplex, GoldUnreadable

__all__ = [
    "EXACT_MATCH_PROFILES", "ExactMatchOptions", "ExactMatchVerdict", "GoldOutsideGrammar", "GoldParseError",
    "GoldTooComplex", "GoldUnreadable", "exact_match", "read_gold", "resolve_exact_match",
]

#: Names loaded on first use (PEP 562): they import sqlglot, which a process that only reads suites (the xdist
#: controller unpickling them) never needs.
_LAZY = {
    "exact_match": ".match", "read_gold": ".match",
    "ExactMatchVerdict": ".verdict", "GoldOutsideGrammar": ".verdict", "GoldParseError": ".verdict",
    "GoldTooComplex": ".verdict", "GoldUnreadable": ".verdict",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
