"""QA of suites, bad input, the plugin's manners and xdist equality, with inputs no one tuned for.

Each test is a promise of the README ("A suite", "Running", "Extending") or of issues 2, 8 and 13, tried as a
new user would: a suite file, a conftest.py, an ini file, run through pytester.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import make_sqlite, require_module
from pytest_sqleval.errors import SuiteError
from pytest_sqleval.loader import load_suite


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def _load_error(path: Path) -> str:
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    return info.value.render()


def _output(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


def _report(path: Path) -> dict:
    report = json.loads(path.read_text(encoding="utf-8"))
    report.pop("run")  # timings and host: the only block allowed to differ between runs
    return report


# --------------------------------------------------------------------------- wrong types, silently accepted before
@pytest.mark.parametrize("value", ["true", "yes", "on"])
def test_a_true_false_threshold_is_refused_not_read_as_one(tmp_path, value):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", f"""
        database: shop.sqlite
        thresholds:
          execution_accuracy: {value}
        cases:
          - {{id: a, gold: SELECT 1}}
    """)
    message = _load_error(suite)
    assert "t.sqleval.yaml:3:" in message
    assert "threshold for execution_accuracy must be a number, not true" in message


@pytest.mark.parametrize(
    "line, key, what",
    [("suite: [a, b]", "suite", "a list"), ("description: {x: 1}", "description", "a mapping")],
)
def test_suite_text_keys_of_another_type_are_refused(tmp_path, line, key, what):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", f"""
        {line}
        database: shop.sqlite
        cases:
          - {{id: a, gold: SELECT 1}}
    """)
    message = _load_error(suite)
    assert f"t.sqleval.yaml:1: `{key}:` must be text, not {what}" in message
    assert "fix: quote it" in message


@pytest.mark.parametrize("question, what", [("yes", "true/false"), ("[which, shop]", "a list"), ("{a: 1}", "a mapping")])
def test_a_question_that_yaml_reads_as_another_type_is_refused(tmp_path, question, what):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", f"""
        database: shop.sqlite
        cases:
          - id: a
            question: {question}
            gold: SELECT 1
    """)
    message = _load_error(suite)
    assert f"t.sqleval.yaml:4: `question:` of 'a' must be text, not {what}" in message


def test_numbers_stay_valid_suite_names_and_questions(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = load_suite(_write(tmp_path / "t.sqleval.yaml", """
        suite: 2024
        database: shop.sqlite
        cases:
          - {id: a, question: 42, gold: SELECT 1}
    """))
    assert suite.name == "2024" and suite.cases[0].question == "42"


@pytest.mark.parametrize(
    "entry, expected",
    [
        ("gold: {x: 1}", "`gold:` of 'a' must be SQL text, not a mapping"),
        ("gold: SELECT 1\n    predicted: [SELECT 1]", "`predicted:` of 'a' must be SQL text, not a list"),
        ("expected: {rows: [[{a: 1}]]}", "expected row 1 of 'a' holds a mapping; cells are single values"),
    ],
)
def test_type_messages_use_yaml_words_not_internal_class_names(tmp_path, entry, expected):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", "database: shop.sqlite\ncases:\n  - id: a\n    " + entry + "\n")
    message = _load_error(suite)
    assert expected in message
    assert "Line" not in message  # LineMapping / LineSequence are the loader's own classes


def test_a_list_under_database_points_to_databases(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", """
        database: [shop.sqlite]
        cases:
          - {id: a, gold: SELECT 1}
    """)
    message = _load_error(suite)
    assert "t.sqleval.yaml:1: `database:` names one database, not a list" in message
    assert "databases: [a.sqlite, b.sqlite]" in message


def test_a_directory_as_database_says_so(tmp_path):
    (tmp_path / "data").mkdir()
    make_sqlite(tmp_path / "data" / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", """
        suite: t
        cases:
          - id: a
            database: data
            gold: SELECT 1
    """)
    message = _load_error(suite)
    assert "t.sqleval.yaml:4: the database path is a directory, not a database file" in message
    assert "not found" not in message
    assert 'databases: \\"data/*.sqlite\\"' in message or 'databases: "data/*.sqlite"' in message


def test_sql_split_at_a_comma_in_a_flow_mapping_gets_the_quoting_fix(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT id, name FROM shops}
    """)
    message = _load_error(suite)
    assert "t.sqleval.yaml:3: unknown key 'name FROM shops' in case #1" in message
    assert "quote the SQL" in message and "splits unquoted text at each comma" in message


