"""Spawning stdio servers, with no imports beyond the standard library.

A stdio server (often `npx ...` or `uvx ...`) takes hundreds of milliseconds to
boot, far longer than our own imports. So a command that will talk to a stdio
server spawns it as soon as its arguments are parsed (`prespawn`), before
asyncio, anyio, the client and jsonschema are imported; the stdio transport
then adopts that process (`adopt`). This module must stay cheap to import.

`launch` is the one place that turns a server's command, configured environment
and cwd, plus the --env/--cwd options, into what is run: the early spawn, the
CLI's prespawn and the transport all call it, so a prespawned process is always
the one the transport would have started.

Every server runs in its own session (process group), so a terminal Ctrl-C
reaches us and not it, and shutdown can signal the whole group.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

__all__ = [
    "DEFAULT_INHERITED_ENV",
    "Launch",
    "SpawnError",
    "UnsetVariable",
    "adopt",
    "child_environment",
    "describe_exit",
    "discard_prespawned",
    "exit_message",
    "launch",
    "prespawn",
    "quote_stderr",
    "resolve_executable",
    "spawn",
    "telling_lines",
]

#: Variables a server inherits from our environment; everything else must be asked for.
DEFAULT_INHERITED_ENV: tuple[str, ...] = (
    ("APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
     "PROCESSOR_ARCHITECTURE", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE",
     "PROGRAMFILES")
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE",
          "TMPDIR", "TZ")
)


#: Shutting a server down (here so the one-shot path, `mcpcli.cli.oneshot`, which runs
#: without anyio, stops it as `StdioTransport` does). After stdin closes, a server gets this long to exit on its own before SIGTERM.
#: Well-behaved servers exit within milliseconds of EOF; others get TERM promptly.
EOF_GRACE = 0.02
#: After SIGTERM, how long before SIGKILL of the group. The result is already
#: printed, so this is all the user waits for a server that ignores EOF and TERM:
#: a few tens of milliseconds, and nothing is left running after it.
TERM_GRACE = 0.04
#: How long to wait for a killed process to be reaped (SIGKILL cannot be ignored).
KILL_GRACE = 1.0
#: How long queued messages (a cancellation) may take to reach a stuck pipe.
FLUSH_GRACE = 0.25
STDERR_TAIL_LINES = 20
#: Bytes of a server's stderr held while the era probe is out, at most (then it is shown
#: as it comes): held so that a server the probe ends, and that is started again, says
#: nothing (see `StdioTransport.hold_output`).
STDERR_HELD_MAX = 4 * 1024 * 1024

Key = tuple[tuple[str, ...], tuple[tuple[str, str], ...], "str | None"]


class SpawnError(Exception):
    """The server could not be started; `hint` says what to check."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class UnsetVariable(SpawnError):
    """`--env KEY` (pass ours through) named a variable we do not have."""


class Launch:
    """What is run for a stdio server: the command line, its whole environment and cwd."""

    __slots__ = ("args", "command", "cwd", "env")

    def __init__(self, command: str, args: Sequence[str], env: Mapping[str, str], cwd: str | None) -> None:
        self.command = command
        self.args = list(args)
        self.env = dict(env)
        self.cwd = cwd

    def key(self) -> Key:
        """Equal for two launches that would start the same process."""
        return (self.command, *self.args), tuple(sorted(self.env.items())), self.cwd


def launch(
    command: str,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    *,
    passed: Mapping[str, str | None] | None = None,
    cwd_option: str | None = None,
) -> Launch:
    """The launch of a server configured with `env` and `cwd`, given --env (`passed`) and --cwd.

    A `passed` value of None passes our own variable through (`--env KEY`);
    `UnsetVariable` says when we have none. --cwd wins over the configured cwd.
    """
    extra = dict(env or {})
    for key, value in (passed or {}).items():
        if value is None:
            value = os.environ.get(key)
            if value is None:
                raise UnsetVariable(f"--env {key}: {key} is not set in this environment")
        extra[key] = value
    return Launch(command, args, child_environment(extra), cwd_option or cwd)


def child_environment(
    extra: Mapping[str, str] | None = None, *, inherit: Sequence[str] = DEFAULT_INHERITED_ENV
) -> dict[str, str]:
    """The environment for a server: an allow-list of ours plus what was configured.

    Values that look like exported bash functions (`() {`) are dropped: they are
    how Shellshock-style payloads travel.
    """
    env = {
        key: value
        for key in inherit
        if (value := os.environ.get(key)) is not None and not value.startswith("()")
    }
    if extra:
        env.update(extra)
    return env


def resolve_executable(command: str, env: Mapping[str, str], cwd: str | None) -> str:
    """The program to run, or `SpawnError` saying why it cannot be."""
    if cwd is not None and not os.path.isdir(cwd):
        raise SpawnError(f"working directory {cwd!r} does not exist")
    if os.sep in command or (os.altsep and os.altsep in command):
        path = command if os.path.isabs(command) or not cwd else os.path.join(cwd, command)
        if not os.path.exists(path):
            raise SpawnError(f"cannot start server: {command}: no such file")
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise SpawnError(f"cannot start server: {command}: permission denied")
        return command
    import shutil  # not before the spawn starts: importing it (bz2, lzma, fnmatch) takes a millisecond or two

    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise SpawnError(
            f"cannot start server: {command}: command not found",
            hint="check the command name and that it is on PATH",
        )
    return found


