"""The second hostile corpus on SQLite, DuckDB and PostgreSQL (issue 7).

For every statement: the kind is one the class allows, the wall time is at most timeout + 1 s, no
table changed, the planted secret file is unchanged and its content appears in no answer. Then the
whole corpus runs through ``pytest --sqleval`` (serial and ``-n 2``) and the same is checked on the
terminal output and the JSON report, with the query process's peak memory under the cap plus its margin.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from conftest import SHOP_SQL
from hostile_round2 import BY_ENGINE
from pytest_sqleval.errors import QueryError
from pytest_sqleval.execution.engines import EngineFactory
from pytest_sqleval.execution.runner import run_query
from pytest_sqleval.suite import DatabaseSpec
from test_hostile import fingerprint

TIMEOUT = 1.0
WALL_SLACK = 1.0  # the promise: stopped within timeout + 1 s
MAX_ROWS = 1000
MAX_MEMORY = 256 * 2**20
SECRET = "sqleval-planted-secret-5f2c9a"

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A file with a secret that PostgreSQL's server user can read too."""
    folder = tmp_path_factory.mktemp("planted")
    os.chmod(folder, 0o755)
    path = folder / "secret.txt"
    path.write_text(f"{SECRET}\n")
    os.chmod(path, 0o644)
    return path


@pytest.fixture(scope="module")
def engines(tmp_path_factory, request):
    root = tmp_path_factory.mktemp("hostile2")
    script = root / "shop.sql"
    script.write_text(SHOP_SQL)
    factory = EngineFactory(build_dir=root / "build", worker="hostile2")
    built = {"sqlite": factory.engine(DatabaseSpec("sqlite://", (script,)))}
    request.getfixturevalue("duckdb_available")
    built["duckdb"] = factory.engine(DatabaseSpec("duckdb://", (script,)))
    url = request.getfixturevalue("postgres_url")
    built["postgresql"] = factory.engine(DatabaseSpec(url, (script,)))
    for engine in built.values():  # the plugin starts its query process when it is configured
        run_query(engine, "SELECT 1", timeout=30, max_rows=10, max_memory=MAX_MEMORY)
    yield built
    factory.close()


def corpus():
    for engine_name, statements in BY_ENGINE.items():
        for klass, name, sql, kinds in statements:
            yield pytest.param(engine_name, sql, kinds, id=f"{engine_name}-{klass}-{name}")


def test_the_corpus_covers_every_class_on_every_engine():
    for engine_name, statements in BY_ENGINE.items():
        classes = {klass for klass, *_ in statements}
        assert {"A", "C", "D"} <= classes, engine_name
    assert sum(len(v) for v in BY_ENGINE.values()) >= 85


@pytest.mark.parametrize("engine_name, sql, kinds", list(corpus()))
def test_hostile_statement(engines, planted, engine_name, sql, kinds):
    engine = engines[engine_name]
    sql = sql.replace("{secret}", str(planted))
    planted_before = planted.read_bytes()
    before = fingerprint(engine)
    started = time.monotonic()
    try:
        result = run_query(engine, sql, timeout=TIMEOUT, max_rows=MAX_ROWS, untrusted=True, max_memory=MAX_MEMORY)
        kind, shown = "ok", repr(result.rows[:5])
    except QueryError as exc:
        kind, shown = exc.kind, exc.message
    elapsed = time.monotonic() - started
    assert kind in kinds, f"{kind}: {shown[:300]}"
    assert elapsed <= TIMEOUT + WALL_SLACK, elapsed
    assert SECRET not in shown
    assert planted.read_bytes() == planted_before
    assert fingerprint(engine) == before


@pytest.mark.parametrize("engine_name", ["sqlite", "duckdb", "postgresql"])
def test_the_engine_still_answers_after_the_corpus(engines, engine_name):
    result = run_query(engines[engine_name], "SELECT count(*) FROM tickets", timeout=5, max_rows=10)
    assert [tuple(r) for r in result.rows] == [(6,)]


