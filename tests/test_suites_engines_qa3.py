"""Suites, engines, gold checks and their messages, QA round qa3 (issues 2, 3 and 4): what a new user meets.

- **Gold-check findings did not say which suite.** ``--sqleval-check-gold`` over several suites printed
  ``warning a: limit_without_order ...`` and ``warning a: single_null ...`` for two suites that both have a case
  ``a``: nothing told which file to fix. With more than one suite checked, each line now names the case as
  ``<suite>::<id>`` (the way predictions files and reports tell suites apart).
- **A test-suite miss showed another database's diff without naming it.** A case with ``databases: [a, b]``
  whose prediction matches on ``a`` and not on ``b`` printed ``values: 1 gold row is missing ...`` and a result
  table from ``b``, beside a ``soft_f1: 1.0000`` computed on ``a``: nothing said the rows shown come from ``b``. The
  reason now ends with ``(on <database>)`` when the case has several databases (as a prediction that fails on a
  later database already says ``on <database>: ...``).
- **A misspelt ``profile:`` in ``execution:`` / ``exact_match:`` had no suggestion.** ``execution: {profil:
  bird}`` listed the comparison options (not ``profile``) with the fix "use an option the message lists", and
  ``exact_match: {profil: spider}`` listed ``values`` only: the README promises the closest valid key. Both now
  suggest ``profile:``.
- **An overridden ``sqleval_engine_factory`` served only a case's first database.** The README: "the plugin
  calls it with each database's URL". A case with ``databases: [a, b]`` under a conftest.py whose factory points
  every database elsewhere ran its gold and prediction on the factory's engine for ``a`` and on the plugin's own
  engine for ``b`` (the factory was never called for ``b``), so test-suite accuracy mixed two sources. Every
  database of the case now goes through the fixture (serially and under xdist).
- **A gold that fails to run named no fix.** Every other bad input is ``file:line: message`` plus ``fix:``; a gold
  query the engine refuses (``no such column``) was ``...: the gold query failed on ... (syntax): ...`` alone. It
  now says to correct the case's gold SQL (or its database), and that it is the suite's error, not the model's.
- **``database: "$HOME/shop.sqlite"``.** Only ``${VAR}`` expands; the bare ``$HOME`` stayed in the path and the
  error was "database file not found: .../$HOME/shop.sqlite" with the fix "check the path". The fix now says to
  write ``${HOME}``.
- **A suite's own predictions file that also holds another suite's lines.** Two suites whose ``predictions:``
  name one shared file (``<suite>::<id>`` lines, the shape of ``sqleval import``'s combined ``predictions.jsonl``)
  were each refused with "has ids that match no case: two::a" and the fix "fix the ids or remove those lines",
  naming no line. The message now gives each id's line, says such ids address another suite, and gives the fix:
  each suite its own file, or the shared file through ``--sqleval-predictions``.
"""

from __future__ import annotations

import json
import sqlite3
import textwrap

import pytest

from conftest import SHOP_SQL


def _db(path, script: str = SHOP_SQL):
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()


def _write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def _run(pytester, *args):
    return pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", *args)


# --------------------------------------------------------------------------------------------- gold checks
def test_gold_check_lines_name_the_suite_when_several_suites_share_a_case_id(pytester):
    _db(pytester.path / "shop.sqlite")
    _write(pytester.path / "one.sqleval.yaml", """\
        database: shop.sqlite
        cases:
          - {id: a, gold: "SELECT name FROM shops LIMIT 1"}
    """)
    _write(pytester.path / "nested" / "deeper" / "two.sqleval.yaml", """\
        database: ../../shop.sqlite
        cases:
          - {id: a, gold: "SELECT max(id) FROM shops WHERE id > 1000"}
          - {id: b, gold: "SELECT nope FROM shops"}
    """)
    result = _run(pytester, "--sqleval-check-gold")
    out = result.stdout.str()
    assert result.ret == 1, out
    assert "warning one::a: limit_without_order" in out, out
    assert "warning two::a: single_null" in out, out
    assert "BROKEN two::b: the gold query failed" in out, out


