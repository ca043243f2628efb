"""Issue 9, "what each call cost": a predictor's token counts under the names the common SDKs use, and a small spend
shown as what it is (never `$0.0000`). Through `pytest --sqleval` as a user runs it, serial."""

from __future__ import annotations

import json
import sqlite3

import pytest

from pytest_sqleval.model.usage import money

SUITE = """
suite: s
database: d.sqlite
model:
  name: tiny
  price_per_1k_input: 0.0001
  price_per_1k_output: 0.0002
cases:
  - {id: a, question: "All?", gold: "SELECT x FROM t"}
  - {id: b, question: "One?", gold: "SELECT x FROM t WHERE x = 1"}
"""

PREDICTOR = '''
def predict(case):
    sql = "SELECT x FROM t" if case.id == "a" else "SELECT x FROM t WHERE x = 1"
    if case.id == "a":  # Anthropic's names
        return {"sql": sql, "tokens": {"input_tokens": 10, "output_tokens": 4}}
    return {"sql": sql, "tokens": {"prompt_tokens": 6, "completion_tokens": 2}}  # OpenAI's
'''


def test_anthropic_and_openai_token_names_are_counted_and_priced(pytester: pytest.Pytester):
    connection = sqlite3.connect(pytester.path / "d.sqlite")
    connection.executescript("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);")
    connection.commit()
    connection.close()
    pytester.makefile(".sqleval.yaml", s=SUITE)
    pytester.makepyfile(my_model=PREDICTOR)
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-predictor", "my_model:predict",
                                           "--sqleval-json=r.json", "-p", "no:cacheprovider")
    report = json.loads((pytester.path / "r.json").read_text())
    tokens = {c["id"]: c["tokens"] for c in report["cases"]}
    assert tokens["a"] == {"prompt": 10, "completion": 4} and tokens["b"] == {"prompt": 6, "completion": 2}
    # (10 + 6) prompt tokens at $0.0001 per 1k + (4 + 2) completion tokens at $0.0002 per 1k = $0.0000028
    text = result.stdout.str()
    assert "tokens 16 prompt + 6 completion" in text, text
    assert "cost $0.0000028" in text, text
    assert "calls without token counts" not in text


@pytest.mark.parametrize(("amount", "shown"), [(0.0, "0.0000"), (0.0075, "0.0075"), (12.5, "12.5000"),
                                               (0.0001, "0.0001"), (0.0000028, "0.0000028"),
                                               (0.00004449, "0.000044"), (3e-9, "0.0000000030")])
def test_money_keeps_two_significant_digits_below_a_hundredth_of_a_cent(amount, shown):
    assert money(amount) == shown
