"""Evaluate one case: run the gold and the prediction, compare, score, decide.

No pytest here. :class:`Evaluator` holds the per-session caches (gold results,
schemas, order plans) and turns a :class:`~pytest_sqleval.suite.Case` into a
record: a dict of JSON primitives that travels with the test report (also
across xdist workers) and becomes one entry of the JSON report.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from sqlglot.errors import SqlglotError

from .comparison import ComparisonOptions, distinct_rows
from .errors import DatabaseError, GoldError, QueryError
from .execution.backends import target_of
from .execution.backends.base import DistinctRows
from .execution.runner import run_query, sqlglot_dialect
from .execution.targets import file_version, registered_target
from .metrics.bird import bird_soft_f1
from .metrics.execution_match import compare_results
from .metrics.soft_f1 import soft_f1
from .metrics.tie_groups import tie_group_starts
from .record import CaseRecord, ScoreContext
from .registry import active_registry
from .results import QueryResult, with_temporal_text
from .schema import Schema
from .sql.ordering import plan_order
from .sql.rewrite import gold_rewrite, prediction_rewrite
from .suite import Case, Suite

#: Example rows kept in a record for the miss diff.
DIFF_ROWS = 5

#: Distinct gold results kept per session (least recently used dropped; a case's golds are used together, so
#: suites of any size keep their hits while memory stays bounded).
GOLD_CACHE_SIZE = 4096


class Identity:
    """A cache key standing for one object by identity, for any object (hashable or not). It holds the object,
    so no other object can take its ``id()`` while the key exists (a bare ``id()`` key can be reused)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity) and other.obj is self.obj


def engine_key(engine: Any) -> tuple:
    """The gold and schema caches' key of ``engine``: the engine itself and, for a SQLite file, the file's
    version (size, mtime, inode of it and its WAL), so that a file a test rewrote between two suites is read
    afresh, as the query process reopens it (a result cached before the change would be stale)."""
    target = registered_target(engine)
    if target is None:
        try:
            target = target_of(engine)
        except Exception:  # noqa: BLE001 - an engine no backend knows has no file to watch
            target = None
    return (Identity(engine), file_version(target))


