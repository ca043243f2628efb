"""Suites and predictions for the deploy-gate tests (baseline, shards, merge, gate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import make_sqlite

#: Two suites: 20 cases in `alpha`, 9 cases and one 3-turn interaction in `beta` (32 items, 30 units).
ALPHA = [f"a{i:02d}" for i in range(20)]
BETA = [f"b{i:02d}" for i in range(9)]
TURNS = ["talk/1", "talk/2", "talk/3"]


def gold(i: int) -> str:
    return f"SELECT id, hours FROM tickets WHERE id <= {i % 6 + 1} ORDER BY id"


def prediction(i: int, kind: str) -> str | None:
    """right: the gold; partial: one column (soft_f1 2/3); rows: one row too many; invalid: an unknown column."""
    k = i % 6 + 1
    return {
        "right": gold(i),
        "partial": f"SELECT id FROM tickets WHERE id <= {k} ORDER BY id",
        "rows": f"SELECT id, hours FROM tickets WHERE id <= {k + 1} ORDER BY id",
        "invalid": "SELECT nope FROM tickets",
        "none": None,
    }[kind]


def suite_yaml(name: str, ids: list[str], *, interaction: bool, thresholds: str = "") -> str:
    lines = [f"suite: {name}", "database: shop.sqlite", "timeout: 5"]
    if thresholds:
        lines.append(thresholds)
    lines.append("cases:")
    for n, case_id in enumerate(ids):
        lines += [f"  - id: {case_id}", f"    gold: {gold(n)}", f"    tags: [t{n % 3}]"]
    if interaction:
        lines += ["  - id: talk", "    interaction:"]
        for t in range(3):
            lines.append(f"      - {{question: turn {t + 1}, gold: \"{gold(t)}\"}}")
    return "\n".join(lines) + "\n"


def model(kinds: dict[str, str], default: str = "right") -> list[dict]:
    """Predictions for every case id of both suites; ``kinds`` overrides the default kind per id."""
    rows = []
    for ids in (ALPHA, BETA):
        for n, case_id in enumerate(ids):
            rows.append({"id": case_id, "sql": prediction(n, kinds.get(case_id, default))})
    for t, turn_id in enumerate(TURNS):
        rows.append({"id": turn_id, "sql": prediction(t, kinds.get(turn_id, default))})
    return rows


def write_model(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


#: The deployed model: misses a04, a06 (rows), a07 (partial), b03 (invalid): 28 of 32 pass.
BASELINE_KINDS = {"a04": "rows", "a06": "rows", "a07": "partial", "b03": "invalid"}
#: The candidate: fixes a04; regresses a10-a16 (partial or rows) and b04 (no prediction): 21 of 32 pass.
#: alpha: 1 fixed, 7 regressed (McNemar p = 2 * 9 / 2^8 = 0.0703); overall: 1 fixed, 8 regressed (p = 2 * 10 / 2^9 = 0.0391).
CANDIDATE_KINDS = {"a06": "rows", "a07": "partial", "b03": "invalid",
                   "a10": "partial", "a11": "partial", "a12": "partial", "a13": "rows", "a14": "rows",
                   "a15": "partial", "a16": "partial", "b04": "none"}
REGRESSED = ["a10", "a11", "a12", "a13", "a14", "a15", "a16"]


def make_project(pytester: pytest.Pytester, *, alpha_thresholds: str = "") -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite")
    (pytester.path / "alpha.sqleval.yaml").write_text(
        suite_yaml("alpha", ALPHA, interaction=False, thresholds=alpha_thresholds), encoding="utf-8")
    (pytester.path / "beta.sqleval.yaml").write_text(suite_yaml("beta", BETA, interaction=True), encoding="utf-8")
    write_model(pytester.path / "deployed.jsonl", model(BASELINE_KINDS))
    write_model(pytester.path / "candidate.jsonl", model(CANDIDATE_KINDS))
    return pytester


def run_report(pytester: pytest.Pytester, name: str, *args: str, predictions: str = "candidate.jsonl"):
    """Run pytest --sqleval in-process; returns (result, report dict or None)."""
    out = pytester.path / name
    result = pytester.runpytest("--sqleval", f"--sqleval-predictions={predictions}", f"--sqleval-json={out}",
                                "-p", "no:cacheprovider", *args)
    return result, (json.loads(out.read_text()) if out.exists() else None)


def make_deployed_project(pytester: pytest.Pytester, *, alpha_thresholds: str = "") -> pytest.Pytester:
    """:func:`make_project`, then the deployed model's run, whose report ``deployed.json`` is the baseline; that
    run passes (the suites' own thresholds hold for the deployed model)."""
    make_project(pytester, alpha_thresholds=alpha_thresholds)
    result, _ = run_report(pytester, "deployed.json", predictions="deployed.jsonl")
    assert result.ret == 0
    return pytester


def literal_brackets(*patterns: str) -> list[str]:
    """fnmatch patterns whose [ and ] are literal (intervals print as [lo, hi])."""
    return [p.replace("[", "\x00").replace("]", "[]]").replace("\x00", "[[]") for p in patterns]
