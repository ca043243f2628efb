"""Untrusted predicted SQL, QA round qa9 (issue 7): what a prediction reaches through an allowed function.

- **DuckDB's ``histogram`` table macro read a refused catalogue.** ``histogram`` is on the DuckDB allowlist as the
  aggregate ``histogram(column)``; called as a table, ``FROM histogram(source, column)`` is a table macro that reads
  the relation *named* by its first argument through ``query_table``. The name is a string, never a table of the
  tree, so the catalogue refusal did not see it: ``SELECT bin FROM histogram('pg_catalog.pg_settings', name,
  technique := 'sample')`` listed the settings catalogue that ``SELECT * FROM pg_settings`` is refused for, and so
  did the same call as the source of a top-level ``PIVOT`` or inside a CTE. ``histogram`` called as a table (FROM,
  JOIN, LATERAL, PIVOT's source, any qualifier or quoting) is now refused; the aggregate stays allowed.
- **A JSON value a few hundred levels deep errored its case.** PostgreSQL builds a value of any depth at run time
  (``jsonb_build_array`` in a recursive CTE). The query process read one of 480 levels, but the pytest process
  normalises values recursively (about two frames a level) and met Python's recursion limit: the case was an
  ``error`` (``internal error while scoring (RecursionError ...)``, exit status 1), not a miss. A result value nested
  more than ``MAX_RESULT_DEPTH`` (100) levels is now a ``runtime`` miss from the query process, as one the driver
  cannot read at all already was.
- **A PIVOT, a sample or renamed columns passed exact match.** The ``sqleval`` exact-match profile read a table
  reference by its name alone: ``SELECT name FROM shops PIVOT (count(*) FOR name IN ('a'))``, ``... UNPIVOT (...)``,
  ``FROM shops TABLESAMPLE (1 ROWS)``, ``... USING SAMPLE 1``, ``FROM ONLY shops``, ``FROM shops AS s(id, name)``
  with the columns swapped all matched the gold ``SELECT name FROM shops``, so under ``pass_if: exact_match`` a
  prediction returning other rows passed. What a table reference does beyond naming its table is now part of the
  source compared. The ``spider`` profile matched them too, though the official parser cannot read them: they
  are now ``outside_spider_grammar`` there.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from conftest import SHOP_SQL
from pytest_sqleval.errors import QueryError
from pytest_sqleval.results import QueryResult
from pytest_sqleval.sql.guard import check_prediction

pytest_plugins = ["pytester"]


HISTOGRAM_AS_TABLE = [
    "SELECT bin FROM histogram('pg_catalog.pg_settings', name, technique := 'sample', bin_count := 1000)",
    "SELECT * FROM main.histogram('pg_settings', name)",
    "SELECT * FROM system.main.histogram('duckdb_settings', name)",
    'SELECT * FROM "HISTOGRAM"(\'pg_settings\', name)',
    "SELECT * FROM shops, LATERAL histogram('pg_settings', name)",
    "SELECT * FROM shops JOIN histogram('pg_settings', name) AS h ON true",
    "PIVOT histogram('pg_settings', name, technique := 'sample') ON bin USING count(*)",
    "WITH x AS (FROM histogram('pg_settings', name)) SELECT * FROM x",
    "SELECT * FROM (FROM histogram(shops, name))",
]


@pytest.mark.parametrize("sql", HISTOGRAM_AS_TABLE)
def test_duckdb_histogram_called_as_a_table_is_refused(sql):
    with pytest.raises(QueryError) as caught:
        check_prediction(sql, "duckdb")
    assert caught.value.kind == "rejected"
    assert "histogram() as a table" in str(caught.value)


@pytest.mark.parametrize("sql", [
    "SELECT histogram(name) FROM shops",
    "SELECT histogram(name, ['a', 'b']) FROM shops",
    "PIVOT shops ON name USING count(*)",
    "SELECT * FROM range(3)",
])
def test_the_histogram_aggregate_and_other_table_functions_stay_allowed(sql):
    check_prediction(sql, "duckdb")


HISTOGRAM_SUITE = """\
database: gold.duckdb
cases:
  - id: catalogue-through-histogram
    gold: SELECT name FROM shops
    predicted: SELECT bin FROM histogram('pg_catalog.pg_settings', name, technique := 'sample', bin_count := 1000)
  - id: catalogue-through-pivot
    gold: SELECT name FROM shops
    predicted: PIVOT histogram('pg_settings', name, technique := 'sample') ON bin USING count(*)
  - id: aggregate
    gold: SELECT name FROM shops
    predicted: SELECT histogram(name) FROM shops
  - id: still-fine
    gold: SELECT name FROM shops
    predicted: SELECT name FROM shops
