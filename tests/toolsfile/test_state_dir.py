"""`mcp serve --state-dir`: a directory only we can write, and no file in it opened through
a symlink (the SQLite task store). Also the other files we write where a symlink could be
waiting: `--server-log`, `mcp skill --out`.

"Another user's directory" is a real one: made and given to another uid when the tests run
as root, else one the system already has (`/`, owned by root).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in

from mcpcli.errors import TransportError
from mcpcli.server.tasks.sqlite import SQLiteRecords

TOOLS = """\
version: 1
tools:
  - name: later
    description: may run as a task
    task: {mode: optional, after: 0s}
    run: {argv: [echo, hi]}
"""
NOBODY = 65534


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    path = tmp_path / "tools.yaml"
    path.write_text(TOOLS)
    return path


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of the user's that a planted symlink points at."""
    path = tmp_path / "victim"
    path.write_text("precious\n")
    path.chmod(0o644)
    return path


@pytest.fixture
def foreign_dir(tmp_path: Path) -> Path:
    """A directory another uid owns (world-writable where we can make one)."""
    if os.getuid() == 0:
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        os.chown(theirs, NOBODY, NOBODY)
        theirs.chmod(0o777)
        return theirs
    for candidate in ("/", "/usr", "/etc"):
        if os.stat(candidate).st_uid != os.getuid():
            return Path(candidate)
    pytest.skip("no directory of another user here")


def serve(tools: Path, state: Path) -> object:
    return mcp_in("serve", str(tools), "--task-store", "sqlite", "--state-dir", str(state), input="")


@pytest.mark.parametrize("name", ["tasks.lock", "tasks.db", "tasks.db-wal", "tasks.db-shm", "tasks.db-journal"])
def test_a_symlink_in_the_state_dir_is_refused_and_its_target_untouched(
    tools: Path, tmp_path: Path, victim: Path, name: str
) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / name).symlink_to(victim)
    r = serve(tools, state)
    assert r.code == 4, r
    assert f"refusing {state / name}: it is a symlink" in r.stderr and "Traceback" not in r.stderr, r
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert victim.read_text() == "precious\n"


def test_a_fifo_in_place_of_the_database_is_refused_without_blocking(tools: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.mkfifo(state / "tasks.db")
    r = serve(tools, state)
    assert r.code == 4 and "it is not a regular file" in r.stderr, r


def test_a_state_dir_of_another_user_is_refused(tools: Path, foreign_dir: Path) -> None:
    before = sorted(os.listdir(foreign_dir))
    r = serve(tools, foreign_dir)
    assert r.code == 4, r
    owner = foreign_dir.stat().st_uid
    assert f"refusing the state directory {foreign_dir}: it belongs to uid {owner}" in r.stderr, r
    assert r.stderr.count("mcp: error:") == 1 and "Traceback" not in r.stderr
    assert sorted(os.listdir(foreign_dir)) == before  # nothing made there


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702], ids=oct)
def test_a_state_dir_others_can_write_is_refused_not_repaired(tools: Path, tmp_path: Path, mode: int) -> None:
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(mode)
    r = serve(tools, state)
    assert r.code == 4, r
    assert f"mode {mode:o} lets others in (it must be 700)" in r.stderr
    assert "mcp: hint:" in r.stderr
    assert stat.S_IMODE(state.stat().st_mode) == mode
    assert os.listdir(state) == []


def test_a_symlinked_state_dir_is_refused(tools: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    r = serve(tools, tmp_path / "link")
    assert r.code == 4 and "it is a symlink" in r.stderr, r
    assert os.listdir(real) == []


def test_the_store_refuses_the_same_in_process(tmp_path: Path, victim: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "tasks.db").symlink_to(victim)
    with pytest.raises(TransportError, match="it is a symlink") as caught:
        SQLiteRecords(state)
    assert caught.value.hint and "700" in caught.value.hint
    (state / "tasks.db").unlink()
    SQLiteRecords(state).close()  # the lock was let go: the directory is usable again


def test_a_symlinked_server_log_is_refused(tmp_path: Path, victim: Path) -> None:
    link = tmp_path / "server.log"
    link.symlink_to(victim)
    r = mcp_in("tools", "list", "--server-log", str(link), "--", *fake_server())
    assert r.code == 2, r
    assert "--server-log" in r.stderr and "symbolic link" in r.stderr
    assert victim.read_text() == "precious\n"


def test_a_new_server_log_is_private(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    r = mcp_in("tools", "list", "--server-log", str(log), "--", *fake_server())
    assert r.code == 0, r
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_skill_out_does_not_write_through_a_symlinked_directory(tmp_path: Path) -> None:
    out = tmp_path / "skills"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = mcp_in("skill", "--out", str(out), "-q", "--json", "--", *fake_server())
    assert r.code == 0, r
    name = Path(r.json["path"]).parent.name
    (out / name / "SKILL.md").unlink()
    (out / name).rmdir()
    (out / name).symlink_to(elsewhere)
    r = mcp_in("skill", "--out", str(out), "-q", "--", *fake_server())
    assert r.code == 2 and "symbolic link" in r.stderr, r
    assert os.listdir(elsewhere) == []
