"""Sixth QA look (qa13) at issue 13's helpers in ordinary pytest tests, with inputs nobody tuned for
(pytester, plugin installed but not activated with --sqleval)."""

from __future__ import annotations

import textwrap

import pytest

POLICY_DB = """
CREATE TABLE tickets (id INTEGER PRIMARY KEY, shop_id INTEGER, tenant_id INTEGER);
CREATE TABLE vip (shop_id INTEGER);
CREATE TABLE salaries (amount INTEGER);
INSERT INTO tickets VALUES (1, 1, 42), (2, 2, 7);
INSERT INTO vip VALUES (2);
INSERT INTO salaries VALUES (1);
"""


def _run(pytester: pytest.Pytester, source: str, *args: str, **files: str) -> pytest.RunResult:
    pytester.makeini("[pytest]\n")
    for name, text in files.items():
        pytester.path.joinpath(name).write_text(textwrap.dedent(text))
    pytester.makepyfile(test_app=textwrap.dedent(source))
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_a_policy_sees_the_table_sqlite_reads_through_in_without_parentheses(pytester: pytest.Pytester):
    """SQLite reads a whole table with `x IN t` (and `x IN main.t`, `x IN pragma_table_info('t')`), no parentheses
    and no SELECT. sqlglot keeps that table as the IN node's `field`, outside every scope, so the policy never saw
    it: `tables: [tickets]` passed a query reading `vip`, `forbid_columns: [amount]` passed one reading
    `salaries.amount` through `IN salaries`, and `require_filter` passed a read of the filtered table without its
    WHERE. SQLite also reads a 'single-quoted' name before a dot, or after IN, as a name: `SELECT 's'.amount FROM
    salaries s` returns the forbidden column, which sqlglot keeps as a Dot of a string, no Column. The queries do
    run (the guard lets them through): the policy is what stands between them and the data."""
    result = _run(pytester, """
        import pytest
        from pytest_sqleval import check_policy_of

        pytestmark = pytest.mark.sqleval_database("sqlite://", setup=["policy.sql"])

        @pytest.mark.parametrize("sql, rules, said", [
            ("SELECT id FROM tickets WHERE tenant_id = 42 AND shop_id IN vip", {"tables": ["tickets"]},
             "reads table 'vip'"),
            ("SELECT id FROM tickets WHERE tenant_id = 42 AND shop_id NOT IN main.vip", {"tables": ["tickets"]},
             "reads table 'vip'"),
            ("SELECT id FROM tickets WHERE tenant_id = 42 AND id IN pragma_table_info('vip')",
             {"tables": ["tickets"]}, "pragma_table_info()"),
            ("SELECT count(*) FROM tickets WHERE id IN salaries", {"forbid_columns": ["amount"]},
             "forbidden column(s) amount"),
            ("SELECT count(*) FROM tickets WHERE id IN salaries", {"forbid_columns": ["salaries.amount"]},
             "forbidden column(s) amount"),
            ("SELECT count(*) FROM vip WHERE shop_id IN tickets", {"require_filter": "tickets.tenant_id = 42"},
             "without the required filter"),
            # SQLite also reads a 'single-quoted' name as a table or a qualifier: sqlglot's Dot of a string literal
            ("SELECT id FROM tickets WHERE tenant_id = 42 AND shop_id IN 'vip'", {"tables": ["tickets"]},
             "reads table 'vip'"),
            ("SELECT 's'.amount FROM salaries s", {"forbid_columns": ["amount"]}, "uses forbidden column 'amount'"),
            ("SELECT 'main'.'salaries'.amount FROM salaries", {"forbid_columns": ["salaries.amount"]},
             "uses forbidden column salaries.amount"),
        ])
        def test_refused(sql, rules, said, sqleval_query):
            if "pragma" not in sql and "vip WHERE" not in sql:
                sqleval_query(sql)  # it runs: only the policy can refuse it
            verdict = check_policy_of(sql, **rules)
            assert not verdict.passed
            assert any(said in v for v in verdict.violations), verdict.violations

        @pytest.mark.parametrize("sql, rules", [
            ("SELECT id FROM tickets WHERE tenant_id = 42 AND shop_id IN vip", {"tables": ["tickets", "vip"]}),
            ("SELECT id FROM tickets WHERE tenant_id = 42 AND shop_id IN (1, 2)", {"tables": ["tickets"]}),
            ("SELECT id FROM tickets WHERE tenant_id = 42 AND shop_id IN json_each('[1]')", {"tables": ["tickets"]}),
            ("SELECT count(*) FROM tickets WHERE id IN vip", {"forbid_columns": ["amount"]}),
            ("WITH v AS (SELECT shop_id FROM vip) SELECT id FROM tickets WHERE shop_id IN v",
             {"tables": ["tickets", "vip"]}),
            ("SELECT id FROM tickets WHERE 'tickets'.tenant_id = 42", {"require_filter": "tenant_id = 42"}),
        ])
        def test_allowed(sql, rules):
            verdict = check_policy_of(sql, **rules)
            assert verdict.passed, verdict.explain()
    """, **{"policy.sql": POLICY_DB})
    result.assert_outcomes(passed=15)


