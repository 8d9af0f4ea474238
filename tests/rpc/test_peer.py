"""The JSON-RPC engine over an in-memory pair: correlation, timeouts, cancellation."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest

from mcpcli.core.jsonrpc import Notification, Request
from mcpcli.errors import ConnectionClosed, RequestTimeout, RPCError
from mcpcli.rpc.peer import Peer, RequestContext
from mcpcli.transports import Envelope
from mcpcli.transports.memory import memory_pair

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import ExceptionGroup

pytestmark = pytest.mark.anyio


async def test_concurrent_requests_resolve_out_of_order_to_their_callers() -> None:
    """Request n is answered only once the caller of n + 1 has its answer: the answers
    arrive in reverse order, and each still reaches its own caller."""
    resolved = [anyio.Event() for _ in range(51)]
    resolved[50].set()
    order: list[int] = []

    async def handler(req: Request, ctx: RequestContext) -> dict[str, Any]:
        n = req.params["n"]  # type: ignore[index]
        await resolved[n + 1].wait()
        return {"n": n}

    results: dict[int, Any] = {}
    with anyio.fail_after(5):
        async with memory_pair() as (a, b), Peer(a) as client, Peer(b, on_request=handler):
            async def one(n: int) -> None:
                results[n] = await client.request("work", {"n": n}, progress_token=False)
                order.append(n)
                resolved[n].set()

            async with anyio.create_task_group() as tg:
                for n in range(50):
                    tg.start_soon(one, n)
    assert results == {n: {"n": n} for n in range(50)}
    assert order == list(range(49, -1, -1))


async def test_error_responses_raise_typed_errors() -> None:
    async def handler(req: Request, ctx: RequestContext) -> dict[str, Any]:
        raise RPCError(-32602, "bad", {"field": "x"})

    with anyio.fail_after(5):
        async with memory_pair() as (a, b), Peer(a) as client, Peer(b, on_request=handler):
            with pytest.raises(RPCError) as info:
                await client.request("x")
    assert (info.value.code, info.value.rpc_message, info.value.data) == (-32602, "bad", {"field": "x"})


async def test_unknown_methods_get_method_not_found() -> None:
    with anyio.fail_after(5):
        async with memory_pair() as (a, b), Peer(a) as client, Peer(b):
            with pytest.raises(RPCError) as info:
                await client.request("nope")
    assert info.value.code == -32601


async def test_timeout_sends_cancellation_and_the_handler_is_cancelled() -> None:
    cancelled = anyio.Event()

    async def handler(req: Request, ctx: RequestContext) -> dict[str, Any]:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return {}

    with anyio.fail_after(5):
        async with memory_pair() as (a, b), Peer(a) as client, Peer(b, on_request=handler):
            with pytest.raises(RequestTimeout, match="slow timed out"):
                await client.request("slow", timeout=0.05)
            await cancelled.wait()


@pytest.mark.slow
async def test_progress_restarts_the_timeout_but_not_past_the_hard_limit() -> None:
    """Three steps of 0.4 s outlast a 1 s timeout only because each progress restarts it;
    steady progress still ends at the hard limit. Each gap leaves most of the timeout as
    slack, so a busy machine does not make either fire early."""
    seen: list[float] = []

    async def handler(req: Request, ctx: RequestContext) -> dict[str, Any]:
        for i in range(1, 4):
            await anyio.sleep(0.4)
            await ctx.progress(i, 3)
        return {"done": True}

    async def forever(req: Request, ctx: RequestContext) -> dict[str, Any]:
        i = 0
        while True:
            i += 1
            await anyio.sleep(0.05)
            await ctx.progress(i)

    with anyio.fail_after(30):
        async with memory_pair() as (a, b), Peer(a) as client, Peer(b, on_request=handler):
            result = await client.request(
                "work", timeout=1.0, on_progress=lambda p: seen.append(p["progress"])
            )
        assert result == {"done": True} and seen == [1, 2, 3]
        async with memory_pair() as (a, b), Peer(a) as client, Peer(b, on_request=forever):
            started = anyio.current_time()
            with pytest.raises(RequestTimeout):
                await client.request("work", timeout=1.0, max_timeout=1.5)
            assert anyio.current_time() - started >= 1.5  # the hard limit, not a missed progress


async def test_closed_connection_fails_pending_requests() -> None:
    running = anyio.Event()

    async def handler(req: Request, ctx: RequestContext) -> dict[str, Any]:
        running.set()
        await anyio.sleep_forever()
        return {}

    with anyio.fail_after(5):
        async with memory_pair() as (a, b), Peer(a) as client:
            async with Peer(b, on_request=handler) as server:
                async def close_soon() -> None:
                    await running.wait()  # the request is out and pending
                    await b[1].aclose()
                    await b[0].aclose()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(close_soon)
                    with pytest.raises(ConnectionClosed):
                        await client.request("hang", timeout=None)
                del server


async def test_notifications_and_stray_responses_are_handled_without_crashing() -> None:
    got: list[str] = []
    noted = anyio.Event()

    async def on_note(note: Notification, env: Envelope) -> None:
        got.append(note.method)
        noted.set()

    with anyio.fail_after(5):
        async with memory_pair() as (a, b), Peer(a, on_notification=on_note) as client:
            from mcpcli.core.jsonrpc import Response

            await b[1].send(Envelope(Response(999, {})))  # nobody asked
            await b[1].send(Envelope(Notification("notifications/message", {"level": "info"})))
            with anyio.fail_after(1):
                await noted.wait()
            assert got == ["notifications/message"]
            assert client.closed is None


async def test_a_broken_answer_naming_a_pending_request_fails_it_at_once() -> None:
    """A transport's ProtocolError with the request's id ends that request (no timeout);
    one naming nobody (or no id) is only reported."""
    from mcpcli.errors import ProtocolError

    reported: list[Exception] = []
    with anyio.fail_after(5):
        async with memory_pair() as (a, b), Peer(a, on_error=reported.append) as client:
            async def break_it() -> None:
                await b[1].send(ProtocolError("garbage", request_id=999))  # type: ignore[arg-type]
                await b[1].send(ProtocolError("garbage"))  # type: ignore[arg-type]
                await b[1].send(ProtocolError("broken answer", request_id=1))  # type: ignore[arg-type]

            async with anyio.create_task_group() as tg:
                tg.start_soon(break_it)
                with pytest.raises(ProtocolError, match="broken answer"):
                    await client.request("work", timeout=None, progress_token=False)
            assert [str(e) for e in reported] == ["garbage", "garbage"]
            assert client.closed is None


async def test_a_transport_failure_fails_its_request_with_the_typed_error() -> None:
    """`RequestFailed` (an HTTP error status) ends that request with the transport's own
    error, exit code included, not a JSON-RPC error; one naming nobody is dropped."""
    from mcpcli.core.jsonrpc import Batch, Message
    from mcpcli.errors import AuthError, ExitCode, TransportError
    from mcpcli.transports import RequestFailed

    failures = {"one": TransportError("HTTP 502", status=502), "two": AuthError("HTTP 401")}
    reported: list[Exception] = []
    traced: list[str] = []
    with anyio.fail_after(5):
        async with memory_pair() as (a, b):
            def trace(direction: str, message: Message | Batch) -> None:
                # The transport fails each request as it goes out (the session knows it by then).
                traced.append(direction)
                if isinstance(message, Request):
                    failed = RequestFailed(message.id, failures[message.method])
                    b[1].send_nowait(failed)  # type: ignore[arg-type]

            await b[1].send(RequestFailed(999, TransportError("nobody's")))  # type: ignore[arg-type]
            async with Peer(a, on_error=reported.append, trace=trace) as client:
                with pytest.raises(TransportError) as transport:
                    await client.request("one", timeout=None, progress_token=False)
                with pytest.raises(AuthError) as auth:
                    await client.request("two", timeout=None, progress_token=False)
                assert client.closed is None
    assert (transport.value.exit_code, transport.value.status) == (ExitCode.TRANSPORT, 502)
    assert auth.value.exit_code == ExitCode.AUTH
    assert reported == []
    # Nothing arrived on the wire: the trace shows only what was sent.
    assert traced == ["send", "send"]


async def test_a_failing_handler_is_reported_in_one_line_and_the_peer_gets_internal_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No traceback through logging's last-resort handler: one line via on_error."""
    async def handler(req: Request, ctx: RequestContext) -> dict[str, Any]:
        raise ExceptionGroup("tg", [BrokenPipeError("gone")])

    reported: list[Exception] = []
    with anyio.fail_after(5):
        async with memory_pair() as (a, b), Peer(a) as client, \
                Peer(b, on_request=handler, on_error=reported.append):
            with pytest.raises(RPCError) as info:
                await client.request("sample")
    assert (info.value.code, info.value.rpc_message) == (-32603, "Internal error")
    assert [str(e) for e in reported] == ["internal error while answering sample: BrokenPipeError: gone"]
    assert "Traceback" not in capsys.readouterr().err


