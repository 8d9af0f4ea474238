#!/usr/bin/env python3
"""Benchmark the gateway: what `mcp serve --proxy` adds to a tool call.

    .venv/bin/python scripts/bench_gateway.py [--calls 500] [--concurrency 16] [--rounds 3]
        [--baseline CHECKOUT] [--bare] [--splice] [--pump] [--pin]

The upstream is a small stdio server (our runtime with one `echo` tool, started from
this script). In the same run, interleaved over `--rounds` rounds (medians reported):

* direct: our Client to the upstream over stdio;
* gateway: our Client to `mcp serve --quiet --proxy -- <upstream>` over stdio, which
  itself holds a Client to its own upstream;
* with `--baseline CHECKOUT`, also the gateway of another checkout (the "before" side of
  a change; same interpreter, same upstream);
* with `--bare`, also a bare relay in its place: plain asyncio protocols that split
  lines, decode each message, give requests ids of their own (and answers their
  callers' back), encode and pass them on, one write per chunk read. The least a
  Python relay that understands the messages costs: the floor for the gateway.
* with `--splice`, also the bare relay without JSON: the same protocols, but each line's
  first `"id":N` is found and replaced in the bytes, nothing decoded (right only for
  this upstream's plain integer ids). What the event loop, the pipes and the line
  splitting cost a relay, before it reads a message.
* with `--pump`, also a byte pump: two threads copying whatever each pipe holds, no
  lines, no event loop. The least any relay process costs.

With `--pin` (Linux, 2 CPUs or more), our client and the upstream share CPU 0 and the
relay in between (gateway, bare relay or pump) gets CPU 1 to itself, in every run, direct
included: the rate when the relay has a core of its own, as on a machine with more cores
than busy processes, where on 2 shared cores three processes split what direct gives two.

For each: the median latency of sequential `tools/call` round trips, and throughput with
`--concurrency` calls in flight. For the gateway also its own CPU per call (utime+stime of
the gateway process from /proc, its upstream excluded). Targets (issue 12): under 1 ms
added at the median, under 0.3 ms of gateway CPU per call; (issue 26) at concurrency 16,
>= 70% of the direct rate. Not a test: numbers depend on the machine and its load. A
plain call of a tool the gateway has listed passes through whole
(`mcpcli.gateway.passing`): the calls here are made after a listing.

    .venv/bin/python scripts/bench_gateway.py --instructions [--calls 300] [--concurrency 1]
        [--baseline CHECKOUT | --bare]

counts the instructions the gateway process executes per call instead (valgrind's
callgrind, zeroed after the warm-up): stable under load, for before/after comparisons.
Sequential by default; with `--concurrency N` that many calls are in flight (how the
pipes batch messages under load). With `--baseline` it counts that checkout's gateway,
with `--bare` the bare relay instead. `--keep DIR` keeps callgrind's output there (for
callgrind_annotate).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcpcli.client import Client, ClientOptions  # noqa: E402
from mcpcli.transports.stdio import StdioTransport  # noqa: E402

UPSTREAM = '''
import anyio
from mcpcli.server import Server, serve_stdio

class Echo:
    def server_info(self): return {"name": "bench-upstream", "version": "1"}
    def instructions(self): return None
    def capabilities(self): return {"tools": {}}
    def set_change_listener(self, listener): pass
    async def list_tools(self):
        return [{"name": "echo", "inputSchema": {"type": "object",
                 "properties": {"text": {"type": "string"}}}}]
    async def call_tool(self, name, arguments, ctx):
        return {"content": [{"type": "text", "text": str(arguments.get("text", ""))}]}

anyio.run(lambda: serve_stdio(Server(Echo())))
'''


RELAY = '''
import asyncio, json, re, subprocess, sys

ID = re.compile(rb'"id":(\\d+)')

async def main(mode, argv):
    loop = asyncio.get_running_loop()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    callers, ids = {}, iter(range(1, 1 << 62))
    up, _ = await loop.connect_write_pipe(asyncio.Protocol, proc.stdin)
    down, _ = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout.buffer)
    done = loop.create_future()

    def encode(msg):
        return json.dumps(msg, separators=(",", ":")).encode() + b"\\n"

    def decoded_to_upstream(line):
        msg = json.loads(line)
        if "method" in msg and "id" in msg:
            own = next(ids)
            callers[own] = msg["id"]
            msg["id"] = own
        return encode(msg)

    def decoded_to_client(line):
        msg = json.loads(line)
        if "method" not in msg and msg.get("id") in callers:
            msg["id"] = callers.pop(msg["id"])
        return encode(msg)

    def spliced_to_upstream(line):
        found = ID.search(line) if b'"method"' in line else None
        if found is None:
            return line + b"\\n"
        own = next(ids)
        callers[own] = found[1]
        return b"%s%d%s\\n" % (line[:found.start(1)], own, line[found.end(1):])

    def spliced_to_client(line):
        found = ID.search(line) if b'"method"' not in line else None
        caller = callers.pop(int(found[1]), None) if found is not None else None
        if caller is None:
            return line + b"\\n"
        return line[:found.start(1)] + caller + line[found.end(1):] + b"\\n"

    class Lines(asyncio.Protocol):
        def __init__(self, out, change):
            self.rest, self.out, self.change = b"", out, change
        def data_received(self, data):
            *lines, self.rest = (self.rest + data).split(b"\\n")
            frames = [self.change(line) for line in lines if line.strip()]
            if frames:
                self.out.write(b"".join(frames))
        def connection_lost(self, exc):
            if not done.done():
                done.set_result(None)

    spliced = mode == "splice"
    await loop.connect_read_pipe(
        lambda: Lines(up, spliced_to_upstream if spliced else decoded_to_upstream), sys.stdin.buffer)
    await loop.connect_read_pipe(
        lambda: Lines(down, spliced_to_client if spliced else decoded_to_client), proc.stdout)
    await done
    proc.stdin.close()
    proc.wait()

asyncio.run(main(sys.argv[1], sys.argv[2:]))
'''


PUMP = '''
import os, subprocess, sys, threading

def pump(source, sink):
    while data := os.read(source, 1 << 16):
        while data:
            data = data[os.write(sink, data):]

proc = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
threading.Thread(target=pump, args=(proc.stdout.fileno(), 1), daemon=True).start()
pump(0, proc.stdin.fileno())
proc.stdin.close()
proc.wait()
'''


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(utime, stime) of one process (not its children), from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(child) for child in fh.read().split()]
    except OSError:
        return []


def pin_to(pid: int, cpu: int) -> None:
    """Run every thread of process `pid` on `cpu` only (a thread keeps the affinity it was
    started with, so each is set)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(task), {cpu})


