"""Server configuration: the `mcpServers` JSON format that editors use.

Our own file lives at `$XDG_CONFIG_HOME/mcpcli/mcp.json` (`--config FILE` or
`MCP_CONFIG` override it). Entries are either stdio servers
(`command`, `args`, `env`, `cwd`) or remote ones (`url`, `headers`, `type`).
`${VAR}` (and `${VAR:-default}`, `${env:VAR}`) are interpolated from the
environment when an entry is used, so an unused entry never fails on a missing
variable. Servers configured in other clients (Claude, Cursor, VS Code, ...) are
found read-only by `mcpcli.other_clients` when a name is not in our file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpcli.core import jsonrpc
from mcpcli.errors import ConfigError, UsageError

__all__ = [
    "Config",
    "ServerEntry",
    "cache_dir",
    "config_dir",
    "default_config_path",
    "interpolate",
    "normalize_entry",
    "parse_duration",
    "state_dir",
]

JSON = dict[str, Any]
APP = "mcpcli"

#: How long a keepAlive server's session may sit unused before the daemon closes it.
DEFAULT_IDLE_TIMEOUT = 30 * 60.0
#: The restart policies a session may have (`"restart"` in an entry).
RESTART_POLICIES = ("no", "on-failure")

_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def config_dir() -> Path:
    """`$XDG_CONFIG_HOME/mcpcli` on every OS if set, else the platform's config dir."""
    if os.environ.get("XDG_CONFIG_HOME") or os.name == "posix":
        return _xdg("XDG_CONFIG_HOME", ".config") / APP
    import platformdirs

    return Path(platformdirs.user_config_dir(APP, appauthor=False))


def state_dir() -> Path:
    if os.environ.get("XDG_STATE_HOME") or os.name == "posix":
        return _xdg("XDG_STATE_HOME", ".local/state") / APP
    import platformdirs

    return Path(platformdirs.user_state_dir(APP, appauthor=False))


def cache_dir() -> Path:
    if os.environ.get("XDG_CACHE_HOME") or os.name == "posix":
        return _xdg("XDG_CACHE_HOME", ".cache") / APP
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP, appauthor=False))


def default_config_path() -> Path:
    env = os.environ.get("MCP_CONFIG")
    return Path(env) if env else config_dir() / "mcp.json"


def interpolate(value: str, *, where: str, env: Mapping[str, str] | None = None) -> str:
    """Replace `${VAR}`, `${VAR:-default}` and `${env:VAR}` from the environment."""
    source = os.environ if env is None else env

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in source:
            return source[name]
        if default is not None:
            return default
        raise ConfigError(
            f"{where}: environment variable {name} is not set",
            hint=f"export {name}=... or write ${{{name}:-default}}",
        )

    if "${input:" in value:
        raise ConfigError(f"{where}: VS Code ${{input:...}} variables are not supported here")
    return _VAR.sub(replace, value)


@dataclass
class ServerEntry:
    """One configured server, normalised across the editors' dialects."""

    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    #: "stdio", "http" (Streamable HTTP, falling back to SSE), "sse", or "yaml"
    #: (a tools.yaml file served in-process).
    transport: str = "stdio"
    #: The tools.yaml file of a "yaml" entry.
    path: str | None = None
    #: Where the entry came from: our config path, or "claude-desktop" etc.
    source: str = ""
    #: The entry as written, for fields other features read (auth client ids...).
    raw: JSON = field(default_factory=dict)
    #: `"keepAlive": true`: commands naming this server share a session held by the daemon.
    keep_alive: bool = False
    #: `"idleTimeout"` in seconds: the session closes after this long unused (None: never).
    idle_timeout: float | None = None
    #: `"restart"`: "no", or "on-failure" (the daemon restarts a crashed server).
    restart: str = "no"
    #: `"headersHelper"` (remote servers of our own config): a command printing request
    #: headers; a list is an argv, a string runs through `sh -c` (`mcpcli.headers_helper`).
    headers_helper: str | list[str] | None = None

    def resolved(self, env: Mapping[str, str] | None = None) -> ServerEntry:
        """A copy with `${VAR}` interpolated from `env` (default: our environment); raises
        `ConfigError` on a missing variable."""
        where = f"server {self.name!r}"

        def fill(value: str, at: str = where) -> str:
            return interpolate(value, where=at, env=env)

        return ServerEntry(
            name=self.name,
            command=fill(self.command) if self.command else None,
            args=[fill(a) for a in self.args],
            env={k: fill(v, f"{where} env.{k}") for k, v in self.env.items()},
            cwd=fill(self.cwd) if self.cwd else None,
            url=fill(self.url) if self.url else None,
            headers={k: fill(v, f"{where} header {k}") for k, v in self.headers.items()},
            transport=self.transport,
            path=self.path,
            source=self.source,
            raw=self.raw,
            keep_alive=self.keep_alive,
            idle_timeout=self.idle_timeout,
            restart=self.restart,
            headers_helper=self.headers_helper,
        )

    def to_json(self) -> JSON:
        """The entry in `mcpServers` form (what `servers add` writes)."""
        out: JSON = {}
        if self.command is not None:
            out["command"] = self.command
            if self.args:
                out["args"] = list(self.args)
            if self.env:
                out["env"] = dict(self.env)
            if self.cwd:
                out["cwd"] = self.cwd
        if self.url is not None:
            out["url"] = self.url
            if self.transport == "sse":
                out["type"] = "sse"
            if self.headers:
                out["headers"] = dict(self.headers)
        for key, value in self.raw.items():
            out.setdefault(key, value)
        return out


