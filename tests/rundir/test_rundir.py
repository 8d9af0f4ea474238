"""The run directory: where it is, who may use it, and the bounded session logs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcpcli import rundir as paths


@pytest.fixture
def no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(paths.RUNTIME_DIR_ENV, raising=False)


def test_the_run_dir_is_under_xdg_runtime_dir_and_created_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_override: None
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    made = paths.run_dir()
    assert made == tmp_path / "mcpcli"
    assert made.stat().st_mode & 0o777 == 0o700
    assert paths.socket_path() == made / "daemon.sock"
    assert paths.lock_path() == made / "daemon.lock"
    assert paths.session_log("ev") == made / "sessions" / "ev.log"


def test_without_a_usable_xdg_runtime_dir_it_is_a_per_user_temp_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_override: None
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "missing"))
    assert paths._default_dir() == f"/tmp/mcpcli-{os.getuid()}"


def test_the_override_names_the_run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(paths.RUNTIME_DIR_ENV, str(tmp_path / "run"))
    assert paths.run_dir() == tmp_path / "run"
    assert paths.socket_file() == str(tmp_path / "run" / "daemon.sock")


def test_the_fast_paths_helpers_load_no_pathlib(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys; import mcpcli.rundir as p, mcpcli.core.localrpc; "
            "print(p.socket_file(), 'pathlib' in sys.modules)")
    env = {**os.environ, paths.RUNTIME_DIR_ENV: str(tmp_path / "run")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == [str(tmp_path / "run" / "daemon.sock"), "False"]


@pytest.mark.parametrize("mode", [0o750, 0o705, 0o777])
def test_a_run_dir_others_can_enter_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: int) -> None:
    shared = tmp_path / "run"
    shared.mkdir()
    shared.chmod(mode)
    monkeypatch.setenv(paths.RUNTIME_DIR_ENV, str(shared))
    with pytest.raises(paths.RunDirError, match="lets others in"):
        paths.run_dir()
    assert shared.stat().st_mode & 0o777 == mode  # refused, not repaired


def test_a_symlinked_or_non_directory_run_dir_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv(paths.RUNTIME_DIR_ENV, str(tmp_path / "link"))
    with pytest.raises(paths.RunDirError, match="symlink"):
        paths.run_dir()
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(paths.RUNTIME_DIR_ENV, str(tmp_path / "file"))
    with pytest.raises(paths.RunDirError, match="not a directory"):
        paths.run_dir()


def test_a_run_dir_of_another_uid_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    mine = tmp_path / "run"
    mine.mkdir(mode=0o700)
    monkeypatch.setenv(paths.RUNTIME_DIR_ENV, str(mine))
    real_uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real_uid + 1)
    with pytest.raises(paths.RunDirError, match=f"belongs to uid {real_uid}"):
        paths.run_dir()


@pytest.mark.parametrize("name", ["", ".hidden", "a/b", "..", "x\0y"])
def test_session_names_must_be_plain_file_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="bad session name"):
        paths.session_log(name, tmp_path)


def test_the_log_ring_keeps_the_newest_lines_within_its_bound(tmp_path: Path) -> None:
    log = tmp_path / "ev.log"
    for i in range(400):
        paths.append_ring(log, f"line {i:04d} {'x' * 40}\n".encode(), limit=4096)
    text = log.read_text()
    assert log.stat().st_size <= 4096
    assert text.endswith(f"line 0399 {'x' * 40}\n")
    assert text.startswith("line ")  # cut at a line start
    assert log.stat().st_mode & 0o777 == 0o600


def test_the_start_lock_admits_one_holder_at_a_time(tmp_path: Path) -> None:
    import threading

    order: list[str] = []
    first_in, second_tried = threading.Event(), threading.Event()

    def second() -> None:
        first_in.wait(30)
        second_tried.set()
        with paths.start_lock(tmp_path, timeout=30):
            order.append("second")

    other = threading.Thread(target=second)
    other.start()
    with paths.start_lock(tmp_path):
        first_in.set()
        second_tried.wait(30)
        with pytest.raises(paths.RunDirError, match="holds"):
            with paths.start_lock(tmp_path, timeout=0):  # held (flock is per open file)
                pass
        order.append("first")
    other.join(30)
    assert order == ["first", "second"]
    assert (tmp_path / "daemon.lock").stat().st_mode & 0o777 == 0o600


def test_every_test_has_its_own_run_dir(tmp_path: Path) -> None:
    # tests/conftest.py: a test reaching a session never talks to the user's daemon.
    assert paths.run_dir() == tmp_path / "run"
