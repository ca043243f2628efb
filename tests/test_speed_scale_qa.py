"""Issue 11's functional promises, a QA look: the per-session caches never give a stale answer (a database file a
test rewrites between two suites that share its path is read afresh: gold result, schema, this process's engine)."""

from __future__ import annotations

import pytest

from test_setup_scripts_third_look import run, write

STALE_SUITES = {
    "s1.sqleval.yaml": """
        database: db.sqlite
        cases:
          - {id: q, gold: "SELECT x FROM t", predicted: "SELECT 1"}
    """,
    "test_m.py": """
        import sqlite3

        KEPT = []

        def test_rewrite_the_database():
            conn = sqlite3.connect("db.sqlite")
            if WAL:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA wal_autocheckpoint = 0")
            conn.execute("UPDATE t SET x = 2")
            conn.execute("CREATE TABLE t2 (y INTEGER)")
            conn.execute("INSERT INTO t2 VALUES (5)")
            conn.commit()
            if WAL:
                KEPT.append(conn)  # open: the changes stay in db.sqlite-wal
            else:
                conn.close()
    """,
    "u.sqleval.yaml": """
        database: db.sqlite
        exact_match: spider
        cases:
          - {id: q, gold: "SELECT x FROM t", predicted: "SELECT 2"}
          - {id: new_table, gold: "SELECT y FROM t2 WHERE y > 1", predicted: "SELECT y FROM t2 WHERE y > 1"}
    """,
}


@pytest.mark.parametrize("wal", [False, True])
def test_a_database_a_test_rewrites_between_two_suites_on_one_path_gives_fresh_gold_results(pytester, wal):
    """s1 runs ``SELECT x FROM t`` (1), a plain test then sets x to 2 and adds a table, u runs the same gold on
    the same file: its gold is 2 now, as its prediction's result is. The gold-result cache (keyed by the engine)
    handed u the result read before the change, so ``SELECT 2`` missed against a stale gold of 1; the schema
    cache kept the table list from before the change, and this process's engine (opened ``immutable=1``) went on
    reading the old pages. With ``wal``, the changes are still in the WAL file when u runs."""
    import sqlite3

    conn = sqlite3.connect(pytester.path / "db.sqlite")
    conn.execute("CREATE TABLE t (x INTEGER)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    conn.close()
    for name, text in STALE_SUITES.items():
        write(pytester.path / name, text.replace("WAL:", f"{wal}:"))
    result, report = run(pytester, "-p", "no:randomly")
    by_id = {f"{c['suite']}::{c['id']}": c for c in report["cases"]}
    assert by_id["s1::q"]["execution_match"] is True, result.stdout.str()
    assert by_id["u::q"]["execution_match"] is True, result.stdout.str()
    assert by_id["u::new_table"]["execution_match"] is True, result.stdout.str()
    assert by_id["u::new_table"]["exact_match"] is True, result.stdout.str()  # the schema read afresh too
    assert by_id["u::new_table"]["outcome"] == "passed", result.stdout.str()


def test_a_tables_json_a_test_rewrites_between_two_suites_is_read_afresh(pytester):
    """Two suites name one ``tables.json``; a plain test between them adds a column to it. The second suite's
    exact match reads the new column: the per-session schema cache was keyed by the path alone, so it kept the
    old table list and called the gold outside the Spider grammar (an error of the case)."""
    import json
    import sqlite3

    conn = sqlite3.connect(pytester.path / "db.sqlite")
    conn.execute("CREATE TABLE t (x INTEGER, y INTEGER)")
    conn.execute("INSERT INTO t VALUES (1, 2)")
    conn.commit()
    conn.close()
    tables = [{"db_id": "d", "table_names_original": ["t"], "table_names": ["t"],
               "column_names_original": [[-1, "*"], [0, "x"]], "column_names": [[-1, "*"], [0, "x"]],
               "column_types": ["text", "number"], "primary_keys": [], "foreign_keys": []}]
    (pytester.path / "tables.json").write_text(json.dumps(tables))
    added = {**tables[0], "column_names_original": [[-1, "*"], [0, "x"], [0, "y"]],
             "column_names": [[-1, "*"], [0, "x"], [0, "y"]], "column_types": ["text", "number", "number"]}
    for name in ("s1", "u"):
        write(pytester.path / f"{name}.sqleval.yaml", f"""
            database: db.sqlite
            exact_match: spider
            cases:
              - {{id: {name}, gold: "SELECT x FROM t", predicted: "SELECT x FROM t", schema: {{tables: tables.json, db_id: d}}}}
              - {{id: {name}_y, gold: "SELECT y FROM t", predicted: "SELECT y FROM t", schema: {{tables: tables.json, db_id: d}}}}
        """)
    write(pytester.path / "test_m.py", f"""
        import json

        def test_add_a_column():
            with open("tables.json", "w") as handle:
                handle.write(json.dumps([{added!r}]) + "  ")
    """)
    result, report = run(pytester, "-p", "no:randomly")
    outcomes = {c["id"]: c["outcome"] for c in report["cases"]}
    assert outcomes == {"s1": "passed", "s1_y": "error", "u": "passed", "u_y": "passed"}, result.stdout.str()
