"""Reading a PostgreSQL schema for exact match (column names only) must not print SQLAlchemy's "Did not recognize
type" warning into the user's run for a column of a type SQLAlchemy does not know (a composite type, citext)."""

from __future__ import annotations

import textwrap
import uuid


def test_a_column_of_a_type_sqlalchemy_does_not_know_prints_no_warning(pytester, postgres_url):
    from sqlalchemy import create_engine

    suffix = uuid.uuid4().hex[:8]
    table, kind = f"items_{suffix}", f"pair_{suffix}"
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE TYPE {kind} AS (a int, b int)")
        conn.exec_driver_sql(f"CREATE TABLE {table} (id int, p {kind})")
        conn.exec_driver_sql(f"INSERT INTO {table} VALUES (1, ROW(1, 2))")
    try:
        pytester.makefile(".sqleval.yaml", pg=textwrap.dedent(f"""
            database: "{postgres_url}"
            exact_match: spider
            cases:
              - {{id: a, gold: "SELECT id FROM {table}", predicted: "SELECT id FROM {table}"}}
        """))
        result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "-W", "error::Warning")
        output = result.stdout.str() + result.stderr.str()
        assert "Did not recognize type" not in output, output
        assert result.ret == 0, output
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
            conn.exec_driver_sql(f"DROP TYPE IF EXISTS {kind}")
        admin.dispose()
