"""The `test-suite` execution profile and test-suite accuracy, second look, with new inputs: result comparison
under the official rules, several databases per case, the gold checks, serial and ``-n 2``.

The official verdicts below were produced by taoyds/test-suite-sql-eval (``../shared/reference/official``), run
from a scratch copy in its own virtual environment (``pip install nltk sqlparse``) with default flags::

    python -c "from exec_eval import eval_exec_match; print(eval_exec_match(DB, PRED, GOLD, False, False, False))"

for each item (``plug_value=False, keep_distinct=False``), DB being the first file of a folder holding the
databases built from the scripts below (every ``*.sqlite*`` file of that folder is the test suite).
"""

from __future__ import annotations

import json
import sqlite3
import textwrap

import yaml  # noqa: F401 - imported before pytester's in-process runs snapshot sys.modules (libyaml cannot re-import)

BASE = """CREATE TABLE t (id INTEGER, name TEXT, age INTEGER, score REAL, tag TEXT);
INSERT INTO t VALUES (1,'ann',30,1.5,'x'),(2,'bob',30,2.0,NULL),(3,'cat',25,NULL,'x'),(4,'dan',40,0.1,'y'),(5,'eve',25,3.0,'1');
CREATE TABLE u (k INTEGER, v TEXT, w INTEGER);
INSERT INTO u VALUES (1,'1',1),(2,'2',2),(1,'1',1),(3,NULL,NULL);
CREATE TABLE e (x INTEGER);
CREATE TABLE bad (id INTEGER, s TEXT);
INSERT INTO bad VALUES (1, CAST(x'61ff62' AS TEXT)), (2, 'ab'), (3, CAST(x'c3' AS TEXT));
CREATE TABLE wide (a INT, b INT, c INT, d INT, e INT);
INSERT INTO wide VALUES (1,2,3,4,5),(2,3,4,5,1),(3,4,5,1,2);
"""
VARIANT = BASE + """INSERT INTO t VALUES (6,'fay',40,NULL,'y'); INSERT INTO e VALUES (7);
INSERT INTO u VALUES (2,'2',2);"""
VARIANT2 = BASE.replace("(5,'eve',25,3.0,'1')", "(5,'eve',26,3.0,'1')")
DBSETS = {"one": [("a.sqlite", BASE)], "three": [("a.sqlite", BASE), ("b.sqlite", VARIANT), ("c.sqlite", VARIANT2)]}

