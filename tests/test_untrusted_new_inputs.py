"""Untrusted predicted SQL, tried with inputs that are in neither hostile corpus (issues 4 and 7).

Each attack runs on a real SQLite file, DuckDB file and PostgreSQL database built from the shop script: it
is scored with a kind and a message, stopped within timeout + 1 s, and leaves every table and the planted
secret file unchanged, creates no file, and the secret appears in no answer. Legitimate queries of each
engine are not refused. Then the attacks run as predictions through ``pytest --sqleval`` (serial and
``-n 2``): every case is a miss with a clear reason in the JSON report and the run goes on.

Also what the pytest process does with a prediction outside the query process's limits: the official
statement cut, exact match, a `policy:` check, soft_f1 and the report (values, columns, control characters)
stay bounded and never turn a hostile prediction into an error of the case.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from conftest import SHOP_SQL
from pytest_sqleval.errors import QueryError
from pytest_sqleval.execution.engines import EngineFactory
from pytest_sqleval.execution.runner import run_query
from pytest_sqleval.sql.guard import check_prediction
from pytest_sqleval.suite import DatabaseSpec
from test_hostile import fingerprint

TIMEOUT = 1.0
WALL_SLACK = 1.0  # the promise: stopped within timeout + 1 s
MAX_ROWS = 1000
MAX_MEMORY = 256 * 2**20
SECRET = "sqleval-new-inputs-secret-83d1"

pytest_plugins = ["pytester"]

ANY_REFUSAL = ("rejected", "syntax")

# (name, SQL, accepted kinds). "{secret}" is the planted file's path, "{out}" a folder that must stay empty.
COMMON = [
    ("empty", "", ("rejected",)),
    ("whitespace", " \n\t ", ("rejected",)),
    ("only-line-comment", "-- SELECT 1", ("rejected",)),
    ("only-block-comment", "/* SELECT 1 */", ("rejected",)),
    ("only-semicolons", ";;", ("rejected",)),
    ("comment-hides-nothing", "SELECT 1 /* ; */; DELETE FROM tickets", ("rejected",)),
    ("line-comment-then-statement", "SELECT 1 -- x\n; DELETE FROM tickets", ("rejected",)),
    ("cr-in-line-comment", "SELECT 1 -- x\r; DELETE FROM tickets", ("rejected", "ok")),  # PostgreSQL ends it at \r
    ("string-with-semicolon", "SELECT ';' AS a; DELETE FROM tickets", ("rejected",)),
    ("nul-then-statement", "SELECT 1\x00; DROP TABLE tickets", ("syntax",)),
    ("bom-then-delete", "\ufeffDELETE FROM tickets", ANY_REFUSAL),
    ("fullwidth-keyword", "ＤＥＬＥＴＥ FROM tickets", ANY_REFUSAL),
    ("greek-e-homoglyph", "SELECT 1; D\u0395LETE FROM tickets", ANY_REFUSAL),
    ("zero-width-space", "SELECT 1;\u200b DELETE FROM tickets", ANY_REFUSAL),
    ("ten-megabytes", "SELECT 1 -- " + "x" * 10_000_000, ("rejected",)),
    ("cte-update", "WITH d AS (UPDATE tickets SET hours = 0 RETURNING id) SELECT count(*) FROM d", ANY_REFUSAL),
    ("cte-insert", "WITH d AS (INSERT INTO shops VALUES (9, 'x') RETURNING id) SELECT * FROM d", ANY_REFUSAL),
    ("endless-recursive-cte", "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
     ("timeout", "memory")),
    ("savepoint", "SAVEPOINT a", ("rejected",)),
]

SQLITE = [
    ("vacuum-into-schema", "VACUUM main INTO '{out}/copy.sqlite'", ("rejected",)),
    ("reindex", "REINDEX", ("rejected",)),
    ("analyze", "ANALYZE", ("rejected",)),
    ("pragma-optimize", "PRAGMA optimize", ("rejected",)),
    ("pragma-function-arg", "SELECT * FROM pragma_query_only(0)", ("rejected",)),
    ("pragma-function-quoted", 'SELECT * FROM "pragma_writable_schema"(1)', ("rejected",)),
    ("dbpage", "SELECT * FROM sqlite_dbpage", ANY_REFUSAL),
    ("fsdir", "SELECT * FROM fsdir('/etc')", ("rejected",)),
    ("zipfile", "SELECT * FROM zipfile('{secret}')", ("rejected",)),
    ("bracket-quoted-call", "SELECT [load_extension]('/tmp/x.so')", ("rejected",)),
    ("backtick-quoted-call", "SELECT `readfile`('{secret}')", ("rejected",)),
    ("non-nested-comment", "SELECT 1 /* /* */ , sqlite_version() /* */", ("rejected",)),
    ("zeroblob-1e9", "SELECT zeroblob(1000000000)", ("runtime", "memory")),
    ("randomblob-2e9", "SELECT length(randomblob(2000000000))", ("runtime", "memory")),
    # SQLite 3.40 (Debian 12's) gives NULL for a printf() over the length limit; later releases raise TOOBIG
    ("printf-1e9", "SELECT printf('%.*c', 1000000000, 'x')", ("timeout", "runtime", "memory", "null")),
    ("instr-long-step", "SELECT instr(replace(hex(zeroblob(4999999)), '0', 'a'), "
     "replace(hex(zeroblob(2000000)), '0', 'a') || 'b')", ("timeout",)),
    ("cross-join-11", "SELECT count(*) FROM " + ", ".join(f"tickets t{i}" for i in range(11)), ("timeout",)),
    ("replace-into", "REPLACE INTO shops VALUES (1, 'x')", ("rejected",)),
    ("temp-trigger", "CREATE TEMP TRIGGER t AFTER INSERT ON tickets BEGIN SELECT 1; END", ("rejected",)),
    ("explain-query-plan", "EXPLAIN QUERY PLAN SELECT 1", ("rejected",)),
]

DUCKDB = [
    ("from-first-file", "FROM '{secret}'", ("rejected",)),
    ("file-in-subquery", "SELECT * FROM tickets, (FROM '{secret}')", ("rejected",)),
    ("url-literal", "SELECT * FROM 'https://example.com/x.csv'", ("rejected",)),
    ("read-csv-auto", "SELECT * FROM read_csv_auto('{secret}')", ("rejected",)),
    ("read-json-auto", "SELECT * FROM read_json_auto('{secret}')", ("rejected",)),
    ("sniff-csv", "SELECT * FROM sniff_csv('{secret}')", ("rejected",)),
    ("parquet-metadata", "SELECT * FROM parquet_metadata('{secret}')", ("rejected",)),
    ("glob-relative", "SELECT * FROM glob('*')", ("rejected",)),
    ("call-settings", "CALL duckdb_settings()", ("rejected",)),
    ("from-settings", "FROM duckdb_settings()", ("rejected",)),
    ("current-setting", "SELECT current_setting('home_directory')", ("rejected",)),
    ("summarize", "SUMMARIZE tickets", ("rejected",)),
    ("describe", "DESCRIBE tickets", ("rejected",)),
    ("show-tables", "SHOW TABLES", ("rejected",)),
    ("pragma-version", "PRAGMA version", ("rejected",)),
    ("create-secret", "CREATE SECRET s (TYPE s3, KEY_ID 'x', SECRET 'y')", ("rejected",)),
    ("copy-query-to", "COPY (SELECT * FROM tickets) TO '{out}/t.csv'", ("rejected",)),
    ("export-parquet", "EXPORT DATABASE '{out}/db' (FORMAT parquet)", ("rejected",)),
    ("force-checkpoint", "FORCE CHECKPOINT", ("rejected",)),
    ("set-variable", "SET VARIABLE x = 1", ("rejected",)),
    ("create-macro", "CREATE MACRO m(a) AS a", ("rejected",)),
    ("uninstall", "UNINSTALL httpfs", ("rejected",)),
    ("two-from-first", "FROM tickets; FROM shops", ("rejected",)),
    ("dollar-quoted-strings", "SELECT $t$ ' $t$, getenv('HOME'), $t$ ' $t$", ("rejected",)),
    ("range-1e12-count", "SELECT count(*) FROM range(1000000000000)", ("timeout",)),
    ("range-1e12-rows", "FROM range(1000000000000)", ("row_limit",)),
    ("repeat-1e9", "SELECT repeat('x', 1000000000)", ("memory",)),
    ("list-1e9", "SELECT range(1000000000)", ("memory",)),
    ("list-resize", "SELECT list_resize([1], 2000000000)", ("memory",)),
    ("format-width", "SELECT format('{:>2000000000}', 1)", ("memory", "runtime")),
    ("lpad-2e9", "SELECT lpad('x', 2000000000, 'y')", ("timeout", "memory")),
]

POSTGRES = [
    ("copy-to-program", "COPY tickets TO PROGRAM 'touch {out}/pwned'", ("rejected",)),
    ("do-perform-sleep", "DO $$BEGIN PERFORM pg_sleep(10); END$$", ("rejected",)),
    ("call", "CALL some_procedure()", ("rejected",)),
    ("listen", "LISTEN ch", ("rejected",)),
    ("notify", "NOTIFY ch, 'x'", ("rejected",)),
    ("set-role", "SET ROLE postgres", ("rejected",)),
    ("session-authorization", "SET SESSION AUTHORIZATION postgres", ("rejected",)),
    ("reset-role", "RESET ROLE", ("rejected",)),
    ("discard", "DISCARD ALL", ("rejected",)),
    ("prepare", "PREPARE p AS SELECT 1", ("rejected",)),
    ("execute", "EXECUTE p", ("rejected",)),
    ("deallocate", "DEALLOCATE ALL", ("rejected",)),
    ("explain-analyze-delete", "EXPLAIN ANALYZE DELETE FROM tickets", ("rejected",)),
    ("start-read-write", "START TRANSACTION READ WRITE", ("rejected",)),
    ("abort", "ABORT", ("rejected",)),
    ("checkpoint", "CHECKPOINT", ("rejected",)),
    ("close-all", "CLOSE ALL", ("rejected",)),
    ("move-cursor", "MOVE NEXT IN c", ("rejected",)),
    ("reassign", "REASSIGN OWNED BY postgres TO postgres", ("rejected",)),
    ("alter-system", "ALTER SYSTEM SET work_mem = '1GB'", ("rejected",)),
    ("for-no-key-update", "SELECT * FROM tickets FOR NO KEY UPDATE", ("rejected",)),
    ("for-share-skip-locked", "SELECT * FROM tickets FOR SHARE SKIP LOCKED", ("rejected",)),
    ("for-key-share-in-subquery", "SELECT * FROM (SELECT * FROM tickets FOR KEY SHARE) t", ("rejected",)),
    ("sleep-in-lateral", "SELECT * FROM tickets, LATERAL (SELECT pg_sleep(5)) s", ("rejected",)),
    ("sleep-qualified-in-where", "SELECT id FROM tickets WHERE id = 1 OR pg_catalog.pg_sleep(5) IS NULL",
     ("rejected",)),
    ("xact-id", "SELECT pg_current_xact_id()", ("rejected",)),
    ("lo-from-bytea", "SELECT lo_from_bytea(0, 'x')", ("rejected",)),
    ("dblink-connect", "SELECT dblink_connect('host=localhost')", ("rejected",)),
    ("show-all-settings", "SELECT * FROM pg_show_all_settings()", ("rejected",)),
    ("ls-logdir", "SELECT * FROM pg_ls_logdir()", ("rejected",)),
    ("table-authid", "TABLE pg_authid", ("rejected",)),
    ("only-authid", "SELECT * FROM ONLY pg_authid", ("rejected",)),
    ("spaced-qualified-authid", "SELECT * FROM pg_catalog . pg_authid", ("rejected",)),
    ("authid-in-any", "SELECT id FROM tickets WHERE aircraft = ANY (SELECT rolpassword FROM pg_authid)",
     ("rejected",)),
    ("nested-comment-hides-delete", "SELECT 1 /* a /* b */ ; DELETE FROM tickets; */", ("ok",)),
    ("unbalanced-nested-comment", "SELECT 1 /* /* */ ; DELETE FROM tickets; /* */", ANY_REFUSAL),
    ("dollar-quoted-delete", "SELECT $a$ ; DELETE FROM tickets; $a$", ("ok",)),
    ("escape-string-delete", "SELECT E'\\'; DELETE FROM tickets; --'", ("ok",)),
    ("escaped-semicolon", "SELECT E'\\x3b' || 'DELETE FROM tickets'", ("ok",)),
    ("xml-external-entity",
     "SELECT '<!DOCTYPE x [<!ENTITY e SYSTEM \"file://{secret}\">]><x>&e;</x>'::xml::text",
     ("ok", "runtime", "syntax")),  # the entity is never expanded (a server without libxml refuses the type)
    ("series-1e10", "SELECT count(*) FROM generate_series(1, 10000000000)", ("timeout",)),
    ("repeat-1e9", "SELECT length(repeat('x', 1000000000))", ("timeout", "memory", "runtime")),
    ("array-fill-1e8", "SELECT array_fill(1, ARRAY[100000000])", ("timeout", "memory", "runtime")),
]

BY_ENGINE = {"sqlite": COMMON + SQLITE, "duckdb": COMMON + DUCKDB, "postgresql": COMMON + POSTGRES}


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A secret file every engine's server user could read, and a folder no attack may write into."""
    folder = tmp_path_factory.mktemp("untrusted-planted")
    os.chmod(folder, 0o777)
    secret = folder / "secret.csv"
    secret.write_text(f"a\n{SECRET}\n")
    os.chmod(secret, 0o644)
    out = folder / "out"
    out.mkdir()
    os.chmod(out, 0o777)
    return secret, out


