#!/usr/bin/env python3
"""Benchmark: a one-shot `mcp tools call URL` against a local HTTP server, next to mcporter.

    scripts/bench_http.py [--runs N] [--check]

Starts one server on 127.0.0.1 (the official Python SDK, Streamable HTTP,
dual-era, JSON answers, `ttlMs` 10 min and `cacheScope: public` on
server/discover and tools/list) and times, in the same run and interleaved:

* `mcp tools call URL echo --arg message=hi` with a warm cache (2026-07-28:
  the one POST it should take is counted on the server);
* the same with a cold cache (discover + tools/list + tools/call);
* `mcporter call --allow-http URL.echo message=hi` (mcporter speaks the legacy
  handshake: initialize, initialized, tools/list, tools/call).

Target (issue 3): mcp's median at most 0.4x mcporter's, one POST per warm call.
Both tools run with a private HOME and XDG dirs. mcporter is installed for
benchmarking only: `npm install --prefix .cache/mcporter mcporter@0.12.3`.
With `--check` the exit status is 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SDK_PYTHON = REPO / ".cache/sdk-venv/bin/python"
MCP = REPO / ".venv/bin/mcp"
MCPORTER = REPO / ".cache/mcporter/node_modules/mcporter/dist/cli.js"
TARGET_RATIO = 0.4

SERVER = '''
import collections, json, sys
import uvicorn
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import MCPServer

hint = CacheHint(ttl_ms=600_000, scope="public")
server = MCPServer(name="bench", version="1", cache_hints={"server/discover": hint, "tools/list": hint})

@server.tool(description="Echo a message.")
def echo(message: str) -> str:
    return f"echo: {message}"

app = server.streamable_http_app(json_response=True)
counts = collections.Counter()

async def counting(scope, receive, send):
    if scope["type"] == "http":
        if scope["path"] == "/_count":
            body = json.dumps(counts).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        headers = dict(scope["headers"])
        counts[scope["method"] + " " + headers.get(b"mcp-method", b"").decode()] += 1
    await app(scope, receive, send)

uvicorn.run(counting, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
'''


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the bench server exited")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit("the bench server did not start")


def counts(port: int) -> dict[str, int]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_count", timeout=5) as response:
        data: dict[str, int] = json.loads(response.read())
        return data


def node_for_mcporter() -> str | None:
    """The newest Node we have (mcporter wants >= 24 but runs on 20 and 22)."""
    candidates = [os.environ.get("MCPORTER_NODE"), str(REPO / ".cache/conformance/node/package/bin/node"),
                  shutil.which("node")]
    best: tuple[int, str] | None = None
    for node in candidates:
        if not node or not os.path.exists(node):
            continue
        out = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout
        try:
            major = int(out.strip().lstrip("v").split(".")[0])
        except ValueError:
            continue
        if best is None or major > best[0]:
            best = (major, node)
    return best[1] if best else None


def timed(argv: list[str], env: dict[str, str], expect: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or expect not in proc.stdout:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {proc.stdout[-300:]} {proc.stderr[-500:]}")
    return elapsed


def isolated_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    for sub in ("config", "cache", "state", "data"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"),
               XDG_STATE_HOME=str(home / "state"), XDG_DATA_HOME=str(home / "data"), NO_COLOR="1")
    for var in ("MCP_CONFIG", "MCP_BEARER_TOKEN", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                "http_proxy", "https_proxy", "all_proxy", "PYTHONDONTWRITEBYTECODE"):
        env.pop(var, None)
    return env


def summary(name: str, times: list[float]) -> str:
    ms = [t * 1000 for t in times]
    return (f"{name:<22} median {statistics.median(ms):7.1f} ms   mean {statistics.mean(ms):7.1f}   "
            f"min {min(ms):7.1f}   max {max(ms):7.1f}   (n={len(ms)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    if not SDK_PYTHON.exists() or not MCP.exists():
        raise SystemExit("run scripts/install-peers (needs .cache/sdk-venv) and create .venv first")

    # As installed: with bytecode (PYTHONDONTWRITEBYTECODE would recompile every run).
    subprocess.run([str(REPO / ".venv/bin/python"), "-m", "compileall", "-q", str(REPO / "mcpcli")],
                   check=False, env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        root = Path(tmp)
        script = root / "server.py"
        script.write_text(SERVER)
        server = subprocess.Popen([str(SDK_PYTHON), str(script), str(port)], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        try:
            wait_listening(port, server)
            warm_env = isolated_env(root / "warm")
            mcp_argv = [str(MCP), "tools", "call", url, "echo", "--arg", "message=hi"]
            timed(mcp_argv, warm_env, "echo: hi")  # fills the cache

            before = counts(port)
            timed(mcp_argv, warm_env, "echo: hi")
            after = counts(port)
            posts = {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)}

            node = node_for_mcporter()
            have_mcporter = MCPORTER.exists() and node is not None
            porter_argv = [node or "node", str(MCPORTER), "call", "--allow-http", f"{url}.echo", "message=hi"]
            porter_env = isolated_env(root / "mcporter")
            if have_mcporter:
                timed(porter_argv, porter_env, "echo: hi")  # warm-up (and the OS file cache)

            warm: list[float] = []
            cold: list[float] = []
            porter: list[float] = []
            for i in range(args.runs):
                warm.append(timed(mcp_argv, warm_env, "echo: hi"))
                if have_mcporter:
                    porter.append(timed(porter_argv, porter_env, "echo: hi"))
                cold.append(timed(mcp_argv, isolated_env(root / f"cold{i}"), "echo: hi"))
        finally:
            server.terminate()
            try:
                server.wait(5)
            except subprocess.TimeoutExpired:
                server.kill()

    print(f"server: official Python SDK over Streamable HTTP at {url}")
    print(summary("mcp (warm cache)", warm))
    print(summary("mcp (cold cache)", cold))
    failed = False
    if porter:
        version = subprocess.run([node or "node", "--version"], capture_output=True, text=True, check=False).stdout.strip()
        print(summary(f"mcporter (node {version})", porter))
        ratio = statistics.median(warm) / statistics.median(porter)
        cold_ratio = statistics.median(cold) / statistics.median(porter)
        best = min(warm) / min(porter)
        print(f"ratio mcp/mcporter (medians): {ratio:.2f} warm, {cold_ratio:.2f} cold; "
              f"best runs: {best:.2f} (target <= {TARGET_RATIO})")
        failed |= ratio > TARGET_RATIO
    else:
        print("mcporter not installed: npm install --prefix .cache/mcporter mcporter@0.12.3")
    print(f"requests of one warm mcp call: {json.dumps(posts, sort_keys=True)}")
    failed |= posts != {"POST tools/call": 1}
    return 1 if failed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
