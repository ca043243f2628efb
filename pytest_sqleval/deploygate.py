"""The deploy gate over a report dict: the overall figure, the baseline block, every gate, merging shards.

Pure functions over ``sqleval-report/1`` dicts, shared by the pytest plugin (``--sqleval-json``,
the exit status) and the ``sqleval`` console command (``merge``, ``gate``), so both decide the
same way. The report keys are documented in docs/report-format.md.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .aggregate import aggregate_overall, aggregate_suite
from .baseline import ReportError, compare_reports, normalise_case, paired_metrics
from .registry import active_registry
from .thresholds import OVERALL_PREFIX, Threshold, ThresholdError, merge, parse_assignment

DEFAULT_ALPHA = 0.05


class GateOptionError(ValueError):
    pass


@dataclass(frozen=True)
class BaselineRule:
    """``--sqleval-fail-under-baseline [SCOPE:]METRIC[=TOLERANCE]``; scope None means every suite."""

    metric: str
    tolerance: float = 0.0
    scope: str | None = None

    @property
    def text(self) -> str:
        prefix = f"{self.scope}:" if self.scope else ""
        return f"{prefix}{self.metric}={exact_number(self.tolerance)}"


def exact_number(value: float) -> str:
    """``0.01``, ``0`` as ``:g`` writes them; a value ``:g`` would round (``0.3333334``) in full: the recorded rule is
    read back by ``sqleval gate``, which must judge the tolerance the run judged."""
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def parse_baseline_rule(text: str) -> BaselineRule:
    """``execution_accuracy``, ``soft_f1=0.02``, ``overall:execution_accuracy=0.01``, ``<suite>:exact_match``."""
    target, sep, tolerance_text = text.strip().partition("=")
    scope, colon, metric = target.rpartition(":")
    metric = metric.strip()
    if metric not in paired_metrics():
        raise GateOptionError(f"cannot compare {metric!r} with the baseline case by case; "
                              f"use one of: {', '.join(paired_metrics())} (e.g. execution_accuracy=0.01)")
    tolerance = 0.0
    if sep:
        try:
            tolerance = float(tolerance_text)
        except ValueError:
            raise GateOptionError(f"tolerance of {target} must be a number, not {tolerance_text!r}") from None
        # a rate or a score moves by at most its maximum (1 for a rate); a user's mean (a length) by any finite amount
        maximum = active_registry()[metric].maximum
        if not 0.0 <= tolerance <= (maximum if maximum is not None else float("inf")) or tolerance == float("inf"):
            bound = f"between 0 and {maximum:.4g}" if maximum is not None else "of 0 or more"
            raise GateOptionError(f"tolerance of {target} is a drop {bound}, not {tolerance_text}")
    return BaselineRule(metric=metric, tolerance=tolerance, scope=scope.strip() or None if colon else None)


def last_rule_wins(rules: Sequence[BaselineRule]) -> tuple[BaselineRule, ...]:
    """One rule per scope and metric, the last one given (as for --sqleval-threshold: the command line after
    ``addopts``); two would be two contradicting gates of one name."""
    chosen: dict[tuple[str | None, str], BaselineRule] = {}
    for rule in rules:
        chosen.pop((rule.scope, rule.metric), None)
        chosen[(rule.scope, rule.metric)] = rule
    return tuple(chosen.values())


def parse_alpha(text: Any) -> float:
    try:
        alpha = float(text)
    except (TypeError, ValueError):
        raise GateOptionError(f"alpha must be a number between 0 and 1, not {text!r}") from None
    if not 0.0 < alpha < 1.0:
        raise GateOptionError(f"alpha must be between 0 and 1 (e.g. 0.05), not {text}")
    return alpha


@dataclass(frozen=True)
class GateOptions:
    overall_thresholds: tuple[Threshold, ...] = ()
    max_regressed: int | None = None
    fail_under_baseline: tuple[BaselineRule, ...] = ()
    alpha: float = DEFAULT_ALPHA
    baseline: str | None = None

    @property
    def needs_baseline(self) -> bool:
        return self.max_regressed is not None or bool(self.fail_under_baseline)

    def as_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "max_regressed": self.max_regressed,
            "fail_under_baseline": [r.text for r in self.fail_under_baseline],
            "alpha": self.alpha,
        }

    @classmethod
    def from_report(cls, report: Mapping[str, Any]) -> GateOptions:
        """The gate options recorded in a report (run.options.gates and overall.thresholds)."""
        recorded = ((report.get("run") or {}).get("options") or {}).get("gates") or {}
        overall = [threshold_from_json(t) for t in (report.get("overall") or {}).get("thresholds", [])]
        max_regressed, baseline = recorded.get("max_regressed"), recorded.get("baseline")
        # a hand-edited report: each value as the options take it, or a GateOptionError (bad input, not a traceback)
        if max_regressed is not None and (type(max_regressed) is not int or max_regressed < 0):
            raise GateOptionError(f"max_regressed is a whole number of cases >= 0, not {max_regressed!r}")
        if baseline is not None and not isinstance(baseline, str):
            raise GateOptionError(f"baseline is the path of a report, not {baseline!r}")
        return cls(
            overall_thresholds=tuple(overall),
            max_regressed=max_regressed,
            fail_under_baseline=tuple(parse_baseline_rule(t) for t in recorded.get("fail_under_baseline") or ()),
            alpha=DEFAULT_ALPHA if recorded.get("alpha") is None else parse_alpha(recorded["alpha"]),
            baseline=baseline,
        )


def threshold_from_json(data: Mapping[str, Any]) -> Threshold:
    try:
        bound = "min" if "min" in data else "max"
        return Threshold(str(data["metric"]), bound, float(data[bound]), data.get("source", "report"))
    except (KeyError, TypeError, ValueError):
        raise GateOptionError(f"a threshold is not {{metric, min or max}}: {json.dumps(data)}") from None


def suite_thresholds(entry: Mapping[str, Any]) -> list[Threshold]:
    return [threshold_from_json(t) for t in entry.get("thresholds", [])]


# --------------------------------------------------------------------------- the report blocks
def complete_report(report: dict[str, Any], options: GateOptions, *, baseline: Mapping[str, Any] | None = None,
                    baseline_path: str | None = None) -> dict[str, Any]:
    """Add ``overall``, ``baseline`` and ``gates`` to a report that has ``suites``, ``cases`` and ``run``."""
    overall = aggregate_overall(report["cases"])
    verdicts = [t.check(overall) for t in options.overall_thresholds]
    overall["thresholds"] = [v.as_json() for v in verdicts]
    overall["passed"] = all(v.passed for v in verdicts)
    report["overall"] = overall
    if baseline is not None:
        report["baseline"] = compare_reports(report, baseline, path=baseline_path or options.baseline or "")
    else:
        report.setdefault("baseline", None)
    report["gates"] = evaluate_gates(report, options)
    return report


def gates_passed(report: Mapping[str, Any] | None) -> bool:
    return report is None or all(g["passed"] for g in report.get("gates") or ())


def evaluate_gates(report: Mapping[str, Any], options: GateOptions) -> list[dict[str, Any]]:
    gates: list[dict[str, Any]] = []
    for entry in report.get("suites", []):
        for threshold in suite_thresholds(entry):
            gates.append(_threshold_gate(entry["name"], threshold, threshold.check(entry)))
    for threshold in options.overall_thresholds:
        gates.append(_threshold_gate("overall", threshold, threshold.check(report["overall"])))
    incomplete = (report.get("run") or {}).get("incomplete")
    if incomplete:  # -x/--maxfail/--sw stopped it, or a suite file failed to collect: no gate may pass on part of it
        gates.append({"name": "overall::incomplete", "kind": "incomplete", "suite": "overall", "metric": None,
                      "value": None, "limit": None, "passed": False,
                      "message": f"FAIL the run is incomplete: {incomplete}; gate a whole run"})
    comparison = report.get("baseline")
    if options.needs_baseline and comparison is None:
        gates.append({"name": "overall::baseline", "kind": "fail_under_baseline", "suite": "overall", "metric": None,
                      "value": None, "limit": None, "passed": False,
                      "message": "FAIL no baseline to compare with: pass --sqleval-baseline PATH (a sqleval-report/1 JSON)"})
        return gates
    if options.max_regressed is not None:
        gates.append(_max_regressed_gate(comparison["overall"], options.max_regressed))
    for rule in options.fail_under_baseline:
        gates.extend(_baseline_gates(comparison, rule, options.alpha))
    return gates


def _threshold_gate(suite: str, threshold: Threshold, verdict) -> dict[str, Any]:
    metric = threshold.metric.removeprefix(OVERALL_PREFIX)
    return {"name": f"{suite}::{metric}", "kind": "threshold", "suite": suite, "metric": metric,
            "value": verdict.actual, "limit": threshold.value, "bound": threshold.bound, "source": threshold.source,
            "passed": verdict.passed, "message": verdict.line()}


def _max_regressed_gate(overall: Mapping[str, Any], limit: int) -> dict[str, Any]:
    regressed = overall["pairs"]["regressed"]
    paired = sum(len(overall["pairs"].get(k) or ()) for k in ("fixed", "regressed", "still_missed", "still_passed"))
    passed = len(regressed) <= limit and paired > 0
    if not paired:  # no figure to gate on is no pass (a baseline of other suites or case ids, or of none)
        message = ("FAIL no case was scored in both this run and the baseline (0 pairs): nothing to count "
                   "regressions in; pass the deployed model's report of the same suites as --sqleval-baseline")
    elif passed:
        message = f"PASS {len(regressed)} regressed case(s) (passed in the baseline, missed now) <= {limit} allowed"
    else:
        shown = ", ".join(regressed[:10]) + (f" (and {len(regressed) - 10} more)" if len(regressed) > 10 else "")
        message = f"FAIL {len(regressed)} regressed case(s) (passed in the baseline, missed now) > {limit} allowed: {shown}"
    return {"name": "overall::max_regressed", "kind": "max_regressed", "suite": "overall", "metric": "regressed",
            "value": len(regressed), "limit": limit, "passed": passed, "message": message}


def _baseline_gates(comparison: Mapping[str, Any], rule: BaselineRule, alpha: float) -> list[dict[str, Any]]:
    if rule.scope == "overall":
        targets = [("overall", comparison["overall"])]
    elif rule.scope is not None:
        targets = [(s["name"], s) for s in comparison["suites"] if s["name"] == rule.scope]
        if not targets:
            return [_missing(rule, rule.scope, f"suite {rule.scope!r} is in neither this run nor the baseline")]
    else:  # each suite that has it in both runs, paired or not: a suite whose case ids all changed is no pass
        targets = [(s["name"], s) for s in comparison["suites"]
                   if rule.metric in s["metrics"] or rule.metric in s.get("unpaired_metrics", ())]
        if not targets:
            return [_missing(rule, "overall", "no suite has it in both runs")]
    gates = []
    for suite, entry in targets:
        stats = entry["metrics"].get(rule.metric)
        if stats is None:
            gates.append(_missing(rule, suite, _why_unpaired(entry, rule.metric)))
            continue
        gates.append(_baseline_gate(suite, rule, stats, alpha))
    return gates


def _why_unpaired(entry: Mapping[str, Any], metric: str) -> str:
    """Why a comparison has no statistics of ``metric``: no case scored it in both runs, or both runs scored it, but
    on no case of the same id (``unpaired_metrics``: the case ids changed)."""
    if metric not in entry.get("unpaired_metrics", ()):
        return "not computed in both runs (no pair of scored cases)"
    counts = entry.get("counts") or {}
    return (f"scored in both runs, but on no case of the same id in both ({counts.get('new', 0)} new, "
            f"{counts.get('removed', 0)} removed: case ids or suites renamed?); compare with a baseline of the same cases")


def _rule_label(rule: BaselineRule) -> str:
    """The metric as the rule names it: ``execution_accuracy`` (each suite), ``overall:...`` or ``<suite>:...``, so
    that a rule for every suite and one for a single suite, both gating that suite, are told apart."""
    return f"{rule.scope}:{rule.metric}" if rule.scope else rule.metric


def _gate_name(suite: str, rule: BaselineRule) -> str:
    """``alpha::execution_accuracy vs baseline`` (the rule for each suite, or ``overall:``);
    ``alpha::alpha:execution_accuracy vs baseline`` (the rule for suite alpha alone)."""
    metric = rule.metric if rule.scope in (None, "overall") else _rule_label(rule)
    return f"{suite}::{metric} vs baseline"


def _missing(rule: BaselineRule, suite: str, why: str) -> dict[str, Any]:
    return {"name": _gate_name(suite, rule), "kind": "fail_under_baseline", "suite": suite,
            "metric": rule.metric, "value": None, "limit": 0.0 - rule.tolerance, "passed": False,
            "message": f"FAIL {_rule_label(rule)} vs baseline: {why}"}


def _baseline_gate(suite: str, rule: BaselineRule, stats: Mapping[str, Any], alpha: float) -> dict[str, Any]:
    delta, p = stats["delta"], stats["p_value"]
    lo, hi = stats["ci"]
    # "dropped" means got worse: for a metric where lower is better (a user's, registry direction) a rise is worse
    definition = active_registry().get(rule.metric)
    lower_is_better = definition is not None and definition.direction == "lower"
    drop, dropped = (delta, "rose") if lower_is_better else (-delta, "dropped")
    evidence = f"(95% CI {format_interval(lo, hi)}, p={format_p(p, alpha)}, {stats['n_pairs']} pairs)"
    label = _rule_label(rule)
    tolerance = exact_number(rule.tolerance)
    significant = p < alpha
    # a drop equal to the tolerance is within it: 1.0 - 0.7 is 0.30000000000000004 in floating point
    within = drop <= rule.tolerance + 1e-9
    if not within and significant:
        passed = False
        message = (f"FAIL {label} {dropped} {drop:.4f} vs baseline {evidence}: "
                   f"more than the tolerance {tolerance} and significant at alpha {alpha:g}")
    elif drop <= 0:
        passed = True
        message = f"PASS {label} {'+' if delta > 0 else ''}{delta:.4f} vs baseline {evidence}"
    elif within:
        passed = True
        message = f"PASS {label} {dropped} {drop:.4f} vs baseline {evidence}: within the tolerance {tolerance}"
    else:
        passed = True
        message = f"PASS {label} {dropped} {drop:.4f} vs baseline {evidence}: not significant at alpha {alpha:g}"
    limit = rule.tolerance if lower_is_better else 0.0 - rule.tolerance  # 0.0 - 0.0 is 0.0, not -0.0
    return {"name": _gate_name(suite, rule), "kind": "fail_under_baseline", "suite": suite,
            "metric": rule.metric, "value": delta, "limit": limit, "p_value": p, "ci": [lo, hi],
            "alpha": alpha, "passed": passed, "message": message}


def format_interval(lo: float, hi: float) -> str:
    """``[-0.40, 0.02]``: two decimals, more (up to six) while they would hide what the interval says: an interval
    that excludes 0 with a bound read as ``0.00``/``-0.00`` (a large suite's small significant drop,
    ``[-0.0045, -0.0015]``, showed as ``[-0.00, -0.00]``), or two different bounds read alike (``[1.00, 1.00]``)."""
    excludes_zero = lo > 0 or hi < 0
    for digits in range(2, 7):
        low, high = f"{lo + 0.0:.{digits}f}", f"{hi + 0.0:.{digits}f}"
        hidden = excludes_zero and (float(low) == 0 or float(high) == 0)
        if not hidden and (low != high or lo == hi):
            return f"[{low}, {high}]"
    return f"[{lo + 0.0:.3g}, {hi + 0.0:.3g}]"  # smaller still: in significant digits


def format_p(p: float, alpha: float | None = None) -> str:
    """``0.070``, ``<0.001``: three decimals, more (up to eight) when a verdict at ``alpha`` stands beside it and three
    would put p on the other side of alpha than it is: p = 0.0498 showed as ``p=0.050`` beside "significant at
    alpha 0.05"; it is ``0.0498`` there. ``<0.001`` only while alpha is not below 0.001."""
    if p < 0.001 and (alpha is None or alpha >= 0.001):
        return "<0.001"
    for digits in range(3, 9):
        shown = f"{p:.{digits}f}"
        if (alpha is None or (float(shown) < alpha) == (p < alpha)) and (float(shown) > 0 or p == 0):
            return shown
    return f"{p:.3g}"


