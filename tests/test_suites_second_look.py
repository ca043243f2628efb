"""A second look at the suite format and its loader (issues 2 and 8), with inputs the first rounds did not try.

Each test is a promise of the README's "A suite" section: a bad input is an error naming the file, the line and
the fix (never a traceback, never a silent run of misses), and a good input loads and scores the same serial
and under two workers.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import make_sqlite
from pytest_sqleval.errors import SuiteError
from pytest_sqleval.loader import load_suite

ONE_CASE = "cases:\n  - {id: a, gold: SELECT 1, predicted: SELECT 1}\n"


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


# --------------------------------------------------------------------------- YAML features
def test_a_second_yaml_document_is_named_as_such_with_its_fix(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", "database: shop.sqlite\n" + ONE_CASE + "---\n" + ONE_CASE)
    message = _load_error(suite)
    assert message.startswith(f"{suite}:4: ")
    assert "one YAML document" in message and "`---`" in message
    # a single document that opens with `---` (or ends with `...`) is fine
    _write(suite, "---\ndatabase: shop.sqlite\n" + ONE_CASE + "...\n")
    assert [case.id for case in load_suite(suite).cases] == ["a"]


def test_a_suite_with_crlf_line_ends_and_a_byte_order_mark_reports_the_same_lines(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite")
    text = "database: shop.sqlite\ncases:\n  - id: a\n    gold: SELECT 1\n  - id: a\n    gold: SELECT 2\n"
    suite = tmp_path / "t.sqleval.yaml"
    suite.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    assert f"{suite}:5: duplicate case id 'a' (first on line 3)" in _load_error(suite)


# --------------------------------------------------------------------------- paths
@pytest.mark.parametrize(
    "value, expected",
    [("[a.jsonl]", "`predictions:` is the path of a JSON Lines file, not a list"),
     ("{file: a.jsonl}", "`predictions:` is the path of a JSON Lines file, not a mapping"),
     ('""', "`predictions:` is empty"),
     ("preds", "the predictions path is a directory, not a file")],
)
def test_a_suite_predictions_key_that_is_no_file_path_says_what_it_is(tmp_path, value, expected):
    make_sqlite(tmp_path / "shop.sqlite")
    (tmp_path / "preds").mkdir()
    suite = _write(tmp_path / "t.sqleval.yaml", f"database: shop.sqlite\npredictions: {value}\n" + ONE_CASE)
    message = _load_error(suite)
    assert message.startswith(f"{suite}:2: ") and expected in message and "fix: " in message


def test_paths_are_relative_to_the_suite_file_through_symlinks_tilde_and_env(tmp_path, monkeypatch):
    make_sqlite(tmp_path / "data" / "shop.sqlite")
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "link.sqlite").symlink_to(tmp_path / "data" / "shop.sqlite")
    (tmp_path / "suites" / "p.jsonl").write_text('{"id": "a", "sql": "SELECT 1"}\n')
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("QA_DATA", "../data")
    suite = _write(tmp_path / "suites" / "t.sqleval.yaml", """
        database: link.sqlite
        predictions: p.jsonl
        cases:
          - {id: a, gold: SELECT 1}
          - {id: b, gold: SELECT 1, database: ~/data/shop.sqlite}
          - {id: c, gold: SELECT 1, database: "${QA_DATA}/shop.sqlite"}
    """)
    loaded = load_suite(suite)
    assert loaded.predictions_file == tmp_path / "suites" / "p.jsonl"
    paths = [Path(case.databases[0].url.removeprefix("sqlite:///")) if "://" in case.databases[0].url
             else Path(case.databases[0].url) for case in loaded.cases]
    assert all(path.resolve() == (tmp_path / "data" / "shop.sqlite") for path in paths), paths


# --------------------------------------------------------------------------- wrong types
def test_a_non_text_prediction_in_the_suite_names_predicted_in_its_fix(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1, predicted: 42}\n")
    message = _load_error(suite)
    assert "`predicted:` of 'a' must be SQL text, not a number" in message
    assert "`predicted: |`" in message and "`gold: |`" not in message


# --------------------------------------------------------------------------- predictions files
@pytest.mark.parametrize("shape", ["array", "object"])
def test_a_pretty_printed_json_predictions_file_says_it_is_not_json_lines(pytester, shape):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n")
    prediction = {"id": "a", "sql": "SELECT 1"}
    text = json.dumps([prediction] if shape == "array" else prediction, indent=2)  # what json.dump(indent=2) writes
    (pytester.path / "preds.json").write_text(text + "\n")
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions", "preds.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = _output(result)
    assert "preds.json:1: " in output and "spread over several lines" in output and "JSON Lines" in output
    assert "Traceback" not in output


def test_predictions_with_blank_lines_extra_fields_and_a_number_id_are_read(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: "7", gold: SELECT 1}
          - {id: b, gold: SELECT 2}
    """)
    (pytester.path / "preds.jsonl").write_text(
        '\n{"id": 7, "sql": "SELECT 1", "model": "m", "tokens": 3}\n\n   \n{"sql": "SELECT 3", "id": "b"}\n\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions", "preds.jsonl",
                                "--sqleval-json", "r.json")
    assert result.ret == 0  # a miss is not a failure
    cases = {c["id"]: c for c in json.loads((pytester.path / "r.json").read_text())["cases"]}
    assert cases["7"]["outcome"] == "passed" and cases["b"]["outcome"] == "missed"
    assert cases["b"]["predicted"] == "SELECT 3"


