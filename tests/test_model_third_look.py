"""A third independent look at issue 9 (the model in the loop) and how its records meet the deploy gate (issue 10),
with endpoints and predictors nobody tuned for: an endpoint that trickles its answer or never answers, 200s that are
not chat completions (no choices, `content: null`, tool calls, HTML), 503s then success, a Retry-After of an hour,
a server that goes away mid-run, base URLs with and without `/v1`, an API key in the environment, predictors that
return several statements or odd token counts, the cache's corrupt entries, and usage totals serial vs -n 2.
Run as a user runs them: `pytest --sqleval` through pytester against a real chat-completions server on 127.0.0.1
(tests/chat_server.py, extended here with raw HTTP behaviours)."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass

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


# --------------------------------------------------------------------------- a server with raw HTTP behaviours
@dataclass(frozen=True)
class Trickle:
    """A 200 whose body arrives one byte every `every` seconds: each read is quick, the whole answer is not."""

    every: float
    text: str


@dataclass(frozen=True)
class Hang:
    """Headers never come: the request hangs until the server stops."""


@dataclass(frozen=True)
class Raw:
    """Any status, body and content type."""

    code: int
    body: str
    content_type: str = "application/json"


@dataclass(frozen=True)
class GoAway:
    """From this request on, the server is gone: this connection is dropped and nothing listens any more."""


class RawChatServer(ChatServer):
    """tests/chat_server.py's server, plus the steps above and an optional route prefix (a server that serves the
    API under `/v1` only and answers 404 elsewhere, as vLLM, Ollama and hosted APIs do)."""

    def __init__(self, *args, prefix: str | None = None, **kwargs) -> None:
        self.prefix = prefix
        self.stopping = threading.Event()
        self._local = threading.local()
        super().__init__(*args, **kwargs)

    @property
    def root(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def _step(self, messages):
        step = super()._step(messages)
        self._local.step = step
        return step

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        if not getattr(self, "_gone", False):
            super().__exit__(*exc)

    def go_away(self) -> None:
        self._gone = True
        threading.Thread(target=lambda: (self._httpd.shutdown(), self._httpd.server_close()), daemon=True).start()

    def _handler(self):
        server = self
        base = super()._handler()

        class Handler(base):
            def do_POST(self) -> None:  # noqa: N802
                server._local.step = None
                if getattr(server, "_gone", False):
                    return self._drop()
                if server.prefix and not self.path.startswith(server.prefix + "/"):
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    with server._lock:
                        server.requests.append(None)  # counted, as a real server would see it
                    return self._error(404, "Not Found", "not_found")
                return super().do_POST()

            def _answer(self, body, messages, text: str) -> None:
                step = server._local.step
                if isinstance(step, Trickle):
                    return self._trickle(body, messages, step)
                if isinstance(step, Hang):
                    server.stopping.wait(60)
                    return self._drop()
                if isinstance(step, Raw):
                    return self._raw(step)
                if isinstance(step, GoAway):
                    server.go_away()
                    return self._drop()
                return super()._answer(body, messages, text)

            def _drop(self) -> None:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

            def _raw(self, step: Raw) -> None:
                data = step.body.encode()
                self.send_response(step.code)
                self.send_header("Content-Type", step.content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _trickle(self, body, messages, step: Trickle) -> None:
                payload = json.dumps(completion(step.text)).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.flush()
                    for index in range(len(payload)):
                        if server.stopping.wait(step.every):
                            return self._drop()
                        self.wfile.write(payload[index:index + 1])
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler


def completion(content, **message) -> dict:
    """A chat.completion body whose first choice's message holds `content` (and any other message fields)."""
    return {"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content, **message}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}


chat = chat_fixture({}, RawChatServer)


def model_suite(ids, model: str = "{name: test-model, retries: 0}", gold: str = NAMES, extra: str = "") -> str:
    """A suite whose case `k` asks the question `<K> which shops?` (the chat server's script keys)."""
    cases = "".join(f"  - {{id: {k}, question: '{k.upper()} which shops?', gold: {gold}}}\n" for k in ids)
    return f"suite: s\ndatabase: shop.sqlite\nmodel: {model}\n{extra}cases:\n{cases}"


def errors_of(report) -> dict:
    return {c["id"]: (c["error"] or {}).get("message") for c in report["cases"]}


# --------------------------------------------------------------------------- answers that are not chat text
def test_200_answers_that_hold_no_text_are_clear_model_errors_and_the_run_goes_on(shop, chat):
    tool_call = completion(None, tool_calls=[{"id": "call_1", "type": "function", "function": {
        "name": "run_sql", "arguments": json.dumps({"sql": NAMES})}}])
    tool_call["choices"][0]["finish_reason"] = "tool_calls"
    server = chat({
        "EMPTY": [Malformed(json.dumps({**completion("x"), "choices": []}))],
        "NOCONTENT": [Malformed(json.dumps(completion(None)))],
        "TOOL": [Malformed(json.dumps(tool_call))],
        "BLANKTOOL": [Malformed(json.dumps(tool_call).replace('"content": null', '"content": ""'))],
        "HTML": [Raw(200, "<html><body>Open WebUI</body></html>", "text/html")],
        "GOOD": [NAMES],
    })
    shop.makefile(".sqleval.yaml", s=model_suite(["empty", "nocontent", "tool", "blanktool", "html", "good"]))
    result, report = run(shop)
    assert result.ret == 0, result.stdout.str()
    cases = by_id(report)
    assert cases["good"]["outcome"] == "passed"
    for key in ("empty", "nocontent", "tool", "blanktool", "html"):
        assert cases[key]["outcome"] == "missed" and cases[key]["error"]["kind"] == "model_error", key
    messages = errors_of(report)
    assert messages["empty"].startswith("the endpoint's answer has no message")
    assert messages["tool"] == ('the model answered with a tool call, not text: run_sql({"sql": "SELECT name FROM '
                                'shops"}); fix: ask for the SQL as text (no `tools` or `tool_choice` in model.params)')
    assert messages["blanktool"] == messages["tool"]
    assert messages["nocontent"] == "the model's answer has no text (content: null, finish_reason: stop)"
    assert messages["html"] == "the endpoint's answer has no message: <html><body>Open WebUI</body></html>"
    # errors are never cached: a second run asks for those four again
    server.reset()
    run(shop)
    assert server.count == 5


# --------------------------------------------------------------------------- retries, backoff, timeouts
def test_503s_then_success_within_the_retries_and_a_retry_after_of_an_hour_is_not_obeyed(shop, chat):
    """503, 503, 200 with retries: 2 passes after three requests; a 429 with `Retry-After: 3600` is not waited
    for (the SDK obeys at most 60 s and does not retry a longer wait): a model_error at once, not an hour's wait."""
    server = chat({"BUSY": [Status(503, "overloaded"), Status(503, "overloaded"), NAMES],
                   "HOUR": [Status(429, "slow down", retry_after="3600"), NAMES],
                   "FAIL": [Status(500, "down")]})
    shop.makefile(".sqleval.yaml", s=model_suite(["busy", "hour", "fail"], model="{name: test-model, retries: 2}"))
    started = time.monotonic()
    result, report = run(shop)
    assert time.monotonic() - started < 120  # a generous bound: an obeyed Retry-After would take an hour
    cases = by_id(report)
    assert cases["busy"]["outcome"] == "passed" and len(server.requests_for("BUSY")) == 3
    assert cases["hour"]["error"] == {"kind": "model_error", "message": "HTTP 429: slow down (after 0 retries)"}
    assert len(server.requests_for("HOUR")) == 1
    assert cases["fail"]["error"] == {"kind": "model_error", "message": "HTTP 500: down (after 2 retries)"}
    assert len(server.requests_for("FAIL")) == 3
    # the command line's retries win over the suite's
    server.reset()
    shop.makefile(".sqleval.yaml", s=model_suite(["fail2"], model="{name: test-model, retries: 2}"))
    _, report = run(shop, "--sqleval-model-retries=0")
    assert errors_of(report) == {"fail2": "HTTP 500: down (after 0 retries)"} and server.count == 1


@pytest.mark.parametrize("step", [Hang(), Trickle(0.2, NAMES)], ids=["hung", "trickling"])
def test_an_endpoint_that_never_finishes_its_answer_times_out_and_the_run_goes_on(shop, chat, step):
    """A hung endpoint (no headers) and one that sends its answer a byte at a time (every read quick, the answer
    never done): `timeout` is per request, so each is a clear model_error, and the other cases pass."""
    server = chat({"STUCK": [step], "GOOD": [NAMES]})
    shop.makefile(".sqleval.yaml", s=model_suite(["stuck", "good"], model="{name: test-model, retries: 1, timeout: 1}"))
    started = time.monotonic()
    result, report = run(shop)
    elapsed = time.monotonic() - started
    assert elapsed < 30, elapsed  # two attempts of 1 s and a backoff; the trickle alone would take minutes
    cases = by_id(report)
    assert cases["good"]["outcome"] == "passed"
    assert cases["stuck"]["error"] == {"kind": "model_error",
                                       "message": "the request timed out after 1.0 s (and 1 retries)"}
    assert len(server.requests_for("STUCK")) == 2
    assert result.ret == 0


def test_a_server_that_goes_away_mid_run_makes_the_remaining_cases_model_errors(shop, chat):
    """The server dies at the third question: the cases answered before pass, the rest are model errors that say
    the endpoint cannot be reached, and the session is not stopped (a connection error is not an auth error)."""
    server = chat({"C3": [GoAway()]}, default=NAMES)
    ids = [f"c{n}" for n in range(1, 7)]
    shop.makefile(".sqleval.yaml", s=model_suite(ids))
    result, report = run(shop, "--sqleval-model-concurrency=1")
    cases = by_id(report)
    assert [cases[k]["outcome"] for k in ids] == ["passed", "passed"] + ["missed"] * 4, errors_of(report)
    for key in ids[2:]:
        assert cases[key]["error"]["kind"] == "model_error"
        assert cases[key]["error"]["message"].startswith(f"cannot reach {server.url}: "), cases[key]["error"]
    assert result.ret == 0 and "Interrupted" not in result.stdout.str()


# --------------------------------------------------------------------------- base URLs
def test_base_urls_with_a_trailing_slash_share_the_cache_and_one_without_v1_says_how_to_fix_it(shop, chat, monkeypatch):
    server = chat({}, default=NAMES, prefix="/v1")
    shop.makefile(".sqleval.yaml", s=model_suite(["a", "b"], model="test-model"))
    result, report = run(shop, f"--sqleval-model-url={server.root}/v1")
    assert result.parseoutcomes() == {"passed": 2} and server.count == 2
    assert report["run"]["model"]["endpoint"] == f"{server.root}/v1"
    server.reset()
    result, report = run(shop, f"--sqleval-model-url={server.root}/v1/")
    assert result.parseoutcomes() == {"passed": 2} and server.count == 0  # the same endpoint: cache hits
    assert [c["cached"] for c in report["cases"]] == [True, True]
    # the same URL from OPENAI_BASE_URL (trailing slash) is the same endpoint too
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.root}/v1/")
    result, report = run(shop)
    assert result.parseoutcomes() == {"passed": 2} and server.count == 0
    # without /v1: the server answers 404; the session stops once with the fix
    for url in (server.root, server.root + "/"):
        result, report = run(shop, f"--sqleval-model-url={url}", "--sqleval-cache-mode=off")
        out = result.stdout.str()
        assert result.ret == pytest.ExitCode.INTERRUPTED, out
        result.stdout.fnmatch_lines([f"*sqleval: the model cannot be used, stopping the session: unknown model "
                                     f"'test-model' or wrong URL: HTTP 404 from {server.root} (model test-model)*"
                                     "fix: check --sqleval-model and --sqleval-model-url (it usually ends in /v1)*"])


