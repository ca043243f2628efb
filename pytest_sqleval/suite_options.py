"""The suite's options, each checked with a message naming its line and the fix.

How results are compared (``execution:``, resolved through the session's execution profiles),
``exact_match:``, ``pass_if``, ``thresholds:``, the SQL ``dialect:``, the limits (``timeout:``,
``max_rows:``, ``max_memory:``, ``connect_timeout:``), ``allow_functions:``, ``policy:``, ``difficulty:``,
``efficiency:`` and ``predictions:``. Cases and databases are read elsewhere
(:mod:`pytest_sqleval.loader`, :mod:`pytest_sqleval.database_specs`).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from .comparison import ComparisonOptions, OptionError, locate_problem, resolve_execution
from .load_context import LoadContext, check_keys, yaml_type
from .passrule import DEFAULT_PASS_RULE_TEXT, PassRuleError, parse_pass_rule
from .thresholds import ThresholdError, make_threshold
from .yaml_lines import LineMapping

DIFFICULTY_CLASSIFIERS = ("spider", "sqleval")

_FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?")


def read_suite_options(ctx: LoadContext, data: LineMapping,
                       profiles: Mapping[str, ComparisonOptions] | None = None) -> dict[str, Any]:
    """The suite's options as :class:`~pytest_sqleval.suite.Suite` fields, plus ``policy`` (every case's default).

    ``profiles`` is the table ``execution:`` names a profile of (default: the session's, see
    :func:`pytest_sqleval.comparison.active_profiles`). The options are checked in the order a user reads
    them, so the first problem of the file is the one reported.
    """
    lines = data.key_lines
    dialect = _dialect(ctx, data.get("dialect"), lines.get("dialect"))
    execution = _execution(ctx, data.get("execution"), lines.get("execution"), profiles)
    exact_match = _exact_match(ctx, data.get("exact_match"), lines.get("exact_match"))
    pass_if = _pass_if(ctx, data.get("pass_if", DEFAULT_PASS_RULE_TEXT), lines.get("pass_if"))
    _check_clause_profile(ctx, pass_if, exact_match, lines.get("pass_if"))
    policy = read_policy(ctx, data["policy"], lines["policy"]) if "policy" in data else None
    thresholds = _thresholds(ctx, data.get("thresholds"), lines.get("thresholds"))
    classifier = data.get("difficulty", "spider")
    if classifier not in DIFFICULTY_CLASSIFIERS:
        raise ctx.error(f"unknown difficulty classifier {classifier!r}", lines.get("difficulty"),
                        fix=f"use one of: {', '.join(DIFFICULTY_CLASSIFIERS)} (per-case labels go under each case)")
    timeout = _positive_number(ctx, data, "timeout")
    max_rows = _positive_number(ctx, data, "max_rows", integer=True)
    allow_functions = _allow_functions(ctx, data.get("allow_functions"), lines.get("allow_functions"))
    max_memory = _positive_number(ctx, data, "max_memory", size=True)
    connect_timeout = _positive_number(ctx, data, "connect_timeout")
    efficiency = data.get("efficiency", False)
    if not isinstance(efficiency, bool):
        raise ctx.error(f"efficiency must be true or false, not {efficiency!r}", lines.get("efficiency"),
                        fix="write `efficiency: true` to time queries for R-VES (r_ves), or leave the key out")
    return dict(
        execution=execution, pass_if=pass_if, exact_match=exact_match, exact_match_requested="exact_match" in data,
        dialect=dialect, difficulty_classifier=classifier, thresholds=thresholds, timeout=timeout,
        max_rows=max_rows, allow_functions=allow_functions, max_memory=max_memory,
        connect_timeout=connect_timeout, efficiency=efficiency, predictions_file=_predictions_file(ctx, data),
        policy=policy,
    )


def _predictions_file(ctx: LoadContext, data: LineMapping):
    """`predictions:` a JSON Lines file beside the suite (None when the suite has none)."""
    if data.get("predictions") is None:
        return None
    value, line = data["predictions"], data.key_lines.get("predictions")
    if not isinstance(value, str):
        raise ctx.error(f"`predictions:` is the path of a JSON Lines file, not {yaml_type(value)}", line,
                        fix="write e.g. `predictions: preds.jsonl` (relative to the suite file)")
    if not value.strip():
        raise ctx.error("`predictions:` is empty", line,
                        fix="write e.g. `predictions: preds.jsonl` (relative to the suite file), or leave the key out")
    from .database_specs import expand_env

    # `" preds.jsonl"`: without the white space around it, and with `${VAR}` expanded, as `database:` paths
    path = ctx.resolve(expand_env(ctx, value.strip(), line))
    if path.is_dir():
        raise ctx.error(f"the predictions path is a directory, not a file: {path}", line,
                        fix="name the JSON Lines file inside it, e.g. `predictions: preds/model.jsonl`")
    if not path.is_file():
        raise ctx.error(f"predictions file not found: {path}", data.key_lines.get("predictions"),
                        fix="give a JSON Lines file path relative to the suite file")
    return path


def _allow_functions(ctx: LoadContext, value: Any, line: int | None) -> tuple[str, ...]:
    """`allow_functions: [my_udf, analytics.score]`: the user's own functions predictions may call."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ctx.error("`allow_functions:` must be a list of function names", line,
                        fix="write for example `allow_functions: [my_udf, analytics.score]`")
    names = []
    for item in value:
        if not isinstance(item, str) or not _FUNCTION_NAME.fullmatch(item.strip()):
            raise ctx.error(f"`allow_functions:` entry {item!r} is not a function name", line,
                            fix="give plain names such as `my_udf` or `schema.my_udf`, without parentheses")
        names.append(item.strip())
    return tuple(names)


