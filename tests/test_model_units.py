"""The model package's pieces on their own: extraction, prompt templates, schema text, the cache, cost figures,
suite keys (no pytester, no network)."""

from __future__ import annotations

import json
import os
import threading

import pytest

from conftest import make_sqlite
from pytest_sqleval.errors import SuiteError
from pytest_sqleval.model.cache import ResponseCache, cache_key
from pytest_sqleval.model.config import ModelConfig, endpoint_without_credentials
from pytest_sqleval.model.extract import extract_sql, looks_like_sql
from pytest_sqleval.model.predictors import PredictorCase, run_predictor
from pytest_sqleval.model.prompt import DEFAULT_PROMPT, PromptSource, PromptTemplate, TemplateProblem, compiled
from pytest_sqleval.model.schema_text import render_schema, sample_rows, tables_from_engine, tables_from_spider
from pytest_sqleval.model.usage import percentile, prediction_lines, usage, usage_line


# --------------------------------------------------------------------------- extraction
@pytest.mark.parametrize("text, sql, step", [
    ("```sql\nSELECT 1\n```", "SELECT 1", "fenced"),
    ("Here:\n```sql\nSELECT 1\n```\nor better:\n```SQL\nSELECT 2\n```\nDone.", "SELECT 2", "fenced"),  # the last block
    ("```\nSELECT a FROM t\n```", "SELECT a FROM t", "fenced"),
    ("```python\nx = 1\n```\n```sql\nSELECT 3\n```\n```python\ny = 2\n```", "SELECT 3", "fenced"),  # SQL-tagged wins
    ("```sql\nSELECT 4", "SELECT 4", "fenced"),  # an unclosed final fence (a truncated answer)
    ("SQL: SELECT 5", "SELECT 5", "label"),
    ("Sure! The query is below.\nSELECT x\nFROM t\n\nThis returns x.", "SELECT x\nFROM t", "prose"),
    ("SELECT a\nFROM t\n\nWHERE a > 1", "SELECT a\nFROM t\n\nWHERE a > 1", "text"),  # a blank line inside SQL stays
    ("  with c as (select 1) select * from c  ", "with c as (select 1) select * from c", "text"),
    ("DELETE FROM t", "DELETE FROM t", "text"),  # SQL all the same: the guard rejects it later
])
def test_auto_extraction(text, sql, step):
    got = extract_sql(text, "auto")
    assert (got.sql, got.step, got.error_kind) == (sql, step, None)


def test_non_sql_answers_say_what_was_received():
    prose = extract_sql("I cannot answer that; the schema has no weather table. " * 3)
    assert prose.sql is None and prose.error_kind == "no_sql"
    assert prose.message == ("the model's answer contains no SQL: I cannot answer that; the schema has no weather "
                             "table. I cannot answer that; ...")  # the first 77 characters and "..."
    assert len(prose.message) == len("the model's answer contains no SQL: ") + 80
    assert extract_sql("```python\nprint(1)\n```").error_kind == "no_sql"
    assert extract_sql("   ").error_kind == "no_prediction"
    assert extract_sql("SELECT 1", "fenced").message == "no fenced code block in the model's answer: SELECT 1"


def test_raw_mode_keeps_the_text_and_a_fence_is_no_sql_on_every_dialect():
    assert extract_sql(" SELECT 1 ", "raw").sql == "SELECT 1"
    fenced = extract_sql("```sql\nSELECT 1\n```", "raw")
    assert fenced.error_kind == "no_sql" and fenced.message == "the model's answer contains no SQL: ```sql SELECT 1 ```"
    assert not looks_like_sql("```sql\nSELECT 1\n```") and not looks_like_sql("SQL: SELECT 1")
    assert looks_like_sql("(SELECT 1) UNION SELECT 2") and looks_like_sql("-- a comment\nSELECT 1")
    assert looks_like_sql("ATTACH 'x.db' AS x") and looks_like_sql("PRAGMA table_info(t)")


# --------------------------------------------------------------------------- prompts
def test_default_prompt_renders_every_placeholder():
    messages = compiled(DEFAULT_PROMPT).messages({
        "question": "How many shops?", "schema": "CREATE TABLE shops (id INTEGER);", "dialect": "duckdb",
        "evidence": "a shop is a row of shops", "history": [{"question": "All shops?", "sql": "SELECT * FROM shops"}],
        "examples": [{"question": "Any ticket?", "sql": "SELECT 1 FROM tickets LIMIT 1"}], "metadata": {}, "case_id": "x"})
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "You are an expert in duckdb SQL." in messages[0]["content"]
    assert messages[1]["content"] == (
        "Database schema:\nCREATE TABLE shops (id INTEGER);\n\n"
        "Examples:\nQuestion: Any ticket?\nSQL: SELECT 1 FROM tickets LIMIT 1\n\n"
        "Earlier questions in this conversation, with their SQL:\nQ1: All shops?\nSQL1: SELECT * FROM shops\n\n"
        "External knowledge: a shop is a row of shops\n\n"
        "Question: How many shops?")


