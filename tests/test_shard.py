"""--sqleval-shard K/N: deterministic, balanced, interactions kept together, other shards' predictions no error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from deploygate_support import ALPHA, BETA, make_project, run_report
from pytest_sqleval.shard import ShardError, assign, parse_shard, split, stable_hash


def canonical(block) -> str:
    import json

    return json.dumps(block, sort_keys=True)


def test_parse_shard():
    assert parse_shard("2/3") == (2, 3)
    assert parse_shard(" 1 / 1 ") == (1, 1)
    for bad in ("0/3", "4/3", "3", "a/b", "1/0"):
        with pytest.raises(ShardError, match="K"):
            parse_shard(bad)


def test_stable_hash_does_not_depend_on_the_process():
    # Python's hash() of a str changes with PYTHONHASHSEED; ours must not
    code = "from pytest_sqleval.shard import stable_hash; print(stable_hash(('shop', 'case-1')))"
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={"PYTHONHASHSEED": seed}).stdout.strip() for seed in ("1", "2")}
    assert outputs == {str(stable_hash(("shop", "case-1")))}


def test_assign_is_balanced_by_case_count():
    weights = {("s", f"c{i}"): 1 for i in range(30)}
    weights[("s", "long-interaction")] = 6
    shard_of = assign(weights, 3)
    loads = [sum(w for u, w in weights.items() if shard_of[u] == k) for k in (1, 2, 3)]
    assert sorted(loads) == [12, 12, 12]
    assert assign(dict(reversed(list(weights.items()))), 3) == shard_of  # the order of collection does not matter


def test_split_keeps_units_together():
    items = [("s", "talk")] * 4 + [("s", f"c{i}") for i in range(8)]
    shards = [split(items, lambda it: it, k, 3)[0] for k in (1, 2, 3)]
    assert sorted(x for shard in shards for x in shard) == sorted(items)
    assert sum(1 for shard in shards if ("s", "talk") in shard) == 1
    assert sorted(len(shard) for shard in shards) == [4, 4, 4]


def test_shards_cover_every_case_once(pytester: pytest.Pytester):
    workers = ()  # serial here; test_shard_is_the_same_serial_and_xdist checks -n 2 picks the same cases
    make_project(pytester)
    seen: list[tuple[str, str]] = []
    for k in (1, 2, 3):
        # the predictions file holds every case: entries of the other shards are not errors
        # a failing gate is reported but a shard's exit status ignores it (the merged report is gated)
        result, report = run_report(pytester, f"shard{k}.json", f"--sqleval-shard={k}/3", *workers,
                                    "--sqleval-threshold=overall:execution_accuracy=0.99")
        assert result.ret == 0, result.stdout.str()
        assert [g["passed"] for g in report["gates"] if g["suite"] == "overall"] == [False]
        result.stdout.fnmatch_lines([f"sqleval: shard {k}/3: the gates above are this shard's alone*"])
        assert report["run"]["shard"] == f"{k}/3"
        ids = [(c["suite"], c["id"]) for c in report["cases"]]
        assert 10 <= len(ids) <= 11  # 32 items in 30 units (one 3-turn interaction): 11, 11, 10
        turns = [i for s, i in ids if i.startswith("talk/")]
        assert turns in ([], ["talk/1", "talk/2", "talk/3"])
        if not workers:
            result.stdout.fnmatch_lines([f"*{32 - len(ids)} deselected*"])
        seen += ids
    expected = [("alpha", i) for i in ALPHA] + [("beta", i) for i in BETA] + [("beta", f"talk/{t}") for t in (1, 2, 3)]
    assert sorted(seen) == sorted(expected)


def test_shard_is_the_same_serial_and_xdist(pytester: pytest.Pytester):
    make_project(pytester)
    _, serial = run_report(pytester, "s.json", "--sqleval-shard=2/3")
    result, parallel = run_report(pytester, "p.json", "--sqleval-shard=2/3", "-n", "2",
                                  "--sqleval-threshold=overall:execution_accuracy=0.99")
    assert [c["id"] for c in serial["cases"]] == [c["id"] for c in parallel["cases"]]
    assert canonical(serial["suites"]) == canonical(parallel["suites"])
    assert result.ret == 0 and parallel["run"]["shard"] == "2/3"  # a shard's failing gate does not fail it


def test_bad_shard_is_a_usage_error(pytester: pytest.Pytester):
    make_project(pytester)
    result, _ = run_report(pytester, "x.json", "--sqleval-shard=4/3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--sqleval-shard: shard 4/3: K must be between 1 and N (e.g. 1/3, 2/3, 3/3)*"])


def test_more_shards_than_units_is_as_fast_and_gives_the_same_split():
    """Shards past the number of units stay empty: they are not scanned, so N = 200,000 costs what N = 3 does
    (it took a scan of every shard per unit: minutes for a few thousand cases), and the split is the one a scan of
    every shard gives (the units in order on shards 1, 2, ...)."""
    import time

    weights = {("s", f"c{i}"): 1 for i in range(300)}
    weights[("s", "talk")] = 3
    started = time.perf_counter()
    shard_of = assign(weights, 200_000)
    assert time.perf_counter() - started < 2
    assert sorted(shard_of.values()) == list(range(1, 302))
    assert shard_of[("s", "talk")] == 1  # the heaviest unit first
    assert assign(weights, 301) == shard_of
    small = {("s", f"c{i}"): 1 for i in range(5)}
    assert set(assign(small, 3).values()) == {1, 2, 3}
