"""The output flags every command shares: `-c/--compact` as jq has it, and no flag taken twice."""

from __future__ import annotations

import json

import pytest
from helpers import REPO, mcp_in

from cli.tree import commands
from mcpcli.cli._root import COMMANDS

EXAMPLE = str(REPO / "examples" / "tools.yaml")


def test_no_command_takes_one_flag_twice() -> None:
    """click lets a later option silently shadow an earlier one's flag (`-c` on ping)."""
    seen = 0
    for path, command in commands():
        flags = [flag for param in command.params for flag in (*getattr(param, "opts", ()),
                                                                 *getattr(param, "secondary_opts", ()))]
        assert len(flags) == len(set(flags)), f"{path}: {sorted(f for f in flags if flags.count(f) > 1)}"
        seen += 1
    assert seen > len(COMMANDS)


def test_jq_with_c_prints_one_compact_line_per_value() -> None:
    r = mcp_in("tools", "list", EXAMPLE, "--jq", ".tools[:2][] | {name}", "-c")
    assert r.code == 0, r
    assert r.stdout == '{"name":"git_status"}\n{"name":"git_log"}\n'
    assert mcp_in("tools", "list", EXAMPLE, "--jq", ".tools[0].name", "--compact").stdout == '"git_status"\n'


def test_ping_keeps_c_for_count_and_takes_the_long_compact() -> None:
    r = mcp_in("ping", EXAMPLE, "-c", "2", "-i", "0", "--compact")
    assert r.code == 0, r
    assert len(r.stdout.splitlines()) == 1 and json.loads(r.stdout)["count"] == 2


@pytest.mark.parametrize("words", [("servers", "list"), ("session", "list"), ("auth", "list")])
def test_compact_on_commands_without_a_target(words: tuple[str, ...]) -> None:
    r = mcp_in(*words, "-c")
    assert r.code == 0, r
    assert len(r.stdout.splitlines()) == 1 and json.loads(r.stdout) is not None
