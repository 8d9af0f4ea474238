"""Check a tools.yaml's `servers:` entries beyond what the loader can know alone.

The loader (`mcpcli.toolsfile.build_servers`) never reads the user's config, so
whether `target: github` names a configured server is decided here, through
`mcpcli.targets` as every other command resolves a TARGET (`mcp serve --check`).
With `connect=True` (`mcp serve --check --connect`) each upstream is also reached
(initialize and the lists, in parallel, each within its own timeout) and the
names the gateway would serve are compared: two upstreams, or an upstream and the
file's own tools or prompts, must not end up serving the same name after
prefixing and filtering. Every problem is a `Problem` at its entry's file:line:col.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcpcli.core import flags
from mcpcli.errors import McpCliError, RPCError, unwrap
from mcpcli.gateway.rules import tool_allowed, upstream_entry
from mcpcli.toolsfile.build_servers import MAX_TOOL_NAME
from mcpcli.toolsfile.model import Upstream
from mcpcli.toolsfile.yamlstrict import Problem

if TYPE_CHECKING:
    from mcpcli.client import Client, ClientOptions
    from mcpcli.config import Config, ServerEntry
    from mcpcli.connect import ConnectOptions

__all__ = ["DEFAULT_CHECK_TIMEOUT", "Reached", "check_upstreams"]

JSON = dict[str, Any]

#: How long reaching one upstream (handshake and lists) may take when its entry sets no timeout.
DEFAULT_CHECK_TIMEOUT = 30.0


@dataclass
class Reached:
    """What one upstream would serve through the gateway (after its filter and prefix)."""

    upstream: Upstream
    tools: list[str] = field(default_factory=list)
    #: `allow` globs that matched none of the upstream's tools (a prefix written into one?).
    idle_globs: list[str] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    resources: int = 0

    def summary(self) -> str:
        parts = [_count(len(self.tools), "tool")]
        if self.prompts:
            parts.append(_count(len(self.prompts), "prompt"))
        if self.resources:
            parts.append(_count(self.resources, "resource"))
        return ", ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def _problem(upstream: Upstream, message: str, hint: str | None = None) -> Problem:
    return Problem(upstream.file, upstream.line, upstream.col, f"server {upstream.name!r}: {message}", hint)


async def check_upstreams(
    upstreams: Sequence[Upstream],
    *,
    connect: bool,
    config: Config | None = None,
    local_tools: Iterable[str] = (),
    local_prompts: Iterable[str] = (),
    options: ConnectOptions | None = None,
    timeout: float = DEFAULT_CHECK_TIMEOUT,
    on_reached: Callable[[Reached], None] | None = None,
    on_warning: Callable[[Problem], None] | None = None,
    chain: tuple[str, ...] = (),
) -> list[Problem]:
    """The problems of `upstreams`: unknown targets; with `connect`, unreachable ones and collisions.

    `config` is the user's config (default: the usual file); `local_tools` and
    `local_prompts` are the names the tools.yaml serves itself. `on_reached` hears
    about each upstream that answered, in file order; `on_warning` about what an
    upstream did wrong without failing (a line that is not JSON-RPC...), at its entry.

    A tools.yaml upstream is checked all the way down, each problem in the file that has
    it: whether it loads, cycles and depth (`chain`: the real paths of the files above,
    outermost first), its own `servers:` (reached too, with `connect`).
    """
    if config is None:
        from mcpcli.config import Config

        config = Config()
    problems: list[Problem] = []
    entries: dict[int, ServerEntry] = {}
    for index, upstream in enumerate(upstreams):
        try:
            entries[index] = upstream_entry(upstream, config)
        except McpCliError as exc:
            problems.append(_problem(upstream, exc.message, exc.hint))
    nested: list[Problem] = []
    files: dict[int, Any] = {}  # the nested files as loaded by their check, to serve when reached
    for index in sorted(entries):
        path = entries[index].path
        if entries[index].transport != "yaml" or path is None:
            continue
        found, files[index] = await _check_nested(
            upstreams[index], path, chain, connect=connect, config=config, options=options, timeout=timeout,
            on_reached=on_reached, on_warning=on_warning)
        if found:  # said in the file that has them; reaching it would only say so again
            nested.extend(found)
            del entries[index]
    if not connect or not entries:
        return sorted(problems, key=lambda p: (p.line, p.col)) + nested
    reached = await _reach_all(upstreams, entries, files, options, timeout, problems, on_warning, config, chain)
    for index in sorted(reached):
        if on_reached is not None:
            on_reached(reached[index])
        if on_warning is not None:
            for glob in reached[index].idle_globs:
                on_warning(_problem(upstreams[index], f"tools.allow {glob!r} matches none of its tools",
                                    "globs match the upstream's own names, before the prefix"))
    problems.extend(_collisions([reached[i] for i in sorted(reached)], local_tools, local_prompts))
    return sorted(problems, key=lambda p: (p.line, p.col)) + nested


async def _check_nested(upstream: Upstream, path: str, chain: tuple[str, ...], *, connect: bool, config: Config,
                        options: ConnectOptions | None, timeout: float,
                        on_reached: Callable[[Reached], None] | None,
                        on_warning: Callable[[Problem], None] | None) -> tuple[list[Problem], Any]:
    """The problems of a tools.yaml upstream: its own (a cycle or too deep at the entry's
    `target:`; a file that does not load where it fails) and its `servers:`'s, recursively;
    and the file as loaded (None when it did not load), so reaching it loads it only once."""
    from mcpcli.gateway.nested import NestingError, nested_config
    from mcpcli.toolsfile.load import ToolsFileError

    try:
        nested, below = nested_config(path, chain)
    except ToolsFileError as exc:
        return list(exc.problems), None
    except NestingError as exc:
        return [Problem(upstream.file, upstream.target_line or upstream.line, upstream.target_col or upstream.col,
                        f"server {upstream.name!r}: target: {exc.message}", exc.hint)], None
    except McpCliError as exc:
        return [_problem(upstream, exc.message, exc.hint)], None
    if not nested.servers:
        return [], nested
    return await check_upstreams(
        nested.servers, connect=connect, config=config, local_tools=nested.tools, local_prompts=nested.prompts,
        options=options, timeout=timeout, on_reached=on_reached, on_warning=on_warning, chain=below,
    ), nested


async def _reach_all(upstreams: Sequence[Upstream], entries: dict[int, ServerEntry], files: dict[int, Any],
                     options: ConnectOptions | None, timeout: float,
                     problems: list[Problem],
                     on_warning: Callable[[Problem], None] | None,
                     config: Config, chain: tuple[str, ...]) -> dict[int, Reached]:
    """Reach every resolved upstream at once: a slow one never holds up the others' checks."""
    import anyio

    from mcpcli.connect import ConnectOptions

    if options is None:
        # Never sign in from a check: a stored sign-in is used, a missing one is reported.
        options = ConnectOptions(quiet=True, auth="stored-only")
    reached: dict[int, Reached] = {}

    async def one(index: int) -> None:
        upstream = upstreams[index]
        limit = upstream.timeout or timeout

        def warn(exc: Exception) -> None:
            if on_warning is not None:
                on_warning(_problem(upstream, _describe(exc)))

        try:
            with anyio.fail_after(limit):
                reached[index] = await _reach(upstream, entries[index], files.get(index), options, limit, warn,
                                              config, chain)
        except Exception as exc:  # one upstream's failure is a problem to report, whatever it is
            inner = unwrap(exc)
            if isinstance(inner, _ListFailed):
                problems.append(_problem(upstream, str(inner), inner.hint))
            elif isinstance(inner, TimeoutError):
                problems.append(_problem(upstream, f"no answer within {limit:g}s",
                                         "set a longer `timeout:` on the entry if it is only slow"))
            else:
                problems.append(_problem(upstream, f"cannot reach it: {_describe(inner)}",
                                         getattr(inner, "hint", None)))

    async with anyio.create_task_group() as tg:
        for index in entries:
            tg.start_soon(one, index)
    return reached


