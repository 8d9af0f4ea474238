#!/usr/bin/env python3
"""A minimal stand-in for the session daemon, speaking the design's control protocol.

Until the real daemon (`python -m mcpcli.daemon`, built on another branch) is merged,
the command side is tested against this: a unix socket at $MCPCLI_RUNTIME_DIR/daemon.sock,
stdio sessions only (legacy era: it does the `initialize` handshake itself and answers
commands' `initialize` from that), ids rewritten per command on `attach`, and the ops
open/list/close/restart/logs. It records every first line in `requests.jsonl` and its pid
in `daemon.pid` (one line per start, in `starts`), and exits when its last session closes
or on SIGTERM, ending its servers' process groups. Stdlib only (and mcpcli.core.localrpc, mcpcli.localsocket).

Flags: --exit-at-once N (exit with code N before listening, after a line on stderr).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mcpcli import localsocket
from mcpcli.core import localrpc as protocol

RUN = Path(os.environ["MCPCLI_RUNTIME_DIR"])
SOCKET = RUN / "daemon.sock"
LEGACY = "2025-11-25"
LOCK = threading.Lock()
IDS = itertools.count(1)


class Conn:
    """A command's connection (after attach, a relay)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        with self.lock:
            try:
                self.sock.sendall(protocol.encode(message))
            except OSError:
                pass


class Session:
    def __init__(self, name: str, entry: dict[str, Any], connect: dict[str, Any]) -> None:
        self.name = name
        self.entry = entry
        self.connect = connect
        self.started = time.time()
        self.calls = 0
        self.state = "starting"
        self.pending: dict[int, tuple[Conn, Any]] = {}
        self.attached: set[Conn] = set()
        self.init: dict[str, Any] = {}
        self.process: subprocess.Popen[bytes] | None = None
        self.write_lock = threading.Lock()

    @property
    def target(self) -> str:
        return " ".join([self.entry.get("command") or "", *self.entry.get("args", [])])

    def info(self) -> dict[str, Any]:
        server = self.init.get("serverInfo") or {}
        return {
            "name": self.name, "target": self.target, "transport": "stdio", "era": "legacy",
            "protocolVersion": self.init.get("protocolVersion"),
            "server": {"name": server.get("name"), "version": server.get("version")},
            "pid": self.process.pid if self.process else None, "started": self.started,
            "idle_seconds": 0.0, "calls": self.calls, "state": self.state, "last_stderr": [],
        }

    def start(self) -> None:
        log = RUN / "sessions" / f"{self.name}.log"
        log.parent.mkdir(exist_ok=True)
        env = {**os.environ, **self.entry.get("env", {}), **self.connect.get("env", {})}
        with open(log, "ab") as err:
            self.process = subprocess.Popen(
                [self.entry["command"], *self.entry.get("args", [])], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=err, env=env, start_new_session=True,
                cwd=self.connect.get("cwd") or self.entry.get("cwd"),
            )
        self.write({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "fake-daemon", "version": "0"}}})
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            if message.get("id") == 0 and "result" in message:
                self.init = message["result"]
                break
        else:
            self.state = "exited"
            raise RuntimeError(f"server exited with code {self.process.wait()} before initialize")
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.state = "ready"
        threading.Thread(target=self.pump, daemon=True).start()

    def write(self, message: dict[str, Any]) -> None:
        assert self.process is not None and self.process.stdin is not None
        with self.write_lock:
            self.process.stdin.write(json.dumps(message).encode() + b"\n")
            self.process.stdin.flush()

    def pump(self) -> None:
        """Server to commands: responses by their rewritten id, everything else to all."""
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "method" not in message and message.get("id") in self.pending:
                conn, original = self.pending.pop(message["id"])
                conn.send({**message, "id": original})
            elif "method" in message and "id" in message:
                self.write({"jsonrpc": "2.0", "id": message["id"],
                            "error": {"code": -32601, "message": "no command to ask"}})
            else:
                for conn in list(self.attached):
                    conn.send(message)
        self.state = "exited"
        for conn in list(self.attached):  # what the real daemon does too: the command gets exit 4
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self) -> None:
        self.state = "closed"
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()


SESSIONS: dict[str, Session] = {}


def record(message: dict[str, Any]) -> None:
    with LOCK, open(RUN / "requests.jsonl", "a") as fh:
        fh.write(json.dumps(message) + "\n")


