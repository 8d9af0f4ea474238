"""What the major model providers accept in a tool definition, as data, and the check against it.

A client hands a server's tools to a model: it sends each tool's name and
inputSchema to the provider's API, which refuses the whole request (every tool,
not just the bad one) when one of them breaks its rules. Each rule below says
what it checks, where it is published (or, for rules the APIs enforce without
documenting them, where the API's own error message is quoted), the date it was
read, and the severity: a warning when the API refuses the tool outright, info
when only an opt-in mode (OpenAI's strict mode) or one of two ways to send the
schema (Gemini's `parameters`, the OpenAPI subset; `parametersJsonSchema` takes
JSON Schema) would. The README's "For server authors" section lists the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mcpcli.check.findings import Report, Severity
from mcpcli.check.schemas import describe, subschemas

__all__ = ["PROVIDERS", "Provider", "Rule", "check_providers"]

JSON = dict[str, Any]
READ = "2026-11-27"  # when each source below was read


@dataclass(frozen=True)
class Rule:
    """One published rule: what it says, where, and how bad breaking it is."""

    text: str
    source: str
    severity: Severity = "warning"


@dataclass(frozen=True)
class Provider:
    key: str
    name: str
    #: Tool names the API accepts.
    tool_name: tuple[re.Pattern[str], Rule]
    #: Names of the inputSchema's top-level properties the API accepts (None: any).
    property_name: tuple[re.Pattern[str], Rule] | None = None
    #: Keywords the API refuses at the top level of a tool's schema.
    root_forbidden: tuple[frozenset[str], Rule] | None = None
    #: How many tools one request may carry.
    max_tools: tuple[int, Rule] | None = None
    #: The keywords the API reads (None: JSON Schema); others are dropped or refused.
    keywords: tuple[frozenset[str], Rule] | None = None


OPENAI = Provider(
    key="openai",
    name="OpenAI",
    tool_name=(re.compile(r"^[a-zA-Z0-9_-]{1,64}$"), Rule(
        "function names are 1 to 64 characters of a-z, A-Z, 0-9, _ and -",
        "https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools")),
    root_forbidden=(frozenset({"oneOf", "anyOf", "allOf", "enum", "not"}), Rule(
        "the API answers \"schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' "
        "at the top level\"",
        "https://github.com/nspady/google-calendar-mcp/issues/39")),
    max_tools=(128, Rule(
        "a request carries at most 128 functions",
        "https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools")),
)

ANTHROPIC = Provider(
    key="anthropic",
    name="Anthropic",
    tool_name=(re.compile(r"^[a-zA-Z0-9_-]{1,64}$"), Rule(
        "tool names match ^[a-zA-Z0-9_-]{1,64}$",
        "https://platform.claude.com/docs/en/agents-and-tools/tool-use/define-tools")),
    property_name=(re.compile(r"^[a-zA-Z0-9_.-]{1,64}$"), Rule(
        "the API answers \"input_schema.properties: Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'\"",
        "https://github.com/beautyfree/appstore-connect-mcp/issues/2")),
    root_forbidden=(frozenset({"oneOf", "anyOf", "allOf"}), Rule(
        "the API answers \"input_schema does not support oneOf, allOf, or anyOf at the top level\"",
        "https://github.com/anthropics/claude-code/issues/5319")),
)

#: The fields of Gemini's `Schema` (a select subset of the OpenAPI 3.0 schema object), as the
#: Gemini API and Vertex AI references list them (Vertex AI adds `additionalProperties`, and
#: `defs`/`ref`, which are not JSON Schema's `$defs`/`$ref`).
GEMINI_SCHEMA_FIELDS = frozenset({
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties",
    "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf",
    "propertyOrdering", "default", "items", "minimum", "maximum", "additionalProperties",
})

GEMINI = Provider(
    key="gemini",
    name="Google Gemini",
    tool_name=(re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$"), Rule(
        "function names start with a letter or _, then a-z, A-Z, 0-9, _, ., : and -, at most 64 characters",
        "https://ai.google.dev/api/caching#FunctionDeclaration")),
    property_name=(re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"), Rule(
        "parameter names start with a letter or _ and hold only a-z, A-Z, 0-9 and _, at most 64 characters "
        "(Vertex AI's reference)",
        "https://cloud.google.com/vertex-ai/docs/reference/rest/v1beta1/FunctionDeclaration", "info")),
    keywords=(GEMINI_SCHEMA_FIELDS, Rule(
        "a client that sends the schema as `parameters` (a subset of the OpenAPI 3.0 schema object) loses "
        "them or is refused; `parametersJsonSchema` takes JSON Schema",
        "https://ai.google.dev/api/caching#Schema, https://cloud.google.com/vertex-ai/docs/reference/rest/v1/Schema",
        "info")),
)

PROVIDERS: tuple[Provider, ...] = (OPENAI, ANTHROPIC, GEMINI)

#: OpenAI's strict mode (opt-in: `strict: true`), from its Structured Outputs guide.
STRICT_SOURCE = "https://platform.openai.com/docs/guides/structured-outputs#supported-schemas"
STRICT_UNSUPPORTED = frozenset({"allOf", "not", "dependentRequired", "dependentSchemas", "if", "then", "else"})
STRICT_MAX_DEPTH = 10
STRICT_MAX_PROPERTIES = 5000
STRICT_MAX_ENUM_VALUES = 1000

CHECK = ("providers", "model providers")
#: Keywords that are annotations of our own or of the protocol, never sent as constraints.
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "examples", "x-mcp-header"})


def check_providers(report: Report, tools: list[Any]) -> None:
    """Every provider rule against every listed tool."""
    check_id, title = CHECK
    report.check(check_id, title)
    named = [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
    for provider in PROVIDERS:
        if provider.max_tools is not None and len(named) > provider.max_tools[0]:
            _, rule = provider.max_tools
            report.add(check_id, rule.severity, "provider-tool-count",
                       f"{provider.name}: {len(named)} tools; {rule.text} ({rule.source}), so a client must "
                       "choose", provider=provider.key)
        for tool in named:
            _check_tool(report, check_id, provider, tool)
    for tool in named:
        _check_strict(report, check_id, tool)


def _check_tool(report: Report, check_id: str, provider: Provider, tool: JSON) -> None:
    name = tool["name"]
    pattern, rule = provider.tool_name
    if not pattern.match(name):
        report.add(check_id, rule.severity, "provider-tool-name",
                   f"{provider.name}: {rule.text} ({rule.source}); a client must rename {name!r} or drop it",
                   name, provider=provider.key)
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        return  # the lint reports it
    if provider.property_name is not None:
        pattern, rule = provider.property_name
        properties = schema.get("properties")
        bad = [key for key in properties if not pattern.match(key)] if isinstance(properties, dict) else []
        if bad:
            shown = ", ".join(repr(k) for k in bad[:5]) + (" ..." if len(bad) > 5 else "")
            report.add(check_id, rule.severity, "provider-property-name",
                       f"{provider.name}: argument {shown}: {rule.text} ({rule.source})", name,
                       provider=provider.key)
    if provider.root_forbidden is not None:
        forbidden, rule = provider.root_forbidden
        used = sorted(forbidden & set(schema))
        if used:
            report.add(check_id, rule.severity, "provider-schema-root",
                       f"{provider.name}: {', '.join(used)} at the top of the inputSchema: {rule.text} "
                       f"({rule.source})", name, provider=provider.key)
    if provider.keywords is not None:
        allowed, rule = provider.keywords
        outside: set[str] = set()
        for _, node in subschemas(schema):
            outside.update(key for key in node if key not in allowed and key not in _ANNOTATIONS
                           and not key.startswith("x-"))
            if isinstance(node.get("type"), list):
                outside.add("type as a list")
        if outside:
            report.add(check_id, rule.severity, "provider-keyword",
                       f"{provider.name}: {', '.join(sorted(outside))} outside its schema subset: {rule.text} "
                       f"({rule.source})", name, provider=provider.key)


def _check_strict(report: Report, check_id: str, tool: JSON) -> None:
    """OpenAI's strict mode: every object closed and every property required, a subset of
    keywords, bounded size. Opt-in (some agent SDKs turn it on), so a note."""
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        return
    problems: list[str] = []
    properties = enums = 0
    for path, node in subschemas(schema):
        where = describe(path)
        depth = path.count("properties.") + path.count("items")
        if depth > STRICT_MAX_DEPTH and f"nesting deeper than {STRICT_MAX_DEPTH}" not in problems:
            problems.append(f"nesting deeper than {STRICT_MAX_DEPTH}")
        unsupported = sorted(STRICT_UNSUPPORTED & set(node))
        if unsupported:
            problems.append(f"{', '.join(unsupported)} at {where}")
        props = node.get("properties")
        is_object = node.get("type") == "object" or isinstance(props, dict)
        if is_object:
            if node.get("additionalProperties") is not False:
                problems.append(f"additionalProperties is not false at {where}")
            if isinstance(props, dict):
                properties += len(props)
                listed = node.get("required")
                required = listed if isinstance(listed, list) else []
                optional = [key for key in props if key not in required]
                if optional:
                    problems.append(f"optional {', '.join(repr(k) for k in optional[:5])} at {where} "
                                    "(strict mode requires every property; make it nullable instead)")
        if isinstance(node.get("enum"), list):
            enums += len(node["enum"])
    if properties > STRICT_MAX_PROPERTIES:
        problems.append(f"{properties} properties (at most {STRICT_MAX_PROPERTIES})")
    if enums > STRICT_MAX_ENUM_VALUES:
        problems.append(f"{enums} enum values (at most {STRICT_MAX_ENUM_VALUES})")
    if problems:
        shown = "; ".join(problems[:4]) + (f"; and {len(problems) - 4} more" if len(problems) > 4 else "")
        report.add(check_id, "info", "provider-strict",
                   f"OpenAI strict mode (opt-in) would refuse it: {shown} ({STRICT_SOURCE})", tool["name"],
                   provider="openai")
