"""The one-shot stdio fast path (`mcpcli/cli/oneshot.py`): the full path's output, byte for byte.

Every case runs `main()` twice in fresh interpreters with pipes (as `mcp` runs under a
script): once as is, where the fast path serves it, and once with MCPCLI_NO_FAST_PATH=1,
the full path (click, anyio, the client). Stdout, stderr and the exit code must be the
same. Each side has its own cache directory and runs the case twice, so both the era
probe (first run) and the remembered legacy era (second run) are compared, and what
each side remembered must be the same too. A run the fast path served loads none of
the heavy modules.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Result, fake_server
from sessions.test_fast_path import HEAVY, main_process

#: What a run the fast path serves must not import (jsonschema only for a schema that needs it).
NOT_LOADED = tuple(m for m in HEAVY if m != "jsonschema")
#: Seconds in messages ("timed out after 1.0s") depend on the machine's pace.
_SECONDS = re.compile(r"after \d+\.\ds")
#: A task's id is the server's random choice.
_TASK_ID = re.compile(r'"taskId":"[^"]*"')


def _normal(result: Result) -> tuple[int, str, str]:
    return result.code, _TASK_ID.sub('"taskId":"ID"', result.stdout), _SECONDS.sub("after N.Ns", result.stderr)


def _cache(root: Path) -> dict[str, str]:
    lists = root / "mcpcli" / "lists"
    return {p.name: p.read_text() for p in sorted(lists.glob("*.json"))} if lists.is_dir() else {}


def parity(tmp_path: Path, *args: str, runs: int = 2, fast: bool = True,
           env: dict[str, str] | None = None, may_load: frozenset[str] = frozenset()) -> Result:
    """Run ARGS through both paths `runs` times each (interleaved); assert the same outcome
    every time, and that the fast path served it (or, `fast=False`, handed it over), loading
    nothing heavy but `may_load`."""
    sides = {"fast": tmp_path / "cache-fast", "full": tmp_path / "cache-full"}
    last: Result | None = None
    for _ in range(runs):
        outcomes = {}
        for side, cache in sides.items():
            side_env = {**(env or {}), "XDG_CACHE_HOME": str(cache)}
            if side == "full":
                side_env["MCPCLI_NO_FAST_PATH"] = "1"
            result, loaded = main_process(*args, env=side_env)
            outcomes[side] = result
            if side == "fast":
                served = not loaded & {"click", "anyio"}
                assert served == fast, (loaded, result)
                if served:
                    assert not loaded & (set(NOT_LOADED) - may_load), loaded
        assert _normal(outcomes["fast"]) == _normal(outcomes["full"]), outcomes
        last = outcomes["fast"]
    assert _cache(sides["fast"]) == _cache(sides["full"]) or _same_records(sides)
    assert last is not None
    return last


def _same_records(sides: dict[str, Path]) -> bool:
    """The era records of both sides, less their time stamps. Whether a server exited within
    the grace after EOF (an `exit` record) depends on the machine's load: a test of it
    (`test_a_server_slow_to_exit_on_eof_is_remembered_alike`) uses a server that never does."""
    import json

    def records(root: Path) -> dict[str, object]:
        out = {}
        for name, text in _cache(root).items():
            record = json.loads(text)
            record.pop("storedAt", None)
            if record.get("method") != "exit":
                out[name] = record
        return out

    return records(sides["fast"]) == records(sides["full"])


# -- the fake server, legacy and 2026-07-28 -----------------------------------------------


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_success(tmp_path: Path, era: str) -> None:
    server = fake_server(*(["--modern"] if era == "modern" else []), "--log-stderr")
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--", *server)
    assert result.code == 0
    assert result.stdout == '{"content":[{"type":"text","text":"hi"}]}\n'
    assert "got tools/call" in result.stderr  # the server's stderr, relayed


def test_quiet_drops_the_servers_stderr(tmp_path: Path) -> None:
    result = parity(tmp_path, "tools", "call", "echo", "-q", "--arg", "message=hi", "--",
                    *fake_server("--log-stderr", "--log-unasked"))
    assert result.code == 0
    assert result.stderr == ""


def test_tool_error_exits_1(tmp_path: Path) -> None:
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--",
                    *fake_server("--tool-error"))
    assert result.code == 1
    assert result.stderr == "mcp: error: tool 'echo' reported an error\n"


@pytest.mark.slow
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_unknown_tool_exits_2_with_a_hint(tmp_path: Path, era: str) -> None:
    server = fake_server(*(["--modern"] if era == "modern" else []))
    # The full path's: it also asks whether a capability the one-shot path never declares
    # would reveal the tool (`mcpcli.hidden_tools`).
    result = parity(tmp_path, "tools", "call", "echi", "--arg", "message=hi", "--", *server, fast=False)
    assert result.code == 2
    assert result.stderr == "mcp: error: unknown tool 'echi'\nmcp: hint: did you mean echo?\n"
    as_json = parity(tmp_path / "json", "tools", "call", "echi", "--json", "--", *server, fast=False)
    assert as_json.code == 2
    assert '"type":"usage"' in as_json.stderr


@pytest.mark.slow
def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    server = fake_server("--typed-tools")
    result = parity(tmp_path, "tools", "call", "get-sum", "--arg", "a=x", "--arg", "b=2", "--", *server)
    assert result.code == 2
    assert "--arg a" in result.stderr
    # `--args` that is no JSON object is refused before anything starts, by the full path.
    refused = parity(tmp_path / "args", "tools", "call", "get-sum", "--args", "[1]", "--", *server, fast=False)
    assert refused.code == 2


def test_typed_arguments(tmp_path: Path) -> None:
    result = parity(tmp_path, "tools", "call", "get-sum", "-a", "a=1", "--arg=b=2", "--",
                    *fake_server("--typed-tools"))
    assert result.stdout == '{"content":[{"type":"text","text":"{\\"a\\": 1, \\"b\\": 2}"}]}\n'


@pytest.mark.slow
def test_schema_violation_exits_2(tmp_path: Path) -> None:
    server = fake_server()
    result = parity(tmp_path, "tools", "call", "echo", "--args", '{"message": 3}', "--", *server)
    assert result.code == 2
    assert result.stderr.startswith("mcp: error: argument 'message'")
    # --no-validate sends it as it is.
    sent = parity(tmp_path / "nv", "tools", "call", "echo", "--no-validate", "--args", '{"message": 3}',
                  "--", *server)
    assert sent.code == 0


def test_server_crash_mid_call_exits_4(tmp_path: Path) -> None:
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--",
                    *fake_server("--crash-on-call", "3"))
    assert result.code == 4
    assert result.stderr.endswith(
        "mcp: error: server exited with code 3; its stderr says: crashing now\n")


def test_server_that_dies_before_the_handshake_exits_4(tmp_path: Path) -> None:
    result = parity(tmp_path, "tools", "call", "echo", "--", *fake_server("--exit-before-init", "7"))
    assert result.code == 4
    assert "server exited with code 7" in result.stderr


@pytest.mark.slow
def test_a_call_never_answered_times_out_with_124(tmp_path: Path) -> None:
    # --timeout also bounds the set-up (the server's start): 2 s leaves it slack on a busy machine.
    result = parity(tmp_path, "tools", "call", "slow", "--timeout", "2", "--",
                    *fake_server("--never-answer", "--record", str(tmp_path / "record.jsonl")), runs=1)
    assert result.code == 124
    assert _SECONDS.sub("after N.Ns", result.stderr) == "mcp: error: tools/call timed out after N.Ns\n"
    # Both paths told the server they gave up on the call.
    cancels = [line for line in (tmp_path / "record.jsonl").read_text().splitlines()
               if "notifications/cancelled" in line]
    assert len(cancels) == 2
    assert all('"reason": "timed out"' in line for line in cancels)


def test_log_messages_as_the_full_path_shows_them(tmp_path: Path) -> None:
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--",
                    *fake_server("--log-unasked"))
    assert result.stderr == "[error] fake: error note\n"  # info is below the unasked floor


def test_garbage_lines_are_warnings(tmp_path: Path) -> None:
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--", *fake_server("--garbage"))
    assert result.code == 0
    assert "mcp: warning: server wrote a line that is not JSON-RPC" in result.stderr


def test_quiet_drops_the_warnings_about_stray_lines(tmp_path: Path) -> None:
    """-q drops what the server says unasked: its stderr, and lines on stdout that are not
    JSON-RPC (a print to the wrong stream); the call itself is unaffected."""
    result = parity(tmp_path, "tools", "call", "echo", "-q", "--arg", "message=hi", "--", *fake_server("--garbage"))
    assert result.code == 0
    assert result.stdout == '{"content":[{"type":"text","text":"hi"}]}\n'
    assert result.stderr == ""


def test_a_broken_answer_fails_the_call(tmp_path: Path) -> None:
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--",
                    *fake_server("--broken", "truncated"))
    assert result.code == 4


def test_sampling_is_not_offered(tmp_path: Path) -> None:
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--", *fake_server("--sample", "5"))
    assert result.code == 0
    assert "Method not found: sampling/createMessage" in result.stdout


def test_a_stubborn_server_is_stopped_with_its_group(tmp_path: Path) -> None:
    """EOF and SIGTERM ignored, a grandchild left sleeping: nothing survives (the
    subreaper check in conftest fails the test otherwise)."""
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--",
                    *fake_server("--stubborn"), runs=1)
    assert result.code == 0


def test_a_server_slow_to_exit_on_eof_is_remembered_alike(tmp_path: Path) -> None:
    """A server that stays after EOF (server-everything takes ~365 ms) gets SIGTERM after the
    grace; both paths then remember its command line (the same record, beside the era's)
    and TERM it right after EOF the next time (the order of the signals, on each path:
    tests/transports/test_exit_memory.py)."""
    import json

    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--",
                    *fake_server("--linger"))
    assert result.code == 0
    for side in ("cache-fast", "cache-full"):
        records = {record["method"]: record for record in map(json.loads, _cache(tmp_path / side).values())}
        assert records["exit"]["result"] == {"slowExit": True}
        assert records["exit"]["target"] == records["era"]["target"]


@pytest.mark.slow
def test_a_server_that_changed_era_between_runs(tmp_path: Path) -> None:
    """Remembered as legacy, now modern-only: both paths run the same negotiation (the
    protocol core's), which forgets the era, probes and calls; so both say the same, and
    the fast path no longer hands the command over."""
    era = tmp_path / "era"
    era.write_text("legacy")
    server = fake_server("--era-file", str(era))
    args = ("tools", "call", "echo", "--arg", "message=hi", "--", *server)
    assert parity(tmp_path, *args).code == 0  # both remember the command line as legacy
    era.write_text("modern")
    changed = parity(tmp_path, *args, runs=1)
    assert changed.code == 0
    assert changed.stdout == '{"content":[{"type":"text","text":"hi"}]}\n'
    assert parity(tmp_path, *args, runs=1).code == 0  # now probed: modern, on the fast path


@pytest.mark.slow
def test_a_silent_probe_means_legacy(tmp_path: Path) -> None:
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--",
                    *fake_server("--silent-probe"), env={"MCP_PROBE_TIMEOUT": "0.3"})
    assert result.code == 0


@pytest.mark.slow
@pytest.mark.parametrize("how", ["exit", "close"])
def test_a_server_that_ends_on_the_probe_is_started_again(tmp_path: Path, how: str) -> None:
    """An rmcp server ends at a first message that is not `initialize`: the fast path, as
    the full path, starts it again once, unheard, asks `initialize` and remembers the command
    line as legacy (the second run starts it once)."""
    starts = tmp_path / "starts"
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--",
                    *fake_server("--initialize-first", how, "--log-stderr", "--starts", str(starts)))
    assert result.code == 0
    assert result.stdout == '{"content":[{"type":"text","text":"hi"}]}\n'
    assert "expect initialized request" not in result.stderr and "got tools/call" in result.stderr
    assert len(starts.read_text().splitlines()) == 2 + 2 + 1 + 1  # each side: restarted, then remembered


def test_what_the_fast_path_leaves_to_the_full_path() -> None:
    from mcpcli.cli.oneshot import try_call

    server = fake_server()
    for args in (
        ["tools", "call", "echo", "--meta", "a=1", "--", *server],  # a flag it does not take
        ["tools", "call", "echo", "--jq", ".[", "--", *server],     # an invalid filter: the full path words it
        ["tools", "call", "srv", "echo", "--", *server],            # TARGET and a command
        ["tools", "call", "echo", "--arg", "m=@file", "--", *server],  # a file read
        ["tools", "call", "echo", "--", "${CMD}"],                  # interpolation
        ["tools", "call", "echo", "--"],                            # no command
        ["tools", "list", "--", *server],
    ):
        assert try_call(args) is None, args


@pytest.mark.slow
@pytest.mark.parametrize("extra", [
    ["--jq", ".content[0].text", "-r"],
    ["--jq", ".content[0].text + 1"],        # fails on the result: exit 2, a JSON error
    ["--jsonl", "--jq", ".content[]"],
    ["--max-chars", "2", "--json"],           # JSON is never cut
])
def test_the_output_flags_stay_on_the_one_shot_path(tmp_path: Path, extra: list[str]) -> None:
    """--jq (with -r) and --max-chars print what the full path prints (issue 22)."""
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", *extra, "--", *fake_server(),
                    runs=1, may_load=frozenset({"jq"}))
    if "-r" in extra:
        assert (result.code, result.stdout) == (0, "hi\n"), result
    if "+ 1" in extra[1]:
        assert result.code == 2 and result.stderr.startswith('{"error":{"type":"usage","message":"--jq: ')


# -- the real server ----------------------------------------------------------------------


@pytest.mark.peer
def test_server_everything(tmp_path: Path, everything: list[str]) -> None:
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--", *everything)
    assert result.code == 0
    assert result.stdout == '{"content":[{"type":"text","text":"Echo: hi"}]}\n'
    summed = parity(tmp_path / "sum", "tools", "call", "get-sum", "-a", "a=2", "-a", "b=3", "--json", "--",
                    *everything, runs=1)
    assert "5" in summed.stdout


@pytest.mark.peer
def test_an_rmcp_server_that_exits_on_the_probe(tmp_path: Path, codex_shell: list[str]) -> None:
    """npm @openai/codex-shell-tool-mcp: started again after the probe on both paths. Its one
    tool needs Codex's sandbox, which it refuses to run without: the same error either way."""
    result = parity(tmp_path, "tools", "call", "shell", "-a", "command=true", "-a", "workdir=/", "--",
                    *codex_shell)
    assert result.code == 5
    assert result.stderr == "mcp: error: codex-linux-sandbox was required but not provided (code -32603)\n"


@pytest.mark.peer
def test_server_everything_elicitation_is_declined(tmp_path: Path, everything: list[str]) -> None:
    result = parity(tmp_path, "tools", "call", "trigger-elicitation-request", "--", *everything, runs=1)
    assert "mcp: warning: declined the server's request for input" in result.stderr


@pytest.mark.peer
def test_server_everything_progress_restarts_the_clock(tmp_path: Path, everything: list[str]) -> None:
    result = parity(tmp_path, "tools", "call", "trigger-long-running-operation", "-a", "duration=2",
                    "-a", "steps=8", "--timeout", "1.2", "--", *everything, runs=1)
    assert result.code == 0


@pytest.mark.peer
def test_server_everything_a_task_tool_goes_to_the_full_path(tmp_path: Path, everything: list[str]) -> None:
    result = parity(tmp_path, "tools", "call", "simulate-research-query", "-a", "topic=x", "--",
                    *everything, runs=1, fast=False)
    assert result.code == 0


def test_sigterm_interrupts_with_130(tmp_path: Path) -> None:
    """SIGTERM while the call waits: exit 130 with the full path's line, the server stopped."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    record = tmp_path / "record.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpcli", "tools", "call", "slow", "--",
         *fake_server("--never-answer", "--record", str(record))],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    from helpers import wait_until

    wait_until(lambda: record.exists() and "tools/call" in record.read_text(), 20, "the call to be sent")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert err.endswith("mcp: error: interrupted\n")
    assert out == ""
    assert '"reason": "cancelled by the user"' in record.read_text()


# -- a configured stdio server --------------------------------------------------------------


def _configure(home: Path, **servers: dict[str, object]) -> None:
    import json

    config = home / "config" / "mcpcli"
    config.mkdir(parents=True, exist_ok=True)
    (config / "mcp.json").write_text(json.dumps({"mcpServers": servers}))


@pytest.mark.slow
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_configured_server(tmp_path: Path, fake_home: Path, era: str) -> None:
    """A named stdio server: its configured env, the era memory, and (2026-07-28, ttlMs) the
    cached tools/list the next call reuses instead of asking; both stored alike."""
    server = fake_server(*(["--modern", "--ttl", "600000"] if era == "modern" else []),
                         "--record", str(tmp_path / "record.jsonl"), "--log-stderr")
    _configure(fake_home, fk={"command": server[0], "args": server[1:], "env": {"FAKE_VERSION": "7"}})
    result = parity(tmp_path, "tools", "call", "fk", "echo", "--arg", "message=hi")
    assert result.stdout == '{"content":[{"type":"text","text":"hi"}]}\n'
    listed = (tmp_path / "record.jsonl").read_text().count('"tools/list"')
    assert listed == (2 if era == "modern" else 4)  # each side listed once, or every time
    if era == "legacy":
        # An upgraded server (another version behind the same command line): the era is
        # forgotten, so the next call probes again; both sides' records say the same.
        _configure(fake_home, fk={"command": server[0], "args": server[1:], "env": {"FAKE_VERSION": "8"}})
        assert parity(tmp_path, "tools", "call", "fk", "echo", "--arg", "message=hi", runs=1).code == 0
        import json

        methods = [json.loads(text)["method"] for text in _cache(tmp_path / "cache-fast").values()]
        assert methods == ["tools/list"]


def test_configured_servers_the_fast_path_leaves_alone(tmp_path: Path, fake_home: Path) -> None:
    from mcpcli.cli.oneshot import try_call

    server = fake_server()
    _configure(fake_home, unset={"command": server[0], "args": [*server[1:], "${NOT_SET_ANYWHERE}"]},
               kept={"command": server[0], "args": server[1:], "keepAlive": True},
               web={"url": "http://127.0.0.1:9/mcp"})
    for target in ("unset", "kept", "web", "nosuch", "@kept", "file.yaml"):
        assert try_call(["tools", "call", target, "echo"]) is None, target
    unset = parity(tmp_path, "tools", "call", "unset", "echo", fast=False, runs=1)
    assert unset.code == 2


@pytest.mark.slow
def test_a_server_that_stops_reading_times_out(tmp_path: Path) -> None:
    """Arguments larger than the pipe holds, to a server that no longer reads: the write
    waits on the request's clock, never forever (exit 124, the server stopped), on both
    paths (the full path's shutdown once closed stdin under its parked writer: exit 1)."""
    big = '{"message": "' + "x" * 120_000 + '"}'
    result = parity(tmp_path, "tools", "call", "echo", "--timeout", "2", "--args", big, "--",
                    *fake_server("--deaf-after-list"), runs=1)
    assert (result.code, result.stdout) == (124, "")
    assert _SECONDS.sub("after N.Ns", result.stderr) == "mcp: error: tools/call timed out after N.Ns\n"


def test_what_comes_after_the_answer_is_not_shown(tmp_path: Path) -> None:
    """The full path stops listening once the call is answered: a log message written right
    behind the answer (the same write) is never shown; nor is it here."""
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--", *fake_server("--log-after"))
    assert (result.code, result.stderr) == (0, "")


@pytest.mark.peer
@pytest.mark.parametrize(("call", "code"), [
    (("add", "-a", "a=1", "-a", "b=2"), 0),
    (("ask",), 0),                      # elicitation in a multi-round-trip result: declined
    (("haiku", "-a", "topic=x"), 5),    # sampling is not offered: the server's -32021
    (("add", "-a", "a=x", "-a", "b=1"), 2),
])
def test_the_official_sdk_server(tmp_path: Path, sdk_server: list[str], call: tuple[str, ...], code: int) -> None:
    """A 2026-07-28 server on the official Python SDK."""
    result = parity(tmp_path, "tools", "call", *call, "--", *sdk_server)
    assert result.code == code
    if call[0] == "ask":
        assert "declined the server's request for input (Pick a colour)" in result.stderr


@pytest.mark.slow
def test_tools_listed_in_pages(tmp_path: Path) -> None:
    """Every page is followed before the tool is looked up (and named in the hint)."""
    server = fake_server("--typed-tools", "--paged-tools")
    assert parity(tmp_path, "tools", "call", "get-sum", "-a", "a=1", "-a", "b=2", "--", *server).code == 0
    unknown = parity(tmp_path / "unknown", "tools", "call", "flag", "--", *server, fast=False)
    assert unknown.stderr == "mcp: error: unknown tool 'flag'\nmcp: hint: did you mean flags?\n"


def test_profiles_on_the_one_shot_path(tmp_path: Path) -> None:
    """--profile goes to the full path (a stdio server has no sign-in, so it changes nothing);
    a valid MCP_PROFILE keeps the fast path, an invalid one gets the full path's usage error."""
    server = fake_server()
    flag = parity(tmp_path / "flag", "tools", "call", "echo", "--arg", "message=hi", "--profile", "work",
                  "--", *server, runs=1, fast=False)
    assert flag.code == 0 and flag.stdout == '{"content":[{"type":"text","text":"hi"}]}\n'
    env = parity(tmp_path / "env", "tools", "call", "echo", "--arg", "message=hi", "--", *server, runs=1,
                 env={"MCP_PROFILE": "work"})
    assert env.code == 0
    bad = parity(tmp_path / "bad", "tools", "call", "echo", "--arg", "message=hi", "--", *server, runs=1,
                 fast=False, env={"MCP_PROFILE": "a b"})
    assert bad.code == 2 and "invalid profile name 'a b'" in bad.stderr


_HANDSHAKE_TIMEOUT = ("mcp: error: the MCP handshake timed out after {}s (--timeout bounds the whole set-up)\n"
                      "mcp: hint: check that it is an MCP server for this transport; --trace shows the traffic\n")


#: A server still starting, as the client sees it: it reads its input and says nothing (a
#: real server answering within the 1 ms --timeout on an idle machine made this a race).
_STARTING = ("-c", "import sys; sys.stdin.buffer.read()")


@pytest.mark.parametrize(("timeout", "server"), [("0.001", _STARTING), ("0.3", ("--deaf",))],
                         ids=["starting", "deaf"])
def test_a_handshake_timeout_is_worded_alike_on_both_paths(
    tmp_path: Path, timeout: str, server: tuple[str, ...]
) -> None:
    command = [sys.executable, *server] if server is _STARTING else fake_server(*server)
    result = parity(tmp_path, "tools", "call", "echo", "--arg", "message=hi", "--timeout", timeout, "--",
                    *command, runs=1)
    assert result.code == 124
    assert result.stderr.endswith(_HANDSHAKE_TIMEOUT.format(timeout))  # after the deaf one's stdout warning


def test_a_handshake_request_timing_out_first_is_the_handshake_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The full path's race: the initialize request's own deadline (the same --timeout,
    started a moment later) may fire before the handshake's; it must read the same."""
    from helpers import mcp_in

    from mcpcli.core.exchange import Exchange
    from mcpcli.errors import RequestTimeout

    def late(self: Exchange, *args: object) -> Iterator[object]:
        raise RequestTimeout("initialize timed out after 0.0s")
        yield  # a flow

    monkeypatch.setattr(Exchange, "negotiate", late)
    r = mcp_in("tools", "call", "echo", "--arg", "message=hi", "--timeout", "0.001", "--", *fake_server())
    assert r.code == 124, r
    assert r.stderr == _HANDSHAKE_TIMEOUT.format("0.001")


@pytest.mark.parametrize("option", ["--timeout", "--max-timeout"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_non_finite_timeout_is_a_usage_error_on_both_paths(tmp_path: Path, option: str, value: str) -> None:
    result = parity(tmp_path, "tools", "call", "echo", option, value, "--", *fake_server(), runs=1, fast=False)
    assert result.code == 2
    why = "-inf is not in the range x>0." if value == "-inf" else f"{value!r} is not a finite number."
    assert result.stderr.startswith(f"mcp: error: Invalid value for '{option}': {why}\n"), result


@pytest.mark.parametrize("value", ["nan", "abc", "-1"])
def test_a_bad_probe_timeout_is_a_usage_error_on_both_paths(tmp_path: Path, value: str) -> None:
    result = parity(tmp_path, "tools", "call", "echo", "--", *fake_server(), runs=1, fast=False,
                    env={"MCP_PROBE_TIMEOUT": value})
    assert result.code == 2
    assert result.stderr == (f"mcp: error: MCP_PROBE_TIMEOUT={value!r}: expected a finite number of seconds, "
                             "0 or more\n")


def test_a_non_finite_timeout_from_the_environment_is_a_usage_error_on_both_paths(tmp_path: Path) -> None:
    result = parity(tmp_path, "tools", "call", "echo", "--", *fake_server(), runs=1, fast=False,
                    env={"MCP_TIMEOUT": "nan"})
    assert result.code == 2
    assert result.stderr.startswith("mcp: error: Invalid value for '--timeout': 'nan' is not a finite number.\n")


def test_an_interrupt_right_after_the_request_is_written_still_cancels_it() -> None:
    """SIGTERM (or Ctrl-C) landing just after the request went out, before the wait for
    its answer begins: the server, which may be reading it already, is told to cancel."""
    from mcpcli.cli._oneshot_client import SyncClient

    sent: list[object] = []

    class Interrupted:
        """A server stand-in: takes each message, and the request's write is interrupted."""

        def send(self, message: object, deadline: float | None) -> None:
            sent.append(message)
            if getattr(message, "method", None) == "tools/call":
                raise KeyboardInterrupt

    client = SyncClient(Interrupted(), "mcp", 30.0, 60.0, quiet=True)  # type: ignore[arg-type]
    with pytest.raises(KeyboardInterrupt):
        client.request("tools/call", {"name": "slow"})
    cancel = sent[-1]
    assert getattr(cancel, "method", None) == "notifications/cancelled"
    assert getattr(cancel, "params", None) == {"requestId": 1, "reason": "cancelled by the user"}
