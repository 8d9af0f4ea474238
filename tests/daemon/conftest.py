"""Fixtures for the daemon tests: a daemon process with its run directory under a temp dir
(MCPCLI_RUNTIME_DIR), and a small stdlib client for the control protocol."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_until

from mcpcli import localsocket
from mcpcli.core import localrpc as protocol
from mcpcli.transports import Transport


def connect(run_dir: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(str(run_dir / "daemon.sock"))
    return sock


def control(run_dir: Path, op: str, **fields: Any) -> dict[str, Any]:
    """One control request and its answer."""
    with connect(run_dir) as sock:
        localsocket.send(sock, protocol.request(op, **fields))
        answer = localsocket.LineReader(sock).read()
    assert answer is not None, f"the daemon closed the connection on {op}"
    return answer


def open_request(name: str, argv: list[str], **fields: Any) -> dict[str, Any]:
    """The fields of an `open` for a stdio server run as `argv`."""
    entry = {"name": name, "command": argv[0], "args": argv[1:], "transport": "stdio"}
    return {"name": name, "entry": entry, "connect": {}, "client": {"timeout": 30},
            "idle_timeout": None, "restart": "no", "join": True, **fields}


class Attached:
    """A command attached to a session: JSON-RPC lines both ways, as over stdio."""

    def __init__(self, run_dir: Path, name: str) -> None:
        self.sock = connect(run_dir)
        self.reader = localsocket.LineReader(self.sock)
        localsocket.send(self.sock, protocol.request("attach", name=name))
        self.answer = self.reader.read()
        self.ids = 0

    def send(self, message: dict[str, Any]) -> None:
        localsocket.send(self.sock, {"jsonrpc": "2.0", **message})

    def request(self, method: str, params: dict[str, Any] | None = None, *, token: Any = None) -> int:
        self.ids += 1
        params = dict(params or {})
        if token is not None:
            params["_meta"] = {"progressToken": token}
        self.send({"id": self.ids, "method": method, "params": params})
        return self.ids

    def read(self) -> dict[str, Any]:
        message = self.reader.read()
        assert message is not None, "the daemon closed the attached connection"
        return message

    def until_response(self, request_id: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The response to `request_id`, and what came before it."""
        before = []
        while True:
            message = self.read()
            if message.get("id") == request_id and "method" not in message:
                return message, before
            before.append(message)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response, _ = self.until_response(self.request(method, params))
        assert "result" in response, response
        result: dict[str, Any] = response["result"]
        return result

    def close(self) -> None:
        self.sock.close()


@dataclass
class DaemonProcess:
    run_dir: Path
    proc: subprocess.Popen[bytes]

    def control(self, op: str, **fields: Any) -> dict[str, Any]:
        return control(self.run_dir, op, **fields)

    def attach(self, name: str) -> Attached:
        return Attached(self.run_dir, name)

    def log(self) -> str:
        path = self.run_dir / "daemon.log"
        return path.read_text(errors="replace") if path.exists() else ""


@pytest.fixture
def run_dir() -> Iterator[Path]:
    """A private run directory with a short path (a unix socket's path is at most 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="mcpd-"))
    os.chmod(path, 0o700)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _connectable(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


def start_daemon(run_dir: Path) -> DaemonProcess:
    env = {**os.environ, "MCPCLI_RUNTIME_DIR": str(run_dir)}
    with open(run_dir / "daemon.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "mcpcli.daemon"], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, env=env, start_new_session=True)
    daemon = DaemonProcess(run_dir, proc)

    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"the daemon exited ({proc.returncode}): {daemon.log()}")
        return _connectable(run_dir / "daemon.sock")

    wait_until(ready, what="the daemon listening")
    return daemon


def stop_daemon(daemon: DaemonProcess) -> None:
    """SIGTERM the daemon (it ends every session's server) and reap it."""
    if daemon.proc.poll() is None:
        daemon.proc.send_signal(signal.SIGTERM)
        try:
            daemon.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.proc.pid, signal.SIGKILL)
            daemon.proc.wait(10)
            raise AssertionError(f"the daemon ignored SIGTERM: {daemon.log()}") from None


@pytest.fixture
def daemon(run_dir: Path) -> Iterator[DaemonProcess]:
    running = start_daemon(run_dir)
    try:
        yield running
    finally:
        stop_daemon(running)


def text_of(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is dead, only not yet reaped
        return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


class AttachTransport(Transport):
    """A minimal transport onto `attach` (the command side's DaemonTransport is built
    elsewhere): here only to show that our own `Client` runs unchanged over the relay."""

    name = "daemon-test"

    def __init__(self, run_dir: Path, session: str) -> None:
        from mcpcli.transports import TransportTraits

        self.run_dir = run_dir
        self.session = session
        self.traits = TransportTraits()

    def connect(self) -> Any:
        from contextlib import asynccontextmanager

        @asynccontextmanager
        async def streams() -> Any:
            import anyio
            from anyio.streams.buffered import BufferedByteReceiveStream

            from mcpcli.core import jsonrpc
            from mcpcli.transports import Envelope

            sock = await anyio.connect_unix(str(self.run_dir / "daemon.sock"))
            async with sock:
                await sock.send(protocol.encode(protocol.request("attach", name=self.session)))
                reader = BufferedByteReceiveStream(sock)
                answer = protocol.decode(await reader.receive_until(b"\n", protocol.MAX_MESSAGE_BYTES))
                assert answer["ok"], answer
                read_send, read_recv = anyio.create_memory_object_stream[Any](64)
                write_send, write_recv = anyio.create_memory_object_stream[Any](64)

                async def pump_in() -> None:
                    async with read_send:
                        while True:
                            try:
                                line = await reader.receive_until(b"\n", protocol.MAX_MESSAGE_BYTES)
                            except (anyio.EndOfStream, anyio.IncompleteRead):
                                return
                            await read_send.send(Envelope(jsonrpc.parse(line)))

                async def pump_out() -> None:
                    async with write_recv:
                        async for envelope in write_recv:
                            await sock.send(jsonrpc.encode(envelope.message) + b"\n")

                async with anyio.create_task_group() as tg:
                    tg.start_soon(pump_in)
                    tg.start_soon(pump_out)
                    try:
                        yield read_recv, write_send
                    finally:
                        tg.cancel_scope.cancel()
                        read_recv.close()

        return streams()


@contextmanager
def in_process(run_dir: Path, **options: Any) -> Iterator[Any]:
    """A `Daemon` served on a loop in a thread of this process (signals stay pytest's), to
    inject what a real one takes from the system (the expected peer uid) or look inside."""
    from anyio.from_thread import start_blocking_portal

    from mcpcli.daemon.server import Daemon

    with start_blocking_portal() as portal:
        daemon = portal.call(lambda: Daemon(run_dir, **options))
        serving = portal.start_task_soon(daemon.serve, False)
        portal.call(daemon.listening.wait)
        try:
            yield daemon
        finally:
            portal.call(daemon.stop)
            serving.result(30)
