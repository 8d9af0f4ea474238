"""Where sign-in talks to the user: messages on stderr, a pasted redirect URL from stdin."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import IO

import anyio

__all__ = ["AuthUI", "read_line"]


@dataclass
class AuthUI:
    """Where sign-in talks to the user: messages on stderr, a pasted URL from stdin."""

    stderr: IO[str] = field(default_factory=lambda: sys.stderr)
    stdin: IO[str] = field(default_factory=lambda: sys.stdin)
    prog: str = "mcp"

    def notice(self, message: str) -> None:
        from mcpcli.text import printable

        self.stderr.write(f"{self.prog}: {printable(message)}\n")
        self.stderr.flush()

    @property
    def stdin_tty(self) -> bool:
        try:
            return self.stdin.isatty()
        except (AttributeError, ValueError):
            return False


async def read_line(stream: IO[str]) -> str:
    """One line from `stream` without a thread that could outlive the process."""
    import threading

    done = threading.Event()
    box: dict[str, str] = {}

    def reader() -> None:
        try:
            box["line"] = stream.readline()
        except (OSError, ValueError):
            box["line"] = ""
        finally:
            done.set()

    threading.Thread(target=reader, name="mcpcli-paste", daemon=True).start()
    while not await anyio.to_thread.run_sync(done.wait, 0.25):
        pass
    return box.get("line", "")
