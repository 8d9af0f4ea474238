"""The client's side of the protocol, without I/O: era choice, requests, rounds, pages.

`Exchange` holds what a connected client knows of its server (the era, the
negotiated revision, the server's capabilities and identity) and produces the flows
(`mcpcli.core.flow`) that every client drives: the anyio `Client` (commands, the
daemon, the gateway) and the synchronous one-shot client. Everything that decides
what goes on the wire is here once:

- the era: a forced revision, the legacy-only transports, a cached `server/discover`
  (HTTP) or a remembered legacy command line (stdio), the `server/discover` probe
  and its fallback to `initialize`, a stale cached era found out and renegotiated;
- each request in its era: a 2026-07-28 request's `_meta` (revision, identity,
  capabilities, the tasks extension where it may apply), a refused revision retried
  with one the server offers, and multi-round-trip input (MRTR) answered and retried;
- paging with its cycle guard.

What it remembers across runs goes through an `EraMemory` the driver hands in (the
on-disk cache in practice), so the core itself touches nothing.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Mapping
from typing import Any, Literal

from mcpcli.core import flags
from mcpcli.core.era import EraMemory, NoMemory, ProbeTraits, looks_legacy
from mcpcli.core.flow import Answer, Flow, ListTools, Notify, Send
from mcpcli.core.handshake import (
    Handshake,
    next_round,
    offered_versions,
    parse_discover,
    parse_initialize,
    request_meta,
    round_kind,
    version_of,
    with_meta,
)
from mcpcli.core.plain import Plain
from mcpcli.core.protocol import (
    ALL_VERSIONS,
    CLIENT_CAPABILITIES_KEY,
    HEADER_MISMATCH,
    LATEST_LEGACY,
    LATEST_MODERN,
    LEGACY_VERSIONS,
    MAX_INPUT_ROUNDS,
    MAX_PAGES,
    MODERN_VERSIONS,
    MRTR_METHODS,
    TOOLS_CALL,
    Era,
    era_of,
    input_requests,
    is_modern_error,
    pick_version,
)
from mcpcli.core.tasks import (
    DECLARE_ON,
    TASK_CREATING_METHODS,
    Task,
    TaskMode,
    server_accepts_tasks,
    should_augment,
    task_of,
    with_extension,
)
from mcpcli.errors import (
    ProtocolError,
    RequestTimeout,
    RPCError,
    ServerExited,
    TransportError,
    UnsupportedVersionError,
)

__all__ = ["Called", "Exchange", "ExitedOnProbe", "PageRepeat", "version_of"]



def _log(level: str, message: str, *args: Any) -> None:
    """Log through `mcpcli.client`'s logger when logging is in use: the one-shot fast path
    never imports it (about 4 ms, with threading), and there nothing would show anyway."""
    logging = sys.modules.get("logging")
    if logging is not None:
        getattr(logging.getLogger("mcpcli.client"), level)(message, *args)

JSON = dict[str, Any]

_task_tokens = itertools.count(1)


class ExitedOnProbe(Exception):
    """The server exited, or closed its stdout, on the era probe without answering it
    (rmcp servers end at a first message that is not `initialize`): the driver starts it
    again and runs `initialize_after_probe`."""

    def __init__(self, exited: ServerExited) -> None:
        super().__init__(exited.message)
        self.exited = exited


class Called(Plain):
    """What a `tools/call` came to: its result, the task it created (if any), and the
    progress token of a 2025-11-25 task we asked for (its progress outlives the call)."""

    __slots__ = ("progress_token", "result", "task")

    def __init__(self, result: JSON, task: Task | None = None, progress_token: str | None = None) -> None:
        self.result = result
        self.task = task
        self.progress_token = progress_token


class PageRepeat(ProtocolError):
    """A list's `nextCursor` came back a second time (raised only when asked to)."""


