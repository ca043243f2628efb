"""Engine values and comparison profiles, QA round 6 (issues 4 and 12): DuckDB/PostgreSQL values the profiles
compare, and how a miss on them is shown.

1. A miss whose rows print alike even with their types: under ``numbers: python`` (``test-suite``, ``bird``,
   ``logiccat``) a NaN equals no NaN, and under ``nulls: distinct`` a NULL equals no NULL, so the same query run
   twice can miss. The diff showed ``rows only in gold: (Decimal('NaN'))`` and ``rows only in prediction:
   (Decimal('NaN'))`` with nothing saying why; the miss's detail now names the rule.
2. A PostgreSQL database (or role, or server) whose ``IntervalStyle`` is ``iso_8601``, ``sql_standard`` or
   ``postgres_verbose``: psycopg reads intervals only in the default ``postgres`` style, so every gold returning
   an interval was an error of the suite (``runtime: NotImplementedError: can't parse interval with IntervalStyle
   'iso_8601': 'P1DT2H'``) and every such prediction a miss. The same for a timestamptz under a ``DateStyle`` other
   than ``ISO`` (``SQL, DMY``, ``German``, ``Postgres, MDY``). Such a result is now fetched again in styles psycopg
   reads (the day/month order that reads date literals unchanged).
3. The typed rows of a miss (shown when the JSON rows print alike) showed the comparison's internal forms of a
   DuckDB STRUCT/MAP or a PostgreSQL JSON object (``frozenset({('a', 1)})``) and of a LIST or array (``(1, 2)``,
   which reads as a row), values no engine returned; they now show ``{'a': 1}`` and ``[1, 2]``, as the JSON rows
   and the result tables do, beside the text ``'{'a': 1}'`` they differ from.
"""

from __future__ import annotations

import json

import pytest


def _suite(database: str, cases: list[tuple[str, str, str]], *, execution: str) -> str:
    lines = ["suite: s", f"database: {database}", f"execution: {execution}", "cases:"]
    for case_id, gold, predicted in cases:
        lines += [f"  - id: {case_id}", f"    gold: {json.dumps(gold)}", f"    predicted: {json.dumps(predicted)}"]
    return "\n".join(lines) + "\n"


def _database(request: pytest.FixtureRequest, pytester: pytest.Pytester, engine: str) -> str:
    if engine == "duckdb":
        request.getfixturevalue("duckdb_available")
        pytester.path.joinpath("one.sql").write_text("CREATE TABLE one (i INTEGER);\n", encoding="utf-8")
        return '{url: "duckdb://", setup: [one.sql]}'
    return json.dumps(request.getfixturevalue("postgres_url"))


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, dict]]:
    result = pytester.runpytest("--sqleval", "s.sqleval.yaml", "--sqleval-json", "report.json", "-p",
                                "no:cacheprovider", *args)
    report = json.loads(pytester.path.joinpath("report.json").read_text(encoding="utf-8"))
    return result, {case["id"]: case for case in report["cases"]}


NAN = {"duckdb": "'nan'::DOUBLE", "postgres": "'NaN'::numeric"}


# ----------------------------------------------------------------------------- 1. rows that print alike, typed too
@pytest.mark.parametrize("engine", ["duckdb", "postgres"])
@pytest.mark.parametrize("profile", ["test-suite", "bird", "logiccat"])
def test_a_nan_miss_under_python_numbers_says_nan_equals_no_nan(pytester, request, engine, profile):
    database = _database(request, pytester, engine)
    nan = NAN[engine]
    pytester.path.joinpath("s.sqleval.yaml").write_text(_suite(database, [
        ("same-nan", f"SELECT {nan} AS v", f"SELECT {nan} AS v"),
        ("nan-in-row", f"SELECT 1 AS k, {nan} AS v", f"SELECT 1 AS k, {nan} AS v"),
    ], execution=profile), encoding="utf-8")
    result, cases = _run(pytester, "-v")
    for case_id in ("same-nan", "nan-in-row"):
        mismatch = cases[case_id]["mismatch"]
        assert cases[case_id]["execution_match"] is False  # Python's ==, as the profile's official script compares
        assert mismatch["reason"] == "values"
        assert "NaN equals no NaN under numbers: python" in mismatch["detail"], mismatch
    out = result.stdout.str()
    assert "same-nan: values: 1 gold row is missing from the prediction, 1 predicted row is not in the gold (NaN " \
           "equals no NaN under numbers: python)" in out


