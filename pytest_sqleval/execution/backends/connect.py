"""Connecting to an engine: the driver check, the first probe with its connect timeout, and the messages.

A host that accepts and never answers is an error naming the (masked) host, never a hang; a missing
driver names the extra to install.
"""

from __future__ import annotations

from typing import Any

from ...errors import DatabaseError
from ...secrets import mask_secrets, parse_url
from ...suite import hide_password
from .base import DEFAULT_CONNECT_TIMEOUT, first_line

EXTRAS = {
    "duckdb": "pip install 'pytest-sqleval[duckdb]'",
    "postgresql": "pip install 'pytest-sqleval[postgres]'",
}


def require_module(module: str, extra: str) -> None:
    """DatabaseError naming the extra to install when ``module`` (a driver) is missing."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise DatabaseError(f"the {extra} driver is not installed: {EXTRAS[extra]}")


def probe(engine: Any, url: str, what: str, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, *,
          watchdog: bool = False, sql: str | None = "SELECT 1") -> None:
    """Connect once and run ``sql`` (None: connect only); with ``watchdog``, give up (in a daemon thread) after the
    connect timeout."""
    import threading
    import time

    outcome: dict[str, BaseException | None] = {}

    def attempt() -> None:
        try:
            with engine.connect() as conn:
                if sql is not None:
                    conn.exec_driver_sql(sql).fetchall()
            outcome["error"] = None
        except BaseException as exc:  # noqa: BLE001 - reported below
            outcome["error"] = exc

    started = time.monotonic()
    if watchdog:
        thread = threading.Thread(target=attempt, name="sqleval-connect", daemon=True)
        thread.start()
        thread.join(connect_timeout + 1.0)
        if thread.is_alive():
            raise DatabaseError(connect_failure(what, url, TimeoutError("timed out"), time.monotonic() - started,
                                                connect_timeout))
    else:
        attempt()
    error = outcome.get("error")
    if error is not None:
        engine.dispose()
        if not isinstance(error, Exception):
            raise error
        raise DatabaseError(connect_failure(what, url, error, time.monotonic() - started, connect_timeout)) from None


def connect_failure(what: str, url: str, exc: BaseException, elapsed: float, timeout: float, extra=()) -> str:
    """The message for a failed connection: the (masked) host, and whether it timed out."""
    detail = mask_secrets(first_line(exc), extra=extra)
    if "connection info string" in detail or "invalid dsn" in detail.lower():
        detail = "invalid connection parameters in the URL"  # libpq would echo part of the conninfo
    where = host_of(url)
    if elapsed >= timeout * 0.9 or "timeout expired" in detail.lower() or "timed out" in detail.lower():
        return (f"cannot connect to {what} at {hide_password(url)}: timed out after {timeout:g} s: the host {where} "
                "accepted no connection or never answered (connect timeout; raise it with --sqleval-connect-timeout "
                "or the suite's `connect_timeout:`)")
    return (f"cannot connect to {what} at {hide_password(url)}: {detail}; check that the server is running and the URL "
            "(host, port, user, database)")


def connection_lost(what: str, where: str, exc: BaseException) -> DatabaseError:
    """The error for a server that went away while a query ran (shut down, restarted, the connection dropped) or
    refused the query's connection: the suite's error, never a model's miss nor a broken gold."""
    return DatabaseError(f"the connection to {what} at {hide_password(where)} failed during the run: "
                         f"{mask_secrets(first_line(exc))}; the case was not scored: check that the database is still "
                         "reachable (a server that shut down or restarted, a session an administrator ended, a "
                         "connection the network dropped), then run again")


def host_of(url: str) -> str:
    """``host:port`` of a URL for messages (masked; the whole masked URL when it cannot be parsed)."""
    parsed = parse_url(url)
    if parsed is not None and parsed.host:
        return mask_secrets(f"{parsed.host}:{parsed.port}" if parsed.port else parsed.host)
    return hide_password(url)
