"""The metric registry: every metric the plugin reports, described once.

A :class:`Metric` says where a case's value lives in the record (``case_key``), how the suite aggregate is
made from the cases (``kind``: ``rate`` is the share of true values, ``mean`` the mean of scores, ``count``
the number of true values), which cases count (``population``), which direction is better, its label and
whether a threshold may name it. Everything that lists metrics reads this registry: ``pass_if``
(:mod:`pytest_sqleval.passrule`), the thresholds (:mod:`pytest_sqleval.thresholds`), the aggregates
(:mod:`pytest_sqleval.aggregate`), the baseline comparison, the terminal table and the JSON report. Adding
a metric is one registration (:data:`BUILTIN_METRICS`, or a user's ``pytest_sqleval_register_metrics``).

The registry in force is the one the plugin builds when pytest is configured (built-ins plus the
hooks' metrics; :func:`use_registry`); pure functions take it as an argument and default to it, so the
``sqleval`` command line and library callers get the built-ins.
"""

from __future__ import annotations

import functools
import numbers
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any

Record = Mapping[str, Any]

KINDS = ("rate", "mean", "count")
DIRECTIONS = ("higher", "lower")
#: Which cases a metric's denominator counts: every scored case, or only those whose prediction was run.
POPULATIONS = ("scored", "executed")
#: ``case``: one value per case, read from the record; ``interaction``: made over SParC interactions.
SCOPES = ("case", "interaction")
#: What a suite's ``metrics`` block holds beside the metrics (:func:`pytest_sqleval.aggregate.case_metrics`): no
#: metric may take these names, or its value and the block's own would overwrite each other.
SUITE_METRICS_KEYS = frozenset({"errors_by_kind"})
#: The breakdowns a threshold path starts with (``by_tag.joins.execution_accuracy``): a metric of one of these names
#: could never be gated (its threshold would be read as the breakdown), so none may take them.
BREAKDOWNS = ("by_gold_sql", "by_difficulty", "by_tag")
#: What a breakdown's rows hold beside the metrics (:func:`pytest_sqleval.aggregate.breakdown`, ``grouped_by_gold``):
#: a metric of one of these names would overwrite a row's count or its intervals, so none may take them.
BREAKDOWN_ROW_KEYS = {"cases": "the rows of by_difficulty and by_tag hold 'cases' (their case count)",
                      "groups": "by_gold_sql holds 'groups' (its number of distinct gold queries)",
                      "intervals": "by_difficulty, by_tag and by_gold_sql hold 'intervals' (their 95% intervals)"}


class MetricError(ValueError):
    """A metric registered with a bad name or description, or a name registered twice."""


