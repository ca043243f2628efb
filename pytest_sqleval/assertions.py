"""Assertion helpers for ordinary pytest tests: execution match, clause set match, soft-F1 thresholds, policies.

Each ``assert_*`` helper returns its verdict object when the check passes and raises
:class:`SqlevalAssertionError` (an ``AssertionError``) whose message is what a suite shows with ``-v``:
both SQL texts, the result diff, each clause's verdict, the soft-F1 value. The ``check_*`` twins return
the verdict without raising; a verdict is truthy when it passed, so ``assert verdict`` works too and,
through the plugin, prints the same explanation.

``gold`` is SQL, several accepted SQL texts (a list: any one may match; the best one is reported), or
expected rows ``{"columns": [...], "rows": [[...]]}`` (optionally ``"ordered": true``). The predicted SQL
is untrusted: it is guarded and runs on the read-only engine under the same limits as a suite
(``timeout=``/``max_rows=`` override the defaults of 30 s and 100000 rows).

``engine=None`` means the current test's ``sqleval_engine`` fixture (a database set with
``@pytest.mark.sqleval_database(...)`` or the ini option ``sqleval_database``).
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from .defaults import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from .results import QueryResult, with_temporal_text
from .running_test import running_settings

__all__ = [
    "ExactMatchCheck", "ExecutionMatchCheck", "PolicyCheck", "SoftF1Check", "SqlevalAssertionError",
    "assert_exact_match", "assert_execution_match", "assert_policy", "assert_soft_f1",
    "check_exact_match", "check_execution_match", "check_policy_of", "check_soft_f1", "explain",
]

#: Options of the helpers that are run limits, not comparison options.
_RUN_OPTIONS = ("timeout", "max_rows", "dialect")


class SqlevalAssertionError(AssertionError):
    """A failed sqleval assertion; ``verdict`` is the failing verdict object."""

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        super().__init__(verdict.explain())


# --------------------------------------------------------------------------- verdicts
class Verdict:
    """Common behaviour: truthy when passed; ``verdict == True`` compares the outcome."""

    passed: bool

    def __bool__(self) -> bool:
        return bool(self.passed)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, bool):
            return bool(self.passed) is other
        if isinstance(other, Verdict):
            return self is other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = object.__hash__

    def summary(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def explain(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.summary()}>"


@dataclass(eq=False, repr=False)
class GoldScore:
    """How the prediction fared against one accepted gold."""

    label: str  # the gold SQL, or "(expected rows)"
    sql: str | None
    execution_match: bool
    soft_f1: float
    record: dict[str, Any]  # a suite-style record (mismatch, error), rendered like a miss
    raw: tuple[tuple, tuple] | None = None  # rows only in gold / only in the prediction, as the engine returned them


@dataclass(eq=False, repr=False)
class ExecutionMatchCheck(Verdict):
    """``match``: the prediction's result equals the best gold's under ``profile``."""

    passed: bool
    predicted: str
    profile: str
    soft_f1: float
    best: int  # index of the best gold
    scores: list[GoldScore]
    error: dict[str, str] | None = None
    overrides: dict[str, Any] = field(default_factory=dict)  # the options given beside the profile

    @property
    def match(self) -> bool:
        return self.passed

    def summary(self) -> str:
        if self.passed:
            return f"execution_match passed (gold #{self.best + 1}, profile {self.profile})"
        return f"execution_match failed: {_reason(self.scores[self.best].record)} (soft_f1 {self.soft_f1:.4f})"

    def explain(self) -> str:
        given = "".join(f", {name}={value}" for name, value in self.overrides.items())
        head = f"execution_match {'passed' if self.passed else 'failed'} (profile {self.profile}{given})"
        return _render(head, self.scores, self.best, self.predicted)


@dataclass(eq=False, repr=False)
class SoftF1Check(Verdict):
    """``score``: the best soft F1 over the accepted golds; passed when ``score >= at_least``."""

    passed: bool
    predicted: str
    score: float
    at_least: float
    best: int
    scores: list[GoldScore]

    def summary(self) -> str:
        op = ">=" if self.passed else "<"
        return f"soft_f1 {_score_text(self.score, self.at_least)} {op} {self.at_least:g}"

    def explain(self) -> str:
        head = self.summary() + ("" if self.passed else f" (required at least {self.at_least:g})")
        text = _render(head, self.scores, self.best, self.predicted)
        # the diff's own soft_f1 line with as many places as the head: 0.66667 must not read as 0.6667 there
        score = f"  soft_f1: {_score_text(self.score, self.at_least)}"
        return "\n".join(score if line.startswith("  soft_f1: ") else line for line in text.splitlines())


def _score_text(score: float, at_least: float) -> str:
    """The score to 4 places, or to as many more as it takes not to read as its threshold (0.66667 < 0.6667)."""
    for places in range(4, 16):
        text = f"{score:.{places}f}"
        if score == at_least or (text != f"{at_least:.{places}f}" and text != f"{at_least:g}"):
            return text
    return repr(score)


@dataclass(eq=False, repr=False)
class ExactMatchCheck(Verdict):
    """``clauses``: each clause's verdict against the best gold; ``checked``: the clauses that decide."""

    passed: bool
    gold: str
    predicted: str
    profile: str
    clauses: dict[str, bool]
    checked: tuple[str, ...]
    reason: str | None
    best: int = 0
    golds: tuple[str, ...] = ()
    per_gold: list[dict[str, bool]] = field(default_factory=list)
    subset: bool = False  # only the listed clauses decide

    @property
    def match(self) -> bool:
        return self.passed

    def differing(self) -> list[str]:
        return [c for c in self.checked if not self.clauses.get(c, False)]

    def summary(self) -> str:
        scope = f" on {', '.join(self.checked)}" if self.subset else ""
        if self.passed:
            return f"exact_match passed{scope}"
        why = f"clauses differ: {', '.join(self.differing())}" if self.clauses else (self.reason or "no clauses")
        return _printable(f"exact_match failed{scope}: {why}")

    def explain(self) -> str:
        lines = [self.summary() + f" (profile {self.profile})"]
        lines.append(f"  gold SQL:      {_one_line(self.gold)}")
        lines.append(f"  predicted SQL: {_predicted_line(self.predicted)}")
        if len(self.golds) > 1:
            lines.append(f"  accepted golds: {len(self.golds)}; best: #{self.best + 1} (any one may match)")
            for i, (text, clauses) in enumerate(zip(self.golds, self.per_gold)):
                differ = [c for c in (self.checked if self.subset else clauses) if not clauses.get(c, False)]
                verdict = "not scored" if not clauses else f"differs on {', '.join(differ)}" if differ else "match"
                lines.append(f"    #{i + 1} {_one_line(text)[:70]}: {verdict}")
        if self.reason and not self.clauses:
            lines.append(f"  {self.reason}")
        if self.clauses:
            lines.append("  clauses:")
            for name, ok in self.clauses.items():
                mark = "match" if ok else "DIFFERS"
                ignored = "" if name in self.checked else " (not checked)"
                lines.append(f"    {name:<16} {mark}{ignored}")
        return "\n".join(map(_printable, lines))  # the prediction is untrusted text