# --------------------------------------------------------------------------- re-gating and merging
def regate(report: Mapping[str, Any], *, thresholds: Sequence[Threshold] = (), options: GateOptions | None = None,
           baseline: Mapping[str, Any] | None = None, baseline_path: str | None = None) -> dict[str, Any]:
    """A copy of ``report`` with its gates evaluated again: command-line thresholds win per metric."""
    result = copy.deepcopy(dict(report))
    result["cases"] = [normalise_case(c) for c in result["cases"]]
    options = options or GateOptions.from_report(result)
    plain = [t for t in thresholds if not t.metric.startswith(OVERALL_PREFIX)]
    overall = [t for t in thresholds if t.metric.startswith(OVERALL_PREFIX)]
    for entry in result["suites"]:
        chosen = merge(plain, suite_thresholds(entry))
        verdicts = [t.check(entry) for t in chosen]
        entry["thresholds"] = [v.as_json() for v in verdicts]
        entry["passed"] = all(v.passed for v in verdicts)
    options = GateOptions(overall_thresholds=tuple(merge(overall, options.overall_thresholds)),
                          max_regressed=options.max_regressed, fail_under_baseline=options.fail_under_baseline,
                          alpha=options.alpha, baseline=baseline_path or options.baseline)
    # the gate options these gates come from, as a run records them: `sqleval gate` on the written report (-o)
    # re-gates it as it reads, not with the options of the run before
    run = result["run"] = dict(result.get("run") or {})
    run["options"] = {**(run.get("options") or {}), "gates": options.as_json()}
    if baseline is None:
        kept = result.get("baseline")
        result = complete_report(result, options)
        result["baseline"] = kept
        result["gates"] = evaluate_gates(result, options)
        return result
    return complete_report(result, options, baseline=baseline, baseline_path=baseline_path)


