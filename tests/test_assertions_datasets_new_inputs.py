"""QA of issues 13 (assertion helpers for plain tests) and 14 (importers, generation, statistics) with inputs
no other test uses: other engines, other value types, real slices of the public data, other failure paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chat_server import ChatServer

SHARED = Path(os.environ.get("SQLEVAL_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "benchmarks"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"the public benchmark data is not at {SHARED}")


def _datasets(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})


# --------------------------------------------------------------------------- sqleval generate
ORDERS_SQL = """
CREATE TABLE orders (id INTEGER, customer VARCHAR, amount DECIMAL(8, 2), placed DATE);
INSERT INTO orders VALUES (1, 'ann', 10.50, '2024-01-01'), (2, 'bob', 20.00, '2024-01-02'), (3, 'ann', 5.25, '2024-02-01');
"""
PER_CUSTOMER = "SELECT customer, SUM(amount) AS total FROM orders GROUP BY customer"
SINCE = "SELECT COUNT(*) AS n FROM orders WHERE placed >= DATE '2024-01-02'"


@pytest.mark.duckdb
def test_generate_on_a_duckdb_file_across_batches(tmp_path: Path, duckdb_available) -> None:
    """A DuckDB database is as good a source as SQLite: its file is not locked by the pipeline's own schema
    reading, and a duplicate of a query kept in an earlier batch is dropped too."""
    import duckdb

    database = tmp_path / "shop.duckdb"
    with duckdb.connect(str(database)) as conn:
        conn.execute(ORDERS_SQL)
    batch1 = [{"sql": PER_CUSTOMER + ";"},                                       # kept (the ';' is not part of it)
              {"sql": "SELECT 1; DROP TABLE orders"},                           # unparsable: two statements
              {"sql": "SELECT * FROM read_csv('/etc/passwd')"},                 # does_not_run: the guard refuses
              {"sql": "SELECT customer FROM orders WHERE amount > 1000"}]       # empty_result
    batch2 = [{"sql": "select CUSTOMER, sum(AMOUNT) as TOTAL from ORDERS group by CUSTOMER"},  # duplicate (batch 1)
              {"sql": "SELECT o.customer, SUM(o.amount) AS t FROM orders AS o GROUP BY o.customer"},  # same result
              {"sql": SINCE}]
    script = {"request 1 of 2": [json.dumps(batch1)], "request 2 of 2": [json.dumps(batch2)],
              f"SQL to explain:\n{PER_CUSTOMER}": [json.dumps({"question": "How much did each customer spend?"})],
              f"SQL to explain:\n{SINCE}": [json.dumps({"question": "How many orders since 2 January 2024?"})]}
    out = tmp_path / "gen" / "shop.sqleval.yaml"
    with ChatServer(script) as server:
        done = _datasets(["generate", str(database), "-o", str(out), "--model", "test-model", "--model-url",
                          server.url, "--count", "8", "--batch", "4", "--cache-mode", "off"], tmp_path,
                         OPENAI_API_KEY="k")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads((tmp_path / "gen" / "shop.report.json").read_text())
    assert report["proposed"] == 7
    assert {k: v for k, v in report["dropped"].items() if v} == {"unparsable": 1, "does_not_run": 1,
                                                                   "empty_result": 1, "duplicate": 2}
    by_sql = {d["sql"]: d for d in report["drops"]}
    assert by_sql["SELECT 1; DROP TABLE orders"]["reason"] == "2 statements, not one query"
    assert by_sql["SELECT * FROM read_csv('/etc/passwd')"]["reason"].startswith("rejected")
    assert "normalised SQL" in by_sql["select CUSTOMER, sum(AMOUNT) as TOTAL from ORDERS group by CUSTOMER"]["reason"]
    assert "same result and structure" in by_sql[
        "SELECT o.customer, SUM(o.amount) AS t FROM orders AS o GROUP BY o.customer"]["reason"]

    from pytest_sqleval.loader import load_suite

    suite = load_suite(out)
    assert [(c.id, c.gold, c.question) for c in suite.cases] == [
        ("g001", PER_CUSTOMER, "How much did each customer spend?"),
        ("g002", SINCE, "How many orders since 2 January 2024?")]


def test_generate_on_an_unopenable_database_is_a_message(tmp_path: Path) -> None:
    """A database the engine cannot open is bad input: status 2 and a message, never a traceback."""
    broken = tmp_path / "broken.duckdb"
    broken.write_bytes(b"this is not a DuckDB file" * 100)
    done = _datasets(["generate", str(broken), "-o", str(tmp_path / "x.sqleval.yaml"), "--model", "m",
                      "--model-url", "http://127.0.0.1:9/v1", "--cache-mode", "off"], tmp_path, OPENAI_API_KEY="k")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("sqleval generate: ") and "broken.duckdb" in done.stderr


# --------------------------------------------------------------------------- assertion helpers (pytester)
ITEMS_SQL = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, sold DATE, qty INTEGER);
INSERT INTO items VALUES (1, 'bolt', 0.1, '2024-01-05', 3), (2, 'nut', 0.2, '2024-02-10', NULL),
                         (3, 'gear', NULL, NULL, 7);
"""


@pytest.fixture
def items_app(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "items.sql").write_text(ITEMS_SQL, encoding="utf-8")
    pytester.makeini("[pytest]\n")
    return pytester


