"""The ``sqleval`` section of pytest's terminal summary.

One block per suite: outcomes, the metrics (plain mean and the mean per
distinct gold SQL), the breakdown by difficulty, exact-match components,
SParC aggregates by turn, then one PASS/FAIL line per threshold. Misses are
listed with their reason; with ``-v`` or ``--sqleval-diff`` each miss also
shows both SQL texts and a compact diff of the results.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..registry import active_registry
from ..summary import SuiteSummary
from .diff import _width as display_width
from .diff import printable, render_miss
from .view import breakdown_columns, outcome_text

MISS_LIST_LIMIT = 25


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    return f"{value:.4f}"


def write_summary(tr, summaries: Sequence[SuiteSummary], records_by_suite: dict[str, list[dict]], *,
                  json_path: str | None, section: Callable[[SuiteSummary, list[dict]], Any]) -> None:
    """The ``sqleval`` section: per suite, ``section(summary, records)`` (the ``pytest_sqleval_terminal_section``
    hook, whose first implementation is :func:`write_suite`), then where the JSON report went."""
    tr.write_sep("=", "sqleval")
    for summary in summaries:
        section(summary, records_by_suite.get(summary.path, []))
        tr.write_line("")
    if json_path:
        tr.write_line(f"sqleval report written to {json_path}")


def write_suite(tr, summary: SuiteSummary, records: list[dict], *, verbose: bool,
                exit_status: int | None = None) -> None:
    """A suite's built-in part of the summary: metrics, breakdowns, misses and threshold verdicts."""
    agg = summary.aggregates
    outcomes = outcome_text(agg["outcomes"])
    tr.write_line(printable(f"suite {summary.name} ({summary.path})"))  # a name can hold an escape or a newline
    cases = f"{agg['cases']} case{'s' if agg['cases'] != 1 else ''}"
    tr.write_line(f"  {cases}: {outcomes} | execution profile {_profile_text(summary.execution)}"
                  f" | exact match {summary.exact_match_profile or '-'} | pass_if {summary.pass_if}")
    _write_metrics(tr, agg)
    _write_breakdown(tr, "difficulty", agg.get("by_difficulty", {}))
    _write_breakdown(tr, "tag", agg.get("by_tag", {}))
    if agg.get("by_turn"):
        _write_turns(tr, agg["by_turn"])
    if agg.get("clauses"):
        parts = [f"{name} {value:.4f}" for name, value in agg["clauses"].items()]
        tr.write_line("  exact-match components: " + ", ".join(parts))
    _write_model_usage(tr, records)
    _write_misses(tr, records, verbose=verbose)
    _write_verdicts(tr, summary, exit_status)


def _profile_text(execution: dict) -> str:
    """``bird``, or ``bird (duplicates: bag, float_decimals: 2)`` when the suite overrides some of its options."""
    from ..comparison import options_changed

    changed = options_changed(execution)
    options = ", ".join(f"{name}: {'null' if value is None else value}" for name, value in changed.items())
    return f"{execution['profile']} ({options})" if options else str(execution["profile"])


#: pytest.ExitCode's other statuses (not imported: ``sqleval gate`` writes these lines without pytest)
_PYTEST_EXIT_REASONS = {2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}


def gate_exit_phrase(exit_status: int | None) -> str:
    """Where the run's exit status comes from, once a gate failed: the gate (1) unless pytest already ended the
    run with a status of its own (2 interrupted, 3 internal error, 4 usage error), which it keeps."""
    if exit_status is None or exit_status in (0, 1):
        return "exit status 1 comes from the gate"
    reason = _PYTEST_EXIT_REASONS.get(exit_status, "set by another plugin")
    return f"the run already ends with exit status {exit_status} ({reason}), which it keeps"


def _write_metrics(tr, agg: dict) -> None:
    metrics, grouped = agg["metrics"], agg.get("by_gold_sql", {})
    intervals = agg.get("intervals", {})
    if not any(m.name in metrics for m in active_registry().reported()):
        tr.write_line("  no case was scored: no metrics")  # every case an error of the suite (a broken gold...)
        return
    gold_intervals = grouped.get("intervals") or {}
    header = f"  {'metric':<31} {'value':>8} {'95% interval':>18}   {'per gold SQL':>12}"
    tr.write_line(header + (f" {'95% interval':>18}" if gold_intervals else ""))
    for metric in active_registry().reported():
        key, label = metric.name, metric.label
        if key not in metrics:
            continue
        value = fmt(metrics[key])
        interval = fmt_interval(intervals.get(key))
        per_gold = fmt(grouped.get(key)) if key in grouped else ""
        if gold_intervals:
            per_gold += f" {fmt_interval(gold_intervals[key]) if key in gold_intervals else '':>18}"
        extra = ""
        if key == "error_count" and metrics.get("errors_by_kind"):
            extra = "   (" + ", ".join(f"{k} {n}" for k, n in metrics["errors_by_kind"].items()) + ")"
        tr.write_line(f"  {label:<31} {value:>8} {interval:>18}   {per_gold:>{12 + (19 if gold_intervals else 0)}}{extra}")
    if grouped.get("groups") is not None:
        tr.write_line(f"  (per gold SQL: mean over {grouped['groups']} distinct gold queries, MRO 3.2)")


