"""Faults over stdio: exit codes, messages, no leftovers."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import fake_server, mcp, mcp_in

# `mcp_in` runs the command in this process (a fake server is still a real process); the
# tests about processes (a server that dies, process groups, Ctrl-C, a closed stdout) run
# the real command. Those, and waits of half a second or more, are marked slow.


def test_missing_executable_exits_4_naming_the_command() -> None:
    r = mcp_in("tools", "list", "--", "no-such-mcp-server-xyz")
    assert r.code == 4
    assert "no-such-mcp-server-xyz: command not found" in r.stderr
    assert r.stdout == ""


@pytest.mark.slow
def test_server_that_dies_before_answering_exits_4_with_its_stderr() -> None:
    r = mcp("tools", "list", "--", *fake_server("--exit-before-init", "7"))
    assert r.code == 4, r
    assert "server exited with code 7" in r.stderr
    assert "fatal: boot failure 2" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow
def test_server_that_crashes_mid_call_exits_4() -> None:
    r = mcp("tools", "call", "echo", "--arg", "message=hi", "--", *fake_server("--crash-on-call", "3"))
    assert r.code == 4, r
    assert "server exited with code 3" in r.stderr


def test_garbage_on_stdout_is_reported_and_the_call_still_works() -> None:
    r = mcp_in("tools", "call", "echo", "--arg", "message=hi", "--", *fake_server("--garbage"))
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "hi"
    assert "not JSON-RPC" in r.stderr and "this is not json" in r.stderr


@pytest.mark.slow
def test_timeout_exits_124_and_sends_cancellation(tmp_path: Path) -> None:
    # --timeout also bounds the set-up, the server's start included: 2 s leaves it slack
    # on a busy machine (so it is the call that times out).
    log = tmp_path / "received.jsonl"
    r = mcp_in("tools", "call", "slow", "--timeout", "2", "--",
               *fake_server("--never-answer", "--record", str(log)))
    assert r.code == 124, r
    assert "tools/call timed out" in r.stderr
    received = [json.loads(line) for line in log.read_text().splitlines()]
    call = next(m for m in received if m.get("method") == "tools/call")
    cancels = [m for m in received if m.get("method") == "notifications/cancelled"]
    assert cancels and cancels[0]["params"]["requestId"] == call["id"]


@pytest.mark.slow
def test_progress_does_not_extend_past_max_timeout() -> None:
    # Progress every 50 ms keeps restarting the 2 s timeout (with slack for a busy machine,
    # the server's start included); the call still ends at the 3 s hard limit.
    r = mcp_in("tools", "call", "slow", "--timeout", "2", "--max-timeout", "3", "--",
               *fake_server("--progress-forever"))
    assert r.code == 124, r
    waited = re.search(r"tools/call timed out after (\d+\.\d)s", r.stderr)
    assert waited and float(waited.group(1)) >= 3.0, r.stderr


def test_oversized_message_is_refused() -> None:
    r = mcp_in("tools", "call", "echo", "--arg", "message=x", "--", *fake_server("--huge", str(20 * 1024 * 1024)))
    assert r.code == 4, r
    assert "larger than" in r.stderr


@pytest.mark.slow
def test_stubborn_server_and_its_grandchild_are_killed(tmp_path: Path) -> None:
    # The leak check in conftest fails the test if `sleep 1000` survives.
    r = mcp("tools", "call", "echo", "--arg", "message=hi", "--", *fake_server("--stubborn"))
    assert r.code == 0, r


@pytest.mark.slow
def test_ctrl_c_sends_cancellation_and_exits_130(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpcli", "tools", "call", "slow", "--",
         *fake_server("--never-answer", "--record", str(log))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    # Wait (bounded) until the call has reached the server, then interrupt.
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if log.exists() and "tools/call" in log.read_text():
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 130, err
    received = [json.loads(line) for line in log.read_text().splitlines()]
    assert any(m.get("method") == "notifications/cancelled" for m in received)
    assert out == ""


def test_modern_server_is_detected_by_the_probe() -> None:
    r = mcp_in("tools", "call", "echo", "--arg", "message=007", "--", *fake_server("--modern"))
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "007"


def test_silent_legacy_server_falls_back_after_the_probe_timeout(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    r = mcp_in("tools", "list", "--", *fake_server("--silent-probe", "--record", str(log)),
               env={"MCP_PROBE_TIMEOUT": "0.3"})
    assert r.code == 0, r
    methods = [json.loads(line).get("method") for line in log.read_text().splitlines()]
    assert methods[:3] == ["server/discover", "initialize", "notifications/initialized"]


def test_server_env_is_scrubbed(tmp_path: Path) -> None:
    env = {"AWS_SECRET_ACCESS_KEY": "canary-secret", "BASH_FUNC_x%%": "() { :; }"}
    r = mcp_in("tools", "list", "--env", "VISIBLE=1", "--", sys.executable, "-c",
               "import os,sys; sys.stderr.write(repr(sorted(os.environ)))", env=env)
    assert r.code == 4  # the script is not a server; we only want its environment
    assert "AWS_SECRET_ACCESS_KEY" not in r.stderr and "BASH_FUNC" not in r.stderr
    assert "'VISIBLE'" in r.stderr and "'PATH'" in r.stderr
    assert os.environ.get("AWS_SECRET_ACCESS_KEY") is None


# -- bad input: exit 2 and nothing sent ---------------------------------------------------


def _sent(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line).get("method") for line in log.read_text().splitlines()]


def test_unknown_tool_exits_2_without_calling(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    r = mcp_in("tools", "call", "ehco", "--", *fake_server("--record", str(log)))
    assert r.code == 2, r
    assert "unknown tool 'ehco'" in r.stderr and "did you mean echo" in r.stderr
    assert "tools/call" not in _sent(log)


@pytest.mark.slow
def test_schema_violation_exits_2_naming_the_field_and_sends_nothing(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    r = mcp_in("tools", "call", "echo", "--arg", "message:=5", "--", *fake_server("--record", str(log)))
    assert r.code == 2, r
    assert "argument 'message': 5 is not of type string" in r.stderr
    assert "tools/call" not in _sent(log)
    r = mcp_in("tools", "call", "echo", "--", *fake_server("--record", str(log)))
    assert r.code == 2 and "'message' is required" in r.stderr
    assert "tools/call" not in _sent(log)
    # --no-validate sends what it was given; the server decides.
    r = mcp_in("tools", "call", "echo", "--arg", "message:=5", "--no-validate", "--",
               *fake_server("--record", str(log)))
    assert r.code == 0, r
    assert "tools/call" in _sent(log)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--args", "{not json"), "--args: invalid JSON"),
        (("--args", "[1]"), "--args: expected a JSON object"),
        (("--arg", "novalue"), "expected key=value"),
        (("--arg", "message=@/no/such/file"), "no such file"),
        (("--jq", ".[", "--arg", "message=x"), "--jq:"),
        (("--raw", "--arg", "message=x"), "--raw only applies with --jq"),
        (("--json", "--jsonl", "--arg", "message=x"), "cannot be used together"),
        (("--timeout", "0", "--arg", "message=x"), "--timeout"),
    ],
)
def test_bad_flags_exit_2_before_anything_is_sent(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    log = tmp_path / "received.jsonl"
    r = mcp_in("tools", "call", "echo", *args, "--", *fake_server("--record", str(log)))
    assert r.code == 2, r
    assert message in r.stderr
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert "tools/call" not in _sent(log)


def test_errors_are_json_objects_with_json_output(tmp_path: Path) -> None:
    r = mcp_in("tools", "call", "echo", "--json", "--", *fake_server())
    assert r.code == 2
    error = json.loads(r.stderr.strip().splitlines()[-1])["error"]
    assert error["exitCode"] == 2 and error["type"] == "validation" and "message" in error["message"]


def test_a_method_the_server_lacks_and_did_not_declare_names_the_feature() -> None:
    r = mcp_in("prompts", "get", "p", "--", *fake_server())
    assert r.code == 5, r
    assert "server 'fake' offers no prompts" in r.stderr


@pytest.mark.slow
def test_a_request_that_is_never_answered_times_out_on_every_command() -> None:
    for args in (("prompts", "list"), ("resources", "read", "x://y"), ("complete", "--prompt", "p", "a")):
        r = mcp_in(*args, "--timeout", "0.3", "--", *fake_server("--silent-probe"),
                   env={"MCP_PROBE_TIMEOUT": "0.2"})
        assert r.code == 124, (args, r)
        assert "timed out" in r.stderr


@pytest.mark.slow
def test_a_listen_that_is_never_acknowledged_times_out_with_exit_124() -> None:
    # 2 s: the set-up (the server's start included) fits in it on a busy machine too.
    r = mcp_in("resources", "subscribe", "x://a", "--timeout", "2", "--",
               *fake_server("--modern", "--listen", "silent"))
    assert r.code == 124, r
    assert "subscriptions/listen was not acknowledged within 2s" in r.stderr
    assert "internal error" not in r.stderr


@pytest.mark.slow
def test_info_against_a_server_that_dies_exits_4() -> None:
    r = mcp("info", "--", *fake_server("--exit-before-init", "9"))
    assert r.code == 4, r
    assert "server exited with code 9" in r.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["tools", "list", "--jsonl", "--", *fake_server()],
        ["tools", "list", "--json", "--", *fake_server()],
        ["tools", "call", "echo", "--arg", "message=hi", "--", *fake_server()],
        ["tools", "list", "--jq", ".tools[].name", "-r", "--", *fake_server()],
        ["--help"],
        ["completion", "bash"],
    ],
)
def test_a_closed_stdout_pipe_is_not_an_error(argv: list[str]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpcli", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # like `mcp ... | head -0`: every write to stdout fails with EPIPE
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err  # quietly: the reader left, which is not our error
    assert err == b""


@pytest.mark.slow
@pytest.mark.parametrize("command", ["true", "echo hello", f"{sys.executable} -c pass"])
def test_a_sampling_command_that_does_not_read_its_input(command: str) -> None:
    """The request (200 KB, more than a pipe holds) cannot all be written before the
    command exits: the broken pipe is no error, the exit code and output count."""
    for _ in range(3):  # the race used to go either way; now there is none
        r = mcp_in("tools", "call", "echo", "--arg", "message=x", "--sampling-command", command,
                   "--", *fake_server("--sample", "200000"), timeout=30)
        assert r.code == 0, r
        assert "Traceback" not in r.stderr and "ExceptionGroup" not in r.stderr, r
        assert r.stderr == "", r
        answer = json.loads(r.json["content"][0]["text"])
        reply = answer["result"]
        assert reply["role"] == "assistant"
        assert reply["content"]["text"] == ("hello" if command == "echo hello" else "")


@pytest.mark.slow
@pytest.mark.peer
def test_ctrl_c_ends_a_subscription_with_unsubscribe_and_exit_130(peers: object) -> None:
    from helpers import Peers

    assert isinstance(peers, Peers)
    argv = [sys.executable, "-m", "mcpcli", "resources", "subscribe",
            "demo://resource/static/document/features.md", "--trace", "-q", "--", *peers.everything_stdio()]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen = ""
    for line in proc.stderr:  # bounded by the subscription starting (or the process ending)
        seen += line
        if "watching 1 resource" in line:
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=15)
    seen += err
    assert proc.returncode == 130, seen
    assert '"method":"resources/unsubscribe"' in seen
    assert out == ""


#: A server string with one character of each class a terminal must not get raw:
#: an escape sequence (C0), C1 CSI, a bidi override and isolate, a zero-width space,
#: a line separator and a byte-order mark.
EVIL = "pay\x1b[2J\x9b31m\u202eexe.\u2066x\u2069\u200b\u2028\ufeffend"
EVIL_SHOWN = "pay\\x1b[2J\\x9b31m\\u202eexe.\\u2066x\\u2069\\u200b\\u2028\\ufeffend"
RAW = ("\x1b", "\x9b", "\u202e", "\u2066", "\u2069", "\u200b", "\u2028", "\ufeff")


def test_server_error_messages_and_log_lines_are_escaped_on_stderr() -> None:
    r = mcp_in("tools", "call", "fail", "--", *fake_server("--evil", EVIL))
    assert r.code == 5, r
    assert f"mcp: error: {EVIL_SHOWN} (code -32000)" in r.stderr
    assert f"[error] fake: {EVIL_SHOWN}" in r.stderr  # the log notification
    assert not any(ch in r.stderr for ch in RAW), r.stderr
    assert len(r.stderr.splitlines()) == 2  # no line broken by U+2028


def test_json_errors_on_stderr_escape_but_keep_the_value() -> None:
    r = mcp_in("tools", "call", "fail", "--json", "--", *fake_server("--evil", EVIL))
    assert r.code == 5, r
    error_line = r.stderr.splitlines()[-1]
    assert not any(ch in error_line for ch in RAW)
    assert json.loads(error_line)["error"]["rpc"]["message"] == EVIL  # the exact value


def test_json_output_on_stdout_stays_exact() -> None:
    r = mcp_in("tools", "list", "--json", "--", *fake_server("--evil", EVIL))
    assert r.code == 0, r
    assert r.json["tools"][0]["description"] == EVIL


@pytest.mark.parametrize(
    ("kind", "problem"),
    [("utf8", "codec can't decode"), ("deep", "nested too deeply"), ("truncated", "invalid JSON")],
)
def test_a_broken_answer_fails_its_request_at_once(kind: str, problem: str) -> None:
    """A line that cannot be decoded but names a pending request ends that request
    (exit 4, one line) instead of leaving it to wait out --timeout."""
    # The server stays silent after the broken line: a regression hangs to --timeout
    # (60 s) and the runner's timeout (20 s) fails the test instead.
    r = mcp_in("tools", "call", "echo", "--arg", "message=hi", "--timeout", "60", "--",
               *fake_server("--broken", kind), timeout=20)
    assert r.code == 4, r
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r
    assert lines[0].startswith("mcp: error: server wrote a line that is not JSON-RPC"), r
    assert problem in lines[0]
    assert "Traceback" not in r.stderr and "timed out" not in r.stderr


def test_a_broken_answer_to_the_era_probe_falls_back_to_initialize() -> None:
    """Like an HTTP error on the probe: a legacy server that breaks on server/discover
    is asked to initialize at once (no probe timeout, no exit 4)."""
    r = mcp_in("tools", "list", "--json", "--", *fake_server("--broken-discover"),
               env={"MCP_PROBE_TIMEOUT": "60"}, timeout=20)
    assert r.code == 0, r
    assert [t["name"] for t in r.json["tools"]] == ["echo", "slow"]
    assert "Traceback" not in r.stderr
