#!/usr/bin/env python3
"""Benchmark: warm calls through the session daemon (issue 11).

    scripts/bench_daemon.py [--runs N] [--check]

Starts a daemon (its run directory in a temp dir) holding one session on
server-everything over stdio, and times, interleaved in the same run:

* `python -c pass` (the interpreter's own start-up, the issue's yardstick);
* `mcp tools call @ev echo --arg message=hi` through the real `mcp` entry point
  (.venv/bin/mcp, stdout a pipe: the fast path, `mcpcli/cli/fast.py`); target
  (issue 11): at most 3x `python -c pass`;
* the same with MCPCLI_NO_FAST_PATH=1 (the normal path: click, anyio, attach);
* the same call with the common flags (`--json`, `--jq FILTER -r`, `--max-chars N`,
  `--meta K=V`), each on the fast path (issue 22);
* `mcp tools call ka echo ...`: a server configured with `"keepAlive": true`, called
  by its name (its session opened by the first call), on the fast path and on the
  normal path; target (issue 22): at most 3x `python -c pass`, as `@ev`;
* a fresh interpreter that imports only `mcpcli.core.localrpc` and `mcpcli.localsocket` and makes one
  `call` op: the floor of the fast path;
* when installed (benchmark only, never by scripts/test), the peers' session
  calls on the same server: mcporter's daemon (`npm install --prefix
  .cache/mcporter mcporter@0.12.3`, a keep-alive server in a private HOME) and
  apify's mcpc (`npm install --prefix .cache/mcpc @apify/mcpc@0.2.6`, a named
  session); target: at most 0.2x their time;

then, once: 100 sequential `mcp tools call @ev ...` in a shell loop and 20 concurrent
ones (totals), 100 sequential `call` ops from one process, and 20 concurrent attached
`tools/call`s (the daemon's own cost).

Needs server-everything (scripts/install-peers). With `--check` the exit status
is 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mcpcli import localsocket  # noqa: E402
from mcpcli.core import localrpc as protocol  # noqa: E402

EVERYTHING = Path(os.environ.get(
    "MCPCLI_TEST_SERVER_EVERYTHING",
    REPO / ".cache/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
TARGET_RATIO = 3.0
PEER_RATIO = 0.2
MCP = REPO / ".venv/bin/mcp"
MCPORTER = REPO / ".cache/mcporter/node_modules/mcporter/dist/cli.js"
MCPC = REPO / ".cache/mcpc/node_modules/@apify/mcpc/bin/mcpc"

ONE_CALL = """
import socket, sys
from mcpcli import localsocket
from mcpcli.core import localrpc as protocol
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
localsocket.send(s, protocol.request("call", name="ev", tool="echo", args=["message=hi"],
                                  json=None, timeout=None, validate=True))
answer = localsocket.LineReader(s).read()
assert answer and answer["ok"], answer
"""


def control(sock_path: str, op: str, **fields: object) -> dict[str, object]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(sock_path)
        localsocket.send(sock, protocol.request(op, **fields))
        answer = localsocket.LineReader(sock).read()
    assert answer is not None
    return answer


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str], expect: str | None = None,
          cpu: list[float] | None = None) -> float:
    """Wall seconds of one run of `argv`; its CPU seconds (user + system) go to `cpu`, which
    a busy machine changes less than the wall time."""
    before = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if cpu is not None:
        cpu.append(_children_cpu() - before)
    if proc.returncode != 0 or (expect is not None and expect not in proc.stdout):
        raise SystemExit(f"{argv[:3]} failed ({proc.returncode}): {proc.stdout[-300:]} {proc.stderr[-500:]}")
    return elapsed


def private_home(home: Path, env: dict[str, str]) -> dict[str, str]:
    """A peer's environment with its own HOME and XDG dirs (nothing of the user's is read)."""
    for sub in ("config", "cache", "state", "data"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    return {**env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_CACHE_HOME": str(home / "cache"), "XDG_STATE_HOME": str(home / "state"),
            "XDG_DATA_HOME": str(home / "data"), "NO_COLOR": "1"}


class Peer:
    """A peer CLI's session call: `setup` once, then `argv` timed, `teardown` at the end."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], expect: str,
                 setup: list[list[str]], teardown: list[list[str]]) -> None:
        self.name, self.argv, self.env, self.expect = name, argv, env, expect
        self.setup, self.teardown = setup, teardown
        self.times: list[float] = []

    def start(self) -> bool:
        for argv in self.setup:
            proc = subprocess.run(argv, env=self.env, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, check=False, timeout=120)
            if proc.returncode != 0:
                print(f"{self.name}: set-up failed, left out: {proc.stdout[-300:]} {proc.stderr[-300:]}",
                      file=sys.stderr)
                return False
        try:
            timed(self.argv, self.env, self.expect)  # warm: the session/daemon is up
        except SystemExit as exc:
            print(f"{self.name}: left out: {exc}", file=sys.stderr)
            return False
        return True

    def stop(self) -> None:
        for argv in self.teardown:
            subprocess.run(argv, env=self.env, stdin=subprocess.DEVNULL, capture_output=True, check=False,
                           timeout=60)


