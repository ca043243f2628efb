"""Engines, QA round 5 (issue 4): one suite on SQLite, DuckDB and PostgreSQL; gold checks per dialect."""

from __future__ import annotations

import textwrap

import pytest

ENGINES = ["sqlite://", "duckdb://", "postgres"]


def _engine_url(request, engine: str) -> str:
    if engine == "duckdb://":
        request.getfixturevalue("duckdb_available")
    if engine == "postgres":
        return request.getfixturevalue("postgres_url")
    return engine


def _gold_findings(pytester, *args):
    run = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    result = run("--sqleval", "--sqleval-check-gold", "-p", "no:cacheprovider", *args)
    by_case: dict[str, list[str]] = {}
    for line in result.stdout.lines:
        if line.startswith(("warning ", "BROKEN ")):
            case, kind = line.split(" ", 1)[1].split(": ", 2)[:2]
            by_case.setdefault(case, []).append(kind)
    return result, by_case


EMPLOYEES = """
CREATE TABLE emp (id INTEGER, name VARCHAR(20), salary INTEGER);
INSERT INTO emp VALUES (1, 'Ann', 100);
INSERT INTO emp VALUES (2, 'Bob', 200);
INSERT INTO emp VALUES (3, 'Cy', 200);
INSERT INTO emp VALUES (4, 'Di', 50);
INSERT INTO emp VALUES (5, 'Ed', 70);
"""


@pytest.mark.parametrize(("engine", "xdist"), [(e, ()) for e in ENGINES] + [("postgres", ("-n", "2"))])
def test_a_tie_at_the_offset_cut_is_flagged_on_every_engine(pytester, request, engine, xdist):
    """`ORDER BY salary DESC LIMIT 1 OFFSET 1` (the second-highest salary, BIRD's `LIMIT 1, 1`): Bob and Cy tie at
    200, so which of them the OFFSET skips, and so the one row returned, is the engine's choice. Only the LIMIT cut
    was checked for ties; the OFFSET cut is a cut too."""
    url = _engine_url(request, engine)
    (pytester.path / "emp.sql").write_text(EMPLOYEES)
    pytester.makefile(".sqleval.yaml", emp=textwrap.dedent("""
        database: {url: "sqlite://", setup: [emp.sql]}
        cases:
          - {id: second, gold: "SELECT name FROM emp ORDER BY salary DESC LIMIT 1 OFFSET 1"}
          - {id: rest, gold: "SELECT name FROM emp ORDER BY salary DESC OFFSET 1"}
          - {id: clean-offset, gold: "SELECT name FROM emp ORDER BY salary DESC LIMIT 2 OFFSET 2"}
          - {id: third, gold: "SELECT name FROM emp ORDER BY salary DESC, id LIMIT 1 OFFSET 1"}
    """))
    result, by_case = _gold_findings(pytester, f"--sqleval-database-url={url}", *xdist)
    assert by_case == {"second": ["ties_at_limit"], "rest": ["ties_at_limit"]}, result.stdout.str()
    result.stdout.fnmatch_lines(["*second: ties_at_limit: ORDER BY ... OFFSET 1: row 2 ties with row 1 on the "
                                 "ORDER BY keys*"])
    assert result.ret == pytest.ExitCode.OK


