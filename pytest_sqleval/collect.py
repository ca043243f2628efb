"""Collection nodes: a suite file collects one test item per case (or interaction turn).

Items are :class:`pytest.Function` objects whose function asks for fixtures,
so users can override ``sqleval_engine`` (and the others) in ``conftest.py``,
select cases with ``-k``, and use tags as markers with ``-m``.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest

from .errors import DatabaseError, GoldError, SuiteError, UserHookError
from .fast_setup import FastSetup, item_setup, plan_for
from .outcomes import (
    CaseErrored,
    CaseMissed,
    GoldBroken,
    decide_outcome,
    error_record,
    errored_record,
    internal_error_message,
    suite_problem_message,
    wants_traceback,
)
from .predictions import Prediction, conflicting_ids, load_predictions, unicode_twins, unmatched_ids
from .report.diff import render_miss
from .state import engine_factory_of, sqleval_state
from .suite import Case, Suite


class SuiteFile(pytest.File):
    """A ``*.sqleval.yaml`` file (or an explicitly named YAML file) holding one suite."""

    def collect(self):
        from .suite_cache import load_suite_shared

        state = sqleval_state(self.config)
        suite = load_suite_shared(self.path, state.engines.shared_build_dir,  # xdist: read once per run
                                  profiles=folder_profiles(self))
        predictions = self._predictions(suite, state)
        _check_unique_name(suite, state)
        _check_r_ves_computed(suite, state)
        state.register_suite(suite)
        self.extra_keyword_matches.add(suite.name)  # `-k <suite name>` selects its cases, as `-k <file stem>` does
        fixtureinfo = None  # computed for the first item, then shared (as pytest shares it between parametrized items)
        fast = None
        markers = _MarkerRegistry(self.config)
        for case in suite.cases:
            item = CaseItem.from_parent(
                self,
                name=case.item_name,
                callobj=run_sqleval_case,
                case=case,
                suite=suite,
                prediction=self._prediction_for(case, suite, predictions),
                fixtureinfo=fixtureinfo,
            )
            if fixtureinfo is None:
                fixtureinfo = item._fixtureinfo  # same function, same parent, no marks yet: the same fixture closure
                fast = plan_for(self, item)  # the items' fixtures without pytest's machinery, when nothing can tell
            item._sqleval_fast = fast
            if predictions is not None:  # a predictions file wins over a model and `predicted:` (model_plugin.py)
                item.prediction_file_entry = predictions.get(f"{suite.name}::{case.id}") or predictions.get(case.id)
            _add_markers(item, case, suite, markers)
            yield item

    def _predictions(self, suite: Suite, state) -> dict[str, Prediction] | None:
        if state.predictions is not None and (state.settings.predictions_from_cli or suite.predictions_file is None):
            return state.predictions  # the command line's file wins; the ini's gives way to the suite's `predictions:`
        if suite.predictions_file is None:
            return None
        predictions = load_predictions(suite.predictions_file)
        ids = {c.id for c in suite.cases}
        unknown = unmatched_ids(predictions, ids | {f"{suite.name}::{i}" for i in ids})  # as --sqleval-predictions
        if unknown:
            shown = ", ".join(f"{pid} (line {predictions[pid].line})" for pid in unknown[:20])
            others = sorted({pid.partition("::")[0] for pid in unknown if "::" in pid} - {suite.name})
            note = fix = ""
            if others:  # `<other suite>::<id>` lines: a file shared by several suites, as `sqleval import` writes one
                note = (f"; <suite>::<id> names another suite ({', '.join(others[:5])}), and this file is the "
                        f"`predictions:` of suite {suite.name!r} only")
                fix = ("give each suite its own predictions file, or pass a file shared by several suites with "
                       "--sqleval-predictions (it replaces the suites' `predictions:`); otherwise ")
            raise SuiteError(
                f"the predictions file {suite.predictions_file} has ids that match no case: {shown}"
                + (f" (and {len(unknown) - 20} more)" if len(unknown) > 20 else "")
                + unicode_twins(unknown, ids | {f"{suite.name}::{i}" for i in ids}) + note,
                path=self.path,
                fix=fix + "fix the ids (a turn is <interaction>/<n>) or remove those lines",
            )
        conflicts = conflicting_ids(predictions, {f"{suite.name}::{i}" for i in ids})
        if conflicts:
            raise SuiteError(f"the predictions file {suite.predictions_file}: {conflicts[0]}", path=self.path,
                             fix="keep one line per case")
        return predictions

    @staticmethod
    def _prediction_for(case: Case, suite: Suite, predictions: dict[str, Prediction] | None) -> str | None:
        if predictions is None:
            return case.predicted
        found = predictions.get(f"{suite.name}::{case.id}") or predictions.get(case.id)
        return found.sql if found else None

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, SuiteError):
            return excinfo.value.render()
        return super().repr_failure(excinfo)


def folder_profiles(node) -> dict | None:
    """The execution profiles a suite of ``node``'s folder may name: the built-ins and what the plugins' and the
    ``pytest_sqleval_execution_profiles`` of the conftest.py files of its folder and above made of them, as pytest
    applies a conftest.py's hooks (None: every implementation applies here, so the session's table). A conftest.py
    of another folder, which pytest loads before or after this suite as the folders sort, changes nothing here: a
    suite's profile never depends on the order of collection."""
    here = node.ihook.pytest_sqleval_execution_profiles.get_hookimpls()
    if len(here) == len(node.config.hook.pytest_sqleval_execution_profiles.get_hookimpls()):
        return None
    from .state import PROFILES_AT_CONFIGURE_KEY

    at_configure = node.config.stash.get(PROFILES_AT_CONFIGURE_KEY, frozenset())
    # the order the session's table was made in: those present at configure as pluggy calls them, then the
    # conftest.py files found later in the order they were registered (a folder's after its parent's)
    ordered = [i for i in reversed(here) if i.plugin_name in at_configure]
    ordered += [i for i in here if i.plugin_name not in at_configure]
    profiles: dict = {}
    arguments = {"profiles": profiles, "config": node.config}
    for impl in ordered:
        impl.function(*(arguments[name] for name in impl.argnames))
    return profiles


