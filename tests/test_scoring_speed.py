"""The scoring shortcuts of issue 11 (serial CPU): each cache returns what a fresh computation returns, and never
a value computed for a different key (dialect, schema, option, file)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from exact_match_support import SCHEMA
from pytest_sqleval.errors import SuiteError
from pytest_sqleval.load_context import LoadContext
from pytest_sqleval.metrics.exact_match import exact_match
from pytest_sqleval.metrics.exact_match import spider as spider_profile
from pytest_sqleval.metrics.exact_match.components import _multiset_match
from pytest_sqleval.schema import Schema
from pytest_sqleval.sql import limits
from pytest_sqleval.sql.statements import official_text
from pytest_sqleval.yaml_lines import read_yaml


def _fresh_tokens(sql: str, dialect: str):
    import sqlglot

    return sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)


def _kinds(tokens) -> list[str]:
    return [t.token_type.name for t in tokens]


# -- tokens shared by the statement cut, the limits and the parser ------------------------------------------
def test_raw_tokens_are_kept_per_text_and_dialect():
    sql = 'SELECT "a" FROM t # note'
    sqlite_first = limits.raw_tokens(sql, "sqlite")
    mysql = limits.raw_tokens(sql, "mysql")
    sqlite_again = limits.raw_tokens(sql, "sqlite")
    # each dialect gets its own reading (MySQL reads "a" as a string and # as a comment), as a fresh tokenizer does
    assert _kinds(sqlite_first) == _kinds(_fresh_tokens(sql, "sqlite"))
    assert _kinds(mysql) == _kinds(_fresh_tokens(sql, "mysql"))
    assert _kinds(sqlite_first) != _kinds(mysql)
    assert sqlite_again is sqlite_first  # kept: the second reader does not tokenize again
    other = limits.raw_tokens(sql + " ", "sqlite")
    assert other is not sqlite_first and [t.text for t in other] == [t.text for t in _fresh_tokens(sql + " ", "sqlite")]


def test_official_statement_cut_and_exact_match_checks_share_one_tokenization():
    sql = "SELECT name FROM singer WHERE age > 30; DROP TABLE singer"
    assert official_text(sql, "sqlite", "official_distinct") == "SELECT name FROM singer WHERE age > 30;"
    assert limits.tokenize_bounded(sql, "sqlite") is limits.raw_tokens(sql, "sqlite")


def test_raw_tokens_errors_are_raised_each_time_and_long_texts_are_not_kept(monkeypatch):
    import sqlglot

    for _ in range(2):
        with pytest.raises(sqlglot.errors.TokenError):
            limits.raw_tokens("SELECT 'unterminated", "sqlite")
    monkeypatch.setattr(limits, "MAX_SQL_CHARS", 100)  # (the real limit, 262,144 characters, takes seconds to tokenize)
    long_text = "SELECT " + " + ".join(["1"] * 30)
    assert len(long_text) > limits.MAX_SQL_CHARS
    assert limits.raw_tokens(long_text, "sqlite") is not limits.raw_tokens(long_text, "sqlite")
    with pytest.raises(limits.SqlTooComplex, match="too long to score"):
        limits.tokenize_bounded(long_text, "sqlite")


def test_parsing_a_text_whose_tokens_are_shared_leaves_the_tokens_unchanged():
    from pytest_sqleval.sql import parsed

    sql = "SELECT name /* who */ FROM singer /* test_scoring_speed */ WHERE age > 1 -- all of them"
    parsed.clear()  # the parse below reads the shared tokens
    tokens = limits.raw_tokens(sql, "sqlite")
    before = [(t.token_type, t.text, list(t.comments)) for t in tokens]
    statement = limits.parse_bounded(sql, "sqlite")[0]
    statement.add_comments(["added by a reader"])  # a caller's copy, modified
    statement.find(limits.exp.Column).add_comments(["and another"])
    assert limits.raw_tokens(sql, "sqlite") is tokens
    assert [(t.token_type, t.text, list(t.comments)) for t in tokens] == before
    assert limits.parse_bounded(sql, "sqlite")[0].sql() == limits.parse_bounded(sql, "sqlite")[0].sql()
    assert "added by a reader" not in limits.parse_bounded(sql, "sqlite")[0].sql(comments=True)


# -- Spider exact match: one reading per (prediction, schema, dialect, value_placeholder) ---------------------
def _fresh_spider(gold: str, pred: str, schema: Schema, **options):
    spider_profile._predictions.clear()
    return exact_match(gold, pred, schema, profile={"profile": "spider", **options.pop("profile_options", {})}, **options)


def test_a_prediction_read_for_one_schema_is_not_reused_for_another():
    first = Schema.from_dict({"t1": ["a"], "t2": ["b"]})  # `b` is t2.b
    second = Schema.from_dict({"t1": ["a", "b"], "t2": ["b"]})  # `b` is t1.b (the first FROM table that has it)
    gold, pred = "SELECT t2.b FROM t1 JOIN t2", "SELECT b FROM t1 JOIN t2"
    expected = {id(s): _fresh_spider(gold, pred, s) for s in (first, second)}
    assert expected[id(first)].match and not expected[id(second)].match
    spider_profile._predictions.clear()
    for schema in (first, second, first, second):
        assert exact_match(gold, pred, schema, profile="spider") == expected[id(schema)]
    assert len(spider_profile._predictions) == 2


def test_a_prediction_read_in_one_dialect_is_not_reused_for_another():
    gold, pred = "SELECT count(*) FROM singer", "SELECT count(*) FROM singer # note"
    expected = {d: _fresh_spider(gold, pred, SCHEMA, dialect=d) for d in ("sqlite", "mysql")}
    assert expected["sqlite"].reason != expected["mysql"].reason  # `#` starts a comment in MySQL only
    spider_profile._predictions.clear()
    for dialect in ("mysql", "sqlite", "mysql", "sqlite"):
        assert exact_match(gold, pred, SCHEMA, profile="spider", dialect=dialect) == expected[dialect]


def test_a_prediction_read_with_value_placeholder_is_not_reused_without_it():
    schema = Schema.from_dict({"t": ["value", "x"]})
    sql = "SELECT value FROM t"
    plain = _fresh_spider(sql, sql, schema)
    placeholder = _fresh_spider(sql, sql, schema, profile_options={"value_placeholder": True})
    assert plain.match and not placeholder.match  # `value` became the literal 1
    spider_profile._predictions.clear()
    for option in (True, False, True, False):
        verdict = exact_match(sql, sql, schema, profile={"profile": "spider", "value_placeholder": option})
        assert verdict == (placeholder if option else plain)


def test_a_kept_prediction_scores_against_each_gold_as_a_fresh_reading_does():
    pred = "SELECT name, age FROM singer WHERE age > 20 ORDER BY age DESC"
    golds = ["SELECT name, age FROM singer WHERE age > 30 ORDER BY age DESC",
             "SELECT age, name FROM singer WHERE age > 1 ORDER BY age DESC",
             "SELECT name FROM singer WHERE age > 20 ORDER BY age DESC",
             "SELECT name, age FROM singer ORDER BY age"]
    expected = [_fresh_spider(gold, pred, SCHEMA) for gold in golds]
    assert [v.match for v in expected] == [True, True, False, False]
    spider_profile._predictions.clear()
    assert [exact_match(gold, pred, SCHEMA, profile="spider") for gold in golds] == expected
    assert len(spider_profile._predictions) == 1


def test_a_prediction_that_cannot_be_scored_is_not_kept():
    deep = "SELECT " + "(" * 40 + "1" + ")" * 40 + " FROM singer"
    spider_profile._predictions.clear()
    verdict = exact_match("SELECT name FROM singer", deep, SCHEMA, profile="spider")
    assert not verdict.match and "nested too deeply" in verdict.reason
    assert not spider_profile._predictions


def test_the_kept_predictions_are_bounded(monkeypatch):
    monkeypatch.setattr(spider_profile, "PREDICTIONS_KEPT", 3)
    spider_profile._predictions.clear()
    for age in range(6):
        exact_match("SELECT name FROM singer", f"SELECT name FROM singer WHERE age > {age}", SCHEMA, profile="spider")
    assert len(spider_profile._predictions) == 3


# -- the multiset shortcut ----------------------------------------------------------------------------------
@pytest.mark.parametrize("pred, gold, same", [
    ([1, [2, {"a": 3}]], [1, [2, {"a": 3}]], True),  # same order: the shortcut
    ([[2, {"a": 3}], 1], [1, [2, {"a": 3}]], True),  # another order: counted
    ([1, 1, 2], [1, 2, 2], False),
    ([(1, 2)], [[1, 2]], False),  # a tuple is not a list, as `==` says
    ([1, True], [True, 1.0], True),
])
def test_multiset_match_agrees_with_official_greedy_removal(pred, gold, same):
    def greedy(p, g):
        left = list(g)
        for unit in p:
            if unit not in left:
                return False
            left.remove(unit)
        return not left

    assert greedy(pred, gold) == same
    assert _multiset_match(pred, gold) is same


# -- loading: one resolution per path text, db_ids read once per file ---------------------------------------
def test_load_context_resolves_each_text_once_and_keeps_them_apart(tmp_path):
    (tmp_path / "a.sqlite").write_bytes(b"")
    (tmp_path / "sub").mkdir()
    ctx = LoadContext(tmp_path / "suite.sqleval.yaml")
    first = ctx.resolve("a.sqlite")
    assert first == (tmp_path / "a.sqlite").resolve()
    assert ctx.resolve("a.sqlite") is first
    assert ctx.resolve("sub/../a.sqlite") == first and ctx.resolve("sub") == (tmp_path / "sub").resolve()
    other = LoadContext(tmp_path / "sub" / "suite.sqleval.yaml")  # another file: its own folder
    assert other.resolve("a.sqlite") == (tmp_path / "sub" / "a.sqlite").resolve()


def test_load_context_memo_keeps_values_per_key_and_never_keeps_an_error(tmp_path):
    ctx = LoadContext(tmp_path / "suite.sqleval.yaml")
    calls = []

    def failing():
        calls.append(1)
        raise ValueError("not readable")

    for _ in range(2):
        with pytest.raises(ValueError):
            ctx.memo("x", failing)
    assert len(calls) == 2
    assert ctx.memo("x", lambda: {"a"}) == {"a"}
    assert ctx.memo("x", lambda: {"b"}) == {"a"}
    assert ctx.memo("y", lambda: {"b"}) == {"b"}


def test_a_suite_with_a_bad_db_id_is_still_refused_on_every_case(tmp_path):
    import json

    from pytest_sqleval.loader import load_suite

    (tmp_path / "tables.json").write_text(json.dumps([{
        "db_id": "shop", "table_names_original": ["t"], "table_names": ["t"],
        "column_names_original": [[-1, "*"], [0, "a"]], "column_names": [[-1, "*"], [0, "a"]],
        "column_types": ["text", "text"], "primary_keys": [], "foreign_keys": []}]))
    case = "- {{id: q{0}, gold: SELECT a FROM t, schema: {{tables: tables.json, db_id: {1}}}}}\n"
    (tmp_path / "s.sqleval.yaml").write_text("cases:\n" + case.format(1, "shop") + case.format(2, "shopp"))
    with pytest.raises(SuiteError) as info:
        load_suite(tmp_path / "s.sqleval.yaml")
    assert info.value.line == 3 and "shopp" in str(info.value) and "did you mean `shop`" in str(info.value)


# -- YAML: the alias walk only where there is an anchor ---------------------------------------------------
def test_an_ampersand_without_anchor_loads_and_an_alias_bomb_is_still_refused(tmp_path):
    plain = tmp_path / "plain.yaml"
    plain.write_text("cases:\n- {gold: \"SELECT * FROM t WHERE genre = 'R&B'\"}\n")
    assert read_yaml(plain)["cases"][0]["gold"] == "SELECT * FROM t WHERE genre = 'R&B'"
    bomb = tmp_path / "bomb.yaml"
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i, name in enumerate("bcdefg"):
        previous = "abcdefg"[i]
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 10) + "]")
    bomb.write_text("\n".join(lines) + "\n")
    with pytest.raises(SuiteError, match="alias bomb"):
        read_yaml(bomb)
    recursive = tmp_path / "recursive.yaml"
    recursive.write_text("a: &a [1, *a]\n")
    with pytest.raises(SuiteError, match="recursive"):
        read_yaml(recursive)


# -- bootstrap: numpy once the process's plain draws add up -------------------------------------------------
def test_bootstrap_imports_numpy_once_the_plain_draws_add_up_and_gives_the_same_intervals():
    pytest.importorskip("numpy")
    script = textwrap.dedent("""
        import random, sys
        from pytest_sqleval import stats
        import math
        random.seed(7)
        values = [random.choice([0.0, 0.25, 0.5, 1.0, 1 / 3]) for _ in range(150)]
        for size in (150, 149):  # two intervals of ~150,000 draws each: the plain loop
            stats.bootstrap_mean(values[:size])
        print("numpy" in sys.modules)
        data = tuple(values[:120])  # 120,000 more: past 400,000 in all, numpy is worth importing
        interval = stats.bootstrap_mean(data)
        print("numpy" in sys.modules)
        means = sorted(math.fsum(c) / len(data) for c in stats._choices(data, stats.SEED, stats.RESAMPLES))
        print(interval == (stats.quantile(means, 0.025), stats.quantile(means, 0.975)))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parent).stdout.split()
    assert out == ["False", "True", "True"]


