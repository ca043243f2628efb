"""The query processes: run queries for :mod:`pytest_sqleval.execution.sandbox`, under OS resource limits.

``python -m pytest_sqleval.execution.sandbox_worker FD`` starts the *zygote* of one pytest process: it
imports everything once and forks a query process for each request on the control socket FD. A query
process reads length-prefixed pickled requests on its own socket and answers there, one at a time. It
caps its own data memory (``RLIMIT_DATA``) before the first query and is killed by the kernel if its
parent dies, so nothing it runs can outlive the run or take more than the memory cap. Everything a query can do wrong
comes back as an answer (a result or a :class:`~pytest_sqleval.errors.QueryError` kind and message);
only the parent's wall clock (a kill) or the kernel stops this process from outside.

A query process whose state can no longer be trusted retires after its answer (the answer comes as
``("retire", answer, reason, peak bytes)``): after a query ran out of memory, met Python's recursion limit (in
the guard, or reading a value of its result), met a DuckDB internal error (DuckDB then invalidates the database in
the process) or raised something unexpected (an interpreter that hit a limit inside C code can fail later in unrelated places:
a parse raising ``TypeError``, a crash), or when it kept more than half its memory cap. Its parent forks a
fresh one for the next query, so one hostile prediction never changes another prediction's verdict.
"""

from __future__ import annotations

import itertools
import os
import pickle
import signal
import sys
import time
from typing import Any, BinaryIO

from .protocol import HEADER, read_message, write_message
from .targets import file_version as _file_version

#: Why a query process retires (:attr:`Worker.unsound`): the two reasons several requests share.
OUT_OF_MEMORY = "a query ran out of memory"
RECURSION_LIMIT = "it reached Python's recursion limit"


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the process that started it exits (PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except Exception:  # noqa: BLE001 - best effort: the closed pipe also ends the loop
        pass


def _limit_memory(max_memory: int | None) -> None:
    """Cap the process's data memory at what it uses now plus ``max_memory`` bytes.

    ``RLIMIT_DATA`` (Linux >= 4.7) counts private writable memory: the heap, anonymous mappings, thread
    stacks; unlike ``RLIMIT_AS`` it does not count address space reserved but never made writable (malloc
    arenas, DuckDB's allocator), so the cap is on memory a query can really fill.
    """
    if not max_memory:
        return
    try:
        import resource

        limit = _data_size() + int(max_memory)
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ImportError, ValueError, OSError):  # not Linux, or not allowed: the engines' own caps remain
        pass


def _data_size() -> int:
    """This process's data size now (VmData), in bytes (0 when unknown)."""
    return _status_bytes("VmData:")


