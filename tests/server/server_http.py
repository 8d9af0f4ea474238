"""Helpers for the HTTP tests: run serve_http in-process on a free port, raw requests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import httpx
from server_support import features, modern_meta

from mcpcli.client import Client, ClientOptions
from mcpcli.config import ServerEntry
from mcpcli.connect import ConnectOptions, open_transport
from mcpcli.server import Server, serve_http

JSON = dict[str, Any]


@asynccontextmanager
async def running(server: Server, **options: Any) -> AsyncIterator[str]:
    """serve_http on 127.0.0.1:<free port>; yields the endpoint URL."""
    urls: list[str] = []
    ready = anyio.Event()

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    options.setdefault("port", 0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(serve_http, server, on_ready=on_ready, **options))
        with anyio.fail_after(10):
            await ready.wait()
        try:
            yield urls[0]
        finally:
            tg.cancel_scope.cancel()


@asynccontextmanager
async def http_client(
    url: str, protocol: str | None = None, *, transport: str = "auto", token: str | None = None, **kw: Any
) -> AsyncIterator[Client]:
    kw.setdefault("features", features())
    entry = ServerEntry(name=url, url=url, transport="http")
    options = ConnectOptions(transport=transport, bearer_token=token, auth="none")
    with anyio.fail_after(20):
        async with Client(open_transport(entry, options), ClientOptions(protocol=protocol, **kw)) as client:
            yield client


MODERN_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2026-07-28",
}


def modern_request(method: str, params: JSON | None = None, rid: int = 1, caps: JSON | None = None) -> tuple[JSON, dict[str, str]]:
    """A well-formed 2026 request body and its headers."""
    params = {**(params or {}), "_meta": modern_meta(caps)}
    headers = {**MODERN_HEADERS, "Mcp-Method": method}
    if method in ("tools/call", "prompts/get"):
        headers["Mcp-Name"] = params["name"]
    elif method == "resources/read":
        headers["Mcp-Name"] = params["uri"]
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, headers


async def raw_post(url: str, body: JSON, headers: dict[str, str]) -> tuple[int, JSON]:
    """POST with header bytes exactly as given (httpx refuses e.g. padded values)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    data = json.dumps(body).encode()
    head = [f"POST {parts.path} HTTP/1.1", f"Host: {parts.netloc}", f"Content-Length: {len(data)}",
            "Connection: close"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data
    assert parts.hostname is not None and parts.port is not None
    async with await anyio.connect_tcp(parts.hostname, parts.port) as stream:
        await stream.send(request)
        chunks = []
        try:
            while True:
                chunks.append(await stream.receive())
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            pass
    raw = b"".join(chunks)
    header, _, payload = raw.partition(b"\r\n\r\n")
    status = int(header.split(b" ", 2)[1])
    return status, json.loads(payload) if payload.strip() else {}


def messages(response: httpx.Response) -> list[JSON]:
    """The JSON-RPC messages of a JSON or SSE response body."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        return [response.json()]
    found = []
    for line in response.text.splitlines():
        if line.startswith("data:") and line[5:].strip():  # a priming event has no data
            found.append(json.loads(line[5:].strip()))
    return found
