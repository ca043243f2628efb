"""A fourth independent look at issue 9 (the model in the loop), with inputs nobody tuned for: an API-key variable
named in the ini and overridden on the command line or in the suite, prompt templates whose text sits outside
their `system`/`user` blocks, user predictors whose exceptions cannot be printed or whose answers cannot be
serialised, the response cache's key (prompt, model, parameters, endpoint), and the usage totals of a user's
predictor serial vs -n 2. Run as a user runs them: `pytest --sqleval` through pytester, against a real
chat-completions server on 127.0.0.1 (tests/chat_server.py)."""

from __future__ import annotations

import json
import time

import pytest

from chat_server import ChatServer, Malformed, Status, chat_fixture
from conftest import require_module
from model_support import by_id, run, shop_fixture

openai = require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
# Build one SDK client at collection (see test_model_gate_new_inputs.py: pytester's in-process runs forget modules
# first imported inside them, and the SDK would no longer recognise its own connection errors).
openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused").chat.completions

NAMES = "SELECT name FROM shops"

shop = shop_fixture()


class CodedChatServer(ChatServer):
    """tests/chat_server.py's server; a scripted error whose message is `<code>|<text>` is sent with that OpenAI
    error `code` (e.g. `insufficient_quota`)."""

    def _handler(self):
        base = super()._handler()

        class Handler(base):
            def _error(self, code, message, kind, headers=None):
                if "|" in message:
                    kind, _, message = message.partition("|")
                super()._error(code, message, kind, headers)

        return Handler


chat = chat_fixture({}, CodedChatServer)


def model_suite(ids, model: str = "{name: test-model, retries: 0}", extra: str = "", name: str = "s") -> str:
    cases = "".join(f"  - {{id: {k}, question: '{k.upper()} which shops?', gold: {NAMES}}}\n" for k in ids)
    return f"suite: {name}\ndatabase: shop.sqlite\nmodel: {model}\n{extra}cases:\n{cases}"


# --------------------------------------------------------------------------- the key's variable: ini vs command line
def test_an_ini_key_env_that_is_unset_does_not_stop_a_run_whose_command_line_or_suite_names_another(
        shop, chat, monkeypatch):
    """ini `sqleval_model_key_env = TEAM_KEY` (unset on this machine); `--sqleval-model-key-env MY_KEY` wins over
    it, and so does the suite's `key_env:`: the run goes on with MY_KEY. With nothing overriding it, the unset
    variable stops the session once, naming it, instead of a miss per case."""
    server = chat(default=NAMES, api_key="secret-4")
    monkeypatch.delenv("SQLEVAL_TEAM_KEY_4", raising=False)
    monkeypatch.setenv("SQLEVAL_MY_KEY_4", "secret-4")
    shop.makeini("[pytest]\nsqleval_model_key_env = SQLEVAL_TEAM_KEY_4\n")
    shop.makefile(".sqleval.yaml", s=model_suite(["a", "b"]))
    result, report = run(shop, "--sqleval-model-key-env=SQLEVAL_MY_KEY_4")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert [c["outcome"] for c in report["cases"]] == ["passed", "passed"]
    assert {r.authorization for r in server.requests} == {"Bearer secret-4"}
    # the suite's key_env sits above the ini too
    shop.makefile(".sqleval.yaml", s=model_suite(["c"], model="{name: test-model, retries: 0, key_env: SQLEVAL_MY_KEY_4}"))
    result, report = run(shop)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert by_id(report)["c"]["outcome"] == "passed"
    # nothing overrides it: one clear stop naming the variable
    server.reset()
    shop.makefile(".sqleval.yaml", s=model_suite(["d", "e", "f"]))
    result, report = run(shop)
    assert result.ret != 0
    assert "SQLEVAL_TEAM_KEY_4" in result.stdout.str() + result.stderr.str()
    assert server.count == 0


