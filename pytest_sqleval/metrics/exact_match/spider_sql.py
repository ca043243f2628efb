"""Read SQL into the official Spider "SQL dict", as the official ``process_sql.py`` would.

The sqlglot tree is converted into the exact shape the official evaluator
builds and compares with ``==``, so the comparison code can follow the
official semantics one to one::

    col_unit   = (agg_id, col_id, is_distinct)        col_id: "__table.column__" or "__all__"
    val_unit   = (unit_op, col_unit, col_unit | None)
    cond_unit  = (not_op, op_id, val_unit, val1, val2)
                 a value is a float, a '"string"', a SQL dict (subquery), a col_unit, or None
    condition  = [cond_unit, "and" | "or", cond_unit, ...]
    table_unit = ("table_unit", "__table__") | ("sql", SQL dict)
    SQL dict   = {"select": (is_distinct, [(agg_id, val_unit), ...]),
                  "from": {"table_units": [...], "conds": condition},
                  "where": condition, "groupBy": [col_unit, ...], "having": condition,
                  "orderBy": (direction, [val_unit, ...]) or [], "limit": 1 or None,
                  "intersect" / "union" / "except": SQL dict or None}

Behaviour reproduced from the official parser (each one checked against it):

* Table and column names are case-insensitive; ``*`` is ``__all__`` for the
  whole database (``count(*)`` names no table).
* Aliases come from one pre-pass over the whole query, subqueries included;
  a reused alias keeps its *last* mapping. An alias must follow ``AS``; an
  alias equal to a table name is rejected.
* An unqualified column resolves to the first FROM table (in FROM order)
  that has it; FROM-subqueries are never searched. In an ``ON`` condition
  only the tables joined so far are searched.
* A double-quoted token in a value position is a string value; an aggregate
  there (``= max(x)``) is not readable.
* A number value is read with ``float()`` of its token: ``0x28`` is not
  readable, nor is a sign written apart from its number (``- 1``, ``+ 1``);
  ``-1`` and ``+1`` are. A quoted qualifier (``"T2".name``) is not readable.
* In SELECT an aggregate applies to the whole item (``sum(a + b)`` is fine,
  ``max(a) - min(a)`` is not); elsewhere aggregates sit inside a column unit.
* One direction for the whole ORDER BY: the last explicit ASC/DESC wins.
* LIMIT values are not kept (test-suite-sql-eval reads every LIMIT as 1).
* ORDER BY / LIMIT written after a set operation belong to its last operand;
  set operations nest to the right (``A UNION B EXCEPT C``: A.union = B, B.except = C).
* A column used as a condition value swallows the rest of the expression and
  any following ``OR ...`` conditions up to the next ``AND`` (the official
  value scanner stops only at ``,``, ``)``, ``and``, clause and join keywords).
* OFFSET (or ``LIMIT a, b``) at the very end of the statement is ignored, as
  are statements after the first and clauses after one written out of the
  order WHERE, GROUP BY, HAVING, ORDER BY, LIMIT (see :mod:`.spider_text`).

Everything the official grammar cannot read makes the reader raise
:class:`OutsideGrammar` with a short construct name. With ``strict=False``
the reader records the construct and goes on with a best-effort unit instead
(placeholder column ``__expr__``), so that hardness can be computed for any
SQL by the same definitions; a bare boolean condition (``WHERE is_vip``,
``HAVING max(flag)``, ``WHERE NOT flag``), which the official parser cannot
read, becomes a condition unit with operator ``=`` and no value.

SQL beyond the limits of :mod:`pytest_sqleval.sql.limits` (length, nesting,
the reading's work budget) raises :class:`~pytest_sqleval.sql.limits.SqlTooComplex`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from sqlglot import exp
from sqlglot.tokenizer_core import TokenType

from ...schema import Schema
from ...sql.limits import WorkBudget
from .parsing import parse_statement
from .spider_tail import BARE_ORDER_BY, LIMIT_WITHOUT_VALUE
from .spider_text import (
    DIGIT_WORD,
    ORDER_STOP,
    _tokens,
    alias_written_with_as,
    join_spaced_comparisons,
    read_clause_order,
    tokenizer_objection,
    written_in_double_quotes,
)

WHERE_OPS = ("not", "between", "=", ">", "<", ">=", "<=", "!=", "in", "like", "is", "exists")
UNIT_OPS = ("none", "-", "+", "*", "/")
AGG_OPS = ("none", "max", "min", "count", "sum", "avg")
SET_OPS = ("intersect", "union", "except")

ColUnit = tuple[int, str, bool | None]
ValUnit = tuple[int, ColUnit, ColUnit | None]
SpiderSQL = dict[str, Any]

ALL_COLUMNS = "__all__"
PLACEHOLDER_COLUMN = "__expr__"

_AGGREGATES: dict[type[exp.Expression], int] = {
    exp.Max: AGG_OPS.index("max"), exp.Min: AGG_OPS.index("min"), exp.Count: AGG_OPS.index("count"),
    exp.Sum: AGG_OPS.index("sum"), exp.Avg: AGG_OPS.index("avg"),
}
_ARITHMETIC: dict[type[exp.Expression], int] = {
    exp.Sub: UNIT_OPS.index("-"), exp.Add: UNIT_OPS.index("+"), exp.Mul: UNIT_OPS.index("*"), exp.Div: UNIT_OPS.index("/"),
}
_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "=", exp.GT: ">", exp.LT: "<", exp.GTE: ">=", exp.LTE: "<=", exp.NEQ: "!=",
    exp.In: "in", exp.Like: "like", exp.Between: "between", exp.Is: "is", exp.Exists: "exists",
    exp.NullSafeEQ: "is",  # ``a IS 'x'``: the official reads a value after IS (``<=>`` and ``IS NOT DISTINCT FROM``
}                          # are refused from the text, spider_text.tokenizer_objection)
_NEGATABLE = (exp.In, exp.Like, exp.Between)
_SET_OPERATIONS: dict[type[exp.Expression], str] = {
    exp.Union: "union", exp.Intersect: "intersect", exp.Except: "except",
}
_SELECT_ARGS = {"expressions", "from_", "joins", "where", "group", "having", "order", "limit", "offset", "distinct"}
#: Words that end the official value scanner's run over a column value (``parse_value``: ``,``, ``)``, ``and``,
#: a clause keyword, a join keyword); reached inside an OR-condition it swallows, they end the condition there.
_SCAN_ENDS_READING = {"select", "from", "where", "group", "order", "limit", "intersect", "union", "except",
                      "join", "on", "as"}


class OutsideGrammar(Exception):
    """The official Spider parser cannot read this SQL; ``construct`` names the reason."""

    def __init__(self, construct: str) -> None:
        self.construct = construct
        super().__init__(construct)


@dataclass(frozen=True)
class SpiderRead:
    """The SQL dict, and (lenient reading only) the constructs outside the grammar."""

    sql: SpiderSQL
    constructs: tuple[str, ...] = ()


def read_spider_sql(sql: str, schema: Schema, *, dialect: str = "sqlite", strict: bool = True) -> SpiderRead:
    """Read ``sql`` the way the official parser does (see the module docstring)."""
    _tokens(sql, dialect)  # the limits first (SqlTooComplex): every later step tokenizes or walks the text
    sql = join_spaced_comparisons(sql, dialect)
    unread: tuple[str, ...] = ()
    order_stop = None
    if strict:
        order = read_clause_order(sql, dialect)
        objection = tokenizer_objection(sql, dialect, end=order.dropped_from)
        if objection:
            raise OutsideGrammar(objection)
        if order.misplaced_elsewhere:
            raise OutsideGrammar("clause_order")
        unread = order.dropped_at_end
        if unread[:1] == (ORDER_STOP,):
            order_stop = order.dropped_from
    tree = parse_statement(sql, dialect, allow_trailing_statements=True, shared=True)  # read only: no copy
    reader = _Reader(sql, schema, strict, unread, order_stop)
    return SpiderRead(reader.read_statement(tree), tuple(reader.constructs))


def empty_spider_sql() -> SpiderSQL:
    """The SQL dict the official evaluator scores an unreadable prediction with."""
    return {
        "select": (False, []), "from": {"table_units": [], "conds": []}, "where": [], "groupBy": [],
        "having": [], "orderBy": [], "limit": None, "intersect": None, "union": None, "except": None,
    }


def _construct_name(node: exp.Expression) -> str:
    """A short name for an expression the grammar does not cover."""
    if not isinstance(node, exp.Expression):
        return "missing_expression"
    if isinstance(node, exp.Anonymous):
        return f"function {str(node.this).lower()}"
    if isinstance(node, exp.Window):
        return "window_function"
    if isinstance(node, (exp.Case, exp.Cast)):
        return node.key
    if isinstance(node, (exp.Subquery, exp.Select, exp.SetOperation)):
        return "subquery_in_expression"
    if isinstance(node, tuple(_ARITHMETIC)):
        return "arithmetic"
    if isinstance(node, exp.Func) and not isinstance(node, tuple(_AGGREGATES)):
        return f"function {node.key}"
    return node.key


def _first_aggregate_id(node: exp.Expression) -> int:
    if not isinstance(node, exp.Expression):
        return 0
    for found in node.find_all(*_AGGREGATES):
        if not any(isinstance(parent, (exp.Select, exp.Subquery)) for parent in _ancestors(found, node)):
            return _AGGREGATES[type(found)]
    return 0


def _ancestors(node: exp.Expression, stop: exp.Expression) -> Iterator[exp.Expr]:
    parent = node.parent
    while parent is not None and parent is not stop:
        yield parent
        parent = parent.parent


def _written_parentheses(node: exp.Expression) -> bool:
    """Were these parentheses around a set operation in the text? sqlglot adds a Subquery of its own (only
    ``this`` and ``alias`` set) to keep SQLite's left-to-right (PostgreSQL's INTERSECT-first) reading of
    ``A UNION B INTERSECT C``, which the official parser reads as written; parsed ones carry ``pivots``."""
    return not (isinstance(node, exp.Subquery) and set(node.args) <= {"this", "alias"})


def _first_offset(node: exp.Expression) -> int | None:
    """Where ``node`` starts in the text (the least start offset sqlglot kept in it), None when none is known."""
    starts = [found.meta["start"] for found in node.walk() if found.meta.get("start") is not None]
    return min(starts) if starts else None


#: Predicates the official ORDER BY reader stops in, after their first operand.
_ORDER_PREDICATES = (exp.Is, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.In, exp.Between,
                     exp.Glob, exp.NullSafeEQ)


def _word_before(text: str, offset: int | None) -> str:
    """The word (lower case) that ends right before ``offset`` in ``text``, white space skipped."""
    if offset is None:
        return ""
    words = text[:offset].split()
    return words[-1].lower() if words else ""


def _predicate_operand(node: exp.Expression) -> exp.Expression | None:
    """The first operand of ``a IS NULL``, ``a > 3``, ``a NOT IN (...)`` (None for anything else)."""
    if isinstance(node, exp.Not) and isinstance(node.this, _ORDER_PREDICATES):
        node = node.this
    return node.this if isinstance(node, _ORDER_PREDICATES) else None


def _unmarked(name: str) -> str:
    """A name without the mark of a word that starts with digits (``spider_text.mark_digit_words``)."""
    return name.removeprefix(DIGIT_WORD)


def _top_level_selects(tree: exp.Expression) -> set[int]:
    """The SELECTs of the statement's own set-operation chain, unless written in parentheses."""
    if isinstance(tree, exp.SetOperation):
        return _top_level_selects(tree.this) | _top_level_selects(tree.expression)
    return {id(tree)} if isinstance(tree, exp.Select) else set()