def test_a_forbidden_column_in_having_qualify_or_a_table_functions_arguments_is_a_violation(
        pytester: pytest.Pytester, duckdb_available):
    """sqlglot's `scope.columns` leaves out every unqualified column of a HAVING or a QUALIFY (it might name a SELECT
    alias) and of a table function's arguments in FROM, so `forbid_columns: [customer_email]` passed
    `... HAVING max(customer_email) LIKE 's%'`, DuckDB's `QUALIFY row_number() OVER (PARTITION BY customer_email) = 1`
    and SQLite's `SELECT value FROM tickets, json_each(json_array(customer_email))`, which returns every e-mail.
    A HAVING on a SELECT alias (`HAVING n > 1`) names no column."""
    tickets = ("CREATE TABLE tickets (id INTEGER, shop_id INTEGER, customer_email TEXT);\n"
               "INSERT INTO tickets VALUES (1, 1, 'a@example.com'), (2, 2, 'secret@example.com');\n")
    result = _run(pytester, """
        import pytest
        from pytest_sqleval import check_policy_of

        FORBID = {"forbid_columns": ["customer_email"]}
        SQLITE = pytest.mark.sqleval_database("sqlite://", setup=["tickets.sql"])
        DUCKDB = pytest.mark.sqleval_database("duckdb://", setup=["tickets.sql"])

        @pytest.mark.parametrize("sql", [
            pytest.param("SELECT shop_id FROM tickets GROUP BY shop_id HAVING max(customer_email) LIKE 's%'",
                         marks=SQLITE),
            pytest.param("SELECT shop_id FROM tickets GROUP BY shop_id HAVING max(customer_email) LIKE 's%'",
                         marks=DUCKDB),
            pytest.param("SELECT id FROM tickets QUALIFY count(*) OVER () > 0 AND customer_email LIKE 's%'",
                         marks=DUCKDB),
            pytest.param("SELECT id FROM tickets QUALIFY row_number() OVER (PARTITION BY customer_email) = 1",
                         marks=DUCKDB),
            pytest.param("SELECT value FROM tickets, json_each(json_array(customer_email))", marks=SQLITE),
            pytest.param("SELECT g FROM tickets, generate_series(1, length(customer_email)) AS s(g)", marks=DUCKDB),
        ])
        def test_refused(sql, sqleval_query):
            sqleval_query(sql)  # it runs
            verdict = check_policy_of(sql, **FORBID)
            assert verdict.violations == ("uses forbidden column 'customer_email' (customer_email)",)

        @SQLITE
        def test_an_alias_in_having_is_no_column():
            verdict = check_policy_of("SELECT shop_id, count(*) AS n FROM tickets GROUP BY shop_id HAVING n > 1",
                                      **FORBID)
            assert verdict.passed, verdict.explain()
    """, **{"tickets.sql": tickets})
    result.assert_outcomes(passed=7)


