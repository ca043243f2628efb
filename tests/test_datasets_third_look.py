"""Issue 14, a third look: the importers, `sqleval stats` and `sqleval generate` on inputs nobody tuned for.

Files as other tools write them (a UTF-8 byte-order mark, CRLF line ends, Latin-1 bytes, the plugin's own JSON
Lines given where the official line format belongs), ids and db_ids a case id or a file name cannot hold, blank
gold SQL inside an interaction, blank lines inside a gold file; statistics of a small suite counted by hand (a
whole query in parentheses is no subquery) and of the public BIRD mini-dev questions against counts made here
in plain Python; the generation pipeline's duplicate filter and agreement check against the loopback
chat-completions server (tests/chat_server.py). Real SQLite files; tests on the public data skip when it is
absent."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from chat_server import ChatServer
from conftest import make_sqlite
from pytest_sqleval.datasets.generate import parse_mix, quotas
from pytest_sqleval.datasets.importers import DatasetError, import_dataset
from pytest_sqleval.datasets.stats import query_facts
from pytest_sqleval.loader import load_suite

SHARED = Path(os.environ.get("SQLEVAL_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "benchmarks"
BIRD = SHARED / "bird_minidev"
LOGICCAT = SHARED / "logiccat"

SHOP_SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'A', 25), (2, 'B', 35), (3, 'C', 40);
"""
BOM = b"\xef\xbb\xbf"


def _entry(db_id: str) -> dict:
    names = [[-1, "*"], [0, "singer_id"], [0, "name"], [0, "age"]]
    return {"db_id": db_id, "table_names_original": ["singer"], "table_names": ["singer"],
            "column_names_original": names, "column_names": names, "column_types": ["text", "number", "text", "number"],
            "primary_keys": [1], "foreign_keys": []}


def _spider(root: Path, *db_ids: str) -> Path:
    """A Spider-layout folder: tables.json and database/<db>/<db>.sqlite for each db_id."""
    for db_id in db_ids:
        make_sqlite(root / "database" / db_id / f"{db_id}.sqlite", SHOP_SQL)
    (root / "tables.json").write_text(json.dumps([_entry(d) for d in db_ids]), encoding="utf-8")
    return root


def _datasets(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})


def _report(pytester: pytest.Pytester, *args: str) -> dict:
    report = pytester.path / "report.json"
    report.unlink(missing_ok=True)  # a report of an earlier run in the same folder is not this run's
    result = pytester.runpytest_subprocess("--sqleval", *args, "-p", "no:cacheprovider", f"--sqleval-json={report}")
    assert report.exists(), result.stdout.str()
    return json.loads(report.read_text())


