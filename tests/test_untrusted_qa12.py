"""Untrusted predicted SQL and the databases it runs on, QA round qa12 (issues 4 and 7).

- **A SQLite prediction escaped the memory cap through temp files.** SQLite keeps the work tables of DISTINCT,
  GROUP BY, UNION and large sorts in temp files (``/var/tmp``) once they outgrow its page cache: ``SELECT DISTINCT
  zeroblob(3000) || i`` over 400,000 generated rows wrote 1.2 GB of disk under ``max_memory: 256MiB`` and was scored
  as a valid query with different values (about 2.5 GB in 4 s, so tens of GB within the default 30 s timeout),
  where DuckDB is configured not to spill. The SQLite connection now keeps temp tables in memory
  (``PRAGMA temp_store = MEMORY``): such a query is a miss of kind ``memory`` naming the cap, and no disk is used.
- **DuckDB's ``SUMMARIZE '<file>'`` passed the guard.** In a subquery, ``SELECT max FROM (SUMMARIZE '/etc/hostname')``
  is a query to sqlglot with a string literal (not a table) as its source, so the file-reference check never saw it;
  DuckDB reads the string as a file. Only the locked-down connection stopped it, and the prediction was scored
  ``syntax`` ("Table with name /etc/hostname does not exist") instead of ``rejected``. The guard now refuses a
  string summarised as a file, as it refuses ``FROM 'file.csv'``.
"""

from __future__ import annotations

import sqlite3

import pytest

from pytest_sqleval.errors import QueryError
from pytest_sqleval.sql.guard import check_prediction
from untrusted_support import run_untrusted, write_dedented

pytest_plugins = ["pytester"]


def _run(pytester, *args: str):
    return run_untrusted(pytester, *args, timeout=300)


_write = write_dedented


def _shop_sqlite(path):
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
        "INSERT INTO shops VALUES (1, 'Avionics'), (2, 'Engines'), (3, 'Cabin');"
    )
    conn.commit()
    conn.close()


# --------------------------------------------------------------------------- SQLite temp files outside the memory cap
ROWS = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 400000) "
SPILLS = {
    "distinct": ROWS + "SELECT count(*) FROM (SELECT DISTINCT zeroblob(3000) || i FROM r)",
    "group_by": ROWS + "SELECT count(*) FROM (SELECT zeroblob(3000) || i AS k FROM r GROUP BY k)",
}


def test_a_sqlite_work_table_over_the_memory_cap_is_a_memory_miss_not_gigabytes_of_temp_files(pytester):
    _shop_sqlite(pytester.path / "shop.sqlite")
    lines = ["database: shop.sqlite", "timeout: 120", "max_memory: 256MiB", "cases:"]
    for name, sql in SPILLS.items():
        lines.append(f'  - {{id: {name}, gold: "SELECT name FROM shops", predicted: "{sql}"}}')
    lines += [
        '  - {id: small, gold: "SELECT DISTINCT name FROM shops ORDER BY name",'
        ' predicted: "SELECT name FROM shops GROUP BY name ORDER BY name"}',
        '  - {id: after, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops"}',
    ]
    (pytester.path / "t.sqleval.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result, cases, report = _run(pytester)
    for name in SPILLS:
        assert cases[name]["outcome"] == "missed", cases[name]
        assert (cases[name]["error"] or {}).get("kind") == "memory", cases[name]
        assert "256 MiB" in cases[name]["error"]["message"]
    assert cases["small"]["outcome"] == "passed", cases["small"]
    assert cases["after"]["outcome"] == "passed", cases["after"]
    assert report["overall"]["metrics"]["errors_by_kind"] == {"memory": 2}


# --------------------------------------------------------------------------- DuckDB SUMMARIZE of a file
@pytest.mark.parametrize("sql", [
    "SELECT * FROM (SUMMARIZE 'data.csv')",
    "SELECT max FROM (SUMMARIZE '/etc/hostname')",
    "SELECT column_name, max FROM (SUMMARIZE 'hostname') WHERE max IS NOT NULL",
    "SELECT * FROM shops WHERE name IN (SELECT max FROM (summarize 'secrets.parquet'))",
])
def test_summarize_of_a_string_is_refused_as_a_file_read_on_duckdb(sql):
    with pytest.raises(QueryError) as caught:
        check_prediction(sql, "duckdb")
    assert caught.value.kind == "rejected"
    assert "reads the file" in str(caught.value)


def test_summarize_of_a_table_stays_allowed_on_duckdb():
    check_prediction("SELECT column_name, min, max FROM (SUMMARIZE shops)", "duckdb")


def test_a_summarized_file_is_a_rejected_miss_in_a_duckdb_run(pytester, duckdb_available):
    import duckdb

    conn = duckdb.connect(str(pytester.path / "shop.duckdb"))
    conn.execute("CREATE TABLE shops (id INTEGER, name VARCHAR)")
    conn.execute("INSERT INTO shops VALUES (1, 'Avionics'), (2, 'Engines'), (3, 'Cabin')")
    conn.close()
    _write(pytester.path / "planted.txt", "a,b\nTOPSECRET,2\n")
    _write(
        pytester.path / "d.sqleval.yaml",
        """
        database: shop.duckdb
        cases:
          - {id: planted, gold: "SELECT name FROM shops", predicted: "SELECT max FROM (SUMMARIZE 'planted.txt')"}
          - {id: absolute, gold: "SELECT name FROM shops", predicted: "SELECT max FROM (SUMMARIZE '/etc/hostname')"}
          - {id: after, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops"}
    """,
    )
    result, cases, _ = _run(pytester, "--sqleval-diff")
    for name in ("planted", "absolute"):
        assert cases[name]["outcome"] == "missed", cases[name]
        assert cases[name]["error"]["kind"] == "rejected", cases[name]["error"]
        assert "reads the file" in cases[name]["error"]["message"]
    assert "TOPSECRET" not in (pytester.path / "r.json").read_text(encoding="utf-8")
    assert "TOPSECRET" not in result.stdout.str()
    assert cases["after"]["outcome"] == "passed"
