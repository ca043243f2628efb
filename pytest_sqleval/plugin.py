"""pytest-sqleval's pytest plugin (the ``pytest11`` entry point): it registers the plugin's modules, and starts
and ends an active session (its state, the query process, the xdist scheduler, the header line).

Installing the package changes nothing until ``--sqleval`` (or the ini option ``sqleval = true``) is given:
only then are suite files collected and the summary, gate and report hooks (:mod:`pytest_sqleval.session`)
active. The fixtures (:mod:`pytest_sqleval.fixtures`) are always available, so ordinary tests can use
``sqleval_engine_factory``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .defaults import DEFAULT_CONNECT_TIMEOUT
from .state import STATE_KEY, SqlevalState, is_worker, max_rows_of, timeout_of

#: Feature plugins registered beside this one (each keeps its own options, fixtures and hooks).
#: Keep each module light at import time: heavy imports go inside functions (an inactive run must stay fast).
pytest_plugins: list[str] = [
    "pytest_sqleval.options",
    "pytest_sqleval.fixtures",
    "pytest_sqleval.outcomes",
    "pytest_sqleval.ci_plugin",
    "pytest_sqleval.assert_plugin",
    "pytest_sqleval.deploygate_plugin",
    "pytest_sqleval.lifecycle",
    "pytest_sqleval.model_plugin",
    "pytest_sqleval.fidelity_plugin",
    "pytest_sqleval.builtins",
]


def pytest_plugin_registered(plugin, manager) -> None:
    """Register the ``pytest_plugins`` above as soon as this module is, as pytest would, but without pytest's
    scan of every installed distribution's entry points for each name (milliseconds per name, paid by every
    plain run that has the plugin installed). ``-p no:<module>`` still blocks one."""
    import sys

    if plugin is not sys.modules.get(__name__):
        return
    import importlib

    _skip_assertion_rewriting(manager)
    for name in pytest_plugins:
        if manager.is_blocked(name) or manager.get_plugin(name) is not None:
            continue
        manager.register(importlib.import_module(name), name)


def _skip_assertion_rewriting(manager) -> None:
    """Import the rest of the package normally, not through pytest's assertion rewriter.

    pytest marks every package of an installed ``pytest11`` plugin for assertion rewriting, so each of our
    modules would be loaded through its hook: a slower load of its own cached bytecode, and under
    ``PYTHONDONTWRITEBYTECODE`` (CI machines often set it) an AST rewrite and compile of every module at every
    start. No module of this package has an ``assert`` meant for users (the assertion helpers raise
    :class:`~pytest_sqleval.assertions.SqlevalAssertionError` with their own message; ``assert verdict`` in a
    user's test is rewritten as part of that test module), so the mark is dropped. The marks live in private
    attributes of the hook: when a pytest version lacks them, nothing changes."""
    hook = getattr(manager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    if not isinstance(marked, set) or __package__ not in marked:
        return
    marked.discard(__package__)
    decided = getattr(hook, "_marked_for_rewrite_cache", None)
    if isinstance(decided, dict):
        for name in [name for name in decided if name.partition(".")[0] == __package__]:
            del decided[name]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The ``pytest_sqleval_*`` hooks (:mod:`pytest_sqleval.hookspec`)."""
    _skip_assertion_rewriting(pluginmanager)  # pytest calls this hook first, when this module is registered
    from . import hookspec

    pluginmanager.add_hookspecs(hookspec)


# --------------------------------------------------------------------------- configure
def _refuse_suite_arguments(config: pytest.Config) -> None:
    """A suite file named on the command line of a run without ``--sqleval``: pytest would say only "not found"."""
    if not any(".sqleval." in str(arg).lower() for arg in config.args):
        return  # (an inactive run imports nothing more)
    from pathlib import Path

    from .suite_files import SUITE_SUFFIXES

    named = [str(arg) for arg in config.args if (path := str(arg).split("::", 1)[0]).lower().endswith(SUITE_SUFFIXES)
             and (Path(config.invocation_params.dir) / path).is_file()]  # a missing one: pytest's "not found" says it
    if named:
        raise pytest.UsageError(f"{named[0].split('::', 1)[0]} is a pytest-sqleval suite, collected only in a sqleval "
                                f"run\n  fix: add --sqleval (pytest --sqleval {' '.join(named)})")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqleval(suite, case): a case collected from a pytest-sqleval suite")
    from .options import may_be_enabled  # registered as one of pytest_plugins first

    if not may_be_enabled(config):
        _refuse_suite_arguments(config)
        return  # inactive: nothing of the plugin is imported (the ini values are checked when it is enabled)
    from .settings import SettingsError, from_invocation_dir, resolve_settings

    _register_metrics(config)
    _register_profiles(config)
    _register_backends(config)
    try:
        settings = resolve_settings(config)
    except SettingsError as exc:
        raise pytest.UsageError(str(exc)) from None
    if not settings.enabled:
        _refuse_suite_arguments(config)
        return
    from .errors import SuiteError
    from .execution.engines import EngineFactory
    from .predictions import load_predictions, read_predictions_file

    _check_report_path(settings.json_path, settings.json_option)
    if settings.json_path is not None:  # resolved now, as --junitxml is: a test that changes directory cannot move it
        import dataclasses

        settings = dataclasses.replace(settings, json_path=from_invocation_dir(config, settings.json_path))
    predictions = predictions_bytes = None
    if settings.predictions is not None:
        option = "--sqleval-predictions" if settings.predictions_from_cli \
            else "the ini option sqleval_predictions (a path relative to the ini file)"
        try:  # a worker parses the bytes its controller read: a pipe (`<(jq ...)`) cannot be read twice
            predictions_bytes = config.workerinput.get("sqleval_predictions_bytes") if is_worker(config) else None
            if predictions_bytes is None:
                predictions_bytes = read_predictions_file(settings.predictions, option)
            predictions = load_predictions(settings.predictions, option, raw=predictions_bytes)
        except SuiteError as exc:
            raise pytest.UsageError(exc.render()) from None
    worker = config.workerinput["workerid"] if is_worker(config) else "main"
    state = SqlevalState(
        settings=settings,
        engines=EngineFactory(build_dir=_build_dir(worker), worker=worker, url_override=settings.database_url,
                              connect_timeout=settings.connect_timeout or DEFAULT_CONNECT_TIMEOUT,
                              connect_timeout_from_cli=settings.connect_timeout_from_cli,
                              shared_build_dir=_shared_build_dir(config)),
        predictions=predictions,
        predictions_bytes=predictions_bytes,
    )
    config.stash[STATE_KEY] = state
    from .session import SqlevalSession

    config.pluginmanager.register(SqlevalSession(config, state), "sqleval-session")
    if is_worker(config) or _is_xdist_controller(config):
        from .xdist_reports import PackedReports

        config.pluginmanager.register(PackedReports(), "sqleval-packed-reports")
    if not config.option.collectonly and not _is_xdist_controller(config):
        from .query_ahead_plugin import QueryAhead

        config.pluginmanager.register(QueryAhead(), "sqleval-query-ahead")
        _start_query_process()


def _register_metrics(config: pytest.Config) -> None:
    """The session's metric registry: the built-ins, then every ``pytest_sqleval_register_metrics``."""
    from .registry import MetricError, MetricRegistry, use_registry

    registry = MetricRegistry()  # the built-ins come from pytest_sqleval.builtins' implementation
    use_registry(registry)
    try:
        config.hook.pytest_sqleval_register_metrics.call_historic(kwargs={"registry": registry, "config": config})
    except MetricError as exc:  # a bad registration in a conftest.py or plugin: a usage error, not a traceback
        from .hookspec import hook_location

        hook = config.hook.pytest_sqleval_register_metrics
        twice = _registered_twice(hook)
        text = str(exc).replace("; pick another name", "") if twice else str(exc)  # the name is fine: run it once
        raise pytest.UsageError(f"pytest_sqleval_register_metrics: {text}{hook_location(hook, exc)}{twice}") from None
    except Exception as exc:  # noqa: BLE001 - the user's code raised: name it, not an INTERNALERROR
        _hook_raised(config.hook.pytest_sqleval_register_metrics, exc)


def _registered_twice(hook) -> str:
    """The cause of a name "registered twice" when one implementation is registered under two plugins (a
    conftest.py that does ``from myplugin import *``, or a module given to ``-p`` and to ``pytest_plugins``
    by different names): one function, run twice."""
    seen: dict = {}
    for impl in hook.get_hookimpls():
        code = getattr(impl.function, "__code__", None)
        if code in seen:
            return (f"; the same function ({code.co_filename}:{code.co_firstlineno}) is registered twice, as plugins "
                    f"{seen[code]!r} and {impl.plugin_name!r} (a conftest.py importing a plugin's hooks with "
                    "`from myplugin import *`, or one module loaded under two names): register it once")
        if code is not None:
            seen[code] = impl.plugin_name
    return ""


def _register_profiles(config: pytest.Config) -> None:
    """The session's execution profiles: the built-ins, then every ``pytest_sqleval_execution_profiles`` (which
    may add or replace); a suite's ``execution:`` is resolved in this table (each xdist process builds its own)."""
    from .comparison import use_profiles

    profiles: dict = {}  # the built-ins come from pytest_sqleval.builtins' implementation
    use_profiles(profiles)
    try:
        config.hook.pytest_sqleval_execution_profiles.call_historic(kwargs={"profiles": profiles, "config": config})
    except Exception as exc:  # noqa: BLE001 - the user's code raised: name it, not an INTERNALERROR
        _hook_raised(config.hook.pytest_sqleval_execution_profiles, exc)
    from .state import PROFILES_AT_CONFIGURE_KEY

    config.stash[PROFILES_AT_CONFIGURE_KEY] = frozenset(
        impl.plugin_name for impl in config.hook.pytest_sqleval_execution_profiles.get_hookimpls())


def _register_backends(config: pytest.Config) -> None:
    """The session's engine backends: the built-ins (pytest_sqleval.builtins), then every
    ``pytest_sqleval_engine_backends`` (a later registration is asked first)."""
    from .execution.backends import BackendRegistry, use_backends

    backends = BackendRegistry()
    use_backends(backends)
    try:
        config.hook.pytest_sqleval_engine_backends.call_historic(kwargs={"backends": backends, "config": config})
    except Exception as exc:  # noqa: BLE001 - the user's code raised: name it, not an INTERNALERROR
        _hook_raised(config.hook.pytest_sqleval_engine_backends, exc)


def _hook_raised(hook, exc: Exception) -> None:
    """A registration hook of a conftest.py or plugin raised: a usage error naming the hook, where its code is
    and what it raised (a conftest.py collected later fails its collection, with the same traceback)."""
    from .hookspec import hook_failure

    raise pytest.UsageError(hook_failure(hook, exc)) from None


def _is_xdist_controller(config: pytest.Config) -> bool:
    """The controller of an xdist run runs no case: its workers each start their own query process."""
    return not is_worker(config) and bool(getattr(config.option, "numprocesses", None)) \
        and getattr(config.option, "dist", "no") != "no"


def _start_query_process() -> None:
    """Start this process's zygote now, so that no case pays for its imports."""
    from .execution.sandbox import process_sandbox, sandbox_enabled

    if sandbox_enabled():
        try:
            process_sandbox().start()
        except Exception:  # noqa: BLE001 - it is started again, with a clear error, by the first query
            pass


def _check_report_path(path, option: str) -> None:
    """A report path that can never be written is a usage error before anything runs."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise pytest.UsageError(f"{option} {path} is a directory; give a file path, e.g. {target / 'report.json'}")
    blocking = next((parent for parent in target.parents if parent.exists()), None)  # folders are made as needed
    if blocking is not None and not blocking.is_dir():
        raise pytest.UsageError(f"{option} {path}: {blocking} is a file, not a folder; give a path in a folder")


def _shared_build_dir(config: pytest.Config) -> Path | None:
    """An xdist worker builds SQLite/DuckDB setup databases in the controller's build folder, once per run
    (``lifecycle.pytest_configure_node`` passes it; the controller removes it at the end)."""
    shared = getattr(config, "workerinput", {}).get("sqleval_build_dir")
    return Path(shared) if shared and Path(shared).is_dir() else None


def _build_dir(worker: str) -> Path:
    """Where this process builds setup-script databases: a private temporary directory, removed at the end."""
    import tempfile

    parent = os.environ.get("SQLEVAL_BUILD_DIR") or None
    try:
        return Path(tempfile.mkdtemp(prefix=f"sqleval-{worker}-", dir=parent))
    except OSError as exc:
        raise pytest.UsageError(f"SQLEVAL_BUILD_DIR={parent}: cannot create a build folder there "
                                f"({exc.strerror or exc}); set it to an existing, writable folder, or unset it") from None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Under ``--dist load``/``loadgroup``, keep each interaction's turns together and in order; under every
    scope scheduler, never send a crashed worker's item to another worker."""
    if config.stash.get(STATE_KEY, None) is None:
        return None
    from . import xdist_scheduling

    scheduler = {
        "load": xdist_scheduling.InteractionScheduling,
        "loadgroup": xdist_scheduling.InteractionScheduling,
        "loadscope": xdist_scheduling.ScopeScheduling,
        "loadfile": xdist_scheduling.FileScheduling,
    }.get(config.getvalue("dist"))
    return scheduler(config, log) if scheduler is not None else None


def pytest_unconfigure(config: pytest.Config) -> None:
    import sys

    registry = sys.modules.get("pytest_sqleval.registry")
    if registry is not None:  # an in-process pytest run after this one starts from the built-in metrics
        registry.use_registry(None)
    comparison = sys.modules.get("pytest_sqleval.comparison")
    if comparison is not None:  # and from the built-in execution profiles
        comparison.use_profiles(None)
    backends = sys.modules.get("pytest_sqleval.execution.backends")
    if backends is not None:  # and from the built-in engine backends
        backends.use_backends(None)
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        sandbox = sys.modules.get("pytest_sqleval.execution.sandbox")
        if sandbox is not None:  # none was started (the xdist controller): nothing to import or close
            sandbox.close_process_sandbox()
        state.engines.close()
        _remove_build_dir(state.engines.build_dir)


def _remove_build_dir(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    s = state.settings
    parts = [
        f"timeout {timeout_of(s):g} s" + ("" if s.timeout_from_cli else " (suites may override)"),
        f"max rows {max_rows_of(s)}",
        f"predictions {s.predictions or 'from the suites'}",
        "strict" if s.strict else "misses are not failures",
    ]
    if s.database_url:
        from .suite import DatabaseSpec

        parts.append(f"setup-script databases built on {DatabaseSpec(s.database_url).display} "
                     "(suites whose database is a file or a URL keep it)")
    return ["sqleval: " + ", ".join(parts)]
