"""GitHub-flavoured Markdown from a ``sqleval-report/1`` dict: a step summary or a PR comment.

``render_markdown(report)`` returns the text; ``write_markdown(path, report)``
writes it, appending when ``path`` is the file named by ``$GITHUB_STEP_SUMMARY``
(GitHub Actions collects a step's summary from that file; other writers in the
same step must not be overwritten) and overwriting otherwise.

Layout: a headline with the gate verdict; the overall metrics (micro-averaged
across suites, when the report has them); every gate verdict; then per suite:
its metrics with 95% intervals and the baseline's delta, interval and p-value,
the breakdowns by difficulty, tag and turn, the regressed cases and the misses
grouped by reason. Long lists sit in ``<details>`` blocks so a PR comment stays
short; every list is capped so the text stays under GitHub's comment limit.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path
from typing import Any

from . import view
from .diff import printable

#: Cases listed per miss reason (and regressed cases per suite) before "... and N more".
LIST_LIMIT = 30
#: GitHub refuses PR comments over 65536 characters: the lists shrink until the text fits.
MAX_CHARS = 65000
SQL_LIMIT = 300


#: Inline Markdown a cell shows as text (a backslash escapes it): links and images, emphasis, code, strikethrough.
_INLINE_SYNTAX = re.compile(r"[\\`*\[\]~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def cell(value: Any) -> str:
    """Text safe inside a GitHub table cell: HTML-escaped, Markdown syntax and pipes escaped, one line, control
    and bidirectional-override characters shown as escapes."""
    text = html.escape(printable(" ".join(str(value).split())), quote=False)
    return _INLINE_SYNTAX.sub(lambda m: "\\" + m.group(0), text).replace("|", "\\|")


def code(value: Any, limit: int = SQL_LIMIT) -> str:
    """Inline code that survives backticks, pipes and angle brackets (an HTML <code> element). GitHub parses
    Markdown inside raw HTML elements, so its inline syntax (a backtick would open a code span that swallows the
    closing tag; emphasis, links) is written as character references, which always read as the characters."""
    text = printable(" ".join(str(value).split()))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = _INLINE_SYNTAX.sub(lambda m: f"&#{ord(m.group(0))};", html.escape(text, quote=False))
    return "<code>" + text.replace("|", "&#124;") + "</code>"


def render_markdown(report: dict[str, Any], *, max_chars: int = MAX_CHARS) -> str:
    """The Markdown text; lists are shortened (30, 10, 3, then no ids per group) until it fits ``max_chars``."""
    with view.indexed(report):  # lookups by suite name in linear time (3,000 suites took 44 s)
        return _render_markdown(report, max_chars)


def _render_markdown(report: dict[str, Any], max_chars: int) -> str:
    suites = report.get("suites", [])
    for list_limit in (LIST_LIMIT, 10, 3, 0):
        lines: list[str] = []
        _headline(lines, report)
        _warnings(lines, report)
        _overall(lines, report)
        _gates(lines, report)
        size = sum(len(line) + 1 for line in lines)  # of the lines so far, joined, plus one
        for index, suite in enumerate(suites):
            start = len(lines)
            _suite(lines, report, suite, list_limit)
            size += sum(len(line) + 1 for line in lines[start:])
            if size - 1 > max_chars and index + 1 < len(suites):
                break  # too long already (the next suite's heading keeps all of it): the rest would only add
        else:
            text = "\n".join(lines).rstrip() + "\n"
            if len(text) <= max_chars:
                return text
    # Still too long without any list (many suites: `sqleval import spider` writes one per database): one row per
    # suite, only the failed gates, and cut at a line if even that is too long.
    lines = []
    _headline(lines, report)
    _warnings(lines, report)
    _overall(lines, report)
    _gates(lines, report, failed_only=True)
    _suite_rows(lines, report)
    return _cut(lines, max_chars)


def write_markdown(path: str | os.PathLike, report: dict[str, Any]) -> Path:
    path = Path(path)
    text = render_markdown(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    if is_step_summary(path):
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text if path.stat().st_size == 0 else "\n" + text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def is_step_summary(path: str | os.PathLike) -> bool:
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return False
    try:
        return Path(path).resolve() == Path(summary).resolve()
    except OSError:  # pragma: no cover - unresolvable paths are simply not the summary
        return False


# --------------------------------------------------------------------------- sections
def _headline(lines: list[str], report: dict[str, Any]) -> None:
    # a shard's failed gates do not fail its job (⚠️): `sqleval gate` on the merged report decides
    mark = "❌" if view.run_failed(report) else "⚠️" if view.failed_gates(report) else "✅"
    lines.append(f"## {mark} sqleval: {view.verdict_line(report)}")
    lines.append("")
    outcomes = view.overall_outcomes(report)
    total = sum(s.get("cases", 0) for s in report.get("suites", []))
    parts = view.outcome_text(outcomes)
    suites = report.get("suites", [])
    line = f"**{total} case{'s' if total != 1 else ''}** in {len(suites)} suite{'s' if len(suites) != 1 else ''}"
    empty = view.no_cases_note(report)
    if empty is not None:
        line = f"**{empty}**"
    if parts:
        line += f": {parts}"
    commit = view.commit_label(report)
    if commit:
        line += f" · commit {code(commit)}"
    base = view.baseline(report)
    if base is not None:
        line += f" · compared with baseline {code(base.get('path', '?'))}"
        regressed = sum(len((s.get("pairs") or {}).get("regressed", []) or []) for s in base.get("suites", []) or [])
        fixed = sum(len((s.get("pairs") or {}).get("fixed", []) or []) for s in base.get("suites", []) or [])
        line += f" ({regressed} regressed, {fixed} fixed)"
    lines.append(line)
    lines.append("")


def _overall(lines: list[str], report: dict[str, Any]) -> None:
    overall = report.get("overall")
    if not isinstance(overall, dict) or not overall.get("metrics") or len(report.get("suites", [])) < 2:
        return  # one suite: its own table says it all
    lines.append(f"### Overall ({overall.get('cases', '?')} cases, micro-averaged across suites)")
    lines.append("")
    base = view.baseline(report)
    _metrics_table(lines, overall.get("metrics") or {}, overall.get("intervals") or {}, None,
                   (base or {}).get("overall") if base is not None else None, baseline_present=base is not None)
    _breakdowns(lines, overall)  # by difficulty (and turn) over every suite: the official evaluators' tables


def _gates(lines: list[str], report: dict[str, Any], *, failed_only: bool = False) -> None:
    found = view.gates(report)
    if not found:
        return
    lines.append(f"### Gates ({view.verdict_line(report)})")
    lines.append("")
    if failed_only:
        passed = sum(1 for gate in found if gate.get("passed"))
        found = [gate for gate in found if not gate.get("passed")]
        if passed:
            lines.append(f"{passed} passed gate{'s' if passed != 1 else ''} not shown (all are in the JSON report).")
            lines.append("")
        if not found:
            return
    lines.append("| | gate | value | limit | verdict |")
    lines.append("|---|---|---:|---:|---|")
    for gate in found:
        mark = "✅" if gate.get("passed") else "❌"
        lines.append(f"| {mark} | {cell(gate.get('name', ''))} | {cell(view.fmt(gate.get('value')))} | "
                     f"{cell(view.fmt(gate.get('limit')))} | {cell(gate.get('message', ''))} |")
    lines.append("")


def _suite(lines: list[str], report: dict[str, Any], suite: dict[str, Any], list_limit: int) -> None:
    name = suite.get("name", "?")
    mark = "✅" if view.suite_passed(report, suite) else "❌"
    lines.append(f"### {mark} Suite {code(name)}")
    lines.append("")
    outcomes = view.outcome_text(suite.get("outcomes") or {})
    n = suite.get("cases", 0)
    lines.append(f"{code(suite.get('path', ''))}: {n} case{'s' if n != 1 else ''} ({outcomes})")
    lines.append("")
    base = view.baseline_suite(report, name)
    _metrics_table(lines, suite.get("metrics") or {}, suite.get("intervals") or {}, suite.get("by_gold_sql") or {},
                   base, baseline_present=view.baseline(report) is not None)
    errors = (suite.get("metrics") or {}).get("errors_by_kind") or {}
    if errors:
        lines.append("Errors by kind: " + ", ".join(f"{cell(k)} {n}" for k, n in errors.items()))
        lines.append("")
    usage = view.model_usage(suite)
    if usage is not None:
        lines.append("Model usage: " + cell(usage))
        lines.append("")
    _breakdowns(lines, suite)
    cases = view.cases_of(report, name)
    _regressed(lines, report, name, cases, list_limit)
    _misses(lines, cases, list_limit)
    _errors(lines, cases, list_limit)


def _suite_rows(lines: list[str], report: dict[str, Any]) -> None:
    """One table row per suite (the summary when a section per suite would not fit): its cases and outcomes, its
    execution accuracy and soft F1 and, against a baseline, the regressed cases and the change in execution accuracy."""
    suites = report.get("suites", [])
    if not suites:
        return
    metrics = [key for key in ("execution_accuracy", "soft_f1")
               if any(key in (s.get("metrics") or {}) for s in suites)]
    compared = view.baseline(report) is not None
    lines.append(f"### Suites ({len(suites)}; one line each to fit GitHub's size limit: "
                 "the JSON and HTML reports have every suite's details)")
    lines.append("")
    header = ["", "suite", "cases", "outcomes", *(view.label(key) for key in metrics)]
    if compared:
        header += ["regressed", f"Δ {view.label('execution_accuracy')}"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join(["---", "---", "---:", "---", *("---:" for _ in header[4:])]) + "|")
    regressed: list[str] = []
    for suite in suites:
        name = suite.get("name", "?")
        outcomes = view.outcome_text(suite.get("outcomes") or {})
        row = ["✅" if view.suite_passed(report, suite) else "❌", code(name), str(suite.get("cases", 0)),
               cell(outcomes), *(view.fmt((suite.get("metrics") or {}).get(key)) for key in metrics)]
        if compared:
            base = view.baseline_suite(report, name)
            comparison = view.baseline_metric(base, "execution_accuracy")
            ids = view.pairs(report, name).get("regressed") or []
            regressed += [f"{name}::{case_id}" for case_id in ids]
            row += [str(len(ids)) if base is not None else "–",
                    view.fmt_delta(comparison.get("delta")) if comparison else "–"]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    if regressed:
        shown = ", ".join(code(c) for c in regressed[:LIST_LIMIT])
        more = f" and {len(regressed) - LIST_LIMIT} more" if len(regressed) > LIST_LIMIT else ""
        lines.append(f"**Regressed cases ({len(regressed)})**: {shown}{more}")
        lines.append("")


def _cut(lines: list[str], max_chars: int) -> str:
    """The lines that fit in ``max_chars`` with a closing note (whole lines: a table simply ends early)."""
    note = "\n_… cut here to stay under GitHub's size limit: the JSON and HTML reports have all of it._\n"
    text = "\n".join(lines).rstrip() + "\n"
    if len(text) <= max_chars:
        return text
    kept: list[str] = []
    size = len(note)
    for line in lines:
        if size + len(line) + 1 > max_chars:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept).rstrip() + "\n" + note


def _errors(lines: list[str], cases: list[dict[str, Any]], list_limit: int) -> None:
    """The cases that are errors of the suite (a broken gold, a database that cannot be opened): which, and why."""
    errored = [c for c in cases if c.get("outcome") == "error"]
    if not errored:
        return
    lines.append(f"<details><summary><b>Errors of the suite ({len(errored)})</b>: not scored, they fail the run"
                 "</summary>")
    lines.append("")
    lines.extend(_case_items(errored, lambda case: (case.get("error") or {}).get("message", ""), list_limit))
    lines.append("")
    lines.append("</details>")
    lines.append("")


def _metrics_table(lines: list[str], metrics: dict[str, Any], intervals: dict[str, Any], by_gold: dict[str, Any] | None,
                   base: dict[str, Any] | None, *, baseline_present: bool) -> None:
    keys = view.metric_keys(metrics)
    if not keys:
        return
    header = ["metric", "value"]
    align = ["---", "---:"]
    if intervals:
        header.append("95% CI")
        align.append("---")
    if by_gold is not None:
        header.append("per gold SQL")
        align.append("---:")
    if baseline_present:
        header += ["baseline", "Δ", "Δ 95% CI", "p"]
        align += ["---:", "---:", "---", "---:"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join(align) + "|")
    for key in keys:
        row = [cell(view.label(key)), view.fmt(metrics[key])]
        if intervals:
            row.append(view.fmt_interval(intervals.get(key)))
        if by_gold is not None:
            row.append(view.fmt(by_gold.get(key)))
        if baseline_present:
            comparison = view.baseline_metric(base, key)
            if comparison is None:
                row += ["–", "–", "–", "–"]
            else:
                delta = comparison.get("delta")
                arrow = "" if not delta else (" ▲" if delta > 0 else " ▼")
                row += [cell(view.baseline_text(comparison, metrics[key])), view.fmt_delta(delta) + arrow,
                        view.fmt_interval(comparison.get("ci")), view.fmt_p(comparison.get("p_value"))]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")


def _breakdowns(lines: list[str], suite: dict[str, Any]) -> None:
    columns = (("question_match", "QM"), *view.breakdown_columns())
    for title, key, count_key in (("difficulty", "by_difficulty", "cases"), ("tag", "by_tag", "cases"),
                                  ("turn", "by_turn", "turns")):
        breakdown = suite.get(key) or {}
        if not breakdown:
            continue
        present = [(k, head) for k, head in columns if any(k in row for row in breakdown.values())]
        # the rows' 95% intervals (the JSON report's), a column each after the values, as the metrics table shows them
        spans = [(k, f"{head} 95% CI") for k, head in present
                 if any(k in _intervals(row) for row in breakdown.values())]
        lines.append(f"<details><summary>By {title} ({len(breakdown)})</summary>")
        lines.append("")
        # a user's breakdown_label is one line of text, not a cell: `x|y` would split the header in two columns
        lines.append(f"| {title} | {count_key} | " + " | ".join(cell(head) for _, head in [*present, *spans]) + " |")
        lines.append("|---|---:|" + "|".join(["---:" for _ in present] + ["---" for _ in spans]) + "|")
        for level, row in breakdown.items():
            cells = " | ".join([*(view.fmt(row.get(k)) for k, _ in present),
                                *(view.fmt_interval(_intervals(row).get(k)) for k, _ in spans)])
            lines.append(f"| {cell(level)} | {row.get(count_key, '')} | {cells} |")
        lines.append("")
        lines.append("</details>")
        lines.append("")


def _intervals(row: Any) -> dict[str, Any]:
    """A breakdown row's intervals (an older or hand-written report may have none)."""
    found = row.get("intervals") if isinstance(row, dict) else None
    return found if isinstance(found, dict) else {}


