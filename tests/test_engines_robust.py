"""Engines that never hang, never collide, clean up after themselves, and give predictions as few rights as possible."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from conftest import SHOP_SQL, make_sqlite, require_module
from pytest_sqleval.errors import DatabaseError
from pytest_sqleval.execution.backends.postgresql import (
    built_database_name,
    drop_postgres_database,
    postgres_engine,
    restricted_role_for,
)
from pytest_sqleval.execution.backends.sqlite import sqlite_engine
from pytest_sqleval.execution.engines import EngineFactory
from pytest_sqleval.suite import DatabaseSpec


# --------------------------------------------------------------------------- a host that never answers
@pytest.fixture
def silent_server():
    """A TCP server on 127.0.0.1 that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    listener.close()


def test_connect_timeout_stops_a_silent_postgres_host(silent_server):
    require_module("psycopg")
    url = f"postgresql://eval:Hush-pw-1@127.0.0.1:{silent_server}/shop"
    started = time.monotonic()
    with pytest.raises(DatabaseError) as info:
        postgres_engine(url, connect_timeout=2)
    elapsed = time.monotonic() - started
    assert 1.5 <= elapsed <= 6, elapsed
    message = str(info.value)
    assert "timed out after 2 s" in message
    assert f"the host 127.0.0.1:{silent_server}" in message
    assert "--sqleval-connect-timeout" in message
    assert "Hush-pw-1" not in message and "eval:***@" in message


def test_the_connect_watchdog_of_other_urls_gives_up_after_the_timeout(silent_server):
    """For a URL whose driver has no connect timeout of its own, the first connection is watched."""
    require_module("psycopg")
    from sqlalchemy import create_engine

    from pytest_sqleval.execution.backends.connect import probe

    url = f"postgresql+psycopg://eval:W4tch-pw@127.0.0.1:{silent_server}/shop"
    engine = create_engine(url, connect_args={"connect_timeout": 60})  # the driver alone would wait a minute
    started = time.monotonic()
    with pytest.raises(DatabaseError, match="timed out after 1 s"):
        probe(engine, url, "postgresql", 1, watchdog=True)
    assert time.monotonic() - started < 5


def test_a_silent_host_is_an_error_of_the_suite_and_the_run_finishes(pytester, silent_server):
    require_module("psycopg")
    (pytester.path / "shop.sql").write_text(SHOP_SQL)
    pytester.makefile(".sqleval.yaml", pg=textwrap.dedent(f"""
        connect_timeout: 2
        database: "postgresql://eval:Hush-pw-2@127.0.0.1:{silent_server}/shop"
        cases:
          - {{id: a, gold: SELECT 1, predicted: SELECT 1}}
          - {{id: b, gold: SELECT 2, predicted: SELECT 2}}
    """), built=textwrap.dedent(f"""
        database: {{url: "postgresql://eval@127.0.0.1:{silent_server}/postgres", setup: [shop.sql]}}
        cases:
          - {{id: c, gold: SELECT 1, predicted: SELECT 1}}
    """))
    report = pytester.path / "r.json"
    started = time.monotonic()
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider",
                                           "--sqleval-connect-timeout=2", timeout=120)
    elapsed = time.monotonic() - started
    assert result.parseoutcomes().get("errors") == 3
    output = result.stdout.str()
    assert f"the host 127.0.0.1:{silent_server} accepted no connection or never answered" in output
    assert "Hush-pw-2" not in output + report.read_text()
    assert "Traceback" not in output
    # each database is tried once: two timeouts of 2 s (plus pytest's start-up), never a hang
    assert elapsed < 60, elapsed
    cases = {c["id"]: c for c in json.loads(report.read_text())["cases"]}
    assert {c["outcome"] for c in cases.values()} == {"error"}


