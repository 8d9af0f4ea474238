"""stdio transport: spawn the server and speak newline-delimited JSON-RPC on its pipes.

The server runs in its own process group (so a terminal Ctrl-C reaches us, not it,
and we can cancel politely) with a scrubbed environment. Its stderr is relayed to
ours. Shutdown closes stdin, waits briefly, then signals the whole group: TERM,
then KILL, so neither the server nor its children outlive us.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import IO

import anyio
from anyio.abc import ByteReceiveStream, Process

from mcpcli import jsonrpc
from mcpcli.errors import MessageTooLarge, ProtocolError, ServerExited, TransportError
from mcpcli.transports import Envelope, Streams

__all__ = [
    "DEFAULT_INHERITED_ENV",
    "MAX_MESSAGE_BYTES",
    "StdioTransport",
    "child_environment",
    "kill_all",
]

#: Variables a server inherits from our environment; everything else must be asked for.
DEFAULT_INHERITED_ENV = (
    ("APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE",
     "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE", "PROGRAMFILES")
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE",
          "TMPDIR", "TZ")
)
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: How long a server gets to exit on its own after stdin closes, then after SIGTERM.
EOF_GRACE = 0.25
TERM_GRACE = 1.0
STDERR_TAIL_LINES = 20


#: Transports with a running server, so a second Ctrl-C can kill them all at once.
_LIVE: set[StdioTransport] = set()


def kill_all() -> None:
    """SIGKILL every running server's process group (the user insisted)."""
    for transport in list(_LIVE):
        transport.kill()


def child_environment(
    extra: Mapping[str, str] | None = None, *, inherit: Sequence[str] = DEFAULT_INHERITED_ENV
) -> dict[str, str]:
    """The environment for a server: an allow-list of ours plus what was configured.

    Values that look like exported bash functions (`() {`) are dropped: they are
    how Shellshock-style payloads travel.
    """
    env = {
        key: value
        for key in inherit
        if (value := os.environ.get(key)) is not None and not value.startswith("()")
    }
    if extra:
        env.update(extra)
    return env


