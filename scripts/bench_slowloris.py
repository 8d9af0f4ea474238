#!/usr/bin/env python3
"""Benchmark `mcp serve --http` under abuse: slow connections, then large parallel bodies.

    .venv/bin/python scripts/bench_slowloris.py [--slow 1100] [--duration 20] [--bodies 400]

Starts `mcp serve --http` on 127.0.0.1 (a free port, a trivial tools.yaml, a token) and:

1. slowloris: opens `--slow` connections that each send a request line, then one
   header byte every `--interval` seconds (and reconnect, after the same pause, when
   the server closes them), for `--duration` seconds; meanwhile makes a legitimate
   `tools/call` every `--every` seconds and prints how many succeeded and their latency;
2. bodies: `--bodies` parallel POSTs of `--body-mib` MiB each, sampling the server's
   RSS; prints its peak and the status codes.

Loopback only, bounded in count and time, stops by itself. Not a test: numbers depend
on the machine and its load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_serve import free_port, stop_server

TOOLS = """version: 1
tools:
  - name: trivial
    description: Says ok.
    run:
      argv: [echo, ok]
"""


def rss_mib(pid: int) -> float:
    """The resident set of a process, in MiB (Linux)."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def modern(method: str, params: dict[str, Any], token: str, rid: int) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 request body and its headers."""
    from mcpcli.core.protocol import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY

    meta = {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_INFO_KEY: {"name": "bench", "version": "0"},
            CLIENT_CAPABILITIES_KEY: {}}
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": meta}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method,
               "Authorization": f"Bearer {token}"}
    if method == "tools/call":
        headers["Mcp-Name"] = params["name"]
    return body, headers


async def slow_client(port: int, interval: float, until: float, stats: Counter[str]) -> None:
    """One slowloris connection, reopened (after `interval`) whenever the server closes it."""
    while time.monotonic() < until:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            stats["connect failed"] += 1
            await asyncio.sleep(interval)
            continue
        stats["opened"] += 1
        try:
            writer.write(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            await writer.drain()
            while time.monotonic() < until:
                try:
                    data = await asyncio.wait_for(reader.read(1024), timeout=interval)
                except asyncio.TimeoutError:
                    writer.write(b"a")  # one more header byte
                    await writer.drain()
                    continue
                stats["408" if data.startswith(b"HTTP/1.1 408") else "closed"] += 1
                break
        except OSError:
            stats["closed"] += 1
        finally:
            writer.close()
        await asyncio.sleep(interval)


async def legit_calls(url: str, token: str, every: float, until: float) -> tuple[list[float], Counter[str]]:
    import httpx

    latencies: list[float] = []
    outcomes: Counter[str] = Counter()
    async with httpx.AsyncClient(timeout=30) as http:
        rid = 0
        while time.monotonic() < until:
            rid += 1
            body, headers = modern("tools/call", {"name": "trivial", "arguments": {}}, token, rid)
            start = time.perf_counter()
            try:
                response = await http.post(url, json=body, headers=headers)
                ok = response.status_code == 200 and "result" in response.json()
                outcomes["ok" if ok else f"HTTP {response.status_code}"] += 1
                if ok:
                    latencies.append(time.perf_counter() - start)
            except httpx.HTTPError as exc:
                outcomes[type(exc).__name__] += 1
            await asyncio.sleep(every)
    return latencies, outcomes


async def slowloris(args: argparse.Namespace, port: int, url: str, token: str) -> None:
    until = time.monotonic() + args.duration
    stats: Counter[str] = Counter()
    slow = [asyncio.create_task(slow_client(port, args.interval, until, stats)) for _ in range(args.slow)]
    await asyncio.sleep(min(2.0, args.duration / 4))  # let the flood build up first
    latencies, outcomes = await legit_calls(url, token, args.every, until)
    await asyncio.gather(*slow)
    total = sum(outcomes.values())
    print(f"slowloris: {args.slow} slow connections for {args.duration:.0f} s "
          f"(opened {stats['opened']}, answered 408 {stats['408']}, closed {stats['closed']})")
    print(f"  legitimate tools/call: {outcomes['ok']}/{total} ok {dict(outcomes)}")
    if latencies:
        latencies.sort()
        p95 = latencies[int(0.95 * (len(latencies) - 1))]
        print(f"  latency: median {statistics.median(latencies) * 1000:.1f} ms, "
              f"p95 {p95 * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms")


async def bodies(args: argparse.Namespace, pid: int, url: str, token: str) -> None:
    import httpx

    size = int(args.body_mib * 1024 * 1024)
    body, headers = modern("tools/list", {}, token, 1)
    import json

    text = json.dumps(body)
    pad = size - len(text) - len(',"pad":""')
    data = (text[:-1] + f',"pad":"{"x" * pad}"' + "}").encode()
    before = rss_mib(pid)
    peak = before
    statuses: Counter[str] = Counter()

    async def one(http: httpx.AsyncClient) -> None:
        try:
            response = await http.post(url, content=data, headers=headers)
            statuses[str(response.status_code)] += 1
        except httpx.HTTPError as exc:
            statuses[type(exc).__name__] += 1

    limits = httpx.Limits(max_connections=args.bodies, max_keepalive_connections=0)
    start = time.perf_counter()
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        tasks = [asyncio.create_task(one(http)) for _ in range(args.bodies)]
        while not all(t.done() for t in tasks):
            peak = max(peak, rss_mib(pid))
            await asyncio.sleep(0.02)
        await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    print(f"bodies: {args.bodies} parallel POSTs of {args.body_mib} MiB in {elapsed:.1f} s: "
          f"{dict(statuses)}")
    print(f"  server RSS: {before:.0f} MiB before, peak {peak:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slow", type=int, default=1100, help="slow connections (max 5000)")
    parser.add_argument("--interval", type=float, default=3.0, help="seconds between their header bytes")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of the slowloris phase (max 120)")
    parser.add_argument("--every", type=float, default=0.2, help="seconds between legitimate calls")
    parser.add_argument("--bodies", type=int, default=400, help="parallel large POSTs (0 skips; max 1000)")
    parser.add_argument("--body-mib", type=float, default=3.9, help="size of each (under the 4 MiB cap)")
    args = parser.parse_args()
    args.slow = min(args.slow, 5000)
    args.duration = min(args.duration, 120.0)
    args.bodies = min(args.bodies, 1000)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.slow + args.bodies + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    root = Path(__file__).resolve().parent.parent
    token = secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory() as tmp:
        tools = Path(tmp) / "tools.yaml"
        tools.write_text(TOOLS)
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        server = subprocess.Popen(
            [sys.executable, "-m", "mcpcli", "serve", "--quiet", str(tools), "--http", f"127.0.0.1:{port}"],
            cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={**os.environ, "MCP_SERVE_TOKEN": token},
        )
        try:
            assert server.stderr is not None
            deadline = time.monotonic() + 30
            while b"serving" not in server.stderr.readline():
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the server did not start")
            if args.slow > 0:
                asyncio.run(slowloris(args, port, url, token))
            if args.bodies > 0:
                asyncio.run(bodies(args, server.pid, url, token))
        finally:
            stop_server(server)


if __name__ == "__main__":
    main()
