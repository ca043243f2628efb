"""The model in the loop, as a user runs it: `pytest --sqleval --sqleval-model ...` against a real
chat-completions server on 127.0.0.1 (tests/chat_server.py), serial and with -n 2. Nothing leaves the loopback."""

from __future__ import annotations

import json
import textwrap

import pytest

from chat_server import Malformed, Slow, Status, chat_fixture
from conftest import make_sqlite, require_module

require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")

OPEN = "SELECT count(*) FROM tickets WHERE status = 'open'"
SCRIPT = {
    "FENCED": [f"Here is the query:\n```sql\n{OPEN}\n```\nIt counts open tickets."],
    "PLAIN": ["SELECT count(*) FROM shops"],
    "PROSE": ["I am sorry, I cannot answer questions about the weather."],
    "WRONG": ["SELECT count(*) FROM tickets"],
    "RATE": [Status(429, "slow down", retry_after="1"), "SELECT 1"],
    "ERR500": [Status(500, "the GPU caught fire")],
    "SLOW": [Slow(3.0, "SELECT 1")],
    "MALFORMED": [Malformed()],
}
SUITE = """
suite: shop
database: shop.sqlite
model: {name: test-model, price_per_1k_input: 0.5, price_per_1k_output: 1.5, timeout: 0.5, retries: 1}
cases:
  - {id: fenced, question: "FENCED how many open tickets?", gold: "SELECT count(*) FROM tickets WHERE status = 'open'"}
  - {id: plain, question: "PLAIN how many shops?", gold: "SELECT count(*) FROM shops"}
  - {id: prose, question: "PROSE what is the weather?", gold: "SELECT 1"}
  - {id: wrong, question: "WRONG how many open tickets?", gold: "SELECT count(*) FROM tickets WHERE status = 'open'"}
  - {id: rate-limited, question: "RATE one", gold: "SELECT 1"}
  - {id: server-error, question: "ERR500 one", gold: "SELECT 1"}
  - {id: too-slow, question: "SLOW one", gold: "SELECT 1"}
  - {id: malformed, question: "MALFORMED one", gold: "SELECT 1"}
"""
GOOD_SUITE = """
suite: good
database: shop.sqlite
model: test-model
cases:
""" + "".join(f'  - {{id: c{n}, question: "PLAIN {n}", gold: "SELECT count(*) FROM shops"}}\n' for n in range(8))


chat = chat_fixture(SCRIPT)


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite")
    return pytester


def run(pytester: pytest.Pytester, *args: str, subprocess: bool = False, report: str = "report.json"):
    path = pytester.path / report
    if path.exists():
        path.unlink()
    runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = runner("--sqleval", f"--sqleval-json={path}", "-p", "no:cacheprovider", *args)
    data = json.loads(path.read_text()) if path.exists() else None
    return result, data


def cases_of(report) -> dict:
    return {c["id"]: c for c in report["cases"]}


