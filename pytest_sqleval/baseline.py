"""Comparison with a baseline report: pairs of cases, per-metric deltas, intervals and paired tests.

A baseline is a ``sqleval-report/1`` JSON file (``--sqleval-json`` of the deployed model's run).
Cases are paired by (suite, id). For every per-case metric the comparison runs over the cases
scored in both runs (``n_pairs``): ``current`` and ``baseline`` are the metric over those pairs,
``delta`` = current - baseline, ``ci`` its 95% interval, ``p_value`` a two-sided paired test:

- 0/1 metrics (``execution_accuracy``, ``exact_match``, ``valid_syntax``, ``pass_rate``,
  ``test_suite_accuracy``; SParC's ``question_match`` paired by turn, ``interaction_match`` and
  ``interaction_execution_accuracy`` by interaction): the exact McNemar test on the discordant pairs; the interval of the
  difference of paired shares is the exact conditional one (Clopper-Pearson on the discordant pairs),
  which excludes 0 exactly when the McNemar test is significant at 0.05.
- means (``soft_f1``, ``bird_soft_f1``, ``r_ves``): the paired sign-flip permutation test; the
  interval is a seeded paired bootstrap of the mean difference.

Pure functions over report dicts: no pytest here.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .registry import Metric, MetricRegistry, active_registry
from .stats import bootstrap_mean, mcnemar_exact, paired_share_interval, sign_flip

SCHEMA = "sqleval-report/1"
PAIR_KINDS = ("fixed", "regressed", "still_missed", "still_passed", "new", "removed")
#: Options in the run metadata that change scores: a difference is worth a warning.
SCORE_OPTIONS = ("timeout", "max_rows", "strict", "max_memory", "database_url")


def paired_metrics(registry: MetricRegistry | None = None) -> tuple[str, ...]:
    """Metrics compared case by case, in report order: every per-case rate and mean of the registry, and the SParC
    metrics (``question_match`` turn by turn, ``interaction_match`` interaction by interaction)."""
    return tuple(m.name for m in _compared(registry))


def _compared(registry: MetricRegistry | None) -> list[Metric]:
    return [m for m in (registry or active_registry())
            if m.reported and m.kind in ("rate", "mean") and m.scope in ("case", "interaction")]


def _paired(registry: MetricRegistry | None) -> list[Metric]:
    return [m for m in (registry or active_registry()).case_metrics() if m.kind in ("rate", "mean")]


class ReportError(ValueError):
    """A report file that cannot be used, with the fix."""

    def __init__(self, path: str | Path, message: str, fix: str) -> None:
        self.path = str(path)
        self.fix = fix
        super().__init__(f"{path}: {message}\n  fix: {fix}")


_WRITE_IT = "write it with pytest --sqleval --sqleval-json PATH"


class ReportBytesError(ValueError):
    """Bytes that are not the text of a report (see :func:`report_text`): what they are, and the fix."""

    def __init__(self, problem: str, fix: str) -> None:
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem}; fix: {fix}")


_UTF8_BOM = b"\xef\xbb\xbf"


def report_text(data: bytes) -> str:
    """The text of a report file's bytes: unpacked when gzipped (a CI artifact kept as ``.json.gz``), decoded as
    UTF-8 with or without a byte-order mark (Windows tools write one), or as UTF-16 when it starts with that BOM
    (PowerShell 5's ``>``). A zip archive or other binary raises :class:`ReportBytesError`."""
    if data[:2] == b"\x1f\x8b":
        import gzip
        import zlib

        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise ReportBytesError(f"is gzipped but cannot be unpacked ({exc})",
                                   "download it again, or pass the unpacked JSON file") from None
    if data[:4] == b"PK\x03\x04":  # GitHub Actions hands artifacts out as zip files
        raise ReportBytesError("is a zip archive, not JSON", "unzip it and pass the JSON file inside")
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ReportBytesError(f"is not UTF-16 text, as its byte-order mark says (byte {exc.start})",
                                   "save it as UTF-8") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        where = exc.start + (len(_UTF8_BOM) if data.startswith(_UTF8_BOM) else 0)
        raise ReportBytesError(f"is not UTF-8 text (byte {where}: a compressed or binary file?)",
                               "unpack it and pass the JSON file itself") from None


def load_report(path: str | Path, *, role: str = "report") -> dict[str, Any]:
    """Read a ``sqleval-report/1`` JSON file (UTF-8 with or without a BOM, UTF-16 with one, or any of these
    gzipped); a ReportError names the file and the fix."""
    path = Path(path)
    write_it = _WRITE_IT
    try:
        text = report_text(path.read_bytes())
    except OSError as exc:
        raise ReportError(path, f"cannot read the {role}: {exc.strerror or exc}", f"pass an existing file; {write_it}") from None
    except ReportBytesError as exc:  # a zipped artifact, a binary file
        raise ReportError(path, f"the {role} {exc.problem}", f"{exc.fix}; {write_it}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        _refuse_predictions(path, text, role)
        raise ReportError(path, f"the {role} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                          f"pass the JSON file itself; {write_it}") from None
    except RecursionError:  # arrays or objects nested thousands deep: no report is
        raise ReportError(path, f"the {role} nests its JSON arrays or objects too deeply to be a report",
                          f"pass the JSON file itself; {write_it}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        _refuse_predictions(path, text, role)
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ReportError(path, f"the {role} is not a {SCHEMA} report (schema: {found!r})", write_it)
    for key in ("suites", "cases"):
        if not isinstance(data.get(key), list):
            raise ReportError(path, f"the {role} has no {key!r} list", write_it)
    return check_report(path, data, role=role)


def _refuse_predictions(path: Path, text: str, role: str) -> None:
    """A predictions file (``deployed.jsonl`` beside the report ``deployed.json``): JSON Lines, or a JSON list, of
    ``{id, sql}`` objects. Named as one, with the fix, instead of "Extra data (line 2, column 1)"."""
    first = text.lstrip().split("\n", 1)[0].strip()
    try:
        entry = json.loads(first)
    except (json.JSONDecodeError, RecursionError):
        try:
            entry = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return
    if isinstance(entry, list) and entry:
        entry = entry[0]
    if isinstance(entry, dict) and "sql" in entry and "schema" not in entry:
        fix = f"pass the --sqleval-json report of the deployed model's run ({_WRITE_IT})"
        if role != "baseline":
            fix = f"pass the --sqleval-json report of the run ({_WRITE_IT})"
        raise ReportError(path, f"the {role} is a predictions file ({{id, sql}} per case), not a report", fix)


def check_report(path: str | Path, data: dict[str, Any], *, role: str = "report") -> dict[str, Any]:
    """The checks of a parsed ``sqleval-report/1`` dict (with its ``suites`` and ``cases`` lists) that every reader
    relies on: the blocks are objects, each suite has a name, each case a suite and an id, once, and its compared
    scores are numbers. A ReportError names the file, the block or case, and the fix."""
    write_it = _WRITE_IT
    problem = _malformed_block(data)
    if problem:
        raise ReportError(path, f"the {role} {problem}", write_it)
    for number, entry in enumerate(data["suites"], start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ReportError(path, f"suite #{number} of the {role} has no name", write_it)
    seen: dict[tuple[str, str], int] = {}
    compared = _paired(None)
    for number, case in enumerate(data["cases"], start=1):
        if not isinstance(case, dict) or "suite" not in case or "id" not in case:
            raise ReportError(path, f"case #{number} of the {role} has no suite and id", write_it)
        key = (str(case["suite"]), str(case["id"]))
        if key in seen:  # the comparison would keep one of them, the aggregates count both
            raise ReportError(path, f"case #{number} ({key[0]}::{key[1]}) of the {role} is also case #{seen[key]}: "
                                    "a report holds each case once", write_it)
        seen[key] = number
        problem = _malformed_score(case, compared) or _malformed_turn(case)
        if problem:
            raise ReportError(path, f"case #{number} ({key[0]}::{key[1]}) of the {role} has {problem}", write_it)
    return data


#: The blocks of a report that are objects (null when absent), and the keys of ``run`` that are objects or lists.
_OBJECT_BLOCKS = ("run", "overall", "baseline", "metric_definitions")
_RUN_SHAPES = {"files": dict, "options": dict, "git": dict, "versions": dict, "prediction_files": list,
               "merge_warnings": list}


def _malformed_block(data: Mapping[str, Any]) -> str | None:
    """What is wrong with a block the comparison and the gates read (a hand-edited report), or None."""
    for block in _OBJECT_BLOCKS:
        if data.get(block) is not None and not isinstance(data[block], dict):
            return f"has a {block!r} block that is not an object ({type(data[block]).__name__})"
    if data.get("gates") is not None and not isinstance(data["gates"], list):
        return f"has a 'gates' block that is not a list ({type(data['gates']).__name__})"
    run = data.get("run") or {}
    for key, shape in _RUN_SHAPES.items():
        if run.get(key) is not None and not isinstance(run[key], shape):
            return f"has a run.{key} that is not {'an object' if shape is dict else 'a list'} ({type(run[key]).__name__})"
    if any(not isinstance(digest, str) for digest in (run.get("files") or {}).values()):
        return "has a run.files entry that is not a SHA-256 text"
    if run.get("shard") is not None:  # `sqleval merge` counts the shards by it, the warnings name it
        from .shard import ShardError, parse_shard

        try:
            if not isinstance(run["shard"], str):
                raise ShardError("")
            parse_shard(run["shard"])
        except ShardError:
            return f"has a run.shard that is not K/N, as --sqleval-shard writes it ({run['shard']!r})"
    gates = (run.get("options") or {}).get("gates")
    if gates is not None and not isinstance(gates, dict):
        return f"has a run.options.gates that is not an object ({type(gates).__name__})"
    return None


def _malformed_score(case: Mapping[str, Any], metrics: Sequence[Metric]) -> str | None:
    """A compared metric whose value is not null, true/false or a finite number (``"nan"``, ``"0.5"``), or None."""
    from .registry import MetricError, check_case_value

    record = dict(case)  # check_case_value may turn a number into Python's own type in place
    for metric in metrics:
        key = metric.case_key or metric.name
        try:
            check_case_value(metric, record)
        except MetricError:
            return f"{key} {case.get(key)!r}, not a {metric.kind} value (true/false, a finite number or null)"
    return None


def _malformed_turn(case: Mapping[str, Any]) -> str | None:
    """An interaction's turn whose ``interaction``, ``turn`` or ``interaction_turns`` is not what a run writes (a
    text, and whole numbers): the SParC aggregates and their baseline comparison group and count by them."""
    if case.get("interaction") is None:
        return None
    if not isinstance(case["interaction"], str):
        return f"interaction {case['interaction']!r}, not the interaction's id (a text)"
    for key in ("turn", "interaction_turns"):
        value = case.get(key)
        if value is not None and (type(value) is not int or value < 1):
            return f"{key} {value!r}, not a whole number of 1 or more"
    return None


def normalise_case(case: Mapping[str, Any]) -> dict[str, Any]:
    """Reports written before ``passed_rule`` was in the JSON: derive it from the outcome."""
    record = dict(case)
    if "passed_rule" not in record:
        record["passed_rule"] = None if record.get("outcome") == "error" else record.get("outcome") == "passed"
    return record


def _status(case: Mapping[str, Any]) -> str:
    outcome = case.get("outcome")
    if outcome == "passed":
        return "passed"
    if outcome in ("missed", "failed"):
        return "missed"
    return "error"


def compare_cases(current: Sequence[Mapping[str, Any]], baseline: Sequence[Mapping[str, Any]],
                  key=lambda c: str(c["id"])) -> dict[str, Any]:
    """One comparison entry: the pairs by kind and, per metric, the paired statistics."""
    base_by_key = {key(c): normalise_case(c) for c in baseline}
    cur_by_key = {key(c): normalise_case(c) for c in current}
    pairs: dict[str, list[str]] = {kind: [] for kind in PAIR_KINDS}
    errors: list[str] = []
    for k, case in cur_by_key.items():
        if k not in base_by_key:
            pairs["new"].append(k)
            continue
        now, then = _status(case), _status(base_by_key[k])
        if "error" in (now, then):
            errors.append(k)
        elif then == "passed":
            pairs["still_passed" if now == "passed" else "regressed"].append(k)
        else:
            pairs["fixed" if now == "passed" else "still_missed"].append(k)
    pairs["removed"] = [k for k in base_by_key if k not in cur_by_key]
    metrics: dict[str, Any] = {}
    both = (*cur_by_key.values(), *base_by_key.values())
    # the SParC metrics, per turn and per interaction (an interaction is qualified as its cases are: suite::talk)
    by_interaction = [_interaction_values(list(side.values()), key) for side in (cur_by_key, base_by_key)]
    unpaired: list[str] = []
    for metric in _compared(None):
        if metric.scope == "interaction":
            now, then = (side.get(metric.name, {}) for side in by_interaction)
            values = [(now[k], then[k]) for k in now if k in then]
            sides = (now.values(), then.values())
        else:
            if metric.present_when is not None and not any(metric.present_when(c) for c in both):
                continue  # as in the aggregates (test_suite_accuracy: only suites with several databases have it)
            values = [(metric.case_value(cur_by_key[k]), metric.case_value(base_by_key[k]))
                      for k in cur_by_key if k in base_by_key]
            sides = tuple((metric.case_value(c) for c in side.values()) for side in (cur_by_key, base_by_key))
        paired = [(c, b) for c, b in values if c is not None and b is not None]
        if paired:
            stats = metrics[metric.name] = paired_statistics(metric.kind, paired)
            if metric.direction == "lower" and "discordant" in stats:  # a lower-is-better rate: 0 -> 1 is worse
                stats["discordant"] = {"better": stats["discordant"]["worse"], "worse": stats["discordant"]["better"]}
        elif all(any(v is not None for v in side) for side in sides):
            unpaired.append(metric.name)  # scored on both sides, yet no case pairs: other case ids (renamed)
    entry: dict[str, Any] = {"pairs": pairs, "metrics": metrics,
                             "counts": {kind: len(ids) for kind, ids in pairs.items()}}
    if errors:
        entry["pairs_with_errors"] = errors
    if unpaired:
        entry["unpaired_metrics"] = unpaired
    return entry


def _interaction_values(cases: Sequence[Mapping[str, Any]], key) -> dict[str, dict[str, float]]:
    """The 0/1 values behind question_match (by turn) and interaction_match (by interaction), keyed as ``key``
    keys a case."""
    from .aggregate import interaction_values

    turns = [dict(c, interaction=key({**c, "id": c["interaction"]})) for c in cases if c.get("interaction") is not None]
    return interaction_values(turns, turn_key=key) if turns else {}


#: The level of every interval of a delta (95%): a mean's interval holds 0 when its paired test's p >= 1 - level.
CI_LEVEL = 0.95


def paired_statistics(kind: str, paired: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Current, baseline, delta, its interval and the paired test of a ``rate`` (McNemar) or ``mean`` (sign flip;
    also a rate whose values are not all 0/1)."""
    n = len(paired)
    current = math.fsum(c for c, _ in paired) / n
    baseline = math.fsum(b for _, b in paired) / n
    if kind == "rate" and any(v not in (0, 1) for pair in paired for v in pair):
        kind = "mean"  # a rate's values from 0 to 1 (not 0/1 verdicts): McNemar counts only flips; compare means
    if kind == "rate":
        fixed = sum(1 for c, b in paired if c and not b)
        regressed = sum(1 for c, b in paired if b and not c)
        interval = paired_share_interval(fixed, regressed, n)
        return {"current": current, "baseline": baseline, "delta": current - baseline,
                "ci": list(interval), "p_value": mcnemar_exact(regressed, fixed), "test": "mcnemar_exact",
                "n_pairs": n, "ci_method": "exact_conditional", "discordant": {"better": fixed, "worse": regressed}}
    if kind == "mean":
        diffs = [c - b for c, b in paired]
        lo, hi = bootstrap_mean(diffs)
        p_value = sign_flip(diffs)
        stats = {"current": current, "baseline": baseline, "delta": math.fsum(diffs) / n,
                 "ci": [lo, hi], "p_value": p_value, "test": "sign_flip",
                 "n_pairs": n, "ci_method": "paired_bootstrap"}
        if p_value >= 1 - CI_LEVEL and not lo <= 0 <= hi:
            # the test finds no difference at the interval's level, so 0 is a plausible delta: a percentile bootstrap
            # of few non-zero differences (all equal: zero width) would exclude it and contradict the p-value
            stats["ci"] = [min(lo, 0.0), max(hi, 0.0)]
            stats["ci_widened_to_zero"] = True
        return stats
    raise KeyError(kind)


def file_warnings(current_run: Mapping[str, Any] | None, baseline_run: Mapping[str, Any] | None) -> list[str]:
    """Suite, database, setup or schema files whose SHA-256 changed since the baseline (not the predictions files:
    a new model's predictions differ by design); score options that differ."""
    current_run = current_run or {}
    baseline_run = baseline_run or {}
    warnings: list[str] = []
    base_files, cur_files = baseline_run.get("files"), current_run.get("files") or {}
    if not base_files:
        warnings.append("the baseline has no file hashes (run metadata): cannot tell whether a suite or database changed")
    else:
        predictions = set(current_run.get("prediction_files") or ()) | set(baseline_run.get("prediction_files") or ())
        compared = 0
        for path in sorted(set(cur_files) - predictions):
            before, now = _baseline_hash(path, base_files, predictions), cur_files[path]
            compared += before is not None
            if before is not None and before != now:
                warnings.append(f"{path} changed since the baseline (sha256 {before[:12]} -> {now[:12]}): "
                                "the comparison mixes different questions, gold or data")
        if not compared and set(cur_files) - predictions:
            warnings.append("no suite or database file of this run is in the baseline's file hashes (another "
                            "rootdir, or other suites): cannot tell whether a suite or database changed")
    base_options, cur_options = baseline_run.get("options") or {}, current_run.get("options") or {}
    for option in SCORE_OPTIONS:
        if option in base_options and option in cur_options and base_options[option] != cur_options[option]:
            warnings.append(f"option {option} differs from the baseline: {base_options[option]!r} then, "
                            f"{cur_options[option]!r} now")
    return warnings


def _baseline_hash(path: str, base_files: Mapping[str, str], predictions: set[str]) -> str | None:
    """The baseline's hash of ``path``. Paths are relative to each run's rootdir, which pytest takes from the
    arguments (an option's file value too), so the same file may be ``shop.sqlite`` in one run and
    ``bench/shop.sqlite`` in the other: failing an exact name, the one baseline path that shares the longest
    trailing run of path parts (the file name at least) with it."""
    if path in base_files:
        return base_files[path]
    parts = path.split("/")
    best, found = 0, None
    for other, digest in base_files.items():
        if other in predictions:
            continue
        theirs = other.split("/")
        common = 0
        while common < min(len(parts), len(theirs)) and parts[-1 - common] == theirs[-1 - common]:
            common += 1
        if common and common == min(len(parts), len(theirs)):  # one path ends with the other
            if common > best:
                best, found = common, digest
            elif common == best:
                found = None  # two candidates as good: no guess
    return found


def compare_reports(current: Mapping[str, Any], baseline: Mapping[str, Any], *, path: str) -> dict[str, Any]:
    """The ``baseline`` block of a report: per suite and overall comparisons, and warnings."""
    cur_by_suite: dict[str, list] = defaultdict(list)
    base_by_suite: dict[str, list] = defaultdict(list)
    for case in current.get("cases", []):
        cur_by_suite[case["suite"]].append(case)
    for case in baseline.get("cases", []):
        base_by_suite[case["suite"]].append(case)
    warnings = file_warnings(current.get("run"), baseline.get("run"))
    shard = (baseline.get("run") or {}).get("shard")
    if shard:  # one shard's artifact taken for the deployed model's report
        warnings.append(f"the baseline is shard {shard} of its run: the other shards' cases count as new; "
                        "compare with their merged report (sqleval merge)")
    for warning in (baseline.get("run") or {}).get("merge_warnings") or []:  # a merge of the baseline's shards
        warnings.append(f"the baseline was merged with a warning: {warning}")  # that lacked one, say
    warnings.extend(_part_of_the_run(current.get("run") or {}))
    names = [s["name"] for s in current.get("suites", [])]
    names += [name for name in cur_by_suite if name not in names]
    suites = []
    for name in names:
        if name not in base_by_suite:
            warnings.append(f"suite {name} is not in the baseline: all its cases are new")
        suites.append({"name": name, **compare_cases(cur_by_suite.get(name, []), base_by_suite.get(name, []))})
    for name in base_by_suite:
        if name not in cur_by_suite:
            warnings.append(f"suite {name} of the baseline is not in this run: its cases count as removed")
            suites.append({"name": name, **compare_cases([], base_by_suite[name])})
    qualified = lambda c: f"{c['suite']}::{c['id']}"  # noqa: E731
    overall = compare_cases(_ordered(current.get("cases", [])), _ordered(baseline.get("cases", [])), key=qualified)
    return {"path": path, "warnings": warnings, "suites": suites, "overall": overall}


def _part_of_the_run(run: Mapping[str, Any]) -> list[str]:
    """This run is one shard, or a selection (-k, -m, --lf): the baseline's cases it left out are not in it, and
    count as ``removed`` as a case deleted from its suite does. Say which it is."""
    if run.get("shard"):
        return [f"this run is shard {run['shard']}: the baseline's cases of the other shards count as removed; "
                "compare the shards' merged report (sqleval merge)"]
    deselected = run.get("deselected")
    if isinstance(deselected, int) and not isinstance(deselected, bool) and deselected > 0:
        return [f"{deselected} case(s) of this run's suites were not selected (-k, -m, --deselect, --lf): those of the "
                "baseline count as removed"]
    return []


def _ordered(cases: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(cases, key=lambda c: (str(c.get("suite")), c.get("index", 0), str(c.get("id"))))
