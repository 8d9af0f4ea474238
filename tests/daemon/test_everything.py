"""The daemon against real server-everything (stdio and Streamable HTTP), driven through the
control protocol as a command would."""

from __future__ import annotations

import base64
import gzip
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from helpers import Peers, fake_server, wait_until

from .conftest import (
    DaemonProcess,
    alive,
    open_request,
    start_daemon,
    stop_daemon,
    text_of,
)

pytestmark = pytest.mark.peer

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


DOC = "demo://resource/static/document/features.md"


@pytest.fixture
def ev(daemon: DaemonProcess, peers: Peers) -> dict[str, Any]:
    """The session `ev` on server-everything over stdio; its INFO."""
    answer = daemon.control("open", **open_request("ev", peers.everything_stdio()))
    assert answer["ok"], answer
    info: dict[str, Any] = answer["session"]
    return info


def test_open_answers_once_the_server_is_ready_and_list_shows_it(daemon: DaemonProcess, ev: dict[str, Any]) -> None:
    assert ev["state"] == "ready"
    assert (ev["era"], ev["protocolVersion"]) == ("legacy", "2025-11-25")
    assert ev["server"]["name"] == "mcp-servers/everything"
    assert alive(ev["pid"])
    listed = daemon.control("list")
    assert listed["ok"] and [s["name"] for s in listed["sessions"]] == ["ev"]
    assert listed["sessions"][0]["pid"] == ev["pid"]


def test_a_resource_made_by_one_command_is_read_by_the_next(daemon: DaemonProcess, ev: dict[str, Any]) -> None:
    # The first example: with one-shot commands the server that made it is gone.
    first = daemon.attach("ev")
    assert first.answer is not None and first.answer["ok"]
    handshake = first.call("initialize", INIT)
    assert handshake["serverInfo"]["name"] == "mcp-servers/everything"
    first.send({"method": "notifications/initialized"})
    made = first.call("tools/call", {"name": "gzip-file-as-resource", "arguments": {
        "name": "hello.gz", "data": "data:text/plain;base64," + base64.b64encode(b"hello").decode(),
    }})
    link = next(b for b in made["content"] if b["type"] == "resource_link")
    first.close()

    second = daemon.attach("ev")
    second.call("initialize", INIT)
    read = second.call("resources/read", {"uri": link["uri"]})
    second.close()
    assert gzip.decompress(base64.b64decode(read["contents"][0]["blob"])) == b"hello"
    session = daemon.control("list")["sessions"][0]
    assert session["pid"] == ev["pid"]  # one server all along
    assert session["calls"] == 2  # the handshakes were answered by the daemon


def test_a_modern_probe_on_a_legacy_session_falls_back_like_a_legacy_server(
    daemon: DaemonProcess, ev: dict[str, Any]
) -> None:
    command = daemon.attach("ev")
    response, _ = command.until_response(command.request("server/discover", {}))
    command.close()
    assert response["error"]["code"] == -32601


def test_two_commands_get_only_their_own_responses_and_progress(daemon: DaemonProcess, ev: dict[str, Any]) -> None:
    # Both commands use request id 1 and progress token 1: the daemon keeps them apart.
    a, b = daemon.attach("ev"), daemon.attach("ev")
    for command, steps in ((a, 3), (b, 4)):
        command.send({"id": 1, "method": "tools/call", "params": {
            "name": "trigger-long-running-operation",
            "arguments": {"duration": 0.4, "steps": steps},
            "_meta": {"progressToken": 1},
        }})
    for command, steps in ((a, 3), (b, 4)):
        response, before = command.until_response(1)
        assert f"Steps: {steps}." in text_of(response["result"])
        progress = [m["params"] for m in before if m.get("method") == "notifications/progress"]
        assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == [
            (1, i, steps) for i in range(1, steps + 1)
        ]
        # Nothing of the other command's; the server's late tools/list_changed (it adds
        # tools once initialized) goes to whichever command alone had a request in flight.
        assert {m.get("method") for m in before} <= {
            "notifications/progress", "notifications/tools/list_changed"}, before
        command.close()


