#!/usr/bin/env python3
"""Benchmark replicas: calls/s of a trivial script tool through nginx in front of 1 vs 2
`mcp serve --http` replicas (the README's deployment), and the cost per task operation of the
Redis task store against the in-memory one.

    .venv/bin/python scripts/bench_replicas.py [--calls 600] [--rounds 3] [--concurrency 16] [--ops 2000]

Needs redis-server and nginx as scripts/install-peers provides them (MCPCLI_TEST_REDIS_SERVER,
MCPCLI_TEST_NGINX, or on PATH, or under .cache/). Rounds interleave 1 and 2 replicas so both
see the same machine load; medians reported. Not a test: numbers depend on the machine (on a
2-core box two replicas compete with nginx and the client for the same cores).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOOLS = """\
version: 1
tools:
  - name: trivial
    description: a trivial script
    run: {argv: [sh, -c, 'echo ok']}
  - name: slow
    description: runs as a task
    task: {mode: required, after: 0s}
    run: {argv: [sleep, "100"]}
"""


def _find(env: str, name: str, cached: str) -> str:
    found = os.environ.get(env) or shutil.which(name)
    if not found and (REPO / cached).exists():
        found = str(REPO / cached)
    if not found:
        sys.exit(f"bench_replicas: {name} not found (run scripts/install-peers)")
    return found


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"bench_replicas: {proc.args} exited with {proc.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    sys.exit(f"bench_replicas: nothing listens on {port}")


@contextmanager
def _process(argv: list[str], port: int, **kw: object) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, **kw)  # type: ignore[call-overload]
    try:
        _wait(port, proc)
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _nginx_conf(work: Path, listen: int, upstreams: list[int]) -> Path:
    """The README's site with these ports, inside a minimal main configuration."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    site = readme[readme.index("# nginx site: begin"):readme.index("# nginx site: end")]
    site = site.replace("    server 127.0.0.1:8002;\n", "")
    for n, port in enumerate(upstreams, start=1):
        site = site.replace(f"127.0.0.1:800{n};", f"127.0.0.1:{port};")
    site = site.replace("~^b\\.   127.0.0.1:8002;", "")
    site = site.replace("listen 127.0.0.1:8080;", f"listen 127.0.0.1:{listen};")
    temp = "".join(f"{k}_temp_path {work}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = work / f"nginx-{listen}.conf"
    conf.write_text(f"{user}worker_processes 1;\npid {work}/nginx-{listen}.pid;\nerror_log stderr error;\n"
                    f"events {{ worker_connections 1024; }}\nhttp {{\naccess_log off;\n{temp}{site}\n}}\n")
    return conf


async def _calls(url: str, total: int, concurrency: int) -> float:
    """calls/s of 2026-07-28 `tools/call trivial` (one POST each) at `concurrency`."""
    import httpx

    from mcpcli.core.protocol import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY

    meta = {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_INFO_KEY: {"name": "bench", "version": "0"},
            CLIENT_CAPABILITIES_KEY: {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "trivial", "arguments": {}, "_meta": meta}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "trivial",
               "Authorization": "Bearer bench-token-0123456789"}
    left = total

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            r = await client.post(url, json=body, headers=headers)
            if r.status_code != 200 or '"ok\\n"' not in r.text:
                raise SystemExit(f"bench_replicas: unexpected answer {r.status_code}: {r.text[:200]}")

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        start = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        return total / (time.perf_counter() - start)


def _store_ops(redis_url: str, ops: int) -> dict[str, float]:
    """Microseconds per put+get of a task record: memory vs Redis."""
    from mcpcli.server.tasks.records import MemoryRecords, TaskRecord
    from mcpcli.server.tasks.redis_records import RedisRecords

    out: dict[str, float] = {}
    for name, records in (("memory", MemoryRecords()), ("redis", RedisRecords(redis_url, "bench"))):
        now = time.time()
        start = time.perf_counter()
        for i in range(ops):
            record = TaskRecord(id=f"t{i}", principal="p", tool="slow", status="working", message=None,
                                created=now, updated=now, ttl_ms=60_000, poll_ms=100, expires=now + 60)
            records.put(record)
            records.get(record.id, now)
        out[name] = (time.perf_counter() - start) / ops * 1e6
        records.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--ops", type=int, default=2000)
    args = parser.parse_args()
    redis_server = _find("MCPCLI_TEST_REDIS_SERVER", "redis-server", ".cache/redis-venv/bin/redis-server")
    nginx = _find("MCPCLI_TEST_NGINX", "nginx", ".cache/nginx/root/usr/sbin/nginx")
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        work = Path(tmp)
        tools = work / "tools.yaml"
        tools.write_text(TOOLS)
        rport = _port()
        stack.enter_context(_process([redis_server, "--port", str(rport), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", tmp], rport))
        redis_url = f"redis://127.0.0.1:{rport}/0"
        env = {**os.environ, "MCP_SERVE_TOKEN": "bench-token-0123456789", "MCP_SERVE_REDIS_URL": redis_url}
        ports = []
        for name in ("a", "b"):
            port = _port()
            stack.enter_context(_process(
                [sys.executable, "-m", "mcpcli", "serve", str(tools), "--http", str(port), "--quiet",
                 "--replica", name, "--task-store", "redis"], port, env=env))
            ports.append(port)
        fronts = {}
        for count in (1, 2):
            listen = _port()
            conf = _nginx_conf(work, listen, ports[:count])
            stack.enter_context(_process([nginx, "-p", tmp, "-c", str(conf), "-e", "stderr",
                                          "-g", "daemon off;"], listen))
            fronts[count] = f"http://127.0.0.1:{listen}/mcp"
        rates: dict[int, list[float]] = {1: [], 2: []}
        asyncio.run(_calls(fronts[2], 100, args.concurrency))  # warm up both replicas
        for _ in range(args.rounds):
            for count in (1, 2):
                rates[count].append(asyncio.run(_calls(fronts[count], args.calls, args.concurrency)))
        one, two = statistics.median(rates[1]), statistics.median(rates[2])
        print(f"calls/s through nginx, concurrency {args.concurrency}, {args.calls} calls x {args.rounds} rounds:")
        print(f"  1 replica : {one:7.0f}  ({', '.join(f'{r:.0f}' for r in rates[1])})")
        print(f"  2 replicas: {two:7.0f}  ({', '.join(f'{r:.0f}' for r in rates[2])})  {two / one:.2f}x")
        ops = _store_ops(redis_url, args.ops)
        print(f"task record put+get, {args.ops} ops: memory {ops['memory']:.1f} us, redis {ops['redis']:.1f} us "
              f"({ops['redis'] - ops['memory']:.0f} us more per operation pair)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
