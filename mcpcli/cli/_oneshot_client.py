"""The one-shot stdio fast path's client (`mcpcli.cli.oneshot`): `Client` and `Session` for
one `tools call`, synchronous, over a server process's pipes.

Imported only once the server is started (it boots while this loads). Mirrors
`mcpcli.client`, `mcpcli.session` and `StdioTransport` for the common case;
`_Fallback` says the command is the full path's after all (nothing final yet).
"""

from __future__ import annotations

import os
import sys
import time

from mcpcli import jsonrpc
from mcpcli.errors import (
    MessageTooLarge,
    ProtocolError,
    RequestTimeout,
    RPCError,
    ServerExited,
    StrayLine,
    UnsupportedVersionError,
    UsageError,
    handshake_timeout,
)
from mcpcli.handshake import (
    Handshake,
    next_round,
    parse_discover,
    parse_initialize,
    request_meta,
    round_kind,
    rpc_error_from,
    with_meta,
)
from mcpcli.protocol import (
    CLIENT_CAPABILITIES_KEY,
    LATEST_LEGACY,
    LATEST_MODERN,
    MAX_INPUT_ROUNDS,
    MAX_MESSAGE_BYTES,
    MAX_PAGES,
    RELATED_TASK_KEY,
    TASKS_EXTENSION,
    input_requests,
    is_modern_error,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable
    from typing import Any, TypeAlias

    JSON: TypeAlias = dict[str, Any]

__all__ = ["GONE", "Fallback", "Stderr", "StdioServer", "SyncClient", "call_tool"]

READ_CHUNK = 256 * 1024
#: How much stderr is held before the call is sent, at most.
HELD_MAX = 4 * 1024 * 1024
#: `_call`'s status when our stdout's reader left (`mcp ... | head`): exit 0, quietly.
GONE = -1


class Fallback(Exception):
    """Off the common road before the call was sent: the full path runs the command."""


class _HandshakeTimeout(Exception):
    """--timeout ran out during the probe and handshake (they share it)."""


class Stderr:
    """Our stderr, held until the call is sent (dropped if the full path takes over)."""

    def __init__(self) -> None:
        self.held: list[bytes] | None = []
        self.size = 0
        self.dropped = False

    def write(self, data: bytes) -> None:
        if self.dropped:
            return
        if self.held is not None:
            self.held.append(data)
            self.size += len(data)
            if self.size > HELD_MAX:
                self.release()  # a server this chatty is shown as it talks (a fallback now repeats it)
            return
        try:
            sys.stderr.buffer.write(data)
            sys.stderr.buffer.flush()
        except (OSError, ValueError):
            pass

    def line(self, text: str) -> None:
        self.write((text + "\n").encode("utf-8", "backslashreplace"))

    def release(self) -> None:
        held, self.held = self.held, None
        if held:
            self.write(b"".join(held))


class StdioServer:
    """The server process and its pipes, driven synchronously."""

    def __init__(self, process: subprocess.Popen[bytes], err: Stderr, quiet: bool) -> None:
        import selectors
        from collections import deque

        from mcpcli.transports._spawn import STDERR_HELD_MAX, STDERR_TAIL_LINES

        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        self.process = process
        self.err = err
        self.quiet = quiet
        self.stdin = process.stdin.fileno()
        self.stdout = process.stdout.fileno()
        self.stderr = process.stderr.fileno()
        for fd in (self.stdin, self.stdout, self.stderr):
            os.set_blocking(fd, False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)
        self.selector.register(self.stderr, selectors.EVENT_READ)
        self.items: deque[Any] = deque()
        from mcpcli.transports import LineSplitter

        self.lines = LineSplitter(MAX_MESSAGE_BYTES)
        self.partial = b""
        self.tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self.eof = False
        self.stdin_gone = False
        #: Its stderr while the era probe is out (`StdioTransport.hold_output`); None: passed on.
        self.held: list[bytes] | None = None if quiet else []
        self.held_size = 0
        self.held_max = STDERR_HELD_MAX
        #: Its stderr is discarded: it ended on the era probe and is started again.
        self.dropping = False
        self.stopped = False

    def release(self, *, drop: bool = False) -> None:
        """`StdioTransport.release_output`: pass on what was held, or discard it for good."""
        held, self.held = self.held, None
        if drop:
            self.dropping = True
        elif held:
            self.err.write(b"".join(held))

    # -- reading -------------------------------------------------------------------

    def next_item(self, deadline: float) -> Any:
        """The next message or problem from the server; None once `deadline` has passed."""
        while not self.items:
            if self.eof:
                raise AssertionError("read past the end")  # pragma: no cover - the caller stops
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._pump(remaining)
        return self.items.popleft()

    def _pump(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            if key.fd == self.stderr:
                self._read_stderr()
            else:
                self._read_stdout()
                if self.eof:
                    return

    def _read_stderr(self) -> bool:
        """Relay what the server wrote on stderr; False at its end (or nothing to read)."""
        try:
            chunk = os.read(self.stderr, READ_CHUNK)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            self.selector.unregister(self.stderr)
            self.stderr = -1
            return False
        if self.held is not None:
            self.held.append(chunk)
            self.held_size += len(chunk)
            if self.held_size > self.held_max:
                self.release()
        elif not self.quiet and not self.dropping:
            self.err.write(chunk)
        lines = (self.partial + chunk).split(b"\n")
        self.partial = lines.pop()[-4096:]
        for raw in lines:
            text = raw.decode("utf-8", "replace").strip()
            if text:
                self.tail.append(text[:300])
        return True

    def drain_stderr(self) -> None:
        while self.stderr >= 0 and self._read_stderr():
            pass

    def _read_stdout(self) -> None:
        from mcpcli.transports import line_item

        try:
            chunk = os.read(self.stdout, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._ended("")
            return
        for line in self.lines.feed(chunk):
            item = line_item(line, "server wrote")
            if item is not None:
                self.items.append(item.message if not isinstance(item, Exception) else item)
        if self.lines.overflow:
            import signal

            from mcpcli.transports._spawn import KILL_GRACE

            self.items.append(MessageTooLarge(f"server sent a message larger than {MAX_MESSAGE_BYTES} bytes"))
            self.signal_group(signal.SIGKILL)
            self.wait_exit(KILL_GRACE)
            self._ended("after an oversized message", flush=False)

    def _ended(self, when: str, *, flush: bool = True) -> None:
        """The server's stdout ended: what it left, then how it went (`StdioTransport._exited`)."""
        from mcpcli.transports import line_item
        from mcpcli.transports._spawn import FLUSH_GRACE

        rest = self.lines.rest()
        if flush and rest.strip():
            item = line_item(rest, "server wrote")
            if item is not None:
                self.items.append(item.message if not isinstance(item, Exception) else item)
        self.selector.unregister(self.stdout)
        if flush:
            self.wait_exit(FLUSH_GRACE)
        self.drain_stderr()
        from mcpcli.transports._spawn import exit_message

        code = self.process.returncode
        self.items.append(ServerExited(exit_message(code, when, self.tail), returncode=code))
        self.eof = True

    # -- writing -------------------------------------------------------------------

    def send(self, message: Any, deadline: float | None) -> None:
        """Write one message; a server that stopped reading is found out by the reader, or,
        when it stops reading while alive, by the request's clock: past `deadline` its stdin
        counts as stuck and nothing more is written (`StdioTransport` leaves it queued)."""
        import select

        view = memoryview(jsonrpc.encode(message) + b"\n")
        while view and not self.stdin_gone:
            try:
                view = view[os.write(self.stdin, view):]
            except BlockingIOError:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    self.stdin_gone = True
                    return
                # Keep its stdout and stderr flowing meanwhile, or a full pipe deadlocks us both.
                readable = [fd for fd in (self.stdout, self.stderr) if fd >= 0 and not self.eof]
                ready, _, _ = select.select(readable, [self.stdin], [], remaining)
                if self.stderr in ready:
                    self._read_stderr()
                if self.stdout in ready and not self.eof:
                    self._read_stdout()
            except OSError:
                self.stdin_gone = True

    # -- the process -----------------------------------------------------------------

    def signal_group(self, sig: int) -> bool:
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def wait_exit(self, timeout: float | None) -> bool:
        """Wait (relaying stderr) until the server exits or `timeout` passes; True if it did."""
        import subprocess

        process = self.process
        if process.poll() is not None:
            return True
        try:
            pidfd = os.pidfd_open(process.pid)
        except (AttributeError, OSError):
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                return False
            return True
        import select

        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return process.poll() is not None
                watched = [pidfd] + ([self.stderr] if self.stderr >= 0 else [])
                ready, _, _ = select.select(watched, [], [], remaining)
                if self.stderr in ready:
                    self._read_stderr()
                if pidfd in ready:
                    process.wait()
                    return True
        finally:
            os.close(pidfd)

    def stop(self) -> None:
        """Close stdin, give the server a moment, then TERM and KILL its group (as
        `StdioTransport.shutdown`), then end whatever it left in the group."""
        import signal

        from mcpcli.transports._spawn import EOF_GRACE, TERM_GRACE

        if self.stopped:
            return
        self.stopped = True
        assert self.process.stdin is not None
        try:
            self.process.stdin.close()
        except OSError:
            pass
        for sig, grace in ((None, EOF_GRACE), (signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, None)):
            if self.process.poll() is not None:
                break
            if sig is not None:
                self.signal_group(sig)
            self.wait_exit(grace)
        if self.signal_group(0):
            self.signal_group(signal.SIGTERM)
            self.signal_group(signal.SIGKILL)
        self.drain_stderr()
        self.selector.close()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


class SyncClient:
    """What `Client` and `Session` do for one tools/call, without an event loop."""

    def __init__(self, server: StdioServer, prog: str, timeout: float, max_timeout: float, quiet: bool,
                 trace: JSON | None = None) -> None:
        from mcpcli import __version__

        self.server = server
        self.prog = prog
        self.timeout = timeout
        self.max_timeout = max_timeout
        self.quiet = quiet
        #: The trace context requests carry in their `_meta` (`fast.trace_meta`).
        self.trace = trace or {}
        self.ids = 0
        self.closed: ServerExited | None = None
        self.era = "legacy"
        self.protocol_version = ""
        self.capabilities: JSON = {}
        self.server_info: JSON = {}
        self.tools: dict[str, JSON] | None = None
        self.client_info = {"name": "mcpcli", "title": "mcpcli", "version": __version__}
        #: While negotiating: when --timeout runs out for the whole set-up.
        self.handshake_deadline: float | None = None
        #: How long a write may wait for a server that does not read (the request's clock).
        self.write_by: float | None = None
        #: Starts the server again (after it ended on the era probe).
        self.respawn: Callable[[], StdioServer] | None = None

    def warn(self, message: str) -> None:
        from mcpcli.text import one_line

        self.server.err.line(f"{self.prog}: warning: {one_line(message, newline=' | ')}")

    # -- sending -----------------------------------------------------------------------

    def notify(self, method: str, params: JSON | None = None) -> None:
        if self.closed is not None:
            raise self.closed
        self.server.send(jsonrpc.Notification(method, params), self.write_by)

    def request(self, method: str, params: JSON | None, *, timeout: float | None = None,
                progress_token: bool = True, cancel_on_timeout: bool = True) -> JSON:
        """`Session.request`: send, answer what the server asks meanwhile, return the result."""
        if self.closed is not None:
            raise self.closed
        self.ids += 1
        request_id = self.ids
        if self.trace:
            from mcpcli.tracecontext import carried_by

            if carried_by(method):
                params = with_meta(params or {}, self.trace)  # as `Client._send`, before the token
        if progress_token:
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta["progressToken"] = request_id
            params["_meta"] = meta
        tmo = self.timeout if timeout is None else timeout
        now = time.monotonic()
        hard = now + self.max_timeout
        deadline = min(now + tmo, hard)
        last_progress: list[float] = []
        self.write_by = deadline if self.handshake_deadline is None else min(deadline, self.handshake_deadline)
        try:
            # Inside the try: a Ctrl-C or SIGTERM landing right after the write still
            # cancels the request the server has (it may be reading it already).
            self.server.send(jsonrpc.Request(method, params, request_id), self.write_by)
            while True:
                limit = deadline
                if self.handshake_deadline is not None:
                    limit = min(limit, self.handshake_deadline)
                self.write_by = limit
                # A clock runs out however busy the server keeps us (a flood of messages).
                item = self.server.next_item(limit) if time.monotonic() < limit else None
                if item is None:
                    if self.handshake_deadline is not None and time.monotonic() >= self.handshake_deadline:
                        raise _HandshakeTimeout
                    if time.monotonic() < deadline:
                        continue
                    if cancel_on_timeout and method != "initialize":
                        self._cancel(request_id, "timed out")
                    raise RequestTimeout(f"{method} timed out after {time.monotonic() - now:.1f}s")
                if isinstance(item, (jsonrpc.Response, jsonrpc.ErrorResponse)) and item.id == request_id \
                        and type(item.id) is type(request_id):
                    if isinstance(item, jsonrpc.Response):
                        return item.result
                    raise rpc_error_from(item.error)
                if isinstance(item, jsonrpc.Notification) and item.method == "notifications/progress":
                    token = (item.params or {}).get("progressToken")
                    if _is_key(token, request_id):
                        value = (item.params or {}).get("progress")
                        if isinstance(value, (int, float)):
                            if last_progress and value <= last_progress[0]:
                                continue
                            last_progress[:] = [float(value)]
                        deadline = min(time.monotonic() + tmo, hard)
                        continue
                if isinstance(item, ProtocolError) and _is_key(item.request_id, request_id):
                    raise item
                self._dispatch(item)
        except KeyboardInterrupt:
            if method != "initialize" and self.closed is None:
                self._cancel(request_id, "cancelled by the user")
            raise

    def _cancel(self, request_id: int, reason: str) -> None:
        try:
            self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason})
        except ServerExited:
            pass

    # -- what the server sends unasked -------------------------------------------------------

    def _dispatch(self, item: Any) -> None:
        if isinstance(item, ServerExited):
            self.closed = item
            raise item
        if isinstance(item, Exception):  # a garbage line, an oversized message
            if not (self.quiet and isinstance(item, StrayLine)):  # -q drops stray lines
                self.warn(str(item))
        elif isinstance(item, jsonrpc.Batch):
            self._reply(jsonrpc.ErrorResponse(None, jsonrpc.ErrorObject(
                jsonrpc.INVALID_REQUEST, "JSON-RPC batches are not supported in this protocol version")))
        elif isinstance(item, jsonrpc.Request):
            self._answer(item)
        elif isinstance(item, jsonrpc.Notification):
            if item.method == "notifications/message" and not self.quiet:
                from mcpcli.text import UNASKED_LOG_FLOOR, log_line, log_rank

                params = item.params or {}
                if log_rank(params.get("level")) >= log_rank(UNASKED_LOG_FLOOR):
                    self.server.err.line(log_line(params))
        elif isinstance(item, jsonrpc.ErrorResponse) and item.id is None:
            self.warn(str(rpc_error_from(item.error)))

    def _reply(self, message: Any) -> None:
        if self.closed is None or isinstance(message, (jsonrpc.Response, jsonrpc.ErrorResponse)):
            self.server.send(message, self.write_by)

    def _answer(self, request: jsonrpc.Request) -> None:
        """`Client._on_request` with the features of a command without a terminal."""
        params = request.params or {}
        try:
            result = self._serve(request.method, params)
        except RPCError as exc:
            self._reply(jsonrpc.ErrorResponse(request.id, jsonrpc.ErrorObject(exc.code, exc.rpc_message, exc.data)))
            return
        meta = params.get("_meta")
        related = meta.get(RELATED_TASK_KEY) if isinstance(meta, dict) else None
        if isinstance(related, dict):
            result = dict(result)
            result["_meta"] = {**(result.get("_meta") or {}), RELATED_TASK_KEY: related}
        self._reply(jsonrpc.Response(request.id, result))

    def _serve(self, method: str, params: JSON) -> JSON:
        if method == "ping":
            return {}
        if method == "elicitation/create":
            # `_elicit.decline_with_notice`: no terminal, no --elicit-json/--elicit-defaults.
            from mcpcli.text import printable

            message = printable(str(params.get("message", "")), keep_newlines=False)
            self.warn(f"declined the server's request for input ({message[:120]}); "
                      "answer with --elicit-json or --elicit-defaults, or run on a terminal")
            return {"action": "decline"}
        raise RPCError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")

    # -- the era ---------------------------------------------------------------------------

    def _capabilities(self, *, tasks: bool = False) -> JSON:
        caps: JSON = {"elicitation": {"form": {}}}
        if tasks:
            caps["extensions"] = {TASKS_EXTENSION: {}}
        return caps

    def _meta(self, version: str) -> JSON:
        return request_meta(version, self.client_info, self._capabilities())

    def negotiate(self, command_line: list[str], probe_timeout: float) -> None:
        """`Client._negotiate` for a stdio server, its common roads only (else `Fallback`)."""
        import json

        from mcpcli import cache

        key = "stdio:" + json.dumps(command_line)
        self.handshake_deadline = time.monotonic() + self.timeout
        try:
            record = cache.load(key, "era")
            remembered = record.get("result") if record else None
            if isinstance(remembered, dict) and remembered.get("era") == "legacy":
                self.server.release()  # no probe
                try:
                    self._initialize()
                except (RPCError, ProtocolError) as exc:
                    raise Fallback from exc  # the full path forgets the era and probes
                if _version_of(self.server_info) != remembered.get("version"):
                    cache.forget(key, "era")  # upgraded: probe again next time
                return
            try:
                modern = self._probe(min(probe_timeout, self.timeout))
            except ServerExited:
                self._restart()  # an rmcp server ends at a first message that is not initialize
                modern = False
            self.server.release()
            if modern:
                return
            try:
                self._initialize()
            except (RPCError, ProtocolError) as exc:
                raise Fallback from exc  # e.g. a slow modern server refusing initialize
            cache.store(key, "era", {"era": "legacy", "version": _version_of(self.server_info)})
        except _HandshakeTimeout:
            raise handshake_timeout(self.timeout) from None
        finally:
            self.handshake_deadline = None
            self.server.release()

    def _restart(self) -> None:
        """The server ended on the probe, unanswered: stop it, unheard, and start it again
        (`Client._negotiate_within`); ids start again with the new connection."""
        if self.respawn is None:
            raise self.closed or ServerExited("server closed its stdout")
        self.server.release(drop=True)
        self.server.stop()
        self.server = self.respawn()
        self.closed = None
        self.ids = 0

    def _probe(self, probe_timeout: float) -> bool:
        """`Client._discover(probe=True)`: True for a modern server, False for a legacy one."""
        try:
            result = self.request("server/discover", {"_meta": self._meta(LATEST_MODERN)},
                                  timeout=probe_timeout, progress_token=False, cancel_on_timeout=False)
        except UnsupportedVersionError as exc:
            raise Fallback from exc
        except RPCError as exc:
            if is_modern_error(exc.code, exc.data):
                raise Fallback from exc
            return False
        except ProtocolError as exc:
            raise Fallback from exc  # a broken answer: the full path decides
        except RequestTimeout:
            return False
        adopted = parse_discover(result, LATEST_MODERN)
        if adopted is None:
            raise Fallback
        self._adopt(adopted)
        return True

    def _adopt(self, adopted: Handshake) -> None:
        self.era = adopted.era
        self.protocol_version = adopted.protocol_version
        self.capabilities = adopted.capabilities
        self.server_info = adopted.server_info

    def _initialize(self) -> None:
        result = self.request("initialize", {
            "protocolVersion": LATEST_LEGACY, "capabilities": self._capabilities(),
            "clientInfo": self.client_info}, progress_token=False)
        self._adopt(parse_initialize(result))
        self.notify("notifications/initialized")

    # -- operations --------------------------------------------------------------------------

    def era_request(self, method: str, params: JSON) -> JSON:
        """`Client._request`: legacy as is; modern with its `_meta`, answering input requests."""
        if self.era == "legacy":
            return self.request(method, params)
        base = params
        for _round in range(MAX_INPUT_ROUNDS):
            meta = self._meta(self.protocol_version)
            if method == "tools/call":
                meta[CLIENT_CAPABILITIES_KEY] = self._capabilities(tasks=True)
            sent = with_meta(base, meta)
            result = self.request(method, sent)
            kind = round_kind(method, result, creates_tasks=method == "tools/call",
                              takes_input=method == "tools/call")
            if kind != "input":
                return result
            base = next_round(params, result, self._fulfil(result.get("inputRequests")))
        raise ProtocolError(f"{method}: the server kept asking for input ({MAX_INPUT_ROUNDS} rounds)")

    def _fulfil(self, requests: Any) -> JSON:
        return {key: self._serve(method, params) for key, method, params in input_requests(requests)}

    def list_tools(self, *, cache_target: str | None = None) -> JSON:
        """`Client.list_tools` (every page); a repeated or endless cursor is the full path's to
        word. With a named target, a 2026-07-28 server's fresh cached listing is reused, and
        a live one stored (for completion, and the next call)."""
        from mcpcli import cache

        if cache_target and self.era == "modern":
            cached = cache.fresh(cache_target, "tools/list")
            if cached is not None and isinstance(cached.get("tools"), list):
                self._set_tools(cached["tools"])
                return cached
        items: list[Any] = []
        seen: set[str] = set()
        first: JSON | None = None
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            result = self.era_request("tools/list", {"cursor": cursor} if cursor is not None else {})
            if first is None:
                first = result
            page = result.get("tools")
            if isinstance(page, list):
                items.extend(page)
            nxt = result.get("nextCursor")
            if not isinstance(nxt, str):
                break
            if nxt in seen:
                raise Fallback
            seen.add(nxt)
            cursor = nxt
        else:
            raise Fallback
        listing = dict(first or {})
        listing["tools"] = items
        listing.pop("nextCursor", None)
        if cache_target:
            cache.remember(cache_target, "tools/list", listing)
        self._set_tools(items)
        return listing

    def _set_tools(self, items: list[Any]) -> None:
        self.tools = {t["name"]: t for t in items if isinstance(t, dict) and isinstance(t.get("name"), str)}


def _is_key(value: Any, request_id: int) -> bool:
    """Whether `value` finds `request_id` in a dict keyed by ids (as the session's lookup does)."""
    try:
        return {request_id: True}.get(value, False)
    except TypeError:
        return False


def _version_of(server_info: JSON) -> str:
    return f"{server_info.get('name', '')} {server_info.get('version', '')}".strip()


def _accepts_tasks(capabilities: JSON) -> bool:
    """`tasks.server_accepts_tasks` (`mcpcli.tasks` imports anyio)."""
    tasks = capabilities.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    tools = requests.get("tools") if isinstance(requests, dict) else None
    return isinstance(tools, dict) and isinstance(tools.get("call"), dict)


def _wants_task(client: SyncClient, tool: JSON | None) -> bool:
    """A call the full path would run as a task (`tasks.should_augment` in "auto" mode, or a
    2026-07-28 server with the tasks extension, which may answer with one)."""
    if client.era == "modern":
        extensions = client.capabilities.get("extensions")
        return isinstance(extensions, dict) and TASKS_EXTENSION in extensions
    if not _accepts_tasks(client.capabilities):
        return False
    execution = tool.get("execution") if isinstance(tool, dict) else None
    return isinstance(execution, dict) and execution.get("taskSupport") == "required"


def call_tool(client: SyncClient, call: dict[str, Any], command_line: list[str], target: str | None,
          probe_timeout: float) -> int:
    """Negotiate, list, type and check the arguments, call, print: `mcp tools call`'s body."""
    from mcpcli.args import build_arguments, read_json_source

    tool = call["tool"]
    base = read_json_source(call["json"]) if call["json"] is not None else None
    client.negotiate(command_line, probe_timeout)
    schema = None
    validate = call["validate"]
    if validate or call["args"]:
        client.list_tools(cache_target=target)
        assert client.tools is not None
        definition = client.tools.get(tool)
        if definition is None and validate:
            # A capability the one-shot path never declares (sampling, URL elicitation, roots)
            # may hide it: the full path says so (`mcpcli.hidden_tools`).
            raise Fallback
        schema = definition.get("inputSchema") if definition is not None else None
    arguments = build_arguments(call["args"], schema=schema, base=base)
    if validate and isinstance(schema, dict):
        from mcpcli.validation import check

        check(schema, arguments)
    if client.era == "legacy" and client.tools is None and _accepts_tasks(client.capabilities):
        client.list_tools()  # `tasks.augment` looks the tool up
    if _wants_task(client, (client.tools or {}).get(tool)):
        raise Fallback
    client.server.err.release()  # from here on, what happens is final
    result = client.era_request("tools/call", {"name": tool, "arguments": arguments})
    if client.era == "modern" and result.get("resultType") == "task":
        raise ProtocolError("the server answered with a task, which the one-shot path cannot follow",
                            hint="run it again with MCPCLI_NO_FAST_PATH=1")
    from mcpcli.cli.fast import emit

    try:
        failed = emit(result, call)
    except BrokenPipeError:
        return GONE
    if failed is not None:
        raise UsageError(failed)
    return 1 if result.get("isError") else 0
