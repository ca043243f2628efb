"""Setup scripts and per-session caches, a fourth look (issue 11's correctness side): scripts written as users
write them (several tables interleaved, foreign keys, sequences) build fast and mean what they say, a failing
script leaves nothing half-built, one build per distinct script under ``-n 2``, and caches that never hand one
suite another's parse, schema or gold result."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from conftest import require_module
from pytest_sqleval.errors import DatabaseError
from test_setup_scripts_third_look import outcomes_by_id, run, write


def build(engine: str, path: Path, scripts: tuple[Path, ...]) -> None:
    if engine == "duckdb":
        require_module("duckdb")
        from pytest_sqleval.execution.backends.duckdb import build_duckdb

        build_duckdb(path, scripts)
    else:
        from pytest_sqleval.execution.backends.sqlite import build_sqlite

        build_sqlite(path, scripts)


def rows_of(engine: str, path: Path, sql: str) -> list[tuple]:
    if engine == "duckdb":
        conn = require_module("duckdb").connect(str(path), read_only=True)
    else:
        conn = sqlite3.connect(path)
    try:
        return [tuple(row) for row in conn.execute(sql).fetchall()]
    finally:
        conn.close()


def as_written(engine: str, scripts: tuple[Path, ...], sql: str) -> list[tuple]:
    """What the engine itself makes of the scripts run as written, statement after statement, in memory."""
    if engine == "duckdb":
        conn = require_module("duckdb").connect()
        for script in scripts:
            for statement in conn.extract_statements(script.read_text(encoding="utf-8")):
                conn.execute(statement)
    else:
        conn = sqlite3.connect(":memory:")
        for script in scripts:
            conn.executescript(script.read_text(encoding="utf-8"))
    try:
        return [tuple(row) for row in conn.execute(sql).fetchall()]
    finally:
        conn.close()


ENGINES = ["sqlite", "duckdb"]


# --------------------------------------------------------------------------- 6,500 inserts as users write them
def _interleaved(rows: int) -> str:
    """A parent row and its child row, then the next pair: how a dump of two related tables often reads."""
    lines = ["CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT);",
             "CREATE TABLE invoice (id INTEGER PRIMARY KEY, customer_id INTEGER, total DECIMAL(10, 2));"]
    for i in range(rows // 2):
        lines.append(f"INSERT INTO customer VALUES ({i}, 'c{i}; ''x''');")
        lines.append(f"insert into invoice (id, customer_id, total) values ({i}, {i}, {i}.25);")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("engine", ENGINES)
def test_6500_inserts_into_two_tables_in_turn_build_within_two_seconds(tmp_path, engine):
    """Issue 11's bound (6,500 single-row INSERTs in <= 2 s) for a script that alternates between two tables:
    DuckDB merged only neighbours into the same table, so it ran 6,500 statements (3.2 s here, 2.75 s of CPU).
    Measured in CPU seconds of this process (DuckDB's threads included): the bound must hold on an idle machine,
    and other engineers' runs on this one must not make it fail."""
    script = write(tmp_path / "dump.sql", _interleaved(6500))
    if engine == "duckdb":
        require_module("duckdb")  # (imported before the clock starts)
    started = time.process_time()
    build(engine, tmp_path / f"db.{engine}", (script,))
    elapsed = time.process_time() - started
    query = ("SELECT c.id, c.name, i.total FROM customer c JOIN invoice i ON i.customer_id = c.id "
             "WHERE c.id IN (0, 1, 3249) ORDER BY c.id")
    assert rows_of(engine, tmp_path / f"db.{engine}", query) == as_written(engine, (script,), query)
    assert rows_of(engine, tmp_path / f"db.{engine}", "SELECT count(*) FROM invoice") == [(3250,)]
    assert elapsed <= 2.0, f"{engine}: {elapsed:.2f} s"


def test_rows_merged_across_tables_keep_each_tables_insertion_order_and_values(tmp_path):
    """Merging inserts of several tables keeps every table's rows in their written order (rowid order, a
    duplicate-key failure named at its line) and every value as the engine reads it."""
    require_module("duckdb")
    lines = ["CREATE TABLE a (k INTEGER, v TEXT);", "CREATE TABLE b (k INTEGER, v TEXT);"]
    for i in range(300):
        lines.append(f"INSERT INTO a VALUES ({i}, '{i}-a');")
        lines.append(f"INSERT INTO b (v, k) VALUES ('{i}-b', {-i});")
        if i % 100 == 0:
            lines.append(f"INSERT INTO a VALUES ({1000 + i}, NULL); -- a comment; with a semicolon")
    script = write(tmp_path / "two.sql", "\n".join(lines) + "\n")
    build("duckdb", tmp_path / "two.duckdb", (script,))
    for table in ("a", "b"):
        query = f"SELECT rowid, k, v FROM {table} ORDER BY rowid"
        assert rows_of("duckdb", tmp_path / "two.duckdb", query) == as_written("duckdb", (script,), query)


def test_a_child_row_written_before_its_parent_still_fails_as_the_engine_says(tmp_path):
    """With foreign keys, running every parent row before the child rows would make a failing script pass: it
    must fail as written, naming the early child row's line, and leave no database behind."""
    require_module("duckdb")
    lines = ["CREATE TABLE parent (id INTEGER PRIMARY KEY);",
             "CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id));"]
    for i in range(200):  # parent i (line 3 + 2i), then its child (line 4 + 2i); child 120 names parent 121
        lines.append(f"INSERT INTO parent VALUES ({i});")
        lines.append(f"INSERT INTO child VALUES ({i}, {i + 1 if i == 120 else i});")
    script = write(tmp_path / "fk.sql", "\n".join(lines) + "\n")
    target = tmp_path / "build" / "fk.duckdb"
    with pytest.raises(DatabaseError) as raised:
        build("duckdb", target, (script,))
    message = str(raised.value)
    assert str(script) in message and "line 244:" in message, message
    assert not target.exists() and not list(target.parent.glob("*.duckdb"))


def test_rows_whose_ids_come_from_one_sequence_get_the_ids_the_script_gives_them(tmp_path):
    """Two tables drawing ids from one sequence by default: the order of the inserts decides the ids."""
    require_module("duckdb")
    lines = ["CREATE SEQUENCE ids;",
             "CREATE TABLE a (id INTEGER DEFAULT nextval('ids'), v TEXT);",
             "CREATE TABLE b (id INTEGER DEFAULT nextval('ids'), v TEXT);"]
    for i in range(100):
        lines += [f"INSERT INTO a (v) VALUES ('a{i}');", f"INSERT INTO b (v) VALUES ('b{i}');"]
    script = write(tmp_path / "seq.sql", "\n".join(lines) + "\n")
    build("duckdb", tmp_path / "seq.duckdb", (script,))
    query = "SELECT id, v FROM a UNION ALL SELECT id, v FROM b ORDER BY id"
    got = rows_of("duckdb", tmp_path / "seq.duckdb", query)
    assert got == as_written("duckdb", (script,), query)
    assert got[:3] == [(1, "a0"), (2, "b0"), (3, "a1")]


def test_a_foreign_key_declared_in_an_earlier_script_still_keeps_the_order(tmp_path):
    """The foreign key lives in schema.sql, the rows in data.sql: the data script's order still counts."""
    require_module("duckdb")
    schema = write(tmp_path / "schema.sql", """
        CREATE TABLE parent (id INTEGER PRIMARY KEY);
        CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id));
    """)
    lines = []
    for i in range(50):  # child 30 (line 62) names parent 31, inserted after it
        lines += [f"INSERT INTO parent VALUES ({i});", f"INSERT INTO child VALUES ({i}, {i + 1 if i == 30 else i});"]
    data = write(tmp_path / "data.sql", "\n".join(lines) + "\n")
    target = tmp_path / "build" / "fk2.duckdb"
    with pytest.raises(DatabaseError) as raised:
        build("duckdb", target, (schema, data))
    assert str(data) in str(raised.value) and "line 62:" in str(raised.value), str(raised.value)
    assert not target.exists()


# --------------------------------------------------------------------------- one build per distinct script, -n 2
def _counted_script(counter: Path, rows: int) -> str:
    """A script that records each run of itself in ``counter`` (ATTACH), with ``rows`` rows in ``s``."""
    return ("CREATE TABLE s (id INTEGER PRIMARY KEY, name TEXT);\n"
            + "".join(f"INSERT INTO s VALUES ({i}, 'n{i}');\n" for i in range(rows))
            + f"ATTACH '{counter}' AS counter;\nCREATE TABLE IF NOT EXISTS counter.builds (rows INTEGER);\n"
              f"INSERT INTO counter.builds VALUES ({rows});\nDETACH counter;\n")


@pytest.mark.parametrize("engine", ENGINES)
def test_two_workers_build_each_distinct_script_once_and_a_changed_copy_apart(pytester, engine):
    """Under ``-n 2``: two suites in two folders with byte-identical scripts share one build; a third suite whose
    copy of the script has one more row gets its own build (and its own rows); a second run builds afresh."""
    if engine == "duckdb":
        require_module("duckdb_engine")
    url = f"{engine}://"
    counter = pytester.path / f"builds.{engine}"
    for folder, rows in (("east", 40), ("west", 40), ("north", 41)):
        write(pytester.path / folder / "shop.sql", _counted_script(counter, rows))
        cases = "".join(f"  - {{id: c{i}, gold: 'SELECT count(*) FROM s WHERE id >= {i}', "
                        f"predicted: 'SELECT {rows - i}'}}\n" for i in range(6))
        write(pytester.path / folder / f"{folder}.sqleval.yaml",
              f"database: {{url: '{url}', setup: [shop.sql]}}\ncases:\n" + cases)

    def builds() -> list[int]:
        if engine == "sqlite":
            conn = sqlite3.connect(counter)
        else:
            conn = require_module("duckdb").connect(str(counter), read_only=True)
        try:
            return sorted(row[0] for row in conn.execute("SELECT rows FROM builds").fetchall())
        finally:
            conn.close()

    result, report = run(pytester, "-n", "2", "-v")
    assert report is not None, result.stdout.str() + result.stderr.str()
    assert set(outcomes_by_id(report).values()) == {"passed"} and len(report["cases"]) == 18, result.stdout.str()
    output = result.stdout.str()
    assert "[gw0]" in output and "[gw1]" in output
    assert builds() == [40, 41]  # one build of the shared script, one of the changed copy
    result, report = run(pytester, "-n", "2")
    assert set(outcomes_by_id(report).values()) == {"passed"}
    assert builds() == [40, 40, 41, 41]  # each run builds its own databases: nothing from an earlier run


# --------------------------------------------------------------------------- caches across a worker's cases
def _shop(path: Path, engine: str, rows: int, column: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    statements = [f"CREATE TABLE item (id INTEGER PRIMARY KEY, {column} TEXT)"]
    statements += [f"INSERT INTO item VALUES ({i}, 'x{i}')" for i in range(rows)]
    if engine == "duckdb":
        conn = require_module("duckdb").connect(str(path))
    else:
        conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


def _same_name_suites(root: Path, engine: str) -> None:
    """Two folders, each with a database of the same file name but other rows and another column, and suites
    whose golds are the same texts."""
    name = "shop.duckdb" if engine == "duckdb" else "shop.sqlite"
    for folder, rows, column in (("a", 3, "title"), ("b", 5, "label")):
        _shop(root / folder / name, engine, rows, column)
        write(root / folder / f"{folder}.sqleval.yaml", f"""
            database: {name}
            exact_match: sqleval
            cases:
              - {{id: count, gold: "SELECT count(*) FROM item", predicted: "SELECT {rows}"}}
              - {{id: star, gold: "SELECT * FROM item ORDER BY id", predicted: "SELECT id, {column} FROM item ORDER BY id"}}
              - {{id: max, gold: "SELECT max(id) FROM item", predicted: "SELECT {rows - 1}"}}
        """)


TIMING_KEYS = ("seconds", "time", "duration", "elapsed", "worker", "ms")


def scored(report) -> dict:
    """Each case's record without its timings, by (suite, id)."""
    return {(c["suite"], c["id"]): {k: v for k, v in c.items() if not any(t in k for t in TIMING_KEYS)}
            for c in report["cases"]}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_same_gold_text_on_same_named_databases_in_two_folders_is_run_on_each(pytester, engine, workers):
    """Same file name, same gold texts, other rows and columns: each suite scores exactly as it does alone."""
    if engine == "duckdb":
        require_module("duckdb_engine")
    _same_name_suites(pytester.path, engine)
    alone = {}
    for folder in ("a", "b"):
        _, report = run(pytester, folder, json_name=f"{folder}.json")
        alone.update(scored(report))
    result, report = run(pytester, *workers, "-p", "no:randomly")
    assert report is not None, result.stdout.str()
    assert outcomes_by_id(report) == {f"{s}::{c}": "passed" for s in ("a", "b") for c in ("count", "star", "max")}, \
        result.stdout.str()
    assert scored(report) == alone


def test_a_database_rewritten_between_two_runs_in_one_process_is_read_afresh(pytester):
    """Two sessions in one Python process (an IDE, a watcher): the second reads the file as it is now."""
    _shop(pytester.path / "shop.sqlite", "sqlite", 3, "title")
    write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: count, gold: "SELECT count(*) FROM item", predicted: "SELECT 3"}
    """)
    result, report = run(pytester)
    assert outcomes_by_id(report) == {"s::count": "passed"}, result.stdout.str()
    _shop(pytester.path / "shop.sqlite", "sqlite", 4, "title")
    result, report = run(pytester)
    assert outcomes_by_id(report) == {"s::count": "missed"}, result.stdout.str()


# --------------------------------------------------------------------------- one parse per (text, dialect)
def _clear_process_caches() -> None:
    from pytest_sqleval.sql import parsed

    parsed.clear()


def test_one_text_on_sqlite_and_on_duckdb_is_read_in_each_dialect(pytester):
    """``7 // 2`` is integer division in DuckDB and no SQL at all in SQLite: the SQLite reading (an error, read
    first) must not be what the DuckDB suite gets, nor the other way round."""
    require_module("duckdb_engine")
    _shop(pytester.path / "lite" / "shop.sqlite", "sqlite", 3, "title")
    _shop(pytester.path / "duck" / "shop.duckdb", "duckdb", 3, "title")
    for folder, name in (("lite", "shop.sqlite"), ("duck", "shop.duckdb")):
        write(pytester.path / folder / f"{folder}.sqleval.yaml", f"""
            database: {name}
            cases:
              - {{id: div, gold: "SELECT DISTINCT 3 AS v FROM item", predicted: "SELECT DISTINCT 7 // 2 AS v FROM item"}}
              - {{id: pow, gold: "SELECT DISTINCT 7 // 2 AS v FROM item", predicted: "SELECT 3 AS v"}}
        """)
    _clear_process_caches()
    result, report = run(pytester, "-p", "no:randomly")
    outcomes = outcomes_by_id(report)
    assert outcomes["duck::div"] == "passed" and outcomes["duck::pow"] == "passed", result.stdout.str()
    assert outcomes["lite::div"] != "passed" and outcomes["lite::pow"] != "passed", result.stdout.str()
    alone = {}
    for folder in ("duck", "lite"):
        _clear_process_caches()
        _, single = run(pytester, folder, "-p", "no:randomly", json_name=f"{folder}.json")
        alone.update(scored(single))
    assert scored(report) == alone


ROLE_TEXTS = [
    "SELECT DISTINCT name FROM singer WHERE age > 20 ORDER BY name",
    "SELECT count(DISTINCT country) FROM singer",
    "SELECT T1.name, count(*) AS n FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id "
    "GROUP BY T1.name ORDER BY n DESC, T1.country LIMIT 3",
    "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert) ORDER BY 1",
    "SELECT name FROM singer ORDER BY age DESC",
    "SELECT country FROM singer INTERSECT SELECT country FROM singer WHERE age < 40",
]


def _concerts(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
        CREATE TABLE singer_in_concert (concert_id INTEGER, singer_id INTEGER REFERENCES singer(singer_id));
        INSERT INTO singer VALUES (1, 'Ann', 'NO', 30), (2, 'Bo', 'SE', 45), (3, 'Cy', 'NO', 22), (4, 'Di', 'FR', 30),
                                  (5, 'Ed', 'SE', 19);
        INSERT INTO singer_in_concert VALUES (1, 1), (1, 2), (2, 2), (2, 3), (3, 1), (3, 4);
    """)
    conn.close()


