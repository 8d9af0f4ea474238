"""Human renderings of MCP results for a terminal (rich; imported only on a TTY).

Everything the server controls is passed through `sanitize` first. Binary content
(images, audio, blobs) is summarised, and saved to a directory when asked.
"""

from __future__ import annotations

import base64
import binascii
import json
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
    "completion_values",
    "prompt_detail",
    "prompt_messages",
    "prompt_signature",
    "prompts_table",
    "resource_contents",
    "resources_table",
    "save_blobs",
    "server_detail",
    "server_info",
    "servers_table",
    "task_detail",
    "tasks_table",
    "templates_table",
    "tool_detail",
    "tool_signature",
    "tools_table",
    "update_event",
]

JSON = dict[str, Any]


def _s(value: Any, *, one_line: bool = True, limit: int | None = None) -> str:
    text = sanitize(str(value if value is not None else ""), keep_newlines=not one_line)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _obj(value: Any) -> JSON:
    """`value` if it is a JSON object, else an empty one (server data is untrusted)."""
    return value if isinstance(value, dict) else {}


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
    execution = _obj(tool.get("execution"))
    if execution.get("taskSupport") in ("required", "optional"):
        console.print()
        console.print(f"runs as a task: {_s(execution['taskSupport'])}")
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
        data = _decoded(block.get("data"))
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
            console.print(_binary_line("blob", res.get("mimeType"), _decoded(res.get("blob")),
                                       save_dir, stem), style="dim")
    else:
        console.print_json(data=block)


def call_result(console: Console, result: JSON, save_dir: str | None = None) -> None:
    """A tool result: every content block, then structured content if no text carried it."""
    content = [b for b in result.get("content") or [] if isinstance(b, dict)]
    if result.get("isError"):
        console.print("the tool reported an error:", style="bold red")
    for i, block in enumerate(content):
        _block(console, block, i, save_dir)
    structured = result.get("structuredContent")
    if structured is not None and not any(b.get("type") == "text" for b in content):
        console.print_json(data=structured)
    if not content and structured is None:
        console.print("(no content)", style="dim")


# -- tasks ---------------------------------------------------------------------------


def _duration(ms: Any) -> str:
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return "unlimited" if ms is None else "?"
    return f"{ms / 1000:g}s"


def task_detail(console: Console, result: JSON) -> None:
    """One task (`mcp tasks get`, `tools call --detach`), in either era's shape."""
    task = _obj(result.get("task")) or result  # a 2025-11-25 CreateTaskResult nests it
    rows = [("task", task.get("taskId")), ("status", task.get("status")),
            ("message", task.get("statusMessage")), ("created", task.get("createdAt")),
            ("updated", task.get("lastUpdatedAt"))]
    if "ttlMs" in task or "ttl" in task:
        rows.append(("ttl", _duration(task.get("ttlMs", task.get("ttl")))))
    for key, value in rows:
        if value is not None:
            console.print(f"{key.ljust(8)} {_s(value)}")
    requests = _obj(task.get("inputRequests"))
    if requests:
        console.print(f"{'input'.ljust(8)} waiting for: {_s(', '.join(requests))}")
    error = _obj(task.get("error"))
    if error:
        console.print(f"{'error'.ljust(8)} {_s(error.get('message'))} (code {_s(error.get('code'))})")
    if isinstance(task.get("result"), dict):
        console.print()
        call_result(console, task["result"])


def tasks_table(console: Console, result: JSON) -> None:
    items = [t for t in result.get("tasks", []) if isinstance(t, dict)]
    if not items:
        console.print("(no tasks)")
        return
    table = _table("TASK", "STATUS", "UPDATED", "MESSAGE")
    for t in items:
        table.add_row(_s(t.get("taskId")), _s(t.get("status")), _s(t.get("lastUpdatedAt")),
                      _s(t.get("statusMessage"), limit=80))
    console.print(table)


# -- resources -----------------------------------------------------------------------


def _table(*columns: str) -> Any:
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for i, name in enumerate(columns):
        if i == 0:
            table.add_column(name, no_wrap=True)
        else:
            table.add_column(name, overflow="fold")
    return table


def resources_table(console: Console, result: JSON) -> None:
    items = [r for r in result.get("resources", []) if isinstance(r, dict)]
    if not items:
        console.print("(no resources)")
        return
    table = _table("URI", "NAME", "TYPE", "DESCRIPTION")
    for res in items:
        mime = _s(res.get("mimeType") or "")
        if isinstance(res.get("size"), int):
            mime = f"{mime} {_size(res['size'])}".strip()
        table.add_row(_s(res.get("uri"), limit=100), _s(res.get("title") or res.get("name") or "", limit=40),
                      mime, _s(_first_line(res.get("description")), limit=160))
    console.print(table)


def templates_table(console: Console, result: JSON) -> None:
    items = [r for r in result.get("resourceTemplates", []) if isinstance(r, dict)]
    if not items:
        console.print("(no resource templates)")
        return
    table = _table("URI TEMPLATE", "NAME", "TYPE", "DESCRIPTION")
    for res in items:
        table.add_row(_s(res.get("uriTemplate"), limit=100),
                      _s(res.get("title") or res.get("name") or "", limit=40),
                      _s(res.get("mimeType") or ""), _s(_first_line(res.get("description")), limit=160))
    console.print(table)


