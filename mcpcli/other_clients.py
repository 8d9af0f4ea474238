"""Read-only discovery of MCP servers that other clients have configured.

So `mcp tools list github` works when `github` is configured in Claude Desktop,
Claude Code, Cursor, VS Code or Windsurf, without copying anything. Nothing here
ever writes those files; `mcp servers import` copies entries into our own config.

Where each client keeps its servers (user level, then project level, found from
the current directory upwards):

    Claude Desktop  <config>/Claude/claude_desktop_config.json          mcpServers
    Claude Code     ~/.claude.json (mcpServers, projects.<dir>.mcpServers), .mcp.json
    Cursor          ~/.cursor/mcp.json, .cursor/mcp.json                 mcpServers
    VS Code         <config>/Code/User/mcp.json, .vscode/mcp.json         servers
    Windsurf        ~/.codeium/windsurf/mcp_config.json                   mcpServers

`<config>` is `~/Library/Application Support` on macOS, `%APPDATA%` on Windows
and `$XDG_CONFIG_HOME` (default `~/.config`) elsewhere. Project files win over
user files (nearest directory first), as in the clients themselves. Set
`MCP_NO_DISCOVERY=1` to turn discovery off.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpcli.config import ServerEntry, normalize_entry
from mcpcli.errors import ConfigError

__all__ = [
    "SOURCES",
    "Found",
    "Problem",
    "candidate_files",
    "discover",
    "enabled",
    "find",
    "names",
]

#: Source id -> label, in the order user-level entries are consulted.
SOURCES: dict[str, str] = {
    "claude-code": "Claude Code",
    "claude-desktop": "Claude Desktop",
    "cursor": "Cursor",
    "vscode": "VS Code",
    "windsurf": "Windsurf",
}

#: Refuse to parse absurdly large files (~/.claude.json grows with history; a few MB is normal).
MAX_FILE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Candidate:
    """A file that may hold servers: which client, where, and how to find them in it."""

    source: str
    path: Path
    #: "mcpServers", "servers", or "project:<dir>" (Claude Code's per-project table).
    key: str = "mcpServers"
    #: The workspace folder for `${workspaceFolder}` (VS Code project files).
    workspace: Path | None = None
    scope: str = "user"


@dataclass
class Found:
    """A server found in another client's config."""

    entry: ServerEntry
    source: str
    path: Path
    scope: str

    @property
    def label(self) -> str:
        return SOURCES.get(self.source, self.source)


@dataclass
class Problem:
    """A config file or entry we could not use (reported by `servers list`, never fatal)."""

    source: str
    path: Path
    message: str


def enabled() -> bool:
    return os.environ.get("MCP_NO_DISCOVERY", "").strip().lower() in ("", "0", "false", "no")


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _app_config_dir(home: Path) -> Path:
    """Where desktop apps keep per-user settings on this OS."""
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        return Path(appdata) if appdata else home / "AppData" / "Roaming"
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg and os.path.isabs(xdg) else home / ".config"


def _project_dirs(cwd: Path, home: Path) -> list[Path]:
    """The current directory and its parents, nearest first, stopping at home or /."""
    dirs = []
    for directory in [cwd, *cwd.parents]:
        if directory == home:
            break
        dirs.append(directory)
    return dirs


def candidate_files(cwd: Path | None = None, home: Path | None = None) -> list[Candidate]:
    """Every file discovery looks at, in priority order (it may not exist)."""
    home = home or _home()
    try:
        cwd = (cwd or Path.cwd()).resolve()
    except OSError:
        cwd = home
    app_dir = _app_config_dir(home)
    out: list[Candidate] = []
    for directory in _project_dirs(cwd, home):
        out.append(Candidate("claude-code", home / ".claude.json", f"project:{directory}", scope="project"))
        out.append(Candidate("claude-code", directory / ".mcp.json", scope="project"))
        out.append(Candidate("cursor", directory / ".cursor" / "mcp.json", scope="project"))
        out.append(Candidate("vscode", directory / ".vscode" / "mcp.json", "servers",
                             workspace=directory, scope="project"))
    out.append(Candidate("claude-code", home / ".claude.json"))
    out.append(Candidate("claude-desktop", app_dir / "Claude" / "claude_desktop_config.json"))
    out.append(Candidate("cursor", home / ".cursor" / "mcp.json"))
    for product in ("Code", "Code - Insiders"):
        out.append(Candidate("vscode", app_dir / product / "User" / "mcp.json", "servers"))
    out.append(Candidate("windsurf", home / ".codeium" / "windsurf" / "mcp_config.json"))
    return out


