"""QA of the model in the loop (issue 9), against the loopback chat-completions server (tests/chat_server.py)."""

from __future__ import annotations

import json

import pytest

from chat_server import chat_fixture
from conftest import require_module
from model_support import by_id, run, shop_fixture
from pytest_sqleval.model.config import ModelConfig
from pytest_sqleval.model.predictors import PredictorCase, run_predictor

require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")

chat = chat_fixture()
shop = shop_fixture()

ONE_CASE = ("database: shop.sqlite\nmodel: {{name: test-model, url: '{url}'}}\ncases:\n"
            "  - {{id: a, question: 'PLAIN a', gold: SELECT count(*) FROM shops}}\n")


def test_the_query_string_of_the_model_url_is_sent_and_is_part_of_the_cache_key(shop, chat):
    # Azure-style endpoints choose the API version in the query string: two versions are two endpoints
    server = chat(default="SELECT count(*) FROM shops")
    shop.makefile(".sqleval.yaml", shop=ONE_CASE.format(url=server.url + "?api-version=2024-02-01&api-key=s3cr3t-k3y"))
    result, report = run(shop)
    assert result.ret == 0, result.stdout.str()
    assert by_id(report)["a"]["cached"] is False and by_id(report)["a"]["outcome"] == "passed"
    assert [r.path for r in server.requests] == ["/v1/chat/completions?api-version=2024-02-01&api-key=s3cr3t-k3y"]
    assert report["run"]["model"]["endpoint"] == server.url + "?api-version=2024-02-01"  # the key is not named
    cache_files = [p.read_text() for p in (shop.path / ".sqleval_cache").rglob("*.json")]
    assert len(cache_files) == 1 and "s3cr3t" not in cache_files[0] and "api-version=2024-02-01" in cache_files[0]
    # another api-version: not the first one's answer
    shop.makefile(".sqleval.yaml", shop=ONE_CASE.format(url=server.url + "?api-version=2025-01-01"))
    _, report2 = run(shop)
    assert by_id(report2)["a"]["cached"] is False and server.count == 2
    # the same api-version with another key: the cached answer
    shop.makefile(".sqleval.yaml", shop=ONE_CASE.format(url=server.url + "?api-key=other-key&api-version=2025-01-01"))
    _, report3 = run(shop)
    assert by_id(report3)["a"]["cached"] is True and server.count == 2


def _case() -> PredictorCase:
    return PredictorCase(id="a", suite="s", question="q", schema="", dialect="sqlite")


@pytest.mark.parametrize("value, expected", [("false", False), ("False", False), ("no", False), (0, False),
                                             ("true", True), ("yes", True), (1, True), (True, True)])
def test_a_predictors_cached_flag_given_as_text_is_read_as_what_it_says(value, expected):
    config = ModelConfig(name="m", price_per_1k_input=1.0, price_per_1k_output=1.0)
    result = run_predictor(lambda c: {"sql": "SELECT 1", "cached": value, "tokens": {"prompt": 1000, "completion": 0}},
                           _case(), extract="auto", label="x", config=config)
    assert result.error_kind is None and result.cached is expected
    assert result.cost == (0.0 if expected else 1.0)


@pytest.mark.parametrize("value", ["maybe", 2, [], ""])
def test_a_predictors_cached_flag_that_is_not_a_yes_or_no_is_a_clear_model_error(value):
    result = run_predictor(lambda c: {"sql": "SELECT 1", "cached": value}, _case(), extract="auto", label="x",
                           config=None)
    assert result.error_kind == "model_error" and result.sql is None
    assert result.error_message.startswith(f"the predictor's 'cached' is {value!r}, not true or false; fix:")


def test_cached_false_read_from_a_yaml_answers_file_is_a_call_not_a_cache_hit(shop):
    (shop.path / "answers.yaml").write_text('a: {sql: "SELECT count(*) FROM shops", cached: "false",'
                                            ' tokens: {prompt: 100, completion: 10}}\n')
    shop.makeconftest("""
        import pytest, yaml

        @pytest.fixture(scope="session")
        def sqleval_predictor():
            answers = yaml.safe_load(open("answers.yaml"))
            return lambda case: answers[case.id]
        """)
    shop.makefile(".sqleval.yaml", shop="database: shop.sqlite\nmodel: {name: m, price_per_1k_input: 1}\ncases:\n"
                  "  - {id: a, question: 'How many shops?', gold: SELECT count(*) FROM shops}\n")
    result, report = run(shop)
    assert result.ret == 0, result.stdout.str()
    case = by_id(report)["a"]
    assert case["cached"] is False and case["cost"] == pytest.approx(0.1)
    usage = report["suites"][0]["model"]
    assert (usage["calls"], usage["cache_hits"], usage["tokens"]["prompt"]) == (1, 0, 100)
    assert json.dumps(report)  # a plain report