@dataclass(frozen=True)
class Metric:
    """One metric: how to read it from a case's record and how to aggregate, show and gate it."""

    name: str
    kind: str = "rate"
    case_key: str | None = None  # the record key; defaults to the name (None for interaction metrics)
    direction: str = "higher"
    label: str = ""  # the terminal table's row (default: the name)
    title: str = ""  # the Markdown and HTML reports' label (default: the label)
    description: str = ""
    gateable: bool = True
    population: str = "executed"
    scope: str = "case"
    #: The case's value from its record (default: ``record[case_key]``); None means the case does not count.
    value: Callable[[Record], Any] | None = field(default=None, compare=False)
    #: The metric is reported only when this holds for some executed record (default: always).
    present_when: Callable[[Record], bool] | None = field(default=None, compare=False)
    #: Usable by name in ``pass_if`` (a per-case rule reads ``record[case_key]``).
    in_pass_if: bool = True
    #: Included in the ``by_gold_sql`` averages (MRO 3.2); a count is then the sum of per-group rates.
    per_gold: bool = True
    #: Shown in the breakdown tables by difficulty and tag under this short header ("" = not shown).
    breakdown_label: str = ""
    #: Part of the suite aggregates and reports (False: a per-case field only pass_if reads, e.g. ``policy``).
    reported: bool = True
    #: How a case gets its value, when the metric computes it itself: ``score(record, context)`` is called for
    #: every case right after the built-in scoring (``context``: a :class:`~pytest_sqleval.record.ScoreContext`)
    #: and its return value is stored in ``record[case_key]``. Without it, a ``pytest_sqleval_score_case`` hook
    #: (or the built-in scoring) fills the key.
    score: Callable[[dict[str, Any], Any], Any] | None = field(default=None, compare=False)
    #: The highest value the aggregate can take (a threshold outside [0, maximum] can never be met): 1 for a rate;
    #: for a mean, 1 for the built-in scores but sqrt(1.25) for ``r_ves`` (a reward of 1.25 for a prediction at
    #: least twice as fast as the gold), and None (any finite number) unless given: a user's mean (a length in
    #: characters, a latency, a difference) is not bounded by 1.
    maximum: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or not self.name.replace("_", "").isalnum() \
                or not self.name[0].isalpha():
            raise MetricError(f"metric name {self.name!r}: use letters, digits and underscores, starting with a letter")
        for attr, allowed in (("kind", KINDS), ("direction", DIRECTIONS), ("population", POPULATIONS),
                              ("scope", SCOPES)):
            if getattr(self, attr) not in allowed:
                raise MetricError(f"metric {self.name!r}: {attr} must be one of {', '.join(allowed)}, "
                                  f"not {getattr(self, attr)!r}")
        for attr in ("label", "title", "description", "breakdown_label"):  # shown in the terminal table and the
            # reports (a breakdown column's header too), one line each
            text = getattr(self, attr)
            if text is None:
                object.__setattr__(self, attr, "")
            elif not isinstance(text, str) or not text.isprintable():
                raise MetricError(f"metric {self.name!r}: {attr} must be one line of printable text, not {text!r}")
        for attr in ("score", "value", "present_when"):
            if getattr(self, attr) is not None and not callable(getattr(self, attr)):
                raise MetricError(f"metric {self.name!r}: {attr} must be a function, not {getattr(self, attr)!r}")
        if self.case_key is not None and not isinstance(self.case_key, str):
            raise MetricError(f"metric {self.name!r}: case_key must be the record key as text, not {self.case_key!r}")
        if self.maximum is not None and (isinstance(self.maximum, bool) or not isinstance(self.maximum, (int, float))
                                         or not 0 < self.maximum < float("inf")):
            raise MetricError(f"metric {self.name!r}: maximum must be a positive number or None, not {self.maximum!r}")
        if self.maximum is None and self.kind == "rate":
            object.__setattr__(self, "maximum", 1.0)
        if self.case_key is None and self.scope == "case":
            object.__setattr__(self, "case_key", self.name)
        if not self.label:
            object.__setattr__(self, "label", self.name)
        if not self.title:
            object.__setattr__(self, "title", self.label)

    @property
    def bound(self) -> str:
        """The threshold's bound: ``min`` when higher is better, ``max`` when lower is."""
        return "min" if self.direction == "higher" else "max"

    @property
    def pass_if_kind(self) -> str:
        """``bool`` (a 0/1 verdict, written bare in a rule) or ``score`` (compared with a number)."""
        return "score" if self.kind == "mean" else "bool"

    @property
    def interval(self) -> str | None:
        """The 95% interval of the aggregate: ``wilson`` for a rate, ``bootstrap`` for a mean, none for a count."""
        return {"rate": "wilson", "mean": "bootstrap"}.get(self.kind)

    def case_value(self, record: Record) -> float | None:
        """The case's contribution (None: it does not count)."""
        if record.get("outcome") == "error" or self.scope != "case":
            return None
        if self.population == "executed" and record.get("valid") is None:
            return None
        raw = self.value(record) if self.value is not None else record.get(self.case_key or self.name)
        if raw is None:
            return None
        if isinstance(raw, Mapping):  # e.g. a policy verdict {"passed": ...}
            raw = raw.get("passed")
        return None if raw is None else float(raw)

    def as_json(self) -> dict[str, Any]:
        """The description a report keeps, from which ``sqleval merge|gate`` aggregate the metric again."""
        return {"kind": self.kind, "case_key": self.case_key, "direction": self.direction, "label": self.label,
                "title": self.title, "gateable": self.gateable, "population": self.population, "scope": self.scope,
                "per_gold": self.per_gold, "in_pass_if": self.in_pass_if, "maximum": self.maximum,
                "breakdown_label": self.breakdown_label}


