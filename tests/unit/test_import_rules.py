"""The layering rules of the package, checked on the import graph (not left to a comment).

Every import counts: at module level, inside functions (the lazy imports that
keep start-up fast) and under `TYPE_CHECKING`, because each is a dependency a
reader has to follow. A unit is a subpackage (`mcpcli.transports`) or a
top-level module (`mcpcli.client`). The rules are the ones the README's Layout
paragraph states.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import mcpcli

ROOT = Path(mcpcli.__file__).parent

#: What a unit must never import (prefix match on unit names).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    # A transport is handed everything (URL, headers, an authenticator, limits) by `connect`.
    "mcpcli.transports": (
        "mcpcli.auth", "mcpcli.cli", "mcpcli.connect", "mcpcli.client", "mcpcli.config",
        "mcpcli.server", "mcpcli.session",
    ),
    # The JSON-RPC engine serves both sides and knows neither.
    "mcpcli.session": ("mcpcli.client", "mcpcli.server", "mcpcli.auth", "mcpcli.connect"),
    "mcpcli.server": ("mcpcli.client", "mcpcli.connect", "mcpcli.auth", "mcpcli.cli"),
    "mcpcli.client": ("mcpcli.connect", "mcpcli.auth", "mcpcli.server", "mcpcli.cli"),
    "mcpcli.auth": ("mcpcli.connect", "mcpcli.client", "mcpcli.cli"),
    # The tools.yaml server builds a Backend for the runtime; the CLI and `connect` sit above it.
    "mcpcli.toolsfile": ("mcpcli.client", "mcpcli.connect", "mcpcli.auth", "mcpcli.cli"),
    # Servers configured in other clients: read by `connect` and the CLI, never the reverse.
    "mcpcli.other_clients": ("mcpcli.client", "mcpcli.connect", "mcpcli.cli"),
    # Output and rendering know nothing of click or the CLI's App.
    "mcpcli.output": ("mcpcli.cli",),
    "mcpcli.render": ("mcpcli.cli",),
    # The session daemon holds connections through the library (`connect`, `client`); the CLI
    # sits above it (test_the_library_never_imports_the_cli: "mcpcli.cli" here would also
    # match "mcpcli.client", the prefix rule). Its `protocol` is stdlib only (tests/daemon).
    "mcpcli.daemon": ("mcpcli.server", "mcpcli.toolsfile", "mcpcli.auth"),
    # The daemon's protocol and run directory are foundations both sides (and the fast
    # path) use: the standard library only.
    "mcpcli.daemon.protocol": ("mcpcli",),
    "mcpcli.daemon.paths": ("mcpcli",),
    # The command side of sessions runs before anything heavy: no client, transports or CLI.
    "mcpcli.sessions": (
        "mcpcli.auth", "mcpcli.cli", "mcpcli.client", "mcpcli.connect", "mcpcli.output",
        "mcpcli.render", "mcpcli.server", "mcpcli.session", "mcpcli.toolsfile", "mcpcli.transports",
    ),
}

#: Modules of a package that are foundations of their own, below the rest of it: the
#: daemon's protocol and run directory, which the command side's transport imports while
#: the daemon itself imports `connect` (and through it the transports).
OWN_UNITS = frozenset({"mcpcli.daemon.protocol", "mcpcli.daemon.paths"})


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module an import refers to (`from mcpcli.x import y` may name a function)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> set[str]:
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            names = [f"{base}.{alias.name}" for alias in node.names]
        for name in names:
            target = _resolve(name) if name.startswith("mcpcli") else None
            if target is not None and target != module:
                found.add(target)
    return found


def unit_of(module: str) -> str:
    """`mcpcli.transports.http` -> `mcpcli.transports`; `mcpcli.client` stays itself."""
    if module in OWN_UNITS:
        return module
    parts = module.split(".")
    if len(parts) <= 2:
        return module
    return ".".join(parts[:2])


def _unit_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], list[str]]]:
    graph: dict[str, set[str]] = defaultdict(set)
    why: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module in MODULES:
        for target in _imports(module):
            a, b = unit_of(module), unit_of(target)
            if a != b:
                graph[a].add(b)
                why[a, b].append(f"{module} -> {target}")
    return graph, why


def _cycles(graph: dict[str, set[str]], nodes: set[str] | None = None) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan); nodes: units by default."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(nodes if nodes is not None else {unit_of(m) for m in MODULES}):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_spans_two_units() -> None:
    graph, why = _unit_graph()
    problems = []
    for component in _cycles(graph):
        edges = [e for a in component for b in component for e in why.get((a, b), [])]
        problems.append(f"{component}: " + "; ".join(sorted(edges)))
    assert not problems, "\n".join(problems)


#: Import cycles among the modules of one package that are known and explained; they may
#: only shrink (a cycle must lie inside one of these sets).
KNOWN_MODULE_CYCLES: dict[str, tuple[frozenset[str], ...]] = {}


def test_the_server_modules_form_no_cycle() -> None:
    """The runtime's helpers (calls, handlers, mrtr, tasks.*) share a `Runtime` that
    `core.Server` creates; none of them imports `core` or each other in a circle. The
    HTTP front likewise: the routes are handed an `HttpContext` (or the `Sessions`
    table), never the app (`http_app`) that imports them."""
    package = "mcpcli.server"
    inside = {m for m in MODULES if m == package or m.startswith(package + ".")}
    graph = {m: {t for t in _imports(m) if t in inside} for m in inside}
    allowed = KNOWN_MODULE_CYCLES.get(package, ())
    problems = [
        "a cycle among " + ", ".join(component)
        for component in _cycles(graph, inside)
        if not any(set(component) <= known for known in allowed)
    ]
    assert not problems, "\n".join(problems)


def test_forbidden_imports() -> None:
    graph, why = _unit_graph()
    problems = [
        edge
        for unit, banned in FORBIDDEN.items()
        for target in sorted(graph.get(unit, ()))
        if target.startswith(banned)
        for edge in why[unit, target]
    ]
    assert not problems, "\n".join(problems)


def test_the_library_never_imports_the_cli() -> None:
    graph, why = _unit_graph()
    problems = [
        edge
        for unit in sorted(graph)
        if unit not in ("mcpcli.cli", "mcpcli.__main__") and "mcpcli.cli" in graph[unit]
        for edge in why[unit, "mcpcli.cli"]
    ]
    assert not problems, "\n".join(problems)


def test_httpx_is_imported_in_one_place() -> None:
    importers = sorted(
        module
        for module, path in MODULES.items()
        if any(
            (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "httpx" for a in node.names))
            or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "httpx")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        )
    )
    assert importers == ["mcpcli.transports._http"]


def test_the_checker_sees_lazy_and_type_only_imports() -> None:
    """The rules would be hollow if function-level imports were missed."""
    assert "mcpcli.transports._spawn" in _imports("mcpcli.cli")  # `main()` imports it lazily


def test_transports_reach_the_daemon_only_through_its_protocol_and_paths() -> None:
    """`DaemonTransport` speaks the control protocol; the daemon's server (which imports
    `connect`, and so the transports) stays out of reach."""
    problems = [
        f"{module} -> {target}"
        for module in MODULES
        if unit_of(module) == "mcpcli.transports"
        for target in sorted(_imports(module))
        if target.startswith("mcpcli.daemon") and target not in OWN_UNITS | {"mcpcli.daemon"}
    ]
    assert not problems, "\n".join(problems)
