"""A test that starts a real peer carries the `peer` marker, so `scripts/test --fast`
(`-m "not peer and not slow"`) never starts npm or SDK processes. Checked statically:
a test asking for a peer fixture, or calling peers_from_env(), must be marked."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import REPO

#: Fixtures that start or locate a real peer (tests/conftest.py, tests/*/conftest.py).
PEER_FIXTURES = {"peers", "everything", "sdk_server", "everything_http", "everything_sse",
                 "sdk_http", "everything_http_url"}


def marks(decorators: list[ast.expr]) -> set[str]:
    """Names of pytest.mark.X in decorators (called or not)."""
    found = set()
    for node in decorators:
        target = node.func if isinstance(node, ast.Call) else node
        if isinstance(target, ast.Attribute):
            found.add(target.attr)
    return found


def module_marks(tree: ast.Module) -> set[str]:
    """Names of the marks in a module's `pytestmark = ...` (one mark or a list)."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "pytestmark"):
            value = node.value
            items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            return marks(list(items))
    return set()


def unmarked_peer_tests(source: str) -> list[str]:
    tree = ast.parse(source)
    if "peer" in module_marks(tree):
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if not node.name.startswith("test_") or "peer" in marks(node.decorator_list):
            continue
        params = {a.arg for a in node.args.args + node.args.kwonlyargs}
        calls = {n.func.id for n in ast.walk(node)
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        if params & PEER_FIXTURES or "peers_from_env" in calls:
            found.append(node.name)
    return found


def test_the_check_finds_an_unmarked_peer_test() -> None:
    source = (
        "import pytest\n"
        "def test_a(everything): ...\n"
        "@pytest.mark.peer\n"
        "def test_b(everything): ...\n"
        "def test_c(tmp_path): peers_from_env()\n"
        "def test_d(tmp_path): ...\n"
    )
    assert unmarked_peer_tests(source) == ["test_a", "test_c"]
    assert unmarked_peer_tests("import pytest\npytestmark = [pytest.mark.anyio, pytest.mark.peer]\n"
                               + source) == []


@pytest.mark.slow
def test_every_test_that_starts_a_peer_is_marked_peer() -> None:
    offenders = []
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        if Path(__file__).resolve() == path.resolve():
            continue
        for name in unmarked_peer_tests(path.read_text()):
            offenders.append(f"{path.relative_to(REPO)}::{name}")
    assert offenders == []
