"""Evaluate one case: run the gold and the prediction, compare, score, decide.

No pytest here. :class:`Evaluator` holds the per-session caches (gold results,
schemas, order plans) and turns a :class:`~pytest_sqleval.suite.Case` into a
record: a dict of JSON primitives that travels with the test report (also
across xdist workers) and becomes one entry of the JSON report.
"""

from __future__ import annotations

import datetime as _dt
import decimal
from dataclasses import dataclass, field
from typing import Any, Sequence

from sqlglot.errors import SqlglotError

from .errors import DatabaseError, GoldError, QueryError
from .execution.runner import run_query, sqlglot_dialect
from .metrics.execution_match import compare_results
from .metrics.profiles import ComparisonOptions
from .metrics.soft_f1 import soft_f1
from .results import QueryResult
from .schema import Schema
from .sql.ordering import plan_order, tie_group_starts
from .sql.rewrite import strip_distinct
from .suite import Case, Suite

#: Example rows kept in a record for the miss diff.
DIFF_ROWS = 5


@dataclass(frozen=True)
class GoldRun:
    """The gold's result on one database, with what its ORDER BY asks of a prediction."""

    database: str
    result: QueryResult
    ordered: bool
    tie_groups: tuple[int, ...] | None
    note: str = ""


@dataclass
class Evaluator:
    """Runs and scores cases; caches gold results and schemas for the session."""

    timeout: float
    max_rows: int
    _gold_cache: dict[Any, GoldRun | GoldError] = field(default_factory=dict)
    _schemas: dict[Any, Schema] = field(default_factory=dict)
    _gold_readability: dict[Any, Exception | None] = field(default_factory=dict)
    _hardness: dict[Any, Any] = field(default_factory=dict)

    # -- gold ------------------------------------------------------------------
    def gold_runs(self, case: Case, suite: Suite, engines: Sequence[Any], *, timeout: float | None = None,
                  max_rows: int | None = None) -> list[GoldRun]:
        """The gold's result on each of the case's databases (each executed once per session)."""
        timeout = timeout or self.timeout
        max_rows = max_rows or self.max_rows
        runs = []
        for spec, engine in zip(case.databases, engines):
            dialect = suite_dialect(suite, engine)
            key = (id(engine), case.gold, dialect, suite.execution, timeout, max_rows)
            if key not in self._gold_cache:
                self._gold_cache[key] = self._run_gold(case.gold, suite.execution, engine, dialect, spec.display, timeout, max_rows)
            cached = self._gold_cache[key]
            if isinstance(cached, GoldError):
                raise GoldError(f"{cached} [case {case.id}]")
            runs.append(cached)
        return runs

    def _run_gold(self, gold: str, options: ComparisonOptions, engine, dialect: str, display: str,
                  timeout: float, max_rows: int) -> GoldRun | GoldError:
        try:
            sql = strip_distinct(gold, dialect) if options.distinct == "strip" else gold
        except SqlglotError as exc:
            return GoldError(f"the profile strips DISTINCT, which needs sqlglot to read the gold in {dialect}: {exc}")
        plan = plan_order(gold, dialect, options)
        try:
            if plan.hidden_key_sql:
                return self._gold_with_hidden_keys(gold, sql, plan, options, engine, dialect, display, timeout, max_rows)
            result = run_query(engine, sql, timeout=timeout, max_rows=max_rows, untrusted=False)
        except QueryError as exc:
            return GoldError(f"the gold query failed on {display} ({exc.kind}): {exc.message}")
        groups = None
        if plan.ordered and plan.key_columns is not None:
            groups = tuple(tie_group_starts(result.rows, plan.key_columns))
        return GoldRun(display, result, plan.ordered, groups, plan.note)

    def _gold_with_hidden_keys(self, gold, sql, plan, options, engine, dialect, display, timeout, max_rows) -> GoldRun:
        hidden_sql = plan.hidden_key_sql
        if options.distinct == "strip":
            hidden_sql = strip_distinct(hidden_sql, dialect)
        try:
            keyed = run_query(engine, hidden_sql, timeout=timeout, max_rows=max_rows, untrusted=False)
        except QueryError:
            # The rewrite is not valid on this engine: compare in the gold's exact order instead.
            result = run_query(engine, sql, timeout=timeout, max_rows=max_rows, untrusted=False)
            return GoldRun(display, result, True, None, "ORDER BY keys not in the output; tied rows compared in gold order")
        width = len(keyed.columns) - plan.hidden_key_count
        result = QueryResult(columns=keyed.columns[:width], rows=[row[:width] for row in keyed.rows])
        keys = [row[width:] for row in keyed.rows]
        groups = tuple(tie_group_starts(keys, tuple(range(plan.hidden_key_count))))
        return GoldRun(display, result, True, groups, plan.note)

    # -- schema, difficulty, exact match ----------------------------------------
    def schema(self, case: Case, engine) -> Schema | None:
        if case.schema is not None:
            key = (str(case.schema.tables_json), case.schema.db_id)
            if key not in self._schemas:
                self._schemas[key] = Schema.from_spider_tables(case.schema.tables_json, case.schema.db_id)
            return self._schemas[key]
        if engine is None:
            return None
        key = id(engine)
        if key not in self._schemas:
            try:
                self._schemas[key] = Schema.from_engine(engine)
            except Exception as exc:  # noqa: BLE001 - driver errors vary; report them plainly
                raise DatabaseError(f"cannot read the schema of {case.database.display}: {exc}") from None
        return self._schemas[key]

    def prepare(self, case: Case, suite: Suite, engines: Sequence[Any], *, timeout: float | None = None,
                max_rows: int | None = None) -> Prepared:
        """Everything about the gold side of a case; raises GoldError for a broken gold (a suite error)."""
        gold = self.gold_runs(case, suite, engines, timeout=timeout, max_rows=max_rows) if engines else []
        engine = engines[0] if engines else None
        schema = self.schema(case, engine)
        dialect = suite_dialect(suite, engine)
        if schema is not None:
            check_gold_structure(case, suite, self._gold_unreadable(case, suite, schema, dialect))
        difficulty, source = self._difficulty(case, suite, schema, dialect)
        return Prepared(gold=tuple(gold), schema=schema, dialect=dialect, difficulty=difficulty, difficulty_source=source)

    def _gold_unreadable(self, case: Case, suite: Suite, schema: Schema, dialect: str) -> Exception | None:
        """Why the exact-match profile cannot read this gold (None: it can); once per distinct gold."""
        from .metrics.exact_match import GoldUnreadable, exact_match

        key = (case.gold, suite.exact_match, id(schema), dialect)
        if key not in self._gold_readability:
            try:
                exact_match(case.gold, case.gold, schema, profile=suite.exact_match, dialect=dialect)
                self._gold_readability[key] = None
            except GoldUnreadable as exc:
                self._gold_readability[key] = exc
        return self._gold_readability[key]

    def _difficulty(self, case: Case, suite: Suite, schema: Schema | None, dialect: str) -> tuple[str | None, str]:
        """The case's own label, else the suite's classifier applied to the gold (once per distinct gold)."""
        if case.difficulty:
            return case.difficulty, "suite"
        if schema is None:
            return None, "none"
        from .metrics.hardness import classify_hardness

        key = (case.gold, id(schema), dialect, suite.difficulty_classifier)
        if key not in self._hardness:
            self._hardness[key] = classify_hardness(case.gold, schema, dialect=dialect, classifier=suite.difficulty_classifier)
        result = self._hardness[key]
        if result is None:
            return None, "unparsed"
        return result.level, result.source

    # -- one case --------------------------------------------------------------
    def evaluate(self, case: Case, suite: Suite, prediction: str | None, engines: Sequence[Any], prepared: Prepared,
                 *, timeout: float | None = None, max_rows: int | None = None, database: str | None = None) -> dict[str, Any]:
        timeout = timeout or self.timeout
        max_rows = max_rows or self.max_rows
        record = base_record(case, suite, prediction, prepared, database=database)
        record.update(self._score_execution(suite, prediction, engines, prepared.gold, prepared.dialect, timeout, max_rows))
        record.update(exact_match_fields(case, suite, prediction, prepared))
        metrics = {k: record.get(k) for k in ("valid", "execution_match", "soft_f1", "exact_match")}
        record["passed_rule"] = suite.pass_if.holds(metrics)
        return record

    def _score_execution(self, suite, prediction, engines, gold, dialect, timeout, max_rows) -> dict[str, Any]:
        if not gold:
            return {"valid": None, "error": None, "execution_match": None, "soft_f1": None, "vacuous": False, "mismatch": None}
        if prediction is None or not prediction.strip():
            message = "no prediction for this case" if prediction is None else "the prediction is empty"
            return _failed_execution(QueryError("no_prediction", message))
        options = suite.execution
        per_database = []
        for run, engine in zip(gold, engines):
            try:
                pred_result = run_prediction(engine, prediction, options, dialect, timeout, max_rows)
            except QueryError as exc:
                return _failed_execution(exc)
            verdict = compare_results(run.result, pred_result, options, ordered=run.ordered, tie_groups=run.tie_groups)
            per_database.append((run, pred_result, verdict))
        run, pred_result, verdict = per_database[0]
        record = {
            "valid": True,
            "error": None,
            "execution_match": all(v.match for _, _, v in per_database),
            "execution_match_first": verdict.match,
            "soft_f1": case_soft_f1(run.result, pred_result, verdict, options),
            "vacuous": bool(verdict.vacuous),
            "mismatch": None,
            "order_note": run.note or None,
        }
        failing = next(((r, p, v) for r, p, v in per_database if not v.match), None)
        if failing is not None:
            record["mismatch"] = mismatch_record(*failing)
        if len(per_database) > 1:
            record["databases"] = [{"database": r.database, "execution_match": v.match} for r, _, v in per_database]
        return record


