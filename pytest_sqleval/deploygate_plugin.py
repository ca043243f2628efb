"""pytest glue of the deploy gate: baseline comparison, baseline gates, the overall figure, run
metadata and sharding (registered through ``pytest_plugins`` in plugin.py).

The core session plugin builds the report dict and calls :func:`extend_report`; this module adds
``run`` metadata, ``overall``, ``baseline`` and ``gates`` (deploygate.py decides, the same code
the ``sqleval`` console command uses), and the core bumps ``session.testsfailed`` when a gate
fails (the pytest-cov way: nothing is raised from a summary hook). Identical serial and ``-n 2``:
everything is computed on the controller from the sorted records.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from .options import OptionGroup, number_ini, refuse_empty_options

if TYPE_CHECKING:  # pragma: no cover
    from .deploygate import GateOptions

DEPLOY_KEY = pytest.StashKey["DeployState"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = OptionGroup(parser, "sqleval")
    group.addoption("--sqleval-baseline", metavar="PATH", default=None,
                    help="compare with a baseline sqleval-report/1 JSON (the deployed model's run), case by case.")
    group.addoption("--sqleval-max-regressed", metavar="N", default=None,
                    help="fail when more than N cases that passed in the baseline are missed now.")
    group.addoption("--sqleval-fail-under-baseline", metavar="METRIC[=TOLERANCE]", action="append", default=None,
                    help="fail when METRIC dropped by more than TOLERANCE (default 0) vs the baseline and the drop is "
                         "significant at --sqleval-alpha; METRIC is per suite, overall:METRIC or SUITE:METRIC "
                         "(repeatable).")
    group.addoption("--sqleval-alpha", metavar="A", default=None,
                    help="significance level of the baseline gates (default 0.05).")
    group.addoption("--sqleval-shard", metavar="K/N", default=None,
                    help="run shard K of N (deterministic by suite and case id; interactions stay together).")
    parser.addini("sqleval_baseline", help="default for --sqleval-baseline.")
    parser.addini("sqleval_max_regressed", **number_ini(), help="default for --sqleval-max-regressed.")
    parser.addini("sqleval_fail_under_baseline", type="linelist",
                  help="METRIC[=TOLERANCE] lines (--sqleval-fail-under-baseline).")
    parser.addini("sqleval_alpha", **number_ini(), help="default for --sqleval-alpha (0.05).")


@dataclass
class DeployState:
    options: GateOptions
    shard: tuple[int, int] | None
    started: float
    baseline: dict[str, Any] | None = None
    report: dict[str, Any] | None = None
    #: The run had cases and every one fell to another shard: nothing to run is normal then, not "no tests ran".
    shard_empty: bool = False


def _ini(config: pytest.Config, name: str):
    value = config.getini(name)
    return value if value not in ("", None, []) else None


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    from .state import STATE_KEY

    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    from .deploygate import GateOptionError, GateOptions, last_rule_wins, parse_alpha, parse_baseline_rule
    from .shard import ShardError, parse_shard
    from .thresholds import OVERALL_PREFIX, merge

    option = config.option
    refuse_empty_options(option, _NON_EMPTY)
    try:
        shard = parse_shard(option.sqleval_shard) if option.sqleval_shard else None
    except ShardError as exc:
        raise pytest.UsageError(f"--sqleval-shard: {exc}") from None
    from .settings import _comment_hint

    given = None  # the ini option being read, when the value comes from the ini file
    try:
        rules = [parse_baseline_rule(t) for t in option.sqleval_fail_under_baseline or ()]
        if option.sqleval_fail_under_baseline is None:
            given = "sqleval_fail_under_baseline"
            rules = [parse_baseline_rule(t) for t in _ini(config, given) or ()]
        given = None if option.sqleval_alpha else "sqleval_alpha"
        alpha_text = option.sqleval_alpha or _ini(config, "sqleval_alpha")
        alpha = parse_alpha(alpha_text) if alpha_text is not None else 0.05
        given = None if option.sqleval_max_regressed else "sqleval_max_regressed"
        max_text = option.sqleval_max_regressed or _ini(config, "sqleval_max_regressed")
        max_regressed = _count(max_text) if max_text is not None else None
    except GateOptionError as exc:
        if given is None:
            raise pytest.UsageError(f"sqleval baseline gate: {exc}") from None
        # the ini value, named as an ini option, and pytest's ini files have no comment after a value
        value = _ini(config, given)
        lines = value if isinstance(value, list) else [value]
        hint = next((_comment_hint(line) for line in lines if _comment_hint(line)), "")
        message = str(exc).replace("--sqleval-max-regressed", "sqleval_max_regressed")
        raise pytest.UsageError(f"ini option {given}: {message}{hint}") from None
    baseline_path = option.sqleval_baseline or _ini(config, "sqleval_baseline")
    settings = state.settings
    overall = merge([t for t in settings.cli_thresholds if t.metric.startswith(OVERALL_PREFIX)],
                    [t for t in settings.ini_thresholds if t.metric.startswith(OVERALL_PREFIX)])
    options = GateOptions(overall_thresholds=tuple(overall), max_regressed=max_regressed,
                          fail_under_baseline=last_rule_wins(rules), alpha=alpha,
                          baseline=str(baseline_path) if baseline_path else None)
    if options.needs_baseline and baseline_path is None:
        raise pytest.UsageError("--sqleval-max-regressed and --sqleval-fail-under-baseline compare with a baseline: "
                                "pass --sqleval-baseline PATH (the deployed model's --sqleval-json report)")
    deploy = DeployState(options=options, shard=shard, started=time.time())
    if baseline_path is not None and not hasattr(config, "workerinput"):
        from .baseline import ReportError, load_report
        from .settings import SettingsError, _ini_path

        # the ini's path is relative to the ini file's folder, as sqleval_predictions is (pytest run from a subfolder)
        try:
            source, path = (("--sqleval-baseline", baseline_path) if option.sqleval_baseline
                            else ("ini option sqleval_baseline:", _ini_path(config, baseline_path, "sqleval_baseline")))
        except SettingsError as exc:
            raise pytest.UsageError(str(exc)) from None
        try:
            deploy.baseline = load_report(path, role="baseline")
        except ReportError as exc:
            hint = "" if option.sqleval_baseline else _comment_hint(baseline_path)  # `= deployed.json # last deploy`
            raise pytest.UsageError(f"{source} {exc}{hint}") from None
    config.stash[DEPLOY_KEY] = deploy


#: The options whose explicit empty value (`--sqleval-baseline "$UNSET"`) would read as the option left out: a
#: deploy gate that silently compares with nothing.
_NON_EMPTY = {"sqleval_baseline": "the deployed model's --sqleval-json report",
              "sqleval_max_regressed": "a whole number of cases", "sqleval_alpha": "a level such as 0.05",
              "sqleval_shard": "K/N, e.g. 1/4"}



def _count(text: Any) -> int:
    from .deploygate import GateOptionError

    try:
        value = int(str(text))
    except ValueError:
        raise GateOptionError(f"--sqleval-max-regressed expects a whole number of cases, not {text!r}") from None
    if value < 0:
        raise GateOptionError(f"--sqleval-max-regressed cannot be negative ({value})")
    return value


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    deploy = config.stash.get(DEPLOY_KEY, None)
    if deploy is None or deploy.shard is None or not items:
        return
    from .shard import item_unit, split

    k, n = deploy.shard
    kept, dropped = split(items, item_unit, k, n)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept
    deploy.shard_empty = not kept
    if hasattr(config, "workerinput"):  # the controller collects nothing: it learns it from its workers
        config.workeroutput["sqleval_shard_empty"] = deploy.shard_empty  # type: ignore[attr-defined]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    deploy = node.config.stash.get(DEPLOY_KEY, None)
    if deploy is not None and (getattr(node, "workeroutput", None) or {}).get("sqleval_shard_empty"):
        deploy.shard_empty = True


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """A shard that got no case exits 0 (more shards than cases is normal), and writes its report with no cases."""
    deploy = session.config.stash.get(DEPLOY_KEY, None)
    if deploy is not None and deploy.shard_empty and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    deploy = config.stash.get(DEPLOY_KEY, None)
    if deploy is None:
        return None
    lines = []
    if deploy.shard is not None:
        lines.append(f"sqleval: shard {deploy.shard[0]}/{deploy.shard[1]}")
    if deploy.options.baseline:
        lines.append(f"sqleval: baseline {deploy.options.baseline} (alpha {deploy.options.alpha:g})")
    return lines or None


def score_options(state) -> dict[str, Any]:
    """The run options that affect scores (recorded in the report, compared with the baseline's)."""
    from .suite import hide_password

    s = state.settings
    return {
        "timeout": s.timeout,
        "max_rows": s.max_rows,
        "strict": s.strict,
        "max_memory": s.max_memory,  # bytes (None: the default cap); a query over it is a miss
        "predictions": str(s.predictions) if s.predictions else None,
        "database_url": hide_password(s.database_url) if s.database_url else None,
    }


def run_selection(config: pytest.Config) -> dict[str, Any]:
    """The options that select the run's cases before --sqleval-shard splits them (empty ones left out): shards of
    one run must agree on them, or each splits another selection."""
    option = config.option
    selection = {"-k": getattr(option, "keyword", "") or None, "-m": getattr(option, "markexpr", "") or None,
                 "--deselect": sorted(getattr(option, "deselect", None) or ()) or None,
                 "--lf": bool(getattr(option, "lf", False)) or None}
    return {key: value for key, value in selection.items() if value is not None}


def extend_report(config: pytest.Config, state, report: dict[str, Any]) -> dict[str, Any]:
    """Called by the core with the report dict (suites, cases, run): adds run metadata, overall, baseline, gates."""
    from pathlib import Path

    from .deploygate import complete_report
    from .runmeta import run_block

    deploy = config.stash.get(DEPLOY_KEY, None)
    if deploy is None:  # pragma: no cover - the core only calls this when sqleval is active
        return report
    options = score_options(state)
    thresholds = (*state.settings.cli_thresholds, *state.settings.ini_thresholds)
    options["thresholds"] = [f"{t.metric}={t.value:g}" for t in thresholds]
    options["gates"] = deploy.options.as_json()
    shard = f"{deploy.shard[0]}/{deploy.shard[1]}" if deploy.shard else None
    report["run"] = run_block(rootdir=Path(config.rootpath), started=deploy.started, finished=time.time(),
                              suites=state.suites.values(), predictions=state.settings.predictions,
                              options=options, shard=shard, base=report.get("run"))
    # what a merge needs to tell shards of one run from runs split by -k: the selection, and each suite's size
    report["run"]["selection"] = run_selection(config)
    report["run"]["suite_cases"] = dict(sorted((suite.name, len(suite.cases)) for suite in state.suites.values()))
    complete_report(report, deploy.options, baseline=deploy.baseline, baseline_path=deploy.options.baseline)
    deploy.report = report
    return report


def gate_failed(config: pytest.Config, state) -> bool:
    """Whether a gate fails the run. Under --sqleval-shard the gates are reported but never decide: a shard's
    aggregates are partial, so `sqleval merge` + `sqleval gate` on all shards decide."""
    from .deploygate import gates_passed

    deploy = config.stash.get(DEPLOY_KEY, None)
    if deploy is not None and deploy.shard is not None:
        return False
    own = deploy.report if deploy is not None and deploy.report is not None else state.report  # not a hook's copy
    return any(not s.passed for s in state.summaries) or not gates_passed(own)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    deploy = config.stash.get(DEPLOY_KEY, None)
    if deploy is None or deploy.report is None:
        return
    from .report.terminal import write_deploy_gate

    write_deploy_gate(terminalreporter, deploy.report, exit_status=int(exitstatus))
    if deploy.shard_empty:
        terminalreporter.write_line(f"sqleval: shard {deploy.shard[0]}/{deploy.shard[1]} got no case (the other shards "
                                    "have them all): nothing to run, exit status 0")
    if deploy.shard is not None:
        terminalreporter.write_line(f"sqleval: shard {deploy.shard[0]}/{deploy.shard[1]}: the gates above are this "
                                    "shard's alone and do not set the exit status; merge the shards' reports with "
                                    "`sqleval merge` and gate them with `sqleval gate`", yellow=True)
