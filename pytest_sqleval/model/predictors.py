"""Predictors: what turns a case into SQL text.

A predictor is any callable ``predict(case: PredictorCase)`` returning SQL text, ``None`` (no answer), or a
mapping with ``sql`` plus anything worth keeping (``raw_output``, ``tokens`` ``{prompt, completion}``,
``latency_s``, ``model``; other keys land in the record's ``prediction_extra``). The built-in one sends the
rendered prompt to an OpenAI-compatible endpoint through the response cache. Whatever a predictor returns goes
through the suite's SQL extraction step (``extract:``), so every source scores alike.
"""

from __future__ import annotations

import importlib
import math
import numbers
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .cache import ResponseCache, cache_key
from .client import ModelCallError, client_for
from .config import ModelConfig
from .extract import extract_sql, preview

#: Keys of a predictor's mapping that the record keeps under their own name.
KNOWN_RESULT_KEYS = ("sql", "raw_output", "tokens", "latency_s", "model", "cached")


@dataclass(frozen=True)
class PredictorCase:
    """What a predictor is given for one case (or interaction turn)."""

    id: str
    suite: str
    question: str | None
    schema: str  # rendered in the suite's schema_format
    dialect: str
    history: tuple[Mapping[str, Any], ...] = ()  # earlier turns: {"question", "sql"}
    evidence: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    examples: tuple[Mapping[str, Any], ...] = ()
    messages: tuple[Mapping[str, str], ...] = ()  # the rendered prompt (chat messages)
    database: str | None = None
    interaction: str | None = None
    turn: int | None = None
    schema_format: str = "ddl"
    model: ModelConfig | None = None  # the suite's resolved model settings (the built-in client's)


@dataclass
class PredictionResult:
    """A predictor's answer after normalisation and extraction: the record fields of the model step."""

    sql: str | None
    source: str  # predictions_file | model | suite
    raw_output: str | None = None
    error_kind: str | None = None
    error_message: str | None = None
    fatal: bool = False
    model: str | None = None
    latency_s: float | None = None
    tokens: dict[str, int | None] | None = None
    cached: bool | None = None
    cost: float | None = None
    extraction: dict[str, str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    request: dict[str, Any] | None = None  # what was asked (model, endpoint, parameters, prompt sha256), for the run block
    #: calls made for this turn's history only (earlier turns that did not run in this process): their cost
    history_calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def query_error(self):
        """The miss this result stands for (``model_error``, ``no_sql``, ``no_prediction``), or None."""
        if self.error_kind is None:
            return None
        from ..errors import QueryError

        return QueryError(self.error_kind, self.error_message or self.error_kind)

    def record_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"prediction_source": self.source}
        if self.source == "model":
            fields.update({"model": self.model, "raw_output": self.raw_output, "latency_s": self.latency_s,
                           "tokens": self.tokens, "cached": self.cached, "cost": self.cost,
                           "extraction": self.extraction, "model_request": self.request})
            from ..predictions import is_valid_text

            if self.sql is not None and not is_valid_text(self.sql):  # the record's `predicted` shows U+FFFD for it:
                fields["predicted_as_given"] = self.sql  # --sqleval-save-predictions writes this, so a replay scores alike
        if self.history_calls:
            fields["model_history_calls"] = [dict(call) for call in self.history_calls]
        if self.extra:
            fields["prediction_extra"] = dict(self.extra)
        return fields


