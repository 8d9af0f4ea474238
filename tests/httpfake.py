"""A programmable HTTP server for transport tests: stdlib, 127.0.0.1, runs in a thread.

A test gives a handler `(Req) -> Reply`; every request is recorded in
`server.requests`. Replies may stream (`body` an iterable of byte chunks, sent
as they come and then the connection is closed), which is how tests build SSE
streams, truncated streams, slow servers and endless events.

`legacy_mcp()` and `modern_mcp()` are small but honest MCP servers (2025-11-25
with sessions, and stateless 2026-07-28) that tests wrap to inject faults.
"""

from __future__ import annotations

import itertools
import json
import ssl
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

JSON = dict[str, Any]


@dataclass
class Req:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def rpc(self) -> JSON:
        obj = self.json
        return obj if isinstance(obj, dict) else {}

    @property
    def rpc_method(self) -> str | None:
        return self.rpc.get("method")

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | Iterable[bytes] = b""


Handler = Callable[[Req], Reply]


def json_reply(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(obj).encode())


def result(req: Req, value: JSON, **headers: str) -> Reply:
    return json_reply({"jsonrpc": "2.0", "id": req.rpc.get("id"), "result": value}, headers=headers)


def error(req: Req | None, code: int, message: str, status: int = 200, data: Any = None) -> Reply:
    err: JSON = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    rid = req.rpc.get("id") if req is not None else None
    return json_reply({"jsonrpc": "2.0", "id": rid, "error": err}, status=status)


def sse_event(data: Any = None, *, id: str | None = None, retry: int | None = None, event: str | None = None) -> bytes:
    lines = []
    if event:
        lines.append(f"event: {event}")
    if id is not None:
        lines.append(f"id: {id}")
    if retry is not None:
        lines.append(f"retry: {retry}")
    text = "" if data is None else data if isinstance(data, str) else json.dumps(data)
    lines.append(f"data: {text}")
    return ("\n".join(lines) + "\n\n").encode()


def sse_reply(*chunks: bytes, headers: dict[str, str] | None = None, hold: threading.Event | None = None) -> Reply:
    """An SSE response; with `hold`, the stream stays open until the event is set."""

    def body() -> Iterable[bytes]:
        yield from chunks
        if hold is not None:
            hold.wait(30)

    return Reply(200, {"Content-Type": "text/event-stream", **(headers or {})}, body())


class FakeHTTP:
    """A threaded HTTP server on 127.0.0.1 calling `handler` for every request."""

    def __init__(self, handler: Handler, *, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.scheme = "https" if tls is not None else "http"
        self.requests: list[Req] = []
        self.stopping = threading.Event()
        fake = self

        class RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                req = Req(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                fake.requests.append(req)
                reply = fake.handler(req)
                self.send_response(reply.status)
                streaming = not isinstance(reply.body, bytes)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if streaming:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                elif "content-length" not in {k.lower() for k in reply.headers}:
                    self.send_header("Content-Length", str(len(reply.body)))  # type: ignore[arg-type]
                self.end_headers()
                try:
                    if isinstance(reply.body, bytes):
                        self.wfile.write(reply.body)
                    else:
                        for chunk in reply.body:
                            self.wfile.write(chunk)
                            self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_DELETE = do_PUT = _serve

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # clients that go away mid-stream are expected here

        self._server = Server(("127.0.0.1", 0), RequestHandler)
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/mcp"

    def start(self) -> FakeHTTP:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def calls(self, method: str) -> list[Req]:
        """The POSTs whose JSON-RPC method is `method`."""
        return [r for r in self.requests if r.method == "POST" and r.rpc_method == method]


ECHO_TOOL: JSON = {
    "name": "echo",
    "description": "Echo a message.",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
}


def call_result(req: Req) -> JSON:
    args = req.rpc.get("params", {}).get("arguments") or {}
    return {"content": [{"type": "text", "text": f"echo: {args.get('message', '')}"}]}


def legacy_mcp(
    *, tools: list[JSON] | None = None, sse: bool = False, version: str | None = "2025-11-25"
) -> Handler:
    """A legacy Streamable HTTP server with sessions; `sse` answers requests as SSE.

    It answers `initialize` with `version`, or with the client's version when None.
    """
    sessions = itertools.count(1)
    live: set[str] = set()

    def handle(req: Req) -> Reply:
        if req.method == "DELETE":
            live.discard(req.header("mcp-session-id") or "")
            return Reply(200)
        if req.method == "GET":
            return Reply(405)
        method = req.rpc_method
        if method == "initialize":
            sid = f"s{next(sessions)}"
            live.add(sid)
            chosen = version or req.rpc.get("params", {}).get("protocolVersion")
            return result(
                req,
                {"protocolVersion": chosen, "capabilities": {"tools": {}, "resources": {"subscribe": True}},
                 "serverInfo": {"name": "fake-legacy", "version": "1"}},
                **{"Mcp-Session-Id": sid},
            )
        if req.header("mcp-session-id") not in live:
            return error(req, -32000, "Bad Request: No valid session ID provided", status=400)
        if "id" not in req.rpc:
            return Reply(202)
        if method == "tools/list":
            value: JSON = {"tools": tools if tools is not None else [ECHO_TOOL]}
        elif method == "tools/call":
            value = call_result(req)
        elif method == "ping" or method in ("resources/subscribe", "resources/unsubscribe"):
            value = {}
        else:
            return error(req, -32601, f"Method not found: {method}")
        if sse:
            message = {"jsonrpc": "2.0", "id": req.rpc["id"], "result": value}
            return sse_reply(sse_event(message, event="message"))
        return result(req, value)

    return handle


def modern_mcp(*, tools: list[JSON] | None = None, ttl_ms: int = 0, scope: str = "public") -> Handler:
    """A stateless 2026-07-28 server (legacy requests get 400 like a modern-only server)."""

    def cacheable(value: JSON) -> JSON:
        return {**value, "resultType": "complete", "ttlMs": ttl_ms, "cacheScope": scope}

    def handle(req: Req) -> Reply:
        if req.method in ("GET", "DELETE"):
            return Reply(405)
        meta = req.rpc.get("params", {}).get("_meta") or {}
        version = meta.get("io.modelcontextprotocol/protocolVersion")
        method = req.rpc_method
        if version is None:
            return error(req, -32602, "missing _meta protocol version", status=400)
        if version != "2026-07-28":
            return error(req, -32022, "Unsupported protocol version", status=400,
                         data={"supported": ["2026-07-28"], "requested": version})
        if method == "server/discover":
            return result(req, cacheable({
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake-modern", "version": "1"}},
            }))
        if method == "tools/list":
            return result(req, cacheable({"tools": tools if tools is not None else [ECHO_TOOL]}))
        if method == "tools/call":
            return result(req, {"resultType": "complete", **call_result(req)})
        return error(req, -32601, f"Method not found: {method}", status=404)

    return handle
