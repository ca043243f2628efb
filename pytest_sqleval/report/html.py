"""One self-contained HTML file from a ``sqleval-report/1`` dict.

Nothing is loaded from the network: the page inlines its CSS, the data (as a
JSON script element) and Chart.js (MIT, vendored from npm's ``chart.js``
package in ``report/static/``). It shows the gates, the overall and per-suite
metrics with their intervals and baseline deltas, charts of the metrics by
difficulty, tag and turn, current against baseline, the error kinds and miss
reasons, and a table with one row per case, filterable by suite, outcome,
reason, difficulty, tag and "regressed", each row opening onto the question,
both SQL texts and the result diff.

The templates are Jinja2 (``report/templates/report.html.j2``), autoescaped.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from . import view
from .diff import _UNPRINTABLE

CHART_JS = "chart.umd.min.js"
#: Result rows shown per side in a case's diff.
DIFF_ROWS = 10
#: Characters that act on the page instead of showing (bidirectional overrides and isolates reorder the text around
#: them; control characters): shown as escapes (``\u202e``, ``\x1b``), as in the terminal and Markdown; line breaks
#: and tabs stay (an SQL text keeps its lines).
_HIDDEN = {c: escape for c, escape in _UNPRINTABLE.items() if chr(c) not in "\t\n\r"}


def render_html(report: dict[str, Any]) -> str:
    with view.indexed(report):  # lookups by suite name in linear time, as for the Markdown
        return _render_html(report)


def _render_html(report: dict[str, Any]) -> str:
    template = _environment().get_template("report.html.j2")
    data = chart_data(report)
    return template.render(
        report=report,
        title=_title(report),
        verdict=view.verdict_line(report),
        no_cases=view.no_cases_note(report),
        commit=view.commit_label(report),
        chart_suite=_chart_suite(report),
        failed=view.run_failed(report),
        gates=view.gates(report),
        baseline=view.baseline(report),
        warnings=_warnings(report),
        overall=_overall(report),
        suites=[_suite(report, s) for s in report.get("suites", [])],
        cases=_cases(report),
        filters=_filters(report),
        outcomes=view.overall_outcomes(report),
        data_json=_script_json(data),
        chart_js=_static(CHART_JS).replace("</script", "<\\/script"),
        fmt=view.fmt,
        fmt_delta=view.fmt_delta,
        fmt_interval=view.fmt_interval,
        fmt_p=view.fmt_p,
    )


def write_html(path: str | os.PathLike, report: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(report), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- resources
@lru_cache(maxsize=1)
def _environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("pytest_sqleval.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        finalize=visible,
    )


def visible(value: Any) -> Any:
    """What the page shows of a value: text with the characters of :data:`_HIDDEN` as escapes, markup as it is."""
    from markupsafe import Markup

    if isinstance(value, str) and not isinstance(value, Markup):
        return value.translate(_HIDDEN)
    if isinstance(value, dict):
        return {visible(k): visible(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [visible(v) for v in value]
    return value


@lru_cache(maxsize=4)
def _static(name: str) -> str:
    return resources.files("pytest_sqleval.report").joinpath("static", name).read_text(encoding="utf-8")


def _script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element (no "</script>", no HTML comment openers)."""
    text = json.dumps(visible(data), ensure_ascii=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _chart_suite(report: dict[str, Any]) -> int:
    """The suite the charts open on: the one with the most regressed cases, else the first failed, else the largest."""
    suites = report.get("suites", [])
    if not suites:
        return 0
    regressed = [len(view.pairs(report, s.get("name", "")).get("regressed") or []) for s in suites]
    if max(regressed) > 0:
        return regressed.index(max(regressed))
    failed = [i for i, s in enumerate(suites) if not view.suite_passed(report, s) and s.get("metrics")]
    if failed:  # a suite with no scored case (every case errored) has nothing to chart
        return failed[0]
    sizes = [s.get("cases", 0) for s in suites]
    return sizes.index(max(sizes))


def _warnings(report: dict[str, Any]) -> list[str]:
    """What the terminal, `sqleval gate` and the Markdown warn about: `sqleval merge`'s warnings (a missing shard,
    shards of different commits), then the baseline comparison's (a shard's report as the baseline, changed files)."""
    merged = (report.get("run") or {}).get("merge_warnings") or []
    compared = (view.baseline(report) or {}).get("warnings") or []
    return [str(w) for group in (merged, compared) for w in ([group] if isinstance(group, str) else group)]


def _title(report: dict[str, Any]) -> str:
    names = [s.get("name", "?") for s in report.get("suites", [])]
    return "sqleval: " + (", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "") if names else "no suites")


# --------------------------------------------------------------------------- tables
def _metric_rows(metrics: dict[str, Any], intervals: dict[str, Any], by_gold: dict[str, Any] | None,
                 base: dict[str, Any] | None) -> list[dict[str, Any]]:
    rows = []
    for key in view.metric_keys(metrics):
        comparison = view.baseline_metric(base, key) or {}
        rows.append({
            "key": key,
            "label": view.label(key),
            "value": metrics[key],
            "interval": intervals.get(key),
            "by_gold": (by_gold or {}).get(key),
            "baseline": comparison.get("baseline"),
            "baseline_text": view.baseline_text(comparison, metrics[key]) if comparison else None,
            "delta": comparison.get("delta"),
            "delta_ci": comparison.get("ci"),
            "p_value": comparison.get("p_value"),
            "test": comparison.get("test"),
        })
    return rows


def _overall(report: dict[str, Any]) -> dict[str, Any] | None:
    overall = report.get("overall")
    if not isinstance(overall, dict) or not overall.get("metrics") or len(report.get("suites", [])) < 2:
        return None  # one suite: its own table says it all
    base = view.baseline(report)
    return {
        "cases": overall.get("cases"),
        "rows": _metric_rows(overall.get("metrics") or {}, overall.get("intervals") or {}, None,
                             (base or {}).get("overall")),
        "has_intervals": bool(overall.get("intervals")),
    }


def _suite(report: dict[str, Any], suite: dict[str, Any]) -> dict[str, Any]:
    name = suite.get("name", "?")
    pairs = view.pairs(report, name)
    return {
        "name": name,
        "path": suite.get("path", ""),
        "cases": suite.get("cases", 0),
        "passed": view.suite_passed(report, suite),
        "outcomes": {k: v for k, v in (suite.get("outcomes") or {}).items() if v},
        "rows": _metric_rows(suite.get("metrics") or {}, suite.get("intervals") or {}, suite.get("by_gold_sql") or {},
                             view.baseline_suite(report, name)),
        "has_intervals": bool(suite.get("intervals")),
        "errors_by_kind": (suite.get("metrics") or {}).get("errors_by_kind") or {},
        "model_usage": view.model_usage(suite),
        "pairs": {k: len(pairs.get(k) or []) for k in ("regressed", "fixed", "still_missed", "still_passed", "new", "removed")}
        if pairs else None,
    }


def _cases(report: dict[str, Any]) -> list[dict[str, Any]]:
    regressed = view.regressed_ids(report)
    in_baseline = view.baseline_passed(report)
    error_paired = view.error_paired_ids(report)
    has_baseline = view.baseline(report) is not None
    rows = []
    for case in report.get("cases", []):
        key = (case.get("suite"), case.get("id"))
        miss = case.get("outcome") in view.MISS_OUTCOMES or case.get("outcome") == "error"
        if not has_baseline:
            base = None
        elif key in in_baseline:
            base = "passed" if in_baseline[key] else "missed"
        elif key in error_paired:  # in the baseline too: an error there, or one now (then not compared)
            base = "error" if case.get("outcome") != "error" else "not compared"
        else:
            base = "new"
        mismatch = case.get("mismatch") if isinstance(case.get("mismatch"), dict) else None
        tags = [visible(str(t)) for t in case.get("tags") or []]  # joined into markup, which `visible` keeps
        rows.append({
            "case": case,
            "tags": tags,
            # the tag filter's data: a JSON list, so a tag may hold any text ("a|b", commas, quotes) and still match
            "tags_json": json.dumps(tags, ensure_ascii=False),
            "reason": view.reason_key(case) if miss else "",
            "reason_text": view.reason_text(case) if miss else "",
            "regressed": key in regressed,
            "baseline": base,
            "gold_table": _table(mismatch, "gold") if mismatch else None,
            "predicted_table": _table(mismatch, "predicted") if mismatch else None,
            "gold_only": _only_rows(mismatch, "gold"),
            "predicted_only": _only_rows(mismatch, "predicted"),
            "wrong_clauses": [k for k, ok in (case.get("clauses") or {}).items() if not ok],
        })
    return rows


def _table(mismatch: dict[str, Any], side: str) -> dict[str, Any]:
    shape = mismatch.get(f"{side}_shape") or [0, 0]
    return {
        "columns": [str(c) for c in mismatch.get(f"{side}_columns") or []],
        "rows": [_cells(r) for r in (mismatch.get(f"{side}_head") or [])[:DIFF_ROWS]],
        "shape": shape,
    }


def _only_rows(mismatch: dict[str, Any] | None, side: str) -> list[list[str]]:
    """The rows only on one ``side``; typed (``Decimal('0.1')`` beside ``0.1``) when the report recorded them so,
    because their JSON values print alike."""
    typed = (mismatch or {}).get(f"{side}_only_typed")
    rows = typed if isinstance(typed, list) else (mismatch or {}).get(f"{side}_only_rows") or []
    return [_cells(r) for r in rows][:DIFF_ROWS]


def _cells(row: Any) -> list[str]:
    return ["NULL" if v is None else visible(str(v)) for v in (row if isinstance(row, (list, tuple)) else [row])]


def _filters(report: dict[str, Any]) -> dict[str, list[str]]:
    cases = report.get("cases", [])
    order = {"easy": 0, "medium": 1, "hard": 2, "extra": 3}
    return {
        "suite": [s.get("name", "?") for s in report.get("suites", [])],
        "outcome": sorted({str(c.get("outcome")) for c in cases}),
        "reason": sorted({view.reason_key(c) for c in cases
                          if c.get("outcome") in view.MISS_OUTCOMES or c.get("outcome") == "error"}),
        "difficulty": sorted({str(c.get("difficulty")) for c in cases if c.get("difficulty")},
                             key=lambda d: (order.get(d, 9), d)),
        "tag": sorted({str(t) for c in cases for t in c.get("tags") or []}),
    }


# --------------------------------------------------------------------------- charts
def chart_data(report: dict[str, Any]) -> dict[str, Any]:
    """The numbers each chart draws, per suite (all taken from the report, nothing recomputed but baseline shares)."""
    in_baseline = view.baseline_passed(report)
    has_baseline = view.baseline(report) is not None
    suites = []
    for suite in report.get("suites", []):
        name = suite.get("name", "?")
        cases = view.cases_of(report, name)
        metrics = suite.get("metrics") or {}
        intervals = suite.get("intervals") or {}
        base = view.baseline_suite(report, name)
        charted = [k for k in view.metric_keys(metrics) if view.kind(k) in ("rate", "mean")]
        shares = [k for k in charted if _on_rate_axis(k, metrics[k], intervals.get(k), view.baseline_metric(base, k))]
        entry: dict[str, Any] = {
            "name": name,
            "metrics": {
                "labels": [view.label(k) for k in shares],
                "current": [metrics[k] for k in shares],
                "intervals": [intervals.get(k) for k in shares],
                "baseline": [(view.baseline_metric(base, k) or {}).get("baseline") for k in shares] if has_baseline else None,
                # this run over the paired cases: the baseline's bar is over those, not over every case of this run
                "paired": [(view.baseline_metric(base, k) or {}).get("current") for k in shares] if has_baseline else None,
                "p_values": [(view.baseline_metric(base, k) or {}).get("p_value") for k in shares] if has_baseline else None,
                # means off the rates' 0-1 axis (a latency of 250 would flatten every bar): shown as text instead
                "apart": [{"label": view.label(k), "current": metrics[k], "interval": intervals.get(k),
                           "baseline": (view.baseline_metric(base, k) or {}).get("baseline") if has_baseline else None}
                          for k in charted if k not in shares],
            },
            "by_difficulty": _breakdown(suite.get("by_difficulty") or {}, cases, "difficulty", in_baseline, has_baseline),
            "by_tag": _breakdown(suite.get("by_tag") or {}, cases, "tag", in_baseline, has_baseline),
            "by_turn": _turns(suite.get("by_turn") or {}, cases, in_baseline, has_baseline),
            "errors": dict(metrics.get("errors_by_kind") or {}),
            "reasons": {reason: len(group) for reason, group in view.misses_by_reason(cases).items()},
        }
        suites.append(entry)
    return {"suites": suites, "baseline": has_baseline}


#: The metrics chart's axis runs from 0 to about 1 (the rates): a mean bounded by a little more (``r_ves``, at most
#: sqrt(1.25)) fits on it; one that can go higher (a user's latency, a length) is shown beside it as text.
RATE_AXIS_MAXIMUM = 1.25


def _on_rate_axis(metric: str, value: Any, interval: Any, comparison: dict[str, Any] | None) -> bool:
    """Whether a rate or mean belongs on the metrics chart's 0-1 axis: a rate does, and a mean bounded by
    :data:`RATE_AXIS_MAXIMUM`; an unbounded mean when its value, interval and baseline all lie within [0, it]."""
    if view.kind(metric) == "rate":
        return True
    bound = view.maximum(metric)
    if bound is not None:
        return bound <= RATE_AXIS_MAXIMUM
    numbers = [value, *(interval if isinstance(interval, (list, tuple)) else []),
               (comparison or {}).get("baseline")]
    return all(v is None or (isinstance(v, (int, float)) and 0 <= v <= RATE_AXIS_MAXIMUM) for v in numbers)


def _breakdown(breakdown: dict[str, Any], cases: list[dict[str, Any]], by: str,
               in_baseline: dict[tuple[str, str], bool], has_baseline: bool) -> dict[str, Any] | None:
    if not breakdown:
        return None
    levels = list(breakdown)
    series = {}
    for key, head in (("execution_accuracy", "EX"), ("soft_f1", "soft F1"), ("exact_match", "EM")):
        if any(key in row for row in breakdown.values()):
            series[head] = [breakdown[level].get(key) for level in levels]
    entry: dict[str, Any] = {"labels": levels, "series": series, "counts": [breakdown[level].get("cases") for level in levels]}
    if has_baseline:
        entry["paired_pass_rate"] = _paired_pass_rate(levels, cases, by, in_baseline)
    return entry


def _paired_pass_rate(levels: list[str], cases: list[dict[str, Any]], by: str,
                      in_baseline: dict[tuple[str, str], bool]) -> dict[str, list[float | None]]:
    """The pass rate now and in the baseline per group, over the cases present in both runs."""
    now, then = [], []
    for level in levels:
        paired = [c for c in cases if _in_group(c, by, level) and (c.get("suite"), c.get("id")) in in_baseline]
        now.append(_share([c.get("outcome") == "passed" for c in paired]))
        then.append(_share([in_baseline[(c.get("suite"), c.get("id"))] for c in paired]))
    return {"current": now, "baseline": then}


def _in_group(case: dict[str, Any], by: str, level: str) -> bool:
    if by == "difficulty":
        return str(case.get("difficulty")) == level
    if by == "turn":
        turn = case.get("turn")
        return isinstance(turn, int) and (str(turn) if turn <= 4 else ">4") == level
    return level in [str(t) for t in case.get("tags") or []]


def _share(flags: list[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def _turns(by_turn: dict[str, Any], cases: list[dict[str, Any]], in_baseline: dict[tuple[str, str], bool],
           has_baseline: bool) -> dict[str, Any] | None:
    if not by_turn:
        return None
    levels = list(by_turn)
    series = {}
    for key, head in (("question_match", "question match"), ("execution_accuracy", "EX")):
        if any(key in row for row in by_turn.values()):
            series[head] = [by_turn[level].get(key) for level in levels]
    entry: dict[str, Any] = {"labels": [f"turn {level}" for level in levels], "series": series,
                             "counts": [by_turn[level].get("turns") for level in levels]}
    if has_baseline:
        entry["paired_pass_rate"] = _paired_pass_rate(levels, cases, "turn", in_baseline)
    return entry
