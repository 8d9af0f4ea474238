"""The protocol checks on one live connection: handshake, ping, lists, errors, capabilities.

A `Probe` holds one connected `Client` and the report; each check asks the server
what a client would and records what is wrong with the answer. Requests go out
raw (`Client.request`): pages are followed here, so a repeated cursor is seen, and
every result is checked as the server sent it against the negotiated revision.
A server that goes away ends the probe (`ConnectionLost`) with one finding; a
request that is not answered in time is one finding, and the next check runs.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcpcli.check.findings import Report
from mcpcli.check.shapes import Shapes
from mcpcli.core.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND
from mcpcli.core.protocol import TOOLS_CALL
from mcpcli.errors import ConnectionClosed, ProtocolError, RequestTimeout, RPCError, TransportError

if TYPE_CHECKING:
    from mcpcli.client import Client

__all__ = ["CheckOptions", "ConnectionLost", "Listing", "Probe"]

JSON = dict[str, Any]


@dataclass
class CheckOptions:
    """What `mcp check` does beyond reading: calls, bounds."""

    #: Call read-only tools that need no arguments (`--no-calls` turns it off).
    calls: bool = True
    #: Bound on `ping`'s answer, in seconds (also bounded by the client's --timeout).
    ping_timeout: float = 10.0
    #: Pages followed per list before giving up on it.
    max_pages: int = 100
    #: Tool calls run at once.
    concurrency: int = 4


@dataclass
class Listing:
    """What the server listed on one connection (for the lint, providers and calls)."""

    tools: list[Any] = field(default_factory=list)
    prompts: list[Any] = field(default_factory=list)
    resources: list[Any] = field(default_factory=list)
    templates: list[Any] = field(default_factory=list)


class ConnectionLost(Exception):
    """The server went away: the rest of this connection's checks cannot run."""


class NoAnswer(Exception):
    """A request got no usable answer; its finding is already recorded."""


#: The list endpoints: (check name, method, result key, capability, whether the capability may
#: leave it out: Python SDK 1.x servers declare resources but do not answer templates).
LISTS = (
    ("tools", "tools/list", "tools", "tools", False),
    ("prompts", "prompts/list", "prompts", "prompts", False),
    ("resources", "resources/list", "resources", "resources", False),
    ("resource-templates", "resources/templates/list", "resourceTemplates", "resources", True),
)


#: What each check asks, for its title.
TITLES = {
    "handshake": "handshake", "ping": "ping", "tools": "tools/list", "prompts": "prompts/list",
    "resources": "resources/list", "resource-templates": "resources/templates/list", "tasks": "tasks/list",
    "unknown-method": "an unknown method", "unknown-tool": "tools/call of an unknown tool",
    "completion": "completion/complete", "logging": "logging/setLevel",
    "notifications": "notifications and their order",
}


