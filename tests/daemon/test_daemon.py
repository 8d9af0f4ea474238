"""The daemon against real server-everything over stdio (and the scripted fake server for
faults), driven through the control protocol as a command would."""

from __future__ import annotations

import base64
import gzip
import json
import os
import signal
import socket
from pathlib import Path
from typing import Any

import pytest
from helpers import Peers, fake_server, wait_until

from .conftest import (
    Attached,
    DaemonProcess,
    alive,
    control,
    open_request,
    start_daemon,
    stop_daemon,
    text_of,
)

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


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
        assert all(m.get("method") == "notifications/progress" for m in before), before
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


def test_a_command_that_leaves_has_its_requests_cancelled_on_the_server(daemon: DaemonProcess, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    assert daemon.control("open", **open_request("f", fake_server("--never-answer", "--record", str(record))))["ok"]
    command = daemon.attach("f")
    command.request("tools/call", {"name": "echo", "arguments": {"text": "x"}})

    def sent_calls() -> list[dict[str, Any]]:
        lines = record.read_text().splitlines() if record.exists() else []
        return [json.loads(line) for line in lines]

    wait_until(lambda: any(m.get("method") == "tools/call" for m in sent_calls()), what="the call forwarded")
    # An explicit cancel (a command's --timeout or Ctrl-C) goes out under the daemon's id.
    command.request("tools/call", {"name": "echo", "arguments": {"text": "y"}})
    wait_until(lambda: len([m for m in sent_calls() if m.get("method") == "tools/call"]) == 2,
               what="the second call forwarded")
    command.send({"method": "notifications/cancelled", "params": {"requestId": 2, "reason": "timed out"}})
    wait_until(lambda: any(m.get("method") == "notifications/cancelled" for m in sent_calls()),
               what="the first cancellation")
    first_cancel = next(m for m in sent_calls() if m.get("method") == "notifications/cancelled")
    second_call = [m for m in sent_calls() if m.get("method") == "tools/call"][1]
    assert first_cancel["params"]["requestId"] == second_call["id"]
    command.close()
    wait_until(lambda: len([m for m in sent_calls() if m.get("method") == "notifications/cancelled"]) == 2,
               what="the cancellation")
    call = next(m for m in sent_calls() if m.get("method") == "tools/call")
    cancel = [m for m in sent_calls() if m.get("method") == "notifications/cancelled"][1]
    assert cancel["params"]["requestId"] == call["id"]


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


def test_a_server_that_fails_to_start_fails_the_open_with_its_stderr(daemon: DaemonProcess) -> None:
    answer = daemon.control("open", **open_request("bad", fake_server("--exit-before-init", "3")))
    assert answer["ok"] is False
    assert answer["error"]["exit"] == 4 and answer["error"]["kind"] == "transport"
    assert "exited with code 3" in answer["error"]["message"]
    # The session is not kept, and with nothing left the daemon ends.
    assert daemon.proc.wait(30) == 0


def test_a_crashed_server_leaves_its_session_exited_with_its_stderr_until_restarted(
    daemon: DaemonProcess,
) -> None:
    opened = daemon.control("open", **open_request("f", fake_server("--crash-on-call", "7", "--log-stderr")))
    first_pid = opened["session"]["pid"]
    command = daemon.attach("f")
    response, _ = command.until_response(command.request("tools/call", {"name": "echo", "arguments": {}}))
    # A shutting-down error: the command's client reports the connection (exit 4), not an RPC error.
    assert response["error"]["code"] == -32000 and response["error"]["data"] == {"reason": "shutdown"}
    assert "mcp session restart f" in response["error"]["message"]
    assert command.reader.read() is None
    command.close()
    session = daemon.control("list")["sessions"][0]
    assert session["state"] == "exited" and session["pid"] is None
    assert any("tools/call" in line for line in session["last_stderr"]), session

    late = Attached(daemon.run_dir, "f")
    refused = late.answer
    late.close()
    assert refused is not None
    assert refused["error"]["exit"] == 4 and refused["error"]["hint"] == "mcp session restart f"
    assert "exited with code 7" in refused["error"]["message"]
    logs = daemon.control("logs", name="f")
    assert "tools/call" in logs["text"] and logs["path"].endswith("sessions/f.log")

    restarted = daemon.control("restart", name="f")
    assert restarted["session"]["state"] == "ready" and restarted["session"]["pid"] != first_pid
    assert alive(restarted["session"]["pid"])


def test_restart_on_failure_brings_a_crashed_server_back(daemon: DaemonProcess) -> None:
    opened = daemon.control("open", **open_request("f", fake_server("--crash-on-call", "7"), restart="on-failure"))
    command = daemon.attach("f")
    command.until_response(command.request("tools/call", {"name": "echo", "arguments": {}}))
    command.close()

    def back() -> bool:
        session = daemon.control("list")["sessions"][0]
        return session["state"] == "ready" and session["pid"] not in (None, opened["session"]["pid"])

    wait_until(back, what="the session restarted")


def test_restart_of_a_ready_session_replaces_its_server(daemon: DaemonProcess, ev: dict[str, Any]) -> None:
    restarted = daemon.control("restart", name="ev")
    assert restarted["session"]["state"] == "ready"
    assert restarted["session"]["pid"] != ev["pid"] and not alive(ev["pid"])


def test_an_idle_session_closes_itself(daemon: DaemonProcess) -> None:
    opened = daemon.control("open", **open_request("f", fake_server(), idle_timeout=0.3))
    assert daemon.proc.wait(30) == 0  # idled out, then the daemon had nothing left
    assert not alive(opened["session"]["pid"])


def test_a_stale_socket_is_replaced_and_a_live_daemon_is_not(run_dir: Path, peers: Peers) -> None:
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(run_dir / "daemon.sock"))
    stale.close()  # the file stays, nobody listens: what a killed daemon leaves
    daemon = start_daemon(run_dir)
    try:
        assert daemon.control("open", **open_request("f", fake_server()))["ok"]
        second = start_second(run_dir)
        assert second.wait(30) == 4
        assert daemon.control("list")["sessions"][0]["name"] == "f"
    finally:
        stop_daemon(daemon)