class MetricRegistry:
    """Metrics by name, in registration order (the order of the terminal table)."""

    def __init__(self, metrics: Sequence[Metric] = ()) -> None:
        self._metrics: dict[str, Metric] = {}
        self._where: dict[str, str] = {}  # name -> the file:line that registered it, for a name taken twice
        self._user: list[Metric] | None = None
        for metric in metrics:
            self.add(metric)

    def register(self, metric: Metric | str | None = None, /, **spec: Any) -> Metric:
        """Register a metric and return it: ``register("name", kind=..., ...)``, ``register(name="name", ...)``
        or ``register(Metric(...))``. A name already taken is a :class:`MetricError`."""
        if isinstance(metric, Metric):
            if spec:
                raise MetricError(f"register(Metric(...)) takes no other arguments, not {', '.join(spec)}")
            return self.add(metric)
        if metric is not None:
            spec["name"] = metric
        if "name" not in spec:
            raise MetricError("register() needs the metric's name: register('my_metric', kind='rate')")
        try:
            return self.add(Metric(**spec))
        except TypeError as exc:  # an unknown keyword
            raise MetricError(f"metric {spec['name']!r}: {exc}; see pytest_sqleval.registry.Metric") from None

    def scored(self) -> list[Metric]:
        """Metrics that compute their per-case value themselves (``score=``)."""
        return [m for m in self if m.score is not None]

    def add(self, metric: Metric) -> Metric:
        if metric.name in self._metrics:
            first = self._where.get(metric.name)
            builtin = (" (it is a built-in metric)" if any(m.name == metric.name for m in BUILTIN_METRICS)
                       else f" (first by {first})" if first else "")
            raise MetricError(f"metric {metric.name!r} is registered twice{builtin}; pick another name")
        if metric.name in SUITE_METRICS_KEYS:
            raise MetricError(f"metric {metric.name!r}: a suite's `metrics` already hold {metric.name!r} (the error "
                              "count's breakdown by kind) beside the metrics; pick another name")
        if metric.scope == "interaction" and all(m.name != metric.name for m in BUILTIN_METRICS):  # made by name
            raise MetricError(f"metric {metric.name!r}: scope='interaction' is for the built-in SParC metrics; a metric "
                              "of yours is per case (leave scope out and fill record[case_key] for each turn)")
        if metric.name.lower() in ("and", "or"):  # pass_if's joiners (any case): `x and and` reads as a typo
            raise MetricError(f"metric {metric.name!r}: pass_if joins conditions with {metric.name.lower()!r}, so a "
                              "rule naming this metric would read as a broken rule; pick another name")
        if metric.name in BREAKDOWN_ROW_KEYS:
            raise MetricError(f"metric {metric.name!r}: {BREAKDOWN_ROW_KEYS[metric.name]} beside the metrics; pick "
                              "another name")
        if metric.value is not None and not any(metric is m for m in BUILTIN_METRICS):
            metric = _value_as_score(metric)
        if metric.name in BREAKDOWNS:
            raise MetricError(f"metric {metric.name!r}: a threshold on {metric.name!r} names the suite's breakdown of "
                              f"that name ({metric.name}.<group>.<metric>), not a metric; pick another name")
        if metric.score is not None and metric.case_key in _record_keys():
            raise MetricError(f"metric {metric.name!r}: its score() would overwrite the case record's own "
                              f"{metric.case_key!r}; pick another name (or case_key)")
        if metric.case_key in _text_record_keys():
            raise MetricError(f"metric {metric.name!r}: the case record's own {metric.case_key!r} is text or a list, "
                              "never a value a metric aggregates; pick another name (or case_key)")
        if metric.case_key in _mapping_record_keys():
            raise MetricError(f"metric {metric.name!r}: the case record's own {metric.case_key!r} is a mapping (no "
                              "{\"passed\": ...} verdict), never a value a metric aggregates; pick another name "
                              "(or case_key)")
        self._metrics[metric.name] = metric
        self._where[metric.name] = _registered_from()
        self._user = None
        return metric

    def user_case_metrics(self) -> list[Metric]:
        """The reported per-case metrics beyond the built-ins (a user's), whose values :func:`check_case_value`
        checks; computed once per registration."""
        if self._user is None:
            self._user = [m for m in self if m.scope == "case" and m.reported and m.value is None
                          and m.name not in _BUILTINS]
        return self._user

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._metrics.values())

    def __contains__(self, name: object) -> bool:
        return name in self._metrics

    def __getitem__(self, name: str) -> Metric:
        return self._metrics[name]

    def get(self, name: str) -> Metric | None:
        return self._metrics.get(name)

    def names(self) -> tuple[str, ...]:
        return tuple(self._metrics)

    def reported(self) -> list[Metric]:
        return [m for m in self if m.reported]

    def case_metrics(self) -> list[Metric]:
        """Metrics aggregated from one value per case."""
        return [m for m in self if m.reported and m.scope == "case"]

    def gateable(self) -> dict[str, str]:
        """What a threshold may name, with the direction of its bound (``min`` / ``max``)."""
        return {m.name: m.bound for m in self if m.gateable and m.reported}

    def pass_if_metrics(self) -> dict[str, str]:
        """The names a ``pass_if`` rule may use (record keys), each ``bool`` or ``score``."""
        names: dict[str, str] = {}
        for m in self:
            if m.in_pass_if and m.case_key and m.case_key not in names:
                names[m.case_key] = m.pass_if_kind
        return names

    def case_keys(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.case_key for m in self if m.case_key))

    def copy(self) -> MetricRegistry:
        return MetricRegistry(list(self))

    def order_conftest_metrics(self) -> None:
        """One order for the metrics of conftest.py files, whatever order pytest loaded those in (a folder's
        conftest.py is loaded at start when the folder is named on the command line, else when it is collected, and
        pluggy calls the ones loaded at start last first): by folder, a parent's before its subfolders', then the
        other plugins' metrics; the built-ins stay first, and each file's metrics keep their registration order."""

        def key(metric: Metric) -> tuple:
            if metric.name in _BUILTINS:
                return (0,)
            path = PurePath(self._where.get(metric.name, "").rpartition(":")[0])
            return (1, path.parent.parts) if path.name == "conftest.py" else (2,)

        self._reorder(sorted(self._metrics, key=lambda name: key(self._metrics[name])))

    def follow_order(self, names: Sequence[str]) -> None:
        """Put the metrics named (all registered) in that order, in the places they hold now."""
        chosen = set(names)
        order = list(self._metrics)
        slots = [i for i, name in enumerate(order) if name in chosen]
        for i, name in zip(slots, names):
            order[i] = name
        self._reorder(order)

    def _reorder(self, names: Sequence[str]) -> None:
        self._metrics = {name: self._metrics[name] for name in names}
        self._user = None


