"""`attach`: a command's connection relayed onto its session's held connection, as JSON-RPC.

* the command's handshake is answered from the session's cached InitializeResult (or
  DiscoverResult), so a warm command costs the server nothing;
* requests go out under fresh ids (the held session's `Peer` allocates them, and the session's
  router learns whose each is) and progress tokens under daemon-unique ones, so many
  commands share one connection without seeing each other's answers or progress;
* a modern session's list results are reused while their `ttlMs` lasts, until the
  matching list_changed notification (`Held.listings`);
* `resources/subscribe` is shared: the server sees one subscription per URI, every
  subscribed command gets its updates, and the last one to leave unsubscribes.

What the server sends back is routed by `mcpcli.daemon.routing`.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.abc
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from mcpcli.client import Client
from mcpcli.core import localrpc as protocol
from mcpcli.core.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND
from mcpcli.core.protocol import LOG_LEVEL_KEY, SHUTTING_DOWN, UNSUPPORTED_PROTOCOL_VERSION
from mcpcli.errors import McpCliError, RPCError
from mcpcli.relay.listings import STALE_BY_METHOD

from .commands import Attached
from .held import Held, gone_message, typed
from .routing import retagged

__all__ = ["handshake_answer", "relay"]

JSON = dict[str, Any]

#: The list methods whose results a modern session reuses while their `ttlMs` lasts.
LISTS = frozenset(method for methods in STALE_BY_METHOD.values() for method in methods)


async def relay(held: Held, stream: SocketStream, reader: BufferedByteReceiveStream, ids: Iterator[int]) -> None:
    """Relay one attached command until it or the session's connection goes."""
    attached = Attached(held.name, stream, ids)
    held.attached.add(attached)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_pump_out, attached)

            async def watch() -> None:
                await attached.gone.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            while True:
                try:
                    line = await reader.receive_until(b"\n", protocol.MAX_MESSAGE_BYTES)
                except (anyio.IncompleteRead, anyio.DelimiterNotFound, anyio.EndOfStream,
                        anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    break
                if not line.strip():
                    continue
                try:
                    message = protocol.decode(line)
                except protocol.ProtocolViolation:
                    attached.post({"jsonrpc": "2.0", "id": None,
                                   "error": {"code": -32700, "message": "Parse error"}})
                    continue
                _from_command(held, attached, message, tg)
            tg.cancel_scope.cancel()
    finally:
        await _detach(held, attached)


async def _pump_out(attached: Attached) -> None:
    async with attached.outbox:
        async for data in attached.outbox:
            try:
                await attached.stream.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                attached.gone.set()
                return


async def _detach(held: Held, attached: Attached) -> None:
    held.attached.discard(attached)
    held.touch()
    attached.leave()
    for token, (owner, _) in list(held.tokens.items()):
        if owner is attached:
            del held.tokens[token]
    client = held.client
    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
        for uri in list(attached.subscribed):
            await _unsubscribe(held, attached, uri, client)
    attached.outbox_send.close()


def _from_command(held: Held, attached: Attached, message: JSON, tg: anyio.abc.TaskGroup) -> None:
    method = message.get("method")
    has_id = "id" in message
    if not isinstance(method, str):
        if has_id:  # the command's answer to a server request we relayed
            attached.answered(message)
        return
    if not has_id:
        if method == "notifications/initialized":
            return
        if method == "notifications/cancelled":
            params = message.get("params") or {}
            scope = attached.inflight.get(params.get("requestId")) if isinstance(params, dict) else None
            if scope is not None:
                scope.cancel()  # the held session tells the server, under our id
            return
        client = held.client
        if client is not None:
            tg.start_soon(_forward_notification, client, method, message.get("params"))
        return
    request_id = message["id"]
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    handshake = handshake_answer(held, method, params)
    if handshake is not None:
        attached.post({"jsonrpc": "2.0", "id": request_id, **handshake})
        return
    scope = anyio.CancelScope()
    attached.inflight[request_id] = scope
    tg.start_soon(_forward, held, attached, request_id, method, params, scope)


async def _forward_notification(client: Client, method: str, params: Any) -> None:
    with contextlib.suppress(McpCliError):
        await client.peer.notify(method, params if isinstance(params, dict) else None)


def handshake_answer(held: Held, method: str, params: JSON) -> JSON | None:
    """The answer to the command's handshake, from the session's own (no server round trip)."""
    client = held.client
    if client is None or method not in ("initialize", "server/discover"):
        return None
    if method == "initialize":
        if client.era == "legacy":
            return {"result": client.handshake}
        return {"error": {"code": UNSUPPORTED_PROTOCOL_VERSION,
                          "message": "this session speaks a modern protocol revision",
                          "data": {"supported": client.supported_versions}}}
    if client.era == "modern":
        return {"result": client.handshake}
    return {"error": {"code": METHOD_NOT_FOUND, "message": "Method not found: server/discover"}}


async def _forward(
    held: Held, attached: Attached, request_id: Any, method: str, params: JSON, scope: anyio.CancelScope
) -> None:
    client = held.client
    held.calls += 1
    held.touch()
    token: str | None = None
    try:
        with scope:
            if client is None:
                raise held.unavailable()
            if method == "resources/subscribe":
                result = await _subscribe(held, attached, params, client)
            elif method == "resources/unsubscribe":
                uri = params.get("uri")
                result = await _unsubscribe(held, attached, uri, client) if isinstance(uri, str) else {}
            elif (cached := _cached_list(held, client, method, params)) is not None:
                result = cached
            else:
                sent = dict(params)
                meta = sent.get("_meta")
                if isinstance(meta, dict) and "progressToken" in meta:
                    token = f"mcpcli-p{next(attached.ids)}"
                    held.tokens[token] = (attached, meta["progressToken"])
                    sent["_meta"] = {**meta, "progressToken": token}
                ours = client.peer.next_id()
                attached.theirs[ours] = request_id
                if isinstance(meta, dict) and meta.get(LOG_LEVEL_KEY) is not None:
                    attached.logged.add(ours)
                if method == "subscriptions/listen":
                    wanted = params.get("notifications")
                    attached.listens[ours] = wanted if isinstance(wanted, dict) else {}
                task_id = params.get("taskId") if method == "tasks/result" else None
                waiting = held.router.waiting(task_id, attached) if isinstance(task_id, str) else None
                try:
                    with held.router.sent(ours, attached), waiting or contextlib.nullcontext():
                        result = await client.peer.request(
                            method, sent, timeout=None, max_timeout=None, progress_token=False,
                            headers=client.request_headers(method, sent), request_id=ours,
                        )
                finally:
                    attached.theirs.pop(ours, None)
                    attached.listens.pop(ours, None)
                    attached.logged.discard(ours)
                _remember_list(held, method, params, result)
                if method == "subscriptions/listen":
                    result = retagged(result, ours, request_id)
            attached.post({"jsonrpc": "2.0", "id": request_id, "result": result})
            if _keeps_token(result):
                token = None  # the task's progress still goes to this command
            return
    except Exception as exc:
        failure = typed(exc)
        if isinstance(failure, RPCError):
            error: JSON = {"code": failure.code, "message": failure.rpc_message, "data": failure.data}
        else:
            # A shutting-down error: the command's client reports the connection (exit 4).
            error = {"code": SHUTTING_DOWN, "data": {"reason": "shutdown"},
                     "message": gone_message(held, failure)}
        attached.post({"jsonrpc": "2.0", "id": request_id, "error": error})
    finally:
        attached.inflight.pop(request_id, None)
        if token is not None:
            held.tokens.pop(token, None)


def _cached_list(held: Held, client: Client, method: str, params: JSON) -> JSON | None:
    """A fresh list result of a modern session, to answer without a round trip."""
    if method not in LISTS or client.era != "modern":
        return None
    return held.listings.get(method, json.dumps(params.get("cursor")), now=time.monotonic())


def _remember_list(held: Held, method: str, params: JSON, result: JSON) -> None:
    ttl = result.get("ttlMs")
    client = held.client
    if method not in LISTS or client is None or client.era != "modern":
        return
    if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0:
        held.listings.put(method, result, json.dumps(params.get("cursor")),
                          expires=time.monotonic() + ttl / 1000)


async def _subscribe(held: Held, attached: Attached, params: JSON, client: Client) -> JSON:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise RPCError(INVALID_PARAMS, "resources/subscribe needs a uri")
    subscribers = held.subscribers.setdefault(uri, set())
    if not subscribers:
        try:
            await client.peer.request("resources/subscribe", params, timeout=None,
                                         max_timeout=None, progress_token=False)
        except BaseException:
            held.subscribers.pop(uri, None)
            raise
    subscribers.add(attached)
    attached.subscribed.add(uri)
    return {}


async def _unsubscribe(held: Held, attached: Attached, uri: str, client: Client | None) -> JSON:
    attached.subscribed.discard(uri)
    subscribers = held.subscribers.get(uri)
    if subscribers is None or attached not in subscribers:
        return {}
    subscribers.discard(attached)
    if not subscribers:
        del held.subscribers[uri]
        if client is not None:
            with contextlib.suppress(McpCliError):
                await client.peer.request("resources/unsubscribe", {"uri": uri}, timeout=10,
                                             progress_token=False)
    return {}


def _keeps_token(result: JSON) -> bool:
    """A task's progress outlives the request that created it."""
    return "task" in result or result.get("resultType") == "task"
