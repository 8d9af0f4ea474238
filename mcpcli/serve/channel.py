"""The side channel: how a running script talks back to the client, never through stdout.

Each call that runs a process gets a private unix socket (in a 0700 directory
owned by the server) and a random token; both are in the child's environment as
`MCP_SCRIPT_SOCKET` and `MCP_SCRIPT_TOKEN`. `mcp script progress|log|elicit|
sample|roots|ask` connects, sends one JSON line, and reads one JSON line back:

    -> {"token": "...", "op": "progress", "progress": 50, "total": 100, "message": "..."}
    <- {"ok": true}
    -> {"token": "...", "op": "ask", "requests": {"name": {"method": "elicitation/create", "params": {...}}}}
    <- {"ok": true, "result": {"name": {"action": "accept", "content": {...}}}}
    <- {"ok": false, "error": "...", "kind": "declined" | "invalid" | "failed"}
    -> {"token": "...", "op": "changed", "kind": "tools" | "prompts" | "resources" | "resource", "uri": ...}

The operations map to `CallContext.progress/log/ask`, so elicitation, sampling
and roots work in every protocol era (the runtime turns `ask` into a server
request, or into a 2026-07-28 InputRequiredResult round trip): the script just
blocks until the answer arrives. The socket lives exactly as long as the call.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import SocketStream

from mcpcli.protocol import LOG_LEVELS
from mcpcli.server.backend import CallContext, InputDeclined

__all__ = ["ASK_METHODS", "ChannelDirectory", "call_channel"]

MAX_LINE = 4 * 1024 * 1024
ASK_METHODS = ("elicitation/create", "sampling/createMessage", "roots/list")


class ChannelDirectory:
    """A private directory holding the per-call sockets (and the `mcp` shim)."""

    def __init__(self) -> None:
        self._path: str | None = None
        self._counter = 0

    @property
    def path(self) -> str:
        if self._path is None:
            self._path = tempfile.mkdtemp(prefix="mcp-serve-")
            os.chmod(self._path, 0o700)
            _write_shim(os.path.join(self._path, "bin"))
        return self._path

    @property
    def bin_dir(self) -> str:
        return os.path.join(self.path, "bin")

    def next_socket(self) -> str:
        self._counter += 1
        return os.path.join(self.path, f"c{self._counter}.sock")

    def close(self) -> None:
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)
            self._path = None


def _write_shim(bin_dir: str) -> None:
    """An `mcp` on the script's PATH that runs this very installation's `mcp script`."""
    import sys

    os.makedirs(bin_dir, mode=0o700, exist_ok=True)
    shim = os.path.join(bin_dir, "mcp")
    python = sys.executable or "python3"
    with open(shim, "w", encoding="utf-8") as fh:
        fh.write(
            f"#!{python} -I\n"
            "import sys\n"
            f"sys.path[:0] = {_package_parent()!r}\n"
            "from mcpcli.serve.script_client import shim_main\n"
            "sys.exit(shim_main(sys.argv[1:]))\n"
        )
    os.chmod(shim, 0o700)


def _package_parent() -> list[str]:
    import mcpcli

    return [os.path.dirname(os.path.dirname(os.path.abspath(mcpcli.__file__)))]


class _Handler:
    def __init__(self, ctx: CallContext, token: str, mask: Callable[[str], str], logger: str,
                 changed: Callable[[str, str | None], None] | None) -> None:
        self.ctx = ctx
        self.changed = changed
        self.token = token
        self.mask = mask
        self.logger = logger
        self.last_progress: float | None = None

    async def __call__(self, stream: SocketStream) -> None:
        async with stream:
            try:
                line = await _read_line(stream)
            except (ValueError, anyio.EndOfStream, anyio.BrokenResourceError):
                return
            try:
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError("not an object")
            except ValueError:
                await _reply(stream, {"ok": False, "kind": "invalid", "error": "malformed request"})
                return
            if not secrets.compare_digest(str(request.get("token", "")), self.token):
                await _reply(stream, {"ok": False, "kind": "invalid", "error": "bad token (is this call still running?)"})
                return
            try:
                reply = await self.dispatch(request)
            except InputDeclined as exc:
                reply = {"ok": False, "kind": "declined", "error": str(exc) or "the client cannot answer this"}
            except _Invalid as exc:
                reply = {"ok": False, "kind": "invalid", "error": str(exc)}
            except Exception as exc:  # the client answered with an error, or the runtime failed
                message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
                reply = {"ok": False, "kind": "failed", "error": message}
            try:
                await _reply(stream, reply)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    async def dispatch(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "progress":
            progress = request.get("progress")
            total = request.get("total")
            message = request.get("message")
            if not isinstance(progress, (int, float)) or isinstance(progress, bool) or (
                total is not None and not _number(total)
            ):
                raise _Invalid("progress and total must be numbers")
            if message is not None and not isinstance(message, str):
                raise _Invalid("message must be text")
            if self.last_progress is not None and progress <= self.last_progress:
                return {"ok": True, "ignored": "progress must increase"}
            self.last_progress = float(progress)
            await self.ctx.progress(progress, total, self.mask(message) if message else None)
            return {"ok": True}
        if op == "log":
            level = request.get("level")
            data = request.get("data")
            if level not in LOG_LEVELS:
                raise _Invalid(f"level must be one of {', '.join(LOG_LEVELS)}")
            logger = request.get("logger") or self.logger
            await self.ctx.log(level, _mask_json(data, self.mask), logger)
            return {"ok": True}
        if op == "ask":
            requests = request.get("requests")
            if not isinstance(requests, dict) or not requests:
                raise _Invalid("requests must be a non-empty object of {method, params}")
            clean: dict[str, dict[str, Any]] = {}
            for key, item in requests.items():
                if not isinstance(item, dict) or item.get("method") not in ASK_METHODS:
                    raise _Invalid(f"request {key!r}: method must be one of {', '.join(ASK_METHODS)}")
                params = item.get("params", {})
                if not isinstance(params, dict):
                    raise _Invalid(f"request {key!r}: params must be an object")
                clean[str(key)] = {"method": item["method"], "params": _mask_json(params, self.mask)}
            answers = await self.ctx.ask(clean)
            return {"ok": True, "result": answers}
        if op == "changed":
            kind = request.get("kind")
            uri = request.get("uri")
            if kind not in ("tools", "prompts", "resources", "resource"):
                raise _Invalid("kind must be tools, prompts, resources or resource")
            if (kind == "resource") != isinstance(uri, str):
                raise _Invalid("a resource change needs its URI (and only then)")
            if self.changed is not None:
                self.changed(kind, uri)
            return {"ok": True}
        raise _Invalid(f"unknown operation {op!r}")


class _Invalid(Exception):
    pass


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _mask_json(value: Any, mask: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, list):
        return [_mask_json(v, mask) for v in value]
    if isinstance(value, dict):
        return {k: _mask_json(v, mask) for k, v in value.items()}
    return value


async def _read_line(stream: SocketStream) -> bytes:
    buffer = bytearray()
    while b"\n" not in buffer:
        chunk = await stream.receive(65536)
        buffer.extend(chunk)
        if len(buffer) > MAX_LINE:
            raise ValueError("request too large")
    return bytes(buffer.split(b"\n", 1)[0])


async def _reply(stream: SocketStream, payload: dict[str, Any]) -> None:
    await stream.send(json.dumps(payload, ensure_ascii=False).encode("utf-8") + b"\n")


@asynccontextmanager
async def call_channel(
    directory: ChannelDirectory,
    ctx: CallContext,
    *,
    mask: Callable[[str], str],
    logger: str,
    changed: Callable[[str, str | None], None] | None = None,
) -> AsyncIterator[dict[str, str]]:
    """Listen for one call's scripts; yields the environment variables that point at it."""
    path = directory.next_socket()
    token = secrets.token_urlsafe(24)
    listener = await anyio.create_unix_listener(path)
    handler = _Handler(ctx, token, mask, logger, changed)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, handler, tg)
            try:
                yield {
                    "MCP_SCRIPT_SOCKET": path,
                    "MCP_SCRIPT_TOKEN": token,
                    "MCP_SCRIPT": os.path.join(directory.bin_dir, "mcp"),
                }
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await listener.aclose()
        try:
            os.unlink(path)
        except OSError:
            pass
