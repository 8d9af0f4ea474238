"""The side channel: `mcp script progress|log|elicit|sample|roots|ask` from a served script."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import mcp_in

from toolsfile.util import FakeContext, text_of

pytestmark = pytest.mark.anyio


def script_tool(name: str, script: str) -> str:
    body = "\n".join("          " + line for line in script.strip("\n").splitlines())
    return f"""
  - name: {name}
    description: uses the side channel
    run:
      shell: sh
      script: |
{body}
"""


def answers(requests: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in requests.items():
        method = item["method"]
        if method == "elicitation/create":
            message = item["params"]["message"]
            if "decline" in message:
                out[key] = {"action": "decline"}
            else:
                out[key] = {"action": "accept", "content": {"name": "Ada", "age": 36}}
        elif method == "sampling/createMessage":
            prompt = item["params"]["messages"][0]["content"]["text"]
            out[key] = {"role": "assistant", "content": {"type": "text", "text": f"echo: {prompt}"}, "model": "m"}
        else:
            out[key] = {"roots": [{"uri": "file:///a", "name": "a"}, {"uri": "file:///b"}]}
    return out


async def test_progress_and_log(make_backend: Any) -> None:
    backend = make_backend("version: 1\ntools:" + script_tool("work", """
mcp script progress 1 4 --message "step one"
mcp script progress 0.5 4                 # goes backwards: ignored
mcp script progress 4 4
( mcp script log warning "from a grandchild" )
mcp script log info '{"k": [1, 2]}' --json --logger custom
echo result
"""))
    ctx = FakeContext()
    result = await backend.call_tool("work", {}, ctx)
    assert text_of(result) == "result\n"
    assert ctx.of("progress") == [("progress", 1, 4, "step one"), ("progress", 4, 4, None)]
    assert ctx.of("log") == [("log", "warning", "from a grandchild", "work"), ("log", "info", {"k": [1, 2]}, "custom")]


async def test_elicit_sample_roots_and_ask(make_backend: Any) -> None:
    backend = make_backend("version: 1\ntools:" + script_tool("ask", """
mcp script elicit "Who are you?" --field name --field age:integer --key who
mcp script elicit "Name only" --field name --content
mcp script elicit "please decline" --field name || echo "declined: $?"
mcp script sample "2+2?" --max-tokens 5
mcp script roots --uris
mcp script ask '{"r": {"method": "roots/list"}}'
"""))
    ctx = FakeContext(answers=answers)
    result = await backend.call_tool("ask", {}, ctx)
    lines = text_of(result).splitlines()
    assert json.loads(lines[0]) == {"action": "accept", "content": {"name": "Ada", "age": 36}}
    assert json.loads(lines[1]) == {"name": "Ada", "age": 36}
    assert json.loads(lines[2]) == {"action": "decline"}
    assert lines[3] == "declined: 1"
    assert lines[4] == "echo: 2+2?"
    assert lines[5:7] == ["file:///a", "file:///b"]
    assert json.loads(lines[7]) == {"r": {"roots": [{"uri": "file:///a", "name": "a"}, {"uri": "file:///b"}]}}
    first = ctx.of("ask")[0][1]
    assert first == {"who": {"method": "elicitation/create", "params": {
        "message": "Who are you?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                            "required": ["name", "age"]}}}}
    sample = ctx.of("ask")[3][1]["sample"]
    assert sample == {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}], "maxTokens": 5}}


async def test_a_client_without_the_capability(make_backend: Any) -> None:
    backend = make_backend("version: 1\ntools:" + script_tool("ask", """
mcp script elicit "Name?" --field name
echo "status $?"
""") + "    output: {stderr: always}\n")
    result = await backend.call_tool("ask", {}, FakeContext(capabilities={}))
    assert text_of(result) == "status 4\n\nstderr:\nmcp script: error: the client did not declare elicitation"


async def test_usage_errors_inside_a_call(make_backend: Any) -> None:
    backend = make_backend("version: 1\ntools:" + script_tool("bad", """
