"""`mcp serve --proxy` over stdio on both sides under a burst of calls in flight: what
the pipes carry many messages per read and per write for (`mcpcli.transports.lines`)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from gwkit import UPSTREAM
from helpers import wait_until_async

from mcpcli.client import Client, ClientOptions
from mcpcli.transports.stdio import StdioTransport

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def texts(result: dict) -> list[str]:
    return [c["text"] for c in result.get("content", []) if c.get("type") == "text"]


@pytest.mark.parametrize("protocol", [None, "2025-11-25"])
async def test_a_burst_of_16_calls_with_one_cancelled(tmp_path: Path, protocol: str | None) -> None:
    """15 echoes and one slow call go out together; the slow one is cancelled once the
    upstream runs it. Each echo gets its own answer, the upstream sees the cancellation,
    a ping is answered meanwhile, and the next burst works too."""
    log = tmp_path / "slow.log"

    def logged(word: str) -> bool:
        return log.exists() and word in log.read_text().split()

    # The gateway passes an upstream only an allow-list of its environment: `env` sets the log.
    upstream = ["env", f"GATEWAY_TEST_LOG={log}", sys.executable, UPSTREAM]
    argv = [sys.executable, "-m", "mcpcli", "serve", "--quiet", "--proxy", "--prefix", "up_", "--", *upstream]
    transport = StdioTransport(argv[0], argv[1:], quiet=True)
    with anyio.fail_after(60):
        async with Client(transport, ClientOptions(protocol=protocol)) as client:
            await client.list_tools()
            for burst in range(2):
                answers: dict[int, list[str]] = {}

                async def echo(n: int, burst: int = burst, answers: dict[int, list[str]] = answers) -> None:
                    answers[n] = texts(await client.call_tool("up_echo", {"text": f"{burst}-{n}"}))

                async with anyio.create_task_group() as tg:
                    slow = anyio.CancelScope()

                    async def slow_call(slow: anyio.CancelScope = slow) -> None:
                        with slow:
                            await client.call_tool("up_slow")

                    for n in range(8):
                        tg.start_soon(echo, n)
                    if burst == 0:
                        tg.start_soon(slow_call)
                    for n in range(8, 15 if burst == 0 else 16):
                        tg.start_soon(echo, n)
                    if burst == 0:
                        await wait_until_async(lambda: logged("started"), 20, "the upstream call to start")
                        await client.ping()
                        slow.cancel()
                count = 15 if burst == 0 else 16
                assert answers == {n: [f"{burst}-{n}"] for n in range(count)}
            await wait_until_async(lambda: logged("cancelled"), 20, "the upstream call to be cancelled")
