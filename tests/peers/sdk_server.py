"""A small MCP server written with the official Python SDK (PyPI `mcp`), run over stdio.

Run it with the SDK's own interpreter (`peers.sdk()`), never ours: the tests use it
to check `mcp` against a real, independent implementation of both protocol eras.

It serves:
  tools      add (structured output), greet, fail (isError), picture (image + audio),
             slow (progress), ask (elicitation), chatty (log messages), touch (resource updates)
  resources  note://hello (text), blob://dot.png (binary), item://{id} (template);
             resources/list is paginated two at a time by a middleware
  prompts    review(code, style?) with completion of `style`; item ids complete too
Stdlib plus the SDK only; nothing here reads the network or the filesystem.
"""

from __future__ import annotations

import base64
import sys
import warnings
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    Image,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.server.mcpserver.utilities.types import Audio
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from mcp_types import (
    Completion,
    CreateMessageResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel, Field

# The SDK warns that logging is deprecated in 2026-07-28; the warning is noise on our stderr.
warnings.simplefilter("ignore")

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)
WAV = b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00@\x1f\x00\x00\x01\x00\x08\x00data\x00\x00\x00\x00"
PAGE = 2

bus = InMemorySubscriptionBus()


async def paginate(ctx: Any, call_next: Any) -> Any:
    """Serve resources/list two items per page, with an opaque cursor."""
    if ctx.method != "resources/list":
        return await call_next(ctx)
    params = ctx.params if isinstance(ctx.params, dict) else {}
    result = await call_next(ctx)
    data = result.model_dump(by_alias=True, exclude_none=True) if hasattr(result, "model_dump") else dict(result)
    items = data.get("resources", [])
    cursor = params.get("cursor")
    start = int(cursor[1:]) if isinstance(cursor, str) and cursor.startswith("p") else 0
    data["resources"] = items[start : start + PAGE]
    if start + PAGE < len(items):
        data["nextCursor"] = f"p{start + PAGE}"
    return data


server = MCPServer(
    name="sdk-peer",
    title="SDK peer",
    version="1.0.0",
    instructions="A test server built with the official Python SDK.",
    subscriptions=bus,
    middleware=[paginate],
)


class Sum(BaseModel):
    sum: int = Field(description="a + b")


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> Sum:
    return Sum(sum=a + b)


@server.tool(description="Greet someone by name.")
def greet(name: str, punctuation: str = "!") -> str:
    return f"Hello, {name}{punctuation}"


@server.tool(description="Always fails.")
def fail() -> str:
    raise ValueError("this tool always fails")


@server.tool(description="Return an image and an audio clip.", structured_output=False)
def picture() -> list[Any]:
    return [Image(data=PNG, format="png"), Audio(data=WAV, format="wav"), "a picture and a sound"]


@server.tool(description="Report progress for `steps` steps.")
async def slow(steps: int, ctx: Context) -> str:
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
        await anyio.sleep(0.02)
    return f"done after {steps} steps"


class Answer(BaseModel):
    color: str = Field(description="Your favourite colour")
    count: int = Field(default=3, description="How many")


def _ask_colour() -> Elicit[Answer]:
    return Elicit("Pick a colour", Answer)


@server.tool(description="Ask the user for a colour (elicitation, in either era).")
def ask(answer: Annotated[ElicitationResult[Answer], Resolve(_ask_colour)]) -> str:
    if isinstance(answer, AcceptedElicitation):
        return f"got {answer.data.color} x{answer.data.count}"
    return f"no answer: {answer.action}"


def _sample_haiku(topic: str) -> Sample:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=f"a haiku about {topic}"))
    return Sample([message], max_tokens=50)


@server.tool(description="Ask the client's LLM for a haiku (sampling, in either era).")
def haiku(topic: str, reply: Annotated[CreateMessageResult, Resolve(_sample_haiku)]) -> str:
    content = reply.content
    text = content.text if isinstance(content, TextContent) else str(content)
    return f"{reply.model} wrote: {text}"


@server.tool(description="Send log messages at several levels.")
async def chatty(ctx: Context) -> str:
    await ctx.debug("a debug line")
    await ctx.info("an info line")
    await ctx.error("an error line")
    return "logged"


@server.tool(description="Announce that item://{id} changed.")
async def touch(id: str, ctx: Context) -> str:
    await ctx.notify_resource_updated(f"item://{id}")
    return "touched"


@server.resource("note://hello", name="hello", description="A greeting.", mime_type="text/plain")
def hello() -> str:
    return "hello from the SDK"


@server.resource("blob://dot.png", name="dot", mime_type="image/png")
def dot() -> bytes:
    return PNG


def _extra(n: int) -> None:
    def read() -> str:
        return f"extra note {n}"

    server.resource(f"note://extra/{n}", name=f"extra-{n}", mime_type="text/plain")(read)


for _n in range(3):
    _extra(_n)


@server.resource("item://{id}", name="item", description="An item by id.", mime_type="text/plain")
def item(id: str) -> str:
    return f"item {id}"


@server.prompt(description="Ask for a code review.")
def review(code: str, style: str = "short") -> str:
    return f"Review this code ({style}):\n{code}"


STYLES = ["short", "long", "strict"]


@server.completion()
async def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
    if isinstance(ref, PromptReference) and argument.name == "style":
        return Completion(values=[s for s in STYLES if s.startswith(argument.value)])
    if isinstance(ref, ResourceTemplateReference) and argument.name == "id":
        return Completion(values=[i for i in ("1", "2", "10", "11") if i.startswith(argument.value)])
    return None


async def tick() -> None:
    """Publish an update of item://tick every 50 ms, for subscription tests."""
    while True:
        await anyio.sleep(0.05)
        await bus.publish(ResourceUpdated(uri="item://tick"))


async def main() -> None:
    async with anyio.create_task_group() as tg:
        if "--tick" in sys.argv:
            tg.start_soon(tick)
        await server.run_stdio_async()
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
