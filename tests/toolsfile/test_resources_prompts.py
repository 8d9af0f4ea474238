"""Resources (text, files, directories, commands, templates), prompts and completion."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from mcpcli.errors import RPCError
from mcpcli.server.backend import ResourceNotFound
from toolsfile.util import FakeContext

pytestmark = pytest.mark.anyio


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "docs" / "guide").mkdir(parents=True)
    (tmp_path / "docs" / "intro.md").write_text("# Intro\n")
    (tmp_path / "docs" / "guide" / "setup.md").write_text("# Setup\n")
    (tmp_path / "docs" / ".secret.md").write_text("hidden\n")
    (tmp_path / "docs" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00")
    (tmp_path / "docs" / "escape.md").symlink_to("/etc/passwd")
    (tmp_path / "notes.txt").write_text("plain notes\n")
    return tmp_path


RESOURCES = """
version: 1
resources:
  - {uri: "mem://hello", name: hello, text: "Hello there", mime_type: text/plain}
  - {uri: "mem://notes", name: notes, file: notes.txt}
  - {name: logo, file: docs/logo.png}
  - {uri: "cmd://date", name: command, command: {argv: [printf, "%s", "$(not a shell)"]}}
  - {uri: "cmd://fails", name: failing, command: {shell: sh, script: "echo bad >&2; exit 2"}}
  - {uri: "docs://", name: docs, directory: docs, glob: "*.md"}
  - uri_template: "item://{id}/data"
    name: item
    mime_type: application/json
    command:
      argv: ["{{ mcp.python }}", -c, "import json, os; print(json.dumps({'id': os.environ['MCP_ARG_ID']}))"]
    params: {id: {type: string, pattern: '[0-9]+', complete: ["1", "12", "123", "2"]}}
  - uri_template: "page://{+path}"
    name: page
    file: "docs/{{ path }}"
  - uri_template: "greet://{name}"
    name: greeting
    text: "Hi {{ name }}"
    params: {name: {type: string, enum: [ada, alan, grace]}}
"""


async def test_listing(make_backend: Any, project: Path) -> None:
    backend = make_backend(RESOURCES)
    resources = await backend.list_resources()
    uris = [r["uri"] for r in resources]
    assert uris[:4] == ["mem://hello", "mem://notes", f"file://{(project / 'docs' / 'logo.png').resolve()}",
                        "cmd://date"]
    assert "docs://intro.md" in uris
    assert "docs://guide/setup.md" in uris
    assert not any(".secret" in u or "escape" in u or "logo" in u for u in uris if u.startswith("docs://"))
    templates = await backend.list_resource_templates()
    assert [t["uriTemplate"] for t in templates] == ["item://{id}/data", "page://{+path}", "greet://{name}"]


async def test_reading(make_backend: Any, project: Path) -> None:
    backend = make_backend(RESOURCES)
    ctx = FakeContext()
    read = backend.read_resource
    assert await read("mem://hello", ctx) == {"contents": [
        {"uri": "mem://hello", "mimeType": "text/plain", "text": "Hello there"}]}
    assert (await read("mem://notes", ctx))["contents"][0]["text"] == "plain notes\n"
    logo_uri = f"file://{(project / 'docs' / 'logo.png').resolve()}"
    logo = (await read(logo_uri, ctx))["contents"][0]
    assert logo["mimeType"] == "image/png"
    assert base64.b64decode(logo["blob"]) == (project / "docs" / "logo.png").read_bytes()
    assert (await read("cmd://date", ctx))["contents"][0]["text"] == "$(not a shell)"
    with pytest.raises(RPCError) as info:
        await read("cmd://fails", ctx)
    assert "exit code 2" in info.value.rpc_message
    assert "bad" in info.value.rpc_message
    assert (await read("docs://guide/setup.md", ctx))["contents"][0]["text"] == "# Setup\n"
    assert json.loads((await read("item://123/data", ctx))["contents"][0]["text"]) == {"id": "123"}
    assert (await read("page://guide/setup.md", ctx))["contents"][0]["text"] == "# Setup\n"
    assert (await read("greet://ada", ctx))["contents"][0]["text"] == "Hi ada"


@pytest.mark.parametrize(
    "uri",
    ["mem://nope", "docs://.secret.md", "docs://escape.md", "docs://../notes.txt", "docs://%2e%2e/notes.txt",
     "page://missing.md"],
)
async def test_not_found(make_backend: Any, project: Path, uri: str) -> None:
    backend = make_backend(RESOURCES)
    with pytest.raises(ResourceNotFound):
        await backend.read_resource(uri, FakeContext())


@pytest.mark.parametrize(
    "uri", ["item://12a/data", "page://../notes.txt", "page://escape.md", "greet://bob", "page://a/%2e%2e/../../x"]
)
async def test_template_values_are_validated_and_contained(make_backend: Any, project: Path, uri: str) -> None:
    backend = make_backend(RESOURCES)
    with pytest.raises(RPCError) as info:
        await backend.read_resource(uri, FakeContext())
    assert info.value.code == -32602


PROMPTS = """
version: 1
resources:
  - {uri: "mem://rules", name: rules, text: "Be kind.", mime_type: text/plain}
