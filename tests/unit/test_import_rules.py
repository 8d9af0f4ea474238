"""The layering rules of the package, checked on the import graph (not left to a comment).

Every import counts: at module level, inside functions (the lazy imports that
keep start-up fast) and under `TYPE_CHECKING`, because each is a dependency a
reader has to follow. A unit is a subpackage (`mcpcli.transports`) or a
top-level module (`mcpcli.connect`). The rules are the ones the README's Layout
paragraph states.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

import mcpcli

ROOT = Path(mcpcli.__file__).parent

#: The foundations: any unit may import them; they import only each other.
FOUNDATIONS = frozenset({
    # The protocol core: what goes on the wire, decided without I/O (the standard library only):
    # the exchange's flows, the request clock, the client flags as data (`core.flags`), the
    # local line-JSON protocols (`core.localrpc`: the daemon's control protocol, scripts'
    # side channel). It stands on the foundations below (errors, jsonrpc...), which do not
    # import it.
    "mcpcli.core",
    "mcpcli", "mcpcli.errors", "mcpcli.text", "mcpcli.core.jsonrpc",
    # Strict JSON text in and out, on `json` alone: jsonrpc's and the local protocols'.
    "mcpcli.jsontext", "mcpcli.core.protocol", "mcpcli.core.wire",
    "mcpcli.validation", "mcpcli.args", "mcpcli.sampling",
    # The client's handshake, sans I/O: shared by `client` and the one-shot fast path.
    "mcpcli.core.handshake",
    # The session daemon's run directory: the standard library only, shared by the daemon,
    # the command side, its fast path and `doctor`.
    "mcpcli.rundir",
    # The blocking side of the local line protocol (`core.localrpc`): one message out, lines
    # in, on a socket the caller opened (the daemon's command side and fast path, `mcp script`).
    "mcpcli.localsocket",
    # Jobs: the cheap per-message tasks on anyio (a plain event-loop task in its own cancel
    # scope), shared by the JSON-RPC peer (requests) and the server runtime (2026 calls).
    "mcpcli.jobs",
    # Files written where someone else may have been first (private directories, no-follow
    # opens, locked edits): the standard library only, below the daemon's run directory.
    "mcpcli.files",
    # `--jq`: the jq module's filter and its error line, shared by `output` and the CLI's
    # fast paths.
    "mcpcli.jqfilter",
    # JUnit XML for CI (`mcp check --junit`, `mcp test --junit`): the standard library only.
    "mcpcli.junit",
    # W3C trace context (the standard library only), and the OpenTelemetry spans of
    # requests (the optional `otel` extra, imported only when the OTEL_* variables ask).
    "mcpcli.core.tracecontext", "mcpcli.spans",
})

#: What each unit may import besides the foundations: the README's Layout section, as data.
#: A unit missing here (a new module or package) fails the test until its place is decided.
MAY_IMPORT: dict[str, frozenset[str]] = {
    **{unit: frozenset() for unit in FOUNDATIONS},
    "mcpcli.config": frozenset(),
    # Remembered consent to run a project file's servers (`mcp servers trust`).
    "mcpcli.trust": frozenset({"mcpcli.config"}),
    # Other clients' file formats and entry dialects, read and translated (pure text to data).
    "mcpcli.config_formats": frozenset(),
    "mcpcli.other_clients": frozenset({"mcpcli.config", "mcpcli.config_formats", "mcpcli.trust"}),
    # Minimal text edits of JSON with comments: the standard library only.
    "mcpcli.jsonedit": frozenset(),
    # Writing one server into another client's file (`servers install`).
    "mcpcli.install": frozenset({"mcpcli.config", "mcpcli.config_formats", "mcpcli.other_clients", "mcpcli.jsonedit"}),
    "mcpcli.cache": frozenset({"mcpcli.config"}),
    # A transport is handed everything (a launch or URL, headers, an authenticator, limits).
    "mcpcli.transports": frozenset(),
    # The JSON-RPC engine serves both sides and knows neither.
    "mcpcli.rpc": frozenset({"mcpcli.transports"}),
    # The client (with its subscriptions and the tasks it follows) drives the protocol core.
    "mcpcli.client": frozenset({"mcpcli.rpc", "mcpcli.transports", "mcpcli.cache"}),
    "mcpcli.server": frozenset({"mcpcli.rpc", "mcpcli.transports"}),
    # OAuth: `rpc` only to pause request clocks while a person signs in.
    "mcpcli.auth": frozenset({"mcpcli.rpc", "mcpcli.transports", "mcpcli.config"}),
    # tools.yaml builds a Backend for the runtime and serves it in-process.
    "mcpcli.toolsfile": frozenset({"mcpcli.server", "mcpcli.rpc", "mcpcli.transports"}),
    # TARGET to entry to launch; light enough to run before the client loads.
    "mcpcli.targets": frozenset({"mcpcli.config", "mcpcli.other_clients", "mcpcli.trust", "mcpcli.transports"}),
    # A configured server's headersHelper (a command printing headers): foundations alone.
    "mcpcli.headers_helper": frozenset(),
    # The one place that knows config entries, CLI options and auth together.
    "mcpcli.connect": frozenset({
        "mcpcli.config", "mcpcli.targets", "mcpcli.transports", "mcpcli.rpc", "mcpcli.client",
        "mcpcli.auth", "mcpcli.toolsfile", "mcpcli.sessions", "mcpcli.headers_helper",
    }),
    # `mcp doctor`'s checks: the config, other clients' files, the daemon, the token store.
    "mcpcli.doctor": frozenset({"mcpcli.config", "mcpcli.other_clients", "mcpcli.sessions", "mcpcli.auth"}),
    # Tools a server hides for want of a capability: a second connection, through `connect`.
    "mcpcli.hidden_tools": frozenset({"mcpcli.connect", "mcpcli.client", "mcpcli.config"}),
    # Output and rendering know nothing of click or the CLI's App.
    "mcpcli.output": frozenset(),
    "mcpcli.render": frozenset({"mcpcli.output"}),
    # One upstream `Client` served to many downstreams, for the daemon and the gateway alike:
    # the supervised upstream, which downstream a message is for, the listings cache.
    "mcpcli.relay": frozenset({"mcpcli.client", "mcpcli.rpc"}),
    # The session daemon holds each session's `Client` through `connect` and relays commands
    # onto it; never the CLI, the server runtime, tools.yaml or auth (it signs in via connect).
    "mcpcli.daemon": frozenset({
        "mcpcli.connect", "mcpcli.client", "mcpcli.config", "mcpcli.rpc", "mcpcli.transports",
        "mcpcli.relay",
    }),
    # The gateway (`mcp serve --proxy`, `servers:` in tools.yaml): upstreams reached as any
    # command reaches a server, served through the server runtime; never the CLI.
    "mcpcli.gateway": frozenset({
        "mcpcli.client", "mcpcli.connect", "mcpcli.targets", "mcpcli.config", "mcpcli.server",
        "mcpcli.toolsfile", "mcpcli.rpc", "mcpcli.transports", "mcpcli.relay",
    }),
    # The command side of sessions runs before anything heavy: config and the daemon's
    # stdlib-only protocol and run directory (foundations), nothing else.
    "mcpcli.sessions": frozenset({"mcpcli.config"}),
    # Agent-facing helpers: which tools match across servers (reading cached lists; the
    # caller connects), and the SKILL.md for a server's tool list (pure text).
    "mcpcli.toolgrep": frozenset({"mcpcli.cache"}),
    "mcpcli.skill": frozenset(),
    # `--record`: a session tracer writing NDJSON, and a description of the entry recorded.
    "mcpcli.record": frozenset({"mcpcli.config"}),
    # `mcp check`: checks run on a connected `Client` it is handed (how to connect is the
    # caller's), findings and reports; never the CLI, targets or transports.
    "mcpcli.check": frozenset({"mcpcli.client"}),
    # For server authors: a server's surface collected, written canonically and compared
    # (`mcp snapshot`, `mcp diff`), on foundations alone; and test files (`mcp test`): the
    # tools.yaml YAML reader, what is volatile in an answer, jq's messages, what a TARGET
    # looks like; connecting is left to the caller.
    "mcpcli.surface": frozenset(),
    "mcpcli.testfile": frozenset({"mcpcli.toolsfile", "mcpcli.surface", "mcpcli.targets"}),
    # `mcp inspect`'s Textual app: handed a connected `Client` (the CLI connects), it shows
    # results with `render`'s renderings and follows tasks; never the CLI or `connect`.
    "mcpcli.inspector": frozenset({"mcpcli.client", "mcpcli.rpc", "mcpcli.render"}),
}
#: Units that may import anything (nothing imports them).
TOP = frozenset({"mcpcli.cli", "mcpcli.__main__"})

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
    """`mcpcli.transports.http` -> `mcpcli.transports`; `mcpcli.client` stays itself: a unit
    is always a top-level package or module, so the circle test below is about them."""
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
    """No two top-level packages or modules import each other, however indirectly (a lazy
    import counts): each layer stands on the ones below it only."""
    graph, why = _unit_graph()
    problems = []
    for component in _cycles(graph):
        edges = [e for a in component for b in component for e in why.get((a, b), [])]
        problems.append(f"{component}: " + "; ".join(sorted(edges)))
    assert not problems, "\n".join(problems)


#: Import cycles among the modules of one package that are known and explained; they may
#: only shrink (a cycle must lie inside one of these sets).
KNOWN_MODULE_CYCLES: dict[str, tuple[frozenset[str], ...]] = {
    # The App hands each command's helpers (notifications, progress, elicitation) to the
    # connection options, and the helpers type the App they print through: type-only edges.
    "mcpcli.cli": (frozenset({
        "mcpcli.cli._app", "mcpcli.cli._connection", "mcpcli.cli._elicit", "mcpcli.cli._features",
        "mcpcli.cli._notify", "mcpcli.cli._progress",
    }),),
    # The sign-in grants and the flow that picks one: `signin.Flow` runs `authcode`,
    # `device` and `machine`, which type the flow they report to.
    "mcpcli.auth": (frozenset({"mcpcli.auth.authcode", "mcpcli.auth.device", "mcpcli.auth.machine",
                               "mcpcli.auth.signin"}),),
    # httpx and the plain HTTP/1.1 client share one response interface; `http_io` picks one.
    "mcpcli.transports": (frozenset({"mcpcli.transports.http_io", "mcpcli.transports._http1"}),),
}

PACKAGES = sorted(m for m, path in MODULES.items() if path.name == "__init__.py" and m != "mcpcli")


@pytest.mark.parametrize("package", PACKAGES)
def test_the_modules_of_a_package_form_no_cycle(package: str) -> None:
    """Inside a package, too, imports go one way. The server's runtime helpers (calls,
    handlers, mrtr, tasks.*) share a `Runtime` that `core.Server` creates, and the HTTP
    routes are handed an `HttpContext` (or the `Sessions` table), never the app that
    imports them; the few known exceptions elsewhere are listed and explained above."""
    inside = {m for m in MODULES if m == package or m.startswith(package + ".")}
    graph = {m: {t for t in _imports(m) if t in inside} for m in inside}
    allowed = KNOWN_MODULE_CYCLES.get(package, ())
    cycles = _cycles(graph, inside)
    problems = [
        "a cycle among " + ", ".join(component)
        for component in cycles
        if not any(set(component) <= known for known in allowed)
    ]
    problems += [
        f"no longer a cycle, drop it from KNOWN_MODULE_CYCLES: {sorted(known)}"
        for known in allowed
        if not any(set(component) & known for component in cycles)
    ]
    assert not problems, "\n".join(problems)


def test_each_unit_imports_only_what_it_may() -> None:
    graph, why = _unit_graph()
    units = {unit_of(m) for m in MODULES}
    unplaced = sorted(units - set(MAY_IMPORT) - TOP)
    assert not unplaced, f"give these a place in MAY_IMPORT (and the README's Layout): {unplaced}"
    problems = [
        edge
        for unit in sorted(units - TOP)
        for target in sorted(graph.get(unit, ()))
        if target not in FOUNDATIONS | MAY_IMPORT[unit]
        for edge in why[unit, target]
    ]
    assert not problems, "\n".join(problems)


def _third_party(module: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_output_and_render_know_nothing_of_click() -> None:
    users = sorted(
        m for m in MODULES
        if unit_of(m) in ("mcpcli.output", "mcpcli.render") and "click" in _third_party(m)
    )
    assert users == []


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
    assert importers == ["mcpcli.transports.http_io"]


def test_the_checker_sees_lazy_and_type_only_imports() -> None:
    """The rules would be hollow if function-level imports were missed."""
    assert "mcpcli.transports.spawn" in _imports("mcpcli.cli")  # `main()` imports it lazily


def test_the_daemon_s_protocol_and_run_directory_live_outside_it() -> None:
    """Everything that finds or speaks to the daemon without being it (`sessions`,
    `transports/daemon.py`, the fast path, `doctor`) imports foundations (`core.localrpc`,
    `rundir`), never the daemon package: the daemon imports `connect`, and through it the
    transports, so anything of the daemon below them would be a circle."""
    problems = [
        f"{module} -> {target}"
        for module in MODULES
        if unit_of(module) not in ("mcpcli.daemon", "mcpcli.cli", "mcpcli.__main__")
        for target in sorted(_imports(module))
        if unit_of(target) == "mcpcli.daemon"
    ]
    assert not problems, "\n".join(problems)


def test_the_fast_paths_and_click_read_one_table_of_flags() -> None:
    """The fast paths' argv reader and the click options come from `core.flags`: neither
    `cli/fast.py` nor `cli/oneshot.py` declares a flag or a default of its own."""
    for module in ("mcpcli.cli.fast", "mcpcli.cli.oneshot"):
        source = MODULES[module].read_text(encoding="utf-8")
        assert "mcpcli.core.flags" in _imports(module) or "mcpcli.core" in _imports(module), module
        for copied in ('"--timeout"', '"--max-timeout"', "60.0", "3600.0", "5.0"):
            assert copied not in source, (module, copied)


def test_the_readme_layout_names_every_unit() -> None:
    """The README's Layout is the map: each unit this table places is named there (a new
    unit gets its line in both), and each module path it names exists."""
    readme = (ROOT.parent / "README.md").read_text(encoding="utf-8")
    start = readme.index("### Layout\n")
    layout = readme[start : readme.index("\n### ", start + 1)]
    named = set(re.findall(r"`([\w./]+)`", layout))
    missing = sorted(unit for unit in set(MAY_IMPORT) - {"mcpcli"}
                     if not {unit.rpartition(".")[2], unit.rpartition(".")[2] + "/",
                             unit.removeprefix("mcpcli.")} & named)
    assert not missing, f"name these in the README's Layout: {missing}"
    paths = sorted(p for p in named if p.endswith(".py") and "/" in p and not p.startswith(("tests/", "scripts/")))
    absent = [p for p in paths if not (ROOT / p).exists()]
    moved = re.search(r"\*\*What moved where\*\*.*?\n\n", layout, re.S)
    old = set(re.findall(r"`([\w./]+)`", moved.group(0))) if moved else set()
    assert not [p for p in absent if p not in old], f"the README's Layout names modules that do not exist: {absent}"
