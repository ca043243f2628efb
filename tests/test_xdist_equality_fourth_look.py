"""QA, fourth look: "evaluation runs in parallel with pytest-xdist, and the aggregates are the same as a serial run".

Generated suites nobody tuned (a seeded ``random.Random``, fixed seeds: deterministic): six suite files on real
SQLite files, a DuckDB file, a PostgreSQL database and one built from a setup script on the server, and SQLite variants
(test-suite accuracy); cases that pass, miss (wrong rows, syntax errors, rejected statements, timeouts, row caps,
missing predictions) and error (a broken gold); SParC-style interactions with a Spider ``schema:``; groups of
identical gold SQL; user metrics registered through the plugin's hooks (in the rootdir's conftest.py and in one
below it, which the xdist controller never loads); tags, thresholds, and a baseline made by a first run. Each configuration runs serially, with ``-n 2``, ``-n 3`` and
with ``--dist loadfile|loadgroup|worksteal``; the JSON reports must be equal but for the run block's clock facts
(values and key order), and so must the exit status, the terminal summary, the Markdown and HTML reports and the
JUnit XML. Shards merged with ``sqleval merge`` (and rendered with ``sqleval report``) must equal the unsharded run.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import missing_dependency, require_module
from test_interactions_third_look import SPARC_TABLES

SEED = 20261202

# --------------------------------------------------------------------------- the generated project
SHOPS = ["Avionics", "Engines", "Cabin", "Paint", "Wheels"]
PART_NAMES = ["valve", "pump", "seal", "panel", "bolt", "fan", "duct", "gear", "lamp", "wire"]


def _parts(rng: random.Random, n: int) -> list[tuple]:
    return [(i, rng.randint(1, len(SHOPS)), rng.choice(PART_NAMES), round(rng.uniform(1, 500), 2), rng.randint(0, 9))
            for i in range(1, n + 1)]


SCHEMA_SQL = [
    "CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
    "CREATE TABLE parts (id INTEGER PRIMARY KEY, shop_id INTEGER REFERENCES shops(id), name TEXT, cost REAL, qty INTEGER)",
]

#: Gold templates over shops/parts; {k} is drawn per case (so identical golds repeat, in text that varies).
GOLDS = [
    "SELECT name FROM parts WHERE qty > {k} ORDER BY id",
    "SELECT count(*) FROM parts WHERE shop_id = {s}",
    "SELECT shop_id, count(*) FROM parts GROUP BY shop_id ORDER BY shop_id",
    "SELECT s.name, sum(p.qty) FROM parts AS p JOIN shops AS s ON p.shop_id = s.id GROUP BY s.name ORDER BY s.name",
    "SELECT max(cost) FROM parts WHERE name = '{p}'",
    "SELECT id, cost FROM parts WHERE cost > {c} AND qty < {k} ORDER BY id",
    "SELECT DISTINCT name FROM parts WHERE shop_id IN (SELECT id FROM shops WHERE name LIKE '%{l}%') ORDER BY name",
]


def _gold(rng: random.Random) -> str:
    template = rng.choice(GOLDS)
    return template.format(k=rng.randint(3, 6), s=rng.randint(1, 3), p=rng.choice(PART_NAMES[:4]),
                           c=rng.choice([100, 250]), l=rng.choice("aie"))


def _respace(rng: random.Random, sql: str) -> str:
    """The same gold in other white space (and a trailing semicolon): one per-gold group all the same."""
    words = sql.split(" ")
    return "".join(w + rng.choice([" ", "  ", "\n    "]) for w in words[:-1]) + words[-1] + rng.choice(["", ";"])


def _prediction(rng: random.Random, gold: str, kind: str, *, engine: str) -> str | None:
    if kind == "right":
        return gold
    if kind == "wrong":  # another (valid) query over the same tables
        return rng.choice(["SELECT name FROM parts WHERE qty > 7 ORDER BY id", "SELECT count(*) FROM parts",
                           "SELECT shop_id FROM parts GROUP BY shop_id ORDER BY shop_id",
                           "SELECT id, cost FROM parts WHERE qty < 2 ORDER BY id"])
    if kind == "syntax":
        return rng.choice(["SELEC name FROM parts", "SELECT nope FROM parts", "SELECT name FROM nowhere"])
    if kind == "rejected":
        return rng.choice(["DELETE FROM parts", "SELECT 1; SELECT 2", "UPDATE parts SET qty = 0"])
    if kind == "rows":  # over the suite's row cap
        return "SELECT a.id, b.id FROM parts AS a, parts AS b"
    if kind == "timeout":
        if engine == "postgresql":
            return "SELECT count(*) FROM generate_series(1, 2000000000) AS g"
        return ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                "SELECT count(*) FROM c")
    if kind == "none":
        return None
    raise AssertionError(kind)


KINDS = ["right"] * 6 + ["wrong"] * 3 + ["syntax", "rejected", "rows", "none"]


def _flat_suite(rng: random.Random, name: str, database: str, n: int, *, engine: str, extra: list[str],
                timeouts: int) -> tuple[str, dict[str, str | None]]:
    """A suite of single cases; returns its YAML and the ids with their (baseline) predictions."""
    lines = [f"suite: {name}", f"database: {json.dumps(database)}", *extra, "cases:"]
    predictions: dict[str, str | None] = {}
    timeout_at = set(rng.sample(range(n), timeouts))
    golds: list[str] = []
    for i in range(n):
        gold = rng.choice(golds) if golds and rng.random() < 0.35 else _gold(rng)
        golds.append(gold)
        kind = "timeout" if i in timeout_at else rng.choice(KINDS)
        case_id = f"{name[0]}{i:02d}"
        predictions[case_id] = _prediction(rng, gold, kind, engine=engine)
        lines += [f"  - id: {case_id}", f"    question: {json.dumps(f'question {i} of {name}')}",
                  f"    gold: {json.dumps(_respace(rng, gold))}"]
        tags = sorted(rng.sample(["agg", "join", "filter", "slow"], rng.randint(0, 2)))
        if tags:
            lines.append(f"    tags: [{', '.join(tags)}]")
        if rng.random() < 0.15:
            lines.append(f"    difficulty: {rng.choice(['easy', 'Hard', 'tricky'])}")
        if predictions[case_id] is not None:
            lines.append(f"    predicted: {json.dumps(predictions[case_id])}")
    # a suite error: a gold that fails (its prediction is fine)
    lines += [f"  - id: {name[0]}-broken", "    gold: SELECT missing_column FROM parts",
              "    predicted: SELECT name FROM parts"]
    predictions[f"{name[0]}-broken"] = "SELECT name FROM parts"
    return "\n".join(lines) + "\n", predictions


FLIGHTS_SQL = [
    "CREATE TABLE airlines (id INTEGER PRIMARY KEY, name TEXT, country TEXT)",
    "CREATE TABLE flights (id INTEGER PRIMARY KEY, airline_id INTEGER REFERENCES airlines(id), src TEXT, dst TEXT, "
    "price INTEGER)",
]
SPIDER_TABLES = SPARC_TABLES  # the flights schema of the SParC differential test
TURNS = [
    "SELECT name FROM airlines",
    "SELECT name FROM airlines WHERE country = '{c}'",
    "SELECT count(*) FROM airlines WHERE country = '{c}'",
    "SELECT src FROM flights WHERE price > {p}",
    "SELECT dst FROM flights ORDER BY price LIMIT {n}",
    "SELECT T2.name FROM flights AS T1 JOIN airlines AS T2 ON T1.airline_id = T2.id WHERE T1.price < {p}",
    "SELECT name FROM airlines WHERE id IN (SELECT airline_id FROM flights)",
    "SELECT src FROM flights UNION SELECT dst FROM flights",
    "SELECT avg(price), max(price) FROM flights GROUP BY airline_id",
    "SELECT src, count(*) FROM flights GROUP BY src HAVING count(*) > {n} ORDER BY count(*) DESC",
]


def _turn(rng: random.Random) -> str:
    return rng.choice(TURNS).format(c=rng.choice(["US", "DE", "FR"]), p=rng.choice([100, 200, 300]),
                                    n=rng.randint(1, 3))


def _turn_prediction(rng: random.Random, gold: str) -> str | None:
    roll = rng.random()
    if roll < 0.55:
        return gold
    if roll < 0.7:  # another value: exact match (values ignored) holds, execution may not
        return gold.replace("'US'", "'FR'").replace("> 100", "> 300")
    if roll < 0.85:
        return _turn(rng)
    if roll < 0.93:
        return "SELECT name FROM airlines AS a LEFT JOIN flights AS f ON a.id = f.airline_id"  # outside the grammar
    return None


def _interaction_suite(rng: random.Random, n_interactions: int) -> tuple[str, dict[str, str | None]]:
    lines = ["suite: conversations", "database: beta.sqlite", "schema: {tables: tables.json, db_id: f}",
             "exact_match: spider", "difficulty: spider", "pass_if: exact_match",
             "thresholds: {question_match: 0.4, interaction_match: 0.1, exact_match: 0.35}", "cases:"]
    predictions: dict[str, str | None] = {}
    for i in range(n_interactions):
        case_id = f"talk{i:02d}"
        lines += [f"  - id: {case_id}", f"    tags: [{rng.choice(['short', 'long'])}]", "    interaction:"]
        for t in range(1, rng.randint(1, 6) + 1):
            gold = _turn(rng)
            pred = _turn_prediction(rng, gold)
            predictions[f"{case_id}/{t}"] = pred
            turn = {"question": f"turn {t}", "gold": gold}
            if pred is not None:
                turn["predicted"] = pred
            lines.append(f"      - {json.dumps(turn)}")
        if i == 2:  # a turn whose gold fails: the interaction leaves the interaction metrics
            t += 1
            lines.append('      - {"question": "broken", "gold": "SELECT nosuch FROM flights", '
                         '"predicted": "SELECT src FROM flights"}')
            predictions[f"{case_id}/{t}"] = "SELECT src FROM flights"
    for i in range(6):  # single cases beside the interactions
        gold = _turn(rng)
        pred = _turn_prediction(rng, gold)
        predictions[f"single{i}"] = pred
        lines += [f"  - id: single{i}", f"    gold: {json.dumps(gold)}"]
        if pred is not None:
            lines.append(f"    predicted: {json.dumps(pred)}")
    return "\n".join(lines) + "\n", predictions


CONFTEST = '''
import pytest
from pytest_sqleval.registry import Metric


def single_row(record, context):
    result = context.prediction_result
    return None if result is None else len(result.rows) == 1


def pytest_sqleval_register_metrics(registry):
    registry.register("short_sql", kind="rate", label="short SQL (< 40 chars)", population="scored")
    registry.register("sql_length", kind="mean", direction="lower", label="SQL length / 100")
    registry.register(Metric("single_row", kind="rate", score=single_row, label="single-row answers"))


def pytest_sqleval_score_case(prediction, record, context):
    record["short_sql"] = len(prediction or "") < 40
    record["sql_length"] = None if context.prediction_result is None else len(prediction) / 100


def pytest_sqleval_terminal_section(terminalreporter, summary, records):
    m = summary.aggregates["metrics"]
    terminalreporter.write_line(f"my-reporter: {summary.name} {len(records)} records "
                                f"EX={m.get('execution_accuracy')!r} len={m.get('sql_length')!r}")


def pytest_sqleval_update_json(report):
    report["my_reporter"] = {"suites": [s["name"] for s in report["suites"]], "cases": len(report["cases"])}
'''


#: A folder below the rootdir (whose conftest.py the xdist controller never loads) with a metric of its own, a
#: PostgreSQL database built from a setup script (once per xdist worker) and test-suite accuracy over variants.
SUB_CONFTEST = '''
def pytest_sqleval_register_metrics(registry):
    registry.register("deep_metric", kind="mean", direction="lower", label="deep metric (sub/conftest.py)")


def pytest_sqleval_score_case(prediction, record):
    record["deep_metric"] = len(prediction or "") / 50
'''
SETUP_SQL = """CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER, w TEXT);
INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'a'), (4, 40, 'c'), (5, 50, 'b');
"""


def _sub_suites(rng: random.Random, root: Path, postgres_url: str) -> dict[str, tuple[str, dict[str, str | None]]]:
    (root / "sub" / "variants").mkdir(parents=True)
    (root / "sub" / "conftest.py").write_text(SUB_CONFTEST, encoding="utf-8")
    (root / "sub" / "eps.sql").write_text(SETUP_SQL, encoding="utf-8")
    for n in range(3):
        with sqlite3.connect(root / "sub" / "variants" / f"v{n}.sqlite") as conn:
            conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER, w TEXT)")
            conn.executemany("INSERT INTO t VALUES (?, ?, ?)",
                             [(i, rng.randint(1, 5) * 10, rng.choice("abc")) for i in range(1, 7)])
    golds = ["SELECT v FROM t WHERE w = '{w}' ORDER BY id", "SELECT count(*) FROM t WHERE v > {v}",
             "SELECT w, sum(v) FROM t GROUP BY w ORDER BY w", "SELECT max(v) FROM t"]
    wrong = ["SELECT v FROM t WHERE w = 'b' ORDER BY id", "SELECT 3", "SELECT w, max(v) FROM t GROUP BY w ORDER BY w",
             "SELECT v FROM t", "SELECT nope FROM t", "SELECT 50"]
    out = {}
    for name, database in (("eps", {"url": postgres_url, "setup": ["eps.sql"]}), ("variants", None)):
        lines = [f"suite: {name}", "pass_if: execution_match and deep_metric >= 0.4",
                 "thresholds: {deep_metric: 0.7, by_gold_sql.execution_accuracy: 0.2}"]
        lines.append(f"database: {json.dumps(database)}" if database else 'databases: "variants/*.sqlite"')
        lines.append("cases:")
        predictions: dict[str, str | None] = {}
        for i in range(10):
            gold = rng.choice(golds).format(w=rng.choice("abc"), v=rng.choice([10, 20, 30]))
            pred = gold if rng.random() < 0.5 else rng.choice(wrong)
            case_id = f"{name}{i}"
            predictions[case_id] = pred
            tags = f", tags: [{rng.choice(['x', 'agg'])}]" if rng.random() < 0.6 else ""
            lines.append(f"  - {{id: {case_id}, gold: {json.dumps(gold)}, predicted: {json.dumps(pred)}{tags}}}")
        out[name] = ("\n".join(lines) + "\n", predictions)
    return out


def _candidate(rng: random.Random, baseline: dict[str, str | None], golds: dict[str, str]) -> list[dict]:
    """Another model: most predictions kept, some fixed, some broken, some missing or null."""
    rows = []
    for case_id, sql in baseline.items():
        roll = rng.random()
        if roll < 0.08:
            continue  # not mentioned: a no_prediction miss
        if roll < 0.14:
            sql = None
        elif roll < 0.30 and case_id in golds:
            sql = golds[case_id]  # fixed
        elif roll < 0.45:
            sql = rng.choice(["SELECT count(*) FROM parts", "SELECT name FROM airlines", "SELEC 1"])
        rows.append({"id": case_id, "sql": sql})
    return rows


def build_project(root: Path, postgres_url: str, pg_database: str) -> None:
    import duckdb
    import sqlalchemy as sa

    rng = random.Random(SEED)
    shops = list(enumerate(SHOPS, start=1))
    # SQLite: alpha
    with sqlite3.connect(root / "alpha.sqlite") as conn:
        for statement in SCHEMA_SQL:
            conn.execute(statement)
        conn.executemany("INSERT INTO shops VALUES (?, ?)", shops)
        conn.executemany("INSERT INTO parts VALUES (?, ?, ?, ?, ?)", _parts(rng, 40))
    # SQLite: the flights of the interactions
    with sqlite3.connect(root / "beta.sqlite") as conn:
        for statement in FLIGHTS_SQL:
            conn.execute(statement)
        conn.executemany("INSERT INTO airlines VALUES (?, ?, ?)",
                         [(i, f"air{i}", rng.choice(["US", "DE", "FR"])) for i in range(1, 7)])
        conn.executemany("INSERT INTO flights VALUES (?, ?, ?, ?, ?)",
                         [(i, rng.randint(1, 6), rng.choice("ABCDE"), rng.choice("ABCDE"), rng.randint(50, 400))
                          for i in range(1, 30)])
    (root / "tables.json").write_text(json.dumps(SPIDER_TABLES))
    # DuckDB: gamma
    connection = duckdb.connect(str(root / "gamma.duckdb"))
    for statement in SCHEMA_SQL:
        connection.execute(statement.replace(" REFERENCES shops(id)", ""))
    connection.executemany("INSERT INTO shops VALUES (?, ?)", shops)
    connection.executemany("INSERT INTO parts VALUES (?, ?, ?, ?, ?)", _parts(rng, 35))
    connection.close()
    # PostgreSQL: delta
    url = sa.make_url(postgres_url).set(database=pg_database)
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        for statement in SCHEMA_SQL:
            connection.execute(sa.text(statement.replace("REAL", "DOUBLE PRECISION")))
        connection.execute(sa.text("INSERT INTO shops VALUES (:i, :n)"), [{"i": i, "n": n} for i, n in shops])
        connection.execute(sa.text("INSERT INTO parts VALUES (:a, :b, :c, :d, :e)"),
                           [dict(zip("abcde", row)) for row in _parts(rng, 30)])
    engine.dispose()

    suites = {
        "alpha": _flat_suite(rng, "alpha", "alpha.sqlite", 34, engine="sqlite", timeouts=2, extra=[
            "timeout: 1", "max_rows: 60",
            "thresholds: {execution_accuracy: 0.3, soft_f1: 0.4, error_count: 12, short_sql: 0.2, "
            "by_gold_sql.soft_f1: 0.2, by_difficulty.hard.execution_accuracy: 0.1}"]),
        "conversations": _interaction_suite(rng, 9),
        "gamma": _flat_suite(rng, "gamma", "gamma.duckdb", 18, engine="duckdb", timeouts=0, extra=[
            "max_rows: 60", "pass_if: execution_match or soft_f1 >= 0.75",
            "thresholds: {execution_accuracy: 0.55, by_tag.agg.soft_f1: 0.2}"]),
        "delta": _flat_suite(rng, "delta", url.render_as_string(hide_password=False), 14, engine="postgresql",
                             timeouts=1, extra=["timeout: 1", "max_rows: 60",
                                                "thresholds: {valid_syntax: 0.5, single_row: 0.1}"]),
    }
    sub = _sub_suites(rng, root, postgres_url)
    golds: dict[str, str] = {}
    for name, (text, predictions) in suites.items():
        (root / f"{name}.sqleval.yaml").write_text(text, encoding="utf-8")
        for case_id in predictions:
            golds.setdefault(case_id, "")
    for name, (text, predictions) in sub.items():
        (root / "sub" / f"{name}.sqleval.yaml").write_text(text, encoding="utf-8")
        for case_id in predictions:
            golds.setdefault(case_id, "")
    # the candidate model's golds, to "fix" cases: read back from the suites (the generated text)
    import yaml

    for path in [root / f"{name}.sqleval.yaml" for name in suites] + [root / "sub" / f"{n}.sqleval.yaml" for n in sub]:
        document = yaml.safe_load(path.read_text())
        for case in document["cases"]:
            if "interaction" in case:
                for t, turn in enumerate(case["interaction"], start=1):
                    golds[f"{case['id']}/{t}"] = turn["gold"]
            else:
                golds[case["id"]] = case["gold"]
    baseline = {k: v for _, predictions in [*suites.values(), *sub.values()] for k, v in predictions.items()}
    rows = _candidate(random.Random(SEED + 1), baseline, golds)
    (root / "candidate.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (root / "conftest.py").write_text(CONFTEST, encoding="utf-8")


# --------------------------------------------------------------------------- running and comparing
#: The run block's facts of the clock (and nothing else) may differ between two runs of the same cases.
CLOCK_KEYS = ("started", "finished", "duration_s")


def comparable(report: dict) -> dict:
    """The report without the run block's clock facts (a run's report has no host or worker facts at all)."""
    report = json.loads(json.dumps(report))
    for key in CLOCK_KEYS:
        report["run"].pop(key)
    for entry in report["run"].get("merged_from") or []:
        entry.pop("duration_s", None)
    return report


_DESELECTED = re.compile(r" \d+ deselected,")
_TIMING = re.compile(r" in \d+(\.\d+)?s( \(\d+:\d\d:\d\d\))?")


def summary_lines(stdout: str) -> list[str]:
    """The terminal output from the sqleval summary on, with the final line's time left out, and without pytest's
    own short test summary (its lines come in the order the cases finished, which xdist does not keep)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "sqleval" in line and line.startswith("="))
    end = next((i for i, line in enumerate(lines) if "short test summary info" in line), len(lines) - 1)
    # pytest's final line: its time, and the deselected count an xdist controller does not know (the sqleval summary
    # says how many cases were deselected, in both runs) are left out
    final = _DESELECTED.sub("", _TIMING.sub("", lines[-1])).strip("= ")
    return [_TIMING.sub("", line).strip("= ") if line.startswith("=") else line for line in lines[start:end]] + [final]


