"""The second hostile corpus (issue 7): classes, each with variations, per engine.

Each entry is (class, name, SQL, accepted kinds). ``{secret}`` in a statement is replaced by the path
of a planted file whose content must never appear in any output. The tables exist in ``conftest.SHOP_SQL``.
"""

from __future__ import annotations


def _nested_parens(depth: int) -> str:
    return "SELECT " + "(" * depth + "1" + ")" * depth


def _nested_scalar(depth: int) -> str:
    return "SELECT " + "(SELECT " * depth + "1" + ")" * depth


def _and_chain(n: int) -> str:
    return "SELECT count(*) FROM tickets WHERE " + " AND ".join(f"hours > {-i}" for i in range(n))


def _nested_in(depth: int) -> str:
    sql = "SELECT id FROM tickets"
    for _ in range(depth):
        sql = f"SELECT id FROM tickets WHERE id IN ({sql})"
    return sql


def _cte_chain(n: int) -> str:
    ctes = ["c0 AS (SELECT 1 AS x)"] + [f"c{i} AS (SELECT x + 1 AS x FROM c{i - 1})" for i in range(1, n)]
    return "WITH " + ", ".join(ctes) + f" SELECT x FROM c{n - 1}"


# A. Nesting and size: scored (as a miss or a rejection), never a crash of the run.
NESTING = [
    ("A", "parens-50", _nested_parens(50), ("ok", "rejected", "syntax")),
    ("A", "parens-300", _nested_parens(300), ("ok", "rejected", "syntax")),
    ("A", "parens-3000", _nested_parens(3000), ("rejected", "syntax")),
    ("A", "and-1000", _and_chain(1000), ("ok", "rejected", "syntax")),
    ("A", "and-5000", _and_chain(5000), ("ok", "rejected", "syntax", "timeout")),
    ("A", "scalar-subqueries-20", _nested_scalar(20), ("ok", "rejected", "syntax")),
    ("A", "in-subqueries-25", _nested_in(25), ("ok", "rejected", "syntax")),
    ("A", "cte-chain-60", _cte_chain(60), ("ok", "rejected", "syntax")),
    ("A", "case-nest-200", "SELECT " + "CASE WHEN 1=1 THEN " * 200 + "1" + " END" * 200, ("ok", "rejected", "syntax")),
]

# B. One long step that the engine's own interrupt cannot stop.
SQLITE_LONG = [
    ("B", "like-long", "SELECT replace(hex(zeroblob(1000000)),'0','a') LIKE '%' || replace(hex(zeroblob(5000)),'0','a') || 'b'",
     ("timeout",)),
    ("B", "glob-long", "SELECT replace(hex(zeroblob(1000000)),'0','a') GLOB '*' || replace(hex(zeroblob(5000)),'0','a') || 'b'",
     ("timeout",)),
    ("B", "like-in-where",
     "SELECT count(*) FROM tickets WHERE replace(hex(zeroblob(800000)),'0','a') LIKE '%' || replace(hex(zeroblob(4000)),'0','a') || 'c'",
     ("timeout",)),
    ("B", "printf-width", "SELECT length(printf('%.*c', 2000000000, 'x'))", ("timeout", "runtime", "memory", "ok")),
]

POSTGRES_LONG = [
    ("B", "like-constants", "SELECT repeat('a', 3000000) LIKE '%' || repeat('a', 3000) || 'b'", ("timeout",)),
    ("B", "sleep", "SELECT pg_sleep(30)", ("rejected", "timeout")),
    ("B", "sleep-for", "SELECT pg_sleep_for('30 seconds')", ("rejected", "timeout")),
]

# C. Functions that execute an SQL string (and so anything the string says).
POSTGRES_DYNAMIC = [
    ("C", "ts-stat-read-file", "SELECT * FROM ts_stat($$SELECT to_tsvector(pg_read_file('{secret}'))$$)", ("rejected",)),
    ("C", "ts-stat-ls-dir", "SELECT * FROM ts_stat('SELECT to_tsvector(string_agg(f, '' '')) FROM pg_ls_dir(''/'') f')",
     ("rejected",)),
    ("C", "ts-stat-terminate",
     "SELECT * FROM ts_stat('SELECT to_tsvector(pg_terminate_backend(pid)::text) FROM pg_stat_activity')", ("rejected",)),
    ("C", "ts-rewrite", "SELECT ts_rewrite('a & b'::tsquery, 'SELECT ''a''::tsquery, ''c''::tsquery')", ("rejected",)),
    ("C", "query-to-xml", "SELECT query_to_xml('select pg_read_file(''{secret}'')', true, true, '')", ("rejected",)),
    ("C", "query-to-xml-schema-qualified",
     "SELECT pg_catalog.query_to_xml('select 1', true, true, '')", ("rejected",)),
    ("C", "cursor-to-xml", "SELECT cursor_to_xml('c', 1, true, true, '')", ("rejected",)),
    ("C", "table-to-xml", "SELECT table_to_xml('tickets', true, true, '')", ("rejected",)),
    ("C", "quoted-name", 'SELECT "pg_read_file"(\'{secret}\')', ("rejected",)),
    ("C", "upper-name", "SELECT PG_READ_FILE('{secret}')", ("rejected",)),
    ("C", "unicode-escape-name", 'SELECT U&"pg\\005fread\\005ffile"(\'{secret}\')', ("rejected", "syntax")),
    ("C", "in-subquery", "SELECT id FROM tickets WHERE shop_id IN (SELECT length(pg_read_file('{secret}')))",
     ("rejected",)),
    ("C", "in-cte", "WITH x AS (SELECT pg_read_binary_file('{secret}') AS b) SELECT * FROM x", ("rejected",)),
    ("C", "in-case", "SELECT CASE WHEN 1 = 1 THEN pg_read_file('{secret}') END", ("rejected",)),
    ("C", "ls-dir", "SELECT * FROM pg_ls_dir('/tmp')", ("rejected",)),
    ("C", "stat-file", "SELECT pg_stat_file('{secret}')", ("rejected",)),
    ("C", "lo-import", "SELECT lo_import('{secret}')", ("rejected",)),
]

