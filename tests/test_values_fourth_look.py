"""Values and assertions, fourth look: typed diffs, exact decimal tie groups, one normalisation, table functions.

1. A DECIMAL ``0.1`` and a float ``0.1`` are both the JSON number 0.1 in a report: the suite's diff (terminal,
   JUnit/strict failure, HTML) shows each value with its type, from ``gold_only_typed`` / ``predicted_only_typed``
   beside the unchanged ``gold_only_rows`` / ``predicted_only_rows``.
2. Tie groups of a gold ordered by a DECIMAL key compare the keys exactly (``0.10000000000000000001`` is not
   ``0.1``; ``12345678901234567.1`` is not ``...567.2``), as two decimals compare under ``numbers: value``.
3. ``normalised_pair`` normalises a Decimal result twice; the second pass starts again from the raw rows, so it
   gives what one pass in the final mode gives. Two decimals inside arrays now compare exactly too.
4. A ``tables`` policy judges table functions in FROM: ``pragma_table_info('t')`` reads the schema.
"""

from __future__ import annotations

import json
import random
import sqlite3
from decimal import Decimal

import pytest

from pytest_sqleval.metrics.normalisation import DistinctNull, numbers_for
from pytest_sqleval.metrics.normalised_table import Table, normalised_pair
from pytest_sqleval.metrics.tie_groups import tie_group_starts
from pytest_sqleval.policy import check_policy


def _write(pytester: pytest.Pytester, name: str, text: str) -> None:
    pytester.path.joinpath(name).write_text(text, encoding="utf-8")


def _suite(database: str, cases: list[tuple[str, str, str]], *, execution: str = "sqleval", extra: str = "") -> str:
    lines = ["suite: s", f"database: {json.dumps(database)}", f"execution: {execution}", *extra.splitlines(), "cases:"]
    for case_id, gold, predicted in cases:
        lines += [f"  - id: {case_id}", f"    gold: {json.dumps(gold)}", f"    predicted: {json.dumps(predicted)}"]
    return "\n".join(lines) + "\n"


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    result = pytester.runpytest("--sqleval", "s.sqleval.yaml", "--sqleval-json", "report.json", "-p",
                                "no:cacheprovider", *args)
    return result, json.loads(pytester.path.joinpath("report.json").read_text(encoding="utf-8"))


def _cases(report: dict) -> dict[str, dict]:
    return {case["id"]: case for case in report["cases"]}


# ----------------------------------------------------------------------------- 1. typed diff in suites
def test_postgres_decimal_against_float_shows_the_types_in_terminal_strict_failure_and_html(
        pytester: pytest.Pytester, postgres_url: str) -> None:
    _write(pytester, "s.sqleval.yaml", _suite(postgres_url, [
        ("dec-vs-float", "SELECT 0.1::numeric AS v", "SELECT 0.1::float8 AS v"),
        ("plain-miss", "SELECT 1 AS v", "SELECT 2 AS v"),
    ], execution="bird"))  # bird: numbers python, Decimal('0.1') != 0.1
    result, report = _run(pytester, "-v", "--sqleval-strict", "--sqleval-html", "report.html")
    out = result.stdout.str()
    assert "rows only in gold:       (Decimal('0.1'))" in out
    assert "rows only in prediction: (0.1)" in out
    assert "rows only in gold:       (0.1)" not in out
    failure = out[out.index("_ sqleval: dec-vs-float _"):out.index("_ sqleval: plain-miss _")]  # repr_failure
    assert "rows only in gold:       (Decimal('0.1'))" in failure and "rows only in prediction: (0.1)" in failure
    mismatch = _cases(report)["dec-vs-float"]["mismatch"]
    assert mismatch["gold_only_rows"] == [[0.1]] and mismatch["predicted_only_rows"] == [[0.1]]  # keys unchanged
    assert mismatch["gold_only_typed"] == [["Decimal('0.1')"]]
    assert mismatch["predicted_only_typed"] == [["0.1"]]
    plain = _cases(report)["plain-miss"]["mismatch"]
    assert "gold_only_typed" not in plain and plain["gold_only_rows"] == [[1]]  # only when the rows print alike
    html = pytester.path.joinpath("report.html").read_text(encoding="utf-8")
    assert "<code>(Decimal(&#39;0.1&#39;))</code>" in html