mcp script progress lots; echo "a $?"
mcp script log loud hi; echo "b $?"
mcp script ask '[1]'; echo "c $?"
mcp script ask '{"x": {"method": "tools/call"}}'; echo "d $?"
MCP_SCRIPT_TOKEN=forged mcp script progress 1; echo "e $?"
"""))
    result = await backend.call_tool("bad", {}, FakeContext())
    out = result["content"][0]["text"]
    assert out.splitlines() == ["a 2", "b 2", "c 2", "d 2", "e 2"]


async def test_a_request_nested_too_deeply_is_refused_and_the_channel_lives_on(make_backend: Any) -> None:
    import sys

    send = (f"{sys.executable} -c 'import os, socket; s = socket.socket(socket.AF_UNIX); "
            's.connect(os.environ["MCP_SCRIPT_SOCKET"]); s.sendall(b"[" * 60000 + b"\\n"); '
            "print(s.recv(1000).decode())'")
    backend = make_backend("version: 1\ntools:" + script_tool("deep", f"""
{send}
mcp script progress 1 2; echo "after $?"
"""))
    ctx = FakeContext()
    result = await backend.call_tool("deep", {}, ctx)
    first, second = [line for line in text_of(result).splitlines() if line]
    assert json.loads(first) == {"ok": False, "kind": "invalid", "error": "malformed request"}
    assert second == "after 0" and ctx.of("progress") == [("progress", 1, 2, None)]


def test_outside_a_served_call_is_a_clear_usage_error() -> None:
    result = mcp_in("script", "progress", "1", "2", env={"MCP_SCRIPT_SOCKET": "", "MCP_SCRIPT_TOKEN": ""})
    assert result.code == 2
    assert result.stderr == "mcp script: error: not inside a call served by `mcp serve` (MCP_SCRIPT_SOCKET is not set)\n"
    assert result.stdout == ""


def test_script_help_lists_the_commands() -> None:
    result = mcp_in("script", "--help")
    assert result.code == 0
    for word in ("progress", "log", "elicit", "sample", "roots", "ask"):
        assert word in result.stdout


async def test_changed_announces_to_the_runtime(make_backend: Any) -> None:
    backend = make_backend("version: 1\ntools:" + script_tool("announce", """
mcp script changed tools
mcp script changed resource mem://x
mcp script changed resource; echo "missing uri $?"
"""))
    seen: list[tuple[str, Any]] = []
    backend.set_change_listener(lambda kind, uri: seen.append((kind, uri)))
    result = await backend.call_tool("announce", {}, FakeContext())
    assert text_of(result) == "missing uri 2\n"
    assert seen == [("tools", None), ("resource", "mem://x")]


async def test_elicit_get_prints_one_field(make_backend: Any) -> None:
    backend = make_backend("version: 1\ntools:" + script_tool("get", """
name=$(mcp script elicit "Name?" --field name --field age:integer --get name)
age=$(mcp script elicit "Age?" --field name --field age:integer --get age)
printf '%s/%s' "$name" "$age"
"""))
    result = await backend.call_tool("get", {}, FakeContext(answers=answers))
    assert text_of(result) == "Ada/36"


async def test_the_mcp_on_a_scripts_path_is_this_installation(make_backend: Any) -> None:
    from mcpcli import __version__

    backend = make_backend("version: 1\ntools:" + script_tool("which", """
mcp --version
test "$MCP_SCRIPT" = "$(command -v mcp)" && echo same
"""))
    result = await backend.call_tool("which", {}, FakeContext())
    assert text_of(result) == f"mcpcli, version {__version__}\nsame\n"


async def test_a_script_can_speak_the_line_protocol_itself(make_backend: Any) -> None:
    """The README's line protocol, spoken from Python without `mcp script`: one JSON line
    per connection, one JSON line back; several requests from one process."""
    backend = make_backend("""
