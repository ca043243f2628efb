"""Issue 14, QA round 2: inputs a researcher passes that nobody tuned for (a prediction CSV as published by the
DIN-SQL repository, questions in a language written without spaces)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import make_sqlite
from pytest_sqleval.datasets.stats import compute_stats, load_suites

SINGER_SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Ann', 30), (2, 'Bob', 40);
"""


def _datasets(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ})


def test_a_csv_of_predictions_is_refused_with_the_fix(tmp_path: Path) -> None:
    """DIN-SQL publishes `NLQ,PREDICTED SQL,GOLD SQL,DATABASE` CSVs; read as one SQL per line, its header paired
    with question 0 and every prediction held the question, the gold and the db_id: all misses, with no error."""
    db = tmp_path / "database" / "singers"
    db.mkdir(parents=True)
    make_sqlite(db / "singers.sqlite", SINGER_SQL)
    (tmp_path / "dev_gold.sql").write_text("SELECT count(*) FROM singer\tsingers\nSELECT name FROM singer\tsingers\n",
                                           encoding="utf-8")
    (tmp_path / "din.csv").write_text("NLQ,PREDICTED SQL,GOLD SQL,DATABASE\n"
                                      "How many?,SELECT count(*) FROM singer,SELECT count(*) FROM singer,singers\n"
                                      "Names?,SELECT name FROM singer,SELECT name FROM singer,singers\n",
                                      encoding="utf-8")
    done = _datasets(["import", "spider", "dev_gold.sql", "-o", "out", "--predictions", "din.csv"], tmp_path)
    assert done.returncode == 2, done.stdout
    assert "din.csv is a CSV file" in done.stderr and "one SQL per line" in done.stderr
    assert "fix:" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "predictions.jsonl").exists()


CJK_SUITE = """\
suite: cjk
database: singers.sqlite
cases:
- id: a
  question: 有多少位歌手？
  gold: SELECT count(*) FROM singer
- id: b
  question: 有多少位歌手年龄大于30？
  gold: SELECT count(*) FROM singer WHERE age > 30
- id: c
  question: 歌手的名字是什么？
  gold: SELECT name FROM singer
- id: d
  question: How many singers are older than 30?
  gold: SELECT count(*) FROM singer WHERE age >= 31
"""


