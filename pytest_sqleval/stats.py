"""Confidence intervals and paired significance tests (pure functions, no pytest, no numpy).

Everything here is deterministic for a given input: the resampling methods draw
from ``random.Random(seed)`` with a fixed default seed, and sums use
``math.fsum``, so a serial run, an ``-n 2`` run and a merge of shards give the
same numbers.

- :func:`wilson`: the Wilson score interval of a share k/n (Wilson 1927).
- :func:`mcnemar_exact`: the two-sided exact McNemar test on the discordant
  pairs (a binomial test of b against Binomial(b + c, 1/2)).
- :func:`paired_share_interval`: the 95% interval of a difference of paired
  shares, conditional on the discordant pairs (Clopper-Pearson), so it excludes 0
  exactly when the exact McNemar test is significant at 0.05.
- :func:`bootstrap_mean`: a seeded percentile bootstrap interval of a mean
  (for a paired comparison, pass the per-pair differences).
- :func:`sign_flip`: the two-sided paired sign-flip permutation test of a mean
  difference (exact enumeration up to :data:`EXACT_FLIP_LIMIT` non-zero
  differences; exact by grouping equal sizes when the differences take few
  distinct values, as 0/1 scores do; else seeded Monte Carlo with the add-one
  correction).
"""

from __future__ import annotations

import functools
import itertools
import math
import random
import sys
from collections import Counter
from typing import Iterator, Sequence

#: The 0.975 quantile of the standard normal distribution (a two-sided 95% interval).
Z95 = 1.959963984540054
#: Default seed of every resampling method.
SEED = 20261201
#: Default number of bootstrap resamples and Monte Carlo sign flips.
RESAMPLES = 1000
#: Up to this many non-zero paired differences, the sign-flip test enumerates all 2^n flips.
EXACT_FLIP_LIMIT = 12
#: A step of the exact sign-flip count by size costs about this many Monte Carlo draws: past n * resamples / this
#: many steps (many distinct sizes), the Monte Carlo estimate is taken instead.
FLIP_STEP_COST = 8


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval of k successes in n trials; None when n == 0."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"k must be between 0 and n, not k={k}, n={n}")
    p = k / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = (z / (1 + z2 / n)) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    lower = 0.0 if k == 0 else max(0.0, centre - half)
    upper = 1.0 if k == n else min(1.0, centre + half)
    return (lower, upper)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs.

    p = min(1, 2 * sum_{k <= min(b, c)} C(b + c, k) / 2^(b + c)); 1.0 without discordant pairs.
    """
    if b < 0 or c < 0:
        raise ValueError("discordant counts cannot be negative")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(_binomial_row(n, min(b, c)))
    return min(1.0, 2 * tail / 2**n)


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in log space (no overflow for large n)."""
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


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """The exact (central) Clopper-Pearson interval of a binomial share k/n, by bisection."""
    if n <= 0:
        return None
    tail = (1 - level) / 2

    def solve(f) -> float:  # f decreasing in p: the p with f(p) = tail
        lo, hi = 0.0, 1.0
        for _ in range(80):
            mid = (lo + hi) / 2
            if f(mid) > tail:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    lower = 0.0 if k == 0 else 1.0 - solve(lambda q: binomial_cdf(n - k, n, q))  # P(X >= k; p) = tail
    upper = 1.0 if k == n else solve(lambda q: binomial_cdf(k, n, q))  # P(X <= k; p) = tail
    return (lower, upper)