def _file_stamp(path: Any) -> tuple[int, int] | None:
    """A file's size and mtime (a ``tables.json`` a test rewrote between two suites is read afresh)."""
    try:
        stat = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    return (stat.st_size, stat.st_mtime_ns)


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
    #: time gold and prediction for BIRD's R-VES on every case (--sqleval-efficiency; a suite's `efficiency: true`)
    efficiency: bool = False
    #: names a setup-script database as it really ran (built where, on which engine); None: as the suite wrote it
    describe: Any = None
    #: names an engine other than the one opened for a database (an overridden ``sqleval_engine``); None: none
    engine_label: Any = None
    _gold_cache: dict[Any, GoldRun | GoldError] = field(default_factory=dict)
    _schemas: dict[Any, Schema] = field(default_factory=dict)
    _gold_readability: dict[Any, Exception | None] = field(default_factory=dict)
    _hardness: dict[Any, Any] = field(default_factory=dict)
    _gold_planned: dict[Any, tuple[str, Any]] = field(default_factory=dict)  # (sql, plan) of a prefetched gold

    # -- gold ------------------------------------------------------------------
    def gold_runs(self, case: Case, suite: Suite, engines: Sequence[Any], *, timeout: float | None = None,
                  max_rows: int | None = None, max_memory: int | None = None) -> list[GoldRun]:
        """The gold's result on each of the case's databases (each executed once per session)."""
        if case.expected is not None:
            return [expected_run(case.expected)] if engines else []
        timeout = timeout or self.timeout
        max_rows = max_rows or self.max_rows
        runs = []
        for spec, engine in zip(case.databases, engines):
            dialect = suite_dialect(suite, engine)
            try:
                runs.append(self.run_gold(case.gold, suite.execution, engine, dialect, self._display(spec, engine),
                                          timeout=timeout, max_rows=max_rows, max_memory=max_memory))
            except GoldError as exc:
                raise GoldError(f"{exc} [case {case.id}]", kind=exc.kind) from None
        return runs

    def gold_alternatives(self, case: Case, suite: Suite, engines: Sequence[Any], *, timeout: float | None = None,
                          max_rows: int | None = None, max_memory: int | None = None) -> tuple[tuple[GoldRun, ...], ...]:
        """The results of the case's other accepted golds (``gold: [sql1, sql2, ...]``), per database."""
        alternatives = []
        for gold in case.accepted_golds[1:]:
            runs = []
            for spec, engine in zip(case.databases, engines):
                try:
                    runs.append(self.run_gold(gold, suite.execution, engine, suite_dialect(suite, engine), self._display(spec, engine),
                                              timeout=timeout, max_rows=max_rows, max_memory=max_memory))
                except GoldError as exc:
                    raise GoldError(f"{exc} [case {case.id}, gold #{len(alternatives) + 2}]", kind=exc.kind) from None
            alternatives.append(tuple(runs))
        return tuple(alternatives)

    def _display(self, spec, engine=None) -> str:
        """The database for messages: a setup-script one as it was built (``--sqleval-database-url`` moves it), an
        overriding fixture's engine as that engine."""
        label = self.engine_label(spec, engine) if self.engine_label is not None and engine is not None else None
        if label is not None:
            return label
        return self.describe(spec) if spec.setup and self.describe is not None else spec.display

    def run_gold(self, gold: str, options: ComparisonOptions, engine, dialect: str, display: str, *,
                 timeout: float | None = None, max_rows: int | None = None, max_memory: int | None = None) -> GoldRun:
        """One gold query's result on one engine (executed once per session); raises GoldError."""
        timeout = timeout or self.timeout
        max_rows = max_rows or self.max_rows
        # The database's name is part of the key: a result (or error) names the database it ran on, and two
        # suites may reach one engine under two names (a session-wide ``sqleval_engine`` override).
        key = (engine_key(engine), gold, dialect, options, timeout, max_rows, max_memory, display)
        cached = self._gold_cache.pop(key, None)
        if cached is None:
            cached = self._run_gold(gold, options, engine, dialect, display, timeout, max_rows, max_memory=max_memory,
                                    planned=self._gold_planned.pop(key, None))
        self._gold_cache[key] = cached  # most recently used last
        if len(self._gold_cache) > GOLD_CACHE_SIZE:  # bounded memory on huge suites: the least recently used goes
            del self._gold_cache[next(iter(self._gold_cache))]
        if isinstance(cached, GoldError):
            raise GoldError(str(cached), kind=cached.kind)
        return cached

    def _run_gold(self, gold: str, options: ComparisonOptions, engine, dialect: str, display: str,
                  timeout: float, max_rows: int, *, max_memory: int | None = None,
                  planned: tuple[str, Any] | None = None) -> GoldRun | GoldError:
        if planned is not None:  # computed by _prefetch_gold, which sent the query already
            sql, plan = planned
        else:
            try:
                sql = gold_rewrite(gold, options, dialect)
            except SqlglotError as exc:
                return GoldError(f"the profile strips DISTINCT, which needs sqlglot to read the gold in {dialect}: {exc}")
            plan = plan_order(gold, dialect, options)
        try:
            if plan.hidden_key_sql:
                return self._gold_with_hidden_keys(gold, sql, plan, options, engine, dialect, display, timeout, max_rows,
                                                   max_memory=max_memory)
            result = run_query(engine, sql, timeout=timeout, max_rows=max_rows, untrusted=False, max_memory=max_memory,
                               text_errors=text_errors(options), distinct_rows=distinct_rows(options))
        except QueryError as exc:
            return GoldError(f"the gold query failed on {display} ({exc.kind}): {exc.message}", kind=exc.kind)
        groups = None
        if plan.ordered and plan.key_columns is not None:
            groups = tuple(tie_group_starts(result.rows, plan.key_columns))
        return GoldRun(display, result, plan.ordered, groups, plan.note)

    def _gold_with_hidden_keys(self, gold, sql, plan, options, engine, dialect, display, timeout, max_rows, *,
                               max_memory=None) -> GoldRun:
        hidden_sql = plan.hidden_key_sql
        hidden_sql = gold_rewrite(hidden_sql, options, dialect)
        try:
            keyed = run_query(engine, hidden_sql, timeout=timeout, max_rows=max_rows, untrusted=False, max_memory=max_memory,
                              text_errors=text_errors(options), distinct_rows=distinct_rows(options))
        except QueryError:
            # The rewrite is not valid on this engine: compare in the gold's exact order instead.
            result = run_query(engine, sql, timeout=timeout, max_rows=max_rows, untrusted=False, max_memory=max_memory,
                               text_errors=text_errors(options), distinct_rows=distinct_rows(options))
            return GoldRun(display, result, True, None, "ORDER BY keys not in the output; tied rows compared in gold order")
        width = len(keyed.columns) - plan.hidden_key_count
        result = QueryResult(columns=keyed.columns[:width], rows=[row[:width] for row in keyed.rows])
        keys = [row[width:] for row in keyed.rows]
        groups = tuple(tie_group_starts(keys, tuple(range(plan.hidden_key_count))))
        return GoldRun(display, result, True, groups, plan.note)

    # -- schema, difficulty, exact match ----------------------------------------
    def schema(self, case: Case, engine) -> Schema | None:
        if case.schema is not None:
            key = (str(case.schema.tables_json), case.schema.db_id, _file_stamp(case.schema.tables_json))
            if key not in self._schemas:
                self._schemas[key] = Schema.from_spider_tables(case.schema.tables_json, case.schema.db_id)
            return self._schemas[key]
        if engine is None:
            return None
        key = engine_key(engine)
        if key not in self._schemas:
            from .execution.backends import read_schema

            try:
                self._schemas[key] = read_schema(engine)
            except Exception as exc:  # noqa: BLE001 - driver errors vary; report them plainly
                raise DatabaseError(f"cannot read the schema of {self._display(case.database, engine)}: {exc}") from None
        return self._schemas[key]

    def prepare(self, case: Case, suite: Suite, engines: Sequence[Any], *, timeout: float | None = None,
                max_rows: int | None = None, max_memory: int | None = None) -> Prepared:
        """Everything about the gold side of a case; raises GoldError for a broken gold (a suite error)."""
        if self._prefetch_gold(case, suite, engines, timeout=timeout, max_rows=max_rows, max_memory=max_memory):
            self._warm_gold_reading(case, suite, engines)  # while the query process runs the gold
        gold = self.gold_runs(case, suite, engines, timeout=timeout, max_rows=max_rows, max_memory=max_memory) if engines else []
        alternatives = self.gold_alternatives(case, suite, engines, timeout=timeout, max_rows=max_rows,
                                              max_memory=max_memory) if engines else ()
        engine = engines[0] if engines else None
        schema = self.schema(case, engine)
        dialect = suite_dialect(suite, engine)
        if schema is not None:
            for text in case.accepted_golds:
                check_gold_structure(case, suite, self._gold_unreadable(case, suite, schema, dialect, text))
        difficulty, source = self._difficulty(case, suite, schema, dialect)
        return Prepared(gold=tuple(gold), schema=schema, dialect=dialect, difficulty=difficulty, difficulty_source=source,
                        alternatives=alternatives)

    def send_gold_ahead(self, case: Case, suite: Suite, engines: Sequence[Any], *, timeout: float | None,
                        max_rows: int | None, max_memory: int | None) -> None:
        """Send the case's gold query now, before its setup (while pytest finishes the case before it); its
        :meth:`prepare` then finds the request on its way and collects the answer. Errors are left to prepare."""
        try:
            self._prefetch_gold(case, suite, engines, timeout=timeout, max_rows=max_rows, max_memory=max_memory)
        except Exception:  # noqa: BLE001 - prepare reads, runs and reports the same gold itself
            pass

    def send_prediction_ahead(self, suite: Suite, prediction: str | None, engines: Sequence[Any], prepared: Prepared,
                              *, timeout: float | None, max_rows: int | None, max_memory: int | None,
                              allow_functions: frozenset[str] = frozenset()) -> None:
        """Send the prediction as :meth:`score` runs it (the same request), so that score collects the answer the
        query process computed meanwhile. Errors are left to score, which runs it again and reports them."""
        limits = {"max_memory": max_memory, "allow_functions": frozenset(allow_functions)}
        prefetch_prediction(suite, prediction, engines, prepared, timeout or self.timeout, max_rows or self.max_rows,
                            limits)

    def _prefetch_gold(self, case: Case, suite: Suite, engines: Sequence[Any], *, timeout: float | None,
                       max_rows: int | None, max_memory: int | None) -> bool:
        """Send the case's (first) gold query to the query process now, unless its result is cached: what
        :meth:`run_gold` will run, the same request, so it collects the answer the other core computed while
        this process read the gold for exact match and hardness. True when a query was sent."""
        if case.expected is not None or not engines or not case.gold or len(case.databases) != 1:
            return False
        timeout, max_rows, engine = timeout or self.timeout, max_rows or self.max_rows, engines[0]
        dialect, options = suite_dialect(suite, engine), suite.execution
        key = (engine_key(engine), case.gold, dialect, options, timeout, max_rows, max_memory,
               self._display(case.databases[0], engine))
        if key in self._gold_cache:
            return False
        try:
            sql = gold_rewrite(case.gold, options, dialect)
            plan = plan_order(case.gold, dialect, options)
        except (SqlglotError, QueryError):
            return False  # _run_gold reports it
        if plan.hidden_key_sql:
            return False
        try:
            run_query(engine, sql, timeout=timeout, max_rows=max_rows, untrusted=False, max_memory=max_memory,
                      prefetch=True, text_errors=text_errors(options), distinct_rows=distinct_rows(options))
        except QueryError:
            return False  # refused before it was sent: _run_gold runs it again and reports it
        self._gold_planned[key] = (sql, plan)
        if len(self._gold_planned) > 64:  # never collected (a failing case): bounded
            del self._gold_planned[next(iter(self._gold_planned))]
        return True

    def _warm_gold_reading(self, case: Case, suite: Suite, engines: Sequence[Any]) -> None:
        """Fill the per-gold caches of :meth:`prepare` (readability, difficulty) early; every error is left to
        :meth:`prepare`'s own calls, in its own order."""
        try:
            engine = engines[0] if engines else None
            schema = self.schema(case, engine)
            dialect = suite_dialect(suite, engine)
            if schema is not None:
                for text in case.accepted_golds:
                    self._gold_unreadable(case, suite, schema, dialect, text)
            self._difficulty(case, suite, schema, dialect)
        except Exception:  # noqa: BLE001 - raised again, in order, by prepare
            pass

    def _gold_unreadable(self, case: Case, suite: Suite, schema: Schema, dialect: str,
                         gold: str | None = None) -> Exception | None:
        """Why the exact-match profile cannot read this gold (None: it can); once per distinct gold."""
        from .metrics.exact_match import GoldUnreadable, read_gold

        gold = case.gold if gold is None else gold
        key = (gold, suite.exact_match, schema, dialect)
        if key not in self._gold_readability:
            try:
                read_gold(gold, schema, profile=suite.exact_match, dialect=dialect)  # the gold side of exact match
                self._gold_readability[key] = None
            except GoldUnreadable as exc:
                self._gold_readability[key] = exc
            except Exception as exc:  # noqa: BLE001 - reported as a gold exact match cannot read, never a traceback
                self._gold_readability[key] = GoldUnreadable(f"{type(exc).__name__}: {exc}")
        return self._gold_readability[key]

    def _difficulty(self, case: Case, suite: Suite, schema: Schema | None, dialect: str) -> tuple[str | None, str]:
        """The case's own label, else the suite's classifier applied to the gold (once per distinct gold)."""
        if case.difficulty:
            return case.difficulty, "suite"
        if schema is None or not case.gold:
            return None, "none"
        from .metrics.hardness import difficulty_label

        key = (case.gold, schema, dialect, suite.difficulty_classifier)
        if key not in self._hardness:  # never raises: (None, "unclassified: <reason>") when it cannot classify
            self._hardness[key] = difficulty_label(case.gold, schema, dialect=dialect, classifier=suite.difficulty_classifier)
        return self._hardness[key]

    # -- one case --------------------------------------------------------------
    def evaluate(self, case: Case, suite: Suite, prediction: str | None, engines: Sequence[Any], prepared: Prepared,
                 *, timeout: float | None = None, max_rows: int | None = None, database: str | None = None,
                 max_memory: int | None = None, allow_functions: frozenset[str] = frozenset(),
                 prediction_error: QueryError | None = None) -> CaseRecord:
        """The case's full record: :meth:`score`, then the suite's ``pass_if`` (``passed_rule``)."""
        record = self.score(case, suite, prediction, engines, prepared, timeout=timeout, max_rows=max_rows,
                            database=database, max_memory=max_memory, allow_functions=allow_functions,
                            prediction_error=prediction_error)
        record["passed_rule"] = rule_holds(suite, record)
        return record

    def score(self, case: Case, suite: Suite, prediction: str | None, engines: Sequence[Any], prepared: Prepared,
              *, timeout: float | None = None, max_rows: int | None = None, database: str | None = None,
              max_memory: int | None = None, allow_functions: frozenset[str] = frozenset(),
              prediction_error: QueryError | None = None, context: ScoreContext | None = None) -> CaseRecord:
        """The built-in scoring of one case (every field but ``passed_rule`` and ``outcome``).

        ``prediction_error``: why there is no prediction to run (the model step: ``model_error``, ``no_sql``);
        ``context``: given, it receives the results the hooks may use (``gold_results``, ``prediction_result``)."""
        timeout = timeout or self.timeout
        max_rows = max_rows or self.max_rows
        record = base_record(case, suite, prediction, prepared, database=database)
        limits = {"max_memory": max_memory, "allow_functions": frozenset(allow_functions)}
        if context is not None:
            context.gold_results = [run.result for run in prepared.gold]
        self.send_prediction_ahead(suite, prediction, engines, prepared, timeout=timeout, max_rows=max_rows,
                                   max_memory=max_memory, allow_functions=allow_functions)
        exact = exact_match_fields(case, suite, prediction, prepared)  # while the query process runs the prediction
        record.update(self._score_execution(suite, prediction, engines, prepared.gold, prepared.dialect, timeout, max_rows,
                                            limits=limits, alternatives=prepared.alternatives, case=case,
                                            context=context))
        if (self.efficiency or suite.efficiency) and record.get("valid") is not None and prepared.gold and engines:
            from .efficiency import r_ves_fields

            record.update(r_ves_fields(engines[0], case.gold, prediction, suite.execution, prepared.dialect,
                                       matched=bool(record.get("execution_match_first")), timeout=timeout,
                                       max_rows=max_rows, **limits))
        record.update(exact)
        _unmatch_what_the_database_cannot_read(record, suite)
        if prediction_error is not None and prediction is None:
            if record.get("error"):
                record["error"] = {"kind": prediction_error.kind, "message": prediction_error.message}
            if record.get("exact_match_reason") == "no_prediction":
                record["exact_match_reason"] = prediction_error.kind
        if case.policy is not None:
            from .policy import check_policy

            record["policy"] = check_policy(prediction, case.policy, dialect=prepared.dialect,
                                            schema=prepared.schema).as_record()
        return record

    def _score_execution(self, suite, prediction, engines, gold, dialect, timeout, max_rows, *,
                         limits: dict[str, Any] | None = None, alternatives: Sequence[Sequence[GoldRun]] = (),
                         case: Case | None = None, context: ScoreContext | None = None) -> dict[str, Any]:
        if not gold:
            return {"valid": None, "error": None, "execution_match": None, "soft_f1": None, "vacuous": False, "mismatch": None}
        if prediction is None or (not prediction.strip()
                                  and prediction_rewrite(suite.execution) != "sqlite3_statement"):
            # (BIRD's evaluator, and test-suite's with --keep_distinct, hand even an empty text to sqlite3, which
            # returns no rows)
            message = "no prediction for this case" if prediction is None else "the prediction is empty"
            return with_shape(_failed_execution(QueryError("no_prediction", message)), case, None)
        options = suite.execution
        predicted = []
        failed: tuple[GoldRun, QueryError] | None = None  # the database where the prediction failed (not the first)
        for run, engine in zip(gold, engines):
            try:
                predicted.append(run_prediction(engine, prediction, options, dialect, timeout, max_rows,
                                                **(limits or {})))
            except QueryError as exc:
                if not predicted:
                    record = _failed_execution(exc)
                    if len(gold) > 1:  # a case of several databases keeps its per-database verdicts
                        record["databases"] = [{"database": run.database, "execution_match": False, "error": exc.kind}]
                    return with_shape(record, case, None)
                failed = (run, exc)  # as the official script does, the later databases are not tried
                break
        if context is not None:
            context.prediction_result = predicted[0]
        # Each accepted gold in turn (the first gold, then `gold: [...]`'s others): the first that matches
        # on every database scores, else the one with the highest soft F1.
        candidates = []
        for runs in (tuple(gold), *alternatives):
            per_database = []
            for run, pred_result in zip(runs, predicted):
                if run.database == EXPECTED_ROWS:  # hand-written rows: dates as ISO text, `rows: []` of any width
                    run, pred_result = against_expected(run, pred_result)
                verdict = compare_results(run.result, pred_result, options, ordered=run.ordered, tie_groups=run.tie_groups)
                per_database.append((run, pred_result, verdict))
            first_run, first_pred, first_verdict = per_database[0]
            candidates.append((all(v.match for _, _, v in per_database),
                               case_soft_f1(first_run.result, first_pred, first_verdict, options), per_database))
        best = next((i for i, c in enumerate(candidates) if c[0]), None)
        if best is None:
            best = max(range(len(candidates)), key=lambda i: (candidates[i][1], -i))
        matched, best_f1, per_database = candidates[best]
        if context is not None:  # several accepted golds: the hooks compare with the gold that scores (gold_index)
            context.gold_results = [r.result for r in (tuple(gold), *alternatives)[best]]
        run, pred_result, verdict = per_database[0]
        record = {
            "valid": True,
            "error": None,
            "execution_match": matched,
            "execution_match_first": verdict.match,
            "soft_f1": best_f1,
            "bird_soft_f1": bird_soft_f1(run.result.rows, pred_result.rows),
            "vacuous": bool(verdict.vacuous),
            "mismatch": None,
            "order_note": run.note or None,
        }
        failing = next(((r, p, v) for r, p, v in per_database if not v.match), None)
        if failing is not None:
            record["mismatch"] = mismatch_record(*failing, options)
        if len(gold) > 1:
            record["databases"] = [{"database": r.database, "execution_match": v.match} for r, _, v in per_database]
        if failed is not None:  # ran (and is judged) on the first database, failed on a later one
            run_failed, error = failed
            record.update(valid=False, execution_match=False,
                          error={"kind": error.kind, "message": f"on {run_failed.database}: {error.message}"})
            record["databases"].append({"database": run_failed.database, "execution_match": False, "error": error.kind})
        if len(candidates) > 1:
            record["gold_index"] = best
            record["gold_scores"] = [{"execution_match": c[0], "soft_f1": c[1]} for c in candidates]
        return with_shape(record, case, predicted[0])


