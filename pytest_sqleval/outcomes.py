"""A case's outcome: decided once (:func:`decide_outcome`), reported to pytest (test status, the report's
record, short failure text) and, for a case that could not be scored, its ``error`` record.

Outcomes: ``passed``; ``missed`` (a miss: reported as passed with the status ``missed``, it does not fail the
run); ``failed`` (a miss under ``--sqleval-strict``, or a broken gold under ``--sqleval-check-gold``);
``flagged`` (a suspicious gold under ``--sqleval-check-gold``); ``error`` (the gold, the database or the
scoring failed, or the worker crashed).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .errors import UserHookError
from .state import STATE_KEY
from .suite_files import is_suite_node_path

if TYPE_CHECKING:  # pragma: no cover - registered in every run: the heavy modules load only when sqleval is enabled
    from .suite import Case, Suite

#: ``--sqleval-check-gold``: the gold's status decides the case's outcome.
GOLD_CHECK_OUTCOMES = {"clean": "passed", "flagged": "flagged", "broken": "failed"}


def decide_outcome(record: dict[str, Any], *, strict: bool, scored: bool = True) -> str:
    """The one place a case's outcome is decided. ``scored=False``: the case could not be scored (``error``);
    a gold check's record (``gold_status``): its status; otherwise ``pass_if`` (``passed_rule``) passes, and a
    miss is ``failed`` under ``--sqleval-strict``, ``missed`` without."""
    if not scored:
        return "error"
    if "gold_status" in record:
        return GOLD_CHECK_OUTCOMES[record["gold_status"]]
    if record["passed_rule"]:
        return "passed"
    return "failed" if strict else "missed"


class GoldBroken(Exception):
    """A gold that gave different results on two runs (``--sqleval-check-gold``)."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        super().__init__("; ".join(f["message"] for f in record["gold_findings"] if f["severity"] == "broken"))


class CaseErrored(Exception):
    """A case whose scoring raised (a bug of ours, recursion, memory): recorded as an error, the run goes on."""

    def __init__(self, record: dict[str, Any], error: BaseException) -> None:
        self.record = record
        self.error = error
        super().__init__(internal_error_message(error))


def internal_error_message(error: BaseException) -> str:
    """A short, one-line account of an unexpected exception (no traceback, no case objects)."""
    if isinstance(error, CaseErrored):
        error = error.error
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    from .registry import MetricError

    # names the user's implementation, or the user's metric whose score() raised or whose value no aggregate takes
    if isinstance(error, (UserHookError, MetricError)):
        return f"{text[:300]}; run with --tb=long for the traceback"
    if isinstance(error, RecursionError):
        text = "nested too deeply to score"
    elif isinstance(error, MemoryError):
        text = "ran out of memory while scoring"
    text = text[:300]
    detail = f"{type(error).__name__}{': ' + text if text else ''}"
    return f"internal error while scoring ({detail}); run with --tb=long for the traceback"


def wants_traceback(config: pytest.Config) -> bool:
    """``--tb=long``/``native`` or ``-vv``: show an unexpected error's traceback instead of its one line."""
    return config.getoption("tbstyle", "auto") in ("long", "native") or config.getoption("verbose", 0) >= 2


class CaseMissed(Exception):
    """Raised for a miss under ``--sqleval-strict``, so the miss becomes a failure."""

    def __init__(self, record: dict[str, Any]) -> None:
        from .report.diff import miss_reason

        self.record = record
        super().__init__(miss_reason(record))


def sqleval_record(report: pytest.TestReport) -> dict[str, Any] | None:
    """The case record a report carries (an attribute of the report: it travels with it to the xdist
    controller, and JUnit and other consumers see clean data rather than a repr in ``user_properties``)."""
    return getattr(report, "sqleval_record", None)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    if report.when == "call" and report.passed:
        record = sqleval_record(report)
        if record is not None and record.get("outcome") == "missed":
            return "missed", "m", ("MISSED", {"yellow": True})
        if record is not None and record.get("outcome") == "flagged":
            return "flagged", "g", ("FLAGGED", {"yellow": True})
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if getattr(item, "case", None) is None:
        return report
    record = getattr(item, "sqleval_record", None)
    if report.when == "call" and record is not None:
        report.sqleval_record = record
    elif report.failed and report.when != "teardown" and record is None:
        report.sqleval_record = item.sqleval_record = _error_record(item, call, report)
        if call.excinfo is not None and report.when != "call":
            report.longrepr = _short_failure(item, call.excinfo)
    return report


