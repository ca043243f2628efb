"""Limits enforced from outside the query: every query runs in a killable process.

One pytest process (the serial run, or each xdist worker) keeps one *query
process* (:mod:`~pytest_sqleval.execution.sandbox_worker`), forked from a
*zygote* that imported everything once, so a new one starts in milliseconds.
A query is sent to it with its limits; the answer is a result or an error kind.
Three limits hold whatever the query does:

- **time**: the engine's own interrupt fires at the timeout (SQLite progress
  handler, DuckDB ``interrupt()``, PostgreSQL ``statement_timeout``); a query
  that never yields to it (one long SQLite function call, a PostgreSQL LIKE
  over huge constants) is stopped by this process's wall clock, which kills the
  query process at ``timeout + KILL_GRACE`` seconds. The guard's own parsing
  runs inside the same budget.
- **memory**: the query process caps its data memory (``RLIMIT_DATA``) at its
  size after start-up plus ``max_memory`` (default 2 GiB); DuckDB's
  ``memory_limit`` is half of that, with one thread, no I/O threads and no
  spilling. Going over is a miss of kind ``memory``.
- **survival**: a crash of the query process (a driver bug, the kernel's OOM
  killer) is that one query's error; the next query starts a fresh process.
  So does a query that left the process unsound (out of memory, Python's
  recursion limit, an unexpected exception) or holding over half its memory
  cap: the process answers, then retires, and the next query gets a fresh fork.

Killing costs one fork of the zygote (milliseconds), paid only after a query
was killed. A query that ends normally costs one round trip on a local socket
(tens of microseconds; see ``benchmarks/bench_sandbox.py``). :meth:`QuerySandbox.submit` sends a query
ahead (a case's gold or prediction), so the query process runs it while this process scores the case
(exact match, hardness): on two cores the two overlap, under the same limits.
"""

from __future__ import annotations

import atexit
import os
import pickle
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import DatabaseError, QueryError
from ..results import QueryResult
from .backends import BACKEND_DRIVERS
from .protocol import HEADER, write_message

#: Seconds past the timeout before the query process is killed.
KILL_GRACE = 0.5

#: Seconds a new query process may take to start (imports on a loaded machine).
START_TIMEOUT = 60.0

#: Seconds a ready zygote may take to fork (milliseconds normally; a frozen zygote is replaced after this).
FORK_TIMEOUT = 10.0

#: Default memory cap of a query (bytes).
DEFAULT_MAX_MEMORY = 2 * 2**30


class _Zygote:
    """The process that forks query processes (see :func:`.sandbox_worker.zygote`)."""

    def __init__(self) -> None:
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        env.pop("PYTEST_XDIST_WORKER", None)
        env.setdefault("MALLOC_ARENA_MAX", "2")  # few malloc arenas: memory stays within the cap's accounting
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "pytest_sqleval.execution.sandbox_worker", str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                pass_fds=(theirs.fileno(),), start_new_session=True,
            )
        except OSError as exc:
            ours.close()
            raise DatabaseError(f"the query process did not start ({exc})") from None
        finally:
            theirs.close()
        self.control = ours
        self.ready = False
        #: the backends whose drivers the zygote has imported (every later fork has them)
        self.backends: set[str] = set()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def fork(self, max_memory: int | None, backend: str | None = None) -> _QueryProcess:
        """A new query process, forked in milliseconds (waits for the zygote's imports the first time).

        ``backend``: the zygote imports that backend's driver first (once), so the process has it preloaded."""
        try:
            if not self.ready:
                _read_exactly(self.control.fileno(), HEADER.size, time.monotonic() + START_TIMEOUT)
                self.ready = True
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                socket.send_fds(self.control, [pickle.dumps((max_memory, backend))], [theirs.fileno()])
            finally:
                theirs.close()
            wait = START_TIMEOUT if backend in BACKEND_DRIVERS and backend not in self.backends else FORK_TIMEOUT
            (pid,) = HEADER.unpack(_read_exactly(self.control.fileno(), HEADER.size, time.monotonic() + wait))
        except (OSError, EOFError, TimeoutError) as exc:
            self.close()
            raise DatabaseError(f"the query process did not start ({type(exc).__name__}: {exc})") from None
        if backend in BACKEND_DRIVERS:
            self.backends.add(backend)
        return _QueryProcess(pid, ours, max_memory, frozenset(self.backends))

    def close(self) -> None:
        """End the zygote now. It only forks, so it has nothing to finish: it is killed and reaped at once rather
        than waited for (its own exit frees every module it imported, ~0.1 s; longer if it is still importing them
        at start-up). Its query processes die with it (their parent-death signal)."""
        try:
            self.control.close()  # (a zygote whose parent died without closing exits on this end of input)
        except OSError:
            pass
        try:
            self.popen.kill()  # nothing once it has been reaped
        except OSError:
            pass
        try:
            self.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