def busy(pids: list[int]) -> float:
    """CPU seconds (user + system) these processes have used."""
    return sum(sum(cpu_seconds(pid)) for pid in pids)


async def concurrent_calls(client: Client, calls: int, concurrency: int) -> None:
    """`calls` echo calls, `concurrency` of them in flight at a time."""
    remaining = calls

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await client.call_tool("echo", {"text": "hi"})

    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)


async def measure(argv: list[str], calls: int, concurrency: int,
                  checkout: Path | None = None, pin: bool = False) -> dict[str, float]:
    env = {"PYTHONPATH": str(checkout)} if checkout is not None else None
    transport = StdioTransport(argv[0], argv[1:], quiet=True, env=env, cwd=str(checkout or ROOT))
    async with Client(transport, ClientOptions()) as client:
        await client.list_tools()
        for _ in range(20):  # warm up (the gateway connects its upstream lazily)
            await client.call_tool("echo", {"text": "warm"})
        assert transport.process is not None
        pid = transport.process.pid
        if pin:
            for process in (os.getpid(), *(children(pid) or [pid])):
                pin_to(process, 0)
            if children(pid):
                pin_to(pid, 1)
        times: list[float] = []
        cpu0 = cpu_seconds(pid)
        for _ in range(calls):
            start = time.perf_counter()
            await client.call_tool("echo", {"text": "hi"})
            times.append(time.perf_counter() - start)
        cpu1 = cpu_seconds(pid)
        user, system = (cpu1[0] - cpu0[0]) / calls, (cpu1[1] - cpu0[1]) / calls

        # CPU per call under load, by process: the relay (none when direct), the upstream
        # (the relay's child, or the process itself when direct), the client (us).
        upstream = children(pid) or [pid]
        relay = [pid] if upstream != [pid] else []
        before = busy(relay), busy(upstream), sum(cpu_seconds(os.getpid()))
        start = time.perf_counter()
        await concurrent_calls(client, calls, concurrency)
        rate = calls / (time.perf_counter() - start)
        after = busy(relay), busy(upstream), sum(cpu_seconds(os.getpid()))
        load = [(b - a) / calls * 1000 for a, b in zip(before, after, strict=True)]
    return {"median_ms": statistics.median(times) * 1000, "cpu_ms": (user + system) * 1000,
            "relay_c_ms": load[0], "upstream_c_ms": load[1], "client_c_ms": load[2],
            "user_ms": user * 1000, "sys_ms": system * 1000, "rate": rate}


