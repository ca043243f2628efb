"""BIRD R-VES (mini-dev ``evaluation_ves.py``) for one case: time gold and prediction, reward the ratio.

Off by default because it times queries (``--sqleval-efficiency``, ini ``sqleval_efficiency``, or the suite's
``efficiency: true``). As the official script does, a case whose prediction does not match scores 0 without
timing; otherwise the prediction and the gold each run :data:`~pytest_sqleval.metrics.bird.VES_REPETITIONS`
(100) times, alternately, the ratio gold time / prediction time is taken per repetition, ratios outside
mean ± 3σ are dropped, and the mean ratio is bucketed (:func:`~pytest_sqleval.metrics.bird.ves_reward`). Any
error or timeout during the repetitions scores 0, as the official ``except Exception`` does.

Both sides are timed the same way: the same :func:`~pytest_sqleval.execution.runner.run_query` call (query
process, read-only connection, timeout, row cap), on text already checked; the time is the engine's execute and
fetch as the query process measures it (:attr:`~pytest_sqleval.results.QueryResult.elapsed`), as BIRD times its
cursor, not the round trip to the query process (which pulled a fast gold's ratio towards 1). The prediction is
guarded and rewritten once, here, exactly as for scoring; only that checked text is then repeated (with
``untrusted=False``, like the gold, so the guard's own cost is not timed on one side only).
"""

from __future__ import annotations

import time
from typing import Any

from .errors import QueryError
from .metrics.bird import VES_REPETITIONS, r_ves_score, ves_reward, ves_time_ratio


def _checked_prediction(prediction: str, options, dialect: str, allow_functions: frozenset[str]) -> str | None:
    """The text scoring ran for the prediction (None: no statement, nothing runs)."""
    from .execution.runner import official_statement, prepare_sql
    from .sql.rewrite import prediction_rewrite

    statement, rewrite = official_statement(prediction, dialect, prediction_rewrite(options))
    if statement is None:
        return None
    return prepare_sql(statement, dialect, untrusted=True, rewrite=rewrite, allow_functions=allow_functions)


def _gold_text(gold: str, options, dialect: str) -> str:
    from .sql.rewrite import gold_rewrite

    return gold_rewrite(gold, options, dialect)


def r_ves_fields(engine, gold: str, prediction: str | None, options, dialect: str, *, matched: bool, timeout: float,
                 max_rows: int, max_memory: int | None = None, allow_functions: frozenset[str] = frozenset(),
                 repetitions: int = VES_REPETITIONS) -> dict[str, Any]:
    """``r_ves`` (sqrt of the reward, the item's share of the official R-VES / 100), ``r_ves_reward`` and
    ``r_ves_time_ratio`` for one case."""
    if not gold:
        return {}  # expected rows, no gold query to time: R-VES is not computed for the case
    zero = {"r_ves": 0.0, "r_ves_reward": 0.0, "r_ves_time_ratio": 0.0}
    if not matched or prediction is None:
        return zero
    from .comparison import distinct_rows
    from .execution.runner import run_query

    distinct = distinct_rows(options)  # a result over the row cap is read as scoring read it
    try:
        pred_sql = _checked_prediction(prediction, options, dialect, allow_functions)
        gold_sql = _gold_text(gold, options, dialect)
        ratios = []
        for _ in range(repetitions):
            started, pred = time.perf_counter(), None
            if pred_sql is not None:
                pred = run_query(engine, pred_sql, timeout=timeout, max_rows=max_rows, untrusted=False,
                                 dialect=dialect, max_memory=max_memory, distinct_rows=distinct)
            pred_time = _seconds(pred, started)
            started = time.perf_counter()
            gold_run = run_query(engine, gold_sql, timeout=timeout, max_rows=max_rows, untrusted=False,
                                 dialect=dialect, max_memory=max_memory, distinct_rows=distinct)
            gold_time = _seconds(gold_run, started)
            ratios.append(gold_time / pred_time if pred_time > 0 else float("inf"))
    except (QueryError, Exception):  # noqa: BLE001 - the official scores any exception 0
        return zero
    ratio = ves_time_ratio(ratios)
    reward = ves_reward(ratio)
    return {"r_ves": r_ves_score(reward), "r_ves_reward": reward, "r_ves_time_ratio": ratio}


def _seconds(result, started: float) -> float:
    """The engine's execute-and-fetch time, measured in the query process (BIRD times its cursor's execute and
    fetchall, not the connect); the wall time of the call when the query ran in this process (no query
    process for the engine) or nothing ran (a text without a statement)."""
    elapsed = getattr(result, "elapsed", None)
    return elapsed if elapsed is not None else time.perf_counter() - started