async def test_an_unexpected_exception_is_logged_as_one_safe_line(caplog: pytest.LogCaptureFixture) -> None:
    """The operator's terminal gets the message on one line, control sequences shown
    as escapes (not acted on), cut to a bound."""
    import logging

    from mcpcli.rpc.peer import log_unexpected

    logger = logging.getLogger("mcpcli.test.session")
    message = "\x1b]0;owned\x07 bad\nvalue " + "x" * 400
    with caplog.at_level(logging.ERROR, logger=logger.name):
        log_unexpected(logger, "failed while answering tools/call", ValueError(message))
    [record] = caplog.records
    line = record.getMessage()
    assert line.startswith("failed while answering tools/call: ValueError: \\x1b]0;owned\\x07 bad value xxx")
    assert "\x1b" not in line and "\x07" not in line and "\n" not in line
    assert line.endswith("...") and len(line) < 400
    assert record.exc_info is None


# -- on_slow: a request unanswered for a while -------------------------------------------------


async def test_a_request_unanswered_for_slow_after_is_reported_and_ended_once_answered() -> None:
    reported: list[tuple[str, float]] = []
    ended: list[str] = []
    slow = anyio.Event()
    answer = anyio.Event()

    def on_slow(method: str, waited: float) -> Any:
        reported.append((method, waited))
        slow.set()
        return lambda: ended.append(method)

    async def handler(req: Request, ctx: RequestContext) -> dict[str, Any]:
        await answer.wait()
        return {"ok": True}

    with anyio.fail_after(5):
        async with memory_pair() as (a, b), Peer(a, on_slow=on_slow, slow_after=0.01) as client, \
                Peer(b, on_request=handler):
            async with anyio.create_task_group() as tg:
                async def ask() -> None:
                    assert await client.request("tools/call", timeout=5, progress_token=False) == {"ok": True}

                tg.start_soon(ask)
                await slow.wait()
                assert ended == []  # still waiting: the line stays
                answer.set()
    assert [m for m, _ in reported] == ["tools/call"] and reported[0][1] >= 0.01
    assert ended == ["tools/call"]


