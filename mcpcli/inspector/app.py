"""The inspector's Textual app: the panes, the keys, and what each choice runs.

The app is handed a connected `Client` (the command connects first, so a sign-in
happens in the terminal as on the command line) and runs in the same event loop:
every request runs in a Textual worker, so the screen stays live, and cancelling
the worker cancels the request (`notifications/cancelled`, or `tasks/cancel`).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Footer, Header, Input, OptionList, TabbedContent, TabPane, TextArea

from mcpcli.errors import McpCliError, NotOffered, RPCError
from mcpcli.inspector import forms
from mcpcli.inspector.activity import Entry, HistoryPane, LogPane, SubscriptionsPane, TasksPane
from mcpcli.inspector.bridge import Event
from mcpcli.inspector.formscreen import CallScreen, CallSpec, Progress, work
from mcpcli.inspector.panes import InfoPane, ItemsPane
from mcpcli.inspector.results import ResultView
from mcpcli.inspector.uritemplate import expand
from mcpcli.rpc.peer import user_interaction

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from mcpcli.client import Client
    from mcpcli.client.tasks import Task
    from mcpcli.inspector.bridge import Bridge
    from mcpcli.inspector.cmdline import Invocation

__all__ = ["Inspection", "InspectorApp"]

JSON = dict[str, Any]
LISTS = ("tools", "resources", "templates", "prompts")
TITLES = {"tools": "Tools", "resources": "Resources", "templates": "Templates", "prompts": "Prompts",
          "tasks": "Tasks", "subs": "Subscriptions", "log": "Log", "history": "History", "info": "Server"}

CSS = """
.filter { height: 3; }
.items { width: 1fr; height: 1fr; }
.detail { width: 1fr; height: 1fr; border-left: solid $primary-lighten-2; padding: 0 1; }
#call { height: 1fr; padding: 0 1; }
#call-title { margin-bottom: 1; }
#call-detail { max-height: 6; color: $text-muted; }
#form { height: auto; max-height: 45%; border: round $primary; padding: 0 1; }
.field-label { margin-top: 1; }
.field-help, .field-hint { color: $text-muted; }
.field-error, .error { color: $error; }
#progress { margin-top: 1; }
#command { margin-top: 1; color: $accent; }
#result { height: 1fr; border: round $secondary; padding: 0 1; }
.json-tree { height: auto; max-height: 30; }
.dialog { width: 90%; height: auto; max-height: 90%; border: thick $warning; background: $surface; padding: 1 2; }
ElicitScreen, SamplingScreen { align: center middle; }
#sampling-reply { height: 8; }
#sampling-request { max-height: 14; }
.buttons { height: auto; margin-top: 1; }
.buttons Button { margin-right: 2; }
.toolbar { height: 3; }
.toolbar-label { padding-top: 1; width: auto; }
"""


def _summary(item: JSON) -> Text:
    """Above a form: the title, description and hints of what it calls (the list shows all)."""
    from mcpcli.inspector.results import safe

    out = Text()
    if isinstance(item.get("title"), str):
        out += safe(item["title"]) + Text("\n")
    if isinstance(item.get("description"), str):
        out += safe(item["description"].strip())
    annotations = item.get("annotations")
    if isinstance(annotations, dict):
        hints = [k.removesuffix("Hint") for k, v in annotations.items() if k.endswith("Hint") and v is True]
        if hints:
            out += Text("\nhints: ", style="dim") + safe(", ".join(hints), one_line=True)
    return out


@dataclass
class Inspection:
    """What the app inspects: a connected client and how to name it in a command line."""

    client: Client
    bridge: Bridge
    invocation: Invocation
    #: `mcp info --json`'s object for this server.
    summary: JSON
    #: Where images, audio and blobs are saved (None: a new temporary directory, made when first needed).
    save_dir: str | None = None
    #: Said under every command line (e.g. which flags were left out of it).
    note: str = ""


class InspectorApp(App[None]):
    """`mcp inspect`: lists, forms, results, the server's requests and notifications."""

    TITLE = "mcp inspect"
    CSS = CSS
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        # Priority, so the keys typed right after `/` already go to the filter (a binding
        # found while the key bubbles up is too late for them); not while typing in a field.
        Binding("slash", "filter", "Filter", priority=True),
        Binding("escape", "leave_filter", "Back", show=False),
        Binding("right_square_bracket", "next_pane", "Next pane", key_display="]", priority=True),
        Binding("left_square_bracket", "previous_pane", "Previous pane", key_display="[", priority=True),
        Binding("s", "subscribe", "Subscribe", priority=True),
        Binding("u", "unsubscribe", "Unsubscribe", priority=True),
        Binding("x", "cancel_task", "Cancel task", priority=True),
        Binding("r", "refresh", "Refresh", priority=True),
        Binding("ctrl+y", "copy", "Copy command"),
    ]

    class Shown(Message):
        def __init__(self, event: Event) -> None:
            super().__init__()
            self.event = event

    class Asked(Message):
        """A server request for the person: elicitation or sampling."""

        def __init__(self, screen: Any, answer: asyncio.Future[Any]) -> None:
            super().__init__()
            self.screen = screen
            self.answer = answer

    class TaskChanged(Message):
        def __init__(self, task: Task, tool: str) -> None:
            super().__init__()
            self.task = task
            self.tool = tool

    def __init__(self, inspection: Inspection) -> None:
        super().__init__()
        self.inspection = inspection
        self.client = inspection.client
        self.invocation = inspection.invocation
        self._save_dir = inspection.save_dir
        #: Subscribed URI -> its worker.
        self._subscriptions: dict[str, Any] = {}

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(id="tabs"):
            for kind in LISTS:
                with TabPane(TITLES[kind], id=f"tab-{kind}"):
                    yield ItemsPane(kind, id=f"pane-{kind}")
            with TabPane(TITLES["tasks"], id="tab-tasks"):
                yield TasksPane(id="pane-tasks")
            with TabPane(TITLES["subs"], id="tab-subs"):
                yield SubscriptionsPane(id="pane-subs")
            with TabPane(TITLES["log"], id="tab-log"):
                yield LogPane(id="pane-log")
            with TabPane(TITLES["history"], id="tab-history"):
                yield HistoryPane(id="pane-history")
            with TabPane(TITLES["info"], id="tab-info"):
                yield InfoPane(id="pane-info")
        yield Footer()

    def on_load(self) -> None:
        # On Python 3.12+ Textual makes the loop start tasks eagerly; the client's tasks (anyio,
        # `jobs`) are written and tested for ordinary ones, as `run_test` leaves them.
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().set_task_factory(None)

    def on_mount(self) -> None:
        server = self.inspection.summary.get("serverInfo") or {}
        name = f"{server.get('name', '?')} {server.get('version', '')}".strip() if isinstance(server, dict) else "?"
        self.sub_title = Text(f"{name} · {self.client.transport.name} · {self.client.protocol_version}").plain
        self.query_one(InfoPane).show(self.inspection.summary, self.inspection.bridge.roots,
                                      self.invocation.plain("info"))
        for kind in LISTS:
            self.run_worker(work(self._load, kind), group=f"load-{kind}", exclusive=True, exit_on_error=False)
        self.inspection.bridge.attach(self)
        self.query_one("#pane-tools", ItemsPane).option_list.focus()

    def on_unmount(self) -> None:
        self.inspection.bridge.detach()

    def save_dir(self) -> str:
        """Where binary content goes: --save-dir, else a temporary directory (made once)."""
        if self._save_dir is None:
            self._save_dir = tempfile.mkdtemp(prefix="mcp-inspect-")
        return self._save_dir

    # -- the lists -----------------------------------------------------------------------

    async def _load(self, kind: str) -> None:
        pane = self.query_one(f"#pane-{kind}", ItemsPane)
        calls: dict[str, tuple[Callable[[], Awaitable[JSON]], str]] = {
            "tools": (self.client.list_tools, "tools"),
            "resources": (self.client.list_resources, "resources"),
            "templates": (self.client.list_resource_templates, "resourceTemplates"),
            "prompts": (self.client.list_prompts, "prompts"),
        }
        fetch, key = calls[kind]
        try:
            listing = await fetch()
        except NotOffered as exc:
            pane.set_message(exc.message)
            items: list[Any] = []
        except McpCliError as exc:
            pane.set_message(f"✗ {exc.message}")
            items = []
        else:
            items = [i for i in listing.get(key) or [] if isinstance(i, dict)]
            pane.set_items(items)
        with contextlib.suppress(Exception):
            self.query_one(TabbedContent).get_tab(f"tab-{kind}").label = f"{TITLES[kind]} ({len(items)})"

    def on_items_pane_chosen(self, event: ItemsPane.Chosen) -> None:
        spec = {"tools": self._tool_spec, "resources": self._resource_spec,
                "templates": self._template_spec, "prompts": self._prompt_spec}[event.kind](event.item)
        self.open_call(spec)

    def open_call(self, spec: CallSpec) -> None:
        self.push_screen(CallScreen(spec, record=self.record, save_dir=self.save_dir, note=self.inspection.note))

    def _completer(self, ref: JSON) -> Callable[[str, str, dict[str, str]], Awaitable[list[str]]] | None:
        if not self.client.offers("completions"):
            return None

        async def complete(argument: str, value: str, context: dict[str, str]) -> list[str]:
            result = await self.client.complete(ref, argument, value, context or None)
            completion = result.get("completion")
            values = completion.get("values") if isinstance(completion, dict) else None
            return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []

        return complete

    def _tool_spec(self, tool: JSON) -> CallSpec:
        from mcpcli.client.tasks import TaskOptions, server_accepts_tasks, task_support

        name = str(tool.get("name", ""))
        schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else None
        optional_task = (self.client.era == "legacy" and server_accepts_tasks(self.client.capabilities)
                         and task_support(tool) == "optional")

        async def run(arguments: JSON, progress: Progress, as_task: bool) -> tuple[str, JSON]:
            def on_status(task: Task) -> None:
                progress.status(f"task {task.task_id}: {task.status}"
                                + (f" · {task.status_message}" if task.status_message else ""))
                self.post_message(self.TaskChanged(task, name))

            options = TaskOptions(mode="always" if as_task else "auto", on_status=on_status)
            return "call", await self.client.call_tool(name, arguments, on_progress=progress, task=options)

        def command(arguments: JSON, as_task: bool) -> str:
            return self.invocation.tool_call(name, arguments, schema, ("--task",) if as_task else ())

        return CallSpec(f"tools/call {name}", forms.schema_fields(schema), run, command, schema=schema,
                        detail=_summary(tool), task_option=optional_task)

    def _resource_spec(self, resource: JSON) -> CallSpec:
        return self._read_spec(str(resource.get("uri", "")))

    def _read_spec(self, uri: str) -> CallSpec:
        async def run(arguments: JSON, progress: Progress, as_task: bool) -> tuple[str, JSON]:
            return "resource", await self.client.read_resource(uri)

        return CallSpec(f"resources/read {uri}", [], run, lambda a, t: self.invocation.resource_read(uri),
                        auto_run=True)

    def _template_spec(self, template: JSON) -> CallSpec:
        pattern = str(template.get("uriTemplate", ""))

        async def run(arguments: JSON, progress: Progress, as_task: bool) -> tuple[str, JSON]:
            return "resource", await self.client.read_resource(expand(pattern, arguments))

        return CallSpec(f"resources/read {pattern}", forms.template_fields(pattern), run,
                        lambda a, t: self.invocation.resource_read(expand(pattern, a)),
                        complete=self._completer({"type": "ref/resource", "uri": pattern}))

    def _prompt_spec(self, prompt: JSON) -> CallSpec:
        name = str(prompt.get("name", ""))

        async def run(arguments: JSON, progress: Progress, as_task: bool) -> tuple[str, JSON]:
            return "prompt", await self.client.get_prompt(name, arguments)

        return CallSpec(f"prompts/get {name}", forms.prompt_fields(prompt), run,
                        lambda a, t: self.invocation.prompt_get(name, a, prompt), detail=_summary(prompt),
                        complete=self._completer({"type": "ref/prompt", "name": name}))

    def on_result_view_open_link(self, event: ResultView.OpenLink) -> None:
        self.open_call(self._read_spec(event.uri))

    # -- history ---------------------------------------------------------------------------

    def record(self, title: str, command: str, status: str, result: JSON | None) -> None:
        import time

        self.query_one(HistoryPane).add(Entry(time.strftime("%H:%M:%S"), title, command, status, result))

    # -- what the server sends (bridge.UI) -------------------------------------------------

    def show(self, event: Event) -> None:
        self.post_message(self.Shown(event))

    def on_inspector_app_shown(self, message: InspectorApp.Shown) -> None:
        event = message.event
        self.query_one(LogPane).add(event)
        if event.kind != "notification":
            return
        method = event.method
        changed = {"notifications/tools/list_changed": ["tools"], "notifications/prompts/list_changed": ["prompts"],
                   "notifications/resources/list_changed": ["resources", "templates"]}.get(method, [])
        for kind in changed:
            self.run_worker(work(self._load, kind), group=f"load-{kind}", exclusive=True, exit_on_error=False)
        if method == "notifications/resources/updated" and isinstance(event.params.get("uri"), str):
            self.query_one(SubscriptionsPane).updated(event.params["uri"])

    async def _ask(self, screen: Any) -> Any:
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.post_message(self.Asked(screen, answer))
        with user_interaction():  # no request times out while a person answers
            try:
                return await answer
            finally:
                if not answer.done():  # abandoned (the request was cancelled): close the dialog
                    answer.cancel()

    def on_inspector_app_asked(self, message: InspectorApp.Asked) -> None:
        answer, screen = message.answer, message.screen

        def done(result: Any) -> None:
            if not answer.done():
                answer.set_result(result)

        def abandoned(future: asyncio.Future[Any]) -> None:
            if future.cancelled() and screen.is_attached:
                screen.dismiss(None)

        answer.add_done_callback(abandoned)
        self.push_screen(screen, callback=done)

    async def elicit(self, params: JSON) -> JSON:
        from mcpcli.inspector.dialogs import ElicitScreen

        result = await self._ask(ElicitScreen(params))
        return result if isinstance(result, dict) else {"action": "cancel"}

    async def sample(self, params: JSON, draft: Callable[[], Awaitable[JSON]] | None) -> JSON:
        from mcpcli.inspector.dialogs import SamplingScreen

        result = await self._ask(SamplingScreen(params, draft))
        if not isinstance(result, dict):
            raise RPCError(-1, "the person declined the sampling request")
        return result

    # -- tasks --------------------------------------------------------------------------------

    def on_inspector_app_task_changed(self, message: InspectorApp.TaskChanged) -> None:
        task = message.task
        self.query_one(TasksPane).update_task(task.task_id, task.status, task.status_message or "",
                                              message.tool, task.raw)

    def on_tasks_pane_chosen(self, event: TasksPane.Chosen) -> None:
        from mcpcli.client.tasks import TaskOptions

        task_id = event.task_id
        tool = self.query_one(TasksPane).rows[task_id].tool

        async def run(arguments: JSON, progress: Progress, as_task: bool) -> tuple[str, JSON]:
            def on_status(task: Task) -> None:
                progress.status(f"task {task.task_id}: {task.status}")
                self.post_message(self.TaskChanged(task, tool))

            options = TaskOptions(cancel_on_exit=False, on_status=on_status)
            return "call", await self.client.wait_task(task_id, options)

        self.open_call(CallSpec(f"tasks/result {task_id}", [], run,
                                lambda a, t: self.invocation.task("result", task_id), auto_run=True))

    async def _cancel_task(self, task_id: str) -> None:
        command = self.invocation.task("cancel", task_id)
        try:
            result = await self.client.cancel_task(task_id)
        except McpCliError as exc:
            self.notify(f"tasks/cancel: {exc.message}", severity="error")
            self.record(f"tasks/cancel {task_id}", command, f"error: {exc.message}", None)
            return
        self.record(f"tasks/cancel {task_id}", command, "ok", result)
        status = result.get("status") if isinstance(result.get("status"), str) else "cancelled"
        self.query_one(TasksPane).update_task(task_id, str(status))

    async def _refresh_tasks(self) -> None:
        from mcpcli.client.tasks import Task

        pane = self.query_one(TasksPane)
        found: list[JSON] = []
        tasks_cap = self.client.capabilities.get("tasks")
        if isinstance(tasks_cap, dict) and "list" in tasks_cap:
            with contextlib.suppress(McpCliError):
                listing = await self.client.list_tasks()
                found = [t for t in listing.get("tasks") or [] if isinstance(t, dict)]
        for task_id in list(pane.rows):
            with contextlib.suppress(McpCliError):
                found.append(await self.client.get_task(task_id))
        for raw in found:
            with contextlib.suppress(Exception):
                task = Task.from_wire(raw)
                pane.update_task(task.task_id, task.status, task.status_message or "", raw=raw)

    # -- subscriptions -----------------------------------------------------------------------

    async def _subscribe(self, uri: str) -> None:
        pane = self.query_one(SubscriptionsPane)
        try:
            async with self.client.subscribe(resources=[uri]) as stream:
                async for event in stream:
                    params = event.get("params")
                    params = params if isinstance(params, dict) else {}
                    self.query_one(LogPane).add(Event("notification", method=str(event.get("method", "")),
                                                      params=params))
                    pane.updated(uri)
        except McpCliError as exc:
            self.notify(f"subscribe {uri}: {exc.message}", severity="error")
            self.query_one(LogPane).add(Event("warning", text=f"subscription to {uri} ended: {exc.message}"))
        pane.removed(uri)
        self._subscriptions.pop(uri, None)

    # -- keys --------------------------------------------------------------------------------

    @property
    def active(self) -> str:
        return (self.query_one(TabbedContent).active or "tab-tools").removeprefix("tab-")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        ours = ("filter", "leave_filter", "next_pane", "previous_pane", "subscribe", "unsubscribe", "cancel_task",
                "refresh", "copy")
        if action not in ours:
            return True
        if self.screen is not self.screen_stack[0]:
            return False  # a call or a dialog is on top: its own keys
        if action != "leave_filter" and isinstance(self.focused, (Input, TextArea)):
            return False  # the key is typed
        wanted = {"filter": self.active in LISTS, "subscribe": self.active == "resources",
                  "unsubscribe": self.active == "subs", "cancel_task": self.active == "tasks",
                  "refresh": self.active in (*LISTS, "tasks"), "copy": self.active in ("history", "info")}
        return wanted.get(action, True)

    def action_filter(self) -> None:
        self.query_one(f"#pane-{self.active}", ItemsPane).focus_filter()

    def action_leave_filter(self) -> None:
        """Escape in a filter: back to its list (the filter stays)."""
        if isinstance(self.focused, Input) and self.active in LISTS:
            self.query_one(f"#pane-{self.active}", ItemsPane).option_list.focus()

    def _switch(self, step: int) -> None:
        tabs = self.query_one(TabbedContent)
        ids = [pane.id for pane in tabs.query(TabPane) if pane.id]
        current = ids.index(tabs.active) if tabs.active in ids else 0
        tabs.active = ids[(current + step) % len(ids)]
        with contextlib.suppress(Exception):
            self.query_one(f"#pane-{self.active}").query(OptionList).first().focus()

    def action_next_pane(self) -> None:
        self._switch(1)

    def action_previous_pane(self) -> None:
        self._switch(-1)

    def action_subscribe(self) -> None:
        item = self.query_one("#pane-resources", ItemsPane).highlighted_item()
        if item is None or not isinstance(item.get("uri"), str):
            return
        uri = item["uri"]
        if uri in self._subscriptions:
            self.notify(f"already subscribed to {uri}")
            return
        self._subscriptions[uri] = self.run_worker(work(self._subscribe, uri), group=f"sub-{uri}", exit_on_error=False)
        self.query_one(SubscriptionsPane).added(uri)
        self.record(f"subscribe {uri}", self.invocation.subscribe(uri), "subscribed", None)
        self.notify(f"subscribed to {uri} (see Subscriptions)", timeout=3)

    def action_unsubscribe(self) -> None:
        uri = self.query_one(SubscriptionsPane).highlighted()
        worker = self._subscriptions.pop(uri, None) if uri else None
        if worker is not None:
            worker.cancel()
        if uri:
            self.query_one(SubscriptionsPane).removed(uri)

    def action_cancel_task(self) -> None:
        task_id = self.query_one(TasksPane).highlighted()
        if task_id:
            self.run_worker(work(self._cancel_task, task_id), exit_on_error=False)

    def action_refresh(self) -> None:
        if self.active == "tasks":
            self.run_worker(work(self._refresh_tasks), group="tasks", exclusive=True, exit_on_error=False)
        elif self.active in LISTS:
            self.run_worker(work(self._load, self.active), group=f"load-{self.active}", exclusive=True,
                            exit_on_error=False)

    def action_copy(self) -> None:
        if self.active == "history":
            entry = self.query_one(HistoryPane).highlighted()
            command = entry.command if entry is not None else ""
        else:
            command = self.invocation.plain("info")
        if command:
            self.copy_to_clipboard(command)
            self.notify("command copied (to the terminal's clipboard)", timeout=3)

    def on_log_pane_level_chosen(self, event: LogPane.LevelChosen) -> None:
        async def set_level() -> None:
            try:
                await self.client.set_log_level(event.level)
            except McpCliError as exc:
                self.query_one(LogPane).add(Event("warning", text=f"logging/setLevel: {exc.message}"))

        self.run_worker(work(set_level), group="log-level", exclusive=True, exit_on_error=False)

    async def action_quit(self) -> None:
        self.inspection.bridge.detach()
        self.exit()
