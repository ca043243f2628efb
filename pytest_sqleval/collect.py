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
from .predictions import Prediction, load_predictions, unmatched_ids
from .report.diff import miss_reason, render_miss
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


class CaseErrored(Exception):
    """A case whose scoring raised (a bug of ours, recursion, memory): recorded as an error, the run goes on."""

    def __init__(self, record: dict[str, Any], error: BaseException) -> None:
        self.record = record
        self.error = error
        super().__init__(internal_error_message(error))


def internal_error_message(error: BaseException) -> str:
    """A short, one-line account of an unexpected exception (no traceback, no case objects)."""
    if isinstance(error, CaseErrored):
        error = error.error
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if isinstance(error, RecursionError):
        text = "nested too deeply to score"
    elif isinstance(error, MemoryError):
        text = "ran out of memory while scoring"
    text = text[:300]
    return f"internal error while scoring ({type(error).__name__}{': ' + text if text else ''}); run with --tb=long for the traceback"


def _wants_traceback(config) -> bool:
    return config.getoption("tbstyle", "auto") in ("long", "native") or config.getoption("verbose", 0) >= 2


class CaseMissed(Exception):
    """Raised for a miss under ``--sqleval-strict``, so the miss becomes a failure."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        super().__init__(miss_reason(record))


class SuiteFile(pytest.File):
    """A ``*.sqleval.yaml`` file (or an explicitly named YAML file) holding one suite."""

    def collect(self):
        from .plugin import sqleval_state
        from .suite_cache import load_suite_shared

        state = sqleval_state(self.config)
        suite = load_suite_shared(self.path, state.engines.shared_build_dir)  # xdist: read once per run
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
            if predictions is not None:  # a predictions file wins over a model and `predicted:` (model_plugin.py)
                item.prediction_file_entry = predictions.get(f"{suite.name}::{case.id}") or predictions.get(case.id)
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

    def repr_failure(self, excinfo, style=None):  # pytest 9 passes only excinfo; older pytest may pass style
        error = excinfo.value
        if isinstance(error, CaseMissed):
            return render_miss(error.record, verbose=True)
        if isinstance(error, GoldBroken):
            return f"{self.suite.path}:{self.case.line}: case {self.case.id}: broken gold: {error}"
        if isinstance(error, (SuiteError, GoldError, DatabaseError)):
            return f"{self.suite.path}:{self.case.line}: case {self.case.id}: {error}"
        if not _wants_traceback(self.config):
            return f"{self.suite.path}:{self.case.line}: case {self.case.id}: {internal_error_message(error)}"
        if isinstance(error, CaseErrored):
            excinfo = pytest.ExceptionInfo.from_exception(error.error)
        return super().repr_failure(excinfo)


def run_sqleval_case(request, sqleval_case, sqleval_engine, sqleval_gold, sqleval_prediction):
    """The body of every suite item: evaluate the prediction and record the verdict."""
    from .plugin import sqleval_state

    item = request.node
    state = sqleval_state(request.config)
    suite = item.suite
    engines = state.case_engines(sqleval_case, sqleval_engine)
    if state.settings.check_gold:
        return check_gold_case(item, state, engines, sqleval_gold)
    chosen = sqleval_prediction.resolve()  # predictions file > model > `predicted:` (pytest_sqleval/model_plugin.py)
    item.prediction = chosen.sql
    try:
        record = state.evaluator.evaluate(
            sqleval_case, suite, item.prediction, engines, sqleval_gold,
            timeout=state.timeout_for(suite), max_rows=state.max_rows_for(suite),
            database=state.database_label(sqleval_case, sqleval_engine), **_limits(state, suite),
            prediction_error=chosen.query_error,
        )
        record.update(chosen.record_fields())
    except (Exception, RecursionError, MemoryError) as exc:  # noqa: BLE001 - one case never takes the run down
        record = errored_record(item, state, sqleval_gold, exc)
        item.sqleval_record = record
        raise CaseErrored(record, exc) from None
    if record["passed_rule"]:
        record["outcome"] = "passed"
    else:
        record["outcome"] = "failed" if state.settings.strict else "missed"
    item.sqleval_record = record
    if record["outcome"] == "failed":
        raise CaseMissed(record)


def _limits(state, suite: Suite) -> dict[str, Any]:
    """The per-suite limits beyond timeout and row cap: the memory cap and the user's allowed functions."""
    return {"max_memory": state.max_memory_for(suite), "allow_functions": state.allowed_functions_for(suite)}


def crashed_case_record(state, rootpath: Path, nodeid: str, message: str) -> dict[str, Any] | None:
    """The ``error`` record of a case whose xdist worker crashed while running it (None: not a suite item)."""
    path, sep, name = nodeid.partition("::")
    if not sep or not path.endswith(SUITE_SUFFIXES + YAML_SUFFIXES):
        return None
    suite = state.suite_at(str((rootpath / path).resolve()))
    case = next((c for c in suite.cases if c.item_name == name), None)
    if case is None:
        return None
    return error_record(case, suite, None, state, "worker_crashed",
                        f"worker crashed: {message.strip().splitlines()[0][:300]}")


def errored_record(item: "CaseItem", state, prepared, error: BaseException) -> dict[str, Any]:
    """The record of a case whose scoring raised: outcome ``error``, kind ``internal``, a short message."""
    return error_record(item.case, item.suite, item.prediction, state, "internal", internal_error_message(error),
                        prepared=prepared)


def error_record(case: Case, suite: Suite, prediction: str | None, state, kind: str, message: str, *,
                 prepared=None) -> dict[str, Any]:
    """The one shape of a case that could not be scored (outcome ``error``): a broken gold or database, an
    exception while scoring, a crashed worker. ``state`` may be None (then no database label)."""
    from .evaluate import Prepared, base_record

    if prepared is None:
        prepared = Prepared(gold=(), schema=None, dialect="", difficulty=case.difficulty, difficulty_source="suite")
    database = state.database_label(case) if state is not None else None
    record = base_record(case, suite, prediction, prepared, database=database)
    record.update({
        "valid": None, "execution_match": None, "soft_f1": None, "exact_match": None, "passed_rule": False,
        "vacuous": False, "mismatch": None, "outcome": "error", "error": {"kind": kind, "message": message},
    })
    return record


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
    item.sqleval_record = record
    if record["outcome"] == "failed":
        raise GoldBroken(record)
