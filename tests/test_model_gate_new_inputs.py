"""Issues 9 (the model in the loop) and 10 (the deploy gate) tried with new inputs, as a user runs them:
`pytest --sqleval` through pytester against a real chat-completions server on 127.0.0.1 (tests/chat_server.py),
serial and -n 2, and the `sqleval` command on the reports it writes."""

from __future__ import annotations

import json
import socket

import pytest

from chat_server import Malformed, Status, chat_fixture
from conftest import make_sqlite, require_module
from deploygate_support import literal_brackets
from model_support import by_id, run, shop_fixture

openai = require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
# pytester's in-process runs forget the modules first imported inside them. The SDK's HTTP stack is imported when a
# client is built: build one here, at collection, or a later in-process run (of this file or another) re-imports
# it, and the SDK no longer recognises its connection errors and timeouts (no retries, raw exceptions).
openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused").chat.completions

NAMES = "SELECT name FROM shops"


chat = chat_fixture()
shop = shop_fixture()


def model_suite(ids, model: str = "{name: test-model, retries: 0}", gold: str = NAMES, extra: str = "") -> str:
    """A suite whose case `k` asks the question `<K> ...` (the chat server's script keys)."""
    cases = "".join(f"  - {{id: {k}, question: '{k.upper()} which shops?', gold: {gold}}}\n" for k in ids)
    return f"suite: s\ndatabase: shop.sqlite\nmodel: {model}\n{extra}cases:\n{cases}"


# --------------------------------------------------------------------------- SQL extraction, as models reply
REPLIES = {
    # prose on the line right after the statement's semicolon (no blank line between)
    "AFTER": ("SELECT name FROM shops;\nThis query returns the name of every shop.", NAMES + ";", "text"),
    # a prose line that starts with a SQL keyword and introduces the query with a colon
    "INTRO": ("Select the names from the shops table:\nSELECT name FROM shops", NAMES, "prose"),
    # a one-word label other than SQL:/Query:/Answer: whose first word is a statement keyword
    "UPDATE": ("Update: here is the corrected query\nSELECT name\nFROM shops", "SELECT name\nFROM shops", "prose"),
    # a fence without a language, a trailing semicolon
    "BARE": ("```\nSELECT name FROM shops;\n```", NAMES + ";", "fenced"),
    # several fences: the last SQL one wins, prose between and after
    "SEVERAL": ("First try:\n```sql\nSELECT id FROM shops\n```\nBetter:\n```SQL\nSELECT name FROM shops\n```\nDone.",
                NAMES, "fenced"),
    "LABEL": ("sql: SELECT name FROM shops;", NAMES + ";", "label"),
    # one line of prose, the query after its colon
    "SAYS": ("The query you need is: SELECT name FROM shops", NAMES, "label"),
    # the query, then its example output in an untagged fence: the output is not the SQL
    "OUTPUT": ("```sql\nSELECT name FROM shops\n```\nExample output:\n```\nname\n--------\nAvionics\n```",
               NAMES, "fenced"),
}


def test_sql_wrapped_in_prose_is_extracted_before_it_is_scored(shop, chat):
    chat({key: [reply] for key, (reply, _, _) in REPLIES.items()}
         | {"EMPTY": [""], "REFUSE": ["I'm sorry, I can't help with that request."],
            "EXPLAIN": ["To answer this you would list the name column of the shops table."]})
    ids = [k.lower() for k in REPLIES] + ["empty", "refuse", "explain"]
    shop.makefile(".sqleval.yaml", s=model_suite(ids))
    result, report = run(shop)
    cases = by_id(report)
    for key, (reply, sql, step) in REPLIES.items():
        case = cases[key.lower()]
        assert (case["outcome"], case["predicted"], case["extraction"]["step"]) == ("passed", sql, step), case
        assert case["raw_output"] == reply
    assert cases["empty"]["error"] == {"kind": "no_prediction", "message": "the model returned an empty answer"}
    assert cases["refuse"]["error"] == {
        "kind": "no_sql", "message": "the model's answer contains no SQL: I'm sorry, I can't help with that request."}
    assert cases["explain"]["error"]["kind"] == "no_sql"
    assert "To answer this you would list the name column" in cases["explain"]["error"]["message"]
    assert result.parseoutcomes() == {"passed": 8, "missed": 3}