# --------------------------------------------------------------------------- pass_if that can never decide
@pytest.mark.parametrize(
    "rule, expected",
    [
        ("soft_f1 >= 1.5", "soft_f1 is a score from 0 to 1"),
        ("bird_soft_f1 < -0.1", "bird_soft_f1 is a score from 0 to 1"),
        ("soft_f1 >= nan", "needs a finite number, not 'nan'"),
        ("execution_match and soft_f1 > inf", "needs a finite number, not 'inf'"),
    ],
)
def test_a_pass_if_number_that_makes_every_case_a_silent_miss_is_refused(tmp_path, rule, expected):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", f"""
        database: shop.sqlite
        pass_if: {rule}
        cases:
          - {{id: a, gold: SELECT 1, predicted: SELECT 1}}
    """)
    message = _load_error(suite)
    assert "t.sqleval.yaml:2: bad pass_if:" in message and expected in message


@pytest.mark.parametrize("value, expected", [("", "pass_if is empty"), ("[execution_match]", "not a list"),
                                             ("true", "not true/false")])
def test_an_empty_or_non_text_pass_if_is_named_as_such(tmp_path, value, expected):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", f"""
        database: shop.sqlite
        pass_if: {value}
        cases:
          - {{id: a, gold: SELECT 1}}
    """)
    message = _load_error(suite)
    assert "t.sqleval.yaml:2:" in message and expected in message
    assert "'None'" not in message


# --------------------------------------------------------------------------- ini options
def test_an_ini_predictions_path_is_relative_to_the_ini_file(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT count(*) FROM shops, predicted: SELECT 0}
    """)
    (pytester.path / "preds.jsonl").write_text('{"id": "a", "sql": "SELECT count(*) FROM shops"}\n')
    (pytester.path / "pytest.ini").write_text("[pytest]\nsqleval = true\nsqleval_predictions = preds.jsonl\n")
    sub = pytester.mkdir("sub")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(sub)  # `pytest ..` from a subfolder: the ini file is found above, its paths are its own
        result = pytester.runpytest("-p", "no:cacheprovider", "..")
    assert "cannot read the predictions file" not in _output(result)
    result.assert_outcomes(passed=1)  # the file's prediction, not the suite's `predicted: SELECT 0`


@pytest.mark.parametrize("option", ["sqleval", "sqleval_strict", "sqleval_diff"])
def test_a_bad_ini_truth_value_names_the_option(pytester, option):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n")
    pytester.makeini(f"[pytest]\n{option} = maybe\n")
    result = pytester.runpytest("-p", "no:cacheprovider", *(["--sqleval"] if option != "sqleval" else []))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ini option {option} must be true or false" in _output(result)


