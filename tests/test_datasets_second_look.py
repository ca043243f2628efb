"""Issue 14, a second look: the importers and `sqleval stats` on new inputs in the official formats and their
quirks (empty interactions, db_ids that share a file name or are missing from tables.json, malformed entries,
multi-line gold with `--` comments, the train/test splits' file names, BIRD's gold file, a second import into the
same folder), clause usage of set-operation operands and ordered aggregates, suites of the same database in two
datasets; and a handful of items of the public data scored through `pytest --sqleval` against the numbers the
official scripts (test-suite-sql-eval, BIRD mini-dev's evaluation_ex/f1, run once from ../shared/reference/official)
give for the same items: the figures are written here. Tests on the public data skip when it is absent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from conftest import make_sqlite
from pytest_sqleval.datasets.importers import import_dataset

SHARED = Path(os.environ.get("SQLEVAL_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "benchmarks"
SPIDER = SHARED / "spider_dev"
needs_shared = pytest.mark.skipif(not (SPIDER / "dev.json").is_file(), reason=f"the public data is not at {SHARED}")

SHOP_SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'A', 25), (2, 'B', 35), (3, 'C', 40);
"""


def _entry(db_id: str) -> dict:
    names = [[-1, "*"], [0, "singer_id"], [0, "name"], [0, "age"]]
    return {"db_id": db_id, "table_names_original": ["singer"], "table_names": ["singer"],
            "column_names_original": names, "column_names": names, "column_types": ["text", "number", "text", "number"],
            "primary_keys": [1], "foreign_keys": []}


