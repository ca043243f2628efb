"""Ninth QA look (qa9) at issue 8 (one direction of flow, a typed record, extension hooks, docs/architecture.md) and
issue 13 (assertion helpers for ordinary pytest tests), as a user writes them: plain test files run through pytester
against real SQLite, DuckDB and PostgreSQL databases, and the architecture document read as a newcomer reads it."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

import pytest_sqleval

ROOT = Path(pytest_sqleval.__file__).resolve().parent
ARCHITECTURE = ROOT.parent / "docs" / "architecture.md"

# 1,000 rows whose ORDER BY k swaps rows 500 and 501 only: the heads of gold and prediction are alike.
SWAPPED = """
CREATE TABLE n (i INTEGER, k INTEGER);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000)
INSERT INTO n SELECT x, CASE x WHEN 500 THEN 501 WHEN 501 THEN 500 ELSE x END FROM c;
CREATE TABLE g (grp INTEGER, v TEXT);
INSERT INTO g VALUES (1, 'a'), (1, 'b'), (2, 'c'), (2, 'd'), (3, 'e');
"""


def _run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makeini("[pytest]\n")
    pytester.path.joinpath("schema.sql").write_text(SWAPPED)
    pytester.makepyfile(test_app=textwrap.dedent(source))
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


@pytest.mark.parametrize("args", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_an_order_miss_says_where_the_order_first_differs(pytester: pytest.Pytester, args):
    """Two results in a different order whose first rows are alike (rows 500 and 501 swapped in 1,000) failed with
    `order: same rows in a different order` over two identical 5-row heads and no rows-only lines: the message said
    the order differs but not where, so the test's author could not see what the model got wrong. It now names the
    first row out of order with both rows, in the gold's column order (the prediction's columns swapped)."""
    result = _run(pytester, """
        import pytest
        from pytest_sqleval import assert_execution_match, assert_soft_f1, check_execution_match

        pytestmark = pytest.mark.sqleval_database("sqlite://", setup=["schema.sql"])

        def test_helper():
            assert_execution_match("SELECT i, i * 2 AS twice FROM n ORDER BY i", "SELECT i * 2, i FROM n ORDER BY k")

        def test_plain_assert():
            verdict = check_execution_match("SELECT i FROM n ORDER BY i", "SELECT i FROM n ORDER BY k")
            assert verdict

        def test_tie_groups_any_order_inside_a_group_is_fine():
            assert_execution_match("SELECT grp, v FROM g ORDER BY grp", "SELECT grp, v FROM g ORDER BY grp, v DESC")

        def test_tie_group():
            assert_execution_match("SELECT grp, v FROM g ORDER BY grp",
                                   "SELECT v, grp FROM g ORDER BY CASE v WHEN 'c' THEN 9 ELSE grp END, v DESC")

        def test_ties_gold():
            assert_execution_match("SELECT grp, v FROM g ORDER BY grp", "SELECT grp, v FROM g ORDER BY grp, v DESC",
                                   profile="test-suite")

        def test_expected_rows_in_order():
            assert_execution_match({"columns": ["v"], "rows": [["a"], ["b"], ["c"]], "ordered": True},
                                   "SELECT v FROM g WHERE grp < 3 AND v <> 'd' ORDER BY v DESC")

        def test_a_values_miss_has_no_such_line():
            assert_execution_match("SELECT i FROM n ORDER BY i", "SELECT i + 1 FROM n ORDER BY i")
    """, *args)
    result.assert_outcomes(passed=1, failed=6)
    out = result.stdout.str()
    result.stdout.fnmatch_lines_random([
        "E*first out of order: row 500 of 1000: gold (500, 1000), the prediction (501, 1002)",
        "*first out of order: row 500 of 1000: gold (500), the prediction (501)",  # the `sqleval verdict` section
        "E*first out of order: rows 3-4 of 5 (tied on the ORDER BY keys): gold has (2, c) there, the prediction (3, e)",
        "E*first out of order: row 1 of 5: gold (1, a), the prediction (1, b)",
        "E*first out of order: row 1 of 3: gold (a), the prediction (c)",
    ])
    lines = _section(out, "test_helper").splitlines()
    reason = next(i for i, line in enumerate(lines) if "order: same rows in a different order" in line)
    assert "first out of order: row 500 of 1000" in lines[reason + 1], lines  # right under the reason
    assert "first out of order" not in _section(out, "test_a_values_miss_has_no_such_line")


def _section(out: str, test: str) -> str:
    """One failing test's part of the output (under xdist the failures come in any order)."""
    start = out.index(f"_ {test} _")
    ends = [i for i in (out.find("\n___", start + 1), out.find("short test summary", start)) if i != -1]
    return out[start:min(ends)]