class BuiltinPredictor:
    """The OpenAI-compatible chat client behind the response cache."""

    label = "openai-compatible"

    def __init__(self, cache: ResponseCache) -> None:
        self.cache = cache

    def __call__(self, case: PredictorCase) -> dict[str, Any]:
        config = case.model
        if config is None or not config.name:
            raise ModelCallError("no model configured for this suite: use --sqleval-model NAME or `model:`", fatal=True,
                                 called=False)
        parameters = config.parameters
        messages = [dict(m) for m in case.messages]
        key = cache_key(config.endpoint, config.name, messages, parameters)
        started = time.perf_counter()
        hit = self.cache.get(key)
        if hit is None and self.cache.mode == "use":
            with self.cache.claim(key):  # one call per request at once, across threads and xdist workers
                hit = self.cache.get(key)  # answered by another process (or thread) while this one waited
                if hit is None:
                    return self._ask(config, key, messages, parameters)
        if hit is not None:  # the tokens and latency of the call that filled the cache: a replay is reproducible
            latency = hit.get("latency_s")
            if isinstance(latency, bool) or not isinstance(latency, (int, float)):
                latency = time.perf_counter() - started
            return {"sql": hit.get("text"), "raw_output": hit.get("text"), "model": config.name, "cached": True,
                    "tokens": {"prompt": hit.get("prompt_tokens"), "completion": hit.get("completion_tokens"),
                               "cached_prompt": hit.get("cached_tokens")},
                    "latency_s": latency, **_truncation(hit)}
        if self.cache.mode == "only":
            problem = self.cache.problem(key)
            if problem is not None:
                raise ModelCallError(f"the cached answer {self.cache.path(key)} cannot be used ({problem}); fix: delete "
                                     "the file, or run once with --sqleval-cache-mode refresh", called=False)
            raise ModelCallError(f"not in the cache (--sqleval-cache-mode only; key {key[:16]}... under {self.cache.directory})",
                                 called=False)
        return self._ask(config, key, messages, parameters)

    def _ask(self, config: ModelConfig, key: str, messages: list[dict[str, Any]],
             parameters: Mapping[str, Any]) -> dict[str, Any]:
        """Call the endpoint and keep its answer in the cache."""
        completion = client_for(config).complete(messages, parameters)
        response = {"text": completion.text, "prompt_tokens": completion.prompt_tokens,
                    "completion_tokens": completion.completion_tokens, "latency_s": round(completion.latency_s, 6)}
        if completion.cached_tokens is not None:
            response["cached_tokens"] = completion.cached_tokens
        if completion.truncated_by is not None:
            response["finish_reason"] = completion.truncated_by
        try:
            self.cache.put(key, {"endpoint": config.endpoint, "model": config.name, "messages": messages,
                                 "parameters": parameters}, response)
        except OSError as exc:  # every answer would be lost: stop once, with the fix
            raise ModelCallError(f"cannot write the response cache {self.cache.directory}: {exc}; fix: give "
                                 "--sqleval-cache a writable directory, or --sqleval-cache-mode off", fatal=True) from None
        return {"sql": completion.text, "raw_output": completion.text, "model": config.name, "cached": False,
                "tokens": {"prompt": completion.prompt_tokens, "completion": completion.completion_tokens,
                           "cached_prompt": completion.cached_tokens},
                "latency_s": completion.latency_s, **_truncation(response)}


def _truncation(response: Mapping[str, Any]) -> dict[str, str]:
    """``{"finish_reason": "length"}`` for an answer the endpoint cut at its token limit (kept in the record's
    ``prediction_extra``; a miss then says so), else nothing: the records of whole answers do not change."""
    return {"finish_reason": "length"} if response.get("finish_reason") == "length" else {}


