"""Read-only discovery of MCP servers that other clients have configured.

So `mcp tools list github` works when `github` is configured in Claude Desktop,
Claude Code, Cursor, VS Code, Windsurf, Codex, Gemini CLI, Zed, Goose or
opencode, without copying anything. Nothing here writes those files;
`mcp servers import` copies entries into our own config and `mcpcli.install`
writes one entry into a client's file when asked to.

Where each client keeps its servers (project files are found from the current
directory upwards):

    Claude Desktop  <config>/Claude/claude_desktop_config.json          mcpServers
    Claude Code     ~/.claude.json (mcpServers, projects.<dir>.mcpServers), .mcp.json
    Cursor          ~/.cursor/mcp.json, .cursor/mcp.json                 mcpServers
    VS Code         <config>/Code/User/mcp.json, .vscode/mcp.json         servers
                    <config>/Code/User/settings.json                      mcp.servers
    Windsurf        ~/.codeium/windsurf/mcp_config.json                   mcpServers
    Codex           $CODEX_HOME/config.toml (~/.codex), .codex/config.toml [mcp_servers.NAME]
    Gemini CLI      ~/.gemini/settings.json, .gemini/settings.json        mcpServers
    Zed             <xdg>/zed/settings.json                               context_servers
    Goose           <xdg>/goose/config.yaml                               extensions
    opencode        <xdg>/opencode/opencode.json, opencode.json           mcp

`<config>` is `~/Library/Application Support` on macOS, `%APPDATA%` on Windows
and `$XDG_CONFIG_HOME` (default `~/.config`) elsewhere; `<xdg>` is
`$XDG_CONFIG_HOME` or `~/.config` on every OS but Windows (`%APPDATA%`). Each
client's own dialect (Zed's `command.path`, Goose's `cmd`/`envs`/`uri`,
opencode's argv list and `{env:VAR}`, Codex's `bearer_token_env_var`...) is
translated to the `mcpServers` form before it is validated. Set
`MCP_NO_DISCOVERY=1` to turn discovery off.

Order, first definition of a name wins: files the user's own tools write (Claude
Code's per-directory table in `~/.claude.json`, nearest directory first, then each
client's user file) before project files (nearest directory first). A project file
is written by whoever wrote the repository, so its servers carry a trust status
(`mcpcli.trust`): one that is not trusted is listed but must not run (`targets`
refuses it), and it never shadows a user's server of the same name.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpcli.config import ServerEntry, normalize_entry
from mcpcli.config_formats import YamlError, parse_document, translate, vscode_variables
from mcpcli.errors import ConfigError
from mcpcli.trust import TRUSTED, TrustStore, digest

__all__ = [
    "SOURCES",
    "Found",
    "Problem",
    "ProjectFile",
    "app_config_dir",
    "candidate_files",
    "codex_dir",
    "discover",
    "enabled",
    "first_definitions",
    "lookup",
    "names",
    "project_files",
    "project_paths",
    "xdg_config_dir",
]

#: Source id -> label, in the order user-level entries are consulted.
SOURCES: dict[str, str] = {
    "claude-code": "Claude Code",
    "claude-desktop": "Claude Desktop",
    "cursor": "Cursor",
    "vscode": "VS Code",
    "windsurf": "Windsurf",
    "codex": "Codex",
    "gemini": "Gemini CLI",
    "zed": "Zed",
    "goose": "Goose",
    "opencode": "opencode",
}

#: Refuse to parse absurdly large files (~/.claude.json grows with history; a few MB is normal).
MAX_FILE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Candidate:
    """A file that may hold servers: which client, where, and how to find them in it."""

    source: str
    path: Path
    #: "mcpServers", "servers", "mcp.servers" (VS Code settings), "project:<dir>" (Claude
    #: Code's per-project table), or the client's own: "mcp_servers", "context_servers",
    #: "extensions", "mcp".
    key: str = "mcpServers"
    #: The workspace folder for `${workspaceFolder}` (VS Code project files).
    workspace: Path | None = None
    #: "user" (a user file), "local" (Claude Code's table for a directory, in the user's
    #: own ~/.claude.json) or "project" (a file in the directory tree: needs trust).
    scope: str = "user"
    #: "json" (comments and trailing commas allowed), "toml" or "yaml".
    fmt: str = "json"


@dataclass
class Found:
    """A server found in another client's config."""

    entry: ServerEntry
    source: str
    path: Path
    scope: str
    #: "user" for a user or local file (no consent needed); for a project file
    #: `trust.TRUSTED`, `trust.UNTRUSTED` or `trust.CHANGED` (trusted before its servers changed).
    trust: str = "user"

    @property
    def label(self) -> str:
        return SOURCES.get(self.source, self.source)

    @property
    def needs_consent(self) -> bool:
        """A project file's server that was not trusted as it is now: it must not run
        unless the command was given --project."""
        return self.trust not in ("user", TRUSTED)


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