def start_second(run_dir: Path) -> Any:
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "mcpcli.daemon"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "MCPCLI_RUNTIME_DIR": str(run_dir)})


@pytest.mark.parametrize(("uid_offset", "answered"), [(1, False), (0, True)])
def test_a_connection_from_another_uid_is_closed_unread(run_dir: Path, uid_offset: int, answered: bool) -> None:
    # The peer is always us: the daemon is told to expect another uid to see the refusal.
    from anyio.from_thread import start_blocking_portal

    from mcpcli.daemon.server import Daemon

    with start_blocking_portal() as portal:
        daemon = portal.call(lambda: Daemon(run_dir, expected_uid=os.getuid() + uid_offset))
        serving = portal.start_task_soon(daemon.serve, False)
        portal.call(daemon.listening.wait)
        try:
            answer = control_or_none(run_dir)
        finally:
            portal.call(daemon.stop)
            serving.result(30)
    assert answer == ({"ok": True, "sessions": []} if answered else None)


def control_or_none(run_dir: Path) -> dict[str, Any] | None:
    """The answer to `list`; None when the daemon hangs up (closing with our line unread
    resets the connection)."""
    try:
        return control(run_dir, "list")
    except (AssertionError, ConnectionResetError):
        return None


def test_unknown_ops_and_bad_lines_get_a_usage_error(daemon: DaemonProcess) -> None:
    from mcpcli.daemon import protocol

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(daemon.run_dir / "daemon.sock"))
        sock.sendall(b"this is not json\n")
        answer = protocol.LineReader(sock).read()
    assert answer is not None and answer["error"]["exit"] == 2
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(daemon.run_dir / "daemon.sock"))
        protocol.send(sock, {"mcpcli": 99, "op": "list"})
        answer = protocol.LineReader(sock).read()
    assert answer is not None and answer["error"]["kind"] == "usage"


DOC = "demo://resource/static/document/features.md"


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


def test_the_server_sees_one_subscription_per_uri_until_the_last_subscriber_leaves(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    record = tmp_path / "record.jsonl"
    opened = daemon.control("open", **open_request("f", fake_server("--features", "--record", str(record))))
    assert opened["ok"]

    def received(method: str) -> list[dict[str, Any]]:
        lines = record.read_text().splitlines() if record.exists() else []
        return [m for m in map(json.loads, lines) if m.get("method") == method]

    a, b = daemon.attach("f"), daemon.attach("f")
    assert a.call("resources/subscribe", {"uri": "x://one"}) == {}
    assert b.call("resources/subscribe", {"uri": "x://one"}) == {}
    assert b.call("resources/unsubscribe", {"uri": "x://one"}) == {}
    b.close()
    assert a.call("ping") == {}  # the server has read everything sent before it
    assert len(received("resources/subscribe")) == 1 and received("resources/unsubscribe") == []
    a.close()  # the last subscriber leaves without unsubscribing
    wait_until(lambda: len(received("resources/unsubscribe")) == 1, what="the unsubscribe")
    assert received("resources/unsubscribe")[0]["params"] == {"uri": "x://one"}


def test_a_call_whose_command_hangs_up_is_cancelled_on_the_server(daemon: DaemonProcess, tmp_path: Path) -> None:
    from mcpcli.daemon import protocol

    record = tmp_path / "record.jsonl"
    assert daemon.control("open", **open_request("f", fake_server("--never-answer", "--record", str(record))))["ok"]

    def received(method: str) -> list[dict[str, Any]]:
        lines = record.read_text().splitlines() if record.exists() else []
        return [m for m in map(json.loads, lines) if m.get("method") == method]

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(daemon.run_dir / "daemon.sock"))
        protocol.send(sock, protocol.request("call", name="f", tool="echo", args=["text=hi"], json=None,
                                             timeout=None, validate=False))
        wait_until(lambda: received("tools/call"), what="the call forwarded")
    wait_until(lambda: received("notifications/cancelled"), what="the cancellation")
    assert received("notifications/cancelled")[0]["params"]["requestId"] == received("tools/call")[0]["id"]
    assert daemon.control("list")["sessions"][0]["state"] == "ready"


