"""QA of the model loop (issue 9) with answers and runs nobody tuned for: LangChain-style labelled answers
(``SQLQuery: ...`` / ``SQLResult: ...`` / ``Answer: ...``), ``--dist each`` cost accounting, and a loopback
chat-completions server (tests/chat_server.py) answering in ways a real endpoint does."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import pytest

from chat_server import ChatServer, chat_fixture
from conftest import require_module
from model_support import by_id, run, shop_fixture
from pytest_sqleval.model.extract import extract_sql

NAMES = "SELECT name FROM shops"

chat = chat_fixture()
shop = shop_fixture()


# --------------------------------------------------------------------------- labelled answers (LangChain's SQL chains)
@pytest.mark.parametrize("answer, sql", [
    # LangChain's SQLDatabaseChain format, as a model completes it
    (f"SQLQuery: {NAMES}\nSQLResult: [('Alpha',), ('Beta',)]\nAnswer: The shops are Alpha and Beta.", NAMES),
    # the question echoed first (was no_sql: the first line is a label, so the whole answer read as prose)
    (f"Question: Which shops are there?\nSQLQuery: {NAMES}\nSQLResult: \nAnswer: Alpha, Beta", NAMES),
    # the SQL on its own lines after the label, ending with `;`
    ("SQLQuery:\nSELECT name\nFROM shops;\nSQLResult: [('Alpha',)]\nAnswer: Alpha", "SELECT name\nFROM shops;"),
    # the model goes on with the next question's turn: the first SQLQuery is this question's
    (f"SQLQuery: {NAMES}\nSQLResult: [('Alpha',)]\nAnswer: Alpha\nQuestion: How many shops?\n"
     "SQLQuery: SELECT count(*) FROM shops\nSQLResult: [(2,)]\nAnswer: 2", NAMES),
    # the SQL quoted after the label
    (f'SQLQuery: "{NAMES}"\nSQLResult: [(1,)]\nAnswer: one', NAMES),
    # a label line inside a string literal that spans lines is part of the SQL (sqlglot reads it whole)
    ("SQLQuery: SELECT name FROM shops WHERE name = 'a\nAnswer: b'\nSQLResult: []\nAnswer: none",
     "SELECT name FROM shops WHERE name = 'a\nAnswer: b'"),
    # other common labels, when unambiguous
    (f"SQL: {NAMES}\nAnswer: Alpha and Beta", NAMES),
    (f"Query: {NAMES}\nResult: 2 rows", NAMES),
    (f"**SQL Query:** {NAMES}\n\n**Answer:** the names", NAMES),
    (f"Thought: the shops table has the names.\nSQL: {NAMES}\nObservation: 2 rows", NAMES),
    (f"Query: list the shops\nSQL: {NAMES}\nAnswer: Alpha", NAMES),  # prose after `Query:`, the SQL after `SQL:`
    (f"Answer: {NAMES}\nExplanation: reads every name", NAMES),
])
def test_labelled_sections_give_the_sql_section_only(answer, sql):
    got = extract_sql(answer, "auto")
    assert (got.sql, got.step, got.error_kind) == (sql, "label", None), got


def test_labelled_sections_that_disagree_are_not_guessed_between():
    """Two `SQL:` sections holding different queries (no LangChain `SQLQuery:`): no section is picked over the other."""
    got = extract_sql("SQL: SELECT 1\nAnswer: 1\nSQL: SELECT 2\nAnswer: 2", "auto")
    assert got.sql != "SELECT 1" and got.sql != "SELECT 2"


def test_a_langchain_answer_through_the_model_loop_scores_its_sql(shop, chat):
    require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
    chat({"langchain": [f"Question: langchain\nSQLQuery: {NAMES}\nSQLResult: [('Alpha',)]\nAnswer: Alpha"]})
    shop.makefile(".sqleval.yaml", s="database: shop.sqlite\nmodel: test-model\ncases:\n"
                                     f"  - {{id: a, question: langchain, gold: {NAMES}}}\n")
    result, report = run(shop)
    case = by_id(report)["a"]
    assert (case["outcome"], case["predicted"], case["extraction"]) == (
        "passed", NAMES, {"mode": "auto", "step": "label"}), case


# --------------------------------------------------------------------------- --dist each: what the calls cost
EACH_SUITE = "database: shop.sqlite\nmodel: test-model\ncases:\n" + "".join(
    f"  - {{id: c{n}, question: 'each {n}', gold: {NAMES}}}\n" for n in range(3))


@pytest.mark.parametrize("mode", ["use", "off"])
def test_dist_each_reports_every_call_its_workers_made(shop, chat, mode):
    """`--dist each` runs every case on every worker; the report keeps one record per case. Before: the suite's
    `calls` and tokens counted one call per case while the endpoint was asked once per worker. With the cache in
    `use` the second worker waits for the first one's answer and reads it from the cache (one request per case);
    with the cache off both ask, and the report says so."""
    require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
    require_module("xdist", "pytest-xdist is not installed")
    server = chat(default=NAMES)
    shop.makefile(".sqleval.yaml", s=EACH_SUITE)
    result, report = run(shop, "-n", "2", "--dist", "each", f"--sqleval-cache-mode={mode}")
    assert result.ret == 0, result.stdout.str()
    block = report["suites"][0]["model"]
    assert len(report["cases"]) == 3 and block["cases"] == 3
    assert block["calls"] == server.count == (3 if mode == "use" else 6), (block, server.count)
    assert block["calls"] + block["cache_hits"] == 6  # every worker's answer is counted once
    per_call = {(c["tokens"]["prompt"], c["tokens"]["completion"]) for c in report["cases"]}
    assert len(per_call) == 1
    prompt, completion = per_call.pop()
    assert block["tokens"] == {"prompt": prompt * server.count, "completion": completion * server.count}
    result.stdout.fnmatch_lines([f"*model test-model: {server.count} calls, {6 - server.count} cache hits*"])


def test_usage_counts_a_cases_repeats_on_other_workers():
    from pytest_sqleval.model.usage import usage

    record = {"prediction_source": "model", "model": "m", "cached": True, "cost": 0.0,
              "tokens": {"prompt": 10, "completion": 2}, "latency_s": 0.5,
              "model_repeats": [{"cached": False, "tokens": {"prompt": 10, "completion": 2}, "latency_s": 0.5,
                                 "cost": 0.25}]}
    block = usage([record])
    assert (block["cases"], block["calls"], block["cache_hits"], block["tokens"], block["cost"]) == (
        1, 1, 1, {"prompt": 10, "completion": 2}, 0.25)


def test_one_request_is_asked_once_by_threads_asking_it_at_once(tmp_path, monkeypatch):
    """The cache's per-request lock: four threads asking one request at once make one call; the others read it."""
    import threading
    import time

    predictors = importlib.import_module("pytest_sqleval.model.predictors")  # sys.modules' (pytester reloads)
    from pytest_sqleval.model.cache import ResponseCache
    from pytest_sqleval.model.client import Completion
    from pytest_sqleval.model.config import ModelConfig
    from pytest_sqleval.model.predictors import BuiltinPredictor, PredictorCase

    calls = []

    class Client:
        def complete(self, messages, parameters):
            calls.append(1)
            time.sleep(0.3)
            return Completion(NAMES, 5, 2, 0.3)

    monkeypatch.setattr(predictors, "client_for", lambda config: Client())
    predictor = BuiltinPredictor(ResponseCache(tmp_path / "c", "use"))
    case = PredictorCase(id="a", suite="s", question="q", schema="", dialect="sqlite",
                         messages=({"role": "user", "content": "q"},), model=ModelConfig(name="m", url="http://x/v1"))
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(predictor(case))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and sorted(a["cached"] for a in answers) == [False, True, True, True]
    assert [p.name for p in (tmp_path / "c").rglob("*") if p.is_file()] == [f"{next((tmp_path / 'c').rglob('*.json')).name}"]


