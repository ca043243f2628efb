"""SQL policy: rules a prediction must respect whatever its result, checked on its sqlglot tree.

A :class:`Policy` has up to three rules:

- ``tables``: the only tables the query may read (CTE names and derived tables are not tables);
- ``forbid_columns``: columns the query must not touch, as ``column`` (any table) or ``table.column``;
  ``SELECT *`` (or ``t.*``) over a table that has a forbidden column is a violation too (with a schema
  the table's columns are known; without one, a star over any table counts, since it may include them);
- ``require_filter``: a predicate such as ``tenant_id = 42``. The *filtered tables* are the table the
  predicate names (``tickets.tenant_id = 42``), else the tables that have all its columns (with a schema),
  else every table. Every scope (SELECT) that reads a filtered table must have a WHERE that is a
  conjunction (``a AND b AND ...``) with one conjunct equal to the predicate for that table's alias,
  compared on the tree after normalising: qualifiers, identifier case, parentheses, and the side of a
  comparison (``42 = tenant_id`` is ``tenant_id = 42``, ``5 < x`` is ``x > 5``).

No pytest here: :func:`check_policy` returns a :class:`PolicyVerdict` (``passed``, ``violations``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

POLICY_KEYS = ("tables", "forbid_columns", "require_filter")


class PolicyError(ValueError):
    """A policy that cannot be used as written (the message says how to fix it)."""


@dataclass(frozen=True)
class Policy:
    tables: tuple[str, ...] | None = None
    forbid_columns: tuple[str, ...] = ()
    require_filter: str | None = None

    @classmethod
    def from_mapping(cls, value: Any) -> Policy:
        """Build a policy from ``{tables: [...], forbid_columns: [...], require_filter: "..."}``."""
        if isinstance(value, Policy):
            return value
        if not isinstance(value, Mapping):
            raise PolicyError("a policy is a mapping {tables: [...], forbid_columns: [...], require_filter: \"...\"}")
        unknown = [k for k in value if k not in POLICY_KEYS]
        if unknown:
            raise PolicyError(f"unknown policy key {unknown[0]!r}; policy keys are: {', '.join(POLICY_KEYS)}")
        if not value:
            raise PolicyError(f"the policy is empty; give at least one of: {', '.join(POLICY_KEYS)}")
        tables = value.get("tables")
        if tables is not None:
            tables = _names(tables, "tables", "`tables: [tickets, shops]`")
        forbid = _names(value.get("forbid_columns") or (), "forbid_columns", "`forbid_columns: [ssn, customers.email]`")
        for entry in forbid:
            if entry.count(".") > 1 or entry.startswith(".") or entry.endswith("."):
                raise PolicyError(f"forbid_columns entry {entry!r} must be `column` or `table.column`")
        require = value.get("require_filter")
        if require is not None:
            if not isinstance(require, str) or not require.strip():
                raise PolicyError("require_filter must be a SQL predicate such as \"tenant_id = 42\"")
            _parse_predicate(require, "sqlite")
        return cls(tables=tables, forbid_columns=forbid, require_filter=require)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.tables is not None:
            out["tables"] = list(self.tables)
        if self.forbid_columns:
            out["forbid_columns"] = list(self.forbid_columns)
        if self.require_filter is not None:
            out["require_filter"] = self.require_filter
        return out


def _names(value: Any, key: str, example: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
        raise PolicyError(f"{key} must be a list of names, e.g. {example}")
    return tuple(v.strip() for v in value)


@dataclass(frozen=True)
class PolicyVerdict:
    """``passed`` when no rule is violated; ``violations`` says what each broken rule saw."""

    passed: bool
    violations: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.passed

    def as_record(self) -> dict[str, Any]:
        return {"passed": self.passed, "violations": list(self.violations)}


def check_policy(sql: str | None, policy: Policy | Mapping[str, Any], *, dialect: str = "sqlite",
                 schema=None) -> PolicyVerdict:
    """Check ``sql`` against ``policy``; ``schema`` (a :class:`~pytest_sqleval.schema.Schema`) sharpens
    star expansion and which tables an unqualified ``require_filter`` concerns."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    from .sql.limits import parse_bounded

    if sql is not None and not isinstance(sql, str):
        raise TypeError(f"check_policy: sql must be SQL text (a str) or None, not {type(sql).__name__}")
    if schema is not None and not hasattr(schema, "table"):  # duck-typed: a Schema (pytest_sqleval.schema)
        raise TypeError(f"check_policy: schema= must be a Schema (pytest_sqleval.Schema) or None, not "
                        f"{type(schema).__name__}; for an engine, a connection or a (tables.json, db_id) pair, use "
                        "check_policy_of(sql, policy, engine=...) or assert_policy(sql, policy, engine=...) "
                        "(schema=... for the pair)")
    policy = Policy.from_mapping(policy)
    if sql is None or not str(sql).strip():
        return PolicyVerdict(False, ("there is no prediction to check",))
    try:
        # (a comment after the last ';' is a bare Semicolon node, not a statement); within the documented limits
        # of length, nesting and work (sql/limits.py): the prediction is untrusted and this runs in the pytest process
        trees = [t for t in parse_bounded(sql, dialect) if t is not None and not isinstance(t, sqlglot.exp.Semicolon)]
    except SqlglotError as exc:
        return PolicyVerdict(False, (f"the prediction cannot be parsed ({dialect}): {_first_line(exc)}",))
    if len(trees) != 1:
        return PolicyVerdict(False, (f"the prediction must be one statement, not {len(trees)}",))
    tree = trees[0]
    if isinstance(tree, sqlglot.exp.Pivot):  # DuckDB's PIVOT/UNPIVOT statement: a query, read as in a subquery
        tree = sqlglot.exp.select("*").from_(sqlglot.exp.Subquery(this=tree))
    not_a_query = _not_a_query(tree)
    if not_a_query:
        return PolicyVerdict(False, (f"the prediction is not a read-only query ({not_a_query}); a policy holds only "
                                     "for one SELECT",))
    checker = _Checker(_sqlite_quoted_names(tree, dialect), policy, dialect, schema)
    violations = checker.run()
    return PolicyVerdict(not violations, tuple(violations))


