"""The engines of one test session: opened once per database through its backend, built from setup scripts.

Each database URL is served by one engine backend (:mod:`pytest_sqleval.execution.backends`: SQLite,
DuckDB, PostgreSQL, any other SQLAlchemy URL, and those a plugin registers), which opens it read-only
and hardened on the engine's own side, with a connect timeout (default 10 s) for network engines.

A database with ``setup:`` scripts is built once per run by its backend: a private file shared by the
xdist workers (SQLite, DuckDB), or a fresh database on the server (PostgreSQL, dropped at the end of the
run, also on SIGTERM/SIGINT; ``python -m pytest_sqleval.cleanup URL`` drops leftovers).
"""

from __future__ import annotations

import hashlib
import os
import re
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..defaults import effective_limit
from ..errors import DatabaseError
from ..secrets import mask_secrets, register_url_secrets
from ..suite import DatabaseSpec
from .backends import BUILTIN_BACKENDS, backend_for, remember_backend
from .backends.base import DEFAULT_CONNECT_TIMEOUT, BuildContext, first_line
from .backends.connect import probe


@dataclass
class EngineFactory:
    """Creates, caches and disposes the engines of one test session (one per xdist worker)."""

    build_dir: Path
    worker: str = "main"
    url_override: str | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT  # the run's setting (command line or ini, else the default)
    connect_timeout_from_cli: bool = False  # the command line wins over a suite's `connect_timeout:`
    run_id: str = field(default_factory=lambda: os.urandom(4).hex())
    #: The run's build folder shared by its xdist workers (the controller's): SQLite and DuckDB files are built
    #: there once per run, under a file lock; None: ``build_dir``.
    shared_build_dir: Path | None = None
    _engines: dict[Any, Any] = field(default_factory=dict)
    _failures: dict[Any, DatabaseError] = field(default_factory=dict)
    _cleanups: list[Callable[[], None]] = field(default_factory=list)
    #: (URL, digest of the scripts) -> the URL of the database built from them: suites whose scripts have the same
    #: bytes (copies in two folders) share one build instead of rebuilding (on a server: dropping) it
    _built: dict[tuple[str, str], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _factories[id(self)] = self

    def release_files(self, backend: str = "duckdb") -> None:
        """Close the open connections of this factory's engines of ``backend`` and the query process's, keeping
        the engines (their next use reconnects). A DuckDB file open read-only in any connection of a process can
        be opened read-write by no one meanwhile (DuckDB allows one writing process or many reading ones): the
        plugin calls this when a test that is no case of a suite comes next, so that test may write the file."""
        for engine in list(self._engines.values()):
            try:
                if backend_for(engine).name == backend:
                    engine.dispose()
            except Exception:  # noqa: BLE001 - best effort: a connection that fails to close was closed already
                pass

    def engine(self, spec: DatabaseSpec):
        """The read-only engine for ``spec`` (built from its setup scripts the first time)."""
        spec = self._effective(spec)
        key = (spec.url, spec.setup)
        if key in self._failures:
            raise self._failures[key]
        if key not in self._engines:
            try:
                self._engines[key] = self._open(spec)
            except DatabaseError as exc:
                self._failures[key] = exc
                raise
            except Exception as exc:  # noqa: BLE001 - never a raw traceback (it could show the URL)
                error = DatabaseError(f"cannot open {self.describe(spec)}: {type(exc).__name__}: {first_line(exc)}")
                self._failures[key] = error
                raise error from None
        return self._engines[key]

    def timeout_for(self, spec: DatabaseSpec) -> float:
        """Connect timeout for ``spec``: command line, then the suite's `connect_timeout:`, then ini, then 10 s."""
        return effective_limit(self.connect_timeout, spec.connect_timeout, DEFAULT_CONNECT_TIMEOUT,
                               from_cli=self.connect_timeout_from_cli)

    def restricted_role(self, spec: DatabaseSpec) -> str | None:
        """The NOLOGIN SELECT-only role of a PostgreSQL database built for ``spec`` (None if there is none)."""
        key = (self._effective(spec).url, spec.setup)
        engine = self._engines.get(key)
        return backend_for(engine).restricted_role(engine) if engine is not None else None

    def owns(self, engine: Any) -> bool:
        """Did this factory open ``engine``? (False for an engine from an overridden ``sqleval_engine`` fixture.)"""
        return any(engine is mine for mine in self._engines.values())

    def opened(self, spec: DatabaseSpec) -> Any:
        """The engine already opened for ``spec`` (None when there is none); opens nothing."""
        return self._engines.get((self._effective(spec).url, spec.setup))

    def label_of(self, engine: Any) -> str | None:
        """The database this factory opened ``engine`` for, as :meth:`describe` names it (None: not one of ours)."""
        for (url, setup), mine in self._engines.items():
            if mine is engine:
                return self.describe(DatabaseSpec(url=url, setup=setup))
        return None

    def describe(self, spec: DatabaseSpec) -> str:
        """The database a case really runs on, for reports (password hidden)."""
        spec = self._effective(spec)
        if spec.setup:
            return f"{spec.display} (built from {', '.join(p.name for p in spec.setup)})"
        return spec.display

    def _effective(self, spec: DatabaseSpec) -> DatabaseSpec:
        if self.url_override and spec.setup:
            return DatabaseSpec(url=self.url_override, setup=spec.setup, source=spec.source,
                                connect_timeout=spec.connect_timeout)
        return spec

    def close(self) -> None:
        """Dispose the engines and drop what this process built; a failure is one warning line, never a traceback.

        Safe to call twice and from a signal handler, and resumable: each engine is taken off its list before it
        is disposed, and each cleanup (the last registered first) once it has run, so a close that is interrupted
        (an xdist worker's SIGTERM cleanup cut short by the KeyboardInterrupt execnet raises when its controller
        is gone) leaves what it did not do to the next close, at unconfigure.
        """
        self._built.clear()
        while self._engines:
            _, engine = self._engines.popitem()
            try:
                engine.dispose()
            except Exception:  # noqa: BLE001 - best effort at teardown
                pass
        while self._cleanups:
            cleanup = self._cleanups[-1]
            try:
                cleanup()
            except Exception as exc:  # noqa: BLE001 - best effort at teardown, with a hint
                _warn(f"sqleval: cleanup failed: {mask_secrets(first_line(exc))}; drop leftovers with "
                      "`python -m pytest_sqleval.cleanup URL`")
            if self._cleanups and self._cleanups[-1] is cleanup:  # (a nested close may have taken it already)
                self._cleanups.pop()

    # -- opening -------------------------------------------------------------
    def _open(self, spec: DatabaseSpec):
        register_url_secrets(spec.url)
        timeout = self.timeout_for(spec)
        backend = backend_for(spec.url)
        url = self._build(backend, spec, timeout) if spec.setup else spec.url
        try:
            engine = backend.open(url, connect_timeout=timeout)
        except DatabaseError:
            raise
        except Exception as exc:  # noqa: BLE001 - a user's backend: name it and where it is, not just the URL
            if type(backend) in BUILTIN_BACKENDS:
                raise
            raise DatabaseError(f"cannot open {self.describe(spec)}: open() of {_user_backend(backend)} raised "
                                f"{type(exc).__name__}: {first_line(exc)}; fix that open() (or the suite's URL)") from None
        if type(backend) not in BUILTIN_BACKENDS and not hasattr(engine, "connect"):
            raise DatabaseError(f"cannot open {self.describe(spec)}: open() of {_user_backend(backend)} returned "
                                f"{type(engine).__name__}, not an engine; return sqlalchemy.create_engine(...)")
        if type(backend) not in BUILTIN_BACKENDS:
            # A user's backend may return an engine that connects lazily: a database it cannot reach is then an
            # error of the suite naming it, as for the built-ins (which probe in open), not an internal error of
            # each case. Connect only (its engine need not take `SELECT 1`), in this thread (its driver may refuse a
            # pooled connection made in another, as sqlite3's check_same_thread does).
            probe(engine, url, f"the {backend.name} backend's database", timeout, sql=None)
        return remember_backend(engine, backend)

    def _build(self, backend, spec: DatabaseSpec, timeout: float = DEFAULT_CONNECT_TIMEOUT) -> str:
        digest = _setup_digest(spec)
        if (spec.url, digest) in self._built:
            return self._built[spec.url, digest]
        context = BuildContext(folder=self.shared_build_dir or self.build_dir, digest=digest,
                               run_id=self.run_id, worker=self.worker, connect_timeout=timeout,
                               on_cleanup=self._cleanups.append)
        built = backend.build(spec.url, spec.setup, context)
        if built is None:
            raise DatabaseError(
                f"setup scripts are supported for SQLite, DuckDB and PostgreSQL, not {spec.dialect} ({spec.display})"
            )
        self._built[spec.url, digest] = built
        return built


def _user_backend(backend) -> str:
    """``the 'shadow' engine backend (conftest.py)``: a user's backend, by name and the file that defines it."""
    import inspect

    try:
        where = f" ({inspect.getfile(type(backend))})"
    except (TypeError, OSError):
        where = ""
    return f"the {backend.name!r} engine backend{where}"


def factory_engine(factory, spec: DatabaseSpec):
    """The engine ``factory`` (the ``sqleval_engine_factory`` fixture) gives for ``spec``: the plugin's takes the
    spec itself; one a conftest.py put in its place is called as the README calls the fixture, with the database's
    URL (a file's ``sqlite:///``/``duckdb:///`` URL) and, when it has any, ``setup=`` its scripts."""
    engine_of = getattr(factory, "engine", None)
    if callable(engine_of):
        return engine_of(spec)
    if not callable(factory):
        raise TypeError(f"the sqleval_engine_factory fixture returned {type(factory).__name__}, not a callable: "
                        "return a function taking a path or URL (and setup=) that returns a SQLAlchemy engine")
    return factory(spec.url, setup=list(spec.setup)) if spec.setup else factory(spec.url)


#: The live factories of this process (the session's, and the one the ``sqleval_engine_factory`` fixture makes
#: without ``--sqleval``), by id: a dataclass is not hashable.
_factories: weakref.WeakValueDictionary[int, EngineFactory] = weakref.WeakValueDictionary()


def release_file_handles(backend: str = "duckdb") -> None:
    """Close every open connection of this process and of its query process to databases of ``backend``: the
    files are then free to be opened read-write (by a test's own connection); the engines reconnect when used."""
    from .sandbox import release_query_process_files  # the module in sys.modules (see suite_cache.load_suite_shared)

    for factory in list(_factories.values()):
        factory.release_files(backend)
    release_query_process_files(backend)


def _warn(message: str) -> None:
    import sys

    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr closed at exit
        pass


def _setup_digest(spec: DatabaseSpec) -> str:
    """The built database's name: the dialect and each script's bytes, each with its length, so scripts split
    differently (["A", "BC"] and ["AB", "C"]) never share a build: one of them may fail on its own."""
    h = hashlib.sha256(spec.dialect.encode())
    for script in spec.setup:
        data = script.read_bytes()
        if spec.dialect == "duckdb" and _quotes_a_relative_file(data):
            # `COPY t FROM 'rows.csv'` reads the file beside it (backends.duckdb.search_beside): the same script in
            # another folder reads another file, so it is another build
            h.update(str(script.parent).encode() + b"\0")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()[:16]


#: A quoted text ending in a file suffix (`'rows.csv'`): a cheap first look, so that the tokenizer (~0.6 s for 6,500
#: INSERTs) reads only the scripts that may name a file.
_FILE_LIKE_LITERAL = re.compile(rb"'[^'\n]*\.[A-Za-z][A-Za-z0-9]*'")


def _quotes_a_relative_file(data: bytes) -> bool:
    """Does the script quote a relative file path (`'rows.csv'`, `'data/x.parquet'`: a string literal with a file
    suffix, not absolute)? Read from its bytes alone, so every process names the build alike."""
    from sqlglot import TokenType
    from sqlglot.dialects.dialect import Dialect

    if _FILE_LIKE_LITERAL.search(data) is None:
        return False
    try:
        tokens = Dialect.get_or_raise("duckdb").tokenize(data.decode("utf-8-sig"))
    except Exception:  # noqa: BLE001 - unread: a build of its own folder
        return True
    for token in tokens:
        if token.token_type == TokenType.STRING and not os.path.isabs(token.text) and "://" not in token.text:
            suffix = os.path.splitext(token.text)[1]
            if any(ch.isalpha() for ch in suffix):
                return True
    return False
