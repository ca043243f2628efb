"""The ten official Spider components and the FROM table check, on normalised SQL dicts.

Each component counts gold units, predicted units and matches the way the
official ``evaluation.py`` does, and holds when the counts are equal and every
predicted unit matched (its F1 is 1):

================  ==========================================================================
select            (agg, val_unit) of each SELECT item, multiset, order-free
select_no_agg     the val_units alone, multiset
where             whole WHERE condition units (values nulled, subquery values compared
                  whole), multiset
where_no_op       the left val_unit of each WHERE condition, multiset
group_no_having   GROUP BY columns with the table part stripped (``name__``), multiset
group             both have GROUP BY or neither; GROUP BY columns as an ordered list with
                  tables, and the HAVING lists, equal
order             both have ORDER BY or neither; (direction, ordered val_units) equal, and
                  both have LIMIT or neither (the LIMIT value is ignored)
and_or            the *sets* of WHERE connectors are equal
iuen              INTERSECT, EXCEPT, UNION each present on both sides or on neither, and
                  the right operands exact-match recursively (operands never commuted)
keywords          the sets of keywords are equal: where, group, having, order, asc/desc,
                  limit, except, union, intersect, plus or, not, in, like from ON+WHERE+HAVING
from              the sorted FROM table units are equal (checked when the gold has any;
                  with ``legacy_from_check`` only when the gold has two or more)
================  ==========================================================================

JOIN ON conditions take part only through ``keywords``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .spider_sql import SET_OPS, WHERE_OPS, SpiderSQL


def spider_components(pred: SpiderSQL, gold: SpiderSQL, *, legacy_from_check: bool = False) -> dict[str, bool]:
    """One boolean per component, under the keys of ``SPIDER_CLAUSES``."""
    return {
        "select": _multiset_match(_select_units(pred), _select_units(gold)),
        "select_no_agg": _multiset_match([u[1] for u in _select_units(pred)], [u[1] for u in _select_units(gold)]),
        "where": _multiset_match(_cond_units(pred["where"]), _cond_units(gold["where"])),
        "where_no_op": _multiset_match([u[2] for u in _cond_units(pred["where"])],
                                       [u[2] for u in _cond_units(gold["where"])]),
        "group_no_having": _multiset_match(_group_columns_without_table(pred), _group_columns_without_table(gold)),
        "group": _group_and_having_match(pred, gold),
        "order": _order_match(pred, gold),
        "and_or": set(pred["where"][1::2]) == set(gold["where"][1::2]),
        "iuen": _set_operations_match(pred, gold, legacy_from_check),
        "keywords": _keywords(pred) == _keywords(gold),
        "from": _from_tables_match(pred, gold, legacy_from_check),
    }


def spider_exact(pred: SpiderSQL, gold: SpiderSQL, *, legacy_from_check: bool = False) -> bool:
    return all(spider_components(pred, gold, legacy_from_check=legacy_from_check).values())


def _multiset_match(pred: list[Any], gold: list[Any]) -> bool:
    """Official counting: greedy removal of each predicted unit from the gold units.

    Greedy removal with ``==`` is multiset equality, computed here in linear time
    (a long AND chain would make the official quadratic scan slow) by counting
    hashable copies of the units.
    """
    if len(pred) != len(gold):
        return False
    if pred == gold:  # the same units in the same order (most matches): equal multisets, without the copies
        return True
    return Counter(map(_hashable, pred)) == Counter(map(_hashable, gold))


def _hashable(value: Any) -> Any:
    """A hashable value equal to another's exactly when ``value == other`` (dicts, lists and tuples nested)."""
    if isinstance(value, dict):
        return ("{}", tuple(sorted((key, _hashable(item)) for key, item in value.items())))
    if isinstance(value, list):
        return ("[]", tuple(_hashable(item) for item in value))
    if isinstance(value, tuple):
        return tuple(_hashable(item) for item in value)
    return value


def _select_units(sql: SpiderSQL) -> list[Any]:
    return list(sql["select"][1])


def _cond_units(condition: list[Any]) -> list[Any]:
    return list(condition[::2])


def _group_columns_without_table(sql: SpiderSQL) -> list[str]:
    return [col.split(".")[1] if "." in col else col for _, col, _ in sql["groupBy"]]


def _group_and_having_match(pred: SpiderSQL, gold: SpiderSQL) -> bool:
    if bool(pred["groupBy"]) != bool(gold["groupBy"]):
        return False
    if not gold["groupBy"]:
        return True
    same_columns = [u[1] for u in pred["groupBy"]] == [u[1] for u in gold["groupBy"]]
    return same_columns and pred["having"] == gold["having"]


def _order_match(pred: SpiderSQL, gold: SpiderSQL) -> bool:
    if bool(pred["orderBy"]) != bool(gold["orderBy"]):
        return False
    if not gold["orderBy"]:
        return True
    same_limit_presence = (pred["limit"] is None) == (gold["limit"] is None)
    return pred["orderBy"] == gold["orderBy"] and same_limit_presence


def _set_operations_match(pred: SpiderSQL, gold: SpiderSQL, legacy_from_check: bool) -> bool:
    for op in SET_OPS:
        if (pred[op] is None) != (gold[op] is None):
            return False
        if gold[op] is not None and not spider_exact(pred[op], gold[op], legacy_from_check=legacy_from_check):
            return False
    return True


def _keywords(sql: SpiderSQL) -> set[str]:
    found: set[str] = set()
    _add_if(found, "where", sql["where"])
    _add_if(found, "group", sql["groupBy"])
    _add_if(found, "having", sql["having"])
    if sql["orderBy"]:
        found.update(("order", sql["orderBy"][0]))
    for keyword in ("limit", *SET_OPS):
        _add_if(found, keyword, sql[keyword] is not None)
    units = _all_cond_units(sql)
    _add_if(found, "or", "or" in _all_connectors(sql))
    _add_if(found, "not", any(unit[0] for unit in units))
    _add_if(found, "in", _has_op(units, "in"))
    _add_if(found, "like", _has_op(units, "like"))
    return found


def _all_cond_units(sql: SpiderSQL) -> list[Any]:
    units: list[Any] = sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]
    return units


def _all_connectors(sql: SpiderSQL) -> list[Any]:
    connectors: list[Any] = sql["from"]["conds"][1::2] + sql["where"][1::2] + sql["having"][1::2]
    return connectors


def _has_op(units: list[Any], op: str) -> bool:
    return any(unit[1] == WHERE_OPS.index(op) for unit in units)


def _add_if(found: set[str], keyword: str, condition: Any) -> None:
    if condition:
        found.add(keyword)


def _from_tables_match(pred: SpiderSQL, gold: SpiderSQL, legacy_from_check: bool) -> bool:
    gold_units = gold["from"]["table_units"]
    needed = len(gold_units) > 1 if legacy_from_check else len(gold_units) > 0
    return not needed or _multiset_match(pred["from"]["table_units"], gold_units)
