"""Runs whose environment fails: the database, the query processes, the options (issue 7, "nothing aborts,
hangs or leaks a run"). Each run is bounded in time and must end with a clear message and no leftover
query processes."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time

import pytest

from conftest import require_module

CASES = "".join(f"  - id: c{i}\n    gold: SELECT a FROM t ORDER BY a\n    predicted: SELECT a FROM t ORDER BY a\n"
                for i in range(4))


def _workers(root) -> set[int]:
    """Query processes (zygotes and their forks) started for this pytester folder's runs: found in /proc."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if b"sandbox_worker" in cmd and cwd.startswith(str(root)):
            found.add(int(entry))
    return found


def _report(pytester):
    return json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))


@pytest.fixture
def sqlite_project(pytester):
    conn = sqlite3.connect(pytester.path / "shop.sqlite")
    conn.executescript("CREATE TABLE t(a int); INSERT INTO t VALUES (1),(2),(3);")
    conn.close()
    pytester.makefile(".sqleval.yaml", s="database: shop.sqlite\ncases:\n" + CASES)
    return pytester


def test_a_memory_cap_too_small_for_duckdb_to_start_names_the_cap(pytester, duckdb_available):
    duckdb = require_module("duckdb")
    conn = duckdb.connect(str(pytester.path / "shop.duckdb"))
    conn.execute("CREATE TABLE t(a int); INSERT INTO t VALUES (1),(2),(3)")
    conn.close()
    pytester.makefile(".sqleval.yaml", d="database: shop.duckdb\ncases:\n" + CASES)
    start = time.monotonic()
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-max-memory", "1MiB", "--sqleval-json",
                                           "report.json", timeout=60)
    assert time.monotonic() - start < 30
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and result.ret == 1
    cases = _report(pytester)["cases"]
    assert len(cases) == 4 and all(c["outcome"] == "error" for c in cases)
    for case in cases:  # every case names the cap and how to raise it, whatever failed first
        assert "--sqleval-max-memory" in case["error"]["message"], case["error"]


KILL_CONFTEST = """
import os, signal

def pytest_runtest_logreport(report):
    # after the first case, SIGKILL every query process (the zygote's whole process group) from outside
    if report.when == "call" and report.nodeid.endswith("c0"):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cmd = open(f"/proc/{entry}/cmdline", "rb").read()
                if b"sandbox_worker" in cmd and os.readlink(f"/proc/{entry}/cwd") == os.getcwd():
                    os.killpg(os.getpgid(int(entry)), signal.SIGKILL)
            except OSError:
                pass
"""


@pytest.mark.parametrize("xdist", [[], ["-p", "xdist", "-n", "2"]], ids=["serial", "xdist"])
def test_query_processes_killed_from_outside_do_not_stop_the_run(sqlite_project, xdist):
    sqlite_project.makeconftest(KILL_CONFTEST)
    start = time.monotonic()
    result = sqlite_project.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json", *xdist, timeout=60)
    assert time.monotonic() - start < 30
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    cases = _report(sqlite_project)["cases"]
    assert sorted(c["id"] for c in cases) == ["c0", "c1", "c2", "c3"]
    for case in cases:  # the next query gets a new zygote/process, or its case names why it failed
        assert case["outcome"] == "passed" or "query process" in (case["error"] or {}).get("message", ""), case
    assert result.ret in (0, 1)
    time.sleep(0.3)
    assert not _workers(sqlite_project.path)


