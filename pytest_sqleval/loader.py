"""Load a ``*.sqleval.yaml`` file into the suite model: the suite's frame and its cases.

Every problem is a :class:`~pytest_sqleval.errors.SuiteError` that names the
file, the line and the fix. Nothing is executed here; database files and
setup scripts are only checked for existence. The parts: the YAML with line
numbers (:mod:`.yaml_lines`), the suite's options (:mod:`.suite_options`), its
databases and schema (:mod:`.database_specs`); this module reads the cases (a
case, an interaction's turns, gold SQL or expected rows, metadata and tags)
and assembles the :class:`~pytest_sqleval.suite.Suite`.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any, Mapping

from .comparison import ComparisonOptions
from .database_specs import case_databases, schema_source, suite_databases
from .load_context import LoadContext, check_keys, yaml_type
from .results import temporal_as_text
from .suite import Case, DatabaseSpec, SchemaSource, Suite, difficulty_bucket
from .suite_options import read_policy, read_suite_options
from .yaml_lines import LineMapping, item_lines_as_written, read_yaml

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
#: Markers with a behaviour of their own (pytest's and the plugin's): a tag so named would skip the case, make it
#: xfail or break its collection instead of labelling it.
RESERVED_TAGS = ("skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "tryfirst", "trylast",
                 "sqleval", "sqleval_database")

#: The classifier's difficulty levels: a case's own label is read in any letter case (`Hard` is `hard`).

#: Largest `metadata:` of one case, as JSON text (bytes); it is copied into every report.
MAX_METADATA_BYTES = 64 * 1024


def load_suite(path: str | Path, profiles: Mapping[str, ComparisonOptions] | None = None) -> Suite:
    """Read and validate one suite file.

    ``profiles``: the execution profiles ``execution:`` may name (default: the session's table, which the
    plugin builds from the built-ins and the ``pytest_sqleval_execution_profiles`` hooks).
    """
    path = Path(path)
    data = read_yaml(path)
    ctx = LoadContext(path)
    if not isinstance(data, dict):
        empty = "the suite file is empty (or holds only comments); " if data is None else ""
        raise ctx.error(f"{empty}a suite must be a YAML mapping with a `cases:` list", 1,
                        fix="start the file with keys such as `database:` and `cases:`")
    check_keys(ctx, data, SUITE_KEYS, "suite", (CASE_KEYS, "a key of a case",
                                                 "put it in a case under `cases:` (`- id: ...` then `gold: ...`)"))
    data = _without_nulls(data, ("cases", "pass_if", "model", "prompt", "schema_format", "sample_rows", "history",
                                 "examples", "extract"))  # an empty `pass_if:` (the rule of every case) is an error
    lines = data.key_lines

    name = (_text_value(ctx, data, "suite") or "").strip() or _stem(path)  # trimmed as ids (`<suite>::<id>`) are
    suite_dbs = suite_databases(ctx, data)
    suite_schema = schema_source(ctx, data.get("schema"), lines.get("schema")) if "schema" in data else None
    options = read_suite_options(ctx, data, profiles)
    ctx.pass_if = options["pass_if"]
    ctx.policy = options.pop("policy")

    cases = _cases(ctx, data, suite_dbs, suite_schema)
    if options["connect_timeout"] is not None:
        cases = _with_connect_timeout(cases, options["connect_timeout"])
    return Suite(
        name=name,
        path=path,
        cases=tuple(cases),
        description=_text_value(ctx, data, "description") or "",
        model=_model_keys(path, data),
        **options,
    )


def _model_keys(path: Path, data: LineMapping):
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


#: Keys of a case or turn whose `null` is not "left out": `id:` and `gold:` are required (their own messages say
#: so), `predicted: null` records that the model gave no answer, an `interaction:` with nothing under it is an
#: interaction without turns (not a case without `gold:`).
_NULL_KEPT = ("id", "gold", "predicted", "interaction")


def _without_nulls(mapping: LineMapping, kept: tuple[str, ...] = _NULL_KEPT) -> LineMapping:
    """``mapping`` without its optional keys written as YAML `null` (`~`, or nothing after the colon): an optional
    key set to null is the key left out (a template's `difficulty: ~`, `policy:`), as `dialect: null` and
    `tags: null` always were, never "both `database:` and `databases:`" or "unknown difficulty classifier None"."""
    if all(value is not None or key in kept for key, value in mapping.items()):
        return mapping
    trimmed = LineMapping((key, value) for key, value in mapping.items() if value is not None or key in kept)
    trimmed.line, trimmed.key_lines = mapping.line, mapping.key_lines
    trimmed.merged_keys, trimmed.id_text = mapping.merged_keys, mapping.id_text
    trimmed.number_texts = mapping.number_texts
    return trimmed


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".sqleval.yaml", ".sqleval.yml", ".yaml", ".yml"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


# --------------------------------------------------------------------------- cases
def _cases(ctx: LoadContext, data: LineMapping, suite_dbs: tuple[DatabaseSpec, ...], suite_schema: SchemaSource | None) -> list[Case]:
    raw = data.get("cases")
    line = data.key_lines.get("cases", data.line)
    if raw is None:
        what = "`cases:` is empty: no case is listed under it" if "cases" in data else "the suite has no `cases:`"
        raise ctx.error(what, line, fix="add a `cases:` list of {id, question, gold, predicted}")
    if not isinstance(raw, list) or not raw:
        raise ctx.error("`cases:` must be a non-empty list", line, fix="write each case as `- id: ...` under `cases:`")
    seen: dict[str, int] = {}
    seen_at: dict[str, int] = {}  # id -> its case's position in `cases:`
    composed: dict[str, tuple[str, int]] = {}  # NFC form -> (id as written, line)
    cases: list[Case] = []
    for position, entry in enumerate(raw):
        entry_line = raw.item_lines[position]
        if not isinstance(entry, dict):
            raise ctx.error(f"case #{position + 1} is not a mapping", entry_line,
                            fix="write each case as a mapping: `- id: ...`, `gold: ...`")
        check_keys(ctx, entry, CASE_KEYS, f"case #{position + 1}",
                   (SUITE_KEYS, "a key of the suite, for every case of the file",
                    "move it to the top level of the file; cases that need another value go in a suite file of their own"))
        entry = _without_nulls(entry)
        case_id = _case_id(ctx, entry, position)
        merged = "id" in getattr(entry, "merged_keys", ())  # `- <<: *base` with no `id:` of its own
        id_line = entry.line if merged else entry.key_lines["id"]
        if case_id in seen and raw[position] is raw[seen_at[case_id]]:  # `- *case`: the anchored case again
            written = item_lines_as_written(ctx.path, "cases")
            alias_line = written[position] if len(written) == len(raw) else entry_line
            raise ctx.error(f"duplicate case id {case_id!r} (first on line {seen[case_id]}): case #{position + 1}, "
                            f"on line {alias_line}, is a YAML alias of that case (`- *anchor` repeats the whole case)",
                            alias_line, fix="to reuse its keys in another case, merge them and give it its own id: "
                                            "`- <<: *anchor` then `id: another-id`")
        if case_id in seen:
            raise ctx.error(f"duplicate case id {case_id!r} (first on line {seen[case_id]})"
                            + ("; this case's `id:` comes from its `<<:` merge key" if merged else ""), id_line,
                            fix="give the case its own `id:` after `<<: *...` (a merged case keeps the anchor's id)"
                            if merged else "case ids must be unique in a file: rename one of them")
        key = unicodedata.normalize("NFC", case_id)
        if key in composed:  # `café` typed twice, once with é and once with e + U+0301: one id to a reader
            other, other_line = composed[key]
            raise ctx.error(f"case id {case_id!r} is {other!r} (line {other_line}) written with other Unicode "
                            f"characters ({ascii(case_id)} and {ascii(other)}): the same id to a reader, two to pytest "
                            "and a predictions file", id_line,
                            fix="rename one of them (or write both alike: an editor's NFC normalisation would make "
                                "them the same id)")
        seen[case_id] = id_line
        seen_at[case_id] = position
        composed[key] = (case_id, id_line)
        cases.extend(_expand_case(ctx, entry, case_id, len(cases), suite_dbs, suite_schema))
    return cases


def _case_id(ctx: LoadContext, entry: LineMapping, position: int) -> str:
    if "id" not in entry:
        raise ctx.error(f"case #{position + 1} has no `id`", entry.line, fix="give every case a unique `id:`")
    raw = entry["id"]
    written = getattr(entry, "id_text", None)
    if written and (isinstance(raw, (bool, float)) or hasattr(raw, "isoformat")):  # not "not True", "not 1.5"
        kind = "true/false" if isinstance(raw, bool) else "a number" if isinstance(raw, float) else "a date"
        raise ctx.error(f"the id {written} reads as {kind} in YAML, not as text", entry.key_lines["id"],
                        fix=f"quote it: `id: \"{written}\"`")
    if isinstance(raw, bool) or not isinstance(raw, (str, int)) or not str(raw).strip():
        raise ctx.error(f"case id must be a non-empty string, not {raw!r}", entry.key_lines["id"],
                        fix="write e.g. `id: shop-count` (letters, digits, '-', '_' or '.')")
    case_id = str(raw).strip()
    bad = [ch for ch in ("/", "[", "]", " ", "\t", "::") if ch in case_id]  # `::` splits pytest node ids
    bad += [ch for ch in case_id if not ch.isprintable()]  # a newline or an escape would reach the terminal raw
    if bad:
        raise ctx.error(f"case id {case_id!r} contains {bad[0]!r}", entry.key_lines["id"],
                        fix="use letters, digits, '-', '_' or '.' ('/' and '[n]' address interaction turns, "
                            "'::' separates a suite from a case)")
    return case_id


def _expand_case(
    ctx: LoadContext,
    entry: LineMapping,
    case_id: str,
    first_index: int,
    suite_dbs: tuple[DatabaseSpec, ...],
    suite_schema: SchemaSource | None,
) -> list[Case]:
    lines = entry.key_lines
    databases = case_databases(ctx, entry) or suite_dbs
    schema = schema_source(ctx, entry["schema"], lines["schema"]) if "schema" in entry else suite_schema
    if not databases and schema is None:
        raise ctx.error(f"case {case_id!r} has no database", entry.line,
                        fix="add `database:` to the suite or to the case (a file path or a SQLAlchemy URL)")
    common = dict(
        databases=databases,
        schema=schema,
        difficulty=_difficulty_label(ctx, entry),
        tags=_tags(ctx, entry),
        extra=_metadata(ctx, entry),
        policy=read_policy(ctx, entry["policy"], lines["policy"]) if "policy" in entry else ctx.policy,
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
            question=_text_value(ctx, entry, "question", case_id),
            predicted=_sql_text(ctx, entry, "predicted", case_id, required=False),
            has_prediction="predicted" in entry,
            evidence=_text_value(ctx, entry, "evidence", case_id),
            **common,
        )
    ]


def _turns(ctx: LoadContext, entry: LineMapping, case_id: str, first_index: int, common: dict) -> list[Case]:
    turns = entry["interaction"]
    line = entry.key_lines["interaction"]
    if not isinstance(turns, list) or not turns:
        problem = "has no turns" if not turns else f"must be a list of turns, not {yaml_type(turns)}"
        raise ctx.error(f"interaction {case_id!r} {problem}", line,
                        fix="list its turns: `interaction: [{question: ..., gold: ...}, ...]`")
    cases = []
    for number, turn in enumerate(turns, start=1):
        turn_line = turns.item_lines[number - 1]
        if not isinstance(turn, dict):
            raise ctx.error(f"turn {number} of interaction {case_id!r} is not a mapping", turn_line,
                            fix="write each turn as {question: ..., gold: ..., predicted: ...}")
        check_keys(ctx, turn, TURN_KEYS, f"turn {number} of interaction {case_id!r}",
                   (CASE_KEYS, "a key of the case that holds the interaction, for all its turns",
                    "move it up beside `interaction:`"))
        turn = _without_nulls(turn)
        where = f"{case_id}/{number}"
        turn_common = dict(common)
        if "policy" in turn:
            turn_common["policy"] = read_policy(ctx, turn["policy"], turn.key_lines["policy"])
        cases.append(
            Case(
                id=where,
                index=first_index + number - 1,
                line=turn_line,
                **_gold_forms(ctx, turn, where, common["databases"]),
                question=_text_value(ctx, turn, "question", where),
                predicted=_sql_text(ctx, turn, "predicted", where, required=False),
                has_prediction="predicted" in turn,
                evidence=_text_value(ctx, turn if "evidence" in turn else entry, "evidence", where),
                interaction=case_id,
                turn=number,
                turns=len(turns),
                **turn_common,
            )
        )
    return cases


def _sql_text(ctx: LoadContext, entry: LineMapping, key: str, where: str, *, required: bool) -> str | None:
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
        raise ctx.error(f"`{key}:` of {where!r} must be SQL text, not {yaml_type(value)}", entry.key_lines[key],
                        fix=f"quote the SQL, or use a block scalar: `{key}: |` followed by indented lines")
    if required and not value.strip():
        raise ctx.error(f"`{key}:` of {where!r} is empty", entry.key_lines[key], fix=f"write the {key} SQL after `{key}:`")
    if required and _no_statement(value):
        raise ctx.error(f"`{key}:` of {where!r} holds no SQL statement, only comments, white space or ';' (it would "
                        "run as an empty result every prediction is scored against)", entry.key_lines[key],
                        fix=f"write the {key} query after `{key}:` (or its expected rows under `expected:`)")
    return value


def _no_statement(sql: str) -> bool:
    """Whether gold SQL is only comments and `;` (`-- TODO`): it would run as no statement, an empty result.
    Only a text that starts with a comment or `;` can be one, so other golds are not tokenized at all."""
    if not sql.lstrip().startswith(("--", "/*", ";")):
        return False
    from sqlglot.errors import SqlglotError

    from .sql.limits import raw_tokens

    for text in (sql, sql + "*/"):  # SQLite reads an unterminated /* comment to the end of the text
        try:
            return all(token.text == ";" for token in raw_tokens(text, ""))
        except (SqlglotError, ValueError):  # unreadable: the gold's run will say why
            continue
    return False


def _gold_forms(ctx: LoadContext, entry: LineMapping, where: str, databases: tuple[DatabaseSpec, ...]) -> dict[str, Any]:
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


def _gold_list(ctx: LoadContext, value: list, line: int, where: str) -> tuple[str, ...]:
    if not value:
        raise ctx.error(f"`gold:` of {where!r} is an empty list", line,
                        fix="list the accepted gold queries: `gold: [SELECT ..., SELECT ...]`, or give one")
    golds = []
    for position, item in enumerate(value):
        item_line = value.item_lines[position] if hasattr(value, "item_lines") else line
        if not isinstance(item, str) or not item.strip() or _no_statement(item):
            raise ctx.error(f"gold #{position + 1} of {where!r} must be SQL text, not {item!r}", item_line,
                            fix="each accepted gold is a SQL string; quote it, or use a block scalar `- |`")
        golds.append(item)
    return tuple(golds)


def _expected(ctx: LoadContext, value: Any, line: int, where: str):
    from .suite import ExpectedRows

    example = "`expected: {columns: [shop, n], rows: [[Avionics, 3], [Engines, 2]]}`"
    if not isinstance(value, dict):
        raise ctx.error(f"`expected:` of {where!r} must be a mapping with `rows:` (and `columns:`)", line,
                        fix=f"write {example}")
    check_keys(ctx, value, EXPECTED_KEYS, f"expected of {where!r}")
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
                raise ctx.error(f"expected row {position + 1} of {where!r} holds {yaml_type(cell)}; "
                                "cells are single values", lines["rows"], fix="write numbers, text, true/false or null")
            if not (cell is None or isinstance(cell, (str, int, float)) or hasattr(cell, "isoformat")):
                # a YAML !!binary or !!set: read as its str() it could never match (the bytes b'\x01' as that text)
                raise ctx.error(f"expected row {position + 1} of {where!r} holds {yaml_type(cell)}; cells are numbers, "
                                "text, true/false, dates or null", lines["rows"],
                                fix="write the value as one of those, or give a gold query that returns it "
                                    "(`gold: SELECT x'0102'` for binary data)")
    ordered = value.get("ordered", False)
    if not isinstance(ordered, bool):
        raise ctx.error(f"`ordered:` of the expected rows of {where!r} must be true or false", lines["ordered"],
                        fix="write `ordered: true` to compare the rows in order, or leave it out")
    names = tuple(columns) if columns is not None else tuple(f"c{i}" for i in range(width))
    return ExpectedRows(columns=names, rows=tuple(tuple(_plain(temporal_as_text(c)) for c in r) for r in rows),
                        ordered=ordered)


def _expect_columns(ctx: LoadContext, value: Any, line: int, where: str) -> tuple[str, ...] | int:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise ctx.error(f"`expect_columns:` of {where!r} must be a list of column names or a number of columns, not {value!r}",
                    line, fix="write `expect_columns: [shop, n]` or `expect_columns: 2`")


def _metadata(ctx: LoadContext, entry: LineMapping) -> dict[str, Any]:
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
    if isinstance(value, (set, frozenset)):  # a YAML !!set: a sorted list (str() of a set changes order per process)
        _spend(budget, 2)
        return [_plain(v, budget) for v in sorted(value, key=repr)]
    if value is None or isinstance(value, (str, int, float, bool)):
        _spend(budget, len(value) + 2 if isinstance(value, str) else 8)
        return value
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    _spend(budget, len(text) + 2)
    return text


def _text_value(ctx: LoadContext, mapping: LineMapping, key: str, where: str = "") -> str | None:
    """A text field (`suite:`, `description:`, `question:`, `evidence:`): text or a number (as written), never a
    list, a mapping or a YAML true/false (an unquoted `yes` or `no`), which str() would silently turn into other text."""
    value = mapping.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return mapping.number_texts.get(key, str(value))  # as written: `question: 3.10` is not the text 3.1
    of = f" of {where!r}" if where else ""
    raise ctx.error(f"`{key}:`{of} must be text, not {yaml_type(value)}", mapping.key_lines.get(key, mapping.line),
                    fix=f"quote it: `{key}: \"...\"` (YAML reads unquoted yes/no/true/false as true/false, "
                        "[...] as a list and {...} as a mapping)")


def _difficulty_label(ctx: LoadContext, entry: LineMapping) -> str | None:
    value = entry.get("difficulty")
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):  # a dataset's level number: a label too
        value = entry.number_texts.get("difficulty", str(value))  # as written (`difficulty: 2.10` is "2.10")
    if not isinstance(value, str) or not value.strip():
        raise ctx.error(f"difficulty must be a label such as easy/medium/hard/extra, not {value!r}",
                        entry.key_lines["difficulty"],
                        fix="write e.g. `difficulty: hard`, or leave it out to classify the gold SQL")
    return difficulty_bucket(value.strip())


#: The operators of pytest's -m/-k grammar (_pytest/mark/expression.py): `-m and` is a syntax error, while `in`,
#: `is`, `True` or `None` are mark names like any other.
_EXPRESSION_WORDS = ("and", "or", "not")
_ACTS = {"skip": "skip the case", "skipif": "skip the case", "xfail": "mark the case as expected to fail"}


def _marker_name_for(tag: str) -> str | None:
    """The marker name a label written with '-', '.' or spaces could have (``multi-table`` -> ``multi_table``,
    ``2-hop`` -> ``tag_2_hop``), or None when none reads as one."""
    import re

    name = re.sub(r"\W+", "_", tag.strip()).strip("_")
    name = f"tag_{name}" if name[:1].isdigit() else name
    return name if name.isidentifier() and name not in _EXPRESSION_WORDS and name not in _ACTS else None


def _tags(ctx: LoadContext, entry: LineMapping) -> tuple[str, ...]:
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
        if isinstance(tag, bool) or tag is None:  # `yes`, `on`, `true`, `null`: YAML 1.1 reads a boolean or null
            raise ctx.error(f"tag {tag!r} is read by YAML as {'null' if tag is None else 'a boolean'}, not a name",
                            line, fix='quote it (`tags: ["yes"]`)')
        if not isinstance(tag, str) or not tag.isidentifier():
            rule = "letters, digits and '_', starting with a letter: tags become pytest markers usable with -m"
            name = _marker_name_for(tag) if isinstance(tag, str) else None
            raise ctx.error(f"tag {tag!r} is not a valid marker name", line,
                            fix=f"write it as `{name}` ({rule})" if name else f"use {rule}")
        if tag in _EXPRESSION_WORDS or tag.startswith("_"):
            why = "starts with '_', which pytest refuses in a marker name" if tag.startswith("_") else \
                "is an operator of pytest's -m expressions, so `-m` could never select it"
            raise ctx.error(f"tag {tag!r} {why}", line,
                            fix=f"rename the tag, e.g. `{tag.strip('_') or 'tag'}_case` (tags become pytest markers "
                                "usable with -m)")
        if tag in RESERVED_TAGS:
            acts = _ACTS.get(tag, "change how the case is collected or run")
            raise ctx.error(f"tag {tag!r} is the name of a pytest marker that acts on the test (it would {acts})",
                            line, fix=f"rename the tag, e.g. `{tag}_case` (tags become pytest markers usable with -m)")
        if tag not in tags:  # `tags: [x, x]` (often from a merge key and an own list): one label, listed once
            tags.append(tag)
    return tuple(tags)

