"""`mcp skill SERVER`: an Agent Skill (SKILL.md) for a server, compared with a golden file
for server-everything.

The golden file is tests/skill/golden/everything-SKILL.md. When server-everything (or
the skill's wording) changes on purpose, regenerate it with

    MCPCLI_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/skill/test_skill.py

and review the diff.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in

from mcpcli import skill

GOLDEN = Path(__file__).resolve().parent / "golden" / "everything-SKILL.md"


def _config(tmp_path: Path, servers: dict[str, object]) -> dict[str, str]:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return {"MCP_CONFIG": str(path), "MCP_NO_DISCOVERY": "1"}


def _front_matter(text: str) -> dict[str, str]:
    head = text.split("---\n")[1]
    return {k: v for k, _, v in (line.partition(": ") for line in head.splitlines())}


@pytest.mark.peer
def test_the_skill_for_server_everything_matches_the_golden_file(tmp_path: Path, everything: list[str]) -> None:
    env = _config(tmp_path, {"everything": {"command": everything[0], "args": everything[1:]}})
    r = mcp_in("skill", "everything", "-q", env=env)
    assert r.code == 0, r
    if os.environ.get("MCPCLI_REGEN_GOLDEN"):
        GOLDEN.write_text(r.stdout)
    assert r.stdout == GOLDEN.read_text()
    again = mcp_in("skill", "everything", "-q", env=env)
    assert again.stdout == r.stdout  # deterministic
    meta = _front_matter(r.stdout)
    assert meta["name"] == "everything"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", meta["name"]) and len(meta["name"]) <= 64
    assert len(json.loads(meta["description"])) <= 1024


@pytest.mark.peer
def test_out_writes_name_slash_skill_md_and_tools_narrows(tmp_path: Path, everything: list[str]) -> None:
    env = _config(tmp_path, {"My Server": {"command": everything[0], "args": everything[1:]}})
    r = mcp_in("skill", "My Server", "--tools", "get-s*,echo", "--out", str(tmp_path / "skills"), "-q",
               "--json", env=env)
    assert r.code == 0, r
    path = tmp_path / "skills" / "my-server" / "SKILL.md"
    assert r.json == {"name": "my-server", "description": r.json["description"], "path": str(path)}
    text = path.read_text()
    assert _front_matter(text)["name"] == "my-server"
    lines = [line for line in text.splitlines() if line.startswith("- `")]
    assert [line.split("(")[0] for line in lines] == ["- `echo", "- `get-structured-content", "- `get-sum"]
    assert "  `mcp tools call 'My Server' get-sum --arg a=1 --arg b=1`" in text.splitlines()
    assert f"mcp: wrote {path}" in r.stderr


@pytest.mark.parametrize("tool", ["echo", "get-sum", "get-structured-content", "get-annotated-message",
                                  "get-resource-reference"])
@pytest.mark.peer
def test_the_worked_examples_run(tmp_path: Path, everything: list[str], tool: str) -> None:
    env = _config(tmp_path, {"everything": {"command": everything[0], "args": everything[1:]}})
    (example,) = [line.strip().strip("`") for line in GOLDEN.read_text().splitlines()
                  if line.startswith(f"  `mcp tools call everything {tool} ") or line == f"  `mcp tools call everything {tool}`"]
    r = mcp_in(*shlex.split(example)[1:], "-q", env=env)
    assert r.code == 0, r
    assert r.json["content"], r


def test_no_matching_tool_is_a_usage_error(tmp_path: Path) -> None:
    r = mcp_in("skill", "--tools", "nomatch*", "--", *fake_server())
    assert r.code == 2, r
    assert r.stdout == ""
    assert "mcp: error: no tool matches --tools nomatch*" in r.stderr


def test_tools_of_odd_shapes_are_described_as_far_as_they_go() -> None:
    """A schema whose `required` holds a list (once an unhashable set member) or is a number."""
    r = mcp_in("skill", "--", *fake_server("--odd-tools"))
    assert r.code == 0, r
    assert "odd-required" in r.stdout and "required-number" in r.stdout


def test_compact_asks_for_json_as_its_help_says(tmp_path: Path) -> None:
    """A pipe gets the Markdown; --json, --jq and -c (JSON on one line) get the JSON object."""
    examples = str(Path(__file__).resolve().parents[2] / "examples" / "tools.yaml")
    assert mcp_in("skill", examples).stdout.startswith("---\n")
    r = mcp_in("skill", examples, "-c")
    assert r.code == 0, r
    assert len(r.stdout.splitlines()) == 1
    assert json.loads(r.stdout)["markdown"].startswith("---\n")


def test_an_http_server_says_how_to_sign_in(tmp_path: Path) -> None:
    tools = [{"name": "x", "inputSchema": {"type": "object"}}]
    made = skill.build_skill(name="api", ref="api", server_info={"name": "api"}, tools=tools, signs_in=True)
    assert "`mcp auth login api`" in made.markdown
    made = skill.build_skill(name="api", ref="api", server_info={"name": "api"}, tools=tools)
    assert "auth login" not in made.markdown


@pytest.mark.parametrize(("prop", "value"), [
    ({"type": "integer", "default": 5}, 5),
    ({"type": "string", "examples": ["Paris"]}, "Paris"),
    ({"type": "string", "enum": ["a", "b"]}, "a"),
    ({"type": "string", "format": "uri"}, "https://example.com"),
    ({"type": "integer", "minimum": 3}, 3),
    ({"type": ["null", "boolean"]}, True),
    ({"type": "array", "items": {"type": "string"}}, []),
])
def test_example_values_come_from_the_schema(prop: dict[str, object], value: object) -> None:
    assert skill.example_value(prop) == value


def test_signatures_mark_optional_parameters_defaults_and_structured_results() -> None:
    tool = {"name": "t", "inputSchema": {"type": "object", "required": ["q"], "properties": {
        "q": {"type": "string"}, "n": {"type": "integer", "default": 3}, "tags": {"type": "array",
                                                                                    "items": {"type": "string"}}}},
            "outputSchema": {"type": "object"}}
    assert skill.tool_line(tool) == "t(q: string, n?: integer = 3, tags?: string[]) → structuredContent"
    tool["inputSchema"]["required"] = ["q", "tags"]  # type: ignore[index]
    assert skill.example_call("mcp", "my srv", tool) == "mcp tools call 'my srv' t --arg q=text --arg 'tags:=[]'"


@pytest.mark.parametrize(("base", "name"), [("Everything", "everything"), ("My_Server v2", "my-server-v2"),
                                            ("--", "mcp-server"), ("x" * 80, "x" * 64)])
def test_skill_names_follow_the_agent_skills_rules(base: str, name: str) -> None:
    assert skill.skill_name(base) == name


def test_server_text_cannot_reach_the_terminal_raw(tmp_path: Path) -> None:
    evil = "Echo.\x1b[2J\u202eevil\x07"
    r = mcp_in("skill", "--", *fake_server("--evil", evil))
    assert r.code == 0, r
    assert not any(ch in r.stdout for ch in "\x1b\u202e\x07"), r
    assert "- `echo(message: string)` Echo.\\x1b[2J\\u202eevil\\x07" in r.stdout.splitlines()
