"""stats.py against hand-computed values: Wilson, exact McNemar, Clopper-Pearson, bootstrap, sign flip."""

from __future__ import annotations

import math
import random

import pytest

from pytest_sqleval.stats import (
    Z95,
    binomial_cdf,
    bootstrap_mean,
    clopper_pearson,
    mcnemar_exact,
    paired_share_interval,
    quantile,
    sign_flip,
    wilson,
)


def test_wilson_seven_of_ten_by_hand():
    # p = 0.7, z^2 = 3.8415: centre = (0.7 + z^2/20) / (1 + z^2/10) = 0.89207 / 1.38415 = 0.64449
    # half = z / 1.38415 * sqrt(0.21/10 + z^2/400) = 1.41600 * 0.17494 = 0.24771
    lo, hi = wilson(7, 10)
    assert lo == pytest.approx(0.64449 - 0.24771, abs=1e-4) == pytest.approx(0.3968, abs=1e-4)
    assert hi == pytest.approx(0.8922, abs=1e-4)


def test_wilson_edges():
    assert wilson(0, 0) is None
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(Z95**2 / (10 + Z95**2))  # 0/n: upper = z^2 / (n + z^2)
    lo, hi = wilson(10, 10)
    assert hi == 1.0 and lo == pytest.approx(10 / (10 + Z95**2))
    with pytest.raises(ValueError):
        wilson(11, 10)


def test_mcnemar_exact_small_table():
    # b = 1, c = 6: p = 2 * (C(7,0) + C(7,1)) / 2^7 = 2 * 8 / 128 = 0.125
    assert mcnemar_exact(1, 6) == 0.125
    assert mcnemar_exact(6, 1) == 0.125
    # b = 0, c = 5: 2 / 32 = 0.0625; b = 0, c = 6: 2 / 64 = 0.03125
    assert mcnemar_exact(0, 5) == 0.0625
    assert mcnemar_exact(0, 6) == 0.03125
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0  # capped at 1


def test_clopper_pearson_seven_of_ten():
    # the textbook exact interval of 7/10: [0.3475, 0.9333]
    lo, hi = clopper_pearson(7, 10)
    assert lo == pytest.approx(0.3475, abs=1e-4) and hi == pytest.approx(0.9333, abs=1e-4)
    # at the bounds the tails are exactly 2.5%: P(X >= 7; lo) and P(X <= 7; hi)
    assert 1 - binomial_cdf(6, 10, lo) == pytest.approx(0.025, abs=1e-9)
    assert binomial_cdf(7, 10, hi) == pytest.approx(0.025, abs=1e-9)
    assert clopper_pearson(0, 5)[0] == 0.0 and clopper_pearson(5, 5)[1] == 1.0


def test_binomial_cdf_by_hand():
    assert binomial_cdf(1, 7, 0.5) == pytest.approx(8 / 128)
    assert binomial_cdf(0, 3, 0.2) == pytest.approx(0.8**3)
    assert binomial_cdf(5, 2000, 0.5) < 1e-300 or binomial_cdf(5, 2000, 0.5) == 0.0  # no overflow


def test_paired_share_interval_agrees_with_mcnemar():
    # b = 1 worse, c = 6 better of 30 pairs: p = 0.125, so the interval of the difference holds 0
    lo, hi = paired_share_interval(better=6, worse=1, n=30)
    assert lo < 0 < hi and lo < 5 / 30 < hi
    # 0 better, 6 worse: p = 2/64 = 0.031 < 0.05, so it excludes 0
    lo, hi = paired_share_interval(better=0, worse=6, n=30)
    assert hi < 0
    assert paired_share_interval(0, 0, 10) == (0.0, 0.0)
    # duality: the interval excludes 0 exactly when the exact test is significant at 0.05
    for better in range(13):
        for worse in range(13):
            lo, hi = paired_share_interval(better, worse, 40)
            assert (lo > 0 or hi < 0) == (mcnemar_exact(worse, better) < 0.05), (better, worse)


def test_quantile_type7():
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.0) == 1.0
    assert quantile([1.0, 2.0, 3.0, 4.0], 1.0) == 4.0
    assert quantile([0.0, 10.0], 0.25) == 2.5


def test_bootstrap_is_seeded_and_sane():
    rng = random.Random(7)
    values = [rng.gauss(0.6, 0.2) for _ in range(200)]
    first = bootstrap_mean(values)
    assert first == bootstrap_mean(list(values))  # deterministic for a given input
    assert bootstrap_mean(values, seed=1) != first  # the seed is what makes it so
    mean = math.fsum(values) / len(values)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))
    lo, hi = first
    assert lo < mean < hi
    # the percentile interval is close to the normal one, mean +- 1.96 sd / sqrt(n)
    assert hi - lo == pytest.approx(2 * Z95 * sd / math.sqrt(len(values)), rel=0.15)
    assert bootstrap_mean([]) is None
    assert bootstrap_mean([0.5, 0.5, 0.5]) == (0.5, 0.5)


