"""The allowlist guard: a prediction may call only functions known to be pure on its dialect.

Legitimate queries using many pure functions pass the guard AND run for real (SQLite and DuckDB files,
a PostgreSQL server); every class of issue 7 C and K, with variations, is rejected with the function or
relation named; the per-dialect lists hold no known-dangerous name; ``allow_functions`` lets a user's
own function through, from the suite and from the ini file.
"""

from __future__ import annotations

import json
import sqlite3
import textwrap

import pytest
import sqlglot

from conftest import SHOP_SQL, make_sqlite, require_module
from pytest_sqleval.errors import QueryError
from pytest_sqleval.execution.runner import run_query
from pytest_sqleval.sql import allowed_functions
from pytest_sqleval.sql.guard import check_prediction

TIMEOUT = 10.0
MAX_ROWS = 1000

# --------------------------------------------------------------------------- legitimate queries
SQLITE_OK = [
    "SELECT abs(-hours), ceil(hours), ceiling(hours), floor(hours), round(hours, 1), sqrt(hours), power(hours, 2), "
    "pow(2, 3), exp(1), ln(hours), log(hours), log10(hours), log2(hours), mod(id, 2), pi(), sign(-hours), "
    "trunc(hours), degrees(pi()), radians(180), sin(0), cos(0), atan2(1, 1) FROM tickets",
    "SELECT upper(aircraft), lower(status), length(aircraft), substr(aircraft, 1, 2), substring(aircraft, 2), "
    "replace(aircraft, '-', ''), trim('  x '), ltrim(aircraft, '9'), rtrim(aircraft, 'A'), instr(aircraft, 'S'), "
    "hex(id), quote(status), printf('%05.1f', hours), format('%d', id), char(65), unicode('A'), typeof(hours), "
    "coalesce(NULL, status), ifnull(NULL, 1), nullif(status, 'open'), iif(hours > 3, 'long', 'short'), "
    "max(1, id), min(1, id) FROM tickets",
    "SELECT date('2024-03-01', '+1 month'), time('12:00'), datetime('2024-03-01 10:00'), julianday('2024-03-01'), "
    "strftime('%Y', '2024-03-01'), unixepoch('2024-03-01'), current_date IS NOT NULL, CURRENT_TIMESTAMP IS NOT NULL",
    "SELECT shop_id, count(*), count(DISTINCT aircraft), sum(hours), avg(hours), total(hours), "
    "group_concat(aircraft, ','), max(hours), min(hours) FROM tickets GROUP BY shop_id HAVING count(*) > 0",
    "SELECT id, row_number() OVER (ORDER BY id), rank() OVER (PARTITION BY shop_id ORDER BY hours), "
    "dense_rank() OVER w, percent_rank() OVER w, cume_dist() OVER w, ntile(2) OVER w, lag(hours) OVER w, "
    "lead(hours, 1, 0) OVER w, first_value(hours) OVER w, last_value(hours) OVER w, nth_value(hours, 2) OVER w, "
    "sum(hours) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM tickets WINDOW w AS (ORDER BY id)",
    "SELECT json_extract('{\"a\": [1, 2]}', '$.a[1]'), json_array(1, 2), json_object('a', 1), "
    "json_array_length('[1, 2]'), json_type('{\"a\": 1}', '$.a'), json_valid('{}'), json_set('{}', '$.a', 1), "
    "json_insert('{}', '$.b', 2), json_replace('{\"a\": 1}', '$.a', 3), json_remove('{\"a\": 1}', '$.a'), "
    "json_patch('{}', '{\"x\": 1}'), json_quote('x'), json('{\"a\" : 1}'), '{\"a\": 1}' -> '$.a', "
    "'{\"a\": 1}' ->> '$.a'",
    "SELECT json_group_array(id), json_group_object(aircraft, hours) FROM tickets",
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) "
    "SELECT sum(i), CASE WHEN max(i) > 3 THEN upper('big') ELSE lower('SMALL') END FROM n",
    "SELECT CAST(hours AS INTEGER), CAST(id AS TEXT), likely(1), unlikely(0), likelihood(1, 0.5), "
    "length(randomblob(4)), random() IS NOT NULL, zeroblob(2), glob('9V*', aircraft), like('9V%', aircraft), "
    "aircraft GLOB '9V*', aircraft LIKE '9v%' FROM tickets",
    "SELECT s.name, (SELECT count(*) FROM tickets t WHERE t.shop_id = s.id AND upper(t.status) = 'OPEN') AS open "
    "FROM shops AS s WHERE s.id IN (SELECT shop_id FROM tickets GROUP BY shop_id HAVING sum(hours) > round(2.5))",
    # eponymous virtual tables: declaring their columns asks the authorizer for a schema write (allowed, see
    # backends/sqlite.py) that no statement can make on the read-only connection
    "SELECT key, value FROM json_each('[1, 2, 3]') WHERE value > 1",
    "SELECT fullkey FROM json_tree('{\"a\": {\"b\": 1}}')",
    "SELECT t.id, j.value FROM tickets AS t, json_each(json_array(t.id, t.hours)) AS j",
]

