"""The ``schema`` placeholder: a database's tables rendered as text for a prompt.

Read from the live database (SQLAlchemy inspection; DuckDB's own catalogue) or from a Spider ``tables.json``
entry; rendered as

- ``ddl`` (default): ``CREATE TABLE`` statements with column types, primary and foreign keys;
- ``spider``: ``Table shops, columns = [*, id, name]`` lines plus ``Foreign_keys = [...]`` (the format of
  DIN-SQL and similar Spider prompts);
- ``compact``: ``shops(id, name)``, one line per table, foreign keys as ``shop_id -> shops.id``.

Views follow the tables (read from the live database only): their ``CREATE VIEW`` text in ``ddl``, their columns
in ``spider`` (``View v, columns = [...]``) and ``compact`` (``v(a, b)  -- a view``).

``sample_rows: N`` appends N rows of each table, read with ``SELECT * FROM t ORDER BY ... LIMIT N`` (see
:func:`_sample_orders`) through the guarded runner (read-only connection, timeout and row cap).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence


@dataclass(frozen=True)
class Column:
    name: str
    type: str = ""


@dataclass(frozen=True)
class TableDoc:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    foreign_keys: tuple[tuple[str, str, str], ...] = ()  # (column, referenced table, referenced column)
    #: a view's ``CREATE VIEW`` statement (as the engine keeps it), "" for a table
    view: str = ""


def tables_from_engine(engine) -> list[TableDoc]:
    from sqlalchemy import inspect, text

    if engine.dialect.name == "duckdb":
        return _duckdb_tables(engine, text)
    inspector = inspect(engine)
    if engine.dialect.name == "sqlite":  # creation order, as the schema module reads it
        with engine.connect() as conn:
            names = [r[0] for r in conn.execute(text(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"))]
    else:  # the backend's order where it has one (PostgreSQL's creation order), as the schema module reads it
        names = _table_order(engine) or inspector.get_table_names()
    tables = []
    for name in names:
        columns = tuple(Column(c["name"], _type_text(c.get("type"))) for c in inspector.get_columns(name))
        pk = tuple(inspector.get_pk_constraint(name).get("constrained_columns") or ())
        fks = []
        for fk in inspector.get_foreign_keys(name):
            for col, ref in zip(fk.get("constrained_columns") or (), fk.get("referred_columns") or ()):
                fks.append((col, fk.get("referred_table"), ref))
        tables.append(TableDoc(name, columns, pk, tuple(fks)))
    return tables


def views_from_engine(engine) -> list[TableDoc]:
    """The database's views (PostgreSQL's materialized ones too), in creation order, each with its columns and its
    ``CREATE VIEW`` text: a suite whose gold reads a view can only be answered by a model that is shown it.
    Views whose catalogue or columns cannot be read are left out (none, rather than a failed prompt)."""
    import warnings

    from sqlalchemy import inspect, text
    from sqlalchemy.exc import SQLAlchemyError

    name = engine.dialect.name
    try:
        with engine.connect() as conn:
            if name == "sqlite":
                found = [(r[0], r[1] or "") for r in conn.execute(text(
                    "SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY rowid"))]
            elif name == "duckdb":
                found = [(r[0], r[1] or "") for r in conn.execute(text(
                    "SELECT view_name, sql FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal "
                    "ORDER BY view_oid"))]
            elif name == "postgresql":
                found = [(r[0], f"CREATE {'MATERIALIZED ' if r[1] == 'm' else ''}VIEW {_ident(r[0], 'postgres')} AS\n"
                               + (r[2] or "").strip("\n").rstrip()) for r in conn.execute(text(
                    "SELECT c.relname, c.relkind, pg_get_viewdef(c.oid, true) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE c.relkind IN ('v', 'm') AND n.nspname = current_schema() ORDER BY c.oid"))]
            else:
                return []
    except SQLAlchemyError:
        return []
    if not found:
        return []
    if name == "duckdb":
        with engine.connect() as conn:
            columns: dict[str, list[Column]] = {}
            for view, column, data_type in conn.execute(text(
                    "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE schema_name = 'main' "
                    "ORDER BY table_oid, column_index")):
                columns.setdefault(view, []).append(Column(column, data_type))
        return [TableDoc(v, tuple(columns.get(v, ())), view=sql) for v, sql in found]
    inspector = inspect(engine)
    views = []
    for view, sql in found:
        try:
            with warnings.catch_warnings():  # a column type SQLAlchemy does not know: its name is enough
                warnings.simplefilter("ignore")
                cols = tuple(Column(c["name"], _type_text(c.get("type"))) for c in inspector.get_columns(view))
        except SQLAlchemyError:
            cols = ()
        if cols:  # none: a SQLite view over a table since dropped, which no query can read
            views.append(TableDoc(view, cols, view=sql))
    return views


def _table_order(engine) -> list[str] | None:
    """The engine's backend's table order (PostgreSQL: creation order, which a GRANT does not change, unlike the
    inspector's), else None."""
    from ..errors import DatabaseError
    from ..execution.backends import backend_for

    try:
        backend = backend_for(engine)
    except DatabaseError:  # an engine no backend claims: the inspector's order
        return None
    return backend.table_order(engine)


def _type_text(sa_type: Any) -> str:
    from sqlalchemy.types import NullType

    if sa_type is None or isinstance(sa_type, NullType):  # a SQLite column declared without a type: none, not `NULL`
        return ""
    item_type = getattr(sa_type, "item_type", None)  # an ARRAY (PostgreSQL's text[]): str() says only `ARRAY`
    if item_type is not None and type(sa_type).__name__.upper() == "ARRAY":
        return (_type_text(item_type) or "TEXT") + "[]" * max(getattr(sa_type, "dimensions", None) or 1, 1)
    try:
        return str(sa_type)
    except Exception:  # noqa: BLE001 - some dialect types cannot render without a dialect
        return type(sa_type).__name__.upper()


def _duckdb_tables(engine, text) -> list[TableDoc]:
    with engine.connect() as conn:
        names = [r[0] for r in conn.execute(text(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' ORDER BY table_oid"))]
        columns: dict[str, list[Column]] = {n: [] for n in names}
        for table, column, data_type in conn.execute(text(
                "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE schema_name = 'main' "
                "ORDER BY table_oid, column_index")):
            columns.setdefault(table, []).append(Column(column, data_type))
        pks: dict[str, tuple[str, ...]] = {}
        fks: dict[str, list[tuple[str, str, str]]] = {}
        for table, kind, cols, ref_table, ref_cols in conn.execute(text(
                "SELECT table_name, constraint_type, constraint_column_names, referenced_table, referenced_column_names "
                "FROM duckdb_constraints() WHERE schema_name = 'main' AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')")):
            if kind == "PRIMARY KEY":
                pks[table] = tuple(cols)
            else:
                fks.setdefault(table, []).extend((c, ref_table, r) for c, r in zip(cols, ref_cols))
    return [TableDoc(n, tuple(columns[n]), pks.get(n, ()), tuple(fks.get(n, ()))) for n in names]


def tables_from_spider(path: str | Path, db_id: str) -> list[TableDoc]:
    entries = json.loads(Path(path).read_text(encoding="utf-8"))
    entry = next((e for e in entries if e.get("db_id") == db_id), None)
    if entry is None:
        raise KeyError(f"db_id {db_id!r} is not in {path}")
    names = entry["table_names_original"]
    types = entry.get("column_types") or []
    flat: list[tuple[int, str]] = []
    columns: list[list[Column]] = [[] for _ in names]
    for index, (table_index, column) in enumerate(entry["column_names_original"]):
        flat.append((table_index, column))
        if table_index >= 0:
            columns[table_index].append(Column(column, (types[index] if index < len(types) else "").upper()))
    pks: list[list[str]] = [[] for _ in names]
    for key in entry.get("primary_keys", []):
        for index in key if isinstance(key, list) else [key]:
            table_index, column = flat[index]
            pks[table_index].append(column)
    fks: list[list[tuple[str, str, str]]] = [[] for _ in names]
    for a, b in entry.get("foreign_keys", []):
        (ta, ca), (tb, cb) = flat[a], flat[b]
        fks[ta].append((ca, names[tb], cb))
    return [TableDoc(n, tuple(columns[i]), tuple(pks[i]), tuple(fks[i])) for i, n in enumerate(names)]


def sample_rows(engine, tables: Sequence[TableDoc], count: int, *, dialect: str, timeout: float) -> dict[str, tuple]:
    """Up to ``count`` rows of each table, through the guarded runner (a table that fails gets none)."""
    from sqlglot import exp

    from ..errors import QueryError
    from ..execution.runner import run_query

    rows: dict[str, tuple] = {}
    if engine is None or count <= 0:
        return rows
    for table in tables:
        if table.view:  # a view's rows are its tables' (and reading them may be a long query)
            continue
        base = exp.select("*").from_(exp.to_table(exp.to_identifier(table.name, quoted=True).sql(dialect),
                                                  dialect=dialect)).limit(count)
        for order in _sample_orders(table, dialect):
            sql = (base.order_by(*order) if order else base).sql(dialect)
            try:
                result = run_query(engine, sql, timeout=timeout, max_rows=count, untrusted=True, dialect=dialect)
            except QueryError as exc:
                if exc.kind in ("timeout", "memory"):  # another order would take as long: the table gets none
                    break
                continue  # no rowid (a view, SQLite's WITHOUT ROWID), a column type with no order (json): the next
            rows[table.name] = (tuple(result.columns), _json_as_text(table, result.columns, result.rows[:count],
                                                                     engine.dialect.name))
            break
    return rows


def _json_as_text(table: TableDoc, columns: Sequence[str], rows: Sequence[Sequence[Any]], backend: str) -> tuple:
    """The rows, a PostgreSQL ``json``/``jsonb`` value as its JSON text (``{"a": 1}``, ``true``), as the prompt shows
    a document (the driver hands it over parsed: a dict shows as Python's ``{'a': 1}``, ``true`` as ``True``).
    DuckDB hands its JSON over as text already."""
    kinds = {c.name: c.type.upper() for c in table.columns}
    positions = {n for n, name in enumerate(columns) if kinds.get(name) in ("JSON", "JSONB")}
    if not positions or backend != "postgresql":  # the engine's SQLAlchemy dialect
        return tuple(tuple(row) for row in rows)
    return tuple(tuple(json.dumps(value, ensure_ascii=False, default=str) if n in positions and value is not None
                       else value for n, value in enumerate(row)) for row in rows)


def _sample_orders(table: TableDoc, dialect: str) -> list[list]:
    """The orders to read a table's sample rows in, each tried until one runs: the rows must not depend on where the
    engine keeps them (PostgreSQL moves an UPDATEd row to the end of its heap, and the prompt, so the response cache's
    key, would change with it). SQLite and DuckDB: the rowid (insertion order, the order their scans give); then the
    primary key; then every column, by position, else as text; the last resort, no order at all."""
    from sqlglot import exp

    orders: list[list] = []
    if dialect in ("sqlite", "duckdb"):
        orders.append([exp.column("rowid")])
    if table.primary_key:
        orders.append([exp.column(exp.to_identifier(c, quoted=True)) for c in table.primary_key])
    if table.columns:
        orders.append([exp.Literal.number(n) for n in range(1, len(table.columns) + 1)])
        # a column type with no order (PostgreSQL's json, point): every column's text
        orders.append([exp.cast(exp.column(exp.to_identifier(c.name, quoted=True)), "text") for c in table.columns])
    return orders + [[]]


def render_schema(tables: Sequence[TableDoc], fmt: str = "ddl", *, dialect: str = "sqlite",
                  rows: dict[str, tuple] | None = None) -> str:
    rows = rows or {}
    if fmt == "spider":
        return _spider(tables, rows)
    if fmt == "compact":
        return _compact(tables, rows)
    return _ddl(tables, dialect, rows)


def _ident(name: str, dialect: str) -> str:
    """The name as the dialect must write it: quoted when it is a reserved word (`order`, `group`) or, in a
    dialect that folds unquoted names (PostgreSQL), when folding would change it (`"Shops"` is not `shops`)."""
    from sqlglot import exp
    from sqlglot.dialects.dialect import Dialect, NormalizationStrategy
    from sqlglot.dialects.duckdb import DuckDB

    folds = Dialect.get_or_raise(dialect).NORMALIZATION_STRATEGY
    quoted = (name.lower() in DuckDB.Generator.RESERVED_KEYWORDS  # PostgreSQL's reserved words, and DuckDB's
              or (folds == NormalizationStrategy.LOWERCASE and name != name.lower())
              or (folds == NormalizationStrategy.UPPERCASE and name != name.upper()))
    return exp.to_identifier(name, quoted=True if quoted else None).sql(dialect)


def _ddl(tables: Sequence[TableDoc], dialect: str, rows: dict[str, tuple]) -> str:
    parts = []
    for table in tables:
        if table.view:
            parts.append(table.view.strip().rstrip(";").rstrip() + ";")
            continue
        single_pk = table.primary_key[0] if len(table.primary_key) == 1 else None
        lines = []
        for column in table.columns:
            line = f"  {_ident(column.name, dialect)}" + (f" {column.type}" if column.type else "")
            if column.name == single_pk:
                line += " PRIMARY KEY"
            lines.append(line)
        if len(table.primary_key) > 1:
            lines.append(f"  PRIMARY KEY ({', '.join(_ident(c, dialect) for c in table.primary_key)})")
        for column, ref_table, ref_column in table.foreign_keys:
            lines.append(f"  FOREIGN KEY ({_ident(column, dialect)}) REFERENCES "
                         f"{_ident(ref_table, dialect)}({_ident(ref_column, dialect)})")
        text = f"CREATE TABLE {_ident(table.name, dialect)} (\n" + ",\n".join(lines) + "\n);"
        if table.name in rows:
            columns, values = rows[table.name]
            # a value holding `*/` would end the comment early: the rest of the rows would read as DDL
            text += (f"\n/* {len(values)} example rows from {table.name}:\n"
                     + _row_table(columns, values).replace("*/", "* /") + "\n*/")
        parts.append(text)
    return "\n".join(parts)


def _spider(tables: Sequence[TableDoc], rows: dict[str, tuple]) -> str:
    lines = []
    for table in tables:
        kind = "View" if table.view else "Table"
        lines.append(f"{kind} {table.name}, columns = [*, {', '.join(c.name for c in table.columns)}]")
        if table.name in rows:
            columns, values = rows[table.name]
            lines.append(f"  rows: {'; '.join(_row_text(v) for v in values)}")
    fks = [f"{t.name}.{c} = {rt}.{rc}" for t in tables for c, rt, rc in t.foreign_keys]
    lines.append(f"Foreign_keys = [{', '.join(fks)}]")
    pks = [f"{t.name}.{c}" for t in tables for c in t.primary_key]
    if pks:
        lines.append(f"Primary_keys = [{', '.join(pks)}]")
    return "\n".join(lines)


def _compact(tables: Sequence[TableDoc], rows: dict[str, tuple]) -> str:
    lines = []
    for table in tables:
        refs = {c: f"{rt}.{rc}" for c, rt, rc in table.foreign_keys}
        cols = [f"{c.name} -> {refs[c.name]}" if c.name in refs else c.name for c in table.columns]
        lines.append(f"{table.name}({', '.join(cols)})" + ("  -- a view" if table.view else ""))
        if table.name in rows:
            lines.append(f"  rows: {'; '.join(_row_text(v) for v in rows[table.name][1])}")
    return "\n".join(lines)


def _row_text(row: Sequence[Any]) -> str:
    return "(" + ", ".join(_value(v) for v in row) + ")"


def _row_table(columns: Sequence[str], values: Sequence[Sequence[Any]]) -> str:
    return "\n".join([" | ".join(columns)] + [" | ".join(_value(v) for v in row) for row in values])


def _value(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        # a line break inside a value would split its row over lines (one row per line is the layout)
        text = text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
        return "'" + text.replace("'", "''") + "'"
    if isinstance(value, (bytes, bytearray, memoryview)):  # a BLOB as a SQL blob literal, cut as long text is
        data = bytes(value)
        return "X'" + data[:16].hex().upper() + ("..." if len(data) > 16 else "") + "'"
    import numbers

    text = str(value)  # a JSON document, a DuckDB list or struct: cut as text is (a number never: its magnitude)
    return text if isinstance(value, numbers.Number) or len(text) <= 40 else text[:37] + "..."
