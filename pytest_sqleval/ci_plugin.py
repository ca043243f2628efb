"""CI output for pytest-sqleval: Markdown step summary, HTML report, JUnit XML, the final line, ``--lf``/``--ff``.

Registered from ``plugin.pytest_plugins``. Everything here renders from the
``sqleval-report/1`` dict of the session (the same document ``--sqleval-json``
writes), so ``sqleval report report.json --markdown ... --html ...`` produces the
same files from a saved report.

How each part hooks into pytest (and why it is robust):

- **JUnit** (``--junitxml``): junitxml's ``LogXML`` keeps one ``_NodeReporter``
  per test id, reachable through its public-ish ``node_reporter(report)``
  (the same object the ``record_xml_attribute`` fixture uses). After LogXML has
  handled a miss's call report (this hook is ``trylast``), the ``passed`` entry
  is turned into a ``<skipped>`` (or ``<failure>``) element with the miss's
  reason, and LogXML's counters are corrected. After the teardown report, when
  LogXML has frozen the testcase element, the ``sqleval`` property (which
  LogXML writes as ``str(dict)``, a Python repr) is replaced by
  ``json.dumps(record)``, or added when the record travels outside
  ``user_properties``. Gates become testcases of their own (classname
  ``sqleval.gates``) added in a ``tryfirst`` ``pytest_sessionfinish``, before
  LogXML writes the file. Nothing is re-parsed or rewritten on disk, and
  ``-n 2`` works because LogXML only lives on the controller.
- **Final line**: pytest prints one ``N <key>`` part per key of
  ``terminalreporter.stats``; a ``gate failed`` key is added, and the line's
  colour is red while it is there.
- **--lf / --ff**: the cacheprovider's ``LFPlugin`` forgets a test whose call
  report passed; a miss is a passed report, so after ``LFPlugin`` has seen it
  (this hook is ``trylast``) the miss is put back into its ``lastfailed`` map,
  which LFPlugin itself saves at the end of the session.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from .options import OptionGroup

JUNIT_MISS_POLICIES = ("skipped", "failure", "passed")
GATE_STAT_KEYS = ("gate failed", "gates failed")
REPORT_KEY = pytest.StashKey["dict | None"]()
CI_KEY = pytest.StashKey["CIState"]()


# --------------------------------------------------------------------------- options
def pytest_addoption(parser: pytest.Parser) -> None:
    group = OptionGroup(parser, "sqleval")
    group.addoption("--sqleval-markdown", metavar="PATH", default=None,
                    help="write a Markdown summary (GitHub-flavoured; appended when PATH is $GITHUB_STEP_SUMMARY).")
    group.addoption("--sqleval-html", metavar="PATH", default=None,
                    help="write a self-contained HTML report (charts and a filterable table of cases).")
    group.addoption("--sqleval-junit-misses", metavar="POLICY", choices=JUNIT_MISS_POLICIES, default=None,
                    help="how --junitxml shows a miss: skipped (default), failure or passed.")
    parser.addini("sqleval_markdown", help="default for --sqleval-markdown ($VARS are expanded).")
    parser.addini("sqleval_html", help="default for --sqleval-html ($VARS are expanded).")
    parser.addini("sqleval_junit_misses", help="default for --sqleval-junit-misses: skipped, failure or passed.")


class CIState:
    def __init__(self, config: pytest.Config) -> None:
        self.markdown = _path_setting(config, "sqleval_markdown")
        self.html = _path_setting(config, "sqleval_html")
        policy = config.getoption("sqleval_junit_misses") or config.getini("sqleval_junit_misses") or "skipped"
        if policy not in JUNIT_MISS_POLICIES:
            raise pytest.UsageError(f"ini option sqleval_junit_misses: {policy!r} is not one of "
                                    f"{', '.join(JUNIT_MISS_POLICIES)}")
        self.junit_misses = policy
        self.junit_records: dict[tuple[str, Any], dict[str, Any]] = {}
        self.junit_reporters: dict[tuple[str, Any], Any] = {}
        self.written: list[str] = []
        self.problems: list[str] = []


def _path_setting(config: pytest.Config, name: str) -> str | None:
    from .settings import empty_option_message

    given = config.getoption(name)
    problem = empty_option_message("--" + name.replace("_", "-"), given, "a file path", noun="path")
    if problem is not None:  # `--sqleval-markdown "$UNSET"`: not the option left out
        raise pytest.UsageError(problem)
    value = given or config.getini(name) or None
    if not value:
        return None
    path = os.path.expandvars(os.path.expanduser(value))
    folder = path.endswith(("/", os.sep))  # `reports/`: a folder, which written as it is would become a file
    if folder or Path(path).is_dir():
        option = "--" + name.replace("_", "-") if given else f"ini option {name}"
        what = "ends with '/', a folder" if folder else "is a directory"
        example = Path(path.rstrip("/" + os.sep) or path) / ("sqleval.md" if name.endswith("markdown") else "sqleval.html")
        raise pytest.UsageError(f"{option} {path} {what}; give a file path, e.g. {example}")
    if "$" in path:  # an unset variable: not written, and said so at the end
        return path
    from .settings import from_invocation_dir

    return str(from_invocation_dir(config, path))  # now, as --junitxml's: a test that changes directory cannot move it


def _active(config: pytest.Config) -> bool:
    from .state import STATE_KEY

    state = config.stash.get(STATE_KEY, None)
    return state is not None and not state.settings.check_gold


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Active only with sqleval on; trylast, so junitxml's LogXML and the cache's LFPlugin exist already."""
    if not _active(config):
        return
    config.stash[CI_KEY] = CIState(config)
    config.pluginmanager.register(CIPlugin(config), "sqleval-ci")


