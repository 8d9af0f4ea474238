"""The protocol core's flows, driven by a script instead of a server: what each asks for,
in what order, and how it reads each answer (no I/O, no event loop)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mcpcli.core.era import NoMemory, ProbeTraits
from mcpcli.core.exchange import Called, Exchange, ExitedOnProbe, PageRepeat
from mcpcli.core.flow import Answer, Flow, ListTools, Notify, Op, Send, run_sync
from mcpcli.core.protocol import (
    CLIENT_CAPABILITIES_KEY,
    LATEST_LEGACY,
    LATEST_MODERN,
    PROTOCOL_VERSION_KEY,
    TASKS_EXTENSION,
)
from mcpcli.errors import (
    ProtocolError,
    RequestTimeout,
    RPCError,
    ServerExited,
    TransportError,
    UnsupportedVersionError,
)

JSON = dict[str, Any]
Reply = JSON | Exception | Callable[[Op], Any]

DISCOVER: JSON = {"supportedVersions": [LATEST_MODERN], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "srv", "version": "1"}}
INITIALIZE: JSON = {"protocolVersion": LATEST_LEGACY, "capabilities": {"tools": {}},
                    "serverInfo": {"name": "old", "version": "2"}}


class Script:
    """Answers each operation in turn and keeps what was asked."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.ops: list[Op] = []

    def __call__(self, op: Op) -> Any:
        self.ops.append(op)
        if isinstance(op, Notify):
            return None
        assert self.replies, f"nothing scripted for {op!r}"
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply(op) if callable(reply) else reply

    @property
    def methods(self) -> list[str]:
        return [op.method if isinstance(op, (Send, Notify)) else type(op).__name__ for op in self.ops]


class Memory:
    """An `EraMemory` kept in a dict."""

    def __init__(self, legacy: JSON | None = None, discover: JSON | None = None) -> None:
        self.legacy, self.discover = legacy, discover
        self.stored: list[JSON] = []

    def remembered_legacy(self) -> JSON | None:
        return self.legacy

    def remember_legacy(self, server_info: JSON | None) -> None:
        self.legacy = None if server_info is None else {"era": "legacy",
                                                        "version": f"{server_info['name']} {server_info['version']}"}

    def cached_discover(self) -> JSON | None:
        return self.discover

    def store_discover(self, result: JSON) -> None:
        self.stored.append(result)

    def forget_discover(self) -> None:
        self.discover = None


def exchange(**kw: Any) -> Exchange:
    return Exchange(client_info={"name": "t", "version": "0"}, capabilities=lambda era: {"elicitation": {}}, **kw)


def run(flow: Flow[Any], script: Script) -> Any:
    return run_sync(flow, script)


STDIO = ProbeTraits(silence_is_legacy=True)


def test_a_modern_server_answers_the_probe() -> None:
    ex, script = exchange(), Script(DISCOVER)
    run(ex.negotiate(STDIO, NoMemory()), script)
    assert (ex.era, ex.protocol_version, ex.server_info["name"]) == ("modern", LATEST_MODERN, "srv")
    probe = script.ops[0]
    assert isinstance(probe, Send) and probe.probe and not probe.progress_token and not probe.cancel_on_timeout
    assert probe.timeout == 5.0  # stdio: the probe's own bound
    assert probe.params is not None and probe.params["_meta"][PROTOCOL_VERSION_KEY] == LATEST_MODERN


@pytest.mark.parametrize("refusal", [
    RPCError(-32601, "Method not found"),
    RequestTimeout("server/discover timed out"),
    TransportError("HTTP 405", status=405),
    ProtocolError("not JSON", request_id=1),
])
def test_a_legacy_server_gets_initialize_after_the_probe(refusal: Exception) -> None:
    ex, memory = exchange(), Memory()
    script = Script(refusal, INITIALIZE)
    run(ex.negotiate(STDIO, memory), script)
    assert script.methods == ["server/discover", "initialize", "notifications/initialized"]
    assert (ex.era, ex.protocol_version) == ("legacy", LATEST_LEGACY)
    assert memory.legacy == {"era": "legacy", "version": "old 2"}


def test_a_remembered_legacy_command_line_skips_the_probe_until_the_server_changes() -> None:
    memory = Memory(legacy={"era": "legacy", "version": "old 2"})
    script = Script(INITIALIZE)
    run(exchange().negotiate(STDIO, memory), script)
    assert script.methods == ["initialize", "notifications/initialized"]
    assert memory.legacy is not None
    upgraded = {**INITIALIZE, "serverInfo": {"name": "old", "version": "3"}}
    run(exchange().negotiate(STDIO, memory), Script(upgraded))
    assert memory.legacy is None  # probed again next time


