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

#: What a fast call must not import (tests/unit/test_startup.py's list, and the CLI's own).
HEAVY = ("httpx", "rich", "keyring", "jsonschema", "yaml", "uvicorn", "jq", "anyio", "asyncio", "click")

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
    ["--jq", ".content[0].text"],          # jq: the normal path's
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
    ["ev", "echo"],                           # not a session
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
