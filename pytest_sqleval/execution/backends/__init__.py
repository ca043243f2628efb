"""The engine backends and their registry: which backend serves a URL or an engine.

One module per engine (:mod:`.sqlite`, :mod:`.duckdb`, :mod:`.postgresql`, :mod:`.generic` for any other
SQLAlchemy URL), each a :class:`~.base.Backend`. The built-ins are registered first; a backend registered
later (``pytest_sqleval_engine_backends``: ``backends.register(MyBackend())``) is asked first, so it can
serve a scheme of its own or replace a built-in. Adding an engine is one module and one registration.
"""

from __future__ import annotations

import weakref
from typing import Any

from ...errors import DatabaseError
from ...suite import hide_password
from ..targets import registered_target
from .base import Backend, Target, first_line
from .duckdb import DuckDBBackend
from .generic import SQLGLOT_DIALECTS, GenericBackend
from .postgresql import PostgreSQLBackend
from .sqlite import SQLiteBackend

__all__ = ["BACKEND_DRIVERS", "BUILTIN_BACKENDS", "Backend", "BackendRegistry", "active_backends", "backend_for", "builtin_backends", "read_schema",
           "remember_backend", "target_of", "use_backends"]

#: The backend that opened each engine (a user's backend may open an engine of a built-in dialect).
_opened_by: weakref.WeakKeyDictionary[Any, Backend] = weakref.WeakKeyDictionary()


class BackendRegistry:
    """The backends of a session, asked last-registered first."""

    def __init__(self, backends: tuple[Backend, ...] = ()) -> None:
        self._backends: list[Backend] = []  # most recently registered first
        self._sqlglot: dict[str, str] = {}
        self._by_engine: weakref.WeakKeyDictionary[Any, Backend] = weakref.WeakKeyDictionary()
        for backend in backends:
            self.register(backend)

    def register(self, backend: Backend | type[Backend]) -> Backend:
        """Add ``backend`` (an instance, or a class taking no arguments); it is asked before every earlier one."""
        if isinstance(backend, type):
            backend = backend()
        missing = [name for name in ("owns", "open", "run") if not callable(getattr(backend, name, None))]
        if missing or not isinstance(getattr(backend, "name", None), str):
            raise TypeError(f"{backend!r} is not an engine backend: subclass "
                            "pytest_sqleval.execution.backends.base.Backend (it needs a name, owns, open and run)")
        self._backends.insert(0, backend)
        self._sqlglot.clear()
        self._by_engine = weakref.WeakKeyDictionary()
        return backend

    def __iter__(self):
        return iter(tuple(self._backends))

    def for_url(self, url: Any) -> Backend:
        """The backend serving ``url`` (a string or a SQLAlchemy ``URL``); DatabaseError for a malformed URL."""
        from sqlalchemy.engine import make_url

        try:
            parsed = make_url(url)
        except Exception as exc:  # noqa: BLE001 - never echo a URL with its password
            raise DatabaseError(f"bad database URL {hide_password(str(url))}: {first_line(exc)}") from None
        for backend in self._backends:
            if backend.owns(parsed):
                return backend
        raise DatabaseError(f"no engine backend serves {hide_password(str(url))}")

    def for_engine(self, engine: Any) -> Backend:
        """The backend that opened ``engine``, else the first that runs queries on its dialect."""
        opened = _lookup(_opened_by, engine)
        if opened is not None:
            return opened
        found = _lookup(self._by_engine, engine)
        if found is None:
            found = next((b for b in self._backends if b.owns_engine(engine)), None)
            if found is None:
                raise DatabaseError(f"no engine backend runs queries on a {engine.dialect.name} engine")
            try:
                self._by_engine[engine] = found
            except TypeError:
                pass
        return found

    def named(self, name: str) -> Backend | None:
        """The backend of that name (a target's first element), last registered first."""
        return next((b for b in self._backends if b.name == name), None)

    def sqlglot_dialect(self, engine_dialect: str) -> str:
        """The sqlglot dialect that reads SQL written for a SQLAlchemy dialect."""
        found = self._sqlglot.get(engine_dialect)
        if found is None:
            found = next((b.dialect.sqlglot for b in self._backends
                          if b.dialect is not None and b.dialect.engine == engine_dialect),
                         SQLGLOT_DIALECTS.get(engine_dialect, engine_dialect))
            self._sqlglot[engine_dialect] = found
        return found


def _lookup(mapping: weakref.WeakKeyDictionary, engine: Any) -> Backend | None:
    try:
        return mapping.get(engine)
    except TypeError:  # not weak-referenceable
        return None


#: The built-in backends in registration order (generic first, so it is asked last).
BUILTIN_BACKENDS: tuple[type[Backend], ...] = (GenericBackend, PostgreSQLBackend, DuckDBBackend, SQLiteBackend)


def builtin_backends() -> BackendRegistry:
    """A registry of the built-in backends only (the query process's, and any process without a session)."""
    return BackendRegistry(tuple(cls() for cls in BUILTIN_BACKENDS))


_BUILTINS = builtin_backends()

#: The driver modules of each built-in backend that has any (the query process has only the built-ins): the
#: zygote loads them when a query first needs that backend, so a SQLite-only run never pays for DuckDB's.
BACKEND_DRIVERS: dict[str, tuple[str, ...]] = {b.name: b.drivers for b in _BUILTINS if b.drivers}
_active: BackendRegistry | None = None


def active_backends() -> BackendRegistry:
    """The registry in force: the configured session's, or the built-ins."""
    return _active if _active is not None else _BUILTINS


def use_backends(registry: BackendRegistry | None) -> None:
    """Make ``registry`` the one in force (None: back to the built-ins); the plugin calls this at configure and
    unconfigure."""
    global _active
    _active = registry


def backend_for(url_or_engine: Any) -> Backend:
    """The backend of a URL (string or ``URL``) or of an engine, in the registry in force."""
    if isinstance(url_or_engine, str) or not hasattr(url_or_engine, "dialect"):
        return active_backends().for_url(url_or_engine)
    return active_backends().for_engine(url_or_engine)


def remember_backend(engine: Any, backend: Backend) -> Any:
    """Record that ``backend`` opened ``engine`` (it then runs its queries); returns the engine."""
    try:
        _opened_by[engine] = backend
    except TypeError:
        pass
    return engine


def target_of(engine: Any) -> Target | None:
    """How the query process reopens ``engine`` (None: its queries run in this process)."""
    try:
        return backend_for(engine).target(engine)
    except DatabaseError:
        return registered_target(engine)


def read_schema(engine: Any):
    """The :class:`~pytest_sqleval.schema.Schema` of ``engine``, read by its backend.

    A server engine of the user's own (an overridden ``sqleval_engine``, ``engine=``) may have no connect timeout:
    it is first connected within the default one, so a host that accepts and never answers is an error naming it,
    not a run that hangs."""
    url = getattr(engine, "url", None)
    if _lookup(_opened_by, engine) is None and getattr(url, "host", None):
        from .base import DEFAULT_CONNECT_TIMEOUT
        from .connect import probe

        probe(engine, url.render_as_string(hide_password=False), f"the {engine.dialect.name} database",
              DEFAULT_CONNECT_TIMEOUT, watchdog=True, sql=None)
    return backend_for(engine).read_schema(engine)
