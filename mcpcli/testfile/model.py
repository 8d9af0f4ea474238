"""What a test file says, once loaded and checked: immutable, compiled, ready to run."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ABSENT", "Case", "Expect", "Suite", "Target"]


class _Absent:
    """No value given (distinct from null, which is a value)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


@dataclass(frozen=True)
class Target:
    """Where a file's tests go: a TARGET as written (`spec`) or a server command (`command`),
    relative to `base` (the test file's directory) where that applies."""

    spec: str | None = None
    command: tuple[str, ...] = ()
    base: str = "."

    def key(self) -> tuple[Any, ...]:
        """Files with equal keys share one connection."""
        return (self.spec, self.command, os.path.abspath(self.base) if self.command else "")

    def describe(self) -> str:
        return self.spec if self.spec is not None else " ".join(self.command)


@dataclass(frozen=True)
class Expect:
    """A test's assertions; each is checked, and every one that fails is reported."""

    #: False: the request must succeed (and a tool must not report isError); True: it must
    #: fail (a JSON-RPC error or isError); an int: a JSON-RPC error with that code.
    error: bool | int = False
    #: `error: {code?, message?}`: the request must get a JSON-RPC error (not isError).
    error_rpc: bool = False
    #: With `error: {message: ...}`: a regular expression on the JSON-RPC error's message.
    error_message: re.Pattern[str] | None = None
    text: re.Pattern[str] | None = None
    #: (source, compiled jq program).
    jq: tuple[str, Any] | None = None
    json: Any = ABSENT
    snapshot: bool = False
    #: (sources, a compiled jq `del(...)` of them), applied before storing or comparing.
    ignore: tuple[tuple[str, ...], Any] | None = None


@dataclass(frozen=True)
class Case:
    """One test: a tool call, a resource read or a prompt get, and what must hold."""

    name: str
    action: str  # "call" | "read" | "prompt"
    subject: str  # the tool, URI or prompt
    args: dict[str, Any] = field(default_factory=dict)
    expect: Expect = field(default_factory=Expect)
    line: int = 0


@dataclass(frozen=True)
class Suite:
    """One test file."""

    path: str
    target: Target | None
    cases: tuple[Case, ...]

    @property
    def snapshot_path(self) -> str:
        """Where its result snapshots live: `__snapshots__/<file name>.json` beside it."""
        head, name = os.path.split(self.path)
        return os.path.join(head, "__snapshots__", name + ".json")
