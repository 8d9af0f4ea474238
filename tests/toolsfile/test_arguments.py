"""Hostile arguments: injection, option injection, NUL, huge values, path escapes, env names."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from toolsfile.util import RECORDER, FakeContext, text_of

pytestmark = pytest.mark.anyio


def recorder_yaml(tmp_path: Path, params: str, argv: str, extra: str = "") -> str:
    (tmp_path / "rec.py").write_text(RECORDER)
    return f"""
version: 1
tools:
  - name: rec
    description: records what it got
    params:
{params}
    run:
      argv: {argv}
{extra}
"""


async def record(backend: Any, args: dict[str, Any], ctx: FakeContext | None = None) -> dict[str, Any]:
    result = await backend.call_tool("rec", args, ctx or FakeContext())
    assert not result.get("isError"), result
    return json.loads(text_of(result))


HOSTILE = [
    "; touch SENTINEL",
    "$(touch SENTINEL)",
    "`touch SENTINEL`",
    "a && touch SENTINEL",
    "| touch SENTINEL",
    "> SENTINEL",
    "it's \"quoted\" \\ back",
    "  spaces around  ",
    "*",
    "~",
    "line1\nline2",
    "cr\rlf\r\n",
    "tab\there",
    "",
    "emoji 🎉 e\u0301 עברית",
]


@pytest.mark.slow
async def test_every_value_is_exactly_one_argv_element_and_one_env_value(tmp_path: Path, make_backend: Any) -> None:
    backend = make_backend(recorder_yaml(
        tmp_path, "      v: {type: string}",
        '["{{ mcp.python }}", rec.py, "{{ v }}", "--opt={{ v }}"]'))
    for value in HOSTILE:
        got = await record(backend, {"v": value})
        assert got["argv"] == [value, f"--opt={value}"], value
        assert got["env"]["MCP_ARG_V"] == value
    assert not (tmp_path / "SENTINEL").exists()


async def test_shell_mode_gets_values_only_from_the_environment(tmp_path: Path, make_backend: Any) -> None:
    backend = make_backend("""
    version: 1
    tools:
      - name: sh
        description: shell
        params:
          v: {type: string}
        run:
          shell: sh
          script: printf '%s' "$MCP_ARG_V"
          args: ["{{ v }}"]
      - name: sh_args
        description: shell with positional args
        params:
          v: {type: string}
        run:
          shell: sh
          script: printf '%s|' "$@"
          args: ["{{ v }}", "{{ v }}"]
    """)
    for value in HOSTILE:
        if value.startswith("-"):
            continue
        result = await backend.call_tool("sh", {"v": value}, FakeContext())
        assert text_of(result) == value
        result = await backend.call_tool("sh_args", {"v": value}, FakeContext())
        assert text_of(result) == f"{value}|{value}|"
    assert not (tmp_path / "SENTINEL").exists()


async def test_leading_dash_is_refused_before_dashdash(tmp_path: Path, make_backend: Any) -> None:
    backend = make_backend(recorder_yaml(
        tmp_path,
        "      a: {type: string, required: false}\n      b: {type: string, required: false}\n"
        "      c: {type: string, required: false, allow_leading_dash: true}\n"
        "      many: {type: array, default: []}",
        '["{{ mcp.python }}", rec.py, "{{ a }}", "{{ c }}", {each: many, argv: ["{{ item }}"]}, "--", "{{ b }}"]'))
    for args in ({"a": "-rf"}, {"a": "--output=/etc/x"}, {"many": ["ok", "-x"]}):
        result = await backend.call_tool("rec", args, FakeContext())
        assert result.get("isError")
        assert "starts with '-'" in text_of(result)
    got = await record(backend, {"b": "-rf", "c": "--flag"})
    assert got["argv"] == ["--flag", "--", "-rf"]


async def test_nul_bytes_are_refused_and_nothing_runs(tmp_path: Path, make_backend: Any) -> None:
    backend = make_backend("""
    version: 1
    tools:
      - name: t
        description: touches a file when it runs
        params:
          v: {type: string}
          items: {type: array, default: []}
        run: {argv: [touch, RAN, "{{ v }}"]}
    """)
    for args in ({"v": "a\x00b"}, {"v": "x", "items": ["\x00"]}):
        result = await backend.call_tool("t", args, FakeContext())
        assert result.get("isError")
        assert "NUL" in text_of(result)
    assert not (tmp_path / "RAN").exists()


async def test_huge_values(tmp_path: Path, make_backend: Any) -> None:
    backend = make_backend("""
    version: 1
    tools:
      - name: capped
        description: capped
        params:
          v: {type: string, maxLength: 1000}
        run: {argv: ["true", "{{ v }}"]}
      - name: uncapped
        description: uncapped argv
        params:
          v: {type: string}
        run: {argv: ["true", "{{ v }}"]}
      - name: stdin
        description: big values go on stdin
        params:
          v: {type: string}
        run: {argv: [wc, -c], stdin: "{{ v }}"}
    """)
    result = await backend.call_tool("capped", {"v": "x" * 1001}, FakeContext())
    assert result.get("isError")
    assert "too long" in text_of(result)
    result = await backend.call_tool("uncapped", {"v": "x" * 200_000}, FakeContext())
    assert result.get("isError")
    assert "arguments are too long" in text_of(result)
    result = await backend.call_tool("stdin", {"v": "y" * (10 * 1024 * 1024)}, FakeContext())
    assert not result.get("isError")
    assert text_of(result).strip() == str(10 * 1024 * 1024)


async def test_paths_stay_inside_their_root(tmp_path: Path, make_backend: Any) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "file.txt").write_text("x")
    (root / "out").symlink_to("/etc")
    (root / "passwd").symlink_to("/etc/passwd")
    (root / "inner").symlink_to(root / "sub")
    backend = make_backend(recorder_yaml(
        tmp_path,
        "      p: {type: path, within: root}\n"
        "      f: {type: path, within: root, must_exist: true, kind: file, required: false}",
        '["{{ mcp.python }}", rec.py, "{{ p }}", "{{ f }}"]'))
    for bad in ("..", "../rec.py", "/etc/passwd", "root/../../x", "out/passwd", "passwd", "sub/../../rec.py",
                str(tmp_path)):
        result = await backend.call_tool("rec", {"p": bad}, FakeContext())
        assert result.get("isError"), bad
        assert "outside the allowed directory" in text_of(result)
    got = await record(backend, {"p": "root/sub/new file.txt"})
    assert got["argv"] == [str(root.resolve() / "sub" / "new file.txt")]
    got = await record(backend, {"p": "root/inner/file.txt", "f": "root/sub/file.txt"})
    assert got["argv"] == [str(root.resolve() / "sub" / "file.txt")] * 2
    for bad_f, message in (("root/sub/nope", "does not exist"), ("root/sub", "is not a file")):
        result = await backend.call_tool("rec", {"p": "root", "f": bad_f}, FakeContext())
        assert message in text_of(result)


async def test_argument_names_never_become_environment_names(tmp_path: Path, make_backend: Any) -> None:
    backend = make_backend(recorder_yaml(
        tmp_path, "      path: {type: string, required: false}", '["{{ mcp.python }}", rec.py]'),
        environ={"SERVER_SECRET": "do-not-leak", "LD_PRELOAD": "/evil.so"})
    for name in ("PATH", "LD_PRELOAD", "BASH_ENV", "ENV", "PYTHONPATH", "MCP_ARG_PATH"):
        result = await backend.call_tool("rec", {name: "/tmp/evil"}, FakeContext())
        assert result.get("isError")
        assert f"{name}: is not a known field" in text_of(result)
    got = await record(backend, {"path": "/tmp/evil"})
    env = got["env"]
    assert env["MCP_ARG_PATH"] == "/tmp/evil"
    assert env["PATH"].split(os.pathsep)[-1] != "/tmp/evil"
    assert "/tmp/evil" not in env["PATH"]
    assert "SERVER_SECRET" not in env
    assert "LD_PRELOAD" not in env
    assert "BASH_ENV" not in env


async def test_types_are_exact(tmp_path: Path, make_backend: Any) -> None:
    backend = make_backend(recorder_yaml(
        tmp_path,
        "      n: {type: integer, required: false}\n      x: {type: number, required: false}\n"
        "      b: {type: boolean, required: false}\n      o: {type: object, required: false}",
        '["{{ mcp.python }}", rec.py, "{{ n }}", "{{ x }}", "{{ b }}"]',
        "      stdin: json"))
    result = await backend.call_tool("rec", {"n": 3.0}, FakeContext())
    assert "3.0 is not an integer" in text_of(result)
    result = await backend.call_tool("rec", {"n": "3"}, FakeContext())
    assert result.get("isError")
    got = await record(backend, {"n": 12345678901234567890, "x": 1e-7, "b": True, "o": {"k": ["v", 1]}})
    assert got["argv"] == ["12345678901234567890", "1e-07", "true"]
    assert got["env"]["MCP_ARG_O"] == '{"k":["v",1]}'
    assert json.loads(got["stdin"]) == {"n": 12345678901234567890, "x": 1e-7, "b": True, "o": {"k": ["v", 1]}}
    # An optional argument sent as null counts as absent: its element is dropped.
    got = await record(backend, {"n": None, "b": False})
    assert got["argv"] == ["false"]


async def test_arrays_when_and_each(tmp_path: Path, make_backend: Any) -> None:
    backend = make_backend(recorder_yaml(
        tmp_path,
        "      files: {type: array, items: {type: string}, default: []}\n"
        "      verbose: {type: boolean, default: false}\n"
        "      limit: {type: integer, required: false}\n"
        "      tags: {type: array, items: {type: string, pattern: '[a-z ]+'}, default: []}",
        '["{{ mcp.python }}", rec.py, {when: verbose, argv: [-v]}, {when: limit, argv: [--limit, "{{ limit }}"]},'
        ' {each: tags, argv: [--tag, "{{ item }}"]}, "--", "{{ files }}"]'))
    got = await record(backend, {})
    assert got["argv"] == ["--"]
    got = await record(backend, {"files": ["a b", "c"], "verbose": True, "limit": 0, "tags": ["x y", "z"]})
    assert got["argv"] == ["-v", "--limit", "0", "--tag", "x y", "--tag", "z", "--", "a b", "c"]
    result = await backend.call_tool("rec", {"tags": ["BAD;"]}, FakeContext())
    assert result.get("isError")
    assert "tags.0" in text_of(result)


async def test_child_environment_is_an_allow_list(tmp_path: Path, make_backend: Any) -> None:
    backend = make_backend(recorder_yaml(
        tmp_path, "      v: {type: string, default: x}", '["{{ mcp.python }}", rec.py]',
        "      env: {FIXED: literal, FROM_PARAM: 'v={{ v }}', TOKEN: {secret: TOKEN}}\n"
        "      inherit_env: [EXTRA_OK]\n"
        "secrets:\n  TOKEN: {from_env: MY_TOKEN}"),
        environ={"EXTRA_OK": "yes", "NOT_LISTED": "no", "MY_TOKEN": "tok-123456", "BASH_FUNC_x%%": "() { :; }"})
    ctx = FakeContext()
    result = await backend.call_tool("rec", {}, ctx)
    env = json.loads(text_of(result).replace("***", "tok-123456"))["env"]
    assert env["FIXED"] == "literal"
    assert env["FROM_PARAM"] == "v=x"
    assert env["TOKEN"] == "tok-123456"
    assert env["EXTRA_OK"] == "yes"
    assert "NOT_LISTED" not in env
    assert not any(k.startswith("BASH_FUNC") for k in env)
    assert env["MCP_TOOL"] == "rec"
    assert env["MCP_PROTOCOL_VERSION"] == "2025-11-25"
    assert json.loads(env["MCP_CLIENT_CAPABILITIES"]) == ctx.client_capabilities
    assert set(env) - {"FIXED", "FROM_PARAM", "TOKEN", "EXTRA_OK"} <= {
        "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "LOGNAME", "MCP_ARG_V", "MCP_TOOL",
        "MCP_CONFIG_DIR", "MCP_PROTOCOL_VERSION", "MCP_CLIENT_CAPABILITIES", "MCP_SCRIPT_SOCKET",
        "MCP_SCRIPT_TOKEN", "MCP_SCRIPT", "PWD", "SHLVL", "_"}
    # The secret is masked wherever the tool echoes it.
    assert "tok-123456" not in text_of(result)


async def test_stdin_is_dev_null_by_default(tmp_path: Path, make_backend: Any) -> None:
    backend = make_backend("""
    version: 1
    tools:
      - name: cat
        description: would hang on an inherited stdin
        run: {argv: [cat], timeout: 10s}
    """)
    result = await backend.call_tool("cat", {}, FakeContext())
    assert result == {"content": [{"type": "text", "text": ""}]}


async def test_unknown_tool_is_a_protocol_error(make_backend: Any) -> None:
    from mcpcli.errors import RPCError

    backend = make_backend("version: 1\ntools: []\n")
    with pytest.raises(RPCError) as info:
        await backend.call_tool("nope", {}, FakeContext())
    assert info.value.code == -32602


async def test_plainly_valid_arguments_skip_the_jsonschema_validator(
    make_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A served call whose arguments the schema's everyday keywords accept is not handed
    to jsonschema (most of a trivial call's CPU); anything else still is, with its messages."""
    from mcpcli.toolsfile import tool_calls

    backend = make_backend("""
version: 1
tools:
  - name: echo
    description: echoes
    params:
      message: {type: string, maxLength: 5}
      mail: {type: string, required: false, schema: {format: email}}
    mock: {text: ok}
""")
    checked: list[Any] = []
    real = tool_calls._validator

    def counting(tool: Any) -> Any:
        checked.append(tool.name)
        return real(tool)

    monkeypatch.setattr(tool_calls, "_validator", counting)
    result = await backend.call_tool("echo", {"message": "hi"}, FakeContext())
    assert text_of(result) == "ok" and not result.get("isError")
    assert checked == []
    # Rejected by the everyday keywords: jsonschema words the error.
    result = await backend.call_tool("echo", {"message": "toolong"}, FakeContext())
    assert result.get("isError") and "message: " in text_of(result)
    assert checked
    # A keyword outside that set (format) always goes to jsonschema.
    checked.clear()
    result = await backend.call_tool("echo", {"message": "hi", "mail": "nope"}, FakeContext())
    assert result.get("isError") and "mail" in text_of(result)
    assert checked
