"""A server's surface: canonical form, the snapshot file, and what `mcp diff` calls breaking."""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import pytest
from helpers import REPO

from mcpcli.errors import NotOffered, UsageError
from mcpcli.surface import KINDS, canonical, collect, compare, dumps, loads


def kinds(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c.kind, c.subject) for c in compare(canonical(old), canonical(new))]


def tool(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, **more}


def test_canonical_sorts_lists_and_drops_what_changes_between_runs() -> None:
    surface = canonical({
        "serverInfo": {"name": "s", "version": "1"},
        "capabilities": {"tools": {}},
        "tools": [tool("b", _meta={"io.modelcontextprotocol/x": 1}), tool("a", _meta={"mine": 1})],
        "resources": [{"uri": "z://", "name": "z", "size": 12, "annotations": {"lastModified": "2026-01-01"}},
                      {"uri": "a://", "name": "a", "annotations": {"priority": 1, "lastModified": "x"}}],
        "resourceTemplates": [{"uriTemplate": "t://{x}", "name": "t"}],
        "prompts": [{"name": "p", "arguments": [{"name": "z"}, {"name": "a"}]}, "not an item"],
    })
    assert [t["name"] for t in surface["tools"]] == ["a", "b"]
    assert surface["tools"][0]["_meta"] == {"mine": 1} and "_meta" not in surface["tools"][1]
    assert surface["resources"] == [{"uri": "a://", "name": "a", "annotations": {"priority": 1}},
                                    {"uri": "z://", "name": "z"}]
    assert [a["name"] for a in surface["prompts"][0]["arguments"]] == ["z", "a"]  # the server's order
    assert surface["mcpSnapshot"] == 1
    assert canonical(surface) == surface


def test_the_file_is_stable_text_and_reads_back() -> None:
    surface = canonical({"serverInfo": {"name": "é"}, "capabilities": {}, "tools": [tool("b"), tool("a")]})
    text = dumps(surface)
    assert text.endswith("}\n") and "é" in text
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert loads(text.encode(), "s.json") == surface
    assert dumps(loads(text, "s.json")) == text


