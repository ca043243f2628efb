"""The bundled example suites: the README command, and identical aggregates on SQLite, DuckDB and PostgreSQL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "example_suites"


def run_examples(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    shutil.copytree(EXAMPLES, pytester.path / "example_suites")
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess("--sqleval", "example_suites/", f"--sqleval-json={report}",
                                           "-p", "no:cacheprovider", *args)
    return result, json.loads(report.read_text())


#: BIRD's soft F1 pairs rows by position (evaluation_f1.py), so for a query without ORDER BY it depends
#: on the order the engine returns rows in, as it does in BIRD: the one metric allowed to differ.
ORDER_DEPENDENT = ("bird_soft_f1",)


def _without(value, keys):
    if isinstance(value, dict):
        return {k: _without(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_without(v, keys) for v in value]
    return value


def comparable(report: dict) -> dict:
    """What must not depend on the engine: every suite aggregate and every case verdict."""
    suites = {s["name"]: _without({k: v for k, v in s.items() if k not in ("path",)}, ORDER_DEPENDENT)
              for s in report["suites"]}
    cases = {(c["suite"], c["id"]): (c["outcome"], c["valid"], (c["error"] or {}).get("kind"), c["execution_match"],
                                     c["soft_f1"], c["exact_match"], c.get("difficulty"))
             for c in report["cases"]}
    return {"suites": suites, "cases": cases}


def test_readme_command_shows_every_outcome_and_passes(pytester):
    result, report = run_examples(pytester)
    assert result.ret == 0
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] == 44 and outcomes["missed"] == 24
    kinds = {c["error"]["kind"] for c in report["cases"] if c["error"]}
    assert kinds == {"syntax", "timeout", "row_limit", "rejected", "no_prediction"}
    reasons = {c["mismatch"]["reason"] for c in report["cases"] if c.get("mismatch")}
    assert {"column_count", "row_count", "values", "order", "duplicates"} <= reasons
    mro = next(s for s in report["suites"] if s["name"] == "mro-maintenance")
    assert mro["metrics"]["vacuous"] == 1
    assert set(mro["by_difficulty"]) == {"easy", "medium", "hard", "extra"}
    assert mro["passed"] is True and all(t["passed"] for t in mro["thresholds"])
    shop = next(c for c in report["cases"] if c["id"] == "shop-most-tickets")
    assert shop["soft_f1"] == pytest.approx(2 / 3)  # the MRO paper's example


@pytest.mark.usefixtures("duckdb_available")
def test_identical_aggregates_on_duckdb(pytester, tmp_path):
    _, on_sqlite = run_examples(pytester)
    shutil.rmtree(pytester.path / "example_suites")
    _, on_duckdb = run_examples(pytester, "--sqleval-database-url=duckdb://")
    assert {c["database"] for c in on_duckdb["cases"]} == {"duckdb:// (built from schema.sql, data.sql)"}
    assert comparable(on_duckdb) == comparable(on_sqlite)


def test_identical_aggregates_on_postgres(pytester, postgres_url):
    _, on_sqlite = run_examples(pytester)
    shutil.rmtree(pytester.path / "example_suites")
    result, on_postgres = run_examples(pytester, f"--sqleval-database-url={postgres_url}", "-n", "2")
    assert result.ret == 0
    assert comparable(on_postgres) == comparable(on_sqlite)
