"""Performance behaviour (issue 11): setup scripts built fast and once per run, one parse per SQL text,
an inactive plugin that imports nothing heavy, caches that never confuse two objects."""

from __future__ import annotations

import gc
import json
import sqlite3
import textwrap
import time
from pathlib import Path

import pytest
from sqlglot import exp
from sqlglot.errors import ParseError

from pytest_sqleval.errors import DatabaseError
from pytest_sqleval.execution.backends.sqlite import build_sqlite, sqlite_engine
from pytest_sqleval.execution.engines import EngineFactory
from pytest_sqleval.sql import parsed
from pytest_sqleval.sql.limits import parse_bounded
from pytest_sqleval.suite import DatabaseSpec


def sqlglot_parse(sql: str):
    import sqlglot

    return sqlglot.parse_one(sql, read="sqlite")


def _insert_script(path: Path, rows: int, table: str = "t") -> Path:
    lines = [f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, name TEXT, v REAL);"]
    lines += [f"INSERT INTO {table} VALUES ({i}, 'name {i}', {i * 0.5});" for i in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- setup scripts
def test_a_6500_row_insert_script_builds_in_under_two_seconds(tmp_path):
    script = _insert_script(tmp_path / "big.sql", 6500)
    factory = EngineFactory(build_dir=tmp_path / "build")
    started = time.perf_counter()
    engine = factory.engine(DatabaseSpec(url="sqlite://", setup=(script,)))
    elapsed = time.perf_counter() - started
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*), sum(id) FROM t").fetchone() == (6500, 6500 * 6499 // 2)
    finally:
        factory.close()
    assert elapsed < 2.0, f"building took {elapsed:.2f} s"


def test_a_script_with_its_own_transactions_still_builds(tmp_path):
    first = _insert_script(tmp_path / "plain.sql", 10)
    own = tmp_path / "own.sql"
    own.write_text("BEGIN;\nCREATE TABLE u (x INTEGER);\nINSERT INTO u VALUES (1), (2);\nCOMMIT;\n"
                   "BEGIN TRANSACTION;\nINSERT INTO u VALUES (3);\nCOMMIT;\n-- trailing comment without newline",
                   encoding="utf-8")
    target = tmp_path / "built.sqlite"
    build_sqlite(target, (first, own))
    conn = sqlite3.connect(target)
    try:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (10,)
        assert conn.execute("SELECT group_concat(x) FROM (SELECT x FROM u ORDER BY x)").fetchone() == ("1,2,3",)
    finally:
        conn.close()
    assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == []


def test_a_failing_script_names_itself_and_leaves_no_file(tmp_path):
    good = _insert_script(tmp_path / "good.sql", 5)
    bad = tmp_path / "bad.sql"
    bad.write_text("CREATE TABLE w (x INTEGER);\nINSERT INTO w VALUES (1);\nINSERT INTO missing VALUES (2);\n",
                   encoding="utf-8")
    target = tmp_path / "out" / "built.sqlite"
    with pytest.raises(DatabaseError) as raised:
        build_sqlite(target, (good, bad))
    assert f"setup script {bad} failed on SQLite: no such table: missing" in str(raised.value)
    assert [p.name for p in target.parent.iterdir() if not p.name.endswith(".lock")] == []


def test_xdist_workers_build_a_setup_database_once_per_run(pytester):
    pytester.makefile(".sql", shop="CREATE TABLE s (id INTEGER PRIMARY KEY, name TEXT);\n"
                                   + "".join(f"INSERT INTO s VALUES ({i}, 'n{i}');\n" for i in range(200)))
    cases = "".join(f"  - id: c{i}\n    gold: SELECT count(*) FROM s WHERE id > {i}\n"
                    f"    predicted: SELECT count(*) FROM s WHERE id > {i}\n" for i in range(8))
    pytester.makefile(".sqleval.yaml", shop="database: {url: 'sqlite://', setup: [shop.sql]}\ncases:\n" + cases)
    log = pytester.path / "builds.log"
    # Real builds, each one logged by the worker that ran it (a conftest every worker loads).
    pytester.makeconftest(textwrap.dedent(f"""
        import os
        from pytest_sqleval.execution.backends import sqlite as sqlite_backend

        _real = sqlite_backend._run_sqlite_build

        def _logged(partial, scripts, *, one_transaction):
            with open({str(log)!r}, "a") as f:
                f.write(f"{{os.environ.get('PYTEST_XDIST_WORKER')}} {{partial.parent}}\\n")
            return _real(partial, scripts, one_transaction=one_transaction)

        sqlite_backend._run_sqlite_build = _logged
    """))
    result = pytester.runpytest_subprocess("--sqleval", "-n", "2", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=8)
    output = result.stdout.str()
    assert "[gw0]" in output and "[gw1]" in output  # both workers ran cases on the database
    lines = log.read_text().splitlines()
    assert len(lines) == 1, lines  # built once, by one worker, for both
    assert not Path(lines[0].split(" ", 1)[1]).exists()  # the run's build folder is removed at the end


