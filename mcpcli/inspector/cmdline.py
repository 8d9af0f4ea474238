"""The `mcp` command line equivalent to what the inspector just did.

Every call the inspector makes is shown as the command that makes the same call
from a shell, so what was clicked can be scripted. Arguments are written in the
`--arg` grammar (`mcpcli.args`) and each item is checked by parsing it back with
that grammar and the same schema: an item that would not give the same value is
written as raw JSON (`key:=...`), and arguments no item list can express become
one `--args JSON`. Words are quoted for a POSIX shell (`shlex`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcpcli.args import build_arguments
from mcpcli.errors import McpCliError

__all__ = ["Invocation", "arg_items", "argument_words"]

JSON = dict[str, Any]


@dataclass(frozen=True)
class Invocation:
    """How the inspected server is reached from a shell: the words every command shares.

    `target` is TARGET as typed (a name, URL, tools.yaml, `@NAME`), or None when the
    server command follows `--`; `flags` are the connection flags worth repeating
    (never those that may hold secrets: the caller leaves them out).
    """

    prog: str = "mcp"
    target: str | None = None
    server_command: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()

    def line(self, command: Sequence[str], operands: Sequence[str] = (), options: Sequence[str] = ()) -> str:
        """`PROG COMMAND [TARGET] OPERANDS OPTIONS FLAGS [-- SERVER COMMAND]`, quoted."""
        words = [self.prog, *command]
        if self.target is not None:
            words.append(self.target)
        words += [*operands, *options, *self.flags]
        if self.server_command:
            words += ["--", *self.server_command]
        return shlex.join(words)

    def tool_call(self, name: str, arguments: Mapping[str, Any], schema: Any = None,
                  extra: Sequence[str] = ()) -> str:
        """`tools call TARGET TOOL --arg ...`; `extra`: more of its options (`--task`)."""
        return self.line(("tools", "call"), (name,), [*argument_words(arguments, schema), *extra])

    def prompt_get(self, name: str, arguments: Mapping[str, str], prompt: JSON | None = None) -> str:
        from mcpcli.args import prompt_schema

        schema = prompt_schema(prompt) if prompt is not None else None
        return self.line(("prompts", "get"), (name,), argument_words(arguments, schema))

    def resource_read(self, uri: str) -> str:
        return self.line(("resources", "read"), (uri,))

    def subscribe(self, uri: str) -> str:
        return self.line(("resources", "subscribe"), (uri,))

    def complete(self, ref: JSON, argument: str, partial: str, context: Mapping[str, str] | None = None) -> str:
        if ref.get("type") == "ref/prompt":
            options = ["--prompt", str(ref.get("name", ""))]
        else:
            options = ["--resource", str(ref.get("uri", ""))]
        for key, value in (context or {}).items():
            options += ["--context", f"{key}={value}"]
        return self.line(("complete",), (argument, partial), options)

    def task(self, verb: str, task_id: str) -> str:
        """`tasks get|result|cancel TARGET ID`."""
        return self.line(("tasks", verb), (task_id,))

    def plain(self, *command: str) -> str:
        """A command with nothing of its own: `info`, `tools list`, `tasks list`..."""
        return self.line(command)


def argument_words(arguments: Mapping[str, Any], schema: Any = None) -> list[str]:
    """`--arg` items for `arguments` (typed back by `schema`), else one `--args JSON`."""
    if not arguments:
        return []
    items = arg_items(arguments, schema)
    if items is None:
        return ["--args", _json(dict(arguments))]
    words: list[str] = []
    for item in items:
        words += ["--arg", item]
    return words


def arg_items(arguments: Mapping[str, Any], schema: Any = None) -> list[str] | None:
    """`key=value` items (`key:=json` where text would not type back to the value) that
    `build_arguments` turns into exactly `arguments`; None when a key cannot be written."""
    items: list[str] = []
    for key, value in arguments.items():
        written = _key(key)
        if written is None:
            return None
        items.append(_item(written, key, value, schema))
    if not _same(_build(items, schema), dict(arguments)):
        return None
    return items


def _key(key: str) -> str | None:
    """`key` in the `--arg` grammar: a dot escaped as `\\.`; None when no spelling parses
    back (an `=`, a trailing `:`, a backslash before a dot, an empty name)."""
    if not key or "=" in key or key.endswith(":") or "\\." in key or key.endswith("\\"):
        return None
    return key.replace(".", "\\.")


def _item(written: str, key: str, value: Any, schema: Any) -> str:
    """`key=text` when the grammar types `text` back to `value`, else `key:=JSON`."""
    text = _text(value)
    if text is not None:
        item = f"{written}={text}"
        built = _build([item], schema)
        if built is not None and key in built and _same(built[key], value):
            return item
    return f"{written}:={_json(value)}"


def _text(value: Any) -> str | None:
    """The plain text a value would be typed as: strings as they are (a leading `@`
    escaped), scalars as JSON; None for what only `:=` can say."""
    if isinstance(value, str):
        if value.startswith("\\@"):
            return None
        return "\\" + value if value.startswith("@") else value
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    return None


def _build(items: list[str], schema: Any) -> JSON | None:
    """What `mcp tools call` makes of `items` (never reading a file or stdin: no item we
    write starts a value with `@`)."""
    try:
        return build_arguments(items, schema=schema if isinstance(schema, dict) else None,
                               stdin=_no_stdin)
    except McpCliError:
        return None


def _no_stdin() -> str:
    raise AssertionError("an inspector command line never reads stdin")  # pragma: no cover


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, types included (1 is not 1.0, true is not 1)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