def app_config_dir(home: Path) -> Path:
    """Where desktop apps keep per-user settings on this OS."""
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    return xdg_config_dir(home)


def xdg_config_dir(home: Path) -> Path:
    """Where CLI tools (Zed, Goose, opencode) keep settings: XDG on macOS too."""
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        return Path(appdata) if appdata else home / "AppData" / "Roaming"
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg and os.path.isabs(xdg) else home / ".config"


def zed_settings(home: Path) -> Path:
    """Zed's settings file (its directory is `Zed` on Windows, `zed` elsewhere)."""
    xdg = xdg_config_dir(home)
    return (xdg / "Zed" if sys.platform == "win32" else xdg / "zed") / "settings.json"


def codex_dir(home: Path) -> Path:
    """`$CODEX_HOME`, else `~/.codex`."""
    value = os.environ.get("CODEX_HOME")
    return Path(value) if value else home / ".codex"


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
    app_dir = app_config_dir(home)
    out: list[Candidate] = []
    dirs = _project_dirs(cwd, home)
    for directory in dirs:  # written by `claude mcp add -s local` into the user's own file
        out.append(Candidate("claude-code", home / ".claude.json", f"project:{directory}", scope="local"))
    out.extend(_user_files(home, app_dir))
    for directory in dirs:
        out.extend(_project_candidates(directory))
    return out


def _project_candidates(directory: Path) -> list[Candidate]:
    """The project files discovery reads in `directory` (a repository writes these)."""
    out = [
        Candidate("claude-code", directory / ".mcp.json", scope="project"),
        Candidate("cursor", directory / ".cursor" / "mcp.json", scope="project"),
        Candidate("vscode", directory / ".vscode" / "mcp.json", "servers", workspace=directory, scope="project"),
        Candidate("codex", directory / ".codex" / "config.toml", "mcp_servers", scope="project", fmt="toml"),
        Candidate("gemini", directory / ".gemini" / "settings.json", scope="project"),
    ]
    for name in ("opencode.json", "opencode.jsonc"):
        out.append(Candidate("opencode", directory / name, "mcp", scope="project"))
    return out


def _user_files(home: Path, app_dir: Path) -> list[Candidate]:
    out: list[Candidate] = []
    out.append(Candidate("claude-code", home / ".claude.json"))
    out.append(Candidate("claude-desktop", app_dir / "Claude" / "claude_desktop_config.json"))
    out.append(Candidate("cursor", home / ".cursor" / "mcp.json"))
    for product in ("Code", "Code - Insiders"):
        out.append(Candidate("vscode", app_dir / product / "User" / "mcp.json", "servers"))
        out.append(Candidate("vscode", app_dir / product / "User" / "settings.json", "mcp.servers"))
    out.append(Candidate("windsurf", home / ".codeium" / "windsurf" / "mcp_config.json"))
    out.append(Candidate("codex", codex_dir(home) / "config.toml", "mcp_servers", fmt="toml"))
    out.append(Candidate("gemini", home / ".gemini" / "settings.json"))
    xdg = xdg_config_dir(home)
    out.append(Candidate("zed", zed_settings(home), "context_servers"))
    goose = xdg / "Block" / "goose" / "config" if sys.platform == "win32" else xdg / "goose"
    out.append(Candidate("goose", goose / "config.yaml", "extensions", fmt="yaml"))
    for name in ("opencode.json", "opencode.jsonc"):
        out.append(Candidate("opencode", xdg / "opencode" / name, "mcp"))
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
            text = path.read_text(encoding="utf-8-sig")
            doc = parse_document(text, candidate.fmt) if text.strip() else {}
        except FileNotFoundError:
            doc = None
        except IsADirectoryError:
            doc = None
        except (OSError, ValueError, UnicodeDecodeError, YamlError) as exc:
            message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.problems.append(Problem(candidate.source, path, f"cannot read: {message}"))
            doc = None
        self.docs[path] = doc
        return doc


def _servers(doc: Any, candidate: Candidate) -> dict[str, Any]:
    if not isinstance(doc, dict):
        return {}
    if candidate.key.startswith("project:"):
        projects = doc.get("projects")
        project = projects.get(candidate.key[len("project:"):]) if isinstance(projects, dict) else None
        servers = project.get("mcpServers") if isinstance(project, dict) else None
    elif candidate.key == "servers":
        servers = doc.get("servers", doc.get("mcpServers"))
    elif candidate.key == "mcp.servers":
        mcp = doc.get("mcp")
        servers = mcp.get("servers") if isinstance(mcp, dict) else doc.get("mcp.servers")
    else:
        servers = doc.get(candidate.key)
    return servers if isinstance(servers, dict) else {}


