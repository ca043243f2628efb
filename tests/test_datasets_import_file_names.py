"""`sqleval import`: each database's suite file is named after its db_id, and a db_id that starts with a dot must not
become a hidden file (`.hidden.sqleval.yaml`, which `ls` and file browsers do not show, so an imported database
looks lost) nor a name made only of dots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import make_sqlite
from pytest_sqleval.datasets.importers import import_dataset
from pytest_sqleval.loader import load_suite
from test_datasets_third_look import _report

PEOPLE_SQL = """
CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO people VALUES (1, 'a'), (2, 'b');
"""


def _entry(db_id: str) -> dict:
    names = [[-1, "*"], [0, "id"], [0, "name"]]
    return {"db_id": db_id, "table_names_original": ["people"], "table_names": ["people"],
            "column_names_original": names, "column_names": names, "column_types": ["text", "number", "text"],
            "primary_keys": [1], "foreign_keys": []}


@pytest.mark.parametrize("db_id, file_name", [(".hidden", "_hidden.sqleval.yaml"), ("..x", "__x.sqleval.yaml"),
                                              ("a.b", "a.b.sqleval.yaml"), ("my db", "my_db.sqleval.yaml")])
def test_a_suite_file_is_never_hidden(tmp_path: Path, db_id: str, file_name: str) -> None:
    root = tmp_path / "spider"
    make_sqlite(root / "database" / db_id / f"{db_id}.sqlite", PEOPLE_SQL)
    (root / "tables.json").write_text(json.dumps([_entry(db_id)]))
    (root / "dev.json").write_text(json.dumps([{"db_id": db_id, "question": "q", "query": "SELECT id FROM people"}]))
    result = import_dataset("spider", root, tmp_path / "out")
    assert [path.name for path in result.suites] == [file_name]
    assert not [p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]
    suite = load_suite(result.suites[0])
    assert suite.name == db_id  # the suite keeps the dataset's name; only its file is renamed


def test_a_dotted_db_id_is_run_beside_the_others(pytester: pytest.Pytester) -> None:
    root = pytester.path / "spider"
    for db_id in (".hidden", "plain"):
        make_sqlite(root / "database" / db_id / f"{db_id}.sqlite", PEOPLE_SQL)
    (root / "tables.json").write_text(json.dumps([_entry(".hidden"), _entry("plain")]))
    (root / "dev.json").write_text(json.dumps([
        {"db_id": ".hidden", "question": "q", "query": "SELECT id FROM people"},
        {"db_id": "plain", "question": "q", "query": "SELECT name FROM people"}]))
    import_dataset("spider", root, pytester.path / "out")
    report = _report(pytester, "out")
    assert sorted(case["suite"] for case in report["cases"]) == [".hidden", "plain"]
