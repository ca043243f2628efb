"""The summary counts errors as pytest's last line does: "2 errors", "1 error" (it wrote "2 error")."""

import sqlite3

pytest_plugins = ["pytester"]

SUITE = """
database: shop.sqlite
cases:
  - {id: fine, gold: SELECT count(*) FROM t, predicted: SELECT count(*) FROM t}
  - {id: bad-gold-1, gold: SELECT nope FROM t, predicted: SELECT 1}
  - {id: bad-gold-2, gold: SELECT nada FROM t, predicted: SELECT 1}
"""


def _shop(pytester):
    with sqlite3.connect(pytester.path / "shop.sqlite") as conn:
        conn.execute("CREATE TABLE t (a INTEGER)")
    conn.close()


def test_two_errors_are_errors_in_the_terminal_and_markdown(pytester):
    _shop(pytester)
    pytester.makefile(".sqleval.yaml", shop=SUITE)
    result = pytester.runpytest_subprocess("--sqleval", "--sqleval-markdown", "summary.md")
    result.stdout.fnmatch_lines(["  3 cases: 1 passed, 2 errors | execution profile *", "*1 passed, 2 errors*"])
    markdown = (pytester.path / "summary.md").read_text()
    assert "1 passed, 2 errors" in markdown and "2 error," not in markdown and "2 error)" not in markdown


def test_one_error_stays_one_error(pytester):
    _shop(pytester)
    pytester.makefile(".sqleval.yaml", shop=SUITE.replace("  - {id: bad-gold-2, gold: SELECT nada FROM t, predicted: SELECT 1}\n", ""))
    result = pytester.runpytest_subprocess("--sqleval")
    result.stdout.fnmatch_lines(["  2 cases: 1 passed, 1 error | execution profile *"])