@pytest.mark.parametrize("text, sql, step", [
    ("SELECT name -- the shop names:\nFROM shops", "SELECT name -- the shop names:\nFROM shops", "text"),  # a comment's colon
    ("-- step 1:\nSELECT name FROM shops", "-- step 1:\nSELECT name FROM shops", "text"),
    ("SELECT x::int FROM t;\n\nSELECT 2", "SELECT x::int FROM t;\n\nSELECT 2", "text"),  # SQL after ';' is kept
    ("SELECT a FROM t;\n-- done", "SELECT a FROM t;", "text"),
    ("Note: SELECT * is slow here\nSELECT name FROM shops", "SELECT name FROM shops", "prose"),
])
def test_extraction_keeps_sql_that_only_looks_like_prose(text, sql, step):
    from pytest_sqleval.model.extract import extract_sql

    got = extract_sql(text)
    assert (got.sql, got.step, got.error_kind) == (sql, step, None)


def test_a_label_line_with_nothing_after_it_is_not_sql(shop, chat):
    """"Update: ..." alone is prose, not an UPDATE statement for the guard to reject."""
    chat({"NOTE": ["Update: the schema has no table for that, so no query can answer it."]})
    shop.makefile(".sqleval.yaml", s=model_suite(["note"]))
    _, report = run(shop)
    assert report["cases"][0]["error"] == {
        "kind": "no_sql",
        "message": "the model's answer contains no SQL: Update: the schema has no table for that, so no query can answer it."}


def test_a_refusal_in_the_message_refusal_field_is_the_models_answer(shop, chat):
    """OpenAI-style refusals come as `content: null, refusal: "..."`: a no_sql miss showing the refusal."""
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": None, "refusal": "I cannot help with that."}}]}
    chat({"NOPE": [Malformed(json.dumps(body))]})
    shop.makefile(".sqleval.yaml", s=model_suite(["nope"]))
    _, report = run(shop)
    case = report["cases"][0]
    assert case["error"] == {"kind": "no_sql", "message": "the model's answer contains no SQL: I cannot help with that."}
    assert case["raw_output"] == "I cannot help with that."


# --------------------------------------------------------------------------- an endpoint that fails
def test_failed_calls_say_how_many_retries_were_made_and_the_run_goes_on(shop, chat):
    server = chat({"BAD": [Status(400, "maximum context length exceeded")],
                   "BUSY": [Status(503, "overloaded")], "GOOD": [NAMES]})
    shop.makefile(".sqleval.yaml", s=model_suite(["bad", "busy", "good"], model="{name: test-model, retries: 1}"))
    result, report = run(shop)
    cases = by_id(report)
    assert len(server.requests_for("BAD")) == 1 and len(server.requests_for("BUSY")) == 2
    assert cases["bad"]["error"] == {"kind": "model_error",
                                     "message": "HTTP 400: maximum context length exceeded (after 0 retries)"}
    assert cases["busy"]["error"] == {"kind": "model_error", "message": "HTTP 503: overloaded (after 1 retries)"}
    assert cases["good"]["outcome"] == "passed" and result.ret == 0
    assert report["suites"][0]["model"]["errors"] == 2


def test_connection_refused_is_a_model_error_per_case_serial_and_xdist(shop, chat):
    chat({})
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    shop.makefile(".sqleval.yaml", s=model_suite(
        ["a", "b", "c"], model=f"{{name: test-model, retries: 0, url: 'http://127.0.0.1:{port}/v1'}}"))
    for workers in ([], ["-n", "2"]):
        result, report = run(shop, *workers)
        assert result.ret == 0 and result.parseoutcomes()["missed"] == 3
        assert {c["error"]["message"] for c in report["cases"]} == {
            f"cannot reach http://127.0.0.1:{port}/v1: [Errno 111] Connection refused"}


