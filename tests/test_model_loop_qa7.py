"""QA look (qa7model) at issue 9, the model in the loop: leftovers of earlier looks. Markdown fences that do not start
a line, Unicode spaces between a query's words, sample rows read in no order (PostgreSQL moves an UPDATEd row), and
views missing from the schema shown to the model. Run as a user runs them: `pytest --sqleval` through pytester
against the loopback chat server (tests/chat_server.py); DuckDB and the PostgreSQL server are real ones."""

from __future__ import annotations

import json
import sqlite3

import pytest

from chat_server import chat_fixture
from conftest import require_module
from model_support import by_id, pg_database_fixture, run, shop_fixture

openai = require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
# one SDK client built at collection (see test_model_gate_new_inputs.py: pytester's in-process runs forget modules
# first imported inside them)
openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused").chat.completions

NAMES = "SELECT name FROM shops"
FENCE = "```"

shop = shop_fixture()
chat = chat_fixture()


# --------------------------------------------------------------------------- fences start a line
@pytest.mark.parametrize("answer, sql, step", [
    # a ``` inside a prose line opens no block: the block below it holds the query (was: the prose line's ``` opened
    # a block that the real opening fence closed, empty, and the query kept its closing fence: a syntax miss)
    (f"I put the query in {FENCE}sql fences as asked:\n{FENCE}sql\n{NAMES}\n{FENCE}", NAMES, "fenced"),
    # a ``` inside the query's string literal closes nothing (was: the block ended inside the literal: no_sql)
    (f"{FENCE}sql\n{NAMES} WHERE name <> '{FENCE}'\n{FENCE}", f"{NAMES} WHERE name <> '{FENCE}'", "fenced"),
    # a ``` inside a SQL comment of a plain answer opens nothing (was: the text after it was "the block": `WHERE ...`)
    (f"{NAMES} -- no {FENCE}fences\nWHERE id > 0", f"{NAMES} -- no {FENCE}fences\nWHERE id > 0", "text"),
    # read as before: a fence ending a prose line, an indented fence in a list item, CRLF, a longer outer fence
    (f"Here: {FENCE}sql\n{NAMES}\n{FENCE}", NAMES, "fenced"),
    (f"1. The query:\n\n    {FENCE}sql\n    {NAMES}\n    {FENCE}\n", NAMES, "fenced"),
    (f"Here you go:\r\n{FENCE}sql\r\n{NAMES};\r\n{FENCE}\r\nIt lists names.", f"{NAMES};", "fenced"),
    (f"````sql\nSELECT '{FENCE}' AS x\n````", f"SELECT '{FENCE}' AS x", "fenced"),
    (f"{FENCE}sql {NAMES}{FENCE}", NAMES, "inline"),
    (f"{FENCE}sql\n{NAMES};{FENCE}", f"{NAMES};", "fenced"),  # the fence closed at the end of the query's line
    (f"{FENCE}sql\nSELECT name\nFROM shops{FENCE}\nIt lists names.", "SELECT name\nFROM shops", "fenced"),
])
def test_a_fence_opens_only_at_the_start_of_a_line(answer, sql, step):
    from pytest_sqleval.model.extract import extract_sql

    got = extract_sql(answer, "auto")
    assert (got.sql, got.step, got.error_kind) == (sql, step, None), got


def test_a_fenced_query_whose_literal_holds_a_fence_passes_through_the_model_loop(shop, chat):
    gold = f"SELECT name FROM shops WHERE name <> '{FENCE}' ORDER BY id"
    chat({"LIT": [f"Sure:\n\n{FENCE}sql\n{gold}\n{FENCE}\n"], "PROSE": [
        f"Wrapped in {FENCE}sql fences, as asked:\n{FENCE}sql\n{NAMES}\n{FENCE}"]})
    shop.makefile(".sqleval.yaml", s=f"""
        database: shop.sqlite
        model: test-model
        cases:
          - {{id: lit, question: LIT which shops?, gold: "{gold}"}}
          - {{id: prose, question: PROSE which shops?, gold: {NAMES}}}
        """)
    result, report = run(shop)
    cases = by_id(report)
    for name in ("lit", "prose"):
        assert (cases[name]["outcome"], cases[name]["extraction"]["step"]) == ("passed", "fenced"), cases[name]


# --------------------------------------------------------------------------- Unicode spaces between words
def test_unicode_spaces_between_tokens_become_plain_spaces_and_stay_inside_literals():
    from pytest_sqleval.model.extract import extract_sql
    from pytest_sqleval.sql.spacing import unicode_spaces_normalised

    got = extract_sql(f"{FENCE}sql\nSELECT\u00a0name FROM\u3000shops WHERE name <> 'a\u00a0b'\u2003-- x\u202fy\n{FENCE}")
    assert got.sql == "SELECT name FROM shops WHERE name <> 'a\u00a0b' -- x y"
    # the case's dialect reads the literals: PostgreSQL's dollar-quoted string keeps its no-break space
    assert unicode_spaces_normalised("SELECT $$a\u00a0b$$,\u00a01", "postgres") == "SELECT $$a\u00a0b$$, 1"
    assert unicode_spaces_normalised('SELECT "a\u00a0b"\u00a0FROM t', "sqlite") == 'SELECT "a\u00a0b" FROM t'
    assert unicode_spaces_normalised("SELECT 'open\u00a0", "sqlite") == "SELECT 'open\u00a0"  # unreadable: as it is
    assert extract_sql("SELECT\u00a01", "raw").sql == "SELECT\u00a01"  # raw: the text as it came


