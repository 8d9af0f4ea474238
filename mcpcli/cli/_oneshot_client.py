"""The one-shot stdio fast path's client (`mcpcli.cli.oneshot`): `Client` and `Session` for
one `tools call`, synchronous, over a server process's pipes.

Imported only once the server is started (it boots while this loads). What goes on the
wire is decided by the protocol core (`mcpcli.core.exchange`), whose flows this client
drives exactly as the full path's `Client` does; what is here is the I/O: a server's
pipes, driven with `selectors`, the session's bookkeeping of one request at a time, and
the answers of a command without a terminal. `Fallback` says the command is the full
path's after all (nothing final yet).
"""

from __future__ import annotations

import os
import sys
import time

from mcpcli.core import jsonrpc
from mcpcli.core.exchange import Exchange, ExitedOnProbe, PageRepeat, ProbeTraits
from mcpcli.core.flow import Answer, Flow, ListTools, Notify, Op, Send, run_sync
from mcpcli.core.handshake import rpc_error_from, with_meta
from mcpcli.core.protocol import MAX_MESSAGE_BYTES, RELATED_TASK_KEY
from mcpcli.core.requests import (
    RequestClock,
    cancel_notice,
    cancels_on_giving_up,
    outgoing_request,
    timed_out_message,
)
from mcpcli.core.tasks import may_become_task, server_accepts_tasks
from mcpcli.errors import (
    MessageTooLarge,
    ProtocolError,
    RequestTimeout,
    RPCError,
    ServerExited,
    StrayLine,
    UsageError,
    handshake_timeout,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable
    from typing import Any, TypeAlias, TypeVar

    JSON: TypeAlias = dict[str, Any]
    T = TypeVar("T")

__all__ = ["GONE", "Fallback", "Stderr", "StdioServer", "SyncClient", "call_tool"]

READ_CHUNK = 256 * 1024
#: How much stderr is held before the call is sent, at most.
HELD_MAX = 4 * 1024 * 1024
#: `_call`'s status when our stdout's reader left (`mcp ... | head`): exit 0, quietly.
GONE = -1


class Fallback(Exception):
    """Off the common road before the call was sent: the full path runs the command."""


class _HandshakeTimeout(Exception):
    """--timeout ran out during the probe and handshake (they share it)."""


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

    def __init__(self, process: subprocess.Popen[bytes], err: Stderr, quiet: bool) -> None:
        import selectors
        from collections import deque

        from mcpcli.transports.spawn import STDERR_HELD_MAX, STDERR_TAIL_LINES

        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        self.process = process
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
        import subprocess

        process = self.process
        if process.poll() is not None:
            return True
        try:
            pidfd = os.pidfd_open(process.pid)
        except (AttributeError, OSError):
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
        """Close stdin, give the server a moment, then TERM and KILL its group (as
        `StdioTransport.shutdown`), then end whatever it left in the group."""
        import signal

        from mcpcli.transports.spawn import EOF_GRACE, TERM_GRACE

        if self.stopped:
            return
        self.stopped = True
        assert self.process.stdin is not None
        try:
            self.process.stdin.close()
        except OSError:
            pass
        for sig, grace in ((None, EOF_GRACE), (signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, None)):
            if self.process.poll() is not None:
                break
            if sig is not None:
                self.signal_group(sig)
            self.wait_exit(grace)
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


class SyncClient:
    """What `Client` and `Session` do for one tools/call, without an event loop."""

    def __init__(self, server: StdioServer, prog: str, timeout: float, max_timeout: float, quiet: bool,
                 trace: JSON | None = None) -> None:
        from mcpcli import __version__

        self.server = server
        self.prog = prog
        self.timeout = timeout
        self.max_timeout = max_timeout
        self.quiet = quiet
        #: The trace context requests carry in their `_meta` (`fast.trace_meta`).
        self.trace = trace or {}
        self.ids = 0
        self.closed: ServerExited | None = None
        #: The protocol, decided without I/O, as the full path's `Client` decides it.
        self.exchange = Exchange(
            client_info={"name": "mcpcli", "title": "mcpcli", "version": __version__},
            capabilities=_capabilities,
            timeout=timeout,
        )
        #: While negotiating: when --timeout runs out for the whole set-up.
        self.handshake_deadline: float | None = None
        #: How long a write may wait for a server that does not read (the request's clock).
        self.write_by: float | None = None
        #: Starts the server again (after it ended on the era probe).
        self.respawn: Callable[[], StdioServer] | None = None

    def warn(self, message: str) -> None:
        from mcpcli.text import one_line

        self.server.err.line(f"{self.prog}: warning: {one_line(message, newline=' | ')}")

    # -- sending -----------------------------------------------------------------------

    def notify(self, method: str, params: JSON | None = None) -> None:
        if self.closed is not None:
            raise self.closed
        self.server.send(jsonrpc.Notification(method, params), self.write_by)

    def request(self, method: str, params: JSON | None, *, timeout: float | bool | None = True,
                max_timeout: float | bool | None = True, progress_token: bool = True,
                cancel_on_timeout: bool = True) -> JSON:
        """`Session.request`: send, answer what the server asks meanwhile, return the result.
        `timeout` and `max_timeout` as there: True for the command's, None for none."""
        if self.closed is not None:
            raise self.closed
        self.ids += 1
        request_id = self.ids
        if self.trace:
            from mcpcli.core.tracecontext import carried_by

            if carried_by(method):
                params = with_meta(params or {}, self.trace)  # as `Client._send`, before the token
        request = outgoing_request(method, params, request_id, progress_token=progress_token)
        now = time.monotonic()
        clock = RequestClock.start(now, self.timeout if timeout is True else _seconds(timeout),
                                   self.max_timeout if max_timeout is True else _seconds(max_timeout))
        deadline = clock.deadline
        self.write_by = deadline if self.handshake_deadline is None else min(deadline, self.handshake_deadline)
        try:
            # Inside the try: a Ctrl-C or SIGTERM landing right after the write still
            # cancels the request the server has (it may be reading it already).
            self.server.send(request, self.write_by)
            while True:
                limit = clock.deadline
                if self.handshake_deadline is not None:
                    limit = min(limit, self.handshake_deadline)
                self.write_by = limit
                # A clock runs out however busy the server keeps us (a flood of messages).
                item = self.server.next_item(limit) if time.monotonic() < limit else None
                if item is None:
                    if self.handshake_deadline is not None and time.monotonic() >= self.handshake_deadline:
                        raise _HandshakeTimeout
                    if clock.remaining(time.monotonic()) > 0:
                        continue
                    if cancel_on_timeout and cancels_on_giving_up(method):
                        self._cancel(request_id, "timed out")
                    raise RequestTimeout(timed_out_message(method, time.monotonic() - now))
                if isinstance(item, (jsonrpc.Response, jsonrpc.ErrorResponse)) and item.id == request_id \
                        and type(item.id) is type(request_id):
                    if isinstance(item, jsonrpc.Response):
                        return item.result
                    raise rpc_error_from(item.error)
                if isinstance(item, jsonrpc.Notification) and item.method == "notifications/progress":
                    progress = item.params or {}
                    if _is_key(progress.get("progressToken"), request_id):
                        clock.progressed(progress, time.monotonic())
                        continue
                if isinstance(item, ProtocolError) and _is_key(item.request_id, request_id):
                    raise item
                self._dispatch(item)
        except KeyboardInterrupt:
            if cancels_on_giving_up(method) and self.closed is None:
                self._cancel(request_id, "cancelled by the user")
            raise

    def _cancel(self, request_id: int, reason: str) -> None:
        notice = cancel_notice(request_id, reason)
        try:
            self.notify(notice.method, notice.params)
        except ServerExited:
            pass

    # -- what the server sends unasked -------------------------------------------------------

    def _dispatch(self, item: Any) -> None:
        if isinstance(item, ServerExited):
            self.closed = item
            raise item
        if isinstance(item, Exception):  # a garbage line, an oversized message
            if not (self.quiet and isinstance(item, StrayLine)):  # -q drops stray lines
                self.warn(str(item))
        elif isinstance(item, jsonrpc.Batch):
            self._reply(jsonrpc.ErrorResponse(None, jsonrpc.ErrorObject(
                jsonrpc.INVALID_REQUEST, "JSON-RPC batches are not supported in this protocol version")))
        elif isinstance(item, jsonrpc.Request):
            self._answer(item)
        elif isinstance(item, jsonrpc.Notification):
            if item.method == "notifications/message" and not self.quiet:
                from mcpcli.text import UNASKED_LOG_FLOOR, log_line, log_rank

                params = item.params or {}
                if log_rank(params.get("level")) >= log_rank(UNASKED_LOG_FLOOR):
                    self.server.err.line(log_line(params))
        elif isinstance(item, jsonrpc.ErrorResponse) and item.id is None:
            self.warn(str(rpc_error_from(item.error)))

    def _reply(self, message: Any) -> None:
        if self.closed is None or isinstance(message, (jsonrpc.Response, jsonrpc.ErrorResponse)):
            self.server.send(message, self.write_by)

    def _answer(self, request: jsonrpc.Request) -> None:
        """`Client._on_request` with the features of a command without a terminal."""
        params = request.params or {}
        try:
            result = self._serve(request.method, params)
        except RPCError as exc:
            self._reply(jsonrpc.ErrorResponse(request.id, jsonrpc.ErrorObject(exc.code, exc.rpc_message, exc.data)))
            return
        meta = params.get("_meta")
        related = meta.get(RELATED_TASK_KEY) if isinstance(meta, dict) else None
        if isinstance(related, dict):
            result = dict(result)
            result["_meta"] = {**(result.get("_meta") or {}), RELATED_TASK_KEY: related}
        self._reply(jsonrpc.Response(request.id, result))

    def _serve(self, method: str, params: JSON) -> JSON:
        if method == "ping":
            return {}
        if method == "elicitation/create":
            # `_elicit.decline_with_notice`: no terminal, no --elicit-json/--elicit-defaults.
            from mcpcli.text import printable

            message = printable(str(params.get("message", "")), keep_newlines=False)
            self.warn(f"declined the server's request for input ({message[:120]}); "
                      "answer with --elicit-json or --elicit-defaults, or run on a terminal")
            return {"action": "decline"}
        raise RPCError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")

    # -- driving the protocol core ---------------------------------------------------------

    def drive(self, flow: Flow[T]) -> T:
        """Run one of the exchange's flows on this server, as `Client._drive` does."""
        return run_sync(flow, self._perform)

    def _perform(self, op: Op) -> Any:
        if isinstance(op, Send):
            if not op.probe:
                self.server.release()
            try:
                result = self.request(op.method, op.params, timeout=op.timeout, max_timeout=op.max_timeout,
                                      progress_token=op.progress_token, cancel_on_timeout=op.cancel_on_timeout)
            except ServerExited:
                raise  # a probe's: what the server said is dropped, if it is started again
            finally:
                if op.probe and self.closed is None:
                    self.server.release()
            return result
        if isinstance(op, Notify):
            self.server.release()
            self.notify(op.method, op.params)
            return None
        if isinstance(op, Answer):
            return {key: self._serve(method, params) for key, method, params in op.requests}
        if isinstance(op, ListTools):
            return self.list_tools()
        raise AssertionError(f"unknown operation {op!r}")

    # -- the era ---------------------------------------------------------------------------

    def negotiate(self, command_line: list[str], probe_timeout: float) -> None:
        """`Client._negotiate_within` for a stdio server: the same flow, the whole set-up
        bounded by --timeout, a server that ends on the probe started again."""
        from mcpcli.cache import EraRecords

        self.exchange.probe_timeout = probe_timeout
        memory = EraRecords(command_line, None)
        self.handshake_deadline = time.monotonic() + self.timeout
        try:
            try:
                self.drive(self.exchange.negotiate(ProbeTraits(silence_is_legacy=True), memory))
            except ExitedOnProbe:
                self._restart()  # an rmcp server ends at a first message that is not initialize
                self.drive(self.exchange.initialize_after_probe())
        except _HandshakeTimeout:
            raise handshake_timeout(self.timeout) from None
        finally:
            self.handshake_deadline = None
            self.server.release()

    def _restart(self) -> None:
        """The server ended on the probe, unanswered: stop it, unheard, and start it again
        (`Client._negotiate_within`); ids start again with the new connection."""
        if self.respawn is None:
            raise self.closed or ServerExited("server closed its stdout")
        self.server.release(drop=True)
        self.server.stop()
        self.server = self.respawn()
        self.closed = None
        self.ids = 0

    # -- operations --------------------------------------------------------------------------

    def list_tools(self, *, cache_target: str | None = None) -> JSON:
        """`Client.list_tools` (every page); a repeated or endless cursor is the full path's to
        word. With a named target, a 2026-07-28 server's fresh cached listing is reused, and
        a live one stored (for completion, and the next call)."""
        from mcpcli import cache

        exchange = self.exchange
        if cache_target and exchange.era == "modern":
            cached = cache.fresh(cache_target, "tools/list")
            if cached is not None and isinstance(cached.get("tools"), list):
                exchange.set_tools(cached)
                return cached
        try:
            listing = self.drive(exchange.pages("tools/list", "tools", on_repeat="raise"))
        except PageRepeat as exc:
            raise Fallback from exc
        if cache_target:
            cache.remember(cache_target, "tools/list", listing)
        exchange.set_tools(listing)
        return listing


def _seconds(value: float | bool | None) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _capabilities(era: str) -> JSON:
    """What a command without a terminal declares (`ClientFeatures()`): form elicitation,
    which it declines with a warning."""
    return {"elicitation": {"form": {}}}


def _is_key(value: Any, request_id: int) -> bool:
    """Whether `value` finds `request_id` in a dict keyed by ids (as the session's lookup does)."""
    try:
        return {request_id: True}.get(value, False)
    except TypeError:
        return False


def call_tool(client: SyncClient, call: dict[str, Any], command_line: list[str], target: str | None,
          probe_timeout: float) -> int:
    """Negotiate, list, type and check the arguments, call, print: `mcp tools call`'s body."""
    from mcpcli.args import UnknownTool, call_arguments, needs_listing, read_json_source

    tool = call["tool"]
    base = read_json_source(call["json"]) if call["json"] is not None else None
    client.negotiate(command_line, probe_timeout)
    exchange = client.exchange
    validate = call["validate"]
    definition = None
    if needs_listing(call["args"], validate=validate):
        client.list_tools(cache_target=target)
        definition = exchange.known_tool(tool)
    try:
        arguments = call_arguments(tool, definition, call["args"], base=base, validate=validate)
    except UnknownTool:
        # A capability the one-shot path never declares (sampling, URL elicitation, roots)
        # may hide it: the full path says so (`mcpcli.hidden_tools`).
        raise Fallback from None
    if exchange.era == "legacy" and exchange.tools is None and server_accepts_tasks(exchange.capabilities):
        client.list_tools()  # whether the call asks for a task depends on the tool
    if may_become_task(exchange.era, exchange.capabilities, exchange.known_tool(tool)):
        raise Fallback  # the full path follows tasks
    client.server.err.release()  # from here on, what happens is final
    called = client.drive(exchange.call_tool(tool, arguments))
    if called.task is not None:
        raise ProtocolError("the server answered with a task, which the one-shot path cannot follow",
                            hint="run it again with MCPCLI_NO_FAST_PATH=1")
    result = called.result
    from mcpcli.cli.fast import emit

    try:
        failed = emit(result, call)
    except BrokenPipeError:
        return GONE
    if failed is not None:
        raise UsageError(failed)
    return 1 if result.get("isError") else 0
