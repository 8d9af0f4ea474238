#!/usr/bin/env python3
"""Benchmark `mcp serve`: calls of a trivial script tool over Streamable HTTP vs raw fork+exec.

    .venv/bin/python scripts/bench_serve.py [--calls 800] [--rounds 3] [--concurrency 16] [--era modern|legacy]
        [--baseline CHECKOUT] [--sdk]

Both measurements run the same command (`sh -c 'echo ok'`) at the same concurrency in the
same run, interleaved over several rounds (medians reported): the raw rates (posix_spawn +
waitpid; asyncio subprocesses with pipes, from this process, no server), then `tools/call` round
trips to `mcp serve --http` over loopback. The ratio is what the issue's
target (>= 80%) is about. With `--baseline CHECKOUT`, the `mcp serve` of another checkout
(the "before" side of a change, run by that checkout's .venv when it has one) is measured in
each round too. The raw side does what the server's runner must: stdin /dev/null, stdout and
stderr on pipes read to the end, the exit status reaped. Not a test: numbers depend on the
machine and its load.

    .venv/bin/python scripts/bench_serve.py --instructions [--calls 400] [--baseline CHECKOUT]

counts the instructions the server process executes per call instead (valgrind's callgrind,
zeroed after the warm-up; the children are not traced): stable under load, for before/after
comparisons. It leaves out the kernel's share (fork, exec, pipes), which the CPU per call of
the timed runs includes.
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

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = "echo ok"
#: The official Python SDK's server running the same command per call, for comparison
#: (`--sdk`; run by the SDK's own interpreter from scripts/install-peers).
SDK_SERVER = """
import asyncio, sys
import anyio
from mcp.server.mcpserver import MCPServer
server = MCPServer("bench")
@server.tool()
async def trivial() -> str:
    proc = await asyncio.create_subprocess_exec(
        "sh", "-c", SCRIPT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL)
    out, _ = await proc.communicate()
    return out.decode()
anyio.run(lambda: server.run_streamable_http_async(host="127.0.0.1", port=int(sys.argv[1])))
""".replace("SCRIPT", repr(SCRIPT))
TOOLS = f"""version: 1
tools:
  - name: trivial
    description: a trivial script
    run: {{shell: sh, script: "{SCRIPT}", concurrency: 64}}
