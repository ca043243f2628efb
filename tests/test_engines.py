"""Databases and engines: setup scripts, URLs with environment variables, and clear errors."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import SHOP_SQL, make_sqlite, require_module

SUITE = """
database: {url: "${SHOP_URL:-sqlite://}", setup: [shop.sql]}
cases:
  - {id: open, gold: "SELECT count(*) FROM tickets WHERE status = 'open'", predicted: "SELECT count(*) FROM tickets WHERE status = 'open'"}
  - {id: hours, gold: "SELECT shop_id, sum(hours) FROM tickets GROUP BY shop_id", predicted: "SELECT shop_id, sum(hours) FROM tickets GROUP BY shop_id"}
  - {id: wrong, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops WHERE id < 3"}
"""


@pytest.fixture
def setup_suite(pytester):
    (pytester.path / "shop.sql").write_text(SHOP_SQL)
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(SUITE))
    return pytester


def outcomes(pytester, *args):
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    data = json.loads(report.read_text()) if report.exists() else None
    return result, data


def test_setup_scripts_build_a_sqlite_database(setup_suite):
    result, report = outcomes(setup_suite)
    assert result.parseoutcomes() == {"passed": 2, "missed": 1}
    assert report["suites"][0]["metrics"]["execution_accuracy"] == pytest.approx(2 / 3)


@pytest.mark.usefixtures("duckdb_available")
def test_setup_scripts_on_duckdb_through_an_environment_variable(setup_suite, monkeypatch):
    monkeypatch.setenv("SHOP_URL", "duckdb://")
    result, report = outcomes(setup_suite)
    assert result.parseoutcomes() == {"passed": 2, "missed": 1}
    assert report["cases"][0]["database"] == "duckdb:// (built from shop.sql)"


def test_setup_scripts_on_postgres_via_the_command_line(setup_suite, postgres_url):
    result, report = outcomes(setup_suite, f"--sqleval-database-url={postgres_url}", "-n", "2")
    assert result.parseoutcomes() == {"passed": 2, "missed": 1}
    assert report["suites"][0]["metrics"]["execution_accuracy"] == pytest.approx(2 / 3)


def test_postgres_url_with_environment_variables(pytester, postgres_url, monkeypatch):
    """A suite pointing at an existing PostgreSQL database, the credentials kept in the environment."""
    from sqlalchemy.engine import make_url

    from pytest_sqleval.execution.backends.postgresql import build_postgres, drop_postgres_database

    url = make_url(postgres_url)
    target = build_postgres(postgres_url, "sqleval_env_test", (_script(pytester),))
    try:
        monkeypatch.setenv("PGHOST_FOR_TEST", f"{url.host}:{url.port}")
        monkeypatch.setenv("PGUSER_FOR_TEST", url.username)
        pytester.makefile(".sqleval.yaml", pg=textwrap.dedent("""
            database: "postgresql://${PGUSER_FOR_TEST}@${PGHOST_FOR_TEST}/sqleval_env_test"
            cases:
              - {id: shops, gold: SELECT name FROM shops, predicted: SELECT name FROM shops ORDER BY id DESC}
        """))
        result, report = outcomes(pytester)
        assert result.parseoutcomes() == {"passed": 1}
        assert report["cases"][0]["database"].endswith("/sqleval_env_test")
    finally:
        drop_postgres_database(postgres_url, "sqleval_env_test")
    assert target.endswith("/sqleval_env_test")


def _script(pytester):
    path = pytester.path / "shop.sql"
    path.write_text(SHOP_SQL)
    return path


def test_unreachable_server_is_a_clear_error(pytester):
    require_module("psycopg")
    pytester.makefile(".sqleval.yaml", pg="database: 'postgresql://nobody@127.0.0.1:1/none'\n"
                                          "cases: [{id: a, gold: SELECT 1, predicted: SELECT 1}]\n")
    result, _ = outcomes(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines(["*case a: cannot connect to PostgreSQL at postgresql+psycopg://nobody@127.0.0.1:1/none*"
                                 "check that the server is running*"])
    assert "Traceback" not in result.stdout.str()


def test_missing_driver_names_the_pip_install_line(pytester):
    pytester.makeconftest("import sys\nsys.modules['duckdb_engine'] = None  # as if the extra were not installed\n")
    (pytester.path / "shop.duckdb").write_bytes(b"")
    pytester.makefile(".sqleval.yaml", d="database: shop.duckdb\ncases: [{id: a, gold: SELECT 1}]\n")
    result, _ = outcomes(pytester)
    assert result.parseoutcomes() == {"errors": 1}
    assert "case a: the duckdb driver is not installed: pip install 'pytest-sqleval[duckdb]'" in result.stdout.str()


def test_a_missing_postgres_driver_of_another_name_says_what_to_install(pytester):
    """`postgresql+psycopg2://` without psycopg2: the message names the fix, not only Python's import error."""
    pytester.makeconftest("import sys\nsys.modules['psycopg2'] = None  # as if psycopg2 were not installed\n")
    pytester.makefile(".sqleval.yaml", d="database: 'postgresql+psycopg2://u@127.0.0.1:1/db'\n"
                                         "cases: [{id: a, gold: SELECT 1}]\n")
    result, _ = outcomes(pytester)
    assert result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines(["*case a: bad PostgreSQL URL postgresql+psycopg2://u@127.0.0.1:1/db: *"
                                 "its driver module 'psycopg2' is not installed*"])
    assert "or use postgresql+psycopg:// (pip install 'pytest-sqleval[postgres]')" in result.stdout.str()


def test_bad_url_is_a_clear_error(pytester):
    pytester.makefile(".sqleval.yaml", d="database: 'nosuchdb+driver://x/y'\ncases: [{id: a, gold: SELECT 1}]\n")
    result, _ = outcomes(pytester)
    assert result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines(["*case a: bad database URL nosuchdb+driver://x/y*"])


def test_failing_setup_script_is_a_clear_error(pytester):
    (pytester.path / "broken.sql").write_text("CREATE TABLE t (a INT);\nINSERT INTO nope VALUES (1);\n")
    pytester.makefile(".sqleval.yaml", d="database: {url: 'sqlite://', setup: [broken.sql]}\n"
                                         "cases: [{id: a, gold: SELECT 1}]\n")
    result, _ = outcomes(pytester)
    assert result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines(["*setup script *broken.sql failed on SQLite: no such table: nope*"])


def test_engine_factory_fixture_builds_from_setup_scripts(pytester):
    (pytester.path / "shop.sql").write_text(SHOP_SQL)
    pytester.makepyfile("""
        import pytest
        from pytest_sqleval import run_query, QueryError

        def test_factory(sqleval_engine_factory):
            engine = sqleval_engine_factory("sqlite://", setup=["shop.sql"])
            assert run_query(engine, "SELECT count(*) FROM shops", timeout=5, max_rows=10).rows == [(3,)]
            with pytest.raises(QueryError) as info:
                run_query(engine, "DELETE FROM shops", timeout=5, max_rows=10)
            assert info.value.kind == "rejected"
    """)
    assert pytester.runpytest("-p", "no:cacheprovider").parseoutcomes() == {"passed": 1}


def test_read_only_sqlite_file_stays_unchanged(pytester):
    path = make_sqlite(pytester.path / "shop.sqlite")
    before = path.read_bytes()
    pytester.makefile(".sqleval.yaml", s=textwrap.dedent("""
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT count(*) FROM shops, predicted: "UPDATE shops SET name = 'x'"}
          - {id: b, gold: SELECT count(*) FROM shops, predicted: "SELECT 1; DELETE FROM shops"}
    """))
    result, report = outcomes(pytester)
    assert [c["error"]["kind"] for c in report["cases"]] == ["rejected", "rejected"]
    assert path.read_bytes() == before


def test_scripts_split_differently_are_built_apart(tmp_path):
    """["A", "BC"] and ["AB", "C"] hold the same bytes; the first has a script that fails on its own, so the two
    must not share one built database (it was named by the concatenated bytes)."""
    from pytest_sqleval.errors import DatabaseError
    from pytest_sqleval.execution.engines import EngineFactory, _setup_digest
    from pytest_sqleval.suite import DatabaseSpec

    parts = {"a.sql": "CREATE TABLE t (x INTEGER);\nINSERT INTO t VALUES (1", "bc.sql": ");\n",
             "ab.sql": "CREATE TABLE t (x INTEGER);\nINSERT INTO t VALUES (1);\n", "c.sql": ""}
    for name, text in parts.items():
        (tmp_path / name).write_text(text)
    whole = DatabaseSpec("sqlite://", (tmp_path / "ab.sql", tmp_path / "c.sql"))
    split = DatabaseSpec("sqlite://", (tmp_path / "a.sql", tmp_path / "bc.sql"))
    assert _setup_digest(whole) != _setup_digest(split)
    factory = EngineFactory(build_dir=tmp_path / "build", worker="digest")
    try:
        factory.engine(whole)
        with pytest.raises(DatabaseError, match="a.sql"):
            factory.engine(split)
    finally:
        factory.close()
