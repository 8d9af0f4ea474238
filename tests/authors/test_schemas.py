"""`mcp diff`'s reading of JSON Schemas: a parameter may only accept more, an output only promise more."""

from __future__ import annotations

from typing import Any

import pytest

from mcpcli.surface import KINDS
from mcpcli.surface.schemas import compare_schemas


def changes(old: Any, new: Any, *, output: bool = False) -> list[tuple[str, str]]:
    found: list[tuple[str, str, str]] = []
    compare_schemas(old, new, output=output, report=lambda kind, path, detail: found.append((kind, path, detail)))
    for kind, _, _ in found:
        assert kind in KINDS, kind
    return [(kind, path) for kind, path, _ in found]


def obj(properties: dict[str, Any], required: list[str] | None = None, **more: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, **more}
    if required is not None:
        schema["required"] = required
    return schema


S = {"type": "string"}
N = {"type": "number"}
I = {"type": "integer"}  # noqa: E741


@pytest.mark.parametrize(("old", "new", "expected"), [
    # parameters removed, added, required
    (obj({"a": S, "b": S}), obj({"a": S}), [("param-removed", "b")]),
    (obj({"a": S}), obj({"a": S, "b": S}), [("param-added", "b")]),
    (obj({"a": S}), obj({"a": S, "b": S}, ["b"]), [("param-required-added", "b")]),
    (obj({"a": S}), obj({"a": S}, ["a"]), [("param-now-required", "a")]),
    (obj({"a": S}, ["a"]), obj({"a": S}), [("param-now-optional", "a")]),
    # types: a string or a list; integer is within number
    (obj({"a": N}), obj({"a": I}), [("param-type-narrowed", "a")]),
    (obj({"a": I}), obj({"a": N}), [("param-type-widened", "a")]),
    (obj({"a": {"type": ["string", "null"]}}), obj({"a": S}), [("param-type-narrowed", "a")]),
    (obj({"a": S}), obj({"a": {"type": ["null", "string"]}}), [("param-type-widened", "a")]),
    (obj({"a": S}), obj({"a": I}), [("param-type-narrowed", "a")]),
    (obj({"a": {}}), obj({"a": S}), [("param-type-narrowed", "a")]),
    (obj({"a": S}), obj({"a": {"description": "anything"}}), [("param-description-changed", "a"),
                                                              ("param-type-widened", "a")]),
    # enums and const
    (obj({"u": {"enum": ["a", "b"]}}), obj({"u": {"enum": ["a"]}}), [("param-enum-value-removed", "u")]),
    (obj({"u": {"enum": ["a"]}}), obj({"u": {"enum": ["b", "a"]}}), [("param-enum-value-added", "u")]),
    (obj({"u": {"enum": ["a", "b"]}}), obj({"u": {"enum": ["b", "a"]}}), []),
    (obj({"u": S}), obj({"u": {"type": "string", "enum": ["a"]}}), [("param-constraint-tightened", "u")]),
    (obj({"u": {"type": "string", "enum": ["a"]}}), obj({"u": S}), [("param-constraint-loosened", "u")]),
    (obj({"u": {"const": 1}}), obj({"u": {"const": 2}}), [("param-enum-value-removed", "u"),
                                                          ("param-enum-value-added", "u")]),
    # bounds, pattern, format, multipleOf
    (obj({"n": {"type": "integer", "maximum": 10}}), obj({"n": {"type": "integer", "maximum": 5}}),
     [("param-constraint-tightened", "n")]),
    (obj({"n": {"type": "integer", "minimum": 1}}), obj({"n": I}), [("param-constraint-loosened", "n")]),
    (obj({"s": S}), obj({"s": {"type": "string", "minLength": 1, "pattern": "^x"}}),
     [("param-constraint-tightened", "s")]),
    (obj({"s": {"type": "string", "pattern": "^x"}}), obj({"s": S}), [("param-constraint-loosened", "s")]),
    (obj({"n": {"type": "integer", "multipleOf": 4}}), obj({"n": {"type": "integer", "multipleOf": 2}}),
     [("param-constraint-loosened", "n")]),
    (obj({"n": {"type": "integer", "multipleOf": 2}}), obj({"n": {"type": "integer", "multipleOf": 3}}),
     [("param-constraint-tightened", "n")]),
    # nested objects and arrays, recursively
    (obj({"o": obj({"x": S})}), obj({"o": obj({"x": S, "y": S}, ["y"])}), [("param-required-added", "o.y")]),
    (obj({"o": obj({"x": obj({"z": N})})}), obj({"o": obj({"x": obj({"z": I})})}),
     [("param-type-narrowed", "o.x.z")]),
    (obj({"t": {"type": "array", "items": S}}), obj({"t": {"type": "array", "items": I}}),
     [("param-type-narrowed", "t[]")]),
    (obj({"t": {"type": "array", "items": obj({"k": S})}}), obj({"t": {"type": "array", "items": obj({})}}),
     [("param-removed", "t[].k")]),
    # additional properties
    (obj({"a": S}), obj({"a": S}, additionalProperties=False), [("param-closed", "")]),
    (obj({"a": S}, additionalProperties=False), obj({"a": S}), [("param-opened", "")]),
    (obj({}, additionalProperties=S), obj({}, additionalProperties=I), [("param-type-narrowed", "*")]),
    # annotations are reported, never breaking
    (obj({"a": {"type": "string", "description": "x"}}), obj({"a": {"type": "string", "description": "y"}}),
     [("param-description-changed", "a")]),
    (obj({"a": {"type": "string", "default": "x"}}), obj({"a": {"type": "string", "default": "y"}}),
     [("param-default-changed", "a")]),
    # keywords not compared in detail: possibly breaking
    (obj({"a": S}), obj({"a": {"type": "string", "not": {"const": "x"}}}), [("param-schema-changed", "a")]),
    (obj({"a": S}, dependentRequired={"a": ["b"]}), obj({"a": S}), [("param-schema-changed", "")]),
])
def test_input_rules(old: Any, new: Any, expected: list[tuple[str, str]]) -> None:
    assert changes(old, new) == expected