def test_duckdb_statements_that_read_every_column_break_forbid_columns(pytester: pytest.Pytester, duckdb_available):
    """DuckDB's SUMMARIZE (the min and max of every column), an UNPIVOT (it keeps the columns it does not unpivot)
    and a PIVOT without GROUP BY (it groups by every column it does not pivot) put a forbidden column's values in
    the result without naming it. Those statements read their table outside any sqlglot scope, so
    `forbid_columns: [customer_email]` passed all three while the result held 'secret@example.com'. A PIVOT with
    GROUP BY and DESCRIBE (column names only) do not read it. DuckDB's `x IN col` is list membership on a column
    (the tree of SQLite's `x IN t`): no table is read."""
    result = _run(pytester, """
        import pytest
        from pytest_sqleval import check_policy_of

        pytestmark = pytest.mark.sqleval_database("duckdb://", setup=["tickets.sql"])
        FORBID = {"forbid_columns": ["customer_email"]}

        @pytest.mark.parametrize("sql, how", [
            ("SELECT * FROM (SUMMARIZE tickets)", "a SUMMARIZE statement"),
            ("SELECT * FROM (UNPIVOT tickets ON tenant_id INTO NAME k VALUE v)", "an UNPIVOT statement"),
            ("SELECT * FROM (PIVOT tickets ON tenant_id USING count(*))", "a PIVOT statement"),
        ])
        def test_leaks(sql, how, sqleval_query):
            assert "secret@example.com" in repr(sqleval_query(sql).rows)  # it runs, and shows the column
            verdict = check_policy_of(sql, **FORBID)
            assert verdict.violations == (
                f"reads every column of 'tickets' through {how}, which includes forbidden column(s) customer_email",)

        @pytest.mark.parametrize("sql", [
            "SELECT * FROM (PIVOT tickets ON tenant_id USING count(*) GROUP BY id)",
            "SELECT * FROM (DESCRIBE tickets)",
            "SELECT id FROM bags WHERE 2 IN items",
        ])
        def test_no_leak(sql, sqleval_query):
            assert "secret@example.com" not in repr(sqleval_query(sql).rows)
            verdict = check_policy_of(sql, tables=["tickets", "bags"], **FORBID)
            assert verdict.passed, verdict.explain()

        def test_the_filter_message_names_the_statement():
            verdict = check_policy_of("SELECT * FROM (SUMMARIZE tickets)", require_filter="tenant_id = 42")
            assert "(a SUMMARIZE statement has no WHERE; give it a filtered subquery instead)" in verdict.violations[0]
    """, **{"tickets.sql": "CREATE TABLE tickets (id INTEGER, tenant_id INTEGER, customer_email TEXT);\n"
                           "INSERT INTO tickets VALUES (1, 42, 'a@example.com'), (2, 7, 'secret@example.com');\n"
                           "CREATE TABLE bags (id INTEGER, items INTEGER[]);\n"
                           "INSERT INTO bags VALUES (1, [1, 2]), (2, [3]);\n"})
    result.assert_outcomes(passed=7)


def test_a_suite_expected_cell_of_binary_data_or_a_set_is_an_error_not_text(pytester: pytest.Pytester):
    """`expected:` cells are single values. A YAML `!!binary` cell (bytes) was read as its str(), the text
    "b'\\x01\\x02'", so it never matched the BLOB it stands for, silently: every run missed. A `!!set` became a list.
    Both are now an error of the suite naming the case, the row and the fix."""
    pytester.makeini("[pytest]\n")
    pytester.path.joinpath("blobs.sql").write_text("CREATE TABLE t (b BLOB); INSERT INTO t VALUES (x'0102');\n")
    for name, cell, said in (("binary", "!!binary AQI=", "binary data (!!binary)"),
                             ("set", "!!set {a}", "a set (!!set)")):
        pytester.path.joinpath("s.sqleval.yaml").write_text(textwrap.dedent(f"""\
            database: {{url: "sqlite://", setup: [blobs.sql]}}
            cases:
              - id: blob
                expected: {{columns: [b], rows: [[{cell}]]}}
                predicted: SELECT b FROM t
            """))
        result = pytester.runpytest("-p", "no:cacheprovider", "--sqleval", "s.sqleval.yaml")
        assert result.ret == pytest.ExitCode.INTERRUPTED, name
        result.stdout.fnmatch_lines([f"*s.sqleval.yaml:4: expected row 1 of 'blob' holds {said}; cells are numbers, "
                                     "text, true/false, dates or null",
                                     "*fix: *`gold: SELECT x'0102'` for binary data*"])


