"""The side channel: how a running script talks back to the client, never through stdout.

The server listens on one private unix socket (in a 0700 directory it owns);
each call that runs a process gets a random token, valid while the call runs.
Both are in the child's environment as `MCP_SCRIPT_SOCKET` and `MCP_SCRIPT_TOKEN`. `mcp script progress|log|elicit|
sample|roots|ask` connects, sends one JSON line, and reads one JSON line back, in the
line-JSON framing and error form of `mcpcli.core.localrpc` (which the session daemon's
control protocol speaks too):

    -> {"mcpcli": 1, "token": "...", "op": "progress", "progress": 50, "total": 100, "message": "..."}
    <- {"ok": true}
    -> {"mcpcli": 1, "token": "...", "op": "ask", "requests": {"name": {"method": "elicitation/create", "params": {...}}}}
    <- {"ok": true, "result": {"name": {"action": "accept", "content": {...}}}}
    <- {"ok": false, "error": {"message": "...", "kind": "declined" | "invalid" | "failed", "exit": 4, ...}}
    -> {"mcpcli": 1, "token": "...", "op": "changed", "kind": "tools" | "prompts" | "resources" | "resource", "uri": ...}

A request without `"mcpcli"` (the form the README first documented, which scripts may
speak) gets a failure as `{"ok": false, "kind": ..., "error": "..."}` (`localrpc.flat_error`).

The operations map to `CallContext.progress/log/ask`, so elicitation, sampling
and roots work in every protocol era (the runtime turns `ask` into a server
request, or into a 2026-07-28 InputRequiredResult round trip): the script just
blocks until the answer arrives. When the call ends its token dies, and any
callback still waiting is cancelled. Registering a call costs a dict entry; the
listener is started once per event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from mcpcli.core import localrpc
from mcpcli.core.protocol import LOG_LEVELS
from mcpcli.server.backend import CallContext, InputDeclined

__all__ = ["ASK_METHODS", "ChannelDirectory", "ChannelServer"]

ASK_METHODS = ("elicitation/create", "sampling/createMessage", "roots/list")


class ChannelDirectory:
    """A private directory holding the per-call sockets (and the `mcp` shim)."""

    def __init__(self) -> None:
        self._path: str | None = None

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
        # -S: no site import for `mcp script` (standard library only, and this
        # installation's package directory comes first); the full CLI gets site back.
        fh.write(
            f"#!{python} -IS\n"
            "import sys\n"
            f"sys.path[:0] = {_package_parent()!r}\n"
            "if sys.argv[1:2] == ['script']:\n"
            "    from mcpcli.toolsfile.script_client import main\n"
            "    sys.exit(main(sys.argv[2:]))\n"
            "import site\n"
            "site.main()\n"
            "from mcpcli.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n"
        )
    os.chmod(shim, 0o700)


def _package_parent() -> list[str]:
    import mcpcli

    return [os.path.dirname(os.path.dirname(os.path.abspath(mcpcli.__file__)))]


class _Handler:
    """What one call's scripts may do."""

    def __init__(self, ctx: CallContext, mask: Callable[[str], str], logger: str,
                 changed: Callable[[str, str | None], None] | None) -> None:
        self.ctx = ctx
        self.changed = changed
        self.mask = mask
        self.logger = logger
        self.last_progress: float | None = None
        self.tasks: set[asyncio.Task[Any]] = set()

    async def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self.dispatch(request)
        except InputDeclined as exc:
            return localrpc.error(str(exc) or "the client cannot answer this", kind="declined")
        except _Invalid as exc:
            return localrpc.error(str(exc), kind="invalid")
        except Exception as exc:  # the client answered with an error, or the runtime failed
            message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            return localrpc.error(message, kind="failed")

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


class ChannelServer:
    """One listening socket for all calls of a backend; calls register a token."""

    def __init__(self, directory: ChannelDirectory) -> None:
        self.directory = directory
        self._calls: dict[str, _Handler] = {}
        self._server: asyncio.AbstractServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._path: str | None = None
        self._socket: socket.socket | None = None

    async def _ensure(self) -> str:
        loop = asyncio.get_running_loop()
        if self._server is None or self._loop is not loop:
            if self._server is not None and not self._loop_closed():
                self._server.close()
            self._close_socket()
            path = os.path.join(self.directory.path, "channel.sock")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            # Our own socket object, so close() works even after the loop is gone.
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(path)
                sock.listen(128)
                sock.setblocking(False)
            except OSError:
                sock.close()
                raise
            self._socket = sock
            self._server = await asyncio.start_unix_server(self._connection, sock=sock,
                                                           limit=localrpc.MAX_MESSAGE_BYTES)
            self._loop = loop
            self._path = path
        assert self._path is not None
        return self._path

    def _loop_closed(self) -> bool:
        return self._loop is None or self._loop.is_closed()

    def close(self) -> None:
        if self._server is not None and not self._loop_closed():
            self._server.close()
        self._server = None
        self._loop = None
        self._close_socket()

    def _close_socket(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handler: _Handler | None = None
        task = asyncio.current_task()
        request: dict[str, Any] = {}
        try:
            try:
                request = localrpc.decode(await reader.readuntil(b"\n"))
            except (localrpc.ProtocolViolation, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                await _reply(writer, request, localrpc.error("malformed request", kind="invalid"))
                return
            handler = self._calls.get(str(request.get("token", "")))
            if handler is None:
                await _reply(writer, request,
                             localrpc.error("bad token (is this call still running?)", kind="invalid"))
                return
            if task is not None:
                handler.tasks.add(task)
            await _reply(writer, request, await handler.answer(request))
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            if handler is not None and task is not None:
                handler.tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    @asynccontextmanager
    async def call(
        self,
        ctx: CallContext,
        *,
        mask: Callable[[str], str],
        logger: str,
        changed: Callable[[str, str | None], None] | None = None,
    ) -> AsyncIterator[dict[str, str]]:
        """Accept callbacks for one call; yields the environment variables that point at it."""
        path = await self._ensure()
        token = secrets.token_urlsafe(24)
        handler = _Handler(ctx, mask, logger, changed)
        self._calls[token] = handler
        try:
            yield {
                "MCP_SCRIPT_SOCKET": path,
                "MCP_SCRIPT_TOKEN": token,
                "MCP_SCRIPT": os.path.join(self.directory.bin_dir, "mcp"),
            }
        finally:
            del self._calls[token]
            for pending in list(handler.tasks):
                pending.cancel()


async def _reply(writer: asyncio.StreamWriter, request: dict[str, Any], answer: dict[str, Any]) -> None:
    """Write the answer to `request` (an answer too large for a line becomes a failure)."""
    try:
        line = localrpc.encode(_shaped(request, answer))
    except localrpc.ProtocolViolation as exc:
        line = localrpc.encode(_shaped(request, localrpc.error(str(exc), kind="failed")))
    writer.write(line)
    await writer.drain()


def _shaped(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """A failure in the error form when the request carries `"mcpcli"`, else in the form
    first documented (a script may speak it)."""
    if answer.get("ok") is True or request.get("mcpcli") == localrpc.VERSION:
        return answer
    return localrpc.flat_error(answer)
