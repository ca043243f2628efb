"""Suite aggregates from per-case records.

Pure functions over the JSON records that :mod:`pytest_sqleval.evaluate`
produces. Records are put in file order first and sums use ``math.fsum``, so
the aggregates do not depend on the order in which xdist workers report.

Only *scored* cases count in metric denominators: a case whose gold failed
(outcome ``error``) is an error of the suite, never the model's miss.

Definitions (n = scored cases):

- ``valid_syntax``: share of predictions that executed (LogicCat VES).
- ``error_count``: predictions that did not execute (MRO), with ``errors_by_kind``.
- ``execution_accuracy``: share of results equal under the suite's profile
  (on the first database when a case has several).
- ``test_suite_accuracy``: share equal on *every* database (when any case has several).
- ``soft_f1``: mean MRO Soft Execution F1.
- ``bird_soft_f1``: mean BIRD mini-dev Soft F1 (``evaluation_f1.py``).
- ``r_ves``: mean of sqrt(R-VES reward) (BIRD mini-dev ``evaluation_ves.py`` / 100), with ``--sqleval-efficiency``.
- ``exact_match``: share of exact set matches (cases where it was computed).
- ``pass_rate``: share of cases whose ``pass_if`` held.
- ``vacuous``: matches where gold and prediction both returned no rows.
- ``question_match`` / ``interaction_match`` / ``interaction_execution_accuracy``:
  SParC's aggregates over interaction turns (the pass rule; every turn passes;
  every turn's execution matches).
- ``by_gold_sql``: MRO 3.2, the mean per distinct gold SQL (on one database: a suite
  whose cases name several databases groups each text per database), then the mean of
  those means (``error_count`` there is the sum of the per-group error rates).
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

from .registry import Metric, MetricRegistry, active_registry

TURN_BUCKETS = ("1", "2", "3", "4", ">4")


def aggregate_suite(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    ordered = sorted(records, key=lambda r: (r.get("index", 0), r.get("id", "")))
    scored = [r for r in ordered if r.get("outcome") != "error"]
    result: dict[str, Any] = {
        "cases": len(ordered),
        "outcomes": outcome_counts(ordered),
        "metrics": case_metrics(scored),
        "by_gold_sql": grouped_by_gold(scored),
        "by_difficulty": difficulty_breakdown(scored),
        "by_tag": breakdown(scored, lambda r: r.get("tags") or []),
    }
    clauses = clause_accuracy(scored)
    if clauses:
        result["clauses"] = clauses
    if any(r.get("interaction") is not None for r in ordered):
        result["metrics"].update(interaction_metrics(ordered))
        result["by_turn"] = turn_breakdown(scored)
    result["intervals"] = intervals(ordered, result["metrics"])
    return result


def outcome_counts(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = {"passed": 0, "missed": 0, "failed": 0, "error": 0}
    for record in records:
        counts[record.get("outcome", "error")] = counts.get(record.get("outcome", "error"), 0) + 1
    return counts


def mean(values: Iterable[float | bool | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    if not present:
        return None
    try:
        return math.fsum(present) / len(present)
    except OverflowError:  # finite values whose sum is beyond a float (a user's mean metric of 1e308s): scale first
        return math.fsum(v / len(present) for v in present)


def case_metrics(records: Sequence[Mapping[str, Any]], registry: MetricRegistry | None = None) -> dict[str, Any]:
    """Every registered per-case metric aggregated by its kind over its population (see :mod:`.registry`)."""
    registry = registry or active_registry()
    executed = [r for r in records if r.get("valid") is not None]
    metrics: dict[str, Any] = {}
    for metric in registry.case_metrics():
        if metric.population == "executed" and not executed:
            continue
        if metric.present_when is not None and not any(metric.present_when(r) for r in executed):
            continue
        value = aggregate_metric(metric, records)
        if value is not None:
            metrics[metric.name] = value
        if metric.name == "error_count" and executed:
            metrics["errors_by_kind"] = errors_by_kind(executed)
    return metrics


def aggregate_metric(metric: Metric, records: Sequence[Mapping[str, Any]]) -> float | int | None:
    """A rate or a mean: the mean of the cases' values; a count: how many cases have a true value (None, as for a
    rate, when no case has a value: a metric of a folder's conftest.py in a suite of another folder is not 0)."""
    values = [metric.case_value(r) for r in records]
    if metric.kind == "count":
        population = [v for v in values if v is not None]
        return sum(1 for v in population if v) if population else None
    return mean(values)


