#!/usr/bin/env python3
"""Benchmark the server runtime: CPU per request for tools/list and resources/read.

Not a test: it prints numbers. Four measurements, all with a small backend of
20 tools and a file resource (a 1 KiB file read from disk on every request):

* dispatch: the server's own work per request (no JSON-RPC framing or session);
* in-process: our Client and the Server in one process over memory streams;
  the CPU of the whole process (client + server) per request, an upper bound
  for the server's share. Also `--era legacy|modern|both`.
* stdio: the server in a child process, driven by a raw JSON-RPC writer with
  `--concurrency` requests in flight; the child's own CPU time (utime+stime
  from /proc) per request, i.e. the server's CPU including framing.

Target (issue 4): at most 0.3 ms of server CPU per request.

    .venv/bin/python scripts/bench_server.py [--requests 5000] [--era both]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcpcli.server.backend import CallContext, ChangeListener, ResourceNotFound  # noqa: E402

JSON = dict[str, Any]


class BenchBackend:
    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, "small.txt")
        with open(self.path, "w") as fh:
            fh.write("x" * 1023 + "\n")
        self.uri = "file://" + self.path
        self.tools = [
            {
                "name": f"tool_{i}",
                "description": f"Tool number {i}",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            }
            for i in range(20)
        ]

    def server_info(self) -> JSON:
        return {"name": "bench", "version": "1"}

    def instructions(self) -> str | None:
        return None

    def capabilities(self) -> JSON:
        return {"tools": {}, "resources": {}}

    def set_change_listener(self, listener: ChangeListener | None) -> None:
        pass

    async def list_tools(self) -> list[JSON]:
        return self.tools

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        return {"content": [{"type": "text", "text": str(arguments.get("text", ""))}]}

    async def list_resources(self) -> list[JSON]:
        return [{"uri": self.uri, "name": "small", "mimeType": "text/plain"}]

    async def list_resource_templates(self) -> list[JSON]:
        return []

    async def read_resource(self, uri: str, ctx: CallContext) -> JSON:
        if uri != self.uri:
            raise ResourceNotFound(uri)
        with open(self.path, encoding="utf-8") as fh:
            text = fh.read()
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}

    async def list_prompts(self) -> list[JSON]:
        return []

    async def get_prompt(self, name: str, arguments: dict[str, str], ctx: CallContext) -> JSON:
        raise ValueError(name)

    async def complete(self, ref: JSON, argument: JSON, context: JSON) -> JSON:
        return {"completion": {"values": []}}


async def in_process(backend: BenchBackend, protocol: str, requests: int) -> dict[str, float]:
    from mcpcli.client import Client, ClientOptions
    from mcpcli.server import Server

    server = Server(backend)
    out: dict[str, float] = {}
    async with Client(server.transport(), ClientOptions(protocol=protocol, timeout=None)) as client:
        for label, method, params in (
            ("tools/list", "tools/list", None),
            ("resources/read", "resources/read", {"uri": backend.uri}),
        ):
            for _ in range(200):  # warm up
                await client.request(method, params)
            start = time.process_time()
            for _ in range(requests):
                await client.request(method, params)
            out[label] = (time.process_time() - start) / requests * 1000
    return out


class _NullOutlet:
    async def notify(self, method: str, params: JSON | None = None) -> None:
        pass

    async def send_request(self, method: str, params: JSON | None = None, *, timeout: float | None = None) -> JSON:
        raise RuntimeError("not used")


async def dispatch_only(backend: BenchBackend, protocol: str, requests: int) -> dict[str, float]:
    """The server's own work per request: dispatch to the backend and back, no framing."""
    from mcpcli.core.jsonrpc import Notification, Request
    from mcpcli.server import Server
    from mcpcli.transports import Envelope

    server = Server(backend)
    out: dict[str, float] = {}
    async with server:
        conn = server.connection("bench")
        if protocol == "2026-07-28":
            meta: JSON = {"_meta": {"io.modelcontextprotocol/protocolVersion": protocol,
                                    "io.modelcontextprotocol/clientCapabilities": {}}}
        else:
            meta = {}
            await server._dispatch(conn, Request("initialize", {"protocolVersion": protocol}, 0), _NullOutlet())
            # The 2025 lifecycle: nothing but ping is served until the client says it is ready.
            ready = Notification("notifications/initialized")
            await conn.on_notification(ready, Envelope(ready))
        for label, method, params in (
            ("tools/list", "tools/list", {}),
            ("resources/read", "resources/read", {"uri": backend.uri}),
        ):
            request = Request(method, {**params, **meta}, 1)
            for _ in range(200):
                await server._dispatch(conn, request, _NullOutlet())
            start = time.process_time()
            for _ in range(requests):
                await server._dispatch(conn, request, _NullOutlet())
            out[label] = (time.process_time() - start) / requests * 1000
    return out


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def stdio(directory: str, protocol: str, requests: int, concurrency: int) -> dict[str, float]:
    """Server CPU per request, measured on a child process serving stdio."""
    child = f"""
import sys, anyio
sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(ROOT / 'scripts')!r})
from bench_server import BenchBackend
from mcpcli.server import Server, serve_stdio
anyio.run(serve_stdio, Server(BenchBackend({directory!r})))
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", child], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    reader = proc.stdout
    meta: JSON = {}
    if protocol == "2026-07-28":
        meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": protocol,
                          "io.modelcontextprotocol/clientCapabilities": {}}}
    else:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": protocol, "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "1"}}}
        proc.stdin.write(json.dumps(init).encode() + b"\n")
        reader.readline()
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    uri = "file://" + os.path.join(directory, "small.txt")
    out: dict[str, float] = {}
    next_id = 1
    for label, method, params in (
        ("tools/list", "tools/list", {}),
        ("resources/read", "resources/read", {"uri": uri}),
    ):
        line = json.dumps({"jsonrpc": "2.0", "id": 0, "method": method, "params": {**params, **meta}},
                          separators=(",", ":"))
        prefix, suffix = line.split('"id":0', 1)

        def run(count: int, prefix: str = prefix, suffix: str = suffix) -> None:
            nonlocal next_id
            in_flight = 0
            sent = received = 0
            while received < count:
                while in_flight < concurrency and sent < count:
                    proc.stdin.write(f'{prefix}"id":{next_id}{suffix}\n'.encode())  # type: ignore[union-attr]
                    next_id += 1
                    sent += 1
                    in_flight += 1
                reply = reader.readline()
                if b'"error"' in reply:
                    raise SystemExit(f"server error: {reply[:300]!r}")
                received += 1
                in_flight -= 1

        run(200)
        before = _cpu_seconds(proc.pid)
        run(requests)
        out[label] = (_cpu_seconds(proc.pid) - before) / requests * 1000
    proc.stdin.close()
    proc.wait(timeout=10)
    return out


def http(directory: str, requests: int, concurrency: int) -> dict[str, tuple[float, float]]:
    """Server CPU per request and requests/second for tools/call over Streamable HTTP.

    The load comes from raw keep-alive sockets (an HTTP client library would be
    the bottleneck on a small machine, not the server).
    """
    import asyncio
    import socket

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    child = f"""
import sys, anyio
sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(ROOT / 'scripts')!r})
from bench_server import BenchBackend
from mcpcli.server import Server, serve_http
anyio.run(lambda: serve_http(Server(BenchBackend({directory!r})), port={port}, on_ready=print))
"""
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    out: dict[str, tuple[float, float]] = {}

    def post(body: JSON, headers: dict[str, str]) -> bytes:
        data = json.dumps(body, separators=(",", ":")).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\n{head}Content-Length: {len(data)}\r\n\r\n"
                ).encode() + data

    async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes) -> bytes:
        writer.write(raw)
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        body = await reader.readexactly(length)
        if not head.startswith(b"HTTP/1.1 2") or b'"error"' in body:
            raise SystemExit(f"HTTP error: {head[:100]!r} {body[:300]!r}")
        return head

    async def drive() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        init = post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                     "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "1"}}}, {})
        head = await exchange(reader, writer, init)
        sid = next(line.split(b":", 1)[1].strip().decode() for line in head.split(b"\r\n")
                   if line.lower().startswith(b"mcp-session-id:"))
        # The 2025 lifecycle: nothing but ping is served until the client says it is ready.
        await exchange(reader, writer, post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                                            {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sid}))
        writer.close()
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}
        call = {"name": "tool_1", "arguments": {"text": "hi"}}
        cases = (
            ("2026-07-28", {"method": "tools/call", "params": {**call, "_meta": meta}},
             {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "tool_1"}),
            ("2025-11-25", {"method": "tools/call", "params": call},
             {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sid}),
        )
        next_id = 1
        for label, body, headers in cases:
            async def worker(count: int, body: JSON = body, headers: dict[str, str] = headers) -> None:
                # Ids must be unique among a session's pending requests: one id per worker.
                nonlocal next_id
                next_id += 1
                mine = post({"jsonrpc": "2.0", "id": next_id, **body}, headers)
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                for _ in range(count):
                    await exchange(reader, writer, mine)
                writer.close()

            per = max(1, requests // concurrency)
            await asyncio.gather(*(worker(20) for _ in range(concurrency)))
            before, started = _cpu_seconds(proc.pid), time.perf_counter()
            await asyncio.gather(*(worker(per) for _ in range(concurrency)))
            elapsed = time.perf_counter() - started
            total = per * concurrency
            out[label] = ((_cpu_seconds(proc.pid) - before) / total * 1000, total / elapsed)

    try:
        asyncio.run(drive())
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--era", choices=["legacy", "modern", "both"], default="both")
    parser.add_argument("--http", action="store_true", help="also tools/call over Streamable HTTP")
    args = parser.parse_args()
    eras = {"legacy": ["2025-11-25"], "modern": ["2026-07-28"], "both": ["2025-11-25", "2026-07-28"]}[args.era]
    with tempfile.TemporaryDirectory() as directory:
        backend = BenchBackend(directory)
        print(f"{args.requests} requests each; CPU milliseconds per request (target <= 0.3 ms server CPU)")
        for protocol in eras:
            result = anyio.run(dispatch_only, backend, protocol, args.requests)
            for label, ms in result.items():
                print(f"dispatch   {protocol:10}  {label:15} {ms:.3f} ms  (server only: dispatch, backend, result)")
        for protocol in eras:
            result = anyio.run(in_process, backend, protocol, args.requests)
            for label, ms in result.items():
                print(f"in-process {protocol:10}  {label:15} {ms:.3f} ms  (client + server, one process)")
        for protocol in eras:
            result = stdio(directory, protocol, args.requests, args.concurrency)
            for label, ms in result.items():
                print(f"stdio      {protocol:10}  {label:15} {ms:.3f} ms  (server process only, "
                      f"{args.concurrency} in flight)")
        if args.http:
            for protocol, (ms, rate) in http(directory, args.requests, 16).items():
                print(f"http       {protocol:10}  {'tools/call':15} {ms:.3f} ms  (server process only, "
                      f"16 in flight, {rate:.0f} requests/s)")


if __name__ == "__main__":
    main()
