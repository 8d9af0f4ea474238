"""Renderings of content: tool results, resource contents, prompt messages, saved blobs.

Binary content (images, audio, blobs) is summarised, never written to a terminal,
and saved to a directory when asked.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpcli.output import print_json
from mcpcli.render._common import JSON, _first_line, _list, _obj, _s, _size

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console


def decoded(data: Any) -> bytes | None:
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


#: Extensions for media types `mimetypes` does not know on every system.
_EXTENSIONS = {
    "audio/wav": ".wav", "audio/x-wav": ".wav", "audio/wave": ".wav", "audio/mpeg": ".mp3",
    "audio/mp3": ".mp3", "audio/ogg": ".ogg", "audio/webm": ".weba", "audio/flac": ".flac",
    "audio/aac": ".aac", "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif",
    "image/webp": ".webp", "image/svg+xml": ".svg", "application/json": ".json",
    "text/plain": ".txt", "text/markdown": ".md", "application/gzip": ".gz",
    "application/pdf": ".pdf",
}


def _extension(mime: str | None) -> str:
    if not mime:
        return ".bin"
    base = mime.split(";", 1)[0].strip().lower()
    if base in _EXTENSIONS:
        return _EXTENSIONS[base]
    import mimetypes

    return mimetypes.guess_extension(base) or ".bin"


def _save(data: bytes, save_dir: str, stem: str, mime: str | None) -> Path:
    """Write `data` to a new file in `save_dir`, named from `stem` (a server-given name is
    reduced to safe characters and never replaces an existing file)."""
    directory = Path(save_dir)
    directory.mkdir(parents=True, exist_ok=True)
    stem = _SAFE_NAME.sub("_", stem).strip("._") or "content"
    suffix = Path(stem).suffix
    if suffix and 1 < len(suffix) <= 6:  # the server's own name already has an extension
        stem, ext = stem[: -len(suffix)], suffix
    else:
        ext = _extension(mime)
    n = 0
    while True:
        path = directory / (f"{stem}{ext}" if n == 0 else f"{stem}-{n}{ext}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            break
        except FileExistsError:
            n += 1
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return path


def _binary_blocks(result: JSON) -> list[tuple[bytes, str | None, str]]:
    """(bytes, mime, name stem) for every binary block of a call or read result."""
    found: list[tuple[bytes, str | None, str]] = []
    for i, block in enumerate(_list(result.get("content"))):
        if not isinstance(block, dict):
            continue
        if block.get("type") in ("image", "audio"):
            data = decoded(block.get("data"))
            if data is not None:
                found.append((data, block.get("mimeType"), f"{block['type']}-{i + 1}"))
        elif block.get("type") == "resource" and isinstance(block.get("resource"), dict):
            res = block["resource"]
            data = decoded(res.get("blob"))
            if data is not None:
                found.append((data, res.get("mimeType"), Path(str(res.get("uri", "blob"))).name or "blob"))
    for item in _list(result.get("contents")):
        if isinstance(item, dict) and "blob" in item:
            data = decoded(item.get("blob"))
            if data is not None:
                found.append((data, item.get("mimeType"), Path(str(item.get("uri", "blob"))).name or "blob"))
    return found


def save_blobs(
    result: JSON, save_dir: str, note: Callable[[str], None] | None = None
) -> list[Path]:
    """Write every binary block to `save_dir`; tell `note` (the CLI's stderr) each path."""
    paths = []
    for data, mime, stem in _binary_blocks(result):
        path = _save(data, save_dir, stem, mime)
        paths.append(path)
        if note is not None:
            note(f"saved {mime or 'data'} ({_size(len(data))}) to {path}")
    return paths


def _annotations(block: JSON) -> str:
    """A short suffix for content annotations: audience and priority."""
    ann = block.get("annotations")
    if not isinstance(ann, dict):
        return ""
    parts = []
    audience = ann.get("audience")
    if isinstance(audience, list) and audience:
        parts.append("for " + ",".join(_s(a) for a in audience))
    if isinstance(ann.get("priority"), (int, float)):
        parts.append(f"priority {ann['priority']}")
    return f" ({'; '.join(parts)})" if parts else ""


def _binary_line(kind: str, mime: Any, data: bytes | None, save_dir: str | None, stem: str) -> str:
    size = _size(len(data)) if data is not None else "invalid base64"
    line = f"[{kind} {_s(mime or '?')}, {size}]"
    if save_dir and data is not None:
        line += f" saved to {_save(data, save_dir, stem, mime if isinstance(mime, str) else None)}"
    elif data is not None:
        line += " (use --save-dir DIR to save it)"
    return line


def _block(console: Console, block: JSON, index: int, save_dir: str | None) -> None:
    """One content block: text as text, binary summarised (and saved), links as links."""
    kind = block.get("type")
    note = _annotations(block)
    if kind == "text":
        if note:
            console.print(note.strip(), style="dim")
        console.print(_s(block.get("text", ""), one_line=False))
    elif kind in ("image", "audio"):
        data = decoded(block.get("data"))
        line = _binary_line(str(kind), block.get("mimeType"), data, save_dir, f"{kind}-{index + 1}")
        console.print(line + note, style="dim")
    elif kind == "resource_link":
        name = block.get("title") or block.get("name") or ""
        extra = f" [{_s(block['mimeType'])}]" if block.get("mimeType") else ""
        console.print(f"→ {_s(block.get('uri'))}" + (f"  {_s(name)}" if name else "") + extra + note)
        if block.get("description"):
            console.print(f"  {_s(_first_line(block['description']), limit=200)}", style="dim")
    elif kind == "resource" and isinstance(block.get("resource"), dict):
        res = block["resource"]
        console.print(f"[resource {_s(res.get('uri'))}]{note}", style="dim")
        if "text" in res:
            console.print(_s(res.get("text", ""), one_line=False))
        else:
            stem = Path(str(res.get("uri", "resource"))).name or "resource"
            console.print(_binary_line("blob", res.get("mimeType"), decoded(res.get("blob")),
                                       save_dir, stem), style="dim")
    else:
        print_json(console, block)


def call_result(console: Console, result: JSON, save_dir: str | None = None) -> None:
    """A tool result: every content block, then structured content if no text carried it.

    An error result is not labelled here: the one `error:` line on stderr says so.
    """
    content = [b for b in _list(result.get("content")) if isinstance(b, dict)]
    for i, block in enumerate(content):
        _block(console, block, i, save_dir)
    structured = result.get("structuredContent")
    if structured is not None and not any(b.get("type") == "text" for b in content):
        print_json(console, structured)
    if not content and structured is None:
        console.print("(no content)", style="dim")


def resource_contents(console: Console, result: JSON, save_dir: str | None = None) -> None:
    """A `resources/read` result: text printed, blobs summarised (and saved)."""
    contents = [c for c in _list(result.get("contents")) if isinstance(c, dict)]
    many = len(contents) > 1
    for i, item in enumerate(contents):
        if many:
            console.print(f"[{_s(item.get('uri'))}{' ' + _s(item['mimeType']) if item.get('mimeType') else ''}]",
                          style="dim")
        if "text" in item:
            console.print(_s(item.get("text", ""), one_line=False))
        else:
            stem = Path(str(item.get("uri", "blob"))).name or f"blob-{i + 1}"
            console.print(_binary_line("blob", item.get("mimeType"), decoded(item.get("blob")),
                                       save_dir, stem), style="dim")
    if not contents:
        console.print("(no contents)", style="dim")


def prompt_messages(console: Console, result: JSON, save_dir: str | None = None) -> None:
    """A `prompts/get` result: its description, then each message with its role."""
    if result.get("description"):
        console.print(_s(result["description"], one_line=False), style="dim")
    messages = [m for m in _list(result.get("messages")) if isinstance(m, dict)]
    index = 0
    for message in messages:
        console.print(f"── {_s(message.get('role', '?'))} ──", style="bold")
        content = message.get("content")
        blocks = content if isinstance(content, list) else [content]
        for block in blocks:
            if isinstance(block, dict):
                _block(console, block, index, save_dir)
                index += 1
    if not messages:
        console.print("(no messages)", style="dim")


def update_event(console: Console, event: JSON) -> None:
    """One subscription event: `HH:MM:SS updated URI` or `... tools list changed`."""
    import time

    method = str(event.get("method", ""))
    params = _obj(event.get("params"))
    stamp = time.strftime("%H:%M:%S")
    if method == "notifications/resources/updated":
        console.print(f"{stamp} updated {_s(params.get('uri'))}")
    elif method.endswith("/list_changed"):
        what = method.removeprefix("notifications/").removesuffix("/list_changed")
        console.print(f"{stamp} {_s(what)} list changed")
    else:
        console.print(f"{stamp} {_s(method)}")