@pytest.fixture(scope="module")
def engines(tmp_path_factory, request):
    root = tmp_path_factory.mktemp("untrusted-engines")
    script = root / "shop.sql"
    script.write_text(SHOP_SQL)
    factory = EngineFactory(build_dir=root / "build", worker="untrusted")
    built = {"sqlite": factory.engine(DatabaseSpec("sqlite://", (script,)))}
    request.getfixturevalue("duckdb_available")
    built["duckdb"] = factory.engine(DatabaseSpec("duckdb://", (script,)))
    built["postgresql"] = factory.engine(DatabaseSpec(request.getfixturevalue("postgres_url"), (script,)))
    for engine in built.values():
        run_query(engine, "SELECT 1", timeout=30, max_rows=10, max_memory=MAX_MEMORY)
    yield built
    factory.close()


def _fill(sql: str, planted) -> str:
    secret, out = planted
    return sql.replace("{secret}", str(secret)).replace("{out}", str(out))


def _attacks():
    for engine_name, attacks in BY_ENGINE.items():
        for name, sql, kinds in attacks:
            yield pytest.param(engine_name, sql, kinds, id=f"{engine_name}-{name}")


@pytest.mark.parametrize("engine_name, sql, kinds", list(_attacks()))
def test_new_attack_is_scored_bounded_and_harmless(engines, planted, engine_name, sql, kinds):
    secret, out = planted
    engine = engines[engine_name]
    sql = _fill(sql, planted)
    before = fingerprint(engine)
    secret_before = secret.read_bytes()
    started = time.monotonic()
    try:
        result = run_query(engine, sql, timeout=TIMEOUT, max_rows=MAX_ROWS, untrusted=True, max_memory=MAX_MEMORY)
        kind, shown = "null" if result.rows == [(None,)] else "ok", repr(result.rows[:5])
    except QueryError as exc:
        kind, shown = exc.kind, exc.message
        assert exc.message.strip(), "a refusal must say why"
    elapsed = time.monotonic() - started
    assert kind in kinds, f"{kind}: {shown[:300]}"
    assert elapsed <= TIMEOUT + WALL_SLACK, elapsed
    assert SECRET not in shown
    assert secret.read_bytes() == secret_before
    assert list(out.iterdir()) == []
    assert fingerprint(engine) == before


