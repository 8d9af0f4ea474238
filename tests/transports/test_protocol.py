"""What `mcp` puts on the wire over HTTP, checked from the server side.

Legacy Streamable HTTP: session ids, MCP-Protocol-Version, the GET stream,
resuming with Last-Event-ID after `retry`, DELETE on exit. 2026-07-28:
Mcp-Method/Mcp-Name/Mcp-Param-* headers, dropping tools with invalid
x-mcp-header, one POST per cached call, era selection and its corner cases.
Credentials: custom headers, bearer tokens, redirects across origins,
proxies from the environment, TLS verification.

The fake server runs in a thread and `mcp` in process (`mcp_in`), except where a
test sends a signal.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from helpers import mcp_in, require
from httpfake import (
    ECHO_TOOL,
    FakeHTTP,
    Reply,
    Req,
    error,
    legacy_mcp,
    modern_mcp,
    result,
    sse_event,
    sse_reply,
)

Fake = Callable[..., FakeHTTP]
META_VERSION = "io.modelcontextprotocol/protocolVersion"


# -- legacy Streamable HTTP ------------------------------------------------------------


def test_legacy_session_headers_and_delete_on_exit(fake: Fake) -> None:
    server = fake(legacy_mcp())
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=hi")
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "echo: hi"
    posts = [q for q in server.requests if q.method == "POST"]
    init = next(q for q in posts if q.rpc_method == "initialize")
    assert init.header("mcp-session-id") is None
    assert init.header("accept") == "application/json, text/event-stream"
    assert init.rpc["params"]["protocolVersion"] == "2025-11-25"
    after = [q for q in posts if q.rpc_method not in ("initialize", "server/discover")]
    assert {q.rpc_method for q in after} >= {"notifications/initialized", "tools/list", "tools/call"}
    for q in after:
        assert q.header("mcp-session-id") == "s1", q.rpc_method
        assert q.header("mcp-protocol-version") == "2025-11-25", q.rpc_method
        assert q.header("mcp-method") is None  # a 2026-07-28 header only
    deletes = [q for q in server.requests if q.method == "DELETE"]
    assert len(deletes) == 1 and deletes[0].header("mcp-session-id") == "s1"


def test_delete_refused_with_405_is_fine(fake: Fake) -> None:
    legacy = legacy_mcp()
    server = fake(lambda req: Reply(405) if req.method == "DELETE" else legacy(req))
    r = mcp_in("tools", "list", server.url)
    assert r.code == 0, r
    assert r.stderr == ""


def test_forced_legacy_version_is_sent_and_used_in_headers(fake: Fake) -> None:
    server = fake(legacy_mcp(version=None))
    r = mcp_in("tools", "list", server.url, "--protocol", "2025-06-18")
    assert r.code == 0, r
    assert server.calls("server/discover") == []
    assert server.calls("initialize")[0].rpc["params"]["protocolVersion"] == "2025-06-18"
    assert server.calls("tools/list")[0].header("mcp-protocol-version") == "2025-06-18"


def test_2025_03_26_sends_no_protocol_version_header(fake: Fake) -> None:
    server = fake(legacy_mcp(version="2025-03-26"))
    r = mcp_in("tools", "list", server.url)
    assert r.code == 0, r
    assert server.calls("tools/list")[0].header("mcp-protocol-version") is None
    assert server.calls("tools/list")[0].header("mcp-session-id") == "s1"


def test_server_request_on_the_get_stream_is_answered_by_post(fake: Fake) -> None:
    legacy = legacy_mcp()
    answered = threading.Event()

    def handle(req: Req) -> Reply:
        if req.method == "GET":
            ask = {"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create",
                   "params": {"message": "Name?", "requestedSchema": {
                       "type": "object", "properties": {"name": {"type": "string"}}}}}
            return sse_reply(sse_event(ask), hold=answered)
        if req.method == "POST" and "result" in req.rpc and req.rpc.get("id") == "srv-1":
            answered.set()
            return Reply(202)
        if req.rpc_method == "tools/call":
            answered.wait(10)  # the tool finishes once the user answered
            return result(req, {"content": [{"type": "text", "text": "thanks"}]})
        return legacy(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x", "--elicit-json", '{"name": "Ada"}')
    assert r.code == 0, r
    gets = [q for q in server.requests if q.method == "GET"]
    assert gets[0].header("accept") == "text/event-stream"
    assert gets[0].header("mcp-session-id") == "s1"
    reply = next(q for q in server.requests if q.rpc.get("id") == "srv-1")
    assert reply.rpc["result"] == {"action": "accept", "content": {"name": "Ada"}}
    assert reply.header("mcp-session-id") == "s1"


def test_request_accepted_with_202_is_answered_on_the_get_stream(fake: Fake) -> None:
    legacy = legacy_mcp()
    outbox: list[bytes] = []
    ready = threading.Condition()

    def stream() -> Iterable[bytes]:
        sent = 0
        yield b": open\n\n"
        while not server.stopping.is_set():
            with ready:
                ready.wait(timeout=0.2)
                pending = outbox[sent:]
            yield from pending
            sent += len(pending)

    def handle(req: Req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"Content-Type": "text/event-stream"}, stream())
        if req.rpc_method == "tools/list":
            answer = {"jsonrpc": "2.0", "id": req.rpc["id"], "result": {"tools": [ECHO_TOOL]}}
            with ready:
                outbox.append(sse_event(answer))
                ready.notify_all()
            return Reply(202)
        return legacy(req)

    server = fake(handle)
    r = mcp_in("tools", "list", server.url, "--json")
    assert r.code == 0, r
    assert r.json["tools"][0]["name"] == "echo"


def test_request_accepted_with_202_and_no_get_stream_is_an_error(fake: Fake) -> None:
    legacy = legacy_mcp()
    server = fake(lambda req: Reply(202) if req.rpc_method == "tools/list" else legacy(req))
    r = mcp_in("tools", "list", server.url)
    assert r.code == 4, r
    assert "HTTP 202 Accepted without a response to tools/list" in r.stderr


@pytest.mark.slow
def test_broken_stream_resumes_with_last_event_id_after_retry(fake: Fake) -> None:
    legacy = legacy_mcp()
    closed_at: list[float] = []
    resumed_at: list[float] = []

    def primed_then_closed() -> Iterable[bytes]:
        yield sse_event(None, id="ev-1", retry=400)
        closed_at.append(time.monotonic())

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call":
            return Reply(200, {"Content-Type": "text/event-stream"}, primed_then_closed())
        if req.method == "GET" and req.header("last-event-id") == "ev-1":
            resumed_at.append(time.monotonic())
            call = server.calls("tools/call")[0]
            done = {"jsonrpc": "2.0", "id": call.rpc["id"],
                    "result": {"content": [{"type": "text", "text": "resumed"}]}}
            return sse_reply(sse_event(done, id="ev-2"), hold=server.stopping)
        if req.method == "GET":
            return Reply(405)
        return legacy(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x")
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "resumed"
    assert resumed_at and closed_at
    assert resumed_at[0] - closed_at[0] >= 0.38  # the server's retry, not earlier


# -- 2026-07-28 ----------------------------------------------------------------------------


def test_modern_request_headers(fake: Fake) -> None:
    tool = {"name": "wëather", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "days": {"type": "integer", "x-mcp-header": "Days"},
        "note": {"type": "string", "x-mcp-header": "Note"},
        "city": {"type": "string"}}}}
    server = fake(modern_mcp(tools=[tool]))
    r = mcp_in("tools", "call", server.url, "wëather", "--arg", "region=eu-1", "--arg", "days=3",
               "--arg", "note= padded", "--arg", "city=Oslo")
    assert r.code == 0, r
    for q in server.requests:
        assert q.header("mcp-protocol-version") == "2026-07-28"
        assert q.header("mcp-protocol-version") == q.rpc["params"]["_meta"][META_VERSION]
        assert q.header("mcp-method") == q.rpc_method
        assert q.header("mcp-session-id") is None
    call = server.calls("tools/call")[0]
    assert call.header("mcp-name") == "=?base64?d8OrYXRoZXI=?="
    assert call.header("mcp-param-region") == "eu-1"
    assert call.header("mcp-param-days") == "3"
    assert call.header("mcp-param-note") == "=?base64?IHBhZGRlZA==?="
    assert call.header("mcp-param-city") is None
    assert server.calls("tools/list")[0].header("mcp-name") is None


def test_modern_tools_with_invalid_x_mcp_header_are_dropped_with_a_warning(fake: Fake) -> None:
    bad = {"name": "bad", "inputSchema": {"type": "object", "properties": {
        "score": {"type": "number", "x-mcp-header": "Score"}}}}
    server = fake(modern_mcp(tools=[ECHO_TOOL, bad]))
    listed = mcp_in("tools", "list", server.url, "--json")
    assert listed.code == 0, listed
    assert [t["name"] for t in listed.json["tools"]] == ["echo"]
    assert "warning: ignoring tool 'bad'" in listed.stderr
    called = mcp_in("tools", "call", server.url, "bad", "--arg", "score=1")
    assert called.code == 2, called
    assert server.calls("tools/call") == []


def test_cached_discover_and_tool_list_make_a_call_one_post(fake: Fake) -> None:
    server = fake(modern_mcp(ttl_ms=60_000))
    first = mcp_in("tools", "call", server.url, "echo", "--arg", "message=1")
    assert first.code == 0, first
    assert [q.rpc_method for q in server.requests] == ["server/discover", "tools/list", "tools/call"]
    server.requests.clear()
    second = mcp_in("tools", "call", server.url, "echo", "--arg", "message=2")
    assert second.code == 0, second
    assert second.json["content"][0]["text"] == "echo: 2"
    assert [q.rpc_method for q in server.requests] == ["tools/call"]


def test_private_or_zero_ttl_results_are_not_reused(fake: Fake) -> None:
    for ttl, scope in ((60_000, "private"), (0, "public")):
        server = fake(modern_mcp(ttl_ms=ttl, scope=scope))
        for _ in range(2):
            r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x")
            assert r.code == 0, r
        assert [q.rpc_method for q in server.requests].count("server/discover") == 2, (ttl, scope)
        assert [q.rpc_method for q in server.requests].count("tools/list") == 2, (ttl, scope)


def test_a_stale_cached_era_is_probed_again(fake: Fake) -> None:
    state = {"handler": modern_mcp(ttl_ms=60_000)}
    server = fake(lambda req: state["handler"](req))
    assert mcp_in("tools", "list", server.url).code == 0
    state["handler"] = legacy_mcp()  # the server was redeployed as a legacy one
    server.requests.clear()
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x", "--no-validate")
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "echo: x"
    posts = [q for q in server.requests if q.method == "POST"]
    assert META_VERSION in posts[0].rpc["params"]["_meta"]  # tried the cached era first
    assert "initialize" in [q.rpc_method for q in posts]


def test_unsupported_version_naming_only_legacy_versions_falls_back(fake: Fake) -> None:
    legacy = legacy_mcp()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "server/discover":
            return error(req, -32022, "Unsupported protocol version", status=400,
                         data={"supported": ["2025-11-25"], "requested": "2026-07-28"})
        return legacy(req)

    server = fake(handle)
    r = mcp_in("info", server.url, "--json")
    assert r.code == 0, r
    assert r.json["era"] == "legacy"


def test_unsupported_version_for_the_version_we_sent_is_retried_once(fake: Fake) -> None:
    modern = modern_mcp()
    refused = {"n": 0}

    def handle(req: Req) -> Reply:
        if refused["n"] < 1:
            refused["n"] += 1
            return error(req, -32022, "Unsupported protocol version", status=400,
                         data={"supported": ["2026-07-28"], "requested": "2026-07-28"})
        return modern(req)

    server = fake(handle)
    r = mcp_in("info", server.url, "--json")
    assert r.code == 0, r
    assert r.json["era"] == "modern"
    assert len(server.calls("server/discover")) == 2


def test_forced_modern_protocol_does_not_fall_back(fake: Fake) -> None:
    server = fake(legacy_mcp())
    r = mcp_in("tools", "list", server.url, "--protocol", "2026-07-28")
    assert r.code == 5, r
    assert "No valid session ID" in r.stderr
    assert server.calls("initialize") == []


def test_listen_stream_as_newline_delimited_json(fake: Fake) -> None:
    modern = modern_mcp()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "server/discover":
            return result(req, {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                                "capabilities": {"resources": {"subscribe": True}}, "ttlMs": 0,
                                "cacheScope": "public"})
        if req.rpc_method == "subscriptions/listen":
            sid = req.rpc["id"]
            meta = {"io.modelcontextprotocol/subscriptionId": sid}
            lines = [
                {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                 "params": {"_meta": meta, "notifications": req.rpc["params"]["notifications"]}},
                {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                 "params": {"_meta": meta, "uri": "file:///watched"}},
            ]
            body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)

            def stream() -> Iterable[bytes]:
                yield body
                server.stopping.wait(30)

            return Reply(200, {"Content-Type": "application/json"}, stream())
        return modern(req)

    server = fake(handle)
    r = mcp_in("resources", "subscribe", server.url, "file:///watched", "--count", "1", "--jsonl")
    assert r.code == 0, r
    assert json.loads(r.stdout)["params"]["uri"] == "file:///watched"
    listen = server.calls("subscriptions/listen")[0]
    assert listen.rpc["params"]["notifications"] == {"resourceSubscriptions": ["file:///watched"]}
    assert listen.header("mcp-method") == "subscriptions/listen"


def test_modern_server_must_not_send_requests_on_a_stream(fake: Fake) -> None:
    modern = modern_mcp()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "tools/call":
            sneaky = {"jsonrpc": "2.0", "id": 99, "method": "roots/list"}
            done = {"jsonrpc": "2.0", "id": req.rpc["id"],
                    "result": {"resultType": "complete", "content": []}}
            return sse_reply(sse_event(sneaky), sse_event(done))
        return modern(req)

    server = fake(handle)
    r = mcp_in("tools", "call", server.url, "echo", "--arg", "message=x")
    assert r.code == 0, r
    assert "roots/list request on a 2026-07-28 stream" in r.stderr
    assert not [q for q in server.requests if q.rpc.get("id") == 99]


# -- headers and credentials --------------------------------------------------------------


def test_custom_headers_from_flags_and_config(fake: Fake, tmp_path: Path) -> None:
    server = fake(modern_mcp())
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"remote": {
        "url": server.url, "headers": {"X-Tenant": "${TENANT}", "X-Both": "config"}}}}))
    r = mcp_in("--config", str(config), "tools", "list", "remote", "-H", "X-Both: flag",
               "-H", "Mcp-Session-Id: forged", "-H", "Accept: text/html", env={"TENANT": "t-1"})
    assert r.code == 0, r
    for q in server.requests:
        assert q.header("x-tenant") == "t-1"
        assert q.header("x-both") == "flag"
        assert q.header("mcp-session-id") is None  # protocol headers are ours
        assert q.header("accept") == "application/json, text/event-stream"


def test_missing_header_variable_is_a_usage_error(fake: Fake, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"remote": {
        "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${NO_SUCH_TOKEN_VAR}"}}}}))
    r = mcp_in("--config", str(config), "tools", "list", "remote")
    assert r.code == 2, r
    assert "NO_SUCH_TOKEN_VAR is not set" in r.stderr


@pytest.mark.parametrize("how", ["flag", "env"])
def test_bearer_token(fake: Fake, how: str) -> None:
    modern = modern_mcp()
    server = fake(lambda req: modern(req) if req.header("authorization") == "Bearer s3cret"
                  else Reply(401, {}, b""))
    args = ["--bearer-token", "s3cret"] if how == "flag" else []
    env = {"MCP_BEARER_TOKEN": "s3cret"} if how == "env" else {}
    r = mcp_in("tools", "list", server.url, *args, env=env)
    assert r.code == 0, r
    assert "s3cret" not in r.stderr


def test_redirect_within_the_origin_keeps_credentials(fake: Fake) -> None:
    modern = modern_mcp()

    def handle(req: Req) -> Reply:
        if req.path == "/mcp":
            return Reply(307, {"Location": "/v2/mcp"}, b"")
        return modern(req)

    server = fake(handle)
    r = mcp_in("tools", "list", server.url, "--bearer-token", "tok", "-H", "X-Key: k")
    assert r.code == 0, r
    moved = [q for q in server.requests if q.path == "/v2/mcp"]
    assert moved and all(q.header("authorization") == "Bearer tok" and q.header("x-key") == "k" for q in moved)
    assert all(q.body for q in moved)  # 307 keeps the method and the body


def test_redirect_to_another_origin_drops_credentials(fake: Fake) -> None:
    other = fake(modern_mcp())
    server = fake(lambda req: Reply(307, {"Location": other.url}, b""))
    r = mcp_in("tools", "list", server.url, "--bearer-token", "tok", "-H", "X-Key: k")
    assert r.code == 0, r
    assert other.requests
    for q in other.requests:
        assert q.header("authorization") is None
        assert q.header("x-key") is None


@pytest.mark.slow
def test_proxy_from_the_environment(fake: Fake) -> None:
    modern = modern_mcp()
    proxy = fake(modern)  # answers as the server itself; records what it was asked
    target = "http://mcp.example.invalid/mcp"
    r = mcp_in("tools", "list", target, env={"HTTP_PROXY": f"http://127.0.0.1:{proxy.port}",
                                              "http_proxy": f"http://127.0.0.1:{proxy.port}",
                                              "NO_PROXY": "", "no_proxy": ""})
    assert r.code == 0, r
    assert proxy.requests
    assert all(q.path == target for q in proxy.requests)  # absolute-form: it went via the proxy


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> ssl.SSLContext:
    if shutil.which("openssl") is None:
        require("the openssl command (to make a self-signed certificate)")
    where = tmp_path_factory.mktemp("tls")
    key, cert = where / "key.pem", where / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


def test_tls_is_verified_unless_insecure(fake: Fake, self_signed: ssl.SSLContext) -> None:
    server = fake(modern_mcp(), tls=self_signed)
    assert server.url.startswith("https://")
    refused = mcp_in("tools", "list", server.url)
    assert refused.code == 4, refused
    assert "CERTIFICATE_VERIFY_FAILED" in refused.stderr or "certificate" in refused.stderr
    insecure = mcp_in("tools", "list", server.url, "--insecure", "--json")
    assert insecure.code == 0, insecure
    assert insecure.json["tools"][0]["name"] == "echo"


def test_https_never_redirects_to_plain_http(fake: Fake, self_signed: ssl.SSLContext) -> None:
    plain = fake(modern_mcp())
    server = fake(lambda req: Reply(308, {"Location": plain.url}, b""), tls=self_signed)
    r = mcp_in("tools", "list", server.url, "--insecure")
    assert r.code == 4, r
    assert "refusing a redirect from https to plain http" in r.stderr
    assert plain.requests == []


def test_legacy_sse_transport_sends_headers_on_stream_and_posts(fake: Fake) -> None:
    endpoint_hits: list[Req] = []
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
        endpoint_hits.append(req)
        rpc = req.rpc
        answer = None
        if rpc.get("method") == "initialize":
            answer = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "old-sse", "version": "1"}}
        elif rpc.get("method") == "tools/list":
            answer = {"tools": [ECHO_TOOL]}
        if answer is not None:
            with posted:
                outbox.append(sse_event({"jsonrpc": "2.0", "id": rpc["id"], "result": answer}, event="message"))
                posted.notify_all()
        return Reply(202, {}, b"Accepted")

    server = fake(handle)
    r = mcp_in("tools", "list", server.url, "--transport", "sse", "-H", "X-Key: k", "--json")
    assert r.code == 0, r
    assert r.json["tools"][0]["name"] == "echo"
    get = next(q for q in server.requests if q.method == "GET")
    assert get.header("x-key") == "k" and get.header("accept") == "text/event-stream"
    assert endpoint_hits and all(q.path == "/messages?session=abc" for q in endpoint_hits)
    assert all(q.header("x-key") == "k" for q in endpoint_hits)
    assert endpoint_hits[0].rpc_method == "initialize"  # no modern probe over HTTP+SSE


# -- interruption (signals: the real command) ----------------------------------------------


def _interrupt_after_first_line(argv: list[str]) -> tuple[int, str]:
    import os
    import signal
    import sys

    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "mcpcli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    return proc.returncode, first + err


@pytest.mark.slow
def test_ctrl_c_on_a_legacy_subscription_unsubscribes_and_ends_the_session(fake: Fake) -> None:
    legacy = legacy_mcp()

    def handle(req: Req) -> Reply:
        if req.method == "GET":
            update = {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                      "params": {"uri": "file:///x"}}
            return sse_reply(sse_event(update), hold=server.stopping)
        return legacy(req)

    server = fake(handle)
    code, output = _interrupt_after_first_line(
        ["resources", "subscribe", server.url, "file:///x", "--jsonl"])
    assert code == 130, output
    assert '"uri":"file:///x"' in output.replace(" ", "")
    assert server.calls("resources/subscribe") and server.calls("resources/unsubscribe")
    assert [q.header("mcp-session-id") for q in server.requests if q.method == "DELETE"] == ["s1"]


@pytest.mark.slow
def test_ctrl_c_on_a_modern_subscription_closes_the_stream(fake: Fake) -> None:
    modern = modern_mcp()
    closed = threading.Event()

    def handle(req: Req) -> Reply:
        if req.rpc_method == "server/discover":
            return result(req, {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                                "capabilities": {"resources": {"subscribe": True}}, "ttlMs": 0,
                                "cacheScope": "public"})
        if req.rpc_method == "subscriptions/listen":
            meta = {"io.modelcontextprotocol/subscriptionId": req.rpc["id"]}

            def stream() -> Iterable[bytes]:
                yield sse_event({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                                 "params": {"_meta": meta, "notifications": {}}})
                try:
                    while not server.stopping.is_set():
                        yield sse_event({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                         "params": {"_meta": meta, "uri": "file:///y"}})
                        server.stopping.wait(0.05)
                finally:
                    closed.set()

            return Reply(200, {"Content-Type": "text/event-stream"}, stream())
        return modern(req)

    server = fake(handle)
    code, output = _interrupt_after_first_line(
        ["resources", "subscribe", server.url, "file:///y", "--jsonl"])
    assert code == 130, output
    assert closed.wait(5)  # the server saw the stream close: that is the cancellation
    assert server.calls("notifications/cancelled") == []
