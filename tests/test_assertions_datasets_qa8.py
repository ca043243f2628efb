"""Eighth QA look (assertds8) at issues 13 and 14: the assertion helpers in plain pytest tests and the gold check
(``--sqleval-check-gold``), with inputs no one tuned for: several golds with ``clauses=``, a numeric literal that
underflows only as a float, NULL ordering that differs between engines."""

from __future__ import annotations

import json
import textwrap

import pytest

TICKETS = """
CREATE TABLE t (id INTEGER, name TEXT, age INTEGER, x INTEGER);
INSERT INTO t VALUES (1, 'a', 30, 3), (2, 'b', 40, NULL), (3, 'c', 50, 1), (4, 'd', 60, NULL);
"""


def _plain(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makeini("[pytest]\n")
    pytester.path.joinpath("t.sql").write_text(TICKETS)
    pytester.makepyfile(test_app=textwrap.dedent(source))
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def test_several_golds_with_clauses_report_the_gold_closest_on_the_checked_clauses(pytester: pytest.Pytester):
    """With ``clauses=["select", "where"]`` the best of several golds was the one matching most clauses *overall*:
    gold #2 (select and where differ, but group/order/keywords match) beat gold #1 (only where differs), so the
    failure said ``clauses differ: select, where`` although one accepted gold differs on where alone. One best
    gold for all clauses is now chosen by the checked clauses first, and each gold's differing clauses are listed."""
    result = _plain(
        pytester,
        """
        import pytest
        from pytest_sqleval import assert_exact_match

        pytestmark = pytest.mark.sqleval_database("sqlite://", setup=["t.sql"])

        def test_em(sqleval_engine):
            assert_exact_match(["SELECT id FROM t WHERE id = 1",
                                "SELECT name FROM t WHERE id = 1 GROUP BY id ORDER BY id"],
                               "SELECT id FROM t WHERE age > 3 GROUP BY id ORDER BY id", clauses=["select", "where"])

        def test_no_prediction(sqleval_engine):
            assert_exact_match(["SELECT id FROM t WHERE id = 1", "SELECT name FROM t"], None, clauses=["select"])
    """,
    )
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*#1 SELECT id FROM t WHERE id = 1: not scored", "*#2 SELECT name FROM t: not scored"])
    result.stdout.fnmatch_lines(
        [
            "*exact_match failed on select, where: clauses differ: where (profile sqleval)",
            "*gold SQL:      SELECT id FROM t WHERE id = 1",
            "*accepted golds: 2; best: #1 (any one may match)",
            "*#1 SELECT id FROM t WHERE id = 1: differs on where",
            "*#2 SELECT name FROM t WHERE id = 1 GROUP BY id ORDER BY id: differs on select, where",
        ]
    )
    assert "clauses differ: select, where" not in result.stdout.str()


def _check_gold(
    pytester: pytest.Pytester, database: str, cases: list[tuple[str, str]], *keys: str
) -> dict[str, list[dict]]:
    """Each case's findings, read from the gold check's summary lines (``warning <case>: <kind>: <message>``)."""
    pytester.path.joinpath("t.sql").write_text(TICKETS)
    lines = [f"database: {{url: {json.dumps(database)}, setup: [t.sql]}}", *keys, "cases:"]
    lines += [f"  - {{id: {case}, gold: {json.dumps(sql)}}}" for case, sql in cases]
    pytester.makefile(".sqleval.yaml", gold="\n".join(lines) + "\n")
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-check-gold", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    found: dict[str, list[dict]] = {case: [] for case, _ in cases}
    for line in result.stdout.lines:
        if line.startswith("warning "):
            case, kind, message = line[len("warning ") :].split(": ", 2)
            found[case].append({"kind": kind, "message": message})
    return found


def test_a_decimal_that_is_zero_only_as_a_float_does_not_say_select_0_matches(pytester, postgres_url):
    """PostgreSQL returns ``SELECT 1e-1000`` as the NUMERIC 1E-1000, which the gold check turned into the float 0.0
    and reported as ``returns a single 0: `SELECT 0` matches it``. `SELECT 0` does not match it (an int beside a
    decimal compares exactly); only a float 0 does, and the message now says so."""
    found = _check_gold(pytester, postgres_url, [("tiny", "SELECT 1e-1000"), ("zero", "SELECT 0.0")])
    assert [f["kind"] for f in found["tiny"]] == ["single_zero"]
    message = found["tiny"][0]["message"]
    assert "`SELECT 0` matches" not in message
    assert message.startswith("returns a single 1E-1000, which is 0 as a float"), message
    assert found["zero"] == [{"kind": "single_zero", "message": "returns a single 0: `SELECT 0` matches it"}]


NULL_ORDER_CASES = [
    ("hidden-key", "SELECT id FROM t ORDER BY x"),  # the key is no output column
    ("visible-key", "SELECT id, x FROM t ORDER BY x, id"),
    ("top-desc", "SELECT id FROM t ORDER BY x DESC, id LIMIT 1"),
    ("nested", "SELECT id FROM t WHERE id IN (SELECT id FROM t ORDER BY x, id LIMIT 2)"),
    ("explicit", "SELECT id FROM t ORDER BY x NULLS LAST, id"),
    ("explicit-first", "SELECT id FROM t ORDER BY x DESC NULLS FIRST, id"),
    ("no-nulls", "SELECT id FROM t ORDER BY age"),
    ("no-nulls-tied", "SELECT id FROM t ORDER BY age > 40"),
]


@pytest.mark.parametrize("engine", ["sqlite", "duckdb", "postgres"])
def test_gold_whose_result_depends_on_null_ordering_is_flagged(pytester, request, engine):
    """SQLite sorts NULLs first in ascending order, PostgreSQL last and DuckDB always last, so a gold ordered by a
    column holding NULLs returns another result on another engine; the gold check said nothing. It now warns
    ``null_order`` on each engine, unless the gold writes NULLS FIRST/LAST or no NULL is sorted."""
    if engine == "duckdb":
        request.getfixturevalue("duckdb_available")
        database = "duckdb://"
    elif engine == "postgres":
        database = request.getfixturevalue("postgres_url")
    else:
        database = "sqlite://"
    found = _check_gold(pytester, database, NULL_ORDER_CASES)
    flagged = {case for case, findings in found.items() if any(f["kind"] == "null_order" for f in findings)}
    assert flagged == {"hidden-key", "visible-key", "top-desc", "nested"}, found
    message = next(f["message"] for f in found["hidden-key"] if f["kind"] == "null_order")
    assert "write NULLS FIRST or NULLS LAST" in message


def test_null_order_check_reruns_what_the_profile_ran(pytester: pytest.Pytester):
    """Under `execution: test-suite` the gold runs with DISTINCT stripped (as the official script): the NULL ordering
    reruns strip it too, so a DISTINCT gold without NULLs is not flagged, and one ordered by a NULL column is."""
    found = _check_gold(
        pytester,
        "sqlite://",
        [
            ("distinct-no-nulls", "SELECT DISTINCT age > 40 FROM t ORDER BY 1"),
            ("distinct-nulls", "SELECT DISTINCT x FROM t ORDER BY x"),
        ],
        "execution: test-suite",
    )
    assert {case: [f["kind"] for f in findings] for case, findings in found.items()} == {
        "distinct-no-nulls": [],
        "distinct-nulls": ["null_order"],
    }


def test_a_decimal_too_small_for_a_float_keeps_its_value_in_the_diff(pytester, postgres_url):
    """``assert_execution_match("SELECT 1e-1000", "SELECT 0")`` on PostgreSQL fails (rightly: the NUMERIC 1E-1000 is
    not 0), but the diff showed the gold's value as a JSON float, ``0.0``: ``rows only in gold: (0.0)`` beside
    ``rows only in prediction: (0)``, as if equal values differed. A Decimal too small for a float keeps its text."""
    result = _plain(
        pytester,
        f"""
        import pytest
        from pytest_sqleval import assert_execution_match

        pytestmark = pytest.mark.sqleval_database({postgres_url!r}, setup=["t.sql"])

        def test_tiny(sqleval_engine):
            assert_execution_match("SELECT 1e-1000 AS v", "SELECT 0 AS v")
    """,
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*gold result: 1 row x 1 column",
            "*  v",
            "*  1E-1000",
            "*rows only in gold:       (1E-1000)",
            "*rows only in prediction: (0)",
        ]
    )
    assert "(0.0)" not in result.stdout.str()