def _shard_got_no_case(config: pytest.Config) -> bool:
    """``--sqleval-shard K/N`` gave this run no case: its reports are still written, saying so."""
    from .deploygate_plugin import DEPLOY_KEY

    deploy = config.stash.get(DEPLOY_KEY, None)
    return deploy is not None and deploy.shard_empty


def _ci(config: pytest.Config) -> CIState | None:
    return config.stash.get(CI_KEY, None)


# --------------------------------------------------------------------------- the session's report
def session_report(config: pytest.Config) -> dict[str, Any] | None:
    """The ``sqleval-report/1`` dict of this session (built once; None before the summary exists).

    Uses the report the core built when it keeps one (``state.report``), else the
    JSON file it wrote, else builds the same document from the session's summaries.
    """
    if REPORT_KEY in config.stash:
        return config.stash[REPORT_KEY]
    from .state import STATE_KEY

    state = config.stash.get(STATE_KEY, None)
    # no case ran (-k selected none): still rendered when gates were judged (an overall threshold, the baseline's),
    # whose verdict sets the exit status: the final line, JUnit and the Markdown/HTML then say which gate failed
    judged = isinstance(getattr(state, "report", None), dict) and bool(state.report.get("gates"))
    if state is None or not (state.summaries or _shard_got_no_case(config) or judged):
        return None
    report = getattr(state, "report", None)
    if isinstance(report, dict):
        from .report.json_values import json_primitive

        report = json_primitive(report)  # exactly what --sqleval-json writes, without a second copy of every case
    elif state.json_written:
        try:
            report = json.loads(Path(state.json_written).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            report = None
    if not isinstance(report, dict):
        from .report.json_report import build_report
        from .session import plugin_version

        records = sorted(state.records, key=lambda r: (r["path"], r.get("index", 0)))
        report = build_report(state.summaries, records,
                              run={"plugin_version": plugin_version(), "pytest_version": pytest.__version__})
        report = json.loads(json.dumps(report, default=str))
    config.stash[REPORT_KEY] = report
    return report


# --------------------------------------------------------------------------- the session plugin
class CIPlugin:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        _keep_misses_in_lastfailed(self.config, report)
        _junit_report(self.config, report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        _finish(session)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter) -> None:
        ci = _ci(self.config)
        if ci is None:
            return
        for line in ci.written:
            terminalreporter.write_line(line)
        for line in ci.problems:
            terminalreporter.write_line(line, red=True, bold=True)


def _record(report: pytest.TestReport) -> dict[str, Any] | None:
    from .outcomes import sqleval_record

    return sqleval_record(report)


def _is_miss(report: pytest.TestReport, record: dict[str, Any] | None) -> bool:
    return (record is not None and report.when == "call" and report.passed
            and record.get("outcome") == "missed")


def _keep_misses_in_lastfailed(config: pytest.Config, report: pytest.TestReport) -> None:
    """A miss counts as "failed" for --lf/--ff (LFPlugin forgot it a moment ago: its call report passed)."""
    if _ci(config) is None or hasattr(config, "workerinput"):
        return
    if not _is_miss(report, _record(report)):
        return
    lfplugin = config.pluginmanager.get_plugin("lfplugin")
    if lfplugin is None or not hasattr(lfplugin, "lastfailed"):
        return
    lfplugin.lastfailed[getattr(report, "id", report.nodeid)] = True


# --------------------------------------------------------------------------- JUnit
def _logxml(config: pytest.Config):
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - junitxml disabled with -p no:junitxml
        return None
    return config.stash.get(xml_key, None)


def _junit_report(config: pytest.Config, report: pytest.TestReport) -> None:
    ci = _ci(config)
    xml = _logxml(config)
    if ci is None or xml is None:
        return
    key = (report.nodeid, getattr(report, "node", None))
    record = _record(report)
    if record is not None and key not in ci.junit_records:
        ci.junit_records[key] = record
        if report.when != "teardown":
            ci.junit_reporters[key] = xml.node_reporter(report)
    if _is_miss(report, record) and ci.junit_misses != "passed":
        _junit_miss(xml, xml.node_reporter(report), record, ci.junit_misses)
    if report.when == "teardown" and key in ci.junit_records:
        _junit_property(ci.junit_reporters.pop(key, None), ci.junit_records.pop(key))


def _junit_miss(xml, reporter, record: dict[str, Any], policy: str) -> None:
    import xml.etree.ElementTree as ET

    from .report.diff import render_miss
    from .report.view import reason_text

    if xml.stats.get("passed", 0) > 0:
        xml.stats["passed"] -= 1  # LogXML counted the passed call report a moment ago
    message = f"sqleval miss: {reason_text(record)}"
    if policy == "skipped":
        element = ET.Element("skipped", type="sqleval.miss", message=_xml_text(message))
    else:
        element = ET.Element("failure", type="sqleval.miss", message=_xml_text(message))
    element.text = _xml_text(render_miss(record, verbose=True))
    reporter.append(element)  # counts the element's tag in LogXML's stats


def _junit_property(reporter, record: dict[str, Any]) -> None:
    """Replace LogXML's ``str(dict)`` property by the record as JSON (or add it)."""
    import xml.etree.ElementTree as ET

    from .report.json_values import json_primitive

    if reporter is None:
        return
    testcase = reporter.to_xml()  # after finalize(): the frozen <testcase> element
    # as the JSON report writes values (NaN as "nan", a set as a sorted list), so the property is strict JSON even
    # with what a user's pytest_sqleval_score_case added to the record
    value = _xml_text(json.dumps(json_primitive(record), ensure_ascii=False, sort_keys=False, default=str))
    properties = testcase.find("properties")
    if properties is None:
        properties = ET.Element("properties")
        testcase.insert(0, properties)
    for prop in properties.findall("property"):
        if prop.get("name") == "sqleval":
            prop.set("value", value)
            return
    properties.append(ET.Element("property", name="sqleval", value=value))


def _xml_text(text: str) -> str:
    from _pytest.junitxml import bin_xml_escape

    return bin_xml_escape(text)


def _junit_gates(config: pytest.Config, report: dict[str, Any]) -> None:
    import xml.etree.ElementTree as ET

    from .report.view import gates

    xml = _logxml(config)
    if xml is None:
        return
    shard = (report.get("run") or {}).get("shard")
    for number, gate in enumerate(gates(report), start=1):
        # keyed by position: LogXML keeps one testcase per key, and two gates may share a name (a rule for each suite
        # that no suite can judge and the overall rule: both `overall::soft_f1 vs baseline`)
        reporter = xml.node_reporter(f"sqleval::gate::{number}::{gate.get('name')}")
        reporter.attrs.update(classname="sqleval.gates", name=str(gate.get("name")))
        reporter.add_property("sqleval_gate", json.dumps(gate, ensure_ascii=False, default=str))
        if gate.get("passed"):
            xml.add_stats("passed")
        elif shard:  # a shard's gates judge part of the run and never fail its job: `sqleval gate` on the merge does
            message = _xml_text(f"shard {shard}: {gate.get('message', '')} "
                                "(decided by `sqleval gate` on the merged report)")
            element = ET.Element("skipped", type="sqleval.gate", message=message)
            reporter.append(element)  # counted as skipped by the reporter
        else:
            element = ET.Element("failure", type="sqleval.gate", message=_xml_text(str(gate.get("message", ""))))
            element.text = _xml_text(str(gate.get("message", "")))
            reporter.append(element)


# --------------------------------------------------------------------------- end of the session
def _finish(session: pytest.Session) -> None:
    config = session.config
    ci = _ci(config)
    if ci is None or hasattr(config, "workerinput") or config.option.collectonly:
        return
    report = session_report(config)
    if report is None:
        return
    own = _own_report(config, report)  # the gates' verdicts as the plugin decided them, not a hook's copy
    _junit_gates(config, own)
    _mark_final_line(config, own)
    for kind, path in (("Markdown", ci.markdown), ("HTML", ci.html)):
        if not path:
            continue
        if "$" in path:
            ci.problems.append(f"sqleval: {kind} not written: {path!r} names an unset environment variable")
            continue
        try:
            written = _write(kind, path, report)
        except OSError as exc:
            ci.problems.append(f"sqleval: {kind} not written to {path}: {exc.strerror or exc}")
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            continue
        ci.written.append(written)


def _write(kind: str, path: str, report: dict[str, Any]) -> str:
    if kind == "Markdown":
        from .report.markdown import is_step_summary, write_markdown

        appended = is_step_summary(path)
        written = write_markdown(path, report)
        return f"sqleval Markdown {'appended to the step summary' if appended else 'written to'} {written}"
    from .report.html import write_html

    return f"sqleval HTML report written to {write_html(path, report)}"


def _own_report(config: pytest.Config, report: dict[str, Any]) -> dict[str, Any]:
    """The report as the plugin built it (the deploy gate keeps it), before a ``pytest_sqleval_update_json`` changed
    the copy that is written and rendered: JUnit's gate failures and the final line follow the exit status."""
    from .deploygate_plugin import DEPLOY_KEY

    own = getattr(config.stash.get(DEPLOY_KEY, None), "report", None)
    return own if isinstance(own, dict) else report


def _mark_final_line(config: pytest.Config, report: dict[str, Any]) -> None:
    """``44 passed, 24 missed, 1 gate failed`` in red when a gate failed."""
    from .report.view import failed_gates

    failed = failed_gates(report)
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if not failed or tr is None or (report.get("run") or {}).get("shard"):  # a shard's gates do not fail its run
        return
    key = GATE_STAT_KEYS[0] if len(failed) == 1 else GATE_STAT_KEYS[1]
    tr.stats.setdefault(key, []).extend(GateStat(g) for g in failed)
    try:  # the part's colour: pytest keeps a table of colours per stats key (unknown keys are yellow)
        from _pytest import terminal

        terminal._color_for_type.setdefault(key, "red")
    except (ImportError, AttributeError):  # pragma: no cover - a future pytest: the part stays yellow
        pass
    determine = getattr(tr, "_determine_main_color", None)
    if determine is not None and not getattr(determine, "_sqleval", False):
        def main_color(unknown_type_seen: bool, _original=determine) -> str:
            if any(tr.stats.get(k) for k in GATE_STAT_KEYS):
                return "red"
            return _original(unknown_type_seen)

        main_color._sqleval = True  # type: ignore[attr-defined]
        tr._determine_main_color = main_color
        if hasattr(tr, "_set_main_color"):
            tr._set_main_color()


class GateStat:
    """One failed gate in ``terminalreporter.stats`` (counted in the final line)."""

    count_towards_summary = True

    def __init__(self, gate: dict[str, Any]) -> None:
        self.gate = gate

    def __repr__(self) -> str:
        return f"GateStat({self.gate.get('name')!r})"
