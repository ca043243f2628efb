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
        #: case -> (its kept record, the xdist worker that sent it)
        self._seen: dict[tuple, tuple[dict, Any]] = {}
        #: an xdist controller: it receives every case's reports and record as fresh copies from its workers
        self._controller = _runs_xdist_workers(config)
        self._shared = SharedValues(decoded=self._controller)
        #: why the loop ended before every selected case ran (-x, --maxfail, --sw), None for a whole run
        self._stop: str | None = None
        #: suite files that failed to collect while the others ran (xdist, --continue-on-collection-errors)
        self._uncollected: dict[str, None] = {}
        #: a predictions file with ids of no collected case (a collection error: nothing runs against it)
        self._bad_predictions: str | None = None
        #: cases of the collected suites left out (-k, -m, --deselect, --lf, --sw's passed ones, --sqleval-shard)
        self._deselected = 0
        #: cases selected to run (serial, or from the workers); 0 when unknown (a worker that never reported)
        self._selected = 0
        if not config.pluginmanager.has_plugin(PassedPhaseReports.NAME):
            config.pluginmanager.register(PassedPhaseReports(config), PassedPhaseReports.NAME)

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector):
        from .collect import SuiteFile
        from .suite_files import YAML_SUFFIXES, is_suite_file

        if is_suite_file(file_path):
            return SuiteFile.from_parent(parent, path=file_path)
        if file_path.suffix.lower() in YAML_SUFFIXES and parent.session.isinitpath(file_path):
            return SuiteFile.from_parent(parent, path=file_path)
        return None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """An xdist worker tells its controller the metrics its conftest files registered: a conftest.py below the
        rootdir is loaded only where suites are collected, and the controller collects nothing. It counts the
        cases selected to run: a stop after the last of them leaves the report whole."""
        from .collect import CaseItem
        from .registry import active_registry

        active_registry().order_conftest_metrics()  # every conftest.py is loaded now, in the order pytest chose
        self._selected = sum(1 for item in session.items if isinstance(item, CaseItem))
        # --lf filters the items of a file as it collects them (no pytest_deselected): count against the suites
        self._deselected = max(0, sum(len(suite.cases) for suite in self.state.suites.values()) - self._selected)
        if is_worker(self.config):
            from .registry import definitions

            self.config.workeroutput["sqleval_metrics"] = definitions()
            self.config.workeroutput["sqleval_deselected"] = self._deselected
            self.config.workeroutput["sqleval_selected"] = self._selected
            # every suite collected, also one none of whose cases runs here (-k, a shard): its files are the run's
            self.config.workeroutput["sqleval_suites"] = list(self.state.suites)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        """The controller adopts its workers' metrics (by name) before it aggregates and gates them."""
        from .errors import SuiteError
        from .registry import adopt_definitions

        output = getattr(node, "workeroutput", None) or {}
        adopt_definitions(output.get("sqleval_metrics"))
        deselected = output.get("sqleval_deselected")
        if isinstance(deselected, int):  # every worker collects (and deselects) the whole run: the same count
            self._deselected = max(self._deselected, deselected)
        selected = output.get("sqleval_selected")
        if isinstance(selected, int):
            self._selected = max(self._selected, selected)
        for path in output.get("sqleval_suites") or ():  # the run block hashes the files of every collected suite
            if isinstance(path, str) and path not in self.state.suites:
                try:
                    self.state.suite_at(path)
                except (SuiteError, OSError):  # read by the worker just now: left out rather than a crash
                    continue

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
        unknown = [] if _lf_skipped_files(config) else unmatched_ids(self.state.predictions, known)
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
            lines = ", ".join(str(self.state.predictions[pid].line) for pid in unknown[:20])
            from .predictions import turn_hints, unicode_twins

            message = (f"{path}: {len(unknown)} prediction id(s) match no collected case: {shown} "
                       f"(line{'s' if len(unknown) > 1 else ''} {lines}){unicode_twins(unknown, known)}"
                       f"{turn_hints(unknown, known)}\n"
                       "  fix: use the cases' `id:` values "
                       "(a turn is <interaction>/<n>; <suite>::<id> picks one suite)")
        report = pytest.CollectReport(nodeid=str(path), outcome="failed", longrepr=message, result=[])
        session.ihook.pytest_collectreport(report=report)
        config.hook.pytest_deselected(items=list(items))  # nothing runs against mismatched predictions
        items.clear()

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A suite file that failed to collect: serially pytest then stops before the loop (no summary), but xdist
        and ``--continue-on-collection-errors`` run the other suites, whose figures must not read as a whole run."""
        from .suite_files import is_suite_node_path

        if report.failed and not is_worker(self.config):
            path = report.nodeid.split("::")[0]
            if is_suite_node_path(path):
                self._uncollected.setdefault(path, None)
            elif self.state.settings.predictions is not None and path == str(self.state.settings.predictions):
                self._bad_predictions = path  # its ids match no case: no case ran (xdist goes on to the summary)

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
        kept = self._seen.get(key)
        if kept is not None:
            node = getattr(report, "node", None)
            if report.when == "call" and node is not None and node is not kept[1]:  # --dist each: another worker's
                from .model.usage import repeat_entry  # run of the case, whose model call cost as much as the first

                entry = repeat_entry(record)
                if entry is not None:
                    kept[0].setdefault("model_repeats", []).append(entry)
            return
        if self._controller:  # a worker's record, decoded by execnet: every key and label a string of its own
            record = report.sqleval_record = self._shared.record(record)
        self._shared.compact(record)  # serial: the item and the report hold this very dict, changed in place
        self._seen[key] = (record, getattr(report, "node", None))
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
        try:
            result = yield
        except (pytest.Session.Failed, KeyboardInterrupt) as stop:
            # -x/--maxfail end the loop with an exception (xdist's is a KeyboardInterrupt named "stopping after N
            # failures"): the cases that ran are still summarised, gated and reported; a real Ctrl-C is not
            if not _stopped_early(stop, session) or not self.state.records or is_worker(self.config) \
                    or self.state.settings.check_gold:
                raise
            self._stopped_early = True  # the summary says that its figures cover the cases that ran only
            self._stop = "--sw" if _stepwise_stop(str(stop), self.config) else str(stop)
            self._finish_loop(session)
            raise
        if is_worker(self.config) or _runs_no_case(self.config) or self.state.settings.check_gold:
            return result
        self._finish_loop(session)
        return result

    def _finish_loop(self, session: pytest.Session) -> None:
        release_scoring_caches(self.state)
        self._summarize()
        self._build_report()
        from .deploygate_plugin import gate_failed

        if gate_failed(self.config, self.state):
            session.testsfailed += 1
        self._write_json()
        if self.state.json_error:
            session.testsfailed += 1

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
        run = {"plugin_version": plugin_version(), "pytest_version": pytest.__version__,
               "incomplete": self._incomplete(), "deselected": self._deselected}
        report = json_primitive(build_report(self.state.summaries, records, run=run))
        report = extend_report(self.config, self.state, report)
        hook = self.config.hook.pytest_sqleval_update_json
        if hook.get_hookimpls():  # a user's hooks (the plugin implements none)
            report = self._updated_report(hook, report)
        self.state.report = report

    def _incomplete(self) -> str | None:
        """Why the report covers part of the selected cases (``run.incomplete``; a failing gate), None when whole."""
        reasons = []
        ran = len(self.state.records)
        if self._stop is not None and not 0 < self._selected <= ran:  # stopped after its last case: whole
            reasons.append(f"the run stopped early ({self._stop}): only the {ran} case{'s' if ran != 1 else ''} "
                           f"that ran {'are' if ran != 1 else 'is'} in it")
        if self._uncollected:
            names = ", ".join(self._uncollected)
            reasons.append(f"{len(self._uncollected)} suite file{'s' if len(self._uncollected) != 1 else ''} could "
                           f"not be collected ({names}): {'their' if len(self._uncollected) != 1 else 'its'} cases "
                           "are not in it")
        if self._bad_predictions is not None:
            reasons.append(f"the predictions file {self._bad_predictions} does not match the collected cases: no case "
                           "ran")
        return "; ".join(reasons) or None

    def _updated_report(self, hook, report: dict) -> dict | None:
        """The report after the users' ``pytest_sqleval_update_json``, what they added made JSON as the rest of
        the report is (NaN as text, a set as a sorted list). A hook that raises, or leaves a value no JSON can
        hold (a dict that contains itself), is the report's error naming it: the run fails, no JSON file is
        written, and the report is not used (the Markdown/HTML views build their own)."""
        import copy

        from .hookspec import hook_failure, hook_implementers
        from .report.json_values import json_primitive

        # the hooks change a copy: what is written and rendered, never the report the gates and exit status read
        report = copy.deepcopy(report)
        shape = _report_shape(report)
        try:
            returned = [value for value in hook(config=self.config, report=report) or () if value is not report]
        except Exception as exc:  # noqa: BLE001 - the user's code raised: name it, not an INTERNALERROR
            error = hook_failure(hook, exc)
        else:
            changed = _changed_shape(shape, report)  # the renderers and the gate's summary read the report's own
            if returned:  # `return {**report, ...}` changes nothing: said, not a report silently without it
                from .hookspec import shown_value

                error = (f"{hook_implementers(hook)} returned {shown_value(returned[0])}, which is not used; change "
                         "the `report` it is given in place")
            elif changed is not None:
                error = (f"{hook_implementers(hook)} {changed}; add keys of your own to the report rather than change "
                         "the type of its own")
            else:
                try:
                    return json_primitive(report)
                except (RecursionError, TypeError, ValueError) as exc:
                    error = f"{hook_implementers(hook)} left a value no JSON can hold ({type(exc).__name__}: {exc})"
        written = "; the JSON report is not written" if self.state.settings.json_path is not None else ""
        self.state.json_error = error + written  # the run fails, the summary names it
        self.config.stash[JSON_FAILED_KEY] = True
        return None

    def _write_json(self) -> None:
        from .report.json_report import write_report

        path = self.state.settings.json_path
        if path is None or self.state.json_error:  # a pytest_sqleval_update_json hook failed: named in the summary
            return
        report = self.state.report
        try:
            self.state.json_written = str(write_report(path, report))
        except (OSError, ValueError) as exc:
            self.state.json_error = f"cannot write the JSON report to {path}: {exc}"
            self.config.stash[JSON_FAILED_KEY] = True

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session):
        """Around the terminal summary: a ``pytest_sqleval_terminal_section`` that raised fails the run."""
        result = yield
        if getattr(self, "_section_failed", False) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return result

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config) -> None:
        self.state.exit_status = int(exitstatus)
        if self.state.settings.check_gold:
            from .report.terminal import write_gold_check

            write_gold_check(terminalreporter, sorted(self.state.records, key=lambda r: (r["path"], r.get("index", 0))))
            return
        if not self.state.summaries:
            return
        by_path: dict[str, list[dict]] = defaultdict(list)
        shown: dict[str, str] = {}  # each suite file's displayed path, resolved once (not once per case)
        for record in sorted(self.state.records, key=lambda r: (r["path"], r.get("index", 0))):
            path = record["path"]
            if path not in shown:
                shown[path] = _display_path(config, path)
            by_path[shown[path]].append(record)
        from .report.terminal import write_summary

        def section(summary, records) -> None:
            hook = config.hook.pytest_sqleval_terminal_section
            try:
                hook(terminalreporter=terminalreporter, summary=summary, records=records, config=config)
            except Exception as exc:  # noqa: BLE001 - a reporter's bug: named, the rest of the summary still written
                from .hookspec import hook_failure

                terminalreporter.write_line(f"sqleval: {hook_failure(hook, exc)}", red=True, bold=True)
                self._section_failed = True

        write_summary(terminalreporter, self.state.summaries, by_path, json_path=self.state.json_written,
                      section=section)
        if self.state.json_error:
            terminalreporter.write_line(f"sqleval: {self.state.json_error}", red=True, bold=True)
        if getattr(self, "_stopped_early", False):
            ran = len(self.state.records)
            how = "--sw" if self._stop == "--sw" else "-x/--maxfail"
            terminalreporter.write_line(f"sqleval: the run stopped early ({how}): the summary, the gates and the "
                                        f"reports cover only the {ran} case{'s' if ran != 1 else ''} that ran",
                                        yellow=True, bold=True)
        if self._uncollected:
            terminalreporter.write_line(f"sqleval: {len(self._uncollected)} suite file(s) could not be collected "
                                        f"({', '.join(self._uncollected)}): the summary, the gates and the reports "
                                        "cover only the suites that were", yellow=True, bold=True)
        if self._deselected and not getattr(self.config.option, "sqleval_shard", None):  # a shard says so itself
            n = self._deselected
            terminalreporter.write_line(f"sqleval: {n} case{'s' if n != 1 else ''} of the collected suites not selected "
                                        "(-k, -m, --deselect, --lf, --sw): the summary, the gates and the reports cover "
                                        "the selected cases only", yellow=True)


def _runs_no_case(config: pytest.Config) -> bool:
    """``--co``, ``--setup-only`` and ``--setup-plan`` (which sets ``setuponly``): pytest runs no case's call, so there
    is nothing to summarise, gate or report (exit status 0, the last run's reports left as they are)."""
    option = config.option
    return bool(option.collectonly or getattr(option, "setuponly", False) or getattr(option, "setupplan", False))


class PassedPhaseReports:
    """What pytest keeps per finished case, cut to what its output needs.

    The terminal reporter keeps every report to the end of the run: those of passed setups and teardowns under
    the category ``""``, which it never counts nor shows; it reads them only for a teardown's captured output
    (``sections``), in the failures' and ``-rP``'s sections. A 100,000-case run would hold 200,000 such reports;
    those without sections change no output, so they are let go (the report of the call, and any report that
    failed or captured output, are kept as they are).

    An xdist worker sends each report to its controller, which keeps the record: the worker lets go of its own
    reference to the record once the report is sent (its item's and its call report's), so that it does not
    hold every record of its share of the run to the end.
    """

    NAME = "sqleval-passed-phase-reports"

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.worker = is_worker(config)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem):
        result = yield
        if self.worker:  # the case's reports are sent: the controller holds the record
            item.__dict__.pop("sqleval_record", None)
        return result

    @pytest.hookimpl(trylast=True)  # after the terminal reporter filed the report, and xdist sent it
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.worker and report.when == "call":
            report.__dict__.pop("sqleval_record", None)
        if report.when not in ("setup", "teardown") or not report.passed or report.sections:
            return
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        kept = getattr(terminal, "stats", None)
        kept = kept.get("") if isinstance(kept, dict) else None
        if kept and kept[-1] is report:
            kept.pop()


