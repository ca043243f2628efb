"""Known leftovers, second batch, each reproduced as a user meets it: a user predictor that never answers, a cache
file copied under another key's name, report paths resolved after a test changed the working directory, an empty
shard's Markdown/HTML, DECIMAL/NUMERIC values compared at float precision, and typos the guard called `rejected`."""

from __future__ import annotations

import json
import shutil
import textwrap
import time
from decimal import Decimal
from pathlib import Path

import pytest

from chat_server import chat_fixture
from conftest import make_sqlite, require_module

NAMES = "SELECT name FROM shops"


def write(pytester: pytest.Pytester, name: str, text: str) -> Path:
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def report_of(pytester: pytest.Pytester, name: str = "report.json") -> dict:
    return json.loads((pytester.path / name).read_text(encoding="utf-8"))


def cases_of(report: dict) -> dict:
    return {c["id"]: c for c in report["cases"]}


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite")
    return pytester


# --------------------------------------------------------------------------- 1. a user predictor that hangs
HANGING_PREDICTOR = """
import threading

def predict(case):
    if case.id == "stuck":
        threading.Event().wait()  # never answers
    return "SELECT name FROM shops"
"""

PREDICTOR_FIXTURE = """
import pytest
from hanging import predict

@pytest.fixture(scope="session")
def sqleval_predictor():
    return predict
"""

TWO_CASES = """
suite: s
database: shop.sqlite
cases:
  - {id: stuck, question: Which shops?, gold: SELECT name FROM shops}
  - {id: good, question: Which shops?, gold: SELECT name FROM shops}
"""


@pytest.mark.parametrize("how", ["fixture", "option"])
@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_user_predictor_that_never_answers_times_out_and_the_run_goes_on(shop, how, workers):
    """Before, the run hung forever on `stuck`. Now the model-call timeout applies to the user's predictor too:
    the case is a model_error naming the timeout, as a timed-out endpoint's is, and the other case passes."""
    write(shop, "hanging.py", HANGING_PREDICTOR)
    write(shop, "s.sqleval.yaml", TWO_CASES)
    args = ["--sqleval", "-p", "no:cacheprovider", "--sqleval-json=report.json", "--sqleval-model-timeout=1",
            *workers]
    if how == "fixture":
        write(shop, "conftest.py", PREDICTOR_FIXTURE)
    else:
        args.append("--sqleval-predictor=hanging:predict")
    started = time.monotonic()
    result = shop.runpytest_subprocess(*args, timeout=90)
    assert time.monotonic() - started < 60
    assert result.ret == 0, result.stdout.str()
    cases = cases_of(report_of(shop))
    assert cases["good"]["outcome"] == "passed"
    assert cases["stuck"]["outcome"] == "missed"
    assert cases["stuck"]["error"]["kind"] == "model_error"
    assert cases["stuck"]["error"]["message"].startswith("the predictor timed out after 1.0 s"), cases["stuck"]


# --------------------------------------------------------------------------- 2. the predictions cache's key
def test_a_cache_file_under_another_keys_name_is_a_miss_not_its_answer(tmp_path):
    from pytest_sqleval.model.cache import ResponseCache, cache_key

    cache = ResponseCache(tmp_path, "use")
    first = cache_key("http://x/v1", "m", [{"role": "user", "content": "first"}], {})
    second = cache_key("http://x/v1", "m", [{"role": "user", "content": "second"}], {})
    cache.put(first, {"model": "m"}, {"text": "SELECT 1"})
    assert cache.get(first) == {"text": "SELECT 1"}
    cache.path(second).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cache.path(first), cache.path(second))
    assert cache.get(second) is None
    assert first[:16] in cache.problem(second)
    assert ResponseCache(tmp_path, "only").get(second) is None
    assert cache.problem(first) is None


chat = chat_fixture()


def test_a_run_asks_the_model_again_for_a_copied_cache_file(shop, chat):
    """The cache filled by one run; the answer of `alpha` copied over `beta`'s file (as a careless merge of two
    caches does): the next run must not score alpha's SQL for beta, it calls the model for beta again."""
    require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
    server = chat({"ALPHA": ["SELECT name FROM shops"], "BETA": ["SELECT id FROM shops"]})
    write(shop, "s.sqleval.yaml", """
        suite: s
        database: shop.sqlite
        model: {name: test-model, retries: 0}
        cases:
          - {id: alpha, question: ALPHA which shops?, gold: SELECT name FROM shops}
          - {id: beta, question: BETA which ids?, gold: SELECT id FROM shops}
        """)
    args = ["--sqleval", "-p", "no:cacheprovider", "--sqleval-json=report.json", "--sqleval-cache=cache"]
    assert shop.runpytest(*args).ret == 0
    files = {}
    for path in (shop.path / "cache").rglob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        files["alpha" if "ALPHA" in json.dumps(data["request"]) else "beta"] = path
    assert sorted(files) == ["alpha", "beta"] and server.count == 2
    shutil.copyfile(files["alpha"], files["beta"])
    result = shop.runpytest(*args)
    assert result.ret == 0, result.stdout.str()
    cases = cases_of(report_of(shop))
    assert cases["beta"]["predicted"] == "SELECT id FROM shops" and cases["beta"]["outcome"] == "passed"
    assert cases["beta"]["cached"] is False and cases["alpha"]["cached"] is True
    assert len(server.requests_for("BETA")) == 2 and len(server.requests_for("ALPHA")) == 1


