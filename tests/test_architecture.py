"""The package's module graph flows one way, with no import cycle (docs/architecture.md).

The graph is read from the source (the AST of every module), not from what an import happens to load:
every ``import``/``from ... import`` statement counts, at module level, inside functions and under
``if TYPE_CHECKING:``, because a function-level import hides a cycle without removing it.
"""

from __future__ import annotations

import ast
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

import pytest_sqleval

PACKAGE = "pytest_sqleval"
ROOT = Path(pytest_sqleval.__file__).resolve().parent

#: The layers, highest first: a module may import its own layer and the layers below it, never one above.
#: Patterns match dotted names below the package (``fnmatch``); the first matching row wins. A module that
#: matches no row fails :func:`test_every_module_has_a_layer`: place it here.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pytest glue", (
        "plugin", "*_plugin", "collect", "fixtures", "options", "state", "session", "outcomes", "xdist_*",
        "hookspec", "builtins", "lifecycle", "cli", "cli_*", "cleanup", "fast_setup",
    )),
    ("orchestration", (
        "evaluate", "aggregate", "thresholds", "report", "report.*", "loader", "yaml_lines", "load_context",
        "database_specs", "suite_options", "settings",
        "model", "model.*",
        "datasets", "datasets.*", "baseline", "deploygate", "summary", "suite_cache", "predictions", "goldcheck",
        "passrule", "assertions", "running_test", "runmeta", "shard", "suite_files",
    )),
    ("scoring, execution, SQL, metrics", (
        "efficiency", "policy", "stats", "execution", "execution.*", "sql", "sql.*", "metrics", "metrics.*",
    )),
    ("model types", (
        "suite", "results", "schema", "errors", "comparison", "registry", "record", "defaults", "secrets",
    )),
)

#: Within the metrics: pure functions of results and trees. They may read SQL only through these modules.
METRICS_MAY_IMPORT = ("sql.limits", "sql.parsed")

#: What only the pytest glue may import.
PYTEST_PACKAGES = ("pytest", "_pytest", "pluggy", "xdist")


def module_name(path: Path) -> str:
    """``pytest_sqleval/sql/guard.py`` -> ``sql.guard``; a package's ``__init__.py`` is the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(ROOT.rglob("*.py")) if "__pycache__" not in path.parts}


def imported_names(path: Path, name: str) -> list[tuple[tuple[str, ...], int]]:
    """Each name an import statement in the module brings in, as its possible absolute targets (best first) and
    its line, relative imports resolved: ``from .execution import engines`` may import the submodule
    ``execution.engines`` or a name of the package ``execution``; the first that is a module is the target."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[tuple[str, ...], int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(((alias.name,), node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, path, name) if node.level else node.module or ""
            found.extend(((f"{module}.{alias.name}", module), node.lineno) for alias in node.names)
    return found


def _absolute(node: ast.ImportFrom, path: Path, name: str) -> str:
    """The absolute module of a relative ``from`` import (``from ..errors`` in ``sql/guard.py`` -> ``errors``)."""
    base = f"{PACKAGE}.{name}".split(".") if name else [PACKAGE]
    if path.name != "__init__.py":
        base = base[:-1]  # a module's package; a package's __init__ is its own
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def package_target(candidates: tuple[str, ...], modules: dict[str, Path]) -> str | None:
    """The package module an import refers to (``sql.guard``), or None for anything outside the package."""
    for target in candidates:
        inner = target[len(PACKAGE) + 1:] if target.startswith(PACKAGE + ".") else None
        if inner in modules:
            return inner
    return None


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported package module: first line importing it} (imports of the module itself left out)."""
    modules = package_modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        edges: dict[str, int] = {}
        for candidates, line in imported_names(path, name):
            target = package_target(candidates, modules)
            if target is not None and target != name:
                edges.setdefault(target, line)
        graph[name] = edges
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative: the graph is small, the recursion limit is not)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def one_cycle(graph: dict[str, dict[str, int]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module, to name in the failure (``a -> b -> a``)."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node]):
            if child == start:
                return paths[node] + [start]
            if child in members and child not in paths:
                paths[child] = paths[node] + [child]
                queue.append(child)
    return component  # pragma: no cover - a component always has a cycle through each member


def layer_of(name: str) -> int | None:
    """The layer's rank (0 = highest), or None for a module in no layer."""
    for rank, (_, patterns) in enumerate(LAYERS):
        if any(fnmatchcase(name, pattern) for pattern in patterns):
            return rank
    return None