def _registered_from() -> str:
    """``/path/conftest.py:3``: the line outside this module that registered a metric (a conftest.py or plugin)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back  # type: ignore[assignment]
    return "" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


@functools.cache
def _text_record_keys() -> frozenset[str]:
    """The case record's own keys whose value is text or a list (``outcome``, ``id``, ``tags``, ...), never
    true/false, a number or a ``{"passed": ...}`` verdict: a metric reading one could not be aggregated."""
    from .record import CaseRecord

    def unusable(hint: Any) -> bool:  # the annotation's text (record.py has postponed annotations)
        text = str(getattr(hint, "__forward_arg__", hint)).removeprefix("Optional[")
        return text.rstrip("]") == "str" or text.startswith("list[")

    return frozenset(key for key, hint in CaseRecord.__annotations__.items() if unusable(hint))


@functools.cache
def _mapping_record_keys() -> frozenset[str]:
    """The case record's own keys whose value is a mapping that is no ``{"passed": ...}`` verdict (``error``,
    ``clauses``, ``tokens``, a model's ``extraction``, ...): a metric reading one would error every case."""
    from .record import CaseRecord

    def mapping(hint: Any) -> bool:
        text = str(getattr(hint, "__forward_arg__", hint)).removeprefix("Optional[")
        return text.startswith(("dict[", "QueryErrorRecord"))

    verdicts = {"policy", "shape"}  # {"passed": ...} (the built-in `policy` metric reads one)
    return frozenset(key for key, hint in CaseRecord.__annotations__.items() if mapping(hint) and key not in verdicts)


