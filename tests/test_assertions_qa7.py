"""Seventh QA look (qa7assert) at issue 13's helpers in ordinary pytest tests, run as an application developer
runs them (pytester, ``runpytest_subprocess``, plugin installed but not activated with --sqleval): wrong argument
types to the public API give a TypeError that names the fix, and a failure's result tables stay aligned on
East Asian (double-width) text."""

from __future__ import annotations

import json
import textwrap

import pytest

SCHEMA = """
CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE tickets (id INTEGER PRIMARY KEY, shop_id INTEGER, tenant_id INTEGER, customer_email TEXT);
INSERT INTO shops VALUES (1, 'Avionics'), (2, 'Engines');
INSERT INTO tickets VALUES (1, 1, 42, 'a@example.com'), (2, 2, 7, 'b@example.com');
"""


def _run(pytester: pytest.Pytester, source: str, *args: str) -> tuple[pytest.RunResult, dict]:
    pytester.makeini("[pytest]\n")
    pytester.path.joinpath("schema.sql").write_text(SCHEMA)
    pytester.makepyfile(test_app=textwrap.dedent(source))
    report = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    return result, json.loads(report.read_text()) if report.exists() else {}


def test_wrong_argument_types_to_check_policy_compare_results_and_soft_f1_name_the_fix(pytester: pytest.Pytester):
    """The exported pure functions met wrong argument types with an AttributeError from deep inside:
    ``check_policy(sql, policy, schema=engine)`` (what ``assert_policy`` takes as ``engine=``) said ``'Engine' object
    has no attribute 'table'``, ``check_policy(123, ...)`` ``object of type 'int' has no len()``,
    ``compare_results(gold, pred, "sqleval", ...)`` ``'str' object has no attribute 'columns'``, and
    ``compare_results``/``soft_f1`` on plain lists of rows ``'list' object has no attribute 'is_empty'``. Each is now a
    TypeError naming what to pass instead; the test records each error's type and message."""
    result, out = _run(pytester, """
        import json, pathlib
        import pytest
        from pytest_sqleval import EXECUTION_PROFILES, QueryResult, check_policy, compare_results, run_query, soft_f1

        pytestmark = pytest.mark.sqleval_database("sqlite://", setup=["schema.sql"])
        SEEN = {}

        def _record(name, call):
            try:
                call()
            except Exception as exc:
                SEEN[name] = [type(exc).__name__, str(exc)]
            else:
                SEEN[name] = ["none", ""]

        def test_calls(sqleval_engine):
            one = QueryResult.of([(1,)])
            _record("policy_engine", lambda: check_policy("SELECT * FROM tickets", {"forbid_columns": ["customer_email"]},
                                                          schema=sqleval_engine))
            with sqleval_engine.connect() as connection:
                _record("policy_connection", lambda: check_policy("SELECT id FROM tickets", {"tables": ["tickets"]},
                                                                  schema=connection))
            _record("policy_pair", lambda: check_policy("SELECT id FROM tickets", {"tables": ["tickets"]},
                                                        schema=("tables.json", "shop")))
            _record("policy_sql_int", lambda: check_policy(123, {"tables": ["tickets"]}))
            _record("policy_sql_bytes", lambda: check_policy(b"SELECT 1", {"tables": ["tickets"]}))
            _record("compare_profile_name", lambda: compare_results(one, one, "sqleval", ordered=False))
            _record("compare_lists", lambda: compare_results([(1,)], [(1,)], EXECUTION_PROFILES["sqleval"],
                                                             ordered=False))
            _record("soft_f1_lists", lambda: soft_f1([(1,)], [(1,)]))
            _record("run_query_url", lambda: run_query("sqlite://", "SELECT 1"))
            _record("run_query_path", lambda: run_query(pathlib.Path("shop.sqlite"), "SELECT 1"))
            # what still works, unchanged
            _record("policy_ok", lambda: check_policy("SELECT id FROM tickets", {"tables": ["tickets"]}))
            _record("policy_none", lambda: check_policy(None, {"tables": ["tickets"]}))
            _record("compare_ok", lambda: compare_results(one, one, EXECUTION_PROFILES["sqleval"], ordered=False))
            _record("soft_f1_ok", lambda: soft_f1(one, QueryResult.of([(1,), (2,)])))
            pathlib.Path("out.json").write_text(json.dumps(SEEN))
    """)
    assert result.ret == 0, result.stdout.str()
    for name in ("policy_engine", "policy_connection", "policy_pair"):
        kind, message = out[name]
        assert kind == "TypeError", (name, out[name])
        assert "Schema" in message and "check_policy_of" in message and "engine=" in message, (name, message)
    for name in ("policy_sql_int", "policy_sql_bytes"):
        kind, message = out[name]
        assert kind == "TypeError" and "SQL text" in message, (name, out[name])
    kind, message = out["compare_profile_name"]
    assert kind == "TypeError" and 'EXECUTION_PROFILES["sqleval"]' in message, out["compare_profile_name"]
    for name in ("compare_lists", "soft_f1_lists"):
        kind, message = out[name]
        assert kind == "TypeError" and "QueryResult.of(rows)" in message, (name, out[name])
    for name in ("run_query_url", "run_query_path"):
        kind, message = out[name]
        assert kind == "TypeError" and "sqleval_engine_factory" in message and "sqlite://" not in message, out[name]
    assert [out[n][0] for n in ("policy_ok", "policy_none", "compare_ok", "soft_f1_ok")] == ["none"] * 4, out


