"""The toolsfile package's shape: within the style guide's sizes, and no dead helpers.

The style guide (team research/style.md) sets modules of at most about 500 lines
and functions of at most about 60; a helper nothing calls is noise a reader
has to check. Both are read from the source with `ast`; nothing is imported.
"""

from __future__ import annotations

import ast
import re
from collections import Counter

import pytest
from helpers import REPO

SERVE = REPO / "mcpcli" / "toolsfile"
OWN = [*sorted(SERVE.glob("*.py")), REPO / "mcpcli" / "cli" / "serve.py", REPO / "mcpcli" / "cli" / "script.py"]
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
_ALL = re.compile(r"^__all__ = \[.*?\]", re.S | re.M)
_WORD = re.compile(r"\w+")


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


@pytest.mark.slow
def test_serve_modules_and_functions_stay_within_the_size_guide() -> None:
    too_long = []
    for path in OWN:
        source = path.read_text()
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            too_long.append(f"{path.relative_to(REPO)}: {lines} lines")
        for func in _functions(ast.parse(source)):
            length = (func.end_lineno or func.lineno) - func.lineno + 1
            if length > MAX_FUNCTION_LINES:
                too_long.append(f"{path.relative_to(REPO)}:{func.lineno}: {func.name}() is {length} lines")
    assert too_long == []


def _word_counts() -> Counter[str]:
    """How often each identifier occurs in the project's Python code (mcpcli, tests, scripts)."""
    files = [p for d in ("mcpcli", "tests", "scripts") for p in (REPO / d).rglob("*.py")]
    files += [p for p in (REPO / "scripts").iterdir() if p.is_file() and p.suffix == ""]
    counts: Counter[str] = Counter()
    for path in files:
        # A name listed in __all__ but called nowhere is still unused.
        counts.update(_WORD.findall(_ALL.sub("", path.read_text(errors="replace"))))
    return counts


def test_every_serve_module_level_function_and_class_is_used() -> None:
    counts = _word_counts()
    unused = []
    for path in sorted(SERVE.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            # The definition itself is one occurrence; a use is any other.
            if counts[node.name] < 2:
                unused.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.name}")
    assert unused == []