def test_gold_check_lines_of_one_suite_keep_the_bare_case_id(pytester):
    _db(pytester.path / "shop.sqlite")
    _write(pytester.path / "one.sqleval.yaml", """\
        database: shop.sqlite
        cases:
          - {id: a, gold: "SELECT name FROM shops LIMIT 1"}
          - id: conv
            interaction:
              - {gold: "SELECT max(id) FROM shops WHERE id > 1000"}
    """)
    result = _run(pytester, "--sqleval-check-gold")
    out = result.stdout.str()
    assert "warning a: limit_without_order" in out, out
    assert "warning conv/1: single_null" in out, out
    assert "::a" not in out.split("sqleval gold check")[1], out


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]])
def test_a_gold_that_fails_to_run_names_the_fix(pytester, xdist):
    _db(pytester.path / "shop.sqlite")
    _write(pytester.path / "one.sqleval.yaml", """\
        database: shop.sqlite
        timeout: 1
        cases:
          - {id: ok, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops"}
          - {id: typo, gold: "SELECT nme FROM shops", predicted: "SELECT name FROM shops"}
          - id: conv
            interaction:
              - {gold: "SELECT 1", predicted: "SELECT 1"}
              - {gold: "SELECT * FROM nowhere", predicted: "SELECT 1"}
    """)
    result = _run(pytester, *xdist)
    out = result.stdout.str()
    result.assert_outcomes(passed=2, errors=2)
    assert "one.sqleval.yaml:5: case typo: the gold query failed on" in out, out
    assert "  fix: correct the gold SQL of case typo so that it runs on its database" in out, out
    assert "one.sqleval.yaml:9: case conv/2: the gold query failed on" in out, out
    assert "  fix: correct the gold SQL of case conv/2" in out, out
    assert "Traceback" not in out


# --------------------------------------------------------------------------------------- test-suite accuracy
def test_a_test_suite_miss_names_the_database_its_diff_comes_from(pytester):
    _db(pytester.path / "v" / "a.sqlite", "CREATE TABLE t (id INT, shop TEXT); INSERT INTO t VALUES (1, 'A'), (2, 'B');")
    _db(pytester.path / "v" / "b.sqlite", "CREATE TABLE t (id INT, shop TEXT); INSERT INTO t VALUES (1, 'A'), (2, 'C');")
    _write(pytester.path / "ts.sqleval.yaml", """\
        databases: [v/a.sqlite, v/b.sqlite]
        cases:
          - {id: overfit, gold: "SELECT shop FROM t WHERE id = 2", predicted: "SELECT 'B'"}
          - {id: first, gold: "SELECT shop FROM t WHERE id = 1", predicted: "SELECT 'Z'"}
    """)
    report = pytester.path / "r.json"
    result = _run(pytester, "-v", f"--sqleval-json={report}")
    out = result.stdout.str()
    assert "overfit: values: 1 gold row is missing from the prediction, 1 predicted row is not in the gold " \
           "(on sqlite:///" in out and "v/b.sqlite)" in out, out
    assert "first: values: 1 gold row is missing from the prediction, 1 predicted row is not in the gold " \
           "(on sqlite:///" in out and "v/a.sqlite)" in out, out
    cases = {c["id"]: c for c in json.loads(report.read_text())["cases"]}
    assert cases["overfit"]["mismatch"]["database"].endswith("v/b.sqlite")
    assert [d["execution_match"] for d in cases["overfit"]["databases"]] == [True, False]


