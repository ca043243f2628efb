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
    "difficulty", "pass_if", "thresholds", "timeout", "max_rows", "predictions", "cases",
)
CASE_KEYS = (
    "id", "question", "gold", "predicted", "database", "databases", "schema", "difficulty", "tags",
    "interaction", "notes", "metadata",
)
TURN_KEYS = ("question", "gold", "predicted", "notes", "metadata")
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


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _Mapping:
    loader.flatten_mapping(node)
    mapping = _Mapping()
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
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


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"cannot read the suite: {exc.strerror}", path=path) from None
    except UnicodeDecodeError as exc:
        raise SuiteError(f"the file is not UTF-8 ({exc.reason} at byte {exc.start})", path=path,
                         fix="save the suite as UTF-8") from None
    try:
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except SuiteError as exc:
        raise SuiteError(exc.message, path=path, line=exc.line, fix=exc.fix) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise SuiteError(
            f"invalid YAML: {problem}",
            path=path,
            line=mark.line + 1 if mark else None,
            fix="check the indentation and quoting around this line (quote SQL that contains ': ' or starts with a special character)",
        ) from None


# --------------------------------------------------------------------------- the loader
class _Context:
    """The file being loaded, for error messages and relative paths."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.directory = path.parent

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
    thresholds = _thresholds(ctx, data.get("thresholds"), lines.get("thresholds"))
    classifier = data.get("difficulty", "spider")
    if classifier not in DIFFICULTY_CLASSIFIERS:
        raise ctx.error(f"unknown difficulty classifier {classifier!r}", lines.get("difficulty"),
                        fix=f"use one of: {', '.join(DIFFICULTY_CLASSIFIERS)} (per-case labels go under each case)")
    timeout = _positive_number(ctx, data, "timeout")
    max_rows = _positive_number(ctx, data, "max_rows", integer=True)
    predictions_file = None
    if data.get("predictions") is not None:
        predictions_file = ctx.resolve(str(data["predictions"]))
        if not predictions_file.is_file():
            raise ctx.error(f"predictions file not found: {predictions_file}", lines.get("predictions"),
                            fix="give a JSON Lines file path relative to the suite file")

    cases = _cases(ctx, data, suite_dbs, suite_schema)
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
        description=str(data.get("description") or ""),
        predictions_file=predictions_file,
    )


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
    )
    if "interaction" in entry:
        for key in ("gold", "predicted"):
            if key in entry:
                raise ctx.error(f"case {case_id!r} has both `interaction:` and `{key}:`", lines[key],
                                fix=f"put `{key}:` inside each turn of the interaction")
        return _turns(ctx, entry, case_id, first_index, common)
    gold = _sql_text(ctx, entry, "gold", case_id, required=True)
    return [
        Case(
            id=case_id,
            index=first_index,
            line=entry.line,
            gold=gold,
            question=_optional_text(entry.get("question")),
            predicted=_sql_text(ctx, entry, "predicted", case_id, required=False),
            has_prediction="predicted" in entry,
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
        cases.append(
            Case(
                id=where,
                index=first_index + number - 1,
                line=turn_line,
                gold=_sql_text(ctx, turn, "gold", where, required=True),
                question=_optional_text(turn.get("question")),
                predicted=_sql_text(ctx, turn, "predicted", where, required=False),
                has_prediction="predicted" in turn,
                interaction=case_id,
                turn=number,
                **common,
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


def _metadata(ctx: _Context, entry: _Mapping) -> dict[str, Any]:
    value = entry.get("metadata")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ctx.error("`metadata:` must be a mapping", entry.key_lines["metadata"],
                        fix="write e.g. `metadata: {source: spider, author: ana}`")
    return _plain(value)


def _plain(value: Any) -> Any:
    """YAML values as JSON primitives (dates become ISO strings), so they travel in reports."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


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
    """Expand ``${VAR}`` and ``${VAR:-default}`` so secrets stay out of YAML."""

    def substitute(match: re.Match) -> str:
        name, default = match.group(1), match.group(2)
        value = os.environ.get(name)
        if value:
            return value
        if default is not None:
            return default
        raise ctx.error(f"environment variable {name} is not set", line,
                        fix=f"export {name}=... before running pytest, or write ${{{name}:-default}}")

    return _ENV_PATTERN.sub(substitute, text)


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
    return SchemaSource(tables_json=path, db_id=str(value["db_id"]))


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
                        fix="write e.g. `pass_if: execution_match` or `pass_if: soft_f1 >= 0.8`") from None


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


def _positive_number(ctx: _Context, data: Mapping, key: str, *, integer: bool = False) -> float | int | None:
    if key not in data or data[key] is None:
        return None
    value = data[key]
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or value <= 0:
        kind = "a whole number" if integer else "a number of seconds"
        raise ctx.error(f"`{key}:` must be {kind} greater than 0, not {value!r}", data.key_lines.get(key))
    return value
