"""QA round 3 on issue 14 (datasets): `sqleval stats` on inputs nobody tuned for, run as a user runs it."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest


def _datasets(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def _db(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE parts (id INTEGER, name TEXT, qty INTEGER, price REAL);"
                      "INSERT INTO parts VALUES (1, 'bolt', 10, 1.5), (2, 'nut', 3, 0.5);")
    con.commit()
    con.close()
    return path


def test_a_select_alias_is_no_column_of_the_query(tmp_path: Path) -> None:
    """`ORDER BY n` where `n` is `count(*) AS n` names the projection, not a table column: the MRO-style query
    `SELECT name, count(*) AS n FROM parts GROUP BY name ORDER BY n DESC` reads one column (parts.name), not two;
    SQLite also lets WHERE name an alias (`WHERE total > 10`), which reads price and qty only."""
    _db(tmp_path / "parts.sqlite")
    (tmp_path / "s.sqleval.yaml").write_text(
        "suite: s\ndatabase: parts.sqlite\ncases:\n"
        "  - {id: a, question: Stock per part?, gold: \"SELECT name, count(*) AS n FROM parts GROUP BY name ORDER BY n DESC\"}\n"
        "  - {id: b, question: Big totals?, gold: \"SELECT price * qty AS total FROM parts WHERE total > 10\"}\n"
        "  - {id: c, question: Names by name?, gold: \"SELECT name AS name FROM parts ORDER BY name\"}\n",
        encoding="utf-8")
    done = _datasets(["stats", "s.sqleval.yaml", "--json", "--similarity", "lexical"], tmp_path)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    # by hand: a reads parts.name; b parts.price and parts.qty; c parts.name
    assert stats["columns_per_query"] == {"mean": pytest.approx(4 / 3), "median": 1.0, "min": 1.0, "max": 2.0}


def test_a_lone_dash_or_operator_is_no_word_of_a_question(tmp_path: Path) -> None:
    """Question length in words: `Only the dear ones — over 2 €?` has six words (Only, the, dear, ones, over, 2);
    a dash, a `>` or a currency sign standing between spaces is punctuation, not a word."""
    _db(tmp_path / "parts.sqlite")
    (tmp_path / "s.sqleval.yaml").write_text(
        "suite: s\ndatabase: parts.sqlite\ncases:\n"
        "  - id: conv\n    interaction:\n"
        "      - {question: \"Only the dear ones — over 2 €?\", gold: \"SELECT name FROM parts WHERE price > 2\"}\n"
        "      - {question: \"Those with qty > 5 ?\", gold: \"SELECT name FROM parts WHERE qty > 5\"}\n",
        encoding="utf-8")
    done = _datasets(["stats", "s.sqleval.yaml", "--json", "--similarity", "lexical"], tmp_path)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert stats["question_words"] == {"mean": 5.0, "median": 5.0, "min": 4.0, "max": 6.0}


def test_generate_drops_a_random_sample_whose_two_runs_agreed(tmp_path: Path, duckdb_available) -> None:
    """`TABLESAMPLE BERNOULLI (90)` / `USING SAMPLE` draws random rows, as `random()` does, but is no call: two runs
    that happen to agree (on a small table, often) kept it as a gold that another run answers differently. A
    sample with a seed (`REPEATABLE (7)`) is repeatable and stays."""
    import os

    import duckdb  # the duckdb_available fixture fails under CI when it is missing, never skips

    from chat_server import ChatServer

    db = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE items (id INTEGER, name TEXT, price DOUBLE);"
                "INSERT INTO items VALUES (1, 'tea', 2.5), (2, 'café', 3.0), (3, 'nut', 1.0)")
    con.close()
    sampled = "SELECT name FROM items TABLESAMPLE BERNOULLI (99.9999 PERCENT)"  # two runs agree almost surely
    seeded = "SELECT name FROM items WHERE price > 2 USING SAMPLE 100 PERCENT (bernoulli, 7)"
    plain = "SELECT name FROM items WHERE price > 1 ORDER BY name"
    answer = json.dumps([{"reasoning": "r", "sql": sql} for sql in (sampled, seeded, plain)])
    script = {"request 1 of 1": [answer], "SQL to explain": [json.dumps({"question": "Which items?"})]}
    out = tmp_path / "gen" / "shop.sqleval.yaml"
    with ChatServer(script) as server:
        done = subprocess.run(
            [sys.executable, "-m", "pytest_sqleval.datasets", "generate", str(db), "-o", str(out), "--model",
             "test-model", "--model-url", server.url, "--count", "3", "--batch", "10", "--cache-mode", "off"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, env={**os.environ, "OPENAI_API_KEY": "k"})
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "gen" / "shop.report.json").read_text(encoding="utf-8"))
    drops = {d["sql"]: d for d in report["drops"]}
    assert drops[sampled]["filter"] == "nondeterministic" and "random" in drops[sampled]["reason"]
    assert seeded not in drops and plain not in drops and report["kept"] == 2


def test_average_maximum_similarity_comes_with_its_spread_as_in_the_paper(tmp_path: Path) -> None:
    """MRO Table 4 reports the average maximum similarity as mean ± standard deviation (0.84 ± 0.12): the JSON,
    the terminal and the Markdown tables give the spread too. By hand (lexical): nearest neighbours 1, 1, 0 ->
    mean 2/3, population standard deviation sqrt(2/9)."""
    _db(tmp_path / "parts.sqlite")
    (tmp_path / "s.sqleval.yaml").write_text(
        "suite: s\ndatabase: parts.sqlite\ncases:\n"
        "  - {id: a, question: bolt stock, gold: \"SELECT qty FROM parts WHERE name = 'bolt'\"}\n"
        "  - {id: b, question: Bolt  Stock, gold: \"SELECT qty FROM parts WHERE name LIKE 'bolt'\"}\n"
        "  - {id: c, question: cheap nuts, gold: \"SELECT name FROM parts WHERE price < 1\"}\n", encoding="utf-8")
    done = _datasets(["stats", "s.sqleval.yaml", "--json", "--similarity", "lexical"], tmp_path)
    assert done.returncode == 0, done.stderr
    similarity = json.loads(done.stdout)["similarity"]
    assert similarity["mean_nearest_neighbour"] == pytest.approx(2 / 3)
    assert similarity["sd_nearest_neighbour"] == pytest.approx((2 / 9) ** 0.5)
    for flag, row in (("--markdown", "| nearest-neighbour cosine, standard deviation | 0.4714 |"),
                      (None, "nearest-neighbour cosine, standard deviation")):
        done = _datasets(["stats", "s.sqleval.yaml", "--similarity", "lexical", *([flag] if flag else [])], tmp_path)
        assert done.returncode == 0 and row in done.stdout, done.stdout


def test_check_reads_a_capitalised_agree_key_as_it_reads_question(tmp_path: Path) -> None:
    """`--check`: a model that capitalises its JSON keys (`{"Question": ...}` is read) answers `{"Agree": true}`;
    that is a verdict, not "no verdict" dropping a pair the model accepted. Paraphrases likewise."""
    import os

    from chat_server import ChatServer

    _db(tmp_path / "parts.sqlite")
    kept, refused = "SELECT name FROM parts WHERE qty > 5", "SELECT name FROM parts WHERE price < 1"
    script = {
        "request 1 of 1": [json.dumps([{"sql": kept}, {"sql": refused}])],
        f"SQL to explain:\n{kept}": [json.dumps({"Question": "Which parts have more than five in stock?",
                                                 "Paraphrases": ["Name the parts with a stock above five."]})],
        f"SQL to explain:\n{refused}": [json.dumps({"Question": "Which parts are cheap?"})],
        "Proposed question: Which parts are cheap?": [json.dumps({"Reasoning": "under 1", "Agree": False})],
        "Proposed question: ": [json.dumps({"Reasoning": "fine", "Agree": True})],
    }
    out = tmp_path / "gen" / "parts.sqleval.yaml"
    with ChatServer(script) as server:
        done = subprocess.run(
            [sys.executable, "-m", "pytest_sqleval.datasets", "generate", str(tmp_path / "parts.sqlite"), "-o", str(out),
             "--model", "test-model", "--model-url", server.url, "--count", "2", "--check", "--paraphrases", "1",
             "--cache-mode", "off"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
            env={**os.environ, "OPENAI_API_KEY": "k"})
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "gen" / "parts.report.json").read_text(encoding="utf-8"))
    assert [(d["sql"], d["filter"]) for d in report["drops"]] == [(refused, "disagreement")]
    assert report["kept"] == 1 and report["cases"] == 2