_TRANSPORT_ALIASES = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamablehttp": "http",
    "streamable_http": "http",
    "sse": "sse",
}


def _strings(value: Any, *, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{what} must be a list of strings")
    return list(value)


def _string_map(value: Any, *, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{what} must be an object of strings")
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, (int, float, bool)) and not isinstance(item, bool):
            item = str(item)
        if not isinstance(item, str):
            raise ConfigError(f"{what}.{key} must be a string")
        out[str(key)] = item
    return out


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$")
_UNIT_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: Any, *, what: str) -> float:
    """`"30m"`, `"90s"`, `"1.5h"` or a number of seconds, as seconds (> 0)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    else:
        raise ConfigError(
            f"{what} must be a duration such as \"30m\", \"90s\" or \"2h\", not {value!r}"
        )
    if not seconds > 0 or seconds == float("inf"):
        raise ConfigError(f"{what} must be a positive duration, not {value!r}")
    return seconds


def _session_fields(entry: JSON, *, what: str) -> JSON:
    """keepAlive, idleTimeout and restart, validated (they stay in `raw` too, so
    `to_json` writes them back as they were)."""
    keep_alive = entry.get("keepAlive", False)
    if not isinstance(keep_alive, bool):
        raise ConfigError(f"{what}: keepAlive must be true or false")
    idle: float | None = None
    if "idleTimeout" in entry:
        raw_idle = entry["idleTimeout"]
        if raw_idle is not None and raw_idle != "never":
            idle = parse_duration(raw_idle, what=f"{what}: idleTimeout")
    elif keep_alive:
        idle = DEFAULT_IDLE_TIMEOUT
    restart = entry.get("restart", "no")
    if restart is False:
        restart = "no"
    if restart not in RESTART_POLICIES:
        raise ConfigError(
            f"{what}: restart must be one of " + ", ".join(f'"{p}"' for p in RESTART_POLICIES)
            + f", not {restart!r}"
        )
    return {"keep_alive": keep_alive, "idle_timeout": idle, "restart": restart}


def _headers_helper(entry: JSON, *, what: str) -> str | list[str] | None:
    helper = entry.get("headersHelper")
    if helper is None:
        return None
    if isinstance(helper, str) and helper.strip():
        return helper
    if isinstance(helper, list) and helper and all(isinstance(a, str) for a in helper) and helper[0]:
        return list(helper)
    raise ConfigError(f"{what}: headersHelper must be a command string or a non-empty list of strings (an argv)")


def normalize_entry(name: str, entry: Any, *, source: str, helpers: bool = False) -> ServerEntry:
    """One `mcpServers`/`servers` entry in any editor's dialect, validated.

    `helpers`: honour `headersHelper` (a command to run); only our own config's
    entries do, never a file another client (or a cloned project) put there."""
    what = f"{source}: server {name!r}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{what} must be an object")
    session = _session_fields(entry, what=what)
    kind = entry.get("type", entry.get("transport"))
    url = entry.get("url", entry.get("httpUrl", entry.get("serverUrl")))
    command = entry.get("command")
    known = {
        "type", "transport", "url", "httpUrl", "serverUrl", "command", "args", "env", "cwd",
        "headers",
    }
    raw = {k: v for k, v in entry.items() if k not in known}
    if command is not None and url is not None:
        raise ConfigError(f"{what} has both a command and a url")
    if command is not None:
        if not isinstance(command, str) or not command:
            raise ConfigError(f"{what}: command must be a non-empty string")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f"{what}: cwd must be a string")
        return ServerEntry(
            name=name,
            command=command,
            args=_strings(entry.get("args"), what=f"{what}: args"),
            env=_string_map(entry.get("env"), what=f"{what}: env"),
            cwd=cwd,
            transport="stdio",
            source=source,
            raw=raw,
            **session,
        )
    if url is not None:
        if not isinstance(url, str) or not url:
            raise ConfigError(f"{what}: url must be a non-empty string")
        transport = "http"
        if kind is not None:
            transport = _TRANSPORT_ALIASES.get(str(kind).lower(), "")
            if not transport or transport == "stdio":
                raise ConfigError(f"{what}: unknown transport type {kind!r} for a url")
        elif "httpUrl" not in entry and url.rstrip("/").endswith("/sse"):
            transport = "sse"
        return ServerEntry(
            name=name,
            url=url,
            headers=_string_map(entry.get("headers"), what=f"{what}: headers"),
            transport=transport,
            source=source,
            raw=raw,
            headers_helper=_headers_helper(entry, what=what) if helpers else None,
            **session,
        )
    raise ConfigError(f"{what} needs either a command or a url")


def _servers_of(doc: Any, *, source: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise ConfigError(f"{source}: the top level must be a JSON object")
    servers = doc.get("mcpServers", doc.get("servers", {}))
    if not isinstance(servers, dict):
        raise ConfigError(f"{source}: mcpServers must be an object")
    return servers


class Config:
    """Our config file: read it, look servers up, and change it atomically.

    A change is made under the file's lock on what the file holds at that moment
    (`files.locked_edit`), not on what was read earlier: concurrent `mcp servers add`s
    take turns and none is lost, and a change another program makes in between is kept."""

    def __init__(self, path: Path | None = None, *, trust_project: bool = False) -> None:
        self.path = path or default_config_path()
        #: The command's --project: servers of project files not trusted (`mcpcli.trust`)
        #: may run for this command. Resolution reads it wherever it happens (`targets`),
        #: so a gateway's upstreams get the same answer as the command's TARGET.
        self.trust_project = trust_project
        self._doc: JSON | None = None

    def _load(self) -> JSON:
        if self._doc is None:
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                data = None
            except OSError as exc:
                raise ConfigError(f"cannot read {self.path}: {exc.strerror}") from None
            self._doc = self._parse(data)
        return self._doc

    def _parse(self, data: bytes | None) -> JSON:
        if data is None:
            return {}
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"{self.path}: not UTF-8 text") from None
        try:
            doc = jsonrpc.loads(text) if text.strip() else {}
        except ValueError as exc:
            raise ConfigError(f"{self.path}: invalid JSON: {exc}") from None
        _servers_of(doc, source=str(self.path))
        return dict(doc)

    def names(self) -> list[str]:
        return list(_servers_of(self._load(), source=str(self.path)))

    def entries(self) -> list[ServerEntry]:
        servers = _servers_of(self._load(), source=str(self.path))
        return [normalize_entry(n, e, source=str(self.path), helpers=True) for n, e in servers.items()]

    def get(self, name: str) -> ServerEntry | None:
        servers = _servers_of(self._load(), source=str(self.path))
        if name not in servers:
            return None
        return normalize_entry(name, servers[name], source=str(self.path), helpers=True)

    def set(self, entry: ServerEntry, *, replace: bool = True) -> bool:
        """Add `entry`, or replace the one of its name (a UsageError unless `replace`);
        whether there was one."""
        existed = False

        def change(doc: JSON) -> bool:
            nonlocal existed
            key = "mcpServers" if "mcpServers" in doc or "servers" not in doc else "servers"
            servers = doc.setdefault(key, {})
            existed = entry.name in servers
            if existed and not replace:
                raise UsageError(f"server {entry.name!r} already exists in {self.path}",
                                 hint="use --force to replace it")
            servers[entry.name] = entry.to_json()
            return True

        self._update(change)
        return existed

    def remove(self, name: str) -> bool:
        def change(doc: JSON) -> bool:
            servers = doc.get("mcpServers" if "mcpServers" in doc else "servers") or {}
            if name not in servers:
                return False
            del servers[name]
            return True

        return self._update(change)

    def _update(self, change: Callable[[JSON], bool]) -> bool:
        """Apply `change` to the file as it is now (False from it: nothing to write) and
        write the result atomically (temp file, fsync, rename), under the file's lock."""
        from mcpcli import files

        def edit(data: bytes | None) -> bytes | None:
            doc = self._parse(data)
            changed = change(doc)
            self._doc = doc
            if not changed:
                return None
            return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")

        with edit_errors(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return files.locked_edit(self.path, edit)
        raise AssertionError("unreachable")  # pragma: no cover - edit_errors raises or returns


@contextmanager
def edit_errors(path: Path) -> Iterator[None]:
    """A locked edit of `path` (ours, or another client's config) that fails is a
    `ConfigError` naming the file and saying nothing was changed."""
    from mcpcli import files

    try:
        yield
    except files.ChangedMeanwhile:
        raise ConfigError(f"cannot write {path}: it kept changing while mcp edited it "
                          "(another program writes it); nothing was changed") from None
    except files.LockBusy:
        raise ConfigError(f"cannot write {path}: another mcp command has been editing it "
                          "for too long; nothing was changed") from None
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}; nothing was changed") from None