def test_a_text_read_as_gold_prediction_and_by_every_metric_scores_as_it_does_alone(pytester):
    """Each text is the gold of one suite's cases and the prediction of another's (both exact-match profiles,
    hardness, soft F1, the DISTINCT rewrite, the ORDER BY plan, the guard all reading one shared parse): the
    records of the run together equal those of each suite run alone in a fresh cache."""
    _concerts(pytester.path / "concerts.sqlite")
    pairs = [(g, p) for g in ROLE_TEXTS for p in ROLE_TEXTS]
    for name, profile, swap in (("gold_first", "spider", False), ("pred_first", "sqleval", True),
                                ("strip", "sqleval", False)):
        lines = [f"database: concerts.sqlite\nexact_match: {profile}\n"]
        if name == "strip":
            lines.append("execution: {distinct: strip, ties: any}\n")
        lines.append("cases:\n")
        for i, (gold, predicted) in enumerate(pairs):
            gold, predicted = (predicted, gold) if swap else (gold, predicted)
            lines.append(f"  - {{id: c{i:02d}, gold: {json.dumps(gold)}, predicted: {json.dumps(predicted)}}}\n")
        (pytester.path / f"{name}.sqleval.yaml").write_text("".join(lines), encoding="utf-8")
    _clear_process_caches()
    result, together = run(pytester, "-p", "no:randomly")
    assert together is not None and len(together["cases"]) == 3 * len(pairs), result.stdout.str()
    alone = {}
    for name in ("gold_first", "pred_first", "strip"):
        _clear_process_caches()
        _, single = run(pytester, f"{name}.sqleval.yaml", "-p", "no:randomly", json_name=f"{name}.json")
        alone.update(scored(single))
    assert scored(together) == alone
    assert {c["outcome"] for c in together["cases"]} >= {"passed", "missed"}


