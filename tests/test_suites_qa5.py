"""Suites written by hand, QA round qa5 (issue 2): bad input gets the file, the case and the fix.

- **A gold that is not one read-only query had no fix.** A gold of two statements (``SELECT 1; SELECT 2``) or a
  write (``DELETE FROM shops``, ``ATTACH ...``) is refused (kind ``rejected``) and errors the case, rightly, but the
  message was only SQLite's words ("You can only execute one statement at a time.", "refused by the read-only
  connection: not authorized") with no ``fix:``, where a gold that fails to run says what to do. It now says the
  gold must be one read-only query and how to get there.
- **A database file that is no SQLite database had no fix.** ``database: schema.sql`` (the script that builds the
  database, a new user's first guess), a Git LFS pointer checked out without ``git lfs pull``, a CSV: each case
  errored with "cannot open SQLite database ...: file is not a database" and nothing more. The message now says
  what the file is and the fix (``setup: [schema.sql]`` for a script, ``git lfs pull`` for a pointer).
- **A 0-byte database file blamed the gold.** SQLite reads an empty file as a database without tables, so every
  gold failed with "no such table" and the fix "correct the gold SQL of case a". The fix now names the empty file.
- **A database file listed as a setup script.** ``setup: [shop.sqlite]`` (read as "the database to start from")
  errored each case with "setup script ... is not UTF-8 text; save it as UTF-8". It is now a collection error on the
  ``setup:`` line saying the file is a SQLite (or DuckDB) database and to name it as the ``database:``.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import make_sqlite


def _suite(pytester: pytest.Pytester, text: str) -> None:
    (pytester.path / "s.sqleval.yaml").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def _run(pytester: pytest.Pytester, *args: str):
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json", *args)
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    return result, {case["id"]: case for case in report["cases"]}


@pytest.mark.parametrize("gold", ["SELECT 1; SELECT 2", "DELETE FROM shops", "ATTACH 'other.db' AS other"])
@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_gold_that_is_not_one_read_only_query_says_the_fix(pytester, gold, workers):
    make_sqlite(pytester.path / "shop.sqlite")
    _suite(pytester, f"""
        database: shop.sqlite
        cases:
          - id: fine
            gold: SELECT 1
            predicted: SELECT 1
          - id: two
            gold: "{gold}"
            predicted: SELECT 1
    """)
    result, cases = _run(pytester, *workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert cases["fine"]["outcome"] == "passed"
    assert cases["two"]["outcome"] == "error" and cases["two"]["error"]["kind"] == "gold"
    output = "\n".join(result.outlines)
    assert "s.sqleval.yaml:6: case two: the gold query failed" in output, output
    assert "fix: the gold SQL of case two must be one read-only query" in output, output
    assert "Traceback" not in output and "INTERNALERROR" not in output


@pytest.mark.parametrize("content, what, fix", [
    (b"CREATE TABLE shops (id INTEGER, name TEXT);\nINSERT INTO shops VALUES (1, 'Avionics');\n",
     "is a text file, not a SQLite database", 'setup: [shop.sqlite]}'),
    (b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n",
     "is a Git LFS pointer", "git lfs pull"),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 200, "its first bytes are not 'SQLite format 3'", "point `database:` at a SQLite database file"),
])
def test_a_database_file_that_is_no_sqlite_database_says_what_it_is_and_the_fix(pytester, content, what, fix):
    (pytester.path / "shop.sqlite").write_bytes(content)
    _suite(pytester, """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT 1, predicted: SELECT 1}
    """)
    result, cases = _run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    error = cases["a"]["error"]
    assert cases["a"]["outcome"] == "error" and error["kind"] == "database"
    assert "file is not a database" in error["message"] and what in error["message"], error["message"]
    output = "\n".join(result.outlines)
    assert "s.sqleval.yaml:3: case a: cannot open SQLite database" in output, output
    fix_lines = [line for line in result.outlines if line.strip().startswith("fix:")]
    assert fix_lines and fix in fix_lines[0], output
    assert "Traceback" not in output and "INTERNALERROR" not in output


def test_a_gold_failing_on_an_empty_database_file_blames_the_file_not_the_gold(pytester):
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "shop.sqlite").write_bytes(b"")  # SQLite reads it as a database without tables
    make_sqlite(pytester.path / "other.sqlite")
    _suite(pytester, """
        database: data/shop.sqlite
        cases:
          - {id: a, gold: SELECT count(*) FROM shops, predicted: SELECT 1}
          - {id: b, gold: SELECT no_such_column FROM shops, predicted: SELECT 1, database: other.sqlite}
    """)
    result, cases = _run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert cases["a"]["outcome"] == cases["b"]["outcome"] == "error"
    fixes = {}
    for number, line in enumerate(result.outlines):
        for case in ("a", "b"):
            if f"s.sqleval.yaml:{3 if case == 'a' else 4}: case {case}: the gold query failed" in line:
                fixes[case] = result.outlines[number + 1]
    assert "is empty (0 bytes)" in fixes["a"] and "correct the gold SQL" not in fixes["a"], fixes
    assert "correct the gold SQL of case b" in fixes["b"], fixes  # a gold that is wrong on a real database


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_database_file_given_as_a_setup_script_is_a_collection_error_saying_to_use_it_as_the_database(
        pytester, engine):
    make_sqlite(pytester.path / "data" / "shop.sqlite")
    _suite(pytester, f"""
        database:
          url: "{engine}://"
          setup: [data/shop.sqlite]
        cases:
          - {{id: a, gold: SELECT count(*) FROM shops, predicted: SELECT 1}}
    """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    output = "\n".join(result.outlines)
    assert "s.sqleval.yaml:3: setup script" in output and "is a SQLite database, not a SQL script" in output, output
    assert "fix: use it as the database: `database: data/shop.sqlite`" in output, output
    assert "save it as UTF-8" not in output and "Traceback" not in output
