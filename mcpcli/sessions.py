"""The command side of persistent sessions: find or start the daemon, and ask it.

`mcp session ...`, `@NAME` targets and keepAlive servers all go through here: a
blocking unix socket to the daemon (`mcpcli.rundir`), one request line and
one answer line in the control protocol (`mcpcli.core.localrpc`), the daemon's
error form raised again as the typed error a one-shot command would raise, so
exit codes match. When no daemon answers, `ensure_daemon` takes the start lock,
removes a dead socket and starts `python -m mcpcli.daemon` detached, then waits
(bounded) until it accepts connections. Light on purpose: the standard library,
`errors`, `config`, `rundir` and `core.localrpc`.
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpcli import files, localsocket, rundir
from mcpcli.config import ServerEntry
from mcpcli.core import localrpc
from mcpcli.errors import (
    ConnectionClosed,
    McpCliError,
    ProtocolError,
    RequestTimeout,
    TransportError,
    UsageError,
    from_error_report,
)

__all__ = [
    "CONNECT_TIMEOUT",
    "CONTROL_TIMEOUT",
    "DAEMON_ARGV_ENV",
    "OPEN_TIMEOUT",
    "READY_TIMEOUT",
    "SessionInfo",
    "SessionLogs",
    "answer_of",
    "ask",
    "check_name",
    "close_sessions",
    "connect_daemon",
    "daemon_argv",
    "ensure_daemon",
    "list_sessions",
    "no_session",
    "open_request",
    "open_session",
    "restart_session",
    "run_dir",
    "session_logs",
    "socket_file",
]

JSON = dict[str, Any]

#: Tests only: a JSON list, the argv that starts the daemon instead of `python -m mcpcli.daemon`.
DAEMON_ARGV_ENV = "MCPCLI_DAEMON_ARGV"
#: How long opening a session (starting its server and the handshake) may take by default.
OPEN_TIMEOUT = 120.0
#: How long the daemon may take to answer list, close and logs (close stops servers).
CONTROL_TIMEOUT = 60.0
#: How long connecting to the daemon's socket may block (a daemon too busy to accept).
CONNECT_TIMEOUT = 10.0
#: How long a new daemon may take to accept connections.
READY_TIMEOUT = 15.0
#: How long to wait for the start lock another command holds while it starts the daemon.
LOCK_TIMEOUT = READY_TIMEOUT + 5.0
#: Session names: they name a file in the run directory and follow `@` on the command line.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass
class SessionInfo:
    """One session as the daemon describes it (`list`, `open`, `restart`, `attach`)."""

    name: str
    target: str = ""
    transport: str = ""
    era: str = ""
    protocol_version: str = ""
    server: JSON = field(default_factory=dict)
    pid: int | None = None
    started: float | None = None
    idle_seconds: float | None = None
    calls: int = 0
    state: str = ""
    last_stderr: list[str] = field(default_factory=list)
    #: The daemon's object as sent (what `--json` prints).
    raw: JSON = field(default_factory=dict)

    @classmethod
    def from_json(cls, info: Any) -> SessionInfo:
        if not isinstance(info, dict) or not isinstance(info.get("name"), str):
            raise ProtocolError("the session daemon sent a session without a name")

        def num(key: str) -> float | None:
            value = info.get(key)
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        def text(key: str) -> str:
            value = info.get(key)
            return value if isinstance(value, str) else ""

        pid = info.get("pid")
        calls = info.get("calls")
        server = info.get("server")
        stderr = info.get("last_stderr")
        return cls(
            name=info["name"],
            target=text("target"),
            transport=text("transport"),
            era=text("era"),
            protocol_version=text("protocolVersion"),
            server=server if isinstance(server, dict) else {},
            pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
            started=num("started"),
            idle_seconds=num("idle_seconds"),
            calls=calls if isinstance(calls, int) and not isinstance(calls, bool) else 0,
            state=text("state"),
            last_stderr=[line for line in stderr if isinstance(line, str)] if isinstance(stderr, list) else [],
            raw=dict(info),
        )


@dataclass
class SessionLogs:
    """A session's server stderr (the bounded ring file) and where it is."""

    path: str
    text: str


