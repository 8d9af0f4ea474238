"""The runtime over real stdio pipes: our client, raw bytes, and faults."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from server_support import ALL, features

from mcpcli.client import Client, ClientOptions
from mcpcli.transports.stdio import StdioTransport

# Each test here runs real processes (`mcp`, servers) for a second or so: not in scripts/test --fast.
pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DEMO = str(Path(__file__).parent / "demo_stdio.py")


@pytest.mark.parametrize("protocol", [None, "2025-11-25", "2024-11-05"])
async def test_our_client_over_stdio(protocol: str | None) -> None:
    transport = StdioTransport(sys.executable, [DEMO], quiet=True)
    with anyio.fail_after(20):
        async with Client(transport, ClientOptions(protocol=protocol, features=features())) as client:
            assert client.protocol_version == (protocol or "2026-07-28")
            result = await client.call_tool("echo", {"text": "over stdio"})
            assert result["content"][0]["text"] == "over stdio"
            assert (await client.call_tool("elicit"))["content"][0]["text"] == "Hello, Ada!"
            progress: list[float] = []
            await client.call_tool("progress", on_progress=lambda p: progress.append(p["progress"]))
            assert progress == [0, 50, 100]


def _exchange(lines: list[bytes]) -> list[dict]:
    """Send raw lines to the stdio server, close stdin, and parse everything it wrote."""
    proc = subprocess.run(
        [sys.executable, DEMO], input=b"".join(lines), capture_output=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _init(version: str, rid: int = 1) -> bytes:
    body = {"jsonrpc": "2.0", "id": rid, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    return json.dumps(body).encode() + b"\n"


def test_malformed_lines_get_error_responses_and_stdout_stays_clean() -> None:
    out = _exchange([
        b"this is not json\n",
        b'{"jsonrpc": "2.0", "id": 7, "method": 5}\n',
        b'{"jsonrpc": "1.0", "id": 8, "method": "ping"}\n',
        b"[1, 2]\n",
        b"\n",
        _init("2025-06-18"),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        b'[{"jsonrpc":"2.0","id":3,"method":"ping"}]\n',
        b'{"jsonrpc":"2.0","id":4,"method":"nope/nope"}\n',
        b'{"jsonrpc":"2.0","id":5,"method":"ping"}\n',
    ])
    by_id = {m.get("id"): m for m in out}
    assert len(out) == 8
    errors = [m["error"]["code"] for m in out if m.get("id") is None]
    assert errors.count(-32700) == 1  # the non-JSON line
    assert -32600 in errors  # the method that is not a string, the batch outside 2025-03-26
    assert by_id[8]["error"]["code"] == -32600
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert by_id[4]["error"]["code"] == -32601
    assert by_id[5]["result"] == {}
    assert 3 not in by_id  # the batch was refused as a whole


def test_batches_are_answered_under_2025_03_26() -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "a"}}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
        {"jsonrpc": "2.0", "id": 11, "method": "ping"},
    ]
    out = _exchange([
        _init("2025-03-26"),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        json.dumps(batch).encode() + b"\n",
    ])
    assert out[0]["id"] == 1
    answers = out[1]
    assert isinstance(answers, list)
    assert {m["id"] for m in answers} == {10, 11}
    assert next(m for m in answers if m["id"] == 10)["result"]["content"][0]["text"] == "a"


def test_oversized_lines_are_refused_and_skipped() -> None:
    from mcpcli.core.protocol import MAX_MESSAGE_BYTES

    huge = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (MAX_MESSAGE_BYTES + 10) + b'"}}\n'
    out = _exchange([huge, _init("2025-11-25", rid=2)])
    assert out[0]["error"]["code"] == -32600 and out[0]["id"] is None
    assert out[1]["id"] == 2 and "result" in out[1]
    assert len(out) == 2


@pytest.mark.parametrize("protocol", ALL)
def test_end_of_input_stops_the_server(protocol: str) -> None:
    proc = subprocess.run([sys.executable, DEMO], input=b"", capture_output=True, timeout=30)
    assert proc.returncode == 0
    assert proc.stdout == b""


def test_end_of_input_answers_what_was_read_and_ends_listens() -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    listen = {"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen",
              "params": {"_meta": meta, "notifications": {"toolsListChanged": True}}}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"_meta": meta, "name": "echo", "arguments": {"text": "last words"}}}
    out = _exchange([json.dumps(listen).encode() + b"\n", json.dumps(call).encode() + b"\n"])
    by_id = {m.get("id"): m for m in out if "id" in m}
    assert by_id[2]["result"]["content"][0]["text"] == "last words"
    ack = next(m for m in out if m.get("method") == "notifications/subscriptions/acknowledged")
    assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub"
    assert by_id["sub"]["result"]["resultType"] == "complete"
    assert by_id["sub"]["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub"


@pytest.mark.parametrize("how", ["client gone", "end of input"])
@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
def test_a_call_still_running_at_shutdown_is_cancelled(protocol: str, how: str) -> None:
    """Closing our stdout cancels at once; end of input after a short grace period."""
    env = {**os.environ, "DEMO_EOF_GRACE": "0.2"}
    proc = subprocess.Popen(
        [sys.executable, DEMO], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    assert proc.stderr is not None
    try:
        meta = {}
        if protocol == "2026-07-28":
            meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": protocol,
                              "io.modelcontextprotocol/clientCapabilities": {}}}
        else:
            proc.stdin.write(_init(protocol))
            proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "slow", **meta}}
        proc.stdin.write(json.dumps(call).encode() + b"\n")
        proc.stdin.flush()
        for line in proc.stderr:  # bounded by the timeout below
            if b"slow: started" in line:
                break
        if how == "client gone":
            proc.stdout.close()  # nobody reads our answers any more
        proc.stdin.close()
        proc.wait(timeout=10)
        rest = proc.stderr.read()
        assert b"slow: cancelled" in rest
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
        if not proc.stdout.closed:
            proc.stdout.close()


def test_nesting_bombs_and_huge_batches_are_refused() -> None:
    from mcpcli.server.stdio import MAX_BATCH

    ping = {"jsonrpc": "2.0", "method": "ping"}
    batch = [{**ping, "id": n} for n in range(MAX_BATCH + 1)]
    out = _exchange([
        b"[" * 100_000 + b"\n",
        _init("2025-03-26"),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        json.dumps(batch).encode() + b"\n",
        b'{"jsonrpc":"2.0","id":"last","method":"ping"}\n',
    ])
    errors = [m["error"] for m in out if "error" in m]
    assert errors[0]["code"] == -32700
    assert errors[1]["code"] == -32600 and "batch" in errors[1]["message"]
    assert out[-1] == {"jsonrpc": "2.0", "id": "last", "result": {}}
