"""The list panes (tools, resources, templates, prompts) with their filter and detail view,
and the server's info."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from mcpcli.inspector.results import rendered, safe
from mcpcli.render.listings import prompt_detail, tool_detail

__all__ = ["InfoPane", "ItemsPane", "label_of", "matches"]

JSON = dict[str, Any]
#: The key of each kind's items in its listing, and what names an item.
KEYS = {"tools": "name", "prompts": "name", "resources": "uri", "templates": "uriTemplate"}


def label_of(kind: str, item: JSON) -> Text:
    """One line of a list: the item's name (a signature for tools and prompts) and what it is."""
    head = str(item.get("name") or item.get("title") or item.get(KEYS[kind]) or "?")
    label = safe(head, one_line=True)
    label.stylize("bold")
    what = item.get(KEYS[kind]) if kind in ("resources", "templates") else item.get("description")
    first = str(what or "").strip().splitlines()[0] if str(what or "").strip() else ""
    if first:
        label += Text("  ") + Text(safe(first, one_line=True).plain[:200], style="dim")
    label.no_wrap = True
    label.overflow = "ellipsis"
    return label


def matches(kind: str, item: JSON, query: str) -> bool:
    """The filter: a case-insensitive substring of the name, title, description or URI."""
    if not query:
        return True
    wanted = query.casefold()
    fields = ("name", "title", "description", "uri", "uriTemplate")
    return any(isinstance(item.get(k), str) and wanted in item[k].casefold() for k in fields)


def _resource_detail(console: Any, item: JSON) -> None:
    from mcpcli.text import printable

    def s(v: Any) -> str:
        return printable(str(v), keep_newlines=True)

    console.print(s(item.get("title") or item.get("name") or ""), style="bold")
    for key in ("uri", "uriTemplate", "name", "mimeType", "size"):
        if item.get(key) is not None:
            console.print(f"{key}: {s(item[key])}")
    if item.get("description"):
        console.print()
        console.print(s(item["description"]))
    if isinstance(item.get("annotations"), dict):
        console.print()
        console.print("annotations: " + ", ".join(f"{s(k)}={s(v)}" for k, v in item["annotations"].items()))


class ItemsPane(Vertical):
    """A filterable list of one kind of item, with the highlighted one's detail beside it."""

    class Chosen(Message):
        """Enter on an item: open it."""

        def __init__(self, kind: str, item: JSON) -> None:
            super().__init__()
            self.kind = kind
            self.item = item

    def __init__(self, kind: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kind = kind
        self.items: list[JSON] = []
        self.shown: list[JSON] = []

    def compose(self) -> ComposeResult:
        yield Input(placeholder="/ to filter", id=f"{self.kind}-filter", classes="filter")
        with Horizontal():
            yield OptionList(id=f"{self.kind}-list", classes="items")
            with VerticalScroll(classes="detail"):
                yield Static(Text("loading…", style="dim"), id=f"{self.kind}-detail")

    @property
    def option_list(self) -> OptionList:
        return self.query_one(f"#{self.kind}-list", OptionList)

    def set_items(self, items: list[JSON]) -> None:
        self.items = [i for i in items if isinstance(i, dict)]
        self._refill()

    def set_message(self, text: str) -> None:
        self.items = []
        self._refill(text)

    def _refill(self, empty: str = "") -> None:
        query = self.query_one(f"#{self.kind}-filter", Input).value
        self.shown = [i for i in self.items if matches(self.kind, i, query)]
        options = self.option_list
        options.clear_options()
        options.add_options([Option(label_of(self.kind, item), id=str(n)) for n, item in enumerate(self.shown)])
        if self.shown:
            options.highlighted = 0
        else:
            what = empty or ("nothing matches the filter" if self.items else f"no {self.kind}")
            self._detail(Text(what, style="dim"))

    def _detail(self, content: Text) -> None:
        self.query_one(f"#{self.kind}-detail", Static).update(content)

    @on(Input.Changed)
    def _filter(self, event: Input.Changed) -> None:
        event.stop()
        self._refill()

    @on(Input.Submitted)
    def _open_from_filter(self, event: Input.Submitted) -> None:
        """Enter in the filter opens the highlighted match (`/get-sum` Enter), back on the list."""
        event.stop()
        self.option_list.focus()
        item = self.highlighted_item()
        if item is not None:
            self.post_message(self.Chosen(self.kind, item))

    @on(OptionList.OptionHighlighted)
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if event.option.id is None:
            return
        item = self.shown[int(event.option.id)]
        width = max(40, self.query_one(".detail").size.width - 2)
        if self.kind == "tools":
            self._detail(rendered(tool_detail, item, width=width))
        elif self.kind == "prompts":
            self._detail(rendered(prompt_detail, item, width=width))
        else:
            self._detail(rendered(_resource_detail, item, width=width))

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.Chosen(self.kind, self.shown[int(event.option.id)]))

    def focus_filter(self) -> None:
        # At once (`focus()` waits a turn): the keys typed right after `/` are the filter's.
        self.screen.set_focus(self.query_one(f"#{self.kind}-filter", Input))

    def highlighted_item(self) -> JSON | None:
        index = self.option_list.highlighted
        return self.shown[index] if index is not None and index < len(self.shown) else None


class InfoPane(VerticalScroll):
    """Who the server is (as `mcp info` shows it), the roots offered, how to reach it again."""

    def compose(self) -> ComposeResult:
        yield Static(id="info-body")

    def show(self, summary: JSON, roots: list[JSON] | None, command: str) -> None:
        from mcpcli.render.servers import server_info

        body = rendered(server_info, summary, width=max(40, self.size.width - 2 or 100))
        body += Text("\n\nroots offered: ", style="bold")
        body += safe(", ".join(str(r.get("uri")) for r in roots) if roots else "(none: pass --root DIR)")
        body += Text("\n\n$ ", style="dim") + safe(command, one_line=True)
        self.query_one("#info-body", Static).update(body)