def _check_unique_name(suite: Suite, state) -> None:
    """Two files with one suite name would share `<suite>::<id>` predictions, baseline pairs and the overall
    figures (their interactions merged): an error naming both files. `overall` names the figure across suites (its
    gates, `overall:METRIC` options and report blocks), so no suite may take it."""
    if suite.name == "overall":
        raise SuiteError(
            "the suite name 'overall' is reserved for the figure across all suites (`overall:METRIC` thresholds and "
            "baseline gates could not name this suite)", path=suite.path, line=1,
            fix="give the suite another name with `suite: <name>` (the default name is the file's stem)")
    composed = unicodedata.normalize("NFC", suite.name)
    for other in state.suites.values():
        if other.path == suite.path:
            continue
        if other.name == suite.name:
            raise SuiteError(
                f"the suite name {suite.name!r} is already used by {other.path}",
                path=suite.path, line=1,
                fix="give each suite file its own `suite:` name (reports, baselines and `<suite>::<id>` predictions "
                    "tell suites apart by name; the default name is the file's stem)",
            )
        if unicodedata.normalize("NFC", other.name) == composed:  # `café` with é in one file, e + U+0301 in another
            raise SuiteError(
                f"the suite name {suite.name!r} is {other.name!r} of {other.path} written with other Unicode "
                f"characters ({ascii(suite.name)} and {ascii(other.name)}): one name to a reader, two to reports, "
                "baselines and `<suite>::<id>` predictions",
                path=suite.path, line=1,
                fix="rename one of the suites (or write both names alike: an editor's NFC normalisation would make "
                    "them the same name)",
            )


def _check_r_ves_computed(suite: Suite, state) -> None:
    """R-VES times queries only when asked: a pass_if on `r_ves` without it would miss every case silently."""
    if "r_ves" in suite.pass_if.metrics and not (suite.efficiency or state.evaluator.efficiency):
        raise SuiteError(
            f"pass_if `{suite.pass_if}` uses r_ves, which is computed only when queries are timed for R-VES",
            path=suite.path,
            fix="run with --sqleval-efficiency (ini `sqleval_efficiency = true`) or give the suite `efficiency: true`",
        )


def _add_markers(item: pytest.Item, case: Case, suite: Suite, markers: _MarkerRegistry) -> None:
    item.add_marker(pytest.mark.sqleval(suite=suite.name, case=case.id))
    for tag in case.tags:
        markers.register(tag)
        item.add_marker(tag)


