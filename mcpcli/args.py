"""The tool-argument grammar: `--arg key=value` typed by the tool's inputSchema.

    key=value      a value converted by the schema type of `key`; a string field
                   keeps the text exactly (`007` stays "007"); a union with
                   string (`["boolean","string"]`) takes an exact JSON literal of
                   its other type (`true`, `false`, `null`, `3`, `-1.5`) as that
                   type, and anything else as text (`key:='"true"'` for the string)
    key:=JSON      a raw JSON value, whatever the schema says
    key=@file      the file's contents (then typed); `key=@-` reads stdin
    key:=@file     JSON read from a file
    a.b=1          dotted keys build nested objects (`a\\.b` for a literal dot)
    key=\\@x        a leading backslash escapes a literal `@`
    tags=a tags=b  repeating an array field appends items; `tags=[..]` gives JSON

`--args` supplies the whole object (JSON text, `@file.json`, or `-` for stdin);
`--arg` items are applied on top of it.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from mcpcli.errors import ArgumentError, UsageError

__all__ = [
    "UnknownTool", "build_arguments", "call_arguments", "coerce", "meta_items", "needs_listing", "parse_item",
    "prompt_schema", "read_json_source", "required_names", "resolve_ref", "schema_types", "type_label",
    "unknown_tool",
]

JSON = dict[str, Any]
_STDIN_USED: list[bool] = []


def _read_text(source: str, *, what: str, stdin: Callable[[], str] | None = None) -> str:
    """`-` reads stdin (at most once per process), anything else is a file path."""
    if source == "-":
        if _STDIN_USED:
            raise ArgumentError(f"{what}: standard input was already read by another argument")
        _STDIN_USED.append(True)
        return stdin() if stdin is not None else sys.stdin.read()
    try:
        with open(source, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        raise ArgumentError(f"{what}: no such file: {source}") from None
    except IsADirectoryError:
        raise ArgumentError(f"{what}: {source} is a directory") from None
    except UnicodeDecodeError:
        raise ArgumentError(f"{what}: {source} is not UTF-8 text") from None
    except OSError as exc:
        raise ArgumentError(f"{what}: cannot read {source}: {exc.strerror}") from None


def _loads(text: str, *, what: str) -> Any:
    from mcpcli.core.jsonrpc import loads  # strict: a NaN could be parsed but never sent

    try:
        return loads(text)
    except ValueError as exc:
        raise ArgumentError(f"{what}: invalid JSON: {exc}") from None


def read_json_source(
    value: str, *, what: str = "--args", stdin: Callable[[], str] | None = None
) -> JSON:
    """Parse `--args`: JSON text, `@file.json`, or `-` for stdin; must be an object."""
    if value == "-" or value == "@-":
        text = _read_text("-", what=what, stdin=stdin)
    elif value.startswith("@"):
        text = _read_text(value[1:], what=what)
    else:
        text = value
    obj = _loads(text, what=what)
    if not isinstance(obj, dict):
        raise ArgumentError(f"{what}: expected a JSON object, got {type(obj).__name__}")
    return obj


def _split_key(key: str) -> list[str]:
    """Split a dotted key; `\\.` is a literal dot."""
    parts: list[str] = []
    current = ""
    i = 0
    while i < len(key):
        ch = key[i]
        if ch == "\\" and i + 1 < len(key) and key[i + 1] == ".":
            current += "."
            i += 2
            continue
        if ch == ".":
            parts.append(current)
            current = ""
        else:
            current += ch
        i += 1
    parts.append(current)
    if any(p == "" for p in parts):
        raise ArgumentError(f"--arg {key!r}: empty name segment in key")
    return parts


def parse_item(item: str) -> tuple[list[str], str, bool]:
    """Split `key=value` / `key:=json` into (path, value, is_raw_json)."""
    eq = item.find("=")
    if eq <= 0:
        raise ArgumentError(
            f"--arg {item!r}: expected key=value or key:=json",
            hint="for example --arg city=Paris or --arg count:=3",
        )
    raw = item[eq - 1] == ":"
    key = item[: eq - 1] if raw else item[:eq]
    if not key:
        raise ArgumentError(f"--arg {item!r}: missing key before '='")
    return _split_key(key), item[eq + 1 :], raw


def _subschema(schema: Any, path: list[str]) -> Any:
    """Follow `properties` (and local `$ref`s, composition branches) down a key path."""
    current = schema
    root = schema
    for part in path:
        current = _resolve(root, current)
        if not isinstance(current, dict):
            return None
        props = current.get("properties")
        if isinstance(props, dict) and part in props:
            current = props[part]
            continue
        found = None
        for keyword in ("allOf", "anyOf", "oneOf"):
            for branch in _branches(current, keyword):
                branch = _resolve(root, branch)
                props = branch.get("properties") if isinstance(branch, dict) else None
                if isinstance(props, dict) and part in props:
                    found = props[part]
                    break
            if found is not None:
                break
        if found is None:
            extra = current.get("additionalProperties")
            return extra if isinstance(extra, dict) else None
        current = found
    return _resolve(root, current)


def _resolve(root: Any, node: Any, depth: int = 0) -> Any:
    """Resolve a local `#/...` `$ref`; network references are never followed."""
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < 16:
        from mcpcli.validation import local_target

        found, target = local_target(root, node["$ref"])
        if not found:
            return node
        node = target
        depth += 1
    return node


def resolve_ref(root: Any, node: Any) -> Any:
    """`node` with a local `#/...` `$ref` (within `root`) followed; never the network."""
    return _resolve(root, node)


def _branches(schema: dict[str, Any], keyword: str) -> list[Any]:
    """The subschemas of `anyOf`/`oneOf`/`allOf`; [] when a server sent something else."""
    branches = schema.get(keyword)
    return branches if isinstance(branches, list) else []


#: How deep `schema_types` and `coerce` follow subschemas: a `$ref` can make a cycle.
_MAX_DEPTH = 32


def type_label(schema: Any, *, max_enum: int = 6) -> str:
    """A parameter's type as a reader wants it: `string`, `integer[]`, `"a"|"b"`, `number|null`.

    For signatures (`mcp tools show`, `mcp skill`): the first `max_enum` enum values, then `…`.
    """
    if not isinstance(schema, dict):
        return "any"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return "|".join(json.dumps(v, ensure_ascii=False) for v in enum[:max_enum]) + (
            "|…" if len(enum) > max_enum else "")
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array":
        return f"{type_label(schema.get('items'), max_enum=max_enum)}[]"
    if isinstance(kind, str):
        return kind
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return "|".join(type_label(b, max_enum=max_enum) for b in schema[key])
    return "any"


def schema_types(schema: Any, root: Any = None, _depth: int = 0) -> list[str]:
    """The JSON types a schema admits, in declaration order ([] when unconstrained)."""
    root = schema if root is None else root
    schema = _resolve(root, schema)
    if not isinstance(schema, dict) or _depth > _MAX_DEPTH:
        return []
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    if "const" in schema:
        return [json_type(schema["const"])]
    if isinstance(schema.get("enum"), list):
        out: list[str] = []
        for value in schema["enum"]:
            t = json_type(value)
            if t not in out:
                out.append(t)
        return out
    types: list[str] = []
    for keyword in ("anyOf", "oneOf"):
        for branch in _branches(schema, keyword):
            for t in schema_types(branch, root, _depth + 1):
                if t not in types:
                    types.append(t)
    if "properties" in schema and not types:
        return ["object"]
    if "items" in schema and not types:
        return ["array"]
    return types


def json_type(value: Any) -> str:
    """The JSON Schema type name of a decoded JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def _as_number(text: str, integer: bool) -> int | float | None:
    text = text.strip()
    try:
        if integer:
            return int(text, 10)
        value = float(text)
    except ValueError:
        if not integer:
            return None
        try:
            as_float = float(text)
        except ValueError:
            return None
        return int(as_float) if as_float.is_integer() else None
    if math.isnan(value) or math.isinf(value):
        return None
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


