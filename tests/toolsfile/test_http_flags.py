"""`mcp serve --http` flags: the bearer token (given, generated, or --no-auth), extra allowed
Host names and Origins (reverse proxies, web apps), SSE polling."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from helpers import REPO, free_port, mcp_in, stop_process, wait_until

# Each test here runs real processes (`mcp`, servers) for a second or so: not in scripts/test --fast.
pytestmark = pytest.mark.slow

INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}},
}


@contextmanager
def _serving(args: list[str], log: Path) -> Iterator[str]:
    """`mcp serve ARGS --http 127.0.0.1:PORT` running; yields its URL, stops it (SIGTERM) after."""
    port = free_port()
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpcli", "serve", *args, "--http", f"127.0.0.1:{port}", "--no-auth"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fh,
        )
    try:
        wait_until(lambda: proc.poll() is not None or "serving" in log.read_text(), what="the server")
        assert proc.poll() is None, log.read_text()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    args = [str(REPO / "examples/tools.yaml"), "--allow-host", "mcp.proxy.example",
            "--allow-origin", "https://app.example"]
    with _serving(args, tmp_path / "serve.log") as url:
        yield url


def _post(url: str, **headers: str) -> int:
    import httpx

    base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    return httpx.post(url, json=INIT, headers={**base, **headers}, timeout=10).status_code


def test_extra_host_and_origin_are_accepted_others_refused(served: str) -> None:
    assert _post(served) == 200                                   # loopback still works
    assert _post(served, Host="mcp.proxy.example") == 200          # the proxy's public name
    assert _post(served, Host="evil.example") == 403               # DNS rebinding stays blocked
    assert _post(served, Origin="https://app.example") == 200
    assert _post(served, Origin="https://evil.example") == 403


# -- the token: given, generated (the default), or none with --no-auth ----------------------


def test_without_a_token_one_is_generated_and_shown_once_on_stderr(tmp_path: Path) -> None:
    """Loopback is shared by every local user: the default server needs a token, shown on stderr."""
    import httpx

    port = free_port()
    log, out = tmp_path / "serve.log", tmp_path / "serve.out"
    with open(log, "w") as err, open(out, "w") as stdout:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpcli", "serve", str(REPO / "examples/tools.yaml"),
             "--http", f"127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL, stdout=stdout, stderr=err,
        )
    try:
        wait_until(lambda: proc.poll() is not None or "serving" in log.read_text(), what="the server")
        assert proc.poll() is None, log.read_text()
        text = log.read_text()
        found = re.search(r"MCP_BEARER_TOKEN=(\S+) mcp tools list (\S+)", text)
        assert found, text
        token, url = found.groups()
        assert url == f"http://127.0.0.1:{port}/mcp"
        assert len(token) >= 43 and text.count(token) == 2, text  # the command line and the JSON
        snippet = json.loads(next(line for line in text.splitlines() if "mcpServers" in line))
        assert snippet == {"mcpServers": {"tools": {
            "type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}}}
        base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        assert httpx.post(url, json=INIT, headers=base, timeout=10).status_code == 401
        wrong = {**base, "Authorization": "Bearer " + token[:-1]}
        assert httpx.post(url, json=INIT, headers=wrong, timeout=10).status_code == 401
        listed = mcp_in("tools", "list", url, "--json", env={"MCP_BEARER_TOKEN": token})  # as printed
        assert listed.code == 0, listed
        assert "word_count" in listed.stdout
        refused = mcp_in("tools", "list", url, "--no-auth")
        assert refused.code == 3, refused
        unsigned = mcp_in("tools", "list", url)  # a script without the token: says how to give it
        assert unsigned.code == 3, unsigned
        assert "MCP_BEARER_TOKEN" in unsigned.stderr and "Traceback" not in unsigned.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert out.read_text() == ""  # stdout carries data only
    assert log.read_text().count("generated a bearer token") == 1


@pytest.mark.parametrize(("args", "fragment"), [
    (["--http", "0.0.0.0:0", "--no-auth"], "binding beyond loopback needs --auth-token"),
    (["--http", "0", "--no-auth", "--auth-token", "t"], "contradict each other"),
    (["--no-auth"], "--no-auth applies to --http only"),
])
def test_no_auth_is_for_loopback_http_only(args: list[str], fragment: str) -> None:
    r = mcp_in("serve", str(REPO / "examples/tools.yaml"), *args)
    assert r.code == 2, r
    assert fragment in r.stderr
    assert "Traceback" not in r.stderr


# -- stopping with calls in flight -----------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("protocol", [[], ["--protocol", "2025-11-25"]], ids=["2026", "2025"])
def test_sigterm_answers_a_running_call_and_our_client_exits_4(
    tmp_path: Path, protocol: list[str], stream: bool
) -> None:
    """SIGTERM: the call in flight is answered "server shutting down" after the drain; the client
    reports it at once (exit 4) instead of waiting out its timeout. With `stream`, the tool
    reports progress first, so the answer is already an SSE stream when the server stops."""
    marker = tmp_path / "started"
    tools = tmp_path / "tools.yaml"
    progress = "mcp script progress 1 2; " if stream else ""
    tools.write_text(
        "version: 1\ntools:\n  - name: slow\n    description: Starts, then takes a minute.\n"
        "    run:\n      shell: sh\n"
        f"      script: '{progress}touch {marker}; sleep 60'\n"
    )
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as fh:
        server = subprocess.Popen(
            [sys.executable, "-m", "mcpcli", "serve", str(tools), "--http", f"127.0.0.1:{port}", "--no-auth"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fh,
        )
    client = None
    try:
        wait_until(lambda: server.poll() is not None or "serving" in log.read_text(), what="the server")
        client = subprocess.Popen(
            [sys.executable, "-m", "mcpcli", "tools", "call", f"http://127.0.0.1:{port}/mcp", "slow",
             "--timeout", "120", *protocol],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        wait_until(lambda: marker.exists() or client.poll() is not None, what="the tool to start")
        assert client.poll() is None
        server.send_signal(signal.SIGTERM)
        out, err = client.communicate(timeout=30)  # the drain is 2 s; the call's timeout 120 s
        assert client.returncode == 4, err
        assert "server shutting down" in err
        assert len(err.strip().splitlines()) == 1, err
        assert "Traceback" not in err
        assert out == ""
        assert server.wait(timeout=30) in (0, 130)
    finally:
        for proc in (client, server):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def test_sigterm_under_load_leaves_no_process(tmp_path: Path) -> None:
    """SIGTERM while the server runs scripts of every kind: 2026 calls, a legacy session's call
    of a script that ignores SIGTERM, a task, a call whose client hangs up, and a completion
    command (run in the request itself) whose kill_grace outlasts uvicorn's own shutdown
    timeout of before. Once the server has exited, none of the scripts is left running (and
    the suite's subreaper sees no leftover either); the server's log has no traceback."""
    import socket
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from mcpcli.toolsfile.watchdog import group_alive

    pids = tmp_path / "pids"
    started = f"echo $$ >> {pids}; "
    tools = tmp_path / "tools.yaml"
    tools.write_text(f"""version: 1
tools:
  - name: long
    description: Runs a minute.
    run: {{shell: sh, script: "{started}sleep 60"}}
  - name: stubborn
    description: Ignores SIGTERM.
    run: {{shell: sh, script: "{started}trap '' TERM; sleep 60", kill_grace: 1s}}
  - name: job
    description: A task.
    task: required
    run: {{shell: sh, script: "{started}sleep 60"}}
prompts:
  - name: greet
    description: Completes its argument slowly.
    arguments:
      who:
        complete: {{shell: sh, script: "{started}trap '' TERM; sleep 60", kill_grace: 6s}}
    messages:
      - text: "Hello {{{{ who }}}}"
""")
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
    accept = {"Accept": "application/json, text/event-stream"}

    def modern(method: str, params: dict, name: str | None = None, timeout: float = 60) -> None:
        headers = {**accept, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method,
                   **({"Mcp-Name": name} if name else {})}
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
        with suppress(httpx.HTTPError):
            httpx.post(url, json=body, headers=headers, timeout=timeout)

    def legacy_stubborn() -> None:
        with httpx.Client(timeout=60, headers=accept) as http:
            sid = http.post(url, json=INIT).headers["mcp-session-id"]
            headers = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
            http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
            with suppress(httpx.HTTPError):
                http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                     "params": {"name": "stubborn", "arguments": {}}}, headers=headers)

    def running() -> list[int]:
        return [int(line) for line in pids.read_text().split()] if pids.exists() else []

    log = tmp_path / "serve.log"
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with open(log, "w") as fh:
        server = subprocess.Popen(
            [sys.executable, "-m", "mcpcli", "serve", str(tools), "--http", f"127.0.0.1:{port}", "--no-auth"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fh,
        )
    try:
        wait_until(lambda: server.poll() is not None or "serving" in log.read_text(), what="the server")
        with ThreadPoolExecutor(8) as pool:
            for _ in range(3):
                pool.submit(modern, "tools/call", {"name": "long", "arguments": {}}, "long")
            pool.submit(legacy_stubborn)
            pool.submit(modern, "tools/call", {"name": "job", "arguments": {}}, "job")
            pool.submit(modern, "completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                                        "argument": {"name": "who", "value": "a"}})
            wait_until(lambda: len(running()) >= 6, 30, "the scripts to start")
            # A 2026 client that hangs up once its call's script runs (that cancels the call).
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": "long", "arguments": {}, "_meta": meta}}).encode()
            with socket.create_connection(("127.0.0.1", port)) as hangs_up:
                hangs_up.sendall(
                    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                    b"Mcp-Method: tools/call\r\nMcp-Name: long\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                wait_until(lambda: len(running()) >= 7, 30, "the script whose client hangs up")
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=60) == 0
        left = [pid for pid in running() if group_alive(pid)]  # each script leads its group
        assert not left, f"scripts still running after the server exited: {left}"
        assert "Traceback" not in log.read_text()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_allow_flags_need_http() -> None:
    r = mcp_in("serve", str(REPO / "examples/tools.yaml"), "--allow-host", "x.example")
    assert r.code == 2
    assert "apply to --http only" in r.stderr


# -- --sse-poll-after: SSE polling (SEP-1699) ------------------------------------------------


def _events(text: str) -> list[dict[str, str]]:
    """The SSE events of a response body, as field -> value."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            name, _, value = line.partition(":")
            if name:
                fields[name] = fields.get(name, "") + value.removeprefix(" ")
        if fields:
            events.append(fields)
    return events


def test_sse_poll_after_closes_a_slow_call_and_the_client_resumes(tmp_path: Path) -> None:
    import httpx

    gate = tmp_path / "gate"
    tools = tmp_path / "tools.yaml"
    tools.write_text(
        "version: 1\ntools:\n  - name: slow\n    description: Waits for the test to open the gate.\n"
        "    run:\n      shell: sh\n"
        f"      script: 'while [ ! -e {gate} ]; do sleep 0.01; done; echo opened'\n"
    )
    sse = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with _serving([str(tools), "--sse-poll-after", "0.2"], tmp_path / "serve.log") as url, \
            httpx.Client(timeout=10) as http:
        init = http.post(url, json=INIT, headers=sse)
        session = {**sse, "Mcp-Session-Id": init.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-11-25"}
        http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow", "arguments": {}}}
        first = _events(http.post(url, json=call, headers=session).text)  # closed without the answer
        assert first[0]["data"] == "" and first[0]["id"] and first[0]["retry"] == "500", first
        assert not any('"result"' in e.get("data", "") for e in first), first
        gate.touch()
        resumed = http.get(url, headers={**session, "Accept": "text/event-stream",
                                         "Last-Event-ID": first[-1]["id"]})
        answers = [json.loads(e["data"]) for e in _events(resumed.text) if e.get("data")]
        assert answers[-1]["id"] == 2
        assert answers[-1]["result"]["content"] == [{"type": "text", "text": "opened\n"}]


@pytest.mark.parametrize(("args", "fragment"), [
    (["--sse-poll-after", "1"], "--sse-poll-after applies to --http only"),
    (["--http", "0", "--sse-poll-after", "0"], "not in the range x>0"),
    (["--http", "0", "--sse-poll-after", "nan"], "'nan' is not a finite number"),
    (["--http", "0", "--sse-poll-after", "soon"], "is not a valid float"),
])
def test_sse_poll_after_needs_http_and_a_positive_number(args: list[str], fragment: str) -> None:
    r = mcp_in("serve", str(REPO / "examples/tools.yaml"), *args)
    assert r.code == 2, r
    assert fragment in r.stderr
    assert "Traceback" not in r.stderr
