"""`mcp test`: saved calls with assertions, run against a server in CI.

A test file is YAML: a `target:` and a list of `tests:`, each a tool call, a
resource read or a prompt get with what must hold of the answer (a regular
expression on its text, a jq expression, a JSON subset, an error, a stored
snapshot).

* `load` reads and checks files (every problem of every file at once, at
  `file:line:col`, through the tools.yaml reader `toolsfile.yamlstrict`) into the
  immutable `model`;
* `run` runs them, one connection per target and the tests on it in parallel,
  through a client the caller opens (the CLI's, with its flags);
* `expect` checks one answer against a test's assertions, `snapshots` keeps the
  stored answers beside the file (`__snapshots__/<file>.json`), and `report`
  writes the run for people, as JSON and as JUnit XML.

It may import `toolsfile` (the YAML reader only), `surface` (what is volatile
in an answer), `output` (jq's messages) and `targets` (what a TARGET looks
like); it connects to nothing itself.
"""

from __future__ import annotations

from mcpcli.testfile.load import TestFileError, load_suites
from mcpcli.testfile.model import Case, Expect, Suite, Target
from mcpcli.testfile.run import Caller, Outcome, run_suites
from mcpcli.testfile.snapshots import Snapshots

__all__ = [
    "Caller",
    "Case",
    "Expect",
    "Outcome",
    "Snapshots",
    "Suite",
    "Target",
    "TestFileError",
    "load_suites",
    "run_suites",
]
