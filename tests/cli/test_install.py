"""`mcp servers install|uninstall`: one entry written into (and taken out of) another client's
config, in real files under the temporary HOME, with the file's own formatting kept."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from helpers import mcp, mcp_in

from mcpcli import config_formats, other_clients
from mcpcli.install import CLIENTS, target_file


@pytest.fixture
def config_home(isolated_env: Path) -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"])


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def path_of(client: str) -> Path:
    return target_file(client).path


def discovered(name: str) -> list[tuple[str, str]]:
    items, problems = other_clients.discover()
    assert problems == []
    return [(f.source, f.entry.command or f.entry.url or "") for f in items if f.entry.name == name]


#: A file for each client as people have them: comments where allowed, tabs, CRLF, trailing
#: commas, other settings around the servers.
EXISTING = {
    "claude-code": '{\n  "numStartups": 3,\n  "mcpServers": {\n    "old": {"type": "stdio", "command": "o"}\n  },\n'
                   '  "projects": {}\n}\n',
    "claude-desktop": '{\r\n    "mcpServers": {\r\n        "old": {\r\n            "command": "o"\r\n        }\r\n'
                      '    },\r\n    "globalShortcut": ""\r\n}\r\n',
    "cursor": '{\n\t"mcpServers": {\n\t\t"old": {"command": "o"}\n\t}\n}',
    "vscode": '{\n  // my servers\n  "servers": {\n    "old": {"type": "stdio", "command": "o"}, // keep me\n'
              '  },\n  "inputs": [],\n}\n',
    "windsurf": '{"mcpServers": {"old": {"command": "o"}}}',
    "codex": '# Codex settings\nmodel = "o3"  # the default\n\n[mcp_servers.old]\ncommand = "o"\n\n'
             '[profiles.fast]\nmodel = "o4-mini"\n',
    "gemini": '{\n  "theme": "Default",\n  "mcpServers": {}\n}\n',
    "zed": '// Zed settings\n//\n// For information on how to configure Zed, see the Zed docs.\n{\n  "ui_font_size": 16,\n'
           '  /* agent */\n  "context_servers": {\n    "old": {"source": "custom", "command": "o", "args": []},\n'
           '  },\n}\n',
}


@pytest.mark.parametrize("client", CLIENTS)
def test_install_then_uninstall_gives_back_the_original_bytes(isolated_env: Path, client: str) -> None:
    original = EXISTING[client]
    path = write(path_of(client), original)
    os.chmod(path, 0o640)
    r = mcp_in("servers", "install", "ev", "--into", client, "--", "npx", "-y", "pkg")
    assert r.code == 0, r
    changed = path.read_bytes().decode()
    assert changed != original
    assert ("\r\n" in changed) == ("\r\n" in original)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert Path(f"{path}.bak").read_bytes() == original.encode()
    for kept in ("// my servers", "// keep me", "# the default", "/* agent */", "// Zed settings", "\t\t\"old\""):
        if kept in original:
            assert kept in changed
    assert [s for s, c in discovered("ev")] == [client]
    if '"old"' in original or "mcp_servers.old" in original:
        assert discovered("old")  # the server that was there is untouched

    r = mcp_in("servers", "uninstall", "ev", "--from", client)
    assert r.code == 0, r
    assert path.read_bytes().decode() == original
    assert Path(f"{path}.bak").read_bytes() == changed.encode()


@pytest.mark.parametrize("client", [c for c in CLIENTS if c != "claude-desktop"])
def test_a_url_server_gets_the_clients_own_shape(
    isolated_env: Path, client: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = mcp_in("servers", "install", "remote", "--into", client, "https://r.example/mcp",
               "-H", "Authorization: Bearer ${R_TOKEN}")
    assert r.code == 0, r
    text = path_of(client).read_text()
    if client == "codex":
        assert 'url = "https://r.example/mcp"' in text and 'bearer_token_env_var = "R_TOKEN"' in text
    else:
        entry = json.loads(text)["servers" if client == "vscode" else
                                 "context_servers" if client == "zed" else "mcpServers"]["remote"]
        key = {"windsurf": "serverUrl", "gemini": "httpUrl"}.get(client, "url")
        assert entry[key] == "https://r.example/mcp"
        expected = {"claude-code": "http", "vscode": "http"}.get(client)
        assert entry.get("type") == expected
        token = {"vscode": "${env:R_TOKEN}", "cursor": "${env:R_TOKEN}", "windsurf": "${env:R_TOKEN}"}
        assert entry["headers"]["Authorization"] == "Bearer " + token.get(client, "${R_TOKEN}")
    # What we wrote reads back as the same server, its token reference intact.
    ((source, url),) = discovered("remote")
    assert (source, url) == (client, "https://r.example/mcp")
    (item,) = [f for f in other_clients.discover()[0] if f.entry.name == "remote"]
    monkeypatch.setenv("R_TOKEN", "sekrit")
    assert item.entry.resolved().headers == {"Authorization": "Bearer sekrit"}
    assert item.entry.transport == "http"


def test_missing_files_and_directories_are_created_private(isolated_env: Path) -> None:
    for client in CLIENTS:
        r = mcp_in("servers", "install", "ev", "--into", client, "--", "npx", "-y", "pkg")
        assert r.code == 0, (client, r)
        path = path_of(client)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert not Path(f"{path}.bak").exists()
        assert "(previous file kept" not in r.stderr
    assert sorted(s for s, _ in discovered("ev")) == sorted(CLIENTS)


def test_an_empty_file_gets_the_container(isolated_env: Path) -> None:
    path = write(path_of("gemini"), "")
    assert mcp_in("servers", "install", "ev", "--into", "gemini", "--", "x").code == 0
    assert json.loads(path.read_text()) == {"mcpServers": {"ev": {"command": "x", "args": []}}}
    codex = write(path_of("codex"), "")
    assert mcp_in("servers", "install", "ev", "--into", "codex", "--", "x").code == 0
    assert codex.read_text() == '[mcp_servers.ev]\ncommand = "x"\n'


def test_zed_settings_without_context_servers_get_them_with_comments_kept(config_home: Path) -> None:
    original = '// Zed\n{\n\t"theme": "One Dark", // dark\n\t"vim_mode": true,\n}\n'
    path = write(path_of("zed"), original)
    r = mcp_in("servers", "install", "web", "--into", "zed", "https://w.example/mcp")
    assert r.code == 0, r
    assert path.read_text() == (
        '// Zed\n{\n\t"theme": "One Dark", // dark\n\t"vim_mode": true,\n\t"context_servers": {\n'
        '\t\t"web": {\n\t\t\t"source": "custom",\n\t\t\t"url": "https://w.example/mcp"\n\t\t}\n\t},\n}\n'
    )


def test_a_duplicate_is_refused_without_force_and_replaced_with_it(isolated_env: Path) -> None:
    path = write(path_of("cursor"), '{\n  "mcpServers": {\n    "ev": {"command": "old"}, // mine\n    "z": {"command": "z"}\n  }\n}\n')
    before = path.read_bytes()
    r = mcp_in("servers", "install", "ev", "--into", "cursor", "--", "new")
    assert r.code == 2
    assert "'ev' is already in" in r.stderr and "--force" in r.stderr
    assert path.read_bytes() == before and not Path(f"{path}.bak").exists()
    r = mcp_in("servers", "install", "ev", "--into", "cursor", "--force", "--json", "--", "new")
    assert r.code == 0, r
    assert r.json["replaced"] is True
    text = path.read_text()
    assert "// mine" in text and text.count('"ev"') == 1
    assert [c for _, c in discovered("ev")] == ["new"]

    codex = write(path_of("codex"), '[mcp_servers.ev]\ncommand = "old"\n\n[mcp_servers.z]\ncommand = "z"\n')
    assert mcp_in("servers", "install", "ev", "--into", "codex", "--", "new").code == 2
    assert mcp_in("servers", "install", "ev", "--into", "codex", "-f", "--", "new").code == 0
    assert codex.read_text().count("[mcp_servers.ev]") == 1
    assert config_formats.toml_loads(codex.read_text())["mcp_servers"] == {
        "ev": {"command": "new"}, "z": {"command": "z"}}


def test_dry_run_prints_a_diff_and_writes_nothing(isolated_env: Path) -> None:
    path = write(path_of("vscode"), EXISTING["vscode"])
    r = mcp_in("servers", "install", "ev", "--into", "vscode", "--dry-run", "--jq", ".diff", "-r",
               "--", "npx", "-y", "pkg")
    assert r.code == 0, r
    assert r.stdout.startswith(f"--- {path}\n+++ {path}\n@@ ")
    assert '+    "ev": {\n' in r.stdout and '+      "type": "stdio",\n' in r.stdout
    assert path.read_text() == EXISTING["vscode"] and not Path(f"{path}.bak").exists()
    r = mcp_in("servers", "uninstall", "old", "--from", "vscode", "-n", "--json")
    assert r.code == 0, r
    assert r.json["dryRun"] is True and '-    "old": ' in r.json["diff"]
    assert path.read_text() == EXISTING["vscode"]
    r = mcp_in("servers", "install", "ev", "--into", "codex", "-n", "--json", "--", "x")
    assert r.code == 0 and "+[mcp_servers.ev]" in r.json["diff"] and not path_of("codex").exists()


def test_the_server_comes_from_our_config_or_a_discovered_one(isolated_env: Path) -> None:
    assert mcp_in("servers", "add", "gh", "--env", "GITHUB_TOKEN=${GITHUB_TOKEN}", "--cwd", "/srv",
                  "--", "github-mcp", "stdio").code == 0
    r = mcp_in("servers", "install", "gh", "--into", "vscode")
    assert r.code == 0, r
    entry = json.loads(path_of("vscode").read_text())["servers"]["gh"]
    assert entry == {"type": "stdio", "command": "github-mcp", "args": ["stdio"],
                     "env": {"GITHUB_TOKEN": "${env:GITHUB_TOKEN}"}, "cwd": "/srv"}
    r = mcp_in("servers", "install", "gh", "--into", "codex")
    assert r.code == 0, r
    assert config_formats.toml_loads(path_of("codex").read_text())["mcp_servers"]["gh"] == {
        "command": "github-mcp", "args": ["stdio"], "env_vars": ["GITHUB_TOKEN"], "cwd": "/srv"}
    r = mcp_in("servers", "install", "gh", "--into", "cursor")
    assert r.code == 0, r
    assert "Cursor has no working-directory setting" in r.stderr
    # Found in Cursor (not ours): installable elsewhere by name.
    r = mcp_in("servers", "install", "gh", "--into", "gemini")
    assert r.code == 0, r
    assert mcp_in("servers", "remove", "gh").code == 0
    r = mcp_in("servers", "install", "gh", "--into", "zed")
    assert r.code == 0, r
    assert json.loads(path_of("zed").read_text())["context_servers"]["gh"]["command"] == "github-mcp"
    assert "Zed does not expand ${VAR}" in r.stderr


def test_literal_secrets_are_warned_about_once(isolated_env: Path) -> None:
    r = mcp_in("servers", "install", "s", "--into", "claude-desktop", "-e", "API_KEY=abc", "-e", "MY_TOKEN=t",
               "-e", "DEBUG=1", "--", "x")
    assert r.code == 0, r
    warnings = [line for line in r.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1
    assert "env API_KEY, env MY_TOKEN" in warnings[0] and "DEBUG" not in warnings[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("servers", "install", "nope", "--into", "cursor"), "unknown server 'nope'"),
        (("servers", "install", "r", "--into", "claude-desktop", "https://x"), "stdio) servers only"),
        (("servers", "install", "r", "--into", "codex", "https://x/sse", "--transport", "sse"),
         "Streamable HTTP servers only"),
        (("servers", "install", "x", "--into", "emacs", "--", "x"), "Invalid value for '--into'"),
        (("servers", "install", "x", "--", "x"), "Missing option '--into'"),
        (("servers", "install", "x", "--into", "cursor", "--env", "A=1"), "describe a server given here"),
        (("servers", "uninstall", "x", "--from", "cursor"), "the file does not exist"),
    ],
)
def test_bad_input_is_exit_2_and_writes_nothing(isolated_env: Path, args: tuple[str, ...], message: str) -> None:
    r = mcp_in(*args)
    assert r.code == 2, r
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    for client in CLIENTS:
        assert not path_of(client).exists()


@pytest.mark.parametrize(
    ("client", "text"),
    [
        ("cursor", "{ not json"),
        ("vscode", '{"servers": []}'),
        ("zed", "[1, 2]"),
        ("codex", "[mcp_servers\n"),
        ("gemini", b"\xff\xfe{}"),
    ],
)
def test_a_file_that_cannot_be_edited_safely_is_left_alone(
    isolated_env: Path, client: str, text: str | bytes
) -> None:
    path = write(path_of(client), text)
    before = path.read_bytes()
    r = mcp_in("servers", "install", "ev", "--into", client, "--", "x")
    assert r.code == 2, r
    assert f"{path}" in r.stderr and "Traceback" not in r.stderr
    assert len([line for line in r.stderr.splitlines() if "error" in line]) == 1
    assert path.read_bytes() == before and not Path(f"{path}.bak").exists()


def test_uninstall_of_a_server_that_is_not_there(isolated_env: Path) -> None:
    path = write(path_of("codex"), EXISTING["codex"])
    r = mcp_in("servers", "uninstall", "ghost", "--from", "codex")
    assert r.code == 2 and "no server 'ghost'" in r.stderr
    assert path.read_text() == EXISTING["codex"]
    # A server written inline under [mcp_servers] is not cut out blindly.
    write(path, '[mcp_servers]\ninline = { command = "x" }\n')
    r = mcp_in("servers", "uninstall", "inline", "--from", "codex")
    assert r.code == 2 and "not written as its own" in r.stderr


def test_a_symlinked_config_is_written_through_the_link(isolated_env: Path, tmp_path: Path) -> None:
    real = write(tmp_path / "dotfiles" / "mcp.json", '{"mcpServers": {}}\n')
    link = path_of("cursor")
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    assert mcp_in("servers", "install", "ev", "--into", "cursor", "--", "x").code == 0
    assert link.is_symlink()
    assert json.loads(real.read_text())["mcpServers"]["ev"]["command"] == "x"


@pytest.mark.peer
def test_a_server_installed_into_codex_is_usable_by_name(isolated_env: Path, everything: list[str]) -> None:
    r = mcp("servers", "install", "ev", "--into", "codex", "--", *everything)
    assert r.code == 0, r
    r = mcp("tools", "list", "ev", "--json")
    assert r.code == 0, r
    assert "echo" in [t["name"] for t in r.json["tools"]]
    r = mcp("servers", "list", "--json")
    (row,) = [row for row in r.json["servers"] if row["name"] == "ev"]
    assert row["source"] == "codex" and row["path"] == str(path_of("codex"))


def test_a_discovered_server_with_any_name_is_copied_as_it_reads(config_home: Path) -> None:
    write(config_home / "Code" / "User" / "mcp.json",
          '{"servers": {"My Server": {"type": "stdio", "command": "ms", "env": {"T": "${env:MY_T}"}}}}')
    r = mcp_in("servers", "install", "My Server", "--into", "codex")
    assert r.code == 0, r
    entry = config_formats.toml_loads(path_of("codex").read_text())["mcp_servers"]["My Server"]
    assert entry == {"command": "ms", "env": {"T": "${env:MY_T}"}}
    assert "Codex does not expand ${VAR} in env values: env T" in r.stderr
    # An env reference of the same name is forwarded (env_vars) and reads back as ours.
    r = mcp_in("servers", "install", "fwd", "--into", "codex", "-e", "MY_T=${MY_T}", "--", "f")
    assert r.code == 0, r
    (item,) = [f for f in other_clients.discover()[0] if f.entry.name == "fwd"]
    assert item.entry.env == {"MY_T": "${MY_T}"}


def test_a_write_that_fails_is_one_error_and_the_file_is_unchanged(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(path_of("cursor"), EXISTING["cursor"])

    def refuse(src: object, dst: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "replace", refuse)  # as `chattr +i ~/.cursor` would
    r = mcp_in("servers", "install", "ev", "--into", "cursor", "--", "x")
    assert r.code == 2, r
    assert r.stderr.splitlines()[0] == (
        f"mcp: error: cannot write {path}: Operation not permitted; nothing was changed")
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    assert path.read_text() == EXISTING["cursor"]
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_planted_backup_symlink_is_replaced_not_written_through(isolated_env: Path, tmp_path: Path) -> None:
    path = write(path_of("cursor"), EXISTING["cursor"])
    victim = write(tmp_path / "victim", "precious\n")
    Path(f"{path}.bak").symlink_to(victim)
    assert mcp_in("servers", "install", "ev", "--into", "cursor", "--", "x").code == 0
    assert victim.read_text() == "precious\n"
    backup = Path(f"{path}.bak")
    assert not backup.is_symlink() and backup.read_text() == EXISTING["cursor"]


def test_a_backup_path_that_is_a_directory_is_refused(isolated_env: Path) -> None:
    path = write(path_of("cursor"), EXISTING["cursor"])
    Path(f"{path}.bak").mkdir()
    r = mcp_in("servers", "install", "ev", "--into", "cursor", "--", "x")
    assert r.code == 2, r
    assert f"{path}.bak is a directory; nothing was changed" in r.stderr.splitlines()[0]
    assert path.read_text() == EXISTING["cursor"]
    assert list(Path(f"{path}.bak").iterdir()) == []


def _runs_mcpcli(argv: list[str]) -> None:
    import subprocess

    assert os.path.isabs(argv[0]), argv
    version = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("mcpcli, version"), version


@pytest.mark.slow
@pytest.mark.parametrize("command", ["mcp", "mcpcli"])
def test_our_own_command_is_written_with_its_absolute_path(isolated_env: Path, command: str) -> None:
    """`-- mcp serve tools.yaml` names this mcpcli: an editor started without our PATH could
    not start a bare `mcp`, so the entry has the absolute path of ours (given here, or a
    server of our config)."""
    r = mcp_in("servers", "install", "tools", "--into", "cursor", "--", command, "serve", "tools.yaml")
    assert r.code == 0, r
    entry = json.loads(path_of("cursor").read_text())["mcpServers"]["tools"]
    assert entry["command"] != command and entry["args"][-2:] == ["serve", "tools.yaml"], entry
    _runs_mcpcli([entry["command"], *entry["args"][:-2]])
    assert mcp_in("servers", "add", "mine", "--", command, "serve", "tools.yaml").code == 0
    assert mcp_in("servers", "install", "mine", "--into", "vscode").code == 0
    installed = json.loads(path_of("vscode").read_text())["servers"]["mine"]
    assert (installed["command"], installed["args"]) == (entry["command"], entry["args"])
    # Another program keeps its name: the client's PATH finds it as ours would.
    assert mcp_in("servers", "install", "other", "--into", "cursor", "--", "mcp-server-x").code == 0
    assert json.loads(path_of("cursor").read_text())["mcpServers"]["other"]["command"] == "mcp-server-x"


@pytest.mark.slow
def test_the_script_we_run_as_is_the_one_written(isolated_env: Path, tmp_path: Path) -> None:
    """Run as BIN/mcpcli, `-- mcp ...` is written as BIN/mcp (the one installed beside it)."""
    import subprocess
    import sys

    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("mcp", "mcpcli"):
        script = bindir / name
        script.write_text(f"#!{sys.executable}\nimport sys\nfrom mcpcli.cli import main\nsys.exit(main())\n")
        script.chmod(0o755)
    r = subprocess.run([str(bindir / "mcpcli"), "servers", "install", "t", "--into", "cursor", "--", "mcp", "serve",
                        "x.yaml"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r
    entry = json.loads(path_of("cursor").read_text())["mcpServers"]["t"]
    assert entry == {"command": str(bindir / "mcp"), "args": ["serve", "x.yaml"]}
    _runs_mcpcli([entry["command"]])


def test_without_a_script_beside_us_python_runs_the_module(
    isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setattr(sys, "executable", str(tmp_path / "python3"))
    r = mcp_in("servers", "install", "t", "--into", "cursor", "--", "mcp", "serve", "x.yaml")
    assert r.code == 0, r
    entry = json.loads(path_of("cursor").read_text())["mcpServers"]["t"]
    assert entry == {"command": str(tmp_path / "python3"), "args": ["-m", "mcpcli", "serve", "x.yaml"]}


def _in_parallel(argvs: list[list[str]]) -> list[tuple[int, str]]:
    """Start every command before waiting for any: real processes racing for one file."""
    import subprocess
    import sys

    procs = [subprocess.Popen([sys.executable, "-m", "mcpcli", *argv], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for argv in argvs]
    errors = [proc.communicate(timeout=120)[1] for proc in procs]
    return [(proc.returncode, error) for proc, error in zip(procs, errors, strict=True)]


@pytest.mark.slow
def test_concurrent_installs_into_one_file_lose_nothing(isolated_env: Path) -> None:
    path = write(path_of("cursor"), EXISTING["cursor"])
    names = [f"r{n}" for n in range(8)]
    results = _in_parallel([["servers", "install", name, "--into", "cursor", "--", "echo", name] for name in names])
    assert all(code == 0 for code, _ in results), results
    servers = json.loads(path.read_text())["mcpServers"]
    assert sorted(servers) == sorted(["old", *names])
    assert all(servers[name]["args"] == [name] for name in names)
    assert path.read_text().startswith('{\n\t"mcpServers": {\n\t\t"old": {"command": "o"}')  # still edited, not rewritten


def test_a_change_made_between_plan_and_write_is_kept(isolated_env: Path) -> None:
    from mcpcli.config import normalize_entry
    from mcpcli.install import plan_install

    path = write(path_of("cursor"), EXISTING["cursor"])
    change = plan_install(normalize_entry("ev", {"command": "x"}, source="test"), "cursor")
    # Cursor itself (or another install) writes the file after we read it.
    theirs = EXISTING["cursor"].replace('"old": {"command": "o"}', '"old": {"command": "o"},\n\t\t"new": {"command": "n"}')
    path.write_text(theirs)
    backup = change.apply()
    servers = json.loads(path.read_text())["mcpServers"]
    assert sorted(servers) == ["ev", "new", "old"]
    assert backup is not None and backup.read_text() == theirs
    assert change.before == theirs  # what --json and the diff describe is what was written


def test_a_file_another_program_keeps_rewriting_is_left_to_it(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcpcli import files

    path = write(path_of("cursor"), EXISTING["cursor"])
    real_replace_if = files._replace_if_unchanged
    writes = iter(range(100))

    def racing(target: str, data: bytes, mode: int, expected: bytes | None) -> bool:
        path.write_text(EXISTING["cursor"] + " " * (next(writes) + 1))  # lands between our read and rename
        return real_replace_if(target, data, mode, expected)

    monkeypatch.setattr(files, "_replace_if_unchanged", racing)
    r = mcp_in("servers", "install", "ev", "--into", "cursor", "--", "x")
    assert r.code == 2, r
    assert r.stderr.splitlines()[0] == (
        f"mcp: error: cannot write {path}: it kept changing while mcp edited it (another program writes it); "
        "nothing was changed")
    assert '"ev"' not in path.read_text()
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []
