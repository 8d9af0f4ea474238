"""From the TARGET argument (or the server command after `--`) to a server entry.

A target is one of: `@NAME`, the live session NAME held by the session daemon; a
server name from the config (ours first, then the servers other clients have
configured); an `http(s)://` URL; a tools.yaml file, served in-process; or, with
no target, the server command given after `--`.

A name is looked up in our config, then in other clients' user files, then in the
project files found from the current directory up (`other_clients.discover`'s
order): a user's definition always wins. A name whose definition is in a project
file that is not trusted (`mcpcli.trust`) is refused with `UntrustedServer`, unless
the command was given --project (`Config.trust_project`): a cloned repository's
`.mcp.json` never runs a command because you ran `mcp` inside it. Kept apart
from `connect` so the CLI can resolve a target (and start a stdio server early)
before the client, anyio and the transports are imported: it imports only
`config` and `errors` (and `other_clients`, lazily).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from mcpcli.config import Config, ServerEntry
from mcpcli.errors import ConfigError, UntrustedServer, UsageError

if TYPE_CHECKING:
    from mcpcli.other_clients import Found
    from mcpcli.transports.spawn import Launch

__all__ = [
    "SESSION_PREFIX", "YAML_SUFFIXES", "consent_error", "is_session", "is_url", "resolve_target", "stdio_launch",
]

YAML_SUFFIXES = (".yaml", ".yml")
#: `@NAME` names a session (config names cannot start with `@`).
SESSION_PREFIX = "@"


#: A URL of a scheme other than http(s) (`ws://`, `file://`): not a target.
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
#: What runs a script of each suffix, for a hint that shows the command to give.
_RUNNERS = {".py": "python3 ", ".js": "node ", ".mjs": "node ", ".cjs": "node ", ".ts": "npx tsx ", ".sh": "sh "}


def _after_dashes(command: str) -> str:
    """How a command line gives a server command (the hints' default)."""
    return f"give the command after --: mcp tools list -- {command}"


def _runner(target: str) -> str | None:
    """For a TARGET that is an existing script or executable (not a tools.yaml file):
    what to put before it to run it ("" for an executable), else None."""
    if target.endswith(YAML_SUFFIXES) or not os.path.isfile(target):
        return None
    runner = _RUNNERS.get(os.path.splitext(target)[1].lower())
    if runner is not None:
        return runner
    if os.access(target, os.X_OK) and _starts_a_program(target):
        return "" if os.sep in target else "." + os.sep
    return None


def _starts_a_program(path: str) -> bool:
    """An executable's first bytes: a `#!` line or an ELF header (on some file systems
    every file has the execute bit, a tools.yaml file too)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return False
    return head.startswith(b"#!") or head == b"\x7fELF"


def is_url(target: str) -> bool:
    return target.startswith(("http://", "https://"))


def is_session(target: str | None) -> bool:
    return target is not None and target.startswith(SESSION_PREFIX)


def _discovered(name: str, config: Config) -> ServerEntry | None:
    """A server configured in another client (Claude, Cursor, VS Code...), if any; one
    of an untrusted project file only with the command's consent."""
    from mcpcli import other_clients

    found = other_clients.lookup(name)
    if found is None:
        return None
    if found.needs_consent and not config.trust_project:
        raise consent_error(found)
    return found.entry


def consent_error(found: Found) -> UntrustedServer:
    """The one refusal of a server whose project file is not trusted as it is now: it
    names the file and the two ways to consent."""
    import shlex

    from mcpcli.trust import CHANGED

    name = found.entry.name
    why = "changed since you trusted it" if found.trust == CHANGED else "a project file you have not trusted"
    return UntrustedServer(
        f"server {name!r} is defined only in {found.path} ({why}); nothing was run",
        hint=f"review it (`mcp servers show {shlex.quote(name)}`), then run "
             f"`mcp servers trust {shlex.quote(str(found.path))}`, or pass --project to use it for this command only",
    )


def resolve_target(target: str | None, command: Sequence[str], config: Config, *,
                   give_command: Callable[[str], str] = _after_dashes) -> ServerEntry:
    """Turn the TARGET argument (or the `--` command) into a server entry. A target
    that is a program or a URL of another scheme is refused with a hint showing the
    command to give instead, as `give_command` says it is given where the target came
    from (a command line; a tools.yaml's `servers:`)."""
    if command:
        if target is not None:
            raise UsageError(
                "give either a TARGET or a server command after --, not both",
                hint="mcp tools list -- npx -y @modelcontextprotocol/server-everything",
            )
        return ServerEntry(name=command[0], command=command[0], args=list(command[1:]), source="argv")
    if target is None:
        raise UsageError(
            "no server given",
            hint="name a configured server, a URL or a tools.yaml file, or put a command after --",
        )
    if is_session(target):
        name = target[len(SESSION_PREFIX):]
        if not name:
            raise UsageError("@ needs a session name", hint="`mcp session list` shows the open sessions")
        return ServerEntry(name=name, transport="session", source="session")
    scheme = _SCHEME.match(target)
    if scheme is not None and scheme[1].lower() in ("http", "https"):
        target = scheme[1].lower() + target[len(scheme[1]):]  # schemes are case-insensitive (RFC 3986)
        scheme = None
    if is_url(target):
        return ServerEntry(name=target, url=target, transport="http", source="argv")
    entry = config.get(target)
    if entry is not None:
        return entry
    if scheme is not None:
        raise UsageError(f"{target}: servers are reached over http:// or https://, not {scheme[1]}://",
                         hint=f"for a stdio server, {give_command('npx -y @modelcontextprotocol/server-everything')}")
    runner = _runner(target)
    if runner is not None:
        raise UsageError(f"{target} is a program, not a tools.yaml file or a server's name",
                         hint=f"to start it as a stdio server, {give_command(runner + shlex.quote(target))}")
    if target.endswith(YAML_SUFFIXES) or (os.sep in target and os.path.isfile(target)):
        if not os.path.isfile(target):
            raise ConfigError(f"no such file: {target}")
        return ServerEntry(name=target, transport="yaml", path=target, source="argv")
    found = _discovered(target, config)
    if found is not None:
        return found
    if os.sep not in target and shutil.which(target) is not None:
        raise UsageError(f"unknown server {target!r}; there is a program of that name",
                         hint=f"to start it as a stdio server, {give_command(shlex.quote(target) + ' ARGS...')}")
    known = config.names()
    from mcpcli import other_clients

    known += [n for n in other_clients.names() if n not in known]
    hint = (
        "known servers: " + ", ".join(sorted(known))
        if known
        else "add one with `mcp servers add NAME -- COMMAND...` or `mcp servers add NAME URL`"
    )
    raise UsageError(f"unknown server {target!r}", hint=hint)


def stdio_launch(entry: ServerEntry, env: Mapping[str, str | None], cwd: str | None) -> Launch:
    """What a stdio entry runs, given the --env (`env`) and --cwd options.

    The one place an entry and the options become a launch: the CLI's early
    start of the server and the transport that adopts it must agree exactly.
    Raises `UsageError` for `--env KEY` naming a variable we do not have, and
    `ConfigError` for a `${VAR}` in the entry that is not set.
    """
    from mcpcli.transports.spawn import UnsetVariable, launch

    entry = entry.resolved()
    if entry.transport != "stdio" or entry.command is None:
        raise ConfigError(f"server {entry.name!r} is not a stdio server")
    try:
        return launch(entry.command, entry.args, entry.env, entry.cwd, passed=env, cwd_option=cwd)
    except UnsetVariable as exc:
        raise UsageError(str(exc)) from None
