"""QA look (model9) at issue 9, the model in the loop: a template's `{{ evidence }}` for a case without evidence,
cache keys of equal numbers written two ways (`temperature: 0` and `0.0`), and an answer with `content: null` cut
at the token limit. Run as a user runs them: `pytest --sqleval` through pytester against the loopback chat server
(tests/chat_server.py)."""

from __future__ import annotations

import json

from chat_server import Malformed, chat_fixture
from conftest import require_module
from model_support import by_id, run, shop_fixture

openai = require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
# one SDK client built at collection (see test_model_gate_new_inputs.py: pytester's in-process runs forget modules
# first imported inside them)
openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused").chat.completions

NAMES = "SELECT name FROM shops ORDER BY id"

shop = shop_fixture()
chat = chat_fixture()


# --------------------------------------------------------------------------- {{ evidence }} without evidence
def test_evidence_placeholder_of_a_case_without_evidence_renders_empty(shop, chat):
    """was: `External knowledge: None` reached the model for a case with no `evidence:`."""
    server = chat({"which": [NAMES]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        prompt: "Knowledge: [{{{{ evidence }}}}]\\nQuestion: {{{{ question }}}}"
        cases:
          - {{id: plain, question: which shops?, gold: {NAMES}}}
          - {{id: known, question: which shops known?, evidence: shops are stores, gold: {NAMES}}}
        """)
    result, report = run(shop)
    cases = by_id(report)
    assert [cases[n]["outcome"] for n in ("plain", "known")] == ["passed", "passed"], result.stdout.str()
    prompts = sorted(r.messages[-1]["content"] for r in server.requests)
    assert prompts == ["Knowledge: []\nQuestion: which shops?",
                       "Knowledge: [shops are stores]\nQuestion: which shops known?"]


# --------------------------------------------------------------------------- equal numbers, one cache key
def test_temperature_0_and_0_0_share_one_cache_key(shop, chat):
    server = chat({"which": [NAMES]})
    suite = """
        database: shop.sqlite
        model: {{name: test-model, temperature: {t}, params: {{top_p: {p}}}}}
        cases:
          - {{id: q, question: which shops?, gold: {names}}}
        """
    shop.makefile(".sqleval.yaml", s=suite.format(t="0", p="1", names=NAMES))
    result, report = run(shop)
    assert by_id(report)["q"]["outcome"] == "passed", result.stdout.str()
    assert server.count == 1
    server.reset()
    shop.makefile(".sqleval.yaml", s=suite.format(t="0.0", p="1.0", names=NAMES))
    result, report = run(shop, "--sqleval-cache-mode=only")
    assert (by_id(report)["q"]["outcome"], by_id(report)["q"]["cached"]) == ("passed", True), result.stdout.str()
    assert server.count == 0


def test_cache_key_normalises_equal_numbers_but_keeps_other_keys():
    from pytest_sqleval.model.cache import cache_key

    messages = [{"role": "user", "content": "q"}]
    key = cache_key("http://x/v1", "m", messages, {"temperature": 0, "top_p": 1, "seed": 7})
    assert key == cache_key("http://x/v1", "m", messages, {"temperature": 0.0, "top_p": 1.0, "seed": 7.0})
    # a value that is not a whole number keeps its key; booleans are not numbers here
    assert cache_key("http://x/v1", "m", messages, {"temperature": 0.5}) != cache_key(
        "http://x/v1", "m", messages, {"temperature": 0})
    assert cache_key("http://x/v1", "m", messages, {"logprobs": True}) != cache_key(
        "http://x/v1", "m", messages, {"logprobs": 1})
    # keys written before the change, in the form `model:` always gave them (temperature a float, max_tokens and
    # seed whole numbers), are unchanged: a committed cache still replays
    import hashlib

    parameters = {"temperature": 0.0, "max_tokens": 512, "seed": 7, "top_p": 0.5, "stop": ["x"]}
    canonical = json.dumps({"endpoint": "http://x/v1", "model": "m", "messages": messages, "parameters": parameters},
                           sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert cache_key("http://x/v1", "m", messages, parameters) == hashlib.sha256(canonical.encode()).hexdigest()


# --------------------------------------------------------------------------- content null, cut at the token limit
def cut_off_message(shop, chat, message: dict, max_tokens: int, usage: dict | None = None) -> str:
    """Run one case whose answer is ``message`` with finish_reason "length" under ``max_tokens``: its model_error."""
    body = {"id": "c", "object": "chat.completion", "created": 1, "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", **message}}]}
    if usage is not None:
        body["usage"] = usage
    chat({"which": [Malformed(json.dumps(body))]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: {{name: test-model, max_tokens: {max_tokens}}}
        cases:
          - {{id: q, question: which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop)
    case = by_id(report)["q"]
    assert case["error"]["kind"] == "model_error", case
    return case["error"]["message"]


def test_content_null_cut_at_the_token_limit_names_max_tokens(shop, chat):
    message = cut_off_message(shop, chat, {"content": None, "reasoning_content": "Let me think about the shops"}, 64,
                              usage={"prompt_tokens": 10, "completion_tokens": 64, "total_tokens": 74})
    assert "cut off" in message and "max_tokens" in message and "64" in message, message



# --------------------------------------------------------------------------- thinking whose <think> was in the prompt
def test_thinking_closed_without_its_opening_tag_is_skipped():
    """DeepSeek-R1's chat template ends the prompt with `<think>`: a server without a reasoning parser returns the
    drafts, then `</think>`, then the answer (was: the draft `SELECT a FROM t` was taken)."""
    from pytest_sqleval.model.extract import extract_sql

    got = extract_sql("Let me draft:\nSELECT a FROM t\nHmm, wrong table.\n</think>\n\nSELECT b FROM t", "auto")
    assert (got.sql, got.error_kind) == ("SELECT b FROM t", None), got
    got = extract_sql("Let me draft:\nSELECT a FROM t\n</think>\n", "auto")  # thinking, then no answer
    assert (got.sql, got.error_kind) == (None, "no_sql"), got
    # after a fence too; and a query whose string literal holds the tag stays the query
    got = extract_sql("Draft: SELECT a FROM t is wrong.</think>\n\n```sql\nSELECT b FROM t\n```", "auto")
    assert got.sql == "SELECT b FROM t", got
    assert extract_sql("SELECT 'a</think>\nb' FROM t", "auto").sql == "SELECT 'a</think>\nb' FROM t"


def test_thinking_closed_without_its_opening_tag_through_the_model_loop(shop, chat):
    chat({"which": [f"The user wants names. A draft:\nSELECT id FROM shops\nNo, names.\n</think>\n\n{NAMES}"]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        cases:
          - {{id: q, question: which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop)
    case = by_id(report)["q"]
    assert case["outcome"] == "passed", (case, result.stdout.str())


# --------------------------------------------------------------------------- a 200 body that is not JSON
def test_a_body_that_is_not_json_shows_what_was_received(shop, chat):
    """A proxy's login page sent with status 200: the miss says what came back (was: only the JSON parser's
    `Expecting value: line 1 column 1 (char 0)`)."""
    page = "<html><head><title>Sign in to Acme Proxy</title></head><body>Please log in</body></html>"
    chat({"which": [Malformed(page)], "plain": [Malformed("upstream connect error or disconnect/reset")]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: {{name: test-model, retries: 0}}
        cases:
          - {{id: page, question: which shops?, gold: {NAMES}}}
          - {{id: plain, question: plain shops?, gold: {NAMES}}}
        """)
    result, report = run(shop)
    cases = by_id(report)
    assert [cases[n]["error"]["kind"] for n in ("page", "plain")] == ["model_error"] * 2
    assert "not valid JSON" in cases["page"]["error"]["message"]
    assert "the answer: Sign in to Acme Proxy" in cases["page"]["error"]["message"], cases["page"]
    assert "the answer: upstream connect error or disconnect/reset" in cases["plain"]["error"]["message"]


def test_thinking_parts_only_cut_at_the_token_limit_names_max_tokens(shop, chat):
    """Content as a list of parts holding only a thinking part (Mistral's reasoning models), cut at the limit: the
    miss says the answer was cut off and names `max_tokens` (was: only "no text part")."""
    message = cut_off_message(shop, chat, {"content": [
        {"type": "thinking", "thinking": [{"type": "text", "text": "Hmm"}]}]}, 32)
    assert "cut off" in message and "max_tokens 32" in message and "raise `max_tokens`" in message, message
