"""Named result-comparison options and the profiles that reproduce each evaluator.

Every choice an evaluator of the field makes when it compares two query
results is one named option here. A profile is a set of values for all of
them; a suite picks a profile (``execution: bird``) and may override single
options (``execution: {profile: bird, duplicates: bag}``).

Options
-------
row_order
    ``order_by``: rows are compared in order only when the gold's outermost
    query has ORDER BY (read from the sqlglot tree); otherwise as a bag/set.
    ``order_by_text``: in order when the gold SQL text contains "order by"
    anywhere (test-suite-sql-eval's substring test). ``always``: always in
    order. ``ignore``: never in order.
ties
    When rows are compared in order: ``any`` lets rows that tie on the gold's
    ORDER BY keys come in any order; ``gold`` demands the gold's exact order.
duplicates
    ``bag``: duplicate rows count (multiset). ``set``: duplicates ignored.
columns
    ``match``: columns are matched one-to-one in any order, by content; names
    are never used. ``positional``: column i of the prediction is compared
    with column i of the gold.
distinct
    ``keep``: queries run as written. ``strip``: every DISTINCT keyword is
    removed from both queries before they run (test-suite's default).
float_decimals
    ``None``: numbers compare by exact value (1 == 1.0, 0.1 + 0.2 != 0.3).
    An integer N: floats are rounded to N decimal places on both sides first.
nulls
    ``equal``: NULL equals NULL. ``distinct``: a NULL never equals anything.
empty
    What an empty gold result against an empty prediction means.
    ``match``: always a match (any column counts). ``match_same_columns``: a
    match when the column counts agree. ``miss``: never a match.
    A match of two empty results is always reported as *vacuous*.
numbers
    ``value``: numbers compare by value whatever the driver returned: a
    ``Decimal`` (DuckDB DECIMAL, PostgreSQL NUMERIC) is an int when integral
    and a float otherwise, so ``Decimal("0.1")`` equals the float ``0.1``,
    and NaN equals NaN; two Decimals compare exactly when neither result
    holds a float (``Decimal("0.10000000000000000001") != Decimal("0.1")``). ``python``: the driver's values compare with Python's
    ``==``, as the official scripts compare them (BIRD's ``set()``,
    LogicCat's ``==``, test-suite's ``result_eq``): ``Decimal("0.1")`` is not
    the float ``0.1`` (Python compares them exactly) and NaN never equals
    NaN, while ``1 == 1.0 == Decimal("1.00")`` and ``2.5 == Decimal("2.5")``.
    With ``float_decimals`` set, Decimals are rounded as floats under both.

Profiles
--------
:data:`EXECUTION_PROFILES` holds the built-in profiles. The table a suite's
``execution:`` names a profile of is the session's (:func:`active_profiles`):
the plugin builds it when pytest is configured, the built-ins first, then
every ``pytest_sqleval_execution_profiles`` hook adds or replaces profiles, and
makes it the one in force with :func:`use_profiles` (reset at unconfigure).
Without a configured session (the ``sqleval`` command, library callers) the
built-ins are in force.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from difflib import get_close_matches
from typing import Any, Literal, Mapping

RowOrder = Literal["order_by", "order_by_text", "always", "ignore"]
Ties = Literal["any", "gold"]
Duplicates = Literal["bag", "set"]
Columns = Literal["match", "positional"]
Distinct = Literal["keep", "strip"]
Nulls = Literal["equal", "distinct"]
Empty = Literal["match", "match_same_columns", "miss"]
Numbers = Literal["value", "python"]

CHOICES: dict[str, tuple[str, ...]] = {
    "row_order": ("order_by", "order_by_text", "always", "ignore"),
    "ties": ("any", "gold"),
    "duplicates": ("bag", "set"),
    "columns": ("match", "positional"),
    "distinct": ("keep", "strip"),
    "nulls": ("equal", "distinct"),
    "empty": ("match", "match_same_columns", "miss"),
    "numbers": ("value", "python"),
}


@dataclass(frozen=True)
class ComparisonOptions:
    """How two results are compared for ``execution_match``."""

    row_order: RowOrder = "order_by"
    ties: Ties = "any"
    duplicates: Duplicates = "bag"
    columns: Columns = "match"
    distinct: Distinct = "keep"
    float_decimals: int | None = None
    nulls: Nulls = "equal"
    empty: Empty = "match_same_columns"
    numbers: Numbers = "value"
    profile: str = "sqleval"

    def with_overrides(self, overrides: Mapping[str, Any]) -> ComparisonOptions:
        for name, value in overrides.items():
            validate_option(name, value)
        return replace(self, **dict(overrides))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


EXECUTION_PROFILES: dict[str, ComparisonOptions] = {
    # pytest-sqleval's own choice: what a careful user means by "same answer".
    "sqleval": ComparisonOptions(profile="sqleval"),
    # taoyds/test-suite-sql-eval exec_eval.py with its default flags.
    "test-suite": ComparisonOptions(
        row_order="order_by_text",
        ties="gold",
        duplicates="bag",
        columns="match",
        distinct="strip",
        empty="match",
        numbers="python",
        profile="test-suite",
    ),
    # BIRD (original and mini-dev): set(pred_rows) == set(gold_rows).
    "bird": ComparisonOptions(
        row_order="ignore",
        ties="any",
        duplicates="set",
        columns="positional",
        distinct="keep",
        empty="match",
        numbers="python",
        profile="bird",
    ),
    # MRO paper 2.1.1: same shape, columns matched one-to-one, each column
    # identical in row order.
    "mro": ComparisonOptions(
        row_order="always",
        ties="gold",
        duplicates="bag",
        columns="match",
        distinct="keep",
        empty="match_same_columns",
        profile="mro",
    ),
    # LogicCat scoring recipe: pred_result == gold_result (lists of tuples).
    "logiccat": ComparisonOptions(
        row_order="always",
        ties="gold",
        duplicates="bag",
        columns="positional",
        distinct="keep",
        empty="match",
        numbers="python",
        profile="logiccat",
    ),
}

OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(ComparisonOptions) if f.name != "profile")


class OptionError(ValueError):
    """An unknown option, value or profile; the message says what is allowed."""


def validate_option(name: str, value: Any) -> None:
    if name not in OPTION_NAMES:
        raise OptionError(f"unknown comparison option {name!r}; options are: {', '.join(OPTION_NAMES)}")
    if name == "float_decimals":
        if isinstance(value, str):  # `float_decimals: "2"`: a quoted number is text
            raise OptionError(f"float_decimals must be a whole number >= 0 (or null), not the text {value!r}")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise OptionError(f"float_decimals must be null or a whole number >= 0, not {value!r}")
        return
    allowed = CHOICES[name]
    if value not in allowed:
        raise OptionError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")


def builtin_profiles() -> dict[str, ComparisonOptions]:
    """A fresh copy of the built-in profiles: the start of a session's table, which hooks may change."""
    return dict(EXECUTION_PROFILES)