def run_predictor(predict: Callable[[PredictorCase], Any], case: PredictorCase, *, extract: str, label: str,
                  config: ModelConfig | None) -> PredictionResult:
    """Call ``predict`` and normalise what it returns (or raises) into a :class:`PredictionResult`."""
    started = time.perf_counter()
    try:
        answer = predict(case)
    except ModelCallError as exc:
        latency = exc.latency_s if exc.latency_s is not None else time.perf_counter() - started
        return PredictionResult(None, "model", error_kind="model_error", error_message=exc.message, fatal=exc.fatal,
                                model=label, cached=False if exc.called else None,
                                latency_s=round(latency, 6) if exc.called else None)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's code (sys.exit too): this case's model_error
        text = _first_line(exc)
        return PredictionResult(None, "model", error_kind="model_error", model=label, cached=False,
                                error_message=f"the predictor raised {type(exc).__name__}{': ' + text if text else ''}",
                                latency_s=round(time.perf_counter() - started, 6))
    elapsed = time.perf_counter() - started

    def failed(message: str) -> PredictionResult:
        return PredictionResult(None, "model", error_kind="model_error", error_message=message, model=label,
                                latency_s=round(elapsed, 6), cached=False)

    if answer is None or isinstance(answer, str):
        answer = {"sql": answer}
    if not isinstance(answer, Mapping):
        if hasattr(answer, "__await__") and hasattr(answer, "close"):  # an async predictor (a conftest fixture's)
            answer.close()  # never awaited: close it, no "never awaited" warning
            return failed("the predictor returned a coroutine (an async function); predictors run on worker threads "
                          "and must return the answer: wrap it, e.g. `lambda case: asyncio.run(predict(case))`")
        return failed(f"the predictor returned {type(answer).__name__}; return SQL text, None, or a mapping with 'sql'")
    if "sql" not in answer:
        return failed(f"the predictor's mapping has no 'sql' key (keys: {', '.join(map(str, answer))})")
    sql = answer.get("sql")
    if sql is not None and not isinstance(sql, str):
        return failed(f"the predictor's 'sql' is {type(sql).__name__}, not text")
    raw = answer.get("raw_output", sql)
    tokens = _tokens(answer.get("tokens"))
    cached = _flag(answer.get("cached", False))
    if cached is None:  # bool("false") is True: a wrong cache hit, priced at zero
        return failed(f"the predictor's 'cached' is {answer.get('cached')!r}, not true or false; fix: return "
                      "'cached': True or False (from a file: write true or false unquoted)")
    latency = answer.get("latency_s")
    latency = _count(latency)
    latency = float(latency) if latency is not None else elapsed  # NaN, inf or negative: not a latency
    cost = None
    if config is not None and config.priced and tokens is not None:
        # a priced side whose token count the server did not send: the cost is unknown (None), not a zero
        # (a cached prompt price with no cached count: none of the prompt was cached, priced in full)
        known = all(tokens.get(side) is not None for side, price in
                    (("prompt", config.price_per_1k_input or config.price_per_1k_cached_input),
                     ("completion", config.price_per_1k_output)) if price)
        cost = (0.0 if cached else config.cost(tokens.get("prompt"), tokens.get("completion"),
                                               tokens.get("cached_prompt")) if known else None)
    result = PredictionResult(
        None, "model", raw_output=raw if raw is None or isinstance(raw, str) else str(raw),
        model=str(answer.get("model") or label), latency_s=round(latency, 6), tokens=tokens, cached=cached,
        cost=None if cost is None else round(cost, 8),
        extra={str(k): _plain(v) for k, v in answer.items() if k not in KNOWN_RESULT_KEYS},
    )
    if sql is None:
        result.error_kind, result.error_message = "no_prediction", "the predictor returned no SQL"
        result.extraction = {"mode": extract, "step": "none"}
        return result
    extraction = extract_sql(sql, extract, getattr(case, "dialect", "") or "")
    result.extraction = extraction.as_json()
    if extraction.sql is None:
        result.error_kind, result.error_message = extraction.error_kind, extraction.message
    else:
        result.sql = extraction.sql
    return result


def _tokens(value: Any) -> dict[str, int | None] | None:
    if not isinstance(value, Mapping):
        return None
    # OpenAI's names, the short ones, and Anthropic's (`input_tokens`/`output_tokens`): the first one present counts
    prompt = _first_present(value, ("prompt", "prompt_tokens", "input", "input_tokens"))
    completion = _first_present(value, ("completion", "completion_tokens", "output", "output_tokens"))
    as_int = lambda v: None if _count(v) is None else int(_count(v))  # noqa: E731
    tokens = {"prompt": as_int(prompt), "completion": as_int(completion)}
    # of the prompt tokens, those served from the endpoint's prompt cache (OpenAI's prompt_tokens_details
    # .cached_tokens): kept only when known, so a record without them keeps its two keys
    details = value.get("prompt_tokens_details")
    cached = value.get("cached_prompt", value.get("cached_prompt_tokens", value.get("cached_tokens")))
    if cached is None and isinstance(details, Mapping):
        cached = details.get("cached_tokens")
    cached = as_int(cached)
    if cached is not None:
        tokens["cached_prompt"] = min(cached, tokens["prompt"]) if tokens["prompt"] is not None else cached
    return tokens


