"""Fixtures for the replica tests: a real Redis server (no persistence, a temp dir, a free
loopback port), `mcp serve --http` replicas of one tools.yaml, and nginx in front of them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import Peers, free_port, require, stop_process, wait_listening, wait_until


def redis_ping(port: int) -> bool:
    """Whether a Redis server answers PING on 127.0.0.1:`port` (a raw RESP exchange, so the
    fixture depends on nothing but the binary)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class RedisServer:
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@pytest.fixture(scope="module")
def redis_server(peers: Peers, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A private redis-server: loopback, a free port, its own dir, nothing saved to disk."""
    binary = peers.redis()
    workdir = tmp_path_factory.mktemp("redis")
    port = free_port()
    log = open(workdir / "redis.log", "wb")  # noqa: SIM115 - closed below, after the process
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir),
         "--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
    )
    try:
        wait_until(lambda: proc.poll() is not None or redis_ping(port), timeout=30,
                   what="redis-server to answer PING")
        if proc.poll() is not None:
            raise AssertionError(f"redis-server exited with {proc.returncode}: "
                                 + (workdir / "redis.log").read_text(errors="replace"))
        yield RedisServer(port, proc)
    finally:
        stop_process(proc, timeout=20)
        log.close()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> Iterator[str]:
    """The shared server's URL, emptied after each test so tests do not see each other's keys."""
    yield redis_server.url
    with socket.create_connection(("127.0.0.1", redis_server.port), timeout=5) as sock:
        sock.sendall(b"FLUSHALL\r\n")
        assert sock.recv(64).startswith(b"+OK")


@dataclass
class Replica:
    """One `mcp serve --http` process."""

    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def kill(self) -> None:
        """SIGKILL: a replica that dies without cleaning up."""
        stop_process(self.proc, timeout=20, sig=signal.SIGKILL)


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[Callable[..., Replica]]:
    """Start replicas of one tools.yaml: `start(tools, name, *extra_args)`. Each gets the
    environment variable REPLICA=name (so a tool can say who ran it) and is stopped after."""
    started: list[Replica] = []

    def start(tools: Path, name: str, *args: str, env: dict[str, str] | None = None) -> Replica:
        port = free_port()
        log = tmp_path / f"replica-{name}.log"
        with open(log, "wb") as fh:
            proc = subprocess.Popen(
                [sys.executable, "-m", "mcpcli", "serve", str(tools), "--http", f"127.0.0.1:{port}",
                 "--no-auth", *args],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fh,
                env={**os.environ, "REPLICA": name, **(env or {})},
            )
        replica = Replica(name, port, proc, log)
        started.append(replica)
        wait_until(lambda: proc.poll() is not None or "serving" in log.read_text(errors="replace"),
                   timeout=30, what=f"replica {name}")
        assert proc.poll() is None, log.read_text(errors="replace")
        return replica

    yield start
    for replica in started:
        stop_process(replica.proc, timeout=20)


def nginx_site(upstreams: list[int], listen: int) -> str:
    """The README's nginx site (between its markers), pointed at these ports: the test runs
    the documented configuration, not a copy of it."""
    from helpers import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    begin = readme.index("# nginx site: begin")
    end = readme.index("# nginx site: end")
    site = readme[begin:end]
    for n, port in enumerate(upstreams, start=1):
        assert f"127.0.0.1:800{n};" in site, "the README's nginx site no longer names its replicas"
        site = site.replace(f"127.0.0.1:800{n};", f"127.0.0.1:{port};")
    assert "listen 127.0.0.1:8080;" in site
    return site.replace("listen 127.0.0.1:8080;", f"listen 127.0.0.1:{listen};")


@contextmanager
def nginx(peers: Peers, workdir: Path, upstreams: list[int]) -> Iterator[str]:
    """nginx (foreground, its own prefix, logs to stderr) serving the README's site in front
    of `upstreams`; yields its /mcp URL."""
    if not peers.nginx:
        require("nginx (scripts/install-peers unpacks Debian's package; apt-get was not usable)")
    assert peers.nginx
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    temp = "".join(f"{k}_temp_path {workdir}/{k};\n  " for k in
                   ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers must read our 0700 temp dir
    conf = workdir / "nginx.conf"
    conf.write_text(
        f"{user}worker_processes 1;\npid {workdir}/nginx.pid;\nerror_log stderr warn;\n"
        f"events {{ worker_connections 256; }}\n"
        f"http {{\n  access_log off;\n  {temp}\n{nginx_site(upstreams, port)}\n}}\n",
        encoding="utf-8",
    )
    log = workdir / "nginx.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [peers.nginx, "-p", str(workdir), "-c", str(conf), "-e", "stderr", "-g", "daemon off;"],
            stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
        )
    try:
        wait_listening(port, proc, "nginx")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc, timeout=20, sig=signal.SIGQUIT)  # graceful: the master reaps its workers
