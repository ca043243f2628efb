"""The session plugin, registered only when sqleval is enabled: it collects the suite files, keeps one record
per case, and after the run loop summarises, gates, builds and writes the report and prints the summary.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from .outcomes import sqleval_record
from .state import JSON_FAILED_KEY, SqlevalState, is_worker


class SqlevalSession:
    """Hooks active only when sqleval is enabled: collection, aggregation, gate, summary, report."""

    def __init__(self, config: pytest.Config, state: SqlevalState) -> None:
        self.config = config
        self.state = state
        self._seen: set[tuple] = set()
        #: an xdist controller: it receives every case's reports and record as fresh copies from its workers
        self._controller = _runs_xdist_workers(config)
        self._shared = SharedValues(decoded=self._controller)

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector):
        from .collect import SuiteFile
        from .suite_files import YAML_SUFFIXES, is_suite_file

        if is_suite_file(file_path):
            return SuiteFile.from_parent(parent, path=file_path)
        if file_path.suffix in YAML_SUFFIXES and parent.session.isinitpath(file_path):
            return SuiteFile.from_parent(parent, path=file_path)
        return None

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list) -> None:
        """Prediction ids that match no collected case: a collection error of the predictions file.

        Reported through ``pytest_collectreport`` (not raised), so it also works on xdist workers.
        """
        from .predictions import unmatched_ids

        if self.state.predictions is None or not self.state.suites:
            return
        known = set()
        for suite in self.state.suites.values():
            for case in suite.cases:
                known.update((case.id, f"{suite.name}::{case.id}"))
        unknown = unmatched_ids(self.state.predictions, known)
        path = self.state.settings.predictions
        if not unknown:
            from .predictions import conflicting_ids

            conflicts = conflicting_ids(self.state.predictions, {k for k in known if "::" in k})
            if not conflicts:
                return
            message = (f"{path}: " + "; ".join(conflicts[:20]) + "\n"
                       "  fix: keep one line per case (`<suite>::<id>` when several suites share the id)")
            shown = None
        else:
            shown = ", ".join(unknown[:20]) + (f" (and {len(unknown) - 20} more)" if len(unknown) > 20 else "")
        if shown is not None:
            message = (f"{path}: {len(unknown)} prediction id(s) match no collected case: {shown}\n"
                       "  fix: use the cases' `id:` values "
                       "(a turn is <interaction>/<n>; <suite>::<id> picks one suite)")
        report = pytest.CollectReport(nodeid=str(path), outcome="failed", longrepr=message, result=[])
        session.ihook.pytest_collectreport(report=report)
        config.hook.pytest_deselected(items=list(items))  # nothing runs against mismatched predictions
        items.clear()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep one record per case: the first report that carries it (a teardown failure, ``--dist each`` or a
        rerun never adds a second); a case whose xdist worker crashed gets an ``error`` record of its own."""
        if is_worker(self.config):
            return
        self._shared.report(report)
        record = sqleval_record(report)
        if record is None and report.failed and report.when not in ("setup", "call", "teardown"):
            record = self._crashed_record(report)
        if record is None or not (report.when == "call" or report.failed):
            return
        key = (record["path"], record.get("index", 0), record.get("id"))
        if key in self._seen:
            return
        self._seen.add(key)
        if self._controller:  # a worker's record, decoded by execnet: every key and label a string of its own
            record = report.sqleval_record = self._shared.record(record)
        self.state.records.append(record)

    def _crashed_record(self, report: pytest.TestReport) -> dict[str, Any] | None:
        """xdist reports a crashed worker's item with ``when="???"``: record it as an error of the case."""
        from .outcomes import crashed_case_record

        try:
            return crashed_case_record(self.state, Path(self.config.rootpath), report.nodeid, str(report.longrepr))
        except Exception:  # noqa: BLE001 - a node id we cannot map is left to xdist's own report
            return None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session):
        result = yield
        if is_worker(self.config) or self.config.option.collectonly or self.state.settings.check_gold:
            return result
        self._summarize()
        self._build_report()
        from .deploygate_plugin import gate_failed

        if gate_failed(self.config, self.state):
            session.testsfailed += 1
        self._write_json()
        if self.state.json_error:
            session.testsfailed += 1
        return result

    def _summarize(self) -> None:
        from .summary import summarize

        by_suite: dict[str, list[dict]] = defaultdict(list)
        for record in self.state.records:
            by_suite[record["path"]].append(record)
        s = self.state.settings
        for path in sorted(by_suite):
            suite = self.state.suite_at(path)
            self.state.summaries.append(
                summarize(suite, by_suite[path], cli=s.cli_thresholds, ini=s.ini_thresholds,
                          display_path=_display_path(self.config, path))
            )

    def _build_report(self) -> None:
        """The report dict (also without --sqleval-json): the deploy gate adds run metadata, overall, baseline,
        gates."""

        from .deploygate_plugin import extend_report
        from .report.json_report import build_report
        from .report.json_values import json_primitive

        records = sorted(self.state.records, key=lambda r: (r["path"], r.get("index", 0)))
        run = {"plugin_version": plugin_version(), "pytest_version": pytest.__version__}
        report = json_primitive(build_report(self.state.summaries, records, run=run))
        report = extend_report(self.config, self.state, report)
        self.config.hook.pytest_sqleval_update_json(config=self.config, report=report)
        self.state.report = report

    def _write_json(self) -> None:
        from .report.json_report import write_report

        path = self.state.settings.json_path
        if path is None:
            return
        report = self.state.report
        try:
            self.state.json_written = str(write_report(path, report))
        except (OSError, ValueError) as exc:
            self.state.json_error = f"cannot write the JSON report to {path}: {exc}"
            self.config.stash[JSON_FAILED_KEY] = True

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config) -> None:
        if self.state.settings.check_gold:
            from .report.terminal import write_gold_check

            write_gold_check(terminalreporter, sorted(self.state.records, key=lambda r: (r["path"], r.get("index", 0))))
            return
        if not self.state.summaries:
            return
        by_path: dict[str, list[dict]] = defaultdict(list)
        for record in sorted(self.state.records, key=lambda r: (r["path"], r.get("index", 0))):
            by_path[_display_path(config, record["path"])].append(record)
        from .report.terminal import write_summary

        def section(summary, records) -> None:
            config.hook.pytest_sqleval_terminal_section(terminalreporter=terminalreporter, summary=summary,
                                                        records=records, config=config)

        write_summary(terminalreporter, self.state.summaries, by_path, json_path=self.state.json_written,
                      section=section)
        if self.state.json_error:
            terminalreporter.write_line(f"sqleval: {self.state.json_error}", red=True, bold=True)


