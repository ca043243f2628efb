"""The plugin's pytest manners with inputs no other test uses: tags as marks and `-m`, node ids a user copies
back onto the command line, `-v`/`-q` words and letters, `-p no:sqleval`, ini values (via pytester, serial and
`-n 2`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import make_sqlite

XDIST = ("-p", "xdist", "-n", "2")


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def _output(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


def _ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stdout.lines if "::" in line and not line.startswith(("ERROR", "FAILED"))]


# --------------------------------------------------------------------------- tags and -m
@pytest.mark.parametrize("word", ["and", "or", "not"])
def test_a_tag_that_is_a_word_of_the_m_grammar_is_refused_at_load(pytester, word):
    """`-m and` is a syntax error in pytest's expression grammar: such a tag could never be selected, so the
    suite is refused with the file, the line and the fix (as for `skip`), not silently accepted."""
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "t.sqleval.yaml", f"""
        database: shop.sqlite
        cases:
          - id: a
            gold: SELECT 1
            predicted: SELECT 1
            tags: [joins, {word}]
    """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    out = _output(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert f"t.sqleval.yaml:6: tag '{word}'" in out
    assert "-m" in out and f"{word}_case" in out  # why, and the fix
    assert "Traceback" not in out


def test_a_tag_starting_with_an_underscore_is_a_clear_error_not_a_traceback(pytester):
    """pytest refuses marker names that start with '_' (an AttributeError from `pytest.mark`)."""
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "t.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT 1, predicted: SELECT 1, tags: [_draft]}
    """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    out = _output(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "t.sqleval.yaml:3: tag '_draft'" in out and "fix:" in out
    assert "AttributeError" not in out and "collect.py" not in out


def test_a_tag_yaml_reads_as_a_boolean_says_to_quote_it(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "t.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT 1, predicted: SELECT 1, tags: [ok, yes]}
    """)
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    out = _output(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "t.sqleval.yaml:3: tag True is read by YAML as a boolean" in out
    assert 'fix: quote it (`tags: ["yes"]`)' in out
    _write(pytester.path / "t.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: b, gold: SELECT 1, predicted: SELECT 1, tags: [ok, null]}
    """)
    out = _output(pytester.runpytest("--sqleval", "-p", "no:cacheprovider"))
    assert "t.sqleval.yaml:3: tag None is read by YAML as null" in out and "quote it" in out


@pytest.mark.parametrize("extra", [(), XDIST], ids=["serial", "xdist"])
def test_python_keywords_and_constants_are_selectable_tags(pytester, extra):
    """pytest's -m grammar takes `in`, `is`, `class`, `True`, `None` as mark names (only and/or/not are
    operators), so those tags work, also under --strict-markers."""
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "t.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT 1, predicted: SELECT 1, tags: [in, class]}
          - {id: b, gold: SELECT 1, predicted: SELECT 2, tags: ["True", is]}
          - {id: c, gold: SELECT 1, predicted: SELECT 1, tags: ["None"]}
    """)
    base = ("--sqleval", "-p", "no:cacheprovider", "--strict-markers", *extra)
    result = pytester.runpytest(*base, "-m", "True or None")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 1 and outcomes.get("missed") == 1, _output(result)
    if extra:
        return  # the same expressions, the workers' marks: one -n 2 run is enough
    result = pytester.runpytest(*base, "-m", "in")
    assert result.parseoutcomes().get("passed") == 1, _output(result)
    result = pytester.runpytest(*base, "-m", "not (is or class)")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 1 and "missed" not in outcomes, _output(result)


# --------------------------------------------------------------------------- ini values
def test_numbers_in_a_native_toml_config_are_read_as_numbers(pytester):
    """pytest 9's native TOML (`pytest.toml`, `[tool.pytest]`) keeps TOML types: `sqleval_timeout = 5` is an int,
    which a plain string option refuses ("must be true or false" was the message)."""
    if tuple(int(p) for p in pytest.__version__.split(".")[:2]) < (9, 2):
        pytest.skip("ini values of several types need pytest 9.2")
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT name FROM shops, predicted: SELECT name FROM shops}
          - {id: b, gold: SELECT 1, predicted: SELECT 2}
    """)
    _write(pytester.path / "pytest.toml", """
        [pytest]
        sqleval = true
        sqleval_timeout = 5
        sqleval_max_rows = 2
        sqleval_max_memory = 1073741824
        sqleval_connect_timeout = 2.5
        sqleval_thresholds = ["execution_accuracy=0.9"]
        sqleval_alpha = 0.2
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    out = _output(result)
    assert "sqleval: timeout 5 s (suites may override), max rows 2," in out, out
    assert "s.sqleval.yaml:3: case a: the gold query failed" in out and "more than 2 rows" in out  # the row cap
    outcomes = result.parseoutcomes()
    assert (outcomes.get("errors"), outcomes.get("missed")) == (1, 1)
    assert "1 gate failed" in out and result.ret == pytest.ExitCode.TESTS_FAILED  # the ini gate
    # a value of the wrong kind names the option, not "must be true or false"
    _write(pytester.path / "pytest.toml", "[pytest]\nsqleval = true\nsqleval_max_rows = 2.5\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "sqleval_max_rows" in _output(result) and "true or false" not in _output(result)
    # the model's numbers too
    _write(pytester.path / "mypred.py", "def predict(case, **kw):\n    return 'SELECT 1'\n")
    _write(pytester.path / "pytest.toml", """
        [pytest]
        sqleval = true
        pythonpath = ["."]
        sqleval_predictor = "mypred:predict"
        sqleval_model_concurrency = 3
        sqleval_model_timeout = 7
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "b")
    assert "3 calls at once per process" in _output(result) and result.parseoutcomes().get("passed") == 1, \
        _output(result)


