"""QA look (qa9) at issue 9, the model in the loop, on inputs the earlier model test files did not try: a PostgreSQL
database a DBA touched between two runs (the prompt, and so the response cache, must not change), answers whose
query is outside the only fenced block (example output in a fence), and the line of a misspelt placeholder.
Run as a user runs them: `pytest --sqleval` through pytester against the loopback chat server
(tests/chat_server.py); the PostgreSQL server is a real one (SQLEVAL_TEST_POSTGRES_URL)."""

from __future__ import annotations

import json

import pytest

from chat_server import chat_fixture
from conftest import require_module
from model_support import by_id, pg_database_fixture, run, shop_fixture

openai = require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
# one SDK client built at collection (see test_model_gate_new_inputs.py: pytester's in-process runs forget modules
# first imported inside them)
openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused").chat.completions

NAMES = "SELECT name FROM shops"

shop = shop_fixture()
chat = chat_fixture()


# --------------------------------------------------------------------------- the schema in the prompt, run after run
pg_database = pg_database_fixture("qa9_order")


@pytest.fixture
def touched_pg(pg_database):
    """A PostgreSQL database of the user's own (tables created `zeta` first, then `alpha`), and a function that
    GRANTs SELECT on `zeta` as a DBA would for an evaluation role; dropped at the end."""
    url, sql = pg_database
    sql("CREATE TABLE zeta (id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE TABLE alpha (id INTEGER PRIMARY KEY, zeta_id INTEGER REFERENCES zeta(id));"
        "CREATE TABLE mid (id INTEGER);"
        "INSERT INTO zeta VALUES (1, 'Avionics'), (2, 'Engines')")
    return url, sql


def test_a_grant_on_a_postgresql_table_changes_neither_the_prompt_nor_the_cache_key(shop, chat, touched_pg):
    """A GRANT (or any ALTER) rewrites the table's row in PostgreSQL's catalogue, and the catalogue's scan order,
    which SQLAlchemy's table list follows, moves that table last. The schema shown to the model must not follow it:
    the second run's prompt was the first's in another order, so the committed cache missed under
    `--sqleval-cache-mode only` (model_error "not in the cache") though nothing the prompt shows had changed."""
    url, sql = touched_pg
    server = chat({}, default="SELECT name FROM zeta")
    shop.makefile(".sqleval.yaml", s=f"""
        database: {json.dumps(url)}
        model: test-model
        schema_format: compact
        cases:
          - {{id: a, question: which names?, gold: SELECT name FROM zeta}}
        """)
    result, report = run(shop)
    assert by_id(report)["a"]["outcome"] == "passed", result.stdout.str()
    first = server.requests[0].messages
    sql("GRANT SELECT ON zeta TO PUBLIC")
    server.reset()
    result, report = run(shop, "--sqleval-cache-mode=only")
    case = by_id(report)["a"]
    assert (case["outcome"], case["cached"], server.count) == ("passed", True, 0), case.get("error")
    # and the prompt shows the tables in the order they were created, as on SQLite and DuckDB
    server.reset()
    run(shop, "--sqleval-cache-mode=off")
    assert server.requests[0].messages == first
    schema = first[-1]["content"]
    assert schema.index("zeta(") < schema.index("alpha(") < schema.index("mid("), schema


# --------------------------------------------------------------------------- the query outside the fence
OUTPUT_IN_A_FENCE = [
    ("SELECT name FROM shops;\n\nResult:\n```\n| name |\n|---|\n| Avionics |\n```", "SELECT name FROM shops;"),
    ("SQL:\nSELECT name FROM shops\n\nOutput:\n```\nAvionics\nEngines\n```", "SELECT name FROM shops"),
    ("SELECT name FROM shops\n\nExample output:\n~~~text\nAvionics\nEngines\n~~~\n", "SELECT name FROM shops"),
    ("Here is the query:\n\nSELECT name FROM shops\n\n```\nname\n--------\nAvionics\n```", "SELECT name FROM shops"),
]


@pytest.mark.parametrize("answer, sql", OUTPUT_IN_A_FENCE)
def test_a_fence_of_example_output_does_not_hide_the_query_written_outside_it(answer, sql):
    """`auto` takes the last fenced block *that starts like SQL*, else reads the answer's other steps (README).
    A model that writes its query plainly and shows example output in a fence: the only fenced block holds no SQL,
    and the answer was a `no_sql` miss ("contains no SQL: SELECT name FROM shops; ...") showing the very query."""
    from pytest_sqleval.model.extract import extract_sql

    got = extract_sql(answer, "auto")
    assert (got.sql, got.error_kind) == (sql, None), got


