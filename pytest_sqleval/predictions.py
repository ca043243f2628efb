"""Predictions from a JSON Lines file, matched to cases by id and never by position.

Each line is ``{"id": "<case id>", "sql": "..."}``; a turn of an interaction is
addressed as ``<interaction id>/<turn>``; ids are read without the white space around them, as the suite
loader reads a case's ``id:``. ``"sql": null`` records that the model
produced nothing (the case misses with reason ``no_prediction``). Blank lines
are allowed. Bytes that are not UTF-8 (and lone surrogates such as a JSON
``"\ud800"``) are kept in ``sql`` as surrogates, so the guard scores the
prediction as a ``syntax`` miss ("the prediction is not valid UTF-8 text")
instead of breaking the run; :func:`printable_text` is what reports show (each
bad character replaced by U+FFFD). A line nested too deeply, an id given both
as ``a`` and ``<suite>::a`` for the same case, and duplicate ids are errors
naming the file and the lines.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .errors import SuiteError

_SURROGATES = re.compile("[\ud800-\udfff]")


def is_valid_text(text: str) -> bool:
    """Is ``text`` encodable as UTF-8 (no lone surrogates)?"""
    return _SURROGATES.search(text) is None


def printable_text(text: str | None) -> str | None:
    """``text`` with every character that is not valid UTF-8 (a lone surrogate) replaced by U+FFFD."""
    if text is None or is_valid_text(text):
        return text
    return _SURROGATES.sub("\ufffd", text)


def _printable(value: Any) -> Any:
    if isinstance(value, str):
        return printable_text(value)
    if isinstance(value, dict):
        return {printable_text(str(k)): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value


@dataclass(frozen=True)
class Prediction:
    case_id: str
    sql: str | None
    line: int
    #: Any other keys of the line (raw_output, model, tokens, ...): kept in the case record as `prediction_extra`.
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: The id as the line wrote it (``case_id`` is it without surrounding white space, as suites read `id:`).
    written_id: str = ""


def read_predictions_file(path: str | Path, option: str = "--sqleval-predictions") -> bytes:
    """The bytes of a predictions file, read once: a pipe (``<(jq ...)``, a FIFO) cannot be read again, so an xdist
    controller hands them to its workers; ``option`` names where its path was given (for a file it cannot read)."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise SuiteError(f"cannot read the predictions file: {exc.strerror}", path=Path(path),
                         fix=f"pass an existing JSON Lines file to {option}") from None


def load_predictions(path: str | Path, option: str = "--sqleval-predictions",
                     raw: bytes | None = None) -> dict[str, Prediction]:
    """The predictions of a JSON Lines file (of ``raw``, its bytes already read, when given)."""
    path = Path(path)
    if raw is None:
        raw = read_predictions_file(path, option)
    predictions: dict[str, Prediction] = {}
    raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark (Windows tools write one): not part of line 1
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # PowerShell 5's `>` writes UTF-16: not JSON Lines' UTF-8
        raise SuiteError("the predictions file is UTF-16 text, not UTF-8", path=path, line=1,
                         fix="save it as UTF-8 (PowerShell: `... | Out-File -Encoding utf8 preds.jsonl`; "
                             "Python: open(path, 'w', encoding='utf-8'))")
    for number, line_bytes in enumerate(raw.splitlines(), start=1):
        line = line_bytes.decode("utf-8", errors="surrogateescape").strip()
        if not line:
            continue
        try:
            prediction = _parse_line(path, number, line)
        except SuiteError:
            _refuse_multiline_json(path, raw, number)
            raise
        if prediction.case_id in predictions:
            first = predictions[prediction.case_id]
            written = (f" (written {first.written_id!r} on line {first.line} and {prediction.written_id!r} on line "
                       f"{number}; ids are read without the white space around them, as the suites' `id:` values)"
                       if first.written_id != prediction.written_id else "")
            raise SuiteError(f"duplicate prediction for case {prediction.case_id!r} (first on line {first.line})"
                             + written, path=path, line=number, fix="keep one prediction per case id")
        predictions[prediction.case_id] = prediction
    if not predictions:  # every case would miss with no_prediction: a broken pipeline, not a model's score of 0
        raise SuiteError("the predictions file holds no predictions (it is empty or has only blank lines)",
                         path=path, fix='check that the model\'s predictions were written; write one '
                                        '{"id": "case-id", "sql": "SELECT ..."} per line ("sql": null for a case '
                                        'the model left unanswered)')
    return predictions


