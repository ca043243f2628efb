"""--sqleval-check-gold: one finding per problem, exit status non-zero only for broken golds."""

from __future__ import annotations

import textwrap

import pytest

from conftest import make_sqlite

SUITE = """
database: shop.sqlite
cases:
  - {id: fine, gold: "SELECT name FROM shops ORDER BY id"}
  - {id: nothing, gold: "SELECT name FROM shops WHERE id > 100"}
  - {id: single-null, gold: "SELECT max(hours) FROM tickets WHERE id > 100"}
  - {id: zero, gold: "SELECT count(*) FROM tickets WHERE id > 100"}
  - {id: unordered-limit, gold: "SELECT aircraft FROM tickets LIMIT 2"}
  - {id: tie-at-cut, gold: "SELECT aircraft, hours FROM tickets ORDER BY hours DESC LIMIT 3"}
  - {id: no-tie, gold: "SELECT aircraft, hours FROM tickets ORDER BY hours DESC LIMIT 2"}
  - {id: hidden-tie, gold: "SELECT id FROM tickets ORDER BY hours DESC LIMIT 3"}
  - {id: big, gold: "SELECT * FROM tickets"}
"""
# hours: 2.5, 4.0, 8.0, 1.5, 3.0, 3.0 -> descending 8.0, 4.0, 3.0, 3.0, ...: a tie between rows 3 and 4