def _not_a_query(tree) -> str | None:
    """Why a statement is not one read-only query (a DELETE reads no table a policy could allow), else None."""

    from .sql.guard import _QUERY_ROOTS, FORBIDDEN_NODES

    if isinstance(tree, FORBIDDEN_NODES):
        return f"it is {_article(tree.key.upper())} statement"
    if not isinstance(tree, _QUERY_ROOTS):  # (a top-level PIVOT arrives wrapped in a SELECT)
        return "it is not a SELECT"
    writes = next(tree.find_all(*FORBIDDEN_NODES), None)
    return None if writes is None else f"it holds {_article(writes.key.upper())}"


# --------------------------------------------------------------------------- the checker
class _Checker:
    def __init__(self, tree, policy: Policy, dialect: str, schema) -> None:
        from sqlglot.optimizer.scope import traverse_scope

        self.tree = tree
        self.policy = policy
        self.dialect = dialect
        self.schema = schema
        #: the schema a bare table name resolves to: the engine's (PostgreSQL's current_schema(), by its search_path)
        #: when the schema was read from one, else the dialect's default (public; main)
        self.default_schema = getattr(schema, "default_schema", None) or _DEFAULT_SCHEMAS.get(_dialect_name(dialect))
        self.scopes = traverse_scope(tree)
        self.in_tables, self.in_calls = _in_sources(tree, dialect)
        self.violations: list[str] = []

    def run(self) -> list[str]:
        if self.policy.tables is not None:
            self._check_tables()
        if self.policy.forbid_columns:
            self._check_columns()
        if self.policy.require_filter is not None:
            self._check_filter()
        return _unique(self.violations)

    # -- helpers -----------------------------------------------------------
    def _physical_sources(self, scope) -> dict[str, Any]:
        """alias -> exp.Table for the real tables a scope reads (not CTEs, not derived tables)."""
        from sqlglot import exp

        return {alias: source for alias, source in scope.sources.items() if isinstance(source, exp.Table)}

    def _all_tables(self) -> list[Any]:
        tables = []
        for scope in self.scopes:
            tables.extend(self._physical_sources(scope).values())
        return tables

    def _unscoped_tables(self) -> list[Any]:
        """Tables read where sqlglot builds no scope (a PIVOT/UNPIVOT statement in a subquery); not CTE names."""
        from sqlglot import exp

        ctes = {cte.alias_or_name.lower() for cte in self.tree.find_all(exp.CTE)}
        scoped = {id(t) for t in self._all_tables()}
        return [t for t in self.tree.find_all(exp.Table)
                if id(t) not in scoped and t.name and not t.db and t.name.lower() not in ctes]

    def _table_columns(self, table) -> tuple[str, ...] | None:
        """The columns of a table of the query (an ``exp.Table``; or a bare name), as the engine resolves it: a name
        qualified with another schema than the default one is that schema's table (PostgreSQL's ``app.regions``),
        not the default schema's of the same name; None when the schema does not know it."""
        if self.schema is None:
            return None
        name, db = (table, "") if isinstance(table, str) else (table.name, table.db)
        if db and db.lower() != (self.default_schema or "").lower():
            columns = (getattr(self.schema, "qualified_columns", None) or {}).get(f"{db}.{name}".lower())
            return tuple(c.lower() for c in columns) if columns is not None else None
        found = self.schema.table(name)
        return tuple(c.lower() for c in found.columns) if found is not None else None

    def _column_table(self, scope, column) -> str | None:
        """The real table a column of ``scope`` belongs to, or None (derived table, or unknown)."""
        from sqlglot import exp

        physical = self._physical_sources(scope)
        qualifier = column.table
        if qualifier:
            source = scope.sources.get(qualifier) or scope.sources.get(qualifier.lower())
            return source.name.lower() if isinstance(source, exp.Table) else None
        if len(scope.sources) == 1 and physical:
            return next(iter(physical.values())).name.lower()
        owners = [t.name.lower() for t in physical.values()
                  if (cols := self._table_columns(t)) is not None and column.name.lower() in cols]
        return owners[0] if len(owners) == 1 else None

    # -- tables ------------------------------------------------------------
    def _check_tables(self) -> None:

        allowed = {t.lower() for t in self.policy.tables or ()}
        default = (self.default_schema or "").lower() or None
        for table in self._all_tables() + self._unscoped_tables() + self.in_tables:
            if not table.name:  # a table function (generate_series(...)) reads no table
                continue
            name, schema = table.name.lower(), table.db.lower()
            # `t` allows `t` and `<default schema>.t`; `s.t` allows `s.t`, and `t` when s is the default schema:
            # another schema's table of the same name is another table (PostgreSQL's `app.tickets`)
            if f"{schema or default}.{name}" in allowed or (schema in ("", default) and name in allowed):
                continue
            self.violations.append(
                f"reads table {table.name!r}{f' of schema {table.db!r}' if table.db else ''}, which the policy does "
                "not allow "
                f"(allowed: {', '.join(self.policy.tables) or 'none'})"
            )
        self._check_table_functions(allowed)

    def _check_table_functions(self, allowed: set[str]) -> None:
        """A table function in FROM passes a ``tables`` allow-list only when it generates values from its arguments
        (``generate_series``, ``unnest``, ``json_each``: built-in and on the guard's allowlist of pure functions);
        one that reads the schema or other tables (``pragma_table_info('t')``, DuckDB's ``duckdb_columns()``), or
        that the guard does not know as a pure built-in (a user's function), reads what the list cannot vouch for:
        a violation unless the policy lists its name."""
        from sqlglot import exp

        from .sql.guard import function_name

        calls = [(t.this, t.text("db")) for t in self.tree.find_all(exp.Table)] + [(c, "") for c in self.in_calls]
        for call, db in calls:
            if not isinstance(call, exp.Func) or _generates_values(call, db, self.dialect):
                continue
            name = function_name(call)
            qualified = ".".join(p for p in (db, name) if p).lower()
            if name in allowed or qualified in allowed:
                continue
            reads = ("reads the schema or other tables" if name.startswith(_CATALOGUE_FUNCTION_PREFIXES)
                     else "is no built-in that only generates values, so it may read any table")
            self.violations.append(
                f"reads the table function {qualified}(), which {reads}; the policy allows only the tables "
                f"{', '.join(self.policy.tables or ()) or '(none)'} (list {name} in `tables:` to allow it)"
            )

    # -- columns -----------------------------------------------------------
    def _check_columns(self) -> None:
        from sqlglot import exp

        anywhere = {c.lower() for c in self.policy.forbid_columns if "." not in c}
        by_table: dict[str, set[str]] = {}
        for entry in self.policy.forbid_columns:
            if "." in entry:
                table, column = entry.lower().split(".")
                by_table.setdefault(table, set()).add(column)
        for scope in self.scopes:
            for column in _scope_columns(scope):
                name = column.name.lower()
                if not name or isinstance(column.this, exp.Star):
                    continue
                if name in anywhere:
                    self.violations.append(f"uses forbidden column {column.name!r} ({column.sql(self.dialect)})")
                    continue
                owner = self._column_table(scope, column)
                candidates = [owner] if owner else self._possible_owners(scope, column)
                for table in candidates:
                    if name in by_table.get(table, ()):
                        self.violations.append(f"uses forbidden column {table}.{name} ({column.sql(self.dialect)})")
                        break
            self._check_stars(scope, anywhere, by_table)
            self._check_join_using(scope, anywhere, by_table)
        # SQLite's `x IN t` reads t's (one) column without naming it; DuckDB's SUMMARIZE t, an UNPIVOT and a PIVOT
        # without GROUP BY (or ON COLUMNS(*)) read every column of theirs (_reads_every_column)
        wholes = [(t, f"`IN {t.sql(self.dialect)}`") for t in self.in_tables]
        wholes += [(t, f"{_article(_statement_kind(t.parent))} statement") for t in self._unscoped_tables()
                   if _reads_every_column(t.parent)]
        for table, how in wholes:
            forbidden = anywhere | by_table.get(table.name.lower(), set())
            columns = self._table_columns(table)
            hit = sorted(forbidden) if columns is None else [c for c in columns if c in forbidden]
            if hit:
                self.violations.append(
                    f"reads every column of {table.name!r} through {how}, which "
                    f"{'may include' if columns is None else 'includes'} forbidden column(s) {', '.join(hit)}"
                )

    def _check_join_using(self, scope, anywhere: set[str], by_table: dict[str, set[str]]) -> None:
        """``JOIN ... USING (name)`` compares a column it never writes as a column; NATURAL JOIN every shared one."""
        from sqlglot import exp

        select = scope.expression
        if not isinstance(select, exp.Select):
            return
        tables = [t.name.lower() for t in self._physical_sources(scope).values()]
        forbidden = anywhere.union(*(by_table.get(t, set()) for t in tables))
        for join in select.args.get("joins") or ():
            used = [i.name.lower() for i in join.args.get("using") or ()]
            hit = sorted(c for c in used if c in forbidden)
            if hit:
                self.violations.append(f"joins USING forbidden column(s) {', '.join(hit)}")
            elif join.method == "NATURAL" and forbidden:
                self.violations.append(
                    f"a NATURAL JOIN may join on forbidden column(s) {', '.join(sorted(forbidden))}; "
                    "name the join columns instead"
                )

    def _possible_owners(self, scope, column) -> list[str]:
        """Tables an unresolved column could come from (every real table of the scope when unknown)."""
        if column.table:
            return []
        return [t.name.lower() for t in self._physical_sources(scope).values()]

    def _check_stars(self, scope, anywhere: set[str], by_table: dict[str, set[str]]) -> None:
        from sqlglot import exp

        select = scope.expression
        if not isinstance(select, exp.Select):
            return
        physical = self._physical_sources(scope)
        found = []
        for projection in select.expressions:
            if isinstance(projection, exp.Star):
                found.append(list(physical.values()))
            elif isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star):
                source = physical.get(projection.table) or self._outer_table(scope, projection.table)
                found.append([source] if source is not None else [])
        found.extend(self._whole_rows(scope, physical))
        for targets in found:
            for table in targets:
                if not table.name:  # a table function (generate_series(...)) makes its rows, it reads no table
                    continue
                forbidden = anywhere | by_table.get(table.name.lower(), set())
                if not forbidden:
                    continue
                columns = self._table_columns(table)
                if columns is None:
                    self.violations.append(
                        f"selects * from {table.name!r}, which may include forbidden column(s) "
                        f"{', '.join(sorted(forbidden))}; list the columns instead"
                    )
                    continue
                hit = [c for c in columns if c in forbidden]
                if hit:
                    self.violations.append(
                        f"selects * from {table.name!r}, which includes forbidden column(s) {', '.join(hit)}"
                    )

    def _outer_table(self, scope, name: str) -> Any:
        """The real table an enclosing query names ``name`` (a correlated subquery's or a LATERAL's ``t.*`` or ``t``
        of ``FROM tickets t``), or None: not found, or a derived table or CTE of that name comes first."""
        from sqlglot import exp

        if not name:
            return None
        outer = scope.parent
        while outer is not None:
            source = outer.sources.get(name) or outer.sources.get(name.lower())
            if source is not None:
                return source if isinstance(source, exp.Table) else None
            outer = outer.parent
        return None

    def _scope_has_column(self, physical: dict[str, Any], name: str) -> bool:
        """Does one of the scope's own tables have a column ``name`` (by the schema)?"""
        return any(name.lower() in (self._table_columns(t) or ()) for t in physical.values())

    def _whole_rows(self, scope, physical: dict[str, Any]) -> list[list[Any]]:
        """Tables whose every column a scope reads without naming them: a whole-row reference (``SELECT s FROM
        shops s``, ``to_json(s.*)``, ``(s).*``), DuckDB's ``COLUMNS(...)``, ``#2`` and ``struct_pack(*)``, and a
        column alias list (``FROM shops AS s(a, b)`` renames them)."""
        from sqlglot import exp

        found = []
        select = scope.expression
        everything = list(physical.values())
        for node in select.find_all(exp.Columns, exp.PositionalColumn, exp.Dot, exp.Struct, exp.Column):
            if node.find_ancestor(exp.Select) is not select:  # a nested scope checks its own
                continue
            if isinstance(node, (exp.Columns, exp.PositionalColumn)):
                found.append(everything)
            elif isinstance(node, exp.Dot):
                if isinstance(node.expression, exp.Star):  # `(s).*`: the row of s, maybe an outer query's
                    base = node.this.unnest() if isinstance(node.this, exp.Paren) else node.this
                    outer = (self._outer_table(scope, base.name)
                             if isinstance(base, exp.Column) and not base.table and base.name not in physical else None)
                    found.append([outer] if outer is not None else everything)
            elif isinstance(node, exp.Struct):
                if any(isinstance(e, exp.Star) for e in node.expressions):
                    found.append(everything)
            elif isinstance(node.this, exp.Star):
                if node.parent is not select:  # a star projection is checked by the caller
                    source = physical.get(node.table) or self._outer_table(scope, node.table)
                    found.append([source] if source is not None else everything)
            elif not node.table:
                source = physical.get(node.name) or physical.get(node.name.lower())
                if source is None and not self._scope_has_column(physical, node.name):
                    source = self._outer_table(scope, node.name)  # a correlated `SELECT (SELECT t) FROM tickets t`
                columns = self._table_columns(source) if source is not None else None
                if source is not None and (columns is None or node.name.lower() not in columns):
                    found.append([source])
        for source in physical.values():
            alias = source.args.get("alias")
            if alias is not None and alias.columns:
                found.append([source])
        return found

    # -- required filter ---------------------------------------------------
    def _check_filter(self) -> None:
        predicate = _parse_predicate(self.policy.require_filter, self.dialect)
        columns = list(predicate.find_all(_column_type()))
        qualifiers = {c.table.lower() for c in columns if c.table}
        needed = {c.name.lower() for c in columns}
        wanted = self.policy.require_filter
        for scope in self.scopes:
            for alias, table in self._physical_sources(scope).items():
                if not self._is_filtered_table(table, qualifiers, needed):
                    continue
                if not self._scope_filters(scope, alias, table, predicate, len(self._physical_sources(scope))):
                    where = ("the query has no WHERE" if scope.expression.args.get("where") is None
                             else "no top-level AND term of its WHERE equals it")
                    self.violations.append(
                        f"reads {table.name!r}{'' if alias == table.name else f' (as {alias})'} without the "
                        f"required filter `{wanted}` ({where}): {_short(scope.expression.sql(self.dialect))}"
                    )
        for table in self.in_tables:
            if self._is_filtered_table(table, qualifiers, needed):
                self.violations.append(
                    f"reads {table.name!r} without the required filter `{wanted}` (`IN {table.sql(self.dialect)}` "
                    f"reads the whole table; write `IN (SELECT ... WHERE {wanted})`)"
                )
        for table in self._unscoped_tables():
            if self._is_filtered_table(table, qualifiers, needed):
                self.violations.append(
                    f"reads {table.name!r} without the required filter `{wanted}` "
                    f"({_article(_statement_kind(table.parent))} statement has no WHERE; give it a filtered subquery instead): "
                    f"{_short(table.parent.sql(self.dialect))}"
                )

    def _is_filtered_table(self, table, qualifiers: set[str], needed: set[str]) -> bool:
        if qualifiers:
            return table.name.lower() in qualifiers
        columns = self._table_columns(table)
        if columns is None:
            return True
        return needed <= set(columns)

    def _scope_filters(self, scope, alias: str, table, predicate, n_tables: int) -> bool:
        from sqlglot import exp

        where = scope.expression.args.get("where")
        if where is None:
            return False
        target = _normalise(predicate, lambda q, _c: not q or q == table.name.lower())
        for conjunct in _conjuncts(where.this):
            def accepts(qualifier: str, column: str) -> bool:
                if qualifier:
                    return qualifier == alias.lower() or (alias == table.name and qualifier == table.name.lower())
                if n_tables == 1 and len(scope.sources) == 1:
                    return True
                owner = self._column_table(scope, exp.column(column))
                return owner == table.name.lower()
            if _normalise(conjunct, accepts) == target:
                return True
        return False


