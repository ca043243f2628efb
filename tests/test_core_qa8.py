"""QA round 8 on the core plugin (issues 2 and 3): suites saved by other tools, limits set in other places and
summaries of tuned profiles, run through pytester as a user runs them; assertions read the JSON report or the
terminal output."""

from __future__ import annotations

import json
import textwrap

import pytest

from core_support import numbers_shop_fixture, run_report, write

SUITE = """\
database: shop.sqlite
cases:
  - id: größte
    question: Welche Zahl ist die größte?
    gold: SELECT max(n) FROM t
    predicted: SELECT max(n) FROM t
"""


shop = numbers_shop_fixture()


# -- (a) a suite saved as UTF-16 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_suite_saved_with_a_byte_order_mark_is_read(shop, encoding):
    """Windows editors and PowerShell 5's `>` save a suite as UTF-16 with a byte-order mark: it was a collection
    error ("the file is not UTF-8"); it is read as the text it holds, as a UTF-8 file with a BOM is."""
    (shop.path / "s.sqleval.yaml").write_bytes("\ufeff".encode(encoding) + SUITE.encode(encoding))
    result, report = run_report(shop)
    assert result.ret == 0, result.stdout.str()
    (case,) = report["cases"]
    assert (case["id"], case["question"], case["outcome"]) == ("größte", "Welche Zahl ist die größte?", "passed")


def test_a_utf16_suite_reports_its_problems_at_their_line(shop):
    """A mistake in a UTF-16 suite is reported as in any suite: the file, the line and the fix."""
    text = SUITE.replace("    gold: SELECT max(n) FROM t\n", "")
    (shop.path / "s.sqleval.yaml").write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*s.sqleval.yaml:3: *gold*"])
    assert "not UTF-8" not in result.stdout.str()


def test_a_broken_utf16_suite_names_its_encoding(shop):
    """A file whose BOM says UTF-16 but whose bytes are not: the message says so (not "not UTF-8")."""
    (shop.path / "s.sqleval.yaml").write_bytes(b"\xff\xfe" + "cases: []\n".encode("utf-16-le") + b"\x00\xd8")
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        ["*s.sqleval.yaml:*the file is not UTF-16, as its byte-order mark says*", "*fix: save the suite as UTF-8*"]
    )


# -- (c) the row cap's hint names every place the cap is set -----------------------------------------------------

ALL_ROWS = """
    database: shop.sqlite
    cases:
      - id: all-rows
        gold: SELECT n FROM t WHERE n < 2
        predicted: SELECT n FROM t
    """


@pytest.mark.parametrize("where", ["ini", "suite"])
def test_the_row_cap_hint_names_the_place_the_cap_was_set(shop, where):
    """A cap set by the ini option `sqleval_max_rows` (or the suite's `max_rows:`) said "raise it with
    --sqleval-max-rows" only: an option the user never gave. The hint names the place the cap was set."""
    if where == "ini":
        shop.makeini("[pytest]\nsqleval_max_rows = 3\n")
        write(shop, "s.sqleval.yaml", ALL_ROWS)
        named = "the ini option sqleval_max_rows"
    else:
        write(shop, "s.sqleval.yaml", "max_rows: 3\n" + textwrap.dedent(ALL_ROWS).lstrip())
        named = "the suite's `max_rows:`"
    _, report = run_report(shop)
    (case,) = report["cases"]
    assert case["error"]["kind"] == "row_limit"
    assert "returned more than 3 rows" in case["error"]["message"]
    assert named in case["error"]["message"]
    assert "--sqleval-max-rows" in case["error"]["message"]


# -- (b) float_decimals written as text ----------------------------------------------------------------------------


def test_a_quoted_float_decimals_is_named_as_text_with_the_unquoted_fix(shop):
    """`float_decimals: "2"` (quoted, so text) said "must be null or a whole number" and suggested `float_decimals:
    2` as if the user had not written 2: the message says the value is text and the fix drops the quotes."""
    write(
        shop,
        "s.sqleval.yaml",
        """
        database: shop.sqlite
        execution: {profile: sqleval, float_decimals: "2"}
        cases:
          - id: a
            gold: SELECT max(n) FROM t
            predicted: SELECT max(n) FROM t
        """,
    )
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            "*s.sqleval.yaml:2: float_decimals must be a whole number >= 0 (or null), not the text '2'",
            "*fix: write `float_decimals: 2` without quotes (a quoted number is text)",
        ]
    )


