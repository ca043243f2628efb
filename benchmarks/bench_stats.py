"""Paired statistics at scale: the pure-Python code as it was against ``pytest_sqleval.stats`` now.

Run from the project root::

    python benchmarks/bench_stats.py [--sizes 1000 20000 100000] [--repeats 1]

For n paired differences (Gaussian, all distinct: the Monte Carlo sign flip and the bootstrap past
``MAX_DISTINCT_EXACT`` distinct values) it times, old then new in each repetition (interleaved, so the machine's
load hits both alike), what a baseline comparison computes per ``mean`` metric: ``sign_flip`` and
``bootstrap_mean`` (1,000 resamples each); and per ``rate`` metric, ``paired_share_interval`` with n / 5
discordant pairs (the exact Clopper-Pearson bisection over binomial_cdf). The old side is a copy of the code
before the numpy paths (below); each result is checked equal to the new one, bit for bit. numpy is imported
before timing (a run pays its ~0.1 s import once). Times: CPU of this process and wall, best of the repetitions.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # stats_before: the old code, the tests' oracle

import numpy  # noqa: E402,F401 - imported before timing: the numpy paths pay no import

from pytest_sqleval import stats  # noqa: E402
from stats_before import old_bootstrap_mean, old_paired_share_interval, old_sign_flip  # noqa: E402


# --------------------------------------------------------------------------- the new code, uncached
def new_bootstrap_mean(values):
    stats._bootstrap_interval.cache_clear()
    return stats.bootstrap_mean(values)


def new_paired_share_interval(better, worse, n):
    return stats.paired_share_interval(better, worse, n)


def timed(function, *args):
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args)
    return result, time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 20_000, 100_000])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; best of {args.repeats}")
    print("| what | n | old CPU (s) | new CPU (s) | old wall (s) | new wall (s) | old / new (CPU) | same result |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for n in args.sizes:
        rng = random.Random(n)
        differences = [rng.gauss(0.005, 0.3) for _ in range(n)]
        discordant = n // 5
        better, worse = discordant * 55 // 100, discordant - discordant * 55 // 100
        jobs = [("sign_flip", old_sign_flip, stats.sign_flip, (differences,)),
                ("bootstrap_mean", old_bootstrap_mean, new_bootstrap_mean, (differences,)),
                (f"paired_share_interval ({discordant} discordant)", old_paired_share_interval,
                 new_paired_share_interval, (better, worse, n))]
        for name, old, new, job_args in jobs:
            best = {"old": [math.inf, math.inf], "new": [math.inf, math.inf]}
            results = {}
            for _ in range(args.repeats):
                for side, function in (("old", old), ("new", new)):
                    results[side], cpu, wall = timed(function, *job_args)
                    best[side] = [min(best[side][0], cpu), min(best[side][1], wall)]
            same = repr(results["old"]) == repr(results["new"])
            print(f"| {name} | {n:,} | {best['old'][0]:.3f} | {best['new'][0]:.3f} | {best['old'][1]:.3f} | "
                  f"{best['new'][1]:.3f} | {best['old'][0] / best['new'][0]:.1f} | {'yes' if same else 'NO'} |",
                  flush=True)


if __name__ == "__main__":
    main()