#: Table functions that read the catalogue (the schema and tables): SQLite's and DuckDB's ``pragma_*``, DuckDB's
#: ``duckdb_*``. The guard refuses SQLite's and allows some of DuckDB's; a ``tables`` policy never does.
_CATALOGUE_FUNCTION_PREFIXES = ("pragma_", "duckdb_", "sqlite_")


def _generates_values(call, qualifier: str, dialect: str) -> bool:
    """Is a table function in FROM a built-in that only generates rows from its arguments (no table read)?"""
    from sqlglot import exp

    from .sql import allowed_functions as allowlist
    from .sql.guard import dialect_key, function_name

    try:
        key = dialect_key(dialect)
    except Exception:  # noqa: BLE001 - an unknown dialect has no allowlist: nothing counts as a pure built-in
        return False
    system = allowlist.SYSTEM_SCHEMAS.get(key)
    if qualifier and system is not None and qualifier.lower() not in system:
        return False  # `myschema.generate_series(...)` is the user's own function, not the built-in
    generators = tuple(getattr(exp, n) for n in ("GenerateSeries", "ExplodingGenerateSeries", "Unnest", "Explode")
                       if hasattr(exp, n))
    if isinstance(call, generators):
        return True
    name = function_name(call)
    return name in allowlist.allowed_functions(key) and not name.startswith(_CATALOGUE_FUNCTION_PREFIXES)


