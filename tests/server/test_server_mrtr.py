"""2026-07-28 multi-round-trip requests at the wire: requestState, parking, re-runs."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from server_backends import DemoBackend
from server_support import modern_meta, raw

from mcpcli.errors import RPCError
from mcpcli.server import Server

pytestmark = pytest.mark.anyio

CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}
ADA = {"action": "accept", "content": {"name": "Ada"}}


def call(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "arguments": {}, "_meta": modern_meta(CAPS), **extra}


async def test_round_trip_with_signed_state(backend: DemoBackend, server: Server) -> None:
    async with raw(server) as s:
        first = await s.request("tools/call", call("elicit"), progress_token=False)
        assert first["resultType"] == "input_required"
        assert list(first["inputRequests"]) == ["user_name"]
        assert first["inputRequests"]["user_name"]["method"] == "elicitation/create"
        assert "ttlMs" not in first  # interim results are not cacheable
        state = first["requestState"]
        done = await s.request(
            "tools/call",
            call("elicit", inputResponses={"user_name": ADA, "extra": {"x": 1}}, requestState=state),
            progress_token=False,
        )
        assert done["resultType"] == "complete"
        assert done["content"][0]["text"] == "Hello, Ada!"
    assert backend.runs["elicit"] == 1  # the parked call was resumed, not re-run


async def test_tampered_expired_or_misplaced_state_is_rejected(server: Server) -> None:
    async with raw(server) as s:
        first = await s.request("tools/call", call("elicit"), progress_token=False)
        state = first["requestState"]
        # A changed tag: its first character (the last may differ only in bits base64 ignores).
        body, _, tag = state.rpartition(".")
        changed = f"{body}.{'B' if tag[0] == 'A' else 'A'}{tag[1:]}"
        for bad in (state + "-TAMPERED", changed, "x.y", 5, ""):
            with pytest.raises(RPCError) as info:
                await s.request(
                    "tools/call",
                    call("elicit", inputResponses={"user_name": ADA}, requestState=bad),
                    progress_token=False,
                )
            assert info.value.code == -32602
        # The state is bound to the request: another tool (or other arguments) cannot use it.
        with pytest.raises(RPCError) as info:
            await s.request(
                "tools/call", call("twice", inputResponses={"user_name": ADA}, requestState=state),
                progress_token=False,
            )
        assert info.value.code == -32602
    expiring = Server(DemoBackend(), input_ttl=-1)
    async with raw(expiring) as s:
        first = await s.request("tools/call", call("elicit"), progress_token=False)
        with pytest.raises(RPCError) as info:
            await s.request(
                "tools/call",
                call("elicit", inputResponses={"user_name": ADA}, requestState=first["requestState"]),
                progress_token=False,
            )
        assert "expired" in info.value.rpc_message


async def test_missing_or_wrong_keys_are_asked_again(server: Server) -> None:
    async with raw(server) as s:
        again = await s.request(
            "tools/call", call("elicit", inputResponses={"wrong_key": ADA}), progress_token=False
        )
        assert again["resultType"] == "input_required"
        assert list(again["inputRequests"]) == ["user_name"]
        # An answer of the wrong shape counts as missing.
        again = await s.request(
            "tools/call",
            call("elicit", inputResponses={"user_name": {"nonsense": True}}, requestState=again["requestState"]),
            progress_token=False,
        )
        assert again["resultType"] == "input_required"
        # Only the missing keys are asked for.
        partial = await s.request(
            "tools/call", call("twice", inputResponses={"a": ADA}), progress_token=False
        )
        assert list(partial["inputRequests"]) == ["b"]


async def test_malformed_input_responses_are_protocol_errors(server: Server) -> None:
    async with raw(server) as s:
        for bad in (None, [], "x", {"user_name": 12345}):
            with pytest.raises(RPCError) as info:
                await s.request("tools/call", call("elicit", inputResponses=bad), progress_token=False)
            assert info.value.code == -32602


async def test_answers_without_state_complete_statelessly(backend: DemoBackend, server: Server) -> None:
    async with raw(server) as s:
        done = await s.request(
            "tools/call", call("elicit", inputResponses={"user_name": ADA}), progress_token=False
        )
        assert done["content"][0]["text"] == "Hello, Ada!"


async def test_a_lost_continuation_is_rerun_with_the_accumulated_answers() -> None:
    secret = b"k" * 32
    first_backend, second_backend = DemoBackend(), DemoBackend()
    first, second = Server(first_backend, secret=secret), Server(second_backend, secret=secret)
    async with raw(first) as s:
        r1 = await s.request("tools/call", call("two_questions"), progress_token=False)
        assert list(r1["inputRequests"]) == ["step1"]
        r2 = await s.request(
            "tools/call",
            call("two_questions", inputResponses={"step1": ADA}, requestState=r1["requestState"]),
            progress_token=False,
        )
        assert list(r2["inputRequests"]) == ["step2"]
        assert r2["requestState"] != r1["requestState"]
    # Another process with the same key (or this one after the continuation expired)
    # re-runs the call from the start; step1's answer travels inside the state.
    async with raw(second) as s:
        bob = {"action": "accept", "content": {"name": "Bob"}}
        done = await s.request(
            "tools/call",
            call("two_questions", inputResponses={"step2": bob}, requestState=r2["requestState"]),
            progress_token=False,
        )
        assert done["content"][0]["text"] == "Ada Bob"
    assert first_backend.runs["two_questions"] == 1
    assert second_backend.runs["two_questions"] == 1


async def test_parked_calls_are_bounded_and_expire() -> None:
    backend = DemoBackend()
    server = Server(backend, max_parked=2)
    async with raw(server) as s:
        states = []
        for _ in range(3):
            r = await s.request("tools/call", call("elicit"), progress_token=False)
            states.append(r["requestState"])
        assert len(server.runtime.parked) == 2
        # The evicted (oldest) one is re-run from the start, the others resume.
        for state in states:
            done = await s.request(
                "tools/call",
                call("elicit", inputResponses={"user_name": ADA}, requestState=state),
                progress_token=False,
            )
            assert done["content"][0]["text"] == "Hello, Ada!"
        assert backend.runs["elicit"] == 4
        assert not server.runtime.parked
    short = Server(DemoBackend(), input_ttl=0.3)  # parked still when looked at, on a busy machine too
    async with raw(short) as s:
        await s.request("tools/call", call("elicit"), progress_token=False)
        assert len(short.runtime.parked) == 1
        with anyio.fail_after(5):
            while short.runtime.parked:  # the continuation's deadline cancels the parked call
                await anyio.sleep(0.01)


async def test_input_required_only_on_mrtr_methods(server: Server) -> None:
    async with raw(server) as s:
        for method in ("tools/list", "prompts/list", "resources/list"):
            result = await s.request(method, {"_meta": modern_meta(CAPS)}, progress_token=False)
            assert result["resultType"] == "complete"
        prompt = await s.request(
            "prompts/get", {"name": "ask_context", "_meta": modern_meta(CAPS)}, progress_token=False
        )
        assert prompt["resultType"] == "input_required"
        read = await s.request(
            "resources/read", {"uri": "mem://secret", "_meta": modern_meta(CAPS)}, progress_token=False
        )
        assert read["resultType"] == "input_required"


async def test_only_declared_capabilities_are_asked(server: Server) -> None:
    async with raw(server) as s:
        with pytest.raises(RPCError) as info:
            await s.request(
                "tools/call", {"name": "elicit", "_meta": modern_meta({"sampling": {}})}, progress_token=False
            )
        assert info.value.code == -32021
        assert info.value.data == {"requiredCapabilities": {"elicitation": {}}}
        # URL-mode elicitation needs the url mode declared; `{}` is form only.
        prompt = await s.request(
            "prompts/get", {"name": "ask_context", "_meta": modern_meta({})}, progress_token=False
        )
        assert prompt["messages"] == []  # the backend caught InputDeclined


async def test_cancelling_a_resumed_call_cancels_the_backend(backend: DemoBackend, server: Server) -> None:
    async with raw(server) as s:
        r1 = await s.request("tools/call", call("elicit"), progress_token=False)
        assert len(server.runtime.parked) == 1
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: s.request("tools/call", call("slow"), progress_token=False))
            with anyio.fail_after(5):
                await backend.started.wait()
            tg.cancel_scope.cancel()
        with anyio.fail_after(5):
            await backend.cancelled.wait()
        done = await s.request(
            "tools/call",
            call("elicit", inputResponses={"user_name": ADA}, requestState=r1["requestState"]),
            progress_token=False,
        )
        assert done["content"][0]["text"] == "Hello, Ada!"
