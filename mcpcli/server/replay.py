"""`mcp serve --replay FILE`: a recording (`--record`) served back as a mock server.

It answers at the JSON-RPC level, so it is a `Server` whose dispatch looks the
request up in the recording instead of calling a backend; the stdio and HTTP
transports serve it unchanged.

Matching: a request matches a recorded one with the same method and the same
params, compared as JSON values (key order irrelevant), ignoring the request id
and, in `_meta`, `progressToken` and the 2026-07-28 `clientInfo` (another client,
or another version of this one, asks the same question). `initialize` and
`server/discover` are answered from the recording whatever their params, so the
client negotiates the recording's protocol revision. Each match answers with
the notifications the server sent while that request was open (in order; a
progress token is rewritten to the new request's) and then the recorded
response, error responses included. Identical requests recorded several times
are answered in recorded order, and the last answer is repeated once they are
used up. What the client sends unasked (notifications, answers to the server's
requests) is accepted in any order and not checked; the server's own requests
(sampling, roots, elicitation) are not replayed. A value the recorder redacted
matches any string, and a secret it replaced inside a string matches any text
there.

An unmatched request gets -32601 (method never recorded) or -32602 naming the
closest recorded request of that method and the params that differ.

The file is outside input: it is read line by line, each line bounded
(`MAX_LINE_BYTES`), only if it is a regular file, and every problem (not JSON,
nested too deeply, not UTF-8, too long) is a UsageError naming FILE:LINE.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from mcpcli.core.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, Request, loads
from mcpcli.core.protocol import MAX_MESSAGE_BYTES
from mcpcli.errors import RPCError, UsageError
from mcpcli.server.core import Server, ServerConnection
from mcpcli.text import REDACTED

__all__ = ["Recording", "ReplayServer", "load_recording"]

JSON = dict[str, Any]

#: Answered from the recording whatever the client asks: the handshake is the recording's.
_HANDSHAKES = frozenset({"initialize", "server/discover"})
#: `_meta` keys that say who asks rather than what: ignored when matching.
_IGNORED_META = frozenset({"progressToken", "io.modelcontextprotocol/clientInfo"})


@dataclass
class Exchange:
    """One recorded request, what the server sent while it was open, and its response."""

    method: str
    params: Any
    line: int
    notes: list[JSON] = field(default_factory=list)
    response: JSON | None = None


@dataclass
class Recording:
    """The exchanges of a recording, by method and normalised params."""

    path: str
    exchanges: list[Exchange] = field(default_factory=list)
    _by_key: dict[tuple[str, str], list[Exchange]] = field(default_factory=dict)
    _used: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, exchange: Exchange) -> None:
        self.exchanges.append(exchange)
        self._by_key.setdefault(_key(exchange.method, exchange.params), []).append(exchange)

    def answer(self, method: str, params: Any) -> Exchange:
        """The recorded exchange for this request: the next unused match, then the last again."""
        key = _key(method, params)
        matches = self._by_key.get(key)
        if not matches:
            # A value the recorder redacted matches any string in its place.
            asked = _normalise(params)
            for exchange in self.exchanges:
                if exchange.method == method and _fits(asked, _normalise(exchange.params)):
                    key = _key(method, exchange.params)
                    matches = self._by_key[key]
                    break
            else:
                raise self._unmatched(method, params)
        used = self._used.get(key, 0)
        self._used[key] = used + 1
        return matches[min(used, len(matches) - 1)]

    def server_info(self) -> JSON:
        for exchange in self.exchanges:
            result = (exchange.response or {}).get("result")
            if exchange.method == "initialize" and isinstance(result, dict):
                info = result.get("serverInfo")
                if isinstance(info, dict):
                    return info
        return {"name": "mcp-replay", "version": "0"}

    def _unmatched(self, method: str, params: Any) -> RPCError:
        same = [e for e in self.exchanges if e.method == method]
        if not same:
            methods = sorted({e.method for e in self.exchanges})
            return RPCError(
                METHOD_NOT_FOUND,
                f"Method not found: {method} is not in the recording {self.path} "
                f"(recorded: {', '.join(methods)})",
            )
        asked = _normalise(params)
        best = min(same, key=lambda e: len(_differences(asked, _normalise(e.params))))
        paths = _differences(asked, _normalise(best.params))
        shown = json.dumps(_normalise(best.params), sort_keys=True, ensure_ascii=False)
        if len(shown) > 200:
            shown = shown[:197] + "..."
        return RPCError(
            INVALID_PARAMS,
            f"no recorded {method} request has these params; the closest (line {best.line} of "
            f"{self.path}) differs in {', '.join(paths)}: {shown}",
        )


def _normalise(params: Any) -> Any:
    """Params as compared: the ignored `_meta` keys dropped, then an empty `_meta` and
    empty params dropped (absent and `{}` mean the same)."""
    if not isinstance(params, dict):
        return {} if params is None else params
    out = dict(params)
    meta = out.get("_meta")
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if k not in _IGNORED_META}
        if meta:
            out["_meta"] = meta
        else:
            del out["_meta"]
    return out


def _fits(asked: Any, recorded: Any) -> bool:
    """Whether `asked` is `recorded` with its redacted strings filled in."""
    if isinstance(recorded, str) and REDACTED in recorded:
        if not isinstance(asked, str):
            return False
        if recorded == REDACTED:
            return True
        import re

        # A known secret replaced inside a string (`Bearer «redacted»`): any text in its place.
        pattern = ".+".join(re.escape(part) for part in recorded.split(REDACTED))
        return re.fullmatch(pattern, asked, re.DOTALL) is not None
    if isinstance(asked, dict) and isinstance(recorded, dict):
        return asked.keys() == recorded.keys() and all(_fits(asked[k], recorded[k]) for k in asked)
    if isinstance(asked, list) and isinstance(recorded, list):
        return len(asked) == len(recorded) and all(_fits(a, r) for a, r in zip(asked, recorded, strict=True))
    return bool(asked == recorded)


def _key(method: str, params: Any) -> tuple[str, str]:
    if method in _HANDSHAKES:
        return method, ""
    return method, json.dumps(_normalise(params), sort_keys=True, separators=(",", ":"))


def _differences(a: Any, b: Any, prefix: str = "") -> list[str]:
    """The dotted paths where two JSON values differ (objects compared key by key)."""
    if isinstance(a, dict) and isinstance(b, dict):
        paths: list[str] = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                paths.append(prefix + k)
            elif a[k] != b[k]:
                paths.extend(_differences(a[k], b[k], prefix + k + "."))
        return paths
    return [] if a == b else [prefix.rstrip(".") or "params"]


# -- reading -------------------------------------------------------------------------


#: A line holds one message (at most MAX_MESSAGE_BYTES on the wire) and its `t` and `dir`;
#: twice that leaves room for the recorder's own escapes and redactions. A longer line is
#: refused as soon as the bound is read, so memory stays bounded by it, not by the file.
MAX_LINE_BYTES = 2 * MAX_MESSAGE_BYTES


def load_recording(path: str) -> Recording:
    """Read a recording; a bad file is a `UsageError` naming file:line."""
    recording = Recording(path)
    open_requests: dict[Any, Exchange] = {}
    with contextlib.closing(_lines(path)) as numbered:  # the file is closed on an error too
        for number, text in numbered:
            if not text.strip():
                continue
            try:
                entry = _entry(path, number, text)
                direction, msg = entry["dir"], entry["msg"]
                if direction == "meta":
                    open_requests = {}  # a new run: ids start again
                    continue
                has_id = "id" in msg
                if direction == "send":
                    if has_id and isinstance(msg.get("method"), str):
                        open_requests[_id_key(msg["id"])] = Exchange(msg["method"], msg.get("params"), number)
                    continue
                if has_id and "method" not in msg:  # a response
                    exchange = open_requests.pop(_id_key(msg["id"]), None)
                    if exchange is not None:
                        exchange.response = msg
                        recording.add(exchange)
                elif not has_id and open_requests:  # a notification while requests were open
                    _owner(open_requests, msg).notes.append(msg)
            except RecursionError:  # parsed, but too deep to key (json.dumps recurses too)
                raise UsageError(f"{path}:{number}: nested too deeply") from None
    if not recording.exchanges:
        raise UsageError(f"{path}: no recorded request with its response", hint="record one with --record FILE")
    return recording


def _lines(path: str) -> Generator[tuple[int, str], None, None]:
    """The file's lines, numbered, one at a time and each at most MAX_LINE_BYTES.

    Only a regular file is read: a FIFO is opened without blocking (no writer would
    hang the open) and refused with a device such as /dev/zero, which never ends."""
    import os
    import stat

    def cannot(reason: str) -> UsageError:
        return UsageError(f"--replay: cannot read {path}: {reason}")

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise cannot(exc.strerror or str(exc)) from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise cannot("not a regular file (give a recording made with --record)")
        os.set_blocking(fd, True)
        number = 0
        while True:
            try:
                raw = f.readline(MAX_LINE_BYTES + 1)
            except OSError as exc:
                raise cannot(exc.strerror or str(exc)) from None
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise UsageError(f"{path}:{number}: line longer than {MAX_LINE_BYTES} bytes",
                                 hint="a --record file has one {t, dir, msg} object per line")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise UsageError(f"{path}:{number}: not UTF-8 text") from None
            yield number, text


def _id_key(value: Any) -> str:
    return json.dumps(value)


def _owner(open_requests: dict[Any, Exchange], note: JSON) -> Exchange:
    """The open request a notification belongs to: the one its progress token names, else
    the latest one sent."""
    params = note.get("params")
    token = params.get("progressToken") if isinstance(params, dict) else None
    if token is not None:
        for exchange in open_requests.values():
            meta = exchange.params.get("_meta") if isinstance(exchange.params, dict) else None
            if isinstance(meta, dict) and meta.get("progressToken") == token:
                return exchange
    return list(open_requests.values())[-1]


def _entry(path: str, number: int, text: str) -> JSON:
    def bad(problem: str) -> UsageError:
        return UsageError(f"{path}:{number}: {problem}", hint="a --record file has one {t, dir, msg} object per line")

    try:
        entry = loads(text)
    except json.JSONDecodeError as exc:
        raise bad(f"not JSON ({exc.msg})") from None
    except ValueError as exc:  # a number too long to read, nesting too deep
        raise bad(f"not JSON ({exc})") from None
    if not isinstance(entry, dict):
        raise bad("expected a JSON object")
    if entry.get("dir") not in ("meta", "send", "recv"):
        raise bad(f"dir must be meta, send or recv, not {json.dumps(entry.get('dir'))}")
    t = entry.get("t")
    if not isinstance(t, (int, float)) or isinstance(t, bool):
        raise bad("t must be a number (seconds)")
    msg = entry.get("msg")
    if not isinstance(msg, dict):
        raise bad("msg must be a JSON object")
    if entry["dir"] != "meta":
        if "id" not in msg and not isinstance(msg.get("method"), str):
            raise bad("msg is not a JSON-RPC message (no method and no id)")
        if "id" in msg and "method" not in msg and "result" not in msg and not isinstance(msg.get("error"), dict):
            raise bad("msg is a response without result or error")
    return entry


# -- serving -------------------------------------------------------------------------


class _ReplayBackend:
    """The `Backend` the `Server` base needs: nothing is ever dispatched to it."""

    def __init__(self, recording: Recording) -> None:
        self._info = recording.server_info()

    def server_info(self) -> JSON:
        return self._info

    def instructions(self) -> str | None:
        return None

    def capabilities(self) -> JSON:
        return {}

    def set_change_listener(self, listener: Callable[..., Any] | None) -> None:
        return None

    async def list_tools(self) -> list[JSON]:
        return []

    async def call_tool(self, name: str, arguments: JSON, ctx: Any) -> JSON:  # pragma: no cover
        raise RPCError(METHOD_NOT_FOUND, "replay")

    async def list_resources(self) -> list[JSON]:
        return []

    async def list_resource_templates(self) -> list[JSON]:
        return []

    async def read_resource(self, uri: str, ctx: Any) -> JSON:  # pragma: no cover
        raise RPCError(METHOD_NOT_FOUND, "replay")

    async def list_prompts(self) -> list[JSON]:
        return []

    async def get_prompt(self, name: str, arguments: dict[str, str], ctx: Any) -> JSON:  # pragma: no cover
        raise RPCError(METHOD_NOT_FOUND, "replay")

    async def complete(self, ref: JSON, argument: JSON, context: JSON) -> JSON:  # pragma: no cover
        raise RPCError(METHOD_NOT_FOUND, "replay")


class ReplayServer(Server):
    """A `Server` that answers every request from a recording."""

    def __init__(self, recording: Recording) -> None:
        super().__init__(_ReplayBackend(recording))
        self.recording = recording

    async def _dispatch(self, conn: ServerConnection, request: Request, ctx: Any) -> JSON:
        result = await self._answer(request, ctx)
        if request.method == "initialize":
            version = result.get("protocolVersion")
            conn.version = version if isinstance(version, str) else None
            if conn.peer is not None:
                conn.peer.allow_batch = version == "2025-03-26"
        return result

    async def handle_modern(self, request: Request, outlet: Any, **_: Any) -> JSON:
        return await self._answer(request, outlet)

    async def _answer(self, request: Request, outlet: Any) -> JSON:
        exchange = self.recording.answer(request.method, request.params)
        token = _progress_token(request.params)
        for note in exchange.notes:
            params = note.get("params")
            if isinstance(params, dict) and "progressToken" in params:
                if token is None:
                    continue  # the client did not ask for progress this time
                params = {**params, "progressToken": token}
            await outlet.notify(note["method"], params)
        response = exchange.response or {}
        error = response.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            raise RPCError(code if isinstance(code, int) else INTERNAL_ERROR, str(error.get("message", "")),
                           error.get("data"))
        result = response.get("result")
        return result if isinstance(result, dict) else {}


def _progress_token(params: Any) -> Any:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("progressToken") if isinstance(meta, dict) else None
