"""The 2026-07-28 HTTP request headers, one codec for client and server (no I/O).

Streamable HTTP mirrors parts of each request body into headers so proxies can
route without parsing JSON. `Mcp-Name` carries `params.name` (tools/call,
prompts/get), `params.uri` (resources/read) or `params.taskId` (tasks/*); tools
may mark input properties with `x-mcp-header: "Name"` to have their values
mirrored as `Mcp-Param-Name`. Values that are not plain visible ASCII travel as
`=?base64?...?=`.

The client encodes (`standard_headers`, `param_headers`) and must drop a tool
whose `x-mcp-header` annotations break the rules (empty, not a token,
duplicated, on a non-primitive, or not reachable through `properties` alone:
`invalid_tool_reason`); the server decodes (`decode_value`) and checks each
declared parameter against the body (`declared_params`, `same_value`). Imports
nothing from mcpcli.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from mcpcli.core.protocol import TOOLS_CALL

__all__ = [
    "NAME_FIELDS",
    "declared_params",
    "decode_value",
    "encode_value",
    "invalid_tool_reason",
    "param_headers",
    "same_value",
    "standard_headers",
    "valid_tools",
]

ANNOTATION = "x-mcp-header"
_TCHAR = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)
_SENTINEL_START, _SENTINEL_END = "=?base64?", "?="
#: The body field `Mcp-Name` mirrors, by method (the tasks extension routes by task, SEP-2663).
NAME_FIELDS = {
    TOOLS_CALL: "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
_PRIMITIVES = frozenset({"string", "integer", "boolean"})
_MAX_SAFE_INTEGER = 2**53 - 1

# Where subschemas live in a JSON Schema; annotations under any of these are not
# reachable through `properties` alone.
_SCHEMA_MAPS = frozenset({"patternProperties", "$defs", "definitions", "dependentSchemas"})
_SCHEMA_VALUES = frozenset(
    {
        "items", "additionalItems", "additionalProperties", "unevaluatedItems",
        "unevaluatedProperties", "contains", "propertyNames", "not", "if", "then", "else",
    }
)
_SCHEMA_ARRAYS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})


def encode_value(value: str) -> str:
    """A header-safe form of `value`: as is, or `=?base64?...?=`."""
    plain = (
        all(0x20 <= ord(ch) <= 0x7E for ch in value)
        and value == value.strip(" ")
        and not (value.startswith(_SENTINEL_START) and value.endswith(_SENTINEL_END))
    )
    if plain:
        return value
    import base64

    # surrogatepass: a lone surrogate (an undecodable argv byte, a "\udcff" in --arg
    # JSON) has no UTF-8 form; send its bytes anyway, for the server to refuse (-32020).
    encoded = base64.b64encode(value.encode("utf-8", "surrogatepass")).decode("ascii")
    return _SENTINEL_START + encoded + _SENTINEL_END


def decode_value(raw: str) -> str:
    """A header value as text: `=?base64?..?=` decoded; ValueError if it is not valid."""
    if (
        raw.startswith(_SENTINEL_START)
        and raw.endswith(_SENTINEL_END)
        and len(raw) >= len(_SENTINEL_START) + len(_SENTINEL_END)
    ):
        import base64
        import binascii

        inner = raw[len(_SENTINEL_START) : -len(_SENTINEL_END)]
        try:
            return base64.b64decode(inner, validate=True).decode("utf-8")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            raise ValueError("invalid base64 value") from None
    if any(not (0x20 <= ord(c) <= 0x7E or c == "\t") for c in raw):
        raise ValueError("invalid characters")
    return raw


def same_value(header: str, value: Any) -> bool:
    """Whether a decoded header carries the argument `value` (numbers compare as numbers)."""
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if isinstance(value, (int, float)):
        try:
            number = float(header)
        except ValueError:
            return False
        return math.isfinite(number) and number == value
    if isinstance(value, str):
        return header == value
    return False


def _header_text(value: Any) -> str | None:
    """The header text for an argument value, or None when it is not mirrored."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) <= _MAX_SAFE_INTEGER:
        return str(int(value))
    if isinstance(value, str):
        return encode_value(value)
    return None


def standard_headers(method: str, params: Mapping[str, Any] | None) -> dict[str, str]:
    """`Mcp-Method`, and `Mcp-Name` for the methods that name a target."""
    headers = {"Mcp-Method": method}
    params = params or {}
    field = NAME_FIELDS.get(method)
    name = params.get(field) if field is not None else None
    if isinstance(name, str):
        headers["Mcp-Name"] = encode_value(name)
    return headers


