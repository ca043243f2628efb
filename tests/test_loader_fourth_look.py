"""The suite loader and the dataset importers, a fourth look: YAML 1.1's Unicode line breaks in SQL text, Spider and
SParC imports in one run, a lone surrogate through --sqleval-save-predictions, BIRD's null evidence and byte-order
mark, and loader inputs nobody tuned for (merged ids, ids in two Unicode forms, tabs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import make_sqlite
from pytest_sqleval.datasets.importers import dump_yaml, import_dataset
from pytest_sqleval.errors import SuiteError
from pytest_sqleval.loader import load_suite
from pytest_sqleval.model.config import load_examples

LS, PS, NEL = "\u2028", "\u2029", "\x85"
ONE_ROW = "CREATE TABLE t (a TEXT); INSERT INTO t VALUES ('x');"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _error(path: Path) -> str:
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    return info.value.render()


def _report(pytester: pytest.Pytester, *args: str, subprocess: bool = False) -> tuple[pytest.RunResult, dict | None]:
    path = pytester.path / "report.json"
    if path.exists():
        path.unlink()
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run("--sqleval", f"--sqleval-json={path}", "-p", "no:cacheprovider", *args)
    return result, (json.loads(path.read_text(encoding="utf-8")) if path.exists() else None)


# --------------------------------------------------------------------------- 1. NEL, U+2028, U+2029 in SQL text
def test_a_unicode_line_separator_in_unquoted_sql_is_kept_as_written_and_matches_a_predictions_file(
        pytester: pytest.Pytester) -> None:
    """YAML 1.1 reads U+2028 as a line break: an unquoted `gold: SELECT 'a<U+2028>b'` in a case stopped the suite
    ("while scanning a simple key", on a line no editor shows). It is text, as in YAML 1.2 and in the JSON of a
    predictions file: the gold, a `predicted:` and a predictions file's line all hold the same SQL and match."""
    make_sqlite(pytester.path / "shop.sqlite", f"CREATE TABLE t (a TEXT); INSERT INTO t VALUES ('a{LS}b'), ('a b');")
    _write(pytester.path / "s.sqleval.yaml",
           "database: shop.sqlite\ncases:\n"
           f"  - id: in-suite\n    gold: SELECT a FROM t WHERE a = 'a{LS}b'\n    predicted: SELECT a FROM t WHERE a = 'a{LS}b'\n"
           f"  - id: from-file\n    gold: SELECT count(*) FROM t WHERE a = 'a{PS}b' OR a = 'a{NEL}b'\n")
    suite = load_suite(pytester.path / "s.sqleval.yaml")
    assert suite.cases[0].gold == f"SELECT a FROM t WHERE a = 'a{LS}b'" == suite.cases[0].predicted
    assert suite.cases[1].gold == f"SELECT count(*) FROM t WHERE a = 'a{PS}b' OR a = 'a{NEL}b'"
    result, report = _report(pytester)
    assert result.ret == 0, result.stdout.str()
    outcomes = {c["id"]: c["outcome"] for c in report["cases"]}
    assert outcomes["in-suite"] == "passed"
    # the same SQL from a predictions file (JSON keeps the characters as text): the prediction is the gold
    _write(pytester.path / "p.jsonl", json.dumps({"id": "in-suite", "sql": f"SELECT a FROM t WHERE a = 'a{LS}b'"},
                                                 ensure_ascii=False) + "\n" + json.dumps(
        {"id": "from-file", "sql": f"SELECT count(*) FROM t WHERE a = 'a{PS}b' OR a = 'a{NEL}b'"}) + "\n")
    result, report = _report(pytester, "--sqleval-predictions=p.jsonl")
    assert result.ret == 0, result.stdout.str()
    assert {c["id"]: c["outcome"] for c in report["cases"]} == {"in-suite": "passed", "from-file": "passed"}