def _failure(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    return done.stderr


# --------------------------------------------------------------------------- encodings and line ends
def test_a_byte_order_mark_and_crlf_are_no_part_of_the_sql(pytester: pytest.Pytester) -> None:
    """Notepad and PowerShell write UTF-8 with a byte-order mark and CRLF line ends. The mark was read as the first
    character of the first SQL: a gold file's first gold failed to parse (a suite error), a predictions file's
    first prediction was a syntax miss, and a questions JSON stopped the import ("Unexpected UTF-8 BOM")."""
    root = _spider(pytester.path, "shop")
    (root / "dev_gold.sql").write_bytes(BOM + b"SELECT count(*) FROM singer\tshop\r\nSELECT name FROM singer\tshop\r\n")
    (root / "dev.json").write_bytes(BOM + json.dumps([
        {"db_id": "shop", "question": "How many singers?", "query": "SELECT count(*) FROM singer"},
        {"db_id": "shop", "question": "Their names?", "query": "SELECT name FROM singer"}]).encode())
    (root / "pred.txt").write_bytes(BOM + b"SELECT count(*) FROM singer\r\nSELECT name FROM singer\r\n")
    for src, out in (("dev_gold.sql", "from_gold"), ("dev.json", "from_json")):
        done = _datasets(["import", "spider", src, "-o", out, "--predictions", "pred.txt"], root)
        assert done.returncode == 0, done.stderr
        document = yaml.safe_load((root / out / "shop.sqleval.yaml").read_text(encoding="utf-8"))
        assert [c["gold"] for c in document["cases"]] == ["SELECT count(*) FROM singer", "SELECT name FROM singer"]
        predictions = [json.loads(line) for line in (root / out / "predictions.jsonl").read_text().splitlines()]
        assert predictions == [{"id": "q0000", "sql": "SELECT count(*) FROM singer"},
                               {"id": "q0001", "sql": "SELECT name FROM singer"}]
    for out in ("from_gold", "from_json"):  # one at a time: both suites are named `shop`
        report = _report(pytester, out)
        assert [(c["id"], c["outcome"]) for c in report["cases"]] == [("q0000", "passed"), ("q0001", "passed")]


def test_a_file_that_is_not_utf8_names_its_line_and_the_fix(tmp_path: Path) -> None:
    _spider(tmp_path, "shop")
    (tmp_path / "dev_gold.sql").write_text("SELECT 1\tshop\nSELECT 2\tshop\nSELECT 3\tshop\n")
    (tmp_path / "pred.txt").write_bytes("SELECT 1\nSELECT 2\nSELECT 'Müller'\n".encode("latin-1"))
    message = _failure(_datasets(["import", "spider", "dev_gold.sql", "-o", "out", "--predictions", "pred.txt"],
                                 tmp_path))
    assert "pred.txt line 3 is not UTF-8 text" in message and "fix: save the file as UTF-8" in message


def test_json_lines_given_as_official_predictions_is_a_message_not_syntax_misses(tmp_path: Path) -> None:
    """`--predictions` takes the official line format; the plugin's own JSON Lines there became one
    `{"id": ..., "sql": ...}` "SQL" per question: every case a syntax miss, and the import said nothing."""
    _spider(tmp_path, "shop")
    (tmp_path / "dev_gold.sql").write_text("SELECT 1\tshop\nSELECT 2\tshop\n")
    (tmp_path / "pred.jsonl").write_text('{"id": "q0000", "sql": "SELECT 1"}\n{"id": "q0001", "sql": "SELECT 2"}\n')
    message = _failure(_datasets(["import", "spider", "dev_gold.sql", "-o", "out", "--predictions", "pred.jsonl"],
                                 tmp_path))
    assert "pred.jsonl line 1 is a JSON object, not SQL" in message and "--sqleval-predictions" in message
    assert not (tmp_path / "out" / "predictions.jsonl").exists()
    # BIRD's predict_*.json with an upper-case suffix is still the JSON mapping, not lines of "SQL"
    bird = tmp_path / "bird"
    make_sqlite(bird / "dev_databases" / "shop" / "shop.sqlite", SHOP_SQL)
    (bird / "mini_dev_sqlite.json").write_text(json.dumps([
        {"question_id": 0, "db_id": "shop", "question": "How many?", "SQL": "SELECT count(*) FROM singer",
         "evidence": "", "difficulty": "simple"}]))
    (bird / "PREDICT.JSON").write_text(json.dumps({"0": "SELECT count(*) FROM singer\t----- bird -----\tshop"}))
    result = import_dataset("bird", bird, bird / "out", predictions=bird / "PREDICT.JSON")
    assert (bird / "out" / "predictions.jsonl").read_text().splitlines() == [
        json.dumps({"id": "q0", "sql": "SELECT count(*) FROM singer"})]
    assert result.warnings == []


# --------------------------------------------------------------------------- ids and db_ids
def test_bird_question_ids_a_case_id_cannot_hold_still_give_a_suite_that_loads(pytester: pytest.Pytester) -> None:
    """A question_id with a space or '/' became a case id the loader refuses (`'q7 b/c' contains '/'`): the whole
    suite stopped at collection. Duplicate ids get the question's index; predictions still pair by index."""
    root = pytester.path
    make_sqlite(root / "dev_databases" / "shop" / "shop.sqlite", SHOP_SQL)
    questions = [
        {"question_id": "7 b/c", "db_id": "shop", "question": "How many?", "SQL": "SELECT count(*) FROM singer",
         "evidence": "", "difficulty": "simple"},
        {"question_id": 3, "db_id": "shop", "question": "Names?", "SQL": "SELECT name FROM singer",
         "evidence": "names are in `name`", "difficulty": "moderate"},
        {"question_id": 3, "db_id": "shop", "question": "Ages?", "SQL": "SELECT age FROM singer",
         "evidence": None, "difficulty": "challenging"},
    ]
    (root / "mini_dev_sqlite.json").write_text(json.dumps(questions))
    (root / "predict.json").write_text(json.dumps({
        "0": "SELECT count(*) FROM singer\t----- bird -----\tshop",
        "1": "SELECT name FROM singer\t----- bird -----\tshop",
        "2": "SELECT name FROM singer\t----- bird -----\tshop"}))
    done = _datasets(["import", "bird", ".", "-o", "out", "--predictions", "predict.json"], root)
    assert done.returncode == 0, done.stderr
    suite = load_suite(root / "out" / "shop.sqleval.yaml")
    assert [c.id for c in suite.cases] == ["q7_b_c", "q3", "q3_2"]
    document = yaml.safe_load((root / "out" / "shop.sqleval.yaml").read_text(encoding="utf-8"))
    assert [c["metadata"]["question_id"] for c in document["cases"]] == ["7 b/c", 3, 3]
    assert [c.difficulty for c in suite.cases] == ["simple", "moderate", "challenging"]
    report = _report(pytester, "out")
    assert {c["id"]: c["outcome"] for c in report["cases"]} == {"q7_b_c": "passed", "q3": "passed", "q3_2": "missed"}


def test_db_ids_with_spaces_brackets_and_colons_run_each_as_its_own_suite(pytester: pytest.Pytester) -> None:
    db_ids = ["my shop", "a::b", "x[1]", "歌手"]
    root = _spider(pytester.path, *db_ids)
    (root / "dev.json").write_text(json.dumps([
        {"db_id": d, "question": f"How many in {d}?", "query": "SELECT count(*) FROM singer"} for d in db_ids]))
    (root / "pred.txt").write_text("SELECT count(*) FROM singer\nSELECT count(*) FROM singer\n"
                                   "SELECT count(*) FROM singer\nSELECT max(age) FROM singer\n")
    done = _datasets(["import", "spider", ".", "-o", "out", "--predictions", "pred.txt"], root)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in (root / "out").glob("*.sqleval.yaml"))
    assert names == ["__.sqleval.yaml", "a__b.sqleval.yaml", "my_shop.sqleval.yaml", "x_1_.sqleval.yaml"]
    report = _report(pytester, "out")
    by_suite = {c["suite"]: c["outcome"] for c in report["cases"]}
    assert by_suite == {"my shop": "passed", "a::b": "passed", "x[1]": "passed", "歌手": "missed"}