@dataclass(eq=False, repr=False)
class PolicyCheck(Verdict):
    """``violations``: what each broken rule of the policy saw."""

    passed: bool
    predicted: str
    policy: dict[str, Any]
    violations: tuple[str, ...]

    def summary(self) -> str:
        if self.passed:
            return "policy passed"
        return _printable(f"policy failed: {len(self.violations)} violation(s): {self.violations[0]}")

    def explain(self) -> str:
        lines = [f"policy {'passed' if self.passed else 'failed'}",
                 f"  predicted SQL: {_predicted_line(self.predicted)}",
                 f"  policy: {self.policy}"]
        lines.extend(f"  violation: {v}" for v in self.violations)
        return "\n".join(map(_printable, lines))  # the prediction is untrusted text


# --------------------------------------------------------------------------- the helpers
def check_execution_match(gold: Any, predicted: str, *, engine=None, profile: str = "sqleval",
                          **options: Any) -> ExecutionMatchCheck:
    """Like :func:`assert_execution_match`, but returns the verdict without raising."""
    __tracebackhide__ = True
    run, comparison = _split_options(options)
    resolved = _resolve_profile(profile, comparison)
    engine = _engine(engine, "assert_execution_match")
    scores = _score(gold, predicted, engine, resolved, **run, helper="assert_execution_match")
    best = _best(scores)
    chosen = scores[best]
    return _returned(ExecutionMatchCheck(
        passed=chosen.execution_match, predicted=predicted, profile=resolved.profile, soft_f1=chosen.soft_f1,
        best=best, scores=scores, error=chosen.record.get("error"), overrides=dict(comparison),
    ))


def assert_execution_match(gold: Any, predicted: str, *, engine=None, profile: str = "sqleval",
                           **options: Any) -> ExecutionMatchCheck:
    """Assert that ``predicted`` returns the same result as ``gold`` under the comparison ``profile``.

    ``options`` override single comparison options (``duplicates="set"``, ``row_order="ignore"``, ...);
    ``timeout=``, ``max_rows=`` and ``dialect=`` set the run limits and the SQL dialect.
    """
    __tracebackhide__ = True
    return _raise_unless(check_execution_match(gold, predicted, engine=engine, profile=profile, **options))


def check_soft_f1(gold: Any, predicted: str, *, engine=None, at_least: float = 0.8, **options: Any) -> SoftF1Check:
    """Like :func:`assert_soft_f1`, but returns the verdict without raising."""
    __tracebackhide__ = True
    if isinstance(at_least, bool) or not isinstance(at_least, (numbers.Real, Decimal)) \
            or not 0 <= float(at_least) <= 1:  # a Decimal or Fraction too (NaN is refused: no comparison holds)
        raise ValueError(f"at_least must be a number between 0 and 1, not {at_least!r}")
    at_least = float(at_least)
    run, comparison = _split_options(options)
    resolved = _resolve_profile(comparison.pop("profile", "sqleval"), comparison)
    engine = _engine(engine, "assert_soft_f1")
    scores = _score(gold, predicted, engine, resolved, **run, helper="assert_soft_f1")
    best = max(range(len(scores)), key=lambda i: (scores[i].soft_f1, scores[i].execution_match, -i))
    score = scores[best].soft_f1
    return _returned(SoftF1Check(passed=score >= at_least, predicted=predicted, score=score,
                                 at_least=float(at_least), best=best, scores=scores))


