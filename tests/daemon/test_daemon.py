"""The daemon against the scripted fake server (tests/fakes/fake_stdio_server.py): faults,
cancellation, subscriptions, routing, the listener; driven through the control protocol."""

from __future__ import annotations

import json
import os
import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, fake_server, free_port, listening, wait_until

from mcpcli import localsocket

from .conftest import (
    Attached,
    DaemonProcess,
    alive,
    connect,
    control,
    in_process,
    open_request,
    start_daemon,
    stop_daemon,
    text_of,
)

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


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


def test_a_server_that_fails_to_start_fails_the_open_with_its_stderr(daemon: DaemonProcess) -> None:
    answer = daemon.control("open", **open_request("bad", fake_server("--exit-before-init", "3")))
    assert answer["ok"] is False
    assert answer["error"]["exit"] == 4 and answer["error"]["kind"] == "transport"
    assert "exited with code 3" in answer["error"]["message"]
    # The session is not kept, and with nothing left the daemon ends.
    assert daemon.proc.wait(30) == 0


@pytest.mark.slow
def test_a_server_that_ends_on_the_probe_is_started_again_for_its_session(
    daemon: DaemonProcess, run_dir: Path, tmp_path: Path
) -> None:
    """An rmcp-like server (it ends when its first message is not `initialize`): the open
    starts it again and uses `initialize`, as a command would; the daemon's log says so,
    and the session's log (a log: what every start wrote) shows why."""
    starts = tmp_path / "starts"
    argv = fake_server("--initialize-first", "exit", "--log-stderr", "--starts", str(starts))
    opened = daemon.control("open", **open_request("rs", argv))
    assert opened["ok"], opened
    assert opened["session"]["era"] == "legacy" and alive(opened["session"]["pid"])
    assert len(starts.read_text().splitlines()) == 2
    command = daemon.attach("rs")
    assert text_of(command.call("tools/call", {"name": "echo", "arguments": {"message": "hi"}})) == "hi"
    command.close()
    assert "the server ended on the era probe, unanswered (server exited with code 1" in daemon.log()
    session_log = (run_dir / "sessions" / "rs.log").read_text()
    assert session_log.index("expect initialized request") < session_log.index("got initialize")


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
    # The telling line of the server's stderr follows, once (the transport's quote is not repeated).
    assert refused["error"]["message"].count("crashing now") == 1, refused
    assert refused["error"]["message"].endswith("; its stderr says: crashing now"), refused
    logs = daemon.control("logs", name="f")
    assert "tools/call" in logs["text"] and logs["path"].endswith("sessions/f.log")

    restarted = daemon.control("restart", name="f")
    assert restarted["session"]["state"] == "ready" and restarted["session"]["pid"] != first_pid
    assert alive(restarted["session"]["pid"])


@pytest.mark.slow
def test_restart_on_failure_brings_a_crashed_server_back(daemon: DaemonProcess) -> None:
    opened = daemon.control("open", **open_request("f", fake_server("--crash-on-call", "7"), restart="on-failure"))
    command = daemon.attach("f")
    command.until_response(command.request("tools/call", {"name": "echo", "arguments": {}}))
    command.close()

    def back() -> bool:
        session = daemon.control("list")["sessions"][0]
        return session["state"] == "ready" and session["pid"] not in (None, opened["session"]["pid"])

    wait_until(back, what="the session restarted")


def test_an_idle_session_closes_itself(daemon: DaemonProcess) -> None:
    opened = daemon.control("open", **open_request("f", fake_server(), idle_timeout=0.3))
    assert daemon.proc.wait(30) == 0  # idled out, then the daemon had nothing left
    assert not alive(opened["session"]["pid"])


@pytest.mark.slow
def test_a_stale_socket_is_replaced_and_a_live_daemon_is_not(run_dir: Path) -> None:
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
    with in_process(run_dir, expected_uid=os.getuid() + uid_offset):
        answer = control_or_none(run_dir)
    assert answer == ({"ok": True, "sessions": []} if answered else None)


def control_or_none(run_dir: Path) -> dict[str, Any] | None:
    """The answer to `list`; None when the daemon hangs up (closing with our line unread
    resets the connection; closing before we wrote it breaks the pipe)."""
    try:
        return control(run_dir, "list")
    except (AssertionError, ConnectionResetError, BrokenPipeError):
        return None