# (database set, gold, prediction, official verdict): see the module docstring for the command.
OFFICIAL = [
    # row order: only when the gold text contains "order by" (a subquery's, a literal's, a comment's count too)
    ("one", "SELECT name FROM t ORDER BY age", "SELECT name FROM t ORDER BY age, name DESC", 0),
    ("one", "SELECT name FROM (SELECT name FROM t ORDER BY id) ", "SELECT name FROM t ORDER BY id DESC", 0),
    ("one", "SELECT name FROM t WHERE name != 'order by'", "SELECT name FROM t ORDER BY id DESC", 0),
    ("one", "SELECT name FROM t ORDER\nBY id", "SELECT name FROM t ORDER BY id DESC", 1),
    ("one", "SELECT name FROM t ORDER  BY id", "SELECT name FROM t ORDER BY id DESC", 1),
    ("one", "SELECT name FROM t -- order by\n", "SELECT name FROM t ORDER BY id DESC", 0),
    # duplicates: a bag, DISTINCT stripped from both sides
    ("one", "SELECT k FROM u", "SELECT DISTINCT k FROM u", 1),
    ("one", "SELECT k FROM u", "SELECT k FROM u UNION SELECT k FROM u", 0),
    ("one", "SELECT k FROM u", "SELECT k FROM u UNION ALL SELECT 1", 0),
    ("one", "SELECT count(DISTINCT k) FROM u", "SELECT count(k) FROM u", 1),
    ("one", "SELECT DISTINCT age FROM t EXCEPT SELECT 25", "SELECT age FROM t WHERE age != 25", 0),
    # column permutations (more than 3 columns: the official's sampled pruning)
    ("one", "SELECT k, w, v FROM u", "SELECT v, w, k FROM u", 1),
    ("one", "SELECT a,b,c,d,e FROM wide", "SELECT b,c,d,e,a FROM wide", 1),
    ("one", "SELECT a,b,c,d,e FROM wide", "SELECT a,b,c,e,d FROM wide", 1),
    ("one", "SELECT id, age FROM t", "SELECT id, age, age FROM t", 0),
    ("one", "SELECT id, id FROM t", "SELECT id, age FROM t", 0),
    # floats and integers
    ("one", "SELECT 0.1 + 0.2", "SELECT 0.3", 0),
    ("one", "SELECT avg(age) FROM t", "SELECT sum(age) / 5.0 FROM t", 1),
    ("one", "SELECT 2, 1.0", "SELECT 1, 2.0", 1),
    ("one", "SELECT -0.0", "SELECT 0", 1),
    ("one", "SELECT 9007199254740993", "SELECT 9007199254740993.0", 0),
    ("one", "SELECT DISTINCT typeof(age / 2.0) FROM t", "SELECT 'real'", 0),
    # NULLs
    ("one", "SELECT tag FROM t", "SELECT tag FROM t WHERE tag IS NOT NULL UNION ALL SELECT NULL", 1),
    ("one", "SELECT score FROM t WHERE id = 3", "SELECT ''", 0),
    ("one", "SELECT max(score) FROM e JOIN t", "SELECT NULL", 1),
    # text, numbers, blobs
    ("one", "SELECT tag FROM t WHERE id = 5", "SELECT 1", 0),
    ("one", "SELECT v FROM u WHERE k = 1", "SELECT w FROM u WHERE k = 1", 0),
    ("one", "SELECT 1, '1'", "SELECT '1', 1", 1),
    ("one", "SELECT x'61'", "SELECT 'a'", 0),
    # empty results: equal whatever their width; no statement is an empty result; only the first statement runs
    ("one", "SELECT x FROM e", "SELECT id, name FROM t WHERE 0", 1),
    ("one", "SELECT x FROM e", "-- nothing", 1),
    ("one", "SELECT x FROM e", "SELECT 1 FROM e; DROP TABLE t", 1),
    ("one", "SELECT x FROM e", "SELECT nope FROM e", 0),
    # text that is not valid UTF-8: the official text_factory drops the bad bytes
    ("one", "SELECT s FROM bad WHERE id = 1", "SELECT 'ab'", 1),
    ("one", "SELECT s FROM bad WHERE id = 1", "SELECT s FROM bad WHERE id = 2", 1),
    ("one", "SELECT s FROM bad WHERE id = 3", "SELECT ''", 1),
    # golds with DISTINCT in SQLite's own spellings, stripped before they run
    ("one", 'SELECT DISTINCT name FROM t WHERE name > "b"', "SELECT name FROM t WHERE id > 1", 1),
    ("one", "SELECT DISTINCT name FROM t LIMIT 1, 2", "SELECT name FROM t WHERE id IN (2, 3)", 1),
    ("one", "SELECT DISTINCT name FROM t WHERE tag NOTNULL AND age == 30", "SELECT 'ann'", 1),
    ("one", "SELECT DISTINCT group_concat(DISTINCT age) FROM t", "SELECT group_concat(age) FROM t", 1),
    ("one", "SELECT DISTINCT 5 / 2", "SELECT 2", 1),
    ("one", "SELECT DISTINCT count(*) FROM t GROUP BY age HAVING count(*) > 1", "SELECT 2 UNION ALL SELECT 2", 1),
    ("one", "SELECT DISTINCT `name` FROM [t]", "SELECT name FROM t", 1),
    # several databases: the prediction must match on every one
    ("three", "SELECT count(*) FROM t", "SELECT 5", 0),
    ("three", "SELECT name FROM t WHERE age = 25", "SELECT name FROM t WHERE id IN (3, 5)", 0),
    ("three", "SELECT name FROM t WHERE age < 30", "SELECT name FROM t WHERE age < 27", 1),
    ("three", "SELECT x FROM e", "SELECT x FROM e WHERE x > 100", 0),
    ("three", "SELECT DISTINCT k FROM u", "SELECT k FROM u", 1),
    ("three", "SELECT name FROM t ORDER BY age DESC LIMIT 1", "SELECT name FROM t WHERE age = 40", 0),
    ("three", "SELECT age, count(*) FROM t GROUP BY age", "SELECT count(*), age FROM t GROUP BY age", 1),
    ("three", "SELECT id FROM t WHERE id > 5", "SELECT id FROM t WHERE id > 4 AND age = 40", 1),
]


