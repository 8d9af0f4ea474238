"""Build a `Prompt` from one entry of `prompts:`.

A prompt declares string `arguments:` (required unless they have a default,
optionally with an enum, a pattern, a maximum length and completions) and
either fixed `messages:` (text, a file, an image, audio, or a resource by URI
or inline) whose templates name those arguments, or a `run:` command that
prints the messages.
"""

from __future__ import annotations

import os
import re

from mcpcli.toolsfile.build_context import PARAM_NAME, BuildContext
from mcpcli.toolsfile.build_params import build_complete
from mcpcli.toolsfile.build_run import build_run
from mcpcli.toolsfile.model import (
    DEFAULT_MAX_BYTES,
    JSON,
    MISSING,
    Message,
    Param,
    Prompt,
    PromptArg,
)
from mcpcli.toolsfile.yamlstrict import Path

__all__ = ["build_prompt"]


def build_prompt(ctx: BuildContext, item: JSON, path: Path) -> Prompt | None:
    name = item["name"]
    args = _arguments(ctx, item, path)
    if len(args) != len(item.get("arguments") or {}):
        return None
    has_messages, has_run = "messages" in item, "run" in item
    if has_messages == has_run:
        ctx.fail(path, "give exactly one of messages: or run:")
        return None
    known = set(args)
    messages: list[Message] = []
    run = None
    fmt = (item.get("output") or {}).get("format", "text")
    max_bytes = ctx.size(item.get("output") or {}, "max_bytes", (*path, "output"), DEFAULT_MAX_BYTES)
    if has_run:
        # The arguments, as string parameters, for the command's placeholders.
        fake_params = {
            n: Param(n, "string", a.required, a.default if a.default is not None else MISSING, {"type": "string"})
            for n, a in args.items()
        }
        run = build_run(ctx, item["run"], (*path, "run"), fake_params, where=f"prompt {name!r}")
        if run is None:
            return None
    for i, msg in enumerate(item.get("messages") or []):
        message = _message(ctx, msg, (*path, "messages", i), known)
        if message is None:
            return None
        messages.append(message)
    return Prompt(
        name=name, arguments=args, messages=tuple(messages), run=run, output_format=fmt,
        max_bytes=max_bytes, title=item.get("title"), description=item.get("description"),
        icons=item.get("icons"), requires=tuple(item.get("requires", ())),
    )


def _arguments(ctx: BuildContext, item: JSON, path: Path) -> dict[str, PromptArg]:
    """The valid `arguments:` (a wrong one is reported and left out)."""
    args: dict[str, PromptArg] = {}
    for arg_name, spec in (item.get("arguments") or {}).items():
        apath = (*path, "arguments", arg_name)
        if not PARAM_NAME.match(arg_name):
            ctx.fail(apath, f"argument name {arg_name!r} must be letters, digits and _", key=True)
            continue
        spec = spec or {}
        pattern = None
        if "pattern" in spec:
            try:
                pattern = re.compile(f"(?:{spec['pattern']})")
            except re.error as exc:
                ctx.fail((*apath, "pattern"), f"invalid regular expression: {exc}")
                continue
        required = spec.get("required", "default" not in spec)
        complete = build_complete(ctx, spec["complete"], (*apath, "complete")) if "complete" in spec else None
        args[arg_name] = PromptArg(
            name=arg_name, description=spec.get("description"), title=spec.get("title"),
            required=bool(required), default=spec.get("default"),
            enum=tuple(spec["enum"]) if "enum" in spec else None, pattern=pattern,
            max_length=spec.get("maxLength"), complete=complete,
        )
    return args


def _message(ctx: BuildContext, msg: JSON, path: Path, known: set[str]) -> Message | None:
    role = msg.get("role", "user")
    kinds = [k for k in ("text", "file", "image", "audio", "resource") if k in msg]
    if len(kinds) != 1:
        ctx.fail(path, "give exactly one of text, file, image, audio or resource")
        return None
    kind = kinds[0]
    if kind == "text":
        tpl = ctx.template(msg["text"], (*path, "text"), known)
        if tpl is None:
            return None
        return Message(role, "text", text=tpl)
    if kind in ("file", "image", "audio"):
        full = ctx.resolve_dir(msg[kind])
        if not os.path.isfile(full):
            ctx.warn((*path, kind), f"file {full} does not exist")
        return Message(role, kind, path=full, mime_type=msg.get("mime_type"))
    res = msg["resource"]
    if isinstance(res, str):
        uri = ctx.template(res, (*path, "resource"), known)
        if uri is None:
            return None
        return Message(role, "resource_uri", uri=uri)
    return _inline_resource(ctx, msg, res, path, known)


def _inline_resource(ctx: BuildContext, msg: JSON, res: JSON, path: Path, known: set[str]) -> Message | None:
    """`resource: {uri, text | file, mime_type}`: an embedded resource."""
    uri = ctx.template(res["uri"], (*path, "resource", "uri"), known)
    if uri is None:
        return None
    if ("text" in res) == ("file" in res):
        ctx.fail((*path, "resource"), "an inline resource needs exactly one of text or file")
        return None
    text = None
    fpath = None
    if "text" in res:
        text = ctx.template(res["text"], (*path, "resource", "text"), known)
        if text is None:
            return None
    else:
        fpath = ctx.resolve_dir(res["file"])
    return Message(msg.get("role", "user"), "resource_inline", text=text, path=fpath, uri=uri,
                   mime_type=res.get("mime_type") or msg.get("mime_type"))
