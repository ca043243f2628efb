"""xdist: each test report travels from a worker to its controller as one pickled value.

xdist sends a report as the nested dict of ``pytest_report_to_serializable`` (every key, the keywords, the
location, the case record with its clause results), which execnet encodes in the worker and decodes in the
controller one value at a time in pure Python. On Spider's 972 cases (2,916 reports) that was ~0.15 s on each
side against ~0.025 s for pickle, and the controller's decoding thread competes with the workers for the
same cores. The dict is the same after the round trip (pickle keeps every type execnet keeps), and the
controller hands it to ``pytest_report_from_serializable`` as before, so every other plugin sees the same report.

Registered only when sqleval is enabled in an xdist run, in the workers and in the controller alike (they run
the same plugin); a report without the packed key (another plugin's, or a run without it) is left alone.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest

#: The one key of a packed report besides ``$report_type`` (and what xdist adds: item_index, worker_id, ...).
PACKED_KEY = "sqleval_packed_report"
#: Readable by every Python pytest-sqleval supports, also on a remote (``--tx ssh=...``) worker.
PICKLE_PROTOCOL = 4


class PackedReports:
    """The worker packs each test report's dict; the controller unpacks it before pytest reads it."""

    @pytest.hookimpl(wrapper=True)
    def pytest_report_to_serializable(self, config: pytest.Config, report) -> Any:
        data = yield
        if not isinstance(data, dict) or data.get("$report_type") != "TestReport":
            return data
        data = _users_values_as_json(data)
        try:
            packed = pickle.dumps(data, protocol=PICKLE_PROTOCOL)
        except Exception:  # noqa: BLE001 - a value a user's hook left in the record that cannot travel
            packed = pickle.dumps(_sendable(data), protocol=PICKLE_PROTOCOL)
        return {"$report_type": "TestReport", PACKED_KEY: packed}

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_from_serializable(self, config: pytest.Config, data: dict[str, Any]) -> Any:
        packed = data.get(PACKED_KEY)
        if packed is None:
            return None
        unpacked = pickle.loads(packed)  # noqa: S301 - from this run's own workers, which run our code
        unpacked.update((key, value) for key, value in data.items() if key != PACKED_KEY)
        return config.hook.pytest_report_from_serializable(config=config, data=unpacked)


def _users_values_as_json(data: dict[str, Any]) -> dict[str, Any]:
    """The report with the values a user's ``pytest_sqleval_score_case`` added to the case record (the keys that are
    not :class:`~pytest_sqleval.record.CaseRecord`'s) as the JSON report and JUnit write them:
    an object of a class defined in a folder's ``conftest.py`` (which the controller never imports) would fail to
    unpickle there, an INTERNALERROR, while the serial run writes its text."""
    record = data.get("sqleval_record")
    if not isinstance(record, dict):
        return data
    from .record import CaseRecord

    theirs = record.keys() - CaseRecord.__annotations__.keys()  # most reports: none, and nothing to copy
    converted = {key: _as_json(record[key]) for key in theirs}
    if all(converted[key] is record[key] for key in theirs):
        return data
    return {**data, "sqleval_record": {**record, **converted}}


def _as_json(value: Any) -> Any:
    from .report.json_values import json_primitive

    try:
        return json_primitive(value)
    except Exception:  # noqa: BLE001 - a str() that raises, a dict holding itself: left to pickle (and _sendable)
        return value


def _sendable(data: dict[str, Any]) -> dict[str, Any]:
    """The report without the case record's values pickle cannot send (a generator, an open connection: what a
    user's ``pytest_sqleval_score_case`` may leave there; the JSON report never carries such a value, and the
    worker's own hooks saw it). Anything else that cannot travel fails as before, naming itself."""
    record = data.get("sqleval_record")
    if not isinstance(record, dict):
        return data
    kept = {}
    for key, value in record.items():
        try:
            pickle.dumps(value, protocol=PICKLE_PROTOCOL)
        except Exception:  # noqa: BLE001 - left out, as the serial report leaves it out
            continue
        kept[key] = value
    return {**data, "sqleval_record": kept}
