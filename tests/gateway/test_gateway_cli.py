"""`mcp serve --proxy`: flags, stdio and HTTP, and what never crosses to the upstream."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from gwkit import UPSTREAM, listening, serve_http
from helpers import free_port, mcp_in
from httpfake import FakeHTTP, legacy_mcp

pytestmark = [pytest.mark.slow]

GATEWAY = [sys.executable, "-m", "mcpcli", "serve", "--quiet", "--proxy"]


@pytest.mark.parametrize(("args", "message"), [
    (["serve", "--deny-tool", "x", "tools.yaml"], "--deny-tool apply to --proxy only"),
    (["serve", "--read-only", "--eager", "tools.yaml"], "--read-only apply to --proxy only"),
    (["serve", "--proxy"], "--proxy needs a TARGET"),
    (["serve", "--proxy", "http://127.0.0.1:9/mcp", "tools.yaml"], "FILE or --proxy"),
    (["serve", "--proxy", "--check", "--", "true"], "apply to FILE, not to --proxy"),
    (["serve", "tools.yaml", "--", "true"], "needs --proxy"),
])
def test_usage_errors(args: list[str], message: str) -> None:
    result = mcp_in(*args)
    assert result.code == 2, result
    assert message in result.stderr and result.stdout == ""


def test_stdio_proxy_filters_and_prefixes() -> None:
    gateway = [*GATEWAY, "--deny-tool", "ECHO", "--prefix", "up_", "--", sys.executable, UPSTREAM]
    listed = mcp_in("tools", "list", "--json", "--", *gateway)
    assert listed.code == 0, listed
    names = {t["name"] for t in listed.json["tools"]}
    assert "up_whoami" in names and not {"up_echo", "up_Echo", "echo"} & names
    called = mcp_in("tools", "call", "up_elicit", "--elicit-json", '{"name": "Ada"}', "--", *gateway)
    assert called.code == 0, called
    assert "Hello, Ada!" in called.stdout
    refused = mcp_in("tools", "call", "up_Echo", "--no-validate", "--", *gateway)
    assert refused.code != 0 and "Echo ran" not in refused.stdout


def test_read_only_over_stdio() -> None:
    gateway = [*GATEWAY, "--read-only", "--", sys.executable, UPSTREAM]
    listed = mcp_in("tools", "list", "--json", "--", *gateway)
    assert listed.code == 0, listed
    assert sorted(t["name"] for t in listed.json["tools"]) == ["echo", "whoami"]


def test_http_gateway_never_forwards_the_downstream_credentials(tmp_path: Path) -> None:
    """The bearer token and headers a client sends the gateway stay at the gateway
    (token passthrough is forbidden); the upstream sees only its own configuration."""
    upstream = FakeHTTP(legacy_mcp()).start()
    port = free_port()
    secret = "downstream-secret-token-1234"
    try:
        argv = serve_http("--quiet", "--auth-token", secret, "--proxy", upstream.url, port=port)
        with listening(argv, port, what="the gateway") as url:
            result = mcp_in("tools", "call", url, "echo", "--arg", "message=hi",
                            "--bearer-token", secret, "-H", "X-Downstream: also-secret")
            assert result.code == 0, result
            assert "echo: hi" in result.stdout
            refused = mcp_in("tools", "list", url, "--no-auth")
            assert refused.code == 3, refused
    finally:
        upstream.stop()
    assert upstream.calls("tools/call"), "the call reached the upstream"
    for req in upstream.requests:
        assert req.header("authorization") is None
        assert "x-downstream" not in req.headers
        assert secret not in req.body.decode("utf-8", "replace")


def test_a_tools_yaml_and_a_configured_name_as_targets(tmp_path: Path) -> None:
    from helpers import REPO

    fixture = str(REPO / "tests/conformance/server.yaml")
    greeted = mcp_in("tools", "call", "greet", "--arg", "name=Ada", "--", *GATEWAY, fixture)
    assert greeted.code == 0 and "Hello, Ada!" in greeted.stdout, greeted

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcpServers": {"up": {"command": sys.executable, "args": [UPSTREAM],
                                                        "env": {"GATEWAY_TEST_VAR": "configured"}}}}))
    called = mcp_in("tools", "call", "whoami", "--env", "MCP_CONFIG", "--", *GATEWAY, "up",
                    env={"MCP_CONFIG": str(config)})
    assert called.code == 0 and "configured" in called.stdout, called


def test_a_stdio_gateway_lets_nothing_else_read_its_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    """stdin carries the MCP channel: a sign-in's paste prompt (which reads sys.stdin) must
    read nothing of it; over --http the terminal's stdin stays as it is."""
    import io

    from mcpcli.cli._app import App
    from mcpcli.cli._proxy import serve_gateway

    seen: dict[bool, str] = {}
    for stdio in (True, False):
        monkeypatch.setattr(sys, "stdin", io.StringIO('{"jsonrpc": "2.0", "method": "x"}\n'))

        async def serve(server: object, stdio: bool = stdio) -> None:
            seen[stdio] = sys.stdin.read()

        serve_gateway(App(stderr=io.StringIO()), [], serve, eager=False, quiet=True, stdio=stdio)
    assert seen == {True: "", False: '{"jsonrpc": "2.0", "method": "x"}\n'}