def _spider_test_suite_release(root):
    """A Spider folder laid out as the test-suite release: ``database/shop/shop.sqlite`` and a distilled variant
    ``shop_1.sqlite`` on which a prediction that matches on the first database returns a duplicate row."""
    import sqlite3

    (root / "database" / "shop").mkdir(parents=True)
    for name, rows in (("shop.sqlite", "(1, 'a'), (2, 'b')"), ("shop_1.sqlite", "(1, 'a'), (2, 'a')")):
        conn = sqlite3.connect(root / "database" / "shop" / name)
        conn.executescript(f"CREATE TABLE t (id INTEGER, name TEXT); INSERT INTO t VALUES {rows};")
        conn.close()
    (root / "dev.json").write_text(
        json.dumps(
            [
                {"db_id": "shop", "question": "name of 1", "query": "SELECT DISTINCT name FROM t WHERE id = 1"},
                {"db_id": "shop", "question": "names", "query": "SELECT name FROM t"},
            ]
        )
    )
    columns = [[-1, "*"], [0, "id"], [0, "name"]]
    (root / "tables.json").write_text(
        json.dumps(
            [
                {
                    "db_id": "shop",
                    "table_names_original": ["t"],
                    "table_names": ["t"],
                    "column_names_original": columns,
                    "column_names": columns,
                    "column_types": ["text", "number", "text"],
                    "primary_keys": [],
                    "foreign_keys": [],
                }
            ]
        )
    )


