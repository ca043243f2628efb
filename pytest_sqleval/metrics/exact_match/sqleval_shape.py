"""The clause-by-clause shape of any query sqlglot parses, with names resolved per scope.

A :class:`QueryShape` holds, for one query, one alias-free comparable value
per component (see :mod:`.sqleval` for what each component compares). It is
built from the sqlglot tree:

* **Columns** resolve per scope (each SELECT, innermost first, then outer
  scopes for correlated references): ``alias.col`` through that scope's
  aliases, an unqualified column to the FROM source that has it (tables through
  the schema, subqueries and CTEs through their output names), a SELECT alias
  (a name no FROM source has) to the aliased expression, ``ORDER BY 1`` /
  ``GROUP BY 1`` to the first SELECT item. A column is written ``table.column``; a table used
  twice in one FROM (self-join) is numbered in FROM order (``t#1``, ``t#2``); a
  FROM subquery or CTE is named by a digest of its own shape, so neither alias
  names nor CTE names matter.
* **Join equivalence**: inside one SELECT, two columns equated by an inner-join
  ON condition (``JOIN ... ON a.x = b.y``) are interchangeable everywhere else
  in that SELECT (they are equal in every row); the alphabetically first name
  represents them. Foreign keys of the schema are *not* used, so two different
  columns that reference the same key are never merged.
* **Expressions** become canonical strings: a generic serialisation of the
  tree (parentheses only through the tree's structure), numbers compared by
  value (``1`` = ``1.0``), strings case-sensitive, literal values replaced by
  ``?`` under ``values: ignore``. Conditions are normalised: AND/OR chains are
  flattened and their operands sorted, ``a = b`` equals ``b = a``, ``5 < a``
  equals ``a > 5``, ``a NOT LIKE b`` equals ``NOT a LIKE b``.
* **Double-quoted strings**: under the ``sqlite`` dialect ``"x"`` that names
  no column in scope is the string ``'x'``, as SQLite itself reads it.
* **Subqueries** (in conditions, FROM, CTEs) are compared whole, by the digest
  of their shape.

Each subquery's shape and each expression's string is computed once per
scope (memoised), so the work is polynomial in the query's size (nested
subqueries used to be rebuilt once per component that reads them: 2^depth),
and every step spends one unit of a :class:`~pytest_sqleval.sql.limits.WorkBudget`.
AND/OR chains are walked without recursion. A canonical string longer than
:data:`LONG_KEY` characters is replaced by a digest of itself (equal strings,
equal digests), so strings stay small even when SELECT aliases refer to each
other (``a+a AS b, b+b AS c, ...`` would otherwise double at every alias).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import astuple, dataclass, field
from decimal import Decimal, InvalidOperation
from functools import cached_property
from typing import Any

from sqlglot import exp

from ...schema import Schema
from ...sql.limits import WorkBudget
from .spider_text import written_in_double_quotes

_MIRRORED: dict[type[exp.Expression], type[exp.Expression]] = {
    exp.GT: exp.LT, exp.LT: exp.GT, exp.GTE: exp.LTE, exp.LTE: exp.GTE,
}
_SYMMETRIC = (exp.EQ, exp.NEQ, exp.NullSafeEQ)
_AGGREGATES = (exp.AggFunc,)
_QUERIES = (exp.Select, exp.SetOperation, exp.Subquery)
_SET_OPERATIONS = {exp.Union: "union", exp.Intersect: "intersect", exp.Except: "except"}
#: Canonical strings longer than this are replaced by ``#<digest>``.
LONG_KEY = 1024


@dataclass(frozen=True)
class QueryShape:
    """One comparable value per component; multisets are sorted tuples."""

    select: tuple[str, ...]
    select_no_agg: tuple[str, ...]
    distinct: str
    sources: tuple[str, ...]
    join_kinds: tuple[str, ...]
    join_on: tuple[str, ...]
    where: str
    where_lhs: tuple[str, ...]
    where_connectors: tuple[str, ...]
    group: tuple[str, ...]
    having: str
    order: tuple[tuple[str, str, str], ...]  # (key, asc/desc, nulls first/last)
    limit: str
    set_ops: tuple[tuple[str, str], ...]
    keywords: tuple[str, ...]
    qualify: str = ""  # DuckDB's QUALIFY condition (compared with WHERE)

    @cached_property
    def digest(self) -> str:
        return hashlib.sha1(repr(astuple(self)).encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass
class _Source:
    identity: str  # the canonical name of this FROM source
    columns: tuple[str, ...] | None  # None: unknown (table missing from the schema)
    names: tuple[str, ...]  # alias or table name it is referred to by


@dataclass
class _Scope:
    sources: list[_Source]
    select_aliases: dict[str, exp.Expression] = field(default_factory=dict)
    select_items: list[exp.Expression] = field(default_factory=list)
    equivalent: dict[str, str] = field(default_factory=dict)


def sorted_tuple(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(items))


#: CTEs in view that a query's reading gets for free; each one beyond costs a step of the work budget (a chain of
#: thousands of CTEs, each read with all the earlier ones in view, is quadratic work).
FREE_VISIBLE_CTES = 64


class ShapeBuilder:
    """Builds the shapes of one statement (``text``); ``ignore_values`` replaces literals by ``?``."""

    def __init__(self, schema: Schema, text: str, dialect: str, *, ignore_values: bool,
                 budget: WorkBudget | None = None) -> None:
        self.schema = schema
        self.text = text
        self.sqlite = dialect == "sqlite"
        self.ignore_values = ignore_values
        self.budget = budget if budget is not None else WorkBudget()
        # (node, outer scopes, CTEs) -> shape; the value keeps the key's objects alive so their ids stay unique.
        self._shapes: dict[tuple[Any, ...], tuple[QueryShape, Any]] = {}

    # -- queries --------------------------------------------------------------------
    def query(self, node: exp.Expression, outer: tuple[_Scope, ...] = (), ctes: dict[str, _Source] | None = None) -> QueryShape:
        """The shape of a query in the given outer scopes and CTEs, built once (memoised)."""
        visible = tuple(ctes.items()) if ctes else ()
        if len(visible) > FREE_VISIBLE_CTES:  # the key (and _query's copy) cost a step per CTE in view, cached or not
            self.budget.spend(len(visible) - FREE_VISIBLE_CTES)
        key = (id(node), tuple(map(id, outer)), tuple((name, id(source)) for name, source in visible))
        cached = self._shapes.get(key)
        if cached is None:
            self.budget.spend()
            cached = (self._query(node, outer, ctes), (node, outer, visible))
            self._shapes[key] = cached
        return cached[0]

    def _query(self, node: exp.Expression, outer: tuple[_Scope, ...], ctes: dict[str, _Source] | None) -> QueryShape:
        ctes = dict(ctes or {})
        node = _unparenthesised(node)
        with_ = node.args.get("with_")
        if with_ is not None:
            for cte in with_.expressions:
                if with_.args.get("recursive"):  # its own name inside its body: the CTE itself, whatever it is called
                    ctes[cte.alias_or_name.lower()] = _Source("(recursive)", _derived_columns(cte, cte.this), ())
                shape = self.query(cte.this, outer, ctes)
                ctes[cte.alias_or_name.lower()] = _Source(f"({shape.digest})", _derived_columns(cte, cte.this), ())
        if isinstance(node, exp.SetOperation):
            return self._set_operation(node, outer, ctes)
        if isinstance(node, exp.Select):
            return self._select(node, outer, ctes)
        raise ValueError(f"not a query: {node.key}")

    def _set_operation(self, node: exp.SetOperation, outer: tuple[_Scope, ...], ctes: dict[str, _Source]) -> QueryShape:
        operands, operators = _flatten_set_operation(node)
        if any(isinstance(operand, exp.Select) and _own_ending(operand) for operand in operands) \
                or _inner_set_operation_ending(node):
            # ``SELECT ... LIMIT 3 UNION SELECT ...``: sqlglot keeps the LIMIT on the operand, but SQLite, PostgreSQL
            # and DuckDB refuse it ("LIMIT clause should come after UNION not before"); parenthesised, it is a Subquery
            raise ValueError("an ORDER BY, LIMIT or OFFSET before a set operator: no database runs it "
                             "(parenthesise the operand, or move it after the last operand)")
        head = operands[0]
        trailing = {key: node.args[key] for key in ("order", "limit", "offset") if node.args.get(key) is not None}
        core = _unparenthesised(head)
        whole: tuple[tuple[str, str], ...] = ()
        if isinstance(core, exp.Select) and (core is head or not (_own_ending(core) or core.args.get("with_"))):
            # (parentheses around a plain first operand, ``(SELECT ...) UNION ...``, change nothing)
            head_shape = self._select(core, outer, ctes, trailing)
        else:
            # ``(SELECT ... LIMIT 2) UNION ...``, ``(A UNION B LIMIT 2) INTERSECT C``: the first operand is compared whole, as
            # the others are, and the compound's own ORDER BY/LIMIT are read on its first SELECT (they were dropped)
            whole = (("(first operand)", self.query(head, outer, ctes).digest),)
            first = core
            while isinstance(first, (exp.Subquery, exp.SetOperation)):
                first = first.this
            if not isinstance(first, exp.Select):
                raise ValueError(f"not a query: {first.key}")
            first = first.copy()
            for key in ("order", "limit", "offset", "with_"):
                first.set(key, None)
            head_shape = self._select(first, outer, ctes, trailing)
        rest = tuple((op, self.query(operand, outer, ctes).digest) for op, operand in zip(operators, operands[1:], strict=True))
        keywords = sorted_tuple(set(head_shape.keywords) | {op.split()[0] for op, _ in rest})
        return _replace(head_shape, set_ops=whole + rest, keywords=keywords)

    def _select(self, select: exp.Select, outer: tuple[_Scope, ...], ctes: dict[str, _Source],
                trailing: dict[str, exp.Expression] | None = None) -> QueryShape:
        select = _inline_named_windows(select)
        args = {**select.args, **(trailing or {})}
        if args.get("into") is not None or args.get("locks"):
            # SELECT ... INTO writes a table and FOR UPDATE/SHARE locks rows: no read-only query, as the guard says
            raise ValueError("not a query: " + ("SELECT ... INTO" if args.get("into") is not None else "FOR UPDATE/SHARE"))
        scope = _Scope(sources=[])
        keys = _Keys(self, (scope, *outer), ctes)
        joins = self._from(args.get("from_"), args.get("joins") or [], scope, outer, ctes)
        on_conditions = [on for _, on in joins if on is not None]
        join_on = sorted_tuple(key for on in on_conditions for key in keys.conjuncts(on))
        scope.equivalent = _join_equivalence([on for kind, on in joins if kind == "inner" and on is not None], keys)
        items = list(args.get("expressions") or [])
        scope.select_items = [_unalias(item) for item in items]
        scope.select_aliases = {item.alias.lower(): item.this for item in items if isinstance(item, exp.Alias)}
        keys.forget()  # the scope's join equivalence and SELECT aliases are known from here on
        where = _clause_condition(args.get("where"))
        having = _clause_condition(args.get("having"))
        qualify = _clause_condition(args.get("qualify"))
        group = args.get("group")
        order = args.get("order")
        # the NULLs' place as sqlglot reads it in the dialect (written or the dialect's default): it orders rows too
        order_keys = tuple((keys.order_key(o.this), "desc" if o.args.get("desc") else "asc",
                            "nulls first" if o.args.get("nulls_first") else "nulls last")
                           for o in (order.expressions if order is not None else []))
        shape = QueryShape(
            select=sorted_tuple(keys.expression(item) for item in scope.select_items),
            select_no_agg=sorted_tuple(keys.expression(_unaggregate(item)) for item in scope.select_items),
            distinct=keys.expression(args.get("distinct")) if args.get("distinct") is not None else "",
            sources=sorted_tuple(source.identity.split("#")[0] for source in scope.sources),
            join_kinds=sorted_tuple(kind for kind, _ in joins),
            join_on=join_on,
            where=keys.condition(where) if where is not None else "",
            where_lhs=sorted_tuple(keys.left_side(atom) for atom in _atoms(where)),
            where_connectors=sorted_tuple(set(_connectors(where))),
            group=sorted_tuple(keys.expression(e, ordering=True) for e in (group.expressions if group is not None else [])),
            having=keys.condition(having) if having is not None else "",
            order=order_keys,
            limit=self._limit(args, keys) + (f" sample {args['sample'].sql().lower()}" if args.get("sample") else ""),
            set_ops=(),
            keywords=(),
            qualify=keys.condition(qualify) if qualify is not None else "",
        )
        return _replace(shape, keywords=_keywords(shape, [c for c in (*on_conditions, where, having) if c is not None]))

    def _limit(self, args: dict[str, Any], keys: _Keys) -> str:
        limit, offset = args.get("limit"), args.get("offset")
        parts = [_limit_value(node, keys) if node is not None else "" for node in (limit, offset)]
        if parts[1] == _limit_value(exp.Offset(expression=exp.Literal.number(0)), keys):
            parts[1] = ""  # `OFFSET 0` skips no row: `LIMIT 1 OFFSET 0` is `LIMIT 1`
        if not any(parts):
            return ""
        return "limit " + " offset ".join(parts) if parts[1] else "limit " + parts[0]

    # -- FROM -----------------------------------------------------------------------
    def _from(self, from_: exp.From | None, joins: list[exp.Join], scope: _Scope,
              outer: tuple[_Scope, ...], ctes: dict[str, _Source]) -> list[tuple[str, exp.Expression | None]]:
        """Fills the scope's sources; returns (join kind, ON condition or None) per join."""
        if from_ is None:
            return []
        first = _parenthesized_table(from_.this)
        if isinstance(first, exp.Table) and first.args.get("joins"):  # FROM (a JOIN b ON ...) JOIN c: left-deep as written
            joins = [*first.args["joins"], *joins]
            first = first.copy()
            first.set("joins", None)
        for node in [first, *[join.this for join in joins]]:
            scope.sources.append(self._source(node, outer, ctes))
        _number_repeated(scope.sources)
        joined = []
        for index, join in enumerate(joins, start=1):
            previous, source = scope.sources[:index], scope.sources[index]
            natural = _natural_columns(join, previous, source)
            joined.append((_join_kind(join, natural_read=natural is not None),
                           _join_condition(join, previous, source, natural)))
        return joined

    def _source(self, node: exp.Expression, outer: tuple[_Scope, ...], ctes: dict[str, _Source]) -> _Source:
        unwrapped = _parenthesized_table(node)
        if not unwrapped.args.get("joins"):  # a parenthesised join is read by _from (first source) or not at all
            node = unwrapped
        alias = node.alias.lower() if node.alias else ""
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            name = node.name.lower()
            if name in ctes and not node.args.get("db"):
                cte = ctes[name]
                return _Source(cte.identity, cte.columns, (alias or name,))
            table = self.schema.table(name)
            columns = tuple(c.lower() for c in table.columns) if table is not None else None
            return _Source(name + _table_modifiers(node, columns), columns, (alias or name,))
        if isinstance(node, exp.Subquery):
            shape = self.query(node.this, outer, ctes)
            return _Source(f"({shape.digest})", _derived_columns(node, node.this), (alias,) if alias else ())
        return _Source(f"{node.key}:{node.sql().lower()}", None, (alias,) if alias else ())


