"""Answer `sampling/createMessage` with a local command (`--sampling-command`).

The command gets the request's params as JSON on stdin and answers on stdout,
either with a full `CreateMessageResult` object or with plain text, which is
wrapped as the assistant's text reply. The command line is split like a shell
would (quotes respected) but never run through a shell.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Awaitable, Callable
from typing import Any

from mcpcli.errors import RPCError, UsageError
from mcpcli.jsonrpc import INTERNAL_ERROR

__all__ = ["command_sampler"]

JSON = dict[str, Any]
#: A sampling reply larger than this is refused rather than read into memory.
MAX_REPLY_BYTES = 8 * 1024 * 1024


def _as_result(stdout: str, model: str) -> JSON:
    text = stdout.strip()
    if text.startswith("{"):
        try:
            reply = json.loads(text)
        except ValueError:
            reply = None
        if isinstance(reply, dict) and "content" in reply:
            reply.setdefault("role", "assistant")
            reply.setdefault("model", model)
            return reply
    return {
        "role": "assistant",
        "content": {"type": "text", "text": stdout.rstrip("\n")},
        "model": model,
        "stopReason": "endTurn",
    }


def command_sampler(command: str, *, timeout: float = 300.0) -> Callable[[JSON], Awaitable[JSON]]:
    """A sampling callback that runs `command` once per request."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--sampling-command: {exc}") from None
    if not argv:
        raise UsageError("--sampling-command is empty")
    model = argv[0].rsplit("/", 1)[-1]

    async def sample(params: JSON) -> JSON:
        import anyio

        payload = json.dumps(params, ensure_ascii=False).encode("utf-8")
        try:
            with anyio.fail_after(timeout):
                done = await anyio.run_process(
                    argv, input=payload, check=False, start_new_session=True,
                    stderr=subprocess.PIPE,
                )
        except FileNotFoundError:
            raise RPCError(INTERNAL_ERROR, f"sampling command not found: {argv[0]}") from None
        except TimeoutError:
            raise RPCError(INTERNAL_ERROR, "sampling command timed out") from None
        if done.returncode != 0:
            err = done.stderr.decode("utf-8", "replace").strip().splitlines()
            detail = f": {err[-1]}" if err else ""
            raise RPCError(
                INTERNAL_ERROR, f"sampling command exited with code {done.returncode}{detail}"
            )
        if len(done.stdout) > MAX_REPLY_BYTES:
            raise RPCError(INTERNAL_ERROR, "sampling command reply is too large")
        return _as_result(done.stdout.decode("utf-8", "replace"), model)

    return sample
