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

A server is started with `os.posix_spawn`, not `subprocess`: importing `subprocess` (with
`signal`, `locale` and `threading`) came before the spawn, some 19 M instructions in a
one-shot call (which no longer loads it at all). `subprocess.Popen` still starts what
`posix_spawn` cannot (a working directory of its own: Python's `posix_spawn` has no chdir
action); either way the caller gets a `Process`.
"""

from __future__ import annotations

import atexit
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    import subprocess
    from collections.abc import Mapping, Sequence
    from typing import IO, Protocol

    class ExitMemory(Protocol):
        """Whether a command line's server was seen not to exit within `EOF_GRACE` of its
        stdin closing (`mcpcli.cache.ExitRecords`; handed in, as the era memory is)."""

        def slow_to_exit(self) -> bool:
            """It was, lately: SIGTERM follows EOF at once."""

        def remember_exit(self, slow: bool) -> None:
            """What this shutdown saw (it waited the grace): slow, or exited in time."""

__all__ = [
    "DEFAULT_INHERITED_ENV",
    "Launch",
    "Process",
    "SpawnError",
    "UnsetVariable",
    "adopt",
    "child_environment",
    "describe_exit",
    "discard_prespawned",
    "eof_grace",
    "exit_message",
    "launch",
    "noted_exit",
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
#: Well-behaved servers exit within milliseconds of EOF; others get TERM promptly, and a
#: command line seen not to exit within it gets TERM right after EOF for a while (`eof_grace`).
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
    found = _which(command, env.get("PATH", os.defpath))
    if found is None:
        raise SpawnError(
            f"cannot start server: {command}: command not found",
            hint="check the command name and that it is on PATH",
        )
    return found


def _which(command: str, path: str) -> str | None:
    """`shutil.which(command, path=path)` on POSIX, without importing `shutil` (bz2, lzma,
    fnmatch: a millisecond or two before the server could start)."""
    if sys.platform == "win32":  # PATHEXT and the current directory: shutil's rules
        import shutil

        return shutil.which(command, path=path)
    seen: set[str] = set()
    for folder in path.split(os.pathsep) if path else ():
        if folder in seen:
            continue
        seen.add(folder)
        name = os.path.join(folder, command)
        if os.path.exists(name) and os.access(name, os.F_OK | os.X_OK) and not os.path.isdir(name):
            return name
    return None


def spawn(command: str, args: Sequence[str], env: Mapping[str, str], cwd: str | None) -> Process:
    """Start the server with pipes on stdin, stdout and stderr, in a new session, no other
    descriptor of ours inherited and the signals Python ignores (SIGPIPE, SIGXFSZ) back to
    their defaults: `posix_spawn` where it can do all that, else `subprocess.Popen`."""
    executable = resolve_executable(command, env, cwd)
    argv = [executable, *args]
    try:
        process = _posix_spawn(argv, env) if cwd is None else None
        return process if process is not None else _popen(argv, env, cwd)
    except OSError as exc:
        raise SpawnError(f"cannot start server: {command}: {exc.strerror or exc}") from None


def _posix_spawn(argv: list[str], env: Mapping[str, str]) -> Process | None:
    """The server started by `os.posix_spawn` as `Popen` would start it; None where it cannot
    be (no `posix_spawn` or its setsid, one that does not report a failed exec, inherited
    descriptors it cannot list, stdio of ours closed so that a pipe would land on 0-2)."""
    spawn_ = getattr(os, "posix_spawn", None)
    if spawn_ is None or not _reports_exec_errors():
        return None
    closefrom = getattr(os, "POSIX_SPAWN_CLOSEFROM", None)  # Python 3.13
    inherited = [] if closefrom is not None else _inherited_fds()
    if inherited is None:
        return None
    import _signal  # type: ignore[import-not-found]  # the numbers, without `signal`'s enums

    fds: list[int] = []
    try:
        for _ in range(3):
            fds.extend(os.pipe())  # close-on-exec: the child keeps only what is dup2'd
        in_r, in_w, out_r, out_w, err_r, err_w = fds
        if min(fds) < 3:
            return None  # a dup2 onto 0-2 would clobber one of them: Popen sorts that out
        actions: list[tuple[int, ...]] = [
            (os.POSIX_SPAWN_DUP2, in_r, 0), (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2),
        ]
        if closefrom is not None:
            actions.append((closefrom, 3))
        actions.extend((os.POSIX_SPAWN_CLOSE, fd) for fd in inherited)
        defaults = [getattr(_signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(_signal, name)]
        try:
            pid = spawn_(argv[0], argv, env, file_actions=actions, setsid=True, setsigdef=defaults)
        except NotImplementedError:
            return None  # no POSIX_SPAWN_SETSID here
        process = Process(argv, pid, _pipe_end(in_w, "wb"), _pipe_end(out_r, "rb"), _pipe_end(err_r, "rb"))
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        fds.clear()
        return process
    finally:
        for fd in fds:
            os.close(fd)


def _reports_exec_errors() -> bool:
    """Whether `posix_spawn` raises the error of a failed exec (so that "Exec format error"
    reads as it did with `Popen`) rather than leave a child exiting 127: macOS, glibc 2.24+
    (what `subprocess` itself requires before it uses `posix_spawn`)."""
    if sys.platform == "darwin":
        return True
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION") or ""  # "glibc 2.35"
        major, minor = (int(part) for part in version.split()[1].split(".")[:2])
    except (AttributeError, ValueError, OSError, IndexError):
        return False  # not glibc (musl, a BSD): Popen
    return (major, minor) >= (2, 24)


def _pipe_end(fd: int, mode: str) -> IO[bytes]:
    """Our end of a server's pipe, unbuffered (it is read and written by descriptor)."""
    return open(fd, mode, buffering=0)  # the process's users close it


