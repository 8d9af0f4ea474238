"""The one-shot fast path's I/O: a stdio server's pipes driven synchronously with
`selectors` (what `StdioTransport` does on anyio), and our stderr held until the call
is sent (`mcpcli.cli._oneshot_client` runs the protocol over them)."""

from __future__ import annotations

import os
import sys
import time

from mcpcli.core import jsonrpc
from mcpcli.core.protocol import MAX_MESSAGE_BYTES
from mcpcli.errors import MessageTooLarge, ServerExited

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from mcpcli.transports.spawn import ExitMemory, Process

__all__ = ["HELD_MAX", "Stderr", "StdioServer"]

READ_CHUNK = 256 * 1024
#: How much stderr is held before the call is sent, at most.
HELD_MAX = 4 * 1024 * 1024


class Stderr:
    """Our stderr, held until the call is sent (dropped if the full path takes over)."""

    def __init__(self) -> None:
        self.held: list[bytes] | None = []
        self.size = 0
        self.dropped = False

    def write(self, data: bytes) -> None:
        if self.dropped:
            return
        if self.held is not None:
            self.held.append(data)
            self.size += len(data)
            if self.size > HELD_MAX:
                self.release()  # a server this chatty is shown as it talks (a fallback now repeats it)
            return
        try:
            sys.stderr.buffer.write(data)
            sys.stderr.buffer.flush()
        except (OSError, ValueError):
            pass

    def line(self, text: str) -> None:
        self.write((text + "\n").encode("utf-8", "backslashreplace"))

    def release(self) -> None:
        held, self.held = self.held, None
        if held:
            self.write(b"".join(held))