def release_scoring_caches(state: SqlevalState) -> None:
    """After the last case: let go of what only scoring uses (the evaluator's gold results, schemas and
    readings; the parse and gold-shape caches), so that the summary and the report reuse that memory instead of
    adding to the run's peak. Nothing is scored after the loop; a later use would only compute again."""
    import gc
    import sys

    state._evaluator = None
    for module, name in (("pytest_sqleval.metrics.exact_match.sqleval", "gold_shape"),
                         ("pytest_sqleval.metrics.exact_match.spider", "normalised_gold")):
        cached = getattr(sys.modules.get(module), name, None)
        if hasattr(cached, "cache_clear"):
            cached.cache_clear()
    parsed = sys.modules.get("pytest_sqleval.sql.parsed")
    if parsed is not None and hasattr(getattr(parsed, "_cache", None), "clear"):
        parsed._cache.clear()
    gc.collect()  # sqlglot trees point back to their parents: freed by the collector, now rather than later


def _stopped_early(stop: BaseException, session: pytest.Session) -> bool:
    """pytest's -x/--maxfail stop (``Session.Failed`` after a failure set ``shouldfail``), or xdist's (an
    ``Interrupted``, a KeyboardInterrupt subclass, raised after its loop with pytest's own "stopping after N
    failures"), or --sw's (``Session.Interrupted``, serially and under xdist, with stepwise's own message); not
    Ctrl-C, not a session stopped for another reason (collection errors, a model that cannot be used:
    ``Session.Interrupted``), whose partial results would read as a run."""
    if isinstance(stop, pytest.Session.Failed):
        return bool(session.shouldfail)
    if type(stop) is KeyboardInterrupt:
        return False
    return str(stop).startswith("stopping after ") or _stepwise_stop(str(stop), session.config)


