"""The house rules the README's Layout states, checked on the source (a rule a test does not
keep is a wish): the protocol core does no I/O, no module reaches into another package's
private module, files hold one job, a word means one thing, the tool call's method is spelled
once, and the test suite mirrors the package."""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

import mcpcli

ROOT = Path(mcpcli.__file__).parent
TESTS = Path(__file__).parent.parent
MODULES = {path: ".".join(path.relative_to(ROOT.parent).with_suffix("").parts) for path in ROOT.rglob("*.py")}

#: What the core may not import: it decides, its drivers do the I/O.
NO_IO = {"anyio", "asyncio", "socket", "selectors", "subprocess", "httpx", "threading", "ssl"}
#: The foundations the core stands on (they import nothing of ours but each other).
CORE_MAY_IMPORT = {"mcpcli", "mcpcli.errors", "mcpcli.text", "mcpcli.jsontext"}

#: The one file allowed past 600 lines, and why.
LONG_FILES = {
    "client/client.py": "the Client's public surface: every MCP operation a command can ask of a server, "
                        "one class (its other jobs are options, subscriptions, tasks and the core's flows)",
}
MAX_LINES = 600

#: Base names more than one module has, and why each is the same word for the same thing.
SHARED_NAMES = {
    "__init__.py": "packages",
    "__main__.py": "the two entry points: `python -m mcpcli` and the daemon's",
    "tasks.py": "MCP tasks at each layer: what one is (core), following one (client), the command (cli)",
    "subscriptions.py": "MCP subscriptions: what is asked (core), a client's streams, a server's subscribers",
    "backend.py": "the server's Backend seam (server) and two Backends (gateway, toolsfile)",
    "stdio.py": "stdio on each side: the client's transport, the server's front",
    "http.py": "HTTP on each side: the client's connection, the server's front",
    "tracing.py": "the trace context of each request on each side: those a client sends, those a server handles",
    "handlers.py": "the server's request handlers: the runtime's, and tasks' methods",
    "check.py": "checking: `mcp check` (cli, its rendering) and `serve --check`'s reaching of upstreams (gateway)",
    "doctor.py": "`mcp doctor`: its checks, the command, the rendering",
    "skill.py": "`mcp skill`: the SKILL.md text, the command",
    "servers.py": "configured servers: the command, the rendering",
    "sessions.py": "daemon sessions: the command side's library, the rendering",
    "snapshot.py": "a server's surface snapshot: its reading (surface), the command",
    "resources.py": "MCP resources: the command, a tools file's",
    "prompts.py": "MCP prompts: the command, a tools file's",
    "options.py": "what a unit is given: a client's, a gateway's",
    "routing.py": "which downstream a message is for: the relay's rules, the daemon's use of them",
    "listings.py": "tool/prompt/resource listings: the relay's cache, their rendering",
    "commands.py": "commands a unit answers: `mcp auth` (auth), the daemon's attached commands",
    "store.py": "where state is kept: sign-ins (auth), tasks (server)",
    "calls.py": "tool calls: the server's, `mcp check`'s read-only ones",
    "runner.py": "what runs things: a tools file's scripts, `mcp check`'s checks",
    "results.py": "tool results: a tools file's making them, the inspector's showing them",
    "report.py": "reports for CI: `mcp check`'s and `mcp test`'s",
    "schemas.py": "JSON Schemas read: `mcp check`'s lint, `mcp diff`'s comparison",
    "model.py": "a YAML file's model: tools.yaml, `mcp test` files",
    "load.py": "loading a YAML file: tools.yaml, `mcp test` files",
}

