"""`"headersHelper"` on a configured remote server: a command that prints request headers.

Short-lived credentials from a corporate CLI (`vault read ...`, `gcloud auth
print-identity-token`) become headers without `mcp` knowing how they are made. The
command is the user's own, from their own config: a JSON list is run as an argv
(no shell), a string through `sh -c`. It never sees tool arguments. Its stdout is
a JSON object of header names to values, or `Name: value` lines; it runs when the
first request needs headers and again after a 401 (once per 401), within
`HELPER_TIMEOUT` seconds. What it prints is treated as secret: never logged, never
shown in an error, never put in a child's environment.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import TYPE_CHECKING

from mcpcli.core import jsonrpc
from mcpcli.errors import AuthError

if TYPE_CHECKING:
    import anyio

    from mcpcli.text import SecretValues

__all__ = ["HELPER_TIMEOUT", "HeadersHelper", "helper_argv", "parse_headers"]

#: How long the helper may take (seconds); a corporate CLI refreshing a token is slow, a hang is not.
HELPER_TIMEOUT = 10.0
#: More output than this is not headers.
MAX_OUTPUT = 64 * 1024
_TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def helper_argv(command: str | list[str]) -> list[str]:
    """The argv to run: a list as it is (no shell), a string through `sh -c`."""
    return list(command) if isinstance(command, list) else ["sh", "-c", command]


def _valid(name: str, value: str) -> bool:
    # Visible ASCII, space and tab only: no header splitting, nothing httpx cannot encode.
    return bool(name) and all(c in _TOKEN_CHARS for c in name) and all(c == "\t" or " " <= c <= "~" for c in value)


def parse_headers(output: bytes, *, what: str) -> dict[str, str]:
    """The headers in the helper's stdout; an `AuthError` that never quotes it otherwise."""
    garbage = AuthError(
        f"{what}: headersHelper printed neither a JSON object of header names to strings "
        "nor 'Name: value' lines",
        hint="its output is not shown (it holds secrets); run the command yourself to see it",
    )
    try:
        text = output.decode("utf-8")
    except UnicodeDecodeError:
        raise garbage from None
    headers: dict[str, str] = {}
    if text.lstrip().startswith("{"):
        try:
            doc = jsonrpc.loads(text)
        except ValueError:
            raise garbage from None
        if not isinstance(doc, dict) or not all(isinstance(v, str) for v in doc.values()):
            raise garbage
        headers = {str(k): v for k, v in doc.items()}
    else:
        for line in text.splitlines():
            if not line.strip():
                continue
            name, sep, value = line.partition(":")
            if not sep:
                raise garbage
            headers[name.strip()] = value.strip()
    if not headers or not all(_valid(k, v) for k, v in headers.items()):
        raise garbage
    return headers


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


async def run_helper(command: str | list[str], *, what: str, timeout: float = HELPER_TIMEOUT) -> dict[str, str]:
    """Run the helper once (in its own process group, killed whole on timeout) and parse its stdout."""
    import anyio

    argv = helper_argv(command)
    shown = argv[0] if isinstance(command, list) else "sh -c ..."
    try:
        process = await anyio.open_process(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=None, start_new_session=True
        )
    except OSError as exc:
        raise AuthError(f"{what}: cannot run headersHelper {shown}: {exc.strerror or exc}") from None
    chunks: list[bytes] = []
    size = 0
    try:
        with anyio.fail_after(timeout):
            assert process.stdout is not None
            async for chunk in process.stdout:
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_OUTPUT:
                    break
            if size <= MAX_OUTPUT:
                code = await process.wait()
    except TimeoutError:
        _kill_group(process.pid)
        await _reap(process)
        raise AuthError(
            f"{what}: headersHelper took longer than {timeout:g} s", hint="it was stopped; run it yourself to see why"
        ) from None
    finally:
        if process.returncode is None:
            _kill_group(process.pid)
            await _reap(process)
    if size > MAX_OUTPUT:
        raise AuthError(f"{what}: headersHelper printed more than {MAX_OUTPUT // 1024} KiB")
    if code != 0:
        raise AuthError(f"{what}: headersHelper failed (exit status {code})")
    return parse_headers(b"".join(chunks), what=what)


async def _reap(process: anyio.abc.Process) -> None:
    import anyio

    with anyio.CancelScope(shield=True):
        await process.wait()
        await process.aclose()


class HeadersHelper:
    """The transports' header source for one server: the helper's headers, run lazily and
    again on `refresh()` (after a 401); one run at a time."""

    def __init__(
        self, command: str | list[str], *, name: str, timeout: float = HELPER_TIMEOUT,
        secrets: SecretValues | None = None,
    ) -> None:
        self.command = command
        #: Told each run's header values, so `--trace`/`--record` never show them.
        self.secrets = secrets
        self.what = f"server {name!r}"
        self.timeout = timeout
        self.runs = 0
        self._headers: dict[str, str] | None = None
        self._lock: anyio.Lock | None = None

    def __repr__(self) -> str:  # never show the headers
        return f"HeadersHelper({self.what}, runs={self.runs})"

    async def headers(self) -> dict[str, str]:
        """The current headers (running the helper the first time)."""
        if self._headers is None:
            await self._run(self.runs)
        assert self._headers is not None
        return self._headers

    async def refresh(self) -> None:
        """Run the helper again (a 401 said its headers no longer do)."""
        await self._run(self.runs)

    async def _run(self, seen: int) -> None:
        import anyio

        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self.runs != seen and self._headers is not None:
                return  # another request ran it meanwhile
            self.runs += 1
            self._headers = await run_helper(self.command, what=self.what, timeout=self.timeout)
            if self.secrets is not None:
                self.secrets.add(*self._headers.values())
