"""The request handlers of a `Server`: one per MCP method, for each era.

`Handlers(runtime, ...).legacy()` and `.modern()` are the method tables the server
dispatches with. Handlers check params (-32602), ask the backend, and shape what
it returns: lists are paginated with the server's signed cursors, completion
values are clipped to 100, a missing resource gets the era's error code. Calls
into the backend that may ask the client for input go through
`mcpcli.server.mrtr.call_backend`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from mcpcli.core.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND
from mcpcli.core.protocol import ALL_VERSIONS, RESOURCE_NOT_FOUND, SUBSCRIPTION_ID_KEY, TOOLS_CALL
from mcpcli.errors import RPCError
from mcpcli.server._state import Runtime
from mcpcli.server.backend import ResourceNotFound
from mcpcli.server.calls import Call, Handler, IncomingRequest, tool_call_target
from mcpcli.server.meta import LEVEL_RANK, ModernError
from mcpcli.server.mrtr import call_backend
from mcpcli.server.subscriptions import TASK_STATUS, Sink, listen_filter, subscribable
from mcpcli.server.tasks.handlers import TaskHandlers
from mcpcli.server.tasks.legacy import LegacyTasks

__all__ = ["Handler", "Handlers"]

JSON = dict[str, Any]

#: At most this many completion values per answer (the spec's limit).
_MAX_COMPLETIONS = 100


class Handlers:
    """The handlers of one server's requests."""

    def __init__(
        self,
        runtime: Runtime,
        capabilities: Callable[[str], JSON],
        tasks: TaskHandlers,
        legacy_tasks: LegacyTasks,
    ) -> None:
        self.runtime = runtime
        self.backend = runtime.backend
        #: The server's capabilities for a protocol revision (`Server.capabilities`).
        self.capabilities = capabilities
        self.tasks = tasks
        self.legacy_tasks = legacy_tasks

    def legacy(self) -> dict[str, Handler]:
        """Methods of an initialized session (2024-11-05 .. 2025-11-25)."""
        return {
            "ping": self.ping,
            "logging/setLevel": self.set_level,
            "tools/list": self.tools_list,
            TOOLS_CALL: self.tools_call,
            "prompts/list": self.prompts_list,
            "prompts/get": self.prompts_get,
            "resources/list": self.resources_list,
            "resources/templates/list": self.templates_list,
            "resources/read": self.resources_read,
            "resources/subscribe": self.subscribe,
            "resources/unsubscribe": self.unsubscribe,
            "completion/complete": self.complete,
        }

    def modern(self) -> dict[str, Handler]:
        """Methods of a stateless 2026-07-28 request."""
        return {
            "server/discover": self.discover,
            # Removed in 2026-07-28, still sent by real clients: answered (but see http_modern).
            "ping": self.ping,
            "tools/list": self.tools_list,
            TOOLS_CALL: self.tools_call,
            "prompts/list": self.prompts_list,
            "prompts/get": self.prompts_get,
            "resources/list": self.resources_list,
            "resources/templates/list": self.templates_list,
            "resources/read": self.resources_read,
            "completion/complete": self.complete,
            "subscriptions/listen": self.listen,
        }

    def _require(self, kind: str) -> None:
        if kind not in self.backend.capabilities():
            raise ModernError(METHOD_NOT_FOUND, f"Method not found: this server has no {kind}", status=404)

    # -- session and discovery ---------------------------------------------------------

    async def ping(self, rq: IncomingRequest) -> JSON:
        return {}

    async def set_level(self, rq: IncomingRequest) -> JSON:
        level = rq.params.get("level")
        if not isinstance(level, str) or level not in LEVEL_RANK:
            raise RPCError(INVALID_PARAMS, f"Invalid params: unknown log level {level!r}")
        assert rq.conn is not None
        rq.conn.log_level = level
        hook = getattr(self.backend, "set_log_level", None)
        if hook is not None:  # a gateway: its upstreams' messages outside calls follow it
            await hook(level)
        return {}

    async def discover(self, rq: IncomingRequest) -> JSON:
        result: JSON = {
            "supportedVersions": list(ALL_VERSIONS),
            "capabilities": self.capabilities(rq.version),
        }
        instructions = self.backend.instructions()
        if instructions:
            result["instructions"] = instructions
        return result

    # -- lists -------------------------------------------------------------------------

    async def _page(
        self, rq: IncomingRequest, key: str, fetch: Callable[[], Awaitable[list[JSON]]]
    ) -> JSON:
        runtime = self.runtime
        cursor = rq.params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise RPCError(INVALID_PARAMS, "Invalid params: cursor must be a string")
        offset = runtime.signer.offset(rq.method, cursor) if cursor else 0
        items = await fetch()
        end = offset + runtime.page_size
        if offset == 0 and len(items) <= end:
            return {key: items}
        result: JSON = {key: items[offset:end]}
        if end < len(items):
            result["nextCursor"] = runtime.signer.cursor(rq.method, end)
        return result

    async def tools_list(self, rq: IncomingRequest) -> JSON:
        self._require("tools")
        return await self._page(rq, "tools", self.backend.list_tools)

    async def prompts_list(self, rq: IncomingRequest) -> JSON:
        self._require("prompts")
        return await self._page(rq, "prompts", self.backend.list_prompts)

    async def resources_list(self, rq: IncomingRequest) -> JSON:
        self._require("resources")
        return await self._page(rq, "resources", self.backend.list_resources)

    async def templates_list(self, rq: IncomingRequest) -> JSON:
        self._require("resources")
        return await self._page(rq, "resourceTemplates", self.backend.list_resource_templates)

    # -- calls into the backend ----------------------------------------------------------

    async def tools_call(self, rq: IncomingRequest) -> JSON:
        self._require("tools")
        name, args = tool_call_target(rq.params)
        backend = self.backend

        def invoke(call: Call) -> Awaitable[JSON]:
            return backend.call_tool(name, args, call)

        if rq.era == "legacy":
            created = self.legacy_tasks.start(rq, name, invoke)
            if created is not None:
                return created
            return await call_backend(self.runtime, rq, invoke)
        escalation = self.tasks.escalation(rq, name)
        return await call_backend(self.runtime, rq, invoke, escalation)

    async def prompts_get(self, rq: IncomingRequest) -> JSON:
        self._require("prompts")
        name = rq.params.get("name")
        if not isinstance(name, str):
            raise RPCError(INVALID_PARAMS, "Invalid params: prompts/get needs a prompt name")
        arguments = rq.params.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict) or not all(
            isinstance(v, str) for v in arguments.values()
        ):
            raise RPCError(INVALID_PARAMS, "Invalid params: prompt arguments must be strings")
        backend = self.backend
        args: dict[str, str] = arguments
        return await call_backend(self.runtime, rq, lambda call: backend.get_prompt(name, args, call))

    async def resources_read(self, rq: IncomingRequest) -> JSON:
        self._require("resources")
        uri = rq.params.get("uri")
        if not isinstance(uri, str):
            raise RPCError(INVALID_PARAMS, "Invalid params: resources/read needs a uri")
        backend = self.backend
        try:
            return await call_backend(self.runtime, rq, lambda call: backend.read_resource(uri, call))
        except RPCError as exc:
            if not isinstance(exc, ResourceNotFound) and exc.code != RESOURCE_NOT_FOUND:
                raise
            data = exc.data if isinstance(exc.data, dict) else {}
            data = {**data, "uri": data.get("uri", uri)}
            code = INVALID_PARAMS if rq.era == "modern" else RESOURCE_NOT_FOUND
            raise RPCError(code, exc.rpc_message, data) from None

    # -- completion --------------------------------------------------------------------

    async def complete(self, rq: IncomingRequest) -> JSON:
        self._require("completions")
        ref = rq.params.get("ref")
        argument = rq.params.get("argument")
        context = rq.params.get("context")
        if (
            not isinstance(ref, dict)
            or ref.get("type") not in ("ref/prompt", "ref/resource")
            or not isinstance(ref.get("name" if ref.get("type") == "ref/prompt" else "uri"), str)
        ):
            raise RPCError(INVALID_PARAMS, "Invalid params: ref must be a ref/prompt or ref/resource")
        if (
            not isinstance(argument, dict)
            or not isinstance(argument.get("name"), str)
            or not isinstance(argument.get("value"), str)
        ):
            raise RPCError(INVALID_PARAMS, "Invalid params: argument needs a name and a value")
        if context is None:
            context = {}
        elif not isinstance(context, dict):
            raise RPCError(INVALID_PARAMS, "Invalid params: context must be an object")
        result = await self.backend.complete(ref, argument, context)
        return {"completion": _completion(result)}

    # -- subscriptions -----------------------------------------------------------------

    async def subscribe(self, rq: IncomingRequest) -> JSON:
        uri = self._subscription_uri(rq)
        assert rq.conn is not None
        if uri not in rq.conn.subscriptions:
            await self._follow(uri, True)
        rq.conn.subscriptions.add(uri)
        return {}

    async def unsubscribe(self, rq: IncomingRequest) -> JSON:
        uri = self._subscription_uri(rq)
        assert rq.conn is not None
        if uri in rq.conn.subscriptions:
            await self._follow(uri, False)
        rq.conn.subscriptions.discard(uri)
        return {}

    async def _follow(self, uri: str, on: bool) -> None:
        """Tell a backend that follows resources elsewhere (a gateway) about a subscription."""
        hook = getattr(self.backend, "subscribe_resource" if on else "unsubscribe_resource", None)
        if hook is not None:
            await hook(uri)

    def _subscription_uri(self, rq: IncomingRequest) -> str:
        if not subscribable(self.backend.capabilities()):
            raise RPCError(METHOD_NOT_FOUND, f"Method not found: {rq.method}")
        uri = rq.params.get("uri")
        if not isinstance(uri, str):
            raise RPCError(INVALID_PARAMS, "Invalid params: uri must be a string")
        return uri

    async def listen(self, rq: IncomingRequest) -> JSON:
        """`subscriptions/listen`: acknowledge, then stream notifications until the
        server ends the subscription (the request is cancelled when the client does)."""
        wanted = rq.params.get("notifications", {})
        if not isinstance(wanted, dict):
            raise RPCError(INVALID_PARAMS, "Invalid params: notifications must be an object")
        honoured, methods, uris = listen_filter(wanted, self.backend.capabilities())
        task_ids = self.tasks.follow(rq, wanted.get("taskIds"))
        if task_ids:
            honoured["taskIds"] = task_ids
            methods.add(TASK_STATUS)
        sid = rq.request.id
        tag = {SUBSCRIPTION_ID_KEY: sid}
        sink = Sink(frozenset(methods), uris, frozenset(task_ids))
        sinks = self.runtime.sinks
        sinks.add(sink)
        if rq.channel is not None:
            rq.channel.listens.add(sink)
        self.tasks.store.followers += bool(task_ids)
        followed: list[str] = []
        try:
            for uri in sorted(uris):
                await self._follow(uri, True)
                followed.append(uri)
            await rq.outlet.notify(
                "notifications/subscriptions/acknowledged", {"_meta": tag, "notifications": honoured}
            )
            async with sink.receive:
                async for method, params in sink.receive:
                    await rq.outlet.notify(method, {**params, "_meta": tag})
        finally:
            with anyio.CancelScope(shield=True):
                for uri in followed:
                    await self._follow(uri, False)
            self.tasks.store.followers -= bool(task_ids)
            sinks.discard(sink)
            if rq.channel is not None:
                rq.channel.listens.discard(sink)
            sink.close()
            sink.receive.close()
        # The server ended the subscription (shutdown): a graceful final result.
        return {"_meta": dict(tag)}


def _completion(result: Any) -> JSON:
    """The backend's completion as the spec allows it: string values, at most 100."""
    completion = result.get("completion") if isinstance(result, dict) else None
    if not isinstance(completion, dict):
        completion = {}
    values = completion.get("values")
    values = [v for v in values if isinstance(v, str)] if isinstance(values, list) else []
    out: JSON = {"values": values[:_MAX_COMPLETIONS]}
    if len(values) > _MAX_COMPLETIONS:
        out["hasMore"] = True
        total = completion.get("total")
        out["total"] = total if isinstance(total, int) and total >= len(values) else len(values)
    else:
        for key in ("total", "hasMore"):
            if key in completion:
                out[key] = completion[key]
    return out