# --------------------------------------------------------------------------- names, roles, cleanup
def test_built_database_names_are_unique_per_run_and_fit_postgres():
    assert built_database_name("a" * 16, "0123abcd", "gw1") == "sqleval_aaaaaaaaaaaa_0123abcd_gw1"
    long = built_database_name("a" * 16, "0123abcd", "gw" + "9" * 80)
    assert len(long) <= 60 and len(("sqleval_ro_" + long[len("sqleval_"):]).encode()) <= 63
    assert EngineFactory(build_dir=Path("/nonexistent")).run_id != EngineFactory(build_dir=Path("/nonexistent")).run_id


def _pg_databases(url: str, prefix: str = "sqleval\\_%") -> set[str]:
    from pytest_sqleval.execution.backends.postgresql import admin_connect

    with admin_connect(url) as conn:
        return {r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (prefix,))}


def _pg_roles(url: str) -> set[str]:
    from pytest_sqleval.execution.backends.postgresql import admin_connect

    with admin_connect(url) as conn:
        return {r[0] for r in conn.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE 'sqleval\\_ro\\_%'")}


def test_two_runs_sharing_a_server_build_separate_databases(postgres_url, tmp_path):
    script = tmp_path / "shop.sql"
    script.write_text(SHOP_SQL)
    spec = DatabaseSpec(url=postgres_url, setup=(script,))
    first = EngineFactory(build_dir=tmp_path / "a", worker="gw0")
    second = EngineFactory(build_dir=tmp_path / "b", worker="gw0")  # same worker id, another run
    try:
        engine_one = first.engine(spec)
        engine_two = second.engine(spec)
        assert engine_one.url.database != engine_two.url.database
        first.close()  # the first run ends: the second one keeps working
        with engine_two.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM tickets").scalar() == 6
    finally:
        first.close()
        second.close()
    leftovers = _pg_databases(postgres_url)
    assert engine_one.url.database not in leftovers and engine_two.url.database not in leftovers


def test_restricted_role_reads_only_the_built_tables(postgres_url, tmp_path):
    import psycopg
    from psycopg import sql as pgsql

    from pytest_sqleval.execution.backends.postgresql import admin_connect

    script = tmp_path / "shop.sql"
    script.write_text(SHOP_SQL)
    factory = EngineFactory(build_dir=tmp_path / "b")
    spec = DatabaseSpec(url=postgres_url, setup=(script,))
    engine = factory.engine(spec)
    role = restricted_role_for(engine)
    try:
        assert role is not None and role.startswith("sqleval_ro_")
        assert factory.restricted_role(spec) == role
        assert restricted_role_for(engine.url.render_as_string(hide_password=False)) == role  # by URL, too
        target = engine.url.render_as_string(hide_password=False)
        with admin_connect(target) as admin:
            admin.execute("CREATE TABLE private_notes (secret text)")  # made after the build: never granted
            admin.execute("INSERT INTO private_notes VALUES ('top secret')")
        with admin_connect(target) as conn:
            conn.autocommit = False
            with conn.transaction():
                conn.execute("SET TRANSACTION READ ONLY")
                conn.execute(pgsql.SQL("SET LOCAL ROLE {}").format(pgsql.Identifier(role)))
                assert conn.execute("SELECT count(*) FROM tickets").fetchone()[0] == 6
                assert conn.execute("SELECT current_user").fetchone()[0] == role
            for denied in ("SELECT * FROM private_notes", "SELECT pg_read_file('/etc/passwd')",
                           "SELECT pg_ls_dir('.')", "SELECT * FROM pg_authid"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    with conn.transaction():
                        conn.execute(pgsql.SQL("SET LOCAL ROLE {}").format(pgsql.Identifier(role)))
                        conn.execute(denied)
    finally:
        factory.close()
    assert role not in _pg_roles(postgres_url)
    assert restricted_role_for(engine) is None


def test_a_failing_drop_is_one_warning_line_not_a_traceback(tmp_path, capsys):
    factory = EngineFactory(build_dir=tmp_path)
    factory._cleanups.append(lambda: drop_postgres_database("postgresql://u:Dr0p-pw@127.0.0.1:1/postgres", "sqleval_x",
                                                            connect_timeout=2))
    factory.close()  # does not raise
    err = capsys.readouterr().err
    assert "sqleval: cleanup failed: cannot connect to PostgreSQL at postgresql://u:***@127.0.0.1:1/postgres" in err
    assert "python -m pytest_sqleval.cleanup URL" in err
    assert "Traceback" not in err and "Dr0p-pw" not in err


def test_cleanup_command_drops_leftovers_but_not_databases_in_use(postgres_url):
    import psycopg
    from sqlalchemy.engine import make_url

    from pytest_sqleval.execution.backends.postgresql import admin_connect, libpq_conninfo

    with admin_connect(postgres_url) as admin:
        for name in ("sqleval_leftover_1_x_gw0", "sqleval_busy_1_x_gw0"):
            admin.execute(f"DROP DATABASE IF EXISTS {name}")
            admin.execute(f"CREATE DATABASE {name}")
        admin.execute("DROP ROLE IF EXISTS sqleval_ro_leftover_1_x_gw0")
        admin.execute("CREATE ROLE sqleval_ro_leftover_1_x_gw0 NOLOGIN")
    busy = psycopg.connect(libpq_conninfo(make_url(postgres_url).set(database="sqleval_busy_1_x_gw0")))
    try:
        command = [sys.executable, "-m", "pytest_sqleval.cleanup", postgres_url]
        dry = subprocess.run([*command, "--dry-run"], capture_output=True, text=True, timeout=60)
        assert dry.returncode == 0, dry.stderr
        assert "would drop database sqleval_leftover_1_x_gw0" in dry.stdout
        assert "would drop role sqleval_ro_leftover_1_x_gw0" in dry.stdout
        assert "kept database sqleval_busy_1_x_gw0 (in use by a running session)" in dry.stdout
        assert {"sqleval_leftover_1_x_gw0", "sqleval_busy_1_x_gw0"} <= _pg_databases(postgres_url)
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "dropped database sqleval_leftover_1_x_gw0" in done.stdout
        assert "dropped role sqleval_ro_leftover_1_x_gw0" in done.stdout
        remaining = _pg_databases(postgres_url)
        assert "sqleval_leftover_1_x_gw0" not in remaining and "sqleval_busy_1_x_gw0" in remaining
        assert "sqleval_ro_leftover_1_x_gw0" not in _pg_roles(postgres_url)
    finally:
        busy.close()
        with admin_connect(postgres_url) as admin:
            admin.execute("DROP DATABASE IF EXISTS sqleval_busy_1_x_gw0 WITH (FORCE)")


def test_cleanup_command_on_an_unreachable_server_is_a_clear_error():
    done = subprocess.run([sys.executable, "-m", "pytest_sqleval.cleanup", "postgresql://u:Cl3an-pw@127.0.0.1:1/x",
                           "--connect-timeout", "2"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "sqleval cleanup: cannot connect to PostgreSQL at postgresql://u:***@127.0.0.1:1/x" in done.stderr
    assert "Traceback" not in done.stderr and "Cl3an-pw" not in done.stderr


SLOW_CONFTEST = """
import time

def pytest_runtest_call(item):
    time.sleep(120)  # the databases are built (at setup); wait here to be interrupted
"""


@pytest.mark.parametrize("sig, workers", [(signal.SIGTERM, ["-n", "2"]), (signal.SIGINT, [])],
                         ids=["sigterm-xdist", "sigint-serial"])
def test_interrupted_runs_drop_their_databases_and_build_folders(pytester, postgres_url, sig, workers):
    import uuid

    from pytest_sqleval.execution.engines import _setup_digest
    from pytest_sqleval.suite import DatabaseSpec

    # A setup script of this test's own, so that its databases (named after the script's digest) are told
    # apart from those other tests running at the same time build on the same server.
    (pytester.path / "shop.sql").write_text(SHOP_SQL + f"\n-- {uuid.uuid4().hex}\n")
    digest = _setup_digest(DatabaseSpec(postgres_url, (pytester.path / "shop.sql",)))[:12]
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(f"""
        database: {{url: "{postgres_url}", setup: [shop.sql]}}
        cases:
          - {{id: a, gold: SELECT count(*) FROM tickets, predicted: SELECT 1}}
          - {{id: b, gold: SELECT count(*) FROM shops, predicted: SELECT 1}}
          - {{id: c, gold: SELECT 3, predicted: SELECT 1}}
          - {{id: d, gold: SELECT 4, predicted: SELECT 1}}
    """))
    pytester.makeconftest(SLOW_CONFTEST)
    build_root = pytester.path / "builds"
    build_root.mkdir()
    ours = f"sqleval\\_{digest}\\_%"
    before = _pg_databases(postgres_url, ours)
    env = {**os.environ, "SQLEVAL_BUILD_DIR": str(build_root)}
    process = subprocess.Popen([sys.executable, "-m", "pytest", "--sqleval", "-p", "no:cacheprovider", *workers],
                               cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        expected = 2 if workers else 1
        deadline = time.monotonic() + 90
        while len(_pg_databases(postgres_url, ours) - before) < expected and time.monotonic() < deadline:
            assert process.poll() is None, process.stdout.read().decode()
            time.sleep(0.2)
        built = _pg_databases(postgres_url, ours) - before
        assert len(built) == expected and any(build_root.iterdir())
        os.killpg(process.pid, sig)
        output = process.communicate(timeout=60)[0].decode()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    # The controller ends at once; an xdist worker cleans up in its own time (on the signal, or when execnet
    # interrupts it after losing the controller): wait for that, bounded, then check.
    deadline = time.monotonic() + 30
    while (_pg_databases(postgres_url) & built or any(build_root.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not (_pg_databases(postgres_url) & built), output
    assert not _pg_roles(postgres_url) & {"sqleval_ro_" + name[len("sqleval_"):] for name in built}
    assert list(build_root.iterdir()) == [], output
    assert "Traceback" not in output
    if sig == signal.SIGTERM:
        assert process.returncode == -signal.SIGTERM
    else:
        assert process.returncode == 2 and "KeyboardInterrupt" in output


def test_signal_handler_chains_and_a_second_signal_goes_straight_through():
    from pytest_sqleval.lifecycle import SignalCleanup

    calls: list[str] = []
    previous = signal.signal(signal.SIGUSR1, lambda *_: calls.append("previous"))
    try:
        handler = SignalCleanup(lambda: calls.append("cleanup"))
        handler.previous[signal.SIGUSR1] = signal.getsignal(signal.SIGUSR1)
        signal.signal(signal.SIGUSR1, handler._handle)
        os.kill(os.getpid(), signal.SIGUSR1)
        os.kill(os.getpid(), signal.SIGUSR1)  # the handler was restored before the cleanup ran
        assert calls == ["cleanup", "previous", "previous"]
    finally:
        signal.signal(signal.SIGUSR1, previous)


# --------------------------------------------------------------------------- SQLite in WAL mode
def _wal_database(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(SHOP_SQL)
    conn.commit()
    conn.close()  # a clean close checkpoints and removes -wal/-shm
    return path


def test_wal_database_opens_without_creating_files_in_a_read_only_directory(tmp_path):
    folder = tmp_path / "checkout"
    folder.mkdir()
    path = _wal_database(folder / "shop.sqlite")
    assert sorted(p.name for p in folder.iterdir()) == ["shop.sqlite"]
    assert path.read_bytes()[18:20] == b"\x02\x02"  # the header's read/write versions: WAL mode
    folder.chmod(0o555)  # as root this does not stop writes; the listing below does
    try:
        engine = sqlite_engine(path)
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM tickets").scalar() == 6
        engine.dispose()
        assert sorted(p.name for p in folder.iterdir()) == ["shop.sqlite"]
    finally:
        folder.chmod(0o755)


def test_wal_database_with_pending_changes_reads_them(tmp_path):
    path = _wal_database(tmp_path / "shop.sqlite")
    writer = sqlite3.connect(path)
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("INSERT INTO shops VALUES (4, 'Paint')")
        writer.commit()
        assert (tmp_path / "shop.sqlite-wal").stat().st_size > 0
        engine = sqlite_engine(path)
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM shops").scalar() == 4  # the WAL's row is seen
        engine.dispose()
    finally:
        writer.close()


def test_read_only_sqlite_refuses_writes_also_when_immutable(tmp_path):
    path = make_sqlite(tmp_path / "shop.sqlite")
    engine = sqlite_engine(path)
    raw = engine.raw_connection()
    try:
        with pytest.raises(sqlite3.Error):
            raw.dbapi_connection.execute("DELETE FROM tickets")
    finally:
        raw.close()
        engine.dispose()
    assert sqlite3.connect(path).execute("SELECT count(*) FROM tickets").fetchone()[0] == 6


# --------------------------------------------------------------------------- --sqleval-database-url and file databases
@pytest.mark.usefixtures("duckdb_available")
def test_database_url_override_names_the_suites_it_does_not_move(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    (pytester.path / "shop.sql").write_text(SHOP_SQL)
    pytester.makefile(".sqleval.yaml", filedb=textwrap.dedent("""
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT count(*) FROM tickets, predicted: SELECT count(*) FROM tickets}
    """), built=textwrap.dedent("""
        database: {url: "sqlite://", setup: [shop.sql]}
        cases:
          - {id: b, gold: SELECT count(*) FROM tickets, predicted: SELECT count(*) FROM tickets}
    """))
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-database-url=duckdb://", f"--sqleval-json={report}",
                                           "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"passed": 2}
    out = result.stdout.str()
    assert "setup-script databases built on duckdb:// (suites whose database is a file or a URL keep it)" in out
    result.stdout.fnmatch_lines([
        f"WARNING suite filedb: runs on sqlite:///{pytester.path / 'shop.sqlite'}, not duckdb://: "
        "--sqleval-database-url applies only to setup-script databases*",
    ])
    assert "WARNING suite built" not in out
    cases = {c["id"]: c["database"] for c in json.loads(report.read_text())["cases"]}
    assert cases == {"a": f"sqlite:///{pytester.path / 'shop.sqlite'}", "b": "duckdb:// (built from shop.sql)"}


def test_an_interrupted_close_leaves_what_it_did_not_do_to_the_next_close(tmp_path):
    """An xdist worker's SIGTERM cleanup can be cut short (execnet raises KeyboardInterrupt in it once its
    controller is gone): the close at unconfigure then drops what the first one did not."""
    from pytest_sqleval.execution.engines import EngineFactory

    factory = EngineFactory(build_dir=tmp_path)
    calls = []

    def cut_short_once():
        calls.append("second built")
        if calls.count("second built") == 1:
            raise KeyboardInterrupt

    factory._cleanups.extend([lambda: calls.append("first built"), cut_short_once])
    with pytest.raises(KeyboardInterrupt):
        factory.close()
    assert calls == ["second built"]  # the last registered first, and it was interrupted
    factory.close()
    assert calls == ["second built", "second built", "first built"]
    factory.close()
    assert calls == ["second built", "second built", "first built"]  # nothing twice once done


def test_a_sigterm_cleanup_goes_on_after_a_keyboard_interrupt_nobody_typed(tmp_path):
    """SIGTERM: a KeyboardInterrupt during the cleanup (execnet's, in an xdist worker) resumes it; SIGINT: a
    second Ctrl-C stops it."""
    import signal as signals

    from pytest_sqleval.execution.engines import EngineFactory
    from pytest_sqleval.lifecycle import SignalCleanup

    for signum, finished in ((signals.SIGTERM, True), (signals.SIGINT, False)):
        factory = EngineFactory(build_dir=tmp_path)
        calls = []

        def cut_short_once(calls=calls):
            calls.append("drop")
            if len(calls) == 1:
                raise KeyboardInterrupt

        factory._cleanups.append(cut_short_once)
        handler = SignalCleanup(factory.close)
        if finished:
            handler.run_cleanup(signum)
        else:
            with pytest.raises(KeyboardInterrupt):
                handler.run_cleanup(signum)
        assert calls == (["drop", "drop"] if finished else ["drop"])
        assert (not factory._cleanups) is finished