@pytest.fixture
def gold_suite(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", gold=textwrap.dedent(SUITE))
    return pytester


def run(pytester, *args):
    report = pytester.path / "r.json"
    result = pytester.runpytest("--sqleval", "--sqleval-check-gold", f"--sqleval-json={report}", "-p",
                                "no:cacheprovider", *args)
    return result


def findings(pytester, *args):
    result = run(pytester, "--sqleval-gold-size=5", *args)
    by_case = {}
    for line in result.stdout.lines:
        if line.startswith(("warning ", "BROKEN ")):
            _, rest = line.split(" ", 1)
            case, kind = rest.split(": ", 2)[:2]
            by_case.setdefault(case, []).append(kind)
    return result, by_case


def test_each_finding(gold_suite):
    result, by_case = findings(gold_suite)
    assert by_case == {
        "nothing": ["empty"],
        "single-null": ["single_null"],
        "zero": ["single_zero"],
        "unordered-limit": ["limit_without_order"],
        "tie-at-cut": ["ties_at_limit"],
        "hidden-tie": ["ties_at_limit"],
        "big": ["large"],
    }
    assert result.ret == pytest.ExitCode.OK  # warnings only
    assert result.parseoutcomes() == {"passed": 2, "flagged": 7}
    result.stdout.fnmatch_lines(["*9 gold queries checked: 0 broken, 7 with warnings*"])


def test_broken_golds_fail_the_run(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", gold=textwrap.dedent("""
        database: shop.sqlite
        cases:
          - {id: fine, gold: "SELECT 1"}
          - {id: fails, gold: "SELECT nope FROM shops"}
          - {id: unstable, gold: "SELECT random()"}
    """))
    result = run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"passed": 1, "failed": 1, "errors": 1}
    result.stdout.fnmatch_lines(["*BROKEN fails: the gold query failed*no such column: nope*"])
    result.stdout.fnmatch_lines(["*BROKEN unstable: unstable: two runs of the gold returned different results*"])


def test_check_gold_ignores_predictions_and_gates(gold_suite):
    (gold_suite.path / "gold.sqleval.yaml").write_text(
        textwrap.dedent(SUITE).replace("database: shop.sqlite", "database: shop.sqlite\nthresholds: {execution_accuracy: 1.0}")
    )
    result = run(gold_suite, "-k", "fine")
    assert result.ret == pytest.ExitCode.OK
    assert "FAIL" not in result.stdout.str()


def test_every_accepted_gold_is_checked(pytester):
    """`gold: [sql1, sql2]`: the second gold's findings are reported too, each naming which gold it is about."""
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", golds=textwrap.dedent("""
        database: shop.sqlite
        cases:
          - id: second-vacuous
            gold: ["SELECT name FROM shops ORDER BY id", "SELECT name FROM shops WHERE id > 100"]
          - id: both-limited
            gold: ["SELECT aircraft FROM tickets LIMIT 2", "SELECT aircraft, hours FROM tickets ORDER BY hours DESC LIMIT 3"]
          - id: one-gold
            gold: "SELECT name FROM shops WHERE id > 100"
    """))
    result = run(pytester)
    result.stdout.fnmatch_lines([
        "*second-vacuous: empty*gold #2: returns no rows*",
        "*both-limited: limit_without_order*gold #1: LIMIT 2 without ORDER BY*",
        "*both-limited: ties_at_limit*gold #2: *",
    ])
    assert not [line for line in result.stdout.lines if "second-vacuous" in line and "gold #1" in line]
    one = [line for line in result.stdout.lines if line.startswith("warning one-gold")]
    assert one and "gold #" not in one[0]
    assert result.ret == 0


def test_unordered_cuts_beyond_a_top_level_limit(pytester, duckdb_available):
    """FETCH FIRST (the standard LIMIT), OFFSET alone and a LIMIT in a subquery or CTE, all without ORDER BY, keep
    rows the engine picks; a LIMIT under EXISTS, on a single aggregate row, or LIMIT 0 does not."""
    (pytester.path / "schema.sql").write_text(
        "CREATE TABLE t (id INTEGER, grp VARCHAR, v INTEGER);\n"
        "INSERT INTO t VALUES (1, 'a', 5), (2, 'a', 5), (3, 'b', 7), (4, 'c', 9);\n")
    pytester.makefile(".sqleval.yaml", cuts=textwrap.dedent("""
        database: {url: "duckdb://", setup: [schema.sql]}
        cases:
          - {id: fetch, gold: "SELECT id FROM t FETCH FIRST 2 ROWS ONLY"}
          - {id: offset, gold: "SELECT id FROM t OFFSET 1"}
          - {id: in-sub, gold: "SELECT id FROM t WHERE id IN (SELECT id FROM t LIMIT 2) ORDER BY id"}
          - {id: cte, gold: "WITH x AS (SELECT id FROM t LIMIT 2) SELECT id FROM x ORDER BY id"}
          - {id: fetch-tie, gold: "SELECT id FROM t ORDER BY v FETCH FIRST 1 ROWS ONLY"}
          - {id: with-ties, gold: "SELECT id FROM t ORDER BY v FETCH FIRST 1 ROWS WITH TIES"}
          - {id: exists, gold: "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM t u WHERE u.v > t.v LIMIT 1) ORDER BY id"}
          - {id: agg, gold: "SELECT id FROM t WHERE v = (SELECT max(v) FROM t LIMIT 1)"}
          - {id: none, gold: "SELECT id FROM t LIMIT 0"}
    """))
    result, by_case = findings(pytester)
    assert by_case == {
        "fetch": ["limit_without_order"],
        "offset": ["limit_without_order"],
        "in-sub": ["limit_without_order"],
        "cte": ["limit_without_order"],
        "fetch-tie": ["ties_at_limit"],
        "none": ["empty"],
    }
    result.stdout.fnmatch_lines(["*fetch: limit_without_order: FETCH FIRST 2 ROWS ONLY without ORDER BY*",
                                 "*offset: limit_without_order: OFFSET 1 without ORDER BY*",
                                 "*in-sub: limit_without_order: LIMIT 2 without ORDER BY in a subquery*"])
    assert result.ret == pytest.ExitCode.OK


def test_a_gold_drawing_random_values_is_unstable_even_when_two_runs_agree(pytester):
    """Two runs of `ORDER BY random() LIMIT 1` can agree by chance (always, on one row): the draw itself is the
    finding, so the check does not depend on luck."""
    import sqlite3

    conn = sqlite3.connect(pytester.path / "one.sqlite")
    conn.executescript("CREATE TABLE t (id INTEGER, name TEXT); INSERT INTO t VALUES (1, 'a');")
    conn.close()
    pytester.makefile(".sqleval.yaml", rnd=textwrap.dedent("""
        database: one.sqlite
        cases:
          - {id: coin, gold: "SELECT name FROM t ORDER BY random() LIMIT 1"}
          - {id: plain, gold: "SELECT name FROM t ORDER BY id LIMIT 1"}
    """))
    result, by_case = findings(pytester)
    assert by_case == {"coin": ["unstable"]}
    result.stdout.fnmatch_lines(["*BROKEN coin: unstable: its result depends on a random value (RANDOM())*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_single_false_is_flagged_as_sqlite_s_single_0_is(pytester, duckdb_available):
    """`SELECT count(*) > 5 FROM t` is 0 on SQLite and FALSE on DuckDB/PostgreSQL, and `SELECT 0` matches both:
    the same suite gets the same finding on every engine."""
    (pytester.path / "schema.sql").write_text("CREATE TABLE t (id INTEGER);\nINSERT INTO t VALUES (1);\n")
    pytester.makefile(".sqleval.yaml", b=textwrap.dedent("""
        database: {url: "sqlite://", setup: [schema.sql]}
        cases:
          - {id: false-gold, gold: "SELECT count(*) > 5 FROM t"}
          - {id: true-gold, gold: "SELECT count(*) > 0 FROM t"}
    """))
    for url in ("sqlite://", "duckdb://"):
        _, by_case = findings(pytester, f"--sqleval-database-url={url}")
        assert by_case == {"false-gold": ["single_zero"]}, url