"""


def test_a_prediction_reading_settings_through_histogram_is_rejected_in_a_run(pytester, duckdb_available):
    import duckdb

    gold = pytester.path / "gold.duckdb"
    with duckdb.connect(str(gold)) as con:
        con.execute("CREATE TABLE shops(id INTEGER, name VARCHAR); INSERT INTO shops VALUES (1, 'a'), (2, 'b')")
    before = hashlib.sha256(gold.read_bytes()).hexdigest()
    pytester.makefile(".sqleval.yaml", shop=HISTOGRAM_SUITE)
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "report.json",
                                           "--sqleval-diff", timeout=120)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    cases = {case["id"]: case for case in report["cases"]}
    for name in ("catalogue-through-histogram", "catalogue-through-pivot"):
        assert cases[name]["outcome"] == "missed"
        assert cases[name]["error"]["kind"] == "rejected", cases[name]["error"]
        assert "histogram() as a table" in cases[name]["error"]["message"]
    assert cases["aggregate"]["error"] is None and cases["aggregate"]["outcome"] == "missed"
    assert cases["still-fine"]["outcome"] == "passed"
    # no setting's name reached any output (the catalogue was never read)
    for setting in ("access_mode", "allocator_background_threads", "TimeZone"):
        assert setting not in output
        assert setting not in (pytester.path / "report.json").read_text(encoding="utf-8")
    assert hashlib.sha256(gold.read_bytes()).hexdigest() == before


def _nested(depth: int, leaf=1):
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@pytest.mark.parametrize("max_memory", [None, 2**31])
def test_a_result_nested_deeper_than_the_limit_is_a_runtime_miss_in_the_query_process(max_memory):
    from pytest_sqleval.execution.sandbox_worker import MAX_RESULT_DEPTH, _check_scoring_memory

    _check_scoring_memory(QueryResult(columns=("v",), rows=[(_nested(MAX_RESULT_DEPTH),)]), max_memory)
    with pytest.raises(QueryError) as caught:
        _check_scoring_memory(QueryResult(columns=("v",), rows=[(1,), (_nested(MAX_RESULT_DEPTH + 1),)]), max_memory)
    assert caught.value.kind == "runtime"
    assert f"more than {MAX_RESULT_DEPTH} levels" in str(caught.value)


DEEP_SUITE = """\
database: {{url: "{url}", setup: [shop.sql]}}
timeout: 10
execution: {profile}
cases:
  - id: array-480
    gold: SELECT name FROM shops
    predicted: WITH RECURSIVE r(i, j) AS (SELECT 0, '1'::jsonb UNION ALL SELECT i+1, jsonb_build_array(j) FROM r WHERE i < 480) SELECT j FROM r ORDER BY i DESC LIMIT 1
  - id: object-700
    gold: SELECT name FROM shops
    predicted: WITH RECURSIVE r(i, j) AS (SELECT 0, '1'::jsonb UNION ALL SELECT i+1, jsonb_build_object('k', j) FROM r WHERE i < 700) SELECT j, j FROM r ORDER BY i DESC LIMIT 2
  - id: shallow
    gold: SELECT name FROM shops
    predicted: WITH RECURSIVE r(i, j) AS (SELECT 0, '1'::jsonb UNION ALL SELECT i+1, jsonb_build_array(j) FROM r WHERE i < 50) SELECT j FROM r ORDER BY i DESC LIMIT 1
  - id: still-fine
    gold: SELECT name FROM shops
    predicted: SELECT name FROM shops