def test_a_server_request_goes_to_the_command_whose_call_caused_it(daemon: DaemonProcess, ev: dict[str, Any]) -> None:
    command = daemon.attach("ev")
    call = command.request("tools/call", {"name": "trigger-elicitation-request", "arguments": {}})
    asked = command.read()
    while "id" not in asked:  # notifications may come first (the tools list changing)
        asked = command.read()
    assert asked["method"] == "elicitation/create"
    assert asked["params"]["message"].startswith("Please provide")
    command.send({"id": asked["id"], "result": {"action": "cancel"}})
    response, _ = command.until_response(call)
    command.close()
    assert "cancelled" in text_of(response["result"])


def test_a_server_request_is_declined_when_two_commands_could_have_caused_it(
    daemon: DaemonProcess, ev: dict[str, Any]
) -> None:
    busy, asking = daemon.attach("ev"), daemon.attach("ev")
    busy.send({"id": 1, "method": "tools/call", "params": {
        "name": "trigger-long-running-operation", "arguments": {"duration": 5, "steps": 1}}})
    wait_until(lambda: daemon.control("list")["sessions"][0]["idle_seconds"] == 0.0, what="a call in flight")
    response, before = asking.until_response(
        asking.request("tools/call", {"name": "trigger-elicitation-request", "arguments": {}}))
    assert before == []  # never asked: it could have been the other command's
    assert "declined" in text_of(response["result"])
    busy.send({"method": "notifications/cancelled", "params": {"requestId": 1}})
    busy.close()
    asking.close()


def test_the_call_op_parses_and_validates_as_the_one_shot_command_does(
    daemon: DaemonProcess, ev: dict[str, Any]
) -> None:
    def call(tool: str, *args: str, **fields: Any) -> dict[str, Any]:
        return daemon.control("call", name="ev", tool=tool, args=list(args),
                              **{"json": None, "timeout": None, "validate": True, **fields})

    ok = call("get-sum", "a=1", "b=2")
    assert ok["ok"] and text_of(ok["result"]) == "The sum of 1 and 2 is 3."
    merged = call("get-sum", "b=5", json='{"a": 4}')
    assert text_of(merged["result"]) == "The sum of 4 and 5 is 9."
    bad = call("get-sum", "a=x", "b=2")
    assert bad["error"]["kind"] == "usage" and bad["error"]["exit"] == 2
    assert "'x' is not a valid number" in bad["error"]["message"]
    missing = call("get-sum", "a=1")
    assert missing["error"]["exit"] == 2 and "'b'" in missing["error"]["message"]
    unknown = call("no-such-tool")
    assert unknown["error"]["exit"] == 2 and "unknown tool 'no-such-tool'" in unknown["error"]["message"]
    nowhere = daemon.control("call", name="nope", tool="echo", args=[])
    assert nowhere["error"]["exit"] == 4 and nowhere["error"]["hint"] == "mcp session open nope"
    assert daemon.control("list")["sessions"][0]["calls"] == 2


def test_closing_the_last_session_ends_its_server_and_the_daemon(daemon: DaemonProcess, ev: dict[str, Any]) -> None:
    idle_command = daemon.attach("ev")
    assert daemon.control("close", name="ev") == {"ok": True, "closed": ["ev"]}
    assert not alive(ev["pid"])
    assert idle_command.reader.read() is None  # the attached command sees the end (exit 4)
    idle_command.close()
    assert daemon.proc.wait(30) == 0
    assert not (daemon.run_dir / "daemon.sock").exists()


def test_close_all_and_sigterm_end_every_server(run_dir: Path, peers: Peers) -> None:
    daemon = start_daemon(run_dir)
    try:
        pids = [daemon.control("open", **open_request(n, peers.everything_stdio()))["session"]["pid"]
                for n in ("one", "two", "three")]
        assert daemon.control("close", name="three")["closed"] == ["three"]
        assert [s["name"] for s in daemon.control("list")["sessions"]] == ["one", "two"]
        daemon.proc.send_signal(signal.SIGTERM)
        assert daemon.proc.wait(30) == 0
        assert not any(alive(pid) for pid in pids)
    finally:
        stop_daemon(daemon)


