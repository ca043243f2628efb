"""Issues 9 (SQL extraction from model replies) and 14 (`sqleval generate`) tried with new inputs: reply shapes no
earlier test used (inline code spans, JSON replies, tilde fences), and generation on DuckDB with `--seed`, against
the loopback chat-completions server (tests/chat_server.py). Real SQLite and DuckDB files, never a mocked database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chat_server import ChatServer, chat_fixture
from conftest import make_sqlite, require_module
from pytest_sqleval.model.extract import extract_sql

openai = require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
# Build a client once at collection: pytester's in-process runs forget modules first imported inside them.
openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused").chat.completions

chat = chat_fixture()


# --------------------------------------------------------------------------- extraction, reply shapes
@pytest.mark.parametrize("text, sql, step", [
    # the only SQL is an inline code span in prose
    ("The answer is `SELECT name FROM t WHERE x > 1`.", "SELECT name FROM t WHERE x > 1", "inline"),
    ("I'll use the parts table.\nThe final query is `SELECT COUNT(*) FROM parts`.", "SELECT COUNT(*) FROM parts",
     "inline"),
    ("The query is: `select a from t;`", "select a from t;", "inline"),                    # after a colon, lower case
    ("Answer: `WITH x AS (SELECT 1 AS a) SELECT a FROM x`", "WITH x AS (SELECT 1 AS a) SELECT a FROM x", "inline"),
    ("Run ``SELECT a FROM t WHERE b = 'it''s'`` to see.", "SELECT a FROM t WHERE b = 'it''s'", "inline"),  # `` span
    ("```SELECT a FROM t```", "SELECT a FROM t", "inline"),                                 # a one-line ``` span
    ("Not `SELECT a FROM t` but `SELECT b FROM t`.", "SELECT b FROM t", "inline"),          # the last query span
    ("Look at the `name` column: `SELECT name FROM shops`", "SELECT name FROM shops", "inline"),  # a name span first
    # replies in JSON (a structured-output model)
    ('{"sql": "SELECT a FROM t WHERE b = 1"}', "SELECT a FROM t WHERE b = 1", "json"),
    ('```json\n{"reasoning": "count them", "query": "select count(*) from t;"}\n```', "select count(*) from t;",
     "json"),
    ('Here you go:\n{"SQL": "WITH c AS (SELECT 1) SELECT * FROM c"}', "WITH c AS (SELECT 1) SELECT * FROM c", "json"),
    ('{"sql": ["SELECT name FROM shops"]}', "SELECT name FROM shops", "json"),  # one query, in a list
    ('{"answer": {"query": [" select 1 "]}}', "select 1", "json"),
    # a tilde fence (CommonMark) with and without a language tag
    ("Here:\n~~~sql\nSELECT a FROM t;\n~~~\nThis selects a.", "SELECT a FROM t;", "fenced"),
    ("~~~\nselect a\nfrom t\n~~~", "select a\nfrom t", "fenced"),
    # SQL, then its explanation on the very next line (no blank line, no ';')
    ("SELECT a FROM t WHERE b = 2\nThis query returns a for every row with b = 2.", "SELECT a FROM t WHERE b = 2",
     "text"),
    ("select name\nfrom shops\nNote: the names are unique.", "select name\nfrom shops", "text"),
    ("Here is the query.\nWITH c AS (SELECT 1 AS n)\nSELECT n FROM c\nIt returns one row.",
     "WITH c AS (SELECT 1 AS n)\nSELECT n FROM c", "prose"),
    ("SQL: SELECT a FROM t\nExplanation:\nit selects a.", "SELECT a FROM t", "label"),
    # a reasoning model (DeepSeek-R1, Qwen3 on vLLM/Ollama) thinks aloud first: drafts in <think> are not the answer
    ("<think>\nSELECT id FROM shops would give ids, but we need names.\n</think>\nSELECT name FROM shops",
     "SELECT name FROM shops", "text"),
    ("<think>\nDraft:\n```sql\nSELECT id FROM shops\n```\nNo, names.\n</think>\n\nSELECT name FROM shops;",
     "SELECT name FROM shops;", "text"),
    ("<think>Okay, the names.</think>\n```sql\nSELECT name FROM shops\n```", "SELECT name FROM shops", "fenced"),
])
def test_reply_shapes_give_their_sql(text, sql, step):
    got = extract_sql(text)
    assert (got.sql, got.step, got.error_kind) == (sql, step, None)


@pytest.mark.parametrize("text", [
    "The `name` column of `t` holds what you want.",          # spans, none a query
    "`SELECT` is not needed: the `name` column answers it.",  # a keyword alone is not a query
    'The answer is `SELECT name FROM` and more.',             # does not parse as a query
    '{"answer": "I cannot tell from this schema"}',           # JSON without SQL
    '{"sql": "I cannot answer that"}',                        # JSON whose sql is prose
    '{"sql": ["SELECT a FROM t", "SELECT b FROM t"]}',       # two queries: which one would be scored?
    "I'm sorry, but the schema has no table for `weather`.",  # a refusal
])
def test_replies_without_a_query_stay_no_sql(text):
    got = extract_sql(text)
    assert got.sql is None and got.error_kind == "no_sql", got
    assert got.message.startswith("the model's answer contains no SQL: ")


def test_sql_with_backtick_names_or_a_span_in_a_string_is_kept_as_written():
    """A span is only a rescue: a reply that is SQL (MySQL-style `names`, a span inside a literal) is the SQL."""
    for text in ("SELECT `name` FROM `shops`", "SELECT id FROM t WHERE note = '`SELECT 1`'",
                 "SELECT a /* all of them\nThis is a comment. */\nFROM t",        # a sentence inside a comment
                 "SELECT a FROM t WHERE\nb = 2 AND c. is broken."):          # broken SQL stays broken

        got = extract_sql(text)
        assert (got.sql, got.step) == (text, "text")


def test_fenced_mode_does_not_take_an_inline_span_or_json():
    assert extract_sql("The answer is `SELECT 1 AS a`.", "fenced").error_kind == "no_sql"
    thought = extract_sql("<think>\n```sql\nSELECT 1\n```\n</think>\nSELECT 2", "fenced")
    assert thought.error_kind == "no_sql" and thought.message.startswith("no fenced code block")
    unfinished = extract_sql("<think>\nSELECT 1 is a start", "auto")  # cut off while thinking: no answer yet
    assert unfinished.error_kind == "no_sql"
    assert extract_sql('{"sql": "SELECT 1"}', "raw").error_kind == "no_sql"


def test_inline_and_json_replies_are_scored_through_pytest(pytester: pytest.Pytester, chat):
    """End to end: the model answers in prose with an inline span, in JSON, and after thinking aloud; each case
    passes, the record names the step, and raw_output keeps the whole answer."""
    make_sqlite(pytester.path / "shop.sqlite")
    replies = {"SPAN": "You can get them with `SELECT name FROM shops ORDER BY id`.",
               "JSON": '{"reasoning": "names of the shops", "sql": "select name from shops;"}',
               "THINK": "<think>\nSELECT id FROM shops? No: names.\n</think>\nSELECT name FROM shops\nThis lists them."}
    chat({key: [reply] for key, reply in replies.items()})
    cases = "".join(f"  - {{id: {k.lower()}, question: '{k} which shops?', gold: SELECT name FROM shops}}\n"
                    for k in replies)
    pytester.makefile(".sqleval.yaml", s="suite: s\ndatabase: shop.sqlite\nmodel: {name: test-model, retries: 0}\n"
                                         f"cases:\n{cases}")
    result = pytester.runpytest("--sqleval", "--sqleval-json=report.json", "-p", "no:cacheprovider")
    report = json.loads((pytester.path / "report.json").read_text())
    got = {c["id"]: (c["outcome"], c["predicted"], c["extraction"]["step"], c["raw_output"]) for c in report["cases"]}
    assert got == {"span": ("passed", "SELECT name FROM shops ORDER BY id", "inline", replies["SPAN"]),
                   "json": ("passed", "select name from shops;", "json", replies["JSON"]),
                   "think": ("passed", "SELECT name FROM shops", "text", replies["THINK"])}
    assert result.ret == 0


# --------------------------------------------------------------------------- sqleval generate
PARTS_DUCKDB = """
CREATE TABLE suppliers (id INTEGER PRIMARY KEY, name VARCHAR, country VARCHAR);
CREATE TABLE parts (id INTEGER PRIMARY KEY, name VARCHAR, qty INTEGER, supplier_id INTEGER REFERENCES suppliers(id));
INSERT INTO suppliers VALUES (1, 'Acme', 'DE'), (2, 'Bolt Co', 'US');
INSERT INTO parts VALUES (1, 'bolt', 10, 1), (2, 'nut', 3, 1), (3, 'gear', 7, 2), (4, 'shaft', 2, 2);
"""
CTE = "WITH big AS (SELECT name, qty FROM parts WHERE qty > 5) SELECT name FROM big ORDER BY qty DESC"
LOWER = "select s.country, count(*) as n from parts p join suppliers s on p.supplier_id = s.id group by s.country"
GEN_SQL = [CTE + ";", LOWER, "SELECT max(qty) FROM parts WHERE qty > 100;"]  # the last: only a NULL row


def _duckdb(path: Path) -> Path:
    duckdb = require_module("duckdb", "duckdb is not installed")
    con = duckdb.connect(str(path))
    con.execute(PARTS_DUCKDB)
    con.close()
    return path


def _gen_script() -> dict[str, list]:
    items = [{"reasoning": f"idea {i} uses parts[qty] and {{name}}", "sql": sql} for i, sql in enumerate(GEN_SQL)]
    return {"request 1 of 1": ["Let me think about parts[qty] first.\n```json\n" + json.dumps(items) + "\n```"],
            f"SQL to explain:\n{CTE}": ['{"reasoning": "r", "question": "Which well-stocked parts, largest first?"}'],
            f"SQL to explain:\n{LOWER}": ['{"reasoning": "r", "question": "How many parts per supplier country?"}'],
            "Proposed question: ": ['{"reasoning": "ok", "agree": true}']}


def _generate(*args: str) -> int:
    from pytest_sqleval.datasets.cli import main

    return main(["generate", *args, "--model", "test-model", "--count", "3", "--batch", "3"])


def test_generate_seed_is_sent_and_a_rerun_is_byte_identical(tmp_path: Path, chat, capsys):
    """--seed N goes into every request as the OpenAI `seed`; the same seed with the same replies writes the same
    suite and report, byte for byte (no response cache involved)."""
    db = _duckdb(tmp_path / "parts.duckdb")
    out = tmp_path / "gen" / "parts.sqleval.yaml"
    server = chat(_gen_script())
    args = (str(db), "-o", str(out), "--seed", "7", "--check", "--cache-mode", "off")
    assert _generate(*args) == 0, capsys.readouterr().err
    first = (out.read_bytes(), (tmp_path / "gen" / "parts.report.json").read_bytes())
    assert len(server.requests) == 1 + 2 + 2  # SQL, two questions, two checks
    assert [r.body.get("seed") for r in server.requests] == [7] * 5
    server.reset()
    assert _generate(*args) == 0, capsys.readouterr().err
    assert (out.read_bytes(), (tmp_path / "gen" / "parts.report.json").read_bytes()) == first
    assert len(server.requests) == 5
    report = json.loads(first[1])
    assert report["options"]["seed"] == 7
    assert report["dropped"]["empty_result"] == 1 and report["kept"] == 2


def test_the_seed_is_part_of_the_cached_request(tmp_path: Path, chat, capsys):
    """Without --seed no `seed` is sent (older caches stay valid); a different seed is a different request, so a
    replay with --cache-mode only and another seed fails instead of reusing answers given under the first."""
    db = _duckdb(tmp_path / "parts.duckdb")
    server = chat(_gen_script())
    cache = str(tmp_path / "cache")
    assert _generate(str(db), "-o", str(tmp_path / "a.sqleval.yaml"), "--cache", cache) == 0
    assert all("seed" not in r.body for r in server.requests)
    assert _generate(str(db), "-o", str(tmp_path / "b.sqleval.yaml"), "--cache", cache, "--seed", "3") == 0
    assert [r.body.get("seed") for r in server.requests[3:]] == [3, 3, 3]
    calls = len(server.requests)
    capsys.readouterr()
    assert _generate(str(db), "-o", str(tmp_path / "c.sqleval.yaml"), "--cache", cache, "--seed", "4",
                     "--cache-mode", "only") == 2
    assert "not in the response cache" in capsys.readouterr().err
    assert _generate(str(db), "-o", str(tmp_path / "d.sqleval.yaml"), "--cache", cache, "--seed", "3",
                     "--cache-mode", "only") == 0
    assert len(server.requests) == calls  # replayed from the cache


def test_a_duckdb_generation_is_a_suite_that_runs(pytester: pytest.Pytester, chat):
    """The output format on DuckDB: a CTE with a trailing ';' and a lower-case join survive, the suite names the
    database relative to itself, carries difficulty and clause tags, and its golds pass when predicted."""
    (pytester.path / "data").mkdir()
    db = _duckdb(pytester.path / "data" / "parts.duckdb")
    out = pytester.path / "suites" / "parts.sqleval.yaml"
    chat(_gen_script())
    assert _generate(str(db), "-o", str(out), "--cache-mode", "off") == 0
    import yaml

    suite = yaml.safe_load(out.read_text())
    assert suite["database"] == "../data/parts.duckdb" and suite["suite"] == "parts"
    assert [(c["id"], c["gold"], c["question"]) for c in suite["cases"]] == [
        ("g001", CTE, "Which well-stocked parts, largest first?"),
        ("g002", LOWER, "How many parts per supplier country?")]
    assert set(suite["cases"][0]["tags"]) == {"cte", "where", "order_by"}
    assert set(suite["cases"][1]["tags"]) == {"join", "group_by"}
    assert all(c["difficulty"] in ("easy", "medium", "hard", "extra") for c in suite["cases"])
    preds = pytester.path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"id": c["id"], "sql": c["gold"]}) + "\n" for c in suite["cases"]))
    result = pytester.runpytest("--sqleval", str(out), f"--sqleval-predictions={preds}", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_a_fenced_query_inside_the_json_is_screened_as_its_sql(tmp_path: Path):
    """A model that fences the SQL inside its JSON value: the query is read out of the fence as a prediction's is,
    instead of being dropped as `rejected: a COLUMN statement is not a query`; prose alone is `unparsable`."""
    from sqlalchemy import create_engine

    from pytest_sqleval.datasets.generate import screen

    db = make_sqlite(tmp_path / "p.sqlite", "CREATE TABLE parts (id INTEGER, qty INTEGER);"
                                            "INSERT INTO parts VALUES (1, 10), (2, 3);")
    engine = create_engine(f"sqlite:///{db}")
    try:
        kept, drops = screen(engine, [("```sql\nSELECT qty FROM parts WHERE qty > 5;\n```", None),
                                      ("I would count the parts first.", None)],
                             dialect="sqlite", max_result_rows=10, timeout=5)
    finally:
        engine.dispose()
    assert [k.sql for k in kept] == ["SELECT qty FROM parts WHERE qty > 5"]
    assert [(d.filter, d.reason) for d in drops] == [
        ("unparsable", "the model's answer contains no SQL: I would count the parts first.")]


def test_the_suite_name_is_the_output_stem_as_the_loader_reads_it(tmp_path: Path, chat, capsys):
    """`-o mro.v2.sqleval.yaml` is the suite `mro.v2` (the loader's default for that file), not `mro`."""
    db = _duckdb(tmp_path / "parts.duckdb")
    chat(_gen_script())
    out = tmp_path / "mro.v2.sqleval.yaml"
    assert _generate(str(db), "-o", str(out), "--cache-mode", "off") == 0, capsys.readouterr().err
    from pytest_sqleval.loader import load_suite

    assert load_suite(out).name == "mro.v2"
    assert "suite: mro.v2\n" in out.read_text() and (tmp_path / "mro.v2.report.json").is_file()


@pytest.mark.parametrize("option, value, message", [
    ("--temperature", "nan", "--temperature must be a finite number from 0, not nan"),
    ("--temperature", "-1", "--temperature must be a finite number from 0, not -1.0"),
    ("--timeout", "0", "--timeout must be a finite number of seconds > 0 and <= 86400, not 0.0"),
    ("--timeout", "inf", "--timeout must be a finite number of seconds > 0 and <= 86400, not inf"),
])
def test_bad_numbers_are_refused_before_any_call(tmp_path: Path, chat, capsys, option, value, message):
    db = make_sqlite(tmp_path / "p.sqlite", "CREATE TABLE parts (id INTEGER);")
    server = chat({})
    assert _generate(str(db), "-o", str(tmp_path / "x.sqleval.yaml"), "--cache-mode", "off", option, value) == 2
    assert capsys.readouterr().err.strip() == f"sqleval generate: {message}"
    assert server.requests == []


def test_a_rerun_in_a_new_process_writes_the_same_bytes(tmp_path: Path):
    """Byte-identical across processes too: nothing in the suite or report follows Python's per-process string
    hashing (set order), so two runs with different PYTHONHASHSEED and the same replies agree."""
    import os
    import subprocess
    import sys

    db = _duckdb(tmp_path / "parts.duckdb")
    outputs = []
    with ChatServer(_gen_script()) as server:
        for hash_seed in ("1", "2"):  # these two iterate {WHERE, CTE, ORDER BY} in different orders
            out = tmp_path / hash_seed / "parts.sqleval.yaml"
            done = subprocess.run(
                [sys.executable, "-m", "pytest_sqleval.datasets", "generate", str(db), "-o", str(out), "--model",
                 "test-model", "--model-url", server.url, "--count", "3", "--batch", "3", "--seed", "5",
                 "--cache-mode", "off"],
                cwd=tmp_path, capture_output=True, text=True, timeout=120,
                env={**os.environ, "OPENAI_API_KEY": "k", "PYTHONHASHSEED": hash_seed, "NO_PROXY": "127.0.0.1"})
            assert done.returncode == 0, done.stderr
            report = (out.parent / "parts.report.json").read_text().replace(str(out), "OUT")
            outputs.append((out.read_bytes(), report))
    assert outputs[0] == outputs[1]


def test_paraphrases_that_repeat_the_question_or_each_other_are_not_cases(tmp_path: Path, chat, capsys):
    db = _duckdb(tmp_path / "parts.duckdb")
    script = _gen_script()
    script[f"SQL to explain:\n{CTE}"] = [json.dumps({
        "reasoning": "r", "question": "Which well-stocked parts, largest first?",
        "paraphrases": ["which  well-stocked parts, largest first?", "List the big parts by stock.",
                        "List the big parts by stock.", "Name the parts with more than five, biggest first."]})]
    chat(script)
    out = tmp_path / "p.sqleval.yaml"
    assert _generate(str(db), "-o", str(out), "--cache-mode", "off", "--paraphrases", "3") == 0, capsys.readouterr().err
    from pytest_sqleval.loader import load_suite

    got = [(c.id, c.question) for c in load_suite(out).cases if c.gold == CTE]
    assert got == [("g001", "Which well-stocked parts, largest first?"), ("g001-p1", "List the big parts by stock."),
                   ("g001-p2", "Name the parts with more than five, biggest first.")]


@pytest.mark.parametrize("text, sql", [
    ("Here is the query\nSELECT name FROM t WHERE note = 'a\u2028b'", "SELECT name FROM t WHERE note = 'a\u2028b'"),
    ("The query is: SELECT name FROM t WHERE note = 'a\u0085b'\r\n  AND x = 1",
     "SELECT name FROM t WHERE note = 'a\u0085b'\r\n  AND x = 1"),
    ("Sure, here it is\r\nSELECT name FROM t WHERE note = 'a\rb'", "SELECT name FROM t WHERE note = 'a\rb'"),
], ids=["line-separator", "next-line-after-colon", "carriage-return"])
def test_a_line_break_that_is_not_a_newline_stays_inside_the_extracted_literal(text, sql):
    """Only "\\n" ends a line of the answer: U+2028, U+0085 or a lone \\r inside a string literal is the value's."""
    assert extract_sql(text).sql == sql