def _status_bytes(field: str) -> int:
    """A size field of /proc/self/status (``VmData:``, ``VmHWM:``), in bytes (0 when unknown: not Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def open_target(target: tuple, *, max_memory: int | None = None):
    """Open a target's engine (in the query process) through the backend it names, with that backend's own
    hardening and memory caps (only the built-in backends are here: the zygote imports no conftest)."""
    from .backends import active_backends

    backend = active_backends().named(target[0])
    if backend is None:
        raise ValueError(f"unknown query target {target[0]!r}")
    return backend.open_target(target, max_memory=max_memory)


def _dispose(engine: Any) -> None:
    try:
        engine.dispose()
    except Exception:  # noqa: BLE001 - closing is best effort: the memory goes with the process anyway
        pass


class Worker:
    """Keeps one open engine per database target; runs one request at a time."""

    def __init__(self) -> None:
        self.engines: dict[Any, Any] = {}
        self.versions: dict[Any, Any] = {}  # key -> the SQLite file's version when its engine was opened
        #: why this process must retire after its current answer (None: it may serve the next query)
        self.unsound: str | None = None

    def engine(self, target: tuple, max_memory: int | None):
        from ..errors import DatabaseError

        key = (target, max_memory)
        version = _file_version(target)
        if key in self.engines and self.versions.get(key) != version:
            # The SQLite file changed since it was opened (a test's own writable engine on it): an engine opened
            # `immutable=1` would go on reading its old pages. Reopen it.
            _dispose(self.engines.pop(key))
        self.versions[key] = version
        if key not in self.engines:
            try:
                self.engines[key] = open_target(target, max_memory=max_memory)
            except DatabaseError:
                if not self.engines:
                    raise
                # The databases opened for earlier queries share this process's memory cap (DuckDB keeps a buffer
                # pool per database): close them and try once more before calling the cap too small.
                self.close_engines()
                self.engines[key] = open_target(target, max_memory=max_memory)
        return self.engines[key]

    def close_engines(self) -> None:
        engines, self.engines = self.engines, {}
        for engine in engines.values():
            _dispose(engine)

    def release(self, kind: str) -> None:
        """Close the engines of targets of backend ``kind`` (their files' locks go with them)."""
        for key in [key for key in self.engines if key[0] and key[0][0] == kind]:
            self.versions.pop(key, None)
            _dispose(self.engines.pop(key))

    def handle(self, request: dict[str, Any]) -> tuple:
        """The answer to one request; sets :attr:`unsound` when this process should run no further query."""
        from ..errors import DatabaseError, QueryError
        from ..sql.guard import NestedTooDeeply

        if "release" in request:
            self.release(request["release"])
            return ("released",)
        started = time.monotonic()
        try:
            return ("ok", self._run(request, started))
        except NestedTooDeeply as exc:  # the guard met Python's recursion limit
            self.unsound = RECURSION_LIMIT
            return ("error", exc.kind, exc.message)
        except QueryError as exc:
            if exc.kind == "memory":
                self.unsound = OUT_OF_MEMORY
            elif getattr(exc, "unsound", None):  # the engine says its own state is lost (DuckDB's internal errors)
                self.unsound = exc.unsound
            if getattr(exc, "function", None):  # a function off the allowlist: named apart for the caller
                return ("error", exc.kind, exc.message, exc.function)
            return ("error", exc.kind, exc.message)
        except DatabaseError as exc:
            return ("database", str(exc))
        except MemoryError:
            self.unsound = OUT_OF_MEMORY
            return ("error", "memory", _memory_message(request))
        except RecursionError:
            self.unsound = RECURSION_LIMIT
            return ("error", "rejected", "the query is nested too deeply to check")

    def _run(self, request: dict[str, Any], started: float):
        from ..errors import QueryError
        from .runner import STATEMENT_REWRITES, execute_inline, official_statement, prepare_sql

        sql, rewrite = request["sql"], request.get("rewrite")
        if request.get("cut_statement") and rewrite in STATEMENT_REWRITES:  # what the official evaluator runs
            sql, rewrite = official_statement(sql, request["dialect"], rewrite)
            if sql is None:  # no statement at all: nothing runs and there are no rows, as there
                return (), []
        if request["untrusted"] or rewrite:
            sql = prepare_sql(sql, request["dialect"], untrusted=request["untrusted"], rewrite=rewrite,
                              allow_functions=request.get("allow_functions") or frozenset(),
                              engine_dialect=request.get("engine_dialect"))
        remaining = request["timeout"] - (time.monotonic() - started)
        if remaining <= 0:
            raise QueryError("timeout", f"checking the query took longer than the timeout ({request['timeout']:g} s)")
        engine = self.engine(request["target"], request.get("max_memory"))
        executing = time.perf_counter()
        try:
            result = execute_inline(engine, sql, timeout=remaining, max_rows=request["max_rows"],
                                    role=request.get("role"), timeout_label=request["timeout"],
                                    text_errors=request.get("text_errors") or "replace",
                                    distinct_rows=bool(request.get("distinct_rows")))
            elapsed = time.perf_counter() - executing  # what BIRD's R-VES times (QueryResult.elapsed)
            _check_scoring_memory(result, request.get("max_memory"))
            rows = _picklable_rows(result.rows)
        except RecursionError:  # the driver reading a value (PostgreSQL's json of 5,000 levels): the query ran
            self.unsound = RECURSION_LIMIT
            raise QueryError("runtime", RESULT_TOO_DEEP) from None
        return result.columns, rows, elapsed


#: A result holding a value nested deeper than Python's recursion limit lets the driver read (kind ``runtime``: the
#: query was checked and ran; "nested too deeply to check" is the guard's refusal of a query text).
RESULT_TOO_DEEP = ("the query ran, but a value of its result is nested too deeply to be read (Python's recursion "
                   "limit; a deeply nested JSON value, for example)")


#: What one value of a result costs the pytest process that compares it (the result sent, normalised, compared
#: column-wise; measured at about 140 bytes for short text under the `mro` profile, both results counted), with room.
SCORING_BYTES_PER_VALUE = 256
#: An element inside a list, struct, map or JSON value (DuckDB, PostgreSQL) counts as this many values: it is
#: normalised, hashed and written element by element (measured at about 5 us each, three times a plain value).
NESTED_ELEMENT_WEIGHT = 4
_CONTAINERS = (list, tuple, dict, set, frozenset)


def _check_scoring_memory(result: Any, max_memory: int | None) -> None:
    """A ``memory`` miss for a result the query process could hold but the pytest process could not afford to score:
    more values (rows x columns, each element of a nested value counting :data:`NESTED_ELEMENT_WEIGHT`) than the
    memory cap allows at :data:`SCORING_BYTES_PER_VALUE` each. Many small values cost the comparison far more than
    their size in the query process, so the cap bounds the scoring too."""
    if not max_memory:
        _nested_elements(result.rows, None)  # the nesting depth alone
        return
    budget = max_memory // SCORING_BYTES_PER_VALUE
    width = result.column_count  # a user's backend may leave `columns` empty: the rows' width
    cells = len(result.rows) * width
    nested = _nested_elements(result.rows, budget) if cells <= budget else 0
    if cells + NESTED_ELEMENT_WEIGHT * nested <= budget:
        return
    from ..errors import QueryError

    inside = f", and {_count(nested, 'element')} counted inside nested values" if nested else ""
    raise QueryError("memory", f"the result has {_count(len(result.rows), 'row')} x {_count(width, 'column')} "
                               f"({_count(cells, 'value')}{inside}): scoring it needs more memory than "
                               f"{max_memory / 2**20:.0f} MiB (about {SCORING_BYTES_PER_VALUE} bytes per value, "
                               f"{NESTED_ELEMENT_WEIGHT} values per nested element; raise it with "
                               "--sqleval-max-memory or the suite's `max_memory:`)")


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


#: The deepest nesting of a result's value (a list in a list ..., PostgreSQL's JSON arrays and objects built at run
#: time) that the pytest process scores: normalising, comparing and reporting a value walk it recursively, several
#: frames a level under Python's recursion limit (a JSON value 480 levels deep errored its case). A deeper value is a
#: ``runtime`` miss, as one the driver cannot read at all.
MAX_RESULT_DEPTH = 100


def _nested_elements(rows: list, budget: int | None) -> int:
    """How many elements the rows' list/struct/map values hold, nested ones included (counting stops past
    ``budget``; ``None``: no budget). Rows of plain values (every SQLite result) are told apart at C speed by their
    set of types. A value nested deeper than :data:`MAX_RESULT_DEPTH` is a ``runtime`` miss."""
    if not any(issubclass(t, _CONTAINERS) for t in set(map(type, itertools.chain.from_iterable(rows)))):
        return 0
    count = 0
    stack = [(v, 1) for row in rows for v in row if isinstance(v, _CONTAINERS)]
    while stack and (budget is None or count <= budget):
        value, depth = stack.pop()
        if depth > MAX_RESULT_DEPTH:
            from ..errors import QueryError

            raise QueryError("runtime", f"the query ran, but a value of its result is nested more than "
                                        f"{MAX_RESULT_DEPTH} levels deep (the deepest value scored)")
        items = list(value.keys()) + list(value.values()) if isinstance(value, dict) else value
        count += len(items)
        stack.extend((v, depth + 1) for v in items if isinstance(v, _CONTAINERS))
    return count


def _memory_message(request: dict[str, Any]) -> str:
    cap = request.get("max_memory")
    shown = f"{cap / 2**20:.0f} MiB" if cap else "the memory cap"
    return f"the query needed more memory than {shown} (raise it with --sqleval-max-memory or the suite's `max_memory:`)"


def _picklable_rows(rows: list) -> list:
    try:
        pickle.dumps(rows[:1])
        return rows
    except Exception:  # noqa: BLE001 - a driver type pickle cannot carry: send its text
        return [tuple(v if _plain(v) else str(v) for v in row) for row in rows]


def _plain(value: Any) -> bool:
    try:
        pickle.dumps(value)
        return True
    except Exception:  # noqa: BLE001
        return False


def serve(stdin: BinaryIO, stdout: BinaryIO, max_memory: int | None) -> None:
    """Answer requests until the input closes: the life of one query process."""
    import threading

    threading.stack_size(512 * 1024)  # the watchdog threads need little stack; stacks count as data memory
    _limit_memory(max_memory)
    start_size = _data_size()
    worker = Worker()
    write_message(stdout, ("ready", os.getpid()))
    while True:
        try:
            request = read_message(stdin)
        except EOFError:
            return
        try:
            answer = worker.handle(request)
        except MemoryError:
            worker.unsound = OUT_OF_MEMORY
            answer = ("error", "memory", _memory_message(request))
        except BaseException as exc:  # noqa: BLE001 - anything else is reported, never fatal here
            worker.unsound = f"it raised {type(exc).__name__}"
            answer = ("error", "runtime", f"{type(exc).__name__}: {exc}"[:500])
        reason = worker.unsound or _kept_memory(start_size, max_memory)
        if reason is not None:
            answer = ("retire", answer, reason, _peak_size())
        try:
            write_message(stdout, answer)
        except MemoryError:
            write_message(stdout, ("retire", ("error", "memory", _memory_message(request)), OUT_OF_MEMORY,
                                   _peak_size()))
            return
        if reason is not None:
            return  # its successor, a fresh fork of the zygote, runs the next query


def _kept_memory(start_size: int, max_memory: int | None) -> str | None:
    """Why a process that kept more than half its memory cap after answering must retire (None: it did not).

    The next query could not have the cap: it would run out of memory in places that do not fail cleanly (a
    parse, a driver's C code), and an innocent prediction would score as a crash."""
    if not max_memory:
        return None
    kept = _data_size() - start_size
    if kept <= max_memory // 2:
        return None
    return f"it kept {kept / 2**20:.0f} MiB of its {max_memory / 2**20:.0f} MiB cap after the query"


def _peak_size() -> int:
    """This process's peak resident size (VmHWM), in bytes (0 when unknown)."""
    return _status_bytes("VmHWM:")


def zygote(control_fd: int) -> None:
    """Fork a query process for every request on the control socket (the zygote never runs a query).

    The zygote has imported everything once; a fork of it starts in milliseconds, even on a loaded
    machine where a fresh interpreter takes seconds. It is single-threaded, so forking it is safe.
    """
    import socket

    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    control.sendall(HEADER.pack(0))  # ready
    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(control, 4096, 1)
        except OSError:
            return
        if not message or not fds:
            return
        max_memory, backend = pickle.loads(message)
        _preload_backend(backend)  # once per backend, here: forks inherit it and it is not the query's memory
        pid = os.fork()
        if pid == 0:  # the query process
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _die_with_parent()
            channel = socket.socket(fileno=fds[0])
            try:
                serve(channel.makefile("rb"), channel.makefile("wb"), max_memory)
            finally:
                os._exit(0)
        os.close(fds[0])
        control.sendall(HEADER.pack(pid))


def main() -> None:
    # No parent-death signal here: it fires when the *thread* that started this process ends, and the
    # zygote must outlive any pool thread that happened to start it. It exits when its control socket
    # closes (its parent ended), and its query processes die with it (their parent-death signal).
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for pytest; the parent ends this process
    sys.stdout = sys.stderr  # nothing but answers goes to the pipes
    _preload()
    zygote(int(sys.argv[1]))
    os._exit(0)  # its parent ended: nothing to flush or close, so no freeing of every imported module either


def _preload() -> None:
    """Import what queries need before the memory cap is set (imports are not the query's memory)."""
    import sqlite3  # noqa: F401

    import sqlalchemy  # noqa: F401
    import sqlglot  # noqa: F401

    from ..sql import guard, rewrite, statements  # noqa: F401
    from . import backends, runner  # noqa: F401


def _preload_backend(backend: str | None) -> None:
    """The drivers a backend's queries import (:data:`.backends.BACKEND_DRIVERS`), loaded by the zygote only when
    a query first needs that backend (before forking its query process): DuckDB and psycopg cost a zygote ~0.4 s
    of CPU that a SQLite-only run, each xdist worker's zygote included, no longer pays."""
    from .backends import BACKEND_DRIVERS

    for module in BACKEND_DRIVERS.get(backend or "", ()):
        if module not in sys.modules:
            try:
                __import__(module)
            except ImportError:  # the query then gets the backend's own "install ..." message
                pass


if __name__ == "__main__":
    main()
