"""Walking a JSON Schema: its subschemas with their paths, and where its `$ref`s lead.

Shared by the lint (invalid references, `required` naming nothing) and the model
provider rules (keywords outside a provider's subset, nesting depth). Bounded: a
schema is server data, so a deep or huge one is walked only so far.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from mcpcli.validation import local_target

__all__ = ["MAX_DEPTH", "describe", "refs", "subschemas"]

JSON = dict[str, Any]

#: Nesting beyond which a schema is not walked (no sane tool schema comes near).
MAX_DEPTH = 64
#: Subschemas walked per schema at most.
MAX_NODES = 10_000

#: Keywords whose value is a schema, a map of names to schemas, or a list of schemas.
SCHEMA_VALUE = ("additionalProperties", "items", "contains", "not", "if", "then", "else",
                "propertyNames", "unevaluatedProperties", "unevaluatedItems", "additionalItems")
SCHEMA_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SCHEMA_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")

_ABSOLUTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def subschemas(schema: Any, path: str = "") -> Iterator[tuple[str, JSON]]:
    """Every object subschema of `schema` (itself first) with its path (`properties.a.items`)."""
    count = 0
    stack: list[tuple[str, Any, int]] = [(path, schema, 0)]
    while stack and count < MAX_NODES:
        where, node, depth = stack.pop()
        if not isinstance(node, dict) or depth > MAX_DEPTH:
            continue
        count += 1
        yield where, node
        children: list[tuple[str, Any]] = []
        for key in SCHEMA_VALUE:
            if key in node:
                value = node[key]
                if isinstance(value, list):  # draft-07 tuple `items`
                    children.extend((f"{key}[{i}]", sub) for i, sub in enumerate(value))
                else:
                    children.append((key, value))
        for key in SCHEMA_MAP:
            value = node.get(key)
            if isinstance(value, dict):
                children.extend((f"{key}.{name}", sub) for name, sub in value.items())
        for key in SCHEMA_LIST:
            value = node.get(key)
            if isinstance(value, list):
                children.extend((f"{key}[{i}]", sub) for i, sub in enumerate(value))
        for child, sub in reversed(children):
            stack.append((f"{where}.{child}" if where else child, sub, depth + 1))


def describe(path: str) -> str:
    """A path for a message: the schema root has none."""
    return path or "the root"


def _pointer(root: Any, fragment: str) -> bool:
    """Whether the JSON pointer `fragment` (after `#`) names something in `root`."""
    return local_target(root, "#" + fragment)[0]


def refs(root: JSON) -> list[tuple[str, str, str]]:
    """Every `$ref` of `root`: (path, the reference, where it leads). Where is "local"
    (found in the schema), "remote" (a URL a client would have to fetch, which clients
    never do) or "missing"."""
    ids: set[str] = set()
    anchors: set[str] = set()
    found: list[tuple[str, str]] = []
    for path, node in subschemas(root):
        if isinstance(node.get("$id"), str):
            ids.add(node["$id"].rstrip("#"))
        for key in ("$anchor", "$dynamicAnchor"):
            if isinstance(node.get(key), str):
                anchors.add(node[key])
        if isinstance(node.get("$ref"), str):
            found.append((path, node["$ref"]))
    return [(path, ref, _target(root, ref, ids, anchors)) for path, ref in found]


def _target(root: JSON, ref: str, ids: set[str], anchors: set[str]) -> str:
    base, _, fragment = ref.partition("#")
    if base and base in ids:
        return "local"  # into an embedded resource; its own pointers are its business
    if not base:
        if fragment.startswith("/") or fragment == "":
            return "local" if _pointer(root, fragment) else "missing"
        return "local" if fragment in anchors else "missing"
    if _ABSOLUTE.match(base):
        return "remote"
    root_id = root.get("$id")
    if isinstance(root_id, str) and _ABSOLUTE.match(root_id):
        return "remote"  # relative to an absolute base: another document
    return "missing"