def errors_by_kind(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for record in records:
        error = record.get("error")
        if error:
            counts[error["kind"]] += 1
    return dict(sorted(counts.items()))


#: where white space can be a value's: string literals, quoted names, PostgreSQL's dollar quotes
_QUOTES = ("'", '"', "`", "[", "$")


@functools.lru_cache(maxsize=1 << 16)
def gold_key(sql: str) -> str:
    """Identical gold SQL up to the white space between tokens and a trailing semicolon (``'a  b'`` and ``'a b'``
    are two golds, and so are ``a -- x`` + line break + ``FROM t`` and ``a -- x FROM t``: a line comment's line
    break is kept). The tokenizer runs only for a text with quotes or a ``--`` whose white space is more than
    single spaces."""
    if " ".join(sql.split()) != sql.strip() and any(mark in sql for mark in _QUOTES + ("--",)):
        from .sql.spacing import collapse_white_space, reads_dollar_quotes

        dialect = "postgres" if "$" in sql and reads_dollar_quotes(sql) else "sqlite"  # `$$a  b$$` is a literal
        return collapse_white_space(sql, dialect, keep_line_comment_ends=True).rstrip(";").strip()
    return plain_gold_key(sql)


def plain_gold_key(sql: str) -> str:
    """The gold SQL with every run of white space one space and no trailing semicolon (no tokenizer)."""
    return " ".join(sql.split()).rstrip(";").strip()


def group_key(record: Mapping[str, Any]) -> str:
    """The gold SQL a case is grouped by, on its database (one text asks different questions of two databases);
    a case with ``expected:`` rows instead of a gold is a group of its own."""
    gold = record.get("gold")
    if gold:
        return _on_database(gold_key(gold), record)
    return f"\x00expected rows of {record.get('suite')}::{record.get('id')}"


def _on_database(key: str, record: Mapping[str, Any]) -> str:
    """``key`` and the case's database. The same suffix on every key of one database keeps their sorted order (NUL
    sorts first), so a one-database suite's groups come in the order of their gold SQL alone."""
    return f"{key}\x00{record.get('database') or ''}"


def gold_groups(records: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """The records by :func:`group_key`. Grouped first by the plain reading (white space split, no tokenizer); only
    a group whose golds are written differently is split again by :func:`gold_key` (``'a  b'`` against ``'a b'``):
    the same groups as ``group_key`` alone, without tokenizing every gold."""
    plain: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        gold = record.get("gold")
        plain[_on_database(plain_gold_key(gold), record) if gold else group_key(record)].append(record)
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for key, members in plain.items():
        if len({member.get("gold") for member in members}) == 1:
            groups[key] = members  # one text: its plain reading is its gold_key's group, under another name
            continue
        for member in members:
            groups.setdefault(group_key(member), []).append(member)
    return groups


def grouped_by_gold(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    groups = gold_groups(records)
    if not groups:
        return {}
    registry = active_registry()
    reported = case_metrics(records, registry)  # present_when is the suite's question, never a group's
    result: dict[str, Any] = {"groups": len(groups)}
    for metric in registry.case_metrics():
        if not metric.per_gold or metric.name not in reported:
            continue
        if metric.kind == "count":  # MRO 3.2: the sum of the per-group rates
            rates = [_count_rate(metric, groups[key]) for key in sorted(groups)]
            if any(rate is not None for rate in rates):
                result[metric.name] = math.fsum(rate for rate in rates if rate is not None)
            continue
        values = [v for v in (aggregate_metric(metric, groups[key]) for key in sorted(groups)) if v is not None]
        value = mean(values)
        if value is not None:
            result[metric.name] = value
            if metric.interval is not None:  # over the groups' values: each distinct gold query counts once
                found = interval_of(metric.interval, values)
                if found is not None:
                    result.setdefault("intervals", {})[metric.name] = found
    return result


def _count_rate(metric: Metric, records: Sequence[Mapping[str, Any]]) -> float | None:
    """The share of a group's cases that a count metric counts (None: no case of the group counts)."""
    values = [v for v in (metric.case_value(r) for r in records) if v is not None]
    if not values:
        return None
    return sum(1 for v in values if v) / len(values)


def difficulty_breakdown(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """By difficulty level (``unknown`` for a case without one), easy to extra."""
    return breakdown(records, lambda r: [r.get("difficulty") or "unknown"])


def breakdown(records: Sequence[Mapping[str, Any]], keys_of) -> dict[str, Any]:
    buckets: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        for key in dict.fromkeys(map(str, keys_of(record))):  # a tag written twice counts the case once
            buckets[key].append(record)
    result = {}
    for key, rows in sorted(buckets.items(), key=_level_order):
        metrics = case_metrics(rows)
        result[key] = {"cases": len(rows), **metrics, "intervals": intervals(rows, metrics)}
    return result


_LEVELS = {"easy": 0, "medium": 1, "hard": 2, "extra": 3, "unknown": 9}


def _level_order(item: tuple[str, Any]) -> tuple[int, str]:
    return (_LEVELS.get(item[0], 5), item[0])


def clause_accuracy(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Share of cases in which each exact-match component agrees, over the cases exact match scored: one whose
    prediction it could not read into components (a parse error, no prediction) agrees on none."""
    verdicts: dict[str, list[bool]] = defaultdict(list)
    unread = 0
    for record in records:
        clauses = record.get("clauses")
        if clauses:
            for clause, ok in clauses.items():
                verdicts[clause].append(bool(ok))
        elif record.get("exact_match") is False:
            unread += 1
    return {clause: math.fsum(map(float, oks)) / (len(oks) + unread) for clause, oks in verdicts.items()}


def interaction_metrics(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """SParC aggregates: the means of :func:`interaction_vectors` (the same 0/1 values their intervals use)."""
    means = {name: mean(values) for name, values in interaction_vectors(records).items()}
    return {name: value for name, value in means.items() if value is not None}


def turn_bucket(turn: int) -> str:
    return str(turn) if turn <= 4 else ">4"


def turn_breakdown(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    buckets: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("turn") is not None:
            buckets[turn_bucket(record["turn"])].append(record)
    return {bucket: _turn_row(buckets[bucket]) for bucket in TURN_BUCKETS if bucket in buckets}


def _turn_row(turns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One turn position's question match and execution accuracy, each with its 95% (Wilson) interval."""
    vectors = {"question_match": [float(bool(r["passed_rule"])) for r in turns if r.get("passed_rule") is not None]}
    # over the turns that executed, as execution_accuracy is: a suite without a database (schema only) beside others
    # leaves its turns out of the overall row rather than the column out of the table
    executed = [float(bool(r["execution_match"])) for r in turns if r.get("execution_match") is not None]
    if executed:
        vectors["execution_accuracy"] = executed
    row: dict[str, Any] = {"turns": len(turns), **{name: mean(values) for name, values in vectors.items()}}
    found = {name: interval_of("wilson", values) for name, values in vectors.items()}
    row["intervals"] = {name: interval for name, interval in found.items() if interval is not None}
    return row


# --------------------------------------------------------------------------- intervals and the overall figure
def interaction_vectors(records: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """The 0/1 outcomes behind question_match (one per turn), interaction_match and
    interaction_execution_accuracy (one per interaction). An interaction with a turn whose gold failed (a suite
    error) is left out; a turn without a verdict (``passed_rule`` None, e.g. from an older merged report) is
    not counted in question_match."""
    return {name: list(values.values()) for name, values in interaction_values(records).items()}


def interaction_values(records: Sequence[Mapping[str, Any]], *, turn_key=None,
                       interaction_key=lambda r: r["interaction"]) -> dict[str, dict[Any, float]]:
    """:func:`interaction_vectors`' values by the turn (question_match, ``turn_key`` of a record; by default its
    position) or the interaction (``interaction_key`` of one of its turns): what a baseline comparison pairs."""
    grouped: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("interaction") is not None:
            grouped[record["interaction"]].append(record)
    scorable = [rs for rs in grouped.values() if all(r.get("outcome") != "error" for r in rs)]
    turns = [r for rs in scorable for r in rs]
    # an interaction only some of whose turns ran (``-k``, ``--lf``) counts its turns, not as a whole interaction
    complete = [rs for rs in scorable
                if len({r.get("turn") for r in rs}) >= max(r.get("interaction_turns") or 0 for r in rs)]
    values = {
        "question_match": {(turn_key(r) if turn_key else n): float(bool(r["passed_rule"]))
                           for n, r in enumerate(turns) if r.get("passed_rule") is not None},
        "interaction_match": {interaction_key(rs[0]): float(all(r.get("passed_rule") for r in rs)) for rs in complete},
    }
    # over the interactions whose turns executed (a schema-only suite's have no execution verdict), as
    # execution_accuracy is over the cases that executed
    executed = [rs for rs in complete if all(r.get("execution_match") is not None for r in rs)]
    if any(r.get("execution_match") is not None for r in turns):
        values["interaction_execution_accuracy"] = {interaction_key(rs[0]): float(all(r.get("execution_match") for r in rs))
                                                    for rs in executed}
    return values


def intervals(records: Sequence[Mapping[str, Any]], metrics: Mapping[str, Any]) -> dict[str, list[float]]:
    """95% intervals of the rates in ``metrics``: Wilson for shares, a seeded bootstrap for means."""
    registry = active_registry()
    result: dict[str, list[float]] = {}
    vectors: dict[str, list[float]] = {}
    for metric in registry.case_metrics():
        if metric.interval is not None and metric.name in metrics:
            vectors[metric.name] = [v for v in (metric.case_value(r) for r in records) if v is not None]
    if any(m.scope == "interaction" and m.name in metrics for m in registry):
        vectors.update({k: v for k, v in interaction_vectors(records).items() if k in metrics})
    for name, values in vectors.items():
        interval = interval_of(registry[name].interval, values)
        if interval is not None:
            result[name] = interval
    return result


def interval_of(kind: str | None, values: Sequence[float]) -> list[float] | None:
    """The 95% interval of the mean of ``values``: a seeded bootstrap (``kind`` "bootstrap", means) or Wilson's (a
    rate's values may be numbers from 0 to 1: their sum is the successes; for 0/1 values, their count)."""
    from .stats import bootstrap_mean, wilson

    interval = bootstrap_mean(values) if kind == "bootstrap" else wilson(math.fsum(values), len(values))
    return None if interval is None else [interval[0], interval[1]]


def aggregate_overall(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The micro-average over every scored case of every suite (interactions stay within their suite)."""
    ordered = sorted(records, key=lambda r: (str(r.get("suite")), r.get("index", 0), str(r.get("id"))))
    ordered = [dict(r, interaction=f"{r.get('suite')}::{r['interaction']}") if r.get("interaction") is not None else r
               for r in ordered]
    scored = [r for r in ordered if r.get("outcome") != "error"]
    result: dict[str, Any] = {
        "suites": len({r.get("suite") for r in ordered}),
        "cases": len(ordered),
        "scored": len(scored),
        "outcomes": outcome_counts(ordered),
        "metrics": case_metrics(scored),
        # over the whole dataset, as the official evaluators print them (`sqleval import spider` writes a suite per
        # database: Spider's table by hardness, SParC's by turn, are of all of them together)
        "by_difficulty": difficulty_breakdown(scored),
    }
    if any(r.get("interaction") is not None for r in ordered):
        result["metrics"].update(interaction_metrics(ordered))
        result["by_turn"] = turn_breakdown(scored)
    result["intervals"] = intervals(ordered, result["metrics"])
    return result