def test_duckdb_decimal_against_double_and_long_decimals_show_their_digits(
        pytester: pytest.Pytester, duckdb_available) -> None:
    import duckdb

    duckdb.connect(str(pytester.path / "n.duckdb")).close()
    _write(pytester, "s.sqleval.yaml", _suite("n.duckdb", [
        ("decimal-vs-double", "SELECT 0.1::DECIMAL(18,1) AS v", "SELECT 0.1::DOUBLE AS v"),
        ("two-long-decimals", "SELECT 0.10000000000000000001::DECIMAL(38,20) AS v",
         "SELECT 0.10000000000000000002::DECIMAL(38,20) AS v"),
    ], execution="{profile: sqleval, numbers: python}"))
    result, report = _run(pytester, "-v")
    out = result.stdout.str()
    assert "rows only in gold:       (Decimal('0.1'))" in out
    # a JSON float keeps 17 digits: the typed cell keeps the decimal's own (not cut at the 24-character cell)
    assert "rows only in gold:       (Decimal('0.10000000000000000001'))" in out
    assert "rows only in prediction: (Decimal('0.10000000000000000002'))" in out
    cases = _cases(report)
    assert cases["two-long-decimals"]["mismatch"]["gold_only_rows"] == [[0.1]]
    assert cases["decimal-vs-double"]["mismatch"]["predicted_only_typed"] == [["0.1"]]


def test_sqlite_blob_against_its_text_shows_bytes_and_text(pytester: pytest.Pytester) -> None:
    conn = sqlite3.connect(pytester.path / "b.sqlite")
    conn.execute("CREATE TABLE t (b BLOB)")
    conn.execute("INSERT INTO t VALUES (x'01')")
    conn.commit()
    conn.close()
    _write(pytester, "s.sqleval.yaml", _suite("b.sqlite", [("blob-vs-text", "SELECT b FROM t", "SELECT 'x''01''' AS b")]))
    result, report = _run(pytester, "-v")
    out = result.stdout.str()
    assert "rows only in gold:       (b'\\x01')" in out  # the JSON text "x'01'" on both sides before
    assert "rows only in prediction: (\"x'01'\")" in out
    mismatch = _cases(report)["blob-vs-text"]["mismatch"]
    assert mismatch["gold_only_rows"] == mismatch["predicted_only_rows"] == [["x'01'"]]


# ----------------------------------------------------------------------------- 2. exact tie groups
def test_tie_groups_of_decimal_keys_are_exact() -> None:
    assert tie_group_starts([(Decimal("0.1"),), (Decimal("0.10000000000000000001"),)], [0]) == [0, 1]
    assert tie_group_starts([(Decimal("12345678901234567.1"),), (Decimal("12345678901234567.2"),)], [0]) == [0, 1]
    assert tie_group_starts([(Decimal("7.50"), 1), (Decimal("7.5"), 1), (Decimal("8"), 1)], [0, 1]) == [0, 2]
    assert tie_group_starts([([Decimal("0.1")],), ([Decimal("0.10000000000000000001")],)], [0]) == [0, 1]
    # a decimal beside a float in one key column compares at a float's precision (numbers: value)
    assert tie_group_starts([(Decimal("0.10000000000000000001"),), (0.1,)], [0]) == [0]
    assert tie_group_starts([(Decimal("NaN"),), (Decimal("NaN"),), (None,), (None,)], [0]) == [0, 2]


TIE_ROWS = ("(VALUES (1, CAST(0.1 AS {t})), (2, CAST(0.10000000000000000001 AS {t})), "
            "(3, CAST(12345678901234567.1 AS {t})), (4, CAST(12345678901234567.2 AS {t})), "
            "(5, CAST(20 AS {t})), (6, CAST(20.000 AS {t}))) AS t(id, d)")


def _tie_cases(decimal_type: str) -> list[tuple[str, str, str]]:
    rows = TIE_ROWS.format(t=decimal_type)
    swapped = "ORDER BY trunc(d), id DESC"  # swaps 1/2 and 3/4, which differ only beyond a float's precision
    return [
        ("hidden-key", f"SELECT id FROM {rows} ORDER BY d", f"SELECT id FROM {rows} {swapped}"),
        ("shown-key", f"SELECT id, d FROM {rows} ORDER BY d", f"SELECT id, d FROM {rows} {swapped}"),
        ("true-tie", f"SELECT id FROM {rows} WHERE id >= 5 ORDER BY d", f"SELECT id FROM {rows} WHERE id >= 5 "
                                                                          "ORDER BY d, id DESC"),
        ("in-order", f"SELECT id FROM {rows} ORDER BY d", f"SELECT id FROM {rows} ORDER BY d, id"),
    ]


