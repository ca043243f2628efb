"""Database files whose names hold URL syntax (``%``, ``?``), and the reading of file URLs without SQLAlchemy.

A database written as a path becomes a ``sqlite:///`` / ``duckdb:///`` URL, which SQLAlchemy's ``make_url``
reads back: ``%41`` would be percent-decoded to ``A`` and ``?`` would start a query string, so a file in
``runs/50%41/`` or ``what?/`` was "not found". The plugin also reads such URLs itself (no SQLAlchemy import
for a run whose databases are files): that reading must be ``make_url``'s.
"""

from __future__ import annotations

import argparse
import importlib
import sqlite3
from pathlib import Path

import pytest

from pytest_sqleval.suite import _file_url_facts, file_url, url_facts

pytest_plugins = ["pytester"]

ODD_FOLDERS = ["v%41x", "q?x", "100%", "a%2Fb", "sp ace#1", "é%20?&="]


def _sqlite_db(path: Path, value: int = 7) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER)")
    conn.execute("INSERT INTO t VALUES (?)", (value,))
    conn.commit()
    conn.close()
    return path


def _passes(pytester: pytest.Pytester, database: str, value: int) -> None:
    """A one-case suite on ``database`` (as written in the suite) whose prediction reads ``value`` from it: passes
    only when the plugin opened that very file."""
    pytester.path.joinpath("odd.sqleval.yaml").write_text(
        f'database: "{database}"\ncases:\n  - id: c\n    gold: SELECT {value}\n    predicted: SELECT a FROM t\n',
        encoding="utf-8")
    pytester.runpytest("--sqleval", "odd.sqleval.yaml", "-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.parametrize("folder", ODD_FOLDERS)
def test_a_database_path_with_url_syntax_opens_the_file_it_names(pytester: pytest.Pytester, folder: str) -> None:
    _sqlite_db(pytester.path / folder / "shop.sqlite", value=7)
    # a decoy where the percent-decoded name would point: it must not be the one opened
    decoded = folder.replace("%41", "A").replace("%2F", "/").split("?")[0]
    if decoded != folder and not (pytester.path / decoded).exists():
        _sqlite_db(pytester.path / decoded / "shop.sqlite", value=99)
    _passes(pytester, f"{folder}/shop.sqlite", 7)


def test_a_percent_encoded_sqlite_url_is_read_as_sqlalchemy_reads_it(pytester: pytest.Pytester) -> None:
    _sqlite_db(pytester.path / "v%41x" / "shop.sqlite", value=5)
    _passes(pytester, "sqlite:///v%2541x/shop.sqlite", 5)


def test_a_duckdb_file_in_a_folder_with_a_percent_sign(pytester: pytest.Pytester, duckdb_available) -> None:
    import duckdb

    folder = pytester.path / "run%41"
    folder.mkdir()
    conn = duckdb.connect(str(folder / "shop.duckdb"))
    conn.execute("CREATE TABLE t (a INTEGER)")
    conn.execute("INSERT INTO t VALUES (3)")
    conn.close()
    _passes(pytester, "run%41/shop.duckdb", 3)


def test_the_engine_factory_of_a_plain_test_opens_an_odd_path(pytester: pytest.Pytester) -> None:
    _sqlite_db(pytester.path / "data%41?" / "shop.sqlite", value=11)
    pytester.makepyfile(test_plain="""
        from sqlalchemy import text

        def test_it(sqleval_engine_factory):
            engine = sqleval_engine_factory("data%41?/shop.sqlite")
            with engine.connect() as conn:
                assert conn.execute(text("SELECT a FROM t")).scalar() == 11
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.parametrize("path", ["/tmp/x.sqlite", "/tmp/50%/a?b.sqlite", "/tmp/%2525/x", "relative/p%41th.db",
                                  "/a b/#c/é.duckdb", "/q?a=1&b=2/x.sqlite"])
@pytest.mark.parametrize("scheme", ["sqlite", "duckdb"])
def test_file_url_round_trips_through_make_url(scheme: str, path: str) -> None:
    from sqlalchemy.engine import make_url

    url = file_url(scheme, path)
    parsed = make_url(url)
    assert parsed.get_backend_name() == scheme
    assert parsed.database == path
    assert not parsed.query
    assert url_facts(url) == (scheme, Path(path))


@pytest.mark.parametrize("url", [
    "sqlite:////tmp/a b/x.sqlite", "sqlite:///rel.db", "sqlite:///", "sqlite:///:memory:", "sqlite://",
    "duckdb:////x/y%20z.duckdb", "sqlite:////tmp/a@b:c/x.db", "sqlite:////tmp/%41#x.db", "duckdb:///:memory:",
    "sqlite:////tmp/x.db?mode=ro", "sqlite+pysqlite:////tmp/x.db", "postgresql://u:p@h:5/db", "postgres://h/db",
    "sqlite:///C:\\data\\x.db", "duckdb:///md:shop", "mysql+pymysql://u@h/db?charset=utf8",
])
def test_the_file_url_shortcut_reads_what_make_url_reads(url: str) -> None:
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    facts = _file_url_facts(url)
    if facts is None:  # not a plain file URL: SQLAlchemy reads it
        assert not (url.partition(":///")[0] in ("sqlite", "duckdb") and "?" not in url)
        return
    database = parsed.database
    assert facts == (parsed.get_backend_name(), None if not database or database == ":memory:" else Path(database))


def test_every_option_names_the_dest_argparse_would_derive() -> None:
    """The options pass ``dest=`` explicitly (pytest 9 scans every option for a duplicate dest otherwise): the
    names the settings read must stay the derived ones."""
    from _pytest.config.argparsing import Parser

    import pytest_sqleval.plugin as plugin

    seen = 0
    for name in ["pytest_sqleval.plugin", *plugin.pytest_plugins]:
        register = getattr(importlib.import_module(name), "pytest_addoption", None)
        if register is None:
            continue
        parser = Parser(_ispytest=True)
        register(parser)
        for group in parser._groups:
            for option in group.options:
                derived = argparse.ArgumentParser().add_argument(*option.names()).dest
                assert option.dest == derived, option.names()
                seen += 1
    assert seen >= 30
