"""The verdict of an execution match: match or miss, why, and the rows that show it.

Defined apart from :mod:`.execution_match` because the comparison's stages
(:mod:`.miss_explanation` in particular) build verdicts too.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_sqleval.metrics.rows_and_columns import ColumnMapping, Row


@dataclass(frozen=True)
class ExecutionVerdict:
    """The outcome of :func:`~pytest_sqleval.metrics.execution_match.compare_results`.

    ``reason`` is ``None`` for a match, else one of ``"empty"``,
    ``"column_count"``, ``"row_count"``, ``"values"``, ``"order"``,
    ``"duplicates"``. ``detail`` is one sentence for a human.
    ``column_mapping[i]`` is the predicted column compared with gold column
    i: the verified mapping for a match, the mapping under which the rows
    agree except for order or duplicates, or the best alignment found (used
    for the example rows) for other misses; ``None`` when the shapes differ.
    ``gold_only_rows`` / ``pred_only_rows`` hold at most five example rows
    (in each result's own column order; a NULL under ``nulls="distinct"``
    shown as None) that one side has more often than the other;
    ``gold_only_count`` / ``pred_only_count`` how many such rows there are in
    all (each counted as often as that side has it more), None when not
    counted.
    """

    match: bool
    vacuous: bool
    reason: str | None
    detail: str
    column_mapping: ColumnMapping | None = None
    gold_only_rows: tuple[Row, ...] = ()
    pred_only_rows: tuple[Row, ...] = ()
    gold_only_count: int | None = None
    pred_only_count: int | None = None

    def __bool__(self) -> bool:
        """``assert compare_results(...)`` holds exactly when the results match."""
        return bool(self.match)


def miss(
    reason: str,
    detail: str,
    *,
    column_mapping: ColumnMapping | None = None,
    gold_only_rows: tuple[Row, ...] = (),
    pred_only_rows: tuple[Row, ...] = (),
    gold_only_count: int | None = None,
    pred_only_count: int | None = None,
) -> ExecutionVerdict:
    """A verdict that the results do not match, for ``reason`` (see :class:`ExecutionVerdict`)."""
    return ExecutionVerdict(False, False, reason, detail, column_mapping, gold_only_rows, pred_only_rows,
                            gold_only_count, pred_only_count)


def counted(number: int, noun: str) -> str:
    """``"1 row"``, ``"3 rows"``: a count for a verdict's detail sentence."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
