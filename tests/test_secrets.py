"""Passwords never leak: URLs and DSNs are masked in every message, header and report; ${VAR} values are URL-encoded."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import SHOP_SQL
from pytest_sqleval.errors import DatabaseError, SuiteError
from pytest_sqleval.secrets import expand_env, mask_secrets, mask_url
from pytest_sqleval.suite import DatabaseSpec


@pytest.mark.parametrize(
    "text, expected",
    [
        ("postgresql://h:5432/db?user=u&password=SECRET", "postgresql://h:5432/db?user=u&password=***"),
        ("postgresql+psycopg://eval:hunter2@db/shop", "postgresql+psycopg://eval:***@db/shop"),
        # an unencoded password holding '@', '/' and '#': everything up to the last '@' is hidden
        ("cannot connect to postgresql://eval:p@ss/w#rd@db:5432/shop: refused",
         "cannot connect to postgresql://eval:***@db:5432/shop: refused"),
        ("postgresql://u:pw@h/db?user=a@b&pwd=zz&sslmode=require", "postgresql://u:***@h/db?user=a@b&pwd=***&sslmode=require"),
        ("mssql+pyodbc://u:pw@dsn?passwd=x&Secret=y&api_token=z&key=k&sig=s&driver=ODBC",
         "mssql+pyodbc://u:***@dsn?passwd=***&Secret=***&api_token=***&key=***&sig=***&driver=ODBC"),
        ("host=db port=5432 password='s p w' user=x", "host=db port=5432 password=*** user=x"),
        ("invalid dsn: host=db password=hunter2 dbname=x", "invalid dsn: host=db password=*** dbname=x"),
        ("PGPASSWORD=abc123 psql", "PGPASSWORD=*** psql"),
        ("sqlite:////tmp/x.sqlite and duckdb:// and mysql://u@h/db", "sqlite:////tmp/x.sqlite and duckdb:// and mysql://u@h/db"),
        ("SELECT * FROM t WHERE key = 5", "SELECT * FROM t WHERE key = 5"),  # quoted SQL is not a conninfo
    ],
)
def test_mask_secrets(text, expected):
    assert mask_secrets(text) == expected


def test_a_password_once_seen_is_masked_wherever_it_appears():
    url = "postgresql://eval:Qz8-unique-pw@db/shop"
    assert mask_url(url) == "postgresql://eval:***@db/shop"
    # a driver echoing the password in its own words
    assert mask_secrets('FATAL: password "Qz8-unique-pw" rejected') == 'FATAL: password "***" rejected'
    assert str(DatabaseError("boom Qz8-unique-pw")) == "boom ***"


def test_database_spec_display_and_errors_are_masked():
    spec = DatabaseSpec("postgresql://db/x?user=u&password=S3cr3t-x")
    assert spec.display == "postgresql://db/x?user=u&password=***"
    assert "S3cr3t" not in str(DatabaseError(f"cannot open {spec.url}"))
    assert "S3cr3t" not in SuiteError(f"bad {spec.url}", path="s.yaml", line=3).render()


def test_env_values_in_userinfo_and_query_are_url_encoded():
    from sqlalchemy.engine import make_url

    env = {"PW": "p@ss/w#rd", "HOST": "127.0.0.1:5432", "DIR": "/data/with space"}
    url = expand_env("postgresql://eval:${PW}@${HOST}/shop?password=${PW}", env.get, KeyError)
    assert url == "postgresql://eval:p%40ss%2Fw%23rd@127.0.0.1:5432/shop?password=p%40ss%2Fw%23rd"
    parsed = make_url(url)
    assert (parsed.password, parsed.host, parsed.port, parsed.database) == ("p@ss/w#rd", "127.0.0.1", 5432, "shop")
    assert parsed.query["password"] == "p@ss/w#rd"
    assert mask_secrets(f"error near {env['PW']} in {url}") == "error near *** in postgresql://eval:***@127.0.0.1:5432/shop?password=***"
    # a path is never encoded, nor is a whole URL given by one variable
    assert expand_env("${DIR}/shop.sqlite", env.get, KeyError) == "/data/with space/shop.sqlite"
    assert expand_env("${URL:-sqlite://}", env.get, KeyError) == "sqlite://"
    assert expand_env("sqlite:///${DIR}/x.sqlite", env.get, KeyError) == "sqlite:////data/with space/x.sqlite"


def test_unset_variable_is_the_given_error():
    with pytest.raises(KeyError):
        expand_env("postgresql://u:${NOPE}@h/db", {}.get, KeyError)


# --------------------------------------------------------------------------- as the user sees it
def _run(pytester, *args):
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    text = result.stdout.str() + result.stderr.str() + (report.read_text() if report.exists() else "")
    return result, text, (json.loads(report.read_text()) if report.exists() else None)


def test_query_parameter_password_never_shows(pytester):
    pytester.makefile(".sqleval.yaml", pg=textwrap.dedent("""
        database: "postgresql://127.0.0.1:1/db?user=u&password=SECRET-in-query-1"
        cases:
          - {id: a, gold: SELECT 1, predicted: SELECT 1}
    """))
    result, text, report = _run(pytester, "--sqleval-database-url=postgresql://admin:SECRET-on-cli-2@127.0.0.1:1/x")
    assert "SECRET-in-query-1" not in text and "SECRET-on-cli-2" not in text
    assert "password=***" in text
    assert "postgresql://admin:***@127.0.0.1:1/x" in result.stdout.str()  # the header names the override, masked
    assert report["cases"][0]["database"] == "postgresql://127.0.0.1:1/db?user=u&password=***"
    assert report["cases"][0]["outcome"] == "error"
    assert "Traceback" not in text


def test_setup_script_errors_are_masked_and_clean(pytester):
    (pytester.path / "bad.sql").write_text('CREATE TABLE t (x INTEGER);\nSELECT * FROM "host=db password=Leak3d-pw";\n')
    pytester.makefile(".sqleval.yaml", s=textwrap.dedent("""
        database: {url: "sqlite://", setup: [bad.sql]}
        cases:
          - {id: a, gold: SELECT 1, predicted: SELECT 1}
    """))
    result, text, report = _run(pytester)
    assert "Leak3d-pw" not in text
    assert "setup script" in text and "password=***" in text
    assert "Traceback" not in text
    assert report["cases"][0]["outcome"] == "error"


def test_env_password_with_special_characters_works_on_postgres_and_never_shows(pytester, postgres_url, monkeypatch):
    import psycopg
    from sqlalchemy.engine import make_url

    from pytest_sqleval.execution.backends.postgresql import admin_connect

    url = make_url(postgres_url)
    password = "p@ss/w#rd:%x?y=z"
    with admin_connect(postgres_url) as admin:
        admin.execute("DROP ROLE IF EXISTS sqleval_secret_user")
        admin.execute(f"CREATE ROLE sqleval_secret_user LOGIN SUPERUSER PASSWORD '{password}'")
    try:
        monkeypatch.setenv("SQLEVAL_TEST_PW", password)
        (pytester.path / "shop.sql").write_text(SHOP_SQL)
        pytester.makefile(".sqleval.yaml", pg=textwrap.dedent(f"""
            database:
              url: "postgresql://sqleval_secret_user:${{SQLEVAL_TEST_PW}}@{url.host}:{url.port}/postgres"
              setup: [shop.sql]
            cases:
              - {{id: a, gold: SELECT count(*) FROM tickets, predicted: SELECT count(*) FROM tickets}}
              - {{id: b, gold: SELECT name FROM shops, predicted: SELECT 'x'}}
        """))
        result, text, report = _run(pytester)
        assert result.parseoutcomes() == {"passed": 1, "missed": 1}
        assert report["cases"][0]["database"].startswith(
            f"postgresql://sqleval_secret_user:***@{url.host}:{url.port}/postgres (built from shop.sql)")
        assert password not in text and "p%40ss" not in text
    finally:
        with admin_connect(postgres_url) as admin:
            try:
                admin.execute("DROP ROLE IF EXISTS sqleval_secret_user")
            except psycopg.Error:
                pass


def test_postgres_setup_error_echoing_a_url_is_masked(pytester, postgres_url):
    (pytester.path / "bad.sql").write_text("SELECT 'postgresql://u:Echo3d-pw@h/db'::int;\n")
    pytester.makefile(".sqleval.yaml", pg=textwrap.dedent(f"""
        database: {{url: "{postgres_url}", setup: [bad.sql]}}
        cases:
          - {{id: a, gold: SELECT 1, predicted: SELECT 1}}
    """))
    result, text, report = _run(pytester)
    assert "Echo3d-pw" not in text
    assert "invalid input syntax for type integer" in text and "postgresql://u:***@h/db" in text
    assert "Traceback" not in text
    assert report["cases"][0]["error"]["kind"] == "database"


def test_the_engine_factory_fixture_url_encodes_expanded_passwords(monkeypatch):
    from pytest_sqleval.fixtures import _spec

    monkeypatch.setenv("SQLEVAL_TEST_PW", "p@ss/w#rd")
    spec = _spec("postgresql://u:${SQLEVAL_TEST_PW}@localhost:5432/db", None)
    assert spec.url == "postgresql://u:p%40ss%2Fw%23rd@localhost:5432/db"
    assert "p@ss" not in spec.display and "p%40ss" not in spec.display


def test_a_url_masked_before_a_secret_was_known_is_masked_again_after():
    """mask_url keeps the masked URL of each database (every case names it), but not past a new secret."""
    from pytest_sqleval.secrets import register_secret

    url = "sqlite:////tmp/zq7-lately-known-Secret/shop.sqlite"
    assert mask_url(url) == url
    register_secret("zq7-lately-known-Secret")
    assert mask_url(url) == "sqlite:////tmp/***/shop.sqlite"
    assert mask_url("postgresql://u:pw9x@h/db") == "postgresql://u:***@h/db"


def test_an_unencoded_at_sign_in_a_written_password_never_shows():
    """`u:Xp@ssW0rd-9@host`: SQLAlchemy reads the password `Xp` and the host `ssW0rd-9@host`, which the driver
    echoes ("failed to resolve host 'ssW0rd-9@127.0.0.1'"); the piece after the '@' is masked too."""
    url = "postgresql://u:Xp@ssW0rd-9@127.0.0.1:1/db"
    assert mask_url(url) == "postgresql://u:***@127.0.0.1:1/db"
    message = "(psycopg.OperationalError) failed to resolve host 'ssW0rd-9@127.0.0.1': Name or service not known"
    assert "ssW0rd-9" not in mask_secrets(message)
    assert str(DatabaseError(message)) == "(psycopg.OperationalError) failed to resolve host '***@127.0.0.1': " \
                                          "Name or service not known"
