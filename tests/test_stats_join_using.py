"""`sqleval stats`: the columns a query reads include those of `JOIN ... USING (...)`, counted as the `ON` join that
means the same reads them (MRO Table 4's "columns per query"): `a JOIN b USING (id)` reads `a.id` and `b.id`."""

from __future__ import annotations

import pytest

from pytest_sqleval.datasets.stats import query_facts


@pytest.mark.parametrize("using, on", [
    ("SELECT a.x FROM a JOIN b USING (id)", "SELECT a.x FROM a JOIN b ON a.id = b.id"),
    ("SELECT a.x FROM a JOIN b USING (id, k)", "SELECT a.x FROM a JOIN b ON a.id = b.id AND a.k = b.k"),
    ("SELECT a.x FROM a AS t1 JOIN b AS t2 USING (id)", "SELECT a.x FROM a AS t1 JOIN b AS t2 ON t1.id = t2.id"),
    ("SELECT c.z FROM a JOIN b USING (id) JOIN c USING (id)",
     "SELECT c.z FROM a JOIN b ON a.id = b.id JOIN c ON b.id = c.id"),
    ("SELECT a.x FROM a LEFT JOIN b USING (id) WHERE b.y > 1",
     "SELECT a.x FROM a LEFT JOIN b ON a.id = b.id WHERE b.y > 1"),
])
def test_a_using_join_reads_the_columns_its_on_join_reads(using, on):
    assert query_facts(using).columns == query_facts(on).columns


def test_using_columns_counted_by_hand():
    # a.x, a.id, b.id, a.k, b.k: five columns of two tables
    assert query_facts("SELECT a.x FROM a JOIN b USING (id, k)").columns == 5
    # a CTE's column is counted where the CTE reads it (z.id), the joined table's where it is joined (b.id)
    assert query_facts("WITH w AS (SELECT id FROM z) SELECT 1 FROM w JOIN b USING (id)").columns == 2
    # a self-join's two sides are one table: t.id once, t.x once
    assert query_facts("SELECT t1.x FROM t AS t1 JOIN t AS t2 USING (id)").columns == 2
