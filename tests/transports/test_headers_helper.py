"""`"headersHelper"`: request headers from a command, run at connect time and once more after
each 401; its failures are one-line auth errors (exit 3) and its output is never shown."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from helpers import mcp_in
from httpfake import FakeHTTP, Reply, Req, legacy_mcp

from mcpcli.errors import AuthError
from mcpcli.headers_helper import HeadersHelper, parse_headers, run_helper

HELPER = """
import json, pathlib, sys
counter = pathlib.Path(sys.argv[1])
n = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(n))
print(json.dumps({"Authorization": f"Bearer SECRET-tok-{n}", "X-Team": "blue"}))
"""


class Gate:
    """A legacy MCP server that takes one bearer token (the test changes which)."""

    def __init__(self) -> None:
        self.valid = "Bearer SECRET-tok-1"
        self.inner = legacy_mcp()
        self.seen: list[tuple[str | None, str | None]] = []

    def __call__(self, req: Req) -> Reply:
        self.seen.append((req.header("authorization"), req.header("x-team")))
        if req.header("authorization") != self.valid:
            return Reply(401, {"WWW-Authenticate": "Bearer"}, b"unauthorized")
        return self.inner(req)


def _config(tmp_path: Path, url: str, helper: object) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"corp": {"url": url, "headersHelper": helper}}}))
    return path


def test_helper_headers_at_connect_and_once_more_after_each_401(
    tmp_path: Path, fake: Callable[..., FakeHTTP]
) -> None:
    script = tmp_path / "helper.py"
    script.write_text(HELPER)
    counter = tmp_path / "runs"
    gate = Gate()
    srv = fake(gate)
    config = _config(tmp_path, srv.url, [sys.executable, str(script), str(counter)])

    def call(*extra: str) -> object:
        return mcp_in("--config", str(config), "tools", "call", "corp", "echo", "--arg", "message=hi",
                      "--no-auth", *extra)

    first = call("--trace")
    assert first.code == 0, first
    assert counter.read_text() == "1"
    assert gate.seen and all(seen == ("Bearer SECRET-tok-1", "blue") for seen in gate.seen)
    assert "SECRET" not in first.stdout + first.stderr  # --trace included

    gate.valid = "Bearer SECRET-tok-3"  # tok-2 is refused: the helper runs again and gets tok-3
    second = call()
    assert second.code == 0, second
    assert counter.read_text() == "3"

    gate.valid = "nothing the helper prints"
    third = call()
    assert third.code == 3, third  # once per 401: the second 401 is final
    assert counter.read_text() == "5"
    assert "headersHelper" in third.stderr and "SECRET" not in third.stdout + third.stderr
    assert "Traceback" not in third.stderr and len(third.stderr.strip().splitlines()) <= 2

    # The helper's output is a known secret: replaced where the server echoes it back.
    gate.valid = "Bearer SECRET-tok-6"
    rec = tmp_path / "rec.ndjson"
    echoed = call("--arg", "message=Bearer SECRET-tok-6", "--trace", "--record", str(rec))
    assert echoed.code == 0, echoed
    assert "SECRET-tok-6" in echoed.stdout
    assert "SECRET" not in echoed.stderr + rec.read_text()


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("echo not headers at all", "printed neither a JSON object"),
        ("echo '{\"X\": 1}'", "printed neither a JSON object"),
        ("printf 'Bad Name: x\\n'", "printed neither a JSON object"),
        ("echo SECRET-partial; exit 7", "failed (exit status 7)"),
        (["/nonexistent/helper"], "cannot run headersHelper /nonexistent/helper"),
    ],
)
def test_a_failing_or_garbled_helper_is_one_auth_error(
    tmp_path: Path, fake: Callable[..., FakeHTTP], command: object, message: str
) -> None:
    gate = Gate()
    srv = fake(gate)
    r = mcp_in("--config", str(_config(tmp_path, srv.url, command)), "tools", "list", "corp")
    assert r.code == 3, r
    assert message in r.stderr and "Traceback" not in r.stderr
    assert "SECRET" not in r.stderr and "not headers" not in r.stderr
    assert gate.seen == []  # nothing was sent without the helper's headers


def test_name_value_lines_through_sh(tmp_path: Path, fake: Callable[..., FakeHTTP]) -> None:
    gate = Gate()
    srv = fake(gate)
    config = _config(tmp_path, srv.url, "printf 'Authorization: Bearer SECRET-tok-1\\nX-Team:  blue \\n'")
    r = mcp_in("--config", str(config), "tools", "list", "corp", "--json")
    assert r.code == 0, r
    assert gate.seen[0] == ("Bearer SECRET-tok-1", "blue")


def test_a_helper_that_hangs_is_stopped_with_its_children() -> None:
    async def go() -> None:
        await run_helper("sleep 30 & sleep 30", what="server 'corp'", timeout=0.3)

    with pytest.raises(AuthError) as info:
        anyio.run(go)
    assert "took longer than 0.3 s" in info.value.message


def test_parse_headers_keeps_secrets_out_of_errors() -> None:
    assert parse_headers(b'{"A": "1", "B-c": "x y"}', what="s") == {"A": "1", "B-c": "x y"}
    assert parse_headers(b"A: 1\n\nB: two: parts\n", what="s") == {"A": "1", "B": "two: parts"}
    for bad in (b"", b"[]", b'{"A": "x\\r\\nEvil: 1"}', b"\xff", b"no colon SECRET", b'{"A": "\\u20ac"}',
                b"A: SECRET\x00"):
        with pytest.raises(AuthError) as info:
            parse_headers(bad, what="s")
        assert "SECRET" not in info.value.message + (info.value.hint or "")
    assert "SECRET" not in repr(HeadersHelper("x", name="corp"))


def test_only_our_config_runs_a_helper(tmp_path: Path, fake_home: Path, fake: Callable[..., FakeHTTP]) -> None:
    """Another client's config (or a cloned project's) never makes `mcp` run a command as a helper."""
    marker = tmp_path / "ran"
    gate = Gate()
    srv = fake(gate)
    (fake_home / ".cursor").mkdir()
    (fake_home / ".cursor" / "mcp.json").write_text(json.dumps(
        {"mcpServers": {"cur": {"url": srv.url, "headersHelper": f"touch {marker}"}}}))
    r = mcp_in("tools", "list", "cur", "--no-auth")
    assert r.code == 3, r  # 401: no headers, no sign-in
    assert not marker.exists()
