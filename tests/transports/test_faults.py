"""Broken and hostile HTTP servers: a clear one-line error and the documented exit code.

Exit 4 for transport faults (with the status and the first 200 bytes of the
body), 3 for authorization, 124 for a server that does not answer in time.
Never a traceback, never a hang. The fake server runs in a thread, `mcp` in process.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable

import pytest
from helpers import free_port, mcp_in
from httpfake import (
    ECHO_TOOL,
    FakeHTTP,
    Handler,
    Reply,
    Req,
    error,
    json_reply,
    legacy_mcp,
    modern_mcp,
    result,
    sse_event,
    sse_reply,
)

Fake = Callable[[Handler], FakeHTTP]


def one_line(stderr: str) -> str:
    """The error line (a hint line may follow); checks there is no traceback."""
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.startswith("mcp: error:")]
    assert len(lines) == 1, stderr
    return lines[0]


def test_connection_refused_exits_4() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    r = mcp_in("tools", "list", url)
    assert r.code == 4, r
    assert f"cannot connect to {url}" in one_line(r.stderr)
    assert r.stdout == ""


def test_an_html_page_is_not_an_mcp_server(fake: Fake) -> None:
    page = b"<!DOCTYPE html>\n<html><head><title>Welcome</title></head><body>" + b"x" * 400 + b"</body></html>"
    server = fake(lambda req: Reply(200, {"Content-Type": "text/html; charset=utf-8"}, page))
    r = mcp_in("tools", "list", server.url)
    assert r.code == 4, r
    line = one_line(r.stderr)
    assert "HTTP 200 OK with Content-Type text/html is not an MCP response" in line
    assert "<!DOCTYPE html> <html><head><title>Welcome</title>" in line
    assert "x" * 200 not in line  # only the first 200 bytes


def test_a_404_page_everywhere_names_both_transports(fake: Fake) -> None:
    server = fake(lambda req: Reply(404, {"Content-Type": "text/html"}, b"<h1>Not Found</h1>"))
    r = mcp_in("tools", "list", server.url)
    assert r.code == 4, r
    line = one_line(r.stderr)
    assert "HTTP 404 Not Found" in line and "HTTP+SSE" in line
    # Tried: the modern probe, initialize over Streamable HTTP, then the SSE GET.
    assert [q.method for q in server.requests] == ["POST", "POST", "GET"]


def test_server_error_500_exits_4_with_its_body(fake: Fake) -> None:
    server = fake(lambda req: Reply(500, {"Content-Type": "text/plain"}, b"upstream\x1b[31m exploded\n"))
    r = mcp_in("tools", "list", server.url)
    assert r.code == 4, r
    assert "HTTP 500 Internal Server Error: upstream\\x1b[31m exploded" in one_line(r.stderr)


def test_500_with_a_json_rpc_error_is_still_a_server_fault(fake: Fake) -> None:
    legacy = legacy_mcp()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call":
            return error(req, -32603, "Internal server error", status=500)
        return legacy(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x")
    assert r.code == 4, r
    assert "HTTP 500" in one_line(r.stderr)


def test_invalid_json_exits_4(fake: Fake) -> None:
    server = fake(lambda req: Reply(200, {"Content-Type": "application/json"}, b'{"jsonrpc": "2.0", "id": 1, "res'))
    r = mcp_in("tools", "list", server.url)
    assert r.code == 4, r
    assert 'invalid JSON: {"jsonrpc": "2.0", "id": 1, "res' in one_line(r.stderr)


def test_truncated_sse_stream_on_a_legacy_server_exits_4(fake: Fake) -> None:
    legacy = legacy_mcp()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call":
            # Starts the stream, sends a progress note, then closes: no ids, so no resuming.
            note = {"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "working"}}
            return sse_reply(sse_event(note))
        return legacy(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x")
    assert r.code == 4, r
    assert "ended before the response (truncated SSE stream)" in one_line(r.stderr)
    assert len(server.calls("tools/call")) == 1


def test_truncated_stream_on_a_modern_server_is_reissued_once_with_a_new_id(fake: Fake) -> None:
    modern = modern_mcp()
    broken = {"left": 1}

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call" and broken["left"] > 0:
            broken["left"] -= 1
            return sse_reply(b": starting\n\n")
        if req.rpc_method == "tools/call":
            value = {"resultType": "complete", "content": [{"type": "text", "text": "second time"}]}
            return sse_reply(sse_event({"jsonrpc": "2.0", "id": req.rpc["id"], "result": value}))
        return modern(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x")
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "second time"
    ids = [q.rpc["id"] for q in server.calls("tools/call")]
    assert len(ids) == 2 and ids[0] != ids[1]


def test_modern_stream_that_always_breaks_gives_up(fake: Fake) -> None:
    modern = modern_mcp()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call":
            return sse_reply(b"")
        return modern(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x")
    assert r.code == 4, r
    assert "twice (truncated SSE stream)" in one_line(r.stderr)
    assert len(server.calls("tools/call")) == 2


def test_oversized_json_response_is_capped(fake: Fake) -> None:
    modern = modern_mcp()
    big = 17 * 1024 * 1024

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call":
            text = "x" * big
            return result(req, {"resultType": "complete", "content": [{"type": "text", "text": text}]})
        return modern(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x")
    assert r.code == 4, r
    assert "larger than 16777216 bytes" in one_line(r.stderr)


@pytest.mark.slow
def test_sse_event_that_never_ends_is_capped(fake: Fake) -> None:
    modern = modern_mcp()

    def endless() -> Iterable[bytes]:
        line = b"data: " + b"y" * 65536 + b"\n"
        for _ in range(400):  # 26 MB of one event, never dispatched
            yield line

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call":
            return Reply(200, {"Content-Type": "text/event-stream"}, endless())
        return modern(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x")
    assert r.code == 4, r
    assert "SSE event larger than 16777216 bytes" in one_line(r.stderr)


def test_redirect_loop_exits_4(fake: Fake) -> None:
    def handle(req: Req) -> Reply:
        target = "/b" if req.path == "/mcp" else "/mcp"
        return Reply(307, {"Location": target, "Content-Length": "0"}, b"")

    server = fake(handle)
    r = mcp_in("tools", "list", server.url)
    assert r.code == 4, r
    assert "redirect loop" in one_line(r.stderr)


def test_too_many_redirects_exits_4(fake: Fake) -> None:
    def handle(req: Req) -> Reply:
        n = int(req.path.rsplit("/", 1)[-1]) if req.path[-1].isdigit() else 0
        return Reply(308, {"Location": f"/hop/{n + 1}"}, b"")

    server = fake(handle)
    r = mcp_in("tools", "list", server.url)
    assert r.code == 4, r
    assert "too many redirects" in one_line(r.stderr)
    assert len(server.requests) <= 7


@pytest.mark.slow
def test_slow_server_times_out_with_124(fake: Fake) -> None:
    release = threading.Event()

    def handle(req: Req) -> Reply:
        release.wait(20)
        return json_reply({})

    server = fake(handle)
    try:
        r = mcp_in("tools", "list", server.url, "--timeout", "0.5")
    finally:
        release.set()
    assert r.code == 124, r
    assert "timed out" in one_line(r.stderr)


@pytest.mark.slow
def test_slow_tool_call_times_out_with_124_and_closes_its_stream(fake: Fake) -> None:
    modern = modern_mcp()
    release = threading.Event()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call":
            return sse_reply(b": working\n\n", hold=release)
        return modern(req)

    server = fake(handle)
    try:
        r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x", "--timeout", "0.5")
    finally:
        release.set()
    assert r.code == 124, r
    assert "tools/call timed out" in one_line(r.stderr)
    # 2026-07-28: cancellation is closing the stream, never a notifications/cancelled POST.
    assert server.calls("notifications/cancelled") == []


def test_expired_session_is_reinitialised_once(fake: Fake) -> None:
    legacy = legacy_mcp()
    expired = {"done": False}

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call" and not expired["done"]:
            expired["done"] = True
            return Reply(404, {"Content-Type": "text/plain"}, b"session not found")
        return legacy(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=again")
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "echo: again"
    assert len(server.calls("initialize")) == 2
    calls = server.calls("tools/call")
    assert [c.header("mcp-session-id") for c in calls] == ["s1", "s2"]


def test_session_that_keeps_expiring_exits_4(fake: Fake) -> None:
    legacy = legacy_mcp()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/list":
            return Reply(404, {}, b"")
        return legacy(req)

    server = fake(handle)
    r = mcp_in("tools", "list", server.url)
    assert r.code == 4, r
    assert "the server ended the session (HTTP 404)" in one_line(r.stderr)
    assert len(server.calls("initialize")) == 2


def test_401_without_credentials_exits_3(fake: Fake) -> None:
    server = fake(lambda req: Reply(401, {"WWW-Authenticate": 'Bearer realm="x"'}, b"login first"))
    r = mcp_in("tools", "list", server.url, "--no-auth")
    assert r.code == 3, r
    assert "HTTP 401 Unauthorized: login first" in one_line(r.stderr)
    # Never a fallback to HTTP+SSE on 401.
    assert all(q.method == "POST" for q in server.requests)


def test_rejected_bearer_token_exits_3(fake: Fake) -> None:
    server = fake(lambda req: Reply(401, {}, b""))
    r = mcp_in("tools", "list", server.url, env={"MCP_BEARER_TOKEN": "wrong"})
    assert r.code == 3, r
    assert "rejected the token" in r.stderr
    assert "wrong" not in r.stderr
    assert len(server.requests) == 1


def test_403_exits_3(fake: Fake) -> None:
    server = fake(lambda req: Reply(403, {"Content-Type": "text/plain"}, b"origin not allowed"))
    r = mcp_in("tools", "list", server.url)
    assert r.code == 3, r
    assert "HTTP 403 Forbidden: origin not allowed" in one_line(r.stderr)


def test_sse_endpoint_on_another_origin_is_refused(fake: Fake) -> None:
    other = fake(lambda req: Reply(202))

    def handle(req: Req) -> Reply:
        if req.method == "GET":
            return sse_reply(sse_event(f"http://127.0.0.1:{other.port}/steal", event="endpoint"),
                             hold=server.stopping)
        return Reply(405)

    server = fake(handle)
    r = mcp_in("tools", "list", server.url, "--transport", "sse")
    assert r.code == 4, r
    assert "points to another origin" in one_line(r.stderr)
    assert other.requests == []


@pytest.mark.slow
def test_sse_stream_without_an_endpoint_event_times_out_cleanly(fake: Fake) -> None:
    def handle(req: Req) -> Reply:
        return sse_reply(b": hello\n\n", hold=server.stopping)

    server = fake(handle)
    r = mcp_in("tools", "list", server.url, "--transport", "sse", "--timeout", "0.5")
    assert r.code == 4, r
    assert "no endpoint event" in one_line(r.stderr)


def test_modern_error_status_with_json_rpc_body_is_an_rpc_error(fake: Fake) -> None:
    modern = modern_mcp()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call":
            return error(req, -32602, "Unknown tool: echo", status=400)
        return modern(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x")
    assert r.code == 5, r
    assert "Unknown tool: echo (code -32602)" in one_line(r.stderr)


def test_invalid_port_is_a_usage_error() -> None:
    r = mcp_in("tools", "list", "http://127.0.0.1:99999/mcp")
    assert r.code == 2, r
    assert "invalid port '99999'" in one_line(r.stderr)


def test_userinfo_in_a_plain_url_is_basic_auth_and_never_shown(fake: Fake) -> None:
    server = fake(modern_mcp())
    url = server.url.replace("http://", "http://ada:s%3Acret@")
    r = mcp_in("tools", "list", url)
    assert r.code == 0, r
    assert server.requests[0].header("authorization") == "Basic YWRhOnM6Y3JldA=="
    bad = mcp_in("tools", "list", url.replace(f":{server.port}", ":1"))
    assert bad.code == 4, bad
    assert "cret" not in bad.stderr and "ada" not in bad.stderr


# -- broken answers fail their request at once (the stream stays open) ----------------------


def _broken_answer(rid: object, kind: str) -> bytes:
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"result":'
    return {
        "utf8": head + b'{"content":[{"type":"text","text":"\xff\xfe"}]}}',
        "deep": head + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "truncated": head + b'{"content":[{"type":"te',
    }[kind]


@pytest.mark.parametrize("kind", ["deep", "truncated"])
def test_a_broken_sse_event_fails_its_request_at_once(fake: Fake, kind: str) -> None:
    legacy = legacy_mcp()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call":
            event = b"event: message\ndata: " + _broken_answer(req.rpc["id"], kind) + b"\n\n"
            return sse_reply(event, hold=server.stopping)  # and the stream stays open
        return legacy(req)

    server = fake(handle)
    # A regression waits out --timeout (60 s); the subprocess timeout (20 s) fails it first.
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x", "--timeout", "60", timeout=20)
    assert r.code == 4, r
    assert "the server sent a message that is not JSON-RPC" in one_line(r.stderr)


def test_invalid_utf8_in_an_sse_event_is_replaced_not_waited_for(fake: Fake) -> None:
    legacy = legacy_mcp()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call":
            event = b"event: message\ndata: " + _broken_answer(req.rpc["id"], "utf8") + b"\n\n"
            return sse_reply(event, hold=server.stopping)
        return legacy(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x", "--timeout", "60", timeout=20)
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "\ufffd\ufffd"
    assert "mcp: warning:" in r.stderr and "invalid UTF-8 on an SSE stream" in r.stderr
    assert len(r.stderr.splitlines()) == 1, r


@pytest.mark.parametrize(("kind", "problem"), [("deep", "nested too deeply"), ("utf8", "invalid JSON")])
def test_a_broken_json_body_exits_4(fake: Fake, kind: str, problem: str) -> None:
    legacy = legacy_mcp()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call":
            return Reply(200, {"Content-Type": "application/json"}, _broken_answer(req.rpc["id"], kind))
        return legacy(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x", "--timeout", "60", timeout=20)
    assert r.code == 4, r
    assert problem in one_line(r.stderr)


@pytest.mark.parametrize("kind", ["deep", "truncated"])
def test_a_broken_message_on_a_legacy_sse_stream_fails_its_request_at_once(fake: Fake, kind: str) -> None:
    posted = threading.Condition()
    outbox: list[bytes] = []

    def stream() -> Iterable[bytes]:
        yield sse_event("/messages?session=abc", event="endpoint")
        sent = 0
        while not server.stopping.is_set():
            with posted:
                posted.wait(timeout=0.2)
                pending = outbox[sent:]
            yield from pending
            sent += len(pending)

    def handle(req: Req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"Content-Type": "text/event-stream"}, stream())
        rpc = req.rpc
        if rpc.get("method") == "initialize":
            answer = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "old-sse", "version": "1"}}
            event = sse_event({"jsonrpc": "2.0", "id": rpc["id"], "result": answer}, event="message")
        elif rpc.get("method") == "tools/list":
            event = sse_event({"jsonrpc": "2.0", "id": rpc["id"], "result": {"tools": [ECHO_TOOL]}},
                              event="message")
        elif rpc.get("method") == "tools/call":
            event = b"event: message\ndata: " + _broken_answer(rpc["id"], kind) + b"\n\n"
        else:
            return Reply(202, {}, b"Accepted")
        with posted:
            outbox.append(event)
            posted.notify_all()
        return Reply(202, {}, b"Accepted")

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x", "--transport", "sse",
               "--timeout", "60", timeout=20)
    assert r.code == 4, r
    assert "the server sent a message that is not JSON-RPC" in one_line(r.stderr)


def test_a_json_rpc_error_message_is_escaped_on_stderr(fake: Fake) -> None:
    evil = "no\x1b]52;c;eA==\x07\u202eexe.\u2067\u200b\u2028\ufeff\x85"
    legacy = legacy_mcp()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call":
            return error(req, -32000, evil)
        return legacy(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x")
    assert r.code == 5, r
    line = one_line(r.stderr)
    assert "no\\x1b]52;c;eA==\\x07\\u202eexe.\\u2067\\u200b\\u2028\\ufeff\\x85 (code -32000)" in line
    assert not any(ch in r.stderr for ch in "\x1b\x07\u202e\u2067\u200b\u2028\ufeff\x85")