# --------------------------------------------------------------------------- the reason names the statement
@pytest.mark.parametrize("dialect, sql, word", [
    ("postgres", "LISTEN ch", "LISTEN"),
    ("postgres", "DEALLOCATE ALL", "DEALLOCATE"),
    ("postgres", "DISCARD ALL", "DISCARD"),
    ("postgres", "CLOSE ALL", "CLOSE"),
    ("postgres", "CLUSTER tickets", "CLUSTER"),
    ("postgres", "START TRANSACTION", "START"),
    ("postgres", "START TRANSACTION READ WRITE", "START"),
    ("postgres", "MOVE NEXT IN c", "MOVE"),
    ("postgres", "REASSIGN OWNED BY a TO b", "REASSIGN"),
    ("postgres", "ABORT", "ABORT"),
    ("postgres", "END", "END"),
    ("postgres", "CHECKPOINT", "CHECKPOINT"),
    ("postgres", "TRUNCATE tickets", "TRUNCATE"),
    ("duckdb", "CHECKPOINT", "CHECKPOINT"),
    ("duckdb", "UNINSTALL httpfs", "UNINSTALL"),
    ("duckdb", "SUMMARIZE tickets", "SUMMARIZE"),
    ("duckdb", "DEALLOCATE p", "DEALLOCATE"),
    ("sqlite", "END TRANSACTION", "END"),
    ("sqlite", "UPSERT", "UPSERT"),
    ("sqlite", "WITH x AS (SELECT 1) DELETE FROM tickets", "DELETE"),
])
def test_a_statement_that_is_not_a_query_is_rejected_by_its_own_name(dialect, sql, word):
    """The reason names the statement the text is (LISTEN, CHECKPOINT), not a node sqlglot fell back to
    (`a ALIAS statement`, `a COLUMN statement`), and a statement sqlglot cannot parse is still `rejected`."""
    with pytest.raises(QueryError) as info:
        check_prediction(sql, dialect)
    assert info.value.kind == "rejected", info.value.message
    assert f" {word} statement is not a query" in info.value.message, info.value.message


