"""Fixtures for the server runtime tests (helpers live in support.py, backends in backends.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from server_backends import DemoBackend

from mcpcli.server import Server


@pytest.fixture
def backend() -> DemoBackend:
    return DemoBackend()


@pytest.fixture
def server(backend: DemoBackend) -> Server:
    return Server(backend)


@pytest.fixture(autouse=True)
def _no_roots_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """Our test clients declare roots, and our server never asks for them after the
    handshake: the client's bounded wait for that `roots/list` (tested in
    tests/client/test_wild_servers.py) would only add 0.3 s to every test here."""
    import mcpcli.client.client

    monkeypatch.setattr(mcpcli.client.client, "ROOTS_WAIT", 0.0)