"""


@pytest.mark.parametrize("profile", ["sqleval", "test-suite"])
def test_a_deeply_nested_json_prediction_is_a_miss_not_an_error_on_postgresql(pytester, postgres_url, profile):
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    pytester.makefile(".sqleval.yaml", deep=DEEP_SUITE.format(url=postgres_url, profile=profile))
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "report.json",
                                           "--sqleval-diff", timeout=300)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and "RecursionError" not in output
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    cases = {case["id"]: case for case in report["cases"]}
    for name in ("array-480", "object-700"):
        assert cases[name]["outcome"] == "missed", cases[name]["error"]
        assert cases[name]["error"]["kind"] == "runtime"
    assert cases["shallow"]["outcome"] == "missed" and cases["shallow"]["error"] is None
    assert cases["still-fine"]["outcome"] == "passed"
    assert result.ret == 0


EXACT_MATCH_CHANGED_SOURCES = [
    "SELECT name FROM shops PIVOT (count(*) FOR name IN ('a'))",
    "SELECT * FROM shops UNPIVOT (v FOR k IN (id, name))",
    "SELECT name FROM shops TABLESAMPLE (1 ROWS)",
    "SELECT name FROM shops USING SAMPLE 1",
    "SELECT name FROM ONLY shops",
    "SELECT name FROM shops AS s(name, id)",
]


@pytest.mark.parametrize("predicted", EXACT_MATCH_CHANGED_SOURCES)
def test_a_table_reference_that_changes_rows_or_columns_is_no_exact_match(predicted):
    from pytest_sqleval.metrics.exact_match import exact_match
    from pytest_sqleval.schema import Schema

    schema = Schema.from_dict({"shops": ["id", "name"]})
    gold = "SELECT * FROM shops" if predicted.startswith("SELECT *") else "SELECT name FROM shops"
    assert not exact_match(gold, predicted, schema, profile="sqleval", dialect="duckdb").match
    assert exact_match(gold, gold, schema, profile="sqleval", dialect="duckdb").match
    assert exact_match("SELECT name FROM shops", "SELECT name FROM shops AS s(id, name)", schema,
                       profile="sqleval", dialect="duckdb").match  # the same names: the same source
    spider = exact_match(gold, predicted, schema, profile="spider", dialect="duckdb")
    assert not spider.match and "outside_spider_grammar" in spider.reason


EXACT_PIVOT_SUITE = """\
database: gold.duckdb
exact_match: sqleval
pass_if: exact_match
cases:
  - id: pivot
    gold: SELECT name FROM shops
    predicted: SELECT name FROM shops PIVOT (count(*) FOR name IN ('a'))
  - id: swapped
    gold: SELECT name FROM shops
    predicted: SELECT name FROM shops AS s(name, id)
  - id: same
    gold: SELECT name FROM shops
    predicted: SELECT name FROM shops
"""


def test_a_pivoted_prediction_does_not_pass_on_exact_match_in_a_run(pytester, duckdb_available):
    import duckdb

    with duckdb.connect(str(pytester.path / "gold.duckdb")) as con:
        con.execute("CREATE TABLE shops(id INTEGER, name VARCHAR); INSERT INTO shops VALUES (1, 'a'), (2, 'b')")
    pytester.makefile(".sqleval.yaml", shop=EXACT_PIVOT_SUITE)
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "report.json",
                                           timeout=120)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    cases = {case["id"]: case for case in report["cases"]}
    assert cases["pivot"]["exact_match"] is False and cases["pivot"]["outcome"] == "missed"
    assert cases["swapped"]["exact_match"] is False and cases["swapped"]["outcome"] == "missed"
    assert cases["same"]["outcome"] == "passed"