# --------------------------------------------------------------------------- the response cache
def test_the_cache_misses_on_a_changed_template_model_or_temperature(shop, chat):
    server = chat({}, models=("test-model", "other-model"), default=NAMES)
    suite = model_suite(["a", "b"], model="{name: test-model, temperature: 0}")
    shop.makefile(".sqleval.yaml", s=suite)
    changes = [(suite, [], 2), (suite, [], 0), (suite.replace("temperature: 0", "temperature: 0.3"), [], 2),
               (suite, ["--sqleval-model=other-model"], 2),
               (suite.replace("cases:", "prompt: 'Schema: {{ schema }} Question: {{ question }}'\ncases:"), [], 2)]
    for text, args, requests in changes:
        shop.makefile(".sqleval.yaml", s=text)
        server.reset()
        result, report = run(shop, *args)
        assert server.count == requests, (text, args)
        assert result.parseoutcomes() == {"passed": 2}
        assert [c["cached"] for c in report["cases"]] == [requests == 0] * 2


def test_a_corrupted_cache_file_is_named_under_cache_mode_only(shop, chat):
    server = chat({}, default=NAMES)
    shop.makefile(".sqleval.yaml", s=model_suite(["a", "b", "c"]))
    run(shop)
    files = sorted((shop.path / ".sqleval_cache").glob("*/*.json"))
    assert len(files) == 3
    files[0].write_text("{not json")
    files[1].write_text(json.dumps({"format": "sqleval-cache/1", "response": {"tokens": 3}}))
    server.reset()
    result, report = run(shop, "--sqleval-cache-mode=only")
    assert server.count == 0
    errors = sorted(c["error"]["message"] for c in report["cases"] if c["error"])
    assert len(errors) == 2
    for path, message in zip(sorted(files[:2]), sorted(errors)):
        assert message.startswith(f"the cached answer {path} cannot be used (")
        assert message.endswith("); fix: delete the file, or run once with --sqleval-cache-mode refresh")
    assert any("not valid JSON" in m for m in errors) and any("no answer text" in m for m in errors)
    # `use` mode asks again for the two broken entries and rewrites them
    again, report = run(shop)
    assert server.count == 2 and again.parseoutcomes() == {"passed": 3}


def test_a_cache_that_cannot_be_written_stops_the_session_once(shop, chat):
    """Every answer would be lost: one clear message with the fix, not a miss per case blaming the predictor."""
    chat({}, default=NAMES)
    (shop.path / "not-a-dir").write_text("a file")
    shop.makefile(".sqleval.yaml", s=model_suite([f"c{n}" for n in range(20)]))
    result, _ = run(shop, "--sqleval-cache=not-a-dir", "--sqleval-model-concurrency=1")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out
    assert out.count(f"sqleval: the model cannot be used, stopping the session: cannot write the response cache "
                     f"{shop.path / 'not-a-dir'}") == 1
    assert "fix: give --sqleval-cache a writable directory, or --sqleval-cache-mode off" in out
    assert "the predictor raised" not in out and "20 missed" not in out


def test_replaying_a_cache_is_reproducible_serial_and_xdist(shop, chat):
    """--sqleval-cache-mode only: the case records and the saved predictions are the same in every replay."""
    chat({"B": ["```sql\nSELECT id FROM shops\n```"], "C": ["I do not know."]}, default=NAMES)
    shop.makefile(".sqleval.yaml", s=model_suite(["a", "b", "c", "d"]))
    first, filled = run(shop)
    replays = []
    for n, workers in enumerate(([], ["-n", "2"], [])):
        result, report = run(shop, "--sqleval-cache-mode=only", f"--sqleval-save-predictions=saved{n}.jsonl", *workers)
        assert result.parseoutcomes() == {"passed": 2, "missed": 2}
        replays.append((report, (shop.path / f"saved{n}.jsonl").read_text()))
    reference, saved = replays[0]
    for report, text in replays[1:]:
        assert text == saved
        for key in ("cases", "suites", "overall"):
            assert json.dumps(report[key], sort_keys=True) == json.dumps(reference[key], sort_keys=True), key
    # a cache hit keeps the tokens and the latency of the call that filled the cache
    called = by_id(filled)["a"]
    hit = by_id(reference)["a"]
    assert hit["cached"] is True and called["cached"] is False
    assert (hit["tokens"], hit["latency_s"]) == (called["tokens"], called["latency_s"])
    assert reference["suites"][0]["model"]["calls"] == 0 and reference["suites"][0]["model"]["cache_hits"] == 4