def _annotations(schema: Any) -> list[tuple[list[str] | None, dict[str, Any]]]:
    """Every subschema carrying the annotation, with its `properties` path (None: unreachable)."""
    found: list[tuple[list[str] | None, dict[str, Any]]] = []

    def visit(node: Any, path: list[str] | None, depth: int) -> None:
        if not isinstance(node, dict) or depth > 64:
            return
        if ANNOTATION in node:
            found.append((path, node))
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    visit(sub, [*path, name] if path is not None else None, depth + 1)
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                for sub in value.values():
                    visit(sub, None, depth + 1)
            elif key in _SCHEMA_ARRAYS and isinstance(value, list):
                for sub in value:
                    visit(sub, None, depth + 1)
            elif key in _SCHEMA_VALUES:
                visit(value, None, depth + 1)

    visit(schema, [], 0)
    return found


def _primitive(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    if isinstance(kind, str):
        return kind in _PRIMITIVES
    if isinstance(kind, list) and kind:
        real = [k for k in kind if k != "null"]
        return bool(real) and all(isinstance(k, str) and k in _PRIMITIVES for k in real) and len(
            set(real)
        ) == 1
    return False


def header_paths(schema: Any) -> tuple[dict[str, list[str]], str | None]:
    """Header name -> property path for a tool's inputSchema, and why it is invalid (or None)."""
    paths: dict[str, list[str]] = {}
    seen: set[str] = set()
    for path, node in _annotations(schema):
        name = node.get(ANNOTATION)
        where = ".".join(path) if path else "the schema root"
        if not path:
            return {}, f"x-mcp-header on {where} is not reachable through properties alone"
        if not isinstance(name, str) or not name:
            return {}, f"x-mcp-header of {where} is empty or not a string"
        if any(ch not in _TCHAR for ch in name):
            return {}, f"x-mcp-header {name!r} of {where} is not an HTTP token"
        if not _primitive(node):
            return {}, f"x-mcp-header {name!r} is on {where}, which is not a string, integer or boolean"
        if name.lower() in seen:
            return {}, f"x-mcp-header {name!r} is declared twice"
        seen.add(name.lower())
        paths[name] = path
    return paths, None


def invalid_tool_reason(tool: Mapping[str, Any]) -> str | None:
    """Why an HTTP client must drop this tool, or None when it is fine."""
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        return None
    return header_paths(schema)[1]


def param_headers(schema: Any, arguments: Mapping[str, Any] | None) -> dict[str, str]:
    """`Mcp-Param-*` headers for a call with `arguments` (absent and null values omitted)."""
    if not isinstance(schema, dict) or not arguments:
        return {}
    paths, invalid = header_paths(schema)
    if invalid is not None:
        return {}
    headers: dict[str, str] = {}
    for name, path in paths.items():
        value: Any = arguments
        for key in path:
            if not isinstance(value, Mapping) or key not in value:
                value = None
                break
            value = value[key]
        text = _header_text(value)
        if text is not None:
            headers[f"Mcp-Param-{name}"] = text
    return headers


def declared_params(schema: Any, path: tuple[str, ...] = ()) -> Iterable[tuple[str, tuple[str, ...]]]:
    """(header name, property path) for every `x-mcp-header` reachable through `properties`.

    What a server checks a request against: every parameter its tool declares,
    without the validity rules a client applies before it mirrors any.
    """
    if not isinstance(schema, dict):
        return
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for key, sub in properties.items():
        if not isinstance(sub, dict):
            continue
        name = sub.get(ANNOTATION)
        if isinstance(name, str) and name:
            yield name, (*path, key)
        yield from declared_params(sub, (*path, key))


def valid_tools(tools: list[Any]) -> tuple[list[Any], list[tuple[str, str]]]:
    """The tools whose `x-mcp-header` annotations are valid (the 2026-07-28 spec has a client
    drop the others), and (name, reason) for each dropped."""
    kept: list[Any] = []
    dropped: list[tuple[str, str]] = []
    for tool in tools:
        reason = invalid_tool_reason(tool) if isinstance(tool, dict) else None
        if reason is None:
            kept.append(tool)
        else:
            dropped.append((str(tool.get("name")), reason))
    return kept, dropped
