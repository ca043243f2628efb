"""Gold checks (``--sqleval-check-gold``): is each gold query a fair reference?

Only the gold side runs. A gold that fails, times out or exceeds the row cap
is an error of the suite (raised while setting the case up). For a gold that
runs, each finding below is reported per case:

===================== ========= ==============================================================
finding               severity  meaning
===================== ========= ==============================================================
``unstable``          broken    two runs of the gold returned different results, or it draws a random value
                                or samples rows without a seed (TABLESAMPLE, USING SAMPLE)
``empty``             warning   no rows: any prediction returning no rows matches it vacuously
``single_null``       warning   one row, one NULL: a vacuous match is easy
``single_zero``       warning   one row, one 0: a vacuous match is easy (``SELECT 0``)
``limit_without_order`` warning LIMIT / FETCH FIRST / OFFSET without ORDER BY, at the top or in a
                                subquery: which rows come back is up to the engine
``ties_at_limit``     warning   ORDER BY ... LIMIT k where row k+1 ties with row k on the keys:
                                another engine may return a different, equally correct row
``null_order``        warning   ORDER BY without NULLS FIRST/LAST where the result depends on where NULLs sort:
                                SQLite puts them first in ascending order, PostgreSQL last, DuckDB always last
``large``             warning   more rows than the size threshold (``--sqleval-gold-size``)
``too_complex``       warning   beyond the scoring limits (:mod:`pytest_sqleval.sql.limits`):
                                exact match and difficulty cannot read it, and the LIMIT/ORDER BY
                                checks above are skipped
===================== ========= ==============================================================

``--sqleval-check-gold`` exits non-zero when a gold is broken (including a
gold that fails); warnings are listed without failing the run. The checks
never raise for any gold text: SQL they cannot read skips the checks that need it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError

from .comparison import ComparisonOptions
from .errors import QueryError
from .execution.runner import run_query
from .metrics.normalisation import normalise_value
from .results import QueryResult
from .sql.limits import SqlTooComplex, bounded_stack, parse_one_bounded, too_complex_reason
from .sql.ordering import plan_order

DEFAULT_SIZE_THRESHOLD = 1000

#: Options used to find the ORDER BY keys of a gold (tie detection).
_KEY_OPTIONS = ComparisonOptions(row_order="order_by", ties="any")


@dataclass(frozen=True)
class Finding:
    kind: str
    severity: str  # "broken" | "warning"
    message: str

    def as_json(self) -> dict[str, str]:
        return asdict(self)


def check_gold(gold_sql: str, result: QueryResult, engine, *, dialect: str, timeout: float, max_rows: int,
               size_threshold: int = DEFAULT_SIZE_THRESHOLD, ran_sql: str | None = None,
               text_errors: str = "replace") -> list[Finding]:
    """Findings for one gold query whose first run gave ``result``. ``ran_sql`` and ``text_errors``: what that
    run executed and how it read text (the profile's DISTINCT stripping and text decoding), so the second run
    that tests stability repeats it exactly."""
    findings = [_with_underflow(f, gold_sql, dialect) for f in vacuous_findings(result)]
    if len(result.rows) > size_threshold:
        findings.append(Finding("large", "warning", f"returns {len(result.rows)} rows (threshold {size_threshold})"))
    determinism = determinism_findings(gold_sql, result, engine, dialect=dialect, timeout=timeout, max_rows=max_rows,
                                       ran_sql=ran_sql, text_errors=text_errors)
    findings.extend(determinism)
    if not any(f.kind in ("unstable", "too_complex") for f in determinism):  # a random draw changes it on its own
        tied = any(f.kind == "ties_at_limit" for f in determinism)
        findings.extend(_tie_findings("ORDER BY", lambda: _null_order(
            ran_sql or gold_sql, result, engine, dialect, timeout, max_rows, tied, text_errors), kind="null_order"))
    return findings


def vacuous_findings(result: QueryResult) -> list[Finding]:
    rows = result.rows
    if not rows:
        return [Finding("empty", "warning", "returns no rows: any prediction that returns no rows matches it")]
    if len(rows) == 1 and len(rows[0]) == 1:
        value = normalise_value(rows[0][0])
        if value is None:
            return [Finding("single_null", "warning", "returns a single NULL: a vacuous prediction can match it")]
        if value is False:  # PostgreSQL's and DuckDB's boolean, where SQLite returns 0: `SELECT 0` matches it too
            return [Finding("single_zero", "warning", "returns a single FALSE (0): `SELECT 0` matches it")]
        raw = rows[0][0]
        if isinstance(raw, Decimal) and raw.is_finite() and raw != 0 and value == 0:  # PostgreSQL's NUMERIC 1e-1000:
            # exactly not 0, so `SELECT 0` (an int beside a decimal compares exactly) does not match; a float 0 does
            return [Finding("single_zero", "warning", f"returns a single {raw}, which is 0 as a float: a prediction "
                                                      "returning a float 0 (`SELECT CAST(0 AS DOUBLE PRECISION)`) "
                                                      "matches it")]
        if not isinstance(value, bool) and isinstance(value, (int, float)) and value == 0:
            return [Finding("single_zero", "warning", "returns a single 0: `SELECT 0` matches it")]
    return []


def _with_underflow(finding: Finding, gold_sql: str, dialect: str) -> Finding:
    """A single 0 from a gold that writes a non-zero number too small for a float (``SELECT 1e-1000``: SQLite and
    DuckDB read it as 0.0): the finding names the literal, which the gold's author did not mean as 0."""
    if finding.kind != "single_zero" or not finding.message.startswith("returns a single 0:"):
        return finding
    try:
        tree = parse_one_bounded(gold_sql, dialect)
    except (SqlglotError, SqlTooComplex, RecursionError, MemoryError):
        return finding
    for literal in tree.find_all(exp.Literal):
        if literal.is_string:
            continue
        try:
            value = Decimal(literal.this)
        except ArithmeticError:
            continue
        if value.is_finite() and value != 0 and float(value) == 0:
            return Finding(finding.kind, finding.severity, f"returns a single 0 (its literal {literal.this} is 0 as "
                                                           "a float, as the engine read it): `SELECT 0` matches it")
    return finding


@bounded_stack
def determinism_findings(gold_sql: str, result: QueryResult, engine, *, dialect: str, timeout: float,
                         max_rows: int, ran_sql: str | None = None, text_errors: str = "replace",
                         untrusted: bool = False) -> list[Finding]:
    """``untrusted``: the SQL is a model's (``sqleval generate``), so its reruns go through the guard too."""
    findings: list[Finding] = []
    try:
        outer = _outermost(gold_sql, dialect)
    except SqlTooComplex as exc:
        outer = None
        findings.append(Finding("too_complex", "warning",
                                f"{exc.reason}: exact match and difficulty cannot read it; LIMIT/ORDER BY checks skipped"))
    if outer is not None:
        limit = _limit_value(outer)
        order = outer.args.get("order")
        cut = _unordered_cut(outer, dialect)
        if cut is not None:
            findings.append(Finding("limit_without_order", "warning",
                                    f"{cut} without ORDER BY: which rows come back is up to the engine"))
        inner = next((c for q in _inner_queries(outer) if (c := _unordered_cut(q, dialect, nested=True))), None)
        if inner is not None:
            findings.append(Finding("limit_without_order", "warning",
                                    f"{inner} without ORDER BY in a subquery: which rows it keeps is up to the engine"))
        if limit is not None and order is not None and len(result.rows) == limit:
            findings.extend(_tie_findings(f"LIMIT {limit}", lambda: _tie_at_cut(
                gold_sql, outer, limit, engine, dialect, timeout, max_rows, untrusted)))
        offset = _offset_value(outer)
        if offset and order is not None and result.rows:
            findings.extend(_tie_findings(f"OFFSET {offset}", lambda: _tie_at_offset(
                gold_sql, outer, offset, engine, dialect, timeout, max_rows, untrusted)))
    second = _rerun(ran_sql or gold_sql, engine, timeout, max_rows, text_errors, untrusted)
    if second is not None and not _same(result, second, ordered=outer is not None and outer.args.get("order") is not None):
        findings.append(Finding("unstable", "broken", "two runs of the gold returned different results"))
    elif outer is not None and (drawn := _random_call(outer, dialect)) is not None:  # two equal coin tosses
        findings.append(Finding("unstable", "broken",
                                f"its result depends on {drawn}: two runs can return different results"))
    return findings


#: Functions that draw a random value, by their lower-cased name as sqlglot leaves it when it has no node class for
#: them (an ``Anonymous`` call); ``random()``, ``rand()``, ``uuid()``, ``gen_random_uuid()`` are sqlglot nodes.
RANDOM_FUNCTIONS = frozenset({"randomblob", "random_uuid", "uuid_generate_v4", "newid", "setseed", "rand",
                              # DuckDB, PostgreSQL 16+/18+ and uuid-ossp (v1: a new value on every call)
                              "uuidv4", "uuidv7", "random_normal", "uuid_generate_v1", "uuid_generate_v1mc"})


def _random_call(tree: exp.Expression, dialect: str) -> str | None:
    """What in ``tree`` draws at random: a call (``random()``, ``uuid()``, ...) or a sample of rows without a seed
    (``TABLESAMPLE SYSTEM (50)``, DuckDB's ``USING SAMPLE 2``), with its SQL; else None."""
    for node in tree.walk():
        if draws_random(node):
            return f"a random value ({node.sql(dialect=dialect)})"
        if unseeded_sample(node) and node.args.get("bucket_numerator") is None:  # Hive's BUCKET is a hash
            return f"a random sample of rows ({node.sql(dialect=dialect)})"
    return None


def draws_random(node: exp.Expression) -> bool:
    """Is ``node`` a call that draws a random value (``random()``, ``uuid()``, :data:`RANDOM_FUNCTIONS`)?"""
    return isinstance(node, (exp.Rand, exp.Randn, exp.Uuid)) or (
        isinstance(node, exp.Anonymous) and str(node.this).lower() in RANDOM_FUNCTIONS)


def unseeded_sample(node: exp.Expression) -> bool:
    """Is ``node`` a sample of rows without a seed (``TABLESAMPLE SYSTEM (50)``, DuckDB's ``USING SAMPLE 2``)? A
    seeded one (``REPEATABLE (7)``) draws the same rows each time."""
    return isinstance(node, exp.TableSample) and node.args.get("seed") is None


def _outermost(sql: str, dialect: str) -> exp.Expression | None:
    """The outermost query; None when sqlglot cannot parse it. Raises SqlTooComplex beyond the limits."""
    try:
        tree = parse_one_bounded(sql, dialect)
    except SqlTooComplex:
        raise
    except (SqlglotError, RecursionError, MemoryError):
        return None
    while isinstance(tree, exp.Subquery):
        tree = tree.this
    return tree if isinstance(tree, (exp.Select, exp.SetOperation)) else None


def _limit_value(query: exp.Expression) -> int | None:
    """A literal LIMIT k (or ``FETCH FIRST k ROWS ONLY``, k = 1 when unwritten); None otherwise (no LIMIT, an
    expression, PERCENT or WITH TIES)."""
    limit = query.args.get("limit")
    if limit is None:
        return None
    if isinstance(limit, exp.Fetch):
        options = limit.args.get("limit_options")
        if options is not None and (options.args.get("percent") or options.args.get("with_ties")):
            return None
        value = limit.args.get("count") or exp.Literal.number(1)
    else:
        value = limit.args.get("expression")
    return _literal_int(value)


def _offset_value(query: exp.Expression) -> int | None:
    """A literal OFFSET k (also SQLite's and MySQL's ``LIMIT k, n``); None otherwise."""
    offset = query.args.get("offset")
    return _literal_int(offset.args.get("expression") if isinstance(offset, exp.Offset) else None)


def _literal_int(value: exp.Expression | None) -> int | None:
    """The whole number a numeric literal writes (``3``); None for anything else (``3.5``, ``'3'``, ``:k``)."""
    if isinstance(value, exp.Literal) and not value.is_string:
        try:
            return int(value.this)
        except ValueError:
            return None
    return None


def _unordered_cut(query: exp.Expression, dialect: str, *, nested: bool = False) -> str | None:
    """``LIMIT k`` / ``FETCH FIRST k ROWS ONLY`` / ``OFFSET k`` of a query without ORDER BY (the rows it keeps are
    the engine's choice), as written; None when it is ordered or cuts nothing. ``nested``: a subquery, where a
    LIMIT under EXISTS or on a single aggregate row (``SELECT max(x) FROM t LIMIT 1``) keeps nothing out."""
    if query.args.get("order") is not None:
        return None
    cut = query.args.get("limit") or query.args.get("offset")
    if cut is None:
        return None
    if nested:
        parent = query.parent.parent if isinstance(query.parent, exp.Subquery) else query.parent
        if isinstance(parent, exp.Exists):
            return None
        if isinstance(query, exp.Select) and query.args.get("group") is None and query.expressions \
                and all(e.find(exp.AggFunc) for e in query.expressions):
            return None
    limit = _limit_value(query)
    if limit == 0 and query.args.get("offset") is None:
        return None  # no row at all: nothing is up to the engine
    if isinstance(cut, exp.Limit) and limit is not None:
        return f"LIMIT {limit}"
    return cut.sql(dialect=dialect).strip()


def _inner_queries(outer: exp.Expression):
    """The queries nested in ``outer`` (subqueries, CTEs, the parenthesised sides of a set operation)."""
    for node in outer.find_all(exp.Select, exp.SetOperation):
        if node is not outer:
            yield node


def _tie_findings(cut: str, check, kind: str = "ties_at_limit") -> list[Finding]:
    """A ``kind`` warning when ``check()`` finds a tie at ``cut`` (``LIMIT 3``, ``OFFSET 1``); a
    ``too_complex`` warning when the check cannot be built for that gold."""
    try:
        tie = check()
    except (SqlglotError, RecursionError, MemoryError) as exc:
        return [Finding("too_complex", "warning", f"{too_complex_reason(exc)}: the tie check at {cut} was skipped")]
    return [Finding(kind, "warning", tie)] if tie else []


#: Where each convention puts NULLs: (its name, NULLS FIRST for an ascending key?, for a descending key?).
_NULL_CONVENTIONS = (("nulls_are_small", True, False), ("nulls_are_large", False, True),
                     ("nulls_are_last", False, False))


def _implicit_null_orders(gold_sql: str, dialect: str) -> list[bool]:
    """For each ORDER BY key of ``gold_sql`` in walk order: does it leave the place of NULLs to the engine (no
    NULLS FIRST/LAST)? sqlglot fills in the dialect's default, so the text is read under two opposite defaults:
    only an explicit NULLS FIRST/LAST reads the same under both."""
    import sqlglot
    from sqlglot.dialects.dialect import Dialect

    readings = []
    for convention in ("nulls_are_small", "nulls_are_large"):
        reader = Dialect.get_or_raise(dialect)  # a fresh instance: its NULL_ORDERING is set for this reading only
        reader.NULL_ORDERING = convention
        try:  # read within the limits already (the caller's bounded parse succeeded)
            tree = sqlglot.parse_one(gold_sql, read=reader)
        except SqlglotError:
            return []
        readings.append([bool(o.args.get("nulls_first")) for o in tree.find_all(exp.Ordered)])
    small, large = readings
    return [a != b for a, b in zip(small, large)] if len(small) == len(large) else []


def _null_order(gold_sql: str, result: QueryResult, engine, dialect: str, timeout: float, max_rows: int,
                tied: bool, text_errors: str) -> str | None:
    """Run the gold (``gold_sql``: what its first run executed) with its ORDER BY keys' NULLs placed as each engine
    family places them (SQLite/MySQL: NULLs are small; PostgreSQL/Oracle: large; DuckDB: always last): does the
    result change? An ordered result is compared by its sequence of ORDER BY keys (rows tied on them may come
    back in any order)."""
    outer = _outermost(gold_sql, dialect)  # None: sqlglot cannot read it (the checks that need a tree are skipped)
    implicit = _implicit_null_orders(gold_sql, dialect) if outer is not None else []
    if not any(implicit):
        return None
    from sqlglot.dialects.dialect import Dialect

    def run(tree: exp.Expression) -> QueryResult:
        return run_query(engine, tree.sql(dialect=dialect), timeout=timeout, max_rows=max_rows, untrusted=False,
                         text_errors=text_errors)

    ordered = outer.args.get("order") is not None
    plan = plan_order(gold_sql, dialect, _KEY_OPTIONS) if ordered else None
    base, own, hidden, keys = outer, result, 0, None
    try:
        if plan is not None and plan.hidden_key_sql:
            base, hidden = parse_one_bounded(plan.hidden_key_sql, dialect), plan.hidden_key_count
            own = run(base)
        elif plan is not None and plan.key_columns is not None:
            keys = list(plan.key_columns)
    except QueryError:
        return None
    if len(list(base.find_all(exp.Ordered))) != len(implicit):
        return None
    width = len(own.columns) - hidden
    if hidden:
        keys = list(range(width, len(own.columns)))
    own_convention = Dialect.get_or_raise(dialect).NULL_ORDERING
    for convention, ascending, descending in _NULL_CONVENTIONS:
        if convention == own_convention:
            continue
        variant = base.copy()
        for node, free in zip(list(variant.find_all(exp.Ordered)), implicit):
            if free:
                node.set("nulls_first", descending if node.args.get("desc") else ascending)
        try:
            other = run(variant)
        except QueryError:
            continue
        if _null_placement_differs(own.rows, other.rows, width, keys, ordered=ordered, tied=tied):
            return ("ORDER BY without NULLS FIRST/LAST, and the result depends on where NULLs sort (SQLite puts them "
                    "first in ascending order, PostgreSQL last, DuckDB always last): another engine returns a "
                    "different result; write NULLS FIRST or NULLS LAST")
    return None


def _null_placement_differs(first: list, second: list, width: int, keys: list[int] | None, *, ordered: bool,
                            tied: bool) -> bool:
    """Other rows (unless a tie at the LIMIT explains it), or, in an ordered result, another sequence of ORDER BY
    keys (without the keys: rows holding a NULL at other places)."""
    def visible(rows: list) -> QueryResult:
        return QueryResult(columns=[str(i) for i in range(width)], rows=[tuple(row[:width]) for row in rows])

    if not tied and not _same(visible(first), visible(second), ordered=False):
        return True
    if not ordered:
        return False
    if keys is not None:
        def sequence(rows: list) -> list[tuple]:
            return [tuple(normalise_value(row[i]) for i in keys) for row in rows]
    else:
        def sequence(rows: list) -> list[int]:
            return [i for i, row in enumerate(rows) if any(v is None for v in row)]
    return sequence(first) != sequence(second)


def _tie_at_cut(gold_sql: str, outer: exp.Expression, limit: int, engine, dialect: str, timeout: float,
                max_rows: int, untrusted: bool = False) -> str | None:
    """Run the gold with LIMIT k+1 (keys appended if needed); does row k+1 tie with row k?"""
    plan = plan_order(gold_sql, dialect, _KEY_OPTIONS)
    base = parse_one_bounded(plan.hidden_key_sql, dialect) if plan.hidden_key_sql else outer.copy()
    widened = base.limit(limit + 1)
    try:
        extended = run_query(engine, widened.sql(dialect=dialect), timeout=timeout, max_rows=max_rows,
                             untrusted=untrusted, dialect=dialect if untrusted else None)
    except QueryError:
        return None
    if len(extended.rows) <= limit:
        return None
    if plan.hidden_key_sql:
        keys = list(range(len(extended.columns) - plan.hidden_key_count, len(extended.columns)))
    elif plan.key_columns is not None:
        keys = list(plan.key_columns)
    else:
        return None
    last, next_row = extended.rows[limit - 1], extended.rows[limit]
    if all(normalise_value(last[i]) == normalise_value(next_row[i]) for i in keys):
        return (f"ORDER BY ... LIMIT {limit}: row {limit + 1} ties with row {limit} on the ORDER BY keys, "
                "so another engine may return a different but equally correct row")
    return None


def _tie_at_offset(gold_sql: str, outer: exp.Expression, offset: int, engine, dialect: str, timeout: float,
                   max_rows: int, untrusted: bool = False) -> str | None:
    """Run rows k and k+1 of the gold (OFFSET k-1 LIMIT 2, keys appended if needed): does the first row the OFFSET
    keeps tie with the last one it skips?"""
    plan = plan_order(gold_sql, dialect, _KEY_OPTIONS)
    base = parse_one_bounded(plan.hidden_key_sql, dialect) if plan.hidden_key_sql else outer.copy()
    around = base.offset(offset - 1).limit(2)
    try:
        rows = run_query(engine, around.sql(dialect=dialect), timeout=timeout, max_rows=max_rows,
                         untrusted=untrusted, dialect=dialect if untrusted else None).rows
    except QueryError:
        return None
    if len(rows) < 2:
        return None
    if plan.hidden_key_sql:
        keys = list(range(len(rows[0]) - plan.hidden_key_count, len(rows[0])))
    elif plan.key_columns is not None:
        keys = list(plan.key_columns)
    else:
        return None
    if all(normalise_value(rows[0][i]) == normalise_value(rows[1][i]) for i in keys):
        return (f"ORDER BY ... OFFSET {offset}: row {offset + 1} ties with row {offset} on the ORDER BY keys, "
                "so which rows the OFFSET skips is the engine's choice and another engine may return different "
                "but equally correct rows")
    return None


def _rerun(sql: str, engine, timeout: float, max_rows: int, text_errors: str = "replace",
           untrusted: bool = False) -> QueryResult | None:
    try:
        return run_query(engine, sql, timeout=timeout, max_rows=max_rows, untrusted=untrusted, text_errors=text_errors)
    except QueryError:
        return None


def _same(first: QueryResult, second: QueryResult, *, ordered: bool) -> bool:
    a = [tuple(normalise_value(v) for v in row) for row in first.rows]
    b = [tuple(normalise_value(v) for v in row) for row in second.rows]
    return a == b if ordered else Counter(a) == Counter(b)


def summarize_findings(findings: list[Finding]) -> str:
    if any(f.severity == "broken" for f in findings):
        return "broken"
    return "flagged" if findings else "clean"


def findings_record(findings: list[Finding]) -> dict[str, Any]:
    return {"gold_findings": [f.as_json() for f in findings], "gold_status": summarize_findings(findings)}