@dataclass(frozen=True)
class Prepared:
    """The gold side of one case, computed at setup."""

    gold: tuple[GoldRun, ...]
    schema: Schema | None
    dialect: str
    difficulty: str | None
    difficulty_source: str
    #: The other accepted golds' runs (``gold: [sql1, sql2, ...]``), each per database.
    alternatives: tuple[tuple[GoldRun, ...], ...] = ()


#: The ``database`` of a GoldRun that holds a case's ``expected:`` rows.
EXPECTED_ROWS = "expected rows"


def expected_run(expected) -> GoldRun:
    """A case's ``expected:`` rows, standing where a gold query's result would (dates as ISO text, as the
    prediction's are when compared with them)."""
    result = QueryResult(columns=tuple(expected.columns), rows=[tuple(r) for r in expected.rows])
    return GoldRun(EXPECTED_ROWS, with_temporal_text(result), bool(expected.ordered), None)


def against_expected(run: GoldRun, pred: QueryResult) -> tuple[GoldRun, QueryResult]:
    """Expected rows (``run``) and a prediction's result, as they are compared: the prediction's dates as ISO text;
    and ``rows: []`` without ``columns:`` says only "no rows", so it takes the prediction's width (else
    ``empty: match_same_columns`` would count 0 columns nobody wrote, and no empty result could match)."""
    pred = with_temporal_text(pred)
    if not run.result.columns and not run.result.rows:
        width = tuple(f"c{i}" for i in range(pred.column_count))
        run = GoldRun(run.database, QueryResult(columns=width, rows=[]), run.ordered, run.tie_groups, run.note)
    return run, pred