def _datasets(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def _report(pytester: pytest.Pytester, *args: str) -> dict:
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess("--sqleval", *args, "-p", "no:cacheprovider", f"--sqleval-json={report}")
    assert report.exists(), result.stdout.str()
    return json.loads(report.read_text())


# --------------------------------------------------------------------------- empty interactions
@pytest.mark.parametrize("form", ["gold file", "json"])
def test_an_empty_interaction_keeps_its_place_when_predictions_are_paired(pytester: pytest.Pytester, form: str) -> None:
    """The official reading zips interaction k of the predictions with interaction k of the gold, an empty one
    (two blank lines; `"interaction": []`) included. The interactions after it keep their own predictions."""
    root = pytester.path
    make_sqlite(root / "database" / "shop" / "shop.sqlite", SHOP_SQL)
    (root / "tables.json").write_text(json.dumps([_entry("shop")]))
    if form == "gold file":
        (root / "dev_gold.txt").write_text("SELECT count(*) FROM singer\tshop\n\n\n"
                                           "SELECT name FROM singer\tshop\nSELECT age FROM singer\tshop\n\n")
        src = "dev_gold.txt"
    else:
        (root / "dev.json").write_text(json.dumps([
            {"database_id": "shop", "interaction": [{"utterance": "How many?", "query": "SELECT count(*) FROM singer"}]},
            {"database_id": "shop", "interaction": []},
            {"database_id": "shop", "interaction": [{"utterance": "Names?", "query": "SELECT name FROM singer"},
                                                    {"utterance": "Ages?", "query": "SELECT age FROM singer"}]}]))
        src = "dev.json"
    (root / "pred.txt").write_text("SELECT count(*) FROM singer\n\n\nSELECT name FROM singer\nSELECT name FROM singer\n\n")
    done = _datasets(["import", "sparc", src, "-o", "out", "--predictions", "pred.txt"], root)
    assert done.returncode == 0, done.stderr
    assert "interactions for" not in done.stderr  # 3 interactions on both sides: nothing to warn about
    lines = [json.loads(line) for line in (root / "out" / "predictions.jsonl").read_text().splitlines()]
    assert lines == [{"id": "i0000/1", "sql": "SELECT count(*) FROM singer"},
                     {"id": "i0002/1", "sql": "SELECT name FROM singer"},
                     {"id": "i0002/2", "sql": "SELECT name FROM singer"}]
    report = _report(pytester, "out")
    by_id = {c["id"]: c["exact_match"] for c in report["cases"]}
    assert by_id == {"i0000/1": True, "i0002/1": True, "i0002/2": False}
    assert report["overall"]["metrics"]["question_match"] == pytest.approx(2 / 3)
    # the official script prints 2/3 (it counts the empty interaction as matched); it is no interaction here
    assert report["overall"]["metrics"]["interaction_match"] == pytest.approx(1 / 2)


def test_a_missing_interaction_of_the_predictions_is_still_a_warning(tmp_path: Path) -> None:
    (tmp_path / "tables.json").write_text(json.dumps([_entry("shop")]))
    (tmp_path / "dev_gold.txt").write_text("SELECT 1\tshop\n\nSELECT 2\tshop\n\n")
    (tmp_path / "pred.txt").write_text("SELECT 1\n\n")
    result = import_dataset("sparc", tmp_path / "dev_gold.txt", tmp_path / "out", predictions=tmp_path / "pred.txt")
    assert any("pred.txt has 1 interactions for 2 in the gold" in w for w in result.warnings), result.warnings
    assert (result.predictions, result.missing_predictions) == (1, 1)


# --------------------------------------------------------------------------- db_ids
def test_db_ids_that_share_a_file_name_keep_both_suites(tmp_path: Path) -> None:
    """`my db` and `my_db` (and unicode db_ids) map to the same safe file name: neither suite is lost."""
    (tmp_path / "tables.json").write_text(json.dumps([_entry("my db"), _entry("my_db"), _entry("café")]))
    (tmp_path / "dev.json").write_text(json.dumps([
        {"db_id": "my db", "question": "Wie viele Sänger?", "query": "SELECT count(*) FROM singer"},
        {"db_id": "my_db", "question": "Names?", "query": "SELECT name FROM singer"},
        {"db_id": "café", "question": "Âges — “quoted”?", "query": "SELECT age FROM singer WHERE name = 'é'"}]))
    (tmp_path / "pred.txt").write_text("SELECT count(*) FROM singer\nSELECT age FROM singer\nSELECT age FROM singer\n")
    done = _datasets(["import", "spider", "dev.json", "-o", "out", "--predictions", "pred.txt"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote 3 suites (3 cases)" in done.stdout
    suites = {yaml.safe_load(p.read_text(encoding="utf-8"))["suite"]: p for p in (tmp_path / "out").glob("*.sqleval.yaml")}
    assert sorted(suites) == ["café", "my db", "my_db"]
    for name, path in suites.items():  # each suite reads its own predictions file
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        ids = [json.loads(line)["id"] for line in (tmp_path / "out" / document["predictions"]).read_text().splitlines()]
        assert ids == [case["id"] for case in document["cases"]]
    cafe = yaml.safe_load(suites["café"].read_text(encoding="utf-8"))
    assert cafe["cases"][0]["question"] == "Âges — “quoted”?" and cafe["cases"][0]["gold"].endswith("= 'é'")


def test_a_db_id_missing_from_tables_json_names_the_file_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "tables.json").write_text(json.dumps([_entry("shop")]))
    (tmp_path / "dev.json").write_text(json.dumps([
        {"db_id": "shop", "question": "q", "query": "SELECT 1"}, {"db_id": "ghost", "question": "q", "query": "SELECT 2"}]))
    done = _datasets(["import", "spider", "dev.json", "-o", "out"], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "database 'ghost' (question q0001)" in done.stderr and "tables.json" in done.stderr
    assert "fix:" in done.stderr


def test_bird_gold_file_as_src_says_to_give_the_questions_file(tmp_path: Path) -> None:
    (tmp_path / "mini_dev_sqlite_gold.sql").write_text("SELECT 1\tshop\n")
    done = _datasets(["import", "bird", "mini_dev_sqlite_gold.sql", "-o", "out"], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "mini_dev_sqlite_gold.sql is not a BIRD questions file" in done.stderr
    assert "mini_dev_sqlite.json" in done.stderr and "not valid JSON" not in done.stderr


@pytest.mark.parametrize("dataset, file_name, body, message", [
    ("spider", "dev.json", [{"db_id": "shop", "question": "q", "query": None}],
     "dev.json: question 0 (q0000) has `query`: null, not a non-empty string"),
    ("spider", "dev.json", [{"db_id": "shop", "question": "q", "query": "SELECT 1"},
                            {"db_id": "shop", "question": 7, "query": "SELECT 2"}],
     "dev.json: question 1 (q0001) has `question`: 7, not a string"),
    ("spider", "dev.json", [{"db_id": 5, "question": "q", "query": "SELECT 1"}], "has `db_id`: 5"),
    ("bird", "mini_dev_sqlite.json", [{"question_id": 3, "db_id": "shop", "question": "q", "SQL": None,
                                       "difficulty": "simple"}],
     "mini_dev_sqlite.json: question 3 (q3) has `SQL`: null"),
    ("bird", "mini_dev_sqlite.json", [{"question_id": 3, "db_id": "shop", "question": "q", "SQL": "SELECT 1",
                                       "evidence": ["a list"]}], "has `evidence`: [\"a list\"]"),
    ("sparc", "dev.json", [{"database_id": "shop", "interaction": [{"utterance": ["q"], "query": "SELECT 1"}]}],
     "turn 1 of interaction 0 (i0000/1) has `utterance`"),
    ("logiccat", "data.json", [{"db_id": "bike", "type": "1", "idx": 1, "question": "q", "query": None}],
     "data.json: question 0 (q0001) has `query`: null"),
])
def test_a_malformed_entry_is_named_not_written_as_none(tmp_path: Path, capsys, dataset: str, file_name: str,
                                                        body: list, message: str) -> None:
    """A null or non-text SQL/question/db_id was written as the text `None` (BIRD, LogicCat), left for the loader
    (a question that is a number) or raised a TypeError (Spider): it is a message naming the file and the entry."""
    from pytest_sqleval.datasets.cli import main

    (tmp_path / "tables.json").write_text(json.dumps([_entry("shop")]))
    (tmp_path / file_name).write_text(json.dumps(body))
    status = main(["import", dataset, str(tmp_path / file_name), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and message in err and "fix: give" in err, err
    assert not list((tmp_path / "out").glob("*.sqleval.yaml"))


# --------------------------------------------------------------------------- other splits
def test_spider_and_bird_train_split_file_names(tmp_path: Path) -> None:
    """The Spider release names its training questions train_spider.json (beside train_gold.sql, which has no
    questions) and its test set's schema and databases test_tables.json and test_database/; BIRD's training
    databases are train_databases/."""
    spider = tmp_path / "spider"
    make_sqlite(spider / "database" / "shop" / "shop.sqlite", SHOP_SQL)
    (spider / "tables.json").write_text(json.dumps([_entry("shop")]))
    (spider / "train_spider.json").write_text(json.dumps([{"db_id": "shop", "question": "How many singers?",
                                                             "query": "SELECT count(*) FROM singer"}]))
    (spider / "train_gold.sql").write_text("SELECT count(*) FROM singer\tshop\n")
    import_dataset("spider", spider, tmp_path / "s", split="train")
    case = yaml.safe_load((tmp_path / "s" / "shop.sqleval.yaml").read_text())["cases"][0]
    assert case["question"] == "How many singers?"

    # the Spider test release: test.json with test_tables.json and test_database/ beside tables.json and database/
    make_sqlite(spider / "test_database" / "club" / "club.sqlite", SHOP_SQL)
    (spider / "test_tables.json").write_text(json.dumps([_entry("club")]))
    (spider / "test.json").write_text(json.dumps([{"db_id": "club", "question": "Oldest?",
                                                    "query": "SELECT max(age) FROM singer"}]))
    result = import_dataset("spider", spider, tmp_path / "t", split="test")
    suite = yaml.safe_load((tmp_path / "t" / "club.sqleval.yaml").read_text())
    assert suite["schema"] == {"tables": "../spider/test_tables.json", "db_id": "club"}
    assert suite["database"] == "../spider/test_database/club/club.sqlite" and not result.warnings

    bird = tmp_path / "bird"
    make_sqlite(bird / "train_databases" / "shop" / "shop.sqlite", SHOP_SQL)
    (bird / "train.json").write_text(json.dumps([{"db_id": "shop", "question": "Names?", "evidence": "",
                                                  "SQL": "SELECT name FROM singer"}]))
    (bird / "train_tables.json").write_text(json.dumps([_entry("shop")]))
    (bird / "dev_tables.json").write_text(json.dumps([_entry("other")]))  # the dev split's, in the same folder
    result = import_dataset("bird", bird, tmp_path / "b", split="train")
    assert not result.warnings, result.warnings
    suite = yaml.safe_load((tmp_path / "b" / "shop.sqleval.yaml").read_text())
    assert suite["schema"] == {"tables": "../bird/train_tables.json", "db_id": "shop"}
    assert (tmp_path / "b" / suite["database"]).resolve() == (bird / "train_databases" / "shop" / "shop.sqlite").resolve()


# --------------------------------------------------------------------------- the public data against the official script
# test-suite-sql-eval (commit e97acc5, ../shared/reference/official), default flags, on these items:
#   python evaluation.py --gold g --pred p --db spider_dev/database --table spider_dev/tables.json --etype all
DAIL_ITEMS = [6, 7, 12, 16, 20, 24, 32, 36, 43, 47, 48, 49, 52, 54, 57, 58]
OFFICIAL_SPIDER = {  # hardness: (count, execution accuracy, exact match)
    "medium": (9, 7 / 9, 1 / 9), "hard": (4, 3 / 4, 1 / 4), "extra": (3, 1 / 3, 2 / 3)}


@needs_shared
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_spider_dev_items_with_dail_sql_give_the_official_numbers(pytester: pytest.Pytester, workers: list[str]) -> None:
    """16 DAIL-SQL predictions on concert_singer and pets_1: the official script prints EX 0.688 (11/16) and
    EM 0.250 (4/16), and per hardness the counts and figures of OFFICIAL_SPIDER."""
    dev = json.loads((SPIDER / "dev.json").read_text())
    predictions = (SPIDER / "predictions" / "raw" / "DAIL-SQL+GPT-4.txt").read_text().split("\n")
    (pytester.path / "gold.sql").write_text("".join(f"{dev[i]['query']}\t{dev[i]['db_id']}\n" for i in DAIL_ITEMS))
    (pytester.path / "pred.txt").write_text("".join(predictions[i] + "\n" for i in DAIL_ITEMS))
    done = _datasets(["import", "spider", "gold.sql", "-o", "out", "--tables", str(SPIDER / "tables.json"),
                      "--databases", str(SPIDER / "database"), "--predictions", "pred.txt"], pytester.path)
    assert done.returncode == 0, done.stderr
    report = _report(pytester, "out", *workers)
    metrics = report["overall"]["metrics"]
    assert (metrics["execution_accuracy"], metrics["exact_match"]) == (pytest.approx(11 / 16), pytest.approx(4 / 16))
    for level, (count, ex, em) in OFFICIAL_SPIDER.items():
        cases = [c for c in report["cases"] if c["difficulty"] == level]
        assert len(cases) == count, level
        assert sum(c["execution_match"] for c in cases) / count == pytest.approx(ex), level
        assert sum(c["exact_match"] for c in cases) / count == pytest.approx(em), level


SPARC_INTERACTIONS = [0, 1, 50, 100, 150, 250, 300, 350, 400]


@needs_shared
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_sparc_dev_interactions_with_chatgpt_give_the_official_numbers(pytester: pytest.Pytester,
                                                                       workers: list[str]) -> None:
    """Nine SParC dev interactions (23 turns, 8 databases) with the ChatGPT predictions; the official script
    (--etype match) prints question match 0.348 (8/23), interaction match 0.222 (2/9), by turn 4/9, 2/9, 2/5
    and hardness counts easy 11, medium 7, hard 3, extra 2."""
    sparc = SHARED / "sparc_dev"
    gold = (sparc / "dev_gold_from_thubpm.txt").read_text().split("\n\n")
    predicted = (sparc / "predictions" / "derived" / "chatgpt_zeroshot_thubpm.txt").read_text().split("\n\n")
    (pytester.path / "gold.txt").write_text("\n\n".join(gold[i].strip("\n") for i in SPARC_INTERACTIONS) + "\n\n")
    (pytester.path / "pred.txt").write_text("\n\n".join(predicted[i].strip("\n") for i in SPARC_INTERACTIONS) + "\n\n")
    done = _datasets(["import", "sparc", "gold.txt", "-o", "out", "--tables", str(SPIDER / "tables.json"),
                      "--databases", str(SPIDER / "database"), "--predictions", "pred.txt"], pytester.path)
    assert done.returncode == 0, done.stderr
    assert "wrote 8 suites (23 cases)" in done.stdout
    report = _report(pytester, "out", *workers)
    metrics = report["overall"]["metrics"]
    assert metrics["question_match"] == pytest.approx(8 / 23)
    assert metrics["interaction_match"] == pytest.approx(2 / 9)
    by_turn = {n: [c["exact_match"] for c in report["cases"] if c["id"].endswith(f"/{n}")] for n in (1, 2, 3)}
    assert {n: (sum(v), len(v)) for n, v in by_turn.items()} == {1: (4, 9), 2: (2, 9), 3: (2, 5)}
    assert Counter(c["difficulty"] for c in report["cases"]) == {"easy": 11, "medium": 7, "hard": 3, "extra": 2}


BIRD_DB = """
CREATE TABLE customers (CustomerID INTEGER PRIMARY KEY, Segment TEXT, Currency TEXT);
CREATE TABLE yearmonth (CustomerID INTEGER, Date TEXT, Consumption REAL);
CREATE TABLE gasstations (GasStationID INTEGER PRIMARY KEY, ChainID INTEGER, Country TEXT, Segment TEXT);
INSERT INTO customers VALUES (1, 'LAM', 'EUR'), (2, 'SME', 'CZK'), (3, 'LAM', 'CZK'), (4, 'SME', 'EUR'),
  (5, 'KAM', 'CZK'), (6, 'SME', 'CZK');
INSERT INTO yearmonth VALUES (1, '201201', 10.0), (3, '201203', 5.0), (2, '201301', 120.0), (4, '201305', 60.0),
  (1, '201302', 7.5), (6, '201308', 30.0), (6, '201310', 12.5), (6, '201312', 99.0), (5, '201204', 50.0),
  (2, '201207', 46.8), (3, '201306', 47.0);
INSERT INTO gasstations VALUES (1, 1, 'CZE', 'Discount'), (2, 1, 'CZE', 'Discount'), (3, 2, 'SVK', 'Discount'),
  (4, 2, 'CZE', 'Premium'), (5, 3, 'SVK', 'discount');
"""
# bird-bench/mini_dev evaluation_ex.py / evaluation_f1.py (../shared/reference/official), item by item on BIRD_DB
OFFICIAL_BIRD_EX = [1, 0, 1, 1, 0, 0, 0, 0, 1, 0, 1, 1]
OFFICIAL_BIRD_F1 = [1.0, 0, 1.0, 1.0, 2 / 3, 0, 0.8, 0, 1.0, 0, 1.0, 1.0]


@needs_shared
def test_bird_minidev_items_with_gpt4_give_the_official_numbers(pytester: pytest.Pytester) -> None:
    """The first 12 mini-dev questions (debit_card_specializing) with the official GPT-4 predictions (multi-line
    SQL in predict_*.json), on a small database put where the suite says: the official scripts give EX 6/12 and
    Soft F1 0.6222, item by item as OFFICIAL_BIRD_EX / OFFICIAL_BIRD_F1."""
    bird = SHARED / "bird_minidev"
    questions = json.loads((bird / "mini_dev_sqlite.json").read_text())[:12]
    predicted = json.loads((bird / "predictions_official" / "predict_mini_dev_gpt-4_sqlite.json").read_text())
    (pytester.path / "mini_dev_sqlite.json").write_text(json.dumps(questions))
    (pytester.path / "predict.json").write_text(json.dumps({str(i): predicted[str(i)] for i in range(12)}))
    make_sqlite(pytester.path / "dev_databases" / "debit_card_specializing" / "debit_card_specializing.sqlite", BIRD_DB)
    done = _datasets(["import", "bird", ".", "-o", "out", "--tables", str(bird / "tables.json"),
                      "--predictions", "predict.json"], pytester.path)
    assert done.returncode == 0, done.stderr
    report = _report(pytester, "out")
    by_id = {c["id"]: c for c in report["cases"]}
    cases = [by_id[f"q{q['question_id']}"] for q in questions]
    assert [int(c["execution_match"]) for c in cases] == OFFICIAL_BIRD_EX
    assert [c["bird_soft_f1"] for c in cases] == [pytest.approx(v, abs=1e-9) for v in OFFICIAL_BIRD_F1]
    assert report["overall"]["metrics"]["execution_accuracy"] == pytest.approx(6 / 12)
    for level in ("simple", "moderate", "challenging"):  # the official per-difficulty table
        chosen = [i for i, q in enumerate(questions) if q["difficulty"] == level]
        assert [int(cases[i]["execution_match"]) for i in chosen] == [OFFICIAL_BIRD_EX[i] for i in chosen]
        assert {cases[i]["difficulty"] for i in chosen} <= {level}


# --------------------------------------------------------------------------- statistics
@needs_shared
def test_stats_of_an_imported_spider_database_by_hand(tmp_path: Path) -> None:
    """concert_singer of Spider dev (45 questions): hardness as the official script counts it (easy 4, medium
    24, hard 13, extra 4), and the distinct and duplicate gold SQL counted here in plain Python."""
    dev = [d for d in json.loads((SPIDER / "dev.json").read_text()) if d["db_id"] == "concert_singer"]
    (tmp_path / "dev.json").write_text(json.dumps(dev))
    import_dataset("spider", tmp_path / "dev.json", tmp_path / "out", tables=str(SPIDER / "tables.json"),
                   databases=str(SPIDER / "database"))
    done = _datasets(["stats", "out", "--json", "--similarity", "lexical"], tmp_path)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert stats["cases"] == 45 and [s["cases"] for s in stats["suites"]] == [45]
    assert {k: v["count"] for k, v in stats["difficulty"].items()} == OFFICIAL_CONCERT_SINGER
    golds = [" ".join(d["query"].split()).rstrip(";").strip() for d in dev]
    assert stats["distinct_gold_sql"] == len(set(golds))
    lowered = Counter(g.lower() for g in golds)
    assert stats["duplicates"]["exact_gold_sql"] == sum(c - 1 for c in lowered.values())
    assert stats["clauses"]["JOIN"]["count"] == sum(" join " in g.lower() for g in golds)
    assert stats["clauses"]["set operation"]["count"] == sum(
        any(op in g.upper() for op in (" UNION ", " INTERSECT ", " EXCEPT ")) for g in golds)


OFFICIAL_CONCERT_SINGER = {"easy": 4, "medium": 24, "hard": 13, "extra": 4}


@pytest.mark.parametrize("sql, dialect, clauses", [
    # parenthesised operands of a set operation are operands, not subqueries (PostgreSQL, DuckDB, MySQL)
    ("(SELECT a FROM t) UNION (SELECT b FROM u)", "postgres", {"set operation"}),
    ("(SELECT a FROM t ORDER BY a LIMIT 1) EXCEPT (SELECT b FROM u)", "duckdb", {"set operation", "ORDER BY", "LIMIT"}),
    ("SELECT a FROM t WHERE a IN ((SELECT b FROM u) UNION (SELECT c FROM v))", "postgres",
     {"WHERE", "subquery", "set operation"}),
    # an ORDER BY inside an aggregate orders the aggregate's input, like a window's: not the query's ORDER BY
    ("SELECT group_concat(a ORDER BY b) FROM t", "sqlite", set()),
    ("SELECT string_agg(a, ',' ORDER BY b) FROM t GROUP BY c", "postgres", {"GROUP BY"}),
    ("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a) FROM t", "postgres", set()),
    ("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", "sqlite", {"set operation", "ORDER BY"}),
])
def test_clause_usage_of_operands_and_ordered_aggregates(sql: str, dialect: str, clauses: set[str]) -> None:
    from pytest_sqleval.datasets.stats import query_facts

    facts = query_facts(sql, dialect)
    assert facts.parsed and set(facts.clauses) == clauses


def test_importing_into_a_folder_with_other_suites_warns(tmp_path: Path) -> None:
    """A second import of another slice into the same folder leaves the first slice's suites there, and
    `pytest --sqleval DIR` would run both: the importer says so, naming them."""
    (tmp_path / "tables.json").write_text(json.dumps([_entry("shop"), _entry("club")]))
    (tmp_path / "a.json").write_text(json.dumps([{"db_id": "shop", "question": "q", "query": "SELECT 1"}]))
    (tmp_path / "b.json").write_text(json.dumps([{"db_id": "club", "question": "q", "query": "SELECT 2"}]))
    first = import_dataset("spider", tmp_path / "a.json", tmp_path / "out")
    assert not any("other suites" in w for w in first.warnings)
    again = import_dataset("spider", tmp_path / "a.json", tmp_path / "out")  # the same import again: nothing stale
    assert not any("other suites" in w for w in again.warnings)
    second = import_dataset("spider", tmp_path / "b.json", tmp_path / "out")
    assert any("1 other suites" in w and "shop.sqleval.yaml" in w for w in second.warnings), second.warnings


@needs_shared
def test_stats_of_sparc_dev_give_the_official_hardness_and_turn_counts(tmp_path: Path) -> None:
    """SParC dev from its official gold file: the official script counts 1203 turns in 422 interactions, hardness
    easy 483, medium 441, hard 145, extra 134, and turns 1..5: 422, 422, 270, 88, 1."""
    from pytest_sqleval.datasets.stats import compute_stats, load_suites

    result = import_dataset("sparc", SHARED / "sparc_dev" / "dev_gold_from_thubpm.txt", tmp_path / "out",
                            tables=str(SPIDER / "tables.json"))
    assert result.cases == 1203 and len(result.suites) == 20
    stats = compute_stats(load_suites([tmp_path / "out"]), similarity="lexical")
    assert {k: v["count"] for k, v in stats["difficulty"].items()} == {"easy": 483, "medium": 441, "hard": 145,
                                                                       "extra": 134}
    assert stats["questions"] == 0 and stats["similarity"] is None  # a gold file has no utterances
    turns = Counter(n for path in result.suites for case in yaml.safe_load(path.read_text())["cases"]
                    for n in range(1, len(case["interaction"]) + 1))
    assert [turns[n] for n in range(1, 6)] == [422, 422, 270, 88, 1]


@pytest.mark.parametrize("dataset, file_name, entry", [
    ("bird", "dev.json", {"question_id": 1, "db_id": "shop", "question": "Names?", "SQL": "{sql}"}),
    ("logiccat", "data.json", {"db_id": "shop", "type": "1", "idx": 1, "question": "Names?", "query": "{sql}"}),
    ("spider", "dev.json", {"db_id": "shop", "question": "Names?", "query": "{sql}"}),
])
def test_a_multi_line_gold_with_a_line_comment_keeps_its_meaning(pytester: pytest.Pytester, dataset: str,
                                                                 file_name: str, entry: dict) -> None:
    """Joining the lines of `SELECT name -- who\\nFROM singer ...` would comment out the rest of the query."""
    sql = "SELECT name -- who sings\nFROM singer\nWHERE age > 30 -- older ones\nORDER BY name"
    root = pytester.path
    make_sqlite(root / "database" / "shop" / "shop.sqlite", SHOP_SQL)
    make_sqlite(root / "dev_databases" / "shop" / "shop.sqlite", SHOP_SQL)
    make_sqlite(root / "sqlite_database" / "shop.db", SHOP_SQL)
    (root / "tables.json").write_text(json.dumps([_entry("shop")]))
    (root / file_name).write_text(json.dumps([{k: (sql if v == "{sql}" else v) for k, v in entry.items()}]))
    (root / "pred.jsonl").write_text(json.dumps({"id": "q1" if dataset == "bird" else ("q0001" if dataset == "logiccat"
                                                                                         else "q0000"),
                                                 "sql": "SELECT name FROM singer WHERE age > 30 ORDER BY name"}) + "\n")
    import_dataset(dataset, root / file_name, root / "out", **({"tables": str(root / "tables.json")}
                                                              if dataset != "logiccat" else {}))
    gold = yaml.safe_load((root / "out" / "shop.sqleval.yaml").read_text())["cases"][0]["gold"]
    assert gold == sql  # kept as written: on one line, `-- who sings` would comment out FROM, WHERE, ORDER BY
    report = _report(pytester, "out", "--sqleval-predictions", "pred.jsonl")
    if dataset != "spider":
        assert [c["execution_match"] for c in report["cases"]] == [True], report["cases"]
    else:  # exact_match: spider reads the gold as the official parser does, which fails on `--`: a clear error
        text = json.dumps(report["cases"])
        assert "comment" in text and "exact_match: sqleval" in text, text


def test_stats_count_each_suite_of_the_same_database_apart(tmp_path: Path) -> None:
    """Spider and SParC share their databases: `sqleval stats spider/ sparc/` lists concert_singer twice, each
    with its own number of cases (not their sum), and reads each with its own dialect."""
    from pytest_sqleval.datasets.stats import compute_stats, load_suites

    (tmp_path / "tables.json").write_text(json.dumps([_entry("concert_singer")]))
    for folder, dialect, golds in (("spider", "sqlite", ["SELECT count(*) FROM singer", "SELECT name FROM singer"]),
                                   ("sparc", "duckdb", ["SELECT name FROM singer QUALIFY row_number() OVER () = 1"])):
        (tmp_path / folder).mkdir()
        cases = "".join(f"  - id: q{i}\n    question: Question {i}\n    gold: {g}\n" for i, g in enumerate(golds))
        (tmp_path / folder / "concert_singer.sqleval.yaml").write_text(
            f"suite: concert_singer\ndialect: {dialect}\nschema: {{tables: ../tables.json, db_id: concert_singer}}\n"
            f"cases:\n{cases}")
    stats = compute_stats(load_suites([tmp_path / "spider", tmp_path / "sparc"]), similarity="lexical")
    assert stats["cases"] == 3
    assert [(s["name"], s["cases"]) for s in stats["suites"]] == [("concert_singer", 2), ("concert_singer", 1)]
    assert stats["unparsed_sql"] == 0 and stats["clauses"]["window"]["count"] == 1  # QUALIFY read as DuckDB


def test_logiccat_file_matching_keeps_non_ascii_names_apart(tmp_path: Path) -> None:
    """Matching ignores case and separators only: a db_id in Chinese is not every other non-ASCII file."""
    from pytest_sqleval.datasets.importers import resolve_database_files

    make_sqlite(tmp_path / "水泵.db", "CREATE TABLE a (x INTEGER);")
    make_sqlite(tmp_path / "空调_系统.db", "CREATE TABLE a (x INTEGER);")
    assert resolve_database_files(["电动车", "空调 系统", "水泵"], tmp_path) == {
        "电动车": None, "空调 系统": tmp_path / "空调_系统.db", "水泵": tmp_path / "水泵.db"}
