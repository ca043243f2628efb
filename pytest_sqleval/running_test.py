"""The database of the test pytest is running now, for assertion helpers called without ``engine=``.

The helpers (:mod:`pytest_sqleval.assertions`) are plain functions a script may call too, and must not import
the pytest glue that knows the running test; the glue (:mod:`pytest_sqleval.assert_plugin`) registers its
lookup here instead, and the helpers ask this module.
"""

from __future__ import annotations

from typing import Any, Callable

_LOOKUP: dict[str, Callable[[], Any] | None] = {"engine": None, "settings": None}


def set_engine_lookup(lookup: Callable[[], Any] | None) -> None:
    """Install how to find the running test's ``sqleval_engine`` (None: no test runs, no engine)."""
    _LOOKUP["engine"] = lookup


def running_test_engine() -> Any:
    """The running test's ``sqleval_engine``, or None (no test running, or it has no database configured)."""
    lookup = _LOOKUP["engine"]
    return None if lookup is None else lookup()


def set_settings_lookup(lookup: Callable[[], dict[str, Any]] | None) -> None:
    """Install how to find the session's run settings (``timeout``, ``max_rows``, ``max_memory``,
    ``allow_functions``: the ``--sqleval-*`` options and ``sqleval_*`` ini values; None: the built-in defaults)."""
    _LOOKUP["settings"] = lookup


def running_settings() -> dict[str, Any]:
    """The session's run settings (an empty mapping outside a pytest session: the built-in defaults apply)."""
    lookup = _LOOKUP["settings"]
    return {} if lookup is None else lookup()