_NO_LITERAL: Any = object()
_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def _literal(text: str, types: list[str]) -> Any:
    """For a union with string (`["boolean","string"]`): the value of `text` when it
    is exactly a JSON `true`/`false`/`null`/number of another admitted type."""
    if text in ("true", "false") and "boolean" in types:
        return text == "true"
    if text == "null" and "null" in types:
        return None
    if ("integer" in types or "number" in types) and len(text) <= 100 and _JSON_NUMBER.fullmatch(text):
        value = json.loads(text)
        if isinstance(value, float) and not math.isfinite(value):
            return _NO_LITERAL  # 1e999 is no number JSON can send: it stays text
        if isinstance(value, int) or "number" in types:
            return value
    return _NO_LITERAL


def coerce(text: str, schema: Any, *, key: str, root: Any = None, _depth: int = 0) -> Any:
    """Convert one `key=value` text to the value its schema asks for."""
    root = schema if root is None else root
    schema = _resolve(root, schema)
    if _depth > _MAX_DEPTH:
        raise ArgumentError(f"--arg {key}: the schema nests arrays too deeply (a $ref cycle?)",
                            hint=f"use {key}:=<json> to pass a raw JSON value")
    if isinstance(schema, dict) and isinstance(schema.get("enum"), list):
        # An enum member is matched by its text: "1" picks 1 from [1, 2, "auto"].
        for member in schema["enum"]:
            if member == text:
                return member
        for member in schema["enum"]:
            if not isinstance(member, str) and json.dumps(member) == text:
                return member
    types = schema_types(schema, root)
    if not types:
        return text  # unconstrained: the text as given, never guessed
    if "string" in types:
        # A string-admitting field keeps the exact text ("007" stays "007"), unless
        # the text is an exact JSON literal of another type it admits.
        literal = _literal(text, types)
        return text if literal is _NO_LITERAL else literal
    for t in types:
        if t == "null" and text == "null":
            return None
        if t == "boolean":
            low = text.strip().lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
        elif t in ("integer", "number"):
            number = _as_number(text, t == "integer")
            if number is not None:
                return number
        elif t in ("array", "object"):
            stripped = text.strip()
            if stripped[:1] in ("[", "{"):
                value = _loads(stripped, what=f"--arg {key}")
                if json_type(value) == t:
                    return value
            elif t == "array":
                items = schema.get("items") if isinstance(schema, dict) else None
                return [coerce(text, items, key=key, root=root, _depth=_depth + 1)]
    expected = " or ".join(types)
    raise ArgumentError(
        f"--arg {key}: {text!r} is not a valid {expected}",
        hint=f"use {key}:=<json> to pass a raw JSON value",
    )


