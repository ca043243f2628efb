"""Untrusted predicted SQL, QA round qa7 (issues 4 and 7): inputs nobody tuned for.

- **Invalid text passed on exact match.** A prediction that is not valid UTF-8 (a lone surrogate, a bad byte of a
  predictions file) or holds a NUL character misses with kind ``syntax`` and never runs; but exact match parsed the
  text anyway, and a bad character inside a comment (``SELECT name FROM shops -- \\ud800``) compared equal to the
  gold: under ``pass_if: exact_match`` the case *passed*, although the README says such a prediction misses.
- **Empty statements after the query.** The README's table of profile differences says the ``sqleval`` profiles
  refuse ``q; ;`` (kind ``rejected``, nothing runs). SQLite did (its engine: "You can only execute one statement at
  a time"), but the guard let it through and PostgreSQL and DuckDB ran it: one text, two verdicts. The guard now
  refuses an empty statement after the query on every engine, with its own reason; a comment after the final
  ``;`` and empty statements before the query stay as they were.
- **A write passed on exact match.** ``SELECT name INTO x FROM shops`` (it creates a table) and ``SELECT name FROM
  shops FOR UPDATE`` (it locks rows) are refused by the guard, but exact match ignored the INTO and locking clauses
  and matched the gold ``SELECT name FROM shops``: under ``pass_if: exact_match`` the case passed. Exact match now
  reads them as no query (``parse_error: not a query``), as it already did a DELETE inside a CTE.
- **A sequence unreadable on a built PostgreSQL database.** The SELECT-only role the plugin creates for databases it
  builds had SELECT on tables but not on sequences, so a gold reading one (``SELECT last_value FROM s``) was an
  error of the suite (``permission denied for sequence``). SELECT on a sequence reads it and never lets
  ``nextval``/``setval`` change it (checked: they stay refused even when a suite allows them by name).
- **PostgreSQL's TOAST tables bypassed the catalogue refusal.** ``pg_authid``, ``pg_statistic``,
  ``pg_user_mapping``, ``pg_db_role_setting`` are refused as tables, but their large values live in
  ``pg_toast.pg_toast_<oid>`` (``pg_toast_1260`` is pg_authid's, ``pg_toast_2619`` pg_statistic's, which holds sample
  values of every column), readable by a superuser connection. The schemas ``pg_toast`` and ``pg_toast_temp_N`` are
  refused as a class on PostgreSQL.
- **A number longer than Python reads.** A predictions line with an integer of more than 4,300 digits (in any
  field) stopped the run with ``INTERNALERROR> ValueError: Exceeds the limit (4300 digits)``; the same number in a
  suite file (``metadata:``, ``max_rows:``, an ``id:``) gave a raw traceback. Both are now an error naming the file
  and line.
- **Reasons name statements with the right article** (``an ATTACH statement``, ``an UPDATE statement``).
"""

from __future__ import annotations

import json

import pytest

from conftest import SHOP_SQL, make_sqlite
from pytest_sqleval.errors import QueryError
from pytest_sqleval.sql.guard import check_prediction

pytest_plugins = ["pytester"]


def _report(pytester: pytest.Pytester, *args: str) -> dict:
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "report.json",
                                           *args, timeout=120)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    return json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))


