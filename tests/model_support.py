"""Shared by the model test files that run `pytest --sqleval` on a shop database against the loopback chat server
(tests/chat_server.py): the `shop` fixture, the run helper and the report's cases by id."""

from __future__ import annotations

import json

import pytest

from conftest import make_sqlite


def shop_fixture():
    """The `shop` fixture (assign it in the test module: `shop = shop_fixture()`): pytester with shop.sqlite."""

    @pytest.fixture
    def shop(pytester: pytest.Pytester) -> pytest.Pytester:
        make_sqlite(pytester.path / "shop.sqlite")
        return pytester

    return shop


def run(pytester: pytest.Pytester, *args: str, report: str = "report.json"):
    """`pytest --sqleval` (in a subprocess under -n) and its JSON report (None when none was written)."""
    path = pytester.path / report
    if path.exists():
        path.unlink()
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    result = runner("--sqleval", f"--sqleval-json={path}", "-p", "no:cacheprovider", *args)
    return result, (json.loads(path.read_text()) if path.exists() else None)


def by_id(report) -> dict:
    return {c["id"]: c for c in report["cases"]}