@dataclass(frozen=True)
class Prepared:
    """The gold side of one case, computed at setup."""

    gold: tuple[GoldRun, ...]
    schema: Schema | None
    dialect: str
    difficulty: str | None
    difficulty_source: str


def check_gold_structure(case: Case, suite: Suite, unreadable: Exception | None) -> None:
    """A gold that the suite's exact-match profile cannot read is a suite error, raised at setup,
    when the suite asks for exact match; otherwise exact match is reported as not computed."""
    from .metrics.exact_match import GoldOutsideGrammar

    if unreadable is None or not (suite.exact_match_requested or "exact_match" in suite.pass_if.metrics):
        return
    if isinstance(unreadable, GoldOutsideGrammar):
        raise GoldError(
            f"the gold of case {case.id} is outside the Spider grammar ({unreadable}); "
            "use `exact_match: sqleval` to compare any SQL"
        )
    raise GoldError(f"exact match cannot read the gold of case {case.id}: {unreadable}")


def exact_match_fields(case: Case, suite: Suite, prediction: str | None, prepared: Prepared) -> dict[str, Any]:
    from .metrics.exact_match import GoldUnreadable, exact_match

    if prepared.schema is None:
        return {"exact_match": None, "clauses": None, "exact_match_reason": None}
    if prediction is None or not prediction.strip():
        return {"exact_match": False, "clauses": None, "exact_match_reason": "no_prediction"}
    try:
        verdict = exact_match(case.gold, prediction, prepared.schema, profile=suite.exact_match, dialect=prepared.dialect)
    except GoldUnreadable as exc:
        return {"exact_match": None, "clauses": None, "exact_match_reason": f"gold unreadable: {exc}"}
    return {"exact_match": bool(verdict.match), "clauses": dict(verdict.clauses) or None, "exact_match_reason": verdict.reason}


