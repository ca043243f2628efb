"""Read-only views of a ``sqleval-report/1`` dict shared by the Markdown and HTML renderers.

Everything here takes the JSON report (as written by ``--sqleval-json``) and
tolerates the optional blocks being absent: ``suites[i].intervals``,
``overall``, ``gates`` and ``baseline`` are rendered when present and skipped
when not, so an older report renders too.
"""

from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterable, Iterator

from ..registry import active_registry
from .diff import NOT_RUN, user_metric_values, violation

MISS_OUTCOMES = ("missed", "failed")


def fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def fmt_delta(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:+d}"
    return f"{value:+.{digits}f}"


def fmt_interval(interval: Any, digits: int = 4) -> str:
    if not interval or len(interval) != 2 or interval[0] is None or interval[1] is None:
        return "–"
    return f"[{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]"


def fmt_p(value: Any) -> str:
    if value is None:
        return "–"
    if value < 0.0001:
        return "<0.0001"
    return f"{value:.4f}"


def metric_keys(metrics: dict[str, Any]) -> list[str]:
    """The metrics of a suite (or the overall block) in the registry's order, numeric values only; a metric
    the registry does not know (a report written with a user's metric) follows, by name."""
    registry = active_registry()
    known = [m.name for m in registry.reported() if _numeric(metrics.get(m.name))]
    extra = sorted(k for k, v in metrics.items() if k not in registry and _numeric(v))
    return known + extra


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def label(metric: str) -> str:
    found = active_registry().get(metric)
    return found.title if found is not None else metric


def breakdown_columns() -> list[tuple[str, str]]:
    """(metric, short header) of the columns of the tables by difficulty, tag and turn."""
    return [(m.name, m.breakdown_label) for m in active_registry().reported() if m.breakdown_label]


def kind(metric: str) -> str | None:
    """``rate``, ``mean`` or ``count`` (None for a metric the registry does not know)."""
    found = active_registry().get(metric)
    return found.kind if found is not None else None


def maximum(metric: str) -> float | None:
    """The highest value the metric's aggregate can take (1 for a rate; None: unbounded, or not known)."""
    found = active_registry().get(metric)
    return found.maximum if found is not None else None


# --------------------------------------------------------------------------- lookups by suite, once per render
#: (report, {name: index}) while :func:`indexed` is on: the indexes by suite built from that report.
_INDEXES: ContextVar[tuple[Any, dict[str, Any]] | None] = ContextVar("sqleval_report_indexes", default=None)


@contextmanager
def indexed(report: dict[str, Any]) -> Iterator[None]:
    """While on, the lookups by suite name (:func:`suite_passed`, :func:`baseline_suite`, :func:`cases_of`) of this
    ``report`` answer from indexes built once (each scanned every suite, gate or case: a render asks per suite, so
    3,000 suites took 44 s). The report must not change meanwhile (a render only reads it)."""
    token = _INDEXES.set((report, {}))
    try:
        yield
    finally:
        _INDEXES.reset(token)


def _index(report: dict[str, Any], name: str, build) -> Any:
    """The index ``name`` of ``report`` (built by ``build(report)`` on first use) while :func:`indexed` is on for
    it, else None (the caller scans)."""
    active = _INDEXES.get()
    if active is None or active[0] is not report:
        return None
    found = active[1].get(name)
    if found is None:
        found = active[1][name] = build(report)
    return found


def _suites_with_failed_gates(report: dict[str, Any]) -> set[Any]:
    return {g.get("suite") for g in failed_gates(report)}


def _baseline_suites_by_name(report: dict[str, Any]) -> dict[Any, dict[str, Any]]:
    found: dict[Any, dict[str, Any]] = {}
    for suite in (baseline(report) or {}).get("suites", []) or []:
        found.setdefault(suite.get("name"), suite)  # the first of a name, as the scan finds it
    return found


def _cases_by_suite(report: dict[str, Any]) -> dict[Any, list[dict[str, Any]]]:
    found: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for case in report.get("cases", []):
        found[case.get("suite")].append(case)
    return found


