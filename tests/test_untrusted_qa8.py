"""Untrusted predicted SQL, QA round qa8 (issues 4 and 7): what the pytest process does with a prediction's values.

- **A PostgreSQL NUMERIC of thousands of digits.** Normalisation turned every integral ``Decimal`` into an ``int``:
  half a second per value of 131,072 digits (time quadratic in the digits), spent in the pytest process, outside the
  query's timeout; and Python writes no int of more than 4,300 digits as text, so the miss's diff raised
  ``ValueError`` and the case was an ``error`` (``internal error while scoring``) instead of a miss. One prediction
  ``SELECT ('1' || repeat('0', 131000))::numeric + g FROM generate_series(1, 20) g`` took 77 s with ``timeout: 3``
  and errored its case (exit status 1). Such a Decimal now stays a Decimal (it equals, and hashes like, the same int),
  and the report shows its digits (cut like any long value), not ``inf``.
"""

from __future__ import annotations

import json
import time
from decimal import Decimal

import pytest

from conftest import SHOP_SQL
from pytest_sqleval.evaluate import MAX_REPORT_VALUE_CHARS, jsonable
from pytest_sqleval.metrics.normalisation import normalise_value

pytest_plugins = ["pytester"]


def test_a_huge_integral_decimal_normalises_at_once_and_equals_the_same_int():
    huge = Decimal("1" + "0" * 131_000) + 1
    started = time.monotonic()
    normalised = normalise_value(huge)
    assert time.monotonic() - started < 0.05
    assert normalised == huge
    assert normalise_value(Decimal("1E+5000")) == 10**5000
    assert hash(normalise_value(Decimal("1E+5000"))) == hash(10**5000)
    assert normalise_value(Decimal("2.00")) == 2 and type(normalise_value(Decimal("2.00"))) is int


def test_a_decimal_beyond_a_float_is_reported_by_its_digits_not_as_inf():
    shown = jsonable(Decimal("9" * 5000))
    assert shown.startswith("9999") and "5000 characters" in shown
    assert len(shown) < MAX_REPORT_VALUE_CHARS + 40
    assert jsonable(Decimal("-1E+400")) == "-1E+400"
    assert jsonable(Decimal("0.5")) == 0.5


HUGE_NUMERIC_SUITE = """\
database: {{url: "{url}", setup: [shop.sql]}}
timeout: 3
execution: {profile}
cases:
  - id: slow-digits
    gold: SELECT g FROM generate_series(1, 20) g
    predicted: SELECT ('1' || repeat('0', 131000))::numeric + g FROM generate_series(1, 20) g
  - id: digits-5000
    gold: SELECT 1
    predicted: SELECT ('1' || repeat('0', 5000))::numeric
  - id: array-of-digits
    gold: SELECT 1
    predicted: SELECT ARRAY[('1' || repeat('0', 5000))::numeric, 2]
  - id: same-digits
    gold: SELECT ('1' || repeat('0', 5000))::numeric
    predicted: SELECT ('1' || repeat('0', 5000))::numeric
  - id: still-fine
    gold: SELECT name FROM shops
    predicted: SELECT name FROM shops
"""


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize("profile", ["sqleval", "test-suite"])
def test_a_prediction_of_huge_numerics_is_a_quick_miss_on_postgresql(pytester, postgres_url, profile, xdist):
    pytester.path.joinpath("shop.sql").write_text(SHOP_SQL)
    pytester.makefile(".sqleval.yaml", digits=HUGE_NUMERIC_SUITE.format(url=postgres_url, profile=profile))
    started = time.monotonic()
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider", "-p", "xdist", *xdist,
                                           "--sqleval-json", "report.json", "--sqleval-diff", timeout=300)
    elapsed = time.monotonic() - started
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and "internal error" not in output
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    outcomes = {c["id"]: c["outcome"] for c in report["cases"]}
    assert outcomes == {"slow-digits": "missed", "digits-5000": "missed", "array-of-digits": "missed",
                        "same-digits": "passed", "still-fine": "passed"}
    assert result.ret == 0
    assert elapsed < 60  # 77 s before, for the first case alone
    by_id = {c["id"]: c for c in report["cases"]}
    shown = by_id["digits-5000"]["mismatch"]["predicted_only_rows"][0][0]
    assert isinstance(shown, str) and shown.startswith("1000")

