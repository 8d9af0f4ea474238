"""`mcp serve --http` flags: extra allowed Host names and Origins (reverse proxies, web apps), SSE polling."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import REPO, free_port, mcp, wait_until

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
            [sys.executable, "-m", "mcpcli", "serve", *args, "--http", f"127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fh,
        )
    try:
        wait_until(lambda: proc.poll() is not None or "serving" in log.read_text(), what="the server")
        assert proc.poll() is None, log.read_text()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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


def test_allow_flags_need_http() -> None:
    r = mcp("serve", str(REPO / "examples/tools.yaml"), "--allow-host", "x.example")
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
    (["--http", "0", "--sse-poll-after", "nan"], "expected a number of seconds"),
    (["--http", "0", "--sse-poll-after", "soon"], "is not a valid float"),
])
def test_sse_poll_after_needs_http_and_a_positive_number(args: list[str], fragment: str) -> None:
    r = mcp("serve", str(REPO / "examples/tools.yaml"), *args)
    assert r.code == 2, r
    assert fragment in r.stderr
    assert "Traceback" not in r.stderr
