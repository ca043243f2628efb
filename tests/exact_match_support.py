"""Shared by the exact-match tests: the hand-made `concerts` schema and a helper."""

from pathlib import Path

from pytest_sqleval.schema import Schema

SCHEMA = Schema.from_spider_tables(Path(__file__).parent / "fixtures" / "exact_match" / "tables.json", "concerts")


def failing(verdict) -> set[str]:
    """The components a verdict says differ."""
    return {name for name, ok in verdict.clauses.items() if not ok}
