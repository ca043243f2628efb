"""Differential fuzzing: the reproduction profiles against the official evaluators, item by item.

A corpus of mutated predictions is generated from Spider dev (gold queries and the ten systems' predictions):
meaning-preserving rewrites, near misses, and the malformed text real models emit (comments, fences, trailing
junk, several statements, empty answers, ``NOT a IN`` forms, DISTINCT variants, casts, white space and
non-breaking spaces, aliases). Every item is scored twice:

* by the official evaluators, unmodified, run from a scratch folder in their own virtual environment
  (``--official-python``, ``--official-dir``: a folder holding ``test-suite-sql-eval/`` with the one-line
  ``word_tokenize(..., preserve_line=True)`` change of ``../shared/reference/official/README.md`` and
  ``bird_minidev_evaluation/``; the small driver that calls them per item is written there by this script);
* by ``pytest --sqleval`` on two generated suites: ``execution: test-suite`` + ``exact_match: spider`` (exact
  match, hardness, execution) and ``execution: bird`` (execution, ``bird_soft_f1``).

It prints the agreement per mutation kind and metric and lists every disagreement::

    python benchmarks/fuzz_fidelity.py --official-python /tmp/fz/venv/bin/python --official-dir /tmp/fz \\
        [--per-kind 110] [--seed 12] [--json out.json] [--extra]

``--extra`` adds six opt-in kinds after the default ones (number forms, unary plus, quoted qualifiers, a final period, junk after
a column-valued condition, Unicode spaces / a BOM / GO around the statement); the default corpus of a seed is the same with or
without it.

The harness reproduces the official scripts' input handling, as ``spider_fidelity.py`` does: a Spider
prediction is the text before its first TAB, ``replace("value", "1")``, ``> =`` joined, ``YEAR(CURDATE())``
-> 2020 (``spider_suites.official_text``); BIRD predictions are used as written. Mutations keep a prediction
on one line (the official Spider files are read line by line) and never produce an empty line.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import sqlglot
from sqlglot.tokens import TokenType

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spider_suites import evaluate_suites, official_text  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
SPIDER = SHARED / "spider_dev"
PREDICTION_FILES = (
    "raw/DAIL-SQL+GPT-4.txt", "raw/DAIL-SQL+GPT-4+self-consistency.txt", "raw/graphix_result.txt",
    "raw/C3SQL_predicted_sql.txt", "derived/din_sql_gpt4.txt", "derived/gpt4_zero_shot_dinrepo.txt",
    "derived/din_sql_codex.txt", "derived/codex_few_shot_dinrepo.txt", "derived/gpt4_few_shot_dinrepo.txt",
    "derived/chatgpt_zeroshot_thubpm.txt",
)


# --------------------------------------------------------------------------- token helpers (no regexes over SQL)
def _tokens(sql: str):
    try:
        return sqlglot.Dialect.get_or_raise("sqlite").tokenize(sql)
    except Exception:  # noqa: BLE001 - a text sqlglot cannot tokenize is not mutated
        return None


def _span(sql: str, token) -> str:
    return sql[token.start:token.end + 1]


def _insert(sql: str, position: int, text: str) -> str:
    return sql[:position] + text + sql[position:]


def _first(tokens, kind, depth0: bool = False):
    depth = 0
    for i, token in enumerate(tokens):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        if token.token_type == kind and (not depth0 or depth == 0):
            return i
    return None


# --------------------------------------------------------------------------- mutations: text -> text | None
def m_original(q, rng):
    return q


def m_lowercase(q, rng):
    tokens = _tokens(q)
    if not tokens:
        return None
    out, pos = [], 0
    for t in tokens:
        if t.token_type not in (TokenType.STRING, TokenType.IDENTIFIER, TokenType.VAR):
            out.append(q[pos:t.start])
            out.append(_span(q, t).lower())
            pos = t.end + 1
    out.append(q[pos:])
    return "".join(out)


def m_uppercase_keywords(q, rng):
    tokens = _tokens(q)
    if not tokens:
        return None
    out, pos = [], 0
    for t in tokens:
        if t.token_type not in (TokenType.STRING, TokenType.IDENTIFIER, TokenType.VAR, TokenType.NUMBER):
            out.append(q[pos:t.start])
            out.append(_span(q, t).upper())
            pos = t.end + 1
    out.append(q[pos:])
    return "".join(out)


def _respace(q, rng, space):
    tokens = _tokens(q)
    if not tokens or len(tokens) < 3:
        return None
    gaps = [t.end + 1 for t in tokens[:-1] if q[t.end + 1:t.end + 2] == " "]
    if not gaps:
        return None
    at = rng.choice(gaps)
    return q[:at] + space + q[at + 1:]


def m_double_space(q, rng):
    return _respace(q, rng, "   ")


def m_nbsp(q, rng):
    return _respace(q, rng, "\u00a0")


def m_line_comment(q, rng):
    return q.rstrip() + rng.choice([" -- note", " --the answer", " -- count(*) of rows"])


def m_block_comment(q, rng):
    return rng.choice([q + " /* checked */", "/* answer */ " + q, q + " /* SELECT 1 */"])


def m_hint(q, rng):
    tokens = _tokens(q)
    if not tokens or tokens[0].token_type != TokenType.SELECT:
        return None
    return _insert(q, tokens[0].end + 1, " /*+ hint */")


def m_trailing_paren(q, rng):
    return q + rng.choice([" )", ")", " ))"])


def m_trailing_word(q, rng):
    return q + rng.choice([" xyz", " answer", " END", " Explanation: this counts rows."])


def m_trailing_fence(q, rng):
    return q + rng.choice([" ```", "```", " ``` "])


def m_fenced(q, rng):
    return rng.choice(["```sql " + q + " ```", "```" + q + "```", "```sql " + q])


def m_two_statements(q, rng):
    return rng.choice([q + "; SELECT 1", q + "; " + q, q + ";SELECT name FROM sqlite_master"])


def m_stray_semicolon(q, rng):
    return rng.choice([q + "; ;", q + ";;", q + " ; ; "])


def m_semicolon_comment(q, rng):
    return rng.choice([q + "; /* end */", q + "; -- done", q + ";/**/"])


def m_semicolon(q, rng):
    return q + rng.choice([";", " ;", "; "])


def m_empty(q, rng):
    return rng.choice([";", "-- no answer", "/* none */", "; -- none"])


def m_not_in_prefix(q, rng):
    tokens = _tokens(q)
    if not tokens:
        return None
    for i in range(1, len(tokens) - 1):
        if tokens[i].token_type == TokenType.NOT and tokens[i + 1].token_type == TokenType.IN:
            start = i - 1  # the operand: a column, possibly T1.col
            if tokens[start].token_type not in (TokenType.VAR, TokenType.IDENTIFIER):
                return None
            if start >= 2 and tokens[start - 1].token_type == TokenType.DOT:
                start -= 2
            operand = q[tokens[start].start:tokens[i - 1].end + 1]
            return q[:tokens[start].start] + "NOT " + operand + " " + q[tokens[i + 1].start:]
    return None


def m_distinct_add(q, rng):
    tokens = _tokens(q)
    if not tokens or tokens[0].token_type != TokenType.SELECT or len(tokens) < 2:
        return None
    if tokens[1].token_type == TokenType.DISTINCT:
        return None
    return _insert(q, tokens[0].end + 1, rng.choice([" DISTINCT", " distinct", " DISTINCT\u00a0"]))


def m_distinct_remove(q, rng):
    tokens = _tokens(q)
    if not tokens or not any(t.token_type == TokenType.DISTINCT for t in tokens):
        return None
    out, pos = [], 0
    for t in tokens:
        if t.token_type == TokenType.DISTINCT:
            out.append(q[pos:t.start])
            pos = t.end + 1
    out.append(q[pos:])
    return "".join(out)


def m_count_distinct(q, rng):
    tokens = _tokens(q)
    if not tokens:
        return None
    for i in range(len(tokens) - 3):
        if (_span(q, tokens[i]).lower() == "count" and tokens[i + 1].token_type == TokenType.L_PAREN
                and tokens[i + 2].token_type != TokenType.STAR and tokens[i + 2].token_type != TokenType.DISTINCT):
            return _insert(q, tokens[i + 1].end + 1, "DISTINCT ")
    return None


def m_times_one(q, rng):
    tokens = _tokens(q)
    if not tokens:
        return None
    for i in range(len(tokens) - 3):
        if (_span(q, tokens[i]).lower() in ("count", "sum", "avg", "max", "min")
                and tokens[i + 1].token_type == TokenType.L_PAREN):
            depth = 0
            for j in range(i + 1, len(tokens)):
                depth += tokens[j].token_type == TokenType.L_PAREN
                depth -= tokens[j].token_type == TokenType.R_PAREN
                if depth == 0:
                    return _insert(q, tokens[j].end + 1, rng.choice([" * 1.0", " * 1", " + 0.0"]))
    return None


def m_cast_real(q, rng):
    tokens = _tokens(q)
    if not tokens or tokens[0].token_type != TokenType.SELECT:
        return None
    end = _first(tokens, TokenType.FROM, depth0=True)
    if end is None or end < 2:
        return None
    items = tokens[1:end]
    if any(t.token_type in (TokenType.COMMA, TokenType.DISTINCT) for t in items):
        return None
    inner = q[items[0].start:items[-1].end + 1]
    return q[:items[0].start] + f"CAST({inner} AS {rng.choice(['REAL', 'INTEGER', 'TEXT'])})" + q[items[-1].end + 1:]


def m_alias(q, rng):
    tokens = _tokens(q)
    if not tokens or tokens[0].token_type != TokenType.SELECT:
        return None
    end = _first(tokens, TokenType.FROM, depth0=True)
    if end is None or end < 2:
        return None
    return _insert(q, tokens[end - 1].end + 1, rng.choice([" AS answer", " AS 1", " answer", ' AS "total"']))


def m_ge(q, rng):
    tokens = _tokens(q)
    if not tokens:
        return None
    for t in tokens:
        if t.token_type in (TokenType.GT, TokenType.LT):
            return q[:t.end + 1] + "=" + q[t.end + 1:]
    return None


def m_order_flip(q, rng):
    tokens = _tokens(q)
    if not tokens:
        return None
    for t in tokens:
        if t.token_type in (TokenType.DESC, TokenType.ASC):
            word = "ASC" if t.token_type == TokenType.DESC else "DESC"
            return q[:t.start] + word + q[t.end + 1:]
    i = _first(tokens, TokenType.ORDER_BY)
    if i is None:
        return None
    end = _first(tokens, TokenType.LIMIT)
    at = tokens[end - 1].end + 1 if end is not None else len(q.rstrip())
    return _insert(q, at, " DESC")


def m_limit(q, rng):
    tokens = _tokens(q)
    if not tokens:
        return None
    for i, t in enumerate(tokens[:-1]):
        if t.token_type == TokenType.LIMIT and tokens[i + 1].token_type == TokenType.NUMBER:
            n = tokens[i + 1]
            return q[:n.start] + str(int(_span(q, n)) + 1) + q[n.end + 1:]
    if tokens[-1].token_type != TokenType.SEMICOLON and _first(tokens, TokenType.ORDER_BY) is not None:
        return q + " LIMIT 1"
    return None


def m_and_to_or(q, rng):
    tokens = _tokens(q)
    if not tokens:
        return None
    for t in tokens:
        if t.token_type == TokenType.AND:
            return q[:t.start] + "OR" + q[t.end + 1:]
    return None


MUTATIONS = {name[2:]: fn for name, fn in sorted(globals().items()) if name.startswith("m_")}


def m_combo(q, rng):
    """Two other mutations in a row (a comment after a fence, DISTINCT before a trailing word, ...)."""
    names = [n for n in MUTATIONS if n not in ("original", "empty", "combo")]
    for name in rng.sample(names, 2):
        q = MUTATIONS[name](q, rng) if q is not None else None
    return q


MUTATIONS["combo"] = m_combo

# --------------------------------------------------------------------------- opt-in kinds (--extra)
# Token forms the official NLTK tokenizer reads differently from sqlglot (found by hand-written items; see
# tests/test_fidelity_new_inputs.py). Kept out of MUTATIONS so that a seed's default corpus stays the same.
_VALUE_BEFORE = (TokenType.EQ, TokenType.NEQ, TokenType.GT, TokenType.GTE, TokenType.LT, TokenType.LTE,
                 TokenType.BETWEEN, TokenType.LIMIT)


def x_number_form(q, rng):
    """A number value or LIMIT count written as 0x.., with a sign apart or glued, or as n.0 / ne0."""
    tokens = _tokens(q)
    if not tokens:
        return None
    spots = [t for prev, t in zip(tokens, tokens[1:])
             if t.token_type == TokenType.NUMBER and prev.token_type in _VALUE_BEFORE and _span(q, t).isdigit()]
    if not spots:
        return None
    t = rng.choice(spots)
    n = int(_span(q, t))
    form = rng.choice([hex(n), f"- {n}", f"+{n}", f"+ {n}", f"-{n}", f"{n}.0", f"{n}e0"])
    return q[:t.start] + form + q[t.end + 1:]


def x_unary_plus(q, rng):
    """``+`` before the first column of the SELECT list or of ORDER BY (sqlglot drops it)."""
    tokens = _tokens(q)
    if not tokens:
        return None
    spots = [t for prev, t in zip(tokens, tokens[1:])
             if prev.token_type in (TokenType.SELECT, TokenType.ORDER_BY) and t.token_type == TokenType.VAR]
    if not spots:
        return None
    t = rng.choice(spots)
    return _insert(q, t.start, rng.choice(["+ ", "+"]))


def x_quoted_qualifier(q, rng):
    """``T1.col`` -> ``"T1".col`` / ```T1`.col`` / ``[T1].col``."""
    tokens = _tokens(q)
    if not tokens:
        return None
    spots = [a for a, dot in zip(tokens, tokens[1:]) if a.token_type == TokenType.VAR and dot.token_type == TokenType.DOT]
    if not spots:
        return None
    t = rng.choice(spots)
    left, right = rng.choice([('"', '"'), ("`", "`"), ("[", "]")])
    return q[:t.start] + left + _span(q, t) + right + q[t.end + 1:]


def x_column_value_junk(q, rng):
    """Junk after a final condition whose value is a column (``... WHERE a = T2.b -- note``)."""
    tokens = _tokens(q)
    if not tokens or len(tokens) < 3 or tokens[-1].token_type != TokenType.VAR:
        return None
    end = len(tokens) - 3 if tokens[-2].token_type == TokenType.DOT else len(tokens) - 1
    if end < 1 or tokens[end].token_type != TokenType.VAR or tokens[end - 1].token_type not in _VALUE_BEFORE[:6]:
        return None
    return q + rng.choice([" -- note", " /* checked */", " END", " ```", " -- count(*) of rows", " -- count and sum",
                           " -- order matters", " -- limit of rows", " -- it's done", " xyz -- c"])


def x_final_period(q, rng):
    """A period at the very end (``... > 5.``, ``... LIMIT 3.)``, ``... = 'x'.``): NLTK splits it off as a sentence's."""
    q = q.rstrip().rstrip(";").rstrip()
    if not q:
        return None
    return q + rng.choice([".", ". ", ".)", ". )", ".]", ".;", "..", " .", ".0."])