# --------------------------------------------------------------------------- the API key
def test_the_api_key_from_the_environment_is_sent_and_never_written_under_xdist(shop, chat, monkeypatch):
    secret = "sk-proj-THIRD-look-0a1b2c3d4e5f"
    server = chat({"BAD": [Status(400, "bad request")]}, default=NAMES, api_key=secret)
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    shop.makefile(".sqleval.yaml", s=model_suite(["a", "b", "bad"]))
    shop.makeini("[pytest]\nsqleval_price_per_1k_input = 0.1\n")
    for workers in (["-n", "2"],):  # the key reaches the workers through the environment
        result, report = run(shop, "-v", "-rA", "--sqleval-save-predictions=saved.jsonl", "--sqleval-cache-mode=refresh",
                             "--sqleval-html=report.html", "--junitxml=junit.xml", "--sqleval-markdown=r.md",
                             *workers)
        assert result.parseoutcomes() == {"passed": 2, "missed": 1}, result.stdout.str()
        assert {r.authorization for r in server.requests} == {f"Bearer {secret}"}
        assert secret not in result.stdout.str() + result.stderr.str()
        files = [p for p in shop.path.rglob("*") if p.is_file() and p.suffix != ".sqlite"]
        assert len([p for p in files if ".sqleval_cache" in p.parts]) == 2
        assert {p.name for p in files} >= {"saved.jsonl", "report.html", "junit.xml", "r.md", "report.json"}
        for path in files:
            assert secret not in path.read_text(encoding="utf-8", errors="replace"), path


