"""`--record` and `--trace` against real servers: the connection's secret values are
replaced wherever a server echoes them, the file is private, a symlink is refused."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from helpers import Peers, mcp

from mcpcli.text import REDACTED

pytestmark = [pytest.mark.slow, pytest.mark.peer]

SECRET = "ghp_SEKRIT-0c5e1d"
TOKEN = "sk-abc-7f31b2"


def test_an_env_value_the_server_prints_is_redacted_in_the_recording_and_the_trace(
    peers: Peers, tmp_path: Path
) -> None:
    rec = tmp_path / "r4.ndjson"
    # get-env prints the server's whole environment, our passed-through token with it.
    r = mcp("tools", "call", "get-env", "--env", "GITHUB_TOKEN", "--record", str(rec), "--trace",
            "--", *peers.everything_stdio(), env={"GITHUB_TOKEN": SECRET})
    assert r.code == 0, r
    assert SECRET in r.stdout  # stdout is the data, as the server sent it
    text = rec.read_text()
    assert SECRET not in text
    assert "GITHUB_TOKEN" in text and REDACTED in text
    assert SECRET not in r.stderr
    assert "GITHUB_TOKEN" in r.stderr

    # KEY=VALUE on the command line too.
    rec2 = tmp_path / "r5.ndjson"
    r = mcp("tools", "call", "get-env", "--env", f"MY_KEY={SECRET}", "--record", str(rec2),
            "--", *peers.everything_stdio())
    assert r.code == 0, r
    assert SECRET in r.stdout
    assert SECRET not in rec2.read_text()


def test_a_bearer_token_echoed_over_http_is_redacted(everything_http: str, tmp_path: Path) -> None:
    rec = tmp_path / "http.ndjson"
    r = mcp("tools", "call", everything_http, "echo", "-a", f"message=Authorization: Bearer {TOKEN}",
            "--bearer-token", TOKEN, "--record", str(rec), "--trace")
    assert r.code == 0, r
    assert TOKEN in r.stdout
    text = rec.read_text()
    assert TOKEN not in text
    assert f"Bearer {REDACTED}" in text  # in the request's argument and in the echo
    assert TOKEN not in r.stderr

    # The same with the token in a header: the value after the scheme is a secret too.
    r = mcp("tools", "call", everything_http, "echo", "-a", f"message=token is {TOKEN}",
            "-H", f"Authorization: Bearer {TOKEN}", "--record", str(rec))
    assert r.code == 0, r
    assert TOKEN not in rec.read_text()

    # A bearer credential the connection never knew, quoted in a message: redacted by shape.
    r = mcp("tools", "call", everything_http, "echo", "-a", "message=Authorization: Bearer sk-abc",
            "--record", str(rec))
    assert r.code == 0, r
    assert "sk-abc" not in rec.read_text()


def test_an_existing_readable_file_becomes_private(peers: Peers, tmp_path: Path) -> None:
    rec = tmp_path / "shared.ndjson"
    rec.write_text("")
    rec.chmod(0o644)
    r = mcp("tools", "list", "--record", str(rec), "--", *peers.everything_stdio())
    assert r.code == 0, r
    assert stat.S_IMODE(rec.stat().st_mode) == 0o600
    assert '"dir":"meta"' in rec.read_text()


def test_a_symlink_is_refused(peers: Peers, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.ndjson"
    target.write_text("")
    target.chmod(0o644)
    link = tmp_path / "r.ndjson"
    os.symlink(target, link)
    r = mcp("tools", "list", "--record", str(link), "--", *peers.everything_stdio())
    assert r.code == 2, r
    assert r.stderr.count("\n") == 1 and "symbolic link" in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""
    assert target.read_text() == ""
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