def _inherited_fds() -> list[int] | None:
    """Our descriptors above 2 that a child would inherit (`Popen(close_fds=True)` closes them
    in the child); None where they cannot be listed."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        inherited = []
        for name in names:
            fd = int(name)
            try:
                if fd > 2 and os.get_inheritable(fd):
                    inherited.append(fd)
            except OSError:
                pass  # the listing's own descriptor, closed by now
        return inherited
    return None


def _popen(argv: list[str], env: Mapping[str, str], cwd: str | None) -> Process:
    import subprocess

    popen = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        close_fds=True,
    )
    assert popen.stdin is not None
    assert popen.stdout is not None
    assert popen.stderr is not None
    return Process(argv, popen.pid, popen.stdin, popen.stdout, popen.stderr, popen)


class Process:
    """A started server: its pid, the pipes to its stdin, stdout and stderr, and how it ended
    (`returncode`, `poll`, `wait`): what its users had of `subprocess.Popen`, which this wraps
    when `posix_spawn` could not start it (so that `Popen` alone reaps its child)."""

    __slots__ = ("_lock", "_popen", "args", "pid", "returncode", "stderr", "stdin", "stdout")

    def __init__(self, args: list[str], pid: int, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[bytes],
                 popen: subprocess.Popen[bytes] | None = None) -> None:
        import _thread  # `threading` is not loaded yet on the one-shot path

        self.args = args
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._popen = popen
        #: One waitpid at a time (a worker thread may wait while the event loop polls).
        self._lock = _thread.allocate_lock()

    def poll(self) -> int | None:
        """The exit status (negative: the signal) if it has ended, reaping it; else None."""
        if self.returncode is None:
            if self._popen is not None:
                self.returncode = self._popen.poll()
            elif self._lock.acquire(False):
                try:
                    self._reap(os.WNOHANG)
                finally:
                    self._lock.release()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for it to end; `subprocess.TimeoutExpired` after `timeout` seconds."""
        if self._popen is not None:
            self.returncode = self._popen.wait(timeout)
            return self.returncode
        if timeout is None:
            with self._lock:
                while (code := self.returncode) is None:
                    self._reap(0)
            return code
        import time

        deadline = time.monotonic() + timeout
        delay = 0.0005
        while (code := self.poll()) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                import subprocess

                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.05)
        return code

    def _reap(self, flags: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:
            pid, status = self.pid, 0  # reaped by someone else (SIGCHLD ignored): 0, as Popen says
        if pid == self.pid:
            self.returncode = os.waitstatus_to_exitcode(status)


def eof_grace(memory: ExitMemory | None) -> float:
    """How long a server gets between EOF on its stdin and SIGTERM: `EOF_GRACE`, or none for a
    command line `memory` says lately did not exit within it (server-everything takes ~365 ms:
    every call waited the grace and sent SIGTERM anyway). Stdin is closed first either way."""
    return 0.0 if memory is not None and memory.slow_to_exit() else EOF_GRACE


def noted_exit(memory: ExitMemory | None, grace: float, exited: bool) -> None:
    """Remember what a shutdown that waited `grace` after EOF saw: the server `exited` within
    it (forgotten as slow) or not (remembered). One that waited none learnt nothing."""
    if memory is not None and grace > 0:
        memory.remember_exit(slow=not exited)


_PRESPAWNED: dict[Key, Process] = {}


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


def adopt(spec: Launch) -> Process | None:
    """The prespawned process for exactly this launch (command line, environment, cwd)."""
    return _PRESPAWNED.pop(spec.key(), None)


def discard_prespawned() -> None:
    """Kill servers spawned early but never used (the command failed before connecting)."""
    while _PRESPAWNED:
        import signal

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
        import signal

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