# --------------------------------------------------------------------------- malformed sources
def test_a_blank_gold_in_an_interaction_stops_the_import_naming_the_turn(tmp_path: Path) -> None:
    """Spider refused a blank `query`; SParC/CoSQL wrote it as `gold: '  '`, and `pytest --sqleval` then stopped
    at collection with the whole suite."""
    _spider(tmp_path, "shop")
    (tmp_path / "dev.json").write_text(json.dumps([
        {"database_id": "shop", "interaction": [{"utterance": "How many?", "query": "SELECT count(*) FROM singer"}]},
        {"database_id": "shop", "interaction": [{"utterance": "Names?", "query": "SELECT name FROM singer"},
                                                {"utterance": "And ages?", "query": "  "}]}]))
    message = _failure(_datasets(["import", "sparc", "dev.json", "-o", "out"], tmp_path))
    assert "turn 2 of interaction 1 (i0001/2) has `query`" in message and "fix:" in message
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("dataset, text, line", [
    # blank lines before the bad one: the message names the file's line, not the n-th SQL
    ("spider", "SELECT 1\tshop\n\n\nSELECT 2\n", 4),
    ("spider", "SELECT 1\tshop\r\nSELECT 2\t\tshop\r\n", 2),   # an empty db_id field
    ("logiccat", "SELECT 1\tshop\t1\n\nSELECT 2\n", 3),
])
def test_a_bad_gold_line_is_named_by_its_line_in_the_file(tmp_path: Path, dataset: str, text: str, line: int) -> None:
    _spider(tmp_path, "shop")
    (tmp_path / "sqlite_database").mkdir()
    (tmp_path / "gold.sql").write_text(text, newline="")
    with pytest.raises(DatasetError) as error:
        import_dataset(dataset, tmp_path / "gold.sql", tmp_path / "out")
    assert f"gold.sql line {line}: expected `" in str(error.value) and error.value.fix


