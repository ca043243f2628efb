"""Runs that pytest stops or selects early: -x, --maxfail, --sw, a suite file that fails to collect (serially and
under xdist), -k/--deselect/--lf selections, and -k against case ids and suite names made of -k's own words.

A stopped or incomplete run is summarised and reported for the cases that ran, says so in the terminal and in
``run.incomplete``, and fails the ``overall::incomplete`` gate: its figures can never pass a gate the whole run
would fail. A selection (-k, --deselect, --lf) is the user's choice: its gates judge the selected cases and it is
labelled with ``run.deselected``.
"""

from __future__ import annotations

import json
import sqlite3
import textwrap

import pytest

from pytest_sqleval.cli import main as sqleval_cli

# Run whole, execution accuracy is 1/4 = 0.25 < 0.5: the gate fails. Stopped at the first (strict) miss, the two
# cases that ran score 1/2 = 0.5 >= 0.5: the suite's threshold alone would pass.
STOPS = """
    suite: stops
    database: shop.sqlite
    thresholds: {execution_accuracy: 0.5}
    cases:
      - {id: a-pass, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
      - {id: b-miss, gold: SELECT name FROM shops, predicted: SELECT id FROM shops}
      - {id: c-miss, gold: SELECT id FROM shops, predicted: SELECT name FROM shops}
      - {id: d-miss, gold: SELECT id FROM shops, predicted: SELECT name FROM shops}
    """

GOOD = """
    suite: good
    database: shop.sqlite
    thresholds: {execution_accuracy: 0.9}
    cases:
      - {id: a-pass, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
      - {id: b-pass, gold: SELECT id FROM shops, predicted: SELECT id FROM shops}
    """

XDIST = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    con = sqlite3.connect(pytester.path / "shop.sqlite")
    con.executescript("CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
                      "INSERT INTO shops VALUES (1, 'Avionics'), (2, 'Engines'), (3, 'Cabin');")
    con.commit()
    con.close()
    return pytester