class StdioTransport:
    """Run `command *args` and talk to it over stdin/stdout."""

    name = "stdio"

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr: IO[bytes] | None = None,
        server_log: IO[bytes] | None = None,
        quiet: bool = False,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.command = command
        self.args = list(args)
        self.env = child_environment(env)
        self.cwd = cwd
        self._stderr = stderr
        self._server_log = server_log
        self._quiet = quiet
        self.max_message_bytes = max_message_bytes
        self.process: Process | None = None
        self._writer_scope: anyio.CancelScope | None = None
        self._writer_done: anyio.Event | None = None
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)

    def describe(self) -> str:
        return " ".join([self.command, *self.args])

    def _resolve(self) -> str:
        if self.cwd is not None and not os.path.isdir(self.cwd):
            raise TransportError(f"working directory {self.cwd!r} does not exist")
        if os.sep in self.command or (os.altsep and os.altsep in self.command):
            path = self.command
            if self.cwd and not os.path.isabs(path):
                path = os.path.join(self.cwd, path)
            if not os.path.exists(path):
                raise TransportError(f"cannot start server: {self.command}: no such file")
            if not os.access(path, os.X_OK):
                raise TransportError(f"cannot start server: {self.command}: permission denied")
            return self.command
        found = shutil.which(self.command, path=self.env.get("PATH", os.defpath))
        if found is None:
            raise TransportError(
                f"cannot start server: {self.command}: command not found",
                hint="check the command name and that it is on PATH",
            )
        return found

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Streams]:
        executable = self._resolve()
        try:
            process = await anyio.open_process(
                [executable, *self.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,
            )
        except OSError as exc:
            raise TransportError(
                f"cannot start server: {self.command}: {exc.strerror or exc}"
            ) from None
        self.process = process
        self._writer_done = anyio.Event()
        _LIVE.add(self)
        read_send, read_recv = anyio.create_memory_object_stream[Envelope | Exception](64)
        write_send, write_recv = anyio.create_memory_object_stream[Envelope](64)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read_stdout, process, read_send)
                tg.start_soon(self._write_stdin, process, write_recv)
                if process.stderr is not None:
                    tg.start_soon(self._relay_stderr, process.stderr)
                try:
                    yield read_recv, write_send
                finally:
                    with anyio.CancelScope(shield=True):
                        await write_send.aclose()
                        await self.shutdown()
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await read_recv.aclose()
                await process.aclose()
            _LIVE.discard(self)

    # -- pumps -------------------------------------------------------------------

    async def _read_stdout(
        self, process: Process, out: anyio.abc.ObjectSendStream[Envelope | Exception]
    ) -> None:
        assert process.stdout is not None
        buffer = bytearray()
        cap = self.max_message_bytes
        async with out:
            try:
                async for chunk in process.stdout:
                    buffer += chunk
                    while (newline := buffer.find(b"\n")) >= 0:
                        line = bytes(buffer[:newline])
                        del buffer[: newline + 1]
                        await self._deliver(line, out)
                    if len(buffer) > cap:
                        await out.send(
                            MessageTooLarge(f"server sent a message larger than {cap} bytes")
                        )
                        await self._kill()
                        await out.send(self._exited(process, "after an oversized message"))
                        return
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return
            if buffer.strip():
                await self._deliver(bytes(buffer), out)
            with anyio.move_on_after(EOF_GRACE):
                await process.wait()
            try:
                await out.send(self._exited(process, ""))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    async def _deliver(
        self, line: bytes, out: anyio.abc.ObjectSendStream[Envelope | Exception]
    ) -> None:
        line = line.strip()
        if not line:
            return
        try:
            message = jsonrpc.parse(line, allow_batch=True)
        except jsonrpc.ParseError as exc:
            shown = line[:200].decode("utf-8", "backslashreplace")
            shown = shown.encode("unicode_escape").decode("ascii")
            await out.send(ProtocolError(f"server wrote a line that is not JSON-RPC ({exc}): {shown}"))
            return
        await out.send(Envelope(message))

    def _exited(self, process: Process, when: str) -> ServerExited:
        code = process.returncode
        if code is None:
            what = "server closed its stdout"
        elif code < 0:
            try:
                what = f"server was killed by {signal.Signals(-code).name}"
            except ValueError:
                what = f"server was killed by signal {-code}"
        else:
            what = f"server exited with code {code}"
        message = f"{what} {when}".strip()
        if self.stderr_tail:
            message += "; its last stderr line: " + self.stderr_tail[-1]
        return ServerExited(message, returncode=code)

    async def _write_stdin(
        self, process: Process, inbox: anyio.abc.ObjectReceiveStream[Envelope]
    ) -> None:
        """Copy outgoing messages to the server's stdin.

        Shielded from outer cancellation, so a message queued while the user
        presses Ctrl-C (`notifications/cancelled`) still reaches the server; it
        ends when the write stream closes, and shutdown stops it if it hangs.
        """
        assert process.stdin is not None
        stdin = process.stdin
        with anyio.CancelScope(shield=True) as scope:
            self._writer_scope = scope
            try:
                async for envelope in inbox:
                    await stdin.send(jsonrpc.encode(envelope.message) + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass  # the server went away; the stdout reader reports how
        assert self._writer_done is not None
        self._writer_done.set()

    async def _relay_stderr(self, stream: ByteReceiveStream) -> None:
        target = self._stderr if self._stderr is not None else sys.stderr.buffer
        partial = b""
        try:
            async for chunk in stream:
                if self._server_log is not None:
                    self._server_log.write(chunk)
                    self._server_log.flush()
                if not self._quiet:
                    target.write(chunk)
                    target.flush()
                lines = (partial + chunk).split(b"\n")
                partial = lines.pop()[-4096:]
                for raw in lines:
                    text = raw.decode("utf-8", "replace").strip()
                    if text:
                        self.stderr_tail.append(text[:300])
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass

    # -- shutdown ----------------------------------------------------------------

    def _signal_group(self, sig: int) -> bool:
        """Signal the server's process group; False when nothing is left in it."""
        if self.process is None:
            return False
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:
            return False
        return True

    async def _kill(self) -> None:
        self._signal_group(signal.SIGKILL)
        if self.process is not None:
            with anyio.move_on_after(TERM_GRACE):
                await self.process.wait()

    async def shutdown(self) -> None:
        """Close stdin, give the server a moment, then TERM and KILL its whole group."""
        process = self.process
        if process is None:
            return
        # Let queued messages reach the server, but never wait on a stuck pipe for long.
        if self._writer_done is not None:
            with anyio.move_on_after(EOF_GRACE):
                await self._writer_done.wait()
        if self._writer_scope is not None:
            self._writer_scope.cancel()
        if process.stdin is not None:
            try:
                await process.stdin.aclose()
            except OSError:
                pass
        if process.returncode is None:
            with anyio.move_on_after(EOF_GRACE):
                await process.wait()
        if process.returncode is None:
            self._signal_group(signal.SIGTERM)
            with anyio.move_on_after(TERM_GRACE):
                await process.wait()
        if process.returncode is None:
            await self._kill()
        # The leader is gone; children it left in the group (npx's node, a shell's
        # sleep) must not outlive us either.
        if self._signal_group(0):
            self._signal_group(signal.SIGTERM)
            self._signal_group(signal.SIGKILL)

    def kill(self) -> None:
        """Kill the whole group now (a second Ctrl-C)."""
        self._signal_group(signal.SIGKILL)
