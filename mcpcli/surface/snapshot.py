"""A server's surface as canonical JSON: collected from a client, written, read back.

Canonical means the same server gives the same bytes on every run, so the file
can be committed and reviewed: keys sorted, two-space indentation, a trailing
newline; tools and prompts sorted by name, resources by URI, templates by URI
template (a prompt's arguments keep the server's order, which clients show);
and what changes between runs left out: the list results' own fields
(`nextCursor`, the 2026-07-28 `ttlMs`, `cacheScope`, `resultType` and `_meta`),
a resource's `size` and `annotations.lastModified`, and the protocol's own
`_meta` keys (`io.modelcontextprotocol/...`) on every item. Schemas are kept
exactly as the server sent them. `serverInfo` is kept whole; `compare` reports
its name and version as information, not as changes, since the version changes
with every release.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

from mcpcli.core.jsonrpc import METHOD_NOT_FOUND
from mcpcli.errors import NotOffered, RPCError, UsageError

__all__ = ["FORMAT", "FORMAT_KEY", "Lister", "canonical", "collect", "dumps", "load_file", "loads", "strip_volatile"]

JSON = dict[str, Any]

#: The key that marks a snapshot file, and the version of its format.
FORMAT_KEY = "mcpSnapshot"
FORMAT = 1

#: A snapshot file larger than this is refused (no server's surface comes near it).
MAX_FILE_BYTES = 64 * 1024 * 1024

#: Each list of the surface, the method's result key, and what sorts its items.
LISTS: tuple[tuple[str, str], ...] = (
    ("tools", "name"),
    ("resources", "uri"),
    ("resourceTemplates", "uriTemplate"),
    ("prompts", "name"),
)
#: `_meta` keys under this prefix belong to the protocol (server info, cache hints,
#: related task...), not to the item: they change with the era and the response.
PROTOCOL_META = "io.modelcontextprotocol/"
#: Fields of a result that describe the response, not the data.
RESPONSE_FIELDS = ("resultType", "ttlMs", "cacheScope", "nextCursor")


class Lister(Protocol):
    """What `collect` needs of a connected client (`mcpcli.client.Client` is one)."""

    @property
    def server_info(self) -> JSON: ...
    @property
    def protocol_version(self) -> str: ...
    @property
    def capabilities(self) -> JSON: ...
    @property
    def instructions(self) -> str | None: ...

    async def list_tools(self) -> JSON: ...
    async def list_resources(self) -> JSON: ...
    async def list_resource_templates(self) -> JSON: ...
    async def list_prompts(self) -> JSON: ...


async def collect(client: Lister, warn: Callable[[str], None] | None = None) -> JSON:
    """The canonical surface of the server `client` is connected to.

    Every list is asked for (every page), even of a feature the server did not
    declare; one it does not serve ("method not found") is empty, and `warn` is told
    when the server had declared it.
    """
    fetchers = {
        "tools": client.list_tools,
        "resources": client.list_resources,
        "resourceTemplates": client.list_resource_templates,
        "prompts": client.list_prompts,
    }
    surface: JSON = {
        FORMAT_KEY: FORMAT,
        "serverInfo": client.server_info,
        "protocolVersion": client.protocol_version,
        "capabilities": client.capabilities,
    }
    if client.instructions is not None:
        surface["instructions"] = client.instructions
    for key, fetch in fetchers.items():
        try:
            result = await fetch()
        except NotOffered:
            result = {}
        except RPCError as exc:
            if exc.code != METHOD_NOT_FOUND:
                raise
            if warn is not None:
                what = "resource templates" if key == "resourceTemplates" else key
                warn(f"the server declares {what} but does not list them ({exc.message}); the snapshot has none")
            result = {}
        surface[key] = result.get(key) or []
    return canonical(surface)


def canonical(surface: JSON) -> JSON:
    """`surface` with its lists sorted and the volatile fields left out (a new object)."""
    out: JSON = {key: value for key, value in surface.items() if key not in dict(LISTS)}
    out[FORMAT_KEY] = surface.get(FORMAT_KEY, FORMAT)
    for key, sort_key in LISTS:
        items = surface.get(key)
        kept = [_item(key, item) for item in items if isinstance(item, dict)] if isinstance(items, list) else []
        kept.sort(key=lambda item: (str(item.get(sort_key, "")), _canon(item)))
        out[key] = kept
    if not isinstance(out.get("serverInfo"), dict):
        out["serverInfo"] = {}
    if not isinstance(out.get("capabilities"), dict):
        out["capabilities"] = {}
    return out


def _item(key: str, item: JSON) -> JSON:
    out = strip_volatile(item, response=False)
    if key == "resources":
        out.pop("size", None)
        annotations = out.get("annotations")
        if isinstance(annotations, dict) and "lastModified" in annotations:
            annotations = {k: v for k, v in annotations.items() if k != "lastModified"}
            if annotations:
                out["annotations"] = annotations
            else:
                out.pop("annotations")
    return out


def strip_volatile(value: JSON, *, response: bool = True) -> JSON:
    """`value` without the protocol's `_meta` keys (an emptied `_meta` goes too) and,
    for a whole response (`response`), without its `resultType`, `ttlMs`, `cacheScope`
    and `nextCursor`: what differs between two answers carrying the same data."""
    out = {k: v for k, v in value.items() if not (response and k in RESPONSE_FIELDS)}
    meta = out.get("_meta")
    if isinstance(meta, dict):
        kept = {k: v for k, v in meta.items() if not k.startswith(PROTOCOL_META)}
        if kept:
            out["_meta"] = kept
        else:
            out.pop("_meta")
    return out


def dumps(surface: JSON) -> str:
    """The file's text: sorted keys, two-space indentation, UTF-8 as is, a final newline."""
    return json.dumps(surface, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def loads(data: bytes | str, name: str) -> JSON:
    """A snapshot read back from `name` (a file, or `-`); UsageError if it is not one."""
    from mcpcli.core.jsonrpc import loads as json_loads

    try:
        value = json_loads(data)
    except ValueError as exc:
        raise UsageError(f"{name}: not a snapshot: invalid JSON ({exc})") from None
    if not isinstance(value, dict) or FORMAT_KEY not in value:
        raise UsageError(f"{name}: not a snapshot (no {FORMAT_KEY!r} field)",
                         hint="write one with `mcp snapshot TARGET -o FILE`")
    version = value[FORMAT_KEY]
    if version != FORMAT:
        if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT:
            raise UsageError(f"{name}: snapshot format {version} is newer than this mcpcli reads ({FORMAT})",
                             hint="upgrade mcpcli")
        raise UsageError(f"{name}: unknown snapshot format {version!r} (expected {FORMAT})")
    return canonical(value)


def load_file(path: str) -> JSON:
    """A snapshot read back from the file `path`: a regular file (a FIFO or a device would
    never end), at most MAX_FILE_BYTES; UsageError for anything else."""
    import os
    import stat

    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"cannot read the snapshot {path}: not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise UsageError(f"cannot read the snapshot {path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read the snapshot {path}: {exc.strerror or exc}") from None
    return loads(data, path)


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
