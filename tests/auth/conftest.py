"""Fixtures for the OAuth tests: the fake authorization server, a scripted browser, stores."""

from __future__ import annotations

import os
import stat
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.oauth_server import OAuthServer

HERE = Path(__file__).resolve().parent


@pytest.fixture
def oauth() -> Iterator[Callable[..., OAuthServer]]:
    """A factory: `oauth(**options)` starts a fake AS + MCP endpoint, stopped after the test."""
    started: list[OAuthServer] = []

    def make(**options: Any) -> OAuthServer:
        server = OAuthServer(**options).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


class Browser:
    """A stand-in for the user's browser: follows the authorization redirect to our listener."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.fail = False
        self.done = threading.Event()
        self.responses: list[int] = []

    def __call__(self, url: str) -> bool:
        self.opened.append(url)
        if self.fail:
            return False
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(url, timeout=10) as resp:
                self.responses.append(resp.status)
        except Exception as exc:  # the listener answers 400 for a rejected callback
            self.responses.append(getattr(exc, "code", -1))
        finally:
            self.done.set()
        return True


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Browser:
    """In-process sign-ins open this browser (and BROWSER is set so one 'can be launched')."""
    from mcpcli.auth import browser as browser_mod

    fake = Browser()
    monkeypatch.setattr(browser_mod, "opener", fake)
    monkeypatch.setenv("BROWSER", "/nonexistent-browser-for-tests")
    return fake


@pytest.fixture
def browser_script(tmp_path: Path) -> Path:
    """An executable BROWSER for subprocess tests: GETs the URL and follows the redirect."""
    path = tmp_path / "fake-browser"
    path.write_text(f"#!{sys.executable}\n" + (HERE / "browser_script.py").read_text())
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def file_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TOKEN_STORE", "file")


def child_env(**extra: str) -> dict[str, str]:
    env = {
        "MCP_TOKEN_STORE": "file",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    env.update(extra)
    return env


def state_files() -> list[Path]:
    from mcpcli.config import state_dir

    root = state_dir()
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)