def test_an_order_miss_on_postgresql_and_duckdb_names_the_rows_as_the_engine_returned_them(
        pytester: pytest.Pytester, postgres_url: str, duckdb_available):
    """The first row out of order is found on the values as the comparison reads them (a NUMERIC beside a float
    compares by value) and shown as the engine returned them: PostgreSQL NUMERIC and DuckDB DECIMAL/DATE."""
    pytester.path.joinpath("duck.sql").write_text(
        "CREATE TABLE d (day DATE, amount DECIMAL(10, 2));\n"
        "INSERT INTO d SELECT DATE '2024-01-01' + CAST(x AS INTEGER), x / 4 FROM range(1, 41) t(x);\n")
    result = _run(pytester, f"""
        import sqlalchemy as sa
        import pytest
        from pytest_sqleval import assert_execution_match

        def test_postgresql():
            engine = sa.create_engine({postgres_url!r})
            assert_execution_match("SELECT x::numeric / 4 AS q FROM generate_series(1, 30) x ORDER BY x",
                                   "SELECT x::float / 4 AS q FROM generate_series(1, 30) x ORDER BY x = 7, x",
                                   engine=engine)

        @pytest.mark.sqleval_database("duckdb://", setup=["duck.sql"])
        def test_duckdb():
            assert_execution_match("SELECT day, amount FROM d ORDER BY day",
                                   "SELECT day, amount FROM d ORDER BY day = DATE '2024-01-09', day")
    """)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines_random([
        "E*first out of order: row 7 of 30: gold (1.75*), the prediction (2.0)",
        "E*first out of order: row 8 of 40: gold (2024-01-09, 2.00), the prediction (2024-01-10, 2.25)",
    ])


def _modules_block() -> str:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    return text.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]


def test_every_module_of_the_package_is_in_the_architecture_documents_module_list():
    """docs/architecture.md is 'redrawn from the result' (issue 8) so that a newcomer can name each file's concern,
    but its module list left out fifteen modules, among them the whole assertion feature (assertions.py,
    assert_plugin.py, policy.py), the model in the loop (model_plugin.py and most of model/) and
    report/json_values.py, sql/spacing.py. Each module is now named there, under its folder."""
    block = _modules_block()
    missing = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py") or "__pycache__" in path.parts:
            continue
        # its own entry (`policy.py   ...`), or an item of a folder's list (`exact_match/  ...: options, spider_text/...`)
        if not re.search(rf"(^|[\s,/]){re.escape(path.stem)}(\.py\b|/|,|\s\()", block, re.MULTILINE):
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, f"modules not in docs/architecture.md's module list: {missing}"