@pytest.mark.parametrize("engine", ["postgres", "duckdb"])
def test_rows_ordered_by_decimals_that_differ_beyond_float_precision_are_no_tie(
        pytester: pytest.Pytester, request: pytest.FixtureRequest, engine: str) -> None:
    if engine == "postgres":
        database, decimal_type = request.getfixturevalue("postgres_url"), "numeric"
    else:
        request.getfixturevalue("duckdb_available")
        import duckdb

        duckdb.connect(str(pytester.path / "t.duckdb")).close()
        database, decimal_type = "t.duckdb", "DECIMAL(38,20)"
    _write(pytester, "s.sqleval.yaml", _suite(database, _tie_cases(decimal_type)))
    result, report = _run(pytester)
    verdicts = {case_id: case["execution_match"] for case_id, case in _cases(report).items()}
    assert verdicts == {"hidden-key": False, "shown-key": False, "true-tie": True, "in-order": True}, \
        result.stdout.str()


# ----------------------------------------------------------------------------- 3. one normalisation
_VALUES = [Decimal("0.1"), Decimal("0.10000000000000000001"), 0.1, Decimal("2.00"), 2, Decimal("NaN"),
           float("nan"), None, "x", Decimal("0.125"), 0.125, 0.13, Decimal("12345678901234567.1"),
           Decimal("12345678901234567.2"), [Decimal("0.1")], (0.1,), True, Decimal("Infinity"), float("inf")]


def _canonical(table: Table) -> list[tuple]:
    def cell(value):
        if isinstance(value, DistinctNull):
            return "distinct NULL"
        if isinstance(value, float) and value != value:
            return "NaN"
        return (type(value).__name__, value)

    return [tuple(map(cell, row)) for row in table.rows]


def test_normalising_twice_gives_what_one_pass_in_the_final_mode_gives() -> None:
    """The second pass of normalised_pair starts from the raw rows (never from the first pass's output) and only
    runs without float_decimals: rounding is never applied twice. Checked on 5,000 random pairs of every option."""
    rng = random.Random(4)
    for _ in range(5000):
        width = rng.randint(1, 3)
        gold = [tuple(rng.choice(_VALUES) for _ in range(width)) for _ in range(rng.randint(1, 3))]
        pred = [tuple(rng.choice(_VALUES) for _ in range(width)) for _ in range(rng.randint(1, 3))]
        options = {"float_decimals": rng.choice([None, None, 0, 2]), "nulls": rng.choice(["equal", "distinct"])}
        numbers = rng.choice(["value", "python"])
        pair = normalised_pair(gold, width, pred, width, numbers=numbers, **options)
        mode = numbers_for(numbers, options["float_decimals"], gold, pred)
        once = (Table(gold, width, numbers=mode, **options), Table(pred, width, numbers=mode, **options))
        assert list(map(_canonical, pair)) == list(map(_canonical, once)), (gold, pred, options, numbers)


def test_rounding_is_applied_once() -> None:
    gold, pred = [(Decimal("0.125"),)], [(0.13,)]
    gold_table, pred_table = normalised_pair(gold, 1, pred, 1, float_decimals=2)
    assert gold_table.rows == [(0.12,)] and pred_table.rows == [(0.13,)]  # round(0.125, 2) once: 0.12, not 0.1


def test_postgres_arrays_of_numerics_compare_exactly_unless_beside_a_float(
        pytester: pytest.Pytester, postgres_url: str) -> None:
    _write(pytester, "s.sqleval.yaml", _suite(postgres_url, [
        ("top-level", "SELECT 0.1::numeric AS v", "SELECT 0.10000000000000000001::numeric AS v"),
        ("in-arrays", "SELECT ARRAY[0.1::numeric] AS v", "SELECT ARRAY[0.10000000000000000001::numeric] AS v"),
        ("array-beside-float", "SELECT ARRAY[0.1::numeric] AS v", "SELECT ARRAY[0.1::float8] AS v"),
    ]))
    result, report = _run(pytester)
    verdicts = {case_id: case["execution_match"] for case_id, case in _cases(report).items()}
    assert verdicts == {"top-level": False, "in-arrays": False, "array-beside-float": True}, result.stdout.str()


