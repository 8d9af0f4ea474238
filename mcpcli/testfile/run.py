"""Running test files: one connection per target, the tests on it in parallel.

Files that name the same target share its connection (or session), and every
test on a connection runs at once, up to `jobs` in flight; targets run side by
side. A target that cannot be reached, or a request that fails for a reason
other than the server's own answer (the connection closed, a timeout), makes
that test an error rather than a failure. Results come back in file order,
whatever order the answers arrived in.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from mcpcli.errors import McpCliError, RPCError, unwrap
from mcpcli.testfile.expect import Answer, check, snapshot_value
from mcpcli.testfile.model import ABSENT, Case, Suite, Target
from mcpcli.testfile.snapshots import Snapshots

__all__ = ["Caller", "Outcome", "run_suites"]

JSON = dict[str, Any]


class Caller(Protocol):
    """What a test needs of a connected client (`mcpcli.client.Client` is one)."""

    async def call_tool(self, name: str, arguments: JSON | None = None) -> JSON: ...
    async def read_resource(self, uri: str) -> JSON: ...
    async def get_prompt(self, name: str, arguments: Any = None) -> JSON: ...


#: Opens the connection for a target (the CLI's, with its flags); its errors are McpCliError.
OpenClient = Callable[[Target], AbstractAsyncContextManager[Caller]]


@dataclass
class Outcome:
    """One test's result: `passed`, `failed` (an assertion did not hold) or `error` (it
    could not run: the target could not be reached, the connection failed)."""

    suite: Suite
    case: Case
    target: str
    status: str = "error"
    failures: list[str] = field(default_factory=list)
    duration: float = 0.0

    def to_json(self) -> JSON:
        return {
            "file": self.suite.path, "name": self.case.name, "target": self.target, "status": self.status,
            "duration": round(self.duration, 6), "failures": list(self.failures),
        }


async def run_suites(
    suites: list[Suite],
    open_client: OpenClient,
    *,
    override: Target | None = None,
    jobs: int = 8,
    update: bool = False,
    snapshots: dict[str, Snapshots] | None = None,
) -> list[Outcome]:
    """Run every test of `suites` (against `override` if given, else each file's target)."""
    snapshots = snapshots or {}
    groups: dict[tuple[Any, ...], tuple[Target, list[tuple[Suite, Case]]]] = {}
    for suite in suites:
        target = override or suite.target
        assert target is not None, "the loader requires a target when none is given"
        group = groups.setdefault(target.key(), (target, []))
        group[1].extend((suite, case) for case in suite.cases)
    outcomes: dict[tuple[str, str], Outcome] = {}
    async with anyio.create_task_group() as tg:
        for target, items in groups.values():
            tg.start_soon(_run_group, target, items, open_client, jobs, update, snapshots, outcomes)
    return [outcomes[(suite.path, case.name)] for suite in suites for case in suite.cases]


async def _run_group(
    target: Target, items: list[tuple[Suite, Case]], open_client: OpenClient, jobs: int, update: bool,
    snapshots: dict[str, Snapshots], outcomes: dict[tuple[str, str], Outcome],
) -> None:
    limiter = anyio.CapacityLimiter(max(1, jobs))
    try:
        async with open_client(target) as client, anyio.create_task_group() as tg:
            for suite, case in items:
                outcome = Outcome(suite, case, target.describe())
                outcomes[(suite.path, case.name)] = outcome
                tg.start_soon(_run_case, client, outcome, limiter, update, snapshots.get(suite.path))
    except Exception as exc:
        inner = unwrap(exc)
        if not isinstance(inner, McpCliError):
            raise
        # The target could not be reached (or went away): every test not yet done says why.
        for suite, case in items:
            outcome = outcomes.setdefault((suite.path, case.name), Outcome(suite, case, target.describe()))
            if outcome.status == "error" and not outcome.failures:
                outcome.failures.append(f"{target.describe()}: {inner.message}")


async def _run_case(client: Caller, outcome: Outcome, limiter: anyio.CapacityLimiter, update: bool,
                    snaps: Snapshots | None) -> None:
    case = outcome.case
    async with limiter:
        start = anyio.current_time()
        try:
            answer = await _perform(client, case)
        except McpCliError as exc:  # not the server's answer: the test could not run
            outcome.status, outcome.failures = "error", [exc.message]
            return
        finally:
            outcome.duration = anyio.current_time() - start
    stored: Any = snaps.get(case.name) if snaps is not None else ABSENT
    if case.expect.snapshot and update and snaps is not None:
        stored = snapshot_value(case.expect, answer)
        snaps.take(case.name, stored)
    outcome.failures = check(case.expect, answer, stored)
    outcome.status = "failed" if outcome.failures else "passed"


async def _perform(client: Caller, case: Case) -> Answer:
    try:
        if case.action == "call":
            result = await client.call_tool(case.subject, case.args)
        elif case.action == "read":
            result = await client.read_resource(case.subject)
        else:
            result = await client.get_prompt(case.subject, case.args)
    except RPCError as exc:
        error: JSON = {"code": exc.code, "message": exc.rpc_message}
        if exc.data is not None:
            error["data"] = exc.data
        return Answer(case.action, error=error)
    return Answer(case.action, result=result)