def test_a_threshold_outside_a_user_means_maximum_calls_it_a_mean_not_a_rate(pytester: pytest.Pytester):
    """A user's mean registered with `maximum=1000` (a prediction's length), gated at 2000, was refused with
    `pred_len is a rate between 0 and 1000`: a rate is a share from 0 to 1, so the message contradicted the
    registration the user had just written. It now says `a mean`; a rate and soft_f1 keep their wording."""
    pytester.makeconftest("""
        def pytest_sqleval_register_metrics(registry):
            registry.register("pred_len", kind="mean", direction="lower", maximum=1000)
    """)
    pytester.makefile(".sqleval.yaml", shop="suite: shop\ndatabase: {url: 'sqlite://', setup: [s.sql]}\n"
                                            "cases:\n  - {id: a, gold: SELECT 1, predicted: SELECT 1}\n")
    pytester.path.joinpath("s.sql").write_text("CREATE TABLE t (a INTEGER);\n")
    for threshold, expected in (("pred_len=2000", "pred_len is a mean between 0 and 1000; 2000 can never be met"),
                                ("r_ves=2", "r_ves is a mean between 0 and 1.118; 2 can never be met"),
                                ("soft_f1=2", "soft_f1 is a rate between 0 and 1; 2 can never be met")):
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sqleval", "--sqleval-threshold", threshold)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
        assert expected in result.stderr.str(), result.stderr.str()


GOLDS_SUITE = """
suite: shop
database: {url: "sqlite://", setup: [s.sql]}
cases:
  - id: second-gold-scores
    gold:
      - SELECT name FROM shops WHERE id = 1
      - SELECT name FROM shops ORDER BY name
    predicted: SELECT name FROM shops ORDER BY name
  - id: first-gold-scores
    gold:
      - SELECT name FROM shops ORDER BY name
      - SELECT name FROM shops WHERE id = 1
    predicted: SELECT name FROM shops ORDER BY name
  - id: none-matches
    gold:
      - SELECT id FROM shops
      - SELECT name FROM shops
    predicted: SELECT name FROM shops WHERE id < 3
"""

