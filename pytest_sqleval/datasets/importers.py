"""Importers: public text-to-SQL datasets -> ``*.sqleval.yaml`` suites (+ a predictions JSONL).

``sqleval import spider|sparc|cosql|bird|logiccat SRC -o DIR [--predictions FILE]``

One suite per database: a suite then has one ``database:`` and one ``schema:`` line at the top (the
cases stay short), a database that is missing or schema-only fails or is flagged as one suite (not
as hundreds of cases), and ``pytest -k <db_id>`` runs one database. Case ids keep the dataset's
own addressing across suites (Spider ``q0042`` = question 42 from 0, line 43 of the gold file; SParC/CoSQL
``i0007/2`` = turn 2 (from 1) of interaction 7 (from 0); BIRD ``q1471`` = its ``question_id``). With predictions, each
suite gets its own ``predictions/<db>.jsonl`` (the suite's ``predictions:`` key, so ``pytest --sqleval
DIR/<db>.sqleval.yaml`` runs one database), and ``predictions.jsonl`` holds them all (for
``--sqleval-predictions``, e.g. to swap in another system's file).

Databases and ``tables.json`` are referenced by a path relative to the suite file, never copied.

Prediction files in the official line format are read with the official rules: a line is
``l.strip().split('\\t')[0]``; a blank line ends an interaction (SParC/CoSQL); the turns of
interaction *k* pair with the gold turns of interaction *k* (``zip``: a missing prediction is
recorded as ``"sql": null``, i.e. no prediction). For Spider/SParC/CoSQL the official
test-suite-sql-eval run's text rewrites are applied (see :func:`official_text`), as the official
numbers depend on them; ``official_rewrites=False`` turns them off.
"""

from __future__ import annotations

import io
import json
import os
import re
import sqlite3
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import yaml

DATASETS = ("spider", "sparc", "cosql", "bird", "logiccat")


class DatasetError(Exception):
    """Bad input to an importer: the message names the file and the fix."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message + (f"; fix: {fix}" if fix else ""))
        self.message = message
        self.fix = fix


# --------------------------------------------------------------------------- official reading rules
_CURDATE_YEAR = re.compile(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", re.IGNORECASE)  # official quirk, reproduced


def official_text(sql: str, *, prediction: bool) -> str:
    """The text test-suite-sql-eval executes and parses for a gold or a prediction line.

    ``replace("value", "1")`` on a prediction; ``"> ="``/``"< ="``/``"! ="`` joined; ``YEAR(CURDATE())``
    replaced by 2020. These are quirks of that script's input handling, reproduced on purpose.
    """
    if prediction:
        sql = sql.replace("value", "1")
    sql = sql.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")
    return _CURDATE_YEAR.sub("2020", sql)


def read_interactions(path: Path, *, keep_unclosed_last: bool = True) -> list[list[list[str]]]:
    """The official reading: each non-blank line stripped and split on TAB; a blank line ends an interaction.

    A last interaction that no blank line closes is kept (test-suite-sql-eval) unless ``keep_unclosed_last``
    is False (the old SParC script dropped it).
    """
    interactions: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in _official_lines(path):
        if not line.strip():
            interactions.append(current)
            current = []
        else:
            current.append(line.strip().split("\t"))
    if current and keep_unclosed_last:
        interactions.append(current)
    return interactions


def _official_lines(path: Path) -> list[str]:
    """The lines as the official scripts' ``f.readlines()`` gives them: only a line end (``\\n``, ``\\r\\n``, ``\\r``)
    ends a line; a form feed or U+2028 inside a model's SQL does not (``str.splitlines`` would split there)."""
    return io.StringIO(_read_text(path)).readlines()


def _gold_lines(path: Path) -> list[tuple[int, list[str]]]:
    """(line number in the file, fields) of each non-blank line, read as :func:`read_interactions` reads it."""
    return [(number, line.strip().split("\t")) for number, line in enumerate(_official_lines(path), start=1)
            if line.strip()]


def read_prediction_lines(path: Path) -> list[list[str | None]]:
    """Predictions per interaction: ``l.strip().split('\\t')[0]`` for each line."""
    return [[fields[0] for fields in turns] for turns in read_interactions(path)]


def _read_text(path: Path) -> str:
    """The file as text. A UTF-8 byte-order mark (Windows editors write one) is no part of the first SQL or JSON
    value: ``utf-8-sig`` drops it."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DatasetError(f"file not found: {path}", "check the path") from None
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        raise DatasetError(f"{path} line {line} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                           "save the file as UTF-8") from None


def _read_json(path: Path) -> Any:
    text = _read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        several = exc.msg == "Extra data"  # a JSON Lines file (one object per line) named .json
        raise DatasetError(f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                           "the file holds several JSON values (JSON Lines?): give one that is a single JSON value, "
                           "as the dataset's files and BIRD's predict_*.json are; JSON Lines predictions "
                           "({\"id\": ..., \"sql\": ...}) go to pytest --sqleval-predictions"
                           if several else "correct the JSON there, or give the dataset's file as released") from None
    if _SURROGATE_ESCAPE.search(text):  # UTF-8 text holds no surrogate: only a `\ud83d` escape decodes to one
        _refuse_lone_surrogates(path, data)
    return data


#: Half a UTF-16 pair, no character: a JSON ``\\ud83d`` escape without its pair decodes to one. No UTF-8 file can hold it.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(path: Path, data: Any) -> None:
    """A ``\\ud800`` escape without its pair in a JSON string is half a UTF-16 character, no character: no UTF-8
    file (a suite, a predictions file) can hold it, and a suite written with its YAML escape does not load."""
    for where, text in _json_strings(data):
        found = LONE_SURROGATE.search(text)
        if found:
            raise DatasetError(f"{path}: {where or 'the file'} holds a lone surrogate \\u{ord(found.group()):04x} (half "
                               f"of a UTF-16 pair, no character) at character {found.start()}",
                               "correct that text: write the character itself, or both \\u escapes of its pair")


def _json_strings(data: Any) -> Iterable[tuple[str, str]]:
    """(where, text) of every string of a JSON value, keys included, in file order: ``entry 2 (counted from 0)
    "question"``; keys are shown JSON-escaped, so that a message never holds the text it reports."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            yield where, value
        elif isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                inner = f"{where} {json.dumps(key)}".strip()
                stack.extend(((inner, item), (f"{inner} (its key)", key)))
        elif isinstance(value, list):
            stack.extend((f"{where} item {index}" if where else f"entry {index} (counted from 0)", item)
                         for index, item in reversed(list(enumerate(value))))


