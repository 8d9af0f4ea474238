"""`mcp_in` (tests/helpers.py) runs the CLI in this process: it must give what the real
command gives, and leave nothing behind for the next test."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path

import pytest
from helpers import REPO, fake_server, mcp, mcp_in

EXAMPLE = str(REPO / "examples" / "tools.yaml")


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("tools", "call", "--help"),
        ("tools", "lsit"),
        ("tools", "list", "nosuch", "--json"),
        ("tools", "list", EXAMPLE),
        ("tools", "call", EXAMPLE, "nope"),
        ("tools", "list", EXAMPLE, "--jq", ".tools[].name", "--raw"),
    ],
)
def test_the_same_as_the_real_command(args: tuple[str, ...]) -> None:
    real, here = mcp(*args), mcp_in(*args)
    assert (here.code, here.stdout, here.stderr) == (real.code, real.stdout, real.stderr)


def test_nothing_leaks_into_the_next_run(tmp_path: Path) -> None:
    environ, cwd = dict(os.environ), os.getcwd()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    config = tmp_path / "other.json"
    r = mcp_in("--debug", "servers", "add", "x", "--", "cmd", env={"MCP_CONFIG": str(config)}, cwd=tmp_path)
    assert r.code == 0, r
    assert config.exists()
    r = mcp_in("tools", "list", EXAMPLE)  # App.run installs signal handlers
    assert r.code == 0, r
    assert dict(os.environ) == environ and os.getcwd() == cwd
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
    assert logging.getLogger("mcpcli").level == logging.NOTSET  # --debug raised it for its run only
    assert mcp_in("servers", "list", "--json").json["servers"] == []  # MCP_CONFIG is gone


def test_each_run_may_read_stdin_once(tmp_path: Path) -> None:
    for _ in range(2):
        r = mcp_in("tools", "call", "echo", "--args", "-", "--", *fake_server(), input='{"message": "hi"}')
        assert r.code == 0, r
        assert r.json["content"] == [{"type": "text", "text": "hi"}]


def test_a_run_that_hangs_fails_with_what_it_printed() -> None:
    with pytest.raises(AssertionError, match="still running after 1s") as caught:
        mcp_in("tools", "call", "echo", "--arg", "message=hi", "--", *fake_server("--never-answer"),
               timeout=1)
    assert "mcp: error: interrupted" in str(caught.value)


def test_an_escaped_exception_fails_with_what_the_run_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpcli.cli import _root

    def broken(args: list[str]) -> int:
        sys.stderr.write("half a message\n")
        raise RuntimeError("escaped the error boundary")

    monkeypatch.setattr(_root, "run", broken)
    with pytest.raises(AssertionError, match="raised RuntimeError") as caught:
        mcp_in("--version")
    assert "half a message" in str(caught.value)
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_a_timer_that_fires_after_the_run_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    class LateTimer(threading.Timer):
        """Fires at the worst moment: when cancelled, after run() returned."""

        def cancel(self) -> None:
            fire = not self.finished.is_set()
            super().cancel()
            if fire:
                self.function(*self.args, **self.kwargs)

    monkeypatch.setattr(threading, "Timer", LateTimer)
    try:
        r = mcp_in("--version")
    except KeyboardInterrupt:  # (it would otherwise stop the whole session)
        pytest.fail("the late timer's interrupt escaped mcp_in")
    assert r.code == 0 and r.stdout.startswith("mcp"), r
