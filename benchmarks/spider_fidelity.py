"""Fidelity of ``exact_match: spider`` and Spider hardness against the official evaluators.

Run from the repository root::

    python benchmarks/spider_fidelity.py [--shared ../shared] [--official-dir PATH]

It reads the public benchmark data under ``<shared>/benchmarks`` (never copied
into this repository) and prints, through the project's own API:

* Spider dev: per published system, our exact match (profile ``spider``) on all
  1034 items beside the official figure, the gold hardness counts and our exact
  match per level;
* SParC dev (ChatGPT zero-shot): question match, interaction match and the
  breakdown by turn, beside the official figures;
* the two official example runs shipped with Spider and SParC, reproduced
  number by number, with per-item agreement read from the failing pairs the
  official script prints.

``--official-dir`` points at a checkout of the official evaluator
(``process_sql.py`` and ``evaluation.py`` of taoyds/spider or
taoyds/test-suite-sql-eval, with NLTK installed); the script then also runs it
on every item and reports per-item agreement.

Files are read the way the official scripts read them: lines are stripped, a
prediction is the text before its first TAB, a blank line closes an
interaction (SParC), and the old SParC script drops a last interaction that no
blank line closes.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_sqleval.metrics.exact_match import exact_match  # noqa: E402
from pytest_sqleval.metrics.hardness import spider_hardness  # noqa: E402
from pytest_sqleval.schema import Schema  # noqa: E402

LEVELS = ("easy", "medium", "hard", "extra")
TURNS = ("1", "2", "3", "4", ">4")

#: The official test-suite-sql-eval run (Spider dev, SParC dev): ``replace("value", "1")`` on every prediction.
TEST_SUITE = {"profile": "spider", "value_placeholder": True}
#: The pre-2019 official scripts behind the example outputs of Spider and SParC.
LEGACY_SPIDER = {"profile": "spider", "legacy_from_check": True}
LEGACY_SPARC = {"profile": "spider", "legacy_from_check": True, "value_placeholder": True}


@dataclass(frozen=True)
class System:
    name: str
    path: str  # under spider_dev/predictions
    official_em: float | None  # the published exact-match figure on all 1034 items
    source: str
    official_ex: float | None = None  # official test-suite execution accuracy on the 972 items with a database


SPIDER_SYSTEMS = (
    System("DAIL-SQL + GPT-4", "raw/DAIL-SQL+GPT-4.txt", 70.0, "DAIL-SQL README", 83.2),
    System("DAIL-SQL + GPT-4 + SC", "raw/DAIL-SQL+GPT-4+self-consistency.txt", 68.7, "DAIL-SQL README"),
    System("Graphix-T5", "raw/graphix_result.txt", 77.1, "Spider leaderboard", 81.0),
    System("DIN-SQL + GPT-4", "derived/din_sql_gpt4.txt", 60.1, "DIN-SQL paper", 83.2),
    System("GPT-4 zero-shot (DIN-SQL repo)", "derived/gpt4_zero_shot_dinrepo.txt", 40.4, "DIN-SQL paper", 73.0),
    System("C3 (ChatGPT)", "raw/C3SQL_predicted_sql.txt", 46.9, "C3 paper", 82.7),
    System("DIN-SQL + CodeX", "derived/din_sql_codex.txt", None, ""),
    System("CodeX few-shot (DIN-SQL repo)", "derived/codex_few_shot_dinrepo.txt", None, ""),
    System("GPT-4 few-shot (DIN-SQL repo)", "derived/gpt4_few_shot_dinrepo.txt", None, ""),
    System("ChatGPT zero-shot (THU-BPM)", "derived/chatgpt_zeroshot_thubpm.txt", None, ""),
)
SPARC_OFFICIAL = {"question": 37.7, "interaction": 20.1}


@dataclass(frozen=True)
class Turn:
    gold: str
    db: str
    pred: str
    interaction: int
    index: int  # 0-based turn index inside its interaction


@dataclass(frozen=True)
class Scored:
    turn: Turn
    level: str
    match: bool


# -- reading files as the official scripts do (the importers' reader: pytest_sqleval.datasets) ---------------
from pytest_sqleval.datasets.importers import read_interactions  # noqa: E402


def paired_turns(gold_path: Path, pred_path: Path, *, keep_unclosed_last: bool = True) -> list[Turn]:
    golds = read_interactions(gold_path, keep_unclosed_last=keep_unclosed_last)
    preds = read_interactions(pred_path, keep_unclosed_last=keep_unclosed_last)
    return [  # zip truncates, as the official scripts do: a missing prediction drops its gold
        Turn(gold[0], gold[1], pred[0], i, j)
        for i, (pred_turns, gold_turns) in enumerate(zip(preds, golds, strict=False))
        for j, (pred, gold) in enumerate(zip(pred_turns, gold_turns, strict=False))
    ]


def load_schemas(tables_json: Path) -> dict[str, Schema]:
    return {entry["db_id"]: Schema.from_spider_entry(entry) for entry in json.loads(tables_json.read_text())}


# -- scoring through the project's API ------------------------------------------------------------
def score(turns: list[Turn], schemas: dict[str, Schema], profile: dict) -> list[Scored]:
    return [
        Scored(t, spider_hardness(t.gold, schemas[t.db]), exact_match(t.gold, t.pred, schemas[t.db], profile=profile).match)
        for t in turns
    ]


def percent(matches: int, total: int) -> float:
    return 100.0 * matches / total if total else 0.0


def by_level(scored: list[Scored]) -> dict[str, tuple[int, float]]:
    counts = Counter(s.level for s in scored)
    hits = Counter(s.level for s in scored if s.match)
    return {level: (counts[level], percent(hits[level], counts[level])) for level in LEVELS}


def by_turn(scored: list[Scored]) -> dict[str, tuple[int, float]]:
    def bucket(s: Scored) -> str:
        return TURNS[min(s.turn.index, 4)]

    counts = Counter(bucket(s) for s in scored)
    hits = Counter(bucket(s) for s in scored if s.match)
    return {turn: (counts[turn], percent(hits[turn], counts[turn])) for turn in TURNS}


def question_match(scored: list[Scored]) -> float:
    return percent(sum(s.match for s in scored), len(scored))


def interaction_match(scored: list[Scored]) -> tuple[int, float]:
    interactions: dict[int, list[bool]] = {}
    for s in scored:
        interactions.setdefault(s.turn.interaction, []).append(s.match)
    return len(interactions), percent(sum(all(v) for v in interactions.values()), len(interactions))


def plugin_verdicts(shared: Path, systems: tuple[System, ...]) -> dict[str, dict[str, list[bool | None]]]:
    """Per system, each item's execution match (profile test-suite) and exact match (profile spider)
    from one ``pytest --sqleval`` run. An execution verdict is ``None`` when the database is not in
    the data (wta_1).
    """
    from spider_suites import evaluate_suites, suite_document, verdicts_by_suite

    spider_dir = shared / "benchmarks" / "spider_dev"
    documents = {}
    for index, system in enumerate(systems):
        turns = paired_turns(spider_dir / "dev_gold.sql", spider_dir / "predictions" / system.path)
        documents[f"system{index:02d}"] = suite_document(f"system{index:02d}", turns, spider_dir)
    report = evaluate_suites(documents)
    execution, exact = verdicts_by_suite(report), verdicts_by_suite(report, "exact_match")
    return {system.name: {"execution_match": execution[f"system{index:02d}"], "exact_match": exact[f"system{index:02d}"]}
            for index, system in enumerate(systems)}


def rate(verdicts: list[bool | None]) -> tuple[int, float]:
    scored = [v for v in verdicts if v is not None]
    return len(scored), percent(sum(scored), len(scored))


# -- the official evaluator, when a checkout is given ------------------------------------------------
class OfficialEvaluator:
    """The official ``process_sql.py`` + ``evaluation.py`` from a checkout, scored per item."""

    def __init__(self, directory: Path, tables_json: Path, database_dir: Path) -> None:
        sys.path.insert(0, str(directory))
        self.process_sql = importlib.import_module("process_sql")
        self.evaluation = importlib.import_module("evaluation")
        self.entries = {e["db_id"]: e for e in json.loads(tables_json.read_text())}
        self.database_dir = database_dir
        self.schemas: dict = {}
        self.kmaps: dict = {}

    def _schema(self, db: str):
        if db not in self.schemas:
            path = self.database_dir / db / f"{db}.sqlite"
            tables = self.process_sql.get_schema(str(path)) if path.exists() else self._schema_from_tables(db)
            self.schemas[db] = self.process_sql.Schema(tables)
            self.kmaps[db] = self.evaluation.build_foreign_key_map(self.entries[db])
        return self.schemas[db]

    def _schema_from_tables(self, db: str) -> dict[str, list[str]]:
        entry = self.entries[db]
        names = [t.lower() for t in entry["table_names_original"]]
        tables: dict[str, list[str]] = {name: [] for name in names}
        for table_index, column in entry["column_names_original"]:
            if table_index >= 0:
                tables[names[table_index]].append(column.lower())
        return tables

    def hardness(self, gold: str, db: str) -> str:
        return self.evaluation.Evaluator().eval_hardness(self.process_sql.get_sql(self._schema(db), gold))

    def exact(self, gold: str, pred: str, db: str, *, value_placeholder: bool) -> bool:
        schema = self._schema(db)
        if value_placeholder:
            pred = pred.replace("value", "1")
        g_sql = self.process_sql.get_sql(schema, gold)
        try:
            p_sql = self.process_sql.get_sql(schema, pred)
        except Exception:  # the official script scores an unreadable prediction against an empty SQL
            p_sql = _official_empty_sql()
        return bool(self.evaluation.Evaluator().eval_exact_match(self._rebuilt(p_sql, db), self._rebuilt(g_sql, db)))

    def _rebuilt(self, sql: dict, db: str) -> dict:
        ev, schema = self.evaluation, self._schema(db)
        valid = ev.build_valid_col_units(sql["from"]["table_units"], schema)
        return ev.rebuild_sql_col(valid, ev.rebuild_sql_val(sql), self.kmaps[db])


def _official_empty_sql() -> dict:
    return {"except": None, "from": {"conds": [], "table_units": []}, "groupBy": [], "having": [], "intersect": None,
            "limit": None, "orderBy": [], "select": [False, []], "union": None, "where": []}


def agreement(scored: list[Scored], official: Callable[[Turn], bool]) -> float:
    differing = sum(s.match != official(s.turn) for s in scored)
    return percent(len(scored) - differing, len(scored))


def hardness_agreement(scored: list[Scored], official: OfficialEvaluator) -> float:
    differing = sum(s.level != official.hardness(s.turn.gold, s.turn.db) for s in scored)
    return percent(len(scored) - differing, len(scored))


# -- official example outputs ------------------------------------------------------------------
def printed_failures(output: Path) -> list[tuple[str, str]]:
    """The (pred, gold) pairs the official script prints for every item it scores 0, in order."""
    lines = output.read_text(encoding="utf-8").splitlines()
    return [
        (line.split(" pred: ", 1)[1], nxt.split(" gold: ", 1)[1])
        for line, nxt in pairwise(lines)
        if " pred: " in line and " gold: " in nxt
    ]


def printed_table_rows(output: Path, label: str) -> list[list[float]]:
    """Every row of the printed score tables that starts with ``label`` (e.g. ``count``, ``exact match``)."""
    rows = []
    for line in output.read_text(encoding="utf-8").splitlines():
        if line.startswith(label + " ") and line[len(label):].strip()[:1].isdigit():
            rows.append([float(value) for value in line[len(label):].split()])
    return rows


def official_matches_from_output(turns: list[Turn], output: Path, *, value_placeholder: bool) -> list[bool]:
    failures = printed_failures(output)
    matches, cursor = [], 0
    for t in turns:
        pred = t.pred.replace("value", "1") if value_placeholder else t.pred
        failed = cursor < len(failures) and failures[cursor] == (pred, t.gold)
        cursor += failed
        matches.append(not failed)
    return matches


# -- report ----------------------------------------------------------------------------------------------
def report_spider(shared: Path, schemas: dict[str, Schema], official: OfficialEvaluator | None,
                  official_ex: dict[str, list[int | None]] | None) -> None:
    spider_dir = shared / "benchmarks" / "spider_dev"
    through_plugin = plugin_verdicts(shared, SPIDER_SYSTEMS)
    em_agrees = True
    print("Spider dev: exact match, profile spider (test-suite-sql-eval run: value_placeholder on);"
          " execution accuracy, profile test-suite, through pytest --sqleval")
    header = f"{'system':32} {'EM ours':>8} {'official':>9} {'agree':>7}  " + "  ".join(f"{lv:>6}" for lv in LEVELS)
    print(header + f"  {'EX ours':>8} {'official':>9} {'agree':>7}")
    gold_levels: dict[str, tuple[int, float]] | None = None
    for system in SPIDER_SYSTEMS:
        turns = paired_turns(spider_dir / "dev_gold.sql", spider_dir / "predictions" / system.path)
        scored = score(turns, schemas, TEST_SUITE)
        levels = by_level(scored)
        gold_levels = gold_levels or levels
        agree = "-"
        if official is not None:
            agree = f"{agreement(scored, lambda t: official.exact(t.gold, t.pred, t.db, value_placeholder=True)):.2f}%"
        published = f"{system.official_em:.1f}" if system.official_em is not None else "-"
        per_level = "  ".join(f"{levels[lv][1]:6.1f}" for lv in LEVELS)
        verdicts = through_plugin[system.name]["execution_match"]
        em_agrees &= [bool(v) for v in through_plugin[system.name]["exact_match"]] == [s.match for s in scored]
        n, ex = rate(verdicts)
        ex_published = f"{system.official_ex:.1f}" if system.official_ex is not None else "-"
        ex_agree = "-"
        if official_ex is not None and system.path in official_ex:
            theirs = official_ex[system.path]
            pairs = [(bool(a), bool(b)) for a, b in zip(verdicts, theirs, strict=True) if b is not None]
            ex_agree = f"{percent(sum(a == b for a, b in pairs), len(pairs)):.2f}%"
            differing = [i for i, (a, b) in enumerate(zip(verdicts, theirs)) if b is not None and bool(a) != bool(b)]
            if differing:
                ex_agree += f" ({len(differing)} differ: {', '.join(f'q{i:04d}' for i in differing[:6])})"
        print(f"{system.name:32} {question_match(scored):8.1f} {published:>9} {agree:>7}  {per_level}  "
              f"{ex:8.1f} {ex_published:>9} {ex_agree:>7}")
    assert gold_levels is not None
    print(f"execution accuracy over the {n} items whose database is present (wta_1 is missing)")
    print("exact match through pytest --sqleval equals the direct API on every item: " + ("yes" if em_agrees else "NO"))
    print("gold hardness counts: " + ", ".join(f"{lv} {gold_levels[lv][0]}" for lv in LEVELS))
    if official is not None:
        print(f"hardness agreement with the official evaluator: {hardness_agreement(scored, official):.2f}%")


def report_sparc(shared: Path, schemas: dict[str, Schema], official: OfficialEvaluator | None) -> None:
    sparc_dir = shared / "benchmarks" / "sparc_dev"
    turns = paired_turns(sparc_dir / "dev_gold_from_thubpm.txt", sparc_dir / "predictions/derived/chatgpt_zeroshot_thubpm.txt")
    scored = score(turns, schemas, TEST_SUITE)
    interactions, joint = interaction_match(scored)
    print("\nSParC dev, ChatGPT zero-shot (THU-BPM): profile spider, test-suite-sql-eval run")
    print(f"question match    {question_match(scored):5.1f}  official {SPARC_OFFICIAL['question']:.1f}  ({len(scored)} turns)")
    print(f"interaction match {joint:5.1f}  official {SPARC_OFFICIAL['interaction']:.1f}  ({interactions} interactions)")
    print("by turn:  " + "  ".join(f"turn {k}: {v[1]:.1f} (n={v[0]})" for k, v in by_turn(scored).items()))
    print("by level: " + "  ".join(f"{k}: {v[1]:.1f} (n={v[0]})" for k, v in by_level(scored).items()))
    if official is not None:
        rate = agreement(scored, lambda t: official.exact(t.gold, t.pred, t.db, value_placeholder=True))
        hardness = hardness_agreement(scored, official)
        print(f"per-item agreement with the official evaluator: {rate:.2f}% (hardness {hardness:.2f}%)")


def report_example(title: str, turns: list[Turn], output: Path, schemas: dict[str, Schema], profile: dict,
                   *, with_turns: bool) -> None:
    scored = score(turns, schemas, profile)
    counts, exact = printed_table_rows(output, "count"), printed_table_rows(output, "exact match")
    levels = by_level(scored)
    ours_counts = [levels[lv][0] for lv in LEVELS] + [len(scored)]
    ours_exact = [levels[lv][1] / 100 for lv in LEVELS] + [question_match(scored) / 100]
    print(f"\n{title}")
    columns = (*LEVELS, "all", "joint") if with_turns else (*LEVELS, "all")
    print(f"{'':14}" + "".join(f"{name:>9}" for name in columns))
    if with_turns:
        interactions, joint = interaction_match(scored)
        ours_counts.append(interactions)
        ours_exact.append(joint / 100)
    print(_row("count ours", ours_counts, "{:9.0f}"))
    print(_row("count off.", counts[0], "{:9.0f}"))
    print(_row("exact ours", ours_exact, "{:9.3f}"))
    print(_row("exact off.", exact[0], "{:9.3f}"))
    if with_turns:
        turn_scores = by_turn(scored)
        print(f"{'':14}" + "".join(f"{'turn ' + k:>9}" for k in TURNS))
        print(_row("count ours", [turn_scores[k][0] for k in TURNS], "{:9.0f}"))
        print(_row("count off.", counts[1], "{:9.0f}"))
        print(_row("exact ours", [turn_scores[k][1] / 100 for k in TURNS], "{:9.3f}"))
        print(_row("exact off.", exact[1], "{:9.3f}"))
    official = official_matches_from_output(turns, output, value_placeholder=profile.get("value_placeholder", False))
    differing = sum(s.match != o for s, o in zip(scored, official, strict=True))
    print(f"per-item agreement with the printed official run: {percent(len(scored) - differing, len(scored)):.2f}%"
          f" ({differing} differ)")


def _row(label: str, values, fmt: str) -> str:
    return f"{label:14}" + "".join(fmt.format(v) for v in values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared", help="the shared/ folder (default ../shared)")
    parser.add_argument("--official-dir", type=Path, help="a checkout of the official evaluator, for per-item agreement")
    parser.add_argument("--official-ex", type=Path,
                        help="JSON {prediction file: [official test-suite execution verdict per item, null without a database]}")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    spider_dir = args.shared / "benchmarks" / "spider_dev"
    if not spider_dir.is_dir():
        parser.error(f"no benchmark data under {args.shared}/benchmarks")
    schemas = load_schemas(spider_dir / "tables.json")
    official = OfficialEvaluator(args.official_dir, spider_dir / "tables.json", spider_dir / "database") \
        if args.official_dir else None
    official_ex = json.loads(args.official_ex.read_text()) if args.official_ex else None
    report_spider(args.shared, schemas, official, official_ex)
    report_sparc(args.shared, schemas, official)
    sparc_example = args.shared / "benchmarks" / "sparc_dev" / "official_example"
    report_example(
        "SParC official example (old SParC script: legacy_from_check; its unclosed last interaction dropped)",
        paired_turns(sparc_example / "gold.txt", sparc_example / "predict.txt", keep_unclosed_last=False),
        sparc_example / "eval_output.txt", schemas, LEGACY_SPARC, with_turns=True,
    )
    legacy = spider_dir / "legacy_example"
    report_example(
        "Spider legacy example (pre-2019 evaluation.py: legacy_from_check)",
        paired_turns(legacy / "gold_example.txt", legacy / "pred_example.txt"),
        legacy / "eval_result_example.txt", schemas, LEGACY_SPIDER, with_turns=False,
    )
    print(f"\n{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
