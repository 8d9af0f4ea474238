"""A form generated from a schema, and the screen that runs a call with it.

`FieldsForm` lays out one widget per `forms.Field` (text, number and JSON fields
as inputs, choices and booleans as selects, multi-choices as a selection list),
with required marks, descriptions, the server's completion suggestions and a
message under each field that cannot be sent. `CallScreen` runs the call in a
worker: progress, cancellation (Escape), the result and the equivalent command.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.suggester import Suggester
from textual.widget import Widget
from textual.widgets import (
    Checkbox,
    Footer,
    Input,
    ProgressBar,
    Select,
    SelectionList,
    Static,
)
from textual.worker import Worker

from mcpcli.args import type_label
from mcpcli.errors import McpCliError
from mcpcli.inspector import forms
from mcpcli.inspector.forms import OMIT, Field
from mcpcli.inspector.results import CommandLine, ResultView, safe

__all__ = ["CallScreen", "CallSpec", "FieldsForm", "Progress", "work"]

JSON = dict[str, Any]
#: (argument, partial value, the other fields' values) -> suggested values.
Completer = Callable[[str, str, dict[str, str]], Awaitable[list[str]]]


class Choice(Select[int], inherit_bindings=False):
    """A select whose Enter runs the form (Space and the arrows open it)."""

    BINDINGS = [Binding("down,space,up", "show_overlay", "Show menu", show=False)]


class Choices(SelectionList[int], inherit_bindings=False):
    """A multiple choice whose Enter runs the form (Space toggles)."""

    BINDINGS = [
        Binding("down", "cursor_down", "Down", show=False),
        Binding("up", "cursor_up", "Up", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
        Binding("pagedown", "page_down", "Page Down", show=False),
        Binding("pageup", "page_up", "Page Up", show=False),
        Binding("space", "select", "Toggle option", show=False),
    ]


class FieldInput(Input):
    """A text field whose Enter (its submit) runs the form, and says so in the footer."""

    BINDINGS = [Binding("enter", "submit", "Run")]


class _ServerSuggester(Suggester):
    """The server's `completion/complete` values for one field: the first one that extends
    what was typed is offered inline (Right accepts it), all of them listed under the field."""

    def __init__(self, form: FieldsForm, name: str) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.form = form
        self.name = name

    async def get_suggestion(self, value: str) -> str | None:
        values = await self.form.suggest(self.name, value)
        return next((v for v in values if v.startswith(value) and v != value), None)


def work(fn: Callable[..., Awaitable[Any]], *args: Any) -> Callable[[], Coroutine[None, None, Any]]:
    """`fn(*args)` as a worker's work: called when the worker starts (a coroutine made now
    and never started, when an exclusive worker replaces it first, would warn)."""
    return cast("Callable[[], Coroutine[None, None, Any]]", partial(fn, *args))


def _note(box: Static, text: Text | None) -> None:
    """Show a line under a field, or hide it (no empty line when there is nothing to say)."""
    box.update(text or "")
    box.display = text is not None


class FieldsForm(VerticalScroll):
    """The widgets of a list of fields; `raw()` reads them, `show_errors()` marks them."""

    def __init__(self, fields: list[Field], complete: Completer | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fields = fields
        self.complete = complete
        self._by_id = {f"field-{i}": f for i, f in enumerate(fields)}

    def compose(self) -> ComposeResult:
        if not self.fields:
            yield Static(Text("(no arguments)", style="dim"))
        for i, f in enumerate(self.fields):
            label = Text(f.label, style="bold")
            if f.required:
                label += Text(" *", style="bold red")
            label += Text(f"  {self._type_of(f)}", style="dim")
            yield Static(label, classes="field-label")
            yield self._widget(f, f"field-{i}")
            if f.description:
                yield Static(safe(f.description), classes="field-help")
            for kind in ("hint", "error"):
                box = Static("", id=f"{kind}-field-{i}", classes=f"field-{kind}")
                box.display = False
                yield box

    @staticmethod
    def _type_of(f: Field) -> str:
        if f.kind in ("choice", "boolean", "multi"):
            return {"choice": "choose one", "boolean": "true or false", "multi": "choose any"}[f.kind]
        text = type_label(f.schema) if f.schema else "JSON"
        return text if f.kind != "json" else f"{text} (JSON)"

    def _widget(self, f: Field, wid: str) -> Widget:
        if f.kind in ("choice", "boolean"):
            default = next((i for i, c in enumerate(f.choices) if f.has_default and c.value == f.default), None)
            options = [(safe(c.label, one_line=True), i) for i, c in enumerate(f.choices)]
            blank = not f.required or default is None
            return Choice(options, id=wid, allow_blank=blank, prompt="(not set)",
                          value=default if default is not None else Select.NULL)
        if f.kind == "multi":
            chosen = f.default if f.has_default and isinstance(f.default, list) else []
            return Choices(*[(safe(c.label, one_line=True), i, c.value in chosen)
                             for i, c in enumerate(f.choices)], id=wid)
        placeholder = {"integer": "an integer", "number": "a number", "text": ""}.get(f.kind, "JSON")
        suggester = _ServerSuggester(self, f.name) if self.complete is not None and f.kind == "text" else None
        return FieldInput(forms.initial_text(f), placeholder=placeholder, id=wid, suggester=suggester)

    def raw(self) -> dict[str, Any]:
        """Each field's state: text, the chosen value, or the chosen values."""
        out: dict[str, Any] = {}
        for wid, f in self._by_id.items():
            widget = self.query_one(f"#{wid}")
            if isinstance(widget, Select):
                index = widget.value
                out[f.name] = f.choices[index].value if isinstance(index, int) else OMIT
            elif isinstance(widget, SelectionList):
                out[f.name] = [f.choices[i].value for i in sorted(widget.selected)]
            elif isinstance(widget, Input):
                out[f.name] = widget.value
        return out

    def texts(self) -> dict[str, str]:
        """The text fields' values (the context of a completion request)."""
        return {f.name: v for f, v in ((f, self.raw().get(f.name)) for f in self.fields)
                if f.kind == "text" and isinstance(v, str) and v}

    def show_errors(self, problems: dict[str, str]) -> None:
        first: Widget | None = None
        for wid, f in self._by_id.items():
            message = problems.get(f.name, "")
            _note(self.query_one(f"#error-{wid}", Static), Text(f"✗ {message}") if message else None)
            if message and first is None:
                first = self.query_one(f"#{wid}")
        if first is not None:
            first.focus()

    def focus_first(self) -> None:
        if self._by_id:
            self.query_one(f"#{next(iter(self._by_id))}").focus()

    async def suggest(self, name: str, value: str) -> list[str]:
        """Ask the server; list what it suggests under the field."""
        if self.complete is None:
            return []
        context = {k: v for k, v in self.texts().items() if k != name}
        try:
            values = await self.complete(name, value, context)
        except McpCliError:
            values = []
        wid = next(w for w, f in self._by_id.items() if f.name == name)
        hint = self.query_one(f"#hint-{wid}", Static)
        shown = " · ".join(values[:12]) + (" …" if len(values) > 12 else "")
        _note(hint, Text(f"suggestions: {shown}", style="dim") if values else None)
        return values

    @on(Input.Changed)
    def _typed(self, event: Input.Changed) -> None:
        wid = event.input.id or ""
        if wid in self._by_id:
            _note(self.query_one(f"#error-{wid}", Static), None)
            if self.complete is not None and not event.value and self._by_id[wid].kind == "text":
                self.run_worker(work(self.suggest, self._by_id[wid].name, ""), group=f"suggest-{wid}", exclusive=True)

    def on_descendant_focus(self, event: Any) -> None:
        widget = event.widget
        wid = getattr(widget, "id", None) or ""
        if self.complete is not None and isinstance(widget, Input) and wid in self._by_id and not widget.value:
            self.run_worker(work(self.suggest, self._by_id[wid].name, ""), group=f"suggest-{wid}", exclusive=True)


