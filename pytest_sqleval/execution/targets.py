"""What the query process needs to reopen an engine: a small, picklable *target*.

An engine opened by :mod:`pytest_sqleval.execution.engines` registers its target
(``("sqlite", path)``, ``("duckdb", url)``, ``("postgresql", url)``); an engine
the user made elsewhere (an overridden ``sqleval_engine`` fixture) gets one
derived from its URL for SQLite files, DuckDB and PostgreSQL. The query process
opens the same database through the same hardened openers
(:func:`pytest_sqleval.execution.sandbox_worker.open_target`), so a query there is
as read-only as one here. Engines of other backends have no target and run in
this process, with the engine's own timeout only.
"""

from __future__ import annotations

import weakref
from pathlib import Path
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


def target_of(engine: Any) -> Target | None:
    """The target of an engine, or None when only this process can run its queries."""
    try:
        found = _registered.get(engine)
    except TypeError:
        found = None
    if found is not None:
        return found
    return _derived_target(engine)


def _derived_target(engine: Any) -> Target | None:
    url = getattr(engine, "url", None)
    if url is None:
        return None
    backend = url.get_backend_name()
    if backend == "sqlite":
        database = url.database
        if database and database != ":memory:" and not database.startswith("file:") and Path(database).is_file():
            return ("sqlite", str(Path(database).resolve()))
        return None
    if backend == "duckdb":
        if url.database and url.database != ":memory:":
            return ("duckdb", url.render_as_string(hide_password=False))
        return None
    if backend == "postgresql":
        return ("postgresql", url.render_as_string(hide_password=False))
    return None
