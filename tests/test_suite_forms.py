"""Suite forms: several accepted golds, expected rows, shape checks, a SQL policy, exact_match(clauses)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import make_sqlite
from pytest_sqleval.errors import SuiteError
from pytest_sqleval.loader import load_suite

APP_SQL = """
CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tenant_id INTEGER);
CREATE TABLE tickets (id INTEGER PRIMARY KEY, shop_id INTEGER, aircraft TEXT, status TEXT, tenant_id INTEGER);
INSERT INTO shops VALUES (1, 'Avionics', 42), (2, 'Engines', 42), (3, 'Cabin', 7);
INSERT INTO tickets VALUES (1, 1, '9V-SMA', 'open', 42), (2, 1, '9V-SMB', 'closed', 42),
                           (3, 2, '9V-SMA', 'closed', 42), (4, 3, '9V-SMC', 'open', 7);
"""

SUITE = """
suite: forms
database: shop.sqlite
pass_if: execution_match and policy
policy: {tables: [tickets, shops], require_filter: "tenant_id = 42"}
cases:
  - id: second-gold
    gold:
      - SELECT name FROM shops WHERE tenant_id = 42
      - SELECT name, id FROM shops WHERE tenant_id = 42
    predicted: SELECT id, name FROM shops WHERE tenant_id = 42
  - id: no-gold-matches
    gold:
      - SELECT name FROM shops WHERE tenant_id = 42 AND id = 1
      - SELECT name, id FROM shops WHERE tenant_id = 42
    predicted: SELECT name FROM shops WHERE tenant_id = 42
  - id: expected-rows
    expected: {columns: [status, n], rows: [[open, 1], [closed, 2]]}
    predicted: SELECT status, count(*) AS n FROM tickets WHERE tenant_id = 42 GROUP BY status
    expect_columns: [status, n]
    expect_rows: 2
  - id: expected-rows-miss
    expected: {columns: [n], rows: [[3]]}
    predicted: SELECT count(*) FROM tickets WHERE tenant_id = 42 AND status = 'open'
  - id: shape-miss
    expected: {columns: [n], rows: [[3]]}
    predicted: SELECT count(*) AS n FROM tickets WHERE tenant_id = 42
    expect_columns: [total]
    expect_rows: 2
  - id: policy-miss
    gold: SELECT count(*) FROM tickets WHERE tenant_id = 42
    predicted: SELECT count(*) FROM tickets WHERE tenant_id = 42 OR 1 = 0
  - id: own-policy
    gold: SELECT count(*) FROM tickets WHERE tenant_id = 42
    predicted: SELECT count(*) FROM tickets WHERE tenant_id = 42
    policy: {tables: [shops]}
  - id: no-prediction
    gold: SELECT 1
