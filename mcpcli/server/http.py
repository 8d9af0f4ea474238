"""Serving over HTTP: Streamable HTTP for every era plus the legacy HTTP+SSE transport.

`serve_http` runs `McpHttpApp` (`mcpcli.server.http_app`) on uvicorn, which is
imported only there. It binds the socket itself (a clear error instead of
uvicorn's exit) and refuses to listen beyond loopback without a bearer token.

The protocol side lives in `http_app` (routing, Host/Origin/token checks),
`http_modern` (the stateless 2026-07-28 path), `http_stateful` (legacy sessions,
their streams and resumption), `http_legacy_sse` (the 2024-11-05 transport),
`http_exchange` (one response as JSON or SSE), `http_context` (what the routes
share with the app, and `HttpOptions`) and `http_asgi` (ASGI helpers). They
import in one direction: the app routes to the others, which are handed an
`HttpContext` (or the `StatefulConnections` table), never the app.

Responses are JSON unless a request-related notification comes first, in which
case the response becomes an SSE stream (with `:` keep-alive comments while it
stays open, e.g. `subscriptions/listen`).

uvicorn runs with `http_guard`'s protocol class (deadlines for request heads and
bodies, caps on idle and unfinished connections apart from requests in progress).
Stopping drains: new requests get 503, calls in flight get `HttpOptions.drain`
seconds, then the rest are answered "server shutting down" and streams end.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import anyio

from mcpcli.errors import TransportError, UsageError
from mcpcli.server.core import Server
from mcpcli.server.http_app import LOOPBACK_NAMES, McpHttpApp, is_loopback
from mcpcli.server.http_context import HttpOptions
from mcpcli.server.http_guard import guarded_protocol

__all__ = ["LOOPBACK_NAMES", "TOKEN_ENV", "HttpOptions", "McpHttpApp", "is_loopback", "serve_http"]

TOKEN_ENV = "MCP_SERVE_TOKEN"  # noqa: S105 - the name of a variable, not a secret

#: After the drain, how long the requests still ending may take (a command run in a request,
#: such as a completion, gets its kill_grace) before uvicorn cancels them outright; what
#: they ran is then killed at once (`toolsfile.process`).
STOP_WAIT = 10
#: The collector's youngest-generation threshold while serving (Python's default: 700). A
#: call allocates a hundred and more container objects, so the default collected every
#: few calls, and each third-generation collection walked every start-up object: with
#: both changed, a call relayed by the HTTP gateway costs 7% fewer instructions.
GC_THRESHOLD = 5000


def _bind(host: str, port: int) -> socket.socket:
    """Bind the listening socket ourselves: a clear error instead of uvicorn's exit."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    # A name like "localhost" may resolve to ::1 first; IPv4 is what most clients try.
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    family, _, proto, _, address = infos[0]
    # proto must say TCP: asyncio only sets TCP_NODELAY on accepted sockets that do
    # (without it, Nagle + delayed ACKs add ~40 ms to every keep-alive response).
    sock = socket.socket(family, socket.SOCK_STREAM, proto or socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6 and host in ("::", ""):
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise TransportError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def _allowed_hosts(host: str, allowed_hosts: Sequence[str] | None) -> Sequence[str]:
    """The Host names to accept when listening on `host` (unless given)."""
    if allowed_hosts is not None:
        return allowed_hosts
    if is_loopback(host):
        return LOOPBACK_NAMES
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - deciding, not binding
        return ("*",)  # any name may reach a wildcard bind; the token guards it
    return (*LOOPBACK_NAMES, host)


async def serve_http(
    server: Server,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    auth_token: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] | None = None,
    max_body: int = 4 * 1024 * 1024,
    legacy_sse: bool = True,
    keepalive: float = 15.0,
    sse_poll_after: float | None = None,
    session_prefix: str = "",
    on_ready: Callable[[str], None] | None = None,
    options: HttpOptions | None = None,
) -> None:
    """Serve `server` over HTTP on uvicorn until cancelled (then stop gracefully).

    Binding beyond loopback needs a bearer token (`auth_token` or $MCP_SERVE_TOKEN);
    without one this raises UsageError before listening. `on_ready(url)` is called
    with the endpoint URL once the socket listens (port 0 picks a free port).
    `options` sets the rest (path, limits, session lifetime); the keyword
    arguments for token, hosts and origins always win.
    """
    token = auth_token or os.environ.get(TOKEN_ENV) or None
    if not is_loopback(host) and not token:
        raise UsageError(
            f"refusing to listen on {host} without a bearer token",
            hint=f"pass --auth-token or set {TOKEN_ENV}; or bind 127.0.0.1",
        )
    hosts = _allowed_hosts(host, allowed_hosts)
    if options is None:
        options = HttpOptions(
            path=path, max_body=max_body, legacy_sse=legacy_sse, keepalive=keepalive,
            sse_poll_after=sse_poll_after, session_prefix=session_prefix,
        )
    options = replace(options, auth_token=token, allowed_hosts=hosts, allowed_origins=allowed_origins)
    sock = _bind(host, port)
    try:
        await _run(McpHttpApp(server, options), sock, options.path, on_ready)
    finally:
        sock.close()