# --------------------------------------------------------------------------- prompt templates
@pytest.mark.parametrize("template, words", [
    ("Answer with SQLite SQL only.\n{% block user %}{{ question }}{% endblock %}\n", "Answer with SQLite SQL only."),
    ("{% block system %}Be brief.{% endblock %}\nSchema: {{ schema }}\n{% block user %}{{ question }}{% endblock %}",
     "Schema:"),
    ("{% block system %}You write {{ dialect }} SQL.{% endblock %}\nQuestion: {{ question }}\n", "Question:"),
], ids=["text-before-user-block", "text-between-blocks", "system-block-only"])
def test_template_text_outside_its_blocks_is_an_error_not_silently_left_out_of_the_prompt(shop, chat, template, words):
    """A template with `system`/`user` blocks sends only those blocks: text written outside them would never reach
    the model, and a template with a system block but no user block would send no question at all. Both are
    clear errors naming the file and what to move, found before any call."""
    server = chat(default=NAMES)
    (shop.path / "p.j2").write_text(template, encoding="utf-8")
    shop.makefile(".sqleval.yaml", s=model_suite(["a"]))
    result, _ = run(shop, "--sqleval-prompt=p.j2")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert "p.j2" in output and "outside" in output and words.split()[0] in output, output
    assert server.count == 0
    # the same template in the suite's `prompt:` is a suite error, found at collection
    indented = "".join(f"    {line}\n" for line in template.splitlines())
    shop.makefile(".sqleval.yaml", s=model_suite(["a"], extra=f"prompt: |\n{indented}"))
    result, report = run(shop)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and "outside" in output, output
    assert server.count == 0


def test_a_template_with_blocks_whitespace_and_set_outside_them_still_works(shop, chat):
    """What may sit outside the blocks: blank lines, comments and macros (used inside a block)."""
    server = chat(default=NAMES)
    (shop.path / "p.j2").write_text(
        "{# team prompt #}\n\n{% macro fence(t) %}```{{ t }}```{% endmacro %}\n"
        "{% block system %}Write {{ dialect }}.{% endblock %}\n\n"
        "{% block user %}{{ schema }}\nQuestion: {{ question }} {{ fence('sql') }}{% endblock %}\n", encoding="utf-8")
    shop.makefile(".sqleval.yaml", s=model_suite(["a"]))
    result, report = run(shop, "--sqleval-prompt=p.j2")
    assert result.ret == 0, result.stdout.str()
    (request,) = server.requests
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert request.messages[1]["content"].endswith("Question: A which shops? ```sql```")


# --------------------------------------------------------------------------- the user's predictor, misbehaving
ODD_PREDICTOR = f"""
class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("cannot print me")


def deep():
    value = []
    for _ in range(200000):
        value = [value]
    return value


def predict(case):
    if case.id == "unprintable":
        raise Unprintable()
    if case.id == "deep":
        return {{"sql": {NAMES!r}, "trace": deep()}}
    return {NAMES!r}
"""


def test_a_predictor_whose_exception_cannot_be_printed_or_whose_extras_cannot_be_saved(shop):
    """An exception whose str() raises is still this case's model_error naming its type, at once (not a
    'timed out after 60 s' after the thread died); an extra value too deep to serialise is kept as text and the
    case is scored."""
    (shop.path / "oddpred4.py").write_text(ODD_PREDICTOR)
    shop.makefile(".sqleval.yaml", s="database: shop.sqlite\ncases:\n" + "".join(
        f"  - {{id: {k}, question: q, gold: {NAMES}}}\n" for k in ("unprintable", "deep", "ok")))
    started = time.monotonic()
    result, report = run(shop, "--sqleval-predictor=oddpred4:predict")
    assert time.monotonic() - started < 30
    cases = by_id(report)
    assert cases["ok"]["outcome"] == "passed"
    assert cases["unprintable"]["error"]["kind"] == "model_error"
    assert cases["unprintable"]["error"]["message"].startswith("the predictor raised Unprintable"), cases["unprintable"]
    assert cases["deep"]["outcome"] == "passed", cases["deep"]
    assert isinstance(cases["deep"]["prediction_extra"]["trace"], str)


