"""The official-SDK test server (tests/peers/sdk_server.py) over Streamable HTTP.

Run with the SDK's interpreter: `sdk_http_server.py PORT [--tick] [--json]`. It
listens on 127.0.0.1 only, serves the same tools, resources and prompts as the
stdio peer at `/mcp`, and speaks both eras (2026-07-28 stateless requests and
legacy sessions). `--json` makes it answer with JSON bodies instead of SSE.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "peers"))

import sdk_server


async def main() -> None:
    port = int(sys.argv[1])
    async with anyio.create_task_group() as tg:
        if "--tick" in sys.argv:
            tg.start_soon(sdk_server.tick)
        await sdk_server.server.run_streamable_http_async(
            host="127.0.0.1", port=port, json_response="--json" in sys.argv
        )
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