class StdioServer:
    """The server process and its pipes, driven synchronously."""

    def __init__(self, process: Process, err: Stderr, quiet: bool, exit_memory: ExitMemory | None = None) -> None:
        import selectors
        from collections import deque

        from mcpcli.transports.spawn import STDERR_HELD_MAX, STDERR_TAIL_LINES

        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        self.process = process
        #: Whether this command line's server is slow to exit on EOF (shared with `StdioTransport`).
        self.exit_memory = exit_memory
        self.err = err
        self.quiet = quiet
        self.stdin = process.stdin.fileno()
        self.stdout = process.stdout.fileno()
        self.stderr = process.stderr.fileno()
        for fd in (self.stdin, self.stdout, self.stderr):
            os.set_blocking(fd, False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)
        self.selector.register(self.stderr, selectors.EVENT_READ)
        self.items: deque[Any] = deque()
        from mcpcli.transports import LineSplitter

        self.lines = LineSplitter(MAX_MESSAGE_BYTES)
        self.partial = b""
        self.tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self.eof = False
        self.stdin_gone = False
        #: Its stderr while the era probe is out (`StdioTransport.hold_output`); None: passed on.
        self.held: list[bytes] | None = None if quiet else []
        self.held_size = 0
        self.held_max = STDERR_HELD_MAX
        #: Its stderr is discarded: it ended on the era probe and is started again.
        self.dropping = False
        self.stopped = False

    def release(self, *, drop: bool = False) -> None:
        """`StdioTransport.release_output`: pass on what was held, or discard it for good."""
        held, self.held = self.held, None
        if drop:
            self.dropping = True
        elif held:
            self.err.write(b"".join(held))

    # -- reading -------------------------------------------------------------------

    def next_item(self, deadline: float) -> Any:
        """The next message or problem from the server; None once `deadline` has passed."""
        while not self.items:
            if self.eof:
                raise AssertionError("read past the end")  # pragma: no cover - the caller stops
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._pump(remaining)
        return self.items.popleft()

    def _pump(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            if key.fd == self.stderr:
                self._read_stderr()
            else:
                self._read_stdout()
                if self.eof:
                    return

    def _read_stderr(self) -> bool:
        """Relay what the server wrote on stderr; False at its end (or nothing to read)."""
        try:
            chunk = os.read(self.stderr, READ_CHUNK)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            self.selector.unregister(self.stderr)
            self.stderr = -1
            return False
        if self.held is not None:
            self.held.append(chunk)
            self.held_size += len(chunk)
            if self.held_size > self.held_max:
                self.release()
        elif not self.quiet and not self.dropping:
            self.err.write(chunk)
        lines = (self.partial + chunk).split(b"\n")
        self.partial = lines.pop()[-4096:]
        for raw in lines:
            text = raw.decode("utf-8", "replace").strip()
            if text:
                self.tail.append(text[:300])
        return True

    def drain_stderr(self) -> None:
        while self.stderr >= 0 and self._read_stderr():
            pass

    def _read_stdout(self) -> None:
        from mcpcli.transports import line_item

        try:
            chunk = os.read(self.stdout, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._ended("")
            return
        for line in self.lines.feed(chunk):
            item = line_item(line, "server wrote")
            if item is not None:
                self.items.append(item.message if not isinstance(item, Exception) else item)
        if self.lines.overflow:
            import signal

            from mcpcli.transports.spawn import KILL_GRACE

            self.items.append(MessageTooLarge(f"server sent a message larger than {MAX_MESSAGE_BYTES} bytes"))
            self.signal_group(signal.SIGKILL)
            self.wait_exit(KILL_GRACE)
            self._ended("after an oversized message", flush=False)

    def _ended(self, when: str, *, flush: bool = True) -> None:
        """The server's stdout ended: what it left, then how it went (`StdioTransport._exited`)."""
        from mcpcli.transports import line_item
        from mcpcli.transports.spawn import FLUSH_GRACE

        rest = self.lines.rest()
        if flush and rest.strip():
            item = line_item(rest, "server wrote")
            if item is not None:
                self.items.append(item.message if not isinstance(item, Exception) else item)
        self.selector.unregister(self.stdout)
        if flush:
            self.wait_exit(FLUSH_GRACE)
        self.drain_stderr()
        from mcpcli.transports.spawn import exit_message

        code = self.process.returncode
        self.items.append(ServerExited(exit_message(code, when, self.tail), returncode=code))
        self.eof = True

    # -- writing -------------------------------------------------------------------

    def send(self, message: Any, deadline: float | None) -> None:
        """Write one message; a server that stopped reading is found out by the reader, or,
        when it stops reading while alive, by the request's clock: past `deadline` its stdin
        counts as stuck and nothing more is written (`StdioTransport` leaves it queued)."""
        import select

        view = memoryview(jsonrpc.encode(message) + b"\n")
        while view and not self.stdin_gone:
            try:
                view = view[os.write(self.stdin, view):]
            except BlockingIOError:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    self.stdin_gone = True
                    return
                # Keep its stdout and stderr flowing meanwhile, or a full pipe deadlocks us both.
                readable = [fd for fd in (self.stdout, self.stderr) if fd >= 0 and not self.eof]
                ready, _, _ = select.select(readable, [self.stdin], [], remaining)
                if self.stderr in ready:
                    self._read_stderr()
                if self.stdout in ready and not self.eof:
                    self._read_stdout()
            except OSError:
                self.stdin_gone = True

    # -- the process -----------------------------------------------------------------

    def signal_group(self, sig: int) -> bool:
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def wait_exit(self, timeout: float | None) -> bool:
        """Wait (relaying stderr) until the server exits or `timeout` passes; True if it did."""
        process = self.process
        if process.poll() is not None:
            return True
        try:
            pidfd = os.pidfd_open(process.pid)
        except (AttributeError, OSError):
            import subprocess  # its TimeoutExpired; the common road never loads it (signal, locale)

            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                return False
            return True
        import select

        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return process.poll() is not None
                watched = [pidfd] + ([self.stderr] if self.stderr >= 0 else [])
                ready, _, _ = select.select(watched, [], [], remaining)
                if self.stderr in ready:
                    self._read_stderr()
                if pidfd in ready:
                    process.wait()
                    return True
        finally:
            os.close(pidfd)

    def stop(self) -> None:
        """Close stdin, give the server a moment (none if it is remembered as slow to exit),
        then TERM and KILL its group (as `StdioTransport.shutdown`), then end whatever it
        left in the group."""
        import signal

        from mcpcli.transports.spawn import TERM_GRACE, eof_grace, noted_exit

        if self.stopped:
            return
        self.stopped = True
        assert self.process.stdin is not None
        running = self.process.poll() is None
        try:
            self.process.stdin.close()
        except OSError:
            pass
        grace = eof_grace(self.exit_memory) if running else 0.0
        if grace > 0:
            noted_exit(self.exit_memory, grace, self.wait_exit(grace))
        for sig, wait in ((signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, None)):
            if self.process.poll() is not None:
                break
            self.signal_group(sig)
            self.wait_exit(wait)
        if self.signal_group(0):
            self.signal_group(signal.SIGTERM)
            self.signal_group(signal.SIGKILL)
        self.drain_stderr()
        self.selector.close()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
