"""``--sqleval-shard K/N``: split a run's cases into N deterministic, balanced shards.

A unit is a case, or a whole interaction (its turns stay together and in order). Units are
keyed by (suite name, case or interaction id) and hashed with SHA-256 (stable across processes,
machines and Python versions, unlike ``hash()``). Units are taken heaviest first (ties in hash
order) and each goes to the shard with the fewest cases so far (ties to the lowest shard):
every process that collects the same cases computes the same split.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from typing import Iterable, Mapping, Sequence, TypeVar

T = TypeVar("T")
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(ValueError):
    pass


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/3"`` -> (2, 3); shards are numbered from 1."""
    match = _SHARD.match(str(text))
    if not match:
        raise ShardError(f"expected K/N (shard K of N, e.g. 2/3), not {text!r}")
    k, n = int(match.group(1)), int(match.group(2))
    if n < 1 or not 1 <= k <= n:
        raise ShardError(f"shard {text}: K must be between 1 and N (e.g. 1/3, 2/3, 3/3)")
    return k, n


def stable_hash(key: Sequence[str]) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(key).encode("utf-8")).digest()[:8], "big")


def assign(weights: Mapping[tuple[str, str], int], n: int) -> dict[tuple[str, str], int]:
    """Shard number (1..n) of every unit; balanced by weight (the unit's number of cases)."""
    order = sorted(weights, key=lambda unit: (-weights[unit], stable_hash(unit), unit))
    # the first units go to shards 1, 2, ... in turn (all empty), so shards past the number of units stay empty:
    # not scanning them keeps `--sqleval-shard 1/100000` (more shards than cases) as fast as 1/3
    loads = [0] * min(n, len(order))
    shard_of: dict[tuple[str, str], int] = {}
    for unit in order:
        lightest = min(range(len(loads)), key=lambda i: (loads[i], i))
        loads[lightest] += weights[unit]
        shard_of[unit] = lightest + 1
    return shard_of


def split(items: Iterable[T], unit_of, k: int, n: int) -> tuple[list[T], list[T]]:
    """(kept, deselected) for shard k of n; ``unit_of(item)`` gives the item's (suite, unit id)."""
    items = list(items)
    units = [unit_of(item) for item in items]
    weights: dict[tuple[str, str], int] = OrderedDict()
    for unit in units:
        weights[unit] = weights.get(unit, 0) + 1
    shard_of = assign(weights, n)
    kept = [item for item, unit in zip(items, units) if shard_of[unit] == k]
    dropped = [item for item, unit in zip(items, units) if shard_of[unit] != k]
    return kept, dropped


def item_unit(item) -> tuple[str, str]:
    """A sqleval item's unit: (suite, interaction id) for a turn, (suite, case id) otherwise; other tests by node id."""
    case = getattr(item, "case", None)
    suite = getattr(item, "suite", None)
    if case is None or suite is None:
        return ("", item.nodeid)
    return (suite.name, case.interaction if case.interaction is not None else case.id)


__all__ = ["ShardError", "assign", "item_unit", "parse_shard", "split", "stable_hash"]