def test_predictions_misses_error_kinds_cost_and_the_cache(shop, chat):
    server = chat()
    shop.makefile(".sqleval.yaml", shop=textwrap.dedent(SUITE))
    result, report = run(shop, "-v")
    assert result.ret == 0, result.stdout.str()
    cases = cases_of(report)
    assert {k: c["outcome"] for k, c in cases.items()} == {
        "fenced": "passed", "plain": "passed", "prose": "missed", "wrong": "missed", "rate-limited": "passed",
        "server-error": "missed", "too-slow": "missed", "malformed": "missed"}
    fenced = cases["fenced"]
    assert fenced["predicted"] == OPEN and fenced["raw_output"] == SCRIPT["FENCED"][0]
    assert fenced["extraction"] == {"mode": "auto", "step": "fenced"} and fenced["cached"] is False
    assert fenced["prediction_source"] == "model" and fenced["model"] == "test-model"
    assert fenced["tokens"]["completion"] == len(SCRIPT["FENCED"][0].split())
    assert fenced["cost"] == pytest.approx((fenced["tokens"]["prompt"] * 0.5 + fenced["tokens"]["completion"] * 1.5) / 1000)
    assert cases["prose"]["error"] == {"kind": "no_sql", "message": "the model's answer contains no SQL: "
                                       "I am sorry, I cannot answer questions about the weather."}
    assert cases["wrong"]["error"] is None and cases["wrong"]["mismatch"]["reason"] == "values"
    assert cases["server-error"]["error"]["kind"] == "model_error"
    assert "HTTP 500: the GPU caught fire" in cases["server-error"]["error"]["message"]
    assert cases["too-slow"]["error"]["kind"] == "model_error" and "timed out" in cases["too-slow"]["error"]["message"]
    assert cases["malformed"]["error"]["kind"] == "model_error" and "not valid JSON" in cases["malformed"]["error"]["message"]
    # retries: 429 then 200, the second request at least Retry-After (1 s) after the first; a 500 retried once
    rate = server.requests_for("RATE")
    assert len(rate) == 2 and rate[1].at - rate[0].at >= 0.95
    assert len(server.requests_for("ERR500")) == 2 and len(server.requests_for("SLOW")) == 2
    assert server.count == 11
    # per-suite cost block (JSON and terminal) and what the run asked
    usage = report["suites"][0]["model"]
    called = [c for c in cases.values() if c["cached"] is False]
    assert usage["calls"] == 8 and usage["cache_hits"] == 0 and usage["errors"] == 3
    assert usage["tokens"]["prompt"] == sum((c["tokens"] or {}).get("prompt") or 0 for c in called)
    assert usage["cost"] == pytest.approx(sum(c["cost"] or 0 for c in cases.values()))
    assert usage["latency_s"]["p95"] >= usage["latency_s"]["p50"] > 0
    result.stdout.fnmatch_lines(["*model test-model: 8 calls, 0 cache hits, 3 errors | tokens * prompt + * completion"
                                 " | latency p50 * s, p95 * s | cost $*"])
    run_model = report["run"]["model"]
    assert run_model["name"] == "test-model" and run_model["endpoint"] == server.url
    assert run_model["parameters"] == {"temperature": 0.0} and len(run_model["prompt_sha256"]) == 64
    assert "test-key" not in json.dumps(report)
    # the request the server got: the default prompt, temperature 0
    body = server.requests_for("PLAIN")[0].body
    assert body["model"] == "test-model" and body["temperature"] == 0
    assert body["messages"][0]["role"] == "system" and "CREATE TABLE shops" in body["messages"][1]["content"]
    # a second run: answers come from the cache; errors were never cached, so only they are asked again
    server.reset()
    again, report2 = run(shop)
    assert again.ret == 0
    assert sorted({r.messages[-1]["content"].rpartition("Question: ")[2] for r in server.requests}) == [
        "ERR500 one", "MALFORMED one", "SLOW one"]
    second = cases_of(report2)
    assert [k for k, c in second.items() if c["cached"]] == ["fenced", "plain", "prose", "wrong", "rate-limited"]
    assert {k: c["outcome"] for k, c in second.items()} == {k: c["outcome"] for k, c in cases.items()}
    assert report2["suites"][0]["model"]["cache_hits"] == 5 and report2["suites"][0]["model"]["calls"] == 3