# --------------------------------------------------------------------------- your own predictor
ODD_PREDICTOR = """
import math

ANSWERS = {
    "two": "SELECT name FROM shops; SELECT id FROM shops",
    "two-fenced": "```sql\\nSELECT name FROM shops;\\nDELETE FROM shops;\\n```",
    "inf-tokens": {"sql": "SELECT name FROM shops", "tokens": {"prompt": math.inf, "completion": 2}},
    "nan-tokens": {"sql": "SELECT name FROM shops", "tokens": {"prompt": math.nan, "completion": 2}},
    "nan-latency": {"sql": "SELECT name FROM shops", "latency_s": math.nan, "tokens": {"prompt": 10, "completion": 2}},
    "negative": {"sql": "SELECT name FROM shops", "tokens": {"prompt": -10, "completion": 2}, "latency_s": -1},
    "ok": {"sql": "SELECT name FROM shops", "tokens": {"prompt": 100, "completion": 20}},
}


class Model:
    def answer(self, case):
        return ANSWERS[case.id]


model = Model()
"""


def predictor_suite(ids) -> str:
    return "database: shop.sqlite\ncases:\n" + "".join(f"  - {{id: {k}, question: q, gold: {NAMES}}}\n" for k in ids)


def test_a_predictor_module_answering_several_statements_or_odd_counts(shop):
    """`--sqleval-predictor pkg.mod:obj.method`: several statements are refused (nothing runs: the shops are still
    there), and token counts or latencies that are not finite or negative are unknown, not a crash or a NaN in the
    JSON report; the cost counts only known tokens."""
    (shop.path / "mypkg").mkdir()
    (shop.path / "mypkg" / "__init__.py").write_text("")
    (shop.path / "mypkg" / "predict.py").write_text(ODD_PREDICTOR)
    ids = ["two", "two-fenced", "inf-tokens", "nan-tokens", "nan-latency", "negative", "ok"]
    shop.makefile(".sqleval.yaml", s=predictor_suite(ids))
    for workers in ([],):
        result, report = run(shop, "--sqleval-predictor=mypkg.predict:model.answer", "--sqleval-price-per-1k-input=1",
                              *workers)
        text = (shop.path / "report.json").read_text()
        assert "NaN" not in text and "Infinity" not in text
        cases = by_id(report)
        assert cases["two"]["error"]["kind"] == "rejected", cases["two"]
        assert cases["two-fenced"]["error"]["kind"] == "rejected", cases["two-fenced"]
        assert cases["two-fenced"]["predicted"] == "SELECT name FROM shops;\nDELETE FROM shops;"
        for key in ("inf-tokens", "nan-tokens", "nan-latency", "negative", "ok"):
            assert cases[key]["outcome"] == "passed", (key, cases[key]["error"])
        assert cases["inf-tokens"]["tokens"] == {"prompt": None, "completion": 2}
        assert cases["nan-tokens"]["tokens"] == {"prompt": None, "completion": 2}
        assert cases["negative"]["tokens"] == {"prompt": None, "completion": 2}
        assert cases["nan-latency"]["latency_s"] >= 0 and cases["negative"]["latency_s"] >= 0
        assert cases["inf-tokens"]["cost"] is None and cases["ok"]["cost"] == pytest.approx(0.1)
        block = report["suites"][0]["model"]
        assert block["tokens"] == {"prompt": 110, "completion": 28} and block["calls_without_tokens"] == 5 and block["cost"] == pytest.approx(0.11)
    assert sqlite_count(shop.path / "shop.sqlite", "shops") > 0


