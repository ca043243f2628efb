"""Exact-match profiles and their options.

A suite writes ``exact_match: spider`` or ``exact_match: {profile: sqleval, values: ignore}``.

Profiles
--------
``sqleval`` (default)
    Any SQL that sqlglot parses, compared clause by clause without the official
    shortcuts (see :mod:`.sqleval`). Option ``values``: ``compare`` (default)
    or ``ignore`` (literal values do not count).
``spider``
    The official Spider / test-suite-sql-eval exact set match, reproduced with
    its quirks (see :mod:`.spider`). Options:

    ``value_placeholder`` (default false)
        Apply test-suite-sql-eval's ``replace("value", "1")`` to the prediction
        text first, as the official script does for Spider, SParC and CoSQL runs.
        It also corrupts any identifier containing ``value``.
    ``legacy_from_check`` (default false)
        Reproduce the pre-2019 official evaluator (the one behind Spider's and
        SParC's ``evaluation_examples``), which compared the FROM tables only
        when the gold joins two or more of them, so ``count(*)`` from a wrong
        single table still matched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from ...comparison import OptionError

_PROFILE_OPTIONS: dict[str, dict[str, tuple[Any, ...]]] = {
    "spider": {"value_placeholder": (True, False), "legacy_from_check": (True, False)},
    "sqleval": {"values": ("compare", "ignore")},
}

#: Every key an `exact_match:` mapping may hold, whatever its profile (for a misspelt key's suggestion).
KEY_NAMES: tuple[str, ...] = ("profile", *dict.fromkeys(n for options in _PROFILE_OPTIONS.values() for n in options))


def profile_keys(profile: Any) -> tuple[str, ...]:
    """The keys an `exact_match:` mapping naming ``profile`` may hold (empty for an unknown profile)."""
    return ("profile", *_PROFILE_OPTIONS[profile]) if isinstance(profile, str) and profile in _PROFILE_OPTIONS else ()


@dataclass(frozen=True)
class ExactMatchOptions:
    """A resolved exact-match profile: the profile name and every option's value."""

    profile: Literal["spider", "sqleval"] = "sqleval"
    value_placeholder: bool = False
    legacy_from_check: bool = False
    values: Literal["compare", "ignore"] = "compare"

    def with_overrides(self, overrides: Mapping[str, Any]) -> ExactMatchOptions:
        allowed = _PROFILE_OPTIONS[self.profile]
        for name, value in overrides.items():
            if name not in allowed:
                known = ", ".join(allowed) or "none"
                raise OptionError(f"unknown option {name!r} for exact-match profile {self.profile!r}; its options are: {known}")
            if value not in allowed[name] or type(value) is not type(allowed[name][0]):
                choices = ", ".join(str(v).lower() if isinstance(v, bool) else v for v in allowed[name])
                raise OptionError(f"exact-match option {name} must be one of {choices}, not {value!r}")
        return replace(self, **dict(overrides))

    def as_dict(self) -> dict[str, Any]:
        names = ("profile", *_PROFILE_OPTIONS[self.profile])
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in names}


EXACT_MATCH_PROFILES: dict[str, ExactMatchOptions] = {
    "sqleval": ExactMatchOptions(profile="sqleval"),
    "spider": ExactMatchOptions(profile="spider"),
}


def resolve_exact_match(spec: str | Mapping[str, Any] | ExactMatchOptions | None) -> ExactMatchOptions:
    """``"spider"`` or ``{"profile": "spider", "value_placeholder": True}`` -> options."""
    if spec is None:
        return EXACT_MATCH_PROFILES["sqleval"]
    if isinstance(spec, ExactMatchOptions):
        return spec
    if isinstance(spec, str):
        return _profile(spec)
    overrides = dict(spec)
    return _profile(overrides.pop("profile", "sqleval")).with_overrides(overrides)


def _profile(name: Any) -> ExactMatchOptions:
    try:
        return EXACT_MATCH_PROFILES[name]
    except (KeyError, TypeError):
        raise OptionError(
            f"unknown exact-match profile {name!r}; profiles are: {', '.join(EXACT_MATCH_PROFILES)}"
        ) from None