def case_soft_f1(gold: QueryResult, pred: QueryResult, verdict, options: ComparisonOptions) -> float:
    """Soft F1; exactly 1 when the results matched (each gold column then has a predicted column with
    the same values, so every best pairing scores 1), which saves computing it."""
    if verdict.match:
        return 1.0
    return soft_f1(gold, pred, float_decimals=options.float_decimals, nulls=options.nulls)


def run_prediction(engine, prediction: str, options: ComparisonOptions, dialect: str, timeout: float, max_rows: int) -> QueryResult:
    """Guard, then run, the prediction (after the profile's rewrites, which are guarded again)."""
    from .sql.guard import check_prediction

    check_prediction(prediction, dialect)
    sql = prediction
    if options.distinct == "strip":
        sql = strip_distinct(prediction, dialect)
    return run_query(engine, sql, timeout=timeout, max_rows=max_rows, untrusted=True, dialect=dialect)


def suite_dialect(suite: Suite, engine) -> str:
    if suite.dialect:
        return suite.dialect
    if engine is None:
        return "sqlite"
    return sqlglot_dialect(engine.dialect.name)


def base_record(case: Case, suite: Suite, prediction: str | None, prepared: Prepared, *,
                database: str | None = None) -> dict[str, Any]:
    if database is None:
        database = case.database.display if case.database else (case.schema.db_id if case.schema else None)
    return {
        "suite": suite.name,
        "path": str(suite.path),
        "id": case.id,
        "index": case.index,
        "interaction": case.interaction,
        "turn": case.turn,
        "database": database,
        "difficulty": prepared.difficulty,
        "difficulty_source": prepared.difficulty_source,
        "tags": list(case.tags),
        "question": case.question,
        "gold": case.gold,
        "predicted": prediction,
        **({"metadata": dict(case.extra)} if case.extra else {}),
    }


def _failed_execution(error: QueryError) -> dict[str, Any]:
    return {
        "valid": False,
        "error": {"kind": error.kind, "message": error.message},
        "execution_match": False,
        "execution_match_first": False,
        "soft_f1": 0.0,
        "vacuous": False,
        "mismatch": None,
    }


def mismatch_record(run: GoldRun, pred: QueryResult, verdict) -> dict[str, Any]:
    return {
        "database": run.database,
        "reason": verdict.reason,
        "detail": verdict.detail,
        "gold_shape": [len(run.result.rows), run.result.column_count],
        "predicted_shape": [len(pred.rows), pred.column_count],
        "gold_columns": list(run.result.columns),
        "predicted_columns": list(pred.columns),
        "gold_only_rows": [jsonable_row(r) for r in list(verdict.gold_only_rows)[:DIFF_ROWS]],
        "predicted_only_rows": [jsonable_row(r) for r in list(verdict.pred_only_rows)[:DIFF_ROWS]],
        "gold_head": [jsonable_row(r) for r in list(run.result.rows[:DIFF_ROWS])],
        "predicted_head": [jsonable_row(r) for r in list(pred.rows[:DIFF_ROWS])],
    }


def jsonable_row(row: Sequence[Any]) -> list[Any]:
    return [jsonable(v) for v in row]


def jsonable(value: Any) -> Any:
    """A JSON primitive standing for a database value (for reports only)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, decimal.Decimal):
        return float(value) if value.is_finite() else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "x'" + bytes(value).hex() + "'"
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    return str(value)