class Progress:
    """Progress notifications and a task's status, handed to the screen as messages (they
    arrive in the client's tasks, where widgets must not be touched)."""

    def __init__(self, screen: CallScreen) -> None:
        self.screen = screen

    def __call__(self, params: JSON) -> None:
        self.screen.post_message(CallScreen.Progressed(dict(params)))

    def status(self, text: str) -> None:
        self.screen.post_message(CallScreen.Progressed({"status": text}))


@dataclass
class CallSpec:
    """What a form calls: its fields, how to run them, the command that does the same."""

    title: str
    fields: list[Field]
    #: (arguments, progress, as a task) -> (what the result view shows: "call", "resource",
    #: "prompt", "json"; the result). A typed error says what went wrong.
    run: Callable[[JSON, Progress, bool], Awaitable[tuple[str, JSON]]]
    #: (arguments, as a task) -> the equivalent command line.
    command: Callable[[JSON, bool], str]
    detail: Text = field(default_factory=Text)
    #: Checked before sending (a tool's inputSchema), besides each field's own reading.
    schema: JSON | None = None
    complete: Completer | None = None
    #: No fields to fill: run as soon as the screen opens.
    auto_run: bool = False
    #: Offer "run as a task" (a 2025-11-25 tool whose taskSupport is "optional").
    task_option: bool = False