def where(name: str, graph: dict[str, dict[str, int]], target: str) -> str:
    path = package_modules()[name].relative_to(ROOT.parent)
    return f"{path}:{graph[name][target]}"


GRAPH = import_graph()


def test_the_graph_sees_function_level_relative_and_type_checking_imports() -> None:
    """The reader resolves what the package really writes: this fails if it stops seeing an import form."""
    assert "hookspec" in GRAPH["plugin"]  # `from . import hookspec`, inside pytest_addhooks
    assert "registry" in GRAPH["hookspec"]  # `from .registry import MetricRegistry` under TYPE_CHECKING
    assert "errors" in GRAPH["execution.runner"]  # `from ..errors import QueryError`
    assert "sql.limits" in GRAPH["sql.rewrite"]  # `from pytest_sqleval.sql.limits import ...`
    modules = package_modules()
    assert package_target(("pytest_sqleval.execution.engines", "pytest_sqleval.execution"), modules) \
        == "execution.engines"  # `from .execution import engines`: the submodule, not the package
    assert package_target(("pytest_sqleval.suite.Case", "pytest_sqleval.suite"), modules) == "suite"
    assert package_target(("sqlglot.exp", "sqlglot"), modules) is None


def test_no_import_cycles() -> None:
    components = [c for c in strongly_connected(GRAPH) if len(c) > 1]
    described = []
    for component in components:
        cycle = one_cycle(GRAPH, component)
        steps = ", ".join(where(a, GRAPH, b) for a, b in zip(cycle, cycle[1:]))
        described.append(f"{{{', '.join(component)}}}: e.g. {' -> '.join(cycle)} ({steps})")
    assert not described, "import cycles in pytest_sqleval (move the shared code down a layer):\n" + "\n".join(
        described)


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(name for name in GRAPH if name and layer_of(name) is None)
    assert not unplaced, f"modules in no layer: {unplaced}; add each to LAYERS in {Path(__file__).name}"


def test_no_import_goes_up_a_layer() -> None:
    upward = []
    for name, edges in sorted(GRAPH.items()):
        rank = layer_of(name)
        for target in sorted(edges):
            target_rank = layer_of(target)
            if rank is not None and target_rank is not None and target_rank < rank:
                upward.append(f"{where(name, GRAPH, target)}: {name} ({LAYERS[rank][0]}) imports {target} "
                              f"({LAYERS[target_rank][0]})")
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def test_metrics_know_nothing_of_pytest_execution_or_sql_plans() -> None:
    problems = []
    modules = package_modules()
    for name, path in sorted(modules.items()):
        if not (name == "metrics" or name.startswith("metrics.")):
            continue
        for candidates, line in imported_names(path, name):
            target = package_target(candidates, modules)
            if candidates[-1].split(".")[0] in PYTEST_PACKAGES:
                problems.append(f"{path.relative_to(ROOT.parent)}:{line}: imports {candidates[-1]}")
            elif target is not None and target.split(".")[0] in ("execution", "sql") \
                    and target not in METRICS_MAY_IMPORT:
                problems.append(f"{path.relative_to(ROOT.parent)}:{line}: imports {target} "
                                f"(metrics may read SQL only through {', '.join(METRICS_MAY_IMPORT)})")
    assert not problems, "metrics/ must be pure functions:\n" + "\n".join(problems)


def test_only_the_pytest_glue_imports_pytest() -> None:
    """Orchestration, scoring and the model types run without pytest (scripts, ``sqleval`` commands, workers)."""
    glue = layer_of("plugin")
    problems = []
    for name, path in sorted(package_modules().items()):
        if not name or layer_of(name) == glue:
            continue
        for candidates, line in imported_names(path, name):
            if candidates[-1].split(".")[0] in PYTEST_PACKAGES:
                problems.append(f"{path.relative_to(ROOT.parent)}:{line}: {name} imports {candidates[-1]}")
    assert not problems, "pytest outside the pytest glue layer:\n" + "\n".join(problems)


@pytest.mark.parametrize(("graph", "expected"), [
    ({"a": {"b": 1}, "b": {"a": 2}, "c": {"a": 3}}, [["a", "b"]]),
    ({"a": {"b": 1}, "b": {"c": 1}, "c": {}}, []),
    ({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"d": 1}}, [["a", "b", "c"]]),
])
def test_cycle_finder_on_hand_made_graphs(graph, expected) -> None:
    assert [c for c in strongly_connected(graph) if len(c) > 1] == expected
