"""Per-case overhead: a 1000-case suite of trivial queries (gold = prediction) through ``pytest --sqleval``
against a plain pytest file with 1000 parametrized tests running the same two queries on the same database.

Run from the project root::

    python benchmarks/bench_overhead.py [--cases 1000] [--repeats 5] [--workers 0] [--profile OUT.prof]

The plain file opens one SQLite connection per session and, per test, runs the gold and the prediction and
compares the sorted rows: what a hand-written parametrized test of the same two queries does. The suite has
no setup scripts; its schema is read from the database, so exact match (the ``sqleval`` profile) and the gold's
difficulty are computed for every case, as for any suite with a database. What is measured is the plugin's
per-case path: collection of the case, the gold at setup (every gold text is distinct: no case is served from
another's cache), its difficulty and exact-match reading, the guard and the query process for the prediction,
the comparison, exact match, the record and the report. (Before 2026-12-03 the texts repeated every 50 cases,
so 950 golds came from the cache: 2.1-2.2x then, against 3.5-3.6x with distinct texts, on the same code.)
The two commands run interleaved, each repetition timing both; printed: best and median wall time, and the
ratio of the bests and the median of per-repetition ratios. ``--workers N`` adds ``-n N`` to both.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

PLAIN_TEST = '''
import sqlite3

import pytest

DATABASE = {database!r}
QUERIES = [
{queries}
]


@pytest.fixture(scope="session")
def conn():
    connection = sqlite3.connect(f"file:{{DATABASE}}?mode=ro", uri=True)
    yield connection
    connection.close()


@pytest.mark.parametrize("gold, predicted", QUERIES)
def test_case(conn, gold, predicted):
    assert sorted(conn.execute(predicted).fetchall()) == sorted(conn.execute(gold).fetchall())
'''


def build(folder: Path, cases: int) -> tuple[Path, Path]:
    import sqlite3

    database = folder / "shop.sqlite"
    conn = sqlite3.connect(database)
    conn.execute("CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT, city TEXT)")
    conn.executemany("INSERT INTO shops VALUES (?, ?, ?)", [(i, f"shop {i}", f"city {i % 7}") for i in range(50)])
    conn.commit()
    conn.close()
    # every text distinct (`AND i >= 0`), as the docstring says: no case's gold is another's cached result
    queries = [f"SELECT name FROM shops WHERE id = {i % 50} AND {i} >= 0" if i % 2
               else f"SELECT count(*) FROM shops WHERE id > {i % 50} AND {i} >= 0" for i in range(cases)]
    suite = folder / "overhead.sqleval.yaml"
    suite.write_text(yaml.safe_dump({
        "suite": "overhead",
        "database": str(database),
        "cases": [{"id": f"c{i:05d}", "gold": q, "predicted": q} for i, q in enumerate(queries)],
    }, sort_keys=False, width=1 << 20), encoding="utf-8")
    plain = folder / "test_plain_overhead.py"
    plain.write_text(PLAIN_TEST.format(database=str(database),
                                       queries="\n".join(f"    ({q!r}, {q!r})," for q in queries)), encoding="utf-8")
    return suite, plain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--profile", metavar="OUT", help="also write a cProfile of one serial sqleval run to OUT")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sqleval-bench-overhead-") as tmp:
        folder = Path(tmp)
        suite, plain = build(folder, args.cases)
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
        common = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(folder), "-o", "addopts="]
        if args.workers:
            common += ["-n", str(args.workers)]
        sides = {
            "plain parametrized pytest": common + [str(plain), "-p", "no:sqleval"],
            "pytest --sqleval": common + ["--sqleval", str(suite)],
        }

        def run(command: list[str]) -> float:
            started = time.perf_counter()
            done = subprocess.run(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            elapsed = time.perf_counter() - started
            if done.returncode != 0:
                raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout.decode(errors='replace')[-3000:]}")
            return elapsed

        for command in sides.values():  # warm-up (bytecode caches)
            run(command)
        if args.profile:
            subprocess.run([sys.executable, "-m", "cProfile", "-o", args.profile, *sides["pytest --sqleval"][1:]],
                           cwd=folder, env=env, stdout=subprocess.DEVNULL, check=False)
        times: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(args.repeats):
            for name, command in sides.items():
                times[name].append(run(command))
    plain_times, ours = times["plain parametrized pytest"], times["pytest --sqleval"]
    print(f"{args.cases} cases{f', -n {args.workers}' if args.workers else ', serial'}; {args.repeats} interleaved "
          f"repetitions; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| run | best (s) | median (s) |")
    print("|---|---:|---:|")
    for name, values in times.items():
        print(f"| {name} | {min(values):.2f} | {statistics.median(values):.2f} |")
    print(f"ratio sqleval / plain: {min(ours) / min(plain_times):.2f} (bests), "
          f"{statistics.median(o / p for o, p in zip(ours, plain_times)):.2f} (median of per-repetition ratios)")


if __name__ == "__main__":
    main()