TALK = """  - id: talk
    interaction:
      - {question: "PLAIN t1", gold: "SELECT count(*) FROM shops"}
      - {question: "PLAIN t2", gold: "SELECT count(*) FROM shops"}
      - {question: "PLAIN t3", gold: "SELECT count(*) FROM shops"}
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_each_case_is_called_exactly_once_and_a_second_run_makes_no_request(shop, chat, workers):
    server = chat({"PLAIN t1": ["SELECT count(*) FROM shops -- one"], "PLAIN t2": ["SELECT count(*) FROM shops -- two"]},
                  default="SELECT count(*) FROM shops")
    shop.makefile(".sqleval.yaml", good=GOOD_SUITE + TALK)
    result, report = run(shop, *workers, subprocess=bool(workers))
    assert result.ret == 0, result.stdout.str()
    assert result.parseoutcomes()["passed"] == 11
    assert sorted(r.messages[-1]["content"].rpartition("Question: ")[2] for r in server.requests) == sorted(
        [f"PLAIN {n}" for n in range(8)] + ["PLAIN t1", "PLAIN t2", "PLAIN t3"])
    # the third turn's prompt holds the model's own SQL of turns 1 and 2 (history: model, the default)
    third = server.requests_for("PLAIN t3")[0].messages[-1]["content"]
    assert ("Earlier questions in this conversation, with their SQL:\nQ1: PLAIN t1\n"
            "SQL1: SELECT count(*) FROM shops -- one\nQ2: PLAIN t2\nSQL2: SELECT count(*) FROM shops -- two") in third
    server.reset()
    again, report2 = run(shop, *workers, subprocess=bool(workers))
    assert again.ret == 0 and server.count == 0
    assert all(c["cached"] for c in report2["cases"]) and report2["suites"][0]["model"]["cache_hits"] == 11


def test_deselected_cases_are_never_called(shop, chat):
    server = chat()
    shop.makefile(".sqleval.yaml", good=GOOD_SUITE)
    result, _ = run(shop, "-k", "c3 or c5")
    assert result.parseoutcomes() == {"passed": 2, "deselected": 6}
    assert sorted(r.messages[-1]["content"].rpartition("Question: ")[2] for r in server.requests) == ["PLAIN 3", "PLAIN 5"]


def test_cache_mode_only_never_calls(shop, chat):
    server = chat()
    shop.makefile(".sqleval.yaml", good=GOOD_SUITE)
    cold, report = run(shop, "--sqleval-cache-mode", "only")
    assert cold.ret == 0 and server.count == 0
    assert {c["error"]["kind"] for c in report["cases"]} == {"model_error"}
    assert "not in the cache" in report["cases"][0]["error"]["message"]
    assert report["suites"][0]["model"]["calls"] == 0
    run(shop, "--sqleval-cache", "committed-cache")  # fill a cache in another directory
    assert (shop.path / "committed-cache").is_dir() and server.count == 8
    server.reset()
    warm, report2 = run(shop, "--sqleval-cache-mode=only", "--sqleval-cache=committed-cache")
    assert server.count == 0 and warm.parseoutcomes() == {"passed": 8}


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_saved_predictions_rescore_identically(shop, chat, workers):
    server = chat()
    shop.makefile(".sqleval.yaml", shop=textwrap.dedent(SUITE))
    first, report = run(shop, "--sqleval-save-predictions=saved.jsonl", *workers, subprocess=bool(workers))
    assert first.ret == 0
    lines = [json.loads(line) for line in (shop.path / "saved.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == list(cases_of(report))
    fenced = lines[0]
    assert fenced["sql"] == OPEN and fenced["raw_output"] == SCRIPT["FENCED"][0] and fenced["model"] == "test-model"
    assert set(fenced) == {"id", "sql", "raw_output", "model", "latency_s", "tokens"}
    assert next(ln for ln in lines if ln["id"] == "prose")["error"]["kind"] == "no_sql"
    server.reset()
    rescored, report2 = run(shop, "--sqleval-predictions=saved.jsonl", *workers, subprocess=bool(workers))
    assert rescored.ret == 0 and server.count == 0
    keys = ("outcome", "error", "predicted", "execution_match", "soft_f1", "exact_match")
    assert {k: {f: c[f] for f in keys} for k, c in cases_of(report2).items()} == \
           {k: {f: c[f] for f in keys} for k, c in cases_of(report).items()}
    assert report2["suites"][0]["metrics"] == report["suites"][0]["metrics"]
    again = cases_of(report2)["fenced"]
    assert again["prediction_source"] == "predictions_file"
    assert again["prediction_extra"]["raw_output"] == SCRIPT["FENCED"][0]
    assert again["prediction_extra"]["tokens"] == cases_of(report)["fenced"]["tokens"]


def test_saved_ids_name_the_suite_when_several_suites_ran(shop, chat):
    chat()
    shop.makefile(".sqleval.yaml", good=GOOD_SUITE.replace("c7", "conv"))
    shop.makefile(".sqleval.yaml", other="suite: other\ndatabase: shop.sqlite\nmodel: test-model\ncases:\n"
                  "  - id: talk\n    interaction:\n      - {question: PLAIN t1, gold: SELECT count(*) FROM shops}\n"
                  "      - {question: PLAIN t2, gold: SELECT count(*) FROM shops}\n")
    run(shop, "--sqleval-save-predictions=saved.jsonl")
    ids = [json.loads(line)["id"] for line in (shop.path / "saved.jsonl").read_text().splitlines()]
    assert "good::c0" in ids and "other::talk/1" in ids and "other::talk/2" in ids
    rescored, report = run(shop, "--sqleval-predictions=saved.jsonl")
    assert rescored.parseoutcomes() == {"passed": 10}


@pytest.mark.parametrize("problem, workers", [("auth", []), ("model", []), ("auth", ["-n", "2"])],
                         ids=["auth", "model", "auth-xdist"])
def test_an_auth_error_or_unknown_model_stops_the_session_once(shop, chat, problem, workers, monkeypatch):
    server = chat(api_key="right-key")
    if problem == "model":
        monkeypatch.setenv("OPENAI_API_KEY", "right-key")
    else:
        monkeypatch.setenv("OPENAI_API_KEY", "wrong-key")
    suite = GOOD_SUITE + "".join(f'  - {{id: d{n}, question: "PLAIN d{n}", gold: "SELECT 1"}}\n' for n in range(30))
    shop.makefile(".sqleval.yaml", good=suite)
    args = ["--sqleval-model", "no-such-model"] if problem == "model" else []
    result, _ = run(shop, *args, *workers, subprocess=bool(workers))
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out
    expected = ("the endpoint refused the API key: HTTP 401" if problem == "auth"
                else "unknown model 'no-such-model' or wrong URL: HTTP 404")
    assert out.count(f"Interrupted: sqleval: the model cannot be used, stopping the session: {expected}") == 1
    assert "fix:" in out
    assert server.count <= 2 * 4 * (2 if workers else 1)  # the first cases and the look-ahead, never the 38 cases
    assert "38 passed" not in out


def test_a_conftest_predictor_gets_the_case_and_its_extras_are_kept(shop):
    shop.makefile(".sqleval.yaml", shop="""
        suite: shop
        database: shop.sqlite
        schema_format: compact
        sample_rows: 1
        history: gold
        examples: 1
        cases:
          - id: open
            question: How many open tickets?
            evidence: open means status = 'open'
            metadata: {source: bird}
            gold: SELECT count(*) FROM tickets WHERE status = 'open'
          - id: talk
            interaction:
              - {question: "All shops?", gold: SELECT name FROM shops}
              - {question: "How many?", gold: SELECT count(*) FROM shops}
        """)
    shop.makeconftest("""
        import json, pytest

        @pytest.fixture(scope="session")
        def sqleval_predictor():
            def predict(case):
                with open("seen.jsonl", "a") as f:
                    f.write(json.dumps({"id": case.id, "question": case.question, "schema": case.schema,
                                        "dialect": case.dialect, "history": list(case.history),
                                        "evidence": case.evidence, "metadata": dict(case.metadata),
                                        "examples": list(case.examples),
                                        "prompt": case.messages[-1]["content"]}) + "\\n")
                if case.id == "talk/2":
                    return "```sql\\nSELECT count(*) FROM shops\\n```"
                return {"sql": case.metadata.get("x") or "SELECT count(*) FROM tickets WHERE status = 'open'"
                        if case.id == "open" else "SELECT name FROM shops",
                        "tokens": {"prompt": 10, "completion": 5}, "confidence": 0.9}
            return predict
        """)
    result, report = run(shop)
    assert result.parseoutcomes() == {"passed": 3}, result.stdout.str()
    seen = {s["id"]: s for s in map(json.loads, (shop.path / "seen.jsonl").read_text().splitlines())}
    first = seen["open"]
    assert first["dialect"] == "sqlite" and first["evidence"] == "open means status = 'open'"
    assert first["metadata"] == {"source": "bird"}
    assert first["schema"].splitlines()[:2] == ["shops(id, name)", "  rows: (1, 'Avionics')"]
    assert "tickets(id, shop_id -> shops.id, aircraft, hours, status)" in first["schema"]
    assert first["examples"] == [{"question": "All shops?", "sql": "SELECT name FROM shops"}]  # never itself
    assert "External knowledge: open means status = 'open'" in first["prompt"]
    assert seen["talk/1"]["history"] == [] and seen["talk/1"]["examples"][0]["question"] == "How many open tickets?"
    assert seen["talk/2"]["history"] == [{"question": "All shops?", "sql": "SELECT name FROM shops"}]
    cases = cases_of(report)
    assert cases["open"]["prediction_extra"] == {"confidence": 0.9}
    assert cases["open"]["tokens"] == {"prompt": 10, "completion": 5}
    assert cases["talk/2"]["extraction"] == {"mode": "auto", "step": "fenced"}
    assert cases["open"]["model"] == "conftest:sqleval_predictor.<locals>.predict"


def test_a_predictor_function_and_history_of_the_models_own_sql(shop):
    shop.makepyfile(mymodel="""
        CALLS = []

        def predict(case):
            history = [h["sql"] for h in case.history]
            CALLS.append(case.id)
            if case.turn == 2:
                # the model's own turn-1 SQL is in the history (not the gold)
                assert history == ["SELECT name FROM shops ORDER BY id"], history
                return "SQL: SELECT count(*) FROM shops"
            if case.id == "boom":
                raise RuntimeError("the model server is on fire")
            return "SELECT name FROM shops ORDER BY id"
        """)
    shop.makefile(".sqleval.yaml", shop="""
        database: shop.sqlite
        cases:
          - id: talk
            interaction:
              - {question: "All shops?", gold: SELECT name FROM shops}
              - {question: "How many?", gold: SELECT count(*) FROM shops}
          - {id: boom, question: x, gold: SELECT 1}
        """)
    result, report = run(shop, "--sqleval-predictor", "mymodel:predict")
    assert result.parseoutcomes() == {"passed": 2, "missed": 1}, result.stdout.str()
    cases = cases_of(report)
    assert cases["talk/2"]["extraction"]["step"] == "label"
    assert cases["boom"]["error"] == {"kind": "model_error",
                                      "message": "the predictor raised RuntimeError: the model server is on fire"}
    assert cases["talk/1"]["model"] == "mymodel:predict"
    assert report["run"]["model"]["predictor"] == "mymodel:predict"
    bad = shop.runpytest("--sqleval", "--sqleval-predictor", "mymodel:nope", "-p", "no:cacheprovider")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "mymodel has no attribute 'nope'" in bad.stderr.str()


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_fenced_text_scores_the_same_kind_on_every_engine(shop, engine, request):
    if engine == "duckdb":
        request.getfixturevalue("duckdb_available")
        import duckdb

        con = duckdb.connect(str(shop.path / "shop.duckdb"))
        con.execute("CREATE TABLE shops (id INTEGER, name TEXT); INSERT INTO shops VALUES (1, 'Avionics')")
        con.close()
    database = "shop.duckdb" if engine == "duckdb" else "shop.sqlite"
    shop.makepyfile(fencer="def predict(case):\n    return '```sql\\nSELECT count(*) FROM shops\\n```'\n")
    for mode, kind in (("raw", "no_sql"), ("auto", None)):
        shop.makefile(".sqleval.yaml", shop=f"database: {database}\nextract: {mode}\ncases:\n"
                      "  - {id: n, question: 'How many shops?', gold: SELECT count(*) FROM shops}\n")
        _, report = run(shop, "--sqleval-predictor", "fencer:predict")
        case = report["cases"][0]
        assert (case["error"] or {}).get("kind") == kind
        if kind:
            assert case["error"]["message"] == "the model's answer contains no SQL: ```sql SELECT count(*) FROM shops ```"


def test_a_prompt_with_an_unknown_placeholder_is_an_error_naming_it(shop, chat):
    chat()
    shop.makefile(".sqleval.yaml", shop="""
        database: shop.sqlite
        model: test-model
        prompt: |
          Schema: {{ schema }}
          Q: {{ questoin }}
        cases:
          - {id: a, question: x, gold: SELECT 1}
        """)
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*shop.sqleval.yaml:3: bad `prompt:` template: unknown placeholder questoin*",
                                 "*fix: the placeholders are: question, schema, dialect, evidence, history, examples*"])


def test_a_prompt_file_and_model_parameters_reach_the_server(shop, chat):
    server = chat()
    (shop.path / "prompts").mkdir()
    (shop.path / "prompts" / "sql.j2").write_text("{% block user %}{{ dialect }} | Question: {{ question }}{% endblock %}")
    shop.makefile(".sqleval.yaml", shop="""
        database: shop.sqlite
        prompt: prompts/sql.j2
        model: {name: test-model, temperature: 0.2, max_tokens: 64, seed: 7, params: {top_k: 5}}
        cases:
          - {id: a, question: PLAIN a, gold: SELECT count(*) FROM shops}
        """)
    result, report = run(shop)
    assert result.parseoutcomes() == {"passed": 1}
    body = server.requests[0].body
    assert body["messages"] == [{"role": "user", "content": "sqlite | Question: PLAIN a"}]
    assert (body["temperature"], body["max_tokens"], body["seed"], body["top_k"]) == (0.2, 64, 7, 5)
    import hashlib

    expected = hashlib.sha256((shop.path / "prompts" / "sql.j2").read_bytes()).hexdigest()
    assert report["run"]["model"]["prompt_sha256"] == expected
    assert report["run"]["model"]["parameters"] == {"temperature": 0.2, "max_tokens": 64, "seed": 7, "top_k": 5}


def test_ini_options_configure_the_model(shop, chat):
    server = chat()
    shop.makeini("[pytest]\nsqleval = true\nsqleval_model = test-model\nsqleval_cache_mode = off\n"
                 "sqleval_price_per_1k_input = 2\nsqleval_model_concurrency = 1\n")
    shop.makefile(".sqleval.yaml", shop="database: shop.sqlite\ncases:\n"
                  "  - {id: a, question: PLAIN a, gold: SELECT count(*) FROM shops, predicted: SELECT 0}\n")
    result = shop.runpytest("-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"passed": 1}  # the model's answer, not `predicted:`
    result.stdout.fnmatch_lines(["sqleval model: model test-model at http://127.0.0.1:*/v1, 1 calls at once per process,"
                                 " cache off*", "*model test-model: 1 calls, 0 cache hits, 0 errors*cost $0.*"])
    assert server.count == 1 and not (shop.path / ".sqleval_cache").exists()
    bad = shop.runpytest("-p", "no:cacheprovider", "--sqleval-model-key-env", "SQLEVAL_NO_SUCH_VAR")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "SQLEVAL_NO_SUCH_VAR: the environment variable is not set" in bad.stderr.str()
