"""The fast path of a suite item's setup: the plugin's own fixtures computed without pytest's fixture machinery.

A suite item (:class:`pytest_sqleval.collect.CaseItem`) asks for ``request, sqleval_case, sqleval_engine,
sqleval_gold, sqleval_prediction``; through pytest each of them costs a ``SubRequest``, a ``RequestFixtureDef``
(an ``inspect.signature`` per fixture asking for ``request``), the ``pytest_fixture_setup`` hook and, at teardown,
a finalizer and the ``pytest_fixture_post_finalizer`` hook (about a fifth of the pytest process's CPU on a
1000-case suite of trivial queries, before this).

When nothing could observe the difference, :func:`plan_for` returns a :class:`FastSetup` (decided once per suite
file, at collection) and the item's setup calls the same fixture functions itself, in the order pytest would, with
the same arguments, filling ``item.funcargs`` and the request's active fixtures (so ``request.getfixturevalue``
returns the same objects). Nothing could observe it when:

* every fixture in the item's closure is the plugin's own (or pytest's ``tmp_path_factory``, which the session
  ``sqleval_engine_factory`` asks for), defined once: no ``conftest.py`` or plugin overrides one, no autouse
  fixture (from a conftest, a plugin or the ``usefixtures`` ini option) joins the closure;
* no ``--setup-show``/``--setup-only``/``--setup-plan``/``--fixtures-per-test``;
* no ``pytest_fixture_setup``/``pytest_fixture_post_finalizer`` implementation would see the fixtures other than
  pytest's own and anyio's (which acts on async fixtures only).

Otherwise the item goes through pytest unchanged. Session-scoped fixtures are always set up by pytest (the first
item asks for them through ``request.getfixturevalue``); later items read pytest's cached value.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import pytest
from _pytest.compat import NOTSET
from _pytest.fixtures import SubRequest

#: The fixtures the fast path may compute: name -> the module defining the only allowed definition.
KNOWN_FIXTURES = {
    "sqleval_engine_factory": "pytest_sqleval.fixtures",
    "tmp_path_factory": "_pytest.tmpdir",
    "sqleval_predictor": "pytest_sqleval.model_plugin",
    "sqleval_case": "pytest_sqleval.fixtures",
    "sqleval_engine": "pytest_sqleval.fixtures",
    "sqleval_gold": "pytest_sqleval.fixtures",
    "sqleval_prediction": "pytest_sqleval.model_plugin",
}

#: Implementations of the fixture hooks that do nothing to these fixtures in a run without --setup-* options.
HARMLESS_SETUP_HOOKS = frozenset({"_pytest.fixtures", "_pytest.setuponly", "_pytest.setupplan", "anyio.pytest_plugin"})
HARMLESS_FINALIZER_HOOKS = frozenset({"_pytest.fixtures", "_pytest.setuponly"})
_DISABLING_OPTIONS = ("setupshow", "setuponly", "setupplan", "show_fixtures_per_test")


@functools.cache
def _pytest_as_expected() -> bool:
    """The private pytest API used here is as pytest 9 defines it (a pytest that differs takes the ordinary path)."""
    return (list(inspect.signature(SubRequest.__init__).parameters)
            == ["self", "request", "scope", "param", "param_index", "fixturedef", "_ispytest"]
            and hasattr(pytest.Function, "_initrequest"))


def item_setup(item) -> None:
    """``CaseItem.setup``: the fast path when its plan still applies, else pytest's ``Function.setup``.

    Defined here rather than in ``collect.py`` so that a setup error's traceback is cut as before (pytest cuts a
    traceback at the first frame in the test function's file); ``__tracebackhide__`` hides this frame."""
    __tracebackhide__ = True
    fast = item._sqleval_fast
    if fast is not None and fast.applies(item):
        fast.fill(item)
    else:
        pytest.Function.setup(item)


