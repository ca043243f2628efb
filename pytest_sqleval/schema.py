"""The database schema: tables, their columns in order, and foreign keys.

Exact set match needs the schema (to resolve unqualified columns and to merge
foreign-key columns), and the report uses it to describe a database. A schema
comes from a live database (read by its engine backend:
:func:`pytest_sqleval.execution.backends.read_schema`), or from a Spider
``tables.json`` entry, which also fixes the global column numbering that the
official evaluator uses to pick a representative for each foreign-key group.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from .errors import SuiteError


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class ForeignKey:
    table: str
    column: str
    ref_table: str
    ref_column: str


@dataclass(frozen=True)
class Schema:
    """Tables in a fixed order; every column has a global index.

    Global indexes follow Spider's ``tables.json`` numbering: index 0 is ``*``,
    then the columns of each table in table order, starting at 1.
    Names keep their original spelling; lookups are case-insensitive.
    """

    tables: tuple[Table, ...]
    foreign_keys: tuple[ForeignKey, ...] = ()
    _table_index: dict[str, Table] = field(default=None, init=False, repr=False, compare=False)  # type: ignore[assignment]
    _column_index: dict[tuple[str, str], int] = field(default=None, init=False, repr=False, compare=False)  # type: ignore[assignment]
    #: Read from an engine with schemas (PostgreSQL): the schema a bare table name resolves to (current_schema(), by
    #: the search_path), and every other schema's tables' columns by ``schema.table`` in lower case, for the SQL
    #: policy to read a qualified name as the engine does. Not part of == or the hash.
    default_schema: str | None = field(default=None, compare=False)
    qualified_columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)
    #: The hash, computed on first use: a schema is a key of several per-session caches, asked once or more per
    #: case, and hashing it walks every table and foreign key. Never pickled (another process hashes text
    #: differently).
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:  # the hash dataclass would compute (its fields that take part in ==), kept
        known = self._hash
        if known is None:
            known = hash((self.tables, self.foreign_keys))
            object.__setattr__(self, "_hash", known)
        return known

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_hash", None)
        return state

    def __post_init__(self) -> None:
        tables = {t.name.lower(): t for t in self.tables}
        columns: dict[tuple[str, str], int] = {}
        index = 1
        for table in self.tables:
            for column in table.columns:
                columns.setdefault((table.name.lower(), column.lower()), index)
                index += 1
        object.__setattr__(self, "_table_index", tables)
        object.__setattr__(self, "_column_index", columns)

    # -- lookups -----------------------------------------------------------
    def table(self, name: str) -> Table | None:
        return self._table_index.get(name.lower())

    def has_table(self, name: str) -> bool:
        return name.lower() in self._table_index

    def has_column(self, table: str, column: str) -> bool:
        return (table.lower(), column.lower()) in self._column_index

    def column_index(self, table: str, column: str) -> int | None:
        """Spider-style global index of ``table.column`` (``*`` is 0)."""
        if column == "*":
            return 0
        return self._column_index.get((table.lower(), column.lower()))

    @property
    def table_names(self) -> list[str]:
        return [t.name for t in self.tables]

    # -- construction ------------------------------------------------------
    @classmethod
    def from_dict(cls, tables: dict[str, Iterable[str]], foreign_keys: Iterable[tuple[str, str, str, str]] = ()) -> Schema:
        """``{"table": ["col", ...]}`` and ``[(table, column, ref_table, ref_column), ...]``."""
        return cls(
            tables=tuple(Table(name, tuple(cols)) for name, cols in tables.items()),
            foreign_keys=tuple(ForeignKey(*fk) for fk in foreign_keys),
        )

    @classmethod
    def from_spider_tables(cls, path: str | Path, db_id: str) -> Schema:
        """Load one database's entry from a Spider-format ``tables.json``.

        Raises :class:`SpiderTablesError` (a SuiteError naming the file and the
        fix) for an unreadable or malformed file and for an unknown ``db_id``.
        """
        path = Path(path)
        entries = _spider_entries(path)
        entry = entries.get(db_id)
        if entry is None:
            known = sorted(entries)
            shown = ", ".join(known[:10]) + (", ..." if len(known) > 10 else "")
            raise SpiderTablesError(f"db_id {db_id!r} is not in {path}", path=path,
                                    fix=f"use one of its db_ids: {shown or '(none)'}")
        try:
            return cls.from_spider_entry(entry)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise SpiderTablesError(
                f"the entry for db_id {db_id!r} is malformed ({type(exc).__name__}: {exc})", path=path,
                fix="each entry needs table_names_original, column_names_original ([table index, name] pairs) "
                    "and foreign_keys ([column index, column index] pairs), as in Spider's tables.json",
            ) from None

    @classmethod
    def from_spider_entry(cls, entry: dict) -> Schema:
        table_names = entry["table_names_original"]
        columns: list[list[str]] = [[] for _ in table_names]
        flat: list[tuple[str, str]] = [("", "*")]
        for table_idx, column in entry["column_names_original"]:
            if table_idx < 0:
                continue
            columns[table_idx].append(column)
            flat.append((table_names[table_idx], column))
        fks = []
        for a, b in entry.get("foreign_keys", []):
            (ta, ca), (tb, cb) = flat[a], flat[b]
            fks.append(ForeignKey(ta, ca, tb, cb))
        return cls(
            tables=tuple(Table(str(name), tuple(str(c) for c in cols)) for name, cols in zip(table_names, columns)),
            foreign_keys=tuple(fks),
        )


class SpiderTablesError(SuiteError):
    """A ``tables.json`` that cannot be used (unreadable, malformed, or without the asked ``db_id``)."""


_SPIDER_CACHE: dict[tuple[str, int, int], dict[str, dict]] = {}


def _spider_entries(path: Path) -> dict[str, dict]:
    """``{db_id: entry}`` of a Spider ``tables.json`` (cached by path, size and mtime)."""
    fix = "give a Spider-format tables.json: a JSON list of objects with db_id, table_names_original, column_names_original"
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key in _SPIDER_CACHE:
            return _SPIDER_CACHE[key]
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpiderTablesError(f"cannot read the schema file: {exc.strerror or exc}", path=path, fix=fix) from None
    except UnicodeDecodeError as exc:
        raise SpiderTablesError(f"the schema file is not UTF-8 ({exc.reason} at byte {exc.start})", path=path,
                                fix=fix) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpiderTablesError(f"the schema file is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                                path=path, fix=fix) from None
    except RecursionError:
        raise SpiderTablesError("the schema file is nested too deeply to read", path=path, fix=fix) from None
    if not isinstance(data, list):
        raise SpiderTablesError(f"the schema file holds a JSON {type(data).__name__}, not a list of databases",
                                path=path, fix=fix)
    entries: dict[str, dict] = {}
    for position, entry in enumerate(data, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("db_id"), str):
            raise SpiderTablesError(f"entry #{position} of the schema file has no \"db_id\" text", path=path, fix=fix)
        for required in ("table_names_original", "column_names_original"):
            if not isinstance(entry.get(required), list):
                raise SpiderTablesError(f"entry #{position} ({entry['db_id']}) has no {required} list",
                                        path=path, fix=fix)
        entries.setdefault(entry["db_id"], entry)
    _SPIDER_CACHE[key] = entries
    return entries


def spider_db_ids(path: str | Path) -> set[str]:
    """The db_ids of a Spider ``tables.json``; raises SpiderTablesError for a file that cannot be used."""
    return set(_spider_entries(Path(path)))
