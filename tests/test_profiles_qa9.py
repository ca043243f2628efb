"""Execution metrics and reproduction profiles on result shapes nobody tuned for (QA round 9, issue 12).

Every expectation below is a worked example computed by hand (the arithmetic is in each docstring) and, for the
``test-suite`` and ``bird`` profiles, checked against the official scripts themselves on the same SQLite files:
test-suite-sql-eval's ``eval_exec_match(db, pred, gold, plug_value=False, keep_distinct=False, False)`` (its
default flags, every ``*.sqlite`` of the database's folder) and BIRD mini-dev's ``evaluation_ex.execute_model`` /
``evaluation_f1.execute_model``. ``logiccat`` is LogicCat's ``pred_result == gold_result`` on the lists of tuples;
``mro`` is MRO 2.1.1 (same shape, columns matched one-to-one, each identical in row order) and its ``soft_f1`` is
MRO 2.1.2 (column-wise precision/recall/F1, best pairing, then F1 over the columns).
"""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml  # noqa: F401 - imported before pytester's in-process runs snapshot sys.modules (libyaml cannot re-import)

from conftest import make_sqlite

SCRIPT = """
CREATE TABLE t (id INTEGER, a INTEGER, b INTEGER, f REAL, g REAL, s TEXT, n INTEGER);
INSERT INTO t VALUES (1, 1, 1, 0.1, 0.30000000000000004, '1', NULL), (2, 1, 2, 0.2, 0.3, '2', 1),
                     (3, 2, 1, 0.3, 1.0, 'a', NULL), (4, 2, 2, 1.0, 2.0, '1.0', 2);
CREATE TABLE u (c1 INTEGER, c2 INTEGER, c3 INTEGER, c4 INTEGER);
INSERT INTO u VALUES (1, 2, 3, 4), (2, 3, 4, 1), (3, 4, 1, 2), (4, 1, 2, 3);
CREATE TABLE v (p INTEGER, q INTEGER, r TEXT);
INSERT INTO v VALUES (1, 1, 'x'), (1, 1, 'x'), (2, 2, 'y'), (NULL, NULL, NULL);
CREATE TABLE e (x INTEGER, y TEXT);
"""

PROFILES = ("test-suite", "bird", "logiccat", "mro", "sqleval")

