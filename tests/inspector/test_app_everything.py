"""The inspector driven headless (Textual's pilot) against the real server-everything over
stdio: lists and filter, forms, calls, results, the command lines and history, cancellation,
elicitation, sampling, the log, subscriptions and tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import OptionList

from inspector.driver import inspecting, until
from mcpcli.inspector.activity import HistoryPane, LogPane, SubscriptionsPane, TasksPane
from mcpcli.inspector.formscreen import CallScreen, FieldsForm
from mcpcli.inspector.panes import ItemsPane
from mcpcli.inspector.results import CommandLine, ResultView

pytestmark = [pytest.mark.anyio, pytest.mark.peer, pytest.mark.slow]


def result_of(app: Any) -> ResultView:
    return app.screen.query_one(ResultView)


def body(app: Any) -> str:
    return str(app.screen.query_one(".result-body").render())


async def open_tool(app: Any, pilot: Any, name: str) -> CallScreen:
    """`/` NAME Enter: filter the tools, open the first match."""
    await pilot.press("slash", *name, "enter")
    await until(pilot, lambda: isinstance(app.screen, CallScreen), f"the form of {name}")
    assert app.screen.spec.title == f"tools/call {name}"
    return app.screen


async def finished(app: Any, pilot: Any) -> None:
    await until(pilot, lambda: not app.screen.running and app.screen.worker is not None, "the call to end")


async def test_filter_form_run_result_command_and_history(everything: list[str]) -> None:
    async with inspecting(server_command=everything) as (app, pilot):
        tools = app.query_one("#pane-tools", ItemsPane)
        assert any(t["name"] == "get-sum" for t in tools.items)
        await pilot.press("slash", "g", "e", "t", "-", "s", "u")
        await until(pilot, lambda: [t["name"] for t in tools.shown] == ["get-sum"], "the filter")
        await pilot.press("enter")  # open the highlighted match
        await until(pilot, lambda: isinstance(app.screen, CallScreen), "the form")
        # Required marks; validation messages before anything is sent.
        await pilot.press("enter")
        await until(pilot, lambda: "not sent" in str(app.screen.query_one("#result-status").render()),
                    "the refusal")
        assert "required" in str(app.screen.query_one("#error-field-0").render())
        assert app.screen.worker is None  # nothing was sent
        await pilot.press("2", "tab", "x")
        await pilot.press("enter")
        await until(pilot, lambda: "enter a number" in str(app.screen.query_one("#error-field-1").render()),
                    "the field's message")
        await pilot.press("backspace", "3", "enter")
        await finished(app, pilot)
        assert "The sum of 2 and 3 is 5." in body(app)
        command = app.screen.query_one(CommandLine).command
        assert command.startswith("mcp tools call get-sum --arg a=2 --arg b=3 -- ")
        await pilot.press("ctrl+y")
        assert app.clipboard == command
        await pilot.press("escape")  # back to the lists
        await until(pilot, lambda: not isinstance(app.screen, CallScreen), "the lists")
        history = app.query_one(HistoryPane)
        assert [(e.title, e.status, e.command) for e in history.entries] == [("tools/call get-sum", "ok", command)]


async def test_escape_cancels_a_running_call_and_the_server_is_told(everything: list[str], tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    async with inspecting(server_command=everything, record=str(record)) as (app, pilot):
        screen = await open_tool(app, pilot, "trigger-long-running-operation")
        form = screen.query_one(FieldsForm)
        await pilot.click("#field-0")
        form.query_one("#field-0").value = "60"
        await pilot.press("enter")
        await until(pilot, lambda: "1/" in str(screen.query_one("#progress-message").render()), "progress")
        await pilot.press("escape")
        await finished(app, pilot)
        assert "cancelled" in str(screen.query_one("#result-status").render())
        assert isinstance(app.screen, CallScreen)  # the first Escape cancels, the second goes back
        history = app.query_one(HistoryPane)
        assert history.entries[-1].status == "cancelled"
    sent = [json.loads(line) for line in record.read_text().splitlines()]
    cancelled = [m for m in sent if m.get("message", m).get("method") == "notifications/cancelled"
                 or '"notifications/cancelled"' in json.dumps(m)]
    assert cancelled, sent[-5:]


async def test_images_are_saved_and_structured_content_is_a_tree(everything: list[str], tmp_path: Path) -> None:
    async with inspecting(server_command=everything, save_dir=str(tmp_path / "media")) as (app, pilot):
        await open_tool(app, pilot, "get-tiny-image")
        await finished(app, pilot) if app.screen.worker else None
        await pilot.press("enter")
        await finished(app, pilot)
        saved = list((tmp_path / "media").iterdir())
        assert saved and saved[0].suffix == ".png"
        assert str(saved[0]) in body(app)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, CallScreen), "the lists")
        screen = await open_tool(app, pilot, "get-structured-content")
        form = screen.query_one(FieldsForm)
        select = form.query_one("#field-0")
        select.value = 1  # Chicago
        await pilot.press("enter")
        await finished(app, pilot)
        tree = screen.query_one(".json-tree")
        labels = [str(node.label) for node in tree.root.children]
        assert any(label.startswith("temperature: ") for label in labels), labels


async def test_resource_links_open_with_their_own_command(everything: list[str]) -> None:
    async with inspecting(server_command=everything) as (app, pilot):
        screen = await open_tool(app, pilot, "get-resource-links")
        await pilot.press("enter")
        await finished(app, pilot)
        links = result_of(app).links
        assert len(links) == 3
        links_list = screen.query_one(".result-links")
        links_list.focus()
        await pilot.press("enter")
        await until(pilot, lambda: app.screen is not screen and isinstance(app.screen, CallScreen), "the link")
        await finished(app, pilot)
        assert app.screen.query_one(CommandLine).command.startswith(f"mcp resources read {links[0]} -- ")


async def test_elicitation_form_is_answered_in_a_dialog(everything: list[str]) -> None:
    from mcpcli.inspector.dialogs import ElicitScreen

    async with inspecting(server_command=everything) as (app, pilot):
        call = await open_tool(app, pilot, "trigger-elicitation-request")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ElicitScreen), "the elicitation dialog")
        dialog = app.screen
        fields = {f.name: i for i, f in enumerate(dialog.fields)}
        assert dialog.fields[fields["untitledMultipleSelectEnum"]].kind == "multi"
        assert [c.label for c in dialog.fields[fields["titledSingleSelectEnum"]].choices][:1] == ["Superman"]
        form = dialog.query_one(FieldsForm)
        await pilot.press("enter")  # the required name is missing: said before anything is sent
        error = form.query_one(f"#error-field-{fields['name']}")
        await until(pilot, lambda: "required" in str(error.render()) and error.display, "the message")
        assert isinstance(app.screen, ElicitScreen)
        form.query_one(f"#field-{fields['name']}").value = "Ada"
        form.query_one(f"#field-{fields['email']}").value = "not an address"
        await pilot.press("enter")  # the schema's own check (format: email)
        email_error = form.query_one(f"#error-field-{fields['email']}")
        await until(pilot, lambda: "email" in str(email_error.render()) and email_error.display, "the format")
        form.query_one(f"#field-{fields['email']}").value = "ada@example.com"
        form.query_one(f"#field-{fields['name']}").focus()
        await pilot.press("enter")
        await until(pilot, lambda: app.screen is call, "the dialog to close")
        await finished(app, pilot)
        assert "Ada" in body(app) and "accept" in body(app).lower()
        assert app.query_one(LogPane).events[-1][1].method == "elicitation/create" or any(
            e.method == "elicitation/create" for _, e in app.query_one(LogPane).events)


async def test_sampling_is_typed_by_the_person(everything: list[str]) -> None:
    from textual.widgets import TextArea

    from mcpcli.inspector.dialogs import SamplingScreen

    async with inspecting(server_command=everything) as (app, pilot):
        screen = await open_tool(app, pilot, "trigger-sampling-request")
        screen.query_one(FieldsForm).query_one("#field-0").value = "say hi"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SamplingScreen), "the sampling dialog")
        assert "say hi" in str(app.screen.query_one("#sampling-request Static").render())
        app.screen.query_one(TextArea).text = "hello from a person"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.screen is screen, "the dialog to close")
        await finished(app, pilot)
        assert "hello from a person" in body(app)


async def test_prompt_with_completions_and_a_template(everything: list[str]) -> None:
    async with inspecting(server_command=everything) as (app, pilot):
        await pilot.press("right_square_bracket", "right_square_bracket", "right_square_bracket")
        prompts = app.query_one("#pane-prompts", ItemsPane)
        await until(pilot, lambda: app.query_one("TabbedContent").active == "tab-prompts", "the prompts")
        await pilot.press("slash", *"completable", "enter")
        await until(pilot, lambda: isinstance(app.screen, CallScreen), "the prompt's form")
        screen = app.screen
        form = screen.query_one(FieldsForm)
        department = next(i for i, f in enumerate(form.fields) if f.name == "department")
        form.query_one(f"#field-{department}").focus()
        await pilot.press("E")
        await until(pilot, lambda: "Engineering" in str(form.query_one(f"#hint-field-{department}").render()),
                    "the server's suggestions")
        await pilot.press("right")  # take the inline suggestion
        assert form.query_one(f"#field-{department}").value == "Engineering"
        name = next(i for i, f in enumerate(form.fields) if f.name == "name")
        form.query_one(f"#field-{name}").value = "Bob"
        await pilot.press("enter")
        await finished(app, pilot)
        assert "Bob" in body(app) and "Engineering" in body(app)
        assert screen.query_one(CommandLine).command.startswith(
            "mcp prompts get completable-prompt --arg department=Engineering --arg name=Bob -- ")
        assert prompts.items
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, CallScreen), "the lists")
        await pilot.press("left_square_bracket")
        await until(pilot, lambda: app.query_one("TabbedContent").active == "tab-templates", "the templates")
        app.query_one("#pane-templates", ItemsPane).option_list.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CallScreen), "the template's form")
        app.screen.query_one(FieldsForm).query_one("#field-0").value = "1"
        await pilot.press("enter")
        await finished(app, pilot)
        assert "mcp resources read demo://resource/dynamic/" in app.screen.query_one(CommandLine).command


async def test_log_level_subscriptions_and_stderr(everything: list[str]) -> None:
    async with inspecting(server_command=everything) as (app, pilot):
        log = app.query_one(LogPane)
        assert any(e.kind == "stderr" for _, e in log.events)  # "Starting default (STDIO) server..."
        # Subscribe to a resource; the server's simulated updates arrive.
        for _ in range(1):
            await pilot.press("right_square_bracket")
        await until(pilot, lambda: app.query_one("TabbedContent").active == "tab-resources", "the resources")
        await pilot.press("s")
        subs = app.query_one(SubscriptionsPane)
        assert list(subs.subs) == [app.query_one("#pane-resources", ItemsPane).shown[0]["uri"]]
        await pilot.press("left_square_bracket")
        app.query_one("#pane-tools", ItemsPane).option_list.focus()
        await open_tool(app, pilot, "toggle-subscriber-updates")
        await pilot.press("enter")
        await finished(app, pilot)
        await until(pilot, lambda: any(subs.subs.values()), "a resource update", timeout=30)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, CallScreen), "the lists")
        # Simulated logging, then a chosen level: asked of the server, lower ones hidden.
        await open_tool(app, pilot, "toggle-simulated-logging")
        await pilot.press("enter")
        await finished(app, pilot)
        await until(pilot, lambda: any(e.method == "notifications/message" for _, e in log.events),
                    "a log message", timeout=30)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, CallScreen), "the lists")
        log.query_one("#log-level").value = "error"
        await until(pilot, lambda: app.client.options.log_level == "error", "logging/setLevel")
        shown = [log._line(stamp, e) for stamp, e in log.events if e.method == "notifications/message"]
        levels = [e.params.get("level") for _, e in log.events if e.method == "notifications/message"]
        assert all((line is None) == (level not in ("error", "critical", "alert", "emergency"))
                   for line, level in zip(shown, levels, strict=True))


async def test_a_task_shows_with_its_status(everything: list[str]) -> None:
    async with inspecting(server_command=everything) as (app, pilot):
        screen = await open_tool(app, pilot, "simulate-research-query")
        screen.query_one(FieldsForm).query_one("#field-0").value = "otters"
        await pilot.press("enter")
        tasks = app.query_one(TasksPane)
        await until(pilot, lambda: tasks.rows, "the task to show")
        await finished(app, pilot)
        row = next(iter(tasks.rows.values()))
        assert row.tool == "simulate-research-query" and row.status == "completed"
        assert "otters" in body(app)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, CallScreen), "the lists")
        for _ in range(4):
            await pilot.press("right_square_bracket")
        await until(pilot, lambda: app.query_one("TabbedContent").active == "tab-tasks", "the tasks")
        tasks.query_one(OptionList).focus()
        await pilot.press("enter")  # its result
        await until(pilot, lambda: isinstance(app.screen, CallScreen), "the task's result")
        await finished(app, pilot)
        assert "otters" in body(app)
        assert app.screen.query_one(CommandLine).command.startswith(f"mcp tasks result {row.task_id} -- ")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, CallScreen), "the lists")
        await pilot.press("x")  # cancel: the server answers (a finished task cannot be cancelled)
        history = app.query_one(HistoryPane)
        await until(pilot, lambda: history.entries[-1].title == f"tasks/cancel {row.task_id}", "tasks/cancel")
        assert history.entries[-1].command.startswith(f"mcp tasks cancel {row.task_id} -- ")
