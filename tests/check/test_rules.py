"""The rules of `mcp check`, one function at a time: findings, lint, model providers, result
shapes per revision and the order of messages (no server, no process)."""

from __future__ import annotations

from typing import Any

import pytest

from mcpcli.check.findings import Finding, Report
from mcpcli.check.lint import lint_tools
from mcpcli.check.providers import PROVIDERS, check_providers
from mcpcli.check.schemas import refs
from mcpcli.check.shapes import Shapes
from mcpcli.check.traffic import Traffic
from mcpcli.core.jsonrpc import Notification, Request, Response

OBJECT: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def tool(name: str = "t", schema: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": "d", "inputSchema": OBJECT if schema is None else schema, **extra}


def codes(report: Report, severity: str | None = None) -> list[str]:
    return [f.code for f in report.findings if severity is None or f.severity == severity]


def lint(*tools: dict[str, Any], revision: str = "2025-11-25", modern: bool = False) -> Report:
    report = Report()
    lint_tools(report, list(tools), revision=revision, modern=modern)
    return report


# -- findings ----------------------------------------------------------------------------


def test_a_finding_with_an_undocumented_code_is_a_bug() -> None:
    with pytest.raises(ValueError, match="undocumented"):
        Finding("error", "no-such-code", "x")


def test_strict_makes_warnings_fail() -> None:
    report = Report()
    report.add("c", "warning", "tool-name", "x", "t")
    report.add("c", "info", "provider-strict", "y", "t")
    assert report.ok() and not report.ok(strict=True)
    assert report.checks["c"].status() == "warning"
    assert report.checks["c"].status(strict=True) == "failed"
    data = report.to_json(strict=True)
    assert data["summary"] == {"errors": 0, "warnings": 1, "infos": 1, "checks": 1}
    assert data["findings"][0] == {"severity": "warning", "code": "tool-name", "subject": "t", "message": "x",
                                   "check": "c"}


# -- lint ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "ok"), [
    ("getUser", True), ("DATA_EXPORT_v2", True), ("admin.tools.list", True), ("a" * 128, True),
    ("a" * 129, False), ("", False), ("has space", False), ("comma,", False), ("ünïcode", False),
])
def test_tool_names_follow_the_spec_rule(name: str, ok: bool) -> None:
    assert ("tool-name" not in codes(lint(tool(name)))) is ok


def test_duplicates_missing_descriptions_and_non_object_schemas() -> None:
    report = lint(tool("a"), tool("a"), {"name": "b", "inputSchema": OBJECT}, tool("c", {"type": "array"}),
                  {"name": "d", "description": "x"})
    assert set(codes(report, "error")) == {"duplicate-name", "input-schema"}
    assert codes(report, "warning") == ["missing-description"]
    assert {f.subject for f in report.findings if f.code == "input-schema"} == {"c", "d"}