DUCKDB_OK = [
    "SELECT abs(-hours), ceil(hours), floor(hours), round(hours, 1), sqrt(hours), pow(hours, 2), power(2, 3), "
    "exp(1), ln(hours), log10(hours), log2(hours), mod(id, 2), pi(), sign(-hours), trunc(hours), cbrt(8), "
    "factorial(5), gcd(12, 8), lcm(4, 6), greatest(1, id), least(1, id), isnan(1.0::DOUBLE), degrees(pi()), "
    "radians(180), even(3), 2 ^ 3, 7 // 2 FROM tickets",
    "SELECT upper(aircraft), lower(status), length(aircraft), substr(aircraft, 1, 2), substring(aircraft, 2, 3), "
    "replace(aircraft, '-', ''), trim('  x '), ltrim(aircraft, '9'), rtrim(aircraft, 'A'), instr(aircraft, 'S'), "
    "strpos(aircraft, 'S'), contains(aircraft, 'SM'), starts_with(aircraft, '9V'), ends_with(aircraft, 'A'), "
    "concat(aircraft, status), concat_ws('-', aircraft, status), lpad(status, 8, '*'), rpad(status, 8, '*'), "
    "left(aircraft, 2), right(aircraft, 2), reverse(status), repeat('x', 2), split_part(aircraft, '-', 2), "
    "string_split(aircraft, '-'), regexp_matches(aircraft, 'SM.'), regexp_replace(aircraft, '[0-9]', '#'), "
    "regexp_extract(aircraft, 'SM(.)', 1), format('{}-{}', aircraft, id), printf('%d', id), md5(status), "
    "sha256(status), hash(status), levenshtein(status, 'open'), jaro_winkler_similarity(status, 'opened'), "
    "ascii(status), chr(65), lcase(aircraft), ucase(status), position('S' IN aircraft), translate(status, 'o', '0'), "
    "strip_accents('éa'), to_base64('x'::BLOB), 'abc'.upper() FROM tickets",
    "SELECT date_trunc('month', DATE '2024-03-15'), date_part('year', DATE '2024-03-15'), "
    "extract(year FROM DATE '2024-03-15'), date_diff('day', DATE '2024-03-01', DATE '2024-03-15'), "
    "DATE '2024-03-01' + INTERVAL 1 DAY, make_date(2024, 1, 1), strftime(DATE '2024-01-01', '%Y'), "
    "strptime('2024-01-01', '%Y-%m-%d'), year(DATE '2024-03-15'), month(DATE '2024-03-15'), "
    "day(DATE '2024-03-15'), dayname(DATE '2024-03-15'), monthname(DATE '2024-03-15'), last_day(DATE '2024-02-01'), "
    "age(TIMESTAMP '2024-03-15', TIMESTAMP '2024-01-01'), now() IS NOT NULL, current_date IS NOT NULL, "
    "epoch(TIMESTAMP '2024-01-01'), to_timestamp(0), time_bucket(INTERVAL '1 day', TIMESTAMP '2024-03-15 10:00')",
    "SELECT shop_id, count(*), sum(hours), avg(hours), min(hours), max(hours), median(hours), mode(status), "
    "quantile_cont(hours, 0.5), string_agg(aircraft, ','), list(aircraft), array_agg(id), arg_max(aircraft, hours), "
    "count_if(hours > 2), bool_and(hours > 0), stddev(hours), var_pop(hours), approx_count_distinct(aircraft), "
    "first(aircraft), any_value(status), product(hours), histogram(status) FROM tickets GROUP BY shop_id",
    "SELECT id, row_number() OVER (ORDER BY id), rank() OVER (PARTITION BY shop_id ORDER BY hours), "
    "dense_rank() OVER w, percent_rank() OVER w, cume_dist() OVER w, ntile(2) OVER w, lag(hours) OVER w, "
    "lead(hours, 1, 0) OVER w, first_value(hours) OVER w, last_value(hours) OVER w, nth_value(hours, 2) OVER w "
    "FROM tickets WINDOW w AS (ORDER BY id) QUALIFY row_number() OVER (ORDER BY id) <= 5",
    "SELECT list_value(1, 2), [1, 2, 3][2], len([1, 2]), list_transform([1, 2], lambda x: x * 2), "
    "list_filter([1, 2, 3], lambda x: x > 1), list_sum([1, 2]), list_sort([3, 1]), struct_pack(a := 1), "
    "{'a': 1}.a, map([1], [2]), array_length([1, 2]), list_contains([1], 1), flatten([[1], [2]]), unnest([1, 2])",
    "SELECT range FROM range(3)",
    "SELECT * FROM generate_series(1, 3)",
    "SELECT table_name FROM duckdb_tables() ORDER BY table_name",
    "SELECT json_extract('{\"a\": 1}', '$.a'), json_extract_string('{\"a\": 1}', '$.a'), "
    "'{\"a\": 1}'::JSON ->> 'a', json_object('a', 1), json_array(1, 2), to_json([1]), json_keys('{\"a\": 1}'), "
    "json_valid('{}'), json_array_length('[1]')",
    "SELECT CAST(hours AS INTEGER), TRY_CAST('x' AS INTEGER), hours::VARCHAR, coalesce(NULL, status), "
    "nullif(status, 'open'), ifnull(NULL, 1), if(hours > 2, 'a', 'b'), typeof(hours), "
    "CASE WHEN hours > 3 THEN upper(status) ELSE lower(status) END FROM tickets",
    "WITH t AS (SELECT shop_id, sum(hours) AS h FROM tickets GROUP BY shop_id) "
    "SELECT (SELECT max(h) FROM t), upper(name) FROM shops WHERE id IN (SELECT shop_id FROM t WHERE h > round(1.5))",
]

