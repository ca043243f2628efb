"""`sqleval generate`'s duplicate filter: two queries that return the same columns in another order (`SELECT name,
qty` and `SELECT qty, name`) answer one question, and the MRO paper's one-to-one column matching scores them as one
result; the second is dropped as a `duplicate`, as a query with the same result and structure is."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import make_sqlite
from pytest_sqleval.datasets.generate import screen

PARTS_SQL = """
CREATE TABLE parts (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER, price REAL);
INSERT INTO parts VALUES (1, 'bolt', 10, 0.5), (2, 'nut', 3, 0.5), (3, 'gear', 7, 2.0), (4, 'shaft', 3, 9.0);
"""


def _screen(tmp_path: Path, queries: list[str]):
    from sqlalchemy import create_engine

    engine = create_engine(f"sqlite:///{make_sqlite(tmp_path / 'parts.sqlite', PARTS_SQL)}")
    try:
        return screen(engine, [(sql, None) for sql in queries], dialect="sqlite", max_result_rows=10, timeout=5)
    finally:
        engine.dispose()


@pytest.mark.parametrize("first, second", [
    ("SELECT name, qty FROM parts WHERE qty > 2", "SELECT qty, name FROM parts WHERE qty > 2"),
    ("SELECT name, qty, price FROM parts", "SELECT price, name, qty FROM parts"),
    ("SELECT name, qty FROM parts ORDER BY qty DESC, name", "SELECT qty, name FROM parts ORDER BY qty DESC, name"),
])
def test_the_same_columns_in_another_order_are_a_duplicate(tmp_path: Path, first: str, second: str) -> None:
    kept, drops = _screen(tmp_path, [first, second])
    assert [k.sql for k in kept] == [first]
    assert [(d.filter, d.sql) for d in drops] == [("duplicate", second)]
    assert first in drops[0].reason


@pytest.mark.parametrize("first, second", [
    # another order of the rows under ORDER BY: another answer
    ("SELECT name, qty FROM parts ORDER BY name", "SELECT qty, name FROM parts ORDER BY qty, name"),
])
def test_other_results_are_kept(tmp_path: Path, first: str, second: str) -> None:
    kept, drops = _screen(tmp_path, [first, second])
    assert [k.sql for k in kept] == [first, second], drops


def test_columns_of_the_same_values_paired_otherwise_are_another_result() -> None:
    """Each column holds the same values, but the rows pair them otherwise: not one result in another column order."""
    from types import SimpleNamespace

    from pytest_sqleval.datasets.generate import _result_key

    def result(rows):
        return SimpleNamespace(columns=["a", "b"], rows=rows)

    assert _result_key(result([(1, "x"), (2, "y")]), False) == _result_key(result([("y", 2), ("x", 1)]), False)
    assert _result_key(result([(1, "x"), (2, "y")]), False) != _result_key(result([(1, "y"), (2, "x")]), False)
    assert _result_key(result([(1, "x"), (2, "y")]), True) != _result_key(result([("y", 2), ("x", 1)]), True)
    assert _result_key(result([(1, "x"), (2, "y")]), True) == _result_key(result([("x", 1), ("y", 2)]), True)
