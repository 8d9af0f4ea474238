"""server-everything (stdio and Streamable HTTP) behind `mcp serve --proxy`, driven by our
client (commands and the library) and by the official Python SDK client."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from gwkit import listening, serve_http
from helpers import LOOPBACK, Peers, free_port, mcp_in

from mcpcli.client import Client, ClientOptions
from mcpcli.transports.stdio import StdioTransport

pytestmark = [pytest.mark.peer, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
DOC = "demo://resource/static/document/features.md"
PROXY = [sys.executable, "-m", "mcpcli", "serve", "--quiet", "--proxy"]


@pytest.fixture
def everything_url(peers: Peers) -> Iterator[str]:
    """server-everything over Streamable HTTP."""
    node, *script = peers.everything("streamableHttp")
    port = free_port()
    argv = [node, "--require", str(LOOPBACK), *script]
    with listening(argv, port, {"PORT": str(port)}, "server-everything") as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
def upstream(request: pytest.FixtureRequest, peers: Peers) -> list[str]:
    """What follows `--proxy`: server-everything's stdio command, or its HTTP URL."""
    if request.param == "stdio":
        return ["--", *peers.everything_stdio()]
    return [request.getfixturevalue("everything_url")]


def gateway_target(upstream: list[str], *flags: str) -> list[str]:
    """`mcp` arguments that make a stdio gateway (the gateway itself after --) the TARGET."""
    if upstream[0] == "--":
        return ["--", *PROXY, *flags, *upstream]
    return ["--", *PROXY, upstream[0], *flags]


def test_our_commands_through_the_gateway(upstream: list[str]) -> None:
    target = gateway_target(upstream)
    listed = mcp_in("tools", "list", "--json", *target)
    assert listed.code == 0, listed
    names = {t["name"] for t in listed.json["tools"]}
    assert {"echo", "get-sum", "trigger-elicitation-request", "simulate-research-query"} <= names
    research = next(t for t in listed.json["tools"] if t["name"] == "simulate-research-query")
    assert research["execution"]["taskSupport"] == "required"

    called = mcp_in("tools", "call", "echo", "--arg", "message=through", "--json", *target)
    assert called.code == 0, called
    assert "Echo: through" in called.stdout
    structured = mcp_in("tools", "call", "get-structured-content", "--arg", "location=Chicago", "--json", *target)
    assert structured.code == 0 and "structuredContent" in structured.json, structured

    elicited = mcp_in("tools", "call", "trigger-elicitation-request", "--json",
                      "--elicit-json", '{"name": "Ada", "check": true, "color": "red"}', *target)
    assert elicited.code == 0, elicited
    assert "accept" in elicited.stdout and "Ada" in elicited.stdout

    task = mcp_in("tools", "call", "simulate-research-query", "--arg", "topic=cats", "--json", *target)
    assert task.code == 0, task
    assert "Research Report: cats" in task.stdout
    # A task that needs input, for a 2025-11-25 client: the gateway's task asks the client.
    asking = mcp_in("tools", "call", "simulate-research-query", "--arg", "topic=dogs", "--arg",
                    "ambiguous:=true", "--elicit-json", '{"interpretation": "pets"}',
                    "--protocol", "2025-11-25", "--json", *target)
    assert asking.code == 0, asking
    assert "Research Report: dogs (pets)" in asking.stdout

    sampler = "import json; print(json.dumps({'role': 'assistant', 'model': 'm', " \
              "'content': {'type': 'text', 'text': 'forty-two'}}))"
    sampled = mcp_in("tools", "call", "trigger-sampling-request", "--arg", "prompt=hi",
                     "--sampling-command", f"{sys.executable} -c \"{sampler}\"", *target)
    assert sampled.code == 0 and "forty-two" in sampled.stdout, sampled
    rooted = mcp_in("tools", "call", "get-roots-list", "--root", str(HERE), *target)
    assert rooted.code == 0 and HERE.as_uri() in rooted.stdout, rooted

    read = mcp_in("resources", "read", DOC, "--json", *target)
    assert read.code == 0 and read.json["contents"][0]["uri"] == DOC, read
    prompt = mcp_in("prompts", "get", "args-prompt", "--arg", "city=Paris", "--json", *target)
    assert prompt.code == 0 and "Paris" in prompt.stdout, prompt
    done = mcp_in("complete", "--prompt", "completable-prompt", "department", "E", "--json", *target)
    assert done.code == 0 and "Engineering" in done.stdout, done


def test_filter_prefix_and_read_only_on_a_real_server(upstream: list[str]) -> None:
    target = gateway_target(upstream, "--read-only", "--deny-tool", "GET-*", "--prefix", "ev_")
    listed = mcp_in("tools", "list", "--json", *target)
    assert listed.code == 0, listed
    names = {t["name"] for t in listed.json["tools"]}
    assert "ev_echo" in names and "ev_trigger-long-running-operation" in names
    assert not any(n.startswith("ev_get-") for n in names)
    assert "ev_toggle-simulated-logging" not in names  # not read-only
    refused = mcp_in("tools", "call", "ev_GET-SUM", "--no-validate", *target)
    assert refused.code != 0 and "Unknown tool" in refused.stderr, refused


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", [None, "2025-11-25"])
async def test_subscriptions_and_list_changes_are_relayed(peers: Peers, protocol: str | None) -> None:
    """resources/updated reaches a subscribed client (resources/subscribe in 2025-11-25,
    subscriptions/listen in 2026-07-28), and the upstream's list_changed (a session resource
    appears) is announced by the gateway."""
    argv = [*PROXY[1:], "--", *peers.everything_stdio()]
    with anyio.fail_after(60):
        transport = StdioTransport(sys.executable, argv, quiet=True)
        async with Client(transport, ClientOptions(protocol=protocol)) as client:
            async with client.subscribe(resources=[DOC]) as events:
                await client.call_tool("toggle-subscriber-updates", {})
                event = await events.receive()
            assert event["method"] == "notifications/resources/updated"
            assert event["params"]["uri"] == DOC
            async with client.subscribe(resource_list=True) as changes:
                data = "data:text/plain;base64," + base64.b64encode(b"hello").decode()
                await client.call_tool("gzip-file-as-resource", {"name": "hello.gz", "data": data})
                change = await changes.receive()
            assert change["method"] == "notifications/resources/list_changed"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_sdk_client_through_the_gateway(upstream: list[str], peers: Peers, mode: str) -> None:
    if upstream[0] == "--":
        target = json.dumps([*PROXY, *upstream])
        with_http = None
    else:
        port = free_port()
        with_http = listening(serve_http("--quiet", "--no-auth", "--proxy", upstream[0], port=port), port,
                              what="the gateway")
        target = with_http.__enter__()
    try:
        proc = subprocess.run([peers.sdk(), str(HERE / "sdk_gateway_client.py"), target, mode],
                              capture_output=True, text=True, timeout=120)
    finally:
        if with_http is not None:
            with_http.__exit__(None, None, None)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout)
    assert {"echo", "get-sum", "trigger-elicitation-request"} <= set(seen["tools"])
    assert seen["echo"] == ["Echo: hello"]
    assert seen["sum"] == ["The sum of 2 and 3 is 5."]
    assert seen["structured"]["temperature"] is not None
    assert any("Ada" in t for t in seen["elicit"])
    assert seen["resource"] == [DOC]
    assert any("Paris" in t for t in seen["prompt"])
