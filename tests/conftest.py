"""Shared fixtures. Every test runs isolated from the user's machine and is checked
for leftover processes.

* XDG config/state/cache dirs point into a temp dir; MCP_CONFIG and tokens from the
  environment are removed; NO_COLOR is set; the session daemon's run directory
  (MCPCLI_RUNTIME_DIR) is the test's own, so no test talks to the user's daemon.
* keyring uses an in-memory backend (in process) or the fail backend (children),
  never the real keyring.
* pytest becomes a child subreaper, so any process a test leaves behind (a server,
  its grandchild) is reparented to us and reported as a failure, then killed.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from helpers import Peers, peers_from_env

PR_SET_CHILD_SUBREAPER = 36

# A test run started in the background (a CI runner's script, `scripts/test &`) ignores SIGINT,
# and a process that starts with SIGINT ignored passes that on to its children: Python there
# leaves Ctrl-C unhandled, and every test that interrupts a command would hang. A handler of
# our own is reset to the default across exec, so the tests' children get what a terminal's do.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config: pytest.Config) -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _children() -> dict[int, str]:
    """Our live child processes (pid -> state); orphans of tests land here too."""
    me = os.getpid()
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may contain spaces and parens.
        rest = stat.rsplit(")", 1)[-1].split()
        if len(rest) >= 2 and int(rest[1]) == me:
            found[int(entry)] = rest[0]
    return found


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return "?"


@pytest.fixture(autouse=True)
def no_leftover_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    if not sys.platform.startswith("linux"):
        yield
        return
    before = set(_children())
    yield
    # Give exiting processes a bounded moment to go (no fixed sleep: poll).
    deadline = time.monotonic() + 3.0
    leftovers: dict[int, str] = {}
    while True:
        leftovers = {p: s for p, s in _children().items() if p not in before}
        for pid, state in list(leftovers.items()):
            if state == "Z":
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
                leftovers.pop(pid)
        if not leftovers or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    if leftovers:
        described = [f"{pid} {_cmdline(pid)}" for pid in leftovers]
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        pytest.fail("test left processes running: " + "; ".join(described))


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    for sub in ("config", "state", "cache", "data"):
        (home / sub).mkdir(parents=True)
    # HOME too: other clients' configs (~/.claude.json, ~/.cursor, ...) must never be read.
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    # Other clients' own overrides: Codex's home, Windows' roaming dir.
    monkeypatch.setenv("APPDATA", str(home / "appdata"))
    monkeypatch.setenv("NO_COLOR", "1")
    # A test that reaches a session (@NAME, keepAlive) must not use the user's daemon.
    monkeypatch.setenv("MCPCLI_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("MCPCLI_DAEMON_ARGV", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    for var in ("MCP_CONFIG", "MCP_BEARER_TOKEN", "MCP_TOKEN_STORE", "MCP_TIMEOUT", "FORCE_COLOR",
                "BROWSER", "CODEX_HOME", "TRACEPARENT", "TRACESTATE"):
        monkeypatch.delenv(var, raising=False)
    # A CI system's trace or collector must not change what the tests send (tests/tracing sets its own).
    for var in [name for name in os.environ if name.startswith("OTEL_")]:
        monkeypatch.delenv(var)
    return home


@pytest.fixture(autouse=True)
def no_spans() -> Iterator[None]:
    """Spans a test asked for (`spans.use`, `spans.configure`) end with it."""
    yield
    spans = sys.modules.get("mcpcli.spans")
    if spans is not None:
        spans.disable()


@pytest.fixture(autouse=True)
def memory_keyring() -> Iterator[None]:
    """In-process code sees an in-memory keyring; the real one is never touched."""
    import keyring
    from fakes.memory_keyring import MemoryKeyring

    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    yield
    keyring.set_keyring(previous)


@pytest.fixture
def fake_home(isolated_env: Path) -> Path:
    """The temporary HOME every test runs with (other clients' configs go here)."""
    return isolated_env


@pytest.fixture(scope="session")
def peers() -> Peers:
    return peers_from_env()


@pytest.fixture
def everything(peers: Peers) -> list[str]:
    """argv of @modelcontextprotocol/server-everything over stdio."""
    return peers.everything_stdio()


@pytest.fixture
def codex_shell(peers: Peers) -> list[str]:
    """argv of npm @openai/codex-shell-tool-mcp over stdio: an rmcp (Rust) server that exits
    when its first message is not `initialize`. It reads its rules and config from $HOME
    (a temporary one here) and /etc/codex, and reaches no network."""
    return peers.codex_shell()


@pytest.fixture
def sdk_server(peers: Peers) -> list[str]:
    """argv of tests/peers/sdk_server.py under the official SDK's own interpreter."""
    return [peers.sdk(), str(Path(__file__).resolve().parent / "peers" / "sdk_server.py")]


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
