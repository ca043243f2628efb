"""`sqleval generate`: the MRO SQL-first pipeline against the loopback chat-completions server (tests/chat_server.py),
with scripted answers so that every filter drops one proposed query for its own reason. Real SQLite files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chat_server import ChatServer
from conftest import make_sqlite
from pytest_sqleval.datasets.generate import (
    GenerateError,
    GenerateOptions,
    parse_json_answer,
    parse_mix,
    proposed_queries,
    quotas,
    screen,
)
from pytest_sqleval.loader import load_suite

PARTS_SQL = """
CREATE TABLE suppliers (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
CREATE TABLE parts (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER, supplier_id INTEGER REFERENCES suppliers(id));
CREATE TABLE numbers (n INTEGER);
INSERT INTO suppliers VALUES (1, 'Acme', 'DE'), (2, 'Bolt Co', 'US');
INSERT INTO parts VALUES (1, 'bolt', 10, 1), (2, 'nut', 3, 1), (3, 'gear', 7, 2), (4, 'shaft', 2, 2);
WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 100) INSERT INTO numbers SELECT n FROM c;
"""

KEPT = "SELECT name FROM parts WHERE qty > 5"
COUNT = "SELECT COUNT(*) AS n FROM parts"
TOP = "SELECT name, qty FROM parts ORDER BY qty DESC LIMIT 2"
JOIN = "SELECT p.name FROM parts AS p JOIN suppliers AS s ON p.supplier_id = s.id WHERE s.country = 'DE'"
PROPOSED = [  # (sql, the filter expected to drop it, or None when it survives the execution filters)
    (KEPT, None),
    ("SELECT name FROM parts WHERE (", "unparsable"),
    ("SELECT missing_col FROM parts", "does_not_run"),
    ("DELETE FROM parts", "does_not_run"),
    ("SELECT name FROM parts WHERE qty > 1000", "empty_result"),
    ("SELECT n FROM numbers", "too_many_rows"),
    ("SELECT random() AS r", "nondeterministic"),
    ("select NAME from PARTS where QTY > 5", "duplicate"),        # the same normalised SQL
    ("SELECT name FROM parts WHERE qty >= 6", "duplicate"),       # the same result and structure
    (COUNT, None),
    (TOP, None),
    (JOIN, None),
]


def _batch_answer() -> str:
    items = [{"reasoning": f"query {i}", "sql": sql} for i, (sql, _) in enumerate(PROPOSED)]
    return "Here they are:\n```json\n" + json.dumps(items) + "\n```"


def _script() -> dict[str, list]:
    return {
        "request 1 of 1": [_batch_answer()],
        f"SQL to explain:\n{KEPT}": [json.dumps({"reasoning": "r", "question": "Which parts have more than 5 in stock?",
                                                 "paraphrases": ["Name the parts with a stock above five."]})],
        f"SQL to explain:\n{COUNT}": [json.dumps({"reasoning": "r", "question": ""})],   # no question
        f"SQL to explain:\n{TOP}": [json.dumps({"reasoning": "r", "question": "What are the two largest stocks?",
                                                "paraphrases": []})],
        f"SQL to explain:\n{JOIN}": [json.dumps({"reasoning": "r", "question": "Which parts come from German suppliers?",
                                                 "paraphrases": ["List parts supplied from Germany."]})],
        "Proposed question: What are the two largest stocks?": ['{"reasoning": "it also returns names", "agree": false}'],
        "Proposed question: ": ['{"reasoning": "fine", "agree": true}'],
    }


@pytest.fixture
def parts_db(tmp_path: Path) -> Path:
    return make_sqlite(tmp_path / "parts.sqlite", PARTS_SQL)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    return subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", *args], cwd=cwd, capture_output=True,
                          text=True, env=env, timeout=120)


def test_each_filter_drops_a_case_for_its_reason(tmp_path: Path, parts_db: Path) -> None:
    out = tmp_path / "gen" / "parts.sqleval.yaml"
    with ChatServer(_script()) as server:
        done = _run(["generate", str(parts_db), "-o", str(out), "--model", "test-model", "--model-url", server.url,
                     "--count", str(len(PROPOSED)), "--batch", "20", "--paraphrases", "1", "--check",
                     "--cache", str(tmp_path / "cache")], tmp_path)
        assert done.returncode == 0, done.stderr
        calls = server.count
    report = json.loads((tmp_path / "gen" / "parts.report.json").read_text())
    assert report["proposed"] == len(PROPOSED)
    assert report["dropped"] == {"unparsable": 1, "does_not_run": 2, "empty_result": 1, "too_many_rows": 1,
                                 "nondeterministic": 1, "duplicate": 2, "no_question": 1, "disagreement": 1}
    by_sql = {d["sql"]: d for d in report["drops"]}
    for sql, expected in PROPOSED:
        if expected is not None:
            assert by_sql[sql]["filter"] == expected, sql
    assert "no such column" in by_sql["SELECT missing_col FROM parts"]["reason"]
    assert by_sql["DELETE FROM parts"]["reason"].startswith("rejected")          # the guard, not sqlite, refused it
    assert "more than" in by_sql["SELECT n FROM numbers"]["reason"]
    assert "normalised SQL" in by_sql["select NAME from PARTS where QTY > 5"]["reason"]
    assert "same result and structure" in by_sql["SELECT name FROM parts WHERE qty >= 6"]["reason"]
    assert by_sql[COUNT]["filter"] == "no_question"
    assert by_sql[TOP]["filter"] == "disagreement" and by_sql[TOP]["question"] == "What are the two largest stocks?"
    assert report["kept"] == 2 and report["cases"] == 4
    # 1 SQL request + 4 question requests + 3 checks (the question-less query is never checked)
    assert calls == 8 and report["model_calls"] == 8

    suite = load_suite(out)
    assert [c.id for c in suite.cases] == ["g001", "g001-p1", "g002", "g002-p1"]
    assert [c.gold for c in suite.cases] == [KEPT, KEPT, JOIN, JOIN]
    assert suite.cases[1].question == "Name the parts with a stock above five."
    assert suite.cases[0].difficulty == "easy" and suite.cases[2].difficulty == "medium"  # hardness: WHERE; JOIN+WHERE
    assert set(suite.cases[2].tags) == {"join", "where"}
    assert suite.cases[0].databases[0].file_path == parts_db.resolve()
    assert "generated 2 of 12 proposed queries" in done.stdout and "dropped   2 duplicate" in done.stdout


def test_replay_from_the_response_cache_makes_no_call(tmp_path: Path, parts_db: Path) -> None:
    args = ["generate", str(parts_db), "--model", "test-model", "--count", str(len(PROPOSED)), "--batch", "20",
            "--cache", str(tmp_path / "cache")]
    with ChatServer(_script()) as server:
        first = _run([*args, "-o", str(tmp_path / "a.sqleval.yaml"), "--model-url", server.url], tmp_path)
        assert first.returncode == 0, first.stderr
        before = server.count
        again = _run([*args, "-o", str(tmp_path / "b.sqleval.yaml"), "--model-url", server.url, "--cache-mode", "only"],
                     tmp_path)
        assert again.returncode == 0, again.stderr
        assert server.count == before  # every answer came from the cache
    assert (tmp_path / "a.sqleval.yaml").read_text().replace("suite: a", "suite: b") == \
        (tmp_path / "b.sqleval.yaml").read_text()
    assert json.loads((tmp_path / "b.report.json").read_text())["cache_hits"] == before


def test_the_prompt_asks_for_sql_first_with_the_requested_mix(tmp_path: Path, parts_db: Path) -> None:
    with ChatServer({"request 1 of 2": ["[]"], "request 2 of 2": ["no JSON here"]}) as server:
        done = _run(["generate", str(parts_db), "-o", str(tmp_path / "x.sqleval.yaml"), "--model", "test-model",
                     "--model-url", server.url, "--count", "7", "--batch", "4", "--mix", "join=3,group_by=1,hard=1",
                     "--sample-rows", "2", "--cache-mode", "off"], tmp_path)
        prompts = [r.messages[-1]["content"] for r in server.requests]
    assert done.returncode == 2 and "no query survived the filters (0 proposed)" in done.stderr
    assert len(prompts) == 2
    assert "Write 4 different" in prompts[0] and "3 using JOIN, 1 using GROUP BY; difficulty: 4 hard" in prompts[0]
    assert "Write 3 different" in prompts[1] and "2 using JOIN, 1 using GROUP BY; difficulty: 3 hard" in prompts[1]
    assert "'bolt'" in prompts[0]  # sample rows are in the schema text
    report = json.loads((tmp_path / "x.report.json").read_text())
    assert report["answers_without_json"] == 1


def test_bad_input_is_a_message_not_a_traceback(tmp_path: Path, parts_db: Path) -> None:
    done = _run(["generate", str(tmp_path / "nope.sqlite"), "-o", "x.sqleval.yaml", "--model", "m"], tmp_path)
    assert done.returncode == 2 and "database file not found" in done.stderr and "Traceback" not in done.stderr
    done = _run(["generate", str(parts_db), "-o", "x.sqleval.yaml", "--model", "m", "--mix", "joins=2"], tmp_path)
    assert done.returncode == 2 and "--mix: unknown 'joins'" in done.stderr
    done = _run(["generate", str(parts_db), "-o", "x.sqleval.yaml", "--model", "m", "--mix", " "], tmp_path)
    assert done.returncode == 2 and "--mix is empty" in done.stderr and "leave --mix out" in done.stderr
    done = _run(["generate", str(parts_db), "-o", "x.sqleval.yaml", "--model", "m", "--model-url",
                 "http://127.0.0.1:9/v1", "--cache-mode", "off"], tmp_path)
    assert done.returncode == 2 and "the model call failed" in done.stderr and "Traceback" not in done.stderr


def test_mix_quotas_and_answer_parsing() -> None:
    assert parse_mix("join=3, group-by=1,hard") == {"join": 3.0, "group_by": 1.0, "hard": 1.0}
    assert quotas({"join": 3, "group_by": 1}, 4) == {"join": 3, "group_by": 1}
    assert quotas({"a": 1, "b": 1, "c": 1}, 4) == {"a": 2, "b": 1, "c": 1}  # largest remainder, ties by name
    assert parse_json_answer('think...\n```json\n[{"sql": "SELECT 1"}]\n```') == [{"sql": "SELECT 1"}]
    assert parse_json_answer('{"agree": false} trailing') == {"agree": False}
    assert parse_json_answer("nothing") is None
    with pytest.raises(GenerateError, match="must be at least 1"):
        GenerateOptions.from_text(mix=None, count=0)


@pytest.mark.parametrize("answer, expected", [
    ([{"reasoning": "r", "sql": "SELECT 1"}, "SELECT 2"], [("SELECT 1", "r"), ("SELECT 2", None)]),
    ([{"sql_query": "SELECT 1"}, {"query": "SELECT 2"}], [("SELECT 1", None), ("SELECT 2", None)]),  # MRO's key
    ({"queries": [{"sql": "SELECT 1"}, {"sql": "SELECT 2"}]}, [("SELECT 1", None), ("SELECT 2", None)]),  # JSON mode
    ({"sql": "SELECT 1", "tables": ["parts"]}, [("SELECT 1", None)]),  # one object, even beside a list
    ({"a": [], "b": []}, [("", None)]),  # two lists: no way to tell which holds the queries
    ("SELECT 1", None),
    (None, None),
])
def test_proposed_queries_read_every_shape_of_json_answer(answer, expected) -> None:
    assert proposed_queries(answer) == expected


def test_screen_keeps_distinct_queries_in_order(parts_db: Path) -> None:
    from sqlalchemy import create_engine

    engine = create_engine(f"sqlite:///{parts_db}")
    try:
        kept, drops = screen(engine, [(KEPT, None), (JOIN, None), ("SELECT name FROM parts WHERE qty > 5;", None)],
                             dialect="sqlite", max_result_rows=10, timeout=5)
    finally:
        engine.dispose()
    assert [k.sql for k in kept] == [KEPT, JOIN]
    assert [(d.filter, d.sql) for d in drops] == [("duplicate", KEPT)]  # the trailing ';' is not a difference
