#!/usr/bin/env python3
"""Benchmark: warm calls through the session daemon (issue 11), below the command side.

    scripts/bench_daemon.py [--runs N] [--check]

Starts a daemon (its run directory in a temp dir) holding one session on
server-everything over stdio, and times, in the same run:

* `python -c pass` (the interpreter's own start-up, the issue's yardstick);
* a fresh interpreter that imports only `mcpcli.daemon.protocol` and makes one
  `call` op (`echo`, message=hi): the floor of the command side's fast path for
  `mcp tools call @ev echo --arg message=hi`; target (issue 11): at most 3x `python -c pass`;
* 100 sequential `call` ops from one process, and 20 concurrent attached
  `tools/call`s: the daemon's own cost per call.

Needs server-everything (scripts/install-peers). With `--check` the exit status
is 1 when the fast-path floor misses its target.
"""

from __future__ import annotations

import argparse
import os
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

from mcpcli.daemon import protocol  # noqa: E402

EVERYTHING = Path(os.environ.get(
    "MCPCLI_TEST_SERVER_EVERYTHING",
    REPO / ".cache/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
TARGET_RATIO = 3.0

ONE_CALL = """
import socket, sys
from mcpcli.daemon import protocol
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
protocol.send(s, protocol.request("call", name="ev", tool="echo", args=["message=hi"],
                                  json=None, timeout=None, validate=True))
answer = protocol.LineReader(s).read()
assert answer and answer["ok"], answer
"""


def control(sock_path: str, op: str, **fields: object) -> dict[str, object]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(sock_path)
        protocol.send(sock, protocol.request(op, **fields))
        answer = protocol.LineReader(sock).read()
    assert answer is not None
    return answer


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdin=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--check", action="store_true")
    opts = parser.parse_args()
    if not EVERYTHING.exists():
        print(f"server-everything not found at {EVERYTHING}: run scripts/install-peers", file=sys.stderr)
        return 2
    run_dir = Path(tempfile.mkdtemp(prefix="mcpd-bench-"))
    os.chmod(run_dir, 0o700)
    env = {**os.environ, "MCPCLI_RUNTIME_DIR": str(run_dir), "PYTHONPATH": str(REPO)}
    sock_path = str(run_dir / "daemon.sock")
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
        entry = {"name": "ev", "command": "node", "args": [str(EVERYTHING), "stdio"], "transport": "stdio"}
        opened = control(sock_path, "open", name="ev", entry=entry, connect={}, client={})
        assert opened["ok"], opened
        control(sock_path, "call", name="ev", tool="echo", args=["message=warm"], json=None,
                timeout=None, validate=True)

        bare, fast = [], []
        for _ in range(opts.runs):  # interleaved, so both see the same machine
            bare.append(timed([sys.executable, "-c", "pass"], env))
            fast.append(timed([sys.executable, "-c", ONE_CALL, sock_path], env))

        start = time.perf_counter()
        for _ in range(100):
            control(sock_path, "call", name="ev", tool="echo", args=["message=hi"], json=None,
                    timeout=None, validate=True)
        sequential = time.perf_counter() - start

        def attached_call(n: int) -> None:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(sock_path)
                reader = protocol.LineReader(sock)
                protocol.send(sock, protocol.request("attach", name="ev"))
                assert (reader.read() or {}).get("ok")
                protocol.send(sock, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
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
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
        log.close()

    bare_ms, fast_ms = statistics.median(bare) * 1000, statistics.median(fast) * 1000
    ratio = fast_ms / bare_ms
    print(f"python -c pass:                          median {bare_ms:6.1f} ms")
    print(f"fresh process, one call op (fast floor): median {fast_ms:6.1f} ms  ({ratio:.2f}x, target <= {TARGET_RATIO}x)")
    print(f"100 sequential call ops, one process:    total  {sequential * 1000:6.0f} ms")
    print(f"20 concurrent attached tools/call:       total  {concurrent * 1000:6.0f} ms")
    return 1 if opts.check and ratio > TARGET_RATIO else 0


if __name__ == "__main__":
    sys.exit(main())