def test_a_miss_on_a_single_database_does_not_name_it(pytester):
    _db(pytester.path / "shop.sqlite")
    _write(pytester.path / "one.sqleval.yaml", """\
        database: shop.sqlite
        cases:
          - {id: q, gold: "SELECT name FROM shops", predicted: "SELECT 'nobody'"}
    """)
    out = _run(pytester).stdout.str()
    assert "q: row_count: gold has 3 rows, the prediction 1\n" in out, out
    assert "(on sqlite:" not in out, out


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]])
def test_an_overridden_engine_factory_serves_every_database_of_a_case(pytester, xdist):
    make = "CREATE TABLE t (id INT, shop TEXT); INSERT INTO t VALUES "
    _db(pytester.path / "a.sqlite", make + "(1, 'A'), (2, 'B');")
    _db(pytester.path / "b.sqlite", make + "(1, 'A'), (2, 'C');")
    _db(pytester.path / "staging.sqlite", make + "(1, 'S'), (2, 'S'), (3, 'S');")
    _write(pytester.path / "evals" / "conftest.py", """\
        from pathlib import Path

        import pytest

        STAGING = Path(__file__).parent.parent / "staging.sqlite"


        @pytest.fixture(scope="session")
        def sqleval_engine_factory(sqleval_engine_factory):
            def make(url, setup=None):
                with open(Path(__file__).parent.parent / "calls.txt", "a") as calls:
                    calls.write(url.rsplit("/", 1)[1] + "\\n")
                return sqleval_engine_factory(STAGING)
            return make
    """)
    _write(pytester.path / "evals" / "ts.sqleval.yaml", """\
        databases: [../a.sqlite, ../b.sqlite]
        cases:
          - {id: staging, gold: "SELECT count(*) FROM t", predicted: "SELECT 3"}
    """)
    report = pytester.path / "r.json"
    result = _run(pytester, f"--sqleval-json={report}", *xdist)
    result.assert_outcomes(passed=1)
    case = json.loads(report.read_text())["cases"][0]
    assert [d["execution_match"] for d in case["databases"]] == [True, True], case
    assert set((pytester.path / "calls.txt").read_text().split()) == {"a.sqlite", "b.sqlite"}


# ------------------------------------------------------------------------------------------ unknown keys
@pytest.mark.parametrize("key, text", [
    ("execution", "{profil: bird}"),
    ("execution", "{Profile: bird, duplicates: bag}"),
    ("exact_match", "{profil: spider}"),
    ("exact_match", "{profle: sqleval, values: ignore}"),
])
def test_a_misspelt_profile_key_suggests_profile(pytester, key, text):
    _db(pytester.path / "shop.sqlite")
    _write(pytester.path / "one.sqleval.yaml", f"""\
        database: shop.sqlite
        {key}: {text}
        cases:
          - {{id: a, gold: "SELECT 1", predicted: "SELECT 1"}}
    """)
    result = _run(pytester)
    out = result.stdout.str()
    assert "one.sqleval.yaml:2:" in out, out
    assert "profile:" in out.split("fix:", 1)[1].splitlines()[0], out
    assert "Traceback" not in out


@pytest.mark.parametrize("written", ["$SQLEVAL_QA3_DIR/shop.sqlite", "sqlite:///$SQLEVAL_QA3_DIR/shop.sqlite"])
def test_a_bare_dollar_variable_in_a_database_path_is_named_in_the_fix(pytester, monkeypatch, written):
    monkeypatch.setenv("SQLEVAL_QA3_DIR", str(pytester.path))
    _db(pytester.path / "shop.sqlite")
    _write(pytester.path / "one.sqleval.yaml", f"""\
        database: "{written}"
        cases:
          - {{id: a, gold: "SELECT 1", predicted: "SELECT 1"}}
    """)
    out = _run(pytester).stdout.str()
    assert "one.sqleval.yaml:1: database file not found" in out, out
    assert "fix: write ${SQLEVAL_QA3_DIR} for the environment variable" in out, out
    _write(pytester.path / "one.sqleval.yaml", f"""\
        database: "{written.replace('$SQLEVAL_QA3_DIR', '${SQLEVAL_QA3_DIR}')}"
        cases:
          - {{id: a, gold: "SELECT 1", predicted: "SELECT 1"}}
    """)
    _run(pytester).assert_outcomes(passed=1)


