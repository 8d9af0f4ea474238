"""Human renderings of MCP results for a terminal (rich; imported only on a TTY).

Everything the server controls is passed through `sanitize` first. Binary content
(images, audio, blobs) is summarised, and saved to a directory when asked.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpcli.output import sanitize

if TYPE_CHECKING:
    from rich.console import Console

    from mcpcli.cli._app import App

__all__ = [
    "call_result",
    "save_blobs",
    "tool_detail",
    "tool_signature",
    "tools_table",
]

JSON = dict[str, Any]


def _s(value: Any, *, one_line: bool = True, limit: int | None = None) -> str:
    text = sanitize(str(value if value is not None else ""), keep_newlines=not one_line)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _first_line(text: Any) -> str:
    return str(text or "").strip().splitlines()[0] if str(text or "").strip() else ""


def _type_label(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if isinstance(schema.get("enum"), list):
        return "|".join(json.dumps(v) for v in schema["enum"][:6]) + ("|…" if len(schema["enum"]) > 6 else "")
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array":
        return f"{_type_label(schema.get('items'))}[]"
    if isinstance(kind, str):
        return kind
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return "|".join(_type_label(b) for b in schema[key])
    return "any"


def tool_signature(tool: JSON) -> str:
    """`name(city: string, days?: integer)`: a readable one-line signature."""
    schema: JSON = tool["inputSchema"] if isinstance(tool.get("inputSchema"), dict) else {}
    props: JSON = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or [])
    params = [
        f"{name}{'' if name in required else '?'}: {_type_label(prop)}" for name, prop in props.items()
    ]
    return f"{tool.get('name', '?')}({', '.join(params)})"


def tools_table(console: Console, result: JSON) -> None:
    from rich.table import Table

    tools = [t for t in result.get("tools", []) if isinstance(t, dict)]
    if not tools:
        console.print("(no tools)")
        return
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("TOOL", no_wrap=True)
    table.add_column("DESCRIPTION", overflow="fold")
    for tool in tools:
        table.add_row(_s(tool_signature(tool), limit=80), _s(_first_line(tool.get("description")), limit=200))
    console.print(table)


def tool_detail(console: Console, tool: JSON) -> None:
    from rich.syntax import Syntax

    console.print(_s(tool_signature(tool)), style="bold")
    if tool.get("title"):
        console.print(_s(tool["title"]))
    if tool.get("description"):
        console.print()
        console.print(_s(tool["description"], one_line=False))
    annotations = tool.get("annotations")
    if isinstance(annotations, dict):
        hints = [k.removesuffix("Hint") for k, v in annotations.items() if k.endswith("Hint") and v]
        if hints:
            console.print()
            console.print("hints: " + ", ".join(_s(h) for h in hints))
    for key in ("inputSchema", "outputSchema"):
        if isinstance(tool.get(key), dict):
            console.print()
            console.print(f"{key}:", style="bold")
            console.print(Syntax(json.dumps(tool[key], indent=2, ensure_ascii=False), "json",
                                 background_color="default", word_wrap=True))


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _decoded(data: Any) -> bytes | None:
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def _save(data: bytes, save_dir: str, stem: str, mime: str | None) -> Path:
    directory = Path(save_dir)
    directory.mkdir(parents=True, exist_ok=True)
    ext = (mimetypes.guess_extension(mime or "") or ".bin") if mime else ".bin"
    stem = _SAFE_NAME.sub("_", stem).strip("._") or "content"
    path = directory / f"{stem}{ext}"
    n = 1
    while path.exists():
        path = directory / f"{stem}-{n}{ext}"
        n += 1
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return path


def _binary_blocks(result: JSON) -> list[tuple[bytes, str | None, str]]:
    """(bytes, mime, name stem) for every binary block of a call or read result."""
    found: list[tuple[bytes, str | None, str]] = []
    for i, block in enumerate(result.get("content") or []):
        if not isinstance(block, dict):
            continue
        if block.get("type") in ("image", "audio"):
            data = _decoded(block.get("data"))
            if data is not None:
                found.append((data, block.get("mimeType"), f"{block['type']}-{i + 1}"))
        elif block.get("type") == "resource" and isinstance(block.get("resource"), dict):
            res = block["resource"]
            data = _decoded(res.get("blob"))
            if data is not None:
                found.append((data, res.get("mimeType"), Path(str(res.get("uri", "blob"))).name or "blob"))
    for item in result.get("contents") or []:
        if isinstance(item, dict) and "blob" in item:
            data = _decoded(item.get("blob"))
            if data is not None:
                found.append((data, item.get("mimeType"), Path(str(item.get("uri", "blob"))).name or "blob"))
    return found


def save_blobs(result: JSON, save_dir: str, app: App | None = None) -> list[Path]:
    """Write every binary block to `save_dir`; report each path on stderr."""
    paths = []
    for data, mime, stem in _binary_blocks(result):
        path = _save(data, save_dir, stem, mime)
        paths.append(path)
        if app is not None:
            app.info(f"saved {mime or 'data'} ({_size(len(data))}) to {path}")
    return paths


def _block(console: Console, block: JSON, index: int, save_dir: str | None) -> None:
    kind = block.get("type")
    if kind == "text":
        console.print(_s(block.get("text", ""), one_line=False))
    elif kind in ("image", "audio"):
        data = _decoded(block.get("data"))
        size = _size(len(data)) if data is not None else "invalid base64"
        line = f"[{kind} {_s(block.get('mimeType', '?'))}, {size}]"
        if save_dir and data is not None:
            path = _save(data, save_dir, f"{kind}-{index + 1}", block.get("mimeType"))
            line += f" saved to {path}"
        elif data is not None:
            line += " (use --save-dir DIR to save it)"
        console.print(line, style="dim")
    elif kind == "resource_link":
        name = block.get("title") or block.get("name") or ""
        console.print(f"→ {_s(block.get('uri'))}" + (f"  {_s(name)}" if name else ""))
    elif kind == "resource" and isinstance(block.get("resource"), dict):
        res = block["resource"]
        console.print(f"[resource {_s(res.get('uri'))}]", style="dim")
        if "text" in res:
            console.print(_s(res.get("text", ""), one_line=False))
        else:
            data = _decoded(res.get("blob"))
            size = _size(len(data)) if data is not None else "invalid base64"
            line = f"[blob {_s(res.get('mimeType', '?'))}, {size}]"
            if save_dir and data is not None:
                line += f" saved to {_save(data, save_dir, 'resource', res.get('mimeType'))}"
            console.print(line, style="dim")
    else:
        console.print_json(data=block)


def call_result(console: Console, result: JSON, save_dir: str | None = None) -> None:
    content = [b for b in result.get("content") or [] if isinstance(b, dict)]
    for i, block in enumerate(content):
        _block(console, block, i, save_dir)
    structured = result.get("structuredContent")
    if structured is not None and not any(b.get("type") == "text" for b in content):
        console.print_json(data=structured)
    if not content and structured is None:
        console.print("(no content)", style="dim")
