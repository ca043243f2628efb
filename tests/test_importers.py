"""`sqleval import spider|sparc|cosql|bird|logiccat`: suites written from each dataset's own files, then run
through `pytest --sqleval` (a subprocess, as a user runs it) against hand-computed figures. Small datasets in
the official formats are built here on real SQLite files; the round trips on the public data under
../shared/benchmarks skip when it is absent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import make_sqlite
from pytest_sqleval.datasets.importers import (
    DatasetError,
    import_dataset,
    official_text,
    read_interactions,
    resolve_database_files,
)
from pytest_sqleval.errors import SuiteError
from pytest_sqleval.loader import load_suite

SHARED = Path(os.environ.get("SQLEVAL_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "benchmarks"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"the public benchmark data is not at {SHARED}")
FULL = os.environ.get("SQLEVAL_FULL_ROUNDTRIP") == "1"
full_roundtrip = pytest.mark.skipif(not FULL, reason="a full round trip takes minutes here: set SQLEVAL_FULL_ROUNDTRIP=1 "
                                                     "(benchmarks/import_roundtrip.py runs them too)")

SHOP_SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'A', 25), (2, 'B', 35), (3, 'C', 40);
"""


def _entry(db_id: str, table: str, columns: list[tuple[str, str]]) -> dict:
    names = [[-1, "*"]] + [[0, c] for c, _ in columns]
    return {"db_id": db_id, "table_names_original": [table], "table_names": [table], "column_names_original": names,
            "column_names": names, "column_types": ["text"] + [t for _, t in columns], "primary_keys": [1],
            "foreign_keys": []}


@pytest.fixture
def spider_dir(tmp_path: Path) -> Path:
    """A Spider-layout folder: dev.json, tables.json, database/shop/shop.sqlite; `gone` has no database file."""
    root = tmp_path / "spider"
    make_sqlite(root / "database" / "shop" / "shop.sqlite", SHOP_SQL)
    tables = [_entry("shop", "singer", [("singer_id", "number"), ("name", "text"), ("age", "number")]),
              _entry("gone", "player", [("id", "number"), ("name", "text")])]
    (root / "tables.json").write_text(json.dumps(tables))
    dev = [
        {"db_id": "shop", "question": "How many singers?", "query": "SELECT count(*) FROM singer"},
        {"db_id": "gone", "question": "Names of players?", "query": "SELECT name FROM player"},
        {"db_id": "shop", "question": "Singers older than 30?", "query": "SELECT name FROM singer WHERE age  >  30"},
        {"db_id": "shop", "question": "The oldest singer?", "query": "SELECT name FROM singer ORDER BY age DESC LIMIT 1"},
    ]
    (root / "dev.json").write_text(json.dumps(dev))
    return root


