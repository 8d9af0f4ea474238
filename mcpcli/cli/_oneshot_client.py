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

import time

from mcpcli.cli._oneshot_pipes import Stderr, StdioServer
from mcpcli.core import jsonrpc
from mcpcli.core.era import ProbeTraits
from mcpcli.core.exchange import Exchange, ExitedOnProbe, PageRepeat
from mcpcli.core.flow import Answer, Flow, ListTools, Notify, Op, Send, run_sync
from mcpcli.core.handshake import rpc_error_from, with_meta
from mcpcli.core.protocol import RELATED_TASK_KEY
from mcpcli.core.requests import (
    RequestClock,
    cancel_notice,
    cancels_on_giving_up,
    outgoing_request,
    timed_out_message,
)
from mcpcli.core.tasks import may_become_task, server_accepts_tasks
from mcpcli.errors import (
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
    from collections.abc import Callable
    from typing import Any, TypeAlias, TypeVar

    JSON: TypeAlias = dict[str, Any]
    T = TypeVar("T")

__all__ = ["GONE", "Fallback", "Stderr", "StdioServer", "SyncClient", "call_tool"]
#: `_call`'s status when our stdout's reader left (`mcp ... | head`): exit 0, quietly.
GONE = -1


class Fallback(Exception):
    """Off the common road before the call was sent: the full path runs the command."""


class _HandshakeTimeout(Exception):
    """--timeout ran out during the probe and handshake (they share it)."""


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