"""


@pytest.fixture
def forms(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite", APP_SQL)
    pytester.makefile(".sqleval.yaml", forms=textwrap.dedent(SUITE))
    return pytester


def run_json(pytester: pytest.Pytester, *args: str, subprocess: bool = False):
    report = pytester.path / "report.json"
    runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = runner("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    data = json.loads(report.read_text()) if report.exists() else None
    return result, data


def by_id(data) -> dict:
    return {c["id"]: c for c in data["cases"]}


def test_suite_forms_scored_and_recorded(forms):
    result, data = run_json(forms, "-v")
    result.stdout.fnmatch_lines(["*8 cases: 2 passed, 6 missed*pass_if execution_match and policy*"])
    cases = by_id(data)

    # several golds: the second one matches, and is the one that scores
    second = cases["second-gold"]
    assert second["outcome"] == "passed" and second["execution_match"] is True and second["soft_f1"] == 1.0
    assert second["gold_index"] == 1 and second["golds"][1] == "SELECT name, id FROM shops WHERE tenant_id = 42"
    assert second["gold_scores"][0] == {"execution_match": False, "soft_f1": pytest.approx(2 / 3)}
    # exact set match: the select list is a set, so gold 2 matches (any accepted gold may)
    assert second["exact_match"] is True and second["exact_match_gold_index"] == 1
    assert second["clause_sets"][0]["select"] is False and second["clause_sets"][1]["select"] is True

    # no gold matches: soft F1 is the best of the two (gold 2: P = 1, R = 1/2 -> 2/3; gold 1: P = 1/2, R = 1 -> 2/3)
    none = cases["no-gold-matches"]
    assert none["outcome"] == "missed" and none["execution_match"] is False
    assert none["soft_f1"] == pytest.approx(2 / 3) and none["gold_index"] == 0
    assert none["mismatch"]["reason"] == "row_count"

    # expected rows instead of a gold query; exact match is not computed
    rows = cases["expected-rows"]
    assert rows["outcome"] == "passed" and rows["execution_match"] is True and rows["gold"] is None
    assert rows["expected"] == {"columns": ["status", "n"], "row_count": 2, "rows": [["open", 1], ["closed", 2]]}
    assert rows["exact_match"] is None and rows["exact_match_reason"] == "not computed: the case gives expected rows"
    assert rows["shape"] == {"passed": True, "violations": []}

    miss = cases["expected-rows-miss"]
    assert miss["outcome"] == "missed" and miss["soft_f1"] == 0.0
    assert miss["mismatch"]["gold_only_rows"] == [[3]] and miss["mismatch"]["predicted_only_rows"] == [[1]]

    # shape checks: the result matches, the shape does not -> a miss, each violation listed
    shape = cases["shape-miss"]
    assert shape["execution_match"] is True and shape["outcome"] == "missed"
    assert shape["shape"] == {"passed": False, "violations": [
        "returned columns ['n'], expected ['total'] (in this order)", "returned 1 row(s), expected 2"]}

    # the suite's policy, as a pass_if term
    policy = cases["policy-miss"]
    assert policy["execution_match"] is True and policy["outcome"] == "missed"
    assert policy["policy"]["passed"] is False
    assert policy["policy"]["violations"] == [
        "reads 'tickets' without the required filter `tenant_id = 42` (no top-level AND term of its WHERE equals it): "
        "SELECT COUNT(*) FROM tickets WHERE tenant_id = 42 OR 1 = 0"]
    assert cases["second-gold"]["policy"] == {"passed": True, "violations": []}

    # a case's own policy replaces the suite's
    own = cases["own-policy"]
    assert own["outcome"] == "missed"
    assert own["policy"]["violations"] == ["reads table 'tickets', which the policy does not allow (allowed: shops)"]

    nothing = cases["no-prediction"]
    assert nothing["policy"] == {"passed": False, "violations": ["there is no prediction to check"]}
    # the summary's metrics count the new forms like any case
    metrics = data["suites"][0]["metrics"]
    assert metrics["execution_accuracy"] == pytest.approx(5 / 8)
    assert metrics["pass_rate"] == pytest.approx(2 / 8)


def test_serial_and_parallel_reports_agree(forms):
    _, serial = run_json(forms, "-q")
    (forms.path / "report.json").unlink()
    result, parallel = run_json(forms, "-q", "-n", "2", subprocess=True)
    result.stdout.fnmatch_lines(["*2 passed, 6 missed*"])
    for record in serial["cases"] + parallel["cases"]:
        record.pop("duration", None)
    key = lambda c: c["id"]  # noqa: E731
    assert sorted(serial["cases"], key=key) == sorted(parallel["cases"], key=key)
    assert serial["suites"][0]["metrics"] == parallel["suites"][0]["metrics"]


def test_policy_is_enforced_without_being_named_in_pass_if(pytester):
    make_sqlite(pytester.path / "shop.sqlite", APP_SQL)
    pytester.makefile(".sqleval.yaml", p=textwrap.dedent("""
        database: shop.sqlite
        cases:
          - id: leaks
            gold: SELECT count(*) FROM tickets WHERE tenant_id = 42
            predicted: SELECT count(*) FROM tickets WHERE 42 = tenant_id
            policy: {forbid_columns: [aircraft], require_filter: "tenant_id = 42"}
          - id: forbidden
            gold: SELECT aircraft FROM tickets WHERE tenant_id = 42
            predicted: SELECT aircraft FROM tickets WHERE tenant_id = 42
            policy: {forbid_columns: [aircraft]}
          - id: or-policy
            gold: SELECT 1
            predicted: SELECT 2
            policy: {tables: []}
    """))
    result, data = run_json(pytester)
    cases = by_id(data)
    assert cases["leaks"]["outcome"] == "passed"
    assert cases["forbidden"]["outcome"] == "missed"
    assert cases["forbidden"]["policy"]["violations"] == ["uses forbidden column 'aircraft' (aircraft)"]
    assert cases["or-policy"]["policy"]["passed"] is True  # SELECT 2 reads no table


def test_pass_if_exact_match_on_a_clause_subset(pytester):
    make_sqlite(pytester.path / "shop.sqlite", APP_SQL)
    pytester.makefile(".sqleval.yaml", em=textwrap.dedent("""
        database: shop.sqlite
        pass_if: exact_match(select, where)
        cases:
          - id: order-differs
            gold: SELECT name FROM shops WHERE tenant_id = 42 ORDER BY name
            predicted: SELECT name FROM shops WHERE tenant_id = 42
          - id: where-differs
            gold: SELECT name FROM shops WHERE tenant_id = 42
            predicted: SELECT name FROM shops WHERE tenant_id = 7
          - id: any-gold
            gold: [SELECT id FROM shops, SELECT name FROM shops WHERE id = 1 LIMIT 1]
            predicted: SELECT name FROM shops WHERE id = 1
    """))
    result, data = run_json(pytester)
    result.stdout.fnmatch_lines(["*pass_if exact_match(select, where)*"])
    cases = by_id(data)
    assert cases["order-differs"]["outcome"] == "passed" and cases["order-differs"]["exact_match"] is False
    assert cases["order-differs"]["clauses"]["order"] is False
    assert cases["where-differs"]["outcome"] == "missed"
    assert cases["any-gold"]["outcome"] == "passed"  # gold 2's select and where match; its LIMIT does not
    assert cases["any-gold"]["clause_sets"][0]["select"] is False
    assert cases["any-gold"]["exact_match_gold_index"] == 1


def test_expected_rows_cases_under_gold_checks(forms):
    result = forms.runpytest("--sqleval", "--sqleval-check-gold", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*gold queries checked: 0 broken*"])
    assert result.ret == 0


# --------------------------------------------------------------------------- the loader
def test_unknown_clause_is_a_collection_error_naming_the_valid_ones(pytester):
    make_sqlite(pytester.path / "shop.sqlite", APP_SQL)
    pytester.makefile(".sqleval.yaml", bad=textwrap.dedent("""
        database: shop.sqlite
        pass_if: exact_match(select, wher)
        cases:
          - id: a
            gold: SELECT 1
    """))
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([
        "*bad.sqleval.yaml:2: bad pass_if: unknown clause 'wher' in exact_match(...); valid clauses: select, "
        "select_no_agg, where, where_no_op, group_no_having, group, order, and_or, iuen, keywords, from, join_on, "
        "limit, distinct",
        "*fix: write e.g. `pass_if: execution_match`, `pass_if: soft_f1 >= 0.8`, `pass_if: execution_match and policy` "
        "or `pass_if: exact_match(select, where)`",
    ])
    assert result.ret != 0


def load(tmp_path: Path, body: str) -> SuiteError:
    make_sqlite(tmp_path / "shop.sqlite", APP_SQL)
    path = tmp_path / "s.sqleval.yaml"
    path.write_text("database: shop.sqlite\n" + textwrap.dedent(body).lstrip(), encoding="utf-8")
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    return info.value


@pytest.mark.parametrize("body, line, message, fix", [
    ("""
     cases:
       - id: a
         gold: SELECT 1
         expected: {rows: [[1]]}
     """, 5, "'a' has both `gold:` and `expected:`", "give the gold SQL or the expected rows, not both"),
    ("""
     cases:
       - id: a
         expected: {columns: [x, y], rows: [[1, 2], [3]]}
     """, 4, "expected row 2 of 'a' has 1 values, not 2", "every row has one value per column"),
    ("""
     cases:
       - id: a
         expected: {column: [x], rows: [[1]]}
     """, 4, "unknown key 'column' in expected of 'a'", "did you mean `columns`?"),
    ("""
     cases:
       - id: a
         expected: [[1]]
     """, 4, "`expected:` of 'a' must be a mapping with `rows:` (and `columns:`)", "write `expected: {columns:"),
    ("""
     cases:
       - id: a
         expected: {columns: [x]}
     """, 4, "the expected rows of 'a' have no `rows:`", "write `expected:"),
    ("""
     cases:
       - id: a
         gold: []
     """, 4, "`gold:` of 'a' is an empty list", "list the accepted gold queries"),
    ("""
     cases:
       - id: a
         gold:
           - SELECT 1
           - 42
     """, 6, "gold #2 of 'a' must be SQL text, not 42", "each accepted gold is a SQL string"),
    ("""
     cases:
       - id: a
         gold: SELECT 1
         expect_rows: -1
     """, 5, "`expect_rows:` of 'a' must be a whole number of rows (0 or more), not -1", "write e.g. `expect_rows: 3`"),
    ("""
     cases:
       - id: a
         gold: SELECT 1
         expect_columns: {a: 1}
     """, 5, "`expect_columns:` of 'a' must be a list of column names or a number of columns",
     "write `expect_columns: [shop, n]` or `expect_columns: 2`"),
    ("""
     cases:
       - id: a
         gold: SELECT 1
         expect_row: 2
     """, 5, "unknown key 'expect_row' in case #1", "did you mean `expect_rows`?"),
    ("""
     cases:
       - id: a
         gold: SELECT 1
         policy: {table: [tickets]}
     """, 5, "unknown key 'table' in policy", "did you mean `tables`?"),
    ("""
     policy: {require_filter: "SELECT 1"}
     cases:
       - id: a
         gold: SELECT 1
     """, 2, "bad policy: require_filter 'SELECT 1' must be a predicate on a column",
     "write e.g. `policy: {tables: [tickets, shops], forbid_columns: [ssn], require_filter: \"tenant_id = 42\"}`"),
    ("""
     cases:
       - id: a
         gold: SELECT 1
         policy: [tickets]
     """, 5, "bad policy: a policy is a mapping", "write e.g. `policy:"),
    ("""
     exact_match: spider
     pass_if: exact_match(select, limit)
     cases:
       - id: a
         gold: SELECT 1
     """, 3, "bad pass_if: the spider exact-match profile has no clause 'limit'", "use the spider clauses"),
    ("""
     pass_if: exact_match
     cases:
       - id: a
         expected: {rows: [[1]]}
     """, 5, "'a' has `expected:` rows, so the suite's pass_if `exact_match` cannot be computed",
     "give this case `gold:` SQL, or use a pass_if without exact_match"),
    ("""
     pass_if: soft_f1(select)
     cases:
       - id: a
         gold: SELECT 1
     """, 2, "bad pass_if: only exact_match takes a clause list", "write e.g."),
    ("""
     cases:
       - id: a
         interaction:
           - gold: SELECT 1
             expected: {rows: [[1]]}
     """, 6, "'a/1' has both `gold:` and `expected:`", "not both"),
    ("""
     cases:
       - id: a
         expected: {rows: [[1]]}
         interaction:
           - gold: SELECT 1
     """, 4, "case 'a' has both `interaction:` and `expected:`", "put `expected:` inside each turn"),
])
def test_loader_errors_name_the_line_and_the_fix(tmp_path, body, line, message, fix):
    error = load(tmp_path, body)
    assert error.line == line, error.render()
    assert message in error.message, error.render()
    assert fix in error.fix, error.render()


def test_loaded_forms(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite", APP_SQL)
    path = tmp_path / "s.sqleval.yaml"
    path.write_text(textwrap.dedent("""
        database: shop.sqlite
        policy: {tables: [shops]}
        cases:
          - id: a
            gold: [SELECT 1, SELECT 2]
            expect_columns: 1
          - id: b
            expected: {rows: [[1, x], [2, null]], ordered: true}
            expect_rows: 0
            policy: {forbid_columns: [ssn]}
          - id: c
            interaction:
              - gold: SELECT 1
    """), encoding="utf-8")
    suite = load_suite(path)
    a, b, c = suite.cases
    assert a.gold == "SELECT 1" and a.accepted_golds == ("SELECT 1", "SELECT 2") and a.expect_columns == 1
    assert a.policy.tables == ("shops",) and c.policy.tables == ("shops",)
    assert b.gold == "" and b.accepted_golds == () and b.expected.columns == ("c0", "c1")
    assert b.expected.rows == ((1, "x"), (2, None)) and b.expected.ordered is True and b.expect_rows == 0
    assert b.policy.forbid_columns == ("ssn",) and b.policy.tables is None


def test_interaction_turns_take_the_same_forms(pytester):
    make_sqlite(pytester.path / "shop.sqlite", APP_SQL)
    pytester.makefile(".sqleval.yaml", chat=textwrap.dedent("""
        database: shop.sqlite
        cases:
          - id: chat
            policy: {require_filter: "tenant_id = 42"}
            interaction:
              - question: Which shops?
                gold:
                  - SELECT name FROM shops WHERE tenant_id = 42
                  - SELECT id, name FROM shops WHERE tenant_id = 42
                predicted: SELECT id, name FROM shops WHERE tenant_id = 42
              - question: How many of them?
                expected: {columns: [n], rows: [[2]]}
                expect_rows: 1
                predicted: SELECT count(*) FROM shops WHERE tenant_id = 42
              - question: And their tickets?
                gold: SELECT count(*) FROM tickets WHERE tenant_id = 42
                predicted: SELECT count(*) FROM tickets
                policy: {tables: [tickets]}
    """))
    result, data = run_json(pytester)
    cases = by_id(data)
    assert cases["chat/1"]["outcome"] == "passed" and cases["chat/1"]["gold_index"] == 1
    assert cases["chat/2"]["outcome"] == "passed" and cases["chat/2"]["shape"]["passed"] is True
    # the turn's own policy replaces the interaction's: no tenant filter required, but the results differ
    assert cases["chat/3"]["policy"] == {"passed": True, "violations": []}
    assert cases["chat/3"]["outcome"] == "missed" and cases["chat/3"]["mismatch"]["reason"] == "values"
