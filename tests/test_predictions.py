"""Predictions files: matched by id, bad lines reported with their line number."""

import pytest

from pytest_sqleval.errors import SuiteError
from pytest_sqleval.predictions import load_predictions, unmatched_ids


def test_load_and_match(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"id": "b", "sql": "SELECT 2"}\n\n{"id": "a", "sql": "SELECT 1"}\n{"id": 7, "sql": null}\n'
                     b'{"id": "x/2", "sql": "SELECT \xff"}\n')
    predictions = load_predictions(path)
    assert predictions["a"].sql == "SELECT 1" and predictions["a"].line == 3
    assert predictions["7"].sql is None
    assert predictions["x/2"].sql == "SELECT \udcff"  # invalid UTF-8 kept for the guard to score
    assert unmatched_ids(predictions, {"a", "b"}) == ["7", "x/2"]


@pytest.mark.parametrize(
    "content, line, message",
    [
        ('{"id": "a", "sql": "SELECT 1"}\n{"id": "a"', 2, "not valid JSON"),
        ('{"id": "a"}\n', 1, 'keys "id" and "sql"'),
        ('{"id": "a", "sql": 3}\n', 1, "string or null"),
        ('{"id": "a", "sql": "x"}\n{"id": "a", "sql": "y"}\n', 2, "duplicate prediction for case 'a' (first on line 1)"),
    ],
)
def test_bad_files(tmp_path, content, line, message):
    path = tmp_path / "p.jsonl"
    path.write_text(content)
    with pytest.raises(SuiteError) as info:
        load_predictions(path)
    assert info.value.render().startswith(f"{path}:{line}: ")
    assert message in info.value.render()
