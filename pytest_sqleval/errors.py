"""Errors that carry a user-facing message: where the problem is, and how to fix it."""

from __future__ import annotations

from pathlib import Path

#: Why a prediction did not execute. Each kind is counted in ``error_count``.
ERROR_KINDS = ("syntax", "runtime", "timeout", "row_limit", "memory", "rejected", "no_prediction",
               "no_sql", "model_error")  # the model's answer held no SQL; the model call failed (pytest_sqleval/model)


def _masked(text: str) -> str:
    """Messages never carry credentials (URLs, DSNs, known passwords)."""
    from .secrets import mask_secrets

    return mask_secrets(text)


class SuiteError(Exception):
    """A suite that cannot be evaluated as written: bad YAML, a missing key, a bad value, ...

    Rendered as ``path:line: message`` followed by the fix, never as a traceback.
    """

    def __init__(self, message: str, *, path: Path | str | None = None, line: int | None = None, fix: str = "") -> None:
        self.message = _masked(message)
        self.path = str(path) if path is not None else None
        self.line = line
        self.fix = _masked(fix)
        super().__init__(self.render())

    def render(self) -> str:
        where = self.path or "<suite>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        text = f"{where}: {self.message}"
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text


class QueryError(Exception):
    """A query that did not produce a result. ``kind`` is one of :data:`ERROR_KINDS`."""

    def __init__(self, kind: str, message: str, *, function: str | None = None) -> None:
        assert kind in ERROR_KINDS, kind
        self.kind = kind
        self.message = message
        #: the function the guard refused as not on the allowlist (``rejected``), as the query names it: a caller
        #: with its own way to allow functions (``sqleval generate --allow-function``) says so instead of the suite's
        self.function = function
        super().__init__(f"{kind}: {message}")


class DatabaseError(Exception):
    """A database that cannot be opened, built or reached: an error of the suite, never a model miss.

    Its message is masked: a URL's password or a DSN's ``password=`` never shows. ``fix``: what to do about it,
    when the opener knows (shown as the message's `fix:` line), else None.
    """

    def __init__(self, message: object = "", *, fix: str | None = None) -> None:
        super().__init__(_masked(str(message)))
        self.fix = _masked(fix) if fix else None


class GoldError(Exception):
    """A gold query that fails, times out or exceeds the row cap: an error of the suite. ``kind`` is the
    :class:`QueryError` kind of a gold that ran and failed (``syntax``, ``runtime``, ``timeout``...), else None."""

    def __init__(self, message: object = "", *, kind: str | None = None) -> None:
        super().__init__(_masked(str(message)))
        self.kind = kind


class UserHookError(Exception):
    """A user's implementation of one of the plugin's hooks raised: its message names the implementation
    (:func:`~pytest_sqleval.hookspec.hook_failure`), and the case it happened on is that case's error."""