def _first_present(value: Mapping, keys: tuple[str, ...]) -> Any:
    return next((value[key] for key in keys if value.get(key) is not None), None)


def _flag(value: Any) -> bool | None:
    """A yes/no value: a bool, None (no), 0/1, or the text true/false, yes/no, on/off, 1/0; None for anything else."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return {"true": True, "yes": True, "on": True, "1": True,
                "false": False, "no": False, "off": False, "0": False}.get(value.strip().lower())
    return None


def _count(value: Any) -> float | None:
    """A finite number >= 0 (a token count, a latency) as Python's int or float, else None: NaN, infinities and
    negatives are unknown. numpy's numbers count (a local model's ``mask.sum()``, a float32 timer); bools do not."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy.bool_ is no Real either
        return None
    if isinstance(value, numbers.Integral):  # past 2**53 no float holds it (10**400 would overflow): not a real count
        return int(value) if 0 <= value < 2**53 else None
    try:
        value = float(value)
    except OverflowError:  # a Fraction beyond any float
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _plain(value: Any) -> Any:
    import json

    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError, RecursionError):  # not JSON, or nested too deep for it
        try:
            return str(value)
        except Exception:  # noqa: BLE001 - a value that cannot be printed either (too deep, a raising __str__)
            return f"<{type(value).__name__}>"


def _first_line(exc: BaseException) -> str:
    """The first line of an exception's message (at most 300 characters); "" when it cannot be printed."""
    try:
        text = str(exc).strip()
    except Exception:  # noqa: BLE001 - the user's exception class whose __str__ raises
        return ""
    return text.splitlines()[0][:300] if text else ""


class PredictorSpecError(ValueError):
    pass


def load_callable(spec: str, search: Sequence[Path] = (), option: str = "--sqleval-predictor") -> Callable[[PredictorCase], Any]:
    """``module:function`` (``package.module:object.attr``) -> the callable; ``search`` dirs are tried for the import.
    ``option``: where the spec was given, as the messages name it (``ini option sqleval_predictor``)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise PredictorSpecError(f"{option} {spec!r}: expected module:function (e.g. mymodel:predict)")
    if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:  # a file path, not a module
        dotted = module_name.removesuffix(".py").replace("\\", "/").strip("/").replace("/", ".")
        fixed = f"{option} {dotted}:{attr}" if option.startswith("--") else f"sqleval_predictor = {dotted}:{attr}"
        raise PredictorSpecError(f"{option} {spec!r}: {module_name} is a file path, not a module; "
                                 f"name the module instead: {fixed}")
    try:
        module = _import(module_name, search)
    except ImportError as exc:
        raise PredictorSpecError(f"{option} {spec!r}: cannot import {module_name}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed while importing (a syntax error, a raise)
        where = f" ({Path(exc.filename).name}, line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.filename else ""
        detail = exc.msg if isinstance(exc, SyntaxError) else str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise PredictorSpecError(f"{option} {spec!r}: cannot import {module_name}: "
                                 f"{type(exc).__name__}{': ' + detail if detail else ''}{where}") from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise PredictorSpecError(f"{option} {spec!r}: {module_name} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise PredictorSpecError(f"{option} {spec!r}: {attr} is not callable")
    if isinstance(target, type):  # called with each case, a class would make an instance per case, not SQL
        raise PredictorSpecError(f"{option} {spec!r}: {attr} is a class; point at a function or at a "
                                 f"callable instance (e.g. `predict = {attr}()` in {module_name})")
    import inspect

    if inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(getattr(target, "__call__", None)):
        raise PredictorSpecError(f"{option} {spec!r}: {attr} is an async function; predictors run on "
                                 "worker threads and must return the answer: wrap it, e.g. "
                                 f"`def predict(case): return asyncio.run({attr}(case))`")
    return target


def _import(name: str, search: Sequence[Path]):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name.split(".")[0] or not search:
            raise
    added = [str(p) for p in search if str(p) not in sys.path]
    sys.path[:0] = added
    try:
        return importlib.import_module(name)
    finally:
        for entry in added:
            if entry in sys.path:
                sys.path.remove(entry)


def preview_text(text: str | None) -> str:
    return preview(text or "")
