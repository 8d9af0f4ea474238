"""The user-agent side of sign-in: the loopback redirect listener and the browser launcher.

`LoopbackListener` binds 127.0.0.1 on an ephemeral port (never 0.0.0.0, never
the name `localhost`), answers `GET /callback`, and hands the first callback
whose `state` matches to the flow; callbacks with a missing or wrong `state`
get a 400 page and are otherwise ignored, so a stray or forged request can
neither finish nor abort the sign-in. `open_browser` checks the URL first
(`mcpcli.auth.urls.check_browser_url`) and launches `BROWSER` (or `xdg-open`;
`webbrowser` on macOS and Windows) in a daemon thread, never through a shell,
with its stdin on /dev/null and its stdout on our stderr.
"""

from __future__ import annotations

import html
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import anyio.abc

from mcpcli.auth.urls import check_browser_url

__all__ = [
    "Callback", "LoopbackListener", "can_launch_browser", "launch_browser", "open_browser", "parse_callback_url",
]

MAX_REQUEST_BYTES = 16 * 1024
CALLBACK_PATH = "/callback"


@dataclass
class Callback:
    """The query of an authorization response (code or error, state, iss)."""

    params: dict[str, str] = field(default_factory=dict)
    duplicated: bool = False

    @property
    def state(self) -> str | None:
        return self.params.get("state")

    @property
    def code(self) -> str | None:
        return self.params.get("code")

    @property
    def error(self) -> str | None:
        return self.params.get("error")

    def __repr__(self) -> str:
        return f"Callback(keys={sorted(self.params)})"


def parse_query(query: str) -> Callback:
    pairs = parse_qsl(query, keep_blank_values=True)
    params: dict[str, str] = {}
    dup = False
    for key, value in pairs:
        if key in params:
            dup = True
            continue
        params[key] = value
    return Callback(params=params, duplicated=dup)


def parse_callback_url(text: str) -> Callback | None:
    """A pasted redirect URL (or just its query string) → the callback parameters."""
    text = text.strip()
    if not text:
        return None
    if "?" in text:
        text = text.split("?", 1)[1]
    text = text.split("#", 1)[0]
    cb = parse_query(text)
    if not cb.params:
        return None
    return cb