def _record_keys() -> frozenset[str]:
    """Every key the plugin itself writes into a case's record (:class:`~pytest_sqleval.record.CaseRecord`)."""
    from .record import CaseRecord

    return frozenset(CaseRecord.__annotations__)


def _value_as_score(metric: Metric) -> Metric:
    """A user's metric given ``value=``, as one given ``score=``: its value is read from the record once, when the case
    is scored (after the built-in scoring), and kept in ``record[case_key]``, so that pass_if, the checks of a
    case's value and ``sqleval merge|gate`` (which have only the report) see what the run aggregated. Read at
    aggregation instead, a value that is text was a crash of the run and one that is NaN a silent ``nan``."""
    if metric.score is not None:
        raise MetricError(f"metric {metric.name!r}: give value= or score=, not both (score(record, context) computes "
                          "the case's value; value(record) reads it from the record)")
    value = metric.value

    def score(record: dict[str, Any], context: Any) -> Any:
        return value(record)  # type: ignore[misc]

    return replace(metric, value=None, score=score)


def check_case_value(metric: Metric, record: Record) -> None:
    """A user's metric must leave a value the aggregates can use in the record: true/false, a finite number,
    a ``{"passed": ...}`` verdict or None (the case does not count). Anything else is a :class:`MetricError`
    naming the metric, raised while the case is scored (so it is that case's error, not the run's)."""
    key = metric.case_key or metric.name
    value = verdict = record.get(key)
    if isinstance(value, Mapping) and "passed" in value:  # a verdict: its "passed" is what is aggregated
        value = value["passed"]
    if value is None or isinstance(value, bool):
        return
    number = None
    if not isinstance(value, (str, bytes)):  # a number of any numeric type (numpy's too), finite
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond any float (10**400)
            number = None
    named = f"metric {metric.name!r}" + (f" (record[{key!r}])" if key != metric.name else "")
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."  # a huge text stays one line
    if number is not None and number == number and abs(number) != float("inf"):
        if metric.kind == "rate" and not 0 <= number <= 1:  # a share of true values: -3 or 5 is no share
            raise MetricError(f"{named} gave {shown} for this case; a rate metric's value is true/false (or a "
                              "number from 0 to 1), a {\"passed\": true/false} verdict or None (the case does not count)")
        # numpy's bool_/float32, Decimal, Fraction: a plain bool, int or float, so the record travels to the xdist
        # controller, the JSON report and `sqleval merge` as the number it is (not the text json.dumps makes of it)
        plain = _plain_number(value, number)
        if plain is not value:
            record[key] = {**verdict, "passed": plain} if verdict is not value else plain  # type: ignore[index]
        return
    raise MetricError(f"{named} gave {shown} for this case; a {metric.kind} metric's value is true/false, a "
                      "finite number, a {\"passed\": true/false} verdict or None (the case does not count)")


def _plain_number(value: Any, number: float) -> bool | int | float:
    """A checked finite number as Python's own type: numpy's bool_ as a bool, an integral as an int, else a float."""
    if type(value) in (int, float):
        return value
    if getattr(getattr(value, "dtype", None), "kind", None) == "b":  # numpy.bool_
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    return number


def _execution_accuracy(record: Record) -> Any:
    return record.get("execution_match_first", record.get("execution_match"))


def _error(record: Record) -> Any:
    return record.get("valid") is False


def _has_databases(record: Record) -> bool:
    return "databases" in record


def _policy(record: Record) -> Any:
    policy = record.get("policy")
    return policy["passed"] if policy else True


