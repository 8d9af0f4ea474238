"""`ToolsBackend`: a tools.yaml file as a `mcpcli.server.backend.Backend`.

The backend holds one immutable `ToolsFile` snapshot at a time; every request reads
the snapshot current when it starts (so list and call always agree, and a reload
never changes a call in flight). `reload()` swaps in a new snapshot only when
the file is valid, and reports what changed to the runtime's change listener.

The work of each request is done by a module per feature: `tool_calls`,
`resources`, `prompts` and `completion`, all running commands through one
`runner.Runner` (concurrency slots, environment, side channel).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import anyio

from mcpcli.errors import ConfigError
from mcpcli.server.backend import CallContext, ChangeListener, TaskPolicy
from mcpcli.toolsfile import completion, prompts, resources, tool_calls
from mcpcli.toolsfile.load import load_config
from mcpcli.toolsfile.model import JSON, ToolsFile, Upstream
from mcpcli.toolsfile.runner import Runner

__all__ = ["ToolsBackend"]


class ToolsBackend:
    """Serves one tools.yaml file."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        log: Callable[[str], None] | None = None,
        warn: Callable[[str], None] | None = None,
        environ: dict[str, str] | None = None,
        config: ToolsFile | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self._environ = environ
        self._log = log
        self._warn = warn or log
        self._config = config or load_config(self.path, environ=environ)
        self._listener: ChangeListener | None = None
        self._runner = Runner(environ=environ, announce=self._announce)
        self._runner.configure(self._config)
        self._file_stamp = _stamp(self.path)
        self._resource_stamps: dict[str, Any] = {}
        self._check_resource_files()

    # -- identity and capabilities -----------------------------------------------------

    @property
    def config(self) -> ToolsFile:
        return self._config

    def server_info(self) -> JSON:
        return dict(self._config.server)

    def instructions(self) -> str | None:
        return self._config.instructions

    def capabilities(self) -> JSON:
        caps: JSON = {
            "tools": {},
            "resources": {"subscribe": True},
            "prompts": {},
            "completions": {},
        }
        if self._config.has_tasks:
            caps["tasks"] = {}
        return caps

    def task_policy(self, name: str) -> TaskPolicy | None:
        """How calls of tool `name` may run as tasks (its `task:` setting)."""
        tool = self._config.tools.get(name)
        return tool.task if tool is not None else None

    def set_change_listener(self, listener: ChangeListener | None) -> None:
        self._listener = listener

    def close(self) -> None:
        self._runner.close()

    def _announce(self, kind: str, uri: str | None) -> None:
        """A script said something changed (`mcp script changed ...`)."""
        if self._listener is not None:
            self._listener(kind, uri)

    def _audit(self, text: str) -> None:
        """One line per call and per reload (silenced by `mcp serve --quiet`)."""
        if self._log is not None:
            self._log(text)

    def _problem(self, text: str) -> None:
        """Something the operator must see (never silenced)."""
        if self._warn is not None:
            self._warn(text)

    # -- reload ------------------------------------------------------------------------

    def reload(self) -> bool:
        """Load the file again; keep the current snapshot if it is invalid. True when it changed."""
        try:
            new = load_config(self.path, environ=self._environ)
        except ConfigError as exc:
            problems = getattr(exc, "problems", None)
            lines = [str(p) for p in problems] if problems else [exc.message]
            self._problem(f"reload failed; still serving the previous version of {self.path}:")
            for line in lines:
                self._problem("  " + line)
            return False
        old = self._config
        self._config = new
        self._runner.configure(new)
        changed = False
        kinds = (
            ("tools", [t.listing() for t in old.tools.values()], [t.listing() for t in new.tools.values()]),
            ("resources", [r.listing() for r in old.resources], [r.listing() for r in new.resources]),
            ("prompts", [p.listing() for p in old.prompts.values()], [p.listing() for p in new.prompts.values()]),
        )
        for kind, before, after in kinds:
            if before != after:
                changed = True
                self._audit(f"reloaded {self.path}: {kind} changed")
                if self._listener is not None:
                    self._listener(kind, None)
        if _upstreams(old) != _upstreams(new):
            # The gateway's upstreams are fixed at start: say so rather than pretend they changed.
            self._problem(f"reloaded {self.path}: servers: changed, but the upstreams served stay the "
                          "ones it started with; restart `mcp serve` to apply the change")
        elif not changed:
            self._audit(f"reloaded {self.path}: no visible change")
        for warning in new.warnings:
            self._problem(warning.format("warning"))
        return changed

    async def watch(self, interval: float = 0.5) -> None:
        """Poll the file (and subscribable resources) forever; reload on change."""
        missing_reported = False
        while True:
            await anyio.sleep(interval)
            stamp = _stamp(self.path)
            if stamp is None:
                if not missing_reported:
                    self._problem(f"{self.path} disappeared; still serving the last version")
                    missing_reported = True
                continue
            missing_reported = False
            if stamp != self._file_stamp:
                # Let an editor finish writing (debounce), then load.
                await anyio.sleep(min(0.1, interval))
                settled = _stamp(self.path)
                if settled != stamp:
                    continue
                self._file_stamp = stamp
                self.reload()
            self._check_resource_files()

    def _check_resource_files(self) -> None:
        for res in self._config.resources:
            if res.kind != "static" or res.source != "file" or not res.subscribe or res.file is None:
                continue
            path = res.file.source
            stamp = _stamp(path)
            key = res.uri or path
            changed = key in self._resource_stamps and self._resource_stamps[key] != stamp
            if changed and self._listener is not None:
                self._listener("resource", res.uri)
            self._resource_stamps[key] = stamp

    # -- the requests: each reads the snapshot current when it starts ---------------------

    async def list_tools(self) -> list[JSON]:
        return [tool.listing() for tool in self._config.tools.values()]

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        return await tool_calls.call_tool(self._runner, self._config, name, arguments, ctx, self._audit)

    async def list_resources(self) -> list[JSON]:
        return resources.list_resources(self._config)

    async def list_resource_templates(self) -> list[JSON]:
        return resources.list_templates(self._config)

    async def read_resource(self, uri: str, ctx: CallContext) -> JSON:
        return await resources.read_resource(self._runner, self._config, uri, ctx)

    async def list_prompts(self) -> list[JSON]:
        return [p.listing() for p in self._config.prompts.values()]

    async def get_prompt(self, name: str, arguments: dict[str, str], ctx: CallContext) -> JSON:
        return await prompts.get_prompt(self._runner, self._config, name, arguments, ctx)

    async def complete(self, ref: JSON, argument: JSON, context: JSON) -> JSON:
        return await completion.complete(self._runner, self._config, ref, argument, context, self._problem)


def _upstreams(config: ToolsFile) -> list[Upstream]:
    """The `servers:` entries without their positions (moving an entry changes nothing)."""
    return [dataclasses.replace(u, line=0, col=0) for u in config.servers]


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
