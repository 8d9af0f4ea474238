"""Small Python backends for the server runtime tests (no tools.yaml involved)."""

from __future__ import annotations

import base64
from typing import Any

import anyio

from mcpcli.errors import RPCError
from mcpcli.server.backend import (
    CallContext,
    ChangeListener,
    InputDeclined,
    ResourceNotFound,
    TaskPolicy,
)

JSON = dict[str, Any]


def text(value: str) -> JSON:
    return {"content": [{"type": "text", "text": value}]}


class DemoBackend:
    """Tools, resources, prompts and completions that exercise every runtime feature."""

    def __init__(self, *, tools: int = 0, subscribe: bool = True) -> None:
        self.listener: ChangeListener | None = None
        self.extra_tools = tools
        self.subscribe = subscribe
        self.started = anyio.Event()
        self.cancelled = anyio.Event()
        self.gate = anyio.Event()
        self.calls = 0
        self.runs: dict[str, int] = {}
        self.files: dict[str, str] = {"mem://greeting": "hello"}

    # -- facts ---------------------------------------------------------------

    def server_info(self) -> JSON:
        return {"name": "demo", "version": "1.0.0"}

    def instructions(self) -> str | None:
        return "A demo server."

    def capabilities(self) -> JSON:
        return {
            "tools": {},
            "prompts": {},
            "resources": {"subscribe": self.subscribe},
            "completions": {},
        }

    def set_change_listener(self, listener: ChangeListener | None) -> None:
        self.listener = listener

    def changed(self, kind: str, uri: str | None = None) -> None:
        assert self.listener is not None
        self.listener(kind, uri)

    # -- tools ---------------------------------------------------------------

    async def list_tools(self) -> list[JSON]:
        schema = {"type": "object", "properties": {"text": {"type": "string"}}}
        tools = [
            {"name": name, "description": f"the {name} tool", "inputSchema": schema}
            for name in (
                "echo", "slow", "progress", "log", "elicit", "sample", "roots", "two_questions",
                "twice", "fail", "crash", "needs_sampling", "change", "gate",
            )
        ]
        tools.append(
            {
                "name": "region",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"},
                        "count": {"type": "integer", "x-mcp-header": "Count"},
                        "opts": {
                            "type": "object",
                            "properties": {"flag": {"type": "boolean", "x-mcp-header": "Flag"}},
                        },
                    },
                },
            }
        )
        tools += [
            {"name": f"extra_{i:03d}", "inputSchema": {"type": "object"}} for i in range(self.extra_tools)
        ]
        return tools

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        self.calls += 1
        self.runs[name] = self.runs.get(name, 0) + 1
        if name == "echo":
            return text(str(arguments.get("text", "")))
        if name == "slow":
            self.started.set()
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                self.cancelled.set()
                raise
        if name == "progress":
            for i in (0, 50, 50, 25, 100):  # repeated and lower values must be dropped
                await ctx.progress(i, 100, f"step {i}")
            return text("done")
        if name == "log":
            for level in ("debug", "info", "warning", "error"):
                await ctx.log(level, {"msg": level}, "demo")
            return text("logged")
        if name == "elicit":
            answer = await ctx.ask(
                {
                    "user_name": {
                        "method": "elicitation/create",
                        "params": {
                            "message": "What is your name?",
                            "requestedSchema": {
                                "type": "object",
                                "properties": {"name": {"type": "string"}},
                                "required": ["name"],
                            },
                        },
                    }
                }
            )
            reply = answer["user_name"]
            return text(f"Hello, {reply.get('content', {}).get('name', reply.get('action'))}!")
        if name == "sample":
            answer = await ctx.ask(
                {
                    "q": {
                        "method": "sampling/createMessage",
                        "params": {
                            "messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}],
                            "maxTokens": 10,
                        },
                    }
                }
            )
            return text("sampled: " + answer["q"]["content"]["text"])
        if name == "roots":
            answer = await ctx.ask({"r": {"method": "roots/list", "params": {}}})
            return text("roots: " + ",".join(r["uri"] for r in answer["r"]["roots"]))
        if name == "two_questions":
            first = await ctx.ask({"step1": _elicit("Step 1?")})
            second = await ctx.ask({"step2": _elicit("Step 2?")})
            return text(f"{first['step1']['content']['name']} {second['step2']['content']['name']}")
        if name == "twice":
            both = await ctx.ask({"a": _elicit("A?"), "b": _elicit("B?")})
            return text(both["a"]["content"]["name"] + both["b"]["content"]["name"])
        if name == "fail":
            return {"content": [{"type": "text", "text": "it failed"}], "isError": True}
        if name == "crash":
            raise ZeroDivisionError("boom")
        if name == "needs_sampling":
            await ctx.ask({"s": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}}})
            return text("unreachable")
        if name == "change":
            self.changed(str(arguments.get("text", "tools")))
            return text("changed")
        if name == "gate":  # reports progress, then waits until the test opens the gate
            await ctx.progress(1, 2, "waiting")
            self.started.set()
            await self.gate.wait()
            return text("opened")
        if name == "region":
            return text(f"{arguments.get('region')}/{arguments.get('count')}")
        if name.startswith("extra_"):
            return text(name)
        raise RPCError(-32602, f"Unknown tool: {name}")

    # -- resources -------------------------------------------------------------

    async def list_resources(self) -> list[JSON]:
        return [
            {"uri": "mem://greeting", "name": "greeting", "mimeType": "text/plain"},
            {"uri": "mem://blob", "name": "blob", "mimeType": "application/octet-stream"},
        ]

    async def list_resource_templates(self) -> list[JSON]:
        return [{"uriTemplate": "mem://items/{id}", "name": "item"}]

    async def read_resource(self, uri: str, ctx: CallContext) -> JSON:
        if uri in self.files:
            return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": self.files[uri]}]}
        if uri == "mem://blob":
            data = base64.b64encode(b"\x00\x01\x02").decode()
            return {"contents": [{"uri": uri, "mimeType": "application/octet-stream", "blob": data}]}
        if uri.startswith("mem://items/"):
            return {"contents": [{"uri": uri, "text": uri.rsplit("/", 1)[1]}]}
        if uri == "mem://secret":
            answer = await ctx.ask({"pw": _elicit("Password?")})
            return {"contents": [{"uri": uri, "text": answer["pw"]["content"]["name"]}]}
        raise ResourceNotFound(uri)

    # -- prompts ---------------------------------------------------------------

    async def list_prompts(self) -> list[JSON]:
        return [
            {"name": "greet", "arguments": [{"name": "who", "required": True}]},
            {"name": "ask_context"},
        ]

    async def get_prompt(self, name: str, arguments: dict[str, str], ctx: CallContext) -> JSON:
        if name == "greet":
            return {
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": f"Hello {arguments.get('who')}"}}
                ]
            }
        if name == "ask_context":
            try:
                answer = await ctx.ask({"ctx": _elicit("Context?")})
            except InputDeclined:
                return {"messages": []}
            return {
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": answer["ctx"]["content"]["name"]}}
                ]
            }
        raise RPCError(-32602, f"Unknown prompt: {name}")

    async def complete(self, ref: JSON, argument: JSON, context: JSON) -> JSON:
        words = [f"{argument['value']}{i}" for i in range(150)] if argument["value"] == "many" else [
            w for w in ("alice", "bob", "alfred") if w.startswith(argument["value"])
        ]
        return {"completion": {"values": words}}


