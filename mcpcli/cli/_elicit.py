"""Answering elicitation requests: prompt a person on a TTY, or answer by policy.

Every prompt goes to stderr (stdout is data). A person can accept (fill the
form), decline, or cancel. Without a TTY we decline unless `--elicit-json` or
`--elicit-defaults` says how to answer. URL-mode requests show the URL and its host
and ask for consent before anything is opened, and say when it could not be.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Awaitable, Callable
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcpcli.args import required_names
from mcpcli.text import printable

if TYPE_CHECKING:
    from mcpcli.cli._app import App

__all__ = ["decline_with_notice", "defaults_answer", "fixed_answer", "form_defaults", "prompter"]

JSON = dict[str, Any]
Elicitor = Callable[[JSON], Awaitable[JSON]]


def _properties(params: JSON) -> dict[str, JSON]:
    schema = params.get("requestedSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    return {k: v for k, v in props.items() if isinstance(v, dict)} if isinstance(props, dict) else {}


def _required(params: JSON) -> set[str]:
    return required_names(params.get("requestedSchema"))


def form_defaults(params: JSON) -> JSON:
    """The schema's default for every field that declares one (SEP-1034)."""
    return {name: prop["default"] for name, prop in _properties(params).items() if "default" in prop}


def _is_url_mode(params: JSON) -> bool:
    return params.get("mode") == "url"