def test_a_suite_miss_against_expected_rows_says_so_in_its_gold_sql_line(pytester: pytest.Pytester):
    """`-v` shows every miss with its SQL; a case with `expected:` rows has no gold SQL, and its line read
    `gold SQL:` followed by nothing. It says `(expected rows)`, as the helpers' failures do."""
    pytester.makeini("[pytest]\n")
    pytester.path.joinpath("t.sql").write_text("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1);\n")
    pytester.path.joinpath("s.sqleval.yaml").write_text(textwrap.dedent("""\
        database: {url: "sqlite://", setup: [t.sql]}
        cases:
          - id: n
            expected: {columns: [n], rows: [[2]]}
            predicted: SELECT n FROM t
        """))
    result = pytester.runpytest("-p", "no:cacheprovider", "--sqleval", "-v", "s.sqleval.yaml")
    result.stdout.fnmatch_lines(["*n: values: 1 gold row is missing*", "*  gold SQL:      (expected rows)",
                                 "*  predicted SQL: SELECT n FROM t"])


@pytest.mark.parametrize("kind", ["duckdb", "postgresql"])
def test_a_whole_row_of_an_outer_query_read_in_a_subquery_or_lateral_breaks_forbid_columns(
        pytester: pytest.Pytester, request, kind):
    """`SELECT (SELECT row_to_json(t)) FROM tickets t`, `... LATERAL (SELECT t.*) x` and `(SELECT t)` return every
    column of the outer query's `tickets`, the forbidden one included. The star and whole-row checks looked for `t`
    among the subquery's own tables only, found none there, and let it pass. A correlated subquery that names
    other columns (`WHERE s.id = t.shop_id`), or a column of its own table that happens to be named `t`, reads no
    forbidden column."""
    if kind == "duckdb":
        request.getfixturevalue("duckdb_available")
        database, whole_rows = "duckdb://", ["SELECT (SELECT to_json(t)) FROM tickets t", "SELECT (SELECT t) FROM tickets t"]
    else:
        database = request.getfixturevalue("postgres_url")
        whole_rows = ["SELECT (SELECT row_to_json(t)) FROM tickets t", "SELECT (SELECT t) FROM tickets t",
                      "SELECT x.* FROM tickets t, LATERAL (SELECT (t).*) x"]
    refused = whole_rows + ["SELECT x.* FROM tickets t, LATERAL (SELECT t.*) x"]
    allowed = ["SELECT (SELECT name FROM shops s WHERE s.id = t.shop_id) FROM tickets t",
               "SELECT (SELECT t FROM shops WHERE shops.id = t.shop_id) FROM tickets t",
               "SELECT x.n FROM tickets t, LATERAL (SELECT t.id AS n) x"]
    result = _run(pytester, f"""
        import pytest
        from pytest_sqleval import check_policy_of

        pytestmark = pytest.mark.sqleval_database({database!r}, setup=["tickets.sql"])

        @pytest.mark.parametrize("sql", {refused!r})
        def test_refused(sql, sqleval_query):
            assert "secret@x" in repr(sqleval_query(sql).rows)  # it runs, and returns the forbidden column
            verdict = check_policy_of(sql, forbid_columns=["customer_email"])
            assert verdict.violations == (
                "selects * from 'tickets', which includes forbidden column(s) customer_email",), verdict.violations

        @pytest.mark.parametrize("sql", {allowed!r})
        def test_allowed(sql, sqleval_query):
            assert "secret@x" not in repr(sqleval_query(sql).rows)
            verdict = check_policy_of(sql, forbid_columns=["customer_email"])
            assert verdict.passed, verdict.explain()
    """, **{"tickets.sql": "CREATE TABLE tickets (id INTEGER, customer_email TEXT, shop_id INTEGER);\n"
                           "INSERT INTO tickets VALUES (1, 'a@x', 1), (2, 'secret@x', 2);\n"
                           "CREATE TABLE shops (id INTEGER, name TEXT, t TEXT);\n"
                           "INSERT INTO shops VALUES (1, 'A', 'tt'), (2, 'B', 'uu');\n"})
    result.assert_outcomes(passed=len(refused) + len(allowed))


