"""Tools a server offers only to clients that declare a capability this one did not.

Servers may list a tool only for clients that can serve it: server-everything offers
`trigger-sampling-request` to clients declaring sampling, `trigger-url-elicitation-request`
to those declaring URL-mode elicitation and `get-roots-list` to those declaring roots.
A command that declared none of them (`mcp` declares a capability only when it will
answer it) sees an unknown tool. To say so, a second connection declares what the
command's did not and lists the tools: it only lists (a request the server makes on it
is refused, roots are an empty list), uses stored sign-ins only, shows nothing of the
server's (stderr, log messages, `--trace`, `--record`) and is bounded by `PROBE_LIMIT`.
Anything that goes wrong there leaves the command's own answer as it was.

A session's capabilities are its daemon's (`mcp session open`), so `@NAME` targets and
keepAlive servers are never probed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import anyio

from mcpcli.client import ClientFeatures, ClientOptions
from mcpcli.config import ServerEntry
from mcpcli.connect import ConnectOptions, connect
from mcpcli.errors import RPCError

__all__ = ["CAPABILITIES", "PROBE_LIMIT", "Hidden", "declare", "hidden_tools", "missing", "offered_to_all", "revealing"]

JSON = dict[str, Any]

#: Each capability a client may leave out: (what to call it, how a command declares it).
CAPABILITIES: dict[str, tuple[str, str]] = {
    "sampling": ("sampling", "--sampling-command CMD"),
    "elicitation.url": ("URL-mode elicitation", "a terminal on stdin and stderr"),
    "roots": ("roots", "--root DIR"),
}
#: How long a probe may take, at most (the command's --timeout when shorter).
PROBE_LIMIT = 10.0


@dataclass(frozen=True)
class Hidden:
    """Tools that appear only to a client declaring all of `capabilities` (keys of CAPABILITIES)."""

    capabilities: tuple[str, ...]
    tools: tuple[str, ...]

    def what(self) -> str:
        return " and ".join(CAPABILITIES[c][0] for c in self.capabilities)

    def how(self) -> str:
        return " and ".join(CAPABILITIES[c][1] for c in self.capabilities)


def missing(features: ClientFeatures) -> list[str]:
    """The capabilities `features` does not declare, in CAPABILITIES' order."""
    absent = {"sampling": features.sample is None, "elicitation.url": not features.elicit_url,
              "roots": features.roots is None}
    return [name for name in CAPABILITIES if absent[name]]


async def _refuse(params: JSON) -> JSON:
    raise RPCError(-32601, "this connection only lists tools")


def declare(features: ClientFeatures, capabilities: Iterable[str]) -> ClientFeatures:
    """`features` that also declare `capabilities`, answering nothing: sampling is refused,
    roots are none, URL-mode elicitation is declined (as elicitation already is)."""
    wanted = set(capabilities)
    return dataclasses.replace(
        features,
        sample=_refuse if "sampling" in wanted else features.sample,
        roots=[] if "roots" in wanted else features.roots,
        elicit_url=features.elicit_url or "elicitation.url" in wanted,
    )


def _probing(entry: ServerEntry, client_options: ClientOptions) -> list[str]:
    """What a probe may declare on top of the command's connection; none for a session."""
    if entry.transport == "session" or entry.keep_alive:
        return []
    return missing(client_options.features)


async def _names(entry: ServerEntry, options: ConnectOptions, client_options: ClientOptions,
                 capabilities: Iterable[str]) -> set[str] | None:
    """The tool names a client declaring `capabilities` too is offered; None if that failed."""
    quiet = dataclasses.replace(
        options, quiet=True, server_log=None, stderr=None, secrets=None,
        auth="none" if options.auth == "none" else "stored-only",
    )
    limit = min(PROBE_LIMIT, client_options.timeout or PROBE_LIMIT)
    probing = dataclasses.replace(
        client_options, features=declare(client_options.features, capabilities), on_notification=None,
        on_error=None, trace=None, timeout=limit, on_slow=None, note=None,
    )
    try:
        with anyio.fail_after(limit):
            async with connect(entry, quiet, probing) as client:
                listing = await client.list_tools()
    except Exception:  # a probe is an extra: whatever failed, the command's own answer stands
        return None
    tools = listing.get("tools")
    return {t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)} if (
        isinstance(tools, list)) else None


async def _each(entry: ServerEntry, options: ConnectOptions, client_options: ClientOptions,
                capabilities: list[str]) -> dict[str, set[str] | None]:
    """The tool names offered to a client declaring each capability alone, probed at once."""
    found: dict[str, set[str] | None] = {}

    async def one(capability: str) -> None:
        found[capability] = await _names(entry, options, client_options, [capability])

    async with anyio.create_task_group() as tg:
        for capability in capabilities:
            tg.start_soon(one, capability)
    return found


async def revealing(entry: ServerEntry, options: ConnectOptions, client_options: ClientOptions,
                    tool: str) -> tuple[str, ...] | None:
    """The capabilities whose declaration makes the server offer `tool` (one alone when one
    does, else all of those this connection left out); None when none does."""
    absent = _probing(entry, client_options)
    if not absent:
        return None
    names = await _names(entry, options, client_options, absent)
    if names is None or tool not in names:
        return None
    if len(absent) == 1:
        return tuple(absent)
    alone = await _each(entry, options, client_options, absent)
    found = tuple(c for c in absent if tool in (alone[c] or ()))
    return found[:1] or tuple(absent)


async def offered_to_all(entry: ServerEntry, options: ConnectOptions,
                         client_options: ClientOptions) -> set[str] | None:
    """The tool names offered to a client declaring every capability this one left out
    (the first step of `hidden_tools`, which a caller may start beside its own listing);
    None when there is nothing to declare, or the probe failed."""
    absent = _probing(entry, client_options)
    return await _names(entry, options, client_options, absent) if absent else None


async def hidden_tools(entry: ServerEntry, options: ConnectOptions, client_options: ClientOptions,
                       shown: Iterable[str], offered: set[str] | None = None) -> list[Hidden]:
    """The tools this connection was not offered (`shown` are those it was) that a client
    declaring more would be, grouped by the capability that reveals them; `offered` is
    `offered_to_all`'s answer when the caller has it already."""
    absent = _probing(entry, client_options)
    if not absent:
        return []
    names = offered if offered is not None else await _names(entry, options, client_options, absent)
    extra = (names or set()) - set(shown)
    if not extra:
        return []
    if len(absent) == 1:
        return [Hidden(tuple(absent), tuple(sorted(extra)))]
    alone = await _each(entry, options, client_options, absent)
    out = []
    for capability in absent:
        tools = extra & (alone[capability] or set())
        if tools:
            out.append(Hidden((capability,), tuple(sorted(tools))))
    rest = extra - {t for h in out for t in h.tools}
    if rest:
        out.append(Hidden(tuple(absent), tuple(sorted(rest))))
    return out