def _runs_xdist_workers(config: pytest.Config) -> bool:
    return not is_worker(config) and bool(getattr(config.option, "numprocesses", None)) \
        and getattr(config.option, "dist", "no") != "no"


class SharedValues:
    """One copy of what the reports and records of many cases hold equal, in the xdist controller.

    execnet decodes each report and record into new objects: every record's keys, its labels (database, outcome,
    difficulty, ...), and each of a case's three reports' node id, location and keywords would be separate copies,
    kept until the end of the run (about 4 KB per case). Here equal values are replaced by one shared object,
    which changes no value: a 100,000-case run's controller holds far less.
    """

    __slots__ = ("_text", "_open", "decoded")

    #: text up to this length is shared (keys, labels, paths); longer text (SQL, messages) is kept as it is
    SHORT = 200

    def __init__(self, decoded: bool) -> None:
        #: the reports were decoded from a worker's message (their text is not shared with anything yet)
        self.decoded = decoded
        self._text: dict[str, str] = {}
        #: node id -> (node id, location, keywords) of the case's first report, until its teardown report
        self._open: dict[str, tuple] = {}

    def text(self, value: str) -> str:
        if len(value) > self.SHORT:
            return value
        return self._text.setdefault(value, value)

    def record(self, value: Any) -> Any:
        """``value`` with equal keys and short text shared (dicts and lists rebuilt; everything else as it is)."""
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is dict:
            return {self.text(k) if type(k) is str else k: self.record(v) for k, v in value.items()}
        if kind is list:
            return [self.record(v) for v in value]
        return value

    def report(self, report: pytest.TestReport) -> None:
        """The setup, call and teardown reports of one case share one node id, location and keywords."""
        nodeid = report.nodeid
        first = self._open.get(nodeid)
        if first is None:
            keywords = getattr(report, "keywords", None)
            if isinstance(keywords, dict) and self.decoded:
                keywords = {self.text(k) if type(k) is str else k: v for k, v in keywords.items()}
                report.keywords = keywords
            location = report.location
            if self.decoded and type(location) is tuple and len(location) == 3 and type(location[0]) is str:
                location = report.location = (self.text(location[0]), location[1], location[2])
            first = self._open[nodeid] = (nodeid, location, keywords)
        else:
            report.nodeid = first[0]
            if report.location == first[1]:
                report.location = first[1]
            if getattr(report, "keywords", None) == first[2]:
                report.keywords = first[2]
        if report.when == "teardown" or report.when not in ("setup", "call"):
            self._open.pop(nodeid, None)


def _display_path(config: pytest.Config, path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(config.rootpath).resolve()))
    except ValueError:
        return path


def plugin_version() -> str:
    """The installed pytest-sqleval's version (``unknown`` from a source tree that is not installed)."""
    try:
        from importlib.metadata import version

        return version("pytest-sqleval")
    except Exception:  # noqa: BLE001
        return "unknown"