def build(path, script: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()


def build_sets(root) -> None:
    for name, files in DBSETS.items():
        for file, script in files:
            build(root / "db" / name / file, script)


def run_json(pytester, *args):
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    return result, (json.loads(report.read_text()) if report.exists() else None)


def write_corpus_suites(pytester, items, profile: str = "test-suite") -> None:
    for name, files in DBSETS.items():
        cases = [{"id": f"i{n}", "gold": g, "predicted": p} for n, (s, g, p, _) in enumerate(items) if s == name]
        if cases:
            suite = {"databases": [f"db/{name}/{file}" for file, _ in files], "execution": profile, "cases": cases}
            (pytester.path / f"{name}_{profile}.sqleval.yaml").write_text(json.dumps(suite))


def test_the_test_suite_profile_gives_the_official_verdicts_on_new_inputs(pytester):
    build_sets(pytester.path)
    write_corpus_suites(pytester, OFFICIAL)
    result, report = run_json(pytester)
    got = {c["id"]: c for c in report["cases"]}
    wrong = [(item, got[f"i{n}"]["execution_match"]) for n, item in enumerate(OFFICIAL)
             if got[f"i{n}"]["execution_match"] is not bool(item[3])]
    assert not wrong, wrong
    assert "Traceback" not in result.stdout.str()


def test_text_that_is_not_utf8_is_decoded_per_profile(pytester):
    """test-suite-sql-eval reads SQLite text with ``text_factory = lambda b: b.decode(errors="ignore")``: the bad
    bytes are dropped, so 'a\\xffb' equals 'ab' there (official verdict 1, above); the `sqleval` profile keeps
    each bad byte as U+FFFD (so the two differ)."""
    build_sets(pytester.path)
    items = [("one", "SELECT s FROM bad WHERE id = 1", "SELECT 'ab'", None),
             ("one", "SELECT s FROM bad WHERE id = 3", "SELECT ''", None),
             ("one", "SELECT s FROM bad ORDER BY id", "SELECT s FROM bad ORDER BY id", None)]
    write_corpus_suites(pytester, items, "test-suite")
    write_corpus_suites(pytester, items, "sqleval")
    _, report = run_json(pytester)
    got = {(c["suite"], c["id"]): c["execution_match"] for c in report["cases"]}
    assert [got[("one_test-suite", f"i{n}")] for n in range(3)] == [True, True, True]
    assert [got[("one_sqleval", f"i{n}")] for n in range(3)] == [False, False, True]


def test_run_query_drops_bad_bytes_only_when_asked(tmp_path):
    from pytest_sqleval.execution.backends.sqlite import sqlite_engine
    from pytest_sqleval.execution.runner import run_query

    build(tmp_path / "a.sqlite", BASE)
    engine = sqlite_engine(tmp_path / "a.sqlite")
    sql = "SELECT s FROM bad WHERE id IN (1, 3) ORDER BY id"
    assert run_query(engine, sql, text_errors="ignore").rows == [("ab",), ("",)]
    assert run_query(engine, sql).rows == [("a\ufffdb",), ("\ufffd",)]


def test_gold_check_reruns_the_gold_the_profile_ran(pytester):
    """The stability check ran the gold again *without* test-suite's DISTINCT stripping (and its text decoding),
    so every gold whose DISTINCT removes a duplicate was reported `broken: unstable`; a gold that really
    changes between runs is still broken."""
    build_sets(pytester.path)
    pytester.makefile(".sqleval.yaml", g=textwrap.dedent("""
        databases: [db/one/a.sqlite]
        execution: test-suite
        cases:
          - {id: distinct, gold: "SELECT DISTINCT k FROM u", predicted: "SELECT 1"}
          - {id: distinct_ordered, gold: "SELECT DISTINCT age FROM t ORDER BY age", predicted: "SELECT 1"}
          - {id: not_utf8, gold: "SELECT s FROM bad WHERE id = 1", predicted: "SELECT 1"}
          - {id: random, gold: "SELECT abs(random()) % 1000000007, id FROM t", predicted: "SELECT 1"}
    """))
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-check-gold", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert "BROKEN random: unstable" in out
    for case in ("distinct", "distinct_ordered", "not_utf8"):
        assert f"BROKEN {case}" not in out, out
    assert "4 gold queries checked: 1 broken" in out and result.ret != 0


def test_gold_checks_name_the_database_of_each_finding(pytester):
    """With several databases each one's gold result is checked: a gold empty or 0 on some databases only, ties
    at the LIMIT cut on one only, and a gold that fails on one database only (broken, exit non-zero)."""
    build_sets(pytester.path)
    build(pytester.path / "db" / "three" / "d.sqlite", "CREATE TABLE t (id INTEGER, other TEXT);")
    pytester.makefile(".sqleval.yaml", g=textwrap.dedent("""
        databases: [db/three/a.sqlite, db/three/b.sqlite, db/three/c.sqlite]
        execution: test-suite
        cases:
          - {id: empty, gold: "SELECT x FROM e", predicted: "SELECT 1"}
          - {id: ties, gold: "SELECT name FROM t ORDER BY age DESC LIMIT 1", predicted: "SELECT 1"}
          - {id: zero, gold: "SELECT count(*) FROM t WHERE id > 5", predicted: "SELECT 1"}
          - {id: clean, gold: "SELECT count(*) FROM t", predicted: "SELECT 1"}
          - id: fails_on_d
            gold: "SELECT name FROM t"
            predicted: "SELECT 1"
            databases: [db/three/a.sqlite, db/three/d.sqlite]
    """))
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-check-gold", "-p", "no:cacheprovider")
    lines = [line for line in result.stdout.lines if line.startswith(("warning ", "BROKEN "))]
    assert sorted(line.split(":")[0] + " " + line.rsplit("/", 1)[1].split(":")[0]
                  for line in lines) == ["BROKEN fails_on_d d.sqlite (syntax)",
                                         "warning empty a.sqlite", "warning empty c.sqlite",
                                         "warning ties b.sqlite", "warning zero a.sqlite",
                                         "warning zero c.sqlite"], lines
    assert "5 gold queries checked: 1 broken, 3 with warnings" in result.stdout.str()
    assert result.ret != 0


def test_a_prediction_that_fails_on_a_later_database(pytester):
    """Official (commands of the module docstring): `SELECT x FROM t` against `SELECT count(*) FROM t` scores 1
    with a.sqlite alone and 0 once b.sqlite (where t has no column x) joins the suite. The first database's
    verdict stayed 0 (execution_accuracy counted a miss) and the per-database verdicts were lost."""
    build(pytester.path / "a.sqlite", "CREATE TABLE t (x); INSERT INTO t VALUES (1);")
    build(pytester.path / "b.sqlite", "CREATE TABLE t (y); INSERT INTO t VALUES (1);")
    pytester.makefile(".sqleval.yaml", s=textwrap.dedent("""
        databases: [a.sqlite, b.sqlite]
        execution: test-suite
        cases:
          - {id: fails_on_b, gold: "SELECT count(*) FROM t", predicted: "SELECT x FROM t"}
          - {id: fails_on_a, gold: "SELECT count(*) FROM t", predicted: "SELECT y FROM t"}
          - {id: right, gold: "SELECT count(*) FROM t", predicted: "SELECT count(*) FROM t"}
    """))
    result, report = run_json(pytester)
    assert result.parseoutcomes() == {"passed": 1, "missed": 2}
    cases = {c["id"]: c for c in report["cases"]}
    on_b = cases["fails_on_b"]
    assert on_b["execution_match"] is False and on_b["execution_match_first"] is True
    assert on_b["error"]["kind"] == "syntax" and "b.sqlite" in on_b["error"]["message"]
    assert [(d["database"].rsplit("/", 1)[1], d["execution_match"], d.get("error")) for d in on_b["databases"]] == [
        ("a.sqlite", True, None), ("b.sqlite", False, "syntax")]
    on_a = cases["fails_on_a"]
    assert [(d["execution_match"], d.get("error")) for d in on_a["databases"]] == [(False, "syntax")]  # b not tried
    metrics = report["suites"][0]["metrics"]
    assert (metrics["execution_accuracy"], metrics["test_suite_accuracy"]) == (2 / 3, 1 / 3)
    assert metrics["error_count"] == 2


def test_test_suite_accuracy_is_reported_when_every_prediction_fails(pytester):
    build_sets(pytester.path)
    pytester.makefile(".sqleval.yaml", s=textwrap.dedent("""
        databases: "db/three/*.sqlite"
        execution: test-suite
        thresholds: {test_suite_accuracy: 0.5}
        cases:
          - {id: a, gold: "SELECT count(*) FROM t", predicted: "SELECT nope FROM t"}
    """))
    result, report = run_json(pytester)
    assert report["suites"][0]["metrics"]["test_suite_accuracy"] == 0.0
    assert result.ret != 0


def test_several_databases_score_the_same_serially_and_with_two_workers(pytester):
    build_sets(pytester.path)
    three = [item for item in OFFICIAL if item[0] == "three"] + [
        ("three", "SELECT count(*) FROM t", "SELECT count(x) FROM t", 0),  # fails on every database
        ("three", "SELECT age FROM t WHERE id = 5", "SELECT 25", 0),  # right on the first database only
    ]
    write_corpus_suites(pytester, three)
    outcomes = []
    for args in ((), ("-n", "2")):
        result, report = run_json(pytester, *args)
        outcomes.append((
            sorted((c["id"], c["outcome"], c["execution_match"], c.get("execution_match_first"),
                    json.dumps(c.get("databases"))) for c in report["cases"]),
            report["suites"][0]["metrics"], result.ret))
    assert outcomes[0] == outcomes[1]
    cases = {c[0]: c for c in outcomes[0][0]}
    assert [cases[f"i{n}"][2] for n in range(len(three))] == [bool(item[3]) for item in three]
    assert cases[f"i{len(three) - 1}"][3] is True  # right on the first database only
