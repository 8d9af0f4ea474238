"""Driving `mcp inspect` headless: the command's own wiring (`wire`, `opened`: the CLI's
connection, the bridge, the command lines), then Textual's pilot."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from helpers import wait_until_async

from mcpcli.cli._app import NO_TARGET, App
from mcpcli.cli._connection import Connection


@asynccontextmanager
async def inspecting(target: str | None = None, server_command: list[str] | None = None, *,
                     save_dir: str | None = None, size: tuple[int, int] = (120, 40),
                     **flags: Any) -> AsyncIterator[tuple[Any, Any]]:
    """(app, pilot) for `mcp inspect TARGET [FLAGS] [-- SERVER COMMAND]`, the app's lists loaded."""
    from mcpcli.cli.inspect import opened, wire

    app = App(server_command=list(server_command or []))
    conn = Connection(**flags)
    bridge, invocation, note = wire(app, target, conn)
    async with opened(app, target if target is not None else NO_TARGET, conn, bridge, invocation, note,
                      save_dir) as inspector, inspector.run_test(size=size) as pilot:
        await wait_until_async(lambda: all(not w.is_running for w in inspector.workers
                                           if (w.group or "").startswith("load-")), 30, "the lists")
        await pilot.pause()
        yield inspector, pilot


async def until(pilot: Any, predicate: Callable[[], Any], what: str, timeout: float = 30) -> None:
    """Wait (bounded, never a fixed sleep) until `predicate` holds, letting the app run."""

    async def check() -> bool:
        await pilot.pause()
        try:
            return bool(predicate())
        except Exception:
            return False

    await wait_until_async(check, timeout, what)


