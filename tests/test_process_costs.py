"""Fixed costs of a pytest process (issue 11): what an installed but inactive plugin adds to a plain run, and what
an evaluated run does after its last line (the query processes' end, the heap left to the interpreter).

The inactive plugin must keep everything a user sees: every option and ini key in ``pytest --help``, the fixtures
in ordinary tests, the hookspecs for conftest implementations, ``-p no:sqleval`` and ``-p no:<feature module>``.
"""

from __future__ import annotations

import ast
import gc
import inspect
import json
import re
import sqlite3
import textwrap
import time
from pathlib import Path

import pytest_sqleval.plugin as plugin
from pytest_sqleval.execution import sandbox

FEATURE_MODULES = list(plugin.pytest_plugins)


def _declared(kind: str) -> set[str]:
    """Every option (``kind="addoption"``) or ini key (``"addini"``) the plugin's modules declare, read from their
    source (so a new option is checked without touching this test)."""
    import importlib

    names: set[str] = set()
    for module in FEATURE_MODULES:
        tree = ast.parse(inspect.getsource(importlib.import_module(module)))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == kind
                    and node.args and isinstance(node.args[0], ast.Constant)):
                names.add(node.args[0].value)
    return names


def _state(pid: int) -> str | None:
    """The kernel's state letter of ``pid`` (``Z`` for a zombie), or None when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()[0]


def _gone(pid: int, within: float = 0.0) -> bool:
    """``pid`` runs no more (absent, or a zombie waiting for its reaper), checked until ``within`` seconds pass."""
    deadline = time.monotonic() + within
    while True:
        if _state(pid) in (None, "Z", "X"):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


# --------------------------------------------------------------------------- installed but inactive
def test_every_option_and_ini_key_is_in_help_when_inactive(pytester):
    options, ini = _declared("addoption"), _declared("addini")
    assert {"--sqleval", "--sqleval-json", "--sqleval-markdown", "--sqleval-model"} <= options  # the reading works
    assert {"sqleval", "sqleval_timeout", "sqleval_html"} <= ini
    result = pytester.runpytest_subprocess("--help")
    assert result.ret == 0
    text = result.stdout.str()
    missing = [name for name in sorted(options) if not re.search(rf"(^|[\s,]){re.escape(name)}([=\s,]|$)", text, re.M)]
    missing += [name for name in sorted(ini) if not re.search(rf"^\s+{re.escape(name)} \(", text, re.M)]
    assert missing == []


def test_a_plain_run_under_dont_write_bytecode_loads_the_plugin_without_assertion_rewriting(pytester, monkeypatch):
    """pytest marks an installed plugin's whole package for assertion rewriting; under PYTHONDONTWRITEBYTECODE that
    is an AST rewrite and compile of each module at every start. The plugin's modules are loaded normally (none has
    an assert meant for users); the user's own test module is still rewritten."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    pytester.makepyfile(test_plain=textwrap.dedent(f"""
        import sys

        FEATURES = {FEATURE_MODULES!r}

        def test_loaded_but_not_rewritten():
            rewritten = [name for name in FEATURES if "@py_builtins" in vars(sys.modules[name])]
            assert rewritten == []
            assert "@py_builtins" in globals()  # this test module is rewritten as before

        def test_a_users_assert_is_still_explained():
            left, right = [1, 2], [1, 3]
            assert left == right
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*At index 1 diff: 2 != 3*"])