def test_under_worksteal_no_case_is_called_twice(shop, chat):
    # a worker's look-ahead called the model for queued items that the controller then stole for the other worker
    server = chat(default="SELECT count(*) FROM shops")
    shop.makefile(".sqleval.yaml", shop="database: shop.sqlite\nmodel: test-model\ncases:\n" + "".join(
        f'  - {{id: c{n}, question: "PLAIN {n}", gold: SELECT count(*) FROM shops}}\n' for n in range(24)))
    result, report = run(shop, "-n", "2", "--dist", "worksteal", "--sqleval-cache-mode", "off")
    assert result.ret == 0, result.stdout.str()
    asked = [r.messages[-1]["content"].rpartition("Question: ")[2] for r in server.requests]
    assert sorted(asked) == sorted(f"PLAIN {n}" for n in range(24))
    assert report["suites"][0]["model"]["calls"] == 24


@pytest.mark.parametrize("body, message", [
    ('{"error": {"message": "upstream overloaded", "type": "server_error"}}',
     "the endpoint answered with an error: upstream overloaded"),
    ('{"error": "no healthy upstream"}', "the endpoint answered with an error: no healthy upstream"),
    ('{"choices": {"0": {"message": {"content": "SELECT 1"}}}}', "the endpoint's answer has no message: "),
])
def test_a_200_answer_without_a_message_is_a_model_error_with_the_servers_words(body, message):
    # gateways (OpenRouter, LiteLLM proxies) may answer 200 with an error body; `choices` as a mapping raised KeyError
    from chat_server import ChatServer, Malformed
    from pytest_sqleval.model.client import ChatClient, ModelCallError

    with ChatServer({"Q": [Malformed(body)]}) as server:
        client = ChatClient(ModelConfig(name="test-model", url=server.url, retries=0, timeout=5))
        with pytest.raises(ModelCallError) as caught:
            client.complete([{"role": "user", "content": "Question: Q"}], {"temperature": 0})
    assert caught.value.message.startswith(message) and not caught.value.fatal


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_cases_pytest_skips_are_never_sent_to_the_model(shop, chat, workers):
    # the look-ahead called the model for the next items, skipped ones too: calls paid for and never used
    server = chat(default="SELECT count(*) FROM shops")
    shop.makefile(".sqleval.yaml", shop="database: shop.sqlite\nmodel: test-model\ncases:\n" + "".join(
        f'  - {{id: c{n}, question: "PLAIN {n}", gold: SELECT count(*) FROM shops}}\n' for n in range(8)))
    shop.makeconftest("""
        import pytest

        MARKS = {"c2": pytest.mark.skip(reason="not today"), "c4": pytest.mark.skipif("1 == 1", reason="no"),
                 "c5": pytest.mark.xfail(run=False, reason="known"), "c6": pytest.mark.skipif(False, reason="runs")}

        def pytest_collection_modifyitems(items):
            for item in items:
                if item.name in MARKS:
                    item.add_marker(MARKS[item.name])
        """)
    result, report = run(shop, "--sqleval-cache-mode", "off", *workers)
    assert result.parseoutcomes() == {"passed": 5, "skipped": 2, "xfailed": 1}, result.stdout.str()
    asked = sorted(r.messages[-1]["content"].rpartition("Question: ")[2] for r in server.requests)
    assert asked == [f"PLAIN {n}" for n in (0, 1, 3, 6, 7)]
    assert report["suites"][0]["model"]["calls"] == 5


