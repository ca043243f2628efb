"""Shared by the CI-output tests (Markdown, HTML, JUnit, --lf): a small suite and a full report dict."""

from __future__ import annotations

import copy
import textwrap

import pytest
import yaml  # noqa: F401 - imported here, outside pytester's inline runs: see below

import pytest_sqleval.loader  # noqa: F401
from conftest import make_sqlite

# pytester's inline runs drop the modules first imported inside them; PyYAML's C loader (libyaml) cannot be
# imported twice in one process, and a second copy of `yaml` makes it fail with "could not determine a
# constructor for the tag None". Importing both here keeps one copy for the whole test session.

#: 7 cases: 2 pass, 5 miss (column_count 1, syntax 1, no_prediction 1, values 2).
SUITE = """
suite: shop
database: shop.sqlite
timeout: 2
thresholds:
  execution_accuracy: 0.2
cases:
  - id: count-open
    question: How many open tickets?
    gold: SELECT count(*) FROM tickets WHERE status = 'open'
    predicted: SELECT count(id) FROM tickets WHERE status = 'open'
    difficulty: easy
    tags: [aggregation]
  - id: shops-by-name
    gold: SELECT name FROM shops ORDER BY name
    predicted: SELECT name FROM shops ORDER BY name
    difficulty: easy
  - id: busiest-shop
    question: Which shop has the most tickets?
    gold: SELECT s.name, count(*) AS n FROM tickets t JOIN shops s ON s.id = t.shop_id GROUP BY s.name ORDER BY n DESC LIMIT 1
    predicted: SELECT s.name FROM tickets t JOIN shops s ON s.id = t.shop_id GROUP BY s.name ORDER BY count(*) DESC LIMIT 1
    difficulty: hard
    tags: [joins]
  - id: bad-column
    gold: SELECT aircraft FROM tickets
    predicted: SELECT tail_number FROM tickets
    difficulty: easy
  - id: silent
    gold: SELECT count(*) FROM shops
    difficulty: easy
  - id: open-hours
    question: Total hours of open tickets?
    gold: SELECT sum(hours) FROM tickets WHERE status = 'open'
    predicted: SELECT sum(hours) FROM tickets
    difficulty: medium
    tags: [aggregation]
  - id: closed-count
    gold: SELECT count(*) FROM tickets WHERE status = 'closed'
    predicted: SELECT count(*) FROM tickets
    difficulty: medium
    tags: [aggregation]
"""
MISSES = {"busiest-shop": "column_count", "bad-column": "syntax", "silent": "no_prediction",
          "open-hours": "values", "closed-count": "values"}
PASSES = {"count-open", "shops-by-name"}

WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])


def make_shop(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(SUITE))
    return pytester


def _case(case_id, outcome, *, difficulty="easy", tags=(), error=None, mismatch=None, soft_f1=1.0, question=None,
          predicted="SELECT 1"):
    return {
        "suite": "shop", "id": case_id, "database": "shop.sqlite", "difficulty": difficulty, "tags": list(tags),
        "question": question, "gold": "SELECT 1", "predicted": predicted, "valid": error is None, "error": error,
        "execution_match": outcome == "passed", "soft_f1": soft_f1, "exact_match": outcome == "passed",
        "clauses": None, "vacuous": False, "outcome": outcome, "mismatch": mismatch,
    }


MISMATCH = {"database": "shop.sqlite", "reason": "values", "detail": "1 gold row is missing | 1 extra",
            "gold_shape": [1, 1], "predicted_shape": [1, 1], "gold_columns": ["n"], "predicted_columns": ["n"],
            "gold_only_rows": [[3]], "predicted_only_rows": [[6]], "gold_head": [[3]], "predicted_head": [[6]]}

