"""`mcp doctor` (issue 22): each check against a made-up installation, HOME and PATH.

An `Install` in a temp directory stands for the venv (its `bin/mcp`, its man pages); PATH
holds only directories made here (plus the one with `man`, when the system has it); the
keyring is the tests' in-memory one (the usability check writes and removes an entry there).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import keyring
import pytest
from helpers import mcp_in

from mcpcli.doctor import Check, Install, run_checks

OUR_SCRIPT = "#!/usr/bin/env python3\nimport sys\nfrom mcpcli.cli import main\nsys.exit(main())\n"
SDK_SCRIPT = "#!/usr/bin/env python3\nimport sys\nfrom mcp.cli import app\nsys.exit(app())\n"


def _executable(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def install(tmp_path: Path) -> Install:
    """A venv-like installation: bin/mcp, bin/mcpcli and share/man/man1/mcp.1."""
    venv = tmp_path / "venv"
    _executable(venv / "bin" / "mcp", OUR_SCRIPT)
    _executable(venv / "bin" / "mcpcli", OUR_SCRIPT)
    man = venv / "share" / "man" / "man1"
    man.mkdir(parents=True)
    (man / "mcp.1").write_text('.TH MCP 1\n.SH NAME\nmcp \\- test page\n')
    return Install(scripts=venv / "bin", data=venv)


@pytest.fixture
def tools_dir(tmp_path: Path) -> Path:
    """node, npx and uvx, as scripts."""
    directory = tmp_path / "tools"
    for name in ("node", "npx", "uvx"):
        _executable(directory / name)
    return directory


def _path(*dirs: Path) -> str:
    """PATH of these directories, and the system's `man` when there is one."""
    parts = [str(d) for d in dirs]
    man = shutil.which("man")
    if man is not None:
        parts.append(str(Path(man).parent))
    return os.pathsep.join(parts)


