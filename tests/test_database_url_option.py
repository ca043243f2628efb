"""`--sqleval-database-url` (and the ini's `sqleval_database_url`) only matters to suites with setup scripts, so a
typo in its scheme (`sqlit://`) went by without a word when no suite had any. It is now a usage error at once,
naming the option, the URL without its password, and the nearest scheme; a URL whose driver is merely not installed
still runs until a suite uses it (that engine's message names the package)."""

from __future__ import annotations

import pytest

from conftest import make_sqlite


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite", "CREATE TABLE shops (name TEXT); INSERT INTO shops VALUES ('a');")
    pytester.makefile(".sqleval.yaml", s="""
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
        """)
    return pytester


@pytest.mark.parametrize("url, expected", [
    ("sqlit:///x.db", "SQLAlchemy knows no database 'sqlit' in 'sqlit:///x.db' (did you mean sqlite://?)"),
    ("postgressql://u:secret@h/db", "SQLAlchemy knows no database 'postgressql' in 'postgressql://u:***@h/db' "
                                    "(did you mean postgresql://?)"),
    ("just words", "'just words' is not a SQLAlchemy URL"),
])
def test_a_url_sqlalchemy_cannot_read_is_a_usage_error(shop, url, expected):
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider", f"--sqleval-database-url={url}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"--sqleval-database-url: {expected}" in err
    assert "secret" not in err


def test_the_ini_option_is_checked_the_same(shop):
    shop.makeini("[pytest]\nsqleval_database_url = duckbd://\n")
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini option sqleval_database_url: SQLAlchemy knows no database 'duckbd'" in result.stderr.str()
    assert "(did you mean duckdb://?)" in result.stderr.str()


@pytest.mark.parametrize("url", ["sqlite://", "mysql+pymysql://u@h/db"])
def test_a_known_dialect_runs_when_no_suite_needs_it(shop, url):
    """No suite has setup scripts: the URL is not used, and a dialect SQLAlchemy knows is no error (its driver,
    pymysql here, need not be installed until a suite uses it)."""
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider", f"--sqleval-database-url={url}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