def assert_soft_f1(gold: Any, predicted: str, *, engine=None, at_least: float = 0.8, **options: Any) -> SoftF1Check:
    """Assert that the prediction's Soft Execution F1 (MRO 2.1.2) against the best gold is at least ``at_least``."""
    __tracebackhide__ = True
    return _raise_unless(check_soft_f1(gold, predicted, engine=engine, at_least=at_least, **options))


def check_exact_match(gold: Any, predicted: str, *, schema=None, clauses: Sequence[str] | None = None,
                      profile: str = "sqleval", dialect: str | None = None) -> ExactMatchCheck:
    """Like :func:`assert_exact_match`, but returns the verdict without raising."""
    __tracebackhide__ = True
    from .metrics.exact_match import GoldUnreadable, exact_match, resolve_exact_match

    golds = _gold_sql_texts(gold, "assert_exact_match")
    _check_predicted(predicted, "assert_exact_match")
    resolved_schema, schema_dialect = _schema(schema)
    dialect = _checked_dialect(dialect) or schema_dialect or "sqlite"
    from .comparison import OptionError

    try:
        options = resolve_exact_match(_profile_name(profile))
    except OptionError as exc:  # the message alone, as assert_execution_match's unknown profile
        raise ValueError(f"assert_exact_match: {exc} (the execution profiles are assert_execution_match's)") \
            from None
    valid = _clause_names(options.profile)
    if clauses is not None:
        if isinstance(clauses, str):
            clauses = [clauses]
        elif not isinstance(clauses, (list, tuple, set, frozenset)):
            raise TypeError(f"clauses= must be a list of clause names such as [\"select\", \"where\"], "
                            f"not {type(clauses).__name__}")
        clauses = [c.strip().lower() if isinstance(c, str) else c for c in clauses]  # as pass_if reads them
        clauses = list(dict.fromkeys(clauses)) if all(isinstance(c, str) for c in clauses) else clauses  # once each
        unknown = [c for c in clauses if c not in valid]
        if unknown or not clauses:
            raise ValueError(
                f"unknown clause name(s) {', '.join(map(repr, unknown)) or '(none given)'} for the "
                f"{options.profile} profile; valid clauses: {', '.join(valid)}"
            )
    results = []
    for text in golds:
        try:
            verdict = exact_match(text, predicted or "", resolved_schema, profile=options, dialect=dialect)
        except GoldUnreadable as exc:
            from .metrics.exact_match import GoldOutsideGrammar

            hint = (f" (the {options.profile} profile reads SQL as the official Spider parser, which cannot read this "
                    "construct; rewrite the gold or use profile=\"sqleval\")"
                    if isinstance(exc, GoldOutsideGrammar) else "")
            raise ValueError(f"exact match cannot read the gold SQL {_one_line(text)!r}: {exc}{hint}") from None
        checked = tuple(clauses) if clauses is not None else tuple(verdict.clauses) or valid
        ok = bool(verdict.clauses) and all(verdict.clauses.get(c, False) for c in checked)
        if clauses is None:
            ok = bool(verdict.match)
        results.append((ok, verdict, checked))
    # one best gold for every clause shown: the first that passes, else the one matching most of the checked
    # clauses (clauses= decides, not the others), then most clauses overall
    best = max(range(len(results)), key=lambda i: (results[i][0], sum(bool(results[i][1].clauses.get(c)) for c in
                                                                       results[i][2]),
                                                   sum(results[i][1].clauses.values()), -i))
    ok, verdict, checked = results[best]
    return _returned(ExactMatchCheck(
        passed=ok, gold=golds[best], predicted=predicted, profile=options.profile, clauses=dict(verdict.clauses),
        checked=checked, reason="no_prediction: no prediction" if predicted is None else verdict.reason, best=best,
        golds=tuple(golds),
        per_gold=[dict(r[1].clauses) for r in results], subset=clauses is not None,
    ))


def assert_exact_match(gold: Any, predicted: str, *, schema=None, clauses: Sequence[str] | None = None,
                       profile: str = "sqleval", dialect: str | None = None) -> ExactMatchCheck:
    """Assert a clause set match of ``predicted`` against ``gold`` (any of several golds), optionally only
    on the listed ``clauses`` (e.g. ``["select", "where"]``).

    ``schema``: a :class:`~pytest_sqleval.schema.Schema`, an engine, a Spider ``(tables.json, db_id)`` pair
    (or ``{"tables": ..., "db_id": ...}``), or None for the current test's ``sqleval_engine``.
    """
    __tracebackhide__ = True
    return _raise_unless(check_exact_match(gold, predicted, schema=schema, clauses=clauses, profile=profile,
                                           dialect=dialect))


def check_policy_of(predicted: str, policy: Mapping[str, Any] | None = None, *, engine=None, schema=None,
                    dialect: str | None = None, **rules: Any) -> PolicyCheck:
    """Like :func:`assert_policy`, but returns the verdict without raising."""
    __tracebackhide__ = True
    from .policy import Policy, PolicyError, check_policy

    _check_predicted(predicted, "assert_policy")
    if policy is not None and not isinstance(policy, Mapping):
        raise TypeError("assert_policy: policy must be a mapping such as {\"tables\": [\"shops\"], "
                        "\"forbid_columns\": [\"email\"], \"require_filter\": \"tenant_id = 42\"}, "
                        f"not {type(policy).__name__}")
    try:
        resolved = Policy.from_mapping({**(dict(policy) if policy else {}), **rules})
    except PolicyError as exc:  # raised afresh: the message alone, no frame of the policy module below
        raise PolicyError(str(exc)) from None
    if schema is None and engine is None:
        engine = _engine(None, "assert_policy", required=False)
    elif engine is not None:
        engine = _as_engine(engine)
    if schema is None and engine is not None:
        schema, engine_dialect = _schema(engine)
        dialect = dialect or engine_dialect
    elif schema is not None:
        schema, schema_dialect = _schema(schema)
        dialect = dialect or schema_dialect
    verdict = check_policy(predicted, resolved, dialect=dialect or "sqlite", schema=schema)
    return _returned(PolicyCheck(passed=verdict.passed, predicted=predicted, policy=resolved.as_dict(),
                                 violations=verdict.violations))