class _Reader:
    """Parses each file once per discovery pass."""

    def __init__(self) -> None:
        self.docs: dict[Path, Any] = {}
        self.problems: list[Problem] = []

    def load(self, candidate: Candidate) -> Any:
        path = candidate.path
        if path in self.docs:
            return self.docs[path]
        doc: Any = None
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise ValueError("file is too large")
            text = path.read_text(encoding="utf-8")
            doc = _loads_lenient(text) if text.strip() else {}
        except FileNotFoundError:
            doc = None
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.problems.append(Problem(candidate.source, path, f"cannot read: {message}"))
            doc = None
        self.docs[path] = doc
        return doc


def _loads_lenient(text: str) -> Any:
    """JSON, or JSON with comments and trailing commas (VS Code writes JSONC)."""
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(_strip_jsonc(text))


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


def _servers(doc: Any, candidate: Candidate) -> dict[str, Any]:
    if not isinstance(doc, dict):
        return {}
    if candidate.key.startswith("project:"):
        projects = doc.get("projects")
        project = projects.get(candidate.key[len("project:"):]) if isinstance(projects, dict) else None
        servers = project.get("mcpServers") if isinstance(project, dict) else None
    elif candidate.key == "servers":
        servers = doc.get("servers", doc.get("mcpServers"))
    else:
        servers = doc.get("mcpServers")
    return servers if isinstance(servers, dict) else {}


def _vscode_variables(entry: Any, workspace: Path | None, home: Path) -> Any:
    """Substitute VS Code's own `${workspaceFolder}` and `${userHome}`; leave the rest."""
    if isinstance(entry, str):
        if workspace is not None:
            entry = entry.replace("${workspaceFolder}", str(workspace))
        return entry.replace("${userHome}", str(home))
    if isinstance(entry, list):
        return [_vscode_variables(v, workspace, home) for v in entry]
    if isinstance(entry, dict):
        return {k: _vscode_variables(v, workspace, home) for k, v in entry.items()}
    return entry


def discover(
    cwd: Path | None = None, home: Path | None = None, *, sources: list[str] | None = None
) -> tuple[list[Found], list[Problem]]:
    """Every server other clients configure (later duplicates of a name included)."""
    if not enabled():
        return [], []
    home = home or _home()
    reader = _Reader()
    found: list[Found] = []
    for candidate in candidate_files(cwd, home):
        if sources is not None and candidate.source not in sources:
            continue
        doc = reader.load(candidate)
        if doc is None:
            continue
        where = f"{SOURCES[candidate.source]} ({candidate.path})"
        for name, raw in _servers(doc, candidate).items():
            if candidate.source == "vscode":
                raw = _vscode_variables(raw, candidate.workspace, home)
            try:
                entry = normalize_entry(str(name), raw, source=where)
            except ConfigError as exc:
                reader.problems.append(Problem(candidate.source, candidate.path, exc.message))
                continue
            if isinstance(raw, dict) and raw.get("disabled") is True:
                continue
            found.append(Found(entry, candidate.source, candidate.path, candidate.scope))
    return found, reader.problems


def find(name: str) -> ServerEntry | None:
    """The first server called `name` in another client's config, or None."""
    found, _ = discover()
    for item in found:
        if item.entry.name == name:
            return item.entry
    return None


def names() -> list[str]:
    """Names of every discovered server, first occurrence first."""
    found, _ = discover()
    seen: dict[str, None] = {}
    for item in found:
        seen.setdefault(item.entry.name, None)
    return list(seen)
