"""The equivalent command line (`mcpcli.inspector.cmdline`): it runs the same call. Each line
is split as a shell would (`shlex`), parsed by the real `mcp tools call` / `prompts get`
commands, and its `--arg` items typed by the CLI's own grammar with the same schema."""

from __future__ import annotations

import json
import shlex
from typing import Any

import click
from fuzz.test_args_fuzz import schema_and_object
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcpcli.args import build_arguments, prompt_schema, read_json_source
from mcpcli.inspector.cmdline import Invocation, arg_items

EV = Invocation(target="ev")


def parsed(line: str, group: str, name: str) -> dict[str, Any]:
    """The arguments `mcp GROUP NAME ...` gets from `line`, parsed by the click command itself."""
    from mcpcli.cli.prompts import get
    from mcpcli.cli.tools import call

    command: click.Command = {"tools": call, "prompts": get}[group]
    words = shlex.split(line)
    assert words[:3] == ["mcp", group, name]
    with command.make_context(name, words[3:]) as ctx:
        return dict(ctx.params)


def sent(line: str, schema: Any, group: str = "tools") -> dict[str, Any]:
    params = parsed(line, group, "call" if group == "tools" else "get")
    base = read_json_source(params["args_json"]) if params["args_json"] is not None else None
    return build_arguments(params["items"], schema=schema, base=base)


def same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


SUM = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}


def test_the_issue_example() -> None:
    assert EV.tool_call("get-sum", {"a": 2, "b": 3}, SUM) == "mcp tools call ev get-sum --arg a=2 --arg b=3"


def test_values_that_text_would_mistype_are_raw_json() -> None:
    schema = {"type": "object", "properties": {
        "code": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": ["boolean", "string"]},
        "tags": {"type": "array", "items": {"type": "string"}}, "any": {}, "f": {"type": "number"}}}
    args = {"code": "007", "n": 3, "x": "false", "tags": ["a", "b c"], "any": 5, "f": 2.0}
    line = EV.tool_call("t", args, schema)
    assert "--arg code=007" in line and "--arg n=3" in line
    assert "'x:=\"false\"'" in line  # the string "false", not the boolean
    assert "any:=5" in line  # unconstrained: text would be the string "5"
    assert same(sent(line, schema), args)


def test_awkward_strings_survive_the_shell_and_the_grammar() -> None:
    schema = {"type": "object", "properties": {k: {"type": "string"} for k in "abcdefg"}}
    args = {"a": "@home", "b": "\\@x", "c": "it's $(rm -rf /) `x`", "d": "", "e": "line\nbreak",
            "f": "-- --arg", "g": "  spaced  "}
    line = EV.tool_call("t", args, schema)
    assert same(sent(line, schema), args)


def test_keys_the_grammar_cannot_spell_fall_back_to_args_json() -> None:
    schema = {"type": "object"}
    args = {"a=b": 1, "ok": "x"}
    line = EV.tool_call("t", args, schema)
    assert "--args" in line and "--arg " not in line
    assert same(sent(line, schema), args)
    dotted = {"a.b": "x"}
    line = EV.tool_call("t", dotted, {"type": "object", "properties": {"a.b": {"type": "string"}}})
    assert "'a\\.b=x'" in line
    assert same(sent(line, {"type": "object", "properties": {"a.b": {"type": "string"}}}), dotted)


def test_target_forms() -> None:
    stdio = Invocation(server_command=("node", "srv.js", "--port", "3"), flags=("--root", "/tmp/x y"))
    line = stdio.tool_call("echo", {"message": "hi"}, {"type": "object", "properties": {"message": {"type": "string"}}})
    assert line == "mcp tools call echo --arg message=hi --root '/tmp/x y' -- node srv.js --port 3"
    assert Invocation(target="@ev").resource_read("demo://a b") == "mcp resources read @ev 'demo://a b'"
    assert EV.task("cancel", "t-1") == "mcp tasks cancel ev t-1"
    assert EV.subscribe("file:///x") == "mcp resources subscribe ev file:///x"
    assert EV.complete({"type": "ref/prompt", "name": "p"}, "city", "Pa", {"country": "FR"}) == (
        "mcp complete ev city Pa --prompt p --context country=FR")
    assert EV.plain("info") == "mcp info ev"


def test_prompt_arguments_are_strings() -> None:
    prompt = {"name": "p", "arguments": [{"name": "n", "required": True}, {"name": "s.t"}]}
    args = {"n": "007", "s.t": "@x"}
    line = EV.prompt_get("p", args, prompt)
    assert line.startswith("mcp prompts get ev p ")
    assert same(sent(line, prompt_schema(prompt), "prompts"), args)


@settings(deadline=None)
@given(schema_and_object())
@example(({"type": "object", "properties": {"s": {"type": "string"}}}, {"s": "\\@home"}))
@example(({"type": "object", "properties": {"n": {"type": "number"}}}, {"n": 1e16}))
@example(({"type": "object", "properties": {"i": {"type": "integer"}}}, {"i": 10**20}))
def test_round_trip(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    schema, value = case
    line = EV.tool_call("t", value, schema)
    assert same(sent(line, schema), value)


@settings(deadline=None)
@given(st.dictionaries(st.text(max_size=6), st.text(max_size=8) | st.integers() | st.booleans() | st.none(),
                       max_size=4))
def test_any_keys_round_trip_without_a_schema(value: dict[str, Any]) -> None:
    line = EV.tool_call("t", value, None)
    assert same(sent(line, None), value)
    items = arg_items(value, None)
    if items is not None:
        assert same(build_arguments(items), value)