prompts:
  - name: review
    description: Review code
    arguments:
      lang: {description: Language, enum: [python, go, rust]}
      style: {default: strict, complete: {argv: [printf, "strict\\nstrong\\nlenient\\n"]}}
    messages:
      - text: "Review this {{ lang }} code, {{ style }} style."
      - resource: mem://rules
      - role: assistant
        resource: {uri: "inline://{{ lang }}", text: "notes for {{ lang }}"}
      - image: pixel.png
  - name: scripted
    arguments: {who: {required: true}}
    run: {argv: [printf, "Hello %s", "{{ who }}"]}
  - name: structured
    run:
      argv: ["{{ mcp.python }}", -c, "import json; print(json.dumps({'messages': [{'role': 'user', 'content': {'type': 'text', 'text': 'x'}}], 'description': 'd'}))"]
    output: {format: mcp}
"""


async def test_prompts(make_backend: Any, tmp_path: Path) -> None:
    (tmp_path / "pixel.png").write_bytes(b"\x89PNG")
    backend = make_backend(PROMPTS)
    listing = await backend.list_prompts()
    assert listing[0] == {"name": "review", "description": "Review code", "arguments": [
        {"name": "lang", "description": "Language", "required": True}, {"name": "style", "required": False}]}
    ctx = FakeContext()
    result = await backend.get_prompt("review", {"lang": "go"}, ctx)
    assert result["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Review this go code, strict style."}},
        {"role": "user", "content": {"type": "resource", "resource": {
            "uri": "mem://rules", "mimeType": "text/plain", "text": "Be kind."}}},
        {"role": "assistant", "content": {"type": "resource", "resource": {
            "uri": "inline://go", "mimeType": "text/plain", "text": "notes for go"}}},
        {"role": "user", "content": {"type": "image", "mimeType": "image/png",
                                     "data": base64.b64encode(b"\x89PNG").decode()}},
    ]
    assert (await backend.get_prompt("scripted", {"who": "$(id)"}, ctx))["messages"][0]["content"]["text"] == "Hello $(id)"
    assert (await backend.get_prompt("structured", {}, ctx))["description"] == "d"
    for name, args, fragment in (
        ("review", {}, "missing required argument 'lang'"),
        ("review", {"lang": "cobol"}, "'cobol' is not one of python, go, rust"),
        ("review", {"lang": "go", "extra": "x"}, "unknown argument 'extra'"),
        ("nope", {}, "Unknown prompt"),
    ):
        with pytest.raises(RPCError) as info:
            await backend.get_prompt(name, args, ctx)
        assert info.value.code == -32602
        assert fragment in info.value.rpc_message


async def test_completion(make_backend: Any, project: Path) -> None:
    backend = make_backend(RESOURCES + PROMPTS.replace("version: 1\nresources:\n  - {uri: \"mem://rules\", name: "
                                                       "rules, text: \"Be kind.\", mime_type: text/plain}\n", ""))
    complete = backend.complete
    prompt = {"type": "ref/prompt", "name": "review"}
    assert await complete(prompt, {"name": "lang", "value": "r"}, {}) == {
        "completion": {"values": ["rust"], "total": 1, "hasMore": False}}
    assert (await complete(prompt, {"name": "style", "value": "st"}, {}))["completion"]["values"] == ["strict", "strong"]
    assert (await complete(prompt, {"name": "style", "value": "L"}, {}))["completion"]["values"] == ["lenient"]
    template = {"type": "ref/resource", "uri": "item://{id}/data"}
    assert (await complete(template, {"name": "id", "value": "1"}, {}))["completion"]["values"] == ["1", "12", "123"]
    greet = {"type": "ref/resource", "uri": "greet://{name}"}
    assert (await complete(greet, {"name": "name", "value": "a"}, {}))["completion"]["values"] == ["ada", "alan"]
    assert (await complete(prompt, {"name": "unknown", "value": ""}, {}))["completion"]["values"] == []
    with pytest.raises(RPCError):
        await complete({"type": "ref/prompt", "name": "nope"}, {"name": "x", "value": ""}, {})
