"""Building a database from a setup script of many single-row INSERTs: DuckDB against SQLite.

Run from the project root::

    python benchmarks/bench_setup.py [--rows 6500] [--repeats 3] [--as-written]

The script (one ``CREATE TABLE`` of four columns, then ``--rows`` single-row ``INSERT ... VALUES``
statements of integers, text with quotes and semicolons, reals and NULLs) is built the way a suite's
``setup:`` is, into a fresh folder each time: SQLite (``build_sqlite``) and DuckDB (``build_duckdb``,
single-row inserts merged), interleaved, best and median of N. ``--as-written`` also times DuckDB on the
script as written in one transaction (the path before the merge), and checks that both DuckDB builds
hold the same rows in the same order. Each time is printed with its ratio to the SQLite build of the
same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_sqleval.execution.backends import duckdb as duckdb_backend  # noqa: E402
from pytest_sqleval.execution.backends.sqlite import build_sqlite  # noqa: E402


def setup_script(rows: int) -> str:
    lines = ["CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, amount REAL, note TEXT);"]
    for i in range(rows):
        note = "NULL" if i % 7 == 0 else f"'note {i}; it''s (fine)'"
        lines.append(f"INSERT INTO orders VALUES ({i}, 'customer {i % 97}', {i * 1.25}, {note});")
    return "\n".join(lines) + "\n"


def _as_written(path: Path, scripts: tuple[Path, ...]) -> None:
    from pytest_sqleval.execution.backends.setup_scripts import build_file_once

    build_file_once(path, lambda partial: duckdb_backend._run_duckdb_build(
        partial, scripts, one_transaction=True, merged=None))


def _timed(build, folder: Path, name: str, scripts: tuple[Path, ...]) -> float:
    started = time.perf_counter()
    build(folder / name, scripts)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--as-written", action="store_true", help="also time DuckDB on the script as written")
    args = parser.parse_args()

    runs = {"sqlite": build_sqlite, "duckdb": duckdb_backend.build_duckdb}
    if args.as_written:
        runs["duckdb, as written"] = _as_written
    times: dict[str, list[float]] = {name: [] for name in runs}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        script = root / "setup.sql"
        script.write_text(setup_script(args.rows), encoding="utf-8")
        for repeat in range(args.repeats):
            for name, build in runs.items():
                folder = root / f"{repeat}-{name.replace(' ', '').replace(',', '-')}"
                folder.mkdir()
                suffix = ".sqlite" if name == "sqlite" else ".duckdb"
                times[name].append(_timed(build, folder, "db" + suffix, (script,)))
        if args.as_written:
            import duckdb

            def rows(path: Path) -> list:
                conn = duckdb.connect(str(path), read_only=True)
                try:
                    return conn.execute("SELECT * FROM orders").fetchall()
                finally:
                    conn.close()

            same = rows(root / "0-duckdb" / "db.duckdb") == rows(root / "0-duckdb-aswritten" / "db.duckdb")
            print(f"merged and as-written DuckDB builds hold the same rows in the same order: {same}")

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.rows:,} single-row INSERTs; {args.repeats} interleaved repetitions; load average {load:.1f}")
    print("| build | best (s) | median (s) | ratio to SQLite (medians) |")
    print("|---|---:|---:|---:|")
    base = statistics.median(times["sqlite"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {min(values):.3f} | {median:.3f} | {median / base:.1f} |")


if __name__ == "__main__":
    main()
