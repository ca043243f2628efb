"""A second independent look at issue 9 (the model in the loop) and at `sqleval generate` (issue 14), with inputs
the first look (test_model_gate_new_inputs.py, test_assertions_datasets_new_inputs.py) did not try: schemas with
quoted, reserved and mixed-case names on three engines, every template placeholder, predictor modules that fail
to import, answers without token counts, an API key the server echoes, the cache key's other fields, and model
answers that reason before their JSON. Run as a user runs them: `pytest --sqleval` through pytester against the
loopback chat server (tests/chat_server.py), serial and -n 2."""

from __future__ import annotations

import json
import sqlite3

import pytest

from chat_server import Malformed, Status, chat_fixture
from conftest import make_sqlite, require_module
from model_support import by_id, run, shop_fixture

openai = require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
# Build one SDK client at collection (see test_model_gate_new_inputs.py: pytester's in-process runs forget modules
# first imported inside them, and the SDK would no longer recognise its own connection errors).
openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused").chat.completions

NAMES = "SELECT name FROM shops"


chat = chat_fixture()
shop = shop_fixture()


# --------------------------------------------------------------------------- the schema the model is shown
ODD_SCHEMA = """
CREATE TABLE "Shops" ("Id" INTEGER PRIMARY KEY, "Name" TEXT);
CREATE TABLE "order" ("id" INTEGER PRIMARY KEY, "group" TEXT, "Shop Id" INTEGER REFERENCES "Shops"("Id"));
""" + "".join(f"CREATE TABLE t{n:02d} (id INTEGER PRIMARY KEY, v INTEGER);\n" for n in range(25)) + """
INSERT INTO "Shops" VALUES (1, 'Hangar 1');
INSERT INTO "order" VALUES (1, 'a', 1);
"""
ODD_TABLES = {"Shops": ["Id", "Name"], "order": ["id", "group", "Shop Id"],
              **{f"t{n:02d}": ["id", "v"] for n in range(25)}}
SCHEMA_CAPTURE = """
import json, pytest

@pytest.fixture(scope="session")
def sqleval_predictor():
    def predict(case):
        with open(f"schema-{case.schema_format}.txt", "w", encoding="utf-8") as handle:
            handle.write(case.schema)
        return 'SELECT "Name" FROM "Shops"'
    return predict
"""


