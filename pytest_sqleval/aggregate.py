"""Suite aggregates from per-case records.

Pure functions over the JSON records that :mod:`pytest_sqleval.evaluate`
produces. Records are put in file order first and sums use ``math.fsum``, so
the aggregates do not depend on the order in which xdist workers report.

Only *scored* cases count in metric denominators: a case whose gold failed
(outcome ``error``) is an error of the suite, never the model's miss.

Definitions (n = scored cases):

- ``valid_syntax``: share of predictions that executed (LogicCat VES).
- ``error_count``: predictions that did not execute (MRO), with ``errors_by_kind``.
- ``execution_accuracy``: share of results equal under the suite's profile
  (on the first database when a case has several).
- ``test_suite_accuracy``: share equal on *every* database (when any case has several).
- ``soft_f1``: mean MRO Soft Execution F1.
- ``bird_soft_f1``: mean BIRD mini-dev Soft F1 (``evaluation_f1.py``).
- ``r_ves``: mean of sqrt(R-VES reward) (BIRD mini-dev ``evaluation_ves.py`` / 100), with ``--sqleval-efficiency``.
- ``exact_match``: share of exact set matches (cases where it was computed).
- ``pass_rate``: share of cases whose ``pass_if`` held.
- ``vacuous``: matches where gold and prediction both returned no rows.
- ``question_match`` / ``interaction_match`` / ``interaction_execution_accuracy``:
  SParC's aggregates over interaction turns (the pass rule; every turn passes;
  every turn's execution matches).
- ``by_gold_sql``: MRO 3.2, the mean per distinct gold SQL, then the mean of
  those means (``error_count`` there is the sum of the per-group error rates).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

RATE_METRICS = ("valid_syntax", "execution_accuracy", "soft_f1", "exact_match", "pass_rate", "bird_soft_f1", "r_ves")
TURN_BUCKETS = ("1", "2", "3", "4", ">4")


def aggregate_suite(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    ordered = sorted(records, key=lambda r: (r.get("index", 0), r.get("id", "")))
    scored = [r for r in ordered if r.get("outcome") != "error"]
    result: dict[str, Any] = {
        "cases": len(ordered),
        "outcomes": outcome_counts(ordered),
        "metrics": case_metrics(scored),
        "by_gold_sql": grouped_by_gold(scored),
        "by_difficulty": breakdown(scored, lambda r: [r.get("difficulty") or "unknown"]),
        "by_tag": breakdown(scored, lambda r: r.get("tags") or []),
    }
    clauses = clause_accuracy(scored)
    if clauses:
        result["clauses"] = clauses
    if any(r.get("interaction") is not None for r in ordered):
        result["metrics"].update(interaction_metrics(ordered))
        result["by_turn"] = turn_breakdown(scored)
    result["intervals"] = intervals(ordered, result["metrics"])
    return result


def outcome_counts(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = {"passed": 0, "missed": 0, "failed": 0, "error": 0}
    for record in records:
        counts[record.get("outcome", "error")] = counts.get(record.get("outcome", "error"), 0) + 1
    return counts


def mean(values: Iterable[float | bool | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


def case_metrics(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    executed = [r for r in records if r.get("valid") is not None]
    if not executed:
        return {k: v for k, v in (("exact_match", mean(r.get("exact_match") for r in records)),
                                  ("pass_rate", mean(r.get("passed_rule") for r in records))) if v is not None}
    metrics: dict[str, Any] = {
        "valid_syntax": mean(r["valid"] for r in executed),
        "error_count": sum(1 for r in executed if r["valid"] is False),
        "errors_by_kind": errors_by_kind(executed),
        "execution_accuracy": mean(r.get("execution_match_first", r.get("execution_match")) for r in executed),
        "soft_f1": mean(r.get("soft_f1") for r in executed),
        "bird_soft_f1": mean(r.get("bird_soft_f1") for r in executed),
        "r_ves": mean(r.get("r_ves") for r in executed),
        "exact_match": mean(r.get("exact_match") for r in records),
        "pass_rate": mean(r.get("passed_rule") for r in records),
        "vacuous": sum(1 for r in executed if r.get("vacuous")),
    }
    if any("databases" in r for r in executed):
        metrics["test_suite_accuracy"] = mean(r.get("execution_match") for r in executed)
    return {k: v for k, v in metrics.items() if v is not None}


def errors_by_kind(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for record in records:
        error = record.get("error")
        if error:
            counts[error["kind"]] += 1
    return dict(sorted(counts.items()))


def gold_key(sql: str) -> str:
    """Identical gold SQL up to white space and a trailing semicolon."""
    return " ".join(sql.split()).rstrip(";").strip()


def group_key(record: Mapping[str, Any]) -> str:
    """The gold SQL a case is grouped by; a case with ``expected:`` rows instead of a gold is a group of its own."""
    gold = record.get("gold")
    if gold:
        return gold_key(gold)
    return f"\x00expected rows of {record.get('suite')}::{record.get('id')}"


def grouped_by_gold(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[group_key(record)].append(record)
    if not groups:
        return {}
    per_group = [case_metrics(groups[key]) for key in sorted(groups)]
    result: dict[str, Any] = {"groups": len(groups)}
    for metric in (*RATE_METRICS, "test_suite_accuracy"):
        value = mean(g.get(metric) for g in per_group)
        if value is not None:
            result[metric] = value
    error_rates = [_error_rate(groups[key]) for key in sorted(groups)]
    if any(rate is not None for rate in error_rates):
        result["error_count"] = math.fsum(rate for rate in error_rates if rate is not None)
    return result


def _error_rate(records: Sequence[Mapping[str, Any]]) -> float | None:
    executed = [r for r in records if r.get("valid") is not None]
    if not executed:
        return None
    return sum(1 for r in executed if r["valid"] is False) / len(executed)


def breakdown(records: Sequence[Mapping[str, Any]], keys_of) -> dict[str, Any]:
    buckets: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        for key in keys_of(record):
            buckets[str(key)].append(record)
    result = {}
    for key, rows in sorted(buckets.items(), key=_level_order):
        metrics = case_metrics(rows)
        result[key] = {"cases": len(rows), **metrics, "intervals": intervals(rows, metrics)}
    return result


_LEVELS = {"easy": 0, "medium": 1, "hard": 2, "extra": 3, "unknown": 9}


def _level_order(item: tuple[str, Any]) -> tuple[int, str]:
    return (_LEVELS.get(item[0], 5), item[0])


def clause_accuracy(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Share of cases in which each exact-match component agrees."""
    verdicts: dict[str, list[bool]] = defaultdict(list)
    for record in records:
        for clause, ok in (record.get("clauses") or {}).items():
            verdicts[clause].append(bool(ok))
    return {clause: math.fsum(map(float, oks)) / len(oks) for clause, oks in verdicts.items()}


