"""``sqleval generate``: the MRO paper's SQL-first dataset generation (section 2.2) for a user's database.

1. The schema (DDL, with ``sample_rows`` rows per table for diversity) goes into a prompt that asks the model
   for SQL queries FIRST, covering a requested mix of clause types and difficulty classes, each with its
   reasoning, as a JSON list (several per request; a high temperature, as in the paper).
2. Each SQL is executed under the guard (:func:`pytest_sqleval.execution.runner.run_query`, untrusted) and
   kept only if it parses as one query, runs, returns a non-empty result of at most ``max_result_rows`` rows,
   returns the same result on a second run, reads neither the clock nor a random number and has no LIMIT whose
   rows an engine picks (no ORDER BY, or a tie at the cut) (deterministic), and is not a duplicate of a kept query (the same
   normalised SQL, or the same result, up to the order of its columns, and the same structure: tables and clauses).
3. The model writes a natural-language question for each kept SQL (and optional paraphrases: extra cases
   with the same gold, which the plugin groups per gold SQL).
4. Optionally (``check``) the model is asked whether question and SQL agree; a disagreement is dropped.

The output is a suite whose cases carry the difficulty computed by :mod:`pytest_sqleval.metrics.hardness`
and their clause types as tags, and a report counting what each filter dropped and why. Model calls go
through the model-in-the-loop client (:mod:`pytest_sqleval.model.client`, the official ``openai`` SDK) and
its on-disk response cache (:mod:`pytest_sqleval.model.cache`), so a generation can be replayed offline.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

CLAUSE_TYPES = {  # --mix name -> the clause of the statistics module
    "where": "WHERE", "group_by": "GROUP BY", "having": "HAVING", "order_by": "ORDER BY", "limit": "LIMIT",
    "join": "JOIN", "subquery": "subquery", "set_operation": "set operation", "cte": "CTE", "window": "window",
    "case": "CASE", "distinct": "DISTINCT",
}
DIFFICULTY_CLASSES = ("easy", "medium", "hard", "extra")
DEFAULT_MIX = {"where": 1, "group_by": 1, "order_by": 1, "join": 1, "subquery": 1, "having": 1,
               "easy": 1, "medium": 1, "hard": 1, "extra": 1}
FILTERS = ("unparsable", "does_not_run", "empty_result", "too_many_rows", "nondeterministic", "duplicate",
           "no_question", "disagreement")
FORMAT = "sqleval-generate/1"


class GenerateError(Exception):
    """Bad input or a failed model call: the message says what and how to fix it."""


@dataclass(frozen=True)
class GenerateOptions:
    count: int = 20
    mix: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_MIX))
    batch: int = 10
    sample_rows: int = 3
    max_result_rows: int = 50
    paraphrases: int = 0
    check: bool = False
    temperature: float = 1.0
    timeout: float = 10.0
    seed: int | None = None  # the requests' `seed`; the pipeline itself makes no random choice
    allow_functions: tuple[str, ...] = ()  # the database's own functions the guard lets run (--allow-function)

    @classmethod
    def from_text(cls, *, mix: str | None, **values: Any) -> GenerateOptions:
        for name in ("count", "batch", "max_result_rows"):
            if values.get(name) is not None and values[name] < 1:
                raise GenerateError(f"--{name.replace('_', '-')} must be at least 1, not {values[name]}")
        for name in ("sample_rows", "paraphrases"):
            if values.get(name) is not None and values[name] < 0:
                raise GenerateError(f"--{name.replace('_', '-')} cannot be negative ({values[name]})")
        temperature, timeout = values.get("temperature"), values.get("timeout")
        if temperature is not None and not (math.isfinite(temperature) and temperature >= 0):
            raise GenerateError(f"--temperature must be a finite number from 0, not {temperature}")
        if timeout is not None and not (math.isfinite(timeout) and 0 < timeout <= 86400):
            raise GenerateError(f"--timeout must be a finite number of seconds > 0 and <= 86400, not {timeout}")
        return cls(mix=dict(DEFAULT_MIX) if mix is None else parse_mix(mix), **values)


def parse_mix(text: str) -> dict[str, float]:
    """``"join=3,group_by=2,hard"`` -> ``{"join": 3, "group_by": 2, "hard": 1}``."""
    mix: dict[str, float] = {}
    allowed = (*CLAUSE_TYPES, *DIFFICULTY_CLASSES)
    if not text.strip():  # `--mix "$MIX"` with the variable unset: never the default mix in silence
        raise GenerateError("--mix is empty: name clause types and difficulty classes with weights (e.g. "
                            "join=3,hard=1), or leave --mix out for the default even mix")
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, weight = part.partition("=")
        name = name.strip().lower().replace(" ", "_").replace("-", "_")
        if name not in allowed:
            raise GenerateError(f"--mix: unknown {name!r}; use clause types ({', '.join(CLAUSE_TYPES)}) and "
                                f"difficulty classes ({', '.join(DIFFICULTY_CLASSES)}), e.g. join=3,hard=1")
        try:
            value = float(weight) if weight.strip() else 1.0
        except ValueError:
            raise GenerateError(f"--mix: the weight of {name} must be a number, not {weight!r}") from None
        if value < 0 or not math.isfinite(value):
            raise GenerateError(f"--mix: the weight of {name} must be a non-negative number")
        mix[name] = value
    if not mix or not any(mix.values()):
        raise GenerateError("--mix names nothing with a positive weight")
    return mix


def quotas(weights: Mapping[str, float], total: int) -> dict[str, int]:
    """Split ``total`` by weight (largest remainder; ties by name), dropping zero quotas."""
    weights = {k: v for k, v in weights.items() if v > 0}
    if not weights or total <= 0:
        return {}
    whole = sum(weights.values())
    if not math.isfinite(whole * total):  # `join=1e308,...` overflows (NaN or inf quotas): relative to the largest
        top = max(weights.values())
        weights = {k: v / top for k, v in weights.items()}
        whole = sum(weights.values())
    exact = {k: total * v / whole for k, v in weights.items()}
    result = {k: int(math.floor(x)) for k, x in exact.items()}
    rest = total - sum(result.values())
    for name in sorted(exact, key=lambda k: (-(exact[k] - result[k]), k))[:rest]:
        result[name] += 1
    return {k: v for k, v in result.items() if v}


def take_quotas(left: dict[str, int], n: int) -> dict[str, int]:
    """One request's share of ``n`` from what is ``left`` of the run's quotas (``left`` is updated), so that over
    all requests each name gets its quota of the whole count: a batch's own rounding, repeated, asked every
    one-query request for the first name by alphabet only."""
    taken = quotas(left, n)
    for name, count in taken.items():
        left[name] -= count
    return taken


# --------------------------------------------------------------------------- prompts
SQL_PROMPT_SYSTEM = ("You write {dialect} SQL queries over a database for a text-to-SQL evaluation dataset. "
                     "Write the SQL first; the natural-language questions are written later from the SQL.")
SQL_PROMPT = """Database schema (with a few sample rows per table):
{schema}

