"""The demo backend over stdio as a gateway's upstream (a child process of the gateway tests).

Adds what the gateway tests need on top of the runtime tests' DemoBackend:
annotations (`echo` and `whoami` are read-only), `whoami` (this process's id
and the environment variable GATEWAY_TEST_VAR, to see restarts and per-upstream
env), `die` (exits the process mid-call: a crashed upstream), `Echo` (a tool
whose name differs from `echo` only by case), and `grow` (adds a tool `extra_NNN`
and announces the change; GATEWAY_TEST_EXTRA sets how many there are at start),
`refuse` (an error response with data), `log_together` (logs its text, then waits until
two such calls are in flight);
with GATEWAY_TEST_LOG, `slow` writes there when it starts and when it is cancelled.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent.parent / "server"))

from server_backends import JSON, DemoBackend, text

from mcpcli.errors import RPCError
from mcpcli.server import Server, serve_stdio
from mcpcli.server.backend import CallContext

READ_ONLY = {"echo", "whoami"}


class UpstreamBackend(DemoBackend):
    def __init__(self) -> None:
        super().__init__(tools=int(os.environ.get("GATEWAY_TEST_EXTRA", "0")))
        self.together = 0
        self.both_in = anyio.Event()

    async def list_tools(self) -> list[JSON]:
        tools = await super().list_tools()
        tools += [
            {"name": "whoami", "inputSchema": {"type": "object"}},
            {"name": "die", "inputSchema": {"type": "object"}},
            {"name": "grow", "inputSchema": {"type": "object"}},
            {"name": "Echo", "inputSchema": {"type": "object"}},
            {"name": "refuse", "inputSchema": {"type": "object"}},
            {"name": "log_together", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
            {"name": "delete_all", "inputSchema": {"type": "object"},
             "annotations": {"destructiveHint": True}},
        ]
        for tool in tools:
            if tool["name"] in READ_ONLY:
                tool["annotations"] = {"readOnlyHint": True}
        return tools

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        if name == "whoami":
            return text(f"{os.getpid()} {os.environ.get('GATEWAY_TEST_VAR', '-')}")
        if name == "die":
            os._exit(3)
        if name == "grow":
            self.extra_tools += 1
            self.changed("tools")
            return text(f"{self.extra_tools} extra tools")
        if name == "slow" and os.environ.get("GATEWAY_TEST_LOG"):
            # Writes "started", then "cancelled" when the call is cancelled.
            with open(os.environ["GATEWAY_TEST_LOG"], "a") as log:
                log.write("started\n")
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                with open(os.environ["GATEWAY_TEST_LOG"], "a") as log:
                    log.write("cancelled\n")
                raise
        if name == "log_together":
            await ctx.log("info", {"msg": arguments.get("text")}, "together")
            self.together += 1
            if self.together == 2:
                self.both_in.set()
            await self.both_in.wait()
            return text(f"{arguments.get('text')} done")
        if name == "refuse":
            raise RPCError(-32000, "refused here", {"why": "a test", "echo": arguments})
        if name in ("Echo", "delete_all"):
            return text(f"{name} ran")
        return await super().call_tool(name, arguments, ctx)


async def main() -> None:
    if sys.argv[1:2] == ["--http"]:  # gateway_upstream.py --http PORT: Streamable HTTP, no token
        from mcpcli.server import serve_http

        await serve_http(Server(UpstreamBackend()), port=int(sys.argv[2]))
        return
    await serve_stdio(Server(UpstreamBackend()), eof_grace=1)


if __name__ == "__main__":
    anyio.run(main)