def test_duplicate_prediction_ids_name_both_lines(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n")
    (pytester.path / "preds.jsonl").write_text('{"id": "a", "sql": "SELECT 1"}\n\n{"id": "a", "sql": "SELECT 2"}\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions", "preds.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "preds.jsonl:3: duplicate prediction for case 'a' (first on line 1)" in _output(result)


# --------------------------------------------------------------------------- serial and -n 2
def test_a_suite_of_anchors_crlf_and_an_interaction_scores_the_same_serial_and_under_two_workers(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    text = textwrap.dedent("""
        suite: second-look
        database: shop.sqlite
        pass_if: "soft_f1 >= 0.5"
        thresholds: {execution_accuracy: 0.0}
        cases:
          - &base {id: a, gold: SELECT 1, predicted: SELECT 1, tags: [shared]}
          - {<<: *base, id: b, predicted: SELECT 2}
          - {<<: *base, id: c, predicted: "SELECT 1, 2"}
          - id: talk
            interaction:
              - {question: "yes", gold: SELECT 1, predicted: SELECT 1}
              - {gold: SELECT 2, predicted: SELEC 2}
    """).lstrip()
    (pytester.path / "s.sqleval.yaml").write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    reports = []
    for extra in ([], ["-n", "2"]):
        result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "--sqleval-json", "r.json", *extra)
        report = json.loads((pytester.path / "r.json").read_text())
        report.pop("run")
        reports.append(report)
        outcomes = {c["id"]: c["outcome"] for c in report["cases"]}
        assert outcomes == {"a": "passed", "b": "missed", "c": "passed", "talk/1": "passed", "talk/2": "missed"}, outcomes
        assert result.ret == 0
    assert reports[0] == reports[1]


# --------------------------------------------------------------------------- labels
def test_a_difficulty_in_capitals_is_the_classifier_level_and_a_repeated_tag_is_one_tag(tmp_path):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT 1, difficulty: Hard, tags: [x, y, x]}
          - {id: b, gold: SELECT 1, difficulty: " EXTRA "}
          - {id: c, gold: SELECT 1, difficulty: Challenging}
    """)
    cases = load_suite(suite).cases
    assert [(c.difficulty, c.tags) for c in cases] == [("hard", ("x", "y")), ("extra", ()), ("Challenging", ())]


def test_prediction_ids_that_match_no_case_name_their_lines(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT 1}
          - id: talk
            interaction: [{gold: SELECT 1}, {gold: SELECT 2}]
    """)
    (pytester.path / "preds.jsonl").write_text('{"id": "a", "sql": "SELECT 1"}\n\n{"id": "talk/3", "sql": "SELECT 1"}\n'
                                               '{"id": "talk/1", "sql": "SELECT 1"}\n{"id": "talk[2]", "sql": null}\n')
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions", "preds.jsonl")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "2 prediction id(s) match no collected case: talk/3, talk[2] (lines 3, 5)" in _output(result)


@pytest.mark.parametrize("key, value, written", [("max_rows", "1e6", "1000000"), ("timeout", "3e1", "30"),
                                                  ("max_memory", "1E9", "1000000000")])
def test_a_number_yaml_reads_as_text_gets_the_number_written_out_in_its_fix(tmp_path, key, value, written):
    make_sqlite(tmp_path / "shop.sqlite")
    suite = _write(tmp_path / "t.sqleval.yaml", f"database: shop.sqlite\n{key}: {value}\n" + ONE_CASE)
    message = _load_error(suite)
    assert message.startswith(f"{suite}:2: `{key}:`")
    assert f"fix: YAML reads {value} as text, not a number: write `{key}: {written}`" in message


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_utf16_predictions_file_says_to_save_it_as_utf8(pytester, encoding):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n")
    text = '{"id": "a", "sql": "SELECT 1"}\r\n'
    data = text.encode(encoding) if encoding == "utf-16" else b"\xfe\xff" + text.encode(encoding)
    (pytester.path / "preds.jsonl").write_bytes(data)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions", "preds.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "preds.jsonl:1: the predictions file is UTF-16 text, not UTF-8" in _output(result)
    assert "fix: save it as UTF-8" in _output(result)