#: Test directories that are not one unit's: suites across units, fixtures, data.
CROSS_CUTTING = {
    "contracts": "every Transport and every Backend against one contract",
    "conformance": "the fixture and expected-failure files scripts/conformance reads",
    "fuzz": "Hypothesis properties of every parser of outside input",
    "fakes": "scriptable fake servers and a keyring, for faults",
    "peers": "the official SDK's servers the suites start",
    "authors": "the server authors' workflow end to end: check, snapshot, diff and test on two releases",
    "tracing": "trace context through every hop (client, gateway, serve, scripts) and the spans",
    "replicas": "a deployment: replicas sharing tasks through Redis behind nginx",
    "unit": "the rules the code and the tests keep: layers (the README's Layout), house rules, markers, a clone with nothing beside it",
}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    module = MODULES[path]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def test_the_core_does_no_io() -> None:
    """`mcpcli.core` imports the standard library (none of its I/O) and the foundations below it."""
    problems = []
    for path, module in MODULES.items():
        if not module.startswith("mcpcli.core"):
            continue
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "mcpcli":
                allowed = name == "mcpcli" or name.startswith(("mcpcli.core", "mcpcli.__")) or any(
                    name == f or name.startswith(f + ".") for f in CORE_MAY_IMPORT)
                if not allowed:
                    problems.append(f"{module} -> {name}")
            elif top in NO_IO or (top not in sys.stdlib_module_names and top != "__future__"):
                problems.append(f"{module} -> {name}")
    assert not problems, problems


def test_no_module_imports_another_package_s_private_module() -> None:
    problems = []
    for path, module in MODULES.items():
        own = module.rpartition(".")[0] if path.name != "__init__.py" else module
        for name in _imports(path):
            parts = name.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__") and i > 0:
                    owner = ".".join(parts[:i])
                    target = ".".join(parts[: i + 1])
                    if target in MODULES.values() and owner != own and not own.startswith(owner + "."):
                        problems.append(f"{module} -> {target}")
                    break
    assert not problems, problems


def test_files_hold_one_job() -> None:
    lengths = {str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
               for path in MODULES}
    long = {name: n for name, n in lengths.items() if n > MAX_LINES}
    assert set(long) <= set(LONG_FILES), f"split these by job, or list one with its reason: {long}"
    assert len(LONG_FILES) <= 1
    gone = set(LONG_FILES) - set(long)
    assert not gone, f"no longer past {MAX_LINES} lines, drop from LONG_FILES: {gone}"


def test_a_base_name_is_one_word_for_one_thing() -> None:
    names: dict[str, list[str]] = defaultdict(list)
    for path in MODULES:
        names[path.name].append(str(path.relative_to(ROOT)))
    shared = {name: paths for name, paths in names.items() if len(paths) > 1}
    unlisted = {name: paths for name, paths in shared.items() if name not in SHARED_NAMES}
    assert not unlisted, f"rename, or list with what the word means in each: {unlisted}"
    stale = set(SHARED_NAMES) - set(shared)
    assert not stale, f"no longer shared, drop from SHARED_NAMES: {stale}"


def test_session_and_task_each_mean_one_thing() -> None:
    """"session" is a daemon session, "task" an MCP task: no class of ours is a Session or a
    TaskSet (the JSON-RPC engine is `rpc.Peer`, its per-message tasks `jobs.JobSet`)."""
    classes = [node.name for path in MODULES for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.ClassDef)]
    assert not [c for c in classes if re.fullmatch(r"\w*Session|TaskSet", c) and c != "SessionInfo"], classes


def test_the_tool_call_method_is_spelled_once() -> None:
    """On either side, every module names `core.protocol.TOOLS_CALL`."""
    spelled = sorted(str(path.relative_to(ROOT)) for path in MODULES if '"tools/call"' in path.read_text())
    assert spelled == ["core/protocol.py"], spelled


def test_the_tests_mirror_the_package() -> None:
    """Each directory of tests is named for the unit it tests (a package or a module of
    mcpcli), or is a listed suite across units."""
    units = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    units |= {p.stem for p in ROOT.glob("*.py") if not p.name.startswith("_")}
    directories = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}
    strays = directories - units - set(CROSS_CUTTING)
    assert not strays, f"name a test directory for the unit it tests, or list it in CROSS_CUTTING: {strays}"
    assert not set(CROSS_CUTTING) - directories


def test_no_string_in_the_source_holds_a_lone_surrogate() -> None:
    """Python 3.13 refuses to import a module with a lone surrogate in a string constant (a
    docstring's "\\ud800" once broke every command there): write the escape, `\\\\ud800`."""
    found = [f"{MODULES[path]}:{node.lineno}"
             for path in MODULES for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and any(0xD800 <= ord(c) <= 0xDFFF for c in node.value)]
    assert not found