def test_a_prediction_that_is_not_valid_text_never_matches_exactly(pytester: pytest.Pytester) -> None:
    make_sqlite(pytester.path / "shop.sqlite", SHOP_SQL)
    (pytester.path / "s.sqleval.yaml").write_text(
        "suite: s\ndatabase: shop.sqlite\npass_if: exact_match\ncases:\n"
        + "".join(f"  - {{id: {name}, gold: SELECT name FROM shops}}\n"
                  for name in ("surrogate", "byte", "nul_comment", "nul", "good")),
        encoding="utf-8")
    lines = [b'{"id": "surrogate", "sql": "SELECT name FROM shops -- \\ud800"}',
             b'{"id": "byte", "sql": "SELECT name FROM shops -- \xff"}',
             b'{"id": "nul_comment", "sql": "SELECT name FROM shops /* \\u0000 */"}',
             b'{"id": "nul", "sql": "SELECT name FROM shops\\u0000"}',
             b'{"id": "good", "sql": "SELECT name FROM shops -- fine"}']
    (pytester.path / "p.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    cases = {c["id"]: c for c in _report(pytester, "--sqleval-predictions", "p.jsonl")["cases"]}
    assert cases["good"]["outcome"] == "passed" and cases["good"]["exact_match"] is True
    for name in ("surrogate", "byte", "nul_comment", "nul"):
        case = cases[name]
        assert case["outcome"] == "missed", (name, case)
        assert case["error"]["kind"] == "syntax", (name, case)
        assert case["exact_match"] is False, (name, case)
        assert case["exact_match_reason"].startswith("parse_error: the prediction"), (name, case)



@pytest.mark.parametrize("profile, matches", [("sqleval", False), ("spider", True)])
def test_a_prediction_the_database_cannot_parse_never_matches_exactly_under_sqleval(pytester: pytest.Pytester,
                                                                                    profile, matches) -> None:
    """sqlglot reads some malformed texts leniently (a trailing comma before FROM, a bare GROUP BY, a dangling
    AS), so their trees equalled the gold's and `pass_if: exact_match` passed a query no engine runs. Under the
    default profile such a prediction now misses exact match with the database's reason; `spider` still
    reproduces the official evaluator, which never runs a query for exact match (it reads a trailing comma and
    a bare GROUP BY as the gold)."""
    make_sqlite(pytester.path / "shop.sqlite", SHOP_SQL)
    predictions = {"comma": "SELECT name, FROM shops", "group": "SELECT name FROM shops GROUP BY"}
    (pytester.path / "s.sqleval.yaml").write_text(
        f"suite: s\ndatabase: shop.sqlite\nexact_match: {profile}\npass_if: exact_match\ncases:\n"
        + "".join(f"  - {{id: {name}, gold: SELECT name FROM shops, predicted: '{sql}'}}\n"
                  for name, sql in predictions.items())
        + "  - {id: good, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}\n",
        encoding="utf-8")
    cases = {c["id"]: c for c in _report(pytester)["cases"]}
    assert cases["good"]["exact_match"] is True
    for name in predictions:
        case = cases[name]
        assert case["error"]["kind"] == "syntax", (name, case)
        assert case["exact_match"] is matches, (name, case)
        if not matches:
            assert case["exact_match_reason"].startswith("parse_error: the database cannot run it: "), case




DIALECTS = ["sqlite", "duckdb", "postgres"]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM tickets;;",
    "SELECT count(*) FROM tickets ; ; ;",
    "SELECT count(*) FROM tickets; -- done\n;",
    "SELECT count(*) FROM tickets; /* end */ ;",
    ";; SELECT count(*) FROM tickets;;",
])
def test_an_empty_statement_after_the_query_is_refused_on_every_engine(sql, dialect):
    with pytest.raises(QueryError) as caught:
        check_prediction(sql, dialect)
    assert caught.value.kind == "rejected"
    assert "empty statement" in caught.value.message and "single query" in caught.value.message


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM tickets",
    "SELECT count(*) FROM tickets;",
    "SELECT count(*) FROM tickets; -- done",
    "SELECT count(*) FROM tickets; /* end */",
    "SELECT ';;' AS x FROM tickets;",
    "SELECT count(*) FROM tickets /* ;; */;",
])
def test_one_query_with_one_semicolon_and_comments_still_passes(sql, dialect):
    check_prediction(sql, dialect)


def test_the_suite_run_scores_q_semicolon_semicolon_alike_on_sqlite_duckdb_and_postgres(pytester, request):
    """Through the plugin: one verdict for one text, whatever the engine (it was a pass on PostgreSQL and DuckDB and
    a `rejected` miss with sqlite3's message on SQLite)."""
    request.getfixturevalue("duckdb_available")
    postgres = request.getfixturevalue("postgres_url")
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    for name, url in (("sq", "sqlite://"), ("dd", "duckdb://"), ("pg", postgres)):
        (pytester.path / f"{name}.sqleval.yaml").write_text(
            f"suite: {name}\ndatabase: {{url: '{url}', setup: [shop.sql]}}\ncases:\n"
            "  - {id: twice, gold: SELECT count(*) FROM tickets, predicted: 'SELECT count(*) FROM tickets;;'}\n"
            "  - {id: once, gold: SELECT count(*) FROM tickets, predicted: 'SELECT count(*) FROM tickets; -- ok'}\n",
            encoding="utf-8")
    cases = _report(pytester)["cases"]
    verdicts = {(c["suite"], c["id"]): (c["outcome"], (c["error"] or {}).get("kind")) for c in cases}
    for name in ("sq", "dd", "pg"):
        assert verdicts[(name, "twice")] == ("missed", "rejected"), verdicts
        assert verdicts[(name, "once")] == ("passed", None), verdicts
    reasons = {c["error"]["message"] for c in cases if c["id"] == "twice"}
    assert len(reasons) == 1 and "empty statement" in reasons.pop()