@pytest.mark.parametrize("sql", [
    "PIVOT tickets ON status USING sum(hours)",
    "UNPIVOT tickets ON hours INTO NAME k VALUE v",
    "PIVOT (SELECT status, hours FROM tickets) ON status USING count(*)",
])
def test_duckdb_pivot_and_unpivot_statements_are_queries(sql):
    """DuckDB's PIVOT and UNPIVOT statements are read-only queries (they run on a read-only connection): a model's
    correct `PIVOT ...` was `rejected` (a PIVOT statement is not a query) while `SELECT * FROM (PIVOT ...)` ran."""
    assert check_prediction(sql, "duckdb").sql == sql


def test_a_pivot_prediction_scores_against_its_select_gold_on_duckdb(pytester, duckdb_available):
    import duckdb

    conn = duckdb.connect(str(pytester.path / "t.duckdb"))
    conn.execute("CREATE TABLE tickets (status TEXT, hours INTEGER); "
                 "INSERT INTO tickets VALUES ('open', 2), ('done', 3), ('open', 4)")
    conn.close()
    pytester.makefile(".sqleval.yaml", pivot="""
        database: t.duckdb
        cases:
          - id: pivot
            question: Hours by status, one column each
            gold: SELECT sum(hours) FILTER (WHERE status = 'done') AS done, sum(hours) FILTER (WHERE status = 'open') AS open FROM tickets
            predicted: PIVOT tickets ON status USING sum(hours)
          - id: unpivot
            question: Each ticket's hours as a key and a value
            gold: SELECT status, 'hours' AS k, hours AS v FROM tickets
            predicted: UNPIVOT tickets ON hours INTO NAME k VALUE v
        """)
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json")
    cases = {c["id"]: c for c in json.loads((pytester.path / "r.json").read_text())["cases"]}
    assert {k: (c["outcome"], c["error"]) for k, c in cases.items()} == {
        "pivot": ("passed", None), "unpivot": ("passed", None)}, result.stdout.str()


