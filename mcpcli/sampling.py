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

from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import INTERNAL_ERROR
from mcpcli.errors import RPCError, UsageError

__all__ = ["command_sampler"]

JSON = dict[str, Any]
#: A sampling reply larger than this is refused rather than read into memory.
MAX_REPLY_BYTES = 8 * 1024 * 1024


def _as_result(stdout: str, model: str) -> JSON:
    text = stdout.strip()
    if text.startswith("{"):
        try:
            reply = jsonrpc.loads(text)
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
        payload = json.dumps(params, ensure_ascii=False).encode("utf-8")
        try:
            code, stdout, stderr = await _run(argv, payload, timeout)
        except FileNotFoundError:
            raise RPCError(INTERNAL_ERROR, f"sampling command not found: {argv[0]}") from None
        except PermissionError:
            raise RPCError(INTERNAL_ERROR, f"sampling command not executable: {argv[0]}") from None
        except TimeoutError:
            raise RPCError(INTERNAL_ERROR, "sampling command timed out") from None
        except OSError as exc:
            raise RPCError(INTERNAL_ERROR, f"sampling command {argv[0]}: {exc.strerror or exc}") from None
        if len(stdout) > MAX_REPLY_BYTES:
            raise RPCError(INTERNAL_ERROR, "sampling command reply is too large")
        if code != 0:
            err = stderr.decode("utf-8", "replace").strip().splitlines()
            detail = f": {err[-1]}" if err else ""
            raise RPCError(INTERNAL_ERROR, f"sampling command exited with code {code}{detail}")
        return _as_result(stdout.decode("utf-8", "replace"), model)

    return sample


async def _run(argv: list[str], payload: bytes, timeout: float) -> tuple[int, bytes, bytes]:
    """Run the command with `payload` on stdin: (exit code, stdout, stderr tail).

    A command may exit without reading its input (`echo`, `true`): the broken
    pipe that leaves is not an error, its exit code and output are what count.
    stdout is read up to one byte past `MAX_REPLY_BYTES` (then the command is
    killed), stderr keeps its last few KiB; the whole run is bounded by
    `timeout`, after which the command's process group is killed.
    """
    import os
    import signal

    import anyio
    from anyio.abc import ByteReceiveStream

    async def feed(stdin: anyio.abc.ByteSendStream) -> None:
        try:
            async with stdin:
                await stdin.send(payload)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # the command did not read its input

    async def collect(stream: ByteReceiveStream, into: bytearray, cap: int, keep_tail: bool) -> None:
        try:
            async for chunk in stream:
                into += chunk
                if len(into) > cap:
                    if not keep_tail:
                        process.kill()
                        return
                    del into[: len(into) - cap]
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass

    stdout, stderr = bytearray(), bytearray()
    process = await anyio.open_process(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tg:
                assert process.stdin is not None
                assert process.stdout is not None
                assert process.stderr is not None
                tg.start_soon(feed, process.stdin)
                tg.start_soon(collect, process.stdout, stdout, MAX_REPLY_BYTES, False)
                tg.start_soon(collect, process.stderr, stderr, 4096, True)
                await process.wait()
    finally:
        if process.returncode is None:
            with anyio.CancelScope(shield=True):
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    process.kill()
                await process.wait()
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return process.returncode if process.returncode is not None else -1, bytes(stdout), bytes(stderr)