@pytest.mark.parametrize("sql, word", [
    ("ATTACH 'x.db' AS x", "an ATTACH"), ("INSTALL httpfs", "an INSTALL"), ("UPDATE t SET a = 1", "an UPDATE"),
    ("EXPORT DATABASE 'x'", "an EXPORT"), ("DELETE FROM t", "a DELETE"), ("VACUUM", "a VACUUM"),
])
def test_a_refused_statement_is_named_with_its_article(sql, word):
    with pytest.raises(QueryError) as caught:
        check_prediction(sql, "duckdb")
    assert caught.value.message.startswith(f"{word} statement is not a query"), caught.value.message


def test_select_into_and_row_locks_never_match_exactly(pytester: pytest.Pytester) -> None:
    make_sqlite(pytester.path / "shop.sqlite", SHOP_SQL)
    predictions = {
        "into": "SELECT name INTO x FROM shops",
        "into_in_union": "SELECT name FROM shops UNION SELECT name INTO y FROM shops",
        "for_update": "SELECT name FROM shops FOR UPDATE",
        "for_share": "SELECT name FROM shops FOR SHARE",
        "plain": "SELECT name FROM shops",
    }
    (pytester.path / "s.sqleval.yaml").write_text(
        "suite: s\ndatabase: shop.sqlite\ndialect: postgres\npass_if: exact_match\ncases:\n"
        + "".join(f"  - {{id: {name}, gold: SELECT name FROM shops, predicted: '{sql}'}}\n"
                  for name, sql in predictions.items()),
        encoding="utf-8")
    cases = {c["id"]: c for c in _report(pytester)["cases"]}
    assert cases["plain"]["outcome"] == "passed" and cases["plain"]["exact_match"] is True
    for name in ("into", "into_in_union", "for_update", "for_share"):
        case = cases[name]
        assert case["outcome"] == "missed" and case["exact_match"] is False, (name, case)
        assert case["exact_match_reason"].startswith("parse_error: not a query"), (name, case)
        assert case["error"]["kind"] == "rejected", (name, case)


def test_a_sequence_of_a_built_postgres_database_is_readable_and_stays_unchanged(pytester, request):
    postgres = request.getfixturevalue("postgres_url")
    pytester.path.joinpath("setup.sql").write_text(
        "CREATE SEQUENCE s1;\nCREATE TABLE t (id int);\nINSERT INTO t VALUES (1);\n", encoding="utf-8")
    (pytester.path / "s.sqleval.yaml").write_text(
        f"suite: s\ndatabase: {{url: '{postgres}', setup: [setup.sql]}}\nallow_functions: [nextval, setval]\n"
        "cases:\n"
        "  - {id: read, gold: 'SELECT last_value, is_called FROM s1', predicted: 'SELECT last_value, is_called FROM s1'}\n"
        "  - {id: next, gold: SELECT 1, predicted: \"SELECT nextval('s1')\"}\n"
        "  - {id: set, gold: SELECT 1, predicted: \"SELECT setval('s1', 99)\"}\n"
        "  - {id: again, gold: 'SELECT last_value, is_called FROM s1', predicted: 'SELECT 1, false'}\n",
        encoding="utf-8")
    cases = {c["id"]: c for c in _report(pytester)["cases"]}
    assert cases["read"]["outcome"] == "passed", cases["read"]
    for name in ("next", "set"):
        assert cases[name]["outcome"] == "missed" and cases[name]["error"]["kind"] == "rejected", cases[name]
    assert cases["again"]["outcome"] == "passed", cases["again"]  # still (1, false): nothing advanced it