@pytest.mark.parametrize(("old", "new", "expected"), [
    (obj({"a": S, "b": S}), obj({"a": S}), [("output-field-removed", "b")]),
    (obj({"a": S}), obj({"a": S, "b": S}, ["b"]), [("output-field-added", "b")]),
    (obj({"a": S}, ["a"]), obj({"a": S}), [("output-field-now-optional", "a")]),
    (obj({"a": S}), obj({"a": S}, ["a"]), [("output-field-now-required", "a")]),
    (obj({"a": I}), obj({"a": N}), [("output-type-widened", "a")]),
    (obj({"a": N}), obj({"a": I}), [("output-type-narrowed", "a")]),
    (obj({"a": S}), obj({"a": {"type": ["string", "null"]}}), [("output-type-widened", "a")]),
    (obj({"u": {"enum": ["a"]}}), obj({"u": {"enum": ["a", "b"]}}), [("output-enum-value-added", "u")]),
    (obj({"u": {"enum": ["a", "b"]}}), obj({"u": {"enum": ["a"]}}), [("output-enum-value-removed", "u")]),
    (obj({"u": {"enum": ["a"]}}), obj({"u": S}), [("output-enum-value-added", "u")]),
    (obj({"n": {"type": "integer", "maximum": 5}}), obj({"n": {"type": "integer", "maximum": 50}}),
     [("output-constraint-changed", "n")]),
    (obj({"a": S}, additionalProperties=False), obj({"a": S}), [("output-constraint-changed", "")]),
    (obj({"o": obj({"x": S}, ["x"])}), obj({"o": obj({"x": S})}), [("output-field-now-optional", "o.x")]),
])
def test_output_rules_point_the_other_way(old: Any, new: Any, expected: list[tuple[str, str]]) -> None:
    assert changes(old, new, output=True) == expected


def test_a_union_of_bare_types_is_a_type_list() -> None:
    """Pydantic writes Optional[str] as anyOf [string, null]: the same as type [string, null]."""
    optional = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "X"}
    assert changes(obj({"x": optional}), obj({"x": {"type": ["string", "null"], "default": None,
                                                     "title": "X"}})) == []
    assert changes(obj({"x": optional}), obj({"x": {"type": "string", "title": "X"}})) == [
        ("param-default-changed", "x"), ("param-type-narrowed", "x")]


