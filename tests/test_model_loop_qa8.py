"""QA look (model8) at issue 9, the model in the loop: answers no one tuned for. Prose that opens with a SQL word and
holds the query on the same line, a comment after the query's `;` next to a suggested index, answers of 100,000
lines, and what the prompt shows of PostgreSQL's json/jsonb values and array columns. Run as a user runs them:
`pytest --sqleval` through pytester against the loopback chat server (tests/chat_server.py); the PostgreSQL server
is a real one."""

from __future__ import annotations

import json

import pytest

from chat_server import chat_fixture
from conftest import require_module
from model_support import by_id, pg_database_fixture, run, shop_fixture

openai = require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
# one SDK client built at collection (see test_model_gate_new_inputs.py: pytester's in-process runs forget modules
# first imported inside them)
openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused").chat.completions

NAMES = "SELECT name FROM shops ORDER BY id"
FENCE = "```"

shop = shop_fixture()
chat = chat_fixture()


# --------------------------------------------------------------------------- prose opening with a SQL word
@pytest.mark.parametrize("answer, sql", [
    # was: the whole answer was "the SQL" (its first word is SELECT/WITH/SHOW): a syntax miss
    (f"Select the rows: {NAMES}", NAMES),
    (f"With pleasure: {NAMES};", f"{NAMES};"),
    (f"Show me: {NAMES}", NAMES),
    (f"Select all shops: {NAMES}; This lists every shop.", f"{NAMES};"),
    ("Select the rows: SELECT name\nFROM shops ORDER BY id\n\nThis lists them.", NAMES.replace(" FROM", "\nFROM")),
])
def test_prose_opening_with_a_sql_word_then_the_query_on_its_line(answer, sql):
    from pytest_sqleval.model.extract import extract_sql

    got = extract_sql(answer, "auto")
    assert (got.sql, got.error_kind) == (sql, None), got