# id: (gold, prediction, {profile: execution_match}, MRO soft_f1, BIRD soft F1)
SHAPES = {
    "duplicates": ("SELECT a FROM t", "SELECT DISTINCT a FROM t",
                   {"test-suite": True, "bird": True, "logiccat": False, "mro": False, "sqleval": False}, 1.0, 1.0),
    "column-permutation": ("SELECT a, b FROM t", "SELECT b, a FROM t",
                           {"test-suite": True, "bird": True, "logiccat": False, "mro": True, "sqleval": True}, 1.0, 1.0),
    "extra-column": ("SELECT a FROM t", "SELECT a, b FROM t",
                     {"test-suite": False, "bird": False, "logiccat": False, "mro": False, "sqleval": False},
                     1.0, 2 / 3),
    "missing-column": ("SELECT id, a FROM t", "SELECT id FROM t",
                       {"test-suite": False, "bird": False, "logiccat": False, "mro": False, "sqleval": False},
                       10 / 11, 8 / 11),
    "nulls": ("SELECT n FROM t", "SELECT coalesce(n, 0) FROM t",
              {"test-suite": False, "bird": False, "logiccat": False, "mro": False, "sqleval": False}, 0.5, 2 / 3),
    "last-digit-floats": ("SELECT f FROM t", "SELECT f + 0.0000000000000001 FROM t",
                          {"test-suite": False, "bird": False, "logiccat": False, "mro": False, "sqleval": False},
                          0.25, 0.25),
    "rounded-floats": ("SELECT g FROM t", "SELECT round(g, 10) FROM t",
                       {"test-suite": False, "bird": False, "logiccat": False, "mro": False, "sqleval": False},
                       6 / 7, 0.0),
    "int-vs-float": ("SELECT count(*) FROM t", "SELECT 1.0 * count(*) FROM t",
                     {"test-suite": True, "bird": True, "logiccat": True, "mro": True, "sqleval": True}, 1.0, 1.0),
    "empty-other-width": ("SELECT x FROM e", "SELECT a, b FROM t WHERE 0",
                          {"test-suite": True, "bird": True, "logiccat": True, "mro": False, "sqleval": False},
                          1.0, 1.0),
    "empty-prediction": ("SELECT a FROM t", "SELECT x FROM e",
                         {"test-suite": False, "bird": False, "logiccat": False, "mro": False, "sqleval": False},
                         0.0, 0.0),
    "single-column-reversed": ("SELECT a FROM t ORDER BY a", "SELECT a FROM t ORDER BY a DESC",
                               {"test-suite": False, "bird": True, "logiccat": False, "mro": False, "sqleval": False},
                               1.0, 0.0),
    "wide-latin-square": ("SELECT c1, c2, c3, c4 FROM u", "SELECT c2, c3, c4, c1 FROM u",
                          {"test-suite": True, "bird": True, "logiccat": False, "mro": True, "sqleval": True},
                          1.0, 1.0),
    "text-vs-numbers": ("SELECT s FROM t", "SELECT CAST(s AS INTEGER) FROM t",
                        {"test-suite": False, "bird": False, "logiccat": False, "mro": False, "sqleval": False},
                        0.0, 0.0),
    "duplicate-rows-with-null": ("SELECT p, q FROM v", "SELECT DISTINCT p, q FROM v",
                                 {"test-suite": True, "bird": True, "logiccat": False, "mro": False, "sqleval": False},
                                 1.0, 1.0),
    "rotated-text-column": ("SELECT p, q, r FROM v", "SELECT r, p, q FROM v",
                            {"test-suite": True, "bird": False, "logiccat": False, "mro": True, "sqleval": True},
                            1.0, 1.0),
    "ties-in-another-order": ("SELECT a, id FROM t ORDER BY a", "SELECT a, id FROM t ORDER BY a, id DESC",
                              {"test-suite": False, "bird": True, "logiccat": False, "mro": False, "sqleval": True},
                              1.0, 0.625),
}


def _run_profiles(pytester) -> dict[str, dict[str, dict]]:
    make_sqlite(pytester.path / "shapes.sqlite", SCRIPT)
    for profile in PROFILES:
        suite = {"suite": f"shapes-{profile}", "database": "shapes.sqlite", "execution": profile,
                 "cases": [{"id": key, "gold": gold, "predicted": pred} for key, (gold, pred, *_) in SHAPES.items()]}
        (pytester.path / f"shapes_{profile}.sqleval.yaml").write_text(json.dumps(suite), encoding="utf-8")
    report = pytester.path / "report.json"
    pytester.runpytest("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider")
    by_suite: dict[str, dict[str, dict]] = {}
    for case in json.loads(report.read_text(encoding="utf-8"))["cases"]:
        by_suite.setdefault(case["suite"].removeprefix("shapes-"), {})[case["id"]] = case
    return by_suite