def _built_databases(url) -> set[str]:
    import psycopg

    from pytest_sqleval.execution.backends.postgresql import psycopg_url

    with psycopg.connect(psycopg_url(url).replace("+psycopg", ""), autocommit=True) as conn:
        return {r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'sqleval%'")}


@pytest.mark.parametrize("xdist", [[], ["-p", "xdist", "-n", "2"]], ids=["serial", "xdist"])
def test_sigterm_during_a_postgres_build_leaves_no_database(pytester, postgres_url, xdist):
    import signal
    import subprocess
    import sys

    pytester.makefile(".sql", slow="CREATE TABLE t(a int);\nINSERT INTO t VALUES (1),(2),(3);\nSELECT pg_sleep(20);\n")
    pytester.makefile(".sqleval.yaml", pg=f'database: {{url: "{postgres_url}", setup: [slow.sql]}}\ncases:\n' + CASES)
    before = _built_databases(postgres_url)
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "--sqleval", "-p", "no:cacheprovider", *xdist],
                            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(_built_databases(postgres_url) - before) < (2 if xdist else 1):
            time.sleep(0.1)
        mine = _built_databases(postgres_url) - before
        assert mine, "the build never started"
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=30)[0].decode(errors="replace")
    finally:
        proc.kill()
    assert "INTERNALERROR" not in output and "Traceback" not in output, output
    deadline = time.monotonic() + 10  # (xdist workers clean up after their controller is gone)
    while time.monotonic() < deadline and mine & _built_databases(postgres_url):
        time.sleep(0.2)
    assert not mine & _built_databases(postgres_url)
    assert not _workers(pytester.path)


@pytest.mark.parametrize("rights", ["CREATEDB", "NOCREATEDB"])
def test_a_user_without_createrole_gets_no_cleanup_warning(pytester, postgres_url, rights):
    import uuid

    import psycopg
    from sqlalchemy.engine import make_url

    from pytest_sqleval.execution.backends.postgresql import psycopg_url

    admin_url = psycopg_url(postgres_url).replace("+psycopg", "")
    user = f"rgw_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {user} LOGIN PASSWORD 'pw' {rights} NOCREATEROLE")
    try:
        url = make_url(postgres_url).set(username=user, password="pw").render_as_string(hide_password=False)
        pytester.makefile(".sql", s="CREATE TABLE t(a int);\nINSERT INTO t VALUES (1),(2),(3);\n")
        pytester.makefile(".sqleval.yaml", pg=f'database: {{url: "{url}", setup: [s.sql]}}\ncases:\n' + CASES)
        result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", timeout=60)
        output = result.stdout.str() + result.stderr.str()
        assert "cleanup failed" not in output, output
        assert "INTERNALERROR" not in output
        if rights == "CREATEDB":
            assert result.ret == 0
        else:
            assert result.ret == 1 and "needs the CREATEDB right" in output
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            owned = [r[0] for r in conn.execute("SELECT datname FROM pg_database d JOIN pg_roles r "
                                                "ON r.oid = d.datdba WHERE r.rolname = %s", (user,))]
            for name in owned:
                conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            conn.execute(f"DROP ROLE {user}")
    assert owned == []  # the run dropped what it built