# -- the schema's hash, kept ----------------------------------------------------------------------------------
def test_a_schema_keeps_its_hash_but_never_sends_it_to_another_process():
    import pickle

    first = Schema.from_dict({"t": ["a", "b"], "u": ["c"]}, [("u", "c", "t", "a")])
    same = Schema.from_dict({"t": ["a", "b"], "u": ["c"]}, [("u", "c", "t", "a")])
    other = Schema.from_dict({"t": ["a", "b"], "u": ["c"]})
    assert hash(first) == hash(same) == hash((first.tables, first.foreign_keys)) and first == same
    assert first != other and {first: 1, other: 2}[same] == 1
    # a process with another hash seed reads the pickle and hashes it its own way (text hashes differ per process)
    script = textwrap.dedent("""
        import pickle, sys
        schema = pickle.loads(sys.stdin.buffer.read())
        print(schema._hash is None, hash(schema) == hash((schema.tables, schema.foreign_keys)))
    """)
    out = subprocess.run([sys.executable, "-c", script], input=pickle.dumps(first), capture_output=True, check=True,
                         env={**__import__("os").environ, "PYTHONHASHSEED": "12345"}).stdout.split()
    assert out == [b"True", b"True"]


# -- the official statement cut, in the query process -------------------------------------------------------
STATEMENT_TEXTS = [
    "SELECT name FROM shops WHERE id < 3 ORDER BY id; SELECT id FROM shops",  # test-suite runs the first only
    "SELECT DISTINCT status FROM tickets ORDER BY status",
    "SELECT name FROM shops; -- done",
    ";",
    "-- no answer",
    "SELECT name FROM shops; ;",
    "SELECT count(*) FROM shops;```",  # junk after the statement that does not tokenize
    "SELECT name FROM shops WHERE name = 'a;b'",
    "SELECT 1 FROM shops; " + "x" * 25_000,  # long: cut there too, inside the time budget
    "SELECT 1 FROM shops " + "/* pad */ " * 2_500,  # long, one statement
]