def test_an_empty_interaction_alone_and_duplicate_questions_import_as_the_data_says(tmp_path: Path) -> None:
    _spider(tmp_path, "shop")
    (tmp_path / "dev.json").write_text(json.dumps([{"database_id": "shop", "interaction": []}]))
    with pytest.raises(DatasetError, match="holds no questions"):
        import_dataset("sparc", tmp_path / "dev.json", tmp_path / "out")
    # the same question twice is two cases (the data's own duplicates are for `sqleval stats` to count)
    same = {"db_id": "shop", "question": "How many singers?", "query": "SELECT count(*) FROM singer"}
    (tmp_path / "dev.json").write_text(json.dumps([same, same]))
    result = import_dataset("spider", tmp_path / "dev.json", tmp_path / "out")
    assert result.cases == 2 and [c.id for c in load_suite(result.suites[0]).cases] == ["q0000", "q0001"]


# --------------------------------------------------------------------------- statistics by hand
STATS_SUITE = """\
suite: singers
database: shop.sqlite
cases:
  - id: a
    question: How many singers?
    gold: SELECT count(*) FROM singer
  - id: b
    question: "  how many SINGERS?  "
    gold: (SELECT count(*) FROM singer)
  - id: c
    question: Wie heißt der älteste Sänger?
    gold: SELECT name FROM singer ORDER BY age DESC LIMIT 1
  - id: d
    gold: SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)
  - id: e
    question: Names of singers older than 30
    gold: SELECT name FROM singer WHERE age > 30
  - id: f
    question: Names of singers older than 30 please
    gold: "select name   from singer where age > 30;"
"""


def test_statistics_of_a_small_suite_counted_by_hand(tmp_path: Path) -> None:
    """Six cases. A whole query in parentheses (b) nests in no other query: it was counted as a subquery."""
    make_sqlite(tmp_path / "shop.sqlite", SHOP_SQL)
    (tmp_path / "singers.sqleval.yaml").write_text(STATS_SUITE, encoding="utf-8")
    done = _datasets(["stats", "singers.sqleval.yaml", "--json", "--similarity", "lexical"], tmp_path)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert (stats["cases"], stats["questions"], stats["unparsed_sql"]) == (6, 5, 0)
    assert stats["distinct_gold_sql"] == 6          # e and f differ in case only: distinct, but one lower-cased
    assert stats["duplicates"]["exact_gold_sql"] == 1
    assert stats["duplicates"]["exact_questions"] == 1 and stats["duplicates"]["exact_question_groups"] == 1
    counts = {k: v["count"] for k, v in stats["clauses"].items() if v["count"]}
    assert counts == {"WHERE": 3, "ORDER BY": 1, "LIMIT": 1, "subquery": 1}
    assert stats["clauses"]["WHERE"]["percent"] == 50.0
    assert stats["joins"]["0"]["count"] == 6
    # Spider hardness: a, e, f one component or none; c ORDER BY + LIMIT; d a nested query
    assert {k: v["count"] for k, v in stats["difficulty"].items()} == {"easy": 4, "medium": 1, "hard": 1}
    assert stats["tables_per_query"] == {"mean": 1.0, "median": 1.0, "min": 1.0, "max": 1.0}
    assert stats["columns_per_query"]["mean"] == pytest.approx(8 / 6)            # count(*) names no column
    assert stats["question_words"] == {"mean": 4.8, "median": 5.0, "min": 3.0, "max": 7.0}
    # lexical cosine of word counts: a = b; e . f = 6 / sqrt(6 * 7); a . e = 1 / sqrt(18); a . f = 1 / sqrt(21)
    ef, ae, af = 6 / math.sqrt(42), 1 / math.sqrt(18), 1 / math.sqrt(21)
    similarity = stats["similarity"]
    assert similarity["method"].startswith("lexical")
    assert similarity["mean_pairwise"] == pytest.approx((1 + ef + 2 * ae + 2 * af) / 10, abs=1e-9)
    assert similarity["mean_nearest_neighbour"] == pytest.approx((1 + 1 + 0 + 2 * ef) / 5, abs=1e-6)
    nearest = {n["id"]: n["nearest"] for n in similarity["nearest_neighbour"]}
    assert nearest["singers::a"] == "singers::b" and nearest["singers::e"] == "singers::f"
    assert stats["duplicates"]["near_duplicate_questions"] == 2  # e and f (a and b are exact duplicates)