def _refuse_multiline_json(path: Path, raw: bytes, number: int) -> None:
    """A file that is one JSON value spread over several lines (``json.dump(..., indent=2)``) gets its own message."""
    if len(raw.strip().splitlines()) < 2:
        return
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return
    if isinstance(data, (list, dict)):
        what = "a JSON array" if isinstance(data, list) else "one JSON object"
        raise SuiteError(f"the file is {what} spread over several lines, not JSON Lines", path=path, line=number,
                         fix='write one object per line: {"id": "case-id", "sql": "SELECT ..."} '
                             "(json.dumps(p) for each prediction, no indent=)")


def _parse_line(path: Path, number: int, line: str) -> Prediction:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        if line.split(None, 1)[0].upper() in ("SELECT", "WITH"):  # the official format: one SQL per line, by position
            raise SuiteError("not valid JSON: this is one SQL per line (the official Spider/SParC format), "
                             "not JSON Lines matched by id", path=path, line=number,
                             fix=f"convert it with `sqleval import spider|sparc|cosql SRC -o DIR --predictions {path}` "
                                 "(it writes DIR/predictions.jsonl), or write one object per line: "
                                 '{"id": "case-id", "sql": "SELECT ..."}') from None
        raise SuiteError(f"not valid JSON: {exc.msg} (column {exc.colno})", path=path, line=number,
                         fix='write one object per line: {"id": "case-id", "sql": "SELECT ..."}') from None
    except RecursionError:
        raise SuiteError("the JSON is nested too deeply to read", path=path, line=number,
                         fix='write one flat object per line: {"id": "case-id", "sql": "SELECT ..."}') from None
    except ValueError:  # Python's limit on the digits of an integer (sys.get_int_max_str_digits(), 4300)
        raise SuiteError(f"the JSON has a number longer than the {sys.get_int_max_str_digits()} digits Python reads",
                         path=path, line=number,
                         fix='write one object per line with short values: {"id": "case-id", "sql": "SELECT ..."}'
                         ) from None
    if isinstance(data, list):
        raise SuiteError("the line is a JSON array; the predictions file is JSON Lines, one object per line",
                         path=path, line=number,
                         fix='write one object per line: {"id": "case-id", "sql": "SELECT ..."}')
    if not isinstance(data, dict) or "id" not in data or "sql" not in data:
        found = ""
        if isinstance(data, dict):  # `{"ID": ..., "SQL": ...}`, `{"question_id": ..., "query": ...}`: say what it has
            keys = ", ".join(printable_text(json.dumps(str(k))) or "" for k in list(data)[:8])
            cased = any(str(k).lower() in ("id", "sql") and k not in ("id", "sql") for k in data)
            found = f" (it has {keys or 'no keys'}{'; the names are lower case' if cased else ''})"
        raise SuiteError(f"each line needs the keys \"id\" and \"sql\"{found}", path=path, line=number,
                         fix='write one object per line: {"id": "case-id", "sql": "SELECT ..."}')
    case_id, sql = data["id"], data["sql"]
    if isinstance(case_id, bool) or not isinstance(case_id, (str, int)):
        raise SuiteError(f"\"id\" must be a string, not {printable_text(repr(case_id))}", path=path, line=number,
                         fix='write the case id as text: {"id": "case-id", "sql": "SELECT ..."}')
    if isinstance(case_id, str) and not is_valid_text(case_id):
        raise SuiteError(f"\"id\" is not valid UTF-8 text: {printable_text(case_id)!r}", path=path, line=number,
                         fix="write the case id as plain UTF-8 text")
    if sql is not None and not isinstance(sql, str):
        raise SuiteError(f"\"sql\" must be a string or null, not {type(sql).__name__}", path=path, line=number,
                         fix='write the SQL as a JSON string, or "sql": null when the model gave none')
    written = str(case_id)
    case_id = _trimmed_id(written)
    if not case_id:
        raise SuiteError(f"\"id\" is empty{'' if not written else f' (only white space: {written!r})'}",
                         path=path, line=number, fix='write the case id: {"id": "case-id", "sql": "SELECT ..."}')
    extra = _printable({str(k): v for k, v in data.items() if k not in ("id", "sql")})
    return Prediction(case_id=case_id, sql=sql, line=number, extra=extra, written_id=written)


