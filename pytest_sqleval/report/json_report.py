"""The ``sqleval-report/1`` JSON document written by ``--sqleval-json PATH``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

SCHEMA = "sqleval-report/1"

#: Per-case keys, in the order the report writes them.
CASE_KEYS = (
    "suite", "id", "interaction", "turn", "database", "difficulty", "tags", "question", "gold", "predicted",
    "valid", "error", "execution_match", "soft_f1", "exact_match", "clauses", "vacuous", "outcome",
    "mismatch", "databases", "exact_match_reason", "difficulty_source", "order_note", "metadata",
)


def build_report(suites: Sequence[Any], records: Sequence[dict[str, Any]], *, run: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "run": run,
        "suites": [suite_entry(s) for s in suites],
        "cases": [case_entry(r) for r in records],
    }


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
    for optional in ("clauses", "by_turn"):
        if optional in aggregates:
            entry[optional] = aggregates[optional]
    return entry


def case_entry(record: dict[str, Any]) -> dict[str, Any]:
    entry = {key: record.get(key) for key in CASE_KEYS if key in record or key in ("error", "outcome")}
    if entry.get("interaction") is None:
        entry.pop("interaction", None)
        entry.pop("turn", None)
    return entry


def write_report(path: str | Path, report: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return path
