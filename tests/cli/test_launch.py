"""One launch per stdio server: what the CLI starts early is exactly what the transport runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import FAKES

from mcpcli.cli._root import run
from mcpcli.transports import spawn as _spawn
from mcpcli.transports import stdio
from mcpcli.transports.spawn import UnsetVariable, launch


def test_launch_layers_options_over_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OURS", "passed")
    monkeypatch.setenv("NOT_ALLOWED", "secret")
    spec = launch("srv", ["a"], {"CONFIGURED": "1", "SET": "config"}, "/conf",
                  passed={"OURS": None, "SET": "option"}, cwd_option="/opt")
    assert (spec.command, spec.args, spec.cwd) == ("srv", ["a"], "/opt")
    assert spec.env["CONFIGURED"] == "1"
    assert spec.env["OURS"] == "passed"
    assert spec.env["SET"] == "option"
    assert "NOT_ALLOWED" not in spec.env
    assert launch("srv", cwd="/conf").cwd == "/conf"
    monkeypatch.delenv("OURS")
    with pytest.raises(UnsetVariable, match="--env OURS: OURS is not set in this environment"):
        launch("srv", passed={"OURS": None})


def test_the_prespawned_server_is_the_one_the_transport_adopts(
    isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A configured server with env and cwd, plus --env and --cwd: spawned once, early, and adopted."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"srv": {
        "command": sys.executable, "args": [str(FAKES / "fake_stdio_server.py")],
        "env": {"CONFIGURED": "${SOURCE}"}, "cwd": str(tmp_path),
    }}}))
    monkeypatch.setenv("SOURCE", "interpolated")
    monkeypatch.setenv("PASSED", "ours")
    early: list[tuple[str, list[str], dict[str, str], str | None]] = []
    real_spawn = _spawn.spawn

    def counted(command: str, args: Sequence[str], env: Mapping[str, str], cwd: str | None) -> Any:
        early.append((command, list(args), dict(env), cwd))
        return real_spawn(command, args, env, cwd)

    def late(*args: Any) -> subprocess.Popen[bytes]:
        raise AssertionError("the transport spawned a second server instead of adopting the first")

    monkeypatch.setattr(_spawn, "spawn", counted)
    monkeypatch.setattr(stdio, "spawn", late)
    code = run(["--config", str(config), "tools", "list", "srv", "--json",
                "-e", "PASSED", "-e", "SET=1", "--cwd", str(workdir)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "tools" in json.loads(out)
    assert len(early) == 1
    command, args, env, cwd = early[0]
    assert (command, args, cwd) == (sys.executable, [str(FAKES / "fake_stdio_server.py")], str(workdir))
    assert (env["CONFIGURED"], env["PASSED"], env["SET"]) == ("interpolated", "ours", "1")
    assert env["PATH"] == os.environ["PATH"]


def test_a_command_resolves_its_target_once(
    isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Prespawn and the connection of `tools call` share one resolution."""
    from mcpcli import targets

    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"srv": {
        "command": sys.executable, "args": [str(FAKES / "fake_stdio_server.py")],
    }}}))
    resolved: list[str | None] = []
    real = targets.resolve_target

    def counted(target: str | None, *args: Any) -> Any:
        resolved.append(target)
        return real(target, *args)

    monkeypatch.setattr(targets, "resolve_target", counted)
    code = run(["--config", str(config), "tools", "call", "srv", "echo", "--arg", "message=hi", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["content"]
    assert resolved == ["srv"]