def test_cli_beats_suite_beats_ini_for_row_cap_and_thresholds(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        max_rows: 10
        thresholds: {soft_f1: 0.2}
        cases:
          - {id: r, gold: SELECT id FROM shops, predicted: SELECT id FROM shops}
    """)
    pytester.makeini("[pytest]\nsqleval_max_rows = 2\nsqleval_thresholds =\n    soft_f1=0.1\n    pass_rate=0.3\n")

    def run(*args):
        pytester.runpytest("--sqleval", "--sqleval-json", "r.json", "-p", "no:cacheprovider", *args)
        report = json.loads((pytester.path / "r.json").read_text())
        gates = {t["metric"]: (t["min"], t["source"]) for t in report["suites"][0]["thresholds"]}
        return report["cases"][0]["outcome"], gates

    # the suite's 10 rows beat the ini's 2 (3 shops pass); its soft_f1 beats the ini's; pass_rate only in ini
    assert run() == ("passed", {"soft_f1": (0.2, "suite"), "pass_rate": (0.3, "ini")})
    # the command line's 2 rows beat the suite (the 3-row gold is an error of the suite), and its threshold too
    outcome, gates = run("--sqleval-max-rows", "2", "--sqleval-threshold", "soft_f1=0.5")
    assert outcome == "error" and gates == {"soft_f1": (0.5, "cli"), "pass_rate": (0.3, "ini")}


# --------------------------------------------------------------------------- several files, one suite name
def test_two_suite_files_with_one_name_are_an_error_naming_both(pytester):
    for folder, predicted in (("x", "SELECT 1"), ("y", "SELECT 2")):
        make_sqlite(pytester.path / folder / "shop.sqlite")
        _write(pytester.path / folder / "dev.sqleval.yaml", f"""
            database: shop.sqlite
            cases:
              - id: conv
                interaction:
                  - {{gold: SELECT 1, predicted: {predicted}}}
        """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    output = _output(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error, as for any broken suite
    assert "y/dev.sqleval.yaml:1: the suite name 'dev' is already used by" in output
    assert str(pytester.path / "x" / "dev.sqleval.yaml") in output
    assert "own `suite:` name" in output
    # named apart, both run, and the overall figure counts two interactions (one passes)
    _write(pytester.path / "y" / "dev.sqleval.yaml",
           "suite: dev-y\n" + (pytester.path / "y" / "dev.sqleval.yaml").read_text())
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json")
    result.assert_outcomes(passed=1)
    overall = json.loads((pytester.path / "r.json").read_text())["overall"]
    assert overall["suites"] == 2 and overall["metrics"]["interaction_match"] == 0.5


# --------------------------------------------------------------------------- fixtures overridden in conftest.py
def test_an_engine_override_through_the_factory_is_the_database_the_report_names(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    make_sqlite(pytester.path / "other.sqlite", "CREATE TABLE shops (id INTEGER, name TEXT); "
                                                "INSERT INTO shops VALUES (1, 'Ünïcode');")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT name FROM shops, predicted: "SELECT 'Ünïcode'"}
    """)
    pytester.makeconftest("""
        import pytest

        @pytest.fixture
        def sqleval_engine(sqleval_engine_factory):
            return sqleval_engine_factory("other.sqlite")
    """)
    for extra in ((), ("-p", "xdist", "-n", "2")):
        result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json", *extra)
        result.assert_outcomes(passed=1)  # the gold ran on other.sqlite
        case = json.loads((pytester.path / "r.json").read_text())["cases"][0]
        assert case["database"] == f"sqlite:///{pytester.path / 'other.sqlite'} (from the sqleval_engine fixture)"


