"""Finding tools across servers (`mcp tools grep`): which servers to ask, and what matches.

An agent (or a person) looking for "something that can fetch a URL" should not have
to list every server's tools by hand. This module picks the servers (ours, other
clients', open sessions), reads each one's tool list (a fresh cached one, else the
server, in parallel with a bound per server) and matches a pattern against tool
names, titles, descriptions and optionally parameter names. Connecting is the
caller's: it hands in a `fetch` callable, so the CLI's connection rules apply.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcpcli.errors import McpCliError, UsageError, unwrap

__all__ = ["Answer", "all_targets", "cached_listing", "compile_pattern", "gather", "match_tools"]

JSON = dict[str, Any]

#: At most this many servers are being reached at once (stdio ones are processes).
PARALLEL = 8


def compile_pattern(pattern: str, *, fixed: bool = False) -> re.Pattern[str]:
    """PATTERN as a case-insensitive regular expression (`fixed`: a literal string)."""
    try:
        return re.compile(re.escape(pattern) if fixed else pattern, re.IGNORECASE)
    except re.error as exc:
        raise UsageError(f"invalid pattern {pattern!r}: {exc}", hint="use -F to search for a fixed string") from None


def _title(tool: JSON) -> str | None:
    title = tool.get("title")
    if not isinstance(title, str):
        annotations = tool.get("annotations")
        title = annotations.get("title") if isinstance(annotations, dict) else None
    return title if isinstance(title, str) else None


def _parameter_names(tool: JSON) -> list[str]:
    schema = tool.get("inputSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    return [str(name) for name in props] if isinstance(props, dict) else []


def match_tools(server: str, listing: JSON, pattern: re.Pattern[str], *, schema: bool = False) -> list[JSON]:
    """`{server, tool, title, description}` for each listed tool whose name, title or
    description (with `schema`, also a parameter name) matches, in listing order."""
    found: list[JSON] = []
    for tool in listing.get("tools") or []:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        title = _title(tool)
        description = tool.get("description") if isinstance(tool.get("description"), str) else None
        fields = [tool["name"], title or "", description or ""]
        if schema:
            fields.extend(_parameter_names(tool))
        if any(pattern.search(text) for text in fields):
            found.append({"server": server, "tool": tool["name"], "title": title, "description": description})
    return found


def all_targets(config_names: Sequence[str], discovered: Sequence[str], sessions: Sequence[str]) -> list[str]:
    """Every server to search when none is named: ours, then other clients' (a name
    found twice once), then open sessions as `@NAME`."""
    seen: dict[str, None] = {}
    for name in (*config_names, *discovered):
        seen.setdefault(name, None)
    for name in sessions:
        seen.setdefault(f"@{name}", None)
    return list(seen)


def cached_listing(target: str, max_age: float | None = None) -> JSON | None:
    """The cached tool list of `target` if it is fresh: its `ttlMs` says so (2026-07-28), or
    (`max_age`, seconds) it was stored that recently, for servers whose lists carry no ttlMs."""
    import time

    from mcpcli import cache

    listing = cache.fresh(target, "tools/list")
    if listing is None and max_age:
        record = cache.load(target, "tools/list")
        stored = record.get("storedAt") if record else None
        if record and isinstance(stored, (int, float)) and 0 <= time.time() - stored <= max_age:
            listing = record.get("result")
    return listing if isinstance(listing, dict) and isinstance(listing.get("tools"), list) else None


@dataclass
class Answer:
    """One server's tool list, or why there is none."""

    target: str
    listing: JSON | None = None
    error: str | None = None
    #: The error itself (unwrapped), so a lone server's failure keeps its exit code.
    failure: BaseException | None = None


def _describe(exc: BaseException, timeout: float) -> str:
    """One line for why a server gave no list (a server that exits raises an
    ExceptionGroup from the client's task group: `unwrap` finds the real error)."""
    if isinstance(exc, TimeoutError):
        return f"no tool list within {timeout:g}s (--timeout)"
    if isinstance(exc, McpCliError):
        return exc.message
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc) or type(exc).__name__


async def gather(
    targets: Sequence[str], fetch: Callable[[str], Awaitable[JSON]], *, timeout: float
) -> list[Answer]:
    """Every target's tool list, fetched in parallel, each within `timeout` seconds; a
    target that fails (or takes longer) gets its error, the others still answer.
    Answers come in the order of `targets`."""
    import anyio

    answers = [Answer(t) for t in targets]
    limiter = anyio.CapacityLimiter(PARALLEL)

    async def one(answer: Answer) -> None:
        async with limiter:
            try:
                with anyio.fail_after(timeout):
                    answer.listing = await fetch(answer.target)
            except Exception as exc:  # one server's failure never costs the others' answers
                answer.failure = unwrap(exc)
                answer.error = _describe(answer.failure, timeout)

    async with anyio.create_task_group() as tg:
        for answer in answers:
            tg.start_soon(one, answer)
    return answers
