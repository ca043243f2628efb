"""How rows are compared once the two results have the same shape, read off the comparison options.

:class:`RowRules` is what the stages of the comparison consult: whether
columns are matched by content, whether repeated rows count, whether order
counts and where the gold's tie groups start. Explaining a miss asks the same
question again under relaxed rules (:meth:`RowRules.unordered`,
:meth:`RowRules.as_sets`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RowRules:
    """How rows are compared once the shapes agree."""

    match_columns: bool
    distinct_rows: bool
    ordered: bool
    tie_starts: tuple[int, ...] | None  # only when ordered; None means strict order

    def unordered(self) -> RowRules:
        """The same rules with row order ignored."""
        return RowRules(self.match_columns, self.distinct_rows, ordered=False, tie_starts=None)

    def as_sets(self) -> RowRules:
        """The same rules with row order and repeated rows ignored."""
        return RowRules(self.match_columns, distinct_rows=True, ordered=False, tie_starts=None)

