"""Output modes: text, json + outputSchema, image/audio/blob, raw MCP results, files, mocks, masking."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from toolsfile.util import FakeContext, text_of

pytestmark = pytest.mark.anyio

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def py_tool(name: str, code: str, output: str, extra: str = "") -> str:
    lines = "\n".join("          " + line for line in code.strip("\n").splitlines())
    return f"""
  - name: {name}
    description: test
    run:
      argv:
        - "{{{{ mcp.python }}}}"
        - -c
        - |
{lines}
{extra}
    output: {output}"""


async def test_json_output_becomes_structured_content(make_backend: Any) -> None:
    backend = make_backend("version: 1\ntools:" + "".join([
        py_tool("obj", "import json; print(json.dumps({'n': 1, 's': 'é'}))",
                "{format: json, schema: {type: object, properties: {n: {type: integer}}, required: [n]}}"),
        py_tool("arr", "print('[1, 2]')", "{format: json}"),
        py_tool("bad", "print('{not json')", "{format: json}"),
        py_tool("garbage", "print('{\"a\": 1} trailing')", "{format: json}"),
        py_tool("wrong", "print('{\"n\": \"x\"}')",
                "{format: json, schema: {type: object, properties: {n: {type: integer}}}}"),
    ]) + "\n")
    listing = {t["name"]: t for t in await backend.list_tools()}
    assert listing["obj"]["outputSchema"]["required"] == ["n"]
    assert "outputSchema" not in listing["arr"]
    result = await backend.call_tool("obj", {}, FakeContext())
    assert result["structuredContent"] == {"n": 1, "s": "é"}
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    legacy = await backend.call_tool("arr", {}, FakeContext(era="legacy"))
    assert legacy["structuredContent"] == {"result": [1, 2]}
    modern = await backend.call_tool("arr", {}, FakeContext(era="modern", protocol_version="2026-07-28"))
    assert modern["structuredContent"] == [1, 2]
    for name, fragment in (("bad", "not valid JSON"), ("garbage", "not valid JSON"),
                           ("wrong", "does not match its outputSchema")):
        result = await backend.call_tool(name, {}, FakeContext())
        assert result.get("isError"), name
        assert fragment in text_of(result)
        assert "stdout:" in text_of(result)


async def test_media_output(make_backend: Any, tmp_path: Path) -> None:
    (tmp_path / "pixel.png").write_bytes(PNG)
    backend = make_backend("""
    version: 1
    tools:
      - {name: image, description: x, run: {argv: [cat, pixel.png]}, output: {format: image, mime_type: image/png}}
      - {name: audio, description: x, run: {argv: [printf, RIFF]}, output: {format: audio, mime_type: audio/wav}}
      - {name: blob, description: x, run: {argv: [cat, pixel.png]},
         output: {format: blob, mime_type: application/x-thing}}
      - {name: empty, description: x, run: {argv: ["true"]}, output: {format: image, mime_type: image/png}}
    """)
    result = await backend.call_tool("image", {}, FakeContext())
    assert result == {"content": [{"type": "image", "mimeType": "image/png",
                                   "data": base64.b64encode(PNG).decode()}]}
    result = await backend.call_tool("audio", {}, FakeContext())
    assert result["content"][0] == {"type": "audio", "mimeType": "audio/wav", "data": base64.b64encode(b"RIFF").decode()}
    result = await backend.call_tool("blob", {}, FakeContext())
    assert result["content"][0]["resource"]["mimeType"] == "application/x-thing"
    result = await backend.call_tool("empty", {}, FakeContext())
    assert result.get("isError")
    assert "produced no output" in text_of(result)


async def test_mcp_output_passes_a_result_through(make_backend: Any) -> None:
    good = {"content": [{"type": "text", "text": "hi"}, {"type": "resource_link", "uri": "x:y", "name": "y"}],
            "structuredContent": {"a": 1}, "isError": True, "extra": "dropped"}
    backend = make_backend("version: 1\ntools:" + "".join([
        py_tool("good", f"print({json.dumps(json.dumps(good))})", "{format: mcp}"),
        py_tool("bad", "print('{\"content\": [{\"type\": \"nope\"}]}')", "{format: mcp}"),
        py_tool("notjson", "print('hello')", "{format: mcp}"),
    ]) + "\n")
    result = await backend.call_tool("good", {}, FakeContext())
    assert result == {k: v for k, v in good.items() if k != "extra"}
    for name in ("bad", "notjson"):
        result = await backend.call_tool(name, {}, FakeContext())
        assert result.get("isError")
        assert "not a valid MCP result" in text_of(result)


async def test_files_written_by_the_tool_are_attached(make_backend: Any, tmp_path: Path) -> None:
    (tmp_path / "pixel.png").write_bytes(PNG)
    backend = make_backend("""
    version: 1
    tools:
      - name: report
        description: writes files
        run:
          shell: sh
          script: |
            cp pixel.png "$MCP_OUTPUT_DIR/chart.png"
            printf 'a,b\\n1,2\\n' > "$MCP_OUTPUT_DIR/data.csv"
            head -c 5000 /dev/zero > "$MCP_OUTPUT_DIR/big.bin"
            ln -s /etc/passwd "$MCP_OUTPUT_DIR/leak.txt"
            echo "$MCP_OUTPUT_DIR" > where
            echo summary
        output:
          files:
            - {glob: "*.png"}
            - {glob: "*.csv", mime_type: text/csv}
            - {glob: "*.bin", max_bytes: 1KiB}
            - {glob: "*.txt"}
    """)
    result = await backend.call_tool("report", {}, FakeContext())
    content = result["content"]
    assert content[0] == {"type": "text", "text": "summary\n"}
    assert content[1] == {"type": "image", "mimeType": "image/png", "data": base64.b64encode(PNG).decode()}
    assert content[2] == {"type": "resource", "resource": {"uri": "mcp-output:data.csv", "mimeType": "text/csv",
                                                            "text": "a,b\n1,2\n"}}
    assert "big.bin: skipped, 4.9KiB is over max_bytes=1KiB" in content[3]["text"]
    assert "leak.txt: skipped, a symbolic link" in content[4]["text"]
    assert "root:" not in json.dumps(result)
    out_dir = (tmp_path / "where").read_text().strip()
    assert not os.path.exists(out_dir)


async def test_output_dir_is_removed_after_a_timeout(make_backend: Any, tmp_path: Path) -> None:
    backend = make_backend("""
    version: 1
    tools:
      - name: slow
        description: x
        run:
          shell: sh
          script: echo "$MCP_OUTPUT_DIR" > where; touch "$MCP_OUTPUT_DIR/x.txt"; sleep 100
          timeout: 0.3s
          kill_grace: 0.2s
        output: {files: [{glob: "*"}]}
    """)
    result = await backend.call_tool("slow", {}, FakeContext())
    assert result.get("isError")
    assert not os.path.exists((tmp_path / "where").read_text().strip())


async def test_secrets_are_masked_and_never_listed(make_backend: Any) -> None:
    backend = make_backend("""
    version: 1
    secrets:
      API_KEY: {from_env: API_KEY}
    tools:
      - name: leaky
        description: prints its secret
        run:
          shell: sh
          script: echo "key=$KEY"; echo "err $KEY" >&2; mcp script log info "log $KEY"; exit 1
          env: {KEY: {secret: API_KEY}}
    """, environ={"API_KEY": "sk-live-0123456789"})
    ctx = FakeContext()
    result = await backend.call_tool("leaky", {}, ctx)
    dumped = json.dumps(result) + json.dumps(ctx.events) + json.dumps(await backend.list_tools())
    assert "sk-live-0123456789" not in dumped
    assert "key=***" in text_of(result)
    assert "err ***" in text_of(result)
    assert ctx.of("log") == [("log", "info", "log ***", "leaky")]


async def test_mocks(make_backend: Any) -> None:
    backend = make_backend("""
    version: 1
    tools:
      - {name: hello, description: x, params: {name: {type: string, default: world}}, mock: {text: "Hello, {{ name }}!"}}
      - {name: data, description: x, mock: {json: {a: 1}}}
      - {name: oops, description: x, mock: {error: "always fails"}}
      - {name: blocks, description: x, mock: {content: [{type: text, text: one}, {type: text, text: two}]}}
    """)
    assert text_of(await backend.call_tool("hello", {"name": "$(id) {{ x }}"}, FakeContext())) == "Hello, $(id) {{ x }}!"
    assert (await backend.call_tool("data", {}, FakeContext()))["structuredContent"] == {"a": 1}
    assert await backend.call_tool("oops", {}, FakeContext()) == {
        "content": [{"type": "text", "text": "always fails"}], "isError": True}
    assert text_of(await backend.call_tool("blocks", {}, FakeContext())) == "one\ntwo"


async def test_an_author_written_input_schema_is_published_and_enforced(make_backend: Any) -> None:
    backend = make_backend("""
    version: 1
    tools:
      - name: doc
        description: takes a nested document
        input_schema:
          $schema: https://json-schema.org/draft/2020-12/schema
          type: object
          $defs: {point: {type: object, properties: {x: {type: number}}, required: [x]}}
          properties: {points: {type: array, items: {$ref: "#/$defs/point"}}}
          required: [points]
          additionalProperties: false
        run:
          argv: ["{{ mcp.python }}", -c, "import json, sys; print(sum(p['x'] for p in json.load(sys.stdin)['points']))"]
          stdin: json
    """)
    listing = (await backend.list_tools())[0]
    assert listing["inputSchema"]["$defs"]["point"]["required"] == ["x"]
    result = await backend.call_tool("doc", {"points": [{"x": 1}, {"x": 2.5}]}, FakeContext())
    assert text_of(result) == "3.5\n"
    result = await backend.call_tool("doc", {"points": [{"y": 1}]}, FakeContext())
    assert result.get("isError")
    assert "points.0.x: is required" in text_of(result)