_active: Mapping[str, ComparisonOptions] | None = None


def active_profiles() -> Mapping[str, ComparisonOptions]:
    """The profiles in force: the configured session's table, or the built-ins."""
    return _active if _active is not None else EXECUTION_PROFILES


def use_profiles(profiles: Mapping[str, ComparisonOptions] | None) -> None:
    """Make ``profiles`` the table in force (None: back to the built-ins); the plugin calls this at configure
    and unconfigure."""
    global _active
    _active = profiles


def resolve_execution(spec: str | Mapping[str, Any] | None,
                      profiles: Mapping[str, ComparisonOptions] | None = None) -> ComparisonOptions:
    """``"bird"`` or ``{"profile": "bird", "duplicates": "bag"}`` -> options.

    ``profiles`` is the table the name is looked up in (default: :func:`active_profiles`); no spec means
    its ``sqleval`` profile.
    """
    table = active_profiles() if profiles is None else profiles
    if spec is None:
        return _profile("sqleval", table)
    if isinstance(spec, str):
        return _profile(spec, table)
    overrides = dict(spec)
    base = _profile(overrides.pop("profile", "sqleval"), table)
    return base.with_overrides(overrides)


def options_changed(execution: Mapping[str, Any],
                    profiles: Mapping[str, ComparisonOptions] | None = None) -> dict[str, Any]:
    """The options of a resolved ``execution`` (:meth:`ComparisonOptions.as_dict`) that differ from those of the
    profile it names (``{profile: bird, duplicates: bag}`` -> ``{"duplicates": "bag"}``), so that a summary naming
    the profile does not pass the suite's overrides off as the profile's; {} when the profile is unknown here."""
    table = active_profiles() if profiles is None else profiles
    base = table.get(execution.get("profile")) if isinstance(execution.get("profile"), str) else None
    if not isinstance(base, ComparisonOptions):
        return {}
    return {name: execution[name] for name in OPTION_NAMES
            if name in execution and execution[name] != getattr(base, name)}


