"""Pytest glue for what a run builds and where its suites really run.

- **Cleanup on SIGTERM/SIGINT.** The process that builds setup-script
  databases (the serial run, or each xdist worker) installs handlers that drop
  its built PostgreSQL databases and roles and remove its build folder, then
  hand the signal to the previous handler (so pytest still reports the
  interruption, and a default SIGTERM still ends the process with that signal).
  The handlers are restored before the cleanup starts: a second Ctrl-C stops at
  once.
- **Where each suite runs.** With ``--sqleval-database-url``, only setup-script
  databases move to that engine; a suite whose ``database:`` is a file or a URL
  keeps it. The summary says so, per suite, naming the database it ran on.
"""

from __future__ import annotations

import os
import signal
import threading
from collections import defaultdict
from typing import Any, Callable

import pytest

_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT") if hasattr(signal, name))
#: How often a SIGTERM cleanup is resumed after a KeyboardInterrupt that nobody typed (see run_cleanup).
_SIGTERM_ATTEMPTS = 3


class SignalCleanup:
    """Run ``callback`` once when SIGTERM or SIGINT arrives, then chain to the previous handler."""

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.previous: dict[int, Any] = {}
        self.done = False
        #: SIGINT arrived and nobody has seen its KeyboardInterrupt stop the run yet (see take_interrupt).
        self.interrupt_pending = False

    def install(self) -> bool:
        if threading.current_thread() is not threading.main_thread():
            return False  # signal handlers can only be set in the main thread
        for sig in _SIGNALS:
            try:
                self.previous[sig] = signal.getsignal(sig)
                signal.signal(sig, self._handle)
            except (ValueError, OSError):
                self.previous.pop(sig, None)
        return bool(self.previous)

    def uninstall(self) -> None:
        for sig, previous in list(self.previous.items()):
            try:
                if signal.getsignal(sig) == self._handle:
                    signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
            except (ValueError, OSError):
                pass
        self.previous.clear()

    def run_cleanup(self, signum: int | None = None) -> None:
        if self.done:
            return
        self.done = True
        for attempt in range(1, _SIGTERM_ATTEMPTS + 1):
            try:
                self.callback()
                return
            except KeyboardInterrupt:
                # On SIGINT, a second Ctrl-C stops the cleanup. On SIGTERM nobody pressed anything: an xdist worker
                # gets a KeyboardInterrupt from execnet once its controller is gone, which can cut a DROP DATABASE
                # short while it waits for a busy server; the callback is resumable, so it goes on where it stopped.
                if signum != getattr(signal, "SIGTERM", None) or attempt == _SIGTERM_ATTEMPTS:
                    raise
            except Exception:  # noqa: BLE001 - best effort
                return

    def take_interrupt(self) -> bool:
        """True once after a SIGINT: the caller makes sure it stops the run."""
        pending, self.interrupt_pending = self.interrupt_pending, False
        return pending

    def _handle(self, signum: int, frame) -> None:
        previous = self.previous.get(signum, signal.SIG_DFL)
        self.interrupt_pending = signum == getattr(signal, "SIGINT", None)
        self.uninstall()  # a second signal goes straight to the previous handler
        self.run_cleanup(signum)
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL or previous is None:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        # SIG_IGN: the process ignored this signal before us; keep ignoring it


_CLEANUP_KEY = pytest.StashKey[SignalCleanup]()


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    from .state import STATE_KEY

    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    factory = state.engines

    def cleanup() -> None:
        import shutil

        factory.close()
        shutil.rmtree(factory.build_dir, ignore_errors=True)

    handler = SignalCleanup(cleanup)
    if handler.install():
        config.stash[_CLEANUP_KEY] = handler
    _freeze_heap_at_exit()


_FREEZE_AT_EXIT: list[bool] = []


def _freeze_heap_at_exit() -> None:
    """At interpreter exit (only then: an in-process run, pytester's, changes nothing), move every object to the
    collector's permanent generation before the interpreter finalizes.

    An evaluated run ends with a large heap (records, reports, items, the modules' caches) that the interpreter's
    final garbage collections would traverse several times, each a full pass over every container, only to free
    memory the process gives back anyway: ~0.3 s of CPU after the last line of a 1000-case run. Frozen, those
    passes see only what is created after the freeze. Nothing of ours depends on a collection then: the query
    processes, engines and build folders are closed and removed at unconfigure; ``atexit`` handlers and the
    flushing of standard streams still run."""
    if _FREEZE_AT_EXIT:
        return
    import atexit
    import gc

    _FREEZE_AT_EXIT.append(True)
    atexit.register(gc.freeze)


def _keep_interrupts(config: pytest.Config):
    """Wrap a test phase so that a Ctrl-C during it stops the run, even when a library turned the
    KeyboardInterrupt into another error (SQLAlchemy closing a connection whose ROLLBACK the interrupt cut short
    raises an AssertionError, which read as "cannot connect to PostgreSQL" for every later case, with the
    databases already dropped by the cleanup)."""
    handler = config.stash.get(_CLEANUP_KEY, None)
    try:
        result = yield
    except KeyboardInterrupt:
        if handler is not None:
            handler.take_interrupt()
        raise
    except BaseException:
        if handler is not None and handler.take_interrupt():
            raise KeyboardInterrupt from None
        raise
    if handler is not None and handler.take_interrupt():
        raise KeyboardInterrupt
    return result


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item):
    return (yield from _keep_interrupts(item.config))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item):
    return (yield from _keep_interrupts(item.config))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item):
    return (yield from _keep_interrupts(item.config))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist controller: give each worker the run's build folder, so that setup-script files are built once per
    run (under a file lock) and shared, instead of once per worker."""
    from .state import STATE_KEY

    state = node.config.stash.get(STATE_KEY, None)
    if state is not None:
        node.workerinput["sqleval_build_dir"] = str(state.engines.build_dir)
        if state.predictions_bytes is not None:  # read once: a pipe (`<(jq ...)`, a FIFO) cannot be read again
            node.workerinput["sqleval_predictions_bytes"] = state.predictions_bytes


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    handler = config.stash.get(_CLEANUP_KEY, None)
    if handler is not None:
        handler.uninstall()


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    from .state import STATE_KEY, is_worker

    state = config.stash.get(STATE_KEY, None)
    if state is None or is_worker(config) or not state.settings.database_url:
        return
    lines = database_override_notes(state)
    if lines:
        terminalreporter.write_sep("-", "sqleval databases")
        for line in lines:
            terminalreporter.write_line(line, yellow=True)


def database_override_notes(state) -> list[str]:
    """One line per suite that ``--sqleval-database-url`` did not move (its database is a file or a URL)."""
    from .suite import DatabaseSpec

    override = DatabaseSpec(state.settings.database_url).display
    kept: dict[str, set[str]] = defaultdict(set)
    names: dict[str, str] = {}
    for record in state.records:
        database = record.get("database")
        if database and "(built from" not in database:
            kept[record["path"]].add(database)
            names[record["path"]] = record.get("suite") or record["path"]
    return [
        f"WARNING suite {names[path]}: runs on {', '.join(sorted(kept[path]))}, not {override}: "
        "--sqleval-database-url applies only to setup-script databases (`database: {url: ..., setup: [...]}`)"
        for path in sorted(kept)
    ]