def _write_breakdown(tr, title: str, breakdown: dict) -> None:
    if not breakdown:
        return
    present = [(k, label) for k, label in breakdown_columns() if any(k in row for row in breakdown.values())]
    # the 95% intervals of the JSON report's rows, as the metrics table shows them: a column each, after the values
    spans = [(k, f"{label} 95% interval") for k, label in present
             if any(k in (row.get("intervals") or {}) for row in breakdown.values())]
    widths = [max(18, len(head)) for _, head in spans]
    labels = {level: printable(str(level)) for level in breakdown}
    label_width = max([13, len(f"by {title}") - 2, *(display_width(label) for label in labels.values())])
    header = f"  {_pad('by ' + title, label_width + 2)} {'cases':>6} " + " ".join(f"{label:>8}" for _, label in present)
    if spans:
        header += "   " + "  ".join(f"{head:>{width}}" for (_, head), width in zip(spans, widths))
    tr.write_line(header)
    for level, row in breakdown.items():
        cells = " ".join(f"{fmt(row.get(k)):>8}" for k, _ in present)
        if spans:
            cells += "   " + "  ".join(f"{fmt_interval((row.get('intervals') or {}).get(k)) or '-':>{width}}"
                                      for (k, _), width in zip(spans, widths))
        tr.write_line(f"    {_pad(labels[level], label_width)} {row['cases']:>6} {cells}")


def _pad(text: str, width: int) -> str:
    """``text`` followed by spaces up to ``width`` terminal cells (a wide character takes two)."""
    return text + " " * max(0, width - display_width(text))


def _write_turns(tr, by_turn: dict) -> None:
    tr.write_line(f"  by turn        {'turns':>6} {'QM':>8} {'EX':>8}   {'QM 95% interval':>18}  {'EX 95% interval':>18}")
    for bucket, row in by_turn.items():
        spans = row.get("intervals") or {}  # a report written before turns had intervals shows "–"
        tr.write_line(f"    turn {bucket:<8} {row['turns']:>6} {fmt(row.get('question_match')):>8} "
                      f"{fmt(row.get('execution_accuracy')):>8}   {fmt_interval(spans.get('question_match')):>18}  "
                      f"{fmt_interval(spans.get('execution_accuracy')) if 'execution_accuracy' in row else '':>18}")


def _write_model_usage(tr, records: list[dict]) -> None:
    from ..model.usage import usage, usage_line

    block = usage(records)
    if block is not None:
        tr.write_line("  " + usage_line(block))


def _write_misses(tr, records: list[dict], *, verbose: bool) -> None:
    misses = [r for r in records if r.get("outcome") in ("missed", "failed")]
    if not misses:
        return
    if verbose:
        tr.write_line("  misses:")
        for record in misses:
            for line in render_miss(record, verbose=True).splitlines():
                tr.write_line("    " + line)
        return
    shown = misses[:MISS_LIST_LIMIT]
    tr.write_line(f"  misses ({len(misses)}; -v or --sqleval-diff shows the SQL and a result diff):")
    for record in shown:
        tr.write_line("    " + render_miss(record, verbose=False))
    if len(misses) > len(shown):
        tr.write_line(f"    ... and {len(misses) - len(shown)} more (all of them are in --sqleval-json)")


def _write_verdicts(tr, summary: SuiteSummary, exit_status: int | None = None) -> None:
    for verdict in summary.verdicts:
        tr.write_line("  " + verdict.line(), green=verdict.passed, red=not verdict.passed, bold=not verdict.passed)
    if summary.failed_verdicts:
        tr.write_line(f"  sqleval gate failed for suite {printable(summary.name)}: {gate_exit_phrase(exit_status)}",
                      red=True, bold=True)


def write_gold_check(tr, records: Sequence[dict]) -> None:
    """``--sqleval-check-gold``: one line per finding, grouped by case."""
    tr.write_sep("=", "sqleval gold check")
    flagged = [r for r in records if r.get("gold_findings")]
    errors = [r for r in records if r.get("outcome") == "error"]
    checked = len(records)
    several = len({r.get("suite") for r in records}) > 1  # two suites may share a case id: name the suite too

    def name(record: dict) -> str:
        return printable(f"{record.get('suite')}::{record['id']}") if several else str(record["id"])

    for record in errors:
        tr.write_line(f"BROKEN {name(record)}: {record['error']['message']}", red=True)
    for record in flagged:
        for finding in record["gold_findings"]:
            broken = finding["severity"] == "broken"
            word = "BROKEN" if broken else "warning"
            tr.write_line(f"{word} {name(record)}: {finding['kind']}: {finding['message']}", red=broken, yellow=not broken)
    broken = len(errors) + sum(1 for r in flagged if r.get("gold_status") == "broken")
    tr.write_line(f"{checked} gold queries checked: {broken} broken, "
                  f"{sum(1 for r in flagged if r.get('gold_status') == 'flagged')} with warnings")