# --------------------------------------------------------------------------- the dataset model
@dataclass
class Item:
    """One question (or one turn) of a dataset."""

    id: str  # the case id, or the interaction id for a turn
    db_id: str
    gold: str
    question: str | None = None
    turn: int | None = None  # 1-based turn of an interaction
    position: int | None = None  # 0-based place of its interaction in the source, empty interactions counted
    evidence: str | None = None
    difficulty: str | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def case_id(self) -> str:
        return f"{self.id}/{self.turn}" if self.turn is not None else self.id


@dataclass
class Dataset:
    name: str
    items: list[Item]
    tables_json: Path | None = None  # Spider-style schema file with every db_id (the suite `schema:` key)
    databases: dict[str, Path | None] = field(default_factory=dict)  # db_id -> file (None: not found)
    expected_database: dict[str, Path] = field(default_factory=dict)  # db_id -> where it was looked for
    suite_keys: dict[str, Any] = field(default_factory=dict)  # execution/exact_match/pass_if
    description: str = ""
    warnings: list[str] = field(default_factory=list)
    schema_only: set[str] = field(default_factory=set)  # db_ids whose database has no rows at all
    interactions: int | None = None  # interactions in the source, empty ones included (they pair with predictions)
    source: Path | None = None  # the questions or gold file read (named when it holds no questions)


@dataclass
class ImportResult:
    dataset: str
    suites: list[Path]
    cases: int
    predictions_path: Path | None = None
    predictions: int = 0
    missing_predictions: int = 0
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- readers
def _find(src: Path, candidates: Sequence[str], what: str, fix: str) -> Path:
    if src.is_file():
        return src
    for name in candidates:
        if (src / name).is_file():
            return src / name
    raise DatasetError(f"no {what} in {src} (looked for {', '.join(candidates)})", fix)


def _beside(src: Path, explicit: str | Path | None, names: Sequence[str]) -> Path | None:
    if explicit is not None:
        path = Path(explicit)
        if not path.exists():
            raise DatasetError(f"not found: {path}", "check the path")
        return path
    base = src if src.is_dir() else src.parent
    for name in names:
        if (base / name).exists():
            return base / name
    return None


def _spider_database_paths(db_ids: Iterable[str], directory: Path | None) -> tuple[dict, dict]:
    found: dict[str, Path | None] = {}
    expected: dict[str, Path] = {}
    for db_id in db_ids:
        if directory is None:
            found[db_id] = None
            continue
        path = directory / db_id / f"{db_id}.sqlite"
        expected[db_id] = path
        found[db_id] = path if path.is_file() else None
    return found, expected


def read_spider(src: Path, *, tables: str | None = None, databases: str | None = None,
                split: str = "dev", official_rewrites: bool = True) -> Dataset:
    """Spider: ``SRC`` = the Spider folder (``<split>.json``, ``tables.json``, ``database/``), a questions
    JSON file (``dev.json``), or a gold file in the official line format (``gold SQL \\t db_id``)."""
    path = _find(src, (f"{split}.json", f"{split}_spider.json", f"{split}_gold.sql"), "Spider questions",
                 f"give the Spider folder, its {split}.json or {split}_gold.sql")
    items: list[Item] = []
    if path.suffix == ".json":
        data = _read_json(path)
        _check_entries(path, data, ("db_id", "query"), "a Spider questions file (a list of {db_id, question, query})",
                       "give dev.json of the Spider release")
        for index, entry in enumerate(data):
            where = f"question {index} (q{index:04d})"
            items.append(Item(f"q{index:04d}", _text(path, where, entry, "db_id"),
                              _gold(_text(path, where, entry, "query"), official_rewrites),
                              question=_text(path, where, entry, "question", required=False)))
    else:
        for index, (line, fields) in enumerate(_gold_lines(path)):
            if len(fields) < 2 or not fields[1].strip():
                raise DatasetError(f"{path} line {line}: expected `gold SQL<TAB>db_id`",
                                   "give the official gold file (dev_gold.sql)")
            items.append(Item(f"q{index:04d}", fields[1], _gold(fields[0], official_rewrites)))
    # the test release keeps test_tables.json and test_database/ beside the train/dev tables.json and database/
    tables_path = _beside(path, tables, (f"{split}_tables.json", "tables.json"))
    db_dir = _beside(path, databases, (f"{split}_database", "database"))
    found, expected = _spider_database_paths(OrderedDict.fromkeys(i.db_id for i in items), db_dir)
    return Dataset("spider", items, tables_json=tables_path, databases=found, expected_database=expected, source=path,
                   suite_keys={"execution": "test-suite", "exact_match": "spider", "pass_if": "execution_match"},
                   description=f"Spider ({path.name})")


def _check_entries(path: Path, data: Any, keys: Sequence[str], what: str, fix: str) -> None:
    """``data`` is a list of objects with ``keys``: else the file is not ``what``, or (when its first entry is
    one) the first entry that is not is named, by its place in the list."""
    def missing(entry: Any) -> str | None:
        if not isinstance(entry, dict):
            return "is not an object"
        return next((f"has no `{key}`" for key in keys if key not in entry), None)

    if not isinstance(data, list) or (data and missing(data[0])):
        raise DatasetError(f"{path} is not {what}", fix)
    bad = next((index for index, entry in enumerate(data) if missing(entry)), None)
    if bad is not None:
        raise DatasetError(f"{path}: entry {bad} (counted from 0) {missing(data[bad])}",
                           f"give it {', '.join(f'`{k}`' for k in keys)}, or remove entry {bad}")


