"""The command side against the real daemon (`python -m mcpcli.daemon`, built on the other
half's branch): skipped until both halves are merged, then run as they are.

What the fake daemon's tests check about the command side holds here end to end: `session
open` returns a ready session, `@NAME` commands share its server, a keepAlive server opens
its session on first use and joins it after, errors keep their exit codes, and closing the
last session ends the daemon and every server.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in, wait_until

from sessions.util import daemon_pid as _daemon_pid
from sessions.util import stop

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mcpcli.daemon.server") is None,
    reason="the daemon (mcpcli.daemon.server) is built on the other half's branch",
)


@pytest.fixture
def real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private run directory and the real daemon, stopped (and reaped) afterwards."""
    directory = tmp_path / "run"
    monkeypatch.setenv("MCPCLI_RUNTIME_DIR", str(directory))
    monkeypatch.delenv("MCPCLI_DAEMON_ARGV", raising=False)
    yield directory
    pid = _daemon_pid(directory / "daemon.sock")
    if pid is not None:
        mcp_in("session", "close", "--all")
        stop(pid)


@pytest.mark.peer
def test_a_session_is_shared_by_at_name_commands(real: Path, everything: list[str]) -> None:
    opened = mcp_in("session", "open", "ev", "--json", "--", *everything)
    assert opened.code == 0, opened
    assert opened.json["state"] == "ready" and opened.json["server"]["name"] == "mcp-servers/everything"
    called = mcp_in("tools", "call", "@ev", "echo", "--arg", "message=hi", "--json")
    assert called.code == 0 and "Echo: hi" in json.dumps(called.json), called
    bad = mcp_in("tools", "call", "@ev", "echo", "--arg", "nope=1")
    assert bad.code == 2, bad
    [listed] = mcp_in("session", "list", "--json").json["sessions"]
    assert listed["pid"] == opened.json["pid"] and listed["calls"] >= 1
    closed = mcp_in("session", "close", "--all", "--json")
    assert closed.json == {"closed": ["ev"]}, closed
    wait_until(lambda: _daemon_pid(real / "daemon.sock") is None, what="the daemon to exit")