@pytest.fixture
def env(install: Install, tools_dir: Path, fake_home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An environment where all is well: our bin on PATH, bash completion set up."""
    (fake_home / ".bashrc").write_text('eval "$(mcp completion bash)"\n')
    for name in ("MANPATH", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "https_proxy",
                 "http_proxy", "all_proxy", "no_proxy", "MCP_NO_DISCOVERY", "FPATH", "ZDOTDIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", _path(install.scripts, tools_dir))
    monkeypatch.setenv("SHELL", "/bin/bash")
    return dict(os.environ)


def _by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def test_all_is_well(install: Install, env: dict[str, str], fake_home: Path) -> None:
    checks = run_checks(install, env, fake_home)
    found = _by_name(checks)
    assert [c.name for c in checks if c.status == "problem"] == [], checks
    assert found["version"].summary.startswith("mcpcli ")
    assert found["PATH"].summary == f"`mcp` is {install.scripts / 'mcp'}"
    if shutil.which("man") is not None:
        assert found["man pages"].status == "ok", found["man pages"]
    assert found["completion"].summary == f"{fake_home / '.bashrc'} loads `mcp completion bash`"
    assert found["token store"].status == "ok" and "stores and reads sign-ins" in found["token store"].summary
    assert found["session daemon"].status == "ok" and "not running" in found["session daemon"].summary
    assert found["node, npx, uvx"].status == "ok"
    assert found["proxy"].status == "ok"


def test_completion_not_set_up_yet_is_a_note_not_a_problem(install: Install, env: dict[str, str],
                                                            fake_home: Path) -> None:
    """A fresh installation has no completion set up: doctor says how, and still passes."""
    (fake_home / ".bashrc").unlink()
    checks = run_checks(install, env, fake_home)
    assert _by_name(checks)["completion"].status == "note"
    assert [c.name for c in checks if c.status == "problem"] == [], checks


def test_the_venv_bin_not_on_path_breaks_mcp_man_and_completion(
    install: Install, env: dict[str, str], fake_home: Path, tools_dir: Path
) -> None:
    """What the issue saw: `man mcp` and completions need the venv's bin on PATH."""
    env["PATH"] = _path(tools_dir)
    (fake_home / ".bashrc").unlink()
    found = _by_name(run_checks(install, env, fake_home))
    assert found["PATH"].status == "problem"
    assert found["PATH"].fix is not None and f"export PATH={install.scripts}:$PATH" in found["PATH"].fix
    if shutil.which("man") is not None:
        assert found["man pages"].status == "problem"
        assert found["man pages"].fix is not None and str(install.scripts) in found["man pages"].fix
    assert found["completion"].status == "note"  # a convenience: never what makes doctor fail
    assert found["completion"].fix == "echo 'eval \"$(mcp completion bash)\"' >> ~/.bashrc"


def test_the_official_sdks_mcp_first_on_path_is_named(
    install: Install, env: dict[str, str], fake_home: Path, tmp_path: Path
) -> None:
    sdk = _executable(tmp_path / "sdk" / "bin" / "mcp", SDK_SCRIPT)
    env["PATH"] = os.pathsep.join([str(sdk.parent), env["PATH"]])
    check = _by_name(run_checks(install, env, fake_home))["PATH"]
    assert check.status == "problem"
    assert check.summary == f"`mcp` on PATH is the official MCP SDK's command ({sdk}), not this one"
    assert check.fix is not None and check.fix.startswith("run `mcpcli`")


def test_man_pages_missing_from_the_installation(install: Install, env: dict[str, str], fake_home: Path) -> None:
    (install.data / "share" / "man" / "man1" / "mcp.1").unlink()
    check = _by_name(run_checks(install, env, fake_home))["man pages"]
    assert check.status == "problem" and "missing" in check.summary


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_completion_of_zsh_and_fish(install: Install, env: dict[str, str], fake_home: Path, shell: str) -> None:
    env["SHELL"] = f"/usr/bin/{shell}"
    check = _by_name(run_checks(install, env, fake_home))["completion"]
    assert check.status == "note" and check.fix is not None and f"mcp completion {shell}" in check.fix
    if shell == "zsh":
        (fake_home / ".zshrc").write_text('eval "$(mcp completion zsh)"\n')
    else:
        target = Path(env["XDG_CONFIG_HOME"]) / "fish" / "completions" / "mcp.fish"
        target.parent.mkdir(parents=True)
        target.write_text("complete -c mcp\n")
    assert _by_name(run_checks(install, env, fake_home))["completion"].status == "ok"


def test_an_unusable_keyring_is_a_problem_with_the_way_out(
    install: Install, env: dict[str, str], fake_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import keyring.backends.fail

    keyring.set_keyring(keyring.backends.fail.Keyring())  # the memory_keyring fixture puts its own back
    check = _by_name(run_checks(install, env, fake_home))["token store"]
    assert check.status == "problem" and "no usable keyring" in check.summary
    assert check.fix is not None and "MCP_TOKEN_STORE=file" in check.fix
    monkeypatch.setenv("MCP_TOKEN_STORE", "file")
    check = _by_name(run_checks(install, env, fake_home))["token store"]
    assert check.status == "ok" and "MCP_TOKEN_STORE=file" in check.summary


def test_the_keyring_check_leaves_nothing_behind(install: Install, env: dict[str, str], fake_home: Path) -> None:
    backend = keyring.get_keyring()
    assert _by_name(run_checks(install, env, fake_home))["token store"].status == "ok"
    assert getattr(backend, "store", None) == {}


def test_a_run_directory_others_can_enter_is_a_problem(
    install: Install, env: dict[str, str], fake_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    run.chmod(0o755)
    monkeypatch.setenv("MCPCLI_RUNTIME_DIR", str(run))
    check = _by_name(run_checks(install, env, fake_home))["session daemon"]
    assert check.status == "problem" and "mode 755" in check.summary
    assert check.fix is not None and "chmod 700" in check.fix
    run.chmod(0o700)
    check = _by_name(run_checks(install, env, fake_home))["session daemon"]
    assert (check.status, check.summary) == ("ok", f"not running (run directory {run}, 0700)")


def test_commands_servers_need(
    install: Install, env: dict[str, str], fake_home: Path, tools_dir: Path, tmp_path: Path
) -> None:
    (tools_dir / "uvx").unlink()
    found = _by_name(run_checks(install, env, fake_home))
    assert found["node, npx, uvx"].status == "note"  # nothing configured needs it
    assert found["node, npx, uvx"].fix == "install uv (https://docs.astral.sh/uv/)"
    config = Path(env["XDG_CONFIG_HOME"]) / "mcpcli" / "mcp.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"]},
        "local": {"command": "no-such-server-here"},
        "ok": {"command": "npx", "args": ["-y", "x"]},
    }}))
    checks = run_checks(install, env, fake_home)
    found = _by_name(checks)
    assert found["config"].summary == f"3 server(s) in {config}"
    assert found["node, npx, uvx"].status == "problem"  # `time` runs with it
    assert found["server 'local'"].status == "problem"
    assert "no-such-server-here" in found["server 'local'"].summary
    assert "server 'ok'" not in found and "server 'time'" not in found