@pytest.mark.parametrize("answer", [
    # a `:` of the query itself, or in its string, leaves the query as it is
    "SELECT name::text FROM shops", "SELECT name FROM shops WHERE name = :name",
    "SELECT 'note: SELECT 1' AS x FROM shops", "SELECT name FROM shops -- note: SELECT 1",
])
def test_a_query_holding_a_colon_is_read_whole(answer):
    from pytest_sqleval.model.extract import extract_sql

    got = extract_sql(answer, "auto")
    assert (got.sql, got.step) == (answer, "text"), got


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_prose_opening_with_a_sql_word_passes_through_the_model_loop(shop, chat, xdist):
    server = chat({"ROWS": [f"Select the rows: {NAMES}"], "PLEASURE": [f"With pleasure: {NAMES};"]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        cases:
          - {{id: rows, question: ROWS which shops?, gold: {NAMES}}}
          - {{id: pleasure, question: PLEASURE which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop, *xdist)
    cases = by_id(report)
    for name in ("rows", "pleasure"):
        assert (cases[name]["outcome"], cases[name]["cached"]) == ("passed", False), (cases[name], result.stdout.str())
    assert server.count == 2
    server.reset()  # the second run replays the cache: the same verdicts, no request
    result, report = run(shop, *xdist, "--sqleval-cache-mode=only")
    cases = by_id(report)
    assert [(cases[n]["outcome"], cases[n]["cached"]) for n in ("rows", "pleasure")] == [("passed", True)] * 2
    assert server.count == 0


# --------------------------------------------------------------------------- a comment after the query's `;`
def test_a_comment_after_the_query_does_not_hand_the_answer_to_a_suggested_index(shop, chat):
    """Among several SQL blocks the last query wins, not a CREATE INDEX suggested after it; a `-- comment` after the
    query's `;` made sqlglot read a second, comment-only statement, so the query no longer counted as one and the
    CREATE INDEX was scored (a `rejected` miss)."""
    from pytest_sqleval.model.extract import extract_sql

    answer = (f"{FENCE}sql\n{NAMES}; -- every shop\n{FENCE}\n\nFor speed, add an index:\n\n"
              f"{FENCE}sql\nCREATE INDEX shops_name ON shops(name);\n{FENCE}")
    assert extract_sql(answer).sql == f"{NAMES}; -- every shop"
    tagged = f"Here:\n<sql>{NAMES}; -- every shop</sql>\n<sql>CREATE INDEX shops_name ON shops(name);</sql>"
    assert extract_sql(tagged).sql == f"{NAMES}; -- every shop"
    chat({"IDX": [answer]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        cases:
          - {{id: idx, question: IDX which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop)
    case = by_id(report)["idx"]
    assert case["outcome"] == "passed", (case, result.stdout.str())


# --------------------------------------------------------------------------- a JSON answer whose SQL is fenced
def test_a_json_answer_whose_sql_value_is_a_fenced_block(shop, chat):
    """A model asked for JSON that fences the query inside the string: was `no_sql` (the value does not start like
    SQL)."""
    from pytest_sqleval.model.extract import extract_sql

    answer = json.dumps({"reasoning": "every shop, by id", "sql": f"{FENCE}sql\n{NAMES}\n{FENCE}"})
    got = extract_sql(answer)
    assert (got.sql, got.step) == (NAMES, "json"), got
    chat({"JSON": [answer], "WRAPPED": [f"{FENCE}json\n{answer}\n{FENCE}"]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        cases:
          - {{id: json, question: JSON which shops?, gold: {NAMES}}}
          - {{id: wrapped, question: WRAPPED which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop)
    cases = by_id(report)
    for name in ("json", "wrapped"):
        assert cases[name]["outcome"] == "passed", (cases[name], result.stdout.str())


# --------------------------------------------------------------------------- gpt-oss's channels left in the text
HARMONY = ("<|start|>assistant<|channel|>analysis<|message|>The user wants names; maybe SELECT id?<|end|>"
           "<|start|>assistant<|channel|>final<|message|>{answer}<|return|>")


@pytest.mark.parametrize("answer, sql, kind", [
    # was: no_sql (the text starts with `<|channel|>`), or the analysis channel's words scored as SQL
    (HARMONY.format(answer=NAMES), NAMES, None),
    (HARMONY.format(answer=f"{FENCE}sql\n{NAMES}\n{FENCE}"), NAMES, None),
    ("<|channel|>analysis<|message|>We need the names. " + NAMES, None, "no_sql"),  # cut off while thinking
    ("SELECT '<|channel|>final<|message|>' AS x FROM shops", "SELECT '<|channel|>final<|message|>' AS x FROM shops",
     None),  # in a query's string: as it is
])
def test_gpt_oss_channels_left_in_the_answer(answer, sql, kind):
    from pytest_sqleval.model.extract import extract_sql

    got = extract_sql(answer)
    assert (got.sql, got.error_kind) == (sql, kind), got


def test_gpt_oss_channels_pass_through_the_model_loop(shop, chat):
    chat({"OSS": [HARMONY.format(answer=NAMES)]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        cases:
          - {{id: oss, question: OSS which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop)
    case = by_id(report)["oss"]
    assert case["outcome"] == "passed", (case, result.stdout.str())


# --------------------------------------------------------------------------- answers of 100,000 lines
@pytest.mark.parametrize("line, kind", [
    ("I think the answer is this.\n", "no_sql"),
    ("It's fine, let me think.\n", "no_sql"),  # a quote left open on every line
    ("-- step\n", "no_sql"),  # comment lines: each was read with the whole rest of the answer
    ("Let me think.\n\n", "no_sql"),
])
def test_an_answer_of_100k_lines_is_read_in_linear_time(line, kind):
    """A local model looping to its token limit: each line's rest was copied and split to read its first token
    (27 s of CPU for 100,000 prose lines, minutes for comment lines, holding the GIL)."""
    import time

    from pytest_sqleval.model.extract import extract_sql

    started = time.process_time()
    got = extract_sql("Here is my reasoning.\n" + line * 100_000)
    assert got.error_kind == kind, got
    assert time.process_time() - started < 10


def test_sql_after_100k_lines_of_prose_is_found_quickly():
    import time

    from pytest_sqleval.model.extract import extract_sql

    started = time.process_time()
    got = extract_sql("Let me think.\n" * 100_000 + "-- the query\n" + NAMES)
    assert (got.sql, got.step) == (f"-- the query\n{NAMES}", "prose"), got
    assert time.process_time() - started < 10


# --------------------------------------------------------------------------- PostgreSQL values in the prompt
pg_database = pg_database_fixture("qa8")


@pytest.mark.parametrize("fmt", ["ddl", "compact"])
def test_postgresql_json_values_and_array_columns_in_the_prompt(shop, chat, pg_database, fmt):
    """psycopg hands json/jsonb over parsed: the prompt showed Python's `{'a': 1, 'b': [True, None]}` for a
    document, `True` for a jsonb `true`; and a text[] column was declared `tags ARRAY`."""
    url, sql = pg_database
    sql("CREATE TABLE docs (id INTEGER PRIMARY KEY, body JSON, meta JSONB, flag JSONB, tags TEXT[]);"
        """INSERT INTO docs VALUES (1, '{"a": 1, "b": [true, null]}', '{"k": "v"}', 'true', ARRAY['x', 'y'])""")
    server = chat({}, default="SELECT id FROM docs")
    shop.makefile(".sqleval.yaml", s=f"""
        database: {json.dumps(url)}
        model: test-model
        schema_format: {fmt}
        sample_rows: 1
        cases:
          - {{id: a, question: which docs?, gold: SELECT id FROM docs}}
        """)
    result, report = run(shop)
    assert by_id(report)["a"]["outcome"] == "passed", result.stdout.str()
    prompt = server.requests[0].messages[-1]["content"]
    assert """'{"a": 1, "b": [true, null]}'""" in prompt and """'{"k": "v"}'""" in prompt, prompt
    assert "'true'" in prompt and "True" not in prompt and "{'" not in prompt, prompt
    if fmt == "ddl":
        assert "tags TEXT[]" in prompt, prompt