def assert_policy(predicted: str, policy: Mapping[str, Any] | None = None, *, engine=None, schema=None,
                  dialect: str | None = None, **rules: Any) -> PolicyCheck:
    """Assert that ``predicted`` respects a SQL policy: ``tables=[...]`` (the only tables it may read),
    ``forbid_columns=[...]``, ``require_filter="tenant_id = 42"`` (see :mod:`pytest_sqleval.policy`)."""
    __tracebackhide__ = True
    return _raise_unless(check_policy_of(predicted, policy, engine=engine, schema=schema, dialect=dialect, **rules))


def explain(verdict: Any) -> str | None:
    """The multi-line explanation of a failing verdict (ours, or compare_results'/exact_match's), else None."""
    from .metrics.exact_match.verdict import ExactMatchVerdict
    from .metrics.execution_match import ExecutionVerdict
    from .policy import PolicyVerdict

    if isinstance(verdict, Verdict):
        return verdict.explain()
    if isinstance(verdict, ExecutionVerdict):
        return _explain_execution_verdict(verdict)
    if isinstance(verdict, ExactMatchVerdict):
        reason = f": {verdict.reason}" if verdict.reason else ""
        lines = [f"exact_match {'passed' if verdict.match else 'failed'}{reason}"]
        lines.extend(f"  {name:<16} {'match' if ok else 'DIFFERS'}" for name, ok in verdict.clauses.items())
        return "\n".join(map(_printable, lines))
    if isinstance(verdict, PolicyVerdict):
        return "\n".join(map(_printable, [f"policy {'passed' if verdict.passed else 'failed'}",
                                          *(f"  violation: {v}" for v in verdict.violations)]))
    return None


def is_failing_verdict(value: Any) -> bool:
    """A verdict object (any of the plugin's) that did not pass."""
    from .metrics.exact_match.verdict import ExactMatchVerdict
    from .metrics.execution_match import ExecutionVerdict
    from .policy import PolicyVerdict

    if isinstance(value, Verdict):
        return not value.passed
    if isinstance(value, (ExecutionVerdict, ExactMatchVerdict)):
        return not value.match
    if isinstance(value, PolicyVerdict):
        return not value.passed
    return False


# --------------------------------------------------------------------------- internals
#: The last verdicts the ``check_*`` helpers returned in the current test (the plugin clears them at its teardown):
#: under ``--assert=plain`` an ``assert check_execution_match(...)`` holds its verdict in no variable.
RECENT_VERDICTS: list[Any] = []  # ours, and compare_results' ExecutionVerdicts


def _returned(verdict: Verdict) -> Verdict:
    RECENT_VERDICTS.append(verdict)
    del RECENT_VERDICTS[:-8]
    return verdict


def compare_results(gold: QueryResult, pred: QueryResult, options, *, ordered: bool, tie_groups=None):
    """:func:`pytest_sqleval.metrics.execution_match.compare_results`, as ``pytest_sqleval`` exports it: the verdict
    is remembered for the test, so that ``assert compare_results(...).match`` under ``--assert=plain`` (no variable
    holds the verdict) still gets its ``sqleval verdict`` section."""
    from .comparison import ComparisonOptions
    from .metrics.execution_match import compare_results as compare
    from .metrics.soft_f1 import check_result_types

    check_result_types(gold, pred, "compare_results")
    if not isinstance(options, ComparisonOptions):
        name = options if isinstance(options, str) else "sqleval"  # a profile's name: that profile
        raise TypeError(f"compare_results: options must be ComparisonOptions, not {type(options).__name__}; pass "
                        f"EXECUTION_PROFILES[\"{name}\"] (from pytest_sqleval import EXECUTION_PROFILES), or "
                        "resolve_execution({\"profile\": \"sqleval\", \"duplicates\": \"set\"}) to change options")
    verdict = compare(gold, pred, options, ordered=ordered, tie_groups=tie_groups)
    RECENT_VERDICTS.append(verdict)
    del RECENT_VERDICTS[:-8]
    return verdict


def check_policy(sql: str | None, policy, *, dialect: str = "sqlite", schema=None):
    """:func:`pytest_sqleval.policy.check_policy`, as ``pytest_sqleval`` exports it: the verdict is remembered for the
    test, so that ``assert check_policy(...)`` under ``--assert=plain`` still gets its ``sqleval verdict`` section."""
    __tracebackhide__ = True  # its errors point at the test's call
    from .policy import check_policy as check

    verdict = check(sql, policy, dialect=dialect, schema=schema)
    RECENT_VERDICTS.append(verdict)
    del RECENT_VERDICTS[:-8]
    return verdict