def test_a_remembered_legacy_server_now_modern_is_probed() -> None:
    memory = Memory(legacy={"era": "legacy", "version": "old 2"})
    ex, script = exchange(), Script(RPCError(-32600, "no"), DISCOVER)
    run(ex.negotiate(STDIO, memory), script)
    assert script.methods == ["initialize", "server/discover"]
    assert ex.era == "modern" and memory.legacy is None


def test_a_probe_refused_for_its_version_is_asked_again_with_one_offered() -> None:
    refused = UnsupportedVersionError(-32022, "unsupported", {"supported": ["2027-01-01", LATEST_MODERN]})
    ex, script = exchange(), Script(refused, DISCOVER)
    run(ex.negotiate(STDIO, NoMemory()), script)
    assert ex.era == "modern"
    assert [op.params["_meta"][PROTOCOL_VERSION_KEY] for op in script.ops if isinstance(op, Send)] == [
        LATEST_MODERN, LATEST_MODERN]


def test_a_server_ending_on_the_probe_is_for_the_driver_to_start_again() -> None:
    ex = exchange()
    with pytest.raises(ExitedOnProbe):
        run(ex.negotiate(STDIO, NoMemory()), Script(ServerExited("server exited with code 1")))
    memory = Memory()
    script = Script(INITIALIZE)
    ex._memory = memory
    run(ex.initialize_after_probe(), script)
    assert script.methods == ["initialize", "notifications/initialized"] and memory.legacy is not None


def test_a_cached_discover_is_used_and_a_stale_one_found_out() -> None:
    memory = Memory(discover={**DISCOVER, "ttlMs": 60000})
    ex = exchange()
    run(ex.negotiate(ProbeTraits(), memory), Script())
    assert ex.era == "modern" and ex.era_from_cache
    # The first request says the server is legacy now: probe, initialize, send again.
    script = Script(RPCError(-32601, "Method not found"), TransportError("HTTP 404", status=404), INITIALIZE,
                    {"tools": []})
    assert run(ex.request("tools/list"), script) == {"tools": []}
    assert script.methods == ["tools/list", "server/discover", "initialize", "notifications/initialized",
                              "tools/list"]
    assert ex.era == "legacy" and not ex.era_from_cache and memory.discover is None


def test_only_a_public_discover_with_a_ttl_is_stored() -> None:
    for result, stored in ((DISCOVER, 0), ({**DISCOVER, "ttlMs": 5}, 1), ({**DISCOVER, "ttlMs": 5,
                                                                             "cacheScope": "private"}, 0)):
        memory = Memory()
        run(exchange().negotiate(ProbeTraits(), memory), Script(result))
        assert len(memory.stored) == stored


def test_legacy_only_and_forced_versions_skip_the_probe() -> None:
    script = Script(INITIALIZE)
    run(exchange().negotiate(ProbeTraits(legacy_only=True), NoMemory()), script)
    assert script.methods[0] == "initialize"
    script = Script(DISCOVER)
    ex = exchange(protocol=LATEST_MODERN)
    run(ex.negotiate(STDIO, NoMemory()), script)
    op = script.ops[0]
    assert isinstance(op, Send) and not op.probe and op.timeout is True
    with pytest.raises(ProtocolError, match="unknown protocol version"):
        run(exchange(protocol="1999-01-01").negotiate(STDIO, NoMemory()), Script())


def _modern() -> Exchange:
    ex = exchange()
    run(ex.negotiate(STDIO, NoMemory()), Script(DISCOVER))
    return ex


def test_a_modern_request_carries_its_meta_and_answers_input_rounds() -> None:
    ex = _modern()
    asked = {"inputRequests": {"k": {"method": "elicitation/create", "params": {"message": "?"}}},
             "resultType": "input_required", "requestState": "s1"}
    script = Script(asked, {"k": {"action": "accept"}}, {"content": []})
    assert run(ex.request("tools/call", {"name": "t"}), script) == {"content": []}
    first, answer, retry = script.ops
    assert isinstance(answer, Answer) and answer.requests == (("k", "elicitation/create", {"message": "?"}),)
    assert isinstance(retry, Send) and retry.params is not None
    assert retry.params["inputResponses"] == {"k": {"action": "accept"}} and retry.params["requestState"] == "s1"
    # tools/call declares the tasks extension; tools/list does not.
    assert isinstance(first, Send) and first.params is not None
    assert TASKS_EXTENSION in first.params["_meta"][CLIENT_CAPABILITIES_KEY].get("extensions", {})


def test_a_server_that_keeps_asking_is_stopped() -> None:
    ex = _modern()
    asked = {"inputRequests": {"k": {"method": "ping", "params": {}}}, "resultType": "input_required"}
    replies: list[Reply] = []
    for _ in range(20):
        replies += [asked, {"k": {}}]
    with pytest.raises(ProtocolError, match="kept asking"):
        run(ex.request("tools/call", {"name": "t"}), Script(*replies))