@pytest.mark.parametrize("engine", ["duckdb", "postgres"])
def test_a_nan_miss_under_value_numbers_has_no_such_note(pytester, request, engine):
    """``numbers: value`` (the sqleval profiles): NaN equals NaN, so a miss beside a NaN is about another value."""
    database = _database(request, pytester, engine)
    nan = NAN[engine]
    pytester.path.joinpath("s.sqleval.yaml").write_text(_suite(database, [
        ("same-nan", f"SELECT {nan} AS v", f"SELECT {nan} AS v"),
        ("other-value", f"SELECT 1 AS k, {nan} AS v", f"SELECT 2 AS k, {nan} AS v"),
    ], execution="sqleval"), encoding="utf-8")
    _, cases = _run(pytester)
    assert cases["same-nan"]["execution_match"] is True
    assert cases["other-value"]["execution_match"] is False
    assert "NaN" not in cases["other-value"]["mismatch"]["detail"]


def test_a_null_miss_under_distinct_nulls_says_null_equals_no_null(pytester, request):
    database = _database(request, pytester, "duckdb")
    pytester.path.joinpath("s.sqleval.yaml").write_text(_suite(database, [
        ("same-null", "SELECT NULL AS v", "SELECT NULL AS v"),
        ("other-value", "SELECT 1 AS k, NULL AS v", "SELECT 2 AS k, 3 AS v"),
    ], execution="{profile: sqleval, nulls: distinct}"), encoding="utf-8")
    _, cases = _run(pytester)
    assert "NULL equals no NULL under nulls: distinct" in cases["same-null"]["mismatch"]["detail"]
    assert "NULL" not in cases["other-value"]["mismatch"]["detail"]  # the prediction has no NULL: no such note


# ----------------------------------------------------------------------------- 2. PostgreSQL's IntervalStyle
@pytest.mark.parametrize("style", ["iso_8601", "sql_standard", "postgres_verbose"])
def test_intervals_are_read_whatever_the_databases_interval_style(pytester, postgres_url, style):
    pytester.path.joinpath("t.sql").write_text(f"""
        CREATE TABLE t (id INTEGER, d DATE, iv INTERVAL);
        INSERT INTO t VALUES (1, 'infinity', '1 day 2 hours'), (2, '2024-01-02', '-1 mon +3 days -00:00:01.5'),
                             (3, '2024-01-03', NULL);
        DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET IntervalStyle = ''{style}''', current_database()); END $$;
    """, encoding="utf-8")
    pytester.path.joinpath("s.sqleval.yaml").write_text(_suite(
        json.dumps({"url": postgres_url, "setup": ["t.sql"]}), [
            ("same", "SELECT iv FROM t", "SELECT iv FROM t"),
            ("spelled-otherwise", "SELECT iv FROM t WHERE id = 1", "SELECT interval '26 hours'"),
            ("wrong", "SELECT iv FROM t WHERE id = 1", "SELECT interval '25 hours'"),
            ("array", "SELECT ARRAY[iv] FROM t", "SELECT ARRAY[iv] FROM t"),
            ("with-infinity", "SELECT d, iv FROM t", "SELECT d, iv FROM t ORDER BY id DESC"),
            ("text", "SELECT iv::text FROM t WHERE id = 1", "SELECT CAST(iv AS TEXT) FROM t WHERE id = 1"),
        ], execution="sqleval"), encoding="utf-8")
    _, cases = _run(pytester)
    assert {case_id: (case["outcome"], case.get("error")) for case_id, case in cases.items()} == {
        "same": ("passed", None), "spelled-otherwise": ("passed", None), "wrong": ("missed", None),
        "array": ("passed", None), "with-infinity": ("passed", None), "text": ("passed", None)}
    assert cases["wrong"]["mismatch"]["gold_only_rows"] == [["1 day, 2:00:00"]]


