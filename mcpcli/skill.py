"""Agent Skills for MCP servers (`mcp skill`): a SKILL.md that teaches an agent to use one
server through `mcp` instead of loading every tool schema into its context.

The skill is a few hundred tokens: front matter (`name`, `description`, as the Agent
Skills format wants them), one compact line per tool (a signature with types,
optional marks and defaults, from the input schema), a worked `mcp tools call` line per
tool, how to read results, exit codes and, for an HTTP server, how to sign in. The
output depends only on what the server lists (tools sorted by name): the same server
gives the same file.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcpcli.args import required_names, type_label
from mcpcli.text import printable

__all__ = ["Skill", "build_skill", "example_value", "select_tools", "skill_name", "tool_line"]

JSON = dict[str, Any]

#: The Agent Skills format's bounds on `name` and `description`.
MAX_NAME = 64
MAX_DESCRIPTION = 1024
#: A tool's description is cut to its first line, at most this long.
MAX_SUMMARY = 160


@dataclass
class Skill:
    name: str
    description: str
    markdown: str


def skill_name(base: str) -> str:
    """`base` as a skill name: lowercase letters, digits and single hyphens, at most 64."""
    slug = re.sub(r"[^a-z0-9]+", "-", base.lower()).strip("-")
    slug = slug[:MAX_NAME].rstrip("-")
    return slug or "mcp-server"


def _text(value: Any) -> str:
    """Server text on one line, without control or invisible characters."""
    return " ".join(printable(str(value)).split())


def _summary(description: Any) -> str:
    lines = [line.strip() for line in str(description or "").strip().splitlines() if line.strip()]
    if not lines:
        return ""
    text = _text(lines[0])
    if len(text) > MAX_SUMMARY:
        text = text[: MAX_SUMMARY - 1].rstrip() + "…"
    return text


def _props(tool: JSON) -> tuple[JSON, set[str]]:
    schema = tool.get("inputSchema")
    schema = schema if isinstance(schema, dict) else {}
    props = schema.get("properties")
    return (props if isinstance(props, dict) else {}), required_names(schema)


def tool_line(tool: JSON) -> str:
    """`name(a: number, b?: string = "x") → structured`: the call's shape on one line."""
    props, required = _props(tool)
    params = []
    for key, prop in props.items():
        param = f"{key}{'' if key in required else '?'}: {type_label(prop)}"
        if isinstance(prop, dict) and "default" in prop:
            param += f" = {json.dumps(prop['default'], ensure_ascii=False)}"
        params.append(_text(param))
    line = f"{_text(tool.get('name', '?'))}({', '.join(params)})"
    if isinstance(tool.get("outputSchema"), dict):
        line += " → structuredContent"
    return line


_FORMAT_EXAMPLES = {"uri": "https://example.com", "url": "https://example.com", "email": "user@example.com",
                    "date": "2025-01-31", "date-time": "2025-01-31T12:00:00Z", "uuid":
                    "00000000-0000-0000-0000-000000000000"}


def example_value(prop: Any) -> Any:
    """A value for a worked example: the default, an example, the first enum value,
    else a placeholder of the right type."""
    if not isinstance(prop, dict):
        return "text"
    if "default" in prop:
        return prop["default"]
    for key in ("examples", "enum"):
        values = prop.get(key)
        if isinstance(values, list) and values:
            return values[0]
    if "const" in prop:
        return prop["const"]
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "string":
        return _FORMAT_EXAMPLES.get(str(prop.get("format")), "text")
    if kind in ("integer", "number"):
        low = prop.get("minimum")
        return low if isinstance(low, (int, float)) and not isinstance(low, bool) else 1
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list) and prop[key]:
            return example_value(prop[key][0])
    return "text"


def _arg(key: str, value: Any) -> str:
    """`--arg key=value` (typed by the schema), or `key:=JSON` for arrays, objects and null."""
    if isinstance(value, (dict, list)) or value is None:
        item = f"{key}:={json.dumps(value, ensure_ascii=False, separators=(',', ':'))}"
    elif isinstance(value, bool):
        item = f"{key}={'true' if value else 'false'}"
    elif isinstance(value, str):
        item = f"{key}={value}" if not value.startswith("@") else f"{key}=\\{value}"
    else:
        item = f"{key}={json.dumps(value)}"
    return "--arg " + shlex.quote(item)


def example_call(prog: str, ref: str, tool: JSON, server_command: Sequence[str] = ()) -> str:
    """A runnable `mcp tools call` line with every required argument."""
    props, required = _props(tool)
    words = [prog, "tools", "call"]
    if not server_command:
        words.append(shlex.quote(ref))
    words.append(shlex.quote(str(tool.get("name", ""))))
    words.extend(_arg(key, example_value(props[key])) for key in props if key in required)
    words.extend(f"--arg {shlex.quote(key + '=text')}" for key in sorted(required - set(props)))
    if server_command:
        words.append("-- " + shlex.join(server_command))
    # A name or value with control characters cannot be typed anyway: shown escaped, never raw.
    return printable(" ".join(words), keep_newlines=False)