class Probe:
    """The checks of one era on one connection, each under a check id prefixed by the era."""

    def __init__(self, report: Report, client: Client, options: CheckOptions, label: str) -> None:
        self.report = report
        self.client = client
        self.options = options
        self.label = label  # "legacy 2025-11-25", "modern 2026-07-28"
        self.era = client.era
        self.revision = client.protocol_version
        self.shapes = Shapes(self.revision)

    def check_id(self, name: str) -> tuple[str, str]:
        """The id of one of this era's checks, and its title (what was asked, and of which era)."""
        return f"{self.era}:{name}", f"{TITLES.get(name, name)} ({self.label})"

    def flush(self, check_id: str, title: str, code: str = "result-shape") -> None:
        """Record the shape problems found so far under `check_id`."""
        for problem in self.shapes.problems:
            self.report.add(check_id, problem.severity, code, problem.message,  # type: ignore[arg-type]
                            problem.subject, title=title)
        self.shapes.problems.clear()

    async def ask(self, name: str, method: str, params: JSON | None = None, *,
                  timeout: float | bool | None = True) -> JSON:
        """Send one request; its result, or RPCError (the server's answer), or NoAnswer."""
        check_id, title = self.check_id(name)
        try:
            return await self.client.request(method, params, timeout=timeout)
        except RPCError:
            raise
        except RequestTimeout as exc:
            self.report.add(check_id, "error", "timeout", f"{method}: {exc.message}", title=title)
            raise NoAnswer from None
        except ProtocolError as exc:
            self.report.add(check_id, "error", "result-shape", f"{method}: {exc.message}", title=title)
            raise NoAnswer from None
        except (ConnectionClosed, TransportError) as exc:
            self.report.add(check_id, "error", "connection-lost", f"during {method}: {exc.message}", title=title)
            raise ConnectionLost(str(exc)) from None

    # -- the checks ---------------------------------------------------------------------

    def handshake(self) -> None:
        check_id, title = self.check_id("handshake")
        self.report.check(check_id, title)
        if self.era == "modern":
            self.shapes.discover_result(self.client.handshake)
        else:
            self.shapes.initialize_result(self.client.handshake)
        self.flush(check_id, title, "handshake-shape")

    async def ping(self) -> None:
        """`ping` (legacy revisions only; 2026-07-28 removed it), answered within the bound."""
        check_id, title = self.check_id("ping")
        if self.era != "legacy":
            return
        timeout = self.options.ping_timeout
        if self.client.options.timeout is not None:
            timeout = min(timeout, self.client.options.timeout)
        try:
            result = await self.client.peer.request("ping", None, timeout=timeout, progress_token=False)
        except RequestTimeout:
            self.report.add(check_id, "error", "ping", f"ping was not answered within {timeout:g}s", title=title)
            return
        except RPCError as exc:
            self.report.add(check_id, "error", "ping", f"ping was answered with an error: {exc.message}", title=title)
            return
        except ProtocolError as exc:
            self.report.add(check_id, "error", "ping", f"ping's answer cannot be read: {exc.message}", title=title)
            return
        except TransportError as exc:
            self.report.add(check_id, "error", "connection-lost", f"during ping: {exc.message}", title=title)
            raise ConnectionLost(str(exc)) from None
        self.report.check(check_id, title)
        self.shapes.result(result, "ping")
        self.flush(check_id, title, "ping")

    async def lists(self) -> Listing:
        listing = Listing()
        for name, method, key, capability, optional in LISTS:
            items = await self.pages(name, method, key, capability, optional=optional)
            setattr(listing, {"resource-templates": "templates"}.get(name, name), items or [])
        caps = self.client.capabilities.get("tasks")
        if self.era == "legacy" and self.revision >= "2025-11-25" and isinstance(caps, dict) and "list" in caps:
            await self.pages("tasks", "tasks/list", "tasks", "tasks")
        return listing

    async def pages(self, name: str, method: str, key: str, capability: str, *,
                    optional: bool = False) -> list[Any] | None:
        """Every page of one list, its cursors and its consistency with the capabilities."""
        check_id, title = self.check_id(name)
        declared = capability in self.client.capabilities
        items: list[Any] = []
        seen: set[str] = set()
        scopes: set[Any] = set()
        cursor: str | None = None
        for page in range(self.options.max_pages):
            try:
                result = await self.ask(name, method, {"cursor": cursor} if cursor is not None else None)
            except RPCError as exc:
                if page > 0:
                    self.report.add(check_id, "error", "list-failed",
                                    f"{method} failed on page {page + 1}: {exc.message}", title=title)
                elif exc.code == METHOD_NOT_FOUND and declared:
                    severity = "warning" if optional else "error"
                    self.report.add(check_id, severity, "capability",  # type: ignore[arg-type]
                                    f"the server declares {capability!r} but answers {method} with -32601 "
                                    "(method not found)", title=title)
                elif declared:
                    self.report.add(check_id, "error", "list-failed", f"{method}: {exc.message}", title=title)
                else:
                    self.report.skip(check_id, title, f"the server does not offer {capability}")
                    return None
                return items if page > 0 else None
            except NoAnswer:
                return items or None
            if page == 0 and not declared:
                self.report.add(check_id, "warning", "capability",
                                f"{method} answers, but the server does not declare the {capability!r} "
                                "capability: clients that follow the capabilities never ask", title=title)
            self.report.check(check_id, title)
            found = self.shapes.page(result, method, key)
            for i, item in enumerate(found or []):
                self._item(name, item, f"{method}[{len(items) + i}]")
            items.extend(found or [])
            if self.era == "modern" and isinstance(result, dict):
                scopes.add(result.get("cacheScope"))
            self.flush(check_id, title)
            nxt = result.get("nextCursor") if isinstance(result, dict) else None
            if not isinstance(nxt, str):
                break
            if nxt in seen or nxt == cursor:
                self.report.add(check_id, "error", "pagination",
                                f"{method}: cursor {nxt!r} came back on page {page + 1}: a client following "
                                "nextCursor would loop forever", title=title)
                break
            seen.add(nxt)
            cursor = nxt
        else:
            self.report.add(check_id, "warning", "pagination",
                            f"{method}: still a nextCursor after {self.options.max_pages} pages; stopped",
                            title=title)
        if len(scopes) > 1:
            self.report.add(check_id, "error", "pagination",
                            f"{method}: the pages have different cacheScopes ({', '.join(map(repr, scopes))}); "
                            "all pages of a list must have the same", title=title)
        return items

    def _item(self, name: str, item: Any, path: str) -> None:
        if name == "tools":
            self.shapes.tool(item, path)
        elif name == "prompts":
            self.shapes.prompt(item, path)
        elif name == "resources":
            self.shapes.resource(item, path)
        elif name == "resource-templates":
            self.shapes.resource(item, path, template=True)
        elif name == "tasks":
            self.shapes.task(item, path)

    async def unknown_method(self) -> None:
        """A method nobody defines is answered -32601 (JSON-RPC's "method not found")."""
        name = "unknown-method"
        check_id, title = self.check_id(name)
        method = f"mcpcli/no-such-method-{secrets.token_hex(4)}"
        self.report.check(check_id, title)
        try:
            await self.ask(name, method)
        except RPCError as exc:
            if exc.code != METHOD_NOT_FOUND:
                self.report.add(check_id, "error", "unknown-method",
                                f"an unknown method was answered with error {exc.code}, not -32601 (method not "
                                "found): clients cannot tell a missing feature", title=title)
            return
        except NoAnswer:
            return
        self.report.add(check_id, "error", "unknown-method",
                        f"the unknown method {method} was answered with a result, not the error -32601", title=title)

    async def unknown_tool(self, listing: Listing) -> None:
        """Calling a tool that does not exist is a protocol error (the spec's example: -32602)."""
        name = "unknown-tool"
        check_id, title = self.check_id(name)
        if "tools" not in self.client.capabilities:
            return
        known = {t.get("name") for t in listing.tools if isinstance(t, dict)}
        tool = f"mcpcli-no-such-tool-{secrets.token_hex(4)}"
        while tool in known:  # pragma: no cover - 32 random bits
            tool = f"mcpcli-no-such-tool-{secrets.token_hex(4)}"
        self.report.check(check_id, title)
        try:
            await self.ask(name, TOOLS_CALL, {"name": tool, "arguments": {}})
        except RPCError as exc:
            if exc.code != INVALID_PARAMS:
                self.report.add(check_id, "warning", "unknown-tool",
                                f"a call of an unknown tool was answered with error {exc.code}; the spec's answer "
                                "is -32602 (invalid params)", title=title)
            return
        except NoAnswer:
            return
        self.report.add(check_id, "warning", "unknown-tool",
                        "a call of an unknown tool was answered with a result (isError) instead of a JSON-RPC "
                        "error: the spec lists unknown tools among protocol errors", title=title)

    async def completion(self, listing: Listing) -> None:
        """With `completions` declared, completion/complete answers (tried on a prompt argument)."""
        name = "completion"
        check_id, title = self.check_id(name)
        if "completions" not in self.client.capabilities:
            return
        target = next(((p["name"], a["name"]) for p in listing.prompts if isinstance(p, dict)
                       and isinstance(p.get("name"), str) and isinstance(p.get("arguments"), list)
                       for a in p["arguments"] if isinstance(a, dict) and isinstance(a.get("name"), str)), None)
        if target is None:
            self.report.skip(check_id, title, "no prompt argument to complete")
            return
        params = {"ref": {"type": "ref/prompt", "name": target[0]}, "argument": {"name": target[1], "value": ""}}
        self.report.check(check_id, title)
        try:
            result = await self.ask(name, "completion/complete", params)
        except RPCError as exc:
            if exc.code == METHOD_NOT_FOUND:
                self.report.add(check_id, "error", "capability",
                                "the server declares 'completions' but answers completion/complete with -32601",
                                title=title)
            return
        except NoAnswer:
            return
        self.shapes.complete_result(result)
        self.flush(check_id, title)

    async def logging(self) -> None:
        """With `logging` declared (legacy revisions), logging/setLevel answers."""
        name = "logging"
        check_id, title = self.check_id(name)
        if self.era != "legacy" or "logging" not in self.client.capabilities:
            return
        self.report.check(check_id, title)
        try:
            result = await self.ask(name, "logging/setLevel", {"level": "error"})
        except RPCError as exc:
            severity = "error" if exc.code == METHOD_NOT_FOUND else "warning"
            self.report.add(check_id, severity, "capability",  # type: ignore[arg-type]
                            f"the server declares 'logging' but answers logging/setLevel with: {exc.message}",
                            title=title)
            return
        except NoAnswer:
            return
        self.shapes.result(result, "logging/setLevel")
        self.flush(check_id, title)
