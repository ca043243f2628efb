"""The suite loader: the model it builds and every bad-input message (file, line, fix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_sqleval.errors import SuiteError
from pytest_sqleval.loader import load_suite


def load_error(path: Path) -> SuiteError:
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    return info.value


def test_minimal_suite(shop_db, write_suite):
    path = write_suite(
        """
        database: shop.sqlite
        cases:
          - id: count-tickets
            question: How many tickets?
            gold: SELECT count(*) FROM tickets
            predicted: SELECT count(id) FROM tickets
            tags: [aggregation]
        """
    )
    suite = load_suite(path)
    assert suite.name == "suite"
    assert suite.execution.profile == "sqleval"
    assert str(suite.pass_if) == "execution_match"
    (case,) = suite.cases
    assert case.id == "count-tickets" and case.line == 3
    assert case.database.url == f"sqlite:///{shop_db}"
    assert case.predicted == "SELECT count(id) FROM tickets" and case.has_prediction
    assert case.tags == ("aggregation",)


def test_case_database_override_and_profile_mapping(shop_db, tmp_path, write_suite):
    other = tmp_path / "other.sqlite"
    other.write_bytes(shop_db.read_bytes())
    path = write_suite(
        """
        suite: shops
        database: shop.sqlite
        execution: {profile: bird, duplicates: bag}
        pass_if: soft_f1 >= 0.8 or execution_match
        thresholds: {execution_accuracy: 0.6, error_count: 3}
        timeout: 2.5
        max_rows: 10
        cases:
          - {id: a, gold: SELECT 1}
          - {id: b, gold: SELECT 2, database: other.sqlite, difficulty: hard}
        """
    )
    suite = load_suite(path)
    assert suite.name == "shops"
    assert suite.execution.profile == "bird" and suite.execution.duplicates == "bag"
    assert suite.execution.columns == "positional"
    assert suite.pass_if.holds({"soft_f1": 0.9}) and not suite.pass_if.holds({"soft_f1": 0.5})
    assert suite.thresholds == {"execution_accuracy": 0.6, "error_count": 3.0}
    assert suite.timeout == 2.5 and suite.max_rows == 10
    assert suite.cases[0].database.url.endswith("shop.sqlite")
    assert suite.cases[1].database.url.endswith("other.sqlite")
    assert suite.cases[1].difficulty == "hard"
    assert suite.cases[0].has_prediction is False


def test_interaction_turns_become_cases(shop_db, write_suite):
    path = write_suite(
        """
        database: shop.sqlite
        cases:
          - id: flights-1
            interaction:
              - {question: "All shops?", gold: "SELECT name FROM shops", predicted: "SELECT name FROM shops"}
              - {question: "Of these, Cabin?", gold: "SELECT name FROM shops WHERE name = 'Cabin'"}
          - {id: single, gold: SELECT 1}
        """
    )
    suite = load_suite(path)
    assert [c.id for c in suite.cases] == ["flights-1/1", "flights-1/2", "single"]
    assert [c.item_name for c in suite.cases] == ["flights-1[1]", "flights-1[2]", "single"]
    assert [c.index for c in suite.cases] == [0, 1, 2]
    assert suite.cases[1].interaction == "flights-1" and suite.cases[1].turn == 2
    assert suite.cases[1].has_prediction is False
    assert suite.has_interactions


def test_env_expansion_in_urls(monkeypatch, write_suite):
    monkeypatch.setenv("SQLEVAL_TEST_HOST", "db.example")
    monkeypatch.delenv("SQLEVAL_TEST_PORT", raising=False)
    path = write_suite(
        """
        database: "postgresql+psycopg://u:${SQLEVAL_TEST_PW:-secret}@${SQLEVAL_TEST_HOST}:${SQLEVAL_TEST_PORT:-5432}/d"
        cases: [{id: a, gold: SELECT 1}]
        """
    )
    spec = load_suite(path).cases[0].database
    assert spec.url == "postgresql+psycopg://u:secret@db.example:5432/d"
    assert spec.display == "postgresql+psycopg://u:***@db.example:5432/d"
    assert spec.dialect == "postgresql"


def test_setup_database_and_glob_databases(tmp_path, shop_db, write_suite):
    (tmp_path / "schema.sql").write_text("CREATE TABLE t(a INT);")
    variants = tmp_path / "variants"
    variants.mkdir()
    for name in ("b.sqlite", "a.sqlite"):
        (variants / name).write_bytes(shop_db.read_bytes())
    path = write_suite(
        """
        database: {url: "sqlite://", setup: [schema.sql]}
        cases:
          - {id: a, gold: SELECT 1}
          - {id: b, gold: SELECT 1, databases: "variants/*.sqlite"}
        """
    )
    suite = load_suite(path)
    assert suite.cases[0].database.url == "sqlite://"
    assert suite.cases[0].database.setup == ((tmp_path / "schema.sql").resolve(),)
    assert [d.url.rsplit("/", 1)[1] for d in suite.cases[1].databases] == ["a.sqlite", "b.sqlite"]


BAD_SUITES = [
    # (yaml, expected line, fragments of the message)
    ("cases: [\n  {id: a, gold: SELECT 1\n", 3, ["invalid YAML", "fix:"]),
    ("- just\n- a list\n", 1, ["must be a YAML mapping"]),
    ("database: shop.sqlite\n", 1, ["no `cases:`", "fix:"]),
    ("database: shop.sqlite\ncases: []\n", 2, ["non-empty list"]),
    ("database: shop.sqlite\ncases:\n  - id: a\n    question: q\n", 3, ["'a' has no `gold:`", "fix: add `gold: SELECT ...`"]),
    ("database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n  - {id: a, gold: SELECT 2}\n", 4,
     ["duplicate case id 'a' (first on line 3)", "rename"]),
    ("database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1, predcted: SELECT 1}\n", 3,
     ["unknown key 'predcted'", "did you mean `predicted`?"]),
    ("database: shop.sqlite\nthreshold: {}\ncases: [{id: a, gold: SELECT 1}]\n", 2, ["unknown key 'threshold'", "thresholds"]),
    ("database: shop.sqlite\nexecution: spidr\ncases: [{id: a, gold: SELECT 1}]\n", 2,
     ["unknown execution profile 'spidr'", "sqleval, test-suite, bird, mro, logiccat"]),
    ("database: shop.sqlite\nexecution: {profile: bird, row_ordr: always}\ncases: [{id: a, gold: SELECT 1}]\n", 2,
     ["unknown comparison option 'row_ordr'"]),
    ("database: shop.sqlite\nexecution: {duplicates: maybe}\ncases: [{id: a, gold: SELECT 1}]\n", 2,
     ["duplicates must be one of bag, set"]),
    ("database: shop.sqlite\nthresholds:\n  execution_acc: 0.5\ncases: [{id: a, gold: SELECT 1}]\n", 3,
     ["unknown metric 'execution_acc'", "execution_accuracy"]),
    ("database: shop.sqlite\nthresholds:\n  soft_f1: 80\ncases: [{id: a, gold: SELECT 1}]\n", 3, ["rate between 0 and 1"]),
    ("database: missing.sqlite\ncases: [{id: a, gold: SELECT 1}]\n", 1, ["database file not found", "missing.sqlite", "SQLAlchemy URL"]),
    ("database: shop.sqlite\npass_if: accuracy\ncases: [{id: a, gold: SELECT 1}]\n", 2,
     ["unknown metric 'accuracy' in pass_if", "execution_match"]),
    ("database: shop.sqlite\npass_if: soft_f1\ncases: [{id: a, gold: SELECT 1}]\n", 2, ["soft_f1 >= 0.8"]),
    ("database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1, tags: [multi-table]}\n", 3, ["tag 'multi-table'", "markers"]),
    ("database: shop.sqlite\ncases:\n  - id: conv\n    interaction: []\n", 4, ["interaction 'conv' has no turns"]),
    ("database: shop.sqlite\ncases:\n  - id: conv\n    interaction:\n      - {question: q}\n", 5, ["'conv/1' has no `gold:`"]),
    ("database: shop.sqlite\ncases:\n  - id: conv\n    gold: SELECT 1\n    interaction:\n      - {gold: SELECT 1}\n", 4,
     ["both `interaction:` and `gold:`"]),
    ("database: shop.sqlite\ndatabase: other.sqlite\ncases: [{id: a, gold: SELECT 1}]\n", 2, ["duplicate key 'database'"]),
    ("databases: 'nothing/*.sqlite'\ncases: [{id: a, gold: SELECT 1}]\n", 1, ["no database matches"]),
    ("database: {url: 'sqlite://', setup: [nope.sql]}\ncases: [{id: a, gold: SELECT 1}]\n", 1, ["setup script not found"]),
    ("database: shop.sqlite\ntimeout: 0\ncases: [{id: a, gold: SELECT 1}]\n", 2, ["`timeout:` must be a number of seconds greater than 0"]),
    ("database: shop.sqlite\ndialect: sqlitey\ncases: [{id: a, gold: SELECT 1}]\n", 2, ["unknown sqlglot dialect"]),
    ("database: shop.sqlite\ndifficulty: hardest\ncases: [{id: a, gold: SELECT 1}]\n", 2, ["unknown difficulty classifier"]),
    ("cases: [{id: a, gold: SELECT 1}]\n", 1, ["case 'a' has no database", "add `database:`"]),
    ("database: '${SQLEVAL_SURELY_UNSET_VAR}'\ncases: [{id: a, gold: SELECT 1}]\n", 1,
     ["environment variable SQLEVAL_SURELY_UNSET_VAR is not set"]),
    ("database: shop.sqlite\ncases:\n  - {id: 'a/b', gold: SELECT 1}\n", 3, ["contains '/'"]),
    ("database: shop.sqlite\ncases:\n  - {id: a, gold: 42}\n", 3, ["must be SQL text"]),
]


@pytest.mark.parametrize("text, line, fragments", BAD_SUITES, ids=[f"bad-{i}" for i in range(len(BAD_SUITES))])
def test_bad_suites_name_file_line_and_fix(shop_db, write_suite, text, line, fragments):
    path = write_suite(text)
    error = load_error(path)
    rendered = error.render()
    assert rendered.startswith(f"{path}:{line}: "), rendered
    for fragment in fragments:
        assert fragment in rendered, rendered


def test_unknown_exact_match_profile(shop_db, write_suite):
    path = write_suite("database: shop.sqlite\nexact_match: spyder\ncases: [{id: a, gold: SELECT 1}]\n")
    rendered = load_error(path).render()
    assert rendered.startswith(f"{path}:2: ") and "spyder" in rendered
