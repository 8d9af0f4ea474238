"""Write one server into another client's config file, or take it out again.

`mcp servers install NAME --into CLIENT` and `mcp servers uninstall NAME --from
CLIENT`. The files are the user's, so an edit is as small as it can be: JSON
(and VS Code's and Zed's JSON with comments) is edited as text, one member
inserted, replaced or deleted, every other byte kept (`mcpcli.jsonedit`);
Codex's TOML gets one `[mcp_servers.NAME]` table added or removed, comments and
layout kept. Installing then uninstalling gives back the original bytes. Each
result is parsed again and compared with what was meant before anything is
written: an edit that would change anything else is refused, never written.
Writes are atomic (temp file, fsync, rename onto the real file behind a
symlink, mode kept) and the previous file is kept as `FILE.bak`. They hold an
exclusive lock on a sidecar (`.FILE.mcpcli-lock`), so concurrent installs take
turns, and rename only over what the change was planned on: a file changed
meanwhile (by another install, or by the client itself) gets the change
planned again on its new content, never a lost update.

Where each client's user-level file is and the shape it wants:

    claude-code     ~/.claude.json                      mcpServers  type stdio|http|sse
    claude-desktop  <config>/Claude/claude_desktop_config.json  mcpServers  stdio only
    cursor          ~/.cursor/mcp.json                  mcpServers  url (+headers)
    vscode          <config>/Code/User/mcp.json         servers     type stdio|http|sse
    windsurf        ~/.codeium/windsurf/mcp_config.json mcpServers  serverUrl
    codex           $CODEX_HOME/config.toml (~/.codex)  [mcp_servers.NAME]  url: Streamable HTTP
    gemini          ~/.gemini/settings.json             mcpServers  httpUrl (HTTP), url (SSE)
    zed             <xdg>/zed/settings.json             context_servers  source custom

`${VAR}` references in our config become the client's own syntax where it has
one (`${env:VAR}` for VS Code, Cursor and Windsurf; Codex's `env_vars`,
`bearer_token_env_var` and `env_http_headers`); where it has none the text is
copied and a warning says so.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpcli import files, jsonedit
from mcpcli.config import ServerEntry, edit_errors
from mcpcli.config_formats import loads_lenient, toml_loads
from mcpcli.errors import ConfigError, UsageError
from mcpcli.other_clients import SOURCES, app_config_dir, codex_dir, zed_settings
from mcpcli.text import SecretValues, entry_secrets

__all__ = ["CLIENTS", "Change", "client_entry", "plan_install", "plan_uninstall", "target_file"]

#: The clients `install` can write to.
CLIENTS = ("claude-code", "claude-desktop", "cursor", "vscode", "windsurf", "codex", "gemini", "zed")

JSON = dict[str, Any]

_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}")
#: Clients whose `cwd` setting we can write.
_HAS_CWD = {"vscode", "codex", "gemini"}
#: How each client spells an environment reference (None: it has none).
_ENV_STYLE = {
    "claude-code": "${VAR}", "gemini": "${VAR}",
    "vscode": "${env:VAR}", "cursor": "${env:VAR}", "windsurf": "${env:VAR}",
    "claude-desktop": None, "zed": None,
}


@dataclass(frozen=True)
class Target:
    client: str
    path: Path
    #: "json" (maybe with comments) or "toml".
    fmt: str
    #: The keys of the object that holds the servers (JSON).
    container: tuple[str, ...] = ()


def target_file(client: str, home: Path | None = None) -> Target:
    """The user-level file `client` keeps its servers in."""
    home = home or Path(os.path.expanduser("~"))
    app = app_config_dir(home)
    targets = {
        "claude-code": Target(client, home / ".claude.json", "json", ("mcpServers",)),
        "claude-desktop": Target(client, app / "Claude" / "claude_desktop_config.json", "json",
                                 ("mcpServers",)),
        "cursor": Target(client, home / ".cursor" / "mcp.json", "json", ("mcpServers",)),
        "vscode": Target(client, app / "Code" / "User" / "mcp.json", "json", ("servers",)),
        "windsurf": Target(client, home / ".codeium" / "windsurf" / "mcp_config.json", "json",
                           ("mcpServers",)),
        "codex": Target(client, codex_dir(home) / "config.toml", "toml"),
        "gemini": Target(client, home / ".gemini" / "settings.json", "json", ("mcpServers",)),
        "zed": Target(client, zed_settings(home), "json", ("context_servers",)),
    }
    if client not in targets:
        raise UsageError(f"unknown client {client!r}", hint="one of: " + ", ".join(CLIENTS))
    return targets[client]


# -- the entry in each client's shape -------------------------------------------------------


def _env_ref(value: str, client: str, warnings: list[str], what: str) -> str:
    """`${VAR}` in our syntax, in the client's own (or as is, with a warning)."""
    if "${" not in value:
        return value
    style = _ENV_STYLE.get(client)
    label = SOURCES.get(client, client)
    if style is None:
        warnings.append(f"{label} does not expand ${{VAR}} references: {what} is written as is")
        return value

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if default and style != "${VAR}":
            warnings.append(f"{label} has no ${{VAR:-default}}: the default of {name} in {what} is dropped")
        if style == "${VAR}":
            return f"${{{name}{default or ''}}}"
        return f"${{env:{name}}}"

    return _VAR.sub(replace, value)