def write(pytester: pytest.Pytester, name: str, text: str) -> None:
    (pytester.path / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def run(pytester: pytest.Pytester, *args: str, cache: bool = False):
    """pytest as a user runs it (a subprocess under -n, as xdist needs); --sw and --lf need pytest's cache."""
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    return runner(*(() if cache else ("-p", "no:cacheprovider")), *args)


def report(pytester: pytest.Pytester, name: str = "r.json") -> dict:
    return json.loads((pytester.path / name).read_text(encoding="utf-8"))


def gates(data: dict) -> dict[str, bool]:
    return {g["name"]: g["passed"] for g in data["gates"]}


# --------------------------------------------------------------------------- --sw is stopped like -x
@XDIST
def test_sw_summarises_gates_and_reports_what_ran_as_x_does(shop, workers):
    write(shop, "s.sqleval.yaml", STOPS)
    result = run(shop, "--sqleval", "--sqleval-strict", "--sw", *workers, "--sqleval-json=r.json",
                 "--sqleval-markdown=r.md", cache=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # pytest's own status for a --sw stop, serial and xdist
    result.stdout.fnmatch_lines(["*Test failed, continuing from this test next run*"])
    data = report(shop)
    ran = len(data["cases"])
    assert data["suites"][0]["cases"] == ran
    if not workers:  # serial: in file order, stopped at b-miss
        assert [c["id"] for c in data["cases"]] == ["a-pass", "b-miss"]
    result.stdout.fnmatch_lines([
        "suite stops (s.sqleval.yaml)",
        f"  {ran} cases: *failed*",
        f"sqleval: the run stopped early (--sw): the summary, the gates and the reports cover only the {ran} cases "
        "that ran",
        "FAIL the run is incomplete: the run stopped early (--sw)*",
    ])
    assert data["run"]["incomplete"].startswith("the run stopped early (--sw)")
    assert gates(data)["overall::incomplete"] is False
    assert (shop.path / "r.md").exists()
    # pytest's status 2 stands: the failed gates' lines say so instead of claiming exit status 1
    result.stdout.fnmatch_lines([
        "sqleval deploy gate failed (* gate(s)): the run already ends with exit status 2 (interrupted), which it keeps",
    ])
    assert not any("exit status 1 comes from the gate" in line for line in result.outlines)


# --------------------------------------------------------------------------- a stopped run never passes the gate
@pytest.mark.parametrize("stop, workers", [(["-x"], []), (["--maxfail=2"], []), (["--sw"], []), (["-x"], ["-n", "2"])],
                         ids=["x-serial", "maxfail-serial", "sw-serial", "x-xdist"])
def test_a_stopped_run_is_labelled_incomplete_and_fails_its_gate_in_the_json_too(shop, stop, workers):
    write(shop, "s.sqleval.yaml", STOPS)
    whole = run(shop, "--sqleval", "--sqleval-strict", "--sqleval-json=whole.json")
    assert gates(report(shop, "whole.json")) == {"stops::execution_accuracy": False}
    assert report(shop, "whole.json")["run"]["incomplete"] is None and whole.ret == pytest.ExitCode.TESTS_FAILED

    result = run(shop, "--sqleval", "--sqleval-strict", *stop, *workers, "--sqleval-json=r.json",
                 "--junitxml=j.xml", cache=stop == ["--sw"])
    assert result.ret != pytest.ExitCode.OK
    data = report(shop)
    assert len(data["cases"]) < 4
    assert "only the" in data["run"]["incomplete"] and "cases that ran are in it" in data["run"]["incomplete"]
    assert gates(data)["overall::incomplete"] is False
    outcomes = result.parseoutcomes()
    assert outcomes.get("gate", 0) + outcomes.get("gates", 0) >= 1  # "... 1 gate failed in 0.4s"
    assert 'name="overall::incomplete"' in (shop.path / "j.xml").read_text(encoding="utf-8")
    # re-gating the saved report (`sqleval gate`) fails too, even with a threshold the cases that ran meet
    assert sqleval_cli(["gate", str(shop.path / "r.json"), "--threshold", "execution_accuracy=0"]) == 1


def test_a_serial_x_run_whose_ran_cases_meet_the_threshold_still_fails_the_gate(shop):
    write(shop, "s.sqleval.yaml", STOPS)
    result = run(shop, "--sqleval", "--sqleval-strict", "-x", "--sqleval-json=r.json")
    data = report(shop)
    assert gates(data) == {"stops::execution_accuracy": True, "overall::incomplete": False}  # 0.5 >= 0.5 on 2 cases
    result.stdout.fnmatch_lines(["  PASS execution_accuracy 0.50 >= 0.50",
                                 "FAIL the run is incomplete: the run stopped early (stopping after 1 failures): only "
                                 "the 2 cases that ran are in it; gate a whole run",
                                 "*= 1 failed, 1 passed, 1 gate failed in *"])


# A suite that passes, a plain pytest test that fails, a suite that would fail its threshold: -x stops at the plain
# test (no case of the first suite failed: misses are no failures), before the second suite runs.
FIRST = """
    suite: first
    database: shop.sqlite
    thresholds: {execution_accuracy: 0.5}
    cases:
      - {id: a-pass, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
      - {id: b-miss, gold: SELECT id FROM shops, predicted: SELECT name FROM shops}
    """
LAST = """
    suite: last
    database: shop.sqlite
    thresholds: {execution_accuracy: 0.5}
    cases:
      - {id: z-miss, gold: SELECT id FROM shops, predicted: SELECT name FROM shops}
    """


@pytest.fixture
def mixed(shop):
    write(shop, "a.sqleval.yaml", FIRST)
    write(shop, "test_m.py", "def test_plain_failure():\n    assert 1 == 2\n")
    write(shop, "z.sqleval.yaml", LAST)
    write(shop, "other.sqleval.yaml", GOOD)
    return shop


def test_a_run_stopped_by_a_plain_test_cannot_pass_sqleval_gate_on_what_ran(mixed, capsys):
    run(mixed, "--sqleval", "a.sqleval.yaml", "test_m.py", "z.sqleval.yaml", "--sqleval-json=whole.json")
    assert sqleval_cli(["gate", str(mixed.path / "whole.json")]) == 1  # suite last: 0.0 < 0.5

    result = run(mixed, "--sqleval", "-x", "a.sqleval.yaml", "test_m.py", "z.sqleval.yaml", "--sqleval-json=r.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    data = report(mixed)
    assert [c["id"] for c in data["cases"]] == ["a-pass", "b-miss"]  # z.sqleval.yaml never ran
    assert data["run"]["incomplete"] == ("the run stopped early (stopping after 1 failures): only the 2 cases that "
                                         "ran are in it")
    assert gates(data) == {"first::execution_accuracy": True, "overall::incomplete": False}
    assert sqleval_cli(["gate", str(mixed.path / "r.json")]) == 1
    assert "FAIL the run is incomplete: the run stopped early" in capsys.readouterr().out

    # merged with another run's report, the merged run is still incomplete and still fails
    run(mixed, "--sqleval", "other.sqleval.yaml", "--sqleval-json=other.json")
    out = mixed.path / "all.json"
    assert sqleval_cli(["merge", str(mixed.path / "r.json"), str(mixed.path / "other.json"), "-o", str(out)]) == 0
    merged = json.loads(out.read_text(encoding="utf-8"))
    assert merged["run"]["incomplete"].startswith(f"{mixed.path / 'r.json'}: the run stopped early")
    assert gates(merged)["overall::incomplete"] is False
    assert sqleval_cli(["gate", str(out)]) == 1


def test_a_stop_after_the_last_case_leaves_the_report_whole(mixed):
    result = run(mixed, "--sqleval", "-x", "a.sqleval.yaml", "test_m.py", "--sqleval-json=r.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the plain test failed
    data = report(mixed)
    assert len(data["cases"]) == 2 and data["run"]["incomplete"] is None
    assert gates(data) == {"first::execution_accuracy": True}


# --------------------------------------------------------------------------- a suite file that fails to collect
BROKEN = "database: shop.sqlite\ncases:\n  - {id: x, gold: [unclosed\n"


def test_a_suite_that_fails_to_collect_while_the_others_run_leaves_the_run_incomplete(shop):
    """Serially pytest stops before the loop (no summary, no report, exit 2); xdist (and
    --continue-on-collection-errors) run the other suites: exit 1, and their figures are labelled incomplete."""
    write(shop, "good.sqleval.yaml", GOOD)
    (shop.path / "bad.sqleval.yaml").write_text(BROKEN, encoding="utf-8")
    serial = run(shop, "--sqleval", "--sqleval-json=r.json")
    assert serial.ret == pytest.ExitCode.INTERRUPTED
    serial.stdout.fnmatch_lines(["*Interrupted: 1 error during collection*"])
    assert not (shop.path / "r.json").exists()
    assert not any(line.startswith("suite good") for line in serial.outlines)

    for args in (["-n", "2"], ["--continue-on-collection-errors"]):
        result = run(shop, "--sqleval", *args, "--sqleval-json=r.json")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(["*bad.sqleval.yaml:4: invalid YAML*"])
        data = report(shop)
        assert [c["id"] for c in data["cases"]] == ["a-pass", "b-pass"]  # the good suite ran and passed its threshold
        assert data["suites"][0]["passed"] is True
        assert data["run"]["incomplete"] == ("1 suite file could not be collected (bad.sqleval.yaml): its cases are "
                                             "not in it")
        assert gates(data) == {"good::execution_accuracy": True, "overall::incomplete": False}
        result.stdout.fnmatch_lines([
            "sqleval: 1 suite file(s) could not be collected (bad.sqleval.yaml): the summary, the gates and the "
            "reports cover only the suites that were",
            "FAIL the run is incomplete: 1 suite file could not be collected (bad.sqleval.yaml)*",
            "*2 passed, 1 error, 1 gate failed in *",
        ])


@XDIST
def test_a_whole_run_is_not_labelled(shop, workers):
    write(shop, "good.sqleval.yaml", GOOD)
    result = run(shop, "--sqleval", "-x", *workers, "--sqleval-json=r.json")
    assert result.ret == pytest.ExitCode.OK
    data = report(shop)
    assert (data["run"]["incomplete"], data["run"]["deselected"]) == (None, 0)
    assert gates(data) == {"good::execution_accuracy": True}
    assert not any("incomplete" in line or "not selected" in line for line in result.outlines)


# --------------------------------------------------------------------------- selections: judged, and labelled
@XDIST
@pytest.mark.parametrize("select", [["-k", "a-pass or b-miss"], ["--deselect", "s.sqleval.yaml::c-miss",
                                                                  "--deselect", "s.sqleval.yaml::d-miss"]],
                         ids=["k", "deselect"])
def test_a_selection_is_judged_on_the_selected_cases_and_says_how_many_were_left_out(shop, select, workers):
    write(shop, "s.sqleval.yaml", STOPS)
    result = run(shop, "--sqleval", *select, *workers, "--sqleval-json=r.json")
    assert result.ret == pytest.ExitCode.OK  # the user chose these two cases: 0.5 >= 0.5, no stop
    data = report(shop)
    assert sorted(c["id"] for c in data["cases"]) == ["a-pass", "b-miss"]
    assert (data["run"]["incomplete"], data["run"]["deselected"]) == (None, 2)
    assert gates(data) == {"stops::execution_accuracy": True}
    result.stdout.fnmatch_lines(["sqleval: 2 cases of the collected suites not selected (-k, -m, --deselect, --lf, "
                                 "--sw): the summary, the gates and the reports cover the selected cases only"])


def test_merged_shards_count_what_the_user_left_out_and_not_the_other_shards_cases(shop, tmp_path):
    """Each shard deselects the other shards' cases: its own count is no count for the merge. Merged, the count is
    the user's -k only (here d-miss), and two whole runs of disjoint suites merge to the sum of theirs."""
    write(shop, "s.sqleval.yaml", STOPS)
    write(shop, "good.sqleval.yaml", GOOD)
    for k in (1, 2):
        result = run(shop, "--sqleval", "--sqleval-shard", f"{k}/2", "-k", "not d-miss", f"--sqleval-json=s{k}.json")
        assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    shards = [report(shop, f"s{k}.json") for k in (1, 2)]
    assert all(s["run"]["deselected"] > 1 for s in shards)  # the other shard's cases and d-miss
    out = tmp_path / "merged.json"
    assert sqleval_cli(["merge", str(shop.path / "s1.json"), str(shop.path / "s2.json"), "-o", str(out)]) in (0, 1)
    merged = json.loads(out.read_text(encoding="utf-8"))
    assert len(merged["cases"]) == 5 and merged["run"]["deselected"] == 1

    run(shop, "--sqleval", "s.sqleval.yaml", "-k", "not d-miss and not c-miss", "--sqleval-json=w1.json")
    run(shop, "--sqleval", "good.sqleval.yaml", "--sqleval-json=w2.json")
    assert sqleval_cli(["merge", str(shop.path / "w1.json"), str(shop.path / "w2.json"), "-o", str(out)]) in (0, 1)
    merged = json.loads(out.read_text(encoding="utf-8"))
    assert len(merged["cases"]) == 4 and merged["run"]["deselected"] == 2


@XDIST
def test_lf_reruns_the_misses_and_labels_the_passed_ones_deselected(shop, workers):
    write(shop, "s.sqleval.yaml", STOPS)
    run(shop, "--sqleval", cache=True)
    result = run(shop, "--sqleval", "--lf", *workers, "--sqleval-json=r.json", cache=True)
    data = report(shop)
    assert sorted(c["id"] for c in data["cases"]) == ["b-miss", "c-miss", "d-miss"]
    assert data["run"]["deselected"] == 1 and data["run"]["incomplete"] is None
    result.stdout.fnmatch_lines(["sqleval: 1 case of the collected suites not selected *"])


# --------------------------------------------------------------------------- -k and its own words
KEYWORDS = """
    suite: and-or-not
    database: shop.sqlite
    cases:
      - {id: not_null_and_or, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
      - {id: "not", gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
      - {id: "or", gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
      - {id: v1.not-null, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
    """

OTHER = """
    suite: other
    database: shop.sqlite
    cases:
      - {id: q1, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
    """


def collected(result) -> list[str]:
    return [line for line in result.outlines if "::" in line]


@pytest.fixture
def keywords(shop):
    write(shop, "kw.sqleval.yaml", KEYWORDS)
    write(shop, "zz.sqleval.yaml", OTHER)
    return shop


def test_k_selects_ids_made_of_its_own_words_and_a_suite_by_its_name(keywords):
    """Ids that contain `and`/`or`/`not` are one -k name each; `suite: and-or-not` (in kw.sqleval.yaml) is a -k
    keyword of its cases, as the file's stem is. An id that *is* an operator is picked by its node id."""
    for expression, expected in [
        ("not_null_and_or", ["kw.sqleval.yaml::not_null_and_or"]),
        ("v1.not-null", ["kw.sqleval.yaml::v1.not-null"]),
        ("not_null_and_or or q1", ["kw.sqleval.yaml::not_null_and_or", "zz.sqleval.yaml::q1"]),
        ("other", ["zz.sqleval.yaml::q1"]),
        ("and-or-not and not not_null_and_or and not v1", ["kw.sqleval.yaml::not", "kw.sqleval.yaml::or"]),
    ]:
        assert collected(run(keywords, "--sqleval", "--co", "-q", "-k", expression)) == expected, expression
    bare = run(keywords, "--sqleval", "-k", "not")  # pytest's grammar: `not` is an operator, not a name
    assert bare.ret == pytest.ExitCode.USAGE_ERROR
    assert "Wrong expression passed to '-k'" in bare.stderr.str()
    result = run(keywords, "--sqleval", "kw.sqleval.yaml::not", "kw.sqleval.yaml::or", "--sqleval-json=r.json")
    assert result.ret == pytest.ExitCode.OK
    assert [c["id"] for c in report(keywords)["cases"]] == ["not", "or"]


@XDIST
def test_k_selects_a_suite_by_its_name(keywords, workers):
    result = run(keywords, "--sqleval", "-k", "and-or-not", *workers, "--sqleval-json=r.json")
    assert result.ret == pytest.ExitCode.OK
    data = report(keywords)
    assert {c["suite"] for c in data["cases"]} == {"and-or-not"} and len(data["cases"]) == 4
    assert data["run"]["deselected"] == 1
