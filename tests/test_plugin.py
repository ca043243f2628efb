"""The plugin as a user runs it: collection, outcomes, gates, exit codes, reports, fixtures (via pytester)."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import SHOP_SQL, make_sqlite

SUITE = """
suite: shop
database: shop.sqlite
timeout: 1
max_rows: 50
thresholds:
  execution_accuracy: 0.1
cases:
  - id: count-open
    question: How many open tickets?
    notes: the simplest case
    metadata: {source: hand-written, reviewed: 2026-11-30, labels: [a, b]}
    gold: SELECT count(*) FROM tickets WHERE status = 'open'
    predicted: SELECT count(id) FROM tickets WHERE status = 'open'
    tags: [aggregation]
  - id: shops-by-name
    gold: SELECT name FROM shops ORDER BY name
    predicted: SELECT name FROM shops ORDER BY name DESC
  - id: busiest-shop
    gold: SELECT s.name, count(*) AS n FROM tickets t JOIN shops s ON s.id = t.shop_id GROUP BY s.name ORDER BY n DESC LIMIT 1
    predicted: SELECT s.name FROM tickets t JOIN shops s ON s.id = t.shop_id GROUP BY s.name ORDER BY count(*) DESC LIMIT 1
    tags: [joins]
  - id: bad-column
    gold: SELECT aircraft FROM tickets
    predicted: SELECT tail_number FROM tickets
  - id: not-sql
    gold: SELECT 1
    predicted: SELEC 1
  - id: overflow
    gold: SELECT 1
    predicted: SELECT abs(-9223372036854775808)
  - id: runaway
    gold: SELECT count(*) FROM tickets
    predicted: >-
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
      SELECT count(*) FROM n a, n b WHERE a.i + b.i = 7
  - id: too-many-rows
    gold: SELECT 1
    predicted: WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n
  - id: wipe
    gold: SELECT count(*) FROM tickets
    predicted: DELETE FROM tickets
  - id: silent
    gold: SELECT count(*) FROM shops
