"""Lint of what a server lists: tool names, duplicates, descriptions and schemas.

The spec's own rules, each as its finding code (see `findings.CODES`):
tool names (2025-11-25, SEP-986: 1 to 128 characters of ASCII letters, digits,
`_`, `-` and `.`; case-sensitive; unique: a SHOULD, so a warning, except that a
duplicate makes one of the two tools unreachable, an error), an inputSchema that
is a JSON Schema of `type: "object"` (every revision's schema requires it),
`required` naming properties that exist, references that resolve inside the
schema (2026-07-28: clients must not fetch network `$ref`s), and output schemas
that are valid (object-typed up to 2025-11-25).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from mcpcli.check.findings import Report
from mcpcli.check.schemas import describe, refs, subschemas
from mcpcli.errors import ValidationError

__all__ = ["TOOL_NAME", "lint_prompts", "lint_resources", "lint_schema", "lint_tools"]

JSON = dict[str, Any]

#: The spec's tool name rule (2025-11-25 server/tools.mdx, "Tool Names").
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")

TOOLS = ("lint:tools", "lint: tools")
PROMPTS = ("lint:prompts", "lint: prompts")
RESOURCES = ("lint:resources", "lint: resources")


def lint_tools(report: Report, tools: list[Any], *, revision: str, modern: bool) -> None:
    """Every finding about the listed tools' definitions (their calls are `calls`' job)."""
    check_id, title = TOOLS
    report.check(check_id, title)
    named = [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
    for name, times in sorted(Counter(t["name"] for t in named).items()):
        if times > 1:
            report.add(check_id, "error", "duplicate-name",
                       f"{times} tools are named {name!r}: a client calls one of them, or refuses the list", name)
    for tool in named:
        name = tool["name"]
        problem = _name_problem(name)
        if problem:
            report.add(check_id, "warning", "tool-name", f"tool name {name!r} {problem}", name)
        description = tool.get("description")
        if not isinstance(description, str) or not description.strip():
            report.add(check_id, "warning", "missing-description",
                       "no description: models choose tools by their description", name)
        schema = tool.get("inputSchema")
        if not isinstance(schema, dict):
            report.add(check_id, "error", "input-schema", "no inputSchema object", name)
        else:
            if schema.get("type") != "object":
                report.add(check_id, "error", "input-schema",
                           f"inputSchema has type {schema.get('type')!r}, not \"object\" (arguments are an object)",
                           name)
            lint_schema(report, check_id, schema, name, what="inputSchema", code="schema-invalid")
        if "outputSchema" in tool:
            _lint_output(report, check_id, tool["outputSchema"], name, revision=revision, modern=modern)
        if modern and isinstance(schema, dict):
            from mcpcli.core.wire import invalid_tool_reason

            reason = invalid_tool_reason(tool)
            if reason is not None:
                report.add(check_id, "error", "tool-header",
                           f"{reason}: 2026-07-28 HTTP clients must drop this tool", name)


def _name_problem(name: str) -> str | None:
    if TOOL_NAME.match(name):
        return None
    if not name:
        return "is empty (the spec: 1 to 128 characters)"
    if len(name) > 128:
        return f"is {len(name)} characters long (the spec: at most 128)"
    bad = sorted({ch for ch in name if not re.match(r"[A-Za-z0-9_.-]", ch)})
    shown = ", ".join(repr(ch) for ch in bad[:5])
    return f"has characters outside A-Z a-z 0-9 _ - . ({shown})"


def lint_schema(report: Report, check_id: str, schema: JSON, subject: str, *, what: str, code: str) -> bool:
    """A schema's own validity (as JSON Schema, its references, its `required` lists).
    False when the schema is not valid JSON Schema at all."""
    from mcpcli.validation import compile_schema

    try:
        compile_schema(schema, what=what)
    except ValidationError as exc:
        report.add(check_id, "error", code, exc.message, subject)
        return False
    for path, ref, target in refs(schema):
        where = f"{what} at {describe(path)}"
        if target == "missing":
            report.add(check_id, "error", "schema-ref", f"{where}: $ref {ref!r} points at nothing in the schema",
                       subject)
        elif target == "remote":
            report.add(check_id, "warning", "schema-remote-ref",
                       f"{where}: $ref {ref!r} is on the network; clients do not fetch it (2026-07-28 forbids "
                       "it), so they cannot check or describe this part", subject)
    for path, node in subschemas(schema):
        _lint_required(report, check_id, node, f"{what} at {describe(path)}", subject)
    return True


def _lint_required(report: Report, check_id: str, node: JSON, where: str, subject: str) -> None:
    """`required` naming a property that is not defined: a typo, or an object no argument
    list can satisfy (when additional properties are refused)."""
    required = node.get("required")
    if not isinstance(required, list) or not required:
        return
    if any(key in node for key in ("patternProperties", "allOf", "anyOf", "oneOf", "$ref", "if",
                                   "dependentSchemas", "$dynamicRef", "unevaluatedProperties")):
        return  # the property may be defined elsewhere
    properties = node.get("properties")
    if not isinstance(properties, dict) and node.get("additionalProperties") is not False:
        return  # a constraint on properties defined around it (an anyOf branch)
    defined = set(properties) if isinstance(properties, dict) else set()
    missing = [name for name in required if isinstance(name, str) and name not in defined]
    if not missing:
        return
    names = ", ".join(repr(n) for n in missing)
    if node.get("additionalProperties") is False:
        report.add(check_id, "error", "schema-required",
                   f"{where}: required {names} are not in properties, and additionalProperties is false: "
                   "no value can satisfy it", subject)
    else:
        report.add(check_id, "warning", "schema-required",
                   f"{where}: required {names} are not in properties (a typo?); clients cannot describe them",
                   subject)


def _lint_output(report: Report, check_id: str, schema: Any, name: str, *, revision: str, modern: bool) -> None:
    if not isinstance(schema, dict):
        report.add(check_id, "error", "output-schema", "outputSchema is not an object", name)
        return
    if not modern and schema.get("type") != "object":
        report.add(check_id, "error", "output-schema",
                   f"outputSchema has type {schema.get('type')!r}; up to 2025-11-25 ({revision} here) it must "
                   "be \"object\"", name)
    lint_schema(report, check_id, schema, name, what="outputSchema", code="output-schema")


def lint_prompts(report: Report, prompts: list[Any]) -> None:
    check_id, title = PROMPTS
    report.check(check_id, title)
    names = [p["name"] for p in prompts if isinstance(p, dict) and isinstance(p.get("name"), str)]
    for name, times in sorted(Counter(names).items()):
        if times > 1:
            report.add(check_id, "error", "duplicate-name",
                       f"{times} prompts are named {name!r}: prompts/get reaches one of them", name)


def lint_resources(report: Report, resources: list[Any], templates: list[Any]) -> None:
    check_id, title = RESOURCES
    report.check(check_id, title)
    uris = [r["uri"] for r in resources if isinstance(r, dict) and isinstance(r.get("uri"), str)]
    for uri, times in sorted(Counter(uris).items()):
        if times > 1:
            report.add(check_id, "warning", "duplicate-name", f"{times} resources have the URI {uri!r}", uri)
    patterns = [t["uriTemplate"] for t in templates if isinstance(t, dict) and isinstance(t.get("uriTemplate"), str)]
    for uri, times in sorted(Counter(patterns).items()):
        if times > 1:
            report.add(check_id, "warning", "duplicate-name", f"{times} resource templates are {uri!r}", uri)
