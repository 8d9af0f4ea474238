"""The official conformance suite's server fixture (the tools, resources and prompts its
server scenarios call by name) as a Python Backend.

It lets the official server suite run against the runtime alone; the shipped
fixture is tests/conformance/server.yaml (served by `mcp serve`). Run it with

    .venv/bin/python tests/server/conformance_backend.py --port 8765
    $NODE .cache/conformance/conformance-0.1.16/node_modules/@modelcontextprotocol/conformance/dist/index.js server --url http://127.0.0.1:8765/mcp --suite active

with NODE a Node >= 22 (`scripts/conformance` installs the harness there, and a Node 22
at .cache/conformance/node/package/bin/node when the system one is older).
"""

from __future__ import annotations

import argparse
import base64
import json
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcpcli.errors import RPCError
from mcpcli.server.backend import CallContext, ChangeListener, ResourceNotFound

JSON = dict[str, Any]


def _png() -> str:
    """A 1x1 red PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"\x00\xff\x00\x00"
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode()


def _wav() -> str:
    """A short silent 8 kHz mono WAV."""
    samples = b"\x00\x00" * 80
    header = b"RIFF" + struct.pack("<I", 36 + len(samples)) + b"WAVEfmt " + struct.pack(
        "<IHHIIHH", 16, 1, 1, 8000, 16000, 2, 16
    ) + b"data" + struct.pack("<I", len(samples))
    return base64.b64encode(header + samples).decode()


PNG = _png()
WAV = _wav()
NO_ARGS = {"type": "object", "properties": {}}


def _text(value: str) -> JSON:
    return {"content": [{"type": "text", "text": value}]}


def _elicit(message: str, properties: JSON, required: list[str] | None = None) -> JSON:
    schema: JSON = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return {"method": "elicitation/create", "params": {"message": message, "requestedSchema": schema}}


def _sampling(text: str, max_tokens: int = 100) -> JSON:
    return {
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens,
        },
    }


ROOTS = {"method": "roots/list", "params": {}}

JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

TOOLS: list[JSON] = [
    {"name": name, "description": description, "inputSchema": schema}
    for name, description, schema in [
        ("test_simple_text", "Returns simple text", NO_ARGS),
        ("test_image_content", "Returns an image", NO_ARGS),
        ("test_audio_content", "Returns audio", NO_ARGS),
        ("test_embedded_resource", "Returns an embedded resource", NO_ARGS),
        ("test_multiple_content_types", "Returns mixed content", NO_ARGS),
        ("test_tool_with_logging", "Logs while running", NO_ARGS),
        ("test_tool_with_progress", "Reports progress", NO_ARGS),
        ("test_error_handling", "Always fails", NO_ARGS),
        ("test_sampling", "Asks the client's LLM",
         {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}),
        ("test_elicitation", "Asks the user",
         {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        ("test_elicitation_sep1034_defaults", "Elicitation with defaults", NO_ARGS),
        ("test_elicitation_sep1330_enums", "Elicitation with enums", NO_ARGS),
        ("test_reconnection", "Takes a moment", NO_ARGS),
        ("json_schema_2020_12_tool", "JSON Schema 2020-12 features", JSON_SCHEMA_2020_12),
        ("test_trigger_tool_change", "Changes the tool list", NO_ARGS),
        ("test_trigger_prompt_change", "Changes the prompt list", NO_ARGS),
        ("test_missing_capability", "Needs sampling", NO_ARGS),
        ("test_streaming_elicitation", "Asks the user (2026)", NO_ARGS),
        ("test_logging_tool", "Logs", NO_ARGS),
        ("test_input_required_result_elicitation", "MRTR elicitation", NO_ARGS),
        ("test_input_required_result_sampling", "MRTR sampling", NO_ARGS),
        ("test_input_required_result_list_roots", "MRTR roots", NO_ARGS),
        ("test_input_required_result_request_state", "MRTR request state", NO_ARGS),
        ("test_input_required_result_multiple_inputs", "MRTR several inputs", NO_ARGS),
        ("test_input_required_result_multi_round", "MRTR several rounds", NO_ARGS),
        ("test_input_required_result_tampered_state", "MRTR signed state", NO_ARGS),
        ("test_input_required_result_capabilities", "MRTR capabilities", NO_ARGS),
        ("test_headers", "Mirrors parameters into headers", {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            },
        }),
    ]
]

PROMPTS: list[JSON] = [
    {"name": "test_simple_prompt", "description": "A simple prompt"},
    {"name": "test_prompt_with_arguments", "description": "A prompt with arguments", "arguments": [
        {"name": "arg1", "description": "First test argument", "required": True},
        {"name": "arg2", "description": "Second test argument", "required": True},
    ]},
    {"name": "test_prompt_with_embedded_resource", "description": "A prompt with a resource", "arguments": [
        {"name": "resourceUri", "description": "URI of the resource to embed", "required": True},
    ]},
    {"name": "test_prompt_with_image", "description": "A prompt with an image"},
    {"name": "test_input_required_result_prompt", "description": "A prompt that asks the user"},
]


class ConformanceBackend:
    def __init__(self) -> None:
        self.listener: ChangeListener | None = None
        self.extra_tools = 0
        self.extra_prompts = 0

    def server_info(self) -> JSON:
        return {"name": "mcpcli-conformance-fixture", "version": "1.0.0"}

    def instructions(self) -> str | None:
        return "The MCP conformance fixture, served by the mcpcli runtime."

    def capabilities(self) -> JSON:
        return {"tools": {}, "prompts": {}, "resources": {"subscribe": True}, "completions": {}}

    def set_change_listener(self, listener: ChangeListener | None) -> None:
        self.listener = listener

    async def list_tools(self) -> list[JSON]:
        extra = [
            {"name": f"dynamic_tool_{i}", "description": "Added at run time", "inputSchema": NO_ARGS}
            for i in range(self.extra_tools)
        ]
        return TOOLS + extra

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        if name == "test_simple_text":
            return _text("This is a simple text response for testing.")
        if name == "test_image_content":
            return {"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}
        if name == "test_audio_content":
            return {"content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]}
        if name == "test_embedded_resource":
            return {"content": [{"type": "resource", "resource": {
                "uri": "test://embedded-resource", "mimeType": "text/plain",
                "text": "This is an embedded resource content."}}]}
        if name == "test_multiple_content_types":
            return {"content": [
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "test://mixed-content-resource",
                                                  "mimeType": "application/json",
                                                  "text": json.dumps({"test": "data", "value": 123})}},
            ]}
        if name in ("test_tool_with_logging", "test_logging_tool"):
            for i, message in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
                if i:
                    await anyio.sleep(0.05)
                await ctx.log("info", message)
            return _text("Tool with logging executed successfully")
        if name == "test_tool_with_progress":
            for value in (0, 50, 100):
                await ctx.progress(value, 100)
                if value < 100:
                    await anyio.sleep(0.05)
            return _text("Tool with progress executed successfully")
        if name == "test_error_handling":
            return {"isError": True, "content": [
                {"type": "text", "text": "This tool intentionally returns an error for testing"}]}
        if name == "test_sampling":
            answer = await ctx.ask({"llm": _sampling(str(arguments.get("prompt", "")))})
            content = answer["llm"].get("content")
            text = content.get("text") if isinstance(content, dict) else json.dumps(content)
            return _text(f"LLM response: {text}")
        if name == "test_elicitation":
            answer = await ctx.ask({"user": _elicit(str(arguments.get("message", "")), {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            }, ["username", "email"])})
            reply = answer["user"]
            return _text(f"User response: action={reply.get('action')}, content={json.dumps(reply.get('content'))}")
        if name == "test_elicitation_sep1034_defaults":
            answer = await ctx.ask({"defaults": _elicit("Please review and update the form fields with defaults", {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {"type": "string", "description": "User status",
                           "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "description": "Verification status", "default": True},
            })})
            reply = answer["defaults"]
            return _text(f"Elicitation completed: action={reply.get('action')}, content={json.dumps(reply.get('content'))}")
        if name == "test_elicitation_sep1330_enums":
            answer = await ctx.ask({"enums": _elicit("Please select options from the enum fields", {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}]},
                "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                               "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "items": {"anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"}]}},
            })})
            reply = answer["enums"]
            return _text(f"Elicitation completed: action={reply.get('action')}, content={json.dumps(reply.get('content'))}")
        if name == "test_reconnection":
            await anyio.sleep(0.1)
            return _text("Reconnection test completed")
        if name == "json_schema_2020_12_tool":
            return _text("ok")
        if name == "test_trigger_tool_change":
            self.extra_tools += 1
            assert self.listener is not None
            self.listener("tools", None)
            return _text("tool list changed")
        if name == "test_trigger_prompt_change":
            self.extra_prompts += 1
            assert self.listener is not None
            self.listener("prompts", None)
            return _text("prompt list changed")
        if name == "test_missing_capability":
            answer = await ctx.ask({"llm": _sampling("Say hello")})
            return _text(f"LLM response: {answer['llm'].get('content')}")
        if name in ("test_streaming_elicitation", "test_input_required_result_elicitation"):
            answer = await ctx.ask({"user_name": _elicit("What is your name?", {"name": {"type": "string"}}, ["name"])})
            return _text(f"Hello, {answer['user_name'].get('content', {}).get('name', 'stranger')}!")
        if name == "test_input_required_result_sampling":
            answer = await ctx.ask({"capital_question": _sampling("What is the capital of France?")})
            content = answer["capital_question"].get("content")
            return _text(f"Sampling said: {content.get('text') if isinstance(content, dict) else content}")
        if name == "test_input_required_result_list_roots":
            answer = await ctx.ask({"client_roots": ROOTS})
            roots = answer["client_roots"].get("roots", [])
            return _text("Roots: " + ", ".join(str(r.get("uri")) for r in roots if isinstance(r, dict)))
        if name == "test_input_required_result_request_state":
            await ctx.ask({"confirm": _elicit("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])})
            return _text("state-ok: requestState validated")
        if name == "test_input_required_result_multiple_inputs":
            answer = await ctx.ask({
                "user_name": _elicit("What is your name?", {"name": {"type": "string"}}, ["name"]),
                "greeting": _sampling("Generate a greeting", 50),
                "client_roots": ROOTS,
            })
            return _text(f"Got {len(answer)} inputs")
        if name == "test_input_required_result_multi_round":
            first = await ctx.ask({"step1": _elicit("Step 1: What is your name?", {"name": {"type": "string"}}, ["name"])})
            second = await ctx.ask({"step2": _elicit("Step 2: What is your favorite color?", {"color": {"type": "string"}}, ["color"])})
            name_ = first["step1"].get("content", {}).get("name")
            color = second["step2"].get("content", {}).get("color")
            return _text(f"{name_} likes {color}")
        if name == "test_input_required_result_tampered_state":
            await ctx.ask({"confirm": _elicit("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])})
            return _text("state-ok")
        if name == "test_input_required_result_capabilities":
            caps = ctx.client_capabilities
            wanted: JSON = {}
            if "sampling" in caps:
                wanted["greeting"] = _sampling("Generate a greeting", 50)
            if "elicitation" in caps:
                wanted["user_name"] = _elicit("What is your name?", {"name": {"type": "string"}}, ["name"])
            if not wanted:
                return _text("nothing to ask")
            await ctx.ask(wanted)
            return _text("capabilities respected")
        if name == "test_headers":
            return _text(json.dumps(arguments, sort_keys=True))
        if name.startswith("dynamic_tool_"):
            return _text(name)
        raise RPCError(-32602, f"Unknown tool: {name}")

    async def list_resources(self) -> list[JSON]:
        return [
            {"uri": "test://static-text", "name": "static-text", "description": "A static text resource",
             "mimeType": "text/plain"},
            {"uri": "test://static-binary", "name": "static-binary", "description": "A static binary resource",
             "mimeType": "image/png"},
            {"uri": "test://watched-resource", "name": "watched-resource",
             "description": "A resource to subscribe to", "mimeType": "text/plain"},
        ]

    async def list_resource_templates(self) -> list[JSON]:
        return [{"uriTemplate": "test://template/{id}/data", "name": "template",
                 "description": "A resource template", "mimeType": "application/json"}]

    async def read_resource(self, uri: str, ctx: CallContext) -> JSON:
        if uri == "test://static-text":
            return {"contents": [{"uri": uri, "mimeType": "text/plain",
                                  "text": "This is the content of the static text resource."}]}
        if uri == "test://static-binary":
            return {"contents": [{"uri": uri, "mimeType": "image/png", "blob": PNG}]}
        if uri == "test://watched-resource":
            return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "Watched resource content"}]}
        prefix, suffix = "test://template/", "/data"
        if uri.startswith(prefix) and uri.endswith(suffix) and len(uri) > len(prefix) + len(suffix):
            item = uri[len(prefix) : -len(suffix)]
            body = json.dumps({"id": item, "templateTest": True, "data": f"Data for ID: {item}"})
            return {"contents": [{"uri": uri, "mimeType": "application/json", "text": body}]}
        raise ResourceNotFound(uri)

    async def list_prompts(self) -> list[JSON]:
        extra = [
            {"name": f"dynamic_prompt_{i}", "description": "Added at run time"} for i in range(self.extra_prompts)
        ]
        return PROMPTS + extra

    async def get_prompt(self, name: str, arguments: dict[str, str], ctx: CallContext) -> JSON:
        def user(content: JSON) -> JSON:
            return {"role": "user", "content": content}

        if name == "test_simple_prompt":
            return {"messages": [user({"type": "text", "text": "This is a simple prompt for testing."})]}
        if name == "test_prompt_with_arguments":
            text = f"Prompt with arguments: arg1='{arguments.get('arg1')}', arg2='{arguments.get('arg2')}'"
            return {"messages": [user({"type": "text", "text": text})]}
        if name == "test_prompt_with_embedded_resource":
            uri = arguments.get("resourceUri", "test://example-resource")
            return {"messages": [
                user({"type": "resource", "resource": {"uri": uri, "mimeType": "text/plain",
                                                       "text": "Embedded resource content for testing."}}),
                user({"type": "text", "text": "Please process the embedded resource above."}),
            ]}
        if name == "test_prompt_with_image":
            return {"messages": [
                user({"type": "image", "data": PNG, "mimeType": "image/png"}),
                user({"type": "text", "text": "Please analyze the image above."}),
            ]}
        if name == "test_input_required_result_prompt":
            answer = await ctx.ask({"user_context": _elicit(
                "What context should the prompt use?", {"context": {"type": "string"}}, ["context"])})
            context = answer["user_context"].get("content", {}).get("context", "")
            return {"messages": [user({"type": "text", "text": f"Context: {context}"})]}
        if name.startswith("dynamic_prompt_"):
            return {"messages": [user({"type": "text", "text": name})]}
        raise RPCError(-32602, f"Unknown prompt: {name}")

    async def complete(self, ref: JSON, argument: JSON, context: JSON) -> JSON:
        words = ["paris", "park", "party", "hello", "world"]
        value = str(argument.get("value", ""))
        return {"completion": {"values": [w for w in words if w.startswith(value)], "hasMore": False}}


async def _main(port: int, poll: float | None) -> None:
    from mcpcli.server import Server, serve_http

    def ready(url: str) -> None:
        print(url, flush=True)

    await serve_http(Server(ConformanceBackend()), port=port, on_ready=ready, sse_poll_after=poll)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--sse-poll-after", type=float, default=None,
                        help="close slow 2025-11-25 POST streams after this many seconds (SEP-1699)")
    args = parser.parse_args()
    try:
        anyio.run(_main, args.port, args.sse_poll_after)
    except KeyboardInterrupt:
        pass