# --------------------------------------------------------------------------- nothing reused from an earlier run
@pytest.mark.parametrize("mode", ["sqleval", "plain"])
def test_a_script_reading_another_file_sees_its_current_rows_in_each_run_under_xdist(pytester, mode):
    """The script copies its rows from another database file (ATTACH): a second run, same script bytes, same
    ``--basetemp``, after that file changed, must not reuse the first run's build."""
    def source(rows: int) -> None:
        _shop(pytester.path / "source.sqlite", "sqlite", rows, "title")

    write(pytester.path / "copy.sql", f"""
        ATTACH '{pytester.path / "source.sqlite"}' AS src;
        CREATE TABLE item AS SELECT * FROM src.item;
        DETACH src;
    """)
    if mode == "sqleval":
        (pytester.path / "s.sqleval.yaml").write_text(
            'database: {url: "sqlite://", setup: [copy.sql]}\ncases:\n'
            + "".join(f"  - {{id: c{i}, gold: 'SELECT count(*) FROM item WHERE id >= {i}', predicted: 'SELECT {4 - i}'}}\n"
                      for i in range(4)), encoding="utf-8")
    else:
        write(pytester.path / "test_plain.py", f"""
            import pytest

            @pytest.mark.parametrize("i", range(4))
            def test_count(sqleval_engine_factory, i):
                engine = sqleval_engine_factory("sqlite://", setup=[{str(pytester.path / "copy.sql")!r}])
                with engine.connect() as conn:
                    assert conn.exec_driver_sql("SELECT count(*) FROM item").scalar() == 4
        """)
    args = ("-n", "2", f"--basetemp={pytester.path / 'base'}", "-p", "no:cacheprovider")
    for rows, passing in ((4, True), (6, False), (4, True)):
        source(rows)
        if mode == "sqleval":
            result, report = run(pytester, *args)
            assert report is not None, result.stdout.str()
            assert {c["outcome"] == "passed" for c in report["cases"]} == {passing}, (rows, result.stdout.str())
        else:
            result = pytester.runpytest_subprocess(*args)
            result.assert_outcomes(**({"passed": 4} if passing else {"failed": 4}))