def test_two_runs_at_once_share_a_build_directory(pytester, duckdb_available):
    import subprocess
    import sys

    inserts = "\n".join(f"INSERT INTO t VALUES ({i});" for i in range(2000))
    pytester.makefile(".sql", big="CREATE TABLE t(a int);\n" + inserts + "\n")
    cases = "".join(f"  - id: c{i}\n    gold: SELECT count(*) FROM t\n    predicted: SELECT count(*) FROM t\n"
                    for i in range(3))
    pytester.makefile(".sqleval.yaml", lite='database: {url: "sqlite://", setup: [big.sql]}\ncases:\n' + cases,
                      duck='database: {url: "duckdb://", setup: [big.sql]}\ncases:\n' + cases)
    build = pytester.path / "builds"
    build.mkdir()
    env = {**os.environ, "SQLEVAL_BUILD_DIR": str(build)}
    runs = [subprocess.Popen([sys.executable, "-m", "pytest", "--sqleval", "-p", "no:cacheprovider",
                              "--sqleval-json", f"r{i}.json", *extra], cwd=pytester.path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            for i, extra in enumerate([[], ["-p", "xdist", "-n", "2"]])]
    outputs = [run.communicate(timeout=60)[0].decode(errors="replace") for run in runs]
    for i, (run, output) in enumerate(zip(runs, outputs)):
        assert run.returncode == 0, output
        report = json.loads((pytester.path / f"r{i}.json").read_text(encoding="utf-8"))
        assert [c["outcome"] for c in report["cases"]] == ["passed"] * 6
    assert list(build.iterdir()) == []  # every run removed what it built, none removed another's file in use


SPOIL_CONFTEST = """
import os, pathlib

def pytest_collection_finish(session):
    # between collection and the run (only the controller or the serial process: xdist workers have workerinput)
    if not hasattr(session.config, "workerinput"):
        p = pathlib.Path("{name}")
        if "{how}" == "delete":
            p.unlink()
        else:
            p.write_bytes(b"not a database at all " * 500)
"""


@pytest.mark.parametrize(("engine", "how"), [("sqlite", "garbage"), ("duckdb", "delete")])
def test_a_database_file_spoiled_after_collection_is_each_case_s_clear_error(pytester, engine, how):
    name = f"shop.{engine}"
    if engine == "sqlite":
        conn = sqlite3.connect(pytester.path / name)
        conn.executescript("CREATE TABLE t(a int); INSERT INTO t VALUES (1),(2),(3);")
        conn.close()
    else:
        duckdb = require_module("duckdb")
        conn = duckdb.connect(str(pytester.path / name))
        conn.execute("CREATE TABLE t(a int); INSERT INTO t VALUES (1),(2),(3)")
        conn.close()
    pytester.makefile(".sqleval.yaml", s=f"database: {name}\ncases:\n" + CASES)
    pytester.makeconftest(SPOIL_CONFTEST.format(name=name, how=how))
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json", timeout=60)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and "Traceback" not in output
    assert result.ret == 1
    cases = _report(pytester)["cases"]
    assert len(cases) == 4
    for case in cases:
        assert case["outcome"] == "error" and case["error"]["kind"] == "database", case
        assert name in case["error"]["message"]
    assert not _workers(pytester.path)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device that is always full)")
def test_a_full_disk_when_writing_the_reports_fails_the_run_with_messages(sqlite_project):
    result = sqlite_project.runpytest_subprocess("--sqleval", "--sqleval-json", "/dev/full", "--sqleval-html",
                                                 "/dev/full", "--sqleval-markdown", "/dev/full", timeout=60)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and "Traceback" not in output
    assert result.ret == 1  # every case passed: the reports that could not be written fail the run
    assert "4 passed" in output
    for name in ("JSON report", "HTML", "Markdown"):
        assert re.search(rf"sqleval: .*{name}.* /dev/full: .*No space left on device", output), name


def test_frozen_query_processes_cost_a_bounded_time(sqlite_project):
    """SIGSTOP to the zygote and its query process: the query is killed at timeout + 0.5 s, and the frozen
    zygote is replaced after FORK_TIMEOUT (10 s), not after the 60 s allowed for a first start."""
    sqlite_project.makeconftest(KILL_CONFTEST.replace("os.killpg(os.getpgid(int(entry)), signal.SIGKILL)",
                                                      "os.kill(int(entry), signal.SIGSTOP)"))
    start = time.monotonic()
    result = sqlite_project.runpytest_subprocess("--sqleval", "--sqleval-timeout", "1", "--sqleval-json",
                                                 "report.json", timeout=90)
    elapsed = time.monotonic() - start
    assert elapsed < 30, elapsed
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    cases = {c["id"]: c for c in _report(sqlite_project)["cases"]}
    assert sorted(cases) == ["c0", "c1", "c2", "c3"]
    assert any((c["error"] or {}).get("kind") == "timeout" for c in cases.values())  # the frozen query
    assert cases["c3"]["outcome"] == "passed"  # a new zygote serves the rest
    assert not _workers(sqlite_project.path)
