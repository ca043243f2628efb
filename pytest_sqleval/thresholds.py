"""Thresholds: suite-level gates on aggregate metrics (parsed, merged and checked; pure data, no pytest).

A threshold names an aggregate metric of the registry (:mod:`pytest_sqleval.registry`) and a bound in the
metric's direction: metrics where higher is better (rates, means) take minimums; counts of bad things
(``error_count``, ``vacuous``) take maximums. A metric can
be addressed inside a breakdown with a dotted path::

    execution_accuracy                       the suite's execution accuracy
    by_gold_sql.soft_f1                      soft F1 averaged per distinct gold SQL (MRO 3.2)
    by_difficulty.hard.execution_accuracy    one difficulty class
    by_tag.joins.execution_accuracy          one tag
    overall:execution_accuracy               the micro-average over every suite's scored cases
                                             (command line and ini only)

Sources, most specific first: ``--sqleval-threshold`` (command line), the
suite's ``thresholds:``, the ini option ``sqleval_thresholds``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .registry import BREAKDOWNS, Metric, active_registry

#: A threshold on the overall figure (across suites) is written ``overall:<metric>``.
OVERALL_PREFIX = "overall:"


class ThresholdError(ValueError):
    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        #: What to write instead, when there is one better than the source's generic advice.
        self.fix = fix

    def described(self) -> str:
        """The message with its fix, for sources that print one line (the command line, the ini file)."""
        return f"{self} ({self.fix})" if self.fix else str(self)


@dataclass(frozen=True)
class Threshold:
    metric: str  # possibly a dotted path
    bound: str  # "min" | "max"
    value: float
    source: str  # "cli" | "suite" | "ini"

    def check(self, aggregates: Mapping[str, Any]) -> Verdict:
        actual = lookup(aggregates, self.metric)
        if actual is None:
            return Verdict(self, None, False)
        if self.bound == "min":
            return Verdict(self, actual, actual >= self.value or same_value(actual, self.value))
        return Verdict(self, actual, actual <= self.value or same_value(actual, self.value))


def same_value(actual: float, limit: float) -> bool:
    """An aggregate equal to its limit up to the last bits of floating-point arithmetic: a mean of scores or of
    per-gold-SQL rates (fsum, then a division) can land one bit below the number it equals (0.7 and 0.1 average
    0.39999999999999997), which must not fail a minimum of 0.4."""
    import math

    return math.isclose(actual, limit, rel_tol=1e-12, abs_tol=1e-12)


@dataclass(frozen=True)
class Verdict:
    threshold: Threshold
    actual: float | None
    passed: bool

    def line(self) -> str:
        t = self.threshold
        word = "PASS" if self.passed else "FAIL"
        fmt = _fmt_rate if t.bound == "min" else _fmt_count
        if self.actual is None:
            limit = fmt(t.value, _decimals(t.value))
            return f"{word} {t.metric}: not computed in this run (no case produced it), required {_symbol(t.bound, True)} {limit}"
        relation = _symbol(t.bound, self.passed)
        actual, limit = _shown(self.actual, t.value, fmt)
        return f"{word} {t.metric} {actual} {relation} {limit}"

    def as_json(self) -> dict[str, Any]:
        t = self.threshold
        return {"metric": t.metric, t.bound: t.value, "value": self.actual, "passed": self.passed, "source": t.source}


def _symbol(bound: str, passed: bool) -> str:
    if bound == "min":
        return ">=" if passed else "<"
    return "<=" if passed else ">"


def _fmt_rate(value: float, decimals: int = 4) -> str:
    """Two to four (``decimals``) decimals: 0.6 -> 0.60, 0.58704 -> 0.587, 1.0 -> 1.00."""
    text = f"{value:.{decimals}f}".rstrip("0")
    decimals = len(text.split(".", 1)[1])
    return text + "0" * max(0, 2 - decimals)


def _fmt_count(value: float, decimals: int = 4) -> str:
    """A whole number when it is one (error_count 7); a grouped count keeps up to four (``decimals``) decimals."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.{decimals}f}".rstrip("0").rstrip(".")


