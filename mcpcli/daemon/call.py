"""The `call` op: one tool call on a session for the one-shot fast path, answered as one
line (after the call's log messages when the command asks for them).

It is prepared as `mcp tools call` prepares it (`mcpcli.args.call_arguments`: `--arg`
typed by the tool's schema, checked) and bounded by the command's `--timeout` and
`--max-timeout`; a command that hangs up cancels it, on the server too.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from mcpcli.core import localrpc as protocol
from mcpcli.core import tracecontext
from mcpcli.errors import (
    ConnectionClosed,
    McpCliError,
    RequestTimeout,
    ServerShuttingDown,
    UsageError,
)

from .commands import CallSink
from .held import Held, Sessions, calling, gone_message, typed
from .ops import string_map

__all__ = ["serve_call"]

JSON = dict[str, Any]


async def serve_call(sessions: Sessions, message: JSON, stream: SocketStream,
                     reader: BufferedByteReceiveStream) -> JSON | None:
    """The `call` op's answer (None: the command went away, and the call was cancelled)."""
    sink = CallSink(message.get("notifications") is True)
    return await _unless_hung_up(reader, _op_call(sessions, message, sink), stream, sink)


def _seconds(value: Any) -> float | None:
    """A `call` op's timeout field: positive seconds, else no limit."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf:
        return float(value)
    return None


async def _unless_hung_up(reader: BufferedByteReceiveStream, work: Awaitable[JSON],
                          stream: SocketStream, sink: CallSink) -> JSON | None:
    """Run `work` unless the command hangs up first; then cancel it (on the server too).

    The notifications routed to `sink` meanwhile are written out before this returns
    (so before the answer), its error too."""
    done: list[JSON] = []
    failed: list[Exception] = []
    async with anyio.create_task_group() as tg:
        async def run() -> None:
            try:
                done.append(await work)
            except Exception as exc:  # answered after the notifications it followed
                failed.append(exc)
            sink.outbox_send.close()
            await pumped.wait()
            tg.cancel_scope.cancel()

        pumped = anyio.Event()

        async def pump() -> None:
            try:
                await sink.pump(stream)
            finally:
                pumped.set()

        async def watch() -> None:
            with contextlib.suppress(Exception):
                await reader.receive()  # a command sends nothing more after its request
            tg.cancel_scope.cancel()

        tg.start_soon(run)
        tg.start_soon(watch)
        tg.start_soon(pump)
    if failed:
        raise failed[0]
    return done[0] if done else None


async def _op_call(sessions: Sessions, message: JSON, sink: CallSink) -> JSON:
    keep_alive = message.get("keep_alive")
    if keep_alive is not None and not _joins(sessions, message.get("name"), keep_alive):
        # Not this keepAlive server's session as `open` would join it (none, another
        # server, another profile, a config it cannot read): the command's full path
        # opens or joins it, and words any problem, itself.
        return {**protocol.error(f"no session {message.get('name')!r} of this keepAlive server"),
                "fallback": True}
    held = await sessions.usable(message.get("name"))
    held.call_sinks.add(sink)
    making = calling.set(sink)  # the requests the call sends are this op's
    # The command's trace (`--traceparent`, TRACEPARENT): the call's requests carry it
    # on, as the command's own client would (the daemon records no spans).
    trace = message.get("trace")
    token = tracecontext.current.set(
        tracecontext.parse(trace.get("traceparent"), trace.get("tracestate")) if isinstance(trace, dict) else None
    )
    try:
        return await _call(held, message)
    finally:
        tracecontext.current.reset(token)
        calling.reset(making)
        held.call_sinks.discard(sink)


def _joins(sessions: Sessions, name: Any, keep_alive: Any) -> bool:
    """Whether the `call` of a keepAlive server by its name (`keep_alive`: the server's name,
    the command's config file, the values of the variables its entry names, the profile)
    may use session `name` as is: the entry resolves as the command would resolve it and
    is the session's, with the same profile (what `open` checks when it joins)."""
    from mcpcli.config import Config

    if not isinstance(keep_alive, dict) or not isinstance(name, str):
        return False
    server, config, env, profile = (keep_alive.get(k) for k in ("server", "config", "env", "profile"))
    if (not isinstance(server, str) or not isinstance(config, str) or not os.path.isabs(config)
            or not string_map(env) or not (profile is None or isinstance(profile, str))):
        return False
    held = sessions.by_name.get(name)
    if held is None:
        return False
    try:
        entry = Config(Path(config)).get(server)
        if entry is None or not entry.keep_alive or entry.transport == "yaml":
            return False  # a tools.yaml path is the command's, relative to its directory
        resolved = entry.resolved(env)
    except McpCliError:
        return False
    return held.same_target(resolved) and held.connect.profile == profile


async def _call(held: Held, message: JSON) -> JSON:
    from mcpcli.args import call_arguments, meta_items, needs_listing

    client = held.client
    assert client is not None
    tool = message.get("tool")
    if not isinstance(tool, str):
        raise UsageError("call: a tool name is needed")
    items = message.get("args") or []
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise UsageError("call: args must be a list of strings")
    for item in items:
        if "=@" in item:
            # A file named on the command line is relative to the command's directory.
            raise UsageError("call: --arg KEY=@FILE is read by the command, not the daemon")
    base = None
    if message.get("json") is not None:
        from mcpcli.args import read_json_source

        text = message["json"]
        if not isinstance(text, str) or text.startswith("@") or text == "-":
            raise UsageError("call: --args must be JSON text here")
        base = read_json_source(text)
    meta_raw = message.get("meta") or []
    if not isinstance(meta_raw, list) or not all(isinstance(i, str) for i in meta_raw):
        raise UsageError("call: meta must be a list of strings")
    meta = meta_items(meta_raw)  # --meta KEY=VALUE, read as the command's own client reads it
    validate = message.get("validate", True) is not False
    timeout = _seconds(message.get("timeout"))
    max_timeout = _seconds(message.get("max_timeout"))
    held.touch()
    definition = listing = None
    if needs_listing(items, validate=validate):
        # What `mcp tools call` asks before calling, under the same bound (--timeout).
        try:
            with anyio.fail_after(timeout):
                definition = await client.get_tool(tool)
                if definition is None and validate:
                    listing = await client.list_tools()
        except TimeoutError:
            raise RequestTimeout(f"tools/list timed out after {timeout:.1f}s") from None
    arguments = call_arguments(tool, definition, items, base=base, validate=validate, listing=listing)
    held.calls += 1
    held.calls_in_flight += 1
    try:
        # The command's --timeout and --max-timeout, as its own client would apply them
        # (progress restarts the clock; the server is told on timeout).
        result = await client.call_tool(tool, arguments, timeout=timeout, max_timeout=max_timeout,
                                        meta=meta or None)
    except Exception as exc:
        failure = typed(exc)
        if not isinstance(failure, ConnectionClosed):
            raise
        # The server went away under the call: what the relay tells an attached command,
        # as its client words it (`session.rpc_error_from`), so both paths print one line.
        raise ServerShuttingDown(
            f"the server shut down before answering: {gone_message(held, failure)}") from None
    finally:
        held.calls_in_flight -= 1
    return protocol.ok(result=result)