class Exchange:
    """One client's view of one server, and the flows that talk to it."""

    def __init__(
        self,
        *,
        client_info: JSON,
        capabilities: Callable[[Era], JSON],
        protocol: str | None = None,
        timeout: float | None = flags.TIMEOUT,
        probe_timeout: float = flags.PROBE_TIMEOUT,
        log_level: str | None = None,
        meta: Mapping[str, Any] | None = None,
        tasks_extension: bool = True,
    ) -> None:
        self.client_info = client_info
        #: The client's capabilities in an era (what its features really answer).
        self.client_capabilities = capabilities
        self.protocol = protocol
        self.timeout = timeout
        self.probe_timeout = probe_timeout
        self.log_level = log_level
        #: Extra `_meta` for every request after the handshake (`--meta`).
        self.meta: JSON = dict(meta or {})
        #: Whether 2026-07-28 requests that may involve tasks declare the extension.
        self.tasks_extension = tasks_extension
        self.era: Era = "legacy"
        self.protocol_version = ""
        self.server_info: JSON = {}
        self.capabilities: JSON = {}
        self.instructions: str | None = None
        self.supported_versions: list[str] = []
        #: The raw `initialize` or `server/discover` result.
        self.handshake: JSON = {}
        #: The era came from a cached `server/discover` result, not a live answer.
        self.era_from_cache = False
        #: The tools by name, once listed (None: not yet).
        self.tools: dict[str, JSON] | None = None
        #: What `negotiate` was given, for finding the era again later.
        self._traits = ProbeTraits()
        self._memory: EraMemory = NoMemory()

    # -- the era ---------------------------------------------------------------------

    def negotiate(self, traits: ProbeTraits, memory: EraMemory) -> Flow[None]:
        """Find the era and revision, and do the handshake it needs."""
        self._traits, self._memory = traits, memory
        forced = self.protocol
        if forced is not None:
            if forced not in ALL_VERSIONS:
                raise ProtocolError(
                    f"unknown protocol version {forced!r}",
                    hint="known versions: " + ", ".join(ALL_VERSIONS),
                )
            if era_of(forced) == "modern":
                yield from self._discover(forced, probe=False)
            else:
                yield from self.initialize(forced)
            return
        if traits.legacy_only:
            yield from self.initialize(LATEST_LEGACY)
            return
        cached = memory.cached_discover()
        if cached is not None and self._adopt_discover(cached, LATEST_MODERN):
            self.era_from_cache = True
            return
        remembered = memory.remembered_legacy()
        if remembered is not None:
            # This command line was a legacy server last time: skip the probe, which
            # some servers answer with pages of warnings on stderr (SDK 1.x).
            try:
                yield from self.initialize(LATEST_LEGACY)
            except (RPCError, ProtocolError) as exc:
                _log("debug", "initialize failed on a remembered legacy server (%s); probing", exc)
                memory.remember_legacy(None)
            else:
                if version_of(self.server_info) != remembered.get("version"):
                    memory.remember_legacy(None)  # upgraded: probe again next time
                return
        try:
            modern = yield from self._discover(LATEST_MODERN, probe=True)
        except ServerExited as exc:
            raise ExitedOnProbe(exc) from None
        if not modern:
            yield from self.initialize_after_probe()

    def initialize_after_probe(self) -> Flow[None]:
        """The probe found no modern server (or ended it): `initialize`, and remember the
        command line as legacy."""
        try:
            yield from self.initialize(LATEST_LEGACY)
        except UnsupportedVersionError as exc:
            # The probe went unanswered in time (a slow-booting server) but the server
            # is modern and refuses `initialize`: ask it again, without a probe's bound.
            if exc.supported and pick_version(exc.supported, prefer=MODERN_VERSIONS) is None:
                raise
            _log("debug", "initialize refused (%s); the server is modern after all", exc)
            choice = pick_version(exc.supported, prefer=MODERN_VERSIONS) or LATEST_MODERN
            yield from self._discover(choice, probe=False)
            return
        self._memory.remember_legacy(self.server_info)

    def renegotiate(self) -> Flow[None]:
        """Find the era again with a live probe (a cached era turned out wrong)."""
        self._memory.forget_discover()
        self.era_from_cache = False
        self.tools = None
        if (yield from self._discover(LATEST_MODERN, probe=True)):
            return
        yield from self.initialize(LATEST_LEGACY)

    def _discover(self, version: str, *, probe: bool) -> Flow[bool]:
        """Try the modern era. False means the server is legacy (only when probing)."""
        tried: dict[str, int] = {}
        probe_timeout: float | bool | None = True
        traits = self._traits
        if probe and traits.silence_is_legacy:
            probe_timeout = self.probe_timeout
            if self.timeout is not None:
                probe_timeout = min(probe_timeout, self.timeout)
        while True:
            tried[version] = tried.get(version, 0) + 1
            try:
                result = yield Send(
                    "server/discover",
                    {"_meta": self.request_meta(version)},
                    timeout=probe_timeout,
                    progress_token=False,
                    cancel_on_timeout=False,
                    probe=probe,
                )
            except UnsupportedVersionError as exc:
                choice = pick_version(exc.supported, prefer=MODERN_VERSIONS)
                # The same version may be retried once: the server may have refused
                # something else about the first attempt (a stale gateway, a header).
                if choice is None or tried.get(choice, 0) >= (2 if choice == version else 1):
                    legacy = pick_version(exc.supported, prefer=LEGACY_VERSIONS)
                    if legacy is not None and probe:
                        return False  # a dual-era server that does not speak our modern revision
                    raise ProtocolError(
                        "the server supports none of our protocol versions "
                        f"(it offers {', '.join(exc.supported) or 'none'})"
                    ) from None
                version = choice
                continue
            except RPCError as exc:
                if not probe or is_modern_error(exc.code, exc.data):
                    raise
                _log("debug", "server/discover failed (%s); falling back to initialize", exc)
                return False
            except TransportError as exc:
                # An HTTP error status: a legacy server that does not know the method
                # (400/404/405), or one that breaks on it; `initialize` will tell. So
                # does a broken answer (one that names the probe but cannot be parsed).
                broken_answer = isinstance(exc, ProtocolError) and exc.request_id is not None
                if not probe or (exc.status is None and not broken_answer):
                    raise
                _log("debug", "server/discover failed (%s); falling back to initialize", exc)
                return False
            except RequestTimeout:
                if not probe or not traits.silence_is_legacy:
                    raise
                _log("debug", "no answer to server/discover; falling back to initialize")
                return False
            if not self._adopt_discover(result, version):
                offered = offered_versions(result)
                if probe and (offered is None or pick_version(offered, prefer=LEGACY_VERSIONS)):
                    return False
                if offered is None:
                    raise ProtocolError("server/discover result has no supportedVersions")
                raise ProtocolError(
                    "the server supports none of our protocol versions "
                    f"(it offers {', '.join(offered) or 'none'})"
                )
            ttl = result.get("ttlMs")
            if isinstance(ttl, int) and ttl > 0 and result.get("cacheScope", "public") == "public":
                self._memory.store_discover(result)
            return True

    def initialize(self, version: str) -> Flow[None]:
        """The legacy handshake: `initialize`, `notifications/initialized`, the log level."""
        params = {
            "protocolVersion": version,
            "capabilities": self.client_capabilities("legacy"),
            "clientInfo": self.client_info,
        }
        result = yield Send("initialize", params, progress_token=False)
        self.adopt(parse_initialize(result), result)
        yield Notify("notifications/initialized")
        if self.log_level is not None and "logging" in self.capabilities:
            yield Send("logging/setLevel", {"level": self.log_level}, progress_token=False)

    def _adopt_discover(self, result: JSON, version: str) -> bool:
        adopted = parse_discover(result, version)
        if adopted is None:
            return False
        self.adopt(adopted, result)
        return True

    def adopt(self, adopted: Handshake, result: JSON) -> None:
        """Take a handshake's facts as this exchange's (also a daemon's cached one)."""
        self.era = adopted.era
        self.protocol_version = adopted.protocol_version
        if adopted.supported_versions is not None:
            self.supported_versions = adopted.supported_versions
        self.handshake = result
        self.capabilities = adopted.capabilities
        self.server_info = adopted.server_info
        self.instructions = adopted.instructions

    def request_meta(self, version: str) -> JSON:
        """The reserved `_meta` of a 2026-07-28 request."""
        return request_meta(version, self.client_info, self.client_capabilities("modern"), self.log_level)

    # -- requests --------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: JSON | None = None,
        *,
        on_progress: Callable[[JSON], None] | None = None,
        timeout: float | bool | None = True,
        max_timeout: float | bool | None = True,
        first: JSON | None = None,
    ) -> Flow[JSON]:
        """One request in the negotiated era, to its final result.

        An era taken from the cache that the server's answer contradicts is found again
        and the request sent once more. A `progressToken`
        already in `params["_meta"]` is kept (a task's progress outlives the request);
        otherwise the driver makes the request's id the token.

        `first`: the answer to the first round, which a relay sent itself (with
        `first_sent`'s params): the flow goes on from there (2026-07-28 input rounds).
        """
        if self.era_from_cache:
            return self._request_rechecked(method, params, on_progress, timeout, max_timeout, first)
        # The common case is the request's own flow, with no flow around it to delegate
        # through: every request of every command passes here.
        return self._request(method, params, on_progress, timeout, max_timeout, first)

    def first_sent(self, method: str, params: JSON) -> JSON | None:
        """The params the first round of `request(method, params)` sends, for a relay
        that sends that round itself and resumes with `first=` its answer; None when
        the flow would do more than send them (an era to recheck)."""
        if self.era_from_cache:
            return None
        params = self._with_own_meta(params)
        if self.era == "legacy":
            return params
        return with_meta(params, self._round_meta(method))

    def _with_own_meta(self, params: JSON | None) -> JSON:
        params = dict(params or {})
        if self.meta:
            given = params.get("_meta")
            params["_meta"] = {**self.meta, **(given if isinstance(given, dict) else {})}
        return params

    def _round_meta(self, method: str) -> JSON:
        meta = self.request_meta(self.protocol_version)
        if self.tasks_extension and method in DECLARE_ON:
            meta[CLIENT_CAPABILITIES_KEY] = with_extension(meta[CLIENT_CAPABILITIES_KEY])
        return meta

    def _request_rechecked(
        self,
        method: str,
        params: JSON | None,
        on_progress: Callable[[JSON], None] | None,
        timeout: float | bool | None,
        max_timeout: float | bool | None,
        first: JSON | None = None,
    ) -> Flow[JSON]:
        try:
            return (yield from self._request(method, params, on_progress, timeout, max_timeout, first))
        except (RPCError, TransportError) as exc:
            if not looks_legacy(exc):
                raise
            _log("debug", "%s failed (%s); the cached era may be stale: probing again", method, exc)
            yield from self.renegotiate()
        return (yield from self._request(method, params, on_progress, timeout, max_timeout))

    def _request(
        self,
        method: str,
        params: JSON | None,
        on_progress: Callable[[JSON], None] | None,
        timeout: float | bool | None,
        max_timeout: float | bool | None,
        first: JSON | None = None,
    ) -> Flow[JSON]:
        given = params.get("_meta") if params else None
        own_token = isinstance(given, dict) and "progressToken" in given
        params = self._with_own_meta(params)

        def send(sent: JSON) -> Send:
            return Send(method, sent, timeout=timeout, max_timeout=max_timeout,
                        progress_token=not own_token, on_progress=on_progress)

        if self.era == "legacy":
            if first is not None:
                return first
            answer: JSON = yield send(params)
            return answer
        base = params
        for _round in range(MAX_INPUT_ROUNDS):
            try:
                if first is not None:
                    result, first = first, None
                else:
                    result = yield send(with_meta(base, self._round_meta(method)))
            except UnsupportedVersionError as exc:
                choice = pick_version(exc.supported, prefer=MODERN_VERSIONS)
                if choice is None or choice == self.protocol_version:
                    raise
                self.protocol_version = choice
                continue
            kind = round_kind(method, result, creates_tasks=method in TASK_CREATING_METHODS,
                              takes_input=method in MRTR_METHODS)
            if kind == "complete":
                self.era_from_cache = False  # the era works
                return result
            if kind == "task":
                return result  # the caller follows the task
            responses = yield from self.fulfil(result.get("inputRequests"))
            base = next_round(params, result, responses)
        raise ProtocolError(f"{method}: the server kept asking for input ({MAX_INPUT_ROUNDS} rounds)")

    def fulfil(self, requests: Any) -> Flow[JSON]:
        """Answer a map of input requests (a 2026-07-28 round's, or a task's)."""
        asked = tuple(input_requests(requests))
        if not asked:
            return {}
        responses: JSON = yield Answer(asked)
        return responses

    # -- tools -----------------------------------------------------------------------

    def set_tools(self, listing: JSON) -> None:
        """Keep a `tools/list` answer's tools (for lookups and header mirroring)."""
        tools = listing.get("tools")
        self.tools = {t["name"]: t for t in tools or [] if isinstance(t, dict) and isinstance(t.get("name"), str)}

    def known_tool(self, name: str) -> JSON | None:
        """A tool's definition if a listing is at hand (never asks the server)."""
        return self.tools.get(name) if self.tools is not None else None

    def call_tool(
        self,
        name: str,
        arguments: JSON | None = None,
        *,
        meta: JSON | None = None,
        task_mode: TaskMode = "auto",
        task_ttl_ms: int | None = None,
        mirrors_headers: bool = False,
        on_progress: Callable[[JSON], None] | None = None,
        timeout: float | bool | None = True,
        max_timeout: float | bool | None = True,
        first: JSON | None = None,
    ) -> Flow[Called]:
        """`tools/call`, asking a 2025-11-25 server for a task where the tool needs (or,
        with `task_mode` "always", allows) one, and reading the answer in either era.

        `mirrors_headers` (Streamable HTTP, 2026-07-28): the tool's `x-mcp-header`
        parameters travel as headers too, so the tool is listed first, and listed again
        once if the server disagrees about them (HEADER_MISMATCH). `first`: as `request`'s
        (a relay sent `plain_call`'s params itself)."""
        params: JSON = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if meta:
            params["_meta"] = dict(meta)
        token: str | None = None
        if self.era == "legacy" and task_mode != "never" and server_accepts_tasks(self.capabilities):
            if self.tools is None:
                yield ListTools()
            if should_augment(self.capabilities, self.known_tool(name), task_mode):
                params["task"] = {"ttl": task_ttl_ms} if task_ttl_ms is not None else {}
                token = f"mcpcli-task-{next(_task_tokens)}"
                params["_meta"] = {**params.get("_meta", {}), "progressToken": token}
        mirrors = mirrors_headers and self.era == "modern"
        if mirrors and self.tools is None:
            yield ListTools()
        limits: JSON = {"on_progress": on_progress, "timeout": timeout, "max_timeout": max_timeout}
        try:
            result = yield from self.request(TOOLS_CALL, params, first=first, **limits)
        except RPCError as exc:
            if exc.code != HEADER_MISMATCH or not mirrors:
                raise
            # The tool may have changed since we listed it: list again, retry once.
            _log("debug", "tools/call: header mismatch (%s); listing tools again", exc)
            yield ListTools()
            result = yield from self.request(TOOLS_CALL, params, **limits)
        return Called(result, task_of(result, self.era), token)

    def plain_call(self, name: str, arguments: JSON, *, mirrors_headers: bool = False) -> JSON | None:
        """What `call_tool(name, arguments)` sends in its first round when that is all
        it does before the answer (no task to ask for, no listing, no era to recheck), for
        a relay to send itself; None otherwise."""
        if mirrors_headers and self.era == "modern":
            return None
        if self.era == "legacy" and server_accepts_tasks(self.capabilities) and (
                self.tools is None or should_augment(self.capabilities, self.known_tool(name), "auto")):
            return None
        return self.first_sent(TOOLS_CALL, {"name": name, "arguments": arguments})

    def listen_params(self, notifications: JSON) -> JSON:
        """A 2026-07-28 `subscriptions/listen`'s params: what is wanted, and the request `_meta`."""
        return {"notifications": notifications, "_meta": {**self.meta, **self.request_meta(self.protocol_version)}}

    def ping(self) -> Flow[str]:
        """A round trip: `ping` on legacy servers, `server/discover` on modern ones
        (2026-07-28 removed `ping`); the method used."""
        if self.era == "legacy":
            yield Send("ping", {"_meta": dict(self.meta)} if self.meta else None, progress_token=False)
            return "ping"
        yield from self.request("server/discover")
        return "server/discover"

    def pages(
        self,
        method: str,
        key: str,
        *,
        limit: int | None = None,
        on_repeat: Literal["stop", "raise"] = "stop",
    ) -> Flow[JSON]:
        """Follow `nextCursor`; the first page's envelope with every item.

        A repeated cursor stops the listing with a warning (or raises `PageRepeat`),
        and so does the page bound.
        """
        items: list[Any] = []
        seen: set[str] = set()
        first: JSON | None = None
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            result = yield from self.request(method, {"cursor": cursor} if cursor is not None else None)
            if first is None:
                first = result
            page = result.get(key)
            if isinstance(page, list):
                items.extend(page)
            nxt = result.get("nextCursor")
            if not isinstance(nxt, str) or (limit is not None and len(items) >= limit):
                break
            if nxt in seen:
                if on_repeat == "raise":
                    raise PageRepeat(f"{method}: the server repeated cursor {nxt!r}")
                _log("warning", "%s: the server repeated cursor %r; stopping", method, nxt)
                break
            seen.add(nxt)
            cursor = nxt
        else:
            if on_repeat == "raise":
                raise PageRepeat(f"{method}: stopped after {MAX_PAGES} pages")
            _log("warning", "%s: stopped after %d pages", method, MAX_PAGES)
        out = dict(first or {})
        out[key] = items
        out.pop("nextCursor", None)
        return out