@pytest.mark.parametrize("engine", ["sqlite", "duckdb", "postgres"])
def test_the_ddl_schema_names_every_table_as_the_engine_knows_it(pytester, engine, request):
    """Reserved words (`order`, `group`), spaces and mixed case (`"Shops"`, which PostgreSQL keeps apart from
    `shops`): the DDL shown to the model is DDL of the dialect that creates the same tables and columns, with
    the foreign key, for all 27 tables."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

    if engine == "duckdb":
        request.getfixturevalue("duckdb_available")
        url = "duckdb://"
    elif engine == "postgres":
        url = request.getfixturevalue("postgres_url")
    else:
        url = "sqlite://"
    (pytester.path / "odd.sql").write_text(ODD_SCHEMA, encoding="utf-8")
    pytester.makeconftest(SCHEMA_CAPTURE)
    pytester.makefile(".sqleval.yaml", odd=f"""
        database: {{url: {json.dumps(url)}, setup: [odd.sql]}}
        sample_rows: 1
        cases:
          - {{id: a, question: which shops?, gold: 'SELECT "Name" FROM "Shops"'}}
        """)
    result, report = run(pytester)
    assert by_id(report)["a"]["outcome"] == "passed", result.stdout.str()
    ddl = (pytester.path / "schema-ddl.txt").read_text(encoding="utf-8")
    dialect = {"postgres": "postgres", "duckdb": "duckdb", "sqlite": "sqlite"}[engine]
    created, references = {}, []
    for statement in sqlglot.parse(ddl, read=dialect):
        if statement is None or isinstance(statement, exp.Semicolon):  # the rows' comment after a `;`
            continue
        assert isinstance(statement, exp.Create), ddl
        tree = normalize_identifiers(statement, dialect=dialect)
        schema = tree.this
        columns = [c.this.name for c in schema.expressions if isinstance(c, exp.ColumnDef)]
        created[schema.this.name] = columns
        for key in tree.find_all(exp.ForeignKey):
            target = key.args["reference"].this
            references.append((schema.this.name, [c.name for c in key.expressions], target.this.name,
                               [c.name for c in target.expressions]))
    fold = (lambda s: s) if engine == "postgres" else str.lower  # PostgreSQL folds unquoted names to lower case
    assert created == {fold(t): [fold(c) for c in cols] for t, cols in ODD_TABLES.items()}, ddl
    assert references == [(fold("order"), [fold("Shop Id")], fold("Shops"), [fold("Id")])], ddl
    # sample rows are read from the quoted tables too
    assert "1 example rows from Shops:\nId | Name\n1 | 'Hangar 1'" in ddl, ddl
    assert "1 example rows from order:\nid | group | Shop Id\n1 | 'a' | 1" in ddl, ddl
    if engine == "sqlite":  # the text runs as it is
        sqlite3.connect(":memory:").executescript(ddl)
    elif engine == "duckdb":
        import duckdb

        duckdb.connect().execute(ddl)


# --------------------------------------------------------------------------- your own predictor's module
@pytest.mark.parametrize("source, message", [
    ("def predict(case)\n    return 'SELECT 1'\n", "SyntaxError: expected ':' (broken.py, line 1)"),
    ("raise RuntimeError('no GPU found')\n", "RuntimeError: no GPU found"),
])
def test_a_predictor_module_that_fails_to_import_is_a_usage_error(shop, source, message):
    """Not an INTERNALERROR traceback: one line naming the spec, the module's error (file and line for a syntax
    error) and the fix."""
    (shop.path / "broken.py").write_text(source, encoding="utf-8")
    shop.makefile(".sqleval.yaml", s=f"database: shop.sqlite\ncases:\n  - {{id: a, question: q, gold: {NAMES}}}\n")
    result, _ = run(shop, "--sqleval-predictor=broken:predict")
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, err
    assert "INTERNALERROR" not in err + result.stdout.str()
    assert f"--sqleval-predictor 'broken:predict': cannot import broken: {message}" in err


# --------------------------------------------------------------------------- cost without token counts
def test_an_answer_without_usage_has_no_cost_rather_than_a_zero_one(shop, chat):
    """A server that sends no `usage` (some llama.cpp/Ollama builds): the tokens are unknown, so the cost is
    unknown (null), not $0; a case whose server did count them is priced, and the suite's cost says it is partial."""
    bare = {"id": "x", "object": "chat.completion", "created": 0, "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": NAMES}}]}
    cached_usage = dict(bare, usage={"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100,
                                     "prompt_tokens_details": {"cached_tokens": 800}})
    chat({"BARE": [Malformed(json.dumps(bare))], "COUNTED": [Malformed(json.dumps(cached_usage))]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: {{name: test-model, price_per_1k_input: 2.0, price_per_1k_output: 10.0}}
        cases:
          - {{id: bare, question: BARE which shops?, gold: {NAMES}}}
          - {{id: counted, question: COUNTED which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop)
    cases = by_id(report)
    assert cases["bare"]["outcome"] == "passed"
    assert cases["bare"]["tokens"] == {"prompt": None, "completion": None}
    assert cases["bare"]["cost"] is None
    # the cached count is recorded; without price_per_1k_cached_input it is priced as the rest of the prompt
    assert cases["counted"]["tokens"] == {"prompt": 1000, "completion": 100, "cached_prompt": 800}
    assert cases["counted"]["cost"] == pytest.approx(3.0)
    block = report["suites"][0]["model"]
    assert block["cost"] == pytest.approx(3.0) and block["calls"] == 2 and block["calls_without_tokens"] == 1
    assert "tokens 1000 prompt (800 cached) + 100 completion (1 calls without token counts) |" in result.stdout.str()
    assert "cost $3.0000" in result.stdout.str()


# --------------------------------------------------------------------------- the API key
def test_the_api_key_never_reaches_an_output_even_when_the_server_echoes_it(shop, chat, monkeypatch):
    """A proxy that answers 401 quoting the key it got: the stop message masks it; and a normal run writes the
    key to no cache file, report, saved prediction or terminal line."""
    secret = "sk-live-QA2-9f8e7d6c5b4a"
    server = chat({"ECHO": [Status(401, f"Invalid API key: {secret}")]}, default=NAMES)
    monkeypatch.setenv("MY_LLM_KEY", secret)
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: {{name: test-model, key_env: MY_LLM_KEY, retries: 0}}
        cases:
          - {{id: a, question: which shops?, gold: {NAMES}}}
          - {{id: b, question: and again which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop, "--sqleval-save-predictions=saved.jsonl", "-v")
    assert result.ret == 0 and server.requests[0].authorization == f"Bearer {secret}"
    written = [p for p in shop.path.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")]
    assert len([p for p in written if ".sqleval_cache" in p.parts]) == 2
    for path in written:
        assert secret not in path.read_text(encoding="utf-8"), path
    assert secret not in result.stdout.str() + result.stderr.str()
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: {{name: test-model, key_env: MY_LLM_KEY, retries: 0}}
        cases:
          - {{id: echo, question: ECHO which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "the endpoint refused the API key" in out and "Invalid API key: ***" in out
    assert secret not in out and secret not in json.dumps(report)


# --------------------------------------------------------------------------- prompt templates
def test_a_prompt_file_with_a_syntax_error_names_the_file_and_its_line(shop):
    (shop.path / "prompts").mkdir()
    (shop.path / "prompts" / "sql.j2").write_text(
        "Schema:\n{{ schema }}\n{% for e in examples %}\nQ: {{ e.question }}\n{% endfor\nQuestion: {{ question }}\n",
        encoding="utf-8")
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        prompt: prompts/sql.j2
        cases:
          - {{id: a, question: q, gold: {NAMES}}}
        """)
    result, _ = run(shop)
    out = result.stdout.str()
    assert "s.sqleval.yaml:3: bad `prompt:` template" in out
    assert f"{shop.path / 'prompts' / 'sql.j2'}:6: expected token 'end of statement block'" in out


EVERY_PLACEHOLDER = """\
{% block system %}Write {{ dialect }} for case {{ case_id }} ({{ metadata.get('team', '-') }}).{% endblock %}
{% block user %}
{{ schema }}
{% for e in examples %}EXAMPLE {{ e.question }} => {{ e.sql }}
{% endfor %}
{% for t in history %}TURN {{ loop.index }} {{ t.question }} => {{ t.sql }}
{% endfor %}
KNOWLEDGE {{ evidence if evidence else "-" }}
Question: {{ question }}
{% endblock %}
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_every_placeholder_reaches_the_server(shop, chat, workers):
    """A template file using every documented placeholder, unicode and a 20,000-character question: examples
    from a YAML file (`count:`), the gold SQL of earlier turns (`history: gold`), evidence, metadata, case id,
    the compact schema with its foreign key."""
    long_tail = "ü" * 20000
    server = chat({"first 🛫": ["SELECT id FROM shops"]}, default=NAMES)
    (shop.path / "sql.j2").write_text(EVERY_PLACEHOLDER, encoding="utf-8")
    (shop.path / "shots.yaml").write_text(
        "- {question: 'Wie viele Werkstätten? ✈', sql: 'SELECT count(*) FROM shops'}\n"
        "- {question: second, sql: SELECT 2}\n- {question: third, sql: SELECT 3}\n", encoding="utf-8")
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        prompt: sql.j2
        schema_format: compact
        history: gold
        examples: {{file: shots.yaml, count: 2}}
        cases:
          - id: solo
            question: "Längste Frage {long_tail}"
            evidence: open means status = 'open'
            metadata: {{team: Wartung}}
            gold: {NAMES}
          - id: talk
            interaction:
              - {{question: "first 🛫", gold: SELECT id FROM shops}}
              - {{question: "second 🛬", gold: {NAMES}}}
        """)
    result, report = run(shop, *workers)
    assert result.parseoutcomes().get("passed") == 3, result.stdout.str()
    solo = server.requests_for("Längste")[0].messages
    assert solo[0] == {"role": "system", "content": "Write sqlite for case solo (Wartung)."}
    user = solo[1]["content"]
    assert "tickets(id, shop_id -> shops.id, aircraft, hours, status)" in user
    assert "EXAMPLE Wie viele Werkstätten? ✈ => SELECT count(*) FROM shops\nEXAMPLE second => SELECT 2\n" in user
    assert "third" not in user and "TURN" not in user
    assert "KNOWLEDGE open means status = 'open'" in user and user.endswith(long_tail)
    second = server.requests_for("second 🛬")[0].messages
    assert second[0]["content"] == "Write sqlite for case talk/2 (-)."

    assert "TURN 1 first 🛫 => SELECT id FROM shops\n" in second[1]["content"]
    assert "KNOWLEDGE -" in second[1]["content"]


def test_a_bad_sqleval_prompt_file_names_the_option_the_file_and_the_placeholder(shop):
    (shop.path / "p.j2").write_text("{{ schema }}\n\n{{ question }} {{ gold_sql }}\n", encoding="utf-8")
    shop.makefile(".sqleval.yaml", s=f"database: shop.sqlite\nmodel: m\ncases:\n  - {{id: a, question: q, gold: {NAMES}}}\n")
    result, _ = run(shop, "--sqleval-prompt=p.j2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (f"--sqleval-prompt p.j2: bad prompt template: {shop.path / 'p.j2'}: unknown placeholder gold_sql"
            in result.stderr.str())


# --------------------------------------------------------------------------- the response cache
def test_the_cache_key_holds_what_changes_the_answer_and_nothing_else(shop, chat, monkeypatch):
    """max_tokens, seed, an extra parameter and the endpoint ask again; the API key, the timeout, the retries and
    the prices (which change no answer) do not. The first look tried template, model and temperature."""
    server = chat({}, default=NAMES)
    base = "{name: test-model, max_tokens: 64, seed: 1, params: {top_p: 0.9}}"
    other_url = server.url.replace("127.0.0.1", "localhost")

    def suite(model: str) -> str:
        return f"database: shop.sqlite\nmodel: {model}\ncases:\n  - {{id: a, question: which shops?, gold: {NAMES}}}\n"

    steps = [
        (base, [], {}, 1),
        (base, [], {}, 0),
        (base.replace("64", "65"), [], {}, 1),
        (base.replace("seed: 1", "seed: 2"), [], {}, 1),
        (base.replace("0.9", "0.8"), [], {}, 1),
        (base, [f"--sqleval-model-url={other_url}"], {}, 1),
        (base, ["--sqleval-model-timeout=7", "--sqleval-model-retries=0", "--sqleval-price-per-1k-input=3"],
         {"OPENAI_API_KEY": "another-key"}, 0),
    ]
    for model, args, env, requests in steps:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        shop.makefile(".sqleval.yaml", s=suite(model))
        server.reset()
        result, report = run(shop, *args)
        assert (server.count, result.parseoutcomes()) == (requests, {"passed": 1}), (model, args, env)
        assert report["cases"][0]["cached"] is (requests == 0)
    bodies = [json.loads(p.read_text())["request"] for p in (shop.path / ".sqleval_cache").glob("*/*.json")]
    assert len(bodies) == 5
    assert {b["parameters"]["max_tokens"] for b in bodies} == {64, 65}
    assert {b["endpoint"] for b in bodies} == {server.url, other_url}


def test_two_workers_writing_the_same_entry_leave_one_whole_file(shop, chat):
    """Twelve cases with the same question (so the same request) across two xdist workers: each worker may ask
    once, one cache file is left, valid, with no temporary file; the next run asks nothing."""
    server = chat({}, default=NAMES)
    shop.makefile(".sqleval.yaml", s="database: shop.sqlite\nmodel: test-model\ncases:\n" + "".join(
        f"  - {{id: c{n:02d}, question: which shops?, gold: {NAMES}}}\n" for n in range(12)))
    result, report = run(shop, "-n", "2")
    assert result.parseoutcomes() == {"passed": 12}
    files = [p for p in (shop.path / ".sqleval_cache").rglob("*") if p.is_file()]
    assert len(files) == 1 and files[0].suffix == ".json", files
    assert json.loads(files[0].read_text())["response"]["text"] == NAMES
    assert 1 <= server.count <= 12
    server.reset()
    again, report = run(shop, "-n", "2")
    assert server.count == 0 and again.parseoutcomes() == {"passed": 12}
    assert report["suites"][0]["model"]["cache_hits"] == 12


# --------------------------------------------------------------------------- sqleval generate
PARTS = """
CREATE TABLE parts (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER);
INSERT INTO parts VALUES (1, 'bolt', 10), (2, 'nut', 3), (3, 'gear', 7);
"""


def generate(tmp_path, server, *args):
    import os
    import subprocess
    import sys

    env = {**os.environ, "OPENAI_API_KEY": "test-key", "NO_PROXY": "127.0.0.1"}
    return subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", "generate", *args, "--model", "test-model",
                           "--model-url", server.url, "--cache", str(tmp_path / "cache")],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)


def test_generate_reads_a_json_list_after_reasoning_that_has_brackets(tmp_path, chat):
    """As the paper's prompt asks (reasoning first, then the JSON), a model thinks aloud before an unfenced list;
    brackets and braces in its reasoning (`parts[qty]`, `{name}`) must not hide the list that follows."""
    make_sqlite(tmp_path / "parts.sqlite", PARTS)
    listing = json.dumps([{"reasoning": "big", "sql": "SELECT name FROM parts WHERE qty > 5"},
                          {"reasoning": "count", "sql": "SELECT count(*) FROM parts"}])
    server = chat({
        "request 1 of 1": [f"Reasoning: look at parts[qty] and print {{name}} for large stocks; then count.\n{listing}\n"
                           "Both queries are read-only [as asked]."],
        "SQL to explain:\nSELECT name": ['{"question": "Which parts have more than five in stock?"}'],
        "SQL to explain:\nSELECT count": ['{"question": "How many parts are there?"}'],
    })
    done = generate(tmp_path, server, "parts.sqlite", "-o", "gen.sqleval.yaml", "--count", "2")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "gen.report.json").read_text())
    assert (report["proposed"], report["kept"], report["answers_without_json"]) == (2, 2, 0)


def test_generate_on_tables_without_rows_says_why_nothing_was_kept(tmp_path, chat):
    make_sqlite(tmp_path / "empty.sqlite", "CREATE TABLE parts (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER);")
    server = chat({"request 1 of 1": [json.dumps([{"sql": "SELECT name FROM parts"},
                                                  {"sql": "SELECT max(qty) FROM parts"}])]})
    done = generate(tmp_path, server, "empty.sqlite", "-o", "gen.sqleval.yaml", "--count", "2")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "no query survived the filters (2 proposed)" in done.stderr
    report = json.loads((tmp_path / "gen.report.json").read_text())
    assert report["dropped"]["empty_result"] == 2
    assert [d["reason"] for d in report["drops"]] == ["no rows", "only NULLs"]
    assert not (tmp_path / "gen.sqleval.yaml").exists()


# --------------------------------------------------------------------------- calls at scale
def max_in_flight(server, seconds: float) -> int:
    starts = sorted(r.at for r in server.requests)
    return max(sum(1 for s in starts if t <= s < t + seconds) for t in starts)


@pytest.mark.parametrize("workers, setting, most", [([], "ini", 3), (["-n", "2"], "cli", 4)], ids=["serial", "xdist"])
def test_no_more_calls_at_once_than_the_concurrency_per_process(shop, chat, workers, setting, most):
    """Slow answers (0.8 s): serially at most `sqleval_model_concurrency` (ini: 3) requests are in flight; with -n 2
    and --sqleval-model-concurrency 2, each worker has its own pool: at most 4."""
    from chat_server import Slow

    server = chat({}, default=Slow(0.8, NAMES))
    shop.makefile(".sqleval.yaml", s="database: shop.sqlite\nmodel: test-model\ncases:\n" + "".join(
        f"  - {{id: c{n}, question: 'which shops {n}?', gold: {NAMES}}}\n" for n in range(8)))
    if setting == "ini":
        shop.makeini("[pytest]\nsqleval_model_concurrency = 3\n")
        args = []
    else:
        args = ["--sqleval-model-concurrency=2"]
    result, report = run(shop, *workers, *args)
    assert result.parseoutcomes() == {"passed": 8} and server.count == 8
    assert max_in_flight(server, 0.7) == most


def test_turns_under_xdist_see_the_models_own_earlier_sql(shop, chat):
    """history: model (the default) with -n 2: every turn's prompt holds the SQL the model gave for the earlier turns
    of its interaction, whichever worker ran them."""
    script = {f"I{i}T{t} ": [f"SELECT {10 * i + t}"] for i in range(4) for t in (1, 2, 3)}
    server = chat(script, default=NAMES)
    cases = "".join(f"  - id: talk{i}\n    interaction:\n" + "".join(
        f"      - {{question: 'I{i}T{t} and then?', gold: SELECT {10 * i + t}}}\n" for t in (1, 2, 3)) for i in range(4))
    shop.makefile(".sqleval.yaml", s=f"database: shop.sqlite\nmodel: test-model\ncases:\n{cases}")
    result, report = run(shop, "-n", "2")
    assert result.parseoutcomes() == {"passed": 12}, result.stdout.str()
    for i in range(4):
        third = server.requests_for(f"I{i}T3 ")[0].messages[-1]["content"]
        assert (f"Q1: I{i}T1 and then?\nSQL1: SELECT {10 * i + 1}\nQ2: I{i}T2 and then?\nSQL2: SELECT {10 * i + 2}"
                in third), third


@pytest.mark.parametrize("source, message", [
    ("class Predictor:\n    def __call__(self, case):\n        return 'SELECT 1'\n",
     "Predictor is a class; point at a function or at a callable instance (e.g. `predict = Predictor()` in mine)"),
    ("async def Predictor(case):\n    return 'SELECT 1'\n",
     "Predictor is an async function; predictors run on worker threads and must return the answer: wrap it, e.g. "
     "`def predict(case): return asyncio.run(Predictor(case))`"),
])
def test_a_class_or_an_async_function_as_predictor_is_a_usage_error(shop, source, message):
    (shop.path / "mine.py").write_text(source, encoding="utf-8")
    shop.makefile(".sqleval.yaml", s=f"database: shop.sqlite\ncases:\n  - {{id: a, question: q, gold: {NAMES}}}\n")
    result, _ = run(shop, "--sqleval-predictor=mine:Predictor")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--sqleval-predictor 'mine:Predictor': {message}" in result.stderr.str()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_conftest_predictors_that_are_async_generators_slow_or_raising(shop, workers):
    """The fixture route: an async predictor is a clear miss (no 'never awaited' warning); a generator, a tuple
    and a raise are misses naming what happened; a slow predictor's latency is measured; the run goes on."""
    shop.makeconftest(f"""
        import time, pytest

        async def asynchronous(case):
            return "{NAMES}"

        def generator(case):
            yield "{NAMES}"

        def predict(case):
            if case.id == "async":
                return asynchronous(case)
            if case.id == "generator":
                return generator(case)
            if case.id == "tuple":
                return ("{NAMES}", {{"prompt": 1}})
            if case.id == "raising":
                raise ConnectionError("upstream closed\\nsecond line")
            time.sleep(0.3)
            return "{NAMES}"

        @pytest.fixture(scope="session")
        def sqleval_predictor():
            return predict
        """)
    ids = ["async", "generator", "tuple", "raising", "slow"]
    shop.makefile(".sqleval.yaml", s="database: shop.sqlite\ncases:\n" + "".join(
        f"  - {{id: {k}, question: q, gold: {NAMES}}}\n" for k in ids))
    result, report = run(shop, "-W", "error::RuntimeWarning", *workers)
    cases = by_id(report)
    assert cases["async"]["error"]["message"].startswith("the predictor returned a coroutine (an async function)")
    assert cases["generator"]["error"]["message"].startswith("the predictor returned generator;")
    assert cases["tuple"]["error"]["message"].startswith("the predictor returned tuple;")
    assert cases["raising"]["error"] == {"kind": "model_error",
                                         "message": "the predictor raised ConnectionError: upstream closed"}
    assert cases["slow"]["outcome"] == "passed" and cases["slow"]["latency_s"] >= 0.3
    assert "never awaited" not in result.stdout.str() + result.stderr.str()
    assert result.parseoutcomes() == {"passed": 1, "missed": 4}


def test_few_shot_examples_never_hand_the_model_its_own_answer(shop, chat):
    """`examples: 2` from the suite skips the case's paraphrase (same gold SQL, as `sqleval generate
    --paraphrases` writes them); an examples file skips a pair with the case's question (whitespace and case
    aside) or its gold SQL."""
    server = chat({}, default=NAMES)
    (shop.path / "shots.jsonl").write_text("".join(json.dumps(p) + "\n" for p in [
        {"question": "WHICH  shops exist?", "sql": "SELECT 1"},
        {"question": "Name every shop.", "sql": NAMES},
        {"question": "How many tickets?", "sql": "SELECT count(*) FROM tickets"},
        {"question": "How many shops?", "sql": "SELECT count(*) FROM shops"},
    ]), encoding="utf-8")
    for examples in ("2", "{file: shots.jsonl, count: 2}"):
        shop.makefile(".sqleval.yaml", s=f"""
            database: shop.sqlite
            model: test-model
            examples: {examples}
            cases:
              - {{id: target, question: Which shops exist?, gold: {NAMES}}}
              - {{id: para, question: List the shops., gold: {NAMES}}}
              - {{id: b, question: How many tickets?, gold: SELECT count(*) FROM tickets}}
              - {{id: c, question: How many shops?, gold: SELECT count(*) FROM shops}}
            """)
        server.reset()
        result, _ = run(shop, "-k", "target", "--sqleval-cache-mode=off")
        assert server.count == 1, result.stdout.str()
        prompt = server.requests[0].messages[-1]["content"]
        assert "Question: How many tickets?\nSQL: SELECT count(*) FROM tickets" in prompt, examples
        assert "Question: How many shops?\nSQL: SELECT count(*) FROM shops" in prompt, examples
        assert NAMES not in prompt.partition("Examples:")[2], examples


def test_cache_files_and_saved_predictions_get_the_usual_file_mode(shop, chat):
    """Not mkstemp's 0600: a cache shared by a CI runner and its jobs (or users of one machine) must be readable
    by them, as any file the process writes (0666 less the umask)."""
    import os
    import stat

    chat({}, default=NAMES)
    shop.makefile(".sqleval.yaml", s=f"database: shop.sqlite\nmodel: test-model\ncases:\n"
                                     f"  - {{id: a, question: which shops?, gold: {NAMES}}}\n")
    umask = os.umask(0o022)
    os.umask(umask)
    run(shop, "--sqleval-save-predictions=out/saved.jsonl")
    files = list((shop.path / ".sqleval_cache").glob("*/*.json")) + [shop.path / "out" / "saved.jsonl"]
    assert len(files) == 2
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path


@pytest.mark.parametrize("prompt, message", [
    ("'{{ question | uper }}'", "s.sqleval.yaml:3: bad `prompt:` template: line 1 of the template: No filter named 'uper'."),
    ("'{% include \"shots.j2\" %}{{ question }}'",
     "s.sqleval.yaml:3: bad `prompt:` template: {% include %}, {% import %} and {% extends %} are not supported"),
])
def test_a_misspelt_filter_or_an_include_is_reported_when_the_suite_loads(shop, prompt, message):
    """Not a jinja2 traceback at collection, nor a 'no loader' miss on every case."""
    shop.makefile(".sqleval.yaml", s=f"database: shop.sqlite\nmodel: m\nprompt: {prompt}\ncases:\n"
                                     f"  - {{id: a, question: q, gold: {NAMES}}}\n")
    result, _ = run(shop)
    out = result.stdout.str()
    assert message in out and "Traceback" not in out and "jinja2.exceptions" not in out, out


def test_generate_takes_a_plain_text_question_without_its_label_or_reasoning(tmp_path, chat):
    """Question answers that are not JSON: `Question: ...` loses its label; reasoning then a `**Question:**` line
    keeps only the question; two lines of prose with no label are no question (dropped, reported), not a case
    whose question is the model's reasoning."""
    make_sqlite(tmp_path / "parts.sqlite", PARTS)
    big, count, ids = ("SELECT name FROM parts WHERE qty > 5", "SELECT count(*) FROM parts",
                       "SELECT id FROM parts WHERE qty < 5")
    server = chat({
        "request 1 of 1": [json.dumps([{"sql": big}, {"sql": count}, {"sql": ids}])],
        f"SQL to explain:\n{big}": ["Reasoning: it keeps large stocks.\n**Question:** Which parts have more than five?"],
        f"SQL to explain:\n{count}": ["Question: How many parts are there?"],
        f"SQL to explain:\n{ids}": ["This query lists the ids of parts.\nThose are the low-stock parts."],
    })
    done = generate(tmp_path, server, "parts.sqlite", "-o", "gen.sqleval.yaml", "--count", "3")
    assert done.returncode == 0, done.stderr
    from pytest_sqleval.loader import load_suite

    suite = load_suite(tmp_path / "gen.sqleval.yaml")
    assert {c.gold: c.question for c in suite.cases} == {big: "Which parts have more than five?",
                                                          count: "How many parts are there?"}
    report = json.loads((tmp_path / "gen.report.json").read_text())
    assert report["dropped"]["no_question"] == 1 and report["drops"][0]["sql"] == ids


def test_a_generated_suite_with_paraphrases_is_scored_per_gold_sql(tmp_path, chat):
    """End to end, as the MRO paper uses it: `sqleval generate --paraphrases 2` writes questions per gold SQL
    (the model gives two paraphrases for the first gold, one for the second); the model then answers the first
    gold's question right and both its paraphrases with a query that fails, and the second gold's questions right.
    Plain EX 3/5 = 0.6, error count 2; grouped by gold SQL: EX (1/3 + 1)/2 = 0.6667, errors 2/3 + 0."""
    make_sqlite(tmp_path / "parts.sqlite", PARTS)
    big, count = "SELECT name FROM parts WHERE qty > 5", "SELECT count(*) FROM parts"
    server = chat({
        "request 1 of 1": [json.dumps([{"sql": big}, {"sql": count}])],
        f"SQL to explain:\n{big}": [json.dumps({"question": "BIG which parts are plentiful?",
                                                "paraphrases": ["PARA name the well-stocked parts",
                                                                "PARA list parts with a big stock"]})],
        f"SQL to explain:\n{count}": [json.dumps({"question": "COUNT how many parts?",
                                                  "paraphrases": ["COUNT2 number of parts?"]})],
        "BIG ": [f"```sql\n{big}\n```"], "PARA ": ["SELECT nam FROM parts"],
        "COUNT": [f"```sql\n{count}\n```"],
    })
    done = generate(tmp_path, server, "parts.sqlite", "-o", "gen.sqleval.yaml", "--count", "2", "--paraphrases", "2")
    assert done.returncode == 0, done.stderr
    import os
    import subprocess
    import sys

    env = {**os.environ, "NO_PROXY": "127.0.0.1"}
    ran = subprocess.run([sys.executable, "-m", "pytest", "--sqleval", "gen.sqleval.yaml", "-p", "no:cacheprovider",
                          "--sqleval-model=test-model", "--sqleval-json=report.json"],
                         cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    report = json.loads((tmp_path / "report.json").read_text())
    suite = report["suites"][0]
    assert [c["outcome"] for c in report["cases"]] == ["passed", "missed", "missed", "passed", "passed"], ran.stdout
    assert suite["metrics"]["execution_accuracy"] == pytest.approx(0.6)
    assert suite["by_gold_sql"]["execution_accuracy"] == pytest.approx((1 / 3 + 1) / 2)
    assert suite["by_gold_sql"]["groups"] == 2
    assert suite["metrics"]["error_count"] == 2 and suite["by_gold_sql"]["error_count"] == pytest.approx(2 / 3)