@pytest.mark.parametrize("sql, kind, reason", [
    ("PIVOT '/tmp/t.csv' ON status USING count(*)", "rejected", "reads the file '/tmp/t.csv'"),
    ("PIVOT (SELECT * FROM read_csv('/etc/passwd')) ON a USING count(*)", "rejected", "calls read_csv()"),
    ("PIVOT tickets ON status USING sum(hours) ORDER BY 1", "syntax", "does not parse as duckdb SQL"),
])
def test_a_pivot_statement_is_checked_as_every_query(sql, kind, reason):
    """The guard's checks apply inside a PIVOT (files, functions); one sqlglot cannot read is a syntax miss, as any
    query's, not "a PIVOT statement is not a query"."""
    with pytest.raises(QueryError) as info:
        check_prediction(sql, "duckdb")
    assert info.value.kind == kind and reason in info.value.message, info.value.message


# --------------------------------------------------------------------------- scoring stays bounded
def _cte_chain(n: int, scalar_subqueries: int = 0) -> str:
    extra = "".join(", (SELECT 1)" for _ in range(scalar_subqueries))
    return "WITH " + ", ".join(f"c{i} AS (SELECT {i} AS x)" for i in range(n)) + f" SELECT count(*){extra} FROM c0"


@pytest.mark.parametrize("sql", [_cte_chain(2000), _cte_chain(1000, scalar_subqueries=2000)],
                         ids=["2000-ctes", "1000-ctes-2000-subqueries"])
def test_exact_match_of_a_prediction_with_thousands_of_ctes_is_bounded_by_the_work_budget(sql):
    """Each query of the prediction is read with every CTE in view; that cost counts against the documented
    work budget, so a prediction within the token limit cannot keep the pytest process busy for seconds
    (2,000 CTEs took 4-7 s here, longer than timeout + 1 s of the case they belonged to)."""
    from pytest_sqleval.metrics.exact_match.match import exact_match
    from pytest_sqleval.schema import Schema, Table

    schema = Schema(tables=(Table("tickets", ("id", "shop_id")),), foreign_keys=())
    verdict = exact_match("SELECT count(*) FROM tickets", sql, schema, dialect="sqlite")
    assert verdict.match is False
    assert "too complex to score" in verdict.reason, verdict.reason


def test_a_few_ctes_are_still_compared_clause_by_clause():
    from pytest_sqleval.metrics.exact_match.match import exact_match
    from pytest_sqleval.schema import Schema, Table

    schema = Schema(tables=(Table("tickets", ("id", "shop_id")),), foreign_keys=())
    sql = _cte_chain(40, scalar_subqueries=40)
    verdict = exact_match(sql, sql, schema, dialect="sqlite")
    assert verdict.match is True, verdict.reason


# --------------------------------------------------------------------------- the report stays small
def test_huge_values_in_a_predicted_result_do_not_bloat_the_report(pytester):
    """A 60-character prediction returning six 1 MB strings wrote 12 MB into the JSON report (five example rows
    and the result's head, each value whole) and kept it in memory for the rest of the run: 100 such cases
    make a run of gigabytes. Report values are cut to a documented length, saying how long they were."""
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    pytester.makefile(".sqleval.yaml", big=(
        "database: {url: 'sqlite://', setup: [shop.sql]}\n"
        "cases:\n"
        "  - id: big\n"
        "    gold: SELECT id FROM tickets\n"
        "    predicted: SELECT printf('%.*c', 1000000, 'x') || id FROM tickets\n"
    ))
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json", timeout=120)
    assert result.ret == 0, result.stdout.str()[-2000:]
    report_path = pytester.path / "report.json"
    assert report_path.stat().st_size < 200_000, report_path.stat().st_size
    (case,) = json.loads(report_path.read_text(encoding="utf-8"))["cases"]
    assert case["outcome"] == "missed" and case["mismatch"]["predicted_shape"] == [6, 1]
    shown = case["mismatch"]["predicted_head"][0][0]
    assert shown.startswith("x" * 100) and "1000001 characters" in shown, shown[-80:]


# --------------------------------------------------------------------------- as predictions of a suite run
SUITE_ENGINES = ("sqlite", "duckdb", "postgresql")


def _in_suite(engine_name: str, name: str, kinds) -> bool:
    """The attacks a suite run repeats: the slow ones once per engine (the direct test above has them all)."""
    if name == "ten-megabytes":
        return engine_name == "sqlite"  # once is enough: the report holds the prediction's text
    return "timeout" not in kinds or name == "endless-recursive-cte"