#: The schema an unqualified table name is read from, per dialect (PostgreSQL's default search_path).
_DEFAULT_SCHEMAS = {"sqlite": "main", "duckdb": "main", "postgres": "public"}


def _dialect_name(dialect: str) -> str:
    """The guard's name of ``dialect`` (``postgres`` for ``postgresql``), or the name as given when it is unknown."""
    from .sql.guard import dialect_key

    try:
        return dialect_key(dialect)
    except Exception:  # noqa: BLE001 - an unknown dialect: no default schema, no SQLite syntax
        return str(dialect)


def _scope_columns(scope) -> list[Any]:
    """The columns a scope reads. sqlglot's ``scope.columns`` leaves out the unqualified columns of a HAVING or a
    QUALIFY (they may name a SELECT alias there: ``HAVING max(email) LIKE 'a%'`` reads ``email`` all the same, so
    such a column counts unless it is the name of one of the scope's SELECT expressions) and of a table function's
    arguments in FROM (``FROM t, json_each(json_array(email))`` reads ``email`` of ``t``)."""
    from sqlglot import exp

    columns = list(scope.columns)
    select = scope.expression
    if not isinstance(select, exp.Select):
        return columns
    seen = {id(c) for c in columns}
    aliases = {name.lower() for name in select.named_selects}
    for key in ("having", "qualify"):
        clause = select.args.get(key)
        if clause is None:
            continue
        for column in clause.find_all(exp.Column):
            if (id(column) not in seen and column.find_ancestor(exp.Select) is select
                    and column.name.lower() not in aliases):
                seen.add(id(column))
                columns.append(column)
    for table in select.find_all(exp.Table):
        if not isinstance(table.this, exp.Func) or table.find_ancestor(exp.Select) is not select:
            continue
        for column in table.this.find_all(exp.Column):
            if id(column) not in seen and column.find_ancestor(exp.Select) is select:
                seen.add(id(column))
                columns.append(column)
    return columns