def _strip_paren(node: exp.Expression) -> exp.Expression:
    return node.this if isinstance(node, exp.Paren) else node


def _join_condition(join: exp.Join | None) -> exp.Expression | None:
    """The ON condition; sqlglot writes a bare ``JOIN`` as ``ON TRUE`` (so ``ON TRUE`` reads as none)."""
    on = join.args.get("on") if join is not None else None
    if isinstance(on, exp.Boolean) and on.this is True:
        return None
    return on


def _is_number(node: exp.Expression) -> bool:
    inner = node.this if isinstance(node, exp.Neg) else node
    return isinstance(inner, exp.Literal) and not inner.is_string


class _Reader:
    """One reading of one statement: the global alias map and the constructs met."""

    def __init__(self, text: str, schema: Schema, strict: bool, unread_final_clauses: tuple[str, ...] = (),
                 order_stop: int | None = None) -> None:
        self.text = text
        self.unread_final_clauses = unread_final_clauses
        self.order_stop = order_stop  # where the official reader stops in the final ORDER BY (text offset)
        self.schema = schema
        self.strict = strict
        self.constructs: list[str] = []
        self.aliases: dict[str, str] = {}
        self.ctes: dict[str, exp.Expression] = {}
        self.budget = WorkBudget()
        self.top_level: set[int] = set()  # ids of the SELECTs the official parse_sql reads outside any block
        self.cut = False  # the official reading ended inside a condition (see read_condition)
        self.cut_word = ""  # the word the official value scan stopped at there

    def outside(self, construct: str) -> None:
        if self.strict:
            raise OutsideGrammar(construct)
        self.constructs.append(construct)

    # -- statement and set operations ----------------------------------------
    def read_statement(self, tree: exp.Expression) -> SpiderSQL:
        if not isinstance(tree, (exp.Select, exp.SetOperation, exp.Subquery)):
            self.outside("not_a_query")
            return empty_spider_sql()
        self._scan_aliases(tree)
        self.top_level = _top_level_selects(tree)
        if isinstance(tree, exp.Subquery) and isinstance(self._unwrap_subquery(tree), exp.SetOperation):
            # ``(A UNION B) ORDER BY x``: the official parse_sql reads A in the block and expects ")" at "union"
            self.outside("parenthesized_set_operation")
        if not self.strict:  # the lenient reading (hardness) reads a CTE where it is used, as a FROM subquery
            self.ctes = {cte.alias_or_name.lower(): cte.this for cte in tree.find_all(exp.CTE)}
        return self.read_query(tree, final=True)

    def read_query(self, node: exp.Expression, *, final: bool = False) -> SpiderSQL:
        """A (possibly parenthesised) SELECT or chain of set operations."""
        self.budget.spend()
        node = self._unwrap_subquery(node)
        if isinstance(node, exp.SetOperation):
            return self._read_set_chain(node, final)
        if isinstance(node, exp.Select):
            return self._read_select(node, final=final)
        self.outside(_construct_name(node))
        return empty_spider_sql()

    def _unwrap_subquery(self, node: exp.Expression) -> exp.Expression:
        while isinstance(node, (exp.Subquery, exp.Paren)) and isinstance(node.this, (exp.Query, exp.Subquery)):
            node = cast(exp.Expression, node.this)
        return node  # a parenthesised query reads as the query itself

    def _read_set_chain(self, node: exp.SetOperation, final: bool) -> SpiderSQL:
        operands, operators = self._flatten_set_chain(node)
        trailing = {key: node.args.get(key) for key in ("order", "limit", "offset")}
        last = len(operands) - 1
        dicts = []
        for i, operand in enumerate(operands):
            dicts.append(self._read_select(operand, final=final and i == last, trailing=trailing if i == last else None))
            if self.cut:  # the official reading ended in this operand: the later operands are never read
                break
        for i, operator in enumerate(operators[:len(dicts) - 1]):
            dicts[i][operator] = dicts[i + 1]
        return dicts[0]

    def _flatten_set_chain(self, node: exp.Expression) -> tuple[list[exp.Select], list[str]]:
        if isinstance(node, exp.SetOperation):
            if node.args.get("distinct") is False:
                self.outside(f"{_SET_OPERATIONS.get(type(node), node.key)}_all")
            left, left_ops = self._flatten_set_chain(node.this)
            right, right_ops = self._flatten_set_chain(node.expression)
            return left + right, left_ops + [_SET_OPERATIONS.get(type(node), "union")] + right_ops
        inner = self._unwrap_subquery(node)
        if isinstance(inner, exp.SetOperation):
            if _written_parentheses(node):
                self.outside("parenthesized_set_operation")
            return self._flatten_set_chain(inner)
        if not isinstance(inner, exp.Select):
            self.outside(_construct_name(inner))
            return [exp.select("*")], []
        return [inner], []

    # -- one SELECT ------------------------------------------------------------
    def _read_select(self, select: exp.Select, *, final: bool, trailing: dict[str, Any] | None = None) -> SpiderSQL:
        args = dict(select.args)
        for key, value in (trailing or {}).items():
            if value is not None:
                if args.get(key) is not None:
                    self.outside("parenthesized_set_operand")
                args[key] = value
        if final:
            for clause in self.unread_final_clauses:
                args[clause] = None
        self._check_select_args(args, final)
        table_units, on_conds, tables = self._read_from(args.get("from_"), args.get("joins") or [])
        cut_in_on = self.cut
        if cut_in_on and self.cut_word not in ("select", ")"):
            self._refuse_cut()  # at a join keyword the official FROM reader goes on (or fails): not followed here
        sql = empty_spider_sql()
        sql["from"] = {"table_units": table_units, "conds": on_conds}
        sql["select"] = (self._select_distinct(args.get("distinct")),
                         [self._read_select_item(item, tables) for item in args.get("expressions") or []])
        if cut_in_on and self._reading_cut(select):  # its FROM ends there; the SELECT items are read before it
            return sql
        sql["where"] = self._read_clause_condition(args.get("where"), tables)
        if self._reading_cut(select):
            return sql
        sql["groupBy"] = self._read_group_by(args.get("group"), tables)
        sql["having"] = self._read_clause_condition(args.get("having"), tables)
        if self._reading_cut(select):
            return sql
        sql["orderBy"] = self._read_order_by(args.get("order"), tables, self.order_stop if final else None)
        sql["limit"] = 1 if args.get("limit") is not None else None
        limit = args.get("limit")
        if limit is not None and str(limit.args.get("expression")).lower() == LIMIT_WITHOUT_VALUE:
            self.outside("limit_without_value")  # ``LIMIT`` at the very end: the official reads past the end
        return sql

    def _reading_cut(self, select: exp.Select) -> bool:
        """Whether the official reading ended in this SELECT's last condition (it reads nothing after it).

        Only a SELECT outside any parentheses ends the whole reading so; in a block the official parser expects
        the ``)`` there and fails (or goes on from the wrong ``)``, which is not followed here)."""
        if self.cut and id(select) not in self.top_level:
            self._refuse_cut()
        return self.cut

    def _refuse_cut(self) -> None:
        if self.cut:
            self.cut = False
            self.outside("column_value_before_or")

    def _check_select_args(self, args: dict[str, Any], final: bool) -> None:
        for key, value in args.items():
            if value in (None, [], False) or key in _SELECT_ARGS:
                continue
            self.outside({"with_": "cte", "windows": "window_function"}.get(key, key))
        if args.get("offset") is not None and not final:
            self.outside("offset")
        if args.get("having") is not None and args.get("group") is None:
            # the official reads "having" as a table (after FROM) or a column (after WHERE/ON) and fails
            self.outside("having_without_group_by")

    def _select_distinct(self, distinct: exp.Distinct | None) -> bool:
        if distinct is None:
            return False
        if distinct.args.get("on") is not None:
            self.outside("distinct_on")
        return True

    # -- FROM ----------------------------------------------------------------------
    def _read_from(self, from_: exp.From | None, joins: list[exp.Join]) -> tuple[list[Any], list[Any], list[str]]:
        table_units: list[Any] = []
        conds: list[Any] = []
        tables: list[str] = []
        if from_ is None:
            self.outside("no_from")
            return table_units, conds, tables
        for source, join in [(from_.this, None), *[(j.this, j) for j in joins]]:
            if join is not None:
                self._check_join(join)
            unit = self._read_source(source, joined=join is not None, tables=tables)
            if unit is not None:
                table_units.append(unit)
                if unit[0] == "table_unit" and isinstance(source, exp.Table):
                    table_units.extend(self._alias_read_as_table(source, tables))
            on = _join_condition(join)
            if on is not None:
                this_conds = self.read_condition(on, list(tables))
                if conds:
                    conds.append("and")
                conds.extend(this_conds)
                if self.cut:  # the official reading ended in this ON condition: no later join is read
                    break
        return table_units, conds, tables

    def _check_join(self, join: exp.Join) -> None:
        if join.args.get("method"):
            self.outside(f"{join.args['method'].lower()}_join")
        if join.args.get("side"):
            self.outside(f"{join.args['side'].lower()}_join")
        kind = (join.args.get("kind") or "").upper()
        if kind == "CROSS":
            self.outside("comma_or_cross_join")
        elif kind:
            self.outside(f"{kind.lower()}_join")
        if join.args.get("using"):
            self.outside("join_using")

    def _read_source(self, source: exp.Expression, *, joined: bool, tables: list[str]) -> tuple[Any, ...] | None:
        if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
            cte = self.ctes.pop(source.name.lower(), None) if not source.args.get("db") else None
            if cte is not None:  # popped while read: a recursive CTE's reference to itself is a table
                try:
                    return ("sql", self.read_query(cte))
                finally:
                    self.ctes[source.name.lower()] = cte
            name = self._read_table(source)
            tables.append(name)
            return ("table_unit", f"__{name}__")
        if (isinstance(source, exp.Subquery) and not joined and source.args.get("alias") is None
                and isinstance(source.this, exp.Table) and not source.this.args.get("joins")):
            return self._read_source(source.this, joined=joined, tables=tables)  # FROM (t): the official reads t
        if isinstance(source, exp.Subquery):
            if joined:
                self.outside("join_subquery")
            if source.args.get("alias") is not None:
                self.outside("from_subquery_alias")
            return ("sql", self.read_query(source.this))
        self.outside(f"from_{source.key}")
        return None

    def _read_table(self, table: exp.Table) -> str:
        if table.args.get("db") or table.args.get("catalog"):
            self.outside("qualified_table_name")
        if table.this.quoted:
            self.outside("quoted_identifier")
        for key, value in table.args.items():  # PIVOT/UNPIVOT, TABLESAMPLE, ONLY, WITH ORDINALITY, ...: no grammar reads them
            if key not in ("this", "db", "catalog", "alias", "joins") and value not in (None, [], False):
                self.outside(f"table_{key}")
        alias = table.args.get("alias")
        if isinstance(alias, exp.TableAlias) and alias.columns:
            self.outside("table_alias_columns")
        name = _unmarked(table.name.lower())
        if not self.schema.has_table(name):
            self.outside("unknown_table")
        return name

    def _alias_read_as_table(self, table: exp.Table, tables: list[str]) -> list[tuple[str, str]]:
        """The table unit the official reads from an alias written without ``AS`` (``FROM song T1``).

        The official FROM reader takes the word after a table for another table: the table an ``AS`` alias of
        that name stands for anywhere in the query (its global alias map), or the schema's table of that name;
        any other word fails (``KeyError``)."""
        alias = table.args.get("alias")
        word = alias.this if alias is not None else None
        if not isinstance(word, exp.Identifier) or alias_written_with_as(self.text, table.this, word):
            return []
        name = self.aliases.get(word.name.lower()) or word.name.lower()
        if word.quoted or not self.schema.has_table(name):
            self.outside("table_alias_without_as")
            return []
        tables.append(name)
        return [("table_unit", f"__{name}__")]

    def _scan_aliases(self, tree: exp.Expression) -> None:
        """The official alias pre-pass: every alias written after ``AS``, the last one written wins."""
        found: list[tuple[int, str, str]] = []
        for table in tree.find_all(exp.Table):
            alias = table.args.get("alias")
            if alias is None or not isinstance(alias.this, exp.Identifier):
                continue
            if not alias_written_with_as(self.text, table.this, alias.this):
                continue  # the official map reads the word after each ``as``: this one is read as a table
            found.append((alias.this.meta.get("start", 0), alias.name.lower(), table.name.lower()))
        for _, alias_name, table_name in sorted(found):
            if self.schema.has_table(alias_name):
                self.outside("alias_is_table_name")
            self.aliases[alias_name] = table_name

    # -- columns and units -----------------------------------------------------------
    def _read_column(self, node: exp.Expression, tables: list[str]) -> str:
        if isinstance(node, exp.Star):
            return ALL_COLUMNS
        assert isinstance(node, exp.Column)
        if isinstance(node.this, exp.Star):
            if node.table:
                self.outside("qualified_star")
            return ALL_COLUMNS
        if node.args.get("db") or node.args.get("catalog"):
            self.outside("qualified_table_name")
        qualifier = node.args.get("table")
        if not isinstance(node.this, exp.Identifier):  # ``T1.7``, ``T1.18_49_x``: sqlglot reads a number after the dot
            self.outside("numeric_column_name")
        elif node.this.quoted or (isinstance(qualifier, exp.Identifier) and qualifier.quoted):  # "T2".name too
            self.outside("quoted_identifier")
        name = _unmarked(node.name.lower())
        if node.table:
            return self._qualified_column(node.table.lower(), name)
        return self._unqualified_column(name, tables)

    def _qualified_column(self, qualifier: str, name: str) -> str:
        table = self.aliases.get(qualifier, qualifier)
        if not self.schema.has_column(table, name):
            self.outside("unknown_column")
        return f"__{table}.{name}__"

    def _unqualified_column(self, name: str, tables: list[str]) -> str:
        for table in tables:
            if self.schema.has_column(table, name):
                return f"__{table}.{name}__"
        self.outside("unknown_column")
        return f"__?.{name}__"

    def _read_col_unit(self, node: exp.Expression, tables: list[str]) -> ColUnit:
        self.budget.spend()
        node = _strip_paren(node)
        if isinstance(node, (exp.Column, exp.Star)):
            return (0, self._read_column(node, tables), False)
        agg_id = _AGGREGATES.get(type(node))
        if agg_id is not None:
            inner, distinct = self._aggregate_argument(node)
            if isinstance(inner, (exp.Column, exp.Star)):
                return (agg_id, self._read_column(inner, tables), distinct)
            self.outside("aggregate_of_expression")
            return (agg_id, PLACEHOLDER_COLUMN, distinct)
        self.outside(_construct_name(node))
        return (_first_aggregate_id(node), PLACEHOLDER_COLUMN, False)

    def _aggregate_argument(self, node: exp.Expression) -> tuple[exp.Expression, bool]:
        inner = node.this
        if isinstance(inner, exp.Distinct):
            expressions = inner.expressions
            if len(expressions) != 1:
                self.outside("aggregate_of_several_columns")
            return (expressions[0] if expressions else exp.Star()), True
        if node.expressions:
            self.outside("aggregate_of_several_columns")
        return inner, False

    def _read_val_unit(self, node: exp.Expression, tables: list[str]) -> ValUnit:
        self.budget.spend()
        node = _strip_paren(node)
        unit_op = _ARITHMETIC.get(type(node))
        if unit_op is None:
            return (0, self._read_col_unit(node, tables), None)
        left, right = node.this, node.expression
        if _is_number(left) or _is_number(right):
            self.outside("arithmetic_with_constant")
        elif isinstance(left, tuple(_ARITHMETIC)) or isinstance(right, tuple(_ARITHMETIC)):
            self.outside("nested_arithmetic")
        return (unit_op, self._read_col_unit(left, tables), self._read_col_unit(right, tables))

    def _read_select_item(self, node: exp.Expression, tables: list[str]) -> tuple[int, ValUnit]:
        if isinstance(node, exp.Alias):
            self.outside("column_alias")
            node = node.this
        agg_id = _AGGREGATES.get(type(node))
        if agg_id is not None:
            inner, distinct = self._aggregate_argument(node)
            if distinct:
                return agg_id, (0, (0, self._read_column_or_placeholder(inner, tables), True), None)
            return agg_id, self._read_val_unit(inner, tables)
        if isinstance(node, tuple(_ARITHMETIC)) and type(_strip_paren(node.this)) in _AGGREGATES:
            self.outside("aggregate_arithmetic")
        return 0, self._read_val_unit(node, tables)

    def _read_column_or_placeholder(self, node: exp.Expression, tables: list[str]) -> str:
        if isinstance(node, (exp.Column, exp.Star)):
            return self._read_column(node, tables)
        self.outside(_construct_name(node))
        return PLACEHOLDER_COLUMN

    # -- conditions ---------------------------------------------------------------------
    def _read_clause_condition(self, clause: exp.Expression | None, tables: list[str]) -> list[Any]:
        return [] if clause is None else self.read_condition(clause.this, tables)

    def read_condition(self, node: exp.Expression, tables: list[str]) -> list[Any]:
        """The official flat list ``[cond, "and"|"or", cond, ...]``, with its OR-swallowing quirk."""
        flat = self._flatten_connectives(node, negated=False)
        out: list[Any] = []
        i = 0
        while i < len(flat):
            atom, negated = flat[i]
            unit, ends_with_column = self._read_condition_unit(atom, negated, tables)
            out.append(unit)
            i += 1
            while ends_with_column and i < len(flat) and flat[i] == "or":
                end = self._value_scan_end(flat[i + 1][0])
                if end not in (None, "failure") and self.strict:
                    # ``b > c OR d IN (SELECT ...)``: the scan stops at SELECT/``)``, ending the condition
                    self.cut, self.cut_word = True, str(end)
                    return out
                if end is not None:
                    self.outside("column_value_before_or")
                i += 2
            if i < len(flat):
                out.append(flat[i])
                i += 1
        return out

    def _flatten_connectives(self, node: exp.Expression, *, negated: bool) -> list[Any]:
        """``[(atom, negated), "and"|"or", ...]`` left to right, without recursion (long AND chains)."""
        flat: list[Any] = []
        stack: list[Any] = [(node, negated)]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                flat.append(item)
                continue
            node, negated = item
            self.budget.spend()
            if isinstance(node, (exp.And, exp.Or)):
                connector = "and" if isinstance(node, exp.And) else "or"
                stack.extend(((node.expression, negated), connector, (node.this, negated)))
            elif isinstance(node, exp.Paren):
                self.outside("parenthesized_condition")
                stack.append((node.this, negated))
            elif isinstance(node, exp.Not) and isinstance(_strip_paren(node.this), (exp.And, exp.Or)):
                self.outside("not_expression")
                stack.append((_strip_paren(node.this), not negated))
            else:
                flat.append((node, negated))
        return flat

    def _value_scan_end(self, node: exp.Expression) -> str | None:
        """Where the official value scan over a swallowed OR-condition stops: ``None`` (it reads past it),
        the word that ends the condition there (``select``, ``)``, a join keyword, ...) or ``"failure"`` (at
        ``,`` or ``and``: the official parser then fails on the next word)."""
        for token in _tokens(node.sql(), "sqlite"):
            if token.token_type in (TokenType.STRING, TokenType.IDENTIFIER):
                continue  # a value or a quoted name: one word of the official tokenizer, never a stop
            word = token.text.lower()
            if word in (",", "and"):
                return "failure"
            if word == ")" or word in _SCAN_ENDS_READING:
                return word
        return None

    def _read_condition_unit(self, node: exp.Expression, negated: bool, tables: list[str]) -> tuple[tuple[Any, ...], bool]:
        not_op = negated
        if isinstance(node, exp.Not):
            inner = _strip_paren(node.this)
            if not isinstance(inner, _NEGATABLE):
                self.outside("is_null" if isinstance(inner, exp.Is) else "not_expression")
            not_op, node = not not_op, inner
        if node.args.get("negate"):
            not_op = not not_op
        if isinstance(node, exp.Escape):
            self.outside("like_escape")
            node = node.this
        op_id = self._condition_op(node)
        if type(node) not in _COMPARISONS and not isinstance(node, exp.Binary):
            # A bare boolean condition (lenient reading only: _condition_op raised otherwise).
            return (not_op, op_id, self._read_val_unit(node, tables), None, None), False
        if isinstance(node, exp.Exists):
            placeholder: ValUnit = (0, (0, PLACEHOLDER_COLUMN, False), None)
            return (not_op, op_id, placeholder, self.read_query(node.this), None), False
        lhs = self._read_val_unit(node.this, tables)
        if isinstance(node, exp.Between):
            val1, _ = self._read_value(node.args["low"], tables)
            val2, is_column = self._read_value(node.args["high"], tables)
            return (not_op, op_id, lhs, val1, val2), is_column
        val1, is_column = self._read_in_value(node, tables) if isinstance(node, exp.In) else \
            self._read_value(node.expression, tables)
        return (not_op, op_id, lhs, val1, None), is_column

    def _condition_op(self, node: exp.Expression) -> int:
        op = _COMPARISONS.get(type(node))
        if op is None:
            self.outside(_construct_name(node))
            return WHERE_OPS.index("like" if isinstance(node, exp.ILike) else "=")  # ILIKE: LIKE, ignoring case
        if isinstance(node, exp.Is):  # IS NULL / IS TRUE: the official reads NULL or TRUE as a column, and fails
            self.outside("is_null")
        elif op == "exists":
            self.outside("exists")
        return WHERE_OPS.index(op)

    def _read_in_value(self, node: exp.In, tables: list[str]) -> tuple[Any, bool]:
        query = node.args.get("query")
        if query is not None:
            return self.read_query(query), False
        values = node.expressions
        if len(values) != 1:
            self.outside("in_value_list")
            return None, False
        return self._read_value(values[0], tables)

    def _read_value(self, node: exp.Expression, tables: list[str]) -> tuple[Any, bool]:
        """A condition value; the flag says whether it was read as a column (see the OR quirk)."""
        self.budget.spend()
        if isinstance(node, exp.Paren) and isinstance(node.this, (exp.Column, exp.Star)):
            self.outside("parenthesized_column_value")
        node = _strip_paren(node)
        if isinstance(node, (exp.Subquery, exp.Select, exp.SetOperation)):
            return self.read_query(node), False
        if isinstance(node, exp.Literal):
            self._check_number_token(node, "+")
            return self._literal_value(node), False
        if isinstance(node, exp.Neg) and _is_number(node):
            self._check_number_token(node.this, "-")
            value = self._literal_value(node.this)
            return (-value if isinstance(value, float) else value), False
        if isinstance(node, exp.Column) and not node.table and written_in_double_quotes(self.text, node.this):
            return f'"{node.name}"', False  # the official tokenizer reads "x" as a string value
        if isinstance(node, (exp.Column, exp.Star)):
            return self._read_col_unit(node, tables), True
        if type(node) in _AGGREGATES:
            self.outside("aggregate_value")  # the official value scanner stops at its ")"
            return self._read_col_unit(node, tables), True
        if isinstance(node, tuple(_ARITHMETIC)):
            return self._arithmetic_value(node, tables)
        self.outside("null_value" if isinstance(node, exp.Null) else _construct_name(node))
        return None, False

    def _check_number_token(self, node: exp.Literal, sign: str) -> None:
        """The official value reader calls float() on the number's token: ``0x28`` fails, and a sign written
        apart (``- 40``, ``+ 40``; sqlglot drops a unary plus) is a token of its own, read as a column."""
        start, end = node.meta.get("start"), node.meta.get("end")
        if node.is_string or start is None or end is None:
            return
        try:
            float(self.text[start : end + 1])
        except ValueError:
            self.outside("number_format")
        at = start - 1
        while at >= 0 and self.text[at].isspace():
            at -= 1
        if 0 <= at < start - 1 and self.text[at] == sign:
            self.outside("spaced_sign")

    def _literal_value(self, node: exp.Literal) -> Any:
        if node.is_string:
            return f'"{node.this}"'
        try:
            return float(node.this)
        except ValueError:
            self.outside("number_format")
            return None

    def _arithmetic_value(self, node: exp.Expression, tables: list[str]) -> tuple[Any, bool]:
        """The official value scanner reads the leftmost column and skips the rest of the expression."""
        leftmost = node
        while isinstance(leftmost, tuple(_ARITHMETIC)):
            leftmost = leftmost.this
        leftmost = _strip_paren(leftmost)
        if isinstance(leftmost, (exp.Column, exp.Star)):
            return self._read_col_unit(leftmost, tables), True
        self.outside("arithmetic_with_constant")
        return None, False

    # -- GROUP BY, ORDER BY ------------------------------------------------------------
    def _read_group_by(self, group: exp.Group | None, tables: list[str]) -> list[ColUnit]:
        if group is None:
            return []
        if any(group.args.get(key) for key in ("rollup", "cube", "grouping_sets", "totals")):
            self.outside("group_by_modifier")
        units = []
        for node in group.expressions:
            if _is_number(node):
                self.outside("group_by_position")
            units.append(self._read_col_unit(node, tables))
        return units

    def _read_order_by(self, order: exp.Order | None, tables: list[str],
                       stop: int | None = None) -> tuple[Any, ...] | list[Any]:
        """``stop``: the text offset where the official reader stops (``NULLS LAST``, ``a IS NULL``): the items
        after it are never read, and of a predicate it stops in only the operand before it (no direction)."""
        if order is None:
            return []
        if [str(ordered.this).lower() for ordered in order.expressions] == [BARE_ORDER_BY]:
            return ("asc", [])  # a bare ``ORDER BY``: the official reads it as no items (spider_tail)
        direction = "asc"
        units = []
        starts = [_first_offset(ordered) for ordered in order.expressions]
        for index, ordered in enumerate(order.expressions):
            stops_here = stop is not None and all(start is None or start > stop for start in starts[index + 1:])
            operand = _predicate_operand(ordered.this) if stops_here else None
            if operand is not None and isinstance(ordered.this, exp.Not) and _word_before(self.text, starts[index]) == "not":
                operand = None  # ``ORDER BY NOT a IN (...)``: the official reads "not" as the item, and fails
            if operand is not None:
                units.append(self._read_val_unit(operand, tables))  # ``ORDER BY a IS NULL DESC``: ``a``, asc
                break
            if _is_number(ordered.this):
                self.outside("order_by_position")
            units.append(self._read_val_unit(ordered.this, tables))
            desc = ordered.args.get("desc")
            if desc is not None:
                direction = "desc" if desc else "asc"
            if stops_here:
                break
        return (direction, units)