def x_unicode_tail(q, rng):
    """Text sqlglot reads otherwise than Python's sqlite3 and sqlparse: a non-ASCII space (or a ``# `` comment)
    after a final ``;``, a leading byte-order mark, a ``GO`` batch separator followed by more text."""
    q = q.rstrip().rstrip(";").rstrip()
    if not q:
        return None
    if rng.random() < 0.2:
        return "\ufeff" + q
    return q + rng.choice([";\u00a0", "; \u3000", ";\u00a0-- done", "; -- done\u00a0", ";\x0b", "; # note", ";\u2003",
                           " GO SELECT 1", " GO -- end", "; \u00a0;"])


EXTRA_MUTATIONS = {name[2:]: fn for name, fn in sorted(globals().items()) if name.startswith("x_")}


# --------------------------------------------------------------------------- corpus
def read_lines(path: Path) -> list[str]:
    return [line.rstrip("\n") for line in path.read_text(encoding="utf-8").splitlines()]


def generate(seed: int, per_kind: int, extra: bool = False) -> list[dict]:
    rng = random.Random(seed)
    gold_lines = [line.split("\t") for line in read_lines(SPIDER / "dev_gold.sql") if line.strip()]
    usable = [i for i, (_, db) in enumerate(gold_lines) if (SPIDER / "database" / db / f"{db}.sqlite").is_file()]
    systems = {}
    for name in PREDICTION_FILES:
        lines = read_lines(SPIDER / "predictions" / name)
        if len(lines) == len(gold_lines):
            systems[name] = [line.strip().split("\t")[0] for line in lines]
    items = []
    kinds = {**MUTATIONS, **EXTRA_MUTATIONS} if extra else MUTATIONS  # extra kinds come last: same default corpus
    for kind, mutate in kinds.items():
        made, attempts = 0, 0
        while made < per_kind and attempts < per_kind * 30:
            attempts += 1
            index = rng.choice(usable)
            gold, db = gold_lines[index]
            source = rng.choice(["gold", *systems])
            base = gold if source == "gold" else systems[source][index]
            if not base.strip():
                continue
            pred = mutate(base, rng)
            if pred is None or "\n" in pred or "\t" in pred or not pred.strip():
                continue
            items.append({"kind": kind, "index": index, "db": db, "gold": gold, "pred": pred, "source": source})
            made += 1
    return items