def _text(path: Path, where: str, entry: dict, key: str, *, required: bool = True) -> str | None:
    """``entry[key]`` as text: a required key is a non-empty string, an optional one a string or null."""
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise DatasetError(f"{path}: {where} has `{key}`: {json.dumps(value, ensure_ascii=False)}, "
                           f"not {'a non-empty' if required else 'a'} string",
                           f"give `{key}` as text or remove {where}")
    return value


def _one_line(sql: str) -> str:
    """The SQL on one line (:func:`~pytest_sqleval.sql.spacing.collapse_white_space`: white space inside a literal
    or a quoted name is the value's), unless a ``--`` comment would then swallow the rest of the query."""
    from ..sql.spacing import collapse_white_space

    if "--" in sql:
        return sql.strip()
    return collapse_white_space(sql)


def _gold(sql: str, rewrites: bool) -> str:
    sql = _one_line(sql) if "\n" in sql or "\t" in sql else sql
    return official_text(sql, prediction=False) if rewrites else sql


def read_multiturn(kind: str, src: Path, *, tables: str | None = None, databases: str | None = None,
                   split: str = "dev", official_rewrites: bool = True) -> Dataset:
    """SParC / CoSQL: ``SRC`` = the release folder or its ``dev.json`` (``cosql_dev.json``), a list of
    ``{database_id, interaction: [{utterance, query}]}``, or a gold file in the official line format
    (``gold SQL \\t db_id`` per turn, a blank line after each interaction)."""
    candidates = (f"{split}.json", f"cosql_{split}.json", f"sql_state_tracking/cosql_{split}.json", f"{split}_gold.txt")
    path = _find(src, candidates, f"{kind} interactions",
                 f"give the {kind} folder, its {split}.json or {split}_gold.txt (a gold file)")
    items: list[Item] = []
    if path.suffix == ".json":
        data = _read_json(path)
        _check_entries(path, data, ("interaction",), f"a {kind} interactions file (a list of {{database_id, interaction}})",
                       f"give dev.json of the {kind} release")
        for number, entry in enumerate(data):
            db_id = entry.get("database_id") or entry.get("db_id")
            if not isinstance(db_id, str) or not isinstance(entry["interaction"], list) \
                    or not all(isinstance(u, dict) and isinstance(u.get("query"), str) for u in entry["interaction"]):
                raise DatasetError(f"{path}: interaction {number} needs `database_id` and turns with `query`",
                                   f"give dev.json of the {kind} release")
            for turn, utterance in enumerate(entry["interaction"], start=1):
                where = f"turn {turn} of interaction {number} (i{number:04d}/{turn})"
                items.append(Item(f"i{number:04d}", db_id, _gold(_text(path, where, utterance, "query"), official_rewrites),
                                  question=_text(path, where, utterance, "utterance", required=False),
                                  turn=turn, position=number))
        count = len(data)
    else:
        gold = read_interactions(path)
        count = len(gold)
        for number, turns in enumerate(gold):
            for turn, fields in enumerate(turns, start=1):
                if len(fields) < 2:
                    raise DatasetError(f"{path}: turn {turn} of interaction {number} has no db_id",
                                       "each line is `gold SQL<TAB>db_id`, a blank line after each interaction")
                items.append(Item(f"i{number:04d}", fields[1], _gold(fields[0], official_rewrites), turn=turn,
                                  position=number))
    # beside the questions file, else at the top of the folder given (CoSQL: sql_state_tracking/cosql_dev.json)
    top = src if src.is_dir() else path
    tables_path = _beside(path, tables, (f"{split}_tables.json", "tables.json")) \
        or _beside(top, None, (f"{split}_tables.json", "tables.json"))
    db_dir = _beside(path, databases, (f"{split}_database", "database")) \
        or _beside(top, None, (f"{split}_database", "database"))
    found, expected = _spider_database_paths(OrderedDict.fromkeys(i.db_id for i in items), db_dir)
    return Dataset(kind, items, tables_json=tables_path, databases=found, expected_database=expected,
                   interactions=count, source=path,
                   # question match and interaction match are exact set match over turns (SParC, CoSQL papers)
                   suite_keys={"execution": "test-suite", "exact_match": "spider", "pass_if": "exact_match"},
                   description=f"{kind.upper() if kind == 'cosql' else 'SParC'} ({path.name})")


BIRD_DIFFICULTIES = ("simple", "moderate", "challenging")


