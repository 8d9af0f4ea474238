"""What a server asks of the person: elicitation (a form, or a URL to open) and sampling
(a message for them to write, or to approve from `--sampling-command`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Static, TextArea

from mcpcli.errors import McpCliError
from mcpcli.inspector import forms
from mcpcli.inspector.formscreen import FieldsForm, work
from mcpcli.inspector.results import safe
from mcpcli.text import printable

__all__ = ["ElicitScreen", "SamplingScreen", "sampling_text"]

JSON = dict[str, Any]


class ElicitScreen(ModalScreen[JSON]):
    """`elicitation/create`: accept (with the form's content), decline, or cancel.

    URL mode shows the page's host and address; accepting opens it in a browser when one
    can be started (over SSH, copy it with Ctrl+Y and open it yourself, then accept).
    """

    BINDINGS = [
        Binding("enter", "accept", "Accept"),
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+d", "decline", "Decline"),
        Binding("ctrl+y", "copy", "Copy URL"),
        Binding("tab", "app.focus_next", "Next field", priority=True),
        Binding("shift+tab", "app.focus_previous", "Previous field", show=False, priority=True),
    ]

    def __init__(self, params: JSON) -> None:
        super().__init__()
        self.params = params
        self.url_mode = params.get("mode") == "url"
        self.fields = [] if self.url_mode else forms.elicitation_fields(params)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="elicit"):
            yield Static(Text("The server asks for input", style="bold"))
            yield Static(safe(self.params.get("message", "")), id="elicit-message")
            if self.url_mode:
                url = str(self.params.get("url", ""))
                parts = urlsplit(url)
                host = printable(parts.hostname or "?", keep_newlines=False)
                yield Static(Text(f"It asks you to open a page on {host}:"))
                yield Static(safe(url, one_line=True), id="elicit-url")
            else:
                yield FieldsForm(self.fields, id="elicit-form")
            with Horizontal(classes="buttons"):
                yield Button("Accept (Enter)", id="accept", variant="primary")
                yield Button("Decline (Ctrl+D)", id="decline")
                yield Button("Cancel (Esc)", id="cancel")
        yield Footer()

    def on_mount(self) -> None:
        if not self.url_mode:
            self.query_one(FieldsForm).focus_first()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_accept()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        {"accept": self.action_accept, "decline": self.action_decline, "cancel": self.action_cancel}[
            event.button.id or "cancel"]()

    def action_copy(self) -> None:
        if self.url_mode:
            self.app.copy_to_clipboard(str(self.params.get("url", "")))
            self.notify("URL copied (to the terminal's clipboard)", timeout=3)

    def action_decline(self) -> None:
        self.dismiss({"action": "decline"})

    def action_cancel(self) -> None:
        self.dismiss({"action": "cancel"})

    def action_accept(self) -> None:
        if self.url_mode:
            url = str(self.params.get("url", ""))
            parts = urlsplit(url)
            if parts.scheme not in ("https", "http") or not parts.hostname:
                self.notify("not an http(s) URL: declined", severity="error")
                self.dismiss({"action": "decline"})
                return
            if not url.startswith("-") and not any(c.isspace() for c in url):
                import contextlib
                import webbrowser

                with contextlib.suppress(Exception):  # no browser here is no reason to fail the request
                    webbrowser.open(url)
            self.dismiss({"action": "accept"})
            return
        form = self.query_one(FieldsForm)
        content, problems = forms.values(self.fields, form.raw())
        if not problems:
            problems = forms.field_errors(self.params.get("requestedSchema"), content)
        if problems:
            form.show_errors(problems)
            return
        self.dismiss({"action": "accept", "content": content})


def sampling_text(params: JSON) -> Text:
    """A sampling request as a person reads it: the system prompt, each message, the limits."""
    out = Text()
    if params.get("systemPrompt"):
        out += Text("system: ", style="bold") + safe(params["systemPrompt"]) + Text("\n")
    messages = params.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        out += Text(f"{printable(str(message.get('role', '?')), keep_newlines=False)}: ", style="bold")
        content = message.get("content")
        for block in content if isinstance(content, list) else [content]:
            if isinstance(block, dict) and block.get("type") == "text":
                out += safe(block.get("text", ""))
            elif isinstance(block, dict):
                out += Text(f"[{printable(str(block.get('type', '?')), keep_newlines=False)} content]", style="dim")
        out += Text("\n")
    limits = [f"{k}: {params[k]}" for k in ("maxTokens", "temperature", "includeContext") if k in params]
    prefs = params.get("modelPreferences")
    if isinstance(prefs, dict) and isinstance(prefs.get("hints"), list):
        names = [str(h.get("name")) for h in prefs["hints"] if isinstance(h, dict) and h.get("name")]
        if names:
            limits.append("model hints: " + ", ".join(names))
    if limits:
        out += Text(printable(" · ".join(limits), keep_newlines=False), style="dim")
    return out


class SamplingScreen(ModalScreen[JSON | None]):
    """`sampling/createMessage`: the person writes (or approves) the assistant's reply.

    With `--sampling-command` its answer is drafted first; sending it is still the
    person's call. Dismissed with None: rejected.
    """

    BINDINGS = [
        Binding("ctrl+s", "send", "Send"),
        Binding("escape", "reject", "Reject"),
    ]

    def __init__(self, params: JSON, draft: Callable[[], Awaitable[JSON]] | None) -> None:
        super().__init__()
        self.params = params
        self.draft = draft
        self.drafted: JSON | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="sampling"):
            yield Static(Text("The server asks for a model's reply (sampling)", style="bold"))
            with VerticalScroll(id="sampling-request"):
                yield Static(sampling_text(self.params))
            yield Static(Text("Your reply:", style="bold"))
            yield TextArea(id="sampling-reply")
            yield Static("", id="sampling-note")
            with Horizontal(classes="buttons"):
                yield Button("Send (Ctrl+S)", id="send", variant="primary")
                yield Button("Reject (Esc)", id="reject")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()
        if self.draft is not None:
            self.query_one("#sampling-note", Static).update(Text("running --sampling-command…", style="dim"))
            self.run_worker(work(self._draft), exit_on_error=False)

    async def _draft(self) -> None:
        assert self.draft is not None
        note = self.query_one("#sampling-note", Static)
        try:
            self.drafted = await self.draft()
        except McpCliError as exc:
            note.update(Text(f"--sampling-command failed: {exc.message}"))
            return
        content = self.drafted.get("content")
        text = content.get("text") if isinstance(content, dict) else None
        self.query_one(TextArea).text = text if isinstance(text, str) else ""
        note.update(Text(f"drafted by --sampling-command ({printable(str(self.drafted.get('model', '')))});"
                         " edit it or send it as it is", style="dim"))

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "send":
            self.action_send()
        else:
            self.action_reject()

    def action_send(self) -> None:
        text = self.query_one(TextArea).text
        drafted = self.drafted
        content = drafted.get("content") if drafted is not None else None
        if drafted is not None and isinstance(content, dict) and content.get("text") == text:
            self.dismiss(drafted)
            return
        self.dismiss({"role": "assistant", "content": {"type": "text", "text": text},
                      "model": "mcp-inspect (typed by a person)", "stopReason": "endTurn"})

    def action_reject(self) -> None:
        self.dismiss(None)