def _trimmed_id(written: str) -> str:
    """A prediction id as the suite loader reads a case's `id:`: without the white space around it (`" q1 "` and
    `"q1\\t"` are `q1`); in `<suite>::<id>` each side is trimmed (`"s :: q1"` is `s::q1`)."""
    suite, sep, case_id = written.partition("::")
    if sep and suite.strip():
        return f"{suite.strip()}::{case_id.strip()}"
    return written.strip()


def unmatched_ids(predictions: dict[str, Prediction], case_ids: set[str]) -> list[str]:
    """Prediction ids that address no known case, in file order."""
    return [p.case_id for p in sorted(predictions.values(), key=lambda p: p.line) if p.case_id not in case_ids]


def unicode_twins(unknown: list[str], case_ids: set[str]) -> str:
    """A note for unmatched ids that are a case's id written with other Unicode characters (``café`` with e + U+0301
    for the case's é): they look identical in the message, so it says why they do not match. Empty if none."""
    composed = {unicodedata.normalize("NFC", case_id): case_id for case_id in case_ids}
    twins = [(pid, composed[key]) for pid in unknown
             if (key := unicodedata.normalize("NFC", pid)) in composed and composed[key] != pid]
    if not twins:
        return ""
    shown = "; ".join(f"{ascii(pid)} is the case id {ascii(case_id)} in another Unicode form" for pid, case_id in twins[:5])
    return f" ({shown}: write the ids with the same characters as the suite, e.g. NFC-normalised)"


def turn_hints(unknown: list[str], case_ids: set[str]) -> str:
    """A note for unmatched ids that address an interaction's turn otherwise than as ``<interaction>/<n>``
    counted from 1: the item id's ``conv[2]``, a 0-based ``conv/0`` (SParC's files count interactions from 0), or
    the interaction's own id. Empty if none."""
    hints = []
    for pid in unknown:
        base, bracket, rest = pid.rpartition("[")
        if bracket and rest.endswith("]") and f"{base}/{rest[:-1]}" in case_ids:
            hints.append(f"{pid} is the test item's id: the prediction's id is {base}/{rest[:-1]}")
        elif pid.endswith("/0") and f"{pid[:-2]}/1" in case_ids:
            hints.append(f"turns are counted from 1: the first turn of {pid[:-2]} is {pid[:-2]}/1")
        elif f"{pid}/1" in case_ids:
            hints.append(f"{pid} is an interaction: give each turn a line of its own ({pid}/1, {pid}/2, ...)")
    return f" ({'; '.join(hints[:5])})" if hints else ""


def conflicting_ids(predictions: dict[str, Prediction], qualified_ids: set[str]) -> list[str]:
    """Messages for a case addressed twice in one file, as ``a`` and as ``<suite>::a`` (both lines named).

    ``qualified_ids`` are the collected cases' ``<suite>::<id>`` names.
    """
    messages = []
    for prediction in sorted(predictions.values(), key=lambda p: p.line):
        suite, sep, case_id = prediction.case_id.partition("::")
        if not sep or prediction.case_id not in qualified_ids:
            continue
        plain = predictions.get(case_id)
        if plain is not None:
            first, second = sorted((plain, prediction), key=lambda p: p.line)
            messages.append(f"case {case_id!r} of suite {suite!r} has two predictions: {first.case_id!r} on line "
                            f"{first.line} and {second.case_id!r} on line {second.line}")
    return messages
