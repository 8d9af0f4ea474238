"""A child process on a pseudo-terminal, for what only a terminal shows: prompts, progress,
colour, a line editor."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Sequence

__all__ = ["Terminal"]

_TAKE_TERMINAL = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); os.execvp(sys.argv[1], sys.argv[1:])"
)


class Terminal:
    """A child process on a pty: `expect` output, `send` keystrokes, `wait` for its exit.

    With `controlling`, the pty becomes the child's controlling terminal, as in a terminal
    emulator: job-control shells (fish) refuse to run interactively without one.
    """

    def __init__(self, argv: Sequence[str], env: dict[str, str] | None = None, columns: int = 200,
                 *, controlling: bool = False) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        full_env = dict(os.environ)
        full_env.update({"TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": "50"})
        full_env.pop("PYTHONSTARTUP", None)
        if env:
            full_env.update(env)
        if controlling:  # the new session's leader takes the terminal (TIOCSCTTY), then execs
            argv = [sys.executable, "-c", _TAKE_TERMINAL, *argv]
        self.proc = subprocess.Popen(
            list(argv), stdin=slave, stdout=slave, stderr=slave, env=full_env, start_new_session=True,
        )
        os.close(slave)
        self.master = master
        self.output = ""
        self._seen = 0

    def _read(self, deadline: float) -> bool:
        import select

        remaining = max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([self.master], [], [], min(remaining, 0.1))
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        if not data:
            return False
        self.output += data.decode("utf-8", "replace")
        return True

    def expect(self, pattern: str, timeout: float = 20) -> str:
        """Wait for `pattern` (a regex) in output not consumed yet; return the match."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while True:
            match = regex.search(self.output, self._seen)
            if match:
                self._seen = match.end()
                return match.group(0)
            if time.monotonic() > deadline or not self._read(deadline):
                raise AssertionError(f"did not see {pattern!r}; output so far:\n{self.output[-3000:]}")

    def read_until(self, predicate: Callable[[], bool], what: str, timeout: float = 20) -> None:
        """Keep reading the output (the child must never block on a full terminal) until
        `predicate` holds, e.g. a file the child writes."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline or not self._read(deadline):
                raise AssertionError(f"timed out waiting for {what}; output so far:\n{self.output[-3000:]}")

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def answer(self, prompt: str, text: str) -> None:
        self.expect(prompt)
        self.send(text + "\r")

    def wait(self, timeout: float = 30) -> int:
        """Read until the terminal closes, then return the exit status."""
        deadline = time.monotonic() + timeout
        try:
            while self._read(deadline):
                if time.monotonic() > deadline:
                    self.proc.kill()
                    self.proc.wait()
                    raise AssertionError(f"still running; output:\n{self.output[-3000:]}")
            return self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            os.close(self.master)
