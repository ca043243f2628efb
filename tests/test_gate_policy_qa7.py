"""Deploy gate, policy and generate leftovers (qa7gate): shards of different selections, coherent statistics for
few pairs, PostgreSQL schemas in policies, and what a generate user can change."""

from __future__ import annotations

import json

import pytest

from deploygate_support import make_project, model, run_report, write_model
from pytest_sqleval.cli import main
from pytest_sqleval.registry import use_registry


@pytest.fixture(autouse=True)
def _builtin_registry():
    """`sqleval merge|gate` in process adopt a report's own metrics: back to the built-ins after each test."""
    yield
    use_registry(None)


# --------------------------------------------------------------------------- merge: selections
def test_merge_warns_when_shards_ran_different_selections(pytester: pytest.Pytester, capsys):
    """Shard 1/2 of `-k alpha` and shard 2/2 of `-k beta`: each shard split its own selection, so the merged
    report is no one run's (half of each suite is in neither shard). The merge says so, and so does `sqleval gate`."""
    make_project(pytester)
    run_report(pytester, "s1.json", "--sqleval-shard=1/2", "-k", "alpha")
    run_report(pytester, "s2.json", "--sqleval-shard=2/2", "-k", "beta")
    out = pytester.path / "all.json"
    capsys.readouterr()
    assert main(["merge", str(pytester.path / "s1.json"), str(pytester.path / "s2.json"), "-o", str(out)]) == 0
    merged = json.loads(out.read_text())
    selection = [w for w in merged["run"]["merge_warnings"] if "selection" in w]
    assert len(selection) == 1, merged["run"]["merge_warnings"]
    assert "-k 'alpha'" in selection[0] and "-k 'beta'" in selection[0]
    assert "selection" in capsys.readouterr().err
    main(["gate", str(out)])
    assert "selection" in capsys.readouterr().err


