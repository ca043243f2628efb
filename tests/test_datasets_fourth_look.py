"""Issue 14, a fourth look: each importer on small hand-made inputs in its official file format that nobody tuned
for (white space inside string literals of a multi-line gold, evidence over several lines, odd categories, db_ids
with odd characters, empty lists, missing optional fields), the round trip import -> run against figures counted
by hand (the same figures the official evaluators print for these files: checked beside the project with
test-suite-sql-eval and BIRD's evaluation_ex.py), the command's options and its error messages, and `sqleval stats`
figures counted by hand. Real SQLite files; run as a user runs them (a subprocess or pytester)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import make_sqlite
from pytest_sqleval.datasets.importers import import_dataset
from pytest_sqleval.loader import load_suite
from test_datasets_third_look import _failure, _report

PEOPLE_SQL = """
CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, score REAL);
INSERT INTO people VALUES (1, 'a  b', 1.5), (2, 'a b', 2.5), (3, 'tab\there', NULL), (4, 'Zoë', 4.0);
"""


def _entry(db_id: str) -> dict:
    names = [[-1, "*"], [0, "id"], [0, "name"], [0, "score"]]
    return {"db_id": db_id, "table_names_original": ["people"], "table_names": ["people"],
            "column_names_original": names, "column_names": names, "column_types": ["text", "number", "text", "number"],
            "primary_keys": [1], "foreign_keys": []}


def _datasets(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ})


# --------------------------------------------------------------------------- white space inside literals
def test_white_space_inside_a_literal_of_a_gold_is_kept(pytester: pytest.Pytester) -> None:
    """A gold over several lines (or BIRD's and LogicCat's, always) was put on one line by splitting on white space,
    which also squeezed the white space inside string literals and quoted names: `name = 'a  b'` became
    `name = 'a b'`, another value, so the gold returned another row and a right prediction was scored a miss.
    The official evaluators run the gold as written: both predictions below are right there (EX 100.00)."""
    root = pytester.path
    make_sqlite(root / "bird" / "dev_databases" / "people" / "people.sqlite", PEOPLE_SQL)
    (root / "bird" / "dev.json").write_text(json.dumps([
        {"question_id": 0, "db_id": "people", "question": "Who is 'a  b'?", "evidence": "",
         "SQL": "SELECT id FROM people WHERE name = 'a  b'", "difficulty": "simple"},
        {"question_id": 1, "db_id": "people", "question": "Who has a tab?",
         "SQL": "SELECT id\nFROM people\nWHERE name = 'tab\there'", "difficulty": "moderate"},
    ]), encoding="utf-8")
    (root / "predict_dev.json").write_text(json.dumps({
        "0": "SELECT id FROM people WHERE name = 'a  b'\t----- bird -----\tpeople",
        "1": "SELECT id FROM people WHERE name = 'tab\there'\t----- bird -----\tpeople"}), encoding="utf-8")
    done = _datasets(["import", "bird", "bird", "-o", "out", "--predictions", "predict_dev.json"], root)
    assert done.returncode == 0, done.stderr
    golds = [case.gold for case in load_suite(root / "out" / "people.sqleval.yaml").cases]
    assert golds == ["SELECT id FROM people WHERE name = 'a  b'", "SELECT id FROM people WHERE name = 'tab\there'"]
    report = _report(pytester, "out")
    assert [c["execution_match"] for c in report["cases"]] == [True, True]
    assert report["overall"]["metrics"]["execution_accuracy"] == pytest.approx(1.0)


def test_a_multi_line_spider_gold_keeps_its_quoted_names_and_literals(tmp_path: Path) -> None:
    root = tmp_path / "spider"
    make_sqlite(root / "database" / "people" / "people.sqlite", PEOPLE_SQL)
    (root / "tables.json").write_text(json.dumps([_entry("people")]))
    (root / "dev.json").write_text(json.dumps([
        {"db_id": "people", "question": "q", "query": 'SELECT  "id"\n\tFROM people  WHERE name = \'a  b\'\n  AND score > = 1'},
        {"db_id": "people", "question": "q", "query": "SELECT id FROM people WHERE name = 'a  b'"},  # one line: as is
    ]))
    result = import_dataset("spider", root, tmp_path / "out")
    golds = [case.gold for case in load_suite(result.suites[0]).cases]
    # one line: white space between tokens is one space, inside a literal it stays; `> =` joined (official)
    assert golds == ["SELECT \"id\" FROM people WHERE name = 'a  b' AND score >= 1",
                     "SELECT id FROM people WHERE name = 'a  b'"]


# --------------------------------------------------------------------------- sqleval stats --plot
SMALL_SUITE = """\
suite: people
database: people.sqlite
cases:
  - id: a
    question: Who is a b?
    gold: SELECT id FROM people WHERE name = 'a b'
  - id: b
    question: How many people?
    gold: SELECT count(*) FROM people