def paired_share_interval(better: int, worse: int, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """Interval of the difference of two paired shares (current - baseline) over n pairs, consistent with
    the exact McNemar test: conditional on the m = better + worse discordant pairs, the share of
    ``better`` among them has the Clopper-Pearson interval [L, U], and the difference is
    (m / n) * (2 * share - 1). It excludes 0 exactly when mcnemar_exact(worse, better) < 1 - level.
    """
    if n <= 0:
        return None
    m = better + worse
    if m == 0:
        return (0.0, 0.0)
    lo, hi = clopper_pearson(better, m, level)  # type: ignore[misc]
    return ((m / n) * (2 * lo - 1), (m / n) * (2 * hi - 1))


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (Hyndman-Fan type 7, numpy's default) of sorted values."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def bootstrap_mean(values: Sequence[float], *, seed: int = SEED, resamples: int = RESAMPLES,
                   level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean of ``values``; None for no values.

    For a paired comparison pass the per-pair differences (current - baseline): that is the
    paired bootstrap. The same input always gives the same interval.
    """
    data = tuple(float(v) for v in values)
    n = len(data)
    if n == 0:
        return None
    if all(v == data[0] for v in data):
        return (data[0], data[0])
    return _bootstrap_interval(data, seed, resamples, level)


@functools.lru_cache(maxsize=16)
def _bootstrap_interval(data: tuple[float, ...], seed: int, resamples: int, level: float) -> tuple[float, float]:
    """The interval for one input (cached: a run's summary and its report ask for the same ones)."""
    n = len(data)
    means = sorted(_resampled_sums(data, seed, resamples) or
                   (math.fsum(c) / n for c in _choices(data, seed, resamples)))
    alpha = (1 - level) / 2
    return (quantile(means, alpha), quantile(means, 1 - alpha))


def _choices(data: tuple[float, ...], seed: int, resamples: int) -> Iterator[list[float]]:
    """The resamples, as ``random.Random(seed).choices(data, k=len(data))`` draws them, one after the other."""
    rng = random.Random(seed)
    for _ in range(resamples):
        yield rng.choices(data, k=len(data))


def _resampled_sums(data: tuple[float, ...], seed: int, resamples: int) -> list[float] | None:
    """The means of :func:`_choices`' resamples, bit for bit, without a Python loop per draw (10 intervals x 1,000
    resamples of a 1,000-case run took ~1.3 s that way); None when numpy is missing (or for unusual data).

    Why it is the same: ``choices`` draws ``data[floor(random() * n)]``, one ``random()`` per pick; numpy's
    legacy ``RandomState`` is the same Mersenne Twister with the same 53-bit doubles, given this generator's
    state, so the picks are the same. ``fsum`` returns the correctly rounded exact sum of what it is given; here
    it is given, per resample, each distinct value's count times the value's two 26-bit halves (Veltkamp's
    split): products that are exact, so their exact sum is the resample's, and ``fsum`` rounds it the same."""
    n = len(data)
    distinct = sorted(set(data))
    if (len(distinct) > MAX_DISTINCT_EXACT or n >= 2**26
            or not all(v == 0 or 2.0**-900 < abs(v) < 2.0**900 for v in distinct)
            or any(v == 0 and math.copysign(1.0, v) < 0 for v in data)):
        return None  # NaN and infinities fail the range test too; a -0.0 keeps fsum's sign rules
    global _plain_draws
    if "numpy" not in sys.modules and _plain_draws + n * resamples < NUMPY_WORTH_IMPORTING:
        _plain_draws += n * resamples
        return None  # a small run: importing numpy (~0.1 s) would cost more than it saves
    try:
        import numpy as np
    except ImportError:
        return None
    _, internal, _ = random.Random(seed).getstate()
    generator = np.random.RandomState()
    generator.set_state(("MT19937", np.array(internal[:-1], dtype=np.uint32), int(internal[-1]), 0, 0.0))
    values = np.array(distinct, dtype=np.float64)
    index = np.searchsorted(values, np.asarray(data, dtype=np.float64)).astype(np.intp)
    scaled = values * 134217729.0  # 2**27 + 1
    high = scaled - (scaled - values)  # 26 significant bits; high + low == value exactly
    low = values - high
    # A block of resamples at a time (the generator's stream is the same whatever the block sizes): 1,000
    # resamples of 100,000 cases at once took arrays of 800 MB each, more than the rest of such a run.
    rows = max(1, DRAWS_AT_ONCE // n)
    means: list[float] = []
    for start in range(0, resamples, rows):
        block = min(rows, resamples - start)
        picks = (generator.random_sample(n * block) * float(n)).astype(np.intp)
        which = index[picks].reshape(block, n)
        which += (np.arange(block, dtype=np.intp) * len(distinct))[:, None]
        counts = np.bincount(which.ravel(), minlength=block * len(distinct)).reshape(block, len(distinct))
        counts = counts.astype(np.float64)  # < 2**26: exact
        means.extend(math.fsum(row) / n for row in np.concatenate([counts * high, counts * low], axis=1).tolist())
    return means


#: Draws per block of :func:`_resampled_sums` (each of its arrays then holds at most 8 MB; a few are alive at once:
#: at 4 M draws they added ~90 MB to the peak of a run's summary, whatever its size).
DRAWS_AT_ONCE = 1 << 20


#: Distinct values up to which a bootstrap sums resamples by counting (beyond: the plain loop).
MAX_DISTINCT_EXACT = 512

#: Draws (cases x resamples) from which the fast path imports numpy (the plain loop takes ~0.13 us a draw), counting
#: the draws this process has already made the plain way: a summary asks for several intervals (each metric, overall
#: and per difficulty), so small groups drawn first no longer keep the plain loop when the whole summary is large.
NUMPY_WORTH_IMPORTING = 400_000

#: Draws made by the plain loop so far in this process (see :data:`NUMPY_WORTH_IMPORTING`).
_plain_draws = 0


def sign_flip(differences: Sequence[float], *, seed: int = SEED, resamples: int = RESAMPLES) -> float:
    """Two-sided p-value of the paired sign-flip permutation test of mean(differences) = 0.

    Under the null each difference is as likely positive as negative. Zero differences do not
    change the statistic and are left out. Exact for up to EXACT_FLIP_LIMIT non-zero
    differences, and for more when they take few distinct sizes (:func:`_flips_by_size`: the
    differences of 0/1 scores give the exact binomial sign test, McNemar's p); otherwise
    (1 + #{|flipped sum| >= |observed sum|}) / (resamples + 1) over ``resamples`` seeded random
    flips of the sorted differences (the same differences in any order give the same p), whose
    standard error is sqrt(p (1 - p) / resamples): about 0.007 at p = 0.05 for 1,000.
    """
    nonzero = [float(d) for d in differences if d != 0]
    if not nonzero:
        return 1.0
    observed = abs(math.fsum(nonzero))
    tolerance = 1e-12 * max(1.0, observed)
    if len(nonzero) <= EXACT_FLIP_LIMIT:
        hits = total = 0
        for signs in itertools.product((1.0, -1.0), repeat=len(nonzero)):
            total += 1
            if abs(math.fsum(s * d for s, d in zip(signs, nonzero))) >= observed - tolerance:
                hits += 1
        return hits / total
    exact = _flips_by_size(nonzero, observed - tolerance, budget=resamples * len(nonzero) // FLIP_STEP_COST)
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


def _flips_by_size(nonzero: list[float], reach: float, *, budget: int) -> float | None:
    """The exact sign-flip p-value, counting patterns by size instead of enumerating 2^n of them: of the n
    differences of size a, k flipped positive add a (2k - n) to the sum, in C(n, k) patterns; the distribution of
    the sum is built size by size. None when that takes more than ``budget`` steps (many distinct sizes): the
    caller's Monte Carlo is then the cheaper estimate."""
    sizes = Counter(abs(d) for d in nonzero)
    if len(sizes) == 1:  # one size (0/1 scores): the binomial sign test, which is the exact McNemar test
        worse = sum(1 for d in nonzero if d < 0)
        return mcnemar_exact(worse, len(nonzero) - worse)
    sums: dict[float, int] = {0.0: 1}
    steps_taken = 0
    for size, count in sorted(sizes.items()):
        steps_taken += len(sums) * (count + 1)
        if steps_taken > budget:
            return None
        moves = [(size * (2 * k - count), ways) for k, ways in enumerate(_binomial_row(count))]
        grown: dict[float, int] = {}
        for total, patterns in sums.items():
            for move, ways in moves:
                grown[total + move] = grown.get(total + move, 0) + patterns * ways
        sums = grown
    return sum(patterns for total, patterns in sums.items() if abs(total) >= reach) / (1 << len(nonzero))


def _binomial_row(n: int, last: int | None = None) -> list[int]:
    """C(n, 0), ..., C(n, last) (default: to C(n, n)), each from the one before: ``math.comb`` per k took 80 s for
    the McNemar tail of 20,000 discordant pairs."""
    row = [1]
    for k in range(n if last is None else min(last, n)):
        row.append(row[-1] * (n - k) // (k + 1))
    return row