def _suite_text(engine_name: str, database: str, planted) -> str:
    lines = [f"database: {database}", "timeout: 1", "max_memory: 256MiB", "cases:"]
    for i, (name, sql, kinds) in enumerate(BY_ENGINE[engine_name]):
        if _in_suite(engine_name, name, kinds):
            lines += [f"  - id: {name}-{i}", "    gold: SELECT 1", f"    predicted: {json.dumps(_fill(sql, planted))}"]
    lines.append("  - {id: still-fine, gold: 'SELECT count(*) FROM tickets',"
                 " predicted: 'SELECT count(*) FROM tickets'}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_new_attacks_as_predictions_of_three_suites(pytester, planted, request, xdist):
    """One run, one suite per engine: every attack is a scored miss (or a harmless pass) whose record carries the
    kind and message; nothing is an error of the run; the planted secret appears nowhere; the run goes on."""
    secret, out = planted
    request.getfixturevalue("duckdb_available")
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    url = request.getfixturevalue("postgres_url")
    databases = {"sqlite": '{url: "sqlite://", setup: [shop.sql]}', "duckdb": '{url: "duckdb://", setup: [shop.sql]}',
                 "postgresql": '{url: "' + url + '", setup: [shop.sql]}'}
    for engine_name in SUITE_ENGINES:
        pytester.makefile(".sqleval.yaml", **{engine_name: _suite_text(engine_name, databases[engine_name], planted)})
    started = time.monotonic()
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json", "-p", "xdist", *xdist,
                                           timeout=600)
    elapsed = time.monotonic() - started
    output = result.stdout.str() + result.stderr.str()
    report_text = (pytester.path / "report.json").read_text(encoding="utf-8")
    for text in (output, report_text):
        assert SECRET not in text
        assert "INTERNALERROR" not in text and "Traceback" not in text
    assert list(out.iterdir()) == []
    cases = json.loads(report_text)["cases"]
    expected = {(engine_name, f"{name}-{i}"): kinds for engine_name in SUITE_ENGINES
                for i, (name, _sql, kinds) in enumerate(BY_ENGINE[engine_name]) if _in_suite(engine_name, name, kinds)}
    assert len(cases) == len(expected) + len(SUITE_ENGINES)
    for case in cases:
        if case["id"] == "still-fine":
            assert case["outcome"] == "passed", case
            continue
        kinds = expected[case["suite"], case["id"]]
        assert case["outcome"] in ("passed", "missed"), (case["id"], case["outcome"], case.get("error"))
        error = case["error"]
        if error is None:
            assert "ok" in kinds, (case["id"], case.get("mismatch"))
            continue
        accepted = set(kinds) | ({"no_prediction"} if case["id"].startswith(("empty-", "whitespace-")) else set())
        assert error["kind"] in accepted, (case["id"], error)
        assert error["message"].strip(), case["id"]
    assert result.ret == 0, output[-3000:]
    assert elapsed < len(cases) * (TIMEOUT + WALL_SLACK) / (2 if xdist else 1) + 90, elapsed


def test_a_driver_value_python_cannot_hash_is_scored_not_an_internal_error(pytester, request):
    """psycopg returns a PostgreSQL multirange as a mutable list-like ``Multirange``: comparing it raised
    ``TypeError: unhashable type`` and the case was an internal *error* (the run failed) instead of a score."""
    url = request.getfixturevalue("postgres_url")
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    pytester.makefile(".sqleval.yaml", ranges=(
        "database: {url: '" + url + "', setup: [shop.sql]}\n"
        "cases:\n"
        "  - {id: same, gold: 'SELECT int4multirange(int4range(1, 3))',"
        " predicted: 'SELECT int4multirange(int4range(1, 3))'}\n"
        "  - {id: other, gold: 'SELECT 1', predicted: 'SELECT int4multirange(int4range(1, 3), int4range(5, 6))'}\n"
        "  - {id: differs, gold: 'SELECT int4multirange(int4range(1, 3))',"
        " predicted: 'SELECT int4multirange(int4range(1, 4))'}\n"
    ))
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json", timeout=120)
    outcomes = {c["id"]: c["outcome"] for c in json.loads((pytester.path / "report.json").read_text())["cases"]}
    assert outcomes == {"same": "passed", "other": "missed", "differs": "missed"}, result.stdout.str()[-2000:]
    assert result.ret == 0


@pytest.mark.parametrize("rewrite", ["official_distinct", "sqlite3_statement"])
@pytest.mark.parametrize("sql", [
    "SELECT " + "1," * 60_000 + "'" + ";" * 64,  # no full tokenization: 64 prefixes were each re-tokenized
    "SELECT " + ", ".join(["'a'"] * 150_000),  # 1 MB of tokens
], ids=["retried-prefixes", "megabyte"])
def test_the_official_statement_cut_of_a_long_prediction_stays_within_the_time_budget(engines, sql, rewrite):
    """The reproduction profiles (test-suite, bird) keep only the statement the official script runs. That cut
    was made in the pytest process, outside every limit, for a text over 20,000 characters: 36 s for a
    120 KB prediction, minutes for a megabyte. It is made in the query process, inside the timeout."""
    started = time.monotonic()
    with pytest.raises(QueryError) as info:
        run_query(engines["sqlite"], sql, timeout=TIMEOUT, max_rows=MAX_ROWS, untrusted=True, dialect="sqlite",
                  rewrite=rewrite, max_memory=MAX_MEMORY)
    elapsed = time.monotonic() - started
    assert info.value.kind in ("timeout", "rejected", "syntax"), info.value
    assert elapsed <= TIMEOUT + WALL_SLACK, elapsed