limits: {{max_concurrent: 64}}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def raw_rate(calls: int, concurrency: int) -> float:
    """Spawn `sh -c SCRIPT` with stdout on a pipe (as the server does), `concurrency` at a time."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(calls):
        queue.put_nowait(i)

    async def worker() -> None:
        while True:
            try:
                queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            proc = await asyncio.create_subprocess_exec(
                "sh", "-c", SCRIPT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                stdin=asyncio.subprocess.DEVNULL,
            )
            await proc.communicate()

    del loop
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return calls / (time.perf_counter() - started)


def raw_spawn_rate(calls: int, concurrency: int) -> float:
    """The bare minimum: posix_spawn + waitpid, no pipes, no event loop."""
    started = time.perf_counter()
    running: set[int] = set()
    done = 0
    launched = 0
    devnull = os.open(os.devnull, os.O_RDWR)
    actions = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1)]
    while done < calls:
        while launched < calls and len(running) < concurrency:
            running.add(os.posix_spawnp("sh", ["sh", "-c", SCRIPT], os.environ, file_actions=actions))
            launched += 1
        pid, _ = os.wait()
        running.discard(pid)
        done += 1
    os.close(devnull)
    return calls / (time.perf_counter() - started)


async def served_rate(url: str, calls: int, concurrency: int, era: str) -> tuple[float, int]:
    """tools/call round trips over HTTP/1.1 keep-alive connections, one per worker."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host, port, path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path
    session_id = None
    if era == "legacy":
        _, headers, _ = await _post(host, port, path, {
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"}}}, {})
        session_id = headers.get("mcp-session-id")
        await _post(host, port, path, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"Mcp-Session-Id": session_id or "", "MCP-Protocol-Version": "2025-11-25"})
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(calls):
        queue.put_nowait(i + 1)
    errors = 0

    async def worker() -> None:
        nonlocal errors
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while True:
                try:
                    i = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                params: dict[str, object] = {"name": "trivial", "arguments": {}}
                extra = {"Mcp-Method": "tools/call", "Mcp-Name": "trivial"}
                if era == "modern":
                    params["_meta"] = {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {},
                        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"}}
                    extra["MCP-Protocol-Version"] = "2026-07-28"
                else:
                    extra["MCP-Protocol-Version"] = "2025-11-25"
                    extra["Mcp-Session-Id"] = session_id or ""
                body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
                status, _, data = await _exchange(reader, writer, host, port, path, body, extra)
                if status != 200 or b'"ok' not in data or b'"isError":true' in data:
                    errors += 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return calls / (time.perf_counter() - started), errors


async def _post(host: str, port: int, path: str, body: dict[str, object],
                headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        return await _exchange(reader, writer, host, port, path, body, headers)
    finally:
        writer.close()


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, port: int,
                    path: str, body: dict[str, object], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    payload = json.dumps(body).encode()
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Content-Type: application/json",
             "Accept: application/json, text/event-stream", f"Content-Length: {len(payload)}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
    await writer.drain()
    status_line = await reader.readline()
    status = int(status_line.split()[1])
    got: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        got[name.strip().lower()] = value.strip()
    data = b""
    if "content-length" in got:
        data = await reader.readexactly(int(got["content-length"]))
    elif got.get("transfer-encoding") == "chunked":
        while True:
            size = int((await reader.readline()).strip(), 16)
            if size == 0:
                await reader.readline()
                break
            data += await reader.readexactly(size)
            await reader.readline()
    return status, got, data


def _wait_listening(port: int, proc: subprocess.Popen[bytes], wait: float = 30) -> bool:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def _cpu_seconds(pid: int) -> float:
    """utime + stime of one process (not its children), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server_command(checkout: Path | None) -> tuple[list[str], Path, dict[str, str] | None]:
    """How to run `mcp serve` of this checkout or of `checkout` (its own .venv when it has one)."""
    if checkout is None:
        return [sys.executable, "-m", "mcpcli"], ROOT, None
    python = checkout / ".venv/bin/python"
    if python.exists():
        return [str(python), "-m", "mcpcli"], checkout, None
    return [sys.executable, "-m", "mcpcli"], checkout, {**os.environ, "PYTHONPATH": str(checkout)}


def _start_server(checkout: Path | None, tools: Path, port: int, wrap: list[str] | None = None
                  ) -> subprocess.Popen[bytes]:
    command, cwd, env = _server_command(checkout)
    return subprocess.Popen(
        [*(wrap or []), *command, "serve", "--quiet", str(tools), "--http", f"127.0.0.1:{port}", "--no-auth"],
        cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def stop_server(server: subprocess.Popen[bytes]) -> None:
    """TERM a benchmark's server, KILL it if it has not gone within 30 s."""
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def instructions(checkout: Path | None, tools: Path, calls: int, concurrency: int, era: str, tmp: str) -> int:
    """Instructions the server process executes per call, under callgrind (zeroed after the
    warm-up, dumped after `calls` calls): a count that does not depend on the load."""
    out = str(Path(tmp) / f"callgrind.{os.getpid()}.{'base' if checkout else 'this'}.out")
    port = free_port()
    server = _start_server(checkout, tools, port, ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"])
    try:
        if not _wait_listening(port, server, 300):
            raise RuntimeError("the server did not start under valgrind")
        url = f"http://127.0.0.1:{port}/mcp"
        asyncio.run(served_rate(url, 100, concurrency, era))
        pid = str(server.pid)
        subprocess.run(["callgrind_control", "-z", pid], check=True, capture_output=True, timeout=300)
        _, errors = asyncio.run(served_rate(url, calls, concurrency, era))
        subprocess.run(["callgrind_control", "-d", pid], check=True, capture_output=True, timeout=300)
        if errors:
            raise RuntimeError(f"{errors} calls failed")
    finally:
        stop_server(server)
    total = 0
    for dump in Path(tmp).glob(Path(out).name + ".*"):
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith("summary:"):
                total += int(line.split()[1])
    if not total:
        raise RuntimeError("callgrind wrote no summary")
    return total // calls



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=800)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--era", choices=["modern", "legacy"], default="modern")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sdk", action="store_true",
                        help="also measure the official Python SDK's server (legacy era) in each round")
    parser.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                        help="also measure `mcp serve` of this checkout (the 'before' side)")
    parser.add_argument("--instructions", action="store_true",
                        help="instead: the server's instructions per call (valgrind --tool=callgrind)")
    args = parser.parse_args()
    sdk_python = ROOT / ".cache/sdk-venv/bin/python"
    if args.sdk and not sdk_python.exists():
        print("--sdk: run scripts/install-peers first (.cache/sdk-venv)", file=sys.stderr)
        return 2
    baseline = args.baseline.resolve() if args.baseline else None

    with tempfile.TemporaryDirectory() as tmp:
        tools = Path(tmp) / "bench.yaml"
        tools.write_text(TOOLS)
        if args.instructions:
            calls = args.calls if args.calls != 800 else 400
            for label, checkout in (("this checkout", None), (f"baseline {baseline}", baseline)):
                if label.startswith("baseline") and checkout is None:
                    continue
                count = instructions(checkout, tools, calls, args.concurrency, args.era, tmp)
                print(f"{label}: server process {count / 1e6:.3f} M instructions per call ({calls} calls)")
            return 0
        port = free_port()
        server = _start_server(None, tools, port)
        base_port = free_port()
        base = _start_server(baseline, tools, base_port) if baseline is not None else None
        sdk_port = free_port()
        sdk = subprocess.Popen(
            [str(sdk_python), "-c", SDK_SERVER, str(sdk_port)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ) if args.sdk else None
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            base_url = f"http://127.0.0.1:{base_port}/mcp"
            sdk_url = f"http://127.0.0.1:{sdk_port}/mcp"
            for check_port, proc in ((port, server), (base_port, base), (sdk_port, sdk)):
                if proc is not None and not _wait_listening(check_port, proc):
                    print("a server did not start", file=sys.stderr)
                    return 1
            warm = max(32, args.calls // 10)
            asyncio.run(served_rate(url, warm, args.concurrency, args.era))
            if base is not None:
                asyncio.run(served_rate(base_url, warm, args.concurrency, args.era))
            rounds: list[tuple[float, float, float, float, float, float, int]] = []
            base_rounds: list[tuple[float, float, float]] = []  # (served, raw, server CPU per call)
            sdk_rates: list[float] = []
            for _ in range(args.rounds):
                # Interleaved, so a neighbour's load hits every measurement alike.
                spawn = raw_spawn_rate(args.calls, args.concurrency)
                raw_cpu = time.process_time()
                raw = asyncio.run(raw_rate(args.calls, args.concurrency))
                raw_cpu = (time.process_time() - raw_cpu) / args.calls
                server_cpu = _cpu_seconds(server.pid)
                bench_cpu = time.process_time()
                served, errors = asyncio.run(served_rate(url, args.calls, args.concurrency, args.era))
                bench_cpu = (time.process_time() - bench_cpu) / args.calls
                server_cpu = (_cpu_seconds(server.pid) - server_cpu) / args.calls
                rounds.append((spawn, raw, served, raw_cpu, server_cpu, bench_cpu, errors))
                if base is not None:
                    base_cpu = _cpu_seconds(base.pid)
                    base_served, base_errors = asyncio.run(
                        served_rate(base_url, args.calls, args.concurrency, args.era))
                    base_cpu = (_cpu_seconds(base.pid) - base_cpu) / args.calls
                    # Its own raw measurement right after, as close in time as the other's.
                    base_raw = asyncio.run(raw_rate(args.calls, args.concurrency))
                    base_rounds.append((base_served, base_raw, base_cpu))
                    errors += base_errors
                if sdk is not None:
                    sdk_rates.append(asyncio.run(served_rate(sdk_url, args.calls, args.concurrency, "legacy"))[0] / raw)
        finally:
            for proc in (sdk, base, server):
                if proc is not None:
                    stop_server(proc)
    def median(i: int) -> float:
        return float(statistics.median(r[i] for r in rounds))

    spawn, raw, served = median(0), median(1), median(2)
    errors = sum(r[6] for r in rounds)
    print(f"calls: {args.calls} x {args.rounds} rounds, concurrency: {args.concurrency}, era: {args.era}, "
          f"CPUs: {os.cpu_count()} (medians), load: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"raw posix_spawn+wait (no pipes):        {spawn:8.1f} calls/s")
    print(f"raw fork+exec with pipes (asyncio):     {raw:8.1f} calls/s")
    print(f"mcp serve --http tools/call:            {served:8.1f} calls/s  ({errors} errors)")
    ratios = sorted(r[2] / r[1] * 100 for r in rounds)
    print(f"served / raw fork+exec:                 {statistics.median(ratios):8.1f} %   (target >= 80 %; "
          f"rounds: {', '.join(f'{x:.0f}' for x in ratios)})")
    print(f"served / bare posix_spawn:              {statistics.median(r[2] / r[0] * 100 for r in rounds):8.1f} %")
    if base_rounds:
        base_ratios = sorted(r[0] / r[1] * 100 for r in base_rounds)
        print(f"baseline served / raw fork+exec:        {statistics.median(base_ratios):8.1f} %   "
              f"(rounds: {', '.join(f'{x:.0f}' for x in base_ratios)}; {baseline})")
    if sdk_rates:
        print(f"official SDK server / raw fork+exec:    {statistics.median(sdk_rates) * 100:8.1f} %   "
              "(the same command per call, legacy era)")
    print(f"CPU per call: raw spawner {median(3) * 1e6:.0f} us; server {median(4) * 1e6:.0f} us "
          f"(+ load generator {median(5) * 1e6:.0f} us)"
          + (f"; baseline server {statistics.median(r[2] for r in base_rounds) * 1e6:.0f} us" if base_rounds else ""))
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
