"""Datasets QA round 9: `sqleval import|stats|generate` on inputs nobody tuned for (empty splits, Unicode file names
written in another normal form, ...), through the `sqleval` command as a user runs it, on real SQLite files."""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from chat_server import ChatServer
from conftest import make_sqlite, require_module

PUMP_SQL = "CREATE TABLE pump (id INTEGER, flow REAL); INSERT INTO pump VALUES (1, 2.5), (2, 4.0);"


def _sqleval(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def _pytest(paths: list[Path], cwd: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    report = cwd / "report.json"
    done = subprocess.run([sys.executable, "-m", "pytest", "--sqleval", *map(str, paths), "-q", "-p", "no:cacheprovider",
                           "-o", "addopts=", "--rootdir", str(cwd), f"--sqleval-json={report}", *extra],
                          cwd=cwd, capture_output=True, text=True, timeout=600)
    return done, (json.loads(report.read_text()) if report.exists() else None)


# --------------------------------------------------------------------------- an empty split
@pytest.mark.parametrize(("dataset", "layout", "named", "extra"), [
    ("spider", {"dev.json": "[]"}, "dev.json", ""),
    ("spider", {"dev_gold.sql": "\n\n"}, "dev_gold.sql", ""),
    ("sparc", {"dev.json": '[{"database_id": "shop", "interaction": []}]'}, "dev.json",
     " (1 interaction, all without turns)"),
    ("cosql", {"dev_gold.txt": "\n\n"}, "dev_gold.txt", " (2 interactions, all without turns)"),
    ("bird", {"dev.json": "[]"}, "dev.json", ""),
    ("logiccat", {"data.json": "[]", "sqlite_database/.keep": ""}, "data.json", ""),
])
def test_a_split_without_questions_names_the_file_read_and_the_fix(tmp_path: Path, dataset: str, layout: dict,
                                                                   named: str, extra: str) -> None:
    """Given the dataset folder, the message named only the folder (`sqleval import: spider holds no questions`), not
    the file it read (a folder holds several splits), and gave no fix."""
    src = tmp_path / dataset
    for name, text in layout.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    done = _sqleval(["import", dataset, str(src), "-o", str(tmp_path / "out")], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"sqleval import: {src / named} holds no questions{extra}; fix: " in done.stderr, done.stderr
    if dataset != "logiccat":  # LogicCat has no splits
        assert "--split" in done.stderr
    assert not (tmp_path / "out").exists()  # nothing written


# --------------------------------------------------------------------------- Unicode file names
def test_logiccat_finds_a_database_whose_file_name_is_in_another_unicode_form(tmp_path: Path) -> None:
    """A file named on macOS holds `é` as `e` + a combining accent (NFD); the questions write it as one character
    (NFC). The match ignored case and separators but cut the accent off the file name: `Café_Pumpe` found no file
    (its suite then referenced a `Café_Pumpe.db` that does not exist), and a db_id `cafe_pumpe` would have taken it."""
    root = tmp_path / "logiccat"
    nfd_name = unicodedata.normalize("NFD", "Café Pumpe.db")
    assert nfd_name != "Café Pumpe.db"
    make_sqlite(root / "sqlite_database" / nfd_name, PUMP_SQL)
    make_sqlite(root / "sqlite_database" / "cafe pumpe.db", "CREATE TABLE pump (id INTEGER, flow REAL);")
    (root / "data.json").write_text(json.dumps([
        {"db_id": "Café_Pumpe", "type": "2", "idx": 1, "question": "Flow of pump 2?",
         "query": "SELECT flow FROM pump WHERE id = 2"},
        {"db_id": "cafe_pumpe", "type": "1", "idx": 2, "question": "How many pumps?",
         "query": "SELECT count(*) FROM pump"},
    ], ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "suites"
    done = _sqleval(["import", "logiccat", str(root), "-o", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "not found" not in done.stderr
    assert "1 of 2 databases are schema-only (no rows): cafe_pumpe" in done.stderr
    (tmp_path / "p.jsonl").write_text(json.dumps({"id": "q0001", "sql": "SELECT 4.0"}) + "\n")
    run, report = _pytest([out / "Caf__Pumpe.sqleval.yaml"], tmp_path, "--sqleval-predictions", str(tmp_path / "p.jsonl"))
    assert report is not None, run.stdout + run.stderr
    assert [(c["id"], c["execution_match"]) for c in report["cases"]] == [("q0001", True)]


# --------------------------------------------------------------------------- messages that name the fix
def _spider_folder(root: Path) -> Path:
    make_sqlite(root / "database" / "pumps" / "pumps.sqlite", PUMP_SQL)
    (root / "dev.json").write_text(json.dumps([{"db_id": "pumps", "question": "How many pumps?",
                                                "query": "SELECT count(*) FROM pump"}]))
    return root


def test_json_lines_named_json_as_bird_predictions_names_the_fix(tmp_path: Path) -> None:
    """The plugin's own JSON Lines predictions saved as `run.json` and given to --predictions: the message said only
    `is not valid JSON: Extra data`, no fix."""
    src = _spider_folder(tmp_path / "spider")
    predictions = tmp_path / "run.json"
    predictions.write_text('{"id": "q0000", "sql": "SELECT count(*) FROM pump"}\n'
                           '{"id": "q0001", "sql": "SELECT 1"}\n')
    done = _sqleval(["import", "spider", str(src), "-o", str(tmp_path / "out"), "--predictions", str(predictions)],
                    tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{predictions} is not valid JSON: Extra data (line 2, column 1); fix: " in done.stderr
    assert "pytest --sqleval-predictions" in done.stderr


@pytest.mark.parametrize(("name", "text", "fix"), [
    ("broken.json", '[{"db_id": "pumps",}]', "correct the JSON there"),
    ("tables.json", '{"db_id": "pumps"}', "--tables"),
])
def test_a_broken_questions_or_tables_file_names_the_fix(tmp_path: Path, name: str, text: str, fix: str) -> None:
    src = _spider_folder(tmp_path / "spider")
    bad = tmp_path / name
    bad.write_text(text)
    args = ["import", "spider", str(bad if name == "broken.json" else src), "-o", str(tmp_path / "out")]
    if name == "tables.json":
        args += ["--tables", str(bad)]
    done = _sqleval(args, tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert str(bad) in done.stderr and "; fix: " in done.stderr and fix in done.stderr, done.stderr


# --------------------------------------------------------------------------- generate on a DuckDB file named .db
def test_generate_reads_a_duckdb_file_named_db_and_its_suite_runs(tmp_path: Path, duckdb_available) -> None:
    """`DATABASE` is "a SQLite/DuckDB file": a DuckDB file named `plant.db` was opened as SQLite ("file is not a
    database", with a hint to write `database: duckdb:///...` in a suite), so no suite could be generated for it."""
    import os

    import duckdb

    database = tmp_path / "data" / "plant.db"
    database.parent.mkdir()
    conn = duckdb.connect(str(database))
    conn.execute("CREATE TABLE pump (id INTEGER, flow DOUBLE)")
    conn.execute("INSERT INTO pump VALUES (1, 2.5), (2, 4.0), (3, 4.0)")
    conn.close()
    kept = "SELECT id FROM pump WHERE flow > 3"
    script = {"request 1 of 1": [json.dumps([{"reasoning": "r", "sql": kept},
                                             {"reasoning": "r", "sql": "SELECT id FROM pump WHERE flow > 9"}])],
              f"SQL to explain:\n{kept}": [json.dumps({"reasoning": "r", "question": "Which pumps flow above 3?"})]}
    out = tmp_path / "suites" / "plant.sqleval.yaml"
    with ChatServer(script) as server:
        done = subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", "generate", str(database), "-o", str(out),
                               "--model", "test-model", "--model-url", server.url, "--count", "2",
                               "--cache-mode", "off"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "OPENAI_API_KEY": "test-key"})
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "suites" / "plant.report.json").read_text())
    assert report["kept"] == 1 and report["dropped"]["empty_result"] == 1
    assert "database: duckdb:///../data/plant.db\n" in out.read_text()
    (tmp_path / "p.jsonl").write_text(json.dumps({"id": "g001", "sql": "SELECT 2 UNION SELECT 3"}) + "\n")
    run, result = _pytest([out], tmp_path, "--sqleval-predictions", str(tmp_path / "p.jsonl"))
    assert result is not None, run.stdout + run.stderr
    assert [(c["id"], c["execution_match"]) for c in result["cases"]] == [("g001", True)]


# --------------------------------------------------------------------------- the figure
def test_the_clause_bars_of_a_suite_without_clauses_start_at_zero(tmp_path: Path) -> None:
    """`SELECT count(*) FROM pump` uses none of the clauses: every bar is 0 and matplotlib centred the axis on it,
    drawing percentages from -0.04 to 0.04 under "Clause usage (1 cases)"."""
    require_module("matplotlib", "the plot extra is not installed: pip install 'pytest-sqleval[plot]'")
    make_sqlite(tmp_path / "pumps.sqlite", PUMP_SQL)
    (tmp_path / "one.sqleval.yaml").write_text("suite: one\ndatabase: pumps.sqlite\ncases:\n"
                                               "- id: c1\n  question: How many pumps?\n  gold: SELECT count(*) FROM pump\n")
    done = _sqleval(["stats", "one.sqleval.yaml", "--plot", "fig.svg"], tmp_path)
    assert done.returncode == 0, done.stderr
    labels = [line.strip()[5:-4] for line in (tmp_path / "fig.svg").read_text().splitlines()
              if line.strip().startswith("<!-- ") and line.strip().endswith(" -->")]  # matplotlib's text, as comments
    assert "Clause usage (1 case)" in labels, labels
    ticks = labels[labels.index("fewer than two questions") + 1: labels.index("% of gold queries")]
    assert ticks and all(not tick.startswith(("-", "\u2212")) for tick in ticks), ticks
    assert ticks[0] in ("0", "0.0", "0.00")


# --------------------------------------------------------------------------- a flat database folder
@pytest.mark.parametrize("dataset", ["spider", "bird"])
def test_databases_side_by_side_in_one_folder_are_named_with_the_layout_to_use(tmp_path: Path, dataset: str) -> None:
    """`--databases dbs` with `dbs/pumps.sqlite` (not `dbs/pumps/pumps.sqlite`): every suite silently scored exact
    match only (Spider) or failed to load (BIRD), and the warning said only `not found (pumps) under dbs`, neither
    where it looked nor that the file is there in another layout."""
    make_sqlite(tmp_path / "dbs" / "pumps.sqlite", PUMP_SQL)
    questions = tmp_path / "dev.json"
    entry = ({"db_id": "pumps", "question": "How many pumps?", "query": "SELECT count(*) FROM pump"} if dataset == "spider"
             else {"question_id": 3, "db_id": "pumps", "question": "How many pumps?", "evidence": "",
                   "SQL": "SELECT count(*) FROM pump", "difficulty": "simple"})
    questions.write_text(json.dumps([entry]))
    done = _sqleval(["import", dataset, str(questions), "--databases", "dbs", "-o", "out"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert ("1 of 1 databases not found (pumps) under dbs; looked for dbs/pumps/pumps.sqlite; dbs/pumps.sqlite is "
            "there: put each database in a folder named by its db_id (pumps/pumps.sqlite)") in done.stderr, done.stderr

    (tmp_path / "dbs" / "pumps").mkdir()
    (tmp_path / "dbs" / "pumps.sqlite").rename(tmp_path / "dbs" / "pumps" / "pumps.sqlite")
    done = _sqleval(["import", dataset, str(questions), "--databases", "dbs", "-o", "out"], tmp_path)
    assert done.returncode == 0 and "not found" not in done.stderr, done.stderr
    (tmp_path / "p.jsonl").write_text(json.dumps({"id": "q0000" if dataset == "spider" else "q3", "sql": "SELECT 2"})
                                      + "\n")
    run, report = _pytest([tmp_path / "out"], tmp_path, "--sqleval-predictions", str(tmp_path / "p.jsonl"))
    assert report is not None, run.stdout + run.stderr
    assert [c["execution_match"] for c in report["cases"]] == [True]


# --------------------------------------------------------------------------- lone surrogates
def test_a_lone_surrogate_in_a_dataset_or_predictions_file_is_named_not_written(tmp_path: Path) -> None:
    """JSON may escape half a UTF-16 pair (`\\ud800`), which is no character. In a question, the import wrote a suite
    that did not load (`invalid YAML: found invalid Unicode character escape code`); in BIRD's predictions it
    stopped with a UnicodeEncodeError traceback, leaving a half-written folder."""
    make_sqlite(tmp_path / "dev_databases" / "pumps" / "pumps.sqlite", PUMP_SQL)
    good = {"question_id": 1, "db_id": "pumps", "question": "How many pumps?", "evidence": "",
            "SQL": "SELECT count(*) FROM pump", "difficulty": "simple"}
    (tmp_path / "dev.json").write_text(json.dumps([good, {**good, "question_id": 2, "question": "Pump \ud83d flow?"}]))
    done = _sqleval(["import", "bird", "dev.json", "-o", "out"], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert ('dev.json: entry 1 (counted from 0) "question" holds a lone surrogate \\ud83d (half of a UTF-16 pair, '
            'no character) at character 5; fix: ') in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()

    (tmp_path / "dev.json").write_text(json.dumps([good, {**good, "question_id": 2, "question": "Pump \U0001f600?"}]))
    (tmp_path / "predict.json").write_text(json.dumps({"0": "SELECT 2\t----- bird -----\tpumps",
                                                       "1": "SELECT '\udc00'\t----- bird -----\tpumps"}))
    done = _sqleval(["import", "bird", "dev.json", "-o", "out", "--predictions", "predict.json"], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert 'predict.json: "1" holds a lone surrogate \\udc00' in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()

    done = _sqleval(["import", "bird", "dev.json", "-o", "out"], tmp_path)  # a whole emoji (a pair) is fine
    assert done.returncode == 0, done.stderr
    assert "question: Pump \U0001f600?" in (tmp_path / "out" / "pumps.sqleval.yaml").read_text(encoding="utf-8")


def test_generate_keeps_no_lone_surrogate_of_the_models_answers(tmp_path: Path) -> None:
    """A model's JSON answer with half an emoji (`"\\ud83d"`): in a query the report could not be written
    (UnicodeEncodeError traceback, a truncated report beside a suite); in a question the suite did not load."""
    import os

    database = make_sqlite(tmp_path / "pumps.sqlite", PUMP_SQL)
    first, second = "SELECT id FROM pump WHERE flow > 3", "SELECT id FROM pump WHERE 'x\ud83d' <> 'y' AND flow < 3"
    written = second.replace("\ud83d", "\ufffd")
    script = {"request 1 of 1": ['[{"sql": "%s"}, {"sql": "%s"}]' % (first, second.replace("\ud83d", "\\ud83d"))],
              f"SQL to explain:\n{first}": ['{"question": "Which pumps flow \\ud83d above 3?"}'],
              f"SQL to explain:\n{written}": ['{"question": "Which pumps flow below 3?"}']}
    out = tmp_path / "suites" / "pumps.sqleval.yaml"
    with ChatServer(script) as server:
        done = subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", "generate", str(database), "-o", str(out),
                               "--model", "test-model", "--model-url", server.url, "--count", "2",
                               "--cache", str(tmp_path / "cache")], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300, env={**os.environ, "OPENAI_API_KEY": "test-key"})
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "suites" / "pumps.report.json").read_text(encoding="utf-8"))
    assert report["kept"] == 2 and report["cases"] == 2
    (tmp_path / "p.jsonl").write_text(json.dumps({"id": "g001", "sql": "SELECT 2"}) + "\n"
                                      + json.dumps({"id": "g002", "sql": "SELECT 1"}) + "\n")
    run, result = _pytest([out], tmp_path, "--sqleval-predictions", str(tmp_path / "p.jsonl"))
    assert result is not None, run.stdout + run.stderr
    cases = {c["id"]: c for c in result["cases"]}
    assert cases["g001"]["question"] == "Which pumps flow \ufffd above 3?" and cases["g002"]["gold"] == written
    assert [(c["id"], c["execution_match"]) for c in result["cases"]] == [("g001", True), ("g002", True)], cases


# --------------------------------------------------------------------------- --report over the suite
@pytest.mark.parametrize(("report", "message"), [
    ("suites/pumps.sqleval.yaml", "--report suites/pumps.sqleval.yaml is the suite's own file (-o): the report would "
                                  "be written over the suite; fix: name another file, e.g. suites/pumps.report.json"),
    ("suites/../suites/pumps.sqleval.yaml", "is the suite's own file (-o)"),
    ("suites/gen.sqleval.yml", "--report suites/gen.sqleval.yml: the report is JSON, and pytest --sqleval collects a "
                               "file named *.sqleval.yml as a suite; fix: name it gen.report.json"),
])
def test_a_report_path_that_is_or_would_be_a_suite_is_refused_before_any_model_call(tmp_path: Path, report: str,
                                                                                     message: str) -> None:
    """`--report` naming the suite's own file: the command said `generated 1 of 1 proposed queries into
    suites/pumps.sqleval.yaml` and exited 0, but that file held the JSON report, not the suite."""
    import os

    database = make_sqlite(tmp_path / "pumps.sqlite", PUMP_SQL)
    (tmp_path / "suites").mkdir()
    with ChatServer({"request 1 of 1": [json.dumps([{"sql": "SELECT id FROM pump WHERE flow > 3"}])]},
                    default=json.dumps({"question": "Which pumps flow above 3?"})) as server:
        done = subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", "generate", str(database), "-o",
                               "suites/pumps.sqleval.yaml", "--report", report, "--model", "test-model", "--model-url",
                               server.url, "--count", "1", "--cache-mode", "off"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "OPENAI_API_KEY": "test-key"})
        calls = server.count
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert message in done.stderr, done.stderr
    assert calls == 0 and list((tmp_path / "suites").iterdir()) == []