def _run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_app=textwrap.dedent(source))
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_expected_rows_with_dates_match_an_engine_that_returns_text(items_app):
    """SQLite returns DATE columns as text: expected rows written with datetime.date values (or ISO text)
    still match, and NULLs and floats in expected rows compare as the profile says."""
    result = _run(items_app, """
        import datetime
        import pytest
        from pytest_sqleval import assert_execution_match, check_execution_match

        pytestmark = pytest.mark.sqleval_database("sqlite://", setup=["items.sql"])

        def test_date_objects():
            assert_execution_match({"columns": ["sold"], "rows": [[datetime.date(2024, 1, 5)],
                                    [datetime.date(2024, 2, 10)], [None]]}, "SELECT sold FROM items")

        def test_iso_text():
            assert_execution_match({"columns": ["sold"], "rows": [["2024-02-10"], ["2024-01-05"], [None]]},
                                   "SELECT sold FROM items")

        def test_a_wrong_date_still_fails():
            verdict = check_execution_match({"columns": ["sold"], "rows": [[datetime.date(2024, 1, 6)],
                                             [datetime.date(2024, 2, 10)], [None]]}, "SELECT sold FROM items")
            assert not verdict.match

        def test_null_is_not_zero():
            assert_execution_match({"columns": ["name", "qty"], "rows": [["bolt", 3], ["nut", 0], ["gear", 7]]},
                                   "SELECT name, qty FROM items")
    """)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        "*test_null_is_not_zero*",
        "E*execution_match failed (profile sqleval)",
        "E*values: 1 gold row is missing from the prediction, 1 predicted row is not in the gold",
        "E*predicted SQL: SELECT name, qty FROM items",
        "E*soft_f1: 0.8333",
        "E*rows only in gold:       (nut, 0)",
        "E*rows only in prediction: (nut, NULL)",
    ])


@pytest.mark.duckdb
def test_suite_expected_rows_with_dates_on_duckdb(pytester: pytest.Pytester, duckdb_available) -> None:
    """YAML has no date type the engines share: `expected:` rows with 2024-01-05 (a YAML date) or "2024-01-05"
    match a DuckDB DATE column, and a YAML timestamp matches a TIMESTAMP column."""
    (pytester.path / "items.sql").write_text(
        "CREATE TABLE items (id INTEGER, sold DATE, seen TIMESTAMP);\n"
        "INSERT INTO items VALUES (1, '2024-01-05', '2024-01-05 10:30:00'), (2, '2024-02-10', NULL), (3, NULL, NULL);\n",
        encoding="utf-8")
    pytester.makefile(".sqleval.yaml", items=textwrap.dedent("""
        database: {url: "duckdb://", setup: [items.sql]}
        cases:
          - id: yaml-dates
            expected: {columns: [sold], rows: [[2024-01-05], [2024-02-10], [null]]}
            predicted: SELECT sold FROM items
          - id: quoted-dates
            expected: {columns: [sold], rows: [["2024-01-05"], ["2024-02-10"], [null]]}
            predicted: SELECT sold FROM items
          - id: timestamp
            expected: {columns: [seen], rows: [[2024-01-05 10:30:00]]}
            predicted: SELECT seen FROM items WHERE id = 1
          - id: wrong-date
            expected: {columns: [sold], rows: [[2024-01-06], [2024-02-10], [null]]}
            predicted: SELECT sold FROM items
    """))
    report = pytester.path / "report.json"
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", f"--sqleval-json={report}")
    assert result.ret == 0, result.stdout.str()
    cases = {c["id"]: c["execution_match"] for c in json.loads(report.read_text())["cases"]}
    assert cases == {"yaml-dates": True, "quoted-dates": True, "timestamp": True, "wrong-date": False}


PG_ITEMS_SQL = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price NUMERIC(6, 2), sold DATE, qty INTEGER);
INSERT INTO items VALUES (1, 'bolt', 0.10, '2024-01-05', 3), (2, 'nut', 0.20, '2024-02-10', NULL),
                         (3, 'gear', NULL, NULL, 7);
