#!/usr/bin/env python3
"""Benchmark the HTTP server's CPU per `tools/call` against the TypeScript SDK's server.

    .venv/bin/python scripts/bench_http_server.py [--calls 3000] [--rounds 3] [--concurrency 16]
        [--baseline CHECKOUT] [--node PATH]

In one run, interleaved over several rounds (the order rotates each round; medians
reported), `--concurrency` clients each on its own HTTP/1.1 keep-alive connection send
`tools/call` one after the other to:

* `mcp serve --http` with a `mock:` tool, each client on its own legacy Streamable HTTP
  session (2025-11-25, `Mcp-Session-Id`);
* server-everything (the TypeScript SDK) in `streamableHttp` mode doing its `echo`
  tool, the same way (on Node 24 from $MCPCLI_CACHE/node24 when there, else `node`);
* `mcp serve --http` on the stateless 2026-07-28 path;
* with `--baseline CHECKOUT`, the first and third again with another checkout's code
  (its `.venv`, else this interpreter with the checkout first on the path): the
  before side of a change.

The figure is the server process's own CPU (utime + stime from /proc) divided by the
calls, so the load generator's CPU does not count (it is the same raw asyncio client for
every server: pre-encoded requests, no HTTP library). Not a test: numbers depend on the
machine and its load. bench_server.py measures the runtime in process and over stdio;
bench_serve.py a script tool's spawn against raw fork+exec; this one the HTTP path
against its peer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from bench_serve import _cpu_seconds, _wait_listening, free_port  # noqa: E402

CACHE = Path(os.environ.get("MCPCLI_CACHE") or ROOT / ".cache")
EVERYTHING = CACHE / "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
NODE24 = CACHE / "node24/package/bin/node"
TOOLS = """version: 1
tools:
  - name: echo
    description: Echoes back the input
    params:
      message: {type: string, description: Message to echo}
    mock: {text: "Echo: hi"}
"""
LEGACY = "2025-11-25"
MODERN = "2026-07-28"


@dataclass
class Target:
    label: str
    port: int
    pid: int
    era: str  # "legacy" or "modern"
    cpu_ms: list[float] = field(default_factory=list)
    rate: list[float] = field(default_factory=list)


def _request(port: int, body: dict[str, object], headers: dict[str, str]) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n{head}Content-Length: {len(data)}\r\n\r\n"
            ).encode() + data


async def _response(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One response's head and body (Content-Length or chunked, as the servers send them)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lower = head.lower()
    at = lower.find(b"\r\ncontent-length:")
    if at >= 0:
        end = lower.index(b"\r\n", at + 2)
        return head, await reader.readexactly(int(lower[at + 17:end]))
    if b"\r\ntransfer-encoding: chunked" not in lower:
        raise SystemExit(f"unexpected response: {head[:200]!r}")
    chunks: list[bytes] = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).strip(), 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return head, b"".join(chunks)
        chunks.append((await reader.readexactly(size + 2))[:-2])


class Client:
    """One client: a keep-alive connection and, on the legacy path, its own session."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.next_id = 100_000_000  # nine digits, as the placeholder
        self.prefix = self.suffix = b""

    async def open(self) -> None:
        port = self.target.port
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", port)
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
        params: dict[str, object] = {"name": "echo", "arguments": {"message": "hi"}}
        if self.target.era == "legacy":
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": LEGACY, "capabilities": {},
                               "clientInfo": {"name": "bench", "version": "1"}}}
            head, body = await self._exchange(_request(port, init, {}))
            sid = next(line.split(b":", 1)[1].strip().decode() for line in head.split(b"\r\n")
                       if line.lower().startswith(b"mcp-session-id:"))
            version = _result(body)["protocolVersion"]
            headers = {"MCP-Protocol-Version": str(version), "Mcp-Session-Id": sid}
            self.writer.write(_request(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers))
            await _response(self.reader)
        else:
            params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                               "io.modelcontextprotocol/clientCapabilities": {},
                               "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}
        raw = _request(port, {"jsonrpc": "2.0", "id": 999999999, "method": "tools/call", "params": params}, headers)
        # The same request with a new id each time, the body's length kept (ids of 9 digits).
        self.prefix, self.suffix = raw.split(b"999999999", 1)

    async def _exchange(self, raw: bytes) -> tuple[bytes, bytes]:
        self.writer.write(raw)
        head, body = await _response(self.reader)
        if not head.startswith(b"HTTP/1.1 2"):
            raise SystemExit(f"{self.target.label}: {head[:100]!r} {body[:300]!r}")
        return head, body

    async def calls(self, count: int) -> None:
        for _ in range(count):
            self.next_id += 1
            _, body = await self._exchange(self.prefix + b"%d" % self.next_id + self.suffix)
            if b'"error"' in body or b"Echo: hi" not in body:
                raise SystemExit(f"{self.target.label}: unexpected answer {body[:300]!r}")

    def close(self) -> None:
        self.writer.close()


