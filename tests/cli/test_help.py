"""Help: a group without its subcommand, `mcp help [COMMAND]...`, and unknown commands.

A group run bare (`mcp`, `mcp tools`) shows its help laid out exactly as `--help` lays it
out, on stderr with exit 2 (click's convention for a missing subcommand: it is a usage
error, and stdout is data). `--help` and `mcp help` print the same text on stdout, exit 0.
"""

from __future__ import annotations

import click
import pytest
from helpers import mcp_in

from cli.tree import commands
from mcpcli.cli._app import Command, Group
from mcpcli.cli._root import COMMANDS, HIDDEN, cli


def _groups() -> list[list[str]]:
    """Every group of the command tree, as the words that name it ([] is `mcp` itself)."""
    ctx = click.Context(cli, info_name="mcp")
    return [[]] + [[name] for name in sorted(COMMANDS) if name not in HIDDEN
                   and isinstance(cli.get_command(ctx, name), click.Group)]


@pytest.mark.parametrize("words", _groups(), ids=lambda words: " ".join(["mcp", *words]))
def test_a_group_without_a_subcommand_prints_its_help_as_help_does(words: list[str]) -> None:
    bare = mcp_in(*words)
    helped = mcp_in(*words, "--help")
    assert helped.code == 0 and helped.stdout.startswith(f"Usage: {' '.join(['mcp', *words])} "), helped
    assert bare.code == 2, bare
    assert bare.stdout == ""
    assert bare.stderr == helped.stdout  # whole, line by line: not squashed into one error line
    assert " | " not in bare.stderr.splitlines()[0]


@pytest.mark.parametrize("words", [[], ["tools"], ["tools", "call"], ["serve"], ["auth", "login"], ["help"]])
def test_mcp_help_prints_exactly_what_help_prints(words: list[str]) -> None:
    asked = mcp_in("help", *words)
    helped = mcp_in(*words, "--help")
    assert asked.code == 0 and asked.stderr == "", asked
    assert asked.stdout == helped.stdout


def test_mcp_help_of_a_command_that_reads_its_own_flags() -> None:
    """`mcp script` parses its arguments itself: `mcp help script ...` asks it."""
    assert mcp_in("help", "script").stdout == mcp_in("script", "--help").stdout
    progress = mcp_in("help", "script", "progress")
    assert progress.code == 0 and progress.stdout.startswith("usage: mcp script progress"), progress


@pytest.mark.parametrize(("words", "error", "hint"), [
    (["help", "tols"], "mcp: error: No such command 'tols'. Did you mean 'tools'?", "see `mcp --help`"),
    (["help", "nosuch"], "mcp: error: No such command 'nosuch'.", "see `mcp --help`"),
    (["help", "tools", "cal"], "mcp: error: No such command 'cal'. Did you mean 'call'?", "see `mcp tools --help`"),
    (["help", "tools", "call", "x"], "mcp: error: `mcp tools call` has no subcommands",
     "see `mcp tools call --help`"),
    (["toools"], "mcp: error: No such command 'toools'. Did you mean 'tools'?", "see `mcp --help`"),
    (["servers", "lsit"], "mcp: error: No such command 'lsit'. Did you mean 'list'?", "see `mcp servers --help`"),
])
def test_an_unknown_command_is_a_usage_error_with_the_closest_names(words: list[str], error: str, hint: str) -> None:
    r = mcp_in(*words)
    assert r.code == 2 and r.stdout == "", r
    assert r.stderr.splitlines() == [error, f"mcp: hint: {hint}"]


def _value_options() -> list[tuple[str, str]]:
    """Each command's first option that takes a value, with the command's path."""
    found = []
    for path, command in commands():
        for param in command.params:
            if isinstance(param, click.Option) and not param.is_flag and not param.count and param.opts[0].startswith("--"):
                found.append((path, param.opts[0]))
                break
    return found


@pytest.mark.parametrize(("path", "option"), _value_options(), ids=lambda x: x)
def test_an_option_given_no_value_names_its_own_command_in_the_hint(path: str, option: str) -> None:
    """click's parser leaves the command out of this error; the hint still names it."""
    r = mcp_in(*path.split()[1:], option)
    assert r.code == 2 and r.stdout == "", r
    assert r.stderr.splitlines() == [f"mcp: error: Option '{option}' requires an argument.",
                                     f"mcp: hint: see `{path} --help`"]


def test_every_command_is_one_of_ours() -> None:
    """So that every one names itself in its usage errors (`_app.Command`, `_app.Group`)."""
    strays = [path for path, command in commands() if not isinstance(command, (Command, Group))]
    assert strays == []


def test_hidden_commands_are_never_suggested() -> None:
    assert "script" not in mcp_in("scrip").stderr


def test_mcp_help_completes_command_words() -> None:
    def complete(*words: str) -> list[str]:
        env = {"COMP_WORDS": " ".join(words), "COMP_CWORD": str(len(words) - 1), "_MCP_COMPLETE": "bash_complete"}
        r = mcp_in(env=env)
        assert r.code == 0, r
        return [line for line in r.stdout.splitlines() if line]

    assert complete("mcp", "help", "to") == ["plain,tools"]
    assert complete("mcp", "help", "tools", "c") == ["plain,call"]
    assert complete("mcp", "help", "tools", "call", "") == []
    assert "plain,script" not in complete("mcp", "help", "")