# --------------------------------------------------------------------------- the deploy gate (overall, baseline, gates)
def fmt_interval(interval: Any, decimals: int = 4) -> str:
    if not interval:
        return ""
    return f"[{interval[0]:.{decimals}f}, {interval[1]:.{decimals}f}]"


def overall_metric_parts(overall: dict) -> list[str]:
    """``name value [low, high]`` for each reported metric of a report's ``overall`` block, in the registry's order
    (the terminal's overall line, and the one ``sqleval merge``/``gate`` print)."""
    from ..deploygate import format_interval

    parts = []
    for key in (m.name for m in active_registry().reported()):
        if key in overall["metrics"]:
            span = overall["intervals"].get(key)  # two decimals, more where they would show a point or a 0
            interval = format_interval(span[0], span[1]) if span else ""
            parts.append(f"{key} {fmt(overall['metrics'][key])}" + (f" {interval}" if interval else ""))
    return parts


def write_deploy_gate(tr, report: dict, *, exit_status: int | None = None) -> None:
    """The overall figure, the comparison with the baseline and the verdict of every gate not already shown per suite."""
    overall = report.get("overall")
    if overall and overall.get("suites"):  # no suite ran (nothing collected, all deselected): nothing to average
        parts = overall_metric_parts(overall)
        suites = f"{overall['suites']} suite{'s' if overall['suites'] != 1 else ''}"
        tr.write_line(f"overall ({suites}, {overall['scored']} scored cases, micro-average): "
                      + (", ".join(parts) or "no metrics"))
        if overall["suites"] > 1:  # over every suite, as the official evaluators print them (one suite: its own)
            _write_breakdown(tr, "difficulty", overall.get("by_difficulty") or {})
            if overall.get("by_turn"):
                _write_turns(tr, overall["by_turn"])
    baseline = report.get("baseline")
    if baseline:
        tr.write_line(f"compared with the baseline {baseline['path']}:")
        for warning in baseline.get("warnings", []):
            tr.write_line(f"  warning: {warning}", yellow=True)
        for entry in [*baseline["suites"], {"name": "overall", **baseline["overall"]}]:
            _write_comparison(tr, entry)
    gates = [g for g in report.get("gates", []) if g["kind"] != "threshold" or g["suite"] == "overall"]
    for gate in gates:
        where = "" if gate["suite"] == "overall" else f"suite {printable(str(gate['suite']))}: "
        tr.write_line(f"{where}{gate['message']}", green=gate["passed"], red=not gate["passed"], bold=not gate["passed"])
    failed = [g for g in gates if not g["passed"]]
    if failed and not (report.get("run") or {}).get("shard"):
        tr.write_line(f"sqleval deploy gate failed ({len(failed)} gate(s)): {gate_exit_phrase(exit_status)}",
                      red=True, bold=True)


def _write_comparison(tr, entry: dict) -> None:
    counts = entry["counts"]
    described = ", ".join(f"{counts[k]} {k.replace('_', ' ')}" for k in counts if counts[k])
    if entry.get("pairs_with_errors"):
        errors = f"{len(entry['pairs_with_errors'])} with a suite error on one side (not compared)"
        described = f"{described}, {errors}" if described else errors
    tr.write_line(f"  {printable(str(entry['name']))}: {described or 'no cases'}")
    from ..deploygate import format_p

    # every pair equal: no discordant pair (0/1 metrics), and for means an interval of the differences that is 0 (equal
    # means whose cases moved, 1 -> 0.5 and 0.5 -> 1, are shown with their interval)
    unchanged = [m for m, stats in entry["metrics"].items() if stats["current"] == stats["baseline"]
                 and not any((stats.get("discordant") or {}).values()) and list(stats["ci"]) == [0.0, 0.0]]
    for metric, stats in entry["metrics"].items():
        if metric in unchanged:
            continue
        lo, hi = stats["ci"]
        tr.write_line(f"    {metric:<20} {fmt(stats['baseline'])} -> {fmt(stats['current'])}  "
                      f"delta {stats['delta']:+.4f} (95% CI [{lo:+.4f}, {hi:+.4f}], p={format_p(stats['p_value'])}, "
                      f"{stats['test']}, {stats['n_pairs']} pairs)")
    by_pairs: dict[int, list[str]] = {}  # interaction_match pairs interactions, question_match turns: counts differ
    for metric in unchanged:
        by_pairs.setdefault(entry["metrics"][metric]["n_pairs"], []).append(metric)
    if by_pairs:
        tr.write_line("    unchanged " + "; ".join(f"over {n} pairs: {', '.join(names)}" for n, names in by_pairs.items()))
    if entry["name"] != "overall" and entry["pairs"]["regressed"]:
        shown = entry["pairs"]["regressed"][:MISS_LIST_LIMIT]
        more = len(entry["pairs"]["regressed"]) - len(shown)
        tr.write_line("    regressed: " + ", ".join(shown) + (f" (and {more} more)" if more else ""), yellow=True)