# --------------------------------------------------------------------------- 3. report paths and the working directory
CHDIR_TEST = """
import os

def test_moves_elsewhere(tmp_path_factory):
    os.chdir(tmp_path_factory.mktemp("elsewhere"))
"""

ONE_CASE = """
suite: one
database: shop.sqlite
cases:
  - {id: q1, question: Which shops?, gold: SELECT name FROM shops}
"""

ANSWERING_PREDICTOR = """
import pytest

@pytest.fixture(scope="session")
def sqleval_predictor():
    return lambda case: "SELECT name FROM shops"
"""


def test_relative_report_paths_are_resolved_when_pytest_starts(shop):
    """A test that changes the working directory used to move every relative report (JSON, Markdown, HTML, saved
    predictions) to wherever it went; like --junitxml, they are now resolved against the folder pytest started in."""
    write(shop, "test_a_chdir.py", CHDIR_TEST)
    write(shop, "one.sqleval.yaml", ONE_CASE)
    write(shop, "conftest.py", ANSWERING_PREDICTOR)
    result = shop.runpytest_subprocess(
        "--sqleval", "-p", "no:cacheprovider", "-p", "no:randomly", "--sqleval-json=out/report.json",
        "--sqleval-markdown=out/report.md", "--sqleval-html=out/report.html", "--sqleval-save-predictions=out/p.jsonl",
        "--junitxml=out/junit.xml", timeout=120)
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=2)  # the test that moves, and the case
    out = shop.path / "out"
    for name in ("report.json", "report.md", "report.html", "p.jsonl", "junit.xml"):
        assert (out / name).is_file(), (name, sorted(p.name for p in shop.path.rglob("*") if p.is_file()))
    assert json.loads((out / "report.json").read_text())["cases"][0]["outcome"] == "passed"
    result.stdout.fnmatch_lines([f"sqleval report written to {out / 'report.json'}"])


def test_relative_ini_report_paths_are_resolved_when_pytest_starts(shop):
    write(shop, "test_a_chdir.py", CHDIR_TEST)
    write(shop, "one.sqleval.yaml", ONE_CASE.replace("question: Which shops?, ", "predicted: SELECT name FROM shops, "))
    write(shop, "pytest.ini", """
        [pytest]
        sqleval_json = ini/report.json
        sqleval_markdown = ini/report.md
        sqleval_html = ini/report.html
        """)
    result = shop.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", timeout=120)
    assert result.ret == 0, result.stdout.str()
    for name in ("report.json", "report.md", "report.html"):
        assert (shop.path / "ini" / name).is_file(), name


# --------------------------------------------------------------------------- 4. an empty shard's Markdown and HTML
SHARD_CASE = """
database: shop.sqlite
cases:
  - id: only
    gold: SELECT id FROM shops
    predicted: SELECT id FROM shops
"""


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_an_empty_shard_writes_its_markdown_and_html_too(shop, workers):
    from pytest_sqleval.shard import assign

    write(shop, "one.sqleval.yaml", SHARD_CASE)
    empty = 3 if assign({("one", "only"): 1}, 3)[("one", "only")] != 3 else 2
    runner = shop.runpytest_subprocess if workers else shop.runpytest
    result = runner("--sqleval", "-p", "no:cacheprovider", f"--sqleval-shard={empty}/3", "--sqleval-json=e.json",
                    "--sqleval-markdown=e.md", "--sqleval-html=e.html", *workers)
    assert result.ret == 0, result.stdout.str()
    assert report_of(shop, "e.json")["cases"] == []
    markdown = (shop.path / "e.md").read_text(encoding="utf-8")
    html = (shop.path / "e.html").read_text(encoding="utf-8")
    assert "no cases" in markdown and f"{empty}/3" in markdown
    assert "no cases" in html
    result.stdout.fnmatch_lines(["sqleval Markdown written to *e.md", "sqleval HTML report written to *e.html"])


