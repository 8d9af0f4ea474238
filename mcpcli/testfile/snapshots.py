"""The stored answers of a test file's `snapshot: true` tests: `__snapshots__/<file>.json`.

One JSON object per test file, `{"mcpTestSnapshots": 1, "tests": {NAME: answer}}`,
written canonically (sorted keys, two-space indentation, a final newline) so it
can be committed and reviewed. `--update` rewrites it with the answers of this
run: the snapshot tests' new answers, minus the tests no longer in the file; a
test that could not run keeps its stored answer.
"""

from __future__ import annotations

import json
from typing import Any

from mcpcli.testfile.load import TestFileError, read_file
from mcpcli.testfile.model import ABSENT, Suite
from mcpcli.toolsfile.yamlstrict import Problem

__all__ = ["FORMAT_KEY", "Snapshots"]

FORMAT_KEY = "mcpTestSnapshots"
FORMAT = 1


class Snapshots:
    """The stored answers of one test file, and the new ones of this run."""

    def __init__(self, suite: Suite) -> None:
        self.path = suite.snapshot_path
        self.names = {case.name for case in suite.cases if case.expect.snapshot}
        self.stored: dict[str, Any] = {}
        self.taken: dict[str, Any] = {}
        self.exists = False

    def load(self) -> None:
        """Read the stored answers (none yet is fine); a broken file is a TestFileError."""
        from mcpcli.core.jsonrpc import loads

        data = read_file(self.path, "the snapshots")
        if data is None:
            return
        try:
            value = loads(data)
        except ValueError as exc:
            raise TestFileError([Problem(self.path, 0, 0, f"invalid JSON: {exc}")]) from None
        tests = value.get("tests") if isinstance(value, dict) and value.get(FORMAT_KEY) == FORMAT else None
        if not isinstance(tests, dict):
            raise TestFileError([Problem(self.path, 0, 0, f"not a snapshot file of `mcp test` (no {FORMAT_KEY}: "
                                                          f"{FORMAT} with tests)",
                                         "delete it and run with --update")])
        self.stored = tests
        self.exists = True

    def get(self, name: str) -> Any:
        return self.stored.get(name, ABSENT)

    def take(self, name: str, value: Any) -> None:
        self.taken[name] = value

    def updated(self) -> str | None:
        """The file's new text with this run's answers, or None when nothing changed."""
        tests = {name: self.taken.get(name, self.stored.get(name, ABSENT)) for name in self.names}
        tests = {name: value for name, value in tests.items() if value is not ABSENT}
        if tests == self.stored and (self.exists or not tests):
            return None
        text = json.dumps({FORMAT_KEY: FORMAT, "tests": tests}, sort_keys=True, indent=2, ensure_ascii=False,
                          allow_nan=False)
        return text + "\n"
