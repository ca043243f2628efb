"""Shared by the model test files that run `pytest --sqleval` on a shop database against the loopback chat server
(tests/chat_server.py): the `shop` fixture, the run helper, the report's cases by id and a PostgreSQL database of the user's own."""

from __future__ import annotations

import json
import uuid

import pytest

from conftest import make_sqlite, require_module


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


def pg_database_fixture(prefix: str):
    """The `pg_database` fixture (assign it in the test module: `pg_database = pg_database_fixture("qa8")`): a
    PostgreSQL database of the user's own, named ``<prefix>_<random>``, and a function that runs SQL in it; yields
    ``(url, sql)`` and drops the database at the end."""

    @pytest.fixture
    def pg_database(request):
        psycopg = require_module("psycopg")
        from sqlalchemy.engine import make_url

        parsed = make_url(request.getfixturevalue("postgres_url"))
        dsn = dict(host=parsed.host, port=parsed.port, user=parsed.username, password=parsed.password)
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(**dsn, dbname=parsed.database, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')

        def sql(text: str) -> None:
            with psycopg.connect(**dsn, dbname=name, autocommit=True) as conn:
                conn.execute(text)

        yield parsed.set(database=name).render_as_string(hide_password=False), sql
        with psycopg.connect(**dsn, dbname=parsed.database, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return pg_database