# --------------------------------------------------------------------------- one parse per text
def test_each_text_is_parsed_once_and_every_reader_gets_its_own_copy():
    parsed.clear()
    sql = "SELECT DISTINCT name FROM shops WHERE id > 1 ORDER BY name"
    first = parse_bounded(sql, "sqlite")[0]
    first.find(exp.Select).set("distinct", None)  # a reader rewrites its tree in place
    first.find(exp.Order).pop()
    second = parse_bounded(sql, "sqlite")[0]
    assert second.sql() == "SELECT DISTINCT name FROM shops WHERE id > 1 ORDER BY name"
    assert second is not first
    assert parsed.stats == {"hits": 1, "misses": 1}
    parse_bounded(sql, "duckdb")  # another dialect is another parse
    assert parsed.stats["misses"] == 2


def test_a_text_that_does_not_parse_raises_the_same_error_each_time():
    parsed.clear()
    for _ in range(2):
        with pytest.raises(ParseError) as raised:
            parse_bounded("SELECT FROM WHERE (", "sqlite")
    assert parsed.stats == {"hits": 1, "misses": 1}
    assert str(raised.value)


def test_the_fast_tree_copy_is_sqlglots_copy():
    sql = ("SELECT a.x AS y, count(*) /* n */ FROM t AS a JOIN u ON a.id = u.id WHERE a.z > 1 AND NOT a.w IN (1, 2) "
           "GROUP BY a.x HAVING count(*) > 2 ORDER BY y DESC LIMIT 3 -- tail")
    tree = sqlglot_parse(sql)
    mine, theirs = parsed.copy_tree(tree), tree.copy()
    assert mine == theirs and mine.sql() == theirs.sql() == tree.sql()
    for a, b, original in zip(mine.walk(), theirs.walk(), tree.walk()):
        assert type(a) is type(b) and a.comments == b.comments and a.meta == b.meta and a.arg_key == b.arg_key
        assert a is not original and (a.comments is None or a.comments is not original.comments)
        assert a._meta is None or a._meta is not original._meta


def test_the_parse_cache_is_bounded():
    parsed.clear()
    for i in range(parsed.CACHE_SIZE + 10):
        parse_bounded(f"SELECT {i}", "sqlite")
    assert len(parsed._cache) == parsed.CACHE_SIZE
    parse_bounded("SELECT 0", "sqlite")  # the oldest was evicted: parsed again
    assert parsed.stats["hits"] == 0


# --------------------------------------------------------------------------- caches keyed by objects, not id()
def test_gold_results_never_come_from_another_engine_that_had_the_same_id(tmp_path):
    from pytest_sqleval.comparison import resolve_execution
    from pytest_sqleval.evaluate import Evaluator

    options = resolve_execution("sqleval")
    evaluator = Evaluator(timeout=10, max_rows=100)
    for i in range(4):  # new engines on new files: an id may be reused once an engine is gone
        path = tmp_path / f"db{i}.sqlite"
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (v INTEGER)")
        conn.execute("INSERT INTO t VALUES (?)", (i,))
        conn.commit()
        conn.close()
        engine = sqlite_engine(path)
        run = evaluator.run_gold("SELECT v FROM t", options, engine, "sqlite", str(path))
        assert run.result.rows == [(i,)]
        engine.dispose()
        del engine, run
        gc.collect()