def run(root: Path, name: str, *args: str) -> dict:
    """``pytest --sqleval`` in a subprocess: the run's exit status, summary, JSON, Markdown, HTML and JUnit XML."""
    json_path, md_path, html_path = root / "report.json", root / "report.md", root / "report.html"  # named in the summary
    junit = root / f"{name}.xml"
    for path in (json_path, md_path, html_path, junit):
        path.unlink(missing_ok=True)
    command = [sys.executable, "-m", "pytest", "--sqleval", "-p", "no:cacheprovider", f"--sqleval-json={json_path}",
               f"--sqleval-markdown={md_path}", f"--sqleval-html={html_path}", f"--junitxml={junit}", *args]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600)
    assert json_path.exists(), done.stdout + done.stderr
    json_path, md_path, html_path = (path.replace(root / f"{name}{path.suffix}")
                                     for path in (json_path, md_path, html_path))
    return {"ret": done.returncode, "stdout": done.stdout, "summary": summary_lines(done.stdout),
            "json": json.loads(json_path.read_text()), "markdown": md_path.read_text(),
            "html": html_path.read_text(), "junit": junit_cases(junit), "name": name}


def junit_cases(path: Path) -> list[tuple]:
    """Every testcase of a JUnit XML (a case with its ``sqleval`` record property, or a gate) without its time, in
    name order (xdist writes them in the order they finished)."""
    import xml.etree.ElementTree as ET

    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        attributes = {k: v for k, v in case.attrib.items() if k != "time"}
        children = [(child.tag, sorted(child.attrib.items()), child.text or "",
                     [sorted(p.attrib.items()) for p in child]) for child in case]
        cases.append((attributes.get("classname"), attributes.get("name"), sorted(attributes.items()), children))
    return sorted(cases)