# --------------------------------------------------------------------------- a script failing half-way
@pytest.mark.parametrize("engine", ENGINES)
def test_a_data_script_failing_half_way_names_its_file_and_line_on_every_case(pytester, engine):
    """The schema script builds, the data script's row 3,001 breaks the key: every case of the suite errors
    with the data script's path, the engine's reason and line 3,003, under ``-n 2`` too; nothing is scored on a
    half-built database."""
    if engine == "duckdb":
        require_module("duckdb_engine")
    write(pytester.path / "sql" / "schema.sql", "-- the schema\nCREATE TABLE s (id INTEGER PRIMARY KEY, name TEXT);\n")
    rows = "".join(f"INSERT INTO s VALUES ({i if i != 3000 else 7}, 'n{i}');\n" for i in range(6500))
    write(pytester.path / "sql" / "data.sql", "-- the rows\n\n" + rows)
    (pytester.path / "s.sqleval.yaml").write_text(
        f'database: {{url: "{engine}://", setup: [sql/schema.sql, sql/data.sql]}}\ncases:\n'
        + "".join(f"  - {{id: c{i}, gold: 'SELECT count(*) FROM s', predicted: 'SELECT 6500'}}\n" for i in range(4)),
        encoding="utf-8")
    for workers in ((), ("-n", "2")):
        result, report = run(pytester, *workers)
        assert report is not None, result.stdout.str()
        assert {c["outcome"] for c in report["cases"]} == {"error"}, result.stdout.str()
        output = result.stdout.str()
        assert "data.sql" in output and "line 3003: INSERT INTO s VALUES (7, 'n3000');" in output, output
        assert "schema.sql failed" not in output