@pytest.mark.parametrize("sql", [
    "SELECT * FROM pg_toast.pg_toast_1260",
    "SELECT chunk_data FROM pg_toast.pg_toast_2619",
    'SELECT chunk_id FROM "pg_toast".pg_toast_1418 AS t',
    "SELECT * FROM PG_TOAST.pg_toast_2964",
    "SELECT * FROM postgres.pg_toast.pg_toast_1260",
    "SELECT (SELECT count(*) FROM pg_toast.pg_toast_6100)",
    "WITH x AS (SELECT * FROM pg_toast.pg_toast_2619) SELECT count(*) FROM x",
    "SELECT * FROM pg_toast_temp_3.pg_toast_16384",
    "TABLE pg_toast.pg_toast_1260",
])
def test_postgres_toast_tables_are_refused_as_a_class(sql):
    with pytest.raises(QueryError) as caught:
        check_prediction(sql, "postgres")
    assert caught.value.kind == "rejected" and "raw storage" in caught.value.message, caught.value.message


def test_a_sqlite_suite_run_on_postgres_refuses_toast_tables_too():
    from pytest_sqleval.execution.runner import prepare_sql

    with pytest.raises(QueryError) as caught:
        prepare_sql("SELECT * FROM pg_toast.pg_toast_1260", "sqlite", untrusted=True, engine_dialect="postgres")
    assert caught.value.kind == "rejected" and "raw storage" in caught.value.message


def test_the_superuser_server_really_has_toasted_catalogue_rows(request):
    """So the refusal above means something: a superuser session reads pg_statistic's TOAST table."""
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(request.getfixturevalue("postgres_url"))
    with psycopg.connect(host=url.host, port=url.port, user=url.username, password=url.password,
                         dbname=url.database, autocommit=True) as conn:
        toast = conn.execute("SELECT t.relname FROM pg_class c JOIN pg_class t ON t.oid = c.reltoastrelid "
                             "WHERE c.relname = 'pg_authid'").fetchone()[0]
        conn.execute(f"SELECT count(*) FROM pg_toast.{toast}").fetchone()  # readable: no permission error


@pytest.mark.parametrize("line", [
    '{"id": "a", "sql": "SELECT 1", "score": ' + "9" * 5000 + "}",
    '{"id": ' + "7" * 5000 + ', "sql": "SELECT 1"}',
    '{"id": "a", "sql": "SELECT 1", "x": [' + "-" + "1" * 10_000 + "]}",
])
def test_a_predictions_line_with_a_huge_integer_is_an_error_naming_the_line(pytester, line):
    make_sqlite(pytester.path / "shop.sqlite", SHOP_SQL)
    (pytester.path / "s.sqleval.yaml").write_text("database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n",
                                                  encoding="utf-8")
    (pytester.path / "p.jsonl").write_text('{"id": "a", "sql": "SELECT 1"}\n' + line + "\n", encoding="utf-8")
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions", "p.jsonl",
                                           timeout=120)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and "Traceback" not in output
    assert "p.jsonl:2: the JSON has a number longer than the" in output
    assert result.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize("where, line", [
    ("metadata", "  - {id: a, gold: SELECT 1, predicted: SELECT 1, metadata: {n: " + "9" * 5000 + "}}"),
    ("max_rows", "max_rows: " + "9" * 5000),
    ("id", "  - {id: " + "9" * 5000 + ", gold: SELECT 1, predicted: SELECT 1}"),
])
def test_a_suite_with_a_huge_integer_is_an_error_naming_the_line(pytester, where, line):
    make_sqlite(pytester.path / "shop.sqlite", SHOP_SQL)
    lines = ["suite: s", "database: shop.sqlite", "cases:", "  - {id: b, gold: SELECT 1, predicted: SELECT 1}"]
    lines.insert(2, line) if where == "max_rows" else lines.append(line)
    (pytester.path / "s.sqleval.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", timeout=120)
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "ValueError" not in output and "yaml/constructor.py" not in output
    number = 3 if where == "max_rows" else 5
    assert f"s.sqleval.yaml:{number}: invalid YAML: a number longer than the" in output, output
