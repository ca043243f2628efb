"""What a suite asks of the model, and the model's settings merged from the command line, the suite and the ini file.

Suite keys (validated by :func:`parse_suite_keys`, called by the loader):

``model:``         a mapping: ``name``, ``url``, ``key_env``, ``temperature`` (default 0), ``max_tokens``, ``seed``,
                   ``params`` (extra request parameters), ``price_per_1k_input``, ``price_per_1k_output``,
                   ``price_per_1k_cached_input`` (cached prompt tokens; default: the input price),
                   ``timeout``, ``retries``; or just the model's name as a string
``prompt:``        a Jinja2 template, inline or a file path relative to the suite
``schema_format:`` ``ddl`` (default) | ``spider`` | ``compact``
``sample_rows:``   N example rows per table in the schema (default 0)
``history:``       earlier turns of an interaction in the prompt: ``model`` (the model's own SQL, default) |
                   ``gold`` | ``none`` (also YAML's false: ``off``, ``no``)
``examples:``      few-shot pairs: N (other cases of this suite), a file (JSONL or YAML list of {question, sql}),
                   or ``{file: ..., count: N}`` / ``{cases: N}``
``extract:``       ``auto`` (default) | ``fenced`` | ``raw``
"""

from __future__ import annotations

import difflib
import json
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import SuiteError
from .extract import EXTRACT_MODES
from .prompt import PromptSource, PromptTemplate, TemplateProblem

MODEL_SUITE_KEYS = ("model", "prompt", "schema_format", "sample_rows", "history", "examples", "extract")
MODEL_KEYS = ("name", "url", "key_env", "temperature", "max_tokens", "seed", "params", "price_per_1k_input",
              "price_per_1k_output", "price_per_1k_cached_input", "timeout", "retries")
SCHEMA_FORMATS = ("ddl", "spider", "compact")
HISTORY_MODES = ("model", "gold", "none")
TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2", ".txt", ".md", ".prompt", ".tmpl")
DEFAULT_URL = "https://api.openai.com/v1"
DEFAULT_MODEL_TIMEOUT = 60.0
DEFAULT_MODEL_RETRIES = 2
DEFAULT_CONCURRENCY = 4


@dataclass(frozen=True)
class ModelConfig:
    """One OpenAI-compatible model, fully resolved (command line > suite > ini > defaults)."""

    name: str | None = None
    url: str | None = None
    key_env: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    price_per_1k_input: float | None = None
    price_per_1k_output: float | None = None
    #: Prompt tokens the endpoint served from its prompt cache (``usage.prompt_tokens_details.cached_tokens``);
    #: None: priced as the other prompt tokens, at ``price_per_1k_input``.
    price_per_1k_cached_input: float | None = None
    timeout: float | None = None
    retries: int | None = None

    def merged_over(self, lower: ModelConfig) -> ModelConfig:
        """Fields set here win; the rest come from ``lower``; ``params`` merge key by key."""
        values = {}
        for name in MODEL_KEYS:
            mine, theirs = getattr(self, name), getattr(lower, name)
            if name == "params":
                values[name] = {**dict(theirs or {}), **dict(mine or {})}
            else:
                values[name] = mine if mine is not None else theirs
        return ModelConfig(**values)

    @property
    def endpoint(self) -> str:
        """The base URL without credentials: user info and secret query parameters (``key=``, ``api_key=``, ...)
        are dropped; the others (Azure's ``api-version=``) are kept, since they change what is answered."""
        return endpoint_without_credentials(self.url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_URL)

    @property
    def parameters(self) -> dict[str, Any]:
        """The request parameters besides model and messages (in the cache key and the report)."""
        params: dict[str, Any] = {"temperature": 0.0 if self.temperature is None else self.temperature}
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        if self.seed is not None:
            params["seed"] = self.seed
        params.update(self.params or {})
        return params

    @property
    def priced(self) -> bool:
        return (self.price_per_1k_input is not None or self.price_per_1k_output is not None
                or self.price_per_1k_cached_input is not None)

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None,
             cached_tokens: int | None = None) -> float | None:
        """The price of one call. ``cached_tokens`` are part of ``prompt_tokens`` (as OpenAI counts them): they
        cost ``price_per_1k_cached_input`` when set, else the input price like the rest of the prompt."""
        if not self.priced:
            return None
        prompt = prompt_tokens or 0
        cached = min(cached_tokens or 0, prompt) if self.price_per_1k_cached_input is not None else 0
        prompt_cost = (prompt - cached) * (self.price_per_1k_input or 0.0) + cached * (self.price_per_1k_cached_input or 0.0)
        return (prompt_cost + (completion_tokens or 0) * (self.price_per_1k_output or 0.0)) / 1000.0

    def describe(self) -> dict[str, Any]:
        """For the JSON report's ``run`` block: never the key, only the variable that holds it."""
        return {"name": self.name, "endpoint": self.endpoint, "parameters": self.parameters,
                "key_env": self.key_env or "OPENAI_API_KEY", "timeout": self.timeout or DEFAULT_MODEL_TIMEOUT,
                "retries": DEFAULT_MODEL_RETRIES if self.retries is None else self.retries,
                "price_per_1k_input": self.price_per_1k_input, "price_per_1k_output": self.price_per_1k_output,
                "price_per_1k_cached_input": self.price_per_1k_cached_input}