GATES = ("--sqleval-predictions=candidate.jsonl", "--sqleval-baseline=baseline.json", "--sqleval-max-regressed=3",
         "--sqleval-fail-under-baseline=execution_accuracy", "--sqleval-fail-under-baseline=overall:soft_f1=0.01",
         "--sqleval-fail-under-baseline=overall:sql_length", "--sqleval-fail-under-baseline=alpha:pass_rate",
         "--sqleval-threshold=overall:execution_accuracy=0.45", "--sqleval-threshold=overall:short_sql=0.3")

MODES = {
    "serial": (),
    "n2": ("-n", "2"),
    "n3": ("-n", "3"),
    "loadfile": ("-n", "2", "--dist", "loadfile"),
    "loadgroup": ("-n", "2", "--dist", "loadgroup"),
    "worksteal": ("-n", "2", "--dist", "worksteal"),
}


def assert_same_text(actual: str, expected: str, label: str) -> None:
    import difflib

    diff = list(difflib.unified_diff(expected.splitlines(), actual.splitlines(), "expected", "actual", lineterm=""))
    assert not diff, f"{label}:\n" + "\n".join(diff[:60])


def assert_same_run(expected: dict, actual: dict) -> None:
    label = f"{actual['name']} against {expected['name']}"
    assert actual["ret"] == expected["ret"], label
    a, b = comparable(expected["json"]), comparable(actual["json"])
    for key in sorted(set(a) | set(b)):
        assert b.get(key) == a.get(key), f"{label}: report[{key!r}] differs"
    assert json.dumps(b) == json.dumps(a), f"{label}: the same values in another order"
    assert actual["summary"] == expected["summary"], label
    assert_same_text(actual["markdown"], expected["markdown"], f"{label}: Markdown")
    assert_same_text(actual["html"], expected["html"], f"{label}: HTML")
    assert actual["junit"] == expected["junit"], f"{label}: JUnit XML"


