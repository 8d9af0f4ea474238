"""Helpers the gateway tests import (a module of its own: `conftest` names several modules)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path
from typing import Any

from mcpcli.client import Client, ClientFeatures
from mcpcli.toolsfile.model import Upstream

UPSTREAM = str(Path(__file__).parent / "gateway_upstream.py")
JSON = dict[str, Any]


def demo(name: str = "demo", **fields: Any) -> Upstream:
    """The demo backend over stdio as an upstream named `name`."""
    return Upstream(name=name, command=(sys.executable, UPSTREAM), **fields)


async def answer_elicit(params: JSON) -> JSON:
    return {"action": "accept", "content": {"name": "Ada"}}


async def answer_sample(params: JSON) -> JSON:
    return {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}


def features() -> ClientFeatures:
    return ClientFeatures(
        elicit=answer_elicit, sample=answer_sample, roots=[{"uri": "file:///tmp/r1", "name": "r1"}]
    )


Gateway = Callable[..., AbstractAsyncContextManager[Client]]



@contextmanager
def listening(argv: list[str], port: int, env: dict[str, str] | None = None,
              what: str = "server") -> Iterator[str]:
    """Run `argv` (in its own process group) until it listens on `port`; yield its /mcp URL.
    The group is ended afterwards, TERM then KILL."""
    from helpers import stop_group, wait_listening

    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ, **(env or {})},
                            start_new_session=True)
    try:
        wait_listening(port, proc, what)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_group(proc, grace=10)
        assert proc.stderr is not None
        proc.stderr.close()


def serve_http(*args: str, port: int) -> list[str]:
    """argv of `mcp serve --http 127.0.0.1:PORT ARGS...` (a real process)."""
    return [sys.executable, "-m", "mcpcli", "serve", "--http", f"127.0.0.1:{port}", *args]