# --------------------------------------------------------------------------- the cache's key
def test_the_cache_key_follows_the_prompt_the_model_the_parameters_and_the_endpoint(shop, chat, monkeypatch):
    """A second identical run makes no request; changing the prompt, the model, a parameter (temperature, an
    extra request parameter) or the endpoint each asks again, once; going back to the first settings is a hit."""
    server = chat(default=NAMES, models=("test-model", "other-model"))
    shop.makefile(".sqleval.yaml", s=model_suite(["a"]))

    def requests(*args: str) -> int:
        before = server.count
        result, report = run(shop, *args)
        assert by_id(report)["a"]["outcome"] == "passed", result.stdout.str()
        return server.count - before

    assert requests() == 1
    assert requests() == 0
    (shop.path / "p.j2").write_text("{{ schema }}\nQuestion: {{ question }}\n", encoding="utf-8")
    assert requests("--sqleval-prompt=p.j2") == 1
    assert requests("--sqleval-prompt=p.j2") == 0
    assert requests("--sqleval-model=other-model") == 1
    shop.makefile(".sqleval.yaml", s=model_suite(["a"], model="{name: test-model, retries: 0, temperature: 0.5}"))
    assert requests() == 1
    shop.makefile(".sqleval.yaml", s=model_suite(["a"], model="{name: test-model, retries: 0, params: {top_k: 5}}"))
    assert requests() == 1
    assert server.requests[-1].body.get("top_k") == 5
    second = chat(default=NAMES)  # the same model at another address (OPENAI_BASE_URL now points at it)
    shop.makefile(".sqleval.yaml", s=model_suite(["a"]))
    result, report = run(shop)
    assert by_id(report)["a"]["outcome"] == "passed" and second.count == 1
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    assert requests() == 0


# --------------------------------------------------------------------------- usage of a user's predictor, -n 2
COUNTING_PREDICTOR = f"""
def predict(case):
    n = int(case.id[1:])
    return {{"sql": {NAMES!r}, "tokens": {{"prompt": 100 + n, "completion": 7 * n}}, "latency_s": n / 10,
             "cached": n % 4 == 0}}
"""


def test_a_predictors_tokens_cost_and_cache_hits_sum_identically_serial_and_xdist(shop):
    """Eight cases from a user's predictor that reports tokens, latencies and its own cache hits: calls, cache
    hits, tokens, cost and the latency percentiles are the same serially and with -n 2, and are what the
    predictor returned (cached answers spend nothing)."""
    (shop.path / "countpred4.py").write_text(COUNTING_PREDICTOR)
    ids = [f"c{n}" for n in range(1, 9)]
    shop.makefile(".sqleval.yaml", s="suite: s\ndatabase: shop.sqlite\ncases:\n" + "".join(
        f"  - {{id: {k}, question: q{k}, gold: {NAMES}}}\n" for k in ids))
    blocks = []
    for workers in ([], ["-n", "2"]):
        result, report = run(shop, "--sqleval-predictor=countpred4:predict", "--sqleval-price-per-1k-input=2",
                              "--sqleval-price-per-1k-output=10", *workers)
        assert result.ret == 0, result.stdout.str()
        (suite,) = report["suites"]
        blocks.append(suite["model"])
    assert blocks[0] == blocks[1], blocks
    block = blocks[0]
    called = [n for n in range(1, 9) if n % 4]
    assert block["calls"] == 6 and block["cache_hits"] == 2 and block["errors"] == 0
    assert block["tokens"] == {"prompt": sum(100 + n for n in called), "completion": sum(7 * n for n in called)}
    expected = sum((100 + n) * 2 + 7 * n * 10 for n in called) / 1000
    assert block["cost"] == pytest.approx(expected)
    assert block["latency_s"] == {"p50": 0.3, "p95": 0.7}
    assert json.loads(json.dumps(block)) == block


