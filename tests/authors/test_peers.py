"""`mcp snapshot`, `diff` and `test` against real servers: server-everything, the official
Python SDK's, our own `mcp serve` as a process, and a recording of them replayed offline."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import mcp, mcp_in

pytestmark = [pytest.mark.peer, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
OURS = [sys.executable, "-m", "mcpcli"]

EVERYTHING_TESTS = """\
tests:
  - name: echo
    call: echo
    args: {message: hi}
    expect:
      text: "^Echo: hi$"
      jq: '.content | length == 1'
      json: {content: [{type: text}]}
      snapshot: true
  - name: sum
    call: get-sum
    args: {a: 2, b: 3}
    expect: {text: "is 5"}
  - name: structured
    call: get-structured-content
    args: {location: Chicago}
    expect:
      jq: '.structuredContent.temperature | type == "number"'
  - name: unknown tool
    call: no-such-tool
    expect: {error: true}
  - name: document
    read: demo://resource/static/document/features.md
    expect: {text: "Features"}
  - name: template
    read: demo://resource/dynamic/text/1
    expect: {json: {contents: [{uri: "demo://resource/dynamic/text/1"}]}}
  - name: prompt
    prompt: args-prompt
    args: {city: Paris}
    expect: {text: Paris, json: {messages: [{role: user}]}}
"""

SDK_TESTS = """\
tests:
  - name: add
    call: add
    args: {a: 2, b: 3}
    expect: {json: {structuredContent: {sum: 5}}, snapshot: true}
  - name: greet
    call: greet
    args: {name: Ada}
    expect: {text: "^Hello, Ada!$"}
  - name: fail
    call: fail
    expect: {error: true, text: "Error executing tool fail"}
  - name: note
    read: note://hello
    expect: {text: hello from the SDK}
  - name: item
    read: item://7
    expect: {text: item 7}
  - name: review
    prompt: review
    args: {code: x = 1, style: long}
    expect: {text: "\\\\(long\\\\)"}
"""


def snapshot_twice(*target: str) -> str:
    first = mcp_in("snapshot", "-q", *target)
    assert first.code == 0, first
    second = mcp_in("snapshot", "-q", *target)
    assert second.stdout == first.stdout, "the same server gave two different snapshots"
    return first.stdout


def test_server_everything(tmp_path: Path, everything: list[str]) -> None:
    text = snapshot_twice("--", *everything)
    surface = json.loads(text)
    assert surface["serverInfo"]["name"] == "mcp-servers/everything"
    assert {"echo", "get-sum", "get-structured-content"} <= {t["name"] for t in surface["tools"]}
    snap = tmp_path / "everything.json"
    snap.write_text(text)
    same = mcp_in("diff", str(snap), "-q", "--", *everything)
    assert same.code == 0, same
    assert same.stdout.splitlines()[-1] == "no changes"
    tests = tmp_path / "everything.yaml"
    tests.write_text(EVERYTHING_TESTS)
    assert mcp_in("test", str(tests), "--update", "-q", "--", *everything).code == 0
    r = mcp_in("test", str(tests), "--json", "-q", "--", *everything)
    assert r.code == 0, r
    assert json.loads(r.stdout)["passed"] == 7


def test_the_python_sdk_server(tmp_path: Path, sdk_server: list[str]) -> None:
    text = snapshot_twice("--", *sdk_server)
    surface = json.loads(text)
    add = next(t for t in surface["tools"] if t["name"] == "add")
    assert add["outputSchema"]["properties"]["sum"]["type"] == "integer"
    assert [r["uri"] for r in surface["resources"]][:2] == ["blob://dot.png", "note://extra/0"]  # every page
    snap = tmp_path / "sdk.json"
    snap.write_text(text)
    assert mcp_in("diff", str(snap), "-q", "--", *sdk_server).code == 0
    # a release that drops `fail` and makes `add` take numbers and answer a string
    changed = json.loads(text)
    changed["tools"] = [t for t in changed["tools"] if t["name"] != "fail"]
    add = next(t for t in changed["tools"] if t["name"] == "add")
    add["inputSchema"]["properties"]["a"]["type"] = "string"
    add["outputSchema"]["properties"]["sum"]["type"] = ["integer", "string"]
    (tmp_path / "next.json").write_text(json.dumps(changed))
    r = mcp_in("diff", str(snap), str(tmp_path / "next.json"), "--json")
    assert r.code == 1
    assert [(c["kind"], c["subject"]) for c in json.loads(r.stdout)["changes"]] == [
        ("param-type-narrowed", "tool add param a"), ("output-type-widened", "tool add output sum"),
        ("tool-removed", "tool fail")]
    tests = tmp_path / "sdk.yaml"
    tests.write_text(SDK_TESTS)
    assert mcp_in("test", str(tests), "--update", "-q", "--", *sdk_server).code == 0
    r = mcp_in("test", str(tests), "-q", "--", *sdk_server)
    assert r.code == 0, r
    assert r.stdout.splitlines()[-1].startswith("6 passed, 0 failed, 0 errors")


def test_our_own_serve_as_a_process_matches_it_in_process() -> None:
    v1 = str(HERE / "v1.yaml")
    r = mcp_in("diff", v1, "--", *OURS, "serve", v1)
    assert r.code == 0, r
    assert r.stdout.splitlines()[-1] == "no changes"
    r = mcp_in("test", str(HERE / "smoke.yaml"), "--", *OURS, "serve", v1)
    assert r.code == 0, r
    r = mcp_in("diff", v1, "--json", "--", *OURS, "serve", str(HERE / "v2.yaml"))
    assert r.code == 1
    assert sum(c["breaking"] for c in json.loads(r.stdout)["changes"]) == 7


def test_ci_offline_against_a_recording(tmp_path: Path, everything: list[str]) -> None:
    """Record once against the live server; CI then diffs and tests against the recording alone,
    with the real `mcp` command and `mcp serve --replay` as the server."""
    recording = tmp_path / "everything.ndjson"
    tests = tmp_path / "mcp.yaml"
    tests.write_text(EVERYTHING_TESTS)
    live = mcp_in("snapshot", "-o", str(tmp_path / "mcp-surface.json"), "-q", "--record", str(recording),
                  "--", *everything)
    assert live.code == 0, live
    assert mcp_in("test", str(tests), "--update", "-q", "--record", str(recording), "--", *everything).code == 0
    replay = [*OURS, "serve", "--replay", str(recording)]
    r = mcp("diff", "mcp-surface.json", "--", *replay, cwd=tmp_path)
    assert r.code == 0, r
    assert r.stdout.splitlines()[-1] == "no changes"
    junit = tmp_path / "junit.xml"
    r = mcp("test", "mcp.yaml", "--junit", str(junit), "--", *replay, cwd=tmp_path)
    assert r.code == 0, r
    assert r.stdout.splitlines()[-1].startswith("7 passed, 0 failed, 0 errors")
    assert b'tests="7" failures="0" errors="0"' in junit.read_bytes()
    # a test the recording cannot answer fails with the replay's own explanation
    tests.write_text(EVERYTHING_TESTS + "  - {name: new, call: echo, args: {message: other}}\n")
    r = mcp("test", "mcp.yaml", "--", *replay, cwd=tmp_path)
    assert r.code == 1
    assert "FAIL  mcp.yaml: new" in r.stdout
    assert "the server answered with error -32602" in r.stdout