class _MarkerRegistry:
    """Registers each case tag as a marker once (the ini's markers read once per suite file, not per tag per case)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.known: set[str] | None = None

    def register(self, name: str) -> None:
        if self.known is None:
            self.known = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in self.config.getini("markers")}
        if name not in self.known:
            self.config.addinivalue_line("markers", f"{name}: sqleval case tag")
            self.known.add(name)


class CaseItem(pytest.Function):
    """One case (or interaction turn) of a suite."""

    _sqleval_fast: FastSetup | None = None

    def __init__(self, *, case: Case, suite: Suite, prediction: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if case.interaction is not None:  # `c1[3]` as pytest parses it back (--lf, cache): names ('c1',), params '3'
            self._id = self.parent.id.child(case.interaction).with_params(str(case.turn))
        self.case = case
        self.suite = suite
        self.prediction = prediction

    setup = item_setup  # pytest's fixture setup, or the same fixtures computed directly (fast_setup.py)

    def reportinfo(self):
        return self.suite.path, self.case.line - 1, f"sqleval: {self.case.id}"

    def repr_failure(self, excinfo, style=None):  # pytest 9 passes only excinfo; older pytest may pass style
        error = excinfo.value
        if isinstance(error, CaseMissed):
            return render_miss(error.record, verbose=True)
        if isinstance(error, GoldBroken):
            return f"{self.suite.path}:{self.case.line}: case {self.case.id}: broken gold: {error}"
        if isinstance(error, (SuiteError, GoldError, DatabaseError)):
            return suite_problem_message(self, error)
        if not wants_traceback(self.config):
            return f"{self.suite.path}:{self.case.line}: case {self.case.id}: {internal_error_message(error)}"
        if isinstance(error, CaseErrored):
            excinfo = pytest.ExceptionInfo.from_exception(error.error)
        return super().repr_failure(excinfo)


def run_sqleval_case(request, sqleval_case, sqleval_engine, sqleval_gold, sqleval_prediction):
    """The body of every suite item: evaluate the prediction and record the verdict."""
    item = request.node
    state = sqleval_state(request.config)
    engines = state.case_engines(sqleval_case, sqleval_engine, engine_factory_of(request))
    if state.settings.check_gold:
        return check_gold_case(item, state, engines, sqleval_gold)
    chosen = sqleval_prediction.resolve()  # predictions file > model > `predicted:` (pytest_sqleval/model_plugin.py)
    item.prediction = chosen.sql
    try:
        record = score_case(item, state, engines, sqleval_gold, chosen,
                            database=state.database_label(sqleval_case, sqleval_engine))
    except DatabaseError as exc:  # the server went away while the prediction ran: the suite's error, not a miss
        record = {**error_record(item.case, item.suite, item.prediction, state, "database", str(exc),
                                 prepared=sqleval_gold), **chosen.record_fields()}
        item.sqleval_record = record
        _case_result(item, state, sqleval_gold, record, chosen)
        raise
    except (Exception, RecursionError, MemoryError) as exc:  # noqa: BLE001 - one case never takes the run down
        # the model's call was made (and paid) all the same: its fields stay, so the usage and cost count it
        record = {**errored_record(item, state, sqleval_gold, exc), **chosen.record_fields()}
        item.sqleval_record = record
        _case_result(item, state, sqleval_gold, record, chosen)
        raise CaseErrored(record, exc) from None
    record["outcome"] = decide_outcome(record, strict=state.settings.strict)
    item.sqleval_record = record
    _case_result(item, state, sqleval_gold, record, chosen)
    if record["outcome"] == "failed":
        raise CaseMissed(record)


def _case_result(item, state, prepared, record: dict[str, Any], chosen) -> None:
    """``pytest_sqleval_case_result``. A streaming reporter that raises makes the case an error naming it, so
    pytest, the summary and the reports agree (not a case the report passes and pytest fails)."""
    hook = item.ihook.pytest_sqleval_case_result  # a conftest.py's hooks for the suites of its folder, as pytest's
    if not hook.get_hookimpls():  # the plugin implements none: nothing streams the record
        return
    try:
        # a copy: the hook streams the record, it cannot change the verdicts the reports and aggregates read after it
        hook(record=_copied(record), item=item, config=item.config)
    except Exception as exc:  # noqa: BLE001 - one case never takes the run down
        from .hookspec import hook_failure

        error = UserHookError(hook_failure(hook, exc))
        item.sqleval_record = {**errored_record(item, state, prepared, error), **chosen.record_fields()}
        raise CaseErrored(item.sqleval_record, error) from exc


def _copied(record: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a record (a shallow one if a user's value in it cannot be copied)."""
    import copy

    try:
        return copy.deepcopy(record)
    except Exception:  # noqa: BLE001 - a value of a user's score_case hook (a lock, a generator) that cannot be copied
        return dict(record)


