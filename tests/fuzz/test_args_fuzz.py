"""The `--arg` grammar (`mcpcli.args.build_arguments`) against random schemas and items.

Properties: any items against any schema (well-formed or not, recursive `$ref`s
included) give an arguments object that can be sent as JSON, or an
`ArgumentError`, nothing else; a `key=value` accepted for a plainly typed field
validates against that field's schema; and a random object conforming to a
simple schema, written out as `--arg` items the way the README documents,
parses back to the same object.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fuzz.strategies import json_values
from mcpcli.args import build_arguments
from mcpcli.errors import ArgumentError

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,5}(\.[a-z]{1,3})?", fullmatch=True)
SCALAR_TYPES = ["string", "number", "integer", "boolean", "null"]
ALL_TYPES = [*SCALAR_TYPES, "array", "object"]

#: Plainly typed schemas: what the grammar converts to (no enums, no object properties).
plain_schemas = st.recursive(
    st.sampled_from(ALL_TYPES).map(lambda t: {"type": t})
    | st.lists(st.sampled_from(ALL_TYPES), min_size=1, max_size=3, unique=True).map(lambda ts: {"type": ts}),
    lambda inner: st.builds(lambda items: {"type": "array", "items": items}, inner),
    max_leaves=3,
)

#: Anything a server might put in an inputSchema property, sane or not.
any_schemas = st.recursive(
    plain_schemas
    | st.lists(json_values, max_size=4).map(lambda e: {"enum": e})
    | json_values.map(lambda c: {"const": c})
    | st.sampled_from([{}, {"$ref": "#"}, {"$ref": "#/properties/a"}, {"$ref": "http://x/y"},
                       {"anyOf": 5}, {"oneOf": "ab"}, {"allOf": [1, None]}, {"type": 7},
                       {"items": {"$ref": "#/properties/a"}, "type": "array"}, {"properties": []}])
    | json_values,
    lambda inner: st.builds(lambda b: {"anyOf": b}, st.lists(inner, max_size=3))
    | st.builds(lambda p: {"type": "object", "properties": p}, st.dictionaries(NAMES, inner, max_size=3))
    | st.builds(lambda i: {"type": "array", "items": i}, inner),
    max_leaves=8,
)

any_object_schemas = st.builds(
    lambda props, extra: {"type": "object", "properties": props, **extra},
    st.dictionaries(NAMES | st.text(max_size=4), any_schemas, max_size=5),
    st.sampled_from([{}, {"additionalProperties": {"type": "integer"}}, {"anyOf": [{"$ref": "#"}]},
                     {"allOf": 3}, {"$defs": {"a": {"$ref": "#/$defs/a"}}}]),
) | json_values


def _no_file(item: str) -> str:
    """Random items must not read files or stdin: escape a leading `@`."""
    eq = item.find("=")
    return item[: eq + 1] + "\\" + item[eq + 1 :] if eq >= 0 and item[eq + 1 : eq + 2] == "@" else item


items = st.lists(
    st.one_of(
        st.tuples(NAMES, st.text(max_size=12)).map(lambda kv: f"{kv[0]}={kv[1]}"),
        st.tuples(NAMES, json_values.map(json.dumps) | st.text(max_size=12)).map(lambda kv: f"{kv[0]}:={kv[1]}"),
        st.text(max_size=16),
    ).map(_no_file),
    max_size=5,
)


def build(items: list[str], schema: Any) -> dict[str, Any] | None:
    """The arguments, or None on the documented error; the result must be sendable JSON."""
    try:
        out = build_arguments(items, schema=schema, stdin=lambda: "stdin text")
    except ArgumentError as exc:
        message = str(exc)
    else:
        message = ""
    if message:
        return None
    json.dumps(out, allow_nan=False).encode("utf-8")
    return out


@given(items, any_object_schemas)
@example(["x:=" + "[" * 5000], {"type": "object"})  # RecursionError from json.loads
@example(["x:=NaN"], None)  # NaN/Infinity/1e999 could never be sent
@example(["x:=1e999"], None)
@example(["x=1e999"], {"type": "object", "properties": {"x": {"type": ["number", "string"]}}})  # inf from a union literal
@example(["x=a"], {"type": "object", "properties": {"x": {"anyOf": 5}}})  # TypeError
@example(["x=a"], {"type": "object", "properties": {"x": {"type": "array", "items": {"$ref": "#/properties/x"}}}})
@example(["x=a"], {"anyOf": [{"$ref": "#"}], "properties": {"x": {"anyOf": [{"$ref": "#/properties/x"}]}}})
def test_any_items_any_schema(items: list[str], schema: Any) -> None:
    build(items, schema)


@given(NAMES, plain_schemas, st.text(max_size=12) | st.sampled_from(
    ["1", "-0", "1.5", "1e3", "true", "no", "null", "[1, 2]", '{"a": 1}', "[", " 7 ", "nan", "1e999"]))
def test_accepted_values_validate(name: str, prop: dict[str, Any], text: str) -> None:
    key = name.replace(".", "\\.")
    schema = {"type": "object", "properties": {name: prop}}
    out = build([_no_file(f"{key}={text}")], schema)
    if out is not None:
        # `[..]`/`{..}` text is raw JSON (README): only its own type is promised, not its items.
        raw_json = text.strip()[:1] in ("[", "{")
        jsonschema.Draft202012Validator({"type": prop["type"]} if raw_json else prop).validate(out[name])


# -- round trip ------------------------------------------------------------------------

ROUND_TRIP_TYPES = ["string", "integer", "number", "boolean", "null"]


def scalar_values(kind: str) -> st.SearchStrategy[Any]:
    return {
        "string": st.text(max_size=10),
        "integer": st.integers(min_value=-(10**30), max_value=10**30),
        "number": st.floats(allow_nan=False, allow_infinity=False) | st.integers(-1000, 1000),
        "boolean": st.booleans(),
        "null": st.none(),
    }[kind]


@st.composite
def schema_and_object(draw: st.DrawFn, depth: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """A simple object schema and a random object conforming to it."""
    props: dict[str, Any] = {}
    value: dict[str, Any] = {}
    for name in draw(st.lists(NAMES, max_size=4, unique=True)):
        shape = draw(st.sampled_from(["scalar", "array"] + (["object"] if depth < 2 else [])))
        if shape == "object":
            props[name], sub = draw(schema_and_object(depth + 1))
        elif shape == "array":
            kind = draw(st.sampled_from(["string", "integer", "number", "boolean"]))
            props[name] = {"type": "array", "items": {"type": kind}}
            sub = draw(st.lists(scalar_values(kind), max_size=3))
        else:
            kind = draw(st.sampled_from(ROUND_TRIP_TYPES))
            props[name] = {"type": kind}
            sub = draw(scalar_values(kind))
        if draw(st.booleans()) or shape == "object":
            value[name] = sub
    return {"type": "object", "properties": props}, value


def scalar_text(value: Any) -> str | None:
    """`value` as `key=` text, or None when only `key:=json` can say it."""
    if isinstance(value, str):
        if value.startswith("\\@"):
            return None
        return "\\" + value if value.startswith("@") else value
    return json.dumps(value)


def render(value: dict[str, Any], prefix: str = "") -> list[str]:
    """The `--arg` items the README documents for `value`."""
    out: list[str] = []
    for name, sub in value.items():
        key = prefix + name.replace(".", "\\.")
        if isinstance(sub, dict):
            out += render(sub, key + ".") if sub else [f"{key}:={{}}"]
        elif isinstance(sub, list):
            texts = [scalar_text(v) for v in sub]
            if sub and all(t is not None and t.strip()[:1] not in ("[", "{") for t in texts):
                out += [f"{key}={t}" for t in texts]  # repeating an array field appends
            else:
                out.append(f"{key}={json.dumps(sub)}")
        else:
            text = scalar_text(sub)
            out.append(f"{key}={text}" if text is not None else f"{key}:={json.dumps(sub)}")
    return out


@given(schema_and_object())
@example(({"type": "object", "properties": {"s": {"type": "string"}}}, {"s": "@home"}))
@example(({"type": "object", "properties": {"n": {"type": "number"}}}, {"n": 1e16}))
def test_round_trip(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    schema, value = case
    jsonschema.Draft202012Validator(schema).validate(value)
    out = build(render(value), schema)
    assert json.dumps(out, sort_keys=True) == json.dumps(value, sort_keys=True)


def test_documented_errors() -> None:
    for bad in (["x:=" + "{" * 3000], ["x:=NaN"], ["x:=-Infinity"], ["x:=[1e999]"], ["=1"], ["a..b=1"]):
        with pytest.raises(ArgumentError):
            build_arguments(bad, schema={"type": "object"})
