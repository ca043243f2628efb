"""What the model calls cost, per suite, from the case records (pure functions: no pytest, no I/O but saving).

Per case the record has ``latency_s``, ``tokens`` ``{prompt, completion}``, ``cached`` and ``cost``. Per suite:

- ``calls``: cases whose predictor was called in this run (not answered from the cache);
- ``cache_hits``: cases answered from the response cache;
  (under ``--dist each`` every worker predicts every case: each worker's answer counts, as a call or a cache hit)
- ``errors``: cases whose call failed (``model_error``);
- ``tokens``: prompt and completion tokens of this run's calls (cache hits spent none), and ``cached_prompt``,
  of the prompt tokens those the endpoint served from its prompt cache, when some call reported it;
- ``latency_s``: p50 and p95 of this run's calls (nearest-rank percentiles);
- ``cost``: this run's spend, when ``price_per_1k_input``/``price_per_1k_output`` are set (None otherwise);
- ``calls_without_tokens``: calls whose answer lacked a token count (prompt or completion), when there are some:
  ``tokens`` and ``cost`` leave out what is not known of them.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence


def model_records(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in records if r.get("prediction_source") == "model"]


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile: the smallest value with at least q% of the values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[rank - 1]


def repeat_entry(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """What another xdist worker's run of a case already recorded cost (``--dist each``: every worker predicts every
    case, and the controller keeps the first record): kept in that record's ``model_repeats`` so no call is lost."""
    if record.get("prediction_source") != "model":
        return None
    entry = {key: record.get(key) for key in ("cached", "tokens", "latency_s", "cost")}
    if (record.get("error") or {}).get("kind") == "model_error":
        entry["error"] = {"kind": "model_error"}
    return entry


