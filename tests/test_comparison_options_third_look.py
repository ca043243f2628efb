"""Result comparison options across every reproduction profile, third look (issues 2 and 12, LogicCat).

Every verdict of the SQLite table below was checked against the official scripts run from a scratch folder
(taoyds/test-suite-sql-eval ``eval_exec_match`` with its default flags, BIRD mini-dev's
``set(pred) == set(gold)``), against LogicCat's recipe (``pred_result == gold_result`` on ``fetchall()``) and
against MRO 2.1.1 (same shape, a one-to-one pairing of identical columns, row order kept). The ``sqleval``
column follows the README's comparison profiles.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_sqleval.comparison import CHOICES, EXECUTION_PROFILES, OPTION_NAMES, resolve_execution

PROFILES = ("sqleval", "test-suite", "bird", "mro", "logiccat")

ODD_VALUES_SQL = """
CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b REAL, c TEXT, d BLOB);
INSERT INTO t VALUES
    (1, 1, 0.5, 'x', x'01'),
    (2, 1, 1.0, 'y', NULL),
    (3, 2, 1.5, 'x', x'02'),
    (4, 2, 0.5, 'z', NULL),
    (5, 3, NULL, '', x'01');
"""

# id, gold, predicted, verdicts under (sqleval, test-suite, bird, mro, logiccat)
CASES = [
    ("gold-order-pred-none", "SELECT id FROM t ORDER BY id DESC", "SELECT id FROM t", (0, 0, 1, 0, 0)),
    ("gold-none-pred-order", "SELECT id FROM t", "SELECT id FROM t ORDER BY id DESC", (1, 1, 1, 0, 0)),
    ("ties-shown-keys", "SELECT a, c FROM t ORDER BY a", "SELECT a, c FROM t ORDER BY a, c DESC", (1, 0, 1, 0, 0)),
    ("ties-hidden-keys", "SELECT c FROM t ORDER BY a", "SELECT c FROM t ORDER BY a, c DESC", (1, 0, 1, 0, 0)),
    ("ties-reversed-groups", "SELECT c FROM t ORDER BY a", "SELECT c FROM t ORDER BY a DESC", (0, 0, 1, 0, 0)),
    ("order-only-in-subquery", "SELECT x FROM (SELECT id AS x FROM t ORDER BY id DESC)",
     "SELECT id FROM t ORDER BY id", (1, 0, 1, 0, 0)),
    ("order-by-in-a-literal", "SELECT id, 'order by' FROM t", "SELECT id, 'order by' FROM t ORDER BY id DESC",
     (1, 0, 1, 0, 0)),
    ("duplicates-dropped", "SELECT a FROM t WHERE a < 3", "SELECT DISTINCT a FROM t WHERE a < 3", (0, 1, 1, 0, 0)),
    ("bags-differ-sets-agree", "SELECT a FROM t WHERE id IN (1, 2, 3)", "SELECT a FROM t WHERE id IN (1, 3, 4)",
     (0, 0, 1, 0, 0)),
    ("count-distinct", "SELECT count(DISTINCT a) FROM t", "SELECT count(a) FROM t", (0, 1, 0, 0, 0)),
    ("columns-permuted", "SELECT id, c FROM t", "SELECT c, id FROM t", (1, 1, 0, 1, 0)),
    ("column-duplicated", "SELECT id FROM t", "SELECT id, id FROM t", (0, 0, 0, 0, 0)),
    ("column-missing", "SELECT id, c FROM t", "SELECT id FROM t", (0, 0, 0, 0, 0)),
    ("both-duplicate-a-column", "SELECT a, a FROM t", "SELECT a AS p, a AS q FROM t ORDER BY id", (1, 1, 1, 1, 1)),
    ("float-sum", "SELECT 0.1 + 0.2", "SELECT 0.3", (0, 0, 0, 0, 0)),
    ("int-vs-float-column", "SELECT a FROM t", "SELECT a * 1.0 FROM t", (1, 1, 1, 1, 1)),
    ("quick-rej-string-sort", "SELECT 1, 1.5", "SELECT 1.0, 1.5", (1, 0, 1, 1, 1)),
    ("minus-zero-and-infinity", "SELECT -0.0, 1e999, -1e999", "SELECT 0.0, 1e999, -1e999", (1, 0, 1, 1, 1)),
    ("big-integer-vs-its-float", "SELECT 9007199254740993", "SELECT 9007199254740993.0", (0, 0, 0, 0, 0)),
    ("big-integer-exact-float", "SELECT 9007199254740992", "SELECT 9007199254740992.0", (1, 1, 1, 1, 1)),
    ("null-vs-empty-string", "SELECT NULL", "SELECT ''", (0, 0, 0, 0, 0)),
    ("null-vs-null", "SELECT b FROM t WHERE id = 5", "SELECT NULL", (1, 1, 1, 1, 1)),
    ("empty-same-columns", "SELECT id FROM t WHERE id > 99", "SELECT a FROM t WHERE a > 99", (1, 1, 1, 1, 1)),
    ("empty-other-columns", "SELECT id FROM t WHERE id > 99", "SELECT id, c FROM t WHERE id > 99", (0, 1, 1, 0, 1)),
    ("empty-vs-rows", "SELECT id FROM t WHERE id > 99", "SELECT id FROM t WHERE id > 4", (0, 0, 0, 0, 0)),
    ("blob-vs-text", "SELECT d FROM t WHERE id = 1", "SELECT char(1)", (0, 0, 0, 0, 0)),
    ("blobs-and-nulls", "SELECT d FROM t", "SELECT d FROM t ORDER BY id", (1, 1, 1, 1, 1)),
    ("boolean-vs-int", "SELECT 1 = 1, 2 > 3", "SELECT 1, 0", (1, 1, 1, 1, 1)),
    ("date-vs-text", "SELECT date('2024-01-05')", "SELECT '2024-01-05'", (1, 1, 1, 1, 1)),
    ("limit-differs", "SELECT id FROM t ORDER BY id LIMIT 2", "SELECT id FROM t ORDER BY id LIMIT 3", (0, 0, 0, 0, 0)),
    ("nulls-in-two-columns", "SELECT b, d FROM t", "SELECT d, b FROM t", (1, 1, 0, 1, 0)),
]


def _yaml_text(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML string


def _suite(cases, execution: str, name: str, database: str = "odd.sqlite") -> str:
    lines = [f"suite: {name}", f"database: {database}", f"execution: {json.dumps(execution)}", "cases:"]
    for case_id, gold, predicted, *_ in cases:
        lines += [f"  - id: {case_id}", f"    gold: {_yaml_text(gold)}", f"    predicted: {_yaml_text(predicted)}"]
    return "\n".join(lines) + "\n"


def _odd_db(folder: Path) -> Path:
    path = folder / "odd.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(ODD_VALUES_SQL)
    conn.commit()
    conn.close()
    return path


def _run_suites(pytester: pytest.Pytester, suites: dict[str, str], *args: str, subprocess: bool = False) -> dict:
    """Run the suites (name -> YAML) in one session; the JSON report."""
    for name, text in suites.items():
        pytester.path.joinpath(f"{name}.sqleval.yaml").write_text(text, encoding="utf-8")
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run("--sqleval", *(f"{name}.sqleval.yaml" for name in suites), "--sqleval-json", "report.json",
                 "-p", "no:cacheprovider", *args)
    assert result.ret == 0, result.stdout.str()
    return json.loads(pytester.path.joinpath("report.json").read_text(encoding="utf-8"))


def _verdicts(report: dict, suite: str) -> dict[str, int]:
    return {case["id"]: int(bool(case["execution_match"])) for case in report["cases"] if case["suite"] == suite}


def _expected(profile: str) -> dict[str, int]:
    column = PROFILES.index(profile)
    return {case_id: verdicts[column] for case_id, _, _, verdicts in CASES}


def _suite_name(*parts) -> str:
    return "-".join(str(part) for part in parts).replace("_", "-")


def test_every_profile_on_odd_sqlite_results(pytester: pytest.Pytester) -> None:
    _odd_db(pytester.path)
    report = _run_suites(pytester, {profile: _suite(CASES, profile, profile) for profile in PROFILES})
    for profile in PROFILES:
        assert _verdicts(report, profile) == _expected(profile), profile
        cases = [case for case in report["cases"] if case["suite"] == profile]
        assert all(case["valid"] for case in cases)
        vacuous = {case["id"] for case in cases if case.get("vacuous")}
        assert vacuous == {c for c in ("empty-same-columns", "empty-other-columns") if _expected(profile)[c]}, profile


# (profile, option, value) -> the case ids whose verdict flips against the profile's own column
OVERRIDE_FLIPS = [
    ("bird", "duplicates", "bag", {"duplicates-dropped", "bags-differ-sets-agree"}),
    ("bird", "columns", "match", {"columns-permuted", "nulls-in-two-columns"}),
    ("bird", "row_order", "always", {"gold-order-pred-none", "gold-none-pred-order", "ties-shown-keys",
                                     "ties-hidden-keys", "ties-reversed-groups", "order-only-in-subquery",
                                     "order-by-in-a-literal"}),
    ("bird", "distinct", "strip", {"count-distinct"}),
    ("bird", "float_decimals", 2, {"float-sum"}),
    ("bird", "empty", "match_same_columns", {"empty-other-columns"}),
    ("bird", "nulls", "distinct", {"null-vs-null", "blobs-and-nulls"}),
    ("logiccat", "row_order", "ignore", {"gold-none-pred-order", "ties-shown-keys", "ties-hidden-keys",
                                         "ties-reversed-groups", "order-only-in-subquery", "order-by-in-a-literal",
                                         "gold-order-pred-none"}),
    ("logiccat", "row_order", "order_by", {"gold-none-pred-order", "order-only-in-subquery", "order-by-in-a-literal"}),
    ("logiccat", "columns", "match", {"columns-permuted", "nulls-in-two-columns"}),
    ("logiccat", "empty", "miss", {"empty-same-columns", "empty-other-columns"}),
    # test-suite's own screen (quick_rej: each row's values sorted as strings) stays under every override, on the
    # values as the options read them, so only the overridden choice changes a verdict
    ("test-suite", "distinct", "keep", {"duplicates-dropped", "count-distinct"}),
    # ties free under order_by_text too: the gold text says whether order counts, its outermost ORDER BY the keys
    ("test-suite", "ties", "any", {"ties-shown-keys", "ties-hidden-keys"}),
    ("test-suite", "row_order", "order_by", {"order-only-in-subquery", "order-by-in-a-literal"}),
    ("test-suite", "duplicates", "set", {"bags-differ-sets-agree"}),
    ("test-suite", "empty", "match_same_columns", {"empty-other-columns"}),
    ("test-suite", "columns", "positional", {"columns-permuted", "nulls-in-two-columns"}),
    ("test-suite", "nulls", "distinct", {"null-vs-null", "blobs-and-nulls", "nulls-in-two-columns"}),
    ("test-suite", "float_decimals", 1, {"float-sum"}),
    ("test-suite", "numbers", "value", set()),
    ("sqleval", "ties", "gold", {"ties-shown-keys", "ties-hidden-keys"}),
    ("sqleval", "row_order", "order_by_text", {"order-only-in-subquery", "order-by-in-a-literal"}),
    ("sqleval", "columns", "positional", {"columns-permuted", "nulls-in-two-columns"}),
    ("sqleval", "empty", "match", {"empty-other-columns"}),
    ("sqleval", "duplicates", "set", {"duplicates-dropped", "bags-differ-sets-agree"}),
    ("sqleval", "distinct", "strip", {"duplicates-dropped", "count-distinct"}),
    ("mro", "row_order", "ignore", {"gold-none-pred-order", "ties-shown-keys", "ties-hidden-keys",
                                    "ties-reversed-groups", "order-only-in-subquery", "order-by-in-a-literal",
                                    "gold-order-pred-none"}),
    ("mro", "empty", "match", {"empty-other-columns"}),
]


def test_one_override_changes_only_that_choice(pytester: pytest.Pytester) -> None:
    _odd_db(pytester.path)
    suites = {_suite_name(profile, option, value): _suite(CASES, {"profile": profile, option: value},
                                                          _suite_name(profile, option, value))
              for profile, option, value, _ in OVERRIDE_FLIPS}
    report = _run_suites(pytester, suites)
    shown = {summary["name"]: summary["execution"] for summary in report["suites"]}
    wrong = {}
    for profile, option, value, flips in OVERRIDE_FLIPS:
        name = _suite_name(profile, option, value)
        expected = {case_id: (1 - verdict if case_id in flips else verdict) for case_id, verdict in _expected(profile).items()}
        got = _verdicts(report, name)
        if got != expected:
            wrong[name] = {case_id: got.get(case_id) for case_id in expected if got.get(case_id) != expected[case_id]}
        assert shown[name] == {**EXECUTION_PROFILES[profile].as_dict(), option: value}
    assert not wrong, wrong


@pytest.mark.parametrize("profile", PROFILES)
def test_resolving_an_override_is_the_profile_with_that_one_field_replaced(profile: str) -> None:
    base = EXECUTION_PROFILES[profile]
    for option in OPTION_NAMES:
        values = CHOICES.get(option, (None, 0, 3))
        for value in values:
            resolved = resolve_execution({"profile": profile, option: value})
            assert resolved == replace(base, **{option: value}), (option, value)
            assert resolved.profile == profile


# ----------------------------------------------------------------------------- numbers from DuckDB and PostgreSQL
# BIRD's `set(pred) == set(gold)`, LogicCat's `pred_result == gold_result` and test-suite's `result_eq` compare
# the driver's values with Python's ==: a DECIMAL/NUMERIC 0.1 is not the float 0.1 (Python compares them
# exactly), NaN never equals NaN, but 2.5 = Decimal('2.50') and 1 = 1.0. The sqleval and mro profiles compare
# numbers by value across drivers. (gold, predicted, verdicts under sqleval, test-suite, bird, mro, logiccat)
DUCKDB_NUMBERS = [
    ("decimal-vs-double", "SELECT 0.1 AS v", "SELECT CAST(0.1 AS DOUBLE) AS v", (1, 0, 0, 1, 0)),
    ("decimal-sum-vs-double", "SELECT 0.1 + 0.2 AS v", "SELECT CAST(0.3 AS DOUBLE) AS v", (1, 0, 0, 1, 0)),
    ("dyadic-decimal-vs-double", "SELECT CAST(2.5 AS DECIMAL(4, 2)) AS v", "SELECT CAST(2.5 AS DOUBLE) AS v",
     (1, 1, 1, 1, 1)),
    ("integral-decimal-vs-int", "SELECT CAST(7 AS DECIMAL(10, 2)) AS v", "SELECT 7 AS v", (1, 1, 1, 1, 1)),
    ("nan-vs-nan", "SELECT CAST('NaN' AS DOUBLE) AS v", "SELECT CAST('NaN' AS DOUBLE) AS v", (1, 0, 0, 1, 0)),
    ("infinity", "SELECT CAST('inf' AS DOUBLE) AS v", "SELECT CAST('Infinity' AS DOUBLE) AS v", (1, 1, 1, 1, 1)),
    ("minus-zero", "SELECT CAST(-0.0 AS DOUBLE) AS v", "SELECT CAST(0.0 AS DOUBLE) AS v", (1, 1, 1, 1, 1)),
    ("hugeint-vs-double", "SELECT CAST(9007199254740993 AS HUGEINT) AS v", "SELECT CAST(9007199254740993 AS DOUBLE) AS v",
     (0, 0, 0, 0, 0)),
    ("boolean-vs-int", "SELECT TRUE AS v", "SELECT 1 AS v", (1, 1, 1, 1, 1)),
    ("date-vs-text", "SELECT DATE '2024-01-05' AS v", "SELECT '2024-01-05' AS v", (0, 0, 0, 0, 0)),
    ("blob-vs-text", "SELECT CAST('a' AS BLOB) AS v", "SELECT 'a' AS v", (0, 0, 0, 0, 0)),
    ("null-vs-empty", "SELECT NULL AS v", "SELECT '' AS v", (0, 0, 0, 0, 0)),
]

POSTGRES_NUMBERS = [
    ("numeric-vs-float8", "SELECT 0.1 AS v", "SELECT 0.1::float8 AS v", (1, 0, 0, 1, 0)),
    ("numeric-scale-vs-float8", "SELECT 0.30::numeric(5, 2) AS v", "SELECT 0.3::float8 AS v", (1, 0, 0, 1, 0)),
    ("numeric-scales", "SELECT 0.30::numeric(5, 2) AS v", "SELECT 0.3::numeric AS v", (1, 1, 1, 1, 1)),
    ("dyadic-numeric-vs-float8", "SELECT 2.5::numeric AS v", "SELECT 2.5::float8 AS v", (1, 1, 1, 1, 1)),
    ("nan-float8", "SELECT 'NaN'::float8 AS v", "SELECT 'NaN'::float8 AS v", (1, 0, 0, 1, 0)),
    ("nan-numeric-vs-float8", "SELECT 'NaN'::numeric AS v", "SELECT 'NaN'::float8 AS v", (1, 0, 0, 1, 0)),
    ("big-numeric-vs-bigint", "SELECT 9007199254740993::numeric AS v", "SELECT 9007199254740993::bigint AS v",
     (1, 1, 1, 1, 1)),
    ("bigint-vs-float8", "SELECT 9007199254740993::bigint AS v", "SELECT 9007199254740993::float8 AS v", (0, 0, 0, 0, 0)),
    ("minus-zero", "SELECT '-0'::float8 AS v", "SELECT 0::float8 AS v", (1, 1, 1, 1, 1)),
    ("infinity", "SELECT 'inf'::float8 AS v", "SELECT 'Infinity'::float8 AS v", (1, 1, 1, 1, 1)),
    ("boolean-vs-int", "SELECT TRUE AS v", "SELECT 1 AS v", (1, 1, 1, 1, 1)),
    ("date-vs-text", "SELECT DATE '2024-01-05' AS v", "SELECT '2024-01-05' AS v", (0, 0, 0, 0, 0)),
    ("bytea-vs-text", "SELECT 'a'::bytea AS v", "SELECT 'a' AS v", (0, 0, 0, 0, 0)),
]


def _profile_suites(cases, database: str) -> dict[str, str]:
    return {profile: _suite(cases, profile, profile, database=database) for profile in PROFILES}


def _check_profiles(report: dict, cases) -> None:
    for profile in PROFILES:
        column = PROFILES.index(profile)
        assert _verdicts(report, profile) == {case_id: verdicts[column] for case_id, _, _, verdicts in cases}, profile


def test_duckdb_numbers_under_every_profile(pytester: pytest.Pytester, duckdb_available) -> None:
    import duckdb

    duckdb.connect(str(pytester.path / "numbers.duckdb")).close()
    suites = _profile_suites(DUCKDB_NUMBERS, "numbers.duckdb")
    for profile in ("test-suite", "bird", "logiccat"):  # `numbers: value` on top: numbers compare as under sqleval
        suites[f"{profile}-value"] = _suite(DUCKDB_NUMBERS, {"profile": profile, "numbers": "value"}, f"{profile}-value",
                                            database="numbers.duckdb")
    report = _run_suites(pytester, suites)
    _check_profiles(report, DUCKDB_NUMBERS)
    for profile in ("test-suite", "bird", "logiccat"):
        assert _verdicts(report, f"{profile}-value") == _verdicts(report, "sqleval"), profile


ROUNDED = [  # under `float_decimals: 2` a NUMERIC is rounded like a float, whatever `numbers` says
    ("third", "SELECT 1::numeric / 3 AS v", "SELECT 0.333::float8 AS v"),
    ("half", "SELECT 0.5::numeric AS v", "SELECT 0.5001::float8 AS v"),
    ("apart", "SELECT 1::numeric / 3 AS v", "SELECT 0.34::float8 AS v"),
]


def test_postgres_numbers_under_every_profile(pytester: pytest.Pytester, postgres_url: str) -> None:
    suites = _profile_suites(POSTGRES_NUMBERS, postgres_url)
    for numbers in ("python", "value"):
        suites[f"rounded-{numbers}"] = _suite(ROUNDED, {"profile": "bird", "float_decimals": 2, "numbers": numbers},
                                              f"rounded-{numbers}", database=postgres_url)
    report = _run_suites(pytester, suites)
    _check_profiles(report, POSTGRES_NUMBERS)
    for numbers in ("python", "value"):
        assert _verdicts(report, f"rounded-{numbers}") == {"third": 1, "half": 1, "apart": 0}, numbers


# ----------------------------------------------------------------------------- bad options
BAD_EXECUTION = [
    # (execution block, line of the problem, what the message says, what the fix says)
    ("execution:\n  profile: bird\n  duplicate: set\n", 4, "unknown comparison option 'duplicate'; options are: row_order, "
     "ties, duplicates, columns, distinct, float_decimals, nulls, empty, numbers", "duplicates"),
    ("execution:\n  profile: bird\n  numbers: decimal\n", 4, "numbers must be one of value, python, not 'decimal'",
     "numbers: value"),
    ("execution:\n  duplicates: bag\n  profile: birds\n", 4,
     "unknown execution profile 'birds'; profiles are: sqleval, test-suite, bird, mro, logiccat", "profile: bird"),
    ("execution: {profile: test-suite, float_decimals: 1.5}\n", 2, "float_decimals must be null or a whole number >= 0, "
     "not 1.5", "float_decimals: 2"),
    ("execution: {profile: mro, row_order: ORDER_BY}\n", 2, "row_order must be one of order_by, order_by_text, always, "
     "ignore, not 'ORDER_BY'", "row_order: order_by"),
    ("execution: logicat\n", 2, "unknown execution profile 'logicat'", "execution: logiccat"),
]


@pytest.mark.parametrize(("block", "line", "message", "fix"), BAD_EXECUTION, ids=[str(i) for i in range(len(BAD_EXECUTION))])
def test_a_bad_option_names_the_file_its_line_and_the_fix(pytester: pytest.Pytester, block, line, message, fix) -> None:
    _odd_db(pytester.path)
    pytester.path.joinpath("bad.sqleval.yaml").write_text(
        f"database: odd.sqlite\n{block}cases:\n  - id: a\n    gold: SELECT 1\n    predicted: SELECT 1\n", encoding="utf-8")
    result = pytester.runpytest("--sqleval", "bad.sqleval.yaml", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    output = result.stdout.str()
    located = [text for text in result.stdout.lines if f"bad.sqleval.yaml:{line}: " in text]
    assert located and message in located[0], output
    fixes = [text for text in result.stdout.lines if text.strip().startswith("fix:")]
    assert fixes and fix in fixes[0], output


# ----------------------------------------------------------------------------- LogicCat VES and EX
LOGICCAT_CASES = [
    # id, gold, predicted (None: no prediction)
    ("same", "SELECT id FROM t ORDER BY id", "SELECT id FROM t ORDER BY id"),
    ("reordered", "SELECT id FROM t", "SELECT id FROM t ORDER BY id DESC"),
    ("syntax", "SELECT id FROM t", "SELEC id FROM t"),
    ("overflow", "SELECT id FROM t", "SELECT abs(-9223372036854775808)"),
    ("empty-both", "SELECT id FROM t WHERE id > 99", "SELECT id, c FROM t WHERE id > 99"),
    ("permuted", "SELECT id, c FROM t", "SELECT c, id FROM t"),
    ("delete", "SELECT id FROM t", "DELETE FROM t"),
    ("missing", "SELECT id FROM t", None),
    ("int-float", "SELECT a FROM t", "SELECT a * 1.0 FROM t"),
    ("reversed", "SELECT a FROM t", "SELECT a FROM t ORDER BY a DESC"),
]


def _logiccat_suite() -> str:
    lines = ["suite: lc", "database: odd.sqlite", "execution: logiccat", "cases:"]
    for case_id, gold, predicted in LOGICCAT_CASES:
        lines += [f"  - id: {case_id}", f"    gold: {_yaml_text(gold)}"]
        if predicted is not None:
            lines.append(f"    predicted: {_yaml_text(predicted)}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("workers", [None, "2"], ids=["serial", "xdist"])
def test_logiccat_ves_and_ex_aggregates(pytester: pytest.Pytester, workers) -> None:
    """VES = share of predictions that execute (6 of 10), EX = share whose result list equals the gold's (3 of
    10: same, empty-both, int-float); grouped by gold SQL (MRO 3.2): EX (1 + 0 + 1 + 0 + 1/2) / 5 = 0.5,
    VES (1 + 1/5 + 1 + 1 + 1) / 5 = 0.84."""
    _odd_db(pytester.path)
    args = ("-n", workers) if workers else ()
    report = _run_suites(pytester, {"lc": _logiccat_suite()}, *args, subprocess=bool(workers))
    cases = {case["id"]: case for case in report["cases"]}
    assert {case_id for case_id, case in cases.items() if case["valid"]} == {
        "same", "reordered", "empty-both", "permuted", "int-float", "reversed"}
    assert {case_id for case_id, case in cases.items() if case["execution_match"]} == {"same", "empty-both", "int-float"}
    assert {case_id: cases[case_id]["error"]["kind"] for case_id in ("syntax", "overflow", "delete", "missing")} == {
        "syntax": "syntax", "overflow": "runtime", "delete": "rejected", "missing": "no_prediction"}
    suite = report["suites"][0]
    assert suite["metrics"]["valid_syntax"] == pytest.approx(0.6)
    assert suite["metrics"]["execution_accuracy"] == pytest.approx(0.3)
    assert suite["metrics"]["vacuous"] == 1
    assert suite["by_gold_sql"]["execution_accuracy"] == pytest.approx(0.5)
    assert suite["by_gold_sql"]["valid_syntax"] == pytest.approx(0.84)


def test_soft_f1_compares_numbers_as_the_profile_does(pytester: pytest.Pytester, duckdb_available) -> None:
    """The README: soft F1's values compare as in the profile. Under `numbers: python` a DECIMAL 0.1 is not the
    float 0.1 and NaN is not NaN, for soft F1 as for the execution match; under `value` both are equal."""
    import duckdb

    duckdb.connect(str(pytester.path / "numbers.duckdb")).close()
    cases = [
        ("decimal-vs-double", "SELECT 0.1 AS v, 'a' AS w", "SELECT CAST(0.1 AS DOUBLE) AS v, 'a' AS w"),
        ("nan-vs-nan", "SELECT CAST('NaN' AS DOUBLE) AS v, 'a' AS w", "SELECT CAST('NaN' AS DOUBLE) AS v, 'a' AS w"),
    ]
    suites = {name: _suite(cases, {"profile": "bird", "numbers": numbers}, name, database="numbers.duckdb")
              for name, numbers in (("python", "python"), ("value", "value"))}
    report = _run_suites(pytester, suites)
    scores = {(case["suite"], case["id"]): (case["execution_match"], case["soft_f1"]) for case in report["cases"]}
    # python: column w pairs (F1 1), column v pairs nothing: P = R = 1/2, F1 = 1/2
    assert scores == {("python", "decimal-vs-double"): (False, 0.5), ("python", "nan-vs-nan"): (False, 0.5),
                      ("value", "decimal-vs-double"): (True, 1.0), ("value", "nan-vs-nan"): (True, 1.0)}
