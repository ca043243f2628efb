"""The sign-flip test and the bootstrap at scale: numpy paths that give the plain loops' numbers bit for bit.

Each comparison is against a copy of the code as it was before the numpy paths (the oracle, ``stats_before.py``): the Monte Carlo
sign flip drew ``random.Random(seed).random() < 0.5`` per sorted difference and compared ``abs(math.fsum(...))``
with the observed sum; the bootstrap summed ``random.Random(seed).choices`` resamples with ``math.fsum``.
"""

from __future__ import annotations

import math
import random
import sys
from collections import Counter

import pytest

np = pytest.importorskip("numpy")  # imported here: every call below may take the numpy paths

from pytest_sqleval import stats  # noqa: E402
from stats_before import (  # noqa: E402
    old_binomial_cdf,
    old_bootstrap_mean,
    old_flip_steps,
    old_flips_by_size,
    old_paired_share_interval,
    old_sign_flip,
)

NAN, INF = float("nan"), float("inf")


def outcome(function, *args, **kwargs):
    """The result, bit for bit (repr tells -0.0 from 0.0 and shows NaN), or the type of the error raised."""
    try:
        return ("value", repr(function(*args, **kwargs)))
    except Exception as error:  # noqa: BLE001 - the old code's errors (fsum overflow, inf - inf) are kept too
        return ("error", type(error).__name__)


def new_bootstrap_mean(values, **kwargs):
    stats._bootstrap_interval.cache_clear()  # each call computes (a cached interval would prove nothing)
    try:
        return stats.bootstrap_mean(values, **kwargs)
    finally:
        stats._bootstrap_interval.cache_clear()


# --------------------------------------------------------------------------- inputs
def _datasets():
    rng = random.Random(20261202)
    data = {
        "gauss": [rng.gauss(0, 1) for _ in range(300)],
        "mixed magnitudes": [rng.uniform(-1, 1) * 10.0 ** rng.randint(-15, 15) for _ in range(300)],
        "wide magnitudes (more parts than MAX_PARTS)": [rng.uniform(-1, 1) * 10.0 ** rng.randint(-80, 80)
                                                       for _ in range(200)],
        "beyond 2**500": [rng.uniform(-1, 1) * 1e300 for _ in range(100)] + [1.0, -2.0],
        "subnormal": [rng.randint(-9, 9) * 5e-324 for _ in range(60)] + [rng.uniform(-1, 1) * 1e-310
                                                                        for _ in range(60)],
        "overflowing sums": [1e308] * 20 + [-1e308, 3.0],
        "sizes whose total overflows": [1e308, -1.5e308] + [1.0] * 11 + [2.0],
        "cancelling large values": [rng.choice([1e6, -1e6, 3e9, -3e9]) for _ in range(200)]
                                   + [rng.gauss(0, 1e-4) for _ in range(200)],
        "one huge value among small negatives": [2.0**60] + [-abs(rng.gauss(0, 1e3)) for _ in range(599)],
        "positive only": [rng.uniform(0, 1e-3) for _ in range(150)],
        "soft-F1-like fractions": [rng.randint(0, 6) / rng.randint(1, 6) - rng.randint(0, 6) / rng.randint(1, 6)
                                   for _ in range(400)],
        "few sizes (exact by size)": [rng.choice([-1.0, -0.5, 0.25, 0.5, 1.0, 2 / 3, -1 / 3]) for _ in range(400)],
        "0/1 (McNemar)": [rng.choice([1.0, -1.0, 0.0, 0.0]) for _ in range(500)],
        "whole numbers (ties at the observed sum)": [float(rng.randint(-20, 20)) for _ in range(200)],
        "zeros and -0.0": [rng.choice([0.0, -0.0, rng.gauss(0, 3)]) for _ in range(300)],
        "one value": [0.3],
        "two values": [1.0, -2.0],
        "12 values (exact enumeration)": [rng.gauss(1, 1) for _ in range(12)],
        "13 values (just past it)": [rng.gauss(1, 1) for _ in range(13)],
        "14 values": [rng.gauss(0, 1) for _ in range(14)],
        "513 distinct values (just past MAX_DISTINCT_EXACT)": [i / 7 - 30 for i in range(513)],
        "512 distinct values": [i / 7 - 30 for i in range(512)] * 2,
        "NaN": [rng.gauss(0, 1) for _ in range(40)] + [NAN],
        "inf": [rng.gauss(0, 1) for _ in range(40)] + [INF],
        "inf and -inf": [rng.gauss(0, 1) for _ in range(40)] + [INF, -INF],
        "all equal": [0.1] * 50,
        "large n, few resamples": [rng.gauss(0, 1) * rng.choice([1, 1e-9, 1e4]) for _ in range(3000)],
    }
    return data


DATASETS = _datasets()
RUNS = [(stats.SEED, stats.RESAMPLES), (0, 1), (12345, 9), (2**64 + 1, 250)]


