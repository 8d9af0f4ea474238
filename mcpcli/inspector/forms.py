"""Form fields from a schema, and the values a person typed back into arguments.

A tool's `inputSchema`, a prompt's arguments, a resource template's variables
and an elicitation's `requestedSchema` all become a list of `Field`s: a widget
kind (text, number, choice, multi-choice, JSON), whether it is required, its
default and its description. `values()` turns what was typed into the
arguments object, with one message per field that cannot be read (before the
schema itself is checked with `mcpcli.validation`), so nothing invalid is sent.
Pure: no Textual here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcpcli.args import required_names, schema_types
from mcpcli.args import resolve_ref as _resolve

__all__ = [
    "Choice", "Field", "elicitation_fields", "field_errors", "initial_text", "prompt_fields",
    "schema_fields", "template_fields", "values",
]

JSON = dict[str, Any]
#: A field left empty that is not required: the argument is left out.
OMIT: Any = object()


@dataclass(frozen=True)
class Choice:
    value: Any
    label: str


@dataclass
class Field:
    """One input of a form."""

    name: str
    #: "text", "integer", "number", "boolean", "choice", "multi" or "json".
    kind: str
    required: bool = False
    title: str = ""
    description: str = ""
    has_default: bool = False
    default: Any = None
    choices: list[Choice] = field(default_factory=list)
    #: Whether `null` is a value the field takes (`["string", "null"]`).
    nullable: bool = False
    #: For "json": the JSON type the value must have ("array", "object"), if one.
    json_type: str | None = None
    schema: JSON = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.title or self.name


def _choices(prop: JSON, root: Any) -> list[Choice] | None:
    """A single choice's options, in any spelling: `enum` (with `enumNames`), `oneOf`/`anyOf`
    of `const`s (with titles)."""
    enum = prop.get("enum")
    if isinstance(enum, list) and enum:
        names = prop.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(enum) else None
        return [Choice(v, str(labels[i]) if labels else _label(v)) for i, v in enumerate(enum)]
    for keyword in ("oneOf", "anyOf"):
        branches = prop.get(keyword)
        if isinstance(branches, list) and branches:
            consts = [_resolve(root, b) for b in branches]
            if all(isinstance(b, dict) and "const" in b for b in consts):
                return [Choice(b["const"], str(b.get("title") or _label(b["const"]))) for b in consts]
    if "const" in prop:
        return [Choice(prop["const"], _label(prop["const"]))]
    return None


def _label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _field(name: str, prop: Any, required: bool, root: Any) -> Field:
    prop = _resolve(root, prop)
    prop = prop if isinstance(prop, dict) else {}
    types = schema_types(prop, root)
    nullable = "null" in types
    kinds = [t for t in types if t != "null"]
    out = Field(
        name=name, kind="json", required=required, title=str(prop.get("title") or ""),
        description=str(prop.get("description") or ""), has_default="default" in prop,
        default=prop.get("default"), nullable=nullable, schema=prop,
    )
    choices = _choices(prop, root)
    if choices is not None:
        out.kind, out.choices = "choice", choices
    elif kinds == ["boolean"]:
        out.kind = "boolean"
        out.choices = [Choice(True, "true"), Choice(False, "false")]
    elif kinds == ["string"]:
        out.kind = "text"
    elif kinds in (["integer"], ["number"], ["integer", "number"], ["number", "integer"]):
        out.kind = "number" if "number" in kinds else "integer"
    elif kinds == ["array"]:
        items = _resolve(root, prop.get("items"))
        many = _choices(items, root) if isinstance(items, dict) else None
        if many is not None:
            out.kind, out.choices = "multi", many
        else:
            out.json_type = "array"
    elif kinds == ["object"]:
        out.json_type = "object"
    return out


def schema_fields(schema: Any) -> list[Field]:
    """The fields of an object schema (a tool's inputSchema, an elicitation's requestedSchema)."""
    root = schema
    schema = _resolve(root, schema)
    if not isinstance(schema, dict):
        return []
    props = schema.get("properties")
    wanted = required_names(schema)
    fields = [_field(name, prop, name in wanted, root)
              for name, prop in (props.items() if isinstance(props, dict) else [])]
    known = {f.name for f in fields}
    # A required name with no property still needs a value: any JSON.
    fields += [Field(name, "json", required=True) for name in sorted(wanted - known)]
    return fields


def elicitation_fields(params: JSON) -> list[Field]:
    return schema_fields(params.get("requestedSchema"))


def prompt_fields(prompt: JSON) -> list[Field]:
    """A prompt's arguments: text fields (prompt arguments are strings)."""
    out: list[Field] = []
    arguments = prompt.get("arguments")
    for arg in arguments if isinstance(arguments, list) else []:
        if isinstance(arg, dict) and isinstance(arg.get("name"), str):
            out.append(Field(arg["name"], "text", required=bool(arg.get("required")),
                             title=str(arg.get("title") or ""), description=str(arg.get("description") or ""),
                             schema={"type": "string"}))
    return out