def _regressed(lines: list[str], report: dict[str, Any], name: str, cases: list[dict[str, Any]],
               list_limit: int) -> None:
    if view.baseline(report) is None:
        return
    if view.baseline_suite(report, name) is None:
        lines.append("Not in the baseline: every case is new.")
        lines.append("")
        return
    pairs = view.pairs(report, name)
    regressed = list(pairs.get("regressed", []) or [])
    summary = ", ".join(f"{len(pairs.get(k) or [])} {k.replace('_', ' ')}"
                        for k in ("regressed", "fixed", "still_missed", "still_passed", "new", "removed"))
    errored = (view.baseline_suite(report, name) or {}).get("pairs_with_errors") or []
    if errored:  # as the terminal says: these cases are in neither count
        shown = ", ".join(map(code, errored[:list_limit]))
        summary += f", {len(errored)} with a suite error on one side (not compared: {shown})"
    lines.append(f"Against the baseline: {summary}.")
    lines.append("")
    if not regressed:
        return
    by_id = {c.get("id"): c for c in cases}
    lines.append(f"<details open><summary><b>Regressed cases ({len(regressed)})</b>: passed in the baseline, missed now</summary>")
    lines.append("")
    for case_id in regressed[:list_limit]:
        case = by_id.get(case_id)
        reason = f": {cell(view.reason_text(case))}" if case else ""
        lines.append(f"- {code(case_id)}{reason}")
    if len(regressed) > list_limit:
        lines.append(f"- … and {len(regressed) - list_limit} more (all of them are in the JSON report)")
    lines.append("")
    lines.append("</details>")
    lines.append("")
    fixed = list(pairs.get("fixed", []) or [])
    if fixed:
        shown = ", ".join(code(c) for c in fixed[:list_limit])
        hidden = len(fixed) - list_limit
        more = "" if hidden <= 0 else f" and {hidden} more" if shown else f"{hidden} cases (all of them are in the JSON report)"
        lines.append(f"<details><summary>Fixed cases ({len(fixed)})</summary>")
        lines.append("")
        lines.append(shown + more)
        lines.append("")
        lines.append("</details>")
        lines.append("")