DUCKDB_DYNAMIC = [
    ("C", "json-execute", "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))", ("rejected",)),
    ("C", "query", "SELECT * FROM query('SELECT * FROM tickets')", ("rejected",)),
    ("C", "query-table", "SELECT * FROM query_table('tickets')", ("rejected",)),
    ("C", "read-text", "SELECT * FROM read_text('{secret}')", ("rejected",)),
    ("C", "read-blob", "SELECT * FROM read_blob('{secret}')", ("rejected",)),
    ("C", "read-csv-upper", "SELECT * FROM READ_CSV('{secret}')", ("rejected",)),
    ("C", "file-literal", "SELECT * FROM '{secret}'", ("rejected",)),
    ("C", "getenv", "SELECT getenv('HOME')", ("rejected",)),
    ("C", "settings", "SELECT * FROM duckdb_settings()", ("rejected",)),
]

SQLITE_DYNAMIC = [
    ("C", "readfile", "SELECT readfile('{secret}')", ("rejected",)),
    ("C", "load-extension-upper", "SELECT LOAD_EXTENSION('/tmp/x.so')", ("rejected",)),
    ("C", "fts3-tokenizer", "SELECT fts3_tokenizer('simple')", ("rejected",)),
    ("C", "unknown-function", "SELECT writefile('/tmp/sqleval-x', 'y')", ("rejected",)),
]

# D. Memory.
SQLITE_MEMORY = [
    ("D", "zeroblob-rows",
     "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<1000) SELECT zeroblob(9000000) FROM r",
     ("memory", "timeout")),
    ("D", "randomblob-rows",
     "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<3000) SELECT randomblob(5000000) FROM r",
     ("memory", "timeout")),
    ("D", "group-concat", "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<100000) "
     "SELECT length(group_concat(hex(zeroblob(5000)))) FROM r", ("memory", "runtime", "timeout")),
]

DUCKDB_MEMORY = [
    ("D", "repeat-rows", "SELECT repeat('x', 5000000) FROM range(100000)", ("memory",)),
    ("D", "list-agg", "SELECT list(repeat('y', 1000)) FROM range(10000000)", ("memory", "timeout")),
    ("D", "string-agg", "SELECT length(string_agg(repeat('z', 1000), ',')) FROM range(3000000)", ("memory", "timeout")),
]

POSTGRES_MEMORY = [
    ("D", "repeat-rows", "SELECT repeat('x', 5000000) FROM generate_series(1, 100000)", ("memory", "timeout", "runtime")),
    ("D", "string-agg", "SELECT length(string_agg(repeat('z', 1000), ',')) FROM generate_series(1, 3000000)",
     ("memory", "timeout", "runtime")),
]

# K. Server state and secrets in system catalogues.
POSTGRES_STATE = [
    ("K", "advisory-lock", "SELECT pg_advisory_lock(42)", ("rejected",)),
    ("K", "try-advisory-lock-shared", "SELECT pg_try_advisory_lock_shared(42)", ("rejected",)),
    ("K", "advisory-xact", "SELECT pg_advisory_xact_lock(1, 2)", ("rejected",)),
    ("K", "stat-reset", "SELECT pg_stat_reset()", ("rejected",)),
    ("K", "backup-start", "SELECT pg_backup_start('x')", ("rejected",)),
    ("K", "reload-conf", "SELECT pg_reload_conf()", ("rejected",)),
    ("K", "authid", "SELECT rolname, rolpassword FROM pg_authid", ("rejected",)),
    ("K", "authid-qualified", "SELECT * FROM pg_catalog.pg_authid", ("rejected",)),
    ("K", "shadow", "SELECT * FROM pg_shadow", ("rejected",)),
    ("K", "hba", "SELECT * FROM pg_hba_file_rules", ("rejected",)),
    ("K", "file-settings", "SELECT * FROM pg_file_settings", ("rejected",)),
    ("K", "set-config-nested", "SELECT (SELECT set_config('work_mem', '1GB', false))", ("rejected",)),
    ("K", "nextval", "SELECT nextval('some_seq')", ("rejected",)),
    ("K", "notify", "SELECT pg_notify('c', 'x')", ("rejected",)),
]

BY_ENGINE = {
    "sqlite": NESTING + SQLITE_LONG + SQLITE_DYNAMIC + SQLITE_MEMORY,
    "duckdb": NESTING + DUCKDB_DYNAMIC + DUCKDB_MEMORY,
    "postgresql": NESTING + POSTGRES_LONG + POSTGRES_DYNAMIC + POSTGRES_MEMORY + POSTGRES_STATE,
}