#: the reason pytest's stepwise plugin stops the session with, after the first failure
_STEPWISE_STOP = "Test failed, continuing from this test next run"


def _stepwise_stop(reason: str, config: pytest.Config) -> bool:
    return bool(getattr(config.option, "stepwise", False) or getattr(config.option, "stepwise_skip", False)) \
        and reason.startswith(_STEPWISE_STOP)


def _lf_skipped_files(config: pytest.Config) -> bool:
    """``--lf`` left out whole files without a failure: the predictions of their cases match nothing collected
    here, yet they matched in the run ``--lf`` repeats (pytest's counter is private: without it, check as usual)."""
    lastfailed = config.pluginmanager.get_plugin("lfplugin")
    return isinstance(getattr(lastfailed, "_skipped_files", None), int) and lastfailed._skipped_files > 0


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

    __slots__ = ("_text", "_flat", "_open", "decoded")

    #: text up to this length is shared (keys, labels, paths); longer text (SQL, messages) is kept as it is
    SHORT = 200
    #: keys whose text is each case's own (nothing to share: a table entry per case would only add memory)
    OWN = frozenset(("id", "gold", "predicted", "question"))

    def __init__(self, decoded: bool) -> None:
        #: the reports were decoded from a worker's message (their text is not shared with anything yet)
        self.decoded = decoded
        self._text: dict[str, str] = {}
        #: one dict per equal small dict of plain values (a record's ``clauses``: 14 flags, a few distinct sets)
        self._flat: dict[tuple, dict] = {}
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
            flat = self.flat(value)
            if flat is not None:
                return flat
            return {self.text(k) if type(k) is str else k: v if k in self.OWN else self.record(v)
                    for k, v in value.items()}
        if kind is list:
            return [self.record(v) for v in value]
        return value

    #: the plain values a shared flat dict may hold (each keyed with its type: True, 1 and 1.0 stay apart)
    _PLAIN = frozenset((bool, type(None)))

    def flat(self, value: dict) -> dict | None:
        """The one shared dict equal to ``value`` when it is a small dict of flags (a record's ``clauses``), else
        None. Records are read, never changed, once reported: sharing them changes no value."""
        if not 0 < len(value) <= 32:
            return None
        plain = self._PLAIN
        for k, v in value.items():
            if type(k) is not str or type(v) not in plain:
                return None
        key = tuple((k, v) for k, v in value.items())  # bools and None only: equal keys are identical values
        shared = self._flat.get(key)
        if shared is None:
            if len(self._flat) >= 4096:  # flags that hardly repeat: keep them as they are
                return None
            shared = self._flat[key] = {self.text(k): v for k, v in value.items()}
        return shared

    def names(self, value: list) -> list | None:
        """The one shared list equal to ``value`` when it is a short list of short text or of integers (a miss's
        column names, its result shapes), else None."""
        if not 0 < len(value) <= 32:
            return None
        kind = type(value[0])
        if kind is str:
            if not all(type(v) is str and len(v) <= self.SHORT for v in value):
                return None
        elif kind is int:
            if not all(type(v) is int for v in value):
                return None
        else:
            return None
        key = (kind, *value)
        shared = self._flat.get(key)
        if shared is None:
            if len(self._flat) >= 4096:
                return None
            shared = self._flat[key] = [self.text(v) for v in value] if kind is str else list(value)
        return shared

    def compact(self, record: dict) -> None:
        """Share ``record``'s short text, flag dicts and a miss's column names and shapes in place (the serial
        run: the record stays the same dict, the one its item and report hold); a miss's rows that are also in
        its head rows are kept once."""
        for key, value in record.items():
            kind = type(value)
            if kind is str:
                if len(value) <= self.SHORT and key not in self.OWN:
                    record[key] = self.text(value)
            elif kind is dict:
                flat = self.flat(value)
                if flat is not None:
                    record[key] = flat
                elif key == "mismatch":
                    self._mismatch(value)

    def _mismatch(self, mismatch: dict) -> None:
        for key, value in mismatch.items():
            kind = type(value)
            if kind is str:
                if len(value) <= self.SHORT:
                    mismatch[key] = self.text(value)
            elif kind is list and key.endswith(("_columns", "_shape")):
                shared = self.names(value)
                if shared is not None:
                    mismatch[key] = shared
        for only, head in (("gold_only_rows", "gold_head"), ("predicted_only_rows", "predicted_head")):
            rows, heads = mismatch.get(only), mismatch.get(head)
            if type(rows) is list and type(heads) is list:
                for i, row in enumerate(rows):
                    same = next((h for h in heads if _same_row(row, h)), None)
                    if same is not None:
                        rows[i] = same

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
            #: pytest >= 9 keeps a parsed ``NodeId`` (``_id``) behind the ``nodeid`` property: share that object
            first = self._open[nodeid] = (report.__dict__.get("_id", nodeid), location, keywords)
        else:
            if "_id" in report.__dict__:  # setting ``nodeid`` would parse a new NodeId for every report
                report.__dict__["_id"] = first[0]
            else:
                report.nodeid = first[0]
            if report.location == first[1]:
                report.location = first[1]
            if getattr(report, "keywords", None) == first[2]:
                report.keywords = first[2]
        if report.when == "teardown" or report.when not in ("setup", "call"):
            self._open.pop(nodeid, None)