def shutdown(*_: Any) -> None:
    for session in list(SESSIONS.values()):
        session.stop()
    try:
        SOCKET.unlink()
    except FileNotFoundError:
        pass
    os._exit(0)


def exit_if_idle() -> None:
    if not SESSIONS:
        shutdown()


def relay(conn: Conn, session: Session, reader: localsocket.LineReader) -> None:
    session.attached.add(conn)
    try:
        while (line := reader.read_line()) is not None:
            message = json.loads(line)
            method = message.get("method")
            if method == "initialize":
                conn.send({"jsonrpc": "2.0", "id": message["id"], "result": session.init})
            elif method == "notifications/initialized":
                continue
            elif "id" in message and method is not None:
                new = next(IDS)
                session.pending[new] = (conn, message["id"])
                session.calls += 1
                session.write({**message, "id": new})
            elif method is not None:
                session.write(message)
    finally:
        session.attached.discard(conn)


def handle(sock: socket.socket) -> None:
    conn = Conn(sock)
    reader = localsocket.LineReader(sock)
    close_after = False
    try:
        line = reader.read_line()
        if line is None:
            return
        request = protocol.decode(line)
        record(request)
        op, name = request.get("op"), request.get("name")
        if op == "open":
            existing = SESSIONS.get(name)
            entry = request["entry"]
            if existing is not None:
                same = [existing.entry.get(k) for k in ("command", "args", "url")] == [entry.get(k) for k in ("command", "args", "url")]
                if same and request.get("join"):
                    conn.send(protocol.ok(session=existing.info()))
                else:
                    conn.send(protocol.error(f"session {name!r} runs another server", kind="usage",
                                             hint=f"mcp session close {name}"))
                return
            session = Session(name, entry, request.get("connect") or {})
            try:
                session.start()
            except Exception as exc:
                session.stop()
                conn.send(protocol.error(f"cannot start session {name!r}: {exc}",
                                         hint=f"mcp session logs {name}"))
                close_after = True
                return
            SESSIONS[name] = session
            conn.send(protocol.ok(session=session.info()))
        elif op == "list":
            conn.send(protocol.ok(sessions=[s.info() for s in SESSIONS.values()]))
        elif op == "close":
            names = list(SESSIONS) if request.get("all") else [name]
            if not request.get("all") and name not in SESSIONS:
                conn.send(protocol.error(f"no session {name!r}", hint=f"mcp session open {name}"))
                return
            for each in names:
                SESSIONS.pop(each).stop()
            conn.send(protocol.ok(closed=names))
            close_after = True
        elif op == "restart":
            found = SESSIONS.get(name)
            if found is None:
                conn.send(protocol.error(f"no session {name!r}", hint=f"mcp session open {name}"))
                return
            found.stop()
            fresh = Session(name, found.entry, found.connect)
            fresh.start()
            SESSIONS[name] = fresh
            conn.send(protocol.ok(session=fresh.info()))
        elif op == "logs":
            path = RUN / "sessions" / f"{name}.log"
            if name not in SESSIONS:
                conn.send(protocol.error(f"no session {name!r}", hint=f"mcp session open {name}"))
                return
            conn.send(protocol.ok(path=str(path), text=path.read_text(errors="replace")))
        elif op == "attach":
            found = SESSIONS.get(name)
            if found is None:
                conn.send(protocol.error(f"no session {name!r}", hint=f"mcp session open {name}"))
                return
            if found.state != "ready":
                conn.send(protocol.error(f"session {name!r} has exited",
                                         hint=f"mcp session restart {name}"))
                return
            conn.send(protocol.ok(session=found.info()))
            relay(conn, found, reader)
        else:
            conn.send(protocol.error(f"unknown op {op!r}", kind="usage"))
    except (OSError, ValueError):
        pass
    finally:
        sock.close()
        if close_after:
            exit_if_idle()


def main() -> None:
    if "--exit-at-once" in sys.argv:
        print("fake daemon: told to fail", file=sys.stderr, flush=True)
        sys.exit(int(sys.argv[sys.argv.index("--exit-at-once") + 1]))
    signal.signal(signal.SIGTERM, shutdown)
    with open(RUN / "starts", "a") as fh:
        fh.write(f"{os.getpid()}\n")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(SOCKET))
    (RUN / "daemon.pid").write_text(str(os.getpid()))
    listener.listen(16)
    while True:
        sock, _ = listener.accept()
        threading.Thread(target=handle, args=(sock,), daemon=True).start()


if __name__ == "__main__":
    main()