def test_merge_refusing_overlapping_shards_names_their_different_selections(pytester: pytest.Pytester, capsys):
    """Shard 1/2 of `-k alpha` and shard 2/2 of the whole run share cases: refused, and the fix names the cause."""
    make_project(pytester)
    run_report(pytester, "s1.json", "--sqleval-shard=1/2", "-k", "alpha")
    run_report(pytester, "s2.json", "--sqleval-shard=2/2")
    capsys.readouterr()
    code = main(["merge", str(pytester.path / "s1.json"), str(pytester.path / "s2.json"), "-o", str(pytester.path / "m.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert "is also in" in err and "-k 'alpha'" in err and "same -k" in err


def test_merge_of_shards_of_one_selection_gives_no_selection_warning(pytester: pytest.Pytester):
    make_project(pytester)
    for k in (1, 2):
        run_report(pytester, f"s{k}.json", f"--sqleval-shard={k}/2", "-k", "alpha")
    out = pytester.path / "all.json"
    assert main(["merge", str(pytester.path / "s1.json"), str(pytester.path / "s2.json"), "-o", str(out)]) == 0
    merged = json.loads(out.read_text())
    assert merged["run"]["merge_warnings"] == []
    assert len(merged["cases"]) == 20 and merged["run"]["deselected"] == 12  # beta's 12 items


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_merge_of_runs_split_by_k_counts_deselected_cases_once(pytester: pytest.Pytester, xdist):
    """A CI matrix split by `-k` (no --sqleval-shard): two disjoint runs of the same suites. Together they ran every
    case, so the merged report deselected none (it said 32: each run's deselected cases summed)."""
    make_project(pytester)
    _, first = run_report(pytester, "k1.json", "-k", "a0", *xdist)
    _, second = run_report(pytester, "k2.json", "-k", "not a0", *xdist)
    assert len(first["cases"]) == 10 and len(second["cases"]) == 22
    out = pytester.path / "all.json"
    assert main(["merge", str(pytester.path / "k1.json"), str(pytester.path / "k2.json"), "-o", str(out)]) == 0
    merged = json.loads(out.read_text())
    assert len(merged["cases"]) == 32
    assert merged["run"]["deselected"] == 0
    assert merged["run"]["merge_warnings"] == []  # disjoint -k runs are the normal way to split by hand


def test_merge_of_runs_of_different_suites_keeps_their_own_deselected_counts(pytester: pytest.Pytester):
    make_project(pytester)
    rows = model({})
    write_model(pytester.path / "alpha.jsonl", [r for r in rows if r["id"].startswith("a")])
    write_model(pytester.path / "beta.jsonl", [r for r in rows if not r["id"].startswith("a")])
    run_report(pytester, "a.json", "alpha.sqleval.yaml", "-k", "a0", predictions="alpha.jsonl")
    run_report(pytester, "b.json", "beta.sqleval.yaml", predictions="beta.jsonl")
    out = pytester.path / "all.json"
    assert main(["merge", str(pytester.path / "a.json"), str(pytester.path / "b.json"), "-o", str(out)]) == 0
    merged = json.loads(out.read_text())
    assert len(merged["cases"]) == 22 and merged["run"]["deselected"] == 10


# --------------------------------------------------------------------------- baseline statistics of means, few pairs
def _suite(report, name):
    return next(s for s in report["baseline"]["suites"] if s["name"] == name)


def _mean_comparisons(report):
    blocks = [*report["baseline"]["suites"], report["baseline"]["overall"]]
    return [stats for block in blocks for stats in block["metrics"].values() if stats.get("test") == "sign_flip"]


def test_a_mean_delta_interval_holds_zero_when_its_paired_test_is_not_significant(pytester: pytest.Pytester):
    """Four of alpha's 20 cases drop soft F1 by 1/3 each, the rest are equal: the sign-flip p is 2/2^4 = 0.125, yet
    the percentile bootstrap interval excluded 0 ([-0.13, -0.02]): the report said "a real drop" and "not
    significant" of one delta. The interval of a delta that is not significant at 0.05 holds 0."""
    make_project(pytester)
    write_model(pytester.path / "deployed.jsonl", model({}))
    write_model(pytester.path / "candidate.jsonl", model({f"a1{i}": "partial" for i in range(4)}))
    run_report(pytester, "deployed.json", predictions="deployed.jsonl")
    _, report = run_report(pytester, "now.json", "--sqleval-baseline=deployed.json",
                           "--sqleval-fail-under-baseline=soft_f1")
    alpha = _suite(report, "alpha")["metrics"]["soft_f1"]
    assert alpha["p_value"] == pytest.approx(0.125) and alpha["n_pairs"] == 20
    lo, hi = alpha["ci"]
    assert lo < 0 <= hi
    for stats in _mean_comparisons(report):
        if stats["p_value"] >= 0.05:
            assert stats["ci"][0] <= 0 <= stats["ci"][1], stats
    gate = next(g for g in report["gates"] if g["metric"] == "soft_f1" and g["suite"] == "alpha")
    assert gate["passed"] and gate["ci"] == alpha["ci"]


def test_few_equal_mean_differences_get_an_interval_that_is_not_a_point(pytester: pytest.Pytester):
    """A suite of four cases whose soft F1 all dropped by 1/3: the bootstrap interval had zero width
    ([-1/3, -1/3]) while p = 0.125: with 4 pairs no sign-flip test can be significant."""
    make_project(pytester)
    write_model(pytester.path / "deployed.jsonl", model({}))
    write_model(pytester.path / "candidate.jsonl", model({f"a0{i}": "partial" for i in range(4)}))
    run_report(pytester, "deployed.json", "-k", "a00 or a01 or a02 or a03", predictions="deployed.jsonl")
    _, report = run_report(pytester, "now.json", "-k", "a00 or a01 or a02 or a03", "--sqleval-baseline=deployed.json")
    alpha = _suite(report, "alpha")["metrics"]["soft_f1"]
    assert alpha["n_pairs"] == 4 and alpha["p_value"] == pytest.approx(0.125)
    assert alpha["ci"][0] < alpha["ci"][1] and alpha["ci"][1] >= 0


# --------------------------------------------------------------------------- sqleval generate: the guard's drop reason
def _generate(tmp_path, database, proposed: list[str], *extra: str) -> dict:
    import os
    import subprocess
    import sys

    from chat_server import ChatServer

    answer = json.dumps([{"reasoning": "r", "sql": sql} for sql in proposed])
    script = {"request 1 of 1": [answer], "SQL to explain:": [json.dumps({"reasoning": "r", "question": "Which?"})]}
    out = tmp_path / "gen" / "g.sqleval.yaml"
    with ChatServer(script) as server:
        done = subprocess.run([sys.executable, "-m", "pytest_sqleval.datasets", "generate", str(database), "-o", str(out),
                               "--model", "test-model", "--model-url", server.url, "--count", str(len(proposed)),
                               "--cache", str(tmp_path / "cache"), *extra],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "OPENAI_API_KEY": "k"})
    assert done.returncode in (0, 2) and (tmp_path / "gen" / "g.report.json").exists(), done.stderr
    return json.loads((tmp_path / "gen" / "g.report.json").read_text())


def test_generate_drop_by_the_function_allowlist_names_the_generate_option(tmp_path):
    """The reason named the suite's `allow_functions:` and the ini option, neither of which `sqleval generate` reads;
    it names the command's own --allow-function, which lets a DuckDB macro of the database run."""
    import duckdb

    db = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE parts (name TEXT, qty INTEGER)")
    con.execute("INSERT INTO parts VALUES ('bolt', 10), ('nut', 3)")
    con.execute("CREATE MACRO twice(x) AS x * 2")
    con.close()
    sql = "SELECT name, twice(qty) AS q FROM parts ORDER BY name"
    report = _generate(tmp_path, db, [sql])
    (drop,) = report["drops"]
    assert drop["filter"] == "does_not_run"
    assert "allow_functions:" not in drop["reason"] and "sqleval_allow_functions" not in drop["reason"]
    assert "--allow-function twice" in drop["reason"]
    report = _generate(tmp_path, db, [sql], "--allow-function", "twice", "--cache-mode", "refresh")
    assert report["kept"] == 1, report["drops"]


# --------------------------------------------------------------------------- policy: PostgreSQL schemas
@pytest.fixture
def app_schema(postgres_url):
    """A schema of its own with orders (tenant_id) and regions (none), and a public table `regions` with a tenant_id
    (another table of the same name); yields (engine on the default search_path, engine on search_path app, schema)."""
    import uuid

    import sqlalchemy
    from sqlalchemy.engine import make_url

    name = f"app_{uuid.uuid4().hex[:8]}"
    regions = f"regions_{uuid.uuid4().hex[:8]}"
    engine = sqlalchemy.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {name}")
        conn.exec_driver_sql(f"CREATE TABLE {name}.orders (id int, tenant_id int, region_id int)")
        conn.exec_driver_sql(f"CREATE TABLE {name}.{regions} (id int, label text)")
        conn.exec_driver_sql(f"CREATE TABLE public.{regions} (id int, tenant_id int)")
    url = make_url(postgres_url)
    on_app = sqlalchemy.create_engine(url.update_query_dict({"options": f"-csearch_path={name}"}))
    try:
        yield engine, on_app, name, regions
    finally:
        on_app.dispose()
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {name} CASCADE; DROP TABLE public.{regions}")
        engine.dispose()


def test_require_filter_knows_the_columns_of_a_table_of_another_schema(app_schema):
    """`require_filter: tenant_id = 42` concerns the tables that have tenant_id. A query over app.orders and
    app.regions (no tenant_id) filtered orders, yet was a violation for app.regions: the policy looked the table up
    by its bare name (public's regions, which has a tenant_id), not as the engine reads `app.regions`."""
    from pytest_sqleval import check_policy_of

    engine, _, app, regions = app_schema
    sql = (f"SELECT o.id, r.label FROM {app}.orders o JOIN {app}.{regions} r ON r.id = o.region_id "
           "WHERE o.tenant_id = 42")
    verdict = check_policy_of(sql, {"require_filter": "tenant_id = 42"}, engine=engine)
    assert verdict.passed, verdict.violations
    unfiltered = check_policy_of(f"SELECT id FROM {app}.orders", {"require_filter": "tenant_id = 42"}, engine=engine)
    assert not unfiltered.passed


def test_policy_resolves_a_bare_table_name_on_the_engines_search_path(app_schema):
    """On an engine whose search_path is app, `FROM orders` reads app.orders: `tables: [app.orders]` allows it and
    `tables: [orders]` allows `FROM app.orders`; public.orders (not on that path) stays another table."""
    from pytest_sqleval import check_policy_of

    _, on_app, app, regions = app_schema
    assert check_policy_of("SELECT id FROM orders WHERE tenant_id = 42", {"tables": [f"{app}.orders"]},
                           engine=on_app).passed
    assert check_policy_of(f"SELECT id FROM {app}.orders", {"tables": ["orders"]}, engine=on_app).passed
    assert not check_policy_of("SELECT id FROM public.orders", {"tables": ["orders"]}, engine=on_app).passed
    # require_filter on the bare name: this engine's regions is app's, which has no tenant_id
    verdict = check_policy_of(f"SELECT o.id FROM orders o JOIN {regions} r ON r.id = o.region_id WHERE o.tenant_id = 42",
                              {"require_filter": "tenant_id = 42"}, engine=on_app)
    assert verdict.passed, verdict.violations