@pytest.mark.parametrize("style", ["SQL, DMY", "German", "Postgres, MDY"])
def test_timestamptz_values_are_read_whatever_the_databases_date_style(pytester, postgres_url, style):
    quoted = style.replace("'", "''")
    pytester.path.joinpath("t.sql").write_text(f"""
        CREATE TABLE t (id INTEGER, at TIMESTAMPTZ, d DATE);
        INSERT INTO t VALUES (1, '2024-01-05 10:00:00+00', '2024-01-05'), (2, 'infinity', '2024-02-03');
        DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET DateStyle = ''{quoted}''', current_database()); END $$;
    """, encoding="utf-8")
    day_first = "DMY" in style or style == "German"  # the database's order still reads a literal: 03/02 is 3 Feb
    pytester.path.joinpath("s.sqleval.yaml").write_text(_suite(
        json.dumps({"url": postgres_url, "setup": ["t.sql"]}), [
            ("same", "SELECT at, d FROM t", "SELECT at, d FROM t"),
            ("other-zone", "SELECT at FROM t WHERE id = 1", "SELECT TIMESTAMPTZ '2024-01-05 11:00:00+01'"),
            ("wrong", "SELECT at FROM t WHERE id = 1", "SELECT TIMESTAMPTZ '2024-01-05 11:00:00+00'"),
            ("literal", "SELECT id, at FROM t WHERE d = '2024-02-03'",
             "SELECT id, at FROM t WHERE d = " + ("'03/02/2024'" if day_first else "'02/03/2024'")),
        ], execution="sqleval"), encoding="utf-8")
    _, cases = _run(pytester)
    assert {case_id: (case["outcome"], case.get("error")) for case_id, case in cases.items()} == {
        "same": ("passed", None), "other-zone": ("passed", None), "wrong": ("missed", None),
        "literal": ("passed", None)}


# ----------------------------------------------------------------------------- 3. typed rows of containers
@pytest.mark.parametrize("engine", ["duckdb", "postgres"])
def test_typed_rows_show_a_struct_or_list_as_the_engine_returned_it(pytester, request, engine):
    database = _database(request, pytester, engine)
    struct, array, nested = {
        "duckdb": ("{'a': 1}", "[1, 2]", "MAP {'k': [1, NULL]}"),
        "postgres": ("'{\"a\": 1}'::jsonb", "ARRAY[1, 2]", "'{\"k\": [1, null]}'::jsonb"),
    }[engine]
    pytester.path.joinpath("s.sqleval.yaml").write_text(_suite(database, [
        ("struct", f"SELECT {struct} AS v", "SELECT '{''a'': 1}' AS v"),
        ("list", f"SELECT {array} AS v", "SELECT '[1, 2]' AS v"),
        ("nested", f"SELECT {nested} AS v", "SELECT '{''k'': [1, None]}' AS v"),
    ], execution="sqleval"), encoding="utf-8")
    result, cases = _run(pytester, "-v")
    typed = {case_id: (case["mismatch"]["gold_only_typed"], case["mismatch"]["predicted_only_typed"])
             for case_id, case in cases.items()}
    assert typed == {
        "struct": ([["{'a': 1}"]], [['"{\'a\': 1}"']]),
        "list": ([["[1, 2]"]], [["'[1, 2]'"]]),
        "nested": ([["{'k': [1, None]}"]], [['"{\'k\': [1, None]}"']]),
    }
    out = result.stdout.str()
    assert "rows only in gold:       ({'a': 1})" in out
    assert "rows only in gold:       ([1, 2])" in out
    assert "frozenset" not in out
