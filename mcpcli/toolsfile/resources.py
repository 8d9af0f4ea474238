"""`resources/list`, `resources/templates/list` and `resources/read` for a tools.yaml file.

A URI is looked up in order: a static resource with that exact URI, a file
under a directory resource's URI prefix, then the first template whose
expression matches. Template variables are checked against their parameters
before anything is read or run; a file (directory or template) must stay
inside its root, hidden files are never served, and a command's output is
read under the same limits as a tool's.
"""

from __future__ import annotations

import mimetypes
import os
from contextlib import AsyncExitStack
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import quote, unquote

from mcpcli.core.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS
from mcpcli.errors import RPCError
from mcpcli.server.backend import CallContext, ResourceNotFound
from mcpcli.toolsfile.arguments import ArgumentProblems
from mcpcli.toolsfile.contents import MAX_RESOURCE_BYTES, bytes_contents, file_contents, render_text
from mcpcli.toolsfile.model import JSON, Param, Resource, RunSpec, ToolsFile
from mcpcli.toolsfile.process import SpawnError, signal_name
from mcpcli.toolsfile.results import Masker
from mcpcli.toolsfile.runner import Runner

__all__ = ["list_resources", "list_templates", "read_resource"]

MAX_DIRECTORY_FILES = 1000


def list_resources(config: ToolsFile) -> list[JSON]:
    out: list[JSON] = []
    for res in config.resources:
        if res.kind == "static":
            out.append(res.listing())
        elif res.kind == "directory":
            out.extend(_directory_listing(res))
    return out


def list_templates(config: ToolsFile) -> list[JSON]:
    return [res.listing() for res in config.resources if res.kind == "template"]


async def read_resource(runner: Runner, config: ToolsFile, uri: str, ctx: CallContext) -> JSON:
    """The ReadResourceResult for `uri`; `ResourceNotFound` when nothing serves it."""
    for res in config.resources:
        if res.kind == "static" and res.uri == uri:
            return await _read_static(runner, config, res, uri, ctx)
    for res in config.resources:
        if res.kind == "directory" and res.uri and uri.startswith(res.uri):
            return _read_directory_file(res, uri)
    for res in config.resources:
        if res.kind == "template" and res.matcher is not None:
            match = res.matcher.fullmatch(uri)
            if match:
                return await _read_template(runner, config, res, uri, match.groupdict(), ctx)
    raise ResourceNotFound(uri)


async def _read_static(runner: Runner, config: ToolsFile, res: Resource, uri: str, ctx: CallContext) -> JSON:
    if res.source == "text":
        assert res.text is not None
        return {"contents": [{"uri": uri, "mimeType": res.mime_type or "text/plain", "text": res.text.source}]}
    if res.source == "file":
        assert res.file is not None
        return {"contents": [file_contents(uri, res.file.source, res.mime_type)]}
    assert res.command is not None
    return await _read_command(runner, config, res, res.command, {}, {}, uri, ctx)


async def _read_template(runner: Runner, config: ToolsFile, res: Resource, uri: str, raw: dict[str, str],
                         ctx: CallContext) -> JSON:
    values: JSON = {}
    problems: list[str] = []
    for name, param in res.params.items():
        text = unquote(raw.get(name, ""))
        try:
            values[name] = _coerce_template_value(param, text, config.base_dir)
        except ValueError as exc:
            problems.append(f"{name}: {exc}")
    if problems:
        raise RPCError(INVALID_PARAMS, f"Invalid resource URI {uri}: " + "; ".join(problems), {"uri": uri})
    if res.source == "text":
        assert res.text is not None
        text = render_text(res.text.source, values)
        return {"contents": [{"uri": uri, "mimeType": res.mime_type or "text/plain", "text": text}]}
    if res.source == "file":
        return _read_template_file(res, uri, values)
    assert res.command is not None
    return await _read_command(runner, config, res, res.command, res.params, values, uri, ctx)


