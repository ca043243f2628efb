"""Datasets (issue 14) on inputs nobody tuned for: generation with clock/random queries, slow queries, a model
that answers garbage, paraphrases sharing tags; statistics of an aggregate's FILTER and into a closed pipe.
Real SQLite files and the loopback chat-completions server (tests/chat_server.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from chat_server import ChatServer
from conftest import make_sqlite
from pytest_sqleval.datasets.generate import screen
from pytest_sqleval.datasets.stats import query_facts
from test_generate import _run

PARTS_SQL = """
CREATE TABLE parts (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER, made TEXT);
INSERT INTO parts VALUES (1, 'bolt', 10, '2020-01-02'), (2, 'nut', 3, '2021-05-06'), (3, 'gear', 7, '2022-03-04');
"""


@pytest.fixture
def parts_db(tmp_path: Path) -> Path:
    return make_sqlite(tmp_path / "parts.sqlite", PARTS_SQL)


def _screen(database: Path, sqls: list[str], **limits):
    from sqlalchemy import create_engine

    engine = create_engine(f"sqlite:///{database}")
    try:
        return screen(engine, [(sql, None) for sql in sqls], dialect="sqlite",
                      max_result_rows=limits.get("max_result_rows", 10), timeout=limits.get("timeout", 5))
    finally:
        engine.dispose()


def test_queries_that_read_the_clock_or_draw_random_values_are_nondeterministic(parts_db: Path) -> None:
    # two runs a moment apart agree on today's date (and, half the time, on a coin toss): the gold would not
    clock_or_random = [
        "SELECT date('now') AS today",
        "SELECT CURRENT_TIMESTAMP",
        "SELECT strftime('%Y', 'now')",
        "SELECT name FROM parts WHERE julianday('now') - julianday(made) > 30",
        "SELECT abs(random()) % 1 AS zero",           # always 0, yet random() is called
        "SELECT name FROM parts WHERE qty > 5 OR unixepoch() < 0",
    ]
    steady = ["SELECT name FROM parts WHERE made < date('2021-01-01')", "SELECT strftime('%Y', made) FROM parts",
              "SELECT name FROM parts WHERE name <> 'now'"]
    kept, drops = _screen(parts_db, [*clock_or_random, *steady])
    assert [k.sql for k in kept] == steady
    assert [(d.filter, d.sql) for d in drops] == [("nondeterministic", sql) for sql in clock_or_random]
    assert "the clock (DATE('now'))" in drops[0].reason and "a random value" in drops[4].reason


def test_a_slow_query_is_dropped_naming_the_commands_own_timeout_option(parts_db: Path) -> None:
    endless = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM c"
    kept, drops = _screen(parts_db, [endless], timeout=1)
    assert not kept and [d.filter for d in drops] == ["does_not_run"]
    assert drops[0].reason == "timeout: ran past 1 s (raise it with --timeout)"  # not pytest's --sqleval-timeout


def test_paraphrases_of_a_query_write_their_tags_out_without_yaml_anchors(tmp_path: Path, parts_db: Path) -> None:
    sql = "SELECT name FROM parts WHERE qty > 5 ORDER BY name"
    script = {"request 1 of 1": [json.dumps([{"reasoning": "r", "sql": sql}])],
              "SQL to explain": [json.dumps({"question": "Which parts have more than five?",
                                             "paraphrases": ["Name the parts stocked above five.",
                                                             "List parts with a quantity over 5."]})]}
    out = tmp_path / "gen.sqleval.yaml"
    with ChatServer(script) as server:
        done = _run(["generate", str(parts_db), "-o", str(out), "--model", "test-model", "--model-url", server.url,
                     "--count", "1", "--paraphrases", "2", "--cache-mode", "off"], tmp_path)
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert "&id" not in text and "*id" not in text  # each case's own list, not one shared through an alias
    cases = yaml.safe_load(text)["cases"]
    assert [c["id"] for c in cases] == ["g001", "g001-p1", "g001-p2"]
    assert all(c["tags"] == ["order_by", "where"] for c in cases)
    assert text.count("  - where\n") == 3


def test_a_model_that_answers_without_json_is_named_in_the_error(tmp_path: Path, parts_db: Path) -> None:
    with ChatServer({}, default="I am sorry, I cannot help with that.") as server:
        done = _run(["generate", str(parts_db), "-o", str(tmp_path / "x.sqleval.yaml"), "--model", "test-model",
                     "--model-url", server.url, "--count", "3", "--batch", "2", "--cache-mode", "off"], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no query survived the filters (0 proposed)" in done.stderr
    assert "2 of the model's 2 answer(s) to the SQL prompt held no JSON list of queries" in done.stderr
    assert not (tmp_path / "x.sqleval.yaml").exists()
    assert json.loads((tmp_path / "x.report.json").read_text())["answers_without_json"] == 2


def test_an_aggregates_filter_is_no_where_clause() -> None:
    assert "WHERE" not in query_facts("SELECT count(*) FILTER (WHERE qty > 5) FROM parts").clauses
    assert "WHERE" in query_facts("SELECT count(*) FILTER (WHERE qty > 5) FROM parts WHERE id > 1").clauses
    assert "WHERE" in query_facts("SELECT name FROM parts WHERE id IN (SELECT id FROM parts WHERE qty > 1)").clauses


def test_stats_into_a_pipe_its_reader_closed_print_no_traceback(tmp_path: Path, parts_db: Path) -> None:
    suite = tmp_path / "one.sqleval.yaml"
    suite.write_text(f"suite: one\ndatabase: {parts_db}\ncases:\n  - id: a\n    question: How many parts?\n"
                     "    gold: SELECT count(*) FROM parts\n", encoding="utf-8")
    for command in ([sys.executable, "-m", "pytest_sqleval.datasets"],
                    [sys.executable, "-c", "from pytest_sqleval.cli import run; run()"]):  # the console script's entry
        process = subprocess.Popen([*command, "stats", str(suite), "--json"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, cwd=tmp_path)
        process.stdout.close()  # `sqleval stats --json | head -0`: the reader is gone before anything is written
        stderr = process.stderr.read().decode()
        process.wait(timeout=60)
        process.stderr.close()
        assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_a_suite_named_twice_or_inside_a_folder_named_is_counted_once(tmp_path: Path, parts_db: Path) -> None:
    folder = tmp_path / "suites"
    folder.mkdir()
    for name, question in (("a", "How many parts?"), ("b", "Which parts are big?")):
        (folder / f"{name}.sqleval.yaml").write_text(
            f"suite: {name}\ndatabase: {parts_db}\ncases:\n  - id: q1\n    question: {question}\n"
            f"    gold: SELECT count(*) FROM parts WHERE qty > {len(name)}\n", encoding="utf-8")
    done = _run(["stats", "suites", "suites/a.sqleval.yaml", str(folder / "a.sqleval.yaml"), "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert [s["name"] for s in stats["suites"]] == ["a", "b"] and stats["cases"] == 2
    assert stats["duplicates"]["exact_questions"] == 0 and stats["duplicates"]["exact_gold_sql"] == 1


def test_a_column_declared_without_a_type_is_shown_without_one_in_the_prompt(tmp_path: Path) -> None:
    database = make_sqlite(tmp_path / "loose.sqlite", "CREATE TABLE t (a, b TEXT); INSERT INTO t VALUES (1, 'x');")
    with ChatServer({}, default="no JSON") as server:
        _run(["generate", str(database), "-o", str(tmp_path / "x.sqleval.yaml"), "--model", "test-model",
              "--model-url", server.url, "--count", "1", "--cache-mode", "off"], tmp_path)
        prompt = server.requests[0].messages[-1]["content"]
    assert "CREATE TABLE t (\n  a,\n  b TEXT\n);" in prompt  # not `a NULL`, which reads as a NULL constraint


def test_stats_of_a_suite_without_gold_sql_name_it_and_why(tmp_path: Path, parts_db: Path) -> None:
    (tmp_path / "rows.sqleval.yaml").write_text(
        f"suite: rows\ndatabase: {parts_db}\ncases:\n  - id: a\n    question: How many parts?\n"
        "    expected: {rows: [[3]]}\n", encoding="utf-8")
    done = _run(["stats", "rows.sqleval.yaml"], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no cases with gold SQL (rows.sqleval.yaml)" in done.stderr and "`expected:` rows" in done.stderr


def test_a_missing_or_table_less_database_names_the_fix(tmp_path: Path) -> None:
    make_sqlite(tmp_path / "views.sqlite", "CREATE VIEW v AS SELECT 1 AS a;")
    for database, message in (("missing.sqlite", "database file not found: missing.sqlite; fix: check the path"),
                              ("views.sqlite", "views.sqlite has no tables (views are not read); fix:")):
        done = _run(["generate", database, "-o", "x.sqleval.yaml", "--model", "test-model",
                     "--model-url", "http://127.0.0.1:9/v1"], tmp_path)
        assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


def test_an_output_pytest_cannot_collect_is_refused_before_any_model_call(tmp_path: Path, parts_db: Path) -> None:
    with ChatServer({}) as server:
        done = _run(["generate", str(parts_db), "-o", "generated", "--model", "test-model", "--model-url", server.url],
                    tmp_path)
        assert server.count == 0
    assert done.returncode == 2 and "fix: name it generated.sqleval.yaml" in done.stderr
    assert not (tmp_path / "generated").exists()


def test_importing_sparc_over_a_spider_import_warns_that_it_replaced_its_suites(tmp_path: Path) -> None:
    from pytest_sqleval.datasets.importers import import_dataset

    make_sqlite(tmp_path / "database" / "shop" / "shop.sqlite", PARTS_SQL)
    (tmp_path / "dev.json").write_text(json.dumps([{"db_id": "shop", "question": "Parts?", "query": "SELECT name FROM parts"}]))
    (tmp_path / "sparc").mkdir()
    (tmp_path / "sparc" / "dev.json").write_text(json.dumps([{"database_id": "shop", "interaction": [
        {"utterance": "Parts?", "query": "SELECT name FROM parts"}]}]))
    out = tmp_path / "suites"
    assert import_dataset("spider", tmp_path, out, databases=str(tmp_path / "database")).warnings == []
    again = import_dataset("spider", tmp_path, out, databases=str(tmp_path / "database"))
    assert again.warnings == []  # a re-import of the same dataset replaces its own suites quietly
    result = import_dataset("sparc", tmp_path / "sparc", out, databases=str(tmp_path / "database"))
    assert any("replaced 1 suites of another import" in w and "shop.sqleval.yaml (suite shop)" in w
               for w in result.warnings), result.warnings
    assert yaml.safe_load((out / "shop.sqleval.yaml").read_text())["suite"] == "sparc/shop"


def test_a_refused_key_or_unknown_model_names_this_commands_options(tmp_path: Path, parts_db: Path) -> None:
    with ChatServer({}, api_key="the-right-key") as server:  # _run sends test-key
        refused = _run(["generate", str(parts_db), "-o", "x.sqleval.yaml", "--model", "test-model",
                        "--model-url", server.url, "--cache-mode", "off"], tmp_path)
    with ChatServer({}, models=("another-model",)) as server:
        unknown = _run(["generate", str(parts_db), "-o", "x.sqleval.yaml", "--model", "test-model",
                        "--model-url", server.url, "--cache-mode", "off"], tmp_path)
    assert refused.returncode == 2 and "(or --model-key-env VAR)" in refused.stderr
    assert unknown.returncode == 2 and "check --model and --model-url" in unknown.stderr
    assert "--sqleval-" not in refused.stderr + unknown.stderr  # pytest's options do not exist here


def test_rows_an_engine_happens_to_return_first_are_nondeterministic(parts_db: Path) -> None:
    # parts: bolt 10, nut 3, gear 7. Two runs agree, but another engine may return other rows.
    engine_picks = ["SELECT name FROM parts LIMIT 2",                          # LIMIT without ORDER BY
                    "SELECT name FROM parts ORDER BY qty > 5 DESC LIMIT 1",    # bolt and gear tie at the cut
                    "SELECT name FROM parts UNION SELECT 'x' LIMIT 1"]
    steady = ["SELECT count(*) FROM parts LIMIT 1",             # the LIMIT leaves no row out
              "SELECT name FROM parts WHERE qty > 5 LIMIT 10",  # nor here: 2 rows of at most 10
              "SELECT name FROM parts ORDER BY qty DESC LIMIT 1"]
    kept, drops = _screen(parts_db, [*engine_picks, *steady])
    assert [k.sql for k in kept] == steady
    assert [(d.filter, d.sql) for d in drops] == [("nondeterministic", sql) for sql in engine_picks]
    assert "without ORDER BY" in drops[0].reason and "ties with row 1" in drops[1].reason
