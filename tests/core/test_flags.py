"""The client flags as data (`mcpcli.core.flags`): click's options are built from them, the fast
paths read argv with them, and the library's defaults are theirs."""

from __future__ import annotations

from typing import Any

import click
import pytest

from mcpcli.core import flags


def _tools_call() -> click.Command:
    from mcpcli.cli import cli

    ctx = click.Context(cli)
    group = cli.get_command(ctx, "tools")
    assert isinstance(group, click.Group)
    command = group.get_command(ctx, "call")
    assert command is not None
    return command


def _click_reads(tokens: list[str]) -> dict[str, Any]:
    """What click makes of TOKENS for `mcp tools call` (parsed and converted, not run)."""
    command = _tools_call()
    with command.make_context("call", list(tokens)) as ctx:
        return dict(ctx.params)


#: What the fast paths take: `tools call`'s flags of their own, the connection's timeouts
#: and -q, the output flags but --compact, --max-chars and --meta.
TAKEN = flags.by_name(("items", "args_json", "timeout", "max_timeout", "no_validate", "as_json", "jsonl", "quiet",
                       "jq_filter", "raw", "max_chars", "meta"))


@pytest.mark.parametrize("tokens", [
    ["srv", "echo"],
    ["srv", "echo", "--arg", "message=hi", "-a", "n=1", "--arg=k=v"],
    ["--timeout=5", "srv", "-a", "x=-1", "echo", "--no-validate", "-q", "--max-timeout", "9"],
    ["srv", "echo", "--args", '{"a": 1}', "--json", "--quiet", "--quiet"],
    ["srv", "echo", "--jq", ".content", "-r", "--max-chars=0", "--meta", "a=1", "--meta=b=x"],
    ["srv", "echo", "--jsonl", "--max-chars", "12", "--timeout", "0.5"],
    ["srv", "echo", "--arg", "-a"],  # a value that looks like a flag is still the value
])
def test_what_the_reader_takes_it_reads_as_click_does(tokens: list[str]) -> None:
    parsed = flags.parse(tokens, TAKEN)
    assert parsed is not None
    values, positionals = parsed
    clicked = _click_reads(tokens)
    assert positionals == [clicked["target"], clicked["tool"]]
    for dest, value in values.items():
        want = clicked[dest]
        assert (list(want) if isinstance(want, tuple) else want) == value, dest


@pytest.mark.parametrize("tokens", [
    ["srv", "echo", "--timeout", "0"],
    ["srv", "echo", "--timeout", "-1"],
    ["srv", "echo", "--timeout", "inf"],
    ["srv", "echo", "--max-chars", "-1"],
    ["srv", "echo", "--arg"],
    ["srv", "echo", "--json=yes"],
])
def test_what_click_refuses_the_reader_leaves_to_click(tokens: list[str]) -> None:
    assert flags.parse(tokens, TAKEN) is None
    with pytest.raises(click.UsageError):
        _click_reads(tokens)


@pytest.mark.parametrize("tokens", [
    ["srv", "echo", "--env", "A=1"],          # a flag it is not handed
    ["srv", "echo", "-amessage=hi"],          # a short flag's value attached
    ["srv", "echo", "-"],
    ["srv", "echo", "--"],
    ["srv", "echo", "--timeout", "5", "--timeout", "9"],  # click keeps the last
])
def test_anything_else_is_left_to_click(tokens: list[str]) -> None:
    assert flags.parse(tokens, TAKEN) is None


def test_a_flag_s_variable_and_default_are_read_as_click_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = flags.parse(["srv", "echo"], TAKEN)
    assert parsed is not None
    assert (parsed[0]["timeout"], parsed[0]["max_timeout"]) == (flags.TIMEOUT, flags.MAX_TIMEOUT)
    assert _click_reads(["srv", "echo"])["timeout"] == flags.TIMEOUT
    monkeypatch.setenv("MCP_TIMEOUT", "7")
    assert (flags.parse(["srv", "echo"], TAKEN) or ({}, []))[0]["timeout"] == 7.0
    assert _click_reads(["srv", "echo"])["timeout"] == 7.0
    monkeypatch.setenv("MCP_TIMEOUT", "")  # empty: unset, for click too
    assert (flags.parse(["srv", "echo"], TAKEN) or ({}, []))[0]["timeout"] == flags.TIMEOUT
    monkeypatch.setenv("MCP_TIMEOUT", "soon")
    assert flags.parse(["srv", "echo"], TAKEN) is None


def test_every_click_option_of_a_command_is_its_flag() -> None:
    """`mcp tools call`'s options for the table's flags are the table's: names, default,
    variable, metavar, help, repeated (`--help` and the man pages come from here)."""
    params = {param.name: param for param in _tools_call().params if isinstance(param, click.Option)}
    for flag in flags.FLAGS.values():
        option = params[flag.dest]
        assert option.opts == list(flag.names)
        assert option.help == flag.help
        assert option.envvar == flag.envvar
        assert option.metavar == flag.metavar
        assert option.multiple == flag.repeated
        assert option.is_flag == (flag.kind == "flag")
        if flag.default is not None:
            assert option.default == flag.default


def test_the_library_s_defaults_are_the_flags() -> None:
    from mcpcli.cli._connection import Connection
    from mcpcli.client import ClientOptions
    from mcpcli.gateway import GatewayOptions

    options = ClientOptions()
    assert (options.timeout, options.max_timeout, options.probe_timeout) == (
        flags.TIMEOUT, flags.MAX_TIMEOUT, flags.PROBE_TIMEOUT)
    assert (Connection().timeout, Connection().max_timeout) == (flags.TIMEOUT, flags.MAX_TIMEOUT)
    assert GatewayOptions().timeout == flags.TIMEOUT
    assert (flags.TIMEOUT, flags.MAX_TIMEOUT, flags.PROBE_TIMEOUT) == (60.0, 3600.0, 5.0)  # README, --help


@pytest.mark.parametrize(("text", "seconds"), [
    (None, 5.0), ("", 5.0), ("0", 0.0), ("0.25", 0.25), ("nan", None), ("inf", None), ("-1", None), ("x", None),
])
def test_the_probe_timeout_variable(text: str | None, seconds: float | None) -> None:
    assert flags.probe_timeout(text) == seconds


def test_a_kind_outside_the_list_is_refused() -> None:
    with pytest.raises(ValueError, match="kind"):
        flags.Flag("--x", dest="x", kind="number", help="x")