@pytest.mark.parametrize("sql, subquery", [
    ("(SELECT a FROM t)", False),
    ("((SELECT a FROM t))", False),
    ("(SELECT a FROM t UNION SELECT a FROM u)", False),
    ("((SELECT a FROM t) EXCEPT (SELECT a FROM u))", False),
    ("(SELECT a FROM t WHERE a IN (SELECT b FROM u))", True),
    ("SELECT a FROM ((SELECT a FROM t)) AS s", True),
    ("SELECT (SELECT max(b) FROM u) FROM t", True),
])
def test_a_parenthesised_statement_is_no_subquery(sql: str, subquery: bool) -> None:
    facts = query_facts(sql)
    assert facts.parsed and ("subquery" in facts.clauses) is subquery


@pytest.mark.skipif(not (BIRD / "mini_dev_sqlite.json").is_file(), reason=f"the public data is not at {SHARED}")
def test_stats_of_bird_minidev_against_counts_made_here(tmp_path: Path) -> None:
    """The 500 mini-dev questions, described without their databases (a separate download): difficulty from the
    data, clause usage against keyword counts over the gold SQL (none of these keywords occurs in a string or
    an identifier of this set), question words from str.split."""
    data = json.loads((BIRD / "mini_dev_sqlite.json").read_text(encoding="utf-8"))
    result = import_dataset("bird", BIRD, tmp_path / "bird")
    assert result.cases == 500 and len(result.suites) == 11
    done = _datasets(["stats", str(tmp_path / "bird"), "--json", "--similarity", "lexical"], tmp_path)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert len([s for s in stats["suites"] if s.get("missing_database")]) == 11
    assert stats["cases"] == 500 and stats["distinct_gold_sql"] == 500
    assert {k: v["count"] for k, v in stats["difficulty"].items()} == dict(Counter(e["difficulty"] for e in data))
    assert {k: v["count"] for k, v in stats["difficulty"].items()} == {"simple": 148, "moderate": 250, "challenging": 102}

    def count(pattern: str) -> int:
        return sum(1 for e in data if re.search(pattern, e["SQL"], re.IGNORECASE))

    clauses = {k: v["count"] for k, v in stats["clauses"].items()}
    assert clauses["WHERE"] == count(r"\bwhere\b") == 452
    assert clauses["JOIN"] == count(r"\bjoin\b") == 407
    assert clauses["GROUP BY"] == count(r"\bgroup\s+by\b") == 55
    assert clauses["HAVING"] == count(r"\bhaving\b") == 14
    assert clauses["LIMIT"] == count(r"\blimit\b") == 99
    assert clauses["CTE"] == count(r"^\s*with\b") == 6
    assert clauses["set operation"] == count(r"\b(union|intersect|except)\b") == 2
    assert clauses["window"] == count(r"\bover\s*\(") == 5
    assert clauses["CASE"] == count(r"\b(case|iif)\b") == 89
    assert clauses["DISTINCT"] == count(r"\bdistinct\b") == 84
    words = [sum(1 for t in e["question"].split() if re.search(r"\w", t)) for e in data]  # a lone `-`, `?` is no word
    assert stats["question_words"]["mean"] == pytest.approx(sum(words) / 500)
    assert (stats["question_words"]["min"], stats["question_words"]["max"]) == (min(words), max(words))