#: A table reference's parts that only name it (the rest change its rows or columns: PIVOT/UNPIVOT, TABLESAMPLE,
#: ONLY, WITH ORDINALITY, a version, renamed columns).
_TABLE_NAMING_ARGS = frozenset({"this", "db", "catalog", "alias", "joins"})


def _table_modifiers(node: exp.Table, columns: tuple[str, ...] | None) -> str:
    """What a table reference does beyond naming the table, as text joined to its identity ("" for none): ``t
    PIVOT (...)``, ``t TABLESAMPLE (1 ROWS)`` or ``t AS u(b, a)`` (its columns renamed) is another source than ``t``."""
    parts = [f"{key}={_modifier_sql(value)}" for key, value in sorted(node.args.items())
             if key not in _TABLE_NAMING_ARGS and value not in (None, False, [], ())]
    alias = node.args.get("alias")
    renamed = [column.name.lower() for column in alias.columns] if isinstance(alias, exp.TableAlias) else []
    if renamed and (columns is None or tuple(renamed) != columns[:len(renamed)]):
        parts.append("columns=" + ",".join(renamed))
    return "[" + "; ".join(parts) + "]" if parts else ""


def _modifier_sql(value: Any) -> str:
    if isinstance(value, exp.Expression):
        return value.sql().lower()
    if isinstance(value, (list, tuple)):
        return ", ".join(_modifier_sql(item) for item in value)
    return str(value).lower()


