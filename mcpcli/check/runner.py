"""One `mcp check` run: connect, probe every era the server claims, lint, call, report.

The caller hands in how to connect (`Connect`: a client for a forced protocol
version, or negotiated, with a `Traffic` tracer wired in) so this package never
learns about targets, config or transports. The first connection is the one a
client would make; a failure there means the server cannot be checked at all and
is raised (exit 4). Every era the server claims is then checked on its own
connection: a 2026-07-28 server whose `server/discover` lists legacy versions must
also answer `initialize` with one, and one that lists none is tried anyway (a
failure there is no fault). Lint, model-provider rules and tool calls run once,
on the first connection's listing.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import TYPE_CHECKING

from mcpcli.check.calls import check_calls
from mcpcli.check.findings import Report
from mcpcli.check.lint import lint_prompts, lint_resources, lint_tools
from mcpcli.check.protocol_checks import CheckOptions, ConnectionLost, Listing, Probe
from mcpcli.check.providers import check_providers
from mcpcli.check.traffic import Traffic
from mcpcli.core.protocol import LEGACY_VERSIONS, MODERN_VERSIONS, era_of, pick_version
from mcpcli.errors import (
    AuthError,
    McpCliError,
    RequestTimeout,
    RPCError,
    TransportError,
    UsageError,
    unwrap,
)

if TYPE_CHECKING:
    from mcpcli.client import Client

__all__ = ["Connect", "run_check"]

#: A connected client for `protocol` (None: negotiate), tracing into the `Traffic`.
Connect = Callable[[str | None, Traffic], AbstractAsyncContextManager["Client"]]


async def run_check(connect: Connect, options: CheckOptions, *, protocol: str | None = None,
                    other_eras: bool = True) -> Report:
    """Check the server; `protocol` pins one version (and so one era) as `--protocol` does."""
    report = Report()
    async with AsyncExitStack() as stack:
        traffic = Traffic()
        try:
            client = await stack.enter_async_context(connect(protocol, traffic))
        except Exception as exc:  # a task group's ExceptionGroup too
            inner = unwrap(exc)
            if isinstance(inner, (RPCError, RequestTimeout)):
                # The server cannot be checked at all: exit 4, whatever the handshake said.
                raise TransportError(f"cannot connect: {inner.message}", hint=inner.hint) from None
            raise inner from None
        report.server = _server_facts(client)
        await _probe_era(report, client, options, traffic, primary=True)
        claimed = list(client.supported_versions)
        eras = [f"{client.era} {client.protocol_version}"]
    if protocol is None and other_eras and eras[0].startswith("modern"):
        checked = await _other_era(report, connect, options, claimed)
        if checked is not None:
            eras.append(f"legacy {checked}")
    report.server["checked"] = eras
    return report


def _server_facts(client: Client) -> dict[str, object]:
    info = client.server_info
    facts: dict[str, object] = {
        "name": info.get("name") if isinstance(info.get("name"), str) else None,
        "version": info.get("version") if isinstance(info.get("version"), str) else None,
        "protocolVersion": client.protocol_version,
        "era": client.era,
        "transport": client.transport.name,
    }
    if client.supported_versions:
        facts["supportedVersions"] = list(client.supported_versions)
    return facts


async def _probe_era(report: Report, client: Client, options: CheckOptions, traffic: Traffic, *,
                     primary: bool) -> Listing:
    """Every protocol check on one connection; on the first, lint, providers and calls too."""
    label = f"{client.era} {client.protocol_version}"
    probe = Probe(report, client, options, label)
    listing = Listing()
    try:
        probe.handshake()
        await probe.ping()
        listing = await probe.lists()
        await probe.unknown_method()
        await probe.unknown_tool(listing)
        await probe.completion(listing)
        await probe.logging()
        if primary:
            _lint(report, listing, client)
            if options.calls:
                await check_calls(probe, listing.tools)
    except ConnectionLost:
        if primary:
            _lint(report, listing, client)
    traffic.analyse(report, client.era, probe.check_id("notifications"))
    return listing


def _lint(report: Report, listing: Listing, client: Client) -> None:
    if "lint:tools" in report.checks:
        return
    modern = client.era == "modern" or any(era_of(v) == "modern" for v in client.supported_versions)
    lint_tools(report, listing.tools, revision=client.protocol_version, modern=modern)
    lint_prompts(report, listing.prompts)
    lint_resources(report, listing.resources, listing.templates)
    check_providers(report, listing.tools)


async def _other_era(report: Report, connect: Connect, options: CheckOptions, claimed: list[str]) -> str | None:
    """The legacy handshake of a 2026-07-28 server: required when it lists a legacy version.
    The version checked, or None when the server turned out to be 2026-07-28 only."""
    version = pick_version(claimed, prefer=LEGACY_VERSIONS)
    required = version is not None
    version = version or LEGACY_VERSIONS[0]
    check_id, title = "legacy:handshake", f"handshake (legacy {version})"
    traffic = Traffic()
    try:
        async with connect(version, traffic) as client:
            if client.protocol_version != version:
                report.add(check_id, "error", "version",
                           f"initialize asked for {version}, which server/discover lists, and the server "
                           f"answered {client.protocol_version} (it must answer with the version asked for "
                           "when it supports it)", title=title)
            await _probe_era(report, client, options, traffic, primary=False)
            return client.protocol_version
    except Exception as group:  # a task group's ExceptionGroup too
        exc = unwrap(group)
        if not isinstance(exc, McpCliError) or isinstance(exc, (UsageError, AuthError)):
            raise exc from None
        if required:
            listed = ", ".join(v for v in claimed if v not in MODERN_VERSIONS)
            report.add(check_id, "error", "connect",
                       f"server/discover lists {listed}, but the legacy handshake fails: {exc.message}",
                       title=title)
        else:
            report.skip(check_id, title, f"2026-07-28 only (initialize fails: {exc.message})")
        return None