def check_name(name: str) -> str:
    """A session name, or a usage error saying what one may be."""
    if not _NAME.match(name):
        raise UsageError(
            f"invalid session name {name!r}",
            hint="use letters, digits, '.', '_' and '-' (at most 64, starting with a letter or digit)",
        )
    return name


def no_session(name: str) -> TransportError:
    """The error for `@NAME` (or an op on NAME) when there is no such session."""
    return TransportError(f"no session {name!r}", hint=f"mcp session open {name}")


# -- where the daemon is --------------------------------------------------------------

#: The longest path a unix socket may have (sun_path is 108 bytes on Linux, 104 on macOS).
MAX_SOCKET_PATH = 103


def run_dir() -> Path:
    """The daemon's private run directory; an unsafe one is refused (exit 4)."""
    try:
        return rundir.run_dir()
    except rundir.RunDirError as exc:
        raise TransportError(
            str(exc), hint="remove it (or make it yours: chmod 700) and try again"
        ) from None


def socket_file(directory: Path | None = None) -> Path:
    """The daemon's socket, in the checked run directory."""
    path = rundir.socket_path(directory or run_dir())
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise TransportError(
            f"the session socket path is too long for a unix socket: {path}",
            hint=f"set {rundir.RUNTIME_DIR_ENV} to a shorter directory",
        )
    return path


# -- the daemon process --------------------------------------------------------------


def daemon_argv() -> list[str]:
    """How the daemon is started: `python -m mcpcli.daemon`, or the tests' override."""
    override = os.environ.get(DAEMON_ARGV_ENV)
    if override:
        try:
            argv = json.loads(override)
        except ValueError:
            argv = None
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise UsageError(f"{DAEMON_ARGV_ENV} must be a JSON list of strings")
        return argv
    return [sys.executable, "-m", "mcpcli.daemon"]


def connect_daemon(path: Path | None = None, *, timeout: float = CONNECT_TIMEOUT) -> socket.socket | None:
    """A connection to the running daemon (blocking, no timeout); None when none listens
    (no socket, or a dead one). Connecting itself is bounded by `timeout`."""
    path = path or socket_file()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(os.fspath(path))
        sock.settimeout(None)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    except TimeoutError:
        sock.close()
        raise TransportError(
            f"the session daemon at {path} did not accept a connection within {timeout:g}s",
            hint=f"its log is {rundir.daemon_log(path.parent)}",
        ) from None
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
            return None
        raise TransportError(
            f"cannot reach the session daemon at {path}: {exc.strerror}",
            hint=f"its log is {rundir.daemon_log(path.parent)}",
        ) from None
    return sock


def _lock(lock: Path) -> int:
    """Take the start lock (fcntl.flock), waiting a bounded time for another starter."""
    try:
        return files.take_lock(lock, LOCK_TIMEOUT)
    except files.LockBusy:
        raise TransportError(
            "another command has been starting the session daemon for too long",
            hint=f"its log is {rundir.daemon_log(lock.parent)}",
        ) from None
    except files.UnsafePath as exc:
        raise TransportError(str(exc)) from None


