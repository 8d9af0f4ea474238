"""How results are shown: content blocks as `mcp` prints them, structured content as a JSON
tree, saved files with their paths, resource links to open, `isError` in red, and the
equivalent command line above it all."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, Static, Tree
from textual.widgets.option_list import Option

from mcpcli.text import printable

__all__ = ["CommandLine", "ResultView", "json_tree", "rendered", "safe"]

JSON = dict[str, Any]
#: A JSON tree stops adding nodes past this many (a huge result stays usable).
MAX_TREE_NODES = 2000


def safe(text: Any, *, one_line: bool = False) -> Text:
    """Server text as a `Text` shown as it is: never markup, control characters escaped."""
    return Text(printable(str(text if text is not None else ""), keep_newlines=not one_line))


def rendered(fn: Callable[..., None], *args: Any, width: int = 100) -> Text:
    """What one of `mcpcli.render`'s functions prints (the CLI's own rendering), as a `Text`."""
    from rich.console import Console

    console = Console(file=io.StringIO(), width=max(20, width), force_terminal=True,
                      color_system="truecolor", legacy_windows=False)
    with console.capture() as capture:
        fn(console, *args)
    return Text.from_ansi(capture.get().rstrip("\n"))


def json_tree(value: Any, label: str = "structuredContent") -> Tree[Any]:
    """A JSON value as an expandable tree (keys and values escaped, JSON spelling)."""
    tree: Tree[Any] = Tree(safe(label, one_line=True), classes="json-tree")
    tree.show_root = True
    count = 0

    def add(node: Any, key: str | None, data: Any) -> None:
        nonlocal count
        count += 1
        prefix = Text(printable(key, keep_newlines=False), style="bold") + Text(": ") if key is not None else Text()
        if count > MAX_TREE_NODES:
            node.add_leaf(Text("… (more not shown)", style="dim"))
            return
        if isinstance(data, dict):
            child = node.add(prefix + Text(f"{{}} {len(data)} keys", style="dim"), expand=count < 50)
            for k, v in data.items():
                add(child, str(k), v)
        elif isinstance(data, list):
            child = node.add(prefix + Text(f"[] {len(data)} items", style="dim"), expand=count < 50)
            for i, v in enumerate(data):
                add(child, str(i), v)
        else:
            node.add_leaf(prefix + Text(printable(json.dumps(data, ensure_ascii=False), keep_newlines=False),
                                        style="cyan" if not isinstance(data, str) else "green"))

    if isinstance(value, (dict, list)):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in items:
            add(tree.root, str(k), v)
    else:
        add(tree.root, None, value)
    tree.root.expand()
    return tree


class CommandLine(Static):
    """`$ mcp tools call ...`: the equivalent command of what was just done."""

    def __init__(self, command: str = "", note: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.command = command
        self.note = note
        self._show()

    def set(self, command: str) -> None:
        self.command = command
        self._show()

    def _show(self) -> None:
        if not self.command:
            self.update("")
            return
        line = Text("$ ", style="dim") + Text(printable(self.command, keep_newlines=False), style="bold")
        if self.note:
            line += Text(f"\n  {self.note}", style="dim")
        self.update(line)


class ResultView(VerticalScroll):
    """One result: its parts are replaced whole by each `show_*`."""

    class OpenLink(Message):
        """A resource link was chosen: read it."""

        def __init__(self, uri: str) -> None:
            super().__init__()
            self.uri = uri

    def __init__(self, save_dir: Callable[[], str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._save_dir = save_dir
        self.result: JSON | None = None
        self.links: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static(id="result-status")

    def _reset(self, status: Text | str = "") -> Static:
        for child in list(self.children):
            if child.id != "result-status":
                child.remove()
        box = self.query_one("#result-status", Static)
        box.update(status)
        box.set_class(False, "error")
        return box

    def _width(self) -> int:
        return max(40, (self.size.width or 100) - 4)

    def show_status(self, text: str, *, error: bool = False) -> None:
        box = self._reset(Text(text))
        box.set_class(error, "error")

    def show_error(self, message: str) -> None:
        self.result = None
        self.show_status(message, error=True)

    def show_call(self, result: JSON) -> None:
        """A `tools/call` result (or a task's final one)."""
        from mcpcli.render.content import call_result

        self.result = result
        box = self._reset()
        if result.get("isError"):
            box.update(Text("✗ the tool reported an error (isError: true)", style="bold"))
            box.set_class(True, "error")
        else:
            box.update(Text("✓ done", style="bold"))
        self.mount(Static(rendered(call_result, result, self._save_dir(), width=self._width()), classes="result-body"))
        structured = result.get("structuredContent")
        if structured is not None:
            self.mount(json_tree(structured))
        content = result.get("content")
        self._links([b for b in content if isinstance(b, dict)] if isinstance(content, list) else [])

    def show_resource(self, result: JSON) -> None:
        from mcpcli.render.content import resource_contents

        self.result = result
        self._reset(Text("✓ read", style="bold"))
        self.mount(Static(rendered(resource_contents, result, self._save_dir(), width=self._width()),
                          classes="result-body"))

    def show_prompt(self, result: JSON) -> None:
        from mcpcli.render.content import prompt_messages

        self.result = result
        self._reset(Text("✓ rendered", style="bold"))
        self.mount(Static(rendered(prompt_messages, result, self._save_dir(), width=self._width()),
                          classes="result-body"))
        blocks: list[JSON] = []
        messages = result.get("messages")
        for message in messages if isinstance(messages, list) else []:
            content = message.get("content") if isinstance(message, dict) else None
            blocks.extend(b for b in (content if isinstance(content, list) else [content]) if isinstance(b, dict))
        self._links(blocks)

    def show_json(self, result: JSON, status: str) -> None:
        """Anything else (a task's state): the JSON as a tree."""
        self.result = result
        self._reset(Text(status, style="bold"))
        self.mount(json_tree(result, "result"))

    def _links(self, blocks: list[JSON]) -> None:
        """Resource links as a list: Enter reads one."""
        self.links = [str(b.get("uri")) for b in blocks
                      if b.get("type") == "resource_link" and isinstance(b.get("uri"), str)]
        if not self.links:
            return
        self.mount(Static(Text("Resource links (Enter reads one):", style="bold")))
        self.mount(OptionList(*[Option(safe(uri, one_line=True), id=str(i)) for i, uri in enumerate(self.links)],
                              classes="result-links"))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.has_class("result-links") and event.option.id is not None:
            event.stop()
            self.post_message(self.OpenLink(self.links[int(event.option.id)]))
