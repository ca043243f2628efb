"""pytest's ini files have no comment after a value: `sqleval_timeout = 5 # s` is the value "5 # s". The usage error
says so (it showed the bad value only); a threshold already did."""

import pytest

pytest_plugins = ["pytester"]


@pytest.mark.parametrize("line", ["sqleval_timeout = 5 # seconds", "sqleval_max_rows = 1000 ; rows",
                                  "sqleval_strict = true # strict", "sqleval_max_memory = 1GiB # per query"])
def test_a_comment_after_an_ini_value_is_named(pytester, line):
    pytester.makeini(f"[pytest]\n{line}\n")
    result = pytester.runpytest_subprocess("--sqleval")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert line.split(" = ")[0] in err and "put the comment on a line of its own" in err, err


def test_a_bad_value_without_a_comment_gets_no_comment_hint(pytester):
    pytester.makeini("[pytest]\nsqleval_timeout = fast\n")
    result = pytester.runpytest_subprocess("--sqleval")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "sqleval_timeout" in result.stderr.str() and "comment" not in result.stderr.str()