def _raise_unless(verdict: Verdict):
    __tracebackhide__ = True
    if not verdict.passed:
        raise SqlevalAssertionError(verdict)
    return verdict


def _split_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    run = {k: options[k] for k in _RUN_OPTIONS if k in options}
    comparison = {k: v for k, v in options.items() if k not in _RUN_OPTIONS}
    return run, comparison


def _resolve_profile(profile: str, overrides: Mapping[str, Any]):
    __tracebackhide__ = True  # its errors point at the test's call
    from .comparison import OptionError, resolve_execution

    running_settings()  # a plain run builds the session's profiles (a conftest's own) on first use
    profile = _profile_name(profile)
    try:
        return resolve_execution({"profile": profile, **overrides} if overrides else profile)
    except OptionError as exc:
        raise ValueError(str(exc)) from None


def _profile_name(profile: Any) -> str:
    __tracebackhide__ = True  # its errors point at the test's call
    if not isinstance(profile, str):
        raise TypeError(f"profile= must be the name of a profile, such as \"sqleval\", not {type(profile).__name__}")
    return profile


def _checked_dialect(dialect: Any) -> str | None:
    """``dialect=`` as given (None: the engine's), checked against sqlglot's dialects."""
    __tracebackhide__ = True  # its errors point at the test's call
    if dialect is None:
        return None
    from sqlglot.dialects.dialect import Dialect

    try:
        Dialect.get_or_raise(dialect)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"dialect= must be a SQL dialect sqlglot knows (sqlite, duckdb, postgres, ...): {exc}") \
            from None
    return dialect


def _engine(engine, helper: str, *, required: bool = True, argument: str = "engine"):
    __tracebackhide__ = True  # its errors point at the test's call
    if engine is not None:
        return _as_engine(engine, argument)
    from .running_test import running_test_engine

    found = running_test_engine()
    found = None if found is None else fixture_engine(found, helper)
    if found is None and required:
        raise ValueError(  # the helper's own argument: assert_exact_match takes schema=, not engine=
            f"{helper} needs a database: pass {argument}=... (e.g. {argument}=sqleval_engine_factory(\"shop.sqlite\")), "
            "or call it in a test that uses the sqleval_engine fixture, pointed at a database by "
            "@pytest.mark.sqleval_database(\"shop.sqlite\") or the ini option sqleval_database"
        )
    return found


def _as_engine(engine, argument: str = "engine"):
    """An engine (or engine-like object of a backend) as given; a SQLAlchemy Connection stands for its engine (the
    query runs read-only on a connection of its own, so it does not see the connection's uncommitted changes).
    A URL or path is not an engine: a TypeError that names the argument, never the URL (it may hold a password)."""
    __tracebackhide__ = True  # its errors point at the test's call
    from .execution.runner import connection_engine, type_name

    inner = connection_engine(engine)
    if inner is not engine:
        return inner
    if isinstance(engine, (str, bytes, os.PathLike)) or not hasattr(engine, "dialect"):
        raise TypeError(
            f"{argument}= must be a SQLAlchemy engine or connection, not {type_name(engine)}; for a database "
            f"path or URL, open it with the fixture: {argument}=sqleval_engine_factory(\"shop.sqlite\")"
        )
    return engine


def fixture_engine(value: Any, helper: str) -> Any:
    """What a plain test's (overridden) ``sqleval_engine`` gave, as an engine: a Connection stands for its engine; a
    URL or a path is a TypeError naming the fix (never the value: a URL may hold a password)."""
    __tracebackhide__ = True  # its errors point at the test's call
    from .execution.runner import connection_engine, type_name

    found = connection_engine(value)
    if isinstance(found, (str, bytes, os.PathLike)) or not hasattr(found, "dialect"):
        raise TypeError(
            f"{helper}: the sqleval_engine fixture gave a {type_name(found)}, not a SQLAlchemy engine or "
            "connection; for a database path or URL, return sqleval_engine_factory(\"shop.sqlite\") from the fixture, "
            "or drop the override and use @pytest.mark.sqleval_database(\"shop.sqlite\")"
        )
    return found


@dataclass(frozen=True)
class _Gold:
    sql: str | None
    expected: QueryResult | None = None
    ordered: bool = False


def _golds(gold: Any, helper: str) -> list[_Gold]:
    __tracebackhide__ = True  # its errors point at the test's call
    items = list(gold) if isinstance(gold, (list, tuple)) else [gold]
    if not items:
        raise ValueError(f"{helper}: gold is an empty list; give SQL, a list of accepted SQL texts, "
                         "or expected rows {\"columns\": [...], \"rows\": [[...]]}")
    golds = []
    for item in items:  # a loop, not a comprehension: no frame of its own in the test's traceback
        golds.append(_one_gold(item, helper))
    return golds


def _one_gold(item: Any, helper: str) -> _Gold:
    __tracebackhide__ = True  # its errors point at the test's call
    if isinstance(item, str):
        if not item.strip():
            raise ValueError(f"{helper}: a gold SQL text is empty")
        return _Gold(item)
    if isinstance(item, QueryResult):
        return _Gold(None, item)
    if isinstance(item, Mapping):
        return _Gold(None, expected_rows(item, where=helper), bool(item.get("ordered", False)))
    raise TypeError(f"{helper}: gold must be SQL text, a list of SQL texts, or expected rows "
                    f"{{\"columns\": [...], \"rows\": [[...]]}}, not {type(item).__name__}")


