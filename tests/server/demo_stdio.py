"""Run the demo backend over stdio (a child process for the stdio tests)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))

from server_backends import JSON, DemoBackend

from mcpcli.server import Server, serve_stdio
from mcpcli.server.backend import CallContext


class NoisyBackend(DemoBackend):
    """Prints while serving: the runtime must keep that off the protocol stream."""

    def instructions(self) -> str | None:
        print("stray output goes to stderr, not to the protocol stream")
        return super().instructions()

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        if name != "slow":
            return await super().call_tool(name, arguments, ctx)
        print("slow: started", file=sys.stderr, flush=True)
        try:
            return await super().call_tool(name, arguments, ctx)
        except anyio.get_cancelled_exc_class():
            print("slow: cancelled", file=sys.stderr, flush=True)
            raise


async def main() -> None:
    grace = float(os.environ.get("DEMO_EOF_GRACE", "2"))
    await serve_stdio(Server(NoisyBackend()), eof_grace=grace)


if __name__ == "__main__":
    anyio.run(main)