def test_variants_pair_by_type_so_a_changed_model_is_compared_inside() -> None:
    """Optional[Model]: a new optional field in the model is not a removed variant."""
    model = obj({"k": S})
    old = obj({"m": {"anyOf": [model, {"type": "null"}]}})
    new = obj({"m": {"anyOf": [obj({"k": S, "j": I}), {"type": "null"}]}})
    assert changes(old, new) == [("param-added", "m.j")]
    narrower = obj({"m": {"anyOf": [obj({"k": I}), {"type": "null"}]}})
    assert changes(old, narrower) == [("param-type-narrowed", "m.k")]
    assert changes(old, obj({"m": model})) == [("param-variant-removed", "m")]
    assert changes(obj({"m": model}), old) == [("param-variant-added", "m")]
    assert changes(obj({"m": model}), old, output=True) == [("output-variant-added", "m")]


def test_variants_that_cannot_be_paired_are_removed_and_added() -> None:
    old = obj({"v": {"oneOf": [obj({"a": S}, ["a"]), obj({"b": S}, ["b"])]}})
    new = obj({"v": {"oneOf": [obj({"c": S}, ["c"]), obj({"d": S}, ["d"])]}})
    assert changes(old, new) == [("param-variant-removed", "v")] * 2 + [("param-variant-added", "v")] * 2
    # equal variants match first; what is left, one of a type each side, is compared inside
    new = obj({"v": {"oneOf": [obj({"a": S}, ["a"]), obj({"c": S}, ["c"])]}})
    assert changes(old, new) == [("param-removed", "v.b"), ("param-required-added", "v.c")]
    # one variant of a type each side: compared inside
    old = obj({"v": {"oneOf": [{"const": "a"}, {"const": 1}]}})
    new = obj({"v": {"oneOf": [{"const": "b"}, {"const": 1}]}})
    assert changes(old, new) == [("param-enum-value-removed", "v"), ("param-enum-value-added", "v")]


def test_local_refs_are_followed_so_moving_a_schema_into_defs_changes_nothing() -> None:
    inline = obj({"m": obj({"k": S}, ["k"])})
    moved = obj({"m": {"$ref": "#/$defs/M"}}, **{"$defs": {"M": obj({"k": S}, ["k"])}})
    old_style = obj({"m": {"$ref": "#/definitions/M", "description": "the m"}},
                    definitions={"M": obj({"k": S}, ["k"])})
    assert changes(inline, moved) == []
    assert changes(moved, old_style) == [("param-description-changed", "m")]
    narrowed = obj({"m": {"$ref": "#/$defs/M"}}, **{"$defs": {"M": obj({"k": I}, ["k"])}})
    assert changes(moved, narrowed) == [("param-type-narrowed", "m.k")]


def test_a_single_allof_is_merged() -> None:
    """Older pydantic wraps a described $ref in allOf."""
    wrapped = obj({"m": {"allOf": [{"$ref": "#/$defs/M"}], "description": "the m"}},
                  **{"$defs": {"M": obj({"k": S})}})
    plain = obj({"m": {**obj({"k": S}), "description": "the m"}})
    assert changes(wrapped, plain) == []


def test_recursive_and_broken_refs_end() -> None:
    tree = obj({"node": {"$ref": "#/$defs/T"}},
               **{"$defs": {"T": obj({"children": {"type": "array", "items": {"$ref": "#/$defs/T"}}})}})
    changed = obj({"node": {"$ref": "#/$defs/T"}},
                  **{"$defs": {"T": obj({"children": {"type": "array", "items": {"$ref": "#/$defs/T"}},
                                         "leaf": {"type": "boolean"}}, ["leaf"])}})
    found = changes(tree, changed)
    assert ("param-required-added", "node.leaf") in found
    loop = obj({"a": {"$ref": "#/$defs/A"}}, **{"$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}]}}})
    changes(loop, obj({"a": S}))  # ends
    assert changes(obj({"a": {"$ref": "other.json#/x"}}), obj({"a": {"$ref": "other.json#/y"}})) == [
        ("param-schema-changed", "a")]


def test_boolean_and_missing_schemas() -> None:
    assert changes(None, None) == []
    assert changes(True, {}) == []
    assert changes(obj({"a": True}), obj({"a": False})) == [("param-schema-changed", "a")]
    assert changes(None, obj({"a": S}, ["a"])) == [("param-type-narrowed", ""), ("param-required-added", "a")]
