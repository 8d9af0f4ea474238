"""The server runtime (`mcpcli.server`) against requests with random params, in both eras.

A client's params are outside input. Property: whatever a request's params hold, the
server answers it with a result or an error the client can act on (invalid params,
not found...), never -32603 Internal error, which is what an exception the
validation missed becomes (a list where a string goes, used as a dict key, was one).
"""

from __future__ import annotations

from typing import Any

import anyio
from hypothesis import example, given
from hypothesis import strategies as st

from fuzz.strategies import json_values
from mcpcli.core.protocol import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    PROTOCOL_VERSION_KEY,
)
from mcpcli.errors import RPCError
from mcpcli.rpc.peer import Peer
from mcpcli.server import Server
from mcpcli.server.backend import CallContext
from mcpcli.transports.memory import memory_pair

JSON = dict[str, Any]
INTERNAL_ERROR = -32603

#: Every request method a server answers but `subscriptions/listen`, which, valid, stays open.
METHODS = [
    "ping", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list",
    "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
    "completion/complete", "logging/setLevel", "tasks/get", "tasks/cancel", "tasks/list", "tasks/result",
    "server/discover",
]
#: The keys the methods read, so that random values land where they are looked at.
KEYS = ["name", "arguments", "uri", "cursor", "level", "ref", "argument", "context", "taskId", "task",
        "type", "value", "_meta", "notifications"]


class Backend:
    """One of everything, each answering at once: what is fuzzed is the runtime's reading
    of the params before a backend sees them."""

    def server_info(self) -> JSON:
        return {"name": "fuzz", "version": "1"}

    def instructions(self) -> str | None:
        return None

    def capabilities(self) -> JSON:
        return {"tools": {}, "prompts": {}, "resources": {"subscribe": True}, "completions": {}, "logging": {}}

    def set_change_listener(self, listener: object) -> None:
        pass

    async def list_tools(self) -> list[JSON]:
        return [{"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        return {"content": [{"type": "text", "text": str(arguments.get("text", ""))}]}

    async def list_resources(self) -> list[JSON]:
        return [{"uri": "mem://a", "name": "a"}]

    async def list_resource_templates(self) -> list[JSON]:
        return [{"uriTemplate": "mem://items/{id}", "name": "item"}]

    async def read_resource(self, uri: str, ctx: CallContext) -> JSON:
        if uri != "mem://a":
            raise RPCError(-32602, f"Resource not found: {uri}")
        return {"contents": [{"uri": uri, "text": "a"}]}

    async def list_prompts(self) -> list[JSON]:
        return [{"name": "greet", "arguments": [{"name": "who"}]}]

    async def get_prompt(self, name: str, arguments: dict[str, str], ctx: CallContext) -> JSON:
        if name != "greet":
            raise RPCError(-32602, f"Unknown prompt: {name}")
        return {"messages": [{"role": "user", "content": {"type": "text", "text": f"hi {arguments.get('who')}"}}]}

    async def complete(self, ref: JSON, argument: JSON, context: JSON) -> JSON:
        return {"completion": {"values": []}}

    async def subscribe_resource(self, uri: str) -> None:
        pass

    async def unsubscribe_resource(self, uri: str) -> None:
        pass


def modern_meta(extra: JSON) -> JSON:
    return {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_INFO_KEY: {"name": "fuzz", "version": "0"},
            CLIENT_CAPABILITIES_KEY: {}, **extra}


params_of = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=4)
#: A 2026-07-28 request's `_meta`: valid, with random entries over it, or random whole.
metas = (st.dictionaries(st.sampled_from([LOG_LEVEL_KEY, "progressToken", CLIENT_INFO_KEY]), json_values,
                         max_size=2).map(modern_meta)
         | st.dictionaries(st.sampled_from([PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY, LOG_LEVEL_KEY]),
                           json_values, max_size=3))


async def answer(era: str, method: str, params: JSON) -> tuple[int | None, str]:
    """The error code the server answers `method` with (None: a result) and its message."""
    server = Server(Backend())
    outcome: tuple[int | None, str] = (None, "")
    async with memory_pair() as (client_side, server_side), anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_side)
        async with Peer(client_side) as peer:
            if era == "legacy":
                await peer.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                  "clientInfo": {"name": "fuzz", "version": "0"}},
                                   progress_token=False)
                await peer.notify("notifications/initialized", None)
            try:
                await peer.request(method, params, timeout=5, progress_token=False)
            except RPCError as exc:
                outcome = exc.code, exc.rpc_message
        tg.cancel_scope.cancel()  # the server's serve task (a return in here would be lost to it)
    return outcome


@given(st.sampled_from(["legacy", "modern"]), st.sampled_from(METHODS), params_of, metas)
@example("legacy", "logging/setLevel", {"level": ["warning"]}, {})  # once an unhashable dict key
@example("modern", "tools/list", {}, modern_meta({LOG_LEVEL_KEY: {}}))  # the same in _meta
def test_no_params_make_an_internal_error(era: str, method: str, params: JSON, meta: JSON) -> None:
    if era == "modern":
        params = {**params, "_meta": meta}
    code, message = anyio.run(answer, era, method, params)
    assert code != INTERNAL_ERROR, (era, method, params, message)