def test_joining_a_session_on_another_server_is_a_usage_error(
    daemon: DaemonProcess, ev: dict[str, Any], peers: Peers
) -> None:
    same = daemon.control("open", **open_request("ev", peers.everything_stdio()))
    assert same["session"]["pid"] == ev["pid"]
    other = daemon.control("open", **open_request("ev", fake_server()))
    assert other["error"]["exit"] == 2 and other["error"]["hint"] == "mcp session close ev"


def test_restart_of_a_ready_session_replaces_its_server(daemon: DaemonProcess, ev: dict[str, Any]) -> None:
    restarted = daemon.control("restart", name="ev")
    assert restarted["session"]["state"] == "ready"
    assert restarted["session"]["pid"] != ev["pid"] and not alive(ev["pid"])


def test_resource_updates_reach_every_subscribed_command(daemon: DaemonProcess, ev: dict[str, Any]) -> None:
    a, b = daemon.attach("ev"), daemon.attach("ev")
    assert a.call("resources/subscribe", {"uri": DOC}) == {}
    assert b.call("resources/subscribe", {"uri": DOC}) == {}
    toggled, before = a.until_response(a.request("tools/call", {"name": "toggle-subscriber-updates", "arguments": {}}))
    assert "result" in toggled
    updates = [m for m in before if m.get("method") == "notifications/resources/updated"]
    while not updates:
        message = a.read()
        if message.get("method") == "notifications/resources/updated":
            updates.append(message)
    assert updates[0]["params"] == {"uri": DOC}
    seen_by_b = b.read()
    while seen_by_b.get("method") != "notifications/resources/updated":
        seen_by_b = b.read()
    assert seen_by_b["params"] == {"uri": DOC}
    a.close()
    b.close()


def test_our_client_runs_unchanged_over_an_attached_connection(daemon: DaemonProcess, ev: dict[str, Any]) -> None:
    import anyio

    from mcpcli.client import Client, ClientOptions

    from .conftest import AttachTransport

    progress: list[float] = []

    async def use() -> tuple[Client, dict[str, Any], dict[str, Any]]:
        with anyio.fail_after(30):
            async with Client(AttachTransport(daemon.run_dir, "ev"), ClientOptions()) as client:
                result = await client.call_tool(
                    "trigger-long-running-operation", {"duration": 0.2, "steps": 2},
                    on_progress=lambda p: progress.append(p["progress"]))
                made = await client.call_tool("gzip-file-as-resource", {
                    "name": "x.gz", "data": "data:text/plain;base64," + base64.b64encode(b"x").decode()})
                link = next(b for b in made["content"] if b["type"] == "resource_link")
                return client, result, await client.read_resource(link["uri"])

    client, result, read = anyio.run(use)
    assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")  # the probe fell back
    assert client.server_info["name"] == "mcp-servers/everything"
    assert "Steps: 2." in text_of(result) and progress == [1, 2]
    assert gzip.decompress(base64.b64decode(read["contents"][0]["blob"])) == b"x"


def test_a_session_over_streamable_http_relays_like_one_over_stdio(daemon: DaemonProcess, peers: Peers) -> None:
    from helpers import free_port, listening

    port = free_port()
    with listening(peers.everything("streamableHttp"), port, {"PORT": str(port)}) as url:
        # A query (or userinfo) may hold a secret: the session's listing never shows it.
        entry = {"name": "web", "url": url + "?key=s3cret", "transport": "http"}
        opened = daemon.control("open", name="web", entry=entry, connect={"auth": "none"}, client={})
        assert opened["ok"], opened
        assert (opened["session"]["transport"], opened["session"]["target"]) == ("http", url)
        assert "s3cret" not in json.dumps(daemon.control("list"))
        assert opened["session"]["pid"] is None
        command = daemon.attach("web")
        command.call("initialize", INIT)
        result = command.call("tools/call", {"name": "echo", "arguments": {"message": "over http"}})
        command.close()
        assert text_of(result) == "Echo: over http"
        assert daemon.control("close", name="web")["closed"] == ["web"]



