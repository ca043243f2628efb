"""The baseline statistics as they were before they were vectorised (pure Python, one draw at a time): the oracle
that ``test_stats_at_scale.py`` compares the new code with bit for bit, and the "old" side that
``benchmarks/bench_stats.py`` times."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

from pytest_sqleval import stats


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


def old_flip_steps(nonzero):
    """How many steps old_flips_by_size takes without a budget (several sizes)."""
    sums, steps_taken = {0.0: 1}, 0
    for size, count in sorted(Counter(abs(d) for d in nonzero).items()):
        steps_taken += len(sums) * (count + 1)
        sums = {total + size * (2 * k - count): 1 for total in sums for k in range(count + 1)}
    return steps_taken


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
    if n == 0:
        return None
    if all(v == data[0] for v in data):
        return (data[0], data[0])
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(data, k=n)) / n for _ in range(resamples))
    alpha = round((1 - level) / 2, 12)  # 0.025 for 0.95, as stats.tail_share takes it
    return (stats.quantile(means, alpha), stats.quantile(means, 1 - alpha))


def old_binomial_cdf(k, n, p):
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
            for i in range(k + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * math.fsum(math.exp(v - top) for v in logs))


def old_paired_share_interval(better, worse, n, level=0.95):
    tail = round((1 - level) / 2, 12)  # 0.025 for 0.95, as stats.tail_share takes it

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
