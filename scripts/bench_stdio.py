#!/usr/bin/env python3
"""Benchmark: a one-shot `mcp tools call` over stdio against server-everything, vs a floor.

    .venv/bin/python scripts/bench_stdio.py [--runs N] [--node MAJOR] [--against MCP] [--json]

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

The server runs on the system Node and on Node 24 (the Node the peers require; fetched
from the npm registry into $MCPCLI_CACHE/node24 when the system one is another major,
scripts/nodes.py), each floor interleaved with its call: a faster Node lowers the floor
and so shows our share better. `--node MAJOR` picks other majors. `--against MCP` measures
another build (a venv of the previous main, say) in the same rounds, beside this one.

Targets (issues 2 and 26): mcp <= 1.2x floor on Node 24, <= 1.15x on the system Node 20;
help < 80 ms; rss < 45 MiB. Not a test:
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
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "scripts"))

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


def nodes_to_run(wanted: list[int], system_node: str) -> dict[str, str]:
    """Label -> node binary: the system node, and each major in `wanted` (from npm when the
    system one is another major; scripts/nodes.py, cached under $MCPCLI_CACHE/node<major>)."""
    import nodes

    found = {f"node {nodes.node_major(system_node)} (system)": system_node}
    for major in wanted:
        if nodes.node_major(system_node) == major:
            continue
        try:
            found[f"node {major}"] = str(nodes.node_exactly(major, lambda m: print(f"bench: {m}", file=sys.stderr)))
        except nodes.NodeError as exc:
            raise SystemExit(f"bench: node {major}: {exc}") from None
    return found


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(samples) * 1000, 1),
        "min_ms": round(min(samples) * 1000, 1),
        "max_ms": round(max(samples) * 1000, 1),
    }


def paired(calls: list[float], floors: list[float]) -> float:
    """The median of the per-round ratios (each call against the floor run just before it):
    steadier than the ratio of the medians, which hides how the two sides moved together."""
    return round(statistics.median(c / f for c, f in zip(calls, floors, strict=True)), 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="samples of each measurement (default 15)")
    parser.add_argument("--node", type=int, action="append", default=None, metavar="MAJOR",
                        help="also run the server on Node MAJOR from npm (default: 24; repeatable)")
    parser.add_argument("--against", metavar="MCP",
                        help="another build's mcp (say, a venv of the previous main), measured in the "
                             "same rounds: each figure is then given for both")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()

    bash = shutil.which("bash")
    if bash is None:
        raise SystemExit("bench: bash is needed for the floor script")
    builds = {"mcp": str(Path(sys.executable).parent / "mcp")}
    if args.against:
        builds["before"] = str(Path(args.against).absolute())
    server = server_argv()
    node_bins = nodes_to_run(args.node or [24], server[0])
    home = tempfile.mkdtemp(prefix="mcp-bench-")
    env = dict(os.environ, XDG_CONFIG_HOME=home, XDG_CACHE_HOME=home, XDG_STATE_HOME=home,
               MCP_NO_DISCOVERY="1", NO_COLOR="1")
    # An installed package has its bytecode compiled; with PYTHONDONTWRITEBYTECODE set
    # (as in some sandboxes) every run would compile our modules from source again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    sides: dict[str, dict[str, Any]] = {}
    for label, node in node_bins.items():
        argv = [node, *server[1:]]
        sides[label] = {
            "argv": argv,
            "floor": [bash, "-c", FLOOR_SCRIPT, "floor", *argv],
            "floor_t": [], "floor_cpu": [],
            **{f"{build}_t": [] for build in builds}, **{f"{build}_cpu": [] for build in builds},
        }

    def call(build: str, argv: list[str]) -> list[str]:
        return [builds[build], "tools", "call", "echo", "--arg", "message=hi", "-q", "--", *argv]

    # Warm the OS caches (node's modules, our .pyc files) before measuring.
    for _ in range(2):
        for side in sides.values():
            timed(side["floor"], env)
            for build in builds:
                timed(call(build, side["argv"]), env)
        for build in builds:
            timed([builds[build], "--help"], env)

    for round_ in range(args.runs):
        # Each round: the floor, then each build's call right after it (their order
        # alternating from round to round, so neither always runs on a machine just woken).
        order = list(builds) if round_ % 2 == 0 else list(reversed(builds))
        for side in sides.values():
            elapsed, done = timed(side["floor"], env)
            assert '"Echo: hi"' in done.stdout, done.stdout
            side["floor_t"].append(elapsed)
            side["floor_cpu"].append(LAST_CPU[0])
            for build in order:
                elapsed, done = timed(call(build, side["argv"]), env)
                assert json.loads(done.stdout)["content"][0]["text"] == "Echo: hi"
                side[f"{build}_t"].append(elapsed)
                side[f"{build}_cpu"].append(LAST_CPU[0])
    # Start-up time on its own, not right after a server was stopped: it measures mcp, not
    # a machine still reaping node.
    help_t: dict[str, list[float]] = {build: [] for build in builds}
    for _ in range(args.runs):
        for build in builds:
            help_t[build].append(timed([builds[build], "--help"], env)[0])

    rss: dict[str, list[int]] = {build: [] for build in builds}
    self_cpu: dict[str, list[float]] = {build: [] for build in builds}
    full_cpu: list[float] = []
    full_env = dict(env, MCPCLI_NO_FAST_PATH="1")
    argv = list(sides.values())[-1]["argv"]
    for _ in range(max(3, args.runs)):
        runs = [(build, env) for build in builds] + [("mcp", full_env)]
        for build, side_env in runs:
            python = str(Path(builds[build]).parent / "python")
            _, done = timed([python, "-c", RSS_WRAPPER, *call(build, argv)[1:]], side_env)
            values = dict(x.split("=", 1) for x in done.stderr.splitlines()
                          if x.startswith(("MAXRSS_KB=", "CPU_MS=")))
            if side_env is env:
                rss[build].append(int(values["MAXRSS_KB"]))
                self_cpu[build].append(float(values["CPU_MS"]))
            else:
                full_cpu.append(float(values["CPU_MS"]))
    shutil.rmtree(home, ignore_errors=True)

    per_node: dict[str, Any] = {}
    for label, side in sides.items():
        cpu_floor = statistics.median(side["floor_cpu"]) * 1000
        got: dict[str, Any] = {"floor": summary(side["floor_t"]), "cpu_ms": {"floor": round(cpu_floor, 1)}}
        for build in builds:
            call_s = summary(side[f"{build}_t"])
            cpu_call = statistics.median(side[f"{build}_cpu"]) * 1000
            got[build] = {
                "tools_call": call_s,
                "ratio_to_floor": round(call_s["median_ms"] / got["floor"]["median_ms"], 2),
                "median_paired_ratio": paired(side[f"{build}_t"], side["floor_t"]),
                "cpu_ms": round(cpu_call, 1), "cpu_own_ms": round(cpu_call - cpu_floor, 1),
                "cpu_ratio": paired(side[f"{build}_cpu"], side["floor_cpu"]),
            }
        per_node[label] = got
    results: dict[str, Any] = {
        "runs": args.runs,
        "load_average": round(os.getloadavg()[0], 2),
        "server": [Path(a).name for a in server[1:]],
        "builds": builds,
        "nodes": per_node,
        "mcp_process_cpu_ms": {build: round(statistics.median(self_cpu[build]), 1) for build in builds},
        "mcp_process_cpu_ms_full_path": round(statistics.median(full_cpu), 1),
        "mcp_help": {build: summary(help_t[build]) for build in builds},
        "peak_rss_mib": {build: round(max(rss[build]) / 1024, 1) for build in builds},
    }
    mine = per_node
    results["targets"] = {
        **{f"{label}: ratio<={goal}": mine[label]["mcp"]["median_paired_ratio"] <= goal
           for label, goal in ((label, 1.15 if "system" in label else 1.2) for label in mine)},
        "help<80ms": results["mcp_help"]["mcp"]["median_ms"] < 80,
        "rss<45MiB": results["peak_rss_mib"]["mcp"] < 45,
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"runs: {args.runs} (interleaved), server: {' '.join(results['server'])}, "
          f"load average {results['load_average']} on {os.cpu_count()} CPUs")
    if "before" in builds:
        print(f"before: {builds['before']} (each figure: this build, then [before])")

    def both(fmt: str, values: dict[str, Any]) -> str:
        shown = fmt.format(values["mcp"])
        return shown + (f"  [{fmt.format(values['before']).strip()}]" if "before" in values else "")

    for label, got in per_node.items():
        floor_s = got["floor"]
        print(f"== server on {label}")
        print(f"floor (bash JSON-RPC exchange)   median {floor_s['median_ms']:7.1f} ms  "
              f"(min {floor_s['min_ms']:.1f}, max {floor_s['max_ms']:.1f}); CPU {got['cpu_ms']['floor']:.1f} ms")
        print("mcp tools call                   median "
              + both("{[median_ms]:7.1f} ms", {b: got[b]["tools_call"] for b in builds}))
        print("ratio to floor (paired rounds)   "
              + both("{:.2f}x", {b: got[b]["median_paired_ratio"] for b in builds})
              + "   ratio of medians " + both("{:.2f}x", {b: got[b]["ratio_to_floor"] for b in builds}))
        print("CPU (user+sys, with the server)  "
              + both("{:.2f}x", {b: got[b]["cpu_ratio"] for b in builds})
              + "   mcp's own share about " + both("{:.1f} ms", {b: got[b]["cpu_own_ms"] for b in builds}))
    print("==")
    print("CPU of the mcp process alone     median "
          + both("{:.1f} ms", results["mcp_process_cpu_ms"]) + " (imports, the exchange, output; no server)")
    print(f"  the same on the full path      median {results['mcp_process_cpu_ms_full_path']:.1f} ms "
          f"(MCPCLI_NO_FAST_PATH=1; this build)")
    print("mcp --help                       median " + both("{[median_ms]:7.1f} ms", results["mcp_help"]))
    print("peak RSS of a one-shot call      " + both("{:7.1f} MiB", results["peak_rss_mib"]))
    print("targets: " + ", ".join(f"{name} {'met' if ok else 'NOT met'}"
                                  for name, ok in results["targets"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
