#!/usr/bin/env python3
"""A small MCP server whose tools run as tasks, for the client's task tests (stdlib only).

Default: stateless 2026-07-28 with the `io.modelcontextprotocol/tasks` extension
(flat CreateTaskResult `resultType: "task"`, tasks/get with inlined result or
error or inputRequests, tasks/update, tasks/cancel). `--legacy`: 2025-11-25 core
tasks (initialize; `params.task` augmentation, nested CreateTaskResult,
tasks/get, blocking tasks/result that carries elicitation requests, tasks/list,
tasks/cancel). Over stdio, or `--http PORT` (modern only; tasks live as long as
the process, so they outlive a connection).

Tools (each one a task unless said otherwise):
  slow      completes after --work SECONDS with "done: <text>"
  stepwise  completes with "done: <text>" on its second look (tasks/get, tasks/result):
            "working" to the first, whatever the time (for tests across commands)
  ask       needs input (an elicitation) and completes with the answer
  fail      fails with JSON-RPC error -32099 "boom"
  toolerr   completes with an isError result
  forever   never finishes
  instant   a task that is already completed when created
  quick     never a task: an ordinary result
  opt       (legacy) taskSupport "optional": a task only when asked

`--record FILE` appends every received message (and HTTP headers) as JSON lines.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

JSON = dict[str, Any]
EXT = "io.modelcontextprotocol/tasks"
RELATED = "io.modelcontextprotocol/related-task"
TERMINAL = ("completed", "failed", "cancelled")

p = argparse.ArgumentParser()
p.add_argument("--legacy", action="store_true")
p.add_argument("--http", type=int)
p.add_argument("--record")
p.add_argument("--work", type=float, default=0.3)
p.add_argument("--poll-ms", type=int, default=50)
opts = p.parse_args()

lock = threading.RLock()
ids = itertools.count(1)


def record(message: Any, headers: dict[str, str] | None = None) -> None:
    if opts.record:
        with lock, open(opts.record, "a") as f:
            f.write(json.dumps({"msg": message, "headers": headers or {}}) + "\n")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def schema(**props: str) -> JSON:
    return {"type": "object", "properties": {k: {"type": v} for k, v in props.items()}}


TOOLS: list[JSON] = [
    {"name": "slow", "inputSchema": schema(text="string"), "execution": {"taskSupport": "required"}},
    {"name": "stepwise", "inputSchema": schema(text="string"), "execution": {"taskSupport": "required"}},
    {"name": "ask", "inputSchema": schema(), "execution": {"taskSupport": "required"}},
    {"name": "fail", "inputSchema": schema(), "execution": {"taskSupport": "required"}},
    {"name": "toolerr", "inputSchema": schema(), "execution": {"taskSupport": "required"}},
    {"name": "forever", "inputSchema": schema(), "execution": {"taskSupport": "required"}},
    {"name": "instant", "inputSchema": schema(), "execution": {"taskSupport": "required"}},
    {"name": "quick", "inputSchema": schema(text="string")},
    {"name": "opt", "inputSchema": schema(text="string"), "execution": {"taskSupport": "optional"}},
]


class Task:
    def __init__(self, tool: str, args: JSON, token: Any = None) -> None:
        self.id = f"task-{next(ids)}-{int(time.time() * 1000) % 100000}"
        self.token = token  # the tools/call's progress token (legacy: progress outlives the call)
        self.polls = 0
        self.looks = 0
        self.tool, self.args = tool, args
        self.status, self.message = "working", "started"
        self.created = time.monotonic()
        self.result: JSON | None = None
        self.error: JSON | None = None
        self.inputs: JSON = {}
        self.answer: Any = None

    def advance(self) -> None:
        """Move the task along (on every look at it)."""
        if self.status in TERMINAL:
            return
        tool, elapsed = self.tool, time.monotonic() - self.created
        self.looks += 1
        if (tool in ("slow", "opt") and elapsed >= opts.work) or (tool == "stepwise" and self.looks > 1):
            self.finish({"content": [{"type": "text", "text": f"done: {self.args.get('text', '')}"}]})
        elif tool == "fail":
            self.status, self.message = "failed", "it broke"
            self.error = {"code": -32099, "message": "boom"}
        elif tool == "instant":
            self.finish({"content": [{"type": "text", "text": "already done"}]})
        elif tool == "toolerr":
            self.finish({"content": [{"type": "text", "text": "bad input"}], "isError": True})
        elif tool == "ask" and self.answer is not None:
            self.finish({"content": [{"type": "text", "text": f"answer: {json.dumps(self.answer)}"}]})
        elif tool == "ask":
            self.status, self.message = "input_required", "need a name"
            self.inputs = {"name-1": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Your name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                                    "required": ["name"]}}}}
        elif tool in ("slow", "opt"):
            self.message = f"working {elapsed:.1f}s"

    def finish(self, result: JSON) -> None:
        self.status, self.message, self.result = "completed", "finished", result

    def wire(self, *, detailed: bool) -> JSON:
        if opts.legacy:
            out = {"taskId": self.id, "status": self.status, "statusMessage": self.message,
                   "createdAt": now(), "lastUpdatedAt": now(), "ttl": 60000, "pollInterval": opts.poll_ms}
            return out
        out = {"taskId": self.id, "status": self.status, "statusMessage": self.message,
               "createdAt": now(), "lastUpdatedAt": now(), "ttlMs": 60000,
               "pollIntervalMs": opts.poll_ms}
        if detailed and self.status == "completed":
            out["result"] = self.result
        if detailed and self.status == "failed":
            out["error"] = self.error
        if detailed and self.status == "input_required":
            out["inputRequests"] = self.inputs
        return out


TASKS: dict[str, Task] = {}


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def find(params: JSON) -> Task:
    task = TASKS.get(params.get("taskId"))  # type: ignore[arg-type]
    if task is None:
        raise RpcError(-32602, "Failed to retrieve task: Task not found")
    return task


def call_tool(params: JSON, declared: bool) -> JSON:
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "quick" or (name == "opt" and not (opts.legacy and "task" in params)):
        return {"content": [{"type": "text", "text": f"quick: {args.get('text', '')}"}]}
    if name not in {t["name"] for t in TOOLS}:
        raise RpcError(-32602, f"Unknown tool: {name}")
    if not declared:
        if opts.legacy:
            raise RpcError(-32601, f"Tool {name} requires task augmentation")
        raise RpcError(-32021, "Missing required client capability",
                       {"requiredCapabilities": {"extensions": {EXT: {}}}})
    task = Task(str(name), args, (params.get("_meta") or {}).get("progressToken"))
    TASKS[task.id] = task
    if name == "instant":
        task.advance()
    if opts.legacy:
        return {"task": task.wire(detailed=False)}
    return {"resultType": "task", **task.wire(detailed=False)}


def modern(method: str, params: JSON) -> JSON:
    caps = (params.get("_meta") or {}).get("io.modelcontextprotocol/clientCapabilities") or {}
    declared = EXT in (caps.get("extensions") or {})
    if method == "server/discover":
        return {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}, "extensions": {EXT: {}}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake-tasks", "version": "1"}}}
    if method == "tools/list":
        return {"tools": [{k: v for k, v in t.items() if k != "execution"} for t in TOOLS if t["name"] != "opt"],
                "ttlMs": 0}
    if method == "tools/call":
        return call_tool(params, declared)
    if method.startswith("tasks/") and not declared:
        raise RpcError(-32021, "Missing required client capability")
    with lock:
        if method == "tasks/get":
            task = find(params)
            task.advance()
            return task.wire(detailed=True)
        if method == "tasks/update":
            task = find(params)
            answer = (params.get("inputResponses") or {}).get("name-1")
            if task.status == "input_required" and isinstance(answer, dict):
                task.answer, task.status, task.inputs = answer, "working", {}
            return {}
        if method == "tasks/cancel":
            task = find(params)
            if task.status not in TERMINAL:
                task.status, task.message = "cancelled", "cancelled by request"
            return {}
    raise RpcError(-32601, f"Method not found: {method}")


# -- legacy (stdio only) ---------------------------------------------------------------

out_lock = threading.Lock()
waiting: dict[Any, JSON] = {}
answered = threading.Condition(lock)


def write(obj: JSON) -> None:
    with out_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def ask_client(task: Task) -> None:
    """Send the elicitation for a legacy `ask` task and wait for the answer."""
    request_id = f"elicit-{task.id}"
    write({"jsonrpc": "2.0", "id": request_id, "method": "elicitation/create", "params": {
        "message": "Your name?", "_meta": {RELATED: {"taskId": task.id}},
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}})
    with answered:
        answered.wait_for(lambda: request_id in waiting, timeout=30)
        reply = waiting.pop(request_id, {})
        task.answer = reply.get("result") or {"error": reply.get("error")}
        task.advance()


def legacy_result(task: Task) -> JSON:
    """tasks/result: block until the task ends (asking for input on the way)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with lock:
            task.advance()
            status = task.status
        if status == "input_required":
            ask_client(task)
            continue
        if status in TERMINAL:
            break
        time.sleep(0.02)
    if task.status == "failed":
        raise RpcError(task.error["code"], task.error["message"])  # type: ignore[index]
    if task.status != "completed":
        raise RpcError(-32603, f"Task {task.id} has no result stored")
    return {**(task.result or {}), "_meta": {RELATED: {"taskId": task.id}}}