#: The most decimals a verdict line shows (a difference below that is the arithmetic's, see same_value).
_MAX_DECIMALS = 12


def _decimals(limit: float) -> int:
    """The decimals of a limit as it was written (0.57143 -> 5), at least four, at most _MAX_DECIMALS."""
    from decimal import Decimal

    exponent = Decimal(repr(float(limit))).as_tuple().exponent
    return min(max(4, -exponent if isinstance(exponent, int) else 0), _MAX_DECIMALS)


def _shown(actual: float, limit: float, fmt) -> tuple[str, str]:
    """The value and the limit of a verdict line: the limit as written, the value with as many decimals as it
    takes to show it on its side of the limit (never ``FAIL soft_f1 0.6667 < 0.6667``)."""
    decimals = _decimals(limit)
    shown_limit, shown = fmt(limit, decimals), fmt(actual, decimals)
    while shown == shown_limit and not same_value(actual, limit) and decimals < _MAX_DECIMALS:
        decimals += 1
        shown = fmt(actual, decimals)
    return shown, shown_limit


def _path_parts(metric: str) -> list[str]:
    """``by_difficulty.<level>.<metric>`` split in three: a level may hold dots (``level.2``), metric names do not."""
    parts = metric.removeprefix(OVERALL_PREFIX).split(".")
    if parts[0] in ("by_difficulty", "by_tag") and len(parts) > 3:
        parts = [parts[0], ".".join(parts[1:-1]), parts[-1]]
    return parts


def _canonical_level(metric: str) -> str:
    """``by_difficulty.HARD.<metric>`` names the bucket the cases' ``difficulty: HARD`` is counted in: ``hard``
    (:func:`~pytest_sqleval.suite.difficulty_bucket`, as the loader reads the cases' labels)."""
    from .suite import difficulty_bucket

    parts = _path_parts(metric)
    if parts[0] == "by_difficulty" and len(parts) == 3:
        return ".".join((parts[0], difficulty_bucket(parts[1]), parts[2]))
    return metric


def metric_of_path(metric: str) -> Metric:
    """The registered metric a (possibly dotted) metric path ends in; raises ThresholdError for a path or a
    metric it does not know."""
    parts = _path_parts(metric)
    known_path = (len(parts) == 1 or (parts[0] == "by_gold_sql" and len(parts) == 2)
                  or (parts[0] in ("by_difficulty", "by_tag") and len(parts) == 3 and bool(parts[1])))
    if not known_path:
        raise ThresholdError(
            f"unknown metric path {metric!r}; use a metric name, by_gold_sql.<metric>, "
            f"by_difficulty.<level>.<metric> or by_tag.<tag>.<metric>"
        )
    found = gateable_metric(parts[-1])
    if len(parts) > 1 and (found.scope != "case" or parts[0] == "by_gold_sql" and not found.per_gold):
        # never computed, so it could only ever fail as "not computed in this run"
        what = "a figure over interactions" if found.scope != "case" else f"a {found.kind}"
        raise ThresholdError(f"{metric}: {found.name} is {what} with no {parts[0]} breakdown; "
                             f"gate {found.name} itself")
    return found


