"""The `mcp` command against a server written with the official Python SDK (tests/peers/sdk_server.py).

The SDK speaks 2026-07-28, so by default these exercise the modern era (server/discover,
per-request _meta, MRTR input requests, subscriptions/listen); `--protocol 2025-11-25`
runs the same operations over the legacy handshake.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest
from helpers import Result, mcp

pytestmark = pytest.mark.peer

LEGACY = ("--protocol", "2025-11-25")
ERAS = pytest.mark.parametrize("era", [(), LEGACY], ids=["modern", "legacy"])


def run(*args: str, server: list[str]) -> Result:
    return mcp(*args, "--", *server)


def test_info_negotiates_the_modern_era(sdk_server: list[str]) -> None:
    r = run("info", "--json", server=sdk_server)
    assert r.code == 0, r
    assert r.json["era"] == "modern"
    assert r.json["protocolVersion"] == "2026-07-28"
    assert "2026-07-28" in r.json["supportedVersions"]
    assert r.json["serverInfo"] == {"name": "sdk-peer", "title": "SDK peer", "version": "1.0.0"}
    assert r.json["instructions"] == "A test server built with the official Python SDK."


def test_info_over_the_legacy_handshake(sdk_server: list[str]) -> None:
    r = run("info", "--json", *LEGACY, server=sdk_server)
    assert r.code == 0, r
    assert (r.json["era"], r.json["protocolVersion"]) == ("legacy", "2025-11-25")


@ERAS
def test_ping_uses_discover_on_modern_servers_and_ping_on_legacy(sdk_server: list[str], era: tuple[str, ...]) -> None:
    r = run("ping", "-c", "2", "-i", "0", "--json", *era, server=sdk_server)
    assert r.code == 0, r
    assert r.json["method"] == ("ping" if era else "server/discover")
    assert r.json["count"] == 2


@ERAS
def test_tools_with_structured_output(sdk_server: list[str], era: tuple[str, ...]) -> None:
    r = run("tools", "call", "add", "--arg", "a=40", "--arg", "b=2", *era, server=sdk_server)
    assert r.code == 0, r
    assert r.json["structuredContent"] == {"sum": 42}
    r = run("tools", "show", "add", "--json", *era, server=sdk_server)
    assert r.code == 0, r
    assert r.json["outputSchema"]["properties"]["sum"]["type"] == "integer"


def test_string_arguments_stay_strings_and_defaults_apply(sdk_server: list[str]) -> None:
    r = run("tools", "call", "greet", "--arg", "name=007", server=sdk_server)
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "Hello, 007!"


def test_a_tool_error_exits_1_with_the_result_printed(sdk_server: list[str]) -> None:
    r = run("tools", "call", "fail", server=sdk_server)
    assert r.code == 1, r
    assert r.json["isError"] is True
    assert "reported an error" in r.stderr


def test_image_and_audio_content_are_saved(sdk_server: list[str], tmp_path: Path) -> None:
    out = tmp_path / "media"
    r = run("tools", "call", "picture", "--save-dir", str(out), server=sdk_server)
    assert r.code == 0, r
    kinds = [b["type"] for b in r.json["content"]]
    assert kinds == ["image", "audio", "text"]
    saved = sorted(p.name for p in out.iterdir())
    assert saved == ["audio-2.wav", "image-1.png"]
    assert (out / "audio-2.wav").read_bytes().startswith(b"RIFF")


@ERAS
def test_progress_is_reported(sdk_server: list[str], era: tuple[str, ...]) -> None:
    r = run("tools", "call", "slow", "--arg", "steps=3", "--trace", *era, server=sdk_server)
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "done after 3 steps"
    progress = [json.loads(line[2:])["params"] for line in r.stderr.splitlines()
                if line.startswith("← ") and "notifications/progress" in line]
    assert [(p["progress"], p["total"], p["message"]) for p in progress] == [
        (1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


@ERAS
def test_log_messages_at_or_above_the_level(sdk_server: list[str], era: tuple[str, ...]) -> None:
    r = run("tools", "call", "chatty", "--log-level", "info", *era, server=sdk_server)
    assert r.code == 0, r
    lines = [line for line in r.stderr.splitlines() if line.startswith("[")]
    assert lines == ["[info] an info line", "[error] an error line"]


def test_no_log_messages_without_log_level_in_the_modern_era(sdk_server: list[str]) -> None:
    r = run("tools", "call", "chatty", server=sdk_server)
    assert r.code == 0, r
    assert not [line for line in r.stderr.splitlines() if line.startswith("[")]


@ERAS
def test_elicitation_answered_from_elicit_json(sdk_server: list[str], era: tuple[str, ...]) -> None:
    r = run("tools", "call", "ask", "--elicit-json", '{"color": "teal"}', *era, server=sdk_server)
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "got teal x3"


@ERAS
def test_elicitation_declined_without_a_tty(sdk_server: list[str], era: tuple[str, ...]) -> None:
    r = run("tools", "call", "ask", *era, server=sdk_server)
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "no answer: decline"
    assert "Pick a colour" in r.stderr


@ERAS
def test_sampling_through_a_real_command(sdk_server: list[str], era: tuple[str, ...], tmp_path: Path) -> None:
    script = tmp_path / "llm.py"
    script.write_text(
        "import json, sys\n"
        "req = json.load(sys.stdin)\n"
        "topic = req['messages'][0]['content']['text']\n"
        "print(json.dumps({'role': 'assistant', 'model': 'tiny-llm',\n"
        "                  'content': {'type': 'text', 'text': 'waves on ' + topic}}))\n"
    )
    r = run("tools", "call", "haiku", "--arg", "topic=sand", "--sampling-command",
            f"{sys.executable} {script}", *era, server=sdk_server)
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "tiny-llm wrote: waves on a haiku about sand"


def test_sampling_tool_needs_the_sampling_command(sdk_server: list[str]) -> None:
    r = run("tools", "call", "haiku", "--arg", "topic=x", server=sdk_server)
    assert r.code != 0, r
    assert "Traceback" not in r.stderr


@ERAS
def test_resources_are_paginated_and_every_page_is_followed(sdk_server: list[str], era: tuple[str, ...]) -> None:
    r = run("resources", "list", "--trace", *era, server=sdk_server)
    assert r.code == 0, r
    uris = [res["uri"] for res in r.json["resources"]]
    assert uris == ["note://hello", "blob://dot.png", "note://extra/0", "note://extra/1", "note://extra/2"]
    assert "nextCursor" not in r.json
    sent = [line for line in r.stderr.splitlines() if line.startswith("→ ") and "resources/list" in line]
    assert len(sent) == 3  # pages of two
    assert '"cursor":"p2"' in sent[1] and '"cursor":"p4"' in sent[2]


def test_resources_read_text_blob_and_template(sdk_server: list[str], tmp_path: Path) -> None:
    r = run("resources", "read", "note://hello", server=sdk_server)
    assert r.code == 0, r
    assert r.json["contents"][0]["text"] == "hello from the SDK"
    r = run("resources", "read", "item://42", server=sdk_server)
    assert r.json["contents"][0]["text"] == "item 42"
    target = tmp_path / "dot.png"
    r = run("resources", "read", "blob://dot.png", "-o", str(target), server=sdk_server)
    assert r.code == 0, r
    assert target.read_bytes().startswith(b"\x89PNG")
    r = run("resources", "read", "blob://dot.png", "--jq", ".contents[0].blob", "-r", server=sdk_server)
    assert base64.b64decode(r.stdout.strip()) == target.read_bytes()


def test_resources_templates(sdk_server: list[str]) -> None:
    r = run("resources", "templates", server=sdk_server)
    assert r.code == 0, r
    assert [t["uriTemplate"] for t in r.json["resourceTemplates"]] == ["item://{id}"]


@ERAS
def test_prompts_list_show_and_get(sdk_server: list[str], era: tuple[str, ...], tmp_path: Path) -> None:
    r = run("prompts", "list", *era, server=sdk_server)
    assert r.code == 0, r
    (prompt,) = r.json["prompts"]
    assert prompt["name"] == "review"
    r = run("prompts", "show", "review", *era, server=sdk_server)
    assert r.code == 0, r
    assert [a["name"] for a in r.json["arguments"]] == ["code", "style"]
    code = tmp_path / "main.py"
    code.write_text("print('hi')\n")
    r = run("prompts", "get", "review", "--arg", f"code=@{code}", "--arg", "style=long", *era,
            server=sdk_server)
    assert r.code == 0, r
    assert r.json["messages"][0]["content"]["text"] == "Review this code (long):\nprint('hi')\n"


def test_prompt_arguments_are_strings(sdk_server: list[str]) -> None:
    r = run("prompts", "get", "review", "--arg", "code:=3", server=sdk_server)
    assert r.code == 2, r
    assert "'code'" in r.stderr and "string" in r.stderr
    r = run("prompts", "get", "review", "--args", '{"code": "x"}', server=sdk_server)
    assert r.code == 0, r


@ERAS
def test_completion_of_prompt_and_template_arguments(sdk_server: list[str], era: tuple[str, ...]) -> None:
    r = run("complete", "--prompt", "review", "style", "s", *era, server=sdk_server)
    assert r.code == 0, r
    assert r.json["completion"]["values"] == ["short", "strict"]
    r = run("complete", "--resource", "item://{id}", "id", "1", "--jsonl", *era, server=sdk_server)
    assert r.code == 0, r
    assert r.stdout.split() == ['"1"', '"10"', '"11"']


def test_subscribe_over_subscriptions_listen(sdk_server: list[str]) -> None:
    r = mcp("resources", "subscribe", "item://tick", "--count", "2", "--jsonl", "--", *sdk_server, "--tick")
    assert r.code == 0, r
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(events) == 2
    assert all(e["method"] == "notifications/resources/updated" for e in events)
    assert all(e["params"]["uri"] == "item://tick" for e in events)


def test_subscribe_to_a_server_without_subscriptions_is_a_clear_error(sdk_server: list[str]) -> None:
    # The SDK serves resources/subscribe only in the modern era (subscriptions/listen).
    r = mcp("resources", "subscribe", "item://tick", *LEGACY, "--", *sdk_server, "--tick")
    assert r.code == 2, r
    assert "does not support resource subscriptions" in r.stderr


def test_subscribe_needs_something_to_watch(sdk_server: list[str]) -> None:
    r = run("resources", "subscribe", server=sdk_server)
    assert r.code == 2
    assert "give at least one URI" in r.stderr
