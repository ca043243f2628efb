"""``sqleval report REPORT.json --markdown OUT.md --html OUT.html``: render a saved JSON report.

Writes the same files ``--sqleval-markdown`` and ``--sqleval-html`` write
during a run (the renderers only read the ``sqleval-report/1`` dict), e.g. after
``sqleval merge`` has combined the shards of a CI matrix. ``register(subparsers)``
adds the subcommand to the ``sqleval`` console command; ``main(argv)`` runs it
on its own (``python -m pytest_sqleval.cli_report report ...``).

Exit status: 0 when the files were written, 2 for bad input (a missing or
unreadable report, not JSON, not ``sqleval-report/1``, no output asked for).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

SCHEMA = "sqleval-report/1"


class ReportInputError(Exception):
    pass


def register(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "report", help="render a sqleval-report/1 JSON as Markdown and/or HTML",
        description="Render a saved sqleval-report/1 JSON (from --sqleval-json or `sqleval merge`) as the "
                    "Markdown summary and/or the self-contained HTML report.")
    parser.add_argument("report", metavar="REPORT.json", help="a sqleval-report/1 JSON file")
    parser.add_argument("--markdown", metavar="PATH",
                        help="write the Markdown summary (appended when PATH is $GITHUB_STEP_SUMMARY)")
    parser.add_argument("--html", metavar="PATH", help="write the self-contained HTML report")
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    if not args.markdown and not args.html:
        print("sqleval report: nothing to write; give --markdown PATH and/or --html PATH", file=sys.stderr)
        return 2
    try:
        report = load_report(args.report)
    except ReportInputError as exc:
        print(f"sqleval report: {exc}", file=sys.stderr)
        return 2
    from .registry import adopt_definitions

    # a user's metrics (recorded by name): shown with their label, in their place, as the run showed them
    adopt_definitions(report.get("metric_definitions") or {})
    try:
        if args.markdown:
            from .report.markdown import is_step_summary, write_markdown

            appended = is_step_summary(args.markdown)
            path = write_markdown(args.markdown, report)
            print(f"Markdown {'appended to the step summary' if appended else 'written to'} {path}")
        if args.html:
            from .report.html import write_html

            print(f"HTML report written to {write_html(args.html, report)}")
    except OSError as exc:
        print(f"sqleval report: cannot write {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


def load_report(path: str | Path) -> dict[str, Any]:
    from .baseline import ReportBytesError, report_text

    path = Path(path)
    try:  # UTF-8 with or without a byte-order mark, UTF-16 with one, or gzipped, as the baseline reader takes them
        text = report_text(path.read_bytes())
    except FileNotFoundError:
        raise ReportInputError(f"{path}: no such file (write one with pytest --sqleval-json {path})") from None
    except OSError as exc:
        raise ReportInputError(f"{path}: cannot read it: {exc.strerror or exc}\n  fix: pass the report file itself (the "
                               "JSON written by pytest --sqleval-json or sqleval merge)") from None
    except ReportBytesError as exc:
        raise ReportInputError(f"{path}: the report {exc}") from None
    try:
        report = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportInputError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    except RecursionError:
        raise ReportInputError(f"{path}: not a {SCHEMA} report: its JSON nests arrays or objects too deeply") from None
    if not isinstance(report, dict) or report.get("schema") != SCHEMA:
        found = report.get("schema") if isinstance(report, dict) else type(report).__name__
        raise ReportInputError(f"{path}: not a {SCHEMA} report (schema: {found!r}); "
                               "give the file written by pytest --sqleval-json or sqleval merge")
    if not isinstance(report.get("suites"), list) or not isinstance(report.get("cases"), list):
        raise ReportInputError(f"{path}: a {SCHEMA} report needs the lists `suites` and `cases`")
    from .baseline import ReportError, check_report

    try:  # a block that is not an object, a case given twice, a score that is not a number
        return check_report(path, report)
    except ReportError as exc:
        raise ReportInputError(str(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sqleval")
    subparsers = parser.add_subparsers(dest="command", required=True)
    register(subparsers)
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
