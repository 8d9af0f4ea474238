#!/usr/bin/env python3
"""Benchmark: how long `mcp inspect` takes to a usable screen (issue 25).

    .venv/bin/python scripts/bench_inspect.py [--runs N]

Runs the real `mcp inspect -- node server-everything stdio` on a pseudo-terminal, plays
what it draws through a VT emulator (pyte, the test extra) and times, from the exec
until the tools list is on the screen (the "Tools (N)" tab label, drawn once the
listing arrived), then quits with Ctrl+Q and times the exit. Interleaved with the
same for `mcp tools list -- ...` (the command-line client's own connect-and-list, no
Textual) and `python -c "import textual.app"` (Textual's import alone), so the three
see the same machine. Medians over --runs (default 7). Needs server-everything
(scripts/install-peers).
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COLUMNS, LINES = 120, 40


def everything() -> list[str]:
    script = os.environ.get("MCPCLI_TEST_SERVER_EVERYTHING") or str(
        REPO / ".cache/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
    cache = os.environ.get("MCPCLI_CACHE")
    if not Path(script).exists() and cache:
        script = str(Path(cache) / "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
    if not Path(script).exists():
        sys.exit("bench_inspect: server-everything is not installed (scripts/install-peers)")
    return ["node", script, "stdio"]


def inspect_once(server: list[str]) -> tuple[float, float]:
    """(seconds to the tools list on screen, seconds from Ctrl+Q to the exit)."""
    import fcntl
    import struct
    import termios

    import pyte

    screen = pyte.Screen(COLUMNS, LINES)
    stream = pyte.ByteStream(screen)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color"}
    start = time.perf_counter()
    proc = subprocess.Popen([str(REPO / ".venv/bin/mcp"), "inspect", "--", *server], stdin=slave, stdout=slave,
                            stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    ready = None
    try:
        while ready is None:
            if time.perf_counter() - start > 60:
                raise SystemExit("bench_inspect: no tools list after 60 s")
            if select.select([master], [], [], 0.05)[0]:
                stream.feed(os.read(master, 65536))
                if any("Tools (" in line for line in screen.display[:3]):
                    ready = time.perf_counter() - start
        os.write(master, b"\x11")
        quit_at = time.perf_counter()
        while proc.poll() is None:
            if select.select([master], [], [], 0.05)[0]:
                try:
                    os.read(master, 65536)
                except OSError:
                    break
        proc.wait(30)
        return ready, time.perf_counter() - quit_at
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    server = everything()
    ready: list[float] = []
    quits: list[float] = []
    listing: list[float] = []
    textual: list[float] = []
    for _ in range(runs):
        to_screen, to_exit = inspect_once(server)
        ready.append(to_screen)
        quits.append(to_exit)
        listing.append(timed([str(REPO / ".venv/bin/mcp"), "tools", "list", "--json", "--", *server]))
        textual.append(timed([sys.executable, "-c", "import textual.app"]))

    def ms(values: list[float]) -> str:
        return f"median {statistics.median(values) * 1000:.0f} ms (min {min(values) * 1000:.0f}, " \
               f"max {max(values) * 1000:.0f})"

    load = os.getloadavg()[0]
    print(f"runs: {runs}, load {load:.1f}")
    print(f"mcp inspect, exec to the tools list on screen: {ms(ready)}")
    print(f"mcp inspect, Ctrl+Q to exit (server stopped):  {ms(quits)}")
    print(f"mcp tools list (same server, no Textual):      {ms(listing)}")
    print(f"python -c 'import textual.app':                {ms(textual)}")


if __name__ == "__main__":
    main()