# --------------------------------------------------------------------------- endpoints nobody tuned for
@dataclass(frozen=True)
class Body:
    """A 200 with these exact bytes and Content-Type."""

    data: bytes
    content_type: str = "application/json"


class BytesChatServer(ChatServer):
    def _handler(self):
        server = self
        base = super()._handler()

        class Handler(base):
            def _answer(self, body, messages, text):
                step = server._step(messages)  # the same step again (the last one repeats): a Body is sent as is
                if isinstance(step, Body):
                    return self._send_raw(step)
                return super()._answer(body, messages, text)

            def _send_raw(self, step: Body) -> None:
                self.send_response(200)
                self.send_header("Content-Type", step.content_type)
                self.send_header("Content-Length", str(len(step.data)))
                self.end_headers()
                self.wfile.write(step.data)

        return Handler


bytes_chat = chat_fixture(server_class=BytesChatServer)


def _completion(text: str, **extra) -> dict:
    return {"id": "x", "object": "chat.completion", "created": 1, "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}, **extra}


def test_bodies_in_other_charsets_and_streams_nobody_asked_for(shop, bytes_chat):
    """A JSON body in the charset its Content-Type names (Latin-1) is read as that charset (before: a model_error
    `not valid JSON: 'utf-8' codec can't decode`); one that is not UTF-8 and names no charset is a model_error that
    says so; a server that streams (server-sent events) though no stream was asked for is a model_error that says
    that; a JSON answer with the SQL one object down (`{"answer": {"sql": ...}}`) is read (before: no_sql)."""
    import json

    require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
    cafe = "SELECT name FROM shops WHERE name <> 'café'"
    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
             "choices": [{"index": 0, "delta": {"content": NAMES}, "finish_reason": None}]}
    bytes_chat({
        "LATIN": [Body(json.dumps(_completion(cafe), ensure_ascii=False).encode("latin-1"),
                       "application/json; charset=ISO-8859-1")],
        "UNDECLARED": [Body(json.dumps(_completion(cafe), ensure_ascii=False).encode("latin-1"))],
        "STREAMED": [Body(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode(), "text/event-stream")],
        "NESTED": [json.dumps({"answer": {"sql": NAMES, "confidence": 0.9}})],
        "EXTRA": [Body(json.dumps(_completion(f"```sql\n{NAMES}\n```", system_fingerprint="fp", service_tier="default",
                                              prompt_logprobs=None, kv_transfer_params=None)).encode())],
    })
    ids = ["LATIN", "UNDECLARED", "STREAMED", "NESTED", "EXTRA"]
    shop.makefile(".sqleval.yaml", s="database: shop.sqlite\nmodel: test-model\ncases:\n" + "".join(
        f"  - {{id: {i.lower()}, question: '{i}', gold: \"{cafe if i == 'LATIN' else NAMES}\"}}\n" for i in ids))
    result, report = run(shop, "--sqleval-cache-mode=off")
    cases = by_id(report)
    assert (cases["latin"]["outcome"], cases["latin"]["predicted"]) == ("passed", cafe), cases["latin"]
    assert cases["undeclared"]["error"]["kind"] == "model_error"
    assert cases["undeclared"]["error"]["message"].startswith("the endpoint's answer is not UTF-8 text (byte 0xe9 at "
                                                              "position "), cases["undeclared"]
    assert cases["streamed"]["error"]["kind"] == "model_error"
    assert "streamed its answer (server-sent events)" in cases["streamed"]["error"]["message"]
    assert (cases["nested"]["outcome"], cases["nested"]["extraction"]["step"]) == ("passed", "json"), cases["nested"]
    assert cases["extra"]["outcome"] == "passed"