Write {n} different, creative, read-only {dialect} SQL queries that a user of this database could need
(request {batch} of {batches}). Each must run on this schema and return a small, non-empty result.
Cover this mix: {clauses}{difficulty}.
Difficulty classes (Spider): easy = at most one of WHERE/GROUP BY/ORDER BY/LIMIT/JOIN/OR/LIKE; medium = two;
hard = three, or one nested query; extra = more, or set operations with other clauses.
Think first, then answer with a JSON list only: [{{"reasoning": "...", "sql": "..."}}, ...]"""

QUESTION_PROMPT_SYSTEM = ("You write the natural-language question a user would ask to get exactly the result of "
                          "a SQL query. Do not mention SQL, tables or columns by their technical names.")
QUESTION_PROMPT = """Database schema:
{schema}

SQL to explain:
{sql}

First rows of its result: {rows}

Write the question this SQL answers{paraphrases}. Answer with JSON only:
{{"reasoning": "...", "question": "..."{paraphrase_key}}}"""

CHECK_PROMPT_SYSTEM = "You check text-to-SQL pairs: does the SQL answer exactly the question, no more and no less?"
CHECK_PROMPT = """Database schema:
{schema}

Proposed question: {question}
SQL to check:
{sql}

Does the SQL answer exactly this question? Answer with JSON only: {{"reasoning": "...", "agree": true or false}}"""


# --------------------------------------------------------------------------- model calls (client + cache)
class Model:
    """The model-in-the-loop client and response cache, counting calls and cache hits."""

    def __init__(self, name: str, url: str | None, key_env: str | None, *, timeout: float,
                 cache_dir: str | Path | None, cache_mode: str, seed: int | None = None) -> None:
        from ..model.cache import ResponseCache
        from ..model.client import ModelCallError, client_for
        from ..model.config import ModelConfig

        self.config = ModelConfig(name=name, url=url, key_env=key_env, timeout=max(timeout, 30.0), seed=seed)
        self.cache = ResponseCache(cache_dir or ".sqleval_cache", cache_mode if cache_dir else "off")
        self._error = ModelCallError
        self._client_for = client_for
        self.calls = 0
        self.cache_hits = 0

    def ask(self, system: str, user: str, *, temperature: float) -> str:
        from ..model.cache import cache_key
        from ..model.config import ModelConfig

        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        config = ModelConfig(**{**asdict(self.config), "temperature": temperature})
        parameters = config.parameters
        key = cache_key(config.endpoint, str(config.name), messages, parameters)
        cached = self.cache.get(key)
        if cached is not None and isinstance(cached.get("text"), str):
            self.cache_hits += 1
            return whole_characters(cached["text"])
        if self.cache.mode == "only":
            raise GenerateError("a request is not in the response cache (--cache-mode only)")
        try:
            completion = self._client_for(config).complete(messages, parameters)
        except self._error as exc:  # the client's fixes name pytest's options: this command's are --model...
            message = exc.message.replace("--sqleval-model", "--model").replace("--sqleval-cache", "--cache")
            raise GenerateError(f"the model call failed: {message}") from None
        self.calls += 1
        self.cache.put(key, {"endpoint": config.endpoint, "model": config.name, "messages": messages,
                             "parameters": parameters}, {"text": completion.text})
        return whole_characters(completion.text)


def whole_characters(value: Any) -> Any:
    """``value`` (text, or a JSON value's lists and objects) with each lone UTF-16 surrogate (``\\ud83d`` without its
    pair: half an emoji a model's JSON escapes cut) replaced by U+FFFD, as a decoder's ``errors="replace"`` does: no
    UTF-8 file can hold one, so the report could not be written and the suite's YAML escape of it does not load."""
    from .importers import LONE_SURROGATE

    if isinstance(value, str):
        return LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [whole_characters(item) for item in value]
    if isinstance(value, dict):
        return {whole_characters(key): whole_characters(item) for key, item in value.items()}
    return value


def parse_json_answer(text: str) -> Any:
    """The JSON in a model answer: a fenced ```json block, else the outermost [...] or {...}; None if none. Its text
    is :func:`whole_characters`: a ``\\ud800`` escape decodes to no character."""
    return whole_characters(_json_in(text))


def _json_in(text: str) -> Any:
    fenced = re.findall(r"```(?:json)?\s*\n(.*?)```", text, flags=re.DOTALL)
    candidates = [*fenced[::-1], text]
    for candidate in candidates:
        candidate = candidate.strip()
        pairs = sorted((("[", "]"), ("{", "}")), key=lambda p: (candidate.find(p[0]) == -1, candidate.find(p[0])))
        for opening, closing in pairs:  # the outermost first: whichever opens earlier
            start, end = candidate.find(opening), candidate.rfind(closing)
            if start != -1 and end > start:
                try:
                    return json.loads(candidate[start:end + 1])
                except json.JSONDecodeError:
                    continue
    # reasoning before (or after) the JSON may hold brackets of its own (`parts[qty]`, `{name}`): the longest
    # JSON value that starts at any bracket
    decoder, best, position = json.JSONDecoder(), None, 0
    while True:
        found = [i for i in (text.find("[", position), text.find("{", position)) if i != -1]
        if not found:
            return best[1] if best else None
        position = min(found)
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            position += 1
            continue
        if isinstance(value, (list, dict)) and (best is None or end - position > best[0]):
            best = (end - position, value)
        position = end


# --------------------------------------------------------------------------- the pipeline
@dataclass
class Drop:
    filter: str
    sql: str
    reason: str
    question: str | None = None


@dataclass
class Kept:
    sql: str
    result: Any
    normalised: str
    structure: tuple
    reasoning: str | None = None
    question: str | None = None
    paraphrases: list[str] = field(default_factory=list)
    difficulty: str | None = None
    tags: list[str] = field(default_factory=list)


@dataclass
class GenerationReport:
    model: str
    database: str
    suite: str
    options: dict[str, Any]
    proposed: int = 0
    answers_without_json: int = 0
    kept: list[Kept] = field(default_factory=list)
    drops: list[Drop] = field(default_factory=list)
    calls: int = 0
    cache_hits: int = 0

    def dropped(self) -> dict[str, int]:
        counts = Counter(d.filter for d in self.drops)
        return {name: counts[name] for name in FILTERS}

    def as_json(self) -> dict[str, Any]:
        from .stats import CLAUSES

        return {
            "format": FORMAT,
            "model": self.model,
            "database": self.database,
            "suite": self.suite,
            "options": self.options,
            "proposed": self.proposed,
            "answers_without_json": self.answers_without_json,
            "kept": len(self.kept),
            "cases": sum(1 + len(k.paraphrases) for k in self.kept),
            "dropped": self.dropped(),
            "drops": [asdict(d) for d in self.drops],
            "difficulty": dict(Counter(k.difficulty or "unclassified" for k in self.kept)),
            # the clause tags of the kept queries, read in the database's dialect when they were screened
            "clauses": {c: n for c, n in sorted(Counter(CLAUSE_TYPES[t] for k in self.kept for t in k.tags
                                                        if t in CLAUSE_TYPES).items(),
                                                key=lambda item: CLAUSES.index(item[0]))},  # not set order
            "model_calls": self.calls,
            "cache_hits": self.cache_hits,
        }

    def summary(self) -> str:
        lines = [f"generated {len(self.kept)} of {self.proposed} proposed queries into {self.suite} "
                 f"({sum(1 + len(k.paraphrases) for k in self.kept)} cases; {self.calls} model calls, "
                 f"{self.cache_hits} from the cache)"]
        for name, count in self.dropped().items():
            if count:
                reasons = Counter(d.reason for d in self.drops if d.filter == name).most_common(2)
                lines.append(f"  dropped {count:3d} {name}: " + "; ".join(f"{r} ({c})" for r, c in reasons))
        if self.answers_without_json:
            lines.append(f"  {self.answers_without_json} model answer(s) held no JSON list of queries")
        difficulty = Counter(k.difficulty or "unclassified" for k in self.kept)
        lines.append("  difficulty: " + ", ".join(f"{k} {v}" for k, v in sorted(difficulty.items())))
        return "\n".join(lines)


#: Keys a proposed query's SQL may come under: the prompt's, the MRO paper's prompt's, and a common variant.
SQL_KEYS = ("sql", "sql_query", "query")


def proposed_queries(answer: Any) -> list[tuple[str, Any]] | None:
    """The (SQL, reasoning) pairs of a model's JSON answer to the SQL prompt: a list of objects (the SQL under one of
    :data:`SQL_KEYS`) or of SQL texts, one such object, or either wrapped in an object holding one list
    (``{"queries": [...]}``, as a JSON-mode answer must be); an item that is neither is proposed as its JSON text (an
    ``unparsable`` drop). None when the answer holds no JSON list or object, or a list without one object or text."""
    items = answer
    if isinstance(items, dict):
        lists = [value for value in items.values() if isinstance(value, list)]
        items = lists[0] if len(lists) == 1 and not any(key in items for key in SQL_KEYS) else [items]
    if not isinstance(items, list):
        return None
    if items and not any(isinstance(item, (dict, str)) for item in items):
        return None  # `[1]` of the reasoning's prose, `[[...]]`: no list of queries
    pairs: list[tuple[str, Any]] = []
    for item in items:
        if isinstance(item, dict):
            pairs.append((str(next((item[key] for key in SQL_KEYS if item.get(key)), "")), item.get("reasoning")))
        elif isinstance(item, str):
            pairs.append((item, None))
        else:  # a number, null, a nested list among the queries: proposed, and dropped as `unparsable` naming it
            pairs.append((json.dumps(item, ensure_ascii=False), None))
    return pairs


def _open(database: str):
    from ..errors import DatabaseError
    from ..execution.backends import backend_for, remember_backend
    from ..suite import file_url

    if "://" in database:
        url = database
    else:
        path = Path(database)
        if not path.is_file():
            raise GenerateError(f"database file not found: {path}; fix: check the path (a SQLite or DuckDB file), or "
                                "give a SQLAlchemy URL such as postgresql+psycopg://user@host/db")
        url = file_url(_file_scheme(path), path.resolve())
    try:  # read-only, as the suites open it (a DuckDB file stays open to the query processes)
        backend = backend_for(url)
        return remember_backend(backend.open(url), backend)
    except DatabaseError as exc:
        raise GenerateError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - any driver problem is bad input here
        from ..secrets import mask_secrets

        raise GenerateError(mask_secrets(f"cannot open {database}: {exc}")) from None


def _file_scheme(path: Path) -> str:
    """``duckdb`` or ``sqlite``: what the file's header says (a DuckDB file named ``.db``), else its suffix's."""
    from ..database_specs import DUCKDB_SUFFIXES
    from ..suite import database_file_kind

    return database_file_kind(path) or ("duckdb" if path.suffix.lower() in DUCKDB_SUFFIXES else "sqlite")


def _database_reference(database: Path, folder: Path) -> str:
    """The suite's ``database:`` for a file: its path relative to the suite, as a ``duckdb:///`` URL when it is a
    DuckDB file whose suffix the loader would read as SQLite's (``shop.db``)."""
    from urllib.parse import quote

    from ..database_specs import DUCKDB_SUFFIXES
    from .importers import _relative

    relative = _relative(database, folder)
    if _file_scheme(database) == "duckdb" and database.suffix.lower() not in DUCKDB_SUFFIXES:
        return f"duckdb:///{quote(relative, safe='/')}"
    return relative


def _rows_key(result, ordered: bool):
    """The result as one comparable value: its width and its normalised rows (in order, or as a multiset)."""
    return _key_of(len(result.columns), _normalised_rows(result), ordered)


def _result_key(result, ordered: bool):
    """The key duplicates are compared by: the result with its columns put in one order (by their values), so that
    ``SELECT a, b`` and ``SELECT b, a`` are one result, as the paper's one-to-one column matching scores them. Two
    results with one key are the same up to the order of their columns (columns holding the same values in another
    pairing may keep two keys: a duplicate missed, never a query dropped wrongly)."""
    rows = _normalised_rows(result)
    columns = list(zip(*rows)) if rows else [() for _ in result.columns]
    keys = [repr(column) if ordered else repr(sorted(map(repr, column))) for column in columns]
    order = sorted(range(len(columns)), key=lambda index: keys[index])
    return _key_of(len(result.columns), [tuple(row[index] for index in order) for row in rows], ordered)


def _normalised_rows(result) -> list[tuple]:
    from ..metrics.normalisation import normalise_value

    return [tuple(normalise_value(v) for v in row) for row in result.rows]


def _key_of(width: int, rows: list[tuple], ordered: bool):
    return (width, tuple(rows) if ordered else tuple(sorted(Counter(map(repr, rows)).items())))


def _normalised_sql(tree, dialect: str) -> str:
    from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

    return normalize_identifiers(tree.copy(), dialect=dialect).sql(dialect=dialect, normalize=True, pretty=False)


def _statement_text(sql: str, dialect: str) -> str:
    """The SQL up to its last token: a trailing ``;`` and comments after the query (``...; -- Swiss``) are no
    part of the gold, nor of the text duplicates are compared by. Text the tokenizer refuses is kept as it is."""
    import sqlglot
    from sqlglot.errors import SqlglotError
    from sqlglot.tokens import TokenType

    try:
        tokens = sqlglot.tokenize(sql, read=dialect)
    except (SqlglotError, RecursionError, ValueError):
        return sql
    last = next((t for t in reversed(tokens) if t.token_type != TokenType.SEMICOLON), None)
    return sql[: last.end + 1] if last is not None else sql


#: Functions whose value changes from run to run (the clock; random numbers: ``goldcheck.RANDOM_FUNCTIONS``), by
#: their lower-cased name as sqlglot leaves it when it has no node class for them (an ``Anonymous`` call).
CLOCK_FUNCTIONS = frozenset({"now", "clock_timestamp", "statement_timestamp", "transaction_timestamp", "timeofday",
                             "get_current_timestamp", "get_current_time", "sysdate", "systimestamp", "getdate",
                             "utc_timestamp", "utc_date", "utc_time", "curdate", "curtime"})
#: Date functions' arguments that name the current moment: SQLite's ``date('now')``, PostgreSQL's ``'today'::date``.
CLOCK_WORDS = frozenset({"now", "today", "tomorrow", "yesterday"})


def volatile_call(tree, dialect: str | None = None) -> str | None:
    """What in the query's sqlglot tree reads the clock or draws a random number (its SQL text), else None: such a
    query can return the same rows twice in a row (the same date; two equal coin tosses) and others later."""
    from sqlglot import exp

    from ..goldcheck import draws_random, unseeded_sample

    clock = tuple(getattr(exp, name) for name in ("CurrentDate", "CurrentTime", "CurrentTimestamp",
                                                   "CurrentDatetime", "Localtime", "Localtimestamp")
                  if hasattr(exp, name))
    for node in tree.walk():
        if isinstance(node, clock):
            return f"the clock ({node.sql(dialect=dialect)})"
        if draws_random(node):
            return f"a random value ({node.sql(dialect=dialect)})"
        if unseeded_sample(node):
            return f"a random sample of rows ({node.sql(dialect=dialect)})"
        if isinstance(node, exp.Anonymous):
            name = str(node.this).lower()
            if name in CLOCK_FUNCTIONS or (name == "unixepoch" and not node.expressions):
                return f"the clock ({node.sql(dialect=dialect)})"
        if isinstance(node, exp.Literal) and node.is_string and node.this.strip().lower() in CLOCK_WORDS \
                and _temporal(node.parent):
            call = node.parent.parent if _temporal(node.parent.parent) else node.parent  # strftime('%Y', 'now')
            return f"the clock ({call.sql(dialect=dialect)})"
    return None


#: Date and time functions (sqlglot's class name, or the name of a call it has no class for) whose 'now' is today.
TEMPORAL_FUNCTIONS = frozenset({"date", "time", "datetime", "julianday", "unixepoch", "strftime", "timetostr",
                                "timestrtotime", "strtotime", "tsordstodate", "tsordstotimestamp", "timestamp"})


def _temporal(node) -> bool:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return str(node.this).lower() in TEMPORAL_FUNCTIONS
    if isinstance(node, exp.Cast):  # (TryCast too) 'today'::date, not CAST('today' AS TEXT)
        return node.to.is_type(*exp.DataType.TEMPORAL_TYPES)
    return isinstance(node, exp.Func) and type(node).__name__.lower() in TEMPORAL_FUNCTIONS


def screen(engine, candidates: Sequence[tuple[str, str | None]], *, dialect: str, max_result_rows: int,
           timeout: float, kept: list[Kept] | None = None,
           allow_functions: Sequence[str] = ()) -> tuple[list[Kept], list[Drop]]:
    """The execution filters, in order: parses as one query, runs under the guard, non-empty, at most
    ``max_result_rows`` rows, the same result twice, not a duplicate of a kept query."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from ..defaults import DEFAULT_MAX_MEMORY
    from ..errors import QueryError
    from ..execution.runner import run_query
    from ..goldcheck import _limit_value, determinism_findings
    from ..model.extract import extract_sql, looks_like_sql
    from .stats import query_facts

    kept = list(kept or [])
    drops: list[Drop] = []
    allow = frozenset(str(name).strip().lower() for name in allow_functions)
    for sql, reasoning in candidates:
        sql = (sql or "").strip()
        if sql and not looks_like_sql(sql):  # a fence or prose around the query: read it out as a prediction's
            found = extract_sql(sql)
            if found.sql is None:
                drops.append(Drop("unparsable", sql, found.message or "no SQL"))
                continue
            sql = found.sql
        sql = _statement_text(sql.rstrip(";").strip(), dialect)
        try:
            trees = [t for t in sqlglot.parse(sql, read=dialect)
                     if t is not None and not isinstance(t, sqlglot.exp.Semicolon)] if sql else []
        except (SqlglotError, RecursionError) as exc:
            drops.append(Drop("unparsable", sql, f"sqlglot cannot parse it: {str(exc).splitlines()[0][:120]}"))
            continue
        if len(trees) != 1:
            drops.append(Drop("unparsable", sql, f"{len(trees)} statements, not one query" if trees else "no SQL"))
            continue
        tree = trees[0]
        try:
            first = run_query(engine, sql, timeout=timeout, max_rows=max_result_rows, untrusted=True, dialect=dialect,
                              allow_functions=allow)
        except QueryError as exc:
            if exc.kind == "row_limit":
                drops.append(Drop("too_many_rows", sql, f"more than {max_result_rows} rows"))
            elif exc.kind == "timeout":  # the query error's hint names pytest's option, not this command's
                drops.append(Drop("does_not_run", sql, f"timeout: ran past {timeout:g} s (raise it with --timeout)"))
            elif exc.kind == "memory":  # its hint names pytest's option and a suite's `max_memory:`: none here
                drops.append(Drop("does_not_run", sql, f"memory: its result needs more than the "
                                                       f"{DEFAULT_MAX_MEMORY // 2**20} MiB a query may use (a question "
                                                       "whose answer is that large makes no benchmark case)"))
            elif exc.function:  # its hint names a suite's `allow_functions:`: this command has its own option
                drops.append(Drop("does_not_run", sql, f"rejected: calls {exc.function}(), which is not on the {dialect} "
                                                       "allowlist of pure functions; if it is a pure function of your "
                                                       f"database, allow it with --allow-function {exc.function}"))
            else:
                drops.append(Drop("does_not_run", sql, f"{exc.kind}: {str(exc).split(': ', 1)[-1][:160]}"))
            continue
        if not first.rows:
            drops.append(Drop("empty_result", sql, "no rows"))
            continue
        if all(value is None for row in first.rows for value in row):  # (MAX over no rows): as vacuous as no rows
            drops.append(Drop("empty_result", sql, "only NULLs"))
            continue
        ordered = isinstance(tree, exp.Select) and tree.args.get("order") is not None
        try:
            second = run_query(engine, sql, timeout=timeout, max_rows=max_result_rows, untrusted=True, dialect=dialect,
                               allow_functions=allow)
        except QueryError as exc:
            drops.append(Drop("nondeterministic", sql, f"the second run failed: {exc.kind}"))
            continue
        result_key = _rows_key(first, ordered)
        if _rows_key(second, ordered) != result_key:
            drops.append(Drop("nondeterministic", sql, "two runs returned different results"))
            continue
        volatile = volatile_call(tree, dialect)  # two runs a moment apart agree on today's date, often on a coin toss too
        if volatile is not None:
            drops.append(Drop("nondeterministic", sql, f"its result depends on {volatile}"))
            continue
        # rows one engine happens to return first: LIMIT without ORDER BY (that cut some rows off: `SELECT
        # count(*) ... LIMIT 1` cuts none), or a tie at the LIMIT's cut
        limit = _limit_value(tree)
        unsure = next((f for f in determinism_findings(sql, first, engine, dialect=dialect, timeout=timeout,
                                                       max_rows=max_result_rows + 1, untrusted=True)
                       if f.kind in ("ties_at_limit", "unstable") or (f.kind == "limit_without_order" and _cuts_rows(
                           engine, tree, limit, len(first.rows), dialect=dialect, timeout=timeout,
                           allow_functions=allow))), None)
        if unsure is not None:
            drops.append(Drop("nondeterministic", sql, unsure.message))
            continue
        normalised = _normalised_sql(tree, dialect)
        facts = query_facts(sql, dialect)
        structure = (tuple(sorted(facts.clauses)), facts.joins, tuple(sorted(facts.table_names)))
        same_text = next((k for k in kept if k.normalised == normalised), None)
        if same_text is not None:
            drops.append(Drop("duplicate", sql, f"the same normalised SQL as a kept query: {same_text.sql[:120]}"))
            continue
        columns_key = _result_key(first, ordered)  # once: compared with every kept query's
        same_result = next((k for k in kept if k.result == columns_key and k.structure == structure), None)
        if same_result is not None:
            drops.append(Drop("duplicate", sql, f"the same result and structure as a kept query: {same_result.sql[:120]}"))
            continue
        kept.append(Kept(sql, columns_key, normalised, structure, reasoning=reasoning,
                         tags=sorted(name for name, clause in CLAUSE_TYPES.items() if clause in facts.clauses)))
        kept[-1].rows_preview = first.rows[:3]  # type: ignore[attr-defined]
    return kept, drops


def _cuts_rows(engine, tree, limit: int | None, returned: int, *, dialect: str, timeout: float,
               allow_functions: frozenset[str] = frozenset()) -> bool:
    """Does the query's LIMIT leave rows out (so which ones come back matters)? Not when fewer rows came back, nor
    when the query with LIMIT ``limit + 1`` returns no more; an unreadable LIMIT (``LIMIT ?``) is taken to cut."""
    from ..errors import QueryError
    from ..execution.runner import run_query

    if limit is None:
        return True
    if returned < limit:
        return False
    try:
        wider = run_query(engine, tree.copy().limit(limit + 1).sql(dialect=dialect), timeout=timeout,
                          max_rows=limit + 1, untrusted=True, dialect=dialect, allow_functions=allow_functions)
    except QueryError:
        return True
    return len(wider.rows) > limit


def generate_suite(database: str, output: str | Path, *, options: GenerateOptions, model: str,
                   url: str | None = None, key_env: str | None = None, cache_dir: str | Path | None = ".sqleval_cache",
                   cache_mode: str = "use", report_path: str | Path | None = None) -> GenerationReport:
    """Run the pipeline, write the suite and its report (``<output stem>.report.json`` by default)."""
    from ..execution.backends import read_schema
    from ..execution.runner import sqlglot_dialect
    from ..loader import _stem
    from ..metrics.hardness import difficulty_label
    from ..model.schema_text import render_schema, sample_rows, tables_from_engine
    from ..secrets import expand_env, mask_url, register_url_secrets
    from .importers import dump_yaml

    output = Path(output)
    for path, option, example in ((output, "-o", "generated.sqleval.yaml"),
                                  (_report_path(output, report_path), "--report", "generated.report.json")):
        if path.is_dir():  # found before any model call, not when the files are written at the end
            raise GenerateError(f"{option} {path} is a folder: name the file, e.g. {path / example}")
    if not output.name.lower().endswith((".yaml", ".yml")):  # pytest --sqleval reads no other file as a suite
        raise GenerateError(f"-o {output}: a suite is a YAML file that pytest --sqleval collects; fix: name it "
                            f"{output.with_name(output.name + '.sqleval.yaml')}")
    _refuse_report_as_suite(output, _report_path(output, report_path))
    given = database  # written to the suite as given: a ${VAR} stays one, expanded when the suite runs
    database = expand_env(database, lambda name: os.environ.get(name),
                          lambda name: GenerateError(f"environment variable {name} is not set (in {given})"))
    register_url_secrets(database)
    shown = mask_url(database)  # messages, the report and the description never show a password
    engine = _open(database)
    try:
        dialect = sqlglot_dialect(engine.dialect.name)
        try:
            tables = tables_from_engine(engine)
        except Exception as exc:  # noqa: BLE001
            raise GenerateError(f"cannot read the schema of {shown}: {exc}") from None
        if not tables:
            raise GenerateError(f"{shown} has no tables (views are not read); fix: give the database that holds "
                                "your tables and their rows")
        rows = sample_rows(engine, tables, options.sample_rows, dialect=dialect, timeout=options.timeout)
        schema_text = render_schema(tables, "ddl", dialect=dialect, rows=rows)
        plain_schema = render_schema(tables, "ddl", dialect=dialect)
        llm = Model(model, url, key_env, timeout=options.timeout, cache_dir=cache_dir, cache_mode=cache_mode,
                    seed=options.seed)
        name = _stem(output) or "generated"  # the loader's default name for the file
        report = GenerationReport(model, shown, str(output), {k: v for k, v in asdict(options).items()})

        # 1-2: SQL first, then the execution filters
        clause_mix = {k: v for k, v in options.mix.items() if k in CLAUSE_TYPES}
        level_mix = {k: v for k, v in options.mix.items() if k in DIFFICULTY_CLASSES}
        batches = max(1, math.ceil(options.count / options.batch))
        clauses_left, levels_left = quotas(clause_mix, options.count), quotas(level_mix, options.count)
        kept: list[Kept] = []
        for number in range(batches):
            n = min(options.batch, options.count - number * options.batch)
            clauses = take_quotas(clauses_left, n)
            levels = take_quotas(levels_left, n)
            prompt = SQL_PROMPT.format(
                schema=schema_text, n=n, dialect=dialect, batch=number + 1, batches=batches,
                clauses=", ".join(f"{c} using {CLAUSE_TYPES[k]}" for k, c in clauses.items()) or "any clauses",
                difficulty=("; difficulty: " + ", ".join(f"{c} {k}" for k, c in levels.items())) if levels else "")
            answer = llm.ask(SQL_PROMPT_SYSTEM.format(dialect=dialect), prompt, temperature=options.temperature)
            candidates = proposed_queries(parse_json_answer(answer))
            if candidates is None:
                report.answers_without_json += 1
                continue
            report.proposed += len(candidates)
            kept, drops = screen(engine, candidates, dialect=dialect, max_result_rows=options.max_result_rows,
                                 timeout=options.timeout, kept=kept, allow_functions=options.allow_functions)
            report.drops.extend(drops)

        # 3: a question (and paraphrases) per kept SQL
        with_questions: list[Kept] = []
        for item in kept:
            preview = json.dumps([list(r) for r in getattr(item, "rows_preview", [])], default=str, ensure_ascii=False)
            paraphrases = (f", then {options.paraphrases} paraphrase(s) of it with the same meaning"
                           if options.paraphrases else "")
            answer = llm.ask(QUESTION_PROMPT_SYSTEM, QUESTION_PROMPT.format(
                schema=plain_schema, sql=item.sql, rows=preview[:600], paraphrases=paraphrases,
                paraphrase_key=', "paraphrases": ["..."]' if options.paraphrases else ""), temperature=0.0)
            data = parse_json_answer(answer)
            question = _answer_key(data, "question") if isinstance(data, dict) else (_plain_question(answer) if data is None else None)
            if not isinstance(question, str) or not question.strip() or len(question) > 1000:
                report.drops.append(Drop("no_question", item.sql, "the model gave no question"))
                continue
            item.question = " ".join(question.split())
            paraphrases = _answer_key(data, "paraphrases") if isinstance(data, dict) else None
            if options.paraphrases and isinstance(paraphrases, list):
                seen = {item.question.casefold()}  # a paraphrase repeating the question or another is no new case
                for text in (" ".join(p.split()) for p in paraphrases if isinstance(p, str) and p.strip()):
                    if text.casefold() not in seen and len(item.paraphrases) < options.paraphrases:
                        seen.add(text.casefold())
                        item.paraphrases.append(text)
            with_questions.append(item)

        # 4: optional agreement check
        final: list[Kept] = []
        for item in with_questions:
            if options.check:
                answer = llm.ask(CHECK_PROMPT_SYSTEM, CHECK_PROMPT.format(schema=plain_schema, question=item.question,
                                                                         sql=item.sql), temperature=0.0)
                verdict = _agreement(answer)
                if verdict is not True:
                    reason = "the model says question and SQL disagree" if verdict is False else \
                        "the model's check answer has no verdict"
                    report.drops.append(Drop("disagreement", item.sql, reason, item.question))
                    continue
            final.append(item)

        schema = read_schema(engine)
        for item in final:
            item.difficulty, _ = difficulty_label(item.sql, schema, dialect=dialect)
        report.kept = final
        report.calls, report.cache_hits = llm.calls, llm.cache_hits
    finally:
        engine.dispose()
    if not report.kept:
        _write_report(report, output, report_path)
        unread = (f"; {report.answers_without_json} of the model's {batches} answer(s) to the SQL prompt held no "
                  f"JSON list of queries" if report.answers_without_json else "")
        raise GenerateError(f"no query survived the filters ({report.proposed} proposed): see the report "
                            f"{_report_path(output, report_path)}{unread}")
    document = _suite_document(name, given if "://" in database else database, output, report)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(dump_yaml(document), encoding="utf-8")
    _write_report(report, output, report_path)
    return report


def _answer_key(data: dict, name: str) -> Any:
    """The model's JSON answer's ``name`` key (``question``, ``agree``, ``paraphrases``), also written capitalised
    (``"Question"``) as some models write their keys."""
    if name in data:
        return data[name]
    return next((value for key, value in data.items() if isinstance(key, str) and key.strip().lower() == name), None)


def _plain_question(answer: str) -> str | None:
    """The question of an answer that is not JSON: the text after its last ``Question:`` label, else the answer
    if it is one line (several lines without a label are reasoning and question mixed: no question)."""
    # the label's own emphasis (`**Question:**`, `**Question**:`) is no part of the question
    labelled = re.findall(r"^\W*?([*_]*)question\1?[^\w\n]*?:\s*\1?\s*(.+)$", answer, flags=re.IGNORECASE | re.MULTILINE)
    if labelled:
        return _unquoted(labelled[-1][1])
    lines = [line for line in answer.strip().splitlines() if line.strip()]
    return _unquoted(lines[0]) if len(lines) == 1 else None


#: Quotation marks a model puts around a one-line answer, in several languages.
QUOTES = (('"', '"'), ("'", "'"), ("\u201c", "\u201d"), ("\u00ab", "\u00bb"), ("\u300c", "\u300d"))


def _unquoted(text: str) -> str:
    """The text without markdown emphasis and one pair of quotation marks around it (`**"Which parts?"**`); a
    quotation mark inside (`"Hamlet" is by whom?`) is the question's."""
    text = _without_emphasis(text.strip())
    for opening, closing in QUOTES:
        if len(text) >= 2 and text.startswith(opening) and text.endswith(closing) \
                and opening not in text[1:-1] and closing not in text[1:-1]:
            return text[1:-1].strip()
    return text


def _without_emphasis(text: str) -> str:
    """The text without the markdown emphasis around all of it (`**...**`, `*...*`, `__...__`): a mark that opens or
    closes a word inside (`*Which* parts?`, `__init__ files?`) is the question's."""
    changed = True
    while changed:
        changed = False
        for mark in ("**", "__", "*", "_"):
            inner = text[len(mark):-len(mark)]
            if len(text) > 2 * len(mark) and text.startswith(mark) and text.endswith(mark) and mark not in inner:
                text, changed = inner.strip(), True
                break
    return text


def _agreement(answer: str) -> bool | None:
    data = parse_json_answer(answer)
    agree = _answer_key(data, "agree") if isinstance(data, dict) else None  # `"Agree": true` too
    if isinstance(agree, bool):
        return agree
    if isinstance(agree, str):  # `"agree": "yes"`, `"agree": "false"`, `"agree": "No, it counts every part."`
        word = re.match(r"\W*(yes|no|true|false)\b", agree, flags=re.IGNORECASE)
        return None if word is None else word.group(1).lower() in ("yes", "true")
    # the first word, past markdown (`**Yes**`): "Not sure" or "Nothing ..." is no "no"
    word = re.match(r"\W*(yes|no)\b", answer, flags=re.IGNORECASE)
    return None if word is None else word.group(1).lower() == "yes"


def _file_url_from(url: str, folder: Path) -> str:
    """A ``sqlite:///`` or ``duckdb:///`` URL with a relative file path (opened from the working directory) as the
    suite in ``folder`` must write it: the loader reads that path relative to the suite file. Any other URL, and
    one with a ``${VAR}`` (expanded when the suite runs), as given."""
    from urllib.parse import quote, unquote

    if not url.startswith(("sqlite:///", "duckdb:///")) or "${" in url:
        return url
    prefix, rest = url.split(":///", 1)
    file_part, separator, query = rest.partition("?")
    path = Path(unquote(file_part))
    if not file_part or file_part == ":memory:" or file_part.startswith("file:") or path.is_absolute():
        return url
    from .importers import _relative

    return f"{prefix}:///{quote(_relative(path, folder), safe='/')}{separator}{query}"


def _report_path(output: Path, report_path: str | Path | None) -> Path:
    if report_path:
        return Path(report_path)
    base = output.name
    for suffix in (".sqleval.yaml", ".sqleval.yml", ".yaml", ".yml"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return output.with_name(base + ".report.json")


def _refuse_report_as_suite(output: Path, report: Path) -> None:
    """``--report`` naming the suite's own file (the JSON report written over the suite), or a ``*.sqleval.yaml``
    that ``pytest --sqleval DIR`` would collect as a suite and fail on: refused before any model call."""
    from ..suite_files import SUITE_SUFFIXES

    default = _report_path(output, None)
    if report.resolve() == output.resolve():
        raise GenerateError(f"--report {report} is the suite's own file (-o): the report would be written over the "
                            f"suite; fix: name another file, e.g. {default}")
    if report.name.lower().endswith(SUITE_SUFFIXES):
        raise GenerateError(f"--report {report}: the report is JSON, and pytest --sqleval collects a file named "
                            f"*{report.name[report.name.lower().rindex('.sqleval.'):]} as a suite; fix: name it "
                            f"{report.name[:report.name.lower().rindex('.sqleval.')]}.report.json")


def _write_report(report: GenerationReport, output: Path, report_path) -> None:
    path = _report_path(output, report_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.as_json(), indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")


def _suite_document(name: str, database: str, output: Path, report: GenerationReport) -> dict[str, Any]:
    db_ref = _file_url_from(database, output.parent) if "://" in database else _database_reference(Path(database),
                                                                                                  output.parent)
    cases = []
    for number, item in enumerate(report.kept, start=1):
        base = {"gold": item.sql}
        if item.difficulty:
            base["difficulty"] = item.difficulty
        if item.tags:
            base["tags"] = item.tags
        cases.append({"id": f"g{number:03d}", "question": item.question, **base})
        for p_number, paraphrase in enumerate(item.paraphrases, start=1):
            cases.append({"id": f"g{number:03d}-p{p_number}", "question": paraphrase, **base})
    return {
        "suite": name,
        "description": f"Generated SQL-first by `sqleval generate` with {report.model} from {report.database}: "
                       f"{len(report.kept)} of {report.proposed} proposed queries kept (see the generation report).",
        "database": db_ref,
        "cases": cases,
    }