def test_untuned_result_shapes_get_each_evaluators_verdict(pytester):
    """t(id, a, b, f, g, s, n) = (1,1,1,.1,.30000000000000004,'1',NULL) (2,1,2,.2,.3,'2',1) (3,2,1,.3,1.0,'a',NULL)
    (4,2,2,1.0,2.0,'1.0',2); u a 4x4 Latin square; v = (1,1,x) (1,1,x) (2,2,y) (NULL,NULL,NULL); e empty.
    MRO soft F1: F1(n,t) from P = share of predicted cells found in gold column n, R = share of gold cells found in
    predicted column t; Precision = mean over predicted columns of their best F1, Recall = mean over gold columns.
    BIRD: rows deduplicated, paired by position, cells counted by membership in the partner row / gold width.

    - duplicates: [1,1,2,2] vs [1,2]. test-suite strips DISTINCT (same query) 1; BIRD sets equal 1; lists differ;
      MRO/sqleval 4 rows vs 2. soft: P 2/2, R 4/4 -> 1. BIRD: both dedupe to [1,2] -> 1.
    - column-permutation: (a,b) rows (1,1)(1,2)(2,1)(2,2); swapped they are the same SET of pairs, so BIRD's
      positional set compare is 1 too; the list is in another order (LogicCat 0). BIRD F1: every cell of each
      positional partner is in the gold row -> 1.
    - extra-column: a vs (a, b): soft F1(a,a) = 1 and F1(a,b) = 1 (b's values {1,2} are a's) -> P = R = 1 -> 1.
      BIRD: gold dedupes to (1,) (2,); (1,1): match 2; (2,) vs (1,2): match 1, pred_only 1; two extra rows
      pred_only 2: P = 3/6, R = 3/3 -> 2/3.
    - missing-column: (id, a) vs id. F1(id,id) = 1; F1(a,id): P 2/4, R 4/4 -> 2/3. Precision 1, Recall
      (1 + 2/3)/2 = 5/6 -> 10/11. BIRD: each row (k,) vs (k, a) matches 1/2; gold_only 0 for (1,1) (its 1 is
      found), 1/2 for the other three: P = 2/2, R = 2/3.5 = 4/7 -> 8/11.
    - nulls: [NULL,1,NULL,2] vs [0,1,0,2]: soft P 2/4, R 2/4 -> 1/2. BIRD: (NULL)(1)(2) vs (0)(1)(2): tp 2, fp 1,
      fn 1 -> 2/3.
    - last-digit-floats: .1+1e-16, .2+1e-16, .3+1e-16 are other floats, 1.0+1e-16 is 1.0: soft 1/4 each way ->
      1/4; BIRD: one row of four matches -> 1/4.
    - rounded-floats: round(g, 10) turns .30000000000000004 into .3: gold {.30000000000000004, .3, 1, 2} vs
      [.3, .3, 1, 2]: P 4/4, R 3/4 -> 6/7. BIRD: the prediction dedupes to (.3)(1)(2), so by position no row
      pairs with its equal -> 0.
    - int-vs-float: 4 = 4.0 under Python == everywhere -> 1, both F1s 1.
    - empty-other-width: two empty results: test-suite/BIRD/LogicCat 1 whatever the widths; MRO's dimensions
      (0x1 vs 0x2) differ -> 0, and sqleval's match_same_columns too; both F1s score two empty results 1.
    - empty-prediction: rows vs none -> 0 everywhere, both F1s 0.
    - single-column-reversed: "order by" in the gold -> test-suite in order: 0; BIRD sets 1; soft F1 ignores
      order -> 1; BIRD F1 pairs (1) with (2) and (2) with (1) -> 0.
    - wide-latin-square: rotating the columns gives the same rows in another order: bag and column matching 1;
      BIRD's positional set 1; LogicCat's list 0; MRO: pred column 1 is gold c2 row for row, and so on -> 1.
    - text-vs-numbers: '1','2','a','1.0' vs 1,2,0,1: no text equals a number -> 0, both F1s 0.
    - duplicate-rows-with-null: (1,1)(1,1)(2,2)(NULL,NULL) vs its DISTINCT: as duplicates; soft: P 3/3, R 4/4.
    - rotated-text-column: (p,q,r) vs (r,p,q): test-suite/MRO/sqleval match columns 1; BIRD positional 0, but
      BIRD F1 finds every cell in its row -> 1.
    - ties-in-another-order: gold (1,1)(1,2)(2,3)(2,4), pred (1,2)(1,1)(2,4)(2,3): test-suite demands the gold's
      tie order 0; sqleval lets ties come in any order 1; MRO/LogicCat row for row 0; BIRD set 1. BIRD F1:
      matches 1/2, 1, 1/2, 1/2 = 2.5, pred_only 1.5, gold_only 1.5 -> P = R = 2.5/4 = 0.625.
    Official test-suite / BIRD EX / BIRD F1 agreed with every value above (run on the same file)."""
    cases = _run_profiles(pytester)
    verdicts = {profile: {key: cases[profile][key]["execution_match"] for key in SHAPES} for profile in PROFILES}
    assert verdicts == {profile: {key: shape[2][profile] for key, shape in SHAPES.items()} for profile in PROFILES}
    for key, (_, _, _, soft, bird) in SHAPES.items():
        for profile in PROFILES:  # no DISTINCT in these but the duplicate ones, where stripping changes nothing
            assert cases[profile][key]["soft_f1"] == pytest.approx(soft, abs=1e-12), (profile, key)
            assert cases[profile][key]["bird_soft_f1"] == pytest.approx(bird, abs=1e-12), (profile, key)
        assert cases["mro"][key]["valid"] is True