"""


def test_plot_paths_that_are_a_folder_have_no_suffix_or_an_unknown_one(tmp_path: Path) -> None:
    """`--plot figures` (a folder) said "figure written to figures" but wrote figures.png beside it; `--plot fig`
    wrote fig.png; `--plot fig.xyz` ended in a matplotlib traceback. A folder is refused naming a file to give, a
    path without a suffix gets a PNG under exactly that name, an unknown suffix names the formats."""
    pytest.importorskip("matplotlib")
    make_sqlite(tmp_path / "people.sqlite", PEOPLE_SQL)
    (tmp_path / "people.sqleval.yaml").write_text(SMALL_SUITE, encoding="utf-8")
    (tmp_path / "figures").mkdir()
    stderr = _failure(_datasets(["stats", "people.sqleval.yaml", "--similarity", "lexical", "--plot", "figures"],
                                tmp_path))
    assert "--plot figures is a folder" in stderr and "figures/stats.png" in stderr
    assert not (tmp_path / "figures.png").exists()

    done = _datasets(["stats", "people.sqleval.yaml", "--similarity", "lexical", "--plot", "fig"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "figure written to fig" in done.stderr
    assert (tmp_path / "fig").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not (tmp_path / "fig.png").exists()

    stderr = _failure(_datasets(["stats", "people.sqleval.yaml", "--similarity", "lexical", "--plot", "fig.xyz"],
                                tmp_path))
    assert "fig.xyz" in stderr and "'.xyz'" in stderr and ".png" in stderr and ".svg" in stderr
    assert not (tmp_path / "fig.xyz").exists()
    # checked before the statistics are printed: no tables on stdout above an error
    done = _datasets(["stats", "people.sqleval.yaml", "--json", "--plot", "figures"], tmp_path)
    assert done.returncode == 2 and done.stdout == ""


# --------------------------------------------------------------------------- LogicCat categories
def test_logiccat_categories_that_are_not_one_word_still_become_tags(pytester: pytest.Pytester) -> None:
    """The category of a LogicCat question is its tag (`type_1`), so `-m type_1` runs one category. A category
    written as words (`math reasoning`, `multi-step`) got no tag at all: `-m` could not select it. It becomes
    `type_math_reasoning`; the text stays in the case's metadata; a question without a category (no `type`, or
    `"type": null`) gets no tag and no `type` in its metadata."""
    root = pytester.path / "logiccat"
    make_sqlite(root / "sqlite_database" / "Water Pump.db", PEOPLE_SQL)
    (root / "data.json").write_text(json.dumps([
        {"db_id": "waterPump", "type": "math reasoning", "idx": 7, "question": "Wer ist a  b?",
         "query": "SELECT id\nFROM people WHERE name = 'a  b';", "step": "【step1】: filter"},
        {"db_id": "waterPump", "type": "multi-step", "idx": 8, "question": "Zoë?",
         "query": "SELECT id FROM people WHERE name = 'Zoë'"},
        {"db_id": "waterPump", "type": "1", "idx": 9, "query": "SELECT count(*) FROM people"},
        {"db_id": "waterPump", "idx": 10, "query": "SELECT max(score) FROM people"},
        {"db_id": "waterPump", "type": None, "idx": 11, "question": None, "step": None,
         "query": "SELECT min(score) FROM people"},
    ], ensure_ascii=False), encoding="utf-8")
    done = _datasets(["import", "logiccat", "logiccat", "-o", "out"], pytester.path)
    assert done.returncode == 0, done.stderr
    assert "resolved LogicCat db_id 'waterPump' to the file 'Water Pump.db'" in done.stderr
    suite = load_suite(pytester.path / "out" / "waterPump.sqleval.yaml")
    assert [(c.id, c.tags) for c in suite.cases] == [
        ("q0007", ("type_math_reasoning",)), ("q0008", ("type_multi_step",)), ("q0009", ("type_1",)), ("q0010", ()),
        ("q0011", ())]   # `"type": null` is no category (it was the tag `type_None`)
    assert suite.cases[0].extra == {"type": "math reasoning", "reasoning": "【step1】: filter"}
    assert suite.cases[3].extra == {} and suite.cases[4].extra == {} and suite.cases[4].question is None
    assert suite.cases[0].gold == "SELECT id FROM people WHERE name = 'a  b';"
    (pytester.path / "pred.jsonl").write_text(json.dumps({"id": "q0008", "sql": "SELECT id FROM people WHERE name = 'Zoë'"},
                                                         ensure_ascii=False) + "\n", encoding="utf-8")
    report = _report(pytester, "out", "-m", "type_multi_step", "--sqleval-predictions", "pred.jsonl")
    assert [c["id"] for c in report["cases"]] == ["q0008"]
    assert report["cases"][0]["execution_match"] is True


# --------------------------------------------------------------------------- BIRD round trip
def test_bird_round_trip_with_odd_but_valid_questions_and_predictions(pytester: pytest.Pytester) -> None:
    """BIRD questions with evidence over two lines, an empty and a missing evidence, a missing difficulty, a db_id
    with a space and an accent; predictions with a null (no prediction: a miss, as the official " " is) and one
    without the `----- bird -----` part. Figures by hand, the same as BIRD's evaluation_ex.py prints for these
    files: simple 1/2, moderate 1/1, challenging 0/1, all 3/5 (the question without a difficulty counts in all)."""
    root = pytester.path
    make_sqlite(root / "bird" / "dev_databases" / "dé b" / "dé b.sqlite", PEOPLE_SQL)
    questions = [
        {"question_id": 10, "db_id": "dé b", "question": "Wer ist 'a  b'?", "evidence": "a  b refers to name\nwith two spaces",
         "SQL": "SELECT id FROM people WHERE name = 'a  b'", "difficulty": "simple"},
        {"question_id": 11, "db_id": "dé b", "question": "How many?", "evidence": "", "SQL": "SELECT count(*) FROM people",
         "difficulty": "simple"},
        {"question_id": 12, "db_id": "dé b", "question": "How many?", "SQL": "SELECT max(score) FROM people",
         "difficulty": "moderate"},
        {"question_id": 13, "db_id": "dé b", "question": "Zoë?", "evidence": "Zoë is a name",
         "SQL": "SELECT id FROM people WHERE name = 'Zoë'", "difficulty": "challenging"},
        {"question_id": 14, "db_id": "dé b", "question": "Lowest score?", "SQL": "SELECT min(score) FROM people"},
    ]
    (root / "bird" / "dev.json").write_text(json.dumps(questions, ensure_ascii=False), encoding="utf-8")
    (root / "predict_dev.json").write_text(json.dumps({
        "0": "SELECT id FROM people WHERE name = 'a  b'\t----- bird -----\tdé b",
        "1": None,
        "2": "SELECT max(score) FROM people",
        "3": "SELECT id FROM people WHERE name = 'Zoe'\t----- bird -----\tdé b",
        "4": "SELECT min(score) FROM people\t----- bird -----\tdé b"}, ensure_ascii=False), encoding="utf-8")
    done = _datasets(["import", "bird", "bird", "-o", "out", "--predictions", "predict_dev.json"], root)
    assert done.returncode == 0, done.stderr
    assert "wrote 4 predictions (1 cases without one)" in done.stdout
    document = yaml.safe_load((root / "out" / "d__b.sqleval.yaml").read_text(encoding="utf-8"))
    assert document["suite"] == "dé b" and document["execution"] == "bird"
    assert document["database"] == "../bird/dev_databases/dé b/dé b.sqlite"
    cases = {c["id"]: c for c in document["cases"]}
    assert cases["q10"]["evidence"] == "a  b refers to name\nwith two spaces"
    assert "evidence" not in cases["q11"] and "evidence" not in cases["q12"]   # empty or missing: none
    assert "difficulty" not in cases["q14"] and cases["q13"]["difficulty"] == "challenging"

    # the evidence reaches model code (as it reaches prompt templates): a predictor answers only with it
    pytester.makepyfile(evidence_predictor="""
        def predict(case):
            if case.evidence == "a  b refers to name\\nwith two spaces":
                return "SELECT id FROM people WHERE name = 'a  b'"
            return "SELECT 0"
    """)
    assert _datasets(["import", "bird", "bird", "-o", "plain"], root).returncode == 0  # no predictions: the model's
    report = _report(pytester, "plain", "--sqleval-predictor", "evidence_predictor:predict")
    assert {c["id"]: c["execution_match"] for c in report["cases"]} == {
        "q10": True, "q11": False, "q12": False, "q13": False, "q14": False}

    report = _report(pytester, "out", "--sqleval-predictions", "out/predictions.jsonl")
    by_id = {c["id"]: c for c in report["cases"]}
    assert {i: c["execution_match"] for i, c in by_id.items()} == {
        "q10": True, "q11": False, "q12": True, "q13": False, "q14": True}
    by_level: dict[str, list[bool]] = {}
    for case in report["cases"]:
        by_level.setdefault(case["difficulty"] or "", []).append(case["execution_match"])
    assert {k: (sum(v), len(v)) for k, v in by_level.items() if k in ("simple", "moderate", "challenging")} == {
        "simple": (1, 2), "moderate": (1, 1), "challenging": (0, 1)}
    assert by_id["q14"]["difficulty"] not in ("simple", "moderate", "challenging")
    assert report["overall"]["metrics"]["execution_accuracy"] == pytest.approx(3 / 5)


# --------------------------------------------------------------------------- CoSQL round trip
SINGER_SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Zoë', 25), (2, 'B', 35), (3, 'C', 40);
"""