@pytest.mark.parametrize(("engine", "gold"), [
    ("duckdb://", "SELECT name FROM one USING SAMPLE 1 ROWS"),
    ("duckdb://", "SELECT name FROM one TABLESAMPLE 0.0001%"),
    ("postgres", "SELECT name FROM one TABLESAMPLE SYSTEM (0.0001)"),
    ("postgres", "SELECT name FROM one TABLESAMPLE BERNOULLI (0.0001)"),
])
def test_a_gold_sampling_rows_without_a_seed_is_unstable_even_when_two_runs_agree(pytester, request, engine, gold):
    """A sample of rows is a random draw like `ORDER BY random() LIMIT 1`: on a one-row table DuckDB's one-row
    sample always agrees with itself, and a 0.0001% PostgreSQL sample is almost always empty twice, so the rerun
    alone passed the gold (PostgreSQL's `TABLESAMPLE SYSTEM (50)` on a small table: half the runs). A seeded
    sample (`REPEATABLE (3)`) repeats and is no finding."""
    url = _engine_url(request, engine)
    (pytester.path / "one.sql").write_text("CREATE TABLE one (name VARCHAR(10));\nINSERT INTO one VALUES ('a');\n")
    seeded = ("SELECT name FROM one USING SAMPLE reservoir(1 ROWS) REPEATABLE (3)" if engine == "duckdb://"
              else "SELECT name FROM one TABLESAMPLE BERNOULLI (100) REPEATABLE (3)")
    pytester.makefile(".sqleval.yaml", smp=textwrap.dedent(f"""
        database: {{url: "{url}", setup: [one.sql]}}
        cases:
          - {{id: sampled, gold: "{gold}"}}
          - {{id: seeded, gold: "{seeded}"}}
    """))
    result, by_case = _gold_findings(pytester)
    assert "unstable" in by_case.get("sampled", []), result.stdout.str()
    assert "seeded" not in by_case, result.stdout.str()
    result.stdout.fnmatch_lines(["*BROKEN sampled: unstable: its result depends on a random sample of rows*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def pg_role(postgres_url):
    """A login role of its own on the test server (so its sessions can be ended without touching anyone else's),
    and the admin engine; dropped afterwards."""
    import uuid

    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    name = f"qa5_{uuid.uuid4().hex[:10]}"
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE ROLE {name} LOGIN")
    url = make_url(postgres_url).set(username=name, password=None).render_as_string(hide_password=False)
    yield name, url, admin
    with admin.connect() as conn:
        conn.exec_driver_sql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{name}'")
        conn.exec_driver_sql(f"DROP ROLE IF EXISTS {name}")
    admin.dispose()


def test_a_server_ending_the_session_during_a_prediction_is_the_suites_error_not_a_miss(pytester, pg_role):
    """The server shut down (or an administrator ended the session) while the prediction ran: `terminating
    connection due to administrator command` was scored as the model's `runtime` miss, counted in error_count and
    valid_syntax. A database that goes away is the suite's error (as one that cannot be reached at the start),
    named with its URL and what to check."""
    import json
    import threading
    import time

    name, url, admin = pg_role
    pytester.makefile(".sqleval.yaml", pg=textwrap.dedent(f"""
        database: "{url}"
        timeout: 60
        cases:
          - {{id: ended, gold: "SELECT 7", predicted: "SELECT count(*) - count(*) + 7 FROM generate_series(1, 400000000)"}}
    """))
    stop = threading.Event()

    def end_the_session():
        deadline = time.monotonic() + 50
        while not stop.is_set() and time.monotonic() < deadline:
            with admin.connect() as conn:
                ended = conn.exec_driver_sql(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %(u)s "
                    "AND state = 'active' AND now() - query_start > interval '1 second' AND pid <> pg_backend_pid()",
                    {"u": name}).fetchall()  # the long FETCH of the prediction's cursor
            if ended:
                return
            time.sleep(0.05)

    killer = threading.Thread(target=end_the_session, daemon=True)
    killer.start()
    report = pytester.path / "r.json"
    try:
        result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider")
    finally:
        stop.set()
        killer.join(5)
    record = json.loads(report.read_text())["cases"][0]
    assert record["outcome"] == "error", record
    assert record["error"]["kind"] == "database", record
    assert "failed during the run" in record["error"]["message"]
    assert "check that the database is still reachable" in record["error"]["message"]
    assert json.loads(report.read_text())["suites"][0]["metrics"].get("error_count") in (None, 0)
    assert result.ret != pytest.ExitCode.OK


def test_a_server_refusing_the_next_connection_is_the_suites_error_not_a_broken_gold(pg_role):
    """The server was reachable when the engine opened, then refused the next connection (it shut down, restarted
    or stopped letting the role in): the driver's OperationalError from the connection pool became kind `runtime`,
    so a gold was reported as "the gold query failed ... correct the gold SQL" and a prediction as the model's
    miss. It is a DatabaseError naming the server."""
    from pytest_sqleval.errors import DatabaseError
    from pytest_sqleval.execution.backends.postgresql import postgres_engine
    from pytest_sqleval.execution.runner import run_query

    name, url, admin = pg_role
    engine = postgres_engine(url)
    try:
        assert run_query(engine, "SELECT 1", untrusted=False).rows == [(1,)]
        with admin.connect() as conn:
            conn.exec_driver_sql(f"ALTER ROLE {name} NOLOGIN")
            conn.exec_driver_sql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{name}'")
        for untrusted in (False, True):  # the gold's side and the prediction's
            with pytest.raises(DatabaseError, match="failed during the run.*not permitted to log in"):
                run_query(engine, "SELECT 1", untrusted=untrusted, dialect="postgres")
    finally:
        engine.dispose()


def test_duckdbs_uuidv4_and_uuidv7_draw_a_random_value_as_uuid_does(pytester, duckdb_available):
    """DuckDB's `uuidv4()` and `uuidv7()` (and PostgreSQL's `random_normal()`, `uuid_generate_v1()`) were not known
    as random draws: `ORDER BY uuidv4() LIMIT 1` on one row agrees with itself, so the gold passed the check, while
    the same gold with `uuid()` or `gen_random_uuid()` is unstable."""
    (pytester.path / "one.sql").write_text("CREATE TABLE one (name VARCHAR);\nINSERT INTO one VALUES ('a');\n")
    pytester.makefile(".sqleval.yaml", u=textwrap.dedent("""
        database: {url: "duckdb://", setup: [one.sql]}
        cases:
          - {id: v4, gold: "SELECT name FROM one ORDER BY uuidv4() LIMIT 1"}
          - {id: v7, gold: "SELECT name FROM one ORDER BY uuidv7() LIMIT 1"}
          - {id: uuid, gold: "SELECT name FROM one ORDER BY uuid() LIMIT 1"}
    """))
    result, by_case = _gold_findings(pytester)
    assert by_case == {"v4": ["unstable"], "v7": ["unstable"], "uuid": ["unstable"]}, result.stdout.str()
