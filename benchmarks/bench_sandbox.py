"""What the limits enforced from outside the query cost: a query in the killable query process
against the same query run in this process.

Run from the project root::

    python benchmarks/bench_sandbox.py [--repeats N] [--queries N]

For a SQLite file (and a DuckDB file when the extra is installed) it times, interleaved and best of
N, three ways of running the same untrusted queries:

* ``inline``: guard + execute in this process (``SQLEVAL_SANDBOX=0``: the engine's own timeout only);
* ``sandbox``: guard + execute in the query process (the default: wall-clock kill, memory cap);
* ``kill``: the cost of replacing a killed query process (fork of the zygote), per kill.

Queries: ``trivial`` (``SELECT 1``, the per-query overhead), ``spider`` (a join with GROUP BY and
ORDER BY returning 20 rows, a typical benchmark query) and ``rows`` (10,000 rows x 4 columns, the
cost of carrying a result across the socket). Each time is printed with its ratio to ``inline``.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_sqleval.errors import QueryError  # noqa: E402
from pytest_sqleval.execution.backends.duckdb import duckdb_engine  # noqa: E402
from pytest_sqleval.execution.backends.sqlite import sqlite_engine  # noqa: E402
from pytest_sqleval.execution.runner import run_query  # noqa: E402
from pytest_sqleval.execution.sandbox import process_sandbox  # noqa: E402

QUERIES = {
    "trivial": "SELECT 1",
    "spider": "SELECT s.name, count(*) AS n, avg(t.hours) FROM tickets t JOIN shops s ON s.id = t.shop_id "
              "GROUP BY s.name ORDER BY n DESC, s.name LIMIT 20",
    "rows": "SELECT id, shop_id, hours, aircraft FROM tickets LIMIT 10000",
}

SLOW = "SELECT replace(hex(zeroblob(1000000)),'0','a') LIKE '%' || replace(hex(zeroblob(5000)),'0','a') || 'b'"


def build(folder: Path) -> dict[str, object]:
    path = folder / "bench.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("CREATE TABLE tickets (id INTEGER PRIMARY KEY, shop_id INTEGER, hours REAL, aircraft TEXT)")
    conn.executemany("INSERT INTO shops VALUES (?, ?)", [(i, f"shop {i}") for i in range(50)])
    conn.executemany("INSERT INTO tickets VALUES (?, ?, ?, ?)",
                     [(i, i % 50, (i * 7) % 13 / 2, f"A{i % 97}") for i in range(20000)])
    conn.commit()
    conn.close()
    engines: dict[str, object] = {"sqlite": sqlite_engine(path)}
    try:
        import duckdb

        dpath = folder / "bench.duckdb"
        d = duckdb.connect(str(dpath))
        d.execute("CREATE TABLE shops AS SELECT i AS id, 'shop ' || i AS name FROM range(50) r(i)")
        d.execute("CREATE TABLE tickets AS SELECT i AS id, i % 50 AS shop_id, ((i * 7) % 13) / 2 AS hours, "
                  "'A' || (i % 97) AS aircraft FROM range(20000) r(i)")
        d.close()
        engines["duckdb"] = duckdb_engine(f"duckdb:///{dpath}")
    except ImportError:
        pass
    return engines


def timed(engine, sql: str, count: int, sandbox: bool) -> float:
    os.environ["SQLEVAL_SANDBOX"] = "1" if sandbox else "0"
    started = time.perf_counter()
    for _ in range(count):
        run_query(engine, sql, timeout=30, max_rows=100_000)
    return (time.perf_counter() - started) / count


def kill_cost(engine, count: int) -> float:
    os.environ["SQLEVAL_SANDBOX"] = "1"
    started = time.perf_counter()
    for _ in range(count):
        try:
            run_query(engine, SLOW, timeout=0.05, max_rows=10)
        except QueryError:
            pass
    return (time.perf_counter() - started) / count - 0.05 - 0.5  # minus the timeout and the kill grace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        engines = build(Path(tmp))
        process_sandbox().start()
        for engine in engines.values():
            run_query(engine, "SELECT 1")  # warm: the query process and the engine are open
        print(f"{'engine':8} {'query':8} {'inline µs':>10} {'sandbox µs':>11} {'ratio':>6}")
        for name, engine in engines.items():
            for label, sql in QUERIES.items():
                count = args.queries if label != "rows" else max(10, args.queries // 10)
                inline, boxed = [], []
                for _ in range(args.repeats):
                    inline.append(timed(engine, sql, count, sandbox=False))
                    boxed.append(timed(engine, sql, count, sandbox=True))
                a, b = min(inline), min(boxed)
                print(f"{name:8} {label:8} {a * 1e6:10.0f} {b * 1e6:11.0f} {b / a:6.2f}")
        kill = kill_cost(engines["sqlite"], 5)
        print(f"replacing a killed query process (fork of the zygote): {kill * 1000:.0f} ms per kill")
        os.environ["SQLEVAL_SANDBOX"] = "1"


if __name__ == "__main__":
    main()
