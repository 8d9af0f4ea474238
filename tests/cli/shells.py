"""Real interactive shells on a pseudo-terminal, for what only their line editor shows.

`complete_lines(shell, ...)` starts bash, zsh or fish as a person would have it (the
committed completion script loaded, `mcp` on PATH), types each line and TAB, then a key
bound to write the edited line to a file: the test reads what the line editor holds
after completing, never the screen. A shell that is not installed skips the test with
how to get it (Debian: `apt-get install zsh fish`).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from helpers import REPO
from terminal import Terminal

__all__ = ["SHELLS", "complete_lines"]

SHELLS = ("bash", "zsh", "fish")
#: Ctrl-X Ctrl-P, bound in each shell to append the edited line to a file and clear it.
DUMP_KEY = "\x18\x10"


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
    env = {**extra, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "TERM": "xterm",
           "HISTFILE": str(work / "history")}
    term = Terminal([exe, *args], env=env, controlling=True)
    waited = False
    try:
        term.read_until(ready.exists, f"{shell} to show its prompt", timeout)
        for line in typed:
            term.send(line + "\t" + DUMP_KEY)
        term.read_until(lambda: out.exists() and len(out.read_text().splitlines()) >= len(typed),
                        f"{shell} to complete {typed!r}", timeout)
        term.send("exit\r")
        waited = True
        status = term.wait(timeout)  # it closes the terminal, and kills a shell that stays
    finally:
        if not waited:
            term.proc.kill()
            term.wait(timeout)
    assert status == 0, term.output[-2000:]
    return [line.rstrip(" ") for line in out.read_text().splitlines()]