async def _reach(upstream: Upstream, entry: ServerEntry, loaded: Any, options: ConnectOptions, limit: float,
                 warn: Callable[[Exception], None], config: Config, chain: tuple[str, ...]) -> Reached:
    from mcpcli.client import ClientOptions
    from mcpcli.connect import connect

    # The whole check of an upstream is bounded by `limit` (fail_after); its requests never outlive it.
    client_options = ClientOptions(timeout=limit + 1, probe_timeout=min(flags.PROBE_TIMEOUT, limit), on_error=warn)
    if entry.transport == "yaml" and entry.path is not None:
        return await _reach_file(upstream, entry.path, loaded, options, client_options, limit, config, chain)
    # A check connects directly: it must not start the session daemon for a keepAlive server.
    entry = dataclasses.replace(entry, keep_alive=False)
    async with connect(entry, options, client_options) as client:
        return await _lists(upstream, client)


async def _reach_file(upstream: Upstream, path: str, loaded: Any, options: ConnectOptions,
                      client_options: ClientOptions, limit: float, config: Config, chain: tuple[str, ...]) -> Reached:
    """A tools.yaml upstream as the gateway would serve it: with its own `servers:` behind it
    (what they did wrong was said where they are, by the nested check). `loaded` is the file
    as that check loaded it (None: load it here)."""
    from mcpcli.client import Client
    from mcpcli.gateway.backend import GatewayBackend
    from mcpcli.gateway.nested import NestedTransport
    from mcpcli.gateway.options import GatewayOptions

    def quiet(line: str) -> None:
        pass

    gateway = GatewayOptions(connect=options, config=config, timeout=limit, list_wait=limit, log=quiet,
                             warn=quiet, chain=chain)
    transport = NestedTransport(path, gateway, gateway=GatewayBackend, config=loaded)
    async with Client(transport, client_options) as client:
        return await _lists(upstream, client)


