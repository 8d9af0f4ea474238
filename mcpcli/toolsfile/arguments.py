"""From a call's arguments to a process: validation, path containment, argv, environment, stdin.

Arguments are untrusted. They are validated against the published (closed)
schema, NUL bytes are refused, `path` values are resolved with realpath and must
stay inside their declared roots (symlinks and `..` included), and a value that
would start an argv element with `-` before any `--` is refused (option
injection). Values then reach the process only as whole argv elements, as
`MCP_ARG_<NAME>` variables, or on stdin: never through a shell's parser.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcpcli.toolsfile import templating
from mcpcli.toolsfile.model import Each, Lit, Param, RunSpec, SecretRef, Splat, When

__all__ = ["ArgumentProblems", "Prepared", "build_command", "check_arguments"]

JSON = dict[str, Any]
MAX_PROBLEMS = 20
#: Longer values are not exported as MCP_ARG_* when the tool reads its arguments on stdin.
ENV_VALUE_LIMIT = 64 * 1024


class ArgumentProblems(Exception):
    """Arguments that cannot be used; each line names the parameter."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems[:MAX_PROBLEMS]

    def text(self) -> str:
        lines = ["Invalid arguments:"] + [f"- {p}" for p in self.problems]
        return "\n".join(lines)


def _find_nul(value: Any, path: str) -> str | None:
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _find_nul(item, f"{path}[{i}]")
            if found:
                return found
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and "\x00" in key:
                return f"{path}.{key!r}"
            found = _find_nul(item, f"{path}.{key}")
            if found:
                return found
    return None


def check_arguments(params: dict[str, Param], schema: JSON, validator: Callable[[], Any], arguments: Any, *,
                    cwd: str, passthrough: bool = False) -> JSON:
    """The validated values (defaults applied, paths resolved); raise ArgumentProblems.

    `schema` is the tool's inputSchema; `validator()` gives its compiled validator, asked
    for only when the schema's everyday keywords do not plainly accept the arguments
    (jsonschema costs a served call more than the rest of its dispatch)."""
    from mcpcli.validation import errors as schema_errors
    from mcpcli.validation import plainly_valid

    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ArgumentProblems(["arguments must be a JSON object"])
    cleaned = {
        k: v for k, v in arguments.items() if not (v is None and k in params and not params[k].required)
    }
    problems: list[str] = []
    for key, value in cleaned.items():
        nul = _find_nul(value, key)
        if nul:
            problems.append(f"{nul}: contains a NUL byte")
        param = params.get(key)
        if param is not None and param.type == "integer" and isinstance(value, float):
            problems.append(f"{key}: {value!r} is not an integer")
    if problems:
        raise ArgumentProblems(problems)
    trivially_valid = not cleaned and not params and not passthrough
    if not trivially_valid and plainly_valid(schema, cleaned) is not True and not validator().is_valid(cleaned):
        for path, message in schema_errors(validator(), cleaned):
            problems.append(f"{path}: {message}" if path else message)
            if len(problems) >= MAX_PROBLEMS:
                break
    if problems:
        raise ArgumentProblems(problems)
    if passthrough:  # an author-written inputSchema: the validated object as is
        return dict(cleaned)
    values: JSON = {}
    for name, param in params.items():
        if name in cleaned:
            values[name] = cleaned[name]
        elif param.has_default:
            values[name] = copy.deepcopy(param.default)
    for name, param in params.items():
        if name not in values:
            continue
        try:
            if param.type == "path":
                values[name] = resolve_path(param, values[name], cwd)
            elif param.type == "array" and param.item is not None and param.item.type == "path":
                values[name] = [resolve_path(param.item, v, cwd, label=f"{name}[{i}]")
                                for i, v in enumerate(values[name])]
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ArgumentProblems(problems)
    return values


def resolve_path(param: Param, value: str, cwd: str, *, label: str | None = None) -> str:
    """The real absolute path of `value`, which must stay inside the param's roots."""
    label = label or param.name
    candidate = os.path.join(cwd, os.path.expanduser(value) if value.startswith("~/") else value)
    resolved = os.path.realpath(candidate)
    roots = param.within or (os.path.realpath(cwd),)
    if not any(resolved == root or resolved.startswith(root.rstrip("/") + "/") for root in roots):
        shown = " or ".join(roots)
        raise ValueError(f"{label}: {value!r} is outside the allowed directory {shown}")
    exists = os.path.exists(resolved)
    if param.must_exist and not exists:
        raise ValueError(f"{label}: {value!r} does not exist")
    if exists and param.kind == "file" and not os.path.isfile(resolved):
        raise ValueError(f"{label}: {value!r} is not a file")
    if exists and param.kind == "dir" and not os.path.isdir(resolved):
        raise ValueError(f"{label}: {value!r} is not a directory")
    return resolved