def _outcome(engine, sql: str, rewrite: str):
    from pytest_sqleval.errors import QueryError
    from pytest_sqleval.execution.runner import run_query

    try:
        result = run_query(engine, sql, timeout=10, max_rows=100, untrusted=True, dialect="sqlite", rewrite=rewrite)
    except QueryError as exc:
        return ("error", exc.kind, exc.message)
    return ("ok", tuple(result.columns), [tuple(r) for r in result.rows])


@pytest.mark.parametrize("rewrite", ["official_distinct", "sqlite3_statement"])
def test_the_query_process_cuts_the_official_statement_as_this_process_does(shop_db, monkeypatch, rewrite):
    from pytest_sqleval.execution import runner
    from pytest_sqleval.execution.backends.sqlite import sqlite_engine

    engine = sqlite_engine(shop_db)
    in_process = {}
    monkeypatch.setenv("SQLEVAL_SANDBOX", "0")
    for sql in STATEMENT_TEXTS:
        in_process[sql] = _outcome(engine, sql, rewrite)
    monkeypatch.setenv("SQLEVAL_SANDBOX", "1")
    runner.official_statement.cache_clear()
    for sql in STATEMENT_TEXTS:
        assert _outcome(engine, sql, rewrite) == in_process[sql], sql[:60]
    # no text was cut in this process: the query process cuts every one, inside the time budget
    assert runner.official_statement.cache_info().misses == 0
    kinds = {sql: outcome[:2] for sql, outcome in in_process.items()}
    assert kinds[";"] == ("ok", ()) and kinds["-- no answer"] == ("ok", ())
    if rewrite == "official_distinct":
        assert in_process[STATEMENT_TEXTS[0]] == ("ok", ("name",), [("Avionics",), ("Engines",)])
        assert in_process[STATEMENT_TEXTS[8]][0] == "ok"
    else:  # BIRD: Python's sqlite3 refuses a second statement
        assert in_process[STATEMENT_TEXTS[0]][:2] == ("error", "rejected")
