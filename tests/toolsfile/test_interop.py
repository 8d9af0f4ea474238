"""`mcp serve` as a real process: our CLI and the official Python SDK as clients, over stdio and HTTP;
shutdown and client disconnects end every running tool's process group."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import Peers, free_port, mcp, stop_process, wait_until

from mcpcli.toolsfile.watchdog import group_alive

# Each test here runs real processes (`mcp`, servers) for a second or so: not in scripts/test --fast.
pytestmark = pytest.mark.slow

HERE = Path(__file__).parent

TOOLS = """
version: 1
server: {name: interop, version: "1.2.3"}
tools:
  - name: echo
    description: echoes its text
    params: {text: {type: string}}
    run: {argv: [printf, "%s", "{{ text }}"]}
  - name: steps
    description: progress through the side channel
    run:
      shell: sh
      script: |
        mcp script progress 1 2 -m half
        mcp script progress 2 2
        echo done
  - name: ask
    description: asks the user
    run:
      shell: sh
      script: mcp script elicit "Name?" --field name --content
  - name: sleeper
    description: writes its process group id, then hangs with a grandchild
    run:
      shell: sh
      script: |
        echo $$ > "$PGID_FILE"
        sleep 300 & sleep 300 & wait
      env: {PGID_FILE: "${PGID_FILE:-/dev/null}"}
      kill_grace: 0.5s
resources:
  - {uri: "mem://hello", name: hello, text: "Hello, resource", mime_type: text/plain}
prompts:
  - {name: hi, arguments: {who: {}}, messages: [{text: "Hi {{ who }}"}]}
