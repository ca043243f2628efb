"""The result of running one query: column names and rows, as the engine returned them."""

from __future__ import annotations

import datetime
import uuid
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
    #: Seconds the engine took to execute and fetch, timed in the query process (R-VES times this, as BIRD
    #: times its cursor's execute and fetchall); None when the query ran in this process.
    elapsed: float | None = field(default=None, compare=False, repr=False)

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


def temporal_as_text(value: Any) -> Any:
    """A date, time or timestamp as ISO text (``2024-01-05``, ``10:30:00``, ``2024-01-05 10:30:00``: a space
    before the time, as SQLite and PostgreSQL write it); any other value as it is."""
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return value


def aware_timestamp(value: Any) -> datetime.datetime | None:
    """``value`` as a timestamp with a UTC offset: a timezone-aware datetime, or text that writes one in ISO form
    (``2024-01-05 10:30:00+00``, ``2024-01-05T10:30:00Z``, ``...+05:30``); None for anything else (a naive
    timestamp, a date, other text)."""
    if isinstance(value, str):
        if not 19 < len(value) < 40 or value[4:5] != "-" or value[10:11] not in (" ", "T") or not value[:4].isdigit():
            return None
        try:
            value = datetime.datetime.fromisoformat(value)
        except ValueError:
            return None
    if isinstance(value, datetime.datetime) and value.utcoffset() is not None:
        return value
    return None


def naive_timestamp(value: Any) -> datetime.datetime | None:
    """Text that writes a timestamp without a UTC offset in ISO form, with ISO's ``T`` or a space before the time
    (``2024-01-05T10:30:00``, as Python's ``isoformat()`` writes it into a SQLite text column; ``2024-01-05 10:30``),
    as a datetime; None for anything else (a date alone, an offset, other text)."""
    if not isinstance(value, str) or not 16 <= len(value) <= 32 or value[4:5] != "-" or value[10:11] not in (" ", "T") \
            or value[13:14] != ":" or not value[:4].isdigit() or len(value.partition(".")[2]) > 6:
        return None  # (more than 6 places of a second would be cut: two different texts read as one timestamp)
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.utcoffset() is None else None


def instant_as_text(value: Any) -> Any:
    """A timestamp with a UTC offset (a timezone-aware datetime, or its ISO text) as the ISO text of the same
    instant in UTC (``2024-01-05 08:30:00+00:00`` for ``2024-01-05 10:30:00+02``), so that the session's time zone
    and the offset a user wrote do not decide a comparison; a date, time or naive timestamp as
    :func:`temporal_as_text` writes it; any other value as it is."""
    aware = aware_timestamp(value)
    if aware is not None:
        try:
            return aware.astimezone(datetime.timezone.utc).isoformat(sep=" ")
        except OverflowError:  # year 1 or 9999 moved past the calendar's end: left as written
            return temporal_as_text(value)
    return temporal_as_text(value)


def with_temporal_text(result: QueryResult) -> QueryResult:
    """``result`` with its dates, times and timestamps as ISO text (a naive timestamp's text, with ``T`` or a space,
    as a datetime writes it), timestamps with a UTC offset (objects or text) as the same instant in UTC, and its
    UUIDs as their text (``a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11``) (``result`` itself when it has none).

    Used on both sides of a comparison with hand-written expected rows: YAML and SQLite have only text for
    dates and UUIDs, DuckDB and PostgreSQL return date and UUID objects (a ``timestamptz`` in the session's time
    zone), and the two must meet."""
    temporal = (datetime.date, datetime.time, uuid.UUID)  # datetime.datetime is a date

    def as_text(value: Any) -> Any:
        if isinstance(value, uuid.UUID):
            return str(value)
        naive = naive_timestamp(value)  # `2024-01-05T10:30:00` text: as a datetime writes it, `2024-01-05 10:30:00`
        return instant_as_text(value) if naive is None else temporal_as_text(naive)

    def converted(value: Any) -> bool:
        return isinstance(value, temporal) or (isinstance(value, str) and (
            aware_timestamp(value) is not None or naive_timestamp(value) is not None))

    if not any(converted(v) for row in result.rows for v in row):
        return result
    return QueryResult(columns=result.columns, rows=[tuple(map(as_text, row)) for row in result.rows])
