"""A third QA look at issue 9 (the model in the loop), on inputs the earlier QA files did not try: usage blocks with
only some of their fields, replies in odd shapes, caches across runs, and serial against `-n 2`. Run as a user runs
them: `pytest --sqleval` through pytester against a real chat-completions server on 127.0.0.1 (tests/chat_server.py)."""

from __future__ import annotations

import json

import pytest

from chat_server import Malformed, chat_fixture
from conftest import require_module
from model_support import by_id, run, shop_fixture

openai = require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
# one SDK client built at collection (see test_model_gate_new_inputs.py: pytester's in-process runs forget modules
# first imported inside them)
openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused").chat.completions

NAMES = "SELECT name FROM shops"

shop = shop_fixture()
chat = chat_fixture()


def completion(text: str, usage=None) -> Malformed:
    """A 200 chat completion with ``text`` and the given ``usage`` block (None: no usage key), sent verbatim."""
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}
    if usage is not None:
        body["usage"] = usage
    return Malformed(json.dumps(body))
# --------------------------------------------------------------------------- usage with some of its fields
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_usage_block_with_one_count_missing_makes_the_suite_cost_say_it_is_partial(shop, chat, workers):
    """A server whose `usage` holds `prompt_tokens` but no `completion_tokens` (or the reverse): that case's cost is
    unknown, so the suite's cost leaves it out, and the summary and the JSON must say so (`calls_without_tokens`)
    rather than print a cost that reads as the whole run's; serial and -n 2 alike."""
    chat({"FULL": [completion(NAMES, {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100})],
          "HALF": [completion(NAMES, {"prompt_tokens": 1000, "total_tokens": 1100})],
          "OTHER": [completion(NAMES, {"completion_tokens": 100})]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: {{name: test-model, price_per_1k_input: 2.0, price_per_1k_output: 10.0}}
        cases:
          - {{id: full, question: FULL which shops?, gold: {NAMES}}}
          - {{id: half, question: HALF which shops?, gold: {NAMES}}}
          - {{id: other, question: OTHER which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop, *workers)
    cases = by_id(report)
    assert cases["half"]["tokens"] == {"prompt": 1000, "completion": None} and cases["half"]["cost"] is None
    assert cases["other"]["tokens"] == {"prompt": None, "completion": 100} and cases["other"]["cost"] is None
    block = report["suites"][0]["model"]
    assert block["cost"] == pytest.approx(3.0) and block["calls"] == 3
    assert block.get("calls_without_tokens") == 2, block
    assert "(2 calls without token counts)" in result.stdout.str()


# --------------------------------------------------------------------------- empty answers, named for what they are
@pytest.mark.parametrize("answer", ["```sql\n```", "```sql\n\n```\nThe table has no such column.",
                                    "Here is the query:\n~~~sql\n~~~"])
@pytest.mark.parametrize("mode", ["auto", "fenced"])
def test_an_empty_code_block_is_named_as_one_in_both_modes(answer, mode):
    """A model that opens and closes a fence with nothing in it: the miss says the block is empty (and shows what
    came), not "no fenced code block" (there is one) nor "contains no SQL" as if it held prose."""
    from pytest_sqleval.model.extract import extract_sql, preview

    got = extract_sql(answer, mode)
    assert (got.sql, got.error_kind) == (None, "no_prediction")
    assert got.message == f"the model's answer has an empty code block: {preview(answer)}"


def test_a_label_with_nothing_after_it_is_not_called_an_empty_code_block():
    """`SQL:` and nothing more: there is no code block in the answer, and the miss shows what came."""
    from pytest_sqleval.model.extract import extract_sql

    got = extract_sql("SQL:\n")
    assert (got.sql, got.error_kind) == (None, "no_prediction")
    assert got.message == "the model's answer has nothing after its label: SQL:"


def test_an_empty_block_before_the_query_still_gives_the_query():
    """An empty block followed by the query in prose (auto mode): the query is scored as before."""
    from pytest_sqleval.model.extract import extract_sql

    assert extract_sql("```sql\n```\nSELECT name FROM shops").sql == NAMES


def test_an_empty_code_block_through_the_model_loop(shop, chat):
    """Through `pytest --sqleval`: the case misses with the empty block named, its raw output kept."""
    chat({"EMPTY": ["```sql\n```"]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        cases:
          - {{id: empty, question: EMPTY which shops?, gold: {NAMES}}}
        """)
    _, report = run(shop)
    (case,) = report["cases"]
    assert case["error"] == {"kind": "no_prediction", "message": "the model's answer has an empty code block: ```sql ```"}
    assert case["raw_output"] == "```sql\n```"


@pytest.mark.parametrize("answer", ["~~~sql\n~~~", "=> no query is needed: there is one shop", "-> see the table",
                                    "!= what you asked", "|| I am not sure"])
def test_an_answer_opening_with_an_operator_is_not_sql(answer):
    """No statement starts with an operator; sqlglot reads `~~~` as GLOB and `->`, `=>`, `!=`, `||` as operators,
    which the extraction let through as SQL (a syntax error from the engine instead of what the model said)."""
    from pytest_sqleval.model.extract import extract_sql, looks_like_sql

    assert not looks_like_sql(answer)
    assert extract_sql(answer).sql is None


@pytest.mark.parametrize("text", ["(SELECT 1) UNION (SELECT 2)", "-- all shops\nSELECT name FROM shops",
                                  "/* count */ SELECT count(*) FROM shops", "select 1", "PRAGMA table_info(shops)"])
def test_queries_that_open_with_a_parenthesis_a_comment_or_lower_case_still_look_like_sql(text):
    from pytest_sqleval.model.extract import looks_like_sql

    assert looks_like_sql(text)




# --------------------------------------------------------------------------- an earlier turn's odd answer in the history
def test_a_later_turn_whose_history_holds_a_lone_surrogate_is_still_asked(shop, chat):
    """history: model. Turn 1's answer carries a JSON `\\udce9` escape (a lone surrogate, which UTF-8 cannot encode):
    turn 1 misses as before, but turn 2 must still be asked, its prompt holding the earlier SQL (the character as
    U+FFFD), not be a model_error "the predictor raised UnicodeEncodeError" with no call made; a rerun replays
    both turns from the cache."""
    body = json.dumps(json.loads(completion("SELECT name FROM shops -- caf\udce9").body))
    assert "\\udce9" in body
    server = chat({"FIRST": [Malformed(body)]}, default=NAMES)
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        cases:
          - id: talk
            interaction:
              - {{question: "FIRST", gold: {NAMES}}}
              - {{question: "SECOND", gold: {NAMES}}}
        """)
    _, report = run(shop)
    cases = by_id(report)
    assert cases["talk/1"]["error"]["kind"] == "syntax"
    assert cases["talk/2"]["error"] is None and cases["talk/2"]["outcome"] == "passed", cases["talk/2"]["error"]
    assert server.count == 2
    (second,) = server.requests_for("SECOND")
    assert "SELECT name FROM shops -- caf\ufffd" in second.messages[-1]["content"]
    server.reset()
    _, report = run(shop)
    assert server.count == 0 and [c["cached"] for c in report["cases"]] == [True, True]



# --------------------------------------------------------------------------- saving predictions
def test_a_run_without_any_model_case_leaves_the_saved_predictions_as_they_were(shop, chat):
    """A suite with a typo stops collection (or no suite names a model): no model case ran, so the file an earlier
    run saved stays as it was (an empty file, which `--sqleval-predictions` refuses, replaced it), and the summary
    says it was not written."""
    server = chat(default=NAMES)
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        cases:
          - {{id: q1, question: which shops?, gold: {NAMES}}}
        """)
    result, _ = run(shop, "--sqleval-save-predictions=saved.jsonl")
    assert "1 model predictions saved" in result.stdout.str()
    saved = (shop.path / "saved.jsonl").read_text()
    shop.makefile(".sqleval.yaml", s="database: shop.sqlite\nmodel: test-model\ncases: [{id: q1, question: q, gold: }\n")
    server.reset()
    result, _ = run(shop, "--sqleval-save-predictions=saved.jsonl")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert (shop.path / "saved.jsonl").read_text() == saved
    assert f"sqleval: no model predictions to save; {shop.path / 'saved.jsonl'} was not written" in result.stdout.str()
    shop.makefile(".sqleval.yaml", s=f"database: shop.sqlite\ncases: [{{id: q1, question: q, gold: {NAMES}, predicted: {NAMES}}}]\n")
    result, _ = run(shop, "--sqleval-save-predictions=saved.jsonl")
    assert result.ret == 0 and (shop.path / "saved.jsonl").read_text() == saved and server.count == 0
    result, report = run(shop, "--sqleval-predictions=saved.jsonl")
    assert result.ret == 0 and report["cases"][0]["outcome"] == "passed"


# --------------------------------------------------------------------------- sample rows in the schema
def test_sample_rows_with_line_breaks_or_a_comment_end_keep_one_row_a_line_inside_one_comment(shop, chat):
    """`sample_rows: 2` with text values holding a line break and `*/` (notes, addresses, code snippets): in the
    `ddl` schema each row stays on its line, and the example-rows comment ends once, after the last row (a `*/` in
    a value closed it early, so the rows after it read as DDL)."""
    import sqlite3

    connection = sqlite3.connect(shop.path / "notes.sqlite")
    connection.executescript("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"
                             "INSERT INTO notes VALUES (1, 'see */ below'), (2, 'first line\nsecond line');")
    connection.commit()
    connection.close()
    server = chat(default="SELECT body FROM notes")
    shop.makefile(".sqleval.yaml", s="""
        database: notes.sqlite
        model: test-model
        sample_rows: 2
        cases:
          - {id: q1, question: which notes?, gold: SELECT body FROM notes}
        """)
    _, report = run(shop)
    assert report["cases"][0]["outcome"] == "passed"
    (request,) = server.requests
    prompt = request.messages[-1]["content"]
    comment = prompt[prompt.index("/* 2 example rows from notes:"):]
    assert comment.count("*/") == 1, comment
    lines = comment.split("\n")
    assert lines[1:5] == ["id | body", "1 | 'see * / below'", "2 | 'first line\\nsecond line'", "*/"], lines


# --------------------------------------------------------------------------- a fence the prompt opened
PREFILLED = [
    ("SELECT name FROM shops\n```", NAMES),
    ("SELECT name FROM shops\n```\n\nThis lists every shop's name.", NAMES),
    ("SELECT name\nFROM shops\nWHERE id > 1;\n```\n```\nname\n----\nB\n```", "SELECT name\nFROM shops\nWHERE id > 1;"),
    ("Here it is:\nSELECT name FROM shops\n```\nIt lists the names.", NAMES),
]


@pytest.mark.parametrize("answer, sql", PREFILLED)
@pytest.mark.parametrize("mode", ["auto", "fenced"])
def test_an_answer_closing_a_fence_the_prompt_opened_gives_the_query_before_it(answer, sql, mode):
    """A prompt that ends with ```` ```sql ```` (SQLCoder's, many completion prompts): the model writes the query,
    then the closing fence, then maybe prose or example output. The query is what came before the fence; it was
    scored with the fence in it (a syntax miss), or the prose after it was taken for a block (no_sql)."""
    from pytest_sqleval.model.extract import extract_sql

    got = extract_sql(answer, mode)
    assert (got.sql, got.step, got.error_kind) == (sql, "fenced", None)


@pytest.mark.parametrize("answer, sql", [
    ("SELECT statements can do this:\n```\nSELECT 1\n```", "SELECT 1"),  # prose, then a block: as before
    ("SELECT 2\n```\nSELECT 1\n```", "SELECT 1"),  # fences that pair up: the block, as before
    ("Use:\nSELECT 2\n```\nSELECT 1", "SELECT 1"),  # an unclosed final block (cut off): as before
])
def test_fences_that_pair_up_or_open_the_last_block_are_read_as_before(answer, sql):
    from pytest_sqleval.model.extract import extract_sql

    assert extract_sql(answer).sql == sql


def test_a_prompt_ending_with_an_open_fence_scores_the_models_continuation(shop, chat):
    """Through `pytest --sqleval`: a suite's prompt ends with ```` ```sql ````, the endpoint continues it."""
    server = chat({"which": ["SELECT name FROM shops\n```\n\nThis lists every shop's name."]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        prompt: |
          ### Task
          Generate a SQL query to answer [QUESTION]{{{{ question }}}}[/QUESTION]
          ### Database Schema
          {{{{ schema }}}}
          ### Answer
          ```sql
        cases:
          - {{id: q1, question: which shops?, gold: {NAMES}}}
        """)
    _, report = run(shop)
    (case,) = report["cases"]
    assert server.requests[0].messages[-1]["content"].endswith("```sql")
    assert (case["outcome"], case["predicted"], case["extraction"]) == ("passed", NAMES, {"mode": "auto", "step": "fenced"})


# --------------------------------------------------------------------------- a key no request can carry
@pytest.mark.parametrize("key", ["sk-test-key\u2026", "sk-test-key\r", "sk-\u200btest-key"],
                         ids=["ellipsis", "carriage-return", "zero-width-space"])
def test_an_api_key_an_http_header_cannot_carry_stops_the_session_once(shop, chat, monkeypatch, key):
    """A key pasted with a typographic `…`, a Windows line end from a .env file or a zero-width space: no request
    can be sent (HTTP headers are ASCII). That is a key problem, as a 401 is: the session stops once with a message
    that names the variable and the fix, not a miss per case blaming the endpoint ("the endpoint's answer is not
    valid JSON", "cannot reach"); and the key's text is printed nowhere."""
    server = chat(api_key="sk-test-key")
    monkeypatch.setenv("OPENAI_API_KEY", key)
    shop.makefile(".sqleval.yaml", s="database: shop.sqlite\nmodel: test-model\ncases:\n" + "".join(
        f"  - {{id: c{n}, question: which shops {n}?, gold: {NAMES}}}\n" for n in range(12)))
    result, _ = run(shop)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out
    assert out.count("Interrupted: sqleval: the model cannot be used, stopping the session: the API key in "
                     "OPENAI_API_KEY holds a character an HTTP header cannot carry") == 1, out
    assert server.count == 0
    assert "not valid JSON" not in out and "cannot reach" not in out
    assert "test-key" not in out + result.stderr.str()


# --------------------------------------------------------------------------- prose after an unfenced query
@pytest.mark.parametrize("answer", [
    "SELECT name FROM shops\n\n**Explanation:** it lists the names",
    "SELECT name FROM shops\n\n- lists the names\n- no filter",
    "SELECT name FROM shops\n\n* lists the names",
    "SELECT name FROM shops\n\n- `name`: the names\n- `shops`: the table",
    "SELECT name FROM shops\n\n### Explanation\nIt lists the names.",
    "SELECT name FROM shops\n\n> Note: names only",
    "SELECT name FROM shops\n\n| name |\n|---|\n| A |",
    "SQL: SELECT name FROM shops; This query returns the names.",
    "SELECT name FROM shops; 名前の一覧です",
])
def test_markdown_or_a_sentence_after_an_unfenced_query_is_not_part_of_it(answer):
    """A chat model's unfenced query followed by Markdown (a bold label, bullets, a heading, a quote, a table) after
    a blank line, or by a sentence after the `;` on the same line: the query alone is scored. Before, a paragraph
    opening with `**`, `-`, `*`, `#`, `>` or `|` was read as the query's continuation, and a sentence after `;` on
    its line was kept: a syntax or several-statements miss for a right query."""
    from pytest_sqleval.model.extract import extract_sql

    got = extract_sql(answer)
    assert got.sql in (NAMES, NAMES + ";") and got.error_kind is None, got


@pytest.mark.parametrize("text", [
    "SELECT name FROM shops; -- returns names",  # a comment after `;`: kept, as before
    "SELECT name FROM shops; SELECT id FROM shops",  # two statements: the guard's to refuse, as before
    "SELECT 1;;",  # a stray `;`: the guard's, as before
    "SELECT x -- note; see below\nFROM shops",  # a `;` inside a comment does not end the statement
    "SELECT name\n\n-- the shops\nFROM shops",  # a comment paragraph inside the query
    "SELECT 'a;b' AS s\nFROM shops",
])
def test_what_follows_a_semicolon_or_a_blank_line_inside_sql_is_kept(text):
    from pytest_sqleval.model.extract import extract_sql

    assert extract_sql(text).sql == text


def test_an_unfenced_answer_with_an_explanation_passes_through_the_model_loop(shop, chat):
    chat({"which": ["SELECT name FROM shops\n\n**Explanation:**\n- selects `name`\n- from `shops`"]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        cases:
          - {{id: q1, question: which shops?, gold: {NAMES}}}
        """)
    _, report = run(shop)
    (case,) = report["cases"]
    assert (case["outcome"], case["predicted"], case["error"]) == ("passed", NAMES, None)