class _QueryProcess:
    def __init__(self, pid: int, channel: socket.socket, max_memory: int | None,
                 backends: frozenset[str] = frozenset()) -> None:
        self.pid = pid
        self.channel = channel
        self.writer = channel.makefile("wb")
        self.max_memory = max_memory
        self.backends = backends
        self.ready = False
        self.dead = False
        #: the backends (a target's first element) of the databases this process has been sent queries on
        self.kinds: set[str] = set()

    def kill(self) -> None:
        self.dead = True
        try:
            os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.close()

    def close(self) -> None:
        for closable in (self.writer, self.channel):
            try:
                closable.close()
            except OSError:
                pass


class QuerySandbox:
    """A zygote and its current query process, replaced when it is killed or dies. Thread-safe:
    one query at a time."""

    def __init__(self) -> None:
        self._zygote: _Zygote | None = None
        self._current: _QueryProcess | None = None
        self._pending: _Sent | None = None  # a query sent by submit(), its answer not read yet
        self._lock = threading.Lock()
        #: why the last query process that retired did so (see :mod:`.sandbox_worker`), and the largest peak
        #: resident size (bytes) of a retired query process
        self.last_retirement: str | None = None
        self.retired_peak = 0

    @property
    def pid(self) -> int | None:
        """The current query process's pid (None before the first query)."""
        return self._current.pid if self._current is not None else None

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        """Start the zygote now: its imports then cost no case any time (query processes fork from it later,
        each with the memory cap of its first query)."""
        with self._lock:
            self._zygote_alive()

    def _zygote_alive(self) -> _Zygote:
        if self._zygote is None or not self._zygote.alive():
            self._zygote = _Zygote()
        return self._zygote

    def _ensure(self, max_memory: int | None, backend: str | None = None) -> _QueryProcess:
        """The ready query process for ``max_memory`` (with ``backend``'s driver preloaded); a start that fails is
        retried once with a new zygote."""
        try:
            return self._ensure_once(max_memory, backend)
        except DatabaseError:
            if self._zygote is not None:
                self._zygote.close()
                self._zygote = None
            return self._ensure_once(max_memory, backend)

    def _ensure_once(self, max_memory: int | None, backend: str | None) -> _QueryProcess:
        current = self._current
        if current is not None and current.ready and _hung_up(current):
            current.kill()  # it died between two queries: replace it before sending anything
        if (current is None or current.dead or current.max_memory != max_memory
                or (backend in BACKEND_DRIVERS and backend not in current.backends)):
            if current is not None:
                current.kill()
            self._current = None
            self._current = current = self._zygote_alive().fork(max_memory, backend)
        if not current.ready:
            try:
                answer = _receive(current, time.monotonic() + START_TIMEOUT)
            except (OSError, EOFError, TimeoutError) as exc:
                current.kill()
                self._current = None
                raise DatabaseError(f"the query process did not start ({type(exc).__name__}: {exc})") from None
            if not (isinstance(answer, tuple) and answer and answer[0] == "ready"):
                current.kill()
                self._current = None
                raise DatabaseError(f"the query process did not start (it answered {answer!r})")
            current.ready = True
        return current

    def close(self) -> None:
        with self._lock:
            self._pending = None
            if self._current is not None:
                self._current.kill()
                self._current = None
            if self._zygote is not None:
                self._zygote.close()
                self._zygote = None

    def release(self, kind: str) -> None:
        """Make the query process close its databases of backend ``kind`` (``"duckdb"``: a DuckDB file it has
        open read-only cannot be opened read-write by anyone else meanwhile); they are reopened by the next query
        on them. Nothing is sent when the process has run no query on such a database."""
        with self._lock:
            self._claim_pending({})  # an answer sent ahead and not yet read is read first (and dropped)
            process = self._current
            if process is None or process.dead or not process.ready or kind not in process.kinds:
                return
            process.kinds.discard(kind)
            try:
                write_message(process.writer, {"release": kind})
                answer = _receive(process, time.monotonic() + FORK_TIMEOUT)
            except (OSError, EOFError, TimeoutError, ValueError):
                answer = None
            if answer != ("released",):
                process.kill()  # its files' locks go with it
                self._current = None

    # -- one query ----------------------------------------------------------------
    def run(self, target: tuple[Any, ...], sql: str, *, timeout: float, max_rows: int, untrusted: bool, dialect: str,
            rewrite: str | None = None, allow_functions: frozenset[str] = frozenset(), role: str | None = None,
            max_memory: int | None = DEFAULT_MAX_MEMORY, engine_dialect: str | None = None,
            cut_statement: bool = False, text_errors: str = "replace", distinct_rows: bool = False) -> QueryResult:
        """Run a query in the query process; ``cut_statement``: the query process first keeps only the statement
        the official evaluator runs (:func:`.runner.official_statement`, for ``rewrite`` ``official_distinct`` or
        ``sqlite3_statement``); without it the text is sent already cut."""
        request = _request(target, sql, timeout=timeout, max_rows=max_rows, untrusted=untrusted, dialect=dialect,
                           rewrite=rewrite, allow_functions=allow_functions, role=role, max_memory=max_memory,
                           engine_dialect=engine_dialect, cut_statement=cut_statement,
                           text_errors=text_errors, distinct_rows=distinct_rows)
        with self._lock:
            sent = self._claim_pending(request)  # sent earlier by submit(): the query process has been working on it
            answer = self._await(sent if sent is not None else self._send(request))
        return _result(answer)

    def submit(self, target: tuple[Any, ...], sql: str, *, timeout: float, max_rows: int, untrusted: bool, dialect: str,
               rewrite: str | None = None, allow_functions: frozenset[str] = frozenset(), role: str | None = None,
               max_memory: int | None = DEFAULT_MAX_MEMORY, engine_dialect: str | None = None,
               cut_statement: bool = False, text_errors: str = "replace", distinct_rows: bool = False) -> None:
        """Send a query now; the :meth:`run` with the same arguments collects its answer.

        So the query process guards and runs a case's prediction while this process does other work for the
        case (exact match): on two cores, the two overlap. The limits are unchanged: the wall clock runs from
        the send, and a query that does not yield is killed at ``timeout + KILL_GRACE`` as always."""
        request = _request(target, sql, timeout=timeout, max_rows=max_rows, untrusted=untrusted, dialect=dialect,
                           rewrite=rewrite, allow_functions=allow_functions, role=role, max_memory=max_memory,
                           engine_dialect=engine_dialect, cut_statement=cut_statement,
                           text_errors=text_errors, distinct_rows=distinct_rows)
        with self._lock:
            sent = self._claim_pending(request)
            if sent is not None:
                self._pending = sent  # already on its way (submitted at setup, asked again at call)
                return
            try:
                self._pending = self._send(request)
            except DatabaseError:
                self._pending = None  # run() starts it again and reports the failure there

    def _claim_pending(self, request: dict[str, Any]) -> _Sent | None:
        """The submitted query if it is ``request`` (on the current query process), else None; a submitted answer
        nobody asks for is read (or timed out) first, so at most one request is ever in flight. Call under the lock."""
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        if pending.request == request and pending.process is self._current:
            return pending
        self._await(pending)
        return None

    def _send(self, request: dict[str, Any]) -> _Sent:
        process = self._ensure(request["max_memory"], request["target"][0] if request["target"] else None)
        if request["target"]:
            process.kinds.add(request["target"][0])
        sent = _Sent(request, process, time.monotonic() + request["timeout"] + KILL_GRACE)
        try:
            write_message(process.writer, request)
        except OSError:
            sent.failed = True
        return sent

    def _await(self, sent: _Sent) -> tuple[Any, ...]:
        """The answer to ``sent``: the query process's own, or the error of a query it did not survive."""
        process = sent.process
        try:
            if sent.failed:
                raise EOFError
            answer: tuple[Any, ...] = _receive(process, sent.deadline)
            if answer[0] == "retire":  # its state is no longer sound (see sandbox_worker): the next query gets a new one
                _status, answer, self.last_retirement, peak = answer
                self.retired_peak = max(self.retired_peak, peak)
                self._replace(process)
            return answer
        except TimeoutError:
            self._replace(process)
            return ("error", "timeout", _killed_message(sent.request["timeout"]))
        except (EOFError, OSError, ValueError):  # (ValueError: its channel was closed already)
            self._replace(process)
            return ("error", "runtime", "the query process ended while running the query (it crashed or was "
                                        "killed by the system, for example for memory: raise the cap with "
                                        "--sqleval-max-memory or the suite's `max_memory:`); the query is scored "
                                        "as failed")

    def _replace(self, process: _QueryProcess) -> None:
        """Kill ``process`` and fork its successor at once (forking takes milliseconds)."""
        process.kill()
        if self._current is not process and self._current is not None:
            return
        self._current = None
        try:
            self._current = self._zygote_alive().fork(process.max_memory)
        except DatabaseError:
            self._current = None