@pytest.mark.parametrize("text, fix", [
    ("{profile: spider, value_placeholdr: true}", "fix: write `value_placeholder: true`"),
    ("{profile: sqleval, Values: ignore}", "fix: write `values: ignore`"),
])
def test_a_misspelt_exact_match_option_suggests_the_profiles_own_option(pytester, text, fix):
    _db(pytester.path / "shop.sqlite")
    _write(pytester.path / "one.sqleval.yaml", f"""\
        database: shop.sqlite
        exact_match: {text}
        cases:
          - {{id: a, gold: "SELECT 1", predicted: "SELECT 1"}}
    """)
    out = _run(pytester).stdout.str()
    assert "one.sqleval.yaml:2:" in out and fix in out, out


# ------------------------------------------------------------------------------------------ predictions files
def test_a_suite_predictions_file_holding_another_suites_lines_says_so(pytester):
    _db(pytester.path / "shop.sqlite")
    (pytester.path / "preds.jsonl").write_text(
        '{"id": "one::a", "sql": "SELECT 1"}\n{"id": "two::a", "sql": "SELECT 2"}\n{"id": "zz", "sql": "SELECT 3"}\n')
    _write(pytester.path / "one.sqleval.yaml", """\
        database: shop.sqlite
        predictions: preds.jsonl
        cases:
          - {id: a, gold: "SELECT 1"}
    """)
    result = _run(pytester, "one.sqleval.yaml")
    out = result.stdout.str()
    assert "two::a (line 2)" in out and "zz (line 3)" in out, out
    assert "another suite" in out, out
    assert "--sqleval-predictions" in out.split("fix:", 1)[1], out


def test_the_shared_file_works_through_the_command_line(pytester):
    _db(pytester.path / "shop.sqlite")
    (pytester.path / "preds.jsonl").write_text(
        '{"id": "one::a", "sql": "SELECT 1"}\n{"id": "two::a", "sql": "SELECT 3"}\n')
    _write(pytester.path / "one.sqleval.yaml", """\
        database: shop.sqlite
        cases:
          - {id: a, gold: "SELECT 1"}
    """)
    _write(pytester.path / "sub" / "two.sqleval.yaml", """\
        database: ../shop.sqlite
        cases:
          - {id: a, gold: "SELECT 2"}
    """)
    result = _run(pytester, "--sqleval-predictions", "preds.jsonl")
    result.assert_outcomes(passed=1)
    assert "1 missed" in result.stdout.str()


def test_a_sqlite_uri_filename_is_named_with_the_plain_path_to_write(pytester):
    """`sqlite:///file:x.sqlite?mode=ro&uri=true` (SQLite's URI form): a bad-input message naming the file, the line
    and the plain path to write, not "database file not found: .../file:x.sqlite"."""
    connection = sqlite3.connect(pytester.path / "x.sqlite")
    connection.execute("CREATE TABLE t (x INTEGER)")
    connection.commit()
    connection.close()
    pytester.makefile(".sqleval.yaml", u='suite: u\ndatabase: "sqlite:///file:x.sqlite?mode=ro&uri=true"\n'
                                          'cases:\n  - {id: a, gold: "SELECT x FROM t", predicted: "SELECT x FROM t"}\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    text = result.stdout.str()
    assert "u.sqleval.yaml:2: a SQLite URI filename is not read here" in text, text
    assert "fix: write the file's path, `database: sqlite:///x.sqlite`" in text, text
    assert "Traceback" not in text


def test_a_file_literally_named_file_colon_is_still_a_path(pytester):
    name = "file:odd.sqlite"
    connection = sqlite3.connect(str(pytester.path / name))
    connection.execute("CREATE TABLE t (x INTEGER)")
    connection.execute("INSERT INTO t VALUES (1)")
    connection.commit()
    connection.close()
    pytester.makefile(".sqleval.yaml", u=f'suite: u\ndatabase: "sqlite:///{name}"\n'
                                          'cases:\n  - {id: a, gold: "SELECT x FROM t", predicted: "SELECT x FROM t"}\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
