"""Result comparison vs fetch: is comparing two results cheaper than fetching one?

Run from the project root::

    python benchmarks/bench_compare.py [--repeats N]

Builds two tables in a temporary SQLite file and compares three results:

* ``mixed``: 100,000 rows x 8 columns of ints, floats and text;
* ``shared``: 50,000 rows x 12 int columns that all hold the same value set
  (column k of row r is ``(p(r) + 7k) mod 50,000`` for a random permutation
  p), the case that makes a column-permutation search explode;
* ``no key``: 6 columns of ``mixed`` in which every column repeats values
  (``grade, tag, ratio, name, grade + 1, ratio * 2``), so no column can
  align the rows of two results and the comparison falls back to
  fingerprints and a Counter of rows.

For each table it measures, best of N (interleaved), the time to fetch the gold result
(``cursor.execute`` + ``fetchall``) and the time of ``compare_results``
(profile sqleval) and ``soft_f1`` against a prediction whose columns are
shuffled: unordered (the prediction's rows in another order), ordered
strictly (same row order) and, for ``mixed``, ordered with ties (``ORDER BY``
a low-cardinality column, the prediction ordering tied rows differently).

Column names may suggest which column is which (they are only ever a
candidate, verified on the rows), so each comparison is measured twice:
"names kept" (the shuffled prediction keeps the gold's column names) and
"renamed" (its columns are called c0..cN in their new order, so only the
content can match them; for ``shared``, whose gold columns are c0..c11
already, the names even point at the wrong mapping). The rows marked
"nulls=distinct" use that option, under which no comparison may take the
raw-value shortcut (a NULL must not equal a NULL), so they time the full
path that every result needing normalisation (NaN, Decimal,
``float_decimals``) goes through.

Every time is printed with its ratio to the fetch time of the same run,
since absolute times on a shared machine are noise.
"""

from __future__ import annotations

import argparse
import gc
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_sqleval.comparison import EXECUTION_PROFILES, resolve_execution  # noqa: E402
from pytest_sqleval.metrics.execution_match import compare_results  # noqa: E402
from pytest_sqleval.metrics.soft_f1 import soft_f1  # noqa: E402
from pytest_sqleval.metrics.tie_groups import tie_group_starts  # noqa: E402
from pytest_sqleval.results import QueryResult  # noqa: E402

MIXED_ROWS = 100_000
SHARED_ROWS = 50_000
SHARED_COLUMNS = 12
SEED = 20240501
NO_KEY_COLUMNS = ["grade", "tag", "ratio", "name", "grade + 1", "ratio * 2"]  # every column repeats values


def build_database(path: Path) -> None:
    rng = random.Random(SEED)
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE mixed (id INTEGER, price REAL, name TEXT, grade INTEGER, tag TEXT, ratio REAL, code INTEGER, label TEXT)")
        connection.executemany(
            "INSERT INTO mixed VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (i, rng.random() * 1000, f"name{rng.randrange(5000)}", rng.randrange(100),
                 rng.choice("xyz"), round(rng.random(), 2), rng.randrange(10**6), f"label{i}")
                for i in range(MIXED_ROWS)
            ),
        )
        columns = ", ".join(f"c{k} INTEGER" for k in range(SHARED_COLUMNS))
        connection.execute(f"CREATE TABLE shared (r INTEGER, {columns})")
        permutation = list(range(SHARED_ROWS))
        rng.shuffle(permutation)
        connection.executemany(
            f"INSERT INTO shared VALUES ({', '.join('?' * (SHARED_COLUMNS + 1))})",
            ((row, *((permutation[row] + 7 * k) % SHARED_ROWS for k in range(SHARED_COLUMNS))) for row in range(SHARED_ROWS)),
        )


def best_times(cases: list[tuple[str, Callable[[], Any]]], repeats: int) -> list[tuple[str, float]]:
    """Best-of-``repeats`` time of each case, the cases interleaved so machine noise hits all alike."""
    best = {name: float("inf") for name, _ in cases}
    for _ in range(repeats):
        for name, action in cases:
            gc.collect()
            start = time.perf_counter()
            action()
            best[name] = min(best[name], time.perf_counter() - start)
    return list(best.items())


def fetch(connection: sqlite3.Connection, sql: str) -> QueryResult:
    cursor = connection.execute(sql)
    rows = cursor.fetchall()
    return QueryResult(tuple(column[0] for column in cursor.description), rows)


def shuffled(columns: list[str], rng: random.Random) -> list[str]:
    order = list(columns)
    while order == columns:
        rng.shuffle(order)
    return order


