"""The file formats other MCP clients keep their servers in, read and translated.

JSON (with VS Code's comments and trailing commas), TOML (Codex) and YAML (Goose); and
each client's dialect of a server entry (Codex, Gemini, Zed, Goose, opencode, VS Code's
variables) translated to the `mcpServers` shape `mcpcli.config` normalises. Pure text
in, data out: where the files are and which servers a name resolves to is
`mcpcli.other_clients`'.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["YamlError", "loads_lenient", "parse_document", "toml_loads", "translate", "vscode_variables"]


class YamlError(Exception):
    """A YAML file that does not parse (PyYAML's errors, wrapped so yaml loads lazily)."""


def toml_loads(text: str) -> dict[str, Any]:
    """TOML with tomllib (tomli before Python 3.11); raises ValueError."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        doc: dict[str, Any] = tomllib.loads(text)
    except RecursionError:  # "a = [[[[..." (the parser recurses)
        raise ValueError("nested too deeply") from None
    return doc


def parse_document(text: str, fmt: str) -> Any:
    if fmt == "toml":
        return toml_loads(text)
    if fmt == "yaml":
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise YamlError(str(exc).replace("\n", " ")) from None
        except RecursionError:
            raise YamlError("nested too deeply") from None
    return loads_lenient(text)


def loads_lenient(text: str) -> Any:
    """JSON, or JSON with comments and trailing commas (VS Code writes JSONC)."""
    from mcpcli.core.jsonrpc import loads  # strict, and "[[[[..." is a ValueError, not a crash

    try:
        return loads(text)
    except ValueError:
        return loads(_strip_jsonc(text))


def _strip_jsonc(text: str) -> str:
    """Remove // and /* */ comments, then trailing commas, outside strings."""
    return _scan(_scan(text, comments=True), comments=False)


def _scan(text: str, *, comments: bool) -> str:
    """One string-aware pass: drop comments, or drop commas that precede `]` or `}`."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            in_string = ch != '"'
            i += 1
        elif ch == '"':
            in_string = True
            out.append(ch)
            i += 1
        elif comments and text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif comments and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif not comments and ch == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j >= n or text[j] not in "]}":
                out.append(ch)
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


_GEMINI_VAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_OPENCODE_VAR = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def _rewrite_strings(entry: Any, pattern: re.Pattern[str]) -> Any:
    """Turn a client's own env reference syntax into our `${VAR}`."""
    if isinstance(entry, str):
        return pattern.sub(r"${\1}", entry)
    if isinstance(entry, list):
        return [_rewrite_strings(v, pattern) for v in entry]
    if isinstance(entry, dict):
        return {k: _rewrite_strings(v, pattern) for k, v in entry.items()}
    return entry


def _pick(raw: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: raw[k] for k in keys if k in raw}


def _codex(raw: dict[str, Any]) -> dict[str, Any] | None:
    if raw.get("enabled") is False:
        return None
    out = _pick(raw, "command", "args", "env", "cwd", "url")
    forwarded = raw.get("env_vars")
    if "command" in out and isinstance(forwarded, list) and forwarded:
        # Variables Codex passes through from its own environment: ours must too.
        env = dict(out["env"]) if isinstance(out.get("env"), dict) else {}
        for name in forwarded:
            env.setdefault(str(name), f"${{{name}}}")
        out["env"] = env
    if "url" in out:
        out["type"] = "http"
        headers = dict(raw["http_headers"]) if isinstance(raw.get("http_headers"), dict) else {}
        env_headers = raw.get("env_http_headers")
        if isinstance(env_headers, dict):
            headers.update({str(k): f"${{{v}}}" for k, v in env_headers.items()})
        if isinstance(raw.get("bearer_token_env_var"), str):
            headers["Authorization"] = f"Bearer ${{{raw['bearer_token_env_var']}}}"
        if headers:
            out["headers"] = headers
    return out


def _gemini(raw: dict[str, Any]) -> dict[str, Any] | None:
    out = _pick(raw, "command", "args", "env", "cwd", "url", "httpUrl", "headers", "type")
    if "url" in out and "httpUrl" not in out and "type" not in out:
        out["type"] = "sse"  # Gemini CLI: `url` is SSE, `httpUrl` Streamable HTTP
    for key in ("env", "headers"):  # where Gemini expands `$VAR` as well as `${VAR}`
        if isinstance(out.get(key), dict):
            out[key] = _rewrite_strings(out[key], _GEMINI_VAR)
    return out


def _zed(raw: dict[str, Any]) -> dict[str, Any] | None:
    if raw.get("enabled") is False:
        return None
    command = raw.get("command")
    if isinstance(command, dict):  # the older {"command": {"path", "args", "env"}}
        out = {"command": command.get("path"), **_pick(command, "args", "env")}
    elif command is not None:
        out = _pick(raw, "command", "args", "env")
    elif "url" in raw:
        out = _pick(raw, "url", "headers")
    else:
        return None  # an extension's server: Zed starts it, there is no command to run
    return out


def _goose(raw: dict[str, Any]) -> dict[str, Any] | None:
    if raw.get("enabled") is False:
        return None
    nested = raw.get("config")
    config: dict[str, Any] = nested if isinstance(nested, dict) else raw
    kind = config.get("type")
    if kind == "stdio":
        out = {"command": config.get("cmd"), **_pick(config, "args")}
        if config.get("envs"):
            out["env"] = config["envs"]
        return out
    if kind in ("sse", "streamable_http"):
        out = {"url": config.get("uri"), "type": "sse" if kind == "sse" else "http"}
        if config.get("headers"):
            out["headers"] = config["headers"]
        return out
    return None  # builtin, platform, frontend...: run inside Goose


def _opencode(raw: dict[str, Any]) -> dict[str, Any] | None:
    if raw.get("enabled") is False:
        return None
    kind = raw.get("type")
    out: dict[str, Any]
    if kind == "local":
        argv = raw.get("command")
        if isinstance(argv, str):
            argv = [argv]
        if not isinstance(argv, list) or not argv:
            out = {}
        else:
            out = {"command": argv[0], "args": argv[1:]}
        if raw.get("environment"):
            out["env"] = raw["environment"]
    elif kind == "remote":
        out = _pick(raw, "url", "headers")
    else:
        out = {}  # neither: normalize_entry names what is missing
    return dict(_rewrite_strings(out, _OPENCODE_VAR))


_DIALECTS = {"codex": _codex, "gemini": _gemini, "zed": _zed, "goose": _goose, "opencode": _opencode}


def translate(source: str, raw: Any) -> Any:
    """A client's entry in the `mcpServers` form; None to skip it (disabled, built in)."""
    dialect = _DIALECTS.get(source)
    if dialect is None or not isinstance(raw, dict):
        return raw
    return dialect(raw)


def vscode_variables(entry: Any, workspace: Path | None, home: Path) -> Any:
    """Substitute VS Code's own `${workspaceFolder}` and `${userHome}`; leave the rest."""
    if isinstance(entry, str):
        if workspace is not None:
            entry = entry.replace("${workspaceFolder}", str(workspace))
        return entry.replace("${userHome}", str(home))
    if isinstance(entry, list):
        return [vscode_variables(v, workspace, home) for v in entry]
    if isinstance(entry, dict):
        return {k: vscode_variables(v, workspace, home) for k, v in entry.items()}
    return entry