def test_a_no_break_space_in_the_answer_scores_on_sqlite_as_on_the_other_engines(shop, chat):
    """A model (or a chat UI copy) writes U+00A0 between two words: DuckDB and PostgreSQL read it as a space, SQLite
    as a syntax error, so the same answer was a `syntax` miss on SQLite alone. A no-break space inside a literal is
    data: the query with it must still return the gold's rows (the name holding one)."""
    with sqlite3.connect(shop.path / "shop.sqlite") as conn:
        conn.execute("INSERT INTO shops VALUES (4, 'Line\u00a0Maintenance')")
    chat({"NBSP": ["```sql\nSELECT\u00a0name\nFROM\u00a0shops\u00a0WHERE id < 3\n```"],
          "LIT": ["SELECT\u00a0id FROM shops WHERE name = 'Line\u00a0Maintenance'"]})
    shop.makefile(".sqleval.yaml", s="""
        database: shop.sqlite
        model: test-model
        cases:
          - {id: nbsp, question: NBSP which shops?, gold: SELECT name FROM shops WHERE id < 3}
          - {id: lit, question: LIT which shop?, gold: SELECT 4}
        """)
    result, report = run(shop)
    cases = by_id(report)
    for name in ("nbsp", "lit"):
        assert cases[name]["outcome"] == "passed", cases[name].get("error")
    assert "\u00a0" in cases["nbsp"]["raw_output"]  # the raw output is kept as it came


# --------------------------------------------------------------------------- sample rows in a fixed order
pg_database = pg_database_fixture("qa7")


def test_an_update_on_postgresql_changes_neither_the_sample_rows_nor_the_cache_key(shop, chat, pg_database):
    """`sample_rows: 2` read `SELECT * ... LIMIT 2` in no order: PostgreSQL writes an UPDATEd row at the end of the
    table's heap, so after a DBA's UPDATE that changed no value the prompt showed other rows, and a committed cache
    missed under `--sqleval-cache-mode only`. Rows are read by primary key (every column where there is none)."""
    url, sql = pg_database
    sql("CREATE TABLE parts (id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE TABLE bins (code TEXT, qty INTEGER);"
        "INSERT INTO parts VALUES (1, 'bolt'), (2, 'nut'), (3, 'washer');"
        "INSERT INTO bins VALUES ('A1', 5), ('B2', 7), ('C3', 9);"
        "CREATE TABLE notes (doc JSON);"  # json has no order: the rows are read by its text
        """INSERT INTO notes VALUES ('{"n": 1}'), ('{"n": 2}'), ('{"n": 3}')""")
    server = chat({}, default="SELECT name FROM parts")
    shop.makefile(".sqleval.yaml", s=f"""
        database: {json.dumps(url)}
        model: test-model
        sample_rows: 2
        cases:
          - {{id: a, question: which parts?, gold: SELECT name FROM parts}}
        """)
    result, report = run(shop)
    assert by_id(report)["a"]["outcome"] == "passed", result.stdout.str()
    first = server.requests[0].messages
    assert "'bolt'" in first[-1]["content"] and "'A1'" in first[-1]["content"], first[-1]["content"]
    assert """'{"n": 1}'""" in first[-1]["content"], first[-1]["content"]  # JSON text, not a dict's repr
    sql("UPDATE parts SET name = name WHERE id = 1; UPDATE bins SET qty = qty WHERE code = 'A1';"
        """UPDATE notes SET doc = doc WHERE doc::text = '{"n": 1}'""")
    server.reset()
    result, report = run(shop, "--sqleval-cache-mode=only")
    case = by_id(report)["a"]
    assert (case["outcome"], case["cached"], server.count) == ("passed", True, 0), case.get("error")


def test_sample_rows_on_sqlite_and_duckdb_keep_their_insertion_order(tmp_path):
    """SQLite and DuckDB read sample rows by rowid: the rows inserted first, as before (prompts and caches of
    existing suites do not change), a table without a rowid (SQLite's WITHOUT ROWID) by its primary key."""
    from sqlalchemy import create_engine

    from pytest_sqleval.model.schema_text import sample_rows, tables_from_engine

    path = tmp_path / "s.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("CREATE TABLE t (name TEXT); INSERT INTO t VALUES ('z'), ('a'), ('m');"
                           "CREATE TABLE w (k TEXT PRIMARY KEY, v INT) WITHOUT ROWID;"
                           "INSERT INTO w VALUES ('q', 1), ('b', 2)")
    engine = create_engine(f"sqlite:///{path}")
    rows = sample_rows(engine, tables_from_engine(engine), 2, dialect="sqlite", timeout=5)
    assert rows["t"][1] == (("z",), ("a",)) and rows["w"][1] == (("b", 2), ("q", 1)), rows
    engine.dispose()
    duckdb = require_module("duckdb")
    path = tmp_path / "s.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE t (name TEXT); INSERT INTO t VALUES ('z'), ('a'), ('m')")
    engine = create_engine(f"duckdb:///{path}")
    rows = sample_rows(engine, tables_from_engine(engine), 2, dialect="duckdb", timeout=5)
    assert rows["t"][1] == (("z",), ("a",)), rows
    engine.dispose()