POSTGRES_OK = [
    "SELECT abs(-hours), ceil(hours), ceiling(hours), floor(hours), round(hours::numeric, 1), sqrt(hours), "
    "power(hours, 2), exp(1), ln(hours), log(hours::numeric), log10(hours), mod(id, 2), pi(), sign(-hours), "
    "trunc(hours), cbrt(8), factorial(5), gcd(12, 8), lcm(4, 6), div(7, 2), width_bucket(hours, 0, 10, 5), "
    "degrees(pi()), radians(180), greatest(1, id), least(1, id), random() IS NOT NULL, sin(0), cos(0), "
    "atan2(1, 1) FROM tickets",
    "SELECT upper(aircraft), lower(status), length(aircraft), char_length(status), substr(aircraft, 1, 2), "
    "substring(aircraft FROM 1 FOR 2), replace(aircraft, '-', ''), trim(BOTH 'x' FROM 'xax'), btrim('  a '), "
    "ltrim(aircraft, '9'), rtrim(aircraft, 'A'), position('S' IN aircraft), strpos(aircraft, 'S'), "
    "concat(aircraft, status), concat_ws('-', aircraft, status), lpad(status, 8, '*'), rpad(status, 8, '*'), "
    "left(aircraft, 2), right(aircraft, 2), reverse(status), repeat('x', 2), split_part(aircraft, '-', 2), "
    "initcap(status), md5(status), to_hex(id), format('%s-%s', aircraft, id), "
    "regexp_replace(aircraft, '[0-9]', '#', 'g'), regexp_match(aircraft, 'SM(.)'), string_to_array(aircraft, '-'), "
    "array_to_string(ARRAY[aircraft, status], ','), starts_with(aircraft, '9V'), translate(status, 'o', '0'), "
    "quote_ident(status), quote_literal(status), chr(65), ascii(status), encode(sha256(status::bytea), 'hex'), "
    "overlay(status PLACING 'XX' FROM 1 FOR 2), aircraft ~ 'SM', status ILIKE 'OP%', pg_catalog.upper(status) "
    "FROM tickets",
    "SELECT now() IS NOT NULL, current_date IS NOT NULL, date_trunc('month', TIMESTAMP '2024-03-15'), "
    "date_part('year', TIMESTAMP '2024-03-15'), extract(year FROM TIMESTAMP '2024-03-15'), "
    "age(TIMESTAMP '2024-03-15', TIMESTAMP '2024-01-01'), make_date(2024, 1, 1), "
    "to_char(TIMESTAMP '2024-03-15', 'YYYY-MM'), to_date('2024-01-01', 'YYYY-MM-DD'), to_timestamp(0), "
    "justify_days(INTERVAL '35 days'), make_interval(days => 1), clock_timestamp() IS NOT NULL, "
    "isfinite(DATE '2024-01-01'), DATE '2024-01-01' + INTERVAL '1 day', "
    "date_bin('15 minutes', TIMESTAMP '2024-01-01 10:07', TIMESTAMP '2024-01-01')",
    "SELECT shop_id, count(*), sum(hours), avg(hours), min(hours), max(hours), string_agg(aircraft, ',' ORDER BY id), "
    "array_agg(DISTINCT aircraft), json_agg(id), jsonb_agg(status), json_object_agg(aircraft, hours), "
    "bool_and(hours > 0), bool_or(hours > 3), every(hours > 0), stddev(hours), variance(hours), "
    "percentile_cont(0.5) WITHIN GROUP (ORDER BY hours), mode() WITHIN GROUP (ORDER BY status), "
    "count(*) FILTER (WHERE hours > 2), bit_and(id), bit_or(id) FROM tickets GROUP BY shop_id",
    "SELECT id, row_number() OVER (ORDER BY id), rank() OVER (PARTITION BY shop_id ORDER BY hours), "
    "dense_rank() OVER w, percent_rank() OVER w, cume_dist() OVER w, ntile(2) OVER w, lag(hours) OVER w, "
    "lead(hours, 1, 0) OVER w, first_value(hours) OVER w, last_value(hours) OVER w, nth_value(hours, 2) OVER w "
    "FROM tickets WINDOW w AS (ORDER BY id)",
    "SELECT json_build_object('a', 1), jsonb_build_array(1, 2), '{\"a\": 1}'::jsonb -> 'a', "
    "'{\"a\": 1}'::jsonb ->> 'a', jsonb_extract_path_text('{\"a\": 1}', 'a'), json_array_length('[1, 2]'), "
    "jsonb_typeof('1'), to_jsonb(ROW(1, 2)), jsonb_set('{\"a\": 1}', '{a}', '2'), jsonb_pretty('{}'), "
    "jsonb_path_query_first('{\"a\": [1, 2]}', '$.a[1]'), row_to_json(t) FROM tickets AS t",
    "SELECT * FROM generate_series(1, 3) AS g(x) JOIN unnest(ARRAY[1, 2]) AS u(y) ON g.x = u.y",
    "SELECT key, value FROM json_each('{\"a\": 1}')",
    "SELECT jsonb_array_elements('[1, 2]'), regexp_split_to_table('a,b', ',')",
    "SELECT CAST(hours AS integer), hours::text, int4(hours), text(id), date('2024-01-01'), "
    "coalesce(NULL, status), nullif(status, 'open'), num_nulls(NULL, 1), pg_typeof(hours), "
    "CASE WHEN hours > 3 THEN upper(status) ELSE lower(status) END FROM tickets",
    "SELECT to_tsvector('english', status) @@ to_tsquery('english', 'open'), "
    "ts_rank(to_tsvector('english', status), plainto_tsquery('english', 'open')) FROM tickets",
    "SELECT array_length(ARRAY[1, 2], 1), cardinality(ARRAY[1]), array_append(ARRAY[1], 2), "
    "array_position(ARRAY[1, 2], 2), array_remove(ARRAY[1, 2], 1), ARRAY(SELECT id FROM tickets ORDER BY id), "
    "int4range(1, 5) @> 3, lower(int4range(1, 5)), upper(int4range(1, 5)), isempty(int4range(1, 1)), "
    "gen_random_uuid() IS NOT NULL, current_database() IS NOT NULL",
    "WITH t AS (SELECT shop_id, sum(hours) AS h FROM tickets GROUP BY shop_id) "
    "SELECT (SELECT max(h) FROM t), upper(name) FROM shops WHERE id IN (SELECT shop_id FROM t WHERE h > round(1.5))",
    "SELECT count(*) FROM information_schema.tables WHERE table_name = 'tickets'",
]

LEGIT = {"sqlite": SQLITE_OK, "duckdb": DUCKDB_OK, "postgres": POSTGRES_OK}


@pytest.mark.parametrize("dialect, sql", [(d, q) for d, qs in LEGIT.items() for q in qs])
def test_legitimate_queries_pass_the_guard(dialect, sql):
    assert check_prediction(sql, dialect).sql == sql


@pytest.fixture(scope="module")
def real_engines(tmp_path_factory, request):
    """A SQLite file, a DuckDB file and a PostgreSQL database holding the shop tables, as the plugin opens them."""
    from pytest_sqleval.execution.backends.duckdb import duckdb_engine
    from pytest_sqleval.execution.backends.sqlite import sqlite_engine
    from pytest_sqleval.execution.engines import EngineFactory
    from pytest_sqleval.suite import DatabaseSpec

    root = tmp_path_factory.mktemp("allowlist")
    built = {"sqlite": sqlite_engine(make_sqlite(root / "shop.sqlite"))}
    factory = None
    try:
        request.getfixturevalue("duckdb_available")
        import duckdb

        path = root / "shop.duckdb"
        conn = duckdb.connect(str(path))
        conn.execute(SHOP_SQL.replace("INTEGER PRIMARY KEY", "INTEGER").replace("REFERENCES shops(id)", ""))
        conn.close()
        built["duckdb"] = duckdb_engine(f"duckdb:///{path}")
    except pytest.skip.Exception:
        pass
    try:
        url = request.getfixturevalue("postgres_url")
        script = root / "shop.sql"
        script.write_text(SHOP_SQL)
        factory = EngineFactory(build_dir=root / "build", worker="allowlist")
        built["postgres"] = factory.engine(DatabaseSpec(url, (script,)))
    except pytest.skip.Exception:
        pass
    yield built
    for engine in built.values():
        engine.dispose()
    if factory is not None:
        factory.close()