# --------------------------------------------------------------------------- interactions
@pytest.mark.parametrize("history, first_sql", [("model", "(none)"), ("gold", "SELECT id FROM shops")])
def test_a_turn_after_a_failed_call_gets_the_earlier_turns(shop, chat, history, first_sql):
    """Turn 1's call fails (HTTP 500): turn 2's prompt still holds turn 1, with no SQL of the model's own, or the gold."""
    server = chat({"T1 ": [Status(500, "boom")], "T2 ": ["SELECT name FROM shops"]}, default=NAMES)
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: {{name: test-model, retries: 0}}
        history: {history}
        cases:
          - id: talk
            interaction:
              - {{question: "T1 which ids?", gold: SELECT id FROM shops}}
              - {{question: "T2 and their names?", gold: SELECT name FROM shops}}
              - {{question: "T3 again?", gold: SELECT name FROM shops}}
        """)
    result, report = run(shop)
    cases = by_id(report)
    assert cases["talk/1"]["error"]["kind"] == "model_error" and cases["talk/2"]["outcome"] == "passed"
    second = server.requests_for("T2 ")[0].messages[-1]["content"]
    assert f"Q1: T1 which ids?\nSQL1: {first_sql}\n" in second
    third = server.requests_for("T3 ")[0].messages[-1]["content"]
    assert f"Q1: T1 which ids?\nSQL1: {first_sql}\nQ2: T2 and their names?\nSQL2: SELECT name FROM shops" in third


# --------------------------------------------------------------------------- your own predictor
def test_a_predictor_returning_the_wrong_type_is_a_clear_miss_serial_and_xdist(shop):
    shop.makepyfile(odd="""
        def predict(case):
            return {"number": 7, "bytes": b"SELECT name FROM shops", "sql-int": {"sql": 5},
                    "no-sql-key": {"query": "SELECT 1"}, "none": None, "list": ["SELECT 1"],
                    "ok": {"sql": "SELECT name FROM shops", "confidence": 0.4}}[case.id]
        """)
    ids = ["number", "bytes", "sql-int", "no-sql-key", "none", "list", "ok"]
    shop.makefile(".sqleval.yaml", s="database: shop.sqlite\ncases:\n" + "".join(
        f"  - {{id: {k}, question: q, gold: {NAMES}, predicted: {NAMES}}}\n" for k in ids))
    expected = {
        "number": ("model_error", "the predictor returned int; return SQL text, None, or a mapping with 'sql'"),
        "bytes": ("model_error", "the predictor returned bytes; return SQL text, None, or a mapping with 'sql'"),
        "sql-int": ("model_error", "the predictor's 'sql' is int, not text"),
        "no-sql-key": ("model_error", "the predictor's mapping has no 'sql' key (keys: query)"),
        "none": ("no_prediction", "the predictor returned no SQL"),
        "list": ("model_error", "the predictor returned list; return SQL text, None, or a mapping with 'sql'"),
    }
    for workers in ([], ["-n", "2"]):
        result, report = run(shop, "--sqleval-predictor=odd:predict", *workers)
        cases = by_id(report)
        assert {k: (c["error"] or {}).get("kind") and (c["error"]["kind"], c["error"]["message"])
                for k, c in cases.items() if k != "ok"} == expected
        assert cases["ok"]["outcome"] == "passed" and cases["ok"]["prediction_extra"] == {"confidence": 0.4}
        assert result.ret == 0 and result.parseoutcomes() == {"passed": 1, "missed": 6}


# --------------------------------------------------------------------------- the deploy gate
def tolerance_project(pytester: pytest.Pytester, n: int = 20, worse: int = 6) -> pytest.Pytester:
    """One suite of n cases; the deployed model gets all of them, the candidate misses the first `worse`
    (one column of two: soft_f1 drops too)."""
    from deploygate_support import prediction, suite_yaml

    make_sqlite(pytester.path / "shop.sqlite")
    ids = [f"c{i:02d}" for i in range(n)]
    (pytester.path / "tol.sqleval.yaml").write_text(suite_yaml("tol", ids, interaction=False), encoding="utf-8")
    for name, bad in (("deployed", 0), ("candidate", worse)):
        (pytester.path / f"{name}.jsonl").write_text("".join(
            json.dumps({"id": c, "sql": prediction(k, "partial" if k < bad else "right")}) + "\n"
            for k, c in enumerate(ids)), encoding="utf-8")
    result, _ = run(pytester, "--sqleval-predictions=deployed.jsonl", report="deployed.json")
    assert result.ret == 0
    return pytester


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_drop_exactly_at_the_tolerance_is_within_it(pytester, workers):
    """20 pairs, 6 regressed, none fixed: execution accuracy drops by exactly 0.3 (1.0 -> 0.7), McNemar p = 2/2^6."""
    from pytest_sqleval.cli import main

    project = tolerance_project(pytester)
    gates = ("--sqleval-predictions=candidate.jsonl", "--sqleval-baseline=deployed.json",
             "--sqleval-fail-under-baseline=execution_accuracy=0.3", "--sqleval-fail-under-baseline=overall:exact_match=0.3",
             "--sqleval-threshold=execution_accuracy=0.7", "--sqleval-threshold=overall:pass_rate=0.7")
    result, report = run(project, *gates, *workers, report="candidate.json")
    stats = report["baseline"]["overall"]["metrics"]["execution_accuracy"]
    assert stats["p_value"] == 2 / 2**6 and stats["discordant"] == {"better": 0, "worse": 6}
    verdicts = {g["name"]: (g["passed"], g["message"]) for g in report["gates"]}
    assert verdicts["tol::execution_accuracy vs baseline"] == (True, (
        "PASS execution_accuracy dropped 0.3000 vs baseline (95% CI [-0.30, -0.02], p=0.031, 20 pairs): "
        "within the tolerance 0.3"))
    assert verdicts["overall::exact_match vs baseline"][0] is True
    assert verdicts["tol::execution_accuracy"] == (True, "PASS execution_accuracy 0.70 >= 0.70")
    assert verdicts["overall::pass_rate"] == (True, "PASS overall:pass_rate 0.70 >= 0.70")
    assert result.ret == 0, result.stdout.str()
    if workers:
        return
    # one step tighter fails, in pytest and in `sqleval gate` alike
    tight, report = run(project, *gates, "--sqleval-fail-under-baseline=execution_accuracy=0.29",
                        report="tight.json")
    assert tight.ret == 1
    tight.stdout.fnmatch_lines(literal_brackets(
        "suite tol: FAIL execution_accuracy dropped 0.3000 vs baseline (95% CI [-0.30, -0.02], p=0.031, 20 pairs): "
        "more than the tolerance 0.29 and significant at alpha 0.05"))
    candidate = str(project.path / "candidate.json")
    assert main(["gate", candidate]) == 0
    assert main(["gate", candidate, "--fail-under-baseline", "execution_accuracy=0.3"]) == 0
    assert main(["gate", candidate, "--fail-under-baseline", "execution_accuracy=0.2999"]) == 1


@pytest.mark.parametrize("n, p_value, passed", [(1, 1.0, True), (5, 2 / 2**5, True), (6, 2 / 2**6, False)])
def test_all_passed_then_all_missed_on_a_tiny_suite(pytester, n, p_value, passed):
    """Every case regressed: McNemar p = 2 / 2^n, significant at 0.05 only from 6 pairs on; the same for soft_f1's
    exact sign-flip test (every difference negative)."""
    project = tolerance_project(pytester, n=n, worse=n)
    result, report = run(project, "--sqleval-predictions=candidate.jsonl", "--sqleval-baseline=deployed.json",
                         "--sqleval-fail-under-baseline=execution_accuracy", "--sqleval-fail-under-baseline=soft_f1")
    metrics = report["baseline"]["suites"][0]["metrics"]
    assert (metrics["execution_accuracy"]["delta"], metrics["execution_accuracy"]["p_value"]) == (-1.0, p_value)
    assert metrics["soft_f1"]["p_value"] == pytest.approx(p_value)
    assert [g["passed"] for g in report["gates"]] == [passed, passed]
    assert result.ret == (0 if passed else 1)
    if passed:
        assert "not significant at alpha 0.05" in report["gates"][0]["message"]


def test_a_baseline_of_other_suites_or_other_metrics_says_so(pytester):
    project = tolerance_project(pytester, n=6, worse=0)
    other = json.loads((project.path / "deployed.json").read_text())
    for case in other["cases"]:
        case["suite"] = "elsewhere"
    (project.path / "other-suites.json").write_text(json.dumps(other))
    result, report = run(project, "--sqleval-predictions=candidate.jsonl", "--sqleval-baseline=other-suites.json",
                         "--sqleval-max-regressed=0", "--sqleval-fail-under-baseline=execution_accuracy")
    assert report["baseline"]["warnings"] == [
        "suite tol is not in the baseline: all its cases are new",
        "suite elsewhere of the baseline is not in this run: its cases count as removed"]
    assert report["baseline"]["overall"]["counts"]["new"] == 6 and report["baseline"]["overall"]["counts"]["removed"] == 6
    gates = {g["name"]: g for g in report["gates"]}
    # no pair to count regressions in is no pass, as for the metric rule below
    assert gates["overall::max_regressed"]["passed"] is False
    assert gates["overall::max_regressed"]["message"].startswith("FAIL no case was scored in both this run and the "
                                                                 "baseline (0 pairs)")
    assert gates["overall::execution_accuracy vs baseline"]["message"] == (
        "FAIL execution_accuracy vs baseline: no suite has it in both runs")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*warning: suite tol is not in the baseline: all its cases are new"])
    # a baseline written before soft_f1 existed: the comparison skips it, a gate on it says why it cannot judge
    old = json.loads((project.path / "deployed.json").read_text())
    for case in old["cases"]:
        case.pop("soft_f1")
    (project.path / "old.json").write_text(json.dumps(old))
    result, report = run(project, "--sqleval-predictions=candidate.jsonl", "--sqleval-baseline=old.json",
                         "--sqleval-fail-under-baseline=soft_f1", "--sqleval-fail-under-baseline=execution_accuracy")
    assert "soft_f1" not in report["baseline"]["suites"][0]["metrics"]
    assert [(g["passed"], g["message"].split(" (")[0]) for g in report["gates"]] == [
        (False, "FAIL soft_f1 vs baseline: no suite has it in both runs"),
        (True, "PASS execution_accuracy 0.0000 vs baseline")]
    # a baseline whose cases lost their ids is refused before anything runs, naming the file and the case
    broken = json.loads((project.path / "deployed.json").read_text())
    del broken["cases"][2]["id"]
    (project.path / "broken.json").write_text(json.dumps(broken))
    result, _ = run(project, "--sqleval-predictions=candidate.jsonl", "--sqleval-baseline=broken.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--sqleval-baseline broken.json: case #3 of the baseline has no suite and id*"])


def test_merging_shards_some_of_them_empty_equals_one_run(pytester):
    """Five shards of three cases (two shards hold nothing): merged, the report and its gates are the unsharded run's."""
    from pytest_sqleval.cli import main

    project = tolerance_project(pytester, n=3, worse=1)
    gates = ("--sqleval-predictions=candidate.jsonl", "--sqleval-baseline=deployed.json", "--sqleval-max-regressed=0",
             "--sqleval-threshold=overall:execution_accuracy=0.5")
    whole_result, whole = run(project, *gates, report="whole.json")
    shards = []
    for k in range(1, 6):
        result, report = run(project, *gates, f"--sqleval-shard={k}/5", report=f"shard{k}.json")
        assert result.ret in (0, pytest.ExitCode.NO_TESTS_COLLECTED)  # a shard's gates never set its exit status
        shards.append(str(project.path / f"shard{k}.json"))
    assert sorted(len(json.loads(open(s).read())["cases"]) for s in shards) == [0, 0, 1, 1, 1]
    merged_path = str(project.path / "all.json")
    assert main(["merge", *shards, "-o", merged_path]) == 0
    merged = json.loads(open(merged_path).read())
    for key in ("suites", "overall", "cases", "gates"):
        assert json.dumps(merged[key], sort_keys=True) == json.dumps(whole[key], sort_keys=True), key
    assert whole_result.ret == 1 and main(["gate", merged_path]) == 1  # c00 regressed > 0 allowed
    assert main(["gate", merged_path, "--max-regressed", "1"]) == 0