@pytest.mark.parametrize("name", list(DATASETS))
def test_sign_flip_gives_the_old_p_value_bit_for_bit(name):
    data = DATASETS[name]
    for seed, resamples in RUNS:
        if len(data) * resamples > 10**6 and resamples > 9:
            continue  # the oracle's pure-Python loop would take seconds
        expected = outcome(old_sign_flip, data, seed=seed, resamples=resamples)
        assert outcome(stats.sign_flip, data, seed=seed, resamples=resamples) == expected, (name, seed, resamples)
        assert outcome(stats.sign_flip, list(reversed(data)), seed=seed, resamples=resamples) == expected


@pytest.mark.parametrize("name", list(DATASETS))
def test_bootstrap_gives_the_old_interval_bit_for_bit(name):
    data = DATASETS[name]
    for seed, resamples in RUNS:
        if len(data) * resamples > 10**6 and resamples > 9:
            continue
        for level in (0.95, 0.8):
            expected = outcome(old_bootstrap_mean, data, seed=seed, resamples=resamples, level=level)
            got = outcome(new_bootstrap_mean, data, seed=seed, resamples=resamples, level=level)
            assert got == expected, (name, seed, resamples, level)


@pytest.mark.parametrize("draws_at_once", [1, 777, 4096])
def test_blocks_of_any_size_give_the_same_numbers(monkeypatch, draws_at_once):
    monkeypatch.setattr(stats, "DRAWS_AT_ONCE", draws_at_once)
    rng = random.Random(5)
    data = [rng.uniform(-1, 1) * 10.0 ** rng.randint(-6, 3) for _ in range(700)]
    assert stats.sign_flip(data, resamples=40) == old_sign_flip(data, resamples=40)
    assert new_bootstrap_mean(data, resamples=40) == old_bootstrap_mean(data, resamples=40)
    rows = stats._resampled_sums_by_parts(np, tuple(data), 3, 25)
    rng = random.Random(3)
    assert rows == [math.fsum(rng.choices(data, k=len(data))) / len(data) for _ in range(25)]


def test_flip_counts_agree_at_the_threshold_itself():
    """Reach equal to flipped sums themselves: a count off by one rounding would show here."""
    rng = random.Random(11)
    for data in ([rng.gauss(0, 1) for _ in range(500)], [float(rng.randint(-9, 9) or 1) for _ in range(500)],
                 [rng.uniform(-1, 1) * 10.0 ** rng.randint(-12, 12) for _ in range(500)],
                 [2.0**70, 2.0**70] + [-abs(rng.gauss(0, 1e3)) for _ in range(500)]):  # the 2**70 cancel
        data.sort()
        flips = random.Random(7)
        sums = [abs(math.fsum(d if flips.random() < 0.5 else -d for d in data)) for _ in range(30)]
        for reach in sums[:5] + [math.nextafter(sums[0], math.inf), math.nextafter(sums[1], 0.0), 0.0, -1.0, INF]:
            assert (stats._flip_hits_numpy(np, data, reach, 7, 30)
                    == stats._flip_hits_plain(data, reach, 7, 30)), reach
        assert stats._flip_hits_numpy(np, data, sums[0], 7, 30) == sum(1 for s in sums if s >= sums[0])


def test_exact_parts_add_up_to_each_value_and_refuse_what_they_cannot_sum():
    rng = random.Random(2)
    values = np.array([rng.uniform(-1, 1) * 10.0 ** rng.randint(-20, 20) for _ in range(1000)] + [0.0])
    parts = stats._exact_parts(np, values, 1000)
    assert parts is not None and 1 < parts.shape[1] <= stats.MAX_PARTS
    assert [math.fsum(row) for row in parts.tolist()] == values.tolist()
    for refused in ([1.0, NAN], [1.0, INF], [1.0, -0.0], [1e300, 1.0], [1e-300, 1.0], [1e-60, 1e60]):
        assert stats._exact_parts(np, np.array(refused), 10) is None, refused


def test_the_numpy_budget_check_stops_exactly_where_the_python_loop_would():
    rng = random.Random(4)
    for data in ([rng.randint(0, 6) / rng.randint(1, 6) - 0.5 for _ in range(60)],
                 [rng.choice([0.1, 0.2, 0.3, 0.7, -0.4]) for _ in range(80)],
                 [rng.gauss(0, 1) for _ in range(14)],
                 [rng.choice([1e-20, 1.0, 3.0]) for _ in range(40)]):
        data = [d for d in data if d != 0]
        steps = old_flip_steps(data)
        sizes = sorted(Counter(abs(d) for d in data).items())
        reach = abs(math.fsum(data)) * 0.5
        for budget in (0, 1, steps - 1, steps, steps + 1, steps * 10):
            assert stats._flip_steps_exceed(np, sizes, budget) == (steps > budget), (budget, steps)
            assert (stats._flips_by_size(data, reach, budget=budget, np=np)
                    == old_flips_by_size(data, reach, budget=budget)), budget