# --------------------------------------------------------------------------- extension hooks, bad manners
def test_a_user_metric_value_of_another_type_is_that_case_error_not_an_internal_error(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT count(*) FROM shops, predicted: SELECT count(*) FROM shops}
          - {id: b, gold: SELECT 1, predicted: SELECT 1}
    """)
    pytester.makeconftest("""
        from pytest_sqleval.registry import Metric

        def pytest_sqleval_register_metrics(registry):
            registry.register(Metric("verdict", kind="rate", score=lambda record, context: "yes"))
            registry.register("hooked", kind="mean")

        def pytest_sqleval_score_case(record, case):
            record["hooked"] = 0.5 if case.id == "a" else float("nan")
    """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json")
    output = _output(result)
    assert "INTERNALERROR" not in output and "Traceback" not in output
    assert result.ret == 1
    cases = {c["id"]: c for c in json.loads((pytester.path / "r.json").read_text())["cases"]}
    assert {c["outcome"] for c in cases.values()} == {"error"}
    assert "metric 'verdict' gave 'yes' for this case" in cases["a"]["error"]["message"]


def test_a_user_metric_with_a_finite_number_or_none_is_aggregated(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT 1, predicted: SELECT 1}
          - {id: b, gold: SELECT 1, predicted: SELECT 2}
          - {id: c, gold: SELECT 1}
    """)
    pytester.makeconftest("""
        def pytest_sqleval_register_metrics(registry):
            registry.register("half", kind="mean", population="scored")

        def pytest_sqleval_score_case(record, case):
            record["half"] = {"a": 1, "b": 0.25, "c": None}[case.id]
    """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json")
    result.assert_outcomes(passed=1)
    metrics = json.loads((pytester.path / "r.json").read_text())["suites"][0]["metrics"]
    assert metrics["half"] == pytest.approx((1 + 0.25) / 2)  # c does not count


def test_a_score_function_that_raises_names_its_metric(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n")
    pytester.makeconftest("""
        from pytest_sqleval.registry import Metric

        def broken(record, context):
            raise KeyError("latency")

        def pytest_sqleval_register_metrics(registry):
            registry.register(Metric("fast_enough", kind="rate", score=broken))
    """)
    pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json")
    case = json.loads((pytester.path / "r.json").read_text())["cases"][0]
    assert case["outcome"] == "error"
    assert "metric 'fast_enough': its score() raised KeyError: 'latency'" in case["error"]["message"]


@pytest.mark.parametrize(
    "body, expected",
    [
        ('registry.register("soft_f1", kind="mean")', "metric 'soft_f1' is registered twice"),
        ('registry.register("mine", kind="average")', "metric 'mine': kind must be one of rate, mean, count"),
        ('registry.register("2fast", kind="rate")', "metric name '2fast': use letters"),
        ('registry.register("mine", kind="rate", colour="red")', "metric 'mine':"),
        ('registry.register("error", kind="count", score=lambda record, context: True)',
         "metric 'error': its score() would overwrite the case record's own 'error'"),
    ],
)
def test_a_bad_metric_registration_is_a_usage_error_not_a_traceback(pytester, body, expected):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n")
    pytester.makeconftest(f"def pytest_sqleval_register_metrics(registry):\n    {body}\n")
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    output = _output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in output
    assert f"pytest_sqleval_register_metrics: {expected}" in output


# --------------------------------------------------------------------------- the plugin's manners
def test_without_the_plugin_a_suite_is_not_collected_and_sqleval_is_unknown(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n")
    blocked = pytester.runpytest("-p", "no:sqleval", "-p", "no:cacheprovider", "--sqleval")
    assert blocked.ret == pytest.ExitCode.USAGE_ERROR
    assert "unrecognized arguments: --sqleval" in _output(blocked)
    inactive = pytester.runpytest("-p", "no:cacheprovider")  # installed, not enabled: nothing collected
    assert inactive.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_a_file_path_a_directory_and_a_node_id_select_the_same_cases(pytester):
    make_sqlite(pytester.path / "dir" / "shop.sqlite")
    _write(pytester.path / "dir" / "pick.yaml", """
        database: shop.sqlite
        cases:
          - {id: één, gold: SELECT 1, predicted: SELECT 1}
          - {id: two, gold: SELECT 2, predicted: SELECT 3}
    """)
    by_file = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--co", "-q", "dir/pick.yaml")
    assert "dir/pick.yaml::één" in by_file.stdout.str() and "dir/pick.yaml::two" in by_file.stdout.str()
    # a directory collects only *.sqleval.yaml files: a plain .yaml is collected when named
    by_dir = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--co", "-q", "dir")
    assert by_dir.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    one = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "dir/pick.yaml::two")
    assert one.parseoutcomes() == {"missed": 1}


# --------------------------------------------------------------------------- serial == -n 2
MIXED = """
suite: Ünïcode mix
database: données é.sqlite
policy: {tables: [shops, tickets]}
thresholds: {execution_accuracy: 0.9, by_tag.jöin.soft_f1: 0.1, error_count: 0}
cases:
  - {id: gold-fails, gold: SELECT nope FROM shops}
  - {id: café, question: "Wie viele? 🛠", gold: SELECT count(*) FROM shops, tags: [jöin]}
  - {id: 日本, gold: SELECT name FROM shops ORDER BY name, difficulty: hard}
  - id: several
    gold:
      - SELECT id FROM shops
      - SELECT id, name FROM shops
  - id: rows
    expected: {columns: [n], rows: [[3]]}
    expect_rows: 1
  - id: conv
    interaction:
      - {gold: SELECT 1}
      - {gold: SELECT 2}
      - {gold: SELECT 3}
  - {id: policy-miss, gold: SELECT 1}
"""

SECOND = """
suite: second
database: données é.sqlite
execution: bird
pass_if: soft_f1 >= 0.5
cases:
  - {id: a, gold: "SELECT id, name FROM shops"}
  - {id: z, expected: {rows: [[3]]}}
"""

PREDICTIONS = [
    {"id": "Ünïcode mix::gold-fails", "sql": "SELECT 1"},
    {"id": "café", "sql": "SELECT count(*) FROM shops"},
    {"id": "日本", "sql": "SELECT name FROM shops"},
    {"id": "several", "sql": "SELECT name, id FROM shops"},
    {"id": "rows", "sql": "SELECT count(*) FROM shops"},
    {"id": "conv/1", "sql": "SELECT 1"},
    {"id": "conv/3", "sql": "SELECT 4"},
    {"id": "policy-miss", "sql": "SELECT 1 FROM sqlite_master LIMIT 1"},
    {"id": "second::a", "sql": "SELECT id FROM shops"},
    {"id": "z", "sql": "SELECT count(*) FROM shops"},
]


def test_serial_and_two_workers_give_the_same_report_on_a_mixed_unicode_run(pytester):
    folder = pytester.path / "suites with spaces"
    make_sqlite(folder / "données é.sqlite")
    _write(folder / "mix.sqleval.yaml", MIXED)
    _write(folder / "second.sqleval.yaml", SECOND)
    (pytester.path / "preds.jsonl").write_text("\n".join(json.dumps(p, ensure_ascii=False) for p in PREDICTIONS),
                                               encoding="utf-8")
    runs = {}
    for name, extra in (("serial", ()), ("two", ("-p", "xdist", "-n", "2")),
                        ("loadfile", ("-p", "xdist", "-n", "2", "--dist", "loadfile"))):
        result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions", "preds.jsonl",
                                    "--sqleval-json", f"{name}.json", *extra)
        assert result.ret == 1  # a gold failed and the gates failed
        outcomes = result.parseoutcomes()
        outcomes.pop("seconds", None)
        assert outcomes == {"passed": 6, "errors": 1, "missed": 4, "gates": 2}  # "... 2 gates failed in 0.4s"
        runs[name] = _report(pytester.path / f"{name}.json")
    assert runs["serial"] == runs["two"] == runs["loadfile"]
    cases = {(c["suite"], c["id"]): c["outcome"] for c in runs["serial"]["cases"]}
    assert cases[("Ünïcode mix", "gold-fails")] == "error"
    assert cases[("Ünïcode mix", "policy-miss")] == "missed"
    assert cases[("Ünïcode mix", "conv/2")] == "missed"  # a missing turn is a miss, never dropped
    assert cases[("second", "z")] == "passed"


def test_selection_and_last_failed_are_the_same_under_two_workers(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: ok-1, gold: SELECT 1, predicted: SELECT 1, tags: [easy_one]}
          - {id: ok-2, gold: SELECT 2, predicted: SELECT 2}
          - {id: wrong, gold: SELECT 3, predicted: SELECT 4, tags: [easy_one]}
    """)
    first = pytester.runpytest("--sqleval")
    assert first.parseoutcomes() == {"passed": 2, "missed": 1}
    for extra in ((), ("-p", "xdist", "-n", "2")):
        selected = pytester.runpytest("--sqleval", "-m", "easy_one", "-k", "not ok", "--sqleval-json", "m.json",
                                      *extra)
        outcomes = selected.parseoutcomes()  # (xdist's controller does not print the deselected count)
        assert outcomes.get("missed") == 1 and "passed" not in outcomes
        assert [c["id"] for c in json.loads((pytester.path / "m.json").read_text())["cases"]] == ["wrong"]
        rerun = pytester.runpytest("--sqleval", "--lf", *extra)
        outcomes = rerun.parseoutcomes()
        assert outcomes.get("missed") == 1 and "passed" not in outcomes  # only the last run's miss ran


# --------------------------------------------------------------------------- predictions files
@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_an_empty_predictions_file_is_an_error_not_a_run_of_misses(pytester, content):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n")
    (pytester.path / "preds.jsonl").write_text(content)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions", "preds.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "preds.jsonl: the predictions file holds no predictions" in _output(result)
    # the same file named by the suite's `predictions:` key: a collection error naming the suite
    _write(pytester.path / "t.sqleval.yaml",
           "database: shop.sqlite\npredictions: preds.jsonl\ncases:\n  - {id: b, gold: SELECT 1}\n")
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "t.sqleval.yaml")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "holds no predictions" in _output(result)


def test_a_json_array_instead_of_json_lines_says_so(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n")
    (pytester.path / "preds.json").write_text('[{"id": "a", "sql": "SELECT 1"}]\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions", "preds.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "preds.json:1: the line is a JSON array; the predictions file is JSON Lines" in _output(result)


def test_predictions_with_missing_and_extra_ids(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT 1}
          - {id: b, gold: SELECT 2, predicted: SELECT 2}
    """)
    (pytester.path / "preds.jsonl").write_text('{"id": "a", "sql": "SELECT 1"}\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions", "preds.jsonl",
                                "--sqleval-json", "r.json")
    cases = {c["id"]: c for c in json.loads((pytester.path / "r.json").read_text())["cases"]}
    assert cases["a"]["outcome"] == "passed"
    assert cases["b"]["error"]["kind"] == "no_prediction"  # the file replaces the suite's `predicted:`
    (pytester.path / "preds.jsonl").write_text('{"id": "a", "sql": "SELECT 1"}\n{"id": "ç", "sql": null}\n'
                                               '{"id": "s::zz", "sql": "SELECT 1"}\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions", "preds.jsonl")
    assert result.ret != 0
    assert "2 prediction id(s) match no collected case: ç, s::zz" in _output(result)


@pytest.mark.parametrize("tag", ["skip", "xfail", "parametrize", "sqleval"])
def test_a_tag_named_after_a_marker_that_acts_is_refused_not_a_silently_skipped_case(tmp_path, tag):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", f"""
        database: shop.sqlite
        cases:
          - {{id: a, gold: SELECT 1, predicted: SELECT 1, tags: [joins, {tag}]}}
    """)
    message = _load_error(suite)
    assert f"t.sqleval.yaml:3: tag {tag!r} is the name of a pytest marker that acts on the test" in message
    assert f"rename the tag, e.g. `{tag}_case`" in message


def test_unicode_tags_are_markers_for_m(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT 1, predicted: SELECT 1, tags: [jöin]}
          - {id: b, gold: SELECT 1, predicted: SELECT 1}
    """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "-m", "jöin", "--strict-markers")
    assert result.parseoutcomes() == {"passed": 1, "deselected": 1}