def locate_problem(spec: Any, profiles: Mapping[str, ComparisonOptions] | None = None) -> tuple[str | None, str]:
    """For a ``spec`` :func:`resolve_execution` refuses: the key of the mapping at fault (None: the spec itself,
    or nothing found) and the fix to print, naming the closest valid profile, option or value."""
    table = active_profiles() if profiles is None else profiles
    if not isinstance(spec, Mapping):  # no `execution:` uses the table's `sqleval` profile
        return None, _fix_of_profile("sqleval" if spec is None else spec, table, "execution")
    for name, value in spec.items():
        if name == "profile":
            if not isinstance(value, str) or value not in table:
                return "profile", _fix_of_profile(value, table, "profile")
            continue
        try:
            validate_option(name, value)
        except OptionError:
            return name, _fix_of_option(name, value)
    return ("profile" if "profile" in spec else None), _fix_of_profile(spec.get("profile", "sqleval"), table, "profile")


def _fix_of_profile(name: Any, table: Mapping[str, ComparisonOptions], key: str) -> str:
    if isinstance(name, str) and name in table:  # the name is known: its options, set by a hook, are not
        return (f"correct profiles[{name!r}] in your pytest_sqleval_execution_profiles hook (conftest.py or plugin): "
                f"a ComparisonOptions whose options take the values the README's comparison table lists")
    if name == "sqleval":  # every suite without `execution:` uses it: a hook removed it from the table
        return ("keep profiles['sqleval'] in your pytest_sqleval_execution_profiles hook (conftest.py or plugin): "
                "change the table in place, never clear it or delete the built-in profiles")
    close = get_close_matches(str(name).lower(), list(map(str, table)), n=1)
    if close:
        return f"write `{key}: {close[0]}` (the message lists every profile)"
    return f"write `{key}:` with one of the profiles the message lists"


def _fix_of_option(name: Any, value: Any) -> str:
    if name not in OPTION_NAMES:  # `profil:`, `Profile:` are the mapping's `profile:` key misspelt
        close = get_close_matches(str(name).lower(), (*OPTION_NAMES, "profile"), n=1)
        if close:
            return f"write `{close[0]}: {value}` (the options are in the README's comparison table)"
        return "use an option the message lists; see the comparison profiles in the README"
    if name == "float_decimals" and isinstance(value, str) and value.strip().isdigit():
        return f"write `float_decimals: {value.strip()}` without quotes (a quoted number is text)"
    if name == "float_decimals":
        return "write a whole number of decimal places, e.g. `float_decimals: 2`, or `float_decimals: null` to compare exact values"
    allowed = list(CHOICES[name])
    close = get_close_matches(str(value).lower(), allowed, n=1)
    first = close[0] if close else allowed[0]
    rest = [choice for choice in allowed if choice != first]
    return f"write `{name}: {first}` (or {', '.join(rest)})"


def _profile(name: str, table: Mapping[str, ComparisonOptions]) -> ComparisonOptions:
    try:
        options = table[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name such as a list
        raise OptionError(
            f"unknown execution profile {name!r}; profiles are: {', '.join(map(str, table)) or '(none)'}"
        ) from None
    _check_profile(name, options)
    if options.profile == "sqleval" and name != "sqleval":
        # A hook's ``profiles["loose"] = ComparisonOptions(...)`` left at the default name: the reports show the
        # name the suite used, not "sqleval" for options that are not sqleval's (only bird/test-suite/spider carry
        # semantics of their own in the name, and those are kept).
        options = replace(options, profile=name)
    return options


def _check_profile(name: str, options: Any) -> None:
    """A profile a ``pytest_sqleval_execution_profiles`` hook put in the table is checked when a suite uses it
    (hooks of conftest files found during collection run late, so there is no one moment to check them all)."""
    if not isinstance(options, ComparisonOptions):
        raise OptionError(f"execution profile {name!r} is a {type(options).__name__}, not ComparisonOptions; "
                          f"set it in pytest_sqleval_execution_profiles as "
                          f"profiles[{name!r}] = ComparisonOptions(...)")
    for option in OPTION_NAMES:
        try:
            validate_option(option, getattr(options, option))
        except OptionError as exc:
            raise OptionError(f"execution profile {name!r}: {exc}") from None


def distinct_rows(options: ComparisonOptions) -> bool:
    """Whether a result over the row cap is read on for its distinct rows (the cap then counting distinct rows):
    when the profile compares sets of rows (``duplicates: set`` with NULLs equal, as ``bird`` does: BIRD compares
    ``set(rows)``), a result's repeated rows cannot change the verdict, so only its distinct rows are held."""
    return options.duplicates == "set" and options.nulls == "equal"