class CallScreen(Screen[None]):
    """A form, its call and its result. Enter runs; Escape cancels a running call, else goes back."""

    BINDINGS = [
        # Not a priority binding: a field's Enter is its own Submitted, handled after what was
        # typed before it (a priority binding would run before the last keys reached the field).
        Binding("enter", "run", "Run"),
        Binding("escape", "back", "Back / cancel"),
        Binding("ctrl+y", "copy", "Copy command"),
        # Priority (handled as the key arrives): what is typed after Tab goes to the next field.
        Binding("tab", "app.focus_next", "Next field", priority=True),
        Binding("shift+tab", "app.focus_previous", "Previous field", show=False, priority=True),
    ]

    class Progressed(Message):
        def __init__(self, params: JSON) -> None:
            super().__init__()
            self.params = params

    def __init__(self, spec: CallSpec, *, record: Callable[[str, str, str, JSON | None], None],
                 save_dir: Callable[[], str], note: str = "") -> None:
        super().__init__()
        self.spec = spec
        self._record = record
        self._save_dir = save_dir
        self._note = note
        self.worker: Worker[None] | None = None
        self.command = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="call"):
            yield Static(Text(self.spec.title, style="bold"), id="call-title")
            if self.spec.detail:
                yield Static(self.spec.detail, id="call-detail")
            yield FieldsForm(self.spec.fields, self.spec.complete, id="form")
            if self.spec.task_option:
                yield Checkbox("run as a task (--task)", id="as-task")
            yield ProgressBar(id="progress", show_eta=False)
            yield Static("", id="progress-message")
            yield CommandLine(note=self._note, id="command")
            yield ResultView(self._save_dir, id="result")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#progress", ProgressBar).display = False
        if self.spec.auto_run:
            self.action_run()
        else:
            self.query_one(FieldsForm).focus_first()

    @property
    def running(self) -> bool:
        return self.worker is not None and not self.worker.is_finished

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "run" and self.running:
            return False
        return True

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not self.running:
            self.action_run()

    def action_copy(self) -> None:
        if self.command:
            self.app.copy_to_clipboard(self.command)
            self.notify("command copied (to the terminal's clipboard)", timeout=3)

    def action_back(self) -> None:
        if self.running and self.worker is not None:
            self.worker.cancel()
            return
        self.dismiss(None)

    def action_run(self) -> None:
        form = self.query_one(FieldsForm)
        values, problems = forms.values(self.spec.fields, form.raw())
        if not problems and self.spec.schema is not None:
            problems = forms.field_errors(self.spec.schema, values)
        result = self.query_one(ResultView)
        if problems:
            form.show_errors(problems)
            whole = problems.get("")
            result.show_error("not sent: " + (whole or "fix the fields marked ✗"))
            return
        form.show_errors({})
        as_task = self.spec.task_option and self.query_one("#as-task", Checkbox).value
        self.command = self.spec.command(values, as_task)
        self.query_one(CommandLine).set(self.command)
        result.show_status("running… (Escape cancels)")
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=None, progress=0)
        bar.display = True
        self.query_one("#progress-message", Static).update("")
        self.worker = self.run_worker(work(self._call, values, as_task), exit_on_error=False, group="call")

    async def _call(self, values: JSON, as_task: bool) -> None:
        result = self.query_one(ResultView)
        try:
            kind, outcome = await self.spec.run(values, Progress(self), as_task)
        except asyncio.CancelledError:
            result.show_error("cancelled: the server was told (notifications/cancelled, or tasks/cancel)")
            self._record(self.spec.title, self.command, "cancelled", None)
            self._done()
            raise
        except McpCliError as exc:
            message = exc.message + (f" ({exc.hint})" if exc.hint else "")
            result.show_error(f"✗ {message}")
            self._record(self.spec.title, self.command, f"error: {exc.message}", None)
        else:
            {"call": result.show_call, "resource": result.show_resource, "prompt": result.show_prompt}.get(
                kind, lambda r: result.show_json(r, "✓ done"))(outcome)
            status = "isError" if kind == "call" and outcome.get("isError") else "ok"
            self._record(self.spec.title, self.command, status, outcome)
        self._done()

    def _done(self) -> None:
        with contextlib.suppress(Exception):
            self.query_one("#progress", ProgressBar).display = False

    def on_call_screen_progressed(self, event: CallScreen.Progressed) -> None:
        params = event.params
        bar = self.query_one("#progress", ProgressBar)
        message = self.query_one("#progress-message", Static)
        if "status" in params:
            message.update(safe(params["status"], one_line=True))
            return
        total = params.get("total")
        progress = params.get("progress")
        if isinstance(progress, (int, float)):
            bar.update(total=float(total) if isinstance(total, (int, float)) and total > 0 else None,
                       progress=float(progress))
        counter = ""
        if isinstance(progress, (int, float)):
            counter = f"{progress:g}" + (f"/{total:g}" if isinstance(total, (int, float)) else "")
        text = params.get("message") if isinstance(params.get("message"), str) else ""
        message.update(safe(" · ".join(p for p in (counter, str(text)) if p), one_line=True))

    def on_result_view_open_link(self, event: ResultView.OpenLink) -> None:
        self.app.post_message(event)