def test_twenty_concurrent_commands_each_get_their_own_answer(daemon: DaemonProcess, ev: dict[str, Any]) -> None:
    commands = [daemon.attach("ev") for _ in range(20)]
    for n, command in enumerate(commands):  # every request is in flight before any is read
        command.send({"id": 1, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"message": f"from {n}"}}})
    for n, command in enumerate(commands):
        response, _ = command.until_response(1)
        assert text_of(response["result"]) == f"Echo: from {n}"
        command.close()
    assert daemon.control("list")["sessions"][0]["calls"] == 20


def test_over_streamable_http_a_server_request_goes_to_the_command_whose_call_caused_it(
    daemon: DaemonProcess, peers: Peers
) -> None:
    # Over stdio two busy commands make the elicitation unroutable (declined, above); over
    # Streamable HTTP it arrives on the stream of the POST that caused it, which says whose.
    from helpers import free_port, listening

    port = free_port()
    with listening(peers.everything("streamableHttp"), port, {"PORT": str(port)}) as url:
        entry = {"name": "web", "url": url, "transport": "http"}
        opened = daemon.control("open", name="web", entry=entry, connect={"auth": "none"}, client={})
        assert opened["ok"], opened
        busy, asking = daemon.attach("web"), daemon.attach("web")
        for command in (busy, asking):
            command.call("initialize", INIT)
        busy.send({"id": 1, "method": "tools/call", "params": {
            "name": "trigger-long-running-operation", "arguments": {"duration": 30, "steps": 1}}})
        wait_until(lambda: daemon.control("list")["sessions"][0]["idle_seconds"] == 0.0, what="a call in flight")
        call = asking.request("tools/call", {"name": "trigger-elicitation-request", "arguments": {}})
        asked = asking.read()
        while "id" not in asked:  # notifications may come first
            asked = asking.read()
        assert asked["method"] == "elicitation/create"
        assert asked["params"]["message"].startswith("Please provide")
        asking.send({"id": asked["id"], "result": {"action": "cancel"}})
        response, _ = asking.until_response(call)
        assert "cancelled" in text_of(response["result"])
        # The busy command was never asked; its call is still running, then cancelled.
        busy.send({"method": "notifications/cancelled", "params": {"requestId": 1}})
        busy.close()
        asking.close()
        assert daemon.control("close", name="web")["closed"] == ["web"]


def test_over_stdio_a_tasks_input_request_goes_to_the_command_waiting_on_its_result(
    daemon: DaemonProcess, ev: dict[str, Any]
) -> None:
    # Stdio carries no request link, but a task's messages name the task (related-task
    # `_meta`): the command blocked in that task's tasks/result is asked, not the other one.
    busy, asking = daemon.attach("ev"), daemon.attach("ev")
    busy.send({"id": 1, "method": "tools/call", "params": {
        "name": "trigger-long-running-operation", "arguments": {"duration": 30, "steps": 1}}})
    wait_until(lambda: daemon.control("list")["sessions"][0]["idle_seconds"] == 0.0, what="a call in flight")
    created = asking.call("tools/call", {"name": "simulate-research-query",
                                         "arguments": {"topic": "otters", "ambiguous": True},
                                         "task": {"ttl": 60000}})
    task_id = created["task"]["taskId"]
    waiting = asking.request("tasks/result", {"taskId": task_id})
    asked = asking.read()
    while "id" not in asked:  # notifications may come first
        asked = asking.read()
    assert asked["method"] == "elicitation/create", asked
    assert asked["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    asking.send({"id": asked["id"], "result": {"action": "decline"}})
    response, _ = asking.until_response(waiting)
    assert "result" in response, response
    busy.send({"method": "notifications/cancelled", "params": {"requestId": 1}})
    busy.close()
    asking.close()