def expected_rows(value: Mapping[str, Any], *, where: str = "expected") -> QueryResult:
    """``{"columns": [...], "rows": [[...]]}`` as a QueryResult (checked; ``ordered`` is allowed)."""
    __tracebackhide__ = True  # its errors point at the test's call
    unknown = [k for k in value if k not in ("columns", "rows", "ordered")]
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r} in expected rows; keys: columns, rows, ordered")
    rows = value.get("rows")
    if not isinstance(rows, (list, tuple)) or not all(isinstance(r, (list, tuple)) for r in rows):
        raise ValueError(f"{where}: expected rows need `rows`, a list of rows (each a list of values)")
    columns = value.get("columns")
    if columns is not None and (not isinstance(columns, (list, tuple)) or not all(isinstance(c, str) for c in columns)):
        raise ValueError(f"{where}: `columns` must be a list of column names")
    width = len(columns) if columns is not None else (len(rows[0]) if rows else 0)
    bad = [i for i, r in enumerate(rows) if len(r) != width]
    if bad:
        raise ValueError(f"{where}: row {bad[0] + 1} has {len(rows[bad[0]])} values, expected {width}")
    ordered = value.get("ordered", False)  # as a suite's `expected:` is checked (loader.py)
    if not isinstance(ordered, bool):
        raise ValueError(f"{where}: `ordered` of the expected rows must be True or False, not {ordered!r}")
    return QueryResult.of([tuple(r) for r in rows], columns=list(columns) if columns is not None else None) \
        if rows or columns is not None else QueryResult(columns=(), rows=[])


def _gold_sql_texts(gold: Any, helper: str) -> list[str]:
    __tracebackhide__ = True  # its errors point at the test's call
    golds = _golds(gold, helper)
    if any(g.sql is None for g in golds):
        raise ValueError(f"{helper} compares SQL clause by clause, so it needs gold SQL, not expected rows")
    return [g.sql for g in golds]  # type: ignore[misc]


def _score(gold: Any, predicted: str, engine, options, *, timeout: float | None = None, max_rows: int | None = None,
           dialect: str | None = None, helper: str = "assertion") -> list[GoldScore]:
    """Run the prediction once and compare it with each accepted gold."""
    __tracebackhide__ = True
    from .errors import DatabaseError, GoldError, QueryError
    from .evaluate import DIFF_ROWS, against_expected, case_soft_f1, mismatch_record, run_prediction
    from .execution.runner import sqlglot_dialect
    from .metrics.execution_match import compare_results

    golds = _golds(gold, helper)
    _check_predicted(predicted, helper)
    timeout, max_rows = run_limits(timeout, max_rows)
    settings = running_settings()
    allowed, max_memory = settings.get("allow_functions", frozenset()), settings.get("max_memory")
    dialect = _checked_dialect(dialect) or sqlglot_dialect(engine.dialect.name)
    evaluator = _evaluator(timeout, max_rows, engine)
    display = _display(engine)
    runs = []
    for g in golds:
        if g.sql is not None:
            try:
                runs.append(evaluator.run_gold(g.sql, options, engine, dialect, display, timeout=timeout,
                                               max_rows=max_rows, max_memory=max_memory))
            except GoldError as exc:
                raise GoldError(f"{limit_hint(str(exc))}\n  gold SQL: {_one_line(g.sql)}\n  {_gold_fix(str(exc))}") from None
            except DatabaseError as exc:  # raised afresh here: no frame below (their locals hold the raw URL)
                raise DatabaseError(str(exc)) from None
        else:
            from .evaluate import EXPECTED_ROWS, GoldRun

            runs.append(GoldRun(EXPECTED_ROWS, with_temporal_text(g.expected), g.ordered, None))
    base = {"predicted": predicted}
    try:
        if predicted is None or not str(predicted).strip():
            raise QueryError("no_prediction", "the prediction is empty" if predicted is not None else "no prediction")
        pred = run_prediction(engine, predicted, options, dialect, timeout, max_rows, allow_functions=allowed,
                              max_memory=max_memory)
    except DatabaseError as exc:  # raised afresh here: no frame below (their locals hold the raw URL)
        raise DatabaseError(str(exc)) from None
    except QueryError as exc:
        message = limit_hint(exc.message)
        return [GoldScore(_label(g), g.sql, False, 0.0, {**base, "gold": _label(g), "valid": False, "soft_f1": 0.0,
                                                          "error": {"kind": exc.kind, "message": message}})
                for g in golds]
    scores = []
    for g, run in zip(golds, runs):
        side = pred
        if g.sql is None:  # expected rows: dates as ISO text, `rows: []` of any width (as in suites)
            run, side = against_expected(run, pred)
        verdict = compare_results(run.result, side, options, ordered=run.ordered, tie_groups=run.tie_groups)
        f1 = case_soft_f1(run.result, side, verdict, options)
        record = {**base, "gold": _label(g), "valid": True, "error": None, "soft_f1": f1,
                  "execution_match": verdict.match, "vacuous": verdict.vacuous,
                  "mismatch": None if verdict.match else mismatch_record(run, side, verdict, options)}
        raw = (tuple(verdict.gold_only_rows[:DIFF_ROWS]), tuple(verdict.pred_only_rows[:DIFF_ROWS]))
        scores.append(GoldScore(_label(g), g.sql, verdict.match, f1, record, raw))
    return scores