def _suite_text(engine_name: str, database: str, planted) -> str:
    lines = [f"database: {database}", "timeout: 1", "max_memory: 256MiB", "cases:"]
    for i, (klass, name, sql, _kinds) in enumerate(BY_ENGINE[engine_name]):
        sql = sql.replace("{secret}", str(planted))
        lines.append(f"  - id: {klass}-{name}-{i}")
        lines.append("    gold: SELECT 1")
        lines.append(f"    predicted: {json.dumps(sql)}")
    lines.append("  - {id: still-fine, gold: 'SELECT count(*) FROM tickets', predicted: 'SELECT count(*) FROM tickets'}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize("engine_name", ["sqlite", "duckdb", "postgresql"])
def test_the_corpus_through_pytest_sqleval(pytester, planted, request, engine_name, xdist):
    """Every case scored (never an error of the run), nothing leaks into the output or the report."""
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    if engine_name == "sqlite":
        database = '{url: "sqlite://", setup: [shop.sql]}'
    elif engine_name == "duckdb":
        request.getfixturevalue("duckdb_available")
        database = '{url: "duckdb://", setup: [shop.sql]}'
    else:
        url = request.getfixturevalue("postgres_url")
        database = '{url: "' + url + '?password=sqleval-url-secret-77", setup: [shop.sql]}'
    pytester.makefile(".sqleval.yaml", corpus=_suite_text(engine_name, database, planted))
    started = time.monotonic()
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json", "-p", "xdist", *xdist,
                                           timeout=600)
    elapsed = time.monotonic() - started
    output = result.stdout.str() + result.stderr.str()
    report_text = (pytester.path / "report.json").read_text(encoding="utf-8")
    for text in (output, report_text):
        assert SECRET not in text
        assert "sqleval-url-secret-77" not in text
        assert "INTERNALERROR" not in text
        assert "Traceback" not in text
    report = json.loads(report_text)
    cases = report["cases"]
    assert len(cases) == len(BY_ENGINE[engine_name]) + 1
    assert all(c["outcome"] in ("passed", "missed") for c in cases), [c for c in cases if c["outcome"] not in ("passed", "missed")][:3]
    assert {c["id"]: c["outcome"] for c in cases}["still-fine"] == "passed"
    assert result.ret == 0
    assert elapsed < len(cases) * (TIMEOUT + WALL_SLACK) + 60


def test_queries_on_a_built_postgres_database_run_under_its_select_only_role(engines):
    from pytest_sqleval.execution.backends.postgresql import restricted_role_for

    engine = engines["postgresql"]
    role = restricted_role_for(engine)
    assert role
    result = run_query(engine, "SELECT current_user", timeout=5, max_rows=10, untrusted=False)
    assert result.rows == [(role,)]
    with pytest.raises(QueryError) as info:  # past the guard, the role itself refuses a superuser function
        run_query(engine, "SELECT pg_read_file('/etc/hostname')", timeout=5, max_rows=10, untrusted=False)
    assert info.value.kind in ("rejected", "syntax", "runtime")


PEAK_SCRIPT = r"""
import json, resource, sys
from pathlib import Path
from pytest_sqleval.errors import QueryError
from pytest_sqleval.execution.backends.sqlite import sqlite_engine
from pytest_sqleval.execution.backends.duckdb import duckdb_engine
from pytest_sqleval.execution.runner import run_query
from pytest_sqleval.execution.sandbox import close_process_sandbox
from hostile_round2 import SQLITE_MEMORY, DUCKDB_MEMORY

cap = int(sys.argv[3])
kinds = []
for engine, corpus in ((sqlite_engine(Path(sys.argv[1])), SQLITE_MEMORY), (duckdb_engine("duckdb:///" + sys.argv[2]), DUCKDB_MEMORY)):
    for _klass, _name, sql, accepted in corpus:
        try:
            run_query(engine, sql, timeout=20, max_rows=100000, max_memory=cap)
            kinds.append(["ok", accepted])
        except QueryError as exc:
            kinds.append([exc.kind, accepted])
close_process_sandbox()  # the zygote exits and is waited for: its query processes' peak is now ours to read
print(json.dumps({"kinds": kinds, "peak": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""


def test_peak_memory_of_every_memory_hog_stays_under_the_cap_plus_margin(tmp_path, duckdb_available):
    """Each class-D statement on SQLite and DuckDB, with a long timeout so memory (not time) stops it: the
    largest resident size any query process reached is at most the cap plus the documented margin."""
    import subprocess
    import sys

    import duckdb

    sqlite_path = tmp_path / "shop.sqlite"
    import sqlite3

    conn = sqlite3.connect(sqlite_path)
    conn.executescript(SHOP_SQL)
    conn.close()
    duck_path = tmp_path / "shop.duckdb"
    duckdb.connect(str(duck_path)).close()
    cap = 256 * 2**20
    here = os.path.dirname(__file__)
    done = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(sqlite_path), str(duck_path), str(cap)],
                          capture_output=True, text=True, timeout=600, cwd=here,
                          env={**os.environ, "PYTHONPATH": here + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(kind in accepted for kind, accepted in outcome["kinds"]), outcome["kinds"]
    assert [kind for kind, _ in outcome["kinds"]].count("memory") >= 3
    margin = 256 * 2**20  # a query process's own start-up size (about 100 MB) and allocator slack
    assert outcome["peak"] <= cap + margin, outcome["peak"] / 2**20


def test_a_suite_dialect_other_than_the_engine_s_is_guarded_as_the_engine_reads_it_too(engines):
    """A `dialect: sqlite` text on PostgreSQL: the engine lexes it, so the query process guards it as PostgreSQL
    as well (a function SQLite allows but PostgreSQL's list does not is refused before it reaches the server)."""
    with pytest.raises(QueryError) as info:
        run_query(engines["postgresql"], "SELECT randomblob(4)", timeout=5, max_rows=10, dialect="sqlite")
    assert info.value.kind == "rejected" and "postgres allowlist" in info.value.message
    assert run_query(engines["sqlite"], "SELECT length(randomblob(4))", timeout=5, max_rows=10, dialect="sqlite").rows == [(4,)]
