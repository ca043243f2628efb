"""The official normalisation of a Spider SQL dict before its components are compared.

Reproduces ``rebuild_sql_val`` and ``rebuild_sql_col`` of the official
``evaluation.py`` (flags ``DISABLE_VALUE`` and ``DISABLE_DISTINCT`` on):

* **Values**: in the ON, WHERE and HAVING conditions of the query and of its
  INTERSECT/UNION/EXCEPT parts, every value that is not a subquery becomes
  ``None``; subquery values are nulled the same way, recursively. FROM
  subqueries are left alone, so their values still count.
* **DISTINCT and foreign keys**: in SELECT, ON, the left side of WHERE and
  HAVING conditions, GROUP BY and ORDER BY of the query (and of its set-operation
  parts, which use the *outer* query's FROM tables), every DISTINCT flag becomes
  ``None`` and a column that belongs to a FOREIGN KEY group is replaced by the
  group's representative, provided the column's table is a table of the FROM
  clause. Subqueries used as values or FROM sources are not touched, so
  DISTINCT still counts inside them.
* **Foreign-key groups** are built from the schema's foreign keys in
  ``tables.json`` order: each pair joins the first group that already holds
  either column, else starts a new one (groups are never merged afterwards);
  the representative of a group is its column with the lowest global index,
  and a column in several groups keeps the last group's representative. As a
  side effect two different columns referencing the same key become equal.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ...schema import Schema
from .spider_sql import SET_OPS, SpiderSQL


def normalise_spider_sql(sql: SpiderSQL, schema: Schema) -> SpiderSQL:
    """Values nulled, then DISTINCT dropped and foreign-key columns merged, as officially."""
    from_tables = frozenset(unit[1][2:-2] for unit in sql["from"]["table_units"] if unit[0] == "table_unit")
    normalised = _canonicalise_columns(_null_values(sql), from_tables, foreign_key_representatives(schema))
    assert normalised is not None
    return normalised


@lru_cache(maxsize=256)
def foreign_key_representatives(schema: Schema) -> dict[str, str]:
    """``"__table.column__"`` -> the id of its foreign-key group's representative."""
    names = _column_ids_by_global_index(schema)
    groups: list[set[int]] = []
    for fk in schema.foreign_keys:
        a = schema.column_index(fk.table, fk.column)
        b = schema.column_index(fk.ref_table, fk.ref_column)
        if a is None or b is None:
            continue
        group = next((g for g in groups if a in g or b in g), None)
        if group is None:
            group = set()
            groups.append(group)
        group.update((a, b))
    representatives: dict[str, str] = {}
    for group in groups:
        lowest = min(group)
        for index in group:
            representatives[names[index]] = names[lowest]
    return representatives


def _column_ids_by_global_index(schema: Schema) -> dict[int, str]:
    ids: dict[int, str] = {}
    index = 1
    for table in schema.tables:
        for column in table.columns:
            ids[index] = f"__{table.name.lower()}.{column.lower()}__"
            index += 1
    return ids


# -- values ---------------------------------------------------------------------
def _null_values(sql: SpiderSQL | None) -> SpiderSQL | None:
    if sql is None:
        return None
    out = dict(sql)
    out["from"] = {"table_units": sql["from"]["table_units"], "conds": _null_condition(sql["from"]["conds"])}
    out["where"] = _null_condition(sql["where"])
    out["having"] = _null_condition(sql["having"])
    for op in SET_OPS:
        out[op] = _null_values(sql[op])
    return out


def _null_condition(condition: list[Any]) -> list[Any]:
    return [item if i % 2 else _null_cond_unit(item) for i, item in enumerate(condition)]


def _null_cond_unit(unit: tuple[Any, ...]) -> tuple[Any, ...]:
    not_op, op_id, val_unit, val1, val2 = unit
    return (not_op, op_id, val_unit, _null_value(val1), _null_value(val2))


def _null_value(value: Any) -> Any:
    return _null_values(value) if isinstance(value, dict) else None


# -- columns ---------------------------------------------------------------------
def _canonicalise_columns(sql: SpiderSQL | None, from_tables: frozenset[str], fk: dict[str, str]) -> SpiderSQL | None:
    if sql is None:
        return None

    def col_unit(unit: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
        if unit is None:
            return None
        agg_id, col_id, _ = unit
        if col_id in fk and _table_of(col_id) in from_tables:
            col_id = fk[col_id]
        return (agg_id, col_id, None)

    def val_unit(unit: tuple[Any, ...]) -> tuple[Any, ...]:
        unit_op, first, second = unit
        return (unit_op, col_unit(first), col_unit(second))

    def condition(cond: list[Any]) -> list[Any]:
        return [item if i % 2 else (item[0], item[1], val_unit(item[2]), item[3], item[4]) for i, item in enumerate(cond)]

    out = dict(sql)
    out["select"] = (None, [(agg_id, val_unit(unit)) for agg_id, unit in sql["select"][1]])
    out["from"] = {"table_units": sql["from"]["table_units"], "conds": condition(sql["from"]["conds"])}
    out["where"] = condition(sql["where"])
    out["groupBy"] = [col_unit(unit) for unit in sql["groupBy"]]
    out["having"] = condition(sql["having"])
    if sql["orderBy"]:
        direction, units = sql["orderBy"]
        out["orderBy"] = (direction, [val_unit(unit) for unit in units])
    for op in SET_OPS:
        out[op] = _canonicalise_columns(sql[op], from_tables, fk)
    return out


def _table_of(col_id: str) -> str:
    return col_id[2:col_id.index(".")] if "." in col_id else ""