def test_unknown_ops_and_bad_lines_get_a_usage_error(daemon: DaemonProcess) -> None:
    from mcpcli import localsocket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(daemon.run_dir / "daemon.sock"))
        sock.sendall(b"this is not json\n")
        answer = localsocket.LineReader(sock).read()
    assert answer is not None and answer["error"]["exit"] == 2
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(daemon.run_dir / "daemon.sock"))
        localsocket.send(sock, {"mcpcli": 99, "op": "list"})
        answer = localsocket.LineReader(sock).read()
    assert answer is not None and answer["error"]["kind"] == "usage"


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
    from mcpcli.core import localrpc as protocol

    record = tmp_path / "record.jsonl"
    assert daemon.control("open", **open_request("f", fake_server("--never-answer", "--record", str(record))))["ok"]

    def received(method: str) -> list[dict[str, Any]]:
        lines = record.read_text().splitlines() if record.exists() else []
        return [m for m in map(json.loads, lines) if m.get("method") == method]

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(daemon.run_dir / "daemon.sock"))
        localsocket.send(sock, protocol.request("call", name="f", tool="echo", args=["text=hi"], json=None,
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


def test_a_call_op_that_runs_out_of_time_is_a_timeout_and_cancelled_on_the_server(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    record = tmp_path / "record.jsonl"
    assert daemon.control("open", **open_request("f", fake_server("--never-answer", "--record", str(record))))["ok"]
    answer = daemon.control("call", name="f", tool="echo", args=[], json=None, timeout=0.2, validate=False)
    assert answer["error"]["kind"] == "timeout" and answer["error"]["exit"] == 124
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    call = next(m for m in lines if m.get("method") == "tools/call")

    def cancelled() -> bool:
        lines = [json.loads(line) for line in record.read_text().splitlines()]
        return any(m.get("method") == "notifications/cancelled" and m["params"]["requestId"] == call["id"]
                   for m in lines)

    wait_until(cancelled, what="the cancellation")



def test_a_tools_yaml_session_runs_as_its_own_server_in_the_given_directory(daemon: DaemonProcess, tmp_path: Path) -> None:
    from mcpcli.toolsfile import __file__ as toolsfile_init

    # Its paths are confined to the file's directory: a copy next to the file it counts.
    example = tmp_path / "tools.yaml"
    example.write_text((Path(toolsfile_init).parent / "example" / "tools.yaml").read_text())
    counted = tmp_path / "three.txt"
    counted.write_text("one two\nthree\n")
    entry = {"name": "dev", "transport": "yaml", "path": str(example)}
    opened = daemon.control("open", name="dev", entry=entry, connect={"cwd": str(tmp_path)}, client={})
    assert opened["ok"] and opened["session"]["target"] == str(example)
    assert alive(opened["session"]["pid"])  # its own process, in the command's directory
    assert os.readlink(f"/proc/{opened['session']['pid']}/cwd") == str(tmp_path)
    answer = daemon.control("call", name="dev", tool="word_count", args=[f"file={counted}"], json=None,
                            timeout=30, validate=True)
    assert answer.get("result", {}).get("structuredContent", {}).get("words") == 3, answer


def test_a_modern_servers_list_is_reused_while_its_ttl_lasts(daemon: DaemonProcess, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    argv = fake_server("--modern", "--ttl", "600000", "--record", str(record))
    assert daemon.control("open", **open_request("m", argv))["ok"]
    first, second = daemon.attach("m"), daemon.attach("m")
    listed = [command.call("tools/list", {"_meta": {}}) for command in (first, second, first)]
    first.close()
    second.close()
    assert listed[0] == listed[1] == listed[2] and listed[0]["ttlMs"] == 600000
    sent = [json.loads(line).get("method") for line in record.read_text().splitlines()]
    assert sent.count("tools/list") == 1


def test_a_list_without_a_ttl_is_asked_each_time(daemon: DaemonProcess, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    assert daemon.control("open", **open_request("m", fake_server("--modern", "--record", str(record))))["ok"]
    command = daemon.attach("m")
    for _ in range(2):
        command.call("tools/list", {"_meta": {}})
    command.close()
    sent = [json.loads(line).get("method") for line in record.read_text().splitlines()]
    assert sent.count("tools/list") == 2


@pytest.mark.parametrize(("entry", "problem"), [
    ({"name": "x", "command": "true", "args": "not-a-list"}, "args"),
    ({"name": "x", "command": "true", "env": {"A": 1}}, "env"),
    ({"name": "x", "transport": "carrier-pigeon", "command": "true"}, "transport"),
    ({"name": "x", "transport": "http"}, "needs its url"),
    ({"command": "true"}, "name"),
])
def test_a_malformed_open_is_a_usage_error(daemon: DaemonProcess, entry: dict[str, Any], problem: str) -> None:
    answer = daemon.control("open", name="x", entry=entry, connect={}, client={})
    assert answer["error"]["kind"] == "usage" and problem in answer["error"]["message"]
    assert daemon.control("list") == {"ok": True, "sessions": []}


def test_requests_through_a_session_have_no_limit_but_their_own(run_dir: Path) -> None:
    # The handshake is bounded by the open's timeout; after it the daemon adds no default
    # (a 30 s handshake bound must not cut a command's long call, nor its --timeout differ).
    with in_process(run_dir) as daemon:
        assert control(run_dir, "open", **open_request("f", fake_server()))["ok"]
        client = daemon.sessions["f"].client
        assert client is not None
        assert (client.peer.default_timeout, client.peer.max_timeout) == (None, None)


def test_a_connection_that_says_nothing_is_closed(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpcli.daemon import server

    monkeypatch.setattr(server, "FIRST_LINE_TIMEOUT", 0.05)
    with in_process(run_dir), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(run_dir / "daemon.sock"))
        assert localsocket.LineReader(sock).read() is None


def test_a_command_attaching_while_the_session_starts_waits_for_it(daemon: DaemonProcess) -> None:
    import threading

    opened: list[dict[str, Any]] = []
    opening = threading.Thread(target=lambda: opened.append(
        daemon.control("open", **open_request("slow", fake_server("--slow-modern", "0.5")))))
    opening.start()
    try:
        wait_until(lambda: [s["state"] for s in daemon.control("list")["sessions"]] == ["starting"],
                   what="the session starting")
        command = daemon.attach("slow")
        assert command.answer is not None and command.answer["ok"], command.answer
        assert command.answer["session"]["state"] == "ready"
        command.close()
    finally:
        opening.join(60)
    assert opened[0]["ok"]


def test_a_call_op_gets_its_notifications_before_the_answer_only_when_it_asks(
    daemon: DaemonProcess, run_dir: Path
) -> None:
    """`"notifications": true`: the call's log messages come first, as JSON-RPC lines, in
    order; without it the answer is the only line and they go to the session's log."""
    from mcpcli.core import localrpc as protocol

    assert daemon.control("open", **open_request("lg", fake_server("--log-unasked")))["ok"]
    fields = {"name": "lg", "tool": "echo", "args": ["message=hi"], "json": None, "timeout": 30,
              "validate": True}
    with connect(run_dir) as sock:
        localsocket.send(sock, protocol.request("call", notifications=True, **fields))
        reader = localsocket.LineReader(sock)
        lines = [reader.read(), reader.read(), reader.read()]
        assert reader.read() is None  # the answer ends the connection's traffic
    levels = [(line or {}).get("params", {}).get("level") for line in lines[:2]]
    assert [(line or {}).get("method") for line in lines[:2]] == ["notifications/message"] * 2
    assert levels == ["info", "error"]
    assert (lines[2] or {}).get("ok") is True
    log = run_dir / "sessions" / "lg.log"
    assert "error note" not in (log.read_text() if log.exists() else "")

    answer = daemon.control("call", **fields)  # the first line, as for every other op
    assert answer["ok"] is True
    wait_until(lambda: log.exists() and "error note" in log.read_text(), what="the note in the session log")


def test_each_call_op_on_an_http_session_gets_the_log_messages_of_its_own_call(
    daemon: DaemonProcess, run_dir: Path
) -> None:
    """Streamable HTTP says which request a message came with: of two `call` ops in flight
    at once, each gets the log message its own call caused (the session's client counts
    each op's requests as that op's), and neither goes to the session's log."""
    from mcpcli.core import localrpc as protocol

    upstream = REPO / "tests" / "gateway" / "gateway_upstream.py"
    port = free_port()
    with listening([sys.executable, str(upstream), "--http", str(port)], port) as url:
        opened = daemon.control("open", name="h", entry={"name": "h", "url": url, "transport": "http"},
                                connect={}, client={"timeout": 30, "protocol": "2025-11-25"},
                                idle_timeout=None, restart="no", join=True)
        assert opened["ok"], opened

        def call(tag: str) -> list[dict[str, Any]]:
            with connect(run_dir) as sock:
                localsocket.send(sock, protocol.request(
                    "call", notifications=True, name="h", tool="log_together", args=[f"text={tag}"],
                    json=None, timeout=30, validate=True))
                reader = localsocket.LineReader(sock)
                lines = []
                while (line := reader.read()) is not None:
                    lines.append(line)
            return lines

        with ThreadPoolExecutor(2) as pool:
            ada, bob = pool.map(call, ["ada", "bob"])
    for tag, lines in (("ada", ada), ("bob", bob)):
        assert [line.get("method") for line in lines[:-1]] == ["notifications/message"], lines
        assert lines[0]["params"]["data"] == {"msg": tag}
        assert lines[-1]["ok"] is True
        assert lines[-1]["result"]["content"][0]["text"] == f"{tag} done"
    log = run_dir / "sessions" / "h.log"
    assert "msg" not in (log.read_text() if log.exists() else "")


def test_a_modern_log_message_goes_to_the_one_command_that_asked_for_logs(daemon: DaemonProcess) -> None:
    """2026-07-28 over stdio: a log message carries no request id, but the server sends them
    only for requests that asked (`_meta` logLevel); with several commands in flight, the
    one that asked gets them."""
    argv = fake_server("--modern", "--silent-probe", "--log-unasked")
    assert daemon.control("open", **open_request("m", argv))["ok"]
    quiet, asking = daemon.attach("m"), daemon.attach("m")
    try:
        quiet.request("nothing/answers")  # in flight for good (--silent-probe)
        asked = asking.request("tools/call", {"name": "echo", "arguments": {"message": "x"},
                                              "_meta": {"io.modelcontextprotocol/logLevel": "info"}})
        response, before = asking.until_response(asked)
        assert response["result"]["content"][0]["text"] == "x"
        assert [m["params"]["data"] for m in before if m.get("method") == "notifications/message"] == [
            "info note", "error note"]
    finally:
        quiet.close()
        asking.close()