def usage(records: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The suite's model usage, or None when no case asked a model. A case's ``model_repeats`` (its other runs under
    ``--dist each``) and ``model_history_calls`` (earlier turns asked for its history only: selected out with ``-k``,
    or run on another worker under ``worksteal``) count as calls and cache hits of their own."""
    cases = model_records(records)
    if not cases:
        return None
    runs = [*cases, *(r for case in cases for key in ("model_repeats", "model_history_calls")
                      for r in (case.get(key) or ()) if isinstance(r, Mapping))]
    called = [r for r in runs if r.get("cached") is False]
    latencies = [float(r["latency_s"]) for r in called if isinstance(r.get("latency_s"), (int, float))]
    costs = [r["cost"] for r in runs if isinstance(r.get("cost"), (int, float))]
    names = sorted({str(r.get("model")) for r in cases if r.get("model")})
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    # an answer missing either count (a server that sends `prompt_tokens` only) is left out of `tokens` and `cost`
    # in part: counted here too, or the suite's cost reads as complete while a call's price is unknown
    uncounted = sum(1 for r in called if (r.get("error") or {}).get("kind") != "model_error"
                    and not all(isinstance((r.get("tokens") or {}).get(k), (int, float)) for k in ("prompt", "completion")))
    block = {
        "model": names[0] if len(names) == 1 else names,
        "cases": len(cases),
        "calls": len(called),
        "cache_hits": sum(1 for r in runs if r.get("cached") is True),
        "errors": sum(1 for r in cases if (r.get("error") or {}).get("kind") == "model_error"),
        "tokens": {"prompt": sum(_tokens(r, "prompt") for r in called),
                   "completion": sum(_tokens(r, "completion") for r in called)},
        "latency_s": {"p50": None if p50 is None else round(p50, 6), "p95": None if p95 is None else round(p95, 6)},
        "cost": round(math.fsum(costs), 8) if costs else None,
    }
    if any(isinstance((r.get("tokens") or {}).get("cached_prompt"), (int, float)) for r in called):
        block["tokens"]["cached_prompt"] = sum(_tokens(r, "cached_prompt") for r in called)
    if uncounted:  # answers without token counts: the tokens (and the cost) above leave them out
        block["calls_without_tokens"] = uncounted
    return block


def _tokens(record: Mapping[str, Any], kind: str) -> int:
    tokens = record.get("tokens") or {}
    value = tokens.get(kind) if isinstance(tokens, Mapping) else None
    return int(value) if isinstance(value, (int, float)) else 0


def usage_line(block: Mapping[str, Any]) -> str:
    """One summary line: ``model m: 10 calls, 2 cache hits, 0 errors | tokens 5120 prompt (4096 cached) + 310
    completion | latency p50 0.410 s, p95 1.200 s | cost $0.0031`` (cached tokens, latency and cost only when
    known)."""
    name = block["model"] if isinstance(block["model"], str) else ", ".join(block["model"])
    parts = [f"model {name}: {block['calls']} calls, {block['cache_hits']} cache hits, {block['errors']} errors",
             f"tokens {block['tokens']['prompt']} prompt"
             + (f" ({block['tokens']['cached_prompt']} cached)" if block["tokens"].get("cached_prompt") is not None else "")
             + f" + {block['tokens']['completion']} completion"
             + (f" ({block['calls_without_tokens']} calls without token counts)" if block.get("calls_without_tokens") else "")]
    latency = block["latency_s"]
    if latency["p50"] is not None:
        parts.append(f"latency p50 {latency['p50']:.3f} s, p95 {latency['p95']:.3f} s")
    if block.get("cost") is not None:
        parts.append(f"cost ${money(block['cost'])}")
    return " | ".join(parts)


def money(amount: float) -> str:
    """``0.0075`` to 4 decimals; a smaller amount (a short run of a cheap model) to its first 2 significant digits,
    never ``0.0000`` for a spend that is not zero."""
    if amount == 0 or abs(amount) >= 0.0001:
        return f"{amount:.4f}"
    return f"{amount:.{1 - math.floor(math.log10(abs(amount)))}f}"


def records_of(suite_name: str, display_path: str, records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """A suite's records (the report's suite entries name a display path; records hold the absolute path)."""
    tail = Path(display_path).as_posix()
    return [r for r in records if r.get("suite") == suite_name and Path(str(r.get("path"))).as_posix().endswith(tail)]


def attach_usage(suite_entries: list[dict[str, Any]], records: Sequence[Mapping[str, Any]]) -> None:
    """Add ``model`` (usage) to each report suite entry that asked a model."""
    for entry in suite_entries:
        block = usage(records_of(entry.get("name"), entry.get("path") or "", records))
        if block is not None:
            entry["model"] = block


def run_models(records: Iterable[Mapping[str, Any]]) -> Any:
    """The report's ``run.model``: the distinct model requests (name, endpoint, parameters, prompt sha256)."""
    seen: list[dict[str, Any]] = []
    for record in model_records(records):
        request = record.get("model_request")
        if isinstance(request, Mapping) and dict(request) not in seen:
            seen.append(dict(request))
    if not seen:
        return None
    return seen[0] if len(seen) == 1 else seen


# --------------------------------------------------------------------------- saving predictions
def prediction_lines(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One JSONL object per model case, in report order, with the keys a predictor asked to keep. Ids are ``<suite>::<id>`` when several suites ran
    (as ``--sqleval-predictions`` reads them back); a turn's id is ``<interaction>/<n>``."""
    cases = model_records(records)
    several = len({r.get("suite") for r in records}) > 1
    lines = []
    for record in cases:
        line = {
            "id": f"{record['suite']}::{record['id']}" if several else record["id"],
            "sql": record.get("predicted_as_given", record.get("predicted")),  # a lone surrogate as given (\ud800)
            "raw_output": record.get("raw_output"),
            "model": record.get("model"),
            "latency_s": record.get("latency_s"),
            "tokens": record.get("tokens"),
        }
        error = record.get("error") or {}
        if record.get("predicted") is None and error.get("kind") in ("model_error", "no_sql", "no_prediction"):
            line["error"] = {"kind": error["kind"], "message": error.get("message")}
        extra = record.get("prediction_extra")  # what a predictor asked to keep: a rescore reads it back
        if isinstance(extra, Mapping):
            line.update({str(k): v for k, v in extra.items() if str(k) not in line and str(k) != "error"})
        lines.append(line)
    return lines


def save_predictions(path: str | Path, records: Sequence[Mapping[str, Any]]) -> int:
    """Write the JSONL atomically; returns the number of lines."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = prediction_lines(records)
    from .cache import file_mode, json_text

    text = "".join(json_text(line) + "\n" for line in lines)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)

    os.fchmod(fd, file_mode())  # as open() would make it, not mkstemp's 0600
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temp, path)
    return len(lines)