# --------------------------------------------------------------------------- installed but inactive
def test_a_plain_run_imports_nothing_heavy(pytester):
    pytester.makepyfile(test_plain=textwrap.dedent("""
        import sys

        def test_nothing_heavy_was_imported():
            heavy = [m for m in ("sqlglot", "sqlalchemy", "yaml", "jinja2", "pytest_sqleval.settings",
                                 "pytest_sqleval.suite", "pytest_sqleval.evaluate", "pytest_sqleval.loader")
                     if m in sys.modules]
            assert heavy == []
            assert "pytest_sqleval.plugin" in sys.modules  # installed: loaded, but inactive
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_bad_ini_value_is_still_reported_without_sqleval(pytester):
    pytester.makeini("[pytest]\nsqleval_timeout = soon\n")
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "sqleval_timeout" in result.stderr.str()


def test_feature_plugins_are_registered_and_can_be_blocked(pytester):
    pytester.makepyfile(test_plain=textwrap.dedent("""
        def test_registered(pytestconfig):
            manager = pytestconfig.pluginmanager
            assert manager.get_plugin("pytest_sqleval.lifecycle") is not None
            assert manager.get_plugin("pytest_sqleval.ci_plugin") is None
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:pytest_sqleval.ci_plugin")
    result.assert_outcomes(passed=1)


def test_xdist_reads_each_suite_once_per_run(pytester, shop_db):
    cases = "".join(f"  - id: c{i}\n    gold: SELECT count(*) FROM tickets WHERE id > {i}\n"
                    f"    predicted: SELECT count(*) FROM tickets WHERE id > {i}\n" for i in range(6))
    pytester.makefile(".sqleval.yaml", shop=f"database: {shop_db}\ncases:\n" + cases)
    log = pytester.path / "reads.log"
    # The real loader, each reading logged by the process that did it (controller and workers load this conftest).
    pytester.makeconftest(textwrap.dedent(f"""
        import os
        from pytest_sqleval import loader

        _real = loader.load_suite

        def _logged(path):
            with open({str(log)!r}, "a") as f:
                f.write(f"{{os.environ.get('PYTEST_XDIST_WORKER', 'controller')}}\\n")
            return _real(path)

        loader.load_suite = _logged
    """))
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess("--sqleval", "-n", "2", "-p", "no:cacheprovider", f"--sqleval-json={report}")
    result.assert_outcomes(passed=6)
    assert len(log.read_text().splitlines()) == 1  # one worker read it; the other worker and the controller did not
    cases = json.loads(report.read_text())["cases"]
    assert sorted(c["id"] for c in cases) == [f"c{i}" for i in range(6)]  # the controller summarised every case
    assert all(c["execution_match"] for c in cases)


# --------------------------------------------------------------------------- xdist scheduling in constant time
class _Node:
    def __init__(self, name):
        self.gateway = type("G", (), {"id": name})()
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indexes):
        self.sent.extend(indexes)

    def shutdown(self):
        self.shutting_down = True


def _drive(scheduler_class, nodeids, finish_order):
    """Run a scheduler over fake workers: each finishes its oldest pending item in turn."""
    config = type("Config", (), {})()  # the schedulers read only these from it
    config.getvalue = {"tx": ["2*popen"]}.get
    config.option = type("Option", (), {"loadscopereorder": True})()
    scheduler = scheduler_class(config)
    nodes = [_Node("gw0"), _Node("gw1")]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, list(nodeids))
    scheduler.schedule()
    done = {node: 0 for node in nodes}
    trace = []
    for turn in finish_order:
        node = nodes[turn % 2]
        if done[node] < len(node.sent):
            scheduler.mark_test_complete(node, node.sent[done[node]])
            done[node] += 1
        trace.append((len(nodes[0].sent), len(nodes[1].sent), scheduler.tests_finished, scheduler.has_pending))
    return [list(n.sent) for n in nodes], [n.shutting_down for n in nodes], trace


def test_the_counted_scheduler_makes_xdists_decisions():
    from xdist.scheduler import LoadScopeScheduling

    from pytest_sqleval.xdist_scheduling import CrashedItemNotRerun, InteractionScheduling

    class Reference(CrashedItemNotRerun, LoadScopeScheduling):  # xdist's own bookkeeping, same scopes
        _split_scope = InteractionScheduling._split_scope

    nodeids = [f"s.sqleval.yaml::c{i}" for i in range(40)] + [f"s.sqleval.yaml::conv[{t}]" for t in range(1, 4)]
    order = [0, 1, 1, 0, 0, 0, 1] * 20
    assert _drive(InteractionScheduling, nodeids, order) == _drive(Reference, nodeids, order)
    sent, shut, trace = _drive(InteractionScheduling, nodeids, order)
    assert sorted(sent[0] + sent[1]) == list(range(len(nodeids)))  # every item sent once
    assert shut == [True, True] and trace[-1][2:] == (True, False)  # all done: both shut down, nothing pending