def read_bird(src: Path, *, tables: str | None = None, databases: str | None = None, split: str = "dev",
              official_rewrites: bool = True) -> Dataset:
    """BIRD (dev or mini-dev): ``SRC`` = the folder or its questions JSON (``dev.json``,
    ``mini_dev_sqlite.json``): ``{question_id, db_id, question, evidence, SQL, difficulty}``.
    Databases: ``dev_databases/<db>/<db>.sqlite`` beside it (or ``--databases``)."""
    path = _find(src, (f"mini_{split}_sqlite.json", f"{split}.json", f"mini_{split}.json"), "BIRD questions",
                 f"give the BIRD folder or its {split}.json or mini_{split}_sqlite.json")
    if path.suffix.lower() != ".json":
        raise DatasetError(f"{path} is not a BIRD questions file: a gold file has no questions, evidence or "
                           f"difficulty", "give the BIRD folder or its dev.json / mini_dev_sqlite.json")
    data = _read_json(path)
    _check_entries(path, data, ("db_id", "SQL"), "a BIRD questions file (a list of {question_id, db_id, question, SQL})",
                   "give dev.json or mini_dev_sqlite.json of the BIRD release")
    items = []
    seen: dict[str, int] = {}
    renamed: list[str] = []
    for index, entry in enumerate(data):
        qid = entry.get("question_id", index)
        case_id = "q" + re.sub(r"[^A-Za-z0-9_.-]", "_", str(qid))  # a case id takes no '/', space or '::' (the loader's rule)
        if case_id in seen:
            renamed.append(f"entry {index} (question_id {json.dumps(qid, ensure_ascii=False)}, as entry "
                           f"{seen[case_id]}) is case {case_id}_{index}")
            case_id = f"{case_id}_{index}"
        seen.setdefault(case_id, index)
        difficulty = entry.get("difficulty")
        if difficulty is not None and difficulty not in BIRD_DIFFICULTIES:
            raise DatasetError(f"{path}: question {qid} has difficulty {difficulty!r}",
                               f"BIRD difficulties are {', '.join(BIRD_DIFFICULTIES)}")
        where = f"question {qid} ({case_id})"
        items.append(Item(case_id, _text(path, where, entry, "db_id"),
                          _one_line(_text(path, where, entry, "SQL")),
                          question=_text(path, where, entry, "question", required=False),
                          evidence=_text(path, where, entry, "evidence", required=False) or None,
                          difficulty=difficulty, metadata={"question_id": qid}))
    tables_path = _beside(path, tables, (f"{split}_tables.json", "dev_tables.json", "tables.json"))
    db_dir = _beside(path, databases, (f"{split}_databases", "dev_databases", "databases"))
    if db_dir is None:
        db_dir = (path.parent / f"{split}_databases")
    found, expected = _spider_database_paths(OrderedDict.fromkeys(i.db_id for i in items), db_dir)
    dataset = Dataset("bird", items, tables_json=tables_path, databases=found, expected_database=expected, source=path,
                      suite_keys={"execution": "bird", "pass_if": "execution_match"},
                      description=f"BIRD ({path.name})")
    if renamed:  # two questions with one id: both are kept, the later one under a case id of its own
        dataset.warnings.append(f"{path}: {len(renamed)} question_id(s) repeat an earlier one: "
                                f"{'; '.join(renamed[:3])}{'; ...' if len(renamed) > 3 else ''} "
                                "(give each question its own question_id to keep the dataset's ids)")
    return dataset


def _normalised(name: str) -> str:
    """Letters of any script and digits, case folded; not separators. Unicode-normalised (NFKC) first: a file name
    written on macOS holds ``é`` as ``e`` + a combining accent (NFD), which ``\\W`` would cut to a plain ``e``, so
    that ``Café`` in the questions (NFC) would not find ``Café.db``, and ``cafe`` would."""
    return re.sub(r"[\W_]", "", unicodedata.normalize("NFKC", name).casefold())


def resolve_database_files(db_ids: Iterable[str], directory: Path) -> dict[str, Path | None]:
    """db_id -> database file, matching names case- and separator-insensitively (LogicCat's ``AirCraft`` is
    ``aircraft.db``, ``waterPump`` is ``water pump.db``, ``electric_scooter`` is ``electric scooter.db``)."""
    files = sorted(p for p in directory.iterdir() if p.suffix.lower() in (".db", ".sqlite", ".sqlite3"))
    by_name: dict[str, list[Path]] = {}
    for file in files:
        by_name.setdefault(_normalised(file.stem), []).append(file)
    resolved: dict[str, Path | None] = {}
    for db_id in db_ids:
        exact = [f for f in files if f.stem == db_id]
        matches = exact or by_name.get(_normalised(db_id), [])
        if len(matches) > 1:
            raise DatasetError(f"db_id {db_id!r} matches several files in {directory}: "
                               f"{', '.join(m.name for m in matches)}", "remove or rename the extra file")
        resolved[db_id] = matches[0] if matches else None
    return resolved


def read_logiccat(src: Path, *, tables: str | None = None, databases: str | None = None, split: str = "dev",
                  official_rewrites: bool = True) -> Dataset:
    """LogicCat: ``SRC`` = the folder (``miniset/sqlite_mini_500.json`` with questions, else ``data.sql``), a
    questions JSON (``{db_id, type, idx, question, query, step}``) or a gold file ``SQL \\t db_id \\t type``.
    Databases: ``sqlite_database/`` beside it (or ``--databases``); file names are matched to db_ids."""
    path = _find(src, ("miniset/sqlite_mini_500.json", "data.json", "data.sql"), "LogicCat questions",
                 "give the LogicCat folder, a questions JSON or data.sql")
    items: list[Item] = []
    warnings: list[str] = []
    if path.suffix == ".json":
        data = _read_json(path)
        _check_entries(path, data, ("db_id", "query"), "a LogicCat questions file (a list of {db_id, question, query, type})",
                       "give LogicCat's sqlite_mini_500.json or data.json")
        idx = [e.get("idx") for e in data]
        unique = all(isinstance(i, int) and not isinstance(i, bool) for i in idx) and len(set(idx)) == len(idx)
        if not unique and any(i is not None for i in idx):
            warnings.append(f"{path}: {_idx_problem(idx)}: the cases are numbered by their place in the file (q0000 "
                            "is entry 0), not by idx; give each question its own whole-number idx to keep them")
        for index, entry in enumerate(data):
            kind = "" if entry.get("type") is None else str(entry["type"]).strip()  # `"type": null`: no category
            metadata = {"type": kind} if kind else {}
            if entry.get("step"):
                metadata["reasoning"] = entry["step"]
            where = f"question {index} (q{entry['idx'] if unique else index:04d})"
            items.append(Item(f"q{entry['idx'] if unique else index:04d}", _text(path, where, entry, "db_id"),
                              _one_line(_text(path, where, entry, "query")),
                              question=_text(path, where, entry, "question", required=False),
                              tags=_category_tags(kind), metadata=metadata))
    else:
        for index, (line, fields) in enumerate(_gold_lines(path)):
            if len(fields) < 2 or not fields[1].strip():
                raise DatasetError(f"{path} line {line}: expected `SQL<TAB>db_id<TAB>type`",
                                   "give LogicCat's data.sql or sqlite_mini_500.sql")
            kind = fields[2].strip() if len(fields) > 2 else ""
            items.append(Item(f"q{index:04d}", fields[1], fields[0], tags=_category_tags(kind),
                              metadata={"type": kind} if kind else {}))
    base = path.parent.parent if path.parent.name == "miniset" else path.parent
    db_dir = Path(databases) if databases else next((base / n for n in ("sqlite_database", "Sqlite/database", "database")
                                                     if (base / n).is_dir()), None)
    if db_dir is None or not db_dir.is_dir():
        raise DatasetError(f"no LogicCat database folder beside {path}", "pass --databases DIR (Sqlite/database)")
    db_ids = list(OrderedDict.fromkeys(i.db_id for i in items))
    found = resolve_database_files(db_ids, db_dir)
    expected = {db: db_dir / f"{db}.db" for db in db_ids}
    tables_path = _beside(path if path.parent.name != "miniset" else path.parent, tables, ("table.json", "tables.json"))
    dataset = Dataset("logiccat", items, tables_json=None, databases=found, expected_database=expected, source=path,
                      suite_keys={"execution": "logiccat", "pass_if": "execution_match"},
                      description=f"LogicCat ({path.name})")
    dataset.warnings.extend(warnings)
    for db_id, file in found.items():
        if file is not None and db_id != file.stem:
            dataset.warnings.append(f"resolved LogicCat db_id {db_id!r} to the file {file.name!r}")
    del tables_path  # LogicCat's table.json has no *_original names; the schema is read from the database
    return dataset