def test_a_template_without_blocks_is_one_user_message_and_unknown_names_are_errors():
    template = PromptTemplate(PromptSource("Q: {{ question }} ({{ metadata.source }})", "inline"))
    assert template.messages({"question": "q", "metadata": {"source": "bird"}}) == [{"role": "user", "content": "Q: q (bird)"}]
    with pytest.raises(TemplateProblem, match="unknown placeholder qestion, shema"):
        PromptTemplate(PromptSource("{{ qestion }} {{ shema }}", "inline"))
    with pytest.raises(TemplateProblem, match="line 1 of the template"):
        PromptTemplate(PromptSource("{% if question %}", "inline"))
    with pytest.raises(TemplateProblem, match="'dict object' has no attribute 'nope'"):  # StrictUndefined
        template = PromptTemplate(PromptSource("{{ metadata.nope }}", "inline"))
        template.messages({"metadata": {}})


# --------------------------------------------------------------------------- schema text
@pytest.fixture
def shop_engine(tmp_path):
    from pytest_sqleval.execution.engines import EngineFactory

    factory = EngineFactory(build_dir=tmp_path / "build")
    from pytest_sqleval.fixtures import _spec

    yield factory.engine(_spec(make_sqlite(tmp_path / "shop.sqlite"), None))
    factory.close()


def test_schema_formats_from_a_live_database(shop_engine):
    tables = tables_from_engine(shop_engine)
    assert render_schema(tables, "compact") == (
        "shops(id, name)\ntickets(id, shop_id -> shops.id, aircraft, hours, status)")
    assert render_schema(tables, "spider") == (
        "Table shops, columns = [*, id, name]\nTable tickets, columns = [*, id, shop_id, aircraft, hours, status]\n"
        "Foreign_keys = [tickets.shop_id = shops.id]\nPrimary_keys = [shops.id, tickets.id]")
    ddl = render_schema(tables, "ddl", rows=sample_rows(shop_engine, tables, 2, dialect="sqlite", timeout=5))
    assert ddl.startswith("CREATE TABLE shops (\n  id INTEGER PRIMARY KEY,\n  name TEXT\n);\n"
                          "/* 2 example rows from shops:\nid | name\n1 | 'Avionics'\n2 | 'Engines'\n*/")
    assert "  FOREIGN KEY (shop_id) REFERENCES shops(id)\n);" in ddl


def test_schema_from_spider_tables_json(tmp_path):
    entry = {"db_id": "concert", "table_names_original": ["singer", "concert"],
             "column_names_original": [[-1, "*"], [0, "Singer_ID"], [0, "Name"], [1, "concert_ID"], [1, "Singer_ID"]],
             "column_types": ["text", "number", "text", "number", "number"], "primary_keys": [1, 3],
             "foreign_keys": [[4, 1]]}
    path = tmp_path / "tables.json"
    path.write_text(json.dumps([entry]))
    tables = tables_from_spider(path, "concert")
    assert render_schema(tables, "ddl") == (
        "CREATE TABLE singer (\n  Singer_ID NUMBER PRIMARY KEY,\n  Name TEXT\n);\n"
        "CREATE TABLE concert (\n  concert_ID NUMBER PRIMARY KEY,\n  Singer_ID NUMBER,\n"
        "  FOREIGN KEY (Singer_ID) REFERENCES singer(Singer_ID)\n);")


# --------------------------------------------------------------------------- the cache
def test_cache_key_ignores_credentials_and_covers_what_was_asked():
    assert endpoint_without_credentials("https://user:secret@api.example.com/v1/?key=abc") == "https://api.example.com/v1"
    base = cache_key("http://h/v1", "m", [{"role": "user", "content": "q"}], {"temperature": 0})
    assert base == cache_key("http://h/v1", "m", [{"role": "user", "content": "q"}], {"temperature": 0})
    assert len({base, cache_key("http://h/v1", "m2", [{"role": "user", "content": "q"}], {"temperature": 0}),
                cache_key("http://h/v1", "m", [{"role": "user", "content": "q2"}], {"temperature": 0}),
                cache_key("http://h/v1", "m", [{"role": "user", "content": "q"}], {"temperature": 0.5}),
                cache_key("http://h2/v1", "m", [{"role": "user", "content": "q"}], {"temperature": 0})}) == 5