def test_bootstrap_fixed_value_for_a_small_sample():
    # pinned: a change of the resampling scheme changes published intervals, so it must be deliberate
    # (mean 0.675; every resampled mean is a multiple of 0.025, so the bounds are exact)
    lo, hi = bootstrap_mean([0.0, 1.0, 1.0, 0.5, 1.0, 0.0, 1.0, 1.0, 0.25, 1.0])
    assert (lo, hi) == (0.425, 0.95)
    assert (lo, hi) == bootstrap_mean([0.0, 1.0, 1.0, 0.5, 1.0, 0.0, 1.0, 1.0, 0.25, 1.0])


def test_sign_flip_exact_by_hand():
    # three equal positive differences: only all-plus and all-minus reach |sum| = 3 -> 2 / 8
    assert sign_flip([1.0, 1.0, 1.0]) == 0.25
    # (0.5, -0.5, 1): flipped sums are +-2, +-1, +-1, 0, 0 -> 6 of 8 reach |1|
    assert sign_flip([0.5, -0.5, 1.0]) == 0.75
    # zeros change nothing
    assert sign_flip([0.0, 1.0, 1.0, 1.0, 0.0]) == 0.25
    assert sign_flip([0.0, 0.0]) == 1.0


def test_sign_flip_monte_carlo_is_seeded():
    diffs = [-1 / 3] * 15 + [0.1] * 5
    p = sign_flip(diffs)
    assert p == sign_flip(list(diffs))
    assert p < 0.01  # 15 of 20 pairs got clearly worse
    assert sign_flip([0.2, -0.2] * 10) > 0.5


# --------------------------------------------------------------------------- exact tests at scale (QA)
def _old_mcnemar(b, c):
    """The big-integer formula: min(1, 2 * sum_{k <= min(b, c)} C(b + c, k) / 2^(b + c))."""
    n = b + c
    return 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n)


def _old_clopper_pearson(k, n, level=0.95):
    """The interval as bisection over the sum of every binomial term (the former implementation)."""
    def cdf(k, n, p):
        if k >= n:
            return 1.0
        logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p)
                + (n - i) * math.log1p(-p) for i in range(k + 1)]
        top = max(logs)
        return min(1.0, math.exp(top) * math.fsum(math.exp(v - top) for v in logs))

    tail = (1 - level) / 2

    def solve(f):
        lo, hi = 0.0, 1.0
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) > tail else (lo, mid)
        return (lo + hi) / 2

    return (0.0 if k == 0 else 1.0 - solve(lambda q: cdf(n - k, n, q)),
            1.0 if k == n else solve(lambda q: cdf(k, n, q)))


def test_mcnemar_exact_agrees_with_the_big_integer_formula_on_a_grid():
    for b in list(range(0, 40)) + [97, 400, 640, 1203, 2500]:
        for c in list(range(0, 40)) + [101, 380, 700, 1300, 2600]:
            expected = _old_mcnemar(b, c)
            assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-9, abs=1e-300), (b, c)


def test_clopper_pearson_agrees_with_the_former_bisection():
    cases = [(k, n) for n in (1, 2, 3, 7, 10, 31) for k in range(n + 1)]
    cases += [(0, 500), (1, 500), (250, 500), (499, 500), (37, 1200), (2100, 4100), (4000, 4100)]
    for k, n in cases:
        for level in (0.95, 0.8):
            got, expected = clopper_pearson(k, n, level), _old_clopper_pearson(k, n, level)
            assert got == pytest.approx(expected, rel=1e-9, abs=1e-15), (k, n, level)


def test_exact_tests_on_a_hundred_thousand_discordant_pairs_are_consistent(monkeypatch):
    """45,000 / 46,000 discordant pairs took seconds (big-integer rows, bisection over every term): neither is
    reached any more; the values are probabilities, symmetric, ordered, and the interval agrees with the test
    (no wall-clock assertion)."""
    from pytest_sqleval import stats

    monkeypatch.setattr(stats, "_binomial_row", lambda *args: pytest.fail("big-integer row"))
    monkeypatch.setattr(stats, "binomial_cdf", lambda *args: pytest.fail("sum of every binomial term"))
    p = mcnemar_exact(45_000, 46_000)
    assert 0.0 < p < 0.01 and p == mcnemar_exact(46_000, 45_000)
    assert mcnemar_exact(50_000, 50_000) == 1.0 and mcnemar_exact(0, 100_000) == 0.0
    assert mcnemar_exact(49_900, 50_100) > mcnemar_exact(49_700, 50_300) > p
    lo, hi = clopper_pearson(45_000, 91_000)
    assert 0.0 < lo < 45_000 / 91_000 < hi < 0.5
    assert clopper_pearson(46_000, 91_000) == pytest.approx((1 - hi, 1 - lo), rel=1e-9)
    lo, hi = paired_share_interval(46_000, 45_000, 100_000)
    assert 0 < lo < 0.01 < hi < 0.02  # excludes 0 as p < 0.05
    lo, hi = paired_share_interval(50_100, 49_900, 100_000)
    assert lo < 0 < hi
