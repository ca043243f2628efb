"""The hostile-prediction corpus: statements a model might emit that must never do harm.

Each entry is (name, SQL, expected error kind). The tables they aim at exist in
the shop database of ``conftest.SHOP_SQL``.
"""

from __future__ import annotations

DEEP = "SELECT " + "(" * 5000 + "1" + ")" * 5000
INVALID_UTF8 = b"SELECT '\xff\xfe' FROM tickets".decode("utf-8", errors="surrogateescape")

COMMON = [
    ("delete", "DELETE FROM tickets", "rejected"),
    ("drop", "DROP TABLE tickets", "rejected"),
    ("update", "UPDATE tickets SET hours = 0", "rejected"),
    ("insert", "INSERT INTO shops VALUES (9, 'Pwned')", "rejected"),
    ("create-table", "CREATE TABLE pwned (a INTEGER)", "rejected"),
    ("create-view", "CREATE VIEW pwned AS SELECT 1", "rejected"),
    ("alter", "ALTER TABLE shops ADD COLUMN pwned INTEGER", "rejected"),
    ("truncate", "TRUNCATE TABLE tickets", "rejected"),
    ("select-then-drop", "SELECT 1; DROP TABLE tickets", "rejected"),
    ("drop-then-select", "DROP TABLE tickets; SELECT 1", "rejected"),
    ("two-selects", "SELECT 1; SELECT 2", "rejected"),
    ("transaction", "BEGIN", "rejected"),
    ("cte-delete", "WITH x AS (SELECT 1) DELETE FROM tickets", "rejected"),
    ("deeply-nested", DEEP, "rejected"),
    ("invalid-utf8", INVALID_UTF8, "syntax"),
    ("unfinished", "SELECT * FROM tickets WHERE", "syntax"),
    ("unknown-table", "SELECT * FROM no_such_table", "syntax"),
]

SQLITE = [
    ("attach", "ATTACH DATABASE '/tmp/sqleval-pwned.db' AS pwned", "rejected"),
    ("load-extension", "SELECT load_extension('/tmp/pwned.so')", "rejected"),
    ("readfile", "SELECT readfile('/etc/passwd')", "rejected"),
    ("pragma-query-only", "PRAGMA query_only = 0", "rejected"),
    ("pragma-writable-schema", "PRAGMA writable_schema = 1", "rejected"),
    ("vacuum-into", "VACUUM INTO '/tmp/sqleval-pwned.db'", "rejected"),
    ("runaway-join",
     "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) "
     "SELECT count(*) FROM n a, n b WHERE a.i + b.i = 7", "timeout"),
    ("huge-result", "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n", "row_limit"),
    ("huge-blob", "SELECT randomblob(500000000)", "memory"),  # SQLite: string or blob too big (a resource limit)
]

DUCKDB = [
    ("read-csv", "SELECT * FROM read_csv('/etc/passwd')", "rejected"),
    ("read-file-literal", "SELECT * FROM '/etc/passwd'", "rejected"),
    ("read-parquet-s3", "SELECT * FROM read_parquet('s3://bucket/data.parquet')", "rejected"),
    ("glob", "SELECT * FROM glob('/etc/*')", "rejected"),
    ("copy-to", "COPY tickets TO '/tmp/sqleval-pwned.csv'", "rejected"),
    ("install", "INSTALL httpfs", "rejected"),
    ("load", "LOAD httpfs", "rejected"),
    ("attach", "ATTACH '/tmp/sqleval-pwned.duckdb' AS pwned", "rejected"),
    ("set", "SET enable_external_access = true", "rejected"),
    ("export", "EXPORT DATABASE '/tmp/sqleval-pwned'", "rejected"),
    ("dynamic-sql", "SELECT * FROM query('DELETE FROM tickets')", "rejected"),
    ("runaway-join", "SELECT count(*) FROM range(3000000) a, range(3000000) b WHERE a.range * b.range = 7", "timeout"),
    ("huge-result", "SELECT * FROM range(100000000)", "row_limit"),
]

POSTGRES = [
    ("pg-read-file", "SELECT pg_read_file('/etc/passwd')", "rejected"),
    ("lo-import", "SELECT lo_import('/etc/passwd')", "rejected"),
    ("copy-program", "COPY tickets FROM PROGRAM 'id'", "rejected"),
    ("copy-to-file", "COPY (SELECT 1) TO '/tmp/sqleval-pwned'", "rejected"),
    ("dblink", "SELECT * FROM dblink('host=evil', 'select 1') AS t(a int)", "rejected"),
    ("query-to-xml", "SELECT query_to_xml('delete from tickets', true, true, '')", "rejected"),
    ("set-config", "SELECT set_config('default_transaction_read_only', 'off', false)", "rejected"),
    ("cte-delete-returning", "WITH d AS (DELETE FROM tickets RETURNING *) SELECT * FROM d", "rejected"),
    ("select-into", "SELECT * INTO pwned FROM tickets", "rejected"),
    ("for-update", "SELECT * FROM tickets FOR UPDATE", "rejected"),
    ("create-extension", "CREATE EXTENSION dblink", "rejected"),
    ("do-block", "DO $$ BEGIN DELETE FROM tickets; END $$", "rejected"),
    ("terminate", "SELECT pg_terminate_backend(pg_backend_pid())", "rejected"),
    ("sleep", "SELECT pg_sleep(30)", "rejected"),  # not on the allowlist of pure functions
    ("slow-pure-query", "SELECT count(*) FROM generate_series(1, 2000000000)", "timeout"),
    ("runaway-join", "SELECT count(*) FROM generate_series(1, 200000) a, generate_series(1, 200000) b WHERE a + b = 7",
     "timeout"),
    # generate_series in FROM materialises before the first row; a nested loop of three streams.
    ("huge-result", "SELECT a FROM generate_series(1, 1000) a, generate_series(1, 1000) b, generate_series(1, 1000) c",
     "row_limit"),
]

BY_ENGINE = {"sqlite": COMMON + SQLITE, "duckdb": COMMON + DUCKDB, "postgresql": COMMON + POSTGRES}

#: Writes sent past the guard (as if it had a gap): the engine itself must refuse them.
ENGINE_SIDE_WRITES = {
    "sqlite": ["DELETE FROM tickets", "INSERT INTO shops VALUES (9, 'Pwned')", "CREATE TABLE pwned (a INTEGER)",
               "ATTACH DATABASE '/tmp/sqleval-pwned.db' AS pwned", "PRAGMA query_only = 0"],
    "duckdb": ["DELETE FROM tickets", "INSERT INTO shops VALUES (9, 'Pwned')", "CREATE TABLE pwned (a INTEGER)",
               "SELECT * FROM read_csv('/etc/passwd')", "COPY tickets TO '/tmp/sqleval-pwned.csv'"],
    "postgresql": ["DELETE FROM tickets", "INSERT INTO shops VALUES (9, 'Pwned')", "CREATE TABLE pwned (a INTEGER)",
                   "CREATE TEMP TABLE pwned (a INTEGER)",
                   "WITH d AS (DELETE FROM tickets RETURNING *) SELECT * FROM d"],
}
