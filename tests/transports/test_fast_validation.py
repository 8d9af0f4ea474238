"""The validator's fast path (plain schemas, valid calls skip importing jsonschema).

It may only ever agree with jsonschema: "valid" must be valid, "invalid" must be
invalid, and anything it is unsure about goes to jsonschema.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from mcpcli.errors import ValidationError
from mcpcli.validation import check, compile_schema, errors, plainly_valid

OBJ = {"type": "object", "properties": {
    "s": {"type": "string", "minLength": 2, "maxLength": 4},
    "i": {"type": "integer", "minimum": 0, "maximum": 10},
    "n": {"type": ["number", "null"]},
    "b": {"type": "boolean"},
    "e": {"enum": ["a", 1, None]},
    "c": {"const": True},
    "l": {"type": "array", "items": {"type": "string"}},
    "o": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],
          "additionalProperties": False},
}, "required": ["s"], "additionalProperties": False}

CASES: list[tuple[dict[str, Any], Any]] = [
    (OBJ, {"s": "ab"}),
    (OBJ, {"s": "a"}),
    (OBJ, {"s": "abcde"}),
    (OBJ, {}),
    (OBJ, {"s": "ab", "zzz": 1}),
    (OBJ, {"s": "ab", "i": 3}),
    (OBJ, {"s": "ab", "i": 3.0}),
    (OBJ, {"s": "ab", "i": 3.5}),
    (OBJ, {"s": "ab", "i": 11}),
    (OBJ, {"s": "ab", "i": True}),
    (OBJ, {"s": "ab", "n": None}),
    (OBJ, {"s": "ab", "n": "1"}),
    (OBJ, {"s": "ab", "b": 0}),
    (OBJ, {"s": "ab", "e": 1.0}),
    (OBJ, {"s": "ab", "e": True}),
    (OBJ, {"s": "ab", "c": 1}),
    (OBJ, {"s": "ab", "c": True}),
    (OBJ, {"s": "ab", "l": ["x", "y"]}),
    (OBJ, {"s": "ab", "l": ["x", 2]}),
    (OBJ, {"s": "ab", "o": {"x": 1}}),
    (OBJ, {"s": "ab", "o": {}}),
    (OBJ, {"s": "ab", "o": {"x": 1, "y": 2}}),
    (OBJ, {"s": "😀😀"}),
    ({"type": "object", "properties": {"d": {"type": "string", "format": "date"}}}, {"d": "nope"}),
    ({"type": "object", "patternProperties": {"^x": {"type": "string"}}}, {"x1": 3}),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
      "properties": {"a": {"type": "number"}}}, {"a": 1}),
    ({"type": "strnig"}, {}),
]


@pytest.mark.parametrize(("schema", "instance"), CASES)
def test_fast_path_never_disagrees_with_jsonschema(schema: dict[str, Any], instance: Any) -> None:
    fast = plainly_valid(schema, instance)
    if fast is None:
        return
    valid = not errors(compile_schema(schema), instance)
    assert fast == valid


def test_unsure_cases_go_to_jsonschema() -> None:
    assert plainly_valid({"type": "string", "format": "email"}, "x") is None
    assert plainly_valid({"type": "strnig"}, "x") is None
    assert plainly_valid({"anyOf": [{"type": "string"}]}, "x") is None
    with pytest.raises(ValidationError, match="not a valid JSON Schema"):
        check({"type": "strnig"}, {})


def test_invalid_arguments_still_get_jsonschema_messages() -> None:
    with pytest.raises(ValidationError) as caught:
        check(OBJ, {"s": "a", "zzz": 1})
    assert ("zzz", "is not a known field") in caught.value.errors


def test_a_valid_call_does_not_import_jsonschema() -> None:
    code = (
        "import sys\n"
        "from mcpcli.validation import check\n"
        "check({'type': 'object', 'properties': {'m': {'type': 'string'}}, 'required': ['m']}, {'m': 'x'})\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
