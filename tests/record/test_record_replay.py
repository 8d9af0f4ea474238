"""`--record` against real servers (server-everything over stdio, `mcp serve --http`), then the
recording replayed with `mcp serve --replay` to our CLI and the official Python SDK client."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import Peers, mcp

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
TOKEN = "tok-3f9a1c77-never-in-the-file"

TOOLS = """
version: 1
server: {name: recorded, version: "1.0"}
tools:
  - name: echo
    description: echoes its text
    params: {text: {type: string}}
    run: {argv: [printf, "%s", "{{ text }}"]}
"""


def runs(path: Path) -> list[list[dict[str, Any]]]:
    """The recording's runs, each from its meta line, after checking every line's shape."""
    out: list[list[dict[str, Any]]] = []
    for text in path.read_text().splitlines():
        line = json.loads(text)
        assert set(line) == {"t", "dir", "msg"}
        if line["dir"] == "meta":
            assert line["t"] == 0
            out.append([line])
        else:
            assert line["dir"] in ("send", "recv")
            assert line["msg"]["jsonrpc"] == "2.0"
            assert round(line["t"], 3) == line["t"]
            out[-1].append(line)
    return out


def check_order(run: list[dict[str, Any]]) -> None:
    """Time never goes back, and every response follows the request it answers."""
    times = [line["t"] for line in run[1:]]
    assert times == sorted(times)
    sent: set[Any] = set()
    for line in run[1:]:
        msg = line["msg"]
        if line["dir"] == "send" and "method" in msg and "id" in msg:
            sent.add(msg["id"])
        elif line["dir"] == "recv" and "method" not in msg:
            assert msg["id"] in sent, line


def replay_argv(path: Path) -> list[str]:
    return [sys.executable, "-m", "mcpcli", "serve", "--replay", str(path)]


@pytest.mark.peer
def test_a_server_everything_session_recorded_and_replayed(peers: Peers, tmp_path: Path) -> None:
    everything = peers.everything_stdio()
    rec = tmp_path / "everything.ndjson"
    commands = [
        ["tools", "list"],
        ["tools", "call", "echo", "-a", "message=hi"],
        # A secret-looking _meta entry is redacted, and matches any value on replay.
        ["tools", "call", "echo", "-a", "message=hush", "--meta", "apiKey=sk-live-123456"],
    ]
    live = []
    for command in commands:
        r = mcp(*command, "--record", str(rec), "--", *everything)
        assert r.code == 0, r
        live.append(r.stdout)

    assert stat.S_IMODE(rec.stat().st_mode) == 0o600
    text = rec.read_text()
    assert "sk-live-123456" not in text
    assert '"apiKey":"«redacted»"' in text
    recorded = runs(rec)
    assert len(recorded) == 3  # appending adds a run, each with its meta line
    for run in recorded:
        meta = run[0]["msg"]
        assert set(meta) == {"recorded", "target", "mcpcli"}
        assert meta["target"] == "stdio: node"  # the arguments are left out
        check_order(run)
        methods = [line["msg"].get("method") for line in run if line["dir"] == "send"]
        assert "initialize" in methods and "notifications/initialized" in methods
    calls = [line["msg"] for line in recorded[1] if line["msg"].get("method") == "tools/call"]
    assert calls[0]["params"]["arguments"] == {"message": "hi"}

    # The same commands against the replay print the same thing.
    for command, stdout in zip(commands, live, strict=True):
        command = [word.replace("sk-live-123456", "sk-other") for word in command]
        r = mcp(*command, "--", *replay_argv(rec))
        assert r.code == 0, r
        assert r.stdout == stdout

    # A request the recording never saw: a JSON-RPC error naming the closest recorded one.
    r = mcp("tools", "call", "echo", "-a", "message=bye", "--", *replay_argv(rec))
    assert r.code == 5, r
    assert "no recorded tools/call request has these params" in r.stderr
    assert "differs in arguments.message" in r.stderr
    r = mcp("prompts", "list", "--", *replay_argv(rec))
    assert r.code == 5, r
    assert "Method not found: prompts/list is not in the recording" in r.stderr

    # The official SDK client against the replay.
    proc = subprocess.run([peers.sdk(), str(HERE / "sdk_replay_client.py"), json.dumps(replay_argv(rec))],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout)
    assert seen["tools"] == [tool["name"] for tool in json.loads(live[0])["tools"]]
    assert seen["echo"] == ["Echo: hi"]
    assert "differs in arguments.message" in seen["unmatched"]


def test_an_http_session_recorded_and_replayed(tmp_path: Path, http_serve: Callable[..., str]) -> None:
    tools = tmp_path / "tools.yaml"
    tools.write_text(TOOLS)
    url = http_serve(str(tools), "--quiet", "--auth-token", TOKEN)
    rec = tmp_path / "http.ndjson"
    commands = [["tools", "list"], ["tools", "call", "echo", "-a", "text=over http"]]
    credentials = [["--bearer-token", TOKEN], ["-H", f"Authorization: Bearer {TOKEN}"]]
    live = []
    for command, given in zip(commands, credentials, strict=True):
        r = mcp(command[0], command[1], url, *command[2:], *given, "--record", str(rec))
        assert r.code == 0, r
        live.append(r.stdout)

    text = rec.read_text()
    assert TOKEN not in text
    assert "Authorization" not in text  # JSON-RPC messages only, never HTTP headers
    recorded = runs(rec)
    assert len(recorded) == 2
    for run in recorded:
        assert run[0]["msg"]["target"] == url
        check_order(run)
    calls = [line for line in recorded[1] if line["msg"].get("method") == "tools/call"]
    assert calls[0]["dir"] == "send"
    assert calls[0]["msg"]["params"]["arguments"] == {"text": "over http"}

    # Replayed over HTTP and over stdio: the same output, without the token.
    replay_url = http_serve("--replay", str(rec), "--no-auth")
    for command, stdout in zip(commands, live, strict=True):
        r = mcp(command[0], command[1], replay_url, *command[2:])
        assert r.code == 0, r
        assert r.stdout == stdout
        r = mcp(*command, "--", *replay_argv(rec))
        assert r.code == 0, r
        assert r.stdout == stdout
