"""The result of running one query: column names and rows, as the engine returned them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence


@dataclass(frozen=True)
class QueryResult:
    """Rows of a query in the order the engine produced them.

    ``rows`` holds tuples of raw driver values (int, float, str, bytes, None,
    Decimal, datetime, ...). Comparison code normalises values itself; nothing
    here is rounded or converted.
    """

    columns: tuple[str, ...]
    rows: Sequence[tuple[Any, ...]] = field(default_factory=list)

    @property
    def row_count(self) -> int:
        return len(self.rows)

    @property
    def column_count(self) -> int:
        if self.columns:
            return len(self.columns)
        return len(self.rows[0]) if self.rows else 0

    @property
    def is_empty(self) -> bool:
        return not self.rows

    @classmethod
    def of(cls, rows: Sequence[Sequence[Any]], columns: Sequence[str] | None = None) -> QueryResult:
        """Build a result from plain lists (handy in tests and user assertions)."""
        tuples = [tuple(row) for row in rows]
        if columns is None:
            width = len(tuples[0]) if tuples else 0
            columns = [f"c{i}" for i in range(width)]
        return cls(columns=tuple(columns), rows=tuples)