def unmutated() -> list[dict]:
    """Every system's own prediction of every Spider dev item with a database (kind = the system's file)."""
    gold_lines = [line.split("\t") for line in read_lines(SPIDER / "dev_gold.sql") if line.strip()]
    items = []
    for name in PREDICTION_FILES:
        lines = read_lines(SPIDER / "predictions" / name)
        if len(lines) != len(gold_lines):
            continue
        for index, ((gold, db), line) in enumerate(zip(gold_lines, lines)):
            if (SPIDER / "database" / db / f"{db}.sqlite").is_file():
                items.append({"kind": Path(name).stem, "index": index, "db": db, "gold": gold,
                              "pred": line.strip().split("\t")[0], "source": name})
    return items


# --------------------------------------------------------------------------- the official side
OFFICIAL_DRIVER = r'''
import json, os, sys, types
base = sys.argv[1]
sys.path[:0] = [os.path.join(base, "test-suite-sql-eval"), os.path.join(base, "bird_minidev_evaluation")]
for stub in ("psycopg2", "pymysql"):   # imported at module level by BIRD's utils; only SQLite is used
    sys.modules.setdefault(stub, types.ModuleType(stub))
from func_timeout import func_timeout, FunctionTimedOut
import evaluation as ts
from exec_eval import eval_exec_match
import evaluation_ex, evaluation_f1

items = json.load(open(sys.argv[2]))
spider = sys.argv[4]
kmaps = ts.build_foreign_key_map_from_json(os.path.join(spider, "tables.json"))
evaluator = ts.Evaluator()
EMPTY = {"except": None, "from": {"conds": [], "table_units": []}, "groupBy": [], "having": [], "intersect": None,
         "limit": None, "orderBy": [], "select": [False, []], "union": None, "where": []}
schemas = {}
out = []
for item in items:
    db_name = item["db"]
    db = os.path.join(spider, "database", db_name, db_name + ".sqlite")
    if db not in schemas:
        schemas[db] = ts.Schema(ts.get_schema(db))
    schema = schemas[db]
    g_str = item["gold"]
    p_str = item["pred"].strip().split("\t")[0].replace("value", "1")   # evaluation.py's reading of a line
    result = {}
    g_sql = ts.get_sql(schema, g_str)
    result["hardness"] = evaluator.eval_hardness(g_sql)
    try:
        p_sql = ts.get_sql(schema, p_str)
    except Exception:
        p_sql = json.loads(json.dumps(EMPTY))
    try:
        result["ex"] = int(func_timeout(60, eval_exec_match, args=(db, p_str, g_str, False, False, False)))
    except FunctionTimedOut:
        result["ex"] = None   # the official has no working timeout: such an item is left out
    except Exception as exc:  # the official run would crash on it
        result["ex"] = "crash: " + type(exc).__name__
    kmap = kmaps[db_name]
    g_valid = ts.build_valid_col_units(g_sql["from"]["table_units"], schema)
    g_sql = ts.rebuild_sql_col(g_valid, ts.rebuild_sql_val(g_sql), kmap)
    p_valid = ts.build_valid_col_units(p_sql["from"]["table_units"], schema)
    p_sql = ts.rebuild_sql_col(p_valid, ts.rebuild_sql_val(p_sql), kmap)
    result["em"] = int(evaluator.eval_exact_match(p_sql, g_sql))
    pred_raw = item["pred"]
    result["bird_ex"] = evaluation_ex.execute_model(pred_raw, g_str, db, 0, 30.0, "SQLite")["res"]
    result["bird_f1"] = evaluation_f1.execute_model(pred_raw, g_str, db, 0, 30.0, "SQLite")["res"]
    out.append(result)
json.dump(out, open(sys.argv[3], "w"))
'''


