"""Content shared by resources, prompts and mock tools: rendered text and file contents.

`render` fills a parsed `{{ name }}` template with argument values (absent ones
become empty text: this is content, not argv). `file_contents` reads a file
(at most `MAX_RESOURCE_BYTES`) into a resource contents object, as text when
its MIME type is textual and it decodes as UTF-8, else as a base64 blob.
"""

from __future__ import annotations

import base64
import mimetypes
import os
from typing import Any

from mcpcli.core.jsonrpc import INTERNAL_ERROR
from mcpcli.errors import RPCError
from mcpcli.server.backend import ResourceNotFound
from mcpcli.toolsfile import templating
from mcpcli.toolsfile.model import JSON
from mcpcli.toolsfile.results import Masker

__all__ = ["MAX_RESOURCE_BYTES", "bytes_contents", "file_contents", "read_file_bytes", "render", "render_text"]

MAX_RESOURCE_BYTES = 16 * 1024 * 1024


def render(template: Any, values: JSON) -> str:
    """Render a placeholder template; absent values become empty text (this is content, not argv)."""
    out = []
    for part in template.parts:
        if part.name is None:
            out.append(part.text)
        else:
            value = values.get(part.name)
            out.append("" if value is None else templating.stringify(value))
    return "".join(out)


def render_text(text: str, values: JSON) -> str:
    return render(templating.parse(text, strict=False), values)


def read_file_bytes(path: str, limit: int = MAX_RESOURCE_BYTES) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise RPCError(INTERNAL_ERROR, f"cannot read {os.path.basename(path)}: {exc.strerror}") from None
    if len(data) > limit:
        raise RPCError(INTERNAL_ERROR, f"{os.path.basename(path)} is larger than {limit} bytes")
    return data


def bytes_contents(uri: str, data: bytes, mime: str, mask: Masker | None = None) -> JSON:
    textual = mime.startswith("text/") or mime in ("application/json", "application/xml", "application/yaml",
                                                   "application/x-yaml", "image/svg+xml") or mime.endswith(
        ("+json", "+xml"))
    if textual:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            textual = False
        else:
            return {"uri": uri, "mimeType": mime, "text": mask(text) if mask else text}
    return {"uri": uri, "mimeType": mime, "blob": base64.b64encode(data).decode("ascii")}


def file_contents(uri: str, path: str | None, mime: str | None) -> JSON:
    assert path is not None
    if not os.path.isfile(path):
        raise ResourceNotFound(uri)
    data = read_file_bytes(path)
    guessed = mime or mimetypes.guess_type(path)[0]
    if guessed is None:
        guessed = "application/octet-stream" if b"\x00" in data[:8192] else "text/plain"
    return bytes_contents(uri, data, guessed)