def test_a_modern_session_answers_the_handshake_from_its_discover_result(daemon: DaemonProcess) -> None:
    opened = daemon.control("open", **open_request("m", fake_server("--modern")))
    assert (opened["session"]["era"], opened["session"]["protocolVersion"]) == ("modern", "2026-07-28")
    command = daemon.attach("m")
    discovered = command.call("server/discover", {"_meta": {}})
    assert discovered["supportedVersions"] == ["2026-07-28"]
    refused, _ = command.until_response(command.request("initialize", INIT))
    assert refused["error"]["code"] == -32022
    assert refused["error"]["data"] == {"supported": ["2026-07-28"]}
    command.close()


def test_our_client_runs_unchanged_over_an_attached_connection(daemon: DaemonProcess, ev: dict[str, Any]) -> None:
    import anyio

    from mcpcli.client import Client, ClientOptions

    from .conftest import AttachTransport

    progress: list[float] = []

    async def use() -> tuple[Client, dict[str, Any], dict[str, Any]]:
        with anyio.fail_after(30):
            async with Client(AttachTransport(daemon.run_dir, "ev"), ClientOptions()) as client:  # type: ignore[arg-type]
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
    from client.conftest import listening
    from helpers import free_port

    port = free_port()
    with listening(peers.everything("streamableHttp"), port, {"PORT": str(port)}) as url:
        entry = {"name": "web", "url": url, "transport": "http"}
        opened = daemon.control("open", name="web", entry=entry, connect={"auth": "none"}, client={})
        assert opened["ok"], opened
        assert (opened["session"]["transport"], opened["session"]["target"]) == ("http", url)
        assert opened["session"]["pid"] is None
        command = daemon.attach("web")
        command.call("initialize", INIT)
        result = command.call("tools/call", {"name": "echo", "arguments": {"message": "over http"}})
        command.close()
        assert text_of(result) == "Echo: over http"
        assert daemon.control("close", name="web")["closed"] == ["web"]


def test_sampling_is_routed_to_the_asking_command_when_the_session_declares_it(daemon: DaemonProcess) -> None:
    request = open_request("s", fake_server("--sample", "3"))
    request["client"]["sampling"] = True
    assert daemon.control("open", **request)["ok"]
    command = daemon.attach("s")
    call = command.request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    asked = command.read()
    assert asked["method"] == "sampling/createMessage"
    assert asked["params"]["messages"][0]["content"]["text"] == "xxx"
    answer = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}
    command.send({"id": asked["id"], "result": answer})
    response, _ = command.until_response(call)
    command.close()
    assert json.loads(text_of(response["result"])) == {"result": answer}


def test_a_session_without_sampling_answers_it_as_a_client_without_the_capability(daemon: DaemonProcess) -> None:
    assert daemon.control("open", **open_request("s", fake_server("--sample", "3")))["ok"]
    command = daemon.attach("s")
    response, before = command.until_response(command.request("tools/call", {"name": "echo", "arguments": {}}))
    command.close()
    assert before == []
    assert json.loads(text_of(response["result"]))["error"]["code"] == -32601


def test_closing_a_session_ends_its_servers_whole_process_group(daemon: DaemonProcess) -> None:
    # --stubborn ignores EOF and SIGTERM and leaves a grandchild behind.
    pid = daemon.control("open", **open_request("f", fake_server("--stubborn")))["session"]["pid"]
    wait_until(lambda: len(live_members(pid)) == 2, what="the server and its grandchild")
    assert daemon.control("close", name="f")["closed"] == ["f"]
    # Killed members may linger as zombies until their new parent (this subreaper) reaps them.
    wait_until(lambda: not live_members(pid), what="the process group gone")


def live_members(pgid: int) -> list[int]:
    """Processes of a process group that are not zombies."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry))
    return found