def endpoint_without_credentials(url: str) -> str:
    from ..secrets import is_secret_key

    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    if parts.port:
        host = f"{host}:{parts.port}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not is_secret_key(k)])
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), query, ""))


@dataclass(frozen=True)
class ExamplesSpec:
    cases: int | None = None  # N other cases of the suite
    file: Path | None = None
    count: int | None = None  # at most this many from the file
    line: int | None = None


@dataclass(frozen=True)
class SuiteModelSpec:
    """The suite's model-related keys, validated (absent keys are None: the defaults apply later)."""

    model: ModelConfig = field(default_factory=ModelConfig)
    prompt: PromptSource | None = None
    prompt_line: int | None = None
    schema_format: str | None = None
    sample_rows: int | None = None
    history: str | None = None
    examples: ExamplesSpec | None = None
    extract: str | None = None

    def with_model(self, model: ModelConfig) -> SuiteModelSpec:
        return replace(self, model=model)


# --------------------------------------------------------------------------- suite keys
def parse_suite_keys(path: Path, data: Mapping[str, Any]) -> SuiteModelSpec:
    """Validate ``model:``, ``prompt:``, ``schema_format:``, ``sample_rows:``, ``history:``, ``examples:``,
    ``extract:`` of a suite mapping (a loader mapping with ``key_lines``); raises SuiteError naming the line."""
    lines = getattr(data, "key_lines", {}) or {}

    def error(message: str, key: str, fix: str = "", line: int | None = None) -> SuiteError:
        return SuiteError(message, path=path, line=line or lines.get(key), fix=fix)

    spec = SuiteModelSpec()
    if data.get("model") is not None:
        spec = replace(spec, model=_model_mapping(data["model"], error))
    if data.get("prompt") is not None:
        spec = replace(spec, prompt=_prompt(path, data["prompt"], error), prompt_line=lines.get("prompt"))
        try:
            PromptTemplate(spec.prompt)
        except TemplateProblem as exc:
            raise error(f"bad `prompt:` template: {exc}", "prompt", exc.fix) from None
    if data.get("schema_format") is not None:
        value = data["schema_format"]
        if value not in SCHEMA_FORMATS:
            raise error(f"unknown schema_format {_shown(value)}", "schema_format", f"use one of: {', '.join(SCHEMA_FORMATS)}")
        spec = replace(spec, schema_format=value)
    if data.get("sample_rows") is not None:
        value = data["sample_rows"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise error(f"`sample_rows:` must be a whole number >= 0, not {value!r}", "sample_rows")
        spec = replace(spec, sample_rows=value)
    if data.get("history") is not None:
        value = data["history"]
        if value is False:  # `history: off` (or no, false): YAML's false, read as what it says
            value = "none"
        if value not in HISTORY_MODES:
            raise error(f"unknown history mode {_shown(value)}", "history",
                        "use `model` (the model's own earlier SQL, default), `gold` or `none`")
        spec = replace(spec, history=value)
    if data.get("examples") is not None:
        spec = replace(spec, examples=_examples(path, data["examples"], error))
    if data.get("extract") is not None:
        value = data["extract"]
        if value not in EXTRACT_MODES:
            raise error(f"unknown extract mode {_shown(value)}", "extract", f"use one of: {', '.join(EXTRACT_MODES)}")
        spec = replace(spec, extract=value)
    return spec


def _shown(value: Any) -> str:
    """A mode's value in a message; a boolean is an unquoted yes/no/on/off/true/false, as YAML reads them."""
    if isinstance(value, bool):
        return f"{value!r} (YAML reads an unquoted yes/no/on/off/true/false as a boolean)"
    return repr(value)


def _model_mapping(value: Any, error) -> ModelConfig:
    if isinstance(value, str):
        return ModelConfig(name=value)
    if not isinstance(value, dict):
        raise error("`model:` must be a model name or a mapping", "model",
                    "write `model: {name: gpt-4o-mini, temperature: 0}`")
    for key in value:
        if key not in MODEL_KEYS:
            close = difflib.get_close_matches(str(key), MODEL_KEYS, n=1)
            hint = f"did you mean `{close[0]}`? " if close else ""
            raise error(f"unknown key {key!r} in `model:`", "model", f"{hint}allowed keys: {', '.join(MODEL_KEYS)}",
                        line=getattr(value, "key_lines", {}).get(key))
    fields: dict[str, Any] = {}
    for key in ("name", "url", "key_env"):
        if value.get(key) is not None:
            if not isinstance(value[key], str) or not value[key].strip():
                raise error(f"`model.{key}` must be text, not {value[key]!r}", "model")
            fields[key] = value[key].strip()
    if fields.get("url"):
        from ..secrets import expand_env

        def missing(name: str) -> Exception:
            return error(f"environment variable {name} is not set (in `model.url`)", "model",
                         f"export {name}=... before running pytest")

        fields["url"] = expand_env(fields["url"], os.environ.get, missing)
    for key, kind in (("temperature", float), ("price_per_1k_input", float), ("price_per_1k_output", float),
                      ("price_per_1k_cached_input", float), ("timeout", float), ("max_tokens", int), ("seed", int), ("retries", int)):
        if value.get(key) is None:
            continue
        number = value[key]
        ok = isinstance(number, int) if kind is int else isinstance(number, (int, float))
        if (isinstance(number, bool) or not ok or not math.isfinite(number) or number < 0
                or (key in ("timeout", "max_tokens") and number == 0)):
            raise error(f"`model.{key}` must be a {'whole number' if kind is int else 'number'} "
                        f"{'> 0' if key in ('timeout', 'max_tokens') else '>= 0'}, not {number!r}", "model")
        fields[key] = kind(number)
    if value.get("params") is not None:
        params = value["params"]
        if not isinstance(params, dict):
            raise error("`model.params` must be a mapping of extra request parameters", "model",
                        "write e.g. `params: {top_p: 0.9}`")
        try:
            json.dumps(params)
        except (TypeError, ValueError):
            raise error("`model.params` must hold plain JSON values", "model") from None
        fields["params"] = {str(k): v for k, v in params.items()}
    return ModelConfig(**fields)


def _prompt(path: Path, value: Any, error) -> PromptSource:
    if not isinstance(value, str) or not value.strip():
        raise error("`prompt:` must be a template (text) or a template file path", "prompt",
                    "write `prompt: prompts/sql.j2` or a block scalar `prompt: |` with the template")
    text = value.strip()
    if "\n" not in text and ("{" not in text):
        candidate = (path.parent / os.path.expanduser(text)).resolve()
        if candidate.is_file():
            return read_prompt_file(candidate)
        if text.endswith(TEMPLATE_SUFFIXES):
            raise error(f"prompt file not found: {candidate}", "prompt", "the path is relative to the suite file")
    return PromptSource(text=value, origin="inline")


def read_prompt_file(path: Path) -> PromptSource:
    try:
        # utf-8-sig: an editor's byte-order mark is not the prompt's first character (nor in its cache key)
        return PromptSource(text=path.read_text(encoding="utf-8-sig"), origin=str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read the prompt template: {exc}", path=path) from None


def _examples(path: Path, value: Any, error) -> ExamplesSpec:
    line = (getattr(value, "line", None) or None)
    if isinstance(value, bool):
        raise error("`examples:` must be a count, a file or a mapping", "examples")
    if isinstance(value, int):
        if value < 0:
            raise error(f"`examples:` count must be >= 0, not {value}", "examples")
        return ExamplesSpec(cases=value, line=line)
    if isinstance(value, str):
        return ExamplesSpec(file=_examples_file(path, value, error), line=line)
    if isinstance(value, dict):
        unknown = [k for k in value if k not in ("file", "count", "cases")]
        if unknown or ("file" in value) == ("cases" in value):
            raise error("`examples:` mapping takes `file:` (with optional `count:`) or `cases:`", "examples",
                        "write `examples: {file: shots.jsonl, count: 3}` or `examples: {cases: 3}`")
        for key in ("count", "cases"):
            if key in value and (isinstance(value[key], bool) or not isinstance(value[key], int) or value[key] < 0):
                raise error(f"`examples.{key}` must be a whole number >= 0", "examples")
        if "cases" in value:
            return ExamplesSpec(cases=value["cases"], line=line)
        return ExamplesSpec(file=_examples_file(path, str(value["file"]), error), count=value.get("count"), line=line)
    raise error("`examples:` must be a count, a file or a mapping", "examples",
                "write `examples: 3` (other cases of this suite) or `examples: shots.jsonl`")


def _examples_file(path: Path, text: str, error) -> Path:
    candidate = (path.parent / os.path.expanduser(text)).resolve()
    if not candidate.is_file():
        raise error(f"examples file not found: {candidate}", "examples", "the path is relative to the suite file")
    load_examples(candidate)  # a bad file is reported now, with its line
    return candidate


_examples_cache: dict[Path, tuple[dict[str, str], ...]] = {}


def load_examples(path: Path) -> tuple[dict[str, str], ...]:
    """Few-shot pairs from JSON Lines (one ``{"question": ..., "sql": ...}`` per line) or a YAML list of them."""
    if path in _examples_cache:
        return _examples_cache[path]
    fix = 'write one {"question": "...", "sql": "SELECT ..."} per line (.jsonl), or a YAML list of {question, sql}'
    try:
        text = path.read_text(encoding="utf-8-sig")  # an editor's byte-order mark is not line 1's JSON
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read the examples file: {exc}", path=path) from None
    entries: list[tuple[int, Any]] = []
    if path.suffix in (".yaml", ".yml"):
        from ..yaml_lines import read_yaml

        data = read_yaml(path)  # as a suite is read: a raw U+2028 in `sql:` is text, or an error where YAML 1.1 differs
        if not isinstance(data, list):
            raise SuiteError("the examples file must be a list of {question, sql}", path=path, fix=fix)
        entries = [(None, e) for e in data]
    else:
        for number, line in enumerate(text.split("\n"), start=1):  # not splitlines(): U+2028 in a JSON string is text
            if not line.strip():
                continue
            try:
                entries.append((number, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise SuiteError(f"not valid JSON: {exc.msg}", path=path, line=number, fix=fix) from None
    pairs = []
    for number, entry in entries:
        if not isinstance(entry, dict) or not all(isinstance(entry.get(key), str) for key in ("question", "sql")):
            raise SuiteError("each example needs text `question` and `sql`", path=path, line=number, fix=fix)
        pairs.append({"question": entry["question"], "sql": entry["sql"]})
    _examples_cache[path] = tuple(pairs)
    return _examples_cache[path]