async def _lists(upstream: Upstream, client: Client) -> Reached:
    """The names `upstream` would serve through the gateway, from its own lists."""
    found = Reached(upstream)
    if client.offers("tools"):
        names: list[str] = []
        for tool in await _listed(client.list_tools(), "tools/list", "tools"):
            name = tool.get("name")
            if not isinstance(name, str):
                continue
            names.append(name.casefold())
            if tool_allowed(name, tool.get("annotations"), upstream.tools):
                found.tools.append(upstream.prefix + name)
        found.idle_globs = [g for g in upstream.tools.allow if not fnmatch.filter(names, g.casefold())]
    if upstream.prompts and client.offers("prompts"):
        for prompt in await _listed(client.list_prompts(), "prompts/list", "prompts"):
            name = prompt.get("name")
            if isinstance(name, str):
                found.prompts.append(upstream.prefix + name)
    if upstream.resources and client.offers("resources"):
        found.resources = len(await _listed(client.list_resources(), "resources/list", "resources"))
        templates = client.list_resource_templates()
        found.resources += len(await _listed(templates, "resources/templates/list", "resourceTemplates"))
    return found


class _ListFailed(Exception):
    """A list the upstream declared failed: said with the method, not as "cannot reach it"."""

    def __init__(self, message: str, hint: str | None) -> None:
        super().__init__(message)
        self.hint = hint


async def _listed(listing: Awaitable[JSON], method: str, key: str) -> list[JSON]:

    try:
        result = await listing
    except RPCError as exc:
        section = method.split("/")[0]
        hint = None if section == "tools" else f"`{section}: false` on the entry leaves them out"
        raise _ListFailed(f"{method} failed: {exc.message}", hint) from None
    return [item for item in result.get(key) or [] if isinstance(item, dict)]


def _collisions(reached: list[Reached], local_tools: Iterable[str], local_prompts: Iterable[str]) -> list[Problem]:
    """Names served twice: each reported at the later upstream, naming the first owner."""
    problems: list[Problem] = []
    for kind, local in (("tool", local_tools), ("prompt", local_prompts)):
        # Compared without case: a client may not keep two names apart that differ only in case.
        owners: dict[str, str] = {name.casefold(): f"a {kind} of this file" for name in local}
        for item in reached:
            for name in item.tools if kind == "tool" else item.prompts:
                if kind == "tool" and len(name) > MAX_TOOL_NAME:
                    problems.append(_problem(item.upstream, f"tool {name!r}: with the prefix the name is "
                                             f"{len(name)} characters (at most {MAX_TOOL_NAME})"))
                owner = owners.get(name.casefold())
                if owner is not None:
                    problems.append(_problem(item.upstream, f"{kind} {name!r} is also {owner}"))
                    continue
                owners[name.casefold()] = f"served by server {item.upstream.name!r} (line {item.upstream.line})"
    return problems


def _describe(exc: BaseException) -> str:
    inner = unwrap(exc)
    if isinstance(inner, McpCliError):
        return inner.message
    if isinstance(inner, OSError) and inner.strerror:
        return inner.strerror
    return f"{type(inner).__name__}: {inner}" if str(inner) else type(inner).__name__