AGGREGATE_SUITE = """
database: shapes.sqlite
execution: mro
cases:
  - id: a1
    gold: SELECT a, b FROM t
    predicted: SELECT b, a FROM t
  - id: a2
    gold: "SELECT  a, b  FROM t;"
    predicted: SELECT a FROM t
  - id: a3
    gold: SELECT a, b FROM t
    predicted: SELECT nope FROM t
  - id: b1
    gold: SELECT x FROM e
    predicted: SELECT x FROM e WHERE x > 1
  - id: b2
    gold: SELECT x FROM e
    predicted: SELECT a FROM t
  - id: c1
    gold: SELECT count(*) FROM t
    predicted: SELECT count(*) FROM t WHERE
  - id: c2
    gold: SELECT count(*) FROM t
    predicted: null
  - id: c3
    gold: SELECT count(*) FROM t
    predicted: DELETE FROM t
  - id: c4
    gold: SELECT count(*) FROM t
    predicted: SELECT abs(-9223372036854775807 - 1) FROM t
"""


def test_grouped_by_gold_averages_and_error_counts_by_kind(pytester):
    """Three golds (A = `SELECT a, b FROM t`, written twice: extra spaces and a `;` are the same gold; B = the
    empty `SELECT x FROM e`; C = `SELECT count(*) FROM t`), MRO profile:

    a1 column swap -> match (soft 1); a2 one column of two -> miss, soft: F1(a,a) = 1, F1(b,a) = 1 (same values)
    -> 1; a3 no such column -> syntax error (soft 0); b1 empty vs empty, one column each -> match, vacuous;
    b2 rows vs none -> miss (soft 0); c1 does not parse -> syntax; c2 no prediction; c3 a DELETE -> rejected;
    c4 integer overflow -> runtime.
    Plain: VES = 4/9 (a1 a2 b1 b2), EX = 2/9, soft = 3/9, error_count 5 = syntax 2, no_prediction 1,
    rejected 1, runtime 1 (LogicCat VES and MRO Execution Error Count count a missing prediction as not run).
    Per gold (MRO 3.2): VES (2/3 + 1 + 0)/3 = 5/9, EX (1/3 + 1/2 + 0)/3 = 5/18, soft (2/3 + 1/2 + 0)/3 = 7/18,
    error_count = sum of the group error rates 1/3 + 0 + 1 = 4/3. Difficulty: A medium (two SELECT items),
    B and C easy: easy has 6 cases, 4 errors (c1-c4), medium 3 cases, 1 error (a3)."""
    make_sqlite(pytester.path / "shapes.sqlite", SCRIPT)
    pytester.makefile(".sqleval.yaml", grouped=textwrap.dedent(AGGREGATE_SUITE))
    report_path = pytester.path / "report.json"
    pytester.runpytest("--sqleval", f"--sqleval-json={report_path}", "-p", "no:cacheprovider")
    suite = json.loads(report_path.read_text(encoding="utf-8"))["suites"][0]
    metrics, grouped = suite["metrics"], suite["by_gold_sql"]
    assert metrics["valid_syntax"] == pytest.approx(4 / 9)
    assert metrics["execution_accuracy"] == pytest.approx(2 / 9)
    assert metrics["soft_f1"] == pytest.approx(3 / 9)
    assert metrics["error_count"] == 5
    assert metrics["errors_by_kind"] == {"no_prediction": 1, "rejected": 1, "runtime": 1, "syntax": 2}
    assert metrics["vacuous"] == 1
    assert grouped["groups"] == 3
    assert grouped["valid_syntax"] == pytest.approx(5 / 9)
    assert grouped["execution_accuracy"] == pytest.approx(5 / 18)
    assert grouped["soft_f1"] == pytest.approx(7 / 18)
    assert grouped["error_count"] == pytest.approx(4 / 3)
    difficulty = suite["by_difficulty"]
    assert (difficulty["easy"]["cases"], difficulty["easy"]["error_count"]) == (6, 4)
    assert difficulty["easy"]["errors_by_kind"] == {"no_prediction": 1, "rejected": 1, "runtime": 1, "syntax": 1}
    assert (difficulty["medium"]["cases"], difficulty["medium"]["error_count"]) == (3, 1)
    assert difficulty["medium"]["errors_by_kind"] == {"syntax": 1}


