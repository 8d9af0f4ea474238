"""`mcp serve --replay` in process: matching rules, answers, bad recordings (no peers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import fake_server, mcp_in

from mcpcli.client import Client, ClientOptions
from mcpcli.errors import RPCError, UsageError
from mcpcli.server.replay import REDACTED, ReplayServer, load_recording

INIT_RESULT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
               "serverInfo": {"name": "recorded", "version": "9"}}


def line(t: float, direction: str, msg: dict[str, Any]) -> str:
    return json.dumps({"t": t, "dir": direction, "msg": msg})


def call(i: int, params: dict[str, Any]) -> str:
    return line(0.1, "send", {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})


def result(i: int, text: str) -> str:
    return line(0.2, "recv", {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": text}]}})


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "rec.ndjson"
    path.write_text("\n".join(lines) + "\n")
    return path


def recording(tmp_path: Path) -> Path:
    meta = line(0, "meta", {"recorded": "2026-11-24T00:00:00.000Z", "target": "t", "mcpcli": "0"})
    return write(tmp_path, [
        meta,
        line(0, "send", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}),
        line(0, "recv", {"jsonrpc": "2.0", "id": 1, "result": INIT_RESULT}),
        line(0, "send", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call(2, {"name": "count", "arguments": {"a": 1, "b": 2}, "_meta": {"progressToken": 2}}),
        line(0.15, "recv", {"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": 2, "progress": 1}}),
        line(0.16, "recv", {"jsonrpc": "2.0", "method": "notifications/message",
                            "params": {"level": "info", "data": "counting"}}),
        result(2, "first"),
        meta,  # a second run: ids start again
        line(0, "send", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}),
        line(0, "recv", {"jsonrpc": "2.0", "id": 1, "result": INIT_RESULT}),
        call(2, {"arguments": {"b": 2, "a": 1}, "name": "count"}),
        result(2, "second"),
        call(3, {"name": "login", "arguments": {"password": REDACTED}}),
        result(3, "signed in"),
        call(5, {"name": "say", "arguments": {"text": f"Authorization: Bearer {REDACTED}!"}}),
        result(5, "said"),
        call(4, {"name": "fails", "arguments": {}}),
        line(0.2, "recv", {"jsonrpc": "2.0", "id": 4, "error": {"code": -32000, "message": "boom", "data": [1]}}),
    ])


def texts(res: dict[str, Any]) -> list[str]:
    return [c["text"] for c in res["content"]]


@pytest.mark.anyio
async def test_answers_in_recorded_order_then_the_last_again_with_the_notifications(tmp_path: Path) -> None:
    seen: list[tuple[str, Any]] = []
    server = ReplayServer(load_recording(str(recording(tmp_path))))
    options = ClientOptions(protocol="2025-11-25", on_notification=lambda m, p: seen.append((m, p)))
    async with Client(server.transport(), options) as client:
        # A client asking another version gets the recorded one.
        assert client.protocol_version == "2025-06-18"
        assert client.server_info == {"name": "recorded", "version": "9"}
        progress: list[dict[str, Any]] = []
        # Key order and the progress token do not matter.
        first = await client.request("tools/call", {"arguments": {"b": 2, "a": 1}, "name": "count"},
                                     on_progress=progress.append)
        assert texts(first) == ["first"]
        assert [p["progress"] for p in progress] == [1]  # under this request's own token
        assert ("notifications/message", {"level": "info", "data": "counting"}) in seen
        assert texts(await client.call_tool("count", {"a": 1, "b": 2})) == ["second"]
        assert texts(await client.call_tool("count", {"a": 1, "b": 2})) == ["second"]
        # A redacted value stands for any string.
        assert texts(await client.call_tool("login", {"password": "hunter2"})) == ["signed in"]
        # A secret replaced inside a string stands for any text there, and only there.
        assert texts(await client.call_tool("say", {"text": "Authorization: Bearer sk-other!"})) == ["said"]
        with pytest.raises(RPCError):
            await client.call_tool("say", {"text": "Authorization: Basic sk-other!"})
        with pytest.raises(RPCError) as err:
            await client.call_tool("fails", {})
        assert (err.value.code, err.value.rpc_message, err.value.data) == (-32000, "boom", [1])


@pytest.mark.anyio
async def test_an_unmatched_request_names_the_closest_recorded_one(tmp_path: Path) -> None:
    path = recording(tmp_path)
    server = ReplayServer(load_recording(str(path)))
    async with Client(server.transport(), ClientOptions(protocol="2025-06-18")) as client:
        with pytest.raises(RPCError) as err:
            await client.call_tool("count", {"a": 1, "b": 3})
        assert err.value.code == -32602
        assert err.value.rpc_message == (
            f"no recorded tools/call request has these params; the closest (line 5 of {path}) "
            'differs in arguments.b: {"arguments": {"a": 1, "b": 2}, "name": "count"}'
        )
        with pytest.raises(RPCError) as err:
            await client.request("prompts/list")
        assert err.value.code == -32601
        assert err.value.rpc_message == (
            f"Method not found: prompts/list is not in the recording {path} "
            "(recorded: initialize, tools/call)"
        )



@pytest.mark.parametrize(("text", "problem"), [
    ("{not json", "rec.ndjson:2: not JSON"),
    ("[1, 2]", "rec.ndjson:2: expected a JSON object"),
    ('{"t": 0, "dir": "sideways", "msg": {}}', 'rec.ndjson:2: dir must be meta, send or recv, not "sideways"'),
    ('{"t": "soon", "dir": "send", "msg": {"method": "x"}}', "rec.ndjson:2: t must be a number"),
    ('{"t": 0, "dir": "send", "msg": "hello"}', "rec.ndjson:2: msg must be a JSON object"),
    ('{"t": 0, "dir": "recv", "msg": {"jsonrpc": "2.0"}}', "rec.ndjson:2: msg is not a JSON-RPC message"),
    ('{"t": 0, "dir": "recv", "msg": {"id": 1}}', "rec.ndjson:2: msg is a response without result or error"),
])
def test_a_malformed_line_is_one_line_with_file_and_line(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path, [call(1, {"name": "x"}), text, result(1, "x")])
    r = mcp_in("serve", "--replay", str(path), cwd=tmp_path)
    assert r.code == 2, r
    assert r.stdout == ""
    assert f"mcp: error: {tmp_path}/{problem}" in r.stderr.splitlines()[0]
    assert "Traceback" not in r.stderr


def test_a_recording_without_an_answered_request_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, [line(0, "meta", {}), call(1, {"name": "x"})])
    with pytest.raises(UsageError, match="no recorded request with its response"):
        load_recording(str(path))
    r = mcp_in("serve", "--replay", str(tmp_path / "missing.ndjson"))
    assert r.code == 2, r
    assert "cannot read" in r.stderr and "missing.ndjson" in r.stderr


def test_replay_takes_no_tools_file_or_proxy(tmp_path: Path) -> None:
    path = recording(tmp_path)
    r = mcp_in("serve", "--replay", str(path), "tools.yaml")
    assert r.code == 2, r
    assert "--replay serves a recording" in r.stderr
    r = mcp_in("serve", "--replay", str(path), "--watch")
    assert r.code == 2, r


def test_the_fast_paths_leave_record_to_the_full_cli() -> None:
    from mcpcli.cli import fast

    assert fast._parse(["@s", "echo", "--record", "f.ndjson"]) is None
    assert fast._parse(["@s", "echo", "--record=f.ndjson"]) is None
    assert fast.parse_flags(["echo", "-a", "x=1", "--record", "f.ndjson"]) is None


def test_a_recording_that_cannot_be_opened_is_a_usage_error(tmp_path: Path) -> None:
    r = mcp_in("tools", "list", "--record", str(tmp_path / "no" / "such" / "dir.ndjson"), "--", *fake_server())
    assert r.code == 2, r
    assert r.stderr.startswith("mcp: error: --record: cannot open ")
    assert "Traceback" not in r.stderr


def test_a_line_nested_too_deeply_is_file_and_line_not_a_crash(tmp_path: Path) -> None:
    path = write(tmp_path, [call(1, {"name": "x"}), "[" * 200_000, result(1, "x")])
    r = mcp_in("serve", "--replay", str(path))
    assert r.code == 2, r
    assert r.stderr.splitlines()[0] == f"mcp: error: {path}:2: not JSON (nested too deeply)"
    assert "internal error" not in r.stderr and "RecursionError" not in r.stderr


def test_a_line_past_the_bound_is_refused_without_reading_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcpcli.server import replay

    monkeypatch.setattr(replay, "MAX_LINE_BYTES", 1000)
    path = write(tmp_path, [call(1, {"name": "x" * 2000}), result(1, "x")])
    with pytest.raises(UsageError, match=r"rec.ndjson:1: line longer than 1000 bytes"):
        load_recording(str(path))
    path = write(tmp_path, [call(1, {"name": "x" * 800}), result(1, "x")])  # within it: read
    assert load_recording(str(path)).exchanges[0].params == {"name": "x" * 800}


def test_bad_utf8_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "rec.ndjson"
    path.write_bytes(f"{call(1, {'name': 'x'})}\n{result(1, 'x')}\n".encode() + b'{"t": 0, "dir": "recv\xff"}\n')
    with pytest.raises(UsageError, match=r"rec.ndjson:3: not UTF-8 text"):
        load_recording(str(path))


def test_a_line_separator_inside_a_recorded_string_is_text_not_a_line_break(tmp_path: Path) -> None:
    # The recorder writes JSON with ensure_ascii=False: U+2028 and U+0085 appear raw in strings.
    path = tmp_path / "rec.ndjson"
    text = "one\u2028two\x85three\x1cfour"
    lines = [call(1, {"name": "x"}), result(1, text)]
    path.write_text("\n".join(json.dumps(json.loads(x), ensure_ascii=False) for x in lines) + "\n")
    (exchange,) = load_recording(str(path)).exchanges
    assert exchange.response is not None and exchange.response["result"]["content"][0]["text"] == text


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_only_a_regular_file_is_read(tmp_path: Path, kind: str) -> None:
    import os

    from helpers import mcp

    if kind == "fifo":
        path = str(tmp_path / "rec.ndjson")
        os.mkfifo(path)  # no writer: opening it to read would block
    elif kind == "device":
        path = "/dev/zero"  # never ends
    else:
        path = str(tmp_path)
    r = mcp("serve", "--replay", path, timeout=60)
    assert r.code == 2, r
    assert r.stderr.count("mcp: error:") == 1 and "Traceback" not in r.stderr
    assert "not a regular file" in r.stderr or "is a directory" in r.stderr, r


@pytest.mark.slow
def test_a_huge_file_of_one_line_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    import subprocess
    import sys

    from mcpcli.server.replay import MAX_LINE_BYTES

    path = tmp_path / "huge.ndjson"
    with open(path, "wb") as fh:
        fh.truncate(400 * 1024 * 1024)  # sparse: 400 MB of NUL bytes, no newline, no disk
    # A parent of its own, so RUSAGE_CHILDREN is this one command's peak.
    code = ("import resource, subprocess, sys; "
            "p = subprocess.run([sys.executable, '-m', 'mcpcli', 'serve', '--replay', sys.argv[1]], "
            "capture_output=True, text=True); "
            "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
            "print(p.stderr, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    status, peak_kib = map(int, out.stdout.split())
    assert status == 2, out
    assert f"{path}:1: line longer than {MAX_LINE_BYTES} bytes" in out.stderr
    assert peak_kib * 1024 < 4 * MAX_LINE_BYTES + 100 * 1024 * 1024, peak_kib  # the bound, not the file
