"""The ``sqleval-report/1`` JSON document written by ``--sqleval-json PATH``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from ..record import REPORT_KEYS
from ..registry import active_registry, definitions

SCHEMA = "sqleval-report/1"

def build_report(suites: Sequence[Any], records: Sequence[dict[str, Any]], *, run: dict[str, Any]) -> dict[str, Any]:
    from ..model.usage import attach_usage, run_models

    entries = [suite_entry(s) for s in suites]
    attach_usage(entries, records)  # per suite: model calls, cache hits, tokens, latency, cost
    models = run_models(records)
    keys = case_keys()
    report = {
        "schema": SCHEMA,
        "run": {**run, "model": models} if models is not None else run,
        "suites": entries,
        "cases": [case_entry(r, keys) for r in records],
    }
    extra_metrics = definitions()
    if extra_metrics:  # a user's metrics: what `sqleval merge|gate` need to aggregate them again
        report["metric_definitions"] = extra_metrics
    return report


def suite_entry(summary: Any) -> dict[str, Any]:
    aggregates = summary.aggregates
    entry = {
        "name": summary.name,
        "path": summary.path,
        "cases": aggregates["cases"],
        "outcomes": aggregates["outcomes"],
        "execution": summary.execution,
        "exact_match_profile": summary.exact_match_profile,
        "pass_if": summary.pass_if,
        "metrics": aggregates["metrics"],
        "by_difficulty": aggregates["by_difficulty"],
        "by_gold_sql": aggregates["by_gold_sql"],
        "by_tag": aggregates["by_tag"],
        "thresholds": [v.as_json() for v in summary.verdicts],
        "passed": summary.passed,
    }
    for optional in ("clauses", "by_turn", "intervals"):
        if optional in aggregates:
            entry[optional] = aggregates[optional]
    return entry


def case_keys() -> tuple[str, ...]:
    """The per-case keys the report writes: the case record's, then any registered metric's own key."""
    return REPORT_KEYS + tuple(k for k in active_registry().case_keys() if k not in REPORT_KEYS)


#: Case keys docs/report-format.md promises on every case: null where the case never got that far (a suite error,
#: a prediction that did not run), never absent.
ALWAYS_WRITTEN = frozenset({"error", "outcome", "valid", "execution_match", "soft_f1", "exact_match", "clauses",
                            "vacuous", "mismatch", "exact_match_reason", "order_note", "bird_soft_f1",
                            "execution_match_first"})


def case_entry(record: dict[str, Any], keys: tuple[str, ...] | None = None) -> dict[str, Any]:
    keys = keys or case_keys()
    entry = {key: record.get(key) for key in keys if key in record or key in ALWAYS_WRITTEN}
    if entry.get("interaction") is None:
        entry.pop("interaction", None)
        entry.pop("turn", None)
        entry.pop("interaction_turns", None)
    return entry


def write_report(path: str | Path, report: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:  # streamed: a 100,000-case report is never one string in memory
        with open(path, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2, ensure_ascii=False, default=str)
            f.write("\n")
    except UnicodeEncodeError:  # a lone surrogate somewhere: written as U+FFFD (see report_text)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(_valid_text(report), f, indent=2, ensure_ascii=False, default=str)
            f.write("\n")
    return path


def report_text(report: dict[str, Any]) -> str:
    """The report as JSON text that always encodes as UTF-8: a lone surrogate (invalid text in a
    prediction, a model's output, a database value) is written as U+FFFD, never an error."""
    text = json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(_valid_text(report), indent=2, ensure_ascii=False, default=str) + "\n"
    return text


def _valid_text(value: Any) -> Any:
    from ..predictions import printable_text

    if isinstance(value, str):
        return printable_text(value)
    if isinstance(value, dict):
        return {_valid_text(str(k)): _valid_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_valid_text(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return printable_text(str(value))