def test_a_broken_config_file_is_a_problem(install: Install, env: dict[str, str], fake_home: Path) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "mcpcli" / "mcp.json"
    config.parent.mkdir(parents=True)
    config.write_text("{not json")
    check = _by_name(run_checks(install, env, fake_home))["config"]
    assert check.status == "problem" and "invalid JSON" in check.summary


def test_proxy_variables_are_shown_without_passwords(install: Install, env: dict[str, str], fake_home: Path) -> None:
    env["HTTPS_PROXY"] = "http://alice:s3cret@proxy.example:3128"
    env["no_proxy"] = "localhost,127.0.0.1"
    check = _by_name(run_checks(install, env, fake_home))["proxy"]
    assert check.status == "note"
    assert check.details == ("HTTPS_PROXY=http://alice:***@proxy.example:3128", "no_proxy=localhost,127.0.0.1")
    env["HTTP_PROXY"] = "proxy.example:3128"
    check = _by_name(run_checks(install, env, fake_home))["proxy"]
    assert check.status == "problem" and check.summary == "HTTP_PROXY is not a proxy URL"
    assert "s3cret" not in json.dumps(check.to_json())


def test_other_clients_config_files_are_listed(install: Install, env: dict[str, str], fake_home: Path) -> None:
    cursor = fake_home / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    cursor.write_text(json.dumps({"mcpServers": {"a": {"command": "npx"}, "b": {"url": "https://x/mcp"}}}))
    check = _by_name(run_checks(install, env, fake_home))["other clients"]
    assert check.status == "ok" and check.summary == "servers configured in Cursor"
    assert check.details == (f"Cursor: {cursor} (2 server(s))",)


def test_the_command_exits_1_with_a_fix_per_problem_and_0_when_all_is_well(
    install: Install, env: dict[str, str], fake_home: Path, tools_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Install, "current", classmethod(lambda cls: install))
    monkeypatch.setenv("MCP_TOKEN_STORE", "file")  # `mcp_in` gives the command a child's keyring: none
    well = mcp_in("doctor", "--json")
    assert well.code == 0, well
    assert well.json["ok"] is True and well.json["problems"] == 0
    monkeypatch.setenv("PATH", _path(tools_dir))
    broken = mcp_in("doctor", "--json")
    assert broken.code == 1, broken
    assert broken.json["ok"] is False and broken.json["problems"] >= 1
    problems = [c for c in broken.json["checks"] if c["status"] == "problem"]
    assert problems and all(c.get("fix") for c in problems), problems
    human = mcp_in("doctor")  # stdout is no terminal: JSON, as every command
    assert human.code == 1 and json.loads(human.stdout)["problems"] == broken.json["problems"]
    lines = mcp_in("doctor", "--jsonl").stdout.splitlines()
    assert [json.loads(line)["name"] for line in lines][:3] == ["version", "PATH", "man pages"]


def test_the_human_report() -> None:
    import io

    from rich.console import Console

    from mcpcli.render import doctor_report

    console = Console(file=io.StringIO(), width=200, color_system=None)
    doctor_report(console, {"ok": False, "problems": 1, "checks": [
        Check("PATH", "problem", "no `mcp` on PATH", "add /v/bin to PATH").to_json(),
        Check("node, npx, uvx", "note", "not on PATH: uvx", "install uv", ("found: node",)).to_json(),
        Check("proxy", "ok", "no proxy variables set").to_json(),
    ]})
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert text.splitlines() == [
        "problem  PATH            no `mcp` on PATH",
        "                         fix: add /v/bin to PATH",
        "note     node, npx, uvx  not on PATH: uvx",
        "                         found: node",
        "                         hint: install uv",
        "ok       proxy           no proxy variables set",
        "1 problem",
    ]