def _result(body: bytes) -> dict[str, object]:
    text = body.decode()
    if not text.lstrip().startswith("{"):  # an SSE stream: the data line of its message event
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:") and line[5:].strip())
    return json.loads(text)["result"]  # type: ignore[no-any-return]


async def measure(target: Target, calls: int, concurrency: int) -> None:
    clients = [Client(target) for _ in range(concurrency)]
    await asyncio.gather(*(c.open() for c in clients))
    await asyncio.gather(*(c.calls(20) for c in clients))  # warm the connections
    per = max(1, calls // concurrency)
    before, started = _cpu_seconds(target.pid), time.perf_counter()
    await asyncio.gather(*(c.calls(per) for c in clients))
    elapsed = time.perf_counter() - started
    target.cpu_ms.append((_cpu_seconds(target.pid) - before) / (per * concurrency) * 1000)
    target.rate.append(per * concurrency / elapsed)
    for c in clients:
        c.close()


def _ours(checkout: Path, tools: Path, port: int) -> subprocess.Popen[bytes]:
    python = checkout / ".venv/bin/python"
    env = dict(os.environ, PYTHONPATH=str(checkout))
    return subprocess.Popen(
        [str(python if python.exists() else sys.executable), "-m", "mcpcli", "serve", "--quiet", str(tools),
         "--http", f"127.0.0.1:{port}", "--no-auth"],
        cwd=checkout, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000, help="calls per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--baseline", type=Path, help="another checkout to measure too (the before side)")
    parser.add_argument("--node", help="the Node that runs server-everything (default: Node 24 from the cache)")
    args = parser.parse_args()
    node = args.node or (str(NODE24) if NODE24.exists() else shutil.which("node"))
    if not EVERYTHING.exists() or node is None:
        print("server-everything or node missing: run scripts/install-peers", file=sys.stderr)
        return 2
    procs: list[subprocess.Popen[bytes]] = []
    targets: list[Target] = []
    with tempfile.TemporaryDirectory() as tmp:
        tools = Path(tmp) / "bench.yaml"
        tools.write_text(TOOLS)
        try:
            servers = [("ours", ROOT)] + ([("before", args.baseline.resolve())] if args.baseline else [])
            for name, checkout in servers:
                port = free_port()
                procs.append(proc := _ours(checkout, tools, port))
                if not _wait_listening(port, proc):
                    raise SystemExit(f"{name}: mcp serve did not start")
                targets += [Target(f"{name} {LEGACY}", port, proc.pid, "legacy"),
                            Target(f"{name} {MODERN}", port, proc.pid, "modern")]
            port = free_port()
            procs.append(proc := subprocess.Popen(
                [node, str(EVERYTHING), "streamableHttp"], env=dict(os.environ, PORT=str(port)),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            if not _wait_listening(port, proc):
                raise SystemExit("server-everything did not start")
            everything = Target(f"server-everything {LEGACY}", port, proc.pid, "legacy")
            targets.append(everything)
            for target in targets:  # warm up (JIT, caches)
                asyncio.run(measure(target, args.calls // 4, args.concurrency))
                target.cpu_ms.clear()
                target.rate.clear()
            for round_ in range(args.rounds):
                shift = round_ % len(targets)
                for target in targets[shift:] + targets[:shift]:
                    asyncio.run(measure(target, args.calls, args.concurrency))
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    node_version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"tools/call, {args.calls} calls x {args.rounds} rounds, {args.concurrency} clients; "
          f"server-everything on Node {node_version}; load average {os.getloadavg()[0]:.1f}")
    print("server CPU per call (median; rounds)           calls/s   vs server-everything (median of rounds)")
    for target in targets:
        ratios = [a / b for a, b in zip(target.cpu_ms, everything.cpu_ms, strict=True)]
        rounds = ", ".join(f"{x:.3f}" for x in target.cpu_ms)
        print(f"{target.label:30} {statistics.median(target.cpu_ms):.3f} ms ({rounds})  "
              f"{statistics.median(target.rate):7.0f}   {statistics.median(ratios):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
