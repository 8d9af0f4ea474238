"""`prompts/get` for a tools.yaml prompt: fixed messages, or a command that writes them.

Arguments are strings, checked against the prompt's declared arguments (known
names, no NUL, enum, length, pattern; defaults filled in) before anything is
rendered or run; a problem is -32602. Messages render their text, attach files
(as text, image or audio by MIME type) and embed resources read from the same
snapshot. A command prompt's stdout is the user message (`output: text`) or a
whole GetPromptResult (`output: mcp`); its failure is -32603.
"""

from __future__ import annotations

import base64
import mimetypes
from contextlib import AsyncExitStack
from typing import Any

from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS
from mcpcli.errors import RPCError
from mcpcli.server.backend import CallContext, InputDeclined, ResourceNotFound
from mcpcli.toolsfile.arguments import ArgumentProblems
from mcpcli.toolsfile.contents import file_contents, read_file_bytes, render
from mcpcli.toolsfile.model import JSON, MISSING, Param, Prompt, ToolsFile
from mcpcli.toolsfile.process import SpawnError, signal_name
from mcpcli.toolsfile.resources import read_resource
from mcpcli.toolsfile.results import Masker
from mcpcli.toolsfile.runner import Runner
from mcpcli.toolsfile.tool_calls import missing_capabilities

__all__ = ["get_prompt"]


async def get_prompt(runner: Runner, config: ToolsFile, name: str, arguments: dict[str, str],
                     ctx: CallContext) -> JSON:
    """The GetPromptResult of prompt `name` in this snapshot of the file."""
    prompt = config.prompts.get(name)
    if prompt is None:
        raise RPCError(INVALID_PARAMS, f"Unknown prompt: {name}", {"name": name})
    missing = missing_capabilities(prompt.requires, ctx)
    if missing:
        raise InputDeclined(f"prompt {name} needs {', '.join(missing)}", capabilities=missing)
    values = _check_prompt_arguments(prompt, arguments or {})
    mask = Masker(config.secret_values())
    if prompt.run is not None:
        return await _run_prompt(runner, config, prompt, values, ctx, mask)
    messages: list[JSON] = []
    for message in prompt.messages:
        content = await _message_content(runner, config, message, values, ctx)
        messages.append({"role": message.role, "content": content})
    result: JSON = {"messages": messages}
    if prompt.description:
        result["description"] = prompt.description
    return result


async def _message_content(runner: Runner, config: ToolsFile, message: Any, values: JSON, ctx: CallContext) -> JSON:
    kind = message.kind
    if kind == "text":
        return {"type": "text", "text": render(message.text, values)}
    if kind in ("file", "image", "audio"):
        return _file_message(message, kind)
    if kind == "resource_uri":
        uri = render(message.uri, values)
        result = await read_resource(runner, config, uri, ctx)
        contents = result.get("contents") or []
        if not contents:
            raise ResourceNotFound(uri)
        return {"type": "resource", "resource": contents[0]}
    uri = render(message.uri, values)
    if message.text is not None:
        return {"type": "resource", "resource": {"uri": uri, "mimeType": message.mime_type or "text/plain",
                                                 "text": render(message.text, values)}}
    return {"type": "resource", "resource": file_contents(uri, message.path, message.mime_type)}


def _file_message(message: Any, kind: str) -> JSON:
    """A file attached to a message: an image, audio, or its text."""
    data = read_file_bytes(message.path)
    mime = message.mime_type or mimetypes.guess_type(message.path)[0] or (
        "text/plain" if kind == "file" else "application/octet-stream")
    if kind == "image" or (kind == "file" and mime.startswith("image/")):
        return {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime}
    if kind == "audio" or (kind == "file" and mime.startswith("audio/")):
        return {"type": "audio", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime}
    return {"type": "text", "text": data.decode("utf-8", "replace")}


async def _run_prompt(runner: Runner, config: ToolsFile, prompt: Prompt, values: JSON, ctx: CallContext,
                      mask: Masker) -> JSON:
    assert prompt.run is not None
    params = {n: Param(n, "string", a.required, a.default if a.default is not None else MISSING,
                       {"type": "string"}) for n, a in prompt.arguments.items()}
    async with AsyncExitStack() as stack:
        if not await runner.acquire(stack, config, f"prompt:{prompt.name}", prompt.run.concurrency):
            raise RPCError(INTERNAL_ERROR, "server busy: too many calls running; try again")
        try:
            run = await runner.spawn(config, prompt.run, params, values, ctx, mask, stack,
                                     tool_name=prompt.name, output_dir=None, max_bytes=prompt.max_bytes)
        except (SpawnError, ArgumentProblems) as exc:
            raise RPCError(INTERNAL_ERROR, f"Prompt {prompt.name}: {mask(str(exc))}") from None
    if run.timed_out or run.signal is not None or run.returncode not in prompt.run.ok_exit_codes:
        why = ("timed out" if run.timed_out else f"terminated by {signal_name(run.signal)}"
               if run.signal is not None else f"exit code {run.returncode}")
        detail = mask(run.stderr.decode("utf-8", "replace").strip()[-500:])
        raise RPCError(INTERNAL_ERROR, f"Prompt {prompt.name}: the command failed ({why})"
                       + (f": {detail}" if detail else ""))
    return _prompt_output(prompt, mask(run.stdout.decode("utf-8", "replace")))


def _prompt_output(prompt: Prompt, text: str) -> JSON:
    """A command prompt's stdout as a GetPromptResult."""
    if prompt.output_format == "mcp":
        try:
            value = jsonrpc.loads(text)
        except ValueError as exc:
            raise RPCError(INTERNAL_ERROR, f"Prompt {prompt.name}: the command's output is not JSON: {exc}") from None
        if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
            raise RPCError(INTERNAL_ERROR, f"Prompt {prompt.name}: expected a JSON object with messages")
        return {k: v for k, v in value.items() if k in ("messages", "description", "_meta")}
    result: JSON = {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
    if prompt.description:
        result["description"] = prompt.description
    return result


def _check_prompt_arguments(prompt: Prompt, arguments: dict[str, Any]) -> JSON:
    problems = []
    values: JSON = {}
    for name, value in arguments.items():
        if name not in prompt.arguments:
            problems.append(f"unknown argument {name!r}")
            continue
        if not isinstance(value, str):
            problems.append(f"{name}: must be a string")
            continue
        if "\x00" in value:
            problems.append(f"{name}: contains a NUL byte")
            continue
        values[name] = value
    for name, arg in prompt.arguments.items():
        if name not in values:
            if arg.default is not None:
                values[name] = arg.default
            elif arg.required:
                problems.append(f"missing required argument {name!r}")
            continue
        value = values[name]
        if arg.enum is not None and value not in arg.enum:
            problems.append(f"{name}: {value!r} is not one of {', '.join(arg.enum)}")
        if arg.max_length is not None and len(value) > arg.max_length:
            problems.append(f"{name}: longer than {arg.max_length} characters")
        if arg.pattern is not None and not arg.pattern.fullmatch(value):
            problems.append(f"{name}: {value[:40]!r} does not match {arg.pattern.pattern}")
    if problems:
        raise RPCError(INVALID_PARAMS, f"Invalid arguments for prompt {prompt.name}: " + "; ".join(problems))
    return values
