"""Issue 13: what real third-party servers showed, reproduced with the scriptable fake.

Each test names the behaviour it pins; `scripts/interop` runs the real servers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in

from mcpcli.errors import ValidationError
from mcpcli.validation import check


def _methods(record: Path) -> list[str]:
    if not record.exists():
        return []
    return [json.loads(line).get("method", "") for line in record.read_text().splitlines()]


def _text(r: object) -> str:
    return str(r.json["content"][0]["text"])  # type: ignore[attr-defined]


# -- typing and validation -------------------------------------------------------------


def test_no_validate_still_types_arguments_by_the_schema() -> None:
    r = mcp_in("tools", "call", "get-sum", "--arg", "a=2", "--arg", "b=1", "--no-validate",
               "--", *fake_server("--typed-tools"))
    assert r.code == 0, r
    assert json.loads(_text(r)) == {"a": 2, "b": 1}


def test_no_validate_with_args_json_does_not_list_tools(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    r = mcp_in("tools", "call", "get-sum", "--args", '{"a": 2, "b": 1}', "--no-validate",
               "--", *fake_server("--typed-tools", "--record", str(record)))
    assert r.code == 0, r
    assert json.loads(_text(r)) == {"a": 2, "b": 1}
    assert "tools/list" not in _methods(record)


@pytest.mark.slow  # several runs or a wait of half a second or more
def test_union_with_string_takes_exact_literals_of_the_other_type() -> None:
    r = mcp_in("tools", "call", "flags", "--arg", "flag=false", "--arg", "n=3", "--", *fake_server("--typed-tools"))
    assert r.code == 0, r
    assert json.loads(_text(r)) == {"flag": False, "n": 3}
    r = mcp_in("tools", "call", "flags", "--arg", "flag=False", "--arg", "n=007", "--", *fake_server("--typed-tools"))
    assert json.loads(_text(r)) == {"flag": "False", "n": "007"}
    r = mcp_in("tools", "call", "flags", "--arg", 'flag:="false"', "--", *fake_server("--typed-tools"))
    assert json.loads(_text(r)) == {"flag": "false"}


def test_validation_messages_show_json_values_not_python_ones() -> None:
    schema = {"type": "object", "properties": {
        "s": {"type": "string"}, "b": {"type": "integer"}, "o": {"type": "string"},
        "city": {"enum": ["New York", "Paris"]}, "short": {"type": "string", "minLength": 3},
    }}
    cases = [
        ({"s": None}, 'null is not of type string'),
        ({"b": True}, "true is not of type integer"),
        ({"o": {"a": [1, False, None]}}, '{"a": [1, false, null]} is not of type string'),
        ({"city": "Berlin"}, '"Berlin" is not one of "New York", "Paris"'),
        ({"short": "ab"}, '"ab" is too short'),
    ]
    for instance, expected in cases:
        with pytest.raises(ValidationError) as caught:
            check(schema, instance)
        message = caught.value.message
        assert expected in message, (instance, message)
        assert "None" not in message and "True" not in message and "['" not in message


def test_prompt_argument_errors_point_to_prompts_show() -> None:
    r = mcp_in("prompts", "get", "weather", "--", *fake_server("--features"))
    assert r.code == 2, r
    assert "argument 'city' is required" in r.stderr
    assert "mcp prompts show" in r.stderr and "tools show" not in r.stderr


# -- the handshake ----------------------------------------------------------------------


@pytest.mark.slow  # several runs or a wait of half a second or more
def test_timeout_bounds_the_whole_handshake_not_each_request(tmp_path: Path) -> None:
    # A server that never answers (it logs to stdout): before, the probe and initialize
    # each waited --timeout ("initialize timed out after 1.0s" after 2 s).
    r = mcp_in("info", "--timeout", "1", "--", *fake_server("--deaf"), timeout=30)
    assert r.code == 124, r
    assert "the MCP handshake timed out after 1s" in r.stderr
    assert "initialize timed out" not in r.stderr


def test_a_stubborn_server_is_killed_within_tens_of_milliseconds() -> None:
    # The result is printed first; then EOF, TERM and KILL of the group follow within
    # this bound (scripts/bench_stop.py measures it; test_stdio_faults proves the kill).
    from mcpcli.transports import spawn

    assert spawn.EOF_GRACE + spawn.TERM_GRACE <= 0.1


@pytest.mark.slow  # several runs or a wait of half a second or more
def test_a_failed_probe_is_remembered_per_command_line_and_version(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    argv = fake_server("--noisy-probe", "40", "--record", str(record))

    def run(*extra: str) -> tuple[str, list[str]]:
        record.unlink(missing_ok=True)
        r = mcp_in("tools", "list", *extra, "--", *argv)
        assert r.code == 0, r
        return r.stderr, _methods(record)

    stderr, methods = run()
    assert "server/discover" in methods and "validation error 39" in stderr  # first contact
    stderr, methods = run()
    assert "server/discover" not in methods and "validation error" not in stderr
    assert methods[0] == "initialize"
    # The server was upgraded (another version): this run still goes straight to
    # initialize, but the next one probes again.
    stderr, methods = run("-e", "FAKE_VERSION=2")
    assert "server/discover" not in methods
    stderr, methods = run("-e", "FAKE_VERSION=2")
    assert "server/discover" in methods



@pytest.mark.slow  # several runs
def test_a_remembered_legacy_command_line_whose_server_turned_modern_still_works(tmp_path: Path) -> None:
    """The remembered era is only a guess that skips the probe: the handshake verifies it.

    A server refusing `initialize` (now modern-only behind the same command line) is
    probed again in the same run and answers in the modern era, and the memory is dropped;
    once it is legacy again, it is remembered again.
    """
    record = tmp_path / "rec.jsonl"
    argv = fake_server("--record", str(record))

    def run(era: str) -> tuple[list[str], str]:
        record.unlink(missing_ok=True)
        r = mcp_in("tools", "call", "echo", "--arg", "message=hi", "--json", "-e", f"FAKE_ERA={era}",
                   "--", *argv)
        assert r.code == 0, r
        assert json.loads(r.stdout)["content"] == [{"type": "text", "text": "hi"}]
        return _methods(record), r.stderr

    methods, _ = run("legacy")
    assert methods[:2] == ["server/discover", "initialize"]  # first contact: probed, legacy
    methods, _ = run("legacy")
    assert methods[0] == "initialize" and "server/discover" not in methods  # remembered
    methods, stderr = run("modern")
    assert methods[:2] == ["initialize", "server/discover"], methods  # refused, then probed
    assert "tools/call" in methods and stderr == ""
    methods, _ = run("modern")
    assert methods[0] == "server/discover"  # forgotten: a modern server is probed (that is its handshake)
    methods, _ = run("legacy")
    assert methods[:2] == ["server/discover", "initialize"]
    methods, _ = run("legacy")
    assert methods[0] == "initialize"  # remembered again


def _starts(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.slow  # several runs
@pytest.mark.parametrize("how", ["exit", "close"])
def test_a_server_that_ends_on_the_probe_is_started_again_and_remembered(tmp_path: Path, how: str) -> None:
    """rmcp (Rust) servers end when their first message is not `initialize`: started again
    once, asked `initialize`, and remembered as legacy; what the first start said is not shown."""
    record, starts = tmp_path / "rec.jsonl", tmp_path / "starts"
    argv = fake_server("--initialize-first", how, "--record", str(record), "--starts", str(starts), "--log-stderr")
    r = mcp_in("tools", "call", "echo", "--arg", "message=hi", "--json", "--", *argv)
    assert r.code == 0, r
    assert json.loads(r.stdout)["content"] == [{"type": "text", "text": "hi"}]
    assert _methods(record)[:3] == ["server/discover", "initialize", "notifications/initialized"]
    assert _starts(starts) == 2
    assert "expect initialized request" not in r.stderr and "ended on the era probe" not in r.stderr
    assert "got initialize" in r.stderr  # the second start's stderr, shown as always
    record.unlink()
    r = mcp_in("tools", "call", "echo", "--arg", "message=hi", "--json", "--", *argv)
    assert r.code == 0, r
    assert _methods(record)[0] == "initialize" and "server/discover" not in _methods(record)
    assert _starts(starts) == 3  # remembered: one start, no probe


def test_trace_says_why_the_server_was_started_again(tmp_path: Path) -> None:
    r = mcp_in("info", "--trace", "--", *fake_server("--initialize-first", "exit"))
    assert r.code == 0, r
    lines = r.stderr.splitlines()
    note = next(i for i, line in enumerate(lines) if "ended on the era probe" in line)
    assert lines[note].startswith("mcp: the server ended on the era probe, unanswered (server exited with code 1")
    assert "starting it again for the initialize handshake" in lines[note]
    assert '"server/discover"' in lines[note - 1] and '"initialize"' in lines[note + 1]


@pytest.mark.slow  # several runs
def test_only_a_server_that_ends_on_the_probe_is_started_again(tmp_path: Path) -> None:
    """Not one slow to answer it (silence is legacy), nor one that refuses it; a server that
    dies whatever it is sent is started twice but its stderr is shown once."""
    for flags in (("--silent-probe",), ()):
        starts = tmp_path / f"starts{len(flags)}"
        r = mcp_in("info", "--", *fake_server(*flags, "--starts", str(starts)), env={"MCP_PROBE_TIMEOUT": "0.2"})
        assert r.code == 0, r
        assert _starts(starts) == 1, flags
    starts = tmp_path / "starts-dead"
    r = mcp_in("info", "--", *fake_server("--exit-before-init", "7", "--starts", str(starts)))
    assert r.code == 4, r
    assert _starts(starts) == 2
    assert r.stderr.splitlines().count("fatal: boot failure 0") == 1
    assert r.stderr.endswith("mcp: error: server exited with code 7; its stderr says: fatal: boot failure 0 | "
                             "fatal: boot failure 1 | fatal: boot failure 2\n")


@pytest.mark.peer
def test_an_rmcp_server_that_exits_on_the_probe_is_listed(codex_shell: list[str]) -> None:
    """npm @openai/codex-shell-tool-mcp 0.97.0 (rmcp 0.12): exit 4 before ("expect
    initialized request, but received ... server/discover"); now legacy, then remembered."""
    for _ in range(2):
        r = mcp_in("info", "--json", "--", *codex_shell)
        assert r.code == 0, r
        assert r.json["era"] == "legacy" and r.json["serverInfo"]["name"] == "rmcp"
        assert r.stderr == ""
    r = mcp_in("tools", "list", "--jq", ".tools[].name", "-r", "--", *codex_shell)
    assert r.code == 0, r
    assert r.stdout == "shell\n"


def test_root_one_shot_waits_for_the_servers_roots_round_trip(tmp_path: Path) -> None:
    # The server applies roots asynchronously after roots/list and denies calls until then.
    r = mcp_in("tools", "call", "echo", "--arg", "message=hi", "--root", str(tmp_path),
               "--", *fake_server("--ask-roots"))
    assert r.code == 0, r
    assert _text(r) == "hi"


# -- messages ---------------------------------------------------------------------------


def test_lists_of_features_the_server_does_not_offer_are_empty_not_errors() -> None:
    for command, key in ((("resources", "list"), "resources"), (("resources", "templates"), "resourceTemplates"),
                         (("prompts", "list"), "prompts")):
        r = mcp_in(*command, "--", *fake_server())
        assert r.code == 0, r
        assert r.json == {key: []}
        assert "server 'fake' offers no" in r.stderr and "-32601" not in r.stderr


@pytest.mark.slow  # several runs or a wait of half a second or more
def test_reading_what_the_server_does_not_offer_names_the_capability() -> None:
    for args, what in ((("resources", "read", "x://y"), "resources"), (("prompts", "get", "p"), "prompts"),
                       (("complete", "--prompt", "p", "a"), "completions")):
        r = mcp_in(*args, "--", *fake_server())
        assert r.code == 5, (args, r)
        assert f"server 'fake' offers no {what}" in r.stderr
        assert "Method not found" not in r.stderr


def test_a_tool_error_is_reported_once() -> None:
    r = mcp_in("tools", "call", "echo", "--arg", "message=x", "--", *fake_server("--tool-error"))
    assert r.code == 1, r
    assert r.json["isError"] is True
    assert (r.stdout + r.stderr).count("reported an error") == 1


def test_server_errors_name_the_uri_and_say_the_code_once() -> None:
    r = mcp_in("resources", "read", "file:///nope.txt", "--", *fake_server("--features"))
    assert r.code == 5, r
    line = r.stderr.strip().splitlines()[0]
    assert "file:///nope.txt" in line and line.count("-32002") == 1, line


def test_a_jq_syntax_error_is_one_clean_line() -> None:
    r = mcp_in("tools", "list", "--jq", ".a | foo(", "--", *fake_server())
    assert r.code == 2, r
    error = json.loads(r.stderr.strip().splitlines()[-1])["error"]
    assert error["message"].startswith("--jq: syntax error")
    assert not error["message"].endswith(":") and "\n" not in error["message"]


@pytest.mark.slow  # several runs or a wait of half a second or more
def test_unasked_log_messages_follow_one_rule(tmp_path: Path) -> None:
    call = ("tools", "call", "echo", "--arg", "message=hi")
    argv = fake_server("--log-unasked", "--log-stderr")
    r = mcp_in(*call, "--", *argv)
    assert r.code == 0, r
    # Default: the server's stderr, and its unasked log messages from warning up.
    assert "error note" in r.stderr and "info note" not in r.stderr and "got tools/call" in r.stderr
    r = mcp_in(*call, "--log-level", "info", "--", *argv)
    assert "error note" in r.stderr and "info note" in r.stderr
    r = mcp_in(*call, "-q", "--", *argv)
    assert r.code == 0 and r.stderr == "", r
    # What --log-level asked for is not "unasked": -q keeps it.
    r = mcp_in(*call, "-q", "--log-level", "info", "--", *argv)
    assert "info note" in r.stderr and "got tools/call" not in r.stderr
    log = tmp_path / "server.log"
    r = mcp_in(*call, "--server-log", str(log), "--", *argv)
    assert r.code == 0 and r.stderr == "", r
    kept = log.read_text()
    assert "got tools/call" in kept and "info note" in kept and "error note" in kept


def test_stray_lines_on_stdout_follow_the_quiet_rule() -> None:
    """A line on the server's stdout that is not JSON-RPC is a warning; -q drops it as it
    drops the server's stderr, and --trace (which shows every message) keeps it."""
    call = ("tools", "call", "echo", "--arg", "message=hi")
    warning = "mcp: warning: server wrote a line that is not JSON-RPC"
    r = mcp_in(*call, "--", *fake_server("--garbage"))
    assert r.code == 0 and warning in r.stderr, r
    r = mcp_in(*call, "-q", "--", *fake_server("--garbage"))
    assert r.code == 0 and r.stderr == "", r
    r = mcp_in(*call, "-q", "--trace", "--", *fake_server("--garbage"))
    assert r.code == 0 and warning in r.stderr, r
    # A broken answer that names its request is no stray line: it fails the call, -q or not.
    r = mcp_in(*call, "-q", "--", *fake_server("--broken", "truncated"))
    assert r.code == 4 and "not JSON-RPC" in r.stderr, r


def test_a_declared_capability_without_templates_lists_none() -> None:
    # mcp-server-sqlite (SDK 1.x) declares resources but has no resources/templates/list.
    r = mcp_in("resources", "templates", "--", *fake_server("--features"))
    assert r.code == 0, r
    assert r.json == {"resourceTemplates": []}
    assert "offers no resource templates" in r.stderr


@pytest.mark.slow  # several runs or a wait of half a second or more
def test_a_modern_server_too_slow_for_the_probe_is_asked_again() -> None:
    # excel-mcp-server over stdio: it boots slower than the probe's bound, then refuses
    # initialize (-32022) because it serves 2026-07-28.
    r = mcp_in("info", "--json", "--", *fake_server("--slow-modern", "0.6"), env={"MCP_PROBE_TIMEOUT": "0.2"})
    assert r.code == 0, r
    assert r.json["protocolVersion"] == "2026-07-28" and r.json["era"] == "modern"
