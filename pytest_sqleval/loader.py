"""Load a ``*.sqleval.yaml`` file into the suite model.

Every problem is a :class:`~pytest_sqleval.errors.SuiteError` that names the
file, the line and the fix. Nothing is executed here; database files and
setup scripts are only checked for existence.
"""

from __future__ import annotations

import difflib
import glob
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from .errors import SuiteError
from .gate import ThresholdError, make_threshold
from .metrics.profiles import OptionError, resolve_execution
from .passrule import DEFAULT_PASS_RULE_TEXT, PassRuleError, parse_pass_rule
from .suite import Case, DatabaseSpec, SchemaSource, Suite

SUITE_KEYS = (
    "suite", "description", "database", "databases", "schema", "dialect", "execution", "exact_match",
    "difficulty", "pass_if", "thresholds", "timeout", "max_rows", "max_memory", "connect_timeout", "predictions",
    "cases", "policy", "allow_functions", "efficiency",
    "model", "prompt", "schema_format", "sample_rows", "history", "examples", "extract",  # the model in the loop
)
CASE_KEYS = (
    "id", "question", "gold", "predicted", "database", "databases", "schema", "difficulty", "tags",
    "interaction", "notes", "metadata", "expected", "expect_columns", "expect_rows", "policy", "evidence",
)
TURN_KEYS = ("question", "gold", "predicted", "notes", "metadata", "expected", "expect_columns", "expect_rows", "policy",
             "evidence")
EXPECTED_KEYS = ("columns", "rows", "ordered")
DATABASE_KEYS = ("url", "setup")
SCHEMA_KEYS = ("tables", "db_id")
DIFFICULTY_CLASSIFIERS = ("spider", "sqleval")
DUCKDB_SUFFIXES = (".duckdb", ".ddb")
SERVER_URL_EXAMPLE = "postgresql+psycopg://user:${PGPASSWORD}@localhost/db"

_ENV_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


# --------------------------------------------------------------------------- YAML with line numbers
class _Mapping(dict):
    line: int = 0
    key_lines: dict[str, int]


class _Sequence(list):
    line: int = 0
    item_lines: list[int]


class _LineLoader(yaml.SafeLoader):
    """A safe loader whose mappings and lists remember their line numbers."""


class _CLineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """The same on libyaml's parser (about 10x faster on large suites), when PyYAML has it."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _Mapping:
    loader.flatten_mapping(node)
    mapping = _Mapping()
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            kind = "list" if isinstance(key, list) else "mapping" if isinstance(key, dict) else type(key).__name__
            shown = f"{key!r}" if isinstance(key, (int, float, bool, type(None))) else f"a {kind}"
            raise SuiteError(
                f"a mapping key must be text, not {shown}",
                line=key_node.start_mark.line + 1,
                fix="quote the key (`\"1\": ...`, `\"yes\": ...`); YAML reads 1, yes, no, null and [..] as other types",
            )
        if key in mapping:
            raise SuiteError(
                f"duplicate key {key!r} (first on line {mapping.key_lines[key]})",
                line=key_node.start_mark.line + 1,
                fix="keep one of them; YAML would silently drop the first",
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.key_lines[key] = key_node.start_mark.line + 1
    return mapping


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> _Sequence:
    seq = _Sequence(loader.construct_object(child, deep=True) for child in node.value)
    seq.line = node.start_mark.line + 1
    seq.item_lines = [child.start_mark.line + 1 for child in node.value]
    return seq


for _loader in (_LineLoader, _CLineLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def _line_loader() -> type:
    """libyaml's loader, unless its compiled module holds node classes of an earlier import of ``yaml`` (a
    process that reloaded PyYAML, e.g. pytester's in-process runs): it would then build nodes no constructor knows."""
    try:
        from yaml import _yaml

        if _yaml.MappingNode is yaml.nodes.MappingNode and _yaml.ScalarNode is yaml.nodes.ScalarNode:
            return _CLineLoader
    except (ImportError, AttributeError):
        pass
    return _LineLoader