# --------------------------------------------------------------------------- gates
def gates(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every gate verdict: ``report["gates"]`` when present, else the suites' threshold verdicts."""
    if isinstance(report.get("gates"), list):
        return list(report["gates"])
    found = []
    for suite in report.get("suites", []):
        for verdict in suite.get("thresholds", []) or []:
            limit = verdict.get("min", verdict.get("max"))
            op = ">=" if "min" in verdict else "<="
            passed = bool(verdict.get("passed"))
            value = verdict.get("value")
            message = (f"{'PASS' if passed else 'FAIL'} {verdict.get('metric')} {fmt(value)} "
                       f"{op if passed else ('<' if op == '>=' else '>')} {fmt(limit)}")
            found.append({
                "name": f"{suite.get('name')}::{verdict.get('metric')}",
                "kind": "threshold",
                "suite": suite.get("name"),
                "metric": verdict.get("metric"),
                "value": value,
                "limit": limit,
                "passed": passed,
                "message": message,
            })
    return found


def failed_gates(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [g for g in gates(report) if not g.get("passed")]


def _errored(outcomes: dict[str, Any] | None) -> bool:
    """An errored case (broken gold, unreadable database) or a failed one (``--sqleval-strict``) fails the run."""
    return any((outcomes or {}).get(name) for name in ("error", "failed"))


def _shard(report: dict[str, Any]) -> str | None:
    """``K/N`` for one shard's report: its gates judge part of the run and never fail it (pytest exits 0 on them)."""
    return (report.get("run") or {}).get("shard") or None


def run_failed(report: dict[str, Any]) -> bool:
    """The run's mark: a gate failed (not in a shard's report), or a case errored or failed (pytest exits 1 either
    way)."""
    return (bool(failed_gates(report)) and not _shard(report)) or _errored(overall_outcomes(report))


def suite_passed(report: dict[str, Any], suite: dict[str, Any]) -> bool:
    """A suite's mark: its thresholds held, none of its gates (a baseline gate too) failed (a shard's gates do not
    count), no case errored."""
    if _shard(report):
        return not _errored(suite.get("outcomes"))
    if not suite.get("passed", True) or _errored(suite.get("outcomes")):
        return False
    failing = _index(report, "failed gate suites", _suites_with_failed_gates)
    if failing is not None:
        return suite.get("name") not in failing
    return not any(g.get("suite") == suite.get("name") for g in failed_gates(report))


# --------------------------------------------------------------------------- baseline
def baseline(report: dict[str, Any]) -> dict[str, Any] | None:
    block = report.get("baseline")
    return block if isinstance(block, dict) else None


def baseline_suite(report: dict[str, Any], name: str) -> dict[str, Any] | None:
    block = baseline(report)
    if block is None:
        return None
    by_name = _index(report, "baseline suites", _baseline_suites_by_name)
    if by_name is not None:
        return by_name.get(name)
    for suite in block.get("suites", []) or []:
        if suite.get("name") == name:
            return suite
    return None


def baseline_metric(block: dict[str, Any] | None, metric: str) -> dict[str, Any] | None:
    if not block:
        return None
    value = (block.get("metrics") or {}).get(metric)
    return value if isinstance(value, dict) else None


def baseline_text(comparison: dict[str, Any], value: Any) -> str:
    """The baseline cell of a metric row: the baseline's value over the paired cases, and, when this run's value over
    those pairs is not the row's value (cases new in this run, or errored in one run), that one too
    (``0.7692 → 0.8462 (13 pairs)``): the delta beside it is between those two, not from the row's value."""
    shown = fmt(comparison.get("baseline"))
    now = comparison.get("current")
    if _numeric(now) and _numeric(value) and round(now, 4) != round(value, 4):
        return f"{shown} → {fmt(now)} ({comparison.get('n_pairs')} pairs)"
    return shown


def pairs(report: dict[str, Any], suite: str) -> dict[str, list[str]]:
    block = baseline_suite(report, suite)
    return dict((block or {}).get("pairs") or {})


def regressed_ids(report: dict[str, Any]) -> set[tuple[str, str]]:
    """(suite, case id) of every case that passed in the baseline and misses now."""
    found = set()
    block = baseline(report)
    for suite in (block or {}).get("suites", []) or []:
        for case_id in (suite.get("pairs") or {}).get("regressed", []) or []:
            found.add((suite.get("name"), case_id))
    return found


def error_paired_ids(report: dict[str, Any]) -> set[tuple[str, str]]:
    """(suite, case id) of every case in both runs that is an error in one of them (``pairs_with_errors``: in the
    baseline, but compared in neither direction)."""
    block = baseline(report)
    return {(suite.get("name"), case_id) for suite in (block or {}).get("suites", []) or []
            for case_id in suite.get("pairs_with_errors") or []}


def baseline_passed(report: dict[str, Any]) -> dict[tuple[str, str], bool]:
    """Whether each paired case passed in the baseline (read from the pairs; cases new in this run are absent)."""
    found: dict[tuple[str, str], bool] = {}
    block = baseline(report)
    for suite in (block or {}).get("suites", []) or []:
        p = suite.get("pairs") or {}
        for key, passed in (("still_passed", True), ("regressed", True), ("fixed", False), ("still_missed", False)):
            for case_id in p.get(key, []) or []:
                found[(suite.get("name"), case_id)] = passed
    return found


# --------------------------------------------------------------------------- cases
def model_usage(suite: dict[str, Any]) -> str | None:
    """The suite's model usage as the terminal summary prints it (``model m: 10 calls, ... | cost $0.0031``), or None
    when no model answered in it (or a report from elsewhere holds a ``model`` block of another shape)."""
    from ..model.usage import usage_line

    block = suite.get("model")
    if not isinstance(block, dict):
        return None
    try:
        return usage_line(block)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def cases_of(report: dict[str, Any], suite: str | None = None) -> list[dict[str, Any]]:
    by_suite = _index(report, "cases", _cases_by_suite) if suite is not None else None
    if by_suite is not None:
        return list(by_suite.get(suite, []))
    return [c for c in report.get("cases", []) if suite is None or c.get("suite") == suite]


def reason_key(case: dict[str, Any]) -> str:
    """The group a miss belongs to: its error kind or its result-mismatch reason."""
    error = case.get("error")
    if isinstance(error, dict) and error.get("kind"):
        return str(error["kind"])
    mismatch = case.get("mismatch")
    if isinstance(mismatch, dict) and mismatch.get("reason"):
        return str(mismatch["reason"])
    violated = violation(case)
    if violated is not None:
        return violated[0]
    if case.get("execution_match") and case.get("outcome") in MISS_OUTCOMES:
        return "pass_if"
    if case.get("exact_match") is False:
        return "exact_match"
    return "other"


def reason_text(case: dict[str, Any]) -> str:
    error = case.get("error")
    if isinstance(error, dict) and error:
        return f"{error.get('kind')}: {error.get('message')}"
    mismatch = case.get("mismatch")
    if isinstance(mismatch, dict) and mismatch:
        return f"{mismatch.get('reason')}: {mismatch.get('detail')}"
    violated = violation(case)
    if violated is not None:
        return f"{violated[0]}: {violated[1]}"
    if case.get("execution_match") and case.get("outcome") in MISS_OUTCOMES:
        return (f"pass_if does not hold (soft_f1 {fmt(case.get('soft_f1'))}, exact_match {fmt(case.get('exact_match'))}"
                f"{user_metric_values(case, fmt)})")
    if case.get("exact_match") is False:
        return f"exact_match: {case.get('exact_match_reason') or 'clauses differ'}"
    if "valid" in case and case["valid"] is None:  # scored, never run: a case with only a `schema:`
        return NOT_RUN
    return "pass_if does not hold"


def misses_by_reason(cases: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Misses (and failures) grouped by reason, largest group first, then by name."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for case in cases:
        if case.get("outcome") in MISS_OUTCOMES:
            groups[reason_key(case)].append(case)
    return dict(sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])))


