"""Collection nodes: a suite file collects one test item per case (or interaction turn).

Items are :class:`pytest.Function` objects whose function asks for fixtures,
so users can override ``sqleval_engine`` (and the others) in ``conftest.py``,
select cases with ``-k``, and use tags as markers with ``-m``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .errors import DatabaseError, GoldError, SuiteError
from .loader import load_suite
from .predictions import Prediction, load_predictions, unmatched_ids
from .report.diff import render_miss
from .suite import Case, Suite

SUITE_SUFFIXES = (".sqleval.yaml", ".sqleval.yml")
YAML_SUFFIXES = (".yaml", ".yml")


def is_suite_file(path: Path) -> bool:
    return path.name.endswith(SUITE_SUFFIXES)


class GoldBroken(Exception):
    """A gold that gave different results on two runs (``--sqleval-check-gold``)."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        super().__init__("; ".join(f["message"] for f in record["gold_findings"] if f["severity"] == "broken"))


class CaseMissed(Exception):
    """Raised for a miss under ``--sqleval-strict``, so the miss becomes a failure."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        super().__init__(miss_reason(record))


def miss_reason(record: dict[str, Any]) -> str:
    error = record.get("error")
    if error:
        return f"{error['kind']}: {error['message']}"
    mismatch = record.get("mismatch")
    if mismatch:
        return f"{mismatch['reason']}: {mismatch['detail']}"
    if record.get("execution_match") and not record.get("passed_rule"):
        return f"pass_if does not hold (soft_f1 {record.get('soft_f1')}, exact_match {record.get('exact_match')})"
    if record.get("exact_match") is False:
        return f"exact_match: {record.get('exact_match_reason') or 'clauses differ'}"
    return "pass_if does not hold"


class SuiteFile(pytest.File):
    """A ``*.sqleval.yaml`` file (or an explicitly named YAML file) holding one suite."""

    def collect(self):
        from .plugin import sqleval_state

        state = sqleval_state(self.config)
        suite = load_suite(self.path)
        predictions = self._predictions(suite, state)
        state.register_suite(suite)
        for case in suite.cases:
            item = CaseItem.from_parent(
                self,
                name=case.item_name,
                callobj=run_sqleval_case,
                case=case,
                suite=suite,
                prediction=self._prediction_for(case, suite, predictions),
            )
            _add_markers(item, case, suite)
            yield item

    def _predictions(self, suite: Suite, state) -> dict[str, Prediction] | None:
        if state.predictions is not None:
            return state.predictions
        if suite.predictions_file is None:
            return None
        predictions = load_predictions(suite.predictions_file)
        unknown = unmatched_ids(predictions, {c.id for c in suite.cases})
        if unknown:
            raise SuiteError(
                f"the predictions file {suite.predictions_file} has ids that match no case: {', '.join(unknown[:20])}",
                path=self.path,
                fix="fix the ids (a turn is <interaction>/<n>) or remove those lines",
            )
        return predictions

    @staticmethod
    def _prediction_for(case: Case, suite: Suite, predictions: dict[str, Prediction] | None) -> str | None:
        if predictions is None:
            return case.predicted
        found = predictions.get(f"{suite.name}::{case.id}") or predictions.get(case.id)
        return found.sql if found else None

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, SuiteError):
            return excinfo.value.render()
        return super().repr_failure(excinfo)


def _add_markers(item: pytest.Item, case: Case, suite: Suite) -> None:
    item.add_marker(pytest.mark.sqleval(suite=suite.name, case=case.id))
    for tag in case.tags:
        _register_marker(item.config, tag)
        item.add_marker(tag)


def _register_marker(config: pytest.Config, name: str) -> None:
    known = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}
    if name not in known:
        config.addinivalue_line("markers", f"{name}: sqleval case tag")


class CaseItem(pytest.Function):
    """One case (or interaction turn) of a suite."""

    def __init__(self, *, case: Case, suite: Suite, prediction: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.suite = suite
        self.prediction = prediction

    def reportinfo(self):
        return self.suite.path, self.case.line - 1, f"sqleval: {self.case.id}"

    def repr_failure(self, excinfo, style=None):
        error = excinfo.value
        if isinstance(error, CaseMissed):
            return render_miss(error.record, verbose=True)
        if isinstance(error, GoldBroken):
            return f"{self.suite.path}:{self.case.line}: case {self.case.id}: broken gold: {error}"
        if isinstance(error, (SuiteError, GoldError, DatabaseError)):
            return f"{self.suite.path}:{self.case.line}: case {self.case.id}: {error}"
        return super().repr_failure(excinfo, style)


def run_sqleval_case(request, sqleval_case, sqleval_engine, sqleval_gold):
    """The body of every suite item: evaluate the prediction and record the verdict."""
    from .plugin import sqleval_state

    item = request.node
    state = sqleval_state(request.config)
    suite = item.suite
    engines = state.case_engines(sqleval_case, sqleval_engine)
    if state.settings.check_gold:
        return check_gold_case(item, state, engines, sqleval_gold)
    record = state.evaluator.evaluate(
        sqleval_case, suite, item.prediction, engines, sqleval_gold,
        timeout=state.timeout_for(suite), max_rows=state.max_rows_for(suite), database=state.database_label(sqleval_case),
    )
    if record["passed_rule"]:
        record["outcome"] = "passed"
    else:
        record["outcome"] = "failed" if state.settings.strict else "missed"
    item.user_properties.append(("sqleval", record))
    if record["outcome"] == "failed":
        raise CaseMissed(record)


def check_gold_case(item: CaseItem, state, engines, prepared) -> None:
    """``--sqleval-check-gold``: findings on the gold instead of scoring the prediction."""
    from .evaluate import base_record
    from .goldcheck import Finding, check_gold, findings_record

    findings: list[Finding] = []
    for run, engine in zip(prepared.gold, engines):
        for finding in check_gold(item.case.gold, run.result, engine, dialect=prepared.dialect,
                                  timeout=state.timeout_for(item.suite), max_rows=state.max_rows_for(item.suite),
                                  size_threshold=state.settings.gold_size):
            if len(engines) > 1:
                finding = Finding(finding.kind, finding.severity, f"{run.database}: {finding.message}")
            findings.append(finding)
    record = base_record(item.case, item.suite, item.prediction, prepared, database=state.database_label(item.case))
    record.update(findings_record(findings))
    record["outcome"] = {"clean": "passed", "flagged": "flagged", "broken": "failed"}[record["gold_status"]]
    item.user_properties.append(("sqleval", record))
    if record["outcome"] == "failed":
        raise GoldBroken(record)
