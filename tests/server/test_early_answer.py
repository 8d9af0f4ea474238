"""Answering a request before its handler returns (`RequestContext.answer_now`) and the
2026-07-28 calls built on it: a first round runs in the request's own task and, when
it asks for input, answers early and stays parked there for the client's retry.

The session-level checks run over a memory pair and over real pipes (both ends the
stdio framing, so responses and requests are taken in the pipe's callback); the MRTR
ones run `serve_stdio` in this process over real pipes (the backend can be watched),
and the demo server and `mcp serve tools.yaml` as real processes (a parked script,
the exit at end of input). What tests/server/test_server_mrtr.py already covers over
memory (which takes the same in-task path: a memory connection outlives its requests)
is not repeated: signed and tampered state, an expired state, eviction by count, a
re-run with the carried answers in another process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import OpenFds, wait_until, wait_until_async
from server_backends import TaskBackend
from server_support import modern_meta, raw

from mcpcli.core.jsonrpc import Batch, ErrorResponse, Notification, Request, Response
from mcpcli.rpc.peer import MAX_CONCURRENT_INCOMING, Peer, RequestContext
from mcpcli.server import Server
from mcpcli.server.backend import CallContext
from mcpcli.server.stdio import serve_stdio, stdio_streams
from mcpcli.transports import Envelope, Streams
from mcpcli.transports.memory import memory_pair

pytestmark = pytest.mark.anyio

JSON = dict[str, Any]
CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}
ADA = {"action": "accept", "content": {"name": "Ada"}}
BOB = {"action": "accept", "content": {"name": "Bob"}}
DEMO = str(Path(__file__).parent / "demo_stdio.py")


# -- connections ----------------------------------------------------------------------


class _Fds(OpenFds):
    """Two pipes (client to server, server to client)."""

    def __init__(self) -> None:
        self.to_server_r, self.to_server_w = os.pipe()
        self.to_client_r, self.to_client_w = os.pipe()
        super().__init__(self.to_server_r, self.to_server_w, self.to_client_r, self.to_client_w)


@asynccontextmanager
async def _memory() -> AsyncIterator[tuple[Streams, Streams]]:
    async with memory_pair() as (client_side, server_side):
        yield client_side, server_side


@asynccontextmanager
async def _pipes() -> AsyncIterator[tuple[Streams, Streams]]:
    fds = _Fds()
    try:
        async with (
            stdio_streams(fds.to_server_r, fds.to_client_w) as server_side,
            stdio_streams(fds.to_client_r, fds.to_server_w) as client_side,
        ):
            yield client_side, server_side
    finally:
        fds.close_all()


PAIRS: dict[str, Callable[[], AbstractAsyncContextManager[tuple[Streams, Streams]]]] = {
    "memory": _memory,
    "pipes": _pipes,
}


class Raw:
    """The client end as bare messages: our own ids (to reuse them), everything seen."""

    def __init__(self, streams: Streams) -> None:
        self.read, self.write = streams

    async def send(self, message: Request | Notification) -> None:
        await self.write.send(Envelope(message))

    async def next(self) -> Response | ErrorResponse:
        """The next response (what the server sends besides, none here, fails the test)."""
        with anyio.fail_after(10):
            item = await self.read.receive()  # type: ignore[attr-defined]
        assert isinstance(item, Envelope), item
        assert isinstance(item.message, (Response, ErrorResponse)), item.message
        return item.message

    async def call(self, rid: int, method: str, params: JSON | None = None) -> Response | ErrorResponse:
        await self.send(Request(method, params, rid))
        answer = await self.next()
        assert answer.id == rid, answer  # nothing else came first (no late answer)
        return answer


# -- answer_now at the session --------------------------------------------------------


class Held:
    """A handler whose "hold" requests answer early, then wait for `gate`."""

    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.finished = anyio.Event()
        self.cancelled = anyio.Event()
        self.contexts: list[RequestContext] = []

    async def __call__(self, request: Request, ctx: RequestContext) -> JSON:
        if request.method == "echo":
            return {"echo": (request.params or {}).get("n")}
        assert request.method == "hold"
        self.contexts.append(ctx)
        await ctx.answer_now({"early": True})
        try:
            await self.gate.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise
        self.finished.set()
        return {"late": True}  # dropped: the request has had its answer


@pytest.mark.parametrize("pair", list(PAIRS))
async def test_an_early_answer_goes_out_before_the_handler_returns(pair: str) -> None:
    held = Held()
    with anyio.fail_after(10):
        async with PAIRS[pair]() as (client_side, server_side), Peer(server_side, on_request=held) as server:
            raw = Raw(client_side)
            first = await raw.call(1, "hold")
            assert first == Response(1, {"early": True})
            assert not held.finished.is_set()
            assert held.contexts[0].answered
            # The session's idle count does not wait for the handler (end of input need not).
            await server.wait_idle()
            assert not held.finished.is_set()
            held.gate.set()
            await held.finished.wait()
            # The handler's own return was dropped: the next thing on the wire answers this.
            assert await raw.call(2, "echo", {"n": 2}) == Response(2, {"echo": 2})
    assert not held.cancelled.is_set()


@pytest.mark.parametrize("pair", list(PAIRS))
async def test_an_early_answered_id_is_free_and_deaf_to_cancellation(pair: str) -> None:
    held = Held()
    with anyio.fail_after(10):
        async with PAIRS[pair]() as (client_side, server_side), Peer(server_side, on_request=held):
            raw = Raw(client_side)
            assert await raw.call(7, "hold") == Response(7, {"early": True})
            # The peer cancels the id it has its answer for: the handler goes on.
            await raw.send(Notification("notifications/cancelled", {"requestId": 7}))
            # The id is free at once (no "duplicate request id"), while the first handler runs.
            assert await raw.call(7, "echo", {"n": 7}) == Response(7, {"echo": 7})
            assert not held.cancelled.is_set()
            # A second early answer under the same id; cancelling it reaches neither handler.
            assert await raw.call(7, "hold") == Response(7, {"early": True})
            await raw.send(Notification("notifications/cancelled", {"requestId": 7}))
            assert await raw.call(8, "echo", {"n": 8}) == Response(8, {"echo": 8})
            assert not held.cancelled.is_set()
            held.gate.set()
            await held.finished.wait()
            assert await raw.call(9, "echo", {"n": 9}) == Response(9, {"echo": 9})
    assert len(held.contexts) == 2


@pytest.mark.parametrize("pair", list(PAIRS))
async def test_an_id_in_use_and_requests_past_the_cap_are_refused(pair: str) -> None:
    """What "free" means above: an id whose handler has not answered is refused, as is a
    request past the concurrency cap (over pipes these are taken in the pipe's callback)."""
    gate = anyio.Event()

    async def waiting(request: Request, ctx: RequestContext) -> JSON:
        await gate.wait()
        return {"id": request.id}

    with anyio.fail_after(10):
        async with PAIRS[pair]() as (client_side, server_side), Peer(server_side, on_request=waiting):
            raw = Raw(client_side)
            await raw.send(Request("wait", None, 7))
            duplicate = await raw.call(7, "wait")
            assert isinstance(duplicate, ErrorResponse)
            assert (duplicate.error.code, duplicate.error.message) == (-32600, "duplicate request id")
            for rid in range(100, 99 + MAX_CONCURRENT_INCOMING):  # with 7: at the cap
                await raw.send(Request("wait", None, rid))
            over = await raw.call(99, "wait")
            assert isinstance(over, ErrorResponse)
            assert over.error.code == -32603
            gate.set()
            answered = {(await raw.next()).id for _ in range(MAX_CONCURRENT_INCOMING)}
    assert answered == {7, *range(100, 99 + MAX_CONCURRENT_INCOMING)}


@pytest.mark.parametrize("pair", list(PAIRS))
async def test_an_early_answered_handler_is_cancelled_when_the_session_closes(pair: str) -> None:
    held = Held()
    with anyio.fail_after(10):
        async with PAIRS[pair]() as (client_side, server_side):
            async with Peer(server_side, on_request=held):
                raw = Raw(client_side)
                assert await raw.call(1, "hold") == Response(1, {"early": True})
            # Leaving the session ends what it started, early-answered or not.
            assert held.cancelled.is_set()
    assert not held.finished.is_set()


# -- MRTR: first rounds in the request's task, over real pipes ------------------------


class Watched(TaskBackend):
    """The demo backend (with `ask_then_gate`, and no tool that may become a task),
    counting the calls that were cancelled (a parked call ending)."""

    def __init__(self) -> None:
        super().__init__({})
        self.cancels: list[str] = []

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        try:
            return await super().call_tool(name, arguments, ctx)
        except anyio.get_cancelled_exc_class():
            self.cancels.append(name)
            raise


def call(name: str, **extra: Any) -> JSON:
    return {"name": name, "arguments": {}, "_meta": modern_meta(CAPS), **extra}


def result(answer: Response | ErrorResponse) -> JSON:
    assert isinstance(answer, Response), answer
    return answer.result


@asynccontextmanager
async def served(server: Server, *, eof_grace: float = 2.0) -> AsyncIterator[tuple[Raw, anyio.Event]]:
    """`server` on real pipes (serve_stdio in this process); the client end as `Raw`, and
    an event set when serve_stdio returned. Leaving closes the client's end (end of
    input) and waits for the server to finish."""
    fds = _Fds()
    stopped = anyio.Event()

    async def run() -> None:
        try:
            await serve_stdio(
                server, stdin_fd=fds.to_server_r, stdout_fd=fds.to_client_w,
                protect_stdout=False, eof_grace=eof_grace,
            )
        finally:
            stopped.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            async with stdio_streams(fds.to_client_r, fds.to_server_w) as client_side:
                yield Raw(client_side), stopped
            fds.close(fds.to_server_w)  # end of input
            with anyio.fail_after(10):
                await stopped.wait()
    finally:
        fds.close_all()


async def test_a_call_asking_twice_stays_in_its_first_task_for_both_rounds() -> None:
    backend = Watched()
    server = Server(backend)
    async with served(server) as (raw, _):
        r1 = result(await raw.call(1, "tools/call", call("two_questions")))
        assert r1["resultType"] == "input_required"
        assert list(r1["inputRequests"]) == ["step1"]
        assert len(server.runtime.parked) == 1
        r2 = result(await raw.call(
            2, "tools/call", call("two_questions", inputResponses={"step1": ADA}, requestState=r1["requestState"])
        ))
        assert list(r2["inputRequests"]) == ["step2"]
        assert r2["requestState"] != r1["requestState"]
        done = result(await raw.call(
            3, "tools/call", call("two_questions", inputResponses={"step2": BOB}, requestState=r2["requestState"])
        ))
        assert done["resultType"] == "complete"
        assert done["content"][0]["text"] == "Ada Bob"
        assert not server.runtime.parked
        # Nothing else was written for request 1 when the call it parked finished.
        assert result(await raw.call(4, "tools/call", call("echo"))).get("resultType") == "complete"
    assert backend.runs["two_questions"] == 1  # resumed twice, never re-run
    assert backend.cancels == []


async def test_cancelling_the_first_request_after_its_early_answer_spares_the_call() -> None:
    backend = Watched()
    server = Server(backend)
    async with served(server) as (raw, _):
        r1 = result(await raw.call(1, "tools/call", call("elicit")))
        assert r1["resultType"] == "input_required"
        await raw.send(Notification("notifications/cancelled", {"requestId": 1, "reason": "late"}))
        # In order after the notification: once this is answered, the cancel was handled.
        assert result(await raw.call(2, "tools/call", call("echo")))["resultType"] == "complete"
        assert backend.cancels == []
        assert len(server.runtime.parked) == 1
        # The retry (under the first request's id, free again) resumes the parked call.
        done = result(await raw.call(
            1, "tools/call", call("elicit", inputResponses={"user_name": ADA}, requestState=r1["requestState"])
        ))
        assert done["content"][0]["text"] == "Hello, Ada!"
    assert backend.runs["elicit"] == 1
    assert backend.cancels == []


async def test_an_older_state_re_runs_and_end_of_input_ends_every_parked_call() -> None:
    backend = Watched()
    server = Server(backend)
    async with served(server) as (raw, _):
        r1 = result(await raw.call(1, "tools/call", call("two_questions")))
        await raw.send(Request(
            "tools/call", call("two_questions", inputResponses={"step1": ADA}, requestState=r1["requestState"]), 2
        ))
        r2 = result(await raw.next())
        assert list(r2["inputRequests"]) == ["step2"]
        await raw.send(Request(
            "tools/call", call("two_questions", inputResponses={"step1": ADA}, requestState=r1["requestState"]), 3
        ))
        # r1's state again: the call is no longer parked under it, so this is a re-run.
        r3 = result(await raw.next())
        assert list(r3["inputRequests"]) == ["step2"]
        assert backend.runs["two_questions"] == 2
        assert len(server.runtime.parked) == 2
    assert sorted(backend.cancels) == ["two_questions", "two_questions"]  # end of input ended both


async def test_the_oldest_parked_call_is_evicted_and_its_retry_re_runs() -> None:
    backend = Watched()
    server = Server(backend, max_parked=1)
    async with served(server) as (raw, _):
        r1 = result(await raw.call(1, "tools/call", call("two_questions")))
        r1b = result(await raw.call(
            2, "tools/call", call("two_questions", inputResponses={"step1": ADA}, requestState=r1["requestState"])
        ))
        assert list(r1b["inputRequests"]) == ["step2"]
        r2 = result(await raw.call(3, "tools/call", call("elicit")))
        # The first call (parked in request 1's task) was evicted: that task ended.
        assert backend.cancels == ["two_questions"]
        assert len(server.runtime.parked) == 1
        # Its retry re-runs it with step1's answer carried in the state: only step2 is asked.
        done = result(await raw.call(
            4, "tools/call", call("two_questions", inputResponses={"step2": BOB}, requestState=r1b["requestState"])
        ))
        assert done["content"][0]["text"] == "Ada Bob"
        assert backend.runs["two_questions"] == 2
        # The re-run finished without parking anything: the elicit call is still parked.
        hello = result(await raw.call(
            5, "tools/call", call("elicit", inputResponses={"user_name": ADA}, requestState=r2["requestState"])
        ))
        assert hello["content"][0]["text"] == "Hello, Ada!"
    assert backend.runs["elicit"] == 1
    assert backend.cancels == ["two_questions"]


async def test_a_parked_call_past_its_ttl_ends_and_its_state_with_it() -> None:
    """The continuation's deadline ends the call parked in the request's task. Its state
    expires no later (whole seconds, rounded down), so the retry is told to call again
    rather than re-run: the "re-run after expiry" path needs a state that outlives it."""
    backend = Watched()
    server = Server(backend, input_ttl=0.2)
    async with served(server) as (raw, _):
        r1 = result(await raw.call(1, "tools/call", call("elicit")))
        assert len(server.runtime.parked) == 1
        # The deadline cancels the call parked in request 1's task.
        await wait_until_async(lambda: not server.runtime.parked, what="the parked call to expire")
        assert backend.cancels == ["elicit"]
        late = await raw.call(
            2, "tools/call", call("elicit", inputResponses={"user_name": ADA}, requestState=r1["requestState"])
        )
        assert isinstance(late, ErrorResponse)
        assert late.error.code == -32602
        assert "expired" in late.error.message
        # A fresh call with the answer completes statelessly.
        done = result(await raw.call(3, "tools/call", call("elicit", inputResponses={"user_name": ADA})))
        assert done["content"][0]["text"] == "Hello, Ada!"


async def test_end_of_input_ends_a_parked_call_without_waiting_for_the_grace() -> None:
    backend = Watched()
    server = Server(backend)
    async with served(server, eof_grace=3600) as (raw, stopped):
        r1 = result(await raw.call(1, "tools/call", call("elicit")))
        assert r1["resultType"] == "input_required"
        assert not stopped.is_set()
    # `served` waited (bounded) for serve_stdio to return: the parked call did not count
    # as a request in flight, and was cancelled with the connection.
    assert backend.cancels == ["elicit"]
    assert not server.runtime.parked


async def test_cancelling_the_retry_cancels_the_call_parked_in_the_first_task() -> None:
    backend = Watched()
    server = Server(backend)
    async with served(server) as (raw, _):
        r1 = result(await raw.call(1, "tools/call", call("ask_then_gate")))
        retry = call("ask_then_gate", inputResponses={"user_name": ADA}, requestState=r1["requestState"])
        await raw.send(Request("tools/call", retry, 2))
        with anyio.fail_after(10):
            await backend.started.wait()  # resumed: past the question, in request 1's task
        await raw.send(Notification("notifications/cancelled", {"requestId": 2}))
        await wait_until_async(lambda: backend.cancels, what="the resumed call to be cancelled")
        assert backend.cancels == ["ask_then_gate"]
        assert not server.runtime.parked
        # Neither request 2 (cancelled) nor request 1 (answered early) gets another answer.
        assert result(await raw.call(3, "tools/call", call("echo")))["resultType"] == "complete"
    assert backend.runs["ask_then_gate"] == 1


async def test_a_call_parked_on_a_closed_connection_completes_on_the_next() -> None:
    """2026 state is not tied to a connection: after the one a call began on closed, a
    retry on a new connection (in memory here) resumes the parked call (it became the
    server's when it answered early), so the backend runs once and nothing is asked twice."""
    backend = Watched()
    server = Server(backend)
    async with server:
        async with raw(server) as s:
            r1 = await s.request("tools/call", call("two_questions"), progress_token=False)
            r2 = await s.request(
                "tools/call",
                call("two_questions", inputResponses={"step1": ADA}, requestState=r1["requestState"]),
                progress_token=False,
            )
            assert list(r2["inputRequests"]) == ["step2"]
        async with raw(server) as s:
            done = await s.request(
                "tools/call",
                call("two_questions", inputResponses={"step2": BOB}, requestState=r2["requestState"]),
                progress_token=False,
            )
            assert done["content"][0]["text"] == "Ada Bob"
        assert not server.runtime.parked
    assert backend.runs["two_questions"] == 1


async def test_a_call_resumed_from_another_connection_outlives_the_first() -> None:
    """2026 state is not tied to a connection: a retry may come on another one (a client
    that reconnected). The call it resumes must not end with the connection it began on."""
    backend = Watched()
    server = Server(backend)
    state: list[str] = []
    asked, close_first, first_closed = anyio.Event(), anyio.Event(), anyio.Event()
    results: list[JSON] = []

    async def first_connection() -> None:
        async with raw(server) as a:
            r1 = await a.request("tools/call", call("ask_then_gate"), progress_token=False)
            state.append(r1["requestState"])
            asked.set()
            await close_first.wait()
        first_closed.set()

    with anyio.fail_after(10):
        async with server, raw(server) as b, anyio.create_task_group() as tg:
            tg.start_soon(first_connection)
            await asked.wait()

            async def retry() -> None:
                params = call("ask_then_gate", inputResponses={"user_name": ADA}, requestState=state[0])
                results.append(await b.request("tools/call", params, progress_token=False))

            tg.start_soon(retry)
            await backend.started.wait()  # resumed, running for the retry
            close_first.set()
            await first_closed.wait()
            backend.gate.set()
    assert results[0]["content"][0]["text"] == "Hello, Ada!"
    assert backend.cancels == []


async def test_a_2026_call_inside_a_batch_is_answered_in_the_batch() -> None:
    server = Server(Watched())
    async with memory_pair() as (client_side, server_side), anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_side)
        read, write = client_side
        hello = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        await write.send(Envelope(Request("initialize", hello, 1)))
        with anyio.fail_after(10):
            assert isinstance((await read.receive()).message, Response)
        await write.send(Envelope(Notification("notifications/initialized")))
        await write.send(Envelope(Batch([Request("tools/call", call("elicit"), 5), Request("ping", None, 6)])))
        with anyio.fail_after(10):
            answer = (await read.receive()).message
        assert isinstance(answer, Batch), answer
        by_id = {m.id: m for m in answer.messages if isinstance(m, Response)}
        assert sorted(by_id) == [5, 6]
        assert by_id[5].result["resultType"] == "input_required"
        tg.cancel_scope.cancel()