def peers(root: Path, env: dict[str, str], server: list[str]) -> list[Peer]:
    """The installed peers, each holding a session on the same server command."""
    node = shutil.which("node") or "node"
    found = []
    if MCPORTER.exists():
        home = root / "mcporter"
        porter_env = private_home(home, env)
        config = home / "mcporter.json"
        config.write_text(json.dumps({"mcpServers": {"ev": {
            "command": server[0], "args": server[1:], "lifecycle": "keep-alive"}}}))
        porter = [node, str(MCPORTER), "--config", str(config)]
        found.append(Peer("mcporter daemon call", [*porter, "call", "ev.echo", "message=hi"], porter_env,
                          "Echo: hi", [[*porter, "daemon", "start"]], [[*porter, "daemon", "stop"]]))
    if MCPC.exists():
        home = root / "mcpc"
        mcpc_env = private_home(home, env)
        config = home / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"ev": {"command": server[0], "args": server[1:]}}}))
        mcpc = [str(MCPC)]
        found.append(Peer("mcpc session call", [*mcpc, "@ev", "tools-call", "echo", "message:=hi"], mcpc_env,
                          "Echo: hi", [[*mcpc, "connect", f"{config}:ev", "@ev"]],
                          [[*mcpc, "@ev", "close"]]))
    return found