class FastSetup:
    """How the items of one suite file set up their fixtures: the closure's names in pytest's order, and the one
    definition of each."""

    __slots__ = ("info", "names", "defs")

    def __init__(self, info, names: list[str], defs: dict[str, Any]) -> None:
        self.info = info
        self.names = names  # a copy: a plugin that edits item.fixturenames later turns the fast path off
        self.defs = defs

    def applies(self, item) -> bool:
        """Still true at setup time (a plugin may have changed the item's fixtures after collection)."""
        return item._fixtureinfo is self.info and item.fixturenames == self.names

    @staticmethod
    def unparametrized_key(fixturedef) -> Any:
        """The cache key of a value set up without a parameter (None in pytest 9, 0 before)."""
        return fixturedef.cache_key(_UNPARAMETRIZED)

    def fill(self, item) -> None:
        """``TopRequest._fillfixtures`` for these fixtures: same values, same order, same errors."""
        __tracebackhide__ = True
        request = item._request
        funcargs = item.funcargs
        values: dict[str, Any] = {"request": request}
        for name in self.names:
            if name not in funcargs:
                funcargs[name] = self._value(name, request, values)

    def _value(self, name: str, request, values: dict[str, Any]) -> Any:
        """``request.getfixturevalue(name)``: a session fixture's cached value (set up by pytest the first time),
        a function fixture called with its arguments (each computed first, in its signature's order) and a
        ``SubRequest`` of its own, as pytest's ``pytest_fixture_setup`` calls it."""
        __tracebackhide__ = True
        if name in values:
            return values[name]
        fixturedef = self.defs[name]
        if fixturedef.scope != "function":
            cached = fixturedef.cached_result
            if cached is not None and cached[2] is None and cached[1] == self.unparametrized_key(fixturedef):
                value = cached[0]
                request._fixture_defs[name] = fixturedef
            else:
                value = request.getfixturevalue(name)
            values[name] = value
            return value
        computed = ComputedFixture(fixturedef, request.node)
        subrequest = SubRequest(request, fixturedef._scope, NOTSET, 0, computed, _ispytest=True)
        kwargs = {arg: subrequest if arg == "request" else self._value(arg, request, values)
                  for arg in fixturedef.argnames}
        try:
            value = fixturedef.func(**kwargs)
        except pytest.skip.Exception as exc:  # as pytest_fixture_setup: report the item, not the fixture
            exc._use_item_location = True
            raise
        computed.cached_result = (value, fixturedef.cache_key(subrequest), None)
        values[name] = value
        request._fixture_defs[name] = computed
        return value


class _Unparametrized:
    """What ``FixtureDef.cache_key`` reads of a request that has no parameter."""

    param_index = 0


_UNPARAMETRIZED = _Unparametrized()


class ComputedFixture:
    """Stands for a fixture the fast path computed, in the item's request (``request.getfixturevalue(name)``
    returns its value) and as its ``SubRequest``'s fixture. A finalizer added to it (by a fixture set up later
    through pytest that asks for it, or through the SubRequest) runs at the item's teardown, when pytest would
    have finished the fixture. Anything else is read from the real definition."""

    __slots__ = ("fixturedef", "cached_result", "node")

    def __init__(self, fixturedef, node) -> None:
        self.fixturedef = fixturedef
        self.cached_result: tuple[Any, Any, None] | None = None
        self.node = node

    def __getattr__(self, name: str) -> Any:  # argname, scope, _scope, func, baseid, argnames, params, ...
        return getattr(self.fixturedef, name)

    def addfinalizer(self, finalizer) -> None:
        self.node.addfinalizer(finalizer)

    def execute(self, request) -> Any:
        return self.cached_result[0]

    def finish(self, request) -> None:
        pass


def plan_for(collector: pytest.Collector, item) -> FastSetup | None:
    """The fast path for the items of ``collector`` (a suite file) whose fixtures are ``item``'s, or None."""
    config = collector.config
    option = config.option
    if not _pytest_as_expected() or any(getattr(option, name, False) for name in _DISABLING_OPTIONS):
        return None
    hook = collector.ihook  # the conftest.py files of the suite's folder included
    for name, harmless in (("pytest_fixture_setup", HARMLESS_SETUP_HOOKS),
                           ("pytest_fixture_post_finalizer", HARMLESS_FINALIZER_HOOKS)):
        for impl in getattr(hook, name).get_hookimpls():
            if getattr(impl.function, "__module__", None) not in harmless:
                return None
    info = item._fixtureinfo
    defs: dict[str, Any] = {}
    for name in info.names_closure:
        if name == "request":
            continue
        module = KNOWN_FIXTURES.get(name)
        found = info.name2fixturedefs.get(name)
        if module is None or not found or len(found) != 1:
            return None  # an autouse or unknown fixture, or an override (conftest.py or another plugin)
        fixturedef = found[0]
        func = fixturedef.func
        if (getattr(func, "__module__", None) != module or getattr(func, "__name__", None) != name
                or fixturedef.params is not None):
            return None
        if fixturedef.scope == "function" and (inspect.isgeneratorfunction(func) or inspect.iscoroutinefunction(func)
                                               or inspect.isasyncgenfunction(func)):
            return None
        defs[name] = fixturedef
    return FastSetup(info, list(info.names_closure), defs)