@pytest.fixture(scope="module")
def project(tmp_path_factory, request):
    """The generated project, with a PostgreSQL database of its own, and its baseline report."""
    require_module("duckdb")
    require_module("duckdb_engine")
    import sqlalchemy as sa

    postgres_url = request.getfixturevalue("postgres_url")
    root = tmp_path_factory.mktemp("qa4")
    name = f"qa4_xdist_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f"CREATE DATABASE {name}"))
    except Exception as exc:  # noqa: BLE001
        missing_dependency(f"cannot create a PostgreSQL database: {exc}")
    try:
        build_project(root, postgres_url, name)
        first = run(root, "first")  # the deployed model: the suites' own predictions, serially
        (root / "first.json").replace(root / "baseline.json")
        assert first["ret"] == 1
        yield root
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


@pytest.fixture(scope="module")
def serial(project):
    return run(project, "serial", *GATES)


def test_the_generated_runs_cover_what_they_claim(project, serial):
    """The comparison below is only worth something if the runs hold every kind of case and gate."""
    report = serial["json"]
    cases = report["cases"]
    kinds = {(c["error"] or {}).get("kind") for c in cases}
    assert {"syntax", "rejected", "timeout", "row_limit", "no_prediction"} <= kinds, kinds
    outcomes = {c["outcome"] for c in cases}
    assert outcomes == {"passed", "missed", "error"}
    suites = {s["name"]: s for s in report["suites"]}
    assert set(suites) == {"alpha", "conversations", "gamma", "delta", "eps", "variants"}
    assert "test_suite_accuracy" in suites["variants"]["metrics"]
    assert "deep_metric" in suites["eps"]["metrics"] and "deep_metric" in report["metric_definitions"]
    eps_databases = {c["database"] for c in cases if c["suite"] == "eps"}  # one name, whichever worker built it
    assert len(eps_databases) == 1 and eps_databases.pop().endswith("/postgres (built from eps.sql)")
    conversations = next(s for s in report["suites"] if s["name"] == "conversations")
    assert {"question_match", "interaction_match"} <= set(conversations["metrics"])
    assert ">4" in conversations["by_turn"] or "4" in conversations["by_turn"]
    assert {c["difficulty_source"] for c in cases if c["suite"] == "conversations"} >= {"spider"}
    for suite in report["suites"]:
        assert suite["by_gold_sql"]["groups"] < suite["cases"], suite["name"]  # identical golds grouped
        assert {"short_sql", "single_row"} <= set(suite["metrics"]), suite["name"]
        # sub/conftest.py scores the suites of its folder only, as pytest applies a conftest.py's hooks
        assert ("deep_metric" in suite["metrics"]) == (suite["name"] in ("eps", "variants")), suite["name"]
    assert report["baseline"]["overall"]["counts"]["regressed"] > 0
    assert report["baseline"]["overall"]["counts"]["fixed"] > 0
    assert {g["kind"] for g in report["gates"]} == {"threshold", "max_regressed", "fail_under_baseline"}
    assert {g["passed"] for g in report["gates"]} == {True, False}
    assert "sql_length" in report["baseline"]["overall"]["metrics"]
    assert report["my_reporter"]["cases"] == len(cases)
    assert serial["ret"] == 1
    assert any(line.startswith("my-reporter: delta") for line in serial["summary"])
    assert any(case[0] == "sqleval.gates" for case in serial["junit"])  # the gates are testcases too


