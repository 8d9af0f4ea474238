"""The --arg grammar: typing by schema, raw JSON, files, stdin, nesting."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpcli.args import build_arguments, read_json_source
from mcpcli.errors import ArgumentError

SCHEMA = {
    "type": "object",
    "properties": {
        "zip": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "maybe": {"type": ["integer", "null"]},
        "mode": {"enum": ["fast", "slow"]},
        "level": {"enum": [1, 2, "auto"]},
        "tags": {"type": "array", "items": {"type": "integer"}},
        "names": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "object", "properties": {"depth": {"type": "integer"}}},
        "ref": {"$ref": "#/$defs/port"},
    },
    "$defs": {"port": {"type": "integer"}},
}


def build(*items: str, **kw: object) -> dict:
    return build_arguments(items, schema=SCHEMA, **kw)  # type: ignore[arg-type]


def test_string_fields_keep_their_exact_text() -> None:
    assert build("zip=007", "names=1e3") == {"zip": "007", "names": ["1e3"]}


def test_scalars_convert_by_schema_type() -> None:
    assert build("count=42", "ratio=0.5", "flag=true", "maybe=null") == {
        "count": 42, "ratio": 0.5, "flag": True, "maybe": None,
    }
    assert build("flag=no") == {"flag": False}
    assert build("ref=8080") == {"ref": 8080}


def test_enums_match_their_members_by_text() -> None:
    assert build("mode=fast", "level=2") == {"mode": "fast", "level": 2}
    assert build("level=auto") == {"level": "auto"}


def test_arrays_from_repetition_or_json_never_by_splitting_commas() -> None:
    assert build("tags=1", "tags=2") == {"tags": [1, 2]}
    assert build("tags=[3,4]") == {"tags": [3, 4]}
    assert build("names=a,b") == {"names": ["a,b"]}


def test_dotted_keys_nest_and_escaped_dots_do_not() -> None:
    assert build("opts.depth=3") == {"opts": {"depth": 3}}
    assert build_arguments(["a\\.b=1"]) == {"a.b": "1"}


def test_raw_json_wins_over_the_schema() -> None:
    assert build('count:="x"', "opts:={\"k\":[1]}") == {"count": "x", "opts": {"k": [1]}}


def test_files_and_stdin(tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("hello\n")
    data = tmp_path / "d.json"
    data.write_text('{"x": 1}')
    count = tmp_path / "n.txt"
    count.write_text("12\n")
    assert build(f"zip=@{note}", f"opts:=@{data}", f"count=@{count}") == {
        "zip": "hello\n", "opts": {"x": 1}, "count": 12,
    }
    assert build("zip=@-", stdin=lambda: "from stdin") == {"zip": "from stdin"}
    assert build("zip=\\@literal") == {"zip": "@literal"}


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("count=abc", "'abc' is not a valid integer"),
        ("flag=maybe", "not a valid boolean"),
        ("noequals", "expected key=value"),
        ("=x", "expected key=value"),
        ("count:={", "invalid JSON"),
        ("zip=@/no/such/file", "no such file"),
    ],
)
def test_bad_items_name_the_problem(item: str, message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        build(item)


def test_args_object_is_the_base_and_arg_items_override() -> None:
    base = read_json_source('{"count": 1, "zip": "1"}')
    assert build("count=2", base=base) == {"count": 2, "zip": "1"}
    with pytest.raises(ArgumentError, match="expected a JSON object"):
        read_json_source("[1]")
