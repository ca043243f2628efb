"""What exact match returns, and the errors it raises for a gold it cannot read.

``ExactMatchVerdict.clauses`` has one boolean per component, under stable
snake_case keys (:data:`SPIDER_CLAUSES` for the ``spider`` profile, those plus
:data:`SQLEVAL_EXTRA_CLAUSES` for ``sqleval``). ``reason`` says why a
prediction did not match: ``parse_error: ...`` (sqlglot cannot read it),
``outside_spider_grammar: <construct>`` (the official Spider parser cannot
read it, so the official evaluator scores it 0), ``clauses differ: ...``, or,
for a prediction that cannot be scored at all, ``nested too deeply to score
(...)``, ``too long to score (...)``, ``too complex to score (...)`` (the
limits of :mod:`pytest_sqleval.sql.limits`) or ``could not be scored: ...``
(an unexpected error, which is a bug of ours: please report it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...sql.limits import SqlTooComplex, too_complex_reason

#: The ten official components, then the official FROM table-unit check.
SPIDER_CLAUSES: tuple[str, ...] = (
    "select", "select_no_agg", "where", "where_no_op", "group_no_having", "group",
    "order", "and_or", "iuen", "keywords", "from",
)

#: Components the ``sqleval`` profile adds to the Spider decomposition.
SQLEVAL_EXTRA_CLAUSES: tuple[str, ...] = ("join_on", "limit", "distinct")


@dataclass(frozen=True)
class ExactMatchVerdict:
    """``match`` is true when every component in ``clauses`` is true."""

    match: bool
    clauses: dict[str, bool] = field(default_factory=dict)
    reason: str | None = None


def verdict_from_clauses(clauses: dict[str, bool]) -> ExactMatchVerdict:
    differing = [name for name, ok in clauses.items() if not ok]
    if not differing:
        return ExactMatchVerdict(True, clauses, None)
    return ExactMatchVerdict(False, clauses, "clauses differ: " + ", ".join(differing))


class GoldUnreadable(ValueError):
    """The gold SQL cannot be compared under the chosen profile: an error of the suite."""


class GoldOutsideGrammar(GoldUnreadable):
    """The gold uses a construct the official Spider parser cannot read (``construct`` names it).

    The official evaluator crashes on such a gold; use ``exact_match: sqleval``.
    """

    def __init__(self, construct: str) -> None:
        self.construct = construct
        super().__init__(construct)


class GoldParseError(GoldUnreadable):
    """sqlglot cannot parse the gold SQL at all."""


class GoldTooComplex(GoldUnreadable):
    """The gold is beyond the scoring limits (or reading it failed unexpectedly); the message says which."""


def failure_reason(exc: BaseException) -> str:
    """A short reason for an exception raised while reading or comparing SQL."""
    if isinstance(exc, (SqlTooComplex, RecursionError, MemoryError)):
        return too_complex_reason(exc)
    message = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"could not be scored: {type(exc).__name__}" + (f": {message}" if message else "")


def unscorable(exc: BaseException) -> ExactMatchVerdict:
    """The verdict of a prediction whose reading or comparison raised ``exc``: no match, with the reason."""
    return ExactMatchVerdict(False, {}, failure_reason(exc))


def gold_failure(exc: BaseException) -> GoldUnreadable:
    """The error for a gold whose reading raised ``exc`` (already a GoldUnreadable: itself)."""
    if isinstance(exc, GoldUnreadable):
        return exc
    return GoldTooComplex(failure_reason(exc))