@pytest.mark.parametrize("where, text, message", [
    ("gold", f"    gold: SELECT a FROM t{LS}     WHERE a = 'x'\n", "`gold:` of case 'q1'"),
    ("predicted", f"    gold: SELECT 1\n    predicted: SELECT 1{PS}      AS one\n", "`predicted:` of case 'q1'"),
    ("an alternative gold", f"    gold:\n      - SELECT 1\n      - SELECT 2{LS}          AS two\n", "`gold:` of case 'q1'"),
    ("a turn", f"    interaction:\n      - gold: SELECT 1\n      - gold: \"SELECT 'a{NEL}b'\"\n",
     "`gold:` of case 'q1' (turn 2)"),
])
def test_a_unicode_line_break_that_yaml_1_1_would_read_otherwise_is_an_error_naming_case_line_and_fix(
        tmp_path: Path, where: str, text: str, message: str) -> None:
    """Where YAML 1.1 folds the character into the text around it (`SELECT a FROM t<U+2028>WHERE ...`, spaces gone;
    a quoted NEL a space), the SQL run silently differed from the SQL written; since files written by
    yaml.safe_dump hold the characters that way, neither reading can be assumed: an error with the fix."""
    make_sqlite(tmp_path / "shop.sqlite", ONE_ROW)
    path = _write(tmp_path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - id: q1\n" + text)
    rendered = _error(path)
    line = 1 + next(n for n, row in enumerate(path.read_text(encoding="utf-8").split("\n"))
                    if any(ch in row for ch in (LS, PS, NEL)))
    assert rendered.startswith(f"{path}:{line}: {message} holds the character U+"), (where, rendered)
    assert "YAML 1.2 reads" in rendered and "YAML 1.1" in rendered
    assert "write it as an escape inside double quotes" in rendered


def test_lines_after_a_unicode_line_separator_are_counted_as_an_editor_counts_them(tmp_path: Path) -> None:
    """PyYAML counted U+2028 as a line end: every message below it named the line after the real one."""
    make_sqlite(tmp_path / "shop.sqlite", ONE_ROW)
    path = _write(tmp_path / "s.sqleval.yaml",
                  f"database: shop.sqlite\ncases:\n  - id: q1\n    gold: \"SELECT 'a{LS}b'\"\n    qestion: typo\n")
    assert _error(path).startswith(f"{path}:5: unknown key 'qestion'")


def test_the_importer_writes_unicode_line_breaks_as_escapes_that_every_yaml_reader_reads_alike(tmp_path: Path) -> None:
    """PyYAML's dumper wrote U+2028 raw in a quoted scalar, followed by indentation: YAML 1.1 and 1.2 read two SQL
    texts from that file. The importer writes it as an escape (`\\L`), read the same by both."""
    gold = f"SELECT count(*) FROM singer WHERE name = 'a{LS}b{PS}c{NEL}d'"
    text = dump_yaml({"gold": gold, "question": f"q{LS}"})
    assert "\\L" in text and "\\P" in text and "\\N" in text and LS not in text and NEL not in text
    assert yaml.safe_load(text) == {"gold": gold, "question": f"q{LS}"}
    root = tmp_path / "spider"
    make_sqlite(root / "database" / "shop" / "shop.sqlite", "CREATE TABLE singer (name TEXT);")
    (root / "dev.json").write_text(json.dumps([{"db_id": "shop", "question": "How many?", "query": gold}]))
    import_dataset("spider", root, tmp_path / "out")
    assert load_suite(tmp_path / "out" / "shop.sqleval.yaml").cases[0].gold == gold


def test_examples_files_keep_unicode_line_breaks_in_sql_as_suites_do(tmp_path: Path) -> None:
    """The few-shot examples' JSON Lines were split with str.splitlines(), which also splits at U+2028 inside a JSON
    string (`json.dumps(..., ensure_ascii=False)` writes it raw): "not valid JSON" on a valid file. Their YAML was
    read as YAML 1.1 (the character folded away), unlike a suite."""
    pair = {"question": "Which?", "sql": f"SELECT '{LS}'"}
    jsonl = _write(tmp_path / "examples.jsonl", json.dumps(pair, ensure_ascii=False) + "\n")
    assert load_examples(jsonl) == ({"question": "Which?", "sql": f"SELECT '{LS}'"},)
    yml = _write(tmp_path / "examples.yaml", f"- question: Which?\n  sql: SELECT 1{LS}      AS x\n")
    with pytest.raises(SuiteError) as info:
        load_examples(yml)
    assert info.value.render().startswith(f"{yml}:2: `sql:` holds the character U+2028")


# --------------------------------------------------------------------------- 2. Spider and SParC in one run
def _spider_folder(root: Path) -> None:
    names = [[-1, "*"], [0, "name"]]
    make_sqlite(root / "database" / "shop" / "shop.sqlite", "CREATE TABLE singer (name TEXT); "
                                                            "INSERT INTO singer VALUES ('a'), ('b');")
    (root / "tables.json").write_text(json.dumps([{
        "db_id": "shop", "table_names_original": ["singer"], "table_names": ["singer"], "column_names_original": names,
        "column_names": names, "column_types": ["text", "text"], "primary_keys": [], "foreign_keys": []}]))


def test_spider_and_sparc_imports_of_one_database_run_in_one_invocation(pytester: pytest.Pytester) -> None:
    """Both imports named their suite `shop`: `pytest --sqleval spider sparc` stopped with "the suite name 'shop' is
    already used by ...". Spider keeps its names (existing baselines pair by them); SParC's is `sparc/shop`
    (CoSQL's `cosql/shop`), and the help says so."""
    root = pytester.path
    _spider_folder(root / "data")
    (root / "data" / "dev.json").write_text(json.dumps([
        {"db_id": "shop", "question": "How many?", "query": "SELECT count(*) FROM singer"}]))
    (root / "data" / "sparc.json").write_text(json.dumps([{"database_id": "shop", "interaction": [
        {"utterance": "Names?", "query": "SELECT name FROM singer"},
        {"utterance": "How many?", "query": "SELECT count(*) FROM singer"}]}]))
    (root / "spider.txt").write_text("SELECT count(*) FROM singer\n")
    (root / "sparc.txt").write_text("SELECT name FROM singer\nSELECT count(name) FROM singer\n\n")
    import_dataset("spider", root / "data", root / "spider", predictions=root / "spider.txt")
    import_dataset("sparc", root / "data" / "sparc.json", root / "sparc", predictions=root / "sparc.txt")
    import_dataset("cosql", root / "data" / "sparc.json", root / "cosql")
    assert yaml.safe_load((root / "spider" / "shop.sqleval.yaml").read_text(encoding="utf-8"))["suite"] == "shop"
    assert yaml.safe_load((root / "cosql" / "shop.sqleval.yaml").read_text(encoding="utf-8"))["suite"] == "cosql/shop"
    result, report = _report(pytester, "spider", "sparc")
    assert "already used by" not in result.stdout.str()
    assert result.ret == 0, result.stdout.str()
    assert {(c["suite"], c["id"]): c["outcome"] for c in report["cases"]} == {
        ("shop", "q0000"): "passed", ("sparc/shop", "i0000/1"): "passed", ("sparc/shop", "i0000/2"): "missed"}
    assert sorted(s["name"] for s in report["suites"]) == ["shop", "sparc/shop"]
    # `-k` selects a SParC suite by its name, as by its file
    result, report = _report(pytester, "spider", "sparc", "-k", "sparc/shop")
    assert {c["suite"] for c in report["cases"]} == {"sparc/shop"}
    done = subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", "import", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert "sparc/<db_id>" in " ".join(done.stdout.split())


# --------------------------------------------------------------------------- 3. a lone surrogate saved and replayed
def test_a_lone_surrogate_from_a_predictor_is_saved_so_that_the_replay_scores_alike(pytester: pytest.Pytester) -> None:
    """A predictor's `"... \\ud800"` is a syntax miss ("not valid UTF-8 text"); --sqleval-save-predictions wrote the
    report's U+FFFD in its place, so `--sqleval-predictions saved.jsonl` ran a valid SQL and passed the case."""
    make_sqlite(pytester.path / "shop.sqlite", ONE_ROW)
    pytester.makeconftest("""
        import pytest

        @pytest.fixture(scope="session")
        def sqleval_predictor():
            def predict(case):
                if case.id == "bad":
                    return {"sql": "SELECT count(*) FROM t -- \\ud800", "raw_output": "raw \\udcff"}
                return "SELECT count(*) FROM t"
            return predict
    """)
    _write(pytester.path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n"
                                             "  - {id: good, question: q1, gold: SELECT count(*) FROM t}\n"
                                             "  - {id: bad, question: q2, gold: SELECT count(*) FROM t}\n")
    result, first = _report(pytester, "--sqleval-save-predictions=saved.jsonl")
    assert "2 model predictions saved" in result.stdout.str()
    saved = [json.loads(line) for line in (pytester.path / "saved.jsonl").read_text(encoding="utf-8").splitlines()]
    assert saved[1]["sql"] == "SELECT count(*) FROM t -- \ud800"  # the escape, read back as the surrogate
    result, replay = _report(pytester, "--sqleval-predictions=saved.jsonl")

    def outcomes(report: dict) -> dict:
        return {c["id"]: (c["outcome"], (c.get("error") or {}).get("kind")) for c in report["cases"]}

    assert outcomes(first) == outcomes(replay) == {"good": ("passed", None), "bad": ("missed", "syntax")}
    assert "predicted_as_given" not in (pytester.path / "report.json").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- 4. BIRD: null evidence, byte-order mark
def test_bird_questions_with_a_byte_order_mark_and_null_evidence_import_as_documented(tmp_path: Path) -> None:
    """BIRD's evaluator scores the SQL alone (it never reads `evidence` or `question`), so a `null` evidence is no
    evidence and a byte-order mark is no part of the JSON: both import; the README now says so (it said a null
    evidence stopped the import). A non-text evidence is still an error naming the question."""
    make_sqlite(tmp_path / "dev_databases" / "shop" / "shop.sqlite", ONE_ROW)
    questions = [{"question_id": 1, "db_id": "shop", "question": None, "evidence": None, "SQL": "SELECT a FROM t",
                  "difficulty": "simple"},
                 {"question_id": 2, "db_id": "shop", "question": "How many?", "evidence": "count rows",
                  "SQL": "SELECT count(*) FROM t", "difficulty": "moderate"}]
    (tmp_path / "dev.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(questions).encode())
    (tmp_path / "predict.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(
        {"0": "SELECT a FROM t\t----- bird -----\tshop", "1": None}).encode())
    result = import_dataset("bird", tmp_path, tmp_path / "out", predictions=tmp_path / "predict.json")
    suite = load_suite(tmp_path / "out" / "shop.sqleval.yaml")
    assert [(c.id, c.question, c.evidence) for c in suite.cases] == [("q1", None, None),
                                                                     ("q2", "How many?", "count rows")]
    assert result.predictions == 1 and result.missing_predictions == 1
    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8").split())
    assert "a `null` question or evidence is none" in readme
    questions[0]["evidence"] = ["a list"]
    (tmp_path / "dev.json").write_text(json.dumps(questions))
    from pytest_sqleval.datasets.importers import DatasetError

    with pytest.raises(DatasetError, match=r"question 1 \(q1\) has `evidence`: \[\"a list\"\]"):
        import_dataset("bird", tmp_path, tmp_path / "out2")


# --------------------------------------------------------------------------- inputs nobody tuned for
def test_a_merged_case_without_its_own_id_is_named_at_its_own_line(tmp_path: Path) -> None:
    """`- <<: *base` without `id:` takes the anchor's id: the duplicate was reported at the anchor's line, "duplicate
    case id 'a' (first on line 3)" on line 3, which points at the first case twice."""
    make_sqlite(tmp_path / "shop.sqlite", ONE_ROW)
    path = _write(tmp_path / "s.sqleval.yaml",
                  "database: shop.sqlite\ncases:\n  - &base {id: a, gold: SELECT 1}\n  - id: b\n    gold: SELECT 2\n"
                  "  - <<: *base\n    gold: SELECT 3\n")
    rendered = _error(path)
    assert rendered.startswith(f"{path}:6: duplicate case id 'a' (first on line 3); this case's `id:` comes from its "
                               "`<<:` merge key")
    assert "give the case its own `id:` after `<<: *...`" in rendered
    # with its own id the merged case loads, the merged gold overridden
    _write(path, path.read_text(encoding="utf-8").replace("  - <<: *base\n", "  - <<: *base\n    id: c\n"))
    assert [(c.id, c.gold) for c in load_suite(path).cases] == [("a", "SELECT 1"), ("b", "SELECT 2"), ("c", "SELECT 3")]


def test_two_case_ids_that_are_one_text_in_two_unicode_forms_are_an_error(tmp_path: Path) -> None:
    """`café` typed with `é` and with `e` + U+0301 look the same in every report, but were two cases to pytest and a
    predictions file (whose tool may normalise the id and pair it with the other)."""
    make_sqlite(tmp_path / "shop.sqlite", ONE_ROW)
    path = _write(tmp_path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - id: caf\u00e9\n    gold: SELECT 1\n"
                                               "  - id: cafe\u0301\n    gold: SELECT 2\n")
    rendered = _error(path)
    assert rendered.startswith(f"{path}:5: case id 'cafe\u0301' is 'caf\u00e9' (line 3) written with other Unicode "
                               "characters ('cafe\\u0301' and 'caf\\xe9')")
    assert "rename one of them" in rendered


@pytest.mark.parametrize("text, line, column", [
    ("cases:\n-\tid: a\n\tgold: SELECT 1\n", 3, 2),
    ("cases:\n  - id: a\n\t  gold: SELECT 1\n", 4, 1),
])
def test_a_tab_used_for_indentation_is_named_with_its_line_and_column(tmp_path: Path, text: str, line: int,
                                                                      column: int) -> None:
    """libyaml's words were "found character that cannot start any token" (it does not say which character)."""
    make_sqlite(tmp_path / "shop.sqlite", ONE_ROW)
    path = _write(tmp_path / "s.sqleval.yaml", "database: shop.sqlite\n" + text)
    rendered = _error(path)
    assert rendered.startswith(f"{path}:{line}: invalid YAML: a tab at column {column}, where YAML expects "
                               "indentation or a space"), rendered
    assert "replace the tab with spaces" in rendered
    # a tab inside SQL text (after the indentation) is the SQL's own
    _write(path, "database: shop.sqlite\ncases:\n  - id: a\n    gold: |\n      SELECT 1\n      \tAS one\n")
    assert load_suite(path).cases[0].gold == "SELECT 1\n\tAS one\n"


@pytest.mark.parametrize("written, kind", [("yes", "true/false"), ("1.50", "a number"), ("2024-01-01", "a date")])
def test_an_id_yaml_reads_as_another_type_is_named_as_written_with_the_quoted_fix(tmp_path: Path, written: str,
                                                                                 kind: str) -> None:
    """`id: yes` was "case id must be a non-empty string, not True" (the user wrote no True), `id: 1.50` "not 1.5"
    and `id: 2024-01-01` "not datetime.date(2024, 1, 1)", each with a fix that did not say to quote it. The same
    text in `metadata:` stays YAML's value."""
    make_sqlite(tmp_path / "shop.sqlite", ONE_ROW)
    path = _write(tmp_path / "s.sqleval.yaml", f"database: shop.sqlite\ncases:\n  - id: {written}\n    gold: SELECT 1\n")
    rendered = _error(path)
    assert rendered == (f"{path}:3: the id {written} reads as {kind} in YAML, not as text\n"
                        f"  fix: quote it: `id: \"{written}\"`")
    _write(path, f"database: shop.sqlite\ncases:\n  - id: \"{written}\"\n    gold: SELECT 1\n"
                 f"    metadata: {{id: {written}}}\n")
    (case,) = load_suite(path).cases
    assert case.id == written and case.extra == {"id": {"yes": True, "1.50": 1.5, "2024-01-01": "2024-01-01"}[written]}


def test_two_suite_names_that_differ_only_in_unicode_form_are_refused_naming_both_files(pytester: pytest.Pytester):
    """`café` with é in one file and e + U+0301 in the other: one name to a reader, two to reports and baselines."""
    make_sqlite(pytester.path / "shop.sqlite", "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
    for stem, name in (("a", "caf\u00e9"), ("b", "cafe\u0301")):
        _write(pytester.path / f"{stem}.sqleval.yaml",
               f"suite: {name}\ndatabase: shop.sqlite\ncases:\n  - {{id: one, gold: SELECT x FROM t, predicted: SELECT x FROM t}}\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*b.sqleval.yaml:1: the suite name 'cafe\u0301' is 'caf\u00e9' of *a.sqleval.yaml "
                                 "written with other Unicode characters*"])
    assert "Traceback" not in result.stdout.str()