def test_pages_are_followed_and_a_repeated_cursor_stops_or_raises() -> None:
    ex = _modern()
    pages = Script({"tools": [{"name": "a"}], "nextCursor": "1"}, {"tools": [{"name": "b"}], "nextCursor": "2"},
                   {"tools": [{"name": "c"}]})
    assert [t["name"] for t in run(ex.pages("tools/list", "tools"), pages)["tools"]] == ["a", "b", "c"]
    looping = [{"tools": [], "nextCursor": "x"}] * 3
    assert run(ex.pages("tools/list", "tools"), Script(*looping))["tools"] == []
    with pytest.raises(PageRepeat):
        run(ex.pages("tools/list", "tools", on_repeat="raise"), Script(*looping))


def test_a_legacy_tool_that_requires_a_task_asks_for_one() -> None:
    ex = exchange()
    caps = {"tasks": {"requests": {"tools": {"call": {}}}}, "tools": {}}
    run(ex.negotiate(STDIO, NoMemory()), Script(RPCError(-32601, "no"), {**INITIALIZE, "capabilities": caps}))

    def listing(op: Op) -> JSON:
        ex.set_tools({"tools": [{"name": "slow", "execution": {"taskSupport": "required"}}]})
        return {}

    created = {"task": {"taskId": "t1", "status": "working"}}
    script = Script(listing, created)
    called: Called = run(ex.call_tool("slow", {}), script)
    assert isinstance(script.ops[0], ListTools)
    sent = script.ops[1]
    assert isinstance(sent, Send) and sent.params is not None and "task" in sent.params
    assert called.task is not None and called.task.task_id == "t1"
    assert called.progress_token is not None and sent.params["_meta"]["progressToken"] == called.progress_token


def test_a_header_mismatch_lists_again_and_retries_once() -> None:
    ex = _modern()
    ex.set_tools({"tools": [{"name": "t"}]})
    script = Script(RPCError(-32020, "header mismatch"), {}, {"content": []})
    called = run(ex.call_tool("t", {}, mirrors_headers=True), script)
    assert script.methods == ["tools/call", "ListTools", "tools/call"] and called.result == {"content": []}
    with pytest.raises(RPCError):
        run(ex.call_tool("t", {}), Script(RPCError(-32020, "header mismatch")))  # no mirroring: no retry


def test_ping_is_ping_in_legacy_and_discover_in_modern() -> None:
    assert run(_modern().ping(), Script(DISCOVER)) == "server/discover"
    ex = exchange()
    run(ex.negotiate(ProbeTraits(legacy_only=True), NoMemory()), Script(INITIALIZE))
    assert run(ex.ping(), Script({})) == "ping"


def test_a_relay_sends_a_plain_calls_first_round_itself_and_the_flow_goes_on_from_its_answer() -> None:
    ex = _modern()
    sent = ex.plain_call("t", {"x": 1})
    assert sent is not None
    # What the flow itself would have sent first: the same params, the same _meta.
    script = Script({"content": []})
    run(ex.call_tool("t", {"x": 1}), script)
    [own] = script.ops
    assert isinstance(own, Send) and own.params == sent
    # Given the answer to that round (an input round), the flow answers it and retries.
    asked = {"inputRequests": {"k": {"method": "elicitation/create", "params": {"message": "?"}}},
             "resultType": "input_required", "requestState": "s1"}
    script = Script({"k": {"action": "accept"}}, {"content": [{"type": "text", "text": "done"}]})
    called: Called = run(ex.call_tool("t", {"x": 1}, first=asked), script)
    answer, retry = script.ops
    assert isinstance(answer, Answer)
    assert isinstance(retry, Send) and retry.params is not None and retry.params["requestState"] == "s1"
    assert called.result == {"content": [{"type": "text", "text": "done"}]}


def test_a_plain_call_is_none_where_the_flow_does_more_than_send_it() -> None:
    modern = _modern()
    assert modern.plain_call("t", {}, mirrors_headers=True) is None  # the tool is listed first
    legacy = exchange()
    caps = {"tasks": {"requests": {"tools": {"call": {}}}}, "tools": {}}
    run(legacy.negotiate(STDIO, NoMemory()), Script(RPCError(-32601, "no"), {**INITIALIZE, "capabilities": caps}))
    assert legacy.plain_call("t", {}) is None  # a task server: the tool is not known yet
    legacy.set_tools({"tools": [{"name": "t"}, {"name": "slow", "execution": {"taskSupport": "required"}}]})
    assert legacy.plain_call("t", {}) == {"name": "t", "arguments": {}}
    assert legacy.plain_call("slow", {}) is None  # asked for as a task
    answered: Called = run(legacy.call_tool("t", {}, first={"content": []}), Script())
    assert answered.result == {"content": []}
    cached = exchange()
    run(cached.negotiate(STDIO, Memory(discover=DISCOVER)), Script())
    assert cached.era_from_cache and cached.plain_call("t", {}) is None  # an era still to confirm