def test_fixtures_and_hookspecs_are_there_for_ordinary_tests_when_inactive(pytester):
    pytester.makeconftest(textwrap.dedent("""
        def pytest_sqleval_register_metrics(registry, config):  # a known hook: no "unknown hook" error
            raise AssertionError("never called without --sqleval")
    """))
    db = pytester.path / "t.sqlite"
    sqlite3.connect(db).executescript("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (7);")
    pytester.makepyfile(test_plain=textwrap.dedent(f"""
        import pytest
        from pytest_sqleval.execution.runner import run_query

        def test_factory(sqleval_engine_factory):
            engine = sqleval_engine_factory({str(db)!r})
            assert run_query(engine, "SELECT x FROM t", timeout=10, max_rows=10).rows == [(7,)]

        @pytest.mark.sqleval_database({str(db)!r})
        def test_query(sqleval_query):
            assert sqleval_query("SELECT x + 1 FROM t").rows == [(8,)]
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_feature_plugins_can_each_be_blocked_and_no_sqleval_blocks_them_all(pytester):
    blocked = [name for name in FEATURE_MODULES if name not in ("pytest_sqleval.options", "pytest_sqleval.fixtures")]
    pytester.makepyfile(test_plain=textwrap.dedent(f"""
        import pytest

        BLOCKED = {blocked!r}

        def test_registered(pytestconfig):
            manager = pytestconfig.pluginmanager
            if manager.get_plugin("sqleval") is None:  # -p no:sqleval: nothing of the plugin is registered
                assert [n for n, p in manager.list_name_plugin() if p is not None and "sqleval" in str(n)] == []
                return
            assert [n for n in BLOCKED if manager.get_plugin(n) is not None] == []
            assert manager.get_plugin("pytest_sqleval.options") is not None
            assert manager.get_plugin("pytest_sqleval.fixtures") is not None
    """))
    args = [arg for name in blocked for arg in ("-p", f"no:{name}")]
    pytester.runpytest_subprocess("-p", "no:cacheprovider", *args).assert_outcomes(passed=1)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:sqleval").assert_outcomes(passed=1)


# --------------------------------------------------------------------------- the end of an evaluated run
def test_closing_a_just_started_sandbox_does_not_wait_for_the_zygotes_imports():
    """The zygote only forks: it is killed and reaped at close, not waited for (before, a run shorter than the
    zygote's imports waited for them to finish, up to 2 s, before it could see the end of its input)."""
    box = sandbox.QuerySandbox()
    box.start()
    zygote = box._zygote.popen.pid
    started = time.monotonic()
    box.close()
    elapsed = time.monotonic() - started
    assert _state(zygote) is None  # reaped by us: not even a zombie is left
    assert elapsed < 0.5


def test_the_zygote_and_query_process_are_gone_when_close_returns(shop_db):
    from pytest_sqleval.execution.backends.sqlite import sqlite_engine
    from pytest_sqleval.execution.runner import run_query

    box = sandbox.process_sandbox()
    result = run_query(sqlite_engine(shop_db), "SELECT count(*) FROM shops", timeout=10, max_rows=10)
    assert result.rows and result.rows[0][0] > 0
    zygote, query = box._zygote.popen.pid, box.pid
    assert query is not None and _state(query) not in (None, "Z")
    sandbox.close_process_sandbox()
    assert _state(zygote) is None
    assert _gone(query, within=1.0)  # killed, and its parent (the zygote) is gone: init reaps it


def test_after_an_evaluated_run_no_process_of_it_is_left_and_the_heap_is_frozen_only_at_exit(pytester, shop_db):
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(f"""
        database: {shop_db}
        cases:
          - id: one
            gold: SELECT count(*) FROM shops
            predicted: SELECT count(id) FROM shops
          - id: two
            gold: SELECT name FROM shops ORDER BY id
            predicted: SELECT name FROM shops ORDER BY id
    """))
    out = pytester.path / "pids.json"
    frozen = pytester.path / "frozen.txt"
    pytester.makeconftest(textwrap.dedent(f"""
        import atexit, gc, sys

        # registered before the plugin's own handler (conftests load first), so it runs after it
        atexit.register(lambda: open({str(frozen)!r}, "w").write(str(gc.get_freeze_count())))

        def pytest_sessionfinish(session):
            import json
            from pytest_sqleval.execution import sandbox

            box = sandbox._sandbox
            rewritten = sorted(n for n, m in sys.modules.items()
                               if n.startswith("pytest_sqleval") and "@py_builtins" in vars(m))
            with open({str(out)!r}, "w") as f:
                json.dump({{"zygote": box._zygote.popen.pid, "query": box.pid, "rewritten": rewritten,
                           "frozen": gc.get_freeze_count()}}, f)
    """))
    result = pytester.runpytest_subprocess("--sqleval", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    seen = json.loads(out.read_text())
    assert seen["query"] is not None
    assert _state(seen["zygote"]) is None  # reaped by the run itself before it ended
    assert _gone(seen["query"], within=1.0)
    assert seen["frozen"] == 0  # nothing is frozen while the run can still free memory
    assert int(frozen.read_text()) > 0  # frozen at exit: the final collections skip the run's heap
    # only the module whose name matches pytest's test-file pattern (running_test.py) is still rewritten
    assert [name for name in seen["rewritten"] if name != "pytest_sqleval.running_test"] == []


def test_an_in_process_run_leaves_nothing_frozen(pytester, shop_db):
    """pytester's in-process runs (and any script calling pytest.main) keep a normal collector afterwards."""
    pytester.makefile(".sqleval.yaml", shop=f"database: {shop_db}\ncases:\n"
                                             "  - id: one\n    gold: SELECT 1\n    predicted: SELECT 1\n")
    before = gc.get_freeze_count()
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert gc.get_freeze_count() == before == 0
