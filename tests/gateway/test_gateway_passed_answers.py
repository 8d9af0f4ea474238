"""What a call passed through (`mcpcli.gateway.passing.Passed`) makes of each kind of
upstream answer, as the usual path would: unit tests with the link, client and relay
stood in for (the answers that real upstreams rarely give: a shutdown, an unsupported
version, a task nobody asked for)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpcli.core.jsonrpc import ErrorObject, ErrorResponse, Response
from mcpcli.core.protocol import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    SHUTTING_DOWN,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcpcli.core.requests import RequestClock
from mcpcli.errors import McpCliError, ProtocolError, RequestTimeout
from mcpcli.gateway.asking import Asking, Call, DownstreamRoots
from mcpcli.gateway.passing import Passed
from mcpcli.rpc.forwarding import Deadlines
from mcpcli.server.backend import InputDeclined

pytestmark = pytest.mark.anyio

JSON = dict[str, Any]


class FakePeer:
    def __init__(self) -> None:
        self.unforwarded: list[tuple[int, str | None]] = []

    def unforward(self, request_id: int, reason: str | None) -> None:
        self.unforwarded.append((request_id, reason))


class FakeClient:
    def __init__(self, era: str) -> None:
        self.era = era
        self.peer = FakePeer()


class FakeLink:
    name = "up"

    def __init__(self) -> None:
        self.asking = Asking("up", DownstreamRoots())
        self.deadlines = Deadlines()
        self.released: list[object] = []
        self.called: list[JSON | None] = []

    @property
    def client(self) -> Any:
        return None

    @property
    def group(self) -> Any:
        return None

    def take_slot(self, lease: object) -> bool:
        return True

    def release(self, lease: object) -> None:
        self.released.append(lease)

    async def call_tool(self, name: str, arguments: JSON, ctx: Any, *, first: JSON | None = None) -> JSON:
        self.called.append(first)
        return {"content": [], "resumed": True}


class FakeRelay:
    def __init__(self) -> None:
        self.said: list[tuple[str, Any]] = []
        self.resumed: list[Any] = []

    def answer(self, result: JSON) -> None:
        self.said.append(("answer", result))

    def refuse(self, error: ErrorObject) -> None:
        self.said.append(("refuse", (error.code, error.message, error.data)))

    def fail(self, exc: Exception) -> None:
        self.said.append(("fail", exc))

    def resume(self, invoke: Any) -> bool:
        self.resumed.append(invoke)
        return True


class Ctx:
    era = "modern"
    transport = "stdio"
    client_capabilities: JSON = {}


def passed(era: str = "modern") -> tuple[Passed, FakeLink, FakeRelay]:
    link, relay = FakeLink(), FakeRelay()
    clock = RequestClock.start(0.0, 60.0, 3600.0)
    lease = object()
    call = Call(Ctx())  # type: ignore[arg-type]
    one = Passed(link, FakeClient(era), "t", {"a": 1}, call, relay, 7, clock, lease)  # type: ignore[arg-type]
    assert link.asking.calls == [call]
    return one, link, relay


def test_a_result_is_the_answer_without_its_result_type_and_the_call_is_let_go() -> None:
    one, link, relay = passed()
    one.answered(Response(7, {"content": [], "resultType": "complete"}))
    assert relay.said == [("answer", {"content": []})]
    assert link.asking.calls == [] and len(link.released) == 1


def test_an_error_is_the_same_error() -> None:
    one, _link, relay = passed()
    one.answered(ErrorResponse(7, ErrorObject(-32000, "no", {"why": 1})))
    assert relay.said == [("refuse", (-32000, "no", {"why": 1}))]


def test_a_missing_capability_is_the_runtimes_own_refusal() -> None:
    one, _link, relay = passed()
    one.answered(ErrorResponse(7, ErrorObject(MISSING_REQUIRED_CLIENT_CAPABILITY, "needs sampling",
                                              {"requiredCapabilities": {"sampling": {}}})))
    [(kind, exc)] = relay.said
    assert kind == "fail" and isinstance(exc, InputDeclined) and exc.capabilities == ["sampling"]


def test_a_server_shutting_down_or_a_broken_answer_is_a_tool_error_naming_the_upstream() -> None:
    one, _link, relay = passed()
    one.answered(ErrorResponse(7, ErrorObject(SHUTTING_DOWN, "bye", {"reason": "shutdown"})))
    two, _link, relay2 = passed()
    two.failed(ProtocolError("not JSON-RPC"))
    three, _link, relay3 = passed()
    three.failed(RequestTimeout("tools/call timed out after 1.0s"))
    for said in (relay.said, relay2.said, relay3.said):
        [(kind, result)] = said
        assert kind == "answer" and result["isError"] is True
    assert relay.said[0][1]["content"][0]["text"].startswith("upstream up failed during the call: ")
    assert relay3.said[0][1]["content"][0]["text"] == "upstream up: tools/call timed out after 1.0s"
    four, _link, relay4 = passed()
    odd = McpCliError("something else")
    four.failed(odd)
    assert relay4.said == [("fail", odd)]


async def test_an_answer_with_more_to_do_resumes_the_usual_path_from_it() -> None:
    asked = {"resultType": "input_required", "inputRequests": {}, "requestState": "s"}
    task = {"task": {"taskId": "t1", "status": "working"}}
    for era, first in (("modern", asked), ("legacy", task)):
        one, link, relay = passed(era)
        one.answered(Response(7, first))
        assert relay.said == [] and link.asking.calls == []
        [invoke] = relay.resumed
        assert await invoke(Ctx()) == {"content": [], "resumed": True}
        assert link.called == [first]


async def test_an_unsupported_version_runs_the_call_again_the_usual_way_in_2026_only() -> None:
    refused = ErrorObject(UNSUPPORTED_PROTOCOL_VERSION, "unsupported", {"supported": ["2026-07-28"]})
    one, link, relay = passed("modern")
    one.answered(ErrorResponse(7, refused))
    [invoke] = relay.resumed
    await invoke(Ctx())
    assert link.called == [None]  # from the start: the upstream refused it unrun
    two, _link, relay2 = passed("legacy")
    two.answered(ErrorResponse(7, refused))
    assert relay2.said == [("refuse", (UNSUPPORTED_PROTOCOL_VERSION, "unsupported", {"supported": ["2026-07-28"]}))]


def test_a_cancelled_call_tells_the_upstream_and_lets_go() -> None:
    one, link, relay = passed()
    one.cancel()
    assert one._client.peer.unforwarded == [(7, "cancelled by the user")]  # type: ignore[attr-defined]
    assert relay.said == [] and link.asking.calls == [] and len(link.released) == 1
    one.cancel()  # twice: nothing more
    assert len(link.released) == 1


async def test_a_call_past_its_deadline_is_a_tool_error_and_cancelled_upstream() -> None:
    one, _link, relay = passed()
    with anyio.fail_after(5):
        one.expired()
    assert one._client.peer.unforwarded == [(7, "timed out")]  # type: ignore[attr-defined]
    [(kind, result)] = relay.said
    assert kind == "answer" and result["content"][0]["text"].startswith("upstream up: tools/call timed out after ")