class MergeError(ReportError):
    pass


def merge_reports(sources: Sequence[tuple[str, Mapping[str, Any]]], *, baseline: Mapping[str, Any] | None = None,
                  baseline_path: str | None = None) -> dict[str, Any]:
    """One report from the reports of shards (or of disjoint runs): aggregates and gates recomputed."""
    from .report.json_report import SCHEMA, suite_entry
    from .summary import SuiteSummary

    if not sources:
        raise MergeError("sqleval merge", "no reports to merge", "name two or more report files")
    _check_same_metrics(sources)
    warnings = _shard_warnings(sources)
    selections = _different_selections(sources)
    if selections:
        warnings.append(f"the shards ran different selections ({selections}): each shard split its own selection, so "
                        "the merged report is no one run's and cases of either selection may be in no shard; run "
                        "every shard with the same -k, -m and --deselect")
    seen: dict[tuple[str, str], str] = {}
    cases: list[dict[str, Any]] = []
    templates: dict[str, Mapping[str, Any]] = {}
    thresholds: dict[str, list[Threshold]] = {}
    template_source: dict[str, str] = {}
    for path, report in sources:
        for entry in report["suites"]:
            first = templates.setdefault(entry["name"], entry)
            first_path = template_source.setdefault(entry["name"], path)
            if first.get("path") != entry.get("path"):
                raise MergeError(path, f"suite {entry['name']} comes from {entry.get('path')} here and from "
                                       f"{first.get('path')} in another report", "give every suite a unique `suite:` name")
            for rule in SCORING_RULES:  # one figure of a suite scored two ways is no unsharded run's
                if entry.get(rule) != first.get(rule):
                    here, there = _rule_difference(rule, entry.get(rule), first.get(rule))
                    raise MergeError(path, f"suite {entry['name']} was scored with {here} here and {there} in "
                                           f"{first_path}", "run every shard on the same suite files and options, "
                                                            "then merge their reports")
            thresholds[entry["name"]] = merge(thresholds.get(entry["name"], []), suite_thresholds(entry))
        for case in report["cases"]:
            key = (case["suite"], str(case["id"]))
            if key in seen:
                fix = "merge the reports of disjoint shards (--sqleval-shard K/N) or of disjoint suites"
                if selections:
                    fix = (f"the shards ran different selections ({selections}); run every shard with the same -k, -m "
                           "and --deselect")
                raise MergeError(path, f"case {key[0]}::{key[1]} is also in {seen[key]}", fix)
            seen[key] = path
            cases.append(normalise_case(case))
    order = {name: entry.get("path") or name for name, entry in templates.items()}
    cases.sort(key=lambda c: (order.get(c["suite"], c["suite"]), c.get("index", 0)))
    suites = []
    for name in sorted(templates, key=lambda n: order[n]):
        template = templates[name]
        aggregates = aggregate_suite([c for c in cases if c["suite"] == name])
        summary = SuiteSummary(name=name, path=template.get("path"), execution=template.get("execution"),
                               exact_match_profile=template.get("exact_match_profile"), pass_if=template.get("pass_if"),
                               aggregates=aggregates, verdicts=[t.check(aggregates) for t in thresholds[name]])
        suites.append(suite_entry(summary))
    from .model.usage import usage

    for entry in suites:  # per suite: the model calls' count, tokens, latency and cost, as one run reports them
        block = usage([c for c in cases if c["suite"] == entry["name"]])
        if block is not None:
            entry["model"] = block
    first = sources[0][1]
    options = GateOptions.from_report(first)
    overall = merge(*(GateOptions.from_report(r).overall_thresholds for _, r in sources))
    options = GateOptions(overall_thresholds=tuple(overall), max_regressed=options.max_regressed,
                          fail_under_baseline=options.fail_under_baseline, alpha=options.alpha,
                          baseline=baseline_path or options.baseline)
    run = merged_run([(p, r.get("run") or {}) for p, r in sources], warnings,
                     case_counts=[len(r["cases"]) for _, r in sources])
    if options.baseline:
        run.setdefault("options", {}).setdefault("gates", {})["baseline"] = options.baseline
    report = {"schema": SCHEMA, "run": run, "suites": suites, "cases": cases}
    recorded = {name: spec for _, r in sources for name, spec in (r.get("metric_definitions") or {}).items()}
    if recorded:
        report["metric_definitions"] = recorded
    return complete_report(report, options, baseline=baseline, baseline_path=baseline_path)