def outcome_counts(cases: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for case in cases:
        counts[str(case.get("outcome"))] += 1
    return dict(counts)


def overall_outcomes(report: dict[str, Any]) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for suite in report.get("suites", []):
        for name, n in (suite.get("outcomes") or {}).items():
            totals[name] += n
    return dict(totals)


def outcome_text(outcomes: dict[str, int]) -> str:
    """``3 passed, 2 missed, 2 errors``: the outcomes that occurred, counted as pytest's last line counts them
    (``errors`` for more than one; passed, missed and failed read the same for any count)."""
    return ", ".join(f"{n} {name}{'s' if name == 'error' and n != 1 else ''}" for name, n in outcomes.items() if n)


def commit_label(report: dict[str, Any]) -> str | None:
    """``abc1234`` or ``abc1234 (dirty)`` from the run metadata, when the run knew its git commit."""
    git = (report.get("run") or {}).get("git")
    if not isinstance(git, dict) or not git.get("commit"):
        return None
    return str(git["commit"])[:12] + (" (dirty)" if git.get("dirty") else "")


def no_cases_note(report: dict[str, Any]) -> str | None:
    """What a report without any case says instead of its counts (why: a shard that got none), else None."""
    if report.get("cases") or any(s.get("cases") for s in report.get("suites", []) or []):
        return None
    shard = (report.get("run") or {}).get("shard")
    return f"no cases: shard {shard} got none (the other shards have them all)" if shard else "no cases"


def verdict_line(report: dict[str, Any]) -> str:
    failed = failed_gates(report)
    total = len(gates(report))
    if failed and _shard(report):
        return (f"{len(failed)} of {total} gate{'s' if total != 1 else ''} failed on shard {_shard(report)}'s part "
                "(`sqleval gate` on the merged report decides)")
    if failed:
        return f"{len(failed)} of {total} gate{'s' if total != 1 else ''} failed"
    if total:
        return f"all {total} gate{'s' if total != 1 else ''} passed"
    return "no gates"