# --------------------------------------------------------------------------- legitimate SQL is not refused
LEGITIMATE = {
    "sqlite": [
        "SELECT count(DISTINCT aircraft), group_concat(DISTINCT status), round(avg(hours), 2) FROM tickets",
        "SELECT * FROM tickets NOT INDEXED WHERE aircraft LIKE '9V-SM\\%' ESCAPE '\\' OR aircraft LIKE '9V%' "
        "ORDER BY hours DESC NULLS LAST LIMIT 2 OFFSET 1",
        "SELECT sum(hours) OVER (PARTITION BY shop_id ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), "
        "count(*) FILTER (WHERE hours > 2) OVER () FROM tickets",
        "SELECT id FROM tickets UNION SELECT id FROM shops INTERSECT SELECT id FROM tickets EXCEPT SELECT 99",
        "SELECT key, value, type, atom FROM json_tree('{\"a\": [1, 2]}')",
        "SELECT julianday('2024-03-01') - julianday('2024-01-01'), date('2024-03-01', '-1 month'), "
        "status COLLATE NOCASE FROM tickets",
    ],
    "duckdb": [
        "SELECT * EXCLUDE (id) REPLACE (upper(status) AS status) FROM tickets",
        "SELECT shop_id, count(*) FROM tickets GROUP BY ALL ORDER BY ALL",
        "SELECT [x * 2 FOR x IN [1, 2, 3]], list_distinct([1, 1, 2]), list_reduce([1, 2, 3], lambda x, y: x + y)",
        "SELECT * FROM tickets PIVOT (count(*) FOR status IN ('open', 'closed'))",
        "FROM tickets UNPIVOT (v FOR k IN (hours))",
        "SELECT * FROM generate_series(DATE '2024-01-01', DATE '2024-01-05', INTERVAL 1 DAY)",
        "SELECT unnest(range(3)), unnest(generate_series(1, 3))",
        "SELECT a.id FROM tickets a ASOF JOIN tickets b ON a.id >= b.id",
    ],
    "postgresql": [
        "SELECT generate_series(1, 5)",
        "SELECT DISTINCT ON (shop_id) shop_id, id FROM tickets ORDER BY shop_id, hours DESC",
        "SELECT t.id, x.n FROM tickets t "
        "CROSS JOIN LATERAL (SELECT count(*) AS n FROM shops s WHERE s.id = t.shop_id) x",
        "SELECT shop_id, status, count(*), grouping(shop_id) FROM tickets "
        "GROUP BY GROUPING SETS ((shop_id), (status), ())",
        "SELECT * FROM ROWS FROM (generate_series(1, 3), generate_series(1, 2)) WITH ORDINALITY AS t(a, b, n)",
        "SELECT * FROM tickets ORDER BY id FETCH FIRST 3 ROWS ONLY",
        "SELECT * FROM generate_series('2024-01-01'::date, '2024-01-05'::date, '1 day'::interval) AS d",
        "SELECT int4multirange(int4range(1, 3)), (NULL::tickets).id, 'a & b'::tsquery",
    ],
}


@pytest.mark.parametrize("engine_name, sql", [(e, q) for e, qs in LEGITIMATE.items() for q in qs])
def test_legitimate_queries_of_each_engine_run(engines, engine_name, sql):
    result = run_query(engines[engine_name], sql, timeout=10, max_rows=MAX_ROWS, untrusted=True, max_memory=MAX_MEMORY)
    assert result.rows


# --------------------------------------------------------------------------- what a prediction can print
CONTROL_PREDICTIONS = {
    "escape-in-values": "SELECT char(27) || '[2J' || char(27) || '[8mhidden' || id FROM tickets",
    "escape-in-sql": "SELECT \x1b[2J FROM",
    "escape-in-name": 'SELECT "x\x1b[31m"()',
    "command-in-value": "SELECT 'a' || char(10) || '::error::value-injected' AS x",
    "command-in-sql": "SELECT 1 FROM nosuch\r\n::warning::sql-injected\n",
    "unicode-line-break": "SELECT 'a' || char(8232) || '::error::ls-injected' AS x",
}


@pytest.mark.parametrize("options", [["--sqleval-diff"], ["-v", "--sqleval-strict"]], ids=["diff", "strict"])
def test_a_prediction_cannot_write_control_characters_or_ci_commands_into_the_output(pytester, options):
    """Predicted SQL and its values reach the terminal (miss reasons, the -v/--sqleval-diff tables, a strict
    failure): an escape sequence (clear screen, hidden text) or a line break followed by a CI workflow command
    (`::error::`, read by GitHub Actions at the start of a line) must be shown as text, not acted on."""
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    pytester.path.joinpath("preds.jsonl").write_text(
        "".join(json.dumps({"id": k, "sql": v}) + "\n" for k, v in CONTROL_PREDICTIONS.items()))
    pytester.makefile(".sqleval.yaml", control=(
        "database: {url: 'sqlite://', setup: [shop.sql]}\ncases:\n"
        + "".join(f"  - {{id: {k}, gold: 'SELECT 1'}}\n" for k in CONTROL_PREDICTIONS)))
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-predictions", "preds.jsonl", "--color=no",
                                           *options, timeout=120)
    output = result.stdout.str() + result.stderr.str()
    assert "[2J" in output and "injected" in output  # the text is shown...
    assert "\x1b" not in output  # ...never an escape sequence
    assert "\u2028" not in output
    assert not [line for line in output.splitlines() if line.lstrip().startswith("::")]


@pytest.mark.parametrize("sql", ["-- SELECT 1", "/* SELECT 1 */", ";", " ;; ", "/* a */ ; -- b"])
def test_a_prediction_without_a_statement_says_what_it_holds(sql):
    with pytest.raises(QueryError) as info:
        check_prediction(sql, "sqlite")
    assert info.value.kind == "rejected"
    assert info.value.message == "no statement: the prediction holds only comments, white space or ';'"