class _Keys:
    """Canonical strings for the expressions of one scope."""

    def __init__(self, builder: ShapeBuilder, scopes: tuple[_Scope, ...], ctes: dict[str, _Source]) -> None:
        self.builder = builder
        self.scopes = scopes
        self.ctes = ctes
        self._resolving: set[str] = set()
        # (kind, id(node), flags..., aliases being resolved) -> (string, node): the node is kept alive so
        # that its id is not reused by a temporary node (``condition`` copies negated predicates).
        self._memo: dict[tuple[Any, ...], tuple[str, exp.Expression]] = {}

    def forget(self) -> None:
        """Drop the memo: the scope's state (join equivalence, SELECT aliases) changed."""
        self._memo.clear()

    def _remembered(self, key: tuple[Any, ...], node: exp.Expression, compute: Callable[[], str]) -> str:
        key = (*key, frozenset(self._resolving) if self._resolving else None)
        cached = self._memo.get(key)
        if cached is None:
            self.builder.budget.spend()
            text = compute()
            if len(text) > LONG_KEY:
                text = "#" + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
            cached = (text, node)
            self._memo[key] = cached
        return cached[0]

    # -- columns --------------------------------------------------------------------
    def column(self, node: exp.Column, *, raw: bool = False) -> str:
        """``table.column`` (or ``(digest).column``); ``raw`` skips the join equivalence."""
        if isinstance(node.this, exp.Star):
            qualifier = node.table.lower()
            source = self._source_named(qualifier) if qualifier else None
            return f"{source.identity if source else qualifier}.*"
        name = node.name.lower()
        resolved = self._qualified(node.table.lower(), name) if node.table else self._unqualified(name)
        return resolved if raw else self.scopes[0].equivalent.get(resolved, resolved)

    def _select_alias(self, node: exp.Column) -> exp.Expression | None:
        """The SELECT item an unqualified name stands for (SQLite allows aliases anywhere), if no column has it."""
        if node.table or isinstance(node.this, exp.Star):
            return None
        name = node.name.lower()
        target = self.scopes[0].select_aliases.get(name)
        if target is None or name in self._resolving or self._has_column(name):
            return None
        return target

    def order_key(self, node: exp.Expression) -> str:
        """An ORDER BY key: a bare name that is a SELECT alias is that output column even when a FROM column has
        the name (SQLite, DuckDB and PostgreSQL all sort ``SELECT avg(age) AS age ... ORDER BY age`` by the
        average); anything else reads as in GROUP BY (positions, then columns before aliases)."""
        if isinstance(node, exp.Column) and not node.table and isinstance(node.this, exp.Identifier):
            name = node.name.lower()
            target = self.scopes[0].select_aliases.get(name)
            if target is not None and name not in self._resolving:
                return self._aliased_expression(name, target)
        return self.expression(node, ordering=True)

    def _aliased_expression(self, name: str, target: exp.Expression) -> str:
        self._resolving.add(name)
        try:
            return self.expression(target)
        finally:
            self._resolving.discard(name)

    def _source_named(self, qualifier: str) -> _Source | None:
        for scope in self.scopes:
            for source in scope.sources:
                if qualifier in source.names:
                    return source
        return None

    def _qualified(self, qualifier: str, name: str) -> str:
        for depth, scope in enumerate(self.scopes):
            for source in scope.sources:
                if qualifier in source.names:
                    return f"{_outer(depth)}{_column_key(source, name)}"
        return f"{qualifier}.{name}"

    def _whole_only_source(self, node: exp.Column) -> bool:
        """``t.*`` as a SELECT item where ``t`` is the SELECT's only source: every column, as ``*`` reads."""
        if not isinstance(node.this, exp.Star) or not isinstance(node.parent, exp.Select):
            return False
        sources = self.scopes[0].sources
        return len(sources) == 1 and node.table.lower() in sources[0].names

    def _has_column(self, name: str) -> bool:
        return any(source.columns and name in source.columns for source in self.scopes[0].sources)

    def _unqualified(self, name: str) -> str:
        for depth, scope in enumerate(self.scopes):
            for source in scope.sources:
                if source.columns is not None and name in source.columns:
                    return f"{_outer(depth)}{_column_key(source, name)}"
            unknown = [s for s in scope.sources if s.columns is None]
            if len(scope.sources) == 1 and unknown:
                return f"{_outer(depth)}{unknown[0].identity}.{name}"
        return f"?.{name}"

    # -- expressions ----------------------------------------------------------------
    def expression(self, node: exp.Expression | None, *, ordering: bool = False, literal_values: bool = False,
                   raw: bool = False) -> str:
        if node is None:
            return ""
        return self._remembered(("expression", id(node), ordering, literal_values, raw), node,
                                lambda: self._expression(node, ordering=ordering, literal_values=literal_values, raw=raw))

    def _expression(self, node: exp.Expression, *, ordering: bool, literal_values: bool, raw: bool) -> str:
        if isinstance(node, exp.Paren):
            return self.expression(node.this, ordering=ordering, literal_values=literal_values, raw=raw)
        if isinstance(node, exp.Column):
            if self._whole_only_source(node):
                return "*"
            if self._string_in_double_quotes(node):
                return self._string_key(node.name, keep=literal_values)
            alias_target = self._select_alias(node)
            if alias_target is not None:
                return self._aliased_expression(node.name.lower(), alias_target)
            return "col:" + self.column(node, raw=raw)
        if isinstance(node, exp.Star):
            return "*"
        if ordering and _is_integer(node) and self.scopes[0].select_items:
            position = int(node.this) - 1
            if 0 <= position < len(self.scopes[0].select_items):
                return self.expression(self.scopes[0].select_items[position])
        if isinstance(node, exp.Literal) or (isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal)):
            return self._literal(node, keep=literal_values)
        if isinstance(node, _QUERIES):
            return "query:" + self.builder.query(node, self.scopes, self.ctes).digest
        if isinstance(node, exp.Identifier):
            return node.name.lower()
        if _is_condition(node):
            return self.condition(node)
        return self._generic(node, raw=raw)

    def _generic(self, node: exp.Expression, *, raw: bool = False) -> str:
        name = f"fn:{str(node.this).lower()}" if isinstance(node, exp.Anonymous) else node.key
        parts = []
        for arg, value in sorted(node.args.items()):  # by name: the order sqlglot set them in is no part of the SQL
            if isinstance(node, exp.Anonymous) and arg == "this":
                continue
            if value is None or value is False or value == []:
                continue
            if isinstance(value, list):
                parts.append(f"{arg}=[{','.join(self.expression(v, raw=raw) for v in value)}]")
            elif isinstance(value, exp.Expression):
                parts.append(f"{arg}={self.expression(value, raw=raw)}")
            else:
                parts.append(f"{arg}={str(value).lower()}")
        return f"{name}({';'.join(parts)})"

    def _string_in_double_quotes(self, node: exp.Column) -> bool:
        """SQLite reads ``"x"`` as the string 'x' when no column of that name is in scope."""
        if not self.builder.sqlite or node.table or not written_in_double_quotes(self.builder.text, node.this):
            return False
        return self._unqualified(node.name.lower()).startswith("?.")

    def _string_key(self, text: str, *, keep: bool) -> str:
        return "lit:?" if self.builder.ignore_values and not keep else f"str:{text}"

    def _literal(self, node: exp.Expression, *, keep: bool) -> str:
        negative = isinstance(node, exp.Neg)
        literal = node.this if negative else node
        if literal.is_string:
            return self._string_key(literal.this, keep=keep)
        if self.builder.ignore_values and not keep:
            return "lit:?"
        try:
            number = Decimal(literal.this) * (-1 if negative else 1)
            return f"num:{number.normalize()}"
        except InvalidOperation:
            return f"num:{'-' if negative else ''}{literal.this}"

    # -- conditions -----------------------------------------------------------------
    def condition(self, node: exp.Expression, *, raw: bool = False) -> str:
        return self._remembered(("condition", id(node), raw), node, lambda: self._condition(node, raw=raw))

    def _condition(self, node: exp.Expression, *, raw: bool = False) -> str:
        node = _strip_parens(node)
        if isinstance(node, (exp.And, exp.Or)):
            name = "and" if isinstance(node, exp.And) else "or"
            return f"{name}[{','.join(sorted(self.condition(c, raw=raw) for c in _chain(node, type(node))))}]"
        if isinstance(node, exp.Not):
            return f"not({self.condition(node.this, raw=raw)})"
        if node.args.get("negate"):
            positive = node.copy()
            positive.set("negate", None)
            return f"not({self.condition(positive, raw=raw)})"
        if isinstance(node, _SYMMETRIC):
            sides = sorted((self.expression(node.this, raw=raw), self.expression(node.expression, raw=raw)))
            return f"{node.key}({sides[0]},{sides[1]})"
        if type(node) in _MIRRORED:
            left, right = self.expression(node.this, raw=raw), self.expression(node.expression, raw=raw)
            mirrored = _MIRRORED[type(node)].key
            return min(f"{node.key}({left},{right})", f"{mirrored}({right},{left})")
        if isinstance(node, exp.In) and node.expressions and set(node.args) <= {"this", "expressions"}:
            # an IN list is a set of values: `IN (2, 1, 1)` is `IN (1, 2)`
            values = sorted({self.expression(value, raw=raw) for value in node.expressions})
            return f"in({self.expression(node.this, raw=raw)};[{','.join(values)}])"
        return self._generic(node, raw=raw)

    def conjuncts(self, node: exp.Expression) -> list[str]:
        """The AND-ed parts of an ON condition, with columns as written (before join equivalence)."""
        node = _strip_parens(node)
        if isinstance(node, exp.And):
            return [key for part in _chain(node, exp.And) for key in self.conjuncts(part)]
        return [self.condition(node, raw=True)]

    def left_side(self, atom: exp.Expression) -> str:
        atom = _strip_parens(atom)
        while isinstance(atom, exp.Not):
            atom = _strip_parens(atom.this)
        if isinstance(atom, exp.Exists):
            return "exists"
        if isinstance(atom, (exp.And, exp.Or)):  # ``NOT (a AND b)``: its conditions' left sides, in any order
            return "(" + ",".join(sorted(self.left_side(part) for part in _atoms(atom))) + ")"
        if isinstance(atom, (exp.Predicate, exp.Binary)) and atom.this is not None:
            left, right = atom.this, atom.args.get("expression")
            if right is not None and (isinstance(atom, _SYMMETRIC) or type(atom) in _MIRRORED):
                left_value, right_value = _is_value(left), _is_value(right)
                if left_value != right_value:  # ``5 < age``, ``(SELECT ...) < age``: ``age`` is the left side
                    return self.expression(right if left_value else left)
                if not left_value:  # ``a = b`` is ``b = a``: the side that sorts first, whichever is written first
                    return min(self.expression(left), self.expression(right))
            if _is_literal(left) and right is not None and not _is_literal(right):
                return self.expression(right)  # ``5 < age`` has ``age`` on its left once oriented
            return self.expression(left)
        return self.expression(atom)