# A user's metric: the prediction returned as many rows as the gold (read from the hook's context), as a hook and as
# one Metric(score=...) registration.
GOLDS_CONFTEST = """
from pytest_sqleval.registry import Metric

def same_rows(record, context):
    if context.prediction_result is None:
        return None
    return len(context.prediction_result.rows) == len(context.gold_results[0].rows)

def pytest_sqleval_register_metrics(registry):
    registry.register("same_count", kind="rate")
    registry.register(Metric("same_rows", kind="rate", score=same_rows))

def pytest_sqleval_score_case(record, context):
    record["same_count"] = [len(r.rows) for r in context.gold_results] == [len(context.prediction_result.rows)]
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_hooks_gold_results_are_those_of_the_accepted_gold_that_scores(pytester: pytest.Pytester, workers):
    """With several accepted golds, a user's metric read `context.gold_results`, the first gold's results, while the
    case was scored (execution_match, soft_f1, gold_index) against the second: a 'same row count as the gold' metric
    said False for a prediction that matched its gold exactly. The context now holds the scoring gold's results."""
    import json

    pytester.path.joinpath("s.sql").write_text(
        "CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT);\n"
        "INSERT INTO shops VALUES (1, 'Avionics'), (2, 'Engines'), (3, 'Fuel');\n")
    pytester.makefile(".sqleval.yaml", shop=GOLDS_SUITE)
    pytester.makeconftest(GOLDS_CONFTEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sqleval", "--sqleval-json=r.json", *workers)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    cases = {c["id"]: c for c in json.loads(pytester.path.joinpath("r.json").read_text())["cases"]}
    assert cases["second-gold-scores"]["gold_index"] == 1 and cases["second-gold-scores"]["execution_match"] is True
    assert {k: (c["same_count"], c["same_rows"]) for k, c in cases.items()} == {
        "second-gold-scores": (True, True), "first-gold-scores": (True, True), "none-matches": (False, False)}


def test_a_timestamp_stored_as_iso_text_with_t_meets_expected_rows(pytester: pytest.Pytester, postgres_url: str):
    """A SQLite column filled with Python's `datetime.isoformat()` holds `2024-01-05T10:30:00`; expected rows of
    `datetime(2024, 1, 5, 10, 30)` (or YAML's unquoted `2024-01-05 10:30:00`) compare as `2024-01-05 10:30:00`, so
    the two never met: `rows only in gold: (2024-01-05 10:30:00)`, `rows only in prediction: (2024-01-05T10:30:00)`,
    the same timestamp on both lines. A naive timestamp's ISO text (with `T`, a fraction, or no seconds) now compares
    as the timestamp it writes, in helpers and in suites; other text and a different instant still miss."""
    pytester.path.joinpath("s.sql").write_text(
        "CREATE TABLE ev (id INTEGER, at TEXT, note TEXT);\n"
        "INSERT INTO ev VALUES (1, '2024-01-05T10:30:00', 'T'), (2, '2024-01-05T11:00:00.5', 'fraction'),"
        " (3, '2024-01-06 09:15', 'no seconds');\n")
    pytester.makefile(".sqleval.yaml", ev="""
suite: ev
database: {url: "sqlite://", setup: [s.sql]}
cases:
  - id: yaml-timestamps
    expected: {columns: [at], rows: [[2024-01-05 10:30:00], [2024-01-05 11:00:00.5], [2024-01-06 09:15:00]]}
    predicted: SELECT at FROM ev
  - id: another-instant
    expected: {columns: [at], rows: [[2024-01-05 10:30:01]]}
    predicted: SELECT at FROM ev WHERE id = 1
""")
    result = _run(pytester, f"""
        import datetime as dt
        import pytest
        import sqlalchemy as sa
        from pytest_sqleval import assert_execution_match, check_execution_match

        pytestmark = pytest.mark.sqleval_database("sqlite://", setup=["s.sql"])

        def test_datetimes():
            assert_execution_match({{"columns": ["at"], "rows": [[dt.datetime(2024, 1, 5, 10, 30)],
                                    [dt.datetime(2024, 1, 5, 11, 0, 0, 500000)], [dt.datetime(2024, 1, 6, 9, 15)]]}},
                                   "SELECT at FROM ev")

        def test_text_with_t_against_postgresql():
            engine = sa.create_engine({postgres_url!r})
            assert_execution_match({{"columns": ["at"], "rows": [["2024-01-05T10:30"]]}},
                                   "SELECT timestamp '2024-01-05 10:30:00' AS at", engine=engine)

        def test_still_misses():
            assert not check_execution_match({{"columns": ["at"], "rows": [[dt.datetime(2024, 1, 5, 10, 31)]]}},
                                             "SELECT at FROM ev WHERE id = 1")
            assert not check_execution_match({{"columns": ["note"], "rows": [["T"]]}}, "SELECT note FROM ev WHERE id = 2")
    """, "--sqleval", "--sqleval-json=r.json")
    result.assert_outcomes(passed=4, failed=0)  # 3 tests and 1 suite case passed
    result.stdout.fnmatch_lines(["*another-instant: values*"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_suites_order_miss_says_where_too_in_the_diff_and_the_json(pytester: pytest.Pytester, workers):
    """What the helpers show is what a suite's `-v` shows (issue 13): the suite's diff and its record's mismatch say
    where the order first differs as the helper does; a miss of another kind has no such key."""
    import json

    pytester.path.joinpath("s.sql").write_text(SWAPPED)
    pytester.makefile(".sqleval.yaml", swapped="""
suite: swapped
database: {url: "sqlite://", setup: [s.sql]}
cases:
  - id: far
    gold: SELECT i FROM n ORDER BY i
    predicted: SELECT i FROM n ORDER BY k
  - id: values
    gold: SELECT i FROM n ORDER BY i
    predicted: SELECT i + 1 FROM n ORDER BY i
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sqleval", "--sqleval-diff",
                                           "--sqleval-json=r.json", *workers)
    result.stdout.fnmatch_lines(["*far: order: same rows in a different order",
                                 "*  first out of order: row 500 of 1000: gold (500), the prediction (501)",
                                 "*  gold SQL:      SELECT i FROM n ORDER BY i"])
    cases = {c["id"]: c for c in json.loads(pytester.path.joinpath("r.json").read_text())["cases"]}
    assert cases["far"]["mismatch"]["first_out_of_order"] == "row 500 of 1000: gold (500), the prediction (501)"
    assert "first_out_of_order" not in cases["values"]["mismatch"]