def _check_same_metrics(sources: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    """Every report registered the same metrics of its own, alike (``metric_definitions``): a shard run without the
    conftest.py that registers one would leave the merged figure of that metric over the other shards' cases."""
    first_path, first = sources[0][0], sources[0][1].get("metric_definitions") or {}
    fix = "run every shard with the same conftest.py files and plugins, then merge their reports"
    for path, report in sources[1:]:
        mine = report.get("metric_definitions") or {}
        for name in [*first, *(n for n in mine if n not in first)]:
            if name not in mine or name not in first:
                has, lacks = (first_path, path) if name in first else (path, first_path)
                raise MergeError(path, f"metric {name} is registered in {has} and not in {lacks}", fix)
            if mine[name] != first[name]:
                keys = sorted(k for k in set(mine[name]) | set(first[name]) if mine[name].get(k) != first[name].get(k))
                differences = ", ".join(f"{k} {mine[name].get(k)!r} here and {first[name].get(k)!r}" for k in keys)
                raise MergeError(path, f"metric {name} is registered otherwise than in {first_path}: {differences}", fix)


#: The keys of a suite entry that say how its cases were scored: shards of one suite must agree on them.
SCORING_RULES = ("execution", "exact_match_profile", "pass_if")


def _rule_difference(rule: str, here: Any, there: Any) -> tuple[str, str]:
    """How two reports' scoring rules of one suite differ: ``execution profile 'bird'`` against ``... 'sqleval'``
    (the options of a comparison profile that differ), or the whole values."""
    if isinstance(here, Mapping) and isinstance(there, Mapping):
        keys = [k for k in sorted(set(here) | set(there), key=lambda k: (k != "profile", str(k)))
                if here.get(k) != there.get(k)]
        keys = ["profile"] if "profile" in keys else keys  # another profile: its options differ by design
        return (", ".join(f"{rule} {k} {here.get(k)!r}" for k in keys),
                ", ".join(f"{rule} {k} {there.get(k)!r}" for k in keys))
    return f"{rule} {here!r}", f"{rule} {there!r}"


def _shard_warnings(sources: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    shards = [((r.get("run") or {}).get("shard"), p) for p, r in sources]
    marked = [(s, p) for s, p in shards if s]
    if not marked:
        return []
    warnings = []
    totals = {s.split("/")[1] for s, _ in marked}
    if len(totals) > 1:
        warnings.append(f"the reports come from different shard counts: {', '.join(sorted(s for s, _ in marked))}")
    elif len(marked) == len(shards):
        n = int(next(iter(totals)))
        present = {int(s.split("/")[0]) for s, _ in marked}
        missing = [f"{k}/{n}" for k in range(1, n + 1) if k not in present]
        if missing:
            warnings.append(f"shard(s) {', '.join(missing)} missing: the merged report covers only part of the suites")
    return warnings


def merged_run(runs: Sequence[tuple[str, Mapping[str, Any]]], warnings: list[str], *,
               case_counts: Sequence[int] | None = None) -> dict[str, Any]:
    first = dict(runs[0][1])
    run = copy.deepcopy(first)
    starts = [r["started"] for _, r in runs if r.get("started")]
    ends = [r["finished"] for _, r in runs if r.get("finished")]
    if starts and ends:
        run["started"], run["finished"] = min(starts), max(ends)
    durations = [r.get("duration_s") for _, r in runs if isinstance(r.get("duration_s"), (int, float))]
    run["duration_s"] = round(sum(durations), 3) if durations else None
    files: dict[str, str] = {}
    for path, r in runs:
        for name, digest in (r.get("files") or {}).items():
            if files.setdefault(name, digest) != digest:
                warnings.append(f"{name} differs between the shards ({path} has sha256 {digest[:12]})")
    run["files"] = dict(sorted(files.items()))
    commits = {(r.get("git") or {}).get("commit") for _, r in runs}
    if len(commits) > 1:
        warnings.append(f"the shards ran on different commits: {', '.join(sorted(str(c) for c in commits))}")
    for key in ("versions", "options"):
        values = [r.get(key) for _, r in runs]
        if any(v != values[0] for v in values):
            warnings.append(f"the shards ran with different {key}; the merged report keeps the first's")
    run["shard"] = None
    incomplete = [f"{path}: {r['incomplete']}" for path, r in runs if r.get("incomplete")]
    run["incomplete"] = "; ".join(incomplete) or None  # one stopped shard leaves the merged run incomplete
    run["deselected"] = merged_deselected([r.get("deselected") for _, r in runs], case_counts,
                                          sharded=[bool(r.get("shard")) for _, r in runs],
                                          suite_cases=[r.get("suite_cases") for _, r in runs])
    suite_cases: dict[str, Any] = {}
    for _, r in runs:
        suite_cases.update(r.get("suite_cases") or {})
    run["suite_cases"] = dict(sorted(suite_cases.items()))
    run["selection"] = first.get("selection") if all(r.get("selection") == first.get("selection") for _, r in runs) else None
    run["merged_from"] = [{"path": p, "shard": r.get("shard"), "duration_s": r.get("duration_s")} for p, r in runs]
    run["merge_warnings"] = warnings
    return run


def _different_selections(sources: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """The selections (-k, -m, --deselect, --lf) of shards of one run (--sqleval-shard) when they differ, as text;
    '' when they agree, or the reports are not shards (runs split by -k are disjoint selections by design)."""
    marked = [(p, (r.get("run") or {}).get("selection")) for p, r in sources if (r.get("run") or {}).get("shard")]
    known = [(p, s) for p, s in marked if isinstance(s, Mapping)]
    if len(known) < 2 or all(s == known[0][1] for _, s in known):
        return ""

    def described(selection: Mapping[str, Any]) -> str:
        parts = [f"{key} {value!r}" if not isinstance(value, bool) else key for key, value in selection.items()]
        return " ".join(parts) or "no selection"

    return "; ".join(f"{Path(p).name}: {described(s)}" for p, s in known)


def merged_deselected(counts: Sequence[Any], case_counts: Sequence[int] | None, *,
                      sharded: Sequence[bool], suite_cases: Sequence[Any] | None = None) -> int | None:
    """The merged run's deselected cases. Reports of disjoint runs (no shard): the sum of theirs. Shards: a shard
    deselects the other shards' cases besides the user's -k or --deselect, so each shard's ``deselected + cases``
    is the whole run's case count, and the merge leaves out that count less the cases of all the reports. ``None``
    when a report has no count, shards and whole runs are mixed, or the shards disagree on the whole (they ran
    different suites): no one count holds for the merge."""
    if case_counts is None or not counts or any(not isinstance(n, int) or isinstance(n, bool) for n in counts):
        return None
    sizes = _suite_sizes(suite_cases)
    if sizes is not None:  # each report selected its suites' cases less its deselected ones: the rest of all suites'
        totals = [sum(s.values()) for s in (suite_cases or ())]
        selected = sum(total - n for total, n in zip(totals, counts))
        return max(0, sum(sizes.values()) - selected)
    if not any(sharded):
        return sum(counts)
    if not all(sharded):
        return None
    totals = {n + cases for n, cases in zip(counts, case_counts)}
    if len(totals) != 1:
        return None
    return max(0, totals.pop() - sum(case_counts))


def _suite_sizes(suite_cases: Sequence[Any] | None) -> dict[str, int] | None:
    """Every suite's case count over the reports (``run.suite_cases``); None when a report has none (an older
    report) or two reports count one suite otherwise (different suite files)."""
    if not suite_cases or any(not isinstance(s, Mapping) for s in suite_cases):
        return None
    sizes: dict[str, int] = {}
    for block in suite_cases:
        for name, n in block.items():
            if not isinstance(n, int) or isinstance(n, bool) or sizes.setdefault(name, n) != n:
                return None
    return sizes


def threshold_argument(text: str) -> Threshold:
    try:
        return parse_assignment(text, "cli")
    except ThresholdError as exc:
        raise GateOptionError(exc.described()) from None


__all__ = ["BaselineRule", "GateOptions", "GateOptionError", "MergeError", "complete_report", "evaluate_gates",
           "gates_passed", "last_rule_wins", "merge_reports", "parse_alpha", "parse_baseline_rule", "regate",
           "threshold_argument"]