def _with_flags(call: str, flags: str) -> str:
    """`call` with `flags` added before its `-- COMMAND` (if any)."""
    head, sep, command = call.partition(" -- ")
    return f"{head} {flags}{sep}{command}"


def select_tools(tools: Sequence[Any], patterns: Sequence[str]) -> list[JSON]:
    """The tools whose names match any glob (all without globs), sorted by name."""
    from fnmatch import fnmatchcase

    chosen = [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)
              and (not patterns or any(fnmatchcase(t["name"], p) for p in patterns))]
    return sorted(chosen, key=lambda t: str(t["name"]))


def _description(label: str, tools: Sequence[JSON]) -> str:
    names = ", ".join(_text(t["name"]) for t in tools)
    text = (f"Call the tools of the MCP server {label} from the shell with the `mcp` command line "
            f"({len(tools)} tool{'s' if len(tools) != 1 else ''}: {names}). Use when a task needs "
            f"what these tools do, or mentions {label}.")
    if len(text) > MAX_DESCRIPTION:
        text = text[: MAX_DESCRIPTION - 1].rsplit(" ", 1)[0] + "…"
    return text


def build_skill(
    *,
    name: str,
    ref: str,
    server_info: JSON,
    tools: Sequence[JSON],
    instructions: str | None = None,
    signs_in: bool = False,
    prog: str = "mcp",
    server_command: Sequence[str] = (),
) -> Skill:
    """The SKILL.md for the server `ref` (what a user types as TARGET) and its `tools`."""
    title = _text(server_info.get("title") or server_info.get("name") or ref)
    label = f"{_text(ref)!r}" if title == ref else f"{_text(ref)!r} ({title})"
    description = _description(label, tools)
    target = "" if server_command else printable(f" {shlex.quote(ref)}", keep_newlines=False)
    after = printable(f" -- {shlex.join(server_command)}", keep_newlines=False) if server_command else ""
    first = tools[0] if tools else None
    out: list[str] = [
        "---",
        f"name: {name}",
        f"description: {json.dumps(description, ensure_ascii=False)}",
        "---",
        "",
        f"# {title} through `{prog}`",
        "",
        f"Call this server's tools from the shell: `{prog} tools call{target} TOOL --arg KEY=VALUE ...{after}`.",
        "Values are typed by the tool's schema (`--arg n=3` sends a number, a string field keeps its",
        "text); `--arg key:=JSON` sends raw JSON, `--arg key=@file` a file's contents.",
        f"`{prog} tools show{target} TOOL{after}` prints a tool's full description and schema.",
        "",
        "## Tools",
        "",
        "`?` marks an optional parameter, `= value` its default; `→ structuredContent`: the result",
        "carries structured content.",
        "",
    ]
    for tool in tools:
        summary = _summary(tool.get("description"))
        out.append(f"- `{tool_line(tool)}`" + (f" {summary}" if summary else ""))
        out.append(f"  `{example_call(prog, ref, tool, server_command)}`")
    if not tools:
        out.append("(no tools)")
    out += [
        "",
        "## Results",
        "",
        "Off a terminal the result is the tool's JSON result (`content` blocks, `structuredContent`).",
        "Pick what you need with `--jq FILTER` (`-r` prints strings raw):",
        "",
        "```sh",
    ]
    structured = next((t for t in tools if isinstance(t.get("outputSchema"), dict)), None)
    examples: list[tuple[JSON | None, str]] = [
        (first, "'.content[] | select(.type==\"text\") | .text' -r"), (structured, ".structuredContent")]
    for example, jq in examples:
        if example is not None:
            out.append(_with_flags(example_call(prog, ref, example, server_command), f"--jq {jq}"))
    out += [
        "```",
        "",
        "Long results: `--spill DIR` writes any result over 20000 characters to a file in DIR and",
        "prints `{\"spilled\": PATH, \"bytes\": N, \"type\": ...}` instead; read the file as needed.",
        "`--save-dir DIR` saves images, audio and blobs to files.",
        "",
        "## Exit codes",
        "",
        "0 ok · 1 the tool reported an error (its result still printed) · 2 bad arguments or usage",
        "(nothing sent; the message names the field) · 3 sign-in needed or refused · 4 the server",
        "could not be reached or failed · 5 the server answered with a JSON-RPC error · 124 timed out",
        "(`--timeout SECONDS`). Errors are one line on stderr; with `--json` or `--jq`, one JSON object.",
    ]
    if signs_in:
        out += [
            "",
            "## Signing in",
            "",
            f"This server may ask for an OAuth sign-in. A person signs in once with `{prog} auth login{target}`",
            f"(a browser opens); `{prog} auth status{target}` shows it. In scripts add `--stored-auth-only`",
            "so a missing sign-in fails with exit 3 instead of opening a browser.",
        ]
    if instructions and instructions.strip():
        out += ["", "## The server's instructions", ""]
        out += [f"> {printable(line, keep_newlines=False)}".rstrip() for line in instructions.strip().splitlines()]
    return Skill(name=name, description=description, markdown="\n".join(out) + "\n")