"""


@pytest.mark.postgres
def test_helpers_on_postgresql_from_the_marker(pytester: pytest.Pytester, postgres_url: str) -> None:
    """Every helper, passing and failing, on a PostgreSQL database the marker builds from a setup script;
    a hostile prediction is refused with its reason and never runs."""
    (pytester.path / "items.sql").write_text(PG_ITEMS_SQL, encoding="utf-8")
    pytester.makeini("[pytest]\n")
    result = _run(pytester, f"""
        import datetime
        import pytest
        from pytest_sqleval import (assert_exact_match, assert_execution_match, assert_soft_f1,
                                    check_execution_match)

        pytestmark = pytest.mark.sqleval_database({postgres_url!r}, setup=["items.sql"])

        def test_passing(sqleval_engine, sqleval_query):
            assert sqleval_engine.dialect.name == "postgresql"
            assert_execution_match("SELECT name FROM items WHERE qty IS NULL", "SELECT name FROM items WHERE qty IS NULL")
            # NUMERIC comes back as Decimal: expected floats, dates and NULLs still match
            assert_execution_match({{"columns": ["price", "sold"], "rows": [[0.1, datetime.date(2024, 1, 5)],
                                    [0.2, "2024-02-10"], [None, None]]}}, "SELECT price, sold FROM items")
            assert_exact_match("SELECT name FROM items WHERE qty > 1", "SELECT name FROM items WHERE qty > 1 ORDER BY id",
                               clauses=["select", "where"])
            assert_soft_f1("SELECT name, qty FROM items", "SELECT name FROM items", at_least=0.6)

        def test_execution_fails():
            assert_execution_match("SELECT name, price FROM items", "SELECT name, price FROM items WHERE price > 0.15")

        def test_exact_fails():
            assert_exact_match("SELECT name FROM items WHERE qty > 1", "SELECT name FROM items WHERE qty < 1",
                               clauses=["where"])

        def test_soft_fails():
            assert_soft_f1("SELECT name, qty FROM items", "SELECT name FROM items", at_least=0.7)

        def test_hostile(sqleval_query):
            verdict = check_execution_match("SELECT 1", "SELECT pg_read_file('/etc/passwd')")
            assert verdict.error["kind"] == "rejected" and "pg_read_file" in verdict.error["message"]
            verdict = check_execution_match("SELECT 1", "WITH gone AS (DELETE FROM items RETURNING id) SELECT 1")
            assert verdict.error["kind"] == "rejected"
            assert sqleval_query("SELECT count(*) FROM items").rows == [(3,)]
    """)
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines([
        "*_ test_execution_fails _*",
        "E*execution_match failed (profile sqleval)",
        "E*row_count: gold has 3 rows, the prediction 1",
        "E*gold SQL:      SELECT name, price FROM items",
        "E*predicted SQL: SELECT name, price FROM items WHERE price > 0.15",
        "E*soft_f1: 0.5000",
        "E*rows only in gold:       (bolt, 0.1); (gear, NULL)",
        "*_ test_exact_fails _*",
        "E*exact_match failed on where: clauses differ: where (profile sqleval)",
        "E*gold SQL:      SELECT name FROM items WHERE qty > 1",
        "E*predicted SQL: SELECT name FROM items WHERE qty < 1",
        "E*select           match (not checked)",
        "E*where            DIFFERS",
        "*_ test_soft_fails _*",
        "E*soft_f1 0.6667 < 0.7 (required at least 0.7)",
        "E*column_count: gold has 2 columns, the prediction 1",
    ])


def test_bad_limits_are_clear_errors_not_gold_failures(items_app):
    """timeout=/max_rows= that are not positive numbers are the test's mistake, said so, never a 'broken gold'
    or a TypeError from deep inside."""
    result = _run(items_app, """
        import pytest
        from pytest_sqleval import assert_execution_match, assert_soft_f1

        pytestmark = pytest.mark.sqleval_database("sqlite://", setup=["items.sql"])

        @pytest.mark.parametrize("limits, message", [
            ({"timeout": -1}, "timeout= must be a positive number of seconds, not -1"),
            ({"timeout": "5"}, "timeout= must be a positive number of seconds, not '5'"),
            ({"timeout": float("inf")}, "timeout= must be a positive number of seconds, not inf"),
            ({"max_rows": 0}, "max_rows= must be a whole number of rows, at least 1, not 0"),
            ({"max_rows": 2.5}, "max_rows= must be a whole number of rows, at least 1, not 2.5"),
        ])
        def test_helper(limits, message):
            with pytest.raises(ValueError) as info:
                assert_execution_match("SELECT 1", "SELECT 1", **limits)
            assert str(info.value) == message
            with pytest.raises(ValueError, match=message.split(",")[0]):
                assert_soft_f1("SELECT 1", "SELECT 1", **limits)

        def test_query(sqleval_query):
            with pytest.raises(ValueError, match="timeout= must be a positive number of seconds, not -1"):
                sqleval_query("SELECT 1", timeout=-1)
            assert sqleval_query("SELECT name FROM items ORDER BY id", timeout=2.5, max_rows=3).rows == [
                ("bolt",), ("nut",), ("gear",)]
    """)
    result.assert_outcomes(passed=6)


# --------------------------------------------------------------------------- importers on slices of the public data
def _report(pytester: pytest.Pytester, *paths: Path, extra: tuple[str, ...] = ()) -> dict:
    report = pytester.path / "report.json"
    result = pytester.runpytest("--sqleval", *map(str, paths), "-p", "no:cacheprovider", f"--sqleval-json={report}",
                                *extra)
    assert result.ret == 0, result.stdout.str()
    return json.loads(report.read_text())


@needs_shared
def test_spider_slice_gold_against_gold_scores_everything(pytester: pytest.Pytester) -> None:
    spider = SHARED / "spider_dev"
    dev = json.loads((spider / "dev.json").read_text())
    wta = [i for i, d in enumerate(dev) if d["db_id"] == "wta_1"][:2]
    chosen = [45, 46, 47, 0, 1, *wta]                     # pets_1 first: the suites keep the slice's order
    (pytester.path / "slice.json").write_text(json.dumps([dev[i] for i in chosen]))
    (pytester.path / "pred.txt").write_text("".join(dev[i]["query"] + "\tignored\n" for i in chosen))
    done = _datasets(["import", "spider", "slice.json", "-o", "out", "--tables", str(spider / "tables.json"),
                      "--databases", str(spider / "database"), "--predictions", "pred.txt"], pytester.path)
    assert done.returncode == 0, done.stderr
    assert "wrote 3 suites (7 cases)" in done.stdout and "1 of 3 databases not found (wta_1)" in done.stderr
    out = pytester.path / "out"
    import yaml

    pets = yaml.safe_load((out / "pets_1.sqleval.yaml").read_text())
    assert Path(pets["database"]).resolve() == (spider / "database" / "pets_1" / "pets_1.sqlite").resolve()
    assert [c["id"] for c in pets["cases"]] == ["q0000", "q0001", "q0002"]
    assert pets["cases"][2]["question"] == dev[47]["question"]
    wta_suite = yaml.safe_load((out / "wta_1.sqleval.yaml").read_text())
    assert "database" not in wta_suite and wta_suite["pass_if"] == "exact_match"
    report = _report(pytester, out)
    by_id = {c["id"]: c for c in report["cases"]}
    assert sorted(by_id) == ["q0000", "q0001", "q0002", "q0003", "q0004", "q0005", "q0006"]
    assert all(c["exact_match"] for c in by_id.values())
    assert [by_id[f"q000{i}"]["execution_match"] for i in range(5)] == [True] * 5
    assert by_id["q0005"]["execution_match"] is None                # wta_1: exact match only
    assert {s["name"]: s["metrics"]["exact_match"] for s in report["suites"]} == {
        "pets_1": 1.0, "concert_singer": 1.0, "wta_1": 1.0}


@needs_shared
def test_sparc_gold_file_slice_keeps_interactions(pytester: pytest.Pytester) -> None:
    sparc = SHARED / "sparc_dev"
    blocks = (sparc / "dev_gold_from_thubpm.txt").read_text().split("\n\n")
    chosen = blocks[:2] + [b for b in blocks if "\twta_1" in b][:1]
    (pytester.path / "gold.txt").write_text("\n\n".join(chosen) + "\n\n")
    (pytester.path / "pred.txt").write_text(
        "\n\n".join("\n".join(line.split("\t")[0] for line in b.splitlines()) for b in chosen) + "\n\n")
    spider = SHARED / "spider_dev"
    done = _datasets(["import", "sparc", "gold.txt", "-o", "out", "--tables", str(spider / "tables.json"),
                      "--databases", str(spider / "database"), "--predictions", "pred.txt"], pytester.path)
    assert done.returncode == 0, done.stderr
    turns = [len(b.splitlines()) for b in chosen]
    ids = [json.loads(line)["id"] for line in (pytester.path / "out" / "predictions.jsonl").read_text().splitlines()]
    assert ids == [f"i{k:04d}/{n}" for k, count in enumerate(turns) for n in range(1, count + 1)]
    report = _report(pytester, pytester.path / "out")
    metrics = {s["name"]: s["metrics"] for s in report["suites"]}
    assert metrics["sparc/flight_2"]["question_match"] == 1.0 and metrics["sparc/flight_2"]["interaction_match"] == 1.0
    assert metrics["sparc/wta_1"]["interaction_match"] == 1.0 and "execution_accuracy" not in metrics["sparc/wta_1"]


@needs_shared
def test_bird_slice_with_its_database_in_place(pytester: pytest.Pytester) -> None:
    """BIRD's databases are a separate download: with one put where the suite says, the gold predictions
    score 100%, and the case keeps evidence, difficulty and question_id."""
    import sqlite3

    bird = SHARED / "bird_minidev"
    questions = json.loads((bird / "mini_dev_sqlite.json").read_text())[:4]
    assert {q["db_id"] for q in questions} == {"debit_card_specializing"}
    (pytester.path / "mini_dev_sqlite.json").write_text(json.dumps(questions))
    (pytester.path / "predict.json").write_text(json.dumps(
        {str(i): f"{q['SQL']}\t----- bird -----\t{q['db_id']}" for i, q in enumerate(questions)}))
    database = pytester.path / "dev_databases" / "debit_card_specializing" / "debit_card_specializing.sqlite"
    database.parent.mkdir(parents=True)
    with sqlite3.connect(database) as conn:
        conn.executescript("""
            CREATE TABLE customers (CustomerID INTEGER PRIMARY KEY, Segment TEXT, Currency TEXT);
            CREATE TABLE yearmonth (CustomerID INTEGER, Date TEXT, Consumption REAL);
            INSERT INTO customers VALUES (1, 'LAM', 'EUR'), (2, 'SME', 'CZK'), (3, 'LAM', 'CZK'), (4, 'SME', 'EUR');
            INSERT INTO yearmonth VALUES (1, '201201', 10.0), (3, '201203', 5.0), (2, '201301', 120.0),
                                         (4, '201305', 60.0), (1, '201302', 7.5);
        """)
    done = _datasets(["import", "bird", "mini_dev_sqlite.json", "-o", "out", "--tables", str(bird / "tables.json"),
                      "--predictions", "predict.json"], pytester.path)
    assert done.returncode == 0, done.stderr
    import yaml

    suite = yaml.safe_load((pytester.path / "out" / "debit_card_specializing.sqleval.yaml").read_text())
    assert suite["execution"] == "bird"
    first = suite["cases"][0]
    assert (first["id"], first["difficulty"], first["metadata"]) == (
        f"q{questions[0]['question_id']}", questions[0]["difficulty"], {"question_id": questions[0]["question_id"]})
    assert first["evidence"] == questions[0]["evidence"]
    report = _report(pytester, pytester.path / "out")
    assert [c["execution_match"] for c in report["cases"]] == [True] * 4
    assert {c["difficulty"] for c in report["cases"]} == {q["difficulty"] for q in questions}


@needs_shared
def test_logiccat_slice_resolves_file_names_and_flags_schema_only(pytester: pytest.Pytester) -> None:
    logiccat = SHARED / "logiccat"
    questions = json.loads((logiccat / "miniset" / "sqlite_mini_500.json").read_text())
    chosen = [q for q in questions if q["db_id"] == "AirCraft"][:2] + [q for q in questions if q["db_id"] == "bike"][:1]
    (pytester.path / "LC" / "miniset").mkdir(parents=True)
    (pytester.path / "LC" / "miniset" / "sqlite_mini_500.json").write_text(json.dumps(chosen))
    (pytester.path / "pred.txt").write_text("".join(" ".join(q["query"].split()) + "\n" for q in chosen))
    done = _datasets(["import", "logiccat", "LC", "-o", "out", "--databases", str(logiccat / "sqlite_database"),
                      "--predictions", "pred.txt"], pytester.path)
    assert done.returncode == 0, done.stderr
    assert "resolved LogicCat db_id 'AirCraft' to the file 'aircraft.db'" in done.stderr
    import yaml

    aircraft = yaml.safe_load((pytester.path / "out" / "AirCraft.sqleval.yaml").read_text())
    assert Path(aircraft["database"]).name == "aircraft.db" and aircraft["execution"] == "logiccat"
    assert [c["id"] for c in aircraft["cases"]] == [f"q{q['idx']:04d}" for q in chosen[:2]]
    assert aircraft["cases"][0]["tags"] == [f"type_{chosen[0]['type']}", "schema_only"]
    assert aircraft["cases"][0]["metadata"]["reasoning"] == chosen[0]["step"]
    report = _report(pytester, pytester.path / "out")
    assert all(c["execution_match"] and c["vacuous"] for c in report["cases"])  # empty tables: vacuous matches


@needs_shared
@pytest.mark.parametrize("args, message", [
    (["spider", "nowhere", "-o", "out"], "sqleval import: nowhere does not exist"),
    (["bird", "empty", "-o", "out"], "no BIRD questions in empty (looked for mini_dev_sqlite.json"),
    (["cosql", "empty", "-o", "out"], "no cosql interactions in empty"),
    (["logiccat", "LC", "-o", "out", "--databases", "nowhere"], "--databases nowhere is not a folder"),
    (["spider", "dev.json", "-o", "out", "--databases", "dev.json"], "--databases dev.json is not a folder"),
    (["spider", "dev.json", "-o", "dev.json"], "-o dev.json is a file, not a folder"),
])
def test_bad_importer_input_is_a_message(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    (pytester.path / "empty").mkdir()
    (pytester.path / "LC").mkdir()
    (pytester.path / "LC" / "data.sql").write_text("SELECT 1\tbike\t1\n")
    (pytester.path / "dev.json").write_text(json.dumps([{"db_id": "pets_1", "question": "q", "query": "SELECT 1"}]))
    done = _datasets(["import", *args], pytester.path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert message in done.stderr, done.stderr


@needs_shared
def test_bird_json_predictions_that_do_not_line_up_warn(tmp_path: Path) -> None:
    """A count that does not line up is a warning, in BIRD's JSON format too; a prediction whose db_id is not
    its question's (another slice's file) is named."""
    bird = SHARED / "bird_minidev"
    questions = json.loads((bird / "mini_dev_sqlite.json").read_text())[:3]
    (tmp_path / "q.json").write_text(json.dumps(questions))
    (tmp_path / "p.json").write_text(json.dumps({"0": f"SELECT 1\t----- bird -----\t{questions[0]['db_id']}",
                                                 "1": "SELECT 2\t----- bird -----\tformula_1"}))
    done = _datasets(["import", "bird", "q.json", "-o", "out", "--tables", str(bird / "tables.json"),
                      "--predictions", "p.json"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "p.json has 2 predictions for 3 questions" in done.stderr
    assert (f"p.json: the prediction for q{questions[1]['question_id']} names database formula_1, its question "
            f"{questions[1]['db_id']}") in done.stderr


# --------------------------------------------------------------------------- sqleval stats
STATS_SUITE = """\
suite: shapes
database: shapes.sqlite
cases:
  - id: one
    question: What are the x values?
    gold:
      - SELECT x FROM a
      - SELECT DISTINCT x FROM a
  - id: rows
    question: Count the rows
    expected: {columns: [n], rows: [[1]]}
  - id: conv
    interaction:
      - question: Show b rows
        gold: SELECT z FROM b
      - question: Only those joined to a
        gold: SELECT b.z FROM b JOIN a ON a.id = b.a_id JOIN a AS a2 ON a2.id = b.id WHERE a.y > 1
  - id: four
    question: what are the X values?
    gold: SELECT x FROM a