def test_a_suite_whose_baseline_gate_failed_is_not_marked_passed(pytester):
    """The step summary and the HTML page mark a suite by all of its gates, not only its thresholds."""
    project = tolerance_project(pytester, n=6, worse=6)
    result, report = run(project, "--sqleval-predictions=candidate.jsonl", "--sqleval-baseline=deployed.json",
                         "--sqleval-fail-under-baseline=soft_f1", "--sqleval-markdown=summary.md",
                         "--sqleval-html=page.html", report="candidate.json")
    assert [(g["name"], g["passed"]) for g in report["gates"]] == [("tol::soft_f1 vs baseline", False)]
    assert report["suites"][0]["passed"] is True  # its own thresholds: none
    assert result.ret == 1
    markdown = (project.path / "summary.md").read_text()
    assert "### ❌ Suite <code>tol</code>" in markdown and "✅ Suite" not in markdown
    page = (project.path / "page.html").read_text()
    assert '✗ Suite tol <span class="muted">' in page and "✓ Suite tol" not in page


def test_merging_the_shards_of_a_model_run_keeps_what_the_calls_cost(shop):
    """Each suite's `model` block (calls, tokens, latency, cost) of the merged report is the unsharded run's."""
    from pytest_sqleval.cli import main

    shop.makepyfile(fixed="""
        def predict(case):
            return {"sql": "SELECT name FROM shops", "tokens": {"prompt": 100 + len(case.id), "completion": 10},
                    "latency_s": 0.25 * len(case.id)}
        """)
    shop.makefile(".sqleval.yaml", s="database: shop.sqlite\ncases:\n" + "".join(
        f"  - {{id: {'c' * n}, question: q, gold: {NAMES}}}\n" for n in range(1, 7)))
    options = ("--sqleval-predictor=fixed:predict", "--sqleval-price-per-1k-input=2")
    _, whole = run(shop, *options, report="whole.json")
    assert whole["suites"][0]["model"]["cost"] == pytest.approx(2 * (600 + 21) / 1000)
    for k in (1, 2):
        run(shop, *options, f"--sqleval-shard={k}/2", report=f"shard{k}.json")
    out = str(shop.path / "all.json")
    assert main(["merge", str(shop.path / "shard1.json"), str(shop.path / "shard2.json"), "-o", out]) == 0
    merged = json.loads(open(out).read())
    assert merged["suites"][0].get("model") == whole["suites"][0]["model"]
    assert json.dumps(merged["suites"], sort_keys=True) == json.dumps(whole["suites"], sort_keys=True)


def test_sqleval_gate_exits_like_pytest_when_a_case_errored(shop):
    """A broken gold is the suite's error: pytest exits 1, and so does `sqleval gate` on its report (and the merge of
    its shards), even with no gate configured."""
    from pytest_sqleval.cli import main

    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        cases:
          - {{id: fine, gold: {NAMES}, predicted: {NAMES}}}
          - {{id: broken, gold: SELECT nope FROM shops, predicted: {NAMES}}}
        """)
    result, _ = run(shop)
    assert result.ret == 1
    path = str(shop.path / "report.json")
    assert main(["gate", path]) == 1
    assert main(["gate", path, "--threshold", "execution_accuracy=0"]) == 1
    shop.makefile(".sqleval.yaml", s=f"database: shop.sqlite\ncases:\n  - {{id: fine, gold: {NAMES}, predicted: {NAMES}}}\n")
    result, _ = run(shop)
    assert result.ret == 0 and main(["gate", path]) == 0
