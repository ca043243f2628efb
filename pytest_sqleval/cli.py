"""The ``sqleval`` console command: work on saved ``sqleval-report/1`` JSON reports, executing nothing.

    sqleval merge shard1.json shard2.json shard3.json -o all.json [--baseline deployed.json]
    sqleval gate all.json [--threshold M=V ...] [--baseline B.json] [--max-regressed N]
                          [--fail-under-baseline M[=TOL] ...] [--alpha A] [-o regated.json]

Exit status: ``gate``: 0 when every gate passes, 1 when a gate fails or a case of the report errored or failed
(``--sqleval-strict``), as pytest's exit status; ``merge``: 0 once the merged report is written (it prints the
gates; ``sqleval gate`` decides); both: 2 for bad input (a missing or malformed report, a bad option).

Subcommands live in :data:`SUBCOMMANDS`: name -> "module:function", where the function receives
the argparse sub-parsers object, adds its parser and sets ``handler`` (a function of the parsed
arguments returning the exit status). Modules are imported only when their command runs, except
to build the parser. Add new commands (``report``, ``import``, ``stats``, ``generate``) there.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any, Sequence

#: The registry of subcommands: name -> "module:adder". An adder is ``adder(subparsers) -> None``.
SUBCOMMANDS: dict[str, str] = {
    "merge": "pytest_sqleval.cli:add_merge",
    "gate": "pytest_sqleval.cli:add_gate",
    "report": "pytest_sqleval.cli_report:register",          # Markdown / HTML from a saved report
    "import": "pytest_sqleval.datasets.cli:add_import",      # Spider/SParC/CoSQL/BIRD/LogicCat -> suites
    "stats": "pytest_sqleval.datasets.cli:add_stats",        # dataset statistics (MRO 2.4)
    "generate": "pytest_sqleval.datasets.cli:add_generate",  # SQL-first suite generation (MRO 2.2)
}

EXIT_OK, EXIT_GATE_FAILED, EXIT_USAGE = 0, 1, 2


class CommandError(Exception):
    """Bad input: printed as ``sqleval <command>: <message>`` with exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sqleval", description="pytest-sqleval: merge shards, re-gate and render "
                                                                 "reports; import, describe and generate datasets.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, target in SUBCOMMANDS.items():
        module_name, _, function = target.partition(":")
        try:
            adder = getattr(importlib.import_module(module_name), function)
        except (ImportError, AttributeError) as exc:  # a broken optional command must not break the others
            broken = subparsers.add_parser(name, help=f"(unavailable: {exc})")
            broken.set_defaults(handler=lambda args, exc=exc: _unavailable(args, exc))
            continue
        adder(subparsers)
    return parser


