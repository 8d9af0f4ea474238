"""What a `Client` is given: its options, and the features it answers a server's requests with."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from mcpcli import __version__
from mcpcli.core import flags
from mcpcli.core.jsonrpc import METHOD_NOT_FOUND, RequestId
from mcpcli.core.protocol import Era
from mcpcli.core.tracecontext import TraceContext
from mcpcli.errors import RPCError
from mcpcli.rpc.peer import SlowHandler, Tracer

__all__ = ["ClientFeatures", "ClientOptions", "Elicitor", "NotificationCallback", "Sampler"]

JSON = dict[str, Any]
Elicitor = Callable[[JSON], Awaitable[JSON]]
Sampler = Callable[[JSON], Awaitable[JSON]]
NotificationCallback = Callable[[str, JSON], None]


async def _decline(params: JSON) -> JSON:
    return {"action": "decline"}


@dataclass
class ClientFeatures:
    """What this client answers when a server asks: elicitation, sampling, roots.

    A capability is declared only when we really answer it. Elicitation is always
    answered (declining is an answer); sampling needs a `sample` callback and
    roots a list.
    """

    elicit: Elicitor = _decline
    sample: Sampler | None = None
    roots: list[JSON] | None = None
    #: Whether URL-mode elicitation can be shown to a person (a TTY).
    elicit_url: bool = False

    def capabilities(self, era: Era) -> JSON:
        caps: JSON = {}
        elicitation: JSON = {"form": {}}
        if self.elicit_url:
            elicitation["url"] = {}
        caps["elicitation"] = elicitation
        if self.sample is not None:
            caps["sampling"] = {}
        if self.roots is not None:
            caps["roots"] = {} if era == "modern" else {"listChanged": False}
        return caps

    async def answer(self, method: str, params: JSON) -> JSON:
        """The answer to a server's request of a feature declared; method not found for
        the rest."""
        if method == "elicitation/create":
            return await self.elicit(params)
        if method == "sampling/createMessage" and self.sample is not None:
            return await self.sample(params)
        if method == "roots/list" and self.roots is not None:
            return {"roots": self.roots}
        raise RPCError(METHOD_NOT_FOUND, f"Method not found: {method}")


@dataclass
class ClientOptions:
    client_info: JSON = field(
        default_factory=lambda: {"name": "mcpcli", "title": "mcpcli", "version": __version__}
    )
    #: Force one protocol version (skips negotiation across eras).
    protocol: str | None = None
    timeout: float | None = flags.TIMEOUT
    max_timeout: float | None = flags.MAX_TIMEOUT
    #: How long a stdio server may stay silent on the era probe before we call it legacy.
    probe_timeout: float = flags.PROBE_TIMEOUT
    log_level: str | None = None
    features: ClientFeatures = field(default_factory=ClientFeatures)
    on_notification: NotificationCallback | None = None
    on_error: Callable[[Exception], None] | None = None
    trace: Tracer | None = None
    #: Extra `_meta` entries for every request after the handshake (`--meta`); a key the
    #: client sets itself (progressToken, the 2026-07-28 fields) wins over these.
    meta: JSON = field(default_factory=dict)
    #: The trace every request continues (`--traceparent`, `TRACEPARENT`): its
    #: `traceparent` and `tracestate` go into each request's `_meta`, in every era. The
    #: request being handled here (`tracecontext.current`: a gateway's) comes first.
    trace_context: TraceContext | None = None
    #: Reuse and store what was learnt of the server's era (a cached `server/discover`
    #: result, a stdio command line remembered as legacy) and of its exits (a stdio
    #: command line slow to exit on EOF). False: always a live probe and the EOF grace
    #: (`mcp check` judges the handshake itself).
    remember_era: bool = True
    #: Told when a request has gone `slow_after` seconds unanswered (see `Peer`): a
    #: person at a terminal is shown what is awaited from whom.
    on_slow: SlowHandler | None = None
    slow_after: float = 3.0
    #: Told what the client did on its own that a person tracing wants to know (a server
    #: started again after it exited on the era probe); `--trace` prints it.
    note: Callable[[str], None] | None = None
    # Hooks for a client that relays for another (the gateway's upstream client):
    #: The capabilities declared in an era, given the features' (a 2026-07-28 request
    #: carries them, so a relay may declare its own client's).
    declare: Callable[[Era, JSON], JSON] | None = None
    #: Answers one 2026-07-28 input round `((key, method, params), ...)` as a whole;
    #: None from it: answer with the features, one by one.
    answer_round: Callable[[tuple[tuple[str, str, JSON], ...]], Awaitable[JSON | None]] | None = None
    #: Answers the server's requests (all but `ping`) instead of the features.
    serve_request: Callable[[str, JSON], Awaitable[JSON]] | None = None
    #: Entered around each request the client sends, given its id: a relay notes which
    #: downstream request it was made for (a server message tied to it goes there).
    request_sent: Callable[[RequestId], AbstractContextManager[object]] | None = None
