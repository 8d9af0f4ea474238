#!/usr/bin/env python3
"""Benchmark how promptly `mcp serve` answers `ping` while it is saturated with calls.

    .venv/bin/python scripts/bench_ping.py [--calls 500] [--pings 200] [--transport stdio|http|both] [--keep-alive]

Starts `mcp serve` on a tools.yaml whose one tool runs a script for `--work` seconds and
measures the latency of `ping` (sent every `--every` seconds, one at a time):

1. idle: nothing else in flight (the yardstick);
2. loaded: right after `--calls` `tools/call` requests were sent at once, while they run
   (over stdio most are refused at once as too many, over HTTP they queue for the tool's
   concurrency slots) and until the pings are done.

stdio: a 2025-11-25 session on the server's stdin/stdout. http: `mcp serve --http`, the
pings on a 2025-11-25 session, the calls as 2026-07-28 POSTs, each on its own connection;
each ping on a new connection too, or with `--keep-alive` all on one open connection (as
an HTTP client library sends them).
Prints p50, p99 and max per phase. Not a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from bench_serve import _exchange as exchange  # noqa: E402

JSON = dict[str, Any]

TOOLS = """version: 1
limits: {{max_concurrent: 64, queue_timeout: 10m}}
tools:
  - name: work
    description: Works a while.
    run: {{argv: [sleep, "{work}"], concurrency: 64}}
"""
INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
               "io.modelcontextprotocol/clientCapabilities": {}}


def summary(name: str, samples: list[float]) -> str:
    """p50/p99/max of the answered pings (a refused one is a negative sample)."""
    refused = sum(1 for s in samples if s < 0)
    ms = sorted(s * 1000 for s in samples if s >= 0)
    if not ms:
        return f"{name:>7}: every one of {refused} pings refused"
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return (f"{name:>7}: n={len(ms):4d}  p50 {statistics.median(ms):7.2f} ms  p99 {p99:7.2f} ms  "
            f"max {ms[-1]:7.2f} ms" + (f"  (and {refused} refused)" if refused else ""))


def mcp_argv(*args: str) -> list[str]:
    return [str(ROOT / ".venv/bin/python"), "-m", "mcpcli", "serve", *args]


class StdioPeer:
    """A 2025-11-25 session on a server's stdio: send lines, wait for answers by id."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.waiting: dict[Any, asyncio.Future[JSON]] = {}
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            message = json.loads(line)
            future = self.waiting.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result(message)

    def send(self, *messages: JSON) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))

    def expect(self, rid: Any) -> asyncio.Future[JSON]:
        future: asyncio.Future[JSON] = asyncio.get_running_loop().create_future()
        self.waiting[rid] = future
        return future

    async def ping(self, n: int) -> float:
        answer = self.expect(f"ping-{n}")
        started = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": f"ping-{n}", "method": "ping"})
        message = await answer
        took = time.perf_counter() - started
        if message.get("result") != {}:
            return -took  # refused (too many requests in flight)
        return took


async def pings(ping: Any, count: int, every: float) -> list[float]:
    out = []
    for n in range(count):
        out.append(await ping(n))
        await asyncio.sleep(every)
    return out


