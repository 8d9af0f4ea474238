"""Helpers for the tools.yaml tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcpcli.server.backend import InputDeclined

JSON = dict[str, Any]

#: A tool body that prints what the process received: argv, environment, stdin, cwd.
RECORDER = """
import json, os, sys
print(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ), "stdin": sys.stdin.read(), "cwd": os.getcwd()}))
"""


class FakeContext:
    """A CallContext that records what the backend did and answers `ask` from a script."""

    def __init__(
        self,
        *,
        era: str = "legacy",
        protocol_version: str = "2025-11-25",
        capabilities: JSON | None = None,
        answers: Callable[[dict[str, JSON]], dict[str, JSON]] | None = None,
    ) -> None:
        self.era = era
        self.protocol_version = protocol_version
        self.client_capabilities = capabilities if capabilities is not None else {
            "elicitation": {}, "sampling": {}, "roots": {}}
        self.client_info = {"name": "test", "version": "0"}
        self.transport = "memory"
        self.events: list[tuple[Any, ...]] = []
        self._answers = answers

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        self.events.append(("progress", progress, total, message))

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        self.events.append(("log", level, data, logger))

    async def ask(self, requests: dict[str, JSON]) -> dict[str, JSON]:
        self.events.append(("ask", requests))
        for item in requests.values():
            cap = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling",
                   "roots/list": "roots"}[item["method"]]
            if cap not in self.client_capabilities:
                raise InputDeclined(capabilities=[cap])
        if self._answers is None:
            raise InputDeclined("no answers configured")
        return self._answers(requests)

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        return [e for e in self.events if e[0] == kind]


def text_of(result: JSON) -> str:
    """All text blocks of a result, joined."""
    return "\n".join(b.get("text", "") for b in result.get("content", []) if b.get("type") == "text")