# --------------------------------------------------------------------------- views in the schema
VIEW_CASE = ("\nmodel: test-model\nschema_format: {fmt}\ncases:\n"
             "  - {{id: v, question: which open tickets?, gold: SELECT aircraft FROM open_tickets ORDER BY aircraft}}\n")


def _prompt(server) -> str:
    return server.requests[0].messages[-1]["content"]


@pytest.mark.parametrize("fmt", ["ddl", "compact", "spider"])
def test_a_view_on_sqlite_is_in_the_schema_shown_to_the_model(shop, chat, fmt):
    """A suite whose gold reads a view could not be answered: the prompt listed the tables alone."""
    with sqlite3.connect(shop.path / "shop.sqlite") as conn:
        conn.executescript("CREATE VIEW open_tickets AS SELECT id, aircraft FROM tickets WHERE status = 'open';"
                           "CREATE TABLE gone (a); CREATE VIEW stale AS SELECT a FROM gone; DROP TABLE gone")
    server = chat({}, default="SELECT aircraft FROM open_tickets ORDER BY aircraft")
    shop.makefile(".sqleval.yaml", s="database: shop.sqlite" + VIEW_CASE.format(fmt=fmt))
    result, report = run(shop)
    assert by_id(report)["v"]["outcome"] == "passed", result.stdout.str()
    prompt = _prompt(server)
    expected = {"ddl": "CREATE VIEW open_tickets AS SELECT id, aircraft FROM tickets WHERE status = 'open';",
                "compact": "open_tickets(id, aircraft)  -- a view",
                "spider": "View open_tickets, columns = [*, id, aircraft]"}[fmt]
    assert expected in prompt, prompt
    assert prompt.index("tickets") < prompt.index("open_tickets")  # after the tables
    assert "stale" not in prompt  # a view over a dropped table: no query can read it


def test_a_view_on_duckdb_and_postgresql_is_in_the_schema_shown_to_the_model(shop, chat, pg_database):
    duckdb = require_module("duckdb")
    with duckdb.connect(str(shop.path / "shop.duckdb")) as conn:
        conn.execute("CREATE TABLE tickets (id INTEGER PRIMARY KEY, aircraft TEXT, status TEXT);"
                     "INSERT INTO tickets VALUES (1, '9V-SMA', 'open'), (2, '9V-SMB', 'closed');"
                     "CREATE VIEW open_tickets AS SELECT id, aircraft FROM tickets WHERE status = 'open'")
    url, sql = pg_database
    sql("CREATE TABLE tickets (id INTEGER PRIMARY KEY, aircraft TEXT, status TEXT);"
        "INSERT INTO tickets VALUES (1, '9V-SMA', 'open'), (2, '9V-SMB', 'closed');"
        "CREATE VIEW open_tickets AS SELECT id, aircraft FROM tickets WHERE status = 'open';"
        "CREATE MATERIALIZED VIEW ticket_count AS SELECT count(*) AS n FROM tickets")
    for database, shown in (("shop.duckdb", "CREATE VIEW open_tickets AS SELECT id, aircraft FROM tickets"),
                            (json.dumps(url), "CREATE VIEW open_tickets AS\n SELECT ")):  # pg_get_viewdef's layout
        server = chat({}, default="SELECT aircraft FROM open_tickets ORDER BY aircraft")
        shop.makefile(".sqleval.yaml", s=f"database: {database}" + VIEW_CASE.format(fmt="ddl"))
        result, report = run(shop, "--sqleval-cache-mode=off")
        assert by_id(report)["v"]["outcome"] == "passed", result.stdout.str()
        assert shown in _prompt(server), _prompt(server)
    assert "CREATE MATERIALIZED VIEW ticket_count AS" in _prompt(server)


# --------------------------------------------------------------------------- a degenerate answer
def test_a_degenerate_answer_of_many_lines_is_read_in_linear_time():
    """A local model repeating a line until its token limit: each of 60,000 lines was joined with all the lines after
    it to look for the first line of SQL (over a minute for this answer, 200 s for 100,000 lines); now a slice, blank
    lines skipped."""
    import time

    from pytest_sqleval.model.extract import extract_sql

    started = time.perf_counter()
    got = extract_sql("x\n\n" * 60_000)
    assert got.error_kind == "no_sql"
    assert time.perf_counter() - started < 15