# -- helpers -------------------------------------------------------------------------
def _limit_value(node: exp.Expression, keys: _Keys) -> str:
    """A LIMIT / OFFSET value; ``FETCH FIRST n ROWS ONLY`` is ``LIMIT n`` (n = 1 when unwritten), and PERCENT
    (DuckDB ``LIMIT 10%``) or WITH TIES are part of it."""
    if isinstance(node, exp.Fetch):
        count = node.args.get("count")
        value = keys.expression(count, literal_values=True) if count is not None else "num:1"
    else:
        value = keys.expression(node.expression, literal_values=True)
    options = node.args.get("limit_options")
    if options is not None:
        value += "".join(f" {name}" for name in ("percent", "with_ties") if options.args.get(name))
    return value


def _outer(depth: int) -> str:
    """The mark of a column of an enclosing query (a correlated reference), ``depth`` scopes out: ``singer.age``
    of the subquery's own ``singer`` is not the outer query's ``singer.age``."""
    return f"outer{depth}:" if depth else ""


def _clause_condition(clause: exp.Expression | None) -> exp.Expression | None:
    return clause.this if clause is not None else None


def _replace(shape: QueryShape, **changes: Any) -> QueryShape:
    values = {name: getattr(shape, name) for name in QueryShape.__dataclass_fields__}
    values.update(changes)
    return QueryShape(**values)


