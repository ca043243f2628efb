"""What the query process needs to reopen an engine: a small, picklable *target*.

A built-in backend (:mod:`pytest_sqleval.execution.backends`) registers the target of each engine it
opens (``("sqlite", path)``, ``("duckdb", url)``, ``("postgresql", url)``: the backend's name first);
for an engine the user made elsewhere (an overridden ``sqleval_engine`` fixture) the backend derives one
from its URL (:func:`pytest_sqleval.execution.backends.target_of`). The query process opens the same
database through the same backend (:meth:`~pytest_sqleval.execution.backends.base.Backend.open_target`),
so a query there is as read-only as one here. Engines without a target run in this process, with the
engine's own timeout only.
"""

from __future__ import annotations

import os
import weakref
from typing import Any

Target = tuple

_registered: weakref.WeakKeyDictionary[Any, Target] = weakref.WeakKeyDictionary()


def register_target(engine: Any, target: Target) -> Any:
    """Remember how to reopen ``engine`` in the query process; returns the engine."""
    try:
        _registered[engine] = target
    except TypeError:  # not weak-referenceable: derive it from the URL later
        pass
    return engine


def registered_target(engine: Any) -> Target | None:
    """The target registered when ``engine`` was opened, else None."""
    try:
        return _registered.get(engine)
    except TypeError:
        return None


def file_version(target: Target | None) -> tuple | None:
    """A SQLite target's file and WAL as (size, mtime, inode) each; None for any other target. An engine opened
    ``immutable=1`` goes on reading a file's old pages: whoever keeps one reopens it when this changes."""
    if not target or target[0] != "sqlite" or len(target) < 2:
        return None
    stamps = []
    for path in (str(target[1]), f"{target[1]}-wal"):
        try:
            stat = os.stat(path)
        except OSError:
            stamps.append(None)
        else:
            stamps.append((stat.st_size, stat.st_mtime_ns, stat.st_ino))
    return tuple(stamps)
