"""Schemas to form fields and typed input back to arguments (`mcpcli.inspector.forms`), and
resource templates (`uritemplate`): pure, no Textual."""

from __future__ import annotations

import pytest

from mcpcli.inspector import forms
from mcpcli.inspector.forms import OMIT, Field, FieldError
from mcpcli.inspector.uritemplate import expand, variables

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "who", "default": "Ada"},
        "count": {"type": "integer", "minimum": 1},
        "ratio": {"type": "number"},
        "on": {"type": "boolean", "default": False},
        "level": {"type": "string", "enum": ["low", "high"]},
        "city": {"oneOf": [{"const": "par", "title": "Paris"}, {"const": "osl", "title": "Oslo"}]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "picks": {"type": "array", "items": {"enum": ["a", "b", "c"]}},
        "opts": {"type": "object"},
        "maybe": {"type": ["string", "null"]},
        "ref": {"$ref": "#/$defs/n"},
    },
    "required": ["count", "level", "maybe"],
    "$defs": {"n": {"type": "number", "title": "A number"}},
}


def by_name(schema: object = SCHEMA) -> dict[str, Field]:
    return {f.name: f for f in forms.schema_fields(schema)}


def test_each_schema_type_gets_its_widget_kind() -> None:
    fields = by_name()
    kinds = {name: f.kind for name, f in fields.items()}
    assert kinds == {"name": "text", "count": "integer", "ratio": "number", "on": "boolean",
                     "level": "choice", "city": "choice", "tags": "json", "picks": "multi",
                     "opts": "json", "maybe": "text", "ref": "number"}
    assert [c.label for c in fields["city"].choices] == ["Paris", "Oslo"]
    assert fields["count"].required and not fields["name"].required
    assert forms.initial_text(fields["name"]) == "Ada" and fields["ref"].label == "A number"
    assert fields["tags"].json_type == "array" and fields["opts"].json_type == "object"
    assert fields["maybe"].nullable


def test_values_typed_and_empty_optional_fields_left_out() -> None:
    fields = forms.schema_fields(SCHEMA)
    raw = {"name": "", "count": "3", "ratio": "0.5", "on": True, "level": "high", "city": OMIT,
           "tags": '["a", "b"]', "picks": ["a", "c"], "opts": "", "maybe": "", "ref": "2"}
    values, problems = forms.values(fields, raw)
    assert problems == {}
    assert values == {"count": 3, "ratio": 0.5, "on": True, "level": "high", "tags": ["a", "b"],
                      "picks": ["a", "c"], "maybe": None, "ref": 2}


def test_messages_before_sending() -> None:
    fields = forms.schema_fields(SCHEMA)
    raw = {"count": "three", "level": OMIT, "tags": '{"a": 1}', "opts": "{bad", "ratio": "1e999",
           "maybe": "x"}
    _, problems = forms.values(fields, raw)
    assert problems == {"count": "enter an integer", "level": "choose one",
                        "tags": 'enter a JSON array, e.g. ["a", "b"]', "ratio": "enter a finite number",
                        "opts": problems["opts"]}
    assert problems["opts"].startswith("invalid JSON")
    assert forms.field_errors(SCHEMA, {"count": 0, "level": "high", "maybe": None}) == {
        "count": "0 is less than the minimum of 1"}
    assert forms.field_errors(SCHEMA, {"level": "high", "maybe": None}) == {"count": "is required"}
    assert forms.field_errors(SCHEMA, {"count": 1, "level": "high", "maybe": None}) == {}


def test_integers_accept_integral_numbers_only() -> None:
    f = Field("n", "integer", required=True)
    assert forms.read(f, "4") == 4 and forms.read(f, "4.0") == 4
    with pytest.raises(FieldError):
        forms.read(f, "4.5")
    with pytest.raises(FieldError):
        forms.read(f, "true")
    with pytest.raises(FieldError):
        forms.read(f, "")


def test_prompt_and_elicitation_fields() -> None:
    prompt = {"name": "p", "arguments": [{"name": "city", "required": True, "description": "where"},
                                          {"name": "style"}, {"bad": 1}]}
    fields = forms.prompt_fields(prompt)
    assert [(f.name, f.kind, f.required) for f in fields] == [("city", "text", True), ("style", "text", False)]
    params = {"requestedSchema": {"type": "object", "properties": {
        "ok": {"type": "boolean"}, "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]}},
        "required": ["ok"]}}
    fields = forms.elicitation_fields(params)
    assert [(f.name, f.kind) for f in fields] == [("ok", "boolean"), ("color", "choice")]
    assert [c.label for c in fields[1].choices] == ["Red", "Green"]


def test_a_required_name_without_a_property_still_asks() -> None:
    fields = forms.schema_fields({"type": "object", "required": ["x"]})
    assert [(f.name, f.kind, f.required) for f in fields] == [("x", "json", True)]
    assert forms.schema_fields("nonsense") == []


def test_uri_templates() -> None:
    template = "demo://resource/{id}/file{/path*}{?q,lang}{#frag}"
    assert variables(template) == ["id", "path", "q", "lang", "frag"]
    assert expand(template, {"id": "a b", "path": "x/y", "q": "1&2", "frag": "top"}) == (
        "demo://resource/a%20b/file/x%2Fy?q=1%262#top")
    assert expand("file:///{+path}", {"path": "a/b c"}) == "file:///a/b%20c"
    assert expand("x{;k}{.e}", {"k": "", "e": "txt"}) == "x;k.txt"
    assert expand("{v:3}", {"v": "abcdef"}) == "abc"
    assert [f.name for f in forms.template_fields("demo://{a}/{b}")] == ["a", "b"]