def _read_template_file(res: Resource, uri: str, values: JSON) -> JSON:
    assert res.file is not None
    assert res.file_root is not None
    rendered = res.file.render(values)
    if rendered is None:
        raise ResourceNotFound(uri)
    real = os.path.realpath(rendered)
    root = res.file_root.rstrip("/") + "/"
    if not real.startswith(root):
        raise RPCError(INVALID_PARAMS, f"Invalid resource URI {uri}: outside the template's directory",
                       {"uri": uri})
    if not os.path.isfile(real):
        raise ResourceNotFound(uri)
    return {"contents": [file_contents(uri, real, res.mime_type)]}


async def _read_command(runner: Runner, config: ToolsFile, res: Resource, spec: RunSpec, params: dict[str, Param],
                        values: JSON, uri: str, ctx: CallContext) -> JSON:
    mask = Masker(config.secret_values())
    async with AsyncExitStack() as stack:
        if not await runner.acquire(stack, config, f"resource:{res.uri or res.uri_template}", spec.concurrency):
            raise RPCError(INTERNAL_ERROR, "server busy: too many calls running; try again")
        try:
            run = await runner.spawn(config, spec, params, values, ctx, mask, stack, tool_name=res.name,
                                     output_dir=None, max_bytes=MAX_RESOURCE_BYTES,
                                     extra_env={"MCP_RESOURCE_URI": uri})
        except (SpawnError, ArgumentProblems) as exc:
            raise RPCError(INTERNAL_ERROR, f"Cannot read {uri}: {mask(str(exc))}", {"uri": uri}) from None
    if run.timed_out or run.signal is not None or run.returncode not in spec.ok_exit_codes:
        why = (f"timed out after {spec.timeout:g}s" if run.timed_out else
               f"terminated by {signal_name(run.signal)}" if run.signal is not None else
               f"exit code {run.returncode}")
        detail = mask(run.stderr.decode("utf-8", "replace").strip()[-500:])
        raise RPCError(INTERNAL_ERROR, f"Cannot read {uri}: the command failed ({why})"
                       + (f": {detail}" if detail else ""), {"uri": uri})
    mime = res.mime_type or "text/plain"
    return {"contents": [bytes_contents(uri, run.stdout, mime, mask)]}


def _coerce_template_value(param: Param, text: str, base_dir: str) -> Any:
    """A URI template variable is text; check it against the param's declared type and schema."""
    from mcpcli.validation import compile_schema, errors

    if "\x00" in text:
        raise ValueError("contains a NUL byte")
    value: Any = text
    if param.type == "integer":
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
    elif param.type == "number":
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
    problems = errors(compile_schema(param.schema), value)
    if problems:
        raise ValueError(problems[0][1])
    if param.type == "path":
        from mcpcli.toolsfile.arguments import resolve_path

        value = resolve_path(param, text, base_dir)
    return value


# -- directory resources -------------------------------------------------------------------


def _directory_files(res: Resource) -> list[str]:
    assert res.directory is not None
    root = os.path.realpath(res.directory)
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if not (fnmatchcase(rel, res.glob) or fnmatchcase(name, res.glob)):
                continue
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            found.append(rel)
            if len(found) >= MAX_DIRECTORY_FILES:
                return found
    return found


def _directory_listing(res: Resource) -> list[JSON]:
    out = []
    for rel in _directory_files(res):
        entry: JSON = {"uri": (res.uri or "") + quote(rel), "name": rel}
        mime = res.mime_type or mimetypes.guess_type(rel)[0]
        if mime:
            entry["mimeType"] = mime
        if res.description:
            entry["description"] = res.description
        out.append(entry)
    return out


def _read_directory_file(res: Resource, uri: str) -> JSON:
    assert res.directory is not None
    assert res.uri is not None
    rel = unquote(uri[len(res.uri):])
    root = os.path.realpath(res.directory)
    full = os.path.realpath(os.path.join(root, rel))
    if not full.startswith(root.rstrip("/") + "/") or not os.path.isfile(full):
        raise ResourceNotFound(uri)
    relative = os.path.relpath(full, root)
    if any(part.startswith(".") for part in relative.split(os.sep)):
        raise ResourceNotFound(uri)
    if not (fnmatchcase(relative, res.glob) or fnmatchcase(os.path.basename(relative), res.glob)):
        raise ResourceNotFound(uri)
    return {"contents": [file_contents(uri, full, res.mime_type)]}