version: 1
tools:
  - name: direct
    description: talks to the side channel itself
    run:
      argv:
        - "{{ mcp.python }}"
        - -c
        - |
          import json, os, socket
          def send(**request):
              with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                  sock.connect(os.environ["MCP_SCRIPT_SOCKET"])
                  sock.sendall(json.dumps({"token": os.environ["MCP_SCRIPT_TOKEN"], **request}).encode() + b"\\n")
                  return json.loads(sock.makefile().readline())
          print(json.dumps([
              send(op="progress", progress=1, total=2, message="half"),
              send(op="log", level="info", data={"k": 1}),
              send(op="ask", requests={"r": {"method": "roots/list", "params": {}}}),
              send(op="ask", requests={"e": {"method": "elicitation/create", "params": {"message": "please decline"}}}),
              send(op="changed", kind="tools"),
              send(op="log", level="loud", data="x"),
              send(op="log", level="info", data="x", token="forged"),
          ]))
""")
    seen: list[tuple[str, Any]] = []
    backend.set_change_listener(lambda kind, uri: seen.append((kind, uri)))
    ctx = FakeContext(answers=answers)
    answered = json.loads(text_of(await backend.call_tool("direct", {}, ctx)))
    assert answered[:3] == [
        {"ok": True}, {"ok": True},
        {"ok": True, "result": {"r": {"roots": [{"uri": "file:///a", "name": "a"}, {"uri": "file:///b"}]}}}]
    assert answered[3] == {"ok": True, "result": {"e": {"action": "decline"}}}
    assert answered[4] == {"ok": True}
    assert [(a["ok"], a["kind"]) for a in answered[5:]] == [(False, "invalid"), (False, "invalid")]
    assert "bad token" in answered[6]["error"]
    assert ctx.of("progress") == [("progress", 1, 2, "half")]
    assert ctx.of("log") == [("log", "info", {"k": 1}, "direct")]
    assert seen == [("tools", None)]


async def test_a_request_with_the_protocol_version_gets_the_shared_error_form(make_backend: Any) -> None:
    """`"mcpcli": 1` (as `mcp script` sends it) asks for the error form of `core.localrpc`, the
    session daemon's too; lines are bounded alike (a 5 MiB log message passes)."""
    backend = make_backend("""
version: 1
tools:
  - name: direct
    description: talks to the side channel itself
    run:
      argv:
        - "{{ mcp.python }}"
        - -c
        - |
          import json, os, socket
          def send(**request):
              with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                  sock.connect(os.environ["MCP_SCRIPT_SOCKET"])
                  request = {"mcpcli": 1, "token": os.environ["MCP_SCRIPT_TOKEN"], **request}
                  sock.sendall(json.dumps(request).encode() + b"\\n")
                  return json.loads(sock.makefile().readline())
          print(json.dumps([
              send(op="log", level="loud", data="x"),
              send(op="log", level="info", data="x", token="forged"),
              send(op="ask", requests={"e": {"method": "elicitation/create", "params": {"message": "hi"}}}),
              send(op="log", level="info", data="y" * (5 * 1024 * 1024)),
          ]))
""")
    ctx = FakeContext(capabilities={})
    invalid, forged, declined, big = json.loads(text_of(await backend.call_tool("direct", {}, ctx)))
    assert invalid == {"ok": False, "error": {
        "message": "level must be one of debug, info, notice, warning, error, critical, alert, emergency",
        "hint": None, "exit": 2, "kind": "invalid", "code": None, "data": None}}
    assert (forged["error"]["kind"], forged["error"]["exit"]) == ("invalid", 2)
    assert "bad token" in forged["error"]["message"]
    assert (declined["error"]["kind"], declined["error"]["exit"]) == ("declined", 4)
    assert big == {"ok": True}
    assert len(ctx.of("log")[0][2]) == 5 * 1024 * 1024
