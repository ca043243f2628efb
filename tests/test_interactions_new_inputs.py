"""Multi-turn interactions and exact set match as a user meets them, on new inputs (QA of issue 3).

Hand-computed aggregates on a small flights database; every run through ``pytest --sqleval`` (pytester),
serial and with ``-n 2`` where the promise is about the run as a whole.
"""

from __future__ import annotations

import json
import sqlite3
import textwrap

import pytest

from flights_support import FLIGHTS_SQL as DB_SQL

WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])


def make_db(pytester: pytest.Pytester) -> None:
    connection = sqlite3.connect(pytester.path / "f.sqlite")
    connection.executescript(DB_SQL)
    connection.commit()
    connection.close()


def run_report(pytester: pytest.Pytester, *args: str, cache: bool = False):
    report = pytester.path / "report.json"
    if report.exists():
        report.unlink()
    extra = () if cache else ("-p", "no:cacheprovider")
    result = pytester.runpytest_subprocess("--sqleval", f"--sqleval-json={report}", *extra, *args)
    return result, (json.loads(report.read_text()) if report.exists() else None)


# c1: 4 turns, turn 3 has no prediction (a miss); c2: 2 turns, both right.
FOUR_AND_TWO = """
suite: talk
database: f.sqlite
pass_if: exact_match
cases:
  - id: c1
    interaction:
      - {question: "Airlines?", gold: "SELECT name FROM airlines", predicted: "SELECT name FROM airlines"}
      - {question: "Of those, in the US?", gold: "SELECT name FROM airlines WHERE country = 'US'",
         predicted: "SELECT name FROM airlines WHERE country = 'US'"}
      - {question: "How many flights?", gold: "SELECT count(*) FROM flights"}
      - {question: "Their origins?", gold: "SELECT src FROM flights", predicted: "SELECT src FROM flights"}
  - id: c2
    interaction:
      - {question: "Airlines?", gold: "SELECT name FROM airlines", predicted: "SELECT name FROM airlines"}
      - {question: "And countries?", gold: "SELECT name, country FROM airlines",
         predicted: "SELECT name, country FROM airlines"}
"""


@WORKERS
def test_k_selecting_some_turns_does_not_count_a_partial_interaction_as_whole(pytester, workers):
    make_db(pytester)
    pytester.makefile(".sqleval.yaml", talk=FOUR_AND_TWO)
    # the whole run: c1 misses (turn 3 has no prediction), c2 matches
    _, full = run_report(pytester, *workers)
    assert full["suites"][0]["metrics"]["interaction_match"] == 0.5
    assert full["suites"][0]["metrics"]["question_match"] == pytest.approx(5 / 6)
    # -k drops the missing turn 3 of c1: the 3 turns that ran all pass, but c1 did not run whole
    result, report = run_report(pytester, "-k", "c1 and not 3", *workers)
    assert result.ret == 0
    metrics = report["suites"][0]["metrics"]
    assert sorted(c["id"] for c in report["cases"]) == ["c1/1", "c1/2", "c1/4"]
    assert metrics["question_match"] == 1.0
    assert "interaction_match" not in metrics and "interaction_execution_accuracy" not in metrics
    assert "interaction_match" not in report["overall"]["metrics"]
    assert {c["interaction_turns"] for c in report["cases"]} == {4}
    # c2 whole plus one turn of c1: only c2 is an interaction
    _, mixed = run_report(pytester, "-k", "c2 or c1[3]", *workers)
    assert mixed["suites"][0]["metrics"]["interaction_match"] == 1.0
    assert mixed["suites"][0]["intervals"]["interaction_match"] == pytest.approx([0.2065, 1.0], abs=1e-4)  # n = 1
    assert mixed["suites"][0]["metrics"]["question_match"] == pytest.approx(2 / 3)


