"""The README's deployment: two `mcp serve --http` replicas behind its nginx site. 2026-07-28
requests are spread over both; a 2025-era session sticks to the replica that created it
(affinity on Mcp-Session-Id); a replica that does not know a session answers 404."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, Peers, mcp_in, wait_until

from .conftest import Replica, nginx

#: A tool that says which replica ran it (each replica has REPLICA=its name).
WHO = """\
version: 1
defaults:
  inherit_env: [PATH, REPLICA]
tools:
  - name: who
    description: The name of the replica that ran this call.
    run:
      argv: [sh, -c, 'printf %s "$REPLICA"']
  - name: later
    description: The same, as a task.
    task: {mode: required, after: 0s, poll_interval: 100ms}
    run:
      argv: [sh, -c, 'printf %s "$REPLICA"']
"""

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def two(tmp_path: Path, replicas: Callable[..., Replica], redis_url: str) -> tuple[Replica, Replica]:
    """The README's replicas: --replica NAME, tasks in Redis."""
    tools = tmp_path / "tools.yaml"
    tools.write_text(textwrap.dedent(WHO), encoding="utf-8")
    env = {"MCP_SERVE_REDIS_URL": redis_url}
    return (replicas(tools, "a", "--replica", "a", "--task-store", "redis", env=env),
            replicas(tools, "b", "--replica", "b", "--task-store", "redis", env=env))


def _modern(client: Any, url: str, method: str, params: dict[str, Any]) -> Any:
    """One 2026-07-28 request: a single POST, complete in itself; its result."""
    from mcpcli.core.protocol import (
        CLIENT_CAPABILITIES_KEY,
        CLIENT_INFO_KEY,
        PROTOCOL_VERSION_KEY,
        TASKS_EXTENSION,
    )

    meta = {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_INFO_KEY: {"name": "t", "version": "1"},
            CLIENT_CAPABILITIES_KEY: {"extensions": {TASKS_EXTENSION: {}}}}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    headers = {**HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method,
               "Mcp-Name": params.get("name") or params.get("taskId") or ""}
    r = client.post(url, json=body, headers=headers, timeout=20)
    assert r.status_code == 200, (r.status_code, r.text)
    return r.json()["result"]


def _who_modern(client: Any, url: str) -> str:
    result = _modern(client, url, "tools/call", {"name": "who", "arguments": {}})
    return "".join(b["text"] for b in result["content"])


def _rpc(client: Any, url: str, body: dict[str, Any], session: str | None) -> Any:
    headers = dict(HEADERS)
    if session:
        headers |= {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    return client.post(url, json=body, headers=headers, timeout=20)


def _open_session(client: Any, url: str) -> str:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    r = _rpc(client, url, init, None)
    assert r.status_code == 200, r.text
    session = r.headers["mcp-session-id"]
    done = _rpc(client, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    assert done.status_code == 202, done.text
    return str(session)


def _who_in_session(client: Any, url: str, session: str, rid: int) -> str:
    call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "who", "arguments": {}}}
    r = _rpc(client, url, call, session)
    assert r.status_code == 200, (r.status_code, r.text)
    text = r.text
    if r.headers["content-type"].startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:") and '"result"' in line)
    return "".join(b["text"] for b in json.loads(text)["result"]["content"])


@pytest.mark.slow
@pytest.mark.peer
def test_a_session_unknown_to_a_replica_is_answered_404(two: tuple[Replica, Replica]) -> None:
    """Sessions are per replica: one opened on A is unknown to B, which says so with the
    specification's 404, so the client starts a new session instead of failing obscurely."""
    import httpx

    a, b = two
    with httpx.Client() as client:
        session = _open_session(client, a.url)
        assert session.startswith("a.")  # --replica a: the id names its replica
        assert _who_in_session(client, a.url, session, 2) == "a"
        ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
        r = _rpc(client, b.url, ping, session)
        assert r.status_code == 404
        assert r.json()["error"]["message"] == "Session not found"


@pytest.mark.slow
@pytest.mark.peer
def test_the_readme_nginx_site_spreads_modern_requests_and_pins_sessions(
    two: tuple[Replica, Replica], peers: Peers, tmp_path: Path,
) -> None:
    import httpx

    a, b = two
    with nginx(peers, tmp_path / "nginx", [a.port, b.port]) as url:
        # 2026-07-28: no session, so the load balancer alternates (round-robin); both
        # replicas answer within a few calls.
        with httpx.Client() as client:
            seen = [_who_modern(client, url) for _ in range(4)]
            assert sorted(seen) == ["a", "a", "b", "b"]
            # A task started through the balancer is polled through both replicas (Redis).
            task = _modern(client, url, "tools/call", {"name": "later", "arguments": {}})["taskId"]
            wait_until(lambda: _modern(client, url, "tasks/get", {"taskId": task})["status"] == "completed",
                       what="the task to complete")
            runners = {_modern(client, url, "tasks/get", {"taskId": task})["result"]["content"][0]["text"]
                       for _ in range(4)}
            assert len(runners) == 1 and runners <= {"a", "b"}  # both replicas answer the same
        # 2025-era: each session's requests all reach the replica that created it (its id
        # names it), although new sessions are spread over both.
        owners: set[str] = set()
        with httpx.Client() as client:
            for _ in range(30):
                session = _open_session(client, url)
                assert session.split(".")[0] in ("a", "b")
                answers = {_who_in_session(client, url, session, 10 + i) for i in range(4)}
                assert answers == {session.split(".")[0]}
                owners |= answers
                if owners == {"a", "b"}:
                    break
        assert owners == {"a", "b"}


@pytest.mark.parametrize(("args", "fragment"), [
    (["--replica", "a"], "--replica applies to --http only"),
    (["--http", "0", "--replica", "a.b"], "use 1 to 64 letters, digits"),
    (["--http", "0", "--replica", ""], "use 1 to 64 letters, digits"),
])
def test_replica_needs_http_and_a_plain_name(args: list[str], fragment: str) -> None:
    """The name goes into session ids and into the balancer's patterns: nothing that could
    be mistaken for the separator or need escaping."""
    r = mcp_in("serve", str(REPO / "examples/tools.yaml"), *args)
    assert r.code == 2, r
    assert fragment in r.stderr
    assert "Traceback" not in r.stderr