def shape_record(case: Case | None, result: QueryResult | None) -> dict[str, Any] | None:
    """``expect_columns:`` / ``expect_rows:`` checked on the prediction's result (None without checks)."""
    if case is None or not case.has_shape_checks:
        return None
    violations = []
    if result is None:
        violations.append("the prediction did not execute")
    else:
        wanted = case.expect_columns
        if isinstance(wanted, int) and result.column_count != wanted:
            violations.append(f"returned {result.column_count} column(s), expected {wanted}")
        elif isinstance(wanted, tuple) and [c.lower() for c in result.columns] != [c.lower() for c in wanted]:
            violations.append(f"returned columns {list(result.columns)}, expected {list(wanted)} (in this order)")
        if case.expect_rows is not None and isinstance(result.rows, DistinctRows):  # read on past the row cap
            violations.append(f"returned more than the row cap ({len(result.rows)} distinct row(s)), "
                              f"expected {case.expect_rows}")
        elif case.expect_rows is not None and result.row_count != case.expect_rows:
            violations.append(f"returned {result.row_count} row(s), expected {case.expect_rows}")
    return {"passed": not violations, "violations": violations}


def with_shape(record: dict[str, Any], case: Case | None, result: QueryResult | None) -> dict[str, Any]:
    shape = shape_record(case, result)
    if shape is not None:
        record["shape"] = shape
    return record


