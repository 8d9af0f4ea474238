"""`mcp serve FILE` when FILE has `servers:`: check them, and serve them with the file's own content.

Kept out of `mcpcli.cli.serve` so that the command stays a few lines: it loads the
file, calls `check_file_servers` (target names always; with `--check --connect`,
each upstream too) and serves what `served_backend` yields. A file without
`servers:` is served by its `ToolsBackend` alone, exactly as before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from mcpcli.gateway.check import Reached, check_upstreams
from mcpcli.gateway.nested import has_own_content

if TYPE_CHECKING:
    from mcpcli.config import Config
    from mcpcli.gateway.nested import NestedTransport
    from mcpcli.gateway.options import GatewayOptions
    from mcpcli.server.backend import Backend
    from mcpcli.toolsfile.backend import ToolsBackend
    from mcpcli.toolsfile.model import ToolsFile
    from mcpcli.toolsfile.yamlstrict import Problem

__all__ = ["check_file_servers", "file_transport", "has_own_content", "served_backend"]


async def check_file_servers(
    config: ToolsFile,
    *,
    connect: bool,
    user_config: Config | None = None,
    on_reached: Callable[[Reached], None] | None = None,
    on_warning: Callable[[Problem], None] | None = None,
) -> list[Problem]:
    """The problems of a loaded file's `servers:` (unknown targets; with `connect`, the rest)."""
    import os

    return await check_upstreams(
        config.servers, connect=connect, config=user_config,
        local_tools=config.tools, local_prompts=config.prompts, on_reached=on_reached,
        on_warning=on_warning, chain=(os.path.realpath(config.path),),
    )


@asynccontextmanager
async def served_backend(
    local: ToolsBackend, *, watch: bool, options: GatewayOptions | None = None,
) -> AsyncIterator[Backend]:
    """The backend to serve: `local` alone, or a gateway over the file's upstreams and `local`.

    With --watch the local backend is always merged in, so tools added by a reload
    appear; without it, a file of upstreams only has no local part. `options` are the
    gateway's (how upstreams are reached and reported; `eager` connects them at start).
    """
    config = local.config
    if not config.servers:
        yield local
        return
    import dataclasses
    import os

    from mcpcli.gateway.backend import GatewayBackend
    from mcpcli.gateway.options import GatewayOptions

    # The served file heads the chain: a nested file that includes it again is a cycle.
    options = dataclasses.replace(options or GatewayOptions(), chain=(os.path.realpath(config.path),))
    merged = local if (watch or has_own_content(config)) else None
    async with GatewayBackend(config.servers, local=merged, options=options, identity=config.server) as backend:
        yield backend


def file_transport(path: str, options: GatewayOptions) -> NestedTransport:
    """A tools.yaml target served in-process for a command (`mcp tools list team.yaml`), its
    `servers:` behind it as `mcp serve` would serve them. The file is loaded now, so an
    invalid one fails before anything connects (`ToolsFileError`, exit status 2)."""
    from mcpcli.gateway.backend import GatewayBackend
    from mcpcli.gateway.nested import NestedTransport, nested_config

    config, _chain = nested_config(path, options.chain)
    return NestedTransport(path, options, gateway=GatewayBackend, config=config)
