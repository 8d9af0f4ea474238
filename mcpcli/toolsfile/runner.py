"""Run a tools.yaml command for one request: concurrency slots, environment, side channel.

Tool calls, command resources, command prompts and completion commands all go
through one `Runner`. `acquire` takes a per-key slot and a global slot within
`limits.queue_timeout`; `spawn` renders the command line and its environment
(with the `mcp script` side channel on PATH when there is a client to talk
to) and runs it with `process.run_process`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack

import anyio

from mcpcli.core import tracecontext
from mcpcli.server.backend import CallContext
from mcpcli.toolsfile.arguments import build_command
from mcpcli.toolsfile.channel import ChannelDirectory, ChannelServer
from mcpcli.toolsfile.model import JSON, Param, RunSpec, ToolsFile
from mcpcli.toolsfile.process import RunResult, SpawnError, Starts, run_process
from mcpcli.toolsfile.results import Masker
from mcpcli.toolsfile.watchdog import Watchdog

__all__ = ["Runner"]


class _Slots:
    """Per-key and global concurrency limits."""

    def __init__(self) -> None:
        self.global_limit = 0
        self.global_sem = anyio.Semaphore(1)
        self.per_key: dict[str, tuple[int, anyio.Semaphore]] = {}

    def configure(self, config: ToolsFile) -> None:
        if config.limits.max_concurrent != self.global_limit:
            self.global_limit = config.limits.max_concurrent
            self.global_sem = anyio.Semaphore(self.global_limit)

    def for_key(self, key: str, limit: int) -> anyio.Semaphore:
        current = self.per_key.get(key)
        if current is None or current[0] != limit:
            current = (limit, anyio.Semaphore(limit))
            self.per_key[key] = current
        return current[1]


class Runner:
    """What every command run shares: the slots, the side channel and the base environment.

    `announce(kind, uri)` is called when a script says something changed
    (`mcp script changed ...`).
    """

    def __init__(self, *, environ: dict[str, str] | None,
                 announce: Callable[[str, str | None], None]) -> None:
        self._environ = environ
        self._announce = announce
        self._slots = _Slots()
        self._channels = ChannelDirectory()
        self._channel = ChannelServer(self._channels)
        self._watchdog = Watchdog()  # ends the process groups if the server is killed
        self._starts = Starts()  # one process start per event-loop turn

    def configure(self, config: ToolsFile) -> None:
        """Follow a (re)loaded file's limits."""
        self._slots.configure(config)

    def close(self) -> None:
        self._channel.close()
        self._channels.close()
        self._watchdog.close()

    def _env(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    async def acquire(self, stack: AsyncExitStack, config: ToolsFile, key: str, limit: int) -> bool:
        """Take a per-key slot and a global slot within the queue timeout (released by `stack`)."""
        semaphores = (self._slots.for_key(key, limit), self._slots.global_sem)
        waiting: list[anyio.Semaphore] = []
        for sem in semaphores:
            try:
                sem.acquire_nowait()  # the common case: a free slot, no trip through the loop
            except anyio.WouldBlock:
                waiting.append(sem)
                break
            stack.callback(sem.release)
        if not waiting:
            return True
        with anyio.move_on_after(config.limits.queue_timeout):
            for sem in semaphores[semaphores.index(waiting[0]):]:
                await sem.acquire()
                stack.callback(sem.release)
            return True
        return False

    async def spawn(self, config: ToolsFile, spec: RunSpec, params: dict[str, Param], values: JSON,
                    ctx: CallContext | None, mask: Masker, stack: AsyncExitStack, *, tool_name: str,
                    output_dir: str | None, max_bytes: int, kill_on_overflow: bool = False,
                    extra_env: dict[str, str] | None = None) -> RunResult:
        """Run `spec` with these argument values; the side channel lives as long as `stack`."""
        builtins = {
            "mcp.config_dir": config.base_dir,
            "mcp.tool": tool_name,
            "mcp.python": sys.executable or "python3",
            "mcp.cwd": spec.cwd,
        }
        env_extra: dict[str, str] = {"MCP_TOOL": tool_name, "MCP_CONFIG_DIR": config.base_dir}
        if output_dir is not None:
            builtins["mcp.output_dir"] = output_dir
            env_extra["MCP_OUTPUT_DIR"] = output_dir
        if ctx is not None:
            env_extra.update(await self._client_env(ctx, mask, stack, tool_name))
        if extra_env:
            env_extra.update(extra_env)
        trace = tracecontext.current.get()
        if trace is not None:
            # The request's trace, for the script's own tools to continue (OpenTelemetry's
            # environment carrier): the serve's span when spans are on, else as received.
            env_extra.update(trace.environ())
        prepared = build_command(spec, params, values, builtins=builtins, secrets=config.secrets,
                                 base_env=self._env(), extra_env=env_extra)
        path_value = prepared.env.get("PATH") or os.defpath
        if ctx is not None:
            prepared.env["PATH"] = self._channels.bin_dir + os.pathsep + path_value
        if not os.path.isdir(spec.cwd):
            raise SpawnError(f"cannot start {prepared.argv[0]}: the working directory {spec.cwd} does not exist")
        return await run_process(
            prepared.argv,
            env=prepared.env,
            cwd=spec.cwd,
            stdin=prepared.stdin,
            timeout=min(spec.timeout, config.limits.max_timeout),
            kill_grace=spec.kill_grace,
            max_bytes=max_bytes,
            kill_on_overflow=kill_on_overflow,
            watchdog=self._watchdog,
            starts=self._starts,
        )

    async def _client_env(self, ctx: CallContext, mask: Masker, stack: AsyncExitStack,
                          tool_name: str) -> dict[str, str]:
        """The variables of a run with a client: its protocol, capabilities and side channel."""
        env = {
            "MCP_PROTOCOL_VERSION": ctx.protocol_version,
            "MCP_CLIENT_CAPABILITIES": json.dumps(ctx.client_capabilities or {}, separators=(",", ":")),
        }
        channel_env = await stack.enter_async_context(
            self._channel.call(ctx, mask=mask, logger=tool_name, changed=self._announce)
        )
        env.update(channel_env)
        return env