@pytest.mark.parametrize("statement", [
    "PIVOT tickets ON tenant_id USING count(*)",
    "UNPIVOT tickets ON hours INTO NAME k VALUE v",
    "PIVOT tickets ON tenant_id USING count(*) GROUP BY id",
    "PIVOT secrets ON a USING count(*) GROUP BY b",
    "PIVOT (SELECT id, status FROM tickets WHERE tenant_id = 42) ON status USING count(*) GROUP BY id",
])
def test_a_top_level_pivot_is_checked_as_the_same_pivot_in_a_subquery(statement):
    """The guard runs DuckDB's PIVOT/UNPIVOT statements as queries; the policy said "not a read-only query (it is
    not a SELECT)" of them. It now reads one as `SELECT * FROM (<statement>)`, with the same verdict."""
    from pytest_sqleval import check_policy_of

    policy = {"tables": ["tickets"], "forbid_columns": ["customer_email"], "require_filter": "tenant_id = 42"}
    top = check_policy_of(statement, policy, dialect="duckdb")
    wrapped = check_policy_of(f"SELECT * FROM ({statement})", policy, dialect="duckdb")
    assert (top.passed, top.violations) == (wrapped.passed, wrapped.violations)
    assert not any("not a read-only query" in v for v in top.violations)
    assert top.passed == statement.startswith("PIVOT (SELECT id, status")


def test_tables_allows_a_name_in_the_default_schema_only(postgres_url):
    """`tables: [tickets]` passed `SELECT * FROM app.tickets`, another table on PostgreSQL (here with other rows), and
    `tables: [public.tickets]` refused a plain `FROM tickets`, which reads public.tickets. A bare name now allows the
    name and the default schema's (public; main on SQLite and DuckDB); `schema.table` allows that table, written
    with or without its default schema."""
    import uuid

    import sqlalchemy

    from pytest_sqleval import check_policy_of

    schema = f"app_{uuid.uuid4().hex[:8]}"
    table = f"tickets_{uuid.uuid4().hex[:8]}"
    engine = sqlalchemy.create_engine(postgres_url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
            conn.exec_driver_sql(f"CREATE TABLE public.{table} (id int); INSERT INTO public.{table} VALUES (1)")
            conn.exec_driver_sql(f"CREATE TABLE {schema}.{table} (id int); INSERT INTO {schema}.{table} VALUES (2)")
        with engine.connect() as conn:  # two tables of one name: what the policy must tell apart
            assert conn.exec_driver_sql(f"SELECT id FROM {table}").all() == [(1,)]
            assert conn.exec_driver_sql(f"SELECT id FROM {schema}.{table}").all() == [(2,)]
        verdicts = {(sql, allowed): check_policy_of(sql, {"tables": [allowed]}, dialect="postgres").passed
                    for sql in (f"SELECT id FROM {table}", f"SELECT id FROM public.{table}",
                                f"SELECT id FROM {schema}.{table}")
                    for allowed in (table, f"public.{table}", f"{schema}.{table}")}
        assert verdicts == {
            (f"SELECT id FROM {table}", table): True,
            (f"SELECT id FROM {table}", f"public.{table}"): True,
            (f"SELECT id FROM {table}", f"{schema}.{table}"): False,
            (f"SELECT id FROM public.{table}", table): True,
            (f"SELECT id FROM public.{table}", f"public.{table}"): True,
            (f"SELECT id FROM public.{table}", f"{schema}.{table}"): False,
            (f"SELECT id FROM {schema}.{table}", table): False,
            (f"SELECT id FROM {schema}.{table}", f"public.{table}"): False,
            (f"SELECT id FROM {schema}.{table}", f"{schema}.{table}"): True,
        }
        refused = check_policy_of(f"SELECT id FROM {schema}.{table}", {"tables": [table]}, dialect="postgres")
        assert refused.violations == (f"reads table {table!r} of schema {schema!r}, which the policy does not allow "
                                      f"(allowed: {table})",)
        assert check_policy_of("SELECT id FROM main.t", {"tables": ["t"]}, dialect="sqlite").passed
        assert not check_policy_of("SELECT id FROM temp.t", {"tables": ["t"]}, dialect="sqlite").passed
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE; DROP TABLE public.{table}")
        engine.dispose()