def _own_ending(node: exp.Expression) -> bool:
    return any(node.args.get(key) is not None for key in ("order", "limit", "offset"))


def _inner_set_operation_ending(node: exp.SetOperation) -> bool:
    """Whether a set operation nested (unparenthesised) in ``node`` carries its own ORDER BY/LIMIT/OFFSET."""
    inner = [child for child in (node.this, node.expression) if isinstance(child, exp.SetOperation)]
    return any(_own_ending(child) or _inner_set_operation_ending(child) for child in inner)


def _flatten_set_operation(node: exp.Expression) -> tuple[list[exp.Expression], list[str]]:
    if isinstance(node, exp.SetOperation):
        left, left_ops = _flatten_set_operation(_bare_compound(node.this))
        right, right_ops = _flatten_set_operation(node.expression)
        op = _SET_OPERATIONS.get(type(node), node.key)
        if node.args.get("distinct") is False:
            op += " all"
        return left + right, left_ops + [op] + right_ops
    return [node], []


#: A query's own endings in the order they apply to its rows.
_ENDINGS = ("order", "offset", "limit")


def _unparenthesised(node: exp.Expression) -> exp.Expression:
    """The query in parentheses, with the ORDER BY/OFFSET/LIMIT written after them: ``(SELECT ...) ORDER BY a
    LIMIT 1`` is ``SELECT ... ORDER BY a LIMIT 1`` (as PostgreSQL reads it), and ``(SELECT ... ORDER BY a) LIMIT 1``
    too. When the inner query's own endings would apply after the outer ones (``(SELECT ... LIMIT 3) ORDER BY a``,
    two LIMITs) it is ``SELECT * FROM (inner) ORDER BY a``: the outer endings are never dropped."""
    if not isinstance(node, exp.Subquery):
        return node
    inner = _unparenthesised(node.this)
    outer = {key: node.args[key] for key in _ENDINGS if node.args.get(key) is not None}
    with_ = node.args.get("with_")  # ``WITH t AS (...) (SELECT ... FROM t) ORDER BY ...``: sqlglot hangs it here
    if not outer and with_ is None:
        return inner
    own = [_ENDINGS.index(key) for key in _ENDINGS if inner.args.get(key) is not None]
    if isinstance(inner, (exp.Select, exp.SetOperation)) and (not own or not outer
                                                               or max(own) < min(map(_ENDINGS.index, outer))) \
            and (with_ is None or inner.args.get("with_") is None):
        merged = inner.copy()
    else:
        merged = exp.select(exp.Star()).from_(exp.Subquery(this=inner.copy()))
    for key, value in {**outer, "with_": with_}.items():
        if value is not None:
            merged.set(key, value.copy())
    return merged


