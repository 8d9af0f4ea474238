"""Real interactive shells on a pseudo-terminal, for what only their line editor shows.

`complete_lines(shell, ...)` starts bash, zsh or fish as a person would have it (the
committed completion script loaded, `mcp` on PATH), types each line and TAB, then a key
bound to write the edited line to a file: the test reads what the line editor holds
after completing, never the screen. A shell that is not installed skips the test with
how to get it (Debian: `apt-get install zsh fish`).
"""

from __future__ import annotations

import os
import pty
import shutil
import signal
import sys
import threading
from pathlib import Path

import pytest
from helpers import REPO, wait_until

__all__ = ["SHELLS", "complete_lines"]

SHELLS = ("bash", "zsh", "fish")
#: Ctrl-X Ctrl-P, bound in each shell to append the edited line to a file and clear it.
DUMP_KEY = b"\x18\x10"


def _rc(shell: str, work: Path, out: Path, ready: Path) -> tuple[list[str], dict[str, str]]:
    """The shell's argv and the environment it needs, its start-up file written in `work`."""
    completions = REPO / "completions"
    if shell == "bash":
        rc = work / "bashrc"
        rc.write_text(
            f"PS1='$ '\nPROMPT_COMMAND='touch {ready}'\n"
            f"source '{completions / 'mcp.bash'}'\n"
            "bind 'set bell-style none'\n"
            f"_dump() {{ printf '%s\\n' \"$READLINE_LINE\" >> '{out}'; READLINE_LINE=''; READLINE_POINT=0; }}\n"
            "bind -x '\"\\C-x\\C-p\": _dump'\n"
        )
        return ["--noprofile", "--rcfile", str(rc), "-i"], {}
    if shell == "zsh":
        (work / ".zshrc").write_text(
            "PS1='$ '\nunsetopt beep\n"
            f"precmd() {{ touch '{ready}' }}\n"
            "autoload -Uz compinit && compinit -u -D\n"
            f"source '{completions / '_mcp'}'\n"
            f"_dump() {{ print -r -- \"$BUFFER\" >> '{out}'; BUFFER='' }}\n"
            "zle -N _dump\nbindkey '^X^P' _dump\n"
        )
        return ["-i"], {"ZDOTDIR": str(work)}
    rc = work / "config.fish"
    rc.write_text(
        f"function fish_prompt; touch '{ready}'; echo -n '$ '; end\n"
        "function fish_greeting; end\n"
        f"source '{completions / 'mcp.fish'}'\n"
        f"function _dump; commandline >> '{out}'; commandline ''; end\n"
        "bind \\cx\\cp _dump\n"
    )
    return ["--no-config", "-i", "-C", f"source '{rc}'"], {}


def complete_lines(shell: str, work: Path, typed: list[str], timeout: float = 60.0) -> list[str]:
    """What `shell`'s line editor holds after each of `typed` and one TAB (trailing space cut)."""
    exe = shutil.which(shell)
    if exe is None:
        pytest.skip(f"{shell} is not installed (Debian: apt-get install {shell})")
    work.mkdir(parents=True)
    bindir = work / "bin"
    bindir.mkdir()
    launcher = bindir / "mcp"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} -m mcpcli "$@"\n')
    launcher.chmod(0o755)
    out, ready = work / "lines", work / "ready"
    args, extra = _rc(shell, work, out, ready)
    env = dict(os.environ, **extra, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", TERM="xterm",
               HISTFILE=str(work / "history"))
    pid, master = pty.fork()  # the child gets the terminal as its controlling one, as in a terminal
    if pid == 0:  # pragma: no cover - the child
        try:
            os.chdir(work)
            os.execve(exe, [shell, *args], env)
        finally:
            os._exit(127)
    seen = bytearray()

    def drain() -> None:  # the shell must never block on a full terminal
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()

    status: list[int] = []

    def exited() -> bool:
        if not status:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                status.append(code)
        return bool(status)

    try:
        wait_until(lambda: ready.exists() or exited(), timeout, f"{shell} to show its prompt")
        assert not status, f"{shell} exited at start: {bytes(seen)[-800:]!r}"
        for line in typed:
            os.write(master, line.encode() + b"\t" + DUMP_KEY)
        wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= len(typed), timeout,
                   f"{shell} to complete {typed!r}; the terminal showed {bytes(seen)[-800:]!r}")
        os.write(master, b"exit\r")
        wait_until(exited, timeout, f"{shell} to exit")
    finally:
        if not exited():
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        reader.join(timeout)  # it ends at the terminal's end (EIO), after the shell has gone
        os.close(master)
    return [line.rstrip(" ") for line in out.read_text().splitlines()]