async def bench_stdio(tools: Path, args: argparse.Namespace) -> tuple[list[float], list[float]]:
    proc = await asyncio.create_subprocess_exec(
        *mcp_argv(str(tools), "--quiet"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, limit=1 << 24)
    peer = StdioPeer(proc)
    try:
        init = peer.expect("init")
        peer.send(INIT)
        await asyncio.wait_for(init, 30)
        peer.send(INITIALIZED)
        await pings(peer.ping, 20, args.every)  # warm up
        idle = await pings(peer.ping, args.pings, args.every)
        answers = [peer.expect(f"call-{i}") for i in range(args.calls)]
        peer.send(*({"jsonrpc": "2.0", "id": f"call-{i}", "method": "tools/call",
                     "params": {"name": "work", "arguments": {}}} for i in range(args.calls)))
        loaded = await pings(peer.ping, args.pings, args.every)
        await asyncio.gather(*answers)
        return idle, loaded
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        await proc.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def post(port: int, body: JSON, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """One POST on its own connection (no client library: its own queueing would blur the numbers)."""
    data = json.dumps(body).encode()
    head = ["POST /mcp HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(data)}", "Connection: close",
            "Content-Type: application/json", "Accept: application/json, text/event-stream",
            *(f"{k}: {v}" for k, v in headers.items())]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
    raw = await reader.read()
    writer.close()
    header, _, payload = raw.partition(b"\r\n\r\n")
    lines = header.decode("latin-1").split("\r\n")
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), fields, payload


async def bench_http(tools: Path, args: argparse.Namespace) -> tuple[list[float], list[float]]:
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        *mcp_argv(str(tools), "--quiet", "--http", f"127.0.0.1:{port}", "--no-auth"),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                await asyncio.sleep(0.05)
        _, fields, _ = await post(port, INIT, {})
        session = {"Mcp-Session-Id": fields["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        await post(port, INITIALIZED, session)

        kept: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        if args.keep_alive:
            kept.append(await asyncio.open_connection("127.0.0.1", port))

        async def ping(n: int) -> float:
            started = time.perf_counter()
            body = {"jsonrpc": "2.0", "id": n, "method": "ping"}
            if kept:
                status, _, payload = await exchange(*kept[0], "127.0.0.1", port, "/mcp", body, session)
            else:
                status, _, payload = await post(port, body, session)
            took = time.perf_counter() - started
            if status != 200 or b'"result":{}' not in payload.replace(b" ", b""):
                return -took  # refused (busy)
            return took

        await pings(ping, 20, args.every)
        idle = await pings(ping, args.pings, args.every)
        # The calls come from another process: this one's event loop only times the pings.
        load = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--load", str(port), "--calls", str(args.calls), stdout=subprocess.PIPE)
        assert load.stdout is not None
        await load.stdout.readline()  # every call is on its way
        loaded = await pings(ping, args.pings, args.every)
        await load.wait()
        for _, writer in kept:
            writer.close()
        return idle, loaded
    finally:
        proc.terminate()
        await proc.wait()


async def load(port: int, calls: int) -> None:
    """The load of the http run (in a process of its own): `calls` 2026-07-28 calls at once."""
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "work"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "work", "arguments": {}, "_meta": MODERN_META}}
    tasks = [asyncio.get_running_loop().create_task(post(port, body, headers)) for _ in range(calls)]
    await asyncio.sleep(0)
    print("sent", flush=True)
    statuses = [status for status, _, _ in await asyncio.gather(*tasks)]
    if any(status != 200 for status in statuses):
        print(f"bench_ping: calls answered {sorted(set(statuses))}", file=sys.stderr)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--pings", type=int, default=200)
    parser.add_argument("--every", type=float, default=0.005, help="seconds between pings")
    parser.add_argument("--work", type=float, default=0.5, help="seconds each call's script runs")
    parser.add_argument("--transport", choices=["stdio", "http", "both"], default="both")
    parser.add_argument("--keep-alive", action="store_true",
                        help="http: every ping on one open connection (else each on a new one)")
    args = parser.parse_args()
    if args.load:
        await load(args.load, args.calls)
        return
    with tempfile.TemporaryDirectory() as tmp:
        tools = Path(tmp) / "tools.yaml"
        tools.write_text(TOOLS.format(work=args.work))
        os.environ["XDG_STATE_HOME"] = tmp
        for transport in ("stdio", "http") if args.transport == "both" else (args.transport,):
            bench = bench_stdio if transport == "stdio" else bench_http
            idle, loaded = await bench(tools, args)
            print(f"{transport}: ping latency, {args.calls} calls of a {args.work} s script sent at once")
            print(summary("idle", idle))
            print(summary("loaded", loaded))


if __name__ == "__main__":
    asyncio.run(main())