def _start(run: Path) -> int:
    """Start the daemon detached (its own session, stdin /dev/null, output to daemon.log): its pid.

    `posix_spawn`, not `Popen`: the daemon outlives this command, which never waits
    for it, so there is no Popen object to complain that its child still runs.
    """
    argv = daemon_argv()
    log = rundir.daemon_log(run)
    fd = files.open_regular(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        return os.posix_spawnp(
            argv[0], argv, dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, fd, 1),
                (os.POSIX_SPAWN_DUP2, fd, 2),
                *((os.POSIX_SPAWN_CLOSE, other) for other in _inherited_fds() if other != fd),
            ],
            setsid=True,
        )
    except OSError as exc:
        raise TransportError(f"cannot start the session daemon {argv[0]}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _inherited_fds() -> list[int]:
    """Our descriptors above stderr that a child would inherit (posix_spawn closes none).

    Python opens its own files non-inheritable, so these came from whoever started this
    command: its shell's or test runner's pipes (`pass_fds`, a CI runner's copy of its
    output). The daemon outlives the command, so such a copy would keep that pipe open
    (its reader waits for an end that comes only when the daemon exits) and could carry
    what the daemon writes to the caller's terminal. The daemon gets stdin, stdout and
    stderr only. Listed from /proc/self/fd (Linux) or /dev/fd (macOS, BSD); where
    neither lists them, none are closed."""
    for directory in ("/proc/self/fd", "/dev/fd"):
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        found = []
        for name in names:
            if not name.isdigit() or int(name) <= 2:
                continue
            try:
                if os.get_inheritable(int(name)):
                    found.append(int(name))
            except OSError:  # the listing's own descriptor, closed by now
                continue
        return sorted(found)
    return []


def _exit_code(pid: int) -> int | None:
    """The daemon's exit status if it has exited (reaping it), else None."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return -1
    return os.waitstatus_to_exitcode(status) if done == pid else None


def _daemon_failed(run: Path, code: int | None) -> TransportError:
    log = rundir.daemon_log(run)
    tail = ""
    try:
        lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
        tail = lines[-1].strip() if lines else ""
    except OSError:
        pass
    what = f"exited with code {code}" if code is not None else f"did not answer within {READY_TIMEOUT:g}s"
    message = f"the session daemon {what}" + (f"; its last line: {tail}" if tail else "")
    return TransportError(message, hint=f"its log is {log}")


def ensure_daemon(*, timeout: float = READY_TIMEOUT) -> socket.socket:
    """A connection to the daemon, starting one when none answers.

    Under the start lock: connect again (another command may have just started
    it), remove a socket nobody listens on, start the daemon, and poll connect()
    with a short backoff until it answers, it exits, or `timeout` passes.
    """
    run = run_dir()
    sock_path = socket_file(run)
    sock = connect_daemon(sock_path)
    if sock is not None:
        return sock
    fd = _lock(rundir.lock_path(run))
    try:
        sock = connect_daemon(sock_path)
        if sock is not None:
            return sock
        try:
            sock_path.unlink()  # a stale socket: its daemon died
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise TransportError(f"cannot remove the stale session socket {sock_path}: {exc.strerror}") from None
        pid = _start(run)
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            sock = connect_daemon(sock_path)
            if sock is not None:
                return sock
            code = _exit_code(pid)
            if code is not None or time.monotonic() > deadline:
                if code is None:
                    os.killpg(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                raise _daemon_failed(run, code)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
    finally:
        os.close(fd)


# -- asking it -----------------------------------------------------------------------


def answer_of(line: bytes | None) -> JSON:
    """The daemon's answer line as a success object; its error form raised as a typed error."""
    if line is None:
        raise ConnectionClosed(
            "the session daemon closed the connection without answering",
            hint=f"its log is {rundir.daemon_log(run_dir())}",
        )
    try:
        answer = localrpc.decode(line)
    except localrpc.ProtocolViolation as exc:
        raise ProtocolError(f"the session daemon sent a bad answer: {exc}") from None
    if answer.get("ok") is True:
        return answer
    raise from_error_report(answer.get("error"))


def ask(message: JSON, *, start: bool = False, timeout: float | None = None) -> JSON | None:
    """Send one request and return the daemon's answer (None: no daemon runs and `start`
    is false). `timeout` bounds the wait for the answer (RequestTimeout, exit 124)."""
    sock = ensure_daemon() if start else connect_daemon()
    if sock is None:
        return None
    with sock:
        sock.settimeout(timeout)
        try:
            localsocket.send(sock, message)
            line = localsocket.LineReader(sock).read_line()
        except TimeoutError:
            raise RequestTimeout(
                f"the session daemon did not answer within {timeout:g}s"
            ) from None
        except localrpc.ProtocolViolation as exc:
            raise ProtocolError(f"the session daemon sent a bad answer: {exc}") from None
        except OSError as exc:
            raise ConnectionClosed(f"lost the session daemon: {exc.strerror or exc}") from None
        return answer_of(line)


def _session_of(answer: JSON) -> SessionInfo:
    return SessionInfo.from_json(answer.get("session"))


# -- the operations ------------------------------------------------------------------


def open_request(
    name: str,
    entry: ServerEntry,
    *,
    connect: Mapping[str, Any] | None = None,
    client: Mapping[str, Any] | None = None,
    idle_timeout: float | None = None,
    restart: str = "no",
    join: bool = True,
) -> JSON:
    """The `open` request for session `name` of `entry` (resolved here, in the command's
    environment: `${VAR}` is the command's, and so is the default working directory)."""
    check_name(name)
    if entry.transport == "session":
        raise UsageError("a session's server cannot be another session", hint="name a server, a URL or a command")
    resolved = entry.resolved()
    fields = {
        "name": resolved.name, "command": resolved.command, "args": resolved.args,
        "env": resolved.env, "cwd": resolved.cwd, "url": resolved.url, "headers": resolved.headers,
        "transport": resolved.transport, "raw": resolved.raw,
        "path": os.path.abspath(resolved.path) if resolved.path else None,
        "headers_helper": resolved.headers_helper,
    }
    connect_fields = dict(connect or {})
    if resolved.transport in ("stdio", "yaml") and not connect_fields.get("cwd") and not resolved.cwd:
        connect_fields["cwd"] = os.getcwd()  # relative commands and files, as the one-shot form sees them
    return localrpc.request(
        "open", name=name, entry=fields, connect=connect_fields, client=dict(client or {}),
        idle_timeout=idle_timeout, restart=restart, join=join,
    )


def open_session(request: JSON, *, timeout: float | None = OPEN_TIMEOUT) -> SessionInfo:
    """Open (or join) a session, starting the daemon if needed; returns once the server is ready."""
    answer = ask(request, start=True, timeout=timeout)
    assert answer is not None
    return _session_of(answer)


def list_sessions(*, timeout: float = CONTROL_TIMEOUT) -> list[SessionInfo]:
    """Every session the daemon holds; none when no daemon runs (none is started)."""
    answer = ask(localrpc.request("list"), timeout=timeout)
    if answer is None:
        return []
    sessions = answer.get("sessions")
    if not isinstance(sessions, list):
        raise ProtocolError("the session daemon's list has no sessions")
    return [SessionInfo.from_json(item) for item in sessions]


def close_sessions(name: str | None = None, *, all: bool = False, timeout: float = CONTROL_TIMEOUT) -> list[str]:
    """Close session `name` (or every one): the names closed."""
    if all:
        answer = ask(localrpc.request("close", all=True), timeout=timeout)
        if answer is None:
            return []
    else:
        assert name is not None
        answer = ask(localrpc.request("close", name=check_name(name)), timeout=timeout)
        if answer is None:
            raise no_session(name)
    closed = answer.get("closed")
    return [n for n in closed if isinstance(n, str)] if isinstance(closed, list) else []


def restart_session(name: str, *, timeout: float | None = OPEN_TIMEOUT) -> SessionInfo:
    """Restart session `name`'s server (a crashed one included); returns once it is ready."""
    answer = ask(localrpc.request("restart", name=check_name(name)), timeout=timeout)
    if answer is None:
        raise no_session(name)
    return _session_of(answer)


def session_logs(name: str, *, timeout: float = CONTROL_TIMEOUT) -> SessionLogs:
    """Session `name`'s server stderr; read from its ring file when no daemon runs."""
    answer = ask(localrpc.request("logs", name=check_name(name)), timeout=timeout)
    if answer is None:
        path = run_dir() / "sessions" / f"{name}.log"
        try:
            return SessionLogs(str(path), path.read_text(encoding="utf-8", errors="replace"))
        except FileNotFoundError:
            raise no_session(name) from None
        except OSError as exc:
            raise McpCliError(f"cannot read {path}: {exc.strerror}") from None
    text = answer.get("text")
    path_value = answer.get("path")
    return SessionLogs(str(path_value) if isinstance(path_value, str) else "", text if isinstance(text, str) else "")