# --------------------------------------------------------------------------- 5. numbers: value and two decimals
def test_two_decimals_compare_exactly_under_numbers_value():
    from pytest_sqleval.comparison import ComparisonOptions
    from pytest_sqleval.metrics.execution_match import compare_results
    from pytest_sqleval.metrics.soft_f1 import soft_f1
    from pytest_sqleval.results import QueryResult

    value = ComparisonOptions()
    near = Decimal("0.10000000000000000001")  # differs from 0.1 at the 20th significant digit
    long_a, long_b = Decimal("12345678901234567890.5"), Decimal("12345678901234567890.25")

    def same(a, b, options=value) -> bool:
        return compare_results(QueryResult(("x",), [(a,)]), QueryResult(("x",), [(b,)]), options, ordered=False).match

    assert not same(near, Decimal("0.1"))
    assert not same(long_a, long_b)
    assert soft_f1(QueryResult(("x",), [(near,)]), QueryResult(("x",), [(Decimal("0.1"),)])) == 0.0
    # equal decimals still match, whatever their scale, and integral ones equal ints
    assert same(Decimal("2.50"), Decimal("2.5")) and same(Decimal("3.000"), 3) and same(Decimal("NaN"), Decimal("NaN"))
    # the documented behaviour of a decimal beside a float stays: by value, at a float's precision
    assert same(Decimal("0.1"), 0.1) and same(Decimal("3.3333333333333333"), 10 / 3)
    gold, pred = QueryResult(("x", "y"), [(Decimal("0.1"), 1.5)]), QueryResult(("x", "y"), [(0.1, 1.5)])
    assert compare_results(gold, pred, value, ordered=False).match
    # float_decimals still rounds decimals as floats
    rounded = value.with_overrides({"float_decimals": 2})
    assert same(Decimal("0.101"), Decimal("0.1"), rounded)
    # numbers: python was exact already
    assert not same(near, Decimal("0.1"), value.with_overrides({"numbers": "python"}))


def test_two_duckdb_decimals_that_differ_beyond_a_floats_digits_miss(pytester, duckdb_available):
    duckdb = require_module("duckdb")
    conn = duckdb.connect(str(pytester.path / "n.duckdb"))
    conn.execute("CREATE TABLE t (v DECIMAL(38, 30)); INSERT INTO t VALUES (0.100000000000000000001)")
    conn.close()
    write(pytester, "n.sqleval.yaml", """
        database: n.duckdb
        cases:
          - id: exact
            gold: SELECT v FROM t
            predicted: SELECT CAST(0.1 AS DECIMAL(38, 30)) AS v
          - id: same
            gold: SELECT v FROM t
            predicted: SELECT CAST('0.100000000000000000001' AS DECIMAL(38, 30)) AS v
        """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json=report.json")
    cases = cases_of(report_of(pytester))
    assert cases["exact"]["outcome"] == "missed", result.stdout.str()
    assert cases["same"]["outcome"] == "passed"


# --------------------------------------------------------------------------- 6. typos are syntax, statements rejected
TYPOS = """
database: {db}
cases:
  - {{id: selec-alias, gold: SELECT name FROM shops, predicted: "SELEC name"}}
  - {{id: selec-from, gold: SELECT name FROM shops, predicted: "SELEC name FROM shops"}}
  - {{id: bare-word, gold: SELECT name FROM shops, predicted: "SELEC"}}
  - {{id: junk, gold: SELECT name FROM shops, predicted: "FOO name FROM shops"}}
  - {{id: delete, gold: SELECT name FROM shops, predicted: "DELETE FROM shops"}}
  - {{id: two, gold: SELECT name FROM shops, predicted: "SELECT name FROM shops; DELETE FROM shops"}}
  - {{id: outside, gold: SELECT name FROM shops, predicted: "SELECT load_extension('x')"}}
"""


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_typo_is_syntax_and_a_refused_statement_stays_rejected(pytester, engine, duckdb_available):
    if engine == "sqlite":
        make_sqlite(pytester.path / "shop.sqlite")
        db = "shop.sqlite"
    else:
        duckdb = require_module("duckdb")
        conn = duckdb.connect(str(pytester.path / "shop.duckdb"))
        conn.execute("CREATE TABLE shops (id INTEGER, name TEXT); INSERT INTO shops VALUES (1, 'Avionics')")
        conn.close()
        db = "shop.duckdb"
    write(pytester, "t.sqleval.yaml", TYPOS.format(db=db))
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json=report.json")
    kinds = {i: c["error"]["kind"] for i, c in cases_of(report_of(pytester)).items()}
    assert kinds == {"selec-alias": "syntax", "selec-from": "syntax", "bare-word": "syntax", "junk": "syntax",
                     "delete": "rejected", "two": "rejected", "outside": "rejected"}, result.stdout.str()
    messages = {i: c["error"]["message"] for i, c in cases_of(report_of(pytester)).items()}
    assert "SELEC" in messages["selec-alias"] and "not a query" not in messages["selec-alias"]
    if engine == "sqlite":
        import sqlite3

        assert sqlite3.connect(pytester.path / "shop.sqlite").execute("SELECT count(*) FROM shops").fetchone()[0] == 3


def test_the_engine_parse_check_never_runs_the_statement(tmp_path):
    """The check parses only: a statement it is asked about never changes anything."""
    from pytest_sqleval.execution.runner import engine_parse_error

    assert engine_parse_error("SELEC name", "sqlite") is not None
    assert engine_parse_error("CREATE TABLE x (a INT)", "sqlite") is None
    assert engine_parse_error("ATTACH DATABASE 'x.db' AS x", "sqlite") is None
    assert engine_parse_error("SELEC name", "postgres") is None  # PostgreSQL: the guard's word stands
    duckdb = require_module("duckdb")
    assert engine_parse_error("SELEC name", "duckdb") is not None
    assert engine_parse_error(f"COPY (SELECT 1) TO '{tmp_path / 'out.csv'}'", "duckdb") is None
    assert not (tmp_path / "out.csv").exists() and not Path("x.db").exists()
    assert duckdb is not None
