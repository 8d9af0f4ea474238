"""Every client subcommand against the real @modelcontextprotocol/server-everything over stdio.

Each test runs the real `mcp` command (a subprocess without a TTY, so stdout is
JSON) and checks what it printed and its exit status.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

import pytest
from helpers import mcp

pytestmark = pytest.mark.peer

SUBPROCESS_FLAGS = ("-q",)  # server-everything chats on stderr; keep ours readable


def run(*args: str, server: list[str], **kwargs: object) -> object:
    return mcp(*args, *SUBPROCESS_FLAGS, "--", *server, **kwargs)  # type: ignore[arg-type]


# -- info and ping --------------------------------------------------------------------


def test_info_reports_identity_capabilities_protocol_and_transport(everything: list[str]) -> None:
    r = run("info", "--json", server=everything)
    assert r.code == 0, r
    info = r.json
    assert info["serverInfo"]["name"] == "mcp-servers/everything"
    assert info["serverInfo"]["title"] == "Everything Reference Server"
    assert info["era"] == "legacy"
    assert info["protocolVersion"] == "2025-11-25"
    assert info["transport"] == "stdio"
    assert {"tools", "resources", "prompts", "logging", "completions"} <= set(info["capabilities"])
    assert "Everything Server" in info["instructions"]
    assert info["handshake"]["serverInfo"]["version"] == info["serverInfo"]["version"]
    assert "supportedVersions" not in info  # only modern servers list them


def test_info_with_a_forced_older_protocol(everything: list[str]) -> None:
    r = run("info", "--protocol", "2025-03-26", "--jq", ".protocolVersion", "--raw", server=everything)
    assert r.code == 0, r
    assert r.stdout.strip() == "2025-03-26"


def test_ping_counts_and_names_the_method(everything: list[str]) -> None:
    r = run("ping", "--count", "3", "--interval", "0", "--json", server=everything)
    assert r.code == 0, r
    summary = r.json
    assert summary["method"] == "ping"
    assert summary["count"] == 3 and len(summary["times"]) == 3
    assert summary["minMs"] <= summary["avgMs"] <= summary["maxMs"]
    assert all(t > 0 for t in summary["times"])


def test_ping_jsonl_prints_one_line_per_reply(everything: list[str]) -> None:
    r = run("ping", "-c", "2", "-i", "0", "--jsonl", server=everything)
    assert r.code == 0, r
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [line["seq"] for line in lines] == [1, 2]
    assert {line["method"] for line in lines} == {"ping"}


# -- tools ----------------------------------------------------------------------------


def test_tools_list_offers_elicitation_tools_but_not_sampling_or_roots_by_default(
    everything: list[str],
) -> None:
    r = run("tools", "list", "--jsonl", server=everything)
    assert r.code == 0, r
    names = {json.loads(line)["name"] for line in r.stdout.splitlines()}
    assert {"echo", "get-sum", "get-tiny-image", "trigger-elicitation-request"} <= names
    # Capabilities are declared only when we answer them: no sampling, no roots.
    assert "trigger-sampling-request" not in names
    assert "get-roots-list" not in names


def test_tools_call_keeps_string_fields_as_strings(everything: list[str]) -> None:
    r = run("tools", "call", "echo", "--arg", "message=007", server=everything)
    assert r.code == 0, r
    assert r.json["content"] == [{"type": "text", "text": "Echo: 007"}]


def test_tools_call_converts_numbers_by_schema(everything: list[str]) -> None:
    r = run("tools", "call", "get-sum", "--arg", "a=2", "--arg", "b=3.5", server=everything)
    assert r.code == 0, r
    assert "5.5" in r.json["content"][0]["text"]


def test_structured_content_is_printed_as_sent_and_jq_reaches_it(everything: list[str]) -> None:
    r = run("tools", "call", "get-structured-content", "--arg", "location=Chicago", server=everything)
    assert r.code == 0, r
    structured = r.json["structuredContent"]
    assert set(structured) >= {"temperature", "conditions", "humidity"}
    r2 = run("tools", "call", "get-structured-content", "--arg", "location=Chicago",
             "--jq", ".structuredContent | keys", server=everything)
    assert r2.code == 0, r2
    assert json.loads(r2.stdout) == sorted(structured)


def test_image_content_is_saved_with_save_dir(everything: list[str], tmp_path: Path) -> None:
    out = tmp_path / "saved"
    r = run("tools", "call", "get-tiny-image", "--save-dir", str(out), server=everything)
    assert r.code == 0, r
    image = next(b for b in r.json["content"] if b["type"] == "image")
    files = list(out.iterdir())
    assert len(files) == 1 and files[0].suffix == ".png"
    assert files[0].read_bytes() == base64.b64decode(image["data"])
    assert files[0].read_bytes().startswith(b"\x89PNG")
    assert "saved image/png" in r.stderr and str(files[0]) in r.stderr


def test_resource_links_are_returned(everything: list[str]) -> None:
    r = run("tools", "call", "get-resource-links", "--arg", "count=3", server=everything)
    assert r.code == 0, r
    links = [b for b in r.json["content"] if b["type"] == "resource_link"]
    assert len(links) == 3
    assert all(link["uri"].startswith("demo://resource/dynamic/") for link in links)


def test_embedded_text_and_blob_resources(everything: list[str], tmp_path: Path) -> None:
    r = run("tools", "call", "get-resource-reference", "--arg", "resourceType=Text",
            "--arg", "resourceId=4", server=everything)
    assert r.code == 0, r
    embedded = next(b for b in r.json["content"] if b["type"] == "resource")
    assert embedded["resource"]["uri"] == "demo://resource/dynamic/text/4"
    assert "Resource 4" in embedded["resource"]["text"]

    r = run("tools", "call", "get-resource-reference", "--arg", "resourceType=Blob",
            "--arg", "resourceId=2", "--save-dir", str(tmp_path / "out"), server=everything)
    assert r.code == 0, r
    blob = next(b for b in r.json["content"] if b["type"] == "resource")["resource"]
    saved = list((tmp_path / "out").iterdir())
    assert len(saved) == 1
    assert saved[0].read_bytes() == base64.b64decode(blob["blob"])


def test_annotations_travel_with_content(everything: list[str]) -> None:
    r = run("tools", "call", "get-annotated-message", "--arg", "messageType=error",
            "--arg", "includeImage=true", server=everything)
    assert r.code == 0, r
    text, image = r.json["content"][0], r.json["content"][1]
    assert text["annotations"]["priority"] == 1.0
    assert image["type"] == "image" and "annotations" in image


def test_progress_notifications_of_the_long_running_tool(everything: list[str]) -> None:
    r = run("tools", "call", "trigger-long-running-operation", "--arg", "duration=0.3",
            "--arg", "steps=3", "--trace", server=everything)
    assert r.code == 0, r
    assert "Long running operation completed" in r.json["content"][0]["text"]
    progress = [json.loads(line[2:]) for line in r.stderr.splitlines()
                if line.startswith("← ") and "notifications/progress" in line]
    assert [p["params"]["progress"] for p in progress] == [1, 2, 3]
    sent = next(json.loads(line[2:]) for line in r.stderr.splitlines()
                if line.startswith("→ ") and '"tools/call"' in line)
    # Our progress token is the one the server echoes (and it is not redacted).
    assert {p["params"]["progressToken"] for p in progress} == {sent["params"]["_meta"]["progressToken"]}


def test_log_messages_reach_stderr_with_log_level(everything: list[str]) -> None:
    r = run("tools", "call", "toggle-simulated-logging", "--log-level", "debug", server=everything)
    assert r.code == 0, r
    # The server sends one message of a random level at once.
    pattern = re.compile(r"^\[(debug|info|notice|warning|error|critical|alert|emergency)\] .*level.message",
                         re.IGNORECASE)
    assert any(pattern.match(line) for line in r.stderr.splitlines()), r.stderr


def test_log_level_sends_set_level(everything: list[str]) -> None:
    r = run("tools", "list", "--log-level", "error", "--trace", server=everything)
    assert r.code == 0, r
    assert '"method":"logging/setLevel","params":{"level":"error"}' in r.stderr


# -- client features --------------------------------------------------------------------


def test_elicitation_is_declined_without_a_tty(everything: list[str]) -> None:
    r = run("tools", "call", "trigger-elicitation-request", server=everything)
    assert r.code == 0, r
    assert "declined" in r.json["content"][0]["text"]
    assert "declined the server's request for input" in r.stderr


def test_elicit_json_answers_with_defaults_filling_gaps(everything: list[str]) -> None:
    r = run("tools", "call", "trigger-elicitation-request", "--elicit-json",
            '{"name": "Ada", "email": "ada@example.com", "unrelated": "not sent"}', server=everything)
    assert r.code == 0, r
    raw = r.json["content"][-1]["text"]
    answer = json.loads(raw[raw.index("{"):])
    assert answer["action"] == "accept"
    assert answer["content"]["name"] == "Ada"
    assert answer["content"]["integer"] == 42  # the schema's default
    assert "unrelated" not in answer["content"]


def test_elicit_defaults_declines_when_a_required_field_has_no_default(everything: list[str]) -> None:
    r = run("tools", "call", "trigger-elicitation-request", "--elicit-defaults", server=everything)
    assert r.code == 0, r
    assert "declined" in r.json["content"][0]["text"]
    assert "no value for required field name" in r.stderr


def test_elicit_flags_conflict(everything: list[str]) -> None:
    r = run("tools", "call", "echo", "--arg", "message=x", "--elicit-defaults",
            "--elicit-json", "{}", server=everything)
    assert r.code == 2
    assert "cannot be used together" in r.stderr


def test_sampling_request_is_answered_by_the_sampling_command(
    everything: list[str], tmp_path: Path
) -> None:
    seen = tmp_path / "request.json"
    script = tmp_path / "llm.py"
    script.write_text(
        "import json, sys\n"
        "req = json.load(sys.stdin)\n"
        f"open({str(seen)!r}, 'w').write(json.dumps(req))\n"
        "print('the sea is calm; ' + req['messages'][0]['content']['text'])\n"
    )
    r = run("tools", "call", "trigger-sampling-request", "--arg", "prompt=write a haiku",
            "--sampling-command", f"{sys.executable} {script}", server=everything)
    assert r.code == 0, r
    text = r.json["content"][0]["text"]
    reply = json.loads(text[text.index("{"):])
    assert reply["role"] == "assistant"
    assert reply["content"]["text"].startswith("the sea is calm; ")
    assert "write a haiku" in reply["content"]["text"]
    request = json.loads(seen.read_text())
    assert request["maxTokens"] == 100 and request["systemPrompt"]


def test_failing_sampling_command_is_an_error_for_the_server(everything: list[str]) -> None:
    r = run("tools", "call", "trigger-sampling-request", "--arg", "prompt=x",
            "--sampling-command", f"{sys.executable} -c 'import sys; sys.exit(3)'", server=everything)
    # We answer the server's request with a JSON-RPC error; server-everything turns it into
    # a tool error (isError), so the call exits 1.
    assert r.code == 1, r
    assert r.json["isError"] is True
    assert "sampling command exited with code 3" in r.json["content"][0]["text"]


def test_roots_are_offered_only_with_root(everything: list[str], tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    r = run("tools", "call", "get-roots-list", "--root", str(tmp_path / "proj"), server=everything)
    assert r.code == 0, r
    assert (tmp_path / "proj").resolve().as_uri() in r.json["content"][0]["text"]


def test_root_must_be_a_directory(everything: list[str], tmp_path: Path) -> None:
    r = run("tools", "list", "--root", str(tmp_path / "missing"), server=everything)
    assert r.code == 2
    assert "missing" in r.stderr


# -- resources --------------------------------------------------------------------------


def test_resources_list_and_templates(everything: list[str]) -> None:
    r = run("resources", "list", server=everything)
    assert r.code == 0, r
    uris = [res["uri"] for res in r.json["resources"]]
    assert "demo://resource/static/document/features.md" in uris
    r = run("resources", "templates", "--jsonl", server=everything)
    assert r.code == 0, r
    templates = [json.loads(line)["uriTemplate"] for line in r.stdout.splitlines()]
    assert templates == ["demo://resource/dynamic/text/{resourceId}",
                         "demo://resource/dynamic/blob/{resourceId}"]


def test_resources_read_text(everything: list[str]) -> None:
    r = run("resources", "read", "demo://resource/dynamic/text/3", server=everything)
    assert r.code == 0, r
    (content,) = r.json["contents"]
    assert content["uri"] == "demo://resource/dynamic/text/3"
    assert content["text"].startswith("Resource 3:")


def test_resources_read_blob_to_a_file(everything: list[str], tmp_path: Path) -> None:
    as_json = run("resources", "read", "demo://resource/dynamic/blob/5", server=everything)
    blob = base64.b64decode(as_json.json["contents"][0]["blob"])
    target = tmp_path / "blob.bin"
    r = run("resources", "read", "demo://resource/dynamic/blob/5", "--out", str(target), server=everything)
    assert r.code == 0, r
    assert r.stdout == ""  # the content went to the file
    assert target.read_bytes()[:10] == blob[:10]  # generated content has a timestamp at the end
    assert f"to {target}" in r.stderr


def test_resources_read_out_dash_writes_raw_bytes_to_a_pipe(everything: list[str]) -> None:
    r = run("resources", "read", "demo://resource/static/document/features.md", "--out", "-",
            server=everything)
    assert r.code == 0, r
    assert r.stdout.startswith("# Everything Server")


def test_resources_read_save_dir_with_json(everything: list[str], tmp_path: Path) -> None:
    r = run("resources", "read", "demo://resource/dynamic/blob/1", "--save-dir", str(tmp_path / "out"),
            server=everything)
    assert r.code == 0, r
    assert "blob" in r.json["contents"][0]
    (saved,) = (tmp_path / "out").iterdir()
    assert saved.read_bytes() == base64.b64decode(r.json["contents"][0]["blob"])


def test_reading_an_unknown_resource_is_a_server_error(everything: list[str]) -> None:
    r = run("resources", "read", "demo://nope/1", server=everything)
    assert r.code == 5, r
    assert r.stdout == ""
    assert r.stderr.count("mcp: error:") == 1 and "Traceback" not in r.stderr


# -- prompts ----------------------------------------------------------------------------


def test_prompts_list_and_get(everything: list[str]) -> None:
    r = run("prompts", "list", server=everything)
    assert r.code == 0, r
    names = [p["name"] for p in r.json["prompts"]]
    assert names == ["simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"]
    r = run("prompts", "get", "args-prompt", "--arg", "city=Paris", "--arg", "state=007", server=everything)
    assert r.code == 0, r
    text = r.json["messages"][0]["content"]["text"]
    assert "Paris" in text and "007" in text


def test_prompt_with_an_embedded_resource(everything: list[str]) -> None:
    r = run("prompts", "get", "resource-prompt", "--arg", "resourceType=Text", "--arg", "resourceId=2",
            server=everything)
    assert r.code == 0, r
    blocks = [m["content"] for m in r.json["messages"]]
    resource = next(b for b in blocks if b["type"] == "resource")
    assert resource["resource"]["uri"] == "demo://resource/dynamic/text/2"


def test_prompt_missing_required_argument_exits_2_and_sends_nothing(everything: list[str]) -> None:
    r = run("prompts", "get", "args-prompt", "--arg", "state=CA", "--trace", server=everything)
    assert r.code == 2, r
    assert "'city' is required" in r.stderr
    assert "prompts/get" not in r.stderr  # --trace shows every message we sent


def test_prompt_unknown_argument_and_unknown_prompt(everything: list[str]) -> None:
    r = run("prompts", "get", "args-prompt", "--arg", "city=X", "--arg", "country=Y", server=everything)
    assert r.code == 2, r
    assert "'country' is not a known field" in r.stderr
    r = run("prompts", "get", "args-promt", server=everything)
    assert r.code == 2, r
    assert "unknown prompt 'args-promt'" in r.stderr and "did you mean args-prompt" in r.stderr


# -- completion -------------------------------------------------------------------------


def test_complete_prompt_argument_with_context(everything: list[str]) -> None:
    r = run("complete", "--prompt", "completable-prompt", "department", "S", server=everything)
    assert r.code == 0, r
    assert r.json["completion"]["values"] == ["Sales", "Support"]
    r = run("complete", "--prompt", "completable-prompt", "name", "--context", "department=Engineering",
            "--jsonl", server=everything)
    assert r.code == 0, r
    assert [json.loads(line) for line in r.stdout.splitlines()] == ["Alice", "Bob", "Charlie"]


def test_complete_resource_template_variable(everything: list[str]) -> None:
    r = run("complete", "--resource", "demo://resource/dynamic/text/{resourceId}", "resourceId", "1",
            server=everything)
    assert r.code == 0, r
    assert r.json["completion"]["values"] == ["1"]


def test_complete_needs_exactly_one_reference(everything: list[str]) -> None:
    r = run("complete", "department", server=everything)
    assert r.code == 2
    assert "exactly one of --prompt" in r.stderr
    r = run("complete", "--prompt", "p", "--resource", "u", "a", server=everything)
    assert r.code == 2


def test_trace_redacts_secret_looking_values(everything: list[str]) -> None:
    r = run("tools", "call", "echo", "--args", '{"message": "hi", "api_key": "sk-live-123"}',
            "--no-validate", "--trace", server=everything)
    assert r.code == 0, r
    assert "sk-live-123" not in r.stderr
    call = next(json.loads(line[2:]) for line in r.stderr.splitlines()
                if line.startswith("→ ") and '"tools/call"' in line)
    assert call["params"]["arguments"] == {"message": "hi", "api_key": "«redacted»"}


def test_sampling_and_roots_tools_appear_when_those_capabilities_are_declared(
    everything: list[str], tmp_path: Path
) -> None:
    r = run("tools", "list", "--sampling-command", "true", "--root", str(tmp_path), "--jsonl",
            server=everything)
    assert r.code == 0, r
    names = {json.loads(line)["name"] for line in r.stdout.splitlines()}
    assert {"trigger-sampling-request", "get-roots-list"} <= names