@pytest.mark.parametrize("written, number", [("010", 8), ("0x1F", 31), ("1_000", 1000)])
def test_an_id_yaml_reads_as_another_number_is_refused(tmp_path, written, number):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", f"""
        database: shop.sqlite
        cases:
          - id: {written}
            gold: SELECT 1
    """)
    message = _load_error(suite)
    assert f"t.sqleval.yaml:3: the id {written} reads as the number {number} in YAML" in message
    assert f'quote it: `id: "{written}"`' in message
    _write(suite, f'database: shop.sqlite\ncases:\n  - {{id: "{written}", gold: SELECT 1}}\n  - {{id: 7, gold: SELECT 1}}\n')
    assert [c.id for c in load_suite(suite).cases] == [written, "7"]


def test_a_suite_predictions_file_takes_the_suite_qualified_ids_too(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        suite: shop-q
        database: shop.sqlite
        predictions: preds.jsonl
        cases:
          - {id: a, gold: SELECT 1}
          - id: conv
            interaction:
              - {gold: SELECT 2}
    """)
    (pytester.path / "preds.jsonl").write_text('{"id": "shop-q::a", "sql": "SELECT 1"}\n'
                                               '{"id": "shop-q::conv/1", "sql": "SELECT 2"}\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"passed": 2}
    (pytester.path / "preds.jsonl").write_text('{"id": "shop-q::a", "sql": "SELECT 1"}\n{"id": "a", "sql": "SELECT 9"}\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "case 'a' of suite 'shop-q' has two predictions: 'shop-q::a' on line 1 and 'a' on line 2" in _output(result)


def test_yaml_suffixes_in_capitals_are_suites_too(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    body = "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1, predicted: SELECT 1}\n"
    (pytester.path / "Upper.SQLEVAL.YAML").write_text("suite: upper\n" + body)
    (pytester.path / "named.YML").write_text(body)
    collected = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--co", "-q")
    assert "Upper.SQLEVAL.YAML::a" in collected.stdout.str() and "named.YML" not in collected.stdout.str()
    named = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "named.YML", "--sqleval-json", "r.json")
    assert named.parseoutcomes() == {"passed": 1}  # a YAML file named on the command line, whatever its case
    assert json.loads((pytester.path / "r.json").read_text())["suites"][0]["name"] == "named"


def _missing_driver_url() -> tuple[str, str]:
    """A URL of a dialect SQLAlchemy knows whose driver module is not installed here."""
    import importlib.util

    for url, module in (("mssql+pyodbc://u:hunter2@h/db", "pyodbc"), ("mysql+mysqldb://u:hunter2@h/db", "MySQLdb"),
                        ("oracle+cx_oracle://u:hunter2@h/db", "cx_Oracle")):
        if importlib.util.find_spec(module) is None:
            return url, module
    raise AssertionError("every candidate driver is installed: add another")


@pytest.mark.parametrize("kind", ["unknown dialect", "missing driver"])
def test_a_url_of_an_unknown_dialect_or_a_missing_driver_says_what_to_do(pytester, kind):
    if kind == "unknown dialect":
        url, expected = "nosuchdb+nodriver://u:hunter2@h/db", "SQLAlchemy has no such dialect+driver: check the URL"
    else:
        url, module = _missing_driver_url()
        expected = f"its driver module {module!r} is not installed"
    _write(pytester.path / "s.sqleval.yaml", f'database: "{url}"\ncases:\n  - {{id: a, gold: SELECT 1}}\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json")
    assert result.ret == 1
    case = json.loads((pytester.path / "r.json").read_text())["cases"][0]
    assert case["outcome"] == "error" and expected in case["error"]["message"]
    assert "hunter2" not in _output(result)


def test_a_metric_of_a_conftest_below_the_rootdir_is_gated_the_same_under_two_workers(pytester):
    sub = pytester.path / "evals"
    make_sqlite(sub / "shop.sqlite")
    _write(sub / "s.sqleval.yaml", """
        database: shop.sqlite
        pass_if: execution_match and short
        thresholds: {short: 0.5}
        cases:
          - {id: a, gold: SELECT 1, predicted: SELECT 1}
          - {id: b, gold: SELECT 2, predicted: SELECT 2 AS a_much_longer_alias_than_thirty_chars}
    """)
    _write(sub / "conftest.py", """
        def pytest_sqleval_register_metrics(registry):
            registry.register("short", kind="rate", population="scored")

        def pytest_sqleval_score_case(record, prediction):
            record["short"] = len(prediction or "") < 30
    """)
    reports = []
    for name, extra in (("serial", ()), ("two", ("-p", "xdist", "-n", "2"))):
        result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", f"{name}.json", *extra)
        output = _output(result)
        assert "INTERNALERROR" not in output
        assert result.ret == 0 and "PASS short 0.50 >= 0.50" in output
        reports.append(_report(pytester.path / f"{name}.json"))
    assert reports[0] == reports[1]
    assert reports[0]["suites"][0]["metrics"]["short"] == 0.5


@pytest.mark.parametrize("kind", ["duckdb", "text", "corrupt", "empty"])
def test_a_file_that_is_no_sqlite_database_is_an_error_of_each_case_with_a_clear_message(pytester, kind):
    target = pytester.path / "data" / "shop.db"
    target.parent.mkdir()
    if kind == "duckdb":
        duckdb = require_module("duckdb")
        connection = duckdb.connect(str(target))
        connection.execute("CREATE TABLE shops (id INTEGER)")
        connection.close()
        expected = f"it is a DuckDB database: name it with a .duckdb suffix or write `database: duckdb:///{target}`"
    elif kind == "text":
        target.write_text("id,name\n1,Avionics\n")
        expected = "file is not a database"
    elif kind == "corrupt":
        target.write_bytes(b"SQLite format 3\x00" + b"\x13" * 500)
        expected = "cannot open SQLite database"
    else:
        target.write_bytes(b"")  # SQLite reads an empty file as an empty database: the gold fails
        expected = "no such table: shops"
    _write(pytester.path / "s.sqleval.yaml", """
        database: data/shop.db
        cases:
          - {id: a, gold: SELECT count(*) FROM shops, predicted: SELECT 1}
          - {id: b, gold: SELECT 1, predicted: SELECT 1}
    """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json")
    assert result.ret == 1 and "INTERNALERROR" not in _output(result)
    cases = json.loads((pytester.path / "r.json").read_text())["cases"]
    assert cases[0]["outcome"] == "error" and expected in cases[0]["error"]["message"]
    assert "s.sqleval.yaml:3: case a:" in _output(result)


def test_a_case_id_with_the_node_id_separator_is_refused(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: "shop::count", gold: SELECT 1}
    """)
    message = _load_error(suite)
    assert "t.sqleval.yaml:3: case id 'shop::count' contains '::'" in message
    assert "'::' separates a suite from a case" in message


def test_several_ini_thresholds_on_one_line_say_one_per_line(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n")
    pytester.makeini("[pytest]\nsqleval_thresholds = execution_accuracy=0.6, soft_f1=0.8\n")
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini option sqleval_thresholds:" in _output(result) and "write one METRIC=VALUE per line" in _output(result)


def test_a_schema_only_case_under_an_execution_pass_if_says_why_it_missed(pytester):
    (pytester.path / "tables.json").write_text(json.dumps([{
        "db_id": "shop", "table_names_original": ["shops"], "table_names": ["shops"],
        "column_names_original": [[-1, "*"], [0, "id"], [0, "name"]], "column_names": [[-1, "*"], [0, "id"], [0, "name"]],
        "column_types": ["text", "number", "text"], "primary_keys": [1], "foreign_keys": []}]))
    _write(pytester.path / "s.sqleval.yaml", """
        schema: {tables: tables.json, db_id: shop}
        cases:
          - {id: same, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
    """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-markdown", "m.md")
    assert result.parseoutcomes() == {"missed": 1}
    assert "same: pass_if does not hold: the prediction was not run (the case has no database" in result.stdout.str()
    assert "use a pass_if of exact_match" in (pytester.path / "m.md").read_text()
    (pytester.path / "s.sqleval.yaml").write_text("pass_if: exact_match\n" + (pytester.path / "s.sqleval.yaml").read_text())
    assert pytester.runpytest("--sqleval", "-p", "no:cacheprovider").parseoutcomes() == {"passed": 1}


def test_a_predictions_file_with_a_byte_order_mark_and_crlf_lines_is_read(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT count(*) FROM shops}
          - {id: b, gold: SELECT 1}
    """)
    (pytester.path / "preds.jsonl").write_bytes(
        b'\xef\xbb\xbf{"id": "a", "sql": "SELECT count(*) FROM shops"}\r\n{"id": "b", "sql": "SELECT 2"}\r\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions", "preds.jsonl")
    assert result.parseoutcomes() == {"passed": 1, "missed": 1}


def test_a_threshold_on_the_command_line_overrides_the_same_one_in_addopts(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT 1, predicted: SELECT 1}
          - {id: b, gold: SELECT 2, predicted: SELECT 3}
    """)
    pytester.makeini("[pytest]\naddopts = --sqleval-threshold execution_accuracy=0.9\n")
    strict = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert strict.ret == 1 and "FAIL execution_accuracy 0.50 < 0.90" in strict.stdout.str()
    relaxed = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-threshold", "execution_accuracy=0.4",
                                 "--sqleval-json", "r.json")
    assert relaxed.ret == 0 and "PASS execution_accuracy 0.50 >= 0.40" in relaxed.stdout.str()
    gates = json.loads((pytester.path / "r.json").read_text())["suites"][0]["thresholds"]
    assert gates == [{"metric": "execution_accuracy", "min": 0.4, "value": 0.5, "passed": True, "source": "cli"}]


@pytest.mark.parametrize(
    "case, expected",
    [
        ("- {id: [a], gold: SELECT 1}", "fix: write e.g. `id: shop-count`"),
        ("- {id: a, gold: SELECT 1, difficulty: [3]}", "fix: write e.g. `difficulty: hard`"),
        ("- {id: a, gold: SELECT 1, difficulty: yes}", "fix: write e.g. `difficulty: hard`"),
        ("- {id: a, expected: {rows: [[1]], ordered: maybe}}", "fix: write `ordered: true`"),
        ("- {id: a, gold: SELECT 1, schema: {tables: t.json}}", "fix: write `schema: {tables: tables.json, db_id:"),
        ("- {id: a, gold: SELECT 1, schema: {tables: none.json, db_id: x}}", "fix: give the path of a Spider-style"),
    ],
)
def test_every_bad_case_value_names_its_fix(tmp_path, case, expected):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", "database: shop.sqlite\ncases:\n  " + case + "\n")
    message = _load_error(suite)
    assert message.startswith(f"{suite}:3: ") and expected in message


@pytest.mark.parametrize("line, expected", [('{"id": ["a"], "sql": "SELECT 1"}', '"id" must be a string'),
                                            ('{"id": "a", "sql": 5}', '"sql" must be a string or null')])
def test_a_bad_prediction_line_names_file_line_and_fix(pytester, line, expected):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n")
    (pytester.path / "preds.jsonl").write_text('{"id": "a", "sql": "SELECT 1"}\n' + line + "\n")
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions", "preds.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"preds.jsonl:2: {expected}" in _output(result) and "fix: " in _output(result)


def test_a_yaml_merge_key_shares_case_settings_and_the_case_own_keys_override(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - &base
            id: a
            gold: SELECT count(*) FROM shops
            predicted: SELECT count(*) FROM shops
            tags: [shared]
          - <<: *base
            id: b
            predicted: SELECT 3
    """)
    cases = load_suite(suite).cases
    assert [(c.id, c.predicted, c.tags) for c in cases] == [
        ("a", "SELECT count(*) FROM shops", ("shared",)), ("b", "SELECT 3", ("shared",))]
    # two keys of the case itself are still a duplicate
    _write(suite, suite.read_text().replace("predicted: SELECT 3", "predicted: SELECT 3\n    predicted: SELECT 4"))
    assert "t.sqleval.yaml:11: duplicate key 'predicted' (first on line 10)" in _load_error(suite)