#: How a limit's message says to raise it, in a suite's words and in a plain test's (the helper's argument first:
#: an explicit `max_rows=` wins over the option, and there is no suite whose `timeout:` could be raised).
_LIMIT_HINTS = (
    ("raise it with --sqleval-timeout or the suite's `timeout:`", "raise it with `timeout=` or --sqleval-timeout"),
    ("raise it with --sqleval-max-rows, the suite's `max_rows:` or the ini option sqleval_max_rows",
     "raise it with `max_rows=` or --sqleval-max-rows"),
    ("raise it with --sqleval-max-memory or the suite's `max_memory:`",
     "raise it with --sqleval-max-memory or the ini option sqleval_max_memory"),
)


def limit_hint(message: str) -> str:
    """A limit's message (timeout, row cap, memory) as the helpers and ``sqleval_query`` say it."""
    for suite_words, helper_words in _LIMIT_HINTS:
        message = message.replace(suite_words, helper_words)
    return message


def _check_predicted(predicted: Any, helper: str) -> None:
    """The prediction is SQL text, or None for a prediction that did not come (a miss, never an error)."""
    __tracebackhide__ = True  # its errors point at the test's call
    if predicted is not None and not isinstance(predicted, str):
        raise TypeError(f"{helper}: predicted must be SQL text (a str) or None, not {type(predicted).__name__}")


def run_limits(timeout: Any, max_rows: Any) -> tuple[float, int]:
    """``timeout=``/``max_rows=`` of a helper, checked (None: the session's ``--sqleval-timeout``/``sqleval_timeout``
    and ``--sqleval-max-rows``/``sqleval_max_rows``, else the suites' defaults of 30 s and 100000 rows)."""
    __tracebackhide__ = True  # its errors point at the test's call
    import math

    if timeout is None or max_rows is None:
        settings = running_settings()
        timeout = settings.get("timeout") if timeout is None else timeout
        max_rows = settings.get("max_rows") if max_rows is None else max_rows
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    elif isinstance(timeout, bool) or not isinstance(timeout, (numbers.Real, Decimal)) \
            or (isinstance(timeout, Decimal) and not timeout.is_finite()) or not math.isfinite(float(timeout)) \
            or timeout <= 0:  # numpy's numbers, a Decimal or Fraction too
        raise ValueError(f"timeout= must be a positive number of seconds, not {timeout!r}")
    if max_rows is None:
        max_rows = DEFAULT_MAX_ROWS
    elif isinstance(max_rows, bool) or not isinstance(max_rows, numbers.Integral) or max_rows < 1:
        raise ValueError(f"max_rows= must be a whole number of rows, at least 1, not {max_rows!r}")
    return float(timeout), int(max_rows)


def _evaluator(timeout: float, max_rows: int, engine):
    """A fresh evaluator for one helper call: each gold runs afresh, never from an earlier call's result. Unlike a
    suite's read-only databases, a plain test's data may change between calls (its own engine, rows it seeds)."""
    from .evaluate import Evaluator

    return Evaluator(timeout=timeout, max_rows=max_rows)


def clear_caches() -> None:
    """Forget cached schemas (the plugin calls this at the end of each session)."""
    _SCHEMAS.clear()


def _gold_fix(message: str) -> str:
    """What to do about a gold that failed: a limit it hit is not a broken gold."""
    limits = {"(timeout)": "`timeout=`", "(row_limit)": "`max_rows=`", "(memory)": "`--sqleval-max-memory`"}
    for kind, setting in limits.items():
        if kind in message:
            return f"the test's gold query hit a limit, it is not broken: raise {setting} or make the gold cheaper"
    return "the test's gold query is broken, not the prediction: fix the gold"


def _display(engine) -> str:
    try:
        from .suite import hide_password

        return hide_password(str(engine.url))
    except Exception:  # noqa: BLE001 - any engine-like object
        return "the database"


def _label(g: _Gold) -> str:
    return g.sql if g.sql is not None else "(expected rows)"


def _best(scores: list[GoldScore]) -> int:
    """The first gold that matches, else the one with the highest soft F1 (first on ties)."""
    for i, s in enumerate(scores):
        if s.execution_match:
            return i
    return max(range(len(scores)), key=lambda i: (scores[i].soft_f1, -i))


def _reason(record: dict[str, Any]) -> str:
    from .report.diff import miss_reason

    if record.get("error") or record.get("mismatch"):
        return miss_reason(record)
    return "results match"


def _render(head: str, scores: list[GoldScore], best: int, predicted: str) -> str:
    """The suite's ``-v`` miss layout (report/diff.py) for the best gold, then a line per other gold."""
    from .report.diff import ROWS_CUT_NOTE, render_miss, rows_look_alike, rows_only

    record = dict(scores[best].record)
    record["id"] = "sqleval"
    body = render_miss(record, verbose=True).splitlines()
    mismatch, raw = record.get("mismatch"), scores[best].raw
    if mismatch and raw and rows_look_alike(mismatch["gold_only_rows"], mismatch["predicted_only_rows"]):
        # the report's values are JSON (a DECIMAL is a float there): the engine's own show what differs
        sides = dict(zip(("  rows only in gold:", "  rows only in prediction:"), rows_only(*raw, typed=True)))
        body = [next((line[:27] + text for start, text in sides.items() if line.startswith(start)), line)
                for line in body if not line.startswith("  " + ROWS_CUT_NOTE)]  # the engine's rows are whole
    lines = [head, f"  {_reason(record)}", *body[1:]]
    if not any(line.startswith("  soft_f1:") for line in lines):
        after = next((i for i, line in enumerate(lines) if line.startswith("  predicted SQL:")), 3) + 1
        lines.insert(after, f"  soft_f1: {record.get('soft_f1') or 0.0:.4f}")
    if len(scores) > 1:
        lines.append(f"  accepted golds: {len(scores)}; best: #{best + 1} (any one may match)")
        for i, s in enumerate(scores):
            verdict = "match" if s.execution_match else _reason(s.record)
            lines.append(f"    #{i + 1} {_one_line(s.label)[:70]}: {verdict}; soft_f1 {s.soft_f1:.4f}")
    return "\n".join(lines)


