"""Bad input is a clear error (file, line, fix), never a traceback: numbers, predictions files, YAML, schemas."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import make_sqlite
from pytest_sqleval.errors import SuiteError
from pytest_sqleval.loader import load_suite
from pytest_sqleval.predictions import conflicting_ids, load_predictions, printable_text
from pytest_sqleval.settings import check_count, check_seconds, parse_size
from pytest_sqleval.yaml_lines import MAX_ALIAS_EXPANSION

SUITE = """
suite: shop
database: shop.sqlite
cases:
  - {id: a, gold: SELECT count(*) FROM tickets, predicted: SELECT count(*) FROM tickets}
  - {id: b, gold: SELECT name FROM shops ORDER BY id, predicted: SELECT name FROM shops ORDER BY id}
"""


@pytest.fixture
def shop_suite(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(SUITE))
    return pytester


def load_error(path) -> str:
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    return info.value.render()


# --------------------------------------------------------------------------- numbers
@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "0", "-1", "86401", "1e400", "ten"])
def test_bad_timeouts_are_refused(text):
    with pytest.raises(ValueError, match="number of seconds"):
        check_seconds(text)


def test_timeout_bounds_are_inclusive():
    assert check_seconds("86400") == 86400.0
    assert check_seconds(0.001) == 0.001


@pytest.mark.parametrize("text", ["0", "-5", "1.5", "99999999999999999999999", "1000000001", "nan"])
def test_bad_row_caps_are_refused(text):
    with pytest.raises(ValueError, match="row cap"):
        check_count(text, "the row cap")


@pytest.mark.parametrize(
    "text, size",
    [("2GiB", 2 * 2**30), ("512MB", 512_000_000), ("512M", 512 * 2**20), ("1073741824", 2**30),
     ("1.5 GiB", int(1.5 * 2**30)), (4 * 2**20, 4 * 2**20)],
)
def test_memory_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf", "2XB", "lots", "100", "2PiB", True])
def test_bad_memory_sizes_are_refused(text):
    with pytest.raises(ValueError, match="max_memory"):
        parse_size(text)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--sqleval-timeout", "nan"], "the timeout must be a number of seconds greater than 0 and at most 86400, not nan"),
        (["--sqleval-timeout", "inf"], "at most 86400, not inf"),
        (["--sqleval-max-rows", "99999999999999999999999"], "the row cap must be between 1 and 1,000,000,000"),
        (["--sqleval-max-memory", "lots"], "the memory cap is a size such as 2GiB"),
        (["--sqleval-max-memory", "0"], "the memory cap must be between 1MiB and 1PiB"),
        (["--sqleval-connect-timeout", "-1"], "the connect timeout must be a number of seconds greater than 0"),
        (["--sqleval-threshold", "error_count=nan"], "must be a finite number"),
        (["--sqleval-threshold", "execution_accuracy=inf"], "must be a finite number"),
    ],
)
def test_bad_numbers_on_the_command_line(shop_suite, args, fragment):
    result = shop_suite.runpytest("--sqleval", *args)
    assert result.ret == 4  # a usage error: nothing ran
    assert fragment in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize(
    "ini, fragment",
    [
        ("sqleval_timeout = nan", "ini option sqleval_timeout: the timeout must be a number of seconds"),
        ("sqleval_max_rows = 1e30", "ini option sqleval_max_rows: the row cap is a whole number"),
        ("sqleval_max_memory = -2GiB", "ini option sqleval_max_memory: the memory cap is a size"),
        ("sqleval_connect_timeout = inf", "ini option sqleval_connect_timeout: the connect timeout must be"),
        ("sqleval_thresholds = error_count=nan", "ini option sqleval_thresholds: threshold for error_count must be a finite"),
    ],
)
def test_bad_numbers_in_the_ini_file(shop_suite, ini, fragment):
    shop_suite.makeini(f"[pytest]\n{ini}\n")
    result = shop_suite.runpytest("--sqleval")
    assert result.ret == 4
    assert fragment in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("timeout: .nan", "`timeout:` must be a number of seconds greater than 0 and at most 86400, not nan"),
        ("timeout: .inf", "not inf"),
        ("timeout: 90000", "not 90000"),
        ("max_rows: 99999999999999999999999", "`max_rows:` must be between 1 and 1,000,000,000"),
        ("max_rows: 2.5", "`max_rows:` must be a whole number"),
        ("max_memory: 0", "`max_memory:` must be between 1MiB and 1PiB"),
        ("max_memory: .nan", "`max_memory:` must be a finite size"),
        ("connect_timeout: .nan", "`connect_timeout:` must be a number of seconds"),
        ("thresholds: {error_count: .nan}", "threshold for error_count must be a finite number"),
        ("thresholds: {soft_f1: .inf}", "threshold for soft_f1 must be a finite number"),
    ],
)
def test_bad_numbers_in_the_suite(shop_db, write_suite, line, fragment):
    path = write_suite(f"database: shop.sqlite\n{line}\ncases:\n  - {{id: a, gold: SELECT 1}}\n")
    rendered = load_error(path)
    assert rendered.startswith(f"{path}:2: "), rendered
    assert fragment in rendered


def test_max_memory_and_connect_timeout_precedence(shop_suite):
    """max_memory: command line, then the suite, then ini, then 2 GiB; the same for the connect timeout."""
    shop_suite.makefile(".sqleval.yaml", own=textwrap.dedent(SUITE).replace("suite: shop", "suite: own\nmax_memory: 1GiB\n"
                                                                            "connect_timeout: 3"))
    shop_suite.makeconftest("""
        def pytest_collection_finish(session):
            from pytest_sqleval.state import sqleval_state
            state = sqleval_state(session.config)
            for suite in sorted(state.suites.values(), key=lambda s: s.name):
                spec = suite.cases[0].database
                print(f"LIMITS {suite.name} {state.max_memory_for(suite)} {state.engines.timeout_for(spec):g}")
    """)
    result = shop_suite.runpytest("--sqleval", "-s", "--co", "-q")
    result.stdout.fnmatch_lines(["LIMITS own 1073741824 3", "LIMITS shop 2147483648 10"])
    shop_suite.makeini("[pytest]\nsqleval_max_memory = 512MiB\nsqleval_connect_timeout = 4\n")
    result = shop_suite.runpytest("--sqleval", "-s", "--co", "-q")
    result.stdout.fnmatch_lines(["LIMITS own 1073741824 3", "LIMITS shop 536870912 4"])
    result = shop_suite.runpytest("--sqleval", "-s", "--co", "-q", "--sqleval-max-memory", "256MB",
                                  "--sqleval-connect-timeout", "5")
    result.stdout.fnmatch_lines(["LIMITS own 256000000 5", "LIMITS shop 256000000 5"])


# --------------------------------------------------------------------------- predictions files
def _run_json(pytester, *args):
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    return result, (json.loads(report.read_text(encoding="utf-8")) if report.exists() else None)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_invalid_text_in_predictions_is_a_syntax_miss(shop_suite, workers):
    preds = shop_suite.path / "preds.jsonl"
    preds.write_bytes(b'{"id": "a", "sql": "SELECT count(*) FROM tickets WHERE status = \'\xff\xfe\'"}\n'
                      b'{"id": "b", "sql": "SELECT name FROM shops WHERE name = \'\\ud800\' ORDER BY id"}\n')
    result, report = _run_json(shop_suite, f"--sqleval-predictions={preds}", *workers)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert result.parseoutcomes() == {"missed": 2}
    assert result.ret == 0
    cases = {c["id"]: c for c in report["cases"]}
    assert set(cases) == {"a", "b"}
    for case in cases.values():
        assert case["error"]["kind"] == "syntax"
        assert "the prediction is not valid UTF-8 text" in case["error"]["message"]
        assert "\ufffd" in case["predicted"]
    assert cases["a"]["predicted"] == "SELECT count(*) FROM tickets WHERE status = '\ufffd\ufffd'"


def test_printable_text_replaces_lone_surrogates():
    assert printable_text("SELECT '\udcff\ud800'") == "SELECT '\ufffd\ufffd'"
    assert printable_text("SELECT '😀'") == "SELECT '😀'"  # a real astral character stays
    assert printable_text(None) is None


def test_deeply_nested_line_names_the_file_and_line(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "a", "sql": "SELECT 1"}\n' + "[" * 100_000 + "\n")
    with pytest.raises(SuiteError) as info:
        load_predictions(path)
    assert info.value.render().startswith(f"{path}:2: the JSON is nested too deeply to read")


def test_deeply_nested_line_is_a_usage_error_of_the_run(shop_suite):
    preds = shop_suite.path / "preds.jsonl"
    preds.write_text("[" * 100_000 + "\n")
    result = shop_suite.runpytest("--sqleval", f"--sqleval-predictions={preds}")
    assert result.ret == 4
    assert f"{preds}:1: the JSON is nested too deeply to read" in result.stderr.str()


def test_an_id_with_invalid_text_is_an_error(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"id": "a\xff", "sql": "SELECT 1"}\n')
    with pytest.raises(SuiteError) as info:
        load_predictions(path)
    assert info.value.render().startswith(f"{path}:1: \"id\" is not valid UTF-8 text")


def test_plain_and_qualified_id_for_the_same_case_name_both_lines(shop_suite):
    preds = shop_suite.path / "preds.jsonl"
    preds.write_text('{"id": "b", "sql": "SELECT 1"}\n{"id": "a", "sql": "SELECT 1"}\n'
                     '{"id": "shop::a", "sql": "SELECT 2"}\n')
    result = shop_suite.runpytest_subprocess("--sqleval", f"--sqleval-predictions={preds}", "-p", "no:cacheprovider")
    output = result.stdout.str()
    assert "case 'a' of suite 'shop' has two predictions: 'a' on line 2 and 'shop::a' on line 3" in output
    assert result.ret != 0
    assert "passed" not in result.parseoutcomes()


def test_conflicting_ids_only_for_a_collected_case():
    from pytest_sqleval.predictions import Prediction

    predictions = {p.case_id: p for p in (Prediction("a", "x", 1), Prediction("s::a", "y", 4), Prediction("t::a", "z", 5))}
    assert conflicting_ids(predictions, {"s::a"}) == ["case 'a' of suite 's' has two predictions: 'a' on line 1 and "
                                                      "'s::a' on line 4"]


def test_duplicate_ids_are_an_error_also_as_number_and_text(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": 7, "sql": "SELECT 1"}\n{"id": "7", "sql": "SELECT 2"}\n')
    with pytest.raises(SuiteError, match=r"p.jsonl:2: duplicate prediction for case '7' \(first on line 1\)"):
        load_predictions(path)


# --------------------------------------------------------------------------- YAML and schemas
@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("database: shop.sqlite\ncases:\n  - id: a\n    gold: SELECT 1\n    ? [x, y]\n    : 1\n", 5,
         "a mapping key must be text, not a list"),
        ("database: shop.sqlite\ncases:\n  - id: a\n    gold: SELECT 1\n    metadata: {1: one}\n", 5,
         "a mapping key must be text, not 1"),
        ("database: shop.sqlite\nyes: 1\ncases:\n  - {id: a, gold: SELECT 1}\n", 2, "a mapping key must be text, not True"),
    ],
)
def test_non_string_yaml_keys(shop_db, write_suite, text, line, fragment):
    path = write_suite(text)
    rendered = load_error(path)
    assert rendered.startswith(f"{path}:{line}: {fragment}"), rendered
    assert "quote the key" in rendered


def test_anchor_bomb_in_metadata_is_refused_with_the_limit(shop_db, write_suite):
    levels = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 6):
        levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    metadata = "\n".join("      " + level for level in levels)
    path = write_suite(f"database: shop.sqlite\ncases:\n  - id: a\n    gold: SELECT 1\n    metadata:\n{metadata}\n")
    rendered = load_error(path)
    assert rendered.startswith(f"{path}:5: `metadata:` is larger than 64 KiB (the limit per case"), rendered


def test_alias_explosion_anywhere_is_refused(shop_db, write_suite):
    levels = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]']
    for i in range(1, 8):
        levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    notes = "\n".join("      " + level for level in levels)
    path = write_suite(f"database: shop.sqlite\ncases:\n  - id: a\n    gold: SELECT 1\n    notes:\n{notes}\n")
    rendered = load_error(path)
    assert f"more than {MAX_ALIAS_EXPANSION:,} beyond what is written" in rendered


def test_small_anchors_still_work(shop_db, write_suite):
    path = write_suite("""
        database: &db shop.sqlite
        cases:
          - {id: a, gold: &g SELECT 1, database: *db, metadata: &m {source: x, labels: [a, b]}}
          - {id: b, gold: *g, metadata: *m}
    """)
    suite = load_suite(path)
    assert suite.cases[1].gold == "SELECT 1"
    assert suite.cases[1].extra == {"source": "x", "labels": ["a", "b"]}


SPIDER_TABLES = [{"db_id": "shop", "table_names_original": ["shops"], "column_names_original": [[-1, "*"], [0, "id"]],
                  "table_names": ["shops"], "column_names": [[-1, "*"], [0, "id"]], "column_types": ["text", "number"],
                  "primary_keys": [1], "foreign_keys": []}]


def test_unknown_db_id_names_the_file_the_line_and_the_known_ids(tmp_path, write_suite):
    (tmp_path / "tables.json").write_text(json.dumps(SPIDER_TABLES))
    path = write_suite("schema: {tables: tables.json, db_id: shpo}\ncases:\n  - {id: a, gold: SELECT id FROM shops}\n")
    rendered = load_error(path)
    assert rendered.startswith(f"{path}:1: db_id 'shpo' is not in {tmp_path / 'tables.json'}"), rendered
    assert "did you mean `shop`?" in rendered


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{not json", "the schema file is not valid JSON"),
        ('{"db_id": "shop"}', "the schema file holds a JSON dict, not a list of databases"),
        ('[{"db_id": "shop"}]', "entry #1 (shop) has no table_names_original list"),
        ('[{"tables": []}]', 'entry #1 of the schema file has no "db_id" text'),
    ],
)
def test_malformed_tables_json_is_a_clear_error(tmp_path, write_suite, content, fragment):
    (tmp_path / "tables.json").write_text(content)
    path = write_suite("schema: {tables: tables.json, db_id: shop}\ncases:\n  - {id: a, gold: SELECT id FROM shops}\n")
    rendered = load_error(path)
    assert rendered.startswith(f"{path}:1: {fragment}"), rendered
    assert str(tmp_path / "tables.json") in rendered
    assert "fix: give a Spider-format tables.json" in rendered


def test_malformed_tables_json_entry_at_setup_is_a_clean_suite_error(tmp_path):
    from pytest_sqleval.schema import Schema

    bad = [{**SPIDER_TABLES[0], "column_names_original": [[-1, "*"], [5, "id"]]}]
    (tmp_path / "tables.json").write_text(json.dumps(bad))
    with pytest.raises(SuiteError, match=r"the entry for db_id 'shop' is malformed \(IndexError"):
        Schema.from_spider_tables(tmp_path / "tables.json", "shop")