def gateable_metric(name: str) -> Metric:
    """The registered metric a threshold may name; raises ThresholdError naming the ones there are."""
    metrics = active_registry().gateable()
    if name not in metrics:
        if name in active_registry():  # registered, but not to be gated: say so, not "unknown"
            why = "gateable=False" if not active_registry()[name].gateable else "reported=False (no aggregate)"
            raise ThresholdError(f"unknown metric {name!r} for a threshold: {name!r} is registered with "
                                 f"{why}, so it cannot be gated; metrics that may be: {', '.join(metrics)}")
        raise ThresholdError(f"unknown metric {name!r}{did_you_mean(name, metrics)}; metrics are: {', '.join(metrics)}")
    return active_registry()[name]


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """`` (did you mean 'soft_f1'?)`` for a metric name written in other letter case or with `-` for `_`
    (`SOFT_F1`, `soft-f1`); else ``""`` (a closest spelling could name another metric: `exec_match` is closer to
    `exact_match` than to `execution_match`)."""
    written = str(name).strip().lower().replace("-", "_")
    same = [n for n in names if n.lower() == written and n != name]
    return f" (did you mean {same[0]!r}?)" if same else ""


def make_threshold(metric: str, value: Any, source: str, *, allow_overall: bool = False) -> Threshold:
    if metric.startswith(OVERALL_PREFIX) and not allow_overall:
        raise ThresholdError(f"{metric}: a threshold on the overall figure belongs on the command line "
                             f"(--sqleval-threshold {metric}=VALUE) or in the ini option sqleval_thresholds",
                             fix=f"move it out of the suite: `--sqleval-threshold {metric}=VALUE`, or `{metric}="
                                 "VALUE` under `sqleval_thresholds` in pytest.ini (a suite's `thresholds:` gate that suite: "
                                 f"`{metric.removeprefix(OVERALL_PREFIX)}: VALUE`)")
    if metric.startswith(OVERALL_PREFIX) and metric.removeprefix(OVERALL_PREFIX).split(".")[0] in BREAKDOWNS:
        raise ThresholdError(f"{metric}: the overall figure has no breakdowns; use overall:<metric>")
    found = metric_of_path(metric)
    metric = _canonical_level(metric)
    bound, kind = found.bound, found.kind
    if isinstance(value, bool):  # YAML `true`/`yes`: float(True) would silently be 1.0
        raise ThresholdError(f"threshold for {metric} must be a number, not {str(value).lower()}")
    if isinstance(value, str) and "=" in value:  # `execution_accuracy=0.9 soft_f1=0.8`: two thresholds in one
        raise ThresholdError(f"threshold for {metric} must be a number, not {value!r}",
                             fix=_ONE_EACH.get(source, _ONE_EACH["cli"]))
    if isinstance(value, str) and "_" in value:  # Python's float() reads `0_5` as 5 (digit grouping): a typo here
        raise ThresholdError(f"threshold for {metric} must be a number, not {value!r}",
                             fix=f"write the number with a decimal point: {value.replace('_', '.', 1)}?"
                             if _is_number(value.replace("_", ".", 1)) else None)
    if isinstance(value, str) and value.strip().endswith("%") and _is_number(value.strip()[:-1]) and kind != "count":
        share = f"{float(value.strip()[:-1]) / 100:g}"  # `60%`: a rate is a share from 0 to 1, not a percentage
        raise ThresholdError(f"threshold for {metric} must be a number, not {value!r}",
                             fix="write the rate as a share from 0 to 1: "
                                 + (f"`{metric}: {share}`" if source == "suite" else f"{metric}={share}"))
    if not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            comment = source == "ini" and isinstance(value, str) and any(c in value for c in "#;")
            raise ThresholdError(f"threshold for {metric} must be a number, not {value!r}",
                                 fix=INI_COMMENT_FIX if comment else None) from None
    value = float(value) + 0.0  # `-0` is the limit 0 (shown as -0.00 in the verdict and the report otherwise)
    if value != value or value in (float("inf"), float("-inf")):
        raise ThresholdError(f"threshold for {metric} must be a finite number, not {value}")
    if kind != "count" and found.maximum is not None and not 0.0 <= value <= found.maximum:
        # a share from 0 to 1 (a rate, soft_f1) reads as a rate; a mean of other values (a user's stars, r_ves) is not
        what = "rate" if kind == "rate" or found.maximum == 1 else "mean"
        raise ThresholdError(f"{metric} is a {what} between 0 and {found.maximum:.4g}; {value:g} can never be met or "
                             f"is meaningless")
    if kind == "count" and value < 0:
        raise ThresholdError(f"{metric} is a count; a {bound}imum of {value:g} can never hold")
    if kind == "count" and not value.is_integer() and _path_parts(metric)[0] != "by_gold_sql":
        # a number of cases is whole: `error_count: 2.5` reads as a typo or a rate; by_gold_sql.<count> is a sum of
        # per-group rates (MRO 3.2), a fraction by design
        import math

        whole = math.floor(value) if bound == "max" else math.ceil(value)
        raise ThresholdError(f"{metric} is a count of cases, a whole number; a {bound}imum of {value:g} is not one",
                             fix=f"write a whole number: {whole} is the same gate for {metric}")
    return Threshold(metric, bound, value, source)