FOLDER_VARIANTS = {
    "a": SCRIPT,
    "b": SCRIPT.split("INSERT INTO t")[0] + """
INSERT INTO t VALUES (1, 3, 1, 0.5, 0.5, '1', 7), (2, 3, 3, 0.5, 0.5, 'b', NULL), (3, 2, 2, 0.25, 1.0, 'a', NULL),
                     (5, 1, 2, 1.0, 2.0, '1.0', 2);
CREATE TABLE u (c1 INTEGER, c2 INTEGER, c3 INTEGER, c4 INTEGER);
INSERT INTO u VALUES (1, 1, 1, 1), (2, 2, 2, 2);
CREATE TABLE v (p INTEGER, q INTEGER, r TEXT);
INSERT INTO v VALUES (3, 4, 'x');
CREATE TABLE e (x INTEGER, y TEXT);
""",
    "c": SCRIPT.split("INSERT INTO t")[0] + """
CREATE TABLE u (c1 INTEGER, c2 INTEGER, c3 INTEGER, c4 INTEGER);
CREATE TABLE v (p INTEGER, q INTEGER, r TEXT);
CREATE TABLE e (x INTEGER, y TEXT);
""",
}

FOLDER_CASES = {  # id: (gold, prediction, official test-suite verdict over a, b and c; verdict on a alone)
    "count-vs-constant": ("SELECT count(*) FROM t", "SELECT 4", False, True),
    "empty-everywhere": ("SELECT a FROM t WHERE 0", "SELECT x FROM e", True, True),
    "distinct-stripped": ("SELECT a FROM t", "SELECT DISTINCT a FROM t", True, True),
    "null-comparison": ("SELECT id FROM t WHERE n IS NULL", "SELECT id FROM t WHERE n = NULL", False, False),
    "latin-square": ("SELECT c1, c2, c3, c4 FROM u", "SELECT c2, c3, c4, c1 FROM u", True, True),
    "max-vs-constant": ("SELECT max(a) FROM t", "SELECT 2", False, True),
    "equal-columns-on-a": ("SELECT p FROM v", "SELECT q FROM v", False, True),
}


def test_test_suite_accuracy_over_a_folder_of_databases(pytester):
    """The official script runs gold and prediction on every `*.sqlite` of the database's folder and scores 1 only
    when all agree. a = the shapes database; b = other rows (4 rows in t, max(a) 3, v = (3, 4, 'x'), u two constant
    rows); c = empty tables.
    count-vs-constant: 4 on a and b, 0 on c -> 0 (a alone: 1). empty-everywhere: no rows anywhere -> 1.
    distinct-stripped: the same query once DISTINCT is cut -> 1. null-comparison: `n = NULL` is never true, gold
    [1, 3] on a -> 0. latin-square: a rotated, b's constant rows rotate onto themselves, c empty -> 1.
    max-vs-constant: 2 on a, 3 on b -> 0. equal-columns-on-a: p and q are equal on a, 3 vs 4 on b -> 0.
    `execution_accuracy` is the verdict on a (first database): all but null-comparison, 6/7; `test_suite_accuracy` 3/7 (official: 3/7)."""
    for name, script in FOLDER_VARIANTS.items():
        make_sqlite(pytester.path / "db" / f"{name}.sqlite", script)
    suite = {"suite": "folder", "databases": "db/*.sqlite", "execution": "test-suite",
             "cases": [{"id": key, "gold": gold, "predicted": pred} for key, (gold, pred, _, _) in FOLDER_CASES.items()]}
    (pytester.path / "folder.sqleval.yaml").write_text(json.dumps(suite), encoding="utf-8")
    report_path = pytester.path / "report.json"
    pytester.runpytest("--sqleval", f"--sqleval-json={report_path}", "-p", "no:cacheprovider")
    report = json.loads(report_path.read_text(encoding="utf-8"))
    cases = {c["id"]: c for c in report["cases"]}
    assert {k: c["execution_match"] for k, c in cases.items()} == {k: v[2] for k, v in FOLDER_CASES.items()}
    assert {k: c["execution_match_first"] for k, c in cases.items()} == {k: v[3] for k, v in FOLDER_CASES.items()}
    metrics = report["suites"][0]["metrics"]
    assert metrics["execution_accuracy"] == pytest.approx(6 / 7)
    assert metrics["test_suite_accuracy"] == pytest.approx(3 / 7)


