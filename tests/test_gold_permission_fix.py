"""A gold reading a PostgreSQL table that the URL's user may not read (SQLSTATE 42501, permission denied) is kind
`rejected`, as a write is: the fix line must also name the permission (GRANT SELECT), not only "split the queries
and move writes to setup:", which sends the user the wrong way."""

from __future__ import annotations

import json
import textwrap
import uuid

import pytest

from test_engines_qa5 import pg_role  # noqa: F401 - the fixture: a login role of its own, dropped afterwards


def test_a_gold_the_urls_user_may_not_read_names_the_grant(pytester, pg_role):  # noqa: F811
    name, url, admin = pg_role
    table = f"secret_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {table} (x int)")
        conn.exec_driver_sql(f"REVOKE ALL ON {table} FROM PUBLIC")
    try:
        pytester.makefile(".sqleval.yaml", pg=textwrap.dedent(f"""
            database: "{url}"
            cases:
              - {{id: open, gold: "SELECT 1", predicted: "SELECT 1"}}
              - {{id: closed, gold: "SELECT x FROM {table}", predicted: "SELECT 1"}}
        """))
        result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json=r.json")
        cases = {c["id"]: c for c in json.loads((pytester.path / "r.json").read_text())["cases"]}
        assert cases["open"]["outcome"] == "passed"
        assert cases["closed"]["outcome"] == "error"
        output = "\n".join(result.outlines)
        assert "permission denied" in output
        fix = next(line for line in result.outlines if "fix: the gold SQL of case closed" in line)
        assert "GRANT SELECT" in fix and "the URL's user may not read a table the gold reads" in fix
        assert result.ret == pytest.ExitCode.TESTS_FAILED
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")


def test_a_sqlite_gold_that_writes_gets_no_permission_line(pytester):
    from conftest import make_sqlite

    make_sqlite(pytester.path / "shop.sqlite", "CREATE TABLE t (x int);")
    pytester.makefile(".sqleval.yaml", s="""
        database: shop.sqlite
        cases:
          - {id: w, gold: "DELETE FROM t", predicted: "SELECT 1"}
        """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    fix = next(line for line in result.outlines if "fix: the gold SQL of case w" in line)
    assert "must be one read-only query" in fix and "GRANT" not in fix
