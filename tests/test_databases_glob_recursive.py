"""A `databases:` glob with `**` reaches into subfolders, as Python's recursive glob does (it matched one folder
level only, so `variants/**/*.sqlite` missed the databases below `variants/`), and a folder it matches is skipped."""

import json
import sqlite3

pytest_plugins = ["pytester"]


def _db(path, count):
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (a INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(count)])
    conn.close()


def test_a_double_star_glob_reaches_every_subfolder(pytester):
    _db(pytester.path / "variants" / "a.sqlite", 2)
    _db(pytester.path / "variants" / "deep" / "b.sqlite", 2)
    _db(pytester.path / "variants" / "deep" / "deeper" / "c.sqlite", 3)
    pytester.makefile(".sqleval.yaml", ts="""
databases: "variants/**/*.sqlite"
cases:
  - {id: count, gold: SELECT count(*) FROM t, predicted: SELECT 2}
  - {id: any, gold: SELECT count(*) > 0 FROM t, predicted: SELECT 1}
""")
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "r.json")
    cases = {c["id"]: c for c in json.loads((pytester.path / "r.json").read_text())["cases"]}
    assert len(cases["any"]["databases"]) == 3, result.stdout.str()
    assert cases["any"]["outcome"] == "passed"
    # 2 rows on a and b, 3 on c: the prediction `SELECT 2` misses on the third database
    assert cases["count"]["execution_match"] is False and cases["count"]["databases"][-1]["execution_match"] is False


def test_a_glob_that_matches_folders_takes_the_files_only(pytester):
    _db(pytester.path / "variants" / "a.sqlite", 1)
    (pytester.path / "variants" / "sub").mkdir()
    pytester.makefile(".sqleval.yaml", ts="""
databases: "variants/*"
cases:
  - {id: any, gold: SELECT count(*) FROM t, predicted: SELECT 1}
""")
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-json", "r.json")
    assert result.ret == 0, result.stdout.str()
    (case,) = json.loads((pytester.path / "r.json").read_text())["cases"]
    # one database: the case is scored on it alone (a record lists `databases` only for two or more)
    assert case["outcome"] == "passed" and case["database"].endswith("a.sqlite") and "databases" not in case
