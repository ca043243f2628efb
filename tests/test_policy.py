"""SQL policy on the parsed prediction: allowed tables, forbidden columns, a required filter."""

from __future__ import annotations

import pytest

from pytest_sqleval.policy import Policy, PolicyError, check_policy
from pytest_sqleval.schema import Schema

SCHEMA = Schema.from_dict({
    "tickets": ["id", "shop_id", "aircraft", "status", "tenant_id"],
    "shops": ["id", "name", "secret", "tenant_id"],
    "audit": ["id", "note"],
})

TENANT = {"require_filter": "tenant_id = 42"}


def violations(sql: str, policy, schema=None, dialect: str = "sqlite") -> list[str]:
    return list(check_policy(sql, policy, dialect=dialect, schema=schema).violations)


# --------------------------------------------------------------------------- tables
def test_allowed_tables_pass_and_ctes_are_not_tables():
    policy = {"tables": ["tickets", "shops"]}
    assert violations("SELECT s.name FROM shops s JOIN tickets t ON t.shop_id = s.id", policy) == []
    # a CTE named like a forbidden table is not a table read
    assert violations("WITH audit AS (SELECT id FROM tickets) SELECT id FROM audit", policy) == []


def test_a_table_outside_the_list_is_named_even_in_a_subquery():
    found = violations("SELECT id FROM tickets WHERE id IN (SELECT id FROM audit)", {"tables": ["tickets"]})
    assert found == ["reads table 'audit', which the policy does not allow (allowed: tickets)"]


def test_table_names_compare_case_insensitively_and_schema_qualified():
    assert violations("SELECT id FROM TICKETS", {"tables": ["tickets"]}) == []
    assert violations("SELECT id FROM main.tickets", {"tables": ["main.tickets"]}) == []


# --------------------------------------------------------------------------- columns
def test_forbidden_column_anywhere_and_per_table():
    policy = {"forbid_columns": ["aircraft", "shops.secret"]}
    assert violations("SELECT status FROM tickets", policy) == []
    assert violations("SELECT count(*) FROM tickets WHERE aircraft = 'x'", policy) == [
        "uses forbidden column 'aircraft' (aircraft)"]
    assert violations("SELECT s.secret FROM shops AS s", policy) == ["uses forbidden column shops.secret (s.secret)"]
    # `secret` of another table is allowed: the alias resolves to audit
    assert violations("SELECT a.note AS secret FROM audit a", policy) == []


def test_unqualified_column_in_a_join_is_resolved_with_the_schema():
    policy = {"forbid_columns": ["shops.secret"]}
    sql = "SELECT secret FROM shops s JOIN tickets t ON t.shop_id = s.id"
    assert violations(sql, policy, schema=SCHEMA) == ["uses forbidden column shops.secret (secret)"]


def test_star_over_a_table_with_a_forbidden_column():
    policy = {"forbid_columns": ["shops.secret"]}
    assert violations("SELECT * FROM shops", policy, schema=SCHEMA) == [
        "selects * from 'shops', which includes forbidden column(s) secret"]
    assert violations("SELECT * FROM audit", policy, schema=SCHEMA) == []
    assert violations("SELECT t.* FROM tickets t JOIN shops s ON s.id = t.shop_id", policy, schema=SCHEMA) == []
    # without a schema the star might include it: reported, with the fix
    assert violations("SELECT * FROM shops", policy) == [
        "selects * from 'shops', which may include forbidden column(s) secret; list the columns instead"]


# --------------------------------------------------------------------------- required filter
@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM tickets WHERE tenant_id = 42",
    "SELECT count(*) FROM tickets WHERE 42 = tenant_id",
    "SELECT count(*) FROM tickets WHERE status = 'open' AND (TENANT_ID = 42)",
    "SELECT count(*) FROM tickets t WHERE t.tenant_id = 42 AND t.status = 'open'",
    "SELECT count(*) FROM tickets WHERE (status = 'open' AND tenant_id = 42) AND id > 1",
])
def test_required_filter_holds(sql):
    assert violations(sql, TENANT, schema=SCHEMA) == []


@pytest.mark.parametrize("sql, why", [
    ("SELECT count(*) FROM tickets", "the query has no WHERE"),
    ("SELECT count(*) FROM tickets WHERE tenant_id = 42 OR status = 'open'", "no top-level AND term of its WHERE equals it"),
    ("SELECT count(*) FROM tickets WHERE tenant_id = 7", "no top-level AND term of its WHERE equals it"),
    ("SELECT count(*) FROM tickets WHERE tenant_id <> 42", "no top-level AND term of its WHERE equals it"),
    ("SELECT count(*) FROM tickets WHERE NOT tenant_id = 42", "no top-level AND term of its WHERE equals it"),
])
def test_required_filter_missing(sql, why):
    found = violations(sql, TENANT, schema=SCHEMA)
    assert len(found) == 1
    assert found[0].startswith("reads 'tickets' without the required filter `tenant_id = 42` (" + why + ")")


