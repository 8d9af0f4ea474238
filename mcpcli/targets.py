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
from collections.abc import Mapping, Sequence
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


def resolve_target(target: str | None, command: Sequence[str], config: Config) -> ServerEntry:
    """Turn the TARGET argument (or the `--` command) into a server entry."""
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
    if is_url(target):
        return ServerEntry(name=target, url=target, transport="http", source="argv")
    entry = config.get(target)
    if entry is not None:
        return entry
    if target.endswith(YAML_SUFFIXES) or (os.sep in target and os.path.isfile(target)):
        if not os.path.isfile(target):
            raise ConfigError(f"no such file: {target}")
        return ServerEntry(name=target, transport="yaml", path=target, source="argv")
    found = _discovered(target, config)
    if found is not None:
        return found
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