def rule_holds(suite: Suite, record: dict[str, Any]) -> bool:
    """The suite's pass_if on a record; a case's shape checks must hold too, and its policy unless
    pass_if itself says what `policy` means for passing."""
    policy = record.get("policy")
    clause_sets = record.get("clause_sets") or ([record["clauses"]] if record.get("clauses") else [])
    metrics = {k: record.get(k) for k in active_registry().pass_if_metrics()}
    metrics["policy"] = policy["passed"] if policy else True
    metrics["clause_sets"] = clause_sets
    passed = suite.pass_if.holds(metrics)
    if policy and "policy" not in suite.pass_if.metrics:
        passed = passed and policy["passed"]
    shape = record.get("shape")
    if shape:
        passed = passed and shape["passed"]
    return passed


def check_gold_structure(case: Case, suite: Suite, unreadable: Exception | None) -> None:
    """A gold that the suite's exact-match profile cannot read is a suite error, raised at setup,
    when the suite asks for exact match; otherwise exact match is reported as not computed."""
    from .metrics.exact_match import GoldOutsideGrammar, GoldParseError

    if unreadable is None or not (suite.exact_match_requested or "exact_match" in suite.pass_if.metrics):
        return
    if isinstance(unreadable, GoldOutsideGrammar):
        raise GoldError(
            f"the gold of case {case.id} is outside the Spider grammar ({unreadable}); "
            "use `exact_match: sqleval` to compare any SQL"
        )
    fix = ("; exact match compares the clauses of a SELECT query (or of a set operation of them) that sqlglot reads: "
           "write the gold as one, or remove `exact_match:` (and exact_match from `pass_if:`) to score this suite by "
           "execution only") if isinstance(unreadable, GoldParseError) else ""
    raise GoldError(f"exact match cannot read the gold of case {case.id}: {unreadable}{fix}")


