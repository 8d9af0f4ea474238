"""The inspector on every kind of TARGET: server-everything over Streamable HTTP, our own
`mcp serve` (a `--` command over stdio, and a tools.yaml served in-process: the 2026-07-28
era), and a session held by the daemon (`@NAME`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import mcp_in, wait_until

from inspector.driver import inspecting, until
from mcpcli.inspector.formscreen import CallScreen, FieldsForm
from mcpcli.inspector.panes import ItemsPane
from mcpcli.inspector.results import CommandLine

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOOLS = """\
version: 1
server: {name: inspected, version: "1.0"}
tools:
  - name: greet
    description: Says hello.
    params:
      name: {type: string, description: Who}
      times: {type: integer, default: 2, minimum: 1}
      loud: {type: boolean, default: false}
    run:
      shell: sh
      script: 'echo "hello $MCP_ARG_NAME x$MCP_ARG_TIMES loud=$MCP_ARG_LOUD"'
  - name: fail
    description: Always fails.
    run: {shell: sh, script: "echo broken; exit 3"}
prompts:
  - name: review
    description: Review something.
    arguments:
      focus: {default: correctness, enum: [correctness, security]}
    messages:
      - text: "Focus on {{ focus }}."
"""


def body(app: Any) -> str:
    return str(app.screen.query_one(".result-body").render())


async def call(app: Any, pilot: Any, tool: str, values: dict[str, str] | None = None) -> CallScreen:
    await pilot.press("slash", *tool, "enter")
    await until(pilot, lambda: isinstance(app.screen, CallScreen), f"the form of {tool}")
    screen: CallScreen = app.screen
    form = screen.query_one(FieldsForm)
    for name, value in (values or {}).items():
        index = next(i for i, f in enumerate(form.fields) if f.name == name)
        form.query_one(f"#field-{index}").value = value
    await pilot.press("enter")
    await until(pilot, lambda: screen.worker is not None and not screen.running, "the call")
    return screen


@pytest.fixture
def tools_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "tools.yaml"
    path.write_text(TOOLS)
    return path


@pytest.mark.peer
async def test_streamable_http(everything_http_url: str) -> None:
    async with inspecting(everything_http_url) as (app, pilot):
        assert app.client.transport.name == "streamable-http" or "http" in app.client.transport.name
        screen = await call(app, pilot, "echo", {"message": "over http"})
        assert "Echo: over http" in body(app)
        assert screen.query_one(CommandLine).command == f"mcp tools call {everything_http_url} echo --arg 'message=over http'"


async def test_our_own_serve_over_stdio_with_an_error_result(tools_yaml: Path) -> None:
    command = [sys.executable, "-m", "mcpcli", "serve", str(tools_yaml)]
    async with inspecting(server_command=command) as (app, pilot):
        screen = await call(app, pilot, "greet", {"name": "Ada"})
        assert "hello Ada x2 loud=false" in body(app)
        assert screen.query_one(CommandLine).command.startswith("mcp tools call greet --arg name=Ada --arg times=2 ")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, CallScreen), "the lists")
        app.query_one("#tools-filter").value = ""
        screen = await call(app, pilot, "fail")
        status = screen.query_one("#result-status")
        assert "isError" in str(status.render()) and status.has_class("error")
        assert "broken" in body(app)
        history = app.query("HistoryPane").first()
        assert [e.status for e in history.entries] == ["ok", "isError"]


async def test_a_tools_yaml_in_process_in_the_modern_era(tools_yaml: Path) -> None:
    async with inspecting(str(tools_yaml)) as (app, pilot):
        assert app.client.era == "modern"
        screen = await call(app, pilot, "greet", {"name": "Bo", "times": "3"})
        assert "hello Bo x3" in body(app)
        assert screen.query_one(CommandLine).command.startswith(f"mcp tools call {tools_yaml} greet --arg name=Bo")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, CallScreen), "the lists")
        for _ in range(3):
            await pilot.press("right_square_bracket")
        await until(pilot, lambda: app.query_one("TabbedContent").active == "tab-prompts", "the prompts")
        assert [p["name"] for p in app.query_one("#pane-prompts", ItemsPane).items] == ["review"]
        app.query_one("#pane-prompts", ItemsPane).option_list.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CallScreen), "the prompt's form")
        app.screen.query_one(FieldsForm).query_one("#field-0").value = "security"
        await pilot.press("enter")
        await until(pilot, lambda: app.screen.worker is not None and not app.screen.running, "the prompt")
        assert "Focus on security." in body(app)


@pytest.mark.peer
async def test_a_session(everything: list[str]) -> None:
    opened = mcp_in("session", "open", "ev", "--json", "--", *everything)
    assert opened.code == 0, opened
    try:
        async with inspecting("@ev") as (app, pilot):
            screen = await call(app, pilot, "echo", {"message": "held"})
            assert "Echo: held" in body(app)
            assert screen.query_one(CommandLine).command == "mcp tools call @ev echo --arg message=held"
    finally:
        closed = mcp_in("session", "close", "ev", "--json")
        assert closed.code == 0, closed
        wait_until(lambda: mcp_in("session", "list", "--json").json.get("sessions") == [], what="no session")