def _sqlite_quoted_names(tree, dialect: str):
    """SQLite reads a 'single-quoted' name before a dot as an identifier (``'tickets'.email``, ``'main'.'t'.email``),
    which sqlglot keeps as a Dot of string literals, no Column: on a copy of the tree, such a chain becomes the Column
    it names, and ``x IN 'vip'`` the table name of ``x IN vip``. Other dialects: the tree as it is (a Dot there is
    a struct field)."""
    from sqlglot import exp

    if _dialect_name(dialect) != "sqlite":  # (an unknown dialect: no SQLite syntax to read)
        return tree

    def parts(node) -> list[Any] | None:
        if isinstance(node, exp.Dot):
            left, right = parts(node.this), parts(node.expression)
            return None if left is None or right is None else left + right
        if isinstance(node, exp.Literal) and node.is_string:
            return [exp.to_identifier(node.this, quoted=True)]
        if isinstance(node, (exp.Identifier, exp.Star)):
            return [node.copy()]
        if isinstance(node, exp.Column) and not node.table:
            return [node.this.copy()]
        return None

    def rewrite(node):
        if isinstance(node, exp.Dot):
            names = parts(node)
            if names is not None and 2 <= len(names) <= 3 and not any(isinstance(n, exp.Star) for n in names[:-1]):
                keys = ("db", "table", "this")[-len(names):]
                return exp.Column(**dict(zip(keys, names)))
        if isinstance(node, exp.In) and isinstance(node.args.get("field"), exp.Literal) and node.args["field"].is_string:
            node.set("field", exp.column(exp.to_identifier(node.args["field"].this, quoted=True)))
        return node

    if next(tree.find_all(exp.Dot, exp.In), None) is None:  # nothing to rewrite: no copy
        return tree
    return tree.copy().transform(rewrite)


