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
import itertools
import math
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy  # noqa: E402,F401 - imported before timing: the numpy paths pay no import

from pytest_sqleval import stats  # noqa: E402


# --------------------------------------------------------------------------- the old code (pure Python)
def old_flips_by_size(nonzero, reach, *, budget):
    sizes = Counter(abs(d) for d in nonzero)
    if len(sizes) == 1:
        worse = sum(1 for d in nonzero if d < 0)
        return stats.mcnemar_exact(worse, len(nonzero) - worse)
    sums = {0.0: 1}
    steps_taken = 0
    for size, count in sorted(sizes.items()):
        steps_taken += len(sums) * (count + 1)
        if steps_taken > budget:
            return None
        moves = [(size * (2 * k - count), ways) for k, ways in enumerate(stats._binomial_row(count))]
        grown = {}
        for total, patterns in sums.items():
            for move, ways in moves:
                grown[total + move] = grown.get(total + move, 0) + patterns * ways
        sums = grown
    return sum(patterns for total, patterns in sums.items() if abs(total) >= reach) / (1 << len(nonzero))


def old_sign_flip(differences, *, seed=stats.SEED, resamples=stats.RESAMPLES):
    nonzero = [float(d) for d in differences if d != 0]
    if not nonzero:
        return 1.0
    observed = abs(math.fsum(nonzero))
    tolerance = 1e-12 * max(1.0, observed)
    if len(nonzero) <= 12:
        hits = total = 0
        for signs in itertools.product((1.0, -1.0), repeat=len(nonzero)):
            total += 1
            if abs(math.fsum(s * d for s, d in zip(signs, nonzero))) >= observed - tolerance:
                hits += 1
        return hits / total
    exact = old_flips_by_size(nonzero, observed - tolerance, budget=resamples * len(nonzero) // 8)
    if exact is not None:
        return exact
    nonzero.sort()
    rng = random.Random(seed)
    hits = 0
    for _ in range(resamples):
        flipped = math.fsum(d if rng.random() < 0.5 else -d for d in nonzero)
        if abs(flipped) >= observed - tolerance:
            hits += 1
    return (hits + 1) / (resamples + 1)


def old_bootstrap_mean(values, *, seed=stats.SEED, resamples=stats.RESAMPLES, level=0.95):
    data = tuple(float(v) for v in values)
    n = len(data)
    if all(v == data[0] for v in data):
        return (data[0], data[0])
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(data, k=n)) / n for _ in range(resamples))
    alpha = (1 - level) / 2
    return (stats.quantile(means, alpha), stats.quantile(means, 1 - alpha))


def old_binomial_cdf(k, n, p):
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
            for i in range(k + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * math.fsum(math.exp(v - top) for v in logs))


def old_paired_share_interval(better, worse, n, level=0.95):
    tail = (1 - level) / 2

    def solve(f):
        lo, hi = 0.0, 1.0
        for _ in range(80):
            mid = (lo + hi) / 2
            if f(mid) > tail:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    m = better + worse
    lo = 0.0 if better == 0 else 1.0 - solve(lambda q: old_binomial_cdf(m - better, m, q))
    hi = 1.0 if better == m else solve(lambda q: old_binomial_cdf(better, m, q))
    return ((m / n) * (2 * lo - 1), (m / n) * (2 * hi - 1))


# --------------------------------------------------------------------------- the new code, uncached
def new_bootstrap_mean(values):
    stats._bootstrap_interval.cache_clear()
    return stats.bootstrap_mean(values)


def new_paired_share_interval(better, worse, n):
    stats._log_binomials.cache_clear()
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
