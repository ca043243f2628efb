"""QA round 9 on databases: globs inside a `databases:` list, a glob that matches nothing, and the paths of
`sqleval_engine_factory` read from the test file's folder (as the `sqleval_database` marker reads its own)."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path

TSA_CASES = """
cases:
  - {id: robust, gold: "SELECT id FROM t WHERE v >= 10", predicted: "SELECT id FROM t WHERE v > 9"}
  - {id: overfit, gold: "SELECT id FROM t WHERE v >= 10", predicted: "SELECT id FROM t WHERE id < 3"}
"""


def make_db(path: Path, rows: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(f"CREATE TABLE t (id INT, v INT); INSERT INTO t VALUES {rows};")
    conn.close()


def run(pytester, *args):
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    return result, (json.loads(report.read_text()) if report.exists() else None)


def variants(pytester) -> None:
    """main.sqlite and v/a.sqlite agree with both predictions; on v/b.sqlite `id < 3` misses row 3."""
    make_db(pytester.path / "main.sqlite", "(1, 10), (2, 20)")
    make_db(pytester.path / "v" / "a.sqlite", "(1, 10), (2, 20)")
    make_db(pytester.path / "v" / "b.sqlite", "(1, 10), (2, 20), (3, 30)")


def test_a_glob_inside_a_databases_list_expands_to_its_matches(pytester):
    """`databases: ["v/*.sqlite"]` was read as a file named `*.sqlite` ("database file not found", with a hint to
    write `v/b.sqlite`); it is a glob as the single string is. Test-suite accuracy: robust right on both, overfit
    wrong on b -> EX 1.0 (first database), TSA 1/2."""
    variants(pytester)
    pytester.makefile(".sqleval.yaml", s='databases: ["v/*.sqlite"]\n' + TSA_CASES)
    result, report = run(pytester)
    assert result.parseoutcomes() == {"passed": 1, "missed": 1}, result.stdout.str()
    metrics = report["suites"][0]["metrics"]
    assert (metrics["execution_accuracy"], metrics["test_suite_accuracy"]) == (1.0, 0.5)
    overfit = next(c for c in report["cases"] if c["id"] == "overfit")
    assert [d["execution_match"] for d in overfit["databases"]] == [True, False]
    assert [Path(d["database"].split("///", 1)[1]).name for d in overfit["databases"]] == ["a.sqlite", "b.sqlite"]


def test_a_file_then_a_glob_keeps_the_file_first_and_once(pytester):
    """`[v/b.sqlite, "v/*.sqlite"]`: b first (its verdict is `execution_accuracy`), then the glob's other match,
    a; b, which the glob matches again, is not a second entry (nor a "listed twice" error)."""
    variants(pytester)
    pytester.makefile(".sqleval.yaml", s='databases: [v/b.sqlite, "v/*.sqlite"]\n' + TSA_CASES)
    result, report = run(pytester)
    assert result.parseoutcomes() == {"passed": 1, "missed": 1}, result.stdout.str()
    metrics = report["suites"][0]["metrics"]
    assert (metrics["execution_accuracy"], metrics["test_suite_accuracy"]) == (0.5, 0.5)
    overfit = next(c for c in report["cases"] if c["id"] == "overfit")
    assert [(Path(d["database"].split("///", 1)[1]).name, d["execution_match"]) for d in overfit["databases"]] \
        == [("b.sqlite", False), ("a.sqlite", True)]


def test_an_existing_file_whose_name_holds_glob_characters_is_that_file_beside_a_glob(pytester):
    """`"d[1].sqlite"` names that file (as a glob it would match `d1.sqlite` only); `"v*/a.sqlite"` is a glob."""
    make_db(pytester.path / "d[1].sqlite", "(1, 10)")
    make_db(pytester.path / "d1.sqlite", "(1, 10)")
    make_db(pytester.path / "v" / "a.sqlite", "(1, 10)")
    pytester.makefile(".sqleval.yaml", s='databases: ["d[1].sqlite", "v*/a.sqlite"]\n'
                      'cases:\n  - {id: c, gold: "SELECT id FROM t", predicted: "SELECT id FROM t"}\n')
    result, report = run(pytester)
    assert result.parseoutcomes() == {"passed": 1}, result.stdout.str()
    assert report["suites"][0]["metrics"]["test_suite_accuracy"] == 1.0
    assert [Path(d["database"]).name for d in report["cases"][0]["databases"]] == ["d[1].sqlite", "a.sqlite"]


def test_a_glob_in_a_list_that_matches_nothing_names_the_line_and_the_folder(pytester):
    variants(pytester)
    pytester.makefile(".sqleval.yaml", s='databases:\n  - main.sqlite\n  - "v/*.duckdb"\n' + TSA_CASES)
    result, _ = run(pytester)
    text = result.stdout.str()
    assert "s.sqleval.yaml:3: no database matches the glob 'v/*.duckdb'" in text, text
    assert f"the glob matched no file under {(pytester.path / 'v').resolve()}" in text
    assert "database file not found" not in text


def test_a_glob_string_over_a_missing_folder_says_the_folder_does_not_exist(pytester):
    variants(pytester)
    pytester.makefile(".sqleval.yaml", s='databases: "variants/*.sqlite"\n' + TSA_CASES)
    result, _ = run(pytester)
    text = result.stdout.str()
    assert "s.sqleval.yaml:1: no database matches the glob 'variants/*.sqlite'" in text, text
    assert f"the folder {(pytester.path / 'variants').resolve()} does not exist" in text


FACTORY_TEST = """
import pytest
import sqlalchemy

from pytest_sqleval.errors import DatabaseError


def count(engine):
    with engine.connect() as conn:
        return conn.execute(sqlalchemy.text("SELECT count(*) FROM t")).scalar()


def test_a_file_beside_this_test(sqleval_engine_factory):
    assert count(sqleval_engine_factory("shop.sqlite")) == 2


def test_setup_scripts_beside_this_test(sqleval_engine_factory):
    assert count(sqleval_engine_factory("sqlite://", setup=["schema.sql"])) == 3


def test_a_missing_file_names_the_path_tried(sqleval_engine_factory, request):
    with pytest.raises(DatabaseError) as info:
        sqleval_engine_factory("nope.sqlite")
    here = request.path.parent
    assert f"database file not found: {here / 'nope.sqlite'}" in str(info.value)
    assert str(request.path) in str(info.value)


def test_a_missing_setup_script_names_the_path_tried(sqleval_engine_factory, request):
    with pytest.raises(DatabaseError) as info:
        sqleval_engine_factory("sqlite://", setup=["missing.sql"])
    assert f"setup script not found: {request.path.parent / 'missing.sql'}" in str(info.value)
"""


def test_the_engine_factory_reads_relative_paths_from_the_test_files_folder(pytester):
    """`pytest tests/` from the project root: `sqleval_engine_factory("shop.sqlite")` and `setup=["schema.sql"]`
    beside the test file were looked for in the working directory ("SQLite database not found"), while the
    marker's paths are relative to the test file."""
    tests = pytester.path / "tests"
    make_db(tests / "shop.sqlite", "(1, 10), (2, 20)")
    (tests / "schema.sql").write_text("CREATE TABLE t (id INT, v INT); INSERT INTO t VALUES (1, 1), (2, 2), (3, 3);")
    (tests / "test_factory.py").write_text(textwrap.dedent(FACTORY_TEST))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "tests")
    assert result.parseoutcomes() == {"passed": 4}, result.stdout.str()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sqleval", "tests")
    assert result.parseoutcomes() == {"passed": 4}, result.stdout.str()