def _in_sources(tree, dialect: str) -> tuple[list[Any], list[Any]]:
    """SQLite's ``x IN t`` / ``x IN main.t`` / ``x IN json_each(...)`` (no parentheses) reads a table or a table
    function, which sqlglot keeps as the ``field`` of the IN node (a Column or a call), outside any scope: the tables
    (as Table nodes) and the calls. In other dialects that field is a value (DuckDB's list column), never a table."""
    from sqlglot import exp

    if _dialect_name(dialect) != "sqlite":  # (an unknown dialect: no SQLite syntax to read)
        return [], []
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}  # `x IN c` of a CTE reads the CTE's scope
    tables, calls = [], []
    for node in tree.find_all(exp.In):
        field = node.args.get("field")
        if isinstance(field, exp.Column) and field.name and (field.table or field.name.lower() not in ctes):
            tables.append(exp.Table(this=exp.to_identifier(field.name), db=field.args.get("table")))
        elif isinstance(field, exp.Func):
            calls.append(field)
    return tables, calls


def _statement_kind(node) -> str:
    """PIVOT, UNPIVOT, SUMMARIZE, ...: the statement a table read outside any scope is the operand of."""
    from sqlglot import exp

    if isinstance(node, exp.Pivot):
        return "UNPIVOT" if node.args.get("unpivot") else "PIVOT"
    return node.key.upper() if node is not None else "table"