def test_spider_import_of_the_test_suite_databases_runs_each_query_on_every_database(pytester: pytest.Pytester):
    """test-suite-sql-eval's ``eval_exec_match`` compares on every ``.sqlite`` file in the folder of the db_id's
    database (the test-suite release ships distilled variants there). The import referenced ``shop.sqlite`` alone,
    so a prediction that fails on a variant passed, and the imported suite's execution accuracy was not the
    official test-suite accuracy. The suite now lists every database of the folder under ``databases:``."""
    import yaml

    from pytest_sqleval.datasets.importers import import_dataset

    root = pytester.path / "spider"
    _spider_test_suite_release(root)
    predictions = pytester.path / "pred.txt"
    predictions.write_text("SELECT name FROM t WHERE name = 'a'\nSELECT name FROM t\n")
    import_dataset("spider", root, pytester.path / "out", predictions=predictions)
    suite = yaml.safe_load((pytester.path / "out" / "shop.sqleval.yaml").read_text())
    assert suite["databases"] == ["../spider/database/shop/shop.sqlite", "../spider/database/shop/shop_1.sqlite"]
    assert "database" not in suite
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess("--sqleval", "out", f"--sqleval-json={report}", "-p", "no:cacheprovider")
    verdicts = {r["id"]: r["execution_match"] for r in json.loads(report.read_text())["cases"]}
    assert verdicts == {"q0000": False, "q0001": True}, result.stdout.str()
    result.stdout.fnmatch_lines(["*q0000: duplicates:*(on sqlite:///*shop_1.sqlite)"])


def test_a_suite_with_several_golds_reports_the_clauses_its_pass_if_names_and_which_gold_they_are_of(
    pytester: pytest.Pytester,
):
    """A suite's twin of the helper's ranking: with ``pass_if: exact_match(select, where)`` and two golds, the record
    (and the miss) gave the clause verdicts of the gold matching most clauses overall (``select`` and ``where``
    differ) under the SQL of the other gold, which differs on ``where`` alone. The golds are now ranked on the
    clauses the pass_if names first, and a miss whose clauses are of another gold than the SQL it shows says which."""
    pytester.path.joinpath("t.sql").write_text(TICKETS)
    pytester.makefile(
        ".sqleval.yaml",
        s1=textwrap.dedent("""
            database: {url: "sqlite://", setup: [t.sql]}
            suite: s1
            pass_if: exact_match(select, where)
            cases:
              - id: two
                gold: ["SELECT id FROM t WHERE id = 1", "SELECT name FROM t WHERE id = 1 GROUP BY id ORDER BY id"]
                predicted: "SELECT id FROM t WHERE age > 3 GROUP BY id ORDER BY id"
        """),
        s2=textwrap.dedent("""
            database: {url: "sqlite://", setup: [t.sql]}
            suite: s2
            pass_if: exact_match(select, order)
            cases:
              - id: other
                gold: ["SELECT id FROM t WHERE id IN (1, 2)", "SELECT name FROM t WHERE age <= 40 ORDER BY id"]
                predicted: "SELECT id FROM t WHERE age <= 40 ORDER BY id"
        """),
    )
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess("--sqleval", "-v", f"--sqleval-json={report}", "-p", "no:cacheprovider")
    records = {r["id"]: r for r in json.loads(report.read_text())["cases"]}
    two = records["two"]
    assert two["exact_match_gold_index"] == 0
    assert two["clauses"]["select"] is True and two["clauses"]["where"] is False
    assert records["other"]["exact_match_gold_index"] == 1 and records["other"].get("gold_index", 0) == 0
    result.stdout.fnmatch_lines(
        [
            "*two: *",
            "*gold SQL:      SELECT id FROM t WHERE id = 1",
            "*exact match: clauses differ: where, where_no_op, group_no_having, group, order, keywords",
            "*other: pass_if does not hold*",
            "*gold SQL:      SELECT id FROM t WHERE id IN (1, 2)",
            "*exact match (gold #2): clauses differ: select, select_no_agg",
        ]
    )


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_literal_that_underflows_to_0_is_named_in_the_single_zero_finding(pytester, request, engine):
    """SQLite and DuckDB read ``1e-1000`` as the float 0.0, so the gold returns 0 and `SELECT 0` matches it; the
    finding said only ``returns a single 0``, as for ``SELECT count(*)`` of no rows, though the gold's author wrote a
    number that is not 0. It now names the literal."""
    if engine == "duckdb":
        request.getfixturevalue("duckdb_available")
    found = _check_gold(
        pytester, f"{engine}://", [("tiny", "SELECT 1e-1000"), ("count", "SELECT count(*) FROM t WHERE id > 9")]
    )
    assert found["tiny"] == [
        {
            "kind": "single_zero",
            "message": "returns a single 0 (its literal 1e-1000 is 0 as a float, as the engine read it): `SELECT 0` "
            "matches it",
        }
    ]
    assert found["count"] == [{"kind": "single_zero", "message": "returns a single 0: `SELECT 0` matches it"}]
