"""Shared by the core-plugin QA files that run `pytest --sqleval` on a small SQLite database through pytester: the
`shop` fixture (a table ``t`` of five numbers), writing a suite file and running with the JSON report."""

from __future__ import annotations

import json
import sqlite3
import textwrap

import pytest


def numbers_shop_fixture():
    """The `shop` fixture (assign it in the test module: `shop = numbers_shop_fixture()`): pytester with
    ``shop.sqlite`` holding one table ``t`` of five numbers."""

    @pytest.fixture
    def shop(pytester: pytest.Pytester) -> pytest.Pytester:
        """A pytester folder holding ``shop.sqlite`` (one table ``t`` of five numbers)."""
        con = sqlite3.connect(pytester.path / "shop.sqlite")
        con.executescript("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2), (3), (4), (5);")
        con.commit()
        con.close()
        return pytester

    return shop


def write(pytester: pytest.Pytester, name: str, text: str) -> None:
    """Write ``text`` (dedented) to ``name`` under the pytester folder, making its folders."""
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def run_report(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    """``pytest --sqleval`` with the JSON report; the result and the report."""
    result = pytester.runpytest("-p", "no:cacheprovider", "--sqleval", "--sqleval-json", "report.json", *args)
    return result, json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