@pytest.mark.slow
def test_the_server_process_exits_at_end_of_input_with_a_call_parked() -> None:
    """A real process: stdin closes while a call is parked (in the first request's
    task); the server exits at once, cleanly, with nothing more on stdout."""
    env = {**os.environ, "DEMO_EOF_GRACE": "3600"}  # waiting for the call would hang the test
    proc = subprocess.Popen(
        [sys.executable, DEMO], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call("elicit")}
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        assert first["id"] == 1
        assert first["result"]["resultType"] == "input_required"
        out, err = proc.communicate(timeout=30)  # closes stdin
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()
    assert out == b""  # no late answer for request 1, nothing else


TWO_STEPS = """\
version: 1
tools:
  - name: quick
    description: answers at once
    run: {argv: [printf, quick]}
  - name: two_steps
    description: asks twice, then answers
    run:
      shell: sh
      script: |
        echo $$ >> runs.log
        a=$(mcp script elicit "First?" --field name --key first --get name) || exit 1
        b=$(mcp script elicit "Second?" --field name --key second --get name) || exit 1
        echo "$a $b"
"""


class _Lines:
    """`mcp serve` as a real process, talked to in JSON lines."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc, self.stdin, self.stdout = proc, proc.stdin, proc.stdout

    def send(self, message: JSON) -> None:
        self.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.stdin.flush()

    def call(self, rid: int, params: JSON) -> JSON:
        self.send({"id": rid, "method": "tools/call", "params": params})
        answer = json.loads(self.stdout.readline())
        assert answer["id"] == rid, answer  # nothing else came first (no late answer)
        assert "result" in answer, answer
        return dict(answer["result"])


def _runs(tmp_path: Path) -> list[int]:
    return [int(pid) for pid in (tmp_path / "runs.log").read_text().split()]


@pytest.mark.slow
def test_mcp_serve_keeps_a_script_parked_across_rounds_and_ends_it_at_end_of_input(tmp_path: Path) -> None:
    """`mcp serve tools.yaml` over stdio: a script asking twice is one run resumed twice
    (its first request's id cancelled after the early answer changes nothing); at end of
    input with a script parked, the server exits at once and leaves no process behind
    (the subreaper check in tests/conftest.py fails the test otherwise)."""
    (tmp_path / "tools.yaml").write_text(TWO_STEPS)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpcli", "serve", "tools.yaml"],
        cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        serve = _Lines(proc)
        r1 = serve.call(1, call("two_steps"))
        assert list(r1["inputRequests"]) == ["first"]
        r2 = serve.call(2, call("two_steps", inputResponses={"first": ADA}, requestState=r1["requestState"]))
        assert list(r2["inputRequests"]) == ["second"]
        done = serve.call(3, call("two_steps", inputResponses={"second": BOB}, requestState=r2["requestState"]))
        assert done["content"][0]["text"].strip() == "Ada Bob"
        assert len(_runs(tmp_path)) == 1  # resumed, not re-run
        # Again, cancelling the first request once it has its answer.
        r4 = serve.call(4, call("two_steps"))
        serve.send({"method": "notifications/cancelled", "params": {"requestId": 4}})
        assert serve.call(5, call("quick"))["content"][0]["text"] == "quick"
        r6 = serve.call(6, call("two_steps", inputResponses={"first": ADA}, requestState=r4["requestState"]))
        assert list(r6["inputRequests"]) == ["second"]
        assert len(_runs(tmp_path)) == 2  # the parked script survived the cancel
        assert not _gone(_runs(tmp_path)[-1])
        # End of input with that script parked: the process exits by itself, cleanly.
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()
    assert out == b""
    wait_until(lambda: _gone(_runs(tmp_path)[-1]), timeout=10, what="the parked script to end")


def _gone(pid: int) -> bool:
    """The process has exited (it may linger as a zombie until someone reaps it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except FileNotFoundError:
        return True


async def test_end_of_input_still_answers_a_retry_in_flight() -> None:
    """`printf ... | mcp serve` with a retry: input ends while the resumed call (in its
    first request's task) works for the retry; the retry is answered before the exit."""
    from mcpcli.transports.lines import LineSplitter

    backend = Watched()
    server = Server(backend)
    fds = _Fds()
    os.set_blocking(fds.to_client_r, False)
    lines = LineSplitter(1 << 20)
    got: list[JSON] = []

    async def read_one() -> JSON:
        while not got:
            await anyio.wait_readable(fds.to_client_r)
            got.extend(json.loads(line) for line in lines.feed(os.read(fds.to_client_r, 1 << 16)))
        return got.pop(0)

    def send(rid: int, params: JSON) -> None:
        message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
        os.write(fds.to_server_w, json.dumps(message).encode() + b"\n")

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(partial(
                    serve_stdio, server, stdin_fd=fds.to_server_r, stdout_fd=fds.to_client_w,
                    protect_stdout=False, eof_grace=5,
                ))
                send(1, call("ask_then_gate"))
                r1 = await read_one()
                assert r1["result"]["resultType"] == "input_required"
                send(2, call("ask_then_gate", inputResponses={"user_name": ADA}, requestState=r1["result"]["requestState"]))
                await backend.started.wait()
                fds.close(fds.to_server_w)  # end of input, the retry still working
                await anyio.wait_all_tasks_blocked()
                backend.gate.set()
                r2 = await read_one()
                # serve_stdio returns after the retry's answer: the task group ends.
        assert r2["id"] == 2
        assert r2["result"]["content"][0]["text"] == "Hello, Ada!"
        assert backend.cancels == []
    finally:
        fds.close_all()