def run_official(items: list[dict], python: str, official_dir: Path) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="fuzz-official-") as tmp:
        driver = Path(tmp) / "driver.py"
        driver.write_text(OFFICIAL_DRIVER, encoding="utf-8")
        source, target = Path(tmp) / "items.json", Path(tmp) / "official.json"
        source.write_text(json.dumps(items), encoding="utf-8")
        subprocess.run([python, str(driver), str(official_dir), str(source), str(target), str(SPIDER)],
                       cwd=tmp, check=True, stdout=subprocess.DEVNULL)
        return json.loads(target.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- our side
def run_ours(items: list[dict], workers: int = 2) -> tuple[list[dict], list[dict]]:
    tables = str((SPIDER / "tables.json").resolve())
    ts_cases, bird_cases = [], []
    for n, item in enumerate(items):
        database = str((SPIDER / "database" / item["db"] / f"{item['db']}.sqlite").resolve())
        pred_line = item["pred"].strip().split("\t")[0]
        ts_cases.append({"id": f"f{n:05d}", "gold": official_text(item["gold"], prediction=False),
                         "predicted": official_text(pred_line, prediction=True),
                         "schema": {"tables": tables, "db_id": item["db"]}, "database": database})
        bird_cases.append({"id": f"f{n:05d}", "gold": item["gold"], "predicted": item["pred"], "database": database})
    documents = {
        "fuzz_ts": {"suite": "fuzz_ts", "execution": "test-suite", "exact_match": "spider", "cases": ts_cases},
        "fuzz_bird": {"suite": "fuzz_bird", "execution": "bird", "cases": bird_cases},
    }
    report = evaluate_suites(documents, workers=workers, timeout=60.0)
    by_suite: dict[str, dict[str, dict]] = defaultdict(dict)
    for case in report["cases"]:
        by_suite[case["suite"]][case["id"]] = case
    keys = [f"f{n:05d}" for n in range(len(items))]
    return [by_suite["fuzz_ts"].get(k, {}) for k in keys], [by_suite["fuzz_bird"].get(k, {}) for k in keys]


# --------------------------------------------------------------------------- comparison
METRICS = ("exact_match", "hardness", "execution (test-suite)", "execution (bird)", "bird_soft_f1")


def compare(items, official, ours_ts, ours_bird):
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: {m: [0, 0] for m in METRICS})
    disagreements = []
    for item, off, ts_case, bird_case in zip(items, official, ours_ts, ours_bird):
        pairs = {
            "exact_match": (off["em"], ts_case.get("exact_match")),
            "hardness": (off["hardness"], ts_case.get("difficulty")),
            "execution (test-suite)": (off["ex"], ts_case.get("execution_match")),
            "execution (bird)": (off["bird_ex"], bird_case.get("execution_match")),
            "bird_soft_f1": (off["bird_f1"], bird_case.get("bird_soft_f1")),
        }
        for metric, (theirs, mine) in pairs.items():
            if theirs is None or (isinstance(theirs, str) and theirs.startswith("crash")):
                continue  # the official script hangs or crashes on this item: nothing to compare
            if metric == "bird_soft_f1":
                same = mine is not None and abs(float(theirs) - float(mine)) <= 1e-9
            elif metric == "hardness":
                same = theirs == mine
            else:
                same = mine is not None and bool(theirs) == bool(mine)
            cell = table[item["kind"]][metric]
            cell[0] += same
            cell[1] += 1
            if not same:
                disagreements.append({"kind": item["kind"], "metric": metric, "official": theirs, "ours": mine,
                                      "pred": item["pred"], "gold": item["gold"], "db": item["db"],
                                      "reason": (ts_case if "bird" not in metric else bird_case).get(
                                          "exact_match_reason" if metric == "exact_match" else "error")})
    return table, disagreements