def test_duckdb_decimals_and_floats_under_each_profile(pytester, duckdb_available):
    """DuckDB returns a DECIMAL as Python's Decimal. d = Decimal('0.10') and Decimal('2.50'); f = the floats.
    - decimal-vs-double: Decimal('0.10') == 0.1 is False in Python (the float is 0.1000000000000000055...), so the
      profiles that compare with == (test-suite's result_eq, BIRD's set, LogicCat's list ==) miss, and their soft
      F1 finds no cell (0); `numbers: value` (mro, sqleval) reads the decimal at a float's precision beside a
      float: match, soft F1 1. bird_soft_f1 is BIRD's own membership test in every profile -> 0.
    - exact-half: Decimal('2.50') == 2.5 is True (2.5 is exact in binary) -> match everywhere, both F1s 1.
    - decimal-one: Decimal('1.00') == 1 -> match everywhere.
    - list cells (`INTEGER[]`): compared by value in every profile, `bird` included (BIRD's set() would raise on a
      list and its execute_model score 0; the README lists this difference), and bird_soft_f1 1."""
    import duckdb

    connection = duckdb.connect(str(pytester.path / "d.duckdb"))
    connection.execute("CREATE TABLE t (id INTEGER, d DECIMAL(10, 2), f DOUBLE, l INTEGER[])")
    connection.execute("INSERT INTO t VALUES (1, 0.10, 0.1, [1, 2]), (2, 2.50, 2.5, [3])")
    connection.close()
    cases_yaml = [
        {"id": "decimal-vs-double", "gold": "SELECT d FROM t WHERE id = 1", "predicted": "SELECT f FROM t WHERE id = 1"},
        {"id": "exact-half", "gold": "SELECT d FROM t WHERE id = 2", "predicted": "SELECT f FROM t WHERE id = 2"},
        {"id": "decimal-one", "gold": "SELECT CAST(1 AS DECIMAL(4, 2))", "predicted": "SELECT 1"},
        {"id": "list-cells", "gold": "SELECT l FROM t ORDER BY id", "predicted": "SELECT l FROM t ORDER BY id"},
    ]
    for profile in PROFILES:
        suite = {"suite": f"duck-{profile}", "database": "d.duckdb", "execution": profile, "cases": cases_yaml}
        (pytester.path / f"duck_{profile}.sqleval.yaml").write_text(json.dumps(suite), encoding="utf-8")
    report_path = pytester.path / "report.json"
    pytester.runpytest("--sqleval", f"--sqleval-json={report_path}", "-p", "no:cacheprovider")
    got = {(c["suite"].removeprefix("duck-"), c["id"]): (c["execution_match"], c["soft_f1"], c["bird_soft_f1"])
           for c in json.loads(report_path.read_text(encoding="utf-8"))["cases"]}
    by_value = {"mro", "sqleval"}
    for profile in PROFILES:
        exact = profile in by_value
        assert got[(profile, "decimal-vs-double")] == (exact, 1.0 if exact else 0.0, 0.0), profile
        assert got[(profile, "exact-half")] == (True, 1.0, 1.0), profile
        assert got[(profile, "decimal-one")] == (True, 1.0, 1.0), profile
        assert got[(profile, "list-cells")] == (True, 1.0, 1.0), profile


# A column of Decimals (DuckDB DECIMAL, PostgreSQL NUMERIC: `avg(int)`, `sum(bigint)`) equals a float or int column
# under Python's == (`Decimal('2.5') == 2.5`, `Decimal('2') == 2`), which the `test-suite` profile uses
# (`numbers: python`). Without a key column in the gold (repeated values in every column) the column search
# fingerprinted a float or int column by (min, max) or its sum and a Decimal column by its cells' hashes, so the two
# never paired and a column permutation the official `result_eq` accepts was a miss.
DECIMAL_CASES = [
    {"id": "decimal-beside-double", "gold": "SELECT f, g FROM t", "predicted": "SELECT g AS x, CAST(f AS DECIMAL(4, 1)) AS y FROM t"},
    {"id": "decimal-beside-int", "gold": "SELECT g, f FROM t", "predicted": "SELECT f AS x, CAST(g AS DECIMAL(4, 0)) AS y FROM t"},
    {"id": "decimal-other-value", "gold": "SELECT f, g FROM t", "predicted": "SELECT g AS x, CAST(f + 1 AS DECIMAL(4, 1)) AS y FROM t"},
]


