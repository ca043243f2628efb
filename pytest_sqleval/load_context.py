"""The suite file being loaded: what every part of the loader needs to report a problem or find a file.

Errors name the file and line and say the fix (:class:`~pytest_sqleval.errors.SuiteError`); paths in a suite
are relative to the suite file; an unknown key is named with the closest allowed one. The suite-level
``policy:`` and ``pass_if`` ride along because each case inherits or checks against them.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Callable, Iterable

from .errors import SuiteError
from .yaml_lines import LineMapping


class LoadContext:
    """The file being loaded, for error messages and relative paths."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.directory = path.parent
        self.policy: Any = None  # the suite's `policy:`, the default of every case
        self.pass_if: Any = None  # the suite's rule, which some case forms cannot satisfy
        self._resolved: dict[str, Path] = {}
        self._memo: dict[Any, Any] = {}

    def error(self, message: str, line: int | None, fix: str = "") -> SuiteError:
        return SuiteError(message, path=self.path, line=line, fix=fix)

    def resolve(self, relative: str) -> Path:
        """``relative`` (``~`` expanded) against the suite's folder, absolute and resolved; once per distinct text
        while this file loads (the cases of a suite name the same few files)."""
        found = self._resolved.get(relative)
        if found is None:
            found = self._resolved[relative] = (self.directory / os.path.expanduser(relative)).resolve()
        return found

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()``, once per ``key`` while this file loads (an exception is raised each time, never kept)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]


def yaml_type(value: Any) -> str:
    """What a YAML value is, in the words of a suite's author (never an internal class name)."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "empty"
    if isinstance(value, bytes):
        return "binary data (!!binary)"
    if isinstance(value, (set, frozenset)):
        return "a set (!!set)"
    return "text" if isinstance(value, str) else type(value).__name__


def check_keys(ctx: LoadContext, mapping: LineMapping, allowed: Iterable[str], what: str,
               elsewhere: tuple[Iterable[str], str, str] | None = None) -> None:
    """Refuse a key not in ``allowed``, suggesting the closest allowed key (a typo is the usual cause).

    ``elsewhere``: (keys, where they belong, the fix) for keys valid at another level of the file (`max_rows:` on a
    case, `gold:` at the top): named as such, never as a typo of a similar key (`max_rows` is no `expect_rows`)."""
    allowed = tuple(allowed)
    for key in mapping:
        if key not in allowed and elsewhere is not None and key in tuple(elsewhere[0]):
            raise ctx.error(f"`{key}:` in {what} is {elsewhere[1]}", mapping.key_lines.get(key, mapping.line),
                            fix=elsewhere[2])
        if key not in allowed:
            same_but_case = [name for name in allowed if name.lower() == str(key).lower()]
            close = same_but_case or difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"did you mean `{close[0]}`? " if close else ""
            if same_but_case:  # `ID:`, `Gold:`: keys are read as written
                hint = f"did you mean `{close[0]}`? keys are lower case, as written in the README; "
            if not close and " " in str(key).strip():  # `{gold: SELECT a, b FROM t}`: YAML split the SQL at a comma
                hint = ("quote the SQL before it: in a flow mapping `{...}` YAML splits unquoted text at each comma "
                        "(write `gold: \"SELECT a, b FROM t\"`, or use block style); ")
            raise ctx.error(f"unknown key {key!r} in {what}", mapping.key_lines.get(key, mapping.line),
                            fix=f"{hint}allowed keys: {', '.join(allowed)}")