def _refs(values: dict[str, str], client: str, warnings: list[str], what: str) -> dict[str, str]:
    return {k: _env_ref(v, client, warnings, f"{what} {k}") for k, v in values.items()}


def _codex_entry(entry: ServerEntry, warnings: list[str]) -> JSON:
    out: JSON = {}
    if entry.command is not None:
        out["command"] = entry.command
        if entry.args:
            out["args"] = list(entry.args)
        env: dict[str, str] = {}
        forwarded: list[str] = []
        for key, value in entry.env.items():
            match = _VAR.fullmatch(value)
            if match and match.group(1) == key and not match.group(2):
                forwarded.append(key)  # Codex passes these through from its own environment
            else:
                if "${" in value:
                    warnings.append(f"Codex does not expand ${{VAR}} in env values: env {key} is written as is")
                env[key] = value
        if env:
            out["env"] = env
        if forwarded:
            out["env_vars"] = forwarded
        if entry.cwd:
            out["cwd"] = entry.cwd
        return out
    if entry.transport == "sse":
        raise UsageError("Codex connects to Streamable HTTP servers only, not legacy SSE",
                         hint="give the server's Streamable HTTP URL instead")
    out["url"] = entry.url
    headers: dict[str, str] = {}
    env_headers: dict[str, str] = {}
    for key, value in entry.headers.items():
        match = _VAR.fullmatch(value)
        bearer = re.fullmatch(r"Bearer \$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}", value)
        if key.lower() == "authorization" and bearer:
            out["bearer_token_env_var"] = bearer.group(1)
        elif match and not match.group(2):
            env_headers[key] = match.group(1)
        else:
            if "${" in value:
                warnings.append(f"Codex cannot expand ${{VAR}} inside header {key}: it is written as is")
            headers[key] = value
    if headers:
        out["http_headers"] = headers
    if env_headers:
        out["env_http_headers"] = env_headers
    return out


