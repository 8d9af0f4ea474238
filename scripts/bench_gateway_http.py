#!/usr/bin/env python3
"""Benchmark the HTTP gateway: `mcp serve --http --proxy URL` in front of server-everything.

    .venv/bin/python scripts/bench_gateway_http.py [--calls 1000] [--concurrency 16] [--rounds 3]
        [--baseline CHECKOUT]
    .venv/bin/python scripts/bench_gateway_http.py --instructions [--calls 1000] [--baseline CHECKOUT]

The upstream is the TypeScript SDK's server-everything in `streamableHttp` mode (from
$MCPCLI_CACHE/npm, run by Node 24 from $MCPCLI_CACHE/node24 when there, else `node`). The
load is `--concurrency` clients, each its own legacy Streamable HTTP session (2025-11-25,
Mcp-Session-Id) on its own keep-alive connection, calling `echo`. In the same run,
interleaved over `--rounds` rounds (medians reported):

* direct: the clients call server-everything itself;
* gateway: the clients call `mcp serve --http --proxy http://.../mcp` (this checkout),
  and with `--baseline CHECKOUT` also the same gateway run from another checkout (the
  "before" side of a change), with the same interpreter;
* served: the clients call our own `mcp serve --http` answering `echo` from a tools.yaml
  `mock:`, which is the gateway's downstream half alone (its HTTP server, no upstream).

For each: calls per second, the upstream's CPU per call and, through a gateway, the
gateway process's own CPU per call (utime+stime from /proc). The issue's goal (26): the
gateway's CPU per call <= 0.75x the upstream's own (direct). Not a test: numbers depend on
the machine and its load.

`--instructions` counts instead what the gateway process, and `served`, execute per call
under valgrind's callgrind (zeroed after a warm-up; the same concurrent clients): a figure
that does not depend on the load, for before/after comparisons on a busy machine. Slow.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from bench_serve import _cpu_seconds, free_port  # noqa: E402
from bench_serve import _exchange as exchange  # noqa: E402

CACHE = Path(os.environ.get("MCPCLI_CACHE") or ROOT / ".cache")
EVERYTHING = CACHE / "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
LOOPBACK = ROOT / "tests/loopback.cjs"  # binds Node's listeners to 127.0.0.1 only
PROTOCOL = "2025-11-25"
TOOLS = """version: 1
tools:
  - name: echo
    description: echo, answered by a mock
    params: {message: {type: string}}
    mock: {text: "Echo: hi"}
"""


def start(argv: list[str], port: int, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})},
                            cwd=cwd, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.05)
    stop(proc)
    raise SystemExit(f"did not start listening on {port}: {argv}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


class Conn:
    """One keep-alive HTTP/1.1 connection holding one legacy MCP session."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.session = ""
        self.ids = itertools.count(1)

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        _, headers, _ = await self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}})
        self.session = headers.get("mcp-session-id", "")
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def call(self) -> bool:
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": "tools/call",
                "params": {"name": "echo", "arguments": {"message": "hi"}}}
        status, _, data = await self.post(body)
        return status == 200 and b"Echo: hi" in data

    async def post(self, body: dict[str, object]) -> tuple[int, dict[str, str], bytes]:
        headers = {"MCP-Protocol-Version": PROTOCOL, **({"Mcp-Session-Id": self.session} if self.session else {})}
        return await exchange(self.reader, self.writer, "127.0.0.1", self.port, "/mcp", body, headers)

    def close(self) -> None:
        self.writer.close()


async def load(port: int, calls: int, concurrency: int,
               pids: list[int]) -> tuple[float, list[float], int]:
    """`calls` echo calls from `concurrency` sessions: (calls/s, CPU seconds per call of
    each of `pids`, failed calls). The sessions are opened before the clock starts."""
    conns = [Conn(port) for _ in range(concurrency)]
    await asyncio.gather(*(c.open() for c in conns))
    left = calls
    failed = 0

    async def worker(conn: Conn) -> None:
        nonlocal left, failed
        while left > 0:
            left -= 1
            if not await conn.call():
                failed += 1

    cpu0 = [_cpu_seconds(p) for p in pids]
    started = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in conns))
    elapsed = time.perf_counter() - started
    cpu = [(_cpu_seconds(p) - c0) / calls for p, c0 in zip(pids, cpu0, strict=True)]
    for c in conns:
        c.close()
    return calls / elapsed, cpu, failed