def _singer_entry(db_id: str) -> dict:
    names = [[-1, "*"], [0, "singer_id"], [0, "name"], [0, "age"]]
    return {"db_id": db_id, "table_names_original": ["singer"], "table_names": ["singer"],
            "column_names_original": names, "column_names": names, "column_types": ["text", "number", "text", "number"],
            "primary_keys": [1], "foreign_keys": []}


@pytest.mark.parametrize("rewrites", [True, False], ids=["official-rewrites", "no-official-rewrites"])
def test_cosql_round_trip_with_odd_but_valid_interactions(pytester: pytest.Pytester, rewrites: bool) -> None:
    """The CoSQL release layout (sql_state_tracking/cosql_dev.json, tables.json, database/) with db_ids `café` and
    `shop-2.0`, a TAB and a newline inside a gold, a TAB inside an utterance, a turn without an utterance, an
    empty interaction, the release's `final` key; predictions with a TAB field, `value` for a literal and a last
    interaction no blank line closes. test-suite-sql-eval prints question match 0.800 and execution 0.600 for
    these files (with --no-official-rewrites, `value` stays a column that does not exist: one more miss); its interaction match 0.750 counts the empty
    interaction as matched (3 of 4), here it is no interaction: 2 of 3."""
    root = pytester.path / "cosql"
    for db_id in ("shop-2.0", "café"):
        make_sqlite(root / "database" / db_id / f"{db_id}.sqlite", SINGER_SQL)
    (root / "tables.json").write_text(json.dumps([_singer_entry("shop-2.0"), _singer_entry("café")], ensure_ascii=False),
                                      encoding="utf-8")
    (root / "sql_state_tracking").mkdir()
    (root / "sql_state_tracking" / "cosql_dev.json").write_text(json.dumps([
        {"database_id": "café", "interaction": [
            {"utterance": "Wie viele Sänger?", "query": "SELECT count(*) FROM singer"},
            {"utterance": "Älter als 30?\tbitte", "query": "SELECT name\nFROM singer\tWHERE age > 30"}],
         "final": {"utterance": "x", "query": "SELECT 1"}},
        {"database_id": "shop-2.0", "interaction": []},
        {"database_id": "shop-2.0", "interaction": [
            {"query": "SELECT name FROM singer ORDER BY age DESC LIMIT 1"},
            {"utterance": "Wie viele Sänger?", "query": "SELECT count(*) FROM singer WHERE age > 30"}]},
        {"database_id": "café", "interaction": [{"utterance": "Namen", "query": "SELECT name FROM singer WHERE name = 'Zoë'"}]},
    ], ensure_ascii=False), encoding="utf-8")
    (pytester.path / "pred.txt").write_text(
        "SELECT count(*) FROM singer\tcafé\nSELECT name FROM singer WHERE age > value\n\n\n"
        "SELECT name FROM singer ORDER BY age LIMIT 1\nSELECT count(*) FROM singer WHERE age > 30\n\n"
        "SELECT name FROM singer WHERE name = 'Zoë'", encoding="utf-8")
    args = ["import", "cosql", "cosql", "-o", "out", "--predictions", "pred.txt"]
    done = _datasets(args + ([] if rewrites else ["--no-official-rewrites"]), pytester.path)
    assert done.returncode == 0, done.stderr
    assert "wrote 2 suites (5 cases)" in done.stdout and "warning" not in done.stderr
    cafe = yaml.safe_load((pytester.path / "out" / "caf_.sqleval.yaml").read_text(encoding="utf-8"))
    assert cafe["suite"] == "cosql/café" and cafe["pass_if"] == "exact_match"
    assert cafe["cases"][0]["interaction"][1] == {"question": "Älter als 30?\tbitte",
                                                  "gold": "SELECT name FROM singer WHERE age > 30"}
    shop = yaml.safe_load((pytester.path / "out" / "shop-2.0.sqleval.yaml").read_text(encoding="utf-8"))
    assert shop["cases"][0]["id"] == "i0002" and "question" not in shop["cases"][0]["interaction"][0]
    lines = [json.loads(line) for line in (pytester.path / "out" / "predictions.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == ["i0000/1", "i0000/2", "i0002/1", "i0002/2", "i0003/1"]
    assert lines[0]["sql"] == "SELECT count(*) FROM singer"
    assert lines[1]["sql"] == f"SELECT name FROM singer WHERE age > {1 if rewrites else 'value'}"

    report = _report(pytester, "out")
    metrics = report["overall"]["metrics"]
    assert metrics["question_match"] == pytest.approx(0.8 if rewrites else 0.6)
    assert metrics["execution_accuracy"] == pytest.approx(0.6)
    assert metrics["interaction_match"] == pytest.approx(2 / 3 if rewrites else 1 / 3)


# --------------------------------------------------------------------------- the command's options and messages
def test_split_finds_the_test_release_and_its_message_names_that_split(tmp_path: Path) -> None:
    """`--split test` reads test.json, test_tables.json and test_database/ (the Spider test release). A folder
    without that split's file said "give ... its dev.json or dev_gold.sql", though dev.json was there and the
    split asked for was test: the fix now names the files of the split asked for."""
    root = tmp_path / "spider"
    make_sqlite(root / "test_database" / "people" / "people.sqlite", PEOPLE_SQL)
    (root / "test_tables.json").write_text(json.dumps([_entry("people")]))
    (root / "test.json").write_text(json.dumps([{"db_id": "people", "query": "SELECT count(*) FROM people"}]))
    done = _datasets(["import", "spider", "spider", "-o", "out", "--split", "test"], tmp_path)
    assert done.returncode == 0, done.stderr
    document = yaml.safe_load((tmp_path / "out" / "people.sqleval.yaml").read_text())
    assert document["database"] == "../spider/test_database/people/people.sqlite"
    assert document["schema"] == {"tables": "../spider/test_tables.json", "db_id": "people"}
    assert "question" not in document["cases"][0]    # a missing question is no question, not "None"

    for dataset, files in (("spider", "train.json or train_gold.sql"), ("sparc", "train.json or train_gold.txt"),
                           ("bird", "train.json or mini_train_sqlite.json")):
        stderr = _failure(_datasets(["import", dataset, "spider", "-o", "out2", "--split", "train"], tmp_path))
        assert "looked for" in stderr and "train" in stderr and files in stderr, stderr
        assert "dev.json" not in stderr


def test_bad_input_names_the_file_the_record_and_the_fix(tmp_path: Path) -> None:
    make_sqlite(tmp_path / "dev_databases" / "people" / "people.sqlite", PEOPLE_SQL)
    good = {"question_id": 0, "db_id": "people", "question": "q", "SQL": "SELECT 1", "difficulty": "simple"}
    cases = [
        ("bird", [good, {"question_id": 1, "db_id": "people", "question": "q"}],
         ["dev.json: entry 1 (counted from 0) has no `SQL`", "fix: give it `db_id`, `SQL`, or remove entry 1"]),
        ("bird", [good, {**good, "question_id": 5, "difficulty": "hard"}],
         ["dev.json: question 5 has difficulty 'hard'", "simple, moderate, challenging"]),
        ("bird", [good, {**good, "question_id": 6, "evidence": ["a list"]}],
         ["question 6 (q6) has `evidence`", "fix: give `evidence` as text"]),
        ("sparc", [{"database_id": "people", "interaction": [{"utterance": "q", "query": "SELECT 1"},
                                                            {"utterance": "q", "query": None}]}],
         ["dev.json: interaction 0 needs `database_id` and turns with `query`"]),
        ("spider", {"db_id": "people", "query": "SELECT 1"},
         ["dev.json is not a Spider questions file", "fix: give dev.json of the Spider release"]),
    ]
    for dataset, data, expected in cases:
        (tmp_path / "dev.json").write_text(json.dumps(data))
        stderr = _failure(_datasets(["import", dataset, "dev.json", "-o", "out"], tmp_path))
        for text in expected:
            assert text in stderr, (dataset, stderr)
    assert not (tmp_path / "out").exists()     # nothing written for bad input

    (tmp_path / "dev.json").write_text(json.dumps([good]))
    for predictions, expected in (
            ("missing.json", ["file not found: missing.json", "fix: check the path"]),
            ("list.json", ["list.json: a JSON predictions file is a mapping", "predict_*.json"]),
            ("keys.json", ["keys.json: key 'first' is not a question index", "keys are 0, 1, 2"]),
            ("broken.json", ["broken.json is not valid JSON", "line 1, column"])):
        (tmp_path / "list.json").write_text(json.dumps(["SELECT 1"]))
        (tmp_path / "keys.json").write_text(json.dumps({"first": "SELECT 1"}))
        (tmp_path / "broken.json").write_text('{"0": "SELECT 1"')
        stderr = _failure(_datasets(["import", "bird", "dev.json", "-o", "out", "--predictions", predictions], tmp_path))
        for text in expected:
            assert text in stderr, (predictions, stderr)
    done = _datasets(["import", "bird", "dev.json", "-o", "out", "--tables", "nope.json"], tmp_path)
    assert "not found: nope.json" in _failure(done)
    done = _datasets(["import", "nope", "dev.json", "-o", "out"], tmp_path)
    assert done.returncode == 2 and "invalid choice: 'nope'" in done.stderr
    done = _datasets(["import", "bird", "dev.json"], tmp_path)
    assert done.returncode == 2 and "-o/--output" in done.stderr


# --------------------------------------------------------------------------- Spider round trip
def test_spider_round_trip_with_explicit_tables_and_databases(pytester: pytest.Pytester) -> None:
    """dev.json away from its tables.json and database/ (given by --tables and --databases), db_ids `café` and
    `shop-2.0`, a question missing, the same question twice, a TAB and a newline inside golds, a prediction line
    with a TAB field. test-suite-sql-eval prints exact match 1.000 and execution 0.750 for these files."""
    data = pytester.path / "data"
    for db_id in ("shop", "shop-2.0", "café"):
        make_sqlite(data / "db" / db_id / f"{db_id}.sqlite", SINGER_SQL)
    (data / "schemas.json").write_text(json.dumps([_singer_entry(d) for d in ("shop", "shop-2.0", "café")],
                                                  ensure_ascii=False), encoding="utf-8")
    (pytester.path / "questions").mkdir()
    (pytester.path / "questions" / "dev.json").write_text(json.dumps([
        {"db_id": "shop", "question": "How many singers?", "query": "SELECT count(*)\n FROM singer"},
        {"db_id": "shop-2.0", "question": "How many singers?", "query": "SELECT\tcount(*) FROM singer"},
        {"db_id": "café", "query": "SELECT name FROM singer WHERE name = 'Zoë'"},
        {"db_id": "shop", "question": "Names?", "query": "SELECT name FROM singer WHERE age > 30"},
    ], ensure_ascii=False), encoding="utf-8")
    (pytester.path / "pred.txt").write_text(
        "SELECT count(*) FROM singer\nSELECT count(*) FROM singer\tshop-2.0\n"
        "SELECT name FROM singer WHERE name = 'Zoë'\nSELECT name FROM singer WHERE age > 35\n", encoding="utf-8")
    done = _datasets(["import", "spider", "questions/dev.json", "-o", "suites", "--predictions", "pred.txt",
                      "--tables", "data/schemas.json", "--databases", "data/db"], pytester.path)
    assert done.returncode == 0, done.stderr
    assert "wrote 3 suites (4 cases)" in done.stdout and "wrote 4 predictions (0 cases without one)" in done.stdout
    cafe = yaml.safe_load((pytester.path / "suites" / "caf_.sqleval.yaml").read_text(encoding="utf-8"))
    assert cafe["suite"] == "café" and cafe["database"] == "../data/db/café/café.sqlite"
    assert cafe["schema"] == {"tables": "../data/schemas.json", "db_id": "café"} and cafe["predictions"] == "predictions/caf_.jsonl"
    assert cafe["cases"] == [{"id": "q0002", "gold": "SELECT name FROM singer WHERE name = 'Zoë'"}]
    report = _report(pytester, "suites")
    by_id = {c["id"]: (c["exact_match"], c["execution_match"]) for c in report["cases"]}
    assert by_id == {"q0000": (True, True), "q0001": (True, True), "q0002": (True, True), "q0003": (True, False)}
    assert report["overall"]["metrics"]["exact_match"] == pytest.approx(1.0)
    assert report["overall"]["metrics"]["execution_accuracy"] == pytest.approx(0.75)


# --------------------------------------------------------------------------- sqleval stats by hand
STATS_SUITE = """\
suite: singers
database: singers.sqlite
cases:
  - id: a
    question: How many singers?
    gold: SELECT count(*) FROM singer
  - id: b
    question: "how many\\tsingers?"
    gold: select count(*) from singer
  - id: c
    question: Names of singers older than 30
    gold: SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id WHERE T1.age > 30
  - id: d
    gold: SELECT name FROM singer UNION SELECT name FROM concert
"""


def test_each_statistic_of_a_tiny_suite_counted_by_hand(tmp_path: Path) -> None:
    """Every figure the issue names, counted by hand. Tokens: `SELECT count ( * ) FROM singer` is 7, c is 26,
    d is 9. Lexical similarity (cosine of word counts): a and b have the same words (1.0); a or b and c share
    `singers` only: 1 / sqrt(3 * 6). a and b are exact duplicates: lower-cased, and white space is white space
    (`how many\\tsingers?` was no duplicate of `How many singers?` but a near-duplicate); so there are no
    near-duplicates at 0.9; at 0.2 all three questions are."""
    make_sqlite(tmp_path / "singers.sqlite", SINGER_SQL + "CREATE TABLE concert (singer_id INTEGER, name TEXT);")
    (tmp_path / "singers.sqleval.yaml").write_text(STATS_SUITE, encoding="utf-8")
    done = _datasets(["stats", "singers.sqleval.yaml", "--json", "--similarity", "lexical"], tmp_path)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert (stats["cases"], stats["questions"], stats["distinct_gold_sql"], stats["unparsed_sql"]) == (4, 3, 4, 0)
    assert {k: v["count"] for k, v in stats["difficulty"].items()} == {"easy": 2, "medium": 1, "hard": 1}
    assert {k: v["count"] for k, v in stats["clauses"].items() if v["count"]} == {
        "WHERE": 1, "JOIN": 1, "set operation": 1}
    assert stats["clauses"]["JOIN"]["percent"] == 25.0
    assert {k: v["count"] for k, v in stats["joins"].items()} == {"0": 3, "1": 1, "2": 0, "3+": 0}
    assert stats["tables_per_query"] == {"mean": 1.5, "median": 1.5, "min": 1.0, "max": 2.0}
    # distinct table columns: c reads singer.name, singer.singer_id, concert.singer_id, singer.age (4: the two
    # singer_id columns are two, of two tables); d reads singer.name and concert.name (2); a and b none
    assert stats["columns_per_query"] == {"mean": 1.5, "median": 1.0, "min": 0.0, "max": 4.0}
    assert stats["sql_tokens"] == {"mean": 12.25, "median": 8.0, "min": 7.0, "max": 26.0}
    assert stats["question_words"] == {"mean": 4.0, "median": 3.0, "min": 3.0, "max": 6.0}
    assert stats["duplicates"] == {"exact_questions": 1, "exact_question_groups": 1, "exact_gold_sql": 1,
                                   "near_duplicate_threshold": 0.9, "near_duplicate_questions": 0}
    similarity = stats["similarity"]
    low = 1 / (3 * 6) ** 0.5
    assert similarity["method"] == "lexical (cosine of word counts)"
    assert similarity["mean_pairwise"] == pytest.approx((1 + 2 * low) / 3)
    assert similarity["mean_nearest_neighbour"] == pytest.approx((2 + low) / 3, abs=1e-6)
    assert [(n["id"], n["nearest"], n["similarity"]) for n in similarity["nearest_neighbour"]] == [
        ("singers::a", "singers::b", 1.0), ("singers::b", "singers::a", 1.0), ("singers::c", "singers::a", round(low, 6))]

    done = _datasets(["stats", "singers.sqleval.yaml", "--json", "--similarity", "lexical", "--near-duplicate", "0.2"],
                     tmp_path)
    assert json.loads(done.stdout)["duplicates"]["near_duplicate_questions"] == 3
    done = _datasets(["stats", "singers.sqleval.yaml", "--markdown", "--similarity", "lexical"], tmp_path)
    assert "| JOIN | 1 | 25.00 |" in done.stdout and "| SQL length (tokens) | 12.25 | 8.0 | 7 | 26 |" in done.stdout
    assert "**Question similarity (lexical (cosine of word counts))**" in done.stdout


# --------------------------------------------------------------------------- sqleval generate: the filters
PARTS_SQL = """
CREATE TABLE suppliers (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
CREATE TABLE parts (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER, supplier_id INTEGER);
INSERT INTO suppliers VALUES (1, 'Acme', 'DE'), (2, 'Bolt  Co', 'US'), (3, 'Zoë AG', 'CH');
INSERT INTO parts VALUES (1, 'bolt', 10, 1), (2, 'nut', 3, 1), (3, 'gear', 7, 2), (4, 'shaft', 2, 2);
"""


def test_generation_filters_on_odd_but_valid_model_answers(tmp_path: Path) -> None:
    """The execution filters on what models write: TABs and line breaks (the same normalised SQL as a kept query),
    another alias (the same result and structure), two spaces inside a literal (a value of its own: kept, and
    the one-space spelling finds no row), a fence, two statements. A trailing `;` with a `-- comment` after it
    was kept in the gold (`...'CH'; -- Swiss`), and a trailing comment made a query no textual duplicate of the
    same query without it: the statement ends at its last token."""
    from pytest_sqleval.datasets.generate import screen
    from pytest_sqleval.execution.backends import backend_for, remember_backend

    path = make_sqlite(tmp_path / "parts.sqlite", PARTS_SQL)
    url = f"sqlite:///{path}"
    backend = backend_for(url)
    engine = remember_backend(backend.open(url), backend)
    try:
        kept, drops = screen(engine, [(sql, None) for sql in (
            "SELECT name FROM parts WHERE qty > 5",
            "SELECT name\n\tFROM parts\nWHERE qty > 5;",
            "SELECT p.name FROM parts AS p WHERE p.qty > 5",
            "SELECT name FROM parts WHERE qty > 5 -- the same again",
            "SELECT id FROM suppliers WHERE name = 'Bolt  Co'",
            "SELECT id FROM suppliers WHERE name = 'Bolt Co'",
            "SELECT name FROM suppliers WHERE country = 'CH'; -- Swiss",
            "```sql\nSELECT country FROM suppliers WHERE name = 'Zoë AG'\n```",
            "SELECT 1; SELECT 2",
        )], dialect="sqlite", max_result_rows=10, timeout=5)
    finally:
        engine.dispose()
    assert [k.sql for k in kept] == ["SELECT name FROM parts WHERE qty > 5",
                                     "SELECT id FROM suppliers WHERE name = 'Bolt  Co'",
                                     "SELECT name FROM suppliers WHERE country = 'CH'",
                                     "SELECT country FROM suppliers WHERE name = 'Zoë AG'"]
    assert [(d.filter, d.reason.split(":")[0]) for d in drops] == [
        ("duplicate", "the same normalised SQL as a kept query"),
        ("duplicate", "the same result and structure as a kept query"),
        ("duplicate", "the same normalised SQL as a kept query"),
        ("empty_result", "no rows"),
        ("unparsable", "2 statements, not one query")]


# --------------------------------------------------------------------------- the public data
SHARED = Path(os.environ.get("SQLEVAL_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "benchmarks"


@pytest.mark.skipif(not (SHARED / "bird_minidev" / "mini_dev_sqlite.json").is_file(),
                    reason=f"the public BIRD mini-dev data is not at {SHARED}")
def test_bird_minidev_golds_are_the_official_gold_file_and_logiccat_keeps_every_literal(tmp_path: Path) -> None:
    """Each imported BIRD gold is the SQL of the official gold file (mini_dev_sqlite_gold.sql), the text
    evaluation_ex.py runs, token for token (two spaces between tokens become one); each LogicCat gold (many over several lines) keeps every string literal and quoted name
    of its query, token for token."""
    import sqlglot
    from sqlglot.tokens import TokenType

    result = import_dataset("bird", SHARED / "bird_minidev" / "mini_dev_sqlite.json", tmp_path / "bird")
    golds = {}
    for suite in result.suites:
        document = yaml.safe_load(suite.read_text(encoding="utf-8"))
        golds.update({case["metadata"]["question_id"]: case["gold"] for case in document["cases"]})
    questions = json.loads((SHARED / "bird_minidev" / "mini_dev_sqlite.json").read_text(encoding="utf-8"))
    official = (SHARED / "bird_minidev" / "mini_dev_sqlite_gold.sql").read_text(encoding="utf-8").splitlines()
    assert len(golds) == len(questions) == len(official) == 500
    for question, line in zip(questions, official):   # the same tokens: white space between them aside
        gold, expected = golds[question["question_id"]], line.strip().split("\t")[0]
        assert [t.text for t in sqlglot.tokenize(gold, read="sqlite")] == \
            [t.text for t in sqlglot.tokenize(expected, read="sqlite")], (gold, expected)
        assert " ".join(gold.split()) == " ".join(expected.split())

    source = SHARED / "logiccat" / "miniset" / "sqlite_mini_500.json"
    if not source.is_file():
        return
    quoted = (TokenType.STRING, TokenType.IDENTIFIER)
    result = import_dataset("logiccat", source, tmp_path / "logiccat")
    imported = {}
    for suite in result.suites:
        for case in yaml.safe_load(suite.read_text(encoding="utf-8"))["cases"]:
            imported[case["id"]] = case["gold"]
    multi_line = 0
    for entry in json.loads(source.read_text(encoding="utf-8")):
        if "--" in entry["query"]:
            continue
        multi_line += "\n" in entry["query"]
        before = [(t.token_type, t.text) for t in sqlglot.tokenize(entry["query"], read="sqlite")]
        after = [(t.token_type, t.text) for t in sqlglot.tokenize(imported[f"q{entry['idx']:04d}"], read="sqlite")]
        assert after == before and "\n" not in imported[f"q{entry['idx']:04d}"]
        assert [t for t in after if t[0] in quoted] == [t for t in before if t[0] in quoted]
    assert multi_line > 10


@pytest.mark.parametrize("sql, columns", [
    ("SELECT T1.name, T2.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id", 4),  # two tables' names
    ("SELECT a.id FROM t AS a JOIN t AS b ON a.id = b.parent", 2),            # a self-join: t.id, t.parent
    ("SELECT name FROM singer WHERE singer.name = 'x'", 1),                    # qualified or not, one column
    ("SELECT name FROM a JOIN b ON a.id = b.id WHERE a.name = 'x'", 3),        # name is a.name's: a.id, b.id, a.name
    ("SELECT name FROM singer WHERE age > (SELECT avg(T1.age) FROM singer AS T1)", 2),  # an alias in a subquery
    ("SELECT x.c FROM (SELECT c FROM t) AS x", 1),                             # a derived table's column is t.c
    ("WITH w AS (SELECT a FROM t) SELECT w.a, a FROM w", 1),                   # a CTE's column is t.a
    ("SELECT a FROM t UNION SELECT a FROM u", 2),                              # t.a and u.a
    ("SELECT count(*) FROM t", 0),
])
def test_columns_per_query_are_distinct_table_columns(sql, columns):
    """`T1.name, T2.name` of two tables counted as one column (names were lower-cased, qualifiers dropped)."""
    from pytest_sqleval.datasets.stats import query_facts

    assert query_facts(sql).columns == columns
