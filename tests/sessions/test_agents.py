"""The agent features with open sessions (`@NAME`, the real daemon): `tools grep` searches
them too, and `--meta` / `MCP_SPILL_DIR` make `tools call @NAME` take the full path (the
fast path knows neither)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import fake_server, mcp, mcp_in

from sessions.test_real_daemon import pytestmark as daemon_mark
from sessions.test_real_daemon import real  # noqa: F401 - the fixture

pytestmark = daemon_mark


def test_grep_searches_open_sessions_too(real: Path, tmp_path: Path) -> None:  # noqa: F811
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"plain": {"command": fake_server()[0], "args": fake_server()[1:]}}}))
    env = {"MCP_CONFIG": str(config), "MCP_NO_DISCOVERY": "1"}
    assert mcp_in("session", "open", "fk", "--json", "--", *fake_server("--typed-tools"), env=env).code == 0
    r = mcp_in("tools", "grep", "sum|echo", env=env)
    assert r.code == 0, r
    assert [(m["server"], m["tool"]) for m in r.json] == [("plain", "echo"), ("@fk", "echo"), ("@fk", "get-sum")]


@pytest.mark.slow
def test_meta_and_spill_reach_a_session_call(real: Path, tmp_path: Path) -> None:  # noqa: F811
    record = tmp_path / "sent.jsonl"
    assert mcp_in("session", "open", "fk", "--json", "--", *fake_server("--record", str(record))).code == 0
    # Real processes: the fast path is taken in main(), before click.
    r = mcp("tools", "call", "@fk", "echo", "--arg", "message=" + "z" * 40, "--meta", "trace=t1",
            env={"MCP_SPILL_DIR": str(tmp_path / "spill")})
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "z" * 40  # under the threshold: printed
    calls = [m for m in map(json.loads, record.read_text().splitlines()) if m.get("method") == "tools/call"]
    assert calls[-1]["params"]["_meta"]["trace"] == "t1"
    r = mcp("tools", "call", "@fk", "echo", "--arg", "message=" + "z" * 40, "--max-chars", "10",
            env={"MCP_SPILL_DIR": str(tmp_path / "spill")})
    assert r.code == 0, r
    (path,) = (tmp_path / "spill").iterdir()
    assert r.json == {"spilled": str(path), "bytes": path.stat().st_size, "type": "json"}
    r = mcp("tools", "call", "@fk", "echo", "--arg", "message=" + "z" * 30000,
            env={"MCP_SPILL_DIR": str(tmp_path / "spill")})  # the default threshold, no flag at all
    assert r.code == 0, r
    assert r.json["spilled"] != str(path) and r.json["bytes"] > 30000