@pytest.mark.parametrize(("data", "message"), [
    (b"{", "s.json: not a snapshot: invalid JSON"),
    (b"[]", "s.json: not a snapshot (no 'mcpSnapshot' field)"),
    (b'{"tools": []}', "s.json: not a snapshot (no 'mcpSnapshot' field)"),
    (b'{"mcpSnapshot": 2}', "s.json: snapshot format 2 is newer than this mcpcli reads (1)"),
    (b'{"mcpSnapshot": "1"}', "s.json: unknown snapshot format '1' (expected 1)"),
    (b'{"mcpSnapshot": 1, "n": NaN}', "s.json: not a snapshot: invalid JSON"),
])
def test_what_is_not_a_snapshot(data: bytes, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        loads(data, "s.json")
    assert caught.value.message.startswith(message)


class FakeLister:
    server_info = {"name": "fake", "version": "1"}
    protocol_version = "2025-11-25"
    capabilities = {"tools": {}}
    instructions = None

    async def list_tools(self) -> dict[str, Any]:
        return {"tools": [tool("b"), tool("a")], "nextCursor": None, "ttlMs": 5, "_meta": {"x": 1}}

    async def list_resources(self) -> dict[str, Any]:
        raise NotOffered("fake", "resources", "resources")

    async def list_resource_templates(self) -> dict[str, Any]:
        raise NotOffered("fake", "resources", "resource templates")

    async def list_prompts(self) -> dict[str, Any]:
        return {}


def test_collect_keeps_the_items_only_and_an_unoffered_list_is_empty() -> None:
    surface = anyio.run(collect, FakeLister())
    assert surface == {
        "mcpSnapshot": 1, "serverInfo": {"name": "fake", "version": "1"}, "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}}, "tools": [tool("a"), tool("b")], "resources": [],
        "resourceTemplates": [], "prompts": [],
    }


def test_capabilities_dropped_are_breaking_added_are_not() -> None:
    old = {"capabilities": {"tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True},
                            "logging": {}}}
    new = {"capabilities": {"tools": {"listChanged": False}, "resources": {"listChanged": True}, "prompts": {}}}
    assert kinds(old, new) == [
        ("capability-removed", "capability logging"),
        ("capability-added", "capability prompts"),
        ("capability-removed", "capability resources.subscribe"),
        ("capability-removed", "capability tools.listChanged"),
    ]


def test_tools() -> None:
    old = {"tools": [tool("a", description="x", annotations={"readOnlyHint": True}), tool("gone"),
                     tool("t", execution={"taskSupport": "optional"}), tool("i", icons=[{"src": "a.png"}])]}
    new = {"tools": [tool("a", description="y", annotations={"readOnlyHint": False}), tool("new"),
                     tool("t", execution={"taskSupport": "required"}), tool("i", icons=[{"src": "b.png"}])]}
    assert kinds(old, new) == [
        ("tool-description-changed", "tool a"), ("tool-annotations-changed", "tool a"),
        ("tool-removed", "tool gone"), ("tool-changed", "tool i"), ("tool-added", "tool new"),
        ("tool-task-required", "tool t"),
    ]
    back = kinds(new, old)
    assert ("tool-task-support-changed", "tool t") in back


def test_output_schemas() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert kinds({"tools": [tool("a", outputSchema=schema)]}, {"tools": [tool("a")]}) == [
        ("output-schema-removed", "tool a output")]
    assert kinds({"tools": [tool("a")]}, {"tools": [tool("a", outputSchema=schema)]}) == [
        ("output-schema-added", "tool a output")]
    assert kinds({"tools": [tool("a", outputSchema=schema)]},
                 {"tools": [tool("a", outputSchema={"type": "object", "properties": {}})]}) == [
        ("output-field-removed", "tool a output n")]


def test_templates_prompts_and_resources() -> None:
    old = {
        "resourceTemplates": [{"uriTemplate": "a://{x}", "name": "a"}, {"uriTemplate": "b://{x}", "name": "b"}],
        "resources": [{"uri": "r://1", "name": "one"}, {"uri": "r://2", "name": "two"}],
        "prompts": [{"name": "p", "arguments": [{"name": "keep", "required": True}, {"name": "drop"},
                                                {"name": "opt"}, {"name": "req", "required": True}]},
                    {"name": "gone"}],
    }
    new = {
        "resourceTemplates": [{"uriTemplate": "a://{x}", "name": "A"}],
        "resources": [{"uri": "r://1", "name": "ONE"}, {"uri": "r://3", "name": "three"}],
        "prompts": [{"name": "p", "description": "new", "arguments": [
            {"name": "keep", "required": True, "description": "d"}, {"name": "opt", "required": True},
            {"name": "req"}, {"name": "more", "required": True}, {"name": "extra"}]}],
    }
    found = compare(canonical(old), canonical(new))
    assert [(c.kind, c.subject, c.breaking) for c in found] == [
        ("template-changed", "template a://{x}", False),
        ("template-removed", "template b://{x}", True),
        ("prompt-removed", "prompt gone", True),
        ("prompt-description-changed", "prompt p", False),
        ("prompt-argument-removed", "prompt p argument drop", True),
        ("prompt-argument-added", "prompt p argument extra", False),
        ("prompt-argument-description-changed", "prompt p argument keep", False),
        ("prompt-required-argument-added", "prompt p argument more", True),
        ("prompt-argument-now-required", "prompt p argument opt", True),
        ("prompt-argument-now-optional", "prompt p argument req", False),
        ("resource-changed", "resource r://1", False),
        ("resource-removed", "resource r://2", False),
        ("resource-added", "resource r://3", False),
    ]


def test_server_version_and_protocol_are_not_changes() -> None:
    old = {"serverInfo": {"name": "s", "version": "1.0"}, "protocolVersion": "2025-06-18"}
    new = {"serverInfo": {"name": "s", "version": "1.1"}, "protocolVersion": "2025-11-25", "instructions": "hi"}
    assert kinds(old, new) == [("instructions-changed", "server instructions")]


def test_every_kind_is_in_the_readme_table_with_its_verdict() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([a-z-]+)` \| (yes|no) \|", readme, re.MULTILINE))
    assert {kind: "yes" if breaking else "no" for kind, breaking in KINDS.items()} == rows