def read_policy(ctx: LoadContext, value: Any, line: int):
    """A suite's or a case's `policy:` (the SQL a prediction may touch), as a Policy."""
    from .policy import POLICY_KEYS, Policy, PolicyError

    example = 'write e.g. `policy: {tables: [tickets, shops], forbid_columns: [ssn], require_filter: "tenant_id = 42"}`'
    if isinstance(value, dict):
        check_keys(ctx, value, POLICY_KEYS, "policy")
    try:
        return Policy.from_mapping(value)
    except PolicyError as exc:
        raise ctx.error(f"bad policy: {exc}", line, fix=example) from None


def _check_clause_profile(ctx: LoadContext, pass_if, exact_match, line: int | None) -> None:
    """`exact_match(limit)` under the spider profile, which has no such clause."""
    from .metrics.exact_match.verdict import SPIDER_CLAUSES

    if getattr(exact_match, "profile", "sqleval") != "spider":
        return
    extra = sorted(pass_if.clauses - set(SPIDER_CLAUSES))
    if extra:
        raise ctx.error(f"bad pass_if: the spider exact-match profile has no clause {extra[0]!r}", line,
                        fix=f"use the spider clauses ({', '.join(SPIDER_CLAUSES)}) or `exact_match: sqleval`")


def _dialect(ctx: LoadContext, value: Any, line: int | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and not value.strip():  # sqlglot reads "" as its generic dialect: not what was meant
        raise ctx.error("`dialect:` is empty", line,
                        fix="write a sqlglot dialect name such as sqlite, duckdb, postgres, mysql, bigquery, snowflake, "
                            "or leave the key out (the default is taken from the database)")
    from sqlglot.dialects.dialect import Dialect

    try:
        Dialect.get_or_raise(str(value))
    except ValueError:
        raise ctx.error(f"unknown sqlglot dialect {value!r}", line,
                        fix="use a sqlglot dialect name such as sqlite, duckdb, postgres, mysql, bigquery, snowflake") from None
    return str(value)


def _execution(ctx: LoadContext, value: Any, line: int | None,
               profiles: Mapping[str, ComparisonOptions] | None) -> ComparisonOptions:
    """`execution: NAME` or `{profile: NAME, <option>: value}`, NAME a profile of the table (the error lists them)."""
    if value is not None and not isinstance(value, (str, dict)):
        raise ctx.error("`execution:` is a profile name or a mapping", line,
                        fix="write `execution: bird` or `execution: {profile: bird, duplicates: bag}`")
    try:
        return resolve_execution(value, profiles)
    except OptionError as exc:
        key, fix = locate_problem(value, profiles)
        if key is not None and isinstance(value, LineMapping):
            line = value.key_lines.get(key, line)
        raise ctx.error(str(exc), line, fix=fix) from None


def _exact_match(ctx: LoadContext, value: Any, line: int | None):
    from .metrics.exact_match import resolve_exact_match

    if value is not None and not isinstance(value, (str, dict)):
        raise ctx.error("`exact_match:` is a profile name or a mapping", line,
                        fix="write `exact_match: spider` or `exact_match: {profile: sqleval, values: ignore}`")
    try:
        return resolve_exact_match(value)
    except ValueError as exc:
        fix = "use a profile and option the message lists; see the exact-match profiles in the README"
        misspelt = _misspelt_exact_match_key(value)
        if misspelt is not None:
            key, close = misspelt
            written = str(value[key]).lower() if isinstance(value[key], bool) else value[key]
            fix = f"write `{close}: {written}` ({fix})"
            if isinstance(value, LineMapping):
                line = value.key_lines.get(key, line)
        raise ctx.error(str(exc), line, fix=fix) from None


def _misspelt_exact_match_key(value: Any) -> tuple[Any, str] | None:
    """``(key, closest valid key)`` for a key of an `exact_match:` mapping that is no key of any profile
    (``profil:``, ``Values:``), else None."""
    from difflib import get_close_matches

    from .metrics.exact_match.options import KEY_NAMES, profile_keys

    if not isinstance(value, dict):
        return None
    valid = profile_keys(value.get("profile", "sqleval")) or KEY_NAMES  # the named profile's own keys, if it exists
    for key in value:
        if key not in KEY_NAMES:
            close = get_close_matches(str(key).lower(), valid, n=1)
            if close:
                return key, close[0]
    return None


def _pass_if(ctx: LoadContext, value: Any, line: int | None):
    if value is not None and not isinstance(value, str):
        raise ctx.error(f"`pass_if:` is a rule written as text, not {yaml_type(value)}", line,
                        fix="write e.g. `pass_if: execution_match` or `pass_if: \"soft_f1 >= 0.8\"`")
    try:
        return parse_pass_rule("" if value is None else str(value))  # `pass_if:` with nothing after it: empty
    except PassRuleError as exc:
        raise ctx.error(f"bad pass_if: {exc}", line,
                        fix="write e.g. `pass_if: execution_match`, `pass_if: soft_f1 >= 0.8`, "
                            "`pass_if: execution_match and policy` or `pass_if: exact_match(select, where)`") from None


def _flattened(prefix: str, value: Any):
    """``(dotted path, value)`` of each leaf of a nested mapping (a threshold written as nesting)."""
    if not isinstance(value, dict) or not value:
        yield prefix, value
        return
    for key, inner in value.items():
        yield from _flattened(f"{prefix}.{key}", inner)


def _thresholds(ctx: LoadContext, value: Any, line: int | None) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ctx.error("`thresholds:` must be a mapping of metric: value", line,
                        fix="write e.g. `thresholds: {execution_accuracy: 0.6}`")
    thresholds: dict[str, float] = {}
    for metric, bound in value.items():
        metric_line = value.key_lines.get(metric, line)
        if isinstance(bound, dict):  # `by_difficulty: {hard: {execution_accuracy: 0.5}}`: a path written as nesting
            paths = list(_flattened(str(metric), bound))
            fix = ("write the path with dots: " + ", ".join(f"`{path}: {number}`" for path, number in paths[:3])
                   if str(metric) in ("by_difficulty", "by_tag", "by_gold_sql")
                   else f"write `{metric}: {paths[0][1]}` (rates are minimums, error_count and vacuous maximums)")
            raise ctx.error(f"threshold {metric!r} is a nested mapping; a threshold is one `metric: number` line",
                            metric_line, fix=fix)
        try:
            thresholds[str(metric)] = make_threshold(str(metric), bound, "suite").value
        except ThresholdError as exc:
            raise ctx.error(str(exc), metric_line,
                            fix=exc.fix or "write `metric: number`, e.g. `execution_accuracy: 0.6` (a rate, from 0 "
                                           "to 1) or `error_count: 5` (a count); the metrics are in the README's "
                                           "Metrics table") from None
        if isinstance(bound, str):  # `"0.8"`, or YAML 1.1's `8e-1`: text, as a timeout's would be refused
            raise ctx.error(f"threshold for {metric} must be a number, not the text {bound!r}", metric_line,
                            fix=_number_written_as_text(str(metric), bound))
    return thresholds


def _number_written_as_text(key: str, text: str) -> str:
    """The fix for a number YAML read as text: the number written out (`1e6`, which YAML 1.1 reads as text, or a
    quoted number)."""
    number = float(text)
    if re.fullmatch(r"[+]?\d+(\.\d*)?[eE][+-]?\d+", text.strip()):
        return f"YAML reads {text} as text, not a number: write `{key}: {int(number) if number.is_integer() else number}`"
    return f"write `{key}: {text.strip()}` without the quotes"


def _positive_number(ctx: LoadContext, data: Mapping, key: str, *, integer: bool = False,
                     size: bool = False) -> float | int | None:
    """A suite's `timeout:`/`connect_timeout:` (seconds), `max_rows:` (count) or `max_memory:` (size), range-checked."""
    from .settings import check_count, check_seconds, parse_size

    if key not in data or data[key] is None:
        return None
    value = data[key]
    try:
        if size:
            return parse_size(value, f"`{key}:`")
        if integer:
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"`{key}:` must be a whole number, not {value!r}")
            return check_count(value, f"`{key}:`")
        if isinstance(value, str) or isinstance(value, bool):
            raise ValueError(f"`{key}:` must be a number of seconds, not {value!r}")
        return check_seconds(value, f"`{key}:`")
    except ValueError as exc:
        fixes = {"max_memory": "write e.g. `max_memory: 2GiB` (or 512MB, or a number of bytes)",
                 "max_rows": "write e.g. `max_rows: 100000`"}
        fix = fixes.get(key, f"write e.g. `{key}: 30` (seconds)")
        if isinstance(value, str) and re.fullmatch(r"[+]?\d+(\.\d*)?[eE][+-]?\d+", value.strip()):
            number = float(value)  # YAML 1.1 reads `1e6` (no dot) as text: say so, and write the number out
            fix = f"YAML reads {value} as text, not a number: write `{key}: {int(number) if number.is_integer() else number}`"
        raise ctx.error(str(exc), data.key_lines.get(key), fix=fix) from None
