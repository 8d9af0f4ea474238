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