# --------------------------------------------------------------------------- bootstrap intervals
def _bootstrap_by_choices(data: tuple[float, ...], seed: int, resamples: int) -> list[float]:
    """The resample means exactly as the published intervals were computed: random.Random(seed).choices + fsum."""
    import math
    import random

    rng = random.Random(seed)
    return sorted(math.fsum(rng.choices(data, k=len(data))) / len(data) for _ in range(resamples))


@pytest.mark.parametrize("data", [
    tuple(float(i % 3 == 0) for i in range(972)),                      # a share (execution match)
    tuple((0.0, 1.0, 1 / 3, 2 / 3, 0.5, 0.8, 0.125)[i % 7] for i in range(500)),  # soft F1's few fractions
    tuple(float(i * 7919 % 11) - 4 for i in range(300)),               # whole numbers, negatives
    tuple((i * 0.37) % 1 * 10.0 ** (i % 9 - 4) for i in range(200)),   # many magnitudes
    (0.25,),
])
def test_the_fast_bootstrap_draws_and_sums_exactly_like_random_choices(data):
    pytest.importorskip("numpy")  # the fast path is optional: without numpy the plain loop runs
    from pytest_sqleval import stats

    for seed in (stats.SEED, 1, 2**70 + 3):
        assert sorted(stats._resampled_sums(data, seed, 300)) == _bootstrap_by_choices(data, seed, 300)


def test_the_bootstrap_interval_is_unchanged_with_or_without_the_fast_path(monkeypatch):
    from pytest_sqleval import stats

    data = tuple((0.0, 1.0, 1 / 3, 0.5)[i * 5 % 4] for i in range(400))
    stats._bootstrap_interval.cache_clear()
    fast = stats.bootstrap_mean(data)
    stats._bootstrap_interval.cache_clear()
    monkeypatch.setattr(stats, "_resampled_sums", lambda *a: None)
    assert stats.bootstrap_mean(data) == fast
    stats._bootstrap_interval.cache_clear()
    means = _bootstrap_by_choices(data, stats.SEED, stats.RESAMPLES)
    assert fast == (stats.quantile(means, 0.025), stats.quantile(means, 0.975))


@pytest.mark.parametrize("data", [(0.0, -0.0, 1.0), (1.0, float("nan")), (1.0, float("inf")), (1e-300, 1.0)])
def test_data_the_fast_bootstrap_cannot_count_gives_the_plain_loops_means(data):
    # Not summed by counting: each resample's row summed by fsum (stats._resampled_sums_by_parts), the same means
    # as the plain loop's (repr: -0.0 and NaN compared too).
    import math
    import random

    pytest.importorskip("numpy")  # imported: the numpy path is taken however few the draws
    from pytest_sqleval import stats

    means = stats._resampled_sums(data, stats.SEED, 10)
    rng = random.Random(stats.SEED)
    plain = [math.fsum(rng.choices(data, k=len(data))) / len(data) for _ in range(10)]
    assert means is not None and list(map(repr, means)) == list(map(repr, plain))


# --------------------------------------------------------------------------- gold and prediction sent ahead
OVERLAP_SUITE = """\
execution: {profile}
cases:
  - id: same
    gold: SELECT DISTINCT aircraft FROM tickets
    predicted: SELECT aircraft FROM tickets GROUP BY aircraft
  - id: wrong
    gold: SELECT id FROM tickets WHERE status = 'open'
    predicted: SELECT id FROM tickets WHERE status = 'closed'
  - id: hidden_key
    gold: SELECT aircraft FROM tickets ORDER BY hours DESC
    predicted: SELECT aircraft FROM tickets ORDER BY hours DESC
  - id: rejected
    gold: SELECT count(*) FROM shops
    predicted: DELETE FROM shops
  - id: syntax
    gold: SELECT count(*) FROM shops
    predicted: SELECT count(* FROM shops
  - id: repeated_gold
    gold: SELECT id FROM tickets WHERE status = 'open'
    predicted: SELECT id FROM tickets WHERE status = 'open'
  - id: broken_gold
    gold: SELECT nothing FROM nowhere
    predicted: SELECT 1
"""