@pytest.mark.parametrize("dialect, index", [(d, i) for d, qs in LEGIT.items() for i in range(len(qs))])
def test_legitimate_queries_run_for_real(real_engines, dialect, index):
    """Each listed function exists on the engine and runs there (guarded, read-only, as a prediction)."""
    if dialect not in real_engines:
        pytest.skip(f"{dialect} is not available here")
    result = run_query(real_engines[dialect], LEGIT[dialect][index], timeout=TIMEOUT, max_rows=MAX_ROWS,
                       untrusted=True, dialect=dialect)
    assert result.rows, "every legitimate query returns at least one row"


# --------------------------------------------------------------------------- rejected: functions
#: (dialect, function, a call of it) for every class of issue 7 C and K, and the file/network/state families.
DANGEROUS_CALLS = [
    # C: functions that execute an SQL string
    ("postgres", "ts_stat", "ts_stat($$SELECT to_tsvector(pg_read_file('/etc/passwd'))$$)"),
    ("postgres", "ts_rewrite", "ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery')"),
    ("postgres", "query_to_xml", "query_to_xml('SELECT pg_read_file(''/etc/passwd'')', true, true, '')"),
    ("postgres", "query_to_xmlschema", "query_to_xmlschema('SELECT 1', true, true, '')"),
    ("postgres", "query_to_xml_and_xmlschema", "query_to_xml_and_xmlschema('SELECT 1', true, true, '')"),
    ("postgres", "cursor_to_xml", "cursor_to_xml('c', 1, true, true, '')"),
    ("postgres", "table_to_xml", "table_to_xml('tickets', true, true, '')"),
    ("postgres", "schema_to_xml", "schema_to_xml('public', true, true, '')"),
    ("postgres", "database_to_xml", "database_to_xml(true, true, '')"),
    ("postgres", "xpath", "xpath('/a', query_to_xml('SELECT 1', true, true, ''))"),
    # files and large objects
    ("postgres", "pg_read_file", "pg_read_file('/etc/passwd')"),
    ("postgres", "pg_read_binary_file", "pg_read_binary_file('/etc/passwd')"),
    ("postgres", "pg_ls_dir", "pg_ls_dir('.')"),
    ("postgres", "pg_ls_waldir", "pg_ls_waldir()"),
    ("postgres", "pg_stat_file", "pg_stat_file('postgresql.conf')"),
    ("postgres", "lo_import", "lo_import('/etc/passwd')"),
    ("postgres", "lo_get", "lo_get(1)"),
    ("postgres", "dblink", "dblink('host=evil', 'SELECT 1')"),
    # K: server state, locks, sessions, settings, sequences, sleeps
    ("postgres", "pg_advisory_lock", "pg_advisory_lock(1)"),
    ("postgres", "pg_try_advisory_lock_shared", "pg_try_advisory_lock_shared(1)"),
    ("postgres", "pg_advisory_xact_lock", "pg_advisory_xact_lock(1)"),
    ("postgres", "pg_stat_reset", "pg_stat_reset()"),
    ("postgres", "pg_stat_reset_shared", "pg_stat_reset_shared('bgwriter')"),
    ("postgres", "pg_backup_start", "pg_backup_start('x')"),
    ("postgres", "pg_terminate_backend", "pg_terminate_backend(pg_backend_pid())"),
    ("postgres", "pg_cancel_backend", "pg_cancel_backend(1)"),
    ("postgres", "set_config", "set_config('default_transaction_read_only', 'off', false)"),
    ("postgres", "current_setting", "current_setting('data_directory')"),
    ("postgres", "nextval", "nextval('s')"),
    ("postgres", "txid_current", "txid_current()"),
    ("postgres", "pg_sleep", "pg_sleep(30)"),
    ("postgres", "pg_sleep_for", "pg_sleep_for('1 minute')"),
    ("postgres", "pg_reload_conf", "pg_reload_conf()"),
    ("postgres", "pg_notify", "pg_notify('c', 'x')"),
    # DuckDB
    ("duckdb", "json_execute_serialized_sql", "json_execute_serialized_sql(json_serialize_sql('SELECT 1'))"),
    ("duckdb", "json_serialize_sql", "json_serialize_sql('SELECT 1')"),
    ("duckdb", "json_deserialize_sql", "json_deserialize_sql('{}')"),
    ("duckdb", "query", "query('SELECT 1')"),
    ("duckdb", "query_table", "query_table('tickets')"),
    ("duckdb", "read_csv", "read_csv('/etc/passwd')"),
    ("duckdb", "read_text", "read_text('/etc/passwd')"),
    ("duckdb", "read_blob", "read_blob('/etc/passwd')"),
    ("duckdb", "read_parquet", "read_parquet('s3://bucket/x.parquet')"),
    ("duckdb", "glob", "glob('/etc/*')"),
    ("duckdb", "duckdb_secrets", "duckdb_secrets()"),
    ("duckdb", "duckdb_settings", "duckdb_settings()"),
    ("duckdb", "which_secret", "which_secret('s3://x', 's3')"),
    ("duckdb", "current_setting", "current_setting('secret_directory')"),
    ("duckdb", "getvariable", "getvariable('x')"),
    ("duckdb", "nextval", "nextval('s')"),
    ("duckdb", "sleep_ms", "sleep_ms(10000)"),
    ("duckdb", "write_log", "write_log('x')"),
    ("duckdb", "checkpoint", "checkpoint()"),
    # SQLite
    ("sqlite", "load_extension", "load_extension('/tmp/pwned.so')"),
    ("sqlite", "fts3_tokenizer", "fts3_tokenizer('simple')"),
    ("sqlite", "readfile", "readfile('/etc/passwd')"),
    ("sqlite", "writefile", "writefile('/tmp/x', 'y')"),
    # any other dialect: only the common list
    ("mysql", "sleep", "sleep(10)"),
    ("mysql", "load_file", "load_file('/etc/passwd')"),
    ("mysql", "benchmark", "benchmark(1000000, md5('x'))"),
]

#: Ways to write a call: the guard must see through all of them.
WRAPPERS = {
    "select": "SELECT {call}",
    "from": "SELECT * FROM {call} AS f",
    "upper-case": "SELECT {CALL}",
    "subquery": "SELECT * FROM tickets WHERE id IN (SELECT {call} FROM shops)",
    "scalar-subquery": "SELECT (SELECT {call}) AS x",
    "cte": "WITH c AS (SELECT {call} AS x) SELECT * FROM c",
    "nested-cte": "WITH a AS (SELECT 1 AS one), b AS (SELECT (SELECT {call}) AS x FROM a) SELECT * FROM b",
    "case": "SELECT CASE WHEN id > 1 THEN {call} ELSE NULL END FROM tickets",
    "where": "SELECT id FROM tickets WHERE coalesce({call}, NULL) IS NULL",
    "window-arg": "SELECT lag({call}) OVER (ORDER BY id) FROM tickets",
    "window-order": "SELECT row_number() OVER (ORDER BY {call}) FROM tickets",
    "aggregate-arg": "SELECT max({call}) FROM tickets GROUP BY shop_id",
    "union": "SELECT 1 UNION ALL SELECT {call}",
    "inside-pure": "SELECT upper(CAST({call} AS TEXT))",
    "dropped-arg": "SELECT uuid({call})",  # sqlglot drops uuid()'s argument (uuid is not on every list)
    "comment": "SELECT /* x */ {name} /* y */ ({args})",
}