def client_entry(entry: ServerEntry, client: str) -> tuple[JSON, list[str]]:
    """The entry as `client` writes it, and warnings about what could not be carried over."""
    warnings: list[str] = []
    label = SOURCES.get(client, client)
    if entry.transport not in ("stdio", "http", "sse") or (entry.command is None and entry.url is None):
        raise UsageError(f"{entry.name!r} is not a stdio or URL server; {label} cannot run it")
    secret = list(dict.fromkeys(where for where, v in entry_secrets(entry.to_json()) if "${" not in v))
    if secret:
        warnings.append(f"writing literal values of {', '.join(secret)} into {label}'s config; "
                        "prefer ${VAR} references")
    if client == "codex":
        return _codex_entry(entry, warnings), warnings
    out: JSON = {}
    if entry.command is not None:
        if client == "zed":
            out["source"] = "custom"
        if client in ("claude-code", "vscode"):
            out["type"] = "stdio"
        out["command"] = _env_ref(entry.command, client, warnings, "command")
        out["args"] = [_env_ref(a, client, warnings, "args") for a in entry.args]
        if entry.env:
            out["env"] = _refs(entry.env, client, warnings, "env")
        if entry.cwd:
            if client in _HAS_CWD:
                out["cwd"] = entry.cwd
            else:
                warnings.append(f"{label} has no working-directory setting: cwd {entry.cwd} is dropped")
        return out, warnings
    url = _env_ref(entry.url or "", client, warnings, "url")
    if client == "claude-desktop":
        raise UsageError("Claude Desktop's config file holds local (stdio) servers only",
                         hint="add a remote server in Claude Desktop under Settings > Connectors")
    if client in ("claude-code", "vscode"):
        out["type"] = "sse" if entry.transport == "sse" else "http"
        out["url"] = url
    elif client == "windsurf":
        out["serverUrl"] = url
    elif client == "gemini":
        out["url" if entry.transport == "sse" else "httpUrl"] = url
    elif client == "zed":
        out["source"] = "custom"
        out["url"] = url
    else:
        out["url"] = url
    if entry.headers:
        out["headers"] = _refs(entry.headers, client, warnings, "header")
    return out, warnings


# -- planning and applying a change ---------------------------------------------------------


@dataclass
class Change:
    """One file's before and after; nothing is written until `apply`."""

    client: str
    path: Path
    name: str
    before: str | None
    after: str
    replaced: bool = False
    warnings: list[str] = field(default_factory=list)
    #: The same change planned again on other text (the file changed since it was read).
    replan: Callable[[str | None], Change] | None = field(default=None, repr=False, compare=False)
    #: The file's server entries before and after (the client's own form): their secrets
    #: are redacted in `diff`.
    entries: list[Any] = field(default_factory=list)

    def diff(self) -> str:
        """The change as a unified diff, for a person: the entries' secrets redacted (as
        `mcp servers show` does), and any quoted bearer credential."""
        before = (self.before or "").splitlines(keepends=True)
        after = self.after.splitlines(keepends=True)
        lines = difflib.unified_diff(before, after, fromfile=str(self.path), tofile=str(self.path))
        secrets = SecretValues(v for e in self.entries if isinstance(e, dict) for _, v in entry_secrets(e))
        return "".join(secrets.scrub(line) if line.endswith("\n") else
                       secrets.scrub(line) + "\n\\ No newline at end of file\n" for line in lines)

    def apply(self) -> Path | None:
        """Write atomically, keeping the old file as FILE.bak; returns the backup's path.

        Under the file's lock (`files.locked_edit`), so concurrent `mcp servers install`s
        take turns; if the file is no longer what was planned on (another command or
        program changed it meanwhile), the change is planned again on what is there now.
        A write that fails (read-only or immutable directory, full disk, a file that keeps
        changing) is a `ConfigError` naming the file, and FILE itself is left as it was.
        """
        with edit_errors(self.path):
            return self._apply()
        raise AssertionError("unreachable")  # pragma: no cover - edit_errors raises or returns

    def _apply(self) -> Path | None:
        real = Path(os.path.realpath(self.path))
        real.parent.mkdir(parents=True, exist_ok=True)
        backup: Path | None = None

        def edit(data: bytes | None) -> bytes:
            text = _decode(self.path, data)
            if text != self.before:
                if self.replan is None:
                    raise files.ChangedMeanwhile(str(self.path))
                fresh = self.replan(text)
                self.before, self.after, self.replaced = fresh.before, fresh.after, fresh.replaced
                self.warnings = fresh.warnings
            return self.after.encode("utf-8")

        def keep(data: bytes, mode: int) -> None:
            nonlocal backup
            backup = real.with_name(real.name + ".bak")
            _write_backup(real, backup, data, mode)

        files.locked_edit(real, edit, before_replace=keep)
        return backup


