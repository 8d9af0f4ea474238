"""Every subcommand over HTTP against real servers on 127.0.0.1.

* server-everything (the TS SDK) in `streamableHttp` mode: legacy Streamable HTTP
  with sessions, server requests on SSE streams, the GET stream;
* server-everything in `sse` mode: the 2024-11-05 HTTP+SSE transport, reached
  both by automatic fallback and with `--transport sse`;
* the official Python SDK over Streamable HTTP: the stateless 2026-07-28 era
  (server/discover, _meta, MRTR, subscriptions/listen), and its legacy sessions
  with `--protocol`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import mcp

pytestmark = pytest.mark.peer


# -- server-everything, Streamable HTTP -----------------------------------------------


def test_everything_info_ping_and_lists(everything_http: str) -> None:
    info = mcp("info", everything_http, "--json")
    assert info.code == 0, info
    assert info.json["era"] == "legacy"
    assert info.json["protocolVersion"] == "2025-11-25"
    assert info.json["transport"] == "streamable-http"
    assert info.json["serverInfo"]["name"] == "mcp-servers/everything"

    ping = mcp("ping", everything_http, "--json")
    assert ping.code == 0, ping
    assert ping.json["method"] == "ping"

    tools = mcp("tools", "list", everything_http, "--json")
    assert tools.code == 0, tools
    assert "echo" in [t["name"] for t in tools.json["tools"]]

    resources = mcp("resources", "list", everything_http, "--json")
    assert resources.code == 0, resources
    assert any(r["uri"].startswith("demo://") for r in resources.json["resources"])

    templates = mcp("resources", "templates", everything_http, "--json")
    assert templates.code == 0, templates
    assert any("{resourceId}" in t["uriTemplate"] for t in templates.json["resourceTemplates"])

    prompts = mcp("prompts", "list", everything_http, "--json")
    assert prompts.code == 0, prompts
    assert "args-prompt" in [p["name"] for p in prompts.json["prompts"]]


def test_everything_tools_show_and_call(everything_http: str) -> None:
    show = mcp("tools", "show", everything_http, "get-sum", "--json")
    assert show.code == 0, show
    assert show.json["inputSchema"]["required"] == ["a", "b"]

    call = mcp("tools", "call", everything_http, "get-sum", "--arg", "a=2", "--arg", "b=3")
    assert call.code == 0, call
    assert call.json["content"][0]["text"] == "The sum of 2 and 3 is 5."

    unknown = mcp("tools", "call", everything_http, "no-such-tool")
    assert unknown.code == 2, unknown
    assert "unknown tool" in unknown.stderr


def test_everything_progress_on_the_post_stream(everything_http: str) -> None:
    r = mcp("tools", "call", everything_http, "trigger-long-running-operation",
            "--arg", "duration=2", "--arg", "steps=8", "--timeout", "1.5")
    # Each progress notification (every 0.25 s) restarts the 1.5 s clock, so the 2 s call
    # completes; the slack between them holds on a busy machine.
    assert r.code == 0, r
    assert "Steps: 8" in r.json["content"][0]["text"]


def test_everything_elicitation_request_answered_by_post(everything_http: str) -> None:
    r = mcp("tools", "call", everything_http, "trigger-elicitation-request",
            "--elicit-json", '{"name": "Ada"}')
    assert r.code == 0, r
    text = "\n".join(c.get("text", "") for c in r.json["content"])
    assert "Name: Ada" in text


def test_everything_prompts_resources_and_completion(everything_http: str) -> None:
    get = mcp("prompts", "get", everything_http, "args-prompt", "--arg", "city=Paris", "--json")
    assert get.code == 0, get
    assert "Paris" in get.json["messages"][0]["content"]["text"]

    read = mcp("resources", "read", everything_http, "demo://resource/dynamic/text/7", "--json")
    assert read.code == 0, read
    assert read.json["contents"][0]["text"].startswith("Resource 7")

    done = mcp("complete", everything_http, "--prompt", "completable-prompt", "department", "Eng", "--json")
    assert done.code == 0, done
    assert done.json["completion"]["values"] == ["Engineering"]


def test_everything_log_messages_arrive(everything_http: str) -> None:
    r = mcp("tools", "call", everything_http, "echo", "--arg", "message=hi", "--log-level", "debug")
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "Echo: hi"


def test_everything_named_server_with_config_headers(everything_http: str, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"ev": {
        "url": everything_http, "headers": {"X-Team": "${TEAM}"}}}}))
    r = mcp("--config", str(config), "tools", "call", "ev", "echo", "--arg", "message=named",
            env={"TEAM": "blue"})
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "Echo: named"


# -- server-everything, HTTP+SSE (2024-11-05) -------------------------------------------


@pytest.mark.parametrize("transport", ["auto", "sse"])
def test_everything_sse_transport(everything_sse: str, transport: str) -> None:
    info = mcp("info", everything_sse, "--json", "--transport", transport)
    assert info.code == 0, info
    assert info.json["transport"] == "sse"
    assert info.json["era"] == "legacy"

    call = mcp("tools", "call", everything_sse, "get-sum", "--arg", "a=20", "--arg", "b=22",
               "--transport", transport)
    assert call.code == 0, call
    assert call.json["content"][0]["text"] == "The sum of 20 and 22 is 42."


def test_everything_sse_every_list_and_read(everything_sse: str) -> None:
    for args in (("tools", "list"), ("resources", "list"), ("prompts", "list"), ("ping",)):
        r = mcp(*args, everything_sse, "--json")
        assert r.code == 0, (args, r)
    read = mcp("resources", "read", everything_sse, "demo://resource/dynamic/text/3", "--json")
    assert read.code == 0, read
    assert read.json["contents"][0]["uri"] == "demo://resource/dynamic/text/3"
    prompt = mcp("prompts", "get", everything_sse, "simple-prompt", "--json")
    assert prompt.code == 0, prompt
    assert prompt.json["messages"]


def test_http_only_transport_does_not_fall_back(everything_sse: str) -> None:
    r = mcp("tools", "list", everything_sse, "--transport", "http")
    assert r.code == 4, r
    assert "HTTP 404" in r.stderr


# -- the official Python SDK, 2026-07-28 and legacy sessions --------------------------------


def test_sdk_modern_info_and_ping(sdk_http: str) -> None:
    info = mcp("info", sdk_http, "--json")
    assert info.code == 0, info
    assert info.json["era"] == "modern"
    assert info.json["protocolVersion"] == "2026-07-28"
    assert "2026-07-28" in info.json["supportedVersions"]
    assert info.json["serverInfo"]["name"] == "sdk-peer"

    ping = mcp("ping", sdk_http, "--json")
    assert ping.code == 0, ping
    assert ping.json["method"] == "server/discover"


def test_sdk_modern_tools(sdk_http: str) -> None:
    call = mcp("tools", "call", sdk_http, "add", "--arg", "a=2", "--arg", "b=40")
    assert call.code == 0, call
    assert call.json["structuredContent"] == {"sum": 42}

    fail = mcp("tools", "call", sdk_http, "fail")
    assert fail.code == 1, fail
    assert fail.json["isError"] is True

    slow = mcp("tools", "call", sdk_http, "slow", "--arg", "steps=3")
    assert slow.code == 0, slow
    assert slow.json["content"][0]["text"] == "done after 3 steps"


def test_sdk_modern_mrtr_elicitation_and_sampling(sdk_http: str, tmp_path: Path) -> None:
    ask = mcp("tools", "call", sdk_http, "ask", "--elicit-json", '{"color": "blue", "count": 2}')
    assert ask.code == 0, ask
    assert ask.json["content"][0]["text"] == "got blue x2"

    sampler = tmp_path / "sampler.py"
    sampler.write_text(
        "import json, sys\n"
        "json.load(sys.stdin)\n"
        "print(json.dumps({'role': 'assistant', 'model': 'stub',"
        " 'content': {'type': 'text', 'text': 'old pond'}}))\n"
    )
    haiku = mcp("tools", "call", sdk_http, "haiku", "--arg", "topic=frogs",
                "--sampling-command", f"{sys.executable} {sampler}")
    assert haiku.code == 0, haiku
    assert haiku.json["content"][0]["text"] == "stub wrote: old pond"


def test_sdk_modern_resources_prompts_completion(sdk_http: str) -> None:
    listed = mcp("resources", "list", sdk_http, "--json")
    assert listed.code == 0, listed
    # Paginated two at a time by the server: every page is followed.
    assert {"note://hello", "blob://dot.png", "note://extra/2"} <= {r["uri"] for r in listed.json["resources"]}

    read = mcp("resources", "read", sdk_http, "note://hello", "--json")
    assert read.code == 0, read
    assert read.json["contents"][0]["text"] == "hello from the SDK"

    templates = mcp("resources", "templates", sdk_http, "--json")
    assert templates.code == 0, templates
    assert templates.json["resourceTemplates"][0]["uriTemplate"] == "item://{id}"

    prompt = mcp("prompts", "get", sdk_http, "review", "--arg", "code=x = 1", "--json")
    assert prompt.code == 0, prompt
    assert "x = 1" in json.dumps(prompt.json["messages"])

    done = mcp("complete", sdk_http, "--prompt", "review", "style", "s", "--json")
    assert done.code == 0, done
    assert done.json["completion"]["values"] == ["short", "strict"]


def test_sdk_modern_subscription_over_listen(sdk_http: str) -> None:
    r = mcp("resources", "subscribe", sdk_http, "item://tick", "--count", "2", "--jsonl")
    assert r.code == 0, r
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert [e["params"]["uri"] for e in events] == ["item://tick", "item://tick"]
    assert all(e["method"] == "notifications/resources/updated" for e in events)


def test_sdk_modern_log_level_travels_in_meta(sdk_http: str) -> None:
    r = mcp("tools", "call", sdk_http, "chatty", "--log-level", "info")
    assert r.code == 0, r
    assert "an info line" in r.stderr
    assert "an error line" in r.stderr
    assert "a debug line" not in r.stderr


def test_sdk_legacy_session_with_forced_protocol(sdk_http: str) -> None:
    info = mcp("info", sdk_http, "--json", "--protocol", "2025-06-18")
    assert info.code == 0, info
    assert info.json["era"] == "legacy"
    assert info.json["protocolVersion"] == "2025-06-18"

    call = mcp("tools", "call", sdk_http, "greet", "--arg", "name=Ada", "--protocol", "2025-11-25")
    assert call.code == 0, call
    assert call.json["content"][0]["text"] == "Hello, Ada!"

    ask = mcp("tools", "call", sdk_http, "ask", "--elicit-json", '{"color": "red"}',
              "--protocol", "2025-11-25")
    assert ask.code == 0, ask
    assert ask.json["content"][0]["text"] == "got red x3"