def _variants():
    for dialect, name, call in DANGEROUS_CALLS:
        args = call[len(name) + 1:-1]
        for wrapper, template in WRAPPERS.items():
            sql = template.format(call=call, CALL=name.upper() + call[len(name):], name=name, args=args)
            yield pytest.param(dialect, name, sql, id=f"{dialect}-{name}-{wrapper}")
        if dialect == "postgres":
            yield pytest.param(dialect, name, f"SELECT pg_catalog.{call}", id=f"{dialect}-{name}-pg_catalog")
            yield pytest.param(dialect, name, f"SELECT \"pg_catalog\".\"{name}\"{call[len(name):]}",
                               id=f"{dialect}-{name}-quoted-qualified")
        quoted = f"SELECT \"{name}\"{call[len(name):]}"
        yield pytest.param(dialect, name, quoted, id=f"{dialect}-{name}-quoted")


def _rejection(sql: str, dialect: str) -> QueryError | None:
    try:
        check_prediction(sql, dialect)
    except QueryError as exc:
        return exc
    return None


@pytest.mark.parametrize("dialect, name, sql", list(_variants()))
def test_dangerous_calls_are_rejected_with_the_name(dialect, name, sql):
    error = _rejection(sql, dialect)
    assert error is not None, f"passed the guard: {sql}"
    if error.kind == "syntax":  # a wrapper this dialect cannot parse is never executed either
        return
    assert error.kind == "rejected"
    assert "allowlist of pure functions" in error.message and "allow_functions" in error.message
    # the first call not on the list is named: the dangerous one (or uuid(), where uuid is not on the list)
    named = {f"calls {name}()", f"calls pg_catalog.{name}()"}
    if "uuid(" in sql and dialect not in ("postgres", "duckdb"):
        named.add("calls uuid()")
    assert any(text in error.message for text in named), error.message


@pytest.mark.parametrize("dialect, sql, node, name", [
    ("duckdb", "SELECT * FROM read_csv('/etc/passwd')", "ReadCSV", "read_csv"),
    ("duckdb", "SELECT * FROM read_parquet('x.parquet')", "ReadParquet", "read_parquet"),
])
def test_functions_sqlglot_types_are_still_checked_by_name(dialect, sql, node, name):
    """sqlglot parses these into typed nodes, not exp.Anonymous; the guard checks the called name regardless."""
    tree = sqlglot.parse_one(sql, read=dialect)
    assert any(type(n).__name__ == node for n in tree.walk())
    error = _rejection(sql, dialect)
    assert error.kind == "rejected" and f"calls {name}()" in error.message


@pytest.mark.parametrize("dialect, sql, hidden", [
    ("duckdb", "SELECT uuid(read_text('/etc/passwd'))", "read_text"),  # sqlglot drops uuid()'s argument
    ("postgres", "SELECT convert(1, pg_read_file('/etc/passwd'))", "pg_read_file"),  # sqlglot reads a type name
])
def test_a_call_sqlglot_does_not_keep_as_a_call_is_still_found(dialect, sql, hidden):
    """The tree has no function node for the hidden call (gone, or turned into a type); the text still calls it."""
    tree = sqlglot.parse_one(sql, read=dialect)
    assert not any(isinstance(n, sqlglot.exp.Anonymous) and n.name.lower() == hidden for n in tree.walk())
    error = _rejection(sql, dialect)
    assert error.kind == "rejected" and f"calls {hidden}()" in error.message


def test_the_rejection_message_names_the_function_and_the_fix():
    error = _rejection("SELECT ts_stat('SELECT 1')", "postgres")
    assert error.kind == "rejected"
    assert error.message == (
        "calls ts_stat(), which is not on the postgres allowlist of pure functions; if it is your own function, "
        "allow it with `allow_functions: [ts_stat]` in the suite or the ini option sqleval_allow_functions"
    )


@pytest.mark.parametrize("sql", [
    'SELECT U&"pg\\005fread\\005ffile"(\'/etc/passwd\')',
    'SELECT u&"pg\\005fread\\005ffile"(\'/etc/passwd\')',
    'SELECT U&"\\0070\\0067_read_file"(\'/etc/passwd\')',
    'SELECT upper(U&"name") FROM shops',
    'SELECT id FROM tickets WHERE U&"status" = \'open\'',
    'SELECT (SELECT U&"pg\\005fls\\005fdir"(\'.\') LIMIT 1)',
])
def test_unicode_escaped_identifiers_are_rejected_as_a_class(sql):
    error = _rejection(sql, "postgres")
    assert error is not None and error.kind == "rejected", sql
    assert "Unicode-escaped identifier" in error.message


def test_unicode_escapes_with_uescape_never_run():
    error = _rejection('SELECT U&"pg!005fread!005ffile" UESCAPE \'!\' (\'/etc/passwd\')', "postgres")
    assert error is not None and error.kind in ("rejected", "syntax")


def test_a_bitwise_and_with_spaces_is_not_an_escape():
    """`u & "x"` (spaces) is PostgreSQL's bitwise AND of two columns, not a Unicode identifier."""
    check_prediction('SELECT u & "x" FROM (SELECT 1 AS u, 3 AS x) AS t', "postgres")


@pytest.mark.parametrize("sql, name", [
    ('SELECT "PG_READ_FILE"(\'/etc/passwd\')', "PG_READ_FILE"),  # quoted: exact on PostgreSQL, and not on the list
    ("SELECT Pg_Read_File('/etc/passwd')", "pg_read_file"),  # unquoted: folded to lower case
    ("SELECT public.upper('x')", "public.upper"),  # a function outside pg_catalog is the database's own
    ("SELECT evil.trim(name) FROM shops", "evil.trim"),
])
def test_postgres_names_resolve_as_the_engine_would(sql, name):
    error = _rejection(sql, "postgres")
    assert error is not None and error.kind == "rejected"
    assert f"calls {name}()" in error.message


