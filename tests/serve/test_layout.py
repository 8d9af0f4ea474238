"""The serve package's shape: no dead helpers.

A helper nothing calls is noise a reader has to check. Read from the source
with `ast`; nothing is imported.
"""

from __future__ import annotations

import ast
import re
from collections import Counter

from helpers import REPO

SERVE = REPO / "mcpcli" / "serve"
_ALL = re.compile(r"^__all__ = \[.*?\]", re.S | re.M)
_WORD = re.compile(r"\w+")


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
