"""The `run` fixture: a private run directory, the fake daemon as the daemon command, and
every daemon a test started stopped afterwards (see util.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessions.util import FAKE_DAEMON, Run, stop


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Run]:
    """A private run directory and the fake daemon as the daemon command."""
    directory = tmp_path / "run"
    monkeypatch.setenv("MCPCLI_RUNTIME_DIR", str(directory))
    monkeypatch.setenv("MCPCLI_DAEMON_ARGV", json.dumps([sys.executable, str(FAKE_DAEMON)]))
    here = Run(directory)
    yield here
    for pid in here.starts():
        stop(pid)
