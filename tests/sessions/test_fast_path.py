"""The `@NAME` fast path (`mcpcli/cli/fast.py`) against the real daemon and server-everything.

What it prints must be what the normal path prints, byte for byte, with the same exit
code (the normal path runs in-process through `run()`, which never tries the fast path);
whatever it does not fully understand goes to the normal path, unchanged; and a fast call
loads no heavy library (nor click, nor anyio).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import Result, fake_server, mcp_in, wait_until

from mcpcli.cli.fast import _parse
from sessions.test_real_daemon import real  # noqa: F401 - the fixture: a private run dir, the real daemon

#: What a fast call must not import (tests/cli/test_startup.py's list, and the CLI's own).
HEAVY = ("httpx", "rich", "keyring", "jsonschema", "yaml", "uvicorn", "jq", "anyio", "asyncio", "click",
         "opentelemetry")

#: `main()` as the `mcp` entry point runs it, then which heavy modules it loaded (on PROBE_FD).
RUN_MAIN = f"""
import os, sys
from mcpcli.cli import main
code = main(sys.argv[1:])
sys.stdout.flush(); sys.stderr.flush()
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))
os.write(int(os.environ["PROBE_FD"]), " ".join(loaded).encode())
os._exit(code)
"""


def main_process(
    *args: str, env: dict[str, str] | None = None, stdout: int = subprocess.PIPE
) -> tuple[Result, set[str]]:
    """Run `main(ARGS)` in a fresh interpreter (pipes, no TTY): its result and heavy imports."""
    read, write = os.pipe()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", RUN_MAIN, *args], stdout=stdout, stderr=subprocess.PIPE, text=True,
            timeout=60, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {}), "PROBE_FD": str(write)}, pass_fds=(write,),
        )
    finally:
        os.close(write)
    with os.fdopen(read) as probe:
        loaded = set(probe.read().split())
    return Result(proc.returncode, proc.stdout or "", proc.stderr), loaded


@pytest.fixture
def ev(real: Path, everything: list[str]) -> Path:  # noqa: F811 - the fixture above
    """The session `ev` on server-everything (closed with the daemon by `real`)."""
    opened = mcp_in("session", "open", "ev", "--", *everything)
    assert opened.code == 0, opened
    return real


def _same(fast: Result, normal: Result) -> None:
    assert (fast.code, fast.stdout, fast.stderr) == (normal.code, normal.stdout, normal.stderr)


CASES = {
    "success": ["echo", "--arg", "message=hi"],
    "success, --args JSON, --timeout": ["echo", "--args", '{"message": "a \\u00e9 b"}', "--timeout", "30"],
    "isError": ["nosuch", "--no-validate"],
    "isError --json": ["get-sum", "--no-validate", "--args", "{}", "--json"],
    "bad argument": ["get-sum", "-a", "a=x", "--arg", "b=2"],
    "bad argument --json": ["get-sum", "--arg=a=x", "--arg", "b=2", "--json"],
    "schema violation": ["echo", "--arg", "nope=1"],
    "unknown tool": ["nosuch"],
    "unknown tool, a close name": ["ech", "--arg", "message=hi"],
    "unknown tool --jsonl": ["ech", "--jsonl"],
}


@pytest.mark.peer
@pytest.mark.parametrize("case", list(CASES))
def test_the_fast_path_prints_what_the_normal_path_prints(ev: Path, case: str) -> None:
    args = ["tools", "call", "@ev", *CASES[case]]
    fast, loaded = main_process(*args)
    assert not loaded, f"the fast path was not taken (or loaded {loaded})"
    _same(fast, mcp_in(*args))
    if case == "success":
        assert fast.code == 0 and json.loads(fast.stdout)["content"][0]["text"] == "Echo: hi"


@pytest.mark.peer
def test_a_timeout_is_the_normal_paths_124(ev: Path) -> None:
    args = ["tools", "call", "@ev", "trigger-long-running-operation", "--arg", "duration=20",
            "--arg", "steps=2", "--timeout", "1"]
    fast, loaded = main_process(*args)
    assert not loaded
    normal = mcp_in(*args)
    assert fast.code == normal.code == 124, (fast, normal)
    # The message says how long it waited, as measured: compare all but that number.
    waited = re.compile(r"after \d+\.\ds")
    assert waited.sub("after Ns", fast.stderr) == waited.sub("after Ns", normal.stderr)
    assert fast.stderr.startswith("mcp: error: tools/call timed out after ") and fast.stdout == ""


@pytest.mark.peer
def test_ctrl_c_and_sigterm_exit_130_and_cancel_the_call(ev: Path) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        before = mcp_in("session", "list", "--json").json["sessions"][0]["calls"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpcli", "tools", "call", "@ev", "trigger-long-running-operation",
             "--arg", "duration=30", "--arg", "steps=2"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda b=before: mcp_in("session", "list", "--json").json["sessions"][0]["calls"] > b,
                       what="the call to reach the server")
            proc.send_signal(signum)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert (proc.returncode, out, err) == (130, "", "mcp: error: interrupted\n")
    # The daemon cancelled the calls: the session answers at once and is idle again.
    wait_until(lambda: mcp_in("tools", "call", "@ev", "echo", "--arg", "message=x").code == 0,
               what="the session to answer")


@pytest.mark.peer
@pytest.mark.parametrize("extra", [
    ["--jq", ".content[0"],                # an invalid filter: the normal path words it
    ["--arg", "message=@{file}"],          # a file the command reads in its own directory
    ["--args", "@{json}"],
    ["--trace"],                           # any other flag
])
def test_what_the_fast_path_does_not_understand_takes_the_normal_path(
    ev: Path, tmp_path: Path, extra: list[str]
) -> None:
    (tmp_path / "msg.txt").write_text("from a file")
    (tmp_path / "args.json").write_text('{"message": "from json"}')
    extra = [e.format(file=tmp_path / "msg.txt", json=tmp_path / "args.json") for e in extra]
    args = ["tools", "call", "@ev", "echo", *extra]
    if extra[0] != "--arg" and extra[0] != "--args":
        args += ["--arg", "message=hi"]
    result, loaded = main_process(*args)
    assert "click" in loaded, "the fast path was taken"
    if extra[0] == "--jq":
        assert result.code == 2 and '"the filter was: .content[0"' in result.stderr, result
        return
    assert result.code == 0, result
    assert "hi" in result.stdout or "from" in result.stdout


@pytest.mark.peer
def test_no_such_session_and_no_daemon_get_the_normal_paths_errors(ev: Path, tmp_path: Path) -> None:
    args = ["tools", "call", "@nope", "echo", "--arg", "message=hi"]
    result, loaded = main_process(*args)
    assert "click" in loaded
    _same(result, mcp_in(*args))
    assert result.code == 4 and "no session 'nope'" in result.stderr
    empty = tmp_path / "elsewhere"
    result, loaded = main_process(*args, env={"MCPCLI_RUNTIME_DIR": str(empty)})
    assert "click" in loaded and result.code == 4, result
    assert "no session daemon is running" in result.stderr


@pytest.mark.peer
def test_a_terminal_or_the_switch_takes_the_normal_path(ev: Path) -> None:
    import pty

    args = ["tools", "call", "@ev", "echo", "--arg", "message=hi"]
    _, loaded = main_process(*args, env={"MCPCLI_NO_FAST_PATH": "1"})
    assert "click" in loaded
    leader, follower = pty.openpty()
    try:
        result, loaded = main_process(*args, stdout=follower)
    finally:
        os.close(follower)
        os.close(leader)
    assert "click" in loaded and result.code == 0


@pytest.mark.parametrize("tokens", [
    ["@ev"],                                  # no tool
    ["@ev", "echo", "extra"],                 # click's "unexpected extra argument"
    ["https://h/mcp", "echo"],                # a URL
    ["./tools.yaml", "echo"],                 # a file
    ["tools.yml", "echo"],
    ["@ev", "echo", "--max-chars", "-1"],     # click's IntRange refuses it
    ["@ev", "echo", "--max-chars", "many"],
    ["@ev", "echo", "-r"],                    # --raw without --jq: click's usage error
    ["@", "echo"],
    ["@ev", "echo", "--"],
    ["@ev", "echo", "-h"],
    ["@ev", "echo", "--arg"],                 # a missing value
    ["@ev", "echo", "-amessage=hi"],          # click reads it; we leave it to click
    ["@ev", "echo", "--timeout", "0"],        # click's FloatRange refuses it
    ["@ev", "echo", "--timeout", "nan"],
    ["@ev", "echo", "--args", "-"],
    ["@ev", "echo", "--args", "{}", "--args", "{}"],
    ["@ev", "echo", "--json", "--jsonl"],
    ["@ev", "echo", "--raw"],
    ["@ev", "echo", "-"],
])
def test_the_parser_leaves_anything_unusual_to_click(tokens: list[str]) -> None:
    assert _parse(tokens) is None


def test_the_parser_reads_what_click_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = _parse(["--timeout=5", "@ev", "-a", "x=-1", "echo", "--arg", "y=2", "--no-validate", "-q",
                     "--max-timeout", "9"])
    assert parsed is not None
    assert (parsed["session"], parsed["tool"], parsed["args"]) == ("ev", "echo", ["x=-1", "y=2"])
    assert (parsed["timeout"], parsed["max_timeout"], parsed["validate"]) == (5.0, 9.0, False)
    assert (parsed["jq"], parsed["raw"], parsed["meta"], parsed["json_errors"]) == (None, False, [], False)
    # The common output flags stay on the fast path; --jq makes errors JSON, as on the normal path.
    parsed = _parse(["ev", "echo", "--jq", ".content", "-r", "--max-chars=0", "--meta", "a=1", "--meta=b=x"])
    assert parsed is not None
    assert (parsed["session"], parsed["server"]) == (None, "ev")  # a keepAlive server's, perhaps
    assert (parsed["jq"], parsed["raw"], parsed["meta"], parsed["json_errors"]) == (
        ".content", True, ["a=1", "b=x"], True)
    monkeypatch.setenv("MCP_TIMEOUT", "7")
    assert (_parse(["@ev", "echo"]) or {})["timeout"] == 7.0
    monkeypatch.setenv("MCP_TIMEOUT", "soon")
    assert _parse(["@ev", "echo"]) is None


def test_a_json_rpc_error_exits_5_with_the_normal_paths_error_line(real: Path) -> None:  # noqa: F811
    """server-everything answers every failure as isError; the fake server's `fail` is -32000.

    The fake server also sends a log message (level error) before answering: both paths
    print it first, then the error line."""
    opened = mcp_in("session", "open", "fk", "--", *fake_server("--evil", "it broke"))
    assert opened.code == 0, opened
    for extra in ([], ["--json"]):
        args = ["tools", "call", "@fk", "fail", *extra]
        fast, loaded = main_process(*args)
        assert not loaded
        normal = mcp_in(*args)
        assert fast.code == 5, (fast, normal)
        _same(fast, normal)
    assert fast.stderr == (
        "[error] fake: it broke\n"
        '{"error":{"type":"rpc","message":"it broke (code -32000)","exitCode":5,'
        '"rpc":{"code":-32000,"message":"it broke"}}}\n')


@pytest.mark.parametrize("extra", [[], ["--json"], ["-q"], ["--quiet", "--json"]])
def test_log_messages_of_the_call_reach_its_stderr_as_on_the_normal_path(
    real: Path, extra: list[str]  # noqa: F811
) -> None:
    """A server logging during the call (info and error, unasked): warnings and worse are
    printed before the result, byte for byte as the normal path prints them; -q drops them."""
    opened = mcp_in("session", "open", "lg", "--", *fake_server("--log-unasked"))
    assert opened.code == 0, opened
    args = ["tools", "call", "@lg", "echo", "--arg", "message=hi", *extra]
    fast, loaded = main_process(*args)
    assert not loaded, f"the fast path was not taken (or loaded {loaded})"
    normal = mcp_in(*args)
    assert fast.code == 0, fast
    _same(fast, normal)
    quiet = bool({"-q", "--quiet"} & set(extra))
    assert fast.stderr == ("" if quiet else "[error] fake: error note\n")
    # Nothing of the call's was left to the session's log instead.
    logs = mcp_in("session", "logs", "lg")
    assert "error note" not in logs.stdout


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_a_server_that_crashes_mid_call_gets_the_normal_paths_exit_4(
    real: Path, extra: list[str]  # noqa: F811
) -> None:
    """The same error line (the server's last stderr line, the way out) and exit code as
    the normal path's, in both error formats (the session is restarted between)."""
    opened = mcp_in("session", "open", "cr", "--", *fake_server("--crash-on-call", "3"))
    assert opened.code == 0, opened
    results = []
    for fast_path in (True, False):
        args = ["tools", "call", "@cr", "echo", "--arg", "message=hi", *extra]
        if fast_path:
            result, loaded = main_process(*args)
            assert not loaded
        else:
            result = mcp_in(*args)
        results.append(result)
        restarted = mcp_in("session", "restart", "cr")
        assert restarted.code == 0, restarted
    fast, normal = results
    assert fast.code == 4, fast
    _same(fast, normal)
    assert "crashing now" in fast.stderr and "mcp session restart cr" in fast.stderr


# -- the common flags and keepAlive servers by name (issue 22) ------------------------------

FLAG_CASES = {
    "--jq -r": ["echo", "--arg", "message=hi", "--jq", ".content[0].text", "-r"],
    "--jq, several values": ["echo", "--arg", "message=hi", "--jq", ".content[], .content[0].type"],
    "--jq fails on the result": ["echo", "--arg", "message=hi", "--jq", ".content[0].text + 1"],
    "--jq on isError": ["nosuch", "--no-validate", "--jq", ".isError"],
    "--jq --jsonl": ["echo", "--arg", "message=hi", "--jsonl", "--jq", ".content[0]"],
    "--max-chars": ["echo", "--arg", "message=a long message", "--max-chars", "3"],
    "--meta": ["echo", "--arg", "message=hi", "--meta", "trace=abc-1", "--meta", "n=3"],
    "--meta, a reserved key": ["echo", "--arg", "message=hi", "--meta", "progressToken=1"],
    "--meta, no value": ["echo", "--arg", "message=hi", "--meta", "trace", "--json"],
}


@pytest.mark.peer
@pytest.mark.parametrize("case", list(FLAG_CASES))
def test_the_common_flags_stay_on_the_fast_path_and_print_the_same(ev: Path, case: str) -> None:
    """`--jq` (jq is the one library it loads), `-r`, `--max-chars` and `--meta`."""
    args = ["tools", "call", "@ev", *FLAG_CASES[case]]
    fast, loaded = main_process(*args)
    assert loaded <= ({"jq"} if "--jq" in args else set()), f"the fast path was not taken (or loaded {loaded})"
    _same(fast, mcp_in(*args))
    if case == "--jq -r":
        assert (fast.code, fast.stdout) == (0, "Echo: hi\n")
    if case == "--jq fails on the result":
        assert fast.code == 2 and fast.stderr.startswith('{"error":{"type":"usage","message":"--jq: '), fast
    if case == "--max-chars":
        assert "a long message" in fast.stdout  # JSON output is never cut


def test_meta_reaches_the_server_as_from_the_normal_path(real: Path, tmp_path: Path) -> None:  # noqa: F811
    record = tmp_path / "received.jsonl"
    opened = mcp_in("session", "open", "rec", "--", *fake_server("--record", str(record)))
    assert opened.code == 0, opened
    args = ["tools", "call", "@rec", "echo", "--arg", "message=hi", "--meta", "trace=abc-1", "--meta", 'o={"a":1}']
    fast, loaded = main_process(*args)
    assert not loaded, loaded
    _same(fast, mcp_in(*args))
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    metas = [{k: v for k, v in m["params"]["_meta"].items() if k != "progressToken"}
             for m in calls if m.get("method") == "tools/call"]
    assert metas == [{"trace": "abc-1", "o": {"a": 1}}] * 2, metas


def _keep_alive_config(tmp_path: Path, argv: list[str], **more: object) -> Path:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"ka": {"command": argv[0], "args": argv[1:], "keepAlive": True,
                                                        **more}}}))
    return config


