"""Helpers shared by the task tests: the fake task server, what it received, --trace lines."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from helpers import wait_until

FAKE_TASKS = Path(__file__).resolve().parent / "fake_task_server.py"
EXT = "io.modelcontextprotocol/tasks"


def task_server(*args: str) -> list[str]:
    return [sys.executable, str(FAKE_TASKS), *args]


def received(record: Path) -> list[dict[str, Any]]:
    """What the fake server received: [{"msg": ..., "headers": ...}]."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]


def methods(record: Path) -> list[str]:
    return [r["msg"].get("method", "(reply)") for r in received(record)]


def sent(trace: str, method: str) -> list[dict[str, Any]]:
    """The requests of `method` that --trace shows we sent."""
    out = []
    for line in trace.splitlines():
        if line.startswith("→ ") and f'"method":"{method}"' in line:
            out.append(json.loads(line[2:]))
    return out


class Running:
    """A `mcp` process whose stderr is collected as it runs (to signal it at the right time)."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcpcli", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.stderr = ""
        assert self.proc.stderr is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stderr,), daemon=True)
        self._reader.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.stderr += line

    def wait_for(self, text: str) -> None:
        wait_until(lambda: text in self.stderr or self.proc.poll() is not None, 30, repr(text))
        assert text in self.stderr, self.stderr

    def interrupt(self) -> tuple[int, str, str]:
        self.proc.send_signal(signal.SIGINT)
        assert self.proc.stdout is not None
        out = self.proc.stdout.read()
        code = self.proc.wait(timeout=20)
        self._reader.join(5)
        self.proc.stdout.close()
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        return code, out, self.stderr
