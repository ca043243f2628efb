"""Fourth QA look (qa_assert) at issue 13's helpers in ordinary pytest tests, with inputs nobody tuned for
(pytester, plugin installed but not activated with --sqleval)."""

from __future__ import annotations

import textwrap

import pytest


def _run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_app=textwrap.dedent(source))
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_a_fixture_of_the_test_may_write_its_duckdb_file_in_its_teardown(pytester: pytest.Pytester,
                                                                       duckdb_available):
    """A fixture yields a read-write DuckDB engine of the user's own and drops its table in its teardown; the test
    checks a prediction on it with `assert_execution_match(..., engine=...)`. The query process kept its read-only
    handle on the file until after the test's teardown, so the fixture's own teardown failed with DuckDB's
    `Could not set lock on file` (an error at teardown of a passing test). The README promises the handles close at
    the end of the test."""
    result = _run(pytester, """
        import pytest
        import sqlalchemy as sa
        from pytest_sqleval import assert_execution_match

        @pytest.fixture
        def shop(tmp_path):
            engine = sa.create_engine(f"duckdb:///{tmp_path}/shop.duckdb")
            with engine.begin() as conn:
                conn.exec_driver_sql("CREATE TABLE orders (id INTEGER, total DECIMAL(10, 2))")
                conn.exec_driver_sql("INSERT INTO orders VALUES (1, 9.50), (2, NULL)")
            yield engine
            with engine.begin() as conn:  # the user's own clean-up, read-write
                conn.exec_driver_sql("DROP TABLE orders")
            engine.dispose()

        def test_orders(shop):
            assert_execution_match("SELECT id, total FROM orders", "SELECT id, total FROM orders ORDER BY id DESC",
                                   engine=shop)
    """)
    result.assert_outcomes(passed=1)
    assert "Could not set lock" not in result.stdout.str()


def test_a_later_test_may_write_the_duckdb_file_a_helper_read_through_an_engine_of_its_own(
        pytester: pytest.Pytester, duckdb_available):
    """The README: the helpers' read-only handles on a DuckDB file "stay open until the end of the test ..., then
    close: a later test may write the file". With only an engine of the test's own given to the helpers (no
    marker, no sqleval_engine_factory), the plugin never imported its engine factories, and the release at the end
    of the test looked only there: the query process kept the file locked and the next test's write failed."""
    import duckdb

    conn = duckdb.connect(str(pytester.path / "shop.duckdb"))
    conn.execute("CREATE TABLE orders (id INTEGER, placed DATE); INSERT INTO orders VALUES (1, DATE '2024-02-29')")
    conn.close()
    result = _run(pytester, """
        import datetime
        import sqlalchemy as sa
        from pytest_sqleval import assert_execution_match

        def test_check():
            engine = sa.create_engine("duckdb:///shop.duckdb")
            assert_execution_match({"columns": ["placed"], "rows": [[datetime.date(2024, 2, 29)]]},
                                   "SELECT placed FROM orders", engine=engine)
            engine.dispose()

        def test_write_later():
            engine = sa.create_engine("duckdb:///shop.duckdb")
            with engine.begin() as conn:
                conn.exec_driver_sql("INSERT INTO orders VALUES (2, NULL)")
            engine.dispose()
    """)
    result.assert_outcomes(passed=2)


def _wide_select(last: int) -> str:
    return "SELECT " + ", ".join(f"{i} AS c{i}" for i in range(149)) + f", {last} AS c149"


def test_a_wide_miss_says_its_rows_are_cut_to_their_first_columns(pytester: pytest.Pytester):
    """A 150-column result whose rows differ only in column 150: a report keeps the first 100 columns, so the `-v`
    miss showed `gold result: 1 row x 150 columns` over a 100-column table, and two identical `rows only in gold` /
    `rows only in prediction` lines, with nothing saying columns were left out. The header now says
    `(first 100 columns)` and a line under the rows says they are cut; the helper, which shows the engine's whole
    rows when the cut ones look alike, shows the differing value and no such line."""
    pytester.path.joinpath("schema.sql").write_text("CREATE TABLE t (a INTEGER);\n")
    pytester.makefile(".sqleval.yaml", wide=f"""
suite: wide
database: {{url: "sqlite://", setup: [schema.sql]}}
cases:
  - id: wide
    gold: "{_wide_select(149)}"
    predicted: "{_wide_select(-1)}"
""")
    result = _run(pytester, f"""
        from pytest_sqleval import assert_execution_match
        import pytest

        @pytest.mark.sqleval_database("sqlite://", setup=["schema.sql"])
        def test_helper():
            assert_execution_match("{_wide_select(149)}", "{_wide_select(-1)}")
    """, "--sqleval", "-v")
    result.assert_outcomes(failed=1, passed=0)
    text = result.stdout.str()
    # before the short summary, which repeats the helper's whole message when CI is set (pytest truncates it elsewhere)
    body = text.split("short test summary info")[0]
    assert body.count("gold result: 1 row x 150 columns (first 100 columns)") == 2, text
    suite_part = text[text.index("misses:"):]
    assert "(rows above: their first 100 of 150 columns)" in suite_part
    helper_part = text[text.index("test_helper"):text.index("misses:")]
    assert "147, 148, -1)" in helper_part and "rows above:" not in helper_part
