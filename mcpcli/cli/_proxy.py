"""`mcp serve --proxy TARGET`: the flags become an `Upstream`, served by a `GatewayBackend`."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcpcli.errors import UsageError

if TYPE_CHECKING:
    from mcpcli.cli._app import App
    from mcpcli.gateway import GatewayOptions
    from mcpcli.toolsfile.model import Upstream

__all__ = ["check_proxy_flags", "gateway_options", "proxy_upstream", "serve_gateway", "stdin_reserved"]


def check_proxy_flags(proxy: str | None, command: Sequence[str], *, file: str | None, flags: dict[str, Any]) -> None:
    """The gateway flags need --proxy; --proxy takes no FILE and none of FILE's flags."""
    file_flags = ("--check", "--watch", "--example")
    if proxy is None:
        used = [name for name, value in flags.items() if value and name not in ("--eager", *file_flags)]
        if used:
            raise UsageError(f"{', '.join(used)} apply to --proxy only",
                             hint="mcp serve --proxy TARGET --deny-tool 'delete_*'")
        if command:
            raise UsageError("a server command after -- needs --proxy",
                             hint="mcp serve --proxy -- npx -y @modelcontextprotocol/server-everything")
        return
    if file is not None:
        raise UsageError("give FILE or --proxy TARGET, not both")
    if any(flags.get(name) for name in file_flags):
        raise UsageError("--check, --watch and --example apply to FILE, not to --proxy")
    if proxy and command:
        raise UsageError("give --proxy TARGET or a server command after --, not both")
    if not proxy and not command:
        raise UsageError("--proxy needs a TARGET, or a server command after --",
                         hint="mcp serve --proxy https://mcp.example.com/mcp")


def _upstream_name(proxy: str, command: Sequence[str]) -> str:
    """A short name for messages: the host of a URL, a file's or command's base name."""
    if command:
        return os.path.basename(command[0]) or command[0]
    if proxy.startswith(("http://", "https://")):
        return urlsplit(proxy).hostname or proxy
    if proxy.endswith((".yaml", ".yml")):
        return os.path.splitext(os.path.basename(proxy))[0] or proxy
    return proxy


def proxy_upstream(
    proxy: str,
    command: Sequence[str],
    *,
    allow: Sequence[str],
    deny: Sequence[str],
    prefix: str,
    read_only: bool,
) -> Upstream:
    """The one upstream of `--proxy`: served as it is, unless filtered or prefixed."""
    from mcpcli.toolsfile.model import ToolFilter, Upstream

    rules = ToolFilter(allow=tuple(allow), deny=tuple(deny), read_only=read_only)
    name = _upstream_name(proxy, command)
    if command:
        return Upstream(name=name, command=tuple(command), prefix=prefix, tools=rules)
    return Upstream(name=name, target=proxy, prefix=prefix, tools=rules)


def gateway_options(app: App, *, eager: bool, quiet: bool, stdio: bool) -> GatewayOptions:
    """The `GatewayOptions` of `mcp serve` (--proxy, or a FILE with `servers:`).

    Sign-in is interactive only with a terminal, as for the commands; serving stdio,
    stdin is the MCP channel, so only a terminal on stderr makes it interactive. A stdio
    upstream's era probe waits `MCP_PROBE_TIMEOUT`, as the commands' does.
    """
    from mcpcli.cli._connection import probe_timeout_from_env
    from mcpcli.connect import ConnectOptions

    probe_timeout = probe_timeout_from_env()
    from mcpcli.gateway import GatewayOptions

    def warn(line: str) -> None:
        app.stderr.write(f"{app.prog} serve: {line}\n")
        app.stderr.flush()

    connect = ConnectOptions(
        quiet=quiet,
        token_store=os.environ.get("MCP_TOKEN_STORE") or None,
        auth="interactive" if app.stderr_tty or (app.stdin_tty and not stdio) else "non-interactive",
    )
    return GatewayOptions(eager=eager, connect=connect, config=app.config(), probe_timeout=probe_timeout,
                          log=None if quiet else warn, warn=warn)


@contextmanager
def stdin_reserved(stdio: bool) -> Iterator[None]:
    """Serving stdio, stdin is the MCP channel: nothing else may read it, so a sign-in's
    "paste the redirect address" prompt reads /dev/null (the browser's redirect still
    completes it)."""
    import sys

    if not stdio:
        yield
        return
    saved = sys.stdin
    with open(os.devnull, encoding="utf-8") as nothing:
        sys.stdin = nothing
        try:
            yield
        finally:
            sys.stdin = saved


def serve_gateway(
    app: App,
    upstreams: Sequence[Upstream],
    serve: Callable[[Any], Awaitable[None]],
    *,
    eager: bool,
    quiet: bool,
    stdio: bool,
    local: Any = None,
) -> None:
    """Run a gateway to `upstreams` until the server `serve(server)` ends; every
    upstream is stopped on the way out."""
    options = gateway_options(app, eager=eager, quiet=quiet, stdio=stdio)

    async def run() -> None:
        from mcpcli.gateway import GatewayBackend
        from mcpcli.server import Server

        async with GatewayBackend(upstreams, local=local, options=options) as backend:
            await serve(Server(backend))

    with stdin_reserved(stdio):
        app.run(run)