#: The built-in metrics, in the order of the terminal table.
BUILTIN_METRICS: tuple[Metric, ...] = (
    Metric("valid_syntax", title="valid syntax", kind="rate", case_key="valid", breakdown_label="valid",
           description="share of predictions that executed (LogicCat VES)"),
    Metric("error_count", title="errors", kind="count", case_key="valid", direction="lower", value=_error, in_pass_if=False,
           breakdown_label="errors", description="predictions that did not execute (MRO), with errors_by_kind"),
    Metric("execution_accuracy", title="execution accuracy", kind="rate", case_key="execution_match", value=_execution_accuracy,
           breakdown_label="EX", description="share of results equal under the suite's profile (first database)"),
    Metric("test_suite_accuracy", title="test-suite accuracy", kind="rate", case_key="execution_match", present_when=_has_databases,
           description="share of results equal on every database of the case"),
    Metric("soft_f1", title="soft F1", kind="mean", maximum=1.0, breakdown_label="soft_f1",
           description="mean MRO Soft Execution F1"),
    Metric("bird_soft_f1", title="BIRD soft F1", kind="mean", maximum=1.0,
           description="mean BIRD mini-dev Soft F1 (evaluation_f1.py)"),
    Metric("r_ves", title="R-VES", kind="mean", maximum=1.25 ** 0.5,
           description="mean sqrt(R-VES reward) (BIRD mini-dev evaluation_ves.py / 100)"),
    Metric("exact_match", title="exact match", kind="rate", population="scored", breakdown_label="EM",
           description="share of exact set matches (cases where it was computed)"),
    Metric("question_match", title="question match", kind="rate", scope="interaction", description="SParC: share of turns that pass"),
    Metric("interaction_match", title="interaction match", kind="rate", scope="interaction",
           description="SParC: share of interactions whose every turn passes"),
    Metric("interaction_execution_accuracy", title="interaction EX", kind="rate", scope="interaction",
           description="share of interactions whose every turn's execution matches"),
    Metric("pass_rate", title="pass rate", kind="rate", case_key="passed_rule", population="scored", in_pass_if=False,
           description="share of cases whose pass_if held"),
    Metric("vacuous", title="vacuous matches", kind="count", direction="lower", per_gold=False, in_pass_if=False,
           description="matches where gold and prediction both returned no rows"),
    Metric("policy", title="policy", kind="rate", population="scored", value=_policy, reported=False, gateable=False,
           description="the case's SQL policy held (per case; pass_if only)"),
)


def builtin_registry() -> MetricRegistry:
    return MetricRegistry(BUILTIN_METRICS)


_active: MetricRegistry | None = None


def active_registry() -> MetricRegistry:
    """The registry in force: the configured session's, or the built-ins."""
    return _active if _active is not None else _BUILTINS


def use_registry(registry: MetricRegistry | None) -> None:
    """Make ``registry`` the one in force (None: back to the built-ins); the plugin calls this at configure
    and unconfigure."""
    global _active
    _active = registry


_BUILTINS = builtin_registry()


def definitions(registry: MetricRegistry | None = None) -> dict[str, dict[str, Any]]:
    """The reported metrics beyond the built-ins, as a report records them (``metric_definitions``)."""
    return {m.name: m.as_json() for m in (registry or active_registry()).reported() if m.name not in _BUILTINS}


def adopt_definitions(recorded: Mapping[str, Any]) -> None:
    """Make the metrics a report recorded (a user's, by name) part of the registry in force, so that a
    command reading the report aggregates and gates them as the run did. Names already known are kept."""
    if not isinstance(recorded, Mapping) or not recorded:
        return
    registry = active_registry().copy()
    fields = ("kind", "case_key", "direction", "label", "title", "gateable", "population", "scope", "per_gold",
              "in_pass_if", "maximum", "breakdown_label")
    for name, spec in recorded.items():
        if name not in registry and isinstance(spec, Mapping):
            try:
                registry.register(name, **{k: spec[k] for k in fields if k in spec})
            except (MetricError, TypeError):
                continue  # a definition this version cannot read: its aggregates are left as recorded
    # in the recorded order (a worker's, whose conftest files loaded in another order than the controller's)
    registry.follow_order([name for name in recorded if name in registry and name not in _BUILTINS])
    use_registry(registry)