def score_case(item, state, engines, prepared, chosen, *, database: str | None) -> dict[str, Any]:
    """Every ``pytest_sqleval_score_case`` implementation (the built-in scoring first), then ``pass_if``."""
    from .evaluate import rule_holds
    from .record import ScoreContext, record_problem
    from .registry import active_registry, check_case_value

    suite = item.suite
    limits = case_limits(state, suite)
    context = ScoreContext(engines=engines, dialect=prepared.dialect, limits=limits, prepared=prepared,
                           evaluator=state.evaluator, database=database, prediction_error=chosen.query_error)
    # where the prediction came from (the model, its tokens, latency and cost, a predictor's extra keys): in the
    # record before the hooks run, so a metric of the user's may read them
    prediction_fields = chosen.record_fields()
    record: dict[str, Any] = dict(prediction_fields)
    hook = item.ihook.pytest_sqleval_score_case  # a conftest.py scores the suites of its folder (and below) only
    try:
        returned = hook(case=item.case, suite=suite, prediction=item.prediction, record=record, context=context,
                        config=item.config)
    except Exception as exc:
        from .hookspec import hook_failure, user_hook_raised

        if user_hook_raised(hook, exc):  # the user's scoring raised: name it (ours: an internal error)
            raise UserHookError(hook_failure(hook, exc)) from exc
        raise
    odd = [value for value in returned or () if value is not record]
    if odd:  # `return {"m": 1.0}` sets nothing: said, not a metric silently missing from every report
        from .hookspec import hook_implementers, shown_value

        raise UserHookError(f"{hook_implementers(hook)} returned {shown_value(odd[0])}, which sets nothing: set the "
                            "case's values in the record it is given (record['my_metric'] = value)")
    registry = active_registry()
    checked = registry.user_case_metrics()
    users = [who for who, ran in (("a pytest_sqleval_score_case hook", len(hook.get_hookimpls()) > 1),
                                  ("a metric's score()", bool(registry.scored()))) if ran]
    if users:  # a user's hook, or a metric's own score() (given the live record), ran after the built-in
        checked = registry.case_metrics()  # scoring: it may have left a built-in a value no aggregate takes
        problem = record_problem(record)  # or changed the record's own keys: this case's error, not a crash later
        if problem is not None:
            raise UserHookError(f"{' or '.join(users)} left {problem}")  # the user's doing, not ours
    for metric in checked:  # a user's metric left a value the aggregates can use (none: nothing to do)
        check_case_value(metric, record)
    for key in prediction_fields:  # after the scores, where they have always been (the JUnit property's order)
        if key in record:
            record[key] = record.pop(key)
    record["passed_rule"] = rule_holds(suite, record)
    return record


def case_limits(state, suite: Suite) -> dict[str, Any]:
    """The limits a suite's queries run under: timeout, row cap, memory cap and the user's allowed functions."""
    return {"timeout": state.timeout_for(suite), "max_rows": state.max_rows_for(suite),
            "max_memory": state.max_memory_for(suite), "allow_functions": state.allowed_functions_for(suite)}


def check_gold_case(item: CaseItem, state, engines, prepared) -> None:
    """``--sqleval-check-gold``: findings on the gold instead of scoring the prediction."""
    from .evaluate import base_record, text_errors
    from .goldcheck import Finding, check_gold, findings_record
    from .sql.rewrite import gold_rewrite

    findings: list[Finding] = []
    options = item.suite.execution
    golds = item.case.accepted_golds or (item.case.gold,)  # expected rows: their vacuity and size only
    for number, (gold, runs) in enumerate(zip(golds, (prepared.gold, *prepared.alternatives)), start=1):
        # the stability re-run repeats what the first run executed (test-suite's DISTINCT stripping and decoding)
        ran_sql = gold_rewrite(gold, options, prepared.dialect) if gold else gold
        for run, engine in zip(runs, engines):
            for finding in check_gold(gold, run.result, engine, dialect=prepared.dialect,
                                      timeout=state.timeout_for(item.suite), max_rows=state.max_rows_for(item.suite),
                                      size_threshold=state.settings.gold_size, ran_sql=ran_sql,
                                      text_errors=text_errors(options)):
                where = [f"gold #{number}"] if len(golds) > 1 else []
                where += [run.database] if len(engines) > 1 else []
                if where:
                    finding = Finding(finding.kind, finding.severity, f"{', '.join(where)}: {finding.message}")
                findings.append(finding)
    record = base_record(item.case, item.suite, item.prediction, prepared, database=state.database_label(item.case))
    record.update(findings_record(findings))
    record["outcome"] = decide_outcome(record, strict=state.settings.strict)
    item.sqleval_record = record
    if record["outcome"] == "failed":
        raise GoldBroken(record)