def discover(
    cwd: Path | None = None, home: Path | None = None, *, sources: list[str] | None = None
) -> tuple[list[Found], list[Problem]]:
    """Every server other clients configure, in resolution order (later duplicates of a
    name included); each project file's servers with that file's trust status."""
    if not enabled():
        return [], []
    home = home or _home()
    reader = _Reader()
    store: TrustStore | None = None
    found: list[Found] = []
    for candidate in candidate_files(cwd, home):
        if sources is not None and candidate.source not in sources:
            continue
        doc = reader.load(candidate)
        if doc is None:
            continue
        servers = _servers(doc, candidate)
        status = "user"
        if candidate.scope == "project" and servers:
            store = store or TrustStore()
            status = store.status(candidate.path, digest(servers))
        where = f"{SOURCES[candidate.source]} ({candidate.path})"
        for name, raw in servers.items():
            if candidate.source == "vscode":
                raw = vscode_variables(raw, candidate.workspace, home)
            raw = translate(candidate.source, raw)
            if raw is None:
                continue
            try:
                entry = normalize_entry(str(name), raw, source=where)
            except ConfigError as exc:
                reader.problems.append(Problem(candidate.source, candidate.path, exc.message))
                continue
            if isinstance(raw, dict) and raw.get("disabled") is True:
                continue
            found.append(Found(entry, candidate.source, candidate.path, candidate.scope, status))
    return found, reader.problems


def first_definitions(found: list[Found]) -> list[Found]:
    """The definition each name resolves to: its first, in `discover`'s order."""
    seen: dict[str, Found] = {}
    for item in found:
        seen.setdefault(item.entry.name, item)
    return list(seen.values())


def lookup(name: str) -> Found | None:
    """The definition of `name` in other clients' configs (its first), or None. The
    caller decides whether it may run (`Found.needs_consent`)."""
    found, _ = discover()
    for item in found:
        if item.entry.name == name:
            return item
    return None


def names() -> list[str]:
    """Names of every discovered server, first occurrence first (untrusted ones too: a
    name is no command, and `--project` may use them)."""
    found, _ = discover()
    return [item.entry.name for item in first_definitions(found)]


@dataclass
class ProjectFile:
    """A project file that defines servers, as `mcp servers trust` sees it."""

    source: str
    path: Path
    #: The names of its servers (every entry, whatever we make of it).
    servers: list[str]
    #: `trust.digest` of its servers: what trusting it records.
    digest: str
    trust: str

    @property
    def label(self) -> str:
        return SOURCES.get(self.source, self.source)


def project_files(path: Path | None = None) -> list[ProjectFile]:
    """The project files that define servers, read from the current directory up (or at
    `path`: that file, or the ones in that directory), each with its trust status."""
    reader = _Reader()
    store = TrustStore()
    out: list[ProjectFile] = []
    for candidate in _project_candidates_of(path):
        doc = reader.load(candidate)
        servers = _servers(doc, candidate) if doc is not None else {}
        if servers:
            sha = digest(servers)
            out.append(ProjectFile(candidate.source, candidate.path, [str(n) for n in servers], sha,
                                   store.status(candidate.path, sha)))
    return out


def _project_candidates_of(path: Path | None) -> list[Candidate]:
    if path is not None:
        return _candidates_at(path)
    home = _home()
    try:
        start = Path.cwd().resolve()
    except OSError:
        return []
    return [c for d in _project_dirs(start, home) for c in _project_candidates(d)]


def project_paths(path: Path | None = None) -> list[Path]:
    """The project files discovery reads from the current directory up (or at `path`:
    that file, or those in that directory), whether they exist or not: what
    `mcp servers untrust` forgets."""
    return [candidate.path for candidate in _project_candidates_of(path)]


def _candidates_at(path: Path) -> list[Candidate]:
    """The project candidates in directory `path` (a `.cursor` directory: the one in it),
    or the one that is file `path` (`.mcp.json` sits in its directory, `.cursor/mcp.json`
    one level down)."""
    path = Path(os.path.abspath(path))
    if path.is_dir():  # its own project files, or those it holds for its parent (`.vscode`)
        directory = path.resolve()
        inside = [c for c in _project_candidates(directory.parent) if c.path.parent == directory]
        return _project_candidates(directory) + inside
    for parent in (path.parent, path.parent.parent):
        try:
            relative = path.relative_to(parent)
            directory = parent.resolve()
        except (ValueError, OSError):
            continue
        for candidate in _project_candidates(directory):
            if candidate.path == directory / relative:
                return [candidate]
    return []