"""

EXPECTED_KINDS = {
    "bad-column": "syntax",
    "not-sql": "syntax",
    "overflow": "runtime",
    "runaway": "timeout",
    "too-many-rows": "row_limit",
    "wipe": "rejected",
    "silent": "no_prediction",
}


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(SUITE))
    return pytester


def run_json(pytester: pytest.Pytester, *args: str, subprocess: bool = False):
    report = pytester.path / "report.json"
    runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = runner("--sqleval", f"--sqleval-json={report}", "-p", "no:cacheprovider", *args)
    data = json.loads(report.read_text()) if report.exists() else None
    return result, data


def test_plugin_is_inert_without_the_option(shop):
    result = shop.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "sqleval:" not in result.stdout.str() and "== sqleval ==" not in result.stdout.str()


def test_ini_option_enables_it(shop):
    shop.makeini("[pytest]\nsqleval = true\n")
    result = shop.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    assert "shop.sqleval.yaml::count-open" in result.stdout.str()


def test_collection_ids_k_and_m(shop):
    result = shop.runpytest("--sqleval", "--collect-only", "-q", "-p", "no:cacheprovider")
    lines = [ln for ln in result.stdout.lines if "::" in ln]
    assert lines[:3] == ["shop.sqleval.yaml::count-open", "shop.sqleval.yaml::shops-by-name", "shop.sqleval.yaml::busiest-shop"]
    assert len(lines) == 10
    selected = shop.runpytest("--sqleval", "--collect-only", "-q", "-k", "busiest or open", "-p", "no:cacheprovider")
    assert sum("::" in ln for ln in selected.stdout.lines) == 2
    marked = shop.runpytest("--sqleval", "--collect-only", "-q", "-m", "joins", "-p", "no:cacheprovider")
    assert [ln for ln in marked.stdout.lines if "::" in ln] == ["shop.sqleval.yaml::busiest-shop"]


def test_every_outcome_and_error_kind(shop):
    result, report = run_json(shop, "-rA")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*shop.sqleval.yaml .mmmmmmmmm*"])
    assert result.parseoutcomes() == {"passed": 1, "missed": 9}
    cases = {c["id"]: c for c in report["cases"]}
    assert cases["count-open"]["outcome"] == "passed"
    assert cases["count-open"]["metadata"] == {"source": "hand-written", "reviewed": "2026-11-30", "labels": ["a", "b"]}
    assert "metadata" not in cases["wipe"]
    for case_id, kind in EXPECTED_KINDS.items():
        assert cases[case_id]["outcome"] == "missed"
        assert cases[case_id]["valid"] is False
        assert cases[case_id]["error"]["kind"] == kind, cases[case_id]["error"]
    order = cases["shops-by-name"]
    assert order["valid"] is True and order["execution_match"] is False and order["error"] is None
    assert order["mismatch"]["reason"] == "order"
    busiest = cases["busiest-shop"]
    assert busiest["mismatch"]["reason"] == "column_count"
    assert busiest["soft_f1"] == pytest.approx(2 / 3)


def test_strict_mode_makes_misses_failures(shop):
    result = shop.runpytest("--sqleval", "--sqleval-strict", "-p", "no:cacheprovider", "-k", "open or by-name")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"passed": 1, "failed": 1, "deselected": 8}
    result.stdout.fnmatch_lines(["*shops-by-name: order: *", "*gold SQL:*ORDER BY name*"])


def test_the_database_is_unchanged_and_the_run_is_bounded(shop):
    before = (shop.path / "shop.sqlite").read_bytes()
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider", "--durations=0", "-vv")
    assert result.ret == 0
    assert (shop.path / "shop.sqlite").read_bytes() == before
    runaway = [ln for ln in result.stdout.lines if "runaway" in ln and ln.strip()[0].isdigit() and "call" in ln]
    assert runaway and float(runaway[0].split("s", 1)[0]) < 5.0


def test_gold_failure_and_unopenable_database_are_errors(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    (pytester.path / "broken.sqlite").write_bytes(b"this is not a database" * 100)
    pytester.makefile(".sqleval.yaml", suite=textwrap.dedent("""
        database: shop.sqlite
        cases:
          - {id: fine, gold: SELECT 1, predicted: SELECT 1}
          - {id: bad-gold, gold: SELECT no_such_column FROM tickets, predicted: SELECT 1}
          - {id: bad-db, gold: SELECT 1, predicted: SELECT 1, database: broken.sqlite}
    """))
    result, report = run_json(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"passed": 1, "errors": 2}
    result.stdout.fnmatch_lines(["*case bad-gold: the gold query failed*no such column: no_such_column*",
                                 "*cannot open SQLite database*broken.sqlite*"])
    outcomes = {c["id"]: (c["outcome"], c["error"]["kind"] if c["error"] else None) for c in report["cases"]}
    assert outcomes == {"fine": ("passed", None), "bad-gold": ("error", "gold"), "bad-db": ("error", "database")}
    assert report["suites"][0]["metrics"]["execution_accuracy"] == 1.0  # errors never count as the model's misses


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_threshold_gate_and_exit_status(shop, workers):
    passing = shop.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", *workers)
    assert passing.ret == 0
    passing.stdout.fnmatch_lines(["*PASS execution_accuracy 0.10 >= 0.10*"])
    failing = shop.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-threshold",
                                        "execution_accuracy=0.6", "--sqleval-threshold", "error_count=3", *workers)
    assert failing.ret == pytest.ExitCode.TESTS_FAILED
    failing.stdout.fnmatch_lines([
        "*FAIL error_count 7 > 3*",
        "*FAIL execution_accuracy 0.10 < 0.60*",
        "*sqleval gate failed for suite shop*",
        "*1 passed, 9 missed*",
    ])


def test_ini_thresholds_apply_where_the_suite_is_silent(shop):
    shop.makeini("[pytest]\nsqleval_thresholds =\n    valid_syntax=0.9\n    execution_accuracy=0.5\n")
    result = shop.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*PASS execution_accuracy 0.10 >= 0.10*"])  # the suite's own threshold wins
    result.stdout.fnmatch_lines(["*FAIL valid_syntax 0.30 < 0.90*"])


def test_json_report_schema_and_xdist_equality(shop):
    serial, report = run_json(shop, subprocess=True)
    parallel, report_n2 = run_json(shop, "-n", "2", subprocess=True)
    assert serial.ret == parallel.ret == 0
    assert report["schema"] == "sqleval-report/1"
    (suite,) = report["suites"]
    assert {"name", "path", "cases", "metrics", "by_difficulty", "by_gold_sql", "thresholds", "passed"} <= set(suite)
    assert suite["name"] == "shop" and suite["cases"] == 10 and suite["passed"] is True
    assert suite["thresholds"] == [
        {"metric": "execution_accuracy", "min": 0.1, "value": pytest.approx(0.1), "passed": True, "source": "suite"}
    ]
    metrics = suite["metrics"]
    assert metrics["valid_syntax"] == pytest.approx(0.3)
    assert metrics["error_count"] == 7
    assert metrics["errors_by_kind"] == {"no_prediction": 1, "rejected": 1, "row_limit": 1, "runtime": 1, "syntax": 2, "timeout": 1}
    assert metrics["execution_accuracy"] == pytest.approx(0.1)
    case_keys = {"suite", "id", "database", "difficulty", "tags", "gold", "predicted", "valid", "error",
                 "execution_match", "soft_f1", "outcome"}
    assert all(case_keys <= set(c) for c in report["cases"])
    assert report["suites"] == report_n2["suites"]
    assert report["cases"] == report_n2["cases"]


def test_verbose_shows_sql_and_a_diff(shop):
    result = shop.runpytest("--sqleval", "-v", "-p", "no:cacheprovider", "-k", "busiest")
    result.stdout.fnmatch_lines([
        "*busiest-shop: column_count:*",
        "*gold SQL:*count(*) AS n*",
        "*predicted SQL:*ORDER BY count(*) DESC LIMIT 1*",
        "*gold result: 1 row x 2 columns*",
        "*Avionics*3*",
        "*predicted result: 1 row x 1 column*",
    ])


def test_predictions_file_matched_by_id(shop):
    (shop.path / "preds.jsonl").write_text(
        '{"id": "shops-by-name", "sql": "SELECT name FROM shops ORDER BY name"}\n'
        '{"id": "count-open", "sql": "SELECT 0"}\n'
    )
    result, report = run_json(shop, "--sqleval-predictions=preds.jsonl")
    cases = {c["id"]: c for c in report["cases"]}
    assert cases["shops-by-name"]["outcome"] == "passed"
    assert cases["count-open"]["outcome"] == "missed"
    assert cases["wipe"]["error"]["kind"] == "no_prediction"  # the file replaces the suite's predictions


def test_predictions_file_with_unknown_ids_is_an_error(shop):
    (shop.path / "preds.jsonl").write_text('{"id": "count-open", "sql": "SELECT 1"}\n{"id": "nope", "sql": "x"}\n'
                                           '{"id": "also-nope", "sql": "x"}\n')
    for workers in ([], ["-n", "2"]):
        result = shop.runpytest_subprocess("--sqleval", "--sqleval-predictions=preds.jsonl", "-p", "no:cacheprovider",
                                           *workers)
        assert result.ret != pytest.ExitCode.OK, workers
        result.stdout.fnmatch_lines(["*preds.jsonl: 2 prediction id(s) match no collected case: nope, also-nope*"])
        assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
        assert "passed" not in result.stdout.lines[-1] and "missed" not in result.stdout.lines[-1]


def test_malformed_suite_is_a_collection_error_without_traceback(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", bad="database: shop.sqlite\ncases:\n  - id: a\n    question: q\n")
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*bad.sqleval.yaml:3: 'a' has no `gold:` SQL*", "*fix: add `gold: SELECT ...`*"])
    assert "Traceback" not in result.stdout.str()


def test_explicitly_named_yaml_is_collected(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".yaml", custom="database: shop.sqlite\ncases: [{id: one, gold: SELECT 1, predicted: SELECT 1}]\n")
    assert pytester.runpytest("--sqleval", "-p", "no:cacheprovider").ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result = pytester.runpytest("--sqleval", "custom.yaml", "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"passed": 1}


def test_engine_fixture_overridden_in_conftest(shop):
    other = make_sqlite(shop.path / "other" / "shop.sqlite", SHOP_SQL + "INSERT INTO shops VALUES (4, 'Wheels');")
    shop.makeconftest(f"""
        import pytest

        @pytest.fixture
        def sqleval_engine(sqleval_engine_factory, sqleval_case):
            assert sqleval_case.id
            return sqleval_engine_factory({str(other)!r})
    """)
    result, report = run_json(shop, "-k", "shops-by-name")
    case = report["cases"][0]
    assert case["mismatch"]["gold_shape"] == [4, 1]  # the gold ran on the overriding database


def test_engine_factory_in_an_ordinary_test(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makepyfile("""
        from pytest_sqleval import compare_results, EXECUTION_PROFILES, run_query

        def test_query(sqleval_engine_factory):
            engine = sqleval_engine_factory("shop.sqlite")
            gold = run_query(engine, "SELECT name FROM shops", timeout=5, max_rows=10, untrusted=False)
            pred = run_query(engine, "SELECT name FROM shops ORDER BY id DESC", timeout=5, max_rows=10)
            assert compare_results(gold, pred, EXECUTION_PROFILES["sqleval"], ordered=False).match
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"passed": 1}