def _idx_problem(idx: list[Any]) -> str:
    """The first entry whose LogicCat ``idx`` is no whole number or repeats an earlier one."""
    first: dict[int, int] = {}
    for number, value in enumerate(idx):
        if not isinstance(value, int) or isinstance(value, bool):
            return f"entry {number} has idx {json.dumps(value, ensure_ascii=False)}, not a whole number"
        if value in first:
            return f"entry {number} has idx {value}, as entry {first[value]}"
        first[value] = number
    return "the idx values are not unique"


def _category_tags(kind: str) -> tuple[str, ...]:
    """LogicCat's category as a tag (a pytest marker): ``1`` -> ``type_1``, ``math reasoning`` -> ``type_math_reasoning``
    (a marker name holds letters, digits and ``_``); no category, no tag."""
    name = "_".join("".join(ch if f"_{ch}".isidentifier() else " " for ch in kind).split())
    return (f"type_{name}",) if name else ()


READERS = {"spider": read_spider, "sparc": lambda *a, **k: read_multiturn("sparc", *a, **k),
           "cosql": lambda *a, **k: read_multiturn("cosql", *a, **k), "bird": read_bird, "logiccat": read_logiccat}


# --------------------------------------------------------------------------- predictions
def read_predictions(dataset: Dataset, path: Path, *, official_rewrites: bool = True) -> tuple[dict[str, str | None], list[str]]:
    """case id -> predicted SQL, from the official formats; and warnings (counts that do not line up)."""
    warnings: list[str] = []
    rewrite = official_rewrites and dataset.name in ("spider", "sparc", "cosql")
    predicted: dict[str, str | None] = {}
    if path.suffix.lower() == ".json":
        data = _read_json(path)
        if not isinstance(data, dict):
            raise DatasetError(f"{path}: a JSON predictions file is a mapping {{index: \"SQL\\t----- bird -----\\tdb_id\"}}",
                               "give the official BIRD predict_*.json, or a text file with one SQL per line")
        for key, value in data.items():
            try:
                index = int(key)
            except ValueError:
                raise DatasetError(f"{path}: key {key!r} is not a question index", "keys are 0, 1, 2, ...") from None
            if not 0 <= index < len(dataset.items):
                raise DatasetError(f"{path}: index {index} is outside the {len(dataset.items)} questions",
                                   f"give the predictions file of these questions (keys 0 to {len(dataset.items) - 1})")
            sql, _, db_id = str(value).partition("\t----- bird -----\t") if value is not None else (None, "", "")
            item = dataset.items[index]
            predicted[item.case_id] = sql
            if db_id.strip() and db_id.strip() != item.db_id and len(warnings) < 5:
                warnings.append(f"{path}: the prediction for {item.case_id} names database {db_id.strip()}, "
                                f"its question {item.db_id} (is this the predictions file of these questions?)")
        if len(data) != len(dataset.items):
            warnings.append(f"{path} has {len(data)} predictions for {len(dataset.items)} questions")
    else:
        _refuse_csv(path)
        _refuse_json_lines(path)
        lines = read_prediction_lines(path)
        if any(item.turn is not None for item in dataset.items):  # interactions pair with interactions
            # interaction k of the file pairs with interaction k of the gold, empty ones included (official zip)
            groups: OrderedDict[int, list[Item]] = OrderedDict()
            order: dict[str, int] = {}
            for item in dataset.items:
                position = item.position if item.position is not None else order.setdefault(item.id, len(order))
                groups.setdefault(position, []).append(item)
            for position, preds in enumerate(lines):
                for item, sql in zip(groups.get(position, ()), preds):
                    predicted[item.case_id] = sql
            expected = dataset.interactions if dataset.interactions is not None else len(groups)
            if len(lines) != expected:
                warnings.append(f"{path} has {len(lines)} interactions for {expected} in the gold")
            warnings.extend(_turn_count_warnings(path, lines[:expected], groups))
        else:
            _refuse_blank_line_inside(path)
            flat = [sql for turns in lines for sql in turns]
            for item, sql in zip(dataset.items, flat):
                predicted[item.case_id] = sql
            if len(flat) != len(dataset.items):
                warnings.append(f"{path} has {len(flat)} predictions for {len(dataset.items)} questions")
    if rewrite:
        predicted = {k: official_text(v, prediction=True) if v is not None else None for k, v in predicted.items()}
    return predicted, warnings