def _elicit(message: str) -> JSON:
    return {
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
    }


class TaskBackend(DemoBackend):
    """The demo backend with tasks: `policies` maps tool names to their TaskPolicy."""

    def __init__(self, policies: dict[str, TaskPolicy], **kw: Any) -> None:
        super().__init__(**kw)
        self.policies = policies

    def capabilities(self) -> JSON:
        return {**super().capabilities(), "tasks": {}}

    def task_policy(self, name: str) -> TaskPolicy | None:
        return self.policies.get(name)

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        if name in ("same_key", "ask_then_gate", "protocol_error"):
            self.runs[name] = self.runs.get(name, 0) + 1
        if name == "same_key":  # the same key twice: the task must not reuse it
            first = await ctx.ask({"k": _elicit("First?")})
            second = await ctx.ask({"k": _elicit("Second?")})
            return text(first["k"]["content"]["name"] + "+" + second["k"]["content"]["name"])
        if name == "ask_then_gate":  # input first (MRTR), then long work (a task)
            answer = await ctx.ask({"user_name": _elicit("Name?")})
            self.started.set()
            await self.gate.wait()
            return text(f"Hello, {answer['user_name']['content']['name']}!")
        if name == "protocol_error":
            raise RPCError(-32000, "the job broke", {"why": "test"})
        return await super().call_tool(name, arguments, ctx)