@pytest.mark.skipif(not (LOGICCAT / "data.sql").is_file(), reason=f"the public data is not at {SHARED}")
def test_the_full_logiccat_gold_file_imports_every_line(tmp_path: Path) -> None:
    """data.sql (4036 lines `SQL<TAB>db_id<TAB>type`, the full set): one suite per db_id, the four file names
    that are not the db_id resolved, the schema-only databases flagged, every case tagged with its type."""
    lines = [line.split("\t") for line in (LOGICCAT / "data.sql").read_text(encoding="utf-8").splitlines()]
    result = import_dataset("logiccat", LOGICCAT / "data.sql", tmp_path / "out")
    assert result.cases == len(lines) == 4036
    per_db = Counter(fields[1] for fields in lines)
    assert len(result.suites) == len(per_db) == 44
    resolved = sorted(re.findall(r"db_id '([^']+)'", " ".join(w for w in result.warnings if w.startswith("resolved"))))
    assert resolved == ["AirCraft", "AlarmSystem", "electric_scooter", "waterPump"]
    assert any(w.startswith("38 of 44 databases are schema-only") for w in result.warnings), result.warnings
    water = load_suite(tmp_path / "out" / "waterPump.sqleval.yaml")
    assert len(water.cases) == per_db["waterPump"]
    assert water.cases[0].databases[0].file_path.name == "water pump.db"
    types = Counter(fields[2].strip() for fields in lines if fields[1] == "waterPump")
    assert Counter(t for c in water.cases for t in c.tags if t.startswith("type_")) == \
        {f"type_{k}": v for k, v in types.items()}


# --------------------------------------------------------------------------- generation
PARTS_SQL = """
CREATE TABLE suppliers (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
CREATE TABLE parts (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER, supplier_id INTEGER REFERENCES suppliers(id));
INSERT INTO suppliers VALUES (1, 'Acme', 'DE'), (2, 'Bolt Co', 'US');
INSERT INTO parts VALUES (1, 'bolt', 10, 1), (2, 'nut', 3, 1), (3, 'gear', 7, 2), (4, 'shaft', 2, 2);
"""
GERMAN = "SELECT COUNT(*) FROM suppliers WHERE country = 'DE'"      # 1
BOLTS = "SELECT COUNT(*) FROM parts WHERE qty = 10"                 # 1: the same result over another table
NUTS = "SELECT COUNT(*) FROM parts WHERE qty = 3"                   # 1: the same result, table and clauses as BOLTS
UNSURE = "SELECT name FROM parts WHERE qty > 5"
NOPE = "SELECT name FROM suppliers WHERE country = 'US'"