def template_fields(uri_template: str) -> list[Field]:
    """A resource template's variables: text fields, each needed for a useful URI."""
    from mcpcli.inspector.uritemplate import variables

    return [Field(name, "text", required=True, schema={"type": "string"}) for name in variables(uri_template)]


def initial_text(f: Field) -> str:
    """What a text-like field starts with: its default as it would be typed, else nothing."""
    if not f.has_default:
        return ""
    value = f.default
    if f.kind == "text" and isinstance(value, str):
        return value
    if f.kind in ("integer", "number") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False)


class FieldError(ValueError):
    """What is wrong with one field's input, said to the person filling it in."""


def read(f: Field, raw: Any) -> Any:
    """The value of one field from its widget's state (text, a chosen value, a list of
    chosen values); OMIT when it is left empty and may be; `FieldError` otherwise."""
    if f.kind == "multi":
        picked = list(raw or [])
        if not picked and not f.required:
            return OMIT
        return picked
    if f.kind in ("choice", "boolean"):
        if raw is OMIT or (raw is None and not any(c.value is None for c in f.choices)):
            if f.required:
                raise FieldError("choose one")
            return OMIT
        return raw
    text = raw if isinstance(raw, str) else ""
    if text == "":
        if not f.required:
            return OMIT
        if f.nullable:
            return None
        # A required field left empty was forgotten more often than meant as "" (JSON `""` sends that).
        raise FieldError("required")
    if f.kind == "text":
        return text
    if f.kind in ("integer", "number"):
        return _number(f, text)
    return _json_value(f, text)


def _number(f: Field, text: str) -> Any:
    if f.nullable and text.strip() == "null":
        return None
    try:
        value: Any = json.loads(text.strip())
    except ValueError:
        value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FieldError(f"enter {'an integer' if f.kind == 'integer' else 'a number'}")
    if isinstance(value, float) and not math.isfinite(value):
        raise FieldError("enter a finite number")
    if f.kind == "integer" and isinstance(value, float):
        if not value.is_integer():
            raise FieldError("enter an integer")
        value = int(value)
    return value


def _json_value(f: Field, text: str) -> Any:
    from mcpcli.core.jsonrpc import loads  # strict: NaN and 1e999 could not be sent

    try:
        value = loads(text)
    except ValueError as exc:
        raise FieldError(f"invalid JSON: {exc}") from None
    if f.json_type == "array" and not isinstance(value, list):
        raise FieldError("enter a JSON array, e.g. [\"a\", \"b\"]")
    if f.json_type == "object" and not isinstance(value, dict):
        raise FieldError("enter a JSON object, e.g. {\"key\": \"value\"}")
    return value


def values(fields: list[Field], raw: Mapping[str, Any]) -> tuple[JSON, dict[str, str]]:
    """The arguments object and a message per field that cannot be read."""
    out: JSON = {}
    problems: dict[str, str] = {}
    for f in fields:
        try:
            value = read(f, raw.get(f.name, OMIT if f.kind in ("choice", "boolean") else ""))
        except FieldError as exc:
            problems[f.name] = str(exc)
            continue
        if value is not OMIT:
            out[f.name] = value
    return out, problems


def field_errors(schema: Any, arguments: JSON) -> dict[str, str]:
    """The schema's own verdict on `arguments`, one message per top-level field ("" for the
    object as a whole); empty when valid. Loads the validator only when a simple check
    cannot say (as `mcp tools call` does)."""
    from mcpcli.errors import McpCliError
    from mcpcli.validation import check

    if not isinstance(schema, dict):
        return {}
    try:
        check(schema, arguments)
    except McpCliError as exc:
        problems = getattr(exc, "errors", None) or [("", exc.message)]
        out: dict[str, str] = {}
        for path, message in problems:
            top, _, rest = str(path).partition(".")
            text = f"{rest}: {message}" if rest else message
            out.setdefault(top, text)
        return out
    return {}