def test_a_keep_alive_server_is_opened_then_joined(real: Path, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    argv = fake_server("--typed-tools")
    config.write_text(json.dumps({"mcpServers": {"fk": {"command": argv[0], "args": argv[1:], "keepAlive": True}}}))
    for _ in range(2):
        result = mcp_in("--config", str(config), "tools", "call", "fk", "get-sum", "--arg", "a=1", "--arg", "b=2")
        assert result.code == 0, result
    [listed] = mcp_in("session", "list", "--json").json["sessions"]
    assert listed["name"] == "fk" and listed["calls"] >= 2


def test_errors_keep_their_exit_codes(real: Path) -> None:
    assert mcp_in("tools", "list", "@none").code == 4
    assert mcp_in("session", "open", "fk", "--json", "--", *fake_server()).code == 0
    other = mcp_in("session", "open", "fk", "--", *fake_server("--typed-tools"))
    assert other.code == 2 and "mcp session close fk" in other.stderr, other
    missing = mcp_in("ping", "@other")
    assert missing.code == 4 and "mcp session open other" in missing.stderr, missing
    assert mcp_in("session", "close", "other").code == 4
    assert os.path.exists(real / "daemon.sock")


def _complete(*words: str) -> list[str]:
    env = {"COMP_WORDS": " ".join(words), "COMP_CWORD": str(len(words) - 1), "_MCP_COMPLETE": "bash_complete"}
    r = mcp_in(env=env)
    assert r.code == 0, r
    return [line.split(",", 1)[1] for line in r.stdout.splitlines() if line.startswith("plain,")]


def test_session_names_complete_and_completion_never_starts_the_daemon(real: Path) -> None:
    assert "@fk" not in _complete("mcp", "tools", "list", "@")
    assert not (real / "daemon.sock").exists()  # asking for names did not start one
    assert mcp_in("session", "open", "fk", "--json", "--", *fake_server()).code == 0
    assert _complete("mcp", "tools", "list", "@") == ["@fk"]
    assert "@fk" in _complete("mcp", "ping", "")
    assert _complete("mcp", "session", "logs", "f") == ["fk"]
    assert _complete("mcp", "session", "close", "") == ["fk"]


def test_connection_options_an_at_name_target_cannot_use_are_named(real: Path) -> None:
    assert mcp_in("session", "open", "fk", "--json", "--", *fake_server()).code == 0
    r = mcp_in("ping", "@fk", "--env", "X=1", "--cwd", "/")
    assert r.code == 0, r
    assert "warning: --env, --cwd ignored: session 'fk' keeps what it was opened with" in r.stderr
    assert "ignored" not in mcp_in("ping", "@fk").stderr


def _subscribe(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "mcpcli", "resources", "subscribe", *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("tags", ["tagged", "untagged"])
def test_two_listens_on_a_modern_stdio_session_each_get_their_own_notifications(
    real: Path, tmp_path: Path, tags: str
) -> None:
    """Each `subscriptions/listen` gets its acknowledgement and updates: by the listen id
    the server tags them with (given back as the command's own id), or, from a server that
    leaves the tag out, by what each listen asked for."""
    record = tmp_path / "record.jsonl"
    argv = fake_server("--modern", "--listen", tags, "--record", str(record))
    assert mcp_in("session", "open", "S", "--json", "--", *argv).code == 0
    first = _subscribe("@S", "x://a", "--count", "1", "--jsonl", "--timeout", "20")
    second = _subscribe("@S", "x://b", "--count", "1", "--jsonl", "--timeout", "20")
    try:
        def listens() -> int:
            lines = record.read_text().splitlines() if record.exists() else []
            return sum(json.loads(line).get("method") == "subscriptions/listen" for line in lines)

        wait_until(lambda: listens() == 2, what="both listens to reach the server")
        for uri in ("x://b", "x://a"):
            touched = mcp_in("tools", "call", "@S", "touch", "--arg", f"uri={uri}", "--json")
            assert touched.code == 0 and "told 1" in json.dumps(touched.json), touched
        out_first, err_first = first.communicate(timeout=30)
        out_second, err_second = second.communicate(timeout=30)
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert first.returncode == 0, err_first
    assert second.returncode == 0, err_second
    [event_first] = [json.loads(line) for line in out_first.splitlines()]
    [event_second] = [json.loads(line) for line in out_second.splitlines()]
    assert event_first["params"]["uri"] == "x://a" and event_second["params"]["uri"] == "x://b"
    if tags == "tagged":  # each command sees its own listen's id (its first request after the handshake)
        assert event_first["params"]["_meta"] == event_second["params"]["_meta"]
    log = mcp_in("session", "logs", "S").stdout
    assert "subscriptions/acknowledged" not in log and "resources/updated" not in log


def test_the_daemon_keeps_none_of_the_starting_commands_descriptors(real: Path) -> None:
    """The daemon's stdout and stderr are its log, and it holds no other descriptor of the
    command that started it (a shell's or test runner's pipe would stay open, its reader
    waiting, and could carry the daemon's lines to their terminal)."""
    read, write = os.pipe()
    try:
        opened = subprocess.run(
            [sys.executable, "-m", "mcpcli", "session", "open", "fk", "--", *fake_server()],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, pass_fds=(write,),
        )
        os.close(write)
        write = -1
        assert opened.returncode == 0, opened
        pid = _daemon_pid(real / "daemon.sock")
        assert pid is not None
        # The command has exited: the pipe ends unless the daemon holds a copy of it.
        ready, _, _ = select.select([read], [], [], 30)
        assert ready and os.read(read, 1) == b"", "the daemon holds the starting command's pipe"
        fds = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        log = str(real / "daemon.log")
        assert fds[0] == os.devnull and fds[1] == log and fds[2] == log, fds
        ours = f"pipe:[{os.fstat(read).st_ino}]"
        assert ours not in fds.values(), fds
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
    assert mcp_in("session", "close", "--all").code == 0
    wait_until(lambda: "the last session ended" in (real / "daemon.log").read_text(), what="the daemon's line")
    assert opened.stderr == "" and "daemon" not in opened.stdout


@pytest.mark.peer
def test_a_detached_task_is_followed_through_the_session(real: Path, tmp_path: Path, everything: list[str]) -> None:
    """--detach through a session: the server stays, so the hint names the session (no
    "exits now" warning, no "if the server keeps tasks" caveat) and following it works."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"evk": {
        "command": everything[0], "args": everything[1:], "keepAlive": True}}}))
    for target in ("evk", "@evk"):
        created = mcp_in("--config", str(config), "tools", "call", target, "simulate-research-query",
                         "--arg", "topic=otters", "--detach", "--json")
        assert created.code == 0, created
        task_id = created.json["task"]["taskId"]
        assert f"follow it with `mcp tasks result {target} {task_id}`\n" in created.stderr, created
        assert "exits now" not in created.stderr and "keeps tasks" not in created.stderr
        done = mcp_in("--config", str(config), "tasks", "result", target, task_id, "--json")
        assert done.code == 0 and "otters" in json.dumps(done.json), done


def test_two_subscribes_on_a_modern_mcp_serve_session_each_get_their_resource(real: Path, tmp_path: Path) -> None:
    """The same against our own 2026-07-28 server (`mcp serve --watch`) over stdio: each
    command's listen gets the updates of its own resource, and only those."""
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    (tmp_path / "tools.yaml").write_text(
        "version: 1\nresources:\n"
        "  - {uri: 'file:///a', name: a, file: a.txt, subscribe: true}\n"
        "  - {uri: 'file:///b', name: b, file: b.txt, subscribe: true}\n")
    opened = mcp_in("session", "open", "y", "--json", "--", sys.executable, "-m", "mcpcli", "serve",
                    str(tmp_path / "tools.yaml"), "--watch")
    assert opened.code == 0 and opened.json["era"] == "modern", opened
    first = _subscribe("@y", "file:///a", "--count", "1", "--jsonl")
    second = _subscribe("@y", "file:///b", "--count", "1", "--jsonl")
    try:
        for proc in (first, second):  # acknowledged: the command says it is watching
            assert proc.stderr is not None and "watching 1 resource" in proc.stderr.readline()
        (tmp_path / "b.txt").write_text("b changed")
        out_second, _ = second.communicate(timeout=30)
        assert second.returncode == 0 and first.poll() is None
        (tmp_path / "a.txt").write_text("a changed")
        out_first, _ = first.communicate(timeout=30)
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert first.returncode == 0
    assert [json.loads(line)["params"]["uri"] for line in out_first.splitlines()] == ["file:///a"]
    assert [json.loads(line)["params"]["uri"] for line in out_second.splitlines()] == ["file:///b"]


def test_sessions_use_their_profiles_sign_in(real: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session opened with --profile holds that account's tokens; the default profile's
    session on the same server is another session (a keepAlive server gets NAME.PROFILE)."""
    from fakes.oauth_server import OAuthServer

    from mcpcli.auth.store import Record, Secrets, TokenStore

    monkeypatch.setenv("MCP_TOKEN_STORE", "file")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with OAuthServer() as srv:
        for profile, user in ((None, "alice"), ("work", "bob")):
            issued = srv.issue("cid", "", srv.resource, refresh=False, user=user)
            rec = Record(server_url=srv.mcp_url, resource=srv.resource, issuer=srv.issuer,
                         token_endpoint=f"{srv.base}/token", client_id="cid", store="file", profile=profile)
            TokenStore("file", profile=profile).save(rec, Secrets(access_token=issued["access_token"]))

        def who(*argv: str) -> str:
            r = mcp_in(*argv, "--stored-auth-only")
            assert r.code == 0, r
            return str(r.json["content"][0]["text"])

        assert mcp_in("session", "open", "w", srv.mcp_url, "--profile", "work").code == 0
        assert mcp_in("session", "open", "d", srv.mcp_url).code == 0
        assert who("tools", "call", "@w", "echo") == "called echo as bob"
        assert who("tools", "call", "@d", "echo") == "called echo as alice"
        other = mcp_in("tools", "call", "@d", "echo", "--profile", "work", "--stored-auth-only")
        assert other.code == 0 and other.json["content"][0]["text"] == "called echo as alice"
        assert "--profile ignored: session 'd' keeps what it was opened with" in other.stderr
        again = mcp_in("session", "open", "w", srv.mcp_url)
        assert again.code == 2 and "open with profile 'work'" in again.stderr, again

        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"acct": {"url": srv.mcp_url, "keepAlive": True}}}))
        assert who("--config", str(config), "tools", "call", "acct", "echo", "--profile", "work") == "called echo as bob"
        assert who("--config", str(config), "tools", "call", "acct", "echo") == "called echo as alice"
        names = sorted(s["name"] for s in mcp_in("session", "list", "--json").json["sessions"])
        assert names == ["acct", "acct.work", "d", "w"]
        assert mcp_in("session", "close", "--all").code == 0


def test_a_keep_alive_servers_headers_helper_runs_in_its_session(real: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes.oauth_server import OAuthServer

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with OAuthServer() as srv:
        issued = srv.issue("cid", "", srv.resource, refresh=False, user="carol")
        headers = tmp_path / "headers"
        headers.write_text(f"Authorization: Bearer {issued['access_token']}\n")
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"hh": {
            "url": srv.mcp_url, "keepAlive": True, "headersHelper": ["cat", str(headers)]}}}))
        r = mcp_in("--config", str(config), "tools", "call", "hh", "echo", "--no-auth")
        assert r.code == 0, r
        assert r.json["content"][0]["text"] == "called echo as carol"
        assert [s["name"] for s in mcp_in("session", "list", "--json").json["sessions"]] == ["hh"]
        assert mcp_in("session", "close", "--all").code == 0


def test_a_sessions_oauth_token_is_refreshed_in_place(real: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon holds the sign-in: when the server starts refusing the access token, the
    session refreshes it (refresh_token grant) and the command's call still succeeds; the
    command never sees a token, and the new one is saved for the next command."""
    from fakes.oauth_server import OAuthServer

    from mcpcli.auth.store import Record, Secrets, TokenStore

    monkeypatch.setenv("MCP_TOKEN_STORE", "file")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with OAuthServer(clients={"cid": None}) as srv:
        issued = srv.issue("cid", "", srv.resource, refresh=True, user="alice")
        rec = Record(server_url=srv.mcp_url, resource=srv.resource, issuer=srv.issuer,
                     token_endpoint=f"{srv.base}/token", client_id="cid", store="file")
        TokenStore("file").save(rec, Secrets(access_token=issued["access_token"],
                                             refresh_token=issued["refresh_token"]))
        assert mcp_in("session", "open", "o", srv.mcp_url, "--stored-auth-only").code == 0
        first = mcp_in("tools", "call", "@o", "echo", "--stored-auth-only")
        assert first.code == 0 and first.json["content"][0]["text"] == "called echo as alice", first
        assert srv.token_requests("refresh_token") == []

        srv.expire_access_tokens()
        again = mcp_in("tools", "call", "@o", "echo", "--stored-auth-only")
        assert again.code == 0 and again.json["content"][0]["text"] == "called echo as alice", again
        assert len(srv.token_requests("refresh_token")) == 1
        assert issued["access_token"] not in again.stdout + again.stderr
        store = TokenStore("file")
        saved = store.secrets_of(store.records()[0])
        assert saved.access_token and saved.access_token != issued["access_token"]
        assert mcp_in("session", "close", "o").code == 0


@pytest.mark.slow
def test_a_sessions_target_never_shows_a_secret_argument(real: Path) -> None:
    """INFO carries the command line, with what looks secret in it redacted (`mcp servers show`'s rule)."""
    key = "sk-live-0123456789"
    code = f"import runpy, sys; sys.argv = [sys.argv[0]]; runpy.run_path({fake_server()[1]!r}, run_name='__main__')"
    opened = mcp_in("session", "open", "ai", "--json", "--", sys.executable, "-c", code, "--api-key", key)
    assert opened.code == 0, opened
    listed = mcp_in("session", "list", "--json")
    info = mcp_in("info", "@ai", "--json")
    for shown in (opened, listed, info):
        assert key not in shown.stdout + shown.stderr, shown
    assert opened.json["target"].endswith("--api-key «redacted»")
    assert mcp_in("session", "close", "ai").code == 0


#: A server that fails as `node /nonexistent.js` does: the error amid its stack and banners.
_NODE_LIKE_FAILURE = (
    "import sys\n"
    "sys.stderr.write('''node:internal/modules/cjs/loader:1210\n  throw err;\n  ^\n\n"
    "Error: Cannot find module '/nonexistent.js'\n"
    "    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)\n"
    "    at node:internal/main/run_main_module:28:49 {\n  code: 'MODULE_NOT_FOUND',\n  requireStack: []\n}\n\n"
    "Node.js v20.20.2\n''')\n"
    "sys.exit(1)\n"
)


@pytest.mark.slow
def test_a_session_whose_server_cannot_start_says_why_as_the_one_shot_does(real: Path) -> None:
    """`mcp session open` quotes the telling line, not the last stack frames (issue 22), in
    the same words as the one-shot command; so does a later command on the exited session."""
    server = [sys.executable, "-c", _NODE_LIKE_FAILURE]
    wanted = "mcp: error: server exited with code 1; its stderr says: Error: Cannot find module '/nonexistent.js'"
    opened = mcp_in("session", "open", "broken", "--", *server)
    assert opened.code == 4, opened
    assert wanted in opened.stderr.splitlines(), opened
    assert "at node:internal" not in opened.stderr and "Node.js v20" not in opened.stderr
    oneshot = mcp_in("tools", "list", "--", *server)
    assert oneshot.code == 4, oneshot
    assert oneshot.stderr.splitlines()[-1] == wanted, oneshot