def read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"cannot read the suite: {exc.strerror}", path=path) from None
    except UnicodeDecodeError as exc:
        raise SuiteError(f"the file is not UTF-8 ({exc.reason} at byte {exc.start})", path=path,
                         fix="save the suite as UTF-8") from None
    try:
        loader = _line_loader()(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_alias_expansion(node)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except SuiteError as exc:
        raise SuiteError(exc.message, path=path, line=exc.line, fix=exc.fix) from None
    except RecursionError:
        raise SuiteError("the YAML is nested too deeply to read", path=path,
                         fix="flatten the structure (a suite needs only a few levels of nesting)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise SuiteError(
            f"invalid YAML: {problem}",
            path=path,
            line=mark.line + 1 if mark else None,
            fix="check the indentation and quoting around this line (quote SQL that contains ': ' or starts with a special character)",
        ) from None


#: How far YAML aliases (``*anchor``) may expand a document beyond its own nodes (billion-laughs guard).
MAX_ALIAS_EXPANSION = 1_000_000
#: Largest `metadata:` of one case, as JSON text (bytes); it is copied into every report.
MAX_METADATA_BYTES = 64 * 1024


def _check_alias_expansion(root: yaml.Node) -> None:
    """Refuse a document whose aliases expand to more than MAX_ALIAS_EXPANSION extra nodes, or refer to themselves."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            continue
        if key in sizes:
            continue
        if key in active:
            raise SuiteError("a YAML alias refers to the node that contains it (a recursive structure)",
                             line=node.start_mark.line + 1, fix="remove the recursive `*alias`")
        active.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in active:
                raise SuiteError("a YAML alias refers to the node that contains it (a recursive structure)",
                                 line=child.start_mark.line + 1, fix="remove the recursive `*alias`")
            if id(child) not in sizes:
                stack.append((child, False))
    if sizes[id(root)] - len(sizes) > MAX_ALIAS_EXPANSION:
        raise SuiteError(
            f"YAML aliases (*anchor references) expand this file to {sizes[id(root)]:,} values, more than "
            f"{MAX_ALIAS_EXPANSION:,} beyond what is written (an alias bomb?)",
            line=1, fix="use anchors for small shared values only (a database, a SQL text), not nested lists of lists")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


# --------------------------------------------------------------------------- the loader
class _Context:
    """The file being loaded, for error messages and relative paths."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.directory = path.parent
        self.policy = None  # the suite's `policy:`, the default of every case
        self.pass_if = None

    def error(self, message: str, line: int | None, fix: str = "") -> SuiteError:
        return SuiteError(message, path=self.path, line=line, fix=fix)

    def resolve(self, relative: str) -> Path:
        return (self.directory / os.path.expanduser(relative)).resolve()


def load_suite(path: str | Path) -> Suite:
    """Read and validate one suite file."""
    path = Path(path)
    data = read_yaml(path)
    ctx = _Context(path)
    if not isinstance(data, dict):
        raise ctx.error("a suite must be a YAML mapping with a `cases:` list", 1,
                        fix="start the file with keys such as `database:` and `cases:`")
    _check_keys(ctx, data, SUITE_KEYS, "suite")
    lines = data.key_lines

    name = str(data.get("suite") or _stem(path))
    suite_dbs = _suite_databases(ctx, data)
    suite_schema = _schema_source(ctx, data.get("schema"), lines.get("schema")) if "schema" in data else None
    dialect = _dialect(ctx, data.get("dialect"), lines.get("dialect"))
    execution = _execution(ctx, data.get("execution"), lines.get("execution"))
    exact_match = _exact_match(ctx, data.get("exact_match"), lines.get("exact_match"))
    pass_if = _pass_if(ctx, data.get("pass_if", DEFAULT_PASS_RULE_TEXT), lines.get("pass_if"))
    _check_clause_profile(ctx, pass_if, exact_match, lines.get("pass_if"))
    ctx.pass_if = pass_if
    if "policy" in data:
        ctx.policy = _policy(ctx, data["policy"], lines["policy"])
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
    predictions_file = None
    if data.get("predictions") is not None:
        predictions_file = ctx.resolve(str(data["predictions"]))
        if not predictions_file.is_file():
            raise ctx.error(f"predictions file not found: {predictions_file}", lines.get("predictions"),
                            fix="give a JSON Lines file path relative to the suite file")

    cases = _cases(ctx, data, suite_dbs, suite_schema)
    if connect_timeout is not None:
        cases = _with_connect_timeout(cases, connect_timeout)
    return Suite(
        name=name,
        path=path,
        cases=tuple(cases),
        execution=execution,
        pass_if=pass_if,
        exact_match=exact_match,
        exact_match_requested="exact_match" in data,
        dialect=dialect,
        difficulty_classifier=classifier,
        thresholds=thresholds,
        timeout=timeout,
        max_rows=max_rows,
        allow_functions=allow_functions,
        max_memory=max_memory,
        connect_timeout=connect_timeout,
        description=str(data.get("description") or ""),
        predictions_file=predictions_file,
        model=_model_keys(path, data),
        efficiency=efficiency,
    )


def _model_keys(path: Path, data: _Mapping):
    """`model:`, `prompt:`, `schema_format:`, ... validated by the model package (None when the suite has none)."""
    from .model.config import MODEL_SUITE_KEYS, parse_suite_keys

    if not any(key in data for key in MODEL_SUITE_KEYS):
        return None
    return parse_suite_keys(path, data)


def _with_connect_timeout(cases: list[Case], seconds: float) -> list[Case]:
    """The suite's `connect_timeout:` travels with each database spec (the engine factory reads it there)."""
    from dataclasses import replace

    return [replace(case, databases=tuple(replace(spec, connect_timeout=seconds) for spec in case.databases))
            for case in cases]


_FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?")


def _allow_functions(ctx: _Context, value: Any, line: int | None) -> tuple[str, ...]:
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


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".sqleval.yaml", ".sqleval.yml", ".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _check_keys(ctx: _Context, mapping: _Mapping, allowed: Iterable[str], what: str) -> None:
    allowed = tuple(allowed)
    for key in mapping:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"did you mean `{close[0]}`? " if close else ""
            raise ctx.error(f"unknown key {key!r} in {what}", mapping.key_lines.get(key, mapping.line),
                            fix=f"{hint}allowed keys: {', '.join(allowed)}")


# --------------------------------------------------------------------------- cases
def _cases(ctx: _Context, data: _Mapping, suite_dbs: tuple[DatabaseSpec, ...], suite_schema: SchemaSource | None) -> list[Case]:
    raw = data.get("cases")
    line = data.key_lines.get("cases", data.line)
    if raw is None:
        raise ctx.error("the suite has no `cases:`", line, fix="add a `cases:` list of {id, question, gold, predicted}")
    if not isinstance(raw, list) or not raw:
        raise ctx.error("`cases:` must be a non-empty list", line, fix="write each case as `- id: ...` under `cases:`")
    seen: dict[str, int] = {}
    cases: list[Case] = []
    for position, entry in enumerate(raw):
        entry_line = raw.item_lines[position]
        if not isinstance(entry, dict):
            raise ctx.error(f"case #{position + 1} is not a mapping", entry_line,
                            fix="write each case as a mapping: `- id: ...`, `gold: ...`")
        _check_keys(ctx, entry, CASE_KEYS, f"case #{position + 1}")
        case_id = _case_id(ctx, entry, position)
        if case_id in seen:
            raise ctx.error(f"duplicate case id {case_id!r} (first on line {seen[case_id]})", entry.key_lines["id"],
                            fix="case ids must be unique in a file: rename one of them")
        seen[case_id] = entry.key_lines["id"]
        cases.extend(_expand_case(ctx, entry, case_id, len(cases), suite_dbs, suite_schema))
    return cases


def _case_id(ctx: _Context, entry: _Mapping, position: int) -> str:
    if "id" not in entry:
        raise ctx.error(f"case #{position + 1} has no `id`", entry.line, fix="give every case a unique `id:`")
    raw = entry["id"]
    if isinstance(raw, bool) or not isinstance(raw, (str, int)) or not str(raw).strip():
        raise ctx.error(f"case id must be a non-empty string, not {raw!r}", entry.key_lines["id"])
    case_id = str(raw).strip()
    bad = [ch for ch in ("/", "[", "]", " ", "\t") if ch in case_id]
    if bad:
        raise ctx.error(f"case id {case_id!r} contains {bad[0]!r}", entry.key_lines["id"],
                        fix="use letters, digits, '-', '_' or '.' ('/' and '[n]' address interaction turns)")
    return case_id


def _expand_case(
    ctx: _Context,
    entry: _Mapping,
    case_id: str,
    first_index: int,
    suite_dbs: tuple[DatabaseSpec, ...],
    suite_schema: SchemaSource | None,
) -> list[Case]:
    lines = entry.key_lines
    databases = _case_databases(ctx, entry) or suite_dbs
    schema = _schema_source(ctx, entry["schema"], lines["schema"]) if "schema" in entry else suite_schema
    if not databases and schema is None:
        raise ctx.error(f"case {case_id!r} has no database", entry.line,
                        fix="add `database:` to the suite or to the case (a file path or a SQLAlchemy URL)")
    common = dict(
        databases=databases,
        schema=schema,
        difficulty=_difficulty_label(ctx, entry),
        tags=_tags(ctx, entry),
        extra=_metadata(ctx, entry),
        policy=_policy(ctx, entry["policy"], lines["policy"]) if "policy" in entry else ctx.policy,
    )
    if "interaction" in entry:
        for key in ("gold", "predicted", "expected", "expect_columns", "expect_rows"):
            if key in entry:
                raise ctx.error(f"case {case_id!r} has both `interaction:` and `{key}:`", lines[key],
                                fix=f"put `{key}:` inside each turn of the interaction")
        return _turns(ctx, entry, case_id, first_index, common)
    forms = _gold_forms(ctx, entry, case_id, databases)
    return [
        Case(
            id=case_id,
            index=first_index,
            line=entry.line,
            **forms,
            question=_optional_text(entry.get("question")),
            predicted=_sql_text(ctx, entry, "predicted", case_id, required=False),
            has_prediction="predicted" in entry,
            evidence=_optional_text(entry.get("evidence")),
            **common,
        )
    ]


def _turns(ctx: _Context, entry: _Mapping, case_id: str, first_index: int, common: dict) -> list[Case]:
    turns = entry["interaction"]
    line = entry.key_lines["interaction"]
    if not isinstance(turns, list) or not turns:
        raise ctx.error(f"interaction {case_id!r} has no turns", line,
                        fix="list its turns: `interaction: [{question: ..., gold: ...}, ...]`")
    cases = []
    for number, turn in enumerate(turns, start=1):
        turn_line = turns.item_lines[number - 1]
        if not isinstance(turn, dict):
            raise ctx.error(f"turn {number} of interaction {case_id!r} is not a mapping", turn_line,
                            fix="write each turn as {question: ..., gold: ..., predicted: ...}")
        _check_keys(ctx, turn, TURN_KEYS, f"turn {number} of interaction {case_id!r}")
        where = f"{case_id}/{number}"
        turn_common = dict(common)
        if "policy" in turn:
            turn_common["policy"] = _policy(ctx, turn["policy"], turn.key_lines["policy"])
        cases.append(
            Case(
                id=where,
                index=first_index + number - 1,
                line=turn_line,
                **_gold_forms(ctx, turn, where, common["databases"]),
                question=_optional_text(turn.get("question")),
                predicted=_sql_text(ctx, turn, "predicted", where, required=False),
                has_prediction="predicted" in turn,
                evidence=_optional_text(turn.get("evidence", entry.get("evidence"))),
                interaction=case_id,
                turn=number,
                **turn_common,
            )
        )
    return cases


def _sql_text(ctx: _Context, entry: _Mapping, key: str, where: str, *, required: bool) -> str | None:
    if key not in entry:
        if required:
            raise ctx.error(f"{where!r} has no `{key}:` SQL", entry.line, fix=f"add `{key}: SELECT ...`")
        return None
    value = entry[key]
    if value is None:
        if required:
            raise ctx.error(f"`{key}:` of {where!r} is empty", entry.key_lines[key], fix=f"write the {key} SQL after `{key}:`")
        return None
    if not isinstance(value, str):
        raise ctx.error(f"`{key}:` of {where!r} must be SQL text, not {type(value).__name__}", entry.key_lines[key],
                        fix="quote the SQL, or use a block scalar: `gold: |` followed by indented lines")
    if required and not value.strip():
        raise ctx.error(f"`{key}:` of {where!r} is empty", entry.key_lines[key], fix=f"write the {key} SQL after `{key}:`")
    return value


def _gold_forms(ctx: _Context, entry: _Mapping, where: str, databases: tuple[DatabaseSpec, ...]) -> dict[str, Any]:
    """The gold side of a case or turn: `gold:` SQL or a list of accepted SQL, or `expected:` rows,
    and the shape checks `expect_columns:` / `expect_rows:`."""
    lines = entry.key_lines
    forms: dict[str, Any] = {}
    if "expected" in entry:
        if "gold" in entry:
            raise ctx.error(f"{where!r} has both `gold:` and `expected:`", lines["expected"],
                            fix="give the gold SQL or the expected rows, not both")
        if len(databases) > 1:
            raise ctx.error(f"{where!r} has `expected:` rows and several databases", lines["expected"],
                            fix="expected rows belong to one database: give the case a single `database:`")
        if ctx.pass_if is not None and "exact_match" in ctx.pass_if.metrics:
            raise ctx.error(f"{where!r} has `expected:` rows, so the suite's pass_if `{ctx.pass_if}` cannot be computed "
                            "(exact match needs gold SQL)", lines["expected"],
                            fix="give this case `gold:` SQL, or use a pass_if without exact_match")
        forms["expected"] = _expected(ctx, entry["expected"], lines["expected"], where)
        forms["gold"] = ""
    elif isinstance(entry.get("gold"), list):
        golds = _gold_list(ctx, entry["gold"], lines["gold"], where)
        forms["gold"] = golds[0]
        forms["golds"] = golds
    else:
        forms["gold"] = _sql_text(ctx, entry, "gold", where, required=True)
    if "expect_columns" in entry:
        forms["expect_columns"] = _expect_columns(ctx, entry["expect_columns"], lines["expect_columns"], where)
    if "expect_rows" in entry:
        value = entry["expect_rows"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ctx.error(f"`expect_rows:` of {where!r} must be a whole number of rows (0 or more), not {value!r}",
                            lines["expect_rows"], fix="write e.g. `expect_rows: 3`")
        forms["expect_rows"] = value
    return forms


def _gold_list(ctx: _Context, value: list, line: int, where: str) -> tuple[str, ...]:
    if not value:
        raise ctx.error(f"`gold:` of {where!r} is an empty list", line,
                        fix="list the accepted gold queries: `gold: [SELECT ..., SELECT ...]`, or give one")
    golds = []
    for position, item in enumerate(value):
        item_line = value.item_lines[position] if hasattr(value, "item_lines") else line
        if not isinstance(item, str) or not item.strip():
            raise ctx.error(f"gold #{position + 1} of {where!r} must be SQL text, not {item!r}", item_line,
                            fix="each accepted gold is a SQL string; quote it, or use a block scalar `- |`")
        golds.append(item)
    return tuple(golds)


def _expected(ctx: _Context, value: Any, line: int, where: str):
    from .suite import ExpectedRows

    example = "`expected: {columns: [shop, n], rows: [[Avionics, 3], [Engines, 2]]}`"
    if not isinstance(value, dict):
        raise ctx.error(f"`expected:` of {where!r} must be a mapping with `rows:` (and `columns:`)", line,
                        fix=f"write {example}")
    _check_keys(ctx, value, EXPECTED_KEYS, f"expected of {where!r}")
    lines = value.key_lines
    columns = value.get("columns")
    if columns is not None and (not isinstance(columns, list) or not all(isinstance(c, str) for c in columns)):
        raise ctx.error(f"`columns:` of the expected rows of {where!r} must be a list of names", lines["columns"],
                        fix=f"write {example}")
    if "rows" not in value:
        raise ctx.error(f"the expected rows of {where!r} have no `rows:`", value.line, fix=f"write {example}")
    rows = value["rows"]
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        raise ctx.error(f"`rows:` of the expected rows of {where!r} must be a list of rows, each a list of values",
                        lines["rows"], fix=f"write {example} (an empty result is `rows: []`)")
    width = len(columns) if columns is not None else (len(rows[0]) if rows else 0)
    for position, row in enumerate(rows):
        if len(row) != width:
            row_line = rows.item_lines[position] if hasattr(rows, "item_lines") else lines["rows"]
            raise ctx.error(f"expected row {position + 1} of {where!r} has {len(row)} values, not {width}", row_line,
                            fix="every row has one value per column")
        for cell in row:
            if isinstance(cell, (dict, list)):
                raise ctx.error(f"expected row {position + 1} of {where!r} holds a {type(cell).__name__}; "
                                "cells are single values", lines["rows"], fix="write numbers, text, true/false or null")
    ordered = value.get("ordered", False)
    if not isinstance(ordered, bool):
        raise ctx.error(f"`ordered:` of the expected rows of {where!r} must be true or false", lines["ordered"])
    names = tuple(columns) if columns is not None else tuple(f"c{i}" for i in range(width))
    return ExpectedRows(columns=names, rows=tuple(tuple(_plain(c) for c in r) for r in rows), ordered=ordered)


def _expect_columns(ctx: _Context, value: Any, line: int, where: str) -> tuple[str, ...] | int:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise ctx.error(f"`expect_columns:` of {where!r} must be a list of column names or a number of columns, not {value!r}",
                    line, fix="write `expect_columns: [shop, n]` or `expect_columns: 2`")


def _policy(ctx: _Context, value: Any, line: int):
    from .policy import POLICY_KEYS, Policy, PolicyError

    example = 'write e.g. `policy: {tables: [tickets, shops], forbid_columns: [ssn], require_filter: "tenant_id = 42"}`'
    if isinstance(value, dict):
        _check_keys(ctx, value, POLICY_KEYS, "policy")
    try:
        return Policy.from_mapping(value)
    except PolicyError as exc:
        raise ctx.error(f"bad policy: {exc}", line, fix=example) from None


def _check_clause_profile(ctx: _Context, pass_if, exact_match, line: int | None) -> None:
    """`exact_match(limit)` under the spider profile, which has no such clause."""
    from .metrics.exact_match.verdict import SPIDER_CLAUSES

    if getattr(exact_match, "profile", "sqleval") != "spider":
        return
    extra = sorted(pass_if.clauses - set(SPIDER_CLAUSES))
    if extra:
        raise ctx.error(f"bad pass_if: the spider exact-match profile has no clause {extra[0]!r}", line,
                        fix=f"use the spider clauses ({', '.join(SPIDER_CLAUSES)}) or `exact_match: sqleval`")


def _metadata(ctx: _Context, entry: _Mapping) -> dict[str, Any]:
    value = entry.get("metadata")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ctx.error("`metadata:` must be a mapping", entry.key_lines["metadata"],
                        fix="write e.g. `metadata: {source: spider, author: ana}`")
    budget = [MAX_METADATA_BYTES]
    try:
        return _plain(value, budget)
    except _TooLarge:
        raise ctx.error(f"`metadata:` is larger than {MAX_METADATA_BYTES // 1024} KiB (the limit per case, "
                        "counted after YAML aliases expand)", entry.key_lines["metadata"],
                        fix="keep metadata small (labels, sources, notes); store large data outside the suite") from None


class _TooLarge(Exception):
    pass


def _spend(budget: list[int] | None, amount: int) -> None:
    if budget is not None:
        budget[0] -= amount
        if budget[0] < 0:
            raise _TooLarge


def _plain(value: Any, budget: list[int] | None = None) -> Any:
    """YAML values as JSON primitives (dates become ISO strings), so they travel in reports.

    ``budget`` (a one-item list of bytes left) bounds the size of the copy: aliases expand here.
    """
    if isinstance(value, dict):
        _spend(budget, 2)
        out = {}
        for k, v in value.items():
            _spend(budget, len(str(k)) + 4)
            out[str(k)] = _plain(v, budget)
        return out
    if isinstance(value, list):
        _spend(budget, 2)
        return [_plain(v, budget) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        _spend(budget, len(value) + 2 if isinstance(value, str) else 8)
        return value
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    _spend(budget, len(text) + 2)
    return text


def _optional_text(value: Any) -> str | None:
    return None if value is None else str(value)


def _difficulty_label(ctx: _Context, entry: _Mapping) -> str | None:
    value = entry.get("difficulty")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ctx.error(f"difficulty must be a label such as easy/medium/hard/extra, not {value!r}",
                        entry.key_lines["difficulty"])
    return value.strip()


def _tags(ctx: _Context, entry: _Mapping) -> tuple[str, ...]:
    value = entry.get("tags")
    if value is None:
        return ()
    line = entry.key_lines["tags"]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ctx.error("tags must be a list of names", line, fix="write `tags: [joins, aggregation]`")
    tags = []
    for tag in value:
        if not isinstance(tag, str) or not tag.isidentifier():
            raise ctx.error(f"tag {tag!r} is not a valid marker name", line,
                            fix="use letters, digits and '_' (tags become pytest markers usable with -m)")
        tags.append(tag)
    return tuple(tags)


# --------------------------------------------------------------------------- databases
def _suite_databases(ctx: _Context, data: _Mapping) -> tuple[DatabaseSpec, ...]:
    if "database" in data and "databases" in data:
        raise ctx.error("the suite has both `database:` and `databases:`", data.key_lines["databases"],
                        fix="use `databases:` for a test suite of several databases, `database:` for one")
    if "databases" in data:
        return _database_list(ctx, data["databases"], data.key_lines["databases"])
    if "database" in data:
        return (_database(ctx, data["database"], data.key_lines["database"]),)
    return ()


def _case_databases(ctx: _Context, entry: _Mapping) -> tuple[DatabaseSpec, ...]:
    if "database" in entry and "databases" in entry:
        raise ctx.error("the case has both `database:` and `databases:`", entry.key_lines["databases"],
                        fix="use one of them")
    if "databases" in entry:
        return _database_list(ctx, entry["databases"], entry.key_lines["databases"])
    if "database" in entry:
        return (_database(ctx, entry["database"], entry.key_lines["database"]),)
    return ()


def _database_list(ctx: _Context, value: Any, line: int) -> tuple[DatabaseSpec, ...]:
    if isinstance(value, str) and "://" not in value and glob.has_magic(value):
        matches = sorted(glob.glob(str(ctx.resolve(value))))
        if not matches:
            raise ctx.error(f"no database matches {value!r}", line,
                            fix="check the glob pattern; it is relative to the suite file")
        return tuple(_database(ctx, m, line) for m in matches)
    if not isinstance(value, list) or not value:
        raise ctx.error("`databases:` must be a non-empty list or a glob pattern", line,
                        fix="write `databases: [a.sqlite, b.sqlite]` or `databases: \"variants/*.sqlite\"`")
    return tuple(_database(ctx, item, value.item_lines[i]) for i, item in enumerate(value))


def _database(ctx: _Context, value: Any, line: int | None) -> DatabaseSpec:
    if isinstance(value, str):
        return _database_from_text(ctx, value, line)
    if isinstance(value, dict):
        _check_keys(ctx, value, DATABASE_KEYS, "database")
        if "url" not in value:
            raise ctx.error("a database mapping needs `url:`", value.line,
                            fix='write `database: {url: "sqlite://", setup: [schema.sql, data.sql]}`')
        spec = _database_from_text(ctx, str(value["url"]), value.key_lines["url"])
        setup = _setup_scripts(ctx, value)
        if setup and spec.file_path is not None:
            raise ctx.error("setup scripts build a fresh database; they cannot target an existing file", value.line,
                            fix='use `url: "sqlite://"` or `"duckdb://"` (a file is built for you) or a server URL')
        return DatabaseSpec(url=spec.url, setup=setup, source=spec.source)
    raise ctx.error(f"a database is a path, a URL or a mapping, not {type(value).__name__}", line,
                    fix="write `database: shop.sqlite` or `database: postgresql+psycopg://...`")


def _database_from_text(ctx: _Context, text: str, line: int | None) -> DatabaseSpec:
    expanded = expand_env(ctx, text, line)
    if "://" in expanded:
        if expanded.startswith(("sqlite:///", "duckdb:///")) and len(expanded.split(":///", 1)[1].split("?")[0]) > 0:
            prefix, rest = expanded.split(":///", 1)
            file_part, query = (rest.split("?", 1) + [""])[:2]
            if file_part != ":memory:":
                resolved = ctx.resolve(file_part)
                _require_file(ctx, resolved, line)
                expanded = f"{prefix}:///{resolved}" + (f"?{query}" if query else "")
        return DatabaseSpec(url=expanded, source=text)
    resolved = ctx.resolve(expanded)
    _require_file(ctx, resolved, line)
    scheme = "duckdb" if resolved.suffix.lower() in DUCKDB_SUFFIXES else "sqlite"
    return DatabaseSpec(url=f"{scheme}:///{resolved}", source=text)


def _require_file(ctx: _Context, path: Path, line: int | None) -> None:
    if not path.is_file():
        raise ctx.error(f"database file not found: {path}", line,
                        fix="check the path (relative to the suite file), or give a SQLAlchemy URL such as "
                            + SERVER_URL_EXAMPLE)


def _setup_scripts(ctx: _Context, value: _Mapping) -> tuple[Path, ...]:
    scripts = value.get("setup")
    if scripts is None:
        return ()
    line = value.key_lines["setup"]
    if isinstance(scripts, str):
        scripts = [scripts]
    if not isinstance(scripts, list) or not all(isinstance(s, str) for s in scripts):
        raise ctx.error("`setup:` must be a list of SQL script paths", line, fix="write `setup: [schema.sql, data.sql]`")
    paths = []
    for script in scripts:
        path = ctx.resolve(script)
        if not path.is_file():
            raise ctx.error(f"setup script not found: {path}", line, fix="paths are relative to the suite file")
        paths.append(path)
    return tuple(paths)


def expand_env(ctx: _Context, text: str, line: int | None) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}`` so secrets stay out of YAML.

    A value expanded into a URL's userinfo or query string is percent-encoded (a
    password ``p@ss/w#rd`` works) and masked in every message; see :mod:`.secrets`.
    """
    from .secrets import expand_env as expand

    def missing(name: str) -> SuiteError:
        return ctx.error(f"environment variable {name} is not set", line,
                         fix=f"export {name}=... before running pytest, or write ${{{name}:-default}}")

    return expand(text, os.environ.get, missing)


def _schema_source(ctx: _Context, value: Any, line: int | None) -> SchemaSource:
    if not isinstance(value, dict):
        raise ctx.error("`schema:` must be a mapping {tables: tables.json, db_id: ...}", line,
                        fix="write `schema: {tables: tables.json, db_id: concert_singer}`")
    _check_keys(ctx, value, SCHEMA_KEYS, "schema")
    if "tables" not in value or "db_id" not in value:
        raise ctx.error("`schema:` needs both `tables:` and `db_id:`", value.line)
    path = ctx.resolve(str(value["tables"]))
    if not path.is_file():
        raise ctx.error(f"schema file not found: {path}", value.key_lines["tables"])
    from .schema import SpiderTablesError, spider_db_ids

    try:
        known = spider_db_ids(path)
    except SpiderTablesError as exc:
        raise ctx.error(f"{exc.message} ({exc.path})", value.key_lines["tables"], fix=exc.fix) from None
    db_id = str(value["db_id"])
    if db_id not in known:
        close = difflib.get_close_matches(db_id, sorted(known), n=1)
        hint = f"did you mean `{close[0]}`? " if close else ""
        shown = ", ".join(sorted(known)[:10]) + (", ..." if len(known) > 10 else "")
        raise ctx.error(f"db_id {db_id!r} is not in {path}", value.key_lines["db_id"],
                        fix=f"{hint}its db_ids are: {shown or '(none)'}")
    return SchemaSource(tables_json=path, db_id=db_id)


# --------------------------------------------------------------------------- options
def _dialect(ctx: _Context, value: Any, line: int | None) -> str | None:
    if value is None:
        return None
    from sqlglot.dialects.dialect import Dialect

    try:
        Dialect.get_or_raise(str(value))
    except ValueError:
        raise ctx.error(f"unknown sqlglot dialect {value!r}", line,
                        fix="use a sqlglot dialect name such as sqlite, duckdb, postgres, mysql, bigquery, snowflake") from None
    return str(value)


def _execution(ctx: _Context, value: Any, line: int | None):
    if value is not None and not isinstance(value, (str, dict)):
        raise ctx.error("`execution:` is a profile name or a mapping", line,
                        fix="write `execution: bird` or `execution: {profile: bird, duplicates: bag}`")
    try:
        return resolve_execution(value)
    except OptionError as exc:
        raise ctx.error(str(exc), line, fix="see the comparison profiles and options in the README") from None


def _exact_match(ctx: _Context, value: Any, line: int | None):
    from .metrics.exact_match import resolve_exact_match

    if value is not None and not isinstance(value, (str, dict)):
        raise ctx.error("`exact_match:` is a profile name or a mapping", line,
                        fix="write `exact_match: spider` or `exact_match: {profile: sqleval, values: ignore}`")
    try:
        return resolve_exact_match(value)
    except ValueError as exc:
        raise ctx.error(str(exc), line, fix="profiles are spider and sqleval; see the README") from None


def _pass_if(ctx: _Context, value: Any, line: int | None):
    try:
        return parse_pass_rule(str(value))
    except PassRuleError as exc:
        raise ctx.error(f"bad pass_if: {exc}", line,
                        fix="write e.g. `pass_if: execution_match`, `pass_if: soft_f1 >= 0.8`, "
                            "`pass_if: execution_match and policy` or `pass_if: exact_match(select, where)`") from None


def _thresholds(ctx: _Context, value: Any, line: int | None) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ctx.error("`thresholds:` must be a mapping of metric: value", line,
                        fix="write e.g. `thresholds: {execution_accuracy: 0.6}`")
    thresholds: dict[str, float] = {}
    for metric, bound in value.items():
        metric_line = value.key_lines.get(metric, line)
        try:
            thresholds[str(metric)] = make_threshold(str(metric), bound, "suite").value
        except ThresholdError as exc:
            raise ctx.error(str(exc), metric_line, fix="see the metric names in the README") from None
    return thresholds


def _positive_number(ctx: _Context, data: Mapping, key: str, *, integer: bool = False,
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
        raise ctx.error(str(exc), data.key_lines.get(key),
                        fix=fixes.get(key, f"write e.g. `{key}: 30` (seconds)")) from None
