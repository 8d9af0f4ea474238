"""Across protocol eras through `mcp serve --proxy`: a 2025-11-25 client in front of a
2026-07-28 upstream (the conformance fixture, `mcp serve --http`), and a 2026-07-28 client
in front of a 2025-11-25-only upstream (the fake stdio server)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from gwkit import listening, serve_http
from helpers import REPO, fake_server, free_port, mcp_in

pytestmark = [pytest.mark.slow]

PROXY = [sys.executable, "-m", "mcpcli", "serve", "--quiet", "--proxy"]
FIXTURE = str(REPO / "tests/conformance/server.yaml")


def test_a_2025_client_in_front_of_a_2026_upstream(tmp_path: Path) -> None:
    port = free_port()
    sampler = tmp_path / "sampler.py"
    sampler.write_text('import json\nprint(json.dumps({"role": "assistant", "model": "m", '
                       '"content": {"type": "text", "text": "forty-two"}}))\n')
    with listening(serve_http("--quiet", "--no-auth", FIXTURE, port=port), port, what="the fixture") as url:
        gateway = ["--", *PROXY, url]
        legacy = ["--protocol", "2025-11-25"]
        info = mcp_in("info", "--json", *legacy, *gateway)
        assert info.code == 0 and info.json["protocolVersion"] == "2025-11-25", info
        elicited = mcp_in("tools", "call", "test_input_required_result_elicitation", *legacy,
                          "--elicit-json", '{"name": "Ada"}', *gateway)
        assert elicited.code == 0 and "Hello, Ada!" in elicited.stdout, elicited
        sampled = mcp_in("tools", "call", "test_sampling", "--arg", "prompt=meaning?", *legacy,
                         "--sampling-command", f"{sys.executable} {sampler}", *gateway)
        assert sampled.code == 0 and "LLM response: forty-two" in sampled.stdout, sampled
        rooted = mcp_in("tools", "call", "test_input_required_result_list_roots", *legacy,
                        "--root", str(tmp_path), *gateway)
        assert rooted.code == 0 and tmp_path.as_uri() in rooted.stdout, rooted
        progress = mcp_in("tools", "call", "test_tool_with_progress", *legacy, "--json", *gateway)
        assert progress.code == 0, progress


def test_a_2026_client_in_front_of_a_2025_upstream() -> None:
    gateway = ["--", *PROXY, "--", *fake_server("--features")]
    info = mcp_in("info", "--json", *gateway)
    assert info.code == 0 and info.json["protocolVersion"] == "2026-07-28", info
    called = mcp_in("tools", "call", "echo", "--arg", "message=across", "--json", *gateway)
    assert called.code == 0, called
    assert "across" in json.dumps(called.json)
    prompts = mcp_in("prompts", "list", "--json", *gateway)
    assert prompts.code == 0 and [p["name"] for p in prompts.json["prompts"]] == ["weather"], prompts
