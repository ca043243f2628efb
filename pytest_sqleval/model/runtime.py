"""When and how the model is called, in each pytest process (the controller of a serial run, or an xdist worker).

Each case's prediction is needed in its item's call phase. Calls run on a thread pool of
``--sqleval-model-concurrency`` threads (default 4) per process; under xdist each worker has its own pool,
so ``-n 2`` makes up to 8 calls at once.

Look-ahead: when an item's ``sqleval_prediction`` fixture is set up, the item and the next items that will run
*in this process* are submitted (up to twice the concurrency pending). Serially those are the rest of
``session.items`` (deselected items are never there); on an xdist worker they are the items the controller has
already sent to this worker (its queue), so a case is called on exactly one worker and at most once per process.
Under ``--dist worksteal`` (items can be taken back) there is no look-ahead. A turn whose prompt holds the
model's own earlier SQL is submitted only once the previous turn's answer is known (turns run in order on
one worker). What ``-x``/``--maxfail`` stops before it runs may have been called already (and is cached).
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from .cache import ResponseCache
from .config import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MODEL_TIMEOUT,
    ExamplesSpec,
    ModelConfig,
    SuiteModelSpec,
)
from .predictors import BuiltinPredictor, PredictionResult, PredictorCase, run_predictor
from .prompt import PromptSource


@dataclass(frozen=True)
class ModelSettings:
    """The run-wide model options (command line and ini); suites fill in the rest."""

    cli: ModelConfig = field(default_factory=ModelConfig)
    ini: ModelConfig = field(default_factory=ModelConfig)
    predictor: str | None = None  # module:function
    prompt: PromptSource | None = None  # --sqleval-prompt FILE
    cache_dir: Path = Path(".sqleval_cache")
    cache_mode: str = "use"
    concurrency: int = DEFAULT_CONCURRENCY
    save_predictions: Path | None = None


class DefaultPredictor:
    """The default ``sqleval_predictor``: ``--sqleval-predictor module:function`` if given, else the built-in
    OpenAI-compatible client for suites that name a model (``--sqleval-model``, ini, or the suite's ``model:``)."""

    def __init__(self, runtime: ModelRuntime, function: Callable | None, label: str | None) -> None:
        self.runtime = runtime
        self.function = function
        self.label = label
        self._applies: dict[int, tuple[Any, bool]] = {}  # id(suite) -> (suite, answer): asked once per case

    def applies(self, suite) -> bool:
        if self.function is not None:
            return True
        known = self._applies.get(id(suite))
        if known is None or known[0] is not suite:
            known = self._applies[id(suite)] = (suite, bool(self.runtime.model_config(suite).name))
        return known[1]

    def __call__(self, case: PredictorCase):
        if self.function is not None:
            return self.function(case)
        if not isinstance(case, PredictorCase):  # a plain test's own argument: there is no suite to build a prompt from
            raise TypeError(
                f"sqleval_predictor: the built-in client (--sqleval-model) predicts suite cases, whose prompt it "
                f"renders from the suite (schema, examples, history); it was called with {type(case).__name__} "
                f"{case!r:.80}\n  fix: give a predictor of your own (--sqleval-predictor module:function, or a "
                f"sqleval_predictor fixture in conftest.py) to call it from a plain test, or write a suite case")
        return self.runtime.builtin(case)


class ModelRuntime:
    def __init__(self, settings: ModelSettings, state, *, worker: bool, dist: str | None) -> None:
        self.settings = settings
        self.state = state  # the core SqlevalState (engines, evaluator)
        self.worker = worker
        self.dist = dist
        self.cache = ResponseCache(settings.cache_dir, settings.cache_mode)
        self.builtin = BuiltinPredictor(self.cache)
        self._pool: DaemonPool | None = None
        self.interrupted = False  # Ctrl-C: close() does not wait for calls under way
        self._lock = threading.Lock()
        self.futures: dict[str, Future] = {}  # node id -> Future[PredictionResult]
        self.answers: dict[tuple[str, str], PredictionResult] = {}  # (suite path, case id) -> result (history)
        #: calls made only for a later turn's history (its earlier turns did not run in this process), in order;
        #: and by the node id of the case whose prompt needed them (its record counts them)
        self._history_log: list[dict[str, Any]] = []
        self._history_calls: dict[str, list[dict[str, Any]]] = {}
        self.fatal: str | None = None
        self._schema_texts: dict[Any, str] = {}
        self._positions: dict[str, int] | None = None
        self.user_function: Callable | None = None  # --sqleval-predictor module:function
        #: Will pytest skip this item before its call? (set by the glue, model_plugin.py): the look-ahead never calls
        #: the model for it, a call paid for and never used
        self.skipped: Callable[[Any], bool] = lambda item: False

    # -- configuration -------------------------------------------------------------------
    def spec(self, suite) -> SuiteModelSpec:
        return getattr(suite, "model", None) or SuiteModelSpec()

    def model_config(self, suite) -> ModelConfig:
        """Command line > suite ``model:`` > ini > defaults, field by field."""
        return self.settings.cli.merged_over(self.spec(suite).model).merged_over(self.settings.ini)

    def prompt(self, suite) -> PromptSource:
        from .prompt import DEFAULT_PROMPT

        return self.settings.prompt or self.spec(suite).prompt or DEFAULT_PROMPT

    def describe(self, suite, predictor=None, label: str | None = None) -> dict[str, Any]:
        """The model block of the JSON report's ``run``: what was asked, without credentials."""
        spec = self.spec(suite)
        prompt = self.prompt(suite)
        if isinstance(predictor, DefaultPredictor) and predictor.function is None:
            block = self.model_config(suite).describe()
        else:
            block = {"predictor": label}
        block.update({"prompt_sha256": prompt.sha256, "prompt": prompt.origin,
                      "schema_format": spec.schema_format or "ddl", "sample_rows": spec.sample_rows or 0,
                      "history": spec.history or "model", "extract": spec.extract or "auto",
                      "cache": self.settings.cache_mode})
        return block

    # -- the fixture's entry point -----------------------------------------------------------
    def prediction_for(self, item, predictor, request) -> PendingPrediction:
        suite = item.suite
        if hasattr(item, "prediction_file_entry"):  # a predictions file was given: it wins over any model
            return PendingPrediction.ready(file_result(item))
        if self.state.settings.check_gold or predictor is None:
            return PendingPrediction.ready(PredictionResult(item.prediction, "suite"))
        if isinstance(predictor, DefaultPredictor) and not predictor.applies(suite):
            return PendingPrediction.ready(PredictionResult(item.prediction, "suite"))
        self.submit(item, predictor)
        self._look_ahead(item, predictor, request)
        return PendingPrediction(self, item)

    def submit(self, item, predictor) -> None:
        with self._lock:
            if item.nodeid in self.futures:
                return
        suite = item.suite
        config = self.model_config(suite)
        label = self._label(predictor, config)
        spec = self.spec(suite)
        asked = None if isinstance(item, EarlierTurn) else self.answers.get((str(suite.path), item.case.id))
        if asked is not None:  # asked already for a later turn's history (run first: --ff, a reordering conftest):
            future = Future()  # the turn is scored on the answer that history showed, and not paid for twice
            future.set_result(replace(asked, cached=True if asked.cached is not None else None, history_calls=[],
                                      cost=0.0 if asked.cost is not None else None))
        elif self.fatal is not None:
            future: Future = Future()
            future.set_result(PredictionResult(None, "model", error_kind="model_error", model=label,
                                               error_message=f"not called: the session is stopping ({self.fatal})"))
        elif not callable(predictor):  # a conftest fixture returning SQL text (or a model name): every case would fail
            future = Future()
            future.set_result(PredictionResult(
                None, "model", error_kind="model_error", model=label, fatal=True,
                error_message=f"the sqleval_predictor fixture returned {type(predictor).__name__}, not a callable; fix: "
                              "return a function that takes the case and returns its SQL (`def predict(case): ...`)"))
        else:
            mark = len(self._history_log)
            try:
                case = self.predictor_case(item, config, predictor)
            except Exception as exc:  # noqa: BLE001 - a database or template problem: this case's model_error
                future = Future()
                future.set_result(PredictionResult(None, "model", error_kind="model_error", model=label,
                                                   error_message=f"cannot build the prompt: {exc}"))
            else:
                future = self.pool.submit(_predict, predictor, case, spec.extract or "auto", label, config,
                                          self.describe(suite, predictor, label), self._timeout(predictor, config))
            if not isinstance(item, EarlierTurn):  # an earlier turn's own history calls are its later turn's too
                calls, self._history_log[mark:] = self._history_log[mark:], []
                if calls:
                    self._history_calls[item.nodeid] = calls
        with self._lock:
            self.futures.setdefault(item.nodeid, future)

    @property
    def pool(self) -> DaemonPool:
        if self._pool is None:
            self._pool = DaemonPool(self.settings.concurrency, "sqleval-model")
        return self._pool

    @staticmethod
    def _timeout(predictor, config: ModelConfig) -> float | None:
        """The model-call timeout a user's predictor is held to (the built-in client enforces its own per request)."""
        if isinstance(predictor, DefaultPredictor) and predictor.function is None:
            return None
        return config.timeout or DEFAULT_MODEL_TIMEOUT

    def _label(self, predictor, config: ModelConfig) -> str:
        if isinstance(predictor, DefaultPredictor):
            return predictor.label or config.name or "model"
        return f"{getattr(predictor, '__module__', '') or ''}:{getattr(predictor, '__qualname__', type(predictor).__name__)}"

    def wait(self, item, session) -> PredictionResult:
        try:
            result = self.futures[item.nodeid].result()
        except CancelledError:
            result = PredictionResult(None, "model", error_kind="model_error",
                                      error_message=f"not called: the session is stopping ({self.fatal})")
        self.answers[(str(item.suite.path), item.case.id)] = result
        result.history_calls = self._history_calls.pop(item.nodeid, [])
        if result.fatal and self.fatal is None:
            self.fatal = result.error_message
            session.shouldstop = f"sqleval: the model cannot be used, stopping the session: {result.error_message}"
            with self._lock:
                for future in self.futures.values():
                    future.cancel()
        return result

    # -- look-ahead ------------------------------------------------------------------------
    def _look_ahead(self, item, predictor, request) -> None:
        if self.fatal is not None:
            return
        budget = 2 * self.settings.concurrency
        fixturedef = _predictor_def(item)
        scanned = 0
        for upcoming in self._upcoming(item):
            scanned += 1
            if scanned > 4 * self.settings.concurrency:
                break
            with self._lock:
                pending = sum(1 for f in self.futures.values() if not f.done())
            if pending >= budget:
                break
            if upcoming.nodeid in self.futures or getattr(upcoming, "case", None) is None:
                continue
            if hasattr(upcoming, "prediction_file_entry") or _predictor_def(upcoming) is not fixturedef:
                continue
            if isinstance(predictor, DefaultPredictor) and not predictor.applies(upcoming.suite):
                continue
            if not self._history_ready(upcoming) or self.skipped(upcoming):
                continue
            self.submit(upcoming, predictor)

    def _upcoming(self, item) -> list:
        session = item.session
        items = session.items
        if not self.worker:
            if self._positions is None:
                self._positions = {it.nodeid: i for i, it in enumerate(items)}
            position = self._positions.get(item.nodeid)
            return [] if position is None else items[position + 1:]
        if self.dist == "worksteal":
            return []
        interactor = _worker_interactor(item.config)
        if interactor is None:
            return []
        indices = []
        following = getattr(interactor, "nextitem_index", None)
        if isinstance(following, int) and not isinstance(following, bool):
            indices.append(following)
        try:
            with interactor.torun.lock() as queue:
                indices.extend(i for i in queue if isinstance(i, int) and not isinstance(i, bool))
        except Exception:  # noqa: BLE001 - xdist internals changed: no look-ahead, calls stay correct
            return []
        return [items[i] for i in indices if 0 <= i < len(items)]

    def _history_ready(self, item) -> bool:
        case = item.case
        if case.interaction is None or (case.turn or 1) <= 1 or (self.spec(item.suite).history or "model") != "model":
            return True
        previous = f"{case.interaction}/{case.turn - 1}"
        return (str(item.suite.path), previous) in self.answers

    # -- the case as a predictor sees it -----------------------------------------------------
    def predictor_case(self, item, config: ModelConfig, predictor=None) -> PredictorCase:
        from ..evaluate import suite_dialect
        from .prompt import compiled

        case, suite = item.case, item.suite
        spec = self.spec(suite)
        engine = self.state.engines.engine(case.database) if case.database is not None else None
        dialect = suite_dialect(suite, engine)
        schema_format = spec.schema_format or "ddl"
        schema = self.schema_text(case, suite, engine, dialect, schema_format, spec.sample_rows or 0)
        history = self.history(item, spec.history or "model", predictor)
        examples = examples_for(case, suite, spec.examples)
        evidence = getattr(case, "evidence", None)
        metadata = dict(case.extra or {})
        values = {"question": case.question or "", "schema": schema, "dialect": dialect, "evidence": evidence,
                  "history": [dict(h) for h in history], "examples": [dict(e) for e in examples],
                  "metadata": metadata, "case_id": case.id}
        # a lone surrogate (an earlier turn's answer with a `\\udce9` escape, in the history) as U+FFFD: UTF-8 cannot
        # carry it, so the request (and its cache key) could not be made at all
        from ..predictions import printable_text

        template = compiled(self.prompt(suite))
        if (not (case.question or "").strip() and "question" in template.placeholders
                and isinstance(predictor, DefaultPredictor) and predictor.function is None):
            # the built-in client would pay for a prompt that asks nothing, one prompt (and one cached answer) shared
            # by every such case of the database
            raise ValueError("the case has no `question:`, and the prompt template asks it ({{ question }}); fix: "
                             "give the case its question")
        messages = [{**m, "content": printable_text(m["content"])} for m in template.messages(values)]
        return PredictorCase(
            id=case.id, suite=suite.name, question=case.question, schema=schema, dialect=dialect, history=tuple(history),
            evidence=evidence, metadata=metadata, examples=tuple(examples), messages=tuple(messages),
            database=case.database.display if case.database is not None else None, interaction=case.interaction,
            turn=case.turn, schema_format=schema_format, model=config,
        )

    def schema_text(self, case, suite, engine, dialect: str, fmt: str, rows: int) -> str:
        from .schema_text import render_schema, sample_rows, tables_from_engine, tables_from_spider, views_from_engine

        # the database spec, not its URL alone: two suites built from different setup scripts at one URL (`sqlite://`,
        # a PostgreSQL server's) are two databases, and each prompt must show its own
        source = (str(case.schema.tables_json), case.schema.db_id) if case.schema is not None else case.database
        key = (source, fmt, rows, dialect)
        if key not in self._schema_texts:
            if case.schema is not None:
                tables = tables_from_spider(case.schema.tables_json, case.schema.db_id)
            elif engine is not None:
                tables = tables_from_engine(engine) + views_from_engine(engine)
            else:
                tables = []
            samples = sample_rows(engine, tables, rows, dialect=dialect, timeout=self.state.timeout_for(suite)) if rows else {}
            self._schema_texts[key] = render_schema(tables, fmt, dialect=dialect, rows=samples)
        return self._schema_texts[key]

    def history(self, item, mode: str, predictor=None) -> list[dict[str, Any]]:
        case, suite = item.case, item.suite
        if case.interaction is None or mode == "none":
            return []
        turns = [c for c in suite.cases if c.interaction == case.interaction and (c.turn or 0) < (case.turn or 0)]
        history = []
        for turn in sorted(turns, key=lambda c: c.turn):
            if mode == "gold":
                sql = turn.gold
            else:
                answer = self._earlier_answer(item, turn, predictor)
                sql = answer.sql if answer is not None else None
            history.append({"question": turn.question or "", "sql": sql})
        return history

    def _earlier_answer(self, item, turn, predictor) -> PredictionResult | None:
        """The model's answer to an earlier turn: the one this process got, else (the turn was selected out with
        ``-k`` or ran on another worker under ``worksteal``) the model asked now, with that turn's own prompt and
        history, as a serial run asks it (the response cache answers it when any process asked it already)."""
        suite = item.suite
        answer = self.answers.get((str(suite.path), turn.id))
        if answer is not None:
            return answer
        nodeid = f"{item.nodeid.rpartition('::')[0]}::{turn.item_name}"
        future = self.futures.get(nodeid)
        if future is not None:  # submitted ahead (look-ahead): its answer, once it comes, is the history's
            try:
                return future.result()
            except CancelledError:
                return None
        if predictor is None or self.fatal is not None:
            return None
        earlier = EarlierTurn(turn, suite, nodeid + EarlierTurn.SUFFIX)
        self.submit(earlier, predictor)
        try:
            answer = self.futures[earlier.nodeid].result()
        except CancelledError:
            return None
        self.answers[(str(suite.path), turn.id)] = answer
        self._history_log.append(history_call(turn.id, answer))
        return answer

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=not self.interrupted)
            self._pool = None


