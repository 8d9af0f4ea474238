"""Fixtures for the tools.yaml tests: write a file, build a backend."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def tools_file(tmp_path: Path) -> Callable[..., Path]:
    """Write a tools.yaml (dedented) into a fresh directory and return its path."""

    def write(text: str, name: str = "tools.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


@pytest.fixture
def make_backend(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Build a ToolsBackend (closed at teardown) from YAML text or a path."""
    from mcpcli.toolsfile.backend import ToolsBackend

    made: list[Any] = []

    def make(text_or_path: str | Path, *, environ: dict[str, str] | None = None, log: Any = None) -> Any:
        if isinstance(text_or_path, Path):
            path = text_or_path
        else:
            path = tmp_path / "tools.yaml"
            path.write_text(textwrap.dedent(text_or_path), encoding="utf-8")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
        if environ:
            env.update(environ)
        backend = ToolsBackend(path, environ=env, log=log)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()