def _sqleval(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def _pytest(paths: list[Path], cwd: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    report = cwd / "report.json"
    if report.exists():
        report.unlink()
    done = subprocess.run([sys.executable, "-m", "pytest", "--sqleval", *map(str, paths), "-q", "-p", "no:cacheprovider",
                           "-o", "addopts=", "--rootdir", str(cwd), f"--sqleval-json={report}", *extra],
                          cwd=cwd, capture_output=True, text=True, timeout=1800)
    return done, (json.loads(report.read_text()) if report.exists() else None)


# --------------------------------------------------------------------------- official reading rules
def test_official_line_rules(tmp_path: Path) -> None:
    path = tmp_path / "pred.txt"
    path.write_bytes(b"SELECT a FROM t\tdb\r\n  SELECT b FROM t  \n\n\nSELECT c FROM t")
    # a blank line ends an interaction (two blank lines: an empty interaction); the unclosed last one is kept
    assert read_interactions(path) == [[["SELECT a FROM t", "db"], ["SELECT b FROM t"]], [], [["SELECT c FROM t"]]]
    assert read_interactions(path, keep_unclosed_last=False) == [[["SELECT a FROM t", "db"], ["SELECT b FROM t"]], []]
    assert official_text("SELECT a FROM t WHERE x > = value", prediction=True) == "SELECT a FROM t WHERE x >= 1"
    assert official_text("SELECT 'value' WHERE y ! = 2", prediction=False) == "SELECT 'value' WHERE y != 2"
    assert official_text("SELECT YEAR(CURDATE()) - 1", prediction=False) == "SELECT 2020- 1"


# --------------------------------------------------------------------------- Spider
def test_spider_import_and_run(tmp_path: Path, spider_dir: Path) -> None:
    predictions = tmp_path / "pred.txt"
    predictions.write_text("SELECT count(*) FROM singer\tshop\n"          # the text after a TAB is dropped
                           "SELECT name FROM player\n"
                           "SELECT name FROM singer WHERE age > value\n"   # `value` -> 1: EM yes (values ignored), EX no
                           "SELECT name FROM singer ORDER BY age LIMIT 1\n")
    out = tmp_path / "suites"
    done = _sqleval(["import", "spider", str(spider_dir), "-o", str(out), "--predictions", str(predictions)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote 2 suites (4 cases)" in done.stdout and "1 of 2 databases not found (gone)" in done.stderr
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == [  # references only: nothing copied
        "gone.jsonl", "gone.sqleval.yaml", "predictions.jsonl", "shop.jsonl", "shop.sqleval.yaml"]
    shop = yaml.safe_load((out / "shop.sqleval.yaml").read_text())
    assert shop["database"] == "../spider/database/shop/shop.sqlite"
    assert shop["schema"] == {"tables": "../spider/tables.json", "db_id": "shop"}
    assert (shop["execution"], shop["exact_match"], shop["pass_if"]) == ("test-suite", "spider", "execution_match")
    assert [c["id"] for c in shop["cases"]] == ["q0000", "q0002", "q0003"]
    assert shop["cases"][0]["question"] == "How many singers?"
    gone = yaml.safe_load((out / "gone.sqleval.yaml").read_text())
    assert "database" not in gone and gone["pass_if"] == "exact_match" and "only exact match" in gone["description"]
    lines = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert lines[0] == {"id": "q0000", "sql": "SELECT count(*) FROM singer"}
    assert lines[2] == {"id": "q0002", "sql": "SELECT name FROM singer WHERE age > 1"}

    run, report = _pytest([out], tmp_path)
    assert report is not None, run.stdout + run.stderr
    by_id = {c["id"]: c for c in report["cases"]}
    assert [by_id[i]["exact_match"] for i in ("q0000", "q0001", "q0002", "q0003")] == [True, True, True, False]
    assert [by_id[i]["execution_match"] for i in ("q0000", "q0002", "q0003")] == [True, False, False]
    metrics = report["overall"]["metrics"]
    assert metrics["exact_match"] == pytest.approx(3 / 4)
    assert metrics["execution_accuracy"] == pytest.approx(1 / 3)   # over the 3 cases with a database

    # one database alone: its suite reads its own predictions file
    run, report = _pytest([out / "shop.sqleval.yaml"], tmp_path)
    assert report is not None and len(report["cases"]) == 3, run.stdout


def test_spider_gold_file_and_short_predictions(tmp_path: Path, spider_dir: Path) -> None:
    gold = tmp_path / "dev_gold.sql"
    gold.write_text("SELECT count(*) FROM singer\tshop\nSELECT name FROM singer\tshop\n")
    predictions = tmp_path / "p.txt"
    predictions.write_text("SELECT count(*) FROM singer\n")
    result = import_dataset("spider", gold, tmp_path / "out", predictions=predictions,
                            tables=spider_dir / "tables.json", databases=spider_dir / "database")
    assert result.cases == 2 and result.predictions == 1 and result.missing_predictions == 1
    assert any("1 predictions for 2 questions" in w for w in result.warnings)
    lines = (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()
    assert json.loads(lines[1]) == {"id": "q0001", "sql": None}  # recorded as no prediction
    suite = load_suite(tmp_path / "out" / "shop.sqleval.yaml")
    assert suite.cases[1].question is None and suite.cases[1].gold == "SELECT name FROM singer"


# --------------------------------------------------------------------------- SParC and CoSQL
def _interactions() -> list[dict]:
    return [
        {"database_id": "shop", "interaction": [
            {"utterance": "How many singers?", "query": "SELECT count(*) FROM singer"},
            {"utterance": "Their names?", "query": "SELECT name FROM singer"}]},
        {"database_id": "shop", "interaction": [
            {"utterance": "The oldest?", "query": "SELECT name FROM singer ORDER BY age DESC LIMIT 1"}]},
        {"database_id": "gone", "interaction": [{"utterance": "Players?", "query": "SELECT name FROM player"}]},
    ]


@pytest.mark.parametrize("kind,file_name", [("sparc", "dev.json"), ("cosql", "cosql_dev.json")])
def test_multiturn_import_and_run(tmp_path: Path, spider_dir: Path, kind: str, file_name: str) -> None:
    src = tmp_path / kind
    src.mkdir()
    (src / file_name).write_text(json.dumps(_interactions()))
    predictions = tmp_path / "pred.txt"
    # interaction 0 right, interaction 1 wrong, interaction 2 has no line at all (no prediction)
    predictions.write_text("SELECT count(*) FROM singer\nSELECT name FROM singer\n\n"
                           "SELECT name FROM singer ORDER BY age LIMIT 1\n\n")
    out = tmp_path / "suites"
    done = _sqleval(["import", kind, str(src), "-o", str(out), "--predictions", str(predictions),
                     "--tables", str(spider_dir / "tables.json"), "--databases", str(spider_dir / "database")], tmp_path)
    assert done.returncode == 0, done.stderr
    shop = yaml.safe_load((out / "shop.sqleval.yaml").read_text())
    assert shop["pass_if"] == "exact_match"
    assert shop["cases"][0] == {"id": "i0000", "interaction": [
        {"question": "How many singers?", "gold": "SELECT count(*) FROM singer"},
        {"question": "Their names?", "gold": "SELECT name FROM singer"}]}
    ids = [json.loads(line)["id"] for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert ids == ["i0000/1", "i0000/2", "i0001/1", "i0002/1"]
    run, report = _pytest([out], tmp_path)
    assert report is not None, run.stdout + run.stderr
    metrics = report["overall"]["metrics"]
    assert metrics["question_match"] == pytest.approx(2 / 4)
    assert metrics["interaction_match"] == pytest.approx(1 / 3)
    assert {c["id"]: c.get("outcome") for c in report["cases"]}["i0002/1"] != "passed"


# --------------------------------------------------------------------------- BIRD
@pytest.fixture
def bird_dir(tmp_path: Path) -> Path:
    root = tmp_path / "bird"
    make_sqlite(root / "dev_databases" / "shop" / "shop.sqlite", SHOP_SQL)  # `racing` is missing
    (root / "dev_tables.json").write_text(json.dumps([
        _entry("shop", "singer", [("singer_id", "number"), ("name", "text"), ("age", "number")]),
        _entry("racing", "races", [("id", "number"), ("name", "text")])]))
    (root / "mini_dev_sqlite.json").write_text(json.dumps([
        {"question_id": 10, "db_id": "shop", "question": "Who is older than 30?", "evidence": "older refers to age > 30",
         "SQL": "SELECT name FROM singer\nWHERE age > 30", "difficulty": "simple"},
        {"question_id": 11, "db_id": "shop", "question": "Names and ages by age?", "evidence": "",
         "SQL": "SELECT name, age FROM singer ORDER BY age", "difficulty": "challenging"},
        {"question_id": 12, "db_id": "racing", "question": "How many races?", "evidence": "",
         "SQL": "SELECT count(*) FROM races", "difficulty": "moderate"},
    ]))
    return root


def test_bird_import_and_run(tmp_path: Path, bird_dir: Path) -> None:
    predictions = tmp_path / "predict.json"
    predictions.write_text(json.dumps({
        "0": "SELECT name FROM singer WHERE age >= 35\t----- bird -----\tshop",   # the same set of rows: a match
        "1": "SELECT age, name FROM singer\t----- bird -----\tshop",            # columns swapped: BIRD compares tuples
        "2": "SELECT count(*) FROM races\t----- bird -----\tracing"}))
    out = tmp_path / "suites"
    done = _sqleval(["import", "bird", str(bird_dir), "-o", str(out), "--predictions", str(predictions)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 of 2 databases not found (racing)" in done.stderr
    shop = yaml.safe_load((out / "shop.sqleval.yaml").read_text())
    assert shop["execution"] == "bird"
    assert shop["cases"][0] == {"id": "q10", "question": "Who is older than 30?", "evidence": "older refers to age > 30",
                                "gold": "SELECT name FROM singer WHERE age > 30", "difficulty": "simple",
                                "metadata": {"question_id": 10}}
    assert "evidence" not in shop["cases"][1]  # an empty evidence is not written
    suite = load_suite(out / "shop.sqleval.yaml")
    assert suite.cases[0].evidence == "older refers to age > 30" and suite.cases[1].difficulty == "challenging"

    run, report = _pytest([out / "shop.sqleval.yaml"], tmp_path)
    assert report is not None, run.stdout + run.stderr
    assert [c["execution_match"] for c in sorted(report["cases"], key=lambda c: c["id"])] == [True, False]
    assert report["overall"]["metrics"]["execution_accuracy"] == pytest.approx(0.5)

    # the missing database: a clear suite error naming where the file belongs, never a traceback
    with pytest.raises(SuiteError, match=r"database file not found: .*dev_databases/racing/racing\.sqlite"):
        load_suite(out / "racing.sqleval.yaml")
    run, _ = _pytest([out / "racing.sqleval.yaml"], tmp_path)
    assert run.returncode != 0
    assert "database file not found" in run.stdout and "racing.sqlite" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr


# --------------------------------------------------------------------------- LogicCat
def test_logiccat_resolves_file_names_and_tags(tmp_path: Path) -> None:
    root = tmp_path / "logiccat"
    make_sqlite(root / "sqlite_database" / "water pump.db", "CREATE TABLE pump (id INTEGER, flow REAL);")  # no rows
    make_sqlite(root / "sqlite_database" / "aircraft.db",
                "CREATE TABLE aircraft (name TEXT, weight REAL); INSERT INTO aircraft VALUES ('R-22', 635);")
    (root / "mini.json").write_text(json.dumps([
        {"db_id": "waterPump", "type": "1", "idx": 7, "question": "Flow?", "query": "SELECT flow FROM pump;",
         "step": "【step1】: read flow"},
        {"db_id": "AirCraft", "type": "3", "idx": 8, "question": "Weight plus 20%?",
         "query": "SELECT weight * 1.2 FROM aircraft WHERE name = 'R-22'", "step": "【step1】: scale"},
    ]))
    out = tmp_path / "suites"
    done = _sqleval(["import", "logiccat", str(root / "mini.json"), "-o", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "resolved LogicCat db_id 'waterPump' to the file 'water pump.db'" in done.stderr
    assert "1 of 2 databases are schema-only (no rows): waterPump" in done.stderr
    pump = yaml.safe_load((out / "waterPump.sqleval.yaml").read_text())
    assert pump["database"] == "../logiccat/sqlite_database/water pump.db" and pump["execution"] == "logiccat"
    assert pump["cases"][0]["id"] == "q0007" and pump["cases"][0]["tags"] == ["type_1", "schema_only"]
    assert pump["cases"][0]["metadata"] == {"type": "1", "reasoning": "【step1】: read flow"}
    assert "schema-only" in pump["description"]
    plane = load_suite(out / "AirCraft.sqleval.yaml")
    assert plane.cases[0].tags == ("type_3",) and plane.cases[0].databases[0].file_path.name == "aircraft.db"
    (tmp_path / "p.jsonl").write_text(json.dumps({"id": "q0008", "sql": "SELECT 635 * 1.2"}) + "\n")
    run, report = _pytest([out / "AirCraft.sqleval.yaml"], tmp_path, "--sqleval-predictions", str(tmp_path / "p.jsonl"))
    assert report is not None and report["cases"][0]["execution_match"] is True, run.stdout


def test_logiccat_ambiguous_file_names_are_an_error(tmp_path: Path) -> None:
    make_sqlite(tmp_path / "water pump.db", "CREATE TABLE a (x INTEGER);")
    make_sqlite(tmp_path / "Water_Pump.db", "CREATE TABLE a (x INTEGER);")
    with pytest.raises(DatasetError, match="'waterPump' matches several files"):
        resolve_database_files(["waterPump"], tmp_path)
    assert resolve_database_files(["nothere"], tmp_path) == {"nothere": None}


# --------------------------------------------------------------------------- bad input
def test_bad_input_is_a_message_not_a_traceback(tmp_path: Path, spider_dir: Path) -> None:
    done = _sqleval(["import", "spider", str(tmp_path / "missing"), "-o", str(tmp_path / "o")], tmp_path)
    assert done.returncode == 2 and "does not exist" in done.stderr and "Traceback" not in done.stderr
    (tmp_path / "dev.json").write_text("[{")
    done = _sqleval(["import", "spider", str(tmp_path / "dev.json"), "-o", str(tmp_path / "o")], tmp_path)
    assert done.returncode == 2 and "is not valid JSON" in done.stderr and "line 1" in done.stderr
    (tmp_path / "p.json").write_text('{"zero": "SELECT 1"}')
    (tmp_path / "empty").mkdir()
    done = _sqleval(["import", "bird", str(tmp_path / "empty"), "-o", str(tmp_path / "o")], tmp_path)
    assert done.returncode == 2 and "no BIRD questions" in done.stderr
    done = _sqleval(["import", "spider", str(spider_dir), "-o", str(tmp_path / "o"), "--predictions",
                     str(tmp_path / "p.json")], tmp_path)
    assert done.returncode == 2 and "'zero' is not a question index" in done.stderr


# --------------------------------------------------------------------------- the public data (../shared)
@needs_shared
def test_shared_spider_dev_imports_with_its_fields(tmp_path: Path) -> None:
    spider = SHARED / "spider_dev"
    result = import_dataset("spider", spider, tmp_path / "s",
                            predictions=spider / "predictions" / "raw" / "DAIL-SQL+GPT-4.txt")
    assert (len(result.suites), result.cases, result.predictions) == (20, 1034, 1034)
    wta = yaml.safe_load((tmp_path / "s" / "wta_1.sqleval.yaml").read_text())
    assert "database" not in wta and len(wta["cases"]) == 62   # SOURCES.md: 62 items use the missing wta_1
    suite = load_suite(tmp_path / "s" / "concert_singer.sqleval.yaml")
    assert suite.cases[0].id == "q0000" and suite.cases[0].question == "How many singers do we have?"
    assert suite.cases[0].schema.db_id == "concert_singer"


@needs_shared
def test_shared_spider_subset_matches_the_direct_api(tmp_path: Path) -> None:
    """One database through pytest --sqleval: each exact-match verdict equals the metric called directly."""
    from pytest_sqleval.metrics.exact_match import exact_match
    from pytest_sqleval.schema import Schema

    spider = SHARED / "spider_dev"
    import_dataset("spider", spider, tmp_path / "s", predictions=spider / "predictions" / "raw" / "DAIL-SQL+GPT-4.txt")
    run, report = _pytest([tmp_path / "s" / "concert_singer.sqleval.yaml"], tmp_path)
    assert report is not None, run.stdout
    schema = Schema.from_spider_tables(spider / "tables.json", "concert_singer")
    predicted = {json.loads(line)["id"]: json.loads(line)["sql"]
                 for line in (tmp_path / "s" / "predictions" / "concert_singer.jsonl").read_text().splitlines()}
    suite = load_suite(tmp_path / "s" / "concert_singer.sqleval.yaml")
    direct = {c.id: exact_match(c.gold, predicted[c.id], schema, profile={"profile": "spider"}).match for c in suite.cases}
    assert {c["id"]: c["exact_match"] for c in report["cases"]} == direct
    assert len(direct) == 45


@needs_shared
def test_shared_bird_minidev_imports_and_says_its_databases_are_missing(tmp_path: Path) -> None:
    bird = SHARED / "bird_minidev"
    result = import_dataset("bird", bird, tmp_path / "b",
                            predictions=bird / "predictions_official" / "predict_mini_dev_gpt-4_sqlite.json")
    assert (len(result.suites), result.cases, result.predictions) == (11, 500, 500)
    assert any("11 of 11 databases not found" in w for w in result.warnings)
    levels: dict[str, int] = {}
    evidence = 0
    for path in result.suites:
        for case in yaml.safe_load(path.read_text())["cases"]:
            levels[case["difficulty"]] = levels.get(case["difficulty"], 0) + 1
            evidence += "evidence" in case
    assert levels == {"simple": 148, "moderate": 250, "challenging": 102}
    assert evidence > 400
    with pytest.raises(SuiteError, match="database file not found: .*formula_1.sqlite"):
        load_suite(tmp_path / "b" / "formula_1.sqleval.yaml")
    run, _ = _pytest([tmp_path / "b" / "formula_1.sqleval.yaml"], tmp_path)
    assert "database file not found" in run.stdout and "Traceback" not in run.stdout + run.stderr


@needs_shared
def test_shared_logiccat_imports_and_loads(tmp_path: Path) -> None:
    result = import_dataset("logiccat", SHARED / "logiccat", tmp_path / "l")
    assert (len(result.suites), result.cases) == (7, 500)
    aircraft = load_suite(tmp_path / "l" / "AirCraft.sqleval.yaml")
    assert aircraft.cases[0].databases[0].file_path.name == "aircraft.db"
    assert "schema_only" in aircraft.cases[0].tags and aircraft.cases[0].tags[0].startswith("type_")
    tags = {t for p in result.suites for c in load_suite(p).cases for t in c.tags}
    assert {"type_1", "type_2", "type_3", "type_4", "schema_only"} <= tags


@needs_shared
@full_roundtrip
def test_shared_spider_dev_dail_sql_round_trip(tmp_path: Path) -> None:
    spider = SHARED / "spider_dev"
    import_dataset("spider", spider, tmp_path / "s", predictions=spider / "predictions" / "raw" / "DAIL-SQL+GPT-4.txt")
    run, report = _pytest([tmp_path / "s"], tmp_path, "-n", "2")
    assert report is not None, run.stdout
    metrics = report["overall"]["metrics"]
    assert round(100 * metrics["exact_match"], 1) == 70.0
    assert round(100 * metrics["execution_accuracy"], 1) == 83.2


@needs_shared
@full_roundtrip
def test_shared_sparc_dev_chatgpt_round_trip(tmp_path: Path) -> None:
    sparc, spider = SHARED / "sparc_dev", SHARED / "spider_dev"
    import_dataset("sparc", sparc / "dev_gold_from_thubpm.txt", tmp_path / "p", tables=spider / "tables.json",
                   predictions=sparc / "predictions" / "derived" / "chatgpt_zeroshot_thubpm.txt")
    run, report = _pytest([tmp_path / "p"], tmp_path, "-n", "2")
    assert report is not None, run.stdout
    metrics = report["overall"]["metrics"]
    assert round(100 * metrics["question_match"], 1) == 37.7
    assert round(100 * metrics["interaction_match"], 1) == 20.1