"""


@pytest.fixture
def tools_path(tmp_path: Path) -> Path:
    path = tmp_path / "tools.yaml"
    path.write_text(TOOLS)
    return path


def serve_argv(path: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "mcpcli", "serve", "--quiet", str(path), *extra]


@pytest.fixture
def http_server(tools_path: Path, tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    port = free_port()
    pgid_file = tmp_path / "pgid"
    env = dict(os.environ, PGID_FILE=str(pgid_file))
    log = tmp_path / "server.log"
    with open(log, "w") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpcli", "serve", str(tools_path), "--http", f"127.0.0.1:{port}", "--no-auth"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_file, env=env,
        )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        import httpx

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"server exited: {log.read_text()}")
            try:
                httpx.get(url, timeout=1)
                return True
            except httpx.TransportError:
                return False

        wait_until(up)
        yield url, proc, pgid_file
    finally:
        stop_process(proc)


# -- our own client ----------------------------------------------------------------------------


def test_our_cli_over_stdio(tools_path: Path) -> None:
    r = mcp("tools", "call", "echo", "--arg", "text=a b;$(id)", "--", *serve_argv(tools_path))
    assert r.code == 0, r
    assert r.json["content"] == [{"type": "text", "text": "a b;$(id)"}]
    r = mcp("tools", "call", "ask", "--elicit-json", '{"name": "Bo"}', "--", *serve_argv(tools_path))
    assert r.code == 0, r
    assert json.loads(r.json["content"][0]["text"]) == {"name": "Bo"}
    r = mcp("tools", "call", "echo", "--no-validate", "--arg", "text:=5", "--", *serve_argv(tools_path))
    assert r.code == 1
    assert r.json["isError"] is True
    r = mcp("resources", "read", "mem://hello", "--", *serve_argv(tools_path))
    assert r.code == 0, r
    assert "Hello, resource" in r.stdout


@pytest.mark.parametrize("protocol", ["2025-06-18", "2024-11-05"])
def test_our_cli_over_stdio_in_legacy_eras(tools_path: Path, protocol: str) -> None:
    r = mcp("tools", "call", "steps", "--protocol", protocol, "--", *serve_argv(tools_path))
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "done\n"


def test_our_cli_over_http(http_server: tuple[str, Any, Path]) -> None:
    url, _, _ = http_server
    r = mcp("tools", "call", url, "echo", "--arg", "text=over http")
    assert r.code == 0, r
    assert r.json["content"] == [{"type": "text", "text": "over http"}]
    for protocol in ("2025-11-25", "2025-03-26"):
        r = mcp("tools", "call", url, "ask", "--protocol", protocol, "--elicit-json", '{"name": "Cy"}')
        assert r.code == 0, r
        assert json.loads(r.json["content"][0]["text"]) == {"name": "Cy"}
    r = mcp("tools", "call", url, "ask", "--elicit-json", '{"name": "Di"}')
    assert r.code == 0, r
    assert json.loads(r.json["content"][0]["text"]) == {"name": "Di"}


# -- the official SDK ------------------------------------------------------------------------


def sdk(peers: Peers, target: str, mode: str) -> dict[str, Any]:
    proc = subprocess.run([peers.sdk(), str(HERE / "sdk_client.py"), target, mode], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout))


def check_sdk_view(seen: dict[str, Any]) -> None:
    assert seen["tools"] == ["echo", "steps", "ask", "sleeper"]
    assert seen["echo"] == ["hello; $(id)"]
    assert seen["steps"] == ["done\n"]
    assert seen["progress"] == [[1, 2, "half"], [2, 2, None]]
    assert json.loads(seen["ask"][0]) == {"name": "Ada"}
    assert seen["invalid"]["isError"] is True
    assert seen["resource"] == ["Hello, resource"]
    assert seen["prompt"] == ["Hi Ada"]


@pytest.mark.peer
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_official_sdk_over_stdio(peers: Peers, tools_path: Path, mode: str) -> None:
    check_sdk_view(sdk(peers, json.dumps(serve_argv(tools_path)), mode))


@pytest.mark.peer
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_official_sdk_over_http(peers: Peers, http_server: tuple[str, Any, Path], mode: str) -> None:
    url, _, _ = http_server
    check_sdk_view(sdk(peers, url, mode))


# -- shutdown and disconnects ----------------------------------------------------------------


def _start_stdio(tools_path: Path, pgid_file: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PGID_FILE=str(pgid_file))
    proc = subprocess.Popen(serve_argv(tools_path), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "sleeper", "arguments": {}}},
    ]
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    proc.stdin.flush()
    wait_until(lambda: pgid_file.exists() and pgid_file.read_text().strip())
    return proc


@pytest.mark.parametrize("how", ["eof", "sigterm", "cancel"])
def test_stdio_shutdown_and_cancel_end_the_tool_process_group(tools_path: Path, tmp_path: Path, how: str) -> None:
    pgid_file = tmp_path / "pgid"
    proc = _start_stdio(tools_path, pgid_file)
    pgid = int(pgid_file.read_text())
    assert group_alive(pgid)
    assert proc.stdin is not None
    try:
        if how == "eof":
            proc.stdin.close()
        elif how == "sigterm":
            proc.send_signal(signal.SIGTERM)
        else:
            note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
            proc.stdin.write(json.dumps(note).encode() + b"\n")
            proc.stdin.flush()
        wait_until(lambda: not group_alive(pgid), timeout=30)
    finally:
        if not proc.stdin.closed:
            proc.stdin.close()
        proc.wait(timeout=30)


def _raw_post(url: str, headers: dict[str, str], payload: dict[str, Any]) -> Any:
    """Send one POST on a raw socket, so the test controls exactly when the client goes away."""
    import socket
    from urllib.parse import urlsplit

    body = json.dumps(payload).encode()
    parts = urlsplit(url)
    head = f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Length: {len(body)}\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
    sock.sendall(head.encode() + body)
    return sock


HTTP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_http_disconnect_cancels_a_2026_call(http_server: tuple[str, Any, Path]) -> None:
    url, _, pgid_file = http_server
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}
    headers = dict(HTTP_HEADERS, **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                                    "Mcp-Name": "sleeper"})
    sock = _raw_post(url, headers, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                    "params": {"name": "sleeper", "arguments": {}, "_meta": meta}})
    with sock:
        wait_until(lambda: pgid_file.exists() and pgid_file.read_text().strip())
        pgid = int(pgid_file.read_text())
        assert group_alive(pgid)
    # The socket is closed: in 2026-07-28 a disconnect is the cancellation signal.
    wait_until(lambda: not group_alive(pgid), timeout=30)


def test_http_legacy_cancel_notification_ends_the_call(http_server: tuple[str, Any, Path]) -> None:
    import httpx

    url, _, pgid_file = http_server
    init = httpx.post(url, headers=HTTP_HEADERS, timeout=30, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    headers = dict(HTTP_HEADERS, **{"Mcp-Session-Id": init.headers["mcp-session-id"],
                                    "MCP-Protocol-Version": "2025-11-25"})
    httpx.post(url, headers=headers, timeout=30, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    with _raw_post(url, headers, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                  "params": {"name": "sleeper", "arguments": {}}}):
        wait_until(lambda: pgid_file.exists() and pgid_file.read_text().strip())
        pgid = int(pgid_file.read_text())
        assert group_alive(pgid)
        httpx.post(url, headers=headers, timeout=30, json={
            "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        wait_until(lambda: not group_alive(pgid), timeout=30)
