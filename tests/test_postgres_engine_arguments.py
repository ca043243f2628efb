"""A PostgreSQL engine the application built with ``connect_args=`` or ``creator=``: its queries run where the
application's own queries run.

The query process reopens a user's engine from a target. It was the engine's URL alone, so
``create_engine(url, connect_args={"options": "-csearch_path=app"})`` ran the helpers' queries on ``public``: a
gold that the application runs fine failed as "relation does not exist ... fix the gold", or read another table of
the same name. The target now carries the parameters the engine's connections really use.
"""

from __future__ import annotations

import contextlib
import textwrap

import pytest

from test_assertions_fourth_look import _own_postgres_database

pytest_plugins = ["pytester"]


@contextlib.contextmanager
def _database_with_two_schemas(server_url: str):
    """A database of this test's own: ``public.items`` holds 1, 2; ``app.items`` holds 10, 20, 30."""
    import sqlalchemy as sa

    with _own_postgres_database(server_url, "qa_engine_args") as url:
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE public.items (n INTEGER)")
            conn.exec_driver_sql("INSERT INTO public.items VALUES (1), (2)")
            conn.exec_driver_sql("CREATE SCHEMA app")
            conn.exec_driver_sql("CREATE TABLE app.items (n INTEGER)")
            conn.exec_driver_sql("CREATE TABLE app.only_here (n INTEGER)")
            conn.exec_driver_sql("INSERT INTO app.items VALUES (10), (20), (30)")
        engine.dispose()
        yield url


_TESTS = """
    import psycopg
    import pytest
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url
    from pytest_sqleval import assert_execution_match, check_execution_match

    URL = {url!r}

    def _creator():
        url = make_url(URL)
        return psycopg.connect(host=url.host, port=url.port, user=url.username, password=url.password or "",
                               dbname=url.database, options="-csearch_path=app")

    @pytest.fixture(params=["connect_args", "creator"])
    def app_engine(request):
        if request.param == "connect_args":
            engine = sa.create_engine(URL, connect_args={{"options": "-csearch_path=app"}})
        else:
            engine = sa.create_engine("postgresql+psycopg://", creator=_creator)
        yield engine
        engine.dispose()

    def test_the_application_itself_reads_app(app_engine):
        with app_engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM items").scalar() == 3

    def test_helpers_read_the_same_schema(app_engine):
        assert_execution_match("SELECT n FROM items", "SELECT n FROM items ORDER BY n DESC", engine=app_engine)
        assert_execution_match("SELECT count(*) FROM only_here", "SELECT 0", engine=app_engine)
        check = check_execution_match("SELECT n FROM items", "SELECT n FROM public.items", engine=app_engine)
        assert not check.passed
        assert check.error is None
"""


def test_a_postgres_engine_with_connect_args_or_a_creator_runs_the_helpers_on_its_own_schema(
        pytester: pytest.Pytester, postgres_url: str) -> None:
    with _database_with_two_schemas(postgres_url) as url:
        pytester.makepyfile(test_app=textwrap.dedent(_TESTS.format(url=url)))
        result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def test_the_target_of_an_engine_with_connect_args_keeps_them_and_its_password(postgres_url: str) -> None:
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    from pytest_sqleval.execution.backends.postgresql import url_with_connection_parameters

    engine = sa.create_engine(postgres_url, connect_args={"options": "-csearch_path=app",
                                                          "application_name": "qa-app"})
    try:
        url = make_url(url_with_connection_parameters(engine))
    finally:
        engine.dispose()
    given = make_url(postgres_url)
    assert url.query["options"] == "-csearch_path=app"
    assert url.query["application_name"] == "qa-app"
    assert (url.host, url.port, url.database, url.username) == (given.host, given.port, given.database,
                                                                 given.username)
    assert url.password == given.password


def test_an_engine_that_cannot_connect_keeps_its_url(postgres_url: str) -> None:
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    from pytest_sqleval.execution.backends.postgresql import url_with_connection_parameters

    given = make_url(postgres_url).set(port=1, database="nowhere")
    engine = sa.create_engine(given, connect_args={"connect_timeout": 2})
    try:
        assert make_url(url_with_connection_parameters(engine)) == given
    finally:
        engine.dispose()
