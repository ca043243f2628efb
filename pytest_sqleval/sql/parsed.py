"""Each distinct SQL text is parsed once per process: one shared parse per ``(text, dialect)``.

A case's gold is read by the DISTINCT rewrite, the ORDER BY plan, the exact-match readability probe,
exact match and hardness; a prediction by the guard, the DISTINCT rewrite and exact match. Each of them
goes through :func:`pytest_sqleval.sql.limits.parse_bounded`, which asks :func:`parse_shared` for the
parse and hands its caller **copies** of the statements (callers rewrite trees in place), so sharing can
never leak one step's edits into another's. Readers that promise not to modify the trees may use
:func:`parse_shared` directly and save the copy.

The cache is an LRU of :data:`CACHE_SIZE` entries keyed by the text and the dialect's name (never by
``id()`` of anything): a text's uses cluster around its case, so a small cache catches them all while
memory stays bounded on suites of any size. A text that cannot be parsed (a sqlglot error, a limit of
:mod:`~pytest_sqleval.sql.limits`) is cached as its error, raised again for each reader.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

#: Distinct ``(text, dialect)`` parses kept per process.
CACHE_SIZE = 512

_cache: OrderedDict[tuple[str, str], tuple | BaseException] = OrderedDict()
_lock = threading.Lock()
stats = {"hits": 0, "misses": 0}


def parse_shared(sql: str, dialect: str, parse: Callable[[str, str], list]) -> tuple:
    """The statements of ``sql`` read as ``dialect`` (shared: do not modify them; ``.copy()`` first).

    ``parse(sql, dialect)`` computes them on a miss; a ``SqlglotError`` it raises is cached and re-raised.
    """
    from sqlglot.errors import SqlglotError

    if not isinstance(sql, str) or not isinstance(dialect, str):
        return tuple(parse(sql, dialect))
    key = (sql, dialect)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            stats["hits"] += 1
    if found is None:
        stats["misses"] += 1
        try:
            found = tuple(parse(sql, dialect))
        except SqlglotError as exc:
            found = exc
        with _lock:
            _cache[key] = found
            if len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    if isinstance(found, BaseException):
        raise found.with_traceback(None)
    return found


_PLAIN = (int, str, float, bool, type(None))


def copy_tree(tree):
    """``tree.copy()``, the same nodes, arguments, comments, metadata and hashes, but several times faster:
    sqlglot's copy deep-copies each node's comment list and position metadata through :func:`copy.deepcopy`;
    here those (lists of text, dicts of numbers) are copied directly, and anything else still goes through
    :func:`copy.deepcopy`."""
    from copy import deepcopy

    from sqlglot.expressions import Expression

    root = tree.__class__()
    stack = [(tree, root)]
    while stack:
        node, copy = stack.pop()
        comments = node.comments
        if comments is not None:
            copy.comments = list(comments) if all(type(c) is str for c in comments) else deepcopy(comments)
        if node._type is not None:
            copy._type = deepcopy(node._type)
        meta = node._meta
        if meta is not None:
            copy._meta = dict(meta) if all(type(v) in _PLAIN for v in meta.values()) else deepcopy(meta)
        if node._hash is not None:
            copy._hash = node._hash
        for key, value in node.args.items():
            if isinstance(value, Expression):
                child = value.__class__()
                stack.append((value, child))
                copy.set(key, child)
            elif type(value) is list:
                copy.args[key] = []
                for item in value:
                    if isinstance(item, Expression):
                        child = item.__class__()
                        stack.append((item, child))
                        copy.append(key, child)
                    else:
                        copy.append(key, item)
            else:
                copy.args[key] = value
    return root


def clear() -> None:
    """Forget every parse (tests; a long-lived process that changes sqlglot settings)."""
    with _lock:
        _cache.clear()
        stats["hits"] = stats["misses"] = 0