def measure_table(connection: sqlite3.Connection, table: str, columns: list[str], key: str, tie_key: str | None, repeats: int) -> list[tuple[str, float]]:
    rng = random.Random(SEED)
    select = ", ".join(columns)
    shuffled_columns = shuffled(columns, rng)
    shuffled_select = ", ".join(shuffled_columns)
    renamed_select = ", ".join(f"{column} AS c{index}" for index, column in enumerate(shuffled_columns))
    gold_sql = f"SELECT {select} FROM {table} ORDER BY {key}"
    gold = fetch(connection, gold_sql)
    sqleval = EXECUTION_PROFILES["sqleval"]
    distinct_nulls = resolve_execution({"profile": "sqleval", "nulls": "distinct"})
    cases: list[tuple[str, Callable[[], Any]]] = [("fetch gold (execute + fetchall)", lambda: connection.execute(gold_sql).fetchall())]
    for label, projection in (("names kept", shuffled_select), ("renamed", renamed_select)):
        unordered_pred = fetch(connection, f"SELECT {projection} FROM {table} ORDER BY {key} DESC")
        ordered_pred = fetch(connection, f"SELECT {projection} FROM {table} ORDER BY {key}")
        cases += [
            (f"compare_results, unordered, {label}", _match_case(gold, unordered_pred, sqleval, ordered=False)),
            (f"compare_results, ordered (strict), {label}", _match_case(gold, ordered_pred, sqleval, ordered=True)),
        ]
        if tie_key is not None:
            tied_gold = fetch(connection, f"SELECT {select} FROM {table} ORDER BY {tie_key}, {key}")
            tied_pred = fetch(connection, f"SELECT {projection} FROM {table} ORDER BY {tie_key}, {key} DESC")
            cases.append((
                f"tie_group_starts + compare_results, ordered (ties any), {label}",
                _tied_case(tied_gold, tied_pred, columns.index(tie_key), sqleval),
            ))
    cases += [
        ("soft_f1, unordered, renamed", _soft_f1_case(gold, unordered_pred, "equal")),
        ("compare_results, unordered, renamed, nulls=distinct", _match_case(gold, unordered_pred, distinct_nulls, ordered=False)),
        ("soft_f1, unordered, renamed, nulls=distinct", _soft_f1_case(gold, unordered_pred, "distinct")),
    ]
    return best_times(cases, repeats)


def _match_case(gold: QueryResult, pred: QueryResult, options: Any, *, ordered: bool) -> Callable[[], Any]:
    return lambda: _expect_match(compare_results(gold, pred, options, ordered=ordered))


def _tied_case(gold: QueryResult, pred: QueryResult, tie_column: int, options: Any) -> Callable[[], Any]:
    return lambda: _expect_match(compare_results(gold, pred, options, ordered=True, tie_groups=tie_group_starts(gold.rows, [tie_column])))


def _soft_f1_case(gold: QueryResult, pred: QueryResult, nulls: Any) -> Callable[[], Any]:
    def case() -> None:
        score = soft_f1(gold, pred, nulls=nulls)
        if score != 1.0:
            raise AssertionError(f"benchmark pair should score 1.0, not {score}")
    return case


def _expect_match(verdict: Any) -> None:
    if not verdict.match:
        raise AssertionError(f"benchmark pair should match: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="best of N (default 7)")
    repeats = parser.parse_args().repeats
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "bench.sqlite"
        build_database(path)
        connection = sqlite3.connect(path)
        tables = [
            (f"mixed {MIXED_ROWS:,} x 8", measure_table(connection, "mixed", ["id", "price", "name", "grade", "tag", "ratio", "code", "label"], "id", "grade", repeats)),
            (f"shared {SHARED_ROWS:,} x {SHARED_COLUMNS}", measure_table(connection, "shared", [f"c{k}" for k in range(SHARED_COLUMNS)], "r", None, repeats)),
            (f"no key {MIXED_ROWS:,} x 6", measure_table(connection, "mixed", NO_KEY_COLUMNS, "id", None, repeats)),
        ]
        connection.close()
    print(f"Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, best of {repeats}\n")
    print("| table | operation | seconds | ratio to fetch |")
    print("|---|---|---:|---:|")
    for table, results in tables:
        fetch_time = results[0][1]
        for name, seconds in results:
            print(f"| {table} | {name} | {seconds:.4f} | {seconds / fetch_time:.2f} |")


if __name__ == "__main__":
    main()