def test_generate_keeps_same_result_queries_over_other_tables_and_reads_the_check(tmp_path: Path) -> None:
    """The duplicate filter drops "the same result and the same tables and clauses" (README): it compared the
    number of tables, so a count over `parts` was dropped as a duplicate of a count over `suppliers`. The check
    pass read "**Yes**" as no verdict (dropped) and "Not sure" as a disagreement."""
    make_sqlite(tmp_path / "parts.sqlite", PARTS_SQL)
    proposed = [{"reasoning": "r", "sql": sql} for sql in (GERMAN, BOLTS, NUTS, UNSURE, NOPE)]
    script = {
        "request 1 of 1": [json.dumps(proposed)],
        f"SQL to explain:\n{GERMAN}": ['{"question": "How many suppliers are German?"}'],
        f"SQL to explain:\n{BOLTS}": ['{"question": "How many parts have exactly ten in stock?"}'],
        f"SQL to explain:\n{UNSURE}": ['{"question": "Which parts have more than five in stock?"}'],
        f"SQL to explain:\n{NOPE}": ['{"question": "Which suppliers are American?"}'],
        "Proposed question: How many suppliers": ["**Yes**, it counts the German suppliers."],
        "Proposed question: How many parts": ['{"reasoning": "fine", "agree": "true"}'],
        "Proposed question: Which parts": ["Not sure: the threshold could be inclusive."],
        "Proposed question: Which suppliers": ["No. It lists US suppliers, fine... no wait"],
    }
    out = tmp_path / "parts.sqleval.yaml"
    with ChatServer(script) as server:
        done = _datasets(["generate", "parts.sqlite", "-o", str(out), "--model", "test-model", "--model-url",
                          server.url, "--count", "5", "--check", "--cache-mode", "off"], tmp_path,
                         OPENAI_API_KEY="test-key")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "parts.report.json").read_text())
    drops = {d["sql"]: (d["filter"], d["reason"]) for d in report["drops"]}
    assert drops[NUTS][0] == "duplicate" and BOLTS in drops[NUTS][1]
    assert drops[UNSURE] == ("disagreement", "the model's check answer has no verdict")
    assert drops[NOPE] == ("disagreement", "the model says question and SQL disagree")
    assert set(drops) == {NUTS, UNSURE, NOPE}
    suite = load_suite(out)
    assert [c.gold for c in suite.cases] == [GERMAN, BOLTS]
    assert report["dropped"]["duplicate"] == 1 and report["dropped"]["disagreement"] == 2 and report["kept"] == 2


@pytest.mark.parametrize("dataset, file_name, good, bad, message", [
    ("spider", "dev.json", {"db_id": "shop", "question": "q", "query": "SELECT 1"},
     {"db_id": "shop", "question": "q", "query_toks": ["SELECT", "1"]}, "entry 2 (counted from 0) has no `query`"),
    ("sparc", "dev.json", {"database_id": "shop", "interaction": [{"utterance": "u", "query": "SELECT 1"}]},
     {"database_id": "shop", "final": {"utterance": "u", "query": "SELECT 1"}}, "entry 2 (counted from 0) has no `interaction`"),
    ("bird", "dev.json", {"question_id": 0, "db_id": "shop", "question": "q", "SQL": "SELECT 1"},
     "SELECT 1", "entry 2 (counted from 0) is not an object"),
    ("logiccat", "data.json", {"db_id": "shop", "idx": 1, "type": "1", "question": "q", "query": "SELECT 1"},
     {"idx": 3, "type": "1", "question": "q", "query": "SELECT 1"}, "entry 2 (counted from 0) has no `db_id`"),
])
def test_one_malformed_entry_among_good_ones_is_named(tmp_path: Path, dataset: str, file_name: str, good, bad,
                                                      message: str) -> None:
    """A single broken entry in a 1,000-entry file said the file "is not a Spider questions file"."""
    _spider(tmp_path, "shop")
    (tmp_path / "sqlite_database").mkdir()
    (tmp_path / file_name).write_text(json.dumps([good, good, bad, good]))
    with pytest.raises(DatasetError) as error:
        import_dataset(dataset, tmp_path / file_name, tmp_path / "out")
    assert f"{file_name}: {message}" in str(error.value) and "or remove entry 2" in error.value.fix
    # a file that is another file altogether (tables.json given as the questions) still says what it is not
    with pytest.raises(DatasetError, match="is not a .* file"):
        import_dataset(dataset, tmp_path / "tables.json", tmp_path / "out")


MIXED_SUITE = """\
suite: mixed
database: {database}
cases:
  - id: 7
    question: 2024
    difficulty: hard
    gold: [SELECT count(*) FROM singer, SELECT count(singer_id) FROM singer]
  - id: rows
    question: Ages?
    expected: {{columns: [age], rows: [[25], [35], [40]]}}
  - id: talk
    interaction:
      - question: Singers?
        gold: SELECT name FROM singer
      - question: Only the old ones?
        gold: SELECT name FROM singer WHERE age > 30
"""