def test_only_rows_of_literals_in_scripts_without_foreign_keys_sequences_or_attach_move_past_another_table():
    from pytest_sqleval.execution.backends.insert_merge import merge_single_row_inserts

    pairs = "".join(f"INSERT INTO a VALUES ({i}, 'x;{i}');\nINSERT INTO b VALUES (-{i}, NULL);\n" for i in range(3))
    assert merge_single_row_inserts(pairs, "duckdb", [True]) == (
        "INSERT INTO a VALUES (0, 'x;0'), (1, 'x;1'), (2, 'x;2');\nINSERT INTO b VALUES (-0, NULL), (-1, NULL), (-2, NULL);\n")
    assert merge_single_row_inserts(pairs, "duckdb") is pairs  # (the default: neighbours into one table only)
    for earlier in ("CREATE TABLE b (k INTEGER REFERENCES a(k));", "CREATE SEQUENCE s;", "ATTACH 'x.duckdb' AS x;"):
        state = [True]
        merge_single_row_inserts(earlier, "duckdb", state)
        assert merge_single_row_inserts(pairs, "duckdb", state) is pairs and state == [False], earlier
    with_call = pairs.replace("NULL", "now()")
    assert merge_single_row_inserts(with_call, "duckdb", [True]) is with_call
    two_forms = pairs.replace("INSERT INTO b VALUES (-0, NULL)", "INSERT INTO main.a VALUES (-0, NULL)")
    assert merge_single_row_inserts(two_forms, "duckdb", [True]) is two_forms  # one table under two spellings