@pytest.mark.parametrize("answer, step, sql, kind", [
    ("```python\nprint(1)\n```", "fenced", None, "no_sql"),  # no SQL anywhere: the fence's miss, as before
    ('```json\n{"sql": "SELECT name FROM shops"}\n```\nSelect it.', "json", NAMES, None),  # the JSON rescue first
    ("```sql\nSELECT name FROM shops\n```\nSELECT 2", "fenced", NAMES, None),  # a query in a fence still wins
])
def test_answers_whose_fence_decides_are_read_as_before(answer, step, sql, kind):
    from pytest_sqleval.model.extract import extract_sql

    got = extract_sql(answer, "auto")
    assert (got.sql, got.step, got.error_kind) == (sql, step, kind), got
    assert extract_sql(OUTPUT_IN_A_FENCE[0][0], "fenced").error_kind == "no_sql"  # `fenced` insists on the block


def test_a_query_before_a_fence_of_its_output_passes_through_the_model_loop(shop, chat):
    chat({"OUT": [OUTPUT_IN_A_FENCE[0][0]]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        cases:
          - {{id: a, question: OUT which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop)
    case = by_id(report)["a"]
    assert case["outcome"] == "passed", case.get("error")
    assert case["raw_output"] == OUTPUT_IN_A_FENCE[0][0] and case["extraction"] == {"mode": "auto", "step": "text"}


# --------------------------------------------------------------------------- the line of a misspelt placeholder
def test_a_misspelt_placeholder_names_its_line_in_a_template_file_and_inline(shop):
    """A misspelt placeholder is found when the suite loads; a syntax error names the template's line, and so must
    this: in a 40-line template file, `unknown placeholder qustion` alone leaves the user searching."""
    (shop.path / "p.j2").write_text("{{ schema }}\n" + "padding\n" * 30 + "Q: {{ qustion }}\n{{ question }}\n",
                                    encoding="utf-8")
    shop.makefile(".sqleval.yaml", s=f"database: shop.sqlite\nmodel: m\ncases:\n  - {{id: a, question: q, gold: {NAMES}}}\n")
    result, _ = run(shop, "--sqleval-prompt=p.j2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{shop.path / 'p.j2'}: unknown placeholder qustion (line 32 of the template)" in result.stderr.str()
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: m
        prompt: |
          Schema: {{{{ schema }}}}
          {{% for e in examples %}}{{{{ e.question }}}}{{% endfor %}}
          Q: {{{{ questoin }}}} {{{{ evidance }}}}
        cases:
          - {{id: a, question: q, gold: {NAMES}}}
        """)
    result, _ = run(shop)
    assert result.ret != 0
    assert ("s.sqleval.yaml:3: bad `prompt:` template: unknown placeholder evidance, questoin "
            "(first on line 3 of the template)") in result.stdout.str()


# --------------------------------------------------------------------------- a prompt or predictor set in the ini file
@pytest.mark.parametrize("ini, expected", [
    ("sqleval_prompt = prompts/missing.j2", "ini option sqleval_prompt prompts/missing.j2: file not found ({root}"),
    ("sqleval_prompt = p.j2", "ini option sqleval_prompt p.j2: bad prompt template: {root}/p.j2: unknown placeholder "
                              "qustion (line 1 of the template)"),
    ("sqleval_predictor = tools/mine.py:predict", "ini option sqleval_predictor 'tools/mine.py:predict': tools/mine.py "
                                                  "is a file path, not a module; name the module instead: "
                                                  "sqleval_predictor = tools.mine:predict"),
    ("sqleval_predictor = nosuchmodule:predict", "ini option sqleval_predictor 'nosuchmodule:predict': cannot import"),
])
def test_a_bad_prompt_or_predictor_set_in_the_ini_file_is_named_as_the_ini_option(shop, ini, expected):
    """The usage error named `--sqleval-prompt` / `--sqleval-predictor`, options the user never passed: they look
    on the command line (and in CI's scripts) for what is in pytest.ini."""
    (shop.path / "p.j2").write_text("{{ qustion }}\n", encoding="utf-8")
    shop.makeini(f"[pytest]\n{ini}\n")
    shop.makefile(".sqleval.yaml", s=f"database: shop.sqlite\nmodel: m\ncases:\n  - {{id: a, question: q, gold: {NAMES}}}\n")
    result, _ = run(shop)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert expected.format(root=shop.path) in result.stderr.str()
    assert "--sqleval-prompt" not in result.stderr.str() and "--sqleval-predictor" not in result.stderr.str()


# --------------------------------------------------------------------------- two copies of one template
def test_a_value_missing_in_one_of_two_identical_template_files_names_that_file(shop, chat):
    """Two team folders each keep their own copy of the same template. A case of the second folder whose metadata
    lacks `team` is a model_error naming the template file and line: its own copy, not the first folder's (the
    compiled templates were shared by their text alone, and with them the first file's name)."""
    chat({}, default=NAMES)
    template = "{{ schema }}\nTeam: {{ metadata.team }}\nQuestion: {{ question }}\n"
    for team, metadata in (("ops", "{team: ops}"), ("sales", "{}")):
        (shop.path / team / "prompts").mkdir(parents=True)
        (shop.path / team / "prompts" / "p.j2").write_text(template, encoding="utf-8")
        (shop.path / team / f"{team}.sqleval.yaml").write_text(
            f"database: ../shop.sqlite\nmodel: {{name: test-model, retries: 0}}\nprompt: prompts/p.j2\ncases:\n"
            f"  - {{id: {team}, question: which shops?, metadata: {metadata}, gold: {NAMES}}}\n", encoding="utf-8")
    result, report = run(shop, "ops", "sales")
    cases = by_id(report)
    assert cases["ops"]["outcome"] == "passed", cases["ops"].get("error")
    error = cases["sales"]["error"]
    assert error["kind"] == "model_error"
    assert error["message"].startswith(f"cannot build the prompt: {shop.path / 'sales' / 'prompts' / 'p.j2'}:2: "), error


# --------------------------------------------------------------------------- two databases at one URL
def test_two_suites_built_from_different_scripts_at_one_url_each_show_their_own_schema(shop, chat):
    """`database: {url: "sqlite://", setup: [...]}` in two suites: two databases. The schema text was kept by the
    URL alone, so the second suite's question was sent with the first suite's tables (pilots asked over `planes`),
    and its answer cached under that wrong prompt."""
    server = chat({"TAILS": ["SELECT tail FROM planes"], "PILOTS": ["SELECT name FROM pilots"]})
    (shop.path / "a.sql").write_text("CREATE TABLE planes (id INTEGER, tail TEXT);\n"
                                     "INSERT INTO planes VALUES (1, '9V-A');\n", encoding="utf-8")
    (shop.path / "b.sql").write_text("CREATE TABLE pilots (id INTEGER, name TEXT);\n"
                                     "INSERT INTO pilots VALUES (1, 'Ann');\n", encoding="utf-8")
    for name, script, question, gold in (("planes", "a.sql", "TAILS which tails?", "SELECT tail FROM planes"),
                                         ("pilots", "b.sql", "PILOTS which pilots?", "SELECT name FROM pilots")):
        shop.makefile(".sqleval.yaml", **{name: f"""
            database: {{url: "sqlite://", setup: [{script}]}}
            model: test-model
            cases:
              - {{id: {name}, question: {question}, gold: {gold}}}
            """})
    result, report = run(shop)
    assert {c["id"]: c["outcome"] for c in report["cases"]} == {"planes": "passed", "pilots": "passed"}
    for needle, table, other in (("TAILS", "planes", "pilots"), ("PILOTS", "pilots", "planes")):
        prompt = server.requests_for(needle)[0].messages[-1]["content"]
        assert f"CREATE TABLE {table}" in prompt and other not in prompt, prompt


# --------------------------------------------------------------------------- ini paths with variables
def test_ini_cache_and_save_paths_expand_variables_as_the_report_paths_do(shop, chat, monkeypatch, tmp_path_factory):
    """`sqleval_json = $RUNNER_TEMP/sqleval.json` is expanded (README); `sqleval_cache = $RUNNER_TEMP/cache`, a cache
    shared by a CI runner's jobs, made a folder literally named `$RUNNER_TEMP` in the project, and every job asked
    the model again. An unset variable is a usage error, as for the report paths."""
    server = chat({}, default=NAMES)
    shared = tmp_path_factory.mktemp("runner-temp")
    monkeypatch.setenv("QA9_RUNNER_TEMP", str(shared))
    shop.makeini("[pytest]\nsqleval_cache = $QA9_RUNNER_TEMP/cache\n"
                 "sqleval_save_predictions = $QA9_RUNNER_TEMP/preds.jsonl\n")
    shop.makefile(".sqleval.yaml", s=f"database: shop.sqlite\nmodel: test-model\ncases:\n"
                                     f"  - {{id: a, question: which shops?, gold: {NAMES}}}\n")
    result, report = run(shop)
    assert by_id(report)["a"]["outcome"] == "passed" and server.count == 1
    assert len(list((shared / "cache").glob("*/*.json"))) == 1
    assert json.loads((shared / "preds.jsonl").read_text(encoding="utf-8"))["sql"] == NAMES
    assert not list(shop.path.glob("$*")), list(shop.path.iterdir())
    monkeypatch.delenv("QA9_RUNNER_TEMP")
    result, _ = run(shop)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini option sqleval_cache: '$QA9_RUNNER_TEMP/cache' names an unset environment variable" in result.stderr.str()


# --------------------------------------------------------------------------- a query in XML-style tags
@pytest.mark.parametrize("answer, sql", [
    ("<sql>\nSELECT name FROM shops\n</sql>", NAMES),
    ("<SQL>SELECT name FROM shops;</SQL>", "SELECT name FROM shops;"),
    ("Here you go:\n<sql>\nSELECT name FROM shops\n</sql>\nThis lists every shop's name.", NAMES),
    ("<thinking>shops has a name column</thinking>\n<query>SELECT name FROM shops</query>", NAMES),
    ("<sql_query>SELECT 1</sql_query>\n<sql_query>\nSELECT name FROM shops\n</sql_query>", NAMES),
    ("<answer>SELECT name FROM shops</answer>", NAMES),
])
def test_a_query_in_xml_style_tags_is_extracted(answer, sql):
    """Prompts written for Claude-style models ask for the SQL "in <sql> tags", and the answer comes so. It was a
    `syntax` miss (`SELECT name FROM shops\\n</sql>`, the closing tag taken as SQL) or `no_sql` (one line)."""
    from pytest_sqleval.model.extract import extract_sql

    got = extract_sql(answer, "auto")
    assert (got.sql, got.step, got.error_kind) == (sql, "tagged", None), got


@pytest.mark.parametrize("answer, sql, step, kind", [
    ("SELECT '<sql>SELECT 1</sql>' AS t FROM shops", "SELECT '<sql>SELECT 1</sql>' AS t FROM shops", "text", None),
    ("<answer>There is no such table.</answer>", None, "text", "no_sql"),
    ("```sql\nSELECT name FROM shops\n```\n<sql>SELECT 1</sql>", NAMES, "fenced", None),  # a fence still wins
])
def test_tags_inside_a_query_or_around_prose_are_not_read_as_a_tagged_query(answer, sql, step, kind):
    from pytest_sqleval.model.extract import extract_sql

    got = extract_sql(answer, "auto")
    assert (got.sql, got.step, got.error_kind) == (sql, step, kind), got
    assert extract_sql("<sql>SELECT 1</sql>", "fenced").error_kind == "no_sql"  # `fenced` insists on a fence


# --------------------------------------------------------------------------- a case with no question
def test_a_case_without_a_question_is_not_sent_to_the_model(shop, chat):
    """`question:` is optional in a suite of `predicted:` SQL; under a model it is what is asked. A case without one
    was sent as "...Question:" and nothing after it: a paid call for a prompt every such case of the database
    shares (so they all got the same cached answer). It is that case's model_error, with the fix; no request."""
    server = chat({}, default=NAMES)
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        cases:
          - {{id: asked, question: which shops?, gold: {NAMES}}}
          - {{id: silent, gold: SELECT count(*) FROM shops}}
          - {{id: blank, question: "  ", gold: SELECT id FROM shops}}
        """)
    result, report = run(shop)
    cases = by_id(report)
    assert cases["asked"]["outcome"] == "passed" and server.count == 1
    for name in ("silent", "blank"):
        assert cases[name]["error"]["kind"] == "model_error"
        assert "the case has no `question:`, and the prompt template asks it" in cases[name]["error"]["message"]
    assert report["suites"][0]["model"]["calls"] == 1


@pytest.mark.parametrize("answer, sql", [
    ("SELECT name FROM shops;<|eot_id|>", "SELECT name FROM shops;"),
    ("SELECT name FROM shops</s>", "SELECT name FROM shops"),
    ("```sql\nSELECT name FROM shops\n```\n<|im_end|>", "SELECT name FROM shops"),
    ("SELECT name FROM shops WHERE name <> '</s>' <end_of_turn>", "SELECT name FROM shops WHERE name <> '</s>'"),
    ("\u200bSELECT name FROM shops", "SELECT name FROM shops"),
    ("\ufeff\u200b SELECT name FROM shops \u2060<|endoftext|>", "SELECT name FROM shops"),
])
def test_end_of_turn_tokens_and_invisible_characters_around_an_answer_are_no_sql(answer, sql):
    """A serving stack that shows special tokens leaves `<|eot_id|>` or `</s>` after the answer (a `syntax` miss),
    and a leading zero-width space made the answer `no_sql`. Around the answer they are stripped; inside it
    (a literal holding `</s>`) they stay."""
    from pytest_sqleval.model.extract import extract_sql

    found = extract_sql(answer)
    assert (found.sql, found.error_kind) == (sql, None)