@dataclass
class Prepared:
    argv: list[str]
    env: dict[str, str]
    stdin: bytes | None


def _present(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, list) and not value:
        return False
    return True


def _expand(items: tuple[Any, ...], values: Mapping[str, Any], params: dict[str, Param],
            out: list[str], state: dict[str, bool], item_param: Param | None) -> None:
    for entry in items:
        if isinstance(entry, Lit):
            tpl = entry.template
            text = tpl.render(values)
            if text is None:
                continue  # references an absent value: the element is dropped
            if tpl.is_literal and text == "--":
                state["after_dashdash"] = True
            elif (
                tpl.starts_with_placeholder
                and text.startswith("-")
                and not state["after_dashdash"]
            ):
                name = tpl.parts[0].name or ""
                param = item_param if name == "item" else params.get(name)
                if param is not None and not param.allow_leading_dash and param.type != "path":
                    label = f"{name} item" if name == "item" else name
                    raise ArgumentProblems([
                        f"{label}: {text[:40]!r} starts with '-' and would be read as an option "
                        "(the tool must put '--' before it or set allow_leading_dash)"
                    ])
            out.append(text)
        elif isinstance(entry, Splat):
            items_value = values.get(entry.name) or []
            param = params.get(entry.name)
            for value in items_value:
                text = templating.stringify(value)
                if text.startswith("-") and not state["after_dashdash"] and param is not None:
                    item = param.item
                    if item is not None and not item.allow_leading_dash and item.type != "path":
                        raise ArgumentProblems([
                            f"{entry.name} item: {text[:40]!r} starts with '-' and would be read as an option"
                        ])
                out.append(text)
        elif isinstance(entry, When):
            if _present(values.get(entry.name)):
                _expand(entry.items, values, params, out, state, item_param)
        elif isinstance(entry, Each):
            param = params[entry.name]
            for value in values.get(entry.name) or []:
                scoped = dict(values)
                scoped["item"] = value
                _expand(entry.items, scoped, params, out, state, param.item)


def build_command(
    spec: RunSpec,
    params: dict[str, Param],
    values: JSON,
    *,
    builtins: Mapping[str, str],
    secrets: Mapping[str, str],
    base_env: Mapping[str, str],
    extra_env: Mapping[str, str],
) -> Prepared:
    """The argv, environment and stdin bytes of one run."""
    scope: dict[str, Any] = dict(values)
    scope.update(builtins)
    argv: list[str] = []
    if spec.argv is not None:
        _expand(spec.argv, scope, params, argv, {"after_dashdash": False}, None)
        first = argv[0] if argv else ""
        if "/" in first and not os.path.isabs(first):
            argv[0] = os.path.normpath(os.path.join(builtins.get("mcp.config_dir", "."), first))
    else:
        assert spec.shell is not None
        assert spec.script is not None
        argv = [spec.shell, "-c", spec.script, builtins.get("mcp.tool", "mcp-script")]
        _expand(spec.args, scope, params, argv, {"after_dashdash": False}, None)
    env: dict[str, str] = {}
    for name in spec.inherit_env:
        value = base_env.get(name)
        if value is not None and not value.startswith("() {"):
            env[name] = value
    for name, value in spec.env:
        if isinstance(value, SecretRef):
            secret = secrets.get(value.name)
            if secret is not None:
                env[name] = secret
            continue
        text = value.render(scope)
        if text is not None:
            env[name] = text
    for name, param in params.items():
        if name in values and values[name] is not None:
            text = templating.stringify(values[name])
            # Linux caps one environment string at 128 KiB; a value that also
            # travels on stdin is not worth an E2BIG.
            if len(text) > ENV_VALUE_LIMIT and spec.stdin != "none":
                continue
            env[param.env_name] = text
    env.update(extra_env)
    stdin: bytes | None = None
    if spec.stdin == "json":
        stdin = json.dumps(values, ensure_ascii=False).encode("utf-8")
    elif spec.stdin == "param" and spec.stdin_param is not None:
        value = values.get(spec.stdin_param)
        stdin = templating.stringify(value).encode("utf-8") if value is not None else b""
    return Prepared(argv=argv, env=env, stdin=stdin)
