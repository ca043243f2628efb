"""The case record: the one contract between scoring, aggregation and reporting.

Scoring (:mod:`pytest_sqleval.evaluate`, then every ``pytest_sqleval_score_case`` hook) fills one
:class:`CaseRecord` per case; it travels on the test report to the xdist controller and is read by the
aggregates (:mod:`pytest_sqleval.aggregate`), the gate, the terminal table and the JSON report. It is a
JSON-ready dict (records are pickled to the controller and written as they are), typed here so that
every key has one documented meaning; a metric registered by a user adds its own key beside these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, TypedDict


class QueryErrorRecord(TypedDict):
    kind: str  # timeout, row_limit, memory, syntax, forbidden, no_prediction, model_error, ...
    message: str


class CaseRecord(TypedDict, total=False):
    """One case's record. Keys in the order the JSON report writes them (the README's JSON report section
    says what each means)."""

    # which case
    suite: str
    id: str
    interaction: Optional[str]
    turn: Optional[int]
    interaction_turns: int  # how many turns the interaction has (a partial run is not a whole interaction)
    database: Optional[str]
    difficulty: Optional[str]
    tags: list[str]
    question: Optional[str]
    gold: Optional[str]
    predicted: Optional[str]
    # the verdicts (metrics read these through the registry)
    valid: Optional[bool]
    error: Optional[QueryErrorRecord]
    execution_match: Optional[bool]
    soft_f1: Optional[float]
    exact_match: Optional[bool]
    clauses: Optional[dict[str, bool]]
    vacuous: bool
    outcome: str  # passed | missed | failed | error
    bird_soft_f1: Optional[float]
    r_ves: Optional[float]
    r_ves_reward: Optional[float]
    r_ves_time_ratio: Optional[float]
    # why, and how it was scored
    mismatch: Optional[dict[str, Any]]
    databases: list[dict[str, Any]]
    exact_match_reason: Optional[str]
    difficulty_source: str
    order_note: Optional[str]
    metadata: dict[str, Any]
    # what `sqleval merge` / `sqleval gate` need to recompute aggregates from the report alone
    index: int
    passed_rule: bool
    execution_match_first: Optional[bool]
    # several accepted golds, expected rows, shape checks and a SQL policy
    golds: list[str]
    expected: dict[str, Any]
    gold_index: int
    gold_scores: list[dict[str, Any]]
    clause_sets: list[dict[str, bool]]
    exact_match_gold_index: int
    shape: dict[str, Any]
    policy: dict[str, Any]
    # the model in the loop: where the prediction came from, what the model said and what the call cost
    prediction_source: str
    model: Optional[str]
    raw_output: Optional[str]
    extraction: Optional[dict[str, str]]  # how the SQL was read out of the answer: {mode, step}
    latency_s: Optional[float]
    tokens: Optional[dict[str, int]]
    cached: Optional[bool]
    cost: Optional[float]
    prediction_extra: dict[str, Any]
    model_repeats: list[dict[str, Any]]  # --dist each: the case's other workers' model calls ({cached, tokens, ...})
    model_history_calls: list[dict[str, Any]]  # earlier turns asked for this turn's history only ({case, cached, ...})
    # kept in the process, not written to the report
    path: str
    gold_status: str
    gold_findings: list[dict[str, Any]]
    model_request: Optional[dict[str, Any]]  # what the model was asked (model, endpoint, parameters): the run block's
    predicted_as_given: str  # a model's SQL as given when the record's `predicted` cannot hold it (a lone surrogate)


#: Keys the plugin uses internally and does not write into the JSON report's cases.
INTERNAL_KEYS: frozenset[str] = frozenset({"path", "gold_status", "gold_findings", "model_request",
                                           "predicted_as_given"})

#: The per-case keys of the JSON report, in the order it writes them (a registered metric's key follows).
REPORT_KEYS: tuple[str, ...] = tuple(k for k in CaseRecord.__annotations__ if k not in INTERNAL_KEYS)

#: Keys the built-in scoring always writes and the plugin reads to place a case (a hook must not remove them).
REQUIRED_KEYS: tuple[str, ...] = ("suite", "path", "id", "index")


def _python_types(annotation: str) -> tuple[type, ...]:
    """The Python types a :class:`CaseRecord` annotation (its text: postponed annotations) allows."""
    optional = annotation.startswith("Optional[")
    inner = annotation[len("Optional["):-1] if optional else annotation
    kinds: tuple[type, ...] = {"str": (str,), "int": (int,), "bool": (bool,), "float": (int, float)}.get(
        inner, (list,) if inner.startswith("list[") else (dict,) if inner.startswith(("dict[", "QueryErrorRecord"))
        else (object,))
    return kinds + ((type(None),) if optional else ())


_TYPES: dict[str, tuple[type, ...]] = {}


def record_problem(record: dict[str, Any]) -> str | None:
    """What is wrong with a record a user's ``pytest_sqleval_score_case`` changed (None: nothing): a key the
    plugin needs removed, or one of the record's own keys holding another type than :class:`CaseRecord` says
    (``error`` as text, ``clauses`` as a list), which would break the aggregates or the reports later."""
    if not _TYPES:
        _TYPES.update((key, _python_types(str(getattr(hint, "__forward_arg__", hint))))
                      for key, hint in CaseRecord.__annotations__.items())
    missing = [key for key in REQUIRED_KEYS if key not in record]
    if missing:
        return f"the record without its own {', '.join(map(repr, missing))}; add keys to the record, keep its own"
    for key, value in record.items():
        types = _TYPES.get(key)
        if types is not None and not isinstance(value, types):
            shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
            annotation = getattr(CaseRecord.__annotations__[key], "__forward_arg__", CaseRecord.__annotations__[key])
            return (f"record[{key!r}] = {shown}, which is not {annotation} (pytest_sqleval.record.CaseRecord); add "
                    "keys of your own to the record rather than change the type of its own")
    error = record.get("error")
    if error is not None and not {"kind", "message"} <= set(error):
        return f"record['error'] = {error!r}; an error is {{'kind': ..., 'message': ...}} or None"
    return None


@dataclass
class ScoreContext:
    """What a ``pytest_sqleval_score_case`` hook may use beside the record.

    ``engines``: the case's SQLAlchemy engines (its first database first); ``gold_results``: the gold's
    :class:`~pytest_sqleval.results.QueryResult` per database (empty for a case without a gold; of several accepted
    golds, the one that scores, ``record["gold_index"]``, once the prediction ran; expected rows as a result);
    ``prediction_result``: the prediction's result on the first database, None when it did not run;
    ``dialect``: the sqlglot dialect of the suite; ``limits``: the timeout, row cap, memory cap and allowed
    functions the case runs under; ``prepared``, ``evaluator``: the built-in scoring's own state.
    """

    engines: Sequence[Any]
    dialect: str
    limits: dict[str, Any]
    prepared: Any = None
    evaluator: Any = None
    database: Optional[str] = None
    prediction_error: Any = None
    gold_results: list[Any] = field(default_factory=list)
    prediction_result: Any = None
