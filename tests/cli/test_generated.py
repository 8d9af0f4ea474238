"""Generated files stay in step with the command tree: regenerate them and compare.

When one of these fails, run `scripts/gen-completions` and `scripts/gen-man` and
commit the result.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

# Each test here runs real processes (`mcp`, servers) for a second or so: not in scripts/test --fast.
pytestmark = pytest.mark.slow

SCRIPTS = REPO / "scripts"


def generate(script: str, out: Path, env: dict[str, str] | None = None) -> None:
    import os

    full_env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    full_env.update(env or {})
    r = subprocess.run([sys.executable, str(SCRIPTS / script), "--out", str(out)],
                       capture_output=True, text=True, env=full_env, timeout=120)
    assert r.returncode == 0, r.stderr


def compare(fresh: Path, committed: Path, pattern: str, fix: str) -> None:
    new = {p.name: p.read_text() for p in fresh.glob(pattern)}
    old = {p.name: p.read_text() for p in committed.glob(pattern)}
    assert sorted(new) == sorted(old), f"files differ; run {fix}"
    stale = [name for name in new if new[name] != old[name]]
    assert not stale, f"{', '.join(stale)} out of date; run {fix}"


def test_completions_match_the_command_tree(tmp_path: Path) -> None:
    out = tmp_path / "completions"
    generate("gen-completions", out)
    compare(out, REPO / "completions", "*", "scripts/gen-completions")
    assert sorted(p.name for p in out.iterdir()) == ["_mcp", "mcp.bash", "mcp.fish"]
    assert (out / "_mcp").read_text().startswith("#compdef mcp")


def test_man_pages_match_the_command_tree(tmp_path: Path) -> None:
    generate("gen-man", tmp_path / "man")
    compare(tmp_path / "man", REPO / "man", "*.1", "scripts/gen-man")


def test_man_pages_cover_every_command_with_the_required_sections(tmp_path: Path) -> None:
    generate("gen-man", tmp_path)
    names = {p.name for p in tmp_path.glob("*.1")}
    for page in ("mcp.1", "mcp-info.1", "mcp-ping.1", "mcp-complete.1", "mcp-completion.1",
                 "mcp-tools-call.1", "mcp-resources-read.1", "mcp-resources-subscribe.1",
                 "mcp-prompts-get.1", "mcp-servers-add.1", "mcp-servers-import.1"):
        assert page in names
    for path in tmp_path.glob("*.1"):
        text = path.read_text()
        for section in (".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH EXIT STATUS",
                        ".SH ENVIRONMENT", ".SH FILES"):
            assert section in text, f"{path.name} lacks {section}"
        assert "\\fB124\\fR" in text and "MCP_CONFIG" in text
    call = (tmp_path / "mcp-tools-call.1").read_text()
    assert "\\fB\\-\\-arg\\fR, \\fB\\-a\\fR \\fIKEY=VALUE\\fR" in call


def test_man_pages_are_reproducible(tmp_path: Path) -> None:
    generate("gen-man", tmp_path / "a")
    generate("gen-man", tmp_path / "b")
    for page in (tmp_path / "a").glob("*.1"):
        assert page.read_bytes() == (tmp_path / "b" / page.name).read_bytes()
    generate("gen-man", tmp_path / "c", env={"SOURCE_DATE_EPOCH": "1700000000"})
    header = (tmp_path / "c" / "mcp.1").read_text().splitlines()[0]
    assert '"2023-11-14"' in header


@pytest.mark.skipif(shutil.which("groff") is None,
                    reason="groff is not installed; the pages' text is checked above")
def test_man_pages_render_without_warnings() -> None:
    tool = ["groff", "-man", "-Tutf8", "-ww", "-z"]
    for page in sorted((REPO / "man").glob("*.1")):
        r = subprocess.run([*tool, str(page)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and not re.search(r"warning", r.stderr), f"{page.name}: {r.stderr}"