def _unavailable(args: argparse.Namespace, exc: Exception) -> int:
    print(f"sqleval {args.command}: unavailable: {exc}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except CommandError as exc:
        print(f"sqleval {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE


def run() -> None:  # the console-script entry point
    from .datasets.cli import run_console

    run_console(main)  # `sqleval stats --json | head`: no BrokenPipeError traceback


# --------------------------------------------------------------------------- shared helpers
def _load(path: str, role: str = "report") -> dict[str, Any]:
    from .baseline import ReportError, load_report
    from .registry import adopt_definitions

    try:
        report = load_report(path, role=role)
    except ReportError as exc:
        raise CommandError(str(exc)) from None
    adopt_definitions(report.get("metric_definitions") or {})  # a user's metrics, aggregated and gated again
    if role == "report":  # its recorded gates are read again: one that cannot be is bad input, named, no traceback
        from .deploygate import GateOptionError, GateOptions, suite_thresholds

        try:
            GateOptions.from_report(report)
            for entry in report["suites"]:
                suite_thresholds(entry)
        except GateOptionError as exc:
            raise CommandError(f"{path}: a gate recorded in the report cannot be read: {exc}\n"
                               "  fix: pass the report as pytest --sqleval-json wrote it") from None
    return report


def _write(path: str, report: dict[str, Any]) -> None:
    from .report.json_report import write_report

    try:
        write_report(path, report)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None


def _print_gates(report: dict[str, Any], *, asked: bool = False) -> bool:
    """One line per gate; True when all pass. ``asked``: gates were given, though none could be built."""
    gates = report.get("gates") or []
    for gate in gates:
        where = "" if gate["suite"] == "overall" else f"suite {gate['suite']}: "
        print(f"{where}{gate['message']}")
    failed = [g for g in gates if not g["passed"]]
    if failed:
        print(f"sqleval: {len(failed)} of {len(gates)} gate(s) failed")
    elif gates:
        print(f"sqleval: all {len(gates)} gate(s) passed")
    elif not asked:  # a gate asked of a report without its suite (no case) is reported as such by the caller
        print("sqleval: no gates configured")
    return not failed


def _print_overall(report: dict[str, Any]) -> None:
    """The overall metrics as the terminal summary writes them (the report's own metrics were adopted by _load)."""
    from .report.terminal import overall_metric_parts

    overall = report.get("overall") or {}
    parts = overall_metric_parts({"metrics": {}, "intervals": {}, **overall})
    if parts:
        print(f"overall ({overall.get('scored', overall.get('cases'))} scored cases): " + ", ".join(parts))


# --------------------------------------------------------------------------- merge
def add_merge(subparsers) -> None:
    parser = subparsers.add_parser(
        "merge", help="merge the JSON reports of shards into one (aggregates and gates recomputed)",
        description="Merge sqleval-report/1 files of disjoint shards (--sqleval-shard K/N) or suites into one "
                    "report whose aggregates, intervals, overall figure and gates equal one unsharded run's.")
    parser.add_argument("reports", nargs="+", metavar="REPORT.json")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.json", help="where to write the merged report")
    parser.add_argument("--baseline", metavar="B.json",
                        help="the baseline to compare with (default: the one the shards recorded, if the file exists)")
    parser.set_defaults(handler=merge_command)


def merge_command(args: argparse.Namespace) -> int:
    from .deploygate import GateOptions, MergeError, merge_reports

    sources = [(path, _load(path)) for path in args.reports]
    baseline_path = args.baseline or GateOptions.from_report(sources[0][1]).baseline
    baseline = None
    if baseline_path:
        if args.baseline is None and not Path(baseline_path).exists():
            raise CommandError(f"the shards compared with the baseline {baseline_path}, which is not here; "
                               "pass it with --baseline PATH")
        baseline = _load(baseline_path, role="baseline")
    try:
        merged = merge_reports(sources, baseline=baseline, baseline_path=baseline_path)
    except MergeError as exc:
        raise CommandError(str(exc)) from None
    _write(args.output, merged)
    for warning in merged["run"].get("merge_warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    print(f"merged {len(sources)} reports ({len(merged['cases'])} cases, {len(merged['suites'])} suites) "
          f"into {args.output}")
    _print_overall(merged)
    _print_gates(merged)
    return EXIT_OK


# --------------------------------------------------------------------------- gate
def add_gate(subparsers) -> None:
    parser = subparsers.add_parser(
        "gate", help="evaluate the gates of a saved report again (exit 1 when one fails)",
        description="Re-gate a sqleval-report/1 file without executing anything: the recorded thresholds and "
                    "baseline gates, overridden by the options given. Exit 0 when every gate passes, 1 otherwise.")
    parser.add_argument("report", metavar="REPORT.json")
    parser.add_argument("--threshold", action="append", default=[], metavar="METRIC=VALUE",
                        help="a threshold (per suite; overall:METRIC for the overall figure); wins over the recorded one")
    parser.add_argument("--baseline", metavar="B.json", help="compare with this baseline report")
    parser.add_argument("--max-regressed", type=int, metavar="N", help="at most N cases passed in the baseline and missed now")
    parser.add_argument("--fail-under-baseline", action="append", default=None, metavar="METRIC[=TOL]",
                        help="fail on a significant drop of METRIC by more than TOL (repeatable)")
    parser.add_argument("--alpha", metavar="A", help="significance level of the baseline gates (default 0.05)")
    parser.add_argument("-o", "--output", metavar="OUT.json", help="write the re-gated report here")
    parser.set_defaults(handler=gate_command)


def gate_command(args: argparse.Namespace) -> int:
    from .deploygate import (
        GateOptionError,
        GateOptions,
        last_rule_wins,
        parse_alpha,
        parse_baseline_rule,
        regate,
        threshold_argument,
    )

    report = _load(args.report)
    try:
        thresholds = [threshold_argument(t) for t in args.threshold]
        recorded = GateOptions.from_report(report)
        rules = recorded.fail_under_baseline
        if args.fail_under_baseline is not None:
            rules = last_rule_wins([parse_baseline_rule(t) for t in args.fail_under_baseline])
        alpha = parse_alpha(args.alpha) if args.alpha is not None else recorded.alpha
        if args.max_regressed is not None and args.max_regressed < 0:
            raise GateOptionError(f"--max-regressed cannot be negative ({args.max_regressed})")
    except GateOptionError as exc:
        raise CommandError(str(exc)) from None
    options = GateOptions(
        overall_thresholds=recorded.overall_thresholds,
        max_regressed=args.max_regressed if args.max_regressed is not None else recorded.max_regressed,
        fail_under_baseline=rules, alpha=alpha, baseline=args.baseline or recorded.baseline,
    )
    baseline = _load(args.baseline, role="baseline") if args.baseline else None
    if options.needs_baseline and baseline is None and not report.get("baseline"):
        raise CommandError("the baseline gates need a baseline: pass --baseline B.json "
                           "(the deployed model's report)")
    regated = regate(report, thresholds=thresholds, options=options, baseline=baseline, baseline_path=args.baseline)
    if args.output:
        _write(args.output, regated)
    _print_overall(regated)
    merge_warnings = (regated.get("run") or {}).get("merge_warnings") or []  # a missing shard, say
    shard = (regated.get("run") or {}).get("shard")
    if shard:  # one shard's report: its gates judge part of the run (pytest does not let them fail the shard's job)
        merge_warnings = [f"the report is shard {shard} of its run alone: its gates judge part of the cases; "
                          "gate the shards' `sqleval merge` instead", *merge_warnings]
    for warning in [*merge_warnings, *(regated.get("baseline") or {}).get("warnings", [])]:
        print(f"warning: {warning}", file=sys.stderr)
    asked = bool(thresholds or ((regated.get("run") or {}).get("options") or {}).get("thresholds") or options.overall_thresholds
                 or options.max_regressed is not None or options.fail_under_baseline)
    passed = _print_gates(regated, asked=asked)
    if asked and not regated.get("cases"):  # pytest exits 5 on such a run: its gates never judged a case
        print("sqleval: the report holds no case (nothing was evaluated: a -k or -m that selected nothing, or no "
              "suite collected), so no gate can pass on it; gate a run that evaluated its suites")
        passed = False
    # as pytest: a case whose gold or database failed is the suite's error, and a miss under --sqleval-strict is a
    # failure; either fails the run
    failing = False
    for outcome, why in (("error", "errored (the suite is broken, not the model)"), ("failed", "failed (--sqleval-strict)")):
        cases = [f"{c.get('suite')}::{c.get('id')}" for c in regated["cases"] if c.get("outcome") == outcome]
        if cases:
            failing = True
            shown = ", ".join(cases[:10]) + (f" (and {len(cases) - 10} more)" if len(cases) > 10 else "")
            print(f"sqleval: {len(cases)} case(s) {why}: {shown}")
    return EXIT_OK if passed and not failing else EXIT_GATE_FAILED


if __name__ == "__main__":  # pragma: no cover
    # `python -m pytest_sqleval.cli`: run the package's module, whose CommandError the commands raise (this copy,
    # `__main__`, has a class of its own: bad input was a traceback instead of `sqleval gate: ...` and exit 2)
    from pytest_sqleval.cli import run as _run

    _run()