def test_a_policy_check_of_a_hostile_prediction_is_a_violation_not_an_error(pytester):
    """With a `policy:`, the prediction is parsed once more in the pytest process. That parse had none of the
    documented limits: a prediction nested 3,000 brackets (or 200 subqueries) deep made the case an internal
    *error* (RecursionError, the run failed), and 450 KB of tokens took seconds outside every time limit."""
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    predictions = {
        "brackets": "SELECT " + "(" * 3000 + "1" + ")" * 3000,
        "subqueries": "SELECT " + "(SELECT " * 200 + "1" + ")" * 200,
        "long": "SELECT " + ",".join(["id"] * 150_000) + " FROM tickets",
        "fine": "SELECT id FROM tickets",
    }
    pytester.path.joinpath("preds.jsonl").write_text(
        "".join(json.dumps({"id": k, "sql": v}) + "\n" for k, v in predictions.items()))
    pytester.makefile(".sqleval.yaml", policed=(
        "database: {url: 'sqlite://', setup: [shop.sql]}\ntimeout: 1\npolicy: {tables: [tickets]}\ncases:\n"
        + "".join(f"  - {{id: {k}, gold: 'SELECT id FROM tickets'}}\n" for k in predictions)))
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-predictions", "preds.jsonl", "--sqleval-json",
                                           "report.json", "--junitxml", "junit.xml", timeout=120)
    cases = {c["id"]: c for c in json.loads((pytester.path / "report.json").read_text())["cases"]}
    assert {k: c["outcome"] for k, c in cases.items()} == {
        "brackets": "missed", "subqueries": "missed", "long": "missed", "fine": "passed"}, result.stdout.str()[-3000:]
    assert result.ret == 0
    for name in ("brackets", "subqueries"):
        assert cases[name]["policy"]["passed"] is False
        assert "nested too deeply" in cases[name]["policy"]["violations"][0]
    import xml.etree.ElementTree as ElementTree

    junit = ElementTree.parse(pytester.path / "junit.xml")
    times = {case.get("name"): float(case.get("time")) for case in junit.iter("testcase")}
    assert times["long"] <= TIMEOUT + WALL_SLACK, times


def test_soft_f1_of_a_prediction_with_thousands_of_columns_is_not_quadratic_in_them():
    """`SELECT id, id, ... (8,000 times) FROM tickets` is one short prediction; soft_f1 screened each predicted
    column against a count of the whole predicted row, rebuilt for every column: 35 s for 8,000 columns in the
    pytest process (half an hour for 60,000), outside every time limit."""
    from pytest_sqleval.metrics.soft_f1 import soft_f1
    from pytest_sqleval.results import QueryResult

    gold = QueryResult(columns=("id",), rows=[(i,) for i in range(1, 7)])
    pred = QueryResult(columns=tuple(f"id{i}" for i in range(8000)), rows=[(i,) * 8000 for i in range(1, 7)])
    started = time.monotonic()
    score = soft_f1(gold, pred)
    assert time.monotonic() - started < 3.0
    assert score == 1.0  # every predicted column holds the gold column's values (soft_f1 pairs columns by value)
    padded = QueryResult(columns=tuple(f"c{i}" for i in range(8000)), rows=[(i,) + (0,) * 7999 for i in range(1, 7)])
    started = time.monotonic()
    score = soft_f1(gold, padded)
    assert time.monotonic() - started < 3.0
    assert 0 < score < 0.01  # the gold column found, 7,999 predicted columns extra


def test_a_result_with_thousands_of_columns_does_not_bloat_the_report(pytester, request):
    """`SELECT id, 0, 0, ... FROM tickets` (20,000 columns, 60 KB of SQL) put 20,000 column names and ten rows of
    20,000 values into the case's record: megabytes per case in memory and in the report. The report keeps the
    first columns (the shape still says how many there were)."""
    from pytest_sqleval.evaluate import MAX_REPORT_COLUMNS

    request.getfixturevalue("duckdb_available")
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    wide = "SELECT id, " + ", ".join(["0"] * 20_000) + " FROM tickets"
    pytester.makefile(".sqleval.yaml", wide=(
        "database: {url: 'duckdb://', setup: [shop.sql]}\ncases:\n"
        f"  - {{id: wide, gold: 'SELECT id FROM tickets', predicted: '{wide}'}}\n"))
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json", "--sqleval-diff", timeout=120)
    assert result.ret == 0, result.stdout.str()[-2000:]
    report_path = pytester.path / "report.json"
    assert report_path.stat().st_size < 300_000, report_path.stat().st_size
    mismatch = json.loads(report_path.read_text())["cases"][0]["mismatch"]
    assert mismatch["predicted_shape"] == [6, 20_001]
    assert len(mismatch["predicted_columns"]) == MAX_REPORT_COLUMNS
    assert all(len(row) == MAX_REPORT_COLUMNS for row in mismatch["predicted_head"] + mismatch["predicted_only_rows"])
    result.stdout.fnmatch_lines(["*predicted result: 6 rows x 20001 columns*"])