def spawn(
    command: str, args: Sequence[str], env: Mapping[str, str], cwd: str | None
) -> subprocess.Popen[bytes]:
    """Start the server with pipes on stdin, stdout and stderr, in a new session."""
    executable = resolve_executable(command, env, cwd)
    try:
        return subprocess.Popen(
            [executable, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        raise SpawnError(f"cannot start server: {command}: {exc.strerror or exc}") from None


_PRESPAWNED: dict[Key, subprocess.Popen[bytes]] = {}


def prespawn(spec: Launch) -> None:
    """Start a server early; best effort (a failure is reported later, on connect)."""
    key = spec.key()
    if key in _PRESPAWNED:
        return
    try:
        _PRESPAWNED[key] = spawn(spec.command, spec.args, spec.env, spec.cwd)
    except SpawnError:
        return
    if len(_PRESPAWNED) == 1:
        atexit.register(discard_prespawned)


def adopt(spec: Launch) -> subprocess.Popen[bytes] | None:
    """The prespawned process for exactly this launch (command line, environment, cwd)."""
    return _PRESPAWNED.pop(spec.key(), None)


def discard_prespawned() -> None:
    """Kill servers spawned early but never used (the command failed before connecting)."""
    while _PRESPAWNED:
        process = _PRESPAWNED.popitem()[1]
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        process.wait()


def describe_exit(returncode: int | None) -> str:
    """How a stdio server ended, for the error a command prints: code, signal, or no exit yet."""
    if returncode is None:
        return "server closed its stdout"
    if returncode < 0:
        try:
            return f"server was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"server was killed by signal {-returncode}"
    return f"server exited with code {returncode}"


def exit_message(returncode: int | None, when: str, tail: Sequence[str]) -> str:
    """The error of a server that ended: how (`describe_exit`), when, and what its stderr said."""
    return quote_stderr(f"{describe_exit(returncode)} {when}".strip(), tail)


#: What `quote_stderr` puts between a message and the server's telling lines.
STDERR_QUOTE = "; its stderr says: "


def quote_stderr(message: str, tail: Sequence[str]) -> str:
    """`message` with the telling lines of a server's last stderr lines (`telling_lines`), one
    per line; a quote already in it (made from fewer lines, before the rest was read) is replaced."""
    message = message.split(STDERR_QUOTE, 1)[0]
    lines = telling_lines(tail)
    return message + STDERR_QUOTE + "\n".join(lines) if lines else message


_PATTERNS: tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]] | None = None


def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """`telling_lines`' patterns, compiled on first use: a spawn, which comes first in a
    one-shot call, imports this module and never needs them (`re` and their compiling)."""
    global _PATTERNS
    if _PATTERNS is None:
        import re

        _PATTERNS = (
            # Lines (stripped) that say where, not what: stack frames and their source excerpts
            # (Node, Python, Java, Go), Node's location header and version footer, carets under code.
            re.compile(
                r"^(?:at\s|\.\.\. \d+ more$|File \".*\", line \d+|Traceback \(most recent call last\):$"
                r"|During handling of the above exception|The above exception was the direct cause"
                r"|[\^~]+$|throw\s|(?:node:)?[\w/.@-]+\.?\w*:\d+$|Node\.js v\d|goroutine \d+ \[|\S+\.go:\d+"
                r"|[\w/-]+(?:\.\(\*?\w+\))?\.\w+\(.*\)$|exit status \d+$|[{}\[\](),;]+$|npm (?:ERR!|error) A complete log)"
            ),
            # Lines that say something went wrong.
            re.compile(
                r"^[\w.$]*(?:Error|Exception)\b|\b(?:error|errno|fatal|panic|fail(?:ed|ure)?|cannot|can't|could not"
                r"|couldn't|unable|denied|refused|not found|no such|invalid|missing|unknown|unsupported|exception)\b",
                re.IGNORECASE,
            ),
            # A Python exception line, which may follow a frame where its source line usually is.
            re.compile(r"^[\w.]+(?:Error|Exception|Exit|Interrupt|Warning)\b"),
        )
    return _PATTERNS


def telling_lines(tail: Sequence[str], most: int = 3) -> list[str]:
    """The lines of a server's last stderr lines (each stripped) that best say why it stopped,
    in order: those that say something went wrong (the last `most`) and the last line it
    wrote, leaving out stack frames and their source lines, an error object's fields
    (between `... {` and `}`) and runtime banners. Used by every error that quotes a
    server's stderr (the one-shot path, the stdio transport, the session daemon)."""
    noise, trouble_line, py_exception = _patterns()
    kept: list[str] = []
    after_frame = in_object = False
    for line in tail:
        if in_object:
            in_object = not line.startswith("}")
            continue
        if after_frame and not py_exception.match(line):
            after_frame = False  # the source line under a Python frame
            continue
        after_frame = line.startswith('File "')
        if line.endswith("{") and len(line) > 1:
            in_object = True  # `at ... {`, then the error's own fields: code, requireStack...
            if noise.match(line):
                continue
        if line and not noise.match(line):
            kept.append(line)
    if not kept:
        return [tail[-1]] if tail else []
    trouble = [i for i, line in enumerate(kept) if trouble_line.search(line)]
    chosen = sorted({*trouble[-most:], len(kept) - 1})
    return [kept[i] for i in chosen[-most:]]
