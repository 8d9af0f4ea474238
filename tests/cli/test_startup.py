"""Start-up stays light: help and completion must not import heavy libraries; a `--` server
started before click loads is the one used, or killed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import fake_server, mcp, mcp_in

HEAVY = ("httpx", "rich", "keyring", "jsonschema", "yaml", "uvicorn", "jq", "anyio", "asyncio", "textual",
         "opentelemetry")


def _imported_by(code: str, env: dict[str, str] | None = None) -> set[str]:
    import os

    out = subprocess.run(
        [sys.executable, "-c",
         code + "\nimport sys; sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True, env={**os.environ, **(env or {})},
    ).stderr.split("MODULES ")[-1].split()
    return {name.split(".")[0] for name in out}


def test_importing_the_cli_loads_no_heavy_library() -> None:
    loaded = _imported_by("import mcpcli.cli")
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_help_loads_no_heavy_library() -> None:
    code = (
        "import sys\nfrom mcpcli.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
    )
    loaded = _imported_by(code)
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


@pytest.mark.slow
def test_only_inspect_imports_textual(tmp_path: Path) -> None:
    """Other commands never load Textual, even to fail; `mcp inspect` does (and needs a terminal)."""
    tools = tmp_path / "tools.yaml"
    tools.write_text("version: 1\ntools:\n  - {name: t, description: d, run: {argv: [echo, hi]}}\n")
    for args in (["tools", "list", str(tools)], ["inspect", "--help"], ["tools", "call", str(tools), "t"]):
        status, loaded = _call_loads(*args)
        assert status == 0, args
        assert "textual" not in loaded, args
    status, loaded = _call_loads("inspect", str(tools))
    assert status == 2  # no terminal here
    assert "textual" not in loaded  # refused before loading it


def test_help_loads_no_opentelemetry_even_when_the_variables_ask_for_spans() -> None:
    """Spans are set up on the first one: a command that sends no request imports nothing."""
    code = (
        "import sys\nfrom mcpcli.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
    )
    loaded = _imported_by(code, env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_help_lists_every_command() -> None:
    r = mcp_in("--help")
    assert r.code == 0
    for name in ("tools", "resources", "prompts", "complete", "ping", "info", "inspect", "servers", "serve",
                 "auth", "completion"):
        assert f"  {name} " in r.stdout
    commands = [line.split()[0] for line in r.stdout.split("Commands:")[1].splitlines() if line.startswith("  ") and line.split()]
    assert "script" not in commands


def test_version() -> None:
    r = mcp_in("--version")
    assert r.code == 0 and r.stdout.startswith("mcpcli, version ")


def test_usage_errors_exit_2_with_one_line_and_a_hint() -> None:
    r = mcp_in("tools", "call")
    assert r.code == 2
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("mcp: error: ") and lines[-1].startswith("mcp: hint: ")
    assert "Traceback" not in r.stderr and r.stdout == ""
    r = mcp_in("no-such-command")
    assert r.code == 2 and "No such command" in r.stderr


def test_unknown_target_exits_2_and_json_errors_are_json() -> None:
    r = mcp_in("tools", "list", "nosuch", "--json")
    assert r.code == 2
    import json

    err = json.loads(r.stderr)
    assert err["error"]["exitCode"] == 2 and "unknown server 'nosuch'" in err["error"]["message"]


# `main()` spawns a `--` server before importing click (`mcp_in` runs `run()`, which skips
# that): these two need the real command.


@pytest.mark.slow
def test_the_early_spawned_server_is_the_one_used(tmp_path: Path) -> None:
    spawns = tmp_path / "spawns"
    wrapper = f'echo $$ >> {spawns}; exec "$0" "$@"'
    r = mcp("tools", "call", "echo", "--arg", "message=hi", "--", "sh", "-c", wrapper, *fake_server())
    assert r.code == 0, r
    assert r.json["content"] == [{"type": "text", "text": "hi"}]
    assert len(spawns.read_text().splitlines()) == 1  # adopted, not started a second time


@pytest.mark.slow
def test_a_command_with_a_variable_is_started_once_with_its_value(tmp_path: Path) -> None:
    """`${VAR}` in a `--` command is interpolated before the launch: the early spawn (raw
    argv) would start a server nobody adopts, so it leaves such a command to the transport."""
    spawns = tmp_path / "spawns"
    wrapper = f'echo "$1" >> {spawns}; shift; exec "$0" "$@"'
    r = mcp("tools", "call", "echo", "--arg", "message=hi", "--", "sh", "-c", wrapper,
            *fake_server()[:1], "${MCPCLI_TEST_MARK}", *fake_server()[1:],
            env={"MCPCLI_TEST_MARK": "marked"})
    assert r.code == 0, r
    assert spawns.read_text().splitlines() == ["marked"]


#: Spawning through `transports.spawn.spawn` writes which of our modules were loaded then.
_SPAWN_SPY = (
    "import sys\n"
    "from mcpcli.transports import spawn as module\n"
    "real = module.spawn\n"
    "def spawn(*args, **kwargs):\n"
    "    loaded = sorted(m for m in sys.modules if m.startswith('mcpcli'))\n"
    "    sys.stderr.write('SPAWN ' + ' '.join(loaded) + '\\n')\n"
    "    heavy = sorted(m for m in ('subprocess', 'signal', 'locale', 'threading', 'shutil') if m in sys.modules)\n"
    "    sys.stderr.write('STDLIB ' + ' '.join(heavy) + '\\n')\n"
    "    return real(*args, **kwargs)\n"
    "module.spawn = spawn\n"
    "from mcpcli.cli import main\n"
    "raise SystemExit(main(sys.argv[1:]))\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("fast", [True, False], ids=["one-shot path", "full path"])
def test_a_one_shot_call_spawns_its_server_before_the_fast_paths_load(fast: bool) -> None:
    """The server boots while the rest loads: on the one-shot path too, `main()` spawns it
    before the fast paths' flags (`core.flags`, `text`) load, and whichever path runs the
    command adopts that process (spawned once)."""
    env = {**os.environ, "MCPCLI_NO_FAST_PATH": "" if fast else "1"}
    done = subprocess.run(
        [sys.executable, "-c", _SPAWN_SPY, "tools", "call", "echo", "--arg", "message=hi", "-q", "--",
         *fake_server()],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60, env=env, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{"content":[{"type":"text","text":"hi"}]}\n'
    spawns = [line.split()[1:] for line in done.stderr.splitlines() if line.startswith("SPAWN")]
    assert spawns == [["mcpcli", "mcpcli.cli", "mcpcli.transports", "mcpcli.transports.spawn"]], done.stderr
    # os.posix_spawn: nothing beyond `os` loads before the server starts (subprocess was 19 M instructions).
    assert [line for line in done.stderr.splitlines() if line.startswith("STDLIB")] == ["STDLIB "], done.stderr


def test_the_early_spawn_waits_when_the_double_dash_is_a_flags_value() -> None:
    """`--args --` makes `--` a value (click's reading too): what follows may be the target of
    a session call (`@NAME`, a keepAlive server), which starts nothing, so `main()` does not
    spawn it before the session fast path has had its say."""
    from mcpcli.cli import _separates

    assert _separates(["tools", "call", "echo", "-q", "--", "srv"])
    assert _separates(["tools", "call", "echo", "--arg", "a=1", "--", "srv"])
    assert _separates(["tools", "call", "echo", "--arg", "-q", "--", "srv"])  # -q is --arg's value
    assert _separates(["tools", "call", "echo", "--timeout=5", "--", "srv"])
    assert not _separates(["tools", "call", "ka", "--args", "--", "tool"])
    assert not _separates(["tools", "call", "ka", "-a", "--", "tool"])
    assert not _separates(["tools", "call", "ka", "-", "--", "tool"])


def test_the_switches_the_early_spawn_knows_take_no_value() -> None:
    from mcpcli.cli import CALL_SWITCHES
    from mcpcli.core import flags

    taken = flags.by_name(flag for flag in flags.FLAGS)
    assert all(taken[name].kind == "flag" for name in CALL_SWITCHES)


def test_a_usage_error_after_the_early_spawn_leaves_no_server() -> None:
    r = mcp("tools", "list", "--no-such-flag", "--", *fake_server("--stubborn"))
    assert r.code == 2, r
    assert "No such option '--no-such-flag'" in r.stderr
    # The server spawned early (one that ignores EOF and SIGTERM) is killed with its process
    # group: conftest's subreaper check fails a test that leaves one.


def _call_loads(*args: str) -> tuple[int, set[str]]:
    """The exit code and the top-level modules of a one-shot `mcp ARGS` run in a fresh interpreter."""
    code = (
        "import sys\nfrom mcpcli.cli import main\n"
        f"try:\n    code = main({list(args)!r})\nexcept SystemExit as exc:\n    code = exc.code\n"
        "sys.stderr.write(f'EXIT {code} ')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c",
         code + "sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL, timeout=60,
    ).stderr
    status = int(out.split("EXIT ")[-1].split()[0])
    return status, {name.split(".")[0] for name in out.split("MODULES ")[-1].split()}


@pytest.mark.slow
def test_a_call_with_plainly_valid_arguments_never_imports_jsonschema() -> None:
    """jsonschema is most of a one-shot call's own CPU: a simple schema that accepts the
    arguments needs none of it (no preload while the server boots either)."""
    status, loaded = _call_loads("tools", "call", "echo", "--arg", "message=hi", "--json",
                                 "--", *fake_server())
    assert status == 0
    assert "jsonschema" not in loaded


@pytest.mark.slow
def test_arguments_a_simple_schema_rejects_are_still_checked_by_jsonschema() -> None:
    r = mcp("tools", "call", "echo", "--args", "{}", "--", *fake_server())
    assert r.code == 2, r
    assert "argument 'message' is required" in r.stderr
    status, loaded = _call_loads("tools", "call", "echo", "--args", "{}", "--", *fake_server())
    assert status == 2
    assert "jsonschema" in loaded


def test_the_session_fast_path_loads_no_typing(tmp_path: Path) -> None:
    """The `@NAME` fast path reads its flags (`core.flags`), speaks the daemon's protocol and
    prints through `text` without `typing` (milliseconds of its start-up); nothing listens
    here, so it gives the call back to the full path (None) after loading all of that."""
    code = (
        "import sys\nfrom mcpcli.cli.fast import try_call\n"
        "status = try_call(['tools', 'call', '@ev', 'echo', '--arg', 'message=hi', '--json'])\n"
        "import mcpcli.text\n"
        "print(status, sorted(m for m in sys.modules if m in ('typing', 'mcpcli.core.flags', "
        "'mcpcli.core.localrpc', 'mcpcli.rundir')))"
    )
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if k != "MCPCLI_NO_FAST_PATH"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         stdin=subprocess.DEVNULL, env={**env, "MCPCLI_RUNTIME_DIR": str(run)})
    assert out.stdout.split(None, 1) == ["None", "['mcpcli.core.flags', 'mcpcli.core.localrpc', 'mcpcli.rundir']\n"]


@pytest.mark.slow
def test_only_the_program_freezes_its_objects_for_the_exit() -> None:
    """`mcp` (main() reading sys.argv) leaves its objects out of the collection at exit when
    a fast path served the command; the full path, and a caller handing main() its
    arguments, keep their garbage collection as it was."""
    import gc

    from mcpcli.cli import main

    call = ["tools", "call", "echo", "--no-validate", "-q", "--", *fake_server()]
    frozen = gc.get_freeze_count()
    assert main(call) == 0
    assert gc.get_freeze_count() == frozen

    def frozen_after(args: list[str], env: dict[str, str]) -> int:
        code = (f"import gc, sys\nfrom mcpcli.cli import main\nsys.argv = ['mcp', *{args!r}]\n"
                "try:\n    main()\nexcept SystemExit:\n    pass\nsys.stderr.write(f'FROZEN {gc.get_freeze_count()}')\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              stdin=subprocess.DEVNULL, timeout=60, env={**os.environ, **env})
        return int(done.stderr.split("FROZEN ")[-1])

    assert frozen_after(call, {"MCPCLI_NO_FAST_PATH": ""}) > 0
    assert frozen_after(call, {"MCPCLI_NO_FAST_PATH": "1"}) == 0
    assert frozen_after(["--version"], {}) == 0
