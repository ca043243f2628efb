"""Third QA look at the core plugin (issues 2 and 8): its options and ini values in every config file, the gate
and its exit status, the record seen from a user's conftest.py, with inputs nobody tuned for."""

from __future__ import annotations

import json
import math
import sqlite3
import textwrap

import pytest

from pytest_sqleval.thresholds import make_threshold


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester folder holding ``shop.sqlite`` (three shops, ids 1-3)."""
    con = sqlite3.connect(pytester.path / "shop.sqlite")
    con.executescript("""
        CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        INSERT INTO shops VALUES (1, 'Avionics'), (2, 'Engines'), (3, 'Cabin');
        CREATE TABLE empty (x INTEGER);
    """)
    con.commit()
    con.close()
    return pytester


def write(pytester: pytest.Pytester, name: str, text: str) -> None:
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def run(pytester: pytest.Pytester, *args: str):
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    return runner("-p", "no:cacheprovider", *args)


def verdict_lines(result) -> list[str]:
    return [line.strip() for line in result.outlines if line.strip().startswith(("PASS ", "FAIL "))]


XDIST = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])

# Three distinct golds: the first matched by 2 of its 5 cases, the others by their one case. Per gold SQL
# (MRO 3.2) execution accuracy is (2/5 + 1 + 1) / 3 = 12/15 = 0.8 exactly; plain, 4/7.
GROUPED_08 = """
    database: shop.sqlite
    cases:
      - {id: a1, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
      - {id: a2, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
      - {id: a3, gold: SELECT name FROM shops, predicted: SELECT id FROM shops}
      - {id: a4, gold: SELECT name FROM shops, predicted: SELECT id FROM shops}
      - {id: a5, gold: SELECT name FROM shops, predicted: SELECT id FROM shops}
      - {id: b1, gold: SELECT id FROM shops, predicted: SELECT id FROM shops}
      - {id: c1, gold: SELECT count(*) FROM shops, predicted: SELECT count(*) FROM shops}
    """


# --------------------------------------------------------------------------- thresholds at the boundary
def test_a_grouped_mean_exactly_at_its_threshold_passes(shop):
    """(-n 2: test_serial_and_xdist_give_identical_reports_and_verdicts_at_the_boundaries.)"""
    write(shop, "g.sqleval.yaml", GROUPED_08)
    result = run(shop, "--sqleval", "--sqleval-threshold", "by_gold_sql.execution_accuracy=0.8")
    assert "PASS by_gold_sql.execution_accuracy 0.80 >= 0.80" in verdict_lines(result)
    assert result.ret == 0


@pytest.mark.parametrize("values, limit", [([0.7, 0.1], 0.4), ([0.0, 0.0, 0.6], 0.2), ([0.1, 0.2], 0.15)])
def test_a_mean_of_scores_equal_to_its_threshold_passes(values, limit):
    """The mean of two cases scoring 0.7 and 0.1 is 0.4: a minimum of 0.4 holds, whatever the last bit of the
    floating-point sum (fsum/2 gives 0.39999999999999997)."""
    mean = math.fsum(values) / len(values)  # as aggregate.mean computes it
    verdict = make_threshold("soft_f1", limit, "cli").check({"metrics": {"soft_f1": mean}})
    assert verdict.passed and verdict.line() == f"PASS soft_f1 {limit:.2f} >= {limit:.2f}"


@pytest.mark.parametrize("actual, limit, line", [
    (2 / 3, 0.6667, "FAIL execution_accuracy 0.66667 < 0.6667"),
    (0.5714285714, 0.57143, "FAIL execution_accuracy 0.571429 < 0.57143"),
    (0.57145, 0.57142, "PASS execution_accuracy 0.57145 >= 0.57142"),
    (0.6, 0.6, "PASS execution_accuracy 0.60 >= 0.60"),
])
def test_a_verdict_line_never_shows_a_value_on_the_wrong_side_of_its_limit(actual, limit, line):
    """`FAIL execution_accuracy 0.6667 < 0.6667` contradicts itself: the line shows the limit as written and the
    value with the decimals it takes to tell them apart."""
    verdict = make_threshold("execution_accuracy", limit, "cli").check({"metrics": {"execution_accuracy": actual}})
    assert verdict.line() == line


INTERACTIONS = """
    database: shop.sqlite
    cases:
      - id: i1
        difficulty: hard
        interaction:
          - {gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
          - {gold: SELECT id FROM shops, predicted: SELECT name FROM shops}
      - id: i2
        interaction:
          - {gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
    """


@pytest.mark.parametrize("path", ["by_difficulty.hard.question_match", "by_tag.t.interaction_match",
                                  "by_gold_sql.interaction_execution_accuracy", "by_gold_sql.vacuous"])
def test_a_breakdown_of_a_figure_no_breakdown_holds_is_refused_before_the_run(shop, path):
    """Interaction figures have no per-difficulty, per-tag or per-gold value, and `vacuous` (a count of its own
    kind) none per gold SQL: such a threshold could only ever fail as "not computed"."""
    write(shop, "i.sqleval.yaml", INTERACTIONS)
    result = run(shop, "--sqleval", "--sqleval-threshold", f"{path}=0.1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    metric = path.rsplit(".", 1)[1]
    assert f"argument --sqleval-threshold: {path}: {metric} is" in result.stderr.str()
    assert f"gate {metric} itself" in result.stderr.str()


def test_the_same_breakdown_in_a_suite_names_the_file_the_line_and_a_fix(shop):
    write(shop, "i.sqleval.yaml", textwrap.dedent(INTERACTIONS) + "thresholds:\n  interaction_match: 0.5\n"
                                                                  "  by_difficulty.hard.question_match: 0.5\n")
    result = run(shop, "--sqleval")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*i.sqleval.yaml:13: by_difficulty.hard.question_match: question_match is a figure "
                                 "over interactions with no by_difficulty breakdown; gate question_match itself",
                                 "  fix: write `metric: number`*"])


def test_interaction_figures_are_gated_exactly_at_their_value(shop):
    write(shop, "i.sqleval.yaml", INTERACTIONS)
    result = run(shop, "--sqleval", "--sqleval-threshold", "interaction_match=0.5",
                 "--sqleval-threshold", "question_match=0.6667", "--sqleval-threshold", "overall:question_match=0.66")
    assert verdict_lines(result) == ["PASS interaction_match 0.50 >= 0.50",
                                     "FAIL question_match 0.66667 < 0.6667",
                                     "PASS overall:question_match 0.6667 >= 0.66"]
    assert result.ret == pytest.ExitCode.TESTS_FAILED


# --------------------------------------------------------------------------- empty paths
@pytest.mark.parametrize("option", ["--sqleval-predictions", "--sqleval-json"])
def test_an_empty_path_on_the_command_line_is_a_usage_error_not_the_option_left_out(shop, option):
    """`--sqleval-predictions="$PREDICTIONS"` with the variable unset must not score the suites' own `predicted:`
    (nor write the report to a file named " ")."""
    write(shop, "a.sqleval.yaml", GROUPED_08)
    for value in ("", " "):
        result = run(shop, "--sqleval", f"{option}={value}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert f"argument {option}: expected" in result.stderr.str()
        assert "empty path" in result.stderr.str()
    assert not (shop.path / " ").exists()


# --------------------------------------------------------------------------- -x / --maxfail
STOPS = """
    database: shop.sqlite
    cases:
      - {id: a-pass, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
      - {id: b-miss, gold: SELECT name FROM shops, predicted: SELECT id FROM shops}
      - {id: c-miss, gold: SELECT id FROM shops, predicted: SELECT name FROM shops}
      - {id: d-pass, gold: SELECT id FROM shops, predicted: SELECT id FROM shops}
    """


@pytest.mark.parametrize("stop, workers", [(["-x"], []), (["--maxfail=2"], []), (["-x"], ["-n", "2"])],
                         ids=["x-serial", "maxfail-serial", "x-xdist"])
def test_a_run_stopped_early_summarises_what_ran_and_says_so(shop, workers, stop):
    write(shop, "s.sqleval.yaml", STOPS)
    report = shop.path / "r.json"
    result = run(shop, "--sqleval", "--sqleval-strict", *stop, *workers, f"--sqleval-json={report}")
    assert result.ret == (pytest.ExitCode.INTERRUPTED if workers else pytest.ExitCode.TESTS_FAILED)
    data = json.loads(report.read_text(encoding="utf-8"))
    ran = len(data["cases"])
    assert data["suites"][0]["cases"] == ran
    if not workers:  # serial: in file order
        assert ran == (2 if stop == ["-x"] else 3)
    result.stdout.fnmatch_lines([
        f"  {ran} cases: *failed*",
        f"sqleval: the run stopped early (-x/--maxfail): the summary, the gates and the reports cover only the {ran} "
        "cases that ran",
    ])


def test_a_complete_run_does_not_say_it_stopped_early(shop):
    write(shop, "s.sqleval.yaml", STOPS)
    result = run(shop, "--sqleval", "-x")  # misses are no failures: -x never stops
    assert result.ret == pytest.ExitCode.OK
    assert not any("stopped early" in line for line in result.outlines)
    result.stdout.fnmatch_lines(["  4 cases: 2 passed, 2 missed*"])


# --------------------------------------------------------------------------- every metric, at, above and below
# c1 matches; c2 returns 2 of the 3 gold rows (soft F1: P = 1, R = 2/3, F1 = 0.8; BIRD's the same); c3 does not
# execute (syntax); c4 is a vacuous match. valid_syntax 3/4, error_count 1, EX 2/4, soft_f1 (1 + 0.8 + 0 + 1)/4 =
# 0.7, bird_soft_f1 0.7, exact_match 2/4, pass_rate 2/4, vacuous 1. Per gold SQL (c1-c3 share one gold):
# EX (1/3 + 1)/2 = 2/3, soft_f1 ((1 + 0.8 + 0)/3 + 1)/2 = 0.8, error_count 1/3 + 0.
METRICS_SUITE = """
    database: shop.sqlite
    cases:
      - {id: c1, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
      - {id: c2, gold: SELECT name FROM shops, predicted: SELECT name FROM shops WHERE id < 3}
      - {id: c3, gold: SELECT name FROM shops, predicted: SELECT nope FROM shops}
      - {id: c4, gold: SELECT x FROM empty, predicted: SELECT x FROM empty}
    """
METRIC_VALUES = {"valid_syntax": 0.75, "execution_accuracy": 0.5, "soft_f1": 0.7, "bird_soft_f1": 0.7,
                 "exact_match": 0.5, "pass_rate": 0.5, "by_gold_sql.soft_f1": 0.8}
COUNT_VALUES = {"error_count": 1, "vacuous": 1}


@pytest.mark.parametrize("where", ["at", "above", "below"])
def test_every_metric_is_gated_at_above_and_below_its_value(shop, where):
    write(shop, "m.sqleval.yaml", METRICS_SUITE)
    step = {"at": 0.0, "above": 0.0001, "below": -0.0001}[where]
    args = [f"{m}={v + step:g}" for m, v in METRIC_VALUES.items()]
    args += [f"{m}={v - (1 if where == 'above' else 0)}" for m, v in COUNT_VALUES.items()]
    result = run(shop, "--sqleval", *[a for arg in args for a in ("--sqleval-threshold", arg)])
    lines = verdict_lines(result)
    for metric, value in METRIC_VALUES.items():
        shown = f"{value:.2f}"
        expected = {"at": f"PASS {metric} {shown} >= {shown}",
                    "above": f"FAIL {metric} {shown} < {value + 0.0001:g}",
                    "below": f"PASS {metric} {shown} >= {value - 0.0001:g}"}[where]
        assert expected in lines, (expected, lines)
    for metric, value in COUNT_VALUES.items():
        expected = f"FAIL {metric} 1 > 0" if where == "above" else f"PASS {metric} 1 <= 1"
        assert expected in lines, (expected, lines)
    assert len(lines) == len(METRIC_VALUES) + len(COUNT_VALUES)
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if where == "above" else pytest.ExitCode.OK)


# --------------------------------------------------------------------------- ini files, and the command line first
INI_FILES = {
    "pytest.ini": "[pytest]\n{body}",
    "tox.ini": "[pytest]\n{body}",
    "setup.cfg": "[tool:pytest]\n{body}",
    "pyproject.toml": "[tool.pytest.ini_options]\n{toml}",
    "pytest.toml": "[pytest]\n{toml}",
    "pyproject.toml:native": "[tool.pytest]\n{toml}",  # pytest 9's native table
}
INI_BODY = ("sqleval = true\nsqleval_timeout = 5\nsqleval_max_rows = 7\nsqleval_json = ini.json\n"
            "sqleval_thresholds =\n    execution_accuracy=0.9\n    error_count=0\n")
TOML_BODY = ('sqleval = "true"\nsqleval_timeout = "5"\nsqleval_max_rows = "7"\nsqleval_json = "ini.json"\n'
             'sqleval_thresholds = ["execution_accuracy=0.9", "error_count=0"]\n')


@pytest.mark.parametrize("name", list(INI_FILES))
def test_every_config_file_turns_the_plugin_on_and_sets_its_options(shop, name):
    body = INI_FILES[name].format(body=INI_BODY, toml=TOML_BODY)
    if name in ("pytest.toml", "pyproject.toml:native"):  # pytest 9's native TOML: booleans and numbers as such
        body = body.replace('sqleval = "true"', "sqleval = true").replace('"5"', "5").replace('"7"', "7")
    (shop.path / name.partition(":")[0]).write_text(body, encoding="utf-8")
    write(shop, "m.sqleval.yaml", METRICS_SUITE)
    result = run(shop)  # no --sqleval: the config file turns it on
    result.stdout.fnmatch_lines(["sqleval: timeout 5 s (suites may override), max rows 7, *"])
    assert verdict_lines(result) == ["FAIL error_count 1 > 0", "FAIL execution_accuracy 0.50 < 0.90"]
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    data = json.loads((shop.path / "ini.json").read_text(encoding="utf-8"))
    assert (data["run"]["options"]["timeout"], data["run"]["options"]["max_rows"]) == (5, 7)
    assert [t["source"] for t in data["suites"][0]["thresholds"]] == ["ini", "ini"]


def test_the_command_line_beats_every_ini_value(shop):
    (shop.path / "tox.ini").write_text(
        "[pytest]\nsqleval = true\nsqleval_timeout = 5\nsqleval_max_rows = 7\nsqleval_max_memory = 64MiB\n"
        "sqleval_json = ini.json\nsqleval_predictions = ini.jsonl\nsqleval_thresholds = soft_f1=0.9\n", encoding="utf-8")
    write(shop, "m.sqleval.yaml", METRICS_SUITE)
    wrong = "".join(json.dumps({"id": f"c{i}", "sql": "SELECT 1"}) + "\n" for i in range(1, 5))
    right = "".join(json.dumps({"id": f"c{i}", "sql": sql}) + "\n" for i, sql in
                    enumerate(["SELECT name FROM shops"] * 3 + ["SELECT x FROM empty"], start=1))
    (shop.path / "ini.jsonl").write_text(wrong, encoding="utf-8")
    (shop.path / "cli.jsonl").write_text(right, encoding="utf-8")
    result = run(shop, "--sqleval-timeout", "9", "--sqleval-max-rows", "11", "--sqleval-max-memory", "128MiB",
                 "--sqleval-json", "cli.json", "--sqleval-predictions", "cli.jsonl",
                 "--sqleval-threshold", "soft_f1=0.1")
    result.stdout.fnmatch_lines(["sqleval: timeout 9 s, max rows 11, predictions cli.jsonl, *"])
    assert verdict_lines(result) == ["PASS soft_f1 1.00 >= 0.10"]
    assert result.ret == pytest.ExitCode.OK
    assert not (shop.path / "ini.json").exists()
    options = json.loads((shop.path / "cli.json").read_text(encoding="utf-8"))["run"]["options"]
    assert (options["timeout"], options["max_rows"], options["max_memory"]) == (9, 11, 128 * 2**20)
    assert options["predictions"].endswith("cli.jsonl")


@pytest.mark.parametrize("name, key, value, message", [
    ("pytest.ini", "sqleval_timeout", "0",
     "ini option sqleval_timeout: the timeout must be a number of seconds greater than 0"),
    ("setup.cfg", "sqleval_max_rows", "lots", "ini option sqleval_max_rows: the row cap is a whole number, not 'lots'"),
    ("pyproject.toml", "sqleval_max_memory", "2XB",
     "ini option sqleval_max_memory: the memory cap is a size such as 2GiB"),
    ("pytest.toml", "sqleval_thresholds", "soft_f1=2", "ini option sqleval_thresholds: soft_f1 is a rate between 0 and 1"),
    ("pyproject.toml", "sqleval_strict", "maybe", "ini option sqleval_strict must be true or false"),
    ("tox.ini", "sqleval_connect_timeout", "nan",
     "ini option sqleval_connect_timeout: the connect timeout must be a number of seconds"),
])
def test_a_bad_ini_value_is_a_usage_error_naming_it_in_every_config_file(shop, name, key, value, message):
    write(shop, "m.sqleval.yaml", METRICS_SUITE)
    if name.endswith(".toml"):
        text = f'{"[pytest]" if name == "pytest.toml" else "[tool.pytest.ini_options]"}\n{key} = "{value}"\n'
        if key == "sqleval_thresholds":
            text = text.replace(f'"{value}"', f'["{value}"]')
    else:
        text = f"{'[tool:pytest]' if name == 'setup.cfg' else '[pytest]'}\n{key} = {value}\n"
    (shop.path / name).write_text(text, encoding="utf-8")
    result = run(shop, "--sqleval")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


# --------------------------------------------------------------------------- the record from a user's conftest.py
RECORD_CONFTEST = """
    import json, os
    import pytest

    SEEN = {"fixture": {}, "result": {}, "report": {}}

    @pytest.fixture(autouse=True)
    def peek(request):
        if getattr(request.node, "case", None) is None:
            yield
            return
        case = request.getfixturevalue("sqleval_case")
        gold = request.getfixturevalue("sqleval_gold")
        engine = request.getfixturevalue("sqleval_engine")
        rows = [list(r) for r in gold.gold[0].result.rows]
        SEEN["fixture"][case.id] = [case.gold, sorted(rows), engine.dialect.name]
        yield

    def pytest_sqleval_case_result(record, item):
        SEEN["result"][record["id"]] = [record["outcome"], record["valid"], record["soft_f1"], item.case.id]

    def pytest_runtest_logreport(report):
        record = getattr(report, "sqleval_record", None)
        if report.when == "call" and record is not None:
            SEEN["report"][record["id"]] = [record["outcome"], record["execution_match"], record["error"]]

    def pytest_sessionfinish(session):
        name = getattr(session.config, "workerinput", {}).get("workerid", "main")
        with open(os.path.join(str(session.config.rootpath), f"seen-{name}.json"), "w") as f:
            json.dump(SEEN, f)
    """


@XDIST
def test_the_record_and_the_fixtures_as_a_users_conftest_sees_them(shop, workers):
    write(shop, "m.sqleval.yaml", METRICS_SUITE)
    write(shop, "conftest.py", RECORD_CONFTEST)
    result = run(shop, "--sqleval", *workers)
    assert result.ret == pytest.ExitCode.OK
    seen: dict = {"fixture": {}, "result": {}, "report": {}}
    for path in shop.path.glob("seen-*.json"):
        for key, values in json.loads(path.read_text(encoding="utf-8")).items():
            seen[key].update(values)
    names = [["Avionics"], ["Cabin"], ["Engines"]]
    assert seen["fixture"] == {"c1": ["SELECT name FROM shops", names, "sqlite"],
                               "c2": ["SELECT name FROM shops", names, "sqlite"],
                               "c3": ["SELECT name FROM shops", names, "sqlite"],
                               "c4": ["SELECT x FROM empty", [], "sqlite"]}
    assert seen["result"] == {"c1": ["passed", True, 1.0, "c1"], "c2": ["missed", True, 0.8, "c2"],
                              "c3": ["missed", False, 0.0, "c3"], "c4": ["passed", True, 1.0, "c4"]}
    syntax = seen["report"]["c3"][2]
    assert syntax["kind"] == "syntax" and "nope" in syntax["message"]
    assert seen["report"] == {"c1": ["passed", True, None], "c2": ["missed", False, None],
                              "c3": ["missed", False, syntax], "c4": ["passed", True, None]}


# --------------------------------------------------------------------------- serial = -n 2
def test_serial_and_xdist_give_identical_reports_and_verdicts_at_the_boundaries(shop):
    write(shop, "m.sqleval.yaml",
          textwrap.dedent(METRICS_SUITE) + "thresholds: {soft_f1: 0.7, by_gold_sql.soft_f1: 0.8, vacuous: 1}\n")
    write(shop, "g.sqleval.yaml", textwrap.dedent(GROUPED_08) + "thresholds: {by_gold_sql.execution_accuracy: 0.8}\n")
    write(shop, "i.sqleval.yaml", textwrap.dedent(INTERACTIONS) + "thresholds: {interaction_match: 0.5}\n")
    reports, verdicts = [], []
    for workers in ([], ["-n", "2"]):
        out = shop.path / f"r{len(workers)}.json"
        result = run(shop, "--sqleval", f"--sqleval-json={out}", "--sqleval-threshold", "overall:execution_accuracy=0.5",
                     *workers)
        assert result.ret == pytest.ExitCode.OK  # every gate holds, exactly at its limit
        data = json.loads(out.read_text(encoding="utf-8"))
        reports.append({key: data[key] for key in ("suites", "overall", "gates", "cases")})
        verdicts.append(sorted(verdict_lines(result)))
    assert reports[0] == reports[1]
    assert verdicts[0] == verdicts[1]
    gates = {g["name"]: (g["passed"], g["value"]) for g in reports[0]["gates"]}
    assert gates["m::soft_f1"][0] and gates["m::by_gold_sql.soft_f1"][0] and gates["m::vacuous"][0]
    assert gates["g::by_gold_sql.execution_accuracy"][0] and gates["i::interaction_match"][0]
    # overall: every scored case once: m 2/4, g 4/7, i 2/3 of its turns -> 8/14 = 0.5714 >= 0.5
    assert gates["overall::execution_accuracy"] == (True, pytest.approx(8 / 14))


# --------------------------------------------------------------------------- --lf with a predictions file
@XDIST
def test_lf_reruns_the_misses_of_a_predictions_file_that_covers_files_it_skips(shop, workers):
    """--lf does not collect a suite file without a failure: its cases' lines in the predictions file are not
    "ids that match no case" (they did, in the run --lf repeats)."""
    write(shop, "a.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a1, gold: SELECT name FROM shops}\n")
    write(shop, "b.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: b1, gold: SELECT name FROM shops}\n"
                                  "  - {id: b2, gold: SELECT id FROM shops}\n")
    (shop.path / "p.jsonl").write_text('{"id": "a1", "sql": "SELECT name FROM shops"}\n'
                                       '{"id": "b1", "sql": "SELECT name FROM shops"}\n'
                                       '{"id": "b2", "sql": "SELECT name FROM shops"}\n', encoding="utf-8")
    runner = shop.runpytest_subprocess if workers else shop.runpytest
    first = runner("--sqleval", "--sqleval-predictions", "p.jsonl", *workers)
    assert first.parseoutcomes() == {"passed": 2, "missed": 1}
    again = runner("--sqleval", "--sqleval-predictions", "p.jsonl", "--lf", *workers)
    assert again.ret == pytest.ExitCode.OK
    assert again.parseoutcomes() == {"missed": 1}
    again.stdout.fnmatch_lines(["  1 case: 1 missed *"])


def test_a_wrong_id_in_the_predictions_file_is_still_an_error_under_lf(shop):
    write(shop, "b.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: b1, gold: SELECT name FROM shops}\n")
    (shop.path / "p.jsonl").write_text('{"id": "b1", "sql": "SELECT id FROM shops"}\n'
                                       '{"id": "zz", "sql": "SELECT 1"}\n', encoding="utf-8")
    shop.runpytest("--sqleval", "--sqleval-predictions", "p.jsonl")
    again = shop.runpytest("--sqleval", "--sqleval-predictions", "p.jsonl", "--lf")
    assert again.ret == pytest.ExitCode.INTERRUPTED
    again.stdout.fnmatch_lines(["p.jsonl: 1 prediction id(s) match no collected case: zz (line 2)"])


# --------------------------------------------------------------------------- difficulty levels in threshold paths
def test_a_difficulty_level_is_gated_however_its_case_spells_it(shop):
    """`difficulty: HARD` is counted under the classifier's `hard`: a threshold written `by_difficulty.HARD...`
    (as the cases spell it) gates that bucket instead of failing as "not computed"; other labels keep their case."""
    write(shop, "d.sqleval.yaml", """
        database: shop.sqlite
        thresholds:
          by_difficulty.HARD.execution_accuracy: 0.5
          by_difficulty.Extra.soft_f1: 1
          by_difficulty.Tricky.execution_accuracy: 1
        cases:
          - {id: c1, gold: SELECT name FROM shops, predicted: SELECT name FROM shops, difficulty: HARD}
          - {id: c2, gold: SELECT name FROM shops, predicted: SELECT id FROM shops, difficulty: Hard}
          - {id: c3, gold: SELECT name FROM shops, predicted: SELECT name FROM shops, difficulty: Extra}
          - {id: c4, gold: SELECT name FROM shops, predicted: SELECT name FROM shops, difficulty: Tricky}
        """)
    result = run(shop, "--sqleval", "--sqleval-threshold", "by_difficulty.hard.execution_accuracy=0.4")
    assert verdict_lines(result) == ["PASS by_difficulty.Tricky.execution_accuracy 1.00 >= 1.00",
                                     "PASS by_difficulty.extra.soft_f1 1.00 >= 1.00",
                                     "PASS by_difficulty.hard.execution_accuracy 0.50 >= 0.40"]  # the command line's
    assert result.ret == pytest.ExitCode.OK


# --------------------------------------------------------------------------- what is collected, --co
PLAIN = "database: ../shop.sqlite\ncases:\n  - {id: q1, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}\n"


def test_a_yaml_file_is_a_suite_when_named_and_only_a_sqleval_yaml_when_a_folder_is_scanned(shop):
    write(shop, "evals/plain.yaml", "suite: plain\n" + PLAIN)
    write(shop, "evals/UPPER.YML", "suite: upper\n" + PLAIN)
    write(shop, "evals/deep/er/x.sqleval.yml", PLAIN.replace("../", "../../../"))
    write(shop, "evals/compose.yaml", "services: {db: {image: postgres}}\n")  # not a suite: never read
    folder = run(shop, "--sqleval", "evals", "--co", "-q")
    assert folder.ret == pytest.ExitCode.OK
    assert [line for line in folder.outlines if "::" in line] == ["evals/deep/er/x.sqleval.yml::q1"]
    named = run(shop, "--sqleval", "evals/plain.yaml", "evals/UPPER.YML", "-q")
    assert named.ret == pytest.ExitCode.OK
    assert named.parseoutcomes() == {"passed": 2}
    named.stdout.fnmatch_lines(["suite upper (evals/UPPER.YML)", "suite plain (evals/plain.yaml)"])  # by path


def test_a_path_that_does_not_exist_is_a_usage_error(shop):
    result = run(shop, "--sqleval", "nowhere.sqleval.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "file or directory not found: nowhere.sqleval.yaml" in result.stderr.str()


def test_collect_only_lists_the_cases_and_neither_gates_nor_reports(shop):
    write(shop, "m.sqleval.yaml", textwrap.dedent(METRICS_SUITE) + "thresholds: {execution_accuracy: 0.99}\n")
    result = run(shop, "--sqleval", "--co", "-q", "--sqleval-json=r.json", "--sqleval-threshold", "soft_f1=1")
    assert result.ret == pytest.ExitCode.OK
    assert [line for line in result.outlines if "::" in line] == [f"m.sqleval.yaml::c{i}" for i in range(1, 5)]
    assert verdict_lines(result) == [] and not (shop.path / "r.json").exists()


def test_p_no_sqleval_leaves_yaml_alone_and_refuses_its_options(shop):
    write(shop, "m.sqleval.yaml", METRICS_SUITE)
    for args, said in ((["-p", "no:sqleval"], "not found:"),  # off: the file is no test
                       ([], "fix: add --sqleval")):  # installed and not turned on: the usage error says to turn it on
        off = run(shop, *args, "m.sqleval.yaml")
        assert off.ret == pytest.ExitCode.USAGE_ERROR
        assert said in off.stderr.str()
        assert not any(line.startswith("sqleval:") for line in off.outlines)  # no header line either
    refused = run(shop, "-p", "no:sqleval", "--sqleval")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "unrecognized arguments: --sqleval" in refused.stderr.str()


# --------------------------------------------------------------------------- exit status
BROKEN_GOLD = "  - {id: z, gold: SELECT nope FROM shops, predicted: SELECT name FROM shops}\n"


@pytest.mark.parametrize("case", ["misses", "gate", "error", "strict", "python", "gate+python"])
def test_the_exit_status_of_every_combination(shop, case):
    suite = textwrap.dedent(METRICS_SUITE) + (BROKEN_GOLD if case == "error" else "")
    write(shop, "m.sqleval.yaml", suite)
    write(shop, "test_app.py", "def test_app():\n    assert %s\n" % ("False" if "python" in case else "True"))
    args = {"gate": ["--sqleval-threshold", "execution_accuracy=0.51"], "strict": ["--sqleval-strict"],
            "gate+python": ["--sqleval-threshold", "error_count=0"]}.get(case, [])
    result = run(shop, "--sqleval", *args)
    expected = pytest.ExitCode.OK if case == "misses" else pytest.ExitCode.TESTS_FAILED
    assert result.ret == expected
    final = result.outlines[-1]
    assert {"misses": "3 passed, 2 missed", "gate": "3 passed, 2 missed, 1 gate failed",
            "error": "3 passed, 1 error, 2 missed", "strict": "2 failed, 3 passed",
            "python": "1 failed, 2 passed, 2 missed",
            "gate+python": "1 failed, 2 passed, 2 missed, 1 gate failed"}[case] in final, final


def test_the_exit_status_is_the_same_under_xdist_for_a_gate_an_error_and_a_python_failure(shop):
    write(shop, "m.sqleval.yaml", textwrap.dedent(METRICS_SUITE) + BROKEN_GOLD)
    write(shop, "test_app.py", "def test_app():\n    assert False\n")
    result = run(shop, "--sqleval", "--sqleval-threshold", "execution_accuracy=0.51", "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "1 failed, 2 passed, 1 error, 2 missed, 1 gate failed" in result.outlines[-1]
    assert "FAIL execution_accuracy 0.50 < 0.51" in verdict_lines(result)


def test_test_suite_accuracy_is_gated_at_and_above_its_value(shop):
    """Two databases, the second with a fourth shop: c2's `WHERE id <= 3` matches on the first only, so EX (the
    first database) is 2/2 and test-suite accuracy 1/2."""
    con = sqlite3.connect(shop.path / "shop2.sqlite")
    con.executescript("CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
                      "INSERT INTO shops VALUES (1, 'Avionics'), (2, 'Engines'), (3, 'Cabin'), (4, 'Paint');")
    con.close()
    write(shop, "ts.sqleval.yaml", """
        databases: [shop.sqlite, shop2.sqlite]
        cases:
          - {id: c1, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
          - {id: c2, gold: SELECT name FROM shops, predicted: SELECT name FROM shops WHERE id <= 3}
        """)
    result = run(shop, "--sqleval", "--sqleval-threshold", "test_suite_accuracy=0.5",
                 "--sqleval-threshold", "execution_accuracy=1", "--sqleval-threshold", "by_gold_sql.test_suite_accuracy=0.51")
    assert verdict_lines(result) == ["FAIL by_gold_sql.test_suite_accuracy 0.50 < 0.51",
                                     "PASS execution_accuracy 1.00 >= 1.00",
                                     "PASS test_suite_accuracy 0.50 >= 0.50"]
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_json_path_inside_a_file_is_a_usage_error_before_anything_runs(shop):
    """`--sqleval-json results/r.json` where `results` is a file can never be written: said before the run (as a
    folder given as the path is), not after every case ran."""
    write(shop, "m.sqleval.yaml", METRICS_SUITE)
    (shop.path / "results").write_text("not a folder", encoding="utf-8")
    result = run(shop, "--sqleval", "--sqleval-json", "results/deep/r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--sqleval-json results/deep/r.json: results is a file, not a folder" in result.stderr.str()
    assert "collected" not in result.stdout.str()
