#!/usr/bin/env python3
"""Benchmark: what a stdio server that ignores EOF and SIGTERM costs a one-shot command.

    .venv/bin/python scripts/bench_stop.py [--runs N] [--json]

Runs `mcp tools call echo` against the test fake twice over, interleaved: a server
that exits on EOF, and the same one with --stubborn (it ignores EOF and SIGTERM and
leaves a grandchild in its process group). The difference of the medians is what
stopping a stubborn server adds to the command's exit: the EOF and TERM graces of
the stdio transport before SIGKILL of the group (issue 13: it was over a second).

Target: under 100 ms. Not a test: the numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FAKE = REPO / "tests" / "fakes" / "fake_stdio_server.py"
TARGET_MS = 100.0


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bench: {' '.join(argv[-3:])} failed ({done.returncode}): {done.stderr[-300:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="samples of each (default 10)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="mcp-bench-")
    env = dict(os.environ, XDG_CONFIG_HOME=home, XDG_CACHE_HOME=home, XDG_STATE_HOME=home,
               MCP_NO_DISCOVERY="1", NO_COLOR="1")
    base = [sys.executable, "-m", "mcpcli", "tools", "call", "echo", "--arg", "message=hi", "-q",
            "--", sys.executable, str(FAKE)]
    polite: list[float] = []
    stubborn: list[float] = []
    timed(base, env)
    for _ in range(args.runs):
        polite.append(timed(base, env))
        stubborn.append(timed([*base, "--stubborn"], env))
    extra = (statistics.median(stubborn) - statistics.median(polite)) * 1000
    result = {
        "polite_median_ms": round(statistics.median(polite) * 1000, 1),
        "stubborn_median_ms": round(statistics.median(stubborn) * 1000, 1),
        "stop_cost_ms": round(extra, 1),
        "target_ms": TARGET_MS,
        "met": extra < TARGET_MS,
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:20} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