def test_required_naming_nothing() -> None:
    closed = lint(tool(schema={**OBJECT, "required": ["x"]}))
    assert [(f.code, f.severity) for f in closed.findings] == [("schema-required", "error")]
    open_ = lint(tool(schema={"type": "object", "properties": {}, "required": ["x"]}))
    assert [(f.code, f.severity) for f in open_.findings] == [("schema-required", "warning")]
    # a branch of a composition constrains properties defined around it: fine
    branches = {"type": "object", "properties": {"a": {}, "b": {}}, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
    assert "schema-required" not in codes(lint(tool(schema=branches)))


def test_references() -> None:
    schema = {
        "type": "object",
        "$defs": {"x": {"type": "string", "$anchor": "ex"}},
        "properties": {
            "a": {"$ref": "#/$defs/x"}, "b": {"$ref": "#ex"}, "c": {"$ref": "#/$defs/missing"},
            "d": {"$ref": "https://example.com/s.json"}, "e": {"$ref": "other.json"}, "f": {"$ref": "#"},
            "g": {"$ref": "#/properties/a~1b"},
        },
    }
    found = {path: target for path, _, target in refs(schema)}
    assert found == {"properties.a": "local", "properties.b": "local", "properties.c": "missing",
                     "properties.d": "remote", "properties.e": "missing", "properties.f": "local",
                     "properties.g": "missing"}
    report = lint(tool(schema=schema))
    assert codes(report, "error").count("schema-ref") == 3
    assert codes(report, "warning") == ["schema-remote-ref"]


def test_invalid_schemas_and_output_schemas() -> None:
    report = lint(tool("i", {"type": "object", "properties": {"a": {"type": 7}}}),
                  tool("o", outputSchema={"type": "array", "items": {}}))
    assert codes(report, "error") == ["schema-invalid", "output-schema"]
    # 2026-07-28 allows any JSON Schema as the output schema
    assert codes(lint(tool("o", outputSchema={"type": "array"}), revision="2026-07-28", modern=True)) == []


def test_x_mcp_header_only_matters_to_a_2026_server() -> None:
    bad = tool(schema={"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}})
    assert "tool-header" not in codes(lint(bad))
    assert "tool-header" in codes(lint(bad, revision="2026-07-28", modern=True))


# -- model providers -------------------------------------------------------------------------


def provider_findings(*tools: dict[str, Any]) -> list[tuple[str, str | None, str | None, str]]:
    report = Report()
    check_providers(report, list(tools))
    return [(f.code, f.provider, f.subject, f.severity) for f in report.findings]


def test_every_rule_names_its_source() -> None:
    for provider in PROVIDERS:
        for rule in (provider.tool_name, provider.property_name, provider.root_forbidden, provider.max_tools,
                     provider.keywords):
            if rule is not None:
                assert rule[1].source.startswith("https://"), (provider.key, rule)


def test_tool_names_per_provider() -> None:
    found = provider_findings(tool("dotted.name"), tool("x" * 65), tool("9lives"), tool("fine_name-1"))
    assert ("provider-tool-name", "openai", "dotted.name", "warning") in found
    assert ("provider-tool-name", "anthropic", "dotted.name", "warning") in found
    assert not any(f[1] == "gemini" and f[2] == "dotted.name" for f in found)  # Gemini takes dots
    assert {f[1] for f in found if f[2] == "x" * 65} == {"openai", "anthropic", "gemini"}
    assert [f[1] for f in found if f[2] == "9lives"] == ["gemini"]  # must start with a letter or _
    assert not any(f[2] == "fine_name-1" for f in found)


def test_property_names_root_composition_and_tool_count() -> None:
    keys = tool("k", {"type": "object", "properties": {"filter[id]": {"type": "string"}}, "required": ["filter[id]"],
                      "additionalProperties": False})
    root = tool("r", {"type": "object", "oneOf": [{"properties": {"a": {"type": "string"}}}]})
    found = provider_findings(keys, root, *(tool(f"t{i}") for i in range(127)))
    assert ("provider-property-name", "anthropic", "k", "warning") in found
    assert ("provider-property-name", "gemini", "k", "info") in found
    assert ("provider-schema-root", "openai", "r", "warning") in found
    assert ("provider-schema-root", "anthropic", "r", "warning") in found
    assert ("provider-tool-count", "openai", None, "warning") in found  # 129 tools


def test_openai_strict_mode_and_gemini_keywords_are_notes() -> None:
    loose = tool("l", {"type": "object", "properties": {"a": {"type": ["string", "null"], "const": "x"}}})
    found = provider_findings(loose)
    assert ("provider-strict", "openai", "l", "info") in found
    assert ("provider-keyword", "gemini", "l", "info") in found
    assert provider_findings(tool("tight")) == []


# -- result shapes ---------------------------------------------------------------------------


def test_content_types_per_revision() -> None:
    audio = {"content": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]}
    link = {"content": [{"type": "resource_link", "uri": "file:///x", "name": "x"}]}
    old = Shapes("2024-11-05")
    old.call_result(audio, "t")
    assert [p.severity for p in old.problems] == ["error"]
    mid = Shapes("2025-03-26")
    mid.call_result(audio, "t")
    mid.call_result(link, "t")
    assert len(mid.problems) == 1 and "resource_link" in mid.problems[0].message
    Shapes("2025-06-18").call_result(link, "t")


def test_shapes_of_results() -> None:
    shapes = Shapes("2025-11-25")
    shapes.call_result({"content": [{"type": "image", "data": "not base64!", "mimeType": "image/png"}],
                        "structuredContent": [1]}, "t")
    shapes.initialize_result({"protocolVersion": "2025-11-25", "capabilities": {"tools": []},
                              "serverInfo": {"name": "x"}})
    shapes.resource({"uri": "no-scheme", "name": "n"}, "r[0]")
    messages = [p.message for p in shapes.problems]
    assert any("not base64" in m for m in messages)
    assert any("structuredContent is array" in m for m in messages)
    assert any("capabilities.tools is array" in m for m in messages)
    assert any("serverInfo.version is missing" in m for m in messages)
    assert any("not an absolute URI" in m for m in messages)
    # 2026-07-28: structuredContent may be any JSON value
    modern = Shapes("2026-07-28")
    modern.call_result({"resultType": "complete", "content": [], "structuredContent": [1]}, "t")
    assert modern.problems == []


def test_2026_result_envelope() -> None:
    shapes = Shapes("2026-07-28")
    shapes.page({"tools": []}, "tools/list", "tools")
    assert [p.severity for p in shapes.problems] == ["warning", "warning", "warning"]  # resultType, ttlMs, cacheScope
    shapes.problems.clear()
    shapes.page({"resultType": "input_required", "tools": [], "ttlMs": -1, "cacheScope": "shared"},
                "tools/list", "tools")
    assert sorted(p.severity for p in shapes.problems) == ["error", "error", "warning"]


# -- order of messages -----------------------------------------------------------------------


def test_order_of_messages() -> None:
    traffic = Traffic()
    traffic("send", Request("initialize", {"capabilities": {"elicitation": {}}}, 1))
    traffic("recv", Notification("notifications/message", {"level": "info", "data": "hi"}))  # allowed early
    traffic("recv", Notification("notifications/tools/list_changed"))  # notifications race: not judged
    traffic("recv", Request("ping", None, "p"))  # allowed early
    traffic("recv", Request("elicitation/create", {}, "e"))  # too early
    traffic("recv", Response(1, {}))
    traffic("send", Notification("notifications/initialized"))
    traffic("send", Request("tools/call", {"_meta": {"progressToken": 2}}, 2))
    traffic("recv", Notification("notifications/progress", {"progressToken": 2, "progress": 1}))
    traffic("recv", Notification("notifications/progress", {"progressToken": 2, "progress": 1.5}))
    traffic("recv", Response(2, {}))
    traffic("recv", Request("roots/list", None, "s1"))  # roots were not declared
    report = Report()
    traffic.analyse(report, "legacy", ("n", "n"))
    assert [(f.code, f.severity) for f in report.findings] == [("notification-order", "warning"),
                                                               ("capability", "warning")]


def test_what_a_2026_server_must_not_send() -> None:
    traffic = Traffic()
    traffic("send", Request("tools/list", {"_meta": {}}, 1))
    traffic("recv", Notification("notifications/message", {"level": "info", "data": "x"}))
    traffic("recv", Notification("notifications/resources/updated", {"uri": "x"}))
    traffic("recv", Request("sampling/createMessage", {}, "s"))
    report = Report()
    traffic.analyse(report, "modern", ("n", "n"))
    assert codes(report, "error") == ["notification-forbidden"] * 3
    # asked for logs (and listening): fine
    asked = Traffic()
    asked("send", Request("tools/list", {"_meta": {"io.modelcontextprotocol/logLevel": "info"}}, 1))
    asked("send", Request("subscriptions/listen", {"_meta": {}}, 2))
    asked("recv", Notification("notifications/message", {"level": "info", "data": "x"}))
    asked("recv", Notification("notifications/resources/updated", {"uri": "x"}))
    report = Report()
    asked.analyse(report, "modern", ("n", "n"))
    assert report.findings == []


# -- the README says the same ------------------------------------------------------------


def test_the_readme_documents_every_code_and_every_rule_source() -> None:
    from helpers import REPO

    from mcpcli.check import CODES

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### mcp check"):readme.index("## Talking back to the server")]
    for code in CODES:
        assert f"| `{code}` |" in section, code
    for provider in PROVIDERS:
        for rule in (provider.tool_name, provider.property_name, provider.root_forbidden, provider.max_tools,
                     provider.keywords):
            if rule is not None:
                for source in rule[1].source.split(", "):
                    assert source in section, (provider.key, source)
    from mcpcli.check.providers import STRICT_SOURCE

    assert STRICT_SOURCE in section