# -- the summary names a profile's overridden options ----------------------------------------------------------


def test_the_summary_line_shows_the_options_a_suite_overrides(shop):
    """`execution: {profile: bird, duplicates: bag}` compares bags, not BIRD's sets, yet the summary said
    "execution profile bird": a reader took the suite's scores for BIRD's. The options that differ from the
    profile's are shown beside its name; an override equal to the profile's own value is not."""
    write(
        shop,
        "tuned.sqleval.yaml",
        """
        database: shop.sqlite
        execution: {profile: bird, duplicates: bag, float_decimals: 0, columns: positional}
        cases:
          - id: a
            gold: SELECT n FROM t
            predicted: SELECT n FROM t
        """,
    )
    write(
        shop,
        "plain.sqleval.yaml",
        """
        database: shop.sqlite
        execution: bird
        cases:
          - id: a
            gold: SELECT n FROM t
            predicted: SELECT n FROM t
        """,
    )
    result, report = run_report(shop)
    assert result.ret == 0
    result.stdout.fnmatch_lines_random(
        [
            "*1 case: 1 passed | execution profile bird (duplicates: bag, float_decimals: 0) | exact match*",
            "*1 case: 1 passed | execution profile bird | exact match*",
        ]
    )
    tuned = next(s for s in report["suites"] if s["name"] == "tuned")
    assert (tuned["execution"]["profile"], tuned["execution"]["duplicates"]) == ("bird", "bag")


# -- pass_if: operators of other languages ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "rule, says",
    [
        ("soft_f1 = 1", "'=' is not an operator of pass_if (its operators are >=, >, <=, <, ==); write 'soft_f1 == 1'"),
        (
            "soft_f1=>0.8",
            "'=>' is not an operator of pass_if (its operators are >=, >, <=, <, ==); write 'soft_f1 >= 0.8'",
        ),
        ("soft_f1 =< 0.5", "'=<' is not an operator of pass_if *; write 'soft_f1 <= 0.5'"),
        ("soft_f1 != 1", "'!=' is not an operator of pass_if *; pass_if has no 'not equal'*"),
        ("execution_match = true", "'=' is not an operator of pass_if *; write 'execution_match' alone*"),
    ],
)
def test_pass_if_names_an_operator_it_does_not_take(shop, rule, says):
    """`pass_if: soft_f1 = 1` (SQL's equality) or `soft_f1 => 0.8` said "soft_f1 is a score: compare it, e.g.
    'soft_f1 >= 0.8'", to a user who did compare it: the message names the operator written and the one to use."""
    write(
        shop,
        "s.sqleval.yaml",
        f"""
        database: shop.sqlite
        pass_if: "{rule}"
        cases:
          - id: a
            gold: SELECT n FROM t
            predicted: SELECT n FROM t
        """,
    )
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret != 0
    result.stdout.fnmatch_lines([f"*s.sqleval.yaml:2: bad pass_if: {says}"])
    assert "is a score: compare it" not in result.stdout.str()


# -- predictions that address a turn otherwise ---------------------------------------------------------------------

CONVERSATION = """
    database: shop.sqlite
    cases:
      - id: conv
        interaction:
          - {question: all, gold: "SELECT n FROM t"}
          - {question: big, gold: "SELECT n FROM t WHERE n > 3"}
    """


@pytest.mark.parametrize(
    "written, hint",
    [
        ("conv[2]", "(conv[2] is the test item's id: the prediction's id is conv/2)"),
        ("conv/0", "(turns are counted from 1: the first turn of conv is conv/1)"),
        ("conv", "(conv is an interaction: give each turn a line of its own (conv/1, conv/2, ...))"),
    ],
)
def test_a_prediction_addressing_a_turn_otherwise_says_how_to_address_it(shop, written, hint):
    """A turn's prediction is `<interaction>/<n>`, counted from 1. The test item's id `conv[2]` (what pytest
    prints), SParC's 0-based count or the interaction's id were reported only as "match no collected case" with
    the generic fix: the message says what the id written is and which id to write."""
    write(shop, "s.sqleval.yaml", CONVERSATION)
    (shop.path / "p.jsonl").write_text(json.dumps({"id": written, "sql": "SELECT n FROM t"}) + "\n", encoding="utf-8")
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval", "--sqleval-predictions", "p.jsonl")
    assert result.ret != 0
    assert f"p.jsonl: 1 prediction id(s) match no collected case: {written} (line 1) {hint}\n" in result.stdout.str()