def test_cache_modes_and_concurrent_atomic_writes(tmp_path):
    cache = ResponseCache(tmp_path / "c", "use")
    assert cache.get("ab" * 32) is None
    errors = []

    def write(n):
        try:
            for _ in range(20):
                cache.put("ab" * 32, {"n": n}, {"text": f"SELECT {n}" + " " * 5000})
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cache.get("ab" * 32)["text"].split()[0] == "SELECT"  # one whole file, never a mix
    assert os.listdir(tmp_path / "c" / "ab") == ["ab" * 32 + ".json"]  # no temporary files left
    assert ResponseCache(tmp_path / "c", "refresh").get("ab" * 32) is None
    ResponseCache(tmp_path / "c", "only").put("cd" * 32, {}, {"text": "x"})
    assert not (tmp_path / "c" / "cd").exists()
    (tmp_path / "c" / "ab" / ("ab" * 32 + ".json")).write_text("{broken")
    assert cache.get("ab" * 32) is None
    with pytest.raises(ValueError, match="unknown cache mode 'sometimes'"):
        ResponseCache(tmp_path, "sometimes")


# --------------------------------------------------------------------------- predictors and cost
def _case(**kwargs) -> PredictorCase:
    return PredictorCase(id="a", suite="s", question="q", schema="", dialect="sqlite", **kwargs)


def test_run_predictor_normalises_answers_and_prices_tokens():
    config = ModelConfig(name="m", price_per_1k_input=0.5, price_per_1k_output=1.5)
    result = run_predictor(lambda c: {"sql": "```sql\nSELECT 1\n```", "tokens": {"prompt": 1000, "completion": 200},
                                      "confidence": 0.5}, _case(), extract="auto", label="x", config=config)
    assert (result.sql, result.extraction, result.extra) == ("SELECT 1", {"mode": "auto", "step": "fenced"}, {"confidence": 0.5})
    assert result.cost == pytest.approx(0.5 + 0.3)  # 1000 × 0.5/1000 + 200 × 1.5/1000
    assert run_predictor(lambda c: None, _case(), extract="auto", label="x", config=None).error_kind == "no_prediction"
    assert run_predictor(lambda c: 42, _case(), extract="auto", label="x", config=None).error_message == (
        "the predictor returned int; return SQL text, None, or a mapping with 'sql'")
    assert run_predictor(lambda c: {"query": "x"}, _case(), extract="auto", label="x", config=None).error_message == (
        "the predictor's mapping has no 'sql' key (keys: query)")
    cached = run_predictor(lambda c: {"sql": "SELECT 1", "cached": True, "tokens": {"prompt": 10, "completion": 1}},
                           _case(), extract="auto", label="x", config=config)
    assert cached.cost == 0.0  # a cache hit spends nothing


def test_usage_figures_by_hand():
    records = [
        {"prediction_source": "model", "model": "m", "cached": False, "latency_s": v, "cost": 0.01,
         "tokens": {"prompt": 100, "completion": 10}} for v in (0.1, 0.2, 0.3, 0.4, 2.0)
    ] + [{"prediction_source": "model", "model": "m", "cached": True, "latency_s": 0.0, "cost": 0.0,
          "tokens": {"prompt": 100, "completion": 10}},
         {"prediction_source": "model", "model": "m", "cached": False, "latency_s": 1.0, "cost": None, "tokens": None,
          "error": {"kind": "model_error", "message": "HTTP 500"}},
         {"prediction_source": "suite"}]
    block = usage(records)
    assert block == {"model": "m", "cases": 7, "calls": 6, "cache_hits": 1, "errors": 1,
                     "tokens": {"prompt": 500, "completion": 50},
                     "latency_s": {"p50": 0.3, "p95": 2.0}, "cost": 0.05}
    # nearest rank: p50 of (0.1 0.2 0.3 0.4 1.0 2.0) is the 3rd value, p95 the 6th
    assert percentile([0.1, 0.2, 0.3, 0.4, 1.0, 2.0], 50) == 0.3 and percentile([5.0], 95) == 5.0
    assert usage_line(block) == ("model m: 6 calls, 1 cache hits, 1 errors | tokens 500 prompt + 50 completion"
                                 " | latency p50 0.300 s, p95 2.000 s | cost $0.0500")
    assert usage([{"prediction_source": "suite"}]) is None


def test_prediction_lines_address_turns_and_suites():
    records = [{"suite": "a", "id": "t/1", "prediction_source": "model", "predicted": "SELECT 1", "raw_output": "SELECT 1",
                "model": "m", "latency_s": 0.1, "tokens": None},
               {"suite": "a", "id": "x", "prediction_source": "model", "predicted": None, "raw_output": "hmm",
                "model": "m", "latency_s": 0.1, "tokens": None, "error": {"kind": "no_sql", "message": "no SQL: hmm"}}]
    assert [ln["id"] for ln in prediction_lines(records)] == ["t/1", "x"]
    assert prediction_lines(records)[1]["error"] == {"kind": "no_sql", "message": "no SQL: hmm"}
    two = records + [{"suite": "b", "id": "y", "prediction_source": "suite"}]
    assert [ln["id"] for ln in prediction_lines(two)] == ["a::t/1", "a::x"]