def _same_row(a: Any, b: Any) -> bool:
    """Two rows of plain values that write the same JSON (True is not 1, -0.0 is not 0.0, NaN is nothing)."""
    if type(a) is not list or type(b) is not list or len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is y:
            continue
        kind = type(x)
        if kind is not type(y) or kind not in (str, int, float) or x != y or (kind is float and x == 0.0):
            return False
    return True


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


def _report_shape(report: dict[str, Any]) -> dict[tuple[Any, ...], type]:
    """Where the report holds a mapping or a list of its own (top-level blocks, each suite and case, and their
    blocks), before a user's ``pytest_sqleval_update_json`` runs: the Markdown/HTML renderers and the deploy gate's
    summary read them after it."""
    shape: dict[tuple[Any, ...], type] = {}
    for key, value in report.items():
        if isinstance(value, (dict, list)):
            shape[(key,)] = dict if isinstance(value, dict) else list
    for key in ("suites", "cases"):
        entries = report.get(key)
        for index, entry in enumerate(entries if isinstance(entries, list) else ()):
            if isinstance(entry, dict):
                shape[(key, index)] = dict
                shape.update(((key, index, k), dict if isinstance(v, dict) else list)
                             for k, v in entry.items() if isinstance(v, (dict, list)))
    return shape


def _changed_shape(shape: dict[tuple[Any, ...], type], report: Any) -> str | None:
    """``replaced report['cases'] (a list) with None``: the first block of the report's own a hook gave another type
    (removing one is fine: the readers take a missing block as empty)."""
    for path, kind in shape.items():
        value = report
        for part in path:
            if isinstance(value, dict) and part in value or isinstance(value, list) and part < len(value):
                value = value[part]
            else:
                value = kind  # removed (or its container was): nothing to read
                break
        if value is not kind and not isinstance(value, kind):
            where = "".join(f"[{part!r}]" for part in path)
            name = "a mapping" if kind is dict else "a list"
            return f"replaced report{where} ({name}) with {type(value).__name__}"
    return None
