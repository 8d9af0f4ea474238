"""Where a session's server messages go: to the command that caused them, else the log.

The rules that find the command are the relay's (`mcpcli.relay.routing.Router`, set up
in `Held`): the command whose request the transport says carried the message
(Streamable HTTP), the one waiting on the task it is tagged with, a 2026-07-28 log
message to the one command that asked for log messages, else the one command with
requests in flight; with none or several, requests are declined (as a client without
the capability would) and notifications go to the session's log.

Before those rules: progress goes to the command whose (renamed) token it carries,
`resources/updated` to every command subscribed to the URI, and a 2026-07-28
`subscriptions/listen`'s notifications to the command whose listen they are tagged with
(`_meta` subscriptionId, the listen's id, given back as the command's own), or, from a
server that leaves the tag out, to every command whose listen asks for that kind (and
that URI).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, cast

from mcpcli import rundir as paths
from mcpcli.client import caused_by
from mcpcli.core import localrpc as protocol
from mcpcli.core.jsonrpc import RequestId
from mcpcli.core.protocol import SUBSCRIPTION_ID_KEY
from mcpcli.relay.routing import Message

from .commands import Attached, declined
from .held import Held

__all__ = ["LISTEN_FLAGS", "listens_for", "retagged", "server_notification", "server_request", "to_log"]

log = logging.getLogger("mcpcli.daemon")

JSON = dict[str, Any]

#: The `subscriptions/listen` flag that asks for a list_changed notification (2026-07-28).
LISTEN_FLAGS = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}


async def server_request(held: Held, method: str, params: JSON) -> JSON:
    """A server request (elicitation, sampling): asked of the command that caused it."""
    owner = held.router.route(Message(method, params, caused_by.get(), asking=True))
    if not isinstance(owner, Attached):
        log.info("session %s: declined %s (no single command to ask)", held.name, method)
        return declined(method)
    return await owner.ask(method, params)


def server_notification(held: Held, method: str, params: JSON) -> None:
    """A server notification: to the command(s) it is for, else into the session's log."""
    if method.endswith("/list_changed"):
        held.listings.changed(method)
    if _to_listeners(held, method, params):
        return
    if method == "notifications/progress":
        route = held.tokens.get(params.get("progressToken"))  # type: ignore[arg-type]
        if route is not None:
            attached, token = route
            attached.post({"jsonrpc": "2.0", "method": method,
                           "params": {**params, "progressToken": token}})
            return
    if method == "notifications/resources/updated":
        uri = params.get("uri")
        for attached in held.subscribers.get(uri, set()) if isinstance(uri, str) else set():
            attached.post({"jsonrpc": "2.0", "method": method, "params": params})
        return
    owner = held.router.route(Message(method, params, caused_by.get()))
    if owner is not None and (isinstance(owner, Attached) or owner.wanted):
        owner.post({"jsonrpc": "2.0", "method": method, "params": params})
        return
    to_log(held, method, params)


def _to_listeners(held: Held, method: str, params: JSON) -> bool:
    """Deliver a `subscriptions/listen` notification (2026-07-28); False if it is none.

    The server tags each with its listen's id (`_meta` subscriptionId): ours, so the
    command that sent the listen gets it, tagged with its own id. A tag no listen in
    flight has (its command left) goes to the session's log. An untagged change
    notification from a server that leaves the tag out goes to every command whose
    listen asks for it (list_changed by kind, resources/updated by URI)."""
    meta = params.get("_meta")
    sid = meta.get(SUBSCRIPTION_ID_KEY) if isinstance(meta, dict) else None
    if isinstance(sid, (int, str)) and not isinstance(sid, bool):
        owner = held.router.requests.get(sid)
        if not isinstance(owner, Attached) or owner not in held.attached or sid not in owner.listens:
            to_log(held, method, params)
            return True
        tagged = {**params, "_meta": {**cast(JSON, meta), SUBSCRIPTION_ID_KEY: owner.theirs[sid]}}
        owner.post({"jsonrpc": "2.0", "method": method, "params": tagged})
        return True
    if method != "notifications/resources/updated" and method not in LISTEN_FLAGS:
        return False
    uri = params.get("uri")
    listeners = [a for a in held.attached if any(listens_for(w, method, uri) for w in a.listens.values())]
    for attached in listeners:
        attached.post({"jsonrpc": "2.0", "method": method, "params": params})
    return bool(listeners)


def to_log(held: Held, method: str, params: JSON) -> None:
    """A server notification no command takes: into the session's log."""
    line = protocol.encode({"notification": method, "params": params})
    with contextlib.suppress(OSError):
        paths.append_ring(held.log_path, b"[mcpcli] " + line)


def listens_for(wanted: JSON, method: str, uri: Any) -> bool:
    """Whether a listen that asked for `wanted` (its `notifications`) takes this one."""
    if method == "notifications/resources/updated":
        uris = wanted.get("resourceSubscriptions")
        return isinstance(uris, list) and uri in uris
    return wanted.get(LISTEN_FLAGS[method]) is True


def retagged(result: JSON, ours: RequestId, theirs: Any) -> JSON:
    """A listen's final result, its subscriptionId (ours) given back as the command's id."""
    meta = result.get("_meta")
    if not isinstance(meta, dict) or meta.get(SUBSCRIPTION_ID_KEY) != ours:
        return result
    return {**result, "_meta": {**meta, SUBSCRIPTION_ID_KEY: theirs}}