def _turn_count_warnings(path: Path, lines: list[list[str | None]], groups: dict[int, list[Item]],
                         shown: int = 5) -> list[str]:
    """Interactions whose predicted turns do not line up with the gold's (an extra line is never scored, a missing
    one is no prediction): the first ``shown`` by name, then how many more."""
    differ = [(position, len(preds), groups.get(position, [])) for position, preds in enumerate(lines)
              if len(preds) != len(groups.get(position, []))]
    warnings = [f"{path}: interaction {position}{f' ({gold[0].id})' if gold else ''} has {count} "
                f"turn{'' if count == 1 else 's'} for {len(gold)} in the gold" for position, count, gold in differ[:shown]]
    if len(differ) > shown:
        warnings.append(f"{path}: {len(differ) - shown} more interactions have a turn count unlike the gold's")
    return warnings


def _refuse_csv(path: Path) -> None:
    """A CSV (DIN-SQL's `NLQ,PREDICTED SQL,GOLD SQL,DATABASE`) is no file of one SQL per line: read as one, its header
    pairs with the first question and each row's question text, gold SQL and db_id become part of the prediction."""
    if path.suffix.lower() == ".csv":
        raise DatasetError(f"{path} is a CSV file, not the official format (one SQL per line, or BIRD's "
                           "predict_*.json)", "write its predicted-SQL column to a text file, one SQL per line in "
                                              "the order of the questions, and pass that file to --predictions")