def _article(word: str) -> str:
    return f"{'an' if word[:1] in 'AEIOU' else 'a'} {word}"


def _reads_every_column(node) -> bool:
    """Does the statement a table is the operand of read every column of it without naming them? DuckDB's
    ``SUMMARIZE t`` does (the min and max of each column), an ``UNPIVOT`` (it keeps the columns it does not
    unpivot) and a ``PIVOT`` without GROUP BY (it groups by every column it does not pivot) do, and so does any
    ``COLUMNS(*)`` or ``*`` among a PIVOT's ON columns; ``DESCRIBE t`` reads the column names only."""
    from sqlglot import exp

    if isinstance(node, exp.Summarize):
        return True
    if not isinstance(node, exp.Pivot):
        return False
    if node.args.get("unpivot") or not node.args.get("group"):  # an UNPIVOT keeps every column it does not unpivot
        return True
    return any(isinstance(e, (exp.Columns, exp.Star)) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
               for e in node.expressions)


def _column_type():
    from sqlglot import exp

    return exp.Column


def _parse_predicate(text: str, dialect: str):
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(text, read=dialect)
    except SqlglotError as exc:
        raise PolicyError(f"require_filter {text!r} is not a SQL predicate: {_first_line(exc)}") from None
    from sqlglot import exp

    if isinstance(tree, (exp.Select, exp.Query)) or not list(tree.find_all(exp.Column)):
        raise PolicyError(f"require_filter {text!r} must be a predicate on a column, e.g. \"tenant_id = 42\"")
    return tree


