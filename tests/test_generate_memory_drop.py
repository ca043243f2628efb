"""`sqleval generate` drops a proposed query whose result is too large to hold with a reason that names no option
the command lacks (it named pytest's --sqleval-max-memory and a suite's `max_memory:`, or was cut at 160 characters
inside that hint)."""

import sys
from pathlib import Path

from conftest import require_module

sys.path.insert(0, str(Path(__file__).parent))
from test_gate_policy_qa7 import _generate  # noqa: E402  (the generate run against a local chat server)


def test_a_result_too_large_to_hold_is_dropped_naming_no_missing_option(tmp_path):
    duckdb = require_module("duckdb")
    db = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE parts (name TEXT, qty INTEGER)")
    con.execute("INSERT INTO parts VALUES ('bolt', 10), ('nut', 3)")
    con.close()
    report = _generate(tmp_path, db, ["SELECT name, range(3000000) AS r FROM parts ORDER BY name"])
    (drop,) = report["drops"]
    assert drop["filter"] == "does_not_run" and drop["reason"].startswith("memory:"), drop
    assert "--sqleval-max-memory" not in drop["reason"] and "max_memory:" not in drop["reason"], drop
    # whole (it was cut at 160 characters, inside the hint) and saying what the cap is
    assert "2048 MiB" in drop["reason"] and drop["reason"].endswith("makes no benchmark case)"), drop