def _set(target: JSON, path: list[str], value: Any, *, append: bool, key: str) -> None:
    node = target
    for part in path[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, dict):
            raise ArgumentError(f"--arg {key}: {part!r} is already set to a non-object value")
        node = child
    last = path[-1]
    if append and last in node and isinstance(node[last], list) and isinstance(value, list):
        node[last] = node[last] + value
    else:
        node[last] = value


def build_arguments(
    items: Iterable[str],
    *,
    schema: Any = None,
    base: JSON | None = None,
    stdin: Callable[[], str] | None = None,
) -> JSON:
    """Build the `arguments` object from `--args` (`base`) and `--arg` items."""
    out: JSON = json.loads(json.dumps(base)) if base else {}
    seen: set[str] = set()
    for item in items:
        path, text, raw = parse_item(item)
        key = ".".join(path)
        if raw:
            if text.startswith("@"):
                text = _read_text(text[1:], what=f"--arg {key}", stdin=stdin)
            value = _loads(text, what=f"--arg {key}")
            _set(out, path, value, append=False, key=key)
            seen.add(key)
            continue
        if text.startswith("@"):
            text = _read_text(text[1:], what=f"--arg {key}", stdin=stdin)
            sub = _subschema(schema, path) if schema is not None else None
            if schema_types(sub, schema) not in ([], ["string"]) and text.endswith("\n"):
                text = text.rstrip("\r\n")
        elif text.startswith("\\@"):
            text = text[1:]
        sub = _subschema(schema, path) if schema is not None else None
        value = coerce(text, sub, key=key, root=schema)
        is_array = "array" in schema_types(sub, schema) and isinstance(value, list)
        _set(out, path, value, append=is_array and key in seen, key=key)
        seen.add(key)
    return out