"""


def test_stats_of_turns_accepted_golds_and_expected_rows_by_hand(tmp_path: Path) -> None:
    """By hand: the entries are one, conv/1, conv/2, four (the expected-rows case has no SQL; of one's two
    golds the first counts). Spider hardness: three easy, conv/2 hard (WHERE + two joins: component1 = 3).
    Tokens 4, 4, 34, 4; tables 1, 1, 2, 1; table columns 1, 1, 5 (b.z, a.id, b.a_id, b.id, a.y: a2 is table a),
    1; words 5, 3, 5, 5.
    Lexical cosine: one = four (lower-cased), all other pairs share no word: mean pairwise 1/6, nearest
    neighbours 1, 0, 0, 1 -> 0.5; the one near pair is an exact duplicate, so 0 near-duplicates."""
    import sqlite3

    with sqlite3.connect(tmp_path / "shapes.sqlite") as conn:
        conn.executescript("CREATE TABLE a (id INTEGER, x TEXT, y INTEGER); CREATE TABLE b (id INTEGER, a_id INTEGER, z TEXT);")
    (tmp_path / "shapes.sqleval.yaml").write_text(STATS_SUITE)
    done = _datasets(["stats", "shapes.sqleval.yaml", "--json", "--similarity", "lexical"], tmp_path)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert (stats["cases"], stats["distinct_gold_sql"], stats["questions"], stats["unparsed_sql"]) == (4, 3, 4, 0)
    assert stats["difficulty"] == {"easy": {"count": 3, "percent": 75.0}, "hard": {"count": 1, "percent": 25.0}}
    used = {name: v["count"] for name, v in stats["clauses"].items() if v["count"]}
    assert used == {"WHERE": 1, "JOIN": 1}                     # the second gold's DISTINCT is not counted
    assert {b: v["count"] for b, v in stats["joins"].items()} == {"0": 3, "1": 0, "2": 1, "3+": 0}
    assert stats["sql_tokens"] == {"mean": 11.5, "median": 4.0, "min": 4.0, "max": 34.0}
    assert stats["tables_per_query"] == {"mean": 1.25, "median": 1.0, "min": 1.0, "max": 2.0}
    assert stats["columns_per_query"] == {"mean": 2.0, "median": 1.0, "min": 1.0, "max": 5.0}
    assert stats["question_words"] == {"mean": 4.5, "median": 5.0, "min": 3.0, "max": 5.0}
    assert {k: stats["duplicates"][k] for k in ("exact_questions", "exact_question_groups", "exact_gold_sql",
                                                "near_duplicate_questions")} == {
        "exact_questions": 1, "exact_question_groups": 1, "exact_gold_sql": 1, "near_duplicate_questions": 0}
    similarity = stats["similarity"]
    assert similarity["method"].startswith("lexical")
    assert similarity["mean_pairwise"] == pytest.approx(1 / 6) and similarity["mean_nearest_neighbour"] == 0.5


def test_sqleval_predictor_in_a_plain_test(items_app):
    """A plain test calls the team's model through sqleval_predictor in a --sqleval run; given a predictor
    without --sqleval it says what is missing instead of handing the test None."""
    (items_app.path / "team_model.py").write_text("def predict(case):\n    return 'SELECT count(*) FROM items'\n")
    items_app.makepyfile(test_app=textwrap.dedent("""
        import pytest
        from pytest_sqleval import assert_execution_match

        pytestmark = pytest.mark.sqleval_database("sqlite://", setup=["items.sql"])

        def test_model(sqleval_predictor):
            sql = sqleval_predictor("How many items are there?")
            assert_execution_match({"columns": ["n"], "rows": [[3]]}, sql)
    """))
    items_app.syspathinsert()
    result = items_app.runpytest("-p", "no:cacheprovider", "--sqleval", "--sqleval-predictor", "team_model:predict")
    result.assert_outcomes(passed=1)
    result = items_app.runpytest("-p", "no:cacheprovider", "--sqleval-predictor", "team_model:predict")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*sqleval_predictor: --sqleval-predictor is given without --sqleval; the model runs "
                                 "only in a --sqleval run: add --sqleval*"])


@pytest.mark.duckdb
def test_ini_duckdb_file_and_marker_setup_errors(items_app, duckdb_available):
    """The ini option points at a DuckDB file (relative to the ini file); a marker overrides it; a broken or
    missing setup script and an empty in-memory database are one clear line each, not a chained traceback."""
    import duckdb

    with duckdb.connect(str(items_app.path / "items.duckdb")) as conn:
        conn.execute(ITEMS_SQL)
    items_app.makeini("[pytest]\nsqleval_database = items.duckdb\n")
    (items_app.path / "broken.sql").write_text("CREATE TABLE t (;\n")
    result = _run(items_app, """
        import pytest
        from pytest_sqleval import assert_execution_match

        def test_ini(sqleval_engine, sqleval_query):
            assert sqleval_engine.dialect.name == "duckdb"
            assert sqleval_query("SELECT count(*) FROM items").rows == [(3,)]
            assert_execution_match("SELECT name FROM items WHERE qty IS NULL", "SELECT 'nut'")

        @pytest.mark.sqleval_database("sqlite://", setup="items.sql")      # one script as a plain string
        def test_marker_wins(sqleval_engine):
            assert sqleval_engine.dialect.name == "sqlite"

        @pytest.mark.sqleval_database("sqlite://", setup=["broken.sql"])
        def test_broken_script(sqleval_engine):
            pass

        @pytest.mark.sqleval_database("duckdb://")
        def test_empty_memory():
            assert_execution_match("SELECT 1", "SELECT 1")
    """)
    result.assert_outcomes(passed=2, failed=1, errors=1)
    output = result.stdout.str()
    assert "During handling of the above exception" not in output
    result.stdout.fnmatch_lines([
        "@pytest.mark.sqleval_database on test_app.py::test_broken_script: cannot open the database 'sqlite://': "
        "setup script */broken.sql failed on SQLite: *",
        "@pytest.mark.sqleval_database on test_app.py::test_empty_memory: duckdb:// is an empty in-memory database; "
        "build it with setup scripts: @pytest.mark.sqleval_database(\"duckdb://\", setup=?\"schema.sql\"?)*",
    ])
    # one line in the error section, not a chained copy above it (the short summary repeats it: in full under CI)
    errors = output.split("= ERRORS =", 1)[1].split("= FAILURES =", 1)[0]
    assert errors.count("failed on SQLite") == 1


def test_clause_subsets_read_as_pass_if_reads_them(items_app):
    """`clauses=` accepts what `pass_if: exact_match(SELECT, Where)` accepts (any case); an empty list or a
    name of another profile is an error listing the valid names; a subset failure names only its clauses."""
    result = _run(items_app, """
        import pytest
        from pytest_sqleval import assert_exact_match, check_exact_match

        pytestmark = pytest.mark.sqleval_database("sqlite://", setup=["items.sql"])

        def test_any_case():
            verdict = assert_exact_match("SELECT name FROM items WHERE qty > 1 ORDER BY name",
                                         "SELECT name FROM items WHERE qty > 1 ORDER BY id", clauses=["SELECT", " Where"])
            assert verdict.checked == ("select", "where")

        def test_errors():
            with pytest.raises(ValueError, match=r"unknown clause name\\(s\\) \\(none given\\) for the sqleval profile"):
                check_exact_match("SELECT 1", "SELECT 1", clauses=[])
            with pytest.raises(ValueError, match=r"'group_by' for the sqleval profile; valid clauses: select, .*, group,"):
                check_exact_match("SELECT 1", "SELECT 1", clauses=["group_by"])
            with pytest.raises(ValueError, match=r"'distinct' for the spider profile; valid clauses: .*, from$"):
                check_exact_match("SELECT 1", "SELECT 1", clauses=["distinct"], profile="spider")

        def test_order_only_fails():
            assert_exact_match("SELECT name FROM items WHERE qty > 1 ORDER BY name",
                               "SELECT name FROM items WHERE qty > 2 ORDER BY id", clauses="order")
    """)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "E*exact_match failed on order: clauses differ: order (profile sqleval)",
        "E*where            DIFFERS (not checked)",
        "E*order            DIFFERS",
    ])


@pytest.mark.postgres
def test_generate_from_a_url_with_a_password_variable(tmp_path: Path, postgres_url: str) -> None:
    """`sqleval generate 'postgresql://user:${VAR}@host/db'`: the variable is expanded to connect, the suite keeps
    `${VAR}` (expanded again when it runs), and the report and description never show the password."""
    import psycopg
    from sqlalchemy.engine import make_url

    from pytest_sqleval.execution.backends.postgresql import libpq_conninfo

    url = make_url(postgres_url)
    password = url.password or "qa-unused-pw"
    name = f"qa_gen_{os.getpid()}"
    with psycopg.connect(libpq_conninfo(url), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    try:
        with psycopg.connect(libpq_conninfo(url.set(database=name)), autocommit=True) as conn:
            conn.execute("CREATE TABLE parts (id int, name text, qty int); "
                         "INSERT INTO parts VALUES (1, 'bolt', 10), (2, 'nut', 3)")
        given = url.set(database=name).render_as_string(hide_password=False)
        given = given.replace(f"{url.username}@", f"{url.username}:${{QA_PGPW}}@", 1) if url.password is None else \
            given.replace(f":{url.password}@", ":${QA_PGPW}@", 1)
        kept = "SELECT name FROM parts WHERE qty > 5"
        script = {"request 1 of 1": [json.dumps([{"sql": kept}])],
                  f"SQL to explain:\n{kept}": [json.dumps({"question": "Which parts have more than 5 in stock?"})]}
        import yaml

        literal = given.replace("${QA_PGPW}", password)
        for database in (given, literal):
            out = tmp_path / "pg.sqleval.yaml"
            with ChatServer(script) as server:
                done = _datasets(["generate", database, "-o", str(out), "--model", "test-model", "--model-url",
                                  server.url, "--count", "1", "--cache-mode", "off"], tmp_path, OPENAI_API_KEY="k",
                                 QA_PGPW=password)
            assert done.returncode == 0, done.stderr
            suite = yaml.safe_load(out.read_text())
            assert suite["database"] == database  # as given: the suite must connect when it runs
            report = (tmp_path / "pg.report.json").read_text()
            assert password not in report and password not in suite["description"] and password not in done.stdout
            assert json.loads(report)["kept"] == 1
    finally:
        with psycopg.connect(libpq_conninfo(url), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name}")


def test_generate_expands_a_variable_in_a_database_path(tmp_path: Path) -> None:
    import sqlite3

    (tmp_path / "data").mkdir()
    with sqlite3.connect(tmp_path / "data" / "parts.sqlite") as conn:
        conn.executescript("CREATE TABLE parts (id INTEGER, name TEXT, qty INTEGER); "
                           "INSERT INTO parts VALUES (1, 'bolt', 10), (2, 'nut', 3);")
    kept = "SELECT name FROM parts WHERE qty > 5"
    script = {"request 1 of 1": [json.dumps([{"sql": kept}])],
              f"SQL to explain:\n{kept}": [json.dumps({"question": "Which parts have more than 5 in stock?"})]}
    with ChatServer(script) as server:
        done = _datasets(["generate", "${QA_DATA}/parts.sqlite", "-o", "out/parts.sqleval.yaml", "--model", "test-model",
                          "--model-url", server.url, "--count", "1", "--cache-mode", "off"], tmp_path,
                         OPENAI_API_KEY="k", QA_DATA=str(tmp_path / "data"))
        assert done.returncode == 0, done.stderr
        missing = _datasets(["generate", "${QA_NOT_SET_ANYWHERE}/parts.sqlite", "-o", "x.sqleval.yaml", "--model",
                             "test-model", "--model-url", server.url, "--cache-mode", "off"], tmp_path, OPENAI_API_KEY="k")
    import yaml

    assert yaml.safe_load((tmp_path / "out" / "parts.sqleval.yaml").read_text())["database"] == "../data/parts.sqlite"
    assert missing.returncode == 2 and "environment variable QA_NOT_SET_ANYWHERE is not set" in missing.stderr


def test_screen_boundaries(tmp_path: Path) -> None:
    """At most N rows keeps exactly N; a result of only NULLs is as vacuous as no rows (the gold check flags
    such golds); a count of zero is an answer; a comment alone or nothing is not SQL."""
    import sqlite3

    from pytest_sqleval.datasets.generate import screen
    from pytest_sqleval.execution.backends import backend_for, remember_backend

    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2), (3), (NULL);")
    url = f"sqlite:///{path}"
    backend = backend_for(url)
    engine = remember_backend(backend.open(url), backend)
    try:
        kept, drops = screen(engine, [(sql, None) for sql in (
            "SELECT n FROM t WHERE n IS NOT NULL",          # 3 rows: kept at --max-result-rows 3
            "SELECT n FROM t",                              # 4 rows
            "SELECT max(n) FROM t WHERE n > 5",             # one NULL
            "SELECT n FROM t WHERE n IS NULL",              # one NULL row
            "SELECT count(*) FROM t WHERE n > 5",           # 0: an answer
            "-- only a comment",
            "",
        )], dialect="sqlite", max_result_rows=3, timeout=5)
    finally:
        engine.dispose()
    assert [k.sql for k in kept] == ["SELECT n FROM t WHERE n IS NOT NULL", "SELECT count(*) FROM t WHERE n > 5"]
    assert [(d.filter, d.reason) for d in drops] == [
        ("too_many_rows", "more than 3 rows"), ("empty_result", "only NULLs"), ("empty_result", "only NULLs"),
        ("unparsable", "the model's answer contains no SQL: -- only a comment"), ("unparsable", "no SQL")]


def test_cosql_release_folder_layout(pytester: pytest.Pytester) -> None:
    """The CoSQL release keeps its questions in sql_state_tracking/cosql_dev.json and tables.json and database/
    at the top of the folder: given the folder, the importer finds all three."""
    from conftest import make_sqlite

    root = pytester.path / "cosql_dataset"
    make_sqlite(root / "database" / "shop" / "shop.sqlite",
                "CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);"
                "INSERT INTO singer VALUES (1, 'A', 25), (2, 'B', 35), (3, 'C', 40);")
    names = [[-1, "*"], [0, "singer_id"], [0, "name"], [0, "age"]]
    (root / "tables.json").write_text(json.dumps([{
        "db_id": "shop", "table_names_original": ["singer"], "table_names": ["singer"], "column_names_original": names,
        "column_names": names, "column_types": ["text", "number", "text", "number"], "primary_keys": [1],
        "foreign_keys": []}]))
    (root / "sql_state_tracking").mkdir()
    dialogues = [{"database_id": "shop", "interaction": [
        {"utterance": "Who are the singers?", "query": "SELECT name FROM singer"},
        {"utterance": "Only those over 30", "query": "SELECT name FROM singer WHERE age > 30"}]},
        {"database_id": "shop", "interaction": [{"utterance": "How many?", "query": "SELECT count(*) FROM singer"}]}]
    (root / "sql_state_tracking" / "cosql_dev.json").write_text(json.dumps(dialogues))
    (pytester.path / "pred.txt").write_text("SELECT name FROM singer\nSELECT name FROM singer WHERE age > 1\n\n"
                                            "SELECT count(*) FROM singer\n\n")
    done = _datasets(["import", "cosql", "cosql_dataset", "-o", "out", "--predictions", "pred.txt"], pytester.path)
    assert done.returncode == 0, done.stderr
    import yaml

    suite = yaml.safe_load((pytester.path / "out" / "shop.sqleval.yaml").read_text())
    assert suite["database"] == "../cosql_dataset/database/shop/shop.sqlite"
    assert suite["schema"] == {"tables": "../cosql_dataset/tables.json", "db_id": "shop"}
    assert [c["id"] for c in suite["cases"]] == ["i0000", "i0001"]
    report = _report(pytester, pytester.path / "out")
    by_id = {c["id"]: c for c in report["cases"]}
    # exact match ignores values (question match 3/3); the second turn's values differ (EX 2/3)
    assert [by_id[i]["exact_match"] for i in ("i0000/1", "i0000/2", "i0001/1")] == [True, True, True]
    assert [by_id[i]["execution_match"] for i in ("i0000/1", "i0000/2", "i0001/1")] == [True, False, True]
    assert report["suites"][0]["metrics"]["interaction_match"] == 1.0