def _bare_compound(node: exp.Expression) -> exp.Expression:
    """A parenthesised compound as the first operand, ``(A UNION B) EXCEPT C``, is how ``A UNION B EXCEPT C`` groups
    (sqlglot's tree already encodes each dialect's precedence): the compound itself, so the chain reads one way.
    One with an ORDER BY/LIMIT/OFFSET or a WITH of its own (or inside it) is another query and stays whole."""
    inner = _unparenthesised(node) if isinstance(node, exp.Subquery) and node.args.get("alias") is None else node
    if inner is node or not isinstance(inner, exp.SetOperation) or inner.args.get("with_") \
            or _own_ending(inner) or _inner_set_operation_ending(inner):
        return node
    return inner


def _output_names(node: exp.Expression) -> tuple[str, ...] | None:
    """The output column names of a query; None when a ``*`` makes them unknown here."""
    while isinstance(node, exp.Subquery):
        node = node.this
    if isinstance(node, exp.SetOperation):
        return _output_names(node.this)
    if not isinstance(node, exp.Select):
        return ()
    if any(isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star))
           for item in node.expressions):
        return None
    return tuple(item.alias_or_name.lower() for item in node.expressions)


def _inline_named_windows(select: exp.Select) -> exp.Select:
    """``f() OVER w ... WINDOW w AS (PARTITION BY p ORDER BY o)`` is ``f() OVER (PARTITION BY p ORDER BY o)``: a copy
    of ``select`` with its named windows written out (the WINDOW clause is then compared through its uses)."""
    if not select.args.get("windows"):
        return select
    select = select.copy()
    named = {w.name.lower(): w for w in select.args["windows"] if isinstance(w.this, exp.Identifier)}
    select.set("windows", None)
    for window in list(select.find_all(exp.Window)):
        alias = window.args.get("alias")
        definition = named.get(alias.name.lower()) if isinstance(alias, exp.Identifier) else None
        if definition is None or window.parent_select is not select:
            continue
        for key in ("partition_by", "order", "spec"):
            if not window.args.get(key) and definition.args.get(key):
                value = definition.args[key]
                window.set(key, [v.copy() for v in value] if isinstance(value, list) else value.copy())
        window.set("alias", None)
    return select