def _conjuncts(node) -> Iterable[Any]:
    from sqlglot import exp

    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        yield from _conjuncts(node.left)
        yield from _conjuncts(node.right)
    else:
        yield node


_FLIPPED = {"GT": "LT", "LT": "GT", "GTE": "LTE", "LTE": "GTE"}


def _normalise(node, accepts) -> str | None:
    """A canonical text of a predicate: columns unqualified and lower-cased (None when a column's
    qualifier is not accepted), parentheses dropped, symmetric comparisons with sorted sides,
    ordered comparisons with the column on the left."""
    from sqlglot import exp

    node = node.copy()
    for paren in list(node.find_all(exp.Paren)):
        paren.replace(paren.this)
    while isinstance(node, exp.Paren):
        node = node.this
    for column in list(node.find_all(exp.Column)):
        if not accepts(column.table.lower() if column.table else "", column.name):
            return None
        column.replace(exp.column(column.name.lower()))
    if isinstance(node, (exp.EQ, exp.NEQ)):
        left, right = sorted((node.left.sql(), node.right.sql()))
        return f"{type(node).__name__}({left}, {right})"
    if isinstance(node, (exp.GT, exp.LT, exp.GTE, exp.LTE)):
        left, right = node.left, node.right
        if not isinstance(left, exp.Column) and isinstance(right, exp.Column):
            return f"{_FLIPPED[type(node).__name__]}({right.sql()}, {left.sql()})"
        return f"{type(node).__name__}({left.sql()}, {right.sql()})"
    return node.sql()


def _unique(items: list[str]) -> list[str]:
    seen: set[str] = set()
    return [i for i in items if not (i in seen or seen.add(i))]


def _short(sql: str, width: int = 100) -> str:
    text = " ".join(sql.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
