"""The test command works in a fresh clone: nothing under scripts/, tests/ or .ci/
reaches for a `shared` directory outside the repository (a user's clone has nothing
beside it; the conformance runner, for one, is scripts/conformance)."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import REPO

#: ../shared, ../../shared/..., /work/shared, os.path.join("..", "shared"), and the like.
OUTSIDE_SHARED = re.compile(
    r"""(?:\.\./)+shared\b"""
    r"""|/work/shared\b"""
    r"""|["']\.\.["']\s*[,/]\s*["']shared\b"""
    r"""|\.parent\s*/\s*["']shared\b"""
)
SCANNED = ("scripts", "tests", ".ci")
SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules"}


def scanned_files() -> list[Path]:
    files: list[Path] = []
    for top in SCANNED:
        for path in (REPO / top).rglob("*"):
            if path.is_file() and not SKIPPED_DIRS.intersection(path.parts):
                files.append(path)
    return files


def outside_references(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if OUTSIDE_SHARED.search(line)]


def test_the_pattern_catches_the_ways_of_naming_an_outside_shared_dir() -> None:
    hits = [
        'RUNNER="$ROOT/../shared/tools/conformance.sh"',
        "# see ../../shared/spec/conformance.md",
        "cat /work/shared/spec/NOTES.md",
        'os.path.join(REPO, "..", "shared", "tools")',
        'REPO.parent / "shared" / "tools"',
    ]
    misses = [
        "from mcp.shared.exceptions import MCPError",
        '"shared": {"command": "theirs"}',
        "a keyring shared by processes",
        '[tool.hatch.build.targets.wheel.shared-data]',
    ]
    assert [line for line in hits if not outside_references(line)] == []
    assert [line for line in misses if outside_references(line)] == []


def test_nothing_in_scripts_tests_or_ci_refers_to_a_shared_dir_outside_the_repo() -> None:
    me = Path(__file__).resolve()
    offenders = []
    files = scanned_files()
    assert any(p.name == "conformance" and p.parent.name == "scripts" for p in files)
    for path in files:
        if path.resolve() == me:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary fixtures
        offenders += [f"{path.relative_to(REPO)}: {line}" for line in outside_references(text)]
    assert offenders == []