def _write_backup(real: Path, backup: Path, data: bytes, mode: int) -> None:
    """Write `data` (what `real` held) to `backup` as a new file: a symlink or file already
    there is replaced, never written through (a planted FILE.bak -> ~/.bashrc must not be
    overwritten), and a directory there is refused rather than written into."""
    import stat

    try:
        st = backup.lstat()
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISDIR(st.st_mode):
            raise ConfigError(f"cannot back up {real}: {backup} is a directory; nothing was changed",
                              hint="move it aside and try again")
        backup.unlink()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(backup, flags, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _read(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ConfigError(f"{path} is a directory") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    return _decode(path, data)


def _decode(path: Path, data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text; mcp will not edit it") from None


def _cannot(path: Path, why: str) -> ConfigError:
    return ConfigError(f"cannot edit {path}: {why}",
                       hint="fix or move the file aside and try again; nothing was written")


def _load_json(text: str | None) -> Any:
    if text is None or not text.strip(" \t\r\n\ufeff"):
        return {}
    return loads_lenient(text.lstrip("\ufeff"))


def _dig(doc: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def _rest(doc: Any, keys: tuple[str, ...], name: str) -> Any:
    """A copy of `doc` without the member `name` under `keys`, containers left empty by that
    pruned: what an edit of that one entry must leave unchanged."""
    doc = json.loads(json.dumps(doc))
    holders = [doc]
    for key in keys:
        nxt = holders[-1].get(key) if isinstance(holders[-1], dict) else None
        if not isinstance(nxt, dict):
            return doc
        holders.append(nxt)
    holders[-1].pop(name, None)
    for depth in range(len(keys), 0, -1):
        if holders[depth] == {}:
            del holders[depth - 1][keys[depth - 1]]
    return doc


def _entries(before: Any, after: Any, container: tuple[str, ...]) -> list[Any]:
    """Every server entry of the file before and after a change: a diff's context lines may
    show any of them, so their secrets are all redacted in it."""
    found: list[Any] = []
    for doc in (before, after):
        servers = _dig(doc, container)
        if isinstance(servers, dict):
            found.extend(servers.values())
    return found


def _json_change(target: Target, name: str, value: JSON | None, text: str | None, force: bool) -> Change:
    path = target.path
    container = list(target.container)
    try:
        before_doc = _load_json(text)
        if value is None:
            after = jsonedit.remove_member(text or "", container, name)
            if after is None:
                raise UsageError(f"no server {name!r} in {path}")
            replaced = False
        else:
            current = _dig(before_doc, target.container)
            if isinstance(current, dict) and name in current and not force:
                raise UsageError(f"{name!r} is already in {path}", hint="use --force to replace it")
            after, replaced = jsonedit.set_member(text or "", container, name, value)
        after_doc = _load_json(after)
    except jsonedit.JsonEditError as exc:
        raise _cannot(path, str(exc)) from None
    except ValueError as exc:
        raise _cannot(path, f"not JSON ({exc})") from None
    if value is not None and _dig(after_doc, (*target.container, name)) != value:
        raise _cannot(path, "the edit would not give the intended entry")
    if _rest(after_doc, target.container, name) != _rest(before_doc, target.container, name):
        raise _cannot(path, "the edit would change other settings")
    return Change(target.client, path, name, text, after, replaced,
                  entries=_entries(before_doc, after_doc, target.container))


# TOML (Codex): each server is its own `[mcp_servers.NAME]` table, added or cut as lines.


def _header_path(line: str) -> list[str] | None:
    """The keys of a `[table]` header line, or None for any other line."""
    stripped = line.strip()
    if not stripped.startswith("[") or stripped.startswith("[["):
        return None
    try:
        doc: Any = toml_loads(stripped + "\n")
    except ValueError:
        return None
    keys: list[str] = []
    while isinstance(doc, dict) and len(doc) == 1:
        key, doc = next(iter(doc.items()))
        keys.append(key)
    return keys


def _blocks(lines: list[str]) -> list[tuple[int, int, list[str] | None]]:
    """(first line, end line, header keys) of each table; the part before any header first."""
    starts = [(0, None)] + [(i, keys) for i, line in enumerate(lines)
                            if (keys := _header_path(line)) is not None or line.lstrip().startswith("[[")]
    out = []
    for n, (start, keys) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        if n == 0 and end == 0 and len(starts) > 1:
            continue
        out.append((start, end, keys))
    return out


def _toml_block(name: str, value: JSON, nl: str) -> list[str]:
    import tomlkit

    table = tomlkit.table()
    for key, item in value.items():
        if isinstance(item, dict):
            inline = tomlkit.inline_table()
            inline.update(item)
            table[key] = inline
        else:
            table[key] = item
    servers = tomlkit.table(is_super_table=True)
    servers[name] = table
    doc = tomlkit.document()
    doc["mcp_servers"] = servers
    return [line + nl for line in tomlkit.dumps(doc).splitlines()]


def _is_blank(line: str) -> bool:
    return not line.strip()


def _cut_server(lines: list[str], name: str) -> list[str] | None:
    """`lines` without the server's table (and its sub-tables) and the blank line before it."""
    blocks = _blocks(lines)
    own = [(s, e) for s, e, keys in blocks if keys and keys[:2] == ["mcp_servers", name]]
    if not own:
        return None
    start, end = own[0][0], own[-1][1]
    while end > start and _is_blank(lines[end - 1]) and end < len(lines):
        end -= 1  # blank lines before the next table stay with it
    if end == len(lines):
        while end > start + 1 and _is_blank(lines[end - 1]):
            end -= 1
    if start > 0 and _is_blank(lines[start - 1]):
        start -= 1
    return lines[:start] + lines[end:]


def _toml_change(target: Target, name: str, value: JSON | None, text: str | None, force: bool) -> Change:
    path = target.path
    source = text or ""
    try:
        before_doc = toml_loads(source)
    except ValueError as exc:
        raise _cannot(path, f"not TOML ({exc})") from None
    servers = before_doc.get("mcp_servers")
    exists = isinstance(servers, dict) and name in servers
    nl = "\r\n" if "\r\n" in source else "\n"
    lines = source.splitlines(keepends=True)
    replaced = False
    if exists:
        if value is not None and not force:
            raise UsageError(f"{name!r} is already in {path}", hint="use --force to replace it")
        cut = _cut_server(lines, name)
        if cut is None:
            raise _cannot(path, f"{name!r} is not written as its own [mcp_servers.{name}] table")
        lines, replaced = cut, value is not None
    elif value is None:
        raise UsageError(f"no server {name!r} in {path}")
    if value is not None:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += nl
        block = _toml_block(name, value, nl)
        ours = [e for s, e, keys in _blocks(lines) if keys and keys[0] == "mcp_servers"]
        at = ours[-1] if ours else len(lines)
        while at > 0 and _is_blank(lines[at - 1]):
            at -= 1
        addition = ([nl] if at > 0 else []) + block
        lines = lines[:at] + addition + lines[at:]
    after = "".join(lines)
    try:
        after_doc = toml_loads(after)
    except ValueError as exc:
        raise _cannot(path, f"the edit would not be valid TOML ({exc})") from None
    if value is not None and _dig(after_doc, ("mcp_servers", name)) != value:
        raise _cannot(path, "the edit would not give the intended entry")
    if _rest(after_doc, ("mcp_servers",), name) != _rest(before_doc, ("mcp_servers",), name):
        raise _cannot(path, "the edit would change other settings")
    return Change(target.client, path, name, text, after, replaced,
                  entries=_entries(before_doc, after_doc, ("mcp_servers",)))


def plan_install(entry: ServerEntry, client: str, *, force: bool = False, home: Path | None = None) -> Change:
    """The change that writes `entry` into `client`'s file (UsageError on a duplicate)."""
    target = target_file(client, home)
    value, warnings = client_entry(entry, client)
    plan = _toml_change if target.fmt == "toml" else _json_change

    def replan(text: str | None) -> Change:
        change = plan(target, entry.name, value, text, force)
        change.warnings = list(dict.fromkeys(warnings))
        change.replan = replan
        return change

    return replan(_read(target.path))


def plan_uninstall(name: str, client: str, *, home: Path | None = None) -> Change:
    """The change that removes server `name` from `client`'s file (UsageError if absent)."""
    target = target_file(client, home)
    plan = _toml_change if target.fmt == "toml" else _json_change

    def replan(text: str | None) -> Change:
        if text is None:
            raise UsageError(f"no server {name!r} in {target.path} (the file does not exist)")
        change = plan(target, name, None, text, False)
        change.replan = replan
        return change

    return replan(_read(target.path))