@pytest.mark.parametrize("mode", [m for m in MODES if m != "serial"])
def test_parallel_run_equals_the_serial_run(project, serial, mode):
    assert_same_run(serial, run(project, mode, *GATES, *MODES[mode]))


def _sqleval(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_sqleval.cli", *args], cwd=project, capture_output=True,
                          text=True, timeout=300)


def test_merged_shards_equal_the_unsharded_run(project, serial):
    shards = [run(project, f"shard{k}", *GATES, f"--sqleval-shard={k}/3", *(("-n", "2") if k == 2 else ()))
              for k in (1, 2, 3)]
    for shard in shards:  # a shard's gates never fail it; its broken golds do
        assert shard["ret"] == int(any(c["outcome"] == "error" for c in shard["json"]["cases"])), shard["name"]
    done = _sqleval(project, "merge", *(f"shard{k}.json" for k in (1, 2, 3)), "-o", "merged.json",
                    "--baseline", "baseline.json")
    assert done.returncode == 0, done.stdout + done.stderr
    whole, parts = serial["json"], json.loads((project / "merged.json").read_text())
    for key in ("suites", "overall", "baseline", "gates", "cases", "metric_definitions"):
        assert json.dumps(parts.get(key)) == json.dumps(whole.get(key)), key  # byte-identical, in the same order
    gate = _sqleval(project, "gate", "merged.json")
    assert gate.returncode == serial["ret"], gate.stdout + gate.stderr
    # the Markdown and HTML of the merged report are those of the unsharded run (its own user metrics included)
    done = _sqleval(project, "report", "merged.json", "--markdown", "merged.md", "--html", "merged.html")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_same_text((project / "merged.md").read_text(), serial["markdown"], "merged Markdown")
    assert_same_text((project / "merged.html").read_text(), serial["html"], "merged HTML")