def _parenthesized_table(node: exp.Expression) -> exp.Expression:
    """``(t)``, ``((t AS a))`` or ``(t) AS a`` as a FROM source is the table ``t`` (named ``a``), and ``(t JOIN u ON
    ...)`` the table ``t`` with its joins; anything else as is."""
    inner, alias = node, None
    while isinstance(inner, exp.Subquery):
        alias = alias or inner.args.get("alias")
        inner = inner.this
    if inner is node or not isinstance(inner, exp.Table) or (inner.args.get("joins") and alias is not None):
        return node
    if alias is None:
        return inner
    table = inner.copy()
    table.set("alias", alias.copy())
    return table


def _derived_columns(aliased: exp.Expression, query: exp.Expression) -> tuple[str, ...] | None:
    """The column names of a CTE or FROM subquery: its column list (``t(a, b)``) if written, else its output."""
    listed = aliased.alias_column_names
    return tuple(name.lower() for name in listed) if listed else _output_names(query)


def _column_key(source: _Source, name: str) -> str:
    """A column of a FROM source; a CTE's or subquery's column is named by its position (its shape is compared
    by content, so the names given to its outputs do not matter: ``count(*) AS n`` then ``n`` = ``AS c`` then ``c``)."""
    if source.identity.startswith("(") and source.columns and name in source.columns:
        return f"{source.identity}.#{source.columns.index(name) + 1}"
    return f"{source.identity}.{name}"


def _number_repeated(sources: list[_Source]) -> None:
    counts = Counter(source.identity for source in sources)
    seen: Counter[str] = Counter()
    for source in sources:
        if counts[source.identity] > 1:
            seen[source.identity] += 1
            source.identity = f"{source.identity}#{seen[source.identity]}"


def _join_kind(join: exp.Join, *, natural_read: bool = False) -> str:
    """``inner`` for JOIN, INNER JOIN, CROSS JOIN and a comma (their ON conditions are compared by
    ``join_on``; sqlglot reads a comma as CROSS in some dialects only); else e.g. ``left``, ``full``.
    ``natural_read``: a NATURAL join whose columns are known reads as the join it stands for (see
    :func:`_natural_columns`)."""
    parts = [str(join.args.get(key) or "").lower() for key in ("method", "side", "kind")]
    dropped = ("inner", "outer", "cross", "natural") if natural_read else ("inner", "outer", "cross")
    words = [p for p in parts if p and p not in dropped]
    return " ".join(words) or "inner"


