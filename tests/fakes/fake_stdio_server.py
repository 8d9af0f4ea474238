#!/usr/bin/env python3
"""A scriptable MCP stdio server for fault tests (stdlib only, starts fast).

Behaviour flags (any combination):
  --modern              answer server/discover (2026-07-28) instead of -32601
  --silent-probe        never answer unknown methods (a legacy server that stays silent)
  --garbage             write non-JSON-RPC lines between real messages
  --exit-before-init N  write to stderr and exit with code N before answering anything
  --crash-on-call N     exit with code N when tools/call arrives
  --never-answer        never answer tools/call
  --progress-forever    answer tools/call never, but send progress every 50 ms
  --huge N              answer tools/call with a single line of N bytes
  --stubborn            ignore stdin EOF and SIGTERM, and fork a grandchild that sleeps
  --record FILE         append every received message to FILE (one JSON per line)
  --starts FILE         append a line to FILE when it starts (how often it was started)
  --log-stderr          write a line to stderr for every request
  --evil TEXT           TEXT is the echo tool's description, the message of a JSON-RPC
                        error for tools/call of `fail`, and a log message sent before
                        every tools/call answer (terminal-safety tests)
  --sample N            on tools/call, first ask the client for sampling with an N-byte
                        prompt; the tool's text is the client's answer (as JSON)
  --broken KIND         answer tools/call with a broken line that still carries its id,
                        then stay silent: utf8 (invalid UTF-8), deep (nested too deeply),
                        truncated (cut-off JSON)
  --broken-discover     answer server/discover with a cut-off line that carries its id
  --odd-tools           also list tools no client can use: a name that is a list, one
                        that is missing, an entry that is not an object, schemas whose
                        `required` holds a list or is a number
  --typed-tools         add get-sum(a: integer, b: integer) and flags(flag: boolean|string),
                        both answering with their arguments as JSON text
  --deaf                never answer anything; write log lines to stdout instead
  --noisy-probe N       answer server/discover with -32602 after N lines of warnings on
                        stderr (what Python SDK 1.x servers do)
  --ask-roots           ask roots/list after initialized, apply the answer 10 ms later, and
                        deny tools/call until it came (a call read while it is being applied
                        waits for that); ask again (roots-2, roots-3...) on each
                        notifications/roots/list_changed
  --roots-tool N        add a tool `roots` whose call sends N roots/list requests at once
                        (ids rl-<call id>-<i>; none tied to the call: stdio says nothing) and
                        answers with the roots of each answer (a JSON list); N=2 is what
                        server-everything does when its tool call overlaps its own startup ask;
                        and a tool `roots-and-go` that sends them and answers "gone" at once
                        (in the same write), not waiting for their answers
  --log-unasked         send log messages (info and error) before answering tools/call
  --tool-error          answer tools/call with isError: true
  --start-delay S       read nothing for S seconds after starting (a server still starting)
  --slow-modern S       a modern server that answers server/discover only after S seconds
                        and refuses initialize with -32022 (a slow-booting 2026-07-28 server)
  --hold-discover FILE  (with --slow-modern 0) answer server/discover only once FILE exists
                        (the test decides when the server has booted; at most 60 s)
  --ttl MS              (with --modern) the ttlMs of the tools/list result (default 0)
  FAKE_ERA=modern       (environment) like --slow-modern 0: a command line remembered as
                        legacy whose server is now modern-only
  --deaf-after-list     stop reading stdin (sleep) once tools/list is answered: a server
                        whose stdin pipe fills up
  --log-after           send an error log message right after the tools/call answer (in the
                        same write)
  --paged-tools         list the tools one per page (nextCursor)
  --never-list          never answer tools/list (a hung upstream that did answer initialize)
  --era-file FILE       like FAKE_ERA, read from FILE at start ("modern" or anything else):
                        the same command line, whose era a test changes between runs
  --features            declare resources (reads fail with "MCP error -32002: ...";
                        subscribe and unsubscribe succeed) and a prompt `weather(city)`
  --initialize-first HOW  a server (like rmcp's, Rust) that ends when its first message is
                        not initialize, after two lines on stderr: HOW `exit` exits with
                        code 1, `close` closes stdout and lingers until end of input
  --listen TAGS         (with --modern) serve 2026-07-28 `subscriptions/listen` (kept open,
                        acknowledged) and a tool `touch(uri)` that sends one
                        resources/updated per listen watching that uri; TAGS `tagged` puts
                        the listen's id in `_meta` subscriptionId (as the spec says),
                        `untagged` leaves it out (a sloppy server), `silent` never
                        acknowledges a listen
  --changing            declare tools, prompts and resources, each listed as one item named
                        after a generation (v<N>, p<N>, r<N>, t<N> for templates; N starts at
                        0), and a tool `burst(count)` that, count times, moves to the next
                        generation and sends tools, prompts and resources list_changed, then
                        answers (with --record, the list requests can be counted)
  --events FILE         append `eof` to FILE when stdin ends and `term` on SIGTERM (then exit 0):
                        what a shutdown did, as the server saw it
  --linger              keep running after stdin ends (until signalled): a server slow to exit
                        on EOF, as server-everything is
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

p = argparse.ArgumentParser()
p.add_argument("--modern", action="store_true")
p.add_argument("--silent-probe", action="store_true")
p.add_argument("--garbage", action="store_true")
p.add_argument("--exit-before-init", type=int)
p.add_argument("--crash-on-call", type=int)
p.add_argument("--never-answer", action="store_true")
p.add_argument("--progress-forever", action="store_true")
p.add_argument("--huge", type=int)
p.add_argument("--stubborn", action="store_true")
p.add_argument("--record")
p.add_argument("--starts")
p.add_argument("--log-stderr", action="store_true")
p.add_argument("--evil")
p.add_argument("--sample", type=int)
p.add_argument("--broken", choices=["utf8", "deep", "truncated"])
p.add_argument("--broken-discover", action="store_true")
p.add_argument("--typed-tools", action="store_true")
p.add_argument("--odd-tools", action="store_true")
p.add_argument("--deaf", action="store_true")
p.add_argument("--start-delay", type=float)
p.add_argument("--noisy-probe", type=int)
p.add_argument("--ask-roots", action="store_true")
p.add_argument("--roots-tool", type=int)
p.add_argument("--log-unasked", action="store_true")
p.add_argument("--tool-error", action="store_true")
p.add_argument("--features", action="store_true")
p.add_argument("--listen", choices=["tagged", "untagged", "silent"])
p.add_argument("--ttl", type=int, default=0)
p.add_argument("--slow-modern", type=float)
p.add_argument("--hold-discover")
p.add_argument("--era-file")
p.add_argument("--deaf-after-list", action="store_true")
p.add_argument("--log-after", action="store_true")
p.add_argument("--paged-tools", action="store_true")
p.add_argument("--never-list", action="store_true")
p.add_argument("--initialize-first", choices=["exit", "close"])
p.add_argument("--changing", action="store_true")
p.add_argument("--events")
p.add_argument("--linger", action="store_true")
opts = p.parse_args()


def event(what: str) -> None:
    if opts.events:
        with open(opts.events, "a") as fh:
            fh.write(what + "\n")


def terminated(signum: int, frame: object) -> None:
    event("term")
    os._exit(0)


if opts.events:
    signal.signal(signal.SIGTERM, terminated)
if opts.starts:
    with open(opts.starts, "a") as fh:
        fh.write(f"{os.getpid()}\n")
if opts.era_file:
    with open(opts.era_file) as fh:
        if fh.read().strip() == "modern":
            os.environ["FAKE_ERA"] = "modern"
if os.environ.get("FAKE_ERA") == "modern":
    # The same command line, now a modern-only server (tests of the stdio era memory).
    opts.slow_modern = 0.0

lock = threading.Lock()
TOOLS = [
    {
        "name": "echo",
        "description": "Echo the message back.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    },
    {"name": "slow", "description": "Never finishes.", "inputSchema": {"type": "object"}},
]
if opts.evil is not None:
    TOOLS[0]["description"] = opts.evil
    TOOLS.append({"name": "fail", "description": opts.evil, "inputSchema": {"type": "object"}})

if opts.odd_tools:
    TOOLS.extend([{"name": ["not", "text"], "inputSchema": {"type": "object"}}, {"description": "no name"}, 7,
                  {"name": "odd-required", "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}},
                                                           "required": [["a"], 5]}},
                  {"name": "required-number", "inputSchema": {"type": "object", "required": 5}}])

if opts.typed_tools:
    TOOLS += [
        {"name": "get-sum", "description": "Add two numbers.", "inputSchema": {
            "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"]}},
        {"name": "flags", "description": "Take a flag.", "inputSchema": {
            "type": "object", "properties": {"flag": {"type": ["boolean", "string"]},
                                             "n": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}}},
    ]
if opts.listen:
    TOOLS.append({"name": "touch", "description": "Tell the listens watching uri it changed.",
                  "inputSchema": {"type": "object", "properties": {"uri": {"type": "string"}},
                                  "required": ["uri"]}})
if opts.roots_tool:
    TOOLS.append({"name": "roots", "description": "Ask the client for its roots.", "inputSchema": {"type": "object"}})
    TOOLS.append({"name": "roots-and-go", "description": "Ask for roots, answer at once.",
                  "inputSchema": {"type": "object"}})
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
LISTENS: dict[object, list[str]] = {}  # open listen request id -> the uris it watches
roots_answered = threading.Event()
roots_applied = threading.Event()
ROOTS_ID = "roots-1"
ROOTS_ASKED = [1]  # how many roots/list the --ask-roots server sent (roots-N)
#: --roots-tool: our roots/list id -> (the tools/call id it serves, the answers so far).
ROOTS_CALLS: dict[str, tuple[object, list[object]]] = {}


GENERATION = [0]  # --changing: the generation the listings are named after


def changing(method: str, mid: object, params: dict) -> bool:
    """--changing: answer the listings and `burst`; False for anything else."""
    n = GENERATION[0]
    lists = {"tools/list": ("tools", {"name": f"v{n}", "inputSchema": {"type": "object"}}),
             "prompts/list": ("prompts", {"name": f"p{n}"}),
             "resources/list": ("resources", {"uri": f"mem://r{n}", "name": f"r{n}"}),
             "resources/templates/list": ("resourceTemplates", {"uriTemplate": f"mem://t{n}/{{id}}",
                                                                "name": f"t{n}"})}
    if method in lists:
        key, item = lists[method]
        extra = [{"name": "burst", "inputSchema": {"type": "object"}}] if key == "tools" else []
        send({"jsonrpc": "2.0", "id": mid, "result": {key: [item, *extra]}})
        return True
    if method == "tools/call" and params.get("name") == "burst":
        count = int((params.get("arguments") or {}).get("count", 1))
        lines = []
        for _ in range(count):
            GENERATION[0] += 1
            lines += [json.dumps({"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"})
                      for kind in ("tools", "prompts", "resources")]
        lines.append(json.dumps({"jsonrpc": "2.0", "id": mid, "result": {
            "content": [{"type": "text", "text": f"generation {GENERATION[0]}"}]}}))
        with lock:
            sys.stdout.write("".join(line + "\n" for line in lines))
            sys.stdout.flush()
        return True
    return False


def send(obj: dict) -> None:
    with lock:
        if opts.garbage:
            sys.stdout.write("this is not json\n")
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def record(msg: dict) -> None:
    if opts.record:
        with open(opts.record, "a") as fh:
            fh.write(json.dumps(msg) + "\n")


if opts.exit_before_init is not None:
    for i in range(3):
        print(f"fatal: boot failure {i}", file=sys.stderr, flush=True)
    sys.exit(opts.exit_before_init)

if opts.stubborn:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    subprocess.Popen(["sleep", "1000"])


def progress_forever(token: object) -> None:
    n = 0
    while True:
        n += 1
        send({"jsonrpc": "2.0", "method": "notifications/progress",
              "params": {"progressToken": token, "progress": n}})
        time.sleep(0.05)


SAMPLING: dict[str, object] = {}  # our sampling request id -> the tools/call id it serves


def handle(msg: dict) -> None:
    method = msg.get("method")
    mid = msg.get("id")
    params = msg.get("params") or {}
    if method is None and mid in SAMPLING:  # the client's answer to our sampling request
        answer = {k: msg[k] for k in ("result", "error") if k in msg}
        send({"jsonrpc": "2.0", "id": SAMPLING.pop(mid), "result": {
            "content": [{"type": "text", "text": json.dumps(answer)}]}})
        return
    if opts.log_stderr:
        print(f"got {method}", file=sys.stderr, flush=True)
    if opts.deaf:
        print(f"INFO: listening on http://127.0.0.1:9/ (got {method})", flush=True)
        return
    if opts.ask_roots and method == "notifications/initialized":
        send({"jsonrpc": "2.0", "id": ROOTS_ID, "method": "roots/list"})
        return
    if method is None and mid in ROOTS_CALLS:  # an answer to a --roots-tool roots/list
        call, answers = ROOTS_CALLS.pop(mid)
        answers.append((msg.get("result") or {}).get("roots", msg.get("error")))
        if len(answers) == opts.roots_tool and call is not None:
            send({"jsonrpc": "2.0", "id": call, "result": {
                "content": [{"type": "text", "text": json.dumps(answers)}]}})
        return
    if opts.ask_roots and method == "notifications/roots/list_changed":
        ROOTS_ASKED[0] += 1
        send({"jsonrpc": "2.0", "id": f"roots-{ROOTS_ASKED[0]}", "method": "roots/list"})
        return
    if opts.ask_roots and isinstance(mid, str) and mid.startswith("roots-") and method is None:
        # Like the official filesystem server: roots are applied asynchronously, a little
        # later (10 ms here; the client waits 50 ms after answering before its first call).
        roots_answered.set()
        threading.Timer(0.01, roots_applied.set).start()
        return
    if method == "notifications/cancelled" and params.get("requestId") in LISTENS:
        LISTENS.pop(params["requestId"])
        return
    if mid is None:
        return
    if method == "subscriptions/listen" and opts.listen:
        wanted = params.get("notifications") or {}
        LISTENS[mid] = list(wanted.get("resourceSubscriptions") or [])
        if opts.listen == "silent":
            return
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"_meta": {SUBSCRIPTION_ID: mid}, "notifications": wanted}})
        return
    if method == "tools/call" and params.get("name") == "touch" and opts.listen:
        uri = (params.get("arguments") or {}).get("uri")
        told = [lid for lid, uris in list(LISTENS.items()) if uri in uris]
        for lid in told:
            meta = {SUBSCRIPTION_ID: lid} if opts.listen == "tagged" else {}
            send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                  "params": {"uri": uri, "_meta": meta}})
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": f"told {len(told)}"}],
                                                    "resultType": "complete"}})
        return
    if method == "server/discover" and opts.broken_discover:
        with lock:
            sys.stdout.write('{"jsonrpc":"2.0","id":' + json.dumps(mid) + ',"error":{"code":-326\n')
            sys.stdout.flush()
        return
    if method == "server/discover" and opts.noisy_probe is not None:
        for i in range(opts.noisy_probe):
            print(f"WARNING: Failed to validate request: validation error {i}", file=sys.stderr, flush=True)
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "Invalid request parameters"}})
        return
    if opts.slow_modern is not None and method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "error": {
            "code": -32022, "message": "connection is serving the 2026-07-28 protocol",
            "data": {"supported": ["2026-07-28"]}}})
        return
    if opts.slow_modern is not None and method == "server/discover":
        time.sleep(opts.slow_modern)
        held_until = time.monotonic() + 60
        while opts.hold_discover and not os.path.exists(opts.hold_discover) and time.monotonic() < held_until:
            time.sleep(0.01)
        opts.slow_modern = 0.0
        opts.modern = True
    if method == "server/discover":
        if opts.modern:
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, **({"resources": {"subscribe": True}} if opts.listen else {})},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}},
                "ttlMs": 0, "cacheScope": "public"}})
        elif not opts.silent_probe:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
        return
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}, **({"logging": {}} if opts.log_unasked else {}),
                             **({"resources": {}, "prompts": {}} if opts.features else {}),
                             **({"tools": {"listChanged": True}, "prompts": {"listChanged": True},
                                 "resources": {"listChanged": True}} if opts.changing else {})},
            "serverInfo": {"name": "fake", "version": os.environ.get("FAKE_VERSION", "1")}}})
        return
    if opts.changing and changing(method, mid, params):
        return
    if method == "logging/setLevel":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
        return
    if opts.features and method == "resources/read":
        send({"jsonrpc": "2.0", "id": mid, "error": {
            "code": -32002, "message": "MCP error -32002: Resource not found"}})
        return
    if opts.features and method in ("resources/subscribe", "resources/unsubscribe"):
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
        return
    if opts.features and method == "prompts/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"prompts": [
            {"name": "weather", "arguments": [{"name": "city", "required": True}]}]}})
        return
    if method == "ping":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
        return
    if method == "tools/list" and opts.never_list:
        return
    if method == "tools/list":
        result = {"tools": TOOLS}
        if opts.paged_tools:
            at = int(params.get("cursor") or 0)
            result = {"tools": TOOLS[at:at + 1], **({"nextCursor": str(at + 1)} if at + 1 < len(TOOLS) else {})}
        if opts.modern:
            result.update(resultType="complete", ttlMs=opts.ttl, cacheScope="public")
        send({"jsonrpc": "2.0", "id": mid, "result": result})
        if opts.deaf_after_list:
            time.sleep(600)
        return
    if method == "tools/call":
        if opts.crash_on_call is not None:
            print("crashing now", file=sys.stderr, flush=True)
            os._exit(opts.crash_on_call)
        if opts.never_answer:
            return
        if opts.sample is not None:
            SAMPLING[f"s-{mid}"] = mid
            send({"jsonrpc": "2.0", "id": f"s-{mid}", "method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "x" * opts.sample}}],
                "maxTokens": 10}})
            return
        if opts.broken:
            head = '{"jsonrpc":"2.0","id":' + json.dumps(mid) + ',"result":'
            body = {
                "utf8": head.encode() + b'{"content":[{"type":"text","text":"\xff\xfe"}]}}',
                "deep": head.encode() + b"[" * 100_000 + b"]" * 100_000 + b"}",
                "truncated": head.encode() + b'{"content":[{"type":"te',
            }[opts.broken]
            with lock:
                sys.stdout.buffer.write(body + b"\n")
                sys.stdout.flush()
            return
        if opts.evil is not None:
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "error", "logger": "fake", "data": opts.evil}})
            if params.get("name") == "fail":
                send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32000, "message": opts.evil}})
                return
        if opts.progress_forever:
            token = (params.get("_meta") or {}).get("progressToken")
            threading.Thread(target=progress_forever, args=(token,), daemon=True).start()
            return
        if opts.huge:
            head = '{"jsonrpc":"2.0","id":' + json.dumps(mid)
            sys.stdout.write(head + ',"result":{"content":[{"type":"text","text":"')
            sys.stdout.write("x" * opts.huge)
            sys.stdout.write('"}]}}\n')
            sys.stdout.flush()
            return
        if opts.roots_tool and params.get("name") in ("roots", "roots-and-go"):
            answers: list[object] = []
            going = params.get("name") == "roots-and-go"
            asks = [f"rl-{mid}-{i}" for i in range(opts.roots_tool)]
            for rid in asks:
                ROOTS_CALLS[rid] = (None if going else mid, answers)
            lines = [{"jsonrpc": "2.0", "id": rid, "method": "roots/list"} for rid in asks]
            if going:
                lines.append({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "gone"}]}})
            with lock:
                sys.stdout.write("".join(json.dumps(line) + "\n" for line in lines))
                sys.stdout.flush()
            return
        args = params.get("arguments") or {}
        if opts.log_unasked:
            for level in ("info", "error"):
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": level, "logger": "fake", "data": f"{level} note"}})
        if opts.ask_roots and roots_answered.is_set():
            # Read together with the answer, the call may come before the 10 ms are up in
            # this process though the client waited its 50 ms: this process did not run
            # meanwhile (a busy machine). Only a call before any answer is the client's fault.
            roots_applied.wait(10)
        if opts.ask_roots and not roots_applied.is_set():
            send({"jsonrpc": "2.0", "id": mid, "result": {"isError": True, "content": [
                {"type": "text", "text": "Access denied - path outside allowed directories"}]}})
            return
        if opts.tool_error:
            send({"jsonrpc": "2.0", "id": mid, "result": {"isError": True, "content": [
                {"type": "text", "text": "boom"}]}})
            return
        text = json.dumps(args) if params.get("name") in ("get-sum", "flags") else str(args.get("message", ""))
        answer = {"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}}
        if opts.log_after:
            after = {"jsonrpc": "2.0", "method": "notifications/message",
                     "params": {"level": "error", "logger": "fake", "data": "after the answer"}}
            with lock:
                sys.stdout.write(json.dumps(answer) + "\n" + json.dumps(after) + "\n")
                sys.stdout.flush()
            return
        send(answer)
        return
    if opts.silent_probe:
        return
    send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})


def initialize_first(msg: dict) -> None:
    """--initialize-first: end unless the first message is initialize (rmcp's way)."""
    if msg.get("method") == "initialize":
        return
    print(f"ERROR serving error: ExpectedInitializeRequest({msg.get('method')})", file=sys.stderr, flush=True)
    print(f"Error: expect initialized request, but received: {msg.get('method')}", file=sys.stderr, flush=True)
    if opts.initialize_first == "exit":
        sys.exit(1)
    os.close(1)
    for _ in sys.stdin:
        pass
    os._exit(0)


def main() -> None:
    first = True
    if opts.start_delay:
        time.sleep(opts.start_delay)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        record(msg)
        if first and opts.initialize_first:
            initialize_first(msg)
        first = False
        handle(msg)
    event("eof")
    if opts.stubborn or opts.linger:
        while True:
            time.sleep(1)


main()