@WORKERS
def test_lf_reruns_only_the_failed_turn_and_no_interaction_is_whole(pytester, workers):
    # the turn item's id must parse back as pytest parses the cached `talk.sqleval.yaml::c1[3]`
    make_db(pytester)
    pytester.makefile(".sqleval.yaml", talk=FOUR_AND_TWO)
    run_report(pytester, *workers, cache=True)
    result, report = run_report(pytester, "--lf", *workers, cache=True)
    assert [c["id"] for c in report["cases"]] == ["c1/3"]
    assert report["cases"][0]["error"]["kind"] == "no_prediction"
    metrics = report["suites"][0]["metrics"]
    assert metrics["question_match"] == 0.0
    assert "interaction_match" not in metrics


def test_missing_prediction_file_turn_is_a_miss_and_sinks_its_interaction(pytester):
    make_db(pytester)
    pytester.makefile(".sqleval.yaml", talk=FOUR_AND_TWO)
    # a predictions file replaces every `predicted:`: c1 given turns 4, 1, 2 out of order, turn 3 left out
    lines = [{"id": "c1/4", "sql": "SELECT src FROM flights"}, {"id": "c1/1", "sql": "SELECT name FROM airlines"},
             {"id": "c1/2", "sql": "SELECT name FROM airlines WHERE country = 'US'"},
             {"id": "c2/1", "sql": "SELECT name FROM airlines"}, {"id": "c2/2", "sql": "SELECT name, country FROM airlines"}]
    (pytester.path / "p.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    result, report = run_report(pytester, "--sqleval-predictions=p.jsonl")
    outcomes = {c["id"]: c["outcome"] for c in report["cases"]}
    assert outcomes == {"c1/1": "passed", "c1/2": "passed", "c1/3": "missed", "c1/4": "passed",
                        "c2/1": "passed", "c2/2": "passed"}
    metrics = report["suites"][0]["metrics"]
    assert metrics["question_match"] == pytest.approx(5 / 6)
    assert metrics["interaction_match"] == 0.5


@pytest.mark.parametrize("bad_id", ["c1/9", "nosuch/1", "c1"])
def test_prediction_for_a_turn_that_does_not_exist_names_it(pytester, bad_id):
    make_db(pytester)
    pytester.makefile(".sqleval.yaml", talk=FOUR_AND_TWO)
    (pytester.path / "p.jsonl").write_text(json.dumps({"id": bad_id, "sql": "SELECT 1"}) + "\n")
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-predictions=p.jsonl")
    assert result.ret != 0
    out = result.stdout.str()
    assert f"match no collected case: {bad_id}" in out and "<interaction>/<n>" in out


def test_same_interaction_ids_in_two_suites_stay_apart(pytester):
    make_db(pytester)
    pytester.makefile(".sqleval.yaml", talk=FOUR_AND_TWO, other=FOUR_AND_TWO.replace("suite: talk", "suite: other"))
    lines = [{"id": "talk::c1/3", "sql": "SELECT count(*) FROM flights"}]
    lines += [{"id": f"{t}/{n}", "sql": sql} for t, n, sql in [
        ("c1", 1, "SELECT name FROM airlines"), ("c1", 2, "SELECT name FROM airlines WHERE country = 'US'"),
        ("c1", 4, "SELECT src FROM flights"), ("c2", 1, "SELECT name FROM airlines"),
        ("c2", 2, "SELECT name FROM airlines")]]  # c2/2 wrong in both suites
    (pytester.path / "p.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    _, report = run_report(pytester, "--sqleval-predictions=p.jsonl")
    by_suite = {s["name"]: s["metrics"] for s in report["suites"]}
    assert by_suite["talk"]["interaction_match"] == 0.5  # c1 whole and right, c2 wrong
    assert by_suite["other"]["interaction_match"] == 0.0  # c1/3 had no prediction there
    assert report["overall"]["metrics"]["interaction_match"] == 0.25  # 4 interactions, not 2 merged by id
    assert report["overall"]["metrics"]["question_match"] == pytest.approx(9 / 12)


def _long_interaction() -> str:
    turns = []
    for n in range(1, 11):
        gold = f"SELECT src FROM flights WHERE price > {n * 10}"
        predicted = gold if n % 3 else f"SELECT dst FROM flights WHERE price > {n * 10}"  # turns 3, 6, 9 wrong
        turns.append(f'      - {{question: "turn {n}", gold: "{gold}", predicted: "{predicted}"}}')
    return "\n".join(turns)


BREAKDOWN = f"""
suite: long
database: f.sqlite
pass_if: exact_match
cases:
  - id: ten
    interaction:
{_long_interaction()}
  - id: one
    interaction:
      - {{question: "Cheapest flight per airline?", gold: "SELECT airline_id, min(price) FROM flights GROUP BY airline_id",
         predicted: "SELECT airline_id, min(price) FROM flights GROUP BY airline_id"}}
  - id: two
    interaction:
      - {{question: "US airlines", gold: "SELECT name FROM airlines WHERE country = 'US'",
         predicted: "SELECT name FROM airlines WHERE country = 'DE'"}}
      - {{question: "their flights", gold: "SELECT T2.src FROM airlines AS T1 JOIN flights AS T2 ON T1.id = T2.airline_id WHERE T1.country = 'US' ORDER BY T2.price LIMIT 1",
         predicted: "SELECT T2.src FROM airlines AS T1 JOIN flights AS T2 ON T1.id = T2.airline_id WHERE T1.country = 'US' ORDER BY T2.price LIMIT 1"}}
"""


@WORKERS
def test_by_turn_and_by_difficulty_by_hand_with_1_and_10_turn_interactions(pytester, workers):
    make_db(pytester)
    pytester.makefile(".sqleval.yaml", long=BREAKDOWN)
    result, report = run_report(pytester, *workers)
    suite = report["suites"][0]
    # turn 1: ten/1 ok, one/1 ok, two/1 wrong value; turn 2: ten/2, two/2 ok; turn 3: ten/3 wrong;
    # turn 4: ten/4 ok; >4: ten/5..10 with 6 and 9 wrong -> 4 of 6
    by_turn = {bucket: {k: v for k, v in row.items() if k != "intervals"} for bucket, row in suite["by_turn"].items()}
    # each row's Wilson interval: 0 of 1 (turn 3) is [0, z^2 / (1 + z^2)], 1 of 1 (turn 4) [1 / (1 + z^2), 1]
    z2 = 1.959963984540054 ** 2
    assert suite["by_turn"]["3"]["intervals"]["question_match"] == pytest.approx([0.0, z2 / (1 + z2)], abs=1e-12)
    assert suite["by_turn"]["4"]["intervals"]["execution_accuracy"] == pytest.approx([1 / (1 + z2), 1.0], abs=1e-12)
    assert by_turn == {
        "1": {"turns": 3, "question_match": pytest.approx(2 / 3), "execution_accuracy": pytest.approx(2 / 3)},
        "2": {"turns": 2, "question_match": 1.0, "execution_accuracy": 1.0},
        "3": {"turns": 1, "question_match": 0.0, "execution_accuracy": 0.0},
        "4": {"turns": 1, "question_match": 1.0, "execution_accuracy": 1.0},
        ">4": {"turns": 6, "question_match": pytest.approx(4 / 6), "execution_accuracy": pytest.approx(4 / 6)},
    }
    metrics = suite["metrics"]
    assert metrics["question_match"] == pytest.approx(9 / 13)
    assert metrics["interaction_match"] == pytest.approx(1 / 3)  # only "one"
    # Spider hardness: the WHERE turns are easy (c1 = 1); GROUP BY with 2 select items and 1 aggregate is
    # medium (others = 1); two/2 has where + order + limit + 1 join (c1 = 4) -> extra
    difficulties = {c["id"]: c["difficulty"] for c in report["cases"]}
    assert difficulties["ten/7"] == "easy" and difficulties["one/1"] == "medium"
    assert difficulties["two/2"] == "extra" and difficulties["two/1"] == "easy"
    by_difficulty = suite["by_difficulty"]
    assert by_difficulty["easy"]["cases"] == 11 and by_difficulty["easy"]["exact_match"] == pytest.approx(7 / 11)
    assert by_difficulty["medium"]["cases"] == 1 and by_difficulty["medium"]["exact_match"] == 1.0
    assert by_difficulty["extra"]["cases"] == 1 and by_difficulty["extra"]["exact_match"] == 1.0


@WORKERS
def test_clause_subset_pass_if_on_interaction_turns(pytester, workers):
    make_db(pytester)
    pytester.makefile(".sqleval.yaml", sub=textwrap.dedent("""
        suite: sub
        database: f.sqlite
        pass_if: exact_match(select, where)
        cases:
          - id: t
            interaction:
              - {gold: "SELECT name FROM airlines ORDER BY name", predicted: "SELECT name FROM airlines ORDER BY id"}
              - {gold: "SELECT name FROM airlines WHERE country = 'US'",
                 predicted: "SELECT name FROM airlines WHERE country = 'US' LIMIT 5"}
          - id: u
            interaction:
              - {gold: "SELECT name FROM airlines", predicted: "SELECT name FROM airlines"}
              - {gold: "SELECT name FROM airlines WHERE country = 'US'",
                 predicted: "SELECT country FROM airlines WHERE country = 'US'"}
    """))
    _, report = run_report(pytester, *workers)
    cases = {c["id"]: c for c in report["cases"]}
    assert {i: c["outcome"] for i, c in cases.items()} == {"t/1": "passed", "t/2": "passed",
                                                          "u/1": "passed", "u/2": "missed"}
    assert cases["t/1"]["exact_match"] is False and cases["t/1"]["clauses"]["order"] is False  # full EM still recorded
    metrics = report["suites"][0]["metrics"]
    assert metrics["question_match"] == 0.75 and metrics["interaction_match"] == 0.5


OUTSIDE_SPIDER = [
    # (gold, prediction, exact match, the clauses that differ)
    ("WITH x AS (SELECT src FROM flights WHERE price > 100) SELECT src FROM x",
     "WITH y AS (SELECT src FROM flights WHERE price > 100) SELECT src FROM y", True, set()),
    ("SELECT name, rank() OVER (ORDER BY price) FROM flights JOIN airlines ON flights.airline_id = airlines.id",
     "SELECT name, rank() OVER (ORDER BY price DESC) FROM flights JOIN airlines ON flights.airline_id = airlines.id",
     False, {"select", "select_no_agg"}),
    ("SELECT CASE WHEN price > 100 THEN 'hi' ELSE 'lo' END FROM flights",
     "SELECT CASE WHEN price > 200 THEN 'hi' ELSE 'lo' END FROM flights", False, {"select", "select_no_agg"}),
    ("SELECT upper(name) FROM airlines WHERE name LIKE 'J%'",
     "SELECT upper(name) FROM airlines WHERE name LIKE 'D%'", False, {"where"}),
    ('SELECT "name" FROM "airlines" WHERE "country" = \'US\'', "SELECT name FROM airlines WHERE country = 'US'",
     True, set()),
    ("SELECT main.airlines.name FROM main.airlines", "SELECT name FROM airlines", True, set()),
    ("SELECT substr(name, 1, 2) || '-' FROM airlines", "SELECT substr(name, 1, 3) || '-' FROM airlines",
     False, {"select", "select_no_agg"}),
]


@WORKERS
def test_sqleval_profile_reads_sql_outside_spiders_grammar_per_clause(pytester, workers):
    make_db(pytester)
    cases = "\n".join(
        f"      - {{gold: {json.dumps(g)}, predicted: {json.dumps(p)}}}" for g, p, _, _ in OUTSIDE_SPIDER)
    pytester.makefile(".sqleval.yaml", odd=f"suite: odd\ndatabase: f.sqlite\npass_if: exact_match\n"
                                           f"cases:\n  - id: x\n    interaction:\n{cases}\n")
    result, report = run_report(pytester, *workers)
    records = sorted(report["cases"], key=lambda c: c["turn"])
    assert len(records) == len(OUTSIDE_SPIDER)
    for record, (gold, _, match, differ) in zip(records, OUTSIDE_SPIDER):
        assert record["outcome"] == ("passed" if match else "missed"), gold
        assert record["exact_match"] is match, gold
        assert {k for k, v in record["clauses"].items() if v is False} == differ, gold


TABLES_JSON = [{
    "db_id": "f",
    "table_names": ["airlines", "flights"], "table_names_original": ["airlines", "flights"],
    "column_names": [[-1, "*"], [0, "id"], [0, "name"], [0, "country"], [1, "id"], [1, "airline id"], [1, "src"],
                     [1, "dst"], [1, "price"]],
    "column_names_original": [[-1, "*"], [0, "id"], [0, "name"], [0, "country"], [1, "id"], [1, "airline_id"],
                              [1, "src"], [1, "dst"], [1, "price"]],
    "column_types": ["text", "number", "text", "text", "number", "number", "text", "text", "number"],
    "primary_keys": [1, 4],
    "foreign_keys": [[5, 1]],
}]

SCHEMA_TURNS = [
    ("SELECT T1.name FROM airlines AS T1 JOIN flights AS T2 ON T1.id = T2.airline_id WHERE T2.price > 100",
     "SELECT a.name FROM flights AS f JOIN airlines AS a ON f.airline_id = a.id WHERE f.price > 100"),
    ("SELECT T2.airline_id FROM airlines AS T1 JOIN flights AS T2 ON T1.id = T2.airline_id",
     "SELECT T1.id FROM airlines AS T1 JOIN flights AS T2 ON T1.id = T2.airline_id"),
    ("SELECT count(*) FROM flights GROUP BY airline_id", "SELECT count(*) FROM flights GROUP BY src"),
    ("SELECT name FROM airlines ORDER BY name DESC LIMIT 1", "SELECT name FROM airlines ORDER BY name LIMIT 1"),
]


@pytest.mark.parametrize("profile", ["spider", "sqleval"])
def test_exact_match_with_a_tables_json_schema_equals_the_live_database(pytester, profile):
    make_db(pytester)
    (pytester.path / "tables.json").write_text(json.dumps(TABLES_JSON))
    turns = "\n".join(f"      - {{gold: {json.dumps(g)}, predicted: {json.dumps(p)}}}" for g, p in SCHEMA_TURNS)
    body = f"pass_if: exact_match\nexact_match: {profile}\ncases:\n  - id: s\n    interaction:\n{turns}\n"
    pytester.makefile(".sqleval.yaml", live=f"suite: live\ndatabase: f.sqlite\n{body}",
                      json_schema=f"suite: json_schema\nschema: {{tables: tables.json, db_id: f}}\n{body}")
    _, report = run_report(pytester)
    verdicts = {}
    for case in report["cases"]:
        verdicts.setdefault(case["suite"], {})[case["id"]] = (case["exact_match"], case["clauses"])
    assert verdicts["live"] == verdicts["json_schema"]
    live = verdicts["live"]
    assert live["s/1"][0] is True  # aliases and join order differ, the query is the same
    assert live["s/3"][0] is False and live["s/3"][1]["group"] is False
    assert live["s/2"][0] is True  # the joined foreign key and the key it names are one column
    assert live["s/4"][0] is False and live["s/4"][1]["order"] is False  # DESC against ASC in both