def _policy_answer(app: App | None, params: JSON, content: JSON, flag: str) -> JSON:
    """Accept with `content`, limited to the requested fields, if every required one is there.

    Fields the server did not ask for are never sent (an `--elicit-json` object
    may be shared by several requests). A form missing a required field is
    declined with a warning rather than answered invalidly.
    """
    props = _properties(params)
    if props:
        content = {k: v for k, v in content.items() if k in props}
    missing = sorted(_required(params) - set(content))
    if missing:
        if app is not None:
            message = printable(str(params.get("message", "")), keep_newlines=False)[:120]
            app.warn(f"declined the server's request for input ({message}): {flag} gives no "
                     f"value for required field{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
        return {"action": "decline"}
    return {"action": "accept", "content": content}


def fixed_answer(content: JSON, app: App | None = None) -> Elicitor:
    """`--elicit-json`: accept with this content, defaults filling the gaps."""

    async def answer(params: JSON) -> JSON:
        if _is_url_mode(params):
            return {"action": "decline"}
        merged = form_defaults(params)
        merged.update(content)
        return _policy_answer(app, params, merged, "--elicit-json")

    return answer


def defaults_answer(app: App | None = None) -> Elicitor:
    """`--elicit-defaults`: accept with the schema's defaults."""

    async def answer(params: JSON) -> JSON:
        if _is_url_mode(params):
            return {"action": "decline"}
        return _policy_answer(app, params, form_defaults(params), "--elicit-defaults")

    return answer


def decline_with_notice(app: App) -> Elicitor:
    """No TTY and no policy: decline, and say so on stderr."""

    async def answer(params: JSON) -> JSON:
        message = printable(str(params.get("message", "")), keep_newlines=False)
        app.warn(
            f"declined the server's request for input ({message[:120]}); "
            "answer with --elicit-json or --elicit-defaults, or run on a terminal"
        )
        return {"action": "decline"}

    return answer


# -- interactive ---------------------------------------------------------------------


class _Stopped(Exception):
    """The request was abandoned (Ctrl-C, timeout) while a prompt was waiting."""


class _Terminal:
    """Line prompts on the terminal, readable from a worker thread and stoppable.

    `input()` in a worker thread cannot be interrupted, and a thread blocked in it
    keeps the process alive after Ctrl-C. So lines are read from the terminal's fd
    with `select` in short slices, checking `stop` between them; the terminal's own
    line discipline still provides editing (backspace, Ctrl-U) and echo.
    """

    def __init__(self, fd: int, err: IO[str], stop: threading.Event) -> None:
        self.fd = fd
        self.err = err
        self.stop = stop

    def echo(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()

    def readline(self, prompt: str) -> str:
        self.err.write(prompt)
        self.err.flush()
        data = b""
        while not data.endswith(b"\n"):
            if self.stop.is_set():
                raise _Stopped
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(self.fd, 4096)
            if not chunk:  # Ctrl-D at the start of a line
                self.err.write("\n")
                raise EOFError
            data += chunk
        return data.decode("utf-8", "replace").rstrip("\r\n")

    def ask(self, label: str, default: Any = None, *, show_default: bool = True) -> str:
        """A line of text; empty input gives `default` (None: ask again)."""
        shown = f" [{default}]" if show_default and default not in (None, "") else ""
        while True:
            raw = self.readline(f"{label}{shown}: ")
            if raw != "":
                return raw
            if default is not None:
                return str(default)

    def confirm(self, label: str, default: bool = False) -> bool:
        while True:
            raw = self.readline(f"{label} [{'Y/n' if default else 'y/N'}]: ").strip().lower()
            if raw == "":
                return default
            if raw in ("y", "yes"):
                return True
            if raw in ("n", "no"):
                return False
            self.echo("    answer y or n")


def _choices(prop: JSON) -> list[tuple[Any, str]] | None:
    """(value, label) pairs of a single-select field, in any of the SEP-1330 spellings."""
    if isinstance(prop.get("oneOf"), list):
        out = [(c.get("const"), str(c.get("title", c.get("const"))))
               for c in prop["oneOf"] if isinstance(c, dict) and "const" in c]
        return out or None
    if isinstance(prop.get("enum"), list):
        names = prop.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(prop["enum"]) else prop["enum"]
        return [(v, str(label)) for v, label in zip(prop["enum"], labels, strict=False)]
    return None


def _multi_choices(prop: JSON) -> list[tuple[Any, str]] | None:
    if prop.get("type") != "array" or not isinstance(prop.get("items"), dict):
        return None
    items = prop["items"]
    if isinstance(items.get("anyOf"), list):
        return [(c.get("const"), str(c.get("title", c.get("const"))))
                for c in items["anyOf"] if isinstance(c, dict) and "const" in c] or None
    if isinstance(items.get("enum"), list):
        return [(v, str(v)) for v in items["enum"]]
    return None


def _list_choices(tty: _Terminal, choices: list[tuple[Any, str]]) -> None:
    for i, (_value, text) in enumerate(choices, 1):
        tty.echo(f"    {i}) {printable(text, keep_newlines=False)}")


def _pick(tty: _Terminal, label: str, choices: list[tuple[Any, str]], default: Any, optional: bool) -> Any:
    _list_choices(tty, choices)
    default_index = next((str(i) for i, (v, _) in enumerate(choices, 1) if v == default), None)
    while True:
        raw = tty.ask(label, default_index or ("" if optional else None)).strip()
        if not raw and optional:
            return None
        if raw.isascii() and raw.isdigit() and 1 <= int(raw) <= len(choices):
            return choices[int(raw) - 1][0]
        for value, text in choices:
            if raw in (str(value), text):
                return value
        tty.echo(f"    choose 1-{len(choices)}")


def _pick_many(tty: _Terminal, label: str, choices: list[tuple[Any, str]], default: Any, prop: JSON) -> list[Any]:
    _list_choices(tty, choices)
    default_text = ",".join(
        str(i) for i, (v, _) in enumerate(choices, 1) if isinstance(default, list) and v in default
    )
    low, high = prop.get("minItems"), prop.get("maxItems")
    while True:
        raw = tty.ask(f"{label} (numbers, comma-separated)", default_text).strip()
        picked: list[Any] = []
        ok = True
        for part in filter(None, (p.strip() for p in raw.split(","))):
            if part.isascii() and part.isdigit() and 1 <= int(part) <= len(choices):
                picked.append(choices[int(part) - 1][0])
            else:
                ok = False
        if ok and (not isinstance(low, int) or len(picked) >= low) and (
            not isinstance(high, int) or len(picked) <= high
        ):
            return picked
        tty.echo("    pick from the numbers shown" + (f" ({low or 0}-{high or 'any'} items)" if low or high else ""))


def _number(tty: _Terminal, label: str, prop: JSON, required: bool) -> Any:
    kind = prop.get("type")
    py = int if kind == "integer" else float
    default = prop.get("default")
    low, high = prop.get("minimum"), prop.get("maximum")
    while True:
        raw = tty.ask(label, default if default is not None else ("" if not required else None))
        if raw == "" and not required:
            return None
        try:
            value = py(raw)
        except ValueError:
            tty.echo(f"    enter a{'n integer' if kind == 'integer' else ' number'}")
            continue
        if (low is not None and value < low) or (high is not None and value > high):
            tty.echo(f"    must be between {low} and {high}")
            continue
        return value


def _field(tty: _Terminal, name: str, prop: JSON, required: bool) -> Any:
    title = printable(str(prop.get("title") or name), keep_newlines=False)
    if prop.get("description"):
        tty.echo(f"  {printable(str(prop['description']), keep_newlines=False)}")
    label = f"  {title}" + ("" if required else " (optional)")
    default = prop.get("default")
    choices = _choices(prop)
    if choices is not None:
        return _pick(tty, label, choices, default, not required)
    many = _multi_choices(prop)
    if many is not None:
        return _pick_many(tty, label, many, default, prop)
    kind = prop.get("type")
    if kind == "boolean":
        return tty.confirm(label, bool(default) if default is not None else False)
    if kind in ("integer", "number"):
        return _number(tty, label, prop, required)
    while True:
        raw = tty.ask(label, default if default is not None else ("" if not required else None))
        if raw == "" and not required:
            return None
        low, high = prop.get("minLength"), prop.get("maxLength")
        if (isinstance(low, int) and len(raw) < low) or (isinstance(high, int) and len(raw) > high):
            tty.echo(f"    length must be between {low or 0} and {high or 'any'}")
            continue
        if prop.get("format") == "email" and "@" not in raw:
            tty.echo("    enter an email address")
            continue
        return raw


def _interactive_form(tty: _Terminal, params: JSON) -> JSON:
    message = printable(str(params.get("message", "The server asks for input.")))
    tty.echo(f"\n{message}")
    while True:
        choice = tty.ask("Respond? [a]ccept, [d]ecline, [c]ancel", "a", show_default=True).strip().lower()
        if choice in ("a", "accept", "d", "decline", "c", "cancel"):
            break
    if choice.startswith("d"):
        return {"action": "decline"}
    if choice.startswith("c"):
        return {"action": "cancel"}
    required = _required(params)
    content: JSON = {}
    for name, prop in _properties(params).items():
        value = _field(tty, name, prop, name in required)
        if value is not None:
            content[name] = value
    return {"action": "accept", "content": content}


def _interactive_url(tty: _Terminal, params: JSON) -> JSON:
    url = str(params.get("url", ""))
    parts = urlsplit(url)
    message = printable(str(params.get("message", "")))
    if parts.scheme not in ("https", "http") or not parts.hostname:
        tty.echo(f"\nThe server asked to open an unusable URL; declined. {message}")
        return {"action": "decline"}
    tty.echo(f"\n{message}\nThe server asks you to open a page on {printable(parts.hostname)}:")
    tty.echo(f"  {printable(url, keep_newlines=False)}")
    if not tty.confirm("Open it?", False):
        return {"action": "decline"}
    from mcpcli.auth.browser import launch_browser
    from mcpcli.auth.urls import browser_url_problem

    # Accepted either way: the person agreed to go there, and has the address above.
    problem = browser_url_problem(url)
    if problem is not None:
        tty.echo(f"Not opened: {problem}. Open the address above yourself if you trust it.")
    else:
        failed = launch_browser(url)
        if failed is not None:
            tty.echo(f"Could not open it: {failed}. Open the address above yourself.")
    return {"action": "accept"}


def prompter(app: App) -> Elicitor:
    """Ask the person at the terminal (stdin and stderr); the prompts run in a worker thread.

    One form at a time: concurrent requests wait for the terminal.
    """
    import anyio

    lock = anyio.Lock()

    async def answer(params: JSON) -> JSON:
        fn = _interactive_url if _is_url_mode(params) else _interactive_form
        stop = threading.Event()
        tty = _Terminal(app.stdin.fileno(), app.stderr, stop)
        try:
            async with lock:
                result: JSON = await anyio.to_thread.run_sync(fn, tty, params, abandon_on_cancel=True)
        except (EOFError, _Stopped):
            return {"action": "cancel"}
        finally:
            stop.set()  # an abandoned prompt thread ends within 0.1 s
        return result

    return answer
