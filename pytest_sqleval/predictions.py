"""Predictions from a JSON Lines file, matched to cases by id and never by position.

Each line is ``{"id": "<case id>", "sql": "..."}``; a turn of an interaction is
addressed as ``<interaction id>/<turn>``. ``"sql": null`` records that the model
produced nothing (the case misses with reason ``no_prediction``). Blank lines
are allowed. Bytes that are not UTF-8 are kept (as surrogate escapes) so the
prediction can be scored as invalid instead of breaking the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .errors import SuiteError


@dataclass(frozen=True)
class Prediction:
    case_id: str
    sql: str | None
    line: int


def load_predictions(path: str | Path) -> dict[str, Prediction]:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SuiteError(f"cannot read the predictions file: {exc.strerror}", path=path,
                         fix="pass an existing JSON Lines file to --sqleval-predictions") from None
    predictions: dict[str, Prediction] = {}
    for number, line_bytes in enumerate(raw.splitlines(), start=1):
        line = line_bytes.decode("utf-8", errors="surrogateescape").strip()
        if not line:
            continue
        prediction = _parse_line(path, number, line)
        if prediction.case_id in predictions:
            first = predictions[prediction.case_id].line
            raise SuiteError(f"duplicate prediction for case {prediction.case_id!r} (first on line {first})",
                             path=path, line=number, fix="keep one prediction per case id")
        predictions[prediction.case_id] = prediction
    return predictions


def _parse_line(path: Path, number: int, line: str) -> Prediction:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SuiteError(f"not valid JSON: {exc.msg} (column {exc.colno})", path=path, line=number,
                         fix='write one object per line: {"id": "case-id", "sql": "SELECT ..."}') from None
    if not isinstance(data, dict) or "id" not in data or "sql" not in data:
        raise SuiteError("each line needs the keys \"id\" and \"sql\"", path=path, line=number,
                         fix='write one object per line: {"id": "case-id", "sql": "SELECT ..."}')
    case_id, sql = data["id"], data["sql"]
    if isinstance(case_id, bool) or not isinstance(case_id, (str, int)):
        raise SuiteError(f"\"id\" must be a string, not {case_id!r}", path=path, line=number)
    if sql is not None and not isinstance(sql, str):
        raise SuiteError(f"\"sql\" must be a string or null, not {type(sql).__name__}", path=path, line=number)
    return Prediction(case_id=str(case_id), sql=sql, line=number)


def unmatched_ids(predictions: dict[str, Prediction], case_ids: set[str]) -> list[str]:
    """Prediction ids that address no known case, in file order."""
    return [p.case_id for p in sorted(predictions.values(), key=lambda p: p.line) if p.case_id not in case_ids]