CONVERSATION = """
database: shop.sqlite
pass_if: execution_match
cases:
  - id: conv-a
    interaction:
      - {gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops"}
      - {gold: "SELECT name FROM shops WHERE id = 1", predicted: "SELECT name FROM shops WHERE id = 1"}
  - id: conv-b
    interaction:
      - {gold: "SELECT count(*) FROM tickets", predicted: "SELECT count(*) FROM tickets"}
      - {gold: "SELECT count(*) FROM tickets WHERE status = 'open'", predicted: "SELECT count(*) FROM tickets"}
      - {gold: "SELECT max(hours) FROM tickets"}
  - id: conv-c
    interaction:
      - {gold: "SELECT 1", predicted: "SELECT 1"}
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_interactions(pytester, workers):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", conv=CONVERSATION)
    collected = pytester.runpytest("--sqleval", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert "conv.sqleval.yaml::conv-b[2]" in collected.stdout.str()
    result, report = run_json(pytester, *workers, subprocess=True)
    metrics = report["suites"][0]["metrics"]
    assert metrics["question_match"] == pytest.approx(4 / 6)
    assert metrics["interaction_match"] == pytest.approx(2 / 3)
    assert metrics["interaction_execution_accuracy"] == pytest.approx(2 / 3)
    turns = {c["id"]: c for c in report["cases"]}
    assert turns["conv-b/3"]["error"]["kind"] == "no_prediction"
    assert turns["conv-b/2"]["interaction"] == "conv-b" and turns["conv-b/2"]["turn"] == 2
    by_turn = report["suites"][0]["by_turn"]
    assert by_turn["1"]["question_match"] == 1.0 and by_turn["2"]["question_match"] == 0.5


def test_turn_predictions_from_a_file(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", conv=CONVERSATION)
    (pytester.path / "p.jsonl").write_text('{"id": "conv-b/3", "sql": "SELECT max(hours) FROM tickets"}\n')
    result, report = run_json(pytester, "--sqleval-predictions=p.jsonl", "-k", "conv-b")
    turns = {c["id"]: c["outcome"] for c in report["cases"]}
    assert turns == {"conv-b/1": "missed", "conv-b/2": "missed", "conv-b/3": "passed"}


def test_test_suite_accuracy_over_several_databases(pytester):
    make_sqlite(pytester.path / "db" / "a.sqlite")
    make_sqlite(pytester.path / "db" / "b.sqlite", SHOP_SQL + "INSERT INTO tickets VALUES (7, 3, 'X', 9.0, 'open');")
    pytester.makefile(".sqleval.yaml", ts=textwrap.dedent("""
        databases: "db/*.sqlite"
        cases:
          - id: hard-coded
            gold: SELECT count(*) FROM tickets WHERE status = 'open'
            predicted: SELECT 3
          - id: right
            gold: SELECT count(*) FROM tickets WHERE status = 'open'
            predicted: SELECT count(*) FROM tickets WHERE status = 'open'
    """))
    result, report = run_json(pytester)
    cases = {c["id"]: c for c in report["cases"]}
    assert cases["hard-coded"]["execution_match"] is False
    assert [d["execution_match"] for d in cases["hard-coded"]["databases"]] == [True, False]
    assert cases["right"]["execution_match"] is True
    metrics = report["suites"][0]["metrics"]
    assert metrics["execution_accuracy"] == 1.0  # on the first database
    assert metrics["test_suite_accuracy"] == 0.5


def test_interaction_turns_run_in_order_on_one_worker(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    turns = "\n".join(f"      - {{gold: 'SELECT {n}', predicted: 'SELECT {n}'}}" for n in range(1, 6))
    cases = "\n".join(f"  - id: conv-{i}\n    interaction:\n{turns}" for i in range(6))
    pytester.makefile(".sqleval.yaml", many=f"database: shop.sqlite\ncases:\n{cases}\n")
    result = pytester.runpytest_subprocess("--sqleval", "-n", "2", "-v", "-p", "no:cacheprovider")
    assert result.ret == 0
    seen: dict[str, list[tuple[str, int]]] = {}
    for line in result.stdout.lines:
        if line.startswith("[gw") and "PASSED" in line and "conv-" in line:
            worker = line.split("]", 1)[0][1:]
            node = line.split("::", 1)[1].split()[0]
            interaction, turn = node.split("[", 1)
            seen.setdefault(interaction, []).append((worker, int(turn.split("]", 1)[0])))
    assert sorted(seen) == [f"conv-{i}" for i in range(6)]
    for interaction, runs in seen.items():
        assert len({worker for worker, _ in runs}) == 1, (interaction, runs)
        assert [turn for _, turn in runs] == [1, 2, 3, 4, 5], (interaction, runs)
    assert len({runs[0][0] for runs in seen.values()}) == 2  # both workers got interactions


def test_missing_predictions_file_is_a_usage_error(shop):
    result = shop.runpytest("--sqleval", "--sqleval-predictions=nope.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*nope.jsonl: cannot read the predictions file*", "*fix: pass an existing JSON Lines file*"])


def test_gold_outside_the_spider_grammar_is_an_error_of_each_case(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", em=textwrap.dedent("""
        database: shop.sqlite
        exact_match: spider
        cases:
          - {id: a, gold: "SELECT s.name FROM shops AS s LEFT JOIN tickets AS t ON t.shop_id = s.id", predicted: "SELECT 1"}
          - {id: b, gold: "SELECT s.name FROM shops AS s LEFT JOIN tickets AS t ON t.shop_id = s.id", predicted: "SELECT 1"}
          - {id: c, gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops"}
    """))
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"passed": 1, "errors": 2}
    result.stdout.fnmatch_lines([
        "*case a: the gold of case a is outside the Spider grammar (left_join); use `exact_match: sqleval`*",
        "*case b: the gold of case b is outside the Spider grammar (left_join)*",
    ])
