"""`GatewayBackend`: several upstreams (and a tools.yaml's own content) as one Backend.

Names: an upstream's tools and prompts are served as `<prefix><name>`; the local
backend's unprefixed, and first when names collide. Resources and templates keep
their URIs; a read goes to the upstream that listed the URI, else to the one
whose template matches it, else to each upstream serving resources in turn until
one does not answer "not found".

Filtering is enforced here, not only in listings: a call is routed only through
the map of names this gateway listed (after `allow`/`deny`/`read_only`), and
only the upstream's own approved name is ever forwarded, so no spelling or
casing of a denied tool reaches the upstream; anything else is -32602, exactly
as an unknown tool.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any

import anyio
import anyio.abc

from mcpcli import __version__
from mcpcli.core.jsonrpc import INVALID_PARAMS
from mcpcli.core.tasks import task_support
from mcpcli.errors import McpCliError, RPCError
from mcpcli.relay.listings import Reruns
from mcpcli.server.backend import Backend, CallContext, ChangeListener, ResourceNotFound, TaskPolicy
from mcpcli.server.handoff import Relay
from mcpcli.toolsfile.model import Upstream
from mcpcli.toolsfile.watchdog import Watchdog

from .asking import DownstreamRoots, serving
from .link import Link, Unavailable
from .options import GatewayOptions
from .passing import Passed, pass_through, tool_error
from .rules import tool_allowed

__all__ = ["GatewayBackend"]

log = logging.getLogger("mcpcli.gateway")

JSON = dict[str, Any]

#: JSON-RPC codes upstreams use for "no such resource" (2025: -32002; 2026: -32602).
_NOT_FOUND_CODES = (-32002, INVALID_PARAMS)


def _template_regex(template: str) -> re.Pattern[str]:
    """An RFC 6570 template as a regex: `{x}` one path segment, `{+x}`/`{/x*}` etc. anything."""
    out: list[str] = []
    pos = 0
    for match in re.finditer(r"\{([^}]*)\}", template):
        out.append(re.escape(template[pos:match.start()]))
        expr = match.group(1)
        out.append("[^/?#]*" if expr[:1].isalnum() or expr[:1] == "_" else ".*")
        pos = match.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out) + r"\Z")


class GatewayBackend:
    """Serves upstream MCP servers (and optionally a local backend) as one server.

    Use as an async context manager: entering starts the links' task group (and,
    with `options.eager`, connects every upstream); leaving stops every upstream.
    """

    def __init__(
        self,
        upstreams: Sequence[Upstream],
        *,
        local: Backend | None = None,
        options: GatewayOptions | None = None,
        watchdog: Watchdog | None = None,
        identity: JSON | None = None,
    ) -> None:
        self.options = options or GatewayOptions()
        self.local = local
        #: The served tools.yaml's serverInfo, when the gateway serves a file (its
        #: `server.name`, else the file's name) and the file has nothing local to say it.
        self._identity = identity
        #: Ends the stdio upstreams' process groups if the gateway is killed; a nested
        #: gateway shares its outer gateway's (one helper process, closed by its owner).
        self._owns_watchdog = watchdog is None
        self._watchdog = watchdog or Watchdog()
        #: The stdio client's roots, as the links learn them (see `mcpcli.gateway.asking`).
        self._roots = DownstreamRoots()
        self.links = [Link(up, self.options, self._on_link_event, self._watchdog, self._roots, GatewayBackend)
                      for up in upstreams]
        self._listener: ChangeListener | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        #: Relists after an upstream's change, per (link, kind): one running, one pending.
        self._relists: Reruns[tuple[Link, str]] = Reruns(self._relist)
        #: Served name -> (link or None for local, upstream's name, served definition).
        self._tools: dict[str, tuple[Link | None, str, JSON]] = {}
        self._prompts: dict[str, tuple[Link | None, str]] = {}
        self._resource_owner: dict[str, Link | None] = {}
        self._templates: list[tuple[re.Pattern[str], str, Link | None]] = []
        #: Kind -> the link listings those maps were last built from (see `_stale`).
        self._built_from: dict[str, dict[Link, list[JSON]]] = {}
        self._collisions: set[tuple[str, str]] = set()
        self._declared: JSON = {}
        if local is not None:
            local.set_change_listener(self._on_local_change)

    # -- lifecycle ---------------------------------------------------------------------

    async def __aenter__(self) -> GatewayBackend:
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        for link in self.links:
            link.attach(tg)
        if self.options.eager:
            try:
                async with anyio.create_task_group() as starting:
                    for link in self.links:
                        starting.start_soon(self._connect_eagerly, link)
            except BaseException as exc:
                await self.__aexit__(type(exc), exc, exc.__traceback__)
                raise
        return self

    async def _connect_eagerly(self, link: Link) -> None:
        try:
            await link.ensure()
        except Unavailable:
            return  # the link warned; a later request tries again
        try:
            await self.list_tools()
        except RPCError as exc:  # a lone upstream's listing failed: it said so; serve on
            log.debug("gateway: listing at start: %s", exc)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        for link in self.links:
            link.close()
        tg, self._tg = self._tg, None
        if tg is None:
            return None
        tg.cancel_scope.cancel()
        try:
            return await tg.__aexit__(exc_type, exc, tb)
        finally:
            if self._owns_watchdog:
                self._watchdog.close()

    # -- identity ----------------------------------------------------------------------

    def server_info(self) -> JSON:
        if self.local is not None:
            return self.local.server_info()
        if self._identity is not None:
            return dict(self._identity)
        if len(self.links) == 1:
            return {"name": f"mcpcli gateway to {self.links[0].name}", "version": __version__}
        return {"name": "mcpcli gateway", "version": __version__}

    def instructions(self) -> str | None:
        parts = [self.local.instructions()] if self.local is not None else []
        parts += [link.instructions for link in self.links]
        text = "\n\n".join(p for p in parts if p)
        return text or None

    def capabilities(self) -> JSON:
        """What the local backend and the upstreams may serve (an upstream not yet
        connected counts as offering everything its entry lets through), and whatever
        was declared before."""
        caps: JSON = dict(self._declared)
        caps.update(self.local.capabilities() if self.local is not None else {})
        for link in self.links:
            if link.offers("tools"):
                caps.setdefault("tools", {})
            if link.upstream.prompts and link.offers("prompts"):
                caps.setdefault("prompts", {})
            if link.upstream.resources and link.offers("resources"):
                caps["resources"] = {"subscribe": True}
            if link.offers("completions"):
                caps.setdefault("completions", {})
        caps.setdefault("tasks", {})
        # Once declared, kept: a client told "prompts" at its handshake must not get
        # "method not found" once the upstream turns out to have none (it lists nothing).
        self._declared = caps
        return caps

    def set_change_listener(self, listener: ChangeListener | None) -> None:
        self._listener = listener

    def _announce(self, kind: str, uri: str | None = None) -> None:
        if self._listener is not None:
            self._listener(kind, uri)

    def _on_local_change(self, kind: str, uri: str | None) -> None:
        if kind == "tools":
            self._tools = {}
        self._announce(kind, uri)

    def _on_link_event(self, link: Link, kind: str, detail: str | None) -> None:
        if kind == "resource":
            self._announce(kind, detail)
            return
        if self._tg is not None:
            # A burst of changes: one relist running per upstream and kind, and one more after it.
            self._relists.request(self._tg, (link, kind), detail == "announced")

    @property
    def relisting(self) -> int:
        """How many relists (after an upstream's change) are running."""
        return len(self._relists)

    async def _relist(self, key: tuple[Link, str], announced: bool) -> None:
        """List `kind` again and announce it when what clients see changed, or when the
        upstream announced a change we cannot see (passed on as a transparent proxy would).
        A change only to what the filter hides is not announced."""
        link, kind = key
        lister = {"tools": self.list_tools, "prompts": self.list_prompts,
                  "resources": self.list_resources}[kind]
        before = self._view(kind)
        try:
            await lister()
        except Exception as exc:
            # Nothing new to show: a client told "changed" would only list the same again.
            log.debug("gateway: relisting %s: %s", kind, exc)
            return
        seen_change = self._view(kind) != before
        unseen_change = announced and link.previous.get(kind) == getattr(link, kind)
        if seen_change or unseen_change:
            self._announce(kind)

    def _view(self, kind: str) -> Any:
        if kind == "tools":
            return {name: entry[2] for name, entry in self._tools.items()}
        if kind == "prompts":
            return dict(self._prompts)
        return dict(self._resource_owner)

    # -- tools -------------------------------------------------------------------------

    async def _gather(self, kind: str, wanted: Sequence[Link]) -> dict[int, list[JSON]]:
        """Every link's listing of `kind`, fetched concurrently. With other sources to
        answer for, one that takes longer than `options.list_wait` (a server still
        starting) is left out of this answer (or its last listing used); when it arrives,
        clients are told the list changed."""
        out: dict[int, list[JSON]] = {}
        if not wanted:
            return out
        tg = self._tg
        answered = False
        all_in = anyio.Event()

        async def one(index: int, link: Link) -> None:
            try:
                listing = await link.listing(kind)
            except Exception as exc:  # pragma: no cover - listing() reports its own failures
                log.debug("gateway: listing %s of %s: %s", kind, link.name, exc)
                listing = []
            if answered:  # too late for that answer: list again, announce what changed
                if link.trouble(kind) is None:  # a late failure changes nothing: no re-list
                    self._on_link_event(link, "resources" if kind == "templates" else kind, None)
                return
            out[index] = listing
            if len(out) == len(wanted):
                all_in.set()

        # Alone, an upstream holds up nobody: wait for it (a server started by npx may
        # take a while the first time, and a one-shot client would list nothing).
        if tg is None or (len(wanted) == 1 and self.local is None):
            async with anyio.create_task_group() as inner:
                for index, link in enumerate(wanted):
                    inner.start_soon(one, index, link)
            return out
        for index, link in enumerate(wanted):
            tg.start_soon(one, index, link)
        with anyio.move_on_after(self.options.list_wait):
            await all_in.wait()
        answered = True
        for index, link in enumerate(wanted):
            if index not in out:
                out[index] = getattr(link, kind) or []
        return out

    async def list_tools(self) -> list[JSON]:
        served: dict[str, tuple[Link | None, str, JSON]] = {}
        if self.local is not None and "tools" in self.local.capabilities():
            for tool in await self.local.list_tools():
                served.setdefault(tool["name"], (None, tool["name"], tool))
        listings = await self._gather("tools", self.links)
        self._built(self.links, "tools", listings)
        for index, link in enumerate(self.links):
            for tool in listings.get(index, []):
                if not tool_allowed(tool.get("name"), tool.get("annotations"), link.upstream.tools):
                    continue
                name = link.upstream.prefix + tool["name"]
                if name in served:
                    self._collision("tool", name, link)
                    continue
                served[name] = (link, tool["name"], {**tool, "name": name})
        self._tools = served
        self._sole_upstream_trouble("tools", self.links, served)
        return [entry[2] for entry in served.values()]

    def _sole_upstream_trouble(self, kind: str, links: Sequence[Link], served: Any) -> None:
        """A gateway to one upstream (`--proxy`) whose listing failed says why, naming
        the upstream, rather than serve an empty list as if it had nothing. (With several
        sources the others' lists are served; the log says what is missing.)"""
        if self.local is not None or len(self.links) != 1 or len(links) != 1 or served:
            return
        why = links[0].trouble(kind)
        if why is not None:
            raise RPCError(-32603, why)

    def _trouble(self, kind: str, links: Sequence[Link]) -> str | None:
        """Why a name may be unknown only because an upstream could not list `kind`."""
        for link in links:
            why = link.trouble(kind)
            if why is not None:
                return why
        return None

    def _collision(self, kind: str, name: str, link: Link) -> None:
        """Two sources serve one name: the first wins; the operator hears of it once."""
        if (kind, name) in self._collisions:
            return
        self._collisions.add((kind, name))
        if self.options.warn is not None:
            self.options.warn(f"upstream {link.name}: {kind} {name!r} is already served by an "
                              "earlier entry; give this upstream a prefix")

    async def _tool(self, name: str) -> tuple[Link | None, str, JSON] | None:
        entry = self._tools.get(name)
        if entry is None and self._stale("tools"):
            try:
                await self.list_tools()
            except RPCError:
                return None  # a lone upstream's failed listing: the caller says why
            entry = self._tools.get(name)
        return entry

    def _built(self, links: Sequence[Link], kind: str, listings: dict[int, list[JSON]]) -> None:
        """Remember which listing of each link what we serve of `kind` is made from."""
        self._built_from[kind] = {link: listings[index] for index, link in enumerate(links) if index in listings}

    def _stale(self, kind: str) -> bool:
        """Whether an upstream's `kind` listing may have changed since we last listed (so an
        unknown name is worth a fresh look; otherwise it is simply unknown): a link has none
        since its last change, or holds a newer one than we serve from (a re-list under
        way has stored it at the link and not yet here)."""
        if self.local is not None and kind == "tools" and not self._tools:
            return True
        built = self._built_from.get(kind, {})
        return any(getattr(link, kind) is None or getattr(link, kind) is not built.get(link)
                   for link in self.links)

    def task_policy(self, name: str) -> TaskPolicy | None:
        entry = self._tools.get(name)
        if entry is None:
            return None
        link, original, definition = entry
        if link is None:
            policy = getattr(self.local, "task_policy", None)
            return policy(original) if policy is not None else None
        support = task_support(definition)
        return TaskPolicy(support=support) if support != "forbidden" else None

    def pass_call(self, name: str, arguments: JSON, ctx: CallContext, relay: Relay) -> Passed | None:
        """An upstream tool's plain call, passed through whole (None: called as usual)."""
        entry = self._tools.get(name)
        return pass_through(entry, arguments, ctx, relay) if entry is not None else None

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        with serving(ctx):
            return await self._call_tool(name, arguments, ctx)

    async def _call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        entry = await self._tool(name)
        if entry is None:
            why = self._trouble("tools", self.links)
            if why is not None:  # perhaps that upstream's tool: say why it cannot be called
                return tool_error(why)
            raise RPCError(INVALID_PARAMS, f"Unknown tool: {name}")
        link, original, _definition = entry
        if link is None:
            assert self.local is not None
            return await self.local.call_tool(original, arguments, ctx)
        return await link.call_tool(original, arguments, ctx)

    # -- prompts -----------------------------------------------------------------------

    def _prompt_links(self) -> list[Link]:
        return [link for link in self.links if link.upstream.prompts and link.offers("prompts")]

    async def list_prompts(self) -> list[JSON]:
        served: dict[str, tuple[Link | None, str]] = {}
        out: list[JSON] = []
        if self.local is not None and "prompts" in self.local.capabilities():
            for prompt in await self.local.list_prompts():
                served.setdefault(prompt["name"], (None, prompt["name"]))
                out.append(prompt)
        links = self._prompt_links()
        listings = await self._gather("prompts", links)
        self._built(links, "prompts", listings)
        for index, link in enumerate(links):
            for prompt in listings.get(index, []):
                name = prompt.get("name")
                if not isinstance(name, str):
                    continue
                if link.upstream.prefix + name in served:
                    self._collision("prompt", link.upstream.prefix + name, link)
                    continue
                served[link.upstream.prefix + name] = (link, name)
                out.append({**prompt, "name": link.upstream.prefix + name})
        self._prompts = served
        self._sole_upstream_trouble("prompts", links, out)
        return out

    async def _prompt(self, name: str) -> tuple[Link | None, str]:
        entry = self._prompts.get(name)
        if entry is None and (not self._prompts or self._stale("prompts")):
            await self.list_prompts()
            entry = self._prompts.get(name)
        if entry is None:
            why = self._trouble("prompts", self._prompt_links())
            if why is not None:
                raise RPCError(-32603, why)
            raise RPCError(INVALID_PARAMS, f"Unknown prompt: {name}")
        return entry

    async def get_prompt(self, name: str, arguments: dict[str, str], ctx: CallContext) -> JSON:
        with serving(ctx):
            return await self._get_prompt(name, arguments, ctx)

    async def _get_prompt(self, name: str, arguments: dict[str, str], ctx: CallContext) -> JSON:
        link, original = await self._prompt(name)
        if link is None:
            assert self.local is not None
            return await self.local.get_prompt(original, arguments, ctx)
        params: JSON = {"name": original}
        if arguments:
            params["arguments"] = arguments
        return await _forwarded(link, "prompts/get", params, ctx)

    # -- resources ---------------------------------------------------------------------

    def _resource_links(self) -> list[Link]:
        return [link for link in self.links if link.upstream.resources and link.offers("resources")]

    def _local_serves(self, what: str) -> bool:
        return self.local is not None and what in self.local.capabilities()

    async def list_resources(self) -> list[JSON]:
        owners: dict[str, Link | None] = {}
        out: list[JSON] = []
        if self._local_serves("resources"):
            assert self.local is not None
            for resource in await self.local.list_resources():
                owners.setdefault(resource.get("uri", ""), None)
                out.append(resource)
        links = self._resource_links()
        listings = await self._gather("resources", links)
        self._built(links, "resources", listings)
        for index, link in enumerate(links):
            for resource in listings.get(index, []):
                uri = resource.get("uri")
                if isinstance(uri, str) and uri not in owners:
                    owners[uri] = link
                    out.append(resource)
        self._resource_owner = owners
        self._sole_upstream_trouble("resources", links, out)
        return out

    async def list_resource_templates(self) -> list[JSON]:
        templates: list[tuple[re.Pattern[str], str, Link | None]] = []
        out: list[JSON] = []
        if self._local_serves("resources"):
            assert self.local is not None
            for template in await self.local.list_resource_templates():
                text = template.get("uriTemplate", "")
                templates.append((_template_regex(text), text, None))
                out.append(template)
        links = self._resource_links()
        listings = await self._gather("templates", links)
        self._built(links, "templates", listings)
        for index, link in enumerate(links):
            for template in listings.get(index, []):
                text = template.get("uriTemplate")
                if isinstance(text, str):
                    templates.append((_template_regex(text), text, link))
                    out.append(template)
        self._templates = templates
        return out

    async def _owners(self, uri: str) -> list[Link | None]:
        """Who may serve `uri`, most likely first (None is the local backend)."""
        if uri not in self._resource_owner and (not self._resource_owner or self._stale("resources")):
            await self.list_resources()
        if uri in self._resource_owner:
            return [self._resource_owner[uri]]
        if not self._templates or self._stale("templates"):
            await self.list_resource_templates()
        for pattern, _text, owner in self._templates:
            if pattern.match(uri):
                return [owner]
        candidates: list[Link | None] = [None] if self._local_serves("resources") else []
        return candidates + list(self._resource_links())

    async def read_resource(self, uri: str, ctx: CallContext) -> JSON:
        with serving(ctx):
            return await self._read_resource(uri, ctx)

    async def _read_resource(self, uri: str, ctx: CallContext) -> JSON:
        for owner in await self._owners(uri):
            try:
                if owner is None:
                    assert self.local is not None
                    return await self.local.read_resource(uri, ctx)
                return await _forwarded(owner, "resources/read", {"uri": uri}, ctx)
            except ResourceNotFound:
                continue
            except RPCError as exc:
                if exc.code not in _NOT_FOUND_CODES:
                    raise
        links = self._resource_links()
        why = self._trouble("resources", links) or self._trouble("templates", links)
        if why is not None:
            raise RPCError(-32603, why)
        raise ResourceNotFound(uri)

    async def subscribe_resource(self, uri: str) -> None:
        """A downstream client subscribed to `uri`: follow it on the upstream(s) serving it."""
        for owner in await self._owners(uri):
            if owner is not None:
                await owner.subscribe(uri)

    async def unsubscribe_resource(self, uri: str) -> None:
        for owner in await self._owners(uri):
            if owner is not None:
                owner.unsubscribe(uri)

    # -- completion and logging ----------------------------------------------------------

    async def complete(self, ref: JSON, argument: JSON, context: JSON) -> JSON:
        link: Link | None
        upstream_ref = dict(ref)
        if ref.get("type") == "ref/prompt":
            link, original = await self._prompt(str(ref.get("name")))
            upstream_ref["name"] = original
        else:
            uri = str(ref.get("uri", ""))
            if not self._templates:
                await self.list_resource_templates()
            owner = [o for _p, text, o in self._templates if text == uri]
            if not owner:
                owner = (await self._owners(uri))[:1]
            if not owner:
                raise RPCError(INVALID_PARAMS, f"Unknown resource: {uri}")
            link = owner[0]
        if link is None:
            assert self.local is not None
            return await self.local.complete(ref, argument, context)
        params: JSON = {"ref": upstream_ref, "argument": argument}
        if context:
            params["context"] = context
        if not link.offers("completions"):
            return {"completion": {"values": []}}
        return await _forwarded(link, "completion/complete", params, None)

    def client_ready(self, transport: str, capabilities: JSON,
                     ask: Callable[[str, JSON], Awaitable[JSON]]) -> None:
        """A legacy client initialized (the runtime says): the one client of a stdio gateway
        is asked for its roots when an upstream asks outside any call."""
        self._roots.attach(transport, capabilities, ask)

    def roots_changed(self) -> None:
        """A downstream client's `notifications/roots/list_changed` (the runtime passes it on):
        each upstream that was told roots gets the new ones with the next call."""
        self._roots.changed()

    async def set_log_level(self, level: str) -> None:
        """A downstream `logging/setLevel`: upstream messages outside a call are logged from
        `level` up (within a call each client's own level filters them, in `ctx.log`)."""
        for link in self.links:
            link.set_log_level(level)


async def _forwarded(link: Link, method: str, params: JSON, ctx: CallContext | None) -> JSON:
    """One request to an upstream; an unreachable upstream is an internal error naming it."""
    try:
        return await link.request(method, params, ctx)
    except RPCError:
        raise
    except McpCliError as exc:  # Unavailable, a TransportError, ...
        raise RPCError(-32603, f"upstream {link.name}: {exc}") from None