@pytest.mark.parametrize("extra", [[], ["--json"], ["--jq", ".content[0].text", "-r"]])
def test_a_keep_alive_server_by_name_takes_the_fast_path_once_its_session_is_open(
    real: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str]  # noqa: F811
) -> None:
    """Its first call opens the session (the normal path); the next ones are as quick as
    `@NAME` and print what the normal path prints."""
    monkeypatch.setenv("MCP_CONFIG", str(_keep_alive_config(tmp_path, fake_server("--typed-tools"))))
    args = ["tools", "call", "ka", "get-sum", "--arg", "a=1", "--arg", "b=2", *extra]
    first, loaded = main_process(*args)
    assert "click" in loaded and first.code == 0, (first, loaded)
    fast, loaded = main_process(*args)
    assert loaded <= ({"jq"} if "--jq" in extra else set()), f"the fast path was not taken (or loaded {loaded})"
    _same(fast, first)
    _same(fast, mcp_in(*args))
    bad = ["tools", "call", "ka", "get-sum", "--arg", "a=x", "--arg", "b=2", *extra]
    fast_bad, loaded = main_process(*bad)
    assert "click" not in loaded and fast_bad.code == 2, fast_bad
    _same(fast_bad, mcp_in(*bad))


def test_a_keep_alive_server_whose_entry_changed_or_another_profile_takes_the_normal_path(
    real: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """What `open` checks when the normal path joins (the same server, the same profile) is
    checked before a fast call, with the variables of this command's environment."""
    argv = fake_server("--typed-tools")
    monkeypatch.setenv("KA_MODE", "one")
    monkeypatch.setenv("MCP_CONFIG", str(_keep_alive_config(tmp_path, argv, env={"MODE": "${KA_MODE}"})))
    args = ["tools", "call", "ka", "get-sum", "--arg", "a=1", "--arg", "b=2"]
    assert mcp_in(*args).code == 0
    _, loaded = main_process(*args)
    assert not loaded, "the fast path was not taken"
    # Another value of the variable: another server, which the normal path refuses to join.
    monkeypatch.setenv("KA_MODE", "two")
    changed, loaded = main_process(*args)
    assert "click" in loaded and changed.code == 2, changed
    assert "session 'ka' is open on another server" in changed.stderr
    _same(changed, mcp_in(*args))
    monkeypatch.setenv("KA_MODE", "one")
    # Another profile has a session of its own (ka.work), opened by the normal path.
    monkeypatch.setenv("MCP_PROFILE", "work")
    other, loaded = main_process(*args)
    assert "click" in loaded and other.code == 0, other
    _, loaded = main_process(*args)
    assert not loaded, "the fast path was not taken for the profile's open session"
    names = sorted(s["name"] for s in mcp_in("session", "list", "--json").json["sessions"])
    assert names == ["ka", "ka.work"]
    monkeypatch.setenv("MCP_PROFILE", "default")  # the default profile, whose session is `ka`
    _, loaded = main_process(*args)
    assert not loaded, "the fast path was not taken for the default profile"


def test_a_plain_name_that_is_no_keep_alive_server_never_asks_the_daemon(
    real: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """A stdio server without keepAlive goes on to the one-shot path, even when a session of
    that name is open."""
    argv = fake_server("--typed-tools")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"ka": {"command": argv[0], "args": argv[1:]}}}))
    monkeypatch.setenv("MCP_CONFIG", str(config))
    assert mcp_in("session", "open", "ka", "--", *argv).code == 0
    before = mcp_in("session", "list", "--json").json["sessions"][0]["calls"]
    result, _ = main_process("tools", "call", "ka", "get-sum", "--arg", "a=1", "--arg", "b=2")
    assert result.code == 0, result
    assert mcp_in("session", "list", "--json").json["sessions"][0]["calls"] == before


@pytest.mark.parametrize("env", [
    {},
    {"MCP_CONFIG": "rel/mcp.json"},
    {"XDG_CONFIG_HOME": "relative/dir"},
    {"XDG_CONFIG_HOME": ""},
])
def test_the_fast_path_finds_the_config_file_the_normal_path_reads(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    from mcpcli.cli.fast import config_path
    from mcpcli.config import default_config_path

    monkeypatch.delenv("MCP_CONFIG", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert config_path() == os.path.abspath(default_config_path())