# --------------------------------------------------------------------------- saving what a predictor wanted kept
KEEPING_PREDICTOR = f"""
def predict(case):
    return {{"sql": {NAMES!r}, "confidence": 0.75, "trace": ["plan", "write"], "tokens": {{"prompt": 3, "completion": 4}}}}
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_what_a_predictor_asked_to_keep_is_saved_and_comes_back_when_rescored(shop, workers):
    """A predictor's mapping may hold anything to keep beside `sql` (here `confidence`, `trace`): the report keeps
    it as `prediction_extra`, --sqleval-save-predictions writes it, and rescoring the saved file without the
    predictor shows the same keys again."""
    (shop.path / "keeppred4.py").write_text(KEEPING_PREDICTOR)
    shop.makefile(".sqleval.yaml", s="suite: s\ndatabase: shop.sqlite\ncases:\n" + "".join(
        f"  - {{id: {k}, question: q{k}, gold: {NAMES}}}\n" for k in ("a", "b")))
    result, first = run(shop, "--sqleval-predictor=keeppred4:predict", "--sqleval-save-predictions=saved.jsonl",
                        *workers)
    assert result.ret == 0, result.stdout.str()
    assert by_id(first)["a"]["prediction_extra"] == {"confidence": 0.75, "trace": ["plan", "write"]}
    lines = [json.loads(line) for line in (shop.path / "saved.jsonl").read_text().splitlines()]
    assert [(line["id"], line["confidence"], line["trace"]) for line in lines] == [
        ("a", 0.75, ["plan", "write"]), ("b", 0.75, ["plan", "write"])]
    result, again = run(shop, "--sqleval-predictions=saved.jsonl", *workers)
    assert result.ret == 0, result.stdout.str()
    for case in again["cases"]:
        assert case["outcome"] == "passed"
        assert case["prediction_extra"]["confidence"] == 0.75 and case["prediction_extra"]["trace"] == ["plan", "write"]


# --------------------------------------------------------------------------- content as a list of parts
def parts_completion(parts) -> str:
    return json.dumps({"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "test-model",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": parts}}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}})


def test_an_answer_whose_content_is_a_list_of_parts_is_read_from_its_text_parts(shop, chat):
    """Some OpenAI-compatible servers (Mistral's reasoning models, gateways) send `content` as a list of parts: the
    text parts are the answer (a thinking part is not), scored and cached like a plain string; a list with no text
    part is a model_error saying so."""
    server = chat({
        "PARTS": [Malformed(parts_completion([
            {"type": "thinking", "thinking": [{"type": "text", "text": "```sql\nSELECT id FROM shops\n```"}]},
            {"type": "text", "text": "```sql\n" + NAMES + "\n```"}]))],
        "SPLIT": [Malformed(parts_completion([{"type": "text", "text": "SELECT name "},
                                              {"type": "text", "text": "FROM shops"}]))],
        "NOTEXT": [Malformed(parts_completion([{"type": "image_url", "image_url": {"url": "data:,"}}]))],
    })
    shop.makefile(".sqleval.yaml", s=model_suite(["parts", "split", "notext"]))
    result, report = run(shop)
    cases = by_id(report)
    assert cases["parts"]["outcome"] == "passed", cases["parts"]
    assert cases["parts"]["raw_output"] == "```sql\n" + NAMES + "\n```"
    assert cases["split"]["outcome"] == "passed", cases["split"]
    assert cases["notext"]["error"]["kind"] == "model_error"
    assert "no text part" in cases["notext"]["error"]["message"], cases["notext"]
    server.reset()
    _, report = run(shop)
    assert server.count == 1  # the two answers are cached; the error is not
    assert by_id(report)["parts"]["cached"] is True


# --------------------------------------------------------------------------- a conftest predictor: slow, or not callable
SLOW_CONFTEST = f"""
import time

import pytest


@pytest.fixture(scope="session")
def sqleval_predictor():
    def predict(case):
        if case.id == "slow":
            time.sleep(30)
        return {NAMES!r}
    return predict
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_slow_conftest_predictor_is_held_to_the_model_timeout_and_the_others_run(shop, workers):
    """`--sqleval-model-timeout 1`: the case whose predictor sleeps 30 s is a model_error naming the timeout after
    about a second (its call abandoned, the run not held until it returns); the other cases pass."""
    shop.makeconftest(SLOW_CONFTEST)
    shop.makefile(".sqleval.yaml", s="suite: s\ndatabase: shop.sqlite\ncases:\n" + "".join(
        f"  - {{id: {k}, question: q{k}, gold: {NAMES}}}\n" for k in ("slow", "a", "b")))
    started = time.monotonic()
    result, report = run(shop, "--sqleval-model-timeout=1", *workers)
    assert time.monotonic() - started < 20, result.stdout.str()
    cases = by_id(report)
    assert cases["a"]["outcome"] == cases["b"]["outcome"] == "passed"
    assert cases["slow"]["error"]["kind"] == "model_error"
    assert cases["slow"]["error"]["message"].startswith("the predictor timed out after 1.0 s"), cases["slow"]
    assert report["suites"][0]["model"]["errors"] == 1


def test_a_conftest_predictor_fixture_that_is_not_callable_stops_the_session_once(shop):
    """A `sqleval_predictor` fixture that returns the SQL text instead of a function is one clear error naming the
    fixture and the fix, not a 'str object is not callable' miss per case."""
    shop.makeconftest(f"""
import pytest


@pytest.fixture(scope="session")
def sqleval_predictor():
    return {NAMES!r}
""")
    shop.makefile(".sqleval.yaml", s="suite: s\ndatabase: shop.sqlite\ncases:\n" + "".join(
        f"  - {{id: c{n}, question: q{n}, gold: {NAMES}}}\n" for n in range(6)))
    result, report = run(shop)
    output = result.stdout.str()
    assert result.ret != 0
    assert "sqleval_predictor fixture returned str, not a callable" in output, output
    assert output.count("not a callable") <= 2, output  # the stop line and the summary, not one per case


# --------------------------------------------------------------------------- a label in Markdown bold
@pytest.mark.parametrize("answer", ["**SQL:** SELECT name FROM shops", "**SQL**: SELECT name FROM shops",
                                    "__Answer:__ SELECT name FROM shops",
                                    "Sure.\n**Final answer:** SELECT name FROM shops"])
def test_a_sql_label_in_markdown_bold_is_removed_like_a_plain_one(answer):
    """`extract: auto` removes a leading `SQL:` label; chat models often write it in bold, which is the same label."""
    from pytest_sqleval.model.extract import extract_sql

    extraction = extract_sql(answer, "auto")
    assert extraction.sql == NAMES and extraction.error_kind is None, extraction


# --------------------------------------------------------------------------- an account without quota
@pytest.mark.parametrize("step", [Status(429, "insufficient_quota|You exceeded your current quota."),
                                  Status(402, "Payment required: no credit left")], ids=["quota-429", "payment-402"])
def test_an_account_without_quota_stops_the_session_once_instead_of_a_miss_per_case(shop, chat, step):
    """OpenAI answers 429 `insufficient_quota` (other hosts 402) when the account has no credit: every call would
    fail alike, so, like an auth error, it stops the session once with the server's message and the fix, after
    a handful of requests, not one (plus retries) per case. A plain 429 (rate limit) stays a per-case miss."""
    server = chat({"Q": [step]})
    ids = [f"q{n}" for n in range(10)]
    shop.makefile(".sqleval.yaml", s=model_suite(ids))
    result, report = run(shop, "--sqleval-model-concurrency=1")
    output = result.stdout.str()
    assert result.ret != 0
    assert "the account has no quota or credit left" in output and step.message.split("|")[-1] in output, output
    assert server.count <= 3, server.count
    # a rate limit is not a quota: per case
    server = chat({"Q": [Status(429, "rate_limit_exceeded|Rate limit reached")]})
    shop.makefile(".sqleval.yaml", s=model_suite(ids[:3]))
    result, report = run(shop, "--sqleval-model-concurrency=1")
    assert [c["error"]["kind"] for c in report["cases"]] == ["model_error"] * 3
    assert server.count == 3


# --------------------------------------------------------------------------- two workers writing one key
def test_two_workers_writing_the_same_answers_leave_one_whole_file_per_key_and_only_replays_them(shop, chat):
    """Two suites ask the same questions of the same model (the same cache keys) under -n 2 (`--dist load`, so
    both workers write them, at once): each key is one whole file, no temporary file is left behind, and a run
    with `--sqleval-cache-mode only` replays all of them without a request."""
    server = chat(default=NAMES)
    ids = [f"k{n}" for n in range(8)]
    for name in ("one", "two"):
        shop.makefile(".sqleval.yaml", **{name: model_suite(ids, name=name)})
    result, report = run(shop, "-n", "2", "--dist", "load")
    assert result.ret == 0, result.stdout.str()
    assert len(report["cases"]) == 16 and all(c["outcome"] == "passed" for c in report["cases"])
    files = sorted((shop.path / ".sqleval_cache").rglob("*"))
    answers = [f for f in files if f.is_file()]
    assert len(answers) == 8 and all(f.suffix == ".json" and not f.name.startswith(".") for f in answers), files
    for path in answers:
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["key"] == path.stem and data["response"]["text"] == NAMES
    server.reset()
    result, report = run(shop, "-n", "2", "--sqleval-cache-mode=only")
    assert result.ret == 0 and server.count == 0
    assert all(c["cached"] is True and c["outcome"] == "passed" for c in report["cases"])
    assert [s["model"]["calls"] for s in report["suites"]] == [0, 0]
    assert [s["model"]["cache_hits"] for s in report["suites"]] == [8, 8]


# --------------------------------------------------------------------------- a template file saved with a BOM
@pytest.mark.parametrize("template", [
    "{{ schema }}\nQuestion: {{ question }}\n",
    "{% block system %}Write {{ dialect }}.{% endblock %}\n{% block user %}{{ schema }}\nQuestion: {{ question }}{% endblock %}\n",
], ids=["no-blocks", "blocks"])
def test_a_template_file_saved_with_a_byte_order_mark_sends_the_same_prompt_as_without(shop, chat, template):
    """An editor that saves UTF-8 with a BOM: the BOM is not part of the prompt (not an invisible first character
    sent to the model, not 'text outside the blocks'), so the answer cached for the same file without it is used."""
    server = chat(default=NAMES)
    shop.makefile(".sqleval.yaml", s=model_suite(["a"]))
    (shop.path / "p.j2").write_text(template, encoding="utf-8")
    result, report = run(shop, "--sqleval-prompt=p.j2")
    assert result.ret == 0 and server.count == 1, result.stdout.str() + result.stderr.str()
    (shop.path / "p.j2").write_text(template, encoding="utf-8-sig")
    result, report = run(shop, "--sqleval-prompt=p.j2")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert by_id(report)["a"]["cached"] is True and server.count == 1
    assert not server.requests[0].messages[0]["content"].startswith("\ufeff")


def test_an_examples_file_saved_with_a_byte_order_mark_is_read(shop, chat):
    """`examples: shots.jsonl` written by an editor that adds a BOM: its first pair is read (not 'not valid JSON' on
    line 1), and the few-shot pairs reach the prompt."""
    server = chat(default=NAMES)
    pairs = [{"question": "How many shops?", "sql": "SELECT count(*) FROM shops"},
             {"question": "Shop ids?", "sql": "SELECT id FROM shops"}]
    (shop.path / "shots.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8-sig")
    shop.makefile(".sqleval.yaml", s=model_suite(["a"], extra="examples: shots.jsonl\n"))
    result, report = run(shop)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert by_id(report)["a"]["outcome"] == "passed"
    (request,) = server.requests
    prompt = request.messages[-1]["content"]
    assert "Question: How many shops?\nSQL: SELECT count(*) FROM shops" in prompt and "\ufeff" not in prompt


# --------------------------------------------------------------------------- a longer fence around ```
@pytest.mark.parametrize("mode", ["auto", "fenced"])
def test_a_four_backtick_fence_holding_a_triple_backtick_literal_is_one_block(mode):
    """CommonMark lets a fence of four backticks hold a line with three (here inside a string literal): the whole
    query is the block, in `fenced` mode too (not a no_sql miss, not the query cut at the inner ```)."""
    from pytest_sqleval.model.extract import extract_sql

    answer = "Here it is:\n````sql\nSELECT name FROM shops WHERE name <> '```'\n````\nDone."
    extraction = extract_sql(answer, mode)
    assert extraction.sql == "SELECT name FROM shops WHERE name <> '```'" and extraction.step == "fenced", extraction