_FULL = {
    "schema": "sqleval-report/1",
    "run": {"plugin_version": "0.1.0", "pytest_version": "9.2.0"},
    "suites": [{
        "name": "shop", "path": "shop.sqleval.yaml", "cases": 5,
        "outcomes": {"passed": 2, "missed": 3, "failed": 0, "error": 0},
        "execution": {"profile": "sqleval"}, "exact_match_profile": "sqleval", "pass_if": "execution_match",
        "metrics": {"valid_syntax": 0.8, "error_count": 1, "errors_by_kind": {"syntax": 1},
                    "execution_accuracy": 0.4, "soft_f1": 0.6, "exact_match": 0.4, "pass_rate": 0.4, "vacuous": 0},
        "intervals": {"execution_accuracy": [0.1176, 0.7693], "soft_f1": [0.2, 1.0], "valid_syntax": [0.3755, 0.9638],
                      "exact_match": [0.1176, 0.7693], "pass_rate": [0.1176, 0.7693]},
        "by_difficulty": {"easy": {"cases": 3, "execution_accuracy": 0.6667, "soft_f1": 0.6667, "exact_match": 0.6667,
                                   "valid_syntax": 0.6667, "error_count": 1},
                          "medium": {"cases": 2, "execution_accuracy": 0.0, "soft_f1": 0.5, "exact_match": 0.0,
                                     "valid_syntax": 1.0, "error_count": 0}},
        "by_gold_sql": {"groups": 5, "execution_accuracy": 0.4},
        "by_tag": {"joins": {"cases": 2, "execution_accuracy": 0.5, "soft_f1": 0.75}},
        "thresholds": [{"metric": "execution_accuracy", "min": 0.3, "value": 0.4, "passed": True, "source": "suite"}],
        "passed": False,
    }, {
        "name": "other", "path": "other.sqleval.yaml", "cases": 1,
        "outcomes": {"passed": 1, "missed": 0, "failed": 0, "error": 0},
        "execution": {"profile": "sqleval"}, "exact_match_profile": "sqleval", "pass_if": "execution_match",
        "metrics": {"valid_syntax": 1.0, "error_count": 0, "errors_by_kind": {}, "execution_accuracy": 1.0,
                    "soft_f1": 1.0, "exact_match": 1.0, "pass_rate": 1.0, "vacuous": 0},
        "by_difficulty": {"easy": {"cases": 1, "execution_accuracy": 1.0}}, "by_gold_sql": {}, "by_tag": {},
        "thresholds": [], "passed": True,
    }],
    "cases": [
        _case("a-pass", "passed", tags=["joins"], question="How many shops?"),
        _case("b-pass", "passed"),
        _case("c-regressed", "missed", difficulty="medium", tags=["joins"], mismatch=MISMATCH, soft_f1=0.5,
              question="Open tickets <by> shop?"),
        _case("d-syntax", "missed", error={"kind": "syntax", "message": "no such column: tail_number"}, soft_f1=0.0),
        _case("e-new", "missed", difficulty="medium", mismatch=dict(MISMATCH, reason="row_count",
                                                                     detail="gold has 1 row, the prediction 2"),
              soft_f1=0.5),
        dict(_case("f-other", "passed"), suite="other"),
    ],
    "overall": {"cases": 6, "metrics": {"execution_accuracy": 0.4, "soft_f1": 0.6},
                "intervals": {"execution_accuracy": [0.1176, 0.7693], "soft_f1": [0.2, 1.0]}},
    "gates": [
        {"name": "shop::execution_accuracy", "kind": "threshold", "suite": "shop", "metric": "execution_accuracy",
         "value": 0.4, "limit": 0.3, "passed": True, "message": "PASS execution_accuracy 0.40 >= 0.30"},
        {"name": "shop::max_regressed", "kind": "max_regressed", "suite": "shop", "metric": "regressed",
         "value": 1, "limit": 0, "passed": False, "message": "FAIL 1 regressed case > 0 allowed"},
    ],
    "baseline": {
        "path": "baseline.json",
        "warnings": ["the suite file shop.sqleval.yaml changed since the baseline"],
        "suites": [{
            "name": "shop",
            "pairs": {"fixed": ["b-pass"], "regressed": ["c-regressed"], "still_missed": ["d-syntax"],
                      "still_passed": ["a-pass"], "new": ["e-new"], "removed": ["z-gone"]},
            "metrics": {
                "execution_accuracy": {"current": 0.4, "baseline": 0.5, "delta": -0.1, "ci": [-0.45, 0.3],
                                       "p_value": 1.0, "test": "mcnemar_exact", "n_pairs": 4},
                "soft_f1": {"current": 0.6, "baseline": 0.55, "delta": 0.05, "ci": [-0.2, 0.3],
                            "p_value": 0.75, "test": "sign_flip", "n_pairs": 4},
            },
        }],
        "overall": {"metrics": {"execution_accuracy": {"current": 0.4, "baseline": 0.5, "delta": -0.1,
                                                       "ci": [-0.45, 0.3], "p_value": 1.0, "test": "mcnemar_exact",
                                                       "n_pairs": 4}}},
    },
}


def full_report() -> dict:
    """A report with every optional block (intervals, overall, gates, baseline): hand-written, so known."""
    return copy.deepcopy(_FULL)


def bare_report() -> dict:
    """The same report without the optional blocks (as an older plugin writes it)."""
    report = full_report()
    for key in ("overall", "gates", "baseline"):
        report.pop(key)
    report["suites"][0].pop("intervals")
    return report
