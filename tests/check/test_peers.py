"""`mcp check` against real servers: server-everything (stdio and Streamable HTTP), the official
Python SDK's server (tests/peers/sdk_server.py, both eras), our own `mcp serve` (in process, over
stdio and over HTTP) and a session (`@NAME`). None of them has an error; our own server has no
warning either."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, Peers, Result, free_port, listening, mcp_in
from sessions.test_real_daemon import real  # noqa: F401 - the fixture

pytestmark = [pytest.mark.peer, pytest.mark.slow]

EXAMPLE = str(REPO / "examples" / "tools.yaml")


def report(result: Result) -> dict[str, Any]:
    assert result.code == 0, result
    data: dict[str, Any] = json.loads(result.stdout)
    assert data["ok"] is True
    assert data["summary"]["errors"] == 0, [f for f in data["findings"] if f["severity"] == "error"]
    return data


def warnings(data: dict[str, Any]) -> set[str]:
    return {f["code"] for f in data["findings"] if f["severity"] == "warning"}


def statuses(data: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["status"] for c in data["checks"]}


def test_server_everything_over_stdio(everything: list[str]) -> None:
    data = report(mcp_in("check", "--json", "-q", "--", *everything))
    assert data["server"]["checked"] == ["legacy 2025-11-25"]
    # It answers an unknown tool with an isError result (what the spec calls a protocol error).
    assert warnings(data) <= {"unknown-tool"}
    checks = statuses(data)
    for check in ("legacy:handshake", "legacy:ping", "legacy:tools", "legacy:prompts", "legacy:resources",
                  "legacy:tasks", "legacy:unknown-method", "legacy:completion", "legacy:logging",
                  "legacy:notifications", "lint:tools", "providers"):
        assert checks[check] == "passed", (check, data)
    # its read-only tools that need no arguments were called (one reports progress)
    assert checks["call:get-tiny-image"] == "passed"
    assert checks["call:trigger-long-running-operation"] == "passed"
    assert "call:echo" not in checks  # needs an argument
    assert "call:toggle-simulated-logging" not in checks  # not read-only


def test_server_everything_over_streamable_http(peers: Peers) -> None:
    port = free_port()
    with listening(peers.everything("streamableHttp"), port, {"PORT": str(port)}) as url:
        data = report(mcp_in("check", "--json", "--no-calls", url))
    assert data["server"]["transport"] == "streamable-http"
    assert warnings(data) <= {"unknown-tool"}


def test_the_official_python_sdk_server_in_both_eras(sdk_server: list[str]) -> None:
    data = report(mcp_in("check", "--json", "-q", "--", *sdk_server))
    # It lists only 2026-07-28 but answers initialize too: both eras are checked.
    assert data["server"]["checked"] == ["modern 2026-07-28", "legacy 2025-11-25"]
    checks = statuses(data)
    assert checks["modern:handshake"] == "passed"
    assert checks["legacy:ping"] == "passed"
    assert checks["modern:resources"] == "passed"  # paginated two at a time by the server
    assert warnings(data) <= {"unknown-tool"}


def test_our_own_server_in_process_has_no_warning() -> None:
    data = report(mcp_in("check", "--json", EXAMPLE))
    assert warnings(data) == set()
    assert data["server"]["checked"] == ["modern 2026-07-28", "legacy 2025-11-25"]
    assert statuses(data)["call:git_status"] == "passed"


def test_our_own_server_over_stdio_has_no_warning() -> None:
    data = report(mcp_in("check", "--json", "-q", "--", sys.executable, "-m", "mcpcli", "serve", EXAMPLE))
    assert warnings(data) == set()
    assert data["server"]["transport"] == "stdio"


def test_our_own_server_over_http_has_no_warning(tmp_path: Path) -> None:
    port = free_port()
    argv = [sys.executable, "-m", "mcpcli", "serve", EXAMPLE, "--http", str(port), "--no-auth"]
    with listening(argv, port) as url:
        data = report(mcp_in("check", "--json", url))
    assert warnings(data) == set()
    assert data["server"]["checked"] == ["modern 2026-07-28", "legacy 2025-11-25"]


def test_a_session(real: Path, everything: list[str]) -> None:  # noqa: F811
    assert mcp_in("session", "open", "ev", "--json", "--", *everything).code == 0
    data = report(mcp_in("check", "--json", "--no-calls", "@ev"))
    assert data["server"]["transport"] == "session"
    assert statuses(data)["legacy:ping"] == "passed"