def test_run_query_takes_the_connection_an_overridden_sqleval_engine_gives(pytester: pytest.Pytester):
    """The README lets a plain test's ``sqleval_engine`` override return a SQLAlchemy ``Connection`` ("which stands
    for its engine") and documents ``run_query(engine, sql)`` for ordinary tests; the helpers took that connection,
    but ``run_query(sqleval_engine, sql)`` failed with ``'Connection' object has no attribute 'url'``."""
    result, _ = _run(pytester, """
        import pytest, sqlalchemy
        from pytest_sqleval import QueryError, assert_execution_match, run_query

        @pytest.fixture
        def sqleval_engine(tmp_path):
            engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'app.sqlite'}")
            with engine.begin() as connection:
                connection.exec_driver_sql("CREATE TABLE t (a INTEGER)")
                connection.exec_driver_sql("INSERT INTO t VALUES (1), (2)")
            with engine.connect() as connection:
                yield connection
            engine.dispose()

        def test_query(sqleval_engine):
            assert sorted(run_query(sqleval_engine, "SELECT a FROM t").rows) == [(1,), (2,)]
            with pytest.raises(QueryError) as refused:
                run_query(sqleval_engine, "DELETE FROM t")
            assert refused.value.kind == "rejected"
            assert_execution_match({"columns": ["a"], "rows": [[1], [2]]}, "SELECT a FROM t")
    """)
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1)


def test_result_tables_stay_aligned_on_double_width_text(pytester: pytest.Pytester):
    """A failure's ``gold result``/``predicted result`` tables padded cells by code points, so a column of Japanese
    text (each character two terminal cells wide) pushed the `|` separators out of line with the header:
    ``name    | n`` over ``日本語テキスト | 1``. Cells are now padded to their display width."""
    result, _ = _run(pytester, """
        import pytest
        from pytest_sqleval import assert_execution_match

        pytestmark = pytest.mark.sqleval_database("sqlite://", setup=["schema.sql"])

        def test_names():
            assert_execution_match("SELECT '日本語テキスト' AS name, 1 AS n UNION ALL SELECT 'abc', 22",
                                   "SELECT '日本語' AS name, 1 AS n UNION ALL SELECT 'abc', 22")
    """)
    import unicodedata

    def width(text: str) -> int:
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1
                   for c in text)

    lines = [line.split("E   ", 1)[1] for line in result.stdout.lines if line.startswith("E   ")]
    start = next(i for i, line in enumerate(lines) if "gold result:" in line)
    table = lines[start + 1:start + 4]
    assert [line.split("|")[0].strip() for line in table] == ["name", "日本語テキスト", "abc"], lines
    assert len({width(line.split("|")[0]) for line in table}) == 1, table
    start = next(i for i, line in enumerate(lines) if "predicted result:" in line)
    table = lines[start + 1:start + 4]
    assert [line.split("|")[0].strip() for line in table] == ["name", "日本語", "abc"], lines
    assert len({width(line.split("|")[0]) for line in table}) == 1, table


def test_assert_check_policy_under_plain_asserts_gets_its_verdict_section(pytester: pytest.Pytester):
    """``assert check_execution_match(...)``, ``assert check_policy_of(...)`` and ``assert compare_results(...).match``
    get a ``sqleval verdict`` section under ``--assert=plain`` (their verdict is held by no variable), but
    ``assert check_policy(...)``, the exported policy check, failed with a bare ``AssertionError``: nothing said
    which rule was broken."""
    result, _ = _run(pytester, """
        from pytest_sqleval import check_policy

        def test_policy():
            assert check_policy("SELECT id FROM shops", {"tables": ["tickets"]})
    """, "--assert=plain")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "sqleval verdict" in text, text
    assert "violation: reads table 'shops', which the policy does not allow (allowed: tickets)" in text, text