# --------------------------------------------------------------------------- the plugin's name
def test_p_no_sqleval_removes_the_plugin_options_and_all(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: a, gold: SELECT 1}\n")
    _write(pytester.path / "test_plain.py", "def test_ok():\n    pass\n")
    result = pytester.runpytest("-p", "no:sqleval", "--sqleval")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "unrecognized arguments: --sqleval" in _output(result)
    assert "--sqleval" not in pytester.runpytest("-p", "no:sqleval", "--help").stdout.str()
    pytester.makeini("[pytest]\nsqleval = true\n")  # the ini switch is an unknown key then, nothing more
    result = pytester.runpytest("-p", "no:sqleval", "-p", "no:cacheprovider", "-v")
    assert result.parseoutcomes().get("passed") == 1 and "Unknown config option: sqleval" in _output(result)
    assert "s.sqleval.yaml" not in result.stdout.str() and "sqleval:" not in result.stdout.str()


def test_loaded_by_name_when_plugin_autoload_is_off(pytester, monkeypatch):
    """CI setups with PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 load plugins by their entry-point name: `-p sqleval`."""
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "s.sqleval.yaml", """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT 1, predicted: SELECT 1}
          - {id: b, gold: SELECT 1, predicted: SELECT 2}
    """)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess("-p", "sqleval", "-p", "xdist", "-n", "2", "--sqleval",
                                           "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"passed": 1, "missed": 1}
    assert pytester.runpytest_subprocess("--sqleval").ret == pytest.ExitCode.USAGE_ERROR  # not loaded: unknown


# --------------------------------------------------------------------------- node ids and status words
def _id_suites(pytester) -> None:
    make_sqlite(pytester.path / "shop.sqlite")
    _write(pytester.path / "evals" / "fleet.sqleval.yaml", """
        suite: fleet
        database: ../shop.sqlite
        cases:
          - {id: café, gold: SELECT 1, predicted: SELECT 1}
          - {id: q1.2, gold: SELECT 1, predicted: SELECT 2}
          - {id: "a:b", gold: SELECT 1, predicted: SELECT 1}
          - {id: "7", gold: SELECT nope FROM shops, predicted: SELECT 1}
          - id: conv
            interaction:
              - {question: q, gold: SELECT 1, predicted: SELECT 1}
              - {question: q2, gold: SELECT 2, predicted: SELECT 3}
    """)
    _write(pytester.path / "top.sqleval.yaml", "database: shop.sqlite\ncases:\n  - {id: q1, gold: SELECT 1, "
                                               "predicted: SELECT 1}\n")


def test_every_collected_node_id_selects_exactly_its_item_when_pasted_back(pytester):
    _id_suites(pytester)
    listed = _ids(pytester.runpytest("--sqleval", "--co", "-q", "-p", "no:cacheprovider"))
    assert listed == ["evals/fleet.sqleval.yaml::café", "evals/fleet.sqleval.yaml::q1.2",
                      "evals/fleet.sqleval.yaml::a:b", "evals/fleet.sqleval.yaml::7",
                      "evals/fleet.sqleval.yaml::conv[1]", "evals/fleet.sqleval.yaml::conv[2]",
                      "top.sqleval.yaml::q1"]
    for node_id in listed:
        again = pytester.runpytest("--sqleval", "--co", "-q", "-p", "no:cacheprovider", node_id)
        assert _ids(again) == [node_id], _output(again)
    # the interaction's own id selects its turns, in order
    whole = pytester.runpytest("--sqleval", "--co", "-q", "-p", "no:cacheprovider", "evals/fleet.sqleval.yaml::conv")
    assert _ids(whole) == ["evals/fleet.sqleval.yaml::conv[1]", "evals/fleet.sqleval.yaml::conv[2]"]


@pytest.mark.parametrize("extra", [(), XDIST], ids=["serial", "xdist"])
def test_verbose_words_and_quiet_letters_for_each_outcome(pytester, extra):
    _id_suites(pytester)
    args = ("--sqleval", "-p", "no:cacheprovider", "evals", *extra)
    verbose = pytester.runpytest(*args, "-v").stdout.str()
    for node_id, word in [("café", "PASSED"), ("q1.2", "MISSED"), ("7", "ERROR"), ("conv[2]", "MISSED")]:
        assert any(line.split()[-1:] == [f"evals/fleet.sqleval.yaml::{node_id}"] and word in line.split()
                   or line.startswith(f"evals/fleet.sqleval.yaml::{node_id} {word}")
                   for line in verbose.splitlines()), (node_id, word, verbose)
    if extra:
        return  # the words under -n 2; strict and -q below, serial
    strict = pytester.runpytest(*args, "-v", "--sqleval-strict", "-k", "q1.2 or café")
    assert any("FAILED" in line and line.rstrip().endswith("q1.2") or line.startswith(
        "evals/fleet.sqleval.yaml::q1.2 FAILED") for line in strict.stdout.lines), strict.stdout.str()
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    quiet = pytester.runpytest(*args, "-q", "-k", "café or q1.2 or 7")
    quiet.stdout.fnmatch_lines([".mE*"])
    outcomes = quiet.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("missed"), outcomes.get("errors")) == (1, 1, 1)