def test_a_case_with_expected_rows_and_no_gold_is_never_a_few_shot_example(shop, chat):
    server = chat(default="SELECT count(*) FROM shops")
    shop.makefile(".sqleval.yaml", shop="""
        database: shop.sqlite
        model: test-model
        examples: 2
        cases:
          - {id: a, question: "PLAIN a", gold: SELECT count(*) FROM shops}
          - {id: b, question: "PLAIN b", expected: {columns: [n], rows: [[2]]}}
          - {id: c, question: "PLAIN c", gold: SELECT name FROM shops}
        """)
    result, _ = run(shop, "--sqleval-cache-mode", "off")
    assert result.ret in (0, 1), result.stdout.str()
    prompts = {r.messages[-1]["content"].rpartition("Question: ")[2]: r.messages[-1]["content"] for r in server.requests}
    assert "Question: PLAIN b\nSQL:" not in "".join(prompts.values())  # an empty answer taught as an example
    assert "Question: PLAIN a\nSQL: SELECT count(*) FROM shops\nQuestion: PLAIN c\nSQL: SELECT name FROM shops" in prompts["PLAIN b"]
    assert "Examples:\nQuestion: PLAIN c\nSQL: SELECT name FROM shops\n\n" in prompts["PLAIN a"]


def test_history_off_reads_as_none_and_a_yaml_boolean_mode_is_named_as_such(shop):
    # `history: off` is YAML's false: it was "unknown history mode False", naming a value the user never wrote
    from pytest_sqleval.errors import SuiteError
    from pytest_sqleval.model.config import parse_suite_keys

    path = shop.path / "s.sqleval.yaml"
    assert parse_suite_keys(path, {"history": False}).history == "none"
    with pytest.raises(SuiteError, match=r"unknown extract mode False \(YAML reads an unquoted yes/no/on/off/true/false "
                                         r"as a boolean\)"):
        parse_suite_keys(path, {"extract": False})
    shop.makefile(".sqleval.yaml", s="database: shop.sqlite\nhistory: off\ncases:\n  - id: talk\n    interaction:\n"
                  "      - {question: q1, gold: SELECT 1, predicted: SELECT 1}\n")
    result, report = run(shop)
    assert result.ret == 0, result.stdout.str()


@pytest.mark.parametrize("prompt, extra", [
    ("prompts/sql.tpl", "(the text 'prompts/sql.tpl'; if it is a file path, no such file exists)"),
    ("'{{ schema }} Answer in {{ dialect }} SQL.'", ""),
])
def test_a_prompt_without_any_placeholder_of_the_case_is_an_error_before_any_call(shop, chat, prompt, extra):
    # a missing template file with another suffix was read as the prompt's text: every case sent "prompts/sql.tpl"
    # (and, with the cache, every case after the first got the first one's answer)
    server = chat(default="SELECT count(*) FROM shops")
    shop.makefile(".sqleval.yaml", s=f"database: shop.sqlite\nmodel: test-model\nprompt: {prompt}\ncases:\n"
                  "  - {id: a, question: PLAIN a, gold: SELECT count(*) FROM shops}\n")
    result, _ = run(shop)
    output = result.stdout.str()
    assert result.ret != 0 and server.count == 0, output
    assert ("s.sqleval.yaml:3: bad `prompt:` template: the prompt template never uses {{ question }} (nor any other "
            "placeholder of the case: evidence, history, examples, metadata, case_id): every case would send the same "
            f"prompt{' ' + extra if extra else ''}") in output
    assert "fix: write {{ question }} where the question goes" in output


def test_an_absurd_token_count_from_the_endpoint_is_unknown_not_an_overflow(tmp_path):
    # a JSON integer past a float's range (10**400) raised OverflowError from math.isfinite while reading the usage
    from chat_server import ChatServer, Malformed
    from pytest_sqleval.model.cache import ResponseCache
    from pytest_sqleval.model.predictors import BuiltinPredictor

    huge = "1" + "0" * 400
    body = ('{"choices": [{"message": {"content": "SELECT 1"}}], "usage": {"prompt_tokens": %s, "completion_tokens": 2,'
            ' "prompt_tokens_details": {"cached_tokens": %s}}}' % (huge, huge))
    with ChatServer({"Q": [Malformed(body)]}) as server:
        config = ModelConfig(name="test-model", url=server.url, retries=0, timeout=5, price_per_1k_input=1.0,
                             price_per_1k_output=1.0)
        case = PredictorCase(id="a", suite="s", question="Q", schema="", dialect="sqlite", model=config,
                             messages=({"role": "user", "content": "Question: Q"},))
        result = run_predictor(BuiltinPredictor(ResponseCache(tmp_path, "off")), case, extract="auto", label="m",
                               config=config)
    assert result.error_kind is None and result.sql == "SELECT 1"
    assert result.tokens == {"prompt": None, "completion": 2} and result.cost is None
