"""`mcpcli.files`: private directories, no-follow opens, locked edits that notice others."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from mcpcli import files


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_private_dir_creates_0700_tightens_a_readable_one_and_refuses_a_writable_one(tmp_path: Path) -> None:
    made = tmp_path / "a" / "b"
    files.private_dir(made, "the test directory")
    assert mode_of(made) == 0o700
    readable = tmp_path / "readable"
    readable.mkdir()
    readable.chmod(0o755)
    files.private_dir(readable, "the test directory")
    assert mode_of(readable) == 0o700
    writable = tmp_path / "writable"
    writable.mkdir()
    writable.chmod(0o733)
    with pytest.raises(files.UnsafePath, match=r"refusing the test directory .*writable: mode 733 lets others in"):
        files.private_dir(writable, "the test directory")
    assert mode_of(writable) == 0o733


def test_open_regular_refuses_symlinks_fifos_and_devices(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("x")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(files.UnsafePath, match="it is a symlink"):
        files.open_regular(tmp_path / "link", os.O_RDWR | os.O_CREAT)
    os.mkfifo(tmp_path / "fifo")  # no writer: a blocking open would hang
    with pytest.raises(files.UnsafePath, match="not a regular file"):
        files.open_regular(tmp_path / "fifo", os.O_RDONLY)
    with pytest.raises(files.UnsafePath, match="not a regular file"):
        files.open_regular("/dev/null", os.O_WRONLY)
    fd = files.open_regular(tmp_path / "new", os.O_RDWR | os.O_CREAT)
    os.close(fd)
    assert mode_of(tmp_path / "new") == 0o600


def test_locked_edit_redoes_the_edit_when_the_file_changed_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("a\n")
    path.chmod(0o640)
    seen: list[bytes | None] = []

    def edit(data: bytes | None) -> bytes:
        seen.append(data)
        if len(seen) == 1:
            path.write_text("a\nb\n")  # another program, between our read and our rename
        return (data or b"") + b"c\n"

    kept: list[bytes] = []
    assert files.locked_edit(path, edit, before_replace=lambda old, mode: kept.append(old))
    assert seen == [b"a\n", b"a\nb\n"]
    assert path.read_text() == "a\nb\nc\n" and mode_of(path) == 0o640
    assert kept == [b"a\n", b"a\nb\n"]
    assert (tmp_path / ".f.txt.mcpcli-lock").exists()  # the sidecar stays: removing it would race
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_locked_edit_gives_up_on_a_file_that_keeps_changing(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("0")

    def edit(data: bytes | None) -> bytes:
        path.write_text(str(int(data or b"0") + 1))
        return b"mine"

    with pytest.raises(files.ChangedMeanwhile):
        files.locked_edit(path, edit, tries=3)
    assert path.read_text() == "3"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_locked_edit_makes_a_new_file_with_the_new_mode_and_none_means_no_write(tmp_path: Path) -> None:
    path = tmp_path / "new.json"
    assert files.locked_edit(path, lambda data: None) is False
    assert not path.exists()
    assert files.locked_edit(path, lambda data: b"{}", new_mode=0o600) is True
    assert path.read_bytes() == b"{}" and mode_of(path) == 0o600
    path.chmod(0o644)
    files.locked_edit(path, lambda data: b"[]")
    assert mode_of(path) == 0o644  # kept...
    files.locked_edit(path, lambda data: b"[1]", mode=0o600)
    assert mode_of(path) == 0o600  # ...unless a mode is given


def test_the_lock_is_held_across_the_edit_and_a_planted_lock_symlink_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    inside, release = threading.Event(), threading.Event()

    def slow(data: bytes | None) -> bytes:
        inside.set()
        release.wait(30)
        return b"first"

    first = threading.Thread(target=files.locked_edit, args=(path, slow))
    first.start()
    assert inside.wait(30)
    with pytest.raises(files.LockBusy):
        files.locked_edit(path, lambda data: b"second", timeout=0)
    release.set()
    first.join(30)
    assert path.read_bytes() == b"first"

    lock = Path(files.lock_file_of(str(path)))
    lock.unlink()
    victim = tmp_path / "victim"
    victim.write_text("keep")
    lock.symlink_to(victim)
    with pytest.raises(files.UnsafePath, match="it is a symlink"):
        files.locked_edit(path, lambda data: b"x")
    assert victim.read_text() == "keep" and path.read_bytes() == b"first"


def test_replace_file_writes_whole_with_its_mode_and_replaces_a_symlink(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    path = work / "out.json"
    files.replace_file(path, b"one")
    assert path.read_bytes() == b"one" and mode_of(path) == 0o644
    files.replace_file(path, b"two", mode=0o600)
    assert path.read_bytes() == b"two" and mode_of(path) == 0o600
    victim = work / "victim"
    victim.write_text("keep")
    link = work / "link"
    link.symlink_to(victim)
    files.replace_file(link, b"new")
    assert victim.read_text() == "keep"
    assert not link.is_symlink() and link.read_bytes() == b"new"
    (work / "dir").mkdir()
    with pytest.raises(IsADirectoryError):
        files.replace_file(work / "dir", b"x")  # a directory in the way: refused, nothing left behind
    assert sorted(p.name for p in work.iterdir()) == ["dir", "link", "out.json", "victim"]