def required_names(schema: Any) -> set[str]:
    """The property names an object schema's `required` lists (a server's schema is
    untrusted: anything but a list of names counts for nothing)."""
    required = schema.get("required") if isinstance(schema, dict) else None
    return {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()


def prompt_schema(prompt: JSON) -> JSON:
    """A JSON Schema for a prompt's arguments: every value a string, required ones required."""
    props: JSON = {}
    required: list[str] = []
    arguments = prompt.get("arguments")
    for arg in arguments if isinstance(arguments, list) else []:
        if not isinstance(arg, dict) or not isinstance(arg.get("name"), str):
            continue
        prop: JSON = {"type": "string"}
        if isinstance(arg.get("description"), str):
            prop["description"] = arg["description"]
        props[arg["name"]] = prop
        if arg.get("required"):
            required.append(arg["name"])
    schema: JSON = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


class UnknownTool(UsageError):
    """A tool the server's listing lacks (exit 2, with the closest names as the hint)."""

    def __init__(self, name: str, listing: JSON) -> None:
        import difflib

        names = [t["name"] for t in listing.get("tools", []) if isinstance(t, dict) and isinstance(t.get("name"), str)]
        close = difflib.get_close_matches(name, names, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else "list them with `mcp tools list`"
        super().__init__(f"unknown tool {name!r}", hint=hint)
        self.tool = name


def unknown_tool(name: str, listing: JSON) -> UnknownTool:
    """The error for a tool the listing lacks: one place, so every path says it alike."""
    return UnknownTool(name, listing)


def needs_listing(items: Sequence[str], *, validate: bool) -> bool:
    """Whether a tool call must list the tools first: to check the arguments, or to type
    `--arg` values by the schema (`--args` JSON alone with --no-validate needs nothing)."""
    return validate or bool(items)


def call_arguments(
    name: str,
    definition: JSON | None,
    items: Sequence[str],
    *,
    base: JSON | None,
    validate: bool,
    listing: JSON | None = None,
    stdin: Callable[[], str] | None = None,
) -> JSON:
    """`mcp tools call`'s arguments, the same on every path (the full one, the daemon's
    `call` op, the one-shot fast path): `--arg` items typed by the tool's input schema over
    the `--args` `base`, then checked against it unless `validate` is off. A tool that is
    not listed is `UnknownTool` when validating (`listing` words the hint)."""
    if definition is None and validate:
        raise UnknownTool(name, listing or {})
    schema = definition.get("inputSchema") if definition is not None else None
    arguments = build_arguments(items, schema=schema, base=base, stdin=stdin)
    if validate and isinstance(schema, dict):
        # Plainly valid arguments never import jsonschema (about 90 ms of CPU, more than
        # the rest of a call's imports): `check` imports it only for a schema that needs it.
        from mcpcli.validation import check

        check(schema, arguments)
    return arguments


def _reserved_meta_key(key: str) -> bool:
    """A `_meta` key the client sets itself, or one MCP reserves: `progressToken`, and any
    key whose prefix has a `modelcontextprotocol` or `mcp` label (`io.modelcontextprotocol/...`)."""
    if key == "progressToken":
        return True
    prefix, sep, _ = key.rpartition("/")
    if not sep:
        return False
    return any(label in ("modelcontextprotocol", "mcp") for label in prefix.lower().split("."))


def meta_items(items: Iterable[str]) -> JSON:
    """`--meta KEY=VALUE` items as a `_meta` object: VALUE is JSON when it parses as JSON
    (`n=3`, `on=true`, `o={"a":1}`), else the text itself (`NaN`, `Infinity` and `1e999`
    are no JSON numbers: they stay text, as with `--arg`). Keys the client sets itself
    (progressToken, the 2026-07-28 protocol fields, the trace context) are refused, never
    overridden."""
    from mcpcli.core.jsonrpc import loads as strict_loads

    meta: JSON = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--meta {item!r}: expected KEY=VALUE")
        if key in ("traceparent", "tracestate"):
            raise UsageError(
                f"--meta {key!r}: the client sets this _meta key itself",
                hint="give the trace with --traceparent VALUE (or TRACEPARENT and TRACESTATE in the environment)",
            )
        if _reserved_meta_key(key):
            raise UsageError(
                f"--meta {key!r}: the client sets this _meta key itself",
                hint="progressToken and keys under a modelcontextprotocol/mcp prefix are reserved",
            )
        try:
            value: Any = strict_loads(text)  # NaN and 1e999 would decode, then fail to send
        except ValueError:
            value = text  # as `--arg`: what is no JSON an encoder can send back stays text
        meta[key] = value
    return meta