async def instructions(argv: list[str], calls: int, tmp: str, concurrency: int = 1,
                       checkout: Path | None = None) -> int:
    """Instructions the gateway process executes per call, under callgrind (zeroed after
    the warm-up, dumped after `calls` calls with `concurrency` in flight): a count that
    does not depend on the load."""
    import subprocess

    out = str(Path(tmp) / "callgrind.out")
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv]
    # Under callgrind the gateway runs some fifty times slower: neither our era probe of it
    # nor its probe of the upstream may time out (a side taken for legacy would be another
    # era than the other's, which the gateway does not pass through).
    env = {"MCP_PROBE_TIMEOUT": "120", **({"PYTHONPATH": str(checkout)} if checkout is not None else {})}
    transport = StdioTransport(argv[0], argv[1:], quiet=True, env=env, cwd=str(checkout or ROOT))
    async with Client(transport, ClientOptions(timeout=600, probe_timeout=120)) as client:
        await client.list_tools()
        for _ in range(30):
            await client.call_tool("echo", {"text": "warm"})
        assert transport.process is not None
        pid = str(transport.process.pid)
        subprocess.run(["callgrind_control", "-z", pid], check=True, capture_output=True, timeout=120)
        await concurrent_calls(client, calls, concurrency)
        subprocess.run(["callgrind_control", "-d", pid], check=True, capture_output=True, timeout=120)
    for line in Path(out + ".1").read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1]) // calls
    raise RuntimeError("callgrind wrote no summary")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=None,
                        help="calls in flight (default 16; with --instructions 1)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                        help="also measure the gateway of this checkout (the 'before' side)")
    parser.add_argument("--bare", action="store_true",
                        help="also measure a bare asyncio line relay in the gateway's place (the floor)")
    parser.add_argument("--splice", action="store_true",
                        help="also measure the bare relay splicing ids in the bytes, no JSON decoded")
    parser.add_argument("--pump", action="store_true",
                        help="also measure a byte pump (two threads, nothing decoded) in the gateway's place")
    parser.add_argument("--pin", action="store_true",
                        help="client and upstream on CPU 0, the relay on CPU 1 (a core of its own)")
    parser.add_argument("--instructions", action="store_true",
                        help="instead: the gateway's instructions per call (valgrind --tool=callgrind)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="with --instructions: keep callgrind's output in DIR")
    args = parser.parse_args()
    if args.concurrency is None:
        args.concurrency = 1 if args.instructions else 16
    with tempfile.TemporaryDirectory() as tmp:
        upstream_py = Path(tmp) / "upstream.py"
        upstream_py.write_text(UPSTREAM)
        upstream = [sys.executable, str(upstream_py)]
        gateway = [sys.executable, "-m", "mcpcli", "serve", "--quiet", "--proxy", "--", *upstream]
        relay_py = Path(tmp) / "relay.py"
        relay_py.write_text(RELAY)
        bare = [sys.executable, str(relay_py), "decode", *upstream]
        splice = [sys.executable, str(relay_py), "splice", *upstream]
        pump_py = Path(tmp) / "pump.py"
        pump_py.write_text(PUMP)
        pump = [sys.executable, str(pump_py), *upstream]
        if args.instructions:
            count = await instructions(bare if args.bare else gateway, args.calls, tmp, args.concurrency,
                                       args.baseline.resolve() if args.baseline else None)
            print(f"{'bare relay' if args.bare else 'gateway'} process: {count / 1e6:.3f} M instructions per call ({args.calls} calls, "
                  f"concurrency {args.concurrency})")
            if args.keep:
                import shutil

                args.keep.mkdir(parents=True, exist_ok=True)
                for out in Path(tmp).glob("callgrind.out*"):
                    shutil.copy(out, args.keep / out.name)
            return
        results: dict[str, list[dict[str, float]]] = {"direct": [], "gateway": [], "baseline": [], "bare": [],
                                                     "splice": [], "pump": []}
        if args.pin and (not hasattr(os, "sched_setaffinity") or not {0, 1} <= os.sched_getaffinity(0)):
            parser.error("--pin needs Linux and at least 2 CPUs")
        pin = args.pin
        for _ in range(args.rounds):
            results["direct"].append(await measure(upstream, args.calls, args.concurrency, pin=pin))
            results["gateway"].append(await measure(gateway, args.calls, args.concurrency, pin=pin))
            if args.baseline:
                results["baseline"].append(await measure(gateway, args.calls, args.concurrency,
                                                         args.baseline.resolve(), pin=pin))
            if args.bare:
                results["bare"].append(await measure(bare, args.calls, args.concurrency, pin=pin))
            if args.splice:
                results["splice"].append(await measure(splice, args.calls, args.concurrency, pin=pin))
            if args.pump:
                results["pump"].append(await measure(pump, args.calls, args.concurrency, pin=pin))

    def med(kind: str, key: str) -> float:
        return statistics.median(r[key] for r in results[kind])

    def ratios(kind: str) -> str:
        """Each round's throughput as a share of the direct one in the same round."""
        pairs = zip(results["direct"], results[kind], strict=True)
        return ", ".join(f"{g['rate'] / d['rate']:.0%}" for d, g in pairs)

    direct, through = med("direct", "median_ms"), med("gateway", "median_ms")
    print(f"calls per round: {args.calls}, rounds: {args.rounds} (medians of the rounds)")
    print(f"latency  direct {direct:.3f} ms   through the gateway {through:.3f} ms   "
          f"added {through - direct:.3f} ms")
    print(f"gateway process CPU per call: {med('gateway', 'cpu_ms'):.3f} ms "
          f"(user {med('gateway', 'user_ms'):.3f}, system {med('gateway', 'sys_ms'):.3f})")
    d_rate, g_rate = med("direct", "rate"), med("gateway", "rate")
    print(f"throughput at concurrency {args.concurrency}: direct {d_rate:.0f}/s   "
          f"through the gateway {g_rate:.0f}/s ({g_rate / d_rate:.0%}; rounds "
          f"{ratios('gateway')})")
    def split(kind: str) -> str:
        return (f"client {med(kind, 'client_c_ms') * 1000:.0f} us, upstream "
                f"{med(kind, 'upstream_c_ms') * 1000:.0f} us, relay {med(kind, 'relay_c_ms') * 1000:.0f} us")

    print(f"CPU per call at concurrency {args.concurrency} (/proc, 10 ms ticks): direct: {split('direct')}; "
          f"through the gateway: {split('gateway')}")
    if results["baseline"]:
        b_rate = med("baseline", "rate")
        print(f"baseline {args.baseline}: latency {med('baseline', 'median_ms'):.3f} ms, gateway CPU per call "
              f"{med('baseline', 'cpu_ms'):.3f} ms, throughput {b_rate:.0f}/s ({b_rate / d_rate:.0%}; rounds "
              f"{ratios('baseline')}); {split('baseline')}")
    for kind, label, cpu in (("bare", "bare relay", "relay"), ("splice", "splicing relay", "relay"),
                             ("pump", "byte pump", "pump")):
        if results[kind]:
            rate = med(kind, "rate")
            print(f"{label}: latency {med(kind, 'median_ms'):.3f} ms, {cpu} CPU per call "
                  f"{med(kind, 'cpu_ms'):.3f} ms, throughput {rate:.0f}/s ({rate / d_rate:.0%}; rounds "
                  f"{ratios(kind)}); {split(kind)}")

def run() -> Any:
    return anyio.run(main)


if __name__ == "__main__":
    run()
