#!/usr/bin/env python3
"""Benchmark: a one-shot `mcp tools call` over stdio against server-everything, vs a floor.

    .venv/bin/python scripts/bench_stdio.py [--runs N] [--json]

Measures, in the same run and interleaved so machine noise hits both alike:
  floor    a direct JSON-RPC exchange from a bash script: spawn the server, initialize,
           initialized, tools/call echo, read the answer, kill it
  mcp      `mcp tools call echo --arg message=hi -- node server-everything stdio`
           (the whole command: start-up, era probe, handshake, tools/list for
           validation, the call, output, shutdown of the server)
  help     `mcp --help`
  rss      peak RSS of the mcp process of a one-shot call (not counting the server)
  self     CPU time of that mcp process alone (the server, bash and node excluded), on the
           one-shot fast path (`mcpcli/cli/oneshot.py`) and, interleaved with it, on the full
           path (MCPCLI_NO_FAST_PATH=1: click, anyio and the client)

  cpu      CPU time (user + sys) of each, server included: far less sensitive to other
           load on the machine than wall time, so it shows mcp's own cost even on a busy box

Targets (issue 2): mcp <= 1.3x floor; help < 80 ms; rss < 45 MiB. Not a test:
the numbers depend on the machine (and its load, printed); it prints them and says
which targets were met.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

FLOOR_SCRIPT = r"""
set -e
coproc SRV { exec "$@" 2>/dev/null; }
send() { printf '%s\n' "$1" >&"${SRV[1]}"; }
send '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"1"}}}'
while read -r line <&"${SRV[0]}"; do case "$line" in *'"id":1'*) break;; esac; done
send '{"jsonrpc":"2.0","method":"notifications/initialized"}'
send '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}'
while read -r line <&"${SRV[0]}"; do case "$line" in *'"id":2'*) echo "$line"; break;; esac; done
kill "$SRV_PID"
wait "$SRV_PID" 2>/dev/null || true
"""

RSS_WRAPPER = (
    "import atexit, resource, sys\n"
    "def report():\n"
    "    usage = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    sys.stderr.write('MAXRSS_KB=%d\\n' % usage.ru_maxrss)\n"
    "    sys.stderr.write('CPU_MS=%.1f\\n' % ((usage.ru_utime + usage.ru_stime) * 1000))\n"
    "atexit.register(report)\n"
    "from mcpcli.cli import main\n"
    "sys.argv[0] = 'mcp'\n"
    "raise SystemExit(main())\n"
)


#: CPU seconds (user + sys) of the last `timed` run and everything it started.
LAST_CPU: list[float] = [0.0]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess[str]]:
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    elapsed = time.perf_counter() - start
    LAST_CPU[0] = _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"bench: {' '.join(argv[:4])}... failed ({done.returncode}): {done.stderr[-500:]}")
    return elapsed, done


def server_argv() -> list[str]:
    from helpers import peers_from_env

    peers = peers_from_env()
    if not peers.server_everything or not peers.node:
        raise SystemExit("bench: server-everything is not installed (run scripts/install-peers)")
    return peers.everything_stdio()


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(samples) * 1000, 1),
        "min_ms": round(min(samples) * 1000, 1),
        "max_ms": round(max(samples) * 1000, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="samples of each measurement (default 15)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()

    bash = shutil.which("bash")
    if bash is None:
        raise SystemExit("bench: bash is needed for the floor script")
    mcp = str(Path(sys.executable).parent / "mcp")
    server = server_argv()
    home = tempfile.mkdtemp(prefix="mcp-bench-")
    env = dict(os.environ, XDG_CONFIG_HOME=home, XDG_CACHE_HOME=home, XDG_STATE_HOME=home,
               MCP_NO_DISCOVERY="1", NO_COLOR="1")
    # An installed package has its bytecode compiled; with PYTHONDONTWRITEBYTECODE set
    # (as in some sandboxes) every run would compile our modules from source again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    call = [mcp, "tools", "call", "echo", "--arg", "message=hi", "-q", "--", *server]
    floor = [bash, "-c", FLOOR_SCRIPT, "floor", *server]

    # Warm the OS caches (node's modules, our .pyc files) before measuring.
    for _ in range(2):
        timed(floor, env)
        timed(call, env)
        timed([mcp, "--help"], env)

    floor_t: list[float] = []
    call_t: list[float] = []
    help_t: list[float] = []
    floor_cpu: list[float] = []
    call_cpu: list[float] = []
    for _ in range(args.runs):
        elapsed, done = timed(floor, env)
        assert '"Echo: hi"' in done.stdout, done.stdout
        floor_t.append(elapsed)
        floor_cpu.append(LAST_CPU[0])
        elapsed, done = timed(call, env)
        assert json.loads(done.stdout)["content"][0]["text"] == "Echo: hi"
        call_t.append(elapsed)
        call_cpu.append(LAST_CPU[0])
    # Start-up time on its own, not right after a server was stopped: it measures mcp, not
    # a machine still reaping node.
    for _ in range(args.runs):
        help_t.append(timed([mcp, "--help"], env)[0])

    rss: list[int] = []
    self_cpu: list[float] = []
    full_cpu: list[float] = []
    full_env = dict(env, MCPCLI_NO_FAST_PATH="1")
    for _ in range(max(3, args.runs)):
        for side_env, cpu_samples in ((env, self_cpu), (full_env, full_cpu)):
            _, done = timed([sys.executable, "-c", RSS_WRAPPER, *call[1:]], side_env)
            values = dict(x.split("=", 1) for x in done.stderr.splitlines()
                          if x.startswith(("MAXRSS_KB=", "CPU_MS=")))
            if side_env is env:
                rss.append(int(values["MAXRSS_KB"]))
            cpu_samples.append(float(values["CPU_MS"]))
    shutil.rmtree(home, ignore_errors=True)

    floor_s, call_s, help_s = summary(floor_t), summary(call_t), summary(help_t)
    ratio = round(call_s["median_ms"] / floor_s["median_ms"], 2)
    rss_mib = round(max(rss) / 1024, 1)
    cpu_floor = round(statistics.median(floor_cpu) * 1000, 1)
    cpu_call = round(statistics.median(call_cpu) * 1000, 1)
    results = {
        "runs": args.runs,
        "load_average": round(os.getloadavg()[0], 2),
        "cpu_ms": {"floor": cpu_floor, "mcp_tools_call": cpu_call,
                   "mcp_own": round(cpu_call - cpu_floor, 1),
                   "mcp_process": round(statistics.median(self_cpu), 1),
                   "mcp_process_full_path": round(statistics.median(full_cpu), 1)},
        "floor": floor_s,
        "mcp_tools_call": call_s,
        "ratio_to_floor": ratio,
        "mcp_help": help_s,
        "peak_rss_mib": rss_mib,
        "targets": {
            "ratio<=1.3": ratio <= 1.3,
            "help<80ms": help_s["median_ms"] < 80,
            "rss<45MiB": rss_mib < 45,
        },
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"runs: {args.runs} (interleaved), server: {' '.join(Path(a).name for a in server)}, "
          f"load average {results['load_average']} on {os.cpu_count()} CPUs")
    print(f"floor (bash JSON-RPC exchange)   median {floor_s['median_ms']:7.1f} ms  "
          f"(min {floor_s['min_ms']:.1f}, max {floor_s['max_ms']:.1f})")
    print(f"mcp tools call                   median {call_s['median_ms']:7.1f} ms  "
          f"(min {call_s['min_ms']:.1f}, max {call_s['max_ms']:.1f})")
    print(f"ratio to floor                   {ratio:.2f}x   (target <= 1.3x: "
          f"{'met' if results['targets']['ratio<=1.3'] else 'NOT met'})")
    print(f"CPU (user+sys, with the server)  floor {cpu_floor:.1f} ms, mcp {cpu_call:.1f} ms "
          f"(mcp's own share about {cpu_call - cpu_floor:.1f} ms)")
    print(f"CPU of the mcp process alone      median {results['cpu_ms']['mcp_process']:.1f} ms "
          "(imports, the exchange, output; no server)")
    print(f"  the same on the full path       median {results['cpu_ms']['mcp_process_full_path']:.1f} ms "
          f"(MCPCLI_NO_FAST_PATH=1; {statistics.median(self_cpu) / statistics.median(full_cpu):.2f}x)")
    print(f"mcp --help                       median {help_s['median_ms']:7.1f} ms  (target < 80 ms: "
          f"{'met' if results['targets']['help<80ms'] else 'NOT met'})")
    print(f"peak RSS of a one-shot call      {rss_mib:7.1f} MiB (target < 45 MiB: "
          f"{'met' if results['targets']['rss<45MiB'] else 'NOT met'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
