"""Confidence intervals and paired significance tests (pure functions, no pytest; numpy only to go faster).

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
from typing import Any, Iterator, Sequence

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


def wilson(k: float, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval of k successes in n trials (k may be fractional: the sum of shares); None when n == 0."""
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
    if n <= EXACT_MCNEMAR_LIMIT:  # exact integers (a few ms); beyond, big-integer rows took seconds
        tail = sum(_binomial_row(n, min(b, c)))
        return min(1.0, 2 * tail / 2**n)
    return min(1.0, 2 * _binomial_cdf_fast(min(b, c), n, 0.5))


#: Discordant pairs up to which :func:`mcnemar_exact` sums the exact integer row (beyond: :func:`_binomial_cdf_fast`,
#: within a relative 1e-10 of it: 45,000 + 46,000 pairs took seconds as integers).
EXACT_MCNEMAR_LIMIT = 1000


def _settled_cdf(k: int, n: int, p: float) -> float | None:
    """P(X <= k) for X ~ Binomial(n, p) when it needs no sum (k outside 0..n-1, p at 0 or 1), else None."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    return None


def _binomial_cdf_fast(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p) in O(sqrt(n)) float steps: the smaller tail, from its term nearest the mean
    (log C(n, k) by lgamma) outwards, each term from the one before, until they stop counting (they fall
    monotonically away from the mean); the upper tail is taken as 1 - P(X > k). Agrees with :func:`binomial_cdf`
    (the sum of every term) to ~1e-12 relatively in the lower tail and absolutely near 1."""
    settled = _settled_cdf(k, n, p)
    if settled is not None:
        return settled
    q = 1.0 - p
    lower = k < n * p
    i = k if lower else k + 1  # the first term of the tail summed
    term = math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                    + i * math.log(p) + (n - i) * math.log1p(-p))
    terms = [term]
    if lower:
        ratio = q / p  # C(n, i - 1) p^(i-1) q^(n-i+1) / (C(n, i) p^i q^(n-i)) = i q / ((n - i + 1) p)
        while i > 0 and term > 1e-17 * terms[0]:
            term *= i * ratio / (n - i + 1)
            i -= 1
            terms.append(term)
        return min(1.0, math.fsum(terms))
    ratio = p / q  # the next term up: (n - i) p / ((i + 1) q)
    while i < n and term > 1e-17 * terms[0]:
        term *= (n - i) * ratio / (i + 1)
        i += 1
        terms.append(term)
    return max(0.0, 1.0 - math.fsum(terms))


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p): every term of the sum, in log space (no overflow for large n). The plain
    formula, kept as the reference :func:`_binomial_cdf_fast` is checked against (the tests); the statistics use
    the fast one."""
    settled = _settled_cdf(k, n, p)
    if settled is not None:
        return settled
    log_p, log_q = math.log(p), math.log1p(-p)
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
            for i in range(k + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * math.fsum(math.exp(v - top) for v in logs))


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """The exact (central) Clopper-Pearson interval of a binomial share k/n, by bisection over the binomial tail
    (:func:`_binomial_cdf_fast`: O(sqrt(n)) terms an evaluation, ~20 ms in all for 100,000 discordant pairs)."""
    if n <= 0:
        return None
    tail = tail_share(level)

    def solve(f) -> float:  # f decreasing in p: the p with f(p) = tail
        lo, hi = 0.0, 1.0
        for _ in range(80):
            mid = (lo + hi) / 2
            if f(mid) > tail:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    lower = 0.0 if k == 0 else 1.0 - solve(lambda q: _binomial_cdf_fast(n - k, n, q))  # P(X >= k; p) = tail
    upper = 1.0 if k == n else solve(lambda q: _binomial_cdf_fast(k, n, q))  # P(X <= k; p) = tail
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
    alpha = tail_share(level)
    return (quantile(means, alpha), quantile(means, 1 - alpha))


def tail_share(level: float) -> float:
    """The share of each tail outside a central interval of ``level``: 0.025 for 0.95, as a reader who recomputes the
    interval takes it (the 2.5th percentile); (1 - 0.95) / 2 in floating point is 0.025000000000000022, which moved
    a bootstrap bound off the hand-computed one in its last bits."""
    return round((1 - level) / 2, 12)


def _choices(data: tuple[float, ...], seed: int, resamples: int) -> Iterator[list[float]]:
    """The resamples, as ``random.Random(seed).choices(data, k=len(data))`` draws them, one after the other."""
    rng = random.Random(seed)
    for _ in range(resamples):
        yield rng.choices(data, k=len(data))


def _resampled_sums(data: tuple[float, ...], seed: int, resamples: int) -> list[float] | None:
    """The means of :func:`_choices`' resamples, bit for bit, without a Python loop per draw (10 intervals x 1,000
    resamples of a 1,000-case run took ~1.3 s that way); None when numpy is missing (or not worth importing).

    Why it is the same: ``choices`` draws ``data[floor(random() * n)]``, one ``random()`` per pick; numpy's
    legacy ``RandomState`` is the same Mersenne Twister with the same 53-bit doubles, given this generator's
    state, so the picks are the same. ``fsum`` returns the correctly rounded exact sum of what it is given; here
    it is given, per resample, each distinct value's count times the value's two 26-bit halves (Veltkamp's
    split): products that are exact, so their exact sum is the resample's, and ``fsum`` rounds it the same. Many
    distinct values, or unusual ones: :func:`_resampled_sums_by_parts`."""
    n = len(data)
    np = _numpy_for(n * resamples)
    if np is None:
        return None  # no numpy, or a small run (see _numpy_for)
    distinct = sorted(set(data))
    if (len(distinct) > MAX_DISTINCT_EXACT or n >= 2**26
            or not all(v == 0 or 2.0**-900 < abs(v) < 2.0**900 for v in distinct)
            or any(v == 0 and math.copysign(1.0, v) < 0 for v in data)):
        # NaN and infinities fail the range test too; a -0.0 keeps fsum's sign rules
        return _resampled_sums_by_parts(np, data, seed, resamples)
    generator = _legacy_generator(np, seed)
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


#: Distinct values up to which a bootstrap sums resamples by counting (beyond: :func:`_resampled_sums_by_parts`).
MAX_DISTINCT_EXACT = 512

#: Draws (cases x resamples) from which the fast path imports numpy (the plain loop takes ~0.13 us a draw), counting
#: the draws this process has already made the plain way: a summary asks for several intervals (each metric, overall
#: and per difficulty), so small groups drawn first no longer keep the plain loop when the whole summary is large.
NUMPY_WORTH_IMPORTING = 400_000

#: Draws made by the plain loop so far in this process (see :data:`NUMPY_WORTH_IMPORTING`).
_plain_draws = 0

#: At most this many parts per value in :func:`_exact_parts` (beyond: values spread over too many binades, each
#: resample is summed by ``fsum`` on its own row).
MAX_PARTS = 8


def _numpy_for(draws: int) -> Any:
    """numpy, to make ``draws`` more random draws; None without numpy, or while the plain loops' draws so far in this
    process (``draws`` counted in) stay under :data:`NUMPY_WORTH_IMPORTING` and numpy is not imported yet."""
    global _plain_draws
    if "numpy" not in sys.modules and _plain_draws + draws < NUMPY_WORTH_IMPORTING:
        _plain_draws += draws
        return None  # a small run: importing numpy (~0.1 s) would cost more than it saves
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def _legacy_generator(np: Any, seed: int) -> Any:
    """numpy's legacy ``RandomState`` in the state of ``random.Random(seed)``: the same Mersenne Twister, whose
    ``random_sample`` gives the same 53-bit doubles, in the same order, as that generator's ``random()``."""
    _, internal, _ = random.Random(seed).getstate()
    generator = np.random.RandomState()
    generator.set_state(("MT19937", np.array(internal[:-1], dtype=np.uint32), int(internal[-1]), 0, 0.0))
    return generator


