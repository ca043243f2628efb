"""Shared test fixtures: small real SQLite databases and suite-writing helpers."""

from __future__ import annotations

import os
import sqlite3
import textwrap
from pathlib import Path

import pytest
import yaml  # noqa: F401 - imported before any in-process pytester run: its C loader cannot be re-imported

# Native extensions cannot be imported twice in one process, and pytester's in-process runs forget the
# modules first imported inside them: import the drivers here, once, before any such run.
for _driver in ("duckdb", "duckdb_engine", "psycopg", "numpy"):
    try:
        __import__(_driver)
    except ImportError:
        pass

pytest_plugins = ["pytester"]

SHOP_SQL = """
CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE tickets (
    id INTEGER PRIMARY KEY,
    shop_id INTEGER REFERENCES shops(id),
    aircraft TEXT,
    hours REAL,
    status TEXT
);
INSERT INTO shops VALUES (1, 'Avionics'), (2, 'Engines'), (3, 'Cabin');
INSERT INTO tickets VALUES
    (1, 1, '9V-SMA', 2.5, 'open'),
    (2, 1, '9V-SMB', 4.0, 'closed'),
    (3, 2, '9V-SMA', 8.0, 'closed'),
    (4, 1, '9V-SMC', 1.5, 'open'),
    (5, 2, '9V-SMB', 3.0, 'open'),
    (6, 3, '9V-SMA', 3.0, 'closed');
"""


def make_sqlite(path: Path, script: str = SHOP_SQL) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def shop_db(tmp_path: Path) -> Path:
    """A small tickets/shops SQLite file."""
    return make_sqlite(tmp_path / "shop.sqlite")


@pytest.fixture
def write_suite(tmp_path: Path):
    """Write a suite file (dedented YAML) next to the test databases; returns its path."""

    def write(text: str, name: str = "suite.sqleval.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="session")
def postgres_url():
    """A SQLAlchemy URL of a superuser on a real PostgreSQL server (skips when none can be had)."""
    from pgserver import Unavailable, server_url

    try:
        url, server = server_url()
    except Unavailable as exc:
        missing_dependency(f"PostgreSQL not available: {exc}")
    yield url
    if server is not None:
        server.stop()


@pytest.fixture(scope="session")
def duckdb_available():
    for module in ("duckdb", "duckdb_engine"):
        require_module(module, "the duckdb extra is not installed: pip install 'pytest-sqleval[duckdb]'")


def missing_dependency(reason: str) -> None:
    """Skip locally; under CI (CI=true) a missing engine, driver or browser fails the run instead of hiding
    its tests. Usable at module level too."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} (CI must provide everything the tests need)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def chromium_executable() -> str:
    """Debian's chromium for the HTML tests (skipped locally, failed under CI when it is missing)."""
    import shutil

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        missing_dependency("Debian's chromium is not installed (apt-get install -y chromium; .ci/run installs it)")
    return exe


def require_module(module: str, reason: str | None = None):
    """``pytest.importorskip`` that fails under CI instead of skipping."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        missing_dependency(reason or f"{module} is not installed: pip install -e '.[test]'")
