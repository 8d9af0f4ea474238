#!/usr/bin/env python3
"""An MCP stdio server with every defect `mcp check` names, one scenario per argument (stdlib only).

  clean         a correct 2025-11-25 server: tools over two pages, a read-only tool with an
                output schema, one that asks the user (elicitation), a prompt with completion,
                a resource, logging (no findings)
  broken        a 2025-11-25 server with each legacy-era defect (see BROKEN_TOOLS and serve())
  modern        a 2026-07-28 server listing 2025-11-25 that answers initialize with 2025-06-18,
                and breaks the 2026-07-28 rules (no resultType/ttlMs, mixed cacheScopes, log
                messages and a request nobody asked for, an invalid x-mcp-header)
  modern-noinit a 2026-07-28 server listing 2025-11-25 whose initialize fails
  hang          the clean server, whose read-only tool never answers
  crash         the clean server, exiting when a tool is called
  many          the clean server with 130 tools (more than OpenAI accepts in one request)
"""

from __future__ import annotations

import json
import sys
from typing import Any

SCENARIO = sys.argv[1] if len(sys.argv) > 1 else "clean"
MODERN = SCENARIO.startswith("modern")

CLOSED: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
CLEAN_TOOLS: list[dict[str, Any]] = [
    {"name": "add", "description": "Add two integers.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                     "required": ["a", "b"], "additionalProperties": False}},
    {"name": "answer", "description": "The answer, as structured content.",
     "inputSchema": CLOSED, "annotations": {"readOnlyHint": True},
     "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                      "additionalProperties": False}},
    {"name": "ask", "description": "Asks the user a question (elicitation) and says what they did.",
     "inputSchema": CLOSED, "annotations": {"readOnlyHint": True}},
]


def tool(name: str, schema: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": f"The {name} tool.", "inputSchema": schema or CLOSED, **extra}


READ_ONLY = {"readOnlyHint": True}
BROKEN_TOOLS: list[dict[str, Any]] = [
    tool("bad name!"),                                                       # tool-name, provider-tool-name
    tool("dup"), tool("dup"),                                                # duplicate-name
    {"name": "nodesc", "inputSchema": CLOSED},                               # missing-description
    tool("stringy", {"type": "string"}),                                     # input-schema
    tool("invalid", {"type": "object", "properties": {"a": {"type": "strin"}}}),  # schema-invalid
    tool("reqmissing", {**CLOSED, "required": ["ghost"]}),                   # schema-required
    tool("badref", {"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}),  # schema-ref
    tool("remoteref", {"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}),
    tool("outarray", outputSchema={"type": "array"}),                        # output-schema
    tool("fails_ro", annotations=READ_ONLY),                                 # call-failed
    tool("struct_ro", annotations=READ_ONLY,                                 # structured-content
         outputSchema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    tool("progress_ro", annotations=READ_ONLY),                              # progress, result-shape
    tool("a.b"),                                                             # provider-tool-name only
    tool("props", {"type": "object", "properties": {"filter[id]": {"type": "string"}},
                   "required": ["filter[id]"], "additionalProperties": False}),  # provider-property-name
    tool("rootany", {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
                     "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}),  # provider-schema-root
    tool("keywords", {"type": "object", "properties": {"k": {"const": "x"}}, "required": ["k"],
                      "additionalProperties": False}),                       # provider-keyword
]
MODERN_TOOLS: list[dict[str, Any]] = [
    tool("header", {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "bad header"}},
                    "required": ["region"], "additionalProperties": False}),  # tool-header
]


def tools() -> list[dict[str, Any]]:
    if SCENARIO == "broken":
        return BROKEN_TOOLS
    if MODERN:
        return CLEAN_TOOLS + MODERN_TOOLS
    if SCENARIO == "many":
        return CLEAN_TOOLS + [tool(f"t{i}") for i in range(128)]
    return CLEAN_TOOLS


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def result(rid: Any, value: dict[str, Any], *, hints: bool = True) -> None:
    if MODERN and hints:
        value = {"resultType": "complete", **value}
    send({"id": rid, "result": value})


def error(rid: Any, code: int, message: str) -> None:
    send({"id": rid, "error": {"code": code, "message": message}})


def capabilities() -> dict[str, Any]:
    if SCENARIO == "broken":
        return {"tools": {}, "prompts": {}, "logging": {}}
    return {"tools": {}, "prompts": {}, "resources": {}, "completions": {}, "logging": {}}


def list_page(rid: Any, key: str, items: list[Any], cursor: Any) -> None:
    """Two pages: the first half, then the rest (the broken server's second page repeats its cursor)."""
    half = len(items) // 2
    if cursor is None:
        page: dict[str, Any] = {key: items[:half], "nextCursor": "p2"}
    else:
        page = {key: items[half:]}
        if SCENARIO == "broken":
            page["nextCursor"] = "p2"                                        # pagination
    if SCENARIO == "modern":
        # no resultType, no ttlMs (result-shape warnings); cacheScopes differ (pagination)
        send({"id": rid, "result": {**page, "cacheScope": "public" if cursor is None else "private"}})
        return
    if MODERN:
        page.update(ttlMs=0, cacheScope="public")
    result(rid, page)


def call(rid: Any, params: dict[str, Any]) -> None:
    name = params.get("name")
    token = (params.get("_meta") or {}).get("progressToken")
    if SCENARIO == "crash":
        sys.exit(3)                                                          # connection-lost
    if SCENARIO == "hang" and name == "answer":
        return                                                               # timeout
    if name == "add":
        args = params.get("arguments") or {}
        result(rid, {"content": [{"type": "text", "text": str(args.get("a", 0) + args.get("b", 0))}]})
    elif name == "ask":
        send({"id": f"ask-{rid}", "method": "elicitation/create",
              "params": {"message": "QUESTION: pick a colour", "requestedSchema": {
                  "type": "object", "properties": {"colour": {"type": "string"}}}}})
    elif name == "answer":
        result(rid, {"content": [{"type": "text", "text": '{"n": 42}'}], "structuredContent": {"n": 42}})
    elif name == "fails_ro":
        error(rid, -32603, "the database is not configured")
    elif name == "struct_ro":
        result(rid, {"content": [{"type": "text", "text": "x"}], "structuredContent": {"n": "x"}})
    elif name == "progress_ro":
        for value in (2, 1):                                                 # progress: not increasing
            send({"method": "notifications/progress", "params": {"progressToken": token, "progress": value}})
        send({"method": "notifications/progress", "params": {"progressToken": "zzz", "progress": 1}})
        result(rid, {"content": [{"type": "video", "url": "x"}]})            # result-shape
        send({"method": "notifications/progress", "params": {"progressToken": token, "progress": 3}})
    elif SCENARIO == "broken":
        error(rid, -32601, f"no tool {name}")                                # unknown-tool: wrong code
    else:
        error(rid, -32602, f"Unknown tool: {name}")


def serve(message: dict[str, Any]) -> None:
    method, rid, params = message.get("method"), message.get("id"), message.get("params") or {}
    if method is None and isinstance(rid, str) and rid.startswith("ask-"):
        action = (message.get("result") or {}).get("action", "error")
        result(json.loads(rid[4:]), {"content": [{"type": "text", "text": f"the user chose to {action}"}]})
        return
    if rid is None or method is None:
        return  # notifications and the client's other answers
    if method == "server/discover":
        if not MODERN:
            error(rid, -32601, "Method not found")
            return
        discover: dict[str, Any] = {"supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18"],
                                    "capabilities": capabilities(), "ttlMs": 0, "cacheScope": "public"}
        if SCENARIO != "modern":  # the modern scenario says not who it is (handshake-shape warning)
            discover["_meta"] = {"io.modelcontextprotocol/serverInfo": {"name": SCENARIO, "version": "1"}}
        result(rid, discover)
    elif method == "initialize":
        if SCENARIO == "modern-noinit":
            error(rid, -32603, "initialize is broken")                       # connect
            return
        info: dict[str, Any] = {"name": SCENARIO, "version": "1"}
        if SCENARIO == "broken":
            del info["version"]                                              # handshake-shape
            send({"id": "r0", "method": "roots/list"})                       # notification-order
        version = "2025-06-18" if MODERN else "2025-11-25"                   # version (modern)
        send({"id": rid, "result": {"protocolVersion": version, "capabilities": capabilities(), "serverInfo": info}})
        if SCENARIO == "broken":
            send({"id": "s1", "method": "sampling/createMessage",            # capability (not declared)
                  "params": {"messages": [], "maxTokens": 1}})
    elif method == "ping":
        if SCENARIO == "broken":
            error(rid, -32603, "ping is broken")                             # ping
        else:
            result(rid, {})
    elif method == "tools/list":
        if SCENARIO == "modern":
            send({"method": "notifications/message", "params": {"level": "info", "data": "hi"}})
            send({"id": "r1", "method": "roots/list"})                       # notification-forbidden
        list_page(rid, "tools", tools(), params.get("cursor"))
    elif method == "tools/call":
        call(rid, params)
    elif method == "prompts/list":
        if SCENARIO == "broken":
            error(rid, -32603, "prompts are broken")                         # list-failed
        else:
            result(rid, {"prompts": [{"name": "greet", "description": "Greet someone.",
                                      "arguments": [{"name": "who", "required": True}]}],
                         **({"ttlMs": 0, "cacheScope": "public"} if MODERN else {})})
    elif method == "resources/list":
        resource: dict[str, Any] = {"uri": "note://one", "name": "one", "mimeType": "text/plain"}
        if SCENARIO == "broken":
            del resource["name"]                                             # capability, result-shape
        result(rid, {"resources": [resource], **({"ttlMs": 0, "cacheScope": "public"} if MODERN else {})})
    elif method == "resources/templates/list" and SCENARIO != "broken":
        result(rid, {"resourceTemplates": [], **({"ttlMs": 0, "cacheScope": "public"} if MODERN else {})})
    elif method == "completion/complete" and SCENARIO != "broken":
        result(rid, {"completion": {"values": ["world"], "hasMore": False}})
    elif method == "logging/setLevel" and SCENARIO != "broken":
        result(rid, {})
    elif SCENARIO == "broken" and method.startswith("mcpcli/"):
        result(rid, {})                                                      # unknown-method
    else:
        error(rid, -32601, "Method not found")


def main() -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            serve(message)


if __name__ == "__main__":
    main()