def test_questions_in_chinese_have_words_and_a_lexical_similarity(tmp_path: Path) -> None:
    """Chinese is written without spaces: a question was one "word" (length 1) and two questions differing in a
    few characters had lexical similarity 0, so no near-duplicate among them could ever be found. Each character
    is a word now (as character-level counts of Chinese are); English questions count as before."""
    make_sqlite(tmp_path / "singers.sqlite", SINGER_SQL)
    (tmp_path / "cjk.sqleval.yaml").write_text(CJK_SUITE, encoding="utf-8")
    stats = compute_stats(load_suites([tmp_path / "cjk.sqleval.yaml"]), similarity="lexical")
    # 有 多 少 位 歌 手 = 6; 有 多 少 位 歌 手 年 龄 大 于 30 = 11; 歌 手 的 名 字 是 什 么 = 8; the English one 7
    assert stats["question_words"] == {"mean": pytest.approx(32 / 4), "median": 7.5, "min": 6.0, "max": 11.0}
    nearest = {n["id"]: (n["nearest"], n["similarity"]) for n in stats["similarity"]["nearest_neighbour"]}
    # a and b share their 6 characters: 6 / sqrt(6 * 11)
    assert nearest["cjk::a"] == ("cjk::b", pytest.approx(6 / 66 ** 0.5, abs=1e-6))
    done = _datasets(["stats", "cjk.sqleval.yaml", "--json", "--similarity", "lexical", "--near-duplicate", "0.7"],
                     tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["duplicates"]["near_duplicate_questions"] == 2  # a and b, each other's nearest


PARTS_SQL = """
CREATE TABLE parts (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER);
INSERT INTO parts VALUES (1, 'bolt', 10), (2, 'nut', 3), (3, 'gear', 7);
"""
Q_PLAIN = "SELECT name FROM parts WHERE qty > 5"
Q_BOLD = "SELECT COUNT(*) AS n FROM parts"
Q_HAMLET = "SELECT name FROM parts WHERE name = 'bolt'"
Q_KEY = "SELECT MAX(qty) AS top FROM parts"


def test_generated_questions_lose_the_quotes_around_them_not_inside(tmp_path: Path) -> None:
    """Answers nobody tuned for: one quoted line, a bold label with a quoted question, a question that starts with
    a quoted title, a JSON object with a capitalised `Question` key. The quotes around a question were kept
    (`"Which parts ...?"`, or only the opening one: `"How many parts?`), a title's closing quote was cut, and the
    capitalised key was `no_question`."""
    from chat_server import ChatServer

    make_sqlite(tmp_path / "parts.sqlite", PARTS_SQL)
    batch = json.dumps([{"sql": sql} for sql in (Q_PLAIN, Q_BOLD, Q_HAMLET, Q_KEY)])
    script = {"request 1 of 1": [batch],
              f"SQL to explain:\n{Q_PLAIN}": ['"Which parts have more than 5 in stock?"'],
              f"SQL to explain:\n{Q_BOLD}": ['Let me think.\n**Question:** "How many parts are there?"'],
              f"SQL to explain:\n{Q_HAMLET}": ['Question: "Bolt" is the name of which part?'],
              f"SQL to explain:\n{Q_KEY}": [json.dumps({"Reasoning": "r", "Question": "What is the largest stock?"})]}
    with ChatServer(script) as server:
        done = subprocess.run(
            [sys.executable, "-m", "pytest_sqleval.datasets", "generate", "parts.sqlite", "-o", "parts.sqleval.yaml",
             "--model", "test-model", "--model-url", server.url, "--count", "4", "--cache-mode", "off"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "OPENAI_API_KEY": "k"})
    assert done.returncode == 0, done.stderr
    from pytest_sqleval.loader import load_suite

    questions = {case.gold: case.question for case in load_suite(tmp_path / "parts.sqleval.yaml").cases}
    assert questions == {Q_PLAIN: "Which parts have more than 5 in stock?", Q_BOLD: "How many parts are there?",
                         Q_HAMLET: '"Bolt" is the name of which part?', Q_KEY: "What is the largest stock?"}


def test_repeated_ids_are_kept_apart_and_named_in_a_warning(tmp_path: Path) -> None:
    """BIRD question_ids and LogicCat idx values that repeat: both questions stay, each under its own case id, as
    before; the import now says which entries repeat an id and how the cases are numbered (it said nothing, and
    every LogicCat case silently changed its id from its idx to its place in the file)."""
    from pytest_sqleval.datasets.importers import import_dataset

    bird = tmp_path / "bird"
    (bird / "dev_databases" / "singers").mkdir(parents=True)
    make_sqlite(bird / "dev_databases" / "singers" / "singers.sqlite", SINGER_SQL)
    (bird / "dev.json").write_text(json.dumps([
        {"question_id": 5, "db_id": "singers", "question": "How many?", "evidence": "", "SQL": "SELECT count(*) FROM singer",
         "difficulty": "simple"},
        {"question_id": 5, "db_id": "singers", "question": "Names?", "evidence": "", "SQL": "SELECT name FROM singer",
         "difficulty": "simple"}]), encoding="utf-8")
    result = import_dataset("bird", bird, tmp_path / "bird_out")
    suite = load_suite_ids(tmp_path / "bird_out" / "singers.sqleval.yaml")
    assert suite == ["q5", "q5_1"]
    assert any("entry 1 (question_id 5, as entry 0) is case q5_1" in w for w in result.warnings), result.warnings

    logiccat = tmp_path / "logiccat"
    (logiccat / "sqlite_database").mkdir(parents=True)
    make_sqlite(logiccat / "sqlite_database" / "singers.db", SINGER_SQL)
    (logiccat / "data.json").write_text(json.dumps([
        {"db_id": "singers", "type": "1", "idx": 3, "question": "How many?", "query": "SELECT count(*) FROM singer"},
        {"db_id": "singers", "type": "2", "idx": 3, "question": "Names?", "query": "SELECT name FROM singer"}]),
        encoding="utf-8")
    result = import_dataset("logiccat", logiccat, tmp_path / "lc_out")
    assert load_suite_ids(tmp_path / "lc_out" / "singers.sqleval.yaml") == ["q0000", "q0001"]
    assert any("entry 1 has idx 3, as entry 0" in w and "numbered by their place" in w for w in result.warnings), \
        result.warnings
    # unique idx values: the ids are the idx, and nothing to say
    (logiccat / "data.json").write_text(json.dumps([
        {"db_id": "singers", "type": "1", "idx": 3, "question": "How many?", "query": "SELECT count(*) FROM singer"}]),
        encoding="utf-8")
    result = import_dataset("logiccat", logiccat, tmp_path / "lc_out2")
    assert load_suite_ids(tmp_path / "lc_out2" / "singers.sqleval.yaml") == ["q0003"] and result.warnings == []


def load_suite_ids(path: Path) -> list[str]:
    from pytest_sqleval.loader import load_suite

    return [case.id for case in load_suite(path).cases]