def _explain_execution_verdict(verdict) -> str:
    """compare_results' verdict on its own (no SQL): the reason, the detail and example rows."""
    from .report.diff import rows_only

    if verdict.match:
        return "execution_match: the results match" + (" (both empty: vacuous)" if verdict.vacuous else "")
    lines = [f"execution_match failed: {verdict.reason}: {verdict.detail}"]
    if verdict.column_mapping is not None:
        mapping = verdict.column_mapping
        pairs = mapping.items() if isinstance(mapping, Mapping) else enumerate(mapping)
        lines.append("  column mapping (gold -> predicted): " + ", ".join(f"{g}->{p}" for g, p in pairs))
    gold_only, predicted_only = rows_only(verdict.gold_only_rows, verdict.pred_only_rows)
    if gold_only:
        lines.append("  rows only in gold:       " + gold_only)
    if predicted_only:
        lines.append("  rows only in prediction: " + predicted_only)
    return "\n".join(lines)


def _clause_names(profile: str) -> tuple[str, ...]:
    from .metrics.exact_match.verdict import SPIDER_CLAUSES, SQLEVAL_EXTRA_CLAUSES

    return SPIDER_CLAUSES if profile == "spider" else SPIDER_CLAUSES + SQLEVAL_EXTRA_CLAUSES


_SCHEMAS: dict[Any, Any] = {}


def _schema(schema) -> tuple[Any, str | None]:
    """(Schema, dialect or None) from a Schema, an engine, a (tables.json, db_id) pair or mapping, or None."""
    __tracebackhide__ = True
    from .execution.runner import sqlglot_dialect
    from .schema import Schema

    if schema is None:
        engine = _engine(None, "assert_exact_match", argument="schema")
        return _schema(engine)
    if isinstance(schema, Schema):
        return schema, None
    if hasattr(schema, "exec_driver_sql") and hasattr(getattr(schema, "engine", None), "connect"):
        schema = schema.engine  # a SQLAlchemy Connection: its engine's schema
    if hasattr(schema, "dialect") and hasattr(schema, "connect"):
        from .evaluate import Identity
        from .execution.targets import registered_target

        key = Identity(schema)  # holds the engine: no other object can take its id while the entry exists
        # Only a database the plugin opened (read-only) keeps its schema; an engine of the test's own is read on
        # each call, since the test may create tables between calls.
        if key not in _SCHEMAS or registered_target(schema) is None:
            from .errors import DatabaseError
            from .execution.backends import read_schema

            try:
                read = read_schema(schema)
            except Exception as exc:  # noqa: BLE001 - driver errors vary: raised afresh, without the frames below
                # (their locals hold the connection parameters, password included), as a suite reports them
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                problem = str(exc) if isinstance(exc, DatabaseError) else \
                    f"cannot read the schema of {_display(schema)}: {first}"
                raise DatabaseError(problem) from None
            if registered_target(schema) is None:
                return read, sqlglot_dialect(schema.dialect.name)
            _SCHEMAS[key] = (schema, read)
        return _SCHEMAS[key][1], sqlglot_dialect(schema.dialect.name)
    if isinstance(schema, Mapping) and set(schema) == {"tables", "db_id"}:
        schema = (schema["tables"], schema["db_id"])
    if isinstance(schema, (tuple, list)) and len(schema) == 2 and isinstance(schema[0], (str, os.PathLike)):
        path, db_id = Path(schema[0]), str(schema[1])
        if not path.is_file():
            raise ValueError(f"schema file not found: {path}")
        key = (str(path.resolve()), db_id)
        if key not in _SCHEMAS:
            from .errors import SuiteError

            try:
                _SCHEMAS[key] = Schema.from_spider_tables(path, db_id)
            except SuiteError as exc:  # the message names the file and the fix: no frame of the schema module
                raise exc.with_traceback(None) from None
        return _SCHEMAS[key], None
    raise TypeError("schema= must be a Schema, an engine or connection, a (tables.json path, db_id) pair or "
                    "{\"tables\": ..., \"db_id\": ...}, or None for the test's sqleval_engine, "
                    f"not {type(schema).__name__}")


def _one_line(sql: str | None) -> str:
    from .report.diff import sql_on_one_line

    return sql_on_one_line(sql)


def _predicted_line(sql: str | None) -> str:
    """The prediction on one line; ``(none)`` for a prediction that did not come, as a suite's miss shows it."""
    return "(none)" if sql is None else _one_line(sql)


def _printable(text: str) -> str:
    """One line of a message, control characters of the untrusted prediction shown as escapes."""
    from .report.diff import printable

    return printable(text)