def sqlite_count(path, table: str) -> int:
    import sqlite3

    with sqlite3.connect(path) as connection:
        return connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


# --------------------------------------------------------------------------- prompt templates
TEAM_TEMPLATES = {
    "blocks": "{% block system %}\nYou write {{ dialect }}.\n{% endblock %}\n{% block user %}\n{{ schema }}\n"
              "Team: {{ metadata.team }}\nQuestion: {{ question }}\n{% endblock %}\n",
    "no-blocks": "You write {{ dialect }}.\n\n{{ schema }}\n\n\nTeam: {{ metadata.team }}\nQuestion: {{ question }}\n",
}


@pytest.mark.parametrize("template", TEAM_TEMPLATES.values(), ids=TEAM_TEMPLATES.keys())
def test_a_template_value_missing_for_one_case_names_the_file_and_line_and_the_others_run(shop, chat, template):
    """`{{ metadata.team }}` in an ini prompt file: a case without that metadata is a model_error naming the template
    file, its line and what is missing; the case that has it is asked, and passes."""
    server = chat({}, default=NAMES)
    (shop.path / "prompts").mkdir()
    (shop.path / "prompts" / "team.j2").write_text(template, encoding="utf-8")
    shop.makeini("[pytest]\nsqleval_prompt = prompts/team.j2\n")
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: {{name: test-model, retries: 0}}
        cases:
          - {{id: with-team, question: TEAM which shops?, metadata: {{team: ops}}, gold: {NAMES}}}
          - {{id: without, question: LONE which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop)
    cases = by_id(report)
    assert cases["with-team"]["outcome"] == "passed" and server.count == 1
    assert "Team: ops\nQuestion: TEAM which shops?" in server.requests[0].messages[-1]["content"]
    error = cases["without"]["error"]
    assert error["kind"] == "model_error"
    assert error["message"].startswith(f"cannot build the prompt: {shop.path / 'prompts' / 'team.j2'}:6: "
                                       "the prompt template uses an undefined value: "), error
    assert "team" in error["message"]


# --------------------------------------------------------------------------- the cache and what the calls cost
def test_the_cache_keeps_the_raw_answer_so_another_extract_mode_rescores_without_a_call(shop, chat):
    server = chat({"A": ["Sure:\n```sql\nSELECT name FROM shops\n```"]})
    shop.makefile(".sqleval.yaml", s=model_suite(["a"]))
    result, report = run(shop)
    assert report["cases"][0]["outcome"] == "passed" and server.count == 1
    shop.makefile(".sqleval.yaml", s=model_suite(["a"], extra="extract: raw\n"))
    result, report = run(shop)
    case = report["cases"][0]
    assert server.count == 1 and case["cached"] is True
    assert case["extraction"] == {"mode": "raw", "step": "text"}
    assert case["error"] == {"kind": "no_sql",
                             "message": "the model's answer contains no SQL: Sure: ```sql SELECT name FROM shops ```"}
    assert case["raw_output"] == "Sure:\n```sql\nSELECT name FROM shops\n```"


USAGE_SUITE = """
suite: costs
database: shop.sqlite
model: {name: test-model, retries: 0, price_per_1k_input: 0.25, price_per_1k_output: 2}
cases:
""" + "".join(f"  - {{id: q{n}, question: 'Q{n} which shops?', gold: {NAMES}}}\n" for n in range(10)) + """
  - {id: broken, question: 'BROKEN which shops?', gold: SELECT 1}
  - id: talk
    interaction:
      - {question: 'T1 which ids?', gold: SELECT id FROM shops}
      - {question: 'T2 and names?', gold: SELECT name FROM shops}
"""


def test_usage_and_cost_totals_are_identical_serial_and_xdist(shop, chat):
    """Tokens, calls, errors and cost of a cold run are the same whether one process or two workers made the
    calls (each case asked once), and equal the sum over the cases; a warm run costs nothing in both."""
    server = chat({"BROKEN": [Status(500, "nope")], "T1": ["SELECT id FROM shops"]}, default=NAMES)
    shop.makefile(".sqleval.yaml", s=USAGE_SUITE)
    blocks = {}
    for label, workers in (("serial", []), ("xdist", ["-n", "2"])):
        server.reset()
        result, report = run(shop, f"--sqleval-cache=cache-{label}", *workers)
        assert server.count == 13, label
        block = dict(report["suites"][0]["model"])
        cases = report["cases"]
        assert block["calls"] == 13 and block["errors"] == 1 and block["cache_hits"] == 0
        assert block["tokens"]["prompt"] == sum(c["tokens"]["prompt"] for c in cases if c["tokens"])
        assert block["cost"] == pytest.approx(sum(c["cost"] for c in cases if c["cost"] is not None))
        assert block["cost"] == pytest.approx((block["tokens"]["prompt"] * 0.25 + block["tokens"]["completion"] * 2)
                                              / 1000)
        block.pop("latency_s")
        blocks[label] = block
        assert sorted(p.name for p in (shop.path / f"cache-{label}").iterdir()) != []
        if workers:
            continue
        server.reset()
        _, warm = run(shop, f"--sqleval-cache=cache-{label}", *workers)
        assert server.count == 1  # the error, asked again
        assert warm["suites"][0]["model"]["cache_hits"] == 12 and warm["suites"][0]["model"]["calls"] == 1
        assert warm["suites"][0]["model"]["tokens"] == {"prompt": 0, "completion": 0}
        assert warm["suites"][0]["model"]["cost"] == 0
    assert blocks["serial"] == blocks["xdist"]


def test_an_answer_with_a_lone_surrogate_is_scored_cached_and_saved(shop, chat):
    """A JSON `\\udce9` escape decodes to a lone surrogate, which UTF-8 cannot encode: the answer is scored as any
    prediction with it is (`syntax`, not valid UTF-8), cached (a second run asks nothing) and saved, not a
    model_error blaming the predictor."""
    body = json.dumps(completion("SELECT name FROM shops -- caf\udce9"))
    assert "\\udce9" in body
    server = chat({"ODD": [Malformed(body)]})
    shop.makefile(".sqleval.yaml", s=model_suite(["odd"]))
    result, report = run(shop, "--sqleval-save-predictions=saved.jsonl")
    case = report["cases"][0]
    unreadable = {"kind": "syntax", "message": "the prediction is not valid UTF-8 text (bad character at position 29)"}
    assert case["error"] == unreadable and case["raw_output"] == "SELECT name FROM shops -- caf\ufffd"  # the report: valid UTF-8
    saved = (shop.path / "saved.jsonl").read_text(encoding="utf-8")
    assert json.loads(saved)["raw_output"] == "SELECT name FROM shops -- caf\udce9"
    server.reset()
    result, report = run(shop)
    assert server.count == 0 and report["cases"][0]["cached"] is True and report["cases"][0]["error"] == unreadable


def test_a_turn_asked_again_sees_the_same_history_as_when_the_cache_was_filled(shop, chat):
    """history: model. After a cold run, only turn 3's cache entry is removed: the rerun asks only turn 3, and its
    prompt, holding turns 1 and 2 from the cache, is the one the first run sent."""
    server = chat({"T1": ["SELECT id FROM shops"], "T2": ["```sql\nSELECT name FROM shops\n```"]}, default=NAMES)
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: {{name: test-model, retries: 0}}
        cases:
          - id: talk
            interaction:
              - {{question: "T1 which ids?", gold: SELECT id FROM shops}}
              - {{question: "T2 and names?", gold: {NAMES}}}
              - {{question: "T3 again?", gold: {NAMES}}}
        """)
    run(shop)
    first = server.requests_for("T3")[0].messages
    assert "SQL1: SELECT id FROM shops\n" in first[-1]["content"] and "SQL2: SELECT name FROM shops" in first[-1]["content"]
    for workers in ([],):
        entries = sorted((shop.path / ".sqleval_cache").glob("*/*.json"))
        assert len(entries) == 3
        third = [p for p in entries if "T3 again?" in p.read_text(encoding="utf-8")]
        assert len(third) == 1
        third[0].unlink()
        server.reset()
        result, report = run(shop, *workers)
        assert [r.messages for r in server.requests] == [first]
        assert [c["cached"] for c in report["cases"]] == [True, True, False]
        assert result.parseoutcomes() == {"passed": 3}


# --------------------------------------------------------------------------- the model and the deploy gate
def test_lf_asks_the_model_only_for_last_runs_misses_and_shards_split_the_calls(shop, chat):
    """--lf after a run with a failed call: only the missed case runs, and it is the only request (the others are
    neither scored nor asked). --sqleval-shard K/N: each shard asks for its own cases only, together all once."""
    server = chat({"B": [Status(500, "flaky"), NAMES]}, default=NAMES)
    ids = ["a", "b", "c", "d", "e"]
    shop.makefile(".sqleval.yaml", s=model_suite(ids))
    first = shop.runpytest("--sqleval", "--sqleval-json=first.json")
    assert first.parseoutcomes() == {"passed": 4, "missed": 1}
    server.requests.clear()  # the script goes on: B's next answer is the SQL
    again = shop.runpytest("--sqleval", "--lf", "--sqleval-json=again.json")
    assert again.parseoutcomes().get("passed") == 1, again.stdout.str()
    assert [r.messages[-1]["content"].rpartition("Question: ")[2] for r in server.requests] == ["B which shops?"]
    assert [c["id"] for c in json.loads((shop.path / "again.json").read_text())["cases"]] == ["b"]
    # shards: a fresh cache, each case asked by exactly one shard
    asked = []
    for k in (1, 2):
        server.reset()
        result, report = run(shop, f"--sqleval-shard={k}/2", "--sqleval-cache=shards", report=f"shard{k}.json")
        questions = sorted(r.messages[-1]["content"].rpartition("Question: ")[2][0].lower() for r in server.requests)
        assert questions == sorted(c["id"] for c in report["cases"]), k
        asked += questions
    assert sorted(asked) == ids


def test_answers_a_user_would_not_call_odd_a_bom_and_a_one_line_fence(shop):
    """A predictor that reads its SQL from a file saved with a byte-order mark, and a small model's one-line
    ```` ```sql SELECT ... ``` ````: both are the query, with the step that found it."""
    shop.makeconftest('''
        import pytest

        ANSWERS = {
            "bom": "\\ufeffSELECT name FROM shops",
            "one-line-fence": "```sql SELECT name FROM shops```",
            "one-line-fence-spaced": "Here: ```SQL  SELECT name FROM shops ``` done",
            "crlf": "Here you go:\\r\\n\\r\\n```sql\\r\\nSELECT name\\r\\nFROM shops;\\r\\n```\\r\\nIt lists names.",
        }

        @pytest.fixture(scope="session")
        def sqleval_predictor():
            return lambda case: ANSWERS[case.id]
        ''')
    ids = ["bom", "one-line-fence", "one-line-fence-spaced", "crlf"]
    shop.makefile(".sqleval.yaml", s=predictor_suite(ids))
    result, report = run(shop)
    cases = by_id(report)
    assert {k: c["outcome"] for k, c in cases.items()} == dict.fromkeys(ids, "passed"), errors_of(report)
    assert cases["bom"]["predicted"] == NAMES and cases["bom"]["extraction"]["step"] == "text"
    assert cases["one-line-fence"]["predicted"] == NAMES and cases["one-line-fence"]["extraction"]["step"] == "inline"
    assert cases["one-line-fence-spaced"]["predicted"] == NAMES
    assert cases["crlf"]["extraction"]["step"] == "fenced"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again: nothing listens there


def test_an_ipv6_endpoint_is_named_with_its_brackets(shop, chat):
    chat({})
    port = free_port()
    shop.makefile(".sqleval.yaml", s=model_suite(["a"]))
    result, report = run(shop, f"--sqleval-model-url=http://user:pw@[::1]:{port}/v1/")
    assert report["run"]["model"]["endpoint"] == f"http://[::1]:{port}/v1"
    assert report["cases"][0]["error"]["message"].startswith(f"cannot reach http://[::1]:{port}/v1: ")
    assert "pw" not in (shop.path / "report.json").read_text()


@pytest.mark.parametrize("where", ["option", "ini", "suite"])
def test_a_model_url_without_a_scheme_is_one_clear_error_not_a_miss_per_case(shop, chat, where):
    """`localhost:8000/v1` (no http://) cannot be reached by any case: one message with the fix, not N misses."""
    chat({})
    ids = [f"c{n}" for n in range(6)]
    url = f"127.0.0.1:{free_port()}/v1"
    args = []
    if where == "option":
        args = [f"--sqleval-model-url={url}"]
    elif where == "ini":
        shop.makeini(f"[pytest]\nsqleval_model_url = {url}\n")
    model = "{name: test-model, retries: 0" + (f", url: '{url}'" if where == "suite" else "") + "}"
    shop.makefile(".sqleval.yaml", s=model_suite(ids, model=model))
    result, report = run(shop, *args)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out
    result.stdout.fnmatch_lines([f"*sqleval: the model cannot be used, stopping the session: the model URL {url} does "
                                 f"not start with http:// or https://; fix: write it in full, e.g. http://{url}*"])
    assert "6 missed" not in out


def test_a_predictor_given_as_a_file_path_says_which_module_to_name(shop):
    (shop.path / "predictors").mkdir()
    (shop.path / "predictors" / "mine.py").write_text(f"def predict(case):\n    return {NAMES!r}\n")
    shop.makefile(".sqleval.yaml", s=predictor_suite(["a", "b", "c"]))
    result, _ = run(shop, "--sqleval-predictor=predictors/mine.py:predict")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert ("--sqleval-predictor 'predictors/mine.py:predict': predictors/mine.py is a file path, not a module; "
            "name the module instead: --sqleval-predictor predictors.mine:predict") in result.stderr.str()
    result, report = run(shop, "--sqleval-predictor=predictors.mine:predict")
    assert result.parseoutcomes() == {"passed": 3}
    assert {c["model"] for c in report["cases"]} == {"predictors.mine:predict"}


def test_ctrl_c_while_a_call_hangs_ends_the_run_without_waiting_for_the_timeout(shop, chat):
    """A request to a hung endpoint with a 120 s timeout: Ctrl-C (SIGINT) ends pytest promptly, exit status 2,
    instead of holding the process until the call times out."""
    import os
    import signal
    import subprocess
    import sys

    server = chat({"STUCK": [Hang()]})
    shop.makefile(".sqleval.yaml", s=model_suite(["stuck"], model="{name: test-model, retries: 0, timeout: 120}"))
    process = subprocess.Popen([sys.executable, "-m", "pytest", "--sqleval", "-p", "no:cacheprovider"],
                               cwd=shop.path, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while server.count == 0 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
        assert server.count == 1
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=100)
    finally:
        if process.poll() is None:
            process.kill()
    assert time.monotonic() - interrupted < 30, out.decode()  # generous: the call would hold it for 120 s
    assert process.returncode == pytest.ExitCode.INTERRUPTED and b"KeyboardInterrupt" in out


GATEWAY_PAGE = ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
                "</center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n" + "<!-- padding -->\r\n" * 40)


def test_odd_bodies_a_proxy_or_a_broken_server_sends_are_short_clear_model_errors(shop, chat):
    server = chat({
        "GATEWAY": [Raw(502, GATEWAY_PAGE, "text/html")],
        "LIST": [Raw(200, "[]")],
        "STRING": [Raw(200, '"SELECT name FROM shops"')],
        "NUMBER": [Malformed(json.dumps(completion(5)))],
        "PLAINERR": [Raw(500, "Internal Server Error", "text/plain")],
    })
    ids = ["gateway", "list", "string", "number", "plainerr"]
    shop.makefile(".sqleval.yaml", s=model_suite(ids))
    result, report = run(shop)
    assert result.ret == 0, result.stdout.str()
    messages = errors_of(report)
    for key in ids:
        assert by_id(report)[key]["error"]["kind"] == "model_error", key
        assert len(messages[key]) < 400 and "padding" not in messages[key], messages[key]
    assert messages["gateway"] == "HTTP 502: 502 Bad Gateway (after 0 retries)"
    assert messages["list"] == "the endpoint's answer has no message: []"
    assert messages["plainerr"] == "HTTP 500: Internal Server Error (after 0 retries)", messages["plainerr"]
    assert server.count == 5


def test_each_suite_counts_its_own_calls_and_prices_even_when_file_names_look_alike(shop, chat):
    """Suites `shop.sqleval.yaml` and `myshop.sqleval.yaml` (one file name ends with the other) on two models with
    their own prices: each suite's `model` block holds its own calls and cost."""
    chat({}, models=("cheap", "dear"), default=NAMES)
    for stem, model, price, count in (("shop", "cheap", 1, 2), ("myshop", "dear", 10, 3)):
        cases = "".join(f"  - {{id: {stem}{n}, question: '{stem.upper()}{n} which shops?', gold: {NAMES}}}\n"
                        for n in range(count))
        shop.makefile(".sqleval.yaml", **{stem: f"database: shop.sqlite\nmodel: {{name: {model}, "
                                                 f"price_per_1k_input: {price}}}\ncases:\n{cases}"})
    for workers in ([],):
        result, report = run(shop, "--sqleval-cache-mode=off", *workers)
        blocks = {entry["path"]: entry["model"] for entry in report["suites"]}
        assert sorted(blocks) == ["myshop.sqleval.yaml", "shop.sqleval.yaml"], blocks
        assert (blocks["shop.sqleval.yaml"]["model"], blocks["shop.sqleval.yaml"]["calls"]) == ("cheap", 2)
        assert (blocks["myshop.sqleval.yaml"]["model"], blocks["myshop.sqleval.yaml"]["calls"]) == ("dear", 3)
        for path, price in (("shop.sqleval.yaml", 1), ("myshop.sqleval.yaml", 10)):
            assert blocks[path]["cost"] == pytest.approx(blocks[path]["tokens"]["prompt"] * price / 1000)


def test_a_predictor_that_exits_is_that_cases_model_error(shop):
    """User code that calls sys.exit (an argparse error inside a wrapped CLI): that case's model_error, named;
    the other cases are asked and scored."""
    shop.makepyfile(exiting=f"""
        import sys

        def predict(case):
            if case.id == "exits":
                sys.exit(2)
            return {NAMES!r}
        """)
    shop.makefile(".sqleval.yaml", s=predictor_suite(["a", "exits", "b"]))
    for workers in ([],):
        result, report = run(shop, "--sqleval-predictor=exiting:predict", *workers)
        assert result.ret == 0, result.stdout.str()
        cases = by_id(report)
        assert cases["a"]["outcome"] == cases["b"]["outcome"] == "passed"
        assert cases["exits"]["error"] == {"kind": "model_error", "message": "the predictor raised SystemExit: 2"}