def test_quoted_builtin_names_pass_like_the_engine_resolves_them():
    check_prediction('SELECT "upper"(name), pg_catalog.lower(name) FROM shops', "postgres")
    check_prediction('SELECT "UPPER"(name), [lower](name), `length`(name) FROM shops', "sqlite")
    check_prediction('SELECT "UPPER"(name) FROM shops', "duckdb")


@pytest.mark.parametrize("sql", [
    "SELECT * FROM ts_stat($$SELECT to_tsvector(pg_read_file('/etc/passwd'))$$)",
    "SELECT word FROM ts_stat('SELECT to_tsvector(x) FROM (SELECT pg_advisory_lock(4242)::text AS x) s')",
    "SELECT pg_try_advisory_lock_shared(4243)",
    "SELECT pg_advisory_lock(4244) FROM tickets",
    "SELECT query_to_xml('SELECT pg_read_file(''/etc/passwd'')', true, true, '')",
    "SELECT rolpassword FROM pg_authid",
    "SELECT * FROM pg_stat_activity",
])
def test_postgres_attacks_never_reach_the_server(real_engines, sql):
    """Through the runner on a real server: rejected, no file content anywhere, no advisory lock left held."""
    if "postgres" not in real_engines:
        pytest.skip("postgres is not available here")
    engine = real_engines["postgres"]
    with pytest.raises(QueryError) as info:
        run_query(engine, sql, timeout=TIMEOUT, max_rows=MAX_ROWS, untrusted=True, dialect="postgres")
    assert info.value.kind == "rejected"
    assert "root:" not in info.value.message
    from sqlalchemy import text

    with engine.connect() as conn:
        held = conn.execute(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")).scalar()
    assert held == 0


def test_a_suite_dialect_other_than_the_engines_is_guarded_as_the_engine_reads_too(real_engines):
    """A `dialect: sqlite` suite run on PostgreSQL: the server lexes and resolves the text, so the guard also
    reads it as PostgreSQL (iif is pure on SQLite's list, unknown on PostgreSQL's)."""
    if "postgres" not in real_engines:
        pytest.skip("postgres is not available here")
    sql = "SELECT iif(1 = 1, 'a', 'b')"
    check_prediction(sql, "sqlite")
    with pytest.raises(QueryError) as info:
        run_query(real_engines["postgres"], sql, timeout=TIMEOUT, max_rows=MAX_ROWS, untrusted=True, dialect="sqlite")
    assert info.value.kind == "rejected" and "postgres allowlist" in info.value.message


# --------------------------------------------------------------------------- rejected: relations
@pytest.mark.parametrize("sql, relation", [
    ("SELECT rolname, rolpassword FROM pg_authid", "pg_authid"),
    ("SELECT * FROM pg_catalog.pg_authid", "pg_authid"),
    ('SELECT * FROM "pg_authid"', "pg_authid"),
    ("SELECT * FROM PG_AUTHID", "pg_authid"),
    ("TABLE pg_authid", "pg_authid"),
    ("SELECT (SELECT passwd FROM pg_shadow LIMIT 1)", "pg_shadow"),
    ("SELECT * FROM pg_user_mappings", "pg_user_mappings"),
    # passwords masked, but rolconfig/useconfig show per-role settings (ALTER ROLE ... SET app.secret = ...)
    ("SELECT rolname, rolconfig FROM pg_roles WHERE rolname = current_user", "pg_roles"),
    ("SELECT useconfig FROM pg_catalog.pg_user", "pg_user"),
    ("SELECT * FROM pg_hba_file_rules", "pg_hba_file_rules"),
    ("SELECT * FROM pg_ident_file_mappings", "pg_ident_file_mappings"),
    ("SELECT * FROM pg_file_settings", "pg_file_settings"),
    ("SELECT name, setting FROM pg_settings", "pg_settings"),
    ("SELECT * FROM pg_stat_activity", "pg_stat_activity"),
    ("SELECT * FROM pg_stat_user_tables", "pg_stat_user_tables"),
    ("SELECT * FROM pg_statio_all_tables", "pg_statio_all_tables"),
    ("SELECT * FROM pg_statistic", "pg_statistic"),
    ("SELECT * FROM pg_stats WHERE tablename = 'tickets'", "pg_stats"),
    ("SELECT * FROM pg_largeobject", "pg_largeobject"),
    ("SELECT * FROM pg_locks", "pg_locks"),
    ("WITH x AS (SELECT * FROM pg_authid) SELECT * FROM x", "pg_authid"),
    # inside its own body a CTE's name is the catalogue: a CTE of the same name is no excuse
    ("WITH pg_authid AS (SELECT * FROM pg_authid) SELECT * FROM pg_authid", "pg_authid"),
    ("SELECT * FROM tickets JOIN pg_stat_activity ON true", "pg_stat_activity"),
    ("SELECT * FROM information_schema.user_mapping_options", "user_mapping_options"),
])
def test_postgres_catalogues_with_secrets_or_server_state_are_rejected(sql, relation):
    error = _rejection(sql, "postgres")
    assert error is not None and error.kind == "rejected", sql
    assert f"reads {relation}, a system catalogue" in error.message


@pytest.mark.parametrize("sql", [
    "SELECT * FROM pg_settings", "SELECT * FROM pg_catalog.pg_settings", "SELECT * FROM duckdb_logs",
])
def test_duckdb_catalogues_with_settings_or_logs_are_rejected(sql):
    error = _rejection(sql, "duckdb")
    assert error is not None and error.kind == "rejected" and "system catalogue" in error.message


def test_a_users_own_table_in_another_schema_may_share_a_catalogue_name():
    check_prediction("SELECT * FROM public.pg_settings", "postgres")


# --------------------------------------------------------------------------- the lists themselves
#: Known-dangerous names: none may ever be on a list (a future edit cannot add one silently).
DENY = {
    "sqlite": {"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit", "sqlite_log", "optimize",
               "fts5", "zipfile", "sqlar_compress", "sqlar_uncompress", "sqlite_dbpage", "shell_add_schema"},
    "duckdb": {"query", "query_table", "read_csv", "read_csv_auto", "read_json", "read_json_auto", "read_ndjson",
               "read_json_objects", "read_parquet", "parquet_scan", "parquet_metadata", "parquet_schema", "read_text",
               "read_blob", "read_xlsx", "glob", "sniff_csv", "iceberg_scan", "delta_scan", "sqlite_scan",
               "postgres_scan", "postgres_query", "mysql_query", "json_execute_serialized_sql", "json_serialize_sql",
               "json_deserialize_sql", "json_serialize_plan", "duckdb_secrets", "which_secret", "duckdb_settings",
               "current_setting", "getvariable", "nextval", "currval", "setval", "sleep_ms", "pg_sleep", "write_log",
               "checkpoint", "force_checkpoint", "enable_logging", "disable_logging", "enable_profiling",
               "duckdb_extensions", "duckdb_memory", "duckdb_temporary_files", "duckdb_logs", "install_extension",
               "load_extension", "summary", "invoke", "txid_current", "current_query", "setseed",
               "read_duckdb", "seq_scan", "arrow_scan", "pandas_scan", "python_map_function", "duckdb_variables"},
    "postgres": {"pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_ls_logdir", "pg_ls_waldir", "pg_ls_tmpdir",
                 "pg_ls_archive_statusdir", "pg_stat_file", "pg_file_write", "lo_import", "lo_export", "lo_get",
                 "lo_put", "lo_create", "lo_creat", "lo_unlink", "lo_open", "lo_from_bytea", "loread", "lowrite",
                 "dblink", "dblink_exec", "dblink_connect", "query_to_xml", "query_to_xmlschema",
                 "query_to_xml_and_xmlschema", "cursor_to_xml", "cursor_to_xmlschema", "table_to_xml",
                 "table_to_xmlschema", "table_to_xml_and_xmlschema", "schema_to_xml", "schema_to_xmlschema",
                 "schema_to_xml_and_xmlschema", "database_to_xml", "database_to_xmlschema",
                 "database_to_xml_and_xmlschema", "xpath", "xpath_exists", "xmlparse", "xml", "ts_stat", "ts_rewrite",
                 "set_config", "current_setting", "pg_advisory_lock", "pg_advisory_lock_shared",
                 "pg_advisory_xact_lock", "pg_advisory_xact_lock_shared", "pg_try_advisory_lock",
                 "pg_try_advisory_lock_shared", "pg_try_advisory_xact_lock", "pg_try_advisory_xact_lock_shared",
                 "pg_advisory_unlock", "pg_advisory_unlock_all", "pg_stat_reset", "pg_stat_reset_shared",
                 "pg_stat_reset_single_table_counters", "pg_backup_start", "pg_backup_stop", "pg_start_backup",
                 "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile", "pg_promote",
                 "pg_switch_wal", "pg_create_restore_point", "pg_sleep", "pg_sleep_for", "pg_sleep_until",
                 "nextval", "setval", "currval", "lastval", "txid_current", "pg_current_xact_id", "pg_notify",
                 "pg_logical_emit_message", "pg_create_logical_replication_slot", "pg_drop_replication_slot",
                 "pg_import_system_collations", "pg_log_backend_memory_contexts", "setseed", "pg_backend_pid",
                 "inet_server_addr", "inet_client_addr", "pg_stat_get_activity", "pg_show_all_settings",
                 "pg_show_all_file_settings", "pg_hba_file_rules", "pg_config", "version", "pg_get_keywords",
                 "binary_upgrade_create_empty_extension", "brin_summarize_range", "gin_clean_pending_list",
                 "pg_replication_origin_create", "pg_export_snapshot", "pg_lock_status"},
    "mysql": {"sleep", "benchmark", "load_file", "get_lock", "release_lock", "master_pos_wait", "sys_exec",
              "sys_eval", "openrowset", "opendatasource", "openquery", "xp_cmdshell", "version", "user"},
}


@pytest.mark.parametrize("dialect", sorted(DENY))
def test_no_list_holds_a_dangerous_name(dialect):
    listed = allowed_functions.allowed_functions(dialect)
    every_deny = set().union(*DENY.values())
    assert not listed & DENY[dialect], sorted(listed & DENY[dialect])
    if dialect == "mysql":  # the common list is used for every other dialect: nothing dangerous anywhere
        assert not listed & every_deny, sorted(listed & every_deny)


def test_the_lists_are_lower_case_names():
    for dialect in ("sqlite", "duckdb", "postgres", "mysql"):
        for name in allowed_functions.allowed_functions(dialect):
            assert name == name.lower() and name.replace("_", "").isalnum(), name


def test_every_duckdb_and_sqlite_name_is_a_real_function_or_syntax():
    """A typo on a list would allow nothing, but it would hide a missing function: check against the engines."""
    duckdb = require_module("duckdb")
    conn = duckdb.connect()
    rows = conn.execute("SELECT DISTINCT function_name FROM duckdb_functions()").fetchall()
    engine_names = {r[0].lower() for r in rows}
    syntax = {"cast", "try_cast", "extract", "trim", "substring", "position", "overlay", "coalesce", "nullif",
              "greatest", "least", "grouping", "row", "array", "list", "columns", "unpack", "if", "ifnull", "nvl",
              "localtime", "localtimestamp", "current_time", "current_timestamp", "current_date", "user",
              "current_catalog", "current_role", "session_user", "current_user", "percentile_cont",
              "percentile_disc", "struct_pack", "map", "ceiling", "stddev_samp", "character_length", "substr"}
    unknown = allowed_functions.allowed_functions("duckdb") - engine_names - syntax
    assert not unknown, sorted(unknown)
    sqlite_names = {r[0] for r in sqlite3.connect(":memory:").execute("PRAGMA function_list").fetchall()}
    newer = {"concat", "concat_ws", "unhex", "timediff", "string_agg", "octet_length", "median", "percentile",
             "percentile_cont", "percentile_disc", "if", "json_pretty", "json_error_position", "generate_series",
             "pragma_table_info", "pragma_table_xinfo", "pragma_table_list", "pragma_index_list", "pragma_index_info",
             "pragma_index_xinfo", "pragma_foreign_key_list", "json_each", "json_tree"}
    jsonb = {n for n in allowed_functions.allowed_functions("sqlite") if n.startswith("jsonb")}
    unknown = allowed_functions.allowed_functions("sqlite") - sqlite_names - newer - jsonb - \
        allowed_functions.names(allowed_functions.COMMON)
    assert not unknown, sorted(unknown)


def test_duckdb_functions_on_the_list_have_no_side_effects_but_randomness():
    duckdb = require_module("duckdb")
    rows = duckdb.connect().execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE has_side_effects").fetchall()
    effects = {r[0] for r in rows} & allowed_functions.allowed_functions("duckdb")
    assert effects <= {"random", "uuid", "uuidv4", "uuidv7", "gen_random_uuid"}, sorted(effects)


#: On the PostgreSQL list but not in pg_proc of every supported server: SQL syntax, and newer versions' functions.
POSTGRES_SYNTAX_OR_NEWER = {
    "array", "cast", "coalesce", "current_catalog", "current_date", "current_role", "current_time",
    "current_timestamp", "greatest", "grouping", "least", "localtime", "localtimestamp", "nullif", "row", "trim",
    "try_cast", "user", "inet", "uuid",  # syntax, and type names PostgreSQL accepts as casts
    "any_value", "array_reverse", "array_sample", "array_shuffle", "array_sort", "casefold", "crc32", "crc32c",
    "date_add", "date_subtract", "erf", "erfc", "gamma", "lgamma", "json_array", "json_arrayagg", "json_exists",
    "json_objectagg", "json_query", "json_scalar", "json_serialize", "json_table", "json_value", "random_normal",
    "to_bin", "to_oct", "uuidv4", "uuidv7",  # PostgreSQL 16 to 18
}


def test_every_postgres_name_is_a_real_function_and_none_is_volatile_but_randomness_and_clocks(real_engines):
    if "postgres" not in real_engines:
        pytest.skip("postgres is not available here")
    from sqlalchemy import text

    listed = sorted(allowed_functions.allowed_functions("postgres"))
    with real_engines["postgres"].connect() as conn:
        rows = conn.execute(text(
            "SELECT proname, bool_or(provolatile = 'v'), bool_or(prosecdef) FROM pg_proc "
            "WHERE proname = ANY(:names) GROUP BY proname"), {"names": listed}).fetchall()
    found = {r[0] for r in rows}
    assert set(listed) - found <= POSTGRES_SYNTAX_OR_NEWER, sorted(set(listed) - found - POSTGRES_SYNTAX_OR_NEWER)
    volatile = {r[0] for r in rows if r[1]}
    assert volatile <= {"random", "gen_random_uuid", "clock_timestamp", "timeofday", "random_normal", "uuidv4",
                        "uuidv7", "array_shuffle", "array_sample"}, sorted(volatile)
    assert not [r[0] for r in rows if r[2]]  # no SECURITY DEFINER function


@pytest.mark.parametrize("dialect, hidden", [("sqlite", "load_extension"), ("duckdb", "read_text"),
                                             ("postgres", "pg_read_file")])
def test_no_sqlglot_function_can_hide_a_call_in_its_arguments(dialect, hidden):
    """Whatever sqlglot does with a function's arguments (it drops some), a call inside them is still checked."""
    reader = sqlglot.Dialect.get_or_raise(dialect)
    checked = 0
    for name in sorted(reader.parser_class.FUNCTIONS):
        for args in (f"{hidden}('x')", f"1, {hidden}('x')", f"'a', 'b', {hidden}('x')"):
            sql = f"SELECT {name}({args})"
            try:
                check_prediction(sql, dialect)
            except QueryError as exc:
                checked += 1
                assert exc.kind in ("syntax", "rejected"), (sql, exc)
                continue
            pytest.fail(f"passed the guard: {sql}")
    assert checked > 1000


# --------------------------------------------------------------------------- allow_functions
def test_allow_functions_lets_a_users_udf_through_and_it_runs(tmp_path):
    path = make_sqlite(tmp_path / "shop.sqlite")
    sql = "SELECT shout(name) FROM shops ORDER BY id"
    error = _rejection(sql, "sqlite")
    assert error is not None and error.kind == "rejected"
    fix = "allow it with `allow_functions: [shout]` in the suite or the ini option sqleval_allow_functions"
    assert fix in error.message
    checked = check_prediction(sql, "sqlite", allow_functions={"SHOUT"})  # names compare case-insensitively
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.create_function("shout", 1, lambda s: s.upper() + "!", deterministic=True)
    assert conn.execute(checked.sql).fetchall() == [("AVIONICS!",), ("ENGINES!",), ("CABIN!",)]
    conn.close()


def test_allow_functions_accepts_qualified_names():
    sql = "SELECT analytics.score(1)"
    assert _rejection(sql, "postgres").kind == "rejected"
    check_prediction(sql, "postgres", allow_functions={"analytics.score"})
    check_prediction(sql, "postgres", allow_functions={"score"})


def test_allow_functions_does_not_open_other_checks():
    error = _rejection("DELETE FROM tickets", "sqlite")
    assert error.kind == "rejected"
    with pytest.raises(QueryError):
        check_prediction("SELECT * FROM pg_authid", "postgres", allow_functions={"pg_authid"})


SUITE = """
database: shop.sqlite
{allow}
cases:
  - id: udf
    gold: SELECT count(*) FROM shops
    predicted: SELECT count(shout(name)) FROM shops
  - id: plain
    gold: SELECT count(*) FROM shops
    predicted: SELECT count(upper(name)) FROM shops
"""


def _run_suite(pytester, allow: str, ini: str = ""):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(SUITE.format(allow=allow)))
    if ini:
        pytester.makeini(ini)
    report = pytester.path / "report.json"
    result = pytester.runpytest("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider")
    return result, {c["id"]: c for c in json.loads(report.read_text())["cases"]}


def test_suite_without_allow_functions_rejects_the_udf_and_says_how(pytester):
    result, cases = _run_suite(pytester, "")
    assert cases["plain"]["outcome"] == "passed"
    assert cases["udf"]["error"]["kind"] == "rejected"
    assert "allow_functions: [shout]" in cases["udf"]["error"]["message"]


def test_suite_allow_functions_reaches_the_engine(pytester):
    """Allowed, the call reaches SQLite, which has no such function here: a syntax error, not a rejection."""
    result, cases = _run_suite(pytester, "allow_functions: [shout]")
    assert cases["plain"]["outcome"] == "passed"
    assert cases["udf"]["error"]["kind"] == "syntax"
    assert "shout" in cases["udf"]["error"]["message"]


def test_ini_allow_functions_reaches_the_engine(pytester):
    result, cases = _run_suite(pytester, "", ini="[pytest]\nsqleval_allow_functions =\n    other_udf\n    shout\n")
    assert cases["udf"]["error"]["kind"] == "syntax"


def test_a_bad_allow_functions_entry_names_the_file_and_the_fix(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(SUITE.format(allow="allow_functions: ['shout()']")))
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*shop.sqleval.yaml*allow_functions*'shout()'*not a function name*"])