def _decimal_verdicts(pytester, database) -> dict[tuple[str, str], bool]:
    for profile in ("test-suite", "sqleval", "bird"):
        suite = {"suite": f"dec-{profile}", "database": database, "execution": profile, "cases": DECIMAL_CASES}
        (pytester.path / f"dec_{profile}.sqleval.yaml").write_text(json.dumps(suite), encoding="utf-8")
    report_path = pytester.path / "report.json"
    pytester.runpytest("--sqleval", f"--sqleval-json={report_path}", "-p", "no:cacheprovider")
    return {(c["suite"].removeprefix("dec-"), c["id"]): c["execution_match"]
            for c in json.loads(report_path.read_text(encoding="utf-8"))["cases"]}


EXPECTED_DECIMAL_VERDICTS = {
    ("test-suite", "decimal-beside-double"): True, ("test-suite", "decimal-beside-int"): True,
    ("test-suite", "decimal-other-value"): False,
    ("sqleval", "decimal-beside-double"): True, ("sqleval", "decimal-beside-int"): True,
    ("sqleval", "decimal-other-value"): False,
    ("bird", "decimal-beside-double"): False, ("bird", "decimal-beside-int"): False,
    ("bird", "decimal-other-value"): False,
}


def test_test_suite_matches_a_decimal_column_with_a_float_or_int_column_duckdb(pytester, duckdb_available):
    """t(f DOUBLE, g INTEGER) = (2.5, 1) (2.5, 1) (1.0, 2): no column of distinct values.
    decimal-beside-double: gold (2.5,1)(2.5,1)(1.0,2), prediction (1, 2.5)(1, 2.5)(2, 1.0) with Decimals in the
    second column. Official result_eq: quick_rej sorts (2.5, 1) by str+type to (1, 2.5) and (1, Decimal('2.5')) to
    (1, Decimal('2.5')), equal; the swap permutation gives rows equal under == as a bag -> 1 (it scored 0).
    decimal-beside-int: gold (1, 2.5)(1, 2.5)(2, 1.0), prediction (2.5, Decimal('1'))... -> 1 the same way.
    decimal-other-value: f + 1 -> 3.5, 3.5, 2.0: no permutation -> 0. `sqleval` (`numbers: value`) read the
    Decimals as floats and matched already; `bird` compares positionally: (2.5, 1) is not (1, 2.5) -> 0."""
    import duckdb

    connection = duckdb.connect(str(pytester.path / "d.duckdb"))
    connection.execute("CREATE TABLE t (f DOUBLE, g INTEGER)")
    connection.execute("INSERT INTO t VALUES (2.5, 1), (2.5, 1), (1.0, 2)")
    connection.close()
    assert _decimal_verdicts(pytester, "d.duckdb") == EXPECTED_DECIMAL_VERDICTS


def test_test_suite_matches_a_numeric_column_with_a_float_or_int_column_postgres(pytester, postgres_url):
    """The same three cases on PostgreSQL (float8, integer and NUMERIC casts; psycopg returns NUMERIC as Decimal),
    with the same verdicts and arithmetic as the DuckDB test. The predicted columns are renamed (`AS x`, `AS y`):
    PostgreSQL names a cast after its column, and a mapping by equal names, tried first and verified on the rows,
    hid the bug."""
    (pytester.path / "t.sql").write_text("CREATE TABLE t (f DOUBLE PRECISION, g INTEGER);\n"
                                         "INSERT INTO t VALUES (2.5, 1), (2.5, 1), (1.0, 2);\n", encoding="utf-8")
    assert _decimal_verdicts(pytester, {"url": postgres_url, "setup": ["t.sql"]}) == EXPECTED_DECIMAL_VERDICTS