def test_a_failed_calls_latency_is_its_own_not_the_wait_for_another(tmp_path, monkeypatch):
    """A model_error's latency_s is the failed request's time: not the time its thread waited before (for the SDK's
    import while another thread built the client, or for another worker's call of the same request)."""
    import time

    predictors = importlib.import_module("pytest_sqleval.model.predictors")  # sys.modules' (pytester reloads)
    from pytest_sqleval.model.config import ModelConfig
    from pytest_sqleval.model.predictors import BuiltinPredictor, PredictorCase, run_predictor

    class Client:
        def complete(self, messages, parameters):
            error = predictors.ModelCallError("HTTP 500: boom (after 0 retries)")
            error.latency_s = 0.01
            raise error

    def slow_client_for(config):
        time.sleep(0.5)  # building the client: the SDK's import
        return Client()

    monkeypatch.setattr(predictors, "client_for", slow_client_for)
    case = PredictorCase(id="a", suite="s", question="q", schema="", dialect="sqlite",
                         messages=({"role": "user", "content": "q"},), model=ModelConfig(name="m", url="http://x/v1"))
    result = run_predictor(BuiltinPredictor(predictors.ResponseCache(tmp_path, "off")), case, extract="auto",
                           label="m", config=case.model)
    assert (result.error_kind, result.latency_s) == ("model_error", 0.01)