# ----------------------------------------------------------------------------- 4. table functions and `tables`
@pytest.mark.parametrize(("dialect", "sql", "function", "passes"), [
    ("sqlite", "SELECT name FROM pragma_table_info('t')", "pragma_table_info", False),
    ("sqlite", "SELECT t.id FROM t, pragma_table_info('u') AS p", "pragma_table_info", False),
    ("sqlite", "SELECT (SELECT count(*) FROM main.pragma_table_info('t')) FROM t", "pragma_table_info", False),
    ("sqlite", "SELECT value FROM t, json_each(t.j)", "json_each", True),
    ("duckdb", "SELECT column_name FROM duckdb_columns()", "duckdb_columns", False),
    ("duckdb", "SELECT * FROM range(3)", "range", True),
    ("duckdb", "SELECT * FROM unnest([1, 2])", "unnest", True),
    ("postgres", "SELECT * FROM generate_series(1, 3) AS g", "generate_series", True),
    ("postgres", "SELECT * FROM pg_catalog.generate_series(1, 3)", "generate_series", True),
    ("postgres", "SELECT * FROM json_array_elements('[1]')", "json_array_elements", True),
    ("postgres", "SELECT * FROM my_tvf(1)", "my_tvf", False),
])
def test_table_functions_against_a_tables_policy(dialect: str, sql: str, function: str, passes: bool) -> None:
    verdict = check_policy(sql, {"tables": ["t"]}, dialect=dialect)
    assert verdict.passed is passes, verdict.violations
    if not passes:
        assert f"table function {'main.' if 'main.' in sql else ''}{function}()" in verdict.violations[0]
        assert f"list {function} in `tables:`" in verdict.violations[0]
        assert check_policy(sql, {"tables": ["t", function]}, dialect=dialect).passed  # listing its name allows it


def test_sqlite_pragma_table_info_fails_a_policy_suite_and_assert_policy(pytester: pytest.Pytester) -> None:
    conn = sqlite3.connect(pytester.path / "p.sqlite")
    conn.execute("CREATE TABLE t (id INTEGER, j TEXT)")
    conn.execute("INSERT INTO t VALUES (1, '[1]')")
    conn.commit()
    conn.close()
    _write(pytester, "s.sqleval.yaml", _suite("p.sqlite", [
        ("pragma", "SELECT id FROM t", "SELECT name FROM pragma_table_info('t')"),
        ("plain", "SELECT id FROM t", "SELECT id FROM t"),
    ], extra="pass_if: policy\npolicy: {tables: [t]}"))
    _write(pytester, "test_plain.py", (
        "import pytest\n"
        "from pytest_sqleval import assert_policy\n\n"
        "def test_pragma():\n"
        "    assert_policy(\"SELECT name FROM pragma_table_info('t')\", tables=['t'])\n\n"
        "def test_json_each():\n"
        "    assert_policy(\"SELECT value FROM t, json_each(t.j)\", tables=['t'])\n"))
    result, report = _run(pytester, "test_plain.py")
    cases = _cases(report)
    assert cases["pragma"]["policy"]["passed"] is False
    assert "pragma_table_info()" in cases["pragma"]["policy"]["violations"][0]
    assert cases["pragma"]["outcome"] != "passed" and cases["plain"]["outcome"] == "passed"
    result.assert_outcomes(passed=2, failed=1)  # the plain tests: assert_policy fails on the pragma only
    assert "reads the table function pragma_table_info(), which reads the schema" in result.stdout.str()


def test_duckdb_catalogue_function_runs_but_fails_the_policy(pytester: pytest.Pytester, duckdb_available) -> None:
    import duckdb

    conn = duckdb.connect(str(pytester.path / "p.duckdb"))
    conn.execute("CREATE TABLE t (id INTEGER)")
    conn.close()
    _write(pytester, "s.sqleval.yaml", _suite("p.duckdb", [
        ("catalogue", "SELECT 'id' AS column_name",
         "SELECT column_name FROM duckdb_columns() WHERE table_name = 't'"),
    ], extra="pass_if: execution_match and policy\npolicy: {tables: [t]}"))
    _, report = _run(pytester)
    case = _cases(report)["catalogue"]
    assert case["execution_match"] is True  # the guard lets DuckDB's catalogue functions run
    assert case["policy"]["passed"] is False and case["outcome"] != "passed"
