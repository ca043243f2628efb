"""Hand-written expected rows against timestamps with a UTC offset: the same instant matches, whatever the
session's time zone and however the offset is written (``+00``, ``Z``, ``+05:30``, a YAML timestamp). Before,
both sides were compared as text: PostgreSQL returns a ``timestamptz`` in the session's time zone
(``2024-01-05 16:00:00+05:30``), so a row written as psql shows it in UTC (``2024-01-05 10:30:00+00``) missed,
and the verdict depended on the server's ``TimeZone``."""

import json
import sqlite3
import uuid

import pytest

from pytest_sqleval.results import QueryResult, with_temporal_text

pytest_plugins = ["pytester"]


@pytest.mark.parametrize("written, returned", [
    ("2024-01-05 10:30:00+00", "2024-01-05 16:00:00+05:30"),
    ("2024-01-05T10:30:00Z", "2024-01-05 10:30:00+00:00"),
    ("2024-01-05 05:30:00-05", "2024-01-05T11:30:00+01:00"),
    ("2024-01-05 10:30:00.250000+00:00", "2024-01-05 11:30:00.25+01"),
])
def test_one_instant_written_two_ways_is_one_text(written, returned):
    assert with_temporal_text(QueryResult.of([[written]])).rows == with_temporal_text(QueryResult.of([[returned]])).rows


@pytest.mark.parametrize("a, b", [
    ("2024-01-05 10:30:00+00", "2024-01-05 10:30:00+01"),   # another instant
    ("2024-01-05 10:30:00+00", "2024-01-05 10:30:00"),      # a naive timestamp is no instant
    ("2024-01-05", "2024-01-05 00:00:00+00"),               # nor a date
])
def test_other_instants_and_naive_timestamps_stay_apart(a, b):
    assert with_temporal_text(QueryResult.of([[a]])).rows != with_temporal_text(QueryResult.of([[b]])).rows


def test_text_that_is_no_timestamp_is_left_as_it_is():
    rows = [("2024-01-05 10:30:00+zz", "flight 2024-01-05 10:30:00+00", "abc", 1, None, b"x")]
    assert with_temporal_text(QueryResult.of(rows)).rows == rows


def test_year_one_with_an_offset_is_left_as_text():
    rows = [("0001-01-01 00:30:00+01:00",)]
    assert with_temporal_text(QueryResult.of(rows)).rows == rows


@pytest.fixture
def kolkata_database(postgres_url):
    """A fresh PostgreSQL database whose sessions run in Asia/Kolkata (UTC+05:30)."""
    import sqlalchemy as sa

    name = f"tz_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
        conn.exec_driver_sql(f"ALTER DATABASE {name} SET timezone = 'Asia/Kolkata'")
    url = sa.engine.make_url(postgres_url).set(database=name)
    yield url.render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE {name} WITH (FORCE)")
    admin.dispose()


def test_timestamptz_in_another_session_time_zone_matches_its_instant(pytester, kolkata_database):
    pytester.makefile(".sqleval.yaml", tz=f"""
database: {{url: "{kolkata_database}"}}
cases:
  - id: psql-form
    expected: {{rows: [["2024-01-05 10:30:00+00"]]}}
    predicted: SELECT TIMESTAMPTZ '2024-01-05 10:30:00+00' AS t
  - id: yaml-timestamp
    expected: {{rows: [[2024-01-05 12:30:00+02:00]]}}
    predicted: SELECT TIMESTAMPTZ '2024-01-05 10:30:00+00' AS t
  - id: another-instant
    expected: {{rows: [["2024-01-05 10:30:00+01"]]}}
    predicted: SELECT TIMESTAMPTZ '2024-01-05 10:30:00+00' AS t
  - id: naive-row
    expected: {{rows: [["2024-01-05 10:30:00"]]}}
    predicted: SELECT TIMESTAMPTZ '2024-01-05 10:30:00+00' AS t
""")
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json")
    cases = {c["id"]: c for c in json.loads((pytester.path / "report.json").read_text())["cases"]}
    assert {k: c["outcome"] for k, c in cases.items()} == {
        "psql-form": "passed", "yaml-timestamp": "passed", "another-instant": "missed", "naive-row": "missed"}, \
        result.stdout.str()


def test_sqlite_text_with_an_offset_matches_the_instant_written_in_utc(pytester):
    with sqlite3.connect(pytester.path / "log.sqlite") as conn:
        conn.execute("CREATE TABLE ev (at TEXT)")
        conn.execute("INSERT INTO ev VALUES ('2024-01-05 12:30:00+02:00')")
    conn.close()
    pytester.makefile(".sqleval.yaml", log="""
database: log.sqlite
cases:
  - {id: utc, expected: {rows: [["2024-01-05T10:30:00Z"]]}, predicted: SELECT at FROM ev}
  - {id: same-text, expected: {rows: [["2024-01-05 12:30:00+02:00"]]}, predicted: SELECT at FROM ev}
  - {id: other, expected: {rows: [["2024-01-05 12:30:00Z"]]}, predicted: SELECT at FROM ev}
""")
    pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "report.json")
    cases = {c["id"]: c["outcome"] for c in json.loads((pytester.path / "report.json").read_text())["cases"]}
    assert cases == {"utc": "passed", "same-text": "passed", "other": "missed"}


def test_assertion_helper_against_expected_rows_on_another_time_zone(kolkata_database):
    import sqlalchemy as sa

    from pytest_sqleval.assertions import check_execution_match

    engine = sa.create_engine(kolkata_database)
    try:
        verdict = check_execution_match({"rows": [["2024-01-05 10:30:00+00"]]},
                                        "SELECT TIMESTAMPTZ '2024-01-05 10:30:00+00'", engine=engine)
        assert verdict.match, verdict
    finally:
        engine.dispose()