#: Why an ini value with ``# ...`` after it is bad (thresholds and the other ini options say it alike).
INI_COMMENT_FIX = ("an ini value has no comment after it: `# ...` is read as part of the value, so put the comment on "
                   "a line of its own")

#: How to write several thresholds, by where they are written.
_ONE_EACH = {"cli": "give one --sqleval-threshold METRIC=VALUE for each metric",
             "ini": "write one METRIC=VALUE per line",
             "suite": "write one `metric: value` per line under `thresholds:`"}


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return "_" not in text


def parse_assignment(text: str, source: str) -> Threshold:
    """``METRIC=VALUE`` (command line and ini form)."""
    check_assignment_form(text)
    metric, _, value = text.partition("=")
    return make_threshold(metric.strip(), value.strip(), source, allow_overall=True)


def check_assignment_form(text: str) -> None:
    """``METRIC=VALUE``, and no comparison operator: raises ThresholdError saying what to write."""
    metric, sep, value = text.partition("=")
    operator = _comparison_operator(text)
    if operator is not None:  # `soft_f1>=0.5`: the bound comes from the metric, not from an operator
        name, _, number = text.partition(operator)
        raise ThresholdError(f"expected METRIC=VALUE, not {text!r}: a threshold takes no {operator!r}",
                             fix=f"write {name.strip()}={number.strip()}: a minimum for a rate, a maximum for a "
                                 "count or a metric where lower is better")
    if not sep or not metric.strip() or not value.strip():
        raise ThresholdError(f"expected METRIC=VALUE (e.g. execution_accuracy=0.6), not {text!r}")


def _comparison_operator(text: str) -> str | None:
    """The comparison operator written between the metric and the value (``soft_f1>=0.5``, ``error_count<2``,
    ``soft_f1==0.5``, ``soft_f1=>0.5``), if any. Only next to the ``=`` (or, without one, a ``>``/``<``): a tag of
    ``by_tag.<tag>.<metric>`` may hold such a character."""
    metric, sep, value = text.partition("=")
    if sep:
        if metric.rstrip()[-1:] in ("<", ">", "!"):
            return metric.rstrip()[-1] + "="
        if value.lstrip()[:1] in ("<", ">", "="):
            return "=" + value.lstrip()[0]
        return None
    return next((op for op in (">", "<") if op in text), None)


def merge(*layers: Iterable[Threshold]) -> list[Threshold]:
    """Merge threshold layers, earlier layers winning per metric; sorted by metric name."""
    chosen: dict[str, Threshold] = {}
    for layer in layers:
        for threshold in layer:
            chosen.setdefault(threshold.metric, threshold)
    return sorted(chosen.values(), key=lambda t: t.metric)


def lookup(aggregates: Mapping[str, Any], metric: str) -> float | None:
    node: Any = aggregates
    parts = _path_parts(metric)
    if parts[0] not in BREAKDOWNS:
        node = aggregates.get("metrics", {})
    for part in parts:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        return None
    return float(node)
