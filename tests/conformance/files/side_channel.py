"""The side channel's line protocol (README, "The side channel"), for the fixture's Python tools.

One process sends all of a tool's messages: the harness gives some calls half a second,
which one `mcp script` start per message did not always leave on a busy machine.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any


def send(op: str, **fields: Any) -> dict[str, Any]:
    """One request (`op` and its fields) on a connection of its own; the server's answer."""
    request = {"token": os.environ["MCP_SCRIPT_TOKEN"], "op": op, **fields}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(os.environ["MCP_SCRIPT_SOCKET"])
        sock.sendall(json.dumps(request).encode() + b"\n")
        with sock.makefile("rb") as answers:
            answer: dict[str, Any] = json.loads(answers.readline())
    if not answer.get("ok"):
        raise SystemExit(f"side channel: {answer.get('error')}")
    return answer