def exact_match_fields(case: Case, suite: Suite, prediction: str | None, prepared: Prepared) -> dict[str, Any]:
    """The exact-match keys of a record; never raises for a prediction (one that cannot be scored misses
    with the reason, e.g. ``nested too deeply to score (...)``)."""
    from .metrics.exact_match import GoldUnreadable, exact_match
    from .metrics.exact_match.verdict import unscorable

    if prepared.schema is None:
        return {"exact_match": None, "clauses": None, "exact_match_reason": None}
    golds = case.accepted_golds
    if not golds:
        return {"exact_match": None, "clauses": None, "exact_match_reason": "not computed: the case gives expected rows"}
    if prediction is None or not prediction.strip():
        return {"exact_match": False, "clauses": None, "exact_match_reason": "no_prediction"}
    verdicts = []
    unreadable = None
    for gold in golds:
        try:
            verdicts.append(exact_match(gold, prediction, prepared.schema, profile=suite.exact_match, dialect=prepared.dialect))
        except GoldUnreadable as exc:
            unreadable = unreadable or exc
            verdicts.append(None)
        except Exception as exc:  # noqa: BLE001 - exact match never errors a case: the prediction scores 0
            verdicts.append(unscorable(exc))
    readable = [(i, v) for i, v in enumerate(verdicts) if v is not None]
    if not readable:
        return {"exact_match": None, "clauses": None, "exact_match_reason": f"gold unreadable: {unreadable}"}
    # any accepted gold may match; otherwise report the gold with the most matching clauses, those a pass_if
    # `exact_match(select, where)` names first (the clauses that decide, as assert_exact_match(clauses=...) ranks)
    named = sorted(suite.pass_if.clauses) if suite.pass_if is not None else []
    index, verdict = max(readable, key=lambda iv: (bool(iv[1].match), sum(bool(iv[1].clauses.get(c)) for c in named),
                                                   sum(iv[1].clauses.values()), -iv[0]))
    fields = {"exact_match": bool(verdict.match), "clauses": dict(verdict.clauses) or None,
              "exact_match_reason": verdict.reason}
    if len(golds) > 1:
        fields["clause_sets"] = [dict(v.clauses) if v is not None else None for v in verdicts]
        fields["exact_match_gold_index"] = index
    return fields