def resource_contents(console: Console, result: JSON, save_dir: str | None = None) -> None:
    """A `resources/read` result: text printed, blobs summarised (and saved)."""
    contents = [c for c in result.get("contents") or [] if isinstance(c, dict)]
    many = len(contents) > 1
    for i, item in enumerate(contents):
        if many:
            console.print(f"[{_s(item.get('uri'))}{' ' + _s(item['mimeType']) if item.get('mimeType') else ''}]",
                          style="dim")
        if "text" in item:
            console.print(_s(item.get("text", ""), one_line=False))
        else:
            stem = Path(str(item.get("uri", "blob"))).name or f"blob-{i + 1}"
            console.print(_binary_line("blob", item.get("mimeType"), _decoded(item.get("blob")),
                                       save_dir, stem), style="dim")
    if not contents:
        console.print("(no contents)", style="dim")


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


# -- prompts -------------------------------------------------------------------------


def prompt_signature(prompt: JSON) -> str:
    """`name(code, style?)`: prompt arguments are strings, so no types."""
    args = [a for a in prompt.get("arguments") or [] if isinstance(a, dict)]
    names = [f"{a.get('name', '?')}{'' if a.get('required') else '?'}" for a in args]
    return f"{prompt.get('name', '?')}({', '.join(names)})"


def prompts_table(console: Console, result: JSON) -> None:
    items = [p for p in result.get("prompts", []) if isinstance(p, dict)]
    if not items:
        console.print("(no prompts)")
        return
    table = _table("PROMPT", "DESCRIPTION")
    for prompt in items:
        table.add_row(_s(prompt_signature(prompt), limit=80),
                      _s(_first_line(prompt.get("description") or prompt.get("title")), limit=200))
    console.print(table)


def prompt_detail(console: Console, prompt: JSON) -> None:
    console.print(_s(prompt_signature(prompt)), style="bold")
    if prompt.get("description"):
        console.print(_s(prompt["description"], one_line=False))
    for arg in prompt.get("arguments") or []:
        if isinstance(arg, dict):
            need = "required" if arg.get("required") else "optional"
            desc = f": {_s(arg['description'])}" if arg.get("description") else ""
            console.print(f"  {_s(arg.get('name'))} ({need}){desc}")


def prompt_messages(console: Console, result: JSON, save_dir: str | None = None) -> None:
    """A `prompts/get` result: its description, then each message with its role."""
    if result.get("description"):
        console.print(_s(result["description"], one_line=False), style="dim")
    messages = [m for m in result.get("messages") or [] if isinstance(m, dict)]
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


# -- completion, info ----------------------------------------------------------------


def completion_values(console: Console, result: JSON) -> None:
    completion = _obj(result.get("completion"))
    values = [v for v in completion.get("values") or [] if isinstance(v, str)]
    for value in values:
        console.print(_s(value))
    total = completion.get("total")
    if isinstance(total, int) and total > len(values):
        console.print(f"({total - len(values)} more)", style="dim")
    elif completion.get("hasMore"):
        console.print("(more available)", style="dim")
    if not values:
        console.print("(no suggestions)", style="dim")


def _capability_names(caps: Any) -> list[str]:
    if not isinstance(caps, dict):
        return []
    out = []
    for name, value in caps.items():
        flags = [k for k, v in value.items() if v is True or v == {}] if isinstance(value, dict) else []
        out.append(f"{name}" + (f" ({', '.join(flags)})" if flags else ""))
    return out


def server_info(console: Console, info: JSON) -> None:
    """`mcp info`: identity, protocol, transport, capabilities, instructions."""
    server = _obj(info.get("serverInfo"))
    name = _s(server.get("name") or "?")
    title = server.get("title")
    console.print(f"{name} {_s(server.get('version') or '')}".strip()
                  + (f" — {_s(title)}" if title and title != server.get("name") else ""), style="bold")
    rows = [
        ("protocol", f"{_s(info.get('protocolVersion'))} ({_s(info.get('era'))} era)"),
        ("transport", _s(info.get("transport"))),
    ]
    if info.get("supportedVersions"):
        rows.append(("supports", ", ".join(_s(v) for v in info["supportedVersions"])))
    caps = _capability_names(info.get("capabilities"))
    rows.append(("capabilities", ", ".join(caps) if caps else "(none)"))
    if server.get("description"):
        rows.append(("description", _s(server["description"])))
    if server.get("websiteUrl"):
        rows.append(("website", _s(server["websiteUrl"])))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        console.print(f"{key.ljust(width)}  {value}")
    if info.get("instructions"):
        console.print()
        console.print("instructions:", style="bold")
        console.print(_s(info["instructions"], one_line=False))


# -- servers -------------------------------------------------------------------------


def servers_table(console: Console, result: JSON) -> None:
    items = [s for s in result.get("servers", []) if isinstance(s, dict)]
    if not items:
        console.print("(no servers configured; add one with `mcp servers add NAME -- COMMAND...`)")
        return
    table = _table("NAME", "TRANSPORT", "COMMAND / URL", "SOURCE")
    for item in items:
        target = item.get("url") or " ".join([item.get("command") or "", *(item.get("args") or [])])
        name = _s(item.get("name"))
        if item.get("shadowed"):
            name += " (shadowed)"
        table.add_row(name, _s(item.get("transport")), _s(target, limit=80), _s(item.get("source")))
    console.print(table)


def server_detail(console: Console, item: JSON) -> None:
    console.print(_s(item.get("name")), style="bold")
    console.print(f"source     {_s(item.get('source'))}")
    console.print(f"file       {_s(item.get('path'))}")
    console.print(f"transport  {_s(item.get('transport'))}")
    console.print()
    console.print_json(data=item.get("config", {}))