# --------------------------------------------------------------------------- suite keys
def _load(write_suite, shop_db, body: str):
    from pytest_sqleval.loader import load_suite

    return load_suite(write_suite(f"database: {shop_db.name}\n{body}cases:\n  - {{id: a, question: q, gold: SELECT 1}}\n"))


def test_suite_model_keys(write_suite, shop_db, tmp_path):
    (tmp_path / "shots.jsonl").write_text('{"question": "q1", "sql": "SELECT 1"}\n')
    suite = _load(write_suite, shop_db, "model: {name: m, temperature: 0.3, params: {top_p: 0.9}, price_per_1k_input: 1}\n"
                  "schema_format: spider\nsample_rows: 3\nhistory: gold\nexamples: {file: shots.jsonl, count: 1}\n"
                  "extract: fenced\n")
    spec = suite.model
    assert (spec.model.name, spec.model.temperature, spec.model.params) == ("m", 0.3, {"top_p": 0.9})
    assert spec.model.parameters == {"temperature": 0.3, "top_p": 0.9}
    assert (spec.schema_format, spec.sample_rows, spec.history, spec.extract) == ("spider", 3, "gold", "fenced")
    assert spec.examples.file == tmp_path / "shots.jsonl" and spec.examples.count == 1
    assert _load(write_suite, shop_db, "").model is None
    cli = ModelConfig(name="cli-model", temperature=None)
    merged = cli.merged_over(spec.model).merged_over(ModelConfig(name="ini", max_tokens=9))
    assert (merged.name, merged.temperature, merged.max_tokens) == ("cli-model", 0.3, 9)


@pytest.mark.parametrize("body, message", [
    ("model: {name: m, temprature: 0}\n", "unknown key 'temprature' in `model:`"),
    ("model: {name: m, max_tokens: 0}\n", "`model.max_tokens` must be a whole number > 0"),
    ("model: {name: m, temperature: .nan}\n", "`model.temperature` must be a number >= 0"),
    ("model: {name: m, timeout: .inf}\n", "`model.timeout` must be a number > 0"),
    ("model: {name: m, price_per_1k_output: .nan}\n", "`model.price_per_1k_output` must be a number >= 0"),
    ("model: {name: m, url: \"http://h/${SQLEVAL_TEST_UNSET_VAR}/v1\"}\n",
     "environment variable SQLEVAL_TEST_UNSET_VAR is not set (in `model.url`)"),
    ("schema_format: sql\n", "unknown schema_format 'sql'"),
    ("history: all\n", "unknown history mode 'all'"),
    ("extract: json\n", "unknown extract mode 'json'"),
    ("examples: missing.jsonl\n", "examples file not found"),
    ("prompt: prompts/none.j2\n", "prompt file not found"),
    ("prompt: \"{{ question }} {{ answer }}\"\n", "bad `prompt:` template: unknown placeholder answer"),
])
def test_bad_model_keys_name_the_line_and_the_fix(write_suite, shop_db, body, message, monkeypatch):
    monkeypatch.delenv("SQLEVAL_TEST_UNSET_VAR", raising=False)
    with pytest.raises(SuiteError) as info:
        _load(write_suite, shop_db, body)
    assert message in info.value.message and info.value.line == 2
    if "temprature" in body:
        assert "did you mean `temperature`?" in info.value.fix


def test_evidence_is_a_case_key(write_suite, shop_db):
    from pytest_sqleval.loader import load_suite

    suite = load_suite(write_suite(f"database: {shop_db.name}\ncases:\n"
                                   "  - {id: a, question: q, evidence: 'x means y', gold: SELECT 1}\n"))
    assert suite.cases[0].evidence == "x means y"


def test_model_url_expands_variables_with_defaults(write_suite, shop_db, monkeypatch):
    monkeypatch.setenv("SQLEVAL_TEST_HOST", "127.0.0.1:8000")
    suite = _load(write_suite, shop_db, 'model: {name: m, url: "http://${SQLEVAL_TEST_HOST}/${SQLEVAL_TEST_V:-v1}"}\n')
    assert suite.model.model.url == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize("text", ["nan", "inf", "-1", "x"])
def test_a_price_on_the_command_line_must_be_finite_and_not_negative(text):
    import argparse

    from pytest_sqleval.model_plugin import _price

    with pytest.raises(argparse.ArgumentTypeError):
        _price(text)