def _unmatch_what_the_database_cannot_read(record: dict[str, Any], suite: Suite) -> None:
    """Under the ``sqleval`` profile, a prediction the database refused as a syntax error (or, Python's sqlite3, as
    more than one statement: ``q;`` then a non-ASCII space) never matches exactly:
    sqlglot reads some truncated or malformed texts leniently (``SELECT a, FROM t``, ``GROUP BY`` with nothing
    after it, ``FROM t AS``), so their trees could equal the gold's although no engine runs them. (``spider``
    reproduces the official evaluator, which never runs a query for exact match.)"""
    from .metrics.exact_match.options import resolve_exact_match
    from .sql.statements import ONE_STATEMENT

    error = record.get("error")
    refused = isinstance(error, Mapping) and (
        error.get("kind") == "syntax"
        # SQLite's own "one statement at a time" (``q;`` then a non-ASCII space, which sqlglot reads as white space)
        or (error.get("kind") == "rejected" and str(error.get("message", "")).startswith(ONE_STATEMENT)))
    if (record.get("exact_match") and refused
            and resolve_exact_match(suite.exact_match).profile == "sqleval"):
        record["exact_match"] = False
        record["exact_match_reason"] = f"parse_error: the database cannot run it: {error.get('message')}"


def case_soft_f1(gold: QueryResult, pred: QueryResult, verdict, options: ComparisonOptions) -> float:
    """Soft F1; exactly 1 when the results matched (each gold column then has a predicted column with
    the same values, so every best pairing scores 1), which saves computing it."""
    if verdict.match:
        return 1.0
    return soft_f1(gold, pred, float_decimals=options.float_decimals, nulls=options.nulls, numbers=options.numbers)


def run_prediction(engine, prediction: str, options: ComparisonOptions, dialect: str, timeout: float, max_rows: int,
                   *, allow_functions: frozenset[str] = frozenset(), max_memory: int | None = None) -> QueryResult:
    """Guard, then run, the prediction (after the profile's rewrites, which are guarded again), all inside the
    query process's limits."""
    rewrite = prediction_rewrite(options)
    return run_query(engine, prediction, timeout=timeout, max_rows=max_rows, untrusted=True, dialect=dialect,
                     rewrite=rewrite, allow_functions=allow_functions, max_memory=max_memory,
                     text_errors=text_errors(options), distinct_rows=distinct_rows(options))


def text_errors(options: ComparisonOptions) -> str:
    """How a profile reads text that is not valid UTF-8 in a result (Python's ``errors=`` names): ``"strict"`` for
    ``bird`` (Python's sqlite3 raises, and BIRD scores the item 0), ``"ignore"`` for ``test-suite`` (its official
    script's ``text_factory`` drops each bad byte: ``b.decode(errors="ignore")``), else ``"replace"`` (U+FFFD)."""
    if options.profile == "bird":
        return "strict"
    return "ignore" if options.profile == "test-suite" else "replace"


def prefetch_prediction(suite: Suite, prediction: str | None, engines: Sequence[Any], prepared: Prepared,
                        timeout: float, max_rows: int, limits: dict[str, Any]) -> None:
    """Send the prediction to the query process before this process scores exact match: the first
    :func:`run_prediction` of the case then collects a result the other core computed meanwhile."""
    if not prepared.gold or not engines or prediction is None or not prediction.strip():
        return
    try:
        run_query(engines[0], prediction, timeout=timeout, max_rows=max_rows, untrusted=True,
                  dialect=prepared.dialect, rewrite=prediction_rewrite(suite.execution), prefetch=True,
                  text_errors=text_errors(suite.execution),
                  distinct_rows=distinct_rows(suite.execution), **limits)
    except QueryError:
        return  # refused before it was sent (e.g. a profile's one-statement rule): run_prediction raises it again


def suite_dialect(suite: Suite, engine) -> str:
    if suite.dialect:
        return suite.dialect
    if engine is None:
        return "sqlite"
    return sqlglot_dialect(engine.dialect.name)


def printable_text(text: str | None) -> str | None:
    from .predictions import printable_text as printable

    return printable(text)


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
        **({"interaction_turns": case.turns} if case.turns is not None else {}),
        "database": database,
        "difficulty": prepared.difficulty,
        "difficulty_source": prepared.difficulty_source,
        "tags": list(case.tags),
        "question": case.question,
        "gold": case.gold or None,
        **({"golds": list(case.golds)} if len(case.golds) > 1 else {}),
        **({"expected": {"columns": list(case.expected.columns), "row_count": len(case.expected.rows),
                         "rows": [jsonable_row(r) for r in case.expected.rows[:DIFF_ROWS]]}} if case.expected else {}),
        "predicted": printable_text(prediction),  # invalid UTF-8 shown as U+FFFD (the guard scored it)
        **({"metadata": dict(case.extra)} if case.extra else {}),
    }


def _failed_execution(error: QueryError) -> dict[str, Any]:
    return {
        "valid": False,
        "error": {"kind": error.kind, "message": error.message},
        "execution_match": False,
        "execution_match_first": False,
        "soft_f1": 0.0,
        "bird_soft_f1": 0.0,
        "vacuous": False,
        "mismatch": None,
    }