def legacy(method: str, params: JSON) -> JSON:
    if method == "initialize":
        return {"protocolVersion": "2025-11-25", "serverInfo": {"name": "fake-tasks-legacy", "version": "1"},
                "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {},
                                                        "requests": {"tools": {"call": {}}}}}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return call_tool(params, "task" in params)
    if method == "tasks/result":
        return legacy_result(find(params))
    with lock:
        if method == "tasks/get":
            task = find(params)
            task.advance()
            if task.token is not None and task.status == "working":
                task.polls += 1
                write({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                    "progressToken": task.token, "progress": task.polls, "message": "polled"}})
            return task.wire(detailed=False)
        if method == "tasks/list":
            return {"tasks": [t.wire(detailed=False) for t in TASKS.values()]}
        if method == "tasks/cancel":
            task = find(params)
            if task.status in TERMINAL:
                raise RpcError(-32602, f"Cannot cancel task in terminal status: {task.status}")
            task.status, task.message = "cancelled", "cancelled by request"
            return task.wire(detailed=False)
    raise RpcError(-32601, f"Method not found: {method}")


def answer(message: JSON) -> JSON | None:
    method, params = message.get("method"), message.get("params") or {}
    if "id" not in message or not isinstance(method, str):
        return None
    try:
        if opts.legacy and method == "server/discover":
            raise RpcError(-32601, "Method not found: server/discover")
        result = legacy(method, params) if opts.legacy else {"resultType": "complete", **modern(method, params)}
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}
    except RpcError as exc:
        error: JSON = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}


def serve_stdio() -> None:
    def handle(message: JSON) -> None:
        reply = answer(message)
        if reply is not None:
            write(reply)

    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        record(message)
        if "method" not in message:  # a reply to our elicitation
            with answered:
                waiting[message.get("id")] = message
                answered.notify_all()
            continue
        threading.Thread(target=handle, args=(message,), daemon=True).start()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        message = json.loads(body)
        record(message, {k.lower(): v for k, v in self.headers.items()})
        reply = answer(message)
        data = json.dumps(reply).encode() if reply is not None else b""
        status = 202 if reply is None else 200
        if reply is not None and "error" in reply:
            code = reply["error"]["code"]
            status = 404 if code == -32601 else 400 if code in (-32020, -32021, -32022) else 200
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


if __name__ == "__main__":
    if opts.http:
        ThreadingHTTPServer(("127.0.0.1", opts.http), Handler).serve_forever()
    else:
        serve_stdio()
