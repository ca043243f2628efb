"""The two entry points of exact match, :func:`exact_match` and :func:`read_gold` (see the package docstring).

Kept out of the package's ``__init__`` so that importing the package (or its light :mod:`.options`, which a
pickled suite refers to) does not import sqlglot and the readers: the xdist controller unpickles suites but
never compares SQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...schema import Schema
from ...sql.limits import bounded_stack, invalid_text
from .options import ExactMatchOptions, resolve_exact_match
from .spider import normalised_gold, spider_exact_match
from .sqleval import gold_shape, sqleval_exact_match
from .verdict import ExactMatchVerdict


@bounded_stack
def exact_match(gold_sql: str, pred_sql: str, schema: Schema, *,
                profile: str | Mapping[str, Any] | ExactMatchOptions | None = "sqleval",
                dialect: str = "sqlite") -> ExactMatchVerdict:
    """Compare ``pred_sql`` with ``gold_sql`` under an exact-match profile.

    A prediction that is no text an engine could read (:func:`~pytest_sqleval.sql.limits.invalid_text`: not
    valid UTF-8, a NUL character) never matches, with reason ``parse_error: <why>``.

    Raises :class:`GoldOutsideGrammar` (profile ``spider``), :class:`GoldParseError`
    or :class:`GoldTooComplex` when the gold cannot be read: an error of the suite.
    """
    options = resolve_exact_match(profile)
    problem = invalid_text(pred_sql)
    if problem is not None:
        # no engine reads such a text, so it never matches, whatever a comment hides (``-- \ud800``, ``/* \0 */``);
        # the gold is read first, as for any prediction: its errors are the suite's, whatever the prediction
        _read_gold_as(options, gold_sql, schema, dialect)
        return ExactMatchVerdict(False, {}, f"parse_error: {problem}")
    if options.profile == "spider":
        return spider_exact_match(gold_sql, pred_sql, schema, options, dialect)
    return sqleval_exact_match(gold_sql, pred_sql, schema, options, dialect)


@bounded_stack
def read_gold(gold_sql: str, schema: Schema, *,
              profile: str | Mapping[str, Any] | ExactMatchOptions | None = "sqleval", dialect: str = "sqlite") -> None:
    """Read ``gold_sql`` as :func:`exact_match` reads its gold, and keep the reading for the comparisons.

    Raises exactly what :func:`exact_match` raises for this gold whatever the prediction (a
    :class:`GoldUnreadable`; :class:`~pytest_sqleval.comparison.OptionError` for a bad profile): exact match
    reads the gold before the prediction and turns every error of the prediction's side into a miss. Costs
    half of ``exact_match(gold_sql, gold_sql, ...)``, the probe it replaces.
    """
    options = resolve_exact_match(profile)
    _read_gold_as(options, gold_sql, schema, dialect)


def _read_gold_as(options: ExactMatchOptions, gold_sql: str, schema: Schema, dialect: str) -> None:
    # one frame as in exact_match -> spider_exact_match / sqleval_exact_match: the same recursion budget
    if options.profile == "spider":
        normalised_gold(gold_sql, schema, dialect)
    else:
        gold_shape(gold_sql, schema, dialect, options.values == "ignore")