def _misses(lines: list[str], cases: list[dict[str, Any]], list_limit: int) -> None:
    groups = view.misses_by_reason(cases)
    if not groups:
        return
    total = sum(len(g) for g in groups.values())
    overview = ", ".join(f"{cell(reason)} {len(group)}" for reason, group in groups.items())
    lines.append(f"<details><summary><b>Misses by reason ({total})</b>: {overview}</summary>")
    lines.append("")
    for reason, group in groups.items():
        lines.append(f"**{cell(reason)}** ({len(group)})")
        lines.append("")
        lines.extend(_case_items(group, view.reason_text, list_limit))
        lines.append("")
    lines.append("</details>")
    lines.append("")


def _warnings(lines: list[str], report: dict[str, Any]) -> None:
    base = view.baseline(report)
    merged = (report.get("run") or {}).get("merge_warnings") or []  # `sqleval merge`'s: a missing shard, say
    warnings = [*merged, *((base or {}).get("warnings") or [])]
    if not warnings:
        return
    for warning in warnings:
        lines.append(f"> ⚠️ {cell(warning)}")
        lines.append(">")
    lines.pop()
    lines.append("")


def _case_items(cases: list, text, list_limit: int) -> list[str]:
    """One bullet per case (its id, then ``text(case)``), at most ``list_limit``, then how many more there are."""
    items = [f"- {code(case.get('id'))}: {cell(text(case))}" for case in cases[:list_limit]]
    if len(cases) > list_limit:
        items.append(f"- … and {len(cases) - list_limit} more (all of them are in the JSON report)")
    return items
