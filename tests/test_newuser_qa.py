"""A new user's deploy-gate workflow, followed from the README: what it turned up."""

from __future__ import annotations

import json
import sqlite3

from conftest import make_sqlite
from pytest_sqleval.baseline import file_warnings

SUITE = """\
suite: shop
database: shop.sqlite
cases:
  - {id: a, gold: SELECT count(*) FROM tickets, predicted: SELECT count(*) FROM tickets}
  - {id: b, gold: SELECT name FROM shops, predicted: SELECT name FROM shops WHERE id < 3}
"""


def test_a_changed_database_is_a_warning_when_the_baseline_run_had_another_rootdir(pytester):
    """pytest takes the rootdir from the arguments (an option's file value too), so the deployed run may name
    the database `shop.sqlite` and this run `bench/shop.sqlite`: the changed database must still be warned
    about, not silently compared."""
    bench = pytester.path / "bench"
    make_sqlite(bench / "shop.sqlite")
    (bench / "shop.sqleval.yaml").write_text(SUITE, encoding="utf-8")
    base = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--rootdir=bench", "bench/shop.sqleval.yaml",
                              "--sqleval-json=base.json")
    assert base.ret == 0
    assert "shop.sqlite" in json.loads((pytester.path / "base.json").read_text(encoding="utf-8"))["run"]["files"]
    with sqlite3.connect(bench / "shop.sqlite") as conn:  # the data changed since the deployed run
        conn.execute("INSERT INTO shops VALUES (4, 'Paint')")
    now = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--rootdir=.", "bench/shop.sqleval.yaml",
                             "--sqleval-baseline=base.json", "--sqleval-json=now.json")
    now.stdout.fnmatch_lines(["*warning: bench/shop.sqlite changed since the baseline (sha256 *"])
    report = json.loads((pytester.path / "now.json").read_text(encoding="utf-8"))
    assert any(w.startswith("bench/shop.sqlite changed") for w in report["baseline"]["warnings"])
    assert not any("shop.sqleval.yaml changed" in w for w in report["baseline"]["warnings"])


def test_file_warnings_match_paths_by_their_trailing_parts_and_say_when_nothing_matches():
    base = {"files": {"shop.sqlite": "a" * 64, "shop.sqleval.yaml": "b" * 64, "v1.jsonl": "c" * 64},
            "prediction_files": ["v1.jsonl"]}
    now = {"files": {"bench/shop.sqlite": "d" * 64, "bench/shop.sqleval.yaml": "b" * 64, "v2.jsonl": "e" * 64},
           "prediction_files": ["v2.jsonl"]}
    assert [w.split(" (")[0] for w in file_warnings(now, base)] == ["bench/shop.sqlite changed since the baseline"]
    # two baseline files as good a match: no guess
    ambiguous = {"files": {"a/shop.sqlite": "a" * 64, "b/shop.sqlite": "b" * 64}}
    assert "cannot tell" in file_warnings({"files": {"shop.sqlite": "d" * 64}}, ambiguous)[0]
    # nothing of this run in the baseline's hashes: said, not silently passed over
    other = file_warnings({"files": {"x.sqleval.yaml": "d" * 64}}, {"files": {"y.sqleval.yaml": "a" * 64}})
    assert len(other) == 1 and "cannot tell whether a suite or database changed" in other[0]


POLICY_SUITE = """\
suite: app
database: shop.sqlite
pass_if: execution_match and policy
policy: {tables: [shops], require_filter: "id < 3"}
cases:
  - {id: filtered, gold: "SELECT name FROM shops WHERE id < 3", predicted: "SELECT name FROM shops WHERE id < 3"}
  - {id: or-filter, gold: "SELECT name FROM shops WHERE id < 3", predicted: "SELECT name FROM shops WHERE (id < 3 OR 1 = 0)"}
  - id: shape
    gold: SELECT name FROM shops WHERE id < 3
    expect_rows: 3
    predicted: SELECT name FROM shops WHERE id < 3
"""


def test_a_policy_or_shape_miss_names_its_violation_in_markdown_junit_and_html(pytester):
    """The terminal says `or-filter: policy: reads 'shops' without the required filter ...`; the Markdown, the JUnit
    message and the HTML reason said `pass_if does not hold (soft_f1 1.0000, exact_match no)`, sending a reader to
    the wrong clause (the results match; the policy failed)."""
    make_sqlite(pytester.path / "shop.sqlite")
    (pytester.path / "app.sqleval.yaml").write_text(POLICY_SUITE, encoding="utf-8")
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-markdown=m.md",
                                "--sqleval-json=r.json", "--junitxml=j.xml")
    result.stdout.fnmatch_lines(["*or-filter: policy: reads 'shops' without the required filter*",
                                 "*shape: shape: *"])
    markdown = (pytester.path / "m.md").read_text(encoding="utf-8")
    assert "<code>or-filter</code>: policy: reads &#x27;shops&#x27; without the required filter" in markdown \
        or "<code>or-filter</code>: policy: reads 'shops' without the required filter" in markdown
    assert "**policy** (1)" in markdown and "**shape** (1)" in markdown
    assert "pass_if does not hold" not in markdown
    junit = (pytester.path / "j.xml").read_text(encoding="utf-8")
    assert 'message="sqleval miss: policy: reads' in junit and 'message="sqleval miss: shape: ' in junit
    from pytest_sqleval.report import view

    cases = {c["id"]: c for c in json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["cases"]}
    assert view.reason_key(cases["or-filter"]) == "policy" and view.reason_key(cases["shape"]) == "shape"


def test_a_selection_or_a_shard_compared_with_the_baseline_says_why_cases_count_as_removed(pytester):
    """`pytest --sqleval -k q0 --sqleval-baseline deployed.json` printed `16 removed` for the cases it did not select,
    as if they had been deleted from the suite; a shard compared with the baseline the same for the other shards'."""
    make_sqlite(pytester.path / "shop.sqlite")
    (pytester.path / "shop.sqleval.yaml").write_text(SUITE, encoding="utf-8")
    args = ("--sqleval", "-p", "no:cacheprovider")
    assert pytester.runpytest(*args, "--sqleval-json=base.json").ret == 0
    selected = pytester.runpytest(*args, "--deselect", "shop.sqleval.yaml::b", "--sqleval-baseline=base.json", "--sqleval-json=k.json")
    selected.stdout.fnmatch_lines(["*warning: 1 case(s) of this run's suites were not selected (-k, -m, --deselect, "
                                   "--lf): those of the baseline count as removed",
                                   "*shop: 1 still passed, 1 removed"])
    shard = pytester.runpytest(*args, "--sqleval-shard=1/2", "--sqleval-baseline=base.json", "--sqleval-json=s.json")
    shard.stdout.fnmatch_lines(["*warning: this run is shard 1/2: the baseline's cases of the other shards count as "
                                "removed*"])
    assert pytester.runpytest(*args, "--sqleval-baseline=base.json", "--sqleval-json=w.json").ret == 0
    assert json.loads((pytester.path / "w.json").read_text(encoding="utf-8"))["baseline"]["warnings"] == []