_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>mcp sign-in</title></head>
<body style="font-family: sans-serif; margin: 3em"><h2>{title}</h2><p>{body}</p></body></html>
"""


def _page(status: int, title: str, body: str) -> bytes:
    content = _PAGE.format(title=html.escape(title), body=html.escape(body)).encode("utf-8")
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}.get(status, "OK")
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Content-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(content)}\r\n"
        "Cache-Control: no-store\r\n"
        "Referrer-Policy: no-referrer\r\n"
        "X-Content-Type-Options: nosniff\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii")
    return head + content


class LoopbackListener:
    """An HTTP listener on 127.0.0.1 that waits for one valid authorization callback.

    `expected_state` is checked here; `accept(cb)` (from the flow) may reject a
    callback with a message for the browser page (for example an `iss` mismatch),
    which ends the wait with that callback marked rejected.
    """

    def __init__(self, port: int = 0) -> None:
        self.requested_port = port
        self.port: int | None = None
        self.expected_state: str | None = None
        self._listener: anyio.abc.SocketListener | None = None
        self._result: Callback | None = None
        self._done = anyio.Event()
        self.rejected: list[str] = []

    @property
    def redirect_uri(self) -> str:
        assert self.port is not None
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def start(self) -> None:
        multi = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.requested_port)
        listener = multi.listeners[0]
        assert isinstance(listener, anyio.abc.SocketListener)
        self._listener = listener
        sock = listener.extra(anyio.abc.SocketAttribute.raw_socket)  # noqa: S610
        self.port = int(sock.getsockname()[1])

    async def aclose(self) -> None:
        if self._listener is not None:
            await self._listener.aclose()
            self._listener = None

    def deliver(self, cb: Callback) -> bool:
        """Offer a callback from elsewhere (a pasted URL); True if it was taken."""
        if self._done.is_set() or not self._state_ok(cb):
            return False
        self._result = cb
        self._done.set()
        return True

    def _state_ok(self, cb: Callback) -> bool:
        import hmac

        return (
            self.expected_state is not None
            and cb.state is not None
            and not cb.duplicated
            and hmac.compare_digest(cb.state.encode(), self.expected_state.encode())
        )

    async def wait(self) -> Callback:
        """Serve until a callback with the right state arrives; returns it."""
        assert self._listener is not None
        listener = self._listener
        async with anyio.create_task_group() as tg:

            async def serve() -> None:
                await listener.serve(self._handle, task_group=tg)

            tg.start_soon(serve)
            await self._done.wait()
            tg.cancel_scope.cancel()
        assert self._result is not None
        return self._result

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            try:
                with anyio.fail_after(10):
                    request = await self._read_request(stream)
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError, ValueError):
                return
            if request is None:
                return
            method, target = request
            response = self._respond(method, target)
            try:
                await stream.send(response)
            except (anyio.BrokenResourceError, OSError):
                pass

    async def _read_request(self, stream: anyio.abc.SocketStream) -> tuple[str, str] | None:
        buf = b""
        while b"\r\n\r\n" not in buf and b"\n\n" not in buf:
            chunk = await stream.receive(4096)
            buf += chunk
            if len(buf) > MAX_REQUEST_BYTES:
                await stream.send(_page(400, "Request too large", ""))
                return None
        line = buf.split(b"\n", 1)[0].decode("latin-1").strip()
        parts = line.split(" ")
        if len(parts) != 3:
            return None
        return parts[0], parts[1]

    def _respond(self, method: str, target: str) -> bytes:
        if method != "GET":
            return _page(405, "Method not allowed", "")
        parts = urlsplit(target)
        if parts.path != CALLBACK_PATH:
            return _page(404, "Not found", "")
        if self._done.is_set():
            return _page(400, "Sign-in already finished", "You can close this window.")
        cb = parse_query(parts.query)
        if not self._state_ok(cb):
            self.rejected.append("state")
            return _page(
                400,
                "Sign-in response not accepted",
                "The response did not carry the expected state value. Start the sign-in again from mcp.",
            )
        self._result = cb
        self._done.set()
        return _page(200, "Sign-in response received", "You can close this window and return to the terminal.")


def can_launch_browser() -> bool:
    """Is there a browser to launch? (BROWSER set, macOS, Windows, or a graphical session)."""
    if os.environ.get("BROWSER"):
        return True
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


Opener = Callable[[str], Any]


def _launcher_commands(url: str) -> list[list[str]]:
    """argv lists to try: each `BROWSER` entry (`%s` is the URL, else it is appended),
    then `xdg-open` on desktops that are neither macOS nor Windows."""
    import shlex
    import shutil

    commands: list[list[str]] = []
    for entry in os.environ.get("BROWSER", "").split(os.pathsep):
        entry = entry.strip()
        if not entry:
            continue
        try:
            argv = [entry] if shutil.which(entry) else shlex.split(entry)
        except ValueError:
            continue
        if any("%s" in arg for arg in argv[1:]):
            argv = [argv[0], *(arg.replace("%s", url) for arg in argv[1:])]
        else:
            argv.append(url)
        commands.append(argv)
    if not commands and sys.platform not in ("darwin", "win32") and shutil.which("xdg-open"):
        commands.append(["xdg-open", url])
    return commands


def _default_opener(url: str) -> Any:
    """Launch a browser without letting it near our stdin or stdout.

    Launchers chatter ("Opening in existing browser session."); on our stdout
    that would corrupt the data a pipe expects, so their stdout goes to our
    stderr and their stdin is /dev/null. `webbrowser` (which passes our streams
    on) is only the fallback, for macOS and Windows without `BROWSER`.
    """
    import subprocess

    commands = _launcher_commands(url)
    if not commands:
        import webbrowser

        return webbrowser.open(url, new=1, autoraise=True)
    try:
        chatter: int = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        chatter = subprocess.DEVNULL
    for argv in commands:
        try:
            launched = subprocess.run(
                argv, stdin=subprocess.DEVNULL, stdout=chatter, check=False, start_new_session=True,
            )
        except (OSError, ValueError):
            continue
        if launched.returncode == 0:
            return True
    return False


#: Replaced in tests; receives the already-checked URL.
opener: Opener = _default_opener


def open_browser(url: str) -> threading.Thread:
    """Open `url` (checked first) in the standard browser from a daemon thread.

    The launcher may block until the browser exits (`webbrowser` waits for a
    `BROWSER` command), so it runs in the background; failures are ignored:
    the URL is always printed too.
    """
    check_browser_url(url)
    launch = opener

    def run() -> None:
        try:
            launch(url)
        except Exception:  # noqa: S110 - the URL is printed for the user anyway
            pass

    thread = threading.Thread(target=run, name="mcpcli-browser", daemon=True)
    thread.start()
    return thread


def launch_browser(url: str, *, wait: float = 3.0) -> str | None:
    """Open `url` (checked by the caller) in a browser now, and say whether that worked:
    None when a launcher took it (or still runs after `wait` seconds, as a browser kept in
    the foreground does), else why nothing was opened. For a person who must be told."""
    if not can_launch_browser():
        return "there is no browser to open it with here (BROWSER is not set and there is no desktop)"
    outcome: list[bool] = []
    launch = opener

    def run() -> None:
        try:
            outcome.append(bool(launch(url)))
        except Exception:
            outcome.append(False)

    thread = threading.Thread(target=run, name="mcpcli-browser", daemon=True)
    thread.start()
    thread.join(wait)
    if not outcome or outcome[0]:
        return None
    return "the BROWSER command failed" if os.environ.get("BROWSER") else "the browser launcher failed"