def print_table(table) -> None:
    header = "| kind | items | " + " | ".join(METRICS) + " |"
    print(header)
    print("|" + "---|" * (len(METRICS) + 2))
    totals = {m: [0, 0] for m in METRICS}
    for kind in sorted(table):
        row = table[kind]
        count = max(row[m][1] for m in METRICS)
        cells = []
        for m in METRICS:
            same, total = row[m]
            totals[m][0] += same
            totals[m][1] += total
            cells.append(f"{100 * same / total:.2f}%" if total else "–")
        print(f"| {kind} | {count} | " + " | ".join(cells) + " |")
    cells = [f"{100 * s / t:.2f}% ({s}/{t})" if t else "–" for s, t in totals.values()]
    print(f"| **all** | {max(t for _, t in totals.values())} | " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--official-python", required=True, help="python of the official evaluators' venv")
    parser.add_argument("--official-dir", required=True, type=Path,
                        help="scratch folder with test-suite-sql-eval/ and bird_minidev_evaluation/")
    parser.add_argument("--per-kind", type=int, default=110, help="items per mutation kind (default 110)")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--workers", type=int, default=2,
                        help="pytest-xdist workers of the plugin's run (0: serial)")
    parser.add_argument("--json", type=Path, help="write items, verdicts and disagreements here")
    parser.add_argument("--extra", action="store_true",
                        help="also the opt-in kinds (number forms, unary plus, quoted qualifiers, column-value junk)")
    parser.add_argument("--systems", action="store_true",
                        help="no mutations: the ten systems' own predictions (9,720 items), kind = system")
    args = parser.parse_args()
    started = time.monotonic()
    if args.systems:
        items = unmutated()
        print(f"{len(items)} items: the systems' own predictions", flush=True)
    else:
        items = generate(args.seed, args.per_kind, args.extra)
        kinds = len(MUTATIONS) + (len(EXTRA_MUTATIONS) if args.extra else 0)
        print(f"{len(items)} items, {kinds} mutation kinds, seed {args.seed}", flush=True)
    official = run_official(items, args.official_python, args.official_dir)
    print(f"official evaluators: {time.monotonic() - started:.0f} s", flush=True)
    ours_ts, ours_bird = run_ours(items, args.workers)
    print(f"pytest --sqleval: {time.monotonic() - started:.0f} s", flush=True)
    table, disagreements = compare(items, official, ours_ts, ours_bird)
    print_table(table)
    print(f"\n{len(disagreements)} disagreements")
    for d in disagreements:
        print(f"- [{d['kind']}] {d['metric']}: official {d['official']!r}, ours {d['ours']!r} ({d['reason']})\n"
              f"    pred: {d['pred']!r}\n    gold: {d['gold']!r} [{d['db']}]")
    if args.json:
        args.json.write_text(json.dumps({"items": items, "official": official, "disagreements": disagreements},
                                        indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
