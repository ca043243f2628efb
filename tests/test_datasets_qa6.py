"""QA round 6 on issue 14 (datasets): importers, `sqleval stats` and `sqleval generate` on inputs nobody tuned for,
run as a user runs them (the `sqleval` command in a subprocess, the loopback chat-completions server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from chat_server import ChatServer
from conftest import make_sqlite

PARTS_SQL = """
CREATE TABLE parts (id INTEGER, name TEXT, qty INTEGER);
INSERT INTO parts VALUES (1, 'bolt', 10), (2, 'nut', 3), (3, 'gear', 7);
"""


def _datasets(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=180, env={**os.environ, **env})


def _stats(args: list[str], cwd: Path) -> dict:
    done = _datasets(["stats", *args, "--json", "--similarity", "lexical"], cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _duckdb(path: Path, script: str = PARTS_SQL) -> Path:
    import duckdb

    with duckdb.connect(str(path)) as conn:
        conn.execute(script)
    return path


# --------------------------------------------------------------------------- stats
DUCKDB_ONLY = (  # SQL the SQLite reading of sqlglot cannot parse: DuckDB's integer division and regex match
    "SELECT name FROM parts WHERE qty // 2 > 1 ORDER BY name",
    "SELECT name FROM parts WHERE name ~ 'o' ORDER BY name",
)


def test_a_duckdb_suite_is_described_the_same_without_its_database_file(tmp_path: Path, duckdb_available) -> None:
    """`sqleval stats` reads a suite whose database file is missing from its YAML alone, and must describe it as it
    does with the file in place. A DuckDB suite (`database: shop.duckdb` or a `duckdb:///` URL) was then read as
    SQLite: its DuckDB-only golds were 'unparsed', every case 'unclassified', no clause counted. By hand: both
    golds have WHERE and ORDER BY, and are medium (two clauses of Spider's first component)."""
    _duckdb(tmp_path / "shop.duckdb")
    cases = "".join(f"  - {{id: c{n}, question: \"Which parts, take {n}?\", gold: \"{sql}\"}}\n"
                    for n, sql in enumerate(DUCKDB_ONLY))
    for folder, database in (("here", "../shop.duckdb"), ("gone", "../moved.duckdb"),
                             ("gone_url", "duckdb:///../moved.duckdb")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "shop.sqleval.yaml").write_text(f"suite: shop\ndatabase: \"{database}\"\ncases:\n{cases}",
                                                              encoding="utf-8")
    figures = {}
    for folder in ("here", "gone", "gone_url"):
        stats = _stats([folder], tmp_path)
        assert bool(stats["suites"][0].get("missing_database")) is (folder != "here")
        stats.pop("suites")
        figures[folder] = stats
    here = figures["here"]
    assert here["unparsed_sql"] == 0
    assert {k: v["count"] for k, v in here["difficulty"].items()} == {"medium": 2}
    assert {k: v["count"] for k, v in here["clauses"].items() if v["count"]} == {"WHERE": 2, "ORDER BY": 2}
    assert figures["gone"] == here
    assert figures["gone_url"] == here


def test_difficulty_labels_read_the_same_without_the_database_file(tmp_path: Path) -> None:
    """The loader reads a case's `difficulty: Hard` as the level `hard` and `"  Extra"` as `extra` (one bucket however
    written); a suite read without its (missing) database file kept them as written, so `sqleval stats` counted
    the classes `Hard`, `  Extra` and ` medium ` instead of hard, extra and medium."""
    make_sqlite(tmp_path / "shop.sqlite", PARTS_SQL)
    cases = ("  - {id: a, question: \"Names?\", gold: \"SELECT name FROM parts\", difficulty: Hard}\n"
             "  - {id: b, question: \"Big ones?\", gold: \"SELECT name FROM parts WHERE qty > 1\", difficulty: \"  Extra\"}\n"
             "  - id: c\n    difficulty: \" medium \"\n    interaction:\n"
             "      - {question: \"Stock?\", gold: \"SELECT qty FROM parts\"}\n")
    levels = {}
    for folder, database in (("here", "../shop.sqlite"), ("gone", "../moved.sqlite")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "s.sqleval.yaml").write_text(f"suite: s\ndatabase: {database}\ncases:\n{cases}",
                                                           encoding="utf-8")
        stats = _stats([folder], tmp_path)
        levels[folder] = {k: v["count"] for k, v in stats["difficulty"].items()}
    assert levels["here"] == {"medium": 1, "hard": 1, "extra": 1}
    assert levels["gone"] == levels["here"]


def test_a_missing_schema_file_beside_a_missing_database_is_a_message(tmp_path: Path) -> None:
    """A suite moved away from its data (its database file and its `schema:` tables.json both missing, as an
    imported BIRD suite copied elsewhere) stopped `sqleval stats` with a SpiderTablesError traceback; with the
    database in place the same missing tables.json is the loader's message and status 2. A db_id that is not in
    the tables.json likewise."""
    make_sqlite(tmp_path / "shop.sqlite", PARTS_SQL)
    (tmp_path / "tables.json").write_text(json.dumps([{"db_id": "shop", "table_names_original": ["parts"],
                                                       "column_names_original": [[-1, "*"], [0, "name"]],
                                                       "column_types": ["text", "text"]}]), encoding="utf-8")
    for tables, db_id, message in (("gone.json", "shop", "gone.json"), ("tables.json", "other", "'other'")):
        (tmp_path / "s.sqleval.yaml").write_text(
            f"suite: s\ndatabase: moved.sqlite\nschema: {{tables: {tables}, db_id: {db_id}}}\ncases:\n"
            "  - {id: a, question: \"Names?\", gold: \"SELECT name FROM parts\"}\n", encoding="utf-8")
        done = _datasets(["stats", "s.sqleval.yaml", "--similarity", "lexical"], tmp_path)
        assert done.returncode == 2, done.stdout
        assert "Traceback" not in done.stderr
        assert done.stderr.startswith("sqleval stats: s.sqleval.yaml") and message in done.stderr
        assert "fix:" in done.stderr


def test_an_unknown_dialect_beside_a_missing_database_is_the_loaders_message(tmp_path: Path) -> None:
    """`dialect: postgresql` (SQLAlchemy's name; sqlglot's is postgres) is the loader's message naming the fix; with
    the database file missing, `sqleval stats` read the suite without that check and stopped with sqlglot's
    `ValueError: Unknown dialect` traceback."""
    make_sqlite(tmp_path / "shop.sqlite", PARTS_SQL)
    messages = []
    for database in ("shop.sqlite", "moved.sqlite"):
        (tmp_path / "s.sqleval.yaml").write_text(
            f"suite: s\ndatabase: {database}\ndialect: postgresql\ncases:\n"
            "  - {id: a, question: \"Names?\", gold: \"SELECT name FROM parts\"}\n", encoding="utf-8")
        done = _datasets(["stats", "s.sqleval.yaml", "--similarity", "lexical"], tmp_path)
        assert done.returncode == 2, done.stdout
        assert "Traceback" not in done.stderr
        messages.append(done.stderr)
    assert messages[1] == messages[0]
    assert "unknown sqlglot dialect 'postgresql'" in messages[0] and "postgres" in messages[0].split("fix:")[1]


# --------------------------------------------------------------------------- generate
def _generate(tmp_path: Path, database: Path, script: dict, *extra: str) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path / "gen" / "shop.sqleval.yaml"
    with ChatServer(script) as server:
        done = _datasets(["generate", str(database), "-o", str(out), "--model", "test-model", "--model-url",
                          server.url, "--cache-mode", "off", *extra], tmp_path, OPENAI_API_KEY="k")
    assert "Traceback" not in done.stderr
    return done, tmp_path / "gen" / "shop.report.json"


def test_the_reports_clause_mix_reads_the_kept_sql_in_the_databases_dialect(tmp_path: Path, duckdb_available) -> None:
    """The report's `clauses` (the clause mix kept) read each kept query as SQLite, whatever the database: on a
    DuckDB file, a kept `... WHERE name ~ 'o' ORDER BY name` (tagged where, order_by in the suite) counted no
    clause at all. The report must count what the suite's tags say."""
    database = _duckdb(tmp_path / "shop.duckdb")
    kept = DUCKDB_ONLY[1]
    script = {"request 1 of 1": [json.dumps([{"reasoning": "r", "sql": kept}])],
              "SQL to explain": [json.dumps({"question": "Which parts have an o in their name?"})]}
    done, report_path = _generate(tmp_path, database, script, "--count", "1")
    assert done.returncode == 0, done.stderr
    from pytest_sqleval.loader import load_suite

    suite = load_suite(tmp_path / "gen" / "shop.sqleval.yaml")
    assert [(c.gold, sorted(c.tags)) for c in suite.cases] == [(kept, ["order_by", "where"])]
    report = json.loads(report_path.read_text())
    assert report["clauses"] == {"WHERE": 1, "ORDER BY": 1}


def test_items_of_the_answer_that_are_no_query_are_reported_not_lost(tmp_path: Path) -> None:
    """A model returning garbage: items of its JSON list that are neither a query object nor SQL text (`42`,
    `null`, a nested list) vanished: not proposed, not dropped, and the run ended with 'no query survived the
    filters (0 proposed)' and a report without a word about them, while `{"sql": 42}` is an `unparsable` drop.
    Each item is a proposed query: one that is no SQL is dropped as `unparsable`, naming what it was."""
    database = make_sqlite(tmp_path / "shop.sqlite", PARTS_SQL)
    good = "SELECT name FROM parts WHERE qty > 5"
    answer = json.dumps([42, None, ["SELECT name FROM parts"], {"reasoning": "r", "sql": good}])
    script = {"request 1 of 1": [answer], "SQL to explain": [json.dumps({"question": "Which parts are big?"})]}
    done, report_path = _generate(tmp_path, database, script, "--count", "4")
    assert done.returncode == 0, done.stderr
    report = json.loads(report_path.read_text())
    assert report["proposed"] == 4
    assert report["kept"] == 1
    assert {k: v for k, v in report["dropped"].items() if v} == {"unparsable": 3}
    assert [d["sql"] for d in report["drops"]] == ["42", "null", '["SELECT name FROM parts"]']
    # a list with no query object or text at all (`[1]` of the reasoning's prose) is no list of queries
    from pytest_sqleval.datasets.generate import proposed_queries

    assert proposed_queries([1, [2]]) is None
    assert proposed_queries([]) == []


def test_a_final_semicolon_is_no_token_of_the_gold(tmp_path: Path) -> None:
    """Spider dev writes 119 of its golds with a final `;` and the same query elsewhere without one; distinct gold SQL
    counts the two as one gold, but their SQL length differed by the `;` (and a `;` after a TAB too). By hand:
    `SELECT count(*) FROM parts` is 7 tokens (SELECT, count, (, *, ), FROM, parts), with or without `;`."""
    make_sqlite(tmp_path / "shop.sqlite", PARTS_SQL)
    (tmp_path / "s.sqleval.yaml").write_text(
        "suite: s\ndatabase: shop.sqlite\ncases:\n"
        "  - {id: a, question: How many parts?, gold: \"SELECT count(*) FROM parts\"}\n"
        "  - {id: b, question: Count the parts., gold: \"SELECT count(*) FROM parts;\"}\n"
        "  - {id: c, question: Number of parts?, gold: \"SELECT\\tcount(*)\\tFROM\\tparts\\t;\\t\"}\n",
        encoding="utf-8")
    stats = _stats(["s.sqleval.yaml"], tmp_path)
    assert stats["distinct_gold_sql"] == 1
    assert stats["sql_tokens"] == {"mean": 7.0, "median": 7.0, "min": 7.0, "max": 7.0}


def test_a_plain_text_question_keeps_the_emphasis_of_its_own_words(tmp_path: Path) -> None:
    """A question in plain text lost every `*` and `_` at its two ends: `*Which* parts hold more than 5?` became the
    case's question `Which* parts hold more than 5?`, `__init__ files?` `init__ files?`. Only emphasis around the
    whole answer (`**"Which parts?"**`) or the label (`**Question:**`) is no part of the question."""
    database = make_sqlite(tmp_path / "shop.sqlite", PARTS_SQL)
    queries = {"SELECT name FROM parts WHERE qty > 5": "Question: *Which* parts hold more than 5 units?",
               "SELECT name, qty FROM parts WHERE qty < 5": "**Question:** Which parts hold _fewer_ than 5?",
               "SELECT count(*) FROM parts": '**"How many parts are there?"**'}
    script = {"request 1 of 1": [json.dumps([{"sql": sql} for sql in queries])],
              **{f"SQL to explain:\n{sql}\n": [answer] for sql, answer in queries.items()}}
    done, _ = _generate(tmp_path, database, script, "--count", "3")
    assert done.returncode == 0, done.stderr
    from pytest_sqleval.loader import load_suite

    suite = load_suite(tmp_path / "gen" / "shop.sqleval.yaml")
    assert [c.question for c in suite.cases] == ["*Which* parts hold more than 5 units?",
                                                 "Which parts hold _fewer_ than 5?", "How many parts are there?"]


def test_check_reads_an_agree_text_by_its_first_word(tmp_path: Path) -> None:
    """`--check`: the verdict is the JSON `agree` (true/false, or the text yes/no), else the answer's first word. An
    `agree` text with more than the word (`"Yes."`, `"No, it lists every part."`) was no verdict: the pair the model
    accepted was dropped with 'no verdict', and the one it refused for a reason was not reported as a disagreement."""
    database = make_sqlite(tmp_path / "shop.sqlite", PARTS_SQL)
    kept, refused, unsure = ("SELECT name FROM parts WHERE qty > 5", "SELECT name FROM parts",
                             "SELECT count(*) FROM parts")
    script = {
        "request 1 of 1": [json.dumps([{"sql": kept}, {"sql": refused}, {"sql": unsure}])],
        f"SQL to explain:\n{kept}\n": [json.dumps({"question": "Which parts have more than five in stock?"})],
        f"SQL to explain:\n{refused}\n": [json.dumps({"question": "Which parts are cheap?"})],
        f"SQL to explain:\n{unsure}\n": [json.dumps({"question": "How many parts?"})],
        "Proposed question: Which parts have": [json.dumps({"reasoning": "qty > 5", "agree": "Yes."})],
        "Proposed question: Which parts are cheap?": [json.dumps({"agree": "No, it lists every part."})],
        "Proposed question: How many parts?": [json.dumps({"agree": "Not sure"})],
    }
    done, report_path = _generate(tmp_path, database, script, "--count", "3", "--check")
    assert done.returncode == 0, done.stderr
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["kept"] == 1
    assert [(d["sql"], d["reason"]) for d in report["drops"]] == [
        (refused, "the model says question and SQL disagree"), (unsure, "the model's check answer has no verdict")]


def test_a_relative_file_url_is_written_relative_to_the_suite(pytester, duckdb_available) -> None:
    """`sqleval generate sqlite:///shop.sqlite -o gen/shop.sqleval.yaml` opened the file from the working directory
    but wrote `database: sqlite:///shop.sqlite` as given, which the loader reads relative to the suite file:
    `pytest --sqleval gen` stopped with 'database file not found: gen/shop.sqlite'. The same for DuckDB, with a
    percent-encoded space in the name."""
    root = pytester.path
    make_sqlite(root / "shop.sqlite", PARTS_SQL)
    _duckdb(root / "my shop.duckdb")
    sql = "SELECT name FROM parts WHERE qty > 5 ORDER BY name"
    script = {"request 1 of 1": [json.dumps([{"sql": sql}])],
              "SQL to explain": [json.dumps({"question": "Which parts hold more than five?"})]}
    for url in ("sqlite:///shop.sqlite", "duckdb:///my%20shop.duckdb"):
        with ChatServer(script) as server:
            done = _datasets(["generate", url, "-o", "gen/shop.sqleval.yaml", "--model", "test-model", "--model-url",
                              server.url, "--cache-mode", "off", "--count", "1"], root, OPENAI_API_KEY="k")
        assert done.returncode == 0, done.stderr
        (root / "gen" / "shop.jsonl").write_text(json.dumps({"id": "g001", "sql": sql}) + "\n", encoding="utf-8")
        result = pytester.runpytest_subprocess("--sqleval", "gen", "--sqleval-predictions", "gen/shop.jsonl",
                                               "-p", "no:cacheprovider")
        result.assert_outcomes(passed=1)


def test_a_blob_sample_value_is_cut_as_long_text_is(tmp_path: Path) -> None:
    """The SQL prompt shows `--sample-rows` rows per table, a text value cut at 40 characters; a BLOB was written in
    full as Python's bytes repr (`b'\\x00\\x01...'`): one 12,800-byte image made the prompt 37,000 characters (cost,
    or past the model's context). It is a blob literal of its first 16 bytes, `X'00010203...'`."""
    import sqlite3

    path = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE docs (id INTEGER, body BLOB)")
    conn.execute("INSERT INTO docs VALUES (1, ?), (2, ?)", (bytes(range(256)) * 50, b"\x00ab"))
    conn.commit()
    conn.close()
    sql = "SELECT id FROM docs WHERE id = 2"
    script = {"request 1 of 1": [json.dumps([{"sql": sql}])], "SQL to explain": [json.dumps({"question": "Which?"})]}
    out = tmp_path / "gen" / "shop.sqleval.yaml"
    with ChatServer(script) as server:
        done = _datasets(["generate", str(path), "-o", str(out), "--model", "test-model", "--model-url", server.url,
                          "--cache-mode", "off", "--count", "1"], tmp_path, OPENAI_API_KEY="k")
        prompt = server.requests[0].messages[-1]["content"]
    assert done.returncode == 0, done.stderr
    assert "1 | X'000102030405060708090A0B0C0D0E0F...'\n2 | X'006162'\n" in prompt
    assert len(prompt) < 2000


def test_a_duckdb_list_sample_value_is_cut_as_long_text_is(tmp_path: Path, duckdb_available) -> None:
    """A DuckDB LIST (or a JSON document) sample value was written in full, however long; a whole number is never
    cut (its magnitude is the point)."""
    database = _duckdb(tmp_path / "shop.duckdb", "CREATE TABLE runs (id HUGEINT, points INTEGER[]);"
                       "INSERT INTO runs SELECT '1000000000000000000000000000000'::HUGEINT, range(1000)::INTEGER[];")
    sql = "SELECT id FROM runs"
    script = {"request 1 of 1": [json.dumps([{"sql": sql}])], "SQL to explain": [json.dumps({"question": "Which?"})]}
    out = tmp_path / "gen" / "shop.sqleval.yaml"
    with ChatServer(script) as server:
        done = _datasets(["generate", str(database), "-o", str(out), "--model", "test-model", "--model-url",
                          server.url, "--cache-mode", "off", "--count", "1"], tmp_path, OPENAI_API_KEY="k")
        prompt = server.requests[0].messages[-1]["content"]
    assert done.returncode == 0, done.stderr
    assert "\n1000000000000000000000000000000 | [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11...\n" in prompt
    assert len(prompt) < 2000