def instructions(argv: list[str], port: int, calls: int, concurrency: int, tmp: str,
                 env: dict[str, str], cwd: Path) -> float:
    """Instructions per call of the process `argv` serving on `port`, under callgrind."""
    out = str(Path(tmp) / f"callgrind.{port}.out")
    proc = start(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv], port, env, cwd)
    try:
        asyncio.run(load(port, max(64, calls // 5), concurrency, []))
        subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, capture_output=True, timeout=300)
        asyncio.run(load(port, calls, concurrency, []))
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True, timeout=300)
    finally:
        stop(proc)
    for line in Path(out + ".1").read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1]) / calls
    raise RuntimeError("callgrind wrote no summary")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                        help="also measure the gateway of this checkout (the 'before' side)")
    parser.add_argument("--node", help="the Node that runs server-everything")
    parser.add_argument("--instructions", action="store_true",
                        help="instead: instructions per call of the gateway and served processes (callgrind)")
    args = parser.parse_args()
    node = args.node or (str(CACHE / "node24/package/bin/node")
                         if (CACHE / "node24/package/bin/node").exists() else shutil.which("node"))
    if not EVERYTHING.exists() or not node:
        print("server-everything or node is missing: run scripts/install-peers", file=sys.stderr)
        return 2

    procs: list[subprocess.Popen[bytes]] = []
    tmp = tempfile.mkdtemp()
    try:
        up_port = free_port()
        upstream = start([node, "--require", str(LOOPBACK), str(EVERYTHING), "streamableHttp"],
                         up_port, {"PORT": str(up_port)})
        procs.append(upstream)
        gateways: dict[str, tuple[int, subprocess.Popen[bytes]]] = {}
        checkouts = {"gateway": ROOT}
        if args.baseline:
            checkouts["baseline"] = args.baseline.resolve()
        if args.instructions:
            tools = Path(tmp) / "echo.yaml"
            tools.write_text(TOOLS)
            for name, checkout in checkouts.items():
                env = {"PYTHONPATH": str(checkout)}
                port = free_port()
                argv = [sys.executable, "-m", "mcpcli", "serve", "--quiet", "--no-auth",
                        "--http", f"127.0.0.1:{port}", "--proxy", f"http://127.0.0.1:{up_port}/mcp"]
                count = instructions(argv, port, args.calls, args.concurrency, tmp, env, checkout)
                port = free_port()
                argv = [sys.executable, "-m", "mcpcli", "serve", "--quiet", "--no-auth", str(tools),
                        "--http", f"127.0.0.1:{port}"]
                per_served = instructions(argv, port, args.calls, args.concurrency, tmp, env, checkout)
                print(f"{name}: gateway {count / 1e6:.3f} M instructions per call; served (mock echo) "
                      f"{per_served / 1e6:.3f} M ({args.calls} calls, concurrency {args.concurrency})")
            return 0
        for name, checkout in checkouts.items():
            port = free_port()
            argv = [sys.executable, "-m", "mcpcli", "serve", "--quiet", "--no-auth",
                    "--http", f"127.0.0.1:{port}", "--proxy", f"http://127.0.0.1:{up_port}/mcp"]
            proc = start(argv, port, {"PYTHONPATH": str(checkout)}, cwd=checkout)
            procs.append(proc)
            gateways[name] = (port, proc)

        tools = Path(tmp) / "echo.yaml"
        tools.write_text(TOOLS)
        served_port = free_port()
        served = start([sys.executable, "-m", "mcpcli", "serve", "--quiet", "--no-auth", str(tools),
                        "--http", f"127.0.0.1:{served_port}"], served_port, cwd=ROOT)
        procs.append(served)

        warm = max(64, args.calls // 10)
        asyncio.run(load(served_port, warm, args.concurrency, []))
        asyncio.run(load(up_port, warm, args.concurrency, []))
        for port, _ in gateways.values():
            asyncio.run(load(port, warm, args.concurrency, []))
        rounds: dict[str, list[tuple[float, list[float], int]]] = {
            k: [] for k in ["direct", *gateways, "served"]}
        for _ in range(args.rounds):  # interleaved: a neighbour's load hits every side alike
            rounds["direct"].append(asyncio.run(load(up_port, args.calls, args.concurrency, [upstream.pid])))
            for name, (port, proc) in gateways.items():
                rounds[name].append(asyncio.run(load(port, args.calls, args.concurrency,
                                                     [proc.pid, upstream.pid])))
            rounds["served"].append(asyncio.run(load(served_port, args.calls, args.concurrency, [served.pid])))
    finally:
        for proc in reversed(procs):
            stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)

    def med(name: str, what: str) -> float:
        got = rounds[name]
        if what == "rate":
            return statistics.median(r[0] for r in got)
        index = 0 if what == "gateway" else -1
        return statistics.median(r[1][index] for r in got) * 1000

    print(f"server-everything on {node} ({subprocess.run([node, '--version'], capture_output=True, text=True).stdout.strip()}); "
          f"{args.calls} calls x {args.rounds} rounds, concurrency {args.concurrency} (medians)")
    upstream_ms = med("direct", "upstream")
    print(f"direct:   {med('direct', 'rate'):7.0f} calls/s   upstream CPU {upstream_ms:.3f} ms/call")
    for name in gateways:
        ratios = sorted(r[1][0] * 1000 / upstream_ms for r in rounds[name])
        print(f"{name}: {med(name, 'rate'):7.0f} calls/s   gateway CPU {med(name, 'gateway'):.3f} ms/call "
              f"({med(name, 'gateway') / upstream_ms:.2f}x the upstream's direct; rounds "
              f"{', '.join(f'{x:.2f}' for x in ratios)})   upstream CPU behind it "
              f"{med(name, 'upstream'):.3f} ms/call")
    print(f"served:   {med('served', 'rate'):7.0f} calls/s   mcp serve --http CPU {med('served', 'gateway'):.3f} "
          "ms/call (echo as a tools.yaml mock: the gateway's HTTP server side alone)")
    failed = sum(r[2] for got in rounds.values() for r in got)
    if failed:
        print(f"{failed} calls failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