def test_a_stdio_server_on_streamable_http() -> None:
    """`mcp serve --http PORT --proxy -- CMD`: a stdio server for HTTP clients of both eras,
    its requests for input answered by the HTTP client that made the call."""
    port = free_port()
    argv = serve_http("--quiet", "--no-auth", "--proxy", "--deny-tool", "die", "--", sys.executable, UPSTREAM,
                      port=port)
    with listening(argv, port, what="the gateway") as url:
        for era in ([], ["--protocol", "2025-11-25"]):
            called = mcp_in("tools", "call", url, "elicit", "--elicit-json", '{"name": "Ada"}', *era)
            assert called.code == 0 and "Hello, Ada!" in called.stdout, called
            progress = mcp_in("tools", "call", url, "progress", "--json", *era)
            assert progress.code == 0, progress
            refused = mcp_in("tools", "call", url, "die", "--no-validate", *era)
            assert refused.code != 0 and "Unknown tool" in refused.stderr, refused


def test_a_stubborn_upstream_goes_with_a_killed_gateway() -> None:
    """The client stops its stdio server (the gateway) with TERM then KILL within 60 ms,
    too soon for the gateway to stop an upstream that ignores EOF and TERM: the gateway's
    watchdog ends that upstream's group (tests/conftest.py fails a test that leaves one)."""
    from helpers import fake_server

    called = mcp_in("tools", "call", "echo", "--arg", "message=x", "--", *GATEWAY, "--",
                    *fake_server("--stubborn"))
    assert called.code == 0 and '"x"' in called.stdout, called