def interaction_metrics(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """SParC aggregates; an interaction with a turn whose gold failed (a suite error) is left out."""
    grouped: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("interaction") is not None:
            grouped[record["interaction"]].append(record)
    by_interaction = {k: rs for k, rs in grouped.items() if all(r.get("outcome") != "error" for r in rs)}
    turns = [r for rs in by_interaction.values() for r in rs]
    metrics = {
        "question_match": mean(r.get("passed_rule") for r in turns),
        "interaction_match": mean(all(r.get("passed_rule") for r in rs) for rs in by_interaction.values()),
    }
    if all(r.get("execution_match") is not None for r in turns):
        metrics["interaction_execution_accuracy"] = mean(
            all(r.get("execution_match") for r in rs) for rs in by_interaction.values()
        )
    return {k: v for k, v in metrics.items() if v is not None}


def turn_bucket(turn: int) -> str:
    return str(turn) if turn <= 4 else ">4"


def turn_breakdown(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    buckets: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("turn") is not None:
            buckets[turn_bucket(record["turn"])].append(record)
    return {
        bucket: {
            "turns": len(buckets[bucket]),
            "question_match": mean(r.get("passed_rule") for r in buckets[bucket]),
            **({"execution_accuracy": mean(r.get("execution_match") for r in buckets[bucket])}
               if all(r.get("execution_match") is not None for r in buckets[bucket]) else {}),
        }
        for bucket in TURN_BUCKETS
        if bucket in buckets
    }


# --------------------------------------------------------------------------- intervals and the overall figure
#: Per-case 0/1 metrics (a Wilson interval; an exact McNemar test against a baseline).
SHARE_METRICS = ("valid_syntax", "execution_accuracy", "test_suite_accuracy", "exact_match", "pass_rate")
#: Per-case means (a bootstrap interval; a sign-flip test against a baseline).
MEAN_METRICS = ("soft_f1", "bird_soft_f1", "r_ves")
#: Shares over interaction turns or whole interactions (a Wilson interval).
INTERACTION_SHARES = ("question_match", "interaction_match", "interaction_execution_accuracy")


def case_value(record: Mapping[str, Any], metric: str) -> float | None:
    """One case's contribution to a per-case metric (None when it does not count), as in case_metrics."""
    if record.get("outcome") == "error":
        return None
    if metric in ("exact_match", "pass_rate"):
        value = record.get("passed_rule" if metric == "pass_rate" else "exact_match")
        return None if value is None else float(value)
    if record.get("valid") is None:
        return None
    if metric == "valid_syntax":
        return float(record["valid"])
    if metric == "execution_accuracy":
        value = record.get("execution_match_first", record.get("execution_match"))
    elif metric == "test_suite_accuracy":
        value = record.get("execution_match")
    elif metric in ("soft_f1", "bird_soft_f1", "r_ves"):
        value = record.get(metric)
    else:
        raise KeyError(metric)
    return None if value is None else float(value)


def interaction_vectors(records: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """The 0/1 outcomes behind question_match, interaction_match and interaction_execution_accuracy."""
    grouped: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("interaction") is not None:
            grouped[record["interaction"]].append(record)
    complete = [rs for rs in grouped.values() if all(r.get("outcome") != "error" for r in rs)]
    turns = [r for rs in complete for r in rs]
    vectors = {
        "question_match": [float(bool(r.get("passed_rule"))) for r in turns],
        "interaction_match": [float(all(r.get("passed_rule") for r in rs)) for rs in complete],
    }
    if all(r.get("execution_match") is not None for r in turns):
        vectors["interaction_execution_accuracy"] = [float(all(r.get("execution_match") for r in rs)) for rs in complete]
    return vectors


def intervals(records: Sequence[Mapping[str, Any]], metrics: Mapping[str, Any]) -> dict[str, list[float]]:
    """95% intervals of the rates in ``metrics``: Wilson for shares, a seeded bootstrap for means."""
    from .stats import bootstrap_mean, wilson

    result: dict[str, list[float]] = {}
    vectors: dict[str, list[float]] = {}
    for metric in (*SHARE_METRICS, *MEAN_METRICS):
        if metric in metrics:
            vectors[metric] = [v for v in (case_value(r, metric) for r in records) if v is not None]
    if any(metric in metrics for metric in INTERACTION_SHARES):
        vectors.update({k: v for k, v in interaction_vectors(records).items() if k in metrics})
    for metric, values in vectors.items():
        if metric in MEAN_METRICS:
            interval = bootstrap_mean(values)
        else:
            interval = wilson(sum(1 for v in values if v), len(values))
        if interval is not None:
            result[metric] = [interval[0], interval[1]]
    return result


def aggregate_overall(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The micro-average over every scored case of every suite (interactions stay within their suite)."""
    ordered = sorted(records, key=lambda r: (str(r.get("suite")), r.get("index", 0), str(r.get("id"))))
    ordered = [dict(r, interaction=f"{r.get('suite')}::{r['interaction']}") if r.get("interaction") is not None else r
               for r in ordered]
    scored = [r for r in ordered if r.get("outcome") != "error"]
    result: dict[str, Any] = {
        "suites": len({r.get("suite") for r in ordered}),
        "cases": len(ordered),
        "scored": len(scored),
        "outcomes": outcome_counts(ordered),
        "metrics": case_metrics(scored),
    }
    if any(r.get("interaction") is not None for r in ordered):
        result["metrics"].update(interaction_metrics(ordered))
    result["intervals"] = intervals(ordered, result["metrics"])
    return result