async def _run(
    app: McpHttpApp, sock: socket.socket, path: str, on_ready: Callable[[str], None] | None
) -> None:
    """Run `app` on uvicorn on a listening socket until cancelled, then stop gracefully."""
    import uvicorn

    config = uvicorn.Config(
        app, lifespan="off", log_config=None, access_log=False, ws="none",
        proxy_headers=False, server_header=False,
        timeout_graceful_shutdown=STOP_WAIT,
        http=guarded_protocol(app.options),  # head/body deadlines, connection caps
    )

    class _Uvicorn(uvicorn.Server):
        def install_signal_handlers(self) -> None:  # older uvicorn
            pass

        def capture_signals(self) -> Any:  # the caller owns signals; we stop on cancel
            from contextlib import nullcontext

            return nullcontext()

    uv = _Uvicorn(config)
    bound_host, bound_port = sock.getsockname()[:2]
    stop = anyio.Event()  # cancelled, or uvicorn ended by itself
    finished = anyio.Event()

    async def run() -> None:
        try:
            await uv.serve(sockets=[sock])
        finally:
            stop.set()

    async def lifetime() -> None:
        # Shielded as a whole: the calls in flight run in the app's and the server's task
        # groups, which must outlive the caller's cancellation for the drain.
        try:
            with anyio.CancelScope(shield=True), _collector_for_serving():
                async with app, anyio.create_task_group() as tg:
                    tg.start_soon(run)
                    if on_ready is not None:
                        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
                        on_ready(f"http://{shown}:{bound_port}{path}")
                    await stop.wait()
                    await _drain(app)
                    app.shutdown()
                    uv.should_exit = True
                    # uvicorn closes the connections and ends what is left after STOP_WAIT;
                    # leaving the task group waits for it (bounded).
                    tg.cancel_scope.deadline = anyio.current_time() + STOP_WAIT + 5
        finally:
            finished.set()

    async with anyio.create_task_group() as outer:
        outer.start_soon(lifetime)
        try:
            await finished.wait()
        finally:
            stop.set()
            with anyio.CancelScope(shield=True):
                await finished.wait()


@contextmanager
def _collector_for_serving() -> Iterator[None]:
    """While serving: the objects start-up made (modules, classes, the app) frozen, so no
    collection walks them again, and collections of the youngest generation less often
    (`GC_THRESHOLD`); both as they were afterwards."""
    import gc

    before = gc.get_threshold()
    frozen = gc.get_freeze_count() > 0  # someone else froze: theirs to undo
    if not frozen:
        gc.freeze()
    gc.set_threshold(max(before[0], GC_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if not frozen:
            gc.unfreeze()


async def _drain(app: McpHttpApp) -> None:
    """Refuse new requests and give those in flight `options.drain` seconds to finish."""
    app.begin_shutdown()
    deadline = anyio.current_time() + app.options.drain
    while app.inflight and anyio.current_time() < deadline:
        await anyio.sleep(0.02)