async def test_a_request_without_a_time_bound_is_never_slow() -> None:
    """A stream (subscriptions/listen) or a wait on a task (tasks/result) is long by design."""
    reported: list[str] = []
    received = anyio.Event()
    answer = anyio.Event()

    async def handler(req: Request, ctx: RequestContext) -> dict[str, Any]:
        received.set()
        await answer.wait()
        return {}

    with anyio.fail_after(5):
        async with memory_pair() as (a, b), Peer(
            a, on_slow=lambda m, w: reported.append(m) or (lambda: None), slow_after=0
        ) as client, Peer(b, on_request=handler):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: client.request("subscriptions/listen", timeout=None, max_timeout=None,
                                                     progress_token=False))
                await received.wait()
                for _ in range(20):
                    await anyio.sleep(0)
                answer.set()
    assert reported == []


async def test_time_a_person_spends_signing_in_is_not_the_servers_silence() -> None:
    from mcpcli.rpc.peer import user_interaction

    reported: list[str] = []
    received = anyio.Event()
    answer = anyio.Event()

    async def handler(req: Request, ctx: RequestContext) -> dict[str, Any]:
        received.set()
        await answer.wait()
        return {}

    with anyio.fail_after(5):
        async with memory_pair() as (a, b), Peer(
            a, on_slow=lambda m, w: reported.append(m) or (lambda: None), slow_after=0
        ) as client, Peer(b, on_request=handler):
            async with anyio.create_task_group() as tg:
                with user_interaction():
                    tg.start_soon(lambda: client.request("initialize", timeout=5, progress_token=False))
                    await received.wait()
                    for _ in range(20):
                        await anyio.sleep(0)
                    assert reported == []
                answer.set()