def shell_total(script: str, env: dict[str, str]) -> float:
    """Seconds for a bash script (a loop of `mcp` commands), as a user's shell runs it."""
    start = time.perf_counter()
    subprocess.run(["bash", "-c", script], check=True, env=env, stdin=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--check", action="store_true")
    opts = parser.parse_args()
    if not EVERYTHING.exists():
        print(f"server-everything not found at {EVERYTHING}: run scripts/install-peers", file=sys.stderr)
        return 2
    if not MCP.exists():
        print(f"{MCP} not found: create .venv first", file=sys.stderr)
        return 2
    # Compiled modules, as an installed mcpcli has them (this environment may forbid writing them).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "mcpcli")], check=False,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    root = Path(tempfile.mkdtemp(prefix="mcpd-bench-"))
    run_dir = root / "run"
    run_dir.mkdir(mode=0o700)
    env = {**os.environ, "MCPCLI_RUNTIME_DIR": str(run_dir), "PYTHONPATH": str(REPO)}
    env.pop("MCPCLI_NO_FAST_PATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    sock_path = str(run_dir / "daemon.sock")
    server = ["node", str(EVERYTHING), "stdio"]
    found = peers(root, env, server)
    started: list[Peer] = []
    log = open(run_dir / "daemon.log", "ab")  # noqa: SIM115 - open while the daemon runs
    daemon = subprocess.Popen([sys.executable, "-m", "mcpcli.daemon"], stdin=subprocess.DEVNULL,
                              stdout=log, stderr=log, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(sock_path):
            if time.monotonic() > deadline or daemon.poll() is not None:
                print("the daemon did not start", file=sys.stderr)
                return 2
            time.sleep(0.02)
        entry = {"name": "ev", "command": server[0], "args": server[1:], "transport": "stdio"}
        opened = control(sock_path, "open", name="ev", entry=entry, connect={}, client={})
        assert opened["ok"], opened
        mcp_call = [str(MCP), "tools", "call", "@ev", "echo", "--arg", "message=hi"]
        normal_env = {**env, "MCPCLI_NO_FAST_PATH": "1"}
        timed(mcp_call, env, "Echo: hi")  # warm: the OS file cache, the daemon's tool listing
        # A keepAlive server called by its name: the first call opens its session `ka`.
        config = root / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"ka": {
            "command": server[0], "args": server[1:], "keepAlive": True}}}))
        env["MCP_CONFIG"] = normal_env["MCP_CONFIG"] = str(config)
        ka_call = [str(MCP), "tools", "call", "ka", "echo", "--arg", "message=hi"]
        timed(ka_call, env, "Echo: hi")
        flagged = {
            "--json": [*mcp_call, "--json"],
            "--jq FILTER -r": [*mcp_call, "--jq", ".content[0].text", "-r"],
            "--max-chars 100": [*mcp_call, "--max-chars", "100"],
            "--meta trace=x": [*mcp_call, "--meta", "trace=x"],
        }
        started = [peer for peer in found if peer.start()]

        bare: list[float] = []
        fast: list[float] = []
        normal: list[float] = []
        floor: list[float] = []
        ka: list[float] = []
        ka_normal: list[float] = []
        flag_times: dict[str, list[float]] = {name: [] for name in flagged}
        sides: list[tuple[list[float], list[str], dict[str, str], str | None]] = [
            (bare, [sys.executable, "-c", "pass"], env, None),
            (fast, mcp_call, env, "Echo: hi"),
            (normal, mcp_call, normal_env, "Echo: hi"),
            (floor, [sys.executable, "-c", ONE_CALL, sock_path], env, None),
            (ka, ka_call, env, "Echo: hi"),
            (ka_normal, ka_call, normal_env, "Echo: hi"),
            *((flag_times[name], argv, env, "hi") for name, argv in flagged.items()),
            *((peer.times, peer.argv, peer.env, peer.expect) for peer in started),
        ]
        cpu: dict[int, list[float]] = {id(samples): [] for samples, *_ in sides}
        shuffler = random.Random(0)
        for _ in range(opts.runs):
            # Interleaved, so every side sees the same machine; in a new order each round, so
            # none always follows a heavy one (the normal path) and pays for its tail.
            shuffler.shuffle(sides)
            for samples, argv, side_env, expect in sides:
                samples.append(timed(argv, side_env, expect, cpu[id(samples)]))

        line = " ".join(mcp_call[1:])
        loop = shell_total(f'for i in $(seq 100); do "{MCP}" {line} >/dev/null || exit 1; done', env)
        spread = shell_total(f'for i in $(seq 20); do "{MCP}" {line} >/dev/null & done; wait', env)

        start = time.perf_counter()
        for _ in range(100):
            control(sock_path, "call", name="ev", tool="echo", args=["message=hi"], json=None,
                    timeout=None, validate=True)
        sequential = time.perf_counter() - start

        def attached_call(n: int) -> None:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(sock_path)
                reader = localsocket.LineReader(sock)
                localsocket.send(sock, protocol.request("attach", name="ev"))
                assert (reader.read() or {}).get("ok")
                localsocket.send(sock, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                     "params": {"name": "echo", "arguments": {"message": str(n)}}})
                while (message := reader.read()) is not None and message.get("id") != 1:
                    pass

        threads = [threading.Thread(target=attached_call, args=(n,)) for n in range(20)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        concurrent = time.perf_counter() - start
    finally:
        for peer in started:
            peer.stop()
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
        log.close()
        shutil.rmtree(root, ignore_errors=True)

    def median_ms(samples: list[float]) -> float:
        return statistics.median(samples) * 1000

    def cpu_ratio(samples: list[float]) -> str:
        return f"; CPU {statistics.median(cpu[id(samples)]) / statistics.median(cpu[id(bare)]):.2f}x"

    bare_ms, fast_ms = median_ms(bare), median_ms(fast)
    ratio = fast_ms / bare_ms
    missed = ratio > TARGET_RATIO
    print(f"python -c pass:                               median {bare_ms:6.1f} ms  "
          f"(CPU {statistics.median(cpu[id(bare)]) * 1000:.1f} ms)")
    print(f"mcp tools call @ev echo (fast path):          median {fast_ms:6.1f} ms  "
          f"({ratio:.2f}x, target <= {TARGET_RATIO}x{cpu_ratio(fast)})")
    print(f"the same, normal path (MCPCLI_NO_FAST_PATH):  median {median_ms(normal):6.1f} ms  "
          f"({median_ms(normal) / bare_ms:.2f}x{cpu_ratio(normal)})")
    print(f"fresh process, one call op (the floor):       median {median_ms(floor):6.1f} ms  "
          f"({median_ms(floor) / bare_ms:.2f}x)")
    for name, samples in flag_times.items():
        flag_ratio = median_ms(samples) / bare_ms
        missed = missed or flag_ratio > TARGET_RATIO
        print(f"{'the same with ' + name + ':':45} median {median_ms(samples):6.1f} ms  "
              f"({flag_ratio:.2f}x, target <= {TARGET_RATIO}x{cpu_ratio(samples)})")
    ka_ratio = median_ms(ka) / bare_ms
    missed = missed or ka_ratio > TARGET_RATIO
    print(f"mcp tools call ka echo (keepAlive, by name):  median {median_ms(ka):6.1f} ms  "
          f"({ka_ratio:.2f}x, target <= {TARGET_RATIO}x{cpu_ratio(ka)})")
    print(f"the same, normal path (MCPCLI_NO_FAST_PATH):  median {median_ms(ka_normal):6.1f} ms  "
          f"({median_ms(ka_normal) / bare_ms:.2f}x{cpu_ratio(ka_normal)})")
    for peer in started:
        peer_ms = median_ms(peer.times)
        share = fast_ms / peer_ms
        missed = missed or share > PEER_RATIO
        print(f"{peer.name + ':':45} median {peer_ms:6.1f} ms  (mcp: {share:.2f}x, target <= {PEER_RATIO}x)")
    for peer in found:
        if peer not in started:
            print(f"{peer.name}: left out (see above)")
    print(f"100 sequential mcp tools call @ev, shell loop: total  {loop * 1000:6.0f} ms")
    print(f"20 concurrent mcp tools call @ev (& ... wait): total  {spread * 1000:6.0f} ms")
    print(f"100 sequential call ops, one process:         total  {sequential * 1000:6.0f} ms")
    print(f"20 concurrent attached tools/call:            total  {concurrent * 1000:6.0f} ms")
    return 1 if opts.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