# -- exact set match (profile sqleval): OFFSET 0 --------------------------------------------------------------------


@pytest.mark.parametrize(
    "predicted, match",
    [
        ("SELECT n FROM t ORDER BY n LIMIT 2 OFFSET 0", True),
        ("SELECT n FROM t ORDER BY n LIMIT 0, 2", True),
    ],
)
def test_sqleval_exact_match_reads_offset_0_as_no_offset(shop, predicted, match):
    """`LIMIT 2 OFFSET 0` skips no row: it is the gold's `LIMIT 2`, as the results say, yet the sqleval profile
    (Spider's decomposition without its shortcuts) reported "clauses differ: limit"."""
    write(
        shop,
        "s.sqleval.yaml",
        f"""
        database: shop.sqlite
        exact_match: sqleval
        cases:
          - id: a
            gold: SELECT n FROM t ORDER BY n LIMIT 2
            predicted: {predicted}
        """,
    )
    _, report = run_report(shop)
    (case,) = report["cases"]
    assert case["exact_match"] is match
    assert case["clauses"]["limit"] is match


# -- thresholds written as percentages ---------------------------------------------------------------------------


def test_a_threshold_written_as_a_percentage_gets_the_share_as_its_fix(shop):
    """`execution_accuracy: 60%` (how a dashboard shows the rate) was refused with the generic fix
    ("write `metric: number`, e.g. `execution_accuracy: 0.6`"): the fix is the share the user meant."""
    write(
        shop,
        "s.sqleval.yaml",
        """
        database: shop.sqlite
        thresholds: {execution_accuracy: 40%}
        cases:
          - id: a
            gold: SELECT n FROM t
            predicted: SELECT n FROM t
        """,
    )
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            "*s.sqleval.yaml:2: threshold for execution_accuracy must be a number, not '40%'",
            "  fix: write the rate as a share from 0 to 1: `execution_accuracy: 0.4`",
        ]
    )


def test_a_percentage_threshold_on_the_command_line_gets_the_share_as_its_fix(shop):
    write(shop, "s.sqleval.yaml", ALL_ROWS)
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval", "--sqleval-threshold", "soft_f1=80%")
    assert result.ret != 0
    assert "(write the rate as a share from 0 to 1: soft_f1=0.8)" in result.stderr.str()


# -- a miss's rows: a hidden difference beside a visible one -----------------------------------------------------


def test_a_miss_shows_the_type_of_a_cell_that_prints_like_the_gold_beside_a_visible_difference(shop):
    """The rows of a miss are shown typed (text quoted) when a row of one side would print like a row of the other.
    A row that also differs visibly in another column was shown untyped: `(2, 1)` against `(3, 1)` hid that the
    prediction's second column is the text '1', not the number 1, so fixing the first column would not be enough."""
    write(
        shop,
        "s.sqleval.yaml",
        """
        database: shop.sqlite
        cases:
          - id: two-differences
            gold: SELECT 2, 1
            predicted: SELECT 3, '1'
        """,
    )
    result, report = run_report(shop, "-v")
    (case,) = report["cases"]
    assert case["execution_match"] is False
    result.stdout.fnmatch_lines(["*rows only in gold:       (2, 1)", "*rows only in prediction: (3, '1')"])


# -- the exact-match options a suite changed are recorded -------------------------------------------------------


@pytest.mark.parametrize(
    "written, shown",
    [
        ("{profile: sqleval, values: ignore}", "sqleval (values: ignore)"),
        ("{profile: spider, value_placeholder: true}", "spider (value_placeholder: true)"),
    ],
)
def test_the_report_and_the_summary_name_the_exact_match_options_a_suite_changed(shop, written, shown):
    """`exact_match: {profile: sqleval, values: ignore}` scores `shop = 'A'` against `shop = 'B'` as a match, yet
    the report's `exact_match_profile` and the summary said "sqleval": nothing in the report told its exact-match
    figures from the profile's own (a baseline or a merge of two such reports compared them as alike)."""
    write(
        shop,
        "s.sqleval.yaml",
        f"""
        database: shop.sqlite
        exact_match: {written}
        pass_if: exact_match
        cases:
          - id: a
            gold: SELECT n FROM t WHERE n > 1
            predicted: SELECT n FROM t WHERE n > 2
        """,
    )
    result, report = run_report(shop)
    (suite,) = report["suites"]
    assert suite["exact_match_profile"] == shown
    result.stdout.fnmatch_lines([f"*| exact match {shown} | pass_if exact_match"])