@pytest.mark.parametrize("profile", ["sqleval", "test-suite"])
def test_sending_gold_and_prediction_ahead_changes_no_record(pytester, shop_db, monkeypatch, profile):
    """The query process runs a case's gold and prediction while pytest scores the case; the records are those
    of a run without the query process (``SQLEVAL_SANDBOX=0``: every query in pytest's process, in order)."""
    pytester.makefile(".sqleval.yaml", shop=f"database: {shop_db}\n" + OVERLAP_SUITE.format(profile=profile))
    records = {}
    for sandbox in ("1", "0"):
        monkeypatch.setenv("SQLEVAL_SANDBOX", sandbox)
        report = pytester.path / f"report{sandbox}.json"
        pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", f"--sqleval-json={report}")
        records[sandbox] = {c["id"]: (c["outcome"], c.get("execution_match"), (c.get("error") or {}).get("kind"),
                                      (c.get("error") or {}).get("message"))
                            for c in json.loads(report.read_text())["cases"]}
    assert records["1"] == records["0"]
    outcomes = {case: fields[:3] for case, fields in records["1"].items()}
    # test-suite reproduces the official evaluator: DISTINCT cut from both sides, so 6 gold rows against 3
    same = ("passed", True, None) if profile == "sqleval" else ("missed", False, None)
    assert outcomes == {
        "same": same, "wrong": ("missed", False, None), "hidden_key": ("passed", True, None),
        "rejected": ("missed", False, "rejected"), "syntax": ("missed", False, "syntax"),
        "repeated_gold": ("passed", True, None), "broken_gold": ("error", None, "gold"),
    }


# --------------------------------------------------------------------------- third pass: shared readings
CONCERTS = Path(__file__).parent / "fixtures" / "exact_match" / "tables.json"


def _tree_state(tree) -> list:
    """Everything a reader could change in a tree: each node's type, place, parent and plain arguments."""
    return [(type(n).__name__, n.arg_key, n.index, id(n.parent), id(n), n.comments, n.meta,
             sorted((k, v) for k, v in n.args.items() if not isinstance(v, (exp.Expression, list))))
            for n in tree.walk()]


def test_the_readers_that_skip_the_copy_leave_the_shared_tree_as_parsed():
    from pytest_sqleval.comparison import resolve_execution
    from pytest_sqleval.metrics.exact_match.spider_sql import OutsideGrammar, read_spider_sql
    from pytest_sqleval.schema import Schema
    from pytest_sqleval.sql.limits import parse_bounded_shared
    from pytest_sqleval.sql.ordering import plan_order
    from pytest_sqleval.sql.rewrite import strip_distinct

    schema = Schema.from_spider_tables(CONCERTS, "concerts")
    parsed.clear()
    body = ("T1.name, count(DISTINCT T2.concert_id) AS n FROM singer AS T1 JOIN singer_in_concert AS T2 "
            "ON T1.singer_id = T2.singer_id WHERE T1.age > 20 GROUP BY T1.name ORDER BY n DESC, T1.country LIMIT 3")
    distinct, plain = f"SELECT DISTINCT {body}", f"SELECT {body}"
    trees = {sql: parse_bounded_shared(sql, "sqlite")[0] for sql in (distinct, plain)}
    before = {sql: _tree_state(tree) for sql, tree in trees.items()}
    assert strip_distinct(distinct, "sqlite") == strip_distinct(plain, "sqlite") == (
        "SELECT T1.name, COUNT(T2.concert_id) AS n FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = "
        "T2.singer_id WHERE T1.age > 20 GROUP BY T1.name ORDER BY n DESC, T1.country LIMIT 3")
    plan = plan_order(plain, "sqlite", resolve_execution("sqleval"))  # T1.country: a hidden key column
    assert plan.hidden_key_sql is not None and "T1.country AS __sqleval_key_1 FROM" in plan.hidden_key_sql
    assert plan_order(distinct, "sqlite", resolve_execution("sqleval")).hidden_key_sql is None
    for sql in trees:
        with pytest.raises(OutsideGrammar):
            read_spider_sql(sql, schema)  # strict: stops at the column alias
        assert "column_alias" in read_spider_sql(sql, schema, strict=False).constructs
    for sql, tree in trees.items():
        assert parse_bounded_shared(sql, "sqlite")[0] is tree  # one parse for all of them (cached)...
        assert _tree_state(tree) == before[sql]  # ...which none of them changed
    assert parsed.stats["misses"] == 2


def test_a_text_without_distinct_is_returned_as_written():
    from pytest_sqleval.sql.rewrite import strip_distinct

    sql = "select  name from singer -- as written"
    assert strip_distinct(sql, "sqlite") is sql