def test_sigterm_after_end_of_input_stops_a_stdio_gateway_quietly(tmp_path: Path) -> None:
    """A client closes the gateway's stdin, then sends SIGTERM while the gateway is still
    finishing (here: a call in flight during the end-of-input grace): that is the ordinary
    stop, so the gateway exits 0 without `mcp: error: interrupted`."""
    import os
    import signal
    import subprocess

    log = tmp_path / "upstream.log"
    meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}
    listen = {"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen",
              "params": {**meta, "notifications": {"toolsListChanged": True}}}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {**meta, "name": "slow"}}
    proc = subprocess.Popen(
        [*GATEWAY, "--", "env", f"GATEWAY_TEST_LOG={log}", sys.executable, UPSTREAM],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(f"{json.dumps(listen)}\n{json.dumps(call)}\n".encode())
        proc.stdin.flush()
        for line in proc.stdout:  # bounded by the timeout below
            if b"notifications/subscriptions/acknowledged" in line:
                break
        from helpers import wait_until

        wait_until(lambda: log.exists() and "started" in log.read_text(), what="the slow call")
        proc.stdin.close()
        # The listen's final result is written once the gateway has read end of input.
        for line in proc.stdout:
            if json.loads(line).get("id") == "sub":
                break
        else:
            raise AssertionError("the listen did not end at end of input")
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert proc.stderr.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def _stopped_by(signum: int, argv: list[str], port: int, use: Callable[[str], None]) -> tuple[int, str]:
    """Run a real `mcp serve --http` until it listens, `use` its URL, send `signum`; its
    exit status and stderr."""
    import os
    import subprocess

    from helpers import wait_listening

    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stderr is not None
    try:
        wait_listening(port, proc, "the server")
        use(f"http://127.0.0.1:{port}/mcp")
        os.kill(proc.pid, signum)
        code = proc.wait(timeout=30)
        return code, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stderr.close()


def test_a_signal_stops_an_http_server_quietly(tmp_path: Path) -> None:
    """SIGTERM is how service managers stop a server: `mcp serve --http` (FILE or --proxy)
    exits 0 after its graceful shutdown, with no error line; Ctrl-C (SIGINT) is a normal stop
    too (no error line) and exits 130, as an interrupted command does."""
    def called(url: str) -> None:
        result = mcp_in("tools", "call", url, "echo", "--arg", "text=hi")
        assert result.code == 0 and "hi" in result.stdout, result

    port = free_port()
    proxy = serve_http("--quiet", "--no-auth", "--proxy", "--", sys.executable, UPSTREAM, port=port)
    code, stderr = _stopped_by(signal.SIGTERM, proxy, port, called)
    assert code == 0 and "error" not in stderr, stderr

    port = free_port()
    code, stderr = _stopped_by(signal.SIGTERM, serve_http("--quiet", "--no-auth", "--example", port=port), port,
                               lambda url: None)
    assert code == 0 and "error" not in stderr, stderr

    port = free_port()
    code, stderr = _stopped_by(signal.SIGINT, serve_http("--quiet", "--no-auth", "--example", port=port), port,
                               lambda url: None)
    assert code == 130 and "error" not in stderr, stderr
    assert stderr.startswith("mcp: serving "), stderr


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
def test_a_signal_stops_a_stdio_server_quietly(signum: int, status: int) -> None:
    """`mcp serve FILE` on stdio, stopped by Ctrl-C (130) or SIGTERM (0) while it serves a
    client: nothing on stderr, no error line."""
    import os
    import subprocess

    from helpers import REPO

    proc = subprocess.Popen([sys.executable, "-m", "mcpcli", "serve", "--quiet", str(REPO / "examples/tools.yaml")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        proc.stdin.write((json.dumps(init) + "\n").encode())
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # serving
        os.kill(proc.pid, signum)
        assert proc.wait(timeout=30) == status
        assert proc.stderr.read().decode() == ""
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()


def test_an_unreachable_proxied_upstream_is_named_not_an_empty_list_or_unknown_tool() -> None:
    """`mcp serve --http --proxy` to an upstream it cannot reach: `tools list` and `tools
    call` fail with a JSON-RPC error (exit 5) naming the upstream and the cause, instead of
    `{"tools": []}` (exit 0) and "unknown tool" (exit 2)."""
    from helpers import fake_server

    port = free_port()
    argv = serve_http("--quiet", "--no-auth", "--proxy", "--", *fake_server("--exit-before-init", "3"), port=port)
    with listening(argv, port, what="the gateway") as url:
        listed = mcp_in("tools", "list", url)
        assert listed.code == 5 and "not available" in listed.stderr and "boot failure" in listed.stderr, listed
        # The CLI lists before calling: that listing says why (the call's own answer, a
        # tool error naming the upstream, is tested in test_gateway_backend.py).
        called = mcp_in("tools", "call", url, "echo", "--arg", "message=x")
        assert called.code == 5 and "upstream python is not available" in called.stderr, called