def _natural_columns(join: exp.Join, previous: list[_Source], joined: _Source) -> list[str] | None:
    """The columns a NATURAL join matches on (those of the joined source that an earlier source has), as its
    ``USING`` list; None for another join, or when a source's columns are unknown (a table not in the schema)."""
    if str(join.args.get("method") or "").lower() != "natural" or joined.columns is None:
        return None
    if any(source.columns is None for source in previous):
        return None
    return [name for name in joined.columns if any(name in source.columns for source in previous if source.columns)]


def _join_condition(join: exp.Join, previous: list[_Source], joined: _Source,
                    natural: list[str] | None = None) -> exp.Expression | None:
    """The ON condition (sqlglot writes a bare JOIN as ON TRUE); USING (k) becomes ``left.k = right.k``, and so
    does each column ``natural`` (a NATURAL join's) names."""
    on = join.args.get("on")
    if isinstance(on, exp.Boolean) and on.this is True:
        on = None
    equalities = []
    using = [identifier.name.lower() for identifier in join.args.get("using") or []]
    for name in using if natural is None else natural:
        left = next((s for s in previous if s.columns is None or name in s.columns), None)
        if left is not None and left.names and joined.names:
            equalities.append(exp.EQ(this=exp.column(name, left.names[0]), expression=exp.column(name, joined.names[0])))
    for equality in equalities:
        on = equality if on is None else exp.And(this=on, expression=equality)
    return on


def _join_equivalence(on_conditions: list[exp.Expression], keys: _Keys) -> dict[str, str]:
    """Columns equated by inner-join ON conditions -> the alphabetically first of their group."""
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        while parent.get(name, name) != name:
            name = parent[name]
        return name

    for condition in on_conditions:
        for atom in _chain(_strip_parens(condition), exp.And):
            atom = _strip_parens(atom)
            if isinstance(atom, exp.EQ) and isinstance(atom.this, exp.Column) and isinstance(atom.expression, exp.Column):
                a, b = find(keys.column(atom.this, raw=True)), find(keys.column(atom.expression, raw=True))
                if a != b:
                    parent[max(a, b)] = min(a, b)
    return {name: find(name) for name in parent}


def _chain(node: exp.Expression, kind: type[exp.Expression] | tuple[type[exp.Expression], ...]) -> list[exp.Expression]:
    """The operands of a chain of ``kind`` (parentheses looked through), left to right, without recursion."""
    operands: list[exp.Expression] = []
    stack = [node]
    while stack:
        current = _strip_parens(stack.pop())
        if isinstance(current, kind):
            stack.extend((current.expression, current.this))
        else:
            operands.append(current)
    return operands


def _atoms(node: exp.Expression | None) -> list[exp.Expression]:
    return [] if node is None else _chain(node, (exp.And, exp.Or))


def _connectors(node: exp.Expression | None) -> list[str]:
    """The AND/OR connectors of a condition (NOT looked through), left to right, without recursion."""
    found: list[str] = []
    stack: list[exp.Expression | str] = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if isinstance(current, str):
            found.append(current)
            continue
        current = _strip_parens(current)
        if isinstance(current, (exp.And, exp.Or)):
            stack.extend((current.expression, "and" if isinstance(current, exp.And) else "or", current.this))
        elif isinstance(current, exp.Not):
            stack.append(current.this)
    return found


def _keywords(shape: QueryShape, conditions: list[exp.Expression]) -> tuple[str, ...]:
    found = {name for name, present in (
        ("where", shape.where), ("group", shape.group), ("having", shape.having),
        ("order", shape.order), ("limit", shape.limit),
    ) if present}
    found.update(direction for _, direction, _ in shape.order)
    for condition in conditions:
        for node in _outside_subqueries(condition):
            if isinstance(node, exp.Or):
                found.add("or")
            if isinstance(node, exp.Not) or node.args.get("negate"):
                found.add("not")
            if isinstance(node, exp.In):
                found.add("in")
            if isinstance(node, exp.Like):
                found.add("like")
    return sorted_tuple(found)


def _outside_subqueries(node: exp.Expression) -> Iterable[exp.Expression]:
    """``node`` and its descendants, not entering subqueries, without recursion."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child for child in current.iter_expressions() if not isinstance(child, _QUERIES))


def _unalias(node: exp.Expression) -> exp.Expression:
    return node.this if isinstance(node, exp.Alias) else node


def _unaggregate(node: exp.Expression) -> exp.Expression:
    node = _strip_parens(node)
    return node.this if isinstance(node, _AGGREGATES) and node.this is not None else node


def _strip_parens(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _is_condition(node: exp.Expression) -> bool:
    return isinstance(node, (exp.Connector, exp.Not, exp.Predicate))


def _is_literal(node: exp.Expression) -> bool:
    node = _strip_parens(node)
    return isinstance(node, exp.Literal) or (isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal))


def _is_value(node: exp.Expression) -> bool:
    """A literal, or a subquery (also under ANY / ALL): the value side of a comparison."""
    node = _strip_parens(node)
    if isinstance(node, (exp.Any, exp.All)):
        node = _strip_parens(node.this)
    return _is_literal(node) or isinstance(node, _QUERIES)


def _is_integer(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit()
