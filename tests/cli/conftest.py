"""Fixtures for client tests: the real peers as argv lists, and a fake HOME.

Discovery reads other clients' config files under HOME, so every test here runs
with HOME pointing at an empty temp dir (the `mcp` subprocesses inherit it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import Peers

PEERS_DIR = Path(__file__).resolve().parent.parent / "peers"


@pytest.fixture(autouse=True)
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "fakehome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def everything(peers: Peers) -> list[str]:
    """argv of @modelcontextprotocol/server-everything over stdio."""
    return peers.everything_stdio()


@pytest.fixture
def sdk_server(peers: Peers) -> list[str]:
    """argv of tests/peers/sdk_server.py under the official SDK's own interpreter."""
    return [peers.sdk(), str(PEERS_DIR / "sdk_server.py")]


@pytest.fixture
def python() -> str:
    return sys.executable