class DaemonPool:
    """The model calls' thread pool. Its threads are daemons: after Ctrl-C, a call hanging on an endpoint does not
    hold the process until its timeout (``ThreadPoolExecutor`` joins its threads when the interpreter exits)."""

    def __init__(self, workers: int, name: str) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"{name}_{n}", daemon=True) for n in range(workers)]
        for thread in self._threads:
            thread.start()

    def submit(self, function: Callable, *args: Any) -> Future:
        future: Future = Future()
        self._jobs.put((future, function, args))
        return future

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, function, args = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(function(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the future
                future.set_exception(exc)

    def shutdown(self, *, wait: bool) -> None:
        """Cancel the calls not started; ``wait``: for the calls under way to finish."""
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job[0].cancel()
        for _ in self._threads:
            self._jobs.put(None)
        if wait:
            for thread in self._threads:
                thread.join()


class EarlierTurn:
    """An earlier turn of an interaction that did not run in this process, asked of the model for a later turn's
    history only: what :meth:`ModelRuntime.submit` needs of an item (its own node id, never the real item's)."""

    SUFFIX = " (history)"

    def __init__(self, case, suite, nodeid: str) -> None:
        self.case, self.suite, self.nodeid = case, suite, nodeid


def history_call(case_id: str, result: PredictionResult) -> dict[str, Any]:
    """What a call made for a later turn's history cost (the record's ``model_history_calls``)."""
    entry: dict[str, Any] = {"case": case_id, "cached": result.cached, "tokens": result.tokens,
                             "latency_s": result.latency_s, "cost": result.cost}
    if result.error_kind == "model_error":
        entry["error"] = {"kind": "model_error"}
    return entry


class PendingPrediction:
    """What the ``sqleval_prediction`` fixture yields: resolved (waited for) in the item's call phase."""

    def __init__(self, runtime: ModelRuntime | None, item, result: PredictionResult | None = None) -> None:
        self.runtime = runtime
        self.item = item
        self._result = result

    @classmethod
    def ready(cls, result: PredictionResult) -> PendingPrediction:
        return cls(None, None, result)

    @property
    def known(self) -> PredictionResult | None:
        """The prediction if it is known without waiting (a predictions file, ``predicted:``), else None."""
        return self._result

    def resolve(self) -> PredictionResult:
        if self._result is None:
            self._result = self.runtime.wait(self.item, self.item.session)
        return self._result


def _predict(predictor, case: PredictorCase, extract: str, label: str, config: ModelConfig,
             request: dict[str, Any], timeout: float | None = None) -> PredictionResult:
    """Runs on a pool thread. With ``timeout`` (a user's predictor), the call runs on a daemon thread of its own: one
    that has not answered in time is this case's model_error and is abandoned (a thread cannot be killed), so
    neither the pool nor the run waits for it."""
    if timeout is None:
        result = run_predictor(predictor, case, extract=extract, label=label, config=config)
    else:
        answers: list[PredictionResult] = []

        def call_predictor() -> None:
            try:
                answers.append(run_predictor(predictor, case, extract=extract, label=label, config=config))
            except Exception as exc:  # noqa: BLE001 - never a thread that dies silently and reads as a timeout
                answers.append(PredictionResult(None, "model", error_kind="model_error", model=label, cached=False,
                                                error_message=f"the predictor's answer could not be read: "
                                                              f"{type(exc).__name__}"))

        call = threading.Thread(target=call_predictor, name=f"sqleval-predictor-{case.id}", daemon=True)
        started = time.perf_counter()
        call.start()
        call.join(timeout)
        if answers:
            result = answers[0]
        else:
            result = PredictionResult(None, "model", error_kind="model_error", model=label, cached=False,
                                      latency_s=round(time.perf_counter() - started, 6),
                                      error_message=f"the predictor timed out after {timeout} s (the model-call "
                                                    "timeout: --sqleval-model-timeout, or `timeout:` in the suite's "
                                                    "`model:`); its call was abandoned")
    result.request = request
    return result


def file_result(item) -> PredictionResult:
    """A prediction from a predictions file: its extra keys are kept; an ``error`` saved by
    ``--sqleval-save-predictions`` (a model_error, no_sql) scores as it did when the model ran."""
    entry = item.prediction_file_entry
    if entry is None:
        return PredictionResult(None, "predictions_file")
    extra = dict(getattr(entry, "extra", None) or {})
    result = PredictionResult(entry.sql, "predictions_file", extra=extra)
    error = extra.get("error")
    if entry.sql is None and isinstance(error, dict) and error.get("kind") in ("model_error", "no_sql", "no_prediction"):
        result.error_kind, result.error_message = error["kind"], str(error.get("message") or error["kind"])
    return result


def examples_for(case, suite, spec: ExamplesSpec | None) -> list[dict[str, Any]]:
    """Few-shot pairs: from the examples file, or other cases of the suite (never the case itself, nor a turn of
    its own interaction, nor a pair with the case's question or gold SQL, such as a paraphrase, nor a case without
    gold SQL: an empty answer is no example), in file order."""
    if spec is None:
        return []

    def same(a, b) -> bool:  # the case itself in other words: its question, or its gold SQL (a paraphrase's)
        return bool(a) and bool(b) and " ".join(str(a).split()).casefold() == " ".join(str(b).split()).casefold()

    def own(question, sql) -> bool:
        return same(question, case.question) or same(sql, case.gold)

    if spec.file is not None:
        from .config import load_examples

        pairs = [p for p in load_examples(spec.file) if not own(p["question"], p["sql"])]
        return [dict(p) for p in (pairs[: spec.count] if spec.count is not None else pairs)]
    chosen = []
    for other in suite.cases:
        if len(chosen) >= (spec.cases or 0):
            break
        if other.id == case.id or (case.interaction is not None and other.interaction == case.interaction):
            continue
        if not other.question or not other.gold or own(other.question, other.gold):  # no gold: `expected:` rows
            continue
        chosen.append({"question": other.question, "sql": other.gold})
    return chosen


def _predictor_def(item):
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.get("sqleval_predictor") if info is not None else None
    return defs[-1] if defs else None


def _worker_interactor(config):
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ == "WorkerInteractor" and hasattr(plugin, "torun"):
            return plugin
    return None