def _refuse_json_lines(path: Path) -> None:
    """A line that is a JSON object is no SQL: the plugin's own JSON Lines predictions (``{"id", "sql"}``) given
    to ``--predictions`` would otherwise become one syntax miss per question."""
    for number, line in enumerate(_official_lines(path), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            return
        if isinstance(value, dict):
            raise DatasetError(f"{path} line {number} is a JSON object, not SQL: --predictions takes the official "
                               "format (one SQL per line, or BIRD's predict_*.json)",
                               "pass JSON Lines predictions ({\"id\": ..., \"sql\": ...}) to pytest with "
                               "--sqleval-predictions FILE instead")
        return


def _refuse_blank_line_inside(path: Path) -> None:
    """One SQL per line, aligned with the questions: a blank line before the last prediction would pair every
    later prediction with the question before it (the official evaluator refuses the file: two sessions)."""
    lines = _official_lines(path)
    last = max((number for number, line in enumerate(lines, start=1) if line.strip()), default=0)
    blank = next((number for number, line in enumerate(lines[:last], start=1) if not line.strip()), None)
    if blank is not None:
        raise DatasetError(f"{path} line {blank} is blank: the file has one SQL per line, aligned with the questions, "
                           f"so every prediction after it would pair with the question before its own",
                           "write one line per question: a question the model left unanswered needs a placeholder "
                           "line (e.g. `SELECT`, a miss), or pass JSON Lines with \"sql\": null to "
                           "--sqleval-predictions; remove the blank line if it is no answer")


# --------------------------------------------------------------------------- writing
def _missing_databases_warning(kind: str, dataset: Dataset, missing: list[str]) -> str:
    """How many databases were not found, where they were looked for, and, when a database folder holds them side
    by side (``DIR/shop.sqlite``) rather than in a folder each (``DIR/shop/shop.sqlite``, the layout of Spider's
    and BIRD's releases, which their evaluators open), that fix."""
    expected = [dataset.expected_database[d] for d in missing if d in dataset.expected_database]
    where = sorted({str(path.parent.parent if kind != "logiccat" else path.parent) for path in expected})
    message = (f"{len(missing)} of {len(dataset.databases)} databases not found "
               f"({', '.join(missing[:8])}{', ...' if len(missing) > 8 else ''})"
               + (f" under {', '.join(where)}" if where else ""))
    if not expected or kind == "logiccat":
        return message
    message += f"; looked for {expected[0]}"
    flat = [path.parent.parent / path.name for path in expected if (path.parent.parent / path.name).is_file()]
    if flat:
        message += (f"; {flat[0]} is there: put each database in a folder named by its db_id "
                    f"({expected[0].parent.name}/{expected[0].name}), as the dataset's release does")
    return message


def _no_questions(dataset: Dataset, src: Path, split: str) -> DatasetError:
    """The error of a dataset without one question, naming the file read (not just the folder given) and the fix."""
    path = dataset.source or src
    empty = (f" ({dataset.interactions} interaction{'' if dataset.interactions == 1 else 's'}, all without turns)"
             if dataset.interactions else "")
    other = ("give LogicCat's sqlite_mini_500.json or data.sql" if dataset.name == "logiccat" else
             f"give the file of a split that has questions (this import read the {split} split: --split names another)")
    return DatasetError(f"{path} holds no questions{empty}", f"{other}, or add its questions to the file")


def _relative(target: Path, start: Path) -> str:
    """A path relative to the suite folder when both share a folder below the root, else absolute."""
    target, start = target.resolve(), start.resolve()
    if os.path.commonpath([target, start]) == os.path.sep:
        return str(target)
    return os.path.relpath(target, start)


def _schema_only(path: Path) -> bool:
    """True when every table of the SQLite file is empty (the database has a schema but no rows)."""
    try:  # a percent-encoded URI: a '#' or '?' in a file name would cut off `mode=ro` and create a file
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
        return bool(names) and all(
            conn.execute(f'SELECT 1 FROM "{n.replace(chr(34), chr(34) * 2)}" LIMIT 1').fetchone() is None for n in names)
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def _file_name(db_id: str) -> str:
    """``db_id`` as a file name: other characters than letters, digits, ``_.-`` become ``_``, and so do leading dots
    (``.hidden`` would be a hidden file that ``ls`` and a file browser do not show; ``..`` names no file)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", db_id)
    dots = len(name) - len(name.lstrip("."))
    return "_" * dots + name[dots:] if name else "_"


#: Datasets over Spider's databases whose suites are named ``<dataset>/<db_id>``: named ``<db_id>`` like Spider's
#: (whose names stay as they were), a Spider and a SParC import could not run in one invocation (one suite name).
PREFIXED_SUITE_NAMES = ("sparc", "cosql")


def suite_name(dataset: str, db_id: str) -> str:
    """The ``suite:`` name of a database's suite: the db_id (Spider, BIRD, LogicCat), ``sparc/<db_id>``, ``cosql/<db_id>``."""
    return f"{dataset}/{db_id}" if dataset in PREFIXED_SUITE_NAMES else db_id


def suite_documents(dataset: Dataset, out: Path) -> dict[str, dict]:
    """file name -> suite document, one per database, cases in dataset order."""
    by_db: OrderedDict[str, list[Item]] = OrderedDict()
    for item in dataset.items:
        by_db.setdefault(item.db_id, []).append(item)
    known_ids = _tables_db_ids(dataset.tables_json) if dataset.tables_json else set()
    documents: dict[str, dict] = {}
    for db_id, items in by_db.items():
        document: dict[str, Any] = {"suite": suite_name(dataset.name, db_id)}
        notes = [f"{dataset.description}, database {db_id}; imported by `sqleval import {dataset.name}`."]
        database = dataset.databases.get(db_id)
        tags: tuple[str, ...] = ()
        suite_keys = dict(dataset.suite_keys)
        if database is not None:
            variants = _test_suite_variants(database) if dataset.name in TEST_SUITE_DATASETS else []
            if variants:  # the test-suite release: the official script runs each query on every database there
                document["databases"] = [_relative(d, out) for d in (database, *variants)]
            else:
                document["database"] = _relative(database, out)
            if _schema_only(database):
                dataset.schema_only.add(db_id)
                tags = ("schema_only",)
                notes.append("This database is schema-only (every table is empty): gold results are empty and "
                             "execution matches are vacuous; `--sqleval-check-gold` lists them.")
        elif db_id in known_ids and dataset.name in ("spider", "sparc", "cosql"):
            notes.append("The database file is not here: only exact match is scored.")
            suite_keys["pass_if"] = "exact_match"
        elif db_id in dataset.expected_database:
            # BIRD, LogicCat: reference where the database belongs, so the suite fails with a clear
            # "database file not found" naming that path until the file is put there.
            document["database"] = _relative(dataset.expected_database[db_id], out)
            notes.append(f"The database file is missing: put it at {dataset.expected_database[db_id]}.")
        if dataset.tables_json is not None and db_id in known_ids:
            document["schema"] = {"tables": _relative(dataset.tables_json, out), "db_id": db_id}
        if "database" not in document and "schema" not in document:
            where = (f"not in {dataset.tables_json}" if dataset.tables_json is not None else "no tables.json found")
            raise DatasetError(f"database {db_id!r} (question {items[0].case_id}): no database file and no schema "
                               f"({where})", "pass --databases DIR or --tables tables.json with that db_id, "
                                             "or remove its questions")
        document["description"] = " ".join(notes)
        document.update(suite_keys)
        document["cases"] = _cases(items, tags)
        name, number = f"{_file_name(db_id)}.sqleval.yaml", 1
        while name in documents:  # `my db` and `my_db` share a file name: keep both suites
            number += 1
            name = f"{_file_name(db_id)}-{number}.sqleval.yaml"
        documents[name] = document
    return documents


#: Datasets scored as test-suite-sql-eval scores them: a query runs on every database of its db_id's folder.
TEST_SUITE_DATASETS = ("spider", "sparc", "cosql")


def _test_suite_variants(database: Path) -> list[Path]:
    """The other databases in the folder of ``database`` (Spider's test-suite release holds ``<db>/<db>.sqlite``
    and its distilled variants ``<db>/<db>_1.sqlite``, ...): test-suite-sql-eval's ``eval_exec_match`` compares
    on every file of that folder with ``.sqlite`` in its name, so the suite lists them all under ``databases:``
    (SQLite's ``-journal``/``-wal``/``-shm`` files beside a database are none)."""
    try:
        siblings = sorted(p for p in database.parent.iterdir() if ".sqlite" in p.name and p.is_file()
                          and not p.name.endswith(("-journal", "-wal", "-shm")) and p.name != database.name)
    except OSError:
        return []
    return siblings


def _tables_db_ids(path: Path) -> set[str]:
    data = _read_json(path)
    if not isinstance(data, list):
        raise DatasetError(f"{path} is not a Spider-style tables.json (a list of databases)",
                           "give the dataset's tables.json with --tables, or leave --tables out to use the one beside SRC")
    return {str(e.get("db_id")) for e in data if isinstance(e, dict)}


def _cases(items: list[Item], tags: tuple[str, ...]) -> list[dict]:
    cases: list[dict] = []
    interactions: dict[str, dict] = {}
    for item in items:
        body: dict[str, Any] = {}
        if item.question is not None:
            body["question"] = item.question
        if item.evidence:
            body["evidence"] = item.evidence
        body["gold"] = item.gold
        if item.turn is not None:
            if item.id not in interactions:
                interactions[item.id] = {"id": item.id, **({"tags": list(tags)} if tags else {}), "interaction": []}
                cases.append(interactions[item.id])
            interactions[item.id]["interaction"].append(body)
            continue
        case: dict[str, Any] = {"id": item.id, **body}
        if item.difficulty:
            case["difficulty"] = item.difficulty
        all_tags = list(dict.fromkeys((*item.tags, *tags)))
        if all_tags:
            case["tags"] = all_tags
        if item.metadata:
            case["metadata"] = item.metadata
        cases.append(case)
    return cases


def _case_ids(document: dict) -> list[str]:
    ids = []
    for case in document["cases"]:
        if "interaction" in case:
            ids.extend(f"{case['id']}/{n}" for n in range(1, len(case["interaction"]) + 1))
        else:
            ids.append(case["id"])
    return ids


def _write_predictions(path: Path, ids: Sequence[str], predicted: dict[str, str | None]) -> None:
    """``{"id": ..., "sql": ...}`` per case; ``"sql": null`` where the file had no line for it (no prediction)."""
    with path.open("w", encoding="utf-8") as handle:
        for case_id in ids:
            handle.write(json.dumps({"id": case_id, "sql": predicted.get(case_id)}, ensure_ascii=False) + "\n")


class _SuiteDumper(yaml.SafeDumper):
    """Text with a NEL, U+2028 or U+2029 in double quotes, where they are escapes (`\\L`): written as is, as PyYAML
    writes them elsewhere, they are line breaks to YAML 1.1 and text to YAML 1.2, and the loader refuses that.
    No anchors: a value shared by several cases (a kept query's tags, copied to its paraphrases) is written out in
    each, not as ``&id001`` / ``*id001``, which reads poorly and ties the cases together when one is edited."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    from ..yaml_lines import UNICODE_BREAKS

    style = '"' if any(ch in value for ch in UNICODE_BREAKS) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_SuiteDumper.add_representer(str, _represent_text)


def dump_yaml(document: Any) -> str:
    return yaml.dump(document, Dumper=_SuiteDumper, sort_keys=False, allow_unicode=True, width=1 << 20)


def _suite_name_in(path: Path) -> str | None:
    """The ``suite:`` name of an existing suite file, else None (no file, or not a suite this can read)."""
    if not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return str(data["suite"]) if isinstance(data, dict) and data.get("suite") is not None else None


def import_dataset(kind: str, src: str | Path, out: str | Path, *, predictions: str | Path | None = None,
                   tables: str | None = None, databases: str | None = None, split: str = "dev",
                   official_rewrites: bool = True) -> ImportResult:
    """Read ``src``, write one suite per database into ``out`` (and ``predictions.jsonl``)."""
    if kind not in READERS:
        raise DatasetError(f"unknown dataset {kind!r}", f"use one of {', '.join(DATASETS)}")
    src, out = Path(src), Path(out)
    if not src.exists():
        raise DatasetError(f"{src} does not exist", f"give the {kind} folder or file")
    if databases is not None and not Path(databases).is_dir():
        raise DatasetError(f"--databases {databases} is not a folder", "give the folder that holds the databases")
    if out.exists() and not out.is_dir():
        raise DatasetError(f"-o {out} is a file, not a folder", "give a folder for the suites")
    dataset = READERS[kind](src, tables=tables, databases=databases, split=split, official_rewrites=official_rewrites)
    if not dataset.items:
        raise _no_questions(dataset, src, split)
    predicted: dict[str, str | None] | None = None
    if predictions is not None:  # read before anything is written: a predictions file it refuses leaves no folder
        predicted, warnings = read_predictions(dataset, Path(predictions), official_rewrites=official_rewrites)
        dataset.warnings.extend(warnings)
    out.mkdir(parents=True, exist_ok=True)
    documents = suite_documents(dataset, out)
    if predicted is not None:
        (out / "predictions").mkdir(exist_ok=True)
        for name, document in documents.items():  # each suite reads its own file (`predictions:`)
            stem = name[: -len(".sqleval.yaml")]
            ids = _case_ids(document)
            _write_predictions(out / "predictions" / f"{stem}.jsonl", ids, predicted)
            document["predictions"] = f"predictions/{stem}.jsonl"
    written, replaced = [], []
    for name, document in documents.items():
        target = out / name
        previous = _suite_name_in(target)
        if previous is not None and previous != document["suite"]:
            replaced.append(f"{name} (suite {previous})")
        target.write_text(dump_yaml(document), encoding="utf-8")
        written.append(target)
    result = ImportResult(kind, written, len(dataset.items), warnings=list(dataset.warnings))
    if replaced:  # a Spider and a SParC import share file names (db_id), not suite names
        result.warnings.append(f"replaced {len(replaced)} suites of another import in {out}: {', '.join(replaced[:4])}"
                               f"{', ...' if len(replaced) > 4 else ''}; import each dataset into a folder of its own")
    stale = sorted(p.name for p in out.glob("*.sqleval.y*ml") if p not in written)
    if stale:
        result.warnings.append(f"{out} holds {len(stale)} other suites ({', '.join(stale[:4])}"
                               f"{', ...' if len(stale) > 4 else ''}) that `pytest --sqleval {out}` runs too: "
                               "remove them, or import into an empty folder")
    missing = [db for db, path in dataset.databases.items() if path is None]
    if missing and not dataset.expected_database:
        result.warnings.append("no database folder: the suites score exact match only "
                               "(pass --databases DIR to execute the queries too)")
    elif missing:
        result.warnings.append(_missing_databases_warning(kind, dataset, missing))
    if dataset.schema_only:
        result.warnings.append(f"{len(dataset.schema_only)} of {len(dataset.databases)} databases are schema-only "
                               f"(no rows): {', '.join(sorted(dataset.schema_only)[:8])}"
                               f"{', ...' if len(dataset.schema_only) > 8 else ''}; their suites are tagged schema_only")
    if predicted is not None:
        target = out / "predictions.jsonl"  # all suites at once: --sqleval-predictions (e.g. another system's)
        _write_predictions(target, [item.case_id for item in dataset.items], predicted)
        result.predictions_path = target
        result.predictions = sum(1 for i in dataset.items if predicted.get(i.case_id) is not None)
        result.missing_predictions = len(dataset.items) - result.predictions
    return result