@pytest.mark.parametrize("answer", [
    # a small model looping to its token limit after an unclosed string (about 4,000 tokens)
    "Here you go:\nSELECT name FROM shops WHERE name = 'Alpha\n" + "The result is Alpha.\n" * 1000,
    "SQLQuery: SELECT name FROM shops WHERE name = 'Alpha\n" + "SQLResult: [('Alpha',)]\n" * 1000,
    ("SQL: SELECT name FROM shops WHERE\nAnswer: " + "Alpha " * 400 + "\n") * 40,
])
def test_extraction_of_a_degenerate_repetition_takes_no_time(answer):
    """Extraction is linear in the answer: before, every line of a 1,000-line answer tokenized the rest of the answer
    to read one token (22 s of CPU, holding the GIL, so the whole pytest process stalled)."""
    import time

    started = time.process_time()
    extract_sql(answer, "auto")
    assert time.process_time() - started < 3


# --------------------------------------------------------------------------- an answer cut at the token limit
def test_an_answer_cut_at_the_token_limit_says_so_in_its_miss(shop, bytes_chat):
    """`finish_reason: "length"`: the endpoint stopped the answer at `max_tokens`, so its SQL is cut mid-query.
    The miss names the cut and the fix (before: a bare `syntax: no such column: sh`), from the call and from the
    cache's replay of it; a whole answer's record is unchanged (no `finish_reason` kept)."""
    import json

    require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
    cut = _completion("SELECT name FROM sh")
    cut["choices"][0]["finish_reason"] = "length"
    bytes_chat({"CUT": [Body(json.dumps(cut).encode())], "WHOLE": [Body(json.dumps(_completion(NAMES)).encode())]})
    shop.makefile(".sqleval.yaml", s="database: shop.sqlite\nmodel: test-model\ncases:\n"
                                     f"  - {{id: cut, question: CUT, gold: {NAMES}}}\n"
                                     f"  - {{id: whole, question: WHOLE, gold: {NAMES}}}\n")
    for run_number in (1, 2):  # the call, then the cache's answer
        result, report = run(shop, "-rA")
        cases = by_id(report)
        assert cases["cut"]["cached"] is (run_number == 2)
        assert cases["cut"]["prediction_extra"] == {"finish_reason": "length"}, cases["cut"]
        assert "prediction_extra" not in cases["whole"] and cases["whole"]["outcome"] == "passed", cases["whole"]
        result.stdout.fnmatch_lines(["*cut: syntax: *cut off at its token limit, finish_reason length; fix: raise "
                                     "`max_tokens` in the suite's `model:`*"])