def test_a_duckdb_script_that_does_not_parse_half_way_fails_at_once_with_its_line(tmp_path):
    """A typo in row 3,001 of 6,500: DuckDB ran the 3,000 rows before it in each of three attempts on the file,
    one by one and committed each (9 to 15 s here) before the same parse error; no attempt can succeed, so the
    error (DuckDB's own, with the line) comes at once and nothing is left behind."""
    duckdb = require_module("duckdb")
    rows = [f"INSERT INTO s VALUES ({i}, 'n{i}');" if i != 3000 else "INSERT INTO s VALUES (3000 'n3000');"
            for i in range(6500)]
    script = write(tmp_path / "typo.sql", "CREATE TABLE s (id INTEGER PRIMARY KEY, name TEXT);\n" + "\n".join(rows) + "\n")
    target = tmp_path / "build" / "typo.duckdb"
    started = time.perf_counter()
    with pytest.raises(DatabaseError) as raised:
        build("duckdb", target, (script,))
    elapsed = time.perf_counter() - started
    message = str(raised.value)
    assert str(script) in message and "Parser Error" in message, message
    assert "(line 3002: INSERT INTO s VALUES (3000 'n3000');)" in message, message
    assert not target.exists() and not [p for p in target.parent.iterdir() if not p.name.endswith(".lock")]
    # against the same script without its typo, built in the same test (a loaded machine slows both): the failure
    # costs about one build (~1 s idle), where three attempts of 3,000 committed rows each cost over ten
    fixed = write(tmp_path / "fixed.sql", script.read_text().replace("(3000 'n3000')", "(3000, 'n3000')"))
    started = time.perf_counter()
    build("duckdb", tmp_path / "build" / "fixed.duckdb", (fixed,))
    one_build = time.perf_counter() - started
    assert elapsed <= 4 * one_build + 1.0, f"{elapsed:.1f} s against {one_build:.1f} s for the build without the typo"
    assert duckdb  # (imported before the clock started)
