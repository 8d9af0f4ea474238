"""What happens besides the calls: the live log (notifications, server log messages at a
chosen level, a stdio server's stderr, our warnings), the history of calls with their
commands, tasks and subscriptions."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, RichLog, Select, Static
from textual.widgets.option_list import Option

from mcpcli.core.protocol import LOG_LEVELS
from mcpcli.inspector.bridge import Event
from mcpcli.inspector.results import CommandLine, json_tree, safe
from mcpcli.text import log_line, log_rank, printable

__all__ = ["Entry", "HistoryPane", "LogPane", "SubscriptionsPane", "TasksPane"]

JSON = dict[str, Any]
#: Lines the log keeps (older ones are dropped).
MAX_LOG_LINES = 5000


def _stamp() -> str:
    return time.strftime("%H:%M:%S")


class LogPane(Vertical):
    """Everything the server says on its own, newest last; server log messages shown from the
    chosen level up (choosing one also asks the server for it: `logging/setLevel`)."""

    class LevelChosen(Message):
        def __init__(self, level: str) -> None:
            super().__init__()
            self.level = level

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.events: list[tuple[str, Event]] = []
        self.level: str | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(classes="toolbar"):
            yield Static("server log level: ", classes="toolbar-label")
            yield Select([(level, level) for level in LOG_LEVELS], prompt="(as the server sends)",
                         id="log-level", allow_blank=True)
        yield RichLog(id="log", markup=False, wrap=True, max_lines=MAX_LOG_LINES)

    def add(self, event: Event) -> None:
        self.events.append((_stamp(), event))
        del self.events[:-MAX_LOG_LINES]
        line = self._line(*self.events[-1])
        if line is not None:
            self.query_one(RichLog).write(line)

    def _line(self, stamp: str, event: Event) -> Text | None:
        head = Text(f"{stamp} ", style="dim")
        if event.kind == "stderr":
            return head + Text("stderr ", style="yellow") + safe(event.text, one_line=True)
        if event.kind == "warning":
            return head + Text("warning ", style="bold red") + safe(event.text, one_line=True)
        if event.kind == "request":
            return head + Text("server asks ", style="magenta") + safe(event.method, one_line=True)
        if event.method == "notifications/message":
            if self.level is not None and log_rank(event.params.get("level")) < log_rank(self.level):
                return None
            return head + Text("log ", style="cyan") + safe(log_line(event.params), one_line=True)
        detail = {k: v for k, v in event.params.items() if k != "_meta"}
        import json

        text = json.dumps(detail, ensure_ascii=False)[:300] if detail else ""
        return head + Text(printable(event.method, keep_newlines=False), style="green") + Text(" ") + safe(
            text, one_line=True)

    @on(Select.Changed, "#log-level")
    def _level(self, event: Select.Changed) -> None:
        event.stop()
        self.level = event.value if isinstance(event.value, str) else None
        log = self.query_one(RichLog)
        log.clear()
        for stamp, item in self.events:
            line = self._line(stamp, item)
            if line is not None:
                log.write(line)
        if self.level is not None:
            self.post_message(self.LevelChosen(self.level))


@dataclass
class Entry:
    """One call of the session."""

    when: str
    title: str
    command: str
    status: str
    result: JSON | None = None


class HistoryPane(Horizontal):
    """Every call of the session with its command line; Ctrl+Y copies the highlighted one."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entries: list[Entry] = []

    def compose(self) -> ComposeResult:
        yield OptionList(id="history-list", classes="items")
        with VerticalScroll(classes="detail", id="history-detail"):
            yield CommandLine(id="history-command")
            yield Static(id="history-status")

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)
        label = Text(f"{entry.when} ", style="dim") + Text(f"{entry.status[:10]:<10} ",
                                                          style="red" if entry.status != "ok" else "green")
        label += safe(entry.title, one_line=True)
        options = self.query_one(OptionList)
        options.add_option(Option(label, id=str(len(self.entries) - 1)))
        options.highlighted = len(self.entries) - 1

    def highlighted(self) -> Entry | None:
        index = self.query_one(OptionList).highlighted
        return self.entries[index] if index is not None and index < len(self.entries) else None

    @on(OptionList.OptionHighlighted, "#history-list")
    def _show(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        entry = self.highlighted()
        if entry is None:
            return
        self.query_one("#history-command", CommandLine).set(entry.command)
        self.query_one("#history-status", Static).update(safe(f"{entry.title}: {entry.status}"))
        for tree in self.query(".json-tree"):
            tree.remove()
        if entry.result is not None:
            self.query_one("#history-detail").mount(json_tree(entry.result, "result"))


@dataclass
class TaskRow:
    task_id: str
    tool: str
    status: str = "working"
    message: str = ""
    raw: JSON = field(default_factory=dict)


class TasksPane(Horizontal):
    """The tasks of this session (and those `tasks/list` returns): status and message;
    Enter waits for one's result, `x` cancels it, `r` asks the server again."""

    class Chosen(Message):
        def __init__(self, task_id: str) -> None:
            super().__init__()
            self.task_id = task_id

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rows: dict[str, TaskRow] = {}

    def compose(self) -> ComposeResult:
        yield OptionList(id="tasks-list", classes="items")
        with VerticalScroll(classes="detail"):
            yield Static(Text("no tasks yet: tools that run as tasks show here "
                              "(Enter: result · x: cancel · r: refresh)", style="dim"), id="tasks-detail")

    def update_task(self, task_id: str, status: str, message: str = "", tool: str = "", raw: JSON | None = None) -> None:
        row = self.rows.get(task_id)
        if row is None:
            row = self.rows[task_id] = TaskRow(task_id, tool)
        row.status, row.message = status, message
        if tool:
            row.tool = tool
        if raw is not None:
            row.raw = raw
        self._refill()

    def _refill(self) -> None:
        options = self.query_one(OptionList)
        keep = options.highlighted
        options.clear_options()
        for row in self.rows.values():
            label = Text(f"{row.status:<15} ", style="green" if row.status == "completed" else "yellow")
            label += safe(f"{row.task_id}  {row.tool}  {row.message}", one_line=True)
            options.add_option(Option(label, id=row.task_id))
        if self.rows:
            options.highlighted = min(keep or 0, len(self.rows) - 1)

    def highlighted(self) -> str | None:
        options = self.query_one(OptionList)
        index = options.highlighted
        return options.get_option_at_index(index).id if index is not None and self.rows else None

    @on(OptionList.OptionHighlighted, "#tasks-list")
    def _show(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        row = self.rows.get(event.option.id or "")
        if row is not None:
            self.query_one("#tasks-detail", Static).update(
                safe(f"task {row.task_id}\ntool: {row.tool}\nstatus: {row.status}\n{row.message}"))

    @on(OptionList.OptionSelected, "#tasks-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.Chosen(event.option.id))


class SubscriptionsPane(Horizontal):
    """Resources subscribed to (`s` on a resource) and their updates; `u` unsubscribes."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.subs: dict[str, list[str]] = {}

    def compose(self) -> ComposeResult:
        yield OptionList(id="subs-list", classes="items")
        with VerticalScroll(classes="detail"):
            yield Static(Text("no subscriptions: press s on a resource (u here unsubscribes)", style="dim"),
                         id="subs-detail")

    def added(self, uri: str) -> None:
        self.subs.setdefault(uri, [])
        self._refill()

    def removed(self, uri: str) -> None:
        self.subs.pop(uri, None)
        self._refill()

    def updated(self, uri: str) -> None:
        if uri in self.subs:
            self.subs[uri].append(_stamp())
            self._refill()

    def _refill(self) -> None:
        options = self.query_one(OptionList)
        options.clear_options()
        for uri, updates in self.subs.items():
            last = f"  last {updates[-1]}" if updates else ""
            options.add_option(Option(safe(f"{uri}  ({len(updates)} updates){last}", one_line=True), id=uri))
        if self.subs:
            options.highlighted = 0

    def highlighted(self) -> str | None:
        options = self.query_one(OptionList)
        index = options.highlighted
        return options.get_option_at_index(index).id if index is not None and self.subs else None

    @on(OptionList.OptionHighlighted, "#subs-list")
    def _show(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        updates = self.subs.get(event.option.id or "", [])
        self.query_one("#subs-detail", Static).update(
            safe(f"{event.option.id}\n{len(updates)} updates" + (": " + ", ".join(updates[-20:]) if updates else "")))
