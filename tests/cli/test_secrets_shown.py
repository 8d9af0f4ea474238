"""Secrets in server entries are never echoed: `servers add/show/list/import/install`, a
session's target and `mcp info`'s endpoint all redact them the one way (`text.redact_entry`),
and a literal secret written to our config is warned about (the file keeps what was given)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in

from mcpcli.text import REDACTED, entry_secrets, redact_argv, redact_entry, secret_name

TOKEN = "s3cr3t-bearer-token"
KEY = "sk-live-0123456789"


@pytest.fixture
def config_file(isolated_env: Path) -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "mcpcli" / "mcp.json"


def test_add_never_echoes_the_token_and_warns_it_is_stored_in_plain_text(config_file: Path) -> None:
    """Before: the JSON output carried `Authorization: Bearer s3cr3t` while show redacted it."""
    added = mcp_in("servers", "add", "remote", "https://example.com/mcp", "-H", f"Authorization: Bearer {TOKEN}")
    assert added.code == 0, added
    assert TOKEN not in added.stdout + added.stderr
    assert added.json["config"]["headers"] == {"Authorization": REDACTED}
    warning = next(line for line in added.stderr.splitlines() if "warning" in line)
    assert "remote: header Authorization: a secret stored in plain text in" in warning
    assert "-H 'Authorization: Bearer ${TOKEN}'" in warning and "`mcp auth login remote`" in warning
    # The file holds what was given (the warning says so).
    assert json.loads(config_file.read_text())["mcpServers"]["remote"]["headers"] == {
        "Authorization": f"Bearer {TOKEN}"}


def test_add_with_references_or_plain_values_warns_of_nothing(config_file: Path) -> None:
    by_ref = mcp_in("servers", "add", "gh", "--env", "GITHUB_TOKEN=${GITHUB_TOKEN}", "--env", "DEBUG=1",
                    "--", "github-mcp", "--token", "${GH}")
    assert by_ref.code == 0, by_ref
    assert "warning" not in by_ref.stderr
    assert by_ref.json["config"]["env"] == {"GITHUB_TOKEN": REDACTED, "DEBUG": "1"}  # as show has it


def test_an_env_value_or_argument_stored_literally_is_warned_about(config_file: Path) -> None:
    added = mcp_in("servers", "add", "ai", "--env", f"OPENAI_KEY={KEY}", "--", "ai-mcp", "--api-key", KEY)
    assert added.code == 0, added
    assert KEY not in added.stdout + added.stderr
    warning = next(line for line in added.stderr.splitlines() if "warning" in line)
    assert "ai: argument --api-key, env OPENAI_KEY: a secret stored in plain text" in warning
    assert "mcp auth login" not in warning  # a stdio server has no sign-in


def _write_secret_entries(config_file: Path) -> None:
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text(json.dumps({"mcpServers": {
        "ai": {"command": "ai-mcp", "args": ["--api-key", KEY, "--verbose"],
               "env": {"OPENAI_KEY": KEY, "DEEPL_AUTH_KEY": "deepl-0123456789", "LANG": "C"}},
        "web": {"url": f"https://mcp.example.com/mcp?api_key={KEY}&region=eu",
                "headers": {"X-Api-Key": TOKEN, "Accept-Language": "en"}},
    }}))


def test_show_and_list_redact_env_headers_arguments_and_urls_alike(config_file: Path) -> None:
    """Before: show revealed OPENAI_KEY and DEEPL_AUTH_KEY (only api_key matched) and every
    command line; list printed command lines and URLs as they were."""
    _write_secret_entries(config_file)
    secrets = (KEY, TOKEN, "deepl-0123456789")
    for args in (("servers", "show", "ai", "--json"), ("servers", "show", "web", "--json"),
                 ("servers", "list", "--json"), ("servers", "show", "ai"), ("servers", "list")):
        shown = mcp_in(*args)
        assert shown.code == 0, shown
        assert not any(s in shown.stdout + shown.stderr for s in secrets), (args, shown)
    ai = mcp_in("servers", "show", "ai", "--json").json["config"]
    assert ai["args"] == ["--api-key", REDACTED, "--verbose"]
    assert ai["env"] == {"OPENAI_KEY": REDACTED, "DEEPL_AUTH_KEY": REDACTED, "LANG": "C"}
    web = mcp_in("servers", "show", "web", "--json").json["config"]
    assert web["url"] == f"https://mcp.example.com/mcp?api_key={REDACTED}&region=eu"
    assert web["headers"] == {"X-Api-Key": REDACTED, "Accept-Language": "en"}
    rows = {r["name"]: r for r in mcp_in("servers", "list", "--json").json["servers"]}
    assert rows["ai"]["args"] == ai["args"] and rows["web"]["url"] == web["url"]
    revealed = mcp_in("servers", "show", "ai", "--json", "--reveal").json["config"]
    assert revealed["args"] == ["--api-key", KEY, "--verbose"] and revealed["env"]["OPENAI_KEY"] == KEY


def test_import_warns_of_literal_secrets_it_copies(isolated_env: Path, config_file: Path) -> None:
    cursor = isolated_env / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text(json.dumps({"mcpServers": {"gh": {"command": "github-mcp", "env": {"GITHUB_TOKEN": TOKEN}}}}))
    imported = mcp_in("servers", "import", "cursor", "--json")
    assert imported.code == 0, imported
    assert TOKEN not in imported.stdout + imported.stderr
    assert "gh: env GITHUB_TOKEN: a secret stored in plain text" in imported.stderr
    listed = mcp_in("servers", "list")
    assert TOKEN not in listed.stdout + listed.stderr


@pytest.mark.parametrize("client", ["gemini", "codex"])
def test_install_dry_run_diff_redacts_the_entries_secrets(isolated_env: Path, client: str) -> None:
    """The diff shows the entry being written, and any other entry in its context lines."""
    from mcpcli.install import target_file

    path = target_file(client).path
    path.parent.mkdir(parents=True, exist_ok=True)
    if client == "gemini":
        path.write_text(json.dumps({"mcpServers": {"old": {"command": "x", "env": {"GITHUB_TOKEN": TOKEN}}}}))
    args = ("servers", "install", "docs", "--into", client, "https://example.com/mcp",
            "-H", f"X-Api-Key: {KEY}", "--dry-run")
    for extra in ((), ("--json",)):
        planned = mcp_in(*args, *extra)
        assert planned.code == 0, planned
        assert KEY not in planned.stdout + planned.stderr and TOKEN not in planned.stdout
        assert REDACTED in planned.stdout and "X-Api-Key" in planned.stdout
    installed = mcp_in(*args[:-1])
    assert installed.code == 0, installed
    assert KEY in path.read_text()  # written as given, with the warning
    assert "writing literal values of header X-Api-Key" in installed.stderr


@pytest.mark.slow
def test_info_endpoint_never_shows_a_secret_argument() -> None:
    code = f"import runpy, sys; sys.argv = [sys.argv[0]]; runpy.run_path({fake_server()[1]!r}, run_name='__main__')"
    info = mcp_in("info", "--json", "--", sys.executable, "-c", code, "--api-key", KEY)
    assert info.code == 0, info
    assert KEY not in info.stdout + info.stderr
    assert info.json["endpoint"].endswith(f"--api-key {REDACTED}")


def test_a_connection_knows_its_command_line_secrets_for_trace() -> None:
    from mcpcli.config import ServerEntry
    from mcpcli.connect import ConnectOptions, open_transport
    from mcpcli.text import SecretValues

    secrets = SecretValues()
    open_transport(ServerEntry(name="ai", command="ai-mcp", args=["--api-key", KEY]),
                   ConnectOptions(secrets=secrets))
    assert KEY in list(secrets)


# -- the rule itself ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "OPENAI_KEY", "OPENAI_API_KEY", "DEEPL_AUTH_KEY", "DB_PASSWORD",
                                  "AWS_SECRET_ACCESS_KEY", "Authorization", "X-Api-Key", "Cookie", "PGPASSWD"])
def test_secret_names(name: str) -> None:
    assert secret_name(name)


@pytest.mark.parametrize("name", ["PATH", "LANG", "DEBUG", "Accept", "HOME", "REGION"])
def test_plain_names(name: str) -> None:
    assert not secret_name(name)


def test_argv_secrets_and_what_is_left_alone() -> None:
    argv = ["srv", "--api-key", KEY, "--token=tok-0123456", "API_KEY=env-0123456", "--no-auth", "tools.yaml",
            "--header", f"Authorization: Bearer {TOKEN}", "https://mcp.example.com/mcp", "--password", "-v"]
    assert redact_argv(argv) == [
        "srv", "--api-key", REDACTED, f"--token={REDACTED}", f"API_KEY={REDACTED}", "--no-auth", "tools.yaml",
        "--header", f"Authorization: {REDACTED}", "https://mcp.example.com/mcp", "--password", "-v"]


def test_entry_secrets_name_where_each_is() -> None:
    entry = {"command": {"path": "srv", "args": ["--token", TOKEN], "env": {"MY_KEY": KEY}},  # Zed's form
             "oauth": {"clientId": "id", "clientSecret": "cs-0123456"},
             "url": f"https://user:pw-0123456@h.example/mcp?token={TOKEN}"}
    assert entry_secrets(entry) == [("argument --token", TOKEN), ("env MY_KEY", KEY),
                                    ("clientSecret", "cs-0123456"), ("the URL's password", "pw-0123456"),
                                    ("the URL's token", TOKEN)]
    shown = json.dumps(redact_entry(entry))
    assert not any(s in shown for s in (TOKEN, KEY, "cs-0123456", "pw-0123456"))
    assert '"clientId": "id"' in shown and "h.example/mcp" in shown