def test_stats_read_a_suite_the_same_with_or_without_its_database(tmp_path: Path) -> None:
    """Without its database file a suite is read from its YAML alone: a numeric `question: 2024` (text to the
    loader) stopped `sqleval stats` with a traceback there, and an unquoted `yes` must be the loader's error."""
    make_sqlite(tmp_path / "shop.sqlite", SHOP_SQL)
    (tmp_path / "here").mkdir()
    (tmp_path / "gone").mkdir()
    (tmp_path / "here" / "mixed.sqleval.yaml").write_text(MIXED_SUITE.format(database="../shop.sqlite"))
    (tmp_path / "gone" / "mixed.sqleval.yaml").write_text(MIXED_SUITE.format(database="../nowhere.sqlite"))
    figures = {}
    for folder in ("here", "gone"):
        done = _datasets(["stats", folder, "--json", "--similarity", "lexical"], tmp_path)
        assert done.returncode == 0, done.stderr
        stats = json.loads(done.stdout)
        assert bool(stats["suites"][0].get("missing_database")) is (folder == "gone")
        stats.pop("suites")  # paths and the missing-database note differ; every figure is the same
        figures[folder] = stats
    assert figures["here"] == figures["gone"]
    stats = figures["gone"]
    assert (stats["cases"], stats["questions"]) == (3, 3)          # the expected-rows case is not counted
    assert {k: v["count"] for k, v in stats["difficulty"].items()} == {"easy": 2, "hard": 1}
    assert [n["id"] for n in stats["similarity"]["nearest_neighbour"]] == ["mixed::7", "mixed::talk/1", "mixed::talk/2"]
    broken = (tmp_path / "gone" / "mixed.sqleval.yaml").read_text().replace("question: 2024", "question: yes")
    (tmp_path / "gone" / "mixed.sqleval.yaml").write_text(broken)
    message = _failure(_datasets(["stats", "gone"], tmp_path))
    assert "`question:` of '7' must be text" in message and "quote it" in message


def test_database_file_names_with_uri_characters_are_read_never_created(pytester: pytest.Pytester) -> None:
    """The schema-only check opened `file:<path>?mode=ro`: a '#' or '?' in a file name cut the URI there, so
    the import created an empty `a` beside `a#b.db` (read-write: `mode=ro` was cut off too) and missed that
    `a#b.db` has no rows; `%20` was decoded into a space and the file not found."""
    root = pytester.path
    names = ["a#b", "c?d", "e%20f", "g h"]
    for name in names:
        make_sqlite(root / "sqlite_database" / f"{name}.db",
                    "CREATE TABLE t (x INTEGER);" + ("INSERT INTO t VALUES (1);" if name == "g h" else ""))
    (root / "data.json").write_text(json.dumps([{"db_id": n, "type": "2", "idx": i + 1, "question": f"x of {n}?",
                                                 "query": "SELECT x FROM t"} for i, n in enumerate(names)]))
    before = sorted(p.name for p in (root / "sqlite_database").iterdir())
    result = import_dataset("logiccat", root / "data.json", root / "out")
    assert sorted(p.name for p in (root / "sqlite_database").iterdir()) == before
    assert "3 of 4 databases are schema-only (no rows): a#b, c?d, e%20f;" in " ".join(result.warnings)
    (root / "pred.jsonl").write_text(json.dumps({"id": "q0004", "sql": "SELECT x FROM t"}) + "\n")
    report = _report(pytester, "out", "-m", "not schema_only", "--sqleval-predictions", "pred.jsonl")
    assert [(c["id"], c["outcome"]) for c in report["cases"]] == [("q0004", "passed")]


@pytest.mark.parametrize("mix, count, expected", [
    ("join=1e308,where=1e308", 20, {"join": 10, "where": 10}),   # the weights summed to inf: NaN quotas, a traceback
    ("where=1e308,join=1", 20, {"where": 20}),                   # 20 * 1e308 overflowed: an inf quota
    ("join=3,group_by=2,hard=1", 7, {"join": 4, "group_by": 2, "hard": 1}),  # ordinary weights as before
])
def test_mix_weights_near_the_float_limit_share_out_the_count(mix: str, count: int, expected: dict) -> None:
    assert quotas(parse_mix(mix), count) == expected