def mismatch_record(run: GoldRun, pred: QueryResult, verdict, options: ComparisonOptions | None = None) -> dict[str, Any]:
    """A miss as the reports keep it; given the comparison ``options``, an ``order`` miss also says where the order
    first differs (``first_out_of_order``)."""
    gold_only = [jsonable_row(r) for r in list(verdict.gold_only_rows)[:DIFF_ROWS]]
    predicted_only = [jsonable_row(r) for r in list(verdict.pred_only_rows)[:DIFF_ROWS]]
    return {
        "database": run.database,
        "reason": verdict.reason,
        "detail": verdict.detail,
        "gold_shape": [len(run.result.rows), run.result.column_count],
        "predicted_shape": [len(pred.rows), pred.column_count],
        "gold_columns": [jsonable(c) for c in run.result.columns[:MAX_REPORT_COLUMNS]],
        "predicted_columns": [jsonable(c) for c in pred.columns[:MAX_REPORT_COLUMNS]],
        "gold_only_rows": gold_only,
        "predicted_only_rows": predicted_only,
        "gold_only_count": verdict.gold_only_count,  # how many rows only gold has in all (null: not counted)
        "predicted_only_count": verdict.pred_only_count,
        "gold_head": [jsonable_row(r) for r in list(run.result.rows[:DIFF_ROWS])],
        "predicted_head": [jsonable_row(r) for r in list(pred.rows[:DIFF_ROWS])],
        **_typed_only_rows(gold_only, predicted_only, verdict),
        **_first_out_of_order(run, pred, verdict, options),
    }


def _first_out_of_order(run: GoldRun, pred: QueryResult, verdict, options: ComparisonOptions | None) -> dict[str, Any]:
    from .report.diff import first_out_of_order

    where = first_out_of_order(run, pred, verdict, options) if options is not None else None
    return {} if where is None else {"first_out_of_order": where}


def _typed_only_rows(gold_only: list[list[Any]], predicted_only: list[list[Any]], verdict) -> dict[str, Any]:
    """``gold_only_typed`` / ``predicted_only_typed`` beside the JSON rows when a row only in gold prints like a row
    only in the prediction once in JSON (a DECIMAL ``0.1`` and a float ``0.1`` are both the number 0.1; a DATE and
    its text): each cell as the engine returned it, with its type (``Decimal('0.1')`` and ``0.1``)."""
    from .report.diff import rows_look_alike, typed_cells

    if not (gold_only and predicted_only and rows_look_alike(gold_only, predicted_only)):
        return {}
    return {
        "gold_only_typed": [typed_cells(r[:MAX_REPORT_COLUMNS]) for r in list(verdict.gold_only_rows)[:DIFF_ROWS]],
        "predicted_only_typed": [typed_cells(r[:MAX_REPORT_COLUMNS]) for r in list(verdict.pred_only_rows)[:DIFF_ROWS]],
    }


def jsonable_row(row: Sequence[Any]) -> list[Any]:
    return [jsonable(v) for v in row[:MAX_REPORT_COLUMNS]]


#: Longest text a report shows for one database value (a result's cell); longer text is cut, saying its length.
MAX_REPORT_VALUE_CHARS = 1000

#: Columns a report shows of a result (names and rows); its shape still gives the full count.
MAX_REPORT_COLUMNS = 100


def jsonable(value: Any) -> Any:
    """A JSON primitive standing for a database value (for reports only); text longer than
    :data:`MAX_REPORT_VALUE_CHARS` is cut (a prediction can return megabytes per value)."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        return value if len(value) <= MAX_REPORT_VALUE_CHARS else _cut(value)
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, decimal.Decimal):
        number = float(value) if value.is_finite() else None
        # NaN, infinity, more digits than a float holds, or a value too small for one (PostgreSQL's 1E-1000 is
        # no float 0.0, which a report would show beside a predicted 0 as if they were equal): its text
        if number is None or math.isinf(number) or (number == 0 and value != 0):
            text = str(value)
            return text if len(text) <= MAX_REPORT_VALUE_CHARS else _cut(text)
        return number
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value)
        if 2 * len(value) + 3 > MAX_REPORT_VALUE_CHARS:
            return f"x'{value[:MAX_REPORT_VALUE_CHARS // 2].hex()}'… ({len(value)} bytes)"
        return "x'" + value.hex() + "'"
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    text = _container_text(value) if isinstance(value, (tuple, frozenset)) else str(value)
    return text if len(text) <= MAX_REPORT_VALUE_CHARS else _cut(text)


def _container_text(value: Any) -> str:
    """A container of a miss's example rows, which hold normalised values (metrics/normalisation.py), as the driver's
    value prints in the result tables: a JSON object or struct (a frozenset of its (key, value) pairs) as a dict, an
    array (a tuple) as a list; never ``frozenset({('a', 1)})``."""
    def item(inner: Any) -> str:
        return _container_text(inner) if isinstance(inner, (tuple, frozenset)) else repr(inner)

    if isinstance(value, tuple):
        return "[" + ", ".join(map(item, value)) + "]"
    pairs = all(isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str) for pair in value)
    if value and pairs and len({pair[0] for pair in value}) == len(value):
        return "{" + ", ".join(f"{key!r}: {item(inner)}" for key, inner in sorted(value, key=lambda pair: pair[0])) + "}"
    return str(value)


def _cut(text: str) -> str:
    return f"{text[:MAX_REPORT_VALUE_CHARS]}… ({len(text)} characters)"