def _short_failure(item, excinfo) -> Any:
    """A broken gold or database is a plain message; an unexpected error a one-line account (the
    traceback with ``--tb=long`` or ``-vv``)."""
    error = excinfo.value
    where = f"{item.suite.path}:{item.case.line}: case {item.case.id}"
    if _is_suite_problem(error):
        return suite_problem_message(item, error)
    if wants_traceback(item.config):
        return item._repr_failure_py(excinfo, style="long")
    return f"{where}: {_user_code_failure(excinfo) or internal_error_message(error)}"


_PACKAGE_DIR = Path(__file__).resolve().parent


def _user_code_failure(excinfo) -> str | None:
    """A fixture of the user's (a conftest's autouse fixture, an override of ``sqleval_engine``) that raised in a
    case's setup: named with its file and line, rather than read as an internal error of the plugin. None when the
    innermost frame outside the installed libraries is the plugin's own (or there is none)."""
    import sysconfig

    libraries = {Path(p).resolve() for p in {sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib")}}
    for entry in reversed(excinfo.traceback):
        path = Path(str(entry.path)).resolve()
        if _PACKAGE_DIR in path.parents:
            return None
        if any(lib in path.parents for lib in libraries) or not path.is_file():
            continue
        error = excinfo.value
        text = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
        return (f"setup failed in your code at {path}:{entry.lineno + 1} ({entry.name}): {type(error).__name__}"
                f"{': ' + text if text else ''}; run with --tb=long for the traceback")
    return None


#: The kinds of a gold the engine refused or failed to run (its other failures, a timeout or the row cap, say their
#: own fix).
_GOLD_SQL_FAILED = frozenset({"syntax", "runtime"})


def suite_problem_message(item, error: BaseException) -> str:
    """``file:line: case id: message`` for a broken gold or database, with the fix for a gold that fails to run."""
    from .errors import GoldError

    text = f"{item.suite.path}:{item.case.line}: case {item.case.id}: {error}"
    kind = getattr(error, "kind", None) if isinstance(error, GoldError) else None
    empty = _empty_database_files(item.case) if kind in _GOLD_SQL_FAILED else []
    if empty:
        text += (f"\n  fix: the database file {empty[0]} is empty (0 bytes): SQLite reads it as a database without "
                 "tables, so the gold cannot run on it; point `database:` at the built database (an empty file is "
                 "what a mistyped `sqlite3 NAME` or a failed copy leaves)")
    elif kind in _GOLD_SQL_FAILED:
        text += (f"\n  fix: correct the gold SQL of case {item.case.id} so that it runs on its database (or give the "
                 "case the database it was written for); a broken gold is the suite's error, never the model's miss")
    elif kind == "rejected" and _duckdb_refused_a_plain_query(item.case):
        text += (f"\n  fix: the gold SQL of case {item.case.id} is one read-only query; what it reads does more: a view "
                 "(or macro) of the DuckDB database reads a file (read_csv, read_parquet, ...), and every connection "
                 "the plugin opens has file access off, so that no prediction reads files: load the data into a "
                 "table in the setup script instead (`CREATE TABLE v AS SELECT * FROM read_csv(...)`)")
    elif kind == "rejected":  # two statements, a write
        text += (f"\n  fix: the gold SQL of case {item.case.id} must be one read-only query (SELECT or WITH ... "
                 "SELECT, no `;` between statements): split several queries into cases of their own (or, when "
                 "each is a right answer, list them as a block list under `gold:`, one query per `- `), and build "
                 "the data with the database's `setup:` scripts, not a write in the gold")
        if any(spec.dialect == "postgresql" for spec in item.case.databases):
            # PostgreSQL refuses a table the URL's user may not read with the same kind (SQLSTATE 42501)
            text += ("; if the message says `permission denied`, the URL's user may not read a table the gold "
                     "reads: GRANT SELECT on it to that user, or connect as one who may")
    elif getattr(error, "fix", None):  # a database the opener could say more about (DatabaseError.fix)
        text += f"\n  fix: {error.fix}"
    return text


def _duckdb_refused_a_plain_query(case) -> bool:
    """A case on DuckDB whose every gold passes the guard (one query calling pure functions only), so that the read-only
    connection refused what the database defines (a view over a file), not the gold's own text."""
    from .errors import QueryError
    from .sql.guard import check_prediction

    if not any(spec.dialect == "duckdb" for spec in case.databases):
        return False
    golds = case.accepted_golds
    try:
        for gold in golds:
            check_prediction(gold, "duckdb")
    except (QueryError, RecursionError):
        return False
    return bool(golds)


def _empty_database_files(case) -> list:
    """The case's SQLite database files of 0 bytes (not built by setup scripts)."""
    empty = []
    for spec in case.databases:
        path = spec.file_path if not spec.setup and spec.dialect == "sqlite" else None
        try:
            if path is not None and path.stat().st_size == 0:
                empty.append(path)
        except OSError:
            continue
    return empty


def _is_suite_problem(error: BaseException) -> bool:
    """A broken gold or database: shown as a plain message, never a traceback."""
    from .errors import DatabaseError, GoldError, SuiteError

    return isinstance(error, (DatabaseError, GoldError, SuiteError))


def _error_record(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> dict[str, Any]:
    """A case that could not be scored: its gold failed, its database could not be opened, or setup raised."""
    from .errors import DatabaseError, GoldError

    error = call.excinfo.value if call.excinfo else None
    kind = "gold" if isinstance(error, GoldError) else "database" if isinstance(error, DatabaseError) else "internal"
    if kind == "internal" and error is not None:
        message = (report.when == "setup" and _user_code_failure(call.excinfo)) or internal_error_message(error)
    else:
        message = str(error) if error else report.longreprtext
    return error_record(item.case, item.suite, item.prediction, item.config.stash.get(STATE_KEY, None), kind,
                        _masked(message))


def _masked(text: str) -> str:
    """No credentials in a record, whatever raised (see pytest_sqleval.secrets)."""
    from .secrets import mask_secrets

    return mask_secrets(text)


def crashed_case_record(state, rootpath: Path, nodeid: str, message: str) -> dict[str, Any] | None:
    """The ``error`` record of a case whose xdist worker crashed while running it (None: not a suite item)."""
    path, sep, name = nodeid.partition("::")
    if not sep or not is_suite_node_path(path):
        return None
    suite = state.suite_at(str((rootpath / path).resolve()))
    case = next((c for c in suite.cases if c.item_name == name), None)
    if case is None:
        return None
    return error_record(case, suite, None, state, "worker_crashed",
                        f"worker crashed: {message.strip().splitlines()[0][:300]}")


def errored_record(item: pytest.Item, state, prepared, error: BaseException) -> dict[str, Any]:
    """The record of a case whose scoring raised: outcome ``error``, kind ``internal``, a short message."""
    return error_record(item.case, item.suite, item.prediction, state, "internal", internal_error_message(error),
                        prepared=prepared)


def error_record(case: Case, suite: Suite, prediction: str | None, state, kind: str, message: str, *,
                 prepared=None) -> dict[str, Any]:
    """The one shape of a case that could not be scored (outcome ``error``): a broken gold or database, an
    exception while scoring, a crashed worker. ``state`` may be None (then no database label)."""
    from .evaluate import Prepared, base_record

    if prepared is None:
        prepared = Prepared(gold=(), schema=None, dialect="", difficulty=case.difficulty, difficulty_source="suite")
    database = state.database_label(case) if state is not None else None
    record = base_record(case, suite, prediction, prepared, database=database)
    record.update({
        "valid": None, "execution_match": None, "soft_f1": None, "exact_match": None, "passed_rule": False,
        "vacuous": False, "mismatch": None, "outcome": decide_outcome(record, strict=False, scored=False),
        "error": {"kind": kind, "message": message},
    })
    return record