def test_the_gold_probe_reads_only_the_gold_and_raises_what_exact_match_raises():
    from pytest_sqleval.metrics.exact_match import GoldOutsideGrammar, GoldParseError, exact_match, match, read_gold
    from pytest_sqleval.schema import Schema

    # the cache read_gold itself fills (an in-process pytester run earlier in this process may have left another
    # copy of the spider module in sys.modules than the one read_gold's module imported)
    normalised_gold = match.normalised_gold

    schema = Schema.from_spider_tables(CONCERTS, "concerts")
    parsed.clear()
    normalised_gold.cache_clear()
    gold = "SELECT name FROM singer WHERE age > 20"
    assert read_gold(gold, schema, profile="spider", dialect="sqlite") is None
    assert read_gold(gold, schema, profile="sqleval", dialect="sqlite") is None
    assert parsed.stats["misses"] == 1  # the gold once, no prediction
    assert normalised_gold.cache_info().currsize == 1  # kept for the comparisons
    assert exact_match(gold, "SELECT name FROM singer WHERE age > 30", schema, profile="spider").match
    for bad, error in (("SELECT name FROM singer LEFT JOIN concert ON 1 = 1", GoldOutsideGrammar),
                       ("SELECT name FROM singer WHERE (", GoldParseError)):
        with pytest.raises(error) as probe:
            read_gold(bad, schema, profile="spider", dialect="sqlite")
        with pytest.raises(error) as full:
            exact_match(bad, bad, schema, profile="spider", dialect="sqlite")
        assert str(probe.value) == str(full.value)
    with pytest.raises(GoldParseError):
        read_gold("SELECT name FROM singer; SELECT 1", schema, profile="sqleval")  # one statement, as exact match


def test_hardness_uses_exact_matchs_reading_of_the_gold_and_classifies_it_the_same():
    from pytest_sqleval.metrics.exact_match.spider import known_gold_read, normalised_gold
    from pytest_sqleval.metrics.hardness import classify_hardness
    from pytest_sqleval.schema import Schema

    schema = Schema.from_spider_tables(CONCERTS, "concerts")
    normalised_gold.cache_clear()
    gold = ("SELECT T1.name, count(*) FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id "
            "GROUP BY T1.name ORDER BY count(*) DESC LIMIT 1")
    alone = classify_hardness(gold + " ", schema)  # another text: read by the classifier itself
    assert known_gold_read(gold, schema, "sqlite") is None
    normalised_gold(gold, schema, "sqlite")
    assert known_gold_read(gold, schema, "sqlite") is not None
    shared = classify_hardness(gold, schema)
    assert shared == alone and shared.level == "extra"
    assert known_gold_read("SELECT name FROM singer LEFT JOIN concert ON 1 = 1", schema, "sqlite") is None


def test_the_items_of_a_suite_share_one_fixture_closure_and_overrides_still_apply(pytester, shop_db):
    pytester.makefile(".sqleval.yaml", shop=f"""
        database: {shop_db}
        cases:
          - id: a
            gold: SELECT count(*) FROM shops
            predicted: SELECT count(*) FROM shops
          - id: b
            gold: SELECT name FROM shops
            predicted: SELECT name FROM shops
    """)
    pytester.makeconftest("""
        import pytest

        SEEN = []

        @pytest.fixture
        def sqleval_engine(sqleval_engine_factory, sqleval_case):
            SEEN.append(sqleval_case.id)
            return sqleval_engine_factory.engine(sqleval_case.database)

        def pytest_collection_modifyitems(items):
            infos = {id(item._fixtureinfo) for item in items}
            assert len(infos) == 1 and "sqleval_gold" in items[0].fixturenames

        def pytest_sessionfinish(session):
            assert SEEN == ["a", "b"], SEEN
    """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_a_prediction_identical_to_the_gold_is_not_read_again_and_matches_on_every_clause():
    from pytest_sqleval.metrics.exact_match import exact_match
    from pytest_sqleval.metrics.exact_match.sqleval import gold_shape
    from pytest_sqleval.schema import Schema

    schema = Schema.from_spider_tables(CONCERTS, "concerts")
    parsed.clear()
    gold_shape.cache_clear()
    gold = "SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id LIMIT 2"
    verdict = exact_match(gold, gold, schema, profile="sqleval")
    assert verdict.match and verdict.clauses and all(verdict.clauses.values())
    assert parsed.stats == {"hits": 0, "misses": 1}  # the gold's parse only
    other = exact_match(gold, gold + " ", schema, profile="sqleval")  # another text is read
    assert other == verdict and parsed.stats["misses"] == 2
