"""The README's curl recipe for `mcp serve --http`, run as written against a real server.

The recipe is read from the README (between its markers), so it cannot drift: bash runs it
with curl where curl is installed, and its curl commands are also replayed with httpx
(method, headers, body, the session id its pipeline takes from the `Mcp-Session-Id` header),
so the requests are checked on a machine without curl too.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, free_port, stop_process, wait_listening

pytestmark = pytest.mark.slow

TOKEN = "readme-recipe-token"


def recipe() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    begin = readme.index("# curl recipe: begin")
    end = readme.index("# curl recipe: end")
    return readme[begin:end]


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    """`mcp serve examples/tools.yaml --http` started from the checkout, as the README says."""
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpcli", "serve", "examples/tools.yaml", "--http", f"127.0.0.1:{port}", "--quiet"],
        cwd=REPO, env={**os.environ, "MCP_SERVE_TOKEN": TOKEN}, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_listening(port, proc, "mcp serve --http")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)
        log.close()


def _for(url: str) -> str:
    text = recipe()
    assert "URL=http://127.0.0.1:8080/mcp\n" in text, "the recipe no longer sets URL"
    return text.replace("URL=http://127.0.0.1:8080/mcp\n", f"URL={url}\n")


def _check_call(printed: str) -> None:
    answer = json.loads(printed)
    assert answer["id"] == 2, answer
    counts = answer["result"]["structuredContent"]
    assert counts["file"] == str(REPO / "README.md") and counts["lines"] > 100, counts


def _session_gone(url: str, sid: str) -> bool:
    import httpx

    headers = {"Authorization": f"Bearer {TOKEN}", "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25",
               "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    return httpx.post(url, headers=headers, json=ping, timeout=30).status_code == 404


def test_the_recipe_runs_with_curl(url: str) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed (the requests are still checked with httpx)")
    script = _for(url) + 'echo\necho "SID=$SID"\n'
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "MCP_SERVE_TOKEN": TOKEN})
    assert r.returncode == 0 and r.stderr == "", r
    printed, sid_line = r.stdout.rstrip("\n").rsplit("\n", 1)
    _check_call(printed)  # the notification (202) and the DELETE print nothing
    sid = sid_line.removeprefix("SID=")
    assert sid and _session_gone(url, sid)


def _curl_with_httpx(words: list[str]) -> Any:
    """One curl command line of the recipe, sent with httpx (only the flags it uses)."""
    import httpx

    method, headers, data, target = None, {}, None, None
    args = iter(words[1:])
    for word in args:
        if word == "-sS":
            continue
        if word in ("-o", "-D"):
            assert next(args) in ("/dev/null", "-")
        elif word == "-X":
            method = next(args)
        elif word == "-H":
            name, _, value = next(args).partition(": ")
            headers[name] = value
        elif word == "-d":
            data = next(args)
        elif not word.startswith("-") and target is None:
            target = word
        else:
            raise AssertionError(f"the recipe uses curl {word!r}: teach this replay what it does")
    assert target is not None
    return httpx.request(method or ("POST" if data is not None else "GET"), target, headers=headers,
                         content=data, timeout=30)


def test_the_recipes_requests_with_httpx(url: str) -> None:
    variables = {"MCP_SERVE_TOKEN": TOKEN}
    printed: list[str] = []
    for line in _for(url).replace("\\\n", " ").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, eq, rest = line.partition("=")
        if eq and re.fullmatch(r"[A-Z]+", name) and not rest.startswith("$("):
            variables[name] = rest
            continue
        capture = None
        if eq and re.fullmatch(r"[A-Z]+", name):
            capture, line = name, rest[2:rest.rindex(")")]
        command, *pipeline = line.split(" | ")
        expanded = re.sub(r"\$(\w+)", lambda m: variables[m.group(1)], command)
        answer = _curl_with_httpx(shlex.split(expanded))
        assert answer.status_code < 300, (command, answer.status_code, answer.text)
        if capture is not None:  # `-D - | tr | sed` keeps the Mcp-Session-Id header's value
            assert "mcp-session-id" in " ".join(pipeline).lower()
            variables[capture] = answer.headers["mcp-session-id"]
        elif answer.text:
            printed.append(answer.text)
    assert len(printed) == 1
    _check_call(printed[0])
    assert _session_gone(url, variables["SID"])