def test_every_scope_that_reads_the_table_must_filter():
    sql = "SELECT count(*) FROM tickets WHERE tenant_id = 42 AND shop_id IN (SELECT shop_id FROM tickets)"
    found = violations(sql, TENANT, schema=SCHEMA)
    assert found == ["reads 'tickets' without the required filter `tenant_id = 42` (the query has no WHERE): "
                     "SELECT shop_id FROM tickets"]
    union = "SELECT id FROM tickets WHERE tenant_id = 42 UNION SELECT id FROM tickets"
    assert len(violations(union, TENANT, schema=SCHEMA)) == 1


def test_a_filtered_cte_satisfies_the_outer_query():
    sql = "WITH mine AS (SELECT * FROM tickets WHERE tenant_id = 42) SELECT count(*) FROM mine"
    assert violations(sql, TENANT, schema=SCHEMA) == []


def test_the_filter_must_name_the_right_alias_in_a_join():
    sql = ("SELECT s.name FROM shops s JOIN tickets t ON t.shop_id = s.id "
           "WHERE t.tenant_id = 42")
    # with the schema both tables have tenant_id: shops (s) is not filtered
    assert violations(sql, TENANT, schema=SCHEMA) == [
        "reads 'shops' (as s) without the required filter `tenant_id = 42` (no top-level AND term of its WHERE "
        "equals it): SELECT s.name FROM shops AS s JOIN tickets AS t ON t.shop_id = s.id WHERE t.tenant_id = 42"]
    both = sql + " AND s.tenant_id = 42"
    assert violations(both, TENANT, schema=SCHEMA) == []


def test_a_qualified_filter_concerns_only_its_table():
    policy = {"require_filter": "tickets.tenant_id = 42"}
    assert violations("SELECT name FROM shops", policy) == []
    assert violations("SELECT id FROM tickets t WHERE t.tenant_id = 42", policy) == []
    assert len(violations("SELECT id FROM tickets", policy)) == 1


def test_without_a_schema_an_unqualified_filter_concerns_every_table():
    assert len(violations("SELECT id FROM audit", TENANT)) == 1
    assert violations("SELECT id FROM audit", TENANT, schema=SCHEMA) == []  # audit has no tenant_id


def test_postgres_dialect():
    sql = "SELECT count(*) FROM tickets WHERE tenant_id = 42::int"
    assert violations(sql, {"require_filter": "tenant_id = 42::int"}, dialect="postgres") == []


# --------------------------------------------------------------------------- the prediction itself
def test_unreadable_or_missing_prediction_fails():
    assert violations("SELEC 1", TENANT)[0].startswith("the prediction cannot be parsed (sqlite): ")
    assert violations("", TENANT) == ["there is no prediction to check"]
    assert violations("SELECT 1; SELECT 2", TENANT) == ["the prediction must be one statement, not 2"]


def test_verdict_is_truthy_when_passed_and_serialisable():
    ok = check_policy("SELECT id FROM tickets WHERE tenant_id = 42", TENANT)
    bad = check_policy("SELECT id FROM tickets", TENANT)
    assert bool(ok) is True and bool(bad) is False
    assert bad.as_record()["passed"] is False and len(bad.as_record()["violations"]) == 1


# --------------------------------------------------------------------------- policy values
@pytest.mark.parametrize("value, message", [
    ({"table": ["x"]}, "unknown policy key 'table'; policy keys are: tables, forbid_columns, require_filter"),
    ({}, "the policy is empty"),
    ("tickets", "a policy is a mapping"),
    ({"tables": [1]}, "tables must be a list of names"),
    ({"forbid_columns": ["a.b.c"]}, "forbid_columns entry 'a.b.c' must be `column` or `table.column`"),
    ({"require_filter": "SELECT 1"}, "must be a predicate on a column"),
    ({"require_filter": "tenant_id = = 4"}, "is not a SQL predicate"),
    ({"require_filter": ""}, "require_filter must be a SQL predicate"),
])
def test_bad_policies(value, message):
    with pytest.raises(PolicyError, match=None) as info:
        Policy.from_mapping(value)
    assert message in str(info.value)