class _Sent:
    """A request written to a query process, waiting for its answer."""

    __slots__ = ("request", "process", "deadline", "failed")

    def __init__(self, request: dict[str, Any], process: _QueryProcess, deadline: float) -> None:
        self.request = request
        self.process = process
        self.deadline = deadline
        self.failed = False


def _request(target: tuple[Any, ...], sql: str, *, timeout: float, max_rows: int, untrusted: bool, dialect: str,
             rewrite: str | None, allow_functions: frozenset[str], role: str | None, max_memory: int | None,
             engine_dialect: str | None, cut_statement: bool = False, text_errors: str = "replace",
             distinct_rows: bool = False) -> dict[str, Any]:
    return {
        "target": target, "sql": sql, "timeout": timeout, "max_rows": max_rows, "untrusted": untrusted,
        "dialect": dialect, "rewrite": rewrite, "allow_functions": frozenset(allow_functions), "role": role,
        "max_memory": max_memory, "engine_dialect": engine_dialect, "cut_statement": cut_statement,
        "text_errors": text_errors, "distinct_rows": distinct_rows,
    }


def _hung_up(process: _QueryProcess) -> bool:
    """An idle query process has nothing to say: a readable channel means it has ended."""
    try:
        readable, _, _ = select.select([process.channel.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _receive(process: _QueryProcess, deadline: float) -> Any:
    fd = process.channel.fileno()
    (size,) = HEADER.unpack(_read_exactly(fd, HEADER.size, deadline))
    return pickle.loads(_read_exactly(fd, size, deadline))


def _read_exactly(fd: int, size: int, deadline: float) -> bytes:
    chunks = []
    remaining = size
    while remaining:
        # Past the deadline, an answer already waiting is still read (one sent ahead, collected late because
        # pytest was slow to ask): only a query process that has not answered is timed out.
        wait = max(deadline - time.monotonic(), 0.0)
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            raise TimeoutError
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _killed_message(timeout: float) -> str:
    return (f"stopped (the query did not yield, so its process was killed) after {timeout:g} s "
            "(raise it with --sqleval-timeout or the suite's `timeout:`)")


def _result(answer: Any) -> QueryResult:
    status = answer[0]
    if status == "ok":
        payload = answer[1]  # (columns, rows[, seconds executing]): no statement ran -> no time
        return QueryResult(columns=tuple(payload[0]), rows=payload[1], elapsed=payload[2] if len(payload) > 2 else None)
    if status == "database":
        raise DatabaseError(answer[1])
    raise QueryError(answer[1], answer[2], function=answer[3] if len(answer) > 3 else None)


# --------------------------------------------------------------------------- the process's sandbox
_sandbox: QuerySandbox | None = None
_sandbox_lock = threading.Lock()


def release_query_process_files(backend: str) -> None:
    """Close the query process's connections to databases of ``backend`` (nothing when no query process runs)."""
    running = _sandbox
    if running is not None:
        running.release(backend)


def process_sandbox() -> QuerySandbox:
    """The sandbox of this process (created on first use, closed at exit)."""
    global _sandbox
    with _sandbox_lock:
        if _sandbox is None:
            _sandbox = QuerySandbox()
            atexit.register(close_process_sandbox)
        return _sandbox


def close_process_sandbox() -> None:
    global _sandbox
    with _sandbox_lock:
        sandbox, _sandbox = _sandbox, None
    if sandbox is not None:
        sandbox.close()


def sandbox_enabled() -> bool:
    """``SQLEVAL_SANDBOX=0`` runs queries in this process (debugging only: no outside limits)."""
    return os.environ.get("SQLEVAL_SANDBOX", "1").strip().lower() not in ("0", "off", "false", "no")