def _exact_parts(np: Any, values: Any, terms: int) -> Any:
    """``values`` (a float64 array) cut into parts, an array of shape (len(values), L): row i sums exactly to
    values[i], and column j holds multiples of one power of two 2**u_j under 2**(u_j + w) in size, w = 51 - bits of
    ``terms``; so any sum of up to ``terms`` of a column's entries, signed or not, is an integer times 2**u_j under
    2**52 times it: exact in floating point, whatever the order of the additions (numpy's pairwise sums, BLAS). The
    ``fsum`` of a resample's L column sums is then the ``fsum`` of the resample itself, bit for bit (both are the
    correctly rounded exact sum). None for NaN, infinities or -0.0 (fsum's own rules), for values beyond 2**+-500 or
    spread over more than :data:`MAX_PARTS` parts."""
    if values.size == 0 or not np.isfinite(values).all() or np.signbit(values[values == 0]).any():
        return None
    _, exponents = np.frexp(values[values != 0])  # |v| < 2**e, and v is a multiple of 2**(e - 53)
    if exponents.size == 0:
        return np.zeros((values.size, 1))
    top, bottom = int(exponents.max()), int(exponents.min()) - 53
    width = 51 - terms.bit_length()
    if top > 500 or bottom < -900 or width < 8:
        return None
    count = -(-(top - bottom) // width)
    if count > MAX_PARTS:
        return None
    parts, rest = [], values
    for j in range(1, count):
        unit = top - width * j  # >= bottom: 2.0**unit and 2.0**-unit are normal numbers, the products exact
        part = np.trunc(rest * 2.0**-unit) * 2.0**unit + 0.0  # an integer under 2**width in size, times 2**unit
        parts.append(part)  # (+ 0.0: no -0.0)
        rest = rest - part  # exact: the bits of rest below 2**unit (truncation: of the same sign)
    parts.append(rest)  # a multiple of 2**bottom under 2**(top - width * (count - 1)) <= 2**(bottom + width)
    return np.stack(parts, axis=1)


def _parts_in_blocks(np: Any, values: Any) -> tuple[Any, list[Any], int]:
    """The exact parts of ``values`` (:func:`_exact_parts`; None when they refuse them), each part's column as its
    own contiguous array, and how many draws of ``len(values)`` fit in one block of DRAWS_AT_ONCE."""
    n = len(values)
    parts = _exact_parts(np, values, n) if n < 2**26 else None
    columns = [] if parts is None else [np.ascontiguousarray(parts[:, j]) for j in range(parts.shape[1])]
    return parts, columns, max(1, DRAWS_AT_ONCE // n)


def _resampled_sums_by_parts(np: Any, data: tuple[float, ...], seed: int, resamples: int) -> list[float]:
    """The means of :func:`_choices`' resamples, bit for bit, for data with many distinct values (20,000 distinct
    values x 1,000 resamples took ~15 s in the plain loop): the same picks as ``choices`` (see
    :func:`_resampled_sums`), each resample summed exactly by the columns of :func:`_exact_parts`, then ``fsum``;
    data the parts refuse (NaN, infinities, -0.0, extreme ranges): ``fsum`` of each resample's row, the same list of
    floats in the same order as the plain loop's, so the same result (or error)."""
    n = len(data)
    generator = _legacy_generator(np, seed)
    array = np.array(data, dtype=np.float64)
    parts, columns, rows = _parts_in_blocks(np, array)
    means: list[float] = []
    for start in range(0, resamples, rows):
        block = min(rows, resamples - start)
        picks = (generator.random_sample(n * block) * float(n)).astype(np.intp).reshape(block, n)
        if parts is None:
            means.extend(math.fsum(row) / n for row in array[picks].tolist())
            continue
        sums = np.stack([np.take(column, picks).sum(axis=1) for column in columns], axis=1)
        means.extend(math.fsum(row) / n for row in sums.tolist())
    return means


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
    np = _numpy_for(len(nonzero) * resamples)
    exact = _flips_by_size(nonzero, observed - tolerance, budget=resamples * len(nonzero) // FLIP_STEP_COST, np=np)
    if exact is not None:
        return exact
    nonzero.sort()
    if np is None:
        hits = _flip_hits_plain(nonzero, observed - tolerance, seed, resamples)
    else:
        hits = _flip_hits_numpy(np, nonzero, observed - tolerance, seed, resamples)
    return (hits + 1) / (resamples + 1)


def _flip_hits_plain(nonzero: list[float], reach: float, seed: int, resamples: int) -> int:
    """How many of ``resamples`` random sign flips of ``nonzero`` (in this order) have an ``fsum`` of size at least
    ``reach``: flip i keeps each difference when the next ``random.Random(seed).random()`` is under 0.5."""
    rng = random.Random(seed)
    hits = 0
    for _ in range(resamples):
        flipped = math.fsum(d if rng.random() < 0.5 else -d for d in nonzero)
        if abs(flipped) >= reach:
            hits += 1
    return hits


def _flip_hits_numpy(np: Any, nonzero: list[float], reach: float, seed: int, resamples: int) -> int:
    """:func:`_flip_hits_plain`'s count, the same for every input, without a Python step per draw (20,000
    differences x 1,000 flips took 1.6-18 s): the same draws from numpy's legacy generator
    (:func:`_legacy_generator`), each flip's sum exact by the columns of :func:`_exact_parts` (signs times each
    column, summed), its ``fsum`` the flip's ``fsum``; for differences the parts refuse, ``fsum`` of each flip's
    row, the same floats in the same order as the plain loop's."""
    n = len(nonzero)
    generator = _legacy_generator(np, seed)
    values = np.array(nonzero, dtype=np.float64)
    parts, columns, rows = _parts_in_blocks(np, values)
    hits = 0
    for start in range(0, resamples, rows):
        block = min(rows, resamples - start)
        draws = generator.random_sample(n * block).reshape(block, n)
        if parts is None:
            flips = np.where(draws < 0.5, values, -values).tolist()
        else:
            signs = np.less(draws, 0.5, out=draws)  # 1.0 where the difference keeps its sign, else 0.0
            signs *= 2.0
            signs -= 1.0  # +1.0 or -1.0
            # The flip's sum of each column: +-parts, exact, and so are their sums (numpy's own, no BLAS threads)
            flips = np.stack([np.multiply(signs, column).sum(axis=1) for column in columns], axis=1).tolist()
        hits += sum(1 for row in flips if abs(math.fsum(row)) >= reach)
    return hits


def _flips_by_size(nonzero: list[float], reach: float, *, budget: int, np: Any = None) -> float | None:
    """The exact sign-flip p-value, counting patterns by size instead of enumerating 2^n of them: of the n
    differences of size a, k flipped positive add a (2k - n) to the sum, in C(n, k) patterns; the distribution of
    the sum is built size by size. None when that takes more than ``budget`` steps (many distinct sizes): the
    caller's Monte Carlo is then the cheaper estimate. Given numpy, :func:`_flip_steps_exceed` first tells whether
    the budget will run out, without spending it in Python (20,000 distinct sizes: ~1.8 s, for None)."""
    sizes = Counter(abs(d) for d in nonzero)
    if len(sizes) == 1:  # one size (0/1 scores): the binomial sign test, which is the exact McNemar test
        worse = sum(1 for d in nonzero if d < 0)
        return mcnemar_exact(worse, len(nonzero) - worse)
    if np is not None and _flip_steps_exceed(np, sorted(sizes.items()), budget):
        return None
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


def _flip_steps_exceed(np: Any, sizes: list[tuple[float, int]], budget: int) -> bool:
    """Whether :func:`_flips_by_size`'s loop over these (size, count) pairs, ascending, runs past ``budget`` steps:
    the same loop on the sums alone (the same float additions, equal sums merged as dict keys merge them), in numpy,
    without the pattern counts. False (the loop will tell) for sizes numpy could not follow: not finite, or so large
    that the sums overflow (the builtin sum: inf where fsum would raise)."""
    if not all(math.isfinite(size) for size, _ in sizes) or sum(s * c for s, c in sizes) >= 2.0**1000:
        return False
    sums = np.zeros(1)
    steps_taken = 0
    for size, count in sizes:
        steps_taken += sums.size * (count + 1)
        if steps_taken > budget:
            return True
        moves = size * np.arange(-count, count + 1, 2, dtype=np.float64)  # size * (2k - count), k = 0..count
        grown = (moves[:, None] + sums[None, :]).ravel()  # count + 1 ascending runs
        grown.sort(kind="stable")  # a merge of the runs
        sums = grown[np.concatenate(([True], grown[1:] != grown[:-1]))]
    return False


def _binomial_row(n: int, last: int | None = None) -> list[int]:
    """C(n, 0), ..., C(n, last) (default: to C(n, n)), each from the one before: ``math.comb`` per k took 80 s for
    the McNemar tail of 20,000 discordant pairs."""
    row = [1]
    for k in range(n if last is None else min(last, n)):
        row.append(row[-1] * (n - k) // (k + 1))
    return row
