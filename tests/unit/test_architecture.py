"""The direction of imports docs/architecture.md sets out, checked on the source (no
database, nothing imported): every module has a layer, imports point down, nothing imports
itself round a cycle, and no module reaches for another module's private names."""

from __future__ import annotations

import ast
import fnmatch
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memory_platform", "tenants", "memories", "console", "integrations")
# Within the actions layer, these never import each other (docs/architecture.md).
APART = (("memories.writes", "memories.retrieval"),)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
            if "migrations" not in path.parts}


@cache
def layers() -> list[tuple[int, list[str]]]:
    """The layer table of docs/architecture.md: (layer, module patterns), in its order."""
    table = []
    for line in (ROOT / "docs" / "architecture.md").read_text().splitlines():
        if match := re.match(r"\|\s*(\d+)\s*\|[^|]*\|(.*)\|\s*$", line):
            table.append((int(match[1]), re.findall(r"`([^`]+)`", match[2])))
    return table


@cache
def tree(module: str) -> ast.Module:
    return ast.parse(modules()[module].read_text())


def layer_of(module: str) -> int | None:
    for layer, patterns in layers():
        if any(fnmatch.fnmatchcase(module, pattern) for pattern in patterns):
            return layer
    return None


@cache
def imports() -> dict[str, dict[str, list[str]]]:
    """module -> {imported project module -> the names taken from it}, counting imports
    anywhere in a module (a function's lazy import is an import too)."""
    known = modules()
    found: dict[str, dict[str, list[str]]] = {}
    for module, path in known.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges: dict[str, list[str]] = {}
        for node in ast.walk(tree(module)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in known:
                        edges.setdefault(alias.name, [])
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                for alias in node.names:
                    if f"{base}.{alias.name}" in known:
                        edges.setdefault(f"{base}.{alias.name}", [])
                    elif base in known:
                        edges.setdefault(base, []).append(alias.name)
        edges.pop(module, None)
        found[module] = edges
    return found


def test_the_layer_table_is_read():
    assert {layer for layer, _ in layers()} == {0, 1, 2, 3, 4, 5, 6}


def test_every_module_has_a_layer():
    missing = [module for module in modules() if layer_of(module) is None]
    assert not missing, f"add these to the layer table of docs/architecture.md: {missing}"


def test_imports_point_down():
    upward = [f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
              for module, edges in imports().items() for target in edges
              if layer_of(target) is not None and layer_of(module) is not None and layer_of(target) > layer_of(module)]
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize(("one", "other"), APART)
def test_writes_and_retrieval_stay_apart(one, other):
    def within(module, package):
        return module == package or module.startswith(package + ".")

    crossing = [f"{module} imports {target}" for module, edges in imports().items() for target in edges
                if (within(module, one) and within(target, other)) or (within(module, other) and within(target, one))]
    assert not crossing, "\n".join(crossing)


def test_no_import_cycle():
    graph = {module: set(edges) for module, edges in imports().items()}
    cycles, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(module):  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    assert not cycles, f"modules that import each other: {cycles}"


def test_no_module_takes_another_modules_private_names():
    taken = [f"{module} imports {name} from {target}" for module, edges in imports().items()
             for target, names in edges.items() for name in names if name.startswith("_")]
    used = []
    for module in modules():
        aliases = {}
        for node in ast.walk(tree(module)):
            if isinstance(node, ast.Import):
                aliases |= {(alias.asname or alias.name): alias.name for alias in node.names if alias.name in modules()}
            elif isinstance(node, ast.ImportFrom) and node.module:
                aliases |= {(alias.asname or alias.name): f"{node.module}.{alias.name}" for alias in node.names
                            if f"{node.module}.{alias.name}" in modules()}
        for node in ast.walk(tree(module)):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr.startswith("_")
                    and not node.attr.startswith("__") and node.value.id in aliases):
                used.append(f"{module} uses {aliases[node.value.id]}.{node.attr}")
    assert not taken + used, "\n".join(taken + used)


# The doors of agents: each parses, calls one use case (memories.use_cases) with the Caller its
# authentication built, and shapes the answer (docs/architecture.md, "Doors").
DOORS = ("memories.api.views", "memories.api.retrieval_views", "integrations.langgraph_store.views",
         "integrations.mcp.boundary", "integrations.mcp.http", "integrations.mcp.tools", "integrations.mem0.views")
# What a door may not reach past the use cases for: the services, the reads, and the reach
# checks (a door takes memories.access's Caller, a type, and nothing else of it).
BEHIND_THE_USE_CASES = ("memories.reads", "memories.writes", "memories.retrieval", "memories.lifecycle",
                        "memories.jobs")


def test_doors_call_the_use_cases_and_never_check_reach():
    def behind(target):
        return any(target == package or target.startswith(package + ".") for package in BEHIND_THE_USE_CASES)

    assert set(DOORS) <= set(modules())
    crossing = [f"{door} imports {target}" for door in DOORS for target in imports()[door] if behind(target)]
    crossing += [f"{door} imports {name} from memories.access" for door in DOORS
                 for name in imports()[door].get("memories.access", []) if name != "Caller"]
    assert not crossing, "\n".join(crossing)
    reach_checks = [f"{door} calls {node.attr}" for door in DOORS for node in ast.walk(tree(door))
                    if isinstance(node, ast.Attribute) and node.attr in ("check_write", "check_writable", "covers",
                                                                         "memories", "reach")]
    assert not reach_checks, "\n".join(reach_checks)