def test_without_numpy_the_plain_loops_give_the_same_numbers(monkeypatch):
    rng = random.Random(8)
    data = [rng.gauss(0, 1) for _ in range(800)]
    with_numpy = (stats.sign_flip(data, resamples=300), new_bootstrap_mean(data, resamples=300))
    monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` now fails, as when it is not installed
    assert stats._numpy_for(10**9) is None
    without = (stats.sign_flip(data, resamples=300), new_bootstrap_mean(data, resamples=300))
    assert with_numpy == without == (old_sign_flip(data, resamples=300), old_bootstrap_mean(data, resamples=300))


@pytest.mark.parametrize("n, resamples", [(20_000, stats.RESAMPLES), (100_000, 200)])
def test_at_scale_the_numpy_paths_are_taken(monkeypatch, n, resamples):
    """No wall-clock assertion: the pure-Python loops (a Python step per draw, or per sum in the exact count by size)
    raise if they are reached at all, and the exact parts (not ``fsum`` of whole rows) do the sums."""
    def forbidden(*args, **kwargs):
        raise AssertionError("the pure-Python loop ran")

    real_parts, parts_seen = stats._exact_parts, []

    def spy_parts(*args):
        parts_seen.append(real_parts(*args))
        return parts_seen[-1]

    monkeypatch.setattr(stats, "_flip_hits_plain", forbidden)
    monkeypatch.setattr(stats, "_choices", forbidden)
    monkeypatch.setattr(stats, "_binomial_row", forbidden)  # the Python loop of the exact count by size
    monkeypatch.setattr(stats, "_exact_parts", spy_parts)
    rng = random.Random(n)
    data = [rng.gauss(0.01, 1) for _ in range(n)]  # n distinct sizes
    p = stats.sign_flip(data, resamples=resamples)
    interval = new_bootstrap_mean(data, resamples=resamples)
    assert 0 < p <= 1 and interval[0] < math.fsum(data) / n < interval[1]
    assert len(parts_seen) == 2 and all(parts is not None and parts.shape[0] == n for parts in parts_seen)


def test_at_20000_differences_the_numbers_are_the_old_ones():
    rng = random.Random(9)
    data = [rng.gauss(0, 1) * rng.choice([1.0, 1e-3]) for _ in range(20_000)]
    assert stats.sign_flip(data, resamples=30) == old_sign_flip(data, resamples=30)
    assert new_bootstrap_mean(data, resamples=30) == old_bootstrap_mean(data, resamples=30)


# --------------------------------------------------------------------------- the McNemar path: exact intervals
def test_binomial_cdf_gives_the_old_value_bit_for_bit():
    """The reference sum of every term (the fast tail is checked against it) is the old code's, numpy or not."""
    rng = random.Random(6)
    cases = [(k, n, p) for k, n in ((0, 1), (1999, 2000), (2000, 4000), (2500, 9000))
             for p in (1e-12, 0.02, k / n, 0.5, 0.97, 1 - 1e-12, rng.random())]
    for k, n, p in cases:
        assert stats.binomial_cdf(k, n, p).hex() == old_binomial_cdf(k, n, p).hex(), (k, n, p)


@pytest.mark.parametrize("better, worse, n", [(2400, 2100, 20_000), (1, 3999, 5000), (3000, 5, 100_000),
                                              (2100, 2000, 4100)])
def test_the_exact_paired_share_interval_is_unchanged_without_summing_every_term(monkeypatch, better, worse, n):
    """The interval bisects over the tail summed from the mean outwards (O(sqrt(n)) terms), not every term:
    the old interval to a relative 1e-9, with or without numpy."""
    expected = old_paired_share_interval(better, worse, n)
    monkeypatch.setattr(stats, "binomial_cdf", lambda *args: pytest.fail("summed every term"))
    assert stats.paired_share_interval(better, worse, n) == pytest.approx(expected, rel=1e-9, abs=1e-15)
    monkeypatch.setitem(sys.modules, "numpy", None)  # without numpy: the same numbers
    assert stats.paired_share_interval(better, worse, n) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_mcnemar_on_100000_pairs_of_0_1_scores_is_the_binomial_sign_test(monkeypatch):
    """0/1 differences: sign_flip's exact count by size is McNemar's exact test (no Monte Carlo), at any n."""
    def forbidden(*args, **kwargs):
        raise AssertionError("Monte Carlo ran")

    monkeypatch.setattr(stats, "_flip_hits_plain", forbidden)
    monkeypatch.setattr(stats, "_flip_hits_numpy", forbidden)
    data = [1.0, -1.0] * 29_000 + [1.0] * 1_000 + [0.0] * 41_000
    p = stats.sign_flip(data)
    assert p == stats.mcnemar_exact(29_000, 30_000) and 0 < p < 1