def test_a_saved_report_renders_the_runs_markdown_and_html(project, serial):
    """`sqleval report` on the run's own JSON: the files the run wrote, byte for byte (README, CI output)."""
    done = _sqleval(project, "report", "serial.json", "--markdown", "again.md", "--html", "again.html")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_same_text((project / "again.md").read_text(), serial["markdown"], "sqleval report Markdown")
    assert_same_text((project / "again.html").read_text(), serial["html"], "sqleval report HTML")


#: A second configuration: cases picked by tag (-m) and one turn deselected (a partial interaction), every miss a
#: failure (--sqleval-strict), against the same baseline (the others are removed pairs).
SELECTED = (*GATES, "-m", "agg or x or long or filter", "--deselect", "conversations.sqleval.yaml::talk01[2]",
            "--sqleval-strict")


def test_a_selected_strict_run_is_the_same_in_parallel(project):
    serial = run(project, "selected-serial", *SELECTED)
    report = serial["json"]
    assert report["run"]["deselected"] > 0 and {c["outcome"] for c in report["cases"]} == {"passed", "failed"}
    assert report["baseline"]["overall"]["counts"]["removed"] > 0
    assert serial["ret"] == 1
    for mode in ("n3", "worksteal"):
        assert_same_run(serial, run(project, f"selected-{mode}", *SELECTED, *MODES[mode]))
