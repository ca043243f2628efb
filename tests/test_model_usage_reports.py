"""Issue 9's model usage (calls, cache hits, tokens, latency, cost) is in the terminal summary and the JSON; the
Markdown step summary and the HTML report, which CI shows where the terminal is not read, carry the same line per
suite. Run as a user runs it, against a real chat-completions server on 127.0.0.1 (tests/chat_server.py)."""

from __future__ import annotations

import json

import pytest

from chat_server import Malformed, chat_fixture
from conftest import require_module
from model_support import run, shop_fixture

openai = require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused").chat.completions

NAMES = "SELECT name FROM shops"

shop = shop_fixture()
chat = chat_fixture()


def completion(text: str, prompt: int, answer: int) -> Malformed:
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": answer, "total_tokens": prompt + answer}}
    return Malformed(json.dumps(body))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_markdown_and_html_reports_show_the_model_usage_of_each_suite(shop, chat, workers):
    chat({"ONE": [completion(NAMES, 1000, 100)], "TWO": [completion(NAMES, 500, 50)]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: {{name: test-model, price_per_1k_input: 2.0, price_per_1k_output: 10.0}}
        cases:
          - {{id: one, question: ONE which shops?, gold: {NAMES}}}
          - {{id: two, question: TWO which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop, *workers, "--sqleval-markdown=summary.md", "--sqleval-html=report.html")
    block = report["suites"][0]["model"]
    # 1500 prompt tokens at $2 per 1k, 150 completion tokens at $10 per 1k: 3.0 + 1.5
    assert (block["calls"], block["tokens"], block["cost"]) == (2, {"prompt": 1500, "completion": 150}, 4.5)
    markdown = (shop.path / "summary.md").read_text(encoding="utf-8")
    usage = [line for line in markdown.splitlines() if line.startswith("Model usage: ")]
    assert len(usage) == 1, markdown
    assert "model test-model: 2 calls, 0 cache hits, 0 errors" in usage[0]
    assert "tokens 1500 prompt + 150 completion" in usage[0] and "cost $4.5000" in usage[0]
    page = (shop.path / "report.html").read_text(encoding="utf-8")
    assert page.count('class="model-usage"') == 1
    assert "model test-model: 2 calls, 0 cache hits, 0 errors | tokens 1500 prompt + 150 completion" in page
    assert "cost $4.5000" in page


def test_a_suite_without_a_model_has_no_usage_line():
    from pytest_sqleval.report.html import render_html
    from pytest_sqleval.report.markdown import render_markdown

    report = {"format": "sqleval-report/1", "suites": [{"name": "s", "path": "s.sqleval.yaml", "cases": 0,
                                                        "metrics": {}, "outcomes": {}}], "cases": []}
    assert "Model usage" not in render_markdown(report)
    assert 'class="model-usage"' not in render_html(report)


def test_a_model_block_of_another_shape_is_left_out_not_a_crash():
    """A report read back from disk (`sqleval report`) may come from an older or another writer."""
    from pytest_sqleval.report.markdown import render_markdown

    report = {"format": "sqleval-report/1", "suites": [{"name": "s", "path": "s.sqleval.yaml", "cases": 0,
                                                        "metrics": {}, "outcomes": {}, "model": {"calls": 3}}],
              "cases": []}
    assert "Model usage" not in render_markdown(report)
