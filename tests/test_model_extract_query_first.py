"""An answer with several fenced blocks of SQL: the query is scored, not a statement the model suggests after it
(`CREATE INDEX ...` to make it faster, a `DROP TABLE` to clean up). Run as a user runs it, against a real
chat-completions server on 127.0.0.1 (tests/chat_server.py), and on the extraction function itself."""

from __future__ import annotations

import json

import pytest

from chat_server import Malformed, chat_fixture
from conftest import require_module
from model_support import by_id, run, shop_fixture

openai = require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused").chat.completions

NAMES = "SELECT name FROM shops"

shop = shop_fixture()
chat = chat_fixture()

QUERY_THEN_INDEX = f"""Here is the query:
```sql
{NAMES}
```
To make it faster, add an index:
```sql
CREATE INDEX shops_name ON shops(name);
```
"""


def completion(text: str) -> Malformed:
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}
    return Malformed(json.dumps(body))


@pytest.mark.parametrize("after", ["CREATE INDEX i ON t(x);", "DROP TABLE t;", "UPDATE t SET x = 1",
                                   "INSERT INTO t VALUES (1)", "PRAGMA table_info(t)", "EXPLAIN SELECT x FROM t"])
@pytest.mark.parametrize("mode", ["auto", "fenced"])
def test_a_query_before_a_block_of_another_statement_is_the_one_extracted(after, mode):
    from pytest_sqleval.model.extract import extract_sql

    answer = f"```sql\nSELECT x FROM t WHERE x > 1\n```\nThen:\n```sql\n{after}\n```\n"
    got = extract_sql(answer, mode)
    assert (got.sql, got.step) == ("SELECT x FROM t WHERE x > 1", "fenced")


def test_of_several_queries_the_last_is_still_taken():
    """A model that corrects itself: the last query wins, as before, even with a DDL block between them."""
    from pytest_sqleval.model.extract import extract_sql

    answer = ("```sql\nSELECT x FROM t\n```\n```sql\nCREATE INDEX i ON t(x)\n```\nActually:\n"
              "```sql\nSELECT DISTINCT x FROM t\n```")
    assert extract_sql(answer).sql == "SELECT DISTINCT x FROM t"


def test_an_answer_of_only_another_statement_is_still_scored_as_it_came():
    """No query among the blocks: the last statement is what the model answered (then refused as a write),
    not a miss that hides what the model said."""
    from pytest_sqleval.model.extract import extract_sql

    answer = "```sql\nCREATE TABLE a(x int)\n```\n```sql\nDROP TABLE a\n```"
    assert extract_sql(answer).sql == "DROP TABLE a"


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_suggested_index_after_the_query_does_not_make_the_case_a_refused_write(shop, chat, workers):
    chat({"INDEX": [completion(QUERY_THEN_INDEX)]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: {{name: test-model}}
        cases:
          - {{id: index, question: INDEX which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop, *workers)
    case = by_id(report)["index"]
    assert (case["outcome"], case["predicted"]) == ("passed", NAMES), case
    assert result.ret == 0
